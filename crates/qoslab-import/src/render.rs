//! Specs → the scenario policy TOML (`[policy.LINK.DIR]`, the table
//! `crates/qoslab-scenario` reads), with the source lines, the warnings,
//! and every derived default as comments. The derived values are read from
//! qoslab's own build of the policy (`describe`), so the comment is what
//! the simulation uses (Bc = CIR/32, Tc, limit from latency, HTB quantum
//! from r2q, the platform's queue-limit), not a second computation.

use crate::{ImportedPolicy, Warning};
use qoslab_policy::spec::{
    ClassSpec, FifoLimit, FilterSpec, MeterSpec, PolicySpec, QdiscSpec, TreeSpec,
};
use qoslab_policy::tree::canonical_kind;

/// Kinds written under the `shape = { kind = … }` family key.
const SHAPERS: [&str; 6] = ["tbf", "shape", "srras", "trras", "g-srras", "g-trras"];

/// TOML string literal.
fn q(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A bare key when TOML allows it, else quoted.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        k.to_string()
    } else {
        q(k)
    }
}

fn pairs(params: &[(String, String)]) -> Vec<String> {
    params
        .iter()
        .map(|(k, v)| format!("{} = {}", key(k), q(v)))
        .collect()
}

fn inline(items: &[String]) -> String {
    if items.is_empty() {
        "{}".into()
    } else {
        format!("{{ {} }}", items.join(", "))
    }
}

fn meter(m: &MeterSpec) -> String {
    let mut items = Vec::new();
    if m.kind != "police" {
        items.push(format!("kind = {}", q(&m.kind)));
    }
    items.extend(pairs(&m.params));
    inline(&items)
}

/// A nested qdisc as an inline table (its classes and filters as arrays of
/// inline tables).
fn qdisc_inline(n: &QdiscSpec) -> String {
    let mut items = vec![format!("kind = {}", q(&n.kind))];
    items.extend(pairs(&n.params));
    if !n.classes.is_empty() {
        let cs: Vec<String> = n.classes.iter().map(|c| inline(&class_items(c))).collect();
        items.push(format!("class = [{}]", cs.join(", ")));
    }
    if !n.filters.is_empty() {
        let fs: Vec<String> = n.filters.iter().map(|f| inline(&filter_items(f))).collect();
        items.push(format!("filter = [{}]", fs.join(", ")));
    }
    if let Some(c) = &n.child {
        items.push(format!("qdisc = {}", qdisc_inline(c)));
    }
    inline(&items)
}

fn class_items(c: &ClassSpec) -> Vec<String> {
    let mut items = vec![format!("id = {}", q(&c.id))];
    if let Some(p) = &c.parent {
        items.push(format!("parent = {}", q(p)));
    }
    items.extend(pairs(&c.params));
    if let Some(m) = &c.police {
        items.push(format!("police = {}", meter(m)));
    }
    if let Some(n) = &c.qdisc {
        items.push(format!("qdisc = {}", qdisc_inline(n)));
    }
    items
}

fn filter_items(f: &FilterSpec) -> Vec<String> {
    vec![
        format!("match = {}", q(&f.classifier)),
        format!("class = {}", q(&f.class)),
    ]
}

/// The body of a `[policy.LINK.DIR]` table for `spec` under `table`.
pub fn policy_table(spec: &PolicySpec, table: &str) -> String {
    let mut o = format!("[{table}]\n");
    match spec {
        PolicySpec::Police(m) => o += &format!("police = {}\n", meter(m)),
        PolicySpec::Shape(s) => {
            let mut items = vec![format!("kind = {}", q(&s.kind))];
            items.extend(pairs(&s.params));
            o += &format!("shape = {}\n", inline(&items));
        }
        PolicySpec::Fifo(f) => {
            let limit = match f.limit {
                FifoLimit::Packets(n) => format!("{n}p"),
                FifoLimit::Bytes(b) => format!("{b}B"),
            };
            let mut items = vec![format!("limit = {}", q(&limit))];
            if f.head_drop {
                items.push("head_drop = true".into());
            }
            o += &format!("fifo = {}\n", inline(&items));
        }
        PolicySpec::Tree(t) => o += &tree(t, table),
        PolicySpec::Sized { stab, inner } => {
            // The inner policy's table, then its size table (tc-stab).
            let body = policy_table(inner, table);
            o += body.strip_prefix(&format!("[{table}]\n")).unwrap_or(&body);
            o += &format!("stab = {}\n", stab_inline(stab));
        }
    }
    o
}

/// `stab = { … }` as the scenario reader takes it (tc-stab(8) options).
fn stab_inline(s: &qoslab_policy::stab::SizeTable) -> String {
    let linklayer = match s.linklayer {
        qoslab_policy::stab::LinkLayer::Ethernet => "ethernet",
        qoslab_policy::stab::LinkLayer::Atm => "atm",
    };
    inline(&[
        format!("overhead = {}", s.overhead_bytes),
        format!("linklayer = {}", q(linklayer)),
        format!("mpu = {}", q(&format!("{}B", s.mpu_bytes))),
        format!("mtu = {}", q(&format!("{}B", s.mtu_bytes))),
        format!("tsize = {}", s.tsize),
    ])
}

fn tree(t: &TreeSpec, table: &str) -> String {
    let mut o = String::new();
    if let Some(m) = &t.police {
        o += &format!("police = {}\n", meter(m));
    }
    let r = &t.root;
    let kind = canonical_kind(&r.kind).unwrap_or(&r.kind);
    if SHAPERS.contains(&kind) {
        let mut items = vec![format!("kind = {}", q(&r.kind))];
        items.extend(pairs(&r.params));
        o += &format!("shape = {}\n", inline(&items));
    } else {
        o += &format!("{} = {}\n", key(&r.kind), inline(&pairs(&r.params)));
    }
    if let Some(c) = &r.child {
        o += &format!("qdisc = {}\n", qdisc_inline(c));
    }
    for c in &r.classes {
        o += &format!("\n[[{table}.class]]\n");
        for item in class_items(c) {
            o += &item;
            o.push('\n');
        }
    }
    for f in &r.filters {
        o += &format!("\n[[{table}.filter]]\n");
        for item in filter_items(f) {
            o += &item;
            o.push('\n');
        }
    }
    o
}

/// What qoslab builds from `spec`: `describe` of the conditioner (the
/// derived values), or why it does not build.
/// `describe` pairs and the builder's warnings.
pub type Derived = (Vec<(String, String)>, Vec<String>);

pub fn derived(spec: &PolicySpec) -> Result<Derived, String> {
    // HTB/HFSC trees name their classes by the user's ids themselves
    // (qoslab_policy::tree::UserIds).
    let own =
        |d: Vec<(&'static str, String)>| d.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    match spec {
        PolicySpec::Police(m) => qoslab_policy::policy::build_policer(m, "police")
            .map(|p| (own(p.describe()), Vec::new()))
            .map_err(|e| format!("{}: {}", e.path, e.message)),
        PolicySpec::Shape(s) => qoslab_policy::policy::build_shaper(s, "shape")
            .map(|p| (own(qoslab_core::Shaper::describe(&p)), Vec::new()))
            .map_err(|e| format!("{}: {}", e.path, e.message)),
        PolicySpec::Fifo(f) => qoslab_policy::policy::build_fifo(f, "fifo")
            .map(|p| (own(qoslab_core::Shaper::describe(&p)), Vec::new()))
            .map_err(|e| format!("{}: {}", e.path, e.message)),
        PolicySpec::Tree(t) => qoslab_policy::tree::build(t, "policy", 1)
            .map(|p| {
                let w = p.warnings().to_vec();
                (own(qoslab_core::Shaper::describe(&p)), w)
            })
            .map_err(|e| format!("{}: {}", e.path, e.message)),
        PolicySpec::Sized { inner, .. } => derived(inner),
    }
}

/// The whole rendered text for one imported policy: a header naming the
/// source lines, warnings, the table, and the derived values.
pub fn render(p: &ImportedPolicy, warnings: &[Warning], from: &str, table: &str) -> String {
    let mut o = format!(
        "# Imported by `qoslab import {from}` ({} {}). Source:\n",
        p.attach,
        p.direction.name()
    );
    for l in &p.source {
        o += &format!("#   {l}\n");
    }
    let built = derived(&p.spec);
    let mut warns: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    if let Ok((_, w)) = &built {
        warns.extend(w.iter().cloned());
    }
    if !warns.is_empty() {
        o += "# Warnings:\n";
        for w in &warns {
            o += &format!("#   {w}\n");
        }
    }
    o += &policy_table(&p.spec, table);
    match built {
        Ok((d, _)) => {
            o += "# As qoslab builds it (every default derived, as tc / IOS would show it):\n";
            for (k, v) in d {
                if k == "warning" {
                    continue;
                }
                o += &format!("#   {k} = {v}\n");
            }
        }
        Err(e) => o += &format!("# Not built here: {e}\n"),
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoslab_policy::spec::ShaperSpec;

    #[test]
    fn strings_are_escaped_and_keys_quoted_when_needed() {
        assert_eq!(q("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(key("green-min"), "green-min");
        assert_eq!(key("a b"), "\"a b\"");
        let s = PolicySpec::Shape(ShaperSpec {
            kind: "tbf".into(),
            params: vec![("rate".into(), "1mbit".into())],
        });
        assert_eq!(
            policy_table(&s, "policy.bottleneck.egress"),
            "[policy.bottleneck.egress]\nshape = { kind = \"tbf\", rate = \"1mbit\" }\n"
        );
    }
}
