//! Stochastic Fairness Queueing, Linux `sfq` (`net/sched/sch_sfq.c`, `man
//! tc-sfq`), after P. McKenney, "Stochastic Fairness Queuing", INFOCOM 1990,
//! served by Deficit Round Robin (Shreedhar & Varghese).
//!
//! Packets are hashed ([`FlowHash`], keyed by the perturbation) into
//! `divisor` buckets; a bucket in use owns one of `flows` *slots* (a FIFO of
//! at most `depth` packets). Active slots form a ring served round-robin
//! with a byte `allot`: a slot whose allot is ≤ 0 gets `+= quantum` and
//! the round moves on; otherwise its head packet leaves and `allot −= len`
//! (`sfq_dequeue`). A slot that becomes active joins the ring just behind
//! the current one (it is served after the others, `sfq_enqueue`) with
//! `allot = quantum`; a slot that empties leaves the ring and frees its
//! bucket.
//!
//! Drops (`sfq_enqueue`, `sfq_drop`):
//! - no free slot for a new bucket → the packet is dropped;
//! - the slot already holds `depth` packets → the new packet is dropped,
//!   or with `headdrop` the slot's oldest packet is dropped instead;
//! - more than `limit` packets in all → one packet is dropped from the
//!   **longest** slot (its tail, or head with `headdrop`; among equally
//!   long slots the one that reached that length last, the kernel's
//!   `dep[]` list head); when every slot holds one packet, the slot at the
//!   head of the round is dropped and removed.
//!
//! A drop of an already-queued packet is reported by returning that packet
//! from `enqueue` (the new one was accepted).
//!
//! `perturb` seconds (0 = never): the hash key is redrawn from a seeded
//! [`Rng`] every period, at the first enqueue or dequeue at or after it
//! (the kernel's timer), and every queued packet is rehashed in slot order
//! (`sfq_rehash`); packets that no longer fit (no slot, slot full) are
//! dropped and kept for [`Sfq::take_dropped`].
//!
//! Defaults (`sfq_init`, `sfq_change`): quantum = `psched_mtu` = **1514**
//! (clamped to 256..=2²⁰ only when defaulted), divisor **1024** (a power of
//! two ≤ 65536), depth **127** (at most 127), flows **128** (at most
//! 65408, and at most `divisor`), limit **127** packets; a given `limit` is
//! capped at `depth·flows` and caps `flows`; a limit of 1 is refused
//! ("invalid limit").
//!
//! Allot units: this is the current kernel's byte allot. Kernels before
//! 6.13 kept `allot` in 8-byte units (`SFQ_ALLOT_SHIFT`, each packet charged
//! `⌈len/8⌉`), which differs only by that rounding.
//!
//! Missing: `redflowlimit` and its RED keys (per-flow RED/ECN marking), the
//! external-classifier mode (filters choosing the bucket).

use super::tree::inline;
use crate::classify::FlowHash;
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::rng::Rng;
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;
use std::collections::VecDeque;

/// `SFQ_MAX_DEPTH`.
pub const MAX_DEPTH: u32 = 127;
/// `SFQ_MAX_FLOWS` = 0x10000 − 127 − 1.
pub const MAX_FLOWS: u32 = 65408;
const EMPTY: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
struct Slot {
    q: VecDeque<Packet>,
    backlog: u64,
    next: u32,
    hash: u32,
    allot: i64,
    /// When qlen last changed (the kernel's dep[] list order).
    stamp: u64,
}

/// Linux `sfq` qdisc.
#[derive(Clone, Debug)]
pub struct Sfq {
    hash: FlowHash,
    ht: Vec<u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    tail: Option<u32>,
    qlen: u32,
    backlog: u64,
    stamp: u64,
    // Parameters.
    limit: u32,
    maxdepth: u32,
    quantum: u32,
    headdrop: bool,
    perturb_ns: u64,
    next_perturb_ns: u64,
    rng: Rng,
    dropped: Vec<Dropped>,
}

impl Sfq {
    /// Reads `quantum`, `perturb` (seconds), `divisor`, `depth`, `limit`,
    /// `flows`, `headdrop`, `seed` (for the perturbation key; default 0).
    /// `stream` tells components sharing a seed apart.
    pub fn from_params(p: &mut Params, stream: u64) -> Result<Self, ConfigError> {
        let quantum = p.opt_size("quantum")?.map(|b| b.get());
        let perturb = p.opt_time("perturb")?;
        let divisor = p.opt_u64("divisor")?.unwrap_or(1024);
        let depth = p.opt_u64("depth")?;
        let limit = p.opt_packets("limit")?;
        let flows = p.opt_u64("flows")?;
        let headdrop = p.opt_bool("headdrop")?.unwrap_or(false);
        let seed = p.opt_u64("seed")?.unwrap_or(0);
        if divisor == 0 || !divisor.is_power_of_two() || divisor > 65536 {
            return Err(ConfigError::new(
                "divisor",
                format!("{divisor} must be a power of two up to 65536 (kernel: EINVAL)"),
            ));
        }
        let quantum = match quantum {
            Some(q) => u32::try_from(q)
                .ok()
                .filter(|&q| q <= i32::MAX as u32)
                .ok_or_else(|| {
                    ConfigError::new("quantum", format!("{q} is above 2^31-1 (invalid quantum)"))
                })?,
            None => 1514,
        };
        let perturb_ns = perturb.map_or(0, |d| d.as_ns());
        let mut maxflows = flows.map_or(128, |f| f.min(MAX_FLOWS as u64) as u32);
        maxflows = maxflows.min(divisor as u32);
        let maxdepth = depth.map_or(MAX_DEPTH, |d| d.min(MAX_DEPTH as u64) as u32);
        let mut limit_pk = MAX_DEPTH;
        if let Some(l) = limit {
            limit_pk = l.min(maxdepth as u64 * maxflows as u64) as u32;
            maxflows = maxflows.min(limit_pk);
        }
        if limit_pk <= 1 {
            return Err(ConfigError::new(
                "limit",
                "invalid limit (the kernel refuses 1)",
            ));
        }
        if maxflows == 0 || maxdepth == 0 {
            return Err(ConfigError::new(
                "flows",
                "flows and depth must be at least 1",
            ));
        }
        let mut rng = Rng::new(seed, stream);
        let hash = FlowHash::new(divisor as u32, rng.next_u64())?;
        Ok(Sfq {
            hash,
            ht: vec![EMPTY; divisor as usize],
            slots: vec![Slot::default(); maxflows as usize],
            free: (0..maxflows).collect(),
            tail: None,
            qlen: 0,
            backlog: 0,
            stamp: 0,
            limit: limit_pk,
            maxdepth,
            quantum,
            headdrop,
            perturb_ns,
            next_perturb_ns: perturb_ns,
            rng,
            dropped: Vec::new(),
        })
    }

    /// Packets dropped while rehashing at a perturbation.
    pub fn take_dropped(&mut self) -> std::vec::Drain<'_, Dropped> {
        self.dropped.drain(..)
    }

    #[inline]
    fn touch(&mut self, x: u32) {
        self.stamp += 1;
        self.slots[x as usize].stamp = self.stamp;
    }

    /// Links a slot that just got its first packet behind the tail.
    #[inline]
    fn activate(&mut self, x: u32) {
        match self.tail {
            None => self.slots[x as usize].next = x,
            Some(t) => {
                self.slots[x as usize].next = self.slots[t as usize].next;
                self.slots[t as usize].next = x;
            }
        }
        self.tail = Some(x);
        self.slots[x as usize].allot = self.quantum as i64;
    }

    /// Slot for `pkt`'s bucket, taking a free one if needed.
    #[inline]
    fn slot_for(&mut self, pkt: &Packet) -> Option<u32> {
        let h = self.hash.bucket(pkt);
        let x = self.ht[h as usize];
        if x != EMPTY {
            return Some(x);
        }
        let x = self.free.pop()?;
        self.ht[h as usize] = x;
        self.slots[x as usize].hash = h;
        Some(x)
    }

    /// Appends to slot `x`, activating it if it was empty.
    #[inline]
    fn push(&mut self, x: u32, pkt: Packet) {
        let s = &mut self.slots[x as usize];
        s.backlog += pkt.size_bytes as u64;
        s.q.push_back(pkt);
        let first = s.q.len() == 1;
        self.touch(x);
        if first {
            self.activate(x);
        }
    }

    /// `sfq_drop`: one packet from the longest slot.
    fn drop_one(&mut self) -> Option<Packet> {
        let (x, d) = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.q.is_empty())
            .max_by_key(|(_, s)| (s.q.len(), s.stamp))
            .map(|(i, s)| (i as u32, s.q.len()))?;
        let x = if d > 1 {
            x
        } else {
            // Every slot holds one packet: drop the head of the round.
            let t = self.tail.expect("packets imply an active ring");
            let x = self.slots[t as usize].next;
            let nx = self.slots[x as usize].next;
            if nx == x {
                self.tail = None;
            } else {
                self.slots[t as usize].next = nx;
            }
            let h = self.slots[x as usize].hash;
            self.ht[h as usize] = EMPTY;
            self.free.push(x);
            x
        };
        let s = &mut self.slots[x as usize];
        let p = if self.headdrop {
            s.q.pop_front()
        } else {
            s.q.pop_back()
        }?;
        s.backlog -= p.size_bytes as u64;
        self.touch(x);
        self.qlen -= 1;
        self.backlog -= p.size_bytes as u64;
        Some(p)
    }

    /// The kernel's perturbation timer, run lazily at `now`.
    fn maybe_perturb(&mut self, now: Instant) {
        if self.perturb_ns == 0 || now.as_ns() < self.next_perturb_ns {
            return;
        }
        while self.next_perturb_ns <= now.as_ns() {
            self.next_perturb_ns += self.perturb_ns;
        }
        self.hash.set_perturbation(self.rng.next_u64());
        if self.tail.is_none() {
            return;
        }
        // sfq_rehash: empty the slots in index order, then re-insert.
        let mut list = Vec::with_capacity(self.qlen as usize);
        for i in 0..self.slots.len() {
            let s = &mut self.slots[i];
            if s.q.is_empty() {
                continue;
            }
            list.extend(s.q.drain(..));
            s.backlog = 0;
            let h = s.hash;
            self.ht[h as usize] = EMPTY;
            self.free.push(i as u32);
            self.touch(i as u32);
        }
        self.tail = None;
        for p in list {
            match self.slot_for(&p) {
                Some(x) if (self.slots[x as usize].q.len() as u32) < self.maxdepth => {
                    self.push(x, p)
                }
                _ => {
                    self.qlen -= 1;
                    self.backlog -= p.size_bytes as u64;
                    self.dropped.push(Dropped {
                        packet: p,
                        reason: DropReason::QueueFull,
                    });
                }
            }
        }
    }
}

impl Shaper for Sfq {
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.maybe_perturb(now);
        let full = |packet| {
            Err(Dropped {
                packet,
                reason: DropReason::QueueFull,
            })
        };
        let Some(x) = self.slot_for(&pkt) else {
            return full(pkt); // no free slot (QDISC_DROP_MAXFLOWS)
        };
        let s = &mut self.slots[x as usize];
        if s.q.len() as u32 >= self.maxdepth {
            if !self.headdrop {
                return full(pkt);
            }
            let head = s.q.pop_front().expect("a full slot has a head");
            s.backlog = s.backlog - head.size_bytes as u64 + pkt.size_bytes as u64;
            s.q.push_back(pkt);
            self.backlog = self.backlog - head.size_bytes as u64 + pkt.size_bytes as u64;
            return full(head);
        }
        self.backlog += pkt.size_bytes as u64;
        self.qlen += 1;
        self.push(x, pkt);
        if self.qlen <= self.limit {
            return Ok(());
        }
        match self.drop_one() {
            Some(p) => full(p),
            None => Ok(()),
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.maybe_perturb(now);
        let mut t = self.tail?;
        loop {
            let a = self.slots[t as usize].next;
            let s = &mut self.slots[a as usize];
            if s.allot <= 0 {
                s.allot += self.quantum as i64;
                self.tail = Some(a);
                t = a;
                continue;
            }
            let p = s.q.pop_front().expect("ring slots hold packets");
            s.backlog -= p.size_bytes as u64;
            self.qlen -= 1;
            self.backlog -= p.size_bytes as u64;
            if s.q.is_empty() {
                let (h, next) = (s.hash, s.next);
                self.ht[h as usize] = EMPTY;
                self.free.push(a);
                if next == a {
                    self.tail = None;
                } else {
                    self.slots[t as usize].next = next;
                }
            } else {
                s.allot -= p.size_bytes as i64;
            }
            self.touch(a);
            return Some(p);
        }
    }

    work_conserving_counts!();
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.dropped);
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "sfq".to_string()),
            ("limit_packets", self.limit.to_string()),
            ("quantum_bytes", self.quantum.to_string()),
            ("depth_packets", self.maxdepth.to_string()),
            ("flows", self.slots.len().to_string()),
            ("divisor", self.hash.divisor().to_string()),
            ("perturb_ns", self.perturb_ns.to_string()),
            ("headdrop", self.headdrop.to_string()),
            (
                "redflowlimit",
                inline(&[("status", "not modelled".to_string())]),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{backlogged_shares, flow_packet};
    use proptest::prelude::*;

    fn sfq(kv: &[(&str, &str)]) -> Sfq {
        Sfq::from_params(&mut Params::new("sfq", kv.iter().copied()), 0).unwrap()
    }

    #[test]
    fn defaults_and_limits_follow_sfq_change() {
        let q = sfq(&[]);
        let d = q.describe();
        assert_eq!(d[1].1, "127");
        assert_eq!(
            (
                d[2].1.as_str(),
                d[3].1.as_str(),
                d[4].1.as_str(),
                d[5].1.as_str()
            ),
            ("1514", "127", "128", "1024")
        );
        // limit caps flows; depth·flows caps limit.
        let q = sfq(&[("limit", "20")]);
        assert_eq!((q.limit, q.slots.len()), (20, 20));
        let q = sfq(&[("limit", "10000"), ("depth", "10"), ("flows", "4")]);
        assert_eq!(q.limit, 40);
        let q = sfq(&[("divisor", "16"), ("flows", "100")]);
        assert_eq!(q.slots.len(), 16);
        let bad = |kv: &[(&str, &str)]| {
            Sfq::from_params(&mut Params::new("sfq", kv.iter().copied()), 0)
                .err()
                .unwrap()
                .param
        };
        assert_eq!(bad(&[("limit", "1")]), "limit");
        assert_eq!(bad(&[("divisor", "1000")]), "divisor");
    }

    #[test]
    fn backlogged_flows_share_equally() {
        // Enough buckets that 8 flows rarely collide; with a fixed seed
        // they do not.
        let mut q = sfq(&[("limit", "10000"), ("flows", "1024")]);
        let shares = backlogged_shares(
            &mut q,
            &[1500, 1000, 64, 576, 1500, 1500, 300, 1200],
            200_000,
        );
        for s in &shares {
            assert!((s - 0.125).abs() < 0.125 * 0.02, "{shares:?}");
        }
    }

    #[test]
    fn overflow_drops_from_the_longest_slot() {
        let mut q = sfq(&[("limit", "10")]);
        let t = Instant::ZERO;
        for i in 0..8 {
            q.enqueue(t, flow_packet(i, 1, 100)).unwrap();
        }
        q.enqueue(t, flow_packet(8, 2, 100)).unwrap();
        q.enqueue(t, flow_packet(9, 3, 100)).unwrap();
        // The 11th packet (flow 2) overflows: flow 1's tail (id 7) goes.
        let e = q.enqueue(t, flow_packet(10, 2, 100)).unwrap_err();
        assert_eq!(e.packet.id, 7);
        assert_eq!(q.backlog_packets(), 10);
        // Depth limit: a full slot tail-drops the newcomer.
        let mut q = sfq(&[("depth", "2")]);
        q.enqueue(t, flow_packet(0, 1, 100)).unwrap();
        q.enqueue(t, flow_packet(1, 1, 100)).unwrap();
        assert_eq!(
            q.enqueue(t, flow_packet(2, 1, 100)).unwrap_err().packet.id,
            2
        );
        let mut q = sfq(&[("depth", "2"), ("headdrop", "yes")]);
        q.enqueue(t, flow_packet(0, 1, 100)).unwrap();
        q.enqueue(t, flow_packet(1, 1, 100)).unwrap();
        assert_eq!(
            q.enqueue(t, flow_packet(2, 1, 100)).unwrap_err().packet.id,
            0
        );
        assert_eq!(q.dequeue(t).unwrap().id, 1);
    }

    #[test]
    fn perturbation_rehashes_without_reordering_a_flow() {
        let mut q = sfq(&[("perturb", "1s"), ("limit", "1000"), ("flows", "1024")]);
        let t = Instant::ZERO;
        for i in 0..100 {
            q.enqueue(t, flow_packet(i, (i % 5) as usize, 100)).unwrap();
        }
        let k0 = q.hash.perturbation();
        let first = q.dequeue(Instant::from_ns(1_000_000_000)).unwrap();
        assert_ne!(q.hash.perturbation(), k0);
        let mut last = [first.id as i64 - 5; 5];
        let mut n = 1;
        while let Some(p) = q.dequeue(Instant::from_ns(1_500_000_000)) {
            assert!(p.id as i64 > last[p.flow as usize]);
            last[p.flow as usize] = p.id as i64;
            n += 1;
        }
        assert_eq!(n + q.take_dropped().count(), 100);
    }

    proptest! {
        #[test]
        fn conservation_and_limits(
            ops in prop::collection::vec((0usize..20, 40u32..1600, 0u8..3), 1..500),
            limit in 2u32..60, depth in 1u32..10, headdrop in any::<bool>())
        {
            let (l, d) = (limit.to_string(), depth.to_string());
            let mut q = sfq(&[("limit", &l), ("depth", &d), ("flows", "8"), ("headdrop", if headdrop { "1" } else { "0" })]);
            let t = Instant::ZERO;
            let (mut sent, mut dropped, mut bytes_in, mut bytes_out) = (0usize, 0usize, 0u64, 0u64);
            for (i, &(f, s, deq)) in ops.iter().enumerate() {
                bytes_in += s as u64;
                if let Err(d) = q.enqueue(t, flow_packet(i as u64, f, s)) { dropped += 1; bytes_out += d.packet.size_bytes as u64; }
                prop_assert!(q.backlog_packets() <= q.limit as usize);
                prop_assert!(q.slots.iter().all(|s| s.q.len() as u32 <= q.maxdepth));
                for _ in 0..deq {
                    if let Some(p) = q.dequeue(t) { sent += 1; bytes_out += p.size_bytes as u64; }
                }
            }
            while let Some(p) = q.dequeue(t) { sent += 1; bytes_out += p.size_bytes as u64; }
            prop_assert_eq!(sent + dropped, ops.len());
            prop_assert_eq!(bytes_in, bytes_out);
            prop_assert_eq!((q.backlog_packets(), q.backlog_bytes()), (0, 0));
            prop_assert_eq!(q.free.len(), q.slots.len());
        }
    }
}
