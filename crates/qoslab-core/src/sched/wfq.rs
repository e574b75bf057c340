//! Cisco flow-based Weighted Fair Queueing, `fair-queue
//! [congestive-discard-threshold [dynamic-queues]]` (IOS QoS command
//! reference; the scheduler as described in W. Odom & M. Cavanaugh, *Cisco
//! DQOS Exam Certification Guide*, ch. 4 "WFQ").
//!
//! What is modelled:
//! - **Conversations**: packets are hashed on addresses, ports, protocol
//!   and ToS ([`FlowHash`] keyed by the DSCP) into `dynamic-queues`
//!   queues (16…4096, a power of two; default **256**, the IOS default
//!   for interfaces above 512 kbit/s).
//! - **Sequence numbers** (finish tags): `SN = previous SN + weight ×
//!   length`, where the previous SN is that of the last packet queued in
//!   the same conversation, or, when the conversation is empty, the SN of
//!   the last packet sent (the scheduler's virtual time — self-clocked
//!   fair queueing). `weight = 32384 / (IP precedence + 1)` (IOS 12.0(5)T
//!   and later), precedence = DSCP >> 3. The packet with the lowest SN is
//!   sent next (ties in arrival order). Over a backlogged run a
//!   conversation's share is proportional to `precedence + 1`.
//! - **Drops** ("modified tail drop"): with `hold-queue` packets (default
//!   **1000**) in the system the new packet is dropped; with `CDT`
//!   (congestive-discard-threshold, default **64**) or more in its own
//!   conversation, the packet with the highest SN in the whole system is
//!   dropped — the new one if it has the highest SN, else that other
//!   packet (returned from `enqueue`; the new one is queued).
//!
//! Not modelled: reservable queues (RSVP), the link-queue/priority queues
//! IOS keeps for routing protocols, RTP priority, the per-platform hash
//! (conversation numbers differ from a router's), the "one quarter of CDT"
//! hysteresis some documents describe for old IOS, byte-mode hold queues.

use crate::classify::FlowHash;
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The precedence-0 weight (IOS 12.0(5)T and later).
pub const WEIGHT_BASE: u64 = 32384;

/// `32384 / (precedence + 1)`.
#[inline]
pub const fn weight(dscp: u8) -> u64 {
    WEIGHT_BASE / ((dscp >> 3) as u64 + 1)
}

#[derive(Clone, Debug, Default)]
struct Conv {
    q: VecDeque<(Packet, u64, u64)>,
    last_sn: u64,
}

/// Cisco `fair-queue`.
#[derive(Clone, Debug)]
pub struct Wfq {
    convs: Vec<Conv>,
    hash: FlowHash,
    /// (head SN, arrival seq, conversation) of every non-empty conversation.
    heads: BinaryHeap<Reverse<(u64, u64, u32)>>,
    vtime: u64,
    seq: u64,
    qlen: u32,
    backlog: u64,
    cdt: u32,
    hold_queue: u32,
}

impl Wfq {
    /// `cdt` 1..=4096 messages, `dynamic_queues` a power of two in
    /// 16..=4096, `hold_queue` ≥ 1 packets.
    pub fn new(cdt: u32, dynamic_queues: u32, hold_queue: u32) -> Result<Self, ConfigError> {
        if !(1..=4096).contains(&cdt) {
            return Err(ConfigError::new(
                "cdt",
                format!("{cdt} is outside 1..=4096"),
            ));
        }
        if !(16..=4096).contains(&dynamic_queues) || !dynamic_queues.is_power_of_two() {
            return Err(ConfigError::new(
                "dynamic-queues",
                format!("{dynamic_queues}: expected 16, 32, 64, …, 4096"),
            ));
        }
        if hold_queue == 0 {
            return Err(ConfigError::new("hold-queue", "must be at least 1 packet"));
        }
        Ok(Wfq {
            convs: vec![Conv::default(); dynamic_queues as usize],
            hash: FlowHash::new(dynamic_queues, 0)?,
            heads: BinaryHeap::new(),
            vtime: 0,
            seq: 0,
            qlen: 0,
            backlog: 0,
            cdt,
            hold_queue,
        })
    }

    /// Reads `cdt` (aliases `congestive-discard-threshold` and
    /// `queue-limit`, default 64 packets), `dynamic-queues` (default 256),
    /// `hold-queue` (default 1000 packets). `queue-limit` is MQC's: in a
    /// class with `fair-queue` it limits each flow queue (IOS XE
    /// flow-based fair-queue; not verified on a router), which is what
    /// the CDT does here.
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        p.alias("cdt", &["congestive-discard-threshold", "queue-limit"])?;
        let num = |v: Option<u64>, key: &'static str, d: u32| -> Result<u32, ConfigError> {
            v.map_or(Ok(d), |v| {
                u32::try_from(v).map_err(|_| ConfigError::new(key, format!("{v} is too large")))
            })
        };
        let cdt = num(p.opt_packets("cdt")?, "cdt", 64)?;
        let dq = num(p.opt_u64("dynamic-queues")?, "dynamic-queues", 256)?;
        let hq = num(p.opt_packets("hold-queue")?, "hold-queue", 1000)?;
        Self::new(cdt, dq, hq)
    }

    /// The conversation of `pkt`: its 5-tuple and ToS.
    #[inline]
    fn conv_of(&self, pkt: &Packet) -> usize {
        let mut h = self.hash;
        h.set_perturbation(pkt.dscp as u64);
        h.bucket(pkt) as usize
    }

    /// Removes the packet with the highest SN (a conversation's tail).
    fn drop_highest(&mut self) -> Option<Packet> {
        let (c, _) = self
            .convs
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.q.back().map(|x| (i, (x.1, x.2))))
            .max_by_key(|x| x.1)?;
        let conv = &mut self.convs[c];
        let (p, _, _) = conv.q.pop_back()?;
        // The next packet of this conversation continues from the new tail.
        conv.last_sn = conv.q.back().map_or(self.vtime, |x| x.1);
        self.qlen -= 1;
        self.backlog -= p.size_bytes as u64;
        Some(p)
    }
}

impl Shaper for Wfq {
    fn enqueue(&mut self, _now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let drop = |packet| Dropped {
            packet,
            reason: DropReason::QueueFull,
        };
        if self.qlen >= self.hold_queue {
            return Err(drop(pkt));
        }
        let c = self.conv_of(&pkt);
        let conv = &self.convs[c];
        let prev = if conv.q.is_empty() {
            self.vtime
        } else {
            conv.last_sn
        };
        let sn = prev + weight(pkt.dscp) * pkt.size_bytes as u64;
        let mut victim = None;
        if conv.q.len() as u32 >= self.cdt {
            let highest = self
                .convs
                .iter()
                .filter_map(|c| c.q.back().map(|x| x.1))
                .max()
                .unwrap_or(0);
            if sn >= highest {
                return Err(drop(pkt));
            }
            victim = self.drop_highest();
        }
        self.seq += 1;
        let conv = &mut self.convs[c];
        // The conversation's tail may just have been dropped: recompute.
        let prev = if conv.q.is_empty() {
            self.vtime
        } else {
            conv.last_sn
        };
        let sn = prev + weight(pkt.dscp) * pkt.size_bytes as u64;
        if conv.q.is_empty() {
            self.heads.push(Reverse((sn, self.seq, c as u32)));
        }
        conv.q.push_back((pkt, sn, self.seq));
        conv.last_sn = sn;
        self.qlen += 1;
        self.backlog += pkt.size_bytes as u64;
        match victim {
            Some(v) => Err(drop(v)),
            None => Ok(()),
        }
    }

    fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
        while let Some(Reverse((sn, seq, c))) = self.heads.pop() {
            let conv = &mut self.convs[c as usize];
            // Stale entry: the conversation emptied by a drop.
            if conv.q.front().is_none_or(|x| (x.1, x.2) != (sn, seq)) {
                if let Some(&(_, s, q)) = conv.q.front() {
                    if !self.heads.iter().any(|Reverse(h)| h.2 == c) {
                        self.heads.push(Reverse((s, q, c)));
                    }
                }
                continue;
            }
            let (p, _, _) = conv.q.pop_front().expect("checked");
            if let Some(&(_, s, q)) = conv.q.front() {
                self.heads.push(Reverse((s, q, c)));
            }
            self.vtime = sn;
            self.qlen -= 1;
            self.backlog -= p.size_bytes as u64;
            return Some(p);
        }
        None
    }

    work_conserving_counts!();
    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "fair-queue".to_string()),
            ("cdt_packets", self.cdt.to_string()),
            ("dynamic_queues", self.convs.len().to_string()),
            ("hold_queue_packets", self.hold_queue.to_string()),
            ("weight", "32384/(precedence+1)".to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{backlogged_shares, flow_packet};
    use proptest::prelude::*;

    #[test]
    fn odom_sequence_numbers() {
        // Flow of 500-byte precedence-0 packets: SN 16 192 000, 32 384 000 …
        let mut q = Wfq::from_params(&mut Params::new("fq", Vec::<(&str, &str)>::new())).unwrap();
        let t = Instant::ZERO;
        for i in 0..3 {
            q.enqueue(t, flow_packet(i, 1, 500)).unwrap();
        }
        let c = q.conv_of(&flow_packet(0, 1, 500));
        let sns: Vec<u64> = q.convs[c].q.iter().map(|x| x.1).collect();
        assert_eq!(sns, [16_192_000, 32_384_000, 48_576_000]);
        // Odom fig. 4-16: 1000 B at precedence 5 → SN 5 397 000.
        assert_eq!(weight(46) * 1000, 5_397_000);
        assert_eq!(q.describe()[2].1, "256");
        // MQC `queue-limit 200 packets` with `fair-queue`: the per-flow limit.
        let mut p = Params::new("fq", [("queue-limit", "200p"), ("hold-queue", "4000")]);
        let q = Wfq::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(q.describe()[1].1, "200");
        assert_eq!(q.describe()[3].1, "4000");
        let mut p = Params::new("fq", [("queue-limit", "20"), ("cdt", "30")]);
        assert!(Wfq::from_params(&mut p).is_err());
    }

    #[test]
    fn equal_weights_share_equally() {
        let mut q = Wfq::new(4096, 1024, 100_000).unwrap();
        let shares = backlogged_shares(&mut q, &[1500, 1000, 64, 576, 1500], 200_000);
        for s in &shares {
            assert!((s - 0.2).abs() < 0.2 * 0.02, "{shares:?}");
        }
    }

    #[test]
    fn precedence_weights_the_share() {
        // Flows 0..3 at precedence 0..3 get shares ∝ 1:2:3:4.
        let mut q = Wfq::new(4096, 1024, 100_000).unwrap();
        let mut id = 0;
        let t = Instant::ZERO;
        for _ in 0..8 {
            for f in 0..4 {
                let mut p = flow_packet(id, f, 1000);
                p.dscp = (f as u8) << 3;
                q.enqueue(t, p).unwrap();
                id += 1;
            }
        }
        let mut bytes = [0u64; 4];
        for _ in 0..100_000 {
            let p = q.dequeue(t).unwrap();
            bytes[p.flow as usize] += p.size_bytes as u64;
            let mut n = flow_packet(id, p.flow as usize, 1000);
            n.dscp = p.dscp;
            q.enqueue(t, n).unwrap();
            id += 1;
        }
        let total: u64 = bytes.iter().sum();
        for (f, &b) in bytes.iter().enumerate() {
            let want = (f + 1) as f64 / 10.0;
            let got = b as f64 / total as f64;
            assert!((got - want).abs() < want * 0.02, "{f}: {got} vs {want}");
        }
    }

    #[test]
    fn cdt_drops_the_highest_sequence_number() {
        let mut q = Wfq::new(4, 16, 1000).unwrap();
        let t = Instant::ZERO;
        for i in 0..4 {
            q.enqueue(t, flow_packet(i, 1, 1000)).unwrap();
        }
        // Flow 1 is at CDT and its new packet has the highest SN: dropped.
        assert_eq!(
            q.enqueue(t, flow_packet(4, 1, 1000)).unwrap_err().packet.id,
            4
        );
        // A 1500-byte packet of flow 2 queued with a high SN…
        for i in 0..4 {
            q.enqueue(t, flow_packet(10 + i, 2, 1500)).unwrap();
        }
        // …so flow 1's next packet (lower SN) displaces flow 2's tail.
        assert_eq!(
            q.enqueue(t, flow_packet(5, 1, 64)).unwrap_err().packet.id,
            13
        );
        assert_eq!(q.backlog_packets(), 8);
        // Hold queue.
        let mut q = Wfq::new(64, 16, 2).unwrap();
        q.enqueue(t, flow_packet(0, 1, 100)).unwrap();
        q.enqueue(t, flow_packet(1, 2, 100)).unwrap();
        assert!(q.enqueue(t, flow_packet(2, 3, 100)).is_err());
        assert!(Wfq::new(64, 100, 10).is_err());
    }

    proptest! {
        #[test]
        fn conservation_and_limits(
            ops in prop::collection::vec((0usize..10, 40u32..1600, 0u8..64, 0u8..3), 1..400),
            cdt in 1u32..8, hold in 1u32..40)
        {
            let mut q = Wfq::new(cdt, 16, hold).unwrap();
            let t = Instant::ZERO;
            let (mut sent, mut dropped, mut bin, mut bout) = (0usize, 0usize, 0u64, 0u64);
            for (i, &(f, s, dscp, deq)) in ops.iter().enumerate() {
                let mut p = flow_packet(i as u64, f, s);
                p.dscp = dscp;
                bin += s as u64;
                if let Err(d) = q.enqueue(t, p) { dropped += 1; bout += d.packet.size_bytes as u64; }
                prop_assert!(q.backlog_packets() <= hold as usize);
                for _ in 0..deq { if let Some(p) = q.dequeue(t) { sent += 1; bout += p.size_bytes as u64; } }
            }
            while let Some(p) = q.dequeue(t) { sent += 1; bout += p.size_bytes as u64; }
            prop_assert_eq!(sent + dropped, ops.len());
            prop_assert_eq!(bin, bout);
            prop_assert_eq!((q.backlog_packets(), q.backlog_bytes()), (0, 0));
        }
    }
}
