//! Schedulers and the policy tree.
//!
//! A scheduler classifies each arriving packet into one of its classes and,
//! on dequeue, picks which class sends next. Every scheduler implements
//! [`Shaper`](crate::shaper::Shaper), and every class holds a
//! [`tree::Child`] — itself any `Shaper` — so a whole policy (an HTB tree
//! with SFQ leaves, a PRIO with a policed and shaped band, …) is one
//! `Shaper` to the link that drives it.
//!
//! Members, one file each, each citing its source:
//! - [`tree`] — composition: children, the default `pfifo` leaf,
//!   [`Metered`] (a policer in front of a class, MQC child `police`) and
//!   [`Gate`] (a shaper whose queue is a child: tbf with a child qdisc,
//!   `shape average` + `fair-queue`).
//! - [`prio`] — strict priority bands with a priomap, Linux `sch_prio.c`.
//! - [`drr`] — Deficit Round Robin, Linux `sch_drr.c` (Shreedhar & Varghese).
//! - [`htb`] — Hierarchical Token Bucket, Linux `sch_htb.c` + tc `q_htb.c`.
//! - [`hfsc`] — Hierarchical Fair Service Curve, Linux `sch_hfsc.c` + tc
//!   `q_hfsc.c` (Stoica, Zhang, Ng, SIGCOMM 1997).
//! - [`sfq`] — Stochastic Fairness Queueing, Linux `sch_sfq.c`.
//! - [`wfq`] — Cisco flow-based WFQ (`fair-queue`): precedence-weighted
//!   sequence numbers, CDT and hold-queue drops.
//! - [`fq_codel`] — FQ-CoDel, RFC 8290 / Linux `sch_fq_codel.c`.
//!
//! Schedulers hold `Box<dyn Shaper + Send>` children (a tree is built once
//! from a configuration, its node types are open), so they are neither
//! `Clone` nor part of the [`AnyShaper`](crate::shaper::AnyShaper) enum.

/// `next_ready` / `backlog_*` of a work-conserving queue that keeps its
/// packet count in `self.qlen: u32` and its bytes in `self.backlog: u64`.
macro_rules! work_conserving_counts {
    () => {
        fn next_ready(&self, now: Instant) -> Option<Instant> {
            (self.qlen > 0).then_some(now)
        }
        fn backlog_packets(&self) -> usize {
            self.qlen as usize
        }
        fn backlog_bytes(&self) -> u64 {
            self.backlog
        }
    };
}

pub mod drr;
pub mod fq_codel;
pub mod hfsc;
pub mod htb;
pub mod prio;
pub mod sfq;
pub mod tree;
pub mod wfq;

pub use drr::Drr;
pub use fq_codel::FqCodel;
pub use hfsc::{Hfsc, HfscClassConfig, ServiceCurve};
pub use htb::{Htb, HtbClassConfig, HtbConfig};
pub use prio::Prio;
pub use sfq::Sfq;
pub use tree::{pfifo, Child, Gate, Metered};
pub use wfq::Wfq;

/// (kind, one-line description) of the classless schedulers: one queue per
/// flow (hash bucket or conversation), no classes of their own.
pub const CLASSLESS_KINDS: &[(&str, &str)] = &[
    (
        "sfq",
        "Stochastic Fairness Queueing (Linux sch_sfq.c): quantum, perturb, limit, divisor, flows, depth, headdrop, seed",
    ),
    (
        "fq_codel",
        "FQ-CoDel (RFC 8290, Linux sch_fq_codel.c): limit (10240), flows (1024), quantum (1514B), target (5ms), interval (100ms), ecn, drop-batch, seed",
    ),
    (
        "fair-queue",
        "Cisco flow-based WFQ (fair-queue): dynamic-queues (256), cdt|queue-limit (64), hold-queue (1000)",
    ),
];

/// (kind, one-line description) of the classful schedulers: classes (each
/// holding a child queue), filters and a default class.
pub const CLASSFUL_KINDS: &[(&str, &str)] = &[
    (
        "htb",
        "Hierarchical Token Bucket (Linux sch_htb.c, tc q_htb.c): r2q, direct-qlen, rounding, default; classes rate, ceil, burst, cburst, prio, quantum, mtu, mpu, parent",
    ),
    (
        "hfsc",
        "Hierarchical Fair Service Curve (Linux sch_hfsc.c, tc q_hfsc.c): default; classes sc, rt, ls, ul (\"m1 RATE d TIME m2 RATE\", \"rate RATE\", \"umax BYTES dmax TIME rate RATE\"), parent",
    ),
    (
        "prio",
        "strict priority bands (Linux sch_prio.c): bands (3), priomap; classes \"1\"..\"N\" are the bands",
    ),
    (
        "drr",
        "Deficit Round Robin (Linux sch_drr.c): default; classes quantum",
    ),
];

#[cfg(test)]
pub(crate) mod testutil {
    //! Shared harness for the fairness tests.
    use crate::classify::{Classifier, Filters, TupleMatch};
    use crate::packet::Packet;
    use crate::shaper::{DropReason, Dropped, Shaper};
    use crate::time::Instant;

    /// Flow `i`'s packet: `flow = i`, source port `i`, TCP.
    pub fn flow_packet(id: u64, flow: usize, size: u32) -> Packet {
        let mut p = Packet::new(id, size);
        p.flow = flow as u32;
        p.tuple.src_port = flow as u16;
        p.tuple.src_addr = 0x0a00_0001;
        p.tuple.dst_addr = 0x0a00_0002;
        p.tuple.dst_port = 80;
        p.tuple.protocol = 6;
        p
    }

    /// Filters sending source port `i` to class `i`, for `i < n`.
    pub fn flow_filters(n: usize) -> Filters {
        (0..n).fold(Filters::new(), |f, i| {
            f.push(
                Classifier::Tuple(TupleMatch {
                    src_port: (i as u16, 0xffff),
                    ..Default::default()
                }),
                i,
            )
        })
    }

    /// Keeps every flow backlogged (`sizes[i]` is flow i's packet size, 0
    /// for no flow; eight packets queued each) and dequeues `n_out`
    /// packets on a link of one ns per byte (8 Gbit/s), jumping to
    /// `next_ready` when the scheduler holds back; each departure is
    /// replaced by a packet of the same flow. Returns the bytes each flow
    /// sent and the elapsed ns.
    pub fn backlogged_bytes(q: &mut dyn Shaper, sizes: &[u32], n_out: usize) -> (Vec<u64>, u64) {
        let mut id = 0u64;
        let mut now = Instant::ZERO;
        for _ in 0..8 {
            for (f, &s) in sizes.iter().enumerate().filter(|x| *x.1 > 0) {
                q.enqueue(now, flow_packet(id, f, s)).unwrap();
                id += 1;
            }
        }
        let mut bytes = vec![0u64; sizes.len()];
        for _ in 0..n_out {
            let t = q.next_ready(now).expect("backlogged").max(now);
            let p = q.dequeue(t).expect("ready at next_ready");
            now = t + crate::time::Duration::from_ns(p.size_bytes as u64);
            let f = p.flow as usize;
            bytes[f] += p.size_bytes as u64;
            let _ = q.enqueue(now, flow_packet(id, f, sizes[f]));
            id += 1;
        }
        (bytes, now.as_ns())
    }

    /// A child that queues every packet it is offered and still reports a
    /// drop — of another packet (id `u64::MAX`), as a head-drop queue
    /// does when it displaces its head — so a parent must not read `Err`
    /// as "nothing was queued".
    #[derive(Default)]
    pub struct Displacing(std::collections::VecDeque<Packet>);

    impl Shaper for Displacing {
        fn enqueue(&mut self, _now: Instant, pkt: Packet) -> Result<(), Dropped> {
            self.0.push_back(pkt);
            Err(Dropped {
                packet: Packet::new(u64::MAX, 1),
                reason: DropReason::QueueFull,
            })
        }
        fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
            self.0.pop_front()
        }
        fn next_ready(&self, now: Instant) -> Option<Instant> {
            (!self.0.is_empty()).then_some(now)
        }
        fn backlog_packets(&self) -> usize {
            self.0.len()
        }
        fn backlog_bytes(&self) -> u64 {
            self.0.iter().map(|p| p.size_bytes as u64).sum()
        }
        fn describe(&self) -> Vec<(&'static str, String)> {
            vec![("kind", "displacing".into())]
        }
    }

    /// Offers one packet to `q` (whose children are all [`Displacing`]):
    /// the drop reported is the displaced one, and the packet offered
    /// must come out — the parent activated its class.
    pub fn check_displacing_child_activates(q: &mut dyn Shaper) {
        let t = Instant::ZERO;
        let e = q.enqueue(t, flow_packet(7, 0, 100)).unwrap_err();
        assert_eq!(e.packet.id, u64::MAX);
        assert_eq!(q.backlog_packets(), 1);
        assert_eq!(q.next_ready(t), Some(t));
        assert_eq!(q.dequeue(t).map(|p| p.id), Some(7));
        assert_eq!(q.backlog_packets(), 0);
    }

    /// Each flow's share of the bytes of [`backlogged_bytes`].
    pub fn backlogged_shares(q: &mut dyn Shaper, sizes: &[u32], n_out: usize) -> Vec<f64> {
        let (bytes, _) = backlogged_bytes(q, sizes, n_out);
        let total: u64 = bytes.iter().sum();
        bytes.iter().map(|&b| b as f64 / total as f64).collect()
    }
}
