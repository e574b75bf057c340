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
//! (added by the shaper modules)
//! - [`ras`] — rate adaptive shapers srRAS, trRAS, G-srRAS, G-trRAS, RFC 2963.
//!
//! Hot paths dispatch through the [`AnyShaper`] enum (no `Box<dyn>`).

pub mod ras;

use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::time::Instant;

pub use ras::{Ras, RasKind};

/// Why a conditioner discarded a packet: feeds per-reason counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue was at its packet or byte limit (tail drop).
    QueueFull,
    /// The packet can never conform (larger than the bucket / max size).
    TooBig,
}

impl DropReason {
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue-full",
            DropReason::TooBig => "too-big",
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
}

/// Every shaper, for enum dispatch.
#[derive(Clone, Debug)]
pub enum AnyShaper {
    /// RFC 2963 srRAS / trRAS / G-srRAS / G-trRAS (one type, [`RasKind`]).
    Ras(Ras),
}

/// (kind, one-line description) of every shaper [`AnyShaper::from_params`] builds.
pub const SHAPER_KINDS: &[(&str, &str)] = &[
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
    pub fn from_params(kind: &str, p: Params) -> Result<Self, ConfigError> {
        // Each shaper module adds its arm here: `"tbf" => AnyShaper::Tbf(Tbf::from_params(&mut p)?)`.
        let kind = kind.to_ascii_lowercase();
        let mut p = p;
        let s = match kind.as_str() {
            "srras" | "trras" | "g-srras" | "g-trras" => {
                let k = RasKind::parse(&kind).expect("listed kind");
                AnyShaper::Ras(Ras::from_params(k, &mut p)?)
            }
            _ => return Err(crate::meter::unknown_kind("shaper", &kind, SHAPER_KINDS)),
        };
        p.finish()?;
        Ok(s)
    }
}

impl Shaper for AnyShaper {
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        match self {
            AnyShaper::Ras(s) => s.enqueue(now, pkt),
        }
    }
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        match self {
            AnyShaper::Ras(s) => s.dequeue(now),
        }
    }
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        match self {
            AnyShaper::Ras(s) => s.next_ready(now),
        }
    }
    fn backlog_packets(&self) -> usize {
        match self {
            AnyShaper::Ras(s) => s.backlog_packets(),
        }
    }
    fn backlog_bytes(&self) -> u64 {
        match self {
            AnyShaper::Ras(s) => s.backlog_bytes(),
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        match self {
            AnyShaper::Ras(s) => s.describe(),
        }
    }
}
