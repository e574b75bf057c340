//! Queues without a release schedule: every packet is ready as soon as it
//! is queued. They implement the [`Shaper`](crate::shaper::Shaper) contract
//! (`next_ready` is `now` whenever something waits) so a link drives a plain
//! FIFO and a shaper the same way.
//!
//! Members, one file each, each citing its source:
//! - [`fifo`] — Linux `pfifo` / `bfifo` / `pfifo_head_drop` (net/sched/sch_fifo.c).

pub mod fifo;

pub use fifo::{Fifo, FifoLimit};
