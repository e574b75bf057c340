//! First-in first-out queue with a packet or byte limit: Linux `pfifo`,
//! `bfifo` and `pfifo_head_drop` (net/sched/sch_fifo.c: `pfifo_enqueue`,
//! `bfifo_enqueue`, `pfifo_tail_enqueue`).
//!
//! Admission, as the kernel does it:
//! - packet limit, tail drop (`pfifo`): admit iff `qlen < limit`;
//! - byte limit, tail drop (`bfifo`): admit iff `backlog + len ≤ limit`;
//! - packet limit, head drop (`pfifo_head_drop`): if `qlen < limit` admit,
//!   else drop the packet at the head and admit the new one; with
//!   `limit = 0` the new packet itself is dropped.
//!
//! Linux has no byte-limited head-drop FIFO, and neither do we:
//! [`Fifo::new`] refuses that combination with a [`ConfigError`].
//!
//! Left out: the `txqueuelen` defaults (the caller always gives a limit)
//! and `qdisc_tree_reduce_backlog` (no parent qdisc here).

use crate::packet::Packet;
use crate::params::ConfigError;
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;
use std::collections::VecDeque;

/// What bounds the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FifoLimit {
    /// At most this many packets (`pfifo limit N`).
    Packets(u32),
    /// At most this many bytes of packets (`bfifo limit N`).
    Bytes(u64),
}

/// A tail-drop or head-drop FIFO.
#[derive(Clone, Debug)]
pub struct Fifo {
    limit: FifoLimit,
    head_drop: bool,
    queue: VecDeque<Packet>,
    backlog_bytes: u64,
}

impl Fifo {
    /// A FIFO bounded by `limit`, dropping at the tail (or at the head when
    /// `head_drop`, which needs a packet limit, as `pfifo_head_drop`).
    pub fn new(limit: FifoLimit, head_drop: bool) -> Result<Fifo, ConfigError> {
        if head_drop && matches!(limit, FifoLimit::Bytes(_)) {
            return Err(ConfigError::new(
                "limit",
                "head drop needs a packet limit (Linux pfifo_head_drop); a byte limit (bfifo) is tail-drop only",
            ));
        }
        // A small start: the deque doubles as it fills and then keeps its
        // size, so the steady state still allocates nothing per packet,
        // while a topology of many idle hosts does not reserve megabytes.
        let cap = match limit {
            FifoLimit::Packets(n) => (n as usize).min(64),
            FifoLimit::Bytes(b) => (b / 1500).min(64) as usize,
        };
        Ok(Fifo {
            limit,
            head_drop,
            queue: VecDeque::with_capacity(cap),
            backlog_bytes: 0,
        })
    }

    pub fn limit(&self) -> FifoLimit {
        self.limit
    }

    pub fn is_head_drop(&self) -> bool {
        self.head_drop
    }

    fn push(&mut self, pkt: Packet) {
        self.backlog_bytes += pkt.size_bytes as u64;
        self.queue.push_back(pkt);
    }
}

impl Shaper for Fifo {
    #[inline]
    fn enqueue(&mut self, _now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let full = Dropped {
            packet: pkt,
            reason: DropReason::QueueFull,
        };
        match self.limit {
            // pfifo_enqueue / pfifo_tail_enqueue
            FifoLimit::Packets(limit) => {
                if self.queue.len() < limit as usize {
                    self.push(pkt);
                    return Ok(());
                }
                if !self.head_drop || limit == 0 {
                    return Err(full);
                }
                // __qdisc_queue_drop_head, then enqueue at the tail.
                let head = self.queue.pop_front().expect("limit > 0 and queue full");
                self.backlog_bytes -= head.size_bytes as u64;
                self.push(pkt);
                Err(Dropped {
                    packet: head,
                    reason: DropReason::QueueFull,
                })
            }
            // bfifo_enqueue
            FifoLimit::Bytes(limit) => {
                if self.backlog_bytes + pkt.size_bytes as u64 <= limit {
                    self.push(pkt);
                    Ok(())
                } else {
                    Err(full)
                }
            }
        }
    }

    #[inline]
    fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.backlog_bytes -= p.size_bytes as u64;
        Some(p)
    }

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

    fn describe(&self) -> Vec<(&'static str, String)> {
        let (kind, limit) = match (self.limit, self.head_drop) {
            (FifoLimit::Packets(n), false) => ("pfifo", format!("{n}p")),
            (FifoLimit::Packets(n), true) => ("pfifo_head_drop", format!("{n}p")),
            (FifoLimit::Bytes(b), _) => ("bfifo", format!("{b}B")),
        };
        vec![
            ("kind", "fifo".into()),
            ("source", "Linux net/sched/sch_fifo.c".into()),
            ("linux_qdisc", kind.into()),
            ("limit", limit),
            ("drop", if self.head_drop { "head" } else { "tail" }.into()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u64, size: u32) -> Packet {
        Packet::new(id, size)
    }

    #[test]
    fn pfifo_tail_drops_the_arrival_when_full() {
        let mut q = Fifo::new(FifoLimit::Packets(2), false).unwrap();
        let t = Instant::ZERO;
        assert!(q.enqueue(t, pkt(0, 100)).is_ok());
        assert!(q.enqueue(t, pkt(1, 100)).is_ok());
        let d = q.enqueue(t, pkt(2, 100)).unwrap_err();
        assert_eq!((d.packet.id, d.reason), (2, DropReason::QueueFull));
        assert_eq!(q.dequeue(t).unwrap().id, 0);
        assert_eq!(q.dequeue(t).unwrap().id, 1);
        assert_eq!(q.dequeue(t), None);
    }

    #[test]
    fn pfifo_head_drop_drops_the_oldest_and_keeps_the_arrival() {
        let mut q = Fifo::new(FifoLimit::Packets(2), true).unwrap();
        let t = Instant::ZERO;
        q.enqueue(t, pkt(0, 100)).unwrap();
        q.enqueue(t, pkt(1, 200)).unwrap();
        let d = q.enqueue(t, pkt(2, 300)).unwrap_err();
        assert_eq!(d.packet.id, 0);
        assert_eq!(q.backlog_packets(), 2);
        assert_eq!(q.backlog_bytes(), 500);
        assert_eq!(q.dequeue(t).unwrap().id, 1);
        let mut z = Fifo::new(FifoLimit::Packets(0), true).unwrap();
        assert_eq!(z.enqueue(t, pkt(9, 1)).unwrap_err().packet.id, 9);
    }

    #[test]
    fn bfifo_admits_while_backlog_plus_len_fits() {
        let mut q = Fifo::new(FifoLimit::Bytes(1000), false).unwrap();
        let t = Instant::ZERO;
        q.enqueue(t, pkt(0, 600)).unwrap();
        q.enqueue(t, pkt(1, 400)).unwrap(); // exactly 1000: admitted
        assert!(q.enqueue(t, pkt(2, 1)).is_err());
        assert_eq!(q.next_ready(t), Some(t));
        q.dequeue(t);
        q.dequeue(t);
        assert_eq!(q.next_ready(t), None);
        assert!(Fifo::new(FifoLimit::Bytes(1000), true).is_err());
    }
}
