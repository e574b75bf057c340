//! RACK, the time-based half of RACK-TLP (RFC 8985 §6; Linux
//! net/ipv4/tcp_recovery.c). The sender keeps one [`Rack`] and asks it,
//! on every ACK that delivered data and when its reordering timer fires,
//! which segments are lost; the walk over the scoreboard is
//! [`super::scoreboard::Scoreboard::rack_detect`]. The tail loss probe
//! (RFC 8985 §7) lives in the sender, next to the other timers.
//!
//! - RACK.xmit_ts / RACK.end_seq: send time and end of the most recently
//!   *sent* segment delivered so far (§6.2 step 2, Linux
//!   `tcp_rack_advance`); RACK.rtt: the RTT of the latest delivered
//!   segment. A retransmitted segment is ignored when it was delivered
//!   sooner than min_rtt after it (probably the original; Linux
//!   `tcp_rack_advance`), and, when cumulatively ACKed only, when the ACK
//!   echoes a timestamp older than its latest transmission (an earlier
//!   copy was delivered; `tcp_clean_rtx_queue` → `tcp_skb_spurious_retrans`;
//!   `tcp_sacktag_one` has no such test, and the sender passes no
//!   timestamp for SACKed segments).
//! - reo_wnd (§6.2 step 4, Linux `tcp_rack_reo_wnd`): 0 while no
//!   reordering was seen and the sender is in recovery or already has
//!   DupThresh segments SACKed (RACK then acts like the DupThresh rule);
//!   else min(min_rtt/4, SRTT).
//! - Reordering is "seen" when a never-retransmitted segment is delivered
//!   below the highest SACKed sequence (Linux
//!   `tcp_check_sack_reordering`).
//!
//! - reo_wnd grows with D-SACKs (§6.2 step 4, Linux
//!   `tcp_rack_update_reo_wnd`): a D-SACK (at most one per round trip)
//!   adds one min_rtt/4 step (up to 255) and keeps the steps for 16
//!   recoveries that end without undo; then back to one step.

use qoslab_core::{Duration, Instant};

/// Recoveries a grown reo_wnd persists for (Linux
/// `TCP_RACK_RECOVERY_THRESH`).
pub const RECOVERY_THRESH: u32 = 16;

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000): added to the
/// reordering timer and to the probe timeout.
pub const TIMEOUT_MIN: Duration = Duration::from_ms(2);

#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// (RACK.xmit_ts, RACK.end_seq).
    xmit: Option<(Instant, u64)>,
    rtt: Duration,
    /// Something was delivered since the last detection (Linux
    /// `rack.advanced`).
    advanced: bool,
    /// Reordering observed on this connection (RFC 8985
    /// RACK.reordering_seen, Linux `reord_seen`).
    pub reord_seen: bool,
    /// reo_wnd multiplier (RACK.reo_wnd_mult, Linux `reo_wnd_steps`; 0
    /// is read as 1).
    steps: u32,
    /// Recoveries left before the steps reset (Linux `reo_wnd_persist`).
    pub persist: u32,
    /// A D-SACK arrived and is not yet accounted (Linux `dsack_seen`).
    pub dsack_seen: bool,
    /// Delivered bytes when the steps last grew (Linux
    /// `rack.last_delivered`).
    last_delivered: u64,
}

impl Rack {
    /// §6.2 step 2 for one newly delivered segment; `ts_ecr` is the
    /// ACK's echoed timestamp in ns (0 = none).
    pub fn on_delivered(
        &mut self,
        sent_at: Instant,
        end: u64,
        retransmitted: bool,
        now: Instant,
        min_rtt: Option<Duration>,
        ts_ecr: u64,
    ) {
        let rtt = now.saturating_since(sent_at);
        if retransmitted
            && ((ts_ecr != 0 && ts_ecr < sent_at.as_ns()) || min_rtt.is_some_and(|m| rtt < m))
        {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if self.xmit.is_none_or(|x| (sent_at, end) > x) {
            self.xmit = Some((sent_at, end));
        }
    }

    /// §6.2 step 4.
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        dupthresh_sacked: bool,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
    ) -> Duration {
        if !self.reord_seen && (in_recovery || dupthresh_sacked) {
            return Duration::ZERO;
        }
        let steps = self.steps.max(1) as u64;
        match (min_rtt, srtt) {
            (Some(m), Some(s)) => Duration::from_ns(m.as_ns() / 4 * steps).min(s),
            _ => Duration::ZERO,
        }
    }

    /// Linux `tcp_rack_update_reo_wnd`, once per ACK with a rate sample:
    /// `prior_delivered` is the delivered count when the sampled segment
    /// was sent, `delivered` the count now.
    pub fn update_reo_wnd(&mut self, prior_delivered: u64, delivered: u64) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false; // less than a round trip since the last step
        }
        if self.dsack_seen {
            self.steps = (self.steps.max(1) + 1).min(255);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.persist = RECOVERY_THRESH;
        } else if self.persist == 0 {
            self.steps = 1;
        }
    }

    /// What to detect against: (RACK.xmit_ts, RACK.end_seq, RACK.rtt), if
    /// anything was delivered since the last call or `force` (the
    /// reordering timer fired).
    pub fn take_advanced(&mut self, force: bool) -> Option<(Instant, u64, Duration)> {
        let go = std::mem::take(&mut self.advanced) || force;
        let (t, e) = self.xmit.filter(|_| go)?;
        Some((t, e, self.rtt))
    }

    /// §6.3 / Linux `tcp_timeout_mark_lost`: on an RTO, segments sent
    /// after this time (less than RACK.rtt ago) are not yet marked lost.
    pub fn rto_spare_after(&self, now: Instant) -> Option<Instant> {
        self.xmit
            .map(|_| Instant::from_ns(now.as_ns().saturating_sub(self.rtt.as_ns())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_ms(v)
    }

    #[test]
    fn reo_wnd_is_zero_in_recovery_until_reordering_is_seen() {
        let mut r = Rack::default();
        let (m, s) = (Some(ms(40)), Some(ms(60)));
        assert_eq!(r.reo_wnd(false, false, m, s), ms(10), "min_rtt/4");
        assert_eq!(r.reo_wnd(true, false, m, s), Duration::ZERO);
        assert_eq!(r.reo_wnd(false, true, m, s), Duration::ZERO);
        r.reord_seen = true;
        assert_eq!(r.reo_wnd(true, true, m, s), ms(10));
        assert_eq!(r.reo_wnd(true, true, m, Some(ms(5))), ms(5), "≤ SRTT");
    }

    #[test]
    fn dsacks_widen_reo_wnd_once_per_round_trip() {
        let mut r = Rack {
            reord_seen: true,
            ..Rack::default()
        };
        let (m, s) = (Some(ms(40)), Some(ms(100)));
        r.dsack_seen = true;
        r.update_reo_wnd(1_000, 50_000);
        assert_eq!(r.reo_wnd(true, true, m, s), ms(20), "two steps");
        // A D-SACK for data sent before that step: ignored.
        r.dsack_seen = true;
        r.update_reo_wnd(40_000, 60_000);
        assert_eq!(r.reo_wnd(true, true, m, s), ms(20));
        r.dsack_seen = true;
        r.update_reo_wnd(55_000, 90_000);
        assert_eq!(r.reo_wnd(true, true, m, s), ms(30));
        // Capped by SRTT; back to one step once persistence runs out.
        assert_eq!(r.reo_wnd(true, true, m, Some(ms(25))), ms(25));
        r.persist = 0;
        r.update_reo_wnd(95_000, 99_000);
        assert_eq!(r.reo_wnd(true, true, m, s), ms(10));
    }

    #[test]
    fn latest_sent_wins_and_quick_retransmission_acks_are_ignored() {
        let mut r = Rack::default();
        let at = |v: u64| Instant::from_ns(v * 1_000_000);
        r.on_delivered(at(10), 2001, false, at(50), Some(ms(40)), 0);
        r.on_delivered(at(5), 1001, false, at(50), Some(ms(40)), 0);
        assert_eq!(r.take_advanced(false), Some((at(10), 2001, ms(45))));
        assert_eq!(r.take_advanced(false), None, "nothing new");
        // A retransmission sent at 45 "delivered" at 50: faster than
        // min_rtt, so the original was delivered — ignored.
        r.on_delivered(at(45), 3001, true, at(50), Some(ms(40)), 0);
        assert_eq!(r.take_advanced(false), None);
        // One retransmitted at 20 but acknowledged with the echo of an
        // earlier copy (sent at 8): ignored too.
        r.on_delivered(at(20), 4001, true, at(100), Some(ms(40)), at(8).as_ns());
        assert_eq!(r.take_advanced(false), None);
        assert_eq!(r.rto_spare_after(at(100)), Some(at(55)));
    }
}
