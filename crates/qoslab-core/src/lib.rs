//! # qoslab-core — traffic conditioners as pure state machines
//!
//! Every conditioner here is driven by its caller's clock: it never reads
//! time, never does I/O and never allocates per packet. The simulator drives
//! it with virtual time, the emulator with the monotonic clock, the batch
//! functions in [`drive`] with a trace's timestamps — one implementation,
//! three worlds.
//!
//! Units: time is integer nanoseconds ([`time`]), rates bits per second and
//! sizes bytes ([`units`]); token accounting uses no floats ([`bucket`]).
//!
//! Modules:
//! - [`time`], [`units`] — `Instant`, `Duration`, `Rate`, `Bytes`.
//! - [`parse`] — tc-compatible parsing of "20mbit", "32kb", "50ms", "200p".
//! - [`params`] — string parameters → validated configs, with errors that
//!   name the key and suggest the nearest one.
//! - [`packet`] — `Packet`, `Color`, `Action`, `Verdict`.
//! - [`bucket`] — the exact token bucket shared by the RFC meters.
//! - [`meter`] — meters and policers (`on_packet(now, &pkt) -> Verdict`).
//! - [`shaper`] — shapers (`enqueue` / `dequeue` / `next_ready`).
//! - [`queue`] — plain queues on the same contract (FIFO, tail or head drop).
//! - [`aqm`] — active queue management on the same contract (RED, RIO/WRED,
//!   CoDel, PIE).
//! - [`classify`] — filters: u32-like 5-tuple, DSCP, colour, flow hash.
//! - [`sched`] — schedulers and the policy tree (PRIO, DRR, WFQ, SFQ,
//!   HTB, FQ-CoDel); every node is a [`Shaper`], so a tree is one too.
//! - [`drive`] — run a whole trace through a meter or a shaper.
//! - [`rng`] — seeded, portable randomness for probabilistic markers.

pub mod aqm;
pub mod bucket;
pub mod classify;
pub mod drive;
pub mod meter;
pub mod packet;
pub mod params;
pub mod parse;
pub mod queue;
pub mod rng;
pub mod sched;
pub mod shaper;
pub mod time;
pub mod units;

pub use meter::{AnyMeter, Meter, Policer};
pub use packet::{Action, Actions, Color, FiveTuple, Packet, Verdict};
pub use params::{ConfigError, Params};
pub use shaper::{AnyShaper, DropReason, Dropped, Shaper};
pub use time::{Duration, Instant};
pub use units::{Bytes, Rate};
