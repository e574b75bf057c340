//! Hierarchical Token Bucket, Linux `htb` (`net/sched/sch_htb.c`, iproute2
//! `tc/q_htb.c`, `man tc-htb`; M. Devera's design, after Floyd & Jacobson's
//! link-sharing).
//!
//! **Classes** form a tree (at most 8 levels). Each class has two token
//! buckets kept as *time* in nanoseconds, as the kernel does: `tokens`
//! (depth `buffer` = L2T(rate, burst)) for its assured `rate` and `ctokens`
//! (depth `cbuffer` = L2T(ceil, cburst)) for its `ceil`. Elapsed time
//! refills both, capped at `mbuffer` = 60 s (`htb_change_class`). Leaves
//! hold a queue (default `pfifo`, limit 1000); inner classes only account.
//!
//! **Modes** (`htb_class_mode`, no hysteresis as `htb_hysteresis=0`):
//! `ctokens + diff < 0` → *can't send*; else `tokens + diff ≥ 0` → *can
//! send*; else *may borrow*. A leaf can be served at level L when, walking
//! up from it, every class is *may borrow* until one at level L is *can
//! send* (the kernel's feed chain, `htb_activate_prios`). Levels follow the
//! kernel: leaves 0, root classes 7, inner classes one below their parent.
//!
//! **Dequeue** (`htb_dequeue`): the direct queue first; then for level 0,
//! 1, … and within a level for prio 0, 1, … (lower first) the servable
//! leaves are served by DRR: a leaf sends, `deficit[level] −= len`, and when
//! the deficit goes negative it gets `+= quantum` and the round moves on
//! (`htb_dequeue_tree`). The sent bytes are charged
//! (`htb_charge_class`): to `ctokens` of the leaf and every ancestor, to
//! `tokens` of the classes at or above the serving level; classes below it
//! only get their elapsed time (`tokens += diff`) — that is borrowing.
//! Each `accnt` clamps at `buffer` before charging and at `1 − mbuffer`
//! after. L2T is the kernel's `psched_l2t_ns` ([`RateCfg`]).
//!
//! **Modes are cached and changed by events**, as the kernel does: each
//! class keeps its mode (`cl->cmode`), changed only by a charge
//! (`htb_charge_class` → `htb_change_class_mode`) or by an event of the
//! wait queue, a heap of (instant the mode changes, class) that dequeue
//! applies up to `now` first (`htb_add_to_wait_tree`, `htb_do_events`).
//! Which leaves are servable is kept in step with the modes the way the
//! kernel's feed chains are (`htb_activate_prios` / `htb_deactivate_prios`):
//! every class holds the set of active leaves below it that reach it through
//! "may borrow" classes, and each level's *row* is the union of those sets
//! of its "can send" classes. A mode change moves one class's set to its
//! new place, so dequeue costs a few bit-set words per (level, prio), not a
//! walk over every active leaf (issue 12: 100 throttled classes). The sets
//! are bit sets over class indices, so the DRR round below is the same flat
//! round over leaf indices as before. [`Shaper::next_ready`] is the
//! earliest instant a backlogged leaf becomes servable (the wait tree's
//! first event that matters), or later if the leaf's own child is not ready;
//! it is computed from the buckets, so it needs no event processing.
//!
//! **Configuration** as tc + kernel: `rate` (required, > 0), `ceil`
//! (default rate), `burst` default `rate/HZ + mtu` and `cburst` default
//! `ceil/HZ + mtu` with tc's `HZ` read from `/proc/net/psched` — 10⁹ on
//! high-resolution-timer kernels, so ≈ `mtu` = 1600 B below 8 Gbit/s
//! (q_htb.c); bursts go to the kernel as `tc_calc_xmittime` ticks (64 ns;
//! `rounding` legacy/ceil, see [`crate::meter::linux_police`]). `quantum`
//! = `rate_bytes / r2q` (r2q default 10) clamped to [1000, 200000] with the
//! kernel's warning "quantum of class X is small/big. Consider r2q
//! change."; an explicit quantum is used as given. `prio` 0..7 (larger is
//! clamped to 7). Qdisc: `default` (the filter list's default class;
//! unclassified packets with no valid default go to the **direct queue**,
//! `direct_qlen` packets, default tx_queue_len 1000, sent unshaped ahead of
//! everything), `r2q`.
//!
//! What tc and the kernel accept is accepted, with warnings in
//! [`Htb::warnings`] (shown by `describe`) for what is suspicious: ceil
//! below rate, children's rates summing above the parent's, a child burst
//! above its parent's (`man tc-htb`: the parent's should be at least the
//! largest child's), quantum clamps. Refused, as by the kernel: rate or ceil
//! of zero, a tree deeper than 8 levels ("tree is too deep"), a queue on an
//! inner class. Cycles are impossible: a parent must be listed before its
//! children.
//!
//! Simplified: servable leaves of one (level, prio) are served in one DRR
//! round over leaf indices; the kernel nests the round robin along the feed
//! tree (`htb_lookup_leaf`: a pointer per inner class and prio), which gives
//! the same order when the borrowing leaves hang off one class (two-level
//! trees), not always on deeper ones. The feed sets here are flattened to
//! leaves for that reason: nesting them would change results of deeper
//! trees, which this change (speed only) does not. Left out: `htb_hysteresis`, the 2-jiffy event
//! budget ("too many events"), offload, rate estimators, filters attached
//! to inner classes.
//!
//! **`overhead`, `mpu`, `linklayer`** (`tc class add … htb … overhead N
//! mpu M linklayer atm`): q_htb.c puts them in both `tc_ratespec`s (rate
//! and ceil) and htb_change_class hands those to
//! `psched_ratecfg_precompute`, so every charge is `psched_l2t_ns` of the
//! adjusted length ([`RateCfg::l2t_ns`]); the default bursts are computed
//! from the bare mtu, as tc does.

use super::tree::{inline, pfifo, Child, DEFAULT_TXQUEUELEN};
use crate::classify::Filters;
use crate::meter::linux_police::{tc_calc_xmittime, LinkLayer, RateCfg, TcRounding};
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;
use crate::units::{Bytes, Rate};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// `TC_HTB_NUMPRIO`.
pub const NUM_PRIO: usize = 8;
/// `TC_HTB_MAXDEPTH`.
pub const MAX_DEPTH: usize = 8;
/// tc's default `mtu` for the rate table and the burst formula.
pub const DEFAULT_MTU: u32 = 1600;
/// tc's default `r2q`.
pub const DEFAULT_R2Q: u32 = 10;
/// tc's `get_hz()` on a high-resolution-timer kernel (`/proc/net/psched`
/// fourth field 0x3b9aca00).
pub const TC_HZ: u64 = 1_000_000_000;
/// `cl->mbuffer`: 60 s.
const MBUFFER_NS: i64 = 60_000_000_000;

/// One class as configured (`tc class add … htb …`).
pub struct HtbClassConfig {
    /// Index of the parent class in the list (must be smaller), or `None`
    /// for a root class (parent = the qdisc).
    pub parent: Option<usize>,
    pub rate: Rate,
    pub ceil: Option<Rate>,
    pub burst: Option<Bytes>,
    pub cburst: Option<Bytes>,
    pub prio: u32,
    pub quantum: Option<u32>,
    pub mtu: u32,
    pub mpu: u16,
    /// Bytes added to each packet's length before it is charged.
    pub overhead: u16,
    pub linklayer: LinkLayer,
    /// The leaf's queue (default pfifo of 1000); must be `None` on classes
    /// that have children.
    pub child: Option<Child>,
}

impl HtbClassConfig {
    /// A class with tc's defaults.
    pub fn new(parent: Option<usize>, rate: Rate) -> Self {
        HtbClassConfig {
            parent,
            rate,
            ceil: None,
            burst: None,
            cburst: None,
            prio: 0,
            quantum: None,
            mtu: DEFAULT_MTU,
            mpu: 0,
            overhead: 0,
            linklayer: LinkLayer::Ethernet,
            child: None,
        }
    }
    pub fn ceil(mut self, ceil: Rate) -> Self {
        self.ceil = Some(ceil);
        self
    }
    pub fn prio(mut self, prio: u32) -> Self {
        self.prio = prio;
        self
    }
    pub fn quantum(mut self, q: u32) -> Self {
        self.quantum = Some(q);
        self
    }
    pub fn burst(mut self, b: Bytes) -> Self {
        self.burst = Some(b);
        self
    }
    pub fn cburst(mut self, b: Bytes) -> Self {
        self.cburst = Some(b);
        self
    }
    pub fn child(mut self, c: Child) -> Self {
        self.child = Some(c);
        self
    }

    /// Reads tc's class keys: `rate`, `ceil`, `burst` (`buffer`,
    /// `maxburst`), `cburst` (`cbuffer`, `cmaxburst`), `prio`, `quantum`,
    /// `mtu`, `mpu`, `overhead`, `linklayer` (`ethernet` | `atm` | `adsl`).
    pub fn from_params(parent: Option<usize>, p: &mut Params) -> Result<Self, ConfigError> {
        p.alias("burst", &["buffer", "maxburst"])?;
        p.alias("cburst", &["cbuffer", "cmaxburst"])?;
        let mut c = HtbClassConfig::new(parent, p.rate("rate")?);
        c.ceil = p.opt_rate("ceil")?;
        c.burst = p.opt_size("burst")?;
        c.cburst = p.opt_size("cburst")?;
        c.prio = u32_key("prio", p.opt_u64("prio")?)?.unwrap_or(0);
        c.quantum = u32_key("quantum", p.opt_u64("quantum")?)?.filter(|&q| q > 0);
        c.mtu = u32_key("mtu", p.opt_size("mtu")?.map(|b| b.get()))?.unwrap_or(DEFAULT_MTU);
        c.mpu = match p.opt_size("mpu")? {
            None => 0,
            Some(b) => u16::try_from(b.get())
                .map_err(|_| ConfigError::new("mpu", "above tc's 16-bit 65535B"))?,
        };
        // q_htb.c: `get_u16(&overhead, …)`, a plain byte count.
        c.overhead = match p.opt_u64("overhead")? {
            None => 0,
            Some(v) => u16::try_from(v).map_err(|_| {
                ConfigError::new("overhead", format!("must be 0..65535 bytes, got {v}"))
            })?,
        };
        c.linklayer = LinkLayer::from_params(p)?;
        Ok(c)
    }
}

fn u32_key(key: &'static str, v: Option<u64>) -> Result<Option<u32>, ConfigError> {
    v.map(|v| u32::try_from(v).map_err(|_| ConfigError::new(key, format!("{v} is above 2^32-1"))))
        .transpose()
}

/// Qdisc-level settings (`tc qdisc add … htb [default N] [r2q N] [direct_qlen P]`).
pub struct HtbConfig {
    pub r2q: u32,
    pub direct_qlen: u32,
    pub rounding: TcRounding,
}

impl Default for HtbConfig {
    fn default() -> Self {
        HtbConfig {
            r2q: DEFAULT_R2Q,
            direct_qlen: DEFAULT_TXQUEUELEN,
            rounding: TcRounding::Legacy,
        }
    }
}

impl HtbConfig {
    /// Reads `r2q`, `direct_qlen`, `rounding` (`legacy` | `ceil`).
    pub fn from_params(p: &mut Params) -> Result<Self, ConfigError> {
        let d = HtbConfig::default();
        Ok(HtbConfig {
            r2q: u32_key("r2q", p.opt_u64("r2q")?)?.unwrap_or(d.r2q),
            direct_qlen: u32_key("direct-qlen", p.opt_packets("direct-qlen")?)?
                .unwrap_or(d.direct_qlen),
            rounding: match p.opt_choice("rounding", &["legacy", "ceil"])? {
                Some("ceil") => TcRounding::Ceil,
                _ => TcRounding::Legacy,
            },
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    CantSend,
    MayBorrow,
    CanSend,
}

struct Leaf {
    child: Child,
    prio: u8,
    quantum: u32,
    deficit: [i32; MAX_DEPTH],
    active: bool,
}

struct Class {
    parent: Option<usize>,
    level: u8,
    /// Mode at the last charge / event (`cl->cmode`).
    mode: Mode,
    /// When the wait queue holds this class, the instant its mode changes
    /// (`cl->pq_key`); `u64::MAX` when it is "can send" (not queued).
    ev_at: u64,
    leaf: Option<Leaf>,
    rate: RateCfg,
    ceil: RateCfg,
    buffer: i64,
    cbuffer: i64,
    tokens: i64,
    ctokens: i64,
    t_c: u64,
    // Counters (tc -s class show: lended, borrowed).
    lends: u64,
    borrows: u64,
    // As configured, for describe().
    rate_bps: Rate,
    ceil_bps: Rate,
    burst: u64,
    cburst: u64,
}

impl Class {
    #[inline]
    fn diff(&self, now: u64) -> i64 {
        (now.saturating_sub(self.t_c) as i64).min(MBUFFER_NS)
    }
    #[cfg(any(test, debug_assertions))]
    #[inline]
    fn mode(&self, now: u64) -> Mode {
        let d = self.diff(now);
        if self.ctokens + d < 0 {
            Mode::CantSend
        } else if self.tokens + d >= 0 {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        }
    }
    /// The instant after `now` at which [`Class::mode`] next changes
    /// (`htb_class_mode`'s `*diff`), `None` when it is "can send" (a mode
    /// only rises with time between charges). Exact: below the 60 s cap
    /// `diff = now − t_c`, and both bucket levels stay above `−mbuffer`.
    #[cfg(test)]
    fn next_change(&self, now: u64) -> Option<u64> {
        let d = self.diff(now);
        let need = if self.ctokens + d < 0 {
            -(self.ctokens + d)
        } else if self.tokens + d < 0 {
            -(self.tokens + d)
        } else {
            return None;
        };
        Some(now + need as u64)
    }
    /// [`Class::mode`] and [`Class::next_change`] (`u64::MAX` for `None`)
    /// from one `diff`: the same compares, made once (a test checks the
    /// pair against the two functions).
    #[inline(always)]
    fn mode_and_change(&self, now: u64) -> (Mode, u64) {
        let d = self.diff(now);
        let (c, r) = (self.ctokens + d, self.tokens + d);
        if c < 0 {
            (Mode::CantSend, now + (-c) as u64)
        } else if r < 0 {
            (Mode::MayBorrow, now + (-r) as u64)
        } else {
            (Mode::CanSend, u64::MAX)
        }
    }
    /// (instant it stops being "can't send", instant it is "can send").
    fn mode_times(&self, now: u64) -> (u64, u64) {
        let d = self.diff(now);
        let cw = (-(self.ctokens + d)).max(0) as u64;
        let rw = (-(self.tokens + d)).max(0) as u64;
        (now + cw, now + cw.max(rw))
    }
}

/// Linux `htb` qdisc.
pub struct Htb {
    classes: Vec<Class>,
    filters: Filters,
    direct: VecDeque<Packet>,
    direct_bytes: u64,
    direct_qlen: u32,
    direct_packets: u64,
    r2q: u32,
    /// Per (level, prio): the leaf index the DRR round points at.
    ptr: [[usize; NUM_PRIO]; MAX_DEPTH],
    /// The feed sets, row and wait queue (see the module comment).
    sets: Sets,
    /// The wait queue: instant << 32 | class, earliest first; an entry is
    /// live while its instant equals the class's `ev_at` (older ones are
    /// skipped when they come up). One integer compares faster than a pair.
    wait: BinaryHeap<Reverse<u128>>,
    /// Tests: `false` turns off the reuse of a superseded top entry (see
    /// [`Htb::queue_event`]), for the differential test against the plain
    /// pop-and-push queue.
    #[cfg(test)]
    reuse_stale: bool,
    /// Debug builds: the last `now` seen (modes are cached, so time must not
    /// go back).
    #[cfg(debug_assertions)]
    last_now: u64,
    warnings: Vec<String>,
}

/// Bit sets over class indices, `w` words each.
struct Sets {
    w: usize,
    /// Per class: active leaves below it (itself for a leaf) that reach it
    /// through "may borrow" classes only (the kernel's feed, flattened).
    sub: Vec<u64>,
    /// Per level: the leaves servable at that level (union of `sub` of its
    /// "can send" classes; the kernel's row).
    row: Vec<u64>,
    /// Per prio: the leaves of that prio (fixed).
    prio: Vec<u64>,
    /// Which prios have leaves (bit p).
    prios_used: u8,
    /// Which levels have classes (bit l): only those rows can ever hold a
    /// leaf (a row is fed by the "can send" classes of its level), so
    /// `pick` skips the others (a two-level tree uses levels 0 and 7).
    levels_used: u8,
    /// Leaves with packets.
    active: Vec<u64>,
    /// Leaves whose child gave nothing this dequeue (non-work-conserving).
    skipped: Vec<u64>,
    any_skipped: bool,
}

/// Bits of `row & prio & !skipped` below `n`: the first at or after `from`,
/// else the first before it (a DRR round over indices from `from`).
#[inline]
fn next_cyclic(row: &[u64], prio: &[u64], skipped: &[u64], from: usize) -> Option<usize> {
    let word = |i: usize| row[i] & prio[i] & !skipped[i];
    let w = row.len();
    let (fw, fb) = (from / 64, from % 64);
    let first = word(fw) & (!0u64 << fb);
    if first != 0 {
        return Some(fw * 64 + first.trailing_zeros() as usize);
    }
    for i in (fw + 1..w).chain(0..=fw) {
        let x = word(i);
        if x != 0 {
            return Some(i * 64 + x.trailing_zeros() as usize);
        }
    }
    None
}

/// The OR of a set's words: straight-line up to 128 classes (as
/// [`merge`]), where the general fold would be vectorised with a prologue.
#[inline(always)]
fn or_words(s: &[u64]) -> u64 {
    match s {
        [a] => *a,
        [a, b] => a | b,
        s => s.iter().fold(0, |a, &x| a | x),
    }
}

/// Adds (`ADD`) or removes bits `x` in `d`.
#[inline(always)]
fn apply<const ADD: bool>(d: &mut u64, x: u64) {
    if ADD {
        *d |= x;
    } else {
        *d &= !x;
    }
}

/// Adds (`ADD`) or removes the set `s` in `d` (both `w` words). Up to 128
/// classes (`w` ≤ 2) take a straight line: the general loop is vectorised
/// with a prologue that costs more than the one or two words it moves, at
/// every mode change.
#[inline(always)]
fn merge<const ADD: bool>(d: &mut [u64], s: &[u64]) {
    match (d, s) {
        ([d0], [s0]) => apply::<ADD>(d0, *s0),
        ([d0, d1], [s0, s1]) => {
            apply::<ADD>(d0, *s0);
            apply::<ADD>(d1, *s1);
        }
        (d, s) => {
            for (d, &x) in d.iter_mut().zip(s) {
                apply::<ADD>(d, x);
            }
        }
    }
}

impl Htb {
    /// Builds the tree; `filters` classify into class indices and its
    /// default is HTB's `default` class.
    pub fn new(
        cfg: HtbConfig,
        classes: Vec<HtbClassConfig>,
        filters: Filters,
    ) -> Result<Self, ConfigError> {
        if classes.is_empty() {
            return Err(ConfigError::new("classes", "htb needs at least one class"));
        }
        let n = classes.len();
        filters.check(n)?;
        let r2q = cfg.r2q.max(1); // htb_init: rate2quantum < 1 → 1
        let mut warnings = Vec::new();
        let mut has_children = vec![false; n];
        for (i, c) in classes.iter().enumerate() {
            if let Some(p) = c.parent {
                if p >= i {
                    return Err(ConfigError::new(
                        "parent",
                        format!("class {i}: parent {p} must be listed before its children"),
                    ));
                }
                has_children[p] = true;
            }
        }
        let mut out: Vec<Class> = Vec::with_capacity(n);
        for (i, c) in classes.into_iter().enumerate() {
            let rate_b = c.rate.bytes_per_sec();
            let ceil = c.ceil.unwrap_or(c.rate);
            let ceil_b = ceil.bytes_per_sec();
            if rate_b == 0 || ceil_b == 0 {
                return Err(ConfigError::new(
                    if rate_b == 0 { "rate" } else { "ceil" },
                    format!("class {i}: must be at least 8bit (tc stores bytes/s; the kernel refuses 0)"),
                ));
            }
            if ceil_b < rate_b {
                warnings.push(format!(
                    "class {i}: ceil {ceil} is below rate {}; the class never gets its rate",
                    c.rate
                ));
            }
            // q_htb.c: buffer = rate/get_hz() + mtu, in bytes.
            let burst = c.burst.map_or(rate_b / TC_HZ + c.mtu as u64, |b| b.get());
            let cburst = c.cburst.map_or(ceil_b / TC_HZ + c.mtu as u64, |b| b.get());
            let ticks = |key: &'static str, r: u64, b: u64| {
                tc_calc_xmittime(r, b, cfg.rounding).ok_or_else(|| {
                    ConfigError::new(
                        key,
                        format!("class {i}: {b}B is out of tc's range at this rate"),
                    )
                })
            };
            let buffer = (ticks("burst", rate_b, burst)? as i64) << 6;
            let cbuffer = (ticks("cburst", ceil_b, cburst)? as i64) << 6;
            let level = match c.parent {
                None => (MAX_DEPTH - 1) as u8,
                Some(p) => {
                    if out[p].level == 0 {
                        return Err(ConfigError::new(
                            "parent",
                            format!("class {i}: tree is too deep (at most {MAX_DEPTH} levels)"),
                        ));
                    }
                    out[p].level - 1
                }
            };
            let leaf = if has_children[i] {
                if c.child.is_some() {
                    return Err(ConfigError::new(
                        "child",
                        format!("class {i} has child classes, so it holds no queue"),
                    ));
                }
                None
            } else {
                let mut quantum = (rate_b / r2q as u64).min(i32::MAX as u64) as u32;
                match c.quantum {
                    Some(q) => quantum = q,
                    None if quantum < 1000 => {
                        warnings.push(format!("quantum of class {i} is small. Consider r2q change. (rate/r2q = {quantum}B, using 1000)"));
                        quantum = 1000;
                    }
                    None if quantum > 200_000 => {
                        warnings.push(format!("quantum of class {i} is big. Consider r2q change. (rate/r2q = {quantum}B, using 200000)"));
                        quantum = 200_000;
                    }
                    None => {}
                }
                Some(Leaf {
                    child: c.child.unwrap_or_else(|| pfifo(DEFAULT_TXQUEUELEN)),
                    prio: c.prio.min(NUM_PRIO as u32 - 1) as u8,
                    quantum,
                    deficit: [0; MAX_DEPTH],
                    active: false,
                })
            };
            out.push(Class {
                parent: c.parent,
                level: if has_children[i] { level } else { 0 },
                // Full buckets at t_c = 0: "can send" from the start.
                mode: Mode::CanSend,
                ev_at: u64::MAX,
                leaf,
                rate: RateCfg::precompute(rate_b, c.overhead, c.mpu).linklayer(c.linklayer),
                ceil: RateCfg::precompute(ceil_b, c.overhead, c.mpu).linklayer(c.linklayer),
                buffer,
                cbuffer,
                tokens: buffer,
                ctokens: cbuffer,
                t_c: 0,
                lends: 0,
                borrows: 0,
                rate_bps: c.rate,
                ceil_bps: ceil,
                burst,
                cburst,
            });
        }
        // Inner classes keep the kernel's level (parent − 1); leaves are 0.
        for p in 0..n {
            if !has_children[p] {
                continue;
            }
            let kids: Vec<usize> = (0..n).filter(|&k| out[k].parent == Some(p)).collect();
            let sum: u64 = kids.iter().map(|&k| out[k].rate_bps.bps()).sum();
            if sum > out[p].rate_bps.bps() {
                warnings.push(format!(
                    "children of class {p} have rates summing to {}, above its rate {} (tc accepts; they cannot all get it)",
                    Rate::from_bps(sum),
                    out[p].rate_bps
                ));
            }
            for &k in &kids {
                if out[k].burst > out[p].burst {
                    warnings.push(format!(
                        "class {k}: burst {}B above its parent's {}B (man tc-htb: the parent's should be at least the largest child's)",
                        out[k].burst, out[p].burst
                    ));
                }
            }
        }
        let w = n.div_ceil(64);
        let mut sets = Sets {
            w,
            sub: vec![0; n * w],
            row: vec![0; MAX_DEPTH * w],
            prio: vec![0; NUM_PRIO * w],
            prios_used: 0,
            levels_used: 0,
            active: vec![0; w],
            skipped: vec![0; w],
            any_skipped: false,
        };
        for (i, c) in out.iter().enumerate() {
            sets.levels_used |= 1 << c.level;
            if let Some(l) = &c.leaf {
                sets.prio[l.prio as usize * w + i / 64] |= 1 << (i % 64);
                sets.prios_used |= 1 << l.prio;
            }
        }
        Ok(Htb {
            classes: out,
            filters,
            direct: VecDeque::new(),
            direct_bytes: 0,
            direct_qlen: cfg.direct_qlen,
            direct_packets: 0,
            r2q,
            ptr: [[0; NUM_PRIO]; MAX_DEPTH],
            sets,
            wait: BinaryHeap::new(),
            #[cfg(test)]
            reuse_stale: true,
            #[cfg(debug_assertions)]
            last_now: 0,
            warnings,
        })
    }

    /// What tc/the kernel would warn about (also in `describe`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
    /// Class `i`'s quantum (leaves) in bytes.
    pub fn quantum(&self, i: usize) -> Option<u32> {
        self.classes[i].leaf.as_ref().map(|l| l.quantum)
    }
    /// Class `i`'s bucket depths in ns: (buffer, cbuffer).
    pub fn buffers_ns(&self, i: usize) -> (u64, u64) {
        (
            self.classes[i].buffer as u64,
            self.classes[i].cbuffer as u64,
        )
    }
    /// Class `i`'s kernel level (leaves 0, roots 7).
    pub fn level(&self, i: usize) -> u8 {
        self.classes[i].level
    }
    /// Packets sent through the direct queue.
    pub fn direct_packets(&self) -> u64 {
        self.direct_packets
    }

    /// The level at which leaf `l` can be served now, if any.
    #[cfg(debug_assertions)]
    fn serving_level(&self, l: usize, now: u64) -> Option<u8> {
        let mut c = l;
        loop {
            let cl = &self.classes[c];
            match cl.mode(now) {
                Mode::CanSend => return Some(cl.level),
                Mode::CantSend => return None,
                Mode::MayBorrow => c = cl.parent?,
            }
        }
    }

    /// `htb_charge_class`.
    fn charge(&mut self, leaf: usize, level: u8, bytes: u32, now: u64) {
        let mut c = Some(leaf);
        while let Some(i) = c {
            let cl = &mut self.classes[i];
            let diff = cl.diff(now);
            if cl.level >= level {
                if cl.level == level {
                    cl.lends += 1;
                }
                let toks = (cl.tokens + diff).min(cl.buffer) - cl.rate.l2t_ns(bytes) as i64;
                cl.tokens = if toks <= -MBUFFER_NS {
                    1 - MBUFFER_NS
                } else {
                    toks
                };
            } else {
                cl.borrows += 1;
                cl.tokens += diff;
            }
            let ctoks = (cl.ctokens + diff).min(cl.cbuffer) - cl.ceil.l2t_ns(bytes) as i64;
            cl.ctokens = if ctoks <= -MBUFFER_NS {
                1 - MBUFFER_NS
            } else {
                ctoks
            };
            cl.t_c = now;
            c = cl.parent;
        }
        let mut c = Some(leaf);
        while let Some(i) = c {
            self.update_mode(i, now);
            c = self.classes[i].parent;
        }
    }

    /// Adds (or removes) bits that reach class `c` to the feed sets above
    /// `c` and to the row of the first class up that is not "may borrow"
    /// (`htb_activate_prios` / `htb_deactivate_prios`, with the cached
    /// modes). The bits are `bit` (word index, mask) when given, else class
    /// `c`'s own feed set, read in place: the walk writes only to classes
    /// above `c` and to rows, never to `c`'s set.
    #[inline(always)]
    fn relink<const ADD: bool>(&mut self, c: usize, bit: Option<(usize, u64)>) {
        let w = self.sets.w;
        let mut a = c;
        loop {
            let cl = &self.classes[a];
            // Compares rather than a `match`, which compiles to a jump
            // table whose indirect branch mispredicts as modes change.
            let (to_row, dst) = if cl.mode == Mode::CanSend {
                (true, cl.level as usize)
            } else if cl.mode == Mode::CantSend {
                return;
            } else {
                match cl.parent {
                    Some(p) => (false, p),
                    None => return,
                }
            };
            let sets = &mut self.sets;

            match bit {
                Some((wi, b)) => {
                    let d = if to_row {
                        &mut sets.row[dst * w + wi]
                    } else {
                        &mut sets.sub[dst * w + wi]
                    };
                    apply::<ADD>(d, b);
                }
                None => {
                    // Whole slices (no bounds check per word); `dst` is
                    // an ancestor of `c`, never `c`, so the two sets of
                    // `sub` are disjoint.
                    let (src, d) = if to_row {
                        (
                            &sets.sub[c * w..(c + 1) * w],
                            &mut sets.row[dst * w..(dst + 1) * w],
                        )
                    } else if dst < c {
                        let (lo, hi) = sets.sub.split_at_mut(c * w);
                        (&hi[..w], &mut lo[dst * w..(dst + 1) * w])
                    } else {
                        let (lo, hi) = sets.sub.split_at_mut(dst * w);
                        (&lo[c * w..(c + 1) * w], &mut hi[..w])
                    };
                    merge::<ADD>(d, src);
                }
            }
            if to_row {
                return;
            }
            a = dst;
        }
    }

    /// Moves class `c`'s feed set from where its old mode put it to where
    /// `mode` puts it (`htb_change_class_mode`).
    #[inline(always)]
    fn set_mode(&mut self, c: usize, mode: Mode) {
        if self.classes[c].mode == mode {
            return;
        }
        let w = self.sets.w;
        // An OR of the words, not `any`: its early exit is a branch on
        // which word holds the bits, which mispredicts as classes vary.
        let any = or_words(&self.sets.sub[c * w..(c + 1) * w]) != 0;
        if any {
            self.relink::<false>(c, None);
        }
        self.classes[c].mode = mode;
        if any {
            self.relink::<true>(c, None);
        }
    }

    /// Brings class `c`'s cached mode to `now` and queues its next change
    /// (`htb_change_class_mode` + `htb_add_to_wait_tree`). As in
    /// `htb_charge_class`, a class whose mode did not change keeps its queued
    /// event: a charge only moves the change later (tokens drop, or are
    /// clamped to `1 − mbuffer`, never above the level they had), so the
    /// event comes early at worst, recomputes the same mode and re-queues.
    fn update_mode(&mut self, c: usize, now: u64) {
        if let Some(key) = self.update_mode_key(c, now) {
            self.queue_event(key);
        }
    }

    /// Adds `key` to the wait queue, in the place of the top entry when that
    /// one is superseded (its class's `ev_at` differs): a superseded entry
    /// is skipped whenever it comes up, so dropping it early changes no
    /// event, and one sift replaces a later pop plus this push. `do_events`
    /// leaves the entry it has just made superseded on top when nothing
    /// else is due, for this.
    #[inline(always)]
    fn queue_event(&mut self, key: u128) {
        #[cfg(test)]
        let reuse = self.reuse_stale;
        #[cfg(not(test))]
        let reuse = true;
        if reuse {
            if let Some(mut top) = self.wait.peek_mut() {
                let Reverse(k) = *top;
                if self.classes[(k as u32) as usize].ev_at != (k >> 32) as u64 {
                    *top = Reverse(key);
                    return;
                }
            }
        }
        self.wait.push(Reverse(key));
    }

    /// [`Htb::update_mode`] without the push: the wait-queue key to add, if
    /// any (so that `do_events` can put it in the place of the entry it
    /// has just handled, one sift instead of a pop and a push).
    #[inline(always)]
    fn update_mode_key(&mut self, c: usize, now: u64) -> Option<u128> {
        // `set_mode` touches only the sets and the cached mode, never the
        // buckets, so the next change computed before it is the same.
        let (m, at) = self.classes[c].mode_and_change(now);
        if self.classes[c].mode != m {
            self.set_mode(c, m);
        }
        let cl = &mut self.classes[c];
        if at == u64::MAX {
            cl.ev_at = u64::MAX; // "can send": a queued entry is now stale
            None
        } else if at < cl.ev_at {
            cl.ev_at = at;
            Some((at as u128) << 32 | c as u128)
        } else {
            None
        }
    }

    /// `htb_do_events`: applies the mode changes due by `now`.
    fn do_events(&mut self, now: u64) {
        #[cfg(debug_assertions)]
        {
            debug_assert!(now >= self.last_now, "htb: time went back");
            self.last_now = now;
        }
        while let Some(&Reverse(key)) = self.wait.peek() {
            let (at, c) = ((key >> 32) as u64, (key as u32) as usize);
            if at > now {
                break;
            }
            if self.classes[c].ev_at != at {
                self.wait.pop();
                continue; // superseded by a later charge
            }
            self.classes[c].ev_at = u64::MAX;
            // The heap then holds what a pop and a push would leave (the
            // mode change touches only the sets, never the queue), and it
            // pops keys in the same order: ties are equal integers.
            match self.update_mode_key(c, now) {
                Some(k) => {
                    if let Some(mut top) = self.wait.peek_mut() {
                        *top = Reverse(k);
                    }
                }
                None => {
                    // The entry is superseded now ("can send"). Its
                    // children are the only candidates for the next
                    // earliest: when neither is due, nothing else is, and
                    // the entry stays on top for `queue_event` to reuse.
                    #[cfg(test)]
                    let reuse = self.reuse_stale;
                    #[cfg(not(test))]
                    let reuse = true;
                    let s = self.wait.as_slice();
                    let due =
                        |i: usize| s.get(i).is_some_and(|&Reverse(k)| (k >> 32) as u64 <= now);
                    if reuse && !due(1) && !due(2) {
                        break;
                    }
                    self.wait.pop();
                }
            }
        }
        // Superseded entries wait for their instant; rebuild when they
        // outnumber the live ones.
        if self.wait.len() > 4 * self.classes.len() + 64 {
            let live: Vec<_> = (0..self.classes.len())
                .filter(|&c| self.classes[c].ev_at != u64::MAX)
                .map(|c| Reverse((self.classes[c].ev_at as u128) << 32 | c as u128))
                .collect();
            self.wait = BinaryHeap::from(live);
        }
    }

    fn activate(&mut self, l: usize) {
        let w = self.sets.w;
        let (wi, bit) = (l / 64, 1u64 << (l % 64));
        self.sets.active[wi] |= bit;
        self.sets.sub[l * w + wi] |= bit;
        self.relink::<true>(l, Some((wi, bit)));
    }

    fn deactivate(&mut self, l: usize) {
        let w = self.sets.w;
        let (wi, bit) = (l / 64, 1u64 << (l % 64));
        self.relink::<false>(l, Some((wi, bit)));
        self.sets.sub[l * w + wi] &= !bit;
        self.sets.active[wi] &= !bit;
        if let Some(leaf) = self.classes[l].leaf.as_mut() {
            leaf.active = false;
        }
    }

    /// The best servable leaf: lowest (level, prio), then the first in the
    /// DRR round from that (level, prio)'s pointer. Needs the modes brought
    /// to `now` ([`Htb::do_events`]).
    fn pick(&self) -> Option<(usize, u8)> {
        let w = self.sets.w;
        // Only the levels and priorities some class has, lowest first, by
        // walking the set bits (a loop over all 8 × 8 with a bit test per
        // step was ~11 iterations per packet in the bench's two-level tree).
        let mut levels = self.sets.levels_used;
        while levels != 0 {
            let level = levels.trailing_zeros() as usize;
            levels &= levels - 1;
            let row = &self.sets.row[level * w..(level + 1) * w];
            // OR of the words (no early exit: see `set_mode`).
            if or_words(row) == 0 {
                continue;
            }
            let mut prios = self.sets.prios_used;
            while prios != 0 {
                let prio = prios.trailing_zeros() as usize;
                prios &= prios - 1;
                let pm = &self.sets.prio[prio * w..(prio + 1) * w];
                if let Some(l) = next_cyclic(row, pm, &self.sets.skipped, self.ptr[level][prio]) {
                    return Some((l, level as u8));
                }
            }
        }
        None
    }

    /// Debug builds: the old full scan, which [`Htb::pick`] must agree with.
    #[cfg(debug_assertions)]
    fn pick_scan(&self, now: u64) -> Option<(usize, u8)> {
        let n = self.classes.len();
        let bit = |v: &[u64], l: usize| v[l / 64] >> (l % 64) & 1 == 1;
        let mut best: Option<(u8, u8, usize, usize)> = None;
        for l in (0..n).filter(|&l| bit(&self.sets.active, l)) {
            if bit(&self.sets.skipped, l) {
                continue;
            }
            let Some(level) = self.serving_level(l, now) else {
                continue;
            };
            let prio = self.classes[l].leaf.as_ref().map_or(0, |x| x.prio);
            let ptr = self.ptr[level as usize][prio as usize];
            let key = (level, prio, (l + n - ptr) % n, l);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        best.map(|(level, _, _, l)| (l, level))
    }
}

impl Shaper for Htb {
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let leaf = self
            .filters
            .list
            .iter()
            .find_map(|f| f.classifier.offset(&pkt).map(|o| f.class + o))
            .filter(|&c| self.classes[c].leaf.is_some())
            .or(self
                .filters
                .default
                .filter(|&c| self.classes[c].leaf.is_some()));
        let Some(c) = leaf else {
            // HTB_DIRECT: no class, or a bad default ("this is safe bet").
            if self.direct.len() >= self.direct_qlen as usize {
                return Err(Dropped {
                    packet: pkt,
                    reason: DropReason::QueueFull,
                });
            }
            self.direct_bytes += pkt.size_bytes as u64;
            self.direct.push_back(pkt);
            return Ok(());
        };
        let l = self.classes[c].leaf.as_mut().expect("filtered to leaves");
        // A head-drop child may take the packet and hand back an older
        // one: the leaf is active whenever its child holds something.
        let r = l.child.enqueue(now, pkt);
        if !l.active && l.child.backlog_packets() > 0 {
            l.active = true;
            self.activate(c);
        }
        r
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        if let Some(p) = self.direct.pop_front() {
            self.direct_bytes -= p.size_bytes as u64;
            self.direct_packets += 1;
            return Some(p);
        }
        let t = now.as_ns();
        let n = self.classes.len();
        self.do_events(t);
        if self.sets.any_skipped {
            self.sets.skipped.fill(0);
            self.sets.any_skipped = false;
        }
        loop {
            let picked = self.pick();
            #[cfg(debug_assertions)]
            debug_assert_eq!(picked, self.pick_scan(t), "htb: row out of step with modes");
            let Some((l, level)) = picked else {
                break;
            };
            let leaf = self.classes[l]
                .leaf
                .as_mut()
                .expect("active leaves are leaves");
            let Some(p) = leaf.child.dequeue(now) else {
                if leaf.child.backlog_packets() == 0 {
                    self.deactivate(l);
                } else {
                    // Non-work-conserving child.
                    self.sets.skipped[l / 64] |= 1 << (l % 64);
                    self.sets.any_skipped = true;
                }
                continue;
            };
            let d = &mut leaf.deficit[level as usize];
            *d -= p.size_bytes as i32;
            if *d < 0 {
                *d += leaf.quantum as i32;
                // (l + 1) mod n without a division (l < n).
                self.ptr[level as usize][leaf.prio as usize] = if l + 1 == n { 0 } else { l + 1 };
            }
            if leaf.child.backlog_packets() == 0 {
                self.deactivate(l);
            }
            self.charge(l, level, p.size_bytes, t);
            return Some(p);
        }
        None
    }

    fn next_ready(&self, now: Instant) -> Option<Instant> {
        if !self.direct.is_empty() {
            return Some(now);
        }
        let t = now.as_ns();
        let mut best: Option<u64> = None;
        let n = self.classes.len();
        let active = &self.sets.active;
        for l in (0..n).filter(|&l| active[l / 64] >> (l % 64) & 1 == 1) {
            let leaf = self.classes[l].leaf.as_ref().expect("leaf");
            let Some(child_at) = leaf.child.next_ready(now) else {
                continue;
            };
            // Earliest instant some ancestor-or-self A can send while every
            // class below A on the path is no longer "can't send".
            let (mut below_ok, mut at) = (t, u64::MAX);
            let mut c = Some(l);
            while let Some(i) = c {
                let (not_cant, can) = self.classes[i].mode_times(t);
                at = at.min(below_ok.max(can));
                below_ok = below_ok.max(not_cant);
                c = self.classes[i].parent;
            }
            let at = at.max(child_at.as_ns());
            best = Some(best.map_or(at, |b| b.min(at)));
            if at <= t {
                break;
            }
        }
        best.map(Instant::from_ns)
    }

    fn backlog_packets(&self) -> usize {
        self.direct.len()
            + self
                .classes
                .iter()
                .filter_map(|c| c.leaf.as_ref())
                .map(|l| l.child.backlog_packets())
                .sum::<usize>()
    }
    fn backlog_bytes(&self) -> u64 {
        self.direct_bytes
            + self
                .classes
                .iter()
                .filter_map(|c| c.leaf.as_ref())
                .map(|l| l.child.backlog_bytes())
                .sum::<u64>()
    }

    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        for l in self.classes.iter_mut().filter_map(|c| c.leaf.as_mut()) {
            l.child.drain_dropped(out);
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = vec![
            ("kind", "htb".to_string()),
            ("r2q", self.r2q.to_string()),
            (
                "default",
                self.filters
                    .default
                    .map_or("none (direct queue)".to_string(), |x| x.to_string()),
            ),
            ("direct_qlen", self.direct_qlen.to_string()),
        ];
        for (i, c) in self.classes.iter().enumerate() {
            let mut s = format!(
                "id={i} parent={} level={} rate={} ceil={} burst={}B cburst={}B buffer_ns={} cbuffer_ns={}",
                c.parent.map_or("root".to_string(), |p| p.to_string()),
                c.level,
                c.rate_bps,
                c.ceil_bps,
                c.burst,
                c.cburst,
                c.buffer,
                c.cbuffer
            );
            // Only when set, so tc's defaults describe as before.
            let r = &c.rate;
            if r.overhead != 0 || r.mpu != 0 || r.atm {
                let ll = if r.atm { "atm" } else { "ethernet" };
                s += &format!(" overhead={}B mpu={}B linklayer={ll}", r.overhead, r.mpu);
            }
            if let Some(l) = &c.leaf {
                s += &format!(
                    " prio={} quantum={} child={}",
                    l.prio,
                    l.quantum,
                    inline(&l.child.describe())
                );
            }
            d.push(("class", s));
        }
        for w in &self.warnings {
            d.push(("warning", w.clone()));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{backlogged_bytes, flow_filters, flow_packet};
    use proptest::prelude::*;

    fn mbit(m: u64) -> Rate {
        Rate::from_bps(m * 1_000_000)
    }

    /// Mbit/s of each flow over a backlogged run of `n_out` packets.
    fn rates(q: &mut Htb, sizes: &[u32], n_out: usize) -> Vec<f64> {
        let (bytes, ns) = backlogged_bytes(q, sizes, n_out);
        bytes.iter().map(|&b| b as f64 * 8e3 / ns as f64).collect()
    }

    /// Differential: the one-pass `mode_and_change` against `mode` and
    /// `next_change` on random bucket levels, last-charge instants and
    /// clocks, including both sides of each zero and the 60 s cap.
    #[test]
    fn mode_and_change_equals_mode_and_next_change() {
        let mut q = Htb::new(
            HtbConfig::default(),
            vec![HtbClassConfig::new(None, mbit(10))],
            Filters::new().with_default(0),
        )
        .unwrap();
        let mut rng = crate::rng::Rng::new(4242, 0);
        let cl = &mut q.classes[0];
        for i in 0..200_000u64 {
            let lvl = |rng: &mut crate::rng::Rng| match rng.next_u64() % 4 {
                0 => (rng.next_u64() % 5) as i64 - 2,
                1 => 1 - MBUFFER_NS + (rng.next_u64() % 3) as i64,
                _ => (rng.next_u64() % (2 * MBUFFER_NS as u64)) as i64 - MBUFFER_NS,
            };
            cl.tokens = lvl(&mut rng);
            cl.ctokens = lvl(&mut rng);
            cl.t_c = rng.next_u64() % (1 << 40);
            let now = match i % 3 {
                0 => cl.t_c + rng.next_u64() % 4,
                1 => cl.t_c + MBUFFER_NS as u64 + rng.next_u64() % 3 - 1,
                _ => rng.next_u64() % (1 << 41),
            };
            let want = (cl.mode(now), cl.next_change(now).unwrap_or(u64::MAX));
            assert_eq!(cl.mode_and_change(now), want, "{i}");
        }
    }

    #[test]
    fn a_child_that_displaces_an_older_packet_still_activates_its_leaf() {
        use crate::sched::testutil::{check_displacing_child_activates, Displacing};
        let c = HtbClassConfig::new(None, mbit(10)).child(Box::new(Displacing::default()));
        let mut q = Htb::new(
            HtbConfig::default(),
            vec![c],
            Filters::new().with_default(0),
        )
        .unwrap();
        check_displacing_child_activates(&mut q);
    }

    #[test]
    fn tc_defaults_for_burst_quantum_and_levels() {
        let classes = vec![
            HtbClassConfig::new(None, mbit(10)),
            HtbClassConfig::new(Some(0), mbit(10)),
            HtbClassConfig::new(Some(0), Rate::from_bps(64_000)),
            HtbClassConfig::new(Some(0), Rate::from_bps(100_000_000_000)),
        ];
        let q = Htb::new(HtbConfig::default(), classes, Filters::new()).unwrap();
        // burst = 1_250_000/1e9 + 1600 = 1600 B → 1280 µs → 20000 ticks.
        assert_eq!(q.buffers_ns(1), (1_280_000, 1_280_000));
        assert_eq!(q.quantum(1), Some(125_000));
        assert_eq!((q.level(0), q.level(1)), (7, 0));
        assert_eq!(q.quantum(2), Some(1000));
        assert_eq!(q.quantum(3), Some(200_000));
        let w = q.warnings().join("\n");
        assert!(
            w.contains("quantum of class 2 is small. Consider r2q change."),
            "{w}"
        );
        assert!(w.contains("quantum of class 3 is big"), "{w}");
        assert!(w.contains("children of class 0 have rates summing"), "{w}");
        assert!(q
            .describe()
            .iter()
            .any(|(k, v)| *k == "warning" && v.contains("small")));
    }

    #[test]
    fn refuses_what_the_kernel_refuses_and_warns_on_the_rest() {
        let bad = |classes| {
            Htb::new(HtbConfig::default(), classes, Filters::new())
                .err()
                .unwrap()
        };
        assert_eq!(
            bad(vec![HtbClassConfig::new(None, Rate::from_bps(7))]).param,
            "rate"
        );
        assert_eq!(
            bad(vec![HtbClassConfig::new(Some(0), mbit(1))]).param,
            "parent"
        );
        let deep: Vec<_> = (0..9usize)
            .map(|i| HtbClassConfig::new(i.checked_sub(1), mbit(1)))
            .collect();
        assert!(bad(deep).message.contains("too deep"));
        let ok: Vec<_> = (0..8usize)
            .map(|i| HtbClassConfig::new(i.checked_sub(1), mbit(1)))
            .collect();
        assert!(Htb::new(HtbConfig::default(), ok, Filters::new()).is_ok());
        let e = bad(vec![
            HtbClassConfig::new(None, mbit(1)).child(pfifo(5)),
            HtbClassConfig::new(Some(0), mbit(1)),
        ]);
        assert_eq!(e.param, "child");
        let q = Htb::new(
            HtbConfig::default(),
            vec![
                HtbClassConfig::new(None, mbit(2)).ceil(mbit(1)),
                HtbClassConfig::new(Some(0), mbit(1)).burst(Bytes::new(10_000)),
            ],
            Filters::new(),
        )
        .unwrap();
        let w = q.warnings().join("\n");
        assert!(
            w.contains("below rate") && w.contains("above its parent's"),
            "{w}"
        );
    }

    #[test]
    fn a_class_gets_its_rate_and_never_more_than_ceil() {
        // Root 100 Mbit; A rate 10 ceil 30; B rate 20 ceil 20; link 8 Gbit.
        let classes = vec![
            HtbClassConfig::new(None, mbit(100)),
            HtbClassConfig::new(Some(0), mbit(10)).ceil(mbit(30)),
            HtbClassConfig::new(Some(0), mbit(20)),
        ];
        let mut q = Htb::new(HtbConfig::default(), classes, flow_filters(3)).unwrap();
        let r = rates(&mut q, &[0, 1500, 1500], 100_000);
        assert!((r[1] - 30.0).abs() < 0.3, "{r:?}");
        assert!((r[2] - 20.0).abs() < 0.2, "{r:?}");
    }

    #[test]
    fn overhead_mpu_and_atm_cells_are_charged_as_psched_l2t_ns() {
        // Hand-computed kernel values at 1 Mbit/s (125000 B/s: mult
        // 4194304000, shift 19, i.e. exactly 8000 ns per byte).
        let mut p = Params::new(
            "htb",
            [
                ("rate", "1mbit"),
                ("overhead", "10"),
                ("mpu", "64"),
                ("linklayer", "atm"),
            ],
        );
        let c = HtbClassConfig::from_params(None, &mut p).unwrap();
        assert_eq!((c.overhead, c.mpu, c.linklayer), (10, 64, LinkLayer::Atm));
        let q = Htb::new(HtbConfig::default(), vec![c], flow_filters(1)).unwrap();
        let cl = &q.classes[0];
        // 1500 + 10 B → 32 cells → 1696 B on the wire.
        assert_eq!(cl.rate.l2t_ns(1500), 1696 * 8000);
        assert_eq!(cl.ceil.l2t_ns(1500), 1696 * 8000);
        // 30 + 10 B, below mpu 64 → 64 B → 2 cells → 106 B.
        assert_eq!(cl.rate.l2t_ns(30), 106 * 8000);
        assert!(q
            .describe()
            .iter()
            .any(|(k, v)| *k == "class" && v.contains("overhead=10B mpu=64B linklayer=atm")));
        // Backlogged, 1500-byte packets leave every 1696 B of time:
        // 1500/1696 of the rate in IP bytes.
        let c = HtbClassConfig::from_params(
            None,
            &mut Params::new("htb", [("rate", "1mbit"), ("linklayer", "atm")]),
        )
        .unwrap();
        let mut q = Htb::new(HtbConfig::default(), vec![c], flow_filters(1)).unwrap();
        let r = rates(&mut q, &[1500], 2_000);
        assert!((r[0] / (1500.0 / 1696.0) - 1.0).abs() < 0.002, "{r:?}");
        let bad = HtbClassConfig::from_params(
            None,
            &mut Params::new("htb", [("rate", "1mbit"), ("linklayer", "token-ring")]),
        );
        assert_eq!(bad.err().unwrap().param, "linklayer");
    }

    #[test]
    fn borrowing_splits_spare_bandwidth_by_quantum() {
        // Parent 30 Mbit; A and B rate 5 each, ceil 30: 20 Mbit spare split
        // 1:3 by quantum → A 5+5 = 10, B 5+15 = 20.
        let classes = vec![
            HtbClassConfig::new(None, mbit(30)),
            HtbClassConfig::new(Some(0), mbit(5))
                .ceil(mbit(30))
                .quantum(1500),
            HtbClassConfig::new(Some(0), mbit(5))
                .ceil(mbit(30))
                .quantum(4500),
        ];
        let mut q = Htb::new(HtbConfig::default(), classes, flow_filters(3)).unwrap();
        let r = rates(&mut q, &[0, 1500, 1500], 200_000);
        assert!((r[1] - 10.0).abs() < 0.2, "{r:?}");
        assert!((r[2] - 20.0).abs() < 0.4, "{r:?}");
        assert!((r[1] + r[2] - 30.0).abs() < 0.3, "{r:?}");
    }

    #[test]
    fn lower_prio_borrows_first() {
        // A prio 0 and B prio 1, rate 5 each under a 30 Mbit parent: the
        // whole spare goes to A.
        let classes = vec![
            HtbClassConfig::new(None, mbit(30)),
            HtbClassConfig::new(Some(0), mbit(5)).ceil(mbit(30)),
            HtbClassConfig::new(Some(0), mbit(5)).ceil(mbit(30)).prio(1),
        ];
        let mut q = Htb::new(HtbConfig::default(), classes, flow_filters(3)).unwrap();
        let r = rates(&mut q, &[0, 1500, 1500], 100_000);
        assert!(
            (r[1] - 25.0).abs() < 0.3 && (r[2] - 5.0).abs() < 0.1,
            "{r:?}"
        );
    }

    #[test]
    fn unclassified_goes_to_default_or_the_direct_queue() {
        let classes = || {
            vec![
                HtbClassConfig::new(None, mbit(1)),
                HtbClassConfig::new(Some(0), mbit(1)),
            ]
        };
        let t = Instant::ZERO;
        let mut q = Htb::new(HtbConfig::default(), classes(), Filters::new()).unwrap();
        for i in 0..5 {
            q.enqueue(t, flow_packet(i, 9, 1500)).unwrap();
        }
        // Direct: all five leave at once, unshaped.
        assert_eq!(std::iter::from_fn(|| q.dequeue(t)).count(), 5);
        assert_eq!(q.direct_packets(), 5);
        // Default 1: shaped to 1 Mbit with a 1600-byte burst.
        let mut q = Htb::new(
            HtbConfig::default(),
            classes(),
            Filters::new().with_default(1),
        )
        .unwrap();
        for i in 0..5 {
            q.enqueue(t, flow_packet(i, 9, 1500)).unwrap();
        }
        // HTB sends while tokens ≥ 0: 1500 B leaves 100 B, so a second
        // packet goes too, leaving −1400 B = 11.2 ms at 125000 B/s.
        assert_eq!(std::iter::from_fn(|| q.dequeue(t)).count(), 2);
        let next = q.next_ready(t).unwrap().as_ns();
        assert!((11_199_000..=11_200_000).contains(&next), "{next}");
        assert!(q.dequeue(Instant::from_ns(next - 1)).is_none());
        assert!(q.dequeue(Instant::from_ns(next)).is_some());
        // A default on an inner class means the direct queue (kernel).
        let mut q = Htb::new(
            HtbConfig::default(),
            classes(),
            Filters::new().with_default(0),
        )
        .unwrap();
        q.enqueue(t, flow_packet(0, 9, 1500)).unwrap();
        assert_eq!(q.direct.len(), 1);
    }

    /// Root 30 Mbit/s, two inner classes, four leaves on three priorities.
    fn three_level_tree() -> Vec<HtbClassConfig> {
        vec![
            HtbClassConfig::new(None, mbit(30)),
            HtbClassConfig::new(Some(0), mbit(10)).ceil(mbit(30)),
            HtbClassConfig::new(Some(0), mbit(10)).ceil(mbit(20)),
            HtbClassConfig::new(Some(1), mbit(3))
                .ceil(mbit(30))
                .child(pfifo(20)),
            HtbClassConfig::new(Some(1), mbit(3))
                .ceil(mbit(10))
                .prio(1)
                .child(pfifo(20)),
            HtbClassConfig::new(Some(2), mbit(5))
                .ceil(mbit(20))
                .child(pfifo(20)),
            HtbClassConfig::new(Some(2), mbit(2))
                .ceil(mbit(20))
                .prio(2)
                .child(pfifo(20)),
        ]
    }

    /// FNV-1a over every observable of a run: what each enqueue, dequeue and
    /// `next_ready` returned.
    fn run_digest(q: &mut Htb, seed: u64, n: usize, flows: usize, gap_ns: u64) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |x: u64| {
            for b in x.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
        };
        let mut rng = crate::rng::Rng::new(seed, 7);
        let mut now = 0u64;
        for id in 0..n as u64 {
            let r = rng.next_u64();
            now += r % (2 * gap_ns + 1);
            let t = Instant::from_ns(now);
            eat(q.next_ready(t).map_or(u64::MAX, |x| x.as_ns()));
            match r >> 60 {
                0 => {
                    // Drain what is due, then idle.
                    while let Some(p) = q.dequeue(t) {
                        eat(p.id);
                    }
                }
                1 => eat(q.dequeue(t).map_or(u64::MAX, |p| p.id)),
                _ => {
                    let size = 64 + ((r >> 8) % 1437) as u32;
                    let flow = ((r >> 24) % flows as u64) as usize;
                    eat(q.enqueue(t, flow_packet(id, flow, size)).is_ok() as u64);
                    while let Some(p) = q.dequeue(t) {
                        eat(p.id ^ now << 20);
                    }
                }
            }
        }
        while let Some(r) = q.next_ready(Instant::from_ns(now)) {
            now = now.max(r.as_ns());
            let p = q.dequeue(Instant::from_ns(now));
            eat(p.map_or(u64::MAX, |p| p.id ^ now << 20));
        }
        h
    }

    /// Differential against the form before the wait queue became a
    /// tournament tree (issue 12): the digest of every enqueue verdict,
    /// dequeued packet and instant and `next_ready` answer, on the
    /// three-level tree and on 100 leaves shaped by their own rate, their
    /// ceil and the root (the `htb100-shaping` bench's tree, scaled), was
    /// recorded with the binary-heap form (commit 87bf9fa); any change in
    /// what HTB does changes it.
    #[test]
    fn same_departures_as_the_heap_wait_queue() {
        let hash = |n, first| {
            Filters::new().push(
                crate::classify::Classifier::FlowHash(
                    crate::classify::FlowHash::new(n, 0).unwrap(),
                ),
                first,
            )
        };
        let mut digests = Vec::new();
        for seed in 0..6u64 {
            let mut q = Htb::new(HtbConfig::default(), three_level_tree(), hash(4, 3)).unwrap();
            digests.push(run_digest(&mut q, seed, 8_000, 4, 60_000));
            let mut c = vec![HtbClassConfig::new(None, mbit(800))];
            for i in 0..100u64 {
                c.push(
                    HtbClassConfig::new(Some(0), mbit(5 + i % 3))
                        .ceil(mbit(10 + i % 7))
                        .prio((i % 3) as u32)
                        .child(pfifo(30)),
                );
            }
            let mut q = Htb::new(HtbConfig::default(), c, hash(100, 1)).unwrap();
            digests.push(run_digest(
                &mut q,
                100 + seed,
                12_000,
                100,
                1_000 + 2_000 * seed,
            ));
        }
        let all = digests.iter().fold(0u64, |a, &d| a.rotate_left(7) ^ d);
        assert_eq!(all, 0x9546_ae97_41cf_09c4, "{digests:x?}");
    }

    proptest! {
        /// The row and feed sets (kept in step with cached modes and the wait
        /// queue) must pick what a full scan of the active leaves at `now`
        /// picks (the debug assertion in `dequeue`), on a three-level tree with
        /// several prios, dequeues at arbitrary instants, and `next_ready`
        /// never promising a packet that does not come.
        #[test]
        fn row_matches_a_full_scan_on_a_deep_tree(
            ops in prop::collection::vec((0u64..300_000, any::<bool>(), 0usize..5, 64u32..1500), 1..400))
        {
            let mut classes = three_level_tree();
            classes.push(HtbClassConfig::new(Some(0), mbit(5)).ceil(mbit(30)).child(pfifo(20)));
            let mut q = Htb::new(HtbConfig::default(), classes, Filters::new().push(
                crate::classify::Classifier::FlowHash(crate::classify::FlowHash::new(5, 0).unwrap()), 3)).unwrap();
            let mut now = 0u64;
            for (id, &(gap, deq, f, s)) in ops.iter().enumerate() {
                now += gap;
                let t = Instant::from_ns(now);
                if deq {
                    let ready = q.next_ready(t).is_some_and(|r| r.as_ns() <= now);
                    let got = q.dequeue(t);
                    prop_assert_eq!(ready, got.is_some());
                } else {
                    let _ = q.enqueue(t, flow_packet(id as u64, f, s));
                }
            }
            while let Some(r) = q.next_ready(Instant::from_ns(now)) {
                now = now.max(r.as_ns());
                prop_assert!(q.dequeue(Instant::from_ns(now)).is_some());
            }
            prop_assert_eq!(q.backlog_packets(), 0);
        }

        /// Differential: reusing superseded top entries of the wait queue
        /// (`queue_event`) against the plain pop-and-push queue: the same
        /// packets at the same instants and the same `next_ready`, on the
        /// three-level tree and on 100 throttled leaves.
        #[test]
        fn reusing_superseded_wait_entries_changes_nothing(
            ops in prop::collection::vec((0u64..200_000, 0u8..3, 0usize..120, 64u32..1500), 1..600),
            wide in any::<bool>())
        {
            let mk = |reuse: bool| {
                let (classes, hash) = if wide {
                    let mut c = vec![HtbClassConfig::new(None, mbit(400))];
                    for _ in 0..100 {
                        c.push(HtbClassConfig::new(Some(0), mbit(2)).ceil(mbit(8)).child(pfifo(20)));
                    }
                    (c, 100)
                } else {
                    (three_level_tree(), 4)
                };
                let first = if wide { 1 } else { 3 };
                let mut q = Htb::new(HtbConfig::default(), classes, Filters::new().push(
                    crate::classify::Classifier::FlowHash(crate::classify::FlowHash::new(hash, 0).unwrap()), first)).unwrap();
                q.reuse_stale = reuse;
                q
            };
            let (mut a, mut b) = (mk(true), mk(false));
            let mut now = 0u64;
            for (id, &(gap, op, f, s)) in ops.iter().enumerate() {
                now += gap;
                let t = Instant::from_ns(now);
                prop_assert_eq!(a.next_ready(t), b.next_ready(t));
                if op == 0 {
                    let (x, y) = (a.enqueue(t, flow_packet(id as u64, f, s)), b.enqueue(t, flow_packet(id as u64, f, s)));
                    prop_assert_eq!(x.is_ok(), y.is_ok());
                } else {
                    loop {
                        let (x, y) = (a.dequeue(t), b.dequeue(t));
                        prop_assert_eq!(x.map(|p| p.id), y.map(|p| p.id));
                        if x.is_none() || op == 1 {
                            break;
                        }
                    }
                }
            }
            while let Some(r) = b.next_ready(Instant::from_ns(now)) {
                now = now.max(r.as_ns());
                let t = Instant::from_ns(now);
                prop_assert_eq!(a.next_ready(t), Some(r));
                prop_assert_eq!(a.dequeue(t).map(|p| p.id), b.dequeue(t).map(|p| p.id));
            }
            prop_assert_eq!(a.backlog_packets(), 0);
        }

        /// Conservation, per-class FIFO, exact next_ready, and the ceil
        /// bound of the root: bytes sent in any window [t_i, t_k] stay within
        /// cburst + ceil·(t_k − t_i) (+1 ns of L2T rounding per packet).
        #[test]
        fn conservation_wakeups_and_root_ceil_bound(
            arrivals in prop::collection::vec((0u64..400_000, 0usize..3, 64u32..1500), 1..300))
        {
            let classes = vec![
                HtbClassConfig::new(None, mbit(20)).ceil(mbit(40)),
                HtbClassConfig::new(Some(0), mbit(5)).ceil(mbit(40)).child(pfifo(30)),
                HtbClassConfig::new(Some(0), mbit(5)).ceil(mbit(10)).prio(1).child(pfifo(30)),
                HtbClassConfig::new(Some(0), mbit(10)).child(pfifo(30)),
            ];
            let mut q = Htb::new(HtbConfig::default(), classes, Filters::new().push(
                crate::classify::Classifier::FlowHash(crate::classify::FlowHash::new(3, 0).unwrap()), 1)).unwrap();
            let mut now = 0u64;
            let mut offered = 0usize;
            let mut dropped = 0usize;
            let mut sent: Vec<(u64, u32, usize)> = Vec::new();
            let mut last = [None::<u64>; 3];
            let mut id = 0u64;
            let mut events: Vec<(u64, usize, u32)> = Vec::new();
            for &(g, f, s) in &arrivals { now += g; events.push((now, f, s)); }
            let mut clock = 0u64;
            let mut i = 0;
            loop {
                let next_arr = events.get(i).map(|e| e.0);
                let ready = q.next_ready(Instant::from_ns(clock)).map(|t| t.as_ns().max(clock));
                match (next_arr, ready) {
                    (Some(a), r) if r.is_none_or(|r| a <= r) => {
                        clock = clock.max(a);
                        let (_, f, s) = events[i];
                        i += 1;
                        offered += 1;
                        if q.enqueue(Instant::from_ns(clock), flow_packet(id, f, s)).is_err() { dropped += 1; }
                        id += 1;
                    }
                    (_, Some(r)) => {
                        clock = r;
                        let p = q.dequeue(Instant::from_ns(r));
                        prop_assert!(p.is_some(), "next_ready said {} but nothing came", r);
                        let p = p.unwrap();
                        let f = p.flow as usize;
                        prop_assert!(last[f].is_none_or(|x| x < p.id));
                        last[f] = Some(p.id);
                        sent.push((r, p.size_bytes, q.filters.classify(&p).unwrap()));
                    }
                    _ => break,
                }
            }
            prop_assert_eq!(sent.len() + dropped, offered);
            prop_assert_eq!(q.backlog_packets(), 0);
            // Root ceil 40 Mbit = 200 ns per byte. Leaves sending within
            // their own rate do not look at the root (level-0 service), so
            // the root may also pass the leaves' bursts (3 × 1600 B); and a
            // class sends while its ctokens ≥ 0, so one packet more.
            let bound = |class: Option<usize>, ns_per_byte: u64, burst: u64| {
                let sent: Vec<_> = sent.iter().filter(|x| class.is_none_or(|c| x.2 == c)).collect();
                for a in 0..sent.len() {
                    let mut bytes = 0u64;
                    for (n, x) in sent[a..].iter().enumerate() {
                        bytes += x.1 as u64;
                        let allowed = (burst + 1500) * ns_per_byte + (x.0 - sent[a].0) + n as u64 + 1;
                        if bytes * ns_per_byte > allowed {
                            return Err(format!("{class:?}: {bytes} bytes in {} ns", x.0 - sent[a].0));
                        }
                    }
                }
                Ok(())
            };
            prop_assert_eq!(bound(None, 200, 1600 + 3 * 1600), Ok(()));
            // Class 2: ceil 10 Mbit = 800 ns per byte, cburst 1600 B, strict.
            prop_assert_eq!(bound(Some(2), 800, 1600), Ok(()));
        }
    }
}
