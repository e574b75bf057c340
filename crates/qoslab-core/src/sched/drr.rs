//! Deficit Round Robin, Linux `drr` (`net/sched/sch_drr.c`, `man tc-drr`),
//! after M. Shreedhar and G. Varghese, "Efficient Fair Queuing using
//! Deficit Round Robin", SIGCOMM 1995.
//!
//! Classes with a byte `quantum` each, holding a child (default `pfifo`).
//! Backlogged classes sit in an active list. `drr_dequeue`: look at the
//! head class's next packet (peek); if its length fits the class's
//! `deficit`, send it and subtract; otherwise add `quantum` to the deficit
//! and move the class to the tail. A class joining the list (first packet,
//! `drr_enqueue`) starts with `deficit = quantum`; a class whose queue
//! empties leaves the list. Over a long backlogged run each class gets
//! bandwidth in proportion to its quantum, whatever its packet sizes
//! (Shreedhar & Varghese, Theorem 1: within one quantum plus one maximum
//! packet per round).
//!
//! Parameters: per class `quantum` in bytes, default the device's
//! `psched_mtu` = MTU + Ethernet header = **1514** (`drr_change_class`);
//! zero is refused ("Specified DRR quantum cannot be zero").
//!
//! Classification: the [`Filters`]; Linux DRR has no default class and
//! drops what no filter claims (`drr_classify` → NULL), here
//! [`DropReason::Unclassified`] — unless the filter list names a default
//! (Cisco's `class-default`).
//!
//! Like Linux, DRR is work-conserving only over work-conserving children:
//! if the head class's child holds packets but releases none yet (a
//! shaper waiting for tokens), DRR waits for it (`qdisc_warn_nonwc`) and
//! [`Shaper::next_ready`] reports that child's time.

use super::tree::{inline, Child, PeekSlot};
use crate::classify::Filters;
use crate::packet::Packet;
use crate::params::ConfigError;
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;
use std::collections::VecDeque;

/// `psched_mtu(dev)` for a 1500-byte Ethernet device: 1500 + 14.
pub const DEFAULT_QUANTUM: u32 = 1514;

struct Class {
    slot: PeekSlot,
    quantum: u32,
    deficit: u32,
    active: bool,
}

/// Linux `drr` qdisc.
pub struct Drr {
    classes: Vec<Class>,
    active: VecDeque<usize>,
    filters: Filters,
}

impl Drr {
    /// One class per `(child, quantum)`; `None` quantum = 1514.
    pub fn new(classes: Vec<(Child, Option<u32>)>, filters: Filters) -> Result<Self, ConfigError> {
        if classes.is_empty() {
            return Err(ConfigError::new("classes", "drr needs at least one class"));
        }
        filters.check(classes.len())?;
        let n = classes.len();
        let classes = classes
            .into_iter()
            .map(|(child, q)| {
                let quantum = q.unwrap_or(DEFAULT_QUANTUM);
                if quantum == 0 {
                    return Err(ConfigError::new(
                        "quantum",
                        "Specified DRR quantum cannot be zero (kernel)",
                    ));
                }
                Ok(Class {
                    slot: PeekSlot::new(child),
                    quantum,
                    deficit: 0,
                    active: false,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Drr {
            classes,
            active: VecDeque::with_capacity(n),
            filters,
        })
    }

    /// Class `i`'s quantum in bytes.
    pub fn quantum(&self, i: usize) -> u32 {
        self.classes[i].quantum
    }
}

impl Shaper for Drr {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let Some(c) = self.filters.classify(&pkt) else {
            return Err(Dropped {
                packet: pkt,
                reason: DropReason::Unclassified,
            });
        };
        let cl = &mut self.classes[c];
        // A head-drop child may take the packet and hand back an older
        // one: the class is active whenever its child holds something.
        let r = cl.slot.enqueue(now, pkt);
        if !cl.active && cl.slot.backlog_packets() > 0 {
            cl.active = true;
            cl.deficit = cl.quantum;
            self.active.push_back(c);
        }
        r
    }

    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        loop {
            let c = *self.active.front()?;
            let cl = &mut self.classes[c];
            let Some(head) = cl.slot.peek(now) else {
                if cl.slot.backlog_packets() == 0 {
                    // The child emptied itself (an AQM drop): drr_qlen_notify.
                    cl.active = false;
                    self.active.pop_front();
                    continue;
                }
                return None; // non-work-conserving child: wait for it
            };
            let len = head.size_bytes;
            if len <= cl.deficit {
                cl.deficit -= len;
                let p = cl.slot.take();
                if cl.slot.backlog_packets() == 0 {
                    cl.active = false;
                    self.active.pop_front();
                }
                return p;
            }
            cl.deficit += cl.quantum;
            self.active.rotate_left(1);
        }
    }

    fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.active
            .iter()
            .map(|&c| &self.classes[c].slot)
            .find(|s| s.backlog_packets() > 0)
            .and_then(|s| s.next_ready(now))
    }

    fn backlog_packets(&self) -> usize {
        self.classes.iter().map(|c| c.slot.backlog_packets()).sum()
    }
    fn backlog_bytes(&self) -> u64 {
        self.classes.iter().map(|c| c.slot.backlog_bytes()).sum()
    }

    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        for c in &mut self.classes {
            c.slot.child.drain_dropped(out);
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = vec![
            ("kind", "drr".to_string()),
            ("classes", self.classes.len().to_string()),
            ("filters", self.filters.list.len().to_string()),
        ];
        if let Some(x) = self.filters.default {
            d.push(("default", x.to_string()));
        }
        for c in &self.classes {
            d.push((
                "class",
                format!(
                    "quantum={} child={}",
                    c.quantum,
                    inline(&c.slot.child.describe())
                ),
            ));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{Classifier, DscpSet};
    use crate::sched::testutil::{backlogged_shares, flow_filters};
    use crate::sched::tree::pfifo;
    use proptest::prelude::*;

    fn drr(quanta: &[u32]) -> Drr {
        let classes = quanta.iter().map(|&q| (pfifo(10_000), Some(q))).collect();
        Drr::new(classes, flow_filters(quanta.len())).unwrap()
    }

    #[test]
    fn equal_quanta_give_equal_shares_with_mixed_sizes() {
        // Four flows, packet sizes 64..1514 differing per flow.
        let mut q = drr(&[1514; 4]);
        let shares = backlogged_shares(&mut q, &[64, 576, 1000, 1514], 200_000);
        for s in shares {
            assert!((s - 0.25).abs() < 0.25 * 0.02, "{s}");
        }
    }

    #[test]
    fn quantum_weights_the_share() {
        let mut q = drr(&[1514, 3028, 4542]);
        let shares = backlogged_shares(&mut q, &[1000, 1000, 1000], 200_000);
        let want = [1.0 / 6.0, 2.0 / 6.0, 3.0 / 6.0];
        for (s, w) in shares.iter().zip(want) {
            assert!((s - w).abs() < w * 0.02, "{s} vs {w}");
        }
    }

    #[test]
    fn unclassified_packets_drop_unless_a_default_exists() {
        let f = Filters::new().push(Classifier::Dscp(DscpSet::of(&[46]).unwrap()), 0);
        let mut q = Drr::new(vec![(pfifo(10), None), (pfifo(10), None)], f.clone()).unwrap();
        let e = q.enqueue(Instant::ZERO, Packet::new(0, 100)).unwrap_err();
        assert_eq!(e.reason, DropReason::Unclassified);
        let mut q = Drr::new(
            vec![(pfifo(10), None), (pfifo(10), None)],
            f.with_default(1),
        )
        .unwrap();
        q.enqueue(Instant::ZERO, Packet::new(0, 100)).unwrap();
        assert_eq!(q.describe()[3], ("default", "1".to_string()));
        assert!(Drr::new(vec![(pfifo(10), Some(0))], Filters::new()).is_err());
        assert!(Drr::new(vec![(pfifo(10), None)], Filters::new().with_default(1)).is_err());
    }

    #[test]
    fn a_child_that_displaces_an_older_packet_still_activates_its_class() {
        use crate::sched::testutil::{check_displacing_child_activates, Displacing};
        let classes = (0..2)
            .map(|_| (Box::new(Displacing::default()) as Child, None))
            .collect();
        let mut q = Drr::new(classes, flow_filters(2)).unwrap();
        check_displacing_child_activates(&mut q);
    }

    proptest! {
        /// Conservation (sent + dropped = offered; bytes too), per-class
        /// FIFO order, backlog bookkeeping and the pfifo limit.
        #[test]
        fn conserves_packets_and_keeps_class_order(
            ops in prop::collection::vec((0usize..3, 40u32..1600, any::<bool>()), 1..400))
        {
            let classes = (0..3).map(|_| (pfifo(20), Some(1514))).collect();
            let mut q = Drr::new(classes, flow_filters(3)).unwrap();
            let t = Instant::ZERO;
            let (mut sent, mut dropped, mut last) = (0usize, 0usize, [None::<u64>; 3]);
            for (i, &(c, size, deq)) in ops.iter().enumerate() {
                let mut p = Packet::new(i as u64, size);
                p.flow = c as u32;
                if q.enqueue(t, p).is_err() { dropped += 1; }
                prop_assert!(q.backlog_packets() <= 60);
                if deq {
                    if let Some(p) = q.dequeue(t) {
                        let f = p.flow as usize;
                        prop_assert!(last[f].is_none_or(|l| l < p.id));
                        last[f] = Some(p.id);
                        sent += 1;
                    }
                }
            }
            while q.dequeue(t).is_some() { sent += 1; }
            prop_assert_eq!(sent + dropped, ops.len());
            prop_assert_eq!((q.backlog_packets(), q.backlog_bytes()), (0, 0));
            prop_assert_eq!(q.next_ready(t), None);
        }
    }
}
