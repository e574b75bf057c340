//! Policy trees: the shipped tree scenarios parse and run, their results
//! hold what the sources and the models promise, and tree mistakes are
//! refused at their line.

use super::*;
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
