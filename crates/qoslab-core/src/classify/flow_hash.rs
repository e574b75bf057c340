//! Flow hash: a deterministic, perturbable hash of a packet's flow.
//!
//! Modelled on the Linux flow hash that SFQ, FQ-CoDel and tc's `flow`
//! classifier use (`skb_get_hash_perturb` → `__flow_hash_from_keys`,
//! `net/core/flow_dissector.c`): the IPv4 addresses, ports and protocol are
//! first put in a canonical order (`__flow_hash_consistentify`: the lower
//! address first, ports swapped along with them), so both directions of a
//! connection hash alike, then mixed with a secret key — the
//! *perturbation*, which SFQ redraws every `perturb` seconds so that
//! colliding flows part again. A hash of 0 becomes 1, as in the kernel.
//!
//! What differs: Linux mixes with SipHash (keyed by a random
//! `siphash_key_t`), we mix with two rounds of the MurmurHash3 64-bit
//! finaliser keyed by a 64-bit perturbation drawn from a seeded
//! [`crate::rng::Rng`]. Hash values therefore differ from a kernel's, but
//! they are reproducible (same seed, same buckets) and as well spread.
//! Packets without addresses (trace replays leave the tuple zero) hash
//! their [`Packet::flow`] id instead.
//!
//! Reduction to a bucket: [`FlowHash::bucket`] is `hash % divisor` (tc
//! `flow` … `divisor N`; SFQ's `hash & (divisor − 1)` for its power-of-two
//! divisors is the same thing); [`reciprocal_scale`] is the kernel's
//! multiply-shift used by FQ-CoDel (`reciprocal_scale(hash, flows_cnt)`).

use crate::packet::{FiveTuple, Packet};
use crate::params::ConfigError;

/// A keyed flow hash with a bucket count (`divisor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowHash {
    perturbation: u64,
    divisor: u32,
}

#[inline(always)]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// `reciprocal_scale(val, n)` (include/linux/math.h): `⌊val·n / 2³²⌋`,
/// a bucket in `0..n` without a division.
#[inline(always)]
pub fn reciprocal_scale(val: u32, n: u32) -> u32 {
    ((val as u64 * n as u64) >> 32) as u32
}

/// The canonical (direction-free) form of a tuple, as
/// `__flow_hash_consistentify`: lower address first; with equal
/// addresses, lower port first.
#[inline(always)]
fn consistentify(t: &FiveTuple) -> (u32, u32, u16, u16) {
    if t.dst_addr < t.src_addr || (t.dst_addr == t.src_addr && t.dst_port < t.src_port) {
        (t.dst_addr, t.src_addr, t.dst_port, t.src_port)
    } else {
        (t.src_addr, t.dst_addr, t.src_port, t.dst_port)
    }
}

/// The keyed 32-bit flow hash of `pkt` (never 0).
#[inline]
pub fn flow_hash(pkt: &Packet, perturbation: u64) -> u32 {
    let t = &pkt.tuple;
    let (w0, w1) = if *t == FiveTuple::default() {
        (pkt.flow as u64, 0)
    } else {
        let (a, b, sp, dp) = consistentify(t);
        (
            ((a as u64) << 32) | b as u64,
            ((sp as u64) << 32) | ((dp as u64) << 16) | t.protocol as u64 | (1 << 63),
        )
    };
    let h = fmix64(w0 ^ perturbation);
    let h = fmix64(h ^ w1 ^ perturbation.rotate_left(29));
    let h = (h ^ (h >> 32)) as u32;
    if h == 0 {
        1
    } else {
        h
    }
}

impl FlowHash {
    /// A hash into `divisor` buckets (1..=65536, as tc's `divisor`) keyed
    /// by `perturbation`.
    pub fn new(divisor: u32, perturbation: u64) -> Result<Self, ConfigError> {
        if divisor == 0 || divisor > 65536 {
            return Err(ConfigError::new(
                "divisor",
                format!("{divisor} is outside 1..=65536"),
            ));
        }
        Ok(FlowHash {
            perturbation,
            divisor,
        })
    }

    /// Parses `DIVISOR [perturb KEY]`.
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let w: Vec<&str> = spec.split_whitespace().collect();
        let num = |s: &str, what: &str| {
            s.parse::<u64>().map_err(|_| {
                ConfigError::new("hash", format!("expected {what} as an integer, got '{s}'"))
            })
        };
        match w.as_slice() {
            [d] => Self::new(num(d, "the divisor")?.min(u32::MAX as u64) as u32, 0),
            [d, k, p] if k.eq_ignore_ascii_case("perturb") => Self::new(
                num(d, "the divisor")?.min(u32::MAX as u64) as u32,
                num(p, "the perturbation")?,
            ),
            _ => Err(ConfigError::new(
                "hash",
                format!("expected 'hash DIVISOR [perturb KEY]', got 'hash {spec}'"),
            )),
        }
    }

    pub fn divisor(&self) -> u32 {
        self.divisor
    }
    pub fn perturbation(&self) -> u64 {
        self.perturbation
    }
    /// Re-keys the hash (SFQ's periodic perturbation).
    pub fn set_perturbation(&mut self, p: u64) {
        self.perturbation = p;
    }

    /// The 32-bit hash of `pkt` under the current key.
    #[inline]
    pub fn hash(&self, pkt: &Packet) -> u32 {
        flow_hash(pkt, self.perturbation)
    }

    /// `hash % divisor`.
    #[inline]
    pub fn bucket(&self, pkt: &Packet) -> u32 {
        self.hash(pkt) % self.divisor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: u32, dst: u32, sport: u16, dport: u16) -> Packet {
        super::super::tests::pkt(src, dst, sport, dport, 6)
    }

    #[test]
    fn both_directions_hash_alike_and_the_key_changes_buckets() {
        let a = tcp(0x0a00_0001, 0x0a00_0002, 40000, 80);
        let b = tcp(0x0a00_0002, 0x0a00_0001, 80, 40000);
        assert_eq!(flow_hash(&a, 7), flow_hash(&b, 7));
        let moved = (0..1000u16)
            .filter(|&p| {
                let x = tcp(1, 2, p, 80);
                flow_hash(&x, 1) % 1024 != flow_hash(&x, 2) % 1024
            })
            .count();
        assert!(moved > 990, "{moved}");
    }

    #[test]
    fn buckets_are_spread_evenly() {
        // 64k flows into 64 buckets: each gets 1024 ± 15 % (χ² would be
        // finer; this catches a broken mixer).
        let h = FlowHash::new(64, 12345).unwrap();
        let mut n = [0u32; 64];
        for i in 0..65536u32 {
            n[h.bucket(&tcp(0x0a00_0000 | i, 0xc0a8_0001, (1000 + i) as u16, 443)) as usize] += 1;
        }
        assert!(n.iter().all(|&c| (870..1180).contains(&c)), "{n:?}");
        // Trace packets (no tuple) hash their flow id.
        let mut p = Packet::new(0, 100);
        p.flow = 3;
        let mut q = p;
        q.flow = 4;
        assert_ne!(h.hash(&p), h.hash(&q));
    }

    #[test]
    fn reciprocal_scale_maps_into_range() {
        assert_eq!(reciprocal_scale(0, 1024), 0);
        assert_eq!(reciprocal_scale(u32::MAX, 1024), 1023);
        assert_eq!(reciprocal_scale(1 << 31, 1000), 500);
        assert!(FlowHash::new(0, 0).is_err());
        assert!(FlowHash::new(65537, 0).is_err());
        assert!(FlowHash::parse("16 perturb 9").is_ok());
        assert!(FlowHash::parse("x").is_err());
    }
}
