//! Single Rate Three Color Marker, RFC 2697.
//!
//! Two token buckets share one rate, CIR: the committed bucket C (depth CBS)
//! and the excess bucket E (depth EBS), both full at time 0 (§3). Tokens
//! arrive at CIR into C; when C is full they go to E; when both are full they
//! are lost (§3 "Tc incremented by one ... else if Te is less than EBS, Te is
//! incremented by one, else neither Tc nor Te is incremented").
//!
//! A packet of B bytes at time t is (§3.1, colour-blind):
//! green if Tc ≥ B (Tc −= B); else yellow if Te ≥ B (Te −= B); else red.
//! Colour-aware (§3.2): green only if it arrived green and Tc ≥ B; yellow if
//! it arrived green or yellow and Te ≥ B; otherwise red. Red packets take no
//! tokens.
//!
//! Guarantee (pinned by property tests): over any interval of length T,
//! green bytes ≤ CBS + CIR·T and green + yellow bytes ≤ CBS + EBS + CIR·T.
//!
//! Parameters: `cir` (rate, > 0), `cbs` (> 0 bytes — the RFC allows 0 when
//! EBS is not 0, but then nothing is ever green; we refuse it as a mistake),
//! `ebs` (≥ 0 bytes, default 0 = two colours), `mode` = `blind` | `aware`.
//! The RFC recommends CBS and EBS ≥ the largest packet; smaller values are
//! accepted (a packet larger than a bucket can never take its colour).
//!
//! Token arithmetic: see [`crate::bucket`] (exact, integer bit-nanoseconds).

use super::color_from_masks;
use super::Meter;
use crate::bucket::{check_depth, check_rate, need_units, opaque_mask, TokenBucket};
use crate::packet::Color;
use crate::params::{ConfigError, Params};
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Rate};

/// RFC 2697 srTCM state.
#[derive(Clone, Debug)]
pub struct Srtcm {
    c: TokenBucket,
    e: TokenBucket,
    last: Instant,
    color_aware: bool,
}

impl Srtcm {
    /// A marker with both buckets full at time 0 (RFC 2697 §3).
    pub fn new(cir: Rate, cbs: Bytes, ebs: Bytes, color_aware: bool) -> Result<Self, ConfigError> {
        check_rate("cir", cir)?;
        check_depth("cbs", cbs, false)?;
        check_depth("ebs", ebs, true)?;
        Ok(Srtcm {
            c: TokenBucket::full(cir, cbs),
            e: TokenBucket::full(cir, ebs),
            last: Instant::ZERO,
            color_aware,
        })
    }

    /// Reads `cir`, `cbs`, `ebs` (default 0) and `mode`.
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let cir = p.rate("cir")?;
        let cbs = p.size("cbs")?;
        let ebs = p.opt_size("ebs")?.unwrap_or(Bytes::new(0));
        let aware = p.color_aware()?;
        Self::new(cir, cbs, ebs, aware)
    }

    /// Tokens in the committed bucket, bytes (Tc).
    pub fn tc_bytes(&self) -> u64 {
        self.c.tokens_bytes()
    }
    /// Tokens in the excess bucket, bytes (Te).
    pub fn te_bytes(&self) -> u64 {
        self.e.tokens_bytes()
    }

    /// Time from `now` until a `size_bytes` packet arriving green would be
    /// marked green (Tc ≥ B), counting the tokens accrued since the last
    /// packet; `Duration::ZERO` if now, `None` if never (B > CBS). Does not
    /// change the meter. Rounded up to the next nanosecond. RFC 2963's
    /// G-srRAS asks this (§3.2: the delay until the packet would be green).
    pub fn time_until_green(&self, now: Instant, size_bytes: u32) -> Option<Duration> {
        let dt = now.saturating_since(self.last).as_ns();
        // C fills linearly at CIR until full (only its overflow goes to E)
        // and B ≤ CBS, so the wait from `last` minus the time elapsed is exact.
        let wait = self.c.time_until(size_bytes)?.saturating_sub(dt);
        Some(Duration::from_ns(wait))
    }

    #[inline(always)]
    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last).as_ns();
        if dt > 0 {
            self.last = now;
            let overflow = self.c.fill(dt);
            if overflow > 0 {
                self.e.add(overflow);
            }
        }
    }
}

impl Meter for Srtcm {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        self.refill(now);
        let pre = if self.color_aware {
            pre_color
        } else {
            Color::Green
        };
        // §3.1/§3.2: green if (blind or arrived green) and Tc ≥ B (Tc −= B);
        // else yellow if (blind or arrived not red) and Te ≥ B (Te −= B);
        // else red. As masks, not branches (see `opaque_mask`); the tests
        // check this against the RFC's branching form.
        let need = need_units(size_bytes);
        let green = (pre == Color::Green) & self.c.has_units(need);
        let yellow = !green & (pre != Color::Red) & self.e.has_units(need);
        let (mg, my) = (opaque_mask(green), opaque_mask(yellow));
        self.c.take_masked(need, mg);
        self.e.take_masked(need, my);
        color_from_masks(mg | my, mg)
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "srtcm".into()),
            ("standard", "RFC 2697".into()),
            ("cir", self.c.rate().to_string()),
            ("cbs", format!("{}B", self.c.depth_bytes())),
            ("ebs", format!("{}B", self.e.depth_bytes())),
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

    /// Hand-computed: CIR 8 Mbit/s = 1000 bytes/ms, CBS 2000, EBS 1000.
    #[test]
    fn hand_computed_sequence_blind() {
        let mut m = Srtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(2000),
            Bytes::new(1000),
            false,
        )
        .unwrap();
        let g = Color::Green;
        // t=0: Tc=2000, Te=1000
        assert_eq!(m.color(t_ms(0), 1500, g), Color::Green); // Tc 500
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Yellow); // Te 0
        assert_eq!(m.color(t_ms(0), 500, g), Color::Green); // Tc 0
        assert_eq!(m.color(t_ms(0), 1, g), Color::Red);
        // +1 ms: 1000 tokens into C
        assert_eq!(m.tc_bytes(), 0);
        assert_eq!(m.color(t_ms(1), 1001, g), Color::Red);
        assert_eq!(m.tc_bytes(), 1000);
        // +3 ms: C fills to 2000 (1000 used), 2000 overflow -> E capped 1000
        assert_eq!(m.color(t_ms(4), 1000, g), Color::Green);
        assert_eq!((m.tc_bytes(), m.te_bytes()), (1000, 1000));
    }

    #[test]
    fn color_aware_never_promotes() {
        let mut m = Srtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(2000),
            Bytes::new(2000),
            true,
        )
        .unwrap();
        assert_eq!(m.color(t_ms(0), 100, Color::Yellow), Color::Yellow);
        assert_eq!(m.color(t_ms(0), 100, Color::Red), Color::Red);
        assert_eq!(
            m.tc_bytes(),
            2000,
            "yellow/red arrivals must not take committed tokens"
        );
        assert_eq!(m.te_bytes(), 1900);
    }

    #[test]
    fn ebs_zero_gives_two_colours_and_cbs_zero_is_refused() {
        let mut m = Srtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(1000),
            Bytes::new(0),
            false,
        )
        .unwrap();
        assert_eq!(m.color(t_ms(0), 1000, Color::Green), Color::Green);
        assert_eq!(m.color(t_ms(0), 1, Color::Green), Color::Red);
        let e = Srtcm::new(Rate::from_bps(1), Bytes::new(0), Bytes::new(10), false).unwrap_err();
        assert_eq!(e.param, "cbs");
        assert_eq!(
            Srtcm::new(Rate::from_bps(0), Bytes::new(1), Bytes::new(0), false)
                .unwrap_err()
                .param,
            "cir"
        );
    }

    #[test]
    fn clock_stepping_back_creates_no_tokens() {
        let mut m = Srtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(1000),
            Bytes::new(0),
            false,
        )
        .unwrap();
        assert_eq!(m.color(t_ms(10), 1000, Color::Green), Color::Green);
        assert_eq!(m.color(t_ms(5), 1, Color::Green), Color::Red);
        assert_eq!(m.color(t_ms(10), 1, Color::Green), Color::Red);
    }

    #[test]
    fn time_until_green_counts_elapsed_time_without_mutating() {
        let mut m = Srtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(2000),
            Bytes::new(1000),
            false,
        )
        .unwrap();
        assert_eq!(m.color(t_ms(0), 2000, Color::Green), Color::Green); // Tc 0
        assert_eq!(
            m.time_until_green(t_ms(0), 1500),
            Some(Duration::from_us(1500))
        );
        assert_eq!(
            m.time_until_green(t_ms(1), 1500),
            Some(Duration::from_us(500))
        );
        assert_eq!(m.time_until_green(t_ms(5), 1500), Some(Duration::ZERO));
        assert_eq!(m.time_until_green(t_ms(0), 2001), None);
        assert_eq!(m.tc_bytes(), 0, "must not mutate");
        let mut early = m.clone();
        assert_ne!(
            early.color(Instant::from_ns(1_499_999), 1500, Color::Green),
            Color::Green
        );
        assert_eq!(
            m.color(Instant::from_ns(1_500_000), 1500, Color::Green),
            Color::Green
        );
    }

    fn trace() -> impl Strategy<Value = Vec<(u64, u32, u8)>> {
        prop::collection::vec((0u64..2_000_000, 40u32..1600, 0u8..3), 1..400)
    }

    /// RFC 2697 §3.1/§3.2 with branches and the bucket's `take` (the form
    /// `color` had before its masks): the reference.
    fn color_branching(m: &mut Srtcm, now: Instant, size: u32, pre: Color) -> Color {
        m.refill(now);
        let pre = if m.color_aware { pre } else { Color::Green };
        if pre == Color::Green && m.c.take(size) {
            Color::Green
        } else if pre != Color::Red && m.e.take(size) {
            Color::Yellow
        } else {
            Color::Red
        }
    }

    /// Differential: the masked `color` gives the same colours and state as
    /// the RFC's branching form on random meters (EBS 0 included, both
    /// modes) and traces.
    #[test]
    fn masked_color_equals_the_branching_rfc_form() {
        let mut rng = crate::rng::Rng::new(2697, 0);
        let mut seen = [0usize; 3];
        for case in 0..400u64 {
            let (cir, cbs) = crate::meter::difftest::rate_depth(&mut rng);
            let (_, ebs) = crate::meter::difftest::rate_depth(&mut rng);
            let ebs = if case % 5 == 0 { 0 } else { ebs };
            let aware = case % 2 == 1;
            let got =
                Srtcm::new(Rate::from_bps(cir), Bytes::new(cbs), Bytes::new(ebs), aware).unwrap();
            crate::meter::difftest::same_as_reference(
                case,
                got,
                |m: &mut Srtcm, t, size, pre| m.color(t, size, pre),
                color_branching,
                |m| (m.c, m.e, m.last),
                &mut seen,
            );
        }
        assert!(seen.iter().all(|&n| n > 10_000), "{seen:?}");
    }

    proptest! {
        /// RFC 2697 bound: over any window [t_i, t_j], green ≤ CBS + CIR·T and
        /// green+yellow ≤ CBS + EBS + CIR·T.
        #[test]
        fn green_and_yellow_bytes_are_bounded_on_every_window(
            gaps in trace(), cir in 100_000u64..100_000_000, cbs in 1u64..20_000, ebs in 0u64..20_000, aware in any::<bool>())
        {
            let mut m = Srtcm::new(Rate::from_bps(cir), Bytes::new(cbs), Bytes::new(ebs), aware).unwrap();
            let mut now = 0u64;
            let mut pkts = Vec::new();
            for (gap, size, pre) in gaps {
                now += gap;
                let pre = Color::from_u8(pre).unwrap();
                let c = m.color(Instant::from_ns(now), size, pre);
                prop_assert!(c >= pre || !aware, "colour-aware promoted {pre:?} to {c:?}");
                prop_assert!(m.tc_bytes() <= cbs && m.te_bytes() <= ebs);
                pkts.push((now, size as u128, c));
            }
            for i in 0..pkts.len() {
                let (mut g, mut gy) = (0u128, 0u128);
                for &(t, size, c) in &pkts[i..] {
                    let window_ns = (t - pkts[i].0) as u128;
                    if c == Color::Green { g += size; }
                    if c != Color::Red { gy += size; }
                    // scaled by 8e9: bytes*8e9 ≤ depth*8e9 + cir*ns
                    prop_assert!(g * 8_000_000_000 <= cbs as u128 * 8_000_000_000 + cir as u128 * window_ns);
                    prop_assert!(gy * 8_000_000_000 <= (cbs + ebs) as u128 * 8_000_000_000 + cir as u128 * window_ns);
                }
            }
        }
    }
}
