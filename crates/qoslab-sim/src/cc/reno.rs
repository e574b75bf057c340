//! Reno window growth and reduction, RFC 5681 §3.1 (also NewReno's: RFC
//! 6582 changes only the recovery, which the sender owns).
//!
//! - Slow start: like Linux (`tcp_slow_start`, byte counting per RFC 3465)
//!   cwnd grows by the bytes acked, capped at ssthresh, and the remainder
//!   carries into congestion avoidance. (RFC 5681's conservative rule,
//!   min(acked, SMSS) per ACK, differs only with stretch ACKs.)
//! - Congestion avoidance: one SMSS per cwnd bytes acknowledged (byte
//!   counting, RFC 5681 §3.1 "alternatively ... RFC 3465"; Linux
//!   `tcp_cong_avoid_ai`).
//! - Loss: ssthresh = max(FlightSize / 2, 2·SMSS) (RFC 5681 eq. 4); on a
//!   Linux stack ([`CongestionControl::set_linux`]) `tcp_reno_ssthresh`
//!   (net/ipv4/tcp_cong.c): `max(snd_cwnd >> 1, 2)` in whole segments. The
//!   two differ when less than cwnd is in flight at the loss — after a
//!   window-limited phase, or with a lost segment's gap already out of the
//!   flight — and in the rounding (5 segments → 2, not 2.5).
//! - Undo of a spurious reduction: the trait's default, which is Linux
//!   `tcp_reno_undo_cwnd`.

use super::{AckSample, CcState, CongestionControl};
use qoslab_core::Instant;

#[derive(Clone, Debug, Default)]
pub struct Reno {
    /// Bytes acknowledged in congestion avoidance not yet turned into cwnd.
    avoid_acked_bytes: u64,
    /// Linux's ssthresh rule (`tcp_reno_ssthresh`) instead of RFC 5681's.
    linux: bool,
}

impl Reno {
    pub fn new() -> Self {
        Reno::default()
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &AckSample) {
        let acked = s.slow_start(ack);
        if acked == 0 {
            return;
        }
        self.avoid_acked_bytes += acked;
        if self.avoid_acked_bytes >= s.cwnd_bytes {
            self.avoid_acked_bytes -= s.cwnd_bytes;
            s.cwnd_bytes += s.mss as u64;
        }
    }

    fn set_linux(&mut self) {
        self.linux = true;
    }

    fn ssthresh(&mut self, s: &CcState, bytes_in_flight: u64, _now: Instant) -> u64 {
        self.avoid_acked_bytes = 0;
        let mss = s.mss.max(1) as u64;
        if self.linux {
            return linux_reno_ssthresh_segs(s.cwnd_bytes / mss) * mss;
        }
        (bytes_in_flight / 2).max(2 * mss)
    }
}

/// Linux `tcp_reno_ssthresh` (net/ipv4/tcp_cong.c): half the window in
/// packets, rounded down, at least 2: `max(tcp_snd_cwnd(tp) >> 1U, 2U)`.
fn linux_reno_ssthresh_segs(cwnd_segs: u64) -> u64 {
    (cwnd_segs >> 1).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u64) -> AckSample {
        AckSample {
            now: Instant::ZERO,
            acked_bytes: acked,
            rtt: None,
            ca_rtt: None,
            sk_pacing_rate: None,
            paced: false,
            min_rtt: None,
            srtt: None,
            bytes_in_flight: 0,
            in_recovery: false,
            cwnd_limited: true,
            rate: None,
        }
    }

    fn state(cwnd: u64, ssthresh: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd,
            ssthresh_bytes: ssthresh,
            mss: 1000,
            pacing_rate: None,
        }
    }

    #[test]
    fn slow_start_grows_by_bytes_acked_up_to_ssthresh_then_avoids() {
        let mut r = Reno::new();
        let mut s = state(10_000, 12_000);
        r.on_ack(&mut s, &ack(1000));
        assert_eq!(s.cwnd_bytes, 11_000);
        // 3000 acked: 1000 fills slow start to ssthresh, 2000 carried over.
        r.on_ack(&mut s, &ack(3000));
        assert_eq!(s.cwnd_bytes, 12_000);
        // Congestion avoidance: one MSS per cwnd (12000) bytes acked.
        for _ in 0..9 {
            r.on_ack(&mut s, &ack(1000));
        }
        assert_eq!(
            s.cwnd_bytes, 12_000,
            "11000 bytes in avoidance: not yet a window"
        );
        r.on_ack(&mut s, &ack(1000));
        assert_eq!(s.cwnd_bytes, 13_000);
    }

    #[test]
    fn no_growth_in_recovery_or_when_not_window_limited() {
        let mut r = Reno::new();
        let mut s = state(10_000, u64::MAX);
        let mut a = ack(5000);
        a.in_recovery = true;
        r.on_ack(&mut s, &a);
        a.in_recovery = false;
        a.cwnd_limited = false;
        r.on_ack(&mut s, &a);
        assert_eq!(s.cwnd_bytes, 10_000);
    }

    /// Linux `tcp_reno_ssthresh` halves cwnd in whole segments, whatever
    /// is in flight: 20 segments of window with 6 in flight → 10 (RFC 5681's
    /// FlightSize/2 would give 3), 5 → 2, never below 2.
    #[test]
    fn linux_halves_the_window_not_the_flight() {
        let mut r = Reno::new();
        r.set_linux();
        assert_eq!(
            r.ssthresh(&state(20_000, u64::MAX), 6_000, Instant::ZERO),
            10_000
        );
        assert_eq!(
            r.ssthresh(&state(5_000, u64::MAX), 5_000, Instant::ZERO),
            2_000
        );
        assert_eq!(
            r.ssthresh(&state(5_500, u64::MAX), 5_500, Instant::ZERO),
            2_000
        );
        assert_eq!(
            r.ssthresh(&state(2_000, u64::MAX), 2_000, Instant::ZERO),
            2_000
        );
        let mut rfc = Reno::new();
        assert_eq!(
            rfc.ssthresh(&state(20_000, u64::MAX), 6_000, Instant::ZERO),
            3_000
        );
    }

    #[test]
    fn loss_halves_flight_but_keeps_two_segments() {
        let mut r = Reno::new();
        let s = state(20_000, u64::MAX);
        assert_eq!(r.ssthresh(&s, 20_000, Instant::ZERO), 10_000);
        assert_eq!(r.ssthresh(&s, 1_000, Instant::ZERO), 2_000);
        let mut s2 = s;
        r.on_rto(&mut s2, 20_000, Instant::ZERO);
        assert_eq!((s2.cwnd_bytes, s2.ssthresh_bytes), (1000, 10_000));
    }
}
