//! Time Sliding Window Three Colour Marker, RFC 2859 (Experimental).
//!
//! Two parts (RFC 2859 §2): a rate estimator and a marker that "uses the
//! algorithm specified in section 4".
//!
//! **Estimator** (the time sliding window of Clark & Fang): initially
//! `avg_rate = CTR`, `t_front = 0`; on each packet arrival
//!
//! ```text
//! bytes_in_win = avg_rate · win_len
//! new_bytes    = bytes_in_win + pkt_size
//! avg_rate     = new_bytes / (now − t_front + win_len)
//! t_front      = now
//! ```
//!
//! **Marker** (§4): if avg_rate ≤ CTR: green; else if avg_rate ≤ PTR:
//! yellow with probability P0 = (avg_rate − CTR)/avg_rate, else green; else
//! red with P1 = (avg_rate − PTR)/avg_rate, yellow with P2 = (PTR −
//! CTR)/avg_rate, else green. At a sustained rate R > PTR this marks a
//! fraction (R − PTR)/R red and (PTR − CTR)/R yellow — the traffic
//! "contributing to the portion of the rate" above each target (§1).
//!
//! Source note: only the RFC's §1–2 text was retrievable in this project's
//! store; the estimator and marker above are checked against ns-2's TSW3CM
//! (`hbatmit/ns2.35` `diffserv/dsPolicy.cc`, Nortel Networks 2000 — the
//! RFC's authors' employer), which implements exactly this update and draws
//! one uniform number against the two thresholds, as we do.
//!
//! **Arithmetic**: exact integers, no floats. `avg_rate` is kept in bit/s
//! scaled by 2¹⁶ (a fixed-point rate with 1/65536 bit/s resolution) and
//! updated with u128 intermediates, dividing (rounding down) once per
//! packet; so a trace gives the same colours on every machine. The RFC's
//! estimator is real-valued, and this differs from it only by that single
//! floor per update (< 2⁻¹⁶ bit/s). The marker draws one uniform integer
//! r ∈ [0, avg_rate) from [`crate::rng::Rng`] (Lemire's multiply-high, bias
//! < avg_rate / 2⁶⁴) and compares it with avg − PTR and avg − CTR, which
//! realises P1, P2 and P0 exactly as ratios of integers. A green verdict
//! below CTR draws nothing.
//!
//! Parameters: `ctr` (committed target rate, > 0), `ptr` (peak target
//! rate, ≥ ctr), `win_len` (time, default 1 s, 1 ns – 1 h), `seed` (default
//! 1; stream derived with [`TSWTCM_STREAM`]), `mode` (`blind` | `aware`).
//! `win_len` is a configuration constant of the estimator; the 1 s default
//! is ns-2's TSW3CM default (`winLen = 1.0` in `addPolicyEntry`), not a
//! value read in the RFC. The RFC's marker is colour-blind; `mode=aware` is
//! a qoslab extension that never improves an incoming colour (result =
//! worse of incoming and computed). The estimator counts every packet,
//! whatever its colour.

use super::Meter;
use crate::bucket::check_rate;
use crate::packet::Color;
use crate::params::{ConfigError, Params};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::units::Rate;

/// Fixed-point scale of `avg_rate`: bit/s × 2¹⁶.
const SCALE_SHIFT: u32 = 16;
/// Rng stream for TSWTCM markers ("TSW").
pub const TSWTCM_STREAM: u64 = 0x0054_5357;
const MAX_WIN_NS: u64 = 3_600 * 1_000_000_000;

/// RFC 2859 TSWTCM state.
#[derive(Clone, Debug)]
pub struct Tswtcm {
    /// bit/s × 2¹⁶
    avg: u64,
    t_front: Instant,
    win_ns: u64,
    ctr_s: u64,
    ptr_s: u64,
    ctr: Rate,
    ptr: Rate,
    seed: u64,
    rng: Rng,
    color_aware: bool,
}

impl Tswtcm {
    /// `avg_rate = CTR`, `t_front = 0` (RFC 2859 initial values).
    pub fn new(
        ctr: Rate,
        ptr: Rate,
        win_len: Duration,
        seed: u64,
        color_aware: bool,
    ) -> Result<Self, ConfigError> {
        check_rate("ctr", ctr)?;
        check_rate("ptr", ptr)?;
        if ptr < ctr {
            return Err(ConfigError::new(
                "ptr",
                format!("must be at least ctr ({ctr}), got {ptr}"),
            ));
        }
        if win_len.as_ns() == 0 || win_len.as_ns() > MAX_WIN_NS {
            return Err(ConfigError::new(
                "win-len",
                format!("must be between 1ns and 1h, got {win_len}"),
            ));
        }
        let ctr_s = ctr.bps() << SCALE_SHIFT;
        Ok(Tswtcm {
            avg: ctr_s,
            t_front: Instant::ZERO,
            win_ns: win_len.as_ns(),
            ctr_s,
            ptr_s: ptr.bps() << SCALE_SHIFT,
            ctr,
            ptr,
            seed,
            rng: Rng::new(seed, TSWTCM_STREAM),
            color_aware,
        })
    }

    /// Reads `ctr`, `ptr`, `win_len` (default 1s), `seed` (default 1), `mode`.
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let ctr = p.rate("ctr")?;
        let ptr = p.rate("ptr")?;
        let win = p.opt_time("win-len")?.unwrap_or(Duration::from_secs(1));
        let seed = p.opt_u64("seed")?.unwrap_or(1);
        let aware = p.color_aware()?;
        Self::new(ctr, ptr, win, seed, aware)
    }

    /// The estimator's current average rate, bit/s (rounded down).
    pub fn avg_rate_bps(&self) -> u64 {
        self.avg >> SCALE_SHIFT
    }
    /// The estimator's current average rate, bit/s × 2¹⁶ (exact state).
    pub fn avg_rate_scaled(&self) -> u64 {
        self.avg
    }

    /// RFC 2859 estimator update for one packet:
    /// `avg ← ⌊(avg·w + S) / (dt + w)⌋` with `S` the packet in
    /// (bit/s × 2¹⁶)·ns (a byte is 8·10⁹·2¹⁶).
    ///
    /// Computed as `avg + ⌊(S − avg·dt) / (dt + w)⌋`, which is the same
    /// integer: `avg·w + S = avg·(dt + w) + (S − avg·dt)` and `⌊a + x⌋ =
    /// a + ⌊x⌋` for a whole `a`. The division is the same one-per-packet
    /// exact floor, but its dividend is the small signed correction instead
    /// of a 128-bit product, so it is a 64-bit division (no `__udivti3`
    /// call) whose quotient has few significant bits — and `avg`, which
    /// carries from packet to packet, waits on it. Where any term would not
    /// fit in 63 bits (long idle gaps, huge packets or rates) the 128-bit
    /// form runs instead; the tests check both against each other.
    #[inline(always)]
    fn estimate(&mut self, now: Instant, size_bytes: u32) {
        let dt = now.saturating_since(self.t_front).as_ns();
        self.avg = estimate_fast(self.avg, dt, self.win_ns, size_bytes)
            .unwrap_or_else(|| estimate_wide(self.avg, dt, self.win_ns, size_bytes));
        self.t_front = now.max(self.t_front);
    }

    /// RFC 2859 §4 marker.
    #[inline(always)]
    fn mark(&mut self) -> Color {
        let avg = self.avg;
        if avg <= self.ctr_s {
            return Color::Green;
        }
        // r uniform in [0, avg): P(r < k) = k / avg.
        let r = ((self.rng.next_u64() as u128 * avg as u128) >> 64) as u64;
        if avg > self.ptr_s && r < avg - self.ptr_s {
            Color::Red // P1 = (avg − PTR)/avg
        } else if r < avg - self.ctr_s {
            // P0 = (avg − CTR)/avg when avg ≤ PTR; above PTR this branch is
            // reached with probability P2 = (PTR − CTR)/avg.
            Color::Yellow
        } else {
            Color::Green
        }
    }
}

/// One packet in (bit/s × 2¹⁶)·ns per byte: 8·10⁹ bit·ns/s × 2¹⁶.
const BYTE_SCALED: u64 = 8_000_000_000 << SCALE_SHIFT;

/// The estimator's update in 128-bit arithmetic (the definition).
#[inline(never)]
fn estimate_wide(avg: u64, dt: u64, w: u64, size_bytes: u32) -> u64 {
    let new_bytes = avg as u128 * w as u128 + size_bytes as u128 * BYTE_SCALED as u128;
    u64::try_from(new_bytes / (dt as u128 + w as u128)).unwrap_or(u64::MAX)
}

/// The same update as `avg + ⌊(S − avg·dt)/(dt + w)⌋` in 64-bit arithmetic,
/// or `None` when a term needs more than 63 bits.
#[inline(always)]
fn estimate_fast(avg: u64, dt: u64, w: u64, size_bytes: u32) -> Option<u64> {
    let p = avg.checked_mul(dt)?;
    let s = (size_bytes as u64).checked_mul(BYTE_SCALED)?;
    let d = dt.checked_add(w)?;
    if (p | s | d) >> 63 != 0 {
        return None;
    }
    // d ≥ w ≥ 1, so no division by zero or overflow. Floor division: the
    // truncated quotient less one when the remainder is negative, taken from
    // the remainder's sign bit (`rem_euclid`/`div_euclid` compile to a
    // branch on that sign, which is a coin toss per packet here).
    let (r, d) = (s as i64 - p as i64, d as i64);
    let q = r / d + ((r % d) >> 63);
    avg.checked_add_signed(q)
}

impl Meter for Tswtcm {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        self.estimate(now, size_bytes);
        let c = self.mark();
        if self.color_aware {
            c.max(pre_color)
        } else {
            c
        }
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "tswtcm".into()),
            ("standard", "RFC 2859".into()),
            ("ctr", self.ctr.to_string()),
            ("ptr", self.ptr.to_string()),
            ("win-len", Duration::from_ns(self.win_ns).to_string()),
            ("seed", self.seed.to_string()),
            (
                "mode",
                if self.color_aware { "aware" } else { "blind" }.into(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(ctr: u64, ptr: u64, aware: bool) -> Tswtcm {
        Tswtcm::new(
            Rate::from_bps(ctr),
            Rate::from_bps(ptr),
            Duration::from_secs(1),
            1,
            aware,
        )
        .unwrap()
    }

    #[test]
    fn estimator_hand_computed() {
        let mut t = m(1_000_000, 2_000_000, false);
        assert_eq!(t.avg_rate_bps(), 1_000_000);
        // 125000 B = 1 Mbit at t = 1 s: (1e6·1 + 1e6) / (1 + 1) = 1e6 → green.
        assert_eq!(
            t.color(Instant::from_ns(1_000_000_000), 125_000, Color::Green),
            Color::Green
        );
        assert_eq!(t.avg_rate_scaled(), 1_000_000 << 16);
        // Same instant, another 1 Mbit: (1e6·1 + 1e6)/(0 + 1) = 2e6 = PTR.
        t.color(Instant::from_ns(1_000_000_000), 125_000, Color::Green);
        assert_eq!(t.avg_rate_scaled(), 2_000_000 << 16);
        // Idle 3 s, 1 byte: (2e6 + 8) / 4 = 500002 bit/s.
        assert_eq!(
            t.color(Instant::from_ns(4_000_000_000), 1, Color::Green),
            Color::Green
        );
        assert_eq!(t.avg_rate_scaled(), (2_000_008u64 << 16) / 4);
        assert_eq!(t.avg_rate_bps(), 500_002);
    }

    #[test]
    fn fixed_point_floors_once_per_update() {
        // CTR 3 bit/s, win 1 s, 1 byte at t = 2 s: (3 + 8)/3 = 3.666.. bit/s.
        let mut t = Tswtcm::new(
            Rate::from_bps(3),
            Rate::from_bps(3),
            Duration::from_secs(1),
            1,
            false,
        )
        .unwrap();
        t.color(Instant::from_ns(2_000_000_000), 1, Color::Green);
        assert_eq!(t.avg_rate_scaled(), (11u64 << 16) / 3);
    }

    /// Sustained 3 Mbit/s against CTR 1, PTR 2 Mbit/s: the RFC marks about
    /// (3−2)/3 red, (2−1)/3 yellow, 1/3 green.
    #[test]
    fn sustained_overload_splits_by_the_rfc_probabilities() {
        let mut t = m(1_000_000, 2_000_000, false);
        let mut count = [0u32; 3];
        // 1000-byte packets every 8000/3 µs = 3 Mbit/s, for 60 s.
        let gap = 8_000_000_000u64 / 3_000_000 * 1000;
        for i in 1..=22_500u64 {
            let c = t.color(Instant::from_ns(i * gap), 1000, Color::Green);
            if i > 7500 {
                count[c.index()] += 1; // after the estimator has converged
            }
        }
        let n = 15_000.0;
        for (k, want) in [(0, 1.0 / 3.0), (1, 1.0 / 3.0), (2, 1.0 / 3.0)] {
            let got = count[k] as f64 / n;
            assert!((got - want).abs() < 0.02, "colour {k}: {got} vs {want}");
        }
        let avg = t.avg_rate_bps();
        assert!((2_990_000..3_010_000).contains(&avg), "{avg}");
    }

    #[test]
    fn between_ctr_and_ptr_nothing_is_red() {
        let mut t = m(1_000_000, 2_000_000, false);
        let gap = 8_000_000_000u64 / 1_500_000 * 1000; // 1.5 Mbit/s
        let mut yellow = 0;
        for i in 1..=20_000u64 {
            let c = t.color(Instant::from_ns(i * gap), 1000, Color::Green);
            assert_ne!(c, Color::Red);
            if i > 5000 && c == Color::Yellow {
                yellow += 1;
            }
        }
        // P0 = (1.5 − 1)/1.5 = 1/3
        let f = yellow as f64 / 15_000.0;
        assert!((f - 1.0 / 3.0).abs() < 0.02, "{f}");
    }

    #[test]
    fn validation_and_params() {
        let e = Tswtcm::new(
            Rate::from_bps(2),
            Rate::from_bps(1),
            Duration::from_secs(1),
            1,
            false,
        )
        .unwrap_err();
        assert_eq!(e.param, "ptr");
        let e = Tswtcm::new(
            Rate::from_bps(1),
            Rate::from_bps(1),
            Duration::ZERO,
            1,
            false,
        )
        .unwrap_err();
        assert_eq!(e.param, "win-len");
        let mut p = Params::new(
            "tswtcm",
            [
                ("ctr", "1mbit"),
                ("ptr", "2mbit"),
                ("win-len", "200ms"),
                ("seed", "7"),
            ],
        );
        let t = Tswtcm::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(t.describe()[4].1, "200ms");
        assert_eq!(t.describe()[5].1, "7");
    }

    /// Differential: the 64-bit form against the 128-bit definition on
    /// random states, gaps, windows and sizes, including ones near the
    /// 63-bit limits where the fast form must decline.
    #[test]
    fn fast_estimator_equals_the_128_bit_definition() {
        let mut rng = crate::rng::Rng::new(2859, 0);
        let mut fast = 0u32;
        for i in 0..300_000u32 {
            let r =
                |rng: &mut crate::rng::Rng, bits: u32| rng.next_u64() >> (64 - bits.clamp(1, 64));
            let bits = |rng: &mut crate::rng::Rng| 1 + (rng.next_u64() % 64) as u32;
            let avg = match i % 3 {
                0 => r(&mut rng, 48),
                _ => {
                    let b = bits(&mut rng);
                    r(&mut rng, b)
                }
            };
            let dt = match i % 4 {
                0 => r(&mut rng, 24),
                1 => 0,
                _ => {
                    let b = bits(&mut rng);
                    r(&mut rng, b)
                }
            };
            let w = 1 + rng.next_u64() % MAX_WIN_NS;
            let size = match i % 5 {
                0 => rng.next_u64() as u32,
                _ => (rng.next_u64() % 9000) as u32,
            };
            let want = estimate_wide(avg, dt, w, size);
            if let Some(got) = estimate_fast(avg, dt, w, size) {
                fast += 1;
                assert_eq!(got, want, "avg {avg} dt {dt} w {w} size {size}");
            }
        }
        assert!(fast > 100_000, "fast path taken {fast} times");
    }

    proptest! {
        /// Same seed, same trace → same colours; at or below CTR always
        /// green; aware never promotes; a different seed changes the draws
        /// but never the estimator.
        #[test]
        fn deterministic_and_monotone(
            gaps in prop::collection::vec((0u64..2_000_000, 40u32..1600, 0u8..3), 1..300),
            ctr in 100_000u64..10_000_000, extra in 0u64..10_000_000, aware in any::<bool>())
        {
            let mk = |seed| Tswtcm::new(Rate::from_bps(ctr), Rate::from_bps(ctr + extra), Duration::from_ms(100), seed, aware).unwrap();
            let (mut a, mut b, mut c) = (mk(1), mk(1), mk(2));
            let mut now = 0;
            for (gap, size, pre) in gaps {
                now += gap;
                let pre = Color::from_u8(pre).unwrap();
                let at = Instant::from_ns(now);
                let x = a.color(at, size, pre);
                prop_assert_eq!(x, b.color(at, size, pre));
                c.color(at, size, pre);
                prop_assert_eq!(a.avg_rate_scaled(), c.avg_rate_scaled());
                if aware { prop_assert!(x >= pre); }
                if a.avg_rate_scaled() <= ctr << 16 && (!aware || pre == Color::Green) {
                    prop_assert_eq!(x, Color::Green);
                }
            }
        }
    }
}
