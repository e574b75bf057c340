//! Clocks and the lateness record of the real-time loop.

/// `CLOCK_MONOTONIC` in ns (the emulator's clock, the `t0_ns` origin).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` in ns since the Unix epoch (capture timestamps).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; clock_gettime cannot fail for
    // these clock ids on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sub-buckets per power of two: values are kept to within 1/16 (6 %).
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;

/// A log-linear histogram of event lateness (actual − due, ns): constant
/// memory however long the run, quantiles to within one bucket (≤ 6.25 %
/// of the value), exact count, sum and maximum.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    buckets: Vec<u64>,
    pub count: u64,
    pub sum_ns: u128,
    pub max_ns: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            buckets: vec![0; 65 * SUB],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = msb - SUB_BITS;
    let sub = ((v >> shift) as usize) & (SUB - 1);
    (shift as usize + 1) * SUB + sub
}

/// The largest value that falls in bucket `b`.
fn bucket_high(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let shift = (b / SUB - 1) as u32;
    let sub = (b % SUB) as u64;
    (((SUB as u64) | sub) << shift) + ((1u64 << shift) - 1)
}

impl LatencyHist {
    /// Adds `other`'s samples (the forwarder's threads each keep one).
    pub fn merge(&mut self, other: &LatencyHist) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets[bucket_of(ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// The `q`-quantile (0..=1), as the upper edge of its bucket (never
    /// above the maximum); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_high(b).min(self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_and_quantiles_are_within_a_sixteenth() {
        for v in [0u64, 1, 15, 16, 17, 100, 1_000, 123_456, u64::MAX / 2] {
            let b = bucket_of(v);
            assert!(bucket_high(b) >= v, "{v}");
            assert!(b == 0 || bucket_high(b - 1) < v, "{v}");
        }
        let mut h = LatencyHist::default();
        for v in 1..=1000u64 {
            h.record(v * 100);
        }
        let p50 = h.quantile(0.5);
        assert!((50_000..=53_200).contains(&p50), "{p50}");
        assert_eq!(h.quantile(1.0), 100_000);
        assert_eq!(h.max_ns, 100_000);
        assert_eq!(h.count, 1000);
    }
}
