//! FQ-CoDel: RFC 8290 as implemented by Linux `fq_codel`
//! (`net/sched/sch_fq_codel.c`, `man tc-fq_codel`).
//!
//! Packets are hashed into `flows` queues (`reciprocal_scale(hash,
//! flows)`, RFC 8290 §4.1.1; [`FlowHash`](crate::classify::FlowHash)). Each flow queue runs its own
//! CoDel ([`CodelState`], shared [`CodelParams`]; the drop test sees the
//! whole qdisc's backlog, as `fq_codel_dequeue` passes
//! `sch->qstats.backlog`). Scheduling is DRR over two lists (§4.2): a flow
//! that gets a packet while in neither list joins **new flows** with
//! `deficit = quantum`. Dequeue takes the first flow of new flows, else of
//! old flows; a flow with `deficit ≤ 0` gets `+= quantum` and moves to the
//! tail of old flows; otherwise CoDel dequeues from it — if nothing comes
//! back, a new flow moves to old flows (when old flows is not empty, to
//! prevent starvation, §4.2) and an old flow is removed; else the packet
//! leaves and `deficit −= len`.
//!
//! Overflow (`fq_codel_drop`, §4.1.2): when more than `limit` packets are
//! queued, the flow with the largest byte backlog (the "fattest") loses
//! packets from its head until half of that backlog or `drop_batch` (64)
//! packets are gone. The first dropped packet is returned from `enqueue`
//! (the new one was accepted unless it was among them); the rest are kept
//! for [`FqCodel::take_dropped`], with CoDel's dequeue drops.
//!
//! Defaults (`fq_codel_init`): flows **1024**, quantum **1514**
//! (`psched_mtu`), limit **10240** packets, target 5 ms, interval 100 ms,
//! drop_batch 64, memory_limit 32 MB.
//!
//! ECN: Linux defaults to `ecn` on, which marks only ECN-capable packets;
//! qoslab packets carry no ECN field, so the default here is off (every
//! CoDel decision drops, as for non-ECN TCP); `ecn = on` counts marks
//! instead (see [`crate::aqm::codel`]).
//!
//! Missing: `memory_limit` (only the packet limit is enforced),
//! `ce_threshold` selectors, external classifiers choosing the flow.

use crate::aqm::codel::{CodelParams, CodelQueue, CodelState, CodelStats};
use crate::classify::flow_hash::{flow_hash, reciprocal_scale};
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::rng::Rng;
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
struct Flow {
    q: VecDeque<(Packet, Instant)>,
    backlog: u64,
    deficit: i64,
    codel: CodelState,
    /// In new_flows or old_flows.
    listed: bool,
}

/// Linux `fq_codel` qdisc.
#[derive(Clone, Debug)]
pub struct FqCodel {
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    key: u64,
    params: CodelParams,
    stats: CodelStats,
    qlen: u32,
    backlog: u64,
    limit: u32,
    quantum: u32,
    drop_batch: u32,
    dropped: Vec<Dropped>,
    overlimit_drops: u64,
}

/// CoDel's view of one flow queue plus the qdisc-wide counters.
struct FlowView<'a> {
    flow: &'a mut Flow,
    qlen: &'a mut u32,
    backlog: &'a mut u64,
    dropped: &'a mut Vec<Dropped>,
}

impl CodelQueue for FlowView<'_> {
    fn codel_pop(&mut self) -> Option<(Packet, Instant)> {
        let (p, t) = self.flow.q.pop_front()?;
        self.flow.backlog -= p.size_bytes as u64;
        *self.qlen -= 1;
        *self.backlog -= p.size_bytes as u64;
        Some((p, t))
    }
    fn codel_backlog_bytes(&self) -> u64 {
        *self.backlog
    }
    fn codel_drop(&mut self, pkt: Packet) {
        self.dropped.push(Dropped {
            packet: pkt,
            reason: DropReason::Early,
        });
    }
}

impl FqCodel {
    /// Reads `flows`, `quantum`, `limit`, `target`, `interval`, `ecn`,
    /// `drop_batch`, `seed` (the hash key; default 0). `stream` tells
    /// components sharing a seed apart.
    pub fn from_params(p: &mut Params, stream: u64) -> Result<Self, ConfigError> {
        let flows = p.opt_u64("flows")?.unwrap_or(1024);
        let quantum = p.opt_size("quantum")?.map_or(1514, |b| b.get());
        let limit = p.opt_packets("limit")?.unwrap_or(10240);
        let target = p.opt_time("target")?.unwrap_or(Duration::from_ms(5));
        let interval = p.opt_time("interval")?.unwrap_or(Duration::from_ms(100));
        let ecn = p.opt_bool("ecn")?.unwrap_or(false);
        let drop_batch = p.opt_u64("drop-batch")?.unwrap_or(64);
        let seed = p.opt_u64("seed")?.unwrap_or(0);
        if flows == 0 || flows > 65536 {
            return Err(ConfigError::new(
                "flows",
                format!("{flows} is outside 1..=65536 (kernel)"),
            ));
        }
        if limit == 0 || limit > u32::MAX as u64 {
            return Err(ConfigError::new(
                "limit",
                format!("{limit} packets is out of range"),
            ));
        }
        if quantum == 0 || quantum > i32::MAX as u64 {
            return Err(ConfigError::new(
                "quantum",
                format!("{quantum} is out of range"),
            ));
        }
        if drop_batch == 0 || drop_batch > u32::MAX as u64 {
            return Err(ConfigError::new("drop-batch", "must be at least 1"));
        }
        let params = CodelParams::new(target, interval, None, 1514, ecn)?;
        Ok(FqCodel {
            flows: vec![Flow::default(); flows as usize],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            key: Rng::new(seed, stream).next_u64(),
            params,
            stats: CodelStats::default(),
            qlen: 0,
            backlog: 0,
            limit: limit as u32,
            quantum: quantum as u32,
            drop_batch: drop_batch as u32,
            dropped: Vec::new(),
            overlimit_drops: 0,
        })
    }

    /// Packets dropped by CoDel at dequeue or by an overflow batch.
    pub fn take_dropped(&mut self) -> std::vec::Drain<'_, Dropped> {
        self.dropped.drain(..)
    }
    /// CoDel counters summed over all flows.
    pub fn codel_stats(&self) -> &CodelStats {
        &self.stats
    }

    /// `fq_codel_drop`: head drops from the fattest flow.
    fn drop_batch(&mut self) -> usize {
        let (idx, fat) = self
            .flows
            .iter()
            .enumerate()
            .max_by_key(|(i, f)| (f.backlog, std::cmp::Reverse(*i)))
            .map(|(i, f)| (i, f.backlog))
            .expect("flows ≥ 1");
        let threshold = fat / 2;
        let f = &mut self.flows[idx];
        let (mut len, mut n) = (0u64, 0u32);
        while let Some((p, _)) = f.q.pop_front() {
            len += p.size_bytes as u64;
            n += 1;
            self.dropped.push(Dropped {
                packet: p,
                reason: DropReason::QueueFull,
            });
            if n >= self.drop_batch || len >= threshold {
                break;
            }
        }
        f.backlog -= len;
        self.backlog -= len;
        self.qlen -= n;
        self.overlimit_drops += n as u64;
        idx
    }
}

impl Shaper for FqCodel {
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let idx = reciprocal_scale(flow_hash(&pkt, self.key), self.flows.len() as u32) as usize;
        let f = &mut self.flows[idx];
        f.backlog += pkt.size_bytes as u64;
        f.q.push_back((pkt, now));
        if !f.listed {
            f.listed = true;
            f.deficit = self.quantum as i64;
            self.new_flows.push_back(idx as u32);
        }
        self.qlen += 1;
        self.backlog += pkt.size_bytes as u64;
        if self.qlen <= self.limit {
            return Ok(());
        }
        let before = self.dropped.len();
        self.drop_batch();
        // Report the first packet of the batch; the rest stay buffered.
        Err(self.dropped.remove(before))
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        loop {
            let (idx, from_new) = match self.new_flows.front() {
                Some(&i) => (i as usize, true),
                None => (*self.old_flows.front()? as usize, false),
            };
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += self.quantum as i64;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut codel = f.codel;
            let mut view = FlowView {
                flow: f,
                qlen: &mut self.qlen,
                backlog: &mut self.backlog,
                dropped: &mut self.dropped,
            };
            let out = codel.dequeue(&self.params, &mut self.stats, now, &mut view);
            let f = &mut self.flows[idx];
            f.codel = codel;
            match out {
                None => {
                    if from_new {
                        self.new_flows.pop_front();
                        if !self.old_flows.is_empty() {
                            self.old_flows.push_back(idx as u32);
                            continue;
                        }
                    } else {
                        self.old_flows.pop_front();
                    }
                    f.listed = false;
                }
                Some(p) => {
                    f.deficit -= p.size_bytes as i64;
                    return Some(p);
                }
            }
        }
    }

    work_conserving_counts!();
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.dropped);
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "fq_codel".to_string()),
            ("limit_packets", self.limit.to_string()),
            ("flows", self.flows.len().to_string()),
            ("quantum_bytes", self.quantum.to_string()),
            ("target_ns", self.params.target_ns().to_string()),
            ("interval_ns", self.params.interval_ns().to_string()),
            ("ecn", self.params.ecn().to_string()),
            ("drop_batch", self.drop_batch.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{backlogged_shares, flow_packet};
    use proptest::prelude::*;

    fn fq(kv: &[(&str, &str)]) -> FqCodel {
        FqCodel::from_params(&mut Params::new("fq_codel", kv.iter().copied()), 0).unwrap()
    }

    #[test]
    fn backlogged_flows_share_equally_at_low_delay() {
        // 8 ns of delay per packet at most: CoDel never drops here.
        let mut q = fq(&[]);
        let shares = backlogged_shares(&mut q, &[1500, 1000, 64, 576, 1500, 200], 200_000);
        for s in &shares {
            assert!((s - 1.0 / 6.0).abs() < 1.0 / 6.0 * 0.02, "{shares:?}");
        }
        assert_eq!(q.codel_stats().drop_count, 0);
    }

    #[test]
    fn a_new_sparse_flow_goes_before_backlogged_ones() {
        let mut q = fq(&[]);
        let t = Instant::ZERO;
        for i in 0..20 {
            q.enqueue(t, flow_packet(i, 1, 1500)).unwrap();
        }
        // Flow 1 is served until its deficit runs out, then it is old.
        assert_eq!(q.dequeue(t).unwrap().flow, 1);
        assert_eq!(q.dequeue(t).unwrap().flow, 1);
        q.enqueue(t, flow_packet(100, 2, 100)).unwrap();
        assert_eq!(q.dequeue(t).unwrap().flow, 2);
    }

    #[test]
    fn overflow_drops_a_batch_from_the_fattest_flow() {
        let mut q = fq(&[("limit", "100")]);
        let t = Instant::ZERO;
        for i in 0..90 {
            q.enqueue(t, flow_packet(i, 1, 1000)).unwrap();
        }
        for i in 0..10 {
            q.enqueue(t, flow_packet(100 + i, 2, 100)).unwrap();
        }
        // Packet 101 overflows: flow 1 (90 000 B) loses its head until
        // 45 000 B are gone, capped at 64 packets → 45 packets.
        let e = q.enqueue(t, flow_packet(200, 2, 100)).unwrap_err();
        assert_eq!((e.packet.id, e.packet.flow), (0, 1));
        assert_eq!(q.take_dropped().count(), 44);
        assert_eq!(q.backlog_packets(), 101 - 45);
    }

    #[test]
    fn codel_drops_a_standing_queue() {
        // One flow, 1000 B every 1 µs in, served every 2 µs: the sojourn
        // grows past 5 ms for more than 100 ms, so CoDel drops.
        let mut q = fq(&[]);
        let mut out = 0;
        for i in 0..400_000u64 {
            let t = Instant::from_ns(i * 1000);
            let _ = q.enqueue(t, flow_packet(i, 1, 1000));
            if i % 2 == 0 && q.dequeue(t).is_some() {
                out += 1;
            }
        }
        assert!(q.codel_stats().drop_count > 0);
        assert!(out > 0);
    }

    proptest! {
        #[test]
        fn conservation_and_limit(
            ops in prop::collection::vec((0usize..12, 40u32..1600, 0u8..3), 1..500),
            limit in 1u32..50)
        {
            let l = limit.to_string();
            let mut q = fq(&[("limit", &l), ("flows", "8")]);
            let (mut sent, mut dropped) = (0usize, 0usize);
            for (i, &(f, s, deq)) in ops.iter().enumerate() {
                let t = Instant::from_ns(i as u64 * 1000);
                if q.enqueue(t, flow_packet(i as u64, f, s)).is_err() { dropped += 1; }
                prop_assert!(q.backlog_packets() <= limit as usize);
                for _ in 0..deq { if q.dequeue(t).is_some() { sent += 1; } }
            }
            while q.dequeue(Instant::from_ns(1 << 40)).is_some() { sent += 1; }
            dropped += q.take_dropped().count();
            prop_assert_eq!(sent + dropped, ops.len());
            prop_assert_eq!((q.backlog_packets(), q.backlog_bytes()), (0, 0));
        }
    }
}
