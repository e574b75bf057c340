//! BBR v1, as Linux `net/ipv4/tcp_bbr.c` (the `bbr` module of Linux 4.9 and
//! later, including the 4.20+ ACK-aggregation allowance) and
//! draft-cardwell-iccrg-bbr-congestion-control-00 (Cardwell, Cheng, Hassas
//! Yeganeh, Jacobson, 2017); background: "BBR: Congestion-Based Congestion
//! Control", ACM Queue 14(5), 2016.
//!
//! BBR owns the window and the pacing rate ([`CongestionControl::owns_cwnd`]
//! is true; it sets [`CcState::pacing_rate`] on every ACK). Per ACK
//! (`bbr_main`) it updates its path model, then derives:
//! - `pacing_rate = pacing_gain · BtlBw · 99 %` (Linux
//!   `bbr_pacing_margin_percent = 1`);
//! - `cwnd = cwnd_gain · BtlBw · RTprop + quantization budget`, reached by
//!   growing `acked` bytes per ACK (`bbr_set_cwnd`), never below 4 segments.
//!
//! The model:
//! - **BtlBw**: windowed max of delivery-rate samples over 10 packet-timed
//!   rounds (`bbr_bw_rtts`, Kathleen Nichols' 3-sample running max of Linux
//!   `lib/win_minmax.c`). Rounds advance when a sample's
//!   `prior_delivered_bytes` reaches the `delivered` total saved at the
//!   last round start (`bbr_update_bw`). Application-limited samples enter
//!   the filter only when they are not below the current max.
//! - **RTprop**: min RTT, refreshed when a lower sample arrives or when the
//!   10 s window (`bbr_min_rtt_win_sec`) expires.
//! - **States** (`bbr_update_gains`):
//!   - Startup: pacing and cwnd gain 2/ln 2 ≈ 2.885 (`bbr_high_gain`,
//!     739/256) until BtlBw fails to grow by 25 % in 3 non-app-limited
//!     rounds (`bbr_check_full_bw_reached`);
//!   - Drain: pacing gain 1/2.885 until inflight ≤ 1·BDP (`bbr_check_drain`,
//!     which also sets ssthresh to that BDP);
//!   - ProbeBW: pacing gain cycle 5/4, 3/4, 1 ×6, cwnd gain 2; a phase ends
//!     after one RTprop, except 5/4 also waits for inflight to reach
//!     5/4·BDP (or a loss) and 3/4 ends early once inflight ≤ BDP. The
//!     cycle starts at a random phase other than 3/4 (`bbr_cycle_rand`),
//!     drawn from a seeded [`Rng`] so runs repeat;
//!   - ProbeRTT: entered when RTprop is 10 s old; cwnd ≤ 4 segments for
//!     max(200 ms, one round) once inflight has dropped to 4 segments, then
//!     back to ProbeBW (or Startup if the pipe was never full) with the
//!     saved cwnd restored. Rate samples of data sent during ProbeRTT are
//!     treated as application-limited, as Linux marks `tp->app_limited`
//!     (emulated here from `prior_delivered_bytes`).
//! - **Quantization budget** (`bbr_quantization_budget`): target cwnd + 3
//!   TSO bursts of `bbr_tso_segs_goal` segments (computed from the current
//!   pacing rate as Linux does whatever the device: 1 segment below
//!   1.2 Mbit/s, 2 at 10 Mbit/s, 8 at 100 Mbit/s; see [`crate::tcp::tso`]),
//!   rounded up to an even number of segments, + 2 in the 5/4 phase. The
//!   sender sends the same bursts (`tcp_tso_autosize` with BBR's
//!   `bbr_min_tso_segs`, [`CongestionControl::min_tso_segs`]).
//! - **ACK aggregation** (`bbr_update_ack_aggregation`, Linux 4.20+): once
//!   the pipe is full, cwnd gets the max "extra acked" beyond BtlBw·epoch
//!   of the last 5–10 rounds, capped at 100 ms of BtlBw.
//! - **Loss**: the bytes newly lost are taken off cwnd — the ACK's
//!   `rs->losses`, the growth of Linux's `tp->lost`, which counts a
//!   retransmission lost again as a new loss (`tcp_mark_skb_lost`; see
//!   tcp/scoreboard.rs `lost_events_bytes`), as do the
//!   loss totals of the policer detector below; the first round of
//!   fast recovery uses packet conservation (cwnd = inflight + acked, then
//!   at least that), later rounds grow by `acked`; leaving recovery
//!   restores the cwnd saved at its start
//!   (`bbr_set_cwnd_to_recover_or_restore`). An RTO sets cwnd to 1 segment
//!   (Linux `tcp_enter_loss`), resets the full-bandwidth detector and ends
//!   the round (`bbr_set_state(TCP_CA_Loss)`); cwnd then grows by `acked`
//!   and the saved cwnd is restored when the Loss state ends. The contract
//!   has no Loss flag, so the Loss state is taken to last until the bytes
//!   outstanding at the timeout (the `bytes_in_flight` handed to `on_rto`,
//!   i.e. the sender's flight size) have been delivered — bytes SACKed
//!   before the timeout make it last a little longer than Linux's.
//! - **Long-term bandwidth (policer detection)** (`bbr_lt_bw_sampling`): from
//!   the first loss, intervals of 4–16 rounds are sampled; an interval is
//!   lossy when lost/delivered ≥ 50/256 (≈ 20 %); two consecutive lossy
//!   intervals with delivery rates within 1/8 or 4 kbit/s of each other mean
//!   "policed": BBR then uses their average (`lt_bw`) as BtlBw with pacing
//!   gain 1 for 48 rounds, then re-probes.
//!
//! Left out: restart from idle (`CA_EVENT_TX_START`, no event in the
//! contract) and so `idle_restart`; the EDT correction
//! `bbr_packets_in_net_at_edt` (inflight is used as is); undo of spurious
//! recoveries; `sk_max_pacing_rate`. Before the first RTT sample cwnd is
//! capped at 10 segments (`TCP_INIT_CWND`) as in Linux.

use super::{AckSample, CcState, CongestionControl, RateSample};
use crate::tcp::tso::{bbr_min_tso_segs, bbr_tso_segs_goal};
use qoslab_core::rng::Rng;
use qoslab_core::{Duration, Instant, Rate};

/// Fixed-point unit of gains (Linux `BBR_UNIT`, 1 << 8).
const UNIT: u64 = 256;
/// 2/ln 2 = 2.885 (`bbr_high_gain`).
const HIGH_GAIN: u64 = UNIT * 2885 / 1000 + 1;
/// 1/2.885 (`bbr_drain_gain`).
const DRAIN_GAIN: u64 = UNIT * 1000 / 2885;
/// Steady-state cwnd gain (`bbr_cwnd_gain`).
const CWND_GAIN: u64 = UNIT * 2;
/// ProbeBW's pacing-gain cycle (`bbr_pacing_gain`).
const PACING_GAIN: [u64; CYCLE_LEN] = [
    UNIT * 5 / 4,
    UNIT * 3 / 4,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
];
const CYCLE_LEN: usize = 8;
/// The start phase is drawn among this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Window of the BtlBw max filter, in rounds (`bbr_bw_rtts`).
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window of the RTprop min filter (`bbr_min_rtt_win_sec`).
const MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// Minimum time in ProbeRTT at the minimum window (`bbr_probe_rtt_mode_ms`).
const PROBE_RTT_MODE: Duration = Duration::from_ms(200);
/// Pace this many percent below the estimate (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// Minimum cwnd, segments (`bbr_cwnd_min_target`).
const CWND_MIN_TARGET_SEGS: u64 = 4;
/// Growth that still counts as "more bandwidth" (`bbr_full_bw_thresh`).
const FULL_BW_THRESH: u64 = UNIT * 5 / 4;
/// Rounds without such growth before the pipe is full (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
/// Linux `TCP_INIT_CWND`, the cwnd cap without an RTT sample.
const INIT_CWND_SEGS: u64 = 10;
/// Long-term sampling (`bbr_lt_*`).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = UNIT / 8;
/// 4 kbit/s in bytes per second (`bbr_lt_bw_diff`).
const LT_BW_DIFF_BYTES_PER_S: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (`bbr_extra_acked_*`).
const EXTRA_ACKED_GAIN: u64 = UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_SEGS: u64 = 1 << 20;
const EXTRA_ACKED_MAX: Duration = Duration::from_ms(100);
/// The RNG stream of BBR's gain-cycle phase, under the caller's seed.
const RNG_STREAM: u64 = 0xBB_0001;
const NS_PER_S: u128 = 1_000_000_000;

/// BBR's state machine (`enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Linux's congestion-avoidance states as BBR sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum CaState {
    Open,
    Recovery,
    Loss,
}

/// Windowed running max over a window of rounds, keeping the best, 2nd
/// best and 3rd best samples of successive sub-windows (K. Nichols'
/// algorithm, Linux `lib/win_minmax.c` `minmax_running_max`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct WindowedMax {
    /// (round, value), best first.
    s: [(u64, u64); 3],
}

impl WindowedMax {
    fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }

    fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let new = (t, v);
        if v >= self.s[0].1 || t.saturating_sub(self.s[2].0) > win {
            // A new best, or the whole window has aged out.
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].1 {
            self.s[1] = new;
            self.s[2] = new;
        } else if v >= self.s[2].1 {
            self.s[2] = new;
        }
        // Age the sub-windows.
        let dt = t.saturating_sub(self.s[0].0);
        if dt > win {
            self.s = [self.s[1], self.s[2], new];
            if t.saturating_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], new];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = new;
            self.s[2] = new;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = new;
        }
        self.s[0].1
    }
}

/// Long-term ("policer") bandwidth sampling state (`bbr->lt_*`).
#[derive(Clone, Copy, Debug, Default)]
struct LongTerm {
    is_sampling: bool,
    rtt_cnt: u32,
    use_bw: bool,
    bw_bytes_per_s: u64,
    last_delivered_bytes: u64,
    last_lost_bytes: u64,
    last_stamp: Instant,
}

/// One ACK's delivery information, with Linux's defaults when the sender
/// took no rate sample (`rs->delivered < 0`).
#[derive(Clone, Copy, Debug)]
struct Sample {
    rate: Option<RateSample>,
    is_app_limited: bool,
    lost_bytes: u64,
    prior_in_flight_bytes: u64,
}

/// BBR v1 (one instance per connection).
#[derive(Clone, Debug)]
pub struct Bbr {
    rng: Rng,
    initialized: bool,
    mode: BbrMode,
    pacing_gain: u64,
    cwnd_gain: u64,
    /// BtlBw max filter, bytes per second, keyed by round count.
    bw: WindowedMax,
    rtt_cnt: u64,
    next_rtt_delivered_bytes: u64,
    round_start: bool,
    /// Total bytes delivered (`tp->delivered`) and lost (`tp->lost`).
    delivered_bytes: u64,
    lost_bytes: u64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    has_seen_rtt: bool,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    /// Delivered-bytes span in which sent data counts as app-limited
    /// (Linux sets `tp->app_limited` in ProbeRTT).
    probe_rtt_app_limited: Option<(u64, u64)>,
    full_bw_reached: bool,
    full_bw_bytes_per_s: u64,
    full_bw_cnt: u32,
    cycle_idx: usize,
    cycle_stamp: Instant,
    prior_cwnd_bytes: u64,
    prev_ca_state: CaState,
    /// After an RTO: the Loss state lasts until this many bytes have been
    /// delivered (all that was outstanding at the timeout; Linux leaves
    /// `TCP_CA_Loss` when `snd_una` reaches `high_seq`).
    loss_end_delivered_bytes: Option<u64>,
    packet_conservation: bool,
    lt: LongTerm,
    ack_epoch_stamp: Instant,
    ack_epoch_acked_bytes: u64,
    extra_acked_bytes: [u64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Linux `bbr_tso_segs_goal` at the current pacing rate, segments.
    tso_segs_goal: u64,
}

impl Bbr {
    /// A BBR instance; `seed` feeds the gain-cycle start phase (derive it
    /// from the run seed and the flow, so flows differ but runs repeat).
    pub fn new(seed: u64) -> Self {
        Bbr {
            rng: Rng::new(seed, RNG_STREAM),
            initialized: false,
            mode: BbrMode::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered_bytes: 0,
            round_start: false,
            delivered_bytes: 0,
            lost_bytes: 0,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            has_seen_rtt: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            probe_rtt_app_limited: None,
            full_bw_reached: false,
            full_bw_bytes_per_s: 0,
            full_bw_cnt: 0,
            cycle_idx: 0,
            cycle_stamp: Instant::ZERO,
            prior_cwnd_bytes: 0,
            prev_ca_state: CaState::Open,
            loss_end_delivered_bytes: None,
            packet_conservation: false,
            lt: LongTerm::default(),
            ack_epoch_stamp: Instant::ZERO,
            ack_epoch_acked_bytes: 0,
            extra_acked_bytes: [0; 2],
            extra_acked_win_rtts: 0,
            tso_segs_goal: 1,
            extra_acked_win_idx: 0,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The current pacing gain (×256).
    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }

    /// The bandwidth estimate in use, bytes per second (`bbr_bw`).
    pub fn bw_bytes_per_s(&self) -> u64 {
        if self.lt.use_bw {
            self.lt.bw_bytes_per_s
        } else {
            self.bw.get()
        }
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The pipe was estimated full (Startup is over).
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// True while the long-term (policed) rate is used.
    pub fn lt_use_bw(&self) -> bool {
        self.lt.use_bw
    }

    /// Linux `bbr_init` (also run lazily on the first ACK).
    fn init_at(&mut self, s: &mut CcState, now: Instant) {
        self.initialized = true;
        s.ssthresh_bytes = u64::MAX;
        self.min_rtt_stamp = now;
        self.cycle_stamp = now;
        self.ack_epoch_stamp = now;
        self.lt.last_stamp = now;
        // No RTT yet: high_gain · cwnd over a nominal 1 ms.
        self.init_pacing_rate(s, Duration::from_ms(1));
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`.
    fn init_pacing_rate(&mut self, s: &mut CcState, rtt: Duration) {
        let bw = (s.cwnd_bytes as u128 * NS_PER_S / rtt.as_ns().max(1) as u128) as u64;
        s.pacing_rate = Some(pacing_rate(bw, HIGH_GAIN));
    }

    /// Linux `bbr_bdp`, in segments (rounded up).
    fn bdp_segs(&self, bw: u64, gain: u64, mss: u64) -> u64 {
        let Some(rtt) = self.min_rtt else {
            return INIT_CWND_SEGS;
        };
        let scaled = bw as u128 * rtt.as_ns() as u128 * gain as u128;
        let unit = UNIT as u128 * NS_PER_S * mss as u128;
        scaled.div_ceil(unit) as u64
    }

    /// Linux `bbr_quantization_budget`, segments.
    fn quantization_budget(&self, cwnd_segs: u64) -> u64 {
        let mut cwnd = cwnd_segs + 3 * self.tso_segs_goal;
        cwnd = (cwnd + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// Linux `bbr_inflight`, bytes.
    fn inflight_bytes(&self, bw: u64, gain: u64, mss: u64) -> u64 {
        self.quantization_budget(self.bdp_segs(bw, gain, mss)) * mss
    }

    fn save_cwnd(&mut self, cwnd_bytes: u64) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd_bytes = cwnd_bytes;
        } else {
            self.prior_cwnd_bytes = self.prior_cwnd_bytes.max(cwnd_bytes);
        }
    }

    /// Linux `bbr_update_bw` (round counting, LT sampling, max filter).
    fn update_bw(&mut self, rs: &Sample, now: Instant) {
        self.round_start = false;
        let Some(r) = rs.rate else {
            return;
        };
        if r.interval.as_ns() == 0 {
            return;
        }
        if r.prior_delivered_bytes >= self.next_rtt_delivered_bytes {
            self.next_rtt_delivered_bytes = self.delivered_bytes;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs, now);
        let bw = (r.delivered_bytes as u128 * NS_PER_S / r.interval.as_ns() as u128) as u64;
        if !rs.is_app_limited || bw >= self.bw.get() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    fn reset_lt_interval(&mut self, now: Instant) {
        self.lt.last_stamp = now;
        self.lt.last_delivered_bytes = self.delivered_bytes;
        self.lt.last_lost_bytes = self.lost_bytes;
        self.lt.rtt_cnt = 0;
    }

    fn reset_lt(&mut self, now: Instant) {
        self.lt.bw_bytes_per_s = 0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_interval(now);
    }

    /// Linux `bbr_lt_bw_sampling`.
    fn lt_bw_sampling(&mut self, rs: &Sample, now: Instant) {
        if self.lt.use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt.rtt_cnt += 1;
                if self.lt.rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(now);
                    self.reset_probe_bw_mode(now);
                }
            }
            return;
        }
        // Wait for the first loss: the policer's bucket is empty by then.
        if !self.lt.is_sampling {
            if rs.lost_bytes == 0 {
                return;
            }
            self.reset_lt_interval(now);
            self.lt.is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt(now);
            return;
        }
        if self.round_start {
            self.lt.rtt_cnt += 1;
        }
        if self.lt.rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt.rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(now);
            return;
        }
        // End the interval on a loss: the tokens are then exhausted.
        if rs.lost_bytes == 0 {
            return;
        }
        let lost = self.lost_bytes - self.lt.last_lost_bytes;
        let delivered = self.delivered_bytes - self.lt.last_delivered_bytes;
        if delivered == 0 || lost * UNIT < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = now.saturating_since(self.lt.last_stamp);
        if t < Duration::from_ms(1) {
            return;
        }
        let bw = (delivered as u128 * NS_PER_S / t.as_ns() as u128) as u64;
        self.lt_interval_done(bw, now);
    }

    /// Linux `bbr_lt_bw_interval_done`.
    fn lt_interval_done(&mut self, bw: u64, now: Instant) {
        let prev = self.lt.bw_bytes_per_s;
        if prev > 0 {
            let diff = bw.abs_diff(prev);
            let diff_paced = diff * (100 - PACING_MARGIN_PERCENT) / 100;
            if diff * UNIT <= LT_BW_RATIO * prev || diff_paced <= LT_BW_DIFF_BYTES_PER_S {
                self.lt.bw_bytes_per_s = (bw + prev) / 2;
                self.lt.use_bw = true;
                self.pacing_gain = UNIT;
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw_bytes_per_s = bw;
        self.reset_lt_interval(now);
    }

    /// Linux `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(
        &mut self,
        rs: &Sample,
        acked: u64,
        cwnd: u64,
        mss: u64,
        now: Instant,
    ) {
        if acked == 0 || rs.rate.is_none_or(|r| r.interval.as_ns() == 0) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked_bytes[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch = now.saturating_since(self.ack_epoch_stamp);
        let mut expected =
            (self.bw_bytes_per_s() as u128 * epoch.as_ns() as u128 / NS_PER_S) as u64;
        let reset_bytes = ACK_EPOCH_ACKED_RESET_SEGS * mss;
        if self.ack_epoch_acked_bytes <= expected
            || self.ack_epoch_acked_bytes + acked >= reset_bytes
        {
            self.ack_epoch_acked_bytes = 0;
            self.ack_epoch_stamp = now;
            expected = 0;
        }
        self.ack_epoch_acked_bytes = (self.ack_epoch_acked_bytes + acked).min(reset_bytes - 1);
        let extra = (self.ack_epoch_acked_bytes - expected).min(cwnd);
        let slot = &mut self.extra_acked_bytes[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// Linux `bbr_ack_aggregation_cwnd`, bytes.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let bw = self.bw_bytes_per_s() as u128;
        let max_aggr = (bw * EXTRA_ACKED_MAX.as_ns() as u128 / NS_PER_S) as u64;
        let extra = self.extra_acked_bytes[0].max(self.extra_acked_bytes[1]);
        (extra * EXTRA_ACKED_GAIN / UNIT).min(max_aggr)
    }

    fn advance_cycle_phase(&mut self, now: Instant) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = now;
    }

    /// Linux `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, rs: &Sample, mss: u64, now: Instant) -> bool {
        let is_full_length = self
            .min_rtt
            .is_some_and(|rtt| now.saturating_since(self.cycle_stamp) > rtt);
        if self.pacing_gain == UNIT {
            return is_full_length;
        }
        let inflight = rs.prior_in_flight_bytes;
        let bw = self.bw.get();
        if self.pacing_gain > UNIT {
            return is_full_length
                && (rs.lost_bytes > 0
                    || inflight >= self.inflight_bytes(bw, self.pacing_gain, mss));
        }
        is_full_length || inflight <= self.inflight_bytes(bw, UNIT, mss)
    }

    /// Linux `bbr_reset_probe_bw_mode`: a random phase, never the 3/4 one.
    fn reset_probe_bw_mode(&mut self, now: Instant) {
        self.mode = BbrMode::ProbeBw;
        let draw = ((self.rng.next_u64() as u128 * CYCLE_RAND as u128) >> 64) as usize;
        self.cycle_idx = CYCLE_LEN - 1 - draw;
        self.advance_cycle_phase(now);
    }

    fn reset_mode(&mut self, now: Instant) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// Linux `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, rs: &Sample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh =
            (self.full_bw_bytes_per_s as u128 * FULL_BW_THRESH as u128 / UNIT as u128) as u64;
        if self.bw.get() >= thresh {
            self.full_bw_bytes_per_s = self.bw.get();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// Linux `bbr_check_drain`.
    fn check_drain(&mut self, s: &mut CcState, ack: &AckSample, mss: u64) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            s.ssthresh_bytes = self.inflight_bytes(self.bw.get(), UNIT, mss);
        }
        if self.mode == BbrMode::Drain
            && ack.bytes_in_flight <= self.inflight_bytes(self.bw.get(), UNIT, mss)
        {
            self.reset_probe_bw_mode(ack.now);
        }
    }

    fn check_probe_rtt_done(&mut self, s: &mut CcState, now: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|done| now <= done) {
            return;
        }
        self.min_rtt_stamp = now;
        s.cwnd_bytes = s.cwnd_bytes.max(self.prior_cwnd_bytes);
        self.reset_mode(now);
    }

    /// Linux `bbr_update_min_rtt` (with ProbeRTT entry and exit).
    fn update_min_rtt(&mut self, s: &mut CcState, ack: &AckSample, mss: u64) {
        let now = ack.now;
        let filter_expired = now > self.min_rtt_stamp.saturating_add(MIN_RTT_WIN);
        if let Some(rtt) = ack.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || filter_expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(s.cwnd_bytes);
            self.probe_rtt_done_stamp = None;
            self.probe_rtt_app_limited = Some((self.delivered_bytes, self.delivered_bytes));
        }
        if self.mode == BbrMode::ProbeRtt {
            if let Some((start, _)) = self.probe_rtt_app_limited {
                let end = (self.delivered_bytes + ack.bytes_in_flight).max(1);
                self.probe_rtt_app_limited = Some((start, end));
            }
            if self.probe_rtt_done_stamp.is_none()
                && ack.bytes_in_flight <= CWND_MIN_TARGET_SEGS * mss
            {
                self.probe_rtt_done_stamp = Some(now.saturating_add(PROBE_RTT_MODE));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered_bytes = self.delivered_bytes;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(s, now);
                }
            }
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw if self.lt.use_bw => (UNIT, CWND_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            BbrMode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// Linux `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, s: &mut CcState, ack: &AckSample) {
        if !self.has_seen_rtt {
            if let Some(srtt) = ack.srtt {
                self.has_seen_rtt = true;
                self.init_pacing_rate(s, srtt);
            }
        }
        let rate = pacing_rate(self.bw_bytes_per_s(), self.pacing_gain);
        if self.full_bw_reached || s.pacing_rate.is_none_or(|cur| rate > cur) {
            s.pacing_rate = Some(rate);
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: adjusts `cwnd` for
    /// losses and recovery transitions; true while packet conservation
    /// decides the window.
    fn recover_or_restore(
        &mut self,
        ack: &AckSample,
        rs: &Sample,
        cwnd: &mut u64,
        mss: u64,
    ) -> bool {
        let acked = ack.acked_bytes;
        if rs.lost_bytes > 0 {
            *cwnd = cwnd.saturating_sub(rs.lost_bytes).max(mss);
        }
        let state = if self.loss_end_delivered_bytes.is_some() {
            CaState::Loss
        } else if ack.in_recovery {
            CaState::Recovery
        } else {
            CaState::Open
        };
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            // First round of recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered_bytes = self.delivered_bytes;
            *cwnd = ack.bytes_in_flight + acked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            *cwnd = (*cwnd).max(self.prior_cwnd_bytes);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            *cwnd = (*cwnd).max(ack.bytes_in_flight + acked);
            return true;
        }
        false
    }

    /// Linux `bbr_set_cwnd`.
    fn set_cwnd(&mut self, s: &mut CcState, ack: &AckSample, rs: &Sample, mss: u64) {
        let acked = ack.acked_bytes;
        let mut cwnd = s.cwnd_bytes;
        if acked > 0 && !self.recover_or_restore(ack, rs, &mut cwnd, mss) {
            let bw = self.bw_bytes_per_s();
            let bdp = self.bdp_segs(bw, self.cwnd_gain, mss);
            let aggr = self.ack_aggregation_cwnd() / mss;
            let target = self.quantization_budget(bdp + aggr) * mss;
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || self.delivered_bytes < INIT_CWND_SEGS * mss {
                cwnd += acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET_SEGS * mss);
        }
        if self.mode == BbrMode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET_SEGS * mss);
        }
        s.cwnd_bytes = cwnd;
    }
}

/// `gain · bw · (100 − margin) %` as a [`Rate`] (Linux
/// `bbr_bw_to_pacing_rate`).
fn pacing_rate(bw_bytes_per_s: u64, gain: u64) -> Rate {
    let bytes = bw_bytes_per_s as u128 * gain as u128 * (100 - PACING_MARGIN_PERCENT) as u128
        / (UNIT as u128 * 100);
    Rate::from_bps(u64::try_from(bytes * 8).unwrap_or(u64::MAX))
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn init(&mut self, s: &mut CcState, now: Instant) {
        self.init_at(s, now);
    }

    /// Linux `bbr_min_tso_segs`.
    fn min_tso_segs(&self, s: &CcState) -> u32 {
        bbr_min_tso_segs(s.pacing_rate)
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &AckSample) {
        if !self.initialized {
            self.init_at(s, ack.now);
        }
        let mss = s.mss.max(1) as u64;
        self.tso_segs_goal = bbr_tso_segs_goal(s.pacing_rate, mss);
        match ack.rate {
            Some(r) => self.delivered_bytes = self.delivered_bytes.max(r.delivered_total_bytes),
            None => self.delivered_bytes += ack.acked_bytes,
        }
        let in_probe_rtt_span = |r: &RateSample, span: Option<(u64, u64)>| {
            span.is_some_and(|(a, b)| (a..=b).contains(&r.prior_delivered_bytes))
        };
        let rs = Sample {
            rate: ack.rate,
            is_app_limited: ack.rate.is_some_and(|r| {
                r.is_app_limited || in_probe_rtt_span(&r, self.probe_rtt_app_limited)
            }),
            lost_bytes: ack.rate.map_or(0, |r| r.lost_bytes),
            prior_in_flight_bytes: ack.rate.map_or(ack.bytes_in_flight + ack.acked_bytes, |r| {
                r.prior_in_flight_bytes
            }),
        };
        self.lost_bytes += rs.lost_bytes;
        if ack.in_recovery
            || self
                .loss_end_delivered_bytes
                .is_some_and(|end| self.delivered_bytes >= end)
        {
            self.loss_end_delivered_bytes = None;
        }
        // bbr_update_model
        self.update_bw(&rs, ack.now);
        self.update_ack_aggregation(&rs, ack.acked_bytes, s.cwnd_bytes, mss, ack.now);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(&rs, mss, ack.now) {
            self.advance_cycle_phase(ack.now);
        }
        self.check_full_bw_reached(&rs);
        self.check_drain(s, ack, mss);
        self.update_min_rtt(s, ack, mss);
        self.update_gains();
        // bbr_main
        self.set_pacing_rate(s, ack);
        // bbr_tso_segs_goal reads sk_pacing_rate when bbr_set_cwnd runs.
        self.tso_segs_goal = bbr_tso_segs_goal(s.pacing_rate, mss);
        self.set_cwnd(s, ack, &rs, mss);
    }

    /// Entering recovery: remember the cwnd to restore; ssthresh is BBR's
    /// own (Linux `bbr_ssthresh`).
    fn ssthresh(&mut self, s: &CcState, _bytes_in_flight: u64, _now: Instant) -> u64 {
        self.save_cwnd(s.cwnd_bytes);
        s.ssthresh_bytes
    }

    /// BBR keeps its window on leaving recovery; the next ACK restores the
    /// saved one.
    fn on_recovery_exit(&mut self, _s: &mut CcState, _now: Instant) {}

    /// Linux `tcp_enter_loss` + `bbr_set_state(TCP_CA_Loss)`.
    fn on_rto(&mut self, s: &mut CcState, bytes_in_flight: u64, now: Instant) {
        s.ssthresh_bytes = self.ssthresh(s, bytes_in_flight, now);
        s.cwnd_bytes = s.mss as u64;
        self.prev_ca_state = CaState::Loss;
        self.loss_end_delivered_bytes = Some(self.delivered_bytes + bytes_in_flight);
        self.full_bw_bytes_per_s = 0;
        self.round_start = true;
        let rs = Sample {
            rate: None,
            is_app_limited: false,
            lost_bytes: 1,
            prior_in_flight_bytes: bytes_in_flight,
        };
        self.lt_bw_sampling(&rs, now);
    }

    /// Linux `bbr_undo_cwnd`: the loss was spurious, so the bandwidth
    /// plateau and the policer sampling start over; the window is kept
    /// (the next ACK restores the saved one on leaving Loss).
    fn undo(&mut self, _s: &mut CcState, _prior_cwnd: u64, _prior_ssthresh: u64, now: Instant) {
        self.loss_end_delivered_bytes = None;
        self.full_bw_bytes_per_s = 0;
        self.full_bw_cnt = 0;
        self.reset_lt(now);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::{ack, state, MSS};

    const RTT: Duration = Duration::from_ms(50);

    /// A synthetic path: ACK clock, delivered bytes, and what each round's
    /// rate samples report.
    struct Path {
        now_ns: u64,
        delivered: u64,
        in_recovery: bool,
    }

    impl Path {
        fn new() -> Self {
            Path {
                now_ns: 0,
                delivered: 0,
                in_recovery: false,
            }
        }

        /// One packet-timed round of `acks` one-segment ACKs spread over
        /// RTT, each rate sample reporting `bw` bytes/s; `lost` bytes are
        /// reported lost on the first ACK.
        #[allow(clippy::too_many_arguments)]
        fn round(
            &mut self,
            b: &mut Bbr,
            s: &mut CcState,
            bw: u64,
            acks: u64,
            inflight: u64,
            app_limited: bool,
            lost: u64,
        ) {
            let prior = self.delivered;
            for i in 0..acks {
                self.now_ns += RTT.as_ns() / acks;
                self.delivered += MSS;
                let mut a = ack(self.now_ns, MSS, Some(RTT));
                a.bytes_in_flight = inflight;
                a.in_recovery = self.in_recovery;
                a.rate = Some(RateSample {
                    delivered_bytes: bw * RTT.as_ns() / 1_000_000_000,
                    interval: RTT,
                    is_app_limited: app_limited,
                    prior_delivered_bytes: prior,
                    delivered_total_bytes: self.delivered,
                    lost_bytes: if i == 0 { lost } else { 0 },
                    prior_in_flight_bytes: inflight,
                });
                b.on_ack(s, &a);
            }
        }
    }

    fn started() -> (Bbr, CcState) {
        let mut b = Bbr::new(1);
        let mut s = state(10, u64::MAX / MSS);
        b.init(&mut s, Instant::ZERO);
        (b, s)
    }

    /// Startup with the rate doubling per round up to 8 MB/s, then flat,
    /// until the pipe is found full (with a deep queue: stays in Drain).
    fn through_startup(p: &mut Path, b: &mut Bbr, s: &mut CcState) -> u32 {
        let mut rounds = 0;
        let mut bw = 1_000_000;
        while b.mode() == BbrMode::Startup {
            p.round(b, s, bw, 10, 1000 * MSS, false, 0);
            bw = (bw * 2).min(8_000_000);
            rounds += 1;
            assert!(rounds < 20);
        }
        rounds
    }

    fn into_probe_bw(p: &mut Path, b: &mut Bbr, s: &mut CcState) {
        through_startup(p, b, s);
        p.round(b, s, 8_000_000, 10, 10 * MSS, false, 0);
        assert_eq!(b.mode(), BbrMode::ProbeBw);
    }

    #[test]
    fn windowed_max_keeps_the_best_for_the_window_then_forgets_it() {
        let mut m = WindowedMax::default();
        m.reset(0, 0);
        assert_eq!(m.update(10, 1, 100), 100);
        for t in 2..=11 {
            assert_eq!(m.update(10, t, 50), 100, "round {t}");
        }
        // Round 12 is more than 10 rounds after the best: 50 remains.
        assert_eq!(m.update(10, 12, 50), 50);
        assert_eq!(m.update(10, 13, 70), 70);
        assert_eq!(m.update(10, 14, 60), 70);
    }

    #[test]
    fn startup_exits_after_three_rounds_without_25_percent_growth() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        assert_eq!(b.pacing_gain(), HIGH_GAIN);
        let rounds = through_startup(&mut p, &mut b, &mut s);
        // 1, 2, 4, 8 MB/s: growth; then 3 flat rounds.
        assert_eq!(rounds, 7);
        assert!(b.full_bw_reached());
        assert_eq!(b.mode(), BbrMode::Drain, "inflight is far above BDP");
        assert_eq!(b.pacing_gain(), DRAIN_GAIN);
        // ssthresh = 1·BDP + budget: 8 MB/s · 50 ms = 400 segments, + 3
        // TSO bursts at the Startup pacing rate (2.885 · 8 MB/s · 99 % >> 10
        // = 22 316 B = 22 segments of 1000 B, `bbr_tso_segs_goal`) → 466.
        assert_eq!(s.ssthresh_bytes, 466 * MSS);
        // Once inflight falls to the BDP the queue is drained.
        p.round(&mut b, &mut s, 8_000_000, 10, 300 * MSS, false, 0);
        assert_eq!(b.mode(), BbrMode::ProbeBw);
    }

    #[test]
    fn app_limited_samples_do_not_fill_the_pipe() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        for _ in 0..10 {
            p.round(&mut b, &mut s, 1_000_000, 10, 1000 * MSS, true, 0);
        }
        assert_eq!(b.mode(), BbrMode::Startup);
        assert_eq!(b.bw_bytes_per_s(), 1_000_000, "but they may raise the max");
    }

    #[test]
    fn pacing_rate_is_bandwidth_times_gain_less_one_percent() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        for _ in 0..12 {
            p.round(&mut b, &mut s, 8_000_000, 10, 1000 * MSS, false, 0);
            let want = 8_000_000u64 * b.pacing_gain() / UNIT * 99 / 100 * 8;
            let got = s.pacing_rate.expect("BBR paces").bps();
            assert!(
                got.abs_diff(want) <= 16,
                "gain {} {got} vs {want}",
                b.pacing_gain()
            );
        }
        // Startup's rate: 2.885 · bw.
        let (mut b, mut s) = started();
        let mut p = Path::new();
        p.round(&mut b, &mut s, 2_000_000, 10, 1000 * MSS, false, 0);
        let got = s.pacing_rate.unwrap().bps() as f64;
        let want = 2_000_000.0 * 739.0 / 256.0 * 0.99 * 8.0;
        assert!((got - want).abs() / want < 1e-3, "{got} vs {want}");
    }

    #[test]
    fn probe_bw_cycles_its_gains_in_order() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        let mut seen = vec![b.cycle_idx];
        for _ in 0..40 {
            // A deep inflight: 5/4 reaches its target, phases last an RTT.
            p.round(&mut b, &mut s, 8_000_000, 10, 2000 * MSS, false, 0);
            if *seen.last().unwrap() != b.cycle_idx {
                seen.push(b.cycle_idx);
            }
            assert_eq!(b.pacing_gain(), PACING_GAIN[b.cycle_idx]);
        }
        assert!(seen.len() >= 16, "{seen:?}");
        for w in seen.windows(2) {
            assert_eq!(w[1], (w[0] + 1) % CYCLE_LEN, "{seen:?}");
        }
        assert_eq!(PACING_GAIN[0], 320);
        assert_eq!(PACING_GAIN[1], 192);
    }

    #[test]
    fn the_cycle_starts_at_a_seeded_random_phase_never_the_drain_phase() {
        let mut starts = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let mut b = Bbr::new(seed);
            b.reset_probe_bw_mode(Instant::ZERO);
            assert_ne!(b.cycle_idx, 1, "seed {seed}");
            let mut again = Bbr::new(seed);
            again.reset_probe_bw_mode(Instant::ZERO);
            assert_eq!(b.cycle_idx, again.cycle_idx);
            starts.insert(b.cycle_idx);
        }
        assert_eq!(starts.len(), 7, "{starts:?}");
    }

    #[test]
    fn steady_cwnd_is_twice_the_bdp_plus_the_quantum() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        // cwnd grows by the 10 segments acked per round toward its target:
        // 2 · 400 segments + 3 TSO bursts of `bbr_tso_segs_goal` at the
        // phase's pacing rate (8 MB/s · gain · 99 % >> 10 over 1000 B: 9
        // segments at 5/4, 5 at 3/4, 7 at 1), rounded up to even (+2 in
        // phase 0): 830, 816, 822.
        for _ in 0..100 {
            p.round(&mut b, &mut s, 8_000_000, 10, 900 * MSS, false, 0);
            assert!(s.cwnd_bytes <= 830 * MSS, "{}", s.cwnd_bytes);
        }
        while b.cycle_idx != 2 {
            p.round(&mut b, &mut s, 8_000_000, 10, 900 * MSS, false, 0);
        }
        assert_eq!(s.cwnd_bytes, 822 * MSS);
    }

    #[test]
    fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        let cwnd_before = s.cwnd_bytes;
        let mut rounds = 0;
        while b.mode() != BbrMode::ProbeRtt {
            p.round(&mut b, &mut s, 8_000_000, 10, 800 * MSS, false, 0);
            rounds += 1;
            assert!(rounds < 250);
        }
        let t = Duration::from_ns(p.now_ns);
        assert!(
            t > MIN_RTT_WIN && t < MIN_RTT_WIN + Duration::from_ms(100),
            "{t}"
        );
        assert_eq!(s.cwnd_bytes, 4 * MSS);
        assert_eq!(b.pacing_gain(), UNIT);
        // Inflight drops to 4 segments; stay ≥ 200 ms and one round.
        for _ in 0..4 {
            p.round(&mut b, &mut s, 8_000_000, 4, 4 * MSS, false, 0);
        }
        assert_eq!(b.mode(), BbrMode::ProbeRtt, "only 200 ms");
        for _ in 0..2 {
            p.round(&mut b, &mut s, 8_000_000, 4, 4 * MSS, false, 0);
        }
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        assert!(s.cwnd_bytes >= cwnd_before, "saved cwnd restored");
        // The low-rate ProbeRTT samples did not drag the estimate down.
        assert_eq!(b.bw_bytes_per_s(), 8_000_000);
    }

    #[test]
    fn a_lower_rtt_sample_postpones_probe_rtt() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        while p.now_ns < 9_000_000_000 {
            p.round(&mut b, &mut s, 8_000_000, 10, 800 * MSS, false, 0);
        }
        let mut a = ack(p.now_ns, MSS, Some(Duration::from_ms(49)));
        a.bytes_in_flight = 800 * MSS;
        b.on_ack(&mut s, &a);
        while p.now_ns < 12_000_000_000 {
            p.round(&mut b, &mut s, 8_000_000, 10, 800 * MSS, false, 0);
            assert_ne!(b.mode(), BbrMode::ProbeRtt);
        }
    }

    #[test]
    fn recovery_conserves_packets_then_restores_the_window() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        for _ in 0..3 {
            p.round(&mut b, &mut s, 8_000_000, 10, 800 * MSS, false, 0);
        }
        let before = s.cwnd_bytes;
        // The sender detects a loss: ssthresh() saves cwnd.
        let ss = b.ssthresh(&s, 800 * MSS, Instant::from_ns(p.now_ns));
        assert_eq!(ss, s.ssthresh_bytes, "BBR keeps its ssthresh");
        p.in_recovery = true;
        p.round(&mut b, &mut s, 8_000_000, 1, 100 * MSS, false, 2 * MSS);
        assert_eq!(s.cwnd_bytes, 101 * MSS, "inflight + acked");
        // A later ACK of the same round (its packet was sent before the
        // recovery began): conservation holds, cwnd ≥ inflight + acked.
        p.delivered += MSS;
        let mut a = ack(p.now_ns, MSS, Some(RTT));
        (a.bytes_in_flight, a.in_recovery) = (90 * MSS, true);
        a.rate = Some(RateSample {
            delivered_bytes: 400_000,
            interval: RTT,
            is_app_limited: false,
            prior_delivered_bytes: p.delivered - 20 * MSS,
            delivered_total_bytes: p.delivered,
            lost_bytes: 0,
            prior_in_flight_bytes: 91 * MSS,
        });
        b.on_ack(&mut s, &a);
        assert_eq!(s.cwnd_bytes, 101 * MSS, "conservation holds for a round");
        p.in_recovery = false;
        p.round(&mut b, &mut s, 8_000_000, 1, 100 * MSS, false, 0);
        assert_eq!(s.cwnd_bytes, before + MSS, "restored, then +acked");
    }

    #[test]
    fn rto_cuts_to_one_segment_then_grows_back() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        let saved = s.cwnd_bytes;
        b.on_rto(&mut s, 30 * MSS, Instant::from_ns(p.now_ns));
        assert_eq!(s.cwnd_bytes, MSS);
        // The sender reports in_recovery = false in the Loss state.
        p.round(&mut b, &mut s, 8_000_000, 1, 0, false, 0);
        assert_eq!(s.cwnd_bytes, 4 * MSS, "minimum window");
        p.round(&mut b, &mut s, 8_000_000, 10, 0, false, 0);
        assert_eq!(s.cwnd_bytes, 14 * MSS, "+acked per ACK, no conservation");
        // 30 segments outstanding at the RTO: the 30th delivered ends Loss
        // and restores the saved window (then +acked, as every ACK).
        p.round(&mut b, &mut s, 8_000_000, 18, 0, false, 0);
        assert_eq!(s.cwnd_bytes, 32 * MSS);
        p.round(&mut b, &mut s, 8_000_000, 1, 0, false, 0);
        assert_eq!(s.cwnd_bytes, saved + MSS);
    }

    #[test]
    fn consistent_lossy_intervals_switch_to_the_policed_rate() {
        let (mut b, mut s) = started();
        let mut p = Path::new();
        into_probe_bw(&mut p, &mut b, &mut s);
        // Rate samples still claim 8 MB/s, but 10 segments per 50 ms get
        // through (200 kB/s) while 3 are lost each round (≈ 23 %).
        for _ in 0..9 {
            p.round(&mut b, &mut s, 8_000_000, 10, 800 * MSS, false, 3 * MSS);
        }
        assert!(b.lt_use_bw());
        assert!(
            b.bw_bytes_per_s().abs_diff(200_000) < 10_000,
            "{}",
            b.bw_bytes_per_s()
        );
        assert_eq!(b.pacing_gain(), UNIT);
        // After 48 rounds BBR stops trusting it and probes again.
        for _ in 0..49 {
            p.round(&mut b, &mut s, 8_000_000, 10, 800 * MSS, false, 0);
        }
        assert!(!b.lt_use_bw());
    }

    #[test]
    fn pacing_starts_from_the_initial_window_and_the_first_rtt() {
        let (mut b, mut s) = started();
        // 2.885 · 10 000 B / 1 ms nominal.
        let nominal = s.pacing_rate.unwrap().bps();
        assert!(nominal.abs_diff(10_000_000 * 739 / 256 * 99 / 100 * 8) < 1_000);
        let mut a = ack(1_000_000, MSS, Some(RTT));
        a.srtt = Some(RTT);
        b.on_ack(&mut s, &a);
        // Re-initialised from SRTT = 50 ms, with the cwnd before this ACK.
        let got = s.pacing_rate.unwrap().bps();
        assert!(
            got.abs_diff(10_000 * 20 * 739 / 256 * 99 / 100 * 8) < 1_000,
            "{got}"
        );
    }
}
