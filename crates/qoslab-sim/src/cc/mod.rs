//! Congestion control: the contract between a TCP sender and an algorithm.
//!
//! Modelled on Linux's `struct tcp_congestion_ops` (include/net/tcp.h): the
//! sender owns loss detection and recovery; the algorithm owns the window
//! growth (`cong_avoid`), the reduction on loss (`ssthresh`) and, for
//! model-based algorithms such as BBR, the whole window and the pacing rate
//! (`cong_control`). Windows are in **bytes** (RFC 5681 style) so that
//! byte-sized advertised windows such as 64512 B are exact; algorithms that
//! think in segments (CUBIC, Linux) convert with `mss`.

mod bbr;
mod compound;
mod cubic;
mod reno;

pub use bbr::{Bbr, BbrMode};
pub use compound::Compound;
pub use cubic::{Cubic, CubicConfig};
pub use reno::Reno;

use crate::config::CcKind;
use qoslab_core::{Duration, Instant, Rate};

/// The window state shared by sender and algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    /// Sender maximum segment size (payload bytes).
    pub mss: u32,
    /// Pacing rate set by the algorithm (BBR) or derived by the sender
    /// when pacing is on; `None` = send as fast as the window allows.
    pub pacing_rate: Option<Rate>,
}

impl CcState {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }

    /// The growth step every window-growth algorithm starts with (Linux
    /// `tcp_cong_control` → `cong_avoid`): no growth in recovery or when the
    /// window is not what limits sending; in slow start cwnd grows by the
    /// bytes acked up to ssthresh (Linux `tcp_slow_start`, RFC 3465 byte
    /// counting). Returns the acked bytes left for congestion avoidance
    /// (0 = nothing left to do).
    pub(crate) fn slow_start(&mut self, ack: &AckSample) -> u64 {
        if ack.in_recovery || !ack.cwnd_limited {
            return 0;
        }
        if !self.in_slow_start() {
            return ack.acked_bytes;
        }
        let room = self.ssthresh_bytes - self.cwnd_bytes;
        let grow = ack.acked_bytes.min(room);
        self.cwnd_bytes += grow;
        ack.acked_bytes - grow
    }
}

/// Packet-timed rounds seen from the ACK stream alone: a round ends when
/// every byte that was in flight when it began has been acknowledged (Linux
/// CUBIC's HyStart compares `snd_una` with the `snd_nxt` saved at the round
/// start, `bictcp_hystart_reset`). Bytes acknowledged are summed here, so
/// the marker is "acked so far + bytes in flight" at the round start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AckRounds {
    acked_total_bytes: u64,
    round_end_bytes: u64,
}

impl AckRounds {
    /// Count one ACK; true when it opens a new round (the first ACK does).
    pub(crate) fn on_ack(&mut self, acked_bytes: u64, bytes_in_flight: u64) -> bool {
        self.acked_total_bytes += acked_bytes;
        if self.acked_total_bytes > self.round_end_bytes {
            self.round_end_bytes = self.acked_total_bytes + bytes_in_flight;
            true
        } else {
            false
        }
    }
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation,
/// Linux `struct rate_sample`, net/ipv4/tcp_rate.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered (cumulatively or SACKed) over `interval`.
    pub delivered_bytes: u64,
    /// max(send elapsed, ack elapsed) of the sampled packet.
    pub interval: Duration,
    /// The sampled packet was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// Total bytes delivered when the sampled packet was sent (BBR's
    /// round counting uses it).
    pub prior_delivered_bytes: u64,
    /// Total bytes delivered so far, after this ACK.
    pub delivered_total_bytes: u64,
    /// Bytes newly marked lost by this ACK.
    pub lost_bytes: u64,
    /// Bytes in flight before this ACK was processed.
    pub prior_in_flight_bytes: u64,
}

/// What one ACK told the sender, handed to [`CongestionControl::on_ack`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    pub now: Instant,
    /// Bytes newly acknowledged by this ACK (cumulative advance plus newly
    /// SACKed bytes).
    pub acked_bytes: u64,
    /// RTT measured by this ACK (Karn's rule applied), if any.
    pub rtt: Option<Duration>,
    /// RTT of the newest segment this ACK newly covers (Linux `ca_rtt_us`,
    /// passed to the algorithm as `ack_sample.rtt_us`; SACKed segments
    /// first, the timestamp RTT when no segment gives one).
    pub ca_rtt: Option<Duration>,
    /// Linux `sk_pacing_rate`, which exists whether or not the sender
    /// paces (net/ipv4/tcp_input.c `tcp_update_pacing_rate`).
    pub sk_pacing_rate: Option<Rate>,
    /// The sender paces (Linux `sk_pacing_status != SK_PACING_NONE`: fq
    /// or internal pacing).
    pub paced: bool,
    /// Smallest RTT seen on the connection.
    pub min_rtt: Option<Duration>,
    /// RFC 6298 smoothed RTT.
    pub srtt: Option<Duration>,
    /// Bytes in flight after this ACK was processed.
    pub bytes_in_flight: u64,
    /// The sender is in fast recovery (Linux `TCP_CA_Recovery`, a cwnd
    /// reduction): window-growth algorithms must not grow. After an RTO
    /// (Linux `TCP_CA_Loss`) it is false: cwnd slow-starts from one
    /// segment, as in Linux (`tcp_in_cwnd_reduction` is false in Loss).
    pub in_recovery: bool,
    /// The window was what limited sending (Linux `tcp_is_cwnd_limited`);
    /// growth algorithms do not grow an unused window (RFC 7661 spirit),
    /// which is what keeps cwnd finite when awnd limits the flow.
    pub cwnd_limited: bool,
    /// Delivery-rate sample, when the sender could take one.
    pub rate: Option<RateSample>,
}

/// A congestion-control algorithm (one instance per connection).
pub trait CongestionControl: Send {
    fn name(&self) -> &'static str;

    /// Connection established: `state` holds the initial window.
    fn init(&mut self, _state: &mut CcState, _now: Instant) {}

    /// Every ACK that acknowledges new data (cumulatively or by SACK).
    /// Growth only when `!ack.in_recovery && ack.cwnd_limited`.
    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample);

    /// Fewest segments per TSO burst (Linux `ca_ops->min_tso_segs`, else
    /// sysctl `tcp_min_tso_segs` = 2; net/ipv4/tcp_output.c `tcp_tso_segs`).
    fn min_tso_segs(&self, _state: &CcState) -> u32 {
        crate::tcp::tso::MIN_TSO_SEGS
    }

    /// The connection is a Linux stack's (the `linux*` profiles): rules
    /// where the kernel differs from the RFC the algorithm follows by
    /// default are switched on (Reno: `tcp_reno_ssthresh` halves cwnd, not
    /// FlightSize). Called once, before the connection starts.
    fn set_linux(&mut self) {}

    /// Loss detected by duplicate ACKs / SACK: return the new ssthresh
    /// (Linux `ssthresh` op). The sender then runs its recovery algorithm.
    fn ssthresh(&mut self, state: &CcState, bytes_in_flight: u64, now: Instant) -> u64;

    /// Fast recovery finished (recovery point acknowledged): RFC 6582 sets
    /// cwnd to ssthresh (deflation). Algorithms may refine.
    fn on_recovery_exit(&mut self, state: &mut CcState, _now: Instant) {
        state.cwnd_bytes = state.ssthresh_bytes.max(state.mss as u64);
    }

    /// The retransmission timer fired (RFC 5681 §3.1 eq. 4 and cwnd = 1
    /// segment, the loss window).
    fn on_rto(&mut self, state: &mut CcState, bytes_in_flight: u64, now: Instant) {
        state.ssthresh_bytes = self.ssthresh(state, bytes_in_flight, now);
        state.cwnd_bytes = state.mss as u64;
    }

    /// The last window reduction was spurious and is undone (Linux
    /// `tcp_undo_cwnd_reduction`: F-RTO, Eifel). `prior_cwnd_bytes` and
    /// `prior_ssthresh_bytes` were saved when the reduction began
    /// (`prior_ssthresh` = Linux `tcp_current_ssthresh`). Default, Linux
    /// `tcp_reno_undo_cwnd` (also CUBIC's since 4.13): cwnd = max(cwnd,
    /// prior cwnd), ssthresh = max(ssthresh, prior ssthresh).
    fn undo(
        &mut self,
        state: &mut CcState,
        prior_cwnd_bytes: u64,
        prior_ssthresh_bytes: u64,
        _now: Instant,
    ) {
        state.cwnd_bytes = state.cwnd_bytes.max(prior_cwnd_bytes);
        state.ssthresh_bytes = state.ssthresh_bytes.max(prior_ssthresh_bytes);
    }

    /// The sender transmits from an empty pipe after `idle` without
    /// sending (Linux `CA_EVENT_TX_START`, raised by `tcp_event_data_sent`
    /// in net/ipv4/tcp_output.c). Called by [`TcpSender::app_write`]
    /// (an application that paused), the only path on which a sender here
    /// goes idle.
    ///
    /// [`TcpSender::app_write`]: crate::tcp::TcpSender::app_write
    fn on_tx_start(&mut self, _state: &mut CcState, _idle: Duration, _now: Instant) {}

    /// True when the algorithm sets cwnd itself in every state (BBR's
    /// `cong_control`), so the sender must not apply its own recovery
    /// window arithmetic.
    fn owns_cwnd(&self) -> bool {
        false
    }
}

/// Build the algorithm named by `kind` with seed 0; see [`build_seeded`].
pub fn build(kind: CcKind) -> Option<Box<dyn CongestionControl>> {
    build_seeded(kind, 0)
}

/// Build the algorithm named by `kind`. `seed` feeds the algorithms that
/// draw random numbers (BBR's gain-cycle start phase): derive it from the
/// run seed and the flow so that flows differ and runs repeat. NewReno
/// shares Reno's window rules (RFC 6582 changes only the recovery, which
/// the sender owns). `None` would mean "not available" (the caller
/// reports a configuration error); every [`CcKind`] is available now.
pub fn build_seeded(kind: CcKind, seed: u64) -> Option<Box<dyn CongestionControl>> {
    build_for(kind, seed, CubicConfig::default())
}

/// As [`build_seeded`], with CUBIC's switches given (an OS profile's
/// CUBIC, e.g. `linux-3.x`'s per-ACK Reno estimate).
pub fn build_for(
    kind: CcKind,
    seed: u64,
    cubic: CubicConfig,
) -> Option<Box<dyn CongestionControl>> {
    match kind {
        CcKind::Reno | CcKind::NewReno => Some(Box::new(Reno::new())),
        CcKind::Cubic => Some(Box::new(Cubic::new(cubic))),
        CcKind::Compound => Some(Box::new(Compound::new())),
        CcKind::Bbr => Some(Box::new(Bbr::new(seed))),
    }
}

/// Builders shared by the algorithms' unit tests.
#[cfg(test)]
pub(crate) mod testkit {
    use super::{AckSample, CcState};
    use qoslab_core::{Duration, Instant};

    /// The test segment size.
    pub const MSS: u64 = 1000;

    /// A window state in whole test segments (ssthresh saturates).
    pub fn state(cwnd_segs: u64, ssthresh_segs: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd_segs * MSS,
            ssthresh_bytes: ssthresh_segs.saturating_mul(MSS),
            mss: MSS as u32,
            pacing_rate: None,
        }
    }

    /// A window-limited ACK outside recovery, nothing left in flight.
    pub fn ack(now_ns: u64, acked_bytes: u64, rtt: Option<Duration>) -> AckSample {
        AckSample {
            now: Instant::from_ns(now_ns),
            acked_bytes,
            rtt,
            ca_rtt: rtt,
            sk_pacing_rate: None,
            paced: false,
            min_rtt: rtt,
            srtt: rtt,
            bytes_in_flight: 0,
            in_recovery: false,
            cwnd_limited: true,
            rate: None,
        }
    }
}
