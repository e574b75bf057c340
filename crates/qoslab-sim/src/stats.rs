//! Measurements: per-flow counters, the RTT summary, and the time series
//! that [`RecordSpec`] asks for (nothing else is stored).
//!
//! Definitions (see [`crate::result`]): goodput is payload bytes delivered
//! in order to the receiving application per interval (Wireshark IO graph
//! of the receiver); flow goodput is `bytes_delivered · 8 / (end − start)`
//! (iperf3's receiver figure: receiver bytes over receiver time, where the
//! receiver's time runs until the last byte it received even when that is
//! after the sender's `stop`; see [`FlowStat::result`]).

use crate::config::RecordSpec;
use crate::hist::LogHistogram;
use crate::result::{FlowResult, RttSummary, Series};

/// A flow's RTT samples for its summary: nothing until the first sample
/// (8 bytes in the flow), then a [`LogHistogram`] (bounded memory,
/// percentiles within 0.4 %) or, when `[record] rtt_percentiles = "exact"`,
/// every sample (memory grows with the run).
#[derive(Clone, Debug, Default)]
pub struct RttStat(Option<Box<RttSamples>>);

impl RttStat {
    /// No sample yet.
    pub const EMPTY: RttStat = RttStat(None);
}

#[derive(Clone, Debug)]
enum RttSamples {
    Histogram(LogHistogram),
    Exact(Vec<u64>),
}

impl RttStat {
    #[inline]
    pub fn push(&mut self, rtt_ns: u64, exact: bool) {
        let s = self.0.get_or_insert_with(|| {
            Box::new(if exact {
                RttSamples::Exact(Vec::new())
            } else {
                RttSamples::Histogram(LogHistogram::default())
            })
        });
        match &mut **s {
            RttSamples::Histogram(h) => h.record(rtt_ns),
            RttSamples::Exact(v) => v.push(rtt_ns),
        }
    }

    pub fn summary(&self) -> RttSummary {
        match self.0.as_deref() {
            None => RttSummary::default(),
            Some(RttSamples::Exact(v)) => rtt_summary(v),
            Some(RttSamples::Histogram(h)) => RttSummary {
                samples: h.count(),
                min_ns: h.min(),
                mean_ns: h.mean(),
                p50_ns: h.percentile(50),
                p95_ns: h.percentile(95),
                max_ns: h.max(),
                exact: false,
            },
        }
    }
}

/// What kind of flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
    Ping,
}

impl Proto {
    pub const fn as_str(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Ping => "ping",
        }
    }
}

/// One flow (TCP connection, UDP source or ping probe): where and when, in
/// 48 bytes, plus its counters once it has any (issue 12: a flow that has
/// not started, or never sends, costs no more than that; its label and
/// DSCP live once per `[[traffic]]` entry).
#[derive(Clone, Debug)]
pub struct FlowStat {
    /// Index of the `[[traffic]]` entry it came from.
    pub spec: u32,
    pub protocol: Proto,
    pub from: u32,
    pub to: u32,
    /// Index into the engine's TCP connections, for TCP flows.
    pub tcp: Option<u32>,
    pub start_ns: u64,
    /// When the source stops sending (schedule stop or end of run).
    pub stop_ns: u64,
    counters: Option<Box<FlowCounters>>,
}

/// A flow's counters (all zero until it sends or receives something).
#[derive(Clone, Debug, Default)]
pub struct FlowCounters {
    /// Set when a byte-limited TCP flow finished (all bytes acked).
    pub done_ns: Option<u64>,
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Packets of this flow dropped in the network (policies, loss, loops).
    pub packets_dropped: u64,
    /// TCP data segments (payload > 0, toward the receiver) among them.
    pub data_dropped: u64,
    pub bytes_delivered: u64,
    /// When the receiver last got new in-order payload (0 = never).
    pub last_rx_ns: u64,
    pub rtt: RttStat,
    /// Delivered bytes at the last series sample.
    pub last_sample_bytes: u64,
    /// The TCP sender's retransmitted segments at the last series sample.
    pub last_sample_retransmits: u64,
}

impl FlowCounters {
    const ZERO: FlowCounters = FlowCounters {
        done_ns: None,
        packets_sent: 0,
        packets_received: 0,
        packets_dropped: 0,
        data_dropped: 0,
        bytes_delivered: 0,
        last_rx_ns: 0,
        rtt: RttStat::EMPTY,
        last_sample_bytes: 0,
        last_sample_retransmits: 0,
    };
}

static NO_COUNTERS: FlowCounters = FlowCounters::ZERO;

impl FlowStat {
    pub fn new(
        protocol: Proto,
        spec: u32,
        from: u32,
        to: u32,
        start_ns: u64,
        stop_ns: u64,
    ) -> Self {
        FlowStat {
            spec,
            protocol,
            from,
            to,
            tcp: None,
            start_ns,
            stop_ns,
            counters: None,
        }
    }

    /// The counters (zeros before the first use).
    #[inline]
    pub fn c(&self) -> &FlowCounters {
        self.counters.as_deref().unwrap_or(&NO_COUNTERS)
    }

    /// The counters, allocated at the first use.
    #[inline]
    pub fn c_mut(&mut self) -> &mut FlowCounters {
        self.counters.get_or_insert_with(Default::default)
    }

    /// The flow's summary row; TCP fields are filled by the caller.
    ///
    /// Goodput is counted as iperf3's receiver counts it (iperf3
    /// `iperf_api.c`: the receiver's `sum_received` bytes over the
    /// receiver's own elapsed time, which ends when it has drained the
    /// stream, not when the sender stopped writing): the end is the later of
    /// the sender's stop (or completion) and the last byte received, capped
    /// by the end of the run. Counting bytes that arrive after `stop` over a
    /// span ending at `stop` would report more than the bottleneck carries
    /// (1.49 Mbit/s through a 1 Mbit/s tbf before this rule).
    pub fn result(
        &self,
        id: u32,
        node_names: &[String],
        label: &str,
        end_of_run_ns: u64,
    ) -> FlowResult {
        let c = self.c();
        let end_ns = c
            .done_ns
            .unwrap_or(self.stop_ns)
            .max(c.last_rx_ns)
            .min(end_of_run_ns)
            .max(self.start_ns);
        let span = end_ns - self.start_ns;
        let goodput_bps = if span == 0 {
            0.0
        } else {
            c.bytes_delivered as f64 * 8.0 * 1e9 / span as f64
        };
        FlowResult {
            id,
            protocol: self.protocol.as_str(),
            label: label.to_string(),
            from: node_names[self.from as usize].clone(),
            to: node_names[self.to as usize].clone(),
            start_ns: self.start_ns,
            end_ns,
            bytes_delivered: c.bytes_delivered,
            goodput_bps,
            packets_sent: c.packets_sent,
            retransmits: 0,
            packets_lost: c.packets_sent.saturating_sub(c.packets_received),
            rtt: c.rtt.summary(),
            timeouts: 0,
            fast_recoveries: 0,
            chunks: Vec::new(),
        }
    }
}

/// Min, mean, nearest-rank p50/p95 and max of `samples`.
pub fn rtt_summary(samples: &[u64]) -> RttSummary {
    if samples.is_empty() {
        return RttSummary::default();
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = |p: u64| v[((p * v.len() as u64).div_ceil(100) as usize).clamp(1, v.len()) - 1];
    RttSummary {
        samples: v.len() as u64,
        min_ns: v[0],
        mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
        p50_ns: rank(50),
        p95_ns: rank(95),
        max_ns: v[v.len() - 1],
        exact: true,
    }
}

/// The most flows one run may have. A flow not started is 64 B, but a
/// running TCP flow holds about 3 kB plus buffers that grow with its window,
/// and its result row is built at the end: 200 000 running flows is already
/// about a GB.
pub const MAX_FLOWS: u64 = 200_000;
/// The most memory the recorded series of one run may take (the Rust
/// columns; the Python tables built from them take as much again).
pub const MAX_RECORD_BYTES: u64 = 2_000_000_000;

/// Bytes of one row of each interval series (the columns `Series` holds).
const GOODPUT_ROW_BYTES: u64 = 8 + 4 + 8 + 8;
const CWND_ROW_BYTES: u64 = 8 + 4 + 8 + 8 + 1;
const QUEUE_ROW_BYTES: u64 = 8 + 4 + 8 + 8 + 8;
const COLOR_ROW_BYTES: u64 = 8 + 4 + 4 * 8;
/// Bytes of one row of the ping series.
pub const PING_ROW_BYTES: u64 = 8 + 4 + 4 + 8;

/// What the interval series of a run will hold, in bytes (saturating): one
/// sample every `r.interval` over `duration_ns`, a row per flow (goodput),
/// per TCP connection (cwnd) and per policy (queue, tokens, colours).
pub fn interval_series_bytes(
    r: &RecordSpec,
    duration_ns: u64,
    flows: u64,
    tcp_flows: u64,
    policies: u64,
) -> u64 {
    if !wants_samples(r) || r.interval.as_ns() == 0 {
        return 0;
    }
    let samples = duration_ns / r.interval.as_ns();
    let mut per_sample = 0u64;
    if r.goodput {
        per_sample = per_sample.saturating_add(flows.saturating_mul(GOODPUT_ROW_BYTES));
    }
    if r.cwnd {
        per_sample = per_sample.saturating_add(tcp_flows.saturating_mul(CWND_ROW_BYTES));
    }
    if r.queue || r.tokens {
        per_sample = per_sample.saturating_add(policies.saturating_mul(QUEUE_ROW_BYTES));
    }
    if r.colors {
        per_sample = per_sample.saturating_add(policies.saturating_mul(COLOR_ROW_BYTES));
    }
    samples.saturating_mul(per_sample)
}

/// `bytes` for a message: "3.2 GB", "512 MB".
pub fn fmt_bytes(bytes: u64) -> String {
    let gb = bytes as f64 / 1e9;
    if gb >= 1000.0 {
        format!("{:.3e} GB", gb)
    } else if gb >= 1.0 {
        format!("{gb:.1} GB")
    } else {
        format!("{:.0} MB", bytes as f64 / 1e6)
    }
}

/// Whether any interval series is wanted (then `Sample` events run).
pub fn wants_samples(r: &RecordSpec) -> bool {
    r.goodput || r.cwnd || r.queue || r.tokens || r.colors
}

/// Appends one goodput row per flow for the interval ending at `t_ns`:
/// delivered bytes and the segments the flow's TCP sender retransmitted in
/// the interval (iperf3's per-interval `Retr`, the delta of Linux's
/// `tcpi_total_retrans`, include/uapi/linux/tcp.h). `retransmits(f)` is the
/// sender's running total (0 for UDP and ping).
pub fn sample_goodput(
    series: &mut Series,
    t_ns: u64,
    flows: &mut [FlowStat],
    retransmits: impl Fn(&FlowStat) -> u64,
) {
    for (i, f) in flows.iter_mut().enumerate() {
        let c = f.c();
        let (bytes, last_bytes, last_retr) = (
            c.bytes_delivered,
            c.last_sample_bytes,
            c.last_sample_retransmits,
        );
        series.goodput_time_ns.push(t_ns);
        series.goodput_flow.push(i as u32);
        series.goodput_bytes.push(bytes - last_bytes);
        let total = retransmits(f);
        series
            .goodput_retransmits
            .push(total.saturating_sub(last_retr));
        // A flow with nothing new keeps no counters it did not have.
        if bytes != last_bytes || total != last_retr {
            let c = f.c_mut();
            c.last_sample_bytes = bytes;
            c.last_sample_retransmits = total;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_series_bytes_counts_rows_and_saturates() {
        let r = RecordSpec {
            interval: qoslab_core::Duration::from_ms(100),
            goodput: true,
            rtt: false,
            cwnd: true,
            queue: true,
            tokens: false,
            colors: false,
            ping: false,
            segments: false,
            exact_rtt_percentiles: false,
        };
        // 10 samples x (2 flows x 28 + 2 conns x 29 + 1 policy x 36).
        assert_eq!(interval_series_bytes(&r, 1_000_000_000, 2, 2, 1), 10 * 150);
        let tiny = RecordSpec {
            interval: qoslab_core::Duration::from_ns(1),
            ..r
        };
        assert_eq!(
            interval_series_bytes(&tiny, u64::MAX, u64::MAX, 1, 1),
            u64::MAX
        );
        let none = RecordSpec {
            goodput: false,
            cwnd: false,
            queue: false,
            ..r
        };
        assert_eq!(interval_series_bytes(&none, u64::MAX, 9, 9, 9), 0);
        assert_eq!(fmt_bytes(3_200_000_000), "3.2 GB");
        assert_eq!(fmt_bytes(512_000_000), "512 MB");
    }

    #[test]
    fn rtt_summary_uses_nearest_rank() {
        let s: Vec<u64> = (1..=100).rev().collect();
        let r = rtt_summary(&s);
        assert_eq!(
            (r.samples, r.min_ns, r.p50_ns, r.p95_ns, r.max_ns),
            (100, 1, 50, 95, 100)
        );
        assert!((r.mean_ns - 50.5).abs() < 1e-9);
        assert_eq!(rtt_summary(&[7]).p95_ns, 7);
        assert_eq!(rtt_summary(&[]).samples, 0);
    }

    #[test]
    fn goodput_end_is_done_or_stop_capped_by_the_run() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut f = FlowStat::new(Proto::Udp, 0, 0, 1, 1_000_000_000, u64::MAX);
        f.c_mut().bytes_delivered = 1_000_000;
        let r = f.result(0, &names, "x", 3_000_000_000);
        assert_eq!(r.end_ns, 3_000_000_000);
        assert!((r.goodput_bps - 4_000_000.0).abs() < 1e-6);
        f.c_mut().done_ns = Some(2_000_000_000);
        assert!((f.result(0, &names, "x", 3_000_000_000).goodput_bps - 8_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn goodput_time_runs_to_the_last_byte_received_after_stop() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut f = FlowStat::new(Proto::Tcp, 0, 0, 1, 0, 1_000_000_000);
        f.c_mut().bytes_delivered = 250_000;
        // The queue drains 1 s after the sender stopped: 2 Mbit over 2 s.
        f.c_mut().last_rx_ns = 2_000_000_000;
        let r = f.result(0, &names, "x", 5_000_000_000);
        assert_eq!(r.end_ns, 2_000_000_000);
        assert!((r.goodput_bps - 1_000_000.0).abs() < 1e-6);
        // Still capped by the end of the run.
        assert_eq!(
            f.result(0, &names, "x", 1_500_000_000).end_ns,
            1_500_000_000
        );
        // A last byte before stop leaves the span at stop.
        f.c_mut().last_rx_ns = 500_000_000;
        assert_eq!(
            f.result(0, &names, "x", 5_000_000_000).end_ns,
            1_000_000_000
        );
    }
}
