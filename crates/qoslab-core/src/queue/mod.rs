//! Queues without a release schedule: every packet is ready as soon as it
//! is queued. They implement the [`Shaper`](crate::shaper::Shaper) contract
//! (`next_ready` is `now` whenever something waits) so a link drives a plain
//! FIFO and a shaper the same way.
//!
//! Members, one file each, each citing its source:
//! - [`fifo`] — Linux `pfifo` / `bfifo` / `pfifo_head_drop` (net/sched/sch_fifo.c).

pub mod fifo;

pub use fifo::{Fifo, FifoLimit};

/// (kind, one-line description) of every queue kind: [`Fifo`] in its three
/// Linux forms (`sch_fifo.c`).
pub const QUEUE_KINDS: &[(&str, &str)] = &[
    (
        "pfifo",
        "Linux pfifo (sch_fifo.c): tail drop at limit packets (default 1000, as txqueuelen)",
    ),
    (
        "bfifo",
        "Linux bfifo (sch_fifo.c): tail drop at limit bytes (default 1000 x 1514 B)",
    ),
    (
        "pfifo_head_drop",
        "Linux pfifo_head_drop (sch_fifo.c): drops the oldest packet at limit packets",
    ),
];
