//! What to simulate: plain data, validated by [`crate::run`] when it builds
//! the model. The scenario-file layer (TOML) and the Python bindings fill it
//! in; nothing here parses text except through `qoslab-core`'s [`Params`]
//! when a conditioner is built.
//!
//! [`Params`]: qoslab_core::Params

use qoslab_core::{Duration, Rate};

/// The policy specs live in `qoslab-policy` (shared with the emulator,
/// the trace drivers and the bindings); re-exported under their old paths.
pub use qoslab_policy::spec::{
    ClassSpec, FifoLimit, FifoSpec, FilterSpec, MeterSpec, PolicySpec, QdiscSpec, ShaperSpec,
    TreeSpec,
};

/// One simulation run.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    pub name: String,
    /// Simulated time to run for; traffic still in flight is cut off.
    pub duration: Duration,
    /// Master seed: every component draws from its own stream of it.
    pub seed: u64,
    pub topology: Topology,
    pub traffic: Vec<TrafficSpec>,
    pub record: RecordSpec,
}

/// Nodes and links. Routing is static: shortest path in hops, ties broken
/// by link order (deterministic), unless a node lists explicit routes.
#[derive(Clone, Debug, PartialEq)]
// Built once per run and read at set-up only: boxing buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum Topology {
    Dumbbell(DumbbellSpec),
    Explicit(ExplicitTopology),
}

/// The common case: `senders` hosts `s0..` → access links → router `r1` →
/// bottleneck → router `r2` → access links → `receivers` hosts `d0..`.
/// Node names are exactly those, so traffic and policies can refer to them.
#[derive(Clone, Debug, PartialEq)]
pub struct DumbbellSpec {
    pub senders: u32,
    pub receivers: u32,
    /// Each sender's and receiver's access link (both directions).
    pub access: LinkParams,
    /// Per-sender access one-way delay overrides (index = sender), for
    /// heterogeneous RTTs; missing entries use `access.delay`.
    pub sender_delays: Vec<Duration>,
    /// The r1 — r2 link.
    pub bottleneck: LinkParams,
    /// What r1 does toward r2 (forward data direction).
    pub bottleneck_egress: Option<PolicySpec>,
    /// What r2 does toward r1 (the ACK direction).
    pub bottleneck_reverse_egress: Option<PolicySpec>,
    /// A policer on r1's ingress from the senders' side (applied to
    /// packets arriving at r1 from any access link).
    pub ingress_police: Option<MeterSpec>,
    /// When r1's and r2's timers (shaper wake-ups) fire; hosts keep the
    /// default high-resolution timer. Default: high-res, zero slack.
    pub timer: TimerSpec,
}

/// Rate, delay, loss and the default device queue of one link direction.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkParams {
    pub rate: Rate,
    /// One-way propagation delay (of both directions unless
    /// `delay_reverse` is given).
    pub delay: Duration,
    /// One-way delay of the b → a direction when it differs (asymmetric
    /// paths, e.g. a satellite return link): `delay` is then a → b only.
    /// For the dumbbell's links b → a is the ACK direction (toward the
    /// senders).
    pub delay_reverse: Option<Duration>,
    /// Independent random loss probability per packet, in parts per
    /// million (integer so a scenario is exact and portable).
    pub loss_ppm: u32,
    /// The device queue used when no policy is configured (Linux default
    /// `pfifo_fast` with txqueuelen 1000 → 1000 packets).
    pub queue_limit_packets: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExplicitTopology {
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    /// When this node's timers fire (shaper wake-ups).
    pub timer: TimerSpec,
    /// Explicit routes: destination node name → next-hop node name. Any
    /// destination not listed uses the shortest path.
    pub routes: Vec<(String, String)>,
}

/// A duplex point-to-point link `a` — `b`; each direction has its own
/// transmitter, queue and policy.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    pub params: LinkParams,
    /// Egress policy of `a` toward `b`.
    pub egress_ab: Option<PolicySpec>,
    /// Egress policy of `b` toward `a`.
    pub egress_ba: Option<PolicySpec>,
    /// Policer on `b`'s ingress for packets from `a`.
    pub ingress_police_ab: Option<MeterSpec>,
    /// Policer on `a`'s ingress for packets from `b`.
    pub ingress_police_ba: Option<MeterSpec>,
}

/// When a node's timers (shaper wake-ups) may fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerSpec {
    /// hrtimer-like: fires at the requested time plus `slack`.
    HighRes { slack: Duration },
    /// jiffies-like: fires at the first tick (multiple of 1/hz s) at or
    /// after the requested time.
    Hz(u32),
    /// hrtimer that fires late by a random amount: exponential with mean
    /// `mean`, cut at `max`, drawn per armed expiry from the run's seeded
    /// RNG (one stream per link direction), so runs repeat. See
    /// [`crate::timer`] for what was measured.
    HighResLate { mean: Duration, max: Duration },
}

impl Default for TimerSpec {
    fn default() -> Self {
        TimerSpec::HighRes {
            slack: Duration::ZERO,
        }
    }
}

/// Which host a traffic source runs on, where it sends, and the DSCP its
/// packets leave with (the IP header fields a source chooses). `None`
/// means "spread over the dumbbell": flow *k* of a spec goes from sender
/// `k mod senders` to receiver `k mod receivers`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Endpoints {
    pub from: Option<String>,
    pub to: Option<String>,
    /// DiffServ code point (0..=63) of every packet of the source, both
    /// directions (TCP ACKs and ping replies carry it too). Default 0.
    pub dscp: u8,
}

/// When a source runs. Flow *k* of a multi-flow spec starts at
/// `start + k·stagger`; `stop = None` runs to the end of the simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    pub start: Duration,
    pub stagger: Duration,
    pub stop: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TrafficSpec {
    /// iperf3 `-P flows -t T [-w window] [-n bytes]`: each flow its own TCP
    /// connection, sending as fast as TCP lets it.
    TcpBulk {
        flows: u32,
        endpoints: Endpoints,
        schedule: Schedule,
        /// `-n`: stop after this many bytes per flow.
        bytes: Option<u64>,
        tcp: TcpConfig,
        /// A label shown in tables ("bulk" when empty).
        label: String,
    },
    /// iperf3 `-u -b rate -l size`.
    UdpCbr {
        flows: u32,
        endpoints: Endpoints,
        schedule: Schedule,
        rate: Rate,
        /// UDP payload bytes (iperf3 -l); 28 bytes of IP+UDP header added.
        payload_bytes: u32,
        label: String,
    },
    /// UDP on/off: at `rate` for `on`, silent for `off`, repeating.
    OnOff {
        flows: u32,
        endpoints: Endpoints,
        schedule: Schedule,
        rate: Rate,
        payload_bytes: u32,
        on: Duration,
        off: Duration,
        /// Draw on/off periods from exponentials with these means instead.
        exponential: bool,
        label: String,
    },
    /// Request/response over one persistent TCP connection (an HTTP/1.1
    /// client fetching `chunks` objects of `chunk_bytes`): the client at
    /// `to` asks with a `request_bytes` request, the server at `from`
    /// answers with `chunk_bytes`, and the client waits `pause` after the
    /// last byte of a response before its next request. Per-chunk results
    /// in [`FlowResult::chunks`](crate::result::FlowResult::chunks).
    TcpFetch {
        flows: u32,
        endpoints: Endpoints,
        schedule: Schedule,
        chunks: u32,
        chunk_bytes: u64,
        pause: Duration,
        /// Request payload bytes (IP + TCP headers added).
        request_bytes: u32,
        tcp: TcpConfig,
        label: String,
    },
    /// `ping -i interval -s size`: ICMP echo requests, replies measured.
    Ping {
        endpoints: Endpoints,
        schedule: Schedule,
        interval: Duration,
        /// ICMP payload bytes (ping -s, default 56); 28 bytes header added.
        payload_bytes: u32,
        label: String,
    },
}

/// Congestion-control algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcKind {
    Reno,
    NewReno,
    Cubic,
    Bbr,
    Compound,
}

/// How losses are recovered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryKind {
    /// RFC 5681 fast retransmit / fast recovery: leave recovery on the
    /// first new ACK.
    Reno,
    /// RFC 6582: stay in recovery until the recovery point is acked,
    /// retransmitting on each partial ACK.
    NewReno,
    /// RFC 6675 SACK-based loss recovery (needs `sack = true`).
    Sack,
}

/// Everything about one TCP endpoint pair. [`TcpConfig::profile`] gives
/// the OS bundles; a scenario overrides any field.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    pub profile: String,
    pub cc: CcKind,
    pub recovery: RecoveryKind,
    pub sack: bool,
    /// Maximum segment size (payload bytes per segment).
    pub mss: u32,
    /// IP + TCP header bytes added to every segment on the wire
    /// (40, or 52 with timestamps).
    pub header_bytes: u32,
    /// Initial window in segments (RFC 6928 IW10 for modern stacks).
    pub initial_window_segments: u32,
    /// Initial ssthresh in bytes; `None` = "arbitrarily high" (RFC 5681).
    pub initial_ssthresh_bytes: Option<u64>,
    /// The receiver's advertised window (awnd) in bytes; with window
    /// scaling off it is capped at 65535.
    pub receive_window_bytes: u64,
    /// The sender's socket buffer (`SO_SNDBUF`, iperf3 `-w` on the sending
    /// side): at most this many bytes not yet acknowledged, sent or not,
    /// so in flight never exceeds it whatever the receiver's window. `None`
    /// = Linux's send-buffer autotuning (`tcp_wmem`), which a bulk sender
    /// never runs into: no limit.
    pub send_buffer_bytes: Option<u64>,
    pub window_scaling: bool,
    /// Linux receive-buffer autotuning (`tcp_moderate_rcvbuf = 1`,
    /// `tcp_rcv_space_adjust`, net/ipv4/tcp_input.c; see
    /// `tcp/rcvbuf.rs`): the advertised window starts from
    /// `rcvbuf_initial_bytes` and follows what the receiver consumes per
    /// RTT, up to `rcvbuf_max_bytes`; `receive_window_bytes` is then not
    /// used. Off: a fixed buffer of `receive_window_bytes` (a scenario's
    /// explicit `window`, as SO_RCVBUF locks Linux's buffer).
    pub rcvbuf_autotune: bool,
    /// `SO_RCVBUF` as the application passes it to setsockopt (iperf3
    /// `-w`), Linux profiles only: the kernel doubles it (after capping it
    /// at `net.core.rmem_max`, `sk_setsockopt` in net/core/sock.c) into a
    /// locked `sk_rcvbuf`, and the advertised window follows from that
    /// memory as in `tcp/rcvbuf.rs` (about 1.23× the value at the measured
    /// ratio, less at the handshake), never autotuned. `None`: the window
    /// is `receive_window_bytes` or autotuned.
    pub rcvbuf_lock_bytes: Option<u64>,
    /// `tcp_rmem[1]`, the receive buffer (memory, not payload) a
    /// connection starts with.
    pub rcvbuf_initial_bytes: u64,
    /// `tcp_rmem[2]`, the most autotuning grows it to.
    pub rcvbuf_max_bytes: u64,
    /// Payload per buffer byte of a full-sized segment, in 1/256
    /// (`tp->scaling_ratio` = skb->len / skb->truesize, Linux ≥ 6.5).
    pub rcv_scaling_ratio: u32,
    /// With `rcvbuf_autotune`: the receiving application reads once no
    /// segment has arrived for this long (at most 1 ms after data became
    /// readable): the receive softirq holds the CPU while a burst
    /// arrives. Until then
    /// the data takes buffer space, and what is still queued when a
    /// read measures the last RTT does not count as consumed
    /// (`tcp_rcv_space_adjust`), which is why bursty arrivals keep Linux's
    /// buffer small.
    pub receiver_read_delay: Duration,
    /// RFC 6298 bounds and initial value.
    pub min_rto: Duration,
    /// Compute the RTO as Linux does (`tcp_rtt_estimator`/`tcp_set_rto`:
    /// SRTT + a deviation term never below `min_rto`, so RTO ≥ SRTT +
    /// `min_rto`) instead of RFC 6298 (max(SRTT + 4·RTTVAR, `min_rto`)).
    pub linux_rto: bool,
    pub max_rto: Duration,
    pub initial_rto: Duration,
    /// Delayed-ACK timeout; `None` disables delayed ACKs.
    pub delayed_ack: Option<Duration>,
    /// ACK at least every this many full-sized segments (RFC 5681: 2).
    pub ack_every_segments: u32,
    /// Linux quick-ack: the first this many segments are ACKed at once.
    pub quickack_segments: u32,
    /// Pace transmissions (BBR always paces).
    pub pacing: bool,
    /// F-RTO, RFC 5682 §3 (SACK-enhanced, as Linux `tcp_frto = 2`): after
    /// a retransmission timeout, send new data instead of going back N and
    /// undo the window reduction when never-retransmitted data is
    /// acknowledged (the timeout was spurious).
    pub frto: bool,
    /// RACK time-based loss detection, RFC 8985 §6 (Linux
    /// `tcp_recovery = 1`, net/ipv4/tcp_recovery.c): a segment is lost
    /// when one sent at least a reordering window later was delivered;
    /// replaces the RFC 6675 DupThresh rule. Needs `sack`.
    pub rack: bool,
    /// Tail loss probe, RFC 8985 §7 (Linux `tcp_early_retrans = 3`,
    /// `tcp_send_loss_probe`): a probe segment PTO = 2·SRTT after the last
    /// transmission so that a tail loss is repaired by SACK recovery
    /// instead of an RTO. Needs `sack`.
    pub tlp: bool,
    /// Windows: `rack` and `tlp` apply only to a connection whose
    /// handshake RTT exceeds this (10 ms in `windows10`; see
    /// `tcp/windows.rs` for the sources). `None`: no floor (Linux).
    pub rack_tlp_min_rtt: Option<Duration>,
    /// Limited transmit, RFC 3042: the first two duplicate ACKs each let
    /// one new segment out. Only matters without SACK (with SACK, `pipe`
    /// already excludes the SACKed segments, which is how Linux does it).
    pub limited_transmit: bool,
    /// RFC 6675 §4 NextSeg rule 4, the rescue retransmission: once per
    /// recovery, when nothing else may be sent, retransmit the highest
    /// un-SACKed segment. Linux does not implement it (it has TLP).
    pub rescue_retransmit: bool,
    /// RFC 2018 §8 at a retransmission timeout: "the data sender SHOULD
    /// turn off all of the SACKed bits" (the receiver may have reneged)
    /// and go back N over everything outstanding; SACK blocks on later
    /// ACKs mark segments SACKed again. Off: SACKed segments stay SACKed
    /// and are skipped, as Linux does unless it detects reneging
    /// (`tcp_timeout_mark_lost`, net/ipv4/tcp_input.c). With it, the RTO
    /// marks every segment lost (no RACK sparing, as Linux's reneging
    /// path).
    pub rto_clears_sack: bool,
    /// Restart the window after an idle period longer than the RTO
    /// (Linux sysctl `tcp_slow_start_after_idle`, default 1;
    /// `tcp_slow_start_after_idle_check` in include/net/tcp.h and
    /// `tcp_cwnd_restart` in net/ipv4/tcp_output.c; RFC 5681 §4.1 /
    /// RFC 7661 §2 describe the same restart). Only an application that
    /// pauses (`tcp-fetch`) is ever idle; a bulk sender never is.
    pub slow_start_after_idle: bool,
    /// The receiver enters quick-ack mode on every out-of-order data
    /// segment, as Linux did until 4.18: `tcp_data_queue` called
    /// `tcp_enter_quickack_mode` before queueing an out-of-order segment,
    /// so the next min(rcv_wnd / (2·MSS), 16) segments (`tcp_incr_quickack`,
    /// `TCP_MAX_QUICKACKS`) were each acknowledged at once instead of every
    /// second one or after the delayed-ACK timer. Removed by "tcp: do not
    /// force quickack when receiving out-of-order packets" (E. Dumazet,
    /// 2018, merged for Linux 4.18). A duplicate segment enters quick-ack
    /// mode in every Linux version (the `out_of_window` path), which the
    /// receiver does whenever the profile has quick-acks.
    pub quickack_on_out_of_order: bool,
    /// Without RACK: detect a lost retransmission in fast recovery as Linux
    /// ≤ 4.3 did (`tcp_mark_lost_retrans`, net/ipv4/tcp_input.c, FACK on):
    /// once data sent after the retransmission is SACKed, retransmit it
    /// again instead of waiting for the RTO. Removed in 4.4, where RACK
    /// (`rack`) detects lost retransmissions; RFC 6675 has no such rule.
    /// Only while FACK is on: reordering of more than three packets turns
    /// it off for the connection (`tcp_update_reordering` →
    /// `tcp_disable_fack`), and lost retransmissions then wait for the RTO.
    pub mark_lost_retrans: bool,
    /// Defer new data as Linux 3.x-4.1 `tcp_tso_should_defer`
    /// (net/ipv4/tcp_output.c, "TSO Nagle", J. Heffner) with TSO
    /// autosizing (3.12, `tcp_xmit_size_goal`: skbs of at least
    /// `tcp_min_tso_segs` = 2 segments): in the Open state, when the window
    /// allows only part of the next skb, less than a third of
    /// min(cwnd, snd_wnd) and less than 64 KB, the sender waits for the
    /// next ACK (at most two 4 ms ticks) instead of splitting the skb, so
    /// new data leaves in whole skbs. Today's Linux still defers, under
    /// further conditions (the head's age against SRTT/2, 4.9+; not
    /// evaluated), so only the `linux-3.x` profile turns this on.
    pub tso_defer: bool,
    /// Whether the window may grow is judged at every ACK from the packets
    /// in flight before it, as Linux 3.12-3.15 `tcp_is_cwnd_limited(sk,
    /// in_flight)` (net/ipv4/tcp_cong.c: in flight ≥ cwnd, or at most what
    /// TSO deferral holds back), instead of the per-window latch of 3.16+
    /// (`tp->is_cwnd_limited`, `tcp_cwnd_validate`, "tcp: make cwnd-limited
    /// checks measurement-based, and gentler", N. Cardwell, 2014). Differs
    /// when the application runs out: the latch keeps a window that was
    /// full at its last send "limited" until the data sent then is acked,
    /// a whole queue-drain later on a deep queue. On in `linux-3.x` only
    /// (the USC-NSL lab's server: see validation/usc_truth.py).
    pub cwnd_limited_by_flight: bool,
    /// CUBIC's Reno-friendly estimate counts ACKs, not segments (Linux
    /// before 4.0: `ca->ack_cnt++` in `bictcp_update`; see
    /// [`crate::cc::CubicConfig::reno_estimate_counts_acks`]). On in
    /// `linux-3.x` and `linux-2.6`.
    pub cubic_reno_estimate_counts_acks: bool,
    /// Slow start while cwnd ≤ ssthresh, up to ssthresh + 1 (Linux before
    /// 4.3, `tp->snd_cwnd <= tp->snd_ssthresh` in `bictcp_cong_avoid`; see
    /// [`crate::cc::CubicConfig::slow_start_through_ssthresh`]; CUBIC only).
    /// On in `linux-3.x` and `linux-2.6`.
    pub slow_start_through_ssthresh: bool,
    /// Fast recovery's window reduction as Linux 2.6 did it, before PRR
    /// replaced it in 3.2 ("tcp: Proportional Rate Reduction for TCP",
    /// N. Dukkipati, commit a262f0cdf1f2, 2011): rate-halving
    /// (`tcp_cwnd_down`, `tcp_complete_cwr`, `tcp_moderate_cwnd` in 2.6.32
    /// net/ipv4/tcp_input.c; see `tcp/ratehalving.rs`). Entering recovery
    /// leaves cwnd where it was; every second ACK that delivers data takes
    /// one segment off it until it reaches ssthresh, and every such ACK caps
    /// it at the packets in flight + 1; recovery ends with cwnd =
    /// min(cwnd, ssthresh). SACK recovery only; replaces PRR.
    pub rate_halving: bool,
    /// FACK loss marking (Mathis & Mahdavi, SIGCOMM 1996; Linux `tcp_fack`,
    /// on by default until 4.15, `tcp_update_scoreboard` /
    /// `tcp_mark_head_lost` / `tcp_time_to_recover` / `tcp_timeout_skbs` in
    /// 2.6.32 net/ipv4/tcp_input.c; see `Scoreboard::mark_lost_fack`):
    /// every un-SACKed segment more than `reordering` (3) segments below
    /// the highest SACKed one is lost, instead of RFC 6675's three SACKed
    /// segments above it; with it, a segment sent more than an RTO ago
    /// is lost too. Off once reordering is seen (`tcp_disable_fack`). SACK
    /// recovery without RACK only.
    pub fack: bool,
    /// The receive buffer of Linux 3.4-4.19 at establishment
    /// (`tcp_init_buffer_space` → `tcp_fixup_rcvbuf`, net/ipv4/tcp_input.c,
    /// removed in 4.20 by a337531b942b "tcp: up initial rmem to 128KB and
    /// SYN rwin to around 64KB", Y. Cheng, 2018): `sk_rcvbuf` is raised to
    /// 4 · 2 · `tcp_default_init_rwnd` (20) segments' truesize, whatever
    /// `tcp_rmem[1]`, so the window may grow two segments per segment
    /// received (`tcp_grow_window`) up to about 185 kB from the first
    /// round trip; the SYN offers 20 segments (`tcp_select_initial_window`
    /// with `tcp_default_init_rwnd`). On in `linux-3.x` only.
    pub rcvbuf_fixup: bool,
    /// Payload the application writes on a new connection before its data,
    /// and waits to see acknowledged before it writes the data (0 = none).
    /// iperf3 3.12 (the `tcp-bulk` traffic model, which sets 37): the client
    /// writes the 37-byte cookie (`COOKIE_SIZE`, src/iperf.h) on each data
    /// connection right after `connect()` (`iperf_tcp_connect`,
    /// src/iperf_tcp.c); the server reads it (`iperf_tcp_accept`) and, once
    /// every stream is accepted, sends TEST_START and TEST_RUNNING on the
    /// control connection (`iperf_run_server`, src/iperf_server_api.c); the
    /// client writes data only `if (test->state == TEST_RUNNING)`
    /// (`iperf_run_client`, src/iperf_client_api.c). The receiver
    /// acknowledges the completed preamble at once, standing for the
    /// TEST_RUNNING segment that leaves the server at that moment on the
    /// same path back, and the data waits for that ACK: one round trip
    /// after the handshake, and a policer meets a 37-byte segment first.
    /// Streams of one test all start at TEST_RUNNING, as the simulated
    /// flows of one entry start together.
    pub app_preamble_bytes: u32,
    /// The kernel's tick rate (`CONFIG_HZ`) for the sender's retransmission
    /// timer slot (RTO, tail loss probe, RACK reordering timeout): Linux
    /// keeps them in a jiffies `timer_list`, not an hrtimer, so each is a
    /// whole number of jiffies and fires at a tick of the timer wheel,
    /// rounded up with the wheel level's granularity (see `tcp/jiffies.rs`).
    /// `None`: exact timers. `linux`: 250, the `CONFIG_HZ` of the kernel the
    /// policer truth ran on (6.18.44, `/proc/config.gz`: `CONFIG_HZ_250=y`),
    /// also Debian's default; the Windows profiles: `None` (not modelled).
    /// The Linux receiver's delayed-ACK timer runs on the same clock
    /// (`tcp/delack.rs`).
    pub timer_hz: Option<u32>,
    /// With `timer_hz`: the timer wheel of Linux ≥ 4.8 ("timers: Switch
    /// to a non-cascading wheel", T. Gleixner, 2016), whose upper levels
    /// keep coarse buckets and round a timer's expiry up to them (an RTO of
    /// 63-503 jiffies to 8 jiffies). `false`: the cascading wheel before
    /// it, where a timer runs at the very jiffy it asked for (`linux-3.x`,
    /// `linux-2.6`).
    pub timer_wheel_levels: bool,
    /// New data fills the receive window to its last byte, the segment at
    /// the window's edge shorter than the MSS, as Linux's `tcp_write_xmit`
    /// does since 2012 (`tcp_mss_split_point` keeps the partial last
    /// segment unless Nagle's Minshall rule holds it; E. Dumazet, "tcp:
    /// allow splice() to build full TSO packets"). See `tcp/wndsplit.rs`.
    /// `false`: only whole segments while data is in flight (Linux 2.6.32,
    /// whose `tcp_mss_split_point` rounds down to the MSS; the Windows
    /// profiles, whose rule is not published).
    pub window_edge_partial: bool,
}

impl TcpConfig {
    /// iperf3's cookie (`COOKIE_SIZE`, src/iperf.h, 3.12): the 36
    /// characters of `make_cookie` and the terminating NUL, written first on
    /// every data connection; the `tcp-bulk` (iperf3) traffic model's
    /// [`app_preamble_bytes`](TcpConfig::app_preamble_bytes).
    pub const IPERF3_COOKIE_BYTES: u32 = 37;

    /// The named OS profile: `linux`, `linux-3.x`, `windows10`, `windows7`,
    /// `windows-xp`.
    ///
    /// Sources of the defaults:
    /// - `linux` (6.x): CUBIC (`net/ipv4/tcp_cubic.c`, default since
    ///   2.6.19), SACK on (`tcp_sack=1`), IW10 (`TCP_INIT_CWND`, RFC 6928),
    ///   `TCP_RTO_MIN` 200 ms, `TCP_TIMEOUT_INIT` 1 s (RFC 6298 §2.1),
    ///   `TCP_RTO_MAX` 120 s, delayed-ACK minimum `TCP_ATO_MIN` 40 ms,
    ///   quick-ack for the first 16 segments (`TCP_MAX_QUICKACKS`),
    ///   timestamps on (header 20 + 20 + 12 = 52 B, MSS 1448 on Ethernet),
    ///   receive buffer autotuned from `tcp_rmem[1]` = 128 KiB up to
    ///   `tcp_rmem[2]` = 32 MiB (the 6.18 defaults, read on the machine of
    ///   the ground truth: `sysctl net.ipv4.tcp_rmem` = 4096 131072
    ///   33554432) with window scaling; `scaling_ratio` 158/256, measured
    ///   on the emulator's veth path (the kernel advertised 80896 B =
    ///   131072 · 158/256 once its buffer capped the window); with
    ///   autotuning off, a fixed 6 MiB window (`receive_window_bytes`).
    /// - `windows10`: the ISR 4000 source (the article "Limit the speed of
    ///   traffic. Policer or shaper, what to use on the net?", its Windows 10
    ///   `Get-NetTCPSetting` output): Compound TCP, initial cwnd
    ///   10 MSS (`Get-NetTCPSetting InitialCongestionWindow`), ssthresh =
    ///   awnd = 64512 B at start; MinRto 300 ms and InitialRto 3 s
    ///   (`Get-NetTCPSetting` defaults), delayed ACK 200 ms
    ///   (TcpDelAckTicks = 2), no timestamps (MSS 1460, 40 B headers).
    /// - `windows7` (the Windows 7 / Server 2008 R2 stack): Compound TCP is
    ///   off by default on the client ("Add-On Congestion Control Provider:
    ///   none" in `netsh int tcp show global`; CTCP "disabled by default in
    ///   computers running Windows Vista and 7"), so NewReno (RFC 3782) with
    ///   SACK-based recovery (RFC 3517, listed in Microsoft's "New Networking
    ///   Features in Windows Server 2008 and Windows Vista"); `netsh
    ///   interface tcp show supplemental` on 2008 R2 (A. Davies, "Increasing
    ///   the TCP Initial Congestion Window on Windows 2008 Server R2",
    ///   2011-11-21): Minimum RTO 300 ms, Initial Congestion Window 2 MSS,
    ///   Delayed Ack Timeout 200 ms; InitialRto 3 s; receive-window
    ///   auto-tuning ("normal") with window scaling, modelled as a 16 MiB
    ///   window (auto-tuning's ceiling); timestamps off (`Tcp1323Opts`
    ///   default), so MSS 1460 and 40 B headers.
    /// - `windows-xp`: NewReno-style recovery with SACK, IW 2 segments
    ///   (RFC 2581-era), 64 KB window without scaling, MinRto 300 ms,
    ///   InitialRto 3 s, delayed ACK 200 ms.
    ///
    /// - `linux-3.x`: the Linux of 2013–2015 (3.10 to 4.1), e.g. the lab
    ///   kernel of the USC-NSL policing captures (docs/validation.md says
    ///   what in the captures dates it). As `linux` except where the
    ///   history of net/ipv4 says otherwise:
    ///   - no RACK: RACK loss detection came with Linux 4.4 (commit
    ///     4f41b1c58a32 "tcp: use RACK to detect losses", Y. Cheng, 2015-10,
    ///     on by default through `tcp_recovery = 1`); before it a segment was lost by the
    ///     duplicate-ACK/SACK threshold (`tcp_update_scoreboard`, FACK on
    ///     by default until 4.15), a lost retransmission only by
    ///     `tcp_mark_lost_retrans` (removed in 4.4 with RACK) or the RTO —
    ///     so `rack = false` with `mark_lost_retrans` and FACK marking
    ///     (`fack`, `tcp_fack = 1`, the default of every 3.x kernel; off
    ///     for the connection once reordering beyond 3 segments is seen,
    ///     `tcp_disable_fack`). Measured against the 53 USC-NSL captures
    ///     when FACK was turned on: per capture goodput 39 → 39,
    ///     retransmissions 39 → 37, RTO-class 28 → 30 hits; per chunk
    ///     goodput 145 → 146, retransmissions 148 → 145 (kept because the
    ///     kernel had it, not for the counts);
    ///   - TSO deferral (`tso_defer`): new data leaves in whole skbs of
    ///     at least two segments (`tcp_tso_should_defer` with 3.12's TSO
    ///     autosizing); the lab's server sends new data in pairs after
    ///     99.4 % of ACKs (docs/validation.md);
    ///   - window growth gated per ACK by the flight before it
    ///     (`cwnd_limited_by_flight`, 3.12-3.15 `tcp_is_cwnd_limited(sk,
    ///     in_flight)`): the lab's server starts a chunk with about the
    ///     window its last one ended with, where 3.16+'s latch would have
    ///     grown it through the multi-second queue drain in between
    ///     (validation/usc_truth.py DIAGNOSIS); with 3.12's autosizing
    ///     this narrows the lab kernel to 3.12-3.15;
    ///   - TLP on: tail loss probe since 3.10 (`tcp_early_retrans = 3`,
    ///     "tcp: Tail loss probe (TLP)", N. Dukkipati, 2013); PRR since 3.2
    ///     ("tcp: Proportional Rate Reduction", 2011); F-RTO as today
    ///     (`tcp_frto = 2`, rewritten in 3.10); IW10 since 2.6.39; CUBIC
    ///     with HyStart since 2.6.29; RTO min 200 ms; the early retransmit
    ///     of 3.5 (RFC 5827) is not modelled;
    ///   - the receiver quick-acks after every out-of-order segment
    ///     ([`TcpConfig::quickack_on_out_of_order`], until 4.18);
    ///   - the reader gets data through the prequeue (`tcp_prequeue`, the
    ///     `ucopy` fast path of `tcp_rcv_established`, removed in 4.14):
    ///     copied before the ACK decision, so `receiver_read_delay` is 0
    ///     and a flight is acknowledged every second segment, as the lab
    ///     client did (see `TcpReceiver::cleanup_after_copy`);
    ///   - the receive buffer raised at establishment to 20 segments'
    ///     truesize × 8 (`rcvbuf_fixup`, `tcp_fixup_rcvbuf`, 3.4-4.19) and
    ///     a 20-segment SYN window: the lab client's SYN offers 29200 B =
    ///     20 × 1460 and its window then grows two segments per segment to
    ///     a 184832 B plateau (shape10M-q100k, 1.29 s), where the 6.18
    ///     functions alone would hold it at 42 kB for two round trips;
    ///   - CUBIC's Reno-friendly estimate counts ACKs
    ///     (`cubic_reno_estimate_counts_acks`: `ca->ack_cnt++` in 3.x
    ///     `bictcp_update`, made `+= acked` by the stretch-ACK fixes of
    ///     4.0): the lab's server grew its window 0.15-0.17 segment per
    ///     round trip between random losses, the per-segment estimate 0.44
    ///     (validation/usc_truth.py DIAGNOSIS);
    ///   - receive-buffer autotuning from `tcp_rmem` = 4096 87380 6291456
    ///     with `tcp_adv_win_scale = 1` (half the buffer is window: scaling
    ///     ratio 128/256), the defaults since 3.4 (commit b49960a05e32 "tcp:
    ///     change tcp_adv_win_scale and tcp_rmem\[2\]", E. Dumazet, 2012);
    ///     modelled with the 6.18 autotuning functions.
    ///
    /// - `linux-2.6`: Linux 2.6.32 (December 2009, the long-term kernel of
    ///   RHEL 6, Debian 6 and Ubuntu 10.04, under many published
    ///   experiments of 2010–2013), before PRR, early retransmit, TLP and
    ///   RACK. As `linux` except:
    ///   - `rate_halving` instead of PRR (PRR: 3.2, commit a262f0cdf1f2);
    ///   - `fack` (`sysctl_tcp_fack` = 1, FACK marking in
    ///     `tcp_update_scoreboard`; off by default from 4.15);
    ///   - `mark_lost_retrans` (`tcp_mark_lost_retrans`, 2.6.22–4.3);
    ///   - no RACK (4.4), no TLP (3.10, `tcp_early_retrans`); early
    ///     retransmit (3.5, RFC 5827) does not exist either (not modelled
    ///     anywhere);
    ///   - initial window 3 (`tcp_init_cwnd`, RFC 3390: 3 segments for an
    ///     MSS of 1096–1460 B; IW10 came in 2.6.39, commit 442b9635c569
    ///     "tcp: increase the initial congestion window to 10");
    ///   - initial RTO 3 s (`TCP_TIMEOUT_INIT` = 3·HZ; 1 s from 3.1, commit
    ///     9ad7c049f0f7 "tcp: RFC2988bis + taking RTT sample from 3WHS for
    ///     the passive open side", J. Chu, 2011); RTO min 200 ms and max
    ///     120 s as today, with Linux's estimator (`tcp_rtt_estimator`);
    ///   - CUBIC (default since 2.6.19) with HyStart (2.6.29, on,
    ///     `hystart_detect` = 3): the same `cubic` as `linux` — the
    ///     3.x-era CUBIC/HyStart fixes are not told apart, except the
    ///     per-ACK Reno-friendly estimate (`cubic_reno_estimate_counts_acks`,
    ///     2.6.32's `bictcp_update` counts ACKs as 3.x's does);
    ///   - the receiver quick-acks every out-of-order segment (until 4.18);
    ///   - window growth judged per ACK from the flight before it
    ///     (`cwnd_limited_by_flight`: 2.6.32 `tcp_is_cwnd_limited(sk,
    ///     in_flight)`, net/ipv4/tcp_cong.c, whose TSO clause is `left ·
    ///     mss < sk_gso_max_size` (64 KB) before 3.12's autosizing);
    ///   - F-RTO on (`sysctl_tcp_frto` = 2, the SACK-enhanced variant since
    ///     2.6.24; modelled with today's F-RTO);
    ///   - receive-buffer autotuning from `tcp_rmem` = 4096 87380 4194304
    ///     (`tcp_init`: max 4 MiB) with `tcp_adv_win_scale` = 2 (three
    ///     quarters of the buffer is window: scaling ratio 192/256; 1 from
    ///     3.4, commit b49960a05e32); modelled with the 6.18 autotuning
    ///     functions;
    ///   - no TSO deferral (`tso_defer` is the 3.12-autosizing variant; a
    ///     2.6 TSO sender defers too, with 64 KB skbs, not modelled).
    ///   - whole segments only at the receive window's edge
    ///     (`window_edge_partial` off: 2.6.32's `tcp_mss_split_point`
    ///     returns `needed - needed % mss_now`; the partial last segment
    ///     came in 2012, see `tcp/wndsplit.rs`).
    ///
    /// `linux_rto`: true for `linux` (net/ipv4/tcp_input.c), false for the
    /// Windows profiles (RFC 6298 with MinRto 300 ms; Windows' estimator is
    /// not published).
    ///
    /// Loss-recovery extensions (`frto`, `rack`, `tlp`,
    /// `limited_transmit`, `rescue_retransmit`):
    /// - `linux`: F-RTO on (`tcp_frto` default 2, net/ipv4/tcp_ipv4.c),
    ///   RACK on (`tcp_recovery` default `TCP_RACK_LOSS_DETECTION`), TLP on
    ///   (`tcp_early_retrans` default 3), limited transmit inherent (Linux
    ///   counts duplicate ACKs as SACKed segments, `tcp_add_reno_sack`), no
    ///   rescue retransmission.
    /// - `windows10`: F-RTO on since Vista (RFC 4138 listed among the Next
    ///   Generation TCP/IP stack's "enhancements for high-loss
    ///   environments", Microsoft TechNet cc754287); RACK and TLP on since
    ///   the Anniversary Update, 1607 (Microsoft Networking blog "Announcing:
    ///   New Transport Advancements in the Anniversary Update for Windows 10
    ///   and Windows Server 2016", 2016) — modelled with the RFC 8985
    ///   constants, Windows' own are not published — but only on a
    ///   connection whose handshake RTT exceeds 10 ms (`rack_tlp_min_rtt`;
    ///   "RACK and TLP enabled for > 10 msec RTT connections",
    ///   P. Balasubramanian, "Updates on Windows TCP", IETF 100 TCPM,
    ///   2017; see `tcp/windows.rs`); limited transmit on
    ///   (our choice: the Vista stack implements RFC 3517, whose companion
    ///   it is); no rescue retransmission (not documented).
    /// - `windows7`: F-RTO (RFC 4138 is in the Vista stack, see above) and
    ///   limited transmit (RFC 3042, same list); no RACK or TLP (they came
    ///   with Windows 10 1607, see above), no rescue retransmission.
    /// - `windows-xp`: none of them (all post-date the XP stack).
    ///
    /// `rto_clears_sack` (RFC 2018 §8) is off in every profile: Linux
    /// keeps the SACKed marks across a timeout unless it detects reneging
    /// (`tcp_timeout_mark_lost`, net/ipv4/tcp_input.c); what Windows does
    /// is not published. Tried on the ISR 4000 police case (the hypothesis
    /// that spurious go-back-N after RTOs wastes policer tokens), it moved
    /// neither the sum (19.70 vs 19.69 Mbit/s, published 17.1) nor the
    /// retransmitted share (11.0 % both, published 12.7 %): nearly every
    /// segment SACKed at a timeout is reported again by the next ACK's
    /// SACK blocks, so there was no evidence to switch it on.
    pub fn profile(name: &str) -> Option<TcpConfig> {
        let linux = TcpConfig {
            profile: "linux".into(),
            cc: CcKind::Cubic,
            recovery: RecoveryKind::Sack,
            sack: true,
            mss: 1448,
            header_bytes: 52,
            initial_window_segments: 10,
            initial_ssthresh_bytes: None,
            receive_window_bytes: 6 * 1024 * 1024,
            send_buffer_bytes: None,
            window_scaling: true,
            rcvbuf_autotune: true,
            rcvbuf_lock_bytes: None,
            rcvbuf_initial_bytes: 131_072,
            rcvbuf_max_bytes: 32 * 1024 * 1024,
            rcv_scaling_ratio: 158,
            receiver_read_delay: Duration::from_us(50),
            min_rto: Duration::from_ms(200),
            linux_rto: true,
            max_rto: Duration::from_secs(120),
            initial_rto: Duration::from_secs(1),
            delayed_ack: Some(Duration::from_ms(40)),
            ack_every_segments: 2,
            quickack_segments: 16,
            pacing: false,
            frto: true,
            rack: true,
            tlp: true,
            rack_tlp_min_rtt: None,
            limited_transmit: true,
            rescue_retransmit: false,
            rto_clears_sack: false,
            slow_start_after_idle: true,
            quickack_on_out_of_order: false,
            mark_lost_retrans: false,
            tso_defer: false,
            cwnd_limited_by_flight: false,
            cubic_reno_estimate_counts_acks: false,
            slow_start_through_ssthresh: false,
            rate_halving: false,
            fack: false,
            rcvbuf_fixup: false,
            app_preamble_bytes: 0,
            timer_hz: Some(250),
            timer_wheel_levels: true,
            window_edge_partial: true,
        };
        match name {
            "linux" => Some(linux),
            "windows10" => Some(TcpConfig {
                profile: "windows10".into(),
                timer_hz: None,
                window_edge_partial: false,
                cc: CcKind::Compound,
                mss: 1460,
                header_bytes: 40,
                initial_ssthresh_bytes: Some(64512),
                receive_window_bytes: 64512,
                window_scaling: false,
                rcvbuf_autotune: false,
                min_rto: Duration::from_ms(300),
                linux_rto: false,
                initial_rto: Duration::from_secs(3),
                max_rto: Duration::from_secs(60),
                delayed_ack: Some(Duration::from_ms(200)),
                quickack_segments: 0,
                rack_tlp_min_rtt: Some(Duration::from_ms(10)),
                ..linux
            }),
            "windows7" => Some(TcpConfig {
                profile: "windows7".into(),
                timer_hz: None,
                window_edge_partial: false,
                cc: CcKind::NewReno,
                mss: 1460,
                header_bytes: 40,
                initial_window_segments: 2,
                initial_ssthresh_bytes: None,
                receive_window_bytes: 16 * 1024 * 1024,
                window_scaling: true,
                rcvbuf_autotune: false,
                min_rto: Duration::from_ms(300),
                linux_rto: false,
                initial_rto: Duration::from_secs(3),
                max_rto: Duration::from_secs(60),
                delayed_ack: Some(Duration::from_ms(200)),
                quickack_segments: 0,
                frto: true,
                rack: false,
                tlp: false,
                limited_transmit: true,
                rescue_retransmit: false,
                rto_clears_sack: false,
                ..linux
            }),
            "windows-xp" => Some(TcpConfig {
                profile: "windows-xp".into(),
                timer_hz: None,
                window_edge_partial: false,
                cc: CcKind::NewReno,
                mss: 1460,
                header_bytes: 40,
                initial_window_segments: 2,
                initial_ssthresh_bytes: None,
                receive_window_bytes: 65535,
                window_scaling: false,
                rcvbuf_autotune: false,
                min_rto: Duration::from_ms(300),
                linux_rto: false,
                initial_rto: Duration::from_secs(3),
                max_rto: Duration::from_secs(60),
                delayed_ack: Some(Duration::from_ms(200)),
                quickack_segments: 0,
                frto: false,
                rack: false,
                tlp: false,
                limited_transmit: false,
                rescue_retransmit: false,
                rto_clears_sack: false,
                ..linux
            }),
            "linux-3.x" => Some(TcpConfig {
                profile: "linux-3.x".into(),
                timer_wheel_levels: false,
                rack: false,
                mark_lost_retrans: true,
                quickack_on_out_of_order: true,
                tso_defer: true,
                cwnd_limited_by_flight: true,
                cubic_reno_estimate_counts_acks: true,
                slow_start_through_ssthresh: true,
                fack: true,
                rcvbuf_fixup: true,
                rcvbuf_initial_bytes: 87_380,
                rcvbuf_max_bytes: 6 * 1024 * 1024,
                rcv_scaling_ratio: 128,
                // The prequeue: data is read as it arrives (see profile()).
                receiver_read_delay: Duration::ZERO,
                ..linux
            }),
            "linux-2.6" => Some(TcpConfig {
                profile: "linux-2.6".into(),
                timer_wheel_levels: false,
                window_edge_partial: false,
                rate_halving: true,
                fack: true,
                rack: false,
                tlp: false,
                mark_lost_retrans: true,
                quickack_on_out_of_order: true,
                cwnd_limited_by_flight: true,
                cubic_reno_estimate_counts_acks: true,
                slow_start_through_ssthresh: true,
                initial_window_segments: 3,
                initial_rto: Duration::from_secs(3),
                rcvbuf_initial_bytes: 87_380,
                rcvbuf_max_bytes: 4 * 1024 * 1024,
                rcv_scaling_ratio: 192,
                ..linux
            }),
            _ => None,
        }
    }

    pub const PROFILES: [&'static str; 6] = [
        "linux",
        "linux-3.x",
        "linux-2.6",
        "windows10",
        "windows7",
        "windows-xp",
    ];
}

/// What to record besides the always-present summaries. Nothing else is
/// stored, so long runs stay small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSpec {
    /// Sampling interval of the time series (Wireshark IO-graph tick).
    pub interval: Duration,
    /// Per-flow delivered bytes per interval.
    pub goodput: bool,
    /// Every RTT sample (tcp.analysis.ack_rtt definition).
    pub rtt: bool,
    /// cwnd / ssthresh / state per flow at each interval.
    pub cwnd: bool,
    /// Queue length (packets, bytes) per policy at each interval.
    pub queue: bool,
    /// Bucket tokens per policy at each interval (where it has any).
    pub tokens: bool,
    /// Per-colour packets/bytes per policy per interval.
    pub colors: bool,
    /// Every ping reply (time, rtt).
    pub ping: bool,
    /// Sender-side segment log (time, flow, seq, len, retransmission) for
    /// time–sequence graphs.
    pub segments: bool,
    /// Keep every RTT sample for exact p50 / p95 in the flow summaries
    /// (memory grows with the run) instead of a bounded histogram (within
    /// 0.4 %). The `rtt` series, when recorded, is per sample either way.
    pub exact_rtt_percentiles: bool,
}

impl Default for RecordSpec {
    fn default() -> Self {
        RecordSpec {
            interval: Duration::from_ms(100),
            goodput: true,
            rtt: false,
            cwnd: false,
            queue: false,
            tokens: false,
            colors: false,
            ping: true,
            segments: false,
            exact_rtt_percentiles: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_exist_and_differ_where_the_sources_say() {
        for name in TcpConfig::PROFILES {
            assert_eq!(TcpConfig::profile(name).unwrap().profile, name);
        }
        let w10 = TcpConfig::profile("windows10").unwrap();
        assert_eq!(w10.cc, CcKind::Compound);
        assert_eq!(w10.receive_window_bytes, 64512);
        assert_eq!(w10.initial_ssthresh_bytes, Some(64512));
        let linux = TcpConfig::profile("linux").unwrap();
        assert_eq!(linux.cc, CcKind::Cubic);
        assert_eq!(linux.initial_window_segments, 10);
        assert_eq!(linux.min_rto, Duration::from_ms(200));
        assert!(TcpConfig::profile("bsd").is_none());
        let xp = TcpConfig::profile("windows-xp").unwrap();
        assert!(linux.frto && linux.rack && linux.tlp && !linux.rescue_retransmit);
        assert!(w10.frto && w10.rack && w10.tlp);
        assert_eq!(w10.rack_tlp_min_rtt, Some(Duration::from_ms(10)));
        assert!(
            linux.rack_tlp_min_rtt.is_none()
                && TcpConfig::profile("linux-3.x")
                    .unwrap()
                    .rack_tlp_min_rtt
                    .is_none()
        );
        assert!(!xp.frto && !xp.rack && !xp.tlp && !xp.limited_transmit);
        let w7 = TcpConfig::profile("windows7").unwrap();
        assert_eq!(w7.cc, CcKind::NewReno);
        assert_eq!(w7.min_rto, Duration::from_ms(300));
        assert_eq!(w7.delayed_ack, Some(Duration::from_ms(200)));
        assert_eq!(w7.initial_window_segments, 2);
        assert!(!w7.rack && !w7.tlp && w7.frto && w7.window_scaling);
        assert!(!linux.rto_clears_sack && !w10.rto_clears_sack && !xp.rto_clears_sack);
        let l3 = TcpConfig::profile("linux-3.x").unwrap();
        assert!(!l3.rack && l3.tlp && l3.frto && l3.quickack_on_out_of_order);
        assert!(l3.mark_lost_retrans && !linux.mark_lost_retrans);
        assert!(!linux.quickack_on_out_of_order);
        assert!(l3.tso_defer && !linux.tso_defer);
        // Sanity check of the table: the short segment at the window's edge
        // is the kernels' since 2012, not 2.6.32's nor Windows' (modelled).
        assert!(linux.window_edge_partial && l3.window_edge_partial);
        for p in ["linux-2.6", "windows10", "windows7", "windows-xp"] {
            assert!(!TcpConfig::profile(p).unwrap().window_edge_partial, "{p}");
        }
        assert!(l3.rcvbuf_fixup && !linux.rcvbuf_fixup);
        assert!(
            l3.fack && !linux.fack,
            "3.x had tcp_fack = 1; 6.x has no FACK"
        );
        assert_eq!(
            (l3.rcvbuf_initial_bytes, l3.rcv_scaling_ratio),
            (87_380, 128)
        );
    }
}
