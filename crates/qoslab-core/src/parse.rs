//! Human units, parsed the way `tc` parses them — the one place in qoslab
//! where "20mbit", "32kb" or "50ms" become numbers.
//!
//! Tables follow iproute2 `tc/tc_util.c` (`get_rate64`, `get_size`,
//! `get_time`); suffixes match case-insensitively, as tc's `strcasecmp` does.
//! Unlike tc, numbers are parsed exactly as decimals (no `strtod`), and the
//! result is rounded down to the base unit (tc truncates its double the same way).
//!
//! | kind | bare number | suffixes |
//! |------|-------------|----------|
//! | rate | bit/s | `bit`; `kbit` 10³, `mbit` 10⁶, `gbit` 10⁹, `tbit` 10¹² bit/s; `kibit` 2¹⁰, `mibit` 2²⁰, `gibit` 2³⁰, `tibit` 2⁴⁰ bit/s; **bytes/s**: `bps` 8, `kbps` 8·10³, `mbps` 8·10⁶, `gbps` 8·10⁹, `tbps` 8·10¹², `kibps` 8·2¹⁰ … |
//! | size | bytes | `b`; `k`/`kb` 1024; `m`/`mb` 2²⁰; `g`/`gb` 2³⁰ bytes; `kbit` 128, `mbit` 2¹⁷, `gbit` 2²⁷ bytes |
//! | time | µs | `s`/`sec`/`secs`; `ms`/`msec`/`msecs`; `us`/`usec`/`usecs`; `ns` (qoslab extension) |
//! | limit | bytes | a size, or packets with `p`/`pkt`/`pkts`/`packets` (e.g. `200p`) |
//!
//! Beware tc's trap, kept on purpose for compatibility: `kbps` is kilo**bytes**
//! per second (= 8 kbit/s), and `k` in a size is 1024 bytes.

use crate::time::Duration;
use crate::units::{Bytes, Rate};
use core::fmt;

/// A queue limit: in packets (`200p`) or bytes (`64kb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Packets(p) => write!(f, "{p}p"),
            Limit::Bytes(b) => write!(f, "{b}B"),
        }
    }
}

/// Why a unit string was rejected; `Display` says what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError {
    pub input: String,
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}, got '{}'", self.expected, self.input)
    }
}

impl std::error::Error for UnitError {}

const RATE_EXPECTED: &str =
    "a rate such as '20mbit', '1500kbit', '1gbit' or '125000' (bit/s; note tc's 'kbps' = kilobytes/s)";
const SIZE_EXPECTED: &str = "a size such as '625000B', '1540', '32kb' (1 kb = 1024 bytes) or '1mb'";
const TIME_EXPECTED: &str =
    "a time such as '50ms', '1.5s', '200us' or '100ns' (a bare number is µs, as in tc)";
const LIMIT_EXPECTED: &str = "a limit such as '200p' (packets) or '64kb' (bytes)";

/// (suffix, numerator, denominator): value = number × num / den.
type Scale = (&'static str, u128, u128);

const RATE_SUFFIXES: &[Scale] = &[
    ("", 1, 1),
    ("bit", 1, 1),
    ("kibit", 1 << 10, 1),
    ("kbit", 1_000, 1),
    ("mibit", 1 << 20, 1),
    ("mbit", 1_000_000, 1),
    ("gibit", 1 << 30, 1),
    ("gbit", 1_000_000_000, 1),
    ("tibit", 1 << 40, 1),
    ("tbit", 1_000_000_000_000, 1),
    ("bps", 8, 1),
    ("kibps", 8 << 10, 1),
    ("kbps", 8_000, 1),
    ("mibps", 8 << 20, 1),
    ("mbps", 8_000_000, 1),
    ("gibps", 8 << 30, 1),
    ("gbps", 8_000_000_000, 1),
    ("tibps", 8 << 40, 1),
    ("tbps", 8_000_000_000_000, 1),
];

const SIZE_SUFFIXES: &[Scale] = &[
    ("", 1, 1),
    ("b", 1, 1),
    ("k", 1 << 10, 1),
    ("kb", 1 << 10, 1),
    ("m", 1 << 20, 1),
    ("mb", 1 << 20, 1),
    ("g", 1 << 30, 1),
    ("gb", 1 << 30, 1),
    ("kbit", 1 << 10, 8),
    ("mbit", 1 << 20, 8),
    ("gbit", 1 << 30, 8),
];

const TIME_SUFFIXES: &[Scale] = &[
    ("", 1_000, 1),
    ("s", 1_000_000_000, 1),
    ("sec", 1_000_000_000, 1),
    ("secs", 1_000_000_000, 1),
    ("ms", 1_000_000, 1),
    ("msec", 1_000_000, 1),
    ("msecs", 1_000_000, 1),
    ("us", 1_000, 1),
    ("usec", 1_000, 1),
    ("usecs", 1_000, 1),
    ("ns", 1, 1),
];

const PACKET_SUFFIXES: &[&str] = &["p", "pkt", "pkts", "packet", "packets"];

/// Splits "12.5mbit" into the decimal (as mantissa, 10^frac_digits) and suffix.
fn split_number(s: &str) -> Option<(u128, u128, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    if num.is_empty() || num == "." {
        return None;
    }
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac_part.contains('.') || int_part.len() + frac_part.len() > 30 {
        return None;
    }
    let mut mantissa: u128 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        mantissa = mantissa * 10 + (c as u8 - b'0') as u128;
    }
    let denom = 10u128.checked_pow(frac_part.len() as u32)?;
    Some((mantissa, denom, suffix.trim()))
}

fn scaled(input: &str, table: &[Scale], expected: &'static str) -> Result<u64, UnitError> {
    let err = || UnitError {
        input: input.to_string(),
        expected,
    };
    let (mantissa, denom, suffix) = split_number(input).ok_or_else(err)?;
    let (_, num, den) = table
        .iter()
        .find(|(name, _, _)| name.eq_ignore_ascii_case(suffix))
        .ok_or_else(err)?;
    // Well-formed but beyond u64 in the base unit (ns, bit/s, bytes): say
    // so, rather than repeating the format the user already got right.
    let too_large = || UnitError {
        input: input.to_string(),
        expected: TOO_LARGE,
    };
    let value = mantissa
        .checked_mul(*num)
        .ok_or_else(too_large)?
        .checked_div(denom * den)
        .ok_or_else(err)?;
    u64::try_from(value).map_err(|_| too_large())
}

const TOO_LARGE: &str =
    "a smaller value (this one does not fit in 64 bits of ns, bit/s or bytes: at most 584 years, 18 Ebit/s, 16 EiB)";

/// Parses a rate (`tc` `get_rate64` table). See the module table.
pub fn parse_rate(s: &str) -> Result<Rate, UnitError> {
    scaled(s, RATE_SUFFIXES, RATE_EXPECTED).map(Rate::from_bps)
}

/// Parses a size in bytes (`tc` `get_size` table). See the module table.
pub fn parse_size(s: &str) -> Result<Bytes, UnitError> {
    scaled(s, SIZE_SUFFIXES, SIZE_EXPECTED).map(Bytes::new)
}

/// Parses a time (`tc` `get_time` table, plus `ns`). A bare number is µs.
pub fn parse_time(s: &str) -> Result<Duration, UnitError> {
    scaled(s, TIME_SUFFIXES, TIME_EXPECTED).map(Duration::from_ns)
}

/// Parses a queue limit: `200p` (packets) or any size (bytes).
pub fn parse_limit(s: &str) -> Result<Limit, UnitError> {
    let err = || UnitError {
        input: s.to_string(),
        expected: LIMIT_EXPECTED,
    };
    let (mantissa, denom, suffix) = split_number(s).ok_or_else(err)?;
    if PACKET_SUFFIXES
        .iter()
        .any(|p| p.eq_ignore_ascii_case(suffix))
    {
        if denom != 1 {
            return Err(err());
        }
        return u32::try_from(mantissa)
            .map(Limit::Packets)
            .map_err(|_| err());
    }
    scaled(s, SIZE_SUFFIXES, LIMIT_EXPECTED).map(Limit::Bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> u64 {
        parse_rate(s).unwrap().bps()
    }
    fn size(s: &str) -> u64 {
        parse_size(s).unwrap().get()
    }
    fn time_ns(s: &str) -> u64 {
        parse_time(s).unwrap().as_ns()
    }

    #[test]
    fn rates_follow_tc_table() {
        assert_eq!(rate("20mbit"), 20_000_000);
        assert_eq!(rate("20Mbit"), 20_000_000);
        assert_eq!(rate("1500kbit"), 1_500_000);
        assert_eq!(rate("0.5mbit"), 500_000);
        assert_eq!(rate("180kbit"), 180_000);
        assert_eq!(rate("1gbit"), 1_000_000_000);
        assert_eq!(rate("1kibit"), 1024);
        assert_eq!(rate("125000"), 125_000);
        // tc's trap: kbps means kilobytes per second.
        assert_eq!(rate("1kbps"), 8_000);
        assert_eq!(rate("100bps"), 800);
    }

    #[test]
    fn sizes_follow_tc_table() {
        assert_eq!(size("625000B"), 625_000);
        assert_eq!(size("1540"), 1540);
        assert_eq!(size("32kb"), 32 * 1024);
        assert_eq!(size("5k"), 5 * 1024);
        assert_eq!(size("1mb"), 1 << 20);
        assert_eq!(size("1kbit"), 128);
    }

    #[test]
    fn too_large_values_say_so() {
        let e = parse_time("100000000000000s").unwrap_err();
        assert!(e.to_string().contains("does not fit in 64 bits"), "{e}");
        let e = parse_rate("99999999999999999999999gbit").unwrap_err();
        assert!(e.to_string().contains("does not fit in 64 bits"), "{e}");
        // A bad unit is still a format error.
        assert!(!parse_time("5h")
            .unwrap_err()
            .to_string()
            .contains("64 bits"));
    }

    #[test]
    fn times_follow_tc_table() {
        assert_eq!(time_ns("50ms"), 50_000_000);
        assert_eq!(time_ns("1.5s"), 1_500_000_000);
        assert_eq!(time_ns("200us"), 200_000);
        assert_eq!(time_ns("70"), 70_000); // bare = µs
        assert_eq!(time_ns("10ns"), 10);
    }

    #[test]
    fn limits_in_packets_or_bytes() {
        assert_eq!(parse_limit("200p").unwrap(), Limit::Packets(200));
        assert_eq!(parse_limit("83packets").unwrap(), Limit::Packets(83));
        assert_eq!(parse_limit("64kb").unwrap(), Limit::Bytes(65_536));
        assert!(parse_limit("1.5p").is_err());
    }

    #[test]
    fn bad_units_say_what_was_expected() {
        let e = parse_rate("20furlongs").unwrap_err();
        assert!(e.to_string().contains("expected a rate"), "{e}");
        assert!(e.to_string().contains("20furlongs"));
        assert!(parse_rate("").is_err());
        assert!(parse_rate("-5mbit").is_err());
        assert!(parse_size("1.2.3").is_err());
        assert!(parse_time("5 fortnights").is_err());
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        assert!(parse_rate("99999999999999999999tbit").is_err());
    }
}
