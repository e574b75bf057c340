//! Policy trees in scenario files: a root qdisc, its classes, filters and
//! child qdiscs, written so that someone who knows `tc` or Cisco MQC can
//! read them (see the crate doc for the full syntax).
//!
//! The tree is checked here by building it with `qoslab-policy`'s builder
//! ([`qoslab_policy::tree::build`], which in turn lets `qoslab-core`'s
//! constructors check every parameter); an error it reports under a path
//! (`….class[2].ceil`) is pointed at that key's line.

use crate::reader::{Cx, Field, Result, Section};
use qoslab_policy::spec::{ClassSpec, FilterSpec, MeterSpec, QdiscSpec, TreeSpec};
use qoslab_policy::tree::{all_kinds, canonical_kind};
use qoslab_policy::PolicyError;

/// Keys of a qdisc table that are not the kind's parameters.
const STRUCTURE: [&str; 4] = ["kind", "class", "filter", "qdisc"];

/// Is `key` a node kind that may name the root qdisc of a policy table
/// (`htb = { … }`, `sfq = {}`, `fair_queue = {}`)?
pub(crate) fn is_root_kind(key: &str) -> bool {
    canonical_kind(key).is_some()
}

/// Every key that may name a root qdisc, for messages.
pub(crate) fn root_kinds() -> Vec<&'static str> {
    all_kinds()
}

/// Records `path.key` again under the spelling `qoslab-core` uses in its
/// errors (`queue-limit` for `queue_limit`), so errors find the key.
fn alias(cx: &mut Cx<'_>, base: &str, key: &str, at: usize) {
    let norm = key.trim().to_ascii_lowercase().replace('_', "-");
    if norm != key {
        cx.located.push((format!("{base}.{norm}"), at));
    }
}

/// The parameters of a kind table (`htb = { default = "20", r2q = 10 }`),
/// also located directly under `base` (where the engine reports them).
fn params(
    cx: &mut Cx<'_>,
    t: &mut Section<'_>,
    base: &str,
    skip: &[&str],
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (key, v) in t.entries(cx) {
        if skip.contains(&key.as_str()) {
            continue;
        }
        let value = v.scalar_string(cx)?;
        cx.located.push((format!("{base}.{key}"), v.at));
        alias(cx, base, &key, v.at);
        out.push((key, value));
    }
    Ok(out)
}

/// Reads a root qdisc given as `KIND = { params }` at `f` (the policy
/// table's key), plus the policy table's `class`, `filter` and `qdisc`.
pub(crate) fn root(
    cx: &mut Cx<'_>,
    kind_key: &str,
    f: &Field<'_>,
    base: &str,
    classes: Option<Field<'_>>,
    filters: Option<Field<'_>>,
    child: Option<Field<'_>>,
) -> Result<QdiscSpec> {
    let (kind, params) = if kind_key == "shape" {
        // The family key of the flat syntax: shape = { kind = "tbf", … }.
        let mut t = f.table(cx)?;
        let kind = match t.get(cx, "kind") {
            Some(k) => k.string(cx)?,
            None => "shape".to_string(),
        };
        (kind, params(cx, &mut t, base, &["kind"])?)
    } else {
        let mut t = f.table(cx)?;
        (kind_key.to_string(), params(cx, &mut t, base, &[])?)
    };
    cx.located.push((format!("{base}.kind"), f.key_at));
    structure(cx, kind, params, classes, filters, child)
}

fn structure(
    cx: &mut Cx<'_>,
    kind: String,
    params: Vec<(String, String)>,
    classes: Option<Field<'_>>,
    filters: Option<Field<'_>>,
    child: Option<Field<'_>>,
) -> Result<QdiscSpec> {
    let classes = match classes {
        Some(cf) => cf
            .tables(cx)?
            .into_iter()
            .map(|t| class(cx, t))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let filters = match filters {
        Some(ff) => ff
            .tables(cx)?
            .into_iter()
            .map(|t| filter(cx, t))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let child = match child {
        Some(q) => Some(Box::new(qdisc(cx, &q)?)),
        None => None,
    };
    Ok(QdiscSpec {
        kind,
        params,
        classes,
        filters,
        child,
    })
}

/// A nested qdisc: `qdisc = "sfq"` or `qdisc = { kind = "sfq", perturb = "10s" }`
/// (a table may hold its own `class`, `filter` and `qdisc`).
fn qdisc(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<QdiscSpec> {
    if f.is_str() {
        let kind = f.string(cx)?;
        cx.located.push((format!("{}.kind", f.path), f.at));
        return Ok(QdiscSpec::leaf(&kind, &[]));
    }
    let mut t = f.table(cx)?;
    let kf = t.require(
        cx,
        "kind",
        &format!(
            "the qdisc's kind, e.g. kind = \"sfq\" (kinds: {})",
            root_kinds().join(", ")
        ),
    )?;
    let kind = kf.string(cx)?;
    let classes = t.get(cx, "class");
    let filters = t.get(cx, "filter");
    let child = t.get(cx, "qdisc");
    let p = params(cx, &mut t, &f.path, &STRUCTURE)?;
    structure(cx, kind, p, classes, filters, child)
}

fn class(cx: &mut Cx<'_>, mut t: Section<'_>) -> Result<ClassSpec> {
    let idf = t.require(
        cx,
        "id",
        "the class id, e.g. id = \"10\" (tc classid 1:10, an MQC class name)",
    )?;
    let id = idf.scalar_string(cx)?;
    let parent = match t.get(cx, "parent") {
        Some(p) => Some(p.scalar_string(cx)?),
        None => None,
    };
    let police = match t.get(cx, "police") {
        Some(p) => Some(crate::topology::meter(cx, &p)?),
        None => None,
    };
    let qdisc = match t.get(cx, "qdisc") {
        Some(q) => Some(qdisc(cx, &q)?),
        None => None,
    };
    let base = t.path.clone();
    let params = params(cx, &mut t, &base, &["id", "parent", "police", "qdisc"])?;
    Ok(ClassSpec {
        id,
        parent,
        params,
        police,
        qdisc,
    })
}

/// `match` as a table: tuple keys, or `dscp`, or `color`, or `any`.
const MATCH_KEYS: [&str; 12] = [
    "src", "dst", "src_port", "sport", "dst_port", "dport", "protocol", "proto", "dscp", "color",
    "colour", "any",
];

fn filter(cx: &mut Cx<'_>, mut t: Section<'_>) -> Result<FilterSpec> {
    let mf = t.require(
        cx,
        "match",
        "what the filter matches: match = { dst_port = 5201 } or match = \"dport 5201 proto udp\"",
    )?;
    let cf = t.require(
        cx,
        "class",
        "the class matching packets go to, e.g. class = \"10\"",
    )?;
    let class = cf.scalar_string(cx)?;
    t.finish(cx, "in a filter (match, class)")?;
    let classifier = if mf.is_table() {
        match_table(cx, &mf)?
    } else {
        mf.string(cx)?
    };
    // The engine checks the text; point its complaints at `match`.
    if let Err(e) = qoslab_core::classify::Classifier::parse(&classifier) {
        return Err(mf.error(cx, e.message));
    }
    Ok(FilterSpec { classifier, class })
}

/// `{ dst = "10.0.0.0/8", dst_port = 5001, protocol = "udp" }` → the
/// classifier's text form.
fn match_table(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<String> {
    let mut t = f.table(cx)?;
    let mut tuple: Vec<String> = Vec::new();
    let mut other: Vec<(String, &Field<'_>)> = Vec::new();
    let mut fields = Vec::new();
    for k in MATCH_KEYS {
        if let Some(v) = t.get(cx, k) {
            fields.push((k, v));
        }
    }
    t.finish(
        cx,
        "in a match (src, dst, src_port, dst_port, protocol | dscp | color | any)",
    )?;
    for (k, v) in &fields {
        let value = if v.is_table() {
            return Err(v.error(cx, "expected a value"));
        } else if let Ok(items) = v.array(cx) {
            items
                .iter()
                .map(|i| i.scalar_string(cx))
                .collect::<Result<Vec<_>>>()?
                .join(",")
        } else {
            v.scalar_string(cx)?
        };
        let word = match *k {
            "src" => "src",
            "dst" => "dst",
            "src_port" | "sport" => "sport",
            "dst_port" | "dport" => "dport",
            "protocol" | "proto" => "proto",
            "dscp" => {
                other.push((format!("dscp {value}"), v));
                continue;
            }
            "color" | "colour" => {
                other.push((format!("color {value}"), v));
                continue;
            }
            _ => {
                if !v.bool(cx)? {
                    return Err(v.error(cx, "any = false matches nothing; leave the filter out"));
                }
                other.push(("any".to_string(), v));
                continue;
            }
        };
        tuple.push(format!("{word} {value}"));
    }
    match (tuple.is_empty(), other.len()) {
        (false, 0) => Ok(tuple.join(" ")),
        (true, 1) => Ok(other.remove(0).0),
        (true, 0) => Err(f.error(
            cx,
            "an empty match: give src, dst, src_port, dst_port, protocol, dscp, color or any = true",
        )),
        _ => {
            let second = other.last().map_or(f, |(_, v)| v);
            Err(second.error(
                cx,
                "one filter matches either 5-tuple fields, or dscp, or color (the classifiers \
                 do not combine); write two filters, or mark with a police action first",
            ))
        }
    }
}

/// Checks `spec` by building it; locates an error at the key it names.
pub(crate) fn check(cx: &Cx<'_>, spec: &TreeSpec, base: &str, at: usize) -> Result<()> {
    match qoslab_policy::tree::build(spec, base, 1) {
        Ok(_) => Ok(()),
        Err(PolicyError { path, message }) => {
            Err(cx.err(locate(cx, &path).unwrap_or(at), &path, message))
        }
    }
}

/// The offset of `path`; for a key that is not in the file (a missing
/// `default`), its qdisc's kind; else the nearest enclosing key read.
pub(crate) fn locate(cx: &Cx<'_>, path: &str) -> Option<usize> {
    let find = |p: &str| {
        cx.located
            .iter()
            .rev()
            .find(|(x, _)| x == p)
            .map(|(_, at)| *at)
    };
    let mut probe = path;
    loop {
        if let Some(at) = find(probe) {
            return Some(at);
        }
        probe = &probe[..probe.rfind(['.', '['])?];
        if let Some(at) = find(&format!("{probe}.kind")) {
            return Some(at);
        }
    }
}

/// A meter in front of the root (`police` next to a root qdisc).
pub(crate) fn tree(police: Option<MeterSpec>, root: QdiscSpec) -> Box<TreeSpec> {
    Box::new(TreeSpec { police, root })
}
