//! Time Sliding Window Three Colour Marker, RFC 2859 (Experimental).
//!
//! Two parts (RFC 2859 §2): a rate estimator and a marker that "uses the
//! algorithm specified in section 4".
//!
//! **Estimator** (the time sliding window of Clark & Fang): initially
//! `avg_rate = CTR`, `t_front = 0`; on each packet arrival
//!
//! ```text
//! bytes_in_win = avg_rate · win_len
//! new_bytes    = bytes_in_win + pkt_size
//! avg_rate     = new_bytes / (now − t_front + win_len)
//! t_front      = now
//! ```
//!
//! **Marker** (§4): if avg_rate ≤ CTR: green; else if avg_rate ≤ PTR:
//! yellow with probability P0 = (avg_rate − CTR)/avg_rate, else green; else
//! red with P1 = (avg_rate − PTR)/avg_rate, yellow with P2 = (PTR −
//! CTR)/avg_rate, else green. At a sustained rate R > PTR this marks a
//! fraction (R − PTR)/R red and (PTR − CTR)/R yellow — the traffic
//! "contributing to the portion of the rate" above each target (§1).
//!
//! Source note: only the RFC's §1–2 text was retrievable in this project's
//! store; the estimator and marker above are checked against ns-2's TSW3CM
//! (`hbatmit/ns2.35` `diffserv/dsPolicy.cc`, Nortel Networks 2000 — the
//! RFC's authors' employer), which implements exactly this update and draws
//! one uniform number against the two thresholds, as we do.
//!
//! **Arithmetic**: exact integers, no floats. `avg_rate` is kept in bit/s
//! scaled by 2¹⁶ (a fixed-point rate with 1/65536 bit/s resolution) and
//! updated with u128 intermediates, dividing (rounding down) once per
//! packet; so a trace gives the same colours on every machine. The RFC's
//! estimator is real-valued, and this differs from it only by that single
//! floor per update (< 2⁻¹⁶ bit/s). The marker draws one uniform integer
//! r ∈ [0, avg_rate) from [`crate::rng::Rng`] (Lemire's multiply-high, bias
//! < avg_rate / 2⁶⁴) and compares it with avg − PTR and avg − CTR, which
//! realises P1, P2 and P0 exactly as ratios of integers. A green verdict
//! below CTR draws nothing.
//!
//! Parameters: `ctr` (committed target rate, > 0), `ptr` (peak target
//! rate, ≥ ctr), `win_len` (time, default 1 s, 1 ns – 1 h), `seed` (default
//! 1; stream derived with [`TSWTCM_STREAM`]), `mode` (`blind` | `aware`).
//! `win_len` is a configuration constant of the estimator; the 1 s default
//! is ns-2's TSW3CM default (`winLen = 1.0` in `addPolicyEntry`), not a
//! value read in the RFC. The RFC's marker is colour-blind; `mode=aware` is
//! a qoslab extension that never improves an incoming colour (result =
//! worse of incoming and computed). The estimator counts every packet,
//! whatever its colour.

use super::Meter;
use crate::bucket::check_rate;
use crate::packet::Color;
use crate::params::{ConfigError, Params};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::units::Rate;

/// Fixed-point scale of `avg_rate`: bit/s × 2¹⁶.
const SCALE_SHIFT: u32 = 16;
/// Rng stream for TSWTCM markers ("TSW").
pub const TSWTCM_STREAM: u64 = 0x0054_5357;
const MAX_WIN_NS: u64 = 3_600 * 1_000_000_000;

/// RFC 2859 TSWTCM state.
#[derive(Clone, Debug)]
pub struct Tswtcm {
    /// bit/s × 2¹⁶
    avg: u64,
    t_front: Instant,
    win_ns: u64,
    ctr_s: u64,
    ptr_s: u64,
    ctr: Rate,
    ptr: Rate,
    seed: u64,
    rng: Rng,
    color_aware: bool,
}

impl Tswtcm {
    /// `avg_rate = CTR`, `t_front = 0` (RFC 2859 initial values).
    pub fn new(
        ctr: Rate,
        ptr: Rate,
        win_len: Duration,
        seed: u64,
        color_aware: bool,
    ) -> Result<Self, ConfigError> {
        check_rate("ctr", ctr)?;
        check_rate("ptr", ptr)?;
        if ptr < ctr {
            return Err(ConfigError::new(
                "ptr",
                format!("must be at least ctr ({ctr}), got {ptr}"),
            ));
        }
        if win_len.as_ns() == 0 || win_len.as_ns() > MAX_WIN_NS {
            return Err(ConfigError::new(
                "win-len",
                format!("must be between 1ns and 1h, got {win_len}"),
            ));
        }
        let ctr_s = ctr.bps() << SCALE_SHIFT;
        Ok(Tswtcm {
            avg: ctr_s,
            t_front: Instant::ZERO,
            win_ns: win_len.as_ns(),
            ctr_s,
            ptr_s: ptr.bps() << SCALE_SHIFT,
            ctr,
            ptr,
            seed,
            rng: Rng::new(seed, TSWTCM_STREAM),
            color_aware,
        })
    }

    /// Reads `ctr`, `ptr`, `win_len` (default 1s), `seed` (default 1), `mode`.
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let ctr = p.rate("ctr")?;
        let ptr = p.rate("ptr")?;
        let win = p.opt_time("win-len")?.unwrap_or(Duration::from_secs(1));
        let seed = p.opt_u64("seed")?.unwrap_or(1);
        let aware = p.color_aware()?;
        Self::new(ctr, ptr, win, seed, aware)
    }

    /// The estimator's current average rate, bit/s (rounded down).
    pub fn avg_rate_bps(&self) -> u64 {
        self.avg >> SCALE_SHIFT
    }
    /// The estimator's current average rate, bit/s × 2¹⁶ (exact state).
    pub fn avg_rate_scaled(&self) -> u64 {
        self.avg
    }

    /// RFC 2859 estimator update for one packet:
    /// `avg ← ⌊(avg·w + S) / (dt + w)⌋` with `S` the packet in
    /// (bit/s × 2¹⁶)·ns (a byte is 8·10⁹·2¹⁶).
    ///
    /// Computed as `avg + ⌊(S − avg·dt) / (dt + w)⌋`, which is the same
    /// integer: `avg·w + S = avg·(dt + w) + (S − avg·dt)` and `⌊a + x⌋ =
    /// a + ⌊x⌋` for a whole `a`. The division is the same one-per-packet
    /// exact floor, but its dividend is the small signed correction instead
    /// of a 128-bit product, so it is a 64-bit division (no `__udivti3`
    /// call) whose quotient has few significant bits — and `avg`, which
    /// carries from packet to packet, waits on it. Where any term would not
    /// fit in 63 bits (long idle gaps, huge packets or rates) the 128-bit
    /// form runs instead; the tests check both against each other.
    #[inline(always)]
    fn estimate(&mut self, now: Instant, size_bytes: u32) {
        let dt = now.saturating_since(self.t_front).as_ns();
        self.avg = estimate_fast(self.avg, dt, self.win_ns, size_bytes)
            .unwrap_or_else(|| estimate_wide(self.avg, dt, self.win_ns, size_bytes));
        self.t_front = now.max(self.t_front);
    }

    /// Colours a trace exactly as [`Meter::color`] packet by packet would
    /// (what [`super::AnyMeter::color_trace`] runs for this kind): arrival
    /// times in ns, sizes, optional arrival colours (an invalid code counts
    /// as red), colour codes into `out`; slices cut to the shortest.
    ///
    /// Speed (issue 12): the trace goes in blocks of 64 packets. One pass
    /// over a block checks what puts every packet of it in the range of the
    /// exact reciprocal update (`estimate_recip_unchecked`, which keeps the
    /// one division per packet off the chain from one `avg` to the next) —
    /// windows of 4 ns or more, times not going back, gaps below 2⁵⁶ ns (2.3
    /// years), sizes up to 17,592 B, and a bound on `avg` over the block
    /// (each update raises it by at most `⌊S/w⌋`, as `d ≥ w`) that keeps
    /// `avg·dt` below 2⁶² — so the per-packet loop runs without a range
    /// test; a block that fails the check goes packet by packet through
    /// [`Meter::color`].
    pub fn color_trace(
        &mut self,
        times: &[u64],
        sizes: &[u32],
        pre: Option<&[u8]>,
        out: &mut [u8],
    ) {
        let n = out.len().min(times.len()).min(sizes.len());
        let (times, sizes, out) = (&times[..n], &sizes[..n], &mut out[..n]);
        let pre = pre.map(|p| &p[..n]);
        // Worked on in a local copy (kept in registers; see `color_all`).
        let mut m = self.clone();
        let mut gd = GapsAndDivisors {
            gaps: [0; BLOCK],
            divisors: [0; BLOCK],
        };
        let mut i = 0;
        while i < n {
            let end = (i + BLOCK).min(n);
            let (t, sz, o) = (&times[i..end], &sizes[i..end], &mut out[i..end]);
            let pc = pre.map(|p| &p[i..end]);
            if m.block_in_range(t, sz, &mut gd) {
                let last = t.last().copied().unwrap_or(0);
                m.color_block(&gd, sz, last, pc, o);
            } else {
                for (k, ((&tk, &s), o)) in t.iter().zip(sz).zip(o.iter_mut()).enumerate() {
                    let c = pc.map_or(Color::Green, |p| Color::from_u8(p[k]).unwrap_or(Color::Red));
                    *o = m.color(Instant::from_ns(tk), s, c) as u8;
                }
            }
            i = end;
        }
        *self = m;
    }

    /// Whether every packet of the block is in the reciprocal update's
    /// range whatever the colours (see [`Tswtcm::color_trace`]); writes each
    /// packet's gap `dt = t − t_prev` (wrapping) and divisor `d = dt + w`
    /// into `gd`, which the packet loop then reads instead of carrying
    /// `t_front` and adding the window.
    ///
    /// ORs instead of compares and maxima, so the pass vectorises with
    /// baseline SSE2 (no 64-bit compare there): the OR of the gaps has a
    /// bit at 56 or above iff some gap is 2⁵⁶ or more or negative (a step
    /// back wraps to ≥ 2⁶³), and bounds every gap from above; the OR of the
    /// sizes bounds every size. `avg` stays below `avg_hi < 2⁶³` over the
    /// block, which the marker's compares need (see `color_block`).
    #[inline(always)]
    fn block_in_range(&self, times: &[u64], sizes: &[u32], gd: &mut GapsAndDivisors) -> bool {
        let n = times.len().min(sizes.len()).min(BLOCK);
        let (times, sizes) = (&times[..n], &sizes[..n]);
        let w = self.win_ns;
        let (mut gap_bound, mut size_bound) = (0u64, 0u32);
        let mut prev = self.t_front.as_ns();
        for (((&t, &s), g), d) in times
            .iter()
            .zip(sizes)
            .zip(&mut gd.gaps)
            .zip(&mut gd.divisors)
        {
            let dt = t.wrapping_sub(prev);
            prev = t;
            *g = dt;
            *d = dt.wrapping_add(w);
            gap_bound |= dt;
            size_bound |= s;
        }
        let size_bound = size_bound as u64;
        if gap_bound >> 56 != 0 || size_bound > MAX_RECIP_SIZE || w < 4 {
            return false;
        }
        // Each update adds at most ⌊S/d⌋ ≤ S/w to avg (d ≥ w).
        let step = (size_bound * BYTE_SCALED / w) as u128;
        let avg_hi = self.avg as u128 + n as u128 * step;
        (avg_hi * gap_bound as u128) >> 62 == 0 && avg_hi >> 63 == 0
    }

    /// [`Meter::color`] over a block that [`Tswtcm::block_in_range`]
    /// accepted (`gd` as it wrote it, `last_ns` the block's last arrival).
    ///
    /// The marker is [`Tswtcm::mark`] with its colour taken without
    /// branches once the draw is made: with `r = ⌊draw·avg/2⁶⁴⌋ < avg`, the
    /// code is `[r + PTR < avg] + [r + CTR < avg]` (scaled rates; no sum
    /// overflows, as `avg < 2⁶³` in the block and the rates are below
    /// 2⁶⁰): 2 (red) iff `avg > PTR` and `r < avg − PTR`; else 1 (yellow)
    /// iff `r < avg − CTR` (PTR ≥ CTR, so the first test implies the
    /// second); else 0 — `mark`'s three cases, in the same order.
    #[inline(always)]
    fn color_block(
        &mut self,
        gd: &GapsAndDivisors,
        sizes: &[u32],
        last_ns: u64,
        pre: Option<&[u8]>,
        out: &mut [u8],
    ) {
        let (ctr_s, ptr_s) = (self.ctr_s, self.ptr_s);
        let mut avg = self.avg;
        let mut rng = self.rng.clone();
        let mut step = |dt: u64, d: u64, s: u32| -> u8 {
            avg = estimate_recip_unchecked(avg, dt, d, s);
            if avg <= ctr_s {
                return Color::Green as u8; // RFC 2859 §4: no draw below CTR
            }
            let r = ((rng.next_u64() as u128 * avg as u128) >> 64) as u64;
            (r + ptr_s < avg) as u8 + (r + ctr_s < avg) as u8
        };
        let gaps = gd.gaps.iter().zip(&gd.divisors);
        match pre {
            Some(pre) if self.color_aware => {
                for ((((&dt, &d), &s), o), &c) in gaps.zip(sizes).zip(out.iter_mut()).zip(pre) {
                    // An invalid incoming code counts as red (2).
                    *o = step(dt, d, s).max(c.min(2));
                }
            }
            _ => {
                for (((&dt, &d), &s), o) in gaps.zip(sizes).zip(out.iter_mut()) {
                    *o = step(dt, d, s);
                }
            }
        }
        self.avg = avg;
        self.rng = rng;
        self.t_front = Instant::from_ns(last_ns.max(self.t_front.as_ns()));
    }

    /// The marker and the colour-aware rule, after the estimator.
    #[inline(always)]
    fn color_after_estimate(&mut self, pre_color: Color) -> Color {
        let c = self.mark();
        if self.color_aware {
            c.max(pre_color)
        } else {
            c
        }
    }

    /// RFC 2859 §4 marker.
    #[inline(always)]
    fn mark(&mut self) -> Color {
        let avg = self.avg;
        if avg <= self.ctr_s {
            return Color::Green;
        }
        // r uniform in [0, avg): P(r < k) = k / avg.
        let r = ((self.rng.next_u64() as u128 * avg as u128) >> 64) as u64;
        if avg > self.ptr_s && r < avg - self.ptr_s {
            Color::Red // P1 = (avg − PTR)/avg
        } else if r < avg - self.ctr_s {
            // P0 = (avg − CTR)/avg when avg ≤ PTR; above PTR this branch is
            // reached with probability P2 = (PTR − CTR)/avg.
            Color::Yellow
        } else {
            Color::Green
        }
    }
}

/// One packet in (bit/s × 2¹⁶)·ns per byte: 8·10⁹ bit·ns/s × 2¹⁶.
const BYTE_SCALED: u64 = 8_000_000_000 << SCALE_SHIFT;

/// The estimator's update in 128-bit arithmetic (the definition).
#[inline(never)]
fn estimate_wide(avg: u64, dt: u64, w: u64, size_bytes: u32) -> u64 {
    let new_bytes = avg as u128 * w as u128 + size_bytes as u128 * BYTE_SCALED as u128;
    u64::try_from(new_bytes / (dt as u128 + w as u128)).unwrap_or(u64::MAX)
}

/// The same update as `avg + ⌊(S − avg·dt)/(dt + w)⌋` in 64-bit arithmetic,
/// or `None` when a term needs more than 63 bits.
#[inline(always)]
fn estimate_fast(avg: u64, dt: u64, w: u64, size_bytes: u32) -> Option<u64> {
    let p = avg.checked_mul(dt)?;
    let s = (size_bytes as u64).checked_mul(BYTE_SCALED)?;
    let d = dt.checked_add(w)?;
    if (p | s | d) >> 63 != 0 {
        return None;
    }
    // d ≥ w ≥ 1, so no division by zero or overflow. Floor division: the
    // truncated quotient less one when the remainder is negative, taken from
    // the remainder's sign bit (`rem_euclid`/`div_euclid` compile to a
    // branch on that sign, which is a coin toss per packet here).
    let (r, d) = (s as i64 - p as i64, d as i64);
    let q = r / d + ((r % d) >> 63);
    avg.checked_add_signed(q)
}

/// Packets per block of [`Tswtcm::color_trace`]'s range check.
const BLOCK: usize = 64;

/// The largest packet, in bytes, whose `S = size·BYTE_SCALED` is below 2⁶³
/// (the reciprocal form's range): 17,592 B.
const MAX_RECIP_SIZE: u64 = ((1 << 63) - 1) / BYTE_SCALED;

/// The definition's integer `⌊(avg·w + S)/d⌋`, `d = dt + w`, for inputs in
/// range: `w ≥ 4`, `dt < 2⁵⁶`, `S < 2⁶³` (size ≤ [`MAX_RECIP_SIZE`]) and
/// `avg·dt < 2⁶²`; the caller checks them ([`Tswtcm::block_in_range`];
/// debug builds check the result against [`estimate_wide`]).
///
/// Exact, no approximation in the result. `avg·w + S = avg·d + x` with
/// `x = S − avg·dt`, so the update is `avg + ⌊x/d⌋`. The divisor depends
/// on the trace alone, so its reciprocal `inv = ⌊(2⁶⁴ − 1)/d⌋` — the one
/// division per packet — and everything else that does not involve `avg`
/// are computed by the processor ahead of the loop-carried chain from one
/// `avg` to the next, which is two multiplications, a subtraction, a
/// compare and an add:
///
/// - `x` is made at least `d` by adding `K·d`, `K = ⌊inv/4⌋ + 2`:
///   `inv·d ∈ (2⁶⁴ − 1 − d, 2⁶⁴)` gives `K·d ∈ [2⁶² + d, 2⁶² + 2d]`, so
///   `x' = x + K·d ∈ (d, 0.76·2⁶⁴)` (as `avg·dt < 2⁶²`, `d < 2⁵⁶ + 2⁴²`),
///   and `⌊x/d⌋ = ⌊x'/d⌋ − K`.
/// - `x'·inv/2⁶⁴ = x'/d − x'·ε` with `0 ≤ ε < (d + 1)/(d·2⁶⁴) ≤ 1.25/2⁶⁴`
///   (d ≥ 4), so `x'·ε < 0.95` and `qe = ⌊x'·inv/2⁶⁴⌋` is `⌊x'/d⌋` or one
///   less; the remainder `x' − qe·d ∈ [0, 2d)` says which:
///   `⌊x'/d⌋ = qe + [x' − qe·d ≥ d] = qe + [qe·d ≤ x' − d]`, the last form
///   with `x' − d ≥ 0` computed off the chain, so the chain ends in one
///   multiplication, one compare and one add.
/// - `x'·inv = (S + K·d)·inv − avg·(dt·inv)`, exactly (`dt·inv <
///   dt·2⁶⁴/d < 2⁶⁴`): the first term and `dt·inv` are off the chain.
///
/// The result `avg + qe − K + [qe·d ≤ x' − d]` is the definition's value,
/// at most `avg + S/d`, so the wrapping sum is exact.
#[inline(always)]
fn estimate_recip_unchecked(avg: u64, dt: u64, d: u64, size_bytes: u32) -> u64 {
    let w = d.wrapping_sub(dt);
    debug_assert!(w >= 4 && dt >> 56 == 0 && size_bytes as u64 <= MAX_RECIP_SIZE);
    debug_assert!((avg as u128 * dt as u128) >> 62 == 0);
    let inv = u64::MAX / d;
    // Opaque: LLVM would otherwise add the `+ 2` after the compare, one
    // more step on the chain.
    let k = crate::bucket::opaque((inv >> 2) + 2);
    let s_biased = size_bytes as u64 * BYTE_SCALED + k * d;
    let a = s_biased as u128 * inv as u128;
    let f = dt.wrapping_mul(inv);
    // The chain: avg → avg·f → qe → qe·d → the compare → the next avg.
    let qe = ((a - avg as u128 * f as u128) >> 64) as u64;
    let x_less_d = s_biased - avg.wrapping_mul(dt) - d; // x' − d ≥ 0
    let next = avg
        .wrapping_sub(k)
        .wrapping_add(qe)
        .wrapping_add((qe.wrapping_mul(d) <= x_less_d) as u64);
    debug_assert_eq!(next, estimate_wide(avg, dt, w, size_bytes));
    next
}

/// A block's gaps `dt` and divisors `d = dt + w`, written by
/// [`Tswtcm::block_in_range`] for [`Tswtcm::color_block`].
struct GapsAndDivisors {
    gaps: [u64; BLOCK],
    divisors: [u64; BLOCK],
}

/// [`estimate_recip_unchecked`] with its range checked (`None` outside it).
#[cfg(test)]
fn estimate_recip(avg: u64, dt: u64, w: u64, size_bytes: u32) -> Option<u64> {
    let in_range = w >= 4
        && dt >> 56 == 0
        && size_bytes as u64 <= MAX_RECIP_SIZE
        && (avg as u128 * dt as u128) >> 62 == 0;
    in_range.then(|| estimate_recip_unchecked(avg, dt, dt + w, size_bytes))
}

impl Meter for Tswtcm {
    #[inline(always)]
    fn color(&mut self, now: Instant, size_bytes: u32, pre_color: Color) -> Color {
        self.estimate(now, size_bytes);
        self.color_after_estimate(pre_color)
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", "tswtcm".into()),
            ("standard", "RFC 2859".into()),
            ("ctr", self.ctr.to_string()),
            ("ptr", self.ptr.to_string()),
            ("win-len", Duration::from_ns(self.win_ns).to_string()),
            ("seed", self.seed.to_string()),
            (
                "mode",
                if self.color_aware { "aware" } else { "blind" }.into(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(ctr: u64, ptr: u64, aware: bool) -> Tswtcm {
        Tswtcm::new(
            Rate::from_bps(ctr),
            Rate::from_bps(ptr),
            Duration::from_secs(1),
            1,
            aware,
        )
        .unwrap()
    }

    #[test]
    fn estimator_hand_computed() {
        let mut t = m(1_000_000, 2_000_000, false);
        assert_eq!(t.avg_rate_bps(), 1_000_000);
        // 125000 B = 1 Mbit at t = 1 s: (1e6·1 + 1e6) / (1 + 1) = 1e6 → green.
        assert_eq!(
            t.color(Instant::from_ns(1_000_000_000), 125_000, Color::Green),
            Color::Green
        );
        assert_eq!(t.avg_rate_scaled(), 1_000_000 << 16);
        // Same instant, another 1 Mbit: (1e6·1 + 1e6)/(0 + 1) = 2e6 = PTR.
        t.color(Instant::from_ns(1_000_000_000), 125_000, Color::Green);
        assert_eq!(t.avg_rate_scaled(), 2_000_000 << 16);
        // Idle 3 s, 1 byte: (2e6 + 8) / 4 = 500002 bit/s.
        assert_eq!(
            t.color(Instant::from_ns(4_000_000_000), 1, Color::Green),
            Color::Green
        );
        assert_eq!(t.avg_rate_scaled(), (2_000_008u64 << 16) / 4);
        assert_eq!(t.avg_rate_bps(), 500_002);
    }

    #[test]
    fn fixed_point_floors_once_per_update() {
        // CTR 3 bit/s, win 1 s, 1 byte at t = 2 s: (3 + 8)/3 = 3.666.. bit/s.
        let mut t = Tswtcm::new(
            Rate::from_bps(3),
            Rate::from_bps(3),
            Duration::from_secs(1),
            1,
            false,
        )
        .unwrap();
        t.color(Instant::from_ns(2_000_000_000), 1, Color::Green);
        assert_eq!(t.avg_rate_scaled(), (11u64 << 16) / 3);
    }

    /// Sustained 3 Mbit/s against CTR 1, PTR 2 Mbit/s: the RFC marks about
    /// (3−2)/3 red, (2−1)/3 yellow, 1/3 green.
    #[test]
    fn sustained_overload_splits_by_the_rfc_probabilities() {
        let mut t = m(1_000_000, 2_000_000, false);
        let mut count = [0u32; 3];
        // 1000-byte packets every 8000/3 µs = 3 Mbit/s, for 60 s.
        let gap = 8_000_000_000u64 / 3_000_000 * 1000;
        for i in 1..=22_500u64 {
            let c = t.color(Instant::from_ns(i * gap), 1000, Color::Green);
            if i > 7500 {
                count[c.index()] += 1; // after the estimator has converged
            }
        }
        let n = 15_000.0;
        for (k, want) in [(0, 1.0 / 3.0), (1, 1.0 / 3.0), (2, 1.0 / 3.0)] {
            let got = count[k] as f64 / n;
            assert!((got - want).abs() < 0.02, "colour {k}: {got} vs {want}");
        }
        let avg = t.avg_rate_bps();
        assert!((2_990_000..3_010_000).contains(&avg), "{avg}");
    }

    #[test]
    fn between_ctr_and_ptr_nothing_is_red() {
        let mut t = m(1_000_000, 2_000_000, false);
        let gap = 8_000_000_000u64 / 1_500_000 * 1000; // 1.5 Mbit/s
        let mut yellow = 0;
        for i in 1..=20_000u64 {
            let c = t.color(Instant::from_ns(i * gap), 1000, Color::Green);
            assert_ne!(c, Color::Red);
            if i > 5000 && c == Color::Yellow {
                yellow += 1;
            }
        }
        // P0 = (1.5 − 1)/1.5 = 1/3
        let f = yellow as f64 / 15_000.0;
        assert!((f - 1.0 / 3.0).abs() < 0.02, "{f}");
    }

    #[test]
    fn validation_and_params() {
        let e = Tswtcm::new(
            Rate::from_bps(2),
            Rate::from_bps(1),
            Duration::from_secs(1),
            1,
            false,
        )
        .unwrap_err();
        assert_eq!(e.param, "ptr");
        let e = Tswtcm::new(
            Rate::from_bps(1),
            Rate::from_bps(1),
            Duration::ZERO,
            1,
            false,
        )
        .unwrap_err();
        assert_eq!(e.param, "win-len");
        let mut p = Params::new(
            "tswtcm",
            [
                ("ctr", "1mbit"),
                ("ptr", "2mbit"),
                ("win-len", "200ms"),
                ("seed", "7"),
            ],
        );
        let t = Tswtcm::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(t.describe()[4].1, "200ms");
        assert_eq!(t.describe()[5].1, "7");
    }

    /// Differential: the 64-bit division form and the reciprocal form
    /// against the 128-bit definition on
    /// random states, gaps, windows and sizes, including ones near the
    /// 63-bit limits where the fast form must decline.
    #[test]
    fn fast_estimator_equals_the_128_bit_definition() {
        let mut rng = crate::rng::Rng::new(2859, 0);
        let (mut fast, mut recip) = (0u32, 0u32);
        for i in 0..300_000u32 {
            let r =
                |rng: &mut crate::rng::Rng, bits: u32| rng.next_u64() >> (64 - bits.clamp(1, 64));
            let bits = |rng: &mut crate::rng::Rng| 1 + (rng.next_u64() % 64) as u32;
            let avg = match i % 3 {
                0 => r(&mut rng, 48),
                _ => {
                    let b = bits(&mut rng);
                    r(&mut rng, b)
                }
            };
            let dt = match i % 4 {
                0 => r(&mut rng, 24),
                1 => 0,
                _ => {
                    let b = bits(&mut rng);
                    r(&mut rng, b)
                }
            };
            let w = 1 + rng.next_u64() % MAX_WIN_NS;
            let size = match i % 5 {
                0 => rng.next_u64() as u32,
                _ => (rng.next_u64() % 9000) as u32,
            };
            let want = estimate_wide(avg, dt, w, size);
            if let Some(got) = estimate_fast(avg, dt, w, size) {
                fast += 1;
                assert_eq!(got, want, "avg {avg} dt {dt} w {w} size {size}");
            }
            if let Some(got) = estimate_recip(avg, dt, w, size) {
                recip += 1;
                assert_eq!(got, want, "recip: avg {avg} dt {dt} w {w} size {size}");
            }
        }
        assert!(fast > 100_000, "fast path taken {fast} times");
        assert!(recip > 100_000, "reciprocal form taken {recip} times");
    }

    /// Differential: the reciprocal form against the 128-bit definition at
    /// the edges of its range (`None` where it declines).
    #[test]
    fn reciprocal_form_at_its_limits() {
        let max = MAX_RECIP_SIZE as u32;
        let lim = (1u64 << 62) - 1;
        let cases = [
            (u64::MAX, 0, 1, 0),
            (5, 0, 3, max),
            (5, 0, 4, max),
            (5, 1, 4, max),
            (0, 0, 4, 0),
            (0, 7, 4, 0),
            (lim, 1, 4, 0),
            (lim, 1, 4, max),
            (lim / 3, 3, 4, 0),
            (lim / 3, 3, (1 << 42) - 1, max),
            (lim / ((1 << 56) - 1), (1 << 56) - 1, 4, max),
            (lim / ((1 << 56) - 1), (1 << 56) - 1, 3_600_000_000_000, 1),
            (12_345_678_901, 1_000, 1_000_000_000, max),
            (12_345_678_901, 1_000, 1_000_000_000, max + 1),
        ];
        let mut answered = 0;
        for (avg, dt, w, size) in cases {
            if let Some(got) = estimate_recip(avg, dt, w, size) {
                answered += 1;
                assert_eq!(
                    got,
                    estimate_wide(avg, dt, w, size),
                    "{avg} {dt} {w} {size}"
                );
            }
        }
        assert_eq!(answered, cases.len() - 3);
    }

    /// A trace like the `pps` bench's: 150 Mbit/s offered, 64–1500 B.
    fn bench_like(n: usize, seed: u64) -> (Vec<u64>, Vec<u32>, Vec<u8>) {
        let mut rng = crate::rng::Rng::new(seed, 9);
        let (mut t, mut times, mut sizes, mut pre) = (0u64, vec![], vec![], vec![]);
        for _ in 0..n {
            let size = 64 + (rng.next_u64() % 1437) as u32;
            t += rng.next_u64() % (2 * size as u64 * 160 / 3 + 1);
            times.push(t);
            sizes.push(size);
            pre.push((rng.next_u64() % 3) as u8);
        }
        (times, sizes, pre)
    }

    /// Differential: `color_trace` (blocks, reciprocal update) gives the
    /// colours and state of `color` packet by packet (the 64-bit division
    /// form) — on bench-like traces, where every block takes the fast loop,
    /// and on the shared adversarial traces (steps back, long gaps, sizes
    /// to 4 GB: blocks fall back), with random meters, both modes.
    #[test]
    fn color_trace_equals_color_per_packet() {
        let mut rng = crate::rng::Rng::new(2859, 2);
        let mut fast_blocks = 0;
        for case in 0..200u64 {
            let (ctr, _) = crate::meter::difftest::rate_depth(&mut rng);
            let (extra, _) = crate::meter::difftest::rate_depth(&mut rng);
            let win_ns = match case % 4 {
                0 => 1 + rng.next_u64() % 1_000,
                1 => 1 + rng.next_u64() % MAX_WIN_NS,
                _ => 1 + rng.next_u64() % 2_000_000_000,
            };
            let m = Tswtcm::new(
                Rate::from_bps(ctr),
                Rate::from_bps(ctr + extra * (case % 3)),
                Duration::from_ns(win_ns),
                case,
                case % 2 == 1,
            )
            .unwrap();
            let (times, sizes, pre) = if case % 2 == 0 {
                bench_like(1_000 + (case as usize % 7) * 13, case)
            } else {
                let tr = crate::meter::difftest::trace(case, 2_000);
                (
                    tr.iter().map(|x| x.0.as_ns()).collect(),
                    tr.iter().map(|x| x.1).collect(),
                    tr.iter().map(|x| x.2 as u8).collect(),
                )
            };
            if case % 2 == 0 && win_ns >= 4 {
                fast_blocks += times
                    .chunks(BLOCK)
                    .zip(sizes.chunks(BLOCK))
                    .filter(|(t, s)| {
                        let probe = m.clone();
                        probe.block_in_range(
                            t,
                            s,
                            &mut GapsAndDivisors {
                                gaps: [0; BLOCK],
                                divisors: [0; BLOCK],
                            },
                        )
                    })
                    .count();
            }
            for with_pre in [false, true] {
                let (mut a, mut b) = (m.clone(), m.clone());
                let mut got = vec![9u8; times.len()];
                a.color_trace(&times, &sizes, with_pre.then_some(&pre[..]), &mut got);
                for (i, ((&t, &s), &c)) in times.iter().zip(&sizes).zip(&pre).enumerate() {
                    let c = if with_pre {
                        Color::from_u8(c).unwrap()
                    } else {
                        Color::Green
                    };
                    let want = b.color(Instant::from_ns(t), s, c) as u8;
                    assert_eq!(got[i], want, "case {case} packet {i}");
                }
                assert_eq!((a.avg, a.t_front), (b.avg, b.t_front), "case {case}");
                assert_eq!(a.rng.next_u64(), b.rng.next_u64(), "case {case}");
            }
        }
        assert!(fast_blocks > 50, "{fast_blocks}");
        // The bench's meter and trace: every block takes the fast loop.
        let mut m = Tswtcm::new(
            Rate::from_bps(100_000_000),
            Rate::from_bps(150_000_000),
            Duration::from_secs(1),
            1,
            false,
        )
        .unwrap();
        let (times, sizes, _) = bench_like(20_000, 1);
        let mut reference = m.clone();
        let mut gd = GapsAndDivisors {
            gaps: [0; BLOCK],
            divisors: [0; BLOCK],
        };
        let mut out = [0u8; BLOCK];
        for (t, s) in times.chunks(BLOCK).zip(sizes.chunks(BLOCK)) {
            assert!(m.block_in_range(t, s, &mut gd));
            let last = *t.last().unwrap();
            m.color_block(&gd, s, last, None, &mut out[..t.len()]);
            for (k, (&tk, &sk)) in t.iter().zip(s).enumerate() {
                let want = reference.color(Instant::from_ns(tk), sk, Color::Green);
                assert_eq!(out[k], want as u8);
            }
        }
        assert_eq!(m.rng.next_u64(), reference.rng.next_u64());
    }

    proptest! {
        /// Same seed, same trace → same colours; at or below CTR always
        /// green; aware never promotes; a different seed changes the draws
        /// but never the estimator.
        #[test]
        fn deterministic_and_monotone(
            gaps in prop::collection::vec((0u64..2_000_000, 40u32..1600, 0u8..3), 1..300),
            ctr in 100_000u64..10_000_000, extra in 0u64..10_000_000, aware in any::<bool>())
        {
            let mk = |seed| Tswtcm::new(Rate::from_bps(ctr), Rate::from_bps(ctr + extra), Duration::from_ms(100), seed, aware).unwrap();
            let (mut a, mut b, mut c) = (mk(1), mk(1), mk(2));
            let mut now = 0;
            for (gap, size, pre) in gaps {
                now += gap;
                let pre = Color::from_u8(pre).unwrap();
                let at = Instant::from_ns(now);
                let x = a.color(at, size, pre);
                prop_assert_eq!(x, b.color(at, size, pre));
                c.color(at, size, pre);
                prop_assert_eq!(a.avg_rate_scaled(), c.avg_rate_scaled());
                if aware { prop_assert!(x >= pre); }
                if a.avg_rate_scaled() <= ctr << 16 && (!aware || pre == Color::Green) {
                    prop_assert_eq!(x, Color::Green);
                }
            }
        }
    }
}
