//! Exact spellings for output: the largest unit that divides the value, so
//! what is written parses back (through `qoslab_core::parse`) to the same
//! integer.

/// bit/s as `2mbit`, `180kbit`, `1234bit` (decimal units, as tc's `mbit`).
pub fn rate(bps: u64) -> String {
    for (unit, div) in [
        ("tbit", 1_000_000_000_000u64),
        ("gbit", 1_000_000_000),
        ("mbit", 1_000_000),
        ("kbit", 1_000),
    ] {
        if bps >= div && bps % div == 0 {
            return format!("{}{unit}", bps / div);
        }
    }
    format!("{bps}bit")
}

/// Bytes as `1600B` (never `kb`: tc's `kb` is 1024 bytes, a trap to avoid
/// in generated text).
pub fn size(bytes: u64) -> String {
    format!("{bytes}B")
}

/// Nanoseconds as `20ms`, `1500us`, `1s`, `7ns`.
pub fn time(ns: u64) -> String {
    for (unit, div) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= div && ns % div == 0 {
            return format!("{}{unit}", ns / div);
        }
    }
    if ns == 0 {
        return "0us".to_string();
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoslab_core::parse;

    #[test]
    fn spellings_parse_back_exactly() {
        for v in [
            0u64, 1, 999, 1000, 180_000, 2_000_000, 20_000_000, 1_500_001,
        ] {
            assert_eq!(parse::parse_rate(&rate(v)).unwrap().bps(), v, "{}", rate(v));
            assert_eq!(parse::parse_size(&size(v)).unwrap().get(), v);
            assert_eq!(
                parse::parse_time(&time(v)).unwrap().as_ns(),
                v,
                "{}",
                time(v)
            );
        }
        assert_eq!(rate(2_000_000), "2mbit");
        assert_eq!(time(20_000_000), "20ms");
    }
}
