//! A policy given alone, outside a scenario (`qoslab shape tree --policy
//! FILE.toml`, or the same TOML inline): the table a scenario writes under
//! `[policy.LINK.DIR]` as a whole document — a root qdisc key
//! (`htb = { default = "20" }`), `[[class]]`, `[[filter]]`, `[qdisc]` and
//! an optional `police`, or a flat `shape = {…}` / `fifo = {…}`. Read by
//! the same code as the scenario's policies, so errors are located the
//! same way (`file:line:col: policy.class[1].rate: …`).

use crate::reader::{Cx, Field};
use crate::ScenarioError;
use qoslab_policy::spec::{FifoLimit, PolicySpec, QdiscSpec, TreeSpec};

/// The key path errors in a policy file start with.
pub const BASE: &str = "policy";

/// Parses policy `text` (`file` names it in errors) into a tree: a flat
/// shaper or FIFO becomes a one-node tree; a policer alone is refused (it
/// colours, it does not queue).
pub fn parse_policy(text: &str, file: &str) -> Result<TreeSpec, ScenarioError> {
    let mut cx = Cx::new(text, file);
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        cx.err(at, "", format!("invalid TOML: {}", e.message().trim_end()))
    })?;
    let f = Field::from_item(BASE.to_string(), 0, 0, doc.as_item());
    let spec = crate::topology::policy(&mut cx, &f)?;
    if let PolicySpec::Sized { .. } = spec {
        let path = format!("{BASE}.stab");
        let at = cx
            .located
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(0, |(_, at)| *at);
        return Err(cx.err(
            at,
            &path,
            "a size table (stab) belongs to a link's policy in a scenario; a trace's \
             sizes are already the sizes counted",
        ));
    }
    Ok(match spec {
        PolicySpec::Sized { .. } => unreachable!("refused above"),
        PolicySpec::Tree(t) => *t,
        PolicySpec::Shape(s) => {
            let params: Vec<(&str, &str)> = s
                .params
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            tree(QdiscSpec::leaf(&s.kind, &params))
        }
        PolicySpec::Fifo(q) => {
            let (kind, limit) = match (q.limit, q.head_drop) {
                (FifoLimit::Packets(n), false) => ("pfifo", n.to_string()),
                (FifoLimit::Packets(n), true) => ("pfifo_head_drop", n.to_string()),
                (FifoLimit::Bytes(b), _) => ("bfifo", b.to_string()),
            };
            tree(QdiscSpec::leaf(kind, &[("limit", limit.as_str())]))
        }
        PolicySpec::Police(m) => {
            let path = format!("{BASE}.police");
            let at = cx
                .located
                .iter()
                .find(|(p, _)| *p == path)
                .map_or(0, |(_, at)| *at);
            return Err(cx.err(
                at,
                &path,
                format!(
                    "a policer alone colours a trace and queues nothing: run it with \
                     'qoslab meter {}', or put a root qdisc beside it",
                    m.kind
                ),
            ));
        }
    })
}

fn tree(root: QdiscSpec) -> TreeSpec {
    TreeSpec { police: None, root }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_file_is_a_scenario_policy_table() {
        let t = parse_policy(
            "htb = { default = \"20\" }\n\
             [[class]]\nid = \"10\"\nrate = \"4mbit\"\n\
             [[class]]\nid = \"20\"\nrate = \"6mbit\"\n\
             [[filter]]\nmatch = { dport = 5001 }\nclass = \"10\"\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(t.root.kind, "htb");
        assert_eq!(t.root.classes.len(), 2);
        assert_eq!(t.root.filters.len(), 1);
        let t = parse_policy(
            "shape = { kind = \"tbf\", rate = \"1mbit\", burst = \"3000B\", limit = \"30000B\" }",
            "p",
        )
        .unwrap();
        assert_eq!(t.root.kind, "tbf");
        let t = parse_policy("fifo = { limit = 20 }", "p").unwrap();
        assert_eq!(t.root.kind, "pfifo");
    }

    #[test]
    fn errors_are_located_in_the_policy_file() {
        let e = parse_policy(
            "htb = { default = \"20\" }\n[[class]]\nid = \"20\"\nrate = \"6mbit\"\nceil = \"1mbit\"\n",
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.path.as_str()),
            (5, "policy.class[0].ceil"),
            "{e}"
        );
        let e = parse_policy("htb = { default = \"20\" }\nsfqq = {}\n", "p.toml").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parse_policy("police = { cir = \"1mbit\" }\n", "p.toml").unwrap_err();
        assert!(e.message.contains("qoslab meter police"), "{e}");
        let e = parse_policy("htb = {\n", "p.toml").unwrap_err();
        assert!(e.message.contains("invalid TOML"), "{e}");
    }
}
