//! Any queue, scheduler, shaper or whole policy tree over a trace: what
//! `qoslab shape` and the bindings' `shape_trace` / `shape_policy` run
//! through `qoslab_core::drive::shape_trace_fields`.
//!
//! A trace has no link of its own, so a work-conserving node (a FIFO, an
//! AQM, `sfq`, `fq_codel`, `fair-queue`, `prio`, `drr`) would release every
//! packet the instant it arrives and never build a queue. It therefore runs
//! behind a `drive::Link` of the required `rate` — the device draining the
//! qdisc, as `qdisc_restart` pulls a packet whenever the transmitter is
//! free — and a packet's departure is when it leaves the qdisc for that
//! link. Shapers (`tbf`, `shape`, RAS) and trees whose root paces itself
//! (a shaper, `htb`, or `hfsc` whose every leaf is under an `ul` curve or
//! real-time only) run alone unless a `rate` is given.
//!
//! Flat kinds take their parameters as strings (`qoslab shape sfq --rate
//! 10mbit --perturb 10s`); a flat queue or scheduler becomes a one-node
//! policy tree, so its counters come back as the tree's root class. HTB and
//! DRR have no meaning without classes: they come as a whole tree
//! ([`TracePolicy::from_tree`], `qoslab shape tree --policy FILE`).

use crate::registry::{self, Family};
use crate::result::ClassResult;
use crate::spec::{QdiscSpec, TreeSpec};
use crate::tree::{self, PolicyTree};
use crate::PolicyError;
use qoslab_core::drive::{Link, ShapeStream, ShapeSummary, TraceError, TraceFields, TraceShaper};
use qoslab_core::{Dropped, Instant, Packet, Params, Rate, Shaper};

/// The seed of every random component of a trace policy that has no
/// `seed` of its own (as a scenario without `seed`).
pub const DEFAULT_SEED: u64 = 1;

/// The pseudo-kind naming a whole tree (`qoslab shape tree --policy`).
pub const TREE_KIND: &str = "tree";

/// A conditioner ready to run over a trace.
// One per trace, built once.
#[allow(clippy::large_enum_variant)]
pub enum TracePolicy {
    /// A shaper, or an AQM behind a link (`qoslab_core::drive::TraceShaper`).
    Flat(TraceShaper),
    /// A tree whose root paces itself, alone.
    Tree(PolicyTree),
    /// A tree (or a one-node tree of a flat queue or scheduler) behind a
    /// link of `rate`.
    Linked(Link<PolicyTree>),
}

/// Does a tree rooted at `root` pace packets by itself (so a trace needs
/// no link behind it)? Shapers and htb do; hfsc does when every leaf is
/// bounded: an `ul` curve on it or an ancestor, or `rt` without link
/// sharing (otherwise link sharing sends as fast as it is asked).
fn paces_itself(kind: &str, root: &QdiscSpec) -> bool {
    if kind == "hfsc" {
        return hfsc_bounded(root);
    }
    kind == "htb" || registry::lookup(kind).is_some_and(|k| k.family.shapes())
}

fn hfsc_bounded(root: &QdiscSpec) -> bool {
    let has = |i: usize, keys: &[&str]| {
        root.classes[i]
            .params
            .iter()
            .any(|(k, _)| keys.iter().any(|x| k.trim().eq_ignore_ascii_case(x)))
    };
    let parent_of = |i: usize| {
        let p = root.classes[i].parent.as_ref()?;
        root.classes.iter().position(|c| &c.id == p)
    };
    (0..root.classes.len())
        .filter(|&i| {
            !root
                .classes
                .iter()
                .any(|c| c.parent.as_ref() == Some(&root.classes[i].id))
        })
        .all(|leaf| {
            if !has(leaf, &["ls", "sc"]) {
                return true;
            }
            let mut at = Some(leaf);
            for _ in 0..=root.classes.len() {
                match at {
                    Some(i) if has(i, &["ul"]) => return true,
                    Some(i) => at = parent_of(i),
                    None => return false,
                }
            }
            false
        })
}

/// What a kind needs on a trace, appended to its description in listings.
fn trace_note(k: &registry::Kind) -> &'static str {
    match k.family {
        Family::Shaper => "",
        Family::Classful if k.name != "prio" => {
            "; on a trace: a whole tree, 'qoslab shape tree --policy FILE' (classes and filters)"
        }
        _ => "; on a trace also rate (required: the link draining the queue)",
    }
}

impl TracePolicy {
    /// Builds flat `kind` from string parameters: a shaper, an AQM, a queue,
    /// a classless scheduler or `prio`; all but the shapers take `rate`
    /// (required), the link draining them. Errors name the parameter
    /// (`rate`, `limit`, `kind`) as their path.
    pub fn from_params(kind: &str, params: &[(String, String)]) -> Result<Self, PolicyError> {
        if kind.trim().eq_ignore_ascii_case(TREE_KIND) {
            return Err(PolicyError::new(
                "kind",
                "tree is a whole policy tree: give it as TOML ('qoslab shape tree --policy \
                 FILE.toml', qoslab.shape_policy)",
            ));
        }
        let Some(k) = registry::lookup(kind) else {
            let mut valid = registry::qdisc_kinds();
            valid.push(TREE_KIND);
            return Err(PolicyError::new(
                "kind",
                registry::unknown_message("shaper", kind, &valid),
            ));
        };
        match k.family {
            Family::Meter => Err(PolicyError::new(
                "kind",
                format!(
                    "'{}' is a meter (it colours, never queues): run it with 'qoslab meter {}'",
                    k.name, k.name
                ),
            )),
            Family::Shaper | Family::Aqm => {
                let p = Params::new(k.name, params.iter().cloned());
                TraceShaper::from_params(k.name, p)
                    .map(TracePolicy::Flat)
                    .map_err(|e| PolicyError::new(e.param, e.message))
            }
            Family::Classful if k.name != "prio" => Err(PolicyError::new(
                "kind",
                format!(
                    "{} needs classes and filters: give the whole tree with 'qoslab shape tree \
                     --policy FILE.toml' (the table of a scenario's [policy.LINK.DIR])",
                    k.name
                ),
            )),
            Family::Queue | Family::Classless | Family::Classful => {
                let mut own = Vec::with_capacity(params.len());
                let mut rate = None;
                for (key, v) in params {
                    if key.trim().eq_ignore_ascii_case("rate") {
                        rate = Some(parse_rate(v)?);
                    } else {
                        own.push((key.clone(), v.clone()));
                    }
                }
                let rate = rate.ok_or_else(|| {
                    PolicyError::new(
                        "rate",
                        format!(
                            "missing: {} on a trace needs rate, the link draining its queue \
                             (e.g. 10mbit)",
                            k.name
                        ),
                    )
                })?;
                let root = QdiscSpec {
                    params: own,
                    ..QdiscSpec::leaf(k.name, &[])
                };
                let spec = TreeSpec { police: None, root };
                // Errors name `.<param>` under an empty path: the parameter.
                let t = tree::build(&spec, "", DEFAULT_SEED).map_err(|e| PolicyError {
                    path: e.path.trim_start_matches('.').to_string(),
                    message: e.message,
                })?;
                Self::linked(t, rate, "rate")
            }
        }
    }

    /// Builds a whole tree; `rate` is the link draining it, required
    /// unless the root paces itself (a shaper or `htb`). Errors name
    /// `path.…` in the tree's structure (see [`tree::build`]), or `rate`.
    pub fn from_tree(
        spec: &TreeSpec,
        path: &str,
        rate: Option<Rate>,
        seed: u64,
    ) -> Result<Self, PolicyError> {
        let t = tree::build(spec, path, seed)?;
        let kind = registry::canonical_kind(&spec.root.kind).unwrap_or("?");
        match rate {
            Some(r) => Self::linked(t, r, "rate"),
            None if paces_itself(kind, &spec.root) => Ok(TracePolicy::Tree(t)),
            None => Err(PolicyError::new(
                "rate",
                format!(
                    "missing: a tree rooted at {kind} does not pace packets itself (an hfsc \
                     tree does when every leaf is under an ul curve or rt-only); give rate, \
                     the link draining it (e.g. --rate 10mbit)"
                ),
            )),
        }
    }

    fn linked(t: PolicyTree, rate: Rate, at: &str) -> Result<Self, PolicyError> {
        Link::new(t, rate)
            .map(TracePolicy::Linked)
            .map_err(|e| PolicyError::new(at, e.message))
    }

    /// The tree's class rows (root first), empty for a flat shaper or AQM.
    pub fn class_results(&self) -> Vec<ClassResult> {
        self.tree().map_or_else(Vec::new, PolicyTree::class_results)
    }

    /// What tc and the kernel would only warn about (HTB quantum clamps …).
    pub fn warnings(&self) -> Vec<String> {
        self.tree().map_or_else(Vec::new, |t| t.warnings().to_vec())
    }

    fn tree(&self) -> Option<&PolicyTree> {
        match self {
            TracePolicy::Flat(_) => None,
            TracePolicy::Tree(t) => Some(t),
            TracePolicy::Linked(l) => Some(l.queue()),
        }
    }

    /// (kind, family, description) of every kind [`Self::from_params`]
    /// knows, in registry order, then [`TREE_KIND`]; each description says
    /// what the kind needs on a trace.
    pub fn kinds() -> Vec<(&'static str, &'static str, String)> {
        let mut v: Vec<_> = registry::kinds()
            .iter()
            .filter(|k| k.family.is_qdisc())
            .map(|k| {
                let aliases = if k.aliases.is_empty() {
                    String::new()
                } else {
                    format!(" (alias {})", k.aliases.join(", "))
                };
                (
                    k.name,
                    k.family.name(),
                    format!("{}{aliases}{}", k.description, trace_note(k)),
                )
            })
            .collect();
        v.push((
            TREE_KIND,
            "policy tree",
            "a whole policy tree from --policy FILE.toml or inline TOML (the table of a \
             scenario's [policy.LINK.DIR]: htb = {...}, [[class]], [[filter]]); rate = the \
             link draining it (required unless the root is a shaper, htb, or hfsc with \
             every leaf under ul or rt-only)"
                .to_string(),
        ));
        v
    }
}

fn parse_rate(v: &str) -> Result<Rate, PolicyError> {
    qoslab_core::parse::parse_rate(v).map_err(|e| PolicyError::new("rate", e.to_string()))
}

/// `match` over the three variants, binding the inner `Shaper` to `$s`.
macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            TracePolicy::Flat($s) => $e,
            TracePolicy::Tree($s) => $e,
            TracePolicy::Linked($s) => $e,
        }
    };
}

impl Shaper for TracePolicy {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        each!(self, s => s.enqueue(now, pkt))
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        each!(self, s => s.dequeue(now))
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        each!(self, s => s.next_ready(now))
    }
    fn backlog_packets(&self) -> usize {
        each!(self, s => s.backlog_packets())
    }
    fn backlog_bytes(&self) -> u64 {
        each!(self, s => s.backlog_bytes())
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        each!(self, s => s.describe())
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        each!(self, s => s.drain_dropped(out))
    }
    // The trace loop runs compiled for the variant, chosen once per chunk.
    fn push_chunk(
        &mut self,
        stream: &mut ShapeStream,
        times: &[u64],
        sizes: &[u32],
        fields: &TraceFields<'_>,
    ) -> Result<(), TraceError> {
        each!(self, s => s.push_chunk(stream, times, sizes, fields))
    }
    fn finish_stream(&mut self, stream: &mut ShapeStream) -> Result<ShapeSummary, TraceError> {
        each!(self, s => s.finish_stream(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{ClassSpec, FilterSpec};
    use qoslab_core::drive::{shape_trace_fields, TraceFields, DROPPED};

    /// Constant-rate flows of 1500-byte packets for `secs` seconds,
    /// interleaved by time: (times, sizes, flow index per packet).
    fn cbr(rates_bps: &[u64], secs: u64) -> (Vec<u64>, Vec<u32>, Vec<u32>) {
        let mut pk: Vec<(u64, u32)> = Vec::new();
        for (f, r) in rates_bps.iter().enumerate() {
            let gap = 1500 * 8 * 1_000_000_000 / r;
            let mut t = f as u64 * 1000;
            while t < secs * 1_000_000_000 {
                pk.push((t, f as u32));
                t += gap;
            }
        }
        pk.sort();
        let times = pk.iter().map(|p| p.0).collect();
        let flows = pk.iter().map(|p| p.1).collect();
        (times, vec![1500; pk.len()], flows)
    }

    /// Bits per second each flow got out within the first `secs` seconds.
    fn per_flow_bps(dep: &[u64], flows: &[u32], n: usize, secs: u64) -> Vec<f64> {
        let mut bytes = vec![0u64; n];
        for (d, f) in dep.iter().zip(flows) {
            if *d != DROPPED && *d <= secs * 1_000_000_000 {
                bytes[*f as usize] += 1500;
            }
        }
        bytes
            .iter()
            .map(|b| *b as f64 * 8.0 / secs as f64)
            .collect()
    }

    fn params(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn class(id: &str, parent: Option<&str>, kv: &[(&str, &str)]) -> ClassSpec {
        ClassSpec {
            id: id.into(),
            parent: parent.map(Into::into),
            params: params(kv),
            police: None,
            qdisc: None,
        }
    }

    /// HFSC on a trace: under a root class with `ul rate 10mbit` (the
    /// tc-hfsc(7) advice: ul on the uppermost class to match the uplink),
    /// two ls leaves 1:3 both offered 8 Mbit/s share the 10 Mbit/s 2.5 : 7.5;
    /// the tree paces itself. Without ul it needs a rate.
    #[test]
    fn hfsc_shares_a_capped_root_by_ls_ratio_on_a_trace() {
        let mut root = QdiscSpec::leaf("hfsc", &[("default", "20")]);
        root.classes = vec![
            class("1", None, &[("ls", "rate 10mbit"), ("ul", "rate 10mbit")]),
            class("10", Some("1"), &[("ls", "rate 1mbit")]),
            class("20", Some("1"), &[("sc", "m1 0 d 0 m2 3mbit")]),
        ];
        root.filters = vec![FilterSpec {
            classifier: "dport 5001".into(),
            class: "10".into(),
        }];
        let spec = TreeSpec { police: None, root };
        let mut p = TracePolicy::from_tree(&spec, "policy", None, 1).unwrap();
        assert!(matches!(p, TracePolicy::Tree(_)), "every leaf is under ul");
        let secs = 5;
        let (t, s, f) = cbr(&[8_000_000, 8_000_000], secs);
        let dport: Vec<u16> = f.iter().map(|x| 5001 + *x as u16).collect();
        let fields = TraceFields {
            dst_port: Some(&dport),
            ..TraceFields::default()
        };
        let mut dep = vec![0; t.len()];
        shape_trace_fields(&mut p, &t, &s, &fields, &mut dep).unwrap();
        let got = per_flow_bps(&dep, &f, 2, secs);
        for (g, want) in got.iter().zip([2.5e6, 7.5e6]) {
            assert!((g / want - 1.0).abs() < 0.03, "{got:?}");
        }
        let names: Vec<String> = p.class_results().iter().map(|r| r.name.clone()).collect();
        assert_eq!(names, ["root", "1", "10", "20"]);
        let mut free = spec.clone();
        free.root.classes[0].params.truncate(1);
        let e = TracePolicy::from_tree(&free, "policy", None, 1)
            .err()
            .unwrap();
        assert_eq!(e.path, "rate");
    }

    /// Two UDP-like flows, each at twice its HTB class's rate (4 and 6
    /// Mbit/s under a 10 Mbit/s parent), told apart by destination port:
    /// each gets its class's rate within 3 %.
    #[test]
    fn htb_gives_each_class_its_rate_on_a_trace() {
        let mut root = QdiscSpec::leaf("htb", &[("default", "20")]);
        root.classes = vec![
            class("1", None, &[("rate", "10mbit")]),
            class("10", Some("1"), &[("rate", "4mbit"), ("ceil", "4mbit")]),
            class("20", Some("1"), &[("rate", "6mbit"), ("ceil", "6mbit")]),
        ];
        root.filters = vec![FilterSpec {
            classifier: "dport 5001".into(),
            class: "10".into(),
        }];
        let spec = TreeSpec { police: None, root };
        let mut p = TracePolicy::from_tree(&spec, "policy", None, 1).unwrap();
        assert!(matches!(p, TracePolicy::Tree(_)), "htb paces itself");
        let secs = 5;
        let (t, s, f) = cbr(&[8_000_000, 12_000_000], secs);
        let dport: Vec<u16> = f.iter().map(|x| 5001 + *x as u16).collect();
        let fields = TraceFields {
            dst_port: Some(&dport),
            ..TraceFields::default()
        };
        let mut dep = vec![0; t.len()];
        shape_trace_fields(&mut p, &t, &s, &fields, &mut dep).unwrap();
        let got = per_flow_bps(&dep, &f, 2, secs);
        for (g, want) in got.iter().zip([4e6, 6e6]) {
            assert!((g / want - 1.0).abs() < 0.03, "{got:?}");
        }
        let rows = p.class_results();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["root", "1", "10", "20"]);
        assert!(rows[2].packets_dropped > 0 && rows[3].packets_dropped > 0);
        // Without the dport column every packet is in the default class.
        let mut p = TracePolicy::from_tree(&spec, "policy", None, 1).unwrap();
        shape_trace_fields(&mut p, &t, &s, &TraceFields::default(), &mut dep).unwrap();
        let rows = p.class_results();
        assert_eq!(rows[2].packets_in, 0);
        assert_eq!(rows[3].packets_in, t.len() as u64);
    }

    /// A heavy flow (20 Mbit/s) and a light one (1 Mbit/s) into a 10 Mbit/s
    /// link: behind SFQ the light flow loses nothing and gets its rate;
    /// behind a FIFO it loses about half, as the heavy one does.
    #[test]
    fn sfq_serves_the_light_flow_a_fifo_does_not() {
        let secs = 4;
        let (t, s, f) = cbr(&[20_000_000, 1_000_000], secs);
        let fields = TraceFields {
            flow: Some(&f),
            ..TraceFields::default()
        };
        let run = |kind: &str| {
            let mut p =
                TracePolicy::from_params(kind, &params(&[("rate", "10mbit"), ("limit", "100")]))
                    .unwrap();
            let mut dep = vec![0; t.len()];
            shape_trace_fields(&mut p, &t, &s, &fields, &mut dep).unwrap();
            let light: Vec<u64> = dep
                .iter()
                .zip(&f)
                .filter(|(_, x)| **x == 1)
                .map(|(d, _)| *d)
                .collect();
            let lost = light.iter().filter(|d| **d == DROPPED).count();
            (
                lost as f64 / light.len() as f64,
                per_flow_bps(&dep, &f, 2, secs)[1],
            )
        };
        let (lost, bps) = run("sfq");
        assert!(lost == 0.0 && bps > 0.97e6, "sfq: lost {lost}, {bps} bit/s");
        let (lost, _) = run("pfifo");
        assert!(lost > 0.3, "a FIFO shares the loss: {lost}");
    }

    #[test]
    fn every_flat_queue_and_scheduler_runs_and_needs_a_rate() {
        for kind in [
            "pfifo",
            "bfifo",
            "pfifo_head_drop",
            "sfq",
            "fq_codel",
            "fair-queue",
            "prio",
        ] {
            let p = TracePolicy::from_params(kind, &params(&[("rate", "1mbit")])).unwrap();
            assert!(matches!(p, TracePolicy::Linked(_)), "{kind}");
            assert_eq!(p.class_results()[0].name, "root");
            let e = TracePolicy::from_params(kind, &[]).err().unwrap();
            assert_eq!(e.path, "rate", "{kind}: {e}");
        }
        let e = TracePolicy::from_params("sfq", &params(&[("rate", "1mbit"), ("quantun", "1")]))
            .err()
            .unwrap();
        assert_eq!(e.path, "quantun", "{e}");
        let e = TracePolicy::from_params("htb", &params(&[("rate", "1mbit")]))
            .err()
            .unwrap();
        assert!(e.message.contains("qoslab shape tree --policy"), "{e}");
        let e = TracePolicy::from_params("tree", &[]).err().unwrap();
        assert!(e.message.contains("--policy"), "{e}");
        let e = TracePolicy::from_params("srtcm", &[]).err().unwrap();
        assert!(e.message.contains("qoslab meter srtcm"), "{e}");
    }

    /// An unknown kind lists every valid one, from the registry.
    #[test]
    fn unknown_kind_lists_the_registry() {
        let e = TracePolicy::from_params("sfqq", &[]).err().unwrap();
        assert_eq!(e.path, "kind");
        assert!(e.message.contains("did you mean 'sfq'"), "{e}");
        for k in registry::qdisc_kinds() {
            assert!(e.message.contains(k), "{k} missing from: {e}");
        }
        let listed: Vec<&str> = TracePolicy::kinds().iter().map(|k| k.0).collect();
        assert_eq!(listed.len(), registry::qdisc_kinds().len() + 1);
    }
}
