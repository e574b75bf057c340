//! An exact token bucket in integer arithmetic, shared by the RFC meters.
//!
//! Tokens are kept in *bit-nanoseconds*: one byte is `8 × 10⁹` units, and a
//! rate of `r` bit/s adds exactly `r` units per nanosecond. Refill is then one
//! saturating multiply-add with no division and no rounding, so a meter fed
//! the same trace gives the same colours on every machine. It is RFC 2697's
//! "incremented by one CIR times per second" without the phase quantisation
//! of whole-byte ticks: a packet of B bytes conforms iff tokens ≥ B exactly
//! as with byte ticks, because B is a whole number.
//!
//! Buckets are limited to [`MAX_BUCKET_BYTES`] (1 GiB) so that, even when the
//! refill saturates at `u64::MAX`, the overflow handed to a second bucket is
//! still at least as large as any bucket (the saturation can never lose
//! tokens that the second bucket had room for).

use crate::params::ConfigError;
use crate::units::{Bytes, Rate};

/// Token units per byte (bits per byte × nanoseconds per second).
pub const UNITS_PER_BYTE: u64 = 8_000_000_000;

/// Token units a packet of `size_bytes` needs. Saturating: a packet above
/// 2.3 GB (u64::MAX / 8·10⁹ bytes) needs more than any bucket can hold, and
/// must never wrap into a small number that would make it green.
#[inline(always)]
pub(crate) fn need_units(size_bytes: u32) -> u64 {
    (size_bytes as u64).saturating_mul(UNITS_PER_BYTE)
}
/// All ones if `ok`, else zero, as a value the optimiser cannot see
/// through. The meters colour a packet from token comparisons that are a
/// coin toss per packet on a busy trace; written as masks, they need no
/// branch. Without the barrier, LLVM turns the masks back into selects and
/// its x86 cmov-to-branch pass then into branches that mispredict on about
/// a quarter of the packets (issue 12: trTCM 166–186 → 212–218 M pkt/s on
/// the `pps` bench, same colours).
#[inline(always)]
pub(crate) fn opaque_mask(ok: bool) -> u64 {
    opaque((ok as u64).wrapping_neg())
}

/// `x`, unchanged, hidden from the optimiser in a register: an empty
/// inline-assembly block that claims to rewrite it (the "value barrier"
/// constant-time code uses). `core::hint::black_box` does the same through
/// a store and a load, which would add their latency to the chain of
/// dependent token updates from packet to packet; it is the fallback on
/// other targets.
#[inline(always)]
pub(crate) fn opaque(mut x: u64) -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: the template is empty: no instruction runs, no memory or flag
    // is touched, and `x` keeps its value.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        x = core::hint::black_box(x);
    }
    x
}

/// Largest bucket depth accepted, in bytes (2³⁰).
pub const MAX_BUCKET_BYTES: u64 = 1 << 30;
/// Largest rate accepted, in bit/s (10 Tbit/s); keeps refills exact.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;

/// A bucket of depth `depth` filled at `rate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    tokens: u64,
    depth: u64,
    rate_bps: u64,
    /// Longest gap, ns, whose refill `rate_bps · dt` cannot exceed `depth`
    /// (`depth / rate_bps`, rounded down; `u64::MAX` at a zero rate; 0 when
    /// `depth` ≥ 2⁶³, so such a bucket always takes the saturating path).
    /// Up to it, `tokens + rate_bps · dt ≤ 2 · depth < 2⁶⁴`, so [`Self::fill`]
    /// needs no overflow checks; precomputed because every packet refills.
    full_ns: u64,
}

impl TokenBucket {
    /// A full bucket (RFC 2697 §3: "initially (at time 0) full").
    /// `rate` and `depth` must have passed [`check_rate`] and [`check_depth`].
    pub const fn full(rate: Rate, depth: Bytes) -> Self {
        let d = depth.get() * UNITS_PER_BYTE;
        let full_ns = if d > u64::MAX / 2 {
            0
        } else if rate.bps() == 0 {
            u64::MAX
        } else {
            d / rate.bps()
        };
        TokenBucket {
            tokens: d,
            depth: d,
            rate_bps: rate.bps(),
            full_ns,
        }
    }

    /// An empty bucket of the same shape.
    pub const fn empty(rate: Rate, depth: Bytes) -> Self {
        let mut b = Self::full(rate, depth);
        b.tokens = 0;
        b
    }

    /// Adds `dt_ns` worth of tokens; returns the units that did not fit.
    ///
    /// Same result as `self.add(self.rate_bps.saturating_mul(dt_ns))` (the
    /// definition, kept as the slow path and checked against in the tests),
    /// but a gap no longer than `full_ns` needs neither the 128-bit product's
    /// overflow check nor the saturating add: one multiply, one add and a
    /// `min`, with no data-dependent branch.
    #[inline(always)]
    pub fn fill(&mut self, dt_ns: u64) -> u64 {
        if dt_ns <= self.full_ns {
            // rate·dt ≤ depth and tokens ≤ depth < 2⁶³: neither overflows.
            let t = self.tokens + self.rate_bps * dt_ns;
            // A branch, not a `min`: it is well predicted (a busy bucket is
            // rarely full), and a select would put a compare on the chain
            // that carries `tokens` from packet to packet (measured slower).
            if t > self.depth {
                self.tokens = self.depth;
                t - self.depth
            } else {
                self.tokens = t;
                0
            }
        } else {
            self.add(self.rate_bps.saturating_mul(dt_ns))
        }
    }

    /// Adds `units` tokens (e.g. another bucket's overflow); returns what did
    /// not fit.
    #[inline(always)]
    pub fn add(&mut self, units: u64) -> u64 {
        let t = self.tokens.saturating_add(units);
        if t > self.depth {
            self.tokens = self.depth;
            t - self.depth
        } else {
            self.tokens = t;
            0
        }
    }

    /// True iff the bucket holds at least `size_bytes` bytes of tokens.
    #[inline(always)]
    pub fn has(&self, size_bytes: u32) -> bool {
        self.tokens >= need_units(size_bytes)
    }

    /// Removes `size_bytes` if available; returns whether it did.
    #[inline(always)]
    pub fn take(&mut self, size_bytes: u32) -> bool {
        let need = need_units(size_bytes);
        if self.tokens >= need {
            self.tokens -= need;
            true
        } else {
            false
        }
    }

    /// True iff the bucket holds at least `need` units (see [`need_units`]).
    #[inline(always)]
    pub(crate) fn has_units(&self, need: u64) -> bool {
        self.tokens >= need
    }

    /// Removes `need & mask` units, with no branch: `mask` is all ones
    /// (take `need`, which the caller has checked is there) or zero (take
    /// nothing); see [`opaque_mask`].
    #[inline(always)]
    pub(crate) fn take_masked(&mut self, need: u64, mask: u64) {
        debug_assert!(mask == 0 || (mask == u64::MAX && self.tokens >= need));
        self.tokens -= need & mask;
    }

    /// Removes `size_bytes` unconditionally, stopping at zero (for meters
    /// such as MEF's that may take from a bucket after a check elsewhere).
    #[inline(always)]
    pub fn take_saturating(&mut self, size_bytes: u32) {
        self.tokens = self.tokens.saturating_sub(need_units(size_bytes));
    }

    /// Tokens in whole bytes (rounded down).
    pub const fn tokens_bytes(&self) -> u64 {
        self.tokens / UNITS_PER_BYTE
    }
    /// Tokens in raw units (1 byte = [`UNITS_PER_BYTE`]).
    pub const fn tokens_units(&self) -> u64 {
        self.tokens
    }
    pub const fn depth_bytes(&self) -> u64 {
        self.depth / UNITS_PER_BYTE
    }
    pub const fn rate(&self) -> Rate {
        Rate::from_bps(self.rate_bps)
    }

    /// Nanoseconds until the bucket holds `size_bytes` (0 if it already
    /// does), rounded up; `None` if it never will (`size_bytes` > depth or a
    /// zero rate). This is the `(B − Tc(t)) / CIR` of RFC 2963 §3.2.
    pub fn time_until(&self, size_bytes: u32) -> Option<u64> {
        let need = need_units(size_bytes);
        if need > self.depth {
            return None;
        }
        if self.tokens >= need {
            return Some(0);
        }
        if self.rate_bps == 0 {
            return None;
        }
        Some((need - self.tokens).div_ceil(self.rate_bps))
    }
}

/// Validates a token rate: > 0 and ≤ [`MAX_RATE_BPS`].
pub fn check_rate(param: &str, rate: Rate) -> Result<Rate, ConfigError> {
    if rate.bps() == 0 {
        return Err(ConfigError::new(param, "must be greater than zero"));
    }
    if rate.bps() > MAX_RATE_BPS {
        return Err(ConfigError::new(
            param,
            format!("{rate} is above the supported maximum of 10tbit"),
        ));
    }
    Ok(rate)
}

/// Validates a bucket depth: ≤ [`MAX_BUCKET_BYTES`], and > 0 unless
/// `allow_zero` (e.g. an srTCM EBS of 0 makes it a two-colour meter).
pub fn check_depth(param: &str, depth: Bytes, allow_zero: bool) -> Result<Bytes, ConfigError> {
    if depth.get() == 0 && !allow_zero {
        return Err(ConfigError::new(param, "must be greater than zero bytes"));
    }
    if depth.get() > MAX_BUCKET_BYTES {
        return Err(ConfigError::new(
            param,
            format!("{depth} is above the supported maximum of 1073741824B (1 GiB)"),
        ));
    }
    Ok(depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_above_2_3_gb_never_fits_and_never_wraps() {
        // 4294967295 B × 8·10⁹ wraps u64 to a small number without saturation.
        let mut b = TokenBucket::full(Rate::from_bps(1), Bytes::new(MAX_BUCKET_BYTES));
        assert!(!b.has(u32::MAX));
        assert!(!b.take(u32::MAX));
        assert_eq!(b.time_until(u32::MAX), None);
        b.take_saturating(u32::MAX);
        assert!(!b.has(1));
    }

    #[test]
    fn one_ms_at_8mbit_adds_exactly_1000_bytes() {
        let mut b = TokenBucket::empty(Rate::from_bps(8_000_000), Bytes::new(5000));
        assert_eq!(b.fill(1_000_000), 0);
        assert_eq!(b.tokens_bytes(), 1000);
        assert!(b.has(1000) && !b.has(1001));
    }

    #[test]
    fn overflow_is_returned_exactly() {
        let mut b = TokenBucket::full(Rate::from_bps(8_000_000), Bytes::new(100));
        assert!(b.take(60));
        // 100 µs at 8 Mbit/s = 100 bytes: 60 fit, 40 overflow.
        assert_eq!(b.fill(100_000), 40 * UNITS_PER_BYTE);
        assert_eq!(b.tokens_bytes(), 100);
    }

    #[test]
    fn saturating_refill_still_overflows_more_than_any_bucket() {
        let mut b = TokenBucket::full(Rate::from_bps(MAX_RATE_BPS), Bytes::new(MAX_BUCKET_BYTES));
        let o = b.fill(u64::MAX);
        assert!(o >= MAX_BUCKET_BYTES * UNITS_PER_BYTE);
    }

    /// Differential: `fill` against its definition (`add` of the saturated
    /// product) on random buckets, states and gaps, both sides of `full_ns`.
    #[test]
    fn fill_equals_saturating_add_of_rate_times_dt() {
        let mut rng = crate::rng::Rng::new(12, 0);
        for i in 0..200_000u32 {
            let rate = match i % 4 {
                0 => rng.next_u64() % 1_000,
                1 => 1 + rng.next_u64() % MAX_RATE_BPS,
                _ => 1 + rng.next_u64() % 100_000_000_000,
            };
            let depth = match i % 3 {
                0 => MAX_BUCKET_BYTES,
                _ => rng.next_u64() % 1_000_000,
            };
            let mut b = TokenBucket::empty(Rate::from_bps(rate), Bytes::new(depth));
            b.tokens = if depth == 0 {
                0
            } else {
                rng.next_u64() % (b.depth + 1)
            };
            let dt = match i % 5 {
                0 => b.full_ns,
                1 => b.full_ns.saturating_add(1),
                2 => rng.next_u64(),
                _ => rng.next_u64() % (b.full_ns.saturating_mul(2).max(1)),
            };
            let mut want = b;
            let want_over = want.add(want.rate_bps.saturating_mul(dt));
            let got_over = b.fill(dt);
            assert_eq!(
                (b, got_over),
                (want, want_over),
                "rate {rate} depth {depth} dt {dt}"
            );
        }
    }

    #[test]
    fn time_until_rounds_up_and_knows_never() {
        let b = TokenBucket::empty(Rate::from_bps(3), Bytes::new(10));
        // 1 byte at 3 bit/s: 8e9/3 ns, rounded up.
        assert_eq!(b.time_until(1), Some(2_666_666_667));
        assert_eq!(b.time_until(11), None);
    }
}
