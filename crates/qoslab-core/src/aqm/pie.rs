//! PIE, Proportional Integral controller Enhanced: RFC 8033 with the
//! arithmetic of Linux `net/sched/sch_pie.c` + `include/net/pie.h`
//! (`pie_drop_early`, `pie_process_dequeue`, `pie_calculate_probability`),
//! as configured by iproute2 `tc/q_pie.c` (`man tc-pie`).
//!
//! Every `tupdate` (RFC 8033 §4.2) the drop probability moves by
//! `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`, with alpha and
//! beta scaled down while `p` is small (Linux: ÷2 below 10 %, then a further
//! ÷4 per decade below 1 %, 0.1 %, … 0.0001 % — the RFC's auto-tuning
//! table), steps capped at +2 % once `p ≥ 10 %`, +2 % extra while `qdelay >
//! 250 ms`, and `p ·= 63/64` when the delay was 0 for two updates. With the
//! delay below target/2 twice and `p = 0` the controller resets (burst
//! allowance restored).
//!
//! Queue delay: **timestamp based** (RFC 8033 §5.1's alternative, Linux's
//! default `dq_rate_estimator` off): the sojourn of the last dequeued packet
//! (0 when the queue empties). The departure-rate estimator is left out.
//!
//! Drops at enqueue (`pie_drop_early`): none while burst allowance remains
//! (`max_burst` 150 ms, spent by dequeue time), while `qdelay < target/2`
//! and `p < 20 %`, or while fewer than 2·mtu bytes are queued. Otherwise,
//! with derandomisation (RFC 8033 §5.1 / Linux, default on) the accumulated
//! probability must reach 0.85 before any drop and forces one at 8.5;
//! between, drop with probability `p`. `derandomize off` drops with plain
//! probability `p`. `ecn`: mark instead of dropping while `p ≤ 10 %`
//! (every packet counts as ECN-capable; marks are counted). `bytemode`:
//! scale `p` by size/mtu.
//!
//! Linux arithmetic reproduced: time in psched ticks (64 ns; target 15 ms =
//! 234 375 ticks), `p` as a u64 fixed point with `MAX_PROB = 2^56 − 1`,
//! alpha/beta as tc integers in 1/16 (defaults 2 = 0.125, 20 = 1.25), random
//! draws `rand64 >> 8 < p` from a seeded [`crate::rng::Rng`] ([`PIE_STREAM`]).
//! The update timer first fires 500 ms after configuration (`pie_init`),
//! then every `tupdate` (`usecs_to_jiffies` with HZ = 1000: rounded up to
//! whole ms); here it runs lazily at the next enqueue/dequeue for every
//! period passed, over the backlog of that moment.
//!
//! Queue: at most `limit` packets (default 1000), tail drop (`overlimit`).

use super::{parse_limit_packets, AqmCounters};
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::rng::Rng;
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// Rng stream for PIE drop decisions ("PIE").
pub const PIE_STREAM: u64 = 0x50_49_45;
/// `MAX_PROB`: probability 1 in PIE's fixed point.
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// `PSCHED_SHIFT`: psched ticks are 64 ns.
const PSCHED_SHIFT: u32 = 6;
const TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;

#[inline(always)]
fn ticks(t: Instant) -> u64 {
    t.as_ns() >> PSCHED_SHIFT
}
fn ns2ticks(ns: u64) -> u64 {
    ns >> PSCHED_SHIFT
}

/// PIE parameters (`struct pie_params` + the burst allowance).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieParams {
    /// psched ticks.
    pub target: u64,
    /// ns (whole ms, as HZ = 1000 jiffies).
    pub tupdate_ns: u64,
    pub limit: u32,
    /// 1/16 units.
    pub alpha: u32,
    pub beta: u32,
    pub ecn: bool,
    pub bytemode: bool,
    pub derandomize: bool,
    /// psched ticks.
    pub max_burst: u64,
    pub mtu: u32,
}

/// PIE variables (`struct pie_vars`, timestamp mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieVars {
    /// psched ticks.
    pub qdelay: u64,
    pub qdelay_old: u64,
    pub burst_time: u64,
    pub dq_tstamp: Option<u64>,
    /// Fixed point, `MAX_PROB` = 1.
    pub prob: u64,
    pub accu_prob: u64,
}

impl PieVars {
    /// `pie_vars_init` (the probability and delays are kept).
    fn reset(&mut self, max_burst: u64) {
        self.burst_time = max_burst;
        self.dq_tstamp = None;
        self.accu_prob = 0;
    }
}

/// `pie_stats`, with bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieStats {
    pub packets_in: u64,
    /// Early drops.
    pub dropped: u64,
    pub dropped_bytes: u64,
    /// Tail drops at the packet limit.
    pub overlimit: u64,
    pub overlimit_bytes: u64,
    pub ecn_mark: u64,
    pub maxq: u32,
}

impl PieParams {
    /// One `pie_calculate_probability` step over `backlog` bytes.
    pub fn calculate_probability(&self, v: &mut PieVars, backlog: u64) {
        let qdelay = v.qdelay;
        let qdelay_old = v.qdelay_old;
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let mut alpha = (self.alpha as u64 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
        let mut beta = (self.beta as u64 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
        // RFC 8033 §4.2 auto-tuning by ranges of p.
        if v.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while v.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let mut delta: i64 = (alpha as i64).wrapping_mul(qdelay.wrapping_sub(self.target) as i64);
        delta =
            delta.wrapping_add((beta as i64).wrapping_mul(qdelay.wrapping_sub(qdelay_old) as i64));
        let oldprob = v.prob;
        // At most +2 % per step once p ≥ 10 %.
        if delta > (MAX_PROB / 50) as i64 && v.prob >= MAX_PROB / 10 {
            delta = (MAX_PROB / 100 * 2) as i64;
        }
        // Delay above 250 ms: +2 %.
        if qdelay > ns2ticks(250_000_000) {
            delta = delta.wrapping_add((MAX_PROB / 50) as i64);
        }
        v.prob = v.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if v.prob < oldprob {
                v.prob = MAX_PROB;
                update_prob = false;
            }
        } else if v.prob > oldprob {
            v.prob = 0;
        }
        // Delay 0 for two updates: p ·= 63/64.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            v.prob -= v.prob / 64;
        }
        v.qdelay = qdelay;
        if v.qdelay < self.target / 2 && v.qdelay_old < self.target / 2 && v.prob == 0 {
            v.reset(self.max_burst);
        }
        v.qdelay_old = qdelay;
    }

    /// `pie_drop_early` for a packet of `size` arriving to `backlog` bytes.
    pub fn drop_early(&self, v: &mut PieVars, backlog: u64, size: u32, rng: &mut Rng) -> bool {
        if v.burst_time > 0 {
            return false;
        }
        if v.qdelay < self.target / 2 && v.prob < MAX_PROB / 5 {
            return false;
        }
        if backlog < 2 * self.mtu as u64 {
            return false;
        }
        let local = if self.bytemode && size <= self.mtu {
            size as u64 * (v.prob / self.mtu as u64)
        } else {
            v.prob
        };
        if self.derandomize {
            if local == 0 {
                v.accu_prob = 0;
            } else {
                v.accu_prob = v.accu_prob.wrapping_add(local);
            }
            if v.accu_prob < (MAX_PROB / 100) * 85 {
                return false;
            }
            if v.accu_prob >= (MAX_PROB / 2) * 17 {
                return true;
            }
        }
        if (rng.next_u64() >> 8) < local {
            v.accu_prob = 0;
            return true;
        }
        false
    }
}

/// The `pie` qdisc.
#[derive(Clone, Debug)]
pub struct Pie {
    queue: VecDeque<(Packet, Instant)>,
    backlog_bytes: u64,
    params: PieParams,
    vars: PieVars,
    stats: PieStats,
    rng: Rng,
    next_update_ns: u64,
    target: Duration,
    seed: u64,
}

impl Pie {
    /// Validates like tc-pie: `target` and `tupdate` > 0, `limit` ≥ 1,
    /// `alpha`, `beta` in 0..=32 (sixteenths).
    pub fn new(mut params: PieParams, target: Duration, seed: u64) -> Result<Self, ConfigError> {
        if params.target == 0 {
            return Err(ConfigError::new(
                "target",
                format!("{target} is below PIE's 64ns clock tick"),
            ));
        }
        if params.tupdate_ns == 0 {
            return Err(ConfigError::new("tupdate", "must be greater than zero"));
        }
        if params.limit == 0 {
            return Err(ConfigError::new("limit", "must be at least 1 packet"));
        }
        for (k, v) in [("alpha", params.alpha), ("beta", params.beta)] {
            if v > 32 {
                return Err(ConfigError::new(
                    k,
                    format!("{v} is out of range: tc takes 0..32 in units of 1/16 (2 = 0.125)"),
                ));
            }
        }
        params.mtu = params.mtu.max(1);
        let vars = PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: params.max_burst,
            dq_tstamp: None,
            prob: 0,
            accu_prob: 0,
        };
        Ok(Pie {
            queue: VecDeque::with_capacity(params.limit.min(1 << 16) as usize),
            backlog_bytes: 0,
            params,
            vars,
            stats: PieStats::default(),
            rng: Rng::new(seed, PIE_STREAM),
            // pie_init: first update HZ/2 after configuration.
            next_update_ns: 500_000_000,
            target,
            seed,
        })
    }

    /// Reads tc-pie keys: `limit` (packets, 1000), `target` (15ms),
    /// `tupdate` (15ms), `alpha` (2), `beta` (20) in 1/16, `ecn`,
    /// `bytemode` (false), plus `max-burst` (150ms, RFC 8033), `derandomize`
    /// (true), `mtu` (1514 bytes), `seed` (1).
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let limit = parse_limit_packets(p, "limit", 1000)?;
        let target = p.opt_time("target")?.unwrap_or(Duration::from_ms(15));
        let tupdate = p.opt_time("tupdate")?.unwrap_or(Duration::from_ms(15));
        let sixteenths = |p: &mut Params, k: &'static str, d: u32| -> Result<u32, ConfigError> {
            Ok(p.opt_u64(k)?.map_or(d, |v| v.min(u32::MAX as u64) as u32))
        };
        let alpha = sixteenths(p, "alpha", 2)?;
        let beta = sixteenths(p, "beta", 20)?;
        let max_burst = p.opt_time("max-burst")?.unwrap_or(Duration::from_ms(150));
        let mtu = match p.opt_size("mtu")? {
            None => super::codel::ETHERNET_PSCHED_MTU,
            Some(m) => u32::try_from(m.get())
                .map_err(|_| ConfigError::new("mtu", format!("{m} is above 4294967295B")))?,
        };
        // tc sends whole µs; the kernel converts target to ticks and tupdate to jiffies.
        let us = |d: Duration| d.as_ns() / 1_000;
        let params = PieParams {
            target: ns2ticks(us(target) * 1_000),
            tupdate_ns: us(tupdate).div_ceil(1_000) * 1_000_000,
            limit,
            alpha,
            beta,
            ecn: p.opt_bool("ecn")?.unwrap_or(false),
            bytemode: p.opt_bool("bytemode")?.unwrap_or(false),
            derandomize: p.opt_bool("derandomize")?.unwrap_or(true),
            max_burst: ns2ticks(max_burst.as_ns()),
            mtu,
        };
        let seed = p.opt_u64("seed")?.unwrap_or(1);
        Self::new(params, target, seed)
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }
    pub fn stats(&self) -> &PieStats {
        &self.stats
    }
    /// The drop probability in [0, 1] (Linux lets it pass 1 slightly).
    pub fn prob(&self) -> f64 {
        self.vars.prob as f64 / MAX_PROB as f64
    }
    pub fn counters(&self) -> AqmCounters {
        AqmCounters {
            tail_drops: self.stats.overlimit,
            tail_drop_bytes: self.stats.overlimit_bytes,
            early_drops: self.stats.dropped,
            early_drop_bytes: self.stats.dropped_bytes,
            marks: self.stats.ecn_mark,
            ..AqmCounters::default()
        }
    }

    /// The update timer, for every period up to `now`.
    ///
    /// A period's step depends only on `vars` and the backlog, and neither
    /// changes between two calls, so once a step leaves `vars` unchanged
    /// (an idle queue once `p` has decayed to 0) every further period up to
    /// `now` would too: they are skipped in one jump. Exact, and it makes a
    /// trace whose first packet is at a Unix-epoch time (≈ 10^11 periods
    /// from t = 0) take constant time instead of an hour (issue 15).
    #[inline]
    fn update(&mut self, now: Instant) {
        let period = self.params.tupdate_ns;
        while self.next_update_ns <= now.as_ns() {
            let before = self.vars;
            self.params
                .calculate_probability(&mut self.vars, self.backlog_bytes);
            self.next_update_ns = self.next_update_ns.saturating_add(period);
            if self.vars == before && self.next_update_ns <= now.as_ns() {
                let behind = (now.as_ns() - self.next_update_ns) / period + 1;
                self.next_update_ns = self
                    .next_update_ns
                    .saturating_add(behind.saturating_mul(period));
            }
        }
    }
}

impl Shaper for Pie {
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.update(now);
        let len = pkt.size_bytes;
        let refuse = |s: &mut Self, pkt, reason| {
            s.vars.accu_prob = 0;
            Err(Dropped {
                packet: pkt,
                reason,
            })
        };
        if self.queue.len() >= self.params.limit as usize {
            self.stats.overlimit += 1;
            self.stats.overlimit_bytes += len as u64;
            return refuse(self, pkt, DropReason::QueueFull);
        }
        if self
            .params
            .drop_early(&mut self.vars, self.backlog_bytes, len, &mut self.rng)
        {
            if self.params.ecn && self.vars.prob <= MAX_PROB / 10 {
                self.stats.ecn_mark += 1;
            } else {
                self.stats.dropped += 1;
                self.stats.dropped_bytes += len as u64;
                return refuse(self, pkt, DropReason::Early);
            }
        }
        self.stats.packets_in += 1;
        self.stats.maxq = self.stats.maxq.max(self.queue.len() as u32);
        self.backlog_bytes += len as u64;
        self.queue.push_back((pkt, now));
        Ok(())
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.update(now);
        let (p, enq) = self.queue.pop_front()?;
        self.backlog_bytes -= p.size_bytes as u64;
        // pie_process_dequeue, timestamp mode.
        let now_t = ticks(now);
        let v = &mut self.vars;
        v.qdelay = now_t.saturating_sub(ticks(enq));
        let dtime = v.dq_tstamp.map_or(0, |t| now_t.saturating_sub(t));
        v.dq_tstamp = Some(now_t);
        if self.backlog_bytes == 0 {
            v.qdelay = 0;
        }
        if dtime > 0 {
            v.burst_time = v.burst_time.saturating_sub(dtime);
        }
        Some(p)
    }

    super::fifo_accessors!();

    fn describe(&self) -> Vec<(&'static str, String)> {
        let p = &self.params;
        vec![
            ("kind", "pie".into()),
            (
                "source",
                "RFC 8033; Linux net/sched/sch_pie.c + include/net/pie.h".into(),
            ),
            ("limit", format!("{}p", p.limit)),
            ("target", self.target.to_string()),
            ("target_ticks", p.target.to_string()),
            ("tupdate", Duration::from_ns(p.tupdate_ns).to_string()),
            (
                "alpha",
                format!("{} ({}/16)", p.alpha as f64 / 16.0, p.alpha),
            ),
            ("beta", format!("{} ({}/16)", p.beta as f64 / 16.0, p.beta)),
            (
                "max_burst",
                Duration::from_ns(p.max_burst << PSCHED_SHIFT).to_string(),
            ),
            ("qdelay", "timestamp (dq_rate_estimator off)".into()),
            ("derandomize", p.derandomize.to_string()),
            ("ecn", p.ecn.to_string()),
            ("bytemode", p.bytemode.to_string()),
            ("mtu", format!("{}B", p.mtu)),
            ("seed", self.seed.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pie(pairs: &[(&str, &str)]) -> Result<Pie, ConfigError> {
        super::super::build("pie", pairs, Pie::from_params)
    }

    #[test]
    fn defaults_and_checks() {
        let q = pie(&[]).unwrap();
        assert_eq!(q.params.target, 234_375);
        assert_eq!(q.params.tupdate_ns, 15_000_000);
        assert_eq!(q.params.max_burst, 2_343_750);
        assert_eq!(
            (q.params.alpha, q.params.beta, q.params.limit),
            (2, 20, 1000)
        );
        assert_eq!(pie(&[("alpha", "33")]).unwrap_err().param, "alpha");
        assert_eq!(pie(&[("target", "0")]).unwrap_err().param, "target");
        assert_eq!(pie(&[("tupdate", "0")]).unwrap_err().param, "tupdate");
        assert_eq!(pie(&[("limit", "0")]).unwrap_err().param, "limit");
        assert_eq!(
            pie(&[("tupdate", "1500us")]).unwrap().params.tupdate_ns,
            2_000_000
        );
    }

    /// RFC 8033 §4.2: with p below 0.1 %, alpha and beta are divided by 32
    /// (÷2, ÷4 below 1 %, ÷4 below 0.1 %); check one update by hand.
    #[test]
    fn auto_tuning_scales_the_step_by_probability_range() {
        let q = pie(&[]).unwrap();
        let p = q.params;
        let unit = (MAX_PROB / TICKS_PER_SEC) >> 4; // per tick per 1/16
        for (prob, shift) in [
            (MAX_PROB / 2, 0),
            (MAX_PROB / 20, 1),
            (MAX_PROB / 200, 3),
            (MAX_PROB / 2000, 5),
        ] {
            let mut v = PieVars {
                qdelay: p.target + 1000,
                qdelay_old: p.target + 1000,
                burst_time: 0,
                dq_tstamp: None,
                prob,
                accu_prob: 0,
            };
            p.calculate_probability(&mut v, 100_000);
            let alpha = ((2 * (MAX_PROB / TICKS_PER_SEC)) >> 4) >> shift;
            let want = prob + alpha * 1000;
            assert_eq!(v.prob, want, "prob {prob}");
            assert!(unit > 0);
        }
    }

    /// The idle-period skip of `update` gives exactly the state of stepping
    /// every period, and a first packet at a Unix-epoch time is quick.
    #[test]
    fn idle_periods_are_skipped_exactly() {
        let mut q = pie(&[("limit", "100000")]).unwrap();
        let mut t = 0u64;
        for id in 0..30_000u64 {
            let _ = q.enqueue(Instant::from_ns(t), Packet::new(id, 1000));
            if id % 2 == 0 {
                q.dequeue(Instant::from_ns(t));
            }
            t += 100_000;
        }
        while q.dequeue(Instant::from_ns(t)).is_some() {
            t += 200_000;
        }
        assert!(q.prob() > 0.0);
        let mut naive = q.clone();
        let later = t + 60_000_000_000; // 4000 periods: p decays to 0 on the way
        while naive.next_update_ns <= later {
            naive
                .params
                .calculate_probability(&mut naive.vars, naive.backlog_bytes);
            naive.next_update_ns += naive.params.tupdate_ns;
        }
        q.update(Instant::from_ns(later));
        assert_eq!(q.vars, naive.vars);
        assert_eq!(q.next_update_ns, naive.next_update_ns);
        // 1.7e18 ns (2023 as Unix time): ~10^11 periods, skipped.
        let mut e = pie(&[]).unwrap();
        let epoch = 1_700_000_000_000_000_000u64;
        assert!(e
            .enqueue(Instant::from_ns(epoch), Packet::new(0, 1000))
            .is_ok());
        assert!(e.next_update_ns > epoch && e.next_update_ns <= epoch + e.params.tupdate_ns);
    }

    /// Arrivals at twice the service rate: no drop within the burst
    /// allowance, then p rises and PIE drops; once arrivals stop and the
    /// queue empties, p decays.
    #[test]
    fn probability_rises_under_overload_and_decays_when_idle() {
        let mut q = pie(&[("limit", "100000")]).unwrap();
        let mut t = 0u64;
        let mut id = 0u64;
        let mut drops_in_burst = 0;
        // 1000 B every 100 µs in, one out every 200 µs: 40 Mbit/s service.
        while t < 3_000_000_000 {
            let r = q.enqueue(Instant::from_ns(t), Packet::new(id, 1000));
            if r.is_err() && t < 150_000_000 {
                drops_in_burst += 1;
            }
            id += 1;
            if id % 2 == 0 {
                q.dequeue(Instant::from_ns(t));
            }
            t += 100_000;
        }
        assert_eq!(drops_in_burst, 0);
        let peak = q.prob();
        assert!(peak > 0.2, "p = {peak}");
        assert!(q.stats.dropped > 1000);
        // Drain, then stay idle.
        while q.dequeue(Instant::from_ns(t)).is_some() {
            t += 200_000;
        }
        let drained = q.prob();
        q.dequeue(Instant::from_ns(t + 2_000_000_000));
        let later = q.prob();
        assert!(later < drained / 4.0, "{peak} → {drained} → {later}");
    }

    /// With derandomisation no drop happens until the accumulated
    /// probability reaches 0.85: at p = 0.1 the first 8 eligible arrivals
    /// always pass; without it, drops are plain Bernoulli(p).
    #[test]
    fn derandomization_spaces_drops() {
        let q = pie(&[]).unwrap();
        let mut rng = Rng::new(1, PIE_STREAM);
        let mut v = PieVars {
            qdelay: q.params.target,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: None,
            prob: MAX_PROB / 10,
            accu_prob: 0,
        };
        for _ in 0..1000 {
            let mut n = 0;
            while !q.params.drop_early(&mut v, 100_000, 1000, &mut rng) {
                n += 1;
            }
            v.accu_prob = 0; // pie_qdisc_enqueue resets it on every drop
            assert!((8..=85).contains(&n), "{n}");
        }
        let p = PieParams {
            derandomize: false,
            ..q.params
        };
        let hits = (0..100_000)
            .filter(|_| p.drop_early(&mut v, 100_000, 1000, &mut rng))
            .count();
        assert!((9_500..10_500).contains(&hits), "{hits}");
        // Fewer than 2 MTU queued: never.
        assert!(!(0..1000).any(|_| q.params.drop_early(&mut v, 3000, 1000, &mut rng)));
    }
}
