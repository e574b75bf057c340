//! Time as integer nanoseconds.
//!
//! Nothing in `qoslab-core` reads a clock: every state machine is handed `now`
//! by its caller (the simulator's virtual clock or the emulator's monotonic
//! clock). [`Instant`] is a point on that caller's time line, [`Duration`] a
//! span between two points. Both are `u64` nanoseconds, enough for 584 years.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// The horizon of qoslab's time line: 2^62 ns, about 146 years. Inputs
/// (trace times, scenario durations) are refused at or beyond it, so every
/// `time + delay` of an accepted input stays below 2^63 and fits the signed
/// 64-bit nanoseconds the bindings and files use (issue 15).
pub const TIME_HORIZON_NS: u64 = 1 << 62;

/// A point in time, in nanoseconds since the caller's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    /// The far future: used for "never" (e.g. RFC 2963's T2 = infinity).
    pub const NEVER: Instant = Instant(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        Instant(ns)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier`, or zero if `earlier` is in the future.
    /// Meters use this so that a caller's clock that steps back never
    /// creates tokens.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.0.checked_add(d.0) {
            Some(ns) => Some(Instant(ns)),
            None => None,
        }
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub const fn checked_add(self, d: Duration) -> Option<Duration> {
        match self.0.checked_add(d.0) {
            Some(ns) => Some(Duration(ns)),
            None => None,
        }
    }
    pub const fn saturating_add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

/// Panics on overflow (a time past year 2554 is a caller bug); use
/// [`Instant::checked_add`] where the operand comes from user input.
impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.checked_add(d.0).expect("Instant overflow"))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

/// Panics if `earlier > self`; use [`Instant::saturating_since`] when the
/// order is not guaranteed.
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        Duration(
            self.0
                .checked_sub(earlier.0)
                .expect("Instant subtraction underflow"),
        )
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.checked_add(d.0).expect("Duration overflow"))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns % 1_000_000 == 0 {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns % 1_000 == 0 {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ns", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_since_never_goes_negative() {
        let a = Instant::from_ns(10);
        let b = Instant::from_ns(25);
        assert_eq!(b.saturating_since(a), Duration::from_ns(15));
        assert_eq!(a.saturating_since(b), Duration::ZERO);
    }

    #[test]
    fn display_uses_largest_exact_unit() {
        assert_eq!(Duration::from_ms(25).to_string(), "25ms");
        assert_eq!(Duration::from_secs(2).to_string(), "2s");
        assert_eq!(Duration::from_ns(1500).to_string(), "1500ns");
    }

    #[test]
    fn checked_add_reports_overflow() {
        assert!(Instant::NEVER.checked_add(Duration::from_ns(1)).is_none());
    }
}
