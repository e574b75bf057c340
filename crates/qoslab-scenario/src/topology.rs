//! `[topology]` (the dumbbell shorthand), `[[node]]` / `[[link]]` (explicit
//! topologies) and `[policy.LINK.DIRECTION]` (what a link direction does).
//!
//! Policies pass their meter/shaper parameters through as strings, exactly
//! as `qoslab meter` / `qoslab shape` take them; they are checked here by
//! building the conditioner with `qoslab-core`, and a core error on a
//! parameter is reported at that parameter's line.

use crate::reader::{Cx, Field, Result, Section};
use qoslab_core::meter::Policer;
use qoslab_core::params::{nearest, Params};
use qoslab_core::parse::Limit;
use qoslab_core::shaper::AnyShaper;
use qoslab_core::Duration;
use qoslab_policy::spec::{FifoLimit, FifoSpec, MeterSpec, PolicySpec, QdiscSpec, ShaperSpec};
use qoslab_policy::stab::{parse_linklayer, LinkLayer, SizeTable};
use qoslab_sim::config::{
    DumbbellSpec, ExplicitTopology, LinkParams, LinkSpec, NodeSpec, TimerSpec, Topology,
};

/// Linux's default device queue: `pfifo_fast` with txqueuelen 1000.
pub const DEFAULT_QUEUE_LIMIT_PACKETS: u32 = 1000;

/// The named link directions a `[policy.LINK]` table may hold.
const EXPLICIT_DIRECTIONS: [&str; 4] = ["egress", "reverse", "ingress", "reverse_ingress"];

/// `rate`, `delay`, `delay_reverse`, `loss`, `queue_limit` of one link
/// (both directions; `delay_reverse` is the b → a delay when it differs).
fn link_params(cx: &mut Cx<'_>, t: &mut Section<'_>) -> Result<LinkParams> {
    let rate = t
        .require(cx, "rate", "the link rate, e.g. rate = \"100mbit\"")?
        .rate(cx)?;
    if rate.bps() == 0 {
        return Err(cx.err(
            t.at,
            &format!("{}.rate", t.path),
            "the rate must be above 0",
        ));
    }
    let delay = match t.get(cx, "delay") {
        Some(f) => f.time(cx)?,
        None => Duration::ZERO,
    };
    let loss_ppm = match t.get(cx, "loss") {
        Some(f) => loss_ppm(cx, &f)?,
        None => 0,
    };
    let queue_limit_packets = match t.get(cx, "queue_limit") {
        Some(f) => match f.limit(cx)? {
            Limit::Packets(n) if n > 0 => n,
            Limit::Packets(_) => return Err(f.error(cx, "the queue limit must be at least 1")),
            Limit::Bytes(_) => {
                return Err(f.error(
                    cx,
                    "a link's device queue counts packets (\"1000p\"); for a byte limit \
                     put a fifo policy on the link direction",
                ))
            }
        },
        None => DEFAULT_QUEUE_LIMIT_PACKETS,
    };
    let delay_reverse = match t.get(cx, "delay_reverse") {
        Some(f) => Some(f.time(cx)?),
        None => None,
    };
    Ok(LinkParams {
        rate,
        delay,
        delay_reverse,
        loss_ppm,
        queue_limit_packets,
    })
}

/// A loss probability: a fraction (`0.01`), a percentage (`"1%"`) or parts
/// per million (`"100ppm"`), turned into integer ppm.
fn loss_ppm(cx: &Cx<'_>, f: &Field<'_>) -> Result<u32> {
    const WHAT: &str = "a loss probability such as 0.01, \"1%\" or \"100ppm\"";
    let bad = || f.error(cx, format!("expected {WHAT}"));
    let ppm: u64 = if f.is_str() {
        let s = f.str(cx, WHAT)?.trim();
        if let Some(p) = s.strip_suffix('%') {
            decimal_scaled(p.trim(), 10_000).ok_or_else(bad)?
        } else if let Some(p) = s.strip_suffix("ppm") {
            p.trim().parse::<u64>().map_err(|_| bad())?
        } else {
            decimal_scaled(s, 1_000_000).ok_or_else(bad)?
        }
    } else if let Ok(s) = f.scalar_string(cx) {
        if f.is_bool() {
            return Err(bad());
        }
        decimal_scaled(&s, 1_000_000).ok_or_else(bad)?
    } else {
        return Err(bad());
    };
    if ppm > 1_000_000 {
        return Err(f.error(cx, "a loss probability cannot exceed 1 (100%)"));
    }
    Ok(ppm as u32)
}

/// `s` (a plain non-negative decimal) × `scale`, rounded to the nearest
/// integer; `None` if `s` is not such a decimal.
fn decimal_scaled(s: &str, scale: u64) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty()
        || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
        || int.len() + frac.len() > 18
    {
        return None;
    }
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    let den = 10u128.pow(frac.len() as u32);
    let v = (digits * scale as u128 + den / 2) / den;
    u64::try_from(v).ok()
}

/// `"highres"`, `"highres:50us"`, `"hz:250"`, or `{ hz = 250 }` /
/// `{ slack = "50us" }` / `{ lateness = "exponential", mean = "20us",
/// max = "2ms" }`.
fn timer(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<TimerSpec> {
    const WHAT: &str =
        "\"highres\", \"highres:SLACK\" (e.g. \"highres:50us\") or \"hz:N\" (e.g. \"hz:250\")";
    if f.is_table() {
        let mut t = f.table(cx)?;
        let hz = t.get(cx, "hz");
        let slack = t.get(cx, "slack");
        let lateness = t.get(cx, "lateness");
        let mean = t.get(cx, "mean");
        let max = t.get(cx, "max");
        t.finish(
            cx,
            "in a timer table (give hz, slack, or lateness = \"exponential\" with mean and max)",
        )?;
        if let Some(l) = lateness {
            if let Some(other) = hz.as_ref().or(slack.as_ref()) {
                return Err(other.error(cx, "give lateness alone, without hz or slack"));
            }
            l.choice(cx, &["exponential"])?;
            let need = |v: &Option<Field<'_>>, key: &str| {
                match v {
                Some(v) => v.time(cx),
                None => Err(l.error(
                    cx,
                    format!("lateness = \"exponential\" needs {key} = \"TIME\" (e.g. mean = \"20us\", max = \"2ms\")"),
                )),
            }
            };
            let (m, x) = (need(&mean, "mean")?, need(&max, "max")?);
            if m == Duration::ZERO || x < m {
                let at = max.as_ref().expect("max was read");
                return Err(at.error(cx, "need 0 < mean <= max"));
            }
            return Ok(TimerSpec::HighResLate { mean: m, max: x });
        }
        if let Some(v) = mean.as_ref().or(max.as_ref()) {
            return Err(v.error(cx, "mean and max go with lateness = \"exponential\""));
        }
        return match (hz, slack) {
            (Some(h), None) => Ok(TimerSpec::Hz(h.count(cx)?)),
            (None, Some(s)) => Ok(TimerSpec::HighRes { slack: s.time(cx)? }),
            (None, None) => Err(f.error(cx, "a timer table needs hz = N or slack = \"TIME\"")),
            (Some(_), Some(s)) => Err(s.error(cx, "give either hz or slack, not both")),
        };
    }
    let s = f.str(cx, WHAT)?.trim().to_ascii_lowercase();
    let (name, arg) = s.split_once(':').unwrap_or((&s, ""));
    match (name, arg) {
        ("highres", "") => Ok(TimerSpec::HighRes {
            slack: Duration::ZERO,
        }),
        ("highres", slack) => qoslab_core::parse::parse_time(slack)
            .map(|slack| TimerSpec::HighRes { slack })
            .map_err(|e| f.error(cx, e.to_string())),
        ("hz", n) => match n.parse::<u32>() {
            Ok(n) if n > 0 => Ok(TimerSpec::Hz(n)),
            _ => Err(f.error(
                cx,
                format!("expected hz:N with N a positive integer, got '{s}'"),
            )),
        },
        _ => Err(f.error(cx, format!("expected {WHAT}, got '{s}'"))),
    }
}

/// What `[topology]` and `[[node]]`/`[[link]]` describe, with the names of
/// links and nodes for checking policies and traffic.
pub(crate) struct ParsedTopology {
    pub topology: Topology,
    pub node_names: Vec<String>,
    /// (link name, a, b, where the link was declared).
    pub links: Vec<(String, String, String, usize)>,
}

/// The dumbbell shorthand.
pub(crate) fn dumbbell(cx: &mut Cx<'_>, mut t: Section<'_>) -> Result<ParsedTopology> {
    let mut senders = 1;
    let mut receivers = 1;
    for (key, n) in [("senders", &mut senders), ("receivers", &mut receivers)] {
        if let Some(f) = t.get(cx, key) {
            *n = f.count(cx)?;
            if *n as usize > qoslab_sim::MAX_NODES - 3 {
                return Err(f.error(
                    cx,
                    format!(
                        "{n} {key}: with the other hosts and the 2 routers more than the {} \
                         nodes one run can hold in memory (at most {})",
                        qoslab_sim::MAX_NODES,
                        qoslab_sim::MAX_NODES - 3
                    ),
                ));
            }
        }
    }
    let access = t.require(
        cx,
        "access",
        "the hosts' links, e.g. access = { rate = \"1gbit\", delay = \"1ms\" }",
    )?;
    let mut access_t = access.table(cx)?;
    let access = link_params(cx, &mut access_t)?;
    // Unknown keys here were once ignored (found by the scenario reference's
    // test): refuse them as everywhere else.
    access_t.finish(
        cx,
        "in a link (rate, delay, delay_reverse, loss, queue_limit)",
    )?;
    let bottleneck = t.require(
        cx,
        "bottleneck",
        "the r1—r2 link, e.g. bottleneck = { rate = \"1gbit\", delay = \"0.5ms\" }",
    )?;
    let mut bottleneck_t = bottleneck.table(cx)?;
    let bottleneck = link_params(cx, &mut bottleneck_t)?;
    bottleneck_t.finish(
        cx,
        "in a link (rate, delay, delay_reverse, loss, queue_limit)",
    )?;
    let mut sender_delays = Vec::new();
    if let Some(f) = t.get(cx, "sender_delays") {
        let items = f.array(cx)?;
        if items.len() > senders as usize {
            return Err(f.error(
                cx,
                format!("{} delays given for {senders} senders", items.len()),
            ));
        }
        for item in items {
            sender_delays.push(item.time(cx)?);
        }
    }
    let timer = match t.get(cx, "timer") {
        Some(f) => timer(cx, &f)?,
        None => TimerSpec::default(),
    };
    t.finish(cx, "in [topology] (the dumbbell shorthand)")?;
    let mut node_names: Vec<String> = (0..senders).map(|i| format!("s{i}")).collect();
    node_names.extend(["r1".to_string(), "r2".to_string()]);
    node_names.extend((0..receivers).map(|i| format!("d{i}")));
    Ok(ParsedTopology {
        topology: Topology::Dumbbell(DumbbellSpec {
            senders,
            receivers,
            access,
            sender_delays,
            bottleneck,
            bottleneck_egress: None,
            bottleneck_reverse_egress: None,
            ingress_police: None,
            timer,
        }),
        node_names,
        links: Vec::new(),
    })
}

/// `[[node]]` and `[[link]]` lists.
pub(crate) fn explicit(
    cx: &mut Cx<'_>,
    nodes: Option<Field<'_>>,
    links: Option<Field<'_>>,
    at: usize,
) -> Result<ParsedTopology> {
    let (Some(nodes_f), Some(links_f)) = (nodes, links) else {
        return Err(cx.err(
            at,
            "topology",
            "missing topology: give a [topology] table (the dumbbell shorthand) \
             or [[node]] and [[link]] tables",
        ));
    };
    let mut nodes = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for mut t in nodes_f.tables(cx)? {
        let name_f = t.require(cx, "name", "the node's name, e.g. name = \"r1\"")?;
        let name = name_f.string(cx)?;
        if name.is_empty() {
            return Err(name_f.error(cx, "a node name cannot be empty"));
        }
        if names.contains(&name) {
            return Err(name_f.error(cx, format!("node '{name}' is declared twice")));
        }
        let timer = match t.get(cx, "timer") {
            Some(f) => timer(cx, &f)?,
            None => TimerSpec::default(),
        };
        let routes_f = t.get(cx, "routes");
        t.finish(cx, "in a [[node]]")?;
        names.push(name.clone());
        nodes.push((
            NodeSpec {
                name,
                timer,
                routes: Vec::new(),
            },
            routes_f,
        ));
    }
    // Routes may name nodes declared later, so they are read second.
    let mut out_nodes = Vec::new();
    for (mut node, routes_f) in nodes {
        if let Some(f) = routes_f {
            let mut rt = f.table(cx)?;
            for (dest, hop) in rt.entries(cx) {
                check_node(cx, &hop, &names, &dest, hop.key_at)?;
                let next = hop.string(cx)?;
                check_node(cx, &hop, &names, &next, hop.at)?;
                node.routes.push((dest, next));
            }
        }
        out_nodes.push(node);
    }
    let mut out_links = Vec::new();
    let mut link_names: Vec<(String, String, String, usize)> = Vec::new();
    for mut t in links_f.tables(cx)? {
        let a_f = t.require(cx, "a", "one end's node name, e.g. a = \"r1\"")?;
        let a = a_f.string(cx)?;
        check_node(cx, &a_f, &names, &a, a_f.at)?;
        let b_f = t.require(cx, "b", "the other end's node name, e.g. b = \"r2\"")?;
        let b = b_f.string(cx)?;
        check_node(cx, &b_f, &names, &b, b_f.at)?;
        if a == b {
            return Err(b_f.error(
                cx,
                format!("a link joins two different nodes, not '{a}' to itself"),
            ));
        }
        let name = match t.get(cx, "name") {
            Some(f) => {
                let n = f.string(cx)?;
                if link_names.iter().any(|(l, ..)| *l == n) {
                    return Err(f.error(cx, format!("link '{n}' is declared twice")));
                }
                n
            }
            None => format!("{a}-{b}"),
        };
        let params = link_params(cx, &mut t)?;
        let at = t.at;
        t.finish(cx, "in a [[link]]")?;
        link_names.push((name, a.clone(), b.clone(), at));
        out_links.push(LinkSpec {
            a,
            b,
            params,
            egress_ab: None,
            egress_ba: None,
            ingress_police_ab: None,
            ingress_police_ba: None,
        });
    }
    if out_links.is_empty() {
        return Err(links_f.error(cx, "an explicit topology needs at least one [[link]]"));
    }
    Ok(ParsedTopology {
        topology: Topology::Explicit(ExplicitTopology {
            nodes: out_nodes,
            links: out_links,
        }),
        node_names: names,
        links: link_names,
    })
}

/// Checks that `name` (read from field `f`, at `at`) is a declared node.
pub(crate) fn check_node(
    cx: &Cx<'_>,
    f: &Field<'_>,
    names: &[String],
    name: &str,
    at: usize,
) -> Result<()> {
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let hint = nearest(name, &refs)
        .map(|n| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default();
    Err(cx.err(
        at,
        &f.path,
        format!("no node named '{name}'{hint}; nodes: {}", refs.join(", ")),
    ))
}

/// Reads `[policy]` into the topology.
pub(crate) fn policies(cx: &mut Cx<'_>, f: Field<'_>, topo: &mut ParsedTopology) -> Result<()> {
    let mut t = f.table(cx)?;
    match &mut topo.topology {
        Topology::Dumbbell(d) => {
            if let Some(bf) = t.get(cx, "bottleneck") {
                let mut b = bf.table(cx)?;
                if let Some(p) = b.get(cx, "egress") {
                    d.bottleneck_egress = Some(policy(cx, &p)?);
                }
                if let Some(p) = b.get(cx, "reverse") {
                    d.bottleneck_reverse_egress = Some(policy(cx, &p)?);
                }
                b.finish(
                    cx,
                    "in [policy.bottleneck] (egress = r1 toward r2, reverse = r2 toward r1)",
                )?;
            }
            if let Some(af) = t.get(cx, "access") {
                let mut a = af.table(cx)?;
                if let Some(p) = a.get(cx, "ingress") {
                    d.ingress_police = Some(ingress(cx, &p)?);
                }
                a.finish(
                    cx,
                    "in [policy.access] (ingress = a policer where the access links enter r1)",
                )?;
            }
            t.finish(
                cx,
                "in [policy]: the dumbbell's links are 'bottleneck' and 'access'",
            )
        }
        Topology::Explicit(e) => {
            for (name, lf) in t.entries(cx) {
                let Some(i) = topo.links.iter().position(|(n, ..)| *n == name) else {
                    let names: Vec<&str> = topo.links.iter().map(|(n, ..)| n.as_str()).collect();
                    let hint = nearest(&name, &names)
                        .map(|n| format!(" (did you mean '{n}'?)"))
                        .unwrap_or_default();
                    return Err(cx.err(
                        lf.key_at,
                        &lf.path,
                        format!(
                            "no link named '{name}'{hint}; links: {} (a link's name is its \
                             `name`, or \"A-B\" from its ends)",
                            names.join(", ")
                        ),
                    ));
                };
                let link = &mut e.links[i];
                let mut lt = lf.table(cx)?;
                let dirs = EXPLICIT_DIRECTIONS;
                if let Some(p) = lt.get(cx, dirs[0]) {
                    link.egress_ab = Some(policy(cx, &p)?);
                }
                if let Some(p) = lt.get(cx, dirs[1]) {
                    link.egress_ba = Some(policy(cx, &p)?);
                }
                if let Some(p) = lt.get(cx, dirs[2]) {
                    link.ingress_police_ab = Some(ingress(cx, &p)?);
                }
                if let Some(p) = lt.get(cx, dirs[3]) {
                    link.ingress_police_ba = Some(ingress(cx, &p)?);
                }
                lt.finish(
                    cx,
                    "in a link's policy (egress = a toward b, reverse = b toward a, \
                     ingress = policer where a's packets enter b, reverse_ingress = the other way)",
                )?;
            }
            Ok(())
        }
    }
}

/// An ingress policy: only `police` makes sense where nothing queues.
fn ingress(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<MeterSpec> {
    match crate::embedded::policy(cx, f, qoslab_import::Direction::Ingress)? {
        Some(PolicySpec::Police(m)) => return Ok(m),
        Some(_) => return Err(f.error(cx, "an ingress policy is a policer")),
        None => {}
    }
    let mut t = f.table(cx)?;
    let police = t.require(
        cx,
        "police",
        "an ingress policy is a policer: police = { cir = ... }",
    )?;
    t.finish(
        cx,
        "in an ingress policy (only police: nothing queues on ingress)",
    )?;
    meter(cx, &police)
}

/// A link direction's policy: the flat forms (`police`, `shape`, `fifo`
/// alone) or a policy tree (a root qdisc, its `class`es, `filter`s and
/// child `qdisc`, optionally behind `police`).
pub(crate) fn policy(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<PolicySpec> {
    if let Some(spec) = crate::embedded::policy(cx, f, qoslab_import::Direction::Egress)? {
        return Ok(spec);
    }
    let mut t = f.table(cx)?;
    let stab = match t.get(cx, "stab") {
        Some(s) => Some(size_table(cx, &s)?),
        None => None,
    };
    let spec = policy_unsized(cx, f, t)?;
    Ok(match stab {
        Some(stab) => PolicySpec::Sized {
            stab,
            inner: Box::new(spec),
        },
        None => spec,
    })
}

/// `stab = { overhead = 14, linklayer = "ethernet" | "atm" | "adsl", mpu = "64B",
/// mtu = "2047B", tsize = 512 }` (tc-stab(8); see `qoslab_policy::stab`).
pub(crate) fn size_table(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<SizeTable> {
    let mut t = f.table(cx)?;
    let overhead = match t.get(cx, "overhead") {
        Some(o) => o.i32(cx)?,
        None => 0,
    };
    let linklayer = match t.get(cx, "linklayer") {
        Some(l) => {
            let name = l.choice(cx, &["ethernet", "atm", "adsl"])?;
            parse_linklayer(name).expect("a tc link layer")
        }
        None => LinkLayer::Ethernet,
    };
    let small = |cx: &mut Cx<'_>, t: &mut Section<'_>, key: &'static str| match t.get(cx, key) {
        Some(v) => match v.size(cx)? {
            n @ 0..=65_535 => Ok(Some(n as u32)),
            _ => Err(v.error(
                cx,
                format!("{key} must be at most 65535 bytes (tc's 16 bits)"),
            )),
        },
        None => Ok(None),
    };
    let mpu = small(cx, &mut t, "mpu")?.unwrap_or(0);
    let mtu = small(cx, &mut t, "mtu")?;
    let tsize_f = t.get(cx, "tsize");
    let tsize = match &tsize_f {
        Some(v) => Some(v.u32(cx)?),
        None => None,
    };
    let at = t.at;
    let path = t.path.clone();
    t.finish(cx, "in a stab table")?;
    SizeTable::new(overhead, linklayer, mpu, mtu, tsize).map_err(|e| {
        let key = e.path.trim_start_matches("stab.");
        match (&tsize_f, key) {
            (Some(v), "tsize") => v.error(cx, e.message),
            _ => cx.err(at, &format!("{path}.{key}"), e.message),
        }
    })
}

fn policy_unsized(cx: &mut Cx<'_>, f: &Field<'_>, mut t: Section<'_>) -> Result<PolicySpec> {
    let police = t.get(cx, "police");
    let shape = t.get(cx, "shape");
    let fifo = t.get(cx, "fifo");
    let classes = t.get(cx, "class");
    let filters = t.get(cx, "filter");
    let child = t.get(cx, "qdisc");
    // Every other key must name a root qdisc kind (htb = { … }).
    let mut kinds: Vec<(String, Field<'_>)> = Vec::new();
    let mut unknown = None;
    for (key, v) in t.entries(cx) {
        if [
            "police", "shape", "fifo", "class", "filter", "qdisc", "stab",
        ]
        .contains(&key.as_str())
        {
            continue;
        }
        if crate::tree::is_root_kind(&key) {
            kinds.push((key, v));
        } else if unknown.is_none() {
            unknown = Some((key, v));
        }
    }
    if let Some((key, v)) = unknown {
        let mut known = vec![
            "police", "shape", "fifo", "class", "filter", "qdisc", "stab",
        ];
        known.extend(crate::tree::root_kinds());
        let hint = nearest(&key.to_ascii_lowercase(), &known)
            .map(|k| format!(" (did you mean '{k}'?)"))
            .unwrap_or_default();
        return Err(cx.err(
            v.key_at,
            &v.path,
            format!(
                "unknown key '{key}' in a policy{hint}; a policy is police, shape or fifo, \
                 or a root qdisc with class, filter and qdisc tables, each optionally with \
                 stab; valid: {}",
                known.join(", ")
            ),
        ));
    }
    let mut roots: Vec<(String, &Field<'_>)> = Vec::new();
    if let Some(s) = &shape {
        roots.push(("shape".into(), s));
    }
    if let Some(q) = &fifo {
        roots.push(("fifo".into(), q));
    }
    for (k, v) in &kinds {
        roots.push((k.clone(), v));
    }
    if roots.len() > 1 {
        let second = roots
            .iter()
            .map(|r| r.1)
            .max_by_key(|f| f.key_at)
            .expect("two");
        return Err(cx.err(
            second.key_at,
            &second.path,
            format!(
                "a policy has one root: {} are given (nest the others as a class's or a \
                 shaper's qdisc)",
                roots
                    .iter()
                    .map(|r| r.0.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        ));
    }
    let flat = classes.is_none() && filters.is_none() && child.is_none();
    let base = f.path.clone();
    match (police, roots.pop()) {
        (Some(p), None) if flat => Ok(PolicySpec::Police(meter(cx, &p)?)),
        (None, Some((k, s))) if flat && k == "shape" => Ok(PolicySpec::Shape(shaper(cx, s)?)),
        (None, Some((k, q))) if flat && k == "fifo" => Ok(PolicySpec::Fifo(fifo_spec(cx, q)?)),
        (_, None) => Err(f.error(
            cx,
            "a policy needs police = { ... }, shape = { ... }, fifo = { ... } or a root qdisc \
             such as htb = { default = \"20\" } (with [[...class]] tables)",
        )),
        (police, Some((k, q))) => {
            let police = police.map(|p| meter(cx, &p)).transpose()?;
            let root = if k == "fifo" {
                let spec = fifo_spec(cx, q)?;
                let (kind, limit) = match (spec.limit, spec.head_drop) {
                    (FifoLimit::Packets(n), false) => ("pfifo", n.to_string()),
                    (FifoLimit::Packets(n), true) => ("pfifo_head_drop", n.to_string()),
                    (FifoLimit::Bytes(b), _) => ("bfifo", b.to_string()),
                };
                let mut r = QdiscSpec::leaf(kind, &[("limit", limit.as_str())]);
                if classes.is_some() || filters.is_some() || child.is_some() {
                    return Err(q.error(cx, "a fifo has no classes and no child qdisc"));
                }
                r.kind = kind.into();
                r
            } else {
                crate::tree::root(cx, &k, q, &base, classes, filters, child)?
            };
            let spec = crate::tree::tree(police, root);
            crate::tree::check(cx, &spec, &base, f.at)?;
            Ok(PolicySpec::Tree(spec))
        }
    }
}

/// A conditioner parameter: key, value string, value offset, key path.
type Param = (String, String, usize, String);

/// The conditioner's `kind` (and where it is) and the rest of its keys as
/// string parameters.
fn kind_and_params(
    cx: &mut Cx<'_>,
    f: &Field<'_>,
    default_kind: &str,
) -> Result<(String, Vec<Param>, Option<usize>)> {
    let mut t = f.table(cx)?;
    let mut kind = default_kind.to_string();
    let mut kind_at = None;
    let mut params = Vec::new();
    for (key, v) in t.entries(cx) {
        if key == "kind" {
            kind = v.string(cx)?.to_ascii_lowercase();
            kind_at = Some(v.at);
        } else {
            params.push((key, v.scalar_string(cx)?, v.at, v.path.clone()));
        }
    }
    Ok((kind, params, kind_at))
}

/// Locates a `qoslab-core` `ConfigError` at the key it names.
fn core_error(
    cx: &Cx<'_>,
    f: &Field<'_>,
    params: &[Param],
    kind_at: Option<usize>,
    e: qoslab_core::ConfigError,
) -> crate::ScenarioError {
    let norm = |k: &str| k.trim().to_ascii_lowercase().replace('_', "-");
    if let Some((_, _, at, path)) = params.iter().find(|(k, ..)| norm(k) == e.param) {
        return cx.err(*at, path, e.message);
    }
    if e.param == "kind" {
        return cx.err(
            kind_at.unwrap_or(f.at),
            &format!("{}.kind", f.path),
            e.message,
        );
    }
    cx.err(f.at, &f.path, format!("{}: {}", e.param, e.message))
}

/// Reads a conditioner table and checks it by building it with `build`
/// (`qoslab-core`'s own validation); returns its kind and string params.
fn conditioner(
    cx: &mut Cx<'_>,
    f: &Field<'_>,
    default_kind: &str,
    build: fn(&str, Params) -> core::result::Result<(), qoslab_core::ConfigError>,
) -> Result<(String, Vec<(String, String)>)> {
    let (kind, params, kind_at) = kind_and_params(cx, f, default_kind)?;
    let pairs = params.iter().map(|(k, v, ..)| (k.as_str(), v.as_str()));
    build(&kind, Params::new(&kind, pairs)).map_err(|e| core_error(cx, f, &params, kind_at, e))?;
    Ok((kind, params.into_iter().map(|(k, v, ..)| (k, v)).collect()))
}

pub(crate) fn meter(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<MeterSpec> {
    let (kind, params) = conditioner(cx, f, "police", |k, p| Policer::from_params(k, p).map(drop))?;
    Ok(MeterSpec { kind, params })
}

fn shaper(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<ShaperSpec> {
    let (kind, params) = conditioner(cx, f, "shape", |k, p| {
        AnyShaper::from_params(k, p).map(drop)
    })?;
    Ok(ShaperSpec { kind, params })
}

fn fifo_spec(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<FifoSpec> {
    let mut t = f.table(cx)?;
    let lf = t.require(
        cx,
        "limit",
        "the queue limit, e.g. limit = \"200p\" or \"64kb\"",
    )?;
    let limit = match lf.limit(cx)? {
        Limit::Packets(0) | Limit::Bytes(0) => {
            return Err(lf.error(cx, "a FIFO limit must be above 0"))
        }
        Limit::Packets(n) => FifoLimit::Packets(n),
        Limit::Bytes(n) => FifoLimit::Bytes(n),
    };
    let head_drop = match t.get(cx, "head_drop") {
        Some(h) => h.bool(cx)?,
        None => false,
    };
    t.finish(cx, "in fifo (limit, head_drop)")?;
    Ok(FifoSpec { limit, head_drop })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_scale_exactly_and_round_to_nearest() {
        assert_eq!(decimal_scaled("0.01", 1_000_000), Some(10_000));
        assert_eq!(decimal_scaled("1", 10_000), Some(10_000));
        assert_eq!(decimal_scaled("0.5", 10_000), Some(5_000));
        assert_eq!(decimal_scaled("0.0000005", 1_000_000), Some(1));
        assert_eq!(decimal_scaled(".25", 100), Some(25));
        assert_eq!(decimal_scaled("", 100), None);
        assert_eq!(decimal_scaled("-1", 100), None);
        assert_eq!(decimal_scaled("1e-3", 100), None);
    }
}
