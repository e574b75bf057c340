//! tc command lines for policy trees the kernel can run: an HTB root
//! (tc-htb(8)) whose classes carry only the keys `tc class add … htb`
//! takes and whose leaves are `pfifo` / `bfifo` (or the default leaf),
//! with no filters (every packet goes to the `default` class, as HTB does
//! for unclassified traffic) and no policer in front. Anything else has no
//! faithful kernel form here and gives `None`.

use crate::conditioner::KernelQdisc;
use qoslab_sim::config::{QdiscSpec, TreeSpec};

const HTB_ROOT_KEYS: [&str; 2] = ["default", "r2q"];
const HTB_CLASS_KEYS: [&str; 10] = [
    "rate", "ceil", "burst", "cburst", "buffer", "cbuffer", "prio", "quantum", "mtu", "mpu",
];

/// A class id as a tc minor (`10` or `1:10` → `10`); tc reads it as hex,
/// consistently for `classid`, `parent` and `default`.
fn minor(id: &str) -> Option<String> {
    let m = id.strip_prefix("1:").unwrap_or(id);
    (!m.is_empty() && m.len() <= 4 && m.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| m.to_ascii_lowercase())
}

fn leaf(q: &Option<QdiscSpec>) -> Option<Option<(String, Vec<String>)>> {
    let Some(q) = q else {
        return Some(None);
    };
    let kind = q.kind.to_ascii_lowercase();
    if !(kind == "pfifo" || kind == "bfifo") || !q.classes.is_empty() || q.child.is_some() {
        return None;
    }
    let mut args = Vec::new();
    for (k, v) in &q.params {
        if !k.eq_ignore_ascii_case("limit") {
            return None;
        }
        args.extend(["limit".to_string(), v.clone()]);
    }
    Some(Some((kind, args)))
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The tc commands for `t`, or `None` when the kernel cannot run it.
pub fn htb_commands(t: &TreeSpec) -> Option<KernelQdisc> {
    let root = &t.root;
    if t.police.is_some()
        || !root.kind.eq_ignore_ascii_case("htb")
        || !root.filters.is_empty()
        || root.child.is_some()
    {
        return None;
    }
    let mut cmds = Vec::new();
    let mut first = s(&["qdisc", "add", "dev", "DEV", "root", "handle", "1:", "htb"]);
    for (k, v) in &root.params {
        let k = k.to_ascii_lowercase();
        if !HTB_ROOT_KEYS.contains(&k.as_str()) {
            return None;
        }
        let v = if k == "default" { minor(v)? } else { v.clone() };
        first.extend([k, v]);
    }
    cmds.push(first);
    for c in &root.classes {
        if c.police.is_some() {
            return None;
        }
        let id = minor(&c.id)?;
        let parent = match &c.parent {
            Some(p) => format!("1:{}", minor(p)?),
            None => "1:".into(),
        };
        let mut cmd = s(&["class", "add", "dev", "DEV", "parent"]);
        cmd.extend([parent, "classid".into(), format!("1:{id}"), "htb".into()]);
        for (k, v) in &c.params {
            let k = k.to_ascii_lowercase();
            if !HTB_CLASS_KEYS.contains(&k.as_str()) {
                return None;
            }
            cmd.extend([k, v.clone()]);
        }
        cmds.push(cmd);
        if let Some((kind, args)) = leaf(&c.qdisc)? {
            let mut q = s(&["qdisc", "add", "dev", "DEV", "parent"]);
            q.extend([format!("1:{id}"), kind]);
            q.extend(args);
            cmds.push(q);
        }
    }
    Some(KernelQdisc::Commands(cmds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoslab_sim::config::ClassSpec;

    fn class(id: &str, parent: Option<&str>, rate: &str) -> ClassSpec {
        ClassSpec {
            id: id.into(),
            parent: parent.map(Into::into),
            params: vec![("rate".into(), rate.into())],
            police: None,
            qdisc: None,
        }
    }

    #[test]
    fn htb_tree_becomes_tc_commands_and_filters_refuse() {
        let mut root = QdiscSpec::leaf("htb", &[("default", "20")]);
        root.classes = vec![class("1", None, "10mbit"), class("20", Some("1"), "5mbit")];
        root.classes[1].qdisc = Some(QdiscSpec::leaf("bfifo", &[("limit", "30000")]));
        let t = TreeSpec { police: None, root };
        let Some(KernelQdisc::Commands(c)) = htb_commands(&t) else {
            panic!("expected commands")
        };
        assert_eq!(
            c[0].join(" "),
            "qdisc add dev DEV root handle 1: htb default 20"
        );
        assert_eq!(
            c[2].join(" "),
            "class add dev DEV parent 1:1 classid 1:20 htb rate 5mbit"
        );
        assert_eq!(
            c[3].join(" "),
            "qdisc add dev DEV parent 1:20 bfifo limit 30000"
        );
        let mut t2 = t.clone();
        t2.root.filters.push(qoslab_sim::config::FilterSpec {
            classifier: "dscp ef".into(),
            class: "20".into(),
        });
        assert_eq!(htb_commands(&t2), None);
    }
}
