//! Two Rate Three Color Marker, RFC 2698.
//!
//! Two independent token buckets: P (depth PBS, filled at PIR) and C (depth
//! CBS, filled at CIR), both full at time 0 (§3: "The token buckets P and C
//! are initially (at time 0) full"). Each is incremented at its own rate up
//! to its own depth; unlike RFC 2697 nothing overflows from one into the
//! other.
//!
//! A packet of B bytes at time t is (§3, colour-blind):
//! red if Tp < B; else yellow if Tc < B (Tp −= B); else green (Tp −= B and
//! Tc −= B). Colour-aware (§3): red if it arrived red or Tp < B; else yellow
//! if it arrived yellow or Tc < B (Tp −= B); else green (both −= B).
//! Red packets take no tokens.
//!
//! Guarantee (pinned by property tests): over any interval of length T,
//! green bytes ≤ CBS + CIR·T and green + yellow bytes ≤ PBS + PIR·T.
//!
//! Parameters: `cir` (rate, > 0), `cbs` (bytes, > 0), `pir` (rate, ≥ cir —
//! §2 "The PIR must be equal to or greater than the CIR"), `pbs` (bytes,
//! greater than 0), `mode` = `blind` | `aware`. The RFC recommends CBS and
//! PBS ≥ the largest packet; smaller values are accepted (a packet larger
//! than PBS is always red, one larger than CBS never green).
//!
//! [`Trtcm::time_until_green`] answers "when would a B-byte packet be green"
//! without touching the state — RFC 2963's G-trRAS asks it (§3.2).
//!
//! Token arithmetic: see [`crate::bucket`] (exact, integer bit-nanoseconds).

use super::color_from_masks;
use super::Meter;
use crate::bucket::{check_depth, check_rate, need_units, opaque_mask, TokenBucket};
use crate::packet::Color;
use crate::params::{ConfigError, Params};
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Rate};

/// RFC 2698 trTCM state.
#[derive(Clone, Debug)]
pub struct Trtcm {
    c: TokenBucket,
    p: TokenBucket,
    last: Instant,
    color_aware: bool,
}

impl Trtcm {
    /// A marker with both buckets full at time 0 (RFC 2698 §3).
    pub fn new(
        cir: Rate,
        cbs: Bytes,
        pir: Rate,
        pbs: Bytes,
        color_aware: bool,
    ) -> Result<Self, ConfigError> {
        check_rate("cir", cir)?;
        check_rate("pir", pir)?;
        if pir < cir {
            // RFC 2698 §2: "The PIR must be equal to or greater than the CIR."
            return Err(ConfigError::new(
                "pir",
                format!("must be at least cir ({cir}), got {pir} (RFC 2698 §2)"),
            ));
        }
        check_depth("cbs", cbs, false)?;
        check_depth("pbs", pbs, false)?;
        Ok(Trtcm {
            c: TokenBucket::full(cir, cbs),
            p: TokenBucket::full(pir, pbs),
            last: Instant::ZERO,
            color_aware,
        })
    }

    /// Reads `cir`, `cbs`, `pir`, `pbs` and `mode`.
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let cir = p.rate("cir")?;
        let cbs = p.size("cbs")?;
        let pir = p.rate("pir")?;
        let pbs = p.size("pbs")?;
        let aware = p.color_aware()?;
        Self::new(cir, cbs, pir, pbs, aware)
    }

    /// Tokens in the committed bucket at the last update, bytes (Tc).
    pub fn tc_bytes(&self) -> u64 {
        self.c.tokens_bytes()
    }
    /// Tokens in the peak bucket at the last update, bytes (Tp).
    pub fn tp_bytes(&self) -> u64 {
        self.p.tokens_bytes()
    }

    /// Time from `now` until a `size_bytes` packet arriving green would be
    /// marked green (both Tc ≥ B and Tp ≥ B), counting the tokens accrued
    /// since the last packet; `Duration::ZERO` if it would be green now,
    /// `None` if never (B > CBS or B > PBS). Does not change the meter.
    /// Rounded up to the next nanosecond, so arriving at `now + d` is green.
    pub fn time_until_green(&self, now: Instant, size_bytes: u32) -> Option<Duration> {
        let dt = now.saturating_since(self.last).as_ns();
        // Each bucket fills linearly until full and B ≤ depth, so the wait
        // measured from `last` minus the time already elapsed is exact.
        let c = self.c.time_until(size_bytes)?.saturating_sub(dt);
        let p = self.p.time_until(size_bytes)?.saturating_sub(dt);
        Some(Duration::from_ns(c.max(p)))
    }

    #[inline(always)]
    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last).as_ns();
        // A zero gap (same instant, or a clock that stepped back) adds nothing
        // and keeps `last`, so no branch is needed: `max` is `now` iff dt > 0.
        self.last = self.last.max(now);
        // §3: Tc and Tp are each incremented at their own rate, capped at
        // their own depth; nothing passes between them.
        self.c.fill(dt);
        self.p.fill(dt);
    }
}

impl Meter for Trtcm {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        self.refill(now);
        let pre = if self.color_aware {
            pre_color
        } else {
            Color::Green
        };
        let need = need_units(size_bytes);
        // §3: red if pre-red or Tp < B (nothing is taken); else yellow if
        // pre-yellow or Tc < B (Tp −= B); else green (Tp −= B, Tc −= B).
        // As masks, not branches (see `opaque_mask`); the tests check this
        // against the RFC's branching form.
        let p_ok = (pre != Color::Red) & self.p.has_units(need);
        let c_ok = p_ok & (pre == Color::Green) & self.c.has_units(need);
        let (mp, mc) = (opaque_mask(p_ok), opaque_mask(c_ok));
        self.p.take_masked(need, mp);
        self.c.take_masked(need, mc);
        color_from_masks(mp, mc)
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "trtcm".into()),
            ("standard", "RFC 2698".into()),
            ("cir", self.c.rate().to_string()),
            ("cbs", format!("{}B", self.c.depth_bytes())),
            ("pir", self.p.rate().to_string()),
            ("pbs", format!("{}B", self.p.depth_bytes())),
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

    fn t_ms(ms: u64) -> Instant {
        Instant::from_ns(ms * 1_000_000)
    }

    /// CIR 8 Mbit/s = 1000 B/ms, CBS 2000; PIR 16 Mbit/s = 2000 B/ms, PBS 3000.
    fn meter(aware: bool) -> Trtcm {
        Trtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(2000),
            Rate::from_bps(16_000_000),
            Bytes::new(3000),
            aware,
        )
        .unwrap()
    }

    #[test]
    fn hand_computed_sequence_blind() {
        let mut m = meter(false);
        let g = Color::Green;
        // t=0: Tc=2000, Tp=3000
        assert_eq!(m.color(t_ms(0), 1500, g), Color::Green); // Tc 500, Tp 1500
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Yellow); // Tp 500
        assert_eq!(m.color(t_ms(0), 600, g), Color::Red); // Tp 500 < 600
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (500, 500));
        assert_eq!(m.color(t_ms(0), 500, g), Color::Green); // both 0
                                                            // +1 ms: Tc 1000, Tp 2000
        assert_eq!(m.color(t_ms(1), 1500, g), Color::Yellow); // Tp 500
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (1000, 500));
        // +10 ms: both full again (2000, 3000), no overflow between them
        assert_eq!(m.color(t_ms(11), 2000, g), Color::Green);
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (0, 1000));
    }

    #[test]
    fn color_aware_follows_rfc_2698_section_3() {
        let mut m = meter(true);
        assert_eq!(m.color(t_ms(0), 100, Color::Red), Color::Red);
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (2000, 3000));
        assert_eq!(m.color(t_ms(0), 100, Color::Yellow), Color::Yellow);
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (2000, 2900));
        assert_eq!(m.color(t_ms(0), 100, Color::Green), Color::Green);
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (1900, 2800));
    }

    #[test]
    fn validation_names_the_parameter() {
        let e = Trtcm::new(
            Rate::from_bps(2_000_000),
            Bytes::new(1),
            Rate::from_bps(1_000_000),
            Bytes::new(1),
            false,
        )
        .unwrap_err();
        assert_eq!(e.param, "pir");
        let r = Rate::from_bps(1_000_000);
        assert_eq!(
            Trtcm::new(r, Bytes::new(0), r, Bytes::new(1), false)
                .unwrap_err()
                .param,
            "cbs"
        );
        assert_eq!(
            Trtcm::new(r, Bytes::new(1), r, Bytes::new(0), false)
                .unwrap_err()
                .param,
            "pbs"
        );
        let mut p = Params::new(
            "trtcm",
            [
                ("cir", "1mbit"),
                ("cbs", "2k"),
                ("pir", "2mbit"),
                ("pbs", "4k"),
            ],
        );
        let m = Trtcm::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(m.describe()[5], ("pbs", "4096B".to_string()));
    }

    #[test]
    fn time_until_green_accounts_for_elapsed_time_without_mutating() {
        let mut m = meter(false);
        assert_eq!(m.color(t_ms(0), 2000, Color::Green), Color::Green); // Tc 0, Tp 1000
                                                                        // 1500 B green needs Tc ≥ 1500 (1.5 ms) and Tp ≥ 1500 (0.25 ms).
        assert_eq!(
            m.time_until_green(t_ms(0), 1500),
            Some(Duration::from_us(1500))
        );
        assert_eq!(
            m.time_until_green(t_ms(1), 1500),
            Some(Duration::from_us(500))
        );
        assert_eq!(m.time_until_green(t_ms(2), 1500), Some(Duration::ZERO));
        assert_eq!(m.time_until_green(t_ms(0), 2001), None);
        assert_eq!((m.tc_bytes(), m.tp_bytes()), (0, 1000), "must not mutate");
        // And the answer is right: green exactly then, not 1 ns earlier.
        let mut early = m.clone();
        assert_eq!(
            early.color(Instant::from_ns(1_499_999), 1500, Color::Green),
            Color::Yellow
        );
        assert_eq!(
            m.color(t_ms(0) + Duration::from_us(1500), 1500, Color::Green),
            Color::Green
        );
    }

    fn trace() -> impl Strategy<Value = Vec<(u64, u32, u8)>> {
        prop::collection::vec((0u64..2_000_000, 40u32..1600, 0u8..3), 1..300)
    }

    /// RFC 2698 §3 as the RFC writes it, with branches and the bucket's
    /// `take` (the form `color` had before its masks): the reference.
    fn color_branching(m: &mut Trtcm, now: Instant, size: u32, pre: Color) -> Color {
        m.refill(now);
        let pre = if m.color_aware { pre } else { Color::Green };
        if pre == Color::Red || !m.p.has(size) {
            return Color::Red;
        }
        if pre == Color::Yellow || !m.c.take(size) {
            m.p.take_saturating(size);
            return Color::Yellow;
        }
        m.p.take_saturating(size);
        Color::Green
    }

    /// Differential: the masked `color` gives the same colours and the same
    /// state as the branching RFC form, packet by packet, on random meters
    /// and traces (both modes, same instants, clock steps back, huge sizes).
    #[test]
    fn masked_color_equals_the_branching_rfc_form() {
        let mut rng = crate::rng::Rng::new(2698, 0);
        let mut seen = [0usize; 3];
        for case in 0..400u64 {
            let (cir, cbs) = crate::meter::difftest::rate_depth(&mut rng);
            let (extra, pbs) = crate::meter::difftest::rate_depth(&mut rng);
            let aware = case % 2 == 1;
            let got = Trtcm::new(
                Rate::from_bps(cir),
                Bytes::new(cbs),
                Rate::from_bps(cir + extra),
                Bytes::new(pbs),
                aware,
            )
            .unwrap();
            crate::meter::difftest::same_as_reference(
                case,
                got,
                |m: &mut Trtcm, t, size, pre| m.color(t, size, pre),
                color_branching,
                |m| (m.c, m.p, m.last),
                &mut seen,
            );
        }
        assert!(seen.iter().all(|&n| n > 10_000), "{seen:?}");
    }

    proptest! {
        /// RFC 2698 bounds on every window: green ≤ CBS + CIR·T,
        /// green + yellow ≤ PBS + PIR·T; tokens never exceed depths;
        /// colour-aware never improves a colour.
        #[test]
        fn bounded_on_every_window(
            gaps in trace(), cir in 100_000u64..50_000_000, extra in 0u64..50_000_000,
            cbs in 1u64..20_000, pbs in 1u64..20_000, aware in any::<bool>())
        {
            let pir = cir + extra;
            let mut m = Trtcm::new(Rate::from_bps(cir), Bytes::new(cbs), Rate::from_bps(pir), Bytes::new(pbs), aware).unwrap();
            let mut now = 0u64;
            let mut pkts = Vec::new();
            for (gap, size, pre) in gaps {
                now += gap;
                let pre = Color::from_u8(pre).unwrap();
                let c = m.color(Instant::from_ns(now), size, pre);
                prop_assert!(c >= pre || !aware, "colour-aware promoted {pre:?} to {c:?}");
                prop_assert!(m.tc_bytes() <= cbs && m.tp_bytes() <= pbs);
                pkts.push((now, size as u128, c));
            }
            for i in 0..pkts.len() {
                let (mut g, mut gy) = (0u128, 0u128);
                for &(t, size, c) in &pkts[i..] {
                    let w = (t - pkts[i].0) as u128;
                    if c == Color::Green { g += size; }
                    if c != Color::Red { gy += size; }
                    prop_assert!(g * 8_000_000_000 <= cbs as u128 * 8_000_000_000 + cir as u128 * w);
                    prop_assert!(gy * 8_000_000_000 <= pbs as u128 * 8_000_000_000 + pir as u128 * w);
                }
            }
        }

        /// `time_until_green` is exact: a green-coloured arrival at
        /// now + d is green, and (for d > 0) at now + d − 1 ns it is not.
        #[test]
        fn time_until_green_is_exact(
            gaps in trace(), probe in 0u64..3_000_000, size in 40u32..1600)
        {
            let mut m = meter(false);
            let mut now = 0u64;
            for (gap, s, _) in gaps {
                now += gap;
                m.color(Instant::from_ns(now), s, Color::Green);
            }
            let at = Instant::from_ns(now + probe);
            let d = m.time_until_green(at, size).unwrap();
            let mut a = m.clone();
            prop_assert_eq!(a.color(at + d, size, Color::Green), Color::Green);
            if d > Duration::ZERO {
                let mut b = m.clone();
                let before = Instant::from_ns(at.as_ns() + d.as_ns() - 1);
                prop_assert_ne!(b.color(before, size, Color::Green), Color::Green);
            }
        }
    }
}
