//! MEF 10.3 Bandwidth Profile, single Bandwidth Profile Flow (n = 1).
//!
//! Two token buckets: committed C (depth CBS, filled at CIR) and excess E
//! (depth EBS, filled at EIR), both full at start. With the Coupling Flag
//! CF = 1, the committed tokens that overflow C go to E. This is the
//! Bandwidth Profile Algorithm of MEF 10.3 §10 for an envelope holding one
//! flow (n = 1), which is MEF 10.2's two-bucket algorithm; transcribed from
//! MEF 10.3, "Ethernet Services Attributes Phase 3" (MEF Forum, October
//! 2013) §10 as recalled in our research notes, not re-read from the PDF
//! (the PDF was not in this project's store). For a
//! frame of l bytes at t_j, with Δ = t_j − t_{j−1}:
//!
//! ```text
//! O  = max(0, Bc + CIR·Δ − CBS)            committed overflow
//! Bc = min(CBS, Bc + CIR·Δ)
//! Be = min(EBS, Be + EIR·Δ + CF·O)
//! green  if (blind or frame green)  and l ≤ Bc:  Bc −= l
//! yellow if (blind or frame not red) and l ≤ Be: Be −= l
//! red    otherwise (no tokens taken)
//! ```
//!
//! Exact: [`TokenBucket::fill`] returns precisely the units that did not fit,
//! which is O (bucket tokens are integer bit·ns, see [`crate::bucket`]).
//!
//! CF semantics (BBF `bbf-qos-policing-types`, quoting MEF): with CF = 0
//! the long-term yellow rate is bounded by EIR, with CF = 1 by CIR + EIR;
//! yellow bursts are bounded by EBS in both cases.
//!
//! Guarantee (property-tested), any window T: green ≤ CBS + CIR·T;
//! yellow ≤ EBS + EIR·T, plus CIR·T when CF = 1 (O never exceeds CIR·Δ).
//!
//! Parameters: `cir` (rate, may be 0), `cbs` (bytes), `eir` (rate, may be
//! 0), `ebs` (bytes), `cf` (0 | 1, default 0), `mode` (`blind` | `aware`).
//! Choices where MEF leaves room: CIR = 0 is allowed (an EIR-only, all
//! best-effort profile, which MEF permits) but then CBS must be 0 — a full
//! committed bucket that never refills would hand out one CBS of green and
//! nothing after, which is never what is meant. Likewise EIR = 0 requires
//! EBS = 0 unless CF = 1 (then E is fed by C's overflow). CIR and EIR both
//! 0 is refused (nothing could ever pass). When a rate is > 0 its burst
//! must be > 0 (MEF requires ≥ the largest frame; smaller is accepted).
//! Left out: envelopes with several flows, CIRmax/EIRmax, token request
//! offset (MEF 10.4).

use super::color_from_masks;
use super::Meter;
use crate::bucket::{check_depth, need_units, opaque_mask, TokenBucket, MAX_RATE_BPS};
use crate::packet::Color;
use crate::params::{ConfigError, Params};
use crate::time::Instant;
use crate::units::{Bytes, Rate};

/// MEF 10.3 single-flow bandwidth profile state.
#[derive(Clone, Debug)]
pub struct Mef {
    c: TokenBucket,
    e: TokenBucket,
    last: Instant,
    coupled: bool,
    color_aware: bool,
}

fn check_rate0(param: &str, r: Rate) -> Result<(), ConfigError> {
    if r.bps() > MAX_RATE_BPS {
        return Err(ConfigError::new(
            param,
            format!("{r} is above the supported maximum of 10tbit"),
        ));
    }
    Ok(())
}

impl Mef {
    /// A profile with both buckets full.
    pub fn new(
        cir: Rate,
        cbs: Bytes,
        eir: Rate,
        ebs: Bytes,
        coupled: bool,
        color_aware: bool,
    ) -> Result<Self, ConfigError> {
        check_rate0("cir", cir)?;
        check_rate0("eir", eir)?;
        if cir.bps() == 0 && eir.bps() == 0 {
            return Err(ConfigError::new(
                "eir",
                "cir and eir cannot both be 0 (nothing would ever pass)",
            ));
        }
        if cir.bps() == 0 {
            if cbs.get() != 0 {
                return Err(ConfigError::new(
                    "cbs",
                    "must be 0 when cir is 0 (a committed bucket that never refills)",
                ));
            }
        } else {
            check_depth("cbs", cbs, false)?;
        }
        if eir.bps() == 0 && !coupled {
            if ebs.get() != 0 {
                return Err(ConfigError::new(
                    "ebs",
                    "must be 0 when eir is 0 and cf is 0 (an excess bucket that never refills)",
                ));
            }
        } else {
            check_depth("ebs", ebs, false)?;
        }
        Ok(Mef {
            c: TokenBucket::full(cir, cbs),
            e: TokenBucket::full(eir, ebs),
            last: Instant::ZERO,
            coupled,
            color_aware,
        })
    }

    /// Reads `cir`, `cbs`, `eir`, `ebs`, `cf`, `mode`.
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let cir = p.rate("cir")?;
        let cbs = p.size("cbs")?;
        let eir = p.rate("eir")?;
        let ebs = p.size("ebs")?;
        let cf = match p.opt_u64("cf")? {
            None | Some(0) => false,
            Some(1) => true,
            Some(v) => return Err(ConfigError::new("cf", format!("expected 0 or 1, got {v}"))),
        };
        let aware = p.color_aware()?;
        Self::new(cir, cbs, eir, ebs, cf, aware)
    }

    /// Committed tokens at the last update, bytes (Bc).
    pub fn bc_bytes(&self) -> u64 {
        self.c.tokens_bytes()
    }
    /// Excess tokens at the last update, bytes (Be).
    pub fn be_bytes(&self) -> u64 {
        self.e.tokens_bytes()
    }

    #[inline(always)]
    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last).as_ns();
        // A zero gap (same instant, or a clock that stepped back) adds nothing
        // and keeps `last`, so no branch is needed: `max` is `now` iff dt > 0.
        self.last = self.last.max(now);
        // O = max(0, Bc + CIR·Δ − CBS): exactly what did not fit in C.
        let overflow = self.c.fill(dt);
        // Be = min(EBS, Be + EIR·Δ + CF·O); capping in two steps is the
        // same since every term is non-negative.
        self.e.fill(dt);
        if self.coupled && overflow > 0 {
            self.e.add(overflow);
        }
    }
}

impl Meter for Mef {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        self.refill(now);
        let pre = if self.color_aware {
            pre_color
        } else {
            Color::Green
        };
        // green if (blind or frame green) and l ≤ Bc: Bc −= l; else yellow
        // if (blind or frame not red) and l ≤ Be: Be −= l; else red. As
        // masks, not branches (see `opaque_mask`); the tests check this
        // against the branching form.
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
            ("kind", "mef".into()),
            (
                "standard",
                "MEF 10.3 bandwidth profile (single flow)".into(),
            ),
            ("cir", self.c.rate().to_string()),
            ("cbs", format!("{}B", self.c.depth_bytes())),
            ("eir", self.e.rate().to_string()),
            ("ebs", format!("{}B", self.e.depth_bytes())),
            ("cf", if self.coupled { "1" } else { "0" }.into()),
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

    /// CIR 8 Mbit/s = 1000 B/ms, CBS 2000; EIR 4 Mbit/s = 500 B/ms, EBS 1000.
    fn mef(cf: bool, aware: bool) -> Mef {
        Mef::new(
            Rate::from_bps(8_000_000),
            Bytes::new(2000),
            Rate::from_bps(4_000_000),
            Bytes::new(1000),
            cf,
            aware,
        )
        .unwrap()
    }

    #[test]
    fn hand_computed_uncoupled() {
        let mut m = mef(false, false);
        let g = Color::Green;
        assert_eq!(m.color(t_ms(0), 2000, g), Color::Green); // Bc 0
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Yellow); // Be 0
        assert_eq!(m.color(t_ms(0), 1, g), Color::Red);
        // +1 ms: Bc 1000, Be 500
        assert_eq!(m.color(t_ms(1), 1200, g), Color::Red);
        assert_eq!((m.bc_bytes(), m.be_bytes()), (1000, 500));
        assert_eq!(m.color(t_ms(1), 500, g), Color::Green); // Bc 500
        assert_eq!(m.color(t_ms(1), 501, g), Color::Red);
        assert_eq!(m.color(t_ms(1), 500, g), Color::Green); // Bc 0
        assert_eq!(m.color(t_ms(1), 500, g), Color::Yellow); // Be 0
                                                             // +10 ms idle: C full, E full; CF=0 so overflow is lost.
        assert_eq!(m.color(t_ms(11), 1, g), Color::Green);
        assert_eq!((m.bc_bytes(), m.be_bytes()), (1999, 1000));
    }

    #[test]
    fn coupling_sends_committed_overflow_to_excess() {
        let mut m = mef(true, false);
        let g = Color::Green;
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Green); // Bc 1000
                                                             // Drain E fully, leave C at 1000.
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Green); // Bc 0
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Yellow); // Be 0
                                                              // +3 ms: C gains 3000 → 2000 full, O = 1000; E gains 1500 + 1000 → cap 1000.
        assert_eq!(m.color(t_ms(3), 1, Color::Red), Color::Green); // blind
        assert_eq!((m.bc_bytes(), m.be_bytes()), (1999, 1000));
        // Overflow alone refills E when EIR = 0 and CF = 1.
        let mut m = Mef::new(
            Rate::from_bps(8_000_000),
            Bytes::new(1000),
            Rate::from_bps(0),
            Bytes::new(1000),
            true,
            false,
        )
        .unwrap();
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Green);
        assert_eq!(m.color(t_ms(0), 1000, g), Color::Yellow);
        // +1.5 ms: 1500 into C: 1000 fits, O = 500 → E.
        assert_eq!(m.color(Instant::from_ns(1_500_000), 1, g), Color::Green);
        assert_eq!((m.bc_bytes(), m.be_bytes()), (999, 500));
    }

    #[test]
    fn color_aware_never_promotes() {
        let mut m = mef(false, true);
        assert_eq!(m.color(t_ms(0), 100, Color::Yellow), Color::Yellow);
        assert_eq!(m.color(t_ms(0), 100, Color::Red), Color::Red);
        assert_eq!((m.bc_bytes(), m.be_bytes()), (2000, 900));
    }

    #[test]
    fn validation() {
        let z = Rate::from_bps(0);
        let r = Rate::from_bps(1_000_000);
        let b = Bytes::new(1500);
        let n = Bytes::new(0);
        assert_eq!(Mef::new(z, n, z, n, false, false).unwrap_err().param, "eir");
        assert_eq!(Mef::new(z, b, r, b, false, false).unwrap_err().param, "cbs");
        assert_eq!(Mef::new(r, n, r, b, false, false).unwrap_err().param, "cbs");
        assert_eq!(Mef::new(r, b, z, b, false, false).unwrap_err().param, "ebs");
        assert_eq!(Mef::new(r, b, r, n, false, false).unwrap_err().param, "ebs");
        assert!(Mef::new(z, n, r, b, false, false).is_ok());
        assert!(Mef::new(r, b, z, n, false, false).is_ok());
        let mut p = Params::new(
            "mef",
            [
                ("cir", "1mbit"),
                ("cbs", "2k"),
                ("eir", "1mbit"),
                ("ebs", "2k"),
                ("cf", "2"),
            ],
        );
        assert_eq!(Mef::from_params(&mut p).unwrap_err().param, "cf");
        // CIR = 0: everything is yellow or red.
        let mut m = Mef::new(z, n, r, b, false, false).unwrap();
        assert_eq!(m.color(t_ms(0), 64, Color::Green), Color::Yellow);
    }

    /// The MEF 10.3 §10 colouring with branches and the bucket's `take`
    /// (the form `color` had before its masks): the reference.
    fn color_branching(m: &mut Mef, now: Instant, size: u32, pre: Color) -> Color {
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
    /// the branching form on random profiles (CF 0/1, both modes) and traces.
    #[test]
    fn masked_color_equals_the_branching_form() {
        let mut rng = crate::rng::Rng::new(103, 0);
        let mut seen = [0usize; 3];
        for case in 0..400u64 {
            let (cir, cbs) = crate::meter::difftest::rate_depth(&mut rng);
            let (eir, ebs) = crate::meter::difftest::rate_depth(&mut rng);
            let (coupled, aware) = (case % 2 == 1, case % 4 >= 2);
            let got = Mef::new(
                Rate::from_bps(cir),
                Bytes::new(cbs),
                Rate::from_bps(eir),
                Bytes::new(ebs),
                coupled,
                aware,
            )
            .unwrap();
            crate::meter::difftest::same_as_reference(
                case,
                got,
                |m: &mut Mef, t, size, pre| m.color(t, size, pre),
                color_branching,
                |m| (m.c, m.e, m.last),
                &mut seen,
            );
        }
        assert!(seen.iter().all(|&n| n > 10_000), "{seen:?}");
    }

    proptest! {
        /// Bounds on every window: green ≤ CBS + CIR·T; yellow ≤ EBS + EIR·T
        /// (+ CIR·T when CF = 1); tokens within depths; aware never promotes.
        #[test]
        fn bounded_on_every_window(
            gaps in prop::collection::vec((0u64..2_000_000, 40u32..1600, 0u8..3), 1..300),
            cir in 100_000u64..50_000_000, eir in 0u64..50_000_000,
            cbs in 1u64..20_000, ebs in 1u64..20_000, cf in any::<bool>(), aware in any::<bool>())
        {
            let ebs = if eir == 0 && !cf { 0 } else { ebs };
            let mut m = Mef::new(Rate::from_bps(cir), Bytes::new(cbs), Rate::from_bps(eir), Bytes::new(ebs), cf, aware).unwrap();
            let mut now = 0u64;
            let mut pkts = Vec::new();
            for (gap, size, pre) in gaps {
                now += gap;
                let pre = Color::from_u8(pre).unwrap();
                let c = m.color(Instant::from_ns(now), size, pre);
                prop_assert!(c >= pre || !aware);
                prop_assert!(m.bc_bytes() <= cbs && m.be_bytes() <= ebs);
                pkts.push((now, size as u128, c));
            }
            let yrate = eir as u128 + if cf { cir as u128 } else { 0 };
            for i in 0..pkts.len() {
                let (mut g, mut y) = (0u128, 0u128);
                for &(t, size, c) in &pkts[i..] {
                    let w = (t - pkts[i].0) as u128;
                    match c { Color::Green => g += size, Color::Yellow => y += size, Color::Red => {} }
                    prop_assert!(g * 8_000_000_000 <= cbs as u128 * 8_000_000_000 + cir as u128 * w);
                    prop_assert!(y * 8_000_000_000 <= ebs as u128 * 8_000_000_000 + yrate * w);
                }
            }
        }
    }
}
