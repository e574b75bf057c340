//! When a node's timer actually fires for a requested instant.
//!
//! - `HighRes { slack }`: hrtimer-like, at the instant plus `slack`
//!   (Linux `qdisc_watchdog_schedule_range_ns` with a delta_ns range).
//! - `Hz(hz)`: jiffies-like, at the first tick boundary `k·10⁹/hz` ns at or
//!   after the instant. A shaper woken only on ticks can send at most its
//!   bucket per tick, so a TBF whose burst is below `rate / HZ` cannot reach
//!   its rate — the rule the tc-tbf(8) manual states ("the burst must be at
//!   least rate / HZ"), from the jiffies-based `qdisc_watchdog` of older
//!   kernels (net/sched/sch_api.c).
//!
//! - `HighResLate { mean, max }`: an hrtimer whose expiry is late by a
//!   random amount (interrupt and softirq latency, a busy CPU): exponential
//!   with `mean`, cut at `max` ([`lateness_ns`]). One draw per armed
//!   expiry: re-arming for a later instant keeps the draw, an earlier
//!   instant draws again (Linux `qdisc_watchdog_schedule_range_ns` re-arms
//!   the hrtimer only for an earlier expiry). A tbf whose burst is one
//!   packet loses rate to every late wake-up, which is the point of it.
//!
//!   The default stays `HighRes { slack: 0 }` (exact), so that results do
//!   not depend on a machine: the lateness is a property of a host, and
//!   the one figure measured here is not the kernel's. `qoslab emulate`'s
//!   forwarder (userspace, SCHED_FIFO, 1 ns timer slack, ppoll) reports
//!   its own wake-up lateness (`emulation.forwarder.timing`); on this
//!   project's 2-core build machine under load (6.18 kernel, 2 runs of a
//!   20 Mbit/s tbf scenario, ~73 000 wake-ups each) it was p50 1.2–1.4 µs,
//!   mean 4.3–6.6 µs, p99 47–74 µs, p99.9 0.66–0.95 ms, max 2.3–3.4 ms —
//!   a heavy tail that an exponential with `mean = "5us"` and
//!   `max = "3ms"` only roughly matches. The kernel's own hrtimer lateness
//!   for `sch_tbf`'s watchdog was not measured (it needs tracing of
//!   `hrtimer_expire_entry`, not available here).
//!
//! TCP's own timers (RTO, delayed ACK, pacing) are hrtimers in Linux and are
//! not routed through this: they fire exactly.

use crate::config::TimerSpec;
use qoslab_core::rng::Rng;

/// How late the timer of a node with `spec` fires after its (nominal)
/// expiry, in ns: 0 except for [`TimerSpec::HighResLate`], whose lateness
/// is `min(−mean·ln(1 − u), max)` for u uniform in [0, 1) from `rng`.
pub fn lateness_ns(spec: TimerSpec, rng: &mut Rng) -> u64 {
    match spec {
        TimerSpec::HighResLate { mean, max } => {
            let u = rng.next_f64();
            let x = -(mean.as_ns() as f64) * (1.0 - u).ln();
            (x.round() as u64).min(max.as_ns())
        }
        TimerSpec::HighRes { .. } | TimerSpec::Hz(_) => 0,
    }
}

/// The firing time of a timer requested for `at_ns` on a node with `spec`,
/// before any random lateness ([`lateness_ns`]; the emulator, on a real
/// clock, uses this alone).
#[inline]
pub fn fire_time_ns(spec: TimerSpec, at_ns: u64) -> u64 {
    match spec {
        TimerSpec::HighRes { slack } => at_ns.saturating_add(slack.as_ns()),
        TimerSpec::HighResLate { .. } => at_ns,
        TimerSpec::Hz(hz) => {
            let hz = hz.max(1) as u128;
            // Tick k is at ⌈k·10⁹/hz⌉ ns; the first one ≥ at is the smallest
            // k with k·10⁹ > (at − 1)·hz.
            if at_ns == 0 {
                return 0;
            }
            let k = (at_ns as u128 - 1) * hz / 1_000_000_000 + 1;
            let t = (k * 1_000_000_000).div_ceil(hz);
            u64::try_from(t).unwrap_or(u64::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoslab_core::Duration;

    #[test]
    fn highres_adds_slack_and_hz_rounds_up_to_the_tick() {
        let hr = TimerSpec::HighRes {
            slack: Duration::from_us(50),
        };
        assert_eq!(fire_time_ns(hr, 1_000), 51_000);
        let hz = TimerSpec::Hz(250); // 4 ms ticks
        assert_eq!(fire_time_ns(hz, 0), 0);
        assert_eq!(fire_time_ns(hz, 1), 4_000_000);
        assert_eq!(fire_time_ns(hz, 4_000_000), 4_000_000);
        assert_eq!(fire_time_ns(hz, 4_000_001), 8_000_000);
        // 300 Hz: ticks at ⌈k·10⁹/300⌉ = 3_333_334, 6_666_667, 10_000_000 …
        let h3 = TimerSpec::Hz(300);
        assert_eq!(fire_time_ns(h3, 1), 3_333_334);
        assert_eq!(fire_time_ns(h3, 6_666_667), 6_666_667);
        assert_eq!(fire_time_ns(h3, 6_666_668), 10_000_000);
    }

    #[test]
    fn late_timer_draws_are_seeded_exponential_and_capped() {
        let spec = TimerSpec::HighResLate {
            mean: Duration::from_us(20),
            max: Duration::from_us(100),
        };
        assert_eq!(fire_time_ns(spec, 1_000), 1_000);
        let mut a = Rng::new(7, 1);
        let mut b = Rng::new(7, 1);
        let draws: Vec<u64> = (0..20_000).map(|_| lateness_ns(spec, &mut a)).collect();
        let again: Vec<u64> = (0..20_000).map(|_| lateness_ns(spec, &mut b)).collect();
        assert_eq!(draws, again);
        assert!(draws.iter().all(|&x| x <= 100_000));
        // P(X > 100 µs) = e^-5 ≈ 0.67 % land on the cap.
        let capped = draws.iter().filter(|&&x| x == 100_000).count();
        assert!((80..200).contains(&capped), "{capped}");
        // Mean of the truncated exponential: m·(1 − e^-5) ≈ 19.87 µs.
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean - 19_865.0).abs() < 600.0, "{mean}");
        let exact = TimerSpec::HighRes {
            slack: Duration::ZERO,
        };
        assert_eq!(lateness_ns(exact, &mut a), 0);
    }

    #[test]
    fn a_tick_is_never_before_the_request() {
        for hz in [100u32, 250, 300, 1000, 7] {
            for at in (0..50_000_000u64).step_by(999_983) {
                let f = fire_time_ns(TimerSpec::Hz(hz), at);
                assert!(
                    f >= at && f - at < 1_000_000_000 / hz as u64 + 1,
                    "{hz} {at} {f}"
                );
            }
        }
    }
}
