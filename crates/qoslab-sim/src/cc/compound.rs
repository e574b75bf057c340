//! Compound TCP (CTCP), the congestion control of the `windows10` profile:
//! draft-sridharan-tcpm-ctcp-02 (Sridharan, Tan, Bansal, Thaler, 2008) §3,
//! and K. Tan, J. Song, Q. Zhang, M. Sridharan, "A Compound TCP Approach
//! for High-speed and Long Distance Networks", IEEE INFOCOM 2006.
//!
//! CTCP adds a delay-based window `dwnd` to the Reno window `cwnd`; the
//! sender sends up to `win = min(cwnd + dwnd, awnd)`. The sender here sees
//! one window, so [`CcState::cwnd_bytes`] carries `cwnd + dwnd` and this
//! module remembers `dwnd` (the loss-based part is `cwnd_bytes − dwnd`,
//! whatever the sender's recovery did to the total meanwhile).
//!
//! - Loss-based part: Reno. Slow start as Linux `tcp_slow_start`; in
//!   congestion avoidance one segment per `win` bytes acknowledged (the
//!   draft's `cwnd += 1/win` per ACK).
//! - Delay-based part, once per round trip in congestion avoidance
//!   (draft §3, Tan et al. eq. 6): with `baseRTT` the minimum RTT seen and
//!   `RTT` the round's RTT,
//!   `Expected = win/baseRTT`, `Actual = win/RTT`,
//!   `diff = (Expected − Actual)·baseRTT` packets, and
//!   - `diff < γ`:  `dwnd += (α·win^k − 1)⁺`
//!   - `diff ≥ γ`:  `dwnd = (dwnd − ζ·diff)⁺`
//!   - loss:        `dwnd = (win·(1 − β) − cwnd/2)⁺`, and `cwnd /= 2`,
//!
//!   so a loss halves `win` (β = 1/2). α = 1/8, β = 1/2, k = 3/4, ζ = 1,
//!   γ = 30 packets (the paper's values; `win^k` is computed as
//!   `√win·√√win`, exact IEEE operations, so runs repeat on every platform).
//!   dwnd is zero in slow start, is not updated during loss recovery and
//!   is reset to zero by a retransmission timeout (cwnd = 1 segment,
//!   ssthresh = win/2).
//! - The round's RTT is the minimum RTT sample of that round, and a round
//!   with fewer than 3 samples leaves dwnd alone — the filter Linux's TCP
//!   Vegas uses against delayed-ACK inflation (`tcp_vegas.c`), which the
//!   Vegas-based Linux port of CTCP (Castellani, Hemminger, Andrew) keeps.
//!   Rounds are counted from the ACK stream ([`super::AckRounds`]).
//!
//! Left out: the draft's §4 γ auto-tuning ("TUBE"), Windows' low-window
//! threshold below which CTCP is off, and any receive-window coupling
//! beyond "do not grow an unused window" (`cwnd_limited`).

use super::{AckRounds, AckSample, CcState, CongestionControl, Reno};
use qoslab_core::{Duration, Instant};

/// α: scale of the delay-based increase (draft §3, Tan et al.: 1/8).
const ALPHA: f64 = 0.125;
/// γ: queued packets tolerated before dwnd backs off (packets).
const GAMMA_PKTS: f64 = 30.0;
/// ζ: how many packets of dwnd go per packet of `diff`.
const ZETA: f64 = 1.0;
/// Fewer RTT samples than this in a round: dwnd is not updated.
const MIN_ROUND_SAMPLES: u32 = 3;

/// `x^(3/4)` from two square roots (IEEE-exact, portable).
fn pow_three_quarters(x: f64) -> f64 {
    let r = x.sqrt();
    r * r.sqrt()
}

/// Compound TCP congestion control (one instance per connection).
#[derive(Clone, Debug, Default)]
pub struct Compound {
    /// The delay-based window (bytes), part of `CcState::cwnd_bytes`.
    dwnd_bytes: u64,
    /// The loss-based part's growth (Reno on the whole window).
    reno: Reno,
    /// Minimum RTT seen on the connection.
    base_rtt: Option<Duration>,
    rounds: AckRounds,
    /// Minimum RTT sample of the current round.
    round_rtt: Option<Duration>,
    round_samples: u32,
}

impl Compound {
    pub fn new() -> Self {
        Compound::default()
    }

    /// The delay-based window in bytes.
    pub fn dwnd_bytes(&self) -> u64 {
        self.dwnd_bytes
    }

    /// Once per round: the delay-based control law (draft §3).
    fn update_dwnd(&mut self, s: &mut CcState, ack: &AckSample) {
        let (Some(base), Some(rtt)) = (self.base_rtt, self.round_rtt) else {
            return;
        };
        if ack.in_recovery || s.in_slow_start() || self.round_samples < MIN_ROUND_SAMPLES {
            return;
        }
        let mss = s.mss.max(1) as f64;
        let win_pkts = s.cwnd_bytes as f64 / mss;
        let rtt_ns = rtt.as_ns().max(1) as f64;
        // (win/baseRTT − win/RTT)·baseRTT = win·(RTT − baseRTT)/RTT
        let diff_pkts = win_pkts * (rtt_ns - base.as_ns() as f64) / rtt_ns;
        if diff_pkts < GAMMA_PKTS {
            let inc_pkts = ALPHA * pow_three_quarters(win_pkts) - 1.0;
            if inc_pkts > 0.0 && ack.cwnd_limited {
                let inc = (inc_pkts * mss) as u64;
                self.dwnd_bytes += inc;
                s.cwnd_bytes += inc;
            }
        } else {
            let dec = ((ZETA * diff_pkts * mss) as u64).min(self.dwnd_bytes);
            self.dwnd_bytes -= dec;
            s.cwnd_bytes = s.cwnd_bytes.saturating_sub(dec).max(s.mss as u64);
        }
    }
}

impl CongestionControl for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &AckSample) {
        if self.rounds.on_ack(ack.acked_bytes, ack.bytes_in_flight) {
            self.update_dwnd(s, ack);
            self.round_rtt = None;
            self.round_samples = 0;
        }
        if let Some(rtt) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
            self.round_rtt = Some(self.round_rtt.map_or(rtt, |r| r.min(rtt)));
            self.round_samples += 1;
        }
        // The loss-based part: Reno, one segment per window (cwnd + dwnd)
        // acknowledged.
        self.reno.on_ack(s, ack);
    }

    /// win → win/2: the loss-based part halves and
    /// `dwnd = (win·(1 − β) − cwnd/2)⁺`.
    fn ssthresh(&mut self, s: &CcState, bytes_in_flight: u64, now: Instant) -> u64 {
        let win = s.cwnd_bytes;
        let loss_based = win.saturating_sub(self.dwnd_bytes);
        self.dwnd_bytes = (win / 2).saturating_sub(loss_based / 2);
        // Reno's own halving is not used; this clears its carried credit.
        self.reno.ssthresh(s, bytes_in_flight, now);
        (loss_based / 2 + self.dwnd_bytes).max(2 * s.mss as u64)
    }

    fn on_rto(&mut self, s: &mut CcState, bytes_in_flight: u64, now: Instant) {
        s.ssthresh_bytes = self.ssthresh(s, bytes_in_flight, now);
        s.cwnd_bytes = s.mss as u64;
        self.dwnd_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Reno;

    use crate::cc::testkit::{ack, state, MSS};

    /// One round trip of single-segment ACKs, every one with RTT `rtt`.
    fn round(cc: &mut dyn CongestionControl, s: &mut CcState, rtt: Duration) {
        let n = (s.cwnd_bytes / MSS).max(1);
        for _ in 0..n {
            let mut a = ack(0, MSS, Some(rtt));
            a.bytes_in_flight = s.cwnd_bytes.saturating_sub(MSS);
            cc.on_ack(s, &a);
        }
    }

    #[test]
    fn without_queueing_delay_the_window_outgrows_reno() {
        let (mut ctcp, mut reno) = (Compound::new(), Reno::new());
        let (mut sc, mut sr) = (state(100, 100), state(100, 100));
        let rtt = Duration::from_ms(50);
        for _ in 0..30 {
            round(&mut ctcp, &mut sc, rtt);
            round(&mut reno, &mut sr, rtt);
        }
        let (wc, wr) = (sc.cwnd_bytes / MSS, sr.cwnd_bytes / MSS);
        assert!((128..=131).contains(&wr), "Reno: about +1 per round, {wr}");
        // α·win^¾ − 1 ≈ 3 packets per round at win = 100, more as it grows.
        assert!(wc > wr + 60, "CTCP {wc} vs Reno {wr}");
        assert!(ctcp.dwnd_bytes() > 60 * MSS);
    }

    #[test]
    fn rising_delay_drains_dwnd_to_zero() {
        let mut c = Compound::new();
        let mut s = state(100, 100);
        for _ in 0..20 {
            round(&mut c, &mut s, Duration::from_ms(50));
        }
        assert!(c.dwnd_bytes() > 0);
        let loss_based = s.cwnd_bytes - c.dwnd_bytes();
        // RTT doubles: diff = win/2 > γ, dwnd backs off by diff per round.
        for _ in 0..5 {
            round(&mut c, &mut s, Duration::from_ms(100));
        }
        assert_eq!(c.dwnd_bytes(), 0);
        let win = s.cwnd_bytes;
        assert!(
            win >= loss_based && win <= loss_based + 6 * MSS,
            "only Reno left"
        );
    }

    #[test]
    fn small_queueing_delay_below_gamma_keeps_growing() {
        let mut c = Compound::new();
        let mut s = state(100, 100);
        round(&mut c, &mut s, Duration::from_ms(50));
        // diff = win·(51−50)/51 ≈ 2 packets < γ = 30.
        for _ in 0..5 {
            round(&mut c, &mut s, Duration::from_ms(51));
        }
        assert!(c.dwnd_bytes() > 10 * MSS);
    }

    #[test]
    fn loss_halves_the_whole_window() {
        let mut c = Compound::new();
        let mut s = state(100, 100);
        for _ in 0..20 {
            round(&mut c, &mut s, Duration::from_ms(50));
        }
        let (win, dwnd) = (s.cwnd_bytes, c.dwnd_bytes());
        s.ssthresh_bytes = c.ssthresh(&s, win, Instant::ZERO);
        c.on_recovery_exit(&mut s, Instant::ZERO);
        assert!(
            s.cwnd_bytes.abs_diff(win / 2) <= 1,
            "{win} → {}",
            s.cwnd_bytes
        );
        assert!(c.dwnd_bytes().abs_diff(dwnd / 2) <= 1);
        assert!(!s.in_slow_start());
    }

    #[test]
    fn slow_start_and_recovery_leave_dwnd_alone() {
        let mut c = Compound::new();
        let mut s = state(10, 1000);
        for _ in 0..4 {
            round(&mut c, &mut s, Duration::from_ms(50));
        }
        assert_eq!(s.cwnd_bytes, 160 * MSS, "plain doubling");
        assert_eq!(c.dwnd_bytes(), 0);
    }

    #[test]
    fn rto_clears_dwnd() {
        let mut c = Compound::new();
        let mut s = state(100, 100);
        for _ in 0..10 {
            round(&mut c, &mut s, Duration::from_ms(50));
        }
        let win = s.cwnd_bytes;
        c.on_rto(&mut s, win, Instant::ZERO);
        assert_eq!((s.cwnd_bytes, c.dwnd_bytes()), (MSS, 0));
        assert!(s.ssthresh_bytes.abs_diff(win / 2) <= 1);
    }
}
