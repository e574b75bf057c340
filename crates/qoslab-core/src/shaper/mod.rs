//! Shapers: a queue plus a release schedule.
//!
//! A shaper holds packets and lets each go no earlier than its schedule
//! allows. The caller drives it with its own clock through three calls:
//! [`Shaper::enqueue`] at an arrival, [`Shaper::next_ready`] to learn when to
//! come back, and [`Shaper::dequeue`] at (or after) that time. Nothing here
//! sets timers: the simulator turns `next_ready` into an event, the emulator
//! into a sleep, [`crate::drive::shape_trace`] into a loop over a trace.
//!
//! Members, one file each, each citing its source:
//! - [`tbf`] — token bucket filter, Linux `sch_tbf.c` + tc `q_tbf.c` (kind `tbf`).
//! - [`interval_shaper`] — Cisco `shape average` (Bc per Tc interval, Be excess), kind `shape`.
//! - [`ras`] — rate adaptive shapers srRAS, trRAS, G-srRAS, G-trRAS, RFC 2963.
//!
//! Hot paths dispatch through the [`AnyShaper`] enum (no `Box<dyn>`).

pub mod interval_shaper;
pub mod ras;
pub mod tbf;

use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::time::Instant;

pub use interval_shaper::IntervalShaper;
pub use ras::{Ras, RasKind};
pub use tbf::Tbf;

/// Why a conditioner discarded a packet: feeds per-reason counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue was at its packet or byte limit (tail drop).
    QueueFull,
    /// The packet can never conform (larger than the bucket / max size).
    TooBig,
    /// A policer in front of a class dropped it ([`crate::sched::Metered`]).
    Policed,
    /// No filter matched and the scheduler has no default class (Linux
    /// DRR drops such packets; HTB sends them to its direct queue).
    Unclassified,
    /// An active queue management decision before the queue was full:
    /// RED/RIO/WRED probabilistic and forced (average above `max`) drops
    /// (tc `early`/`forced_drop`), PIE's random drops, CoDel's control-law
    /// drops at dequeue (Linux counts those as `drop_count`, not
    /// `drop_overlimit`). Limit drops of the same AQMs stay [`Self::QueueFull`].
    Early,
}

impl DropReason {
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue-full",
            DropReason::TooBig => "too-big",
            DropReason::Policed => "policed",
            DropReason::Unclassified => "unclassified",
            DropReason::Early => "early",
        }
    }
}

/// A packet a shaper refused, and why. The packet is returned by value so
/// the caller can account for it (and the arena can reclaim its slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub packet: Packet,
    pub reason: DropReason,
}

/// A queue with a release schedule, driven by the caller's clock.
pub trait Shaper {
    /// Offers `pkt` at `now`. On refusal the dropped packet comes back (it
    /// may be another, already queued packet for head-drop queues).
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped>;

    /// Releases the head packet if its time has come at `now`.
    fn dequeue(&mut self, now: Instant) -> Option<Packet>;

    /// When the head packet may leave: `None` if empty, else an instant that
    /// may be ≤ `now` (ready already). A caller that dequeues at the returned
    /// instant gets a packet, unless it enqueued something in between.
    fn next_ready(&self, now: Instant) -> Option<Instant>;

    /// Packets waiting.
    fn backlog_packets(&self) -> usize;
    /// Bytes waiting.
    fn backlog_bytes(&self) -> u64;

    /// The effective parameters, including every derived default.
    fn describe(&self) -> Vec<(&'static str, String)>;

    /// Moves into `out` the packets dropped since the last call other than
    /// the one `enqueue` returned: CoDel's and FQ-CoDel's drops at dequeue,
    /// SFQ's at a perturbation rehash, FQ-CoDel's batch drop, a shaper
    /// refusing its child's packet ([`crate::sched::Gate`]). Such a
    /// conditioner may return `None` from `dequeue` right after
    /// `next_ready` said ready (everything waiting was dropped). A caller
    /// that frees or counts packets must drain this after each
    /// `enqueue`/`dequeue`; schedulers forward it to every class (one call
    /// per class). Default: nothing is ever dropped that way.
    #[inline]
    fn drain_dropped(&mut self, _out: &mut Vec<Dropped>) {}

    /// Runs one chunk of a trace through this conditioner for `stream`
    /// ([`crate::drive::ShapeStream::push`]). The default is the event loop
    /// itself; an enum of conditioners overrides it to pick its variant
    /// once per chunk, so that the loop is compiled for the concrete type
    /// and no `match` runs per call (issue 12). Same calls, same order,
    /// same results.
    #[doc(hidden)]
    #[inline]
    fn push_chunk(
        &mut self,
        stream: &mut crate::drive::ShapeStream,
        times: &[u64],
        sizes: &[u32],
        fields: &crate::drive::TraceFields<'_>,
    ) -> Result<(), crate::drive::TraceError>
    where
        Self: Sized,
    {
        stream.push_with(self, times, sizes, fields)
    }

    /// Releases what is left after the last chunk
    /// ([`crate::drive::ShapeStream::finish`]); overridden as
    /// [`Shaper::push_chunk`].
    #[doc(hidden)]
    #[inline]
    fn finish_stream(
        &mut self,
        stream: &mut crate::drive::ShapeStream,
    ) -> Result<crate::drive::ShapeSummary, crate::drive::TraceError>
    where
        Self: Sized,
    {
        stream.finish_with(self)
    }
}

/// Every shaper, for enum dispatch.
#[derive(Clone, Debug)]
// One per link or class, built once and never moved on the hot path, so the
// size spread between variants costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
pub enum AnyShaper {
    Tbf(Tbf),
    IntervalShaper(IntervalShaper),
    /// RFC 2963 srRAS / trRAS / G-srRAS / G-trRAS (one type, [`RasKind`]).
    Ras(Ras),
}

/// (kind, one-line description) of every shaper [`AnyShaper::from_params`] builds.
pub const SHAPER_KINDS: &[(&str, &str)] = &[
    (
        "tbf",
        "Linux token bucket filter (sch_tbf): rate, burst, limit | latency, peakrate, mtu, mpu",
    ),
    (
        "shape",
        "Cisco shape average (Bc per Tc, Be excess): cir, bc, be, queue-limit, profile",
    ),
    (
        "srras",
        "single-rate rate adaptive shaper (RFC 2963 §2.1): cir, mir|line_rate, cir_th, mir_th, buffer, k",
    ),
    (
        "trras",
        "two-rate rate adaptive shaper (RFC 2963 §2.4): cir, pir, mir|line_rate, cir_th, pir_th, mir_th, buffer, k",
    ),
    (
        "g-srras",
        "green srRAS feeding an srTCM (RFC 2963 §3.2): srras keys + cbs, ebs",
    ),
    (
        "g-trras",
        "green trRAS feeding a trTCM (RFC 2963 §3.4): trras keys + cbs, pbs",
    ),
];

impl AnyShaper {
    /// Builds shaper `kind` from string parameters and rejects unknown keys.
    pub fn from_params(kind: &str, mut p: Params) -> Result<Self, ConfigError> {
        let kind = kind.to_ascii_lowercase();
        let s = match kind.as_str() {
            "tbf" => AnyShaper::Tbf(Tbf::from_params(&mut p)?),
            "shape" => AnyShaper::IntervalShaper(IntervalShaper::from_params(&mut p)?),
            other if RasKind::parse(other).is_some() => {
                let k = RasKind::parse(other).expect("checked by the guard");
                AnyShaper::Ras(Ras::from_params(k, &mut p)?)
            }
            other => return Err(crate::meter::unknown_kind("shaper", other, SHAPER_KINDS)),
        };
        p.finish()?;
        Ok(s)
    }
}

impl Shaper for AnyShaper {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        match self {
            AnyShaper::Tbf(s) => s.enqueue(now, pkt),
            AnyShaper::IntervalShaper(s) => s.enqueue(now, pkt),
            AnyShaper::Ras(s) => s.enqueue(now, pkt),
        }
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        match self {
            AnyShaper::Tbf(s) => s.dequeue(now),
            AnyShaper::IntervalShaper(s) => s.dequeue(now),
            AnyShaper::Ras(s) => s.dequeue(now),
        }
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        match self {
            AnyShaper::Tbf(s) => s.next_ready(now),
            AnyShaper::IntervalShaper(s) => s.next_ready(now),
            AnyShaper::Ras(s) => s.next_ready(now),
        }
    }
    #[inline]
    fn backlog_packets(&self) -> usize {
        match self {
            AnyShaper::Tbf(s) => s.backlog_packets(),
            AnyShaper::IntervalShaper(s) => s.backlog_packets(),
            AnyShaper::Ras(s) => s.backlog_packets(),
        }
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        match self {
            AnyShaper::Tbf(s) => s.backlog_bytes(),
            AnyShaper::IntervalShaper(s) => s.backlog_bytes(),
            AnyShaper::Ras(s) => s.backlog_bytes(),
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        match self {
            AnyShaper::Tbf(s) => s.describe(),
            AnyShaper::IntervalShaper(s) => s.describe(),
            AnyShaper::Ras(s) => s.describe(),
        }
    }
    fn push_chunk(
        &mut self,
        stream: &mut crate::drive::ShapeStream,
        times: &[u64],
        sizes: &[u32],
        fields: &crate::drive::TraceFields<'_>,
    ) -> Result<(), crate::drive::TraceError> {
        match self {
            AnyShaper::Tbf(s) => stream.push_with(s, times, sizes, fields),
            AnyShaper::IntervalShaper(s) => stream.push_with(s, times, sizes, fields),
            AnyShaper::Ras(s) => stream.push_with(s, times, sizes, fields),
        }
    }
    fn finish_stream(
        &mut self,
        stream: &mut crate::drive::ShapeStream,
    ) -> Result<crate::drive::ShapeSummary, crate::drive::TraceError> {
        match self {
            AnyShaper::Tbf(s) => stream.finish_with(s),
            AnyShaper::IntervalShaper(s) => stream.finish_with(s),
            AnyShaper::Ras(s) => stream.finish_with(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_params_builds_each_kind_and_rejects_unknown_keys() {
        let p = Params::new(
            "tbf",
            [("rate", "1mbit"), ("burst", "10kb"), ("limit", "20kb")],
        );
        assert!(matches!(
            AnyShaper::from_params("TBF", p),
            Ok(AnyShaper::Tbf(_))
        ));
        let p = Params::new("shape", [("cir", "20mbit")]);
        let s = AnyShaper::from_params("shape", p).unwrap();
        assert!(s.describe().contains(&("bc_bits", "80000".to_string())));
        let p = Params::new("shape", [("cir", "20mbit"), ("bcc", "8000")]);
        let e = AnyShaper::from_params("shape", p).unwrap_err();
        assert_eq!(e.param, "bcc");
        assert!(e.message.contains("did you mean 'bc'"), "{e}");
        let e = AnyShaper::from_params("tfb", Params::new("tfb", [("rate", "1")])).unwrap_err();
        assert!(e.message.contains("did you mean 'tbf'"), "{e}");
    }

    #[test]
    fn every_kind_is_listed() {
        let kinds: Vec<&str> = SHAPER_KINDS.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            ["tbf", "shape", "srras", "trras", "g-srras", "g-trras"]
        );
    }
}
