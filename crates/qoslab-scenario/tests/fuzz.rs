//! Fuzzing the scenario parser (issue 15): mutated copies of the shipped
//! scenarios must parse or fail with one located line, never panic.
//! CI runs proptest's default 256 cases per property; the campaign
//! (`benchmarks/fuzz_campaign.sh`) sets `PROPTEST_CASES` far higher.

use proptest::prelude::*;

const SEEDS: &[&str] = &[
    include_str!("../../../scenarios/example.toml"),
    include_str!("../../../scenarios/isr4000-police.toml"),
    include_str!("../../../scenarios/isr4000-shape.toml"),
    include_str!("../../../scenarios/packetlife-shape.toml"),
];

/// Tokens a careless or hostile edit inserts: huge and tiny numbers, units,
/// TOML syntax, keys of other tables.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "99999999999999999999",
    "1e308",
    "nan",
    "inf",
    "0.0000001",
    "\"\"",
    "\"1mbit\"",
    "\"0bit\"",
    "\"4000000000p\"",
    "\"100gbit\"",
    "\"999999999s\"",
    "\"1ns\"",
    "[",
    "]",
    "{",
    "}",
    "=",
    ",",
    "\n",
    "\"",
    "'",
    "#",
    "[[traffic]]",
    "[policy.bottleneck.egress]",
    "flows = 100000",
    "senders = 99998",
    "duration = \"5000000000s\"",
    "kind = \"pie\"",
    "rate = \"1bit\"",
    "limit = \"4000000000p\"",
    "é",
    "\u{0}",
];

fn mutate(base: &str, edits: &[(usize, u8, usize)]) -> String {
    let mut s: Vec<char> = base.chars().collect();
    for &(pos, op, tok) in edits {
        if s.is_empty() {
            break;
        }
        let at = pos % s.len();
        match op % 3 {
            0 => {
                let n = (tok % 12).min(s.len() - at);
                s.drain(at..at + n);
            }
            1 => {
                let t: Vec<char> = TOKENS[tok % TOKENS.len()].chars().collect();
                s.splice(at..at, t);
            }
            _ => {
                // Replace the value after the next '=' with a token.
                if let Some(eq) = s[at..].iter().position(|&c| c == '=') {
                    let start = at + eq + 1;
                    let end = s[start..]
                        .iter()
                        .position(|&c| c == '\n')
                        .map_or(s.len(), |e| start + e);
                    let t: Vec<char> = format!(" {}", TOKENS[tok % TOKENS.len()]).chars().collect();
                    s.splice(start..end, t);
                }
            }
        }
    }
    s.into_iter().collect()
}

proptest! {
    #[test]
    fn mutated_scenarios_parse_or_fail_in_one_line(
        seed in 0..SEEDS.len(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..6),
    ) {
        let text = mutate(SEEDS[seed], &edits);
        if let Err(e) = qoslab_scenario::parse(&text, "fuzz.toml") {
            let msg = e.to_string();
            prop_assert!(msg.starts_with("fuzz.toml:"), "{msg}");
            prop_assert!(!msg.trim_end().contains('\n'), "{msg}");
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let _ = qoslab_scenario::parse(&text, "fuzz.toml");
    }
}
