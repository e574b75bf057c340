//! What a run produced: summaries that are always there, and the time
//! series that the scenario's [`RecordSpec`](crate::config::RecordSpec)
//! asked for, stored column-wise so the bindings hand them to NumPy/pandas
//! without a per-row conversion.

/// Policy and class rows live in `qoslab-policy`; re-exported here.
pub use qoslab_policy::result::{ClassResult, PolicyResult};

/// Summary statistics of a set of RTT samples, in nanoseconds. Count,
/// min, max and mean are exact; p50 / p95 are nearest-rank percentiles,
/// exact when `exact`, else read from a log-bucket histogram within 0.4 %
/// of the exact value (`qoslab_sim::hist`; `[record] rtt_percentiles`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RttSummary {
    pub samples: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub max_ns: u64,
    pub exact: bool,
}

/// One traffic flow (a TCP connection, a UDP source or a ping probe).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowResult {
    /// Index in [`SimResult::flows`]; series refer to flows by it.
    pub id: u32,
    /// `tcp`, `udp` or `ping`.
    pub protocol: &'static str,
    /// The traffic spec's label.
    pub label: String,
    pub from: String,
    pub to: String,
    pub start_ns: u64,
    /// When the flow stopped sending (or the end of the run).
    pub end_ns: u64,
    /// Payload bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// bytes_delivered · 8 / (end − start), the iperf3 receiver figure.
    pub goodput_bps: f64,
    /// Packets sent by the source (TCP: data segments incl. retransmissions).
    pub packets_sent: u64,
    /// TCP: retransmitted segments (iperf3 `Retr`); UDP/ping: 0.
    pub retransmits: u64,
    /// Packets lost in the network (UDP/ping: sent − received).
    pub packets_lost: u64,
    /// TCP: sender RTT samples (ack_rtt); ping: echo RTTs.
    pub rtt: RttSummary,
    /// TCP: RTO expirations.
    pub timeouts: u64,
    /// TCP: fast-recovery episodes.
    pub fast_recoveries: u64,
    /// `tcp-fetch`: one entry per response begun, in order (empty for
    /// every other kind).
    pub chunks: Vec<ChunkResult>,
}

/// One response of a `tcp-fetch` flow, timed at the server (where the
/// USC-NSL captures were taken): it starts when the request arrives there
/// and ends when the ACK covering the response's last byte arrives there.
/// Counters are the connection's increments between those two instants.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChunkResult {
    /// 0-based chunk number.
    pub index: u32,
    /// The client sent the (first copy of the) request.
    pub request_ns: u64,
    /// The request arrived at the server.
    pub start_ns: u64,
    /// The last byte was acknowledged at the server; `None` if the run
    /// ended first.
    pub end_ns: Option<u64>,
    /// The client had every byte of the response.
    pub client_done_ns: Option<u64>,
    /// Response payload bytes (the configured chunk size).
    pub bytes: u64,
    /// Response bytes acknowledged by the end (or by the end of the run).
    pub bytes_acked: u64,
    /// bytes · 8 / (end − start); 0 while unfinished.
    pub goodput_bps: f64,
    /// Data segments retransmitted by the server during the chunk.
    pub retransmits: u64,
    /// The flow's packets lost in the network (either direction) during
    /// the chunk.
    pub packets_lost: u64,
    /// Retransmission timeouts during the chunk.
    pub timeouts: u64,
    /// Fast-recovery episodes during the chunk.
    pub fast_recoveries: u64,
    /// Times the request itself had to be sent again (it was lost).
    pub request_retries: u32,
}

/// Column-wise time series. Every column of one table has the same length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Goodput: per flow, per interval ending at `time_ns`, with the
    /// segments the flow's TCP sender retransmitted in that interval (0 for
    /// UDP and ping).
    pub goodput_time_ns: Vec<u64>,
    pub goodput_flow: Vec<u32>,
    pub goodput_bytes: Vec<u64>,
    pub goodput_retransmits: Vec<u64>,
    /// RTT samples.
    pub rtt_time_ns: Vec<u64>,
    pub rtt_flow: Vec<u32>,
    pub rtt_ns: Vec<u64>,
    /// cwnd / ssthresh / state per TCP flow per interval. State codes:
    /// 0 open, 1 disorder, 2 recovery, 3 loss (RTO) — Linux's ca_state.
    pub cwnd_time_ns: Vec<u64>,
    pub cwnd_flow: Vec<u32>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<u64>,
    pub cwnd_state: Vec<u8>,
    /// Queue length (and tokens, where the policy has a bucket; -1 when
    /// not) per policy per interval. `queue_policy` indexes
    /// [`SimResult::policies`].
    pub queue_time_ns: Vec<u64>,
    pub queue_policy: Vec<u32>,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    pub tokens_bytes: Vec<i64>,
    /// Per-colour bytes per policy per interval.
    pub color_time_ns: Vec<u64>,
    pub color_policy: Vec<u32>,
    pub color_green_bytes: Vec<u64>,
    pub color_yellow_bytes: Vec<u64>,
    pub color_red_bytes: Vec<u64>,
    pub color_dropped_bytes: Vec<u64>,
    /// Ping replies (`ping_rtt_ns` = -1 never appears: lost probes are
    /// counted in the flow summary only).
    pub ping_time_ns: Vec<u64>,
    pub ping_flow: Vec<u32>,
    pub ping_seq: Vec<u32>,
    pub ping_rtt_ns: Vec<u64>,
    /// Sender segment log for time–sequence graphs.
    pub seg_time_ns: Vec<u64>,
    pub seg_flow: Vec<u32>,
    pub seg_seq: Vec<u64>,
    pub seg_len: Vec<u32>,
    pub seg_retransmit: Vec<bool>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SimResult {
    pub name: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub flows: Vec<FlowResult>,
    pub policies: Vec<PolicyResult>,
    pub series: Series,
    /// Σ goodput of the TCP and UDP flows (not ping).
    pub sum_goodput_bps: f64,
    /// Jain's fairness index over the TCP flows' goodput (1.0 if < 2 flows).
    pub jain_fairness: f64,
    /// Events processed (for the benchmark's events/s).
    pub events: u64,
    /// Of those, `TxDone` events that were stale (another event had already
    /// restarted the transmitter at that instant) and did nothing.
    pub stale_events: u64,
    /// The same events by kind (issue 12: where the events per bottleneck
    /// packet go). Not part of the JSON result: an engine change may alter
    /// it with the results identical.
    pub events_by_kind: EventCounts,
    /// Packets each link direction put on the wire, by direction index
    /// (for events per bottleneck packet in the benchmark).
    pub link_tx_packets: Vec<u64>,
}

/// Events the engine ran, by kind; the fields sum to [`SimResult::events`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// A packet reached the far end of a wire.
    pub arrive: u64,
    /// A transmitter freed up and started its next packet.
    pub tx_done: u64,
    /// A `TxDone` found another one live and did nothing
    /// ([`SimResult::stale_events`]).
    pub tx_done_stale: u64,
    /// A shaper's timer woke its transmitter.
    pub wake: u64,
    /// A shaper wake-up replaced by an earlier one (did nothing).
    pub wake_stale: u64,
    /// A UDP or ping source sent.
    pub source: u64,
    /// A TCP connection started or was stopped.
    pub tcp_start_stop: u64,
    /// A TCP sender's timer ran (RTO, loss probe, reordering, pacing).
    pub tcp_timer_sender: u64,
    /// A TCP receiver's timer ran (delayed ACK, application read).
    pub tcp_timer_receiver: u64,
    /// A TCP timer event that found its endpoint's deadline later (or
    /// gone) and only re-armed: the cost of arming lazily.
    pub tcp_timer_early: u64,
    /// `tcp-fetch` requests and their retries.
    pub fetch: u64,
    /// Series samples.
    pub sample: u64,
}

impl SimResult {
    /// A 64-bit digest of everything the run produced except how the
    /// engine got there (the event counts): every flow row (bytes, packets,
    /// retransmissions, losses, RTT summary, chunks), every policy row,
    /// every recorded series, goodput and fairness, packets per link
    /// direction. Two runs with the same digest produced the same result
    /// (floats by their exact shortest round-trip text). An engine change
    /// meant to leave results bit-identical is checked with it
    /// (`benchmarks/engine_digest.sh`); FNV-1a over the `Debug` text,
    /// streamed, so no copy of a long series is made.
    pub fn digest(&self) -> u64 {
        struct Fnv(u64);
        impl std::fmt::Write for Fnv {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                for b in s.bytes() {
                    self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
                }
                Ok(())
            }
        }
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        use std::fmt::Write as _;
        let _ = write!(
            h,
            "{} {} {} {:?} {:?} {:?} {:?} {:?} {:?}",
            self.name,
            self.seed,
            self.duration_ns,
            self.flows,
            self.policies,
            self.series,
            self.sum_goodput_bps,
            self.jain_fairness,
            self.link_tx_packets
        );
        h.0
    }

    /// One line for `benchmarks/engine_digest.sh`: `name`, the
    /// [`SimResult::digest`], the sums a reader checks first (payload bytes
    /// delivered, retransmissions, packets lost, RTT samples, policy drops),
    /// then the event count, the one figure an engine change may alter
    /// (last, so the script can leave it out of the comparison).
    pub fn digest_line(&self, name: &str) -> String {
        let sum = |f: fn(&FlowResult) -> u64| self.flows.iter().map(f).sum::<u64>();
        let policy_drops: u64 = self.policies.iter().map(|p| p.packets_dropped).sum();
        format!(
            "{name} digest={:016x} delivered_bytes={} retransmits={} lost={} rtt_samples={} policy_drops={} events={}",
            self.digest(),
            sum(|f| f.bytes_delivered),
            sum(|f| f.retransmits),
            sum(|f| f.packets_lost),
            sum(|f| f.rtt.samples),
            policy_drops,
            self.events
        )
    }
}

impl EventCounts {
    /// The kinds as (name, count), in a fixed order.
    pub fn named(&self) -> [(&'static str, u64); 12] {
        [
            ("arrive", self.arrive),
            ("tx_done", self.tx_done),
            ("tx_done_stale", self.tx_done_stale),
            ("wake", self.wake),
            ("wake_stale", self.wake_stale),
            ("source", self.source),
            ("tcp_start_stop", self.tcp_start_stop),
            ("tcp_timer_sender", self.tcp_timer_sender),
            ("tcp_timer_receiver", self.tcp_timer_receiver),
            ("tcp_timer_early", self.tcp_timer_early),
            ("fetch", self.fetch),
            ("sample", self.sample),
        ]
    }

    /// All events.
    pub fn total(&self) -> u64 {
        self.named().iter().map(|x| x.1).sum()
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²); 1.0 for fewer than two values or
/// all zeros.
pub fn jain_fairness(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 1.0;
    }
    let sum: f64 = values.iter().sum();
    let sum_sq: f64 = values.iter().map(|v| v * v).sum();
    if sum_sq == 0.0 {
        return 1.0;
    }
    sum * sum / (values.len() as f64 * sum_sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert_eq!(jain_fairness(&[5.0, 5.0, 5.0, 5.0]), 1.0);
        assert!((jain_fairness(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert_eq!(jain_fairness(&[3.0]), 1.0);
    }
}
