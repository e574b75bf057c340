//! The active TCP endpoint (iperf3 client): a bulk sender.
//!
//! Reading list, and where each rule lives here:
//! - Handshake, RFC 9293 §3.5: SYN, SYN-ACK, ACK; the SYN is retransmitted
//!   on its own timer starting at `initial_rto` and doubling (RFC 6298
//!   §5.5); after a retransmitted SYN the RTO falls back to 3 s if no RTT
//!   was measured (RFC 6298 §5.7) and the initial window is one segment
//!   (RFC 5681 §3.1). The SYN-ACK gives the first RTT sample (Linux
//!   `tcp_synack_rtt_meas`) unless the SYN was retransmitted (Karn), or
//!   timestamps disambiguate it.
//! - Sending: full-sized segments only (sender SWS avoidance, RFC 9293
//!   §3.8.6.2.1), except the application's last bytes or when the peer's
//!   window is smaller than a segment and nothing is outstanding. Never
//!   beyond the peer's right edge (SND.UNA + SND.WND), never more than
//!   cwnd in flight: "in flight" is RFC 6675 `pipe` / Linux
//!   `tcp_packets_in_flight`, except during RFC 5681/6582 fast recovery
//!   where it is FlightSize = SND.NXT − SND.UNA against the inflated cwnd
//!   as those RFCs define it.
//! - RTT samples (RFC 6298 §3, Linux `tcp_clean_rtx_queue` +
//!   `tcp_ack_update_rtt`): from the oldest segment newly acknowledged if
//!   no newly acknowledged segment was ever retransmitted (Karn), else
//!   from the oldest newly SACKed never-retransmitted segment, else from
//!   the timestamp echo (RFC 7323 §4.1) when the ACK acknowledged data.
//!   These feed the RTO and `AckSample::rtt`.
//! - [`TcpIo::rtt_sample`] gets Wireshark's `tcp.analysis.ack_rtt`
//!   instead (epan/dissectors/packet-tcp.c, `tcp_analyze_sequence_number`):
//!   for an ACK whose number equals the end of a data segment (or the
//!   SYN), the time since that segment's *original* transmission, as a
//!   capture at the sender would show it — no Karn filtering, so the ACK
//!   that closes a hole reports the whole recovery time.
//! - RTO, RFC 6298 §5 ([`super::rtt`]; its value computed as RFC 6298 §2
//!   or, with [`TcpConfig::linux_rto`], as Linux): started when data is sent and the
//!   timer is off (5.1), stopped when everything is acknowledged (5.2),
//!   restarted on every ACK of new data (5.3; RFC 6582 §4 calls this the
//!   "Slow-but-Steady" variant, also Linux's). On expiry (5.4–5.6): back
//!   off, then like Linux `tcp_enter_loss`: every un-SACKed segment is
//!   marked lost, `cc.on_rto` (ssthresh held when the same data times out
//!   again, RFC 5681 §3.1 note), the Loss state lasts until everything
//!   sent before the timeout is acknowledged, and lost segments are resent
//!   in order under the slow-start window before new data (go-back-N
//!   without SACK, SACKed segments skipped with it — unless
//!   [`TcpConfig::rto_clears_sack`] forgets the SACKed marks first, RFC
//!   2018 §8, and later SACK blocks mark them again).
//!   The ssthresh reduction is skipped when this window was already
//!   reduced (a fast recovery under way, or an earlier timeout of the same
//!   data), as `tcp_enter_loss` does. Retransmitting the first
//!   unacknowledged segment restarts the timer (Linux
//!   `tcp_xmit_retransmit_queue`).
//! - Spurious timeouts ([`TcpConfig::frto`]): F-RTO, RFC 5682 §3.1 in its
//!   SACK-enhanced form as Linux `tcp_process_loss` runs it (not after a
//!   timeout during fast recovery, §3.1 step 1); and with timestamps the
//!   Eifel check (RFC 3522; Linux `tcp_packet_delayed`). Either undoes
//!   the reduction (`cc.undo`, Linux `tcp_undo_cwnd_reduction`) and the
//!   loss marks.
//! - RACK ([`TcpConfig::rack`], SACK recovery only; [`super::rack`]):
//!   loss detection by send time, RFC 8985 §6, as Linux runs it: it
//!   replaces the DupThresh / IsLost rules (Linux skips
//!   `tcp_update_scoreboard` and the dupack heuristic when RACK is on),
//!   detects lost retransmissions, arms the reordering timer, and on an
//!   RTO marks lost only segments sent more than RACK.rtt ago (cwnd =
//!   in flight + 1 segment, `tcp_enter_loss`).
//! - TLP ([`TcpConfig::tlp`], SACK only): RFC 8985 §7 as Linux
//!   `tcp_schedule_loss_probe` / `tcp_send_loss_probe` /
//!   `tcp_process_tlp_ack` (see [`TcpSender`]'s private docs for PTO).
//! - Duplicate ACKs: RFC 5681 §2 definition (no data, ack = SND.UNA,
//!   outstanding data, same window) without SACK; RFC 6675 §2 with SACK
//!   (an ACK whose SACK blocks cover new data).
//! - Recovery ([`RecoveryKind`]):
//!   - `Reno`, RFC 5681 §3.2: at the 3rd dupack ssthresh = `cc.ssthresh`,
//!     retransmit, cwnd = ssthresh + 3·SMSS, +SMSS per further dupack,
//!     leave at the first ACK of new data (`cc.on_recovery_exit`: cwnd =
//!     ssthresh).
//!   - `NewReno`, RFC 6582 §3.2: the same entry, recovery point = the
//!     highest sequence sent; a partial ACK retransmits the first
//!     unacknowledged segment and deflates cwnd by the bytes acked (plus
//!     one SMSS back if ≥ SMSS were acked); the full ACK exits. The
//!     "recover" guard against a second reduction after an RTO is the Loss
//!     state (no fast retransmit until the RTO's recovery point is acked).
//!   - `Sack`, RFC 6675 §5: enter at DupThresh (3) dupacks or when
//!     IsLost(HighACK+1); RecoveryPoint = HighData; the window during
//!     recovery follows RFC 6937 Proportional Rate Reduction by default,
//!     as Linux does (`tcp_cwnd_reduction`, net/ipv4/tcp_input.c): cwnd =
//!     pipe + sndcnt on every ACK, sending ssthresh/RecoverFS of what is
//!     delivered while pipe > ssthresh, then slow-starting back up to
//!     ssthresh (PRR-SSRB). [`TcpSender::set_prr`]`(false)` gives plain
//!     RFC 6675 (§5 step 4.2 cwnd = ssthresh: the sender is silent until
//!     pipe drops below ssthresh, then bursts). The first lost segment is
//!     retransmitted at once (4.3), then NextSeg while cwnd − pipe ≥ 1
//!     segment: rule 1 (lost, not yet retransmitted — like Linux, any such
//!     segment, not only those above HighRxt), rule 2 (new data), rule 3
//!     (un-SACKed segment below SACKed data), rule 4 if configured. The
//!     recovery ends when the cumulative ACK reaches the RecoveryPoint;
//!     that ACK is then processed as in Open (Linux `tcp_fastretrans_alert`
//!     step E), so a loss already marked above the old RecoveryPoint
//!     starts the next recovery on it, under PRR rather than a burst.
//!
//!   With `cc.owns_cwnd()` (BBR) the sender leaves cwnd to the algorithm.
//! - Congestion-control calls: `on_ack` for every ACK that acknowledges
//!   new data cumulatively or by SACK, with `acked_bytes` = bytes newly
//!   delivered (Linux `acked_sacked`: a segment SACKed earlier is not
//!   counted again when the cumulative ACK passes it), `in_recovery` true
//!   only in fast recovery (Linux `tcp_in_cwnd_reduction`: cwnd grows in
//!   the Loss state, i.e. slow start after an RTO), `cwnd_limited` false
//!   on ACKs that did not advance SND.UNA (Linux `tcp_may_raise_cwnd`:
//!   SACK-only ACKs deliver but do not grow the window, unless reordering
//!   was seen), else per
//!   Linux `tcp_is_cwnd_limited` / `tcp_cwnd_validate` (include/net/tcp.h,
//!   net/ipv4/tcp_output.c): true when the window was what stopped sending
//!   at any time during the last window of data, or in slow start while
//!   cwnd < 2 × the largest flight of that window (with
//!   [`TcpConfig::cwnd_limited_by_flight`], `linux-3.x`: Linux 3.12-3.15's
//!   per-ACK test of the flight before the ACK instead); `rate` from
//!   [`super::rate`].
//! - Pacing ([`super::pacing`]) when the configuration asks for it or the
//!   algorithm sets `pacing_rate`; retransmissions are paced too, except
//!   the one forced by entering recovery or by the RTO.
//!
//! - Limited transmit ([`TcpConfig::limited_transmit`], RFC 3042): before
//!   recovery the window counts `pipe` (SACKed segments out, as Linux)
//!   and, without SACK, two more segments for the first two duplicate
//!   ACKs; switched off, FlightSize counts.
//! - Rescue retransmission ([`TcpConfig::rescue_retransmit`], RFC 6675 §4
//!   NextSeg rule 4, RescueRxt set by §5 step 4.3), off in every profile.
//!
//! - Undo of a spurious fast recovery (SACK recovery; Linux
//!   `tcp_try_undo_recovery`, `tcp_try_undo_partial`,
//!   `tcp_try_undo_dsack`): by timestamps (an original transmission
//!   filled the hole) or when D-SACKs (RFC 2883, RFC 3708) have reported
//!   every retransmission of the episode, also after the recovery ended.
//!
//! Left out (named): ECN (RFC 3168) and the CWR state, FIN, SYN give-up after
//! `tcp_syn_retries`, Nagle (a bulk sender always has full segments).
//!
//! # Where this differs from Linux (net/ipv4/tcp_input.c, tcp_output.c,
//! tcp_timer.c, tcp_recovery.c), as reviewed
//! - `Reno`/`NewReno` recovery follow RFC 5681/6582 (cwnd inflation by
//!   duplicate ACKs); Linux runs PRR for non-SACK connections too, with
//!   duplicate ACKs counted as SACKed segments (`tcp_add_reno_sack`). The
//!   `linux` profile uses `Sack`, where we follow Linux.
//! - Undo: Linux's "hold retransmissions" after a partial undo that still
//!   has retransmissions in flight is not modelled (we simply wait for the
//!   D-SACK or the full ACK), nor the undo of a non-SACK (`Reno`/`NewReno`)
//!   recovery. D-SACKs are counted against the episode whatever segments
//!   they cover (Linux checks that a covered segment was retransmitted).
//!   The DupThresh is 3, raised by reordering (`tp->reordering`) only in
//!   the profiles without RACK (`fack` / `mark_lost_retrans`); with RACK
//!   it would only matter for the reo_wnd = 0 rule. The cached
//!   per-destination value (`tcp_metrics`) is not modelled.
//! - Congestion-window validation is only Linux's `tcp_is_cwnd_limited`
//!   gate on growth: `tcp_cwnd_application_limited` (RFC 7661-like decay
//!   of an unused window every RTO) and `tcp_cwnd_restart` (slow-start
//!   restart after an idle RTO, `tcp_slow_start_after_idle`) are not
//!   modelled — a bulk sender neither idles nor leaves its window unused
//!   except at the end of a `-n` transfer.
//! - One timer per purpose (RTO, RACK reordering, probe, pacing) where
//!   Linux multiplexes one `icsk` timer; the order Linux would observe is
//!   kept (a due probe goes before the RTO it replaced, the head
//!   retransmission re-arms the RTO and cancels the probe).
//! - `min_rtt` is the lifetime minimum (Linux: a 300 s window,
//!   `tcp_min_rtt_wlen`). Segments are kept one by one, but a paced sender
//!   releases them in skbs of Linux's TSO autosize ([`super::tso`]);
//!   packet-count rounding is not modelled, and `tcp_tso_should_defer`
//!   only as Linux 3.x-4.1 had it, with [`TcpConfig::tso_defer`].
//! - The RTO is RFC 6298 unless [`TcpConfig::linux_rto`] (on in the
//!   `linux` profile) selects Linux's estimator.

use super::jiffies;
use super::pacing::{default_pacing_rate, Pacer};
use super::rack::{Rack, TIMEOUT_MIN};
use super::rate::{RateAccumulator, RateEstimator};
use super::ratehalving::{self, RateHalving};
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, SentSegment};
use super::tso::{tso_autosize_segs, GSO_MAX_SIZE_BYTES};
use super::wndsplit;
use super::{TcpHeader, TcpIo, ACK, SYN};
use crate::cc::{AckSample, CcState, CongestionControl};
use crate::config::{CcKind, RecoveryKind, TcpConfig};
use qoslab_core::{Duration, Instant, Rate};

/// Linux sysctl `tcp_tso_win_divisor` default: a TSO skb may take at most a
/// third of the window (tcp_tso_should_defer, tcp_is_cwnd_limited in 3.x).
const TSO_WIN_DIVISOR: u64 = 3;

/// RFC 5681 §3.2 / RFC 6675 DupThresh.
pub const DUP_THRESH: u32 = 3;

/// Linux 3.x `TCP_MAX_REORDERING` (include/net/tcp.h): the cap on
/// `tp->reordering` (a sysctl, default 300, from 3.19).
const TCP_MAX_REORDERING: u32 = 127;

/// The placeholder deadline of a timer armed by an ACK whose value is
/// computed only if it survives the ACK (`TcpSender::set_xmit_timer`).
/// Never a real deadline: those stay below `qoslab_core::TIME_HORIZON_NS`.
const ARM_DEFERRED: Instant = Instant::from_ns(u64::MAX - 1);

/// The inputs of the RTO and loss-probe deadlines an ACK deferred.
#[derive(Clone, Copy, Debug)]
struct DeferredArm {
    head_sent_at: Instant,
    /// A probe or reordering timer was pending before the ACK re-armed.
    probe_pending: bool,
    rto: Duration,
    srtt: Option<Duration>,
    one_outstanding: bool,
}

/// How much the application gives TCP to send (iperf3 `-t` vs `-n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppLimit {
    /// Always has data, until [`TcpSender::stop`].
    Unlimited,
    /// Exactly this many payload bytes.
    Bytes(u64),
}

/// Counters of one sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data segments transmitted, retransmissions included.
    pub segments_sent: u64,
    /// Data segments retransmitted.
    pub retransmits: u64,
    /// Retransmission-timer expiries (SYN included).
    pub timeouts: u64,
    /// Fast-recovery episodes entered.
    pub fast_recoveries: u64,
    /// Retransmission timeouts found spurious and undone (F-RTO or Eifel;
    /// Linux `TCPSpuriousRTOs` + `TCPLossUndo`).
    pub spurious_rtos: u64,
    /// Fast recoveries found spurious and undone (timestamps or D-SACKs;
    /// Linux `TCPFullUndo` + `TCPPartialUndo` + `TCPDSACKUndo`).
    pub recovery_undos: u64,
    /// Tail loss probes sent (Linux `TCPLossProbes`).
    pub loss_probes: u64,
    /// Probes that repaired a loss and cost a window reduction (Linux
    /// `TCPLossProbeRecovery`).
    pub loss_probe_recoveries: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    pub established_at: Option<Instant>,
}

/// Linux `tcp_ca_state` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open = 0,
    Disorder = 1,
    Recovery = 2,
    Loss = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    SynSent,
    Established,
}

/// Why the send loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocked {
    Cwnd,
    Rwnd,
    App,
}

enum Next {
    Retransmit(usize),
    /// RFC 6675 NextSeg rule 4.
    Rescue(usize),
    New(u32),
    Stop(Blocked),
}

/// A bulk TCP sender (sans-I/O; see the module docs for the rules).
pub struct TcpSender {
    cfg: TcpConfig,
    cc: Box<dyn CongestionControl>,
    state: CcState,
    phase: Phase,
    timestamps: bool,
    /// End (exclusive sequence number) of the application's data.
    app_end: Option<u64>,
    /// `app_preamble_bytes` (iperf3's cookie): while it is unacknowledged,
    /// `app_end` is the preamble's end and this holds the data's end.
    preamble_hold: Option<Option<u64>>,
    snd_una: u64,
    snd_nxt: u64,
    snd_wnd: u64,
    sb: Scoreboard,
    rtt: RttEstimator,
    rate: RateEstimator,
    ca: CaState,
    dupacks: u32,
    /// Recovery point (RFC 6582 "recover", RFC 6675 RecoveryPoint, Linux
    /// `high_seq`): SND.NXT when recovery or Loss began.
    high_seq: u64,
    /// Consecutive RTOs without progress (RFC 5681: hold ssthresh).
    rto_streak: u32,
    rto_at: Option<Instant>,
    syn_retransmitted: bool,
    /// RACK and TLP may run on this connection: always without the
    /// profile's RTT floor, else decided from the handshake RTT
    /// (`windows::rack_tlp_allowed`).
    rack_tlp_ok: bool,
    syn_sent_at: Instant,
    syn_first_sent_at: Option<Instant>,
    pacer: Pacer,
    pacing_wait: bool,
    /// `tcp_cwnd_validate` state.
    max_flight_bytes: u64,
    cwnd_usage_seq: u64,
    is_cwnd_limited: bool,
    /// RFC 6937 PRR for SACK recovery (on by default, as in Linux).
    prr: bool,
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    /// Rate-halving ([`TcpConfig::rate_halving`], `linux-2.6`).
    rh: RateHalving,
    /// With rate-halving: this ACK ends with `tcp_moderate_cwnd`.
    rh_moderate: bool,
    /// Peer's TSval to echo.
    ts_recent: u64,
    /// F-RTO under way (Linux `tp->frto`).
    frto: bool,
    /// One-shot: the next send pass sends new data only (F-RTO step 2b,
    /// Linux `REXMIT_NEW`).
    frto_new_only: bool,
    /// With `tso_defer`: unsent segments left in the skb at the send head
    /// (0: the next new segment starts a fresh skb).
    skb_rem: u64,
    /// With `tso_defer`: when the head skb was first deferred (Linux
    /// `tp->tso_deferred`).
    tso_deferred_at: Option<Instant>,
    /// cwnd and ssthresh before the current reduction (Linux `prior_cwnd`,
    /// `prior_ssthresh`; `Some` = Linux `undo_marker` set).
    undo_prior: Option<(u64, u64)>,
    /// SND.UNA when the reduction began (Linux `undo_marker`).
    undo_marker: u64,
    /// Retransmissions of this episode not yet proven spurious by a
    /// D-SACK; −1 = none yet (Linux `undo_retrans`).
    undo_retrans: i64,
    /// Segments reported duplicate by D-SACKs (Linux `dsack_dups`).
    dsack_dups: u64,
    /// Linux ≤ 4.3 `tcp_disable_fack` happened: FACK, and with it
    /// `tcp_mark_lost_retrans`, is off for the rest of the connection
    /// (see [`TcpSender::note_reordering`]).
    fack_disabled: bool,
    /// Linux `tp->reordering`: the DupThresh in segments, 3
    /// (`sysctl_tcp_reordering`) until reordering is seen; raised by
    /// [`TcpSender::note_reordering`] in the profiles of the kernels
    /// without RACK, lowered back to 3 by an RTO (`tcp_enter_loss`).
    reordering: u32,
    /// First retransmission of the current episode (Linux `retrans_stamp`).
    retrans_stamp: Option<Instant>,
    rack: Rack,
    /// RACK reordering timer (Linux `ICSK_TIME_REO_TIMEOUT`).
    reo_at: Option<Instant>,
    /// Tail-loss-probe timer (PTO, Linux `ICSK_TIME_LOSS_PROBE`).
    tlp_at: Option<Instant>,
    /// SND.NXT when the outstanding probe was sent (RFC 8985 TLP.end_seq,
    /// Linux `tlp_high_seq`); `None` = no probe outstanding.
    tlp_high_seq: Option<u64>,
    /// The outstanding probe was a retransmission (Linux `tlp_retrans`).
    tlp_retrans: bool,
    /// RFC 6675 RescueRxt (`None` = undefined).
    rescue_rxt: Option<u64>,
    /// Last data transmission (Linux `lsndtime`), for the idle restart.
    last_data_sent: Option<Instant>,
    /// Full-size new segments sent in the current send pass
    /// ([`TcpConfig::window_edge_partial`], `tcp/wndsplit.rs`).
    edge_run: u64,
    /// End of the last sub-MSS new segment sent (Linux `snd_sml`, Nagle's
    /// Minshall check).
    snd_sml: u64,
    stats: SenderStats,
}

/// What one ACK did, for the loss-state machine (Linux `FLAG_*`).
#[derive(Clone, Copy, Debug, Default)]
struct AckFlags {
    /// SND.UNA advanced (`FLAG_SND_UNA_ADVANCED`).
    advanced: bool,
    acked_bytes: u64,
    is_dupack: bool,
    /// New data was SACKed (`FLAG_DATA_SACKED`).
    sacked: bool,
    /// Never-retransmitted data sent before the recovery point was
    /// (s)acked (`FLAG_ORIG_SACK_ACKED`).
    orig_acked: bool,
    ts_ecr: u64,
    /// Linux 2.6 `tcp_ack_is_dubious`: a duplicate ACK (no data, no window
    /// update, nothing acked), or one that SACKed data (`FLAG_CA_ALERT`);
    /// any ACK outside the Open state is dubious too (checked there).
    dubious: bool,
}

impl TcpSender {
    pub fn new(cfg: &TcpConfig, mut cc: Box<dyn CongestionControl>, app: AppLimit) -> TcpSender {
        let mss = cfg.mss.max(1);
        if cfg.linux_rto {
            // The Linux profiles (the only ones with Linux's RTO): the
            // kernel's own variants of the algorithm's rules.
            cc.set_linux();
        }
        TcpSender {
            cfg: cfg.clone(),
            cc,
            state: CcState {
                cwnd_bytes: cfg.initial_window_segments.max(1) as u64 * mss as u64,
                ssthresh_bytes: cfg.initial_ssthresh_bytes.unwrap_or(u64::MAX),
                mss,
                pacing_rate: None,
            },
            phase: Phase::Closed,
            timestamps: cfg.header_bytes >= 52,
            app_end: match app {
                _ if cfg.app_preamble_bytes > 0 => Some(1 + cfg.app_preamble_bytes as u64),
                AppLimit::Unlimited => None,
                AppLimit::Bytes(n) => Some(1 + n),
            },
            preamble_hold: (cfg.app_preamble_bytes > 0).then(|| {
                let p = cfg.app_preamble_bytes as u64;
                match app {
                    AppLimit::Unlimited => None,
                    AppLimit::Bytes(n) => Some(1 + p + n),
                }
            }),
            snd_una: 0,
            snd_nxt: 0,
            snd_wnd: 0,
            sb: Scoreboard::new(),
            rtt: if cfg.linux_rto {
                RttEstimator::linux(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
            } else {
                RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
            },
            rate: RateEstimator::new(),
            ca: CaState::Open,
            dupacks: 0,
            high_seq: 0,
            rto_streak: 0,
            rto_at: None,
            syn_retransmitted: false,
            rack_tlp_ok: cfg.rack_tlp_min_rtt.is_none(),
            syn_sent_at: Instant::ZERO,
            syn_first_sent_at: None,
            pacer: Pacer::default(),
            pacing_wait: false,
            max_flight_bytes: 0,
            cwnd_usage_seq: 0,
            is_cwnd_limited: false,
            prr: true,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            rh: RateHalving::default(),
            rh_moderate: false,
            ts_recent: 0,
            frto: false,
            frto_new_only: false,
            skb_rem: 0,
            tso_deferred_at: None,
            undo_prior: None,
            undo_marker: 0,
            undo_retrans: -1,
            dsack_dups: 0,
            fack_disabled: false,
            reordering: DUP_THRESH,
            retrans_stamp: None,
            rack: Rack::default(),
            reo_at: None,
            tlp_at: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            rescue_rxt: None,
            last_data_sent: None,
            edge_run: 0,
            snd_sml: 0,
            stats: SenderStats::default(),
        }
    }

    fn mss(&self) -> u32 {
        self.state.mss
    }

    /// Choose the window reduction of SACK recovery: `true` (default) =
    /// RFC 6937 Proportional Rate Reduction as Linux does
    /// (`tcp_cwnd_reduction`); `false` = RFC 6675 §5 cwnd = ssthresh.
    pub fn set_prr(&mut self, on: bool) {
        self.prr = on;
    }

    /// RFC 6675 recovery needs both the kind and the SACK option.
    fn sack_recovery(&self) -> bool {
        self.cfg.sack && self.cfg.recovery == RecoveryKind::Sack
    }

    /// RACK replaces the DupThresh rule in SACK recovery (Linux: SACK
    /// connections with `tcp_recovery & TCP_RACK_LOSS_DETECTION`).
    fn rack_on(&self) -> bool {
        self.cfg.rack && self.rack_tlp_ok && self.sack_recovery()
    }

    /// Send the SYN.
    pub fn start(&mut self, now: Instant, io: &mut dyn TcpIo) {
        if self.phase != Phase::Closed {
            return;
        }
        self.phase = Phase::SynSent;
        self.snd_nxt = 1;
        self.send_syn(now, io);
    }

    fn send_syn(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.syn_sent_at = now;
        self.syn_first_sent_at.get_or_insert(now);
        io.transmit(TcpHeader {
            seq: 0,
            flags: SYN,
            window: self.own_window(),
            ts_val: self.ts_val(now),
            ..TcpHeader::default()
        });
        self.rto_at = Some(self.timer_at(now, self.rtt.rto(), false));
    }

    /// The application stops writing: what was sent is all there is.
    pub fn stop(&mut self, _now: Instant) {
        self.preamble_hold = None;
        let end = self.snd_nxt.max(1);
        self.app_end = Some(self.app_end.map_or(end, |e| e.min(end)));
    }

    /// The application writes `bytes` more (a `tcp-fetch` response).
    ///
    /// Linux `tcp_sendmsg_locked` → `tcp_skb_entail` →
    /// `tcp_slow_start_after_idle_check` (include/net/tcp.h): with
    /// `tcp_slow_start_after_idle` set, nothing outstanding, and a
    /// congestion control without its own `cong_control` (not BBR), an idle
    /// time `delta` = now − `lsndtime` longer than the RTO calls
    /// `tcp_cwnd_restart` (net/ipv4/tcp_output.c): ssthresh =
    /// `tcp_current_ssthresh` (max(ssthresh, ¾·cwnd) outside a reduction),
    /// restart window = min(initial window, cwnd), cwnd halved once per RTO
    /// of idle time while above it, and never below it. Then the first
    /// transmission from an empty pipe is `CA_EVENT_TX_START`
    /// (`tcp_event_data_sent`), told to the congestion control with the
    /// idle time (CUBIC shifts its epoch by it).
    pub fn app_write(&mut self, now: Instant, bytes: u64, io: &mut dyn TcpIo) {
        if let Some(hold) = self.preamble_hold.as_mut() {
            // Written behind the preamble: released with it.
            let p = self.cfg.app_preamble_bytes as u64;
            *hold = hold.map(|e| e.max(1 + p) + bytes);
            return;
        }
        let end = self.app_end.unwrap_or(1).max(self.snd_nxt.max(1));
        self.app_end = Some(end + bytes);
        if self.phase != Phase::Established {
            return;
        }
        self.app_resumes(now);
        self.try_send(now, io);
    }

    /// The application writes after a pause: the idle restart and
    /// `CA_EVENT_TX_START` of `app_write`.
    fn app_resumes(&mut self, now: Instant) {
        if let Some(last) = self.last_data_sent.filter(|_| self.sb.is_empty()) {
            let idle = now.saturating_since(last);
            let rto = self.rtt.rto();
            if self.cfg.slow_start_after_idle && !self.cc.owns_cwnd() && idle > rto {
                self.cwnd_restart(idle, rto);
            }
            self.cc.on_tx_start(&mut self.state, idle, now);
        }
    }

    /// Linux `tcp_cwnd_restart` (net/ipv4/tcp_output.c), in bytes.
    fn cwnd_restart(&mut self, idle: Duration, rto: Duration) {
        let mss = self.mss() as u64;
        let cwnd0 = self.state.cwnd_bytes;
        let in_reduction = matches!(self.ca, CaState::Recovery);
        if !in_reduction {
            // tcp_current_ssthresh
            self.state.ssthresh_bytes = self.state.ssthresh_bytes.max((cwnd0 >> 1) + (cwnd0 >> 2));
        }
        let restart = (self.cfg.initial_window_segments.max(1) as u64 * mss).min(cwnd0);
        let mut cwnd = cwnd0;
        let mut delta = idle.as_ns() as i128;
        let rto_ns = rto.as_ns().max(1) as i128;
        loop {
            delta -= rto_ns;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.state.cwnd_bytes = cwnd.max(restart);
        // snd_cwnd_used = 0, snd_cwnd_stamp = now: a fresh validation window.
        self.max_flight_bytes = 0;
        self.is_cwnd_limited = false;
    }

    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.state.cwnd_bytes
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.state.ssthresh_bytes
    }

    /// 0 open, 1 disorder, 2 recovery, 3 loss (Linux `tcp_ca_state`).
    pub fn ca_state(&self) -> u8 {
        self.ca as u8
    }

    /// Bytes in flight (RFC 6675 pipe).
    pub fn bytes_in_flight(&self) -> u64 {
        self.sb.pipe()
    }

    /// SND.NXT − SND.UNA.
    pub fn flight_size_bytes(&self) -> u64 {
        self.snd_nxt.saturating_sub(self.snd_una.max(1))
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// The application's data is finite and all of it is acknowledged.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Established
            && self.preamble_hold.is_none()
            && self.app_end.is_some_and(|e| self.snd_una >= e)
    }

    pub fn next_timer(&self) -> Option<Instant> {
        let pace = self.pacing_wait.then(|| self.pacer.next_send());
        // An armed probe replaces the RTO (Linux's one timer slot; the PTO
        // is never later than the RTO it replaced, and firing re-arms it).
        // (Written out rather than as an iterator's `min`: this runs after
        // every ACK, issue 12.)
        let min = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        min(min(self.tlp_at.or(self.rto_at), self.reo_at), pace)
    }

    pub fn on_timer(&mut self, now: Instant, io: &mut dyn TcpIo) {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        // Linux has one timer: an armed probe timer replaces the RTO
        // (the PTO is never later), so a probe due with it goes first.
        if due(self.tlp_at) {
            self.send_loss_probe(now, io);
        } else if self.tlp_at.is_none() && due(self.rto_at) {
            self.on_rto(now, io);
        } else if due(self.reo_at) {
            self.on_reo_timeout(now, io);
        }
        self.try_send(now, io);
    }

    pub fn on_segment(&mut self, now: Instant, h: &TcpHeader, io: &mut dyn TcpIo) {
        if h.flags & ACK == 0 {
            return;
        }
        match self.phase {
            Phase::Closed => {}
            Phase::SynSent => {
                if h.flags & SYN != 0 && h.ack == 1 {
                    self.establish(now, h, io);
                }
            }
            Phase::Established => {
                if h.flags & SYN != 0 {
                    // Our handshake ACK was lost or the SYN was duplicated.
                    self.send_pure_ack(now, io);
                } else {
                    self.on_ack(now, h, io);
                }
            }
        }
    }

    fn establish(&mut self, now: Instant, h: &TcpHeader, io: &mut dyn TcpIo) {
        self.phase = Phase::Established;
        self.snd_una = 1;
        self.snd_nxt = 1;
        self.high_seq = 1;
        self.cwnd_usage_seq = 1;
        self.snd_wnd = h.window;
        self.ts_recent = h.ts_val;
        self.stats.established_at = Some(now);
        let sample = if !self.syn_retransmitted {
            Some(now.saturating_since(self.syn_sent_at))
        } else if self.timestamps && h.ts_ecr != 0 {
            Some(now.saturating_since(Instant::from_ns(h.ts_ecr)))
        } else {
            None
        };
        match sample {
            Some(r) => self.rtt.sample_at(r, 1, 1),
            None => self.rtt.syn_fallback(),
        }
        self.rack_tlp_ok = super::windows::rack_tlp_allowed(self.cfg.rack_tlp_min_rtt, sample);
        if let Some(t) = self.syn_first_sent_at {
            io.rtt_sample(now.saturating_since(t));
        }
        self.rtt.reset_backoff();
        if self.syn_retransmitted {
            self.state.cwnd_bytes = self.mss() as u64; // RFC 5681 §3.1
        }
        self.cc.init(&mut self.state, now);
        self.rto_at = None;
        self.send_pure_ack(now, io);
        self.try_send(now, io);
    }

    fn own_window(&self) -> u64 {
        if self.cfg.window_scaling {
            self.cfg.receive_window_bytes
        } else {
            self.cfg.receive_window_bytes.min(65535)
        }
    }

    fn ts_val(&self, now: Instant) -> u64 {
        if self.timestamps {
            now.as_ns().max(1)
        } else {
            0
        }
    }

    fn send_pure_ack(&mut self, now: Instant, io: &mut dyn TcpIo) {
        io.transmit(TcpHeader {
            seq: self.snd_nxt,
            ack: 1,
            flags: ACK,
            window: self.own_window(),
            ts_val: self.ts_val(now),
            ts_ecr: self.ts_recent,
            ..TcpHeader::default()
        });
    }

    fn on_rto(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.stats.timeouts += 1;
        self.rtt.back_off();
        if self.phase == Phase::SynSent {
            self.syn_retransmitted = true;
            self.send_syn(now, io);
            return;
        }
        if self.sb.is_empty() {
            self.rto_at = None;
            return;
        }
        // Linux tcp_enter_loss: ssthresh is reduced only if this window
        // was not reduced already (by a fast recovery still under way, or
        // by an earlier timeout of the same data, RFC 5681 §3.1).
        let flight = self.flight_size_bytes();
        let new_recovery = matches!(self.ca, CaState::Open | CaState::Disorder);
        let reduce = new_recovery
            || self.snd_una >= self.high_seq
            || (self.ca == CaState::Loss && self.rto_streak == 0);
        if reduce {
            self.save_undo();
        }
        let held_ssthresh = self.state.ssthresh_bytes;
        self.cc.on_rto(&mut self.state, flight, now);
        if !reduce {
            self.state.ssthresh_bytes = held_ssthresh;
        }
        // RFC 5682 §3.1 step 1 / §3.2, Linux tcp_enter_loss: F-RTO unless
        // a fast recovery was under way, except on repeated timeouts.
        self.frto = self.cfg.frto && (new_recovery || self.rto_streak > 0);
        self.frto_new_only = false;
        self.rto_streak += 1;
        let spare = if self.cfg.rto_clears_sack {
            // RFC 2018 §8; Linux's reneging path spares nothing either.
            self.sb.forget_sacked();
            None
        } else if self.rack_on() {
            self.rack.rto_spare_after(now)
        } else {
            None
        };
        self.sb.mark_all_lost(spare);
        if !self.cc.owns_cwnd() {
            // tcp_enter_loss: cwnd = packets in flight + 1.
            self.state.cwnd_bytes = self.sb.pipe() + self.mss() as u64;
        }
        self.ca = CaState::Loss;
        // tcp_enter_loss (3.x): tp->reordering = min(tp->reordering,
        // sysctl_tcp_reordering): a timeout forgets the raised DupThresh.
        self.reordering = self.reordering.min(DUP_THRESH);
        self.high_seq = self.snd_nxt;
        self.dupacks = 0;
        self.tlp_at = None;
        self.tlp_high_seq = None;
        self.reo_at = None;
        // RFC 6298 5.4: retransmit the earliest unacknowledged segment now.
        if let Some(idx) = self.sb.first_lost_unsent() {
            self.retransmit(now, idx, io, false);
        }
        self.rto_at = Some(self.timer_at(now, self.rtt.rto(), false));
    }

    fn on_ack(&mut self, now: Instant, h: &TcpHeader, io: &mut dyn TcpIo) {
        if h.ack < self.snd_una || h.ack > self.snd_nxt {
            return; // old or acknowledges unsent data
        }
        if self.timestamps && h.ts_val != 0 {
            self.ts_recent = self.ts_recent.max(h.ts_val);
        }
        let prior_in_flight = self.sb.pipe();
        let prior_lost_events = self.sb.lost_events_bytes(); // tcp_ack: `lost = tp->lost`
        let window_changed = h.window != self.snd_wnd;
        self.snd_wnd = h.window;
        let mut acc = RateAccumulator::default();
        let mut newly_sacked = 0u64;
        let mut orig_acked = false;
        let mut reordered = false;
        // Lowest original segment newly delivered below the highest SACK
        // (Linux `state.reord` / `reord`, as a sequence number).
        let mut reord_from = u64::MAX;
        let mut sack_rtt_from: Option<Instant> = None;
        // Newest original transmission newly SACKed / cumulatively acked
        // (Linux `last_sackt` / `last_ackt`, the source of `ca_rtt_us`).
        let mut last_sackt: Option<Instant> = None;
        let mut last_ackt: Option<Instant> = None;
        let min_rtt = self.rtt.min_rtt();
        let ts_ecr = if self.timestamps { h.ts_ecr } else { 0 };
        let prior_fack = self.sb.highest_sacked_end();
        let blocks = h.sack.as_slice();
        // RFC 2883 §4: a first block below the ACK or inside the second
        // reports a duplicate (D-SACK).
        let dsack = blocks.first().copied().filter(|&(s, e)| {
            e <= h.ack || blocks.get(1).is_some_and(|&(s2, e2)| s >= s2 && e <= e2)
        });
        if self.cfg.sack {
            for &(start, end) in blocks {
                if end <= h.ack || start >= end {
                    continue; // D-SACK or stale (RFC 2883 §4)
                }
                let rate = &mut self.rate;
                let rack = &mut self.rack;
                self.sb
                    .sack(start.max(h.ack), end.min(self.snd_nxt), |seg| {
                        newly_sacked += seg.len as u64;
                        if !seg.ever_retransmitted && seg.end() <= self.high_seq {
                            orig_acked = true;
                        }
                        if !seg.ever_retransmitted && seg.seq < prior_fack {
                            reordered = true;
                            reord_from = reord_from.min(seg.seq);
                        }
                        let rtx = seg.ever_retransmitted;
                        // Linux `tcp_sacktag_one` advances RACK for every
                        // newly SACKed segment: no `tcp_skb_spurious_retrans`
                        // test here (that is `tcp_clean_rtx_queue`'s, for
                        // cumulative ACKs). A SACK never echoes the SACKed
                        // segment's own timestamp (`tcp_replace_ts_recent`
                        // takes it only in sequence), so that test would
                        // discard every SACKed retransmission, and a lost
                        // retransmission sent before it would wait for the
                        // RTO.
                        rack.on_delivered(seg.sent_at, seg.end(), rtx, now, min_rtt, 0);
                        rate.on_delivered(&mut acc, &seg.tx, seg.sent_at, seg.end(), seg.len);
                        if !seg.ever_retransmitted {
                            sack_rtt_from =
                                Some(sack_rtt_from.map_or(seg.sent_at, |t| t.min(seg.sent_at)));
                            last_sackt =
                                Some(last_sackt.map_or(seg.sent_at, |t| t.max(seg.sent_at)));
                        }
                    });
            }
        }
        if let Some((start, end)) = dsack.filter(|_| self.cfg.sack) {
            self.on_dsack(start, end);
        }
        let prior_una = self.snd_una;
        let advanced = h.ack > self.snd_una;
        let high_seq = self.high_seq;
        let mut newly_acked = 0u64;
        let mut first_ackt: Option<Instant> = None;
        let mut retrans_acked = false;
        let mut ack_rtt_from = None;
        if advanced {
            let rate = &mut self.rate;
            let rack = &mut self.rack;
            self.sb.ack_to(h.ack, |seg| {
                if seg.end() == h.ack {
                    ack_rtt_from = Some(seg.first_sent_at);
                }
                if seg.ever_retransmitted {
                    retrans_acked = true;
                } else if first_ackt.is_none() {
                    first_ackt = Some(seg.sent_at);
                }
                if !seg.ever_retransmitted && !seg.sacked {
                    last_ackt = Some(seg.sent_at);
                }
                if !seg.sacked {
                    if !seg.ever_retransmitted && seg.end() <= high_seq {
                        orig_acked = true;
                    }
                    if !seg.ever_retransmitted && seg.seq < prior_fack {
                        reordered = true;
                        reord_from = reord_from.min(seg.seq);
                    }
                    let rtx = seg.ever_retransmitted;
                    rack.on_delivered(seg.sent_at, seg.end(), rtx, now, min_rtt, ts_ecr);
                    newly_acked += seg.len as u64;
                    rate.on_delivered(&mut acc, &seg.tx, seg.sent_at, seg.end(), seg.len);
                }
            });
            self.stats.bytes_acked += h.ack - self.snd_una;
            self.snd_una = h.ack;
            self.rto_streak = 0;
        }
        // RTT sample (Linux tcp_ack_update_rtt order).
        let mut rtt = None;
        if advanced && !retrans_acked {
            rtt = first_ackt.map(|t| now.saturating_since(t));
        }
        if rtt.is_none() {
            rtt = sack_rtt_from.map(|t| now.saturating_since(t));
        }
        // Linux `ca_rtt_us` (tcp_clean_rtx_queue), handed to the algorithm
        // as `rate_sample.rtt_us`: the RTT of the newest segment this ACK
        // covers, SACKed ones first; the timestamp RTT when nothing else.
        let mut ca_rtt = None;
        if advanced && !retrans_acked {
            ca_rtt = last_ackt.map(|t| now.saturating_since(t));
        }
        if let Some(t) = last_sackt {
            ca_rtt = Some(now.saturating_since(t));
        }
        if rtt.is_none() && advanced && self.timestamps && h.ts_ecr != 0 {
            rtt = Some(now.saturating_since(Instant::from_ns(h.ts_ecr)));
            ca_rtt = rtt;
        }
        if let Some(r) = rtt {
            self.rtt.sample_at(r, self.snd_una, self.snd_nxt);
        }
        if let Some(t) = ack_rtt_from {
            io.rtt_sample(now.saturating_since(t));
        }

        let is_dupack = if self.cfg.sack {
            !advanced && newly_sacked > 0
        } else {
            !advanced && h.payload_len == 0 && !window_changed && self.snd_nxt > self.snd_una
        };
        self.rack.reord_seen |= reordered;
        let pure_dup = !advanced && !window_changed && h.payload_len == 0;
        if reord_from < prior_fack {
            self.note_reordering(prior_fack - reord_from);
        }
        let newly_lost = if self.rack_on() {
            self.rack_detect_loss(now, false)
        } else if self.sack_recovery() {
            let dubious = self.ca != CaState::Open || newly_sacked > 0 || pure_dup;
            let mut lost = if self.fack_on() {
                self.fack_mark_lost(now, dubious)
            } else {
                // tcp_update_scoreboard without FACK: sacked_out −
                // tp->reordering segments from the head are lost.
                self.sb.mark_lost_by_sack(self.reordering, self.mss())
            };
            if self.cfg.mark_lost_retrans && !self.fack_disabled && self.ca == CaState::Recovery {
                lost += self.sb.mark_lost_retrans(self.sb.highest_sacked_end());
            }
            lost
        } else {
            0
        };
        let flags = AckFlags {
            advanced,
            acked_bytes: h.ack - prior_una,
            is_dupack,
            sacked: newly_sacked > 0,
            orig_acked,
            ts_ecr: h.ts_ecr,
            dubious: newly_sacked > 0 || pure_dup,
        };
        self.update_loss_state(now, &flags, io);
        let pure_dupack = !advanced && !window_changed && h.payload_len == 0 && newly_sacked == 0;
        self.process_tlp_ack(now, h.ack, pure_dupack, dsack);
        let delivered = newly_acked + newly_sacked;
        if self.ca == CaState::Recovery && self.prr_active() && delivered > 0 {
            self.prr_reduce(delivered, advanced && newly_lost == 0);
        }
        if self.ca == CaState::Recovery && self.rh_active() {
            // tcp_cwnd_down: FLAG_ANY_PROGRESS or FLAG_DSACKING_ACK.
            let progress = delivered > 0 || advanced || dsack.is_some();
            let cwnd_min = match self.cfg.cc {
                // tcp_reno_min_cwnd; CUBIC (2.6.29+) has no min_cwnd.
                CcKind::Reno | CcKind::NewReno => self.state.ssthresh_bytes / 2,
                _ => self.state.ssthresh_bytes,
            };
            self.state.cwnd_bytes = self.rh.cwnd_down(
                self.state.cwnd_bytes,
                cwnd_min,
                self.sb.pipe(),
                self.mss() as u64,
                progress,
            );
        }

        if advanced || newly_sacked > 0 {
            // rs->losses = tp->lost − lost: a retransmission lost again counts.
            let losses = self.sb.lost_events_bytes() - prior_lost_events;
            let rs = self
                .rate
                .finish(&acc, now, self.rtt.min_rtt(), losses, prior_in_flight);
            if let Some(r) = rs {
                self.rack
                    .update_reo_wnd(r.prior_delivered_bytes, r.delivered_total_bytes);
            }
            let sample = AckSample {
                now,
                acked_bytes: delivered,
                rtt,
                ca_rtt,
                sk_pacing_rate: self.sk_pacing_rate(),
                paced: self.pacing_rate().is_some(),
                min_rtt: self.rtt.min_rtt(),
                srtt: self.rtt.srtt(),
                bytes_in_flight: self.sb.pipe(),
                in_recovery: self.ca == CaState::Recovery,
                // Linux tcp_may_raise_cwnd (RFC 5681 too): the window grows
                // only on ACKs of new data in sequence (FLAG_DATA_ACKED),
                // or on any delivery once reordering was seen.
                cwnd_limited: if self.cfg.cwnd_limited_by_flight {
                    self.cwnd_limited_by_flight(prior_in_flight)
                } else {
                    self.cwnd_limited()
                } && (advanced || self.rack.reord_seen),
                rate: rs,
            };
            self.cc.on_ack(&mut self.state, &sample);
            self.state.cwnd_bytes = self.state.cwnd_bytes.max(1);
        }
        if std::mem::take(&mut self.rh_moderate) && self.rh_active() {
            // After tcp_cong_avoid, as in 2.6 tcp_ack.
            self.state.cwnd_bytes = ratehalving::moderate_cwnd(
                self.state.cwnd_bytes,
                self.sb.pipe(),
                self.mss() as u64,
            );
        }
        let deferred = if advanced {
            // RFC 6298 5.2 / 5.3, as Linux times it; then Linux
            // tcp_set_xmit_timer.
            self.set_xmit_timer(now)
        } else {
            None
        };
        if self.ca != CaState::Open && self.tlp_at.is_some() {
            // The probe gives way to the RTO, timed from the head segment.
            self.rearm_rto(now);
            self.tlp_at = None;
        }
        self.release_preamble(now);
        self.try_send(now, io);
        if let Some(d) = deferred {
            self.finish_xmit_timer(now, d);
        }
    }

    /// `rearm_rto` then `schedule_loss_probe(now, true)`, as an ACK of new
    /// data does, but with the two deadlines left as [`ARM_DEFERRED`] when
    /// the probe is armed: the new data this ACK usually releases replaces
    /// both at once (`send_new`: the probe gives way to the head-based
    /// RTO), so computing them first would be wasted work on nearly every
    /// ACK (issue 12, the cost per ACK). Whether each timer is armed is
    /// decided here, as before, so every test of `is_some()` in between
    /// sees what it saw; [`Self::finish_xmit_timer`] computes the values
    /// still deferred when `on_ack` returns, from the inputs captured here
    /// (the same values, bit for bit).
    fn set_xmit_timer(&mut self, now: Instant) -> Option<DeferredArm> {
        let head = match self.sb.get(0) {
            Some(h) if self.probe_allowed() => h.sent_at,
            _ => {
                self.rearm_rto(now);
                self.schedule_loss_probe(now, true);
                return None;
            }
        };
        let d = DeferredArm {
            head_sent_at: head,
            probe_pending: self.tlp_at.is_some() || self.reo_at.is_some(),
            rto: self.rtt.rto(),
            srtt: self.rtt.srtt(),
            one_outstanding: self.sb.len() == 1,
        };
        self.rto_at = Some(ARM_DEFERRED);
        self.tlp_at = Some(ARM_DEFERRED);
        Some(d)
    }

    /// The deadlines [`Self::set_xmit_timer`] deferred and nothing replaced.
    fn finish_xmit_timer(&mut self, now: Instant, d: DeferredArm) {
        if self.rto_at == Some(ARM_DEFERRED) {
            self.rto_at = Some(self.rto_deadline(now, d.head_sent_at, d.rto, d.probe_pending));
        }
        if self.tlp_at == Some(ARM_DEFERRED) {
            let rto_left = Some(d.rto).filter(|r| r.as_ns() > 0);
            self.tlp_at = Some(self.probe_deadline(now, rto_left, d.srtt, d.one_outstanding));
        }
    }

    /// The preamble (`TcpConfig::app_preamble_bytes`, iperf3's cookie) is
    /// acknowledged: the application writes its data now, as `app_write`
    /// does (idle restart check, `CA_EVENT_TX_START` from an empty pipe).
    fn release_preamble(&mut self, now: Instant) {
        let Some(end) = self.app_end.filter(|&e| self.snd_una >= e) else {
            return;
        };
        let Some(hold) = self.preamble_hold.take() else {
            return;
        };
        debug_assert_eq!(end, 1 + self.cfg.app_preamble_bytes as u64);
        self.app_end = hold;
        self.app_resumes(now);
    }

    /// RACK loss detection (see [`super::rack`]); arms the reordering
    /// timer for segments not yet overdue. Returns the bytes newly lost.
    fn rack_detect_loss(&mut self, now: Instant, force: bool) -> u64 {
        let Some((xmit, end, rtt)) = self.rack.take_advanced(force) else {
            return 0;
        };
        // The scan stops at its first segment when that one is neither
        // SACKed, nor lost and waiting, nor a retransmission, and was sent
        // at or after RACK's segment (the usual in-order ACK): nothing is
        // lost and nothing waits, whatever the reordering window, so that
        // window is not computed (issue 12, the cost per ACK).
        let head_ends_scan = self.sb.get(0).is_none_or(|s| {
            !(s.sacked || s.ever_retransmitted || s.lost && !s.retrans_in_flight)
                && (s.sent_at, s.end()) >= (xmit, end)
        });
        if head_ends_scan {
            return 0;
        }
        let in_recovery = matches!(self.ca, CaState::Recovery | CaState::Loss);
        let dupthresh = self.sb.sacked_bytes() >= DUP_THRESH as u64 * self.mss() as u64;
        let reo_wnd =
            self.rack
                .reo_wnd(in_recovery, dupthresh, self.rtt.min_rtt(), self.rtt.srtt());
        let (lost, wait) = self.sb.rack_detect(xmit, end, rtt + reo_wnd, now);
        if let Some(w) = wait {
            self.reo_at = Some(self.timer_at(now, w, true));
        }
        lost
    }

    /// Linux `tcp_rack_reo_timeout`: the reordering window has passed.
    fn on_reo_timeout(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.reo_at = None;
        if self.rack_detect_loss(now, true) == 0 {
            return;
        }
        if matches!(self.ca, CaState::Open | CaState::Disorder) {
            self.enter_recovery(now, io);
            if self.prr_active() {
                self.prr_reduce(self.mss() as u64, false); // tcp_cwnd_reduction(sk, 1, 0)
            }
        }
    }

    /// Linux `tcp_rearm_rto` (net/ipv4/tcp_input.c, the same rule from 3.10
    /// to 6.x): the retransmission timer restarts one RTO from now — unless
    /// the timer it replaces is a probe (the TLP, or RACK's reordering
    /// timer; Linux keeps them in the one `icsk` timer slot). Then it
    /// expires one RTO after the head segment's latest transmission ("Offset
    /// the time elapsed after installing regular RTO": 3.10–4.12 from
    /// `tcp_skb_timestamp(head)`, later `tcp_rto_delta_us`), at once if that
    /// has passed. Nothing outstanding: no timer.
    ///
    /// Through a policer this is what turns a lost retransmission or a lost
    /// tail into a timeout two round trips after the last ACK rather than
    /// one RTO after it: an ACK that arrives while the probe is armed leaves
    /// the timer tied to the head segment's send time.
    fn rearm_rto(&mut self, now: Instant) {
        let rto = self.rtt.rto();
        let probe_pending = self.tlp_at.is_some() || self.reo_at.is_some();
        self.rto_at = self
            .sb
            .get(0)
            .map(|head| self.rto_deadline(now, head.sent_at, rto, probe_pending));
    }

    /// [`Self::rearm_rto`]'s deadline with data outstanding.
    fn rto_deadline(
        &self,
        now: Instant,
        head_sent_at: Instant,
        rto: Duration,
        probe_pending: bool,
    ) -> Instant {
        if probe_pending {
            let left = head_sent_at.saturating_add(rto).saturating_since(now);
            self.timer_at(now, left, false)
        } else {
            self.timer_at(now, rto, false)
        }
    }

    /// When a timer of the retransmission slot armed now for `when` runs:
    /// exactly then, or with [`TcpConfig::timer_hz`] at the tick of its
    /// jiffies timer-wheel bucket (`when` rounded up to whole jiffies, at
    /// least one, as `usecs_to_jiffies(max(delta_us, 1))`); `timeout_min`
    /// adds Linux's `TCP_TIMEOUT_MIN` (2 jiffies) as the probe and the
    /// reordering timer do. See `tcp/jiffies.rs`.
    fn timer_at(&self, now: Instant, when: Duration, timeout_min: bool) -> Instant {
        match self.cfg.timer_hz {
            None => now.saturating_add(if timeout_min {
                when + TIMEOUT_MIN
            } else {
                when
            }),
            Some(hz) => {
                let j = jiffies::to_jiffies(when, hz).max(1) + if timeout_min { 2 } else { 0 };
                Instant::from_ns(jiffies::expiry_ns(
                    now.as_ns(),
                    j,
                    hz,
                    self.cfg.timer_wheel_levels,
                ))
            }
        }
    }

    /// RFC 8985 §7.2 / Linux `tcp_schedule_loss_probe`: in the Open state
    /// with data outstanding, PTO = 2·SRTT, plus `min_rto` (Linux
    /// `tcp_rto_min`, RFC 8985's WCDelAckT) when one segment is
    /// outstanding, else plus 2 ms; `initial_rto` without an RTT sample;
    /// never later than the RTO would fire (`advancing_rto`: the RTO was
    /// just restarted).
    fn schedule_loss_probe(&mut self, now: Instant, advancing_rto: bool) {
        self.tlp_at = None;
        if !self.probe_allowed() || self.sb.is_empty() {
            return;
        }
        let rto_left = if advancing_rto {
            Some(self.rtt.rto())
        } else {
            self.rto_at.map(|t| t.saturating_since(now))
        };
        let rto_left = rto_left.filter(|d| d.as_ns() > 0);
        let at = self.probe_deadline(now, rto_left, self.rtt.srtt(), self.sb.len() == 1);
        self.tlp_at = Some(at);
    }

    /// Whether the state and the configuration allow a loss probe (with
    /// data outstanding).
    fn probe_allowed(&self) -> bool {
        self.cfg.tlp && self.cfg.sack && self.rack_tlp_ok && self.ca == CaState::Open
    }

    /// [`Self::schedule_loss_probe`]'s deadline: PTO from `srtt` (one
    /// segment outstanding or more), capped by the time `rto_left`.
    fn probe_deadline(
        &self,
        now: Instant,
        rto_left: Option<Duration>,
        srtt: Option<Duration>,
        one_outstanding: bool,
    ) -> Instant {
        if let Some(hz) = self.cfg.timer_hz {
            // tcp_schedule_loss_probe in jiffies: usecs_to_jiffies(2·SRTT)
            // + TCP_RTO_MIN or TCP_TIMEOUT_MIN, capped by the RTO's.
            let j = |d: Duration| jiffies::to_jiffies(d, hz);
            let mut pto = match srtt {
                Some(srtt) if one_outstanding => j(srtt + srtt) + j(self.cfg.min_rto),
                Some(srtt) => j(srtt + srtt) + 2,
                None => j(self.cfg.initial_rto),
            };
            if let Some(left) = rto_left {
                pto = pto.min(j(left));
            }
            let levels = self.cfg.timer_wheel_levels;
            let at = jiffies::expiry_ns(now.as_ns(), pto.max(1), hz, levels);
            return Instant::from_ns(at);
        }
        let mut pto = match srtt {
            Some(srtt) => {
                let extra = if one_outstanding {
                    self.cfg.min_rto
                } else {
                    TIMEOUT_MIN
                };
                srtt + srtt + extra
            }
            None => self.cfg.initial_rto,
        };
        if let Some(left) = rto_left {
            pto = pto.min(left);
        }
        now.saturating_add(pto)
    }

    /// RFC 8985 §7.3 / Linux `tcp_send_loss_probe`: send one new segment
    /// if the application and the peer's window allow (cwnd is ignored),
    /// else retransmit the last segment; at most one probe outstanding.
    fn send_loss_probe(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.tlp_at = None;
        if self.tlp_high_seq.is_some() {
            // No consecutive probes; the timer goes back to the RTO.
            self.rearm_after_probe(now);
            return;
        }
        let len = (self.mss() as u64).min(self.app_remaining());
        let sent = if len > 0 && self.snd_nxt + len <= self.snd_una + self.snd_wnd {
            self.send_new(now, len as u32, io);
            self.tlp_retrans = false;
            true
        } else if let Some(idx) = self
            .sb
            .last_index()
            .filter(|&i| self.sb.get(i).is_some_and(|s| !s.sacked))
        {
            self.retransmit(now, idx, io, false);
            self.tlp_retrans = true;
            true
        } else {
            false
        };
        if sent {
            self.tlp_high_seq = Some(self.snd_nxt);
            self.stats.loss_probes += 1;
        }
        self.rearm_after_probe(now);
    }

    /// `tcp_send_loss_probe` ends with `tcp_rearm_rto` while the probe
    /// timer is still the pending one: the RTO is head-based.
    fn rearm_after_probe(&mut self, now: Instant) {
        self.tlp_at = Some(now);
        self.rearm_rto(now);
        self.tlp_at = None;
    }

    /// RFC 8985 §7.4 / Linux `tcp_process_tlp_ack`: an ACK beyond the
    /// probe means the probe repaired a loss: reduce the window once
    /// (Linux enters and at once ends CWR: ssthresh from the algorithm,
    /// cwnd = ssthresh). A D-SACK of the probe, or a pure duplicate ACK
    /// at its end, means nothing was lost.
    fn process_tlp_ack(
        &mut self,
        now: Instant,
        ack: u64,
        pure_dupack: bool,
        dsack: Option<(u64, u64)>,
    ) {
        let Some(end) = self.tlp_high_seq else {
            return;
        };
        if ack < end {
            return;
        }
        if !self.tlp_retrans || dsack.is_some_and(|(_, e)| e == end) {
            self.tlp_high_seq = None;
        } else if ack > end {
            self.tlp_high_seq = None;
            self.stats.loss_probe_recoveries += 1;
            let flight = self.flight_size_bytes();
            let ssthresh = self.cc.ssthresh(&self.state, flight, now);
            self.state.ssthresh_bytes = ssthresh;
            if !self.cc.owns_cwnd() {
                self.state.cwnd_bytes = ssthresh.max(self.mss() as u64);
            }
        } else if pure_dupack {
            self.tlp_high_seq = None;
        }
    }

    /// Linux `tcp_fastretrans_alert` restated per RFC (see module docs).
    fn update_loss_state(&mut self, now: Instant, a: &AckFlags, io: &mut dyn TcpIo) {
        let sack = self.sack_recovery();
        let mss = self.mss() as u64;
        let owns = self.cc.owns_cwnd();
        let (is_dupack, advanced, acked_bytes) = (a.is_dupack, a.advanced, a.acked_bytes);
        let ca_before = self.ca;
        if self.ca == CaState::Loss {
            self.process_loss(now, a);
            if self.ca == CaState::Loss {
                // 2.6 tcp_fastretrans_alert, Loss not undone (F-RTO, a
                // separate path in 2.6, left alone).
                self.rh_moderate |= !self.frto;
                return;
            }
        }
        match self.ca {
            CaState::Loss => {}
            CaState::Recovery => {
                if sack {
                    if self.sack_recovery_step(now, a, io) {
                        // Linux `tcp_fastretrans_alert`: the ACK that
                        // reaches the recovery point is processed further
                        // as Open (`tcp_try_undo_recovery` sets the state,
                        // then step E's default case): a loss already
                        // evident above the old recovery point starts a
                        // new recovery on this very ACK (`tcp_time_to_recover`
                        // → `tcp_enter_recovery`), so `tcp_cwnd_reduction`,
                        // not a burst up to the restored window, decides
                        // what is sent.
                        self.open_step(now, a, io, ca_before);
                    }
                    return;
                }
                match self.cfg.recovery {
                    RecoveryKind::Reno => {
                        if advanced {
                            self.exit_recovery(now);
                        } else if is_dupack && !owns {
                            self.state.cwnd_bytes += mss;
                        }
                    }
                    // RFC 6675 without the SACK option: NewReno.
                    RecoveryKind::NewReno | RecoveryKind::Sack => {
                        if advanced && self.snd_una >= self.high_seq {
                            self.exit_recovery(now);
                        } else if advanced {
                            // RFC 6582 §3.2 step 3: partial ACK.
                            self.sb.mark_head_lost();
                            if let Some(idx) = self.sb.first_lost_unsent() {
                                self.retransmit(now, idx, io, false);
                            }
                            if !owns {
                                let mut cwnd = self.state.cwnd_bytes.saturating_sub(acked_bytes);
                                if acked_bytes >= mss {
                                    cwnd += mss;
                                }
                                self.state.cwnd_bytes = cwnd.max(mss);
                            }
                        } else if is_dupack && !owns {
                            self.state.cwnd_bytes += mss;
                        }
                    }
                }
            }
            CaState::Open | CaState::Disorder => self.open_step(now, a, io, ca_before),
        }
    }

    /// One ACK in the Open or Disorder state (Linux `tcp_fastretrans_alert`
    /// step E, default case): enter recovery when a loss is evident
    /// (`tcp_time_to_recover`), else `tcp_try_to_open`.
    fn open_step(&mut self, now: Instant, a: &AckFlags, io: &mut dyn TcpIo, ca_before: CaState) {
        let sack = self.sack_recovery();
        // tcp_try_undo_dsack: a recovery that ended before its
        // retransmissions were all D-SACKed is undone afterwards.
        if sack && self.undo_prior.is_some() && self.undo_retrans == 0 {
            self.undo_recovery(now, false);
        }
        if a.advanced {
            self.dupacks = 0;
        }
        if a.is_dupack {
            self.dupacks += 1;
        }
        let lost = sack && self.sb.lost_bytes() > 0;
        // With RACK the DupThresh rule is RACK's zero reo_wnd.
        // tcp_time_to_recover: tcp_dupack_heuristics > tp->reordering.
        let dupthresh = self.dupacks >= self.reordering && !self.rack_on();
        if dupthresh || lost {
            self.enter_recovery(now, io);
            return;
        }
        // 2.6 tcp_try_to_open: dubious ACKs moderate the window.
        self.rh_moderate |= a.dubious || ca_before != CaState::Open;
        if self.dupacks > 0 || self.sb.sacked_bytes() > 0 {
            self.ca = CaState::Disorder;
        } else {
            self.ca = CaState::Open;
            if self.sb.retrans_bytes() == 0 {
                self.retrans_stamp = None; // Linux tcp_try_to_open
            }
        }
    }

    /// One ACK in SACK recovery (Linux `tcp_fastretrans_alert`, Recovery):
    /// the recovery ends at the recovery point, undone if it proved
    /// spurious (`tcp_try_undo_recovery`); a partial ACK that shows an
    /// original transmission filled the hole is reordering
    /// (`tcp_try_undo_partial`: undo once no retransmission is in
    /// flight); D-SACKs for every retransmission undo it mid-way
    /// (`tcp_try_undo_dsack`) — and a loss still evident starts a new one.
    /// Returns true when the recovery ended at the recovery point (the
    /// caller goes on with the ACK as Open, see `update_loss_state`).
    fn sack_recovery_step(&mut self, now: Instant, a: &AckFlags, io: &mut dyn TcpIo) -> bool {
        if self.snd_una >= self.high_seq {
            if self.may_undo(a.ts_ecr) {
                self.undo_recovery(now, false);
            } else {
                self.rack.persist = self.rack.persist.saturating_sub(1);
                self.exit_recovery(now);
            }
            return true;
        }
        if a.advanced && self.undo_prior.is_some() && self.packet_delayed(a.ts_ecr) {
            self.rack.reord_seen = true;
            if self.sb.retrans_bytes() == 0 {
                self.undo_recovery(now, true);
            }
        }
        if self.ca == CaState::Recovery && self.undo_prior.is_some() && self.undo_retrans == 0 {
            self.rack.persist = (self.rack.persist + 1).min(super::rack::RECOVERY_THRESH);
            self.undo_recovery(now, false);
        }
        if self.ca != CaState::Recovery && self.sb.lost_bytes() > 0 {
            self.enter_recovery(now, io);
        }
        false
    }

    /// Linux `tcp_process_loss`: the Loss state after an RTO, with the
    /// Eifel check (RFC 3522 via timestamps, Linux `tcp_try_undo_loss` →
    /// `tcp_packet_delayed`) and F-RTO, RFC 5682 §3.1 (SACK-enhanced):
    /// - step 2: the first ACK that advances SND.UNA without
    ///   acknowledging the whole window moves the recovery point to
    ///   SND.NXT and lets new data out instead of retransmissions (if
    ///   there is new data and the peer's window allows it; otherwise
    ///   F-RTO ends and recovery is conventional);
    /// - step 3a: a later duplicate ACK or SACK means the loss was real:
    ///   conventional recovery (go-back-N of the segments marked lost);
    /// - step 3b: an ACK or SACK of data never retransmitted and sent
    ///   before the timeout (checked on every ACK, as Linux does) means
    ///   the timeout was spurious: the reduction is undone.
    fn process_loss(&mut self, now: Instant, a: &AckFlags) {
        let recovered = self.snd_una >= self.high_seq;
        if a.advanced && self.may_undo(a.ts_ecr) {
            self.undo_loss(now, false);
            return;
        }
        if self.frto {
            if a.orig_acked {
                self.undo_loss(now, true); // step 3b
                return;
            }
            if self.snd_nxt > self.high_seq {
                if a.sacked || a.is_dupack {
                    self.frto = false; // step 3a
                }
            } else if a.advanced && !recovered {
                self.high_seq = self.snd_nxt; // step 2b
                let right = self.snd_una + self.snd_wnd;
                if self.app_remaining() > 0 && right > self.snd_nxt {
                    self.frto_new_only = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.ca = CaState::Open;
            self.dupacks = 0;
            self.frto = false;
        }
    }

    /// Linux `tcp_packet_delayed`: the ACK echoes a timestamp older than
    /// the first retransmission, so an original transmission arrived.
    fn packet_delayed(&self, ts_ecr: u64) -> bool {
        self.timestamps
            && ts_ecr != 0
            && self.undo_prior.is_some()
            && self.retrans_stamp.is_some_and(|t| ts_ecr < t.as_ns())
    }

    /// Linux `tcp_try_undo_loss`: undo the reduction and the loss marks.
    fn undo_loss(&mut self, now: Instant, frto: bool) {
        self.sb.unmark_lost();
        if let Some((cwnd, ssthresh)) = self.undo_prior.take() {
            self.cc.undo(&mut self.state, cwnd, ssthresh, now);
        }
        self.stats.spurious_rtos += 1;
        self.rh_moderate = true; // tcp_undo_cwr
        self.rto_streak = 0;
        self.frto = false;
        self.frto_new_only = false;
        if frto || self.cfg.sack {
            self.ca = CaState::Open;
            self.dupacks = 0;
        }
    }

    /// Linux `tcp_init_undo` + `prior_ssthresh = tcp_current_ssthresh`.
    fn save_undo(&mut self) {
        let cwnd = self.state.cwnd_bytes;
        let ssthresh = self.state.ssthresh_bytes;
        let prior_ssthresh = if self.ca == CaState::Recovery {
            ssthresh
        } else {
            ssthresh.max(cwnd / 2 + cwnd / 4)
        };
        self.undo_prior = Some((cwnd, prior_ssthresh));
        self.undo_marker = self.snd_una;
        self.undo_retrans = if self.sb.retrans_bytes() > 0 {
            self.sb.retrans_bytes().div_ceil(self.mss() as u64) as i64
        } else {
            -1
        };
    }

    /// Linux `tcp_may_undo`: a reduction is on record and either every
    /// retransmission of it was D-SACKed or the ACK shows an original
    /// transmission arrived.
    fn may_undo(&self, ts_ecr: u64) -> bool {
        self.undo_prior.is_some() && (self.undo_retrans == 0 || self.packet_delayed(ts_ecr))
    }

    /// Linux `tcp_check_dsack` / `tcp_dsack_seen`: count a D-SACK of
    /// [start, end) against the episode's retransmissions.
    fn on_dsack(&mut self, start: u64, end: u64) {
        let dup_segs = (end.saturating_sub(start)).div_ceil(self.mss() as u64);
        self.dsack_dups += dup_segs;
        if dup_segs == 0 || self.dsack_dups > self.stats.retransmits {
            return; // dubious
        }
        self.rack.dsack_seen = true;
        if self.undo_prior.is_some() && self.undo_retrans > 0 && end > self.undo_marker {
            self.undo_retrans = (self.undo_retrans - dup_segs as i64).max(0);
        }
    }

    /// Undo a spurious fast recovery (Linux `tcp_try_undo_recovery`,
    /// `tcp_try_undo_dsack`, `tcp_try_undo_partial`): the window before
    /// it comes back and the state opens; `unmark` also clears the loss
    /// marks (the partial-ACK case).
    fn undo_recovery(&mut self, now: Instant, unmark: bool) {
        if unmark {
            self.sb.unmark_lost();
        }
        if let Some((cwnd, ssthresh)) = self.undo_prior.take() {
            self.cc.undo(&mut self.state, cwnd, ssthresh, now);
        }
        self.stats.recovery_undos += 1;
        self.rh_moderate = true; // tcp_undo_cwr
        self.dupacks = 0;
        self.ca = if self.sb.sacked_bytes() > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        };
    }

    fn enter_recovery(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.stats.fast_recoveries += 1;
        self.ca = CaState::Recovery;
        self.high_seq = self.snd_nxt;
        let flight = self.flight_size_bytes();
        // Linux tcp_init_cwnd_reduction: PRR's divisor is prior_cwnd, the
        // window when recovery began (RFC 6937's RecoverFS is FlightSize;
        // the two differ only when the window was not filled).
        self.recover_fs = self.state.cwnd_bytes.max(1);
        self.save_undo();
        self.tlp_high_seq = None; // tcp_init_cwnd_reduction
        if self.tlp_at.is_some() {
            self.rearm_rto(now);
            self.tlp_at = None;
        }
        let ssthresh = self.cc.ssthresh(&self.state, flight, now);
        self.state.ssthresh_bytes = ssthresh;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.rh.start();
        if !self.cc.owns_cwnd() && !self.rh_active() && !self.prr_active() {
            let mss = self.mss() as u64;
            self.state.cwnd_bytes = if self.sack_recovery() {
                ssthresh.max(mss) // RFC 6675 §5 (4.2)
            } else {
                ssthresh + 3 * mss // RFC 5681 §3.2 step 4
            };
        }
        if !self.rack_on() {
            self.sb.mark_head_lost();
        }
        // RFC 5681 §3.2 step 3 / RFC 6675 §5 (4.3): retransmit now;
        // (4.3) also sets RescueRxt to its end.
        self.rescue_rxt = None;
        if self.rh_active() {
            // 2.6: tcp_cwnd_down first, then tcp_xmit_retransmit_queue
            // sends the retransmission under the reduced window (try_send).
            return;
        }
        if self.prr_active() {
            // Linux (3.2+, PRR): `tcp_enter_recovery` sends nothing and
            // leaves cwnd alone; `tcp_cwnd_reduction` then sets cwnd =
            // packets in flight + sndcnt, counted *before* the fast
            // retransmit ("Force a fast retransmit upon entering fast
            // recovery": prr_out is still 0), and only then does
            // `tcp_xmit_recovery` → `tcp_xmit_retransmit_queue` send, under
            // that window (net/ipv4/tcp_input.c `tcp_ack`: fastretrans_alert,
            // cong_control, xmit_recovery; 3.x the same order at the end of
            // `tcp_fastretrans_alert`; `tcp_rack_reo_timeout`, tcp_recovery.c,
            // likewise). Here: the caller's `prr_reduce`, then `try_send`.
            // Retransmitting first would count the retransmission in the
            // pipe and in prr_out and let one more segment out: with a
            // window of 2 through a one-frame policer bucket, a new segment
            // beside every fast retransmit, which Linux never sends.
            self.rescue_rxt = self
                .sb
                .first_lost_unsent()
                .and_then(|idx| self.sb.get(idx))
                .map(|s| s.end());
            return;
        }
        if let Some(idx) = self.sb.first_lost_unsent() {
            self.rescue_rxt = self.sb.get(idx).map(|s| s.end());
            self.retransmit(now, idx, io, false);
        }
    }

    fn prr_active(&self) -> bool {
        self.prr && !self.cfg.rate_halving && self.sack_recovery() && !self.cc.owns_cwnd()
    }

    /// Rate-halving replaces PRR ([`TcpConfig::rate_halving`]).
    fn rh_active(&self) -> bool {
        self.cfg.rate_halving && self.sack_recovery() && !self.cc.owns_cwnd()
    }

    /// FACK marking ([`TcpConfig::fack`]): SACK recovery without RACK,
    /// until reordering beyond 3 segments is seen (`note_reordering`: 2.6 `tcp_update_reordering` →
    /// `tcp_disable_fack`).
    fn fack_on(&self) -> bool {
        self.cfg.fack && self.sack_recovery() && !self.rack_on() && !self.fack_disabled
    }

    /// 2.6.32 `tcp_fastretrans_alert` → `tcp_update_scoreboard` with FACK
    /// (see [`Scoreboard::mark_lost_fack`]), never in the Loss state (it
    /// returns before). The recovery point bounds the marking; an ACK that
    /// will start a recovery sets it to SND.NXT first. A dubious ACK whose
    /// head segment is older than the RTO marks the timed-out segments
    /// (`tcp_time_to_recover` trick 3, `tcp_timeout_skbs`).
    fn fack_mark_lost(&mut self, now: Instant, dubious: bool) -> u64 {
        if self.ca == CaState::Loss {
            return 0;
        }
        let bound = if self.ca == CaState::Recovery {
            self.high_seq
        } else {
            self.snd_nxt
        };
        let mut lost = self.sb.mark_lost_fack(self.reordering as u64, bound);
        let rto = self.rtt.rto();
        if dubious && self.sb.head_timed_out(now, rto) {
            lost += self.sb.mark_lost_timed_out(now, rto);
        }
        lost
    }

    /// RFC 6937 §3 PRR, with Linux's `tcp_cwnd_reduction` choices: the
    /// slow-start reduction bound (PRR-SSRB) adds one segment only when the
    /// ACK advanced SND.UNA without revealing new losses, and the first
    /// transmission of the recovery is always allowed.
    fn prr_reduce(&mut self, delivered: u64, ssrb_extra: bool) {
        self.prr_delivered += delivered;
        // Linux counts in packets, RFC 6937 in bytes: `unit` is one
        // segment or one byte, and every figure below is in it.
        let unit = if self.prr_in_packets() {
            self.mss() as u64
        } else {
            1
        };
        let up = |bytes: u64| bytes.div_ceil(unit) as i128;
        let pipe = up(self.sb.pipe());
        let ssthresh = (self.state.ssthresh_bytes / unit) as i128;
        let (dlv, out) = (up(self.prr_delivered), up(self.prr_out));
        let mut sndcnt = if pipe > ssthresh {
            // Proportional part: ceil(prr_delivered · ssthresh / RecoverFS),
            // RecoverFS = prior_cwnd as in Linux.
            let fs = ((self.recover_fs / unit) as i128).max(1);
            (dlv * ssthresh + fs - 1) / fs - out
        } else {
            let limit = (dlv - out).max(up(delivered)) + i128::from(ssrb_extra);
            (ssthresh - pipe).min(limit)
        };
        sndcnt = sndcnt.max(i128::from(self.prr_out == 0));
        let cwnd = u64::try_from(pipe + sndcnt)
            .unwrap_or(0)
            .saturating_mul(unit);
        self.state.cwnd_bytes = cwnd.max(1);
    }

    /// Linux's `tcp_cwnd_reduction` (net/ipv4/tcp_input.c) keeps PRR in
    /// packets: `prr_delivered`, `prr_out`, `tcp_packets_in_flight`,
    /// `snd_ssthresh` and `prior_cwnd` are segment counts, so
    /// `DIV_ROUND_UP(prr_delivered · ssthresh, prior_cwnd)` rounds up to a
    /// whole segment. In bytes (RFC 6937's DeliveredData) the same ceiling
    /// rounds up to a byte: with ssthresh 2 of a prior window of 3, one
    /// segment delivered allows 1 segment in Linux and 2/3 of one in bytes,
    /// i.e. nothing until the next ACK. The Linux profiles (`linux_rto`)
    /// count packets; the others keep the RFC's bytes.
    fn prr_in_packets(&self) -> bool {
        self.cfg.linux_rto
    }

    fn exit_recovery(&mut self, now: Instant) {
        if self.rh_active() {
            // 2.6 tcp_complete_cwr, then tcp_try_to_open's moderation.
            self.state.cwnd_bytes =
                ratehalving::complete_cwr(self.state.cwnd_bytes, self.state.ssthresh_bytes);
            self.rh_moderate = true;
        } else {
            self.cc.on_recovery_exit(&mut self.state, now);
        }
        self.dupacks = 0;
        self.ca = if self.sb.sacked_bytes() > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        };
    }

    /// Linux `tcp_is_cwnd_limited`.
    fn cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        self.state.in_slow_start() && self.state.cwnd_bytes < 2 * self.max_flight_bytes
    }

    /// The rate the sender paces at, if it paces: the congestion
    /// control's own, or with `pacing` Linux's default.
    fn pacing_rate(&self) -> Option<Rate> {
        if self.state.pacing_rate.is_none() && !self.cfg.pacing {
            return None;
        }
        self.sk_pacing_rate()
    }

    /// Linux `sk_pacing_rate`, which it keeps whether or not it paces (TSO
    /// autosizing and CUBIC's HyStart read it): the congestion control's
    /// rate, else `tcp_update_pacing_rate`'s default; `None` before the
    /// first RTT sample (~0U in Linux).
    fn sk_pacing_rate(&self) -> Option<Rate> {
        self.state.pacing_rate.or_else(|| {
            default_pacing_rate(
                self.state.cwnd_bytes,
                self.state.ssthresh_bytes,
                self.flight_size_bytes(),
                self.rtt.srtt()?,
            )
        })
    }

    fn app_remaining(&self) -> u64 {
        match self.app_end {
            None => u64::MAX,
            Some(e) => e.saturating_sub(self.snd_nxt),
        }
    }

    fn next_segment(&mut self, new_only: bool) -> Next {
        let fr_rfc5681 = self.ca == CaState::Recovery && !self.sack_recovery();
        let cwnd = self.state.cwnd_bytes;
        let pipe = self.sb.pipe();
        if !fr_rfc5681 && !new_only {
            if let Some(idx) = self.sb.first_lost_unsent() {
                let len = self.sb.get(idx).map_or(0, |s| s.len) as u64;
                return if pipe + len <= cwnd {
                    Next::Retransmit(idx)
                } else {
                    Next::Stop(Blocked::Cwnd)
                };
            }
        }
        let mss = self.mss() as u64;
        let before_recovery = matches!(self.ca, CaState::Open | CaState::Disorder);
        // Before recovery, only limited transmit (RFC 3042) lets data out
        // beyond cwnd: with SACK, as Linux, by counting SACKed segments out
        // of `pipe`; without, up to two segments for two duplicate ACKs.
        // Without it the window is FlightSize (RFC 5681).
        let flight = if fr_rfc5681 || (before_recovery && !self.cfg.limited_transmit) {
            self.flight_size_bytes()
        } else {
            pipe
        };
        let allowance = if before_recovery && self.cfg.limited_transmit && !self.cfg.sack {
            self.dupacks.min(2) as u64 * mss
        } else {
            0
        };
        let mut len = mss.min(self.app_remaining());
        if len == 0 {
            return self.rule3_or(Blocked::App, pipe, cwnd);
        }
        // The socket buffer holds what is not yet acknowledged; the
        // application can write no further (Linux `sk_stream_memory_free`),
        // which for TCP is being application-limited.
        if let Some(buf) = self.cfg.send_buffer_bytes {
            if self.snd_nxt - self.snd_una + len > buf {
                return self.rule3_or(Blocked::App, pipe, cwnd);
            }
        }
        let right = self.snd_una + self.snd_wnd;
        // Room the segment takes in cwnd: Linux counts packets, so a
        // partial segment at the window's edge needs a whole one.
        let mut room = len;
        if self.snd_nxt + len > right {
            if self.sb.is_empty() && right > self.snd_nxt {
                len = right - self.snd_nxt;
            } else if let Some(p) = self.window_edge_partial(right, len) {
                (len, room) = (p, mss);
            } else {
                return self.rule3_or(Blocked::Rwnd, pipe, cwnd);
            }
        }
        if flight + room > cwnd + allowance {
            return Next::Stop(Blocked::Cwnd);
        }
        Next::New(len as u32)
    }

    /// With [`TcpConfig::window_edge_partial`]: the bytes up to the window's
    /// right edge that Linux sends as a short last segment
    /// (`tcp/wndsplit.rs`), when `len` (a full segment) does not fit.
    fn window_edge_partial(&self, right: u64, len: u64) -> Option<u64> {
        let mss = self.mss() as u64;
        if !self.cfg.window_edge_partial || len < mss || right <= self.snd_nxt {
            return None;
        }
        // tcp_tso_segs: the autosized burst at sk_pacing_rate.
        let max_segs = match self.sk_pacing_rate() {
            Some(rate) => tso_autosize_segs(
                rate,
                self.rtt.min_rtt(),
                mss,
                self.cc.min_tso_segs(&self.state),
            ) as u64,
            None => GSO_MAX_SIZE_BYTES / mss.max(1),
        };
        // tcp_minshall_check: a sub-MSS segment sent earlier is unacked.
        let small_unacked =
            !self.sb.is_empty() && self.snd_sml > self.snd_una && self.snd_sml <= self.snd_nxt;
        wndsplit::partial_at_window_edge(
            right - self.snd_nxt,
            mss,
            self.edge_run,
            max_segs,
            small_unacked,
        )
    }

    /// RFC 6675 NextSeg rules 3 and 4, in SACK recovery only, when no
    /// new data may be sent. Rule 4, the rescue retransmission (if
    /// configured): once HighACK has passed RescueRxt, the highest
    /// un-SACKed segment not already being retransmitted, once per
    /// recovery (RescueRxt = RecoveryPoint afterwards).
    fn rule3_or(&self, why: Blocked, pipe: u64, cwnd: u64) -> Next {
        if self.ca != CaState::Recovery || !self.sack_recovery() {
            return Next::Stop(why);
        }
        let fits = |idx: usize| pipe + self.sb.get(idx).map_or(0, |s| s.len) as u64 <= cwnd;
        if let Some(idx) = self.sb.first_unsacked_below_sack() {
            return if fits(idx) {
                Next::Retransmit(idx)
            } else {
                Next::Stop(Blocked::Cwnd)
            };
        }
        if self.cfg.rescue_retransmit && self.rescue_rxt.is_none_or(|r| self.snd_una > r) {
            if let Some(idx) = self.sb.last_unsacked_unsent() {
                return if fits(idx) {
                    Next::Rescue(idx)
                } else {
                    Next::Stop(Blocked::Cwnd)
                };
            }
        }
        Next::Stop(why)
    }

    fn try_send(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.pacing_wait = false;
        if self.phase != Phase::Established {
            return;
        }
        let new_only = std::mem::take(&mut self.frto_new_only);
        let nxt_before = self.snd_nxt;
        let mut why = self.send_loop(now, io, new_only);
        if new_only && self.snd_nxt <= self.high_seq && !self.pacing_wait {
            // F-RTO step 2b could send nothing new: conventional recovery
            // (Linux tcp_xmit_recovery).
            self.frto = false;
            why = self.send_loop(now, io, false);
        }
        if self.snd_nxt > nxt_before {
            self.schedule_loss_probe(now, false); // tcp_write_xmit
        }
        self.validate_cwnd(why == Blocked::Cwnd && !self.pacing_wait);
        // tcp_rate_check_app_limited.
        if why == Blocked::App
            && !self.pacing_wait
            && self.sb.pipe() < self.state.cwnd_bytes
            && self.sb.lost_bytes() <= self.sb.retrans_bytes()
        {
            self.rate.mark_app_limited(self.sb.pipe());
        }
    }

    /// Send while the window, the pacer and the application allow; with
    /// `new_only`, no retransmissions. Returns what stopped it.
    fn send_loop(&mut self, now: Instant, io: &mut dyn TcpIo, new_only: bool) -> Blocked {
        let mut why = Blocked::App;
        let mut first = true;
        self.edge_run = 0;
        loop {
            let next = self.next_segment(new_only);
            if let Next::Stop(b) = next {
                why = b;
                break;
            }
            // Only a sendable segment waits for the pacer (no idle timers).
            if self.pacing_rate().is_some() && !self.pacer.may_send(now) {
                self.pacing_wait = true;
                break;
            }
            match next {
                Next::Stop(_) => {}
                Next::Retransmit(idx) => self.retransmit(now, idx, io, true),
                Next::Rescue(idx) => {
                    self.rescue_rxt = Some(self.high_seq);
                    self.retransmit(now, idx, io, true);
                }
                Next::New(len) => {
                    if let Some(b) = self.tso_defer_reason(now, first) {
                        why = b;
                        break;
                    }
                    self.skb_rem = self.skb_rem.saturating_sub(1);
                    self.send_new(now, len, io)
                }
            }
            first = false;
        }
        why
    }

    /// Linux 3.x-4.1 `tcp_write_xmit` → `tcp_tso_should_defer`
    /// (net/ipv4/tcp_output.c), asked when new data would start an skb
    /// (`first`: the head skb of this pass, perhaps the remainder of one
    /// split earlier). An skb holds `tcp_xmit_size_goal` bytes (3.12 TSO
    /// autosizing: half a millisecond at `sk_pacing_rate` = 2·cwnd/SRTT,
    /// at least `tcp_min_tso_segs` = 2 segments); one of one segment is
    /// never deferred (only Nagle, which full segments pass). Defer unless
    /// the state is not Open, or the head was deferred two ticks ago
    /// ("less than two clock ticks", HZ 250 as the lab's kernel), or the
    /// allowed bytes `limit` = min(receive window, (cwnd − in flight))
    /// reach 64 KB (`sk_gso_max_size`), or the whole skb when it is not
    /// the queue's tail, or a third of min(snd_wnd, cwnd)
    /// (`tcp_tso_win_divisor` = 3). No timer ends a deferral: the next
    /// ACK's `tcp_write_xmit` asks again. Returns why the sender waits:
    /// the congestion window only when it, not the receive window, is the
    /// smaller limit (4.1 sets `is_cwnd_limited` so), which gates growth.
    fn tso_defer_reason(&mut self, now: Instant, first: bool) -> Option<Blocked> {
        if !self.cfg.tso_defer {
            return None;
        }
        const TICK_NS: u64 = 4_000_000; // HZ = 250
        let mss = self.mss() as u64;
        if self.skb_rem == 0 {
            self.skb_rem = self
                .xmit_size_goal_segs()
                .min(self.app_remaining().div_ceil(mss))
                .max(1);
        } else if !first {
            return None; // inside an skb already being sent
        }
        let pcount = self.skb_rem;
        let cwnd = self.state.cwnd_bytes;
        let cong_win = cwnd.saturating_sub(self.sb.pipe());
        let send_win = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        let send_now = 'decide: {
            if pcount <= 1 || self.ca != CaState::Open {
                break 'decide true;
            }
            if self
                .tso_deferred_at
                .is_some_and(|t| now.saturating_since(t).as_ns() >= 2 * TICK_NS)
            {
                break 'decide true;
            }
            let limit = cong_win.min(send_win);
            if limit >= GSO_MAX_SIZE_BYTES {
                break 'decide true;
            }
            let skb_len = pcount * mss;
            let tail = self.app_remaining() <= skb_len;
            if !tail && limit >= skb_len {
                break 'decide true;
            }
            limit >= self.snd_wnd.min(cwnd) / TSO_WIN_DIVISOR
        };
        if send_now {
            self.tso_deferred_at = None;
            return None;
        }
        self.tso_deferred_at.get_or_insert(now);
        Some(if cong_win < send_win {
            Blocked::Cwnd
        } else {
            Blocked::Rwnd
        })
    }

    /// Linux 3.12+ `tcp_xmit_size_goal` in segments (`xmit_size_goal_segs`):
    /// half a millisecond at `sk_pacing_rate` = 2·cwnd/SRTT, at least
    /// `tcp_min_tso_segs` = 2 segments, at most 64 KB.
    fn xmit_size_goal_segs(&self) -> u64 {
        let mss = self.mss() as u64;
        let rate_bytes_per_s = match self.rtt.srtt() {
            Some(srtt) if srtt.as_ns() > 0 => {
                2 * self.state.cwnd_bytes as u128 * 1_000_000_000 / srtt.as_ns() as u128
            }
            _ => 0,
        };
        let goal = u64::try_from(rate_bytes_per_s / 2000)
            .unwrap_or(u64::MAX)
            .clamp(2 * mss, GSO_MAX_SIZE_BYTES);
        goal / mss.max(1)
    }

    /// Linux 3.12-3.15 `tcp_is_cwnd_limited(sk, in_flight)`
    /// (net/ipv4/tcp_cong.c), asked by `tcp_cong_avoid` with the packets in
    /// flight before the ACK: limited when they fill cwnd, or when what is
    /// left is what TSO deferral would hold back (`left · tcp_tso_win_divisor
    /// < cwnd` and `left < xmit_size_goal_segs`, or `left ≤ 3`,
    /// `tcp_max_tso_deferred_mss`). Measured at every ACK, so a sender
    /// whose application has run out stops growing its window as soon as
    /// its flight drains below cwnd − 3, unlike the per-window latch of
    /// 3.16+ ([`Self::cwnd_limited`]).
    fn cwnd_limited_by_flight(&self, prior_in_flight_bytes: u64) -> bool {
        const MAX_TSO_DEFERRED_MSS: u64 = 3;
        let mss = self.mss().max(1) as u64;
        let cwnd = self.state.cwnd_bytes / mss;
        let in_flight = prior_in_flight_bytes.div_ceil(mss);
        if in_flight >= cwnd {
            return true;
        }
        let left = cwnd - in_flight;
        // 3.12+: the autosized skb; 2.6.32 (no autosizing): `left · mss <
        // sk_gso_max_size`.
        let tso_segs = if self.cfg.tso_defer {
            self.xmit_size_goal_segs()
        } else {
            GSO_MAX_SIZE_BYTES.div_ceil(mss)
        };
        if left * TSO_WIN_DIVISOR < cwnd && left < tso_segs {
            return true;
        }
        left <= MAX_TSO_DEFERRED_MSS
    }

    /// Linux `tcp_cwnd_validate`: latch cwnd-limitedness per window.
    fn validate_cwnd(&mut self, limited_now: bool) {
        let flight = self.sb.pipe();
        if self.snd_una >= self.cwnd_usage_seq || limited_now || flight > self.max_flight_bytes {
            self.max_flight_bytes = flight;
            self.cwnd_usage_seq = self.snd_nxt;
            self.is_cwnd_limited = limited_now;
        }
    }

    fn data_header(&self, now: Instant, seq: u64, len: u32, retransmit: bool) -> TcpHeader {
        TcpHeader {
            seq,
            ack: 1,
            payload_len: len,
            flags: ACK,
            window: self.own_window(),
            ts_val: self.ts_val(now),
            ts_ecr: self.ts_recent,
            retransmit,
            ..TcpHeader::default()
        }
    }

    fn after_send(&mut self, now: Instant, len: u32, paced: bool) {
        self.stats.segments_sent += 1;
        self.last_data_sent = Some(now); // tcp_event_data_sent: lsndtime
        if self.ca == CaState::Recovery {
            self.prr_out += len as u64;
        }
        if paced {
            if let Some(rate) = self.pacing_rate() {
                let quantum = tso_autosize_segs(
                    rate,
                    self.rtt.min_rtt(),
                    self.mss() as u64,
                    self.cc.min_tso_segs(&self.state),
                );
                self.pacer.on_send(now, len, rate, quantum);
            }
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(self.timer_at(now, self.rtt.rto(), false)); // RFC 6298 5.1
        }
    }

    fn send_new(&mut self, now: Instant, len: u32, io: &mut dyn TcpIo) {
        let tx = self.rate.on_send(now, self.sb.is_empty());
        let seq = self.snd_nxt;
        self.sb.push(SentSegment {
            seq,
            len,
            sent_at: now,
            first_sent_at: now,
            ever_retransmitted: false,
            retrans_in_flight: false,
            lost: false,
            sacked: false,
            sacked_run: 0,
            tx,
            retrans_snd_nxt: 0,
        });
        self.snd_nxt += len as u64;
        if len >= self.mss() {
            self.edge_run += 1;
        } else {
            self.snd_sml = self.snd_nxt; // tcp_minshall_update
        }
        io.transmit(self.data_header(now, seq, len, false));
        if self.tlp_at.is_some() {
            // Linux tcp_event_new_data_sent: new data replaces an armed
            // probe by the RTO (tcp_rearm_rto, head-based); tcp_write_xmit
            // then schedules a new probe if the state allows one.
            self.rearm_rto(now);
            self.tlp_at = None;
        }
        self.after_send(now, len, true);
    }

    /// Linux ≤ 4.3 `tcp_update_reordering` (net/ipv4/tcp_input.c, called
    /// from `tcp_sacktag_write_queue` and `tcp_clean_rtx_queue`): an
    /// original segment delivered `span_bytes` below the highest SACKed
    /// byte is reordering of `span_bytes / mss` packets (`fackets_out -
    /// reord`); above `tp->reordering` (3, `sysctl_tcp_reordering`) it
    /// calls `tcp_disable_fack`, which nothing turns back on for the
    /// connection. `tcp_mark_lost_retrans` then returns at once
    /// (`!tcp_is_fack(tp)`), so a lost retransmission waits for the RTO.
    /// With three SACK blocks per ACK (timestamps on), a receiver holding
    /// more holes than that reports old ranges late, which is the same
    /// event to the sender. The same call raises `tp->reordering`, the
    /// DupThresh of `tcp_time_to_recover` ("classic rule":
    /// `tcp_dupack_heuristics(tp) > tp->reordering`) and of
    /// `tcp_update_scoreboard` (`sacked_out - tp->reordering` head
    /// segments lost), to the distance seen, at most `TCP_MAX_REORDERING`
    /// (127; include/net/tcp.h of 3.x); `tcp_enter_loss` lowers it back to
    /// 3 at the next RTO. Only with [`TcpConfig::mark_lost_retrans`] or
    /// [`TcpConfig::fack`] (the profiles of those kernels, which have no
    /// RACK to time losses instead).
    fn note_reordering(&mut self, span_bytes: u64) {
        let metric = span_bytes.div_ceil(self.mss().max(1) as u64);
        if (self.cfg.mark_lost_retrans || self.cfg.fack) && metric > self.reordering as u64 {
            self.reordering = metric.min(TCP_MAX_REORDERING as u64) as u32;
            self.fack_disabled = true;
        }
    }

    fn retransmit(&mut self, now: Instant, idx: usize, io: &mut dyn TcpIo, paced: bool) {
        let Some(seg) = self.sb.get(idx).copied() else {
            return;
        };
        let tx = self.rate.on_send(now, false);
        self.sb.mark_retransmitted(idx, now, tx);
        self.sb.note_retrans_snd_nxt(idx, self.snd_nxt);
        self.stats.retransmits += 1;
        self.retrans_stamp.get_or_insert(now);
        self.undo_retrans = self.undo_retrans.max(0) + 1; // tcp_retransmit_skb
        if idx == 0 {
            // Linux tcp_xmit_retransmit_queue: retransmitting the head
            // restarts the retransmission timer (replacing a probe timer).
            self.rto_at = Some(self.timer_at(now, self.rtt.rto(), false));
            self.tlp_at = None;
        }
        io.transmit(self.data_header(now, seg.seq, seg.len, true));
        self.after_send(now, seg.len, paced);
    }
}

#[cfg(test)]
mod tests {
    use super::super::harness::Harness;
    use super::super::TcpReceiver;
    use super::*;
    use crate::cc::Reno;
    use std::sync::{Arc, Mutex};

    const MSS: u64 = 1000;

    fn ms(v: u64) -> Duration {
        Duration::from_ms(v)
    }

    fn at_ms(v: u64) -> Instant {
        Instant::from_ns(v * 1_000_000)
    }

    /// Linux profile with a 1000-byte MSS, no timestamps, every segment
    /// ACKed (loss tests count dupacks exactly).
    fn cfg(recovery: RecoveryKind) -> TcpConfig {
        let mut c = TcpConfig::profile("linux").unwrap();
        c.mss = MSS as u32;
        c.header_bytes = 40;
        c.recovery = recovery;
        c.sack = recovery == RecoveryKind::Sack;
        c.delayed_ack = None;
        c.linux_rto = false;
        c.timer_hz = None; // exact timers: the rules' timing in whole ms
        c
    }

    fn harness(c: &TcpConfig, app: AppLimit, bottleneck_bps: Option<u64>) -> Harness {
        let s = TcpSender::new(c, Box::new(Reno::new()), app);
        let r = TcpReceiver::new(c);
        let mut h = Harness::new(s, r, ms(10));
        h.header_bytes = c.header_bytes;
        h.bottleneck = bottleneck_bps.map(Rate::from_bps);
        h
    }

    fn seg(k: u64) -> u64 {
        1 + k * MSS
    }

    /// New segments sent at each instant after the first round trip, in
    /// congestion avoidance with an ACK per segment (each ACK frees one).
    fn new_data_bursts(tso_defer: bool) -> Vec<usize> {
        let mut c = cfg(RecoveryKind::Sack);
        c.initial_ssthresh_bytes = Some(10 * MSS);
        c.tso_defer = tso_defer;
        let mut h = harness(&c, AppLimit::Bytes(60_000), Some(8_000_000));
        h.start();
        h.run_to_done(at_ms(10_000));
        assert_eq!(h.receiver.delivered_bytes(), 60_000);
        let data: Vec<_> = h.data_sent().into_iter().filter(|d| !d.2).collect();
        let mut bursts: Vec<(Instant, usize)> = Vec::new();
        for d in data.iter().skip(10) {
            match bursts.last_mut() {
                Some((t, n)) if *t == d.0 => *n += 1,
                _ => bursts.push((d.0, 1)),
            }
        }
        bursts.pop(); // the application's last bytes (the queue's tail)
        bursts.into_iter().map(|b| b.1).collect()
    }

    #[test]
    fn tso_defer_sends_new_data_in_whole_two_segment_skbs() {
        // Linux 3.x-4.1 tcp_tso_should_defer: one segment of room (limit
        // 1000 B) is less than the 2-segment skb (TSO autosizing minimum)
        // and less than min(cwnd, snd_wnd) / 3, so the sender waits for
        // the next ACK (1 ms later, within two ticks) and sends the pair.
        let deferred = new_data_bursts(true);
        assert!(deferred.len() > 10, "{deferred:?}");
        assert!(deferred.iter().all(|&n| n % 2 == 0), "{deferred:?}");
        // Without it each ACK releases the one segment it freed.
        let eager = new_data_bursts(false);
        assert!(eager.iter().filter(|&&n| n == 1).count() > 10, "{eager:?}");
    }

    /// cwnd at the application's last new segment and at the end, for a
    /// transfer whose flight sits in a deep bottleneck queue (1 Mbit/s,
    /// no drops): the queue drains for many ACKs after the last send.
    fn cwnd_growth_after_last_send(by_flight: bool) -> (u64, u64) {
        let mut c = cfg(RecoveryKind::Sack);
        c.cwnd_limited_by_flight = by_flight;
        c.tso_defer = by_flight; // 3.12-3.15: with TSO autosizing
        let mut h = harness(&c, AppLimit::Bytes(200_000), Some(1_000_000));
        h.start();
        h.run_to_done(at_ms(60_000));
        assert_eq!(h.receiver.delivered_bytes(), 200_000);
        assert_eq!(h.sender.stats().retransmits, 0);
        let last_new = h.data_sent().iter().filter(|d| !d.2).map(|d| d.0).max();
        let at_last = h
            .trace
            .iter()
            .rfind(|t| Some(t.at) <= last_new)
            .map_or(0, |t| t.cwnd);
        (at_last, h.sender.cwnd_bytes())
    }

    #[test]
    fn cwnd_limited_by_flight_stops_growth_once_the_application_runs_out() {
        // Linux 3.12-3.15 tcp_is_cwnd_limited(sk, in_flight): once the
        // flight drains more than 3 segments below cwnd the window stops
        // growing (the USC-NSL lab's server: a new chunk starts from the
        // window of the last one's end).
        let (at_last, end) = cwnd_growth_after_last_send(true);
        assert!(at_last > 20 * MSS, "{at_last}");
        assert!(end <= at_last + 4 * MSS, "{at_last} -> {end}");
        // 3.16+ latch: in slow start, limited while cwnd < 2 x the largest
        // flight of the window, so the drain's ACKs keep growing it.
        let (at_last, end) = cwnd_growth_after_last_send(false);
        assert!(end > at_last + 20 * MSS, "{at_last} -> {end}");
    }

    /// A 150-segment transfer through a 10 Mbit/s bottleneck that loses a
    /// burst of `n` segments from segment 30 (cwnd 40) once, with the 2.6
    /// rules on or off.
    fn burst_loss(rate_halving: bool, fack: bool, n: u64) -> Harness {
        let mut c = cfg(RecoveryKind::Sack);
        c.rate_halving = rate_halving;
        c.fack = fack;
        (c.rack, c.tlp) = (false, false);
        let mut h = harness(&c, AppLimit::Bytes(150 * MSS), Some(10_000_000));
        h.drops = (30..30 + n).map(|k| (seg(k), 1)).collect();
        h.start();
        h.run_to_done(at_ms(20_000));
        assert_eq!(h.receiver.delivered_bytes(), 150 * MSS);
        assert_eq!(h.sender.stats().timeouts, 0, "repaired by fast recovery");
        h
    }

    /// cwnd and ssthresh at the first sender event after the recovery.
    fn after_recovery(h: &Harness) -> (u64, u64) {
        let first = h.trace.iter().position(|t| t.ca == 2).expect("a recovery");
        let t = h.trace[first..].iter().find(|t| t.ca != 2).unwrap();
        (t.cwnd, t.ssthresh)
    }

    #[test]
    fn rate_halving_follows_the_collapsed_flight_prr_rebuilds_to_ssthresh() {
        // 2.6 tcp_cwnd_down caps cwnd at in flight + 1 on every ACK, and
        // the flight collapsed (40 − 26) when the losses were marked: the
        // recovery ends far below ssthresh (tcp_complete_cwr only lowers).
        let (cwnd, ssthresh) = after_recovery(&burst_loss(true, false, 26));
        assert!(
            cwnd + 4 * MSS <= ssthresh,
            "rate-halving: {cwnd} vs {ssthresh}"
        );
        // PRR-SSRB slow-starts back up to ssthresh within the recovery.
        let (cwnd, ssthresh) = after_recovery(&burst_loss(false, false, 26));
        assert_eq!(cwnd, ssthresh, "PRR");
    }

    #[test]
    fn rate_halving_keeps_cwnd_on_entry_and_lowers_it_one_segment_per_two_acks() {
        let h = burst_loss(true, false, 8);
        let first = h.trace.iter().position(|t| t.ca == 2).unwrap();
        let before = h.trace[first - 1].cwnd;
        let at = h.trace[first];
        // Not ssthresh at once (RFC 6675 §5 step 4.2): 8 of 40 lost, so
        // the window is the flight (32) and comes down from there.
        assert!(at.cwnd > at.ssthresh && at.cwnd < before, "{at:?}");
        assert_eq!(at.cwnd, at.pipe, "{at:?}");
        let cwnds: Vec<u64> = h.trace[first..]
            .iter()
            .take_while(|t| t.ca == 2)
            .map(|t| t.cwnd)
            .collect();
        assert!(
            cwnds.windows(2).all(|w| w[1] <= w[0]),
            "never grows: {cwnds:?}"
        );
    }

    #[test]
    fn fack_starts_recovery_at_the_first_sack_above_a_burst() {
        // FACK: the first SACK (segment 38) puts fackets_out at 9 > 3, so
        // segments 30..=35 are lost at once; RFC 6675 waits for three
        // SACKed segments (38, 39, 40), two segment times later at 10
        // Mbit/s (0.8 ms each).
        let first_rtx = |h: &Harness| {
            h.data_sent()
                .into_iter()
                .find(|d| d.2)
                .map(|d| d.0)
                .unwrap()
        };
        let fack = first_rtx(&burst_loss(true, true, 8));
        let rfc = first_rtx(&burst_loss(true, false, 8));
        let gap = rfc.saturating_since(fack);
        assert!(
            gap >= Duration::from_us(1_500) && gap <= Duration::from_us(1_700),
            "FACK {fack:?} vs RFC 6675 {rfc:?}"
        );
    }

    #[test]
    fn rate_halving_moderates_the_window_on_dubious_acks() {
        // A loss near the end of a transfer: the SACKs that follow leave
        // little in flight, and 2.6 tcp_try_to_open / tcp_moderate_cwnd
        // caps cwnd at in flight + 3 segments on each of them.
        let run = |rh: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            c.rate_halving = rh;
            let mut h = harness(&c, AppLimit::Bytes(60 * MSS), Some(10_000_000));
            h.drops = vec![(seg(55), 1)];
            h.start();
            h.run_to_done(at_ms(20_000));
            assert_eq!(h.receiver.delivered_bytes(), 60 * MSS);
            h.trace
                .iter()
                .filter(|t| t.ca == 1)
                .map(|t| t.cwnd.saturating_sub(t.pipe))
                .max()
                .expect("a Disorder phase")
        };
        assert!(run(true) <= 3 * MSS, "{}", run(true));
        assert!(run(false) > 10 * MSS, "{}", run(false));
    }

    #[test]
    fn handshake_then_initial_window() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Bytes(50_000), None);
        h.start();
        h.run_until(at_ms(20));
        let s = h.sender.stats();
        assert_eq!(s.established_at, Some(at_ms(20)));
        assert_eq!(
            h.rtts,
            vec![(at_ms(20), ms(20))],
            "SYN-ACK gives the first sample"
        );
        assert_eq!(h.sender.srtt(), Some(ms(20)));
        // ACK of the SYN-ACK, then IW10 at once.
        let data = h.data_sent();
        assert_eq!(data.len(), 10);
        assert!(data.iter().all(|d| d.0 == at_ms(20) && !d.2));
        let end = h.run_to_done(at_ms(10_000));
        assert!(h.sender.is_done());
        assert_eq!(h.receiver.delivered_bytes(), 50_000);
        assert!(end < at_ms(200), "finished at {end}");
        assert_eq!(h.sender.stats().retransmits, 0);
        assert_eq!(h.sender.stats().bytes_acked, 50_000);
    }

    #[test]
    fn lost_syn_retransmitted_after_initial_rto_then_3s_and_one_segment() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Bytes(50_000), None);
        h.drop_syns = 1;
        h.start();
        h.run_until(at_ms(1020));
        assert_eq!(h.sender.stats().established_at, Some(at_ms(1020)));
        assert_eq!(h.sender.stats().timeouts, 1);
        assert_eq!(
            h.sender.srtt(),
            None,
            "Karn: no sample from a retransmitted SYN"
        );
        assert_eq!(
            h.rtts,
            vec![(at_ms(1020), ms(1020))],
            "Wireshark: from the first SYN"
        );
        assert_eq!(h.sender.rto(), ms(3000), "RFC 6298 §5.7");
        assert_eq!(h.data_sent().len(), 1, "RFC 5681 §3.1: IW = 1 segment");
        h.run_to_done(at_ms(10_000));
        assert!(h.sender.is_done());
    }

    #[test]
    fn syn_backoff_doubles() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Bytes(1000), None);
        h.drop_syns = 3;
        h.start();
        h.run_until(at_ms(8000));
        let syns: Vec<Instant> = h
            .log
            .iter()
            .filter(|e| e.2.flags & SYN != 0 && e.1 == super::super::harness::Side::Sender)
            .map(|e| e.0)
            .collect();
        assert_eq!(syns, vec![at_ms(0), at_ms(1000), at_ms(3000), at_ms(7000)]);
        assert_eq!(h.sender.stats().established_at, Some(at_ms(7020)));
    }

    /// Single loss, Reno: fast retransmit, exactly one retransmission,
    /// ssthresh = FlightSize/2, cwnd = ssthresh + 3 SMSS in recovery,
    /// cwnd = ssthresh after.
    #[test]
    fn single_loss_reno_fast_retransmit() {
        let c = cfg(RecoveryKind::Reno);
        let mut h = harness(&c, AppLimit::Bytes(200_000), Some(8_000_000));
        h.drops = vec![(seg(60), 1)];
        h.start();
        h.run_to_done(at_ms(20_000));
        let s = h.sender.stats();
        assert!(h.sender.is_done());
        assert_eq!((s.retransmits, s.fast_recoveries, s.timeouts), (1, 1, 0));
        let rtx: Vec<_> = h.data_sent().into_iter().filter(|d| d.2).collect();
        assert_eq!(rtx[0].1, seg(60));
        let entry = h
            .trace
            .iter()
            .position(|t| t.at == rtx[0].0 && t.ca == 2)
            .unwrap();
        let e = h.trace[entry];
        assert_eq!(e.ssthresh, e.flight / 2);
        assert_eq!(e.cwnd, e.ssthresh + 3 * MSS);
        let exit = h.trace[entry..].iter().find(|t| t.ca == 0).unwrap();
        assert!(
            exit.cwnd >= e.ssthresh && exit.cwnd <= e.ssthresh + MSS,
            "{exit:?}"
        );
        assert_eq!(h.receiver.delivered_bytes(), 200_000);
    }

    /// Start `h`, run it to completion (30 s at most) and check that all
    /// `bytes` arrived.
    fn completed(mut h: Harness, bytes: u64) -> Harness {
        h.start();
        h.run_to_done(at_ms(30_000));
        assert!(h.sender.is_done());
        assert_eq!(h.receiver.delivered_bytes(), bytes);
        h
    }

    fn multi_loss(kind: RecoveryKind) -> Harness {
        let c = cfg(kind);
        let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
        h.drops = vec![(seg(60), 1), (seg(63), 1), (seg(66), 1)];
        completed(h, 300_000)
    }

    #[test]
    fn newreno_partial_acks_recover_three_losses_without_rto() {
        let h = multi_loss(RecoveryKind::NewReno);
        let s = h.sender.stats();
        assert_eq!((s.retransmits, s.fast_recoveries, s.timeouts), (3, 1, 0));
    }

    #[test]
    fn sack_recovers_three_losses_without_rto() {
        let h = multi_loss(RecoveryKind::Sack);
        let s = h.sender.stats();
        assert_eq!((s.retransmits, s.fast_recoveries, s.timeouts), (3, 1, 0));
        // All three retransmissions leave before the first one is ACKed
        // (SACK names every hole; RFC 6675 waits only for pipe < cwnd).
        let rtx: Vec<_> = h.data_sent().into_iter().filter(|d| d.2).collect();
        let first_acked = h
            .acks()
            .into_iter()
            .find(|(_, a)| a.ack > seg(60))
            .unwrap()
            .0
            + ms(10);
        assert!(rtx[2].0 < first_acked, "{rtx:?} vs {first_acked}");
    }

    /// Sender events (ACK arrivals) between entering recovery and the
    /// first new segment sent after it.
    fn acks_before_first_new_send(prr: bool) -> usize {
        let c = cfg(RecoveryKind::Sack);
        let mut s = TcpSender::new(&c, Box::new(Reno::new()), AppLimit::Bytes(300_000));
        s.set_prr(prr);
        let mut h = Harness::new(s, TcpReceiver::new(&c), ms(10));
        h.bottleneck = Some(Rate::from_bps(8_000_000));
        h.drops = vec![(seg(60), 1)];
        h.start();
        h.run_to_done(at_ms(30_000));
        assert!(h.sender.is_done());
        assert_eq!(h.sender.stats().timeouts, 0);
        let data = h.data_sent();
        let rtx = data.iter().position(|d| d.2).unwrap();
        let next_new = data[rtx + 1..].iter().find(|d| !d.2).unwrap().0;
        h.trace
            .iter()
            .filter(|t| t.at > data[rtx].0 && t.at <= next_new)
            .count()
    }

    #[test]
    fn prr_keeps_sending_through_recovery_rfc6675_pauses() {
        // PRR: one segment per two delivered from the start; the
        // retransmission already counts in prr_out, so new data leaves
        // within a few ACKs instead of after half a window of them.
        let prr = acks_before_first_new_send(true);
        assert!(prr <= 4, "PRR waited {prr} ACKs");
        // RFC 6675 cwnd = ssthresh: silent until pipe falls by half.
        let plain = acks_before_first_new_send(false);
        assert!(plain >= 5, "RFC 6675 waited only {plain} ACKs");
    }

    #[test]
    fn reno_survives_three_losses() {
        let h = multi_loss(RecoveryKind::Reno);
        assert!(h.sender.stats().retransmits >= 3);
    }

    #[test]
    fn tail_loss_needs_rto_with_doubling_backoff() {
        let mut c = cfg(RecoveryKind::Sack);
        c.tlp = false;
        let mut h = harness(&c, AppLimit::Bytes(20_000), None);
        h.drops = vec![(seg(19), 2)];
        h.start();
        h.run_to_done(at_ms(10_000));
        assert!(h.sender.is_done());
        let s = h.sender.stats();
        assert_eq!((s.timeouts, s.fast_recoveries, s.retransmits), (2, 0, 2));
        let tx: Vec<Instant> = h
            .data_sent()
            .into_iter()
            .filter(|d| d.1 == seg(19))
            .map(|d| d.0)
            .collect();
        assert_eq!(tx.len(), 3);
        // Last new-data ACK at 40 ms (IW10 acked at 40, next 10 sent then
        // and acked at 60): RTO = min_rto 200 ms, then 400 ms.
        let last_ack = at_ms(60);
        assert_eq!(tx[1], last_ack + ms(200));
        assert_eq!(tx[2] - tx[1], ms(400));
        assert!(h.sender.cwnd_bytes() >= MSS);
    }

    /// Reno that records every AckSample it is given.
    struct Spy {
        inner: Reno,
        log: Arc<Mutex<Vec<AckSample>>>,
    }

    impl CongestionControl for Spy {
        fn name(&self) -> &'static str {
            "spy"
        }
        fn on_ack(&mut self, s: &mut CcState, ack: &AckSample) {
            self.log.lock().unwrap().push(*ack);
            self.inner.on_ack(s, ack);
        }
        fn ssthresh(&mut self, s: &CcState, flight: u64, now: Instant) -> u64 {
            self.inner.ssthresh(s, flight, now)
        }
    }

    fn spied(c: &TcpConfig, app: AppLimit) -> (Harness, Arc<Mutex<Vec<AckSample>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let spy = Spy {
            inner: Reno::new(),
            log: log.clone(),
        };
        let s = TcpSender::new(c, Box::new(spy), app);
        let mut h = Harness::new(s, TcpReceiver::new(c), ms(10));
        h.header_bytes = c.header_bytes;
        h.bottleneck = Some(Rate::from_bps(8_000_000));
        h.drops = vec![(seg(60), 1)];
        h.start();
        h.run_to_done(at_ms(20_000));
        (h, log)
    }

    /// Linux `tcp_ack` → `tcp_rate_gen(sk, delivered, tp->lost − lost, …)`:
    /// the rate sample's losses are the growth of `tp->lost` over the ACK,
    /// and `tcp_mark_skb_lost` adds a retransmission that is lost again to
    /// it ("Account for retransmits that are lost again"). BBR takes them
    /// off cwnd and counts them in its policer detector
    /// (`bbr_set_cwnd_to_recover_or_restore`, `bbr_lt_bw_sampling`).
    #[test]
    fn a_retransmission_lost_again_is_in_the_rate_samples_losses() {
        let mut c = cfg(RecoveryKind::Sack);
        c.header_bytes = 52;
        let log = Arc::new(Mutex::new(Vec::new()));
        let spy = Spy {
            inner: Reno::new(),
            log: log.clone(),
        };
        let s = TcpSender::new(&c, Box::new(spy), AppLimit::Bytes(200_000));
        let mut h = Harness::new(s, TcpReceiver::new(&c), ms(10));
        h.header_bytes = c.header_bytes;
        h.bottleneck = Some(Rate::from_bps(8_000_000));
        h.drops = vec![(seg(60), 2)];
        h.start();
        h.run_to_done(at_ms(20_000));
        assert_eq!(h.sender.stats().timeouts, 0);
        assert_eq!(h.sender.stats().retransmits, 2);
        let lost: u64 = log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|a| a.rate)
            .map(|r| r.lost_bytes)
            .sum();
        assert_eq!(lost, 2 * MSS, "the segment's loss and its retransmission's");
    }

    /// The ACK that closes the hole: its arrival time at the sender.
    fn hole_ack_at(h: &Harness) -> Instant {
        let t = h
            .acks()
            .into_iter()
            .find(|(_, a)| a.ack > seg(60))
            .unwrap()
            .0;
        t + ms(10)
    }

    #[test]
    fn karn_no_sample_from_ack_of_retransmission() {
        let (h, log) = spied(&cfg(RecoveryKind::Reno), AppLimit::Bytes(200_000));
        let at = hole_ack_at(&h);
        let log = log.lock().unwrap();
        let hole = log.iter().find(|a| a.now == at).unwrap();
        assert_eq!(hole.rtt, None, "Karn: the ACK covers a retransmission");
        assert!(
            log.iter().any(|a| a.now > at && a.rtt.is_some()),
            "samples resume"
        );
        // Wireshark's ack_rtt still reports it, against the original
        // transmission of the segment the ACK ends at.
        let wire = h.rtts.iter().find(|(t, _)| *t == at).unwrap().1;
        assert!(wire > ms(40), "{wire}");
    }

    #[test]
    fn timestamps_give_a_sample_for_the_retransmission() {
        let mut c = cfg(RecoveryKind::Sack);
        c.header_bytes = 52;
        let (h, log) = spied(&c, AppLimit::Bytes(200_000));
        let rtx_at = h.data_sent().into_iter().find(|d| d.2).unwrap().0;
        let at = hole_ack_at(&h);
        let log = log.lock().unwrap();
        let hole = log.iter().find(|a| a.now == at).unwrap();
        assert_eq!(hole.rtt, Some(at - rtx_at), "timed by the echoed TSval");
    }

    #[test]
    fn wireshark_ack_rtt_is_timed_against_the_segment_acked() {
        let mut c = cfg(RecoveryKind::Sack);
        c.delayed_ack = Some(ms(40));
        c.quickack_segments = 0;
        // A fixed window: an autotuned one ACKs each segment that grows it.
        c.rcvbuf_autotune = false;
        let mut h = harness(&c, AppLimit::Bytes(2_000), None);
        h.start();
        h.run_to_done(at_ms(1_000));
        // SYN at 0, SYN-ACK back at 20; both segments sent at 20, ACKed
        // together (2nd full segment) at 30, back at 40.
        assert_eq!(h.rtts, vec![(at_ms(20), ms(20)), (at_ms(40), ms(20))]);
    }

    /// Every algorithm of `cc::build` drives the sender to completion
    /// through a bottleneck with losses (BBR owns cwnd and paces).
    #[test]
    fn every_algorithm_completes_a_lossy_transfer() {
        use crate::config::CcKind;
        for kind in [
            CcKind::Reno,
            CcKind::NewReno,
            CcKind::Cubic,
            CcKind::Compound,
            CcKind::Bbr,
        ] {
            for recovery in [
                RecoveryKind::Reno,
                RecoveryKind::NewReno,
                RecoveryKind::Sack,
            ] {
                let mut c = cfg(recovery);
                c.cc = kind;
                c.header_bytes = 52;
                let cc = crate::cc::build(kind).unwrap();
                let s = TcpSender::new(&c, cc, AppLimit::Bytes(1_000_000));
                let mut h = Harness::new(s, TcpReceiver::new(&c), ms(10));
                h.bottleneck = Some(Rate::from_bps(20_000_000));
                h.drops = (0..20).map(|k| (seg(50 + 37 * k), 1)).collect();
                h.start();
                let end = h.run_to_done(at_ms(60_000));
                assert!(h.sender.is_done(), "{kind:?}/{recovery:?} stuck at {end}");
                assert_eq!(h.receiver.delivered_bytes(), 1_000_000);
                let max_flight = h.trace.iter().map(|t| t.flight).max().unwrap();
                assert!(max_flight <= 6 * 1024 * 1024);
            }
        }
    }

    /// Delivery-rate samples of a bulk flow through an 8 Mbit/s
    /// bottleneck measure the bottleneck's payload rate (1000 of every
    /// 1040 wire bytes): never above it, and close to it once the queue
    /// is busy.
    #[test]
    fn delivery_rate_samples_measure_the_bottleneck() {
        let c = cfg(RecoveryKind::Sack);
        let (h, log) = spied(&c, AppLimit::Bytes(1_000_000));
        assert!(h.sender.is_done());
        let payload_bps = 8_000_000.0 * 1000.0 / 1040.0;
        let log = log.lock().unwrap();
        let rates: Vec<f64> = log
            .iter()
            .filter_map(|a| a.rate)
            .filter(|r| r.interval > Duration::ZERO && !r.is_app_limited)
            .map(|r| r.delivered_bytes as f64 * 8.0 / r.interval.as_secs_f64())
            .collect();
        assert!(rates.len() > 500, "{}", rates.len());
        let max = rates.iter().cloned().fold(0.0, f64::max);
        assert!(max <= payload_bps * 1.001, "{max} > {payload_bps}");
        assert!(max >= payload_bps * 0.97, "{max}");
    }

    /// Linux fills a window that is no whole number of segments to its last
    /// byte (`tcp_mss_split_point`, tcp/wndsplit.rs): the window-limited
    /// flight is 64 512 B with a 512-byte segment at the edge; without the
    /// rule (Linux 2.6.32, the Windows profiles) it stops at 64 000 B.
    #[test]
    fn a_window_limited_burst_ends_with_a_short_segment_at_the_edge() {
        let run = |partial: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            c.rcvbuf_autotune = false;
            c.receive_window_bytes = 64_512;
            c.window_edge_partial = partial;
            let mut h = harness(&c, AppLimit::Unlimited, Some(100_000_000));
            h.start();
            h.run_until(at_ms(1_000));
            let short: Vec<u32> = h
                .log
                .iter()
                .filter(|(_, side, x, _)| {
                    *side == super::super::harness::Side::Sender
                        && x.payload_len > 0
                        && (x.payload_len as u64) < MSS
                })
                .map(|(_, _, x, _)| x.payload_len)
                .collect();
            let max_flight = h.trace.iter().map(|t| t.flight).max().unwrap();
            (short, max_flight)
        };
        let (short, flight) = run(true);
        assert_eq!(flight, 64_512);
        assert!(
            !short.is_empty() && short.iter().all(|&l| l == 512),
            "{short:?}"
        );
        let (short, flight) = run(false);
        assert_eq!(flight, 64_000);
        assert!(short.is_empty(), "{short:?}");
    }

    /// Windows-10-like receiver: 64512 bytes, no scaling. The flow is
    /// window-limited (BDP 125 kB): in flight never exceeds 64512 and cwnd
    /// stays bounded because it is not what limits the flow.
    #[test]
    fn advertised_window_is_never_exceeded() {
        let mut c = TcpConfig::profile("windows10").unwrap();
        c.cc = crate::config::CcKind::Reno;
        c.initial_ssthresh_bytes = None;
        let s = TcpSender::new(&c, Box::new(Reno::new()), AppLimit::Unlimited);
        let r = TcpReceiver::new(&c);
        let mut h = Harness::new(s, r, ms(50));
        h.bottleneck = Some(Rate::from_bps(10_000_000));
        h.start();
        h.run_until(at_ms(10_000));
        let max_flight = h.trace.iter().map(|t| t.flight).max().unwrap();
        assert!(max_flight <= 64512, "{max_flight}");
        assert_eq!(max_flight, 44 * 1460, "44 full segments fit");
        let max_cwnd = h.trace.iter().map(|t| t.cwnd).max().unwrap();
        assert!(max_cwnd <= 2 * 64512, "cwnd {max_cwnd} grew without bound");
        // ≈ 64240 B per 100 ms RTT.
        let got = h.receiver.delivered_bytes();
        assert!((5_800_000..6_500_000).contains(&got), "{got}");
    }

    #[test]
    fn pacing_spacing_is_size_over_rate() {
        let mut c = cfg(RecoveryKind::Sack);
        c.pacing = true;
        let mut h = harness(&c, AppLimit::Bytes(100_000), None);
        h.start();
        h.run_until(at_ms(30));
        // SRTT 20 ms, cwnd 10 000 B, slow start: 2 × 10 000 B / 20 ms =
        // 8 Mbit/s → one 1000-byte segment per ms, sent in skbs of
        // `tcp_min_tso_segs` = 2 (1 ms at 8 Mbit/s is 976 B < 2 segments):
        // two segments every 2 ms.
        let data = h.data_sent();
        assert!(data.len() >= 10);
        for (i, d) in data.iter().take(10).enumerate() {
            assert_eq!(d.0, at_ms(20 + 2 * (i as u64 / 2)), "segment {i}");
        }
        h.run_to_done(at_ms(10_000));
        assert!(h.sender.is_done());
    }

    #[test]
    fn stop_ends_new_data_and_completes() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Unlimited, Some(8_000_000));
        h.start();
        h.run_until(at_ms(500));
        assert!(!h.sender.is_done());
        h.sender.stop(at_ms(500));
        let sent_end = h.data_sent().iter().map(|d| d.1 + MSS).max().unwrap();
        h.run_to_done(at_ms(5_000));
        assert!(h.sender.is_done());
        assert_eq!(h.receiver.delivered_bytes(), sent_end - 1);
    }

    /// The cc helper's case (10 Mbit/s, 40 ms RTT, unbounded queue, one
    /// drop): slow start builds ~480 ms of queue before the drop is
    /// detected, so the fast retransmission waits behind it; RFC 6298's
    /// RTO (SRTT + 4·RTTVAR, SRTT trailing the growing queue) expires
    /// first. A genuine spurious timeout, *during fast recovery*: RFC 5682
    /// §3.1 step 1 (and Linux `tcp_enter_loss`) do not run F-RTO then, and
    /// ssthresh stays at the recovery's value (no second reduction in the
    /// same window).
    #[test]
    fn rto_during_recovery_behind_a_deep_queue_is_genuine() {
        let deep_queue = |rack: bool| {
            let mut c = TcpConfig::profile("linux").unwrap();
            c.cc = crate::config::CcKind::Reno;
            c.rack = rack;
            // The fixed 6 MiB window, so that the queue gets deep.
            c.rcvbuf_autotune = false;
            let s = TcpSender::new(&c, Box::new(Reno::new()), AppLimit::Unlimited);
            let mut h = Harness::new(s, TcpReceiver::new(&c), ms(20));
            h.header_bytes = c.header_bytes;
            h.bottleneck = Some(Rate::from_bps(10_000_000));
            h.drops = vec![(HOLE, 1)];
            h.start();
            h.run_until(at_ms(3_000));
            h
        };
        const HOLE: u64 = 1 + 400 * 1448;
        // Without RACK the timeout marks the whole window lost: go-back-N
        // resends ~200 segments that were only queued (the cc helper's
        // "248 retransmissions").
        let st = deep_queue(false).sender.stats();
        assert_eq!((st.fast_recoveries, st.timeouts), (1, 1));
        assert!(st.retransmits > 150, "{}", st.retransmits);
        // RACK (RFC 8985 §6.3, Linux tcp_timeout_mark_lost) marks only
        // segments sent more than RACK.rtt ago, and the timestamp echo
        // keeps the late ACK of the fast retransmission from being taken
        // for the RTO's: one spurious retransmission, no go-back-N.
        let h = deep_queue(true);
        let st = h.sender.stats();
        assert_eq!(
            (
                st.fast_recoveries,
                st.timeouts,
                st.spurious_rtos,
                st.retransmits
            ),
            (1, 1, 0, 2)
        );
        let fr = h.trace.iter().find(|t| t.ca == 2).copied().unwrap();
        let rto = h.trace.iter().find(|t| t.ca == 3).copied().unwrap();
        assert_eq!(rto.ssthresh, fr.ssthresh, "no second reduction");
        // The fast retransmission was still queued when the RTO fired: its
        // ACK arrives later.
        let acks = h.acks();
        let hole_acked = acks.iter().find(|(_, a)| a.ack > HOLE).unwrap().0 + ms(20);
        assert!(hole_acked > rto.at, "{hole_acked} vs RTO at {}", rto.at);
        let fast_rtx = h.data_sent().into_iter().find(|d| d.2).unwrap().0;
        assert!(hole_acked - fast_rtx > ms(400), "queued ≥ 400 ms");
        // Linux RTO = SRTT (≈ 240 ms when recovery began) + rttvar (≥
        // min_rto 200 ms), restarted by the fast retransmission.
        let waited = rto.at - fast_rtx;
        assert!(waited > ms(430) && waited < ms(480), "{waited}");
    }

    /// Bulk sender whose ACKs stall from 300 ms to 800 ms (nothing lost):
    /// the RTO (≈ 200 ms) fires during the stall.
    fn ack_stall(c: &TcpConfig) -> Harness {
        let mut h = harness(c, AppLimit::Bytes(2_000_000), Some(8_000_000));
        h.stall = Some((at_ms(300), at_ms(800)));
        completed(h, 2_000_000)
    }

    #[test]
    fn frto_undoes_a_spurious_rto_sack_and_not() {
        for kind in [RecoveryKind::Sack, RecoveryKind::NewReno] {
            let mut c = cfg(kind);
            c.tlp = false;
            let h = ack_stall(&c);
            let st = h.sender.stats();
            assert_eq!((st.timeouts, st.spurious_rtos), (1, 1), "{kind:?}");
            assert_eq!(st.retransmits, 1, "{kind:?}: only the RTO's one");
            // Undone: the window after the undo is the one before the RTO.
            let rto = h.trace.iter().position(|t| t.ca == 3).unwrap();
            let before = h.trace[rto - 1];
            let after = h.trace[rto..].iter().find(|t| t.ca == 0).unwrap();
            assert!(
                after.cwnd >= before.cwnd,
                "{kind:?}: {after:?} vs {before:?}"
            );
            assert_eq!(after.ssthresh, before.ssthresh, "{kind:?}");
            // Without F-RTO (and without timestamps): go-back-N.
            c.frto = false;
            let st = ack_stall(&c).sender.stats();
            assert_eq!((st.timeouts, st.spurious_rtos), (1, 0), "{kind:?}");
            assert!(st.retransmits > 20, "{kind:?}: {}", st.retransmits);
        }
    }

    /// RFC 5682 step 2b then 3a: the whole initial window is lost; the
    /// ACK of the RTO's retransmission lets two new segments out, their
    /// SACKs prove the loss real and the rest is retransmitted.
    #[test]
    fn frto_real_loss_sends_new_data_then_goes_back() {
        let mut c = cfg(RecoveryKind::Sack);
        c.tlp = false;
        let mut h = harness(&c, AppLimit::Bytes(100_000), None);
        h.drops = (0..10).map(|k| (seg(k), 1)).collect();
        h.start();
        h.run_to_done(at_ms(10_000));
        assert!(h.sender.is_done());
        let st = h.sender.stats();
        assert_eq!((st.timeouts, st.spurious_rtos, st.retransmits), (1, 0, 10));
        let after_rto: Vec<(u64, bool)> = h
            .data_sent()
            .into_iter()
            .filter(|d| d.0 > at_ms(20) && !d.3)
            .map(|d| (d.1, d.2))
            .take(4)
            .collect();
        assert_eq!(
            after_rto,
            vec![
                (seg(0), true),
                (seg(10), false),
                (seg(11), false),
                (seg(1), true)
            ]
        );
        assert_eq!(h.receiver.delivered_bytes(), 100_000);
    }

    /// Eifel (RFC 3522) with timestamps: even without F-RTO, the ACK that
    /// echoes a TSval older than the retransmission undoes the timeout.
    #[test]
    fn eifel_undoes_a_spurious_rto_with_timestamps() {
        let mut c = cfg(RecoveryKind::Sack);
        c.tlp = false;
        c.frto = false;
        c.header_bytes = 52;
        let h = ack_stall(&c);
        let st = h.sender.stats();
        assert_eq!((st.timeouts, st.spurious_rtos), (1, 1));
        assert!(st.retransmits <= 2, "{}", st.retransmits);
    }

    /// Segments the receiver already held when they were sent again:
    /// every data transmission after the first one that got through.
    fn needless_resends(h: &Harness) -> Vec<u64> {
        let mut held = std::collections::BTreeSet::new();
        let mut again = Vec::new();
        for (_, seq, _, dropped) in h.data_sent() {
            if held.contains(&seq) {
                again.push(seq);
            } else if !dropped {
                held.insert(seq);
            }
        }
        again
    }

    /// RFC 2018 §8 ([`TcpConfig::rto_clears_sack`]): six holes whose fast
    /// retransmissions are lost too end in an RTO with five SACKed
    /// segments between them. Kept SACK state resends only the holes;
    /// cleared, the sender goes back N and resends the SACKed segments
    /// the receiver's four SACK blocks no longer report.
    #[test]
    fn rto_clears_sack_goes_back_over_sacked_segments() {
        let run = |clear: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            (c.rack, c.tlp, c.frto) = (false, false, false);
            c.rto_clears_sack = clear;
            let mut h = harness(&c, AppLimit::Bytes(40 * MSS), None);
            h.drops = [20, 22, 24, 26, 28, 30].map(|k| (seg(k), 2)).to_vec();
            completed(h, 40 * MSS)
        };
        let kept = run(false);
        assert_eq!(kept.sender.stats().timeouts, 1);
        assert_eq!(needless_resends(&kept), Vec::<u64>::new());
        let cleared = run(true);
        assert_eq!(cleared.sender.stats().timeouts, 1);
        let again = needless_resends(&cleared);
        assert!(!again.is_empty(), "SACKed segments resent after the RTO");
        assert!(
            again
                .iter()
                .all(|s| [21, 23, 25, 27, 29].map(seg).contains(s)),
            "{again:?}"
        );
        assert!(cleared.sender.stats().retransmits > kept.sender.stats().retransmits);
    }

    /// A 20-segment transfer losing its last `n` segments once.
    fn tail_drop(n: u64, tlp: bool) -> Harness {
        let mut c = cfg(RecoveryKind::Sack);
        c.tlp = tlp;
        let mut h = harness(&c, AppLimit::Bytes(20_000), None);
        h.drops = (20 - n..20).map(|k| (seg(k), 1)).collect();
        completed(h, 20_000)
    }

    /// RFC 8985 §7: the probe (the last segment again) repairs a tail
    /// loss of one segment without a timeout; of three, its SACK lets RACK
    /// mark the other two and fast recovery repairs them.
    #[test]
    fn tlp_turns_tail_losses_into_fast_recovery() {
        let s = tail_drop(1, true).sender.stats();
        assert_eq!((s.timeouts, s.loss_probes, s.retransmits), (0, 1, 1));
        let h = tail_drop(3, true);
        let s = h.sender.stats();
        assert_eq!((s.timeouts, s.loss_probes, s.fast_recoveries), (0, 1, 1));
        assert_eq!(s.retransmits, 3);
        // The probe left one PTO after the last ACK: 2·SRTT (20 ms) + 2 ms
        // with several segments out (segments 10..19 were sent at 40 ms
        // and the last ACK, of 16, came back at 60 ms).
        let probe = h.data_sent().into_iter().find(|d| d.2).unwrap();
        assert_eq!((probe.0, probe.1), (at_ms(60) + ms(42), seg(19)));
        // Without TLP: an RTO.
        let s = tail_drop(3, false).sender.stats();
        assert_eq!((s.timeouts, s.loss_probes), (1, 0));
    }

    /// The same tail loss of three segments at a round trip of
    /// `2 · one_way`, with the Windows RTT floor for RACK and TLP or none.
    fn tail_drop_windows(one_way: Duration, floor: Option<Duration>) -> SenderStats {
        let mut c = cfg(RecoveryKind::Sack);
        c.rack_tlp_min_rtt = floor;
        let mut h = harness(&c, AppLimit::Bytes(20_000), None);
        h.delay = one_way;
        h.drops = (17..20).map(|k| (seg(k), 1)).collect();
        completed(h, 20_000).sender.stats()
    }

    /// Windows runs RACK and TLP only on connections of more than 10 ms
    /// RTT (`tcp/windows.rs`): at a 4 ms round trip the tail loss waits
    /// for the RTO, as the ISR 4000 source's Windows 10 sender did; at
    /// 20 ms, and anywhere without the floor, the probe repairs it.
    #[test]
    fn windows_rack_and_tlp_only_above_10ms_rtt() {
        let floor = TcpConfig::profile("windows10").unwrap().rack_tlp_min_rtt;
        assert_eq!(floor, Some(ms(10)));
        let s = tail_drop_windows(ms(2), floor);
        assert_eq!((s.timeouts, s.loss_probes), (1, 0), "4 ms RTT: RTO");
        let s = tail_drop_windows(ms(2), None);
        assert_eq!((s.timeouts, s.loss_probes), (0, 1), "no floor: probe");
        let s = tail_drop_windows(ms(10), floor);
        assert_eq!((s.timeouts, s.loss_probes), (0, 1), "20 ms RTT: probe");
    }

    /// RACK is off below the floor too: a retransmission lost once more
    /// is found by RACK above it, by the RTO below it.
    #[test]
    fn windows_lost_retransmission_waits_for_the_rto_below_10ms() {
        let run = |one_way: u64, floor: Option<Duration>| {
            let mut c = cfg(RecoveryKind::Sack);
            (c.tlp, c.rack_tlp_min_rtt) = (false, floor);
            let mut h = harness(&c, AppLimit::Bytes(40_000), None);
            h.delay = ms(one_way);
            h.drops = vec![(seg(5), 2)];
            completed(h, 40_000).sender.stats()
        };
        let floor = Some(ms(10));
        assert_eq!(run(2, floor).timeouts, 1, "no RACK at 4 ms: RTO");
        assert_eq!(run(2, None).timeouts, 0, "RACK repairs it");
        assert_eq!(run(10, floor).timeouts, 0, "RACK at 20 ms");
    }

    /// Linux `tcp_rearm_rto`: an ACK that finds the loss probe armed
    /// leaves the RTO one RTO after the head segment was sent, not one RTO
    /// after the ACK. An 11-segment transfer through 1 Mbit/s loses
    /// segment 9 (of the initial window, sent at 20 ms); only segment 10
    /// is SACKed after it (one duplicate ACK, no RACK: the 2015 kernel), so
    /// only the timer can repair it. With RTO = `min_rto` = 1 s it fires at
    /// 20 ms + 1 s; restarted from the last ACK of new data (that of
    /// segment 8, about 95 ms later) it would fire at about 1115 ms.
    #[test]
    fn rto_after_a_probe_is_timed_from_the_head_segment() {
        let mut c = cfg(RecoveryKind::Sack);
        (c.rack, c.tlp) = (false, true);
        c.min_rto = ms(1000);
        let mut h = harness(&c, AppLimit::Bytes(11 * MSS), Some(1_000_000));
        h.drops = vec![(seg(9), 1)];
        let h = completed(h, 11 * MSS);
        assert_eq!(h.sender.stats().timeouts, 1);
        let sent: Vec<_> = h
            .data_sent()
            .into_iter()
            .filter(|d| d.1 == seg(9))
            .collect();
        assert!(
            sent[0].0 < at_ms(21),
            "segment 9 sent with the initial window"
        );
        assert_eq!(
            sent[1].0,
            sent[0].0 + ms(1000),
            "RTO from the head's send time"
        );
    }

    /// RACK repairs a lost retransmission: later segments delivered
    /// after it was resent prove it lost (RFC 8985 §2.2). RFC 6675 alone
    /// waits for the RTO.
    #[test]
    fn rack_detects_a_lost_retransmission() {
        let run = |rack: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            c.rack = rack;
            let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
            h.drops = vec![(seg(60), 2)];
            completed(h, 300_000).sender.stats()
        };
        let s = run(true);
        assert_eq!((s.timeouts, s.retransmits, s.fast_recoveries), (0, 2, 1));
        assert_eq!(run(false).timeouts, 1);
    }

    /// Linux `tcp_sacktag_one` advances RACK on a SACKed retransmission
    /// whatever timestamp the SACK echoes (a SACK echoes the last segment
    /// in sequence, older than the retransmission). A burst at the tail,
    /// its first retransmission lost again: only later retransmissions
    /// are SACKed after it, and they alone reveal the lost one, without
    /// waiting for the RTO.
    #[test]
    fn a_sacked_retransmission_reveals_an_earlier_lost_one() {
        let mut c = cfg(RecoveryKind::Sack);
        c.header_bytes = 52; // timestamps on
        let mut h = harness(&c, AppLimit::Bytes(40 * MSS), Some(8_000_000));
        h.drops = (20..36).map(|k| (seg(k), 1)).collect();
        h.drops[0].1 = 2;
        let s = completed(h, 40 * MSS).sender.stats();
        assert_eq!(s.timeouts, 0, "the lost retransmission waited for the RTO");
        assert_eq!(s.retransmits, 17);
    }

    /// Linux `tcp_ack`: `tcp_fastretrans_alert` enters recovery and sends
    /// nothing; `tcp_cwnd_reduction` sets cwnd = in flight + sndcnt with
    /// prr_out still 0; then `tcp_xmit_recovery` sends. After a burst that
    /// leaves the flight below ssthresh, the ACK (or RACK timer) that
    /// starts the recovery lets out exactly the fast retransmission
    /// (sndcnt = max(prr_delivered − prr_out, newly delivered) = 1), not a
    /// second segment beside it.
    #[test]
    fn prr_entry_sends_only_the_fast_retransmission() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
        h.drops = (60..110).map(|k| (seg(k), 1)).collect();
        let h = completed(h, 300_000);
        assert_eq!(h.sender.stats().timeouts, 0);
        let data = h.data_sent();
        let first_rtx = data.iter().find(|d| d.2).unwrap().0;
        let burst: Vec<_> = data.iter().filter(|d| d.0 == first_rtx).collect();
        assert_eq!(burst.len(), 1, "sent at recovery entry: {burst:?}");
    }

    /// Linux `tcp_fastretrans_alert`: the ACK that reaches the recovery
    /// point is processed further as Open, and a loss already evident
    /// above the old recovery point (new data PRR sent during the
    /// recovery, dropped) starts the next recovery on that same ACK; the
    /// window is then PRR's, never a burst up to the restored ssthresh.
    /// Seen on the kernel through a policer (tcp:tcp_cong_state_set):
    /// Recovery → Open → Recovery at one timestamp.
    #[test]
    fn the_ack_ending_recovery_starts_the_next_one_without_a_burst() {
        let run = |extra: &[u64]| {
            let c = cfg(RecoveryKind::Sack);
            let mut h = harness(&c, AppLimit::Bytes(400_000), Some(8_000_000));
            h.drops = (60..90).map(|k| (seg(k), 1)).collect();
            // the last hole's retransmission is lost too: the recovery
            // point is reached a round trip later, by when the new data
            // sent after `extra` has been SACKed
            h.drops[29].1 = 2;
            h.drops.extend(extra.iter().map(|&s| (s, 1)));
            completed(h, 400_000)
        };
        let first = run(&[]);
        let data = first.data_sent();
        let rtx_at = data.iter().find(|d| d.2).unwrap().0;
        // the first new segments PRR sends during the recovery, dropped
        // as by a policer whose bucket is empty: out of the pipe once
        // marked lost, so the pipe is far below ssthresh at the end
        let during: Vec<u64> = data
            .iter()
            .filter(|d| d.0 > rtx_at && !d.2 && d.1 > seg(89))
            .take(10)
            .map(|d| d.1)
            .collect();
        let h = run(&during);
        let s = h.sender.stats();
        assert_eq!((s.timeouts, s.fast_recoveries), (0, 2), "{s:?}");
        // Recovery -> Recovery with no Open or Disorder between
        let start = h.trace.iter().position(|t| t.ca == 2).unwrap();
        let end = h.trace[start..].iter().position(|t| t.ca != 2).unwrap() + start;
        assert!(
            h.trace[end..].iter().all(|t| t.ca != 2),
            "left recovery between the two episodes at {:?}",
            h.trace[end]
        );
        // the ACK that starts the second episode sends what PRR allows
        let first_ssthresh = h.trace[start].ssthresh;
        let again = h.trace[start..]
            .iter()
            .find(|t| t.ssthresh < first_ssthresh)
            .unwrap();
        let sent = h.data_sent().iter().filter(|d| d.0 == again.at).count();
        assert!(
            sent <= 2,
            "{sent} segments sent as the second recovery began"
        );
    }

    /// Linux ≤ 4.3 without RACK (`tcp_mark_lost_retrans`): the same lost
    /// retransmission is found lost once new data sent after it is
    /// SACKed, and resent without a timeout; only the segment whose
    /// retransmission was lost goes out a third time.
    #[test]
    fn mark_lost_retrans_repairs_a_lost_retransmission_without_rack() {
        let run = |mark: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            (c.rack, c.mark_lost_retrans) = (false, mark);
            let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
            h.drops = vec![(seg(60), 2)];
            let h = completed(h, 300_000);
            let thrice = h.data_sent().iter().filter(|d| d.1 == seg(60)).count();
            (h.sender.stats(), thrice)
        };
        let (s, sent60) = run(true);
        assert_eq!((s.timeouts, s.retransmits, s.fast_recoveries), (0, 2, 1));
        assert_eq!(sent60, 3);
        assert_eq!(run(false).0.timeouts, 1, "RFC 6675 alone: an RTO");
    }

    /// Linux ≤ 4.3: once reordering of more than `tp->reordering` (3)
    /// packets was seen, `tcp_update_reordering` has turned FACK off and
    /// `tcp_mark_lost_retrans` no longer finds the lost retransmission:
    /// the same episode as above ends in an RTO. Reordering of 3 packets
    /// leaves FACK on.
    #[test]
    fn reordering_beyond_three_turns_fack_and_mark_lost_retrans_off() {
        let run = |span_segs: u64| {
            let mut c = cfg(RecoveryKind::Sack);
            (c.rack, c.mark_lost_retrans) = (false, true);
            let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
            h.sender.note_reordering(span_segs * h.sender.mss() as u64);
            h.drops = vec![(seg(60), 2)];
            completed(h, 300_000).sender.stats()
        };
        assert_eq!(run(3).timeouts, 0, "FACK still on: found by SACKs");
        assert_eq!(run(4).timeouts, 1, "FACK off: the RTO repairs it");
    }

    /// Linux ≤ 4.3 `tcp_update_reordering` raises `tp->reordering`, the
    /// DupThresh of `tcp_time_to_recover`, to the reordering distance
    /// seen: a loss with only five segments after it, repaired by fast
    /// retransmit at the default 3, waits for the RTO once reordering of
    /// 8 segments was seen; the RTO (`tcp_enter_loss`) lowers it back to
    /// 3.
    #[test]
    fn reordering_raises_the_dupthresh_until_the_next_rto() {
        let run = |span_segs: u64| {
            let mut c = cfg(RecoveryKind::Sack);
            (c.rack, c.mark_lost_retrans) = (false, true);
            let mut h = harness(&c, AppLimit::Bytes(300 * MSS), Some(8_000_000));
            h.sender.note_reordering(span_segs * h.sender.mss() as u64);
            let raised = h.sender.reordering;
            h.drops = vec![(seg(294), 1)];
            let h = completed(h, 300 * MSS);
            (raised, h.sender.reordering, h.sender.stats())
        };
        let (raised, after, s) = run(3);
        assert_eq!((raised, after), (3, 3));
        assert_eq!((s.timeouts, s.fast_recoveries), (0, 1), "fast retransmit");
        let (raised, after, s) = run(8);
        assert_eq!(raised, 8, "tp->reordering = the distance seen");
        assert_eq!(s.timeouts, 1, "five SACKs are below the raised DupThresh");
        assert_eq!(after, 3, "tcp_enter_loss: back to sysctl_tcp_reordering");
    }

    /// Two SACKed segments are not DupThresh, but RACK's reordering
    /// window (min_rtt/4 = 5 ms, + 2 ms timer slack) runs out and the
    /// reordering timer starts the recovery.
    #[test]
    fn rack_reordering_timer_recovers_with_two_sacks() {
        let run = |rack: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            c.tlp = false;
            c.rack = rack;
            let mut h = harness(&c, AppLimit::Bytes(20_000), None);
            h.drops = vec![(seg(17), 1)];
            completed(h, 20_000)
        };
        let h = run(true);
        let s = h.sender.stats();
        assert_eq!((s.timeouts, s.fast_recoveries, s.retransmits), (0, 1, 1));
        // 18's SACK arrives at 60 ms; 17 was sent at 40 ms: RACK.rtt 20 ms
        // + 5 ms after 40 = 65 ms, + 2 ms slack.
        let rtx = h.data_sent().into_iter().find(|d| d.2).unwrap();
        assert_eq!(rtx.0, at_ms(67));
        assert_eq!(run(false).sender.stats().timeouts, 1);
    }

    /// RFC 3042 without SACK: the first and second duplicate ACKs each let
    /// one new segment out; without limited transmit they let nothing out.
    #[test]
    fn limited_transmit_sends_one_new_segment_per_early_dupack() {
        let run = |lt: bool| {
            let mut c = cfg(RecoveryKind::NewReno);
            c.limited_transmit = lt;
            let mut h = harness(&c, AppLimit::Bytes(200_000), Some(8_000_000));
            h.drops = vec![(seg(60), 1)];
            let h = completed(h, 200_000);
            // Arrivals at the sender of the 1st and 2nd duplicate ACK.
            let dups: Vec<Instant> = h
                .acks()
                .into_iter()
                .filter(|(_, a)| a.ack == seg(60))
                .skip(1)
                .take(2)
                .map(|(t, _)| t + ms(10))
                .collect();
            let new_at_dups = h
                .data_sent()
                .into_iter()
                .filter(|d| !d.2 && dups.contains(&d.0))
                .count();
            (new_at_dups, h.sender.stats())
        };
        let (n, s) = run(true);
        assert_eq!(n, 2);
        assert_eq!((s.fast_recoveries, s.timeouts, s.retransmits), (1, 0, 1));
        assert_eq!(run(false).0, 0);
    }

    /// RFC 6675 NextSeg rule 4: the last segment is lost along with an
    /// earlier one and nothing new is left to send; once the partial ACK
    /// passes RescueRxt, the rescue retransmission resends it instead of
    /// waiting for the RTO. (RACK finds it too, one RTT after the first
    /// retransmission, which was sent after it and delivered.)
    #[test]
    fn rescue_retransmission_repairs_the_last_segment() {
        let run = |rescue: bool, rack: bool| {
            let mut c = cfg(RecoveryKind::Sack);
            c.tlp = false;
            c.rack = rack;
            c.rescue_retransmit = rescue;
            let mut h = harness(&c, AppLimit::Bytes(20_000), None);
            h.drops = vec![(seg(14), 1), (seg(19), 1)];
            completed(h, 20_000)
        };
        let h = run(true, false);
        let s = h.sender.stats();
        assert_eq!((s.timeouts, s.fast_recoveries, s.retransmits), (0, 1, 2));
        let rtx: Vec<u64> = h.data_sent().iter().filter(|d| d.2).map(|d| d.1).collect();
        assert_eq!(rtx, vec![seg(14), seg(19)]);
        assert_eq!(run(false, false).sender.stats().timeouts, 1);
        let s = run(false, true).sender.stats();
        assert_eq!((s.timeouts, s.retransmits), (0, 2));
    }

    /// Linux `tcp_may_raise_cwnd`: the SACK-only ACKs before recovery
    /// (Disorder) do not grow cwnd, even in slow start.
    #[test]
    fn sack_only_acks_do_not_grow_cwnd() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
        h.drops = vec![(seg(60), 1)];
        let h = completed(h, 300_000);
        let first = h.trace.iter().position(|t| t.ca == 1).unwrap();
        let before = h.trace[first - 1].cwnd;
        let disorder: Vec<u64> = h.trace[first..]
            .iter()
            .take_while(|t| t.ca == 1)
            .map(|t| t.cwnd)
            .collect();
        assert!(
            !disorder.is_empty() && disorder.iter().all(|&w| w == before),
            "{before} {disorder:?}"
        );
        assert!(h.trace[first - 1].ssthresh > before, "still in slow start");
    }

    /// The Linux RTO: SRTT + rttvar ≥ min_rto, 220 ms at a 20 ms RTT where
    /// RFC 6298 gives 200 ms (`tail_loss_needs_rto_with_doubling_backoff`).
    #[test]
    fn linux_rto_fires_srtt_plus_min_rto_after_the_last_ack() {
        let mut c = cfg(RecoveryKind::Sack);
        c.linux_rto = true;
        c.tlp = false;
        let mut h = harness(&c, AppLimit::Bytes(20_000), None);
        h.drops = vec![(seg(19), 1)];
        let h = completed(h, 20_000);
        let rtx = h.data_sent().into_iter().find(|d| d.2).unwrap();
        assert_eq!((rtx.0, rtx.1), (at_ms(60) + ms(220), seg(19)));
    }

    /// Linux's RTO is a jiffies `timer_list` on the timer wheel
    /// (`tcp/jiffies.rs`). At HZ = 250 the test above's RTO, armed by the
    /// last ACK at 60 ms (tick 15): 220 ms = 55 jiffies, level 0, bucket
    /// 15 + 55 + 1 = 71, so 284 ms, not 280; with a 300 ms minimum, 320 ms
    /// = 80 jiffies is on level 1 (8-jiffy buckets): expires 95, bucket 96,
    /// so 384 ms, not 380.
    #[test]
    fn the_rto_runs_at_its_timer_wheel_tick() {
        for (min_rto, want) in [(200, 284), (300, 384)] {
            let mut c = cfg(RecoveryKind::Sack);
            c.linux_rto = true;
            c.tlp = false;
            c.min_rto = ms(min_rto);
            c.timer_hz = Some(250);
            let mut h = harness(&c, AppLimit::Bytes(20_000), None);
            h.drops = vec![(seg(19), 1)];
            let h = completed(h, 20_000);
            let rtx = h.data_sent().into_iter().find(|d| d.2).unwrap();
            assert_eq!((rtx.0, rtx.1), (at_ms(want), seg(19)), "min_rto {min_rto}");
        }
    }

    struct NoIo;
    impl TcpIo for NoIo {
        fn transmit(&mut self, _h: TcpHeader) {}
    }

    /// PRR's proportional part divides by the window when recovery began
    /// (Linux `prior_cwnd`), not by FlightSize: with 10 segments in
    /// flight under a 20-segment window, ssthresh 5000 B, 4000 B delivered
    /// allow ceil(4000·5000/20000) = 1000 B (FlightSize would give 2000).
    #[test]
    fn prr_divides_by_the_window_at_recovery_start() {
        let c = cfg(RecoveryKind::Sack);
        let mut h = harness(&c, AppLimit::Bytes(10_000), None);
        h.start();
        h.run_until(at_ms(20));
        let s = &mut h.sender;
        assert_eq!(s.flight_size_bytes(), 10_000);
        s.state.cwnd_bytes = 20_000;
        s.enter_recovery(at_ms(21), &mut NoIo);
        assert_eq!((s.recover_fs, s.ssthresh_bytes()), (20_000, 5_000));
        s.prr_reduce(4_000, false);
        assert_eq!(s.cwnd_bytes(), s.bytes_in_flight() + 1_000);
    }

    /// Linux's `tcp_cwnd_reduction` counts packets: with ssthresh 10 of a
    /// prior window of 20 segments (`tcp_reno_ssthresh`), one segment
    /// delivered allows DIV_ROUND_UP(1·10, 20) = 1 whole segment, where RFC
    /// 6937's bytes (ssthresh FlightSize/2 = 5000 B) give
    /// ceil(1000·5000/20000) = 250 B, less than a segment, so nothing.
    #[test]
    fn linux_prr_rounds_up_to_whole_segments() {
        for (linux, ssthresh, want) in [(true, 10_000, 1_000), (false, 5_000, 250)] {
            let mut c = cfg(RecoveryKind::Sack);
            c.linux_rto = linux; // the Linux profiles' mark
            let mut h = harness(&c, AppLimit::Bytes(10_000), None);
            h.start();
            h.run_until(at_ms(20));
            let s = &mut h.sender;
            s.state.cwnd_bytes = 20_000;
            s.enter_recovery(at_ms(21), &mut NoIo);
            assert_eq!(s.ssthresh_bytes(), ssthresh);
            s.prr_reduce(1_000, false);
            assert_eq!(s.cwnd_bytes(), s.bytes_in_flight() + want, "linux {linux}");
        }
    }

    /// A 300 kB transfer (timestamps on, as Linux) whose segments `segs`
    /// arrive `extra` late, nothing lost.
    fn reordered(segs: &[u64], extra: Duration, timestamps: bool) -> Harness {
        let mut c = cfg(RecoveryKind::Sack);
        if timestamps {
            c.header_bytes = 52;
        }
        let mut h = harness(&c, AppLimit::Bytes(300_000), Some(8_000_000));
        h.reorder = segs.iter().map(|&k| (seg(k), extra)).collect();
        completed(h, 300_000)
    }

    /// A segment 15 ms late (RTT 20 ms) looks lost to RACK (three SACKs,
    /// no reordering seen yet: reo_wnd 0) and is retransmitted; the
    /// original's timestamp echo and the D-SACK of the copy prove it
    /// spurious and the recovery is undone: the window is the one before.
    #[test]
    fn spurious_fast_recovery_is_undone() {
        for ts in [true, false] {
            let h = reordered(&[60], ms(15), ts);
            let s = h.sender.stats();
            assert_eq!(
                (
                    s.fast_recoveries,
                    s.recovery_undos,
                    s.retransmits,
                    s.timeouts
                ),
                (1, 1, 1, 0),
                "timestamps {ts}"
            );
            let entry = h.trace.iter().position(|t| t.ca == 2).unwrap();
            let before = h.trace[entry - 1];
            // Undone (without timestamps by the late D-SACK, after the
            // recovery ended): ssthresh back, cwnd at least the old one.
            let undone = h.trace[entry..]
                .iter()
                .find(|t| t.ca != 2 && t.ssthresh == before.ssthresh)
                .unwrap();
            assert!(undone.cwnd >= before.cwnd, "{ts}: {undone:?} vs {before:?}");
            assert_eq!(h.sender.ssthresh_bytes(), before.ssthresh, "{ts}");
        }
    }

    /// Once reordering was seen, RACK waits min_rtt/4 per step, and the
    /// D-SACK of the first spurious retransmission added a step (10 ms):
    /// a second segment 8 ms late no longer starts a recovery.
    #[test]
    fn seen_reordering_widens_the_rack_window() {
        let h = reordered(&[60, 200], ms(8), true);
        let s = h.sender.stats();
        assert_eq!(
            (s.fast_recoveries, s.recovery_undos, s.retransmits),
            (1, 1, 1)
        );
        assert!(h.sender.rack.reord_seen);
    }
}
