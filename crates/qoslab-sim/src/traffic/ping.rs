//! `ping -i interval -s size`: ICMP echo request `k` leaves at
//! `start + k·interval`, `size + 28` bytes on the wire (IPv4 20 + ICMP 8,
//! iputils ping); the destination answers with an echo reply of the same
//! size; the RTT is reply arrival minus request departure. Unanswered
//! requests count as lost in the flow summary.

/// Successive echo requests of one ping source.
#[derive(Clone, Debug)]
pub struct PingClock {
    start_ns: u64,
    interval_ns: u64,
    seq: u32,
}

impl PingClock {
    pub fn new(start_ns: u64, interval_ns: u64) -> PingClock {
        PingClock {
            start_ns,
            interval_ns,
            seq: 0,
        }
    }

    /// (send time, ICMP sequence number) of the next request.
    pub fn next(&mut self) -> (u64, u32) {
        let t = self
            .start_ns
            .saturating_add((self.seq as u64).saturating_mul(self.interval_ns));
        let s = self.seq;
        self.seq = self.seq.wrapping_add(1);
        (t, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_evenly_spaced_and_numbered() {
        let mut p = PingClock::new(100, 200_000_000);
        assert_eq!(p.next(), (100, 0));
        assert_eq!(p.next(), (200_000_100, 1));
        assert_eq!(p.next(), (400_000_100, 2));
    }
}
