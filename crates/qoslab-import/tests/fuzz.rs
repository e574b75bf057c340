//! Bounded fuzzing of both parsers: arbitrary text and mutations of valid
//! configurations must give a spec or a located error, never a panic; an
//! error's line is within the text.

use proptest::prelude::*;
use qoslab_import::{mqc, tc};

const TC: &str = "tc qdisc replace dev eth1 root handle 1:0 htb default 20 r2q 10\n\
tc class add dev eth1 parent 1: classid 1:1 htb rate 10mbit\n\
tc class add dev eth1 parent 1:1 classid 1:20 htb rate 2Mbit ceil 2Mbit burst 1600 cburst 1600\n\
tc qdisc add dev eth1 parent 1:20 handle 40: sfq perturb 10\n\
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.0/8 match ip dport 5001 0xffff flowid 1:20\n\
tc qdisc add dev eth2 root tbf rate 180kbit latency 20ms buffer 1540\n\
tc qdisc add dev eth2 handle ffff: ingress\n\
tc filter add dev eth2 parent ffff: u32 match u32 0 0 police rate 1mbit burst 10k drop flowid :1\n\
tc qdisc add dev eth3 root handle 1: hfsc default 10\n\
tc class add dev eth3 parent 1: classid 1:10 hfsc rt umax 1500b dmax 10ms rate 500kbit ls m2 1mbit\n";

const MQC: &str = "class-map match-any VOICE\n match dscp ef cs5\nclass-map match-all WEB\n match access-group 101\n\
access-list 101 permit tcp 10.0.0.0 0.0.0.255 any eq 80\n\
policy-map CHILD\n class VOICE\n  priority percent 20\n class WEB\n  bandwidth remaining percent 50\n  queue-limit 40 packets\n class class-default\n  fair-queue\n\
policy-map PARENT\n class class-default\n  shape average 20000000 80000 80000\n  service-policy CHILD\n\
policy-map POL\n class class-default\n  police cir 1000000 bc 31250\n   conform-action transmit\n   exceed-action set-dscp-transmit af11\n   violate-action drop\n\
interface GigabitEthernet0/0/1\n bandwidth 100000\n service-policy output PARENT\n service-policy input POL\n";

const WORDS: &[&str] = &[
    "tc",
    "qdisc",
    "class",
    "filter",
    "add",
    "root",
    "parent",
    "handle",
    "1:",
    "1:20",
    "htb",
    "tbf",
    "rate",
    "burst",
    "limit",
    "latency",
    "10kb/8",
    "50Mbps",
    "0",
    "-1",
    "99999999999999999999",
    "policy-map",
    "class-map",
    "police",
    "shape",
    "average",
    "percent",
    "100",
    "bc",
    "be",
    "pir",
    "conform-action",
    "exceed-action",
    "violate-action",
    "\\",
    "!",
    "#",
    "\"\"\"",
    "match",
    "dscp",
    "ef",
    "af99",
    "ip",
    "u32",
    "0xffff",
    "ffff:",
    "ingress",
    "flowid",
    "sc",
    "m1",
    "d",
    "m2",
    "umax",
    "dmax",
    "random-detect",
    "queue-limit",
    "ms",
    "bytes",
    "interface",
    "service-policy",
    "output",
    "input",
    "18446744073709551",
    "remaining",
    "priority",
    "bandwidth",
    "peak",
    "\u{00e9}",
    "\t",
    "",
    " ",
];

fn check(text: &str) {
    let lines = text.lines().count().max(1);
    for r in [
        tc::import(text),
        mqc::import(text, mqc::Platform::Ios),
        mqc::import(text, mqc::Platform::IosXe),
    ] {
        match r {
            Ok(i) => {
                for p in &i.policies {
                    // Rendering and building never panic either.
                    let _ =
                        qoslab_import::render::render(p, &i.warnings, "fuzz", "policy.x.egress");
                }
            }
            Err(e) => assert!(e.line <= lines, "line {} of {lines}: {e}", e.line),
        }
    }
}

/// `base` with line `i` changed: a word replaced, removed or inserted.
fn mutate(base: &str, i: usize, j: usize, w: usize, op: u8) -> String {
    let mut lines: Vec<Vec<String>> = base
        .lines()
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect();
    let n = lines.len();
    let line = &mut lines[i % n];
    let k = j % (line.len() + 1);
    let word = WORDS[w % WORDS.len()].to_string();
    match op % 3 {
        0 if k < line.len() => line[k] = word,
        1 if k < line.len() => {
            line.remove(k);
        }
        _ => line.insert(k, word),
    }
    lines
        .iter()
        .map(|l| l.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_seed_configs_import() {
    tc::import(TC).unwrap();
    mqc::import(MQC, mqc::Platform::IosXe).unwrap();
}

/// `PROPTEST_CASES` when set (the fuzz campaign), else `ci`.
fn campaign_cases(ci: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ci)
}

proptest! {
    // CI's budget; the campaign (benchmarks/fuzz_campaign.sh) sets PROPTEST_CASES.
    #![proptest_config(ProptestConfig { cases: campaign_cases(1500), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,300}") {
        check(&s);
    }

    #[test]
    fn word_soup_never_panics(ws in proptest::collection::vec((0usize..WORDS.len(), any::<bool>()), 0..40)) {
        let mut s = String::new();
        for (w, nl) in ws {
            s.push_str(WORDS[w]);
            s.push(if nl { '\n' } else { ' ' });
        }
        check(&s);
    }

    #[test]
    fn mutated_configs_never_panic(
        muts in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<usize>(), any::<u8>()), 1..4),
        which in any::<bool>(),
    ) {
        let mut s = if which { TC.to_string() } else { MQC.to_string() };
        for (i, j, w, op) in muts {
            s = mutate(&s, i, j, w, op);
        }
        check(&s);
    }
}
