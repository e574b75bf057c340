//! # qoslab-scenario — scenario files for qoslab-sim
//!
//! Parses a TOML scenario into a [`qoslab_sim::SimConfig`]. Every error
//! names the file, line and column, the key path, what was expected and,
//! for a misspelt key or value, the nearest valid one
//! ([`ScenarioError`]). Unknown tables and keys are rejected, never ignored.
//!
//! Units are written as engineers write them and parsed by
//! [`qoslab_core::parse`] (the tc tables): `rate = "20mbit"`,
//! `bc = "625000B"`, `delay = "2.5ms"`, `limit = "200p"`. Times need their
//! unit (tc would read a bare number as µs).
//!
//! **The reference of every key** (type, unit, default, example) is
//! `docs/scenarios.md`, with a JSON Schema for editors in
//! `python/qoslab/data/scenario.schema.json`; both are generated from
//! `keys.toml` beside this crate's sources and from this parser, and
//! `tests/test_scenario_reference.py` checks the key table against the
//! reader both ways. In short:
//!
//! ```toml
//! [scenario]
//! duration = "20s"                 # required
//! source = "Title, Author, URL, date"  # the publication the set-up comes from
//!
//! [topology]                       # the dumbbell s0.. — r1 — r2 — d0..
//! senders = 4
//! access = { rate = "1gbit", delay = "1ms" }
//! bottleneck = { rate = "1gbit", delay = "0.5ms" }
//!
//! [policy.bottleneck.egress]       # r1 toward r2; `reverse` = r2 toward r1
//! police = { cir = "20mbit", bc = "625000B" }
//!
//! [[traffic]]
//! kind = "tcp-bulk"                # tcp-bulk | tcp-fetch | udp | onoff | ping
//! flows = 4
//! profile = "windows10"            # and any TCP override
//!
//! [record]
//! series = ["goodput", "rtt", "queue"]
//! ```
//!
//! ## Policy trees (tc hierarchies, MQC policy-maps)
//!
//! A policy table may instead hold a **root qdisc** named by its kind —
//! `htb`, `hfsc`, `prio`, `drr` (classful), `sfq`, `fq_codel`, `fair_queue`,
//! `pfifo`, `bfifo`, `pfifo_head_drop`, `red`, `rio`, `wred`, `codel`,
//! `pie` — or `shape = { kind = ... }`, with `[[…class]]` and
//! `[[…filter]]` tables, an optional `qdisc` (the queue a shaper drains)
//! and an optional `police` in front of everything. Line by line it is
//! `tc qdisc add`, `tc class add`, `tc filter add`:
//!
//! ```toml
//! [policy.bottleneck.egress]
//! htb = { default = "20", r2q = 10 }   # tc qdisc add … root handle 1: htb default 20
//!
//! [[policy.bottleneck.egress.class]]   # tc class add … parent 1: classid 1:1 htb …
//! id = "1"
//! rate = "10mbit"
//! ceil = "10mbit"
//!
//! [[policy.bottleneck.egress.class]]   # … parent 1:1 classid 1:10 …
//! id = "10"
//! parent = "1"
//! rate = "3mbit"
//! ceil = "10mbit"
//! prio = 0
//! qdisc = { kind = "sfq", perturb = "10s" }   # tc qdisc add … parent 1:10 sfq perturb 10
//! police = { cir = "2mbit", exceed = "drop" } # MQC child police in front of the class
//!
//! [[policy.bottleneck.egress.class]]
//! id = "20"
//! parent = "1"
//! rate = "7mbit"
//! ceil = "10mbit"
//! # no qdisc: pfifo limit 1000, as Linux
//!
//! [[policy.bottleneck.egress.filter]]  # tc filter add … u32 match … flowid 1:10
//! match = { dst_port = 5201, protocol = "udp" }   # or match = "dport 5201 proto udp"
//! class = "10"                         # also: { dscp = "ef" }, { color = "red" }, { any = true }
//! # every flow's service port is iperf3's 5201; a filter matching no flow
//! # is a warning (`Scenario::warnings`, module `filters`)
//!
//! # Cisco: shape average 20000000 + fair-queue
//! # [policy.bottleneck.egress]
//! # shape = { kind = "shape", cir = "20mbit", profile = "ios-xe" }
//! # qdisc = { kind = "fair-queue", queue_limit = 200 }
//! ```
//!
//! Class keys: `id` (required), `parent` (HTB, HFSC), `qdisc` (`"sfq"` or a
//! table with `kind`, its keys and its own `class`/`filter`/`qdisc`),
//! `police`, and the kind's class keys (HTB `rate`, `ceil`, `burst`,
//! `cburst`, `prio`, `quantum`, `mtu`; HFSC `sc`, `rt`, `ls`, `ul`, each
//! tc's curve text: `sc = "m1 400kbit d 30ms m2 100kbit"`, `ls = "rate
//! 2mbit"`, `rt = "umax 1500b dmax 30ms rate 100kbit"`, with `hfsc = {
//! default = "20" }` on the qdisc (without it unclassified packets are
//! dropped, as Linux); DRR `quantum`; PRIO classes are bands
//! `"1"`..`"bands"`). Refused with the line of the culprit: cycles
//! in `parent`, duplicate ids, filters or `default` naming no class or an
//! inner class, `htb`/`drr` without `default` (write `default = "direct"`
//! / `"drop"` for Linux's behaviour), `ceil` < `rate`, a child's `burst` or
//! `cburst` above its parent's, classes or filters on a classless qdisc,
//! a filter mixing 5-tuple, DSCP and colour, and every parameter
//! `qoslab-core` refuses. See `qoslab_policy::tree` for the model of each
//! kind (fair-queue, shaper + child). Results get one row per class
//! (`PolicyResult::classes`).
//!
//! Explicit topologies use `[[node]]` (`name`, `timer`, `routes`) and
//! `[[link]]` (`a`, `b`, `name`, `rate`, `delay`, `delay_reverse` (b → a),
//! `loss`, `queue_limit`)
//! tables instead of `[topology]`; their policies go in
//! `[policy.LINK.egress|reverse|ingress|reverse_ingress]`, where `LINK` is
//! the link's `name` or `"A-B"`.
//!
//! Conditioner parameters are passed through as strings and validated by
//! building the conditioner with `qoslab-core` (its own key checks and
//! messages), located back at the offending key. Errors the simulator finds
//! later ([`qoslab_sim::SimError::Config`]) are located with
//! [`Scenario::locate`].
//!
//! Modules: [`error`] (the error type, offsets → line:column), `reader` (a
//! strict span-keeping table reader), `topology` (topology and policies),
//! `traffic`.

mod embedded;
pub mod error;
mod filters;
mod policy_file;
mod reader;
mod topology;
mod traffic;
mod tree;

pub use error::{ScenarioError, DICT_FILE};
pub use policy_file::{parse_policy, BASE as POLICY_BASE};
pub use traffic::tcp_profile_defaults;

use qoslab_core::Duration;
use qoslab_sim::capture::CaptureSpec;
use qoslab_sim::config::RecordSpec;
use qoslab_sim::config::Topology;
use qoslab_sim::net::Net;
use qoslab_sim::{SimConfig, SimError};
use reader::{Cx, Field, Result, Section};

/// The record series names, in [`RecordSpec`] order.
pub const SERIES: [&str; 8] = [
    "goodput", "rtt", "cwnd", "queue", "tokens", "colors", "ping", "segments",
];

/// The top-level tables a scenario may have.
const TOP_LEVEL: [&str; 8] = [
    "scenario", "topology", "node", "link", "policy", "traffic", "record", "capture",
];

/// Default seed when `[scenario]` gives none.
pub const DEFAULT_SEED: u64 = 1;

/// A parsed scenario: what to run, plus what only people read.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub config: SimConfig,
    pub description: String,
    pub source: String,
    /// `[capture]`: pcap files to write (not part of the simulation).
    pub capture: CaptureTable,
    /// What is valid but probably not meant, located like errors: a policy
    /// filter that matches no packet of any flow (`filters`).
    pub warnings: Vec<ScenarioError>,
    file: String,
    /// Names of the explicit `[[link]]`s, by index (for [`Scenario::locate`]).
    link_names: Vec<String>,
    /// (key path, line, column) of every key read, for [`Scenario::locate`].
    located: Vec<(String, usize, usize)>,
}

/// What [`parse_doc`] found.
struct Parsed {
    capture: CaptureTable,
    config: SimConfig,
    description: String,
    source: String,
    link_names: Vec<String>,
}

/// Parses scenario `text`; `file` is only used in error messages.
pub fn parse(text: &str, file: &str) -> core::result::Result<Scenario, ScenarioError> {
    let mut cx = Cx::new(text, file);
    let parsed = parse_doc(&mut cx)?;
    let lines = error::LineIndex::new(text);
    let located = cx
        .located
        .iter()
        .map(|(p, at)| {
            let (l, c) = lines.line_col(text, *at);
            (p.clone(), l, c)
        })
        .collect::<Vec<(String, usize, usize)>>();
    let find = |path: &str| {
        let mut probe = path;
        loop {
            if let Some((_, l, c)) = located.iter().find(|(p, ..)| p == probe) {
                return (*l, *c);
            }
            match probe.rfind(['.', '[']) {
                Some(i) => probe = &probe[..i],
                None => return (1, 1),
            }
        }
    };
    let warnings = filters::unmatched(&parsed.config, &parsed.link_names, find, file);
    Ok(Scenario {
        warnings,
        config: parsed.config,
        description: parsed.description,
        source: parsed.source,
        capture: parsed.capture,
        file: file.to_string(),
        link_names: parsed.link_names,
        located,
    })
}

/// The policy directions of an explicit link, as `qoslab-sim` names them
/// (`links[k].egress_ab`) and as scenario files do (`policy.NAME.egress`).
const LINK_SIDES: [(&str, &str); 4] = [
    ("egress_ab", "egress"),
    ("egress_ba", "reverse"),
    ("ingress_police_ab", "ingress"),
    ("ingress_police_ba", "reverse_ingress"),
];

impl Scenario {
    /// Turns an error from [`qoslab_sim::run`] into a located one: a
    /// `Config` error whose path (`traffic[1].to`, `links[0].egress_ab.cir`,
    /// `bottleneck.egress`) names a key of this file points at that key, or
    /// at the nearest enclosing table that was in the file; otherwise at
    /// line 1. The message keeps the engine's path. `Cancelled` gives `None`.
    pub fn locate(&self, e: &SimError) -> Option<ScenarioError> {
        let SimError::Config { path, message } = e else {
            return None;
        };
        let ours = self.scenario_path(path);
        let mut probe = ours.as_str();
        let (line, column) = loop {
            if let Some((_, l, c)) = self
                .located
                .iter()
                .find(|(p, ..)| p == probe || without_policy_kind(p) == probe)
            {
                break (*l, *c);
            }
            match probe.rfind(['.', '[']) {
                Some(i) => probe = &probe[..i],
                None => break (1, 1),
            }
        };
        Some(ScenarioError {
            file: self.file.clone(),
            line,
            column,
            path: path.clone(),
            message: message.clone(),
        })
    }

    /// A `qoslab-sim` config path in this file's key names.
    fn scenario_path(&self, path: &str) -> String {
        const PREFIXES: [(&str, &str); 6] = [
            ("duration", "scenario.duration"),
            ("bottleneck.egress", "policy.bottleneck.egress"),
            ("bottleneck.reverse_egress", "policy.bottleneck.reverse"),
            ("ingress_police", "policy.access.ingress"),
            ("links[", "link["),
            ("nodes[", "node["),
        ];
        let mut p = path.replace(".queue_limit_packets", ".queue_limit");
        for (theirs, ours) in PREFIXES {
            if let Some(rest) = p.strip_prefix(theirs) {
                if rest.is_empty() || rest.starts_with(['.', '[']) || theirs.ends_with('[') {
                    p = format!("{ours}{rest}");
                    break;
                }
            }
        }
        // link[k].egress_ab... → policy.NAME.egress...; link[k].params → link[k]
        if let Some(rest) = p.strip_prefix("link[") {
            if let Some((k, tail)) = rest.split_once("].") {
                let name = k.parse::<usize>().ok().and_then(|k| self.link_names.get(k));
                for (theirs, ours) in LINK_SIDES {
                    if let (Some(name), Some(after)) = (name, tail.strip_prefix(theirs)) {
                        return format!("policy.{name}.{ours}{after}");
                    }
                }
                if let Some(after) = tail.strip_prefix("params") {
                    return format!("link[{k}]{after}");
                }
            }
        }
        p
    }
}

/// `policy.L.D.police.cir` → `policy.L.D.cir` (the engine's paths do not
/// name the conditioner family).
fn without_policy_kind(p: &str) -> String {
    if !p.starts_with("policy.") {
        return p.to_string();
    }
    let parts: Vec<&str> = p.split('.').collect();
    if parts.len() > 4 && ["police", "shape", "fifo"].contains(&parts[3]) {
        let mut v = parts.clone();
        v.remove(3);
        return v.join(".");
    }
    p.to_string()
}

fn parse_doc(cx: &mut Cx<'_>) -> Result<Parsed> {
    let doc = toml_edit::Document::parse(cx.src.text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        cx.err(at, "", format!("invalid TOML: {}", e.message().trim_end()))
    })?;
    let root: &toml_edit::Table = &doc;
    let mut top = Section::new("", root as &dyn toml_edit::TableLike, 0);

    // [scenario]
    let sf = top.require(
        cx,
        "scenario",
        "a [scenario] table with at least duration = \"20s\"",
    )?;
    let mut s = sf.table(cx)?;
    let name = match s.get(cx, "name") {
        Some(f) => f.string(cx)?,
        None => default_name(cx.src.file),
    };
    let df = s.require(
        cx,
        "duration",
        "how long to simulate, e.g. duration = \"20s\"",
    )?;
    let duration = df.time(cx)?;
    if duration == Duration::ZERO {
        return Err(df.error(cx, "the duration must be above 0"));
    }
    if duration.as_ns() >= qoslab_core::time::TIME_HORIZON_NS {
        // Every time in the run stays below 2^63 ns (issue 15).
        return Err(df.error(
            cx,
            "the duration must be below 2^62 ns (about 146 years), qoslab's time horizon",
        ));
    }
    let seed = match s.get(cx, "seed") {
        Some(f) => f.u64(cx)?,
        None => DEFAULT_SEED,
    };
    let description = opt_string(cx, &mut s, "description")?;
    let source = opt_string(cx, &mut s, "source")?;
    s.finish(cx, "in [scenario]")?;

    // Topology: the dumbbell shorthand or explicit nodes and links.
    let topo_f = top.get(cx, "topology");
    let nodes_f = top.get(cx, "node");
    let links_f = top.get(cx, "link");
    let mut topo = match topo_f {
        Some(tf) => {
            if let Some(extra) = nodes_f.as_ref().or(links_f.as_ref()) {
                return Err(cx.err(
                    extra.key_at,
                    &extra.path,
                    "give either [topology] (the dumbbell shorthand) or [[node]] and \
                     [[link]] tables, not both",
                ));
            }
            topology::dumbbell(cx, tf.table(cx)?)?
        }
        None => topology::explicit(cx, nodes_f, links_f, top.at)?,
    };
    if let Some(pf) = top.get(cx, "policy") {
        topology::policies(cx, pf, &mut topo)?;
    }

    // [[traffic]]
    let tf = top.require(
        cx,
        "traffic",
        "at least one [[traffic]] table, e.g. kind = \"tcp-bulk\"",
    )?;
    let nodes = traffic::Nodes {
        names: &topo.node_names,
        duration,
    };
    let tables = tf.tables(cx)?;
    if tables.is_empty() {
        return Err(tf.error(cx, "at least one [[traffic]] table is needed"));
    }
    let mut traffic_specs = Vec::with_capacity(tables.len());
    for t in tables {
        traffic_specs.push(traffic::traffic(cx, t, &nodes)?);
    }

    let record = match top.get(cx, "record") {
        Some(rf) => record(cx, &rf)?,
        None => RecordSpec::default(),
    };
    let capture = match top.get(cx, "capture") {
        Some(cf) => capture_table(cx, &cf, &topo.topology)?,
        None => CaptureTable::default(),
    };
    reject_unknown_tables(cx, top)?;

    Ok(Parsed {
        capture,
        config: SimConfig {
            name,
            duration,
            seed,
            topology: topo.topology,
            traffic: traffic_specs,
            record,
        },
        description,
        source,
        link_names: topo.links.into_iter().map(|(n, ..)| n).collect(),
    })
}

fn reject_unknown_tables(cx: &mut Cx<'_>, top: Section<'_>) -> Result<()> {
    top.finish(
        cx,
        &format!(
            "at the top level: a scenario has the tables {}",
            TOP_LEVEL.join(", ")
        ),
    )
}

fn default_name(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty() && !s.starts_with('<'))
        .unwrap_or("scenario")
        .to_string()
}

fn opt_string(cx: &mut Cx<'_>, t: &mut Section<'_>, key: &'static str) -> Result<String> {
    match t.get(cx, key) {
        Some(f) => f.string(cx),
        None => Ok(String::new()),
    }
}

/// `[capture]`: which link directions the run writes to pcap files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureTable {
    /// `LINK[:ingress|egress][=FILE]`, as `qoslab run --capture` takes them.
    pub links: Vec<CaptureSpec>,
    /// Bytes kept of each frame; 0 = headers only (the default).
    pub snaplen: u32,
}

/// The largest snap length (libpcap's maximum for Ethernet).
pub const MAX_SNAPLEN: u32 = 262_144;

fn capture_table(cx: &mut Cx<'_>, f: &Field<'_>, topo: &Topology) -> Result<CaptureTable> {
    let mut t = f.table(cx)?;
    let mut c = CaptureTable::default();
    // Built only to check the link names; a topology error is reported
    // by the run itself, at its own key.
    let net = Net::build(topo).ok();
    if let Some(lf) = t.get(cx, "links") {
        for item in lf.array(cx)? {
            let text = item.string(cx)?;
            let spec = CaptureSpec::parse(&text).map_err(|m| item.error(cx, m))?;
            if let Some(net) = &net {
                spec.taps(net).map_err(|m| item.error(cx, m))?;
            }
            if c.links
                .iter()
                .any(|s| s.link == spec.link && s.point == spec.point)
            {
                return Err(item.error(cx, format!("'{}' is listed twice", spec.link)));
            }
            c.links.push(spec);
        }
    }
    if let Some(sf) = t.get(cx, "snaplen") {
        c.snaplen = sf.u32(cx)?;
        if c.snaplen > MAX_SNAPLEN {
            return Err(sf.error(
                cx,
                format!(
                    "snaplen {} is above {MAX_SNAPLEN}; 0 keeps headers only",
                    c.snaplen
                ),
            ));
        }
    }
    t.finish(cx, "in [capture] (links, snaplen)")?;
    Ok(c)
}

/// `[record] rtt_percentiles`: how the flow summaries' p50 / p95 are kept.
const RTT_PERCENTILES: [&str; 2] = ["histogram", "exact"];

fn record(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<RecordSpec> {
    let mut t = f.table(cx)?;
    let mut r = RecordSpec::default();
    if let Some(i) = t.get(cx, "interval") {
        r.interval = i.time(cx)?;
        if r.interval < Duration::from_us(1) {
            return Err(i.error(cx, "the record interval must be at least 1us"));
        }
    }
    if let Some(sf) = t.get(cx, "series") {
        let mut on = [false; SERIES.len()];
        for item in sf.array(cx)? {
            let name = item.choice(cx, &SERIES)?;
            let i = SERIES.iter().position(|s| *s == name).expect("a series");
            if on[i] {
                return Err(item.error(cx, format!("'{name}' is listed twice")));
            }
            on[i] = true;
        }
        [
            r.goodput, r.rtt, r.cwnd, r.queue, r.tokens, r.colors, r.ping, r.segments,
        ] = on;
    }
    if let Some(pf) = t.get(cx, "rtt_percentiles") {
        r.exact_rtt_percentiles = pf.choice(cx, &RTT_PERCENTILES)? == "exact";
    }
    t.finish(cx, "in [record] (interval, series, rtt_percentiles)")?;
    Ok(r)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_tree;

#[cfg(test)]
mod tests_fetch;

#[cfg(test)]
mod tests_embedded;

#[cfg(test)]
mod tests_profiles;
