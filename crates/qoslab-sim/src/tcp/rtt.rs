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
//! Linux computes its RTO differently, and [`RttEstimator::linux`] does
//! it that way (`tcp_rtt_estimator`, `tcp_set_rto`, `tcp_bound_rto` in
//! net/ipv4/tcp_input.c): SRTT as above (kept ×8), a mean deviation
//! `mdev` (kept ×4, so it adds directly) whose gain is cut to 1/32 while
//! RTT samples fall (Linux's Eifel-like rule), `rttvar` = the largest
//! `mdev` of the current window but never below `min_rto` at a window's
//! start (`mdev_max` restarts at `tcp_rto_min` once per window of data,
//! `rttvar` decays a quarter of the way toward it), and RTO = SRTT +
//! rttvar, capped at `max_rto` only. The first sample gives RTO = RTT +
//! max(2·RTT, min_rto). So a Linux RTO is SRTT + ≥ `min_rto` (220 ms at
//! a 20 ms RTT), where RFC 6298 gives max(SRTT + 4·RTTVAR, `min_rto`).
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
    /// Linux estimator state, when this is a Linux estimator.
    lx: Option<LinuxRtt>,
}

/// `tcp_sock` fields of the Linux estimator, in ns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct LinuxRtt {
    /// SRTT × 8 (`srtt_us`).
    srtt8: u64,
    /// `mdev_us` (≈ 4 × mean deviation).
    mdev: u64,
    mdev_max: u64,
    rttvar: u64,
    /// `rtt_seq`: the window ends when SND.UNA passes it.
    rtt_seq: u64,
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
            lx: None,
        }
    }

    /// The Linux estimator (see the module docs); `initial_rto`, the
    /// backoff and the clamps as for [`RttEstimator::new`].
    pub fn linux(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            lx: Some(LinuxRtt::default()),
            ..RttEstimator::new(initial_rto, min_rto, max_rto)
        }
    }

    /// Feed one valid measurement taken when SND.UNA / SND.NXT were
    /// `snd_una` / `snd_nxt` (the Linux estimator's once-per-window
    /// step needs them; RFC 6298 ignores them).
    pub fn sample_at(&mut self, rtt: Duration, snd_una: u64, snd_nxt: u64) {
        let Some(mut lx) = self.lx.take() else {
            self.sample(rtt);
            return;
        };
        let r = rtt.as_ns();
        let min_rto = self.min_rto_ns;
        if lx.srtt8 == 0 {
            lx.srtt8 = r << 3;
            lx.mdev = r << 1;
            lx.rttvar = lx.mdev.max(min_rto);
            lx.mdev_max = lx.rttvar;
            lx.rtt_seq = snd_nxt;
        } else {
            let mut m = r as i128 - (lx.srtt8 >> 3) as i128;
            lx.srtt8 = (lx.srtt8 as i128 + m).max(1) as u64;
            let quarter = (lx.mdev >> 2) as i128;
            if m < 0 {
                m = -m - quarter;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= quarter;
            }
            lx.mdev = (lx.mdev as i128 + m).max(0) as u64;
            if lx.mdev > lx.mdev_max {
                lx.mdev_max = lx.mdev;
                lx.rttvar = lx.rttvar.max(lx.mdev_max);
            }
            if snd_una > lx.rtt_seq {
                if lx.mdev_max < lx.rttvar {
                    lx.rttvar -= (lx.rttvar - lx.mdev_max) >> 2;
                }
                lx.rtt_seq = snd_nxt;
                lx.mdev_max = min_rto;
            }
        }
        self.srtt_ns = Some(lx.srtt8 >> 3);
        self.rttvar_ns = lx.rttvar;
        self.base_rto_ns = ((lx.srtt8 >> 3) + lx.rttvar).min(self.max_rto_ns);
        self.backoff = 0;
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.lx = Some(lx);
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

    /// RTTVAR (RFC 6298), or Linux's `rttvar_us` (what is added to SRTT).
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

    /// Linux: RTO = SRTT + rttvar with rttvar ≥ min_rto, hand-computed.
    #[test]
    fn linux_rto_adds_min_rto_to_srtt() {
        let mut e = RttEstimator::linux(ms(1000), ms(200), ms(120_000));
        // First 20 ms sample: mdev = 40, rttvar = max(40, 200): RTO 220.
        e.sample_at(ms(20), 1, 11);
        assert_eq!((e.srtt(), e.rto()), (Some(ms(20)), ms(220)));
        // Steady 20 ms over many windows: mdev decays, rttvar stays at
        // min_rto (RFC 6298 would give 200 ms).
        for k in 0..100 {
            e.sample_at(ms(20), 11 + k * 10, 21 + k * 10);
        }
        assert_eq!(e.rto(), ms(220));
        // A 300 ms sample: m = 280, srtt += 35 → 55 ms; mdev = 4·... grows
        // past min_rto: rttvar = mdev.
        e.sample_at(ms(300), 2000, 2010);
        assert_eq!(e.srtt(), Some(ms(55)));
        assert!(e.rttvar() > ms(200));
        assert_eq!(e.rto(), ms(55) + e.rttvar());
        // Falling samples move mdev with gain 1/32 only.
        let before = e.rttvar();
        e.sample_at(ms(20), 2000, 2010);
        assert!(e.rttvar() >= before, "no fast RTO decrease within a window");
        // The RFC estimator for comparison: 20 ms steady → min_rto.
        let mut r = RttEstimator::new(ms(1000), ms(200), ms(120_000));
        for _ in 0..100 {
            r.sample_at(ms(20), 0, 0);
        }
        assert_eq!(r.rto(), ms(200));
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
