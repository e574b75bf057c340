//! Rate-halving: the window reduction of Linux fast recovery before PRR
//! ([`TcpConfig::rate_halving`], the `linux-2.6` profile), as Linux 2.6.32
//! net/ipv4/tcp_input.c runs it. PRR (RFC 6937) replaced it in Linux 3.2
//! (commit a262f0cdf1f2 "tcp: Proportional Rate Reduction for TCP",
//! N. Dukkipati, 2011); RFC 6937 §1–2 describe what it fixed.
//!
//! The rules, each one function here:
//! - `tcp_fastretrans_alert`, entering Recovery: ssthresh comes from the
//!   congestion control, but cwnd is left where it was and the ACK counter
//!   `snd_cwnd_cnt` restarts ([`RateHalving::start`]);
//! - `tcp_cwnd_down`, on every ACK processed in Recovery (the one that
//!   entered it too) that made progress (`FLAG_ANY_PROGRESS`: cumulatively
//!   acked or newly SACKed data) or carried a D-SACK: every second such ACK
//!   takes one segment off cwnd while cwnd is above `tcp_cwnd_min`
//!   (ssthresh; ssthresh / 2 for Reno's `tcp_reno_min_cwnd`), and every
//!   such ACK caps cwnd at the packets in flight + 1
//!   ([`RateHalving::cwnd_down`]). So the sender sends one segment per two
//!   delivered until cwnd meets ssthresh — and after a burst of losses,
//!   when the flight collapses, cwnd collapses with it and never grows back
//!   within the recovery (RFC 6937 §1: rate-halving "can result in an
//!   unnecessarily small cwnd after large losses"; PRR's slow-start bound
//!   is the fix);
//! - `tcp_complete_cwr`, when the recovery point is acknowledged: cwnd =
//!   min(cwnd, ssthresh) ([`complete_cwr`]);
//! - `tcp_moderate_cwnd` ("CWND moderation, preventing bursts due to too big
//!   ACKs in dubious situations"): cwnd = min(cwnd, in flight +
//!   `tcp_max_burst` = `tp->reordering` = 3 segments) on every dubious ACK
//!   (a duplicate or SACKing ACK, or any ACK outside the Open state) that
//!   does not start a recovery (`tcp_try_to_open`), on every ACK of the Loss
//!   state that does not undo it, and after an undo (`tcp_undo_cwr`)
//!   ([`moderate_cwnd`]).
//!
//! Counted in bytes of full segments (the sender sends nothing else in
//! bulk), where Linux counts packets.
//!
//! [`TcpConfig::rate_halving`]: crate::config::TcpConfig::rate_halving

/// Linux `tcp_max_burst(tp)` in 2.6.32 (include/net/tcp.h): `tp->reordering`,
/// which starts at `sysctl_tcp_reordering` = 3 (`TCP_FASTRETRANS_THRESH`).
pub const MAX_BURST_SEGS: u64 = 3;

/// Rate-halving state of one sender (Linux `tp->snd_cwnd_cnt` while in
/// Recovery).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateHalving {
    /// ACKs with progress seen since the last one-segment decrement (0 or 1).
    cnt: u64,
}

impl RateHalving {
    /// Recovery begins (`tp->snd_cwnd_cnt = 0` in `tcp_fastretrans_alert`).
    pub fn start(&mut self) {
        self.cnt = 0;
    }

    /// `tcp_cwnd_down(sk, flag)`: the new cwnd after one ACK in Recovery.
    /// `progress`: the ACK acknowledged or SACKed new data, or carried a
    /// D-SACK; other ACKs leave cwnd alone. `cwnd_min_bytes` is
    /// `tcp_cwnd_min`, `in_flight_bytes` `tcp_packets_in_flight` after the
    /// ACK's loss marking.
    pub fn cwnd_down(
        &mut self,
        cwnd_bytes: u64,
        cwnd_min_bytes: u64,
        in_flight_bytes: u64,
        mss: u64,
        progress: bool,
    ) -> u64 {
        if !progress {
            return cwnd_bytes;
        }
        let decr = self.cnt + 1;
        self.cnt = decr & 1;
        let mut cwnd = cwnd_bytes;
        if decr >> 1 == 1 && cwnd > cwnd_min_bytes {
            cwnd = cwnd.saturating_sub(mss);
        }
        cwnd.min(in_flight_bytes + mss).max(1)
    }
}

/// `tcp_complete_cwr`: the reduction is over, cwnd no larger than ssthresh.
pub fn complete_cwr(cwnd_bytes: u64, ssthresh_bytes: u64) -> u64 {
    cwnd_bytes.min(ssthresh_bytes)
}

/// `tcp_moderate_cwnd`: no more than `tcp_max_burst` segments beyond what
/// is in flight.
pub fn moderate_cwnd(cwnd_bytes: u64, in_flight_bytes: u64, mss: u64) -> u64 {
    cwnd_bytes
        .min(in_flight_bytes + MAX_BURST_SEGS * mss)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// One segment off every second ACK with progress, down to ssthresh:
    /// from cwnd 20 to ssthresh 14 takes 12 ACKs (a flight large enough
    /// that the in-flight cap does not bind).
    #[test]
    fn every_second_ack_takes_one_segment_until_ssthresh() {
        let mut rh = RateHalving::default();
        rh.start();
        let mut cwnd = 20 * MSS;
        let mut trace = vec![];
        for _ in 0..16 {
            cwnd = rh.cwnd_down(cwnd, 14 * MSS, 100 * MSS, MSS, true);
            trace.push(cwnd / MSS);
        }
        assert_eq!(
            trace,
            [20, 19, 19, 18, 18, 17, 17, 16, 16, 15, 15, 14, 14, 14, 14, 14]
        );
    }

    /// ACKs without progress neither count nor cap.
    #[test]
    fn acks_without_progress_change_nothing() {
        let mut rh = RateHalving::default();
        let c = rh.cwnd_down(20 * MSS, 10 * MSS, 2 * MSS, MSS, false);
        assert_eq!(c, 20 * MSS);
        // The count did not move: the next progress ACK is the first.
        let c = rh.cwnd_down(20 * MSS, 10 * MSS, 100 * MSS, MSS, true);
        assert_eq!(c, 20 * MSS);
    }

    /// The in-flight cap: after a burst of losses the window follows the
    /// flight down (in flight 4 → cwnd 5), below ssthresh, and does not
    /// grow back while the recovery lasts (PRR would slow-start it back up
    /// to ssthresh).
    #[test]
    fn a_collapsed_flight_collapses_the_window() {
        let mut rh = RateHalving::default();
        rh.start();
        let c = rh.cwnd_down(20 * MSS, 14 * MSS, 4 * MSS, MSS, true);
        assert_eq!(c, 5 * MSS);
        let c = rh.cwnd_down(c, 14 * MSS, 8 * MSS, MSS, true);
        assert_eq!(c, 5 * MSS, "nothing raises cwnd in rate-halving");
    }

    /// `start` resets the pairing: the first ACK of a new recovery never
    /// decrements.
    #[test]
    fn start_resets_the_ack_pairing() {
        let mut rh = RateHalving::default();
        let _ = rh.cwnd_down(20 * MSS, 10 * MSS, 100 * MSS, MSS, true);
        rh.start();
        let c = rh.cwnd_down(20 * MSS, 10 * MSS, 100 * MSS, MSS, true);
        assert_eq!(c, 20 * MSS);
    }

    #[test]
    fn complete_cwr_and_moderate_cwnd() {
        assert_eq!(complete_cwr(20 * MSS, 14 * MSS), 14 * MSS);
        assert_eq!(complete_cwr(5 * MSS, 14 * MSS), 5 * MSS);
        assert_eq!(moderate_cwnd(20 * MSS, 10 * MSS, MSS), 13 * MSS);
        assert_eq!(moderate_cwnd(12 * MSS, 10 * MSS, MSS), 12 * MSS);
    }
}
