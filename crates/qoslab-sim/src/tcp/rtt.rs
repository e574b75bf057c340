//! Retransmission timeout, RFC 6298 "Computing TCP's Retransmission Timer".
//!
//! - §2.2 first sample R: SRTT = R, RTTVAR = R/2;
//! - §2.3 later samples: RTTVAR = (1 − β)·RTTVAR + β·|SRTT − R'|, then
//!   SRTT = (1 − α)·SRTT + α·R' with α = 1/8, β = 1/4 (RTTVAR uses the old
//!   SRTT, as the RFC orders it);
//! - RTO = SRTT + max(G, K·RTTVAR), K = 4, clock granularity G = 1 ms;
//! - §2.4/§2.5 clamp to [`min_rto`, `max_rto`] of the configuration (the
//!   RFC's 1 s floor is the configurable `min_rto`; Linux uses 200 ms);
//! - §5.5 exponential backoff on expiry, kept until a new valid sample
//!   (Karn's algorithm: the caller never feeds samples from retransmitted
//!   segments unless timestamps disambiguate them, RFC 7323 §4).
//!
//! Left out: Linux computes its RTO differently (`tcp_rtt_estimator` /
//! `tcp_set_rto` in net/ipv4/tcp_input.c: RTO ≈ SRTT + max(4·mdev,
//! rto_min), with a per-window mdev_max), which gives a larger RTO at RTTs
//! near `min_rto`. We follow the RFC.
//!
//! Arithmetic is integer nanoseconds (the divisions by 8 and 4 round down
//! by under 1 ns).
//!
//! [`min_rto`]: crate::config::TcpConfig::min_rto
//! [`max_rto`]: crate::config::TcpConfig::max_rto

use qoslab_core::Duration;

/// RFC 6298 clock granularity G (we pick 1 ms, the Linux jiffy at HZ=1000).
pub const CLOCK_GRANULARITY: Duration = Duration::from_ms(1);

/// RFC 6298 §5.7: RTO after a lost SYN when no RTT sample was taken.
pub const FALLBACK_RTO: Duration = Duration::from_secs(3);

/// SRTT/RTTVAR/RTO state of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    /// RTO before backoff (already clamped).
    base_rto_ns: u64,
    /// Number of doublings since the last valid sample.
    backoff: u32,
    min_rto_ns: u64,
    max_rto_ns: u64,
    min_rtt: Option<Duration>,
}

impl RttEstimator {
    /// Before any sample RTO = `initial_rto` (RFC 6298 §2.1), clamped to
    /// `max_rto`.
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        let max_rto_ns = max_rto.as_ns().max(1);
        RttEstimator {
            srtt_ns: None,
            rttvar_ns: 0,
            base_rto_ns: initial_rto.as_ns().min(max_rto_ns),
            backoff: 0,
            min_rto_ns: min_rto.as_ns().min(max_rto_ns),
            max_rto_ns,
            min_rtt: None,
        }
    }

    /// Feed one valid RTT measurement (§2.2 / §2.3) and clear the backoff.
    pub fn sample(&mut self, rtt: Duration) {
        let r = rtt.as_ns();
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(r);
                self.rttvar_ns = r / 2;
            }
            Some(srtt) => {
                self.rttvar_ns = (3 * self.rttvar_ns + srtt.abs_diff(r)) / 4;
                self.srtt_ns = Some((7 * srtt + r) / 8);
            }
        }
        let srtt = self.srtt_ns.unwrap_or(r);
        let var = CLOCK_GRANULARITY
            .as_ns()
            .max(self.rttvar_ns.saturating_mul(4));
        self.base_rto_ns = srtt
            .saturating_add(var)
            .clamp(self.min_rto_ns, self.max_rto_ns);
        self.backoff = 0;
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// §5.7: the SYN was retransmitted and no sample was taken: RTO = 3 s.
    pub fn syn_fallback(&mut self) {
        if self.srtt_ns.is_none() {
            self.base_rto_ns = FALLBACK_RTO.as_ns().min(self.max_rto_ns);
            self.backoff = 0;
        }
    }

    /// §5.5: the timer expired, double the RTO ("back off the timer"),
    /// never beyond `max_rto`.
    pub fn back_off(&mut self) {
        if self.rto() < Duration::from_ns(self.max_rto_ns) {
            self.backoff += 1;
        }
    }

    /// Clear the backoff without a sample (used once the handshake is done).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// The current (backed-off) RTO.
    pub fn rto(&self) -> Duration {
        let shifted = if self.backoff >= 64 {
            u64::MAX
        } else {
            self.base_rto_ns.saturating_mul(1u64 << self.backoff)
        };
        Duration::from_ns(shifted.min(self.max_rto_ns))
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt_ns.map(Duration::from_ns)
    }

    pub fn rttvar(&self) -> Duration {
        Duration::from_ns(self.rttvar_ns)
    }

    /// Smallest sample so far (connection lifetime; Linux keeps a 5-minute
    /// windowed minimum, `tcp_update_rtt_min`).
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_ms(v)
    }

    #[test]
    fn rfc6298_hand_computed_sequence() {
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(e.rto(), ms(1000), "§2.1 initial RTO");
        // R1 = 100 ms: SRTT 100, RTTVAR 50, RTO = 100 + 4·50 = 300 ms.
        e.sample(ms(100));
        assert_eq!(
            (e.srtt(), e.rttvar(), e.rto()),
            (Some(ms(100)), ms(50), ms(300))
        );
        // R2 = 200 ms: RTTVAR = 3/4·50 + 1/4·|100−200| = 62.5 ms,
        // SRTT = 7/8·100 + 1/8·200 = 112.5 ms, RTO = 112.5 + 250 = 362.5 ms.
        e.sample(ms(200));
        assert_eq!(e.rttvar(), Duration::from_us(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_us(112_500)));
        assert_eq!(e.rto(), Duration::from_us(362_500));
        // R3 = 100 ms: RTTVAR = 3/4·62.5 + 1/4·12.5 = 50 ms,
        // SRTT = 7/8·112.5 + 12.5 = 110.9375 ms, RTO = 310.9375 ms.
        e.sample(ms(100));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.srtt(), Some(Duration::from_ns(110_937_500)));
        assert_eq!(e.rto(), Duration::from_ns(310_937_500));
        assert_eq!(e.min_rtt(), Some(ms(100)));
    }

    #[test]
    fn clamps_granularity_and_backoff() {
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(1000));
        // 10 ms steady: RTO = 10 + 4·5 = 30 ms → clamped up to min_rto 200.
        e.sample(ms(10));
        assert_eq!(e.rto(), ms(200));
        // Steady samples drive RTTVAR to 0: G = 1 ms keeps RTO > SRTT
        // (visible without the min_rto clamp).
        let mut g = RttEstimator::new(ms(1000), Duration::ZERO, ms(1000));
        for _ in 0..200 {
            g.sample(ms(10));
        }
        assert_eq!(g.rttvar(), Duration::ZERO);
        assert_eq!(g.rto(), ms(11));
        // Backoff doubles and stops at max_rto.
        e.back_off();
        assert_eq!(e.rto(), ms(400));
        e.back_off();
        assert_eq!(e.rto(), ms(800));
        e.back_off();
        assert_eq!(e.rto(), ms(1000));
        e.back_off();
        assert_eq!(e.rto(), ms(1000));
        // A new sample clears it.
        e.sample(ms(10));
        assert_eq!(e.rto(), ms(200));
    }

    #[test]
    fn syn_fallback_only_without_sample() {
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        e.syn_fallback();
        assert_eq!(e.rto(), ms(3000));
        e.sample(ms(50));
        e.syn_fallback();
        assert_eq!(e.rto(), ms(200), "50 + 4·25 = 150 → min_rto");
    }
}
