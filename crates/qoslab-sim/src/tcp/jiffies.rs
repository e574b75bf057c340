//! Linux's retransmission timer on the jiffies timer wheel.
//!
//! The RTO, the tail loss probe and RACK's reordering timer share one
//! `struct timer_list`, `icsk_retransmit_timer` (include/net/
//! inet_connection_sock.h), armed by `inet_csk_reset_xmit_timer` →
//! `sk_reset_timer(sk, timer, jiffies + when)` with `when` in whole
//! jiffies: `__tcp_set_rto` and `tcp_schedule_loss_probe` convert with
//! `usecs_to_jiffies`, which rounds up, and add `TCP_TIMEOUT_MIN` (2
//! jiffies) to the probe and the reordering timeout. `mod_timer` then puts
//! the timer in a bucket of the timer wheel (kernel/time/timer.c,
//! `calc_wheel_index` → `calc_index`): level `n` holds timeouts below
//! `LVL_START(n + 1)` = 63·8ⁿ jiffies with a granularity of 8ⁿ jiffies, and
//! the bucket's expiry is rounded *up* past the requested one ("The timer
//! wheel has to guarantee that a timer does not fire early ... Round up
//! with level granularity": `(expires >> LVL_SHIFT(lvl)) + 1`, shifted
//! back). The timer runs at that tick. At HZ = 250 an RTO of 250 ms (63
//! jiffies) lands on level 1 and fires 252-284 ms after it was armed, at a
//! 32 ms boundary of the jiffies clock: never a whole number of round trips
//! after the ACK that armed it, as an exact timer is on a fixed-delay path.

use qoslab_core::Duration;

/// `LVL_CLK_SHIFT`: each wheel level is 8 times coarser.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_SIZE - 1`: 64 buckets per level.
const LVL_LAST: u64 = 63;
/// `LVL_DEPTH` for HZ > 100.
const LVL_DEPTH: u32 = 9;

/// One jiffy at `hz`, in ns.
pub fn jiffy_ns(hz: u32) -> u64 {
    1_000_000_000 / u64::from(hz.max(1))
}

/// `usecs_to_jiffies`-style conversion: whole jiffies, rounded up.
pub fn to_jiffies(d: Duration, hz: u32) -> u64 {
    d.as_ns().div_ceil(jiffy_ns(hz))
}

/// When a timer armed at `now_ns` for `when` jiffies runs (ns): the tick
/// of its wheel bucket (`calc_wheel_index` with the base clock at the
/// current jiffy, the jiffies clock starting at 0 ns); with `levels` off,
/// the cascading wheel of Linux < 4.8, at the tick `jiffies + when` itself.
pub fn expiry_ns(now_ns: u64, when: u64, hz: u32, levels: bool) -> u64 {
    let j = jiffy_ns(hz);
    let clk = now_ns / j;
    let expires = clk + when;
    if !levels {
        return expires.saturating_mul(j);
    }
    let mut lvl = 0;
    while lvl + 1 < LVL_DEPTH && when >= LVL_LAST << (LVL_CLK_SHIFT * lvl) {
        lvl += 1;
    }
    let shift = LVL_CLK_SHIFT * lvl;
    let bucket = ((expires >> shift) + 1) << shift;
    bucket.saturating_mul(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_timers_round_to_the_next_tick_plus_one() {
        // 2 jiffies at HZ 250 from 1 ms into tick 0: expires 2, bucket 3.
        assert_eq!(expiry_ns(1_000_000, 2, 250, true), 12_000_000);
        assert_eq!(to_jiffies(Duration::from_ms(250), 250), 63);
        assert_eq!(to_jiffies(Duration::from_us(248_001), 250), 63);
        assert_eq!(to_jiffies(Duration::from_ms(248), 250), 62);
    }

    #[test]
    fn an_rto_of_63_jiffies_is_on_level_one() {
        // Armed at 2.501 s (tick 625): expires 688, level 1 (8 jiffies):
        // bucket 696 = 2.784 s, not 2.751 s.
        assert_eq!(expiry_ns(2_501_000_000, 63, 250, true), 2_784_000_000);
        // 62 jiffies stays on level 0: expires 687, bucket 688.
        assert_eq!(expiry_ns(2_501_000_000, 62, 250, true), 2_752_000_000);
        // 504 jiffies (2.016 s) is level 2, granularity 64.
        assert_eq!(expiry_ns(0, 504, 250, true), 512 * 4_000_000);
        // Before 4.8 the cascading wheel runs it at the jiffy asked for.
        assert_eq!(expiry_ns(2_501_000_000, 63, 250, false), 2_752_000_000);
    }
}
