//! Composition: how a policy becomes a tree of [`Shaper`]s.
//!
//! Every scheduler class holds a [`Child`] — any `Box<dyn Shaper + Send>`:
//! a queue, a shaper (TBF), an AQM, or another scheduler — exactly as a tc
//! class holds a qdisc (`tc qdisc add … parent 1:10 …`) or a Cisco class
//! holds a child `service-policy`. Since a scheduler is itself a
//! [`Shaper`], a whole hierarchy is one `Shaper` to the link that drives it.
//! The scheduler classifies on enqueue (its [`crate::classify::Filters`])
//! and asks children for packets on dequeue.
//!
//! [`Metered`] puts a [`Policer`] in front of any child: Cisco MQC's
//! `police` inside a shaped class (a child policy-map), or tc's `action
//! police` on the filter that selects the class. Each arriving packet is
//! metered; `drop` discards it ([`DropReason::Policed`]), `set-dscp`
//! rewrites its DSCP, and the packet carries the meter's colour onward so a
//! colour-aware queue below (WRED/RIO) can read it.
//!
//! [`pfifo`] (the engine's [`Fifo`]) is the default leaf, as in Linux where a new class gets a
//! `pfifo` whose limit is the device's `tx_queue_len` (1000 on Ethernet;
//! `qdisc_create_dflt`, `net/sched/sch_fifo.c`).
//!
//! The trait has no `peek`; schedulers that must see the head packet's
//! size before committing (DRR) use [`PeekSlot`], which dequeues from the
//! child and holds the packet, as the kernel's `qdisc_peek_dequeued` does.

use crate::meter::Policer;
use crate::packet::{Action, Packet};
use crate::queue::{Fifo, FifoLimit};
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;

/// A class's content: any queue, shaper or scheduler.
pub type Child = Box<dyn Shaper + Send>;

/// Linux's default `tx_queue_len` for Ethernet devices, the limit of the
/// default `pfifo` leaf.
pub const DEFAULT_TXQUEUELEN: u32 = 1000;

/// The default leaf: a `pfifo` of `limit_packets` ([`Fifo`], tail drop).
pub fn pfifo(limit_packets: u32) -> Child {
    Box::new(
        Fifo::new(FifoLimit::Packets(limit_packets), false)
            .expect("a packet-limited tail-drop FIFO is always valid"),
    )
}

/// A policer in front of a child (MQC `police` inside a class).
pub struct Metered {
    policer: Policer,
    child: Child,
    policed_packets: u64,
    remarked_packets: u64,
}

impl Metered {
    pub fn new(policer: Policer, child: Child) -> Self {
        Metered {
            policer,
            child,
            policed_packets: 0,
            remarked_packets: 0,
        }
    }
    /// Packets the policer dropped.
    pub fn policed_packets(&self) -> u64 {
        self.policed_packets
    }
    /// Packets whose DSCP the policer rewrote.
    pub fn remarked_packets(&self) -> u64 {
        self.remarked_packets
    }
}

impl Shaper for Metered {
    #[inline]
    fn enqueue(&mut self, now: Instant, mut pkt: Packet) -> Result<(), Dropped> {
        let v = self.policer.on_packet(now, &pkt);
        pkt.color = v.color;
        match v.action {
            Action::Transmit => {}
            Action::Drop => {
                self.policed_packets += 1;
                return Err(Dropped {
                    packet: pkt,
                    reason: DropReason::Policed,
                });
            }
            Action::SetDscp(d) => {
                self.remarked_packets += 1;
                pkt.dscp = d;
            }
        }
        self.child.enqueue(now, pkt)
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.child.dequeue(now)
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.child.next_ready(now)
    }
    fn backlog_packets(&self) -> usize {
        self.child.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.child.backlog_bytes()
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "metered".to_string()),
            ("police", inline(&self.policer.describe())),
            ("child", inline(&self.child.describe())),
        ]
    }
}

/// `k=v k=v …` — a nested conditioner's description in one value.
pub fn inline(d: &[(&'static str, String)]) -> String {
    let parts: Vec<String> = d.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("[{}]", parts.join(" "))
}

/// A child plus a one-packet look-ahead (the kernel's
/// `qdisc_peek_dequeued`: the peeked packet has left the child but not the
/// class, and still counts in its backlog).
pub struct PeekSlot {
    pub child: Child,
    head: Option<Packet>,
}

impl PeekSlot {
    pub fn new(child: Child) -> Self {
        PeekSlot { child, head: None }
    }
    /// The head packet, pulling it from the child if needed.
    #[inline]
    pub fn peek(&mut self, now: Instant) -> Option<&Packet> {
        if self.head.is_none() {
            self.head = self.child.dequeue(now);
        }
        self.head.as_ref()
    }
    /// Takes the peeked packet (call after a successful [`Self::peek`]).
    #[inline]
    pub fn take(&mut self) -> Option<Packet> {
        self.head.take()
    }
    #[inline]
    pub fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.child.enqueue(now, pkt)
    }
    #[inline]
    pub fn next_ready(&self, now: Instant) -> Option<Instant> {
        if self.head.is_some() {
            Some(now)
        } else {
            self.child.next_ready(now)
        }
    }
    #[inline]
    pub fn backlog_packets(&self) -> usize {
        self.child.backlog_packets() + self.head.is_some() as usize
    }
    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        self.child.backlog_bytes() + self.head.map_or(0, |p| p.size_bytes as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::Color;

    #[test]
    fn metered_drops_or_remarks_on_the_verdict_and_passes_the_colour() {
        // 8 kbit/s policer, bc 1500: the first 1500-byte packet conforms,
        // the second exceeds.
        let p = Params::new(
            "police",
            [("cir", "8kbit"), ("bc", "1500"), ("exceed", "set-dscp:8")],
        );
        let pol = Policer::from_params("police", p).unwrap();
        let mut m = Metered::new(pol, pfifo(10));
        let t = Instant::ZERO;
        m.enqueue(t, Packet::new(0, 1500)).unwrap();
        m.enqueue(t, Packet::new(1, 1500)).unwrap();
        assert_eq!(m.dequeue(t).unwrap().color, Color::Green);
        let x = m.dequeue(t).unwrap();
        assert_eq!((x.color, x.dscp), (Color::Yellow, 8));
        assert_eq!(m.remarked_packets(), 1);

        let p = Params::new("police", [("cir", "8kbit"), ("bc", "1500")]);
        let mut m = Metered::new(Policer::from_params("police", p).unwrap(), pfifo(10));
        m.enqueue(t, Packet::new(0, 1500)).unwrap();
        let e = m.enqueue(t, Packet::new(1, 1500)).unwrap_err();
        assert_eq!(e.reason, DropReason::Policed);
        assert_eq!((m.policed_packets(), m.backlog_packets()), (1, 1));
        assert!(m.describe()[1].1.contains("cir"));
    }

    #[test]
    fn peek_slot_counts_the_held_packet() {
        let mut s = PeekSlot::new(pfifo(10));
        let t = Instant::ZERO;
        s.enqueue(t, Packet::new(0, 100)).unwrap();
        s.enqueue(t, Packet::new(1, 50)).unwrap();
        assert_eq!(s.peek(t).unwrap().id, 0);
        assert_eq!((s.backlog_packets(), s.backlog_bytes()), (2, 150));
        assert_eq!(s.take().unwrap().id, 0);
        assert_eq!((s.backlog_packets(), s.backlog_bytes()), (1, 50));
    }
}
