//! Nodes, duplex links and static routes, built from [`Topology`].
//!
//! A duplex link `k` between `a` and `b` becomes two link directions
//! (interfaces): `2k` is `a → b`, `2k + 1` is `b → a`. Each direction has
//! its own transmitter, queue and policies (see [`crate::link`]).
//!
//! Routing is static: for every destination the engine needs, a BFS over the
//! reversed graph gives hop distances; a node's next hop is its first
//! interface, in link order, whose far end is one hop closer (shortest path
//! in hops, ties broken by link order). `NodeSpec::routes` entries override
//! that per destination.

use crate::config::{
    DumbbellSpec, ExplicitTopology, LinkParams, MeterSpec, PolicySpec, TimerSpec, Topology,
};
use crate::SimError;

pub const NO_ROUTE: u32 = u32::MAX;

/// The most nodes a network may have: each one's links hold queues and
/// timers (100 000 dumbbell hosts already take about 1 GB).
pub const MAX_NODES: usize = 100_000;

pub fn cfg_err(path: impl Into<String>, message: impl Into<String>) -> SimError {
    SimError::Config {
        path: path.into(),
        message: message.into(),
    }
}

/// One node (host or router).
#[derive(Clone, Debug)]
pub struct NodeDef {
    pub name: String,
    pub timer: TimerSpec,
    /// (destination node, next-hop node) overrides.
    pub routes: Vec<(u32, u32)>,
}

/// A policy to build, with the config path its errors are reported under.
#[derive(Clone, Debug)]
pub struct EgressPlan {
    pub spec: PolicySpec,
    pub path: String,
}

/// An ingress policer to build; several directions may share one (the
/// dumbbell's `ingress_police` meters everything entering r1 from the
/// senders' side as one aggregate).
#[derive(Clone, Debug)]
pub struct IngressPlan {
    pub spec: MeterSpec,
    pub path: String,
    pub name: String,
}

/// One direction of a duplex link.
#[derive(Clone, Debug)]
pub struct DirDef {
    pub from: u32,
    pub to: u32,
    pub params: LinkParams,
    pub egress: Option<EgressPlan>,
    /// Index into [`Net::ingress`], metering packets arriving at `to`.
    pub ingress: Option<usize>,
    /// Report the default device queue as a policy (the dumbbell bottleneck).
    pub report_device_queue: bool,
    /// Config path of the link (for rate/delay errors).
    pub path: String,
}

/// The static network.
#[derive(Clone, Debug)]
pub struct Net {
    pub nodes: Vec<NodeDef>,
    pub dirs: Vec<DirDef>,
    pub ingress: Vec<IngressPlan>,
    /// Per node: outgoing directions in link order.
    pub out: Vec<Vec<u32>>,
}

impl Net {
    pub fn node_index(&self, name: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as u32)
    }

    pub fn dir_name(&self, d: u32) -> String {
        let d = &self.dirs[d as usize];
        format!(
            "{}->{}",
            self.nodes[d.from as usize].name, self.nodes[d.to as usize].name
        )
    }

    /// Builds and validates the network of `topo`.
    pub fn build(topo: &Topology) -> Result<Net, SimError> {
        let net = match topo {
            Topology::Dumbbell(d) => dumbbell(d)?,
            Topology::Explicit(e) => explicit(e)?,
        };
        for d in &net.dirs {
            if d.params.rate.bps() == 0 {
                return Err(cfg_err(format!("{}.rate", d.path), "link rate must be > 0"));
            }
            if d.params.loss_ppm > 1_000_000 {
                return Err(cfg_err(
                    format!("{}.loss_ppm", d.path),
                    format!("{} ppm is above 1000000 (100 %)", d.params.loss_ppm),
                ));
            }
        }
        if net.nodes.len() > MAX_NODES {
            return Err(cfg_err(
                "topology",
                format!(
                    "{} nodes is more than the {MAX_NODES} one run can hold in memory",
                    net.nodes.len()
                ),
            ));
        }
        let mut net = net;
        net.out = vec![Vec::new(); net.nodes.len()];
        for (i, d) in net.dirs.iter().enumerate() {
            net.out[d.from as usize].push(i as u32);
        }
        Ok(net)
    }
}

fn node(name: String) -> NodeDef {
    NodeDef {
        name,
        timer: TimerSpec::default(),
        routes: Vec::new(),
    }
}

fn push_link(
    net: &mut Net,
    a: u32,
    b: u32,
    params: &LinkParams,
    egress_ab: Option<EgressPlan>,
    egress_ba: Option<EgressPlan>,
    path: &str,
) {
    for (reverse, from, to, egress) in [(false, a, b, egress_ab), (true, b, a, egress_ba)] {
        let mut params = params.clone();
        if reverse {
            params.delay = params.delay_reverse.unwrap_or(params.delay);
        }
        net.dirs.push(DirDef {
            from,
            to,
            params,
            egress,
            ingress: None,
            report_device_queue: false,
            path: path.to_string(),
        });
    }
}

/// `s0..` — r1 — r2 — `d0..`, exactly as [`DumbbellSpec`] documents.
fn dumbbell(d: &DumbbellSpec) -> Result<Net, SimError> {
    if d.senders == 0 {
        return Err(cfg_err("topology.senders", "need at least one sender"));
    }
    if d.receivers == 0 {
        return Err(cfg_err("topology.receivers", "need at least one receiver"));
    }
    let hosts = d.senders as usize + d.receivers as usize;
    if hosts + 2 > MAX_NODES {
        return Err(cfg_err(
            "topology.senders",
            format!(
                "{hosts} hosts and the 2 routers are {} nodes, more than the {MAX_NODES} one \
                 run can hold in memory",
                hosts + 2
            ),
        ));
    }
    if d.sender_delays.len() > d.senders as usize {
        return Err(cfg_err(
            "topology.sender_delays",
            format!(
                "{} delays given for {} senders",
                d.sender_delays.len(),
                d.senders
            ),
        ));
    }
    let mut net = Net {
        nodes: Vec::new(),
        dirs: Vec::new(),
        ingress: Vec::new(),
        out: Vec::new(),
    };
    let s = d.senders;
    for i in 0..s {
        net.nodes.push(node(format!("s{i}")));
    }
    let r1 = s;
    let r2 = s + 1;
    if let TimerSpec::Hz(0) = d.timer {
        return Err(cfg_err("topology.timer", "hz must be > 0"));
    }
    for name in ["r1", "r2"] {
        net.nodes.push(NodeDef {
            timer: d.timer,
            ..node(name.into())
        });
    }
    for j in 0..d.receivers {
        net.nodes.push(node(format!("d{j}")));
    }
    if let Some(m) = &d.ingress_police {
        net.ingress.push(IngressPlan {
            spec: m.clone(),
            path: "ingress_police".into(),
            name: "r1 ingress".into(),
        });
    }
    for i in 0..s {
        let mut p = d.access.clone();
        if let Some(delay) = d.sender_delays.get(i as usize) {
            p.delay = *delay;
        }
        push_link(&mut net, i, r1, &p, None, None, "topology.access");
        if d.ingress_police.is_some() {
            let k = net.dirs.len() - 2; // s_i -> r1
            net.dirs[k].ingress = Some(0);
        }
    }
    push_link(
        &mut net,
        r1,
        r2,
        &d.bottleneck,
        d.bottleneck_egress.as_ref().map(|p| EgressPlan {
            spec: p.clone(),
            path: "bottleneck.egress".into(),
        }),
        d.bottleneck_reverse_egress.as_ref().map(|p| EgressPlan {
            spec: p.clone(),
            path: "bottleneck.reverse_egress".into(),
        }),
        "topology.bottleneck",
    );
    let fwd = net.dirs.len() - 2;
    net.dirs[fwd].report_device_queue = true;
    for j in 0..d.receivers {
        push_link(
            &mut net,
            r2,
            r2 + 1 + j,
            &d.access,
            None,
            None,
            "topology.access",
        );
    }
    Ok(net)
}

fn explicit(e: &ExplicitTopology) -> Result<Net, SimError> {
    let mut net = Net {
        nodes: Vec::new(),
        dirs: Vec::new(),
        ingress: Vec::new(),
        out: Vec::new(),
    };
    for (i, n) in e.nodes.iter().enumerate() {
        if n.name.trim().is_empty() {
            return Err(cfg_err(format!("nodes[{i}].name"), "empty node name"));
        }
        if net.nodes.iter().any(|m| m.name == n.name) {
            return Err(cfg_err(
                format!("nodes[{i}].name"),
                format!("duplicate node name '{}'", n.name),
            ));
        }
        if let TimerSpec::Hz(0) = n.timer {
            return Err(cfg_err(format!("nodes[{i}].timer"), "hz must be > 0"));
        }
        net.nodes.push(NodeDef {
            name: n.name.clone(),
            timer: n.timer,
            routes: Vec::new(),
        });
    }
    let find = |name: &str, path: String, net: &Net| -> Result<u32, SimError> {
        net.node_index(name).ok_or_else(|| {
            cfg_err(
                path,
                format!("unknown node '{name}'; nodes: {}", names(net)),
            )
        })
    };
    for (k, l) in e.links.iter().enumerate() {
        let a = find(&l.a, format!("links[{k}].a"), &net)?;
        let b = find(&l.b, format!("links[{k}].b"), &net)?;
        if a == b {
            return Err(cfg_err(
                format!("links[{k}].b"),
                format!("a link from '{}' to itself", l.a),
            ));
        }
        let plan = |p: &Option<PolicySpec>, side: &str| {
            p.as_ref().map(|spec| EgressPlan {
                spec: spec.clone(),
                path: format!("links[{k}].{side}"),
            })
        };
        push_link(
            &mut net,
            a,
            b,
            &l.params,
            plan(&l.egress_ab, "egress_ab"),
            plan(&l.egress_ba, "egress_ba"),
            &format!("links[{k}].params"),
        );
        let base = net.dirs.len() - 2;
        for (off, m, side, at, from) in [
            (0, &l.ingress_police_ab, "ingress_police_ab", &l.b, &l.a),
            (1, &l.ingress_police_ba, "ingress_police_ba", &l.a, &l.b),
        ] {
            if let Some(m) = m {
                net.ingress.push(IngressPlan {
                    spec: m.clone(),
                    path: format!("links[{k}].{side}"),
                    name: format!("{at} ingress from {from}"),
                });
                net.dirs[base + off].ingress = Some(net.ingress.len() - 1);
            }
        }
    }
    for (i, n) in e.nodes.iter().enumerate() {
        for (r, (dst, nh)) in n.routes.iter().enumerate() {
            let d = find(dst, format!("nodes[{i}].routes[{r}].destination"), &net)?;
            let h = find(nh, format!("nodes[{i}].routes[{r}].next_hop"), &net)?;
            let linked = net.dirs.iter().any(|x| x.from == i as u32 && x.to == h);
            if !linked {
                return Err(cfg_err(
                    format!("nodes[{i}].routes[{r}].next_hop"),
                    format!("'{nh}' is not a neighbour of '{}'", n.name),
                ));
            }
            net.nodes[i].routes.push((d, h));
        }
    }
    Ok(net)
}

fn names(net: &Net) -> String {
    let mut v: Vec<&str> = net.nodes.iter().map(|n| n.name.as_str()).collect();
    if v.len() > 12 {
        v.truncate(12);
        v.push("…");
    }
    v.join(", ")
}

/// Next-hop tables for a set of destinations.
#[derive(Clone, Debug)]
pub struct Routes {
    /// Node → compact destination index (or [`NO_ROUTE`]).
    dst_index: Vec<u32>,
    n_dst: usize,
    /// `table[node * n_dst + di]` = outgoing direction, or [`NO_ROUTE`].
    table: Vec<u32>,
}

impl Routes {
    /// Routes toward every node in `dsts`.
    pub fn compute(net: &Net, dsts: &[u32]) -> Routes {
        let n = net.nodes.len();
        let mut dst_index = vec![NO_ROUTE; n];
        let mut list: Vec<u32> = Vec::new();
        for &d in dsts {
            if dst_index[d as usize] == NO_ROUTE {
                dst_index[d as usize] = list.len() as u32;
                list.push(d);
            }
        }
        let n_dst = list.len();
        let mut table = vec![NO_ROUTE; n * n_dst];
        // Reverse adjacency: for each node, the directions arriving at it.
        let mut into: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, d) in net.dirs.iter().enumerate() {
            into[d.to as usize].push(i as u32);
        }
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        for (di, &d) in list.iter().enumerate() {
            dist.fill(u32::MAX);
            dist[d as usize] = 0;
            queue.clear();
            queue.push_back(d);
            while let Some(x) = queue.pop_front() {
                for &k in &into[x as usize] {
                    let y = net.dirs[k as usize].from as usize;
                    if dist[y] == u32::MAX {
                        dist[y] = dist[x as usize] + 1;
                        queue.push_back(y as u32);
                    }
                }
            }
            for s in 0..n {
                if s as u32 == d || dist[s] == u32::MAX {
                    continue;
                }
                let hop = net.out[s]
                    .iter()
                    .copied()
                    .find(|&k| dist[net.dirs[k as usize].to as usize] == dist[s] - 1);
                table[s * n_dst + di] = hop.unwrap_or(NO_ROUTE);
            }
            for (s, node) in net.nodes.iter().enumerate() {
                for &(rd, nh) in &node.routes {
                    if rd == d {
                        let k = net.out[s]
                            .iter()
                            .copied()
                            .find(|&k| net.dirs[k as usize].to == nh)
                            .expect("validated: next hop is a neighbour");
                        table[s * n_dst + di] = k;
                    }
                }
            }
        }
        Routes {
            dst_index,
            n_dst,
            table,
        }
    }

    /// The direction `node` sends a packet for `dst` on.
    #[inline]
    pub fn next(&self, node: u32, dst: u32) -> u32 {
        let di = self.dst_index[dst as usize];
        if di == NO_ROUTE {
            return NO_ROUTE;
        }
        self.table[node as usize * self.n_dst + di as usize]
    }

    /// The hops from `src` to `dst`, or why there is no path.
    pub fn path(&self, net: &Net, src: u32, dst: u32) -> Result<Vec<u32>, String> {
        let mut at = src;
        let mut hops = Vec::new();
        while at != dst {
            let k = self.next(at, dst);
            if k == NO_ROUTE {
                return Err(format!(
                    "no route from '{}' to '{}' (stuck at '{}')",
                    net.nodes[src as usize].name,
                    net.nodes[dst as usize].name,
                    net.nodes[at as usize].name
                ));
            }
            hops.push(k);
            if hops.len() > net.nodes.len() {
                return Err(format!(
                    "routing loop from '{}' to '{}' (check the routes overrides)",
                    net.nodes[src as usize].name, net.nodes[dst as usize].name
                ));
            }
            at = net.dirs[k as usize].to;
        }
        Ok(hops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LinkSpec, NodeSpec};
    use crate::testutil::nodes;
    use qoslab_core::{Duration, Rate};

    fn lp() -> LinkParams {
        crate::testutil::lp(1_000_000, Duration::from_ms(1))
    }

    fn link(a: &str, b: &str) -> LinkSpec {
        crate::testutil::link(a, b, lp())
    }

    #[test]
    fn shortest_path_ties_go_to_the_first_link_and_overrides_win() {
        // a - b - d and a - c - d: both two hops; link a-b comes first.
        let mut topo = ExplicitTopology {
            nodes: nodes(&["a", "b", "c", "d"]),
            links: vec![
                link("a", "b"),
                link("a", "c"),
                link("b", "d"),
                link("c", "d"),
            ],
        };
        let net = Net::build(&Topology::Explicit(topo.clone())).unwrap();
        let r = Routes::compute(&net, &[3]);
        let p = r.path(&net, 0, 3).unwrap();
        let names: Vec<String> = p.iter().map(|&k| net.dir_name(k)).collect();
        assert_eq!(names, ["a->b", "b->d"]);
        topo.nodes[0].routes = vec![("d".into(), "c".into())];
        let net = Net::build(&Topology::Explicit(topo)).unwrap();
        let r = Routes::compute(&net, &[3]);
        let names: Vec<String> = r
            .path(&net, 0, 3)
            .unwrap()
            .iter()
            .map(|&k| net.dir_name(k))
            .collect();
        assert_eq!(names, ["a->c", "c->d"]);
    }

    #[test]
    fn bad_topologies_are_config_errors_with_paths() {
        let mut t = ExplicitTopology {
            nodes: nodes(&["a", "a"]),
            links: vec![],
        };
        let e = Net::build(&Topology::Explicit(t.clone())).unwrap_err();
        assert!(
            matches!(e, SimError::Config { ref path, .. } if path == "nodes[1].name"),
            "{e}"
        );
        t.nodes = nodes(&["a", "b"]);
        t.links = vec![link("a", "zz")];
        let e = Net::build(&Topology::Explicit(t.clone())).unwrap_err();
        assert!(
            e.to_string().starts_with("links[0].b: unknown node 'zz'"),
            "{e}"
        );
        t.links = vec![link("a", "b")];
        t.links[0].params.rate = Rate::from_bps(0);
        let e = Net::build(&Topology::Explicit(t.clone())).unwrap_err();
        assert!(e.to_string().starts_with("links[0].params.rate"), "{e}");
        t.links[0].params.rate = Rate::from_bps(1);
        t.nodes.push(NodeSpec {
            name: "c".into(),
            timer: TimerSpec::default(),
            routes: vec![("b".into(), "c".into())],
        });
        let e = Net::build(&Topology::Explicit(t.clone())).unwrap_err();
        assert!(e.to_string().contains("not a neighbour"), "{e}");
        // unreachable
        t.nodes[2].routes.clear();
        let net = Net::build(&Topology::Explicit(t)).unwrap();
        let r = Routes::compute(&net, &[2]);
        assert!(r.path(&net, 0, 2).unwrap_err().contains("no route"));
    }

    #[test]
    fn dumbbell_names_and_order() {
        let d = DumbbellSpec {
            senders: 2,
            receivers: 1,
            access: lp(),
            sender_delays: vec![Duration::from_ms(7)],
            bottleneck: lp(),
            bottleneck_egress: None,
            bottleneck_reverse_egress: None,
            ingress_police: None,
            timer: TimerSpec::default(),
        };
        let net = Net::build(&Topology::Dumbbell(d)).unwrap();
        let names: Vec<&str> = net.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["s0", "s1", "r1", "r2", "d0"]);
        assert_eq!(net.dirs[0].params.delay, Duration::from_ms(7));
        assert_eq!(net.dirs[2].params.delay, Duration::from_ms(1));
        assert_eq!(net.dir_name(4), "r1->r2");
        assert!(net.dirs[4].report_device_queue);
        let r = Routes::compute(&net, &[4, 1]);
        assert_eq!(r.path(&net, 1, 4).unwrap(), [2, 4, 6]);
        assert_eq!(r.path(&net, 4, 1).unwrap(), [7, 5, 3]);
    }

    #[test]
    fn delay_reverse_is_the_b_to_a_direction_only() {
        let mut bottleneck = lp();
        bottleneck.delay = Duration::from_ms(10);
        bottleneck.delay_reverse = Some(Duration::from_ms(40));
        let d = DumbbellSpec {
            senders: 1,
            receivers: 1,
            access: lp(),
            sender_delays: vec![],
            bottleneck,
            bottleneck_egress: None,
            bottleneck_reverse_egress: None,
            ingress_police: None,
            timer: TimerSpec::default(),
        };
        let net = Net::build(&Topology::Dumbbell(d)).unwrap();
        assert_eq!(net.dir_name(2), "r1->r2");
        assert_eq!(net.dirs[2].params.delay, Duration::from_ms(10));
        assert_eq!(net.dirs[3].params.delay, Duration::from_ms(40));
        // The access links keep one delay both ways.
        assert_eq!(net.dirs[0].params.delay, net.dirs[1].params.delay);
    }
}
