//! An up-front estimate of what a run will cost — events, recorded series
//! points and peak memory — computed from the validated model before
//! anything big is allocated (issue 15: "an up-front estimate of events,
//! series points and memory for every run, enforced against a budget").
//!
//! The model is a fluid one, deliberately pessimistic where it must bound
//! memory and approximate where it only informs:
//! - every flow offers a rate: UDP its configured rate (on/off: times its
//!   duty cycle), ping one probe per interval, TCP the slowest link of its
//!   path (TCP cannot send faster for long); a link direction carries at
//!   most its own rate of what is offered to it;
//! - packets per hop cost two events (arrival, transmitter done); each data
//!   packet one more at its source (clock, ACK processing or timer);
//! - memory bound: series columns (a `Vec` may hold twice its length while
//!   it grows, and the Python tables copy them once more), per-flow state,
//!   each queue at the smaller of its configured limit and what could pile
//!   up in it (offered minus drained over the run, plus the TCP windows
//!   through it), and packets on the wire (rate × delay). A shaper's or a
//!   tree's limits live inside it: they are read from its description
//!   (every queue it holds, summed: [`described_limit`]), and bound both
//!   the packets queued and the windows a path can hold.

use super::Sim;
use crate::config::{SimConfig, TrafficSpec};
use crate::net::{Net, Routes};
use crate::policy::EgressQueue;
use crate::stats::{self, Proto};
use crate::traffic::IP_UDP_HEADER_BYTES;
use qoslab_core::queue::FifoLimit;

/// What one run is expected to take.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    pub duration_ns: u64,
    pub flows: u64,
    pub tcp_flows: u64,
    pub policies: u64,
    pub link_directions: u64,
    /// Packets put on the wire, summed over hops.
    pub packet_hops: u64,
    /// Engine events (the result's `events` counter).
    pub events: u64,
    /// Rows each recorded series will hold: (series name, rows). Only the
    /// series `[record]` asks for are listed.
    pub series_rows: Vec<(&'static str, u64)>,
    /// Bytes of those rows as the engine stores them.
    pub series_bytes: u64,
    /// Per-flow and per-connection state.
    pub flow_state_bytes: u64,
    /// Queued packets at their bound plus packets on the wire.
    pub packet_bytes: u64,
    /// Upper bound of the run's peak memory (on top of the process's own).
    pub peak_memory_bytes: u64,
}

/// Bytes of one row of the per-sample series (the `Series` columns).
const RTT_ROW_BYTES: u64 = 8 + 4 + 8;
const SEGMENT_ROW_BYTES: u64 = 8 + 4 + 8 + 4 + 1;
/// One RTT sample kept for exact percentiles.
const EXACT_RTT_BYTES: u64 = 8;
/// A running TCP connection: both endpoints, congestion control, timers
/// (measured with `size_of` on the boxed connection, rounded up), plus one
/// sent-segment record per packet of window.
const TCP_CONN_BYTES: u64 = 4096;
const SENT_SEGMENT_BYTES: u64 = 48;
/// A flow's row: its stats, counters and result row.
const FLOW_BYTES: u64 = 512;
/// A packet held: its engine slot (`Pkt` in the arena) and its entry in a
/// queue (`qoslab_core::Packet`), each in a `Vec`/`VecDeque` that may be
/// twice as long as it needs.
const PACKET_SLOT_BYTES: u64 = 2
    * (std::mem::size_of::<super::Pkt>() as u64
        + 8
        + std::mem::size_of::<qoslab_core::Packet>() as u64);
/// Series are built in `Vec`s that double as they grow (up to 2× their
/// length) and copied into the caller's arrays while they still live (3×);
/// the Python tables then copy those arrays once more, with a transient
/// copy while pandas consolidates them (4× in all, the larger phase).
const SERIES_FACTOR: u64 = 4;
/// Columns the Python tables derive per row (`time_s`, and `rtt_ms` or
/// `goodput_bps`: one `f64` each).
const DERIVED_ROW_BYTES: u64 = 16;

impl Sim {
    /// The estimate for this (validated) model of `cfg`.
    pub(crate) fn estimate(&self, cfg: &SimConfig) -> Estimate {
        let dur = self.duration_ns;
        let nl = self.links.len();
        // The model was built from this topology already: it cannot fail.
        let net = Net::build(&cfg.topology).expect("validated");
        let mut dsts: Vec<u32> = self.flows.iter().flat_map(|f| [f.from, f.to]).collect();
        dsts.sort_unstable();
        dsts.dedup();
        let routes = Routes::compute(&net, &dsts);
        let path = |a: u32, b: u32| routes.path(&net, a, b).unwrap_or_default();
        let cap_bps: Vec<f64> = (0..nl).map(|d| self.capacity_bps(d)).collect();

        // Each flow's demand: path, share of the run it is active, data
        // bits/s, packet bytes, reverse packets per data packet (ACKs, ping
        // replies) and their bytes, window bytes.
        struct Demand {
            fwd: Vec<u32>,
            rev: Vec<u32>,
            share: f64,
            active_s: f64,
            bps: f64,
            pkt: f64,
            rev_ratio: f64,
            rev_pkt: f64,
            win: f64,
            tcp: bool,
        }
        let mut demands = Vec::with_capacity(self.flows.len());
        for f in &self.flows {
            let fwd = path(f.from, f.to);
            let rev = path(f.to, f.from);
            let active_s = f.stop_ns.min(dur).saturating_sub(f.start_ns) as f64 / 1e9;
            let share = if dur == 0 {
                0.0
            } else {
                active_s / (dur as f64 / 1e9)
            };
            let slowest = fwd
                .iter()
                .map(|&d| cap_bps[d as usize])
                .fold(f64::INFINITY, f64::min);
            let spec = &cfg.traffic[f.spec as usize];
            // (bits/s of data, packet bytes, reverse packets per data packet,
            // reverse packet bytes, window bytes)
            let (bps, pkt, rev_ratio, rev_pkt, win) = match spec {
                TrafficSpec::UdpCbr {
                    rate,
                    payload_bytes,
                    ..
                } => {
                    let p = (*payload_bytes + IP_UDP_HEADER_BYTES) as f64;
                    (
                        rate.bps() as f64 * p / *payload_bytes as f64,
                        p,
                        0.0,
                        0.0,
                        0.0,
                    )
                }
                TrafficSpec::OnOff {
                    rate,
                    payload_bytes,
                    on,
                    off,
                    ..
                } => {
                    let p = (*payload_bytes + IP_UDP_HEADER_BYTES) as f64;
                    let duty = on.as_ns() as f64 / (on.as_ns() + off.as_ns()).max(1) as f64;
                    let r = rate.bps() as f64 * p / *payload_bytes as f64 * duty;
                    (r, p, 0.0, 0.0, 0.0)
                }
                TrafficSpec::Ping {
                    interval,
                    payload_bytes,
                    ..
                } => {
                    let p = (*payload_bytes + IP_UDP_HEADER_BYTES) as f64;
                    let pps = 1e9 / interval.as_ns().max(1) as f64;
                    (pps * p * 8.0, p, 1.0, p, 0.0)
                }
                TrafficSpec::TcpBulk { tcp, .. } | TrafficSpec::TcpFetch { tcp, .. } => {
                    let p = (tcp.mss + tcp.header_bytes) as f64;
                    let mut r = if slowest.is_finite() { slowest } else { 0.0 };
                    let limit = match spec {
                        TrafficSpec::TcpBulk { bytes, .. } => *bytes,
                        TrafficSpec::TcpFetch {
                            chunks,
                            chunk_bytes,
                            ..
                        } => Some(u64::from(*chunks).saturating_mul(*chunk_bytes)),
                        _ => None,
                    };
                    if let Some(b) = limit {
                        if active_s > 0.0 {
                            r = r.min(b as f64 * 8.0 / active_s * p / tcp.mss as f64);
                        }
                    }
                    let win = if tcp.rcvbuf_autotune {
                        tcp.rcvbuf_max_bytes.max(tcp.receive_window_bytes)
                    } else {
                        tcp.receive_window_bytes
                    } as f64;
                    let win = win.max(tcp.send_buffer_bytes.unwrap_or(0) as f64);
                    let acks = 1.0 / f64::from(tcp.ack_every_segments.max(1));
                    (r, p, acks, f64::from(tcp.header_bytes), win)
                }
            };
            demands.push(Demand {
                fwd,
                rev,
                share,
                active_s,
                bps,
                pkt,
                rev_ratio,
                rev_pkt,
                win,
                tcp: f.protocol == Proto::Tcp,
            });
        }
        // Data offered per direction; a flow then gets, on each direction,
        // its proportional share of what is carried there, and keeps the
        // smallest along its path (what arrives at the end).
        let mut data_bps = vec![0f64; nl];
        for m in &demands {
            for &d in &m.fwd {
                data_bps[d as usize] += m.bps * m.share;
            }
        }
        let mut off_bps = vec![0f64; nl];
        let mut off_pps = vec![0f64; nl];
        let mut window = vec![0f64; nl];

        // Offered by sources that do not back off (UDP, ping): what exceeds
        // a direction's capacity piles up in its queue (or is dropped).
        let mut unresponsive_bps = vec![0f64; nl];
        let mut tcp_window_pkts = 0f64;
        let (mut tcp_data, mut tcp_acks) = (0f64, 0f64);
        for m in &demands {
            let factor = m
                .fwd
                .iter()
                .map(|&d| (cap_bps[d as usize] / data_bps[d as usize].max(1e-9)).min(1.0))
                .fold(1.0, f64::min);
            // TCP runs at its bottleneck share on every hop; UDP arrives at
            // each hop with what the hops before it let through.
            let mut udp_bps = m.bps;
            // A window beyond what the path can hold (wire plus queue
            // limits, both ways) is never in flight.
            let hold: f64 = m
                .fwd
                .iter()
                .chain(&m.rev)
                .map(|&d| self.hold_bytes(d as usize, m.pkt))
                .sum();
            let win = m.win.min(hold);
            for &d in &m.fwd {
                let hop_bps = if m.tcp { m.bps * factor } else { udp_bps };
                off_bps[d as usize] += hop_bps * m.share;
                off_pps[d as usize] += hop_bps / 8.0 / m.pkt * m.share;
                window[d as usize] += win;
                if !m.tcp {
                    unresponsive_bps[d as usize] += udp_bps * m.share;
                    udp_bps *= (cap_bps[d as usize] / data_bps[d as usize].max(1e-9)).min(1.0);
                }
            }
            let end_bps = if m.tcp { m.bps * factor } else { udp_bps };
            let pps = end_bps / 8.0 / m.pkt;
            for &d in &m.rev {
                off_bps[d as usize] += pps * m.rev_ratio * m.rev_pkt * 8.0 * m.share;
                off_pps[d as usize] += pps * m.rev_ratio * m.share;
            }
            if m.tcp {
                tcp_window_pkts += win / m.pkt;
                tcp_data += pps * m.active_s;
                tcp_acks += pps * m.rev_ratio * m.active_s;
            }
        }

        // Who feeds each direction: a host (which can burst its window at
        // once) or other directions (at most their capacity). A queue fed
        // no faster than it drains holds about one packet per feeder.
        let mut from_host = vec![false; nl];
        let mut feeders: Vec<Vec<u32>> = vec![Vec::new(); nl];
        for m in &demands {
            for hops in [&m.fwd, &m.rev] {
                if let Some(&first) = hops.first() {
                    from_host[first as usize] = true;
                }
                for w in hops.windows(2) {
                    let f = &mut feeders[w[1] as usize];
                    if !f.contains(&w[0]) {
                        f.push(w[0]);
                    }
                }
            }
        }

        let dur_s = dur as f64 / 1e9;
        let mut packet_hops = 0f64;
        let mut queued_pkts = 0f64;
        let mut wire_pkts = 0f64;
        let mut carried_pps = vec![0f64; nl];
        for (d, link) in self.links.iter().enumerate() {
            let rate = cap_bps[d];
            let carried = if off_bps[d] > rate && off_bps[d] > 0.0 {
                rate / off_bps[d]
            } else {
                1.0
            };
            let pps = off_pps[d] * carried;
            carried_pps[d] = pps;
            packet_hops += pps * dur_s;
            if off_pps[d] == 0.0 {
                continue;
            }
            let mean_pkt = off_bps[d] / 8.0 / off_pps[d];
            // What could pile up: the excess offered over the run, plus the
            // windows of the TCP flows through here.
            let excess = (unresponsive_bps[d] - rate).max(0.0) / 8.0 * dur_s;
            let mut bound_pkts = (excess + window[d]) / mean_pkt;
            if let Some(limit) = queue_limit(&link.queue) {
                bound_pkts = bound_pkts.min(limit.packets(mean_pkt));
            }
            let feed_bps: f64 = feeders[d].iter().map(|&u| cap_bps[u as usize]).sum();
            if !from_host[d] && feed_bps <= rate {
                bound_pkts = bound_pkts.min(feeders[d].len() as f64);
            }
            queued_pkts += bound_pkts;
            // On the wire: what it carries times its delay (Little's law),
            // no more than its rate × delay in packets of the mean size.
            let wire_cap = link.rate.bps() as f64 / 8.0 / mean_pkt;
            wire_pkts += (pps.min(wire_cap) * link.delay_ns as f64 / 1e9).ceil() + 1.0;
        }
        let flows = self.flows.len() as u64;
        let tcp_flows = self.conns.len() as u64;
        let policies = self.policies.len() as u64;
        let sent_pkts = self.sent_packets(&carried_pps, &path);
        let samples_events =
            if stats::wants_samples(&self.record) && self.record.interval.as_ns() > 0 {
                dur / self.record.interval.as_ns()
            } else {
                0
            };
        // Each packet-hop is at most one arrival and one transmitter-done event;
        // each packet a source sends at most one clock or timer event.
        let events = (2.0 * packet_hops + sent_pkts) as u64 + samples_events + 2 * flows;

        // Series rows.
        let r = &self.record;
        let mut rows: Vec<(&'static str, u64)> = Vec::new();
        let mut series_bytes = stats::interval_series_bytes(r, dur, flows, tcp_flows, policies);
        if stats::wants_samples(r) && r.interval.as_ns() > 0 {
            let n = dur / r.interval.as_ns();
            if r.goodput {
                rows.push(("goodput", n * flows));
            }
            if r.cwnd {
                rows.push(("cwnd", n * tcp_flows));
            }
            if r.queue || r.tokens {
                rows.push(("queue", n * policies));
            }
            if r.colors {
                rows.push(("colors", n * policies));
            }
        }
        if r.rtt {
            rows.push(("rtt", tcp_acks as u64));
            series_bytes = series_bytes.saturating_add(tcp_acks as u64 * RTT_ROW_BYTES);
        }
        if r.segments {
            rows.push(("segments", tcp_data as u64));
            series_bytes = series_bytes.saturating_add(tcp_data as u64 * SEGMENT_ROW_BYTES);
        }
        if r.ping {
            let mut probes = 0u64;
            for t in &cfg.traffic {
                if let TrafficSpec::Ping { interval, .. } = t {
                    probes += dur / interval.as_ns().max(1);
                }
            }
            if probes > 0 {
                rows.push(("ping", probes));
                series_bytes = series_bytes.saturating_add(probes * stats::PING_ROW_BYTES);
            }
        }
        let mut extra = 0u64;
        if r.exact_rtt_percentiles {
            extra = tcp_acks as u64 * EXACT_RTT_BYTES * 2;
        }

        let flow_state_bytes = flows * FLOW_BYTES
            + tcp_flows * TCP_CONN_BYTES
            // A sent-segment record per packet in flight: no more than the
            // windows, nor than the network can hold.
            + (tcp_window_pkts.min(queued_pkts + wire_pkts) * SENT_SEGMENT_BYTES as f64) as u64;
        let packet_bytes = ((queued_pkts + wire_pkts) * PACKET_SLOT_BYTES as f64) as u64;
        let all_rows: u64 = rows.iter().map(|&(_, n)| n).fold(0, u64::saturating_add);
        let peak = series_bytes
            .saturating_mul(SERIES_FACTOR)
            .saturating_add(all_rows.saturating_mul(DERIVED_ROW_BYTES))
            .saturating_add(extra)
            .saturating_add(flow_state_bytes)
            .saturating_add(packet_bytes);
        Estimate {
            duration_ns: dur,
            flows,
            tcp_flows,
            policies,
            link_directions: nl as u64,
            packet_hops: packet_hops as u64,
            events,
            series_rows: rows,
            series_bytes,
            flow_state_bytes,
            packet_bytes,
            peak_memory_bytes: peak,
        }
    }

    /// Data packets sent by the sources over the run (each costs one event
    /// at its source besides its hops): what the first hops carry.
    fn sent_packets(&self, carried_pps: &[f64], path: &dyn Fn(u32, u32) -> Vec<u32>) -> f64 {
        let mut first = vec![false; carried_pps.len()];
        for f in &self.flows {
            if let Some(&d) = path(f.from, f.to).first() {
                first[d as usize] = true;
            }
        }
        let dur_s = self.duration_ns as f64 / 1e9;
        first
            .iter()
            .zip(carried_pps)
            .filter(|(is_first, _)| **is_first)
            .map(|(_, pps)| pps * dur_s)
            .sum()
    }
}

impl Sim {
    /// Bytes direction `d` can hold of `pkt`-byte packets: on its wire
    /// (rate × delay) and in its queue (its configured limits; unbounded
    /// for a shaper or tree that describes none).
    fn hold_bytes(&self, d: usize, pkt: f64) -> f64 {
        let link = &self.links[d];
        let wire = link.rate.bps() as f64 / 8.0 * link.delay_ns as f64 / 1e9 + pkt;
        match queue_limit(&link.queue) {
            Some(l) => wire + l.bytes(pkt),
            None => f64::INFINITY,
        }
    }

    /// What direction `d` can carry, bits/s: its link rate, or less when a
    /// shaper, policy tree or policer on it is configured slower. Their
    /// rates are read from what they describe (every `…bit` value: a
    /// shaper's CIR, a tree's class rates and ceilings, a policer's CIR and
    /// PIR), summed — an upper bound of what they let through, which is
    /// all the estimate needs.
    fn capacity_bps(&self, d: usize) -> f64 {
        let link = &self.links[d];
        let mut cap = link.rate.bps() as f64;
        if !matches!(link.queue, EgressQueue::Fifo(_)) {
            if let Some(r) = described_rate_bps(&link.queue.describe()) {
                cap = cap.min(r);
            }
        }
        for p in [link.egress_policer, link.ingress_policer]
            .into_iter()
            .flatten()
        {
            if let Some(pol) = &self.policies[p as usize].policer {
                if let Some(r) = described_rate_bps(&pol.describe()) {
                    cap = cap.min(r);
                }
            }
        }
        cap
    }
}

/// The sum of the rates (`…bit`, `…bps` values) in a conditioner's
/// description, or `None` when it names none.
fn described_rate_bps(desc: &[(&'static str, String)]) -> Option<f64> {
    let mut sum = 0f64;
    let mut any = false;
    for (_, v) in desc {
        for tok in v.split(|c: char| c.is_whitespace() || "=[](),;".contains(c)) {
            if !(tok.ends_with("bit") || tok.ends_with("bps")) {
                continue;
            }
            if let Ok(r) = qoslab_core::parse::parse_rate(tok) {
                sum += r.bps() as f64;
                any = true;
            }
        }
    }
    (any && sum > 0.0).then_some(sum)
}

/// A queue's configured limits: packets and bytes (a tree or shaper holding
/// several queues: their sums, an upper bound of what it holds at once).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct QueueLimit {
    packets: f64,
    bytes: f64,
}

impl QueueLimit {
    /// At most this many packets of mean size `mean_pkt` (a byte limit can
    /// hold one more, partly, as a FIFO admits a packet while below it).
    fn packets(&self, mean_pkt: f64) -> f64 {
        let by_bytes = if self.bytes > 0.0 {
            self.bytes / mean_pkt.max(1.0) + 1.0
        } else {
            0.0
        };
        self.packets + by_bytes
    }

    /// At most this many bytes of packets up to `max_pkt` bytes.
    fn bytes(&self, max_pkt: f64) -> f64 {
        self.packets * max_pkt + self.bytes
    }
}

/// The limits of the queue on a direction: a FIFO's own; a shaper's or a
/// tree's read from its description ([`described_limit`]); `None` when the
/// description names none (the fluid bound then applies alone).
fn queue_limit(q: &EgressQueue) -> Option<QueueLimit> {
    match q {
        EgressQueue::Fifo(f) => Some(match f.limit() {
            FifoLimit::Packets(n) => QueueLimit {
                packets: f64::from(n),
                bytes: 0.0,
            },
            FifoLimit::Bytes(b) => QueueLimit {
                packets: 0.0,
                bytes: b as f64,
            },
        }),
        _ => described_limit(&q.describe()),
    }
}

/// Description keys that give a queue's limit: tc's `limit` (pfifo /
/// bfifo, tbf, codel, pie, red: `1000p` or `30000B`), `limit_packets`
/// (sfq, fq_codel), `queue_limit` (Cisco shape average, packets),
/// `hold_queue_packets` (Cisco fair-queue), `direct_qlen` (htb's queue for
/// unclassified packets), `buffer` (RFC 2963 RAS shapers, bytes).
const LIMIT_KEYS: [&str; 6] = [
    "limit",
    "limit_packets",
    "queue_limit",
    "hold_queue_packets",
    "direct_qlen",
    "buffer",
];

/// The sum of every queue limit in a conditioner's description, the top
/// level and each nested `key=value` (a tree's classes and their child
/// qdiscs, a prio's bands); `None` when it names none. A value `Np` is
/// packets, one with a size unit bytes; a bare number is packets under a
/// key that says so (`…packets`, `queue_limit`, `direct_qlen`), else
/// bytes.
fn described_limit(desc: &[(&'static str, String)]) -> Option<QueueLimit> {
    let mut l = QueueLimit::default();
    let mut any = false;
    let mut add = |key: &str, value: &str| {
        if !LIMIT_KEYS.contains(&key) {
            return;
        }
        let in_packets = key.ends_with("packets") || key == "queue_limit" || key == "direct_qlen";
        if let Some(n) = value.strip_suffix('p').and_then(|n| n.parse::<u64>().ok()) {
            l.packets += n as f64;
        } else if in_packets && value.bytes().all(|b| b.is_ascii_digit()) {
            l.packets += value.parse::<u64>().map_or(0.0, |n| n as f64);
        } else if let Ok(b) = qoslab_core::parse::parse_size(value) {
            l.bytes += b.get() as f64;
        } else {
            return;
        }
        any = true;
    };
    for (k, v) in desc {
        add(k, v);
        for tok in v.split(|c: char| c.is_whitespace() || "[](),;".contains(c)) {
            if let Some((k, v)) = tok.split_once('=') {
                add(k, v);
            }
        }
    }
    any.then_some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sanity check (ours vs ours): limits are read from every level of a
    /// description, in packets or bytes as written.
    #[test]
    fn described_limits_are_summed_in_their_units() {
        let desc = vec![
            ("kind", "htb".to_string()),
            ("direct_qlen", "1000".to_string()),
            (
                "class",
                "id=20 rate=10mbit child=[kind=sfq limit_packets=127 depth_packets=127]".into(),
            ),
            (
                "class",
                "id=30 child=[kind=fifo limit=30000B drop=tail]".into(),
            ),
            ("band", "[kind=fifo limit=50p]".into()),
            ("queue_limit_from", "profile default".into()),
        ];
        let l = described_limit(&desc).unwrap();
        assert_eq!(l.packets, 1000.0 + 127.0 + 50.0);
        assert_eq!(l.bytes, 30000.0);
        assert_eq!(l.bytes(1500.0), 1177.0 * 1500.0 + 30000.0);
        assert!(described_limit(&[("kind", "fair-queue".into())]).is_none());
    }
}
