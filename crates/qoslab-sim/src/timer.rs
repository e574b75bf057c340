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
//! TCP's own timers (RTO, delayed ACK, pacing) are hrtimers in Linux and are
//! not routed through this: they fire exactly.

use crate::config::TimerSpec;

/// The firing time of a timer requested for `at_ns` on a node with `spec`.
#[inline]
pub fn fire_time_ns(spec: TimerSpec, at_ns: u64) -> u64 {
    match spec {
        TimerSpec::HighRes { slack } => at_ns.saturating_add(slack.as_ns()),
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
