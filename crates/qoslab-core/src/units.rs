//! Rates and sizes as integer newtypes: bits per second and bytes.
//!
//! Conversions between a rate, a size and a time are the only places where
//! rounding happens, and each says which way it rounds.

use crate::time::Duration;
use core::fmt;

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(u64);

impl Rate {
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Bytes per second, rounded down (as tc does when it stores `rate/8`).
    pub const fn bytes_per_sec(self) -> u64 {
        self.0 / 8
    }
    /// Time to send `size` at this rate, rounded up to the next nanosecond.
    /// A zero rate takes forever ([`Duration::MAX`]).
    pub fn tx_time(self, size: Bytes) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        let bit_ns = size.0 as u128 * 8 * 1_000_000_000;
        let ns = bit_ns.div_ceil(self.0 as u128);
        Duration::from_ns(u64::try_from(ns).unwrap_or(u64::MAX))
    }
    /// Whole bytes that this rate delivers in `d`, rounded down.
    pub fn bytes_in(self, d: Duration) -> Bytes {
        let b = self.0 as u128 * d.as_ns() as u128 / 8_000_000_000;
        Bytes(u64::try_from(b).unwrap_or(u64::MAX))
    }
}

impl Bytes {
    pub const fn new(bytes: u64) -> Self {
        Bytes(bytes)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Rate {
    /// Shortest exact tc-style spelling: `20mbit`, `1500kbit`, `64bit`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b != 0 && b % 1_000_000_000 == 0 {
            write!(f, "{}gbit", b / 1_000_000_000)
        } else if b != 0 && b % 1_000_000 == 0 {
            write!(f, "{}mbit", b / 1_000_000)
        } else if b != 0 && b % 1_000 == 0 {
            write!(f, "{}kbit", b / 1_000)
        } else {
            write!(f, "{}bit", b)
        }
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_of_a_full_frame_at_one_megabit_is_twelve_ms() {
        let r = Rate::from_bps(1_000_000);
        assert_eq!(r.tx_time(Bytes::new(1500)), Duration::from_ms(12));
    }

    #[test]
    fn tx_time_rounds_up() {
        // 1 byte at 3 bit/s = 2.666..s -> 2_666_666_667 ns
        assert_eq!(
            Rate::from_bps(3).tx_time(Bytes::new(1)).as_ns(),
            2_666_666_667
        );
    }

    #[test]
    fn bytes_in_rounds_down() {
        let r = Rate::from_bps(20_000_000);
        assert_eq!(r.bytes_in(Duration::from_ms(4)), Bytes::new(10_000));
        assert_eq!(
            Rate::from_bps(3).bytes_in(Duration::from_secs(1)),
            Bytes::new(0)
        );
    }

    #[test]
    fn display_is_tc_style() {
        assert_eq!(Rate::from_bps(20_000_000).to_string(), "20mbit");
        assert_eq!(Rate::from_bps(1_500_000).to_string(), "1500kbit");
        assert_eq!(Rate::from_bps(64).to_string(), "64bit");
    }
}
