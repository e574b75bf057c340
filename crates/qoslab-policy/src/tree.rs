//! Policy trees: a [`TreeSpec`] (a tc qdisc hierarchy, a Cisco MQC
//! policy-map) becomes one [`PolicyTree`], which the link drives like any
//! other queue.
//!
//! Building ([`build`]) turns every node into a `qoslab-core` conditioner:
//! - queues `pfifo` / `bfifo` / `pfifo_head_drop` (`queue::Fifo`, Linux
//!   `sch_fifo.c`; `limit` default 1000 packets, as `tx_queue_len`);
//! - AQMs `red`, `rio`, `wred`, `codel`, `pie` (`aqm::AnyAqm`);
//! - classless schedulers `sfq`, `fq_codel` (`sched::Sfq`,
//!   `sched::FqCodel`) and `fair-queue` / `wfq` (`sched::Wfq`, below);
//! - classful schedulers `htb`, `hfsc`, `prio`, `drr`, whose classes each hold a
//!   child node (default `pfifo` 1000) behind an optional meter
//!   (`sched::Metered`, MQC child `police`), chosen by the filters
//!   (`classify::Classifier` text form) and a `default` class;
//! - shapers `tbf`, `shape`, `srras`, … (`shaper::AnyShaper`), optionally
//!   draining a child node instead of their own FIFO (`sched::Gate`: tbf
//!   with a child qdisc, `shape average` + `fair-queue`; its doc gives
//!   the one-packet look-ahead).
//!
//! Every class is wrapped in a counting tap, so the result reports per-class
//! packets, bytes, drops and colours ([`ClassResult`]), hierarchical like
//! `tc -s class show`. Packets that conditioners drop outside `enqueue`'s
//! return value (CoDel and FQ-CoDel at dequeue, SFQ at a perturbation
//! rehash, FQ-CoDel's batch drop) are drained into the tree's sink, which
//! the engine empties after every call ([`PolicyTree::take_dropped`]) so
//! their arena slots are freed and their flows charged.
//!
//! **`fair-queue`** (alias `wfq`) — Cisco's flow-based WFQ
//! (`qoslab_core::sched::Wfq`: conversations by flow hash and ToS,
//! sequence numbers weighted by IP precedence, CDT and hold-queue drops).
//! Keys: `dynamic-queues` (default 256), `cdt` /
//! `congestive-discard-threshold` (default 64) — or `queue-limit`, which
//! is the same per-conversation limit (MQC `queue-limit` in a class with
//! `fair-queue` limits each flow queue; IOS XE, not verified on a
//! router) — and `hold-queue` (the whole queue, default 1000 packets).
//! Flows whose hashes collide share a conversation, as on the router.

use crate::policy::{build_policer, core_err};
use crate::registry::{self, Family};
use crate::result::ClassResult;
use crate::spec::{ClassSpec, FilterSpec, QdiscSpec, TreeSpec};
use crate::PolicyError;
use qoslab_core::aqm::AnyAqm;
use qoslab_core::classify::{Classifier, Filters};
use qoslab_core::queue::{Fifo, FifoLimit};
use qoslab_core::rng::Rng;
use qoslab_core::sched::htb::TC_HZ;
use qoslab_core::sched::prio::DEFAULT_PRIOMAP;
use qoslab_core::sched::{
    Child, Drr, FqCodel, Gate, Hfsc, HfscClassConfig, Htb, HtbClassConfig, HtbConfig, Metered,
    Prio, Sfq, Wfq,
};
use qoslab_core::{AnyShaper, ConfigError, Dropped, Instant, Packet, Params, Shaper};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

pub use crate::registry::canonical_kind;

/// Every node kind, for messages and the scenario layer (the registry's
/// qdisc kinds).
pub fn all_kinds() -> Vec<&'static str> {
    registry::qdisc_kinds()
}

fn classful_kinds() -> String {
    registry::names(|f| f == Family::Classful).join(", ")
}

fn err(path: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError::new(path, message)
}

/// The kinds that take a `seed` (seeded from the run's seed when absent).
const SEEDED: [&str; 6] = ["red", "rio", "wred", "pie", "sfq", "fq_codel"];

/// Per-class counters, shared between the tap that counts and the tree
/// that reports (atomics so the tap stays `Send`; one thread uses them).
#[derive(Debug, Default)]
struct Counters {
    v: [AtomicU64; 17],
}

// Indices into `Counters::v`.
const PK_IN: usize = 0;
const B_IN: usize = 1;
const PK_OUT: usize = 2;
const B_OUT: usize = 3;
const PK_DROP: usize = 4;
const B_DROP: usize = 5;
const C_IN: usize = 6;
const C_OUT: usize = 9;
const C_DROP: usize = 12;
const MAXQ_P: usize = 15;
const MAXQ_B: usize = 16;

impl Counters {
    #[inline]
    fn add(&self, i: usize, v: u64) {
        self.v[i].fetch_add(v, Relaxed);
    }
    #[inline]
    fn count(&self, base: (usize, usize, usize), p: &Packet) {
        self.add(base.0, 1);
        self.add(base.1, p.size_bytes as u64);
        self.add(base.2 + p.color.index(), 1);
    }
    #[inline]
    fn arrive(&self, p: &Packet) {
        self.count((PK_IN, B_IN, C_IN), p);
    }
    #[inline]
    fn depart(&self, p: &Packet) {
        self.count((PK_OUT, B_OUT, C_OUT), p);
    }
    #[inline]
    fn discard(&self, p: &Packet) {
        self.count((PK_DROP, B_DROP, C_DROP), p);
    }
    #[inline]
    fn observe(&self, packets: usize, bytes: u64) {
        self.v[MAXQ_P].fetch_max(packets as u64, Relaxed);
        self.v[MAXQ_B].fetch_max(bytes, Relaxed);
    }
    fn get(&self, i: usize) -> u64 {
        self.v[i].load(Relaxed)
    }
    fn triple(&self, base: usize) -> [u64; 3] {
        [self.get(base), self.get(base + 1), self.get(base + 2)]
    }
}

type Sink = Arc<Mutex<Vec<Dropped>>>;

/// A node whose conditioner may drop packets outside `enqueue`'s return.
trait Node: Shaper + Send {
    /// Moves packets dropped since the last call into `out`: the
    /// conditioner's own [`Shaper::drain_dropped`] unless its children are
    /// tapped (and so drained) separately.
    #[inline]
    fn drain(&mut self, out: &mut Vec<Dropped>) {
        self.drain_dropped(out);
    }
}

impl Node for Fifo {}
impl Node for AnyShaper {}
impl Node for AnyAqm {}
impl Node for Sfq {}
impl Node for FqCodel {}
/// Any boxed node whose own taps drain it.
struct Inner(Child);

impl Node for Inner {
    /// Its taps drained it already.
    #[inline]
    fn drain(&mut self, _out: &mut Vec<Dropped>) {}
}

impl Shaper for Inner {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.0.enqueue(now, pkt)
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.0.dequeue(now)
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.0.next_ready(now)
    }
    fn backlog_packets(&self) -> usize {
        self.0.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.0.backlog_bytes()
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        self.0.describe()
    }
}
/// An HTB/HFSC root whose [`Shaper::describe`] names classes by the user's
/// ids: the core numbers them 0.. in parents-first order (`default=2`,
/// `class=id=2 parent=0 ...`, `warning=class 2: ...`); a reader of the
/// output wrote `default = "20"` and `id = "20"`.
/// Generic over the scheduler, not a `Child`: it sits on every packet's
/// enqueue/dequeue, so it must add no second dynamic call.
struct UserIds<S> {
    node: S,
    /// The user's id of core class `i` (parents-first position).
    ids: Vec<String>,
}

impl<S> UserIds<S> {
    fn id(&self, core: &str) -> Option<&str> {
        self.ids
            .get(core.parse::<usize>().ok()?)
            .map(String::as_str)
    }

    /// `id=N parent=M rest` with N, M mapped; `rest` (the child's
    /// description, rates) untouched.
    fn class_entry(&self, s: &str) -> String {
        let mut words: Vec<String> = Vec::new();
        let mut rest = s;
        for key in ["id=", "parent="] {
            let Some(r) = rest.strip_prefix(key) else {
                break;
            };
            let (value, tail) = r.split_once(' ').unwrap_or((r, ""));
            words.push(format!("{key}{}", self.id(value).unwrap_or(value)));
            rest = tail;
        }
        if !rest.is_empty() {
            words.push(rest.to_string());
        }
        words.join(" ")
    }
}

/// `text` with every "class N" (a core index) written "class 'ID'".
fn named_classes(text: &str, ids: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("class ") {
        let (head, tail) = rest.split_at(at + "class ".len());
        out += head;
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match tail[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|j| ids.get(j))
        {
            Some(id) => out += &format!("'{id}'"),
            None => out += &tail[..digits],
        }
        rest = &tail[digits..];
    }
    out + rest
}

impl<S: Shaper> Shaper for UserIds<S> {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.node.enqueue(now, pkt)
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.node.dequeue(now)
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.node.next_ready(now)
    }
    fn backlog_packets(&self) -> usize {
        self.node.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.node.backlog_bytes()
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        self.node.drain_dropped(out);
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = self.node.describe();
        for (k, v) in &mut d {
            match *k {
                "default" => {
                    if let Some(id) = self.id(v) {
                        *v = id.to_string();
                    }
                }
                "class" => *v = self.class_entry(v),
                "warning" => *v = named_classes(v, &self.ids),
                _ => {}
            }
        }
        d
    }
}

impl Node for Gate {
    /// The shaper's own refusals; the child's drops are drained by the
    /// child's taps.
    fn drain(&mut self, out: &mut Vec<Dropped>) {
        self.drain_own_dropped(out);
    }
}

/// Counts what passes through one class (and, for an HTB leaf, its inner
/// ancestors in the same qdisc).
struct Tap<N: Node> {
    node: N,
    /// Counted on enqueue, dequeue and enqueue refusals: this class, then
    /// the HTB inner classes above it in the same qdisc.
    own: Vec<Arc<Counters>>,
    /// Every class above, across nested qdiscs, up to the root: drops
    /// drained from `node` never pass their taps, so they are charged here.
    chain: Vec<Arc<Counters>>,
    sink: Sink,
    scratch: Vec<Dropped>,
}

impl<N: Node> Tap<N> {
    #[inline]
    fn flush(&mut self) {
        self.node.drain(&mut self.scratch);
        if self.scratch.is_empty() {
            return;
        }
        for d in &self.scratch {
            for c in self.own.iter().chain(&self.chain) {
                c.discard(&d.packet);
            }
        }
        self.sink
            .lock()
            .expect("single-threaded")
            .append(&mut self.scratch);
    }
}

impl<N: Node> Shaper for Tap<N> {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        for c in &self.own {
            c.arrive(&pkt);
        }
        let r = self.node.enqueue(now, pkt);
        if let Err(d) = &r {
            for c in &self.own {
                c.discard(&d.packet);
            }
        }
        self.flush();
        if let Some(c) = self.own.first() {
            c.observe(self.node.backlog_packets(), self.node.backlog_bytes());
        }
        r
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        let p = self.node.dequeue(now);
        if let Some(p) = &p {
            for c in &self.own {
                c.depart(p);
            }
        }
        self.flush();
        p
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.node.next_ready(now)
    }
    fn backlog_packets(&self) -> usize {
        self.node.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.node.backlog_bytes()
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        self.node.describe()
    }
}

/// One reported class.
struct ClassRow {
    name: String,
    kind: String,
    parent: Option<u32>,
    counters: Arc<Counters>,
}

/// A built policy tree: one `Shaper` plus its per-class counters.
pub struct PolicyTree {
    root: Child,
    sink: Sink,
    rows: Vec<ClassRow>,
    warnings: Vec<String>,
}

impl PolicyTree {
    /// Packets dropped inside the tree since the last call, other than the
    /// one `enqueue` returned: the caller frees and charges them.
    #[inline]
    pub fn take_dropped(&mut self, out: &mut Vec<Dropped>) {
        let mut s = self.sink.lock().expect("single-threaded");
        if !s.is_empty() {
            out.append(&mut s);
        }
    }

    /// What tc and the kernel would only warn about (HTB quantum clamps,
    /// children's rates above the parent's, …).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// One row per class, root first, parents before children.
    pub fn class_results(&self) -> Vec<ClassResult> {
        self.rows
            .iter()
            .map(|r| {
                let c = &r.counters;
                ClassResult {
                    name: r.name.clone(),
                    kind: r.kind.clone(),
                    parent: r.parent,
                    packets_in: c.get(PK_IN),
                    bytes_in: c.get(B_IN),
                    packets_out: c.get(PK_OUT),
                    bytes_out: c.get(B_OUT),
                    packets_dropped: c.get(PK_DROP),
                    bytes_dropped: c.get(B_DROP),
                    color_packets_in: c.triple(C_IN),
                    color_packets_out: c.triple(C_OUT),
                    color_packets_dropped: c.triple(C_DROP),
                    max_queue_packets: c.get(MAXQ_P),
                    max_queue_bytes: c.get(MAXQ_B),
                }
            })
            .collect()
    }
}

/// The tree is driven as its root `Shaper`.
impl core::ops::Deref for PolicyTree {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.root
    }
}

impl core::ops::DerefMut for PolicyTree {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.root
    }
}

/// The tree as a `Shaper` of its own (a trace driver, a link that drains
/// [`Shaper::drain_dropped`]): its root, with the sink as the drops made
/// outside `enqueue`.
impl Shaper for PolicyTree {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.root.enqueue(now, pkt)
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.root.dequeue(now)
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        self.root.next_ready(now)
    }
    fn backlog_packets(&self) -> usize {
        self.root.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.root.backlog_bytes()
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        self.root.describe()
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        self.take_dropped(out);
    }
}

/// Build state: the rows so far, the sink, seeds.
struct Cx {
    rows: Vec<ClassRow>,
    sink: Sink,
    seed: u64,
    stream: u64,
    warnings: Vec<String>,
}

impl Cx {
    fn row(&mut self, name: String, kind: &str, parent: Option<u32>) -> (u32, Arc<Counters>) {
        let counters = Arc::new(Counters::default());
        self.rows.push(ClassRow {
            name,
            kind: kind.to_string(),
            parent,
            counters: counters.clone(),
        });
        (self.rows.len() as u32 - 1, counters)
    }

    /// Counters of row `r` and every row above it.
    fn ancestors(&self, mut r: Option<u32>) -> Vec<Arc<Counters>> {
        let mut v = Vec::new();
        while let Some(i) = r {
            let row = &self.rows[i as usize];
            v.push(row.counters.clone());
            r = row.parent;
        }
        v
    }

    fn tap<N: Node + 'static>(
        &self,
        node: N,
        own: Vec<Arc<Counters>>,
        chain: Vec<Arc<Counters>>,
    ) -> Child {
        Box::new(Tap {
            node,
            own,
            chain,
            sink: self.sink.clone(),
            scratch: Vec::new(),
        })
    }
}

/// Builds `spec` (errors name `path.…` in the spec's own structure:
/// `path.class[2].ceil`, `path.filter[0].class`, `path.class[1].qdisc.limit`,
/// `path.qdisc.quantum` for a shaper's child). `seed` feeds every random
/// component that has no `seed` of its own.
pub fn build(spec: &TreeSpec, path: &str, seed: u64) -> Result<PolicyTree, PolicyError> {
    let mut cx = Cx {
        rows: Vec::new(),
        sink: Arc::new(Mutex::new(Vec::new())),
        seed,
        stream: 0,
        warnings: Vec::new(),
    };
    let kind = canonical_kind(&spec.root.kind).unwrap_or("?");
    let (_, root_counters) = cx.row("root".into(), kind, None);
    let mut node = build_node(&mut cx, &spec.root, path, Some(0))?;
    if let Some(m) = &spec.police {
        node = Box::new(Metered::new(
            build_policer(m, &format!("{path}.police"))?,
            node,
        ));
    }
    let root = cx.tap(Inner(node), vec![root_counters], Vec::new());
    Ok(PolicyTree {
        root,
        sink: cx.sink,
        rows: cx.rows,
        warnings: cx.warnings,
    })
}

/// Reads the parameters of a `kind` node with `read`, then refuses any it
/// left unread; errors name `path.<param>`.
fn read_params<T>(
    kind: &str,
    params: &[(String, String)],
    path: &str,
    read: impl FnOnce(&mut Params) -> Result<T, ConfigError>,
) -> Result<T, PolicyError> {
    let mut p = Params::new(kind, params.iter().cloned());
    let v = read(&mut p).map_err(|e| core_err(path, e))?;
    p.finish().map_err(|e| core_err(path, e))?;
    Ok(v)
}

/// Builds node `q` (untapped: the caller taps it as the class it fills).
/// `row` is the class row the node sits in.
fn build_node(
    cx: &mut Cx,
    q: &QdiscSpec,
    path: &str,
    row: Option<u32>,
) -> Result<Child, PolicyError> {
    let kind = canonical_kind(&q.kind).ok_or_else(|| {
        err(
            format!("{path}.kind"),
            registry::unknown_message("qdisc kind", &q.kind, &registry::qdisc_kinds()),
        )
    })?;
    let family = registry::lookup(kind).expect("canonical").family;
    let classful = family == Family::Classful;
    if !classful {
        if let Some(c) = q.classes.first() {
            return Err(err(
                format!("{path}.class[0]"),
                format!(
                    "{kind} has no classes (classful kinds: {}); class '{}' cannot go here",
                    classful_kinds(),
                    c.id
                ),
            ));
        }
        if !q.filters.is_empty() {
            return Err(err(
                format!("{path}.filter[0]"),
                format!(
                    "{kind} has no classes to filter into (classful kinds: {})",
                    classful_kinds()
                ),
            ));
        }
    }
    if q.child.is_some() && family != Family::Shaper {
        return Err(err(
            format!("{path}.qdisc"),
            format!(
                "only a shaper ({}) drains a child qdisc; {kind} holds its own queue (or classes)",
                registry::names(|f| f == Family::Shaper).join(", ")
            ),
        ));
    }
    let mut params = q.params.clone();
    cx.stream += 1;
    if SEEDED.contains(&kind) && !params.iter().any(|(k, _)| k.eq_ignore_ascii_case("seed")) {
        let s = Rng::new(cx.seed, 0x7_0000_0000 + cx.stream).next_u64();
        params.push(("seed".into(), s.to_string()));
    }
    let stream = cx.stream;
    let err = |e: ConfigError| core_err(path, e);
    let node: Child = match kind {
        "pfifo" | "bfifo" | "pfifo_head_drop" => {
            let limit = read_params(kind, &params, path, |p| {
                Ok(match kind {
                    "bfifo" => {
                        FifoLimit::Bytes(p.opt_size("limit")?.map_or(1000 * 1514, |b| b.get()))
                    }
                    _ => FifoLimit::Packets(
                        u32::try_from(p.opt_packets("limit")?.unwrap_or(1000))
                            .map_err(|_| ConfigError::new("limit", "too many packets"))?,
                    ),
                })
            })?;
            let f = Fifo::new(limit, kind == "pfifo_head_drop").map_err(err)?;
            return Ok(Box::new(f));
        }
        "red" | "rio" | "wred" | "codel" | "pie" => {
            let a = AnyAqm::from_params(kind, Params::new(kind, params.iter().cloned()))
                .map_err(err)?;
            return Ok(cx.tap(a, Vec::new(), cx.ancestors(row)));
        }
        "sfq" => {
            let s = read_params(kind, &params, path, |p| Sfq::from_params(p, stream))?;
            return Ok(cx.tap(s, Vec::new(), cx.ancestors(row)));
        }
        "fq_codel" => {
            let s = read_params(kind, &params, path, |p| FqCodel::from_params(p, stream))?;
            return Ok(cx.tap(s, Vec::new(), cx.ancestors(row)));
        }
        "fair-queue" => Box::new(read_params(kind, &params, path, Wfq::from_params)?),
        "htb" => htb(cx, q, &params, path, row)?,
        "hfsc" => hfsc(cx, q, &params, path, row)?,
        "prio" => prio(cx, q, &params, path, row)?,
        "drr" => drr(cx, q, &params, path, row)?,
        _ => {
            let s = AnyShaper::from_params(kind, Params::new(kind, params.iter().cloned()))
                .map_err(err)?;
            match &q.child {
                None => return Ok(Box::new(s)),
                Some(c) => {
                    let child = build_node(cx, c, &format!("{path}.qdisc"), row)?;
                    let g = Gate::new(s, child);
                    return Ok(cx.tap(g, Vec::new(), cx.ancestors(row)));
                }
            }
        }
    };
    Ok(node)
}

/// `default` of a classful qdisc: a class id, or one of `none_words`
/// (Linux's behaviour without a default, spelled out), or absent.
fn take_default(params: &mut Vec<(String, String)>) -> Option<String> {
    let i = params
        .iter()
        .position(|(k, _)| k.eq_ignore_ascii_case("default"))?;
    Some(params.remove(i).1)
}

/// Class ids → indices, refusing duplicates.
fn class_index(classes: &[ClassSpec], path: &str) -> Result<Vec<String>, PolicyError> {
    let mut ids: Vec<String> = Vec::new();
    for (i, c) in classes.iter().enumerate() {
        if c.id.trim().is_empty() {
            return Err(err(format!("{path}.class[{i}].id"), "a class needs an id"));
        }
        if ids.contains(&c.id) {
            return Err(err(
                format!("{path}.class[{i}].id"),
                format!("class id '{}' is used twice", c.id),
            ));
        }
        ids.push(c.id.clone());
    }
    Ok(ids)
}

/// Resolves a class id (from a filter or `default`), with a suggestion.
fn resolve(ids: &[String], id: &str, at: &str) -> Result<usize, PolicyError> {
    ids.iter().position(|x| x == id).ok_or_else(|| {
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let hint = qoslab_core::params::nearest(id, &refs)
            .map(|k| format!(" (did you mean '{k}'?)"))
            .unwrap_or_default();
        err(
            at,
            format!("no class '{id}'{hint}; classes: {}", refs.join(", ")),
        )
    })
}

/// The filter list, with class ids mapped through `index` (id → scheduler
/// class index) and every target checked by `ok`.
fn filters(
    list: &[FilterSpec],
    ids: &[String],
    path: &str,
    map: &dyn Fn(usize, &str) -> Result<usize, PolicyError>,
) -> Result<Filters, PolicyError> {
    let mut f = Filters::new();
    for (j, fs) in list.iter().enumerate() {
        let at = format!("{path}.filter[{j}]");
        let c =
            Classifier::parse(&fs.classifier).map_err(|e| err(format!("{at}.match"), e.message))?;
        let k = resolve(ids, &fs.class, &format!("{at}.class"))?;
        let target = map(k, &format!("{at}.class"))?;
        if let Classifier::FlowHash(_) = c {
            return Err(err(
                format!("{at}.match"),
                "a hash filter spreads over several classes; use a sfq, fq_codel or fair-queue qdisc for per-flow queues",
            ));
        }
        f = f.push(c, target);
    }
    Ok(f)
}

/// A class's content: its qdisc (default pfifo 1000) behind its meter,
/// tapped as row `r` (with `extra` inner-class counters).
fn class_child(
    cx: &mut Cx,
    c: &ClassSpec,
    cpath: &str,
    r: u32,
    extra: Vec<Arc<Counters>>,
) -> Result<Child, PolicyError> {
    let mut node = match &c.qdisc {
        Some(q) => build_node(cx, q, &format!("{cpath}.qdisc"), Some(r))?,
        None => Box::new(Fifo::new(FifoLimit::Packets(1000), false).expect("pfifo")),
    };
    if let Some(m) = &c.police {
        node = Box::new(Metered::new(
            build_policer(m, &format!("{cpath}.police"))?,
            node,
        ));
    }
    let mut own = vec![cx.rows[r as usize].counters.clone()];
    own.extend(extra);
    let above = cx.rows[r as usize].parent;
    // Drained drops below are charged to `own` by the inner taps' chains;
    // this tap's chain covers the rows above the qdisc.
    let chain = cx
        .ancestors(above)
        .into_iter()
        .filter(|a| !own.iter().any(|o| Arc::ptr_eq(o, a)))
        .collect();
    Ok(cx.tap(Inner(node), own, chain))
}

fn leaf_kind(c: &ClassSpec) -> String {
    c.qdisc.as_ref().map_or("pfifo".to_string(), |q| {
        canonical_kind(&q.kind).unwrap_or("?").to_string()
    })
}

fn row_name(cx: &Cx, parent_row: Option<u32>, id: &str) -> String {
    match parent_row {
        Some(r) if r > 0 => format!("{}/{id}", cx.rows[r as usize].name),
        _ => id.to_string(),
    }
}

/// The class hierarchy of a tree-shaped classful qdisc (htb, hfsc).
struct ClassTree {
    /// Each class's parent (index into the spec's classes).
    parent: Vec<Option<usize>>,
    /// The classes, parents before children.
    order: Vec<usize>,
    /// Each class's position in `order` (the core's class index).
    pos: Vec<usize>,
    has_children: Vec<bool>,
}

impl ClassTree {
    /// Class `k`'s core index, if it is a leaf: filters and the default
    /// must name one.
    fn leaf(&self, ids: &[String], k: usize, at: &str) -> Result<usize, PolicyError> {
        if self.has_children[k] {
            return Err(err(
                at,
                format!(
                    "class '{}' has child classes; filters and the default must name a leaf class",
                    ids[k]
                ),
            ));
        }
        Ok(self.pos[k])
    }
}

/// Resolves `parent` ids, refuses self-parents and cycles, orders parents
/// before children.
fn class_tree(q: &QdiscSpec, ids: &[String], path: &str) -> Result<ClassTree, PolicyError> {
    let n = q.classes.len();
    // Parents: resolve, detect cycles, order parents before children.
    let mut parent: Vec<Option<usize>> = Vec::with_capacity(n);
    for (i, c) in q.classes.iter().enumerate() {
        parent.push(match &c.parent {
            None => None,
            Some(pid) => {
                let k = resolve(ids, pid, &format!("{path}.class[{i}].parent"))?;
                if k == i {
                    return Err(err(
                        format!("{path}.class[{i}].parent"),
                        format!("class '{pid}' cannot be its own parent"),
                    ));
                }
                Some(k)
            }
        });
    }
    for i in 0..n {
        let mut seen = vec![false; n];
        let mut at = Some(i);
        while let Some(k) = at {
            if seen[k] {
                let cycle: Vec<&str> = (0..n)
                    .filter(|&x| seen[x])
                    .map(|x| ids[x].as_str())
                    .collect();
                return Err(err(
                    format!("{path}.class[{i}].parent"),
                    format!(
                        "the parents of class '{}' form a cycle ({})",
                        ids[i],
                        cycle.join(" → ")
                    ),
                ));
            }
            seen[k] = true;
            at = parent[k];
        }
    }
    let mut order: Vec<usize> = Vec::with_capacity(n);
    while order.len() < n {
        for (i, p) in parent.iter().enumerate() {
            if !order.contains(&i) && p.is_none_or(|p| order.contains(&p)) {
                order.push(i);
            }
        }
    }
    let pos: Vec<usize> = (0..n)
        .map(|i| order.iter().position(|&o| o == i).expect("ordered"))
        .collect();
    let has_children: Vec<bool> = (0..n).map(|i| parent.contains(&Some(i))).collect();
    Ok(ClassTree {
        parent,
        order,
        pos,
        has_children,
    })
}

/// The steps htb and hfsc share once their classes are read: each class's
/// counter row (parents first), each leaf's content (`class_child`, given
/// to its config by `attach`), and the filters, which must name leaves.
#[allow(clippy::too_many_arguments)]
fn rows_children_filters<C>(
    cx: &mut Cx,
    q: &QdiscSpec,
    path: &str,
    row: Option<u32>,
    ids: &[String],
    tree: &ClassTree,
    configs: Vec<(usize, C)>,
    attach: impl Fn(C, Child) -> C,
) -> Result<(Vec<C>, Filters), PolicyError> {
    let ClassTree {
        parent,
        order,
        has_children,
        ..
    } = tree;
    let mut class_rows = vec![0u32; ids.len()];
    for &i in order {
        let parent_row = parent[i].map_or(row, |k| Some(class_rows[k]));
        let kind = if has_children[i] {
            "inner".to_string()
        } else {
            leaf_kind(&q.classes[i])
        };
        let name = row_name(cx, row, &ids[i]);
        class_rows[i] = cx.row(name, &kind, parent_row).0;
    }
    let mut out = Vec::with_capacity(ids.len());
    for (i, mut cc) in configs {
        if !has_children[i] {
            let mut extra = Vec::new();
            let mut a = parent[i];
            while let Some(k) = a {
                extra.push(cx.rows[class_rows[k] as usize].counters.clone());
                a = parent[k];
            }
            let cpath = format!("{path}.class[{i}]");
            let child = class_child(cx, &q.classes[i], &cpath, class_rows[i], extra)?;
            cc = attach(cc, child);
        }
        out.push(cc);
    }
    let f = filters(&q.filters, ids, path, &|k, at| tree.leaf(ids, k, at))?;
    Ok((out, f))
}

fn htb(
    cx: &mut Cx,
    q: &QdiscSpec,
    params: &[(String, String)],
    path: &str,
    row: Option<u32>,
) -> Result<Child, PolicyError> {
    let mut params = params.to_vec();
    let default = take_default(&mut params);
    let cfg = read_params("htb", &params, path, HtbConfig::from_params)?;
    let n = q.classes.len();
    if n == 0 {
        return Err(err(
            format!("{path}.class"),
            "htb needs at least one class (tc class add … htb rate …)",
        ));
    }
    let ids = class_index(&q.classes, path)?;
    let tree = class_tree(q, &ids, path)?;
    let ClassTree {
        parent,
        order,
        pos,
        has_children,
    } = &tree;
    // Class configs in the parents-first order, with the checks tc's users
    // rely on (Linux accepts these and warns; we refuse them).
    let mut configs: Vec<(usize, HtbClassConfig)> = Vec::with_capacity(n);
    let mut bursts = vec![(0u64, 0u64); n];
    for &i in order {
        let c = &q.classes[i];
        let cpath = format!("{path}.class[{i}]");
        let cc = read_params("htb class", &c.params, &cpath, |p| {
            HtbClassConfig::from_params(parent[i].map(|k| pos[k]), p)
        })?;
        let rate_b = cc.rate.bytes_per_sec();
        let ceil = cc.ceil.unwrap_or(cc.rate);
        if ceil.bytes_per_sec() < rate_b {
            return Err(err(
                format!("{cpath}.ceil"),
                format!("ceil {ceil} is below rate {}: the class could never get its rate (Linux accepts it and warns; refused here)", cc.rate),
            ));
        }
        let burst = cc.burst.map_or(rate_b / TC_HZ + cc.mtu as u64, |b| b.get());
        let cburst = cc
            .cburst
            .map_or(ceil.bytes_per_sec() / TC_HZ + cc.mtu as u64, |b| b.get());
        bursts[i] = (burst, cburst);
        if let Some(k) = parent[i] {
            for (name, mine, theirs) in [
                ("burst", burst, bursts[k].0),
                ("cburst", cburst, bursts[k].1),
            ] {
                if mine > theirs {
                    return Err(err(
                        format!("{cpath}.{name}"),
                        format!("{name} {mine}B is above parent '{}''s {theirs}B: the parent's must be at least its children's (man tc-htb; the kernel only warns)", ids[k]),
                    ));
                }
            }
        }
        if has_children[i] && c.qdisc.is_some() {
            return Err(err(
                format!("{cpath}.qdisc"),
                format!("class '{}' has child classes, so it holds no queue (HTB inner classes only account)", ids[i]),
            ));
        }
        if has_children[i] && c.police.is_some() {
            return Err(err(
                format!("{cpath}.police"),
                format!(
                    "class '{}' has child classes; put the meter on a leaf",
                    ids[i]
                ),
            ));
        }
        configs.push((i, cc));
    }
    // Rows (in the parents-first order) and children for the leaves.
    let (out, mut f) = rows_children_filters(cx, q, path, row, &ids, &tree, configs, |cc, ch| {
        cc.child(ch)
    })?;
    match default.as_deref() {
        None => {
            return Err(err(
                format!("{path}.default"),
                format!("htb needs default = \"<class id>\" (one of: {}): without it Linux sends every unclassified packet to the direct queue, unshaped; write default = \"direct\" if that is what you mean", leaf_ids(&ids, has_children)),
            ))
        }
        Some("direct") | Some("0") => {}
        Some(d) => {
            let at = format!("{path}.default");
            let k = resolve(&ids, d, &at)?;
            f = f.with_default(tree.leaf(&ids, k, &at)?);
        }
    }
    let h = Htb::new(cfg, out, f).map_err(|e| core_err(path, e))?;
    let by_pos: Vec<String> = order.iter().map(|&i| ids[i].clone()).collect();
    cx.warnings.extend(
        h.warnings()
            .iter()
            .map(|w| format!("{path}: {}", named_classes(w, &by_pos))),
    );
    Ok(Box::new(UserIds {
        node: h,
        ids: order.iter().map(|&i| ids[i].clone()).collect(),
    }))
}

/// Kinds that hold packets back on their own schedule: an HFSC leaf with
/// one of these is "non-work-conserving" (the kernel warns and misbehaves:
/// `qdisc_peek_len` finds nothing although the class is backlogged).
fn paces(kind: &str) -> bool {
    matches!(kind, "htb" | "hfsc") || registry::lookup(kind).is_some_and(|k| k.family.shapes())
}

fn hfsc(
    cx: &mut Cx,
    q: &QdiscSpec,
    params: &[(String, String)],
    path: &str,
    row: Option<u32>,
) -> Result<Child, PolicyError> {
    let mut params = params.to_vec();
    let default = take_default(&mut params);
    read_params("hfsc", &params, path, |_| Ok(()))?;
    if q.classes.is_empty() {
        return Err(err(
            format!("{path}.class"),
            "hfsc needs at least one class (tc class add … hfsc sc|rt|ls …)",
        ));
    }
    let ids = class_index(&q.classes, path)?;
    let tree = class_tree(q, &ids, path)?;
    let ClassTree {
        parent,
        order,
        pos,
        has_children,
    } = &tree;
    let mut configs: Vec<(usize, HfscClassConfig)> = Vec::with_capacity(ids.len());
    for &i in order {
        let c = &q.classes[i];
        let cpath = format!("{path}.class[{i}]");
        let cc = read_params("hfsc class", &c.params, &cpath, |p| {
            HfscClassConfig::from_params(parent[i].map(|k| pos[k]), p)
        })?;
        if cc.rt.is_none() && cc.ls.is_none() {
            return Err(err(
                cpath,
                format!("class '{}' needs sc, rt or ls (a service curve such as sc = \"m1 1mbit d 10ms m2 500kbit\" or ls = \"rate 2mbit\"; the kernel refuses a class without one)", ids[i]),
            ));
        }
        if cc.ul.is_some() && cc.ls.is_none() {
            return Err(err(
                format!("{cpath}.ul"),
                format!("class '{}': ul needs ls or sc (tc: \"Upper-limit Service Curve without Link-Share Service Curve\")", ids[i]),
            ));
        }
        if has_children[i] {
            for (key, given) in [("qdisc", c.qdisc.is_some()), ("police", c.police.is_some())] {
                if given {
                    return Err(err(
                        format!("{cpath}.{key}"),
                        format!("class '{}' has child classes, so it holds no queue (put the {key} on a leaf)", ids[i]),
                    ));
                }
            }
        } else if let Some(k) = c.qdisc.as_ref().and_then(|x| canonical_kind(&x.kind)) {
            if paces(k) {
                return Err(err(
                    format!("{cpath}.qdisc.kind"),
                    format!("an hfsc leaf needs a work-conserving qdisc (a FIFO, an AQM, sfq, fq_codel, prio, drr); {k} holds packets back, which HFSC cannot schedule (the kernel warns \"non-work-conserving qdisc\")"),
                ));
            }
        }
        configs.push((i, cc));
    }
    let (out, mut f) = rows_children_filters(cx, q, path, row, &ids, &tree, configs, |cc, ch| {
        cc.child(ch)
    })?;
    match default.as_deref() {
        None => cx.warnings.push(format!(
            "{path}: hfsc without default: packets no filter claims are dropped (tc-hfsc(8)); write default = \"drop\" to say so"
        )),
        Some("drop") | Some("0") => {}
        Some(d) => {
            let at = format!("{path}.default");
            let k = resolve(&ids, d, &at)?;
            f = f.with_default(tree.leaf(&ids, k, &at)?);
        }
    }
    let h = Hfsc::new(out, f).map_err(|e| core_err(path, e))?;
    // The core numbers classes parents-first; name them by id.
    cx.warnings.extend(h.warnings().iter().map(|w| {
        let named = w
            .strip_prefix("class ")
            .and_then(|r| r.split_once(": "))
            .and_then(|(j, rest)| {
                let j: usize = j.parse().ok()?;
                Some(format!("class '{}': {rest}", ids[order[j]]))
            });
        format!("{path}: {}", named.unwrap_or_else(|| w.clone()))
    }));
    Ok(Box::new(UserIds {
        node: h,
        ids: order.iter().map(|&i| ids[i].clone()).collect(),
    }))
}

fn leaf_ids(ids: &[String], has_children: &[bool]) -> String {
    ids.iter()
        .zip(has_children)
        .filter(|(_, &c)| !c)
        .map(|(i, _)| format!("\"{i}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn prio(
    cx: &mut Cx,
    q: &QdiscSpec,
    params: &[(String, String)],
    path: &str,
    row: Option<u32>,
) -> Result<Child, PolicyError> {
    let (bands, priomap) = read_params("prio", params, path, |p| {
        Ok((p.opt_u64("bands")?.unwrap_or(3), p.opt_str("priomap")?))
    })?;
    if !(2..=16).contains(&bands) {
        return Err(err(
            format!("{path}.bands"),
            format!("{bands} is outside 2..=16 (TCQ_PRIO_BANDS)"),
        ));
    }
    let bands = bands as usize;
    let ids = class_index(&q.classes, path)?;
    // tc: class 1:N is band N-1.
    let mut by_band: Vec<Option<usize>> = vec![None; bands];
    for (i, id) in ids.iter().enumerate() {
        let b = id.rsplit(':').next().and_then(|m| m.parse::<usize>().ok());
        match b {
            Some(b) if (1..=bands).contains(&b) => by_band[b - 1] = Some(i),
            _ => {
                return Err(err(
                    format!("{path}.class[{i}].id"),
                    format!("a prio class is a band: id \"1\" … \"{bands}\" (tc classid 1:N is band N-1), got '{id}'"),
                ))
            }
        }
        if !q.classes[i].params.is_empty() || q.classes[i].parent.is_some() {
            return Err(err(
                format!("{path}.class[{i}]"),
                "a prio band takes only qdisc and police (no rate, no parent)",
            ));
        }
    }
    let mut children = Vec::with_capacity(bands);
    for (b, slot) in by_band.iter().enumerate() {
        let name = row_name(cx, row, &(b + 1).to_string());
        let child = match slot {
            Some(i) => {
                let c = &q.classes[*i];
                let r = cx.row(name, &leaf_kind(c), row).0;
                class_child(cx, c, &format!("{path}.class[{i}]"), r, Vec::new())?
            }
            None => {
                let r = cx.row(name, "pfifo", row).0;
                let empty = ClassSpec {
                    id: (b + 1).to_string(),
                    parent: None,
                    params: Vec::new(),
                    police: None,
                    qdisc: None,
                };
                class_child(cx, &empty, path, r, Vec::new())?
            }
        };
        children.push(child);
    }
    let by_id = |k: usize, _: &str| -> Result<usize, PolicyError> {
        Ok(by_band.iter().position(|s| *s == Some(k)).expect("listed"))
    };
    let f = filters(&q.filters, &ids, path, &by_id)?;
    let map = match priomap {
        None => DEFAULT_PRIOMAP,
        Some(m) => {
            let v: Vec<u8> = m
                .split([' ', ','])
                .filter(|x| !x.is_empty())
                .map(|x| x.parse::<u8>())
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    err(
                        format!("{path}.priomap"),
                        format!("expected 16 band numbers, got '{m}'"),
                    )
                })?;
            let n = v.len();
            v.try_into().map_err(|_| {
                err(
                    format!("{path}.priomap"),
                    format!("expected 16 band numbers, got {n}"),
                )
            })?
        }
    };
    let pr = Prio::new(children, map, f).map_err(|e| core_err(path, e))?;
    Ok(Box::new(pr))
}

fn drr(
    cx: &mut Cx,
    q: &QdiscSpec,
    params: &[(String, String)],
    path: &str,
    row: Option<u32>,
) -> Result<Child, PolicyError> {
    let mut params = params.to_vec();
    let default = take_default(&mut params);
    read_params("drr", &params, path, |_| Ok(()))?;
    if q.classes.is_empty() {
        return Err(err(format!("{path}.class"), "drr needs at least one class"));
    }
    let ids = class_index(&q.classes, path)?;
    let mut classes = Vec::with_capacity(ids.len());
    for (i, c) in q.classes.iter().enumerate() {
        let cpath = format!("{path}.class[{i}]");
        if c.parent.is_some() {
            return Err(err(
                format!("{cpath}.parent"),
                "drr classes are flat (no parent)",
            ));
        }
        let quantum = read_params("drr class", &c.params, &cpath, |p| p.opt_size("quantum"))?;
        let quantum = quantum
            .map(|b| {
                u32::try_from(b.get()).map_err(|_| err(format!("{cpath}.quantum"), "above 2^32-1"))
            })
            .transpose()?;
        let r = cx.row(row_name(cx, row, &ids[i]), &leaf_kind(c), row).0;
        classes.push((class_child(cx, c, &cpath, r, Vec::new())?, quantum));
    }
    let same = |k: usize, _: &str| -> Result<usize, PolicyError> { Ok(k) };
    let mut f = filters(&q.filters, &ids, path, &same)?;
    match default.as_deref() {
        None => {
            return Err(err(
                format!("{path}.default"),
                "drr needs default = \"<class id>\": Linux DRR drops every packet no filter claims; write default = \"drop\" if that is what you mean",
            ))
        }
        Some("drop") => {}
        Some(d) => f = f.with_default(resolve(&ids, d, &format!("{path}.default"))?),
    }
    Ok(Box::new(
        Drr::new(classes, f).map_err(|e| core_err(path, e))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: QdiscSpec) -> TreeSpec {
        TreeSpec { police: None, root }
    }

    #[test]
    fn fair_queue_and_wfq_are_the_core_wfq_with_mqc_keys() {
        for kind in ["fair-queue", "wfq", "fair_queue"] {
            let q = QdiscSpec::leaf(kind, &[("queue_limit", "200"), ("dynamic_queues", "16")]);
            let t = build(&tree(q), "p", 1).unwrap();
            let d = t.describe();
            assert!(d.contains(&("kind", "fair-queue".to_string())), "{d:?}");
            assert!(d.contains(&("cdt_packets", "200".to_string())), "{d:?}");
            assert!(d.contains(&("dynamic_queues", "16".to_string())), "{d:?}");
            assert!(
                d.contains(&("hold_queue_packets", "1000".to_string())),
                "{d:?}"
            );
        }
        assert_eq!(canonical_kind("fq"), None, "tc's fq is sch_fq, not WFQ");
        let q = QdiscSpec::leaf("fair-queue", &[("dynamic-queues", "100")]);
        let e = build(&tree(q), "p", 1).err().unwrap();
        assert!(e.to_string().contains("p.dynamic-queues"), "{e}");
    }

    /// (id, parent, class keys) of each class.
    type Classes<'a> = [(&'a str, Option<&'a str>, &'a [(&'a str, &'a str)])];

    fn hfsc_spec(classes: &Classes) -> QdiscSpec {
        let mut q = QdiscSpec::leaf("hfsc", &[("default", "20")]);
        q.classes = classes
            .iter()
            .map(|(id, parent, kv)| ClassSpec {
                id: id.to_string(),
                parent: parent.map(Into::into),
                params: kv
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                police: None,
                qdisc: None,
            })
            .collect();
        q
    }

    #[test]
    fn htb_and_hfsc_describe_classes_by_the_users_ids() {
        // Listed child first: the core numbers classes parents-first, not
        // in the order written.
        let mut htb = hfsc_spec(&[
            ("20", Some("1"), &[("rate", "6mbit")]),
            ("1", None, &[("rate", "10mbit")]),
            ("10", Some("1"), &[("rate", "4mbit")]),
        ]);
        htb.kind = "htb".into();
        let hfsc = hfsc_spec(&[
            ("20", Some("1"), &[("ls", "rate 6mbit")]),
            ("1", None, &[("ls", "rate 10mbit")]),
            ("10", Some("1"), &[("ls", "rate 4mbit")]),
        ]);
        for q in [htb, hfsc] {
            let d = build(&tree(q), "p", 1).unwrap().describe();
            let get = |k: &str| -> Vec<&str> {
                d.iter()
                    .filter(|(x, _)| *x == k)
                    .map(|(_, v)| v.as_str())
                    .collect()
            };
            assert_eq!(get("default"), ["20"], "{d:?}");
            let classes = get("class");
            assert_eq!(classes.len(), 3, "{d:?}");
            // Each id with its own parent and rate (4mbit is class "10"'s).
            for (head, rate) in [
                ("id=1 parent=root ", "10"),
                ("id=20 parent=1 ", "6"),
                ("id=10 parent=1 ", "4"),
            ] {
                let c = classes.iter().find(|c| c.starts_with(head));
                let c = c.unwrap_or_else(|| panic!("no {head}: {d:?}"));
                assert!(
                    c.contains(&format!("{rate}mbit")) || c.contains(&format!("{rate}000000")),
                    "{c}"
                );
            }
        }
    }

    #[test]
    fn class_indices_in_warnings_become_ids() {
        let ids = ["1".to_string(), "20".to_string()];
        assert_eq!(
            named_classes("quantum of class 1 is small; class 7: x", &ids),
            "quantum of class '20' is small; class 7: x"
        );
    }

    #[test]
    fn hfsc_builds_with_tc_curves_and_locates_errors() {
        let q = hfsc_spec(&[
            ("1", None, &[("ls", "rate 10mbit"), ("ul", "rate 10mbit")]),
            (
                "10",
                Some("1"),
                &[("sc", "umax 1500b dmax 30ms rate 100kbit")],
            ),
            ("20", Some("1"), &[("ls", "m2 5mbit")]),
        ]);
        let t = build(&tree(q), "p", 1).unwrap();
        let d = t.describe();
        assert!(d.contains(&("kind", "hfsc".to_string())), "{d:?}");
        let c10 = &d.iter().filter(|(k, _)| *k == "class").nth(1).unwrap().1;
        assert!(c10.contains("sc=[m1 400kbit d 30ms m2 100kbit]"), "{c10}");
        let rows: Vec<String> = t.class_results().iter().map(|r| r.name.clone()).collect();
        assert_eq!(rows, ["root", "1", "10", "20"]);
        // Errors at the key, in the spec's structure.
        let e = |classes: &Classes| build(&tree(hfsc_spec(classes)), "p", 1).err().unwrap();
        let x = e(&[("20", None, &[("rt", "m1 1mbit d 10ms")])]);
        assert_eq!(x.path, "p.class[0].rt");
        assert!(x.message.contains("missing m2"), "{x}");
        let x = e(&[("20", None, &[("ul", "rate 1mbit")])]);
        assert_eq!(x.path, "p.class[0]");
        let x = e(&[("20", None, &[("rt", "rate 1mbit"), ("ul", "rate 1mbit")])]);
        assert_eq!(x.path, "p.class[0].ul");
        let x = e(&[("20", None, &[("sc", "rate 1mbit"), ("rate", "1mbit")])]);
        assert_eq!(x.path, "p.class[0].rate");
        let mut q = hfsc_spec(&[("20", None, &[("sc", "rate 1mbit")])]);
        q.classes[0].qdisc = Some(QdiscSpec::leaf(
            "tbf",
            &[("rate", "1mbit"), ("burst", "2k"), ("limit", "10k")],
        ));
        let x = build(&tree(q), "p", 1).err().unwrap();
        assert_eq!(x.path, "p.class[0].qdisc.kind");
        // Inner rt-only: the kernel's upgrade, as a warning naming the class.
        let q = hfsc_spec(&[
            ("1", None, &[("rt", "rate 10mbit")]),
            ("20", Some("1"), &[("ls", "rate 1mbit")]),
        ]);
        let t = build(&tree(q), "p", 1).unwrap();
        assert!(
            t.warnings()
                .iter()
                .any(|w| w.contains("class '1': Forced curve change")),
            "{:?}",
            t.warnings()
        );
    }

    #[test]
    fn a_shaper_with_a_child_is_the_core_gate() {
        let mut q = QdiscSpec::leaf(
            "tbf",
            &[("rate", "1mbit"), ("burst", "1600"), ("limit", "3000")],
        );
        q.child = Some(Box::new(QdiscSpec::leaf("fair-queue", &[])));
        let t = build(&tree(q), "p", 1).unwrap();
        let d = t.describe();
        let child = &d.iter().find(|(k, _)| *k == "child").expect("gate").1;
        assert!(child.contains("kind=fair-queue"), "{d:?}");
    }
}
