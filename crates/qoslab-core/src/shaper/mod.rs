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
//!
//! Hot paths dispatch through the [`AnyShaper`] enum (no `Box<dyn>`).

use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::time::Instant;

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
pub enum AnyShaper {}

/// (kind, one-line description) of every shaper [`AnyShaper::from_params`] builds.
pub const SHAPER_KINDS: &[(&str, &str)] = &[];

impl AnyShaper {
    /// Builds shaper `kind` from string parameters and rejects unknown keys.
    pub fn from_params(kind: &str, p: Params) -> Result<Self, ConfigError> {
        // Each shaper module adds its arm here: `"tbf" => AnyShaper::Tbf(Tbf::from_params(&mut p)?)`.
        let kind = kind.to_ascii_lowercase();
        let _ = p;
        Err(crate::meter::unknown_kind("shaper", &kind, SHAPER_KINDS))
    }
}

impl Shaper for AnyShaper {
    fn enqueue(&mut self, _now: Instant, _pkt: Packet) -> Result<(), Dropped> {
        match *self {}
    }
    fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
        match *self {}
    }
    fn next_ready(&self, _now: Instant) -> Option<Instant> {
        match *self {}
    }
    fn backlog_packets(&self) -> usize {
        match *self {}
    }
    fn backlog_bytes(&self) -> u64 {
        match *self {}
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        match *self {}
    }
}
