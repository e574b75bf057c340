//! Sender pacing, after Linux's internal TCP pacing
//! (net/ipv4/tcp_output.c `tcp_pacing_check`, `tcp_update_skb_after_send`)
//! and the default rate of net/ipv4/tcp_input.c `tcp_update_pacing_rate`.
//!
//! - A segment may leave only when `now ≥ next_send`; after it leaves,
//!   `next_send = max(next_send, now) + payload_len / rate` (Linux advances
//!   `tcp_wstamp_ns` by `skb->len` over `sk_pacing_rate`, the payload
//!   length; an idle sender earns no credit).
//! - When the algorithm does not set a rate (everything but BBR) and
//!   pacing is on, the rate is `ratio · max(cwnd, in flight) / SRTT` with
//!   ratio 200 % while `cwnd < ssthresh / 2` (sysctl
//!   `tcp_pacing_ss_ratio`) and 120 % otherwise (`tcp_pacing_ca_ratio`),
//!   exactly Linux's test; without an SRTT there is no pacing yet.
//! - The unit of pacing is Linux's skb, not the segment: up to `quantum`
//!   segments (the TSO/GSO autosize of [`super::tso`]) leave together at
//!   one instant, and the next burst waits for the sum of their lengths
//!   over the rate (`tcp_update_skb_after_send` adds `skb->len / rate`).
//!   A burst cut short (window, application) is not resumed later: the
//!   next send builds a new skb and waits for the clock.

use qoslab_core::{Bytes, Duration, Instant, Rate};

/// Linux sysctl defaults, percent.
pub const PACING_SS_RATIO_PERCENT: u64 = 200;
pub const PACING_CA_RATIO_PERCENT: u64 = 120;

/// Linux's default pacing rate for `cwnd_bytes` over `srtt`.
pub fn default_pacing_rate(
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    in_flight_bytes: u64,
    srtt: Duration,
) -> Option<Rate> {
    if srtt == Duration::ZERO {
        return None;
    }
    let ratio = if cwnd_bytes < ssthresh_bytes / 2 {
        PACING_SS_RATIO_PERCENT
    } else {
        PACING_CA_RATIO_PERCENT
    };
    // bytes·8·ratio·10⁹ / (100·srtt) = bytes·8·ratio·10⁷ / srtt exactly
    // (10⁹ / 100 is whole), in 64 bits when the product fits (issue 12:
    // a 128-bit division on every ACK otherwise).
    let bytes = cwnd_bytes.max(in_flight_bytes);
    let srtt_ns = srtt.as_ns();
    let bps = match bytes.checked_mul(8 * ratio * 10_000_000) {
        Some(n) => n / srtt_ns,
        None => u64::try_from(bytes as u128 * (8 * ratio * 10_000_000) as u128 / srtt_ns as u128)
            .unwrap_or(u64::MAX),
    };
    Some(Rate::from_bps(bps.max(1)))
}

/// The departure clock of one sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    next_send: Instant,
    /// The instant the current skb started and how many of its segments
    /// may still leave at that instant.
    burst_at: Instant,
    burst_left: u32,
}

impl Pacer {
    fn in_burst(&self, now: Instant) -> bool {
        self.burst_left > 0 && now == self.burst_at
    }

    pub fn may_send(&self, now: Instant) -> bool {
        self.in_burst(now) || now >= self.next_send
    }

    pub fn next_send(&self) -> Instant {
        self.next_send
    }

    /// A segment of `payload_bytes` left at `now`, paced at `rate`, in
    /// skbs of up to `quantum_segs` segments.
    pub fn on_send(&mut self, now: Instant, payload_bytes: u32, rate: Rate, quantum_segs: u32) {
        if !self.in_burst(now) {
            self.burst_at = now;
            self.burst_left = quantum_segs.max(1);
        }
        self.burst_left -= 1;
        let gap = rate.tx_time(Bytes::new(payload_bytes as u64));
        self.next_send = self.next_send.max(now).saturating_add(gap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_is_size_over_rate_without_credit() {
        let mut p = Pacer::default();
        let rate = Rate::from_bps(12_000_000); // 1500 B = 1 ms
        let t0 = Instant::from_ns(5_000_000);
        assert!(p.may_send(t0));
        p.on_send(t0, 1500, rate, 1);
        assert_eq!(p.next_send(), Instant::from_ns(6_000_000));
        assert!(!p.may_send(Instant::from_ns(5_999_999)));
        p.on_send(Instant::from_ns(6_000_000), 1500, rate, 1);
        assert_eq!(p.next_send(), Instant::from_ns(7_000_000));
        // Idle for a while: no burst credit.
        p.on_send(Instant::from_ns(20_000_000), 750, rate, 1);
        assert_eq!(p.next_send(), Instant::from_ns(20_500_000));
    }

    #[test]
    fn a_quantum_leaves_at_once_and_the_next_waits_for_all_of_it() {
        let mut p = Pacer::default();
        let rate = Rate::from_bps(12_000_000); // 1500 B = 1 ms
        let t0 = Instant::from_ns(5_000_000);
        for i in 0..3 {
            assert!(p.may_send(t0), "segment {i}");
            p.on_send(t0, 1500, rate, 3);
        }
        assert!(!p.may_send(t0));
        assert_eq!(p.next_send(), Instant::from_ns(8_000_000));
        // A burst cut short is not resumed at a later instant.
        let t1 = Instant::from_ns(8_000_000);
        p.on_send(t1, 1500, rate, 3);
        assert!(p.may_send(t1));
        assert!(!p.may_send(Instant::from_ns(8_500_000)));
    }

    #[test]
    fn sixty_four_bit_rate_is_the_128_bit_formula() {
        // The former form, kept as the reference.
        let reference = |cwnd: u64, ssthresh: u64, flight: u64, srtt_ns: u64| {
            let ratio = if cwnd < ssthresh / 2 { 200u128 } else { 120 };
            let b = cwnd.max(flight) as u128;
            let bps = b * 8 * ratio * 1_000_000_000 / (100 * srtt_ns as u128);
            u64::try_from(bps).unwrap_or(u64::MAX).max(1)
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..20_000u32 {
            // Sizes from 0 to 2⁶⁴ − 1 (both paths), RTTs from 1 ns up.
            let cwnd = next() >> (next() % 64);
            let flight = next() >> (next() % 64);
            let ssthresh = next() >> (next() % 64);
            let srtt_ns = (next() >> (next() % 64)).max(1);
            let got = default_pacing_rate(cwnd, ssthresh, flight, Duration::from_ns(srtt_ns))
                .unwrap()
                .bps();
            assert_eq!(got, reference(cwnd, ssthresh, flight, srtt_ns), "case {i}");
        }
    }

    #[test]
    fn linux_default_rate_ratios() {
        let srtt = Duration::from_ms(100);
        // cwnd 100 kB, ssthresh huge: slow start, 200 % of 8 Mbit/s.
        let r = default_pacing_rate(100_000, u64::MAX, 0, srtt).unwrap();
        assert_eq!(r.bps(), 16_000_000);
        // cwnd ≥ ssthresh/2: 120 %.
        let r = default_pacing_rate(100_000, 150_000, 0, srtt).unwrap();
        assert_eq!(r.bps(), 9_600_000);
        assert!(default_pacing_rate(1, 1, 0, Duration::ZERO).is_none());
    }
}
