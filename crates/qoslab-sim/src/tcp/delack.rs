//! Linux's adaptive delayed-ACK timeout (`icsk_ack.ato`) on the jiffies
//! timer wheel.
//!
//! Linux does not hold an ACK for a fixed 40 ms. `tcp_event_data_recv`
//! (net/ipv4/tcp_input.c) keeps an estimate of the gap between in-order
//! data segments, `ato`, in jiffies: the first data segment sets it to
//! `TCP_ATO_MIN` (HZ/25, 40 ms); a later one `m` jiffies after the previous
//! one halves it and adds `TCP_ATO_MIN/2` when `m ≤ TCP_ATO_MIN/2`, or adds
//! `m` when `m < ato` (bounded by the RTO), and leaves it alone otherwise.
//! `tcp_send_delayed_ack` (net/ipv4/tcp_output.c) then arms the delayed-ACK
//! timer for `ato` jiffies, except that an `ato` above `TCP_DELACK_MIN` is
//! cut to the connection's smoothed RTT (at least `TCP_DELACK_MIN`, at most
//! HZ/2) and to `icsk_delack_max` (`TCP_DELACK_MAX`, 200 ms). The timer is a
//! `timer_list` (`sk_reset_timer`), so it runs at a tick of the timer
//! wheel, rounded up (see [`super::jiffies`]).
//!
//! The receiver's smoothed RTT is the handshake's: the passive side takes
//! one sample from the SYN-ACK to the ACK that completes the handshake
//! (`tcp_synack_rtt_meas`), and a pure receiver takes no other. Its RTO
//! (the bound on `ato`) is that first sample's: SRTT + max(2·SRTT, 200 ms)
//! (`tcp_rtt_estimator` on a first sample, `tcp_set_rto`; 1 s before it).
//!
//! Seen on Linux 6.18 through the emulator (one CUBIC flow through a
//! one-frame policer bucket, 50 ms RTT): a lone segment's ACK left the
//! receiver 52-56 ms after it, not 40 ms: `ato` had grown past the RTT
//! (13 jiffies at HZ 250) and the timer ran at the tick after.
//!
//! Left out: the shortcut that sends at once when a pending timer would run
//! within `ato/4` anyway, and `ICSK_ACK_PUSHED` (which only changes the
//! HZ/2 cap to 200 ms, above the RTT cap on any path modelled here).

use super::jiffies::{expiry_ns, to_jiffies};
use qoslab_core::{Duration, Instant};

/// `TCP_RTO_MIN`, the floor of the receiver's RTO.
const RTO_MIN: Duration = Duration::from_ms(200);
/// The receiver's RTO before its first RTT sample (`TCP_TIMEOUT_INIT`).
const RTO_INIT: Duration = Duration::from_secs(1);

/// One receiver's `ato` state.
#[derive(Clone, Debug)]
pub struct LinuxAto {
    hz: u32,
    levels: bool,
    /// `icsk_ack.ato` in jiffies; 0 before the first data segment.
    ato_j: u64,
    /// `icsk_ack.lrcvtime`: the jiffy of the last in-order data segment.
    lrcv_j: u64,
    /// The handshake's RTT sample (`srtt_us >> 3` after one sample).
    srtt: Option<Duration>,
}

impl LinuxAto {
    pub fn new(hz: u32, levels: bool) -> LinuxAto {
        LinuxAto {
            hz: hz.max(1),
            levels,
            ato_j: 0,
            lrcv_j: 0,
            srtt: None,
        }
    }

    /// `TCP_ATO_MIN` = `TCP_DELACK_MIN` = HZ/25 jiffies.
    fn ato_min_j(&self) -> u64 {
        u64::from(self.hz / 25).max(1)
    }

    fn jiffy(&self, now: Instant) -> u64 {
        now.as_ns() / super::jiffies::jiffy_ns(self.hz)
    }

    /// The receiver's RTO in jiffies (see the module comment).
    fn rto_j(&self) -> u64 {
        let rto = match self.srtt {
            Some(s) => s + (s + s).max(RTO_MIN),
            None => RTO_INIT,
        };
        to_jiffies(rto, self.hz)
    }

    /// The handshake completed `rtt` after the SYN-ACK was sent
    /// (`tcp_synack_rtt_meas`): the receiver's only RTT sample.
    pub fn on_handshake_rtt(&mut self, rtt: Duration) {
        if self.srtt.is_none() {
            self.srtt = Some(rtt);
        }
    }

    /// `tcp_event_data_recv`: an in-order data segment arrived at `now`.
    pub fn on_data(&mut self, now: Instant) {
        let now_j = self.jiffy(now);
        let min = self.ato_min_j();
        if self.ato_j == 0 {
            self.ato_j = min;
        } else {
            let m = now_j.saturating_sub(self.lrcv_j);
            if m <= min / 2 {
                self.ato_j = self.ato_j / 2 + min / 2;
            } else if m < self.ato_j {
                self.ato_j = (self.ato_j / 2 + m).min(self.rto_j());
            }
        }
        self.lrcv_j = now_j;
    }

    /// `tcp_send_delayed_ack`: when the delayed-ACK timer armed at `now`
    /// runs.
    pub fn timer_at(&self, now: Instant) -> Instant {
        let min = self.ato_min_j();
        let mut ato = self.ato_j.max(min);
        if ato > min {
            let mut max_ato = u64::from(self.hz / 2);
            if let Some(s) = self.srtt {
                max_ato = max_ato.min(to_jiffies(s, self.hz).max(min));
            }
            ato = ato.min(max_ato);
        }
        // icsk_delack_max = TCP_DELACK_MAX (HZ/5).
        ato = ato.min(u64::from(self.hz / 5).max(1));
        Instant::from_ns(expiry_ns(now.as_ns(), ato, self.hz, self.levels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_ns(ms * 1_000_000)
    }

    #[test]
    fn first_segment_waits_40_ms_to_the_next_tick() {
        let mut a = LinuxAto::new(250, true);
        a.on_handshake_rtt(Duration::from_ms(50));
        a.on_data(at_ms(1001));
        // ato 10 jiffies from tick 250 (1.000 s): expires 260, bucket 261.
        assert_eq!(a.timer_at(at_ms(1001)), at_ms(1044));
    }

    #[test]
    fn gaps_below_ato_grow_it_up_to_the_rtt() {
        let mut a = LinuxAto::new(250, true);
        a.on_handshake_rtt(Duration::from_ms(50));
        a.on_data(at_ms(0)); // ato 10
        a.on_data(at_ms(36)); // m 9 < 10: ato 5 + 9 = 14
        assert_eq!(a.ato_j, 14);
        // 14 jiffies > the RTT's 13 (50 ms rounded up): cut to 13.
        assert_eq!(a.timer_at(at_ms(36)), at_ms(4 * (9 + 13 + 1)));
        a.on_data(at_ms(40)); // m 1 ≤ 5: ato 7 + 5 = 12
        assert_eq!(a.ato_j, 12);
        a.on_data(at_ms(200)); // m 40 ≥ ato: unchanged
        assert_eq!(a.ato_j, 12);
        assert_eq!(a.timer_at(at_ms(200)), at_ms(4 * (50 + 12 + 1)));
    }

    #[test]
    fn without_an_rtt_the_cap_is_half_a_second_and_the_delack_max() {
        let mut a = LinuxAto::new(250, true);
        a.ato_j = 120;
        // min(120, HZ/2 = 125, TCP_DELACK_MAX = 50) = 50 jiffies.
        assert_eq!(a.timer_at(at_ms(0)), at_ms(4 * 51));
    }
}
