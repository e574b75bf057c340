//! CoDel, Controlled Delay AQM: RFC 8289 with the arithmetic of Linux
//! `include/net/codel.h` + `include/net/codel_impl.h` (`codel_dequeue`,
//! `codel_should_drop`, `codel_Newton_step`, `codel_control_law`) and the
//! qdisc of `net/sched/sch_codel.c` as configured by iproute2 `tc/q_codel.c`.
//!
//! Algorithm (RFC 8289 §3, §5): each packet is stamped at enqueue; at
//! dequeue its sojourn time is compared with `target`. Once the sojourn has
//! stayed at or above `target` for `interval` (and more than one MTU is
//! queued), CoDel enters the dropping state and drops the head packet; it
//! then drops again at `drop_next`, advanced by the control law
//! `interval / sqrt(count)`, until a packet's sojourn falls below `target`.
//! Re-entering the dropping state soon after leaving it (`now − drop_next <
//! 16·interval`) restarts from `count − lastcount` instead of 1 (RFC 8289
//! §5.5 pseudocode; Linux `codel_dequeue`).
//!
//! Linux details reproduced exactly:
//! - Time is `ns >> 10` in a `u32` (1024 ns units, wrapping, compared with
//!   serial-number arithmetic: `codel_time_after`). Sojourn times, `target`,
//!   `interval`, `ce_threshold` are in these units; tc sends times in whole
//!   µs and the kernel converts `µs·1000 >> 10` (so 5 ms = 4882 units =
//!   4 999 168 ns).
//! - `1/sqrt(count)` is kept as a Q0.16 `rec_inv_sqrt` and refined by one
//!   Newton step per count change (`codel_Newton_step`); the control law is
//!   `t + (interval · (rec_inv_sqrt << 16)) >> 32` (`reciprocal_scale`).
//! - `codel_should_drop` never drops while the backlog after removing the
//!   head is ≤ `mtu` bytes (Linux passes the qdisc backlog; `mtu` is
//!   `psched_mtu(dev)` = device MTU + link header, 1514 on Ethernet).
//! - `ce_threshold` (optional): a dequeued packet whose sojourn exceeds it is
//!   CE-marked (counted in [`CodelStats::ce_mark`]).
//! - `ecn`: instead of dropping, mark. Packets carry no ECN field here, so
//!   every packet counts as ECN-capable: a "mark" is counted in
//!   [`CodelStats::ecn_mark`] and the packet is transmitted.
//!
//! Qdisc (`sch_codel.c`): a FIFO of at most `limit` packets (default 1000,
//! tail drop beyond → [`DropReason::QueueFull`]); CoDel runs at dequeue.
//!
//! ## Reusing the state machine (FQ-CoDel)
//!
//! [`CodelState`] is one CoDel instance's variables (`struct codel_vars`),
//! independent of any queue; [`CodelParams`] the shared parameters;
//! [`CodelStats`] the shared counters. To run CoDel over your own queue,
//! implement [`CodelQueue`] (pop the head with its enqueue instant, report
//! the backlog the drop test should see, take dropped packets) and call
//! [`CodelState::dequeue`] — exactly how `fq_codel` calls `codel_dequeue`
//! per flow with the qdisc-wide backlog. [`CodelState::should_drop`] is the
//! bare per-packet decision on a sojourn time, for callers that loop
//! themselves.
//!
//! ## Dequeue drops
//!
//! CoDel drops at dequeue, so [`Shaper::dequeue`] may discard packets and
//! even return `None` although [`Shaper::next_ready`] said a packet was
//! ready (all of them were dropped). Dropped packets are kept in order in a
//! buffer the caller drains with [`Codel::take_dropped`]; it grows only
//! while nobody drains it.
//!
//! Left out: GSO, the `drop_batch`/memory limits of fq_codel (not CoDel),
//! `ce_threshold_selector/mask` (DSCP-selective CE marking), and the
//! 256-drops-per-dequeue resync cap of the newest kernels.

use super::{parse_limit_packets, AqmCounters};
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// `CODEL_SHIFT`: CoDel's clock ticks every 2^10 ns.
pub const CODEL_SHIFT: u32 = 10;
/// `REC_INV_SQRT_SHIFT`: `rec_inv_sqrt` is Q0.16, widened to Q0.32 by this.
const REC_INV_SQRT_SHIFT: u32 = 16;
/// `CODEL_DISABLED_THRESHOLD` (`INT_MAX`): no CE threshold.
const CE_DISABLED: u32 = i32::MAX as u32;

/// `codel_get_time`: the caller's instant in 1024 ns units, wrapping.
#[inline(always)]
pub fn codel_time(now: Instant) -> u32 {
    (now.as_ns() >> CODEL_SHIFT) as u32
}
#[inline(always)]
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
#[inline(always)]
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}
#[inline(always)]
fn before(a: u32, b: u32) -> bool {
    after(b, a)
}

/// tc sends a time as whole µs; the kernel stores `µs·1000 >> 10`.
fn units_from_tc(d: Duration) -> u64 {
    ((d.as_ns() / 1_000) * 1_000) >> CODEL_SHIFT
}

/// CoDel parameters (`struct codel_params`), times in 1024 ns units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    target: u32,
    interval: u32,
    ce_threshold: u32,
    mtu: u32,
    ecn: bool,
}

impl CodelParams {
    /// RFC 8289 §4.4 / `codel_params_init`: target 5 ms, interval 100 ms, no
    /// CE threshold, no ECN, with `mtu_bytes` as the minimum backlog.
    pub fn rfc8289(mtu_bytes: u32) -> Self {
        Self::new(
            Duration::from_ms(5),
            Duration::from_ms(100),
            None,
            mtu_bytes,
            false,
        )
        .expect("the RFC defaults are valid")
    }

    /// Converts times as tc + the kernel do (whole µs, then 1024 ns units)
    /// and checks them: `target` and `interval` must be at least 1 unit and
    /// `16·interval` must fit CoDel's signed 32-bit clock comparisons.
    pub fn new(
        target: Duration,
        interval: Duration,
        ce_threshold: Option<Duration>,
        mtu_bytes: u32,
        ecn: bool,
    ) -> Result<Self, ConfigError> {
        // 16·interval must stay below 2^31 units (codel_time_before on it).
        const MAX_INTERVAL_UNITS: u64 = (1 << 31) / 16 - 1;
        let t = units_from_tc(target);
        if t == 0 {
            return Err(ConfigError::new(
                "target",
                format!("{target} is below CoDel's clock unit of 1024ns; give at least 2us"),
            ));
        }
        let i = units_from_tc(interval);
        if i == 0 {
            return Err(ConfigError::new(
                "interval",
                format!("{interval} is below CoDel's clock unit of 1024ns; give at least 2us"),
            ));
        }
        if i > MAX_INTERVAL_UNITS {
            return Err(ConfigError::new(
                "interval",
                format!("{interval} is too long: 16 intervals must fit CoDel's 2199s clock (at most 137s)"),
            ));
        }
        if t >= CE_DISABLED as u64 {
            return Err(ConfigError::new("target", format!("{target} is too long")));
        }
        let ce = match ce_threshold {
            None => CE_DISABLED,
            Some(c) => {
                let u = units_from_tc(c);
                if u >= CE_DISABLED as u64 {
                    return Err(ConfigError::new(
                        "ce-threshold",
                        format!("{c} is too long for CoDel's clock"),
                    ));
                }
                u as u32
            }
        };
        Ok(CodelParams {
            target: t as u32,
            interval: i as u32,
            ce_threshold: ce,
            mtu: mtu_bytes,
            ecn,
        })
    }

    /// `target` in 1024 ns units.
    pub fn target_units(&self) -> u32 {
        self.target
    }
    /// `interval` in 1024 ns units.
    pub fn interval_units(&self) -> u32 {
        self.interval
    }
    /// `target` in ns as the kernel holds it (`units << 10`).
    pub fn target_ns(&self) -> u64 {
        (self.target as u64) << CODEL_SHIFT
    }
    /// `interval` in ns as the kernel holds it.
    pub fn interval_ns(&self) -> u64 {
        (self.interval as u64) << CODEL_SHIFT
    }
    /// The CE threshold in ns, if set.
    pub fn ce_threshold_ns(&self) -> Option<u64> {
        (self.ce_threshold != CE_DISABLED).then_some((self.ce_threshold as u64) << CODEL_SHIFT)
    }
    pub fn mtu_bytes(&self) -> u32 {
        self.mtu
    }
    pub fn ecn(&self) -> bool {
        self.ecn
    }
}

/// Counters shared by CoDel instances (`struct codel_stats`), cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen at dequeue, bytes.
    pub maxpacket: u32,
    /// Packets dropped by the control law.
    pub drop_count: u64,
    /// Bytes dropped by the control law.
    pub drop_bytes: u64,
    /// Packets ECN-marked instead of dropped (`ecn` on).
    pub ecn_mark: u64,
    /// Packets CE-marked because their sojourn exceeded `ce_threshold`.
    pub ce_mark: u64,
}

/// The queue CoDel runs over: what `codel_dequeue`'s callbacks do.
pub trait CodelQueue {
    /// Removes the head packet, returning it with its enqueue instant.
    fn codel_pop(&mut self) -> Option<(Packet, Instant)>;
    /// The backlog the drop test compares with `mtu`, in bytes, *after* the
    /// pop (Linux: the qdisc's `qstats.backlog`; fq_codel: the whole qdisc).
    fn codel_backlog_bytes(&self) -> u64;
    /// Receives a packet the control law dropped.
    fn codel_drop(&mut self, pkt: Packet);
}

/// One CoDel instance's variables (`struct codel_vars`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelState {
    /// Drops since entering the dropping state (control-law index).
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// `1/sqrt(count)` as Q0.16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn went (or will have been) above target for an
    /// interval; 0 = below target.
    pub first_above_time: u32,
    /// When to drop next (or when the last drop was), 1024 ns units.
    pub drop_next: u32,
    /// Sojourn time of the last packet examined, 1024 ns units.
    pub ldelay: u32,
}

impl CodelState {
    pub fn new() -> Self {
        CodelState::default()
    }

    /// `codel_Newton_step`: one Newton iteration of
    /// `r ← r/2 · (3 − count·r²)` in Q0.32, stored back as Q0.16.
    pub fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2 as u64);
        val >>= 2; // keeps the next product within 64 bits
        val = (val.wrapping_mul(invsqrt as u64)) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// `codel_control_law`: `t + interval / sqrt(count)` via `rec_inv_sqrt`.
    #[inline]
    pub fn control_law(t: u32, interval: u32, rec_inv_sqrt: u16) -> u32 {
        let scale = (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        t.wrapping_add(((interval as u64 * scale as u64) >> 32) as u32)
    }

    /// `codel_should_drop` for a packet of `len_bytes` enqueued at
    /// `enqueued_at`, examined at `now` (codel units) with `backlog_bytes`
    /// left behind it. Updates `ldelay`, `first_above_time` and
    /// `stats.maxpacket`; true once the sojourn has stayed ≥ target for
    /// more than an interval.
    pub fn should_drop(
        &mut self,
        params: &CodelParams,
        stats: &mut CodelStats,
        now: u32,
        enqueued_at: Instant,
        len_bytes: u32,
        backlog_bytes: u64,
    ) -> bool {
        self.ldelay = now.wrapping_sub(codel_time(enqueued_at));
        stats.maxpacket = stats.maxpacket.max(len_bytes);
        if before(self.ldelay, params.target) || backlog_bytes <= params.mtu as u64 {
            // Went below: must stay above for a whole interval again.
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now.wrapping_add(params.interval);
            false
        } else {
            after(now, self.first_above_time)
        }
    }

    /// `should_drop` on the freshly popped head (or none: queue empty).
    fn should_drop_head<Q: CodelQueue>(
        &mut self,
        params: &CodelParams,
        stats: &mut CodelStats,
        now: u32,
        head: Option<&(Packet, Instant)>,
        q: &Q,
    ) -> bool {
        match head {
            None => {
                self.first_above_time = 0;
                false
            }
            Some((p, t)) => self.should_drop(
                params,
                stats,
                now,
                *t,
                p.size_bytes,
                q.codel_backlog_bytes(),
            ),
        }
    }

    /// `codel_dequeue`: pops from `q`, dropping (or ECN-marking) per the
    /// control law, and returns the packet to transmit, if any.
    pub fn dequeue<Q: CodelQueue>(
        &mut self,
        params: &CodelParams,
        stats: &mut CodelStats,
        now: Instant,
        q: &mut Q,
    ) -> Option<Packet> {
        let Some(mut head) = q.codel_pop() else {
            self.dropping = false;
            return None;
        };
        let now = codel_time(now);
        let drop = self.should_drop_head(params, stats, now, Some(&head), q);
        let mut out = Some(head);
        if self.dropping {
            if !drop {
                // Sojourn below target: leave the dropping state.
                self.dropping = false;
            } else if after_eq(now, self.drop_next) {
                // Drop, and keep dropping while the schedule is behind `now`.
                while self.dropping && after_eq(now, self.drop_next) {
                    self.count = self.count.wrapping_add(1);
                    self.newton_step();
                    if params.ecn {
                        stats.ecn_mark += 1;
                        self.drop_next =
                            Self::control_law(self.drop_next, params.interval, self.rec_inv_sqrt);
                        return self.finish(params, stats, out);
                    }
                    let (p, _) = out.take().expect("a head packet is held here");
                    stats.drop_bytes += p.size_bytes as u64;
                    stats.drop_count += 1;
                    q.codel_drop(p);
                    out = q.codel_pop();
                    if !self.should_drop_head(params, stats, now, out.as_ref(), q) {
                        self.dropping = false;
                    } else {
                        self.drop_next =
                            Self::control_law(self.drop_next, params.interval, self.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            if params.ecn {
                stats.ecn_mark += 1;
            } else {
                head = out.take().expect("a head packet is held here");
                stats.drop_bytes += head.0.size_bytes as u64;
                stats.drop_count += 1;
                q.codel_drop(head.0);
                out = q.codel_pop();
                // Linux re-evaluates (updating ldelay / first_above_time).
                self.should_drop_head(params, stats, now, out.as_ref(), q);
            }
            self.dropping = true;
            // RFC 8289 §5.5: if we were dropping recently, resume near the
            // drop rate that controlled the queue last time.
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1
                && before(
                    now.wrapping_sub(self.drop_next),
                    params.interval.wrapping_mul(16),
                )
            {
                self.count = delta;
                self.newton_step();
            } else {
                self.count = 1;
                self.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
            }
            self.lastcount = self.count;
            self.drop_next = Self::control_law(now, params.interval, self.rec_inv_sqrt);
        }
        self.finish(params, stats, out)
    }

    /// The `end:` label: CE-mark above `ce_threshold`, hand the packet out.
    #[inline]
    fn finish(
        &self,
        params: &CodelParams,
        stats: &mut CodelStats,
        out: Option<(Packet, Instant)>,
    ) -> Option<Packet> {
        let (p, _) = out?;
        if after(self.ldelay, params.ce_threshold) {
            stats.ce_mark += 1;
        }
        Some(p)
    }
}

/// The `codel` qdisc: a packet-limited FIFO with CoDel at dequeue.
#[derive(Clone, Debug)]
pub struct Codel {
    queue: VecDeque<(Packet, Instant)>,
    backlog_bytes: u64,
    limit_packets: u32,
    params: CodelParams,
    state: CodelState,
    stats: CodelStats,
    counters: AqmCounters,
    dropped: Vec<Dropped>,
    // As configured, for describe().
    target: Duration,
    interval: Duration,
}

/// `DEFAULT_CODEL_LIMIT` (sch_codel.c).
pub const CODEL_DEFAULT_LIMIT: u32 = 1000;
/// `psched_mtu` of an Ethernet device: 1500 + 14.
pub const ETHERNET_PSCHED_MTU: u32 = 1514;

/// The queue view `CodelState::dequeue` works on inside [`Codel`].
struct Fifo<'a> {
    queue: &'a mut VecDeque<(Packet, Instant)>,
    backlog_bytes: &'a mut u64,
    dropped: &'a mut Vec<Dropped>,
}

impl CodelQueue for Fifo<'_> {
    #[inline]
    fn codel_pop(&mut self) -> Option<(Packet, Instant)> {
        let e = self.queue.pop_front()?;
        *self.backlog_bytes -= e.0.size_bytes as u64;
        Some(e)
    }
    #[inline]
    fn codel_backlog_bytes(&self) -> u64 {
        *self.backlog_bytes
    }
    #[inline]
    fn codel_drop(&mut self, pkt: Packet) {
        self.dropped.push(Dropped {
            packet: pkt,
            reason: DropReason::Early,
        });
    }
}

impl Codel {
    pub fn new(
        limit_packets: u32,
        target: Duration,
        interval: Duration,
        ce_threshold: Option<Duration>,
        mtu_bytes: u32,
        ecn: bool,
    ) -> Result<Self, ConfigError> {
        if limit_packets == 0 {
            return Err(ConfigError::new(
                "limit",
                "must be at least 1 packet (a 0-packet CoDel drops everything)",
            ));
        }
        let params = CodelParams::new(target, interval, ce_threshold, mtu_bytes, ecn)?;
        Ok(Codel {
            queue: VecDeque::with_capacity(limit_packets.min(1 << 16) as usize),
            backlog_bytes: 0,
            limit_packets,
            params,
            state: CodelState::new(),
            stats: CodelStats::default(),
            counters: AqmCounters::default(),
            dropped: Vec::new(),
            target,
            interval,
        })
    }

    /// Reads tc-codel keys: `limit` (packets, default 1000), `target`
    /// (default 5ms), `interval` (default 100ms), `ce-threshold`, `ecn`
    /// (default false), `mtu` (bytes, default 1514 = Ethernet psched_mtu).
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let limit = parse_limit_packets(p, "limit", CODEL_DEFAULT_LIMIT)?;
        let target = p.opt_time("target")?.unwrap_or(Duration::from_ms(5));
        let interval = p.opt_time("interval")?.unwrap_or(Duration::from_ms(100));
        let ce = p.opt_time("ce-threshold")?;
        let ecn = p.opt_bool("ecn")?.unwrap_or(false);
        let mtu = match p.opt_size("mtu")? {
            None => ETHERNET_PSCHED_MTU,
            Some(m) => u32::try_from(m.get())
                .map_err(|_| ConfigError::new("mtu", format!("{m} is above 4294967295B")))?,
        };
        Self::new(limit, target, interval, ce, mtu, ecn)
    }

    pub fn params(&self) -> &CodelParams {
        &self.params
    }
    pub fn state(&self) -> &CodelState {
        &self.state
    }
    pub fn stats(&self) -> &CodelStats {
        &self.stats
    }
    /// Drop and mark counters in the common AQM form.
    pub fn counters(&self) -> AqmCounters {
        let mut c = self.counters;
        c.early_drops = self.stats.drop_count;
        c.early_drop_bytes = self.stats.drop_bytes;
        c.marks = self.stats.ecn_mark + self.stats.ce_mark;
        c
    }
    /// Packets dropped at dequeue since the last call, oldest first.
    pub fn take_dropped(&mut self) -> std::vec::Drain<'_, Dropped> {
        self.dropped.drain(..)
    }
}

impl Shaper for Codel {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        // codel_qdisc_enqueue: qlen < limit, else drop_overlimit.
        if self.queue.len() >= self.limit_packets as usize {
            self.counters.tail_drops += 1;
            self.counters.tail_drop_bytes += pkt.size_bytes as u64;
            return Err(Dropped {
                packet: pkt,
                reason: DropReason::QueueFull,
            });
        }
        self.backlog_bytes += pkt.size_bytes as u64;
        self.queue.push_back((pkt, now));
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        let mut q = Fifo {
            queue: &mut self.queue,
            backlog_bytes: &mut self.backlog_bytes,
            dropped: &mut self.dropped,
        };
        self.state
            .dequeue(&self.params, &mut self.stats, now, &mut q)
    }

    super::fifo_accessors!();

    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        out.append(&mut self.dropped);
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let p = &self.params;
        vec![
            ("kind", "codel".into()),
            (
                "source",
                "RFC 8289; Linux include/net/codel_impl.h + net/sched/sch_codel.c".into(),
            ),
            ("limit", format!("{}p", self.limit_packets)),
            ("target", self.target.to_string()),
            ("target_ns", p.target_ns().to_string()),
            ("interval", self.interval.to_string()),
            ("interval_ns", p.interval_ns().to_string()),
            (
                "ce_threshold",
                p.ce_threshold_ns()
                    .map_or("none".into(), |ns| format!("{ns}ns")),
            ),
            ("ecn", p.ecn.to_string()),
            ("mtu", format!("{}B", p.mtu)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(m: u64) -> Instant {
        Instant::from_ns(m * 1_000_000)
    }
    fn pkt(id: u64) -> Packet {
        Packet::new(id, 1000)
    }
    /// RFC 8289 defaults on an Ethernet device.
    fn rfc_codel(limit: u32) -> Codel {
        Codel::new(
            limit,
            Duration::from_ms(5),
            Duration::from_ms(100),
            None,
            1514,
            false,
        )
        .unwrap()
    }

    #[test]
    fn tc_units_match_the_kernel() {
        let p = CodelParams::rfc8289(1514);
        assert_eq!(p.target_units(), 4882); // 5000 µs · 1000 >> 10
        assert_eq!(p.interval_units(), 97_656);
        assert_eq!(p.target_ns(), 4_999_168);
        assert_eq!(p.ce_threshold_ns(), None);
        let bad = |limit, target, interval| {
            Codel::new(limit, target, interval, None, 1514, false)
                .unwrap_err()
                .param
        };
        let (ms5, ms100) = (Duration::from_ms(5), Duration::from_ms(100));
        assert_eq!(bad(10, Duration::from_ns(500), ms100), "target");
        assert_eq!(bad(0, ms5, ms100), "limit");
        assert_eq!(bad(10, ms5, Duration::from_secs(200)), "interval");
    }

    #[test]
    fn newton_step_converges_to_inverse_sqrt() {
        // As codel_dequeue does: count 1 with rec = 0xffff, then one Newton
        // step per increment.
        let mut s = CodelState {
            count: 1,
            rec_inv_sqrt: 0xffff,
            ..CodelState::default()
        };
        let mut exact = 1.0f64; // the same iteration in f64
        for count in 2..=400u32 {
            s.count = count;
            s.newton_step();
            exact = exact / 2.0 * (3.0 - count as f64 * exact * exact);
            let got = s.rec_inv_sqrt as f64 / 65536.0;
            // Fixed point tracks the real-valued iteration to Q0.16 rounding.
            assert!(
                (got - exact).abs() < 4.0 / 65536.0,
                "count {count}: {got} vs {exact}"
            );
            // One step per increment lags 1/sqrt(count) at first (0.5 vs
            // 0.707 at count 2), then converges.
            let want = 1.0 / (count as f64).sqrt();
            if count >= 16 {
                assert!(
                    (got - want).abs() / want < 0.005,
                    "count {count}: {got} vs {want}"
                );
            }
        }
        // control law: interval/sqrt(count) within the same tolerance.
        let step = CodelState::control_law(0, 97_656, s.rec_inv_sqrt);
        let want = 97_656.0 / 20.0;
        assert!((step as f64 - want).abs() / want < 0.005, "{step}");
    }

    /// Arrivals every 1 ms, service every 2 ms: the sojourn grows by 1 ms
    /// per served packet. CoDel must not drop until the sojourn has been ≥
    /// target for an interval, then drop at drop_next spaced by
    /// interval/sqrt(count), and leave once the sojourn is below target.
    #[test]
    fn overload_enters_dropping_after_an_interval_and_spaces_drops_by_the_control_law() {
        let mut q = rfc_codel(100_000);
        let interval = q.params().interval_units();
        let target_ns = q.params().target_ns();
        let mut id = 0;
        let mut first_above: Option<u64> = None; // ns of the first dequeue ≥ target
        let mut drops: Vec<(u64, u32, u32)> = Vec::new(); // (t_ns, count, drop_next before)
        let mut t_ms = 0;
        while t_ms < 1500 {
            q.enqueue(ms(t_ms), pkt(id)).unwrap();
            id += 1;
            if t_ms % 2 == 1 {
                let before_state = *q.state();
                let head_enq = q.queue.front().map(|e| e.1).unwrap();
                let got = q.dequeue(ms(t_ms));
                assert!(got.is_some());
                let n = q.take_dropped().count();
                let now_ns = ms(t_ms).as_ns();
                let sojourn = now_ns - head_enq.as_ns();
                if first_above.is_none() && sojourn >= target_ns {
                    first_above = Some(now_ns);
                }
                if n > 0 {
                    assert_eq!(n, 1, "one drop per dequeue at this rate");
                    drops.push((now_ns, q.state().count, before_state.drop_next));
                }
            }
            t_ms += 1;
        }
        let fa = first_above.unwrap();
        let (t0, c0, _) = drops[0];
        // Entered after one interval above target, at the first dequeue past it.
        assert!(t0 > fa + q.params().interval_ns(), "{t0} {fa}");
        // Exactly the first service slot strictly after first_above_time
        // (in CoDel's 1024 ns ticks).
        let fa_units = codel_time(Instant::from_ns(fa)) + interval;
        let expected = (1..)
            .map(|k: u64| (2 * k - 1) * 1_000_000)
            .find(|&t| after(codel_time(Instant::from_ns(t)), fa_units))
            .unwrap();
        assert_eq!(t0, expected);
        assert_eq!(c0, 1);
        // Each later drop happens at the first dequeue at/after drop_next,
        // and drop_next advances by interval/sqrt(count).
        for w in drops.windows(2) {
            let (_, c_prev, _) = w[0];
            let (t, c, next_before) = w[1];
            assert_eq!(c, c_prev + 1);
            let next_ns = (next_before as u64) << CODEL_SHIFT;
            assert!(
                t >= next_ns && t < next_ns + 2_000_000 + 1024,
                "{t} vs {next_ns}"
            );
        }
        // drop_next after drop k advanced by interval/sqrt(count_k); the
        // fixed-point square root lags for the first few counts (see
        // newton_step_converges_to_inverse_sqrt), so check from count 8.
        for w in drops[1..].windows(2) {
            let (_, c, next_a) = w[0];
            let (_, _, next_b) = w[1];
            let gap = next_b.wrapping_sub(next_a) as f64;
            let want = interval as f64 / (c as f64).sqrt();
            if c >= 8 {
                assert!(
                    (gap - want).abs() / want < 0.01,
                    "count {c}: {gap} vs {want}"
                );
            } else {
                assert!(
                    (gap - want).abs() / want < 0.3,
                    "count {c}: {gap} vs {want}"
                );
            }
        }
        assert!(drops.len() > 10);
        assert!(q.state().dropping);

        // Stop arrivals, serve fast: the sojourn falls below target and
        // CoDel leaves the dropping state.
        let mut t = ms(t_ms);
        while q.backlog_packets() > 0 {
            q.dequeue(t);
            q.take_dropped().for_each(drop);
            t = t.saturating_add(Duration::from_us(10));
        }
        // Fresh packets with zero sojourn.
        q.enqueue(t, pkt(id)).unwrap();
        q.enqueue(t, pkt(id + 1)).unwrap();
        q.enqueue(t, pkt(id + 2)).unwrap();
        assert!(q.dequeue(t).is_some());
        assert!(!q.state().dropping);
        assert_eq!(q.state().first_above_time, 0);
    }

    #[test]
    fn reentering_within_16_intervals_reuses_the_count() {
        let params = CodelParams::rfc8289(0);
        let mut s = CodelState {
            count: 10,
            lastcount: 2,
            drop_next: 1_000_000,
            rec_inv_sqrt: 20_000,
            ..CodelState::default()
        };
        let mut stats = CodelStats::default();
        // first_above_time already passed: the next packet above target drops.
        let now = 1_000_000 + 3 * params.interval_units();
        s.first_above_time = now - 1;
        struct Q(Vec<(Packet, Instant)>, u64, usize);
        impl CodelQueue for Q {
            fn codel_pop(&mut self) -> Option<(Packet, Instant)> {
                let e = self.0.pop()?;
                self.1 -= e.0.size_bytes as u64;
                Some(e)
            }
            fn codel_backlog_bytes(&self) -> u64 {
                self.1
            }
            fn codel_drop(&mut self, _: Packet) {
                self.2 += 1;
            }
        }
        let now_i = Instant::from_ns((now as u64) << CODEL_SHIFT);
        let old = Instant::ZERO;
        let mut q = Q(vec![(pkt(1), old), (pkt(2), old), (pkt(3), old)], 3000, 0);
        assert!(s.dequeue(&params, &mut stats, now_i, &mut q).is_some());
        assert_eq!(q.2, 1);
        assert!(s.dropping);
        assert_eq!(s.count, 8, "count − lastcount");
        assert_eq!(s.lastcount, 8);
        // Far past drop_next (> 16 intervals): restart at 1.
        let mut s2 = CodelState {
            count: 10,
            lastcount: 2,
            drop_next: 0,
            first_above_time: 1,
            ..CodelState::default()
        };
        let later = 17 * params.interval_units() + 10;
        let mut q = Q(vec![(pkt(1), old), (pkt(2), old), (pkt(3), old)], 3000, 0);
        let at = Instant::from_ns((later as u64) << CODEL_SHIFT);
        s2.dequeue(&params, &mut stats, at, &mut q);
        assert_eq!(s2.count, 1);
        assert_eq!(s2.rec_inv_sqrt, 0xffff);
    }

    #[test]
    fn ecn_marks_instead_of_dropping_and_ce_threshold_counts() {
        let mut q = Codel::new(
            1000,
            Duration::from_ms(5),
            Duration::from_ms(100),
            Some(Duration::from_ms(1)),
            1514,
            true,
        )
        .unwrap();
        for i in 0..400 {
            q.enqueue(ms(i), pkt(i)).unwrap();
            if i % 2 == 1 {
                assert!(q.dequeue(ms(i)).is_some());
            }
        }
        assert_eq!(q.take_dropped().count(), 0);
        assert!(q.stats().ecn_mark > 0);
        assert!(q.stats().ce_mark > 0);
        assert_eq!(q.stats().drop_count, 0);
    }

    #[test]
    fn no_drop_while_backlog_is_at_most_one_mtu() {
        let mut q = rfc_codel(1000);
        // One packet at a time, each sitting 50 ms: sojourn ≫ target, but
        // the backlog behind the head is 0 ≤ mtu.
        for i in 0..100 {
            q.enqueue(ms(i * 50), pkt(i)).unwrap();
            assert!(q.dequeue(ms(i * 50 + 49)).is_some());
        }
        assert_eq!(q.stats().drop_count, 0);
    }

    #[test]
    fn from_params_reads_tc_keys() {
        let mut p = Params::new(
            "codel",
            [
                ("limit", "200p"),
                ("target", "10ms"),
                ("ecn", "on"),
                ("ce_threshold", "2ms"),
            ],
        );
        let q = Codel::from_params(&mut p).unwrap();
        p.finish().unwrap();
        let d = q.describe();
        assert!(d.contains(&("limit", "200p".into())));
        assert!(d.contains(&("target", "10ms".into())));
        assert!(d.contains(&("ecn", "true".into())));
        let mut p = Params::new("codel", [("target", "0")]);
        assert_eq!(Codel::from_params(&mut p).unwrap_err().param, "target");
    }

    proptest! {
        /// Conservation and the limit under random arrivals and service.
        #[test]
        fn conservation_and_limit(
            ops in proptest::collection::vec((0u64..3_000_000, 40u32..1500, any::<bool>()), 1..600),
            limit in 1u32..50,
        ) {
            let mut q = Codel::new(limit, Duration::from_ms(5), Duration::from_ms(20), None, 1514, false).unwrap();
            let (mut t, mut inn, mut out, mut dropped) = (0u64, 0u64, 0u64, 0u64);
            for (i, (dt, size, deq)) in ops.into_iter().enumerate() {
                t += dt;
                if deq {
                    out += q.dequeue(Instant::from_ns(t)).is_some() as u64;
                } else {
                    inn += 1;
                    if q.enqueue(Instant::from_ns(t), Packet::new(i as u64, size)).is_err() {
                        dropped += 1;
                    }
                }
                dropped += q.take_dropped().count() as u64;
                prop_assert!(q.backlog_packets() <= limit as usize);
                prop_assert_eq!(inn, out + dropped + q.backlog_packets() as u64);
                let bytes: u64 = q.queue.iter().map(|e| e.0.size_bytes as u64).sum();
                prop_assert_eq!(bytes, q.backlog_bytes());
            }
        }
    }
}
