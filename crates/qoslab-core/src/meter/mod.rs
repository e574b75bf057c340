//! Meters and policers: per-packet colouring at arrival time.
//!
//! A meter looks at one packet (its arrival time, size and, in colour-aware
//! mode, its incoming colour) and returns a [`Color`]. A [`Policer`] pairs a
//! meter with per-colour [`Actions`] (transmit, drop, set-dscp) and returns a
//! [`Verdict`]. Meters never queue: the packet leaves at the time it came.
//!
//! Members, one file each, each citing its standard:
//! - [`policer`] — Cisco `police cir [bc] [be]` (kind `police`): single-rate
//!   two-colour policer; three colours (= RFC 2697) with a violate-action.
//! - [`linux_police`] — Linux `act_police` (kind `linux-police`): tokens in
//!   nanoseconds, byte-exact with `net/sched/act_police.c` and tc.
//! - [`srtcm`] — single-rate three-colour marker, RFC 2697.
//! - [`trtcm`] — two-rate three-colour marker, RFC 2698.
//! - [`tswtcm`] — time sliding window three-colour marker, RFC 2859.
//! - [`mef`] — MEF 10.3 bandwidth profile, single flow (CIR/CBS/EIR/EBS/CF).
//!
//! Hot paths dispatch through the [`AnyMeter`] enum (no `Box<dyn>`).

pub mod linux_police;
pub mod mef;
pub mod policer;
pub mod srtcm;
pub mod trtcm;
pub mod tswtcm;

use crate::packet::{Actions, Color, Packet, Verdict};
use crate::params::{ConfigError, Params};
use crate::time::Instant;

pub use linux_police::LinuxPolice;
pub use mef::Mef;
pub use policer::Police;
pub use srtcm::Srtcm;
pub use trtcm::Trtcm;
pub use tswtcm::Tswtcm;

/// A per-packet colouring state machine driven by the caller's clock.
pub trait Meter {
    /// Colours a packet of `size_bytes` arriving at `now`. `pre_color` is the
    /// colour it arrived with; colour-blind meters ignore it. Calls must come
    /// in non-decreasing `now`; an earlier `now` is treated as no time passing.
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color;

    /// The effective parameters, including every derived default, as
    /// (name, value) pairs for display (`qoslab meter --json`, reports).
    fn describe(&self) -> Vec<(&'static str, String)>;
}

/// The colour from two [`crate::bucket::opaque_mask`]s, with no branch:
/// `not_red` and `green` (which implies `not_red`), each all ones or zero.
/// Green = 0, yellow = 1, red = 2 is 2 − not_red − green (as 0/1 flags).
#[inline(always)]
pub(crate) fn color_from_masks(not_red: u64, green: u64) -> Color {
    debug_assert!(green == 0 || not_red == u64::MAX);
    // Each term is 0 or 1, so the code is 0..=2. A table, not a `match`:
    // LLVM compiles the `match` to a compare and a branch on the colour.
    const BY_CODE: [Color; 4] = [Color::Green, Color::Yellow, Color::Red, Color::Red];
    BY_CODE[(2 - (not_red & 1) - (green & 1)) as usize & 3]
}

/// Every meter, for enum dispatch.
#[derive(Clone, Debug)]
pub enum AnyMeter {
    Police(Police),
    LinuxPolice(LinuxPolice),
    Srtcm(Srtcm),
    Trtcm(Trtcm),
    Tswtcm(Tswtcm),
    Mef(Mef),
}

/// (kind, one-line description) of every meter [`AnyMeter::from_params`] builds.
pub const METER_KINDS: &[(&str, &str)] = &[
    (
        "police",
        "Cisco single-rate policer: cir, bc (default cir/32, min 1500B), be; a violate action makes it srTCM",
    ),
    (
        "linux-police",
        "Linux tc act_police: rate, burst, mtu (default 2040B), peakrate, overhead, mpu",
    ),
    (
        "srtcm",
        "single-rate three-colour marker (RFC 2697): cir, cbs, ebs, mode",
    ),
    (
        "trtcm",
        "two-rate three-colour marker (RFC 2698): cir, cbs, pir, pbs, mode",
    ),
    (
        "tswtcm",
        "time sliding window three-colour marker (RFC 2859): ctr, ptr, win_len, seed, mode",
    ),
    (
        "mef",
        "MEF 10.3 bandwidth profile: cir, cbs, eir, ebs, cf, mode",
    ),
];

impl AnyMeter {
    /// Builds the meter `kind` from string parameters; see [`METER_KINDS`].
    /// Reads only the meter's own keys: the caller reads the rest (actions)
    /// and then calls [`Params::finish`].
    pub fn from_params(kind: &str, p: &mut Params) -> Result<Self, ConfigError> {
        Self::from_params_with(kind, p, false)
    }

    /// As [`AnyMeter::from_params`], told whether the policy names a
    /// violate action (which turns Cisco `police` into three colours).
    pub fn from_params_with(
        kind: &str,
        p: &mut Params,
        violate_configured: bool,
    ) -> Result<Self, ConfigError> {
        match kind.to_ascii_lowercase().as_str() {
            "police" => Ok(AnyMeter::Police(Police::from_params(
                p,
                violate_configured,
            )?)),
            "linux-police" => Ok(AnyMeter::LinuxPolice(LinuxPolice::from_params(p)?)),
            "srtcm" => Ok(AnyMeter::Srtcm(Srtcm::from_params(p)?)),
            "trtcm" => Ok(AnyMeter::Trtcm(Trtcm::from_params(p)?)),
            "tswtcm" => Ok(AnyMeter::Tswtcm(Tswtcm::from_params(p)?)),
            "mef" => Ok(AnyMeter::Mef(Mef::from_params(p)?)),
            other => Err(unknown_kind("meter", other, METER_KINDS)),
        }
    }

    /// The actions a kind applies when the user names none: policers drop
    /// what exceeds (Cisco `police` defaults; for `linux-police` tc's own
    /// default is reclassify, which qoslab models as drop — see
    /// [`linux_police`]), markers only mark.
    pub fn default_actions(&self) -> Actions {
        match self {
            AnyMeter::Police(_) | AnyMeter::LinuxPolice(_) => Actions::CISCO_DEFAULT,
            AnyMeter::Srtcm(_) | AnyMeter::Trtcm(_) | AnyMeter::Tswtcm(_) | AnyMeter::Mef(_) => {
                Actions::MARK_ONLY
            }
        }
    }
}

/// Colours `times`/`sizes` into `out` (colour codes 0/1/2) with one
/// concrete meter type: the loop is compiled per kind, so no `match` runs per
/// packet (issue 12). `pre` holds valid colour codes (checked by the caller).
#[inline(always)]
fn color_all<M: Meter + Clone>(
    meter: &mut M,
    times: &[u64],
    sizes: &[u32],
    pre: Option<&[u8]>,
    out: &mut [u8],
) {
    // The state is worked on in a local copy and written back once, so the
    // compiler can keep the buckets in registers across the loop instead of
    // storing them after every packet (the colours written to `out` are
    // bytes, which it must otherwise assume could alias them).
    let mut local = meter.clone();
    let m = &mut local;
    color_slices(m, times, sizes, pre, out);
    *meter = local;
}

#[inline(always)]
fn color_slices<M: Meter>(
    m: &mut M,
    times: &[u64],
    sizes: &[u32],
    pre: Option<&[u8]>,
    out: &mut [u8],
) {
    let n = out.len().min(times.len()).min(sizes.len());
    let (times, sizes, out) = (&times[..n], &sizes[..n], &mut out[..n]);
    match pre {
        None => {
            for ((o, &t), &s) in out.iter_mut().zip(times).zip(sizes) {
                *o = m.color(Instant::from_ns(t), s, Color::Green) as u8;
            }
        }
        Some(pre) => {
            let pre = &pre[..n];
            for (((o, &t), &s), &c) in out.iter_mut().zip(times).zip(sizes).zip(pre) {
                let c = Color::from_u8(c).unwrap_or(Color::Red);
                *o = m.color(Instant::from_ns(t), s, c) as u8;
            }
        }
    }
}

impl AnyMeter {
    /// Colours a trace (arrival times in ns, non-decreasing; sizes in bytes;
    /// optional arrival colours 0/1/2) into `out`, exactly as calling
    /// [`Meter::color`] packet by packet, with the kind chosen once per call.
    /// Slices are cut to the shortest; an invalid arrival colour counts as red.
    pub fn color_trace(
        &mut self,
        times: &[u64],
        sizes: &[u32],
        pre: Option<&[u8]>,
        out: &mut [u8],
    ) {
        match self {
            AnyMeter::Police(m) => color_all(m, times, sizes, pre, out),
            AnyMeter::LinuxPolice(m) => color_all(m, times, sizes, pre, out),
            AnyMeter::Srtcm(m) => color_all(m, times, sizes, pre, out),
            AnyMeter::Trtcm(m) => color_all(m, times, sizes, pre, out),
            // Its own loop: range checks per block, not per packet.
            AnyMeter::Tswtcm(m) => m.color_trace(times, sizes, pre, out),
            AnyMeter::Mef(m) => color_all(m, times, sizes, pre, out),
        }
    }
}

impl Meter for AnyMeter {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        match self {
            AnyMeter::Police(m) => m.color(now, size_bytes, pre_color),
            AnyMeter::LinuxPolice(m) => m.color(now, size_bytes, pre_color),
            AnyMeter::Srtcm(m) => m.color(now, size_bytes, pre_color),
            AnyMeter::Trtcm(m) => m.color(now, size_bytes, pre_color),
            AnyMeter::Tswtcm(m) => m.color(now, size_bytes, pre_color),
            AnyMeter::Mef(m) => m.color(now, size_bytes, pre_color),
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        match self {
            AnyMeter::Police(m) => m.describe(),
            AnyMeter::LinuxPolice(m) => m.describe(),
            AnyMeter::Srtcm(m) => m.describe(),
            AnyMeter::Trtcm(m) => m.describe(),
            AnyMeter::Tswtcm(m) => m.describe(),
            AnyMeter::Mef(m) => m.describe(),
        }
    }
}

/// An error for an unknown conditioner kind, listing the valid ones and the
/// nearest spelling.
pub fn unknown_kind(family: &str, kind: &str, kinds: &[(&str, &str)]) -> ConfigError {
    let names: Vec<&str> = kinds.iter().map(|(k, _)| *k).collect();
    let hint = crate::params::nearest(kind, &names)
        .map(|k| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    ConfigError::new(
        "kind",
        format!(
            "unknown {family} '{kind}'{hint}; valid: {}",
            names.join(", ")
        ),
    )
}

/// A meter with per-colour actions: what sits on a link as `police`.
#[derive(Clone, Debug)]
pub struct Policer {
    pub meter: AnyMeter,
    pub actions: Actions,
}

impl Policer {
    /// Builds meter `kind` plus the optional `conform`, `exceed`, `violate`
    /// actions, and rejects unknown keys.
    pub fn from_params(kind: &str, mut p: Params) -> Result<Self, ConfigError> {
        p.alias("conform", &["conform-action"])?;
        p.alias("exceed", &["exceed-action"])?;
        p.alias("violate", &["violate-action"])?;
        // Actions are read first: a violate action changes what Cisco
        // `police` is (three colours instead of two).
        let conform = p.opt_action("conform")?;
        let exceed = p.opt_action("exceed")?;
        let violate = p.opt_action("violate")?;
        let meter = AnyMeter::from_params_with(kind, &mut p, violate.is_some())?;
        let d = meter.default_actions();
        let actions = Actions {
            conform: conform.unwrap_or(d.conform),
            exceed: exceed.unwrap_or(d.exceed),
            violate: violate.unwrap_or(d.violate),
        };
        p.finish()?;
        Ok(Policer { meter, actions })
    }

    /// Meters `pkt` at `now` and applies the action for its colour.
    #[inline(always)]
    pub fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Verdict {
        let c = self.meter.color(now, pkt.size_bytes, pkt.color);
        self.actions.verdict(c)
    }

    /// Meter parameters followed by the actions.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = self.meter.describe();
        d.push(("conform", action_string(self.actions.conform)));
        d.push(("exceed", action_string(self.actions.exceed)));
        d.push(("violate", action_string(self.actions.violate)));
        d
    }
}

fn action_string(a: crate::packet::Action) -> String {
    match a {
        crate::packet::Action::SetDscp(v) => format!("set-dscp:{v}"),
        other => other.name().to_string(),
    }
}

/// Random traces for the differential tests of the branch-free meters.
#[cfg(test)]
pub(crate) mod difftest {
    use crate::packet::Color;
    use crate::rng::Rng;
    use crate::time::Instant;

    /// `n` packets (time, size, arrival colour) from `seed`: gaps from 0
    /// (same instant) to far past any bucket's refill, an occasional step
    /// back, sizes from 1 byte to above 2.3 GB, all three colours.
    pub(crate) fn trace(seed: u64, n: usize) -> Vec<(Instant, u32, Color)> {
        let mut rng = Rng::new(seed, 12);
        let mut t = 1_000_000_000u64;
        (0..n)
            .map(|_| {
                let r = rng.next_u64();
                match r % 16 {
                    0 => {}
                    1 => t = t.saturating_sub(rng.next_u64() % 100_000),
                    2 => t += rng.next_u64() % 10_000_000_000,
                    _ => t += rng.next_u64() % 200_000,
                }
                let size = match (r >> 8) % 32 {
                    0 => u32::MAX - (rng.next_u64() % 3) as u32,
                    1 => 1 + (rng.next_u64() % 100_000) as u32,
                    _ => 1 + (rng.next_u64() % 1600) as u32,
                };
                let c = Color::ALL[((r >> 16) % 3) as usize];
                (Instant::from_ns(t), size, c)
            })
            .collect()
    }

    /// Runs a meter and a clone of it through `trace(case, 2_000)`, the
    /// meter by `color` and the clone by `reference`: the colours and the
    /// `state` must be the same after every packet. Counts the colours
    /// into `seen`.
    pub(crate) fn same_as_reference<M: Clone, S: PartialEq + std::fmt::Debug>(
        case: u64,
        meter: M,
        color: impl Fn(&mut M, Instant, u32, Color) -> Color,
        reference: impl Fn(&mut M, Instant, u32, Color) -> Color,
        state: impl Fn(&M) -> S,
        seen: &mut [usize],
    ) {
        let (mut got, mut want) = (meter.clone(), meter);
        for (i, (t, size, pre)) in trace(case, 2_000).into_iter().enumerate() {
            let w = reference(&mut want, t, size, pre);
            let g = color(&mut got, t, size, pre);
            seen[g as usize] += 1;
            assert_eq!(g, w, "case {case} packet {i}");
            assert_eq!(state(&got), state(&want), "case {case} packet {i}");
        }
    }

    /// Small random rates (bit/s) and depths (bytes) so that every colour
    /// occurs: rates 1 kbit/s–200 Mbit/s, depths 1 B–100 kB.
    pub(crate) fn rate_depth(rng: &mut Rng) -> (u64, u64) {
        (
            1_000 + rng.next_u64() % 200_000_000,
            1 + rng.next_u64() % 100_000,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_from_masks_is_two_minus_the_flags() {
        let m = |b: bool| crate::bucket::opaque_mask(b);
        assert_eq!(color_from_masks(m(true), m(true)), Color::Green);
        assert_eq!(color_from_masks(m(true), m(false)), Color::Yellow);
        assert_eq!(color_from_masks(m(false), m(false)), Color::Red);
    }

    #[test]
    fn unknown_kind_suggests_the_nearest() {
        let mut p = Params::new("srtcn", [("cir", "1mbit")]);
        let e = AnyMeter::from_params("srtcn", &mut p).unwrap_err();
        assert!(e.message.contains("did you mean 'srtcm'"), "{e}");
    }

    #[test]
    fn policer_reads_actions_and_rejects_leftovers() {
        let p = Params::new(
            "srtcm",
            [
                ("cir", "1mbit"),
                ("cbs", "1500"),
                ("ebs", "1500"),
                ("exceed", "set-dscp:10"),
                ("violate", "drop"),
            ],
        );
        let pol = Policer::from_params("srtcm", p).unwrap();
        assert_eq!(pol.actions.exceed, crate::packet::Action::SetDscp(10));
        let p = Params::new("srtcm", [("cir", "1mbit"), ("cbs", "1500"), ("bogus", "1")]);
        assert_eq!(Policer::from_params("srtcm", p).unwrap_err().param, "bogus");
    }

    #[test]
    fn every_kind_builds_and_describes_itself() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("police", &[("cir", "1mbit")]),
            ("linux-police", &[("rate", "1mbit"), ("burst", "100k")]),
            ("srtcm", &[("cir", "1mbit"), ("cbs", "3000")]),
            (
                "trtcm",
                &[
                    ("cir", "1mbit"),
                    ("cbs", "3000"),
                    ("pir", "2mbit"),
                    ("pbs", "3000"),
                ],
            ),
            ("tswtcm", &[("ctr", "1mbit"), ("ptr", "2mbit")]),
            (
                "mef",
                &[
                    ("cir", "1mbit"),
                    ("cbs", "3000"),
                    ("eir", "1mbit"),
                    ("ebs", "3000"),
                ],
            ),
        ];
        assert_eq!(cases.len(), METER_KINDS.len());
        for (kind, kv) in cases {
            let pol = Policer::from_params(kind, Params::new(kind, kv.iter().copied())).unwrap();
            assert_eq!(pol.describe()[0], ("kind", kind.to_string()));
            let policing = kind.ends_with("police");
            assert_eq!(
                pol.actions,
                if policing {
                    Actions::CISCO_DEFAULT
                } else {
                    Actions::MARK_ONLY
                },
                "{kind}"
            );
        }
    }

    #[test]
    fn cisco_police_turns_three_colour_with_a_violate_action() {
        let p = Params::new("police", [("cir", "1mbit")]);
        let mut pol = Policer::from_params("police", p).unwrap();
        let pkt = Packet::new(0, 31_250);
        assert_eq!(pol.on_packet(Instant::ZERO, &pkt).color, Color::Green);
        assert_eq!(pol.on_packet(Instant::ZERO, &pkt).color, Color::Yellow);
        let p = Params::new("police", [("cir", "1mbit"), ("violate-action", "drop")]);
        let mut pol = Policer::from_params("police", p).unwrap();
        assert_eq!(pol.on_packet(Instant::ZERO, &pkt).color, Color::Green);
        // be defaults to bc = 31250
        assert_eq!(pol.on_packet(Instant::ZERO, &pkt).color, Color::Yellow);
        let v = pol.on_packet(Instant::ZERO, &pkt);
        assert_eq!(
            (v.color, v.action),
            (Color::Red, crate::packet::Action::Drop)
        );
    }
}
