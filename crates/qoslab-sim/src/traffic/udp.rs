//! UDP send clocks: iperf3 `-u -b rate -l len` (constant bit rate) and
//! on/off.
//!
//! iperf3 paces UDP so that the *payload* bits sent so far never exceed
//! `rate × elapsed` (iperf3 src/iperf_api.c, `iperf_check_throttle`, which
//! counts `blksize` bytes per datagram): datagram `k` leaves at
//! `start + ⌊k · 8·len · 10⁹ / rate⌋` ns — exact intervals without drift.
//! On the wire each datagram is `len + 28` bytes (IPv4 + UDP headers).
//!
//! On/off: the same clock restarted at each on period; periods are fixed,
//! or drawn from exponentials with the given means (the usual ns-2/ns-3
//! `OnOffApplication` model) using the flow's own RNG stream.

use qoslab_core::rng::Rng;

/// Successive send times of one UDP source.
#[derive(Clone, Debug)]
pub struct UdpClock {
    payload_bits: u64,
    rate_bps: u64,
    on_start_ns: u64,
    on_end_ns: u64,
    k: u64,
    on_off: Option<OnOff>,
}

#[derive(Clone, Debug)]
struct OnOff {
    on_ns: u64,
    off_ns: u64,
    exponential: bool,
    rng: Rng,
}

impl OnOff {
    fn draw(&mut self, mean_ns: u64) -> u64 {
        if !self.exponential {
            return mean_ns;
        }
        // Inverse transform; 1 − U is in (0, 1] so ln is finite.
        let u = 1.0 - self.rng.next_f64();
        let x = -(mean_ns as f64) * u.ln();
        x.min(u64::MAX as f64 / 4.0) as u64
    }
}

impl UdpClock {
    /// A constant-bit-rate clock starting at `start_ns`.
    pub fn cbr(start_ns: u64, rate_bps: u64, payload_bytes: u32) -> UdpClock {
        UdpClock {
            payload_bits: payload_bytes as u64 * 8,
            rate_bps,
            on_start_ns: start_ns,
            on_end_ns: u64::MAX,
            k: 0,
            on_off: None,
        }
    }

    /// An on/off clock starting with an on period at `start_ns`.
    pub fn on_off(
        start_ns: u64,
        rate_bps: u64,
        payload_bytes: u32,
        on_ns: u64,
        off_ns: u64,
        exponential: bool,
        rng: Rng,
    ) -> UdpClock {
        let mut oo = OnOff {
            on_ns,
            off_ns,
            exponential,
            rng,
        };
        let first_on = oo.draw(on_ns);
        UdpClock {
            payload_bits: payload_bytes as u64 * 8,
            rate_bps,
            on_start_ns: start_ns,
            on_end_ns: start_ns.saturating_add(first_on),
            k: 0,
            on_off: Some(oo),
        }
    }

    /// The next send time (non-decreasing).
    pub fn next_ns(&mut self) -> u64 {
        loop {
            let off =
                self.k as u128 * self.payload_bits as u128 * 1_000_000_000 / self.rate_bps as u128;
            let t = self
                .on_start_ns
                .saturating_add(u64::try_from(off).unwrap_or(u64::MAX));
            if t < self.on_end_ns || self.on_end_ns == u64::MAX {
                self.k += 1;
                return t;
            }
            let Some(oo) = self.on_off.as_mut() else {
                return u64::MAX;
            };
            let off_ns = oo.draw(oo.off_ns);
            let on_ns = oo.draw(oo.on_ns).max(1);
            self.on_start_ns = self.on_end_ns.saturating_add(off_ns);
            self.on_end_ns = self.on_start_ns.saturating_add(on_ns);
            self.k = 0;
            if self.on_start_ns == u64::MAX {
                return u64::MAX;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbr_spaces_datagrams_exactly_without_drift() {
        // 1000 B payload at 3 Mbit/s: 2.666… ms apart.
        let mut c = UdpClock::cbr(5, 3_000_000, 1000);
        let t: Vec<u64> = (0..4).map(|_| c.next_ns()).collect();
        assert_eq!(t, [5, 2_666_671, 5_333_338, 8_000_005]);
        for _ in 4..3000 {
            c.next_ns();
        }
        assert_eq!(c.next_ns(), 5 + 8_000_000_000); // datagram 3000 at exactly 8 s
    }

    #[test]
    fn on_off_sends_only_in_on_periods() {
        let mut c = UdpClock::on_off(
            0,
            8_000_000,
            1000,
            3_000_000,
            2_000_000,
            false,
            Rng::new(1, 1),
        );
        // 1 ms apart; on [0,3), off [3,5), on [5,8) ms
        let t: Vec<u64> = (0..6).map(|_| c.next_ns() / 1_000_000).collect();
        assert_eq!(t, [0, 1, 2, 5, 6, 7]);
    }

    #[test]
    fn exponential_on_off_is_seeded_and_has_the_right_mean() {
        let mk = || {
            UdpClock::on_off(
                0,
                8_000_000,
                1000,
                10_000_000,
                10_000_000,
                true,
                Rng::new(9, 4),
            )
        };
        let (mut a, mut b) = (mk(), mk());
        let ta: Vec<u64> = (0..2000).map(|_| a.next_ns()).collect();
        let tb: Vec<u64> = (0..2000).map(|_| b.next_ns()).collect();
        assert_eq!(ta, tb);
        // Half the time on: 20000 datagrams at 1/ms take about 40 s.
        let mut c = mk();
        let mut last = 0;
        for _ in 0..20_000 {
            last = c.next_ns();
        }
        let s = last as f64 / 1e9;
        assert!((34.0..46.0).contains(&s), "{s}");
    }
}
