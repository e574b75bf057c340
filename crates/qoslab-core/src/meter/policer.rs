//! Cisco IOS / IOS XE `police cir CIR [bc BC] [be BE]` (MQC single-rate policer).
//!
//! **Two colours** (the plain `police cir` most configs use): one token bucket
//! of Bc bytes filled at CIR, full at start. A packet of B bytes conforms
//! (green) if the bucket holds ≥ B tokens, which are taken; otherwise it
//! exceeds (yellow) and **no tokens are taken** ("If insufficient tokens
//! exist, the packet is marked as exceeding ... but no tokens are removed",
//! <https://notes.networklessons.com/qos-policing-token-usage>). This is the
//! MQC policer introduced in IOS 12.1(5)T ("A new Traffic Policing
//! algorithm was introduced. The violate-action option became available",
//! <http://www.cisco.com/en/US/docs/ios/12_2t/12_2t2/feature/guide/ftpoli.html>),
//! not classic CAR's debt-based excess burst.
//!
//! **Three colours**: configuring a `violate-action` (or an excess burst
//! `be` > 0) makes the single-rate policer the RFC 2697 srTCM, with
//! committed bucket Bc and excess bucket Be fed by Bc's overflow; colours
//! conform / exceed / violate = green / yellow / red. This is delegated to
//! [`Srtcm`] (not duplicated). When a violate-action is given without `be`,
//! Be defaults to Bc, as IOS shows it: `show policy-map` prints
//! `police cir 50000000 bc 1562500 be 1562500` for a three-colour
//! single-rate policer (ENCOR study notes; CCIE study list: "Be = Bc, if not
//! specified"). Choice where the sources are silent: `be` > 0 *without* a
//! violate-action also selects three colours (the user sized a second
//! bucket; with the default exceed-action drop it changes nothing, with
//! `exceed=transmit` it admits the excess burst), and `be 0` keeps two.
//!
//! **Default Bc** when `bc` is omitted: CIR/32 bytes (= 250 ms at CIR,
//! CIR/8 bytes/s × 0.25 s), rounded down, never below 1500 bytes. Pinned by
//! two device outputs: a 3725's `police cir 1000000` shows `bc 31250`, an
//! ISR 4000's `police 20000000` shows `bc 625000` (the article "Limit the speed
//! of traffic. Policer or shaper, what to use on the net?", ISR 4000 lab).
//! Other platforms differ (Cisco 10000: 9216 bytes).
//!
//! Guarantee (pinned by property tests): over any interval T, green bytes
//! ≤ Bc + CIR·T (two colours) — and the srTCM bounds in three colours.
//!
//! Parameters: `cir` (rate > 0), `bc` (bytes > 0, default above), `be`
//! (bytes ≥ 0). Units as Cisco: rates in bit/s, bursts in **bytes**.
//! Default actions: conform transmit, exceed drop, violate drop
//! ([`crate::packet::Actions::CISCO_DEFAULT`]). Left out: colour-aware
//! (`conform-color`) policing, `police rate percent`, two-rate `pir` (use
//! `trtcm`), Cisco's per-platform token update granularity.

use super::color_from_masks;
use super::srtcm::Srtcm;
use super::Meter;
use crate::bucket::{
    check_depth, check_rate, need_units, opaque_mask, TokenBucket, MAX_BUCKET_BYTES,
};
use crate::packet::Color;
use crate::params::{ConfigError, Params};
use crate::time::Instant;
use crate::units::{Bytes, Rate};

/// Cisco's documented default committed burst: CIR/32 bytes (250 ms of CIR),
/// at least 1500 bytes.
pub const fn cisco_default_bc(cir: Rate) -> Bytes {
    let bc = cir.bps() / 32;
    Bytes::new(if bc < 1500 { 1500 } else { bc })
}

#[derive(Clone, Debug)]
enum Inner {
    /// One bucket, conform / exceed.
    Two { b: TokenBucket, last: Instant },
    /// RFC 2697 srTCM, conform / exceed / violate.
    Three(Srtcm),
}

/// Cisco single-rate policer state.
#[derive(Clone, Debug)]
pub struct Police {
    inner: Inner,
    cir: Rate,
    bc: Bytes,
    bc_defaulted: bool,
    be: Bytes,
}

impl Police {
    /// `bc = None` takes [`cisco_default_bc`]; `violate_configured` says
    /// whether the policy names a violate-action (three colours, Be
    /// defaulting to Bc).
    pub fn new(
        cir: Rate,
        bc: Option<Bytes>,
        be: Option<Bytes>,
        violate_configured: bool,
    ) -> Result<Self, ConfigError> {
        check_rate("cir", cir)?;
        let bc_defaulted = bc.is_none();
        let bc = bc.unwrap_or(cisco_default_bc(cir));
        if bc_defaulted && bc.get() > MAX_BUCKET_BYTES {
            return Err(ConfigError::new(
                "bc",
                format!(
                    "the default bc (cir/32 = {bc}) is above the 1 GiB maximum; give bc explicitly"
                ),
            ));
        }
        check_depth("bc", bc, false)?;
        let three = violate_configured || be.is_some_and(|b| b.get() > 0);
        let inner = if three {
            let be = be.unwrap_or(bc);
            check_depth("be", be, true)?;
            Inner::Three(Srtcm::new(cir, bc, be, false).map_err(|e| {
                // Srtcm names its own keys; translate to Cisco's.
                let param = match e.param.as_str() {
                    "cbs" => "bc",
                    "ebs" => "be",
                    other => other,
                };
                ConfigError::new(param, e.message)
            })?)
        } else {
            Inner::Two {
                b: TokenBucket::full(cir, bc),
                last: Instant::ZERO,
            }
        };
        let be = match &inner {
            Inner::Three(_) => be.unwrap_or(bc),
            Inner::Two { .. } => Bytes::new(0),
        };
        Ok(Police {
            inner,
            cir,
            bc,
            bc_defaulted,
            be,
        })
    }

    /// Reads `cir`, `bc`, `be`; `violate_configured` comes from the policer's
    /// actions (see [`super::Policer::from_params`]).
    pub fn from_params(p: &mut Params, violate_configured: bool) -> Result<Self, ConfigError> {
        let cir = p.rate("cir")?;
        let bc = p.opt_size("bc")?;
        let be = p.opt_size("be")?;
        Self::new(cir, bc, be, violate_configured)
    }

    /// True when the policer has three colours (srTCM).
    pub fn is_three_color(&self) -> bool {
        matches!(self.inner, Inner::Three(_))
    }

    /// Committed tokens at the last update, bytes.
    pub fn tc_bytes(&self) -> u64 {
        match &self.inner {
            Inner::Two { b, .. } => b.tokens_bytes(),
            Inner::Three(m) => m.tc_bytes(),
        }
    }
}

impl Meter for Police {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        match &mut self.inner {
            Inner::Two { b, last } => {
                let dt = now.saturating_since(*last).as_ns();
                if dt > 0 {
                    *last = now;
                    b.fill(dt);
                }
                // Conform takes B tokens; exceed takes none. As a mask, not
                // a branch (see `opaque_mask`); tested against `take`.
                let need = need_units(size_bytes);
                let conform = opaque_mask(b.has_units(need));
                b.take_masked(need, conform);
                color_from_masks(u64::MAX, conform)
            }
            Inner::Three(m) => m.color(now, size_bytes, pre_color),
        }
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        let three = self.is_three_color();
        vec![
            ("kind", "police".into()),
            (
                "standard",
                if three {
                    "Cisco single-rate three-colour policer = RFC 2697 srTCM"
                } else {
                    "Cisco single-rate two-colour policer"
                }
                .into(),
            ),
            ("cir", self.cir.to_string()),
            (
                "bc",
                if self.bc_defaulted {
                    format!("{}B (default: cir/32, min 1500B)", self.bc.get())
                } else {
                    format!("{}B", self.bc.get())
                },
            ),
            ("be", format!("{}B", self.be.get())),
            ("colors", if three { "3" } else { "2" }.into()),
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

    #[test]
    fn cisco_default_bc_matches_device_outputs() {
        // 3725: `police cir 1000000` -> "bc 31250" (packetlife capture).
        assert_eq!(cisco_default_bc(Rate::from_bps(1_000_000)).get(), 31_250);
        // ISR 4000: `police 20000000` -> bc 625000 bytes.
        assert_eq!(cisco_default_bc(Rate::from_bps(20_000_000)).get(), 625_000);
        // 1500-byte floor: 8 kbit/s / 32 = 250 -> 1500; 48 kbit/s is exactly 1500.
        assert_eq!(cisco_default_bc(Rate::from_bps(8_000)).get(), 1500);
        assert_eq!(cisco_default_bc(Rate::from_bps(48_000)).get(), 1500);
        assert_eq!(cisco_default_bc(Rate::from_bps(48_032)).get(), 1501);
        let m = Police::new(Rate::from_bps(1_000_000), None, None, false).unwrap();
        assert_eq!(m.tc_bytes(), 31_250, "bucket starts full at the default bc");
        assert!(m.describe()[3].1.starts_with("31250B (default"));
    }

    #[test]
    fn exceed_takes_no_tokens() {
        // CIR 8 Mbit/s = 1000 B/ms, Bc 2000.
        let mut m = Police::new(
            Rate::from_bps(8_000_000),
            Some(Bytes::new(2000)),
            None,
            false,
        )
        .unwrap();
        let g = Color::Green;
        assert_eq!(m.color(t_ms(0), 1500, g), Color::Green); // 500 left
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Yellow); // none taken
        assert_eq!(m.tc_bytes(), 500);
        assert_eq!(m.color(t_ms(0), 500, g), Color::Green); // 0
        assert_eq!(m.color(t_ms(1), 1001, g), Color::Yellow); // 1000 < 1001
        assert_eq!(m.color(t_ms(1), 1000, g), Color::Green);
        assert_eq!(m.color(t_ms(100), 1, g), Color::Green);
        assert_eq!(m.tc_bytes(), 1999, "refill caps at bc");
        assert!(!m.is_three_color());
        // Pre-colour is ignored (colour-blind).
        assert_eq!(m.color(t_ms(100), 1, Color::Red), Color::Green);
    }

    #[test]
    fn violate_action_makes_srtcm_with_be_defaulting_to_bc() {
        let mut m = Police::new(
            Rate::from_bps(8_000_000),
            Some(Bytes::new(2000)),
            None,
            true,
        )
        .unwrap();
        assert!(m.is_three_color());
        assert_eq!(m.describe()[4].1, "2000B");
        let g = Color::Green;
        assert_eq!(m.color(t_ms(0), 2000, g), Color::Green);
        assert_eq!(m.color(t_ms(0), 2000, g), Color::Yellow); // from Be = 2000
        assert_eq!(m.color(t_ms(0), 1, g), Color::Red);
        // Same as the srTCM it delegates to.
        let mut s = Srtcm::new(
            Rate::from_bps(8_000_000),
            Bytes::new(2000),
            Bytes::new(2000),
            false,
        )
        .unwrap();
        for c in [2000, 2000, 1] {
            s.color(t_ms(0), c, g);
        }
        for (t, size) in [(1, 700), (2, 1500), (9, 2500), (9, 1000)] {
            assert_eq!(m.color(t_ms(t), size, g), s.color(t_ms(t), size, g));
        }
    }

    #[test]
    fn be_alone_selects_three_colours_and_be_zero_two() {
        let r = Rate::from_bps(1_000_000);
        let m = Police::new(r, Some(Bytes::new(1500)), Some(Bytes::new(3000)), false).unwrap();
        assert!(m.is_three_color());
        let m = Police::new(r, Some(Bytes::new(1500)), Some(Bytes::new(0)), false).unwrap();
        assert!(!m.is_three_color());
        assert_eq!(
            Police::new(r, Some(Bytes::new(0)), None, false)
                .unwrap_err()
                .param,
            "bc"
        );
        assert_eq!(
            Police::new(r, Some(Bytes::new(0)), None, true)
                .unwrap_err()
                .param,
            "bc"
        );
        assert_eq!(
            Police::new(Rate::from_bps(0), None, None, false)
                .unwrap_err()
                .param,
            "cir"
        );
        // A default bc beyond the bucket limit is reported, not clamped.
        let e = Police::new(Rate::from_bps(1_000_000_000_000), None, None, false).unwrap_err();
        assert_eq!(e.param, "bc");
    }

    /// Differential: the two-colour policer's masked take gives the same
    /// colours and bucket as the branching `take` on random buckets and
    /// traces.
    #[test]
    fn two_colour_masked_take_equals_the_branching_form() {
        let mut rng = crate::rng::Rng::new(32, 0);
        let mut seen = [0usize; 2];
        for case in 0..400u64 {
            let (cir, bc) = crate::meter::difftest::rate_depth(&mut rng);
            let mut got =
                Police::new(Rate::from_bps(cir), Some(Bytes::new(bc)), None, false).unwrap();
            let Inner::Two { b, last } = &got.inner else {
                panic!("two colours expected");
            };
            let (mut b, mut last) = (*b, *last);
            for (i, (t, size, pre)) in crate::meter::difftest::trace(case, 2_000)
                .into_iter()
                .enumerate()
            {
                // The form `color` had before its mask: the reference.
                let dt = t.saturating_since(last).as_ns();
                if dt > 0 {
                    last = t;
                    b.fill(dt);
                }
                let w = if b.take(size) {
                    Color::Green
                } else {
                    Color::Yellow
                };
                let g = got.color(t, size, pre);
                seen[g as usize] += 1;
                assert_eq!(g, w, "case {case} packet {i}");
                let Inner::Two { b: gb, last: gl } = &got.inner else {
                    unreachable!()
                };
                assert_eq!((*gb, *gl), (b, last), "case {case} packet {i}");
            }
        }
        assert!(seen.iter().all(|&n| n > 10_000), "{seen:?}");
    }

    proptest! {
        /// Green bytes ≤ Bc + CIR·T on every window; tokens ≤ Bc.
        #[test]
        fn green_is_bounded_on_every_window(
            gaps in prop::collection::vec((0u64..2_000_000, 40u32..1600), 1..300),
            cir in 100_000u64..100_000_000, bc in 1u64..20_000)
        {
            let mut m = Police::new(Rate::from_bps(cir), Some(Bytes::new(bc)), None, false).unwrap();
            let mut now = 0u64;
            let mut pkts = Vec::new();
            for (gap, size) in gaps {
                now += gap;
                let c = m.color(Instant::from_ns(now), size, Color::Green);
                prop_assert!(c != Color::Red);
                prop_assert!(m.tc_bytes() <= bc);
                pkts.push((now, size as u128, c));
            }
            for i in 0..pkts.len() {
                let mut g = 0u128;
                for &(t, size, c) in &pkts[i..] {
                    if c == Color::Green { g += size; }
                    let w = (t - pkts[i].0) as u128;
                    prop_assert!(g * 8_000_000_000 <= bc as u128 * 8_000_000_000 + cir as u128 * w);
                }
            }
        }
    }
}
