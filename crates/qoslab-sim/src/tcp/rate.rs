//! Delivery-rate sampling, draft-cheng-iccrg-delivery-rate-estimation-02
//! and Linux net/ipv4/tcp_rate.c (`tcp_rate_skb_sent`,
//! `tcp_rate_skb_delivered`, `tcp_rate_gen`, `tcp_rate_check_app_limited`).
//!
//! Each transmission snapshots the connection's `delivered` count and the
//! time it last changed; when the segment is delivered (cumulatively ACKed
//! or SACKed for the first time) the sample is the bytes delivered since
//! that snapshot over max(send interval, ACK interval), the send interval
//! running from the first transmission of the flight the segment belonged
//! to. Samples shorter than min_rtt are discarded (interval reported as
//! zero, Linux `interval_us = -1`) because ACK compression would inflate
//! them. While the application has nothing to send and the window is not
//! full, the connection is marked application-limited until the data
//! sent at that point is delivered; samples of segments sent meanwhile
//! carry `is_app_limited` so BBR does not take them as bandwidth drops.
//!
//! Counts are bytes, not packets (the draft counts in either).

use crate::cc::RateSample;
use qoslab_core::{Duration, Instant};

/// What a transmission remembers for its delivery-rate sample
/// (Linux `tcp_skb_cb::tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxRateInfo {
    pub delivered_bytes: u64,
    pub delivered_at: Instant,
    pub first_tx_at: Instant,
    pub app_limited: bool,
}

/// Per-ACK accumulator (Linux `struct rate_sample` while it is built).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateAccumulator {
    prior: Option<(TxRateInfo, Instant, u64)>,
    send_interval: Duration,
    delivered_now_bytes: u64,
}

/// Connection-wide delivery state.
#[derive(Clone, Debug, Default)]
pub struct RateEstimator {
    delivered_bytes: u64,
    delivered_at: Instant,
    first_tx_at: Instant,
    /// Linux `tp->app_limited`: 0 = not app-limited, else the delivered
    /// count past which the connection is no longer app-limited.
    app_limited_until: u64,
}

impl RateEstimator {
    pub fn new() -> Self {
        RateEstimator::default()
    }

    /// Total bytes delivered so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// `tcp_rate_skb_sent`: snapshot for a segment about to be sent.
    /// `nothing_outstanding` = no segment is in the retransmission queue
    /// (Linux `!tp->packets_out`): a new flight starts now.
    pub fn on_send(&mut self, now: Instant, nothing_outstanding: bool) -> TxRateInfo {
        if nothing_outstanding {
            self.first_tx_at = now;
            self.delivered_at = now;
        }
        TxRateInfo {
            delivered_bytes: self.delivered_bytes,
            delivered_at: self.delivered_at,
            first_tx_at: self.first_tx_at,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// `tcp_rate_skb_delivered`: a segment of `len` bytes, last sent at
    /// `sent_at` with snapshot `tx`, has just been delivered (for the first
    /// time: a segment SACKed earlier is not delivered again when the
    /// cumulative ACK passes it). `end_seq` orders segments sent at the
    /// same instant.
    pub fn on_delivered(
        &mut self,
        acc: &mut RateAccumulator,
        tx: &TxRateInfo,
        sent_at: Instant,
        end_seq: u64,
        len: u32,
    ) {
        self.delivered_bytes += len as u64;
        acc.delivered_now_bytes += len as u64;
        let newer = match acc.prior {
            None => true,
            Some((_, prior_sent, prior_end)) => {
                sent_at > prior_sent || (sent_at == prior_sent && end_seq > prior_end)
            }
        };
        if newer {
            acc.prior = Some((*tx, sent_at, end_seq));
            // The send interval of the flight: first → this transmission.
            acc.send_interval = sent_at.saturating_since(tx.first_tx_at);
            self.first_tx_at = sent_at;
        }
    }

    /// `tcp_rate_gen`: close the sample of this ACK.
    pub fn finish(
        &mut self,
        acc: &RateAccumulator,
        now: Instant,
        min_rtt: Option<Duration>,
        lost_bytes: u64,
        prior_in_flight_bytes: u64,
    ) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered_bytes > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if acc.delivered_now_bytes > 0 {
            self.delivered_at = now;
        }
        let (tx, _, _) = acc.prior?;
        let ack_interval = now.saturating_since(tx.delivered_at);
        let mut interval = acc.send_interval.max(ack_interval);
        if min_rtt.is_some_and(|m| interval < m) {
            interval = Duration::ZERO;
        }
        Some(RateSample {
            delivered_bytes: self.delivered_bytes - tx.delivered_bytes,
            interval,
            is_app_limited: tx.app_limited,
            prior_delivered_bytes: tx.delivered_bytes,
            delivered_total_bytes: self.delivered_bytes,
            lost_bytes,
            prior_in_flight_bytes,
        })
    }

    /// `tcp_rate_check_app_limited`: the application has less than a
    /// segment to send, the window is not full and every lost segment has
    /// been retransmitted: mark the connection app-limited until what is
    /// in flight now is delivered.
    pub fn mark_app_limited(&mut self, in_flight_bytes: u64) {
        self.app_limited_until = (self.delivered_bytes + in_flight_bytes).max(1);
    }

    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_ns(ms * 1_000_000)
    }

    #[test]
    fn steady_flight_gives_bytes_over_interval() {
        let mut r = RateEstimator::new();
        // Ten 1000-byte segments sent at t=0..9 ms, a fresh flight.
        let mut tx = Vec::new();
        for i in 0..10u64 {
            tx.push((r.on_send(t(i), i == 0), t(i), 1000 * (i + 1)));
        }
        // Each delivered 100 ms after it was sent; one ACK per segment.
        let mut last = None;
        for (i, (info, sent, end)) in tx.iter().enumerate() {
            let mut acc = RateAccumulator::default();
            r.on_delivered(&mut acc, info, *sent, *end, 1000);
            last = r.finish(&acc, t(100 + i as u64), Some(Duration::from_ms(100)), 0, 0);
        }
        let s = last.unwrap();
        // Segment 9: sent with delivered = 0 at t=9 (flight began at 0);
        // delivered 10000 B; send interval 9 ms, ACK interval 109 − 0 ms.
        assert_eq!(s.delivered_bytes, 10_000);
        assert_eq!(s.prior_delivered_bytes, 0);
        assert_eq!(s.interval, Duration::from_ms(109));
        assert!(!s.is_app_limited);
        assert_eq!(s.delivered_total_bytes, 10_000);
    }

    #[test]
    fn short_intervals_are_invalid_and_app_limit_clears() {
        let mut r = RateEstimator::new();
        let a = r.on_send(t(0), true);
        r.mark_app_limited(1000);
        let b = r.on_send(t(1), false);
        assert!(b.app_limited && !a.app_limited);
        let mut acc = RateAccumulator::default();
        r.on_delivered(&mut acc, &a, t(0), 1000, 1000);
        // 10 ms after sending, but min_rtt is 50 ms: too short, invalid.
        let s = r
            .finish(&acc, t(10), Some(Duration::from_ms(50)), 0, 2000)
            .unwrap();
        assert_eq!(s.interval, Duration::ZERO);
        assert_eq!(s.prior_in_flight_bytes, 2000);
        assert!(r.is_app_limited(), "delivered 1000, not past 1000 yet");
        let mut acc = RateAccumulator::default();
        r.on_delivered(&mut acc, &b, t(1), 2000, 1000);
        let s = r.finish(&acc, t(60), None, 0, 1000).unwrap();
        assert!(s.is_app_limited);
        assert!(!r.is_app_limited());
        // No delivery on this ACK: no sample.
        assert!(r
            .finish(&RateAccumulator::default(), t(61), None, 0, 0)
            .is_none());
    }
}
