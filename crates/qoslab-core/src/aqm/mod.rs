//! Active queue management: FIFOs that drop (or mark) before they are full.
//!
//! Every AQM here implements the [`Shaper`] contract with no release
//! schedule (`next_ready` is `now` whenever a packet waits), so a link
//! drains an AQM like a plain FIFO and a scheduler can hold one per class.
//! Each keeps `(Packet, enqueue instant)` internally for sojourn times.
//!
//! Members, one file each, each citing its source:
//! - [`codel`] — CoDel, RFC 8289 + Linux `codel_impl.h` / `sch_codel.c`
//!   (kind `codel`). Its state machine [`codel::CodelState`] is reusable per
//!   flow (FQ-CoDel).
//! - [`red`] — RED, Floyd & Jacobson 1993 + Linux `red.h` / `sch_red.c` /
//!   tc `q_red.c` (kind `red`). Its fixed-point core [`red::RedParms`] /
//!   [`red::RedVars`] also drives RIO/WRED.
//! - [`rio`] — RIO-C (Clark & Fang 1998) and WRED (Cisco) with green /
//!   yellow / red thresholds over one FIFO, RFC 2963 App. A preset (kinds
//!   `rio`, `wred`).
//! - [`pie`] — PIE, RFC 8033 + Linux `sch_pie.c` (kind `pie`), timestamp-based
//!   queue delay.
//!
//! Drops at enqueue come back as [`Dropped`] from `enqueue`. AQMs that
//! drop at dequeue (CoDel) return `None` from `dequeue` when every waiting
//! packet was dropped, and hand the dropped packets out through
//! `take_dropped`, which the caller must drain. The reason tells the two
//! families apart: a drop at the hard limit is
//! [`DropReason::QueueFull`](crate::shaper::DropReason::QueueFull), a drop
//! the algorithm chose (RED/RIO/WRED probabilistic or forced, PIE, CoDel's
//! control law) is [`DropReason::Early`](crate::shaper::DropReason::Early);
//! each AQM's [`AqmCounters`] splits them further.
//!
//! Marks: packets carry no ECN field yet, so an AQM configured for ECN
//! treats every packet as ECN-capable — it counts a mark and transmits.
//!
//! Hot paths dispatch through the [`AnyAqm`] enum (no `Box<dyn>`).

pub mod codel;
pub mod pie;
pub mod red;
pub mod rio;

use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::shaper::{Dropped, Shaper};
use crate::time::Instant;

pub use codel::{Codel, CodelParams, CodelQueue, CodelState, CodelStats};
pub use pie::Pie;
pub use red::{Red, RedParms, RedVars};
pub use rio::{Rio, RioConfig, RioMode};

/// Drop and mark counters common to all AQMs, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AqmCounters {
    /// Refused because the queue was at its hard limit (tc `pdrop`,
    /// CoDel `drop_overlimit`).
    pub tail_drops: u64,
    pub tail_drop_bytes: u64,
    /// Dropped by the algorithm: RED/PIE probabilistic drops, CoDel
    /// control-law drops.
    pub early_drops: u64,
    pub early_drop_bytes: u64,
    /// RED/RIO: dropped because the average was above `max` (tc
    /// `forced_drop`).
    pub forced_drops: u64,
    pub forced_drop_bytes: u64,
    /// Packets marked (ECN) instead of dropped; transmitted.
    pub marks: u64,
}

/// The `Shaper` accessors of a work-conserving AQM whose struct has a
/// `queue` (a `VecDeque`) and a `backlog_bytes` field: ready whenever
/// something waits.
macro_rules! fifo_accessors {
    () => {
        #[inline]
        fn next_ready(&self, now: Instant) -> Option<Instant> {
            (!self.queue.is_empty()).then_some(now)
        }
        fn backlog_packets(&self) -> usize {
            self.queue.len()
        }
        fn backlog_bytes(&self) -> u64 {
            self.backlog_bytes
        }
    };
}
pub(crate) use fifo_accessors;

/// Builds one AQM type from `pairs` and rejects leftovers (tests).
#[cfg(test)]
pub(crate) fn build<T>(
    kind: &str,
    pairs: &[(&str, &str)],
    f: impl FnOnce(&mut Params) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let mut p = Params::new(kind, pairs.iter().copied());
    let t = f(&mut p)?;
    p.finish()?;
    Ok(t)
}

/// A packet limit: `1000`, `1000p`; defaults to `default` when absent.
pub(crate) fn parse_limit_packets(
    p: &mut Params,
    key: &'static str,
    default: u32,
) -> Result<u32, ConfigError> {
    match p.opt_packets(key)? {
        None => Ok(default),
        Some(n) => u32::try_from(n)
            .map_err(|_| ConfigError::new(key, format!("{n} packets is above 4294967295"))),
    }
}

/// Every AQM, for enum dispatch.
#[derive(Clone, Debug)]
// One per queue, built once and never moved on the hot path.
#[allow(clippy::large_enum_variant)]
pub enum AnyAqm {
    Red(Red),
    /// `rio` (RIO-C) and `wred`: one type, [`RioMode`].
    Rio(Rio),
    Codel(Codel),
    Pie(Pie),
}

/// `match` over every [`AnyAqm`] variant, binding the inner AQM to `$a`.
macro_rules! each_aqm {
    ($self:expr, $a:ident => $e:expr) => {
        match $self {
            AnyAqm::Red($a) => $e,
            AnyAqm::Rio($a) => $e,
            AnyAqm::Codel($a) => $e,
            AnyAqm::Pie($a) => $e,
        }
    };
}

/// (kind, one-line description) of every AQM [`AnyAqm::from_params`] builds.
pub const AQM_KINDS: &[(&str, &str)] = &[
    (
        "red",
        "RED (Floyd & Jacobson 1993, Linux sch_red + tc-red): limit, min, max, avpkt, burst, probability, bandwidth, ecn, harddrop, adaptive, seed",
    ),
    (
        "wred",
        "WRED (Cisco): one average, per-colour min/max/probability: limit, {green,yellow,red}-{min,max,probability}, ewma (9), classify, preset rfc2963",
    ),
    (
        "rio",
        "RIO-C (Clark & Fang 1998), three colours as RFC 2963 App. A: same keys as wred; colour c judged on the backlog of colours <= c",
    ),
    (
        "codel",
        "CoDel (RFC 8289, Linux sch_codel): limit (packets, 1000), target (5ms), interval (100ms), ce-threshold, ecn, mtu",
    ),
    (
        "pie",
        "PIE (RFC 8033, Linux sch_pie): limit (packets, 1000), target (15ms), tupdate (15ms), alpha (2/16), beta (20/16), max-burst, derandomize, ecn, bytemode, seed",
    ),
];

impl AnyAqm {
    /// Builds AQM `kind` from string parameters and rejects unknown keys.
    pub fn from_params(kind: &str, mut p: Params) -> Result<Self, ConfigError> {
        let kind = kind.to_ascii_lowercase();
        let a = match kind.as_str() {
            "red" => AnyAqm::Red(Red::from_params(&mut p)?),
            "wred" => AnyAqm::Rio(Rio::from_params(RioMode::Wred, &mut p)?),
            "rio" => AnyAqm::Rio(Rio::from_params(RioMode::RioC, &mut p)?),
            "codel" => AnyAqm::Codel(Codel::from_params(&mut p)?),
            "pie" => AnyAqm::Pie(Pie::from_params(&mut p)?),
            other => return Err(crate::meter::unknown_kind("aqm", other, AQM_KINDS)),
        };
        p.finish()?;
        Ok(a)
    }

    /// Drop and mark counters.
    pub fn counters(&self) -> AqmCounters {
        each_aqm!(self, a => a.counters())
    }

    /// Packets dropped at dequeue since the last call (CoDel), oldest first;
    /// empty for AQMs that drop only at enqueue.
    pub fn take_dropped(&mut self) -> impl Iterator<Item = Dropped> + '_ {
        let drain = match self {
            AnyAqm::Codel(a) => Some(a.take_dropped()),
            _ => None,
        };
        drain.into_iter().flatten()
    }
}

impl Shaper for AnyAqm {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        each_aqm!(self, a => a.enqueue(now, pkt))
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        each_aqm!(self, a => a.dequeue(now))
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        each_aqm!(self, a => a.next_ready(now))
    }
    #[inline]
    fn backlog_packets(&self) -> usize {
        each_aqm!(self, a => a.backlog_packets())
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        each_aqm!(self, a => a.backlog_bytes())
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.extend(self.take_dropped());
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        each_aqm!(self, a => a.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Color;
    use crate::shaper::DropReason;
    use proptest::prelude::*;

    /// Every kind, configured small so limits and early drops both bite:
    /// (kind, params, packet limit, byte limit).
    fn small(kind: usize) -> (AnyAqm, Option<usize>, Option<u64>) {
        let (k, pairs, lp, lb): (&str, &[(&str, &str)], _, _) = match kind {
            0 => (
                "red",
                &[("limit", "20000"), ("avpkt", "800"), ("probability", "0.3")],
                None,
                Some(20_000),
            ),
            1 => (
                "wred",
                &[
                    ("preset", "rfc2963"),
                    ("limit", "30p"),
                    ("green-min", "10p"),
                    ("green-max", "20p"),
                    ("yellow-min", "6p"),
                    ("yellow-max", "14p"),
                    ("red-min", "2p"),
                    ("red-max", "8p"),
                    ("ewma", "2"),
                ],
                Some(30),
                None,
            ),
            2 => (
                "rio",
                &[
                    ("limit", "25000"),
                    ("green-min", "8000"),
                    ("green-max", "16000"),
                    ("green-probability", "0.1"),
                    ("yellow-min", "4000"),
                    ("yellow-max", "12000"),
                    ("yellow-probability", "0.2"),
                    ("red-min", "2000"),
                    ("red-max", "6000"),
                    ("red-probability", "0.5"),
                    ("ewma", "2"),
                ],
                None,
                Some(25_000),
            ),
            3 => (
                "codel",
                &[("limit", "40"), ("target", "1ms"), ("interval", "10ms")],
                Some(40),
                None,
            ),
            _ => (
                "pie",
                &[
                    ("limit", "40"),
                    ("target", "1ms"),
                    ("tupdate", "2ms"),
                    ("max-burst", "5ms"),
                ],
                Some(40),
                None,
            ),
        };
        (
            AnyAqm::from_params(k, Params::new(k, pairs.iter().copied())).unwrap(),
            lp,
            lb,
        )
    }

    proptest! {
        /// No AQM exceeds its limit, and every packet offered is either
        /// sent, dropped (at enqueue or at dequeue) or still queued; the
        /// counters agree with the drops seen.
        #[test]
        fn limits_and_conservation_for_every_kind(
            kind in 0usize..5,
            ops in proptest::collection::vec((0u64..2_000_000, 40u32..1500, 0u8..3, any::<bool>()), 1..500),
        ) {
            let (mut a, limit_p, limit_b) = small(kind);
            let (mut t, mut inn, mut out, mut dropped, mut early) = (0u64, 0u64, 0u64, 0u64, 0u64);
            let reason = |d: &Dropped| -> Result<u64, TestCaseError> {
                prop_assert!(matches!(d.reason, DropReason::Early | DropReason::QueueFull), "{:?}", d.reason);
                Ok((d.reason == DropReason::Early) as u64)
            };
            for (i, (dt, size, color, deq)) in ops.into_iter().enumerate() {
                t += dt;
                let now = Instant::from_ns(t);
                if deq {
                    out += a.dequeue(now).is_some() as u64;
                } else {
                    inn += 1;
                    let pkt = Packet { color: Color::from_u8(color).unwrap(), ..Packet::new(i as u64, size) };
                    if let Err(d) = a.enqueue(now, pkt) {
                        dropped += 1;
                        early += reason(&d)?;
                    }
                }
                for d in a.take_dropped() {
                    dropped += 1;
                    early += reason(&d)?;
                }
                if let Some(l) = limit_p {
                    prop_assert!(a.backlog_packets() <= l);
                }
                if let Some(l) = limit_b {
                    prop_assert!(a.backlog_bytes() <= l);
                }
                prop_assert_eq!(inn, out + dropped + a.backlog_packets() as u64);
                let c = a.counters();
                prop_assert_eq!(dropped, c.tail_drops + c.early_drops + c.forced_drops);
                // Limit drops are QueueFull, the algorithm's own are Early.
                prop_assert_eq!(early, c.early_drops + c.forced_drops);
                prop_assert_eq!(a.next_ready(now).is_some(), a.backlog_packets() > 0);
            }
        }
    }

    #[test]
    fn from_params_builds_each_kind_and_rejects_unknown() {
        let a = AnyAqm::from_params("CoDel", Params::new("codel", [("target", "5ms")])).unwrap();
        assert!(matches!(a, AnyAqm::Codel(_)));
        let a = AnyAqm::from_params(
            "red",
            Params::new("red", [("limit", "60kb"), ("avpkt", "1000")]),
        )
        .unwrap();
        assert!(matches!(a, AnyAqm::Red(_)));
        let e =
            AnyAqm::from_params("codel", Params::new("codel", [("targett", "5ms")])).unwrap_err();
        assert!(e.message.contains("did you mean 'target'"), "{e}");
        let e = AnyAqm::from_params("codl", Params::new("codl", [("a", "1")])).unwrap_err();
        assert!(e.message.contains("did you mean 'codel'"), "{e}");
    }
}
