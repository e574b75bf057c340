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
//!
//! [`Gate`] is a shaper whose queue is a child: Linux `tbf` with a child
//! qdisc (`tc qdisc add … parent 1: handle 10: sfq` under a tbf), Cisco
//! `shape average` with a child `fair-queue` (in MQC the shaped class's
//! queueing — `fair-queue`, `queue-limit`, a child policy — is the
//! shaper's queue).

use crate::meter::Policer;
use crate::packet::{Action, Packet};
use crate::queue::{Fifo, FifoLimit};
use crate::shaper::{AnyShaper, DropReason, Dropped, Shaper};
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
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        self.child.drain_dropped(out);
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

/// A shaper draining a child instead of its own FIFO: the child chooses
/// the next packet, the shaper when it leaves.
///
/// Linux `sch_tbf.c`: `tbf_dequeue` peeks the child (`qdisc_peek_dequeued`
/// takes the child's head out and holds it in `gso_skb`), releases it when
/// the bucket has the tokens (`qdisc_dequeue_peeked`), else arms the
/// watchdog; since `qdisc_run` calls dequeue again right after each
/// packet, and right after each enqueue, the head is chosen when the
/// previous packet leaves or as soon as one arrives at an idle shaper.
/// The gate does the same: whenever the shaper holds nothing it moves the
/// child's head into the shaper (after every `enqueue` and `dequeue`), and
/// the shaper releases it on its own schedule.
///
/// Cisco `shape average` + `fair-queue` (MQC: the class's queueing is the
/// shaper's queue): the router picks the next packet from the fair queue
/// when credit allows a release. The gate picks it one packet earlier —
/// when the previous one leaves — so a packet arriving meanwhile with a
/// lower sequence number cannot overtake it: one packet of look-ahead,
/// the same as Linux's.
///
/// Differences left: the held packet counts in the gate's backlog but no
/// longer in the child's, so a child's limit admits one packet more than
/// in Linux (where `gso_skb` stays in the child's `qlen`); the shaper's
/// own limit never binds (it holds one packet). A packet the shaper can
/// never send (larger than its bucket, [`DropReason::TooBig`]) is dropped
/// when it reaches the head and comes out of [`Shaper::drain_dropped`].
/// A child that is itself non-work-conserving is polled at its
/// `next_ready`; if the shaper then holds the packet back, that `dequeue`
/// returns `None` and `next_ready` gives the shaper's time.
pub struct Gate<S = AnyShaper> {
    shaper: S,
    child: Child,
    dropped: Vec<Dropped>,
}

impl<S: Shaper> Gate<S> {
    pub fn new(shaper: S, child: Child) -> Self {
        Gate {
            shaper,
            child,
            dropped: Vec::new(),
        }
    }

    /// Moves the child's head into an empty shaper.
    #[inline]
    fn refill(&mut self, now: Instant) {
        while self.shaper.backlog_packets() == 0 {
            let Some(p) = self.child.dequeue(now) else {
                break;
            };
            if let Err(d) = self.shaper.enqueue(now, p) {
                self.dropped.push(d);
            }
        }
    }

    /// The shaper's own refusals since the last call (without the
    /// child's drops, which [`Shaper::drain_dropped`] adds).
    pub fn drain_own_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.dropped);
    }

    /// The shaper (its bucket, its counters).
    pub fn shaper(&self) -> &S {
        &self.shaper
    }
}

impl<S: Shaper> Shaper for Gate<S> {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let r = self.child.enqueue(now, pkt);
        self.refill(now);
        r
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.refill(now);
        let p = self.shaper.dequeue(now);
        if p.is_some() {
            self.refill(now);
        }
        p
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        if self.shaper.backlog_packets() > 0 {
            self.shaper.next_ready(now)
        } else {
            self.child.next_ready(now)
        }
    }
    fn backlog_packets(&self) -> usize {
        self.shaper.backlog_packets() + self.child.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.shaper.backlog_bytes() + self.child.backlog_bytes()
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.dropped);
        self.child.drain_dropped(out);
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = self.shaper.describe();
        d.push(("child", inline(&self.child.describe())));
        d
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

    fn tbf(rate: &str, burst: &str) -> crate::shaper::Tbf {
        let mut p = Params::new("tbf", [("rate", rate), ("burst", burst), ("limit", "3000")]);
        crate::shaper::Tbf::from_params(&mut p).unwrap()
    }

    #[test]
    fn gate_lets_the_child_choose_and_the_shaper_time() {
        use crate::sched::testutil::{flow_filters, flow_packet};
        use crate::sched::Drr;
        // 8 Mbit/s = one byte per µs, burst one 1000-byte packet; a DRR
        // child over two flows, flow 0's packets all queued first.
        let classes = vec![(pfifo(100), Some(1000)), (pfifo(100), Some(1000))];
        let drr = Drr::new(classes, flow_filters(2)).unwrap();
        let mut g = Gate::new(tbf("8mbit", "1000"), Box::new(drr));
        let t0 = Instant::ZERO;
        for i in 0..10u64 {
            g.enqueue(t0, flow_packet(i, (i / 5) as usize, 1000))
                .unwrap();
        }
        assert_eq!((g.backlog_packets(), g.backlog_bytes()), (10, 10_000));
        let mut now = t0;
        let mut out = Vec::new();
        while let Some(t) = g.next_ready(now) {
            now = t.max(now);
            // The contract: a dequeue at next_ready gives a packet.
            let p = g.dequeue(now).expect("ready at next_ready");
            out.push((p.flow, now.as_ns()));
        }
        let flows: Vec<u32> = out.iter().map(|x| x.0).collect();
        // Packet 0 went into the shaper at its arrival, emptying flow 0's
        // class; the next flow-0 packet re-activated it with a fresh
        // quantum, ahead of flow 1. From then on DRR alternates.
        assert_eq!(flows, [0, 0, 1, 0, 1, 0, 1, 0, 1, 1]);
        let times: Vec<u64> = out.iter().map(|x| x.1).collect();
        let want: Vec<u64> = (0..10).map(|i| i * 1_000_000).collect();
        assert_eq!(times, want);
        assert!(g
            .describe()
            .iter()
            .any(|(k, v)| *k == "child" && v.contains("drr")));
    }

    #[test]
    fn gate_holds_one_packet_of_look_ahead_and_drops_what_can_never_fit() {
        use crate::sched::testutil::flow_packet;
        use crate::sched::Prio;
        // PRIO child: DSCP 46 (EF) → band 0 by a filter, DSCP 0 → band 1.
        use crate::classify::{Classifier, DscpSet, Filters};
        let f = Filters::new().push(Classifier::Dscp(DscpSet::of(&[46]).unwrap()), 0);
        let prio = Prio::from_params(&mut Params::new("prio", [("limit", "100")]), f).unwrap();
        let mut g = Gate::new(tbf("8mbit", "1000"), Box::new(prio));
        let t0 = Instant::ZERO;
        let ef = |id| {
            let mut p = flow_packet(id, 1, 1000);
            p.dscp = 46;
            p
        };
        g.enqueue(t0, flow_packet(0, 0, 1000)).unwrap();
        assert_eq!(g.dequeue(t0).unwrap().id, 0);
        // Best effort 1 becomes the head as soon as 0 leaves…
        g.enqueue(t0, flow_packet(1, 0, 1000)).unwrap();
        g.enqueue(t0, flow_packet(2, 0, 1000)).unwrap();
        g.enqueue(t0, ef(3)).unwrap();
        let t = g.next_ready(t0).unwrap();
        assert_eq!(t, Instant::from_ns(1_000_000));
        // …so it leaves before the EF packet that came later (tbf with a
        // child qdisc does the same), and EF overtakes packet 2.
        let ids: Vec<u64> = (1..4)
            .map(|k| g.dequeue(Instant::from_ns(k * 1_000_000)).unwrap().id)
            .collect();
        assert_eq!(ids, [1, 3, 2]);
        // A packet above the bucket is dropped when it reaches the head.
        let now = Instant::from_ns(10_000_000);
        g.enqueue(now, flow_packet(9, 0, 1400)).unwrap();
        g.enqueue(now, flow_packet(10, 0, 500)).unwrap();
        let mut d = Vec::new();
        g.drain_dropped(&mut d);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].packet.id, d[0].reason), (9, DropReason::TooBig));
        assert_eq!(g.dequeue(now).unwrap().id, 10);
        assert_eq!(g.next_ready(now), None);
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
