//! Warnings for policy-tree filters that match no flow of the scenario
//! (issue 14): `match = { dst_port = 5001 }` is valid, but every flow of a
//! scenario uses iperf3's port 5201, so such a filter silently sends
//! nothing to its class. A warning names the filter's line and the match
//! fields no packet of any flow has.
//!
//! The packets considered are the ones the simulator builds
//! (`qoslab_sim::sim::Pkt::core`): node `n` (in network order) is
//! 10.0.x.y with x.y = n + 1; a TCP or UDP flow with id `k` sends from
//! port 10000 + k to port 5201 (TCP's ACKs back from 5201 to 10000 + k);
//! pings are ICMP with ports 0; every packet of a flow carries its
//! `dscp`. Colour, flow-hash and `any` filters are not checked (colours are
//! set at run time by policers).

use crate::error::ScenarioError;
use qoslab_core::classify::{Classifier, TupleMatch};
use qoslab_core::packet::FiveTuple;
use qoslab_policy::spec::{FilterSpec, PolicySpec, QdiscSpec};
use qoslab_sim::config::{Topology, TrafficSpec};
use qoslab_sim::net::Net;
use qoslab_sim::SimConfig;

/// iperf3's service port, as the simulator uses it for every TCP/UDP flow.
pub const SERVICE_PORT: u16 = 5201;
/// A flow with id `k` uses source port `FIRST_CLIENT_PORT + k` (mod 2^16).
pub const FIRST_CLIENT_PORT: u16 = 10_000;

/// One packet shape a flow puts on the wire (both directions).
struct Shape {
    tuple: FiveTuple,
    dscp: u8,
}

/// Every filter of every policy tree with the file path of its table.
fn filters(config: &SimConfig, link_names: &[String]) -> Vec<(String, FilterSpec)> {
    let mut policies: Vec<(String, &PolicySpec)> = Vec::new();
    match &config.topology {
        Topology::Dumbbell(d) => {
            if let Some(p) = &d.bottleneck_egress {
                policies.push(("policy.bottleneck.egress".into(), p));
            }
            if let Some(p) = &d.bottleneck_reverse_egress {
                policies.push(("policy.bottleneck.reverse".into(), p));
            }
        }
        Topology::Explicit(e) => {
            for (i, l) in e.links.iter().enumerate() {
                let name = link_names.get(i).cloned().unwrap_or_default();
                if let Some(p) = &l.egress_ab {
                    policies.push((format!("policy.{name}.egress"), p));
                }
                if let Some(p) = &l.egress_ba {
                    policies.push((format!("policy.{name}.reverse"), p));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (base, p) in policies {
        let mut p = p;
        while let PolicySpec::Sized { inner, .. } = p {
            p = inner.as_ref();
        }
        if let PolicySpec::Tree(t) = p {
            walk(&t.root, &base, &mut out);
        }
    }
    out
}

/// In the reader's order: classes (and their qdiscs), filters, child qdisc.
fn walk(q: &QdiscSpec, base: &str, out: &mut Vec<(String, FilterSpec)>) {
    for (i, c) in q.classes.iter().enumerate() {
        if let Some(cq) = &c.qdisc {
            walk(cq, &format!("{base}.class[{i}].qdisc"), out);
        }
    }
    for (i, f) in q.filters.iter().enumerate() {
        out.push((format!("{base}.filter[{i}]"), f.clone()));
    }
    if let Some(child) = &q.child {
        walk(child, &format!("{base}.qdisc"), out);
    }
}

fn endpoints_dscp(t: &TrafficSpec) -> u8 {
    match t {
        TrafficSpec::TcpBulk { endpoints, .. }
        | TrafficSpec::TcpFetch { endpoints, .. }
        | TrafficSpec::UdpCbr { endpoints, .. }
        | TrafficSpec::OnOff { endpoints, .. }
        | TrafficSpec::Ping { endpoints, .. } => endpoints.dscp,
    }
}

/// The packet shapes of every flow (`None` if the config does not build;
/// the run reports that error itself).
fn shapes(config: &SimConfig) -> Option<Vec<Shape>> {
    let net = Net::build(&config.topology).ok()?;
    let flows = qoslab_sim::plan_flows(config).ok()?;
    let addr = |name: &str| net.node_index(name).map(|n| 0x0a00_0000 | (n + 1));
    let mut out = Vec::new();
    for f in &flows {
        let (src, dst) = (addr(&f.from)?, addr(&f.to)?);
        let dscp = config
            .traffic
            .get(f.traffic_index as usize)
            .map_or(0, endpoints_dscp);
        let client = FIRST_CLIENT_PORT.wrapping_add(f.id as u16);
        let tuple = |src_addr, dst_addr, src_port, dst_port, protocol| FiveTuple {
            src_addr,
            dst_addr,
            src_port,
            dst_port,
            protocol,
        };
        match f.protocol {
            "udp" => out.push(Shape {
                tuple: tuple(src, dst, client, SERVICE_PORT, 17),
                dscp,
            }),
            "tcp" => {
                out.push(Shape {
                    tuple: tuple(src, dst, client, SERVICE_PORT, 6),
                    dscp,
                });
                out.push(Shape {
                    tuple: tuple(dst, src, SERVICE_PORT, client, 6),
                    dscp,
                });
            }
            _ => {
                out.push(Shape {
                    tuple: tuple(src, dst, 0, 0, 1),
                    dscp,
                });
                out.push(Shape {
                    tuple: tuple(dst, src, 0, 0, 1),
                    dscp,
                });
            }
        }
    }
    Some(out)
}

/// The fields of `m` that no packet in `shapes` has on its own.
fn dead_fields(m: &TupleMatch, shapes: &[Shape]) -> Vec<&'static str> {
    let mut dead = Vec::new();
    let any = |f: &dyn Fn(&FiveTuple) -> bool| shapes.iter().any(|s| f(&s.tuple));
    if m.src_addr.1 != 0 && !any(&|t| t.src_addr & m.src_addr.1 == m.src_addr.0) {
        dead.push("src");
    }
    if m.dst_addr.1 != 0 && !any(&|t| t.dst_addr & m.dst_addr.1 == m.dst_addr.0) {
        dead.push("dst");
    }
    if m.src_port.1 != 0 && !any(&|t| t.src_port & m.src_port.1 == m.src_port.0) {
        dead.push("src_port");
    }
    if m.dst_port.1 != 0 && !any(&|t| t.dst_port & m.dst_port.1 == m.dst_port.0) {
        dead.push("dst_port");
    }
    if m.protocol.1 != 0 && !any(&|t| t.protocol & m.protocol.1 == m.protocol.0) {
        dead.push("protocol");
    }
    dead
}

const WHERE_FLOWS_ARE: &str = "flows send from port 10000 + flow id to port 5201 \
     (ACKs the other way; pings are ICMP), node n is 10.0.x.y with x.y = n + 1 in node order";

/// One warning per filter that no packet of any flow matches, located at
/// the filter's table (`locate` maps a key path to a line and column).
pub(crate) fn unmatched(
    config: &SimConfig,
    link_names: &[String],
    locate: impl Fn(&str) -> (usize, usize),
    file: &str,
) -> Vec<ScenarioError> {
    let list = filters(config, link_names);
    if list.is_empty() {
        return Vec::new();
    }
    let Some(shapes) = shapes(config) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (path, f) in list {
        let Ok(c) = Classifier::parse(&f.classifier) else {
            continue;
        };
        let message = match &c {
            Classifier::Tuple(m) if !shapes.iter().any(|s| m.matches(&s.tuple)) => {
                let dead = dead_fields(m, &shapes);
                let which = if dead.is_empty() {
                    "no packet has all its fields together".to_string()
                } else {
                    format!("no packet has this {}", dead.join(", "))
                };
                format!(
                    "filter '{}' (class {}) matches no flow of the scenario: {which}; {WHERE_FLOWS_ARE}",
                    f.classifier, f.class
                )
            }
            Classifier::Dscp(set) if !shapes.iter().any(|s| set.contains(s.dscp)) => {
                let mut used: Vec<u8> = shapes.iter().map(|s| s.dscp).collect();
                used.sort_unstable();
                used.dedup();
                let used: Vec<String> = used.iter().map(u8::to_string).collect();
                format!(
                    "filter '{}' (class {}) matches no flow of the scenario: no packet has this \
                     dscp (the flows use dscp {})",
                    f.classifier,
                    f.class,
                    used.join(", ")
                )
            }
            _ => continue,
        };
        // At the `match` key (the line to fix), else the filter table.
        let (line, column) = locate(&format!("{path}.match"));
        out.push(ScenarioError {
            file: file.to_string(),
            line,
            column,
            path,
            message,
        });
    }
    out
}
