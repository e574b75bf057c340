//! Meters and policers: per-packet colouring at arrival time.
//!
//! A meter looks at one packet (its arrival time, size and, in colour-aware
//! mode, its incoming colour) and returns a [`Color`]. A [`Policer`] pairs a
//! meter with per-colour [`Actions`] (transmit, drop, set-dscp) and returns a
//! [`Verdict`]. Meters never queue: the packet leaves at the time it came.
//!
//! Members, one file each, each citing its standard:
//! - [`srtcm`] — single-rate three-colour marker, RFC 2697.
//!
//! Hot paths dispatch through the [`AnyMeter`] enum (no `Box<dyn>`).

pub mod srtcm;

use crate::packet::{Actions, Color, Packet, Verdict};
use crate::params::{ConfigError, Params};
use crate::time::Instant;

pub use srtcm::Srtcm;

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

/// Every meter, for enum dispatch.
#[derive(Clone, Debug)]
pub enum AnyMeter {
    Srtcm(Srtcm),
}

/// (kind, one-line description) of every meter [`AnyMeter::from_params`] builds.
pub const METER_KINDS: &[(&str, &str)] = &[(
    "srtcm",
    "single-rate three-colour marker (RFC 2697): cir, cbs, ebs, mode",
)];

impl AnyMeter {
    /// Builds the meter `kind` from string parameters; see [`METER_KINDS`].
    /// Reads only the meter's own keys: the caller reads the rest (actions)
    /// and then calls [`Params::finish`].
    pub fn from_params(kind: &str, p: &mut Params) -> Result<Self, ConfigError> {
        match kind.to_ascii_lowercase().as_str() {
            "srtcm" => Ok(AnyMeter::Srtcm(Srtcm::from_params(p)?)),
            other => Err(unknown_kind("meter", other, METER_KINDS)),
        }
    }

    /// The actions a kind applies when the user names none: policers drop
    /// what exceeds (Cisco `police` defaults), markers only mark.
    pub fn default_actions(&self) -> Actions {
        match self {
            AnyMeter::Srtcm(_) => Actions::MARK_ONLY,
        }
    }
}

impl Meter for AnyMeter {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        match self {
            AnyMeter::Srtcm(m) => m.color(now, size_bytes, pre_color),
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        match self {
            AnyMeter::Srtcm(m) => m.describe(),
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
        let meter = AnyMeter::from_params(kind, &mut p)?;
        let d = meter.default_actions();
        let actions = Actions {
            conform: p.opt_action("conform")?.unwrap_or(d.conform),
            exceed: p.opt_action("exceed")?.unwrap_or(d.exceed),
            violate: p.opt_action("violate")?.unwrap_or(d.violate),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
