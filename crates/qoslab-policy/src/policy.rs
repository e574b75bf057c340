//! Conditioners on a link direction (or an emulated interface), built from
//! the policy specs' string parameters through `qoslab-core`, and their
//! counters.
//!
//! - [`EgressQueue`] is what the transmitter pulls from: a FIFO (the default
//!   device queue, or `PolicySpec::Fifo`) or a shaper (`PolicySpec::Shape`,
//!   which replaces the FIFO). Enum dispatch, no `Box<dyn>`.
//! - [`Policy`] is one reported policy (a row of [`PolicyResult`]): an
//!   optional policer (`PolicySpec::Police` in front of the device FIFO, or
//!   an ingress `MeterSpec`) plus the counters the result and the series need.

use crate::result::PolicyResult;
use crate::spec::{FifoLimit as CfgFifoLimit, FifoSpec, MeterSpec, ShaperSpec};
use crate::tree::PolicyTree;
use crate::PolicyError;
use qoslab_core::meter::AnyMeter;
use qoslab_core::queue::{Fifo, FifoLimit};
use qoslab_core::{
    AnyShaper, ConfigError, Dropped, Instant, Packet, Params, Policer, Shaper, Verdict,
};

/// A core parameter error as a policy error at `path.<param>`.
pub fn core_err(path: &str, e: ConfigError) -> PolicyError {
    PolicyError::new(format!("{path}.{}", e.param), e.message)
}

/// Builds the policer of `spec`; errors name `path.<param>`.
pub fn build_policer(spec: &MeterSpec, path: &str) -> Result<Policer, PolicyError> {
    Policer::from_params(
        &spec.kind,
        Params::new(&spec.kind, spec.params.iter().cloned()),
    )
    .map_err(|e| core_err(path, e))
}

/// Builds the shaper of `spec`; errors name `path.<param>`.
pub fn build_shaper(spec: &ShaperSpec, path: &str) -> Result<AnyShaper, PolicyError> {
    AnyShaper::from_params(
        &spec.kind,
        Params::new(&spec.kind, spec.params.iter().cloned()),
    )
    .map_err(|e| core_err(path, e))
}

/// Builds the FIFO of `spec`; errors name `path.<param>`.
pub fn build_fifo(spec: &FifoSpec, path: &str) -> Result<Fifo, PolicyError> {
    let limit = match spec.limit {
        CfgFifoLimit::Packets(n) => FifoLimit::Packets(n),
        CfgFifoLimit::Bytes(b) => FifoLimit::Bytes(b),
    };
    Fifo::new(limit, spec.head_drop).map_err(|e| core_err(path, e))
}

/// What a link direction's transmitter pulls from.
#[allow(clippy::large_enum_variant)]
pub enum EgressQueue {
    Fifo(Fifo),
    Shaper(AnyShaper),
    /// A policy tree ([`crate::tree`]): one `Box<dyn Shaper>` inside.
    Tree(PolicyTree),
}

impl core::fmt::Debug for EgressQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("EgressQueue")
            .field(&self.describe())
            .finish()
    }
}

impl EgressQueue {
    #[inline]
    pub fn enqueue(&mut self, now: Instant, p: Packet) -> Result<(), Dropped> {
        match self {
            EgressQueue::Fifo(q) => q.enqueue(now, p),
            EgressQueue::Shaper(q) => q.enqueue(now, p),
            EgressQueue::Tree(q) => q.enqueue(now, p),
        }
    }
    #[inline]
    pub fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        match self {
            EgressQueue::Fifo(q) => q.dequeue(now),
            EgressQueue::Shaper(q) => q.dequeue(now),
            EgressQueue::Tree(q) => q.dequeue(now),
        }
    }
    #[inline]
    pub fn next_ready(&self, now: Instant) -> Option<Instant> {
        match self {
            EgressQueue::Fifo(q) => q.next_ready(now),
            EgressQueue::Shaper(q) => q.next_ready(now),
            EgressQueue::Tree(q) => q.next_ready(now),
        }
    }
    #[inline]
    pub fn backlog_packets(&self) -> usize {
        match self {
            EgressQueue::Fifo(q) => q.backlog_packets(),
            EgressQueue::Shaper(q) => q.backlog_packets(),
            EgressQueue::Tree(q) => q.backlog_packets(),
        }
    }
    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        match self {
            EgressQueue::Fifo(q) => q.backlog_bytes(),
            EgressQueue::Shaper(q) => q.backlog_bytes(),
            EgressQueue::Tree(q) => q.backlog_bytes(),
        }
    }
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        match self {
            EgressQueue::Fifo(q) => q.describe(),
            EgressQueue::Shaper(q) => q.describe(),
            EgressQueue::Tree(q) => q.describe(),
        }
    }
    /// Packets the queue dropped outside `enqueue`'s return value (AQM
    /// drops at dequeue inside a tree), appended to `out`.
    #[inline]
    pub fn take_dropped(&mut self, out: &mut Vec<Dropped>) {
        if let EgressQueue::Tree(t) = self {
            t.take_dropped(out);
        }
    }

    /// Bucket tokens in bytes at `now`, where the shaper has a bucket.
    pub fn tokens_bytes(&self, now: Instant) -> Option<i64> {
        match self {
            EgressQueue::Shaper(AnyShaper::Tbf(t)) => Some(t.tokens_bytes(now) as i64),
            EgressQueue::Shaper(AnyShaper::IntervalShaper(s)) => {
                Some(s.credit_bits(now).div_euclid(8))
            }
            _ => None,
        }
    }
}

/// Committed-bucket tokens of a meter as of its last packet, where cheap.
pub fn meter_tokens_bytes(m: &AnyMeter) -> Option<i64> {
    match m {
        AnyMeter::Police(p) => Some(p.tc_bytes() as i64),
        AnyMeter::Srtcm(p) => Some(p.tc_bytes() as i64),
        AnyMeter::Trtcm(p) => Some(p.tc_bytes() as i64),
        AnyMeter::Mef(p) => Some(p.bc_bytes() as i64),
        AnyMeter::LinuxPolice(_) | AnyMeter::Tswtcm(_) => None,
    }
}

/// One reported policy: its conditioner (if a policer) and its counters,
/// kept directly in the [`PolicyResult`] it reports.
#[derive(Clone, Debug)]
pub struct Policy {
    pub policer: Option<Policer>,
    /// The link direction whose egress queue this policy's queue is.
    pub queue_dir: Option<u32>,
    pub res: PolicyResult,
    /// Snapshot at the last series sample (for per-interval colours).
    pub last_color_bytes: [u64; 3],
    pub last_bytes_dropped: u64,
    /// The queue is a policy tree (per-class rows, colours counted as
    /// carried).
    pub tree: bool,
}

impl Policy {
    /// A policy reporting as `name`, of `kind`, configured as `describe`.
    pub fn new(name: String, kind: String, describe: Vec<(&'static str, String)>) -> Policy {
        Policy {
            policer: None,
            queue_dir: None,
            res: PolicyResult {
                name,
                kind,
                packets_in: 0,
                bytes_in: 0,
                packets_dropped: 0,
                bytes_dropped: 0,
                color_packets: [0; 3],
                color_bytes: [0; 3],
                max_queue_packets: 0,
                max_queue_bytes: 0,
                describe: owned(describe),
                classes: Vec::new(),
            },
            last_color_bytes: [0; 3],
            last_bytes_dropped: 0,
            tree: false,
        }
    }

    /// Meters a packet through this policy's policer and counts it.
    #[inline]
    pub fn police(&mut self, now: Instant, p: &Packet) -> Verdict {
        let v = self
            .policer
            .as_mut()
            .expect("police() on a policy with a policer")
            .on_packet(now, p);
        self.count_in(v.color.index(), p.size_bytes);
        v
    }

    /// A packet offered to this policy's queue (no policer in front).
    #[inline]
    pub fn count_in_green(&mut self, size_bytes: u32) {
        self.count_in(0, size_bytes);
    }

    /// A packet offered to a policy tree, in the colour it carries.
    #[inline]
    pub fn count_in_queue(&mut self, p: &Packet) {
        self.count_in(p.color.index(), p.size_bytes);
    }

    #[inline]
    fn count_in(&mut self, color: usize, size_bytes: u32) {
        let r = &mut self.res;
        r.packets_in += 1;
        r.bytes_in += size_bytes as u64;
        r.color_packets[color] += 1;
        r.color_bytes[color] += size_bytes as u64;
    }

    #[inline]
    pub fn count_drop(&mut self, size_bytes: u32) {
        self.res.packets_dropped += 1;
        self.res.bytes_dropped += size_bytes as u64;
    }

    #[inline]
    pub fn observe_queue(&mut self, packets: usize, bytes: u64) {
        let r = &mut self.res;
        r.max_queue_packets = r.max_queue_packets.max(packets as u64);
        r.max_queue_bytes = r.max_queue_bytes.max(bytes);
    }
}

fn owned(d: Vec<(&'static str, String)>) -> Vec<(String, String)> {
    d.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_become_paths_under_the_policy() {
        let spec = ShaperSpec {
            kind: "tbf".into(),
            params: vec![("rate".into(), "0".into()), ("burst".into(), "10kb".into())],
        };
        let e = build_shaper(&spec, "bottleneck.egress").unwrap_err();
        assert!(e.path.starts_with("bottleneck.egress."), "{e}");
        let m = MeterSpec {
            kind: "police".into(),
            params: vec![("cirr".into(), "1mbit".into())],
        };
        let e = build_policer(&m, "links[0].egress_ab").unwrap_err();
        assert!(e.to_string().starts_with("links[0].egress_ab."), "{e}");
        let f = FifoSpec {
            limit: CfgFifoLimit::Bytes(1000),
            head_drop: true,
        };
        assert!(build_fifo(&f, "x")
            .unwrap_err()
            .to_string()
            .starts_with("x.limit"));
    }
}
