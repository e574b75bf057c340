//! Hierarchical Fair Service Curve, Linux `hfsc` (`net/sched/sch_hfsc.c`,
//! iproute2 `tc/q_hfsc.c`, `man tc-hfsc` 7 and 8), after I. Stoica, H. Zhang,
//! T. S. E. Ng, "A Hierarchical Fair Service Curve Algorithm for
//! Link-Sharing, Real-Time and Priority Services", SIGCOMM 1997.
//!
//! **Service curves** (`struct tc_service_curve`): two linear pieces, slope
//! `m1` (bytes/s) for `d` (µs), then `m2`. A class has up to three: `rt`
//! (real-time), `ls` (link-sharing, the kernel's "fair" curve `fsc`) and
//! `ul` (upper limit); tc's `sc` sets `rt` and `ls` alike. tc's second
//! spelling `umax BYTES dmax TIME rate RATE` is converted as
//! `hfsc_get_sc2`: if `⌈umax·10⁶/dmax⌉ > rate` the curve is concave with
//! `m1 = ⌈umax/dmax⌉`, `d = dmax`, `m2 = rate`; else convex with `m1 = 0`,
//! `d = dmax − umax·10⁶/rate` computed in tc's 32-bit unsigned arithmetic
//! (a wrap is reported as a warning). Rates go to the kernel as `u32`
//! bytes/s (`get_rate`: bit/s ÷ 8, truncated), times as µs.
//!
//! **Fixed point** as the kernel (the "service curve support functions"
//! section): the clock is psched ticks, `ns >> PSCHED_SHIFT` with
//! `PSCHED_SHIFT = 6` (`include/net/pkt_sched.h`, 64 ns ticks,
//! `PSCHED_TICKS_PER_SEC = 15 625 000`); slopes are kept as
//! `sm = ⌈m·2^SM_SHIFT / ticks_per_s⌉` and `ism = ⌈ticks_per_s·2^ISM_SHIFT / m⌉`
//! with `SM_SHIFT = 30 − PSCHED_SHIFT = 24`, `ISM_SHIFT = 8 + PSCHED_SHIFT =
//! 14` (`m2sm`, `m2ism`), `dx = ⌈d·ticks_per_s / 10⁶⌉` (`d2dx`),
//! `dy = seg_x2y(dx, sm1)`; `seg_x2y` / `seg_y2x` split the product into
//! high and low bits as the kernel does, so every eligible time, deadline,
//! virtual time and fit time here is the kernel's to the tick.
//!
//! **Runtime curves** (`rtsc_*`): each class keeps its deadline, eligible,
//! virtual and upper-limit curves as a runtime curve anchored at (x, y);
//! when a class becomes backlogged the curve becomes the minimum of the old
//! one and the service curve restarted at (now, service so far)
//! (`rtsc_min`, which for a concave curve computes the intersection).
//!
//! **Real-time** (`init_ed`, `update_ed`, `update_d`, `eltree_get_mindl`):
//! a leaf with `rt` has an eligible time `e = E⁻¹(cumul)` (E is the
//! deadline curve, or for a convex curve its `m2` line alone) and a
//! deadline `d = D⁻¹(cumul + len of the head)`; at each dequeue, among the
//! classes with `e ≤ now` the one with the smallest `d` sends, and its
//! `cumul` (rt work) grows. The eligible list is ordered by `e`, ties in
//! arrival order, as the kernel's rb-tree insert (`>=` goes right).
//!
//! **Link-sharing** (`init_vf`, `update_vf`, `vttree_get_minvt`): when no
//! class is eligible, the scheduler walks from the root down, at each level
//! taking the active child with the smallest virtual time `vt =
//! V⁻¹(total)` among those whose fit time `f ≤ now`, updating the parent's
//! `cvtmin`. A class becoming active gets `vt = (cvtmin + max vt)/2` of its
//! active siblings (not lower than its own if the parent's period did not
//! change) or, first in a new parent period, the parent's `cvtoff` (largest
//! vt seen); `vtadj` lifts a class skipped for not fitting up to `cvtmin`.
//! Every byte sent, by either criterion, is charged to `total` of the leaf
//! and its ancestors (so real-time service counts against link sharing).
//!
//! **Upper limit** (`cl_myf`, `cl_cfmin`): `myf = U⁻¹(total)` from the
//! `ul` curve, `f = max(myf, min f of the active children)`; the
//! link-sharing walk skips classes with `f > now`. When nothing can be
//! sent, the kernel arms its watchdog for the smallest eligible time or the
//! root's `cfmin` (`hfsc_schedule_watchdog`), which [`Shaper::next_ready`]
//! returns (in ns, a tick boundary).
//!
//! **Classes and queues**: the implicit root (the kernel's `q->root`) holds
//! the classes without a parent. Leaves hold a child qdisc (default
//! `pfifo` of `tx_queue_len` 1000, `qdisc_create_dflt`), peeked as the
//! kernel's `qdisc_peek_len` (the head's length sets the deadline). A class
//! needs `rt` or `ls` (`hfsc_change_class`: -EINVAL); `ul` needs `ls`
//! (tc: "Upper-limit Service Curve without Link-Share Service Curve"). An
//! inner class without `ls` gets its `rt` as `ls`, with the kernel's
//! message "Forced curve change on parent 'rt' to 'sc'"
//! (`hfsc_upgrade_rt`); an inner class's `rt` is otherwise unused (only
//! leaves become eligible), which is warned about. Classification as
//! `hfsc_classify`: the first matching filter's class if it is a leaf, else
//! the `default` class if it is a leaf, else the packet is dropped (`man
//! tc-hfsc`: "If default is not specified, unclassified packets will be
//! dropped").
//!
//! Simplified: the kernel's red-black trees are sorted vectors with the
//! same order and tie rule (class counts are small); a child qdisc that
//! yields nothing although backlogged (the kernel warns "non-work-conserving
//! qdisc") is treated as emptied (`hfsc_qlen_notify`), so leaves should be
//! work-conserving queues, as the kernel expects. Where the kernel's `u64`
//! would wrap past `HT_INFINITY` (an `m2 = 0` curve) times saturate. Left
//! out: `skb->priority` classification, filters on inner classes, rate
//! estimators, changing classes while backlogged.

use super::tree::{inline, pfifo, Child, PeekSlot, DEFAULT_TXQUEUELEN};
use crate::classify::Filters;
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::parse::{parse_rate, parse_size, parse_time};
use crate::shaper::{DropReason, Dropped, Shaper};
use crate::time::Instant;
use crate::units::Rate;
use core::fmt;

/// `PSCHED_SHIFT`: the packet scheduler clock is ns >> 6 (64 ns ticks).
pub const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`.
pub const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
const USEC_PER_SEC: u64 = 1_000_000;
const SM_SHIFT: u32 = 30 - PSCHED_SHIFT;
const ISM_SHIFT: u32 = 8 + PSCHED_SHIFT;
const SM_MASK: u64 = (1 << SM_SHIFT) - 1;
const ISM_MASK: u64 = (1 << ISM_SHIFT) - 1;
const HT_INFINITY: u64 = u64::MAX;

/// A service curve as tc hands it to the kernel (`struct
/// tc_service_curve`): slopes in bytes/s, the first segment's length in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceCurve {
    pub m1_bytes_ps: u32,
    pub d_us: u32,
    pub m2_bytes_ps: u32,
}

const SC_EXPECTED: &str = "a service curve 'm1 RATE d TIME m2 RATE', 'm2 RATE', \
     'umax BYTES dmax TIME rate RATE' or 'rate RATE' (tc-hfsc(8))";

/// tc `get_rate`: bit/s → bytes/s in 32 bits.
fn tc_rate(word: &str, v: &str) -> Result<u32, String> {
    let r = parse_rate(v).map_err(|e| format!("{word}: {e}"))?;
    u32::try_from(r.bytes_per_sec())
        .map_err(|_| format!("{word} {v} is above tc's 32-bit bytes/s (at most 34359738360bit/s)"))
}

/// tc `get_time`: whole µs in 32 bits.
fn tc_time(word: &str, v: &str) -> Result<u32, String> {
    let t = parse_time(v).map_err(|e| format!("{word}: {e}"))?;
    u32::try_from(t.as_ns() / 1000)
        .map_err(|_| format!("{word} {v} is above tc's 32-bit µs (about 71 minutes)"))
}

impl ServiceCurve {
    /// Parses tc's text of one curve (what follows `rt`, `ls`, `sc` or `ul`
    /// in `tc class add … hfsc`), as `hfsc_get_sc`: `[m1 RATE] [d TIME] m2
    /// RATE`, else `[umax BYTES] [dmax TIME] rate RATE`. Returns the curve
    /// and a warning where tc's arithmetic wraps.
    pub fn parse(text: &str) -> Result<(Self, Option<String>), String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut i = 0;
        let mut take = |key: &str| -> Result<Option<&str>, String> {
            match words.get(i) {
                Some(w) if w.eq_ignore_ascii_case(key) => {
                    let v = words
                        .get(i + 1)
                        .ok_or_else(|| format!("'{key}' needs a value; expected {SC_EXPECTED}"))?;
                    i += 2;
                    Ok(Some(v))
                }
                _ => Ok(None),
            }
        };
        let first = words.first().map(|w| w.to_ascii_lowercase());
        let (sc, warning) = match first.as_deref() {
            Some("m1" | "d" | "m2") => {
                let m1 = take("m1")?.map(|v| tc_rate("m1", v)).transpose()?;
                let d = take("d")?.map(|v| tc_time("d", v)).transpose()?;
                let m2 = take("m2")?
                    .ok_or_else(|| format!("missing m2 in '{text}'; expected {SC_EXPECTED}"))?;
                let sc = ServiceCurve {
                    m1_bytes_ps: m1.unwrap_or(0),
                    d_us: d.unwrap_or(0),
                    m2_bytes_ps: tc_rate("m2", m2)?,
                };
                (sc, None)
            }
            Some("umax" | "dmax" | "rate") => {
                let umax = match take("umax")? {
                    Some(v) => {
                        let b = parse_size(v).map_err(|e| format!("umax: {e}"))?.get();
                        u32::try_from(b).map_err(|_| format!("umax {v} is above 32 bits"))?
                    }
                    None => 0,
                };
                let dmax = take("dmax")?.map(|v| tc_time("dmax", v)).transpose()?;
                let rate = take("rate")?
                    .ok_or_else(|| format!("missing rate in '{text}'; expected {SC_EXPECTED}"))?;
                let rate = tc_rate("rate", rate)?;
                Self::from_umax_dmax(umax, dmax.unwrap_or(0), rate)?
            }
            _ => return Err(format!("expected {SC_EXPECTED}, got '{text}'")),
        };
        if let Some(extra) = words.get(i) {
            return Err(format!(
                "unexpected '{extra}' in '{text}' (tc reads m1, d, m2 in that order, or umax, dmax, rate)"
            ));
        }
        if sc.m1_bytes_ps == 0 && sc.m2_bytes_ps == 0 {
            return Err(format!(
                "'{text}' has two zero slopes (tc: \"HFSC: Service Curve has two zero slopes\")"
            ));
        }
        Ok((sc, warning))
    }

    /// tc `hfsc_get_sc2`.
    fn from_umax_dmax(umax: u32, dmax: u32, rate: u32) -> Result<(Self, Option<String>), String> {
        if umax != 0 && dmax == 0 {
            return Err("umax given but dmax is zero (tc refuses it)".into());
        }
        let m1 = (umax as f64 * USEC_PER_SEC as f64 / dmax as f64).ceil();
        if dmax != 0 && m1 > rate as f64 {
            let m1 = u32::try_from(m1 as u64)
                .map_err(|_| format!("umax/dmax = {m1} bytes/s is above tc's 32 bits"))?;
            return Ok((
                ServiceCurve {
                    m1_bytes_ps: m1,
                    d_us: dmax,
                    m2_bytes_ps: rate,
                },
                None,
            ));
        }
        if rate == 0 {
            return Err("rate 0 with a convex umax/dmax curve has two zero slopes".into());
        }
        // tc: `dmax - umax * TIME_UNITS_PER_SEC / rate`, all `unsigned int`.
        let (prod, wrapped) = umax.overflowing_mul(USEC_PER_SEC as u32);
        let t = prod / rate;
        let (d, under) = dmax.overflowing_sub(t);
        let warning = (wrapped || under).then(|| {
            format!(
                "umax {umax}B dmax {dmax}us rate {rate}B/s: tc computes dmax − umax·10⁶/rate in 32-bit unsigned arithmetic and gets d = {d}us (kept, as the kernel would)"
            )
        });
        Ok((
            ServiceCurve {
                m1_bytes_ps: 0,
                d_us: d,
                m2_bytes_ps: rate,
            },
            warning,
        ))
    }
}

impl fmt::Display for ServiceCurve {
    /// tc's `hfsc_print_sc` order: `m1 RATE d TIME m2 RATE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = |m: u32| Rate::from_bps(m as u64 * 8);
        let d = if self.d_us % 1000 == 0 {
            format!("{}ms", self.d_us / 1000)
        } else {
            format!("{}us", self.d_us)
        };
        write!(
            f,
            "m1 {} d {d} m2 {}",
            rate(self.m1_bytes_ps),
            rate(self.m2_bytes_ps)
        )
    }
}

/// `struct internal_sc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct InternalSc {
    sm1: u64,
    ism1: u64,
    dx: u64,
    dy: u64,
    sm2: u64,
    ism2: u64,
}

#[inline]
fn seg_x2y(x: u64, sm: u64) -> u64 {
    (x >> SM_SHIFT)
        .wrapping_mul(sm)
        .wrapping_add(((x & SM_MASK).wrapping_mul(sm)) >> SM_SHIFT)
}

#[inline]
fn seg_y2x(y: u64, ism: u64) -> u64 {
    if y == 0 {
        0
    } else if ism == HT_INFINITY {
        HT_INFINITY
    } else {
        (y >> ISM_SHIFT)
            .wrapping_mul(ism)
            .wrapping_add(((y & ISM_MASK).wrapping_mul(ism)) >> ISM_SHIFT)
    }
}

fn m2sm(m: u32) -> u64 {
    ((m as u64) << SM_SHIFT).div_ceil(PSCHED_TICKS_PER_SEC)
}

fn m2ism(m: u32) -> u64 {
    if m == 0 {
        HT_INFINITY
    } else {
        (PSCHED_TICKS_PER_SEC << ISM_SHIFT).div_ceil(m as u64)
    }
}

fn d2dx(d: u32) -> u64 {
    (d as u64 * PSCHED_TICKS_PER_SEC).div_ceil(USEC_PER_SEC)
}

impl InternalSc {
    /// `sc2isc`.
    fn new(sc: &ServiceCurve) -> Self {
        let sm1 = m2sm(sc.m1_bytes_ps);
        let dx = d2dx(sc.d_us);
        InternalSc {
            sm1,
            ism1: m2ism(sc.m1_bytes_ps),
            dx,
            dy: seg_x2y(dx, sm1),
            sm2: m2sm(sc.m2_bytes_ps),
            ism2: m2ism(sc.m2_bytes_ps),
        }
    }
    fn convex(&self) -> bool {
        self.sm1 <= self.sm2
    }
}

/// `struct runtime_sc`: a curve anchored at (x ticks, y bytes).
#[derive(Clone, Copy, Debug, Default)]
struct Rtsc {
    x: u64,
    y: u64,
    c: InternalSc,
}

impl Rtsc {
    /// `rtsc_init`.
    fn new(c: InternalSc, x: u64, y: u64) -> Self {
        Rtsc { x, y, c }
    }

    /// `rtsc_y2x`: the time the curve reaches `y` bytes.
    fn y2x(&self, y: u64) -> u64 {
        if y < self.y {
            self.x
        } else if y <= self.y.wrapping_add(self.c.dy) {
            if self.c.dy == 0 {
                self.x.saturating_add(self.c.dx)
            } else {
                self.x.saturating_add(seg_y2x(y - self.y, self.c.ism1))
            }
        } else {
            self.x.saturating_add(self.c.dx).saturating_add(seg_y2x(
                y.wrapping_sub(self.y).wrapping_sub(self.c.dy),
                self.c.ism2,
            ))
        }
    }

    /// `rtsc_x2y`: the bytes the curve allows by time `x`.
    fn x2y(&self, x: u64) -> u64 {
        if x <= self.x {
            self.y
        } else if x <= self.x.wrapping_add(self.c.dx) {
            self.y.wrapping_add(seg_x2y(x - self.x, self.c.sm1))
        } else {
            self.y
                .wrapping_add(self.c.dy)
                .wrapping_add(seg_x2y(x - self.x - self.c.dx, self.c.sm2))
        }
    }

    /// `rtsc_min`: the minimum of this curve and `isc` started at (x, y).
    fn min(&mut self, isc: &InternalSc, x: u64, y: u64) {
        if isc.convex() {
            if self.x2y(x) < y {
                return;
            }
            self.x = x;
            self.y = y;
            return;
        }
        let y1 = self.x2y(x);
        if y1 <= y {
            return;
        }
        let y2 = self.x2y(x.wrapping_add(isc.dx));
        if y2 >= y.wrapping_add(isc.dy) {
            self.x = x;
            self.y = y;
            self.c.dx = isc.dx;
            self.c.dy = isc.dy;
            return;
        }
        // The curves intersect: seg_x2y(dx, sm1) == seg_x2y(dx, sm2) + (y1 - y).
        let mut dx = ((y1 - y) << SM_SHIFT) / (isc.sm1 - isc.sm2);
        if self.x.wrapping_add(self.c.dx) > x {
            dx += self.x + self.c.dx - x;
        }
        self.x = x;
        self.y = y;
        self.c.dx = dx;
        self.c.dy = seg_x2y(dx, isc.sm1);
    }
}

/// One class as configured (`tc class add … hfsc [rt SC] [ls SC] [ul SC]`).
pub struct HfscClassConfig {
    /// Index of the parent class in the list (must be smaller), or `None`
    /// for a class directly under the qdisc's root class.
    pub parent: Option<usize>,
    pub rt: Option<ServiceCurve>,
    pub ls: Option<ServiceCurve>,
    pub ul: Option<ServiceCurve>,
    /// The leaf's queue (default pfifo of 1000); `None` on inner classes.
    pub child: Option<Child>,
    /// tc's warnings while reading the curves.
    pub warnings: Vec<String>,
}

impl HfscClassConfig {
    /// A class with the given curves.
    pub fn new(
        parent: Option<usize>,
        rt: Option<ServiceCurve>,
        ls: Option<ServiceCurve>,
        ul: Option<ServiceCurve>,
    ) -> Self {
        HfscClassConfig {
            parent,
            rt,
            ls,
            ul,
            child: None,
            warnings: Vec::new(),
        }
    }
    pub fn child(mut self, c: Child) -> Self {
        self.child = Some(c);
        self
    }

    /// Reads tc's class keys `sc`, `rt`, `ls`, `ul`, each a curve in tc's
    /// text (see [`ServiceCurve::parse`]); `sc` sets `rt` and `ls` and may
    /// not be combined with them.
    pub fn from_params(parent: Option<usize>, p: &mut Params) -> Result<Self, ConfigError> {
        let mut warnings = Vec::new();
        let mut curve = |p: &mut Params, key: &'static str| -> Result<_, ConfigError> {
            let Some(text) = p.opt_str(key)? else {
                return Ok(None);
            };
            let (sc, w) = ServiceCurve::parse(&text).map_err(|m| ConfigError::new(key, m))?;
            warnings.extend(w.map(|w| format!("{key}: {w}")));
            Ok(Some(sc))
        };
        let sc = curve(p, "sc")?;
        let mut rt = curve(p, "rt")?;
        let mut ls = curve(p, "ls")?;
        let ul = curve(p, "ul")?;
        if let Some(sc) = sc {
            if rt.is_some() || ls.is_some() {
                return Err(ConfigError::new(
                    "sc",
                    "sc is rt and ls at once; give either sc or rt/ls (tc: [ [ rt SC ] [ ls SC ] | [ sc SC ] ])",
                ));
            }
            rt = Some(sc);
            ls = Some(sc);
        }
        let mut c = HfscClassConfig::new(parent, rt, ls, ul);
        c.warnings = warnings;
        Ok(c)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Curves {
    rt: Option<ServiceCurve>,
    ls: Option<ServiceCurve>,
    ul: Option<ServiceCurve>,
}

/// `struct hfsc_class` (index 0 is the qdisc's root class).
struct Class {
    parent: Option<usize>,
    level: u32,
    leaf: Option<PeekSlot>,
    curves: Curves,
    rsc: Option<InternalSc>,
    fsc: Option<InternalSc>,
    usc: Option<InternalSc>,
    total: u64,
    cumul: u64,
    d: u64,
    e: u64,
    vt: u64,
    f: u64,
    myf: u64,
    cfmin: u64,
    cvtmin: u64,
    vtadj: u64,
    cvtoff: u64,
    deadline: Rtsc,
    eligible: Rtsc,
    virtual_: Rtsc,
    ulimit: Rtsc,
    vtperiod: u32,
    parentperiod: u32,
    nactive: u32,
    in_el: bool,
    /// Active children by `vt` (the kernel's `vt_tree`).
    vt_tree: Vec<usize>,
    /// Active children by `f` (`cf_tree`).
    cf_tree: Vec<usize>,
}

impl Class {
    fn new(parent: Option<usize>, curves: Curves, leaf: Option<PeekSlot>) -> Self {
        let isc = |c: Option<ServiceCurve>| c.map(|c| InternalSc::new(&c));
        let (rsc, fsc, usc) = (isc(curves.rt), isc(curves.ls), isc(curves.ul));
        let rt0 = |c: Option<InternalSc>| Rtsc::new(c.unwrap_or_default(), 0, 0);
        let deadline = rt0(rsc);
        let mut eligible = deadline;
        if rsc.is_some_and(|r| r.convex()) {
            eligible.c.dx = 0;
            eligible.c.dy = 0;
        }
        Class {
            parent,
            level: 0,
            leaf,
            curves,
            rsc,
            fsc,
            usc,
            total: 0,
            cumul: 0,
            d: 0,
            e: 0,
            vt: 0,
            f: 0,
            myf: 0,
            cfmin: 0,
            cvtmin: 0,
            vtadj: 0,
            cvtoff: 0,
            deadline,
            eligible,
            virtual_: rt0(fsc),
            ulimit: rt0(usc),
            vtperiod: 0,
            parentperiod: 0,
            nactive: 0,
            in_el: false,
            vt_tree: Vec::new(),
            cf_tree: Vec::new(),
        }
    }
    fn qlen(&self) -> usize {
        self.leaf.as_ref().map_or(0, |l| l.backlog_packets())
    }
}

/// Linux `hfsc` qdisc.
pub struct Hfsc {
    classes: Vec<Class>,
    filters: Filters,
    /// Leaves with rt, by `e` (`q->eligible`).
    eligible: Vec<usize>,
    qlen: usize,
    backlog: u64,
    warnings: Vec<String>,
}

/// Inserts `c` into `list` ordered by `key`, after equal keys (rb-tree
/// insert with `>=` going right).
#[inline]
fn tree_insert(list: &mut Vec<usize>, c: usize, key: impl Fn(usize) -> u64) {
    let k = key(c);
    let pos = list.partition_point(|&x| key(x) <= k);
    list.insert(pos, c);
}

#[inline]
fn tree_remove(list: &mut Vec<usize>, c: usize) {
    if let Some(p) = list.iter().position(|&x| x == c) {
        list.remove(p);
    }
}

impl Hfsc {
    /// Builds the qdisc; `filters` classify into class indices (of
    /// `classes`) and its default is HFSC's `default` class.
    pub fn new(classes: Vec<HfscClassConfig>, filters: Filters) -> Result<Self, ConfigError> {
        if classes.is_empty() {
            return Err(ConfigError::new("classes", "hfsc needs at least one class"));
        }
        let n = classes.len();
        filters.check(n)?;
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
        let mut warnings = Vec::new();
        let mut out = vec![Class::new(None, Curves::default(), None)];
        for (i, c) in classes.into_iter().enumerate() {
            warnings.extend(c.warnings.iter().map(|w| format!("class {i}: {w}")));
            let mut curves = Curves {
                rt: c.rt.filter(|s| s.m1_bytes_ps != 0 || s.m2_bytes_ps != 0),
                ls: c.ls.filter(|s| s.m1_bytes_ps != 0 || s.m2_bytes_ps != 0),
                ul: c.ul.filter(|s| s.m1_bytes_ps != 0 || s.m2_bytes_ps != 0),
            };
            if curves.rt.is_none() && curves.ls.is_none() {
                return Err(ConfigError::new(
                    "rt",
                    format!("class {i}: needs rt, ls or sc (the kernel refuses a class without a real-time or link-sharing curve)"),
                ));
            }
            if curves.ul.is_some() && curves.ls.is_none() {
                return Err(ConfigError::new(
                    "ul",
                    format!("class {i}: ul needs ls or sc (tc: \"Upper-limit Service Curve without Link-Share Service Curve\")"),
                ));
            }
            let leaf = if has_children[i] {
                if c.child.is_some() {
                    return Err(ConfigError::new(
                        "child",
                        format!("class {i} has child classes, so it holds no queue"),
                    ));
                }
                if curves.ls.is_none() {
                    curves.ls = curves.rt;
                    warnings.push(format!(
                        "class {i}: Forced curve change on parent 'rt' to 'sc' (it has children, which need its link-sharing curve)"
                    ));
                } else if curves.rt.is_some() {
                    warnings.push(format!(
                        "class {i}: rt on an inner class is never used (only leaves are real-time scheduled; man tc-hfsc)"
                    ));
                }
                None
            } else {
                Some(PeekSlot::new(
                    c.child.unwrap_or_else(|| pfifo(DEFAULT_TXQUEUELEN)),
                ))
            };
            out.push(Class::new(
                Some(c.parent.map_or(0, |p| p + 1)),
                curves,
                leaf,
            ));
        }
        // hfsc_adjust_levels: a class is one above its highest child.
        for i in (1..out.len()).rev() {
            let p = out[i].parent.expect("user class");
            out[p].level = out[p].level.max(out[i].level + 1);
        }
        Ok(Hfsc {
            classes: out,
            filters,
            eligible: Vec::new(),
            qlen: 0,
            backlog: 0,
            warnings,
        })
    }

    /// What tc or the kernel would say (also in `describe`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
    /// Class `i`'s total work in bytes (`tc -s class show`: `work`).
    pub fn work_bytes(&self, i: usize) -> u64 {
        self.classes[i + 1].total
    }
    /// Class `i`'s work done by the real-time criterion (`rtwork`).
    pub fn rtwork_bytes(&self, i: usize) -> u64 {
        self.classes[i + 1].cumul
    }
    /// Class `i`'s level (leaves 0).
    pub fn level(&self, i: usize) -> u32 {
        self.classes[i + 1].level
    }
    /// Class `i`'s curves after the kernel's changes (rt, ls, ul).
    pub fn curves(
        &self,
        i: usize,
    ) -> (
        Option<ServiceCurve>,
        Option<ServiceCurve>,
        Option<ServiceCurve>,
    ) {
        let c = &self.classes[i + 1].curves;
        (c.rt, c.ls, c.ul)
    }

    fn eltree_insert(&mut self, cl: usize) {
        let classes = &self.classes;
        tree_insert(&mut self.eligible, cl, |x| classes[x].e);
        self.classes[cl].in_el = true;
    }
    fn eltree_remove(&mut self, cl: usize) {
        if self.classes[cl].in_el {
            tree_remove(&mut self.eligible, cl);
            self.classes[cl].in_el = false;
        }
    }
    fn vttree_insert(&mut self, cl: usize) {
        let p = self.classes[cl].parent.expect("not the root");
        let mut t = std::mem::take(&mut self.classes[p].vt_tree);
        tree_insert(&mut t, cl, |x| self.classes[x].vt);
        self.classes[p].vt_tree = t;
    }
    fn vttree_remove(&mut self, cl: usize) {
        let p = self.classes[cl].parent.expect("not the root");
        tree_remove(&mut self.classes[p].vt_tree, cl);
    }
    fn cftree_insert(&mut self, cl: usize) {
        let p = self.classes[cl].parent.expect("not the root");
        let mut t = std::mem::take(&mut self.classes[p].cf_tree);
        tree_insert(&mut t, cl, |x| self.classes[x].f);
        self.classes[p].cf_tree = t;
    }
    fn cftree_remove(&mut self, cl: usize) {
        let p = self.classes[cl].parent.expect("not the root");
        tree_remove(&mut self.classes[p].cf_tree, cl);
    }
    fn update_cfmin(&mut self, cl: usize) {
        let m = self.classes[cl]
            .cf_tree
            .first()
            .map_or(0, |&x| self.classes[x].f);
        self.classes[cl].cfmin = m;
    }

    /// `init_ed`.
    fn init_ed(&mut self, cl: usize, next_len: u32, cur: u64) {
        let c = &mut self.classes[cl];
        let rsc = c.rsc.expect("rt");
        c.deadline.min(&rsc, cur, c.cumul);
        c.eligible = c.deadline;
        if rsc.convex() {
            c.eligible.c.dx = 0;
            c.eligible.c.dy = 0;
        }
        c.e = c.eligible.y2x(c.cumul);
        c.d = c.deadline.y2x(c.cumul + next_len as u64);
        self.eltree_insert(cl);
    }

    /// `update_ed`.
    fn update_ed(&mut self, cl: usize, next_len: u32) {
        self.eltree_remove(cl);
        let c = &mut self.classes[cl];
        c.e = c.eligible.y2x(c.cumul);
        c.d = c.deadline.y2x(c.cumul + next_len as u64);
        self.eltree_insert(cl);
    }

    /// `update_d`.
    fn update_d(&mut self, cl: usize, next_len: u32) {
        let c = &mut self.classes[cl];
        c.d = c.deadline.y2x(c.cumul + next_len as u64);
    }

    /// `init_vf`: `cl` (a leaf with ls) became backlogged.
    fn init_vf(&mut self, mut cl: usize, cur: u64) {
        let mut go_active = true;
        while let Some(p) = self.classes[cl].parent {
            // `go_active && cl->cl_nactive++ == 0`: counted only while
            // the classes below went active.
            if go_active {
                let was = self.classes[cl].nactive;
                self.classes[cl].nactive += 1;
                go_active = was == 0;
            }
            if go_active {
                let max_vt = self.classes[p].vt_tree.last().map(|&m| self.classes[m].vt);
                let (pcvtmin, pperiod, pcvtoff) = {
                    let pc = &self.classes[p];
                    (pc.cvtmin, pc.vtperiod, pc.cvtoff)
                };
                match max_vt {
                    Some(mut vt) => {
                        // The mean of the parent's min (cvtmin) and max vt;
                        // not lower than before within the parent's period.
                        if pcvtmin != 0 {
                            vt = (pcvtmin + vt) / 2;
                        }
                        let c = &mut self.classes[cl];
                        if pperiod != c.parentperiod || vt > c.vt {
                            c.vt = vt;
                        }
                    }
                    None => {
                        // First child of a new parent period: the largest
                        // vt seen among the siblings.
                        self.classes[cl].vt = pcvtoff;
                        self.classes[p].cvtmin = 0;
                    }
                }
                let pnactive = self.classes[p].nactive;
                let c = &mut self.classes[cl];
                let fsc = c.fsc.expect("ls (inner classes are upgraded)");
                c.virtual_.min(&fsc, c.vt, c.total);
                c.vtadj = 0;
                c.vtperiod = c.vtperiod.wrapping_add(1);
                c.parentperiod = pperiod;
                if pnactive == 0 {
                    c.parentperiod = c.parentperiod.wrapping_add(1);
                }
                c.f = 0;
                self.vttree_insert(cl);
                self.cftree_insert(cl);
                let c = &mut self.classes[cl];
                if let Some(usc) = c.usc {
                    c.ulimit.min(&usc, cur, c.total);
                    c.myf = c.ulimit.y2x(c.total);
                }
            }
            let c = &self.classes[cl];
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                self.cftree_remove(cl);
                self.classes[cl].f = f;
                self.cftree_insert(cl);
            }
            self.update_cfmin(p);
            cl = p;
        }
    }

    /// `update_vf`: `len` bytes were sent from leaf `cl` (0: it emptied).
    fn update_vf(&mut self, mut cl: usize, len: u32) {
        let mut go_passive = {
            let c = &self.classes[cl];
            c.qlen() == 0 && c.fsc.is_some() && c.nactive > 0
        };
        while let Some(p) = self.classes[cl].parent {
            let c = &mut self.classes[cl];
            c.total += len as u64;
            if c.fsc.is_none() || c.nactive == 0 {
                cl = p;
                continue;
            }
            c.nactive -= go_passive as u32;
            go_passive = go_passive && c.nactive == 0;
            c.vt = c.virtual_.y2x(c.total).wrapping_add(c.vtadj);
            let pcvtmin = self.classes[p].cvtmin;
            let c = &mut self.classes[cl];
            if c.vt < pcvtmin {
                c.vtadj += pcvtmin - c.vt;
                c.vt = pcvtmin;
            }
            if go_passive {
                let vt = c.vt;
                let pc = &mut self.classes[p];
                if vt > pc.cvtoff {
                    pc.cvtoff = vt;
                }
                self.vttree_remove(cl);
                self.cftree_remove(cl);
                self.update_cfmin(p);
                cl = p;
                continue;
            }
            self.vttree_remove(cl);
            self.vttree_insert(cl);
            let c = &mut self.classes[cl];
            if c.usc.is_some() {
                c.myf = c.ulimit.y2x(c.total);
            }
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                self.cftree_remove(cl);
                self.classes[cl].f = f;
                self.cftree_insert(cl);
                self.update_cfmin(p);
            }
            cl = p;
        }
    }

    /// `eltree_get_mindl`: the smallest deadline among eligible leaves.
    fn get_mindl(&self, cur: u64) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &p in &self.eligible {
            if self.classes[p].e > cur {
                break;
            }
            if best.is_none_or(|b| self.classes[p].d < self.classes[b].d) {
                best = Some(p);
            }
        }
        best
    }

    /// `vttree_get_minvt`: the leaf with the smallest vt, walking down
    /// from the root through classes that fit (`f ≤ now`).
    fn get_minvt(&mut self, cur: u64) -> Option<usize> {
        let mut cl = 0;
        if self.classes[0].cfmin > cur {
            return None;
        }
        while self.classes[cl].level > 0 {
            let next = self.classes[cl]
                .vt_tree
                .iter()
                .copied()
                .find(|&x| self.classes[x].f <= cur)?;
            let vt = self.classes[next].vt;
            let pc = &mut self.classes[cl];
            if pc.cvtmin < vt {
                pc.cvtmin = vt;
            }
            cl = next;
        }
        Some(cl)
    }

    /// `hfsc_qlen_notify`: leaf `cl` emptied outside a dequeue of ours.
    fn emptied(&mut self, cl: usize) {
        if self.classes[cl].nactive > 0 {
            self.update_vf(cl, 0);
        }
        self.eltree_remove(cl);
    }

    /// `hfsc_classify` on our filter list: a leaf, or `None` (dropped).
    fn classify(&self, pkt: &Packet) -> Option<usize> {
        let leaf = |c: usize| self.classes[c + 1].level == 0;
        let hit = self
            .filters
            .list
            .iter()
            .find_map(|f| f.classifier.offset(pkt).map(|o| f.class + o));
        hit.filter(|&c| leaf(c))
            .or(self.filters.default.filter(|&c| leaf(c)))
            .map(|c| c + 1)
    }

    /// Leaf `cl`'s (packets, bytes), to keep the totals by difference.
    fn counts(&self, cl: usize) -> (usize, u64) {
        self.classes[cl]
            .leaf
            .as_ref()
            .map_or((0, 0), |l| (l.backlog_packets(), l.backlog_bytes()))
    }

    /// Applies the change of leaf `cl` since it held `before`.
    fn recount(&mut self, cl: usize, before: (usize, u64)) {
        let (p, b) = self.counts(cl);
        self.qlen = self.qlen + p - before.0;
        self.backlog = self.backlog + b - before.1;
    }
}

#[inline]
fn ticks(now: Instant) -> u64 {
    now.as_ns() >> PSCHED_SHIFT
}

impl Shaper for Hfsc {
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let Some(cl) = self.classify(&pkt) else {
            return Err(Dropped {
                packet: pkt,
                reason: DropReason::Unclassified,
            });
        };
        let len = pkt.size_bytes;
        let before = self.counts(cl);
        let leaf = self.classes[cl].leaf.as_mut().expect("leaf");
        let first = leaf.backlog_packets() == 0;
        let r = leaf.enqueue(now, pkt);
        let queued = leaf.backlog_packets();
        // A child may report a drop and still have queued (a head drop
        // displacing another packet): activate whenever it holds packets.
        if first && queued > 0 {
            let cur = ticks(now);
            let c = &self.classes[cl];
            let (rt, ls) = (c.rsc.is_some(), c.fsc.is_some());
            if rt {
                self.init_ed(cl, len, cur);
            }
            if ls {
                self.init_vf(cl, cur);
            }
            if rt {
                // hfsc_enqueue: isolate the head so a later head drop
                // cannot invalidate the deadline.
                let leaf = self.classes[cl].leaf.as_mut().expect("leaf");
                if leaf.peek(now).is_none() {
                    self.emptied(cl);
                }
            }
        }
        self.recount(cl, before);
        r
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        if self.qlen == 0 {
            return None;
        }
        let cur = ticks(now);
        // A leaf whose child yields nothing is emptied and the choice made
        // again; each retry removes one class, so this ends.
        for _ in 0..self.classes.len() {
            let (cl, realtime) = match self.get_mindl(cur) {
                Some(cl) => (cl, true),
                None => (self.get_minvt(cur)?, false),
            };
            let before = self.counts(cl);
            let leaf = self.classes[cl].leaf.as_mut().expect("leaf");
            let pkt = match leaf.peek(now) {
                Some(_) => leaf.take().expect("peeked"),
                None => {
                    self.emptied(cl);
                    self.recount(cl, before);
                    continue;
                }
            };
            let len = pkt.size_bytes;
            self.update_vf(cl, len);
            if realtime {
                self.classes[cl].cumul += len as u64;
            }
            if self.classes[cl].rsc.is_some() {
                if self.classes[cl].qlen() != 0 {
                    let leaf = self.classes[cl].leaf.as_mut().expect("leaf");
                    match leaf.peek(now).map(|p| p.size_bytes) {
                        Some(next) if realtime => self.update_ed(cl, next),
                        Some(next) => self.update_d(cl, next),
                        None => self.emptied(cl),
                    }
                } else {
                    self.eltree_remove(cl);
                }
            }
            self.recount(cl, before);
            return Some(pkt);
        }
        None
    }

    fn next_ready(&self, now: Instant) -> Option<Instant> {
        if self.qlen == 0 {
            return None;
        }
        let cur = ticks(now);
        // hfsc_schedule_watchdog: the first eligible time, or the root's
        // cfmin (when some class is link-sharing).
        let e = self.eligible.first().map(|&c| self.classes[c].e);
        let root = &self.classes[0];
        let f = (!root.cf_tree.is_empty()).then_some(root.cfmin);
        let at = match (e, f) {
            (Some(e), Some(f)) => e.min(f),
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return None,
        };
        if at <= cur {
            Some(now)
        } else {
            Some(Instant::from_ns(at.saturating_mul(1 << PSCHED_SHIFT)))
        }
    }

    fn backlog_packets(&self) -> usize {
        self.qlen
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog
    }

    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        for c in self.classes.iter_mut() {
            if let Some(l) = c.leaf.as_mut() {
                l.child.drain_dropped(out);
            }
        }
    }

    fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = vec![
            ("kind", "hfsc".to_string()),
            (
                "default",
                self.filters
                    .default
                    .map_or("none (unclassified packets are dropped)".to_string(), |x| {
                        x.to_string()
                    }),
            ),
        ];
        for (i, c) in self.classes.iter().enumerate().skip(1) {
            let parent = match c.parent {
                Some(0) | None => "root".to_string(),
                Some(p) => (p - 1).to_string(),
            };
            let mut s = format!("id={} parent={parent} level={}", i - 1, c.level);
            let cv = &c.curves;
            match (cv.rt, cv.ls) {
                (Some(r), Some(l)) if r == l => s += &format!(" sc=[{r}]"),
                (r, l) => {
                    if let Some(r) = r {
                        s += &format!(" rt=[{r}]");
                    }
                    if let Some(l) = l {
                        s += &format!(" ls=[{l}]");
                    }
                }
            }
            if let Some(u) = cv.ul {
                s += &format!(" ul=[{u}]");
            }
            if let Some(l) = &c.leaf {
                s += &format!(" child={}", inline(&l.child.describe()));
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

    fn sc(text: &str) -> ServiceCurve {
        ServiceCurve::parse(text).unwrap().0
    }
    fn class(parent: Option<usize>, rt: &str, ls: &str, ul: &str) -> HfscClassConfig {
        let c = |t: &str| (!t.is_empty()).then(|| sc(t));
        HfscClassConfig::new(parent, c(rt), c(ls), c(ul))
    }

    #[test]
    fn tc_curve_syntax_and_umax_dmax_conversion() {
        assert_eq!(
            sc("m1 400kbit d 30ms m2 100kbit"),
            ServiceCurve {
                m1_bytes_ps: 50_000,
                d_us: 30_000,
                m2_bytes_ps: 12_500
            }
        );
        assert_eq!(
            sc("rate 1mbit"),
            ServiceCurve {
                m1_bytes_ps: 0,
                d_us: 0,
                m2_bytes_ps: 125_000
            }
        );
        // Concave: umax/dmax = 1500 B / 30 ms = 50000 B/s > 12500.
        assert_eq!(
            sc("umax 1500b dmax 30ms rate 100kbit"),
            sc("m1 400kbit d 30ms m2 100kbit")
        );
        // Convex: 1500 B / 53 ms < 50000 B/s → m1 0, d = 53000 − 30000 µs.
        assert_eq!(
            sc("umax 1500b dmax 53ms rate 400kbit"),
            ServiceCurve {
                m1_bytes_ps: 0,
                d_us: 23_000,
                m2_bytes_ps: 50_000
            }
        );
        // tc's 32-bit umax·10⁶ wraps above 4294 bytes: kept, with a warning.
        let (c, w) = ServiceCurve::parse("umax 5000b dmax 1s rate 1mbit").unwrap();
        assert_eq!(
            c.d_us,
            1_000_000 - (5000u32.wrapping_mul(1_000_000) / 125_000)
        );
        assert!(w.unwrap().contains("32-bit"));
        for bad in [
            "m1 1mbit",
            "m2 0",
            "umax 1500 rate 1mbit",
            "m2 1mbit d 10ms",
            "rate 1mbit extra",
            "fast",
            "m2 40gbit",
        ] {
            assert!(ServiceCurve::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            sc("m1 400kbit d 30ms m2 100kbit").to_string(),
            "m1 400kbit d 30ms m2 100kbit"
        );
    }

    #[test]
    fn kernel_fixed_point() {
        // 1 Mbit/s = 125000 B/s; ticks of 64 ns: 125000·2^24/15625000 = 134217.728 → 134218.
        let i = InternalSc::new(&sc("m1 1mbit d 10ms m2 1mbit"));
        assert_eq!(i.sm1, 134_218);
        assert_eq!(i.ism1, (15_625_000u64 << 14).div_ceil(125_000));
        assert_eq!(i.dx, 156_250);
        assert_eq!(i.dy, 1250); // 10 ms at 1 Mbit/s
        let r = Rtsc::new(i, 0, 0);
        // 1500 B take 12 ms = 187500 ticks (to a tick).
        assert!(r.y2x(1500).abs_diff(187_500) <= 1);
        assert_eq!(r.x2y(187_500), 1500);
    }

    /// Runs `q` behind a link of `rate_bps` with `arrivals` (ns, flow,
    /// bytes); returns (departure start ns, arrival ns, flow, bytes).
    fn run(
        q: &mut Hfsc,
        rate_bps: u64,
        arrivals: &[(u64, usize, u32)],
    ) -> Vec<(u64, u64, usize, u32)> {
        let mut out = Vec::new();
        let mut arrived: std::collections::HashMap<u64, u64> = Default::default();
        let (mut i, mut free_at) = (0usize, 0u64);
        let mut clock = 0u64;
        loop {
            let ready = q
                .next_ready(Instant::from_ns(clock))
                .map(|t| t.as_ns().max(clock).max(free_at));
            match (arrivals.get(i), ready) {
                (Some(&(t, f, s)), r) if r.is_none_or(|r| t <= r) => {
                    clock = clock.max(t);
                    arrived.insert(i as u64, t);
                    let _ = q.enqueue(Instant::from_ns(clock), flow_packet(i as u64, f, s));
                    i += 1;
                }
                (_, Some(r)) => {
                    clock = r;
                    let p = q.dequeue(Instant::from_ns(r)).expect("ready at next_ready");
                    free_at = r + (p.size_bytes as u64 * 8 * 1_000_000_000).div_ceil(rate_bps);
                    out.push((r, arrived[&p.id], p.flow as usize, p.size_bytes));
                }
                _ => break,
            }
        }
        out
    }

    fn cbr(flow: usize, from_ns: u64, until_ns: u64, every_ns: u64) -> Vec<(u64, usize, u32)> {
        (0..)
            .map(|k| from_ns + k * every_ns)
            .take_while(|&t| t < until_ns)
            .map(|t| (t, flow, 1500))
            .collect()
    }

    fn merged(mut v: Vec<Vec<(u64, usize, u32)>>) -> Vec<(u64, usize, u32)> {
        let mut all: Vec<_> = v.drain(..).flatten().collect();
        all.sort_by_key(|x| x.0);
        all
    }

    /// Mbit/s per flow over [from, to) of departure starts.
    fn mbit(out: &[(u64, u64, usize, u32)], flows: usize, from: u64, to: u64) -> Vec<f64> {
        let mut b = vec![0u64; flows];
        for &(t, _, f, s) in out {
            if (from..to).contains(&t) {
                b[f] += s as u64;
            }
        }
        b.iter()
            .map(|&x| x as f64 * 8e3 / (to - from) as f64)
            .collect()
    }

    #[test]
    fn link_sharing_splits_excess_by_ls_ratio() {
        // Two ls-only leaves 1:3 on a link far faster than both: the link
        // is shared 1:3 (man tc-hfsc(7): only the ratios of vt matter).
        let classes = vec![
            class(None, "", "m2 1mbit", ""),
            class(None, "", "m2 3mbit", ""),
        ];
        let mut q = Hfsc::new(classes, flow_filters(2)).unwrap();
        let (bytes, _) = backlogged_bytes(&mut q, &[1500, 1500], 40_000);
        let share = bytes[0] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.25).abs() < 0.002, "{bytes:?}");
        assert_eq!(q.rtwork_bytes(0), 0, "no rt curve, no rt work");
        assert_eq!(q.work_bytes(0), bytes[0]);
    }

    #[test]
    fn hierarchy_shares_per_parent_then_per_child() {
        // A (ls 1) with A1, A2 (1:1) against B (ls 1): A1 and A2 a quarter each.
        let classes = vec![
            class(None, "", "m2 5mbit", ""),
            class(Some(0), "", "m2 1mbit", ""),
            class(Some(0), "", "m2 1mbit", ""),
            class(None, "", "m2 5mbit", ""),
        ];
        let f = flow_filters(4);
        let mut q = Hfsc::new(classes, f).unwrap();
        assert_eq!((q.level(0), q.level(1), q.level(3)), (1, 0, 0));
        let (bytes, _) = backlogged_bytes(&mut q, &[0, 1500, 1500, 1500], 40_000);
        let t: u64 = bytes.iter().sum();
        let s: Vec<f64> = bytes.iter().map(|&b| b as f64 / t as f64).collect();
        assert!(
            (s[1] - 0.25).abs() < 0.003 && (s[2] - 0.25).abs() < 0.003,
            "{s:?}"
        );
        assert!((s[3] - 0.5).abs() < 0.003, "{s:?}");
    }

    #[test]
    fn rt_guarantee_holds_while_others_are_backlogged() {
        // 10 Mbit link: A rt 5 Mbit + ls 1 Mbit against B ls 9 Mbit, both
        // backlogged: A still gets its 5 Mbit (rt has priority), B the rest.
        let classes = vec![
            class(None, "m2 5mbit", "m2 1mbit", ""),
            class(None, "", "m2 9mbit", ""),
        ];
        let mut q = Hfsc::new(classes, flow_filters(2)).unwrap();
        let arr = merged(vec![
            cbr(0, 0, 1_000_000_000, 600_000),
            cbr(1, 0, 1_000_000_000, 600_000),
        ]);
        let out = run(&mut q, 10_000_000, &arr);
        let r = mbit(&out, 2, 100_000_000, 900_000_000);
        assert!(r[0] >= 4.95 && r[0] < 5.3, "{r:?}");
        assert!((r[0] + r[1] - 10.0).abs() < 0.1, "{r:?}");
        assert!(q.rtwork_bytes(0) > 0 && q.rtwork_bytes(1) == 0);
    }

    #[test]
    fn rt_only_class_gets_exactly_its_curve_even_on_an_idle_link() {
        // A class without ls is never link-shared: alone on a 10 Mbit link,
        // a leaf with rt 2 Mbit sends 2 Mbit (HFSC throttles).
        let classes = vec![class(None, "m2 2mbit", "", "")];
        let mut q = Hfsc::new(classes, Filters::new().with_default(0)).unwrap();
        let arr = cbr(0, 0, 1_000_000_000, 300_000);
        let out = run(&mut q, 10_000_000, &arr);
        let r = mbit(&out, 1, 100_000_000, 900_000_000);
        assert!((r[0] - 2.0).abs() < 0.03, "{r:?}");
    }

    #[test]
    fn ul_caps_a_class_and_the_rest_goes_to_the_others() {
        let classes = vec![
            class(None, "", "m2 1mbit", "m2 2mbit"),
            class(None, "", "m2 1mbit", ""),
        ];
        let mut q = Hfsc::new(classes, flow_filters(2)).unwrap();
        // A alone for 0.5 s, then both.
        let arr = merged(vec![
            cbr(0, 0, 1_000_000_000, 600_000),
            cbr(1, 500_000_000, 1_000_000_000, 600_000),
        ]);
        let out = run(&mut q, 10_000_000, &arr);
        let alone = mbit(&out, 2, 50_000_000, 450_000_000);
        assert!((alone[0] - 2.0).abs() < 0.05, "{alone:?}");
        let both = mbit(&out, 2, 600_000_000, 950_000_000);
        assert!(
            (both[0] - 2.0).abs() < 0.05 && (both[1] - 8.0).abs() < 0.1,
            "{both:?}"
        );
    }

    #[test]
    fn concave_rt_curve_serves_a_burst_first_man_tc_hfsc_example() {
        // tc-hfsc(7), REALTIME CRITERION: 10 Mbit link, class 1 "2Mbit for
        // 100ms, then 7Mbit" (convex) backlogged for long, class 2 "7Mbit
        // for 100ms, then 2Mbit" (concave) starting later: "both ... will be
        // eligible, but the 2nd session's deadline time will be smaller and
        // its packets will be sent first". Class 2 gets its 7 Mbit during
        // its first 100 ms; with a linear 2 Mbit curve only its 2 Mbit.
        let go = |second: &str| {
            let classes = vec![
                class(None, "m1 2mbit d 100ms m2 7mbit", "", ""),
                class(None, second, "", ""),
            ];
            let mut q = Hfsc::new(classes, flow_filters(2)).unwrap();
            let arr = merged(vec![
                cbr(0, 0, 1_600_000_000, 1_000_000),
                cbr(1, 1_000_000_000, 1_600_000_000, 1_000_000),
            ]);
            let out = run(&mut q, 10_000_000, &arr);
            // Delay of the 2nd class's first packet, and its rate over its
            // first 100 ms.
            let first = out.iter().find(|x| x.2 == 1).map(|x| x.0 - x.1).unwrap();
            (first, mbit(&out, 2, 1_000_000_000, 1_100_000_000))
        };
        let (d_concave, r_concave) = go("m1 7mbit d 100ms m2 2mbit");
        let (_, r_linear) = go("m2 2mbit");
        assert!((r_concave[1] - 7.0).abs() < 0.3, "{r_concave:?}");
        assert!((r_linear[1] - 2.0).abs() < 0.3, "{r_linear:?}");
        // The paper's bound: a packet leaves by its deadline + one packet
        // time at link rate (1.2 ms): 1500 B at 7 Mbit = 1.71 ms.
        assert!(d_concave <= 1_714_286 + 1_200_000, "{d_concave}");
    }

    #[test]
    fn umax_dmax_bounds_the_delay_of_the_first_umax_bytes() {
        // tc-hfsc(8): "maximum delay for certain amount of work". On 10
        // Mbit, a greedy real-time class D (rt at the link rate, always
        // eligible, deadlines 1.2 ms apart) against V "umax 1500b dmax 1.5ms
        // rate 3mbit": V's first 1500 B win once D's deadlines pass dmax,
        // so they leave within dmax + one packet time (1.2 ms); a linear 3
        // Mbit V has deadline 1500 B / 3 Mbit = 4 ms and waits longer.
        let go = |v: &str| {
            let classes = vec![class(None, "m2 10mbit", "", ""), class(None, v, "", "")];
            let mut q = Hfsc::new(classes, flow_filters(2)).unwrap();
            // D offered 12 Mbit; V one packet at 100 ms, when D has lost
            // nothing to V yet (later V packets would find D's deadlines
            // behind by V's service: D overbooks the link).
            let mut arr = cbr(0, 0, 300_000_000, 1_000_000);
            arr.push((100_000_300, 1, 1500));
            arr.sort_by_key(|x| x.0);
            let out = run(&mut q, 10_000_000, &arr);
            out.iter()
                .filter(|x| x.2 == 1)
                .map(|x| x.0 - x.1)
                .max()
                .unwrap()
        };
        let concave = go("umax 1500b dmax 1.5ms rate 3mbit");
        let linear = go("rate 3mbit");
        assert!(concave <= 1_500_000 + 1_200_000, "{concave}");
        assert!(linear <= 4_000_000 + 1_200_000, "{linear}");
        assert!(linear > concave + 1_000_000, "{linear} vs {concave}");
    }

    #[test]
    fn default_class_or_drop() {
        let t = Instant::ZERO;
        let classes = || {
            vec![
                class(None, "", "m2 1mbit", ""),
                class(Some(0), "", "m2 1mbit", ""),
            ]
        };
        let mut q = Hfsc::new(classes(), Filters::new()).unwrap();
        let e = q.enqueue(t, flow_packet(0, 9, 100)).unwrap_err();
        assert_eq!(e.reason, DropReason::Unclassified);
        let mut q = Hfsc::new(classes(), Filters::new().with_default(1)).unwrap();
        q.enqueue(t, flow_packet(0, 9, 100)).unwrap();
        assert_eq!(q.dequeue(t).map(|p| p.id), Some(0));
        // A default naming an inner class drops, as hfsc_classify.
        let mut q = Hfsc::new(classes(), Filters::new().with_default(0)).unwrap();
        assert!(q.enqueue(t, flow_packet(0, 9, 100)).is_err());
    }

    #[test]
    fn refuses_what_tc_and_the_kernel_refuse_and_upgrades_inner_rt() {
        let bad = |c: Vec<HfscClassConfig>| Hfsc::new(c, Filters::new()).err().unwrap();
        assert_eq!(bad(vec![class(None, "", "", "")]).param, "rt");
        assert_eq!(
            bad(vec![class(None, "m2 1mbit", "", "m2 1mbit")]).param,
            "ul"
        );
        assert_eq!(
            bad(vec![class(Some(0), "", "m2 1mbit", "")]).param,
            "parent"
        );
        let q = Hfsc::new(
            vec![
                class(None, "m2 2mbit", "", ""),
                class(Some(0), "", "m2 1mbit", ""),
            ],
            Filters::new(),
        )
        .unwrap();
        assert_eq!(q.curves(0).1, Some(sc("m2 2mbit")));
        assert!(q.warnings()[0].contains("Forced curve change on parent 'rt' to 'sc'"));
        let mut p = Params::new("hfsc class", [("sc", "m2 1mbit"), ("rt", "m2 1mbit")]);
        assert_eq!(
            HfscClassConfig::from_params(None, &mut p)
                .err()
                .unwrap()
                .param,
            "sc"
        );
    }

    #[test]
    fn a_child_that_displaces_an_older_packet_still_activates_its_leaf() {
        use crate::sched::testutil::{check_displacing_child_activates, Displacing};
        let c = class(None, "", "m2 1mbit", "").child(Box::new(Displacing::default()));
        let mut q = Hfsc::new(vec![c], Filters::new().with_default(0)).unwrap();
        check_displacing_child_activates(&mut q);
    }

    proptest! {
        /// Conservation, no departure before arrival, per-flow FIFO, and
        /// work conservation without ul or rt-only leaves (the link never
        /// idles while packets wait).
        #[test]
        fn conservation_causality_and_work_conservation(
            arrivals in prop::collection::vec((0u64..400_000, 0usize..3, 64u32..1500), 1..300),
            shape in 0usize..3)
        {
            let classes = match shape {
                0 => vec![
                    class(None, "", "m2 2mbit", ""),
                    class(Some(0), "m1 5mbit d 5ms m2 1mbit", "m2 1mbit", "").child(pfifo(40)),
                    class(Some(0), "", "m1 1mbit d 2ms m2 3mbit", "").child(pfifo(40)),
                    class(None, "m2 1mbit", "m2 1mbit", "").child(pfifo(40)),
                ],
                1 => vec![
                    class(None, "", "m2 2mbit", "m2 15mbit"),
                    class(Some(0), "m2 2mbit", "m2 1mbit", "").child(pfifo(40)),
                    class(Some(0), "", "m2 1mbit", "m2 4mbit").child(pfifo(40)),
                    class(None, "m1 8mbit d 3ms m2 1mbit", "", "").child(pfifo(40)),
                ],
                _ => vec![
                    class(None, "", "m2 2mbit", ""),
                    class(Some(0), "m2 2mbit", "m2 1mbit", "").child(pfifo(40)),
                    class(Some(0), "", "m2 1mbit", "").child(pfifo(40)),
                    class(None, "", "m2 5mbit", "").child(pfifo(40)),
                ],
            };
            let f = Filters::new()
                .push(crate::classify::Classifier::Tuple(crate::classify::TupleMatch { src_port: (0, 0xffff), ..Default::default() }), 1)
                .push(crate::classify::Classifier::Tuple(crate::classify::TupleMatch { src_port: (1, 0xffff), ..Default::default() }), 2)
                .with_default(3);
            let mut q = Hfsc::new(classes, f).unwrap();
            let mut now = 0u64;
            let mut events = Vec::new();
            for &(g, fl, s) in &arrivals { now += g; events.push((now, fl, s)); }
            let offered: u64 = events.iter().map(|e| e.2 as u64).sum();
            let mut dropped = 0u64;
            let mut sent = 0u64;
            let mut last = [None::<u64>; 3];
            let (mut i, mut clock, mut free_at) = (0usize, 0u64, 0u64);
            loop {
                let ready = q.next_ready(Instant::from_ns(clock)).map(|t| t.as_ns().max(clock).max(free_at));
                if shape == 2 {
                    // Work-conserving: ready whenever backlogged and the link is free.
                    if q.backlog_packets() > 0 {
                        prop_assert_eq!(ready, Some(clock.max(free_at)));
                    }
                }
                match (events.get(i), ready) {
                    (Some(&(t, fl, s)), r) if r.is_none_or(|r| t <= r) => {
                        clock = clock.max(t);
                        if let Err(d) = q.enqueue(Instant::from_ns(clock), flow_packet(i as u64, fl, s)) {
                            dropped += d.packet.size_bytes as u64;
                        }
                        i += 1;
                    }
                    (_, Some(r)) => {
                        clock = r;
                        let p = q.dequeue(Instant::from_ns(r));
                        prop_assert!(p.is_some(), "next_ready said {} but nothing came", r);
                        let p = p.unwrap();
                        prop_assert!(events[p.id as usize].0 <= r, "left before it arrived");
                        let fl = p.flow as usize;
                        prop_assert!(last[fl].is_none_or(|x| x < p.id));
                        last[fl] = Some(p.id);
                        sent += p.size_bytes as u64;
                        free_at = r + p.size_bytes as u64 * 800; // 10 Mbit/s
                    }
                    _ => break,
                }
            }
            prop_assert_eq!(sent + dropped, offered);
            prop_assert_eq!(q.backlog_packets(), 0);
            prop_assert_eq!(q.backlog_bytes(), 0);
        }
    }
}
