//! Policy trees: the shipped tree scenarios parse and run, their results
//! hold what the sources and the models promise, and tree mistakes are
//! refused at their line.

use super::*;
use qoslab_sim::config::Topology;
use qoslab_sim::result::{ClassResult, SimResult};

fn load(text: &str, file: &str, secs: Option<u64>) -> (Scenario, SimResult) {
    let mut sc = parse(text, file).unwrap_or_else(|e| panic!("{e}"));
    if let Some(s) = secs {
        sc.config.duration = Duration::from_secs(s);
    }
    let r = qoslab_sim::run(&sc.config, &mut |_| true)
        .unwrap_or_else(|e| panic!("{}", sc.locate(&e).unwrap()));
    (sc, r)
}

fn class<'a>(r: &'a SimResult, name: &str) -> &'a ClassResult {
    let p = r
        .policies
        .iter()
        .find(|p| !p.classes.is_empty())
        .expect("a tree");
    p.classes
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no class {name}: {:?}", p.classes))
}

fn mbit(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / secs / 1e6
}

fn ping(r: &SimResult) -> &qoslab_sim::result::RttSummary {
    &r.flows
        .iter()
        .find(|f| f.protocol == "ping")
        .expect("ping")
        .rtt
}

#[test]
fn hfsc_howto_example_splits_the_uplink_and_keeps_voip_delay_under_30ms() {
    // "HFSC Scheduling with Linux" (linux-ip.net): A and B 500 kbit each of
    // the 1000 kbit ul; A's VoIP class (EF) is served by its real-time
    // curve, so its packets wait at most dmax = 30 ms.
    let secs = 20;
    let (_, r) = load(
        include_str!("../../../scenarios/trees/linux-hfsc.toml"),
        "linux-hfsc.toml",
        Some(secs),
    );
    let kbit = |name: &str| mbit(class(&r, name).bytes_out, secs as f64) * 1000.0;
    let (a, b, root) = (kbit("10"), kbit("20"), kbit("root"));
    assert!(root <= 1000.0 * 1.01 && root > 960.0, "{root} kbit/s");
    assert!(
        (a - 500.0).abs() < 25.0 && (b - 500.0).abs() < 25.0,
        "A {a} B {b}"
    );
    assert_eq!(class(&r, "12").packets_dropped, 0);
    // Ping: 4 links of 0.5 ms each way plus the wait in the VoIP class.
    let p = ping(&r);
    assert!(p.samples > 0 && p.max_ns < 4_000_000 + 30_000_000, "{p:?}");
}

#[test]
fn htb_leaf_gets_its_rate_never_its_ceil_and_the_leaf_queue_sets_the_ping() {
    // rate = ceil = 2 Mbit/s, backlogged by UDP floods: the class sends
    // 2 Mbit/s (± one burst) — at least rate, at most ceil.
    let secs = 20;
    let (_, r) = load(
        include_str!("../../../scenarios/trees/linux-htb-pfifo.toml"),
        "linux-htb-pfifo.toml",
        Some(secs),
    );
    let c = class(&r, "20");
    let rate = mbit(c.bytes_out, secs as f64);
    assert!((1.95..=2.01).contains(&rate), "{rate} Mbit/s");
    assert_eq!(c.max_queue_packets, 1000, "the default pfifo fills");
    // Conservation: what came in left, was dropped, or is still queued.
    let queued = c.packets_in - c.packets_out - c.packets_dropped;
    assert!(queued <= 1000, "{c:?}");
    // 1000 packets of ~1.5 kB at 2 Mbit/s: pings wait about 6 s (source).
    let p = ping(&r);
    assert!(
        p.max_ns > 5_500_000_000 && p.max_ns < 6_500_000_000,
        "{p:?}"
    );
    let root = class(&r, "root");
    assert_eq!(root.bytes_out, c.bytes_out);

    let (_, r) = load(
        include_str!("../../../scenarios/trees/linux-htb-bfifo.toml"),
        "linux-htb-bfifo.toml",
        Some(secs),
    );
    let c = class(&r, "20");
    let rate = mbit(c.bytes_out, secs as f64);
    assert!((1.95..=2.01).contains(&rate), "{rate} Mbit/s");
    // tc's 30kb is 30 KiB; at 2 Mbit/s that is 123 ms of queue.
    assert!(c.max_queue_bytes <= 30_720, "{}", c.max_queue_bytes);
    let p = ping(&r);
    assert!(p.samples > 0 && p.max_ns < 150_000_000, "{p:?}");
}

fn tcp_goodputs(r: &SimResult) -> Vec<f64> {
    r.flows
        .iter()
        .filter(|f| f.protocol == "tcp")
        .map(|f| f.goodput_bps)
        .collect()
}

#[test]
fn shape_with_fair_queue_shares_evenly_among_four_tcp_flows() {
    let (_, r) = load(
        include_str!("../../../scenarios/trees/isr4000-shape-fair-queue.toml"),
        "isr4000-shape-fair-queue.toml",
        None,
    );
    let g = tcp_goodputs(&r);
    eprintln!("fair-queue {g:?} jain {}", r.jain_fairness);
    assert_eq!(g.len(), 4);
    assert!(r.jain_fairness >= 0.99, "{g:?}");
    // The shaper still holds the sum to 20 Mbit/s of wire bytes.
    let root = class(&r, "root");
    assert!(mbit(root.bytes_out, 20.0) <= 20.1, "{root:?}");
}

#[test]
fn sfq_gives_the_lone_flow_the_same_share_as_each_of_many() {
    let (_, r) = load(
        include_str!("../../../scenarios/trees/sfq-1-vs-many.toml"),
        "sfq-1-vs-many.toml",
        None,
    );
    let g = tcp_goodputs(&r);
    eprintln!("sfq {g:?} jain {}", r.jain_fairness);
    assert!(r.jain_fairness >= 0.98, "{g:?}");
    let sum: f64 = g.iter().sum();
    assert!((g[0] / sum - 1.0 / 9.0).abs() < 0.02, "{g:?}");
}

#[test]
fn rio_at_the_bottleneck_drops_red_before_yellow_before_green() {
    let (_, r) = load(
        include_str!("../../../scenarios/trees/rfc2963-rio.toml"),
        "rfc2963-rio.toml",
        Some(20),
    );
    let c = class(&r, "root");
    let rate = |i: usize| c.color_packets_dropped[i] as f64 / c.color_packets_in[i].max(1) as f64;
    let (g, y, red) = (rate(0), rate(1), rate(2));
    eprintln!(
        "rio {c:?} drop rates g {g} y {y} r {red}; jain {}",
        r.jain_fairness
    );
    for f in &r.flows {
        eprintln!("{} {}", f.label, f.goodput_bps);
    }
    assert!(c.color_packets_in.iter().all(|&n| n > 1000), "{c:?}");
    assert!(red > y && y > g, "drop rates g {g} y {y} r {red}");
    assert!(red > 0.01, "the bottleneck is congested: {red}");
}

const HTB: &str = r#"[scenario]
duration = "1s"
[topology]
access = { rate = "1gbit" }
bottleneck = { rate = "1gbit" }
[policy.bottleneck.egress]
htb = { default = "20" }
[[policy.bottleneck.egress.class]]
id = "1"
rate = "10mbit"
ceil = "10mbit"
[[policy.bottleneck.egress.class]]
id = "20"
parent = "1"
rate = "4mbit"
ceil = "10mbit"
[[policy.bottleneck.egress.class]]
id = "30"
parent = "1"
rate = "6mbit"
ceil = "10mbit"
qdisc = { kind = "sfq", perturb = "10s" }
[[policy.bottleneck.egress.filter]]
match = { dst_port = 5201, protocol = "udp" }
class = "30"
[[traffic]]
kind = "ping"
"#;

/// (line, path, message) of the error `HTB` with `from` replaced by `to` gives.
fn tree_err(from: &str, to: &str) -> (usize, String, String) {
    assert!(HTB.contains(from), "{from}");
    let e = parse(&HTB.replacen(from, to, 1), "t.toml").expect_err("should fail");
    (e.line, e.path, e.message)
}

fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).expect("needle")]
        .matches('\n')
        .count()
        + 1
}

#[test]
fn a_valid_tree_parses_to_its_spec() {
    let sc = parse(HTB, "t.toml").unwrap();
    let Topology::Dumbbell(d) = &sc.config.topology else {
        panic!()
    };
    let Some(qoslab_sim::config::PolicySpec::Tree(t)) = &d.bottleneck_egress else {
        panic!("{:?}", d.bottleneck_egress)
    };
    assert_eq!(t.root.kind, "htb");
    assert_eq!(t.root.classes.len(), 3);
    assert_eq!(t.root.classes[1].parent.as_deref(), Some("1"));
    assert_eq!(t.root.filters[0].classifier, "dport 5201 proto udp");
    assert_eq!(t.root.classes[2].qdisc.as_ref().unwrap().kind, "sfq");
}

#[test]
fn tree_mistakes_point_at_their_line() {
    // A cycle in the parents.
    let text = HTB.replacen("id = \"1\"\n", "id = \"1\"\nparent = \"30\"\n", 1);
    let e = parse(&text, "t.toml").unwrap_err();
    assert!(e.message.contains("form a cycle"), "{e}");
    assert!(e.path.ends_with(".parent"), "{e}");
    // No default class.
    let (l, p, m) = tree_err("htb = { default = \"20\" }", "htb = { r2q = 10 }");
    assert_eq!((l, p.as_str()), (7, "policy.bottleneck.egress.default"));
    assert!(
        m.contains("needs default") && m.contains("direct queue"),
        "{m}"
    );
    // A default or filter naming no class, or an inner class.
    let (l, _, m) = tree_err("default = \"20\"", "default = \"21\"");
    assert_eq!(l, 7);
    assert!(m.contains("no class '21' (did you mean"), "{m}");
    let (l, p, m) = tree_err("class = \"30\"", "class = \"3\"");
    assert_eq!(l, line_of(HTB, "class = \"30\""));
    assert_eq!(p, "policy.bottleneck.egress.filter[0].class");
    assert!(m.contains("no class '3'"), "{m}");
    let (_, _, m) = tree_err("class = \"30\"", "class = \"1\"");
    assert!(m.contains("has child classes"), "{m}");
    // ceil below rate, child burst above the parent's.
    let (l, p, m) = tree_err(
        "rate = \"4mbit\"\nceil = \"10mbit\"",
        "rate = \"4mbit\"\nceil = \"3mbit\"",
    );
    assert_eq!(
        l,
        line_of(
            HTB,
            "ceil = \"10mbit\"\n[[policy.bottleneck.egress.class]]\nid = \"30\""
        )
    );
    assert_eq!(p, "policy.bottleneck.egress.class[1].ceil");
    assert!(m.contains("below rate"), "{m}");
    let (_, p, m) = tree_err("rate = \"6mbit\"", "rate = \"6mbit\"\nburst = \"20kb\"");
    assert_eq!(p, "policy.bottleneck.egress.class[2].burst");
    assert!(m.contains("above parent '1'"), "{m}");
    // Core parameter errors inside a class and its qdisc.
    let (l, p, m) = tree_err("rate = \"6mbit\"", "rate = \"6mbitt\"");
    assert_eq!(l, line_of(HTB, "rate = \"6mbit\""));
    assert_eq!(p, "policy.bottleneck.egress.class[2].rate");
    assert!(!m.is_empty());
    let (l, p, m) = tree_err("perturb = \"10s\"", "pertrub = \"10s\"");
    assert_eq!(l, line_of(HTB, "perturb"));
    assert!(p.ends_with("qdisc.pertrub"), "{p}");
    assert!(m.contains("did you mean 'perturb'"), "{m}");
    let (_, p, m) = tree_err("kind = \"sfq\"", "kind = \"sqf\"");
    assert!(p.ends_with("qdisc.kind"), "{p}");
    assert!(m.contains("did you mean 'sfq'"), "{m}");
    // Duplicate ids, unknown root kinds, mixed matches.
    let (_, p, m) = tree_err("id = \"30\"", "id = \"20\"");
    assert!(
        p.ends_with("class[2].id") && m.contains("used twice"),
        "{p}: {m}"
    );
    let (l, _, m) = tree_err("htb = {", "hbt = {");
    assert_eq!(l, 7);
    assert!(m.contains("did you mean 'htb'"), "{m}");
    let (_, _, m) = tree_err("protocol = \"udp\"", "dscp = \"ef\"");
    assert!(m.contains("either 5-tuple fields, or dscp"), "{m}");
}

#[test]
fn hfsc_curve_mistakes_point_at_their_key() {
    let text = include_str!("../../../scenarios/trees/linux-hfsc.toml");
    let bad = text.replacen(
        "sc = \"umax 1500b dmax 30ms rate 100kbit\"",
        "sc = \"umax 1500b rate 100kbit\"",
        1,
    );
    let e = parse(&bad, "h.toml").expect_err("umax without dmax");
    assert_eq!(e.line, line_of(&bad, "sc = \"umax 1500b rate"), "{e}");
    assert!(e.message.contains("dmax is zero"), "{e}");
    let bad = text.replacen(
        "ul = \"rate 1000kbit\"",
        "ul = \"rate 1000kbit\"\nrt = \"m2 1mbit\"",
        1,
    );
    let e = parse(&bad, "h.toml").expect_err("sc with rt");
    assert_eq!(e.line, line_of(&bad, "sc = \"rate 1000kbit\""), "{e}");
    assert!(e.message.contains("either sc or rt/ls"), "{e}");
}
