//! Cisco IOS / IOS XE Modular QoS CLI in: `class-map`, `policy-map`,
//! access lists and `interface … service-policy`, into policy specs.
//!
//! Mapping (what has no faithful mapping is an error naming it):
//! - `police` → qoslab `police` (Cisco single-rate, Bc = CIR/32 default,
//!   violate-action makes it three-colour) or, with `pir`, `trtcm`
//!   (RFC 2698, Cisco's two-rate policer; Bc = CIR/32 and Be = PIR/32 bytes
//!   written out, IOS's defaults);
//! - `shape average` → `shape` with the platform profile (`ios`: Tc from
//!   the classic IOS table, queue-limit 64; `ios-xe`: Tc 4 ms, queue-limit
//!   50 ms of 1500-byte packets, at least 64); `shape peak` → `shape`
//!   releasing Bc + Be per Tc (CIR × (1 + Be/Bc));
//! - `fair-queue` → `fair-queue` (flow-based WFQ; `queue-limit` = its
//!   per-flow threshold); classic IOS shapes class-default into WFQ when no
//!   queueing action is given (profile `ios`);
//! - `random-detect dscp-based` + `random-detect dscp V MIN MAX DENOM` →
//!   `wred` classifying by AF drop precedence (AFx1/x2/x3);
//! - `bandwidth`, `priority` (CBWFQ / LLQ) → the closest tree, `htb`:
//!   priority classes prio 0 with rate = ceil = the priority rate, bandwidth
//!   classes rate = bandwidth, ceil = the link, class-default the rest;
//! - `queue-limit` → the class queue's limit (packets; bytes and ms are
//!   converted with 1500-byte packets at the class rate, as IOS does);
//! - nested `service-policy` under `shape` → the shaper drains the child
//!   policy's tree.

use crate::lex::{self, Cursor, Line, Word};
use crate::{fmt, Direction, ImportError, Imported, ImportedPolicy, Result, Warning};
use qoslab_policy::spec::{
    ClassSpec, FifoLimit, FifoSpec, FilterSpec, MeterSpec, PolicySpec, QdiscSpec, ShaperSpec,
    TreeSpec,
};

/// Which IOS's defaults apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// Classic IOS (e.g. a 3725 on 12.4): shape Tc from its table,
    /// class-default shaped into WFQ, queue-limit 64.
    Ios,
    /// IOS XE (ISR 4000, ASR 1000): Tc 4 ms, queue-limit 50 ms (≥ 64).
    IosXe,
}

impl Platform {
    pub fn parse(s: &str) -> Option<Platform> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "ios" | "classic" => Some(Platform::Ios),
            "ios-xe" | "iosxe" | "xe" => Some(Platform::IosXe),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::IosXe => "ios-xe",
        }
    }
    /// The class queue-limit default at class rate `bps` (see
    /// `qoslab_core::shaper::interval_shaper`'s profile rule).
    fn queue_limit(self, bps: Option<u64>) -> u64 {
        match (self, bps) {
            (Platform::Ios, _) | (Platform::IosXe, None) => 64,
            (Platform::IosXe, Some(r)) => (r / 20 / 12_000).max(64),
        }
    }
}

#[derive(Clone, Debug)]
enum Match {
    Any,
    Dscp(Vec<u8>),
    Acl(String),
}

#[derive(Clone, Debug)]
struct ClassMap {
    all: bool,
    matches: Vec<(Match, Word)>,
}

#[derive(Clone, Debug, Default)]
struct Police {
    word: Option<Word>,
    cir: Option<Rate>,
    bc: Option<Burst>,
    be: Option<Burst>,
    pir: Option<Rate>,
    pbe: Option<Burst>,
    conform: Option<String>,
    exceed: Option<String>,
    violate: Option<String>,
}

#[derive(Clone, Debug)]
enum Rate {
    Bps(u64),
    Percent(u64, Word),
}

#[derive(Clone, Debug)]
enum Burst {
    Bytes(u64),
    Ms(u64),
}

#[derive(Clone, Debug)]
struct Shape {
    word: Word,
    peak: bool,
    cir: Rate,
    bc: Option<Burst>,
    be: Option<Burst>,
}

#[derive(Clone, Debug, Default)]
struct Actions {
    police: Option<Police>,
    shape: Option<Shape>,
    bandwidth: Option<(Rate, bool, Word)>,
    priority: Option<(Option<Rate>, Word)>,
    fair_queue: Option<Word>,
    queue_limit: Option<(u64, String, Word)>,
    wred: Option<Wred>,
    child: Option<(String, Word)>,
}

#[derive(Clone, Debug, Default)]
struct Wred {
    word: Option<Word>,
    dscp_based: bool,
    ewma: Option<u64>,
    ecn: bool,
    levels: Vec<(u8, u64, u64, u64, Word)>,
}

#[derive(Clone, Debug)]
struct PClass {
    name: String,
    word: Word,
    actions: Actions,
    lines: Vec<String>,
}

#[derive(Clone, Debug)]
struct PolicyMap {
    word: Word,
    classes: Vec<PClass>,
    lines: Vec<String>,
}

#[derive(Clone, Debug, Default)]
struct Interface {
    name: String,
    bandwidth_kbps: Option<u64>,
    policies: Vec<(Direction, String, Word)>,
    lines: Vec<String>,
}

#[derive(Default)]
struct Config {
    class_maps: Vec<(String, ClassMap)>,
    policy_maps: Vec<(String, PolicyMap)>,
    acls: Vec<(String, Vec<(String, Word)>)>,
    interfaces: Vec<Interface>,
    warnings: Vec<Warning>,
}

enum Mode {
    Top,
    ClassMap(usize),
    Policy(usize),
    PClass(usize, usize),
    Police(usize, usize),
    Interface(usize),
    Acl(usize),
    Skip,
}

/// Imports MQC text with `platform`'s defaults.
pub fn import(text: &str, platform: Platform) -> Result<Imported> {
    let mut cfg = Config::default();
    let mut mode = Mode::Top;
    let mut ignored = 0usize;
    // Whether the current block's sub-commands are indented.
    let mut indented: Option<bool> = None;
    for line in lex::lines(text, lex::IOS) {
        let mut c = Cursor::new(&line);
        let w = c.peek().expect("non-empty").clone();
        let head = w.text.to_ascii_lowercase();
        let top = matches!(
            head.as_str(),
            "class-map"
                | "policy-map"
                | "interface"
                | "access-list"
                | "end"
                | "hostname"
                | "version"
        ) || (head == "ip" && line.words.get(1).is_some_and(|x| x.text == "access-list"));
        if top {
            mode = top_level(&mut cfg, &mut c, &line, platform)?;
            indented = None;
            continue;
        }
        // In an indented configuration (`show running-config`), a line at
        // column 1 that is no QoS command ends the block (`router ospf 1`
        // after an interface); pasted unindented text relies on keywords.
        if !matches!(mode, Mode::Top | Mode::Skip) {
            match indented {
                None => indented = Some(line.indent > 0),
                Some(true) if line.indent == 0 => mode = Mode::Skip,
                _ => {}
            }
        }
        mode = match mode {
            Mode::Top | Mode::Skip => {
                ignored += 1;
                Mode::Skip
            }
            Mode::ClassMap(i) => {
                class_map_line(&mut cfg, i, &mut c)?;
                Mode::ClassMap(i)
            }
            Mode::Acl(i) => {
                acl_entry(&mut cfg, i, &mut c)?;
                Mode::Acl(i)
            }
            Mode::Interface(i) => {
                interface_line(&mut cfg, i, &mut c, &line)?;
                Mode::Interface(i)
            }
            Mode::Policy(p) | Mode::PClass(p, _) | Mode::Police(p, _) if head == "class" => {
                c.next_word();
                let n = c.expect("a class-map name or class-default")?;
                let pm = &mut cfg.policy_maps[p].1;
                pm.lines.push(line.text.clone());
                if pm.classes.iter().any(|x| x.name == n.text) {
                    return Err(ImportError::at(
                        n,
                        "this class is already in the policy-map",
                    ));
                }
                if n.text != "class-default" && !cfg.class_maps.iter().any(|(k, _)| *k == n.text) {
                    return Err(ImportError::at(
                        n,
                        "no class-map of this name (define it with class-map before the policy-map)",
                    ));
                }
                pm.classes.push(PClass {
                    name: n.text.clone(),
                    word: n.clone(),
                    actions: Actions::default(),
                    lines: vec![line.text.clone()],
                });
                Mode::PClass(p, pm.classes.len() - 1)
            }
            Mode::Policy(_) if head == "description" => mode,
            Mode::Policy(_) => {
                return Err(ImportError::at(&w, "expected class NAME in a policy-map"))
            }
            Mode::Police(p, k)
                if matches!(
                    head.as_str(),
                    "conform-action" | "exceed-action" | "violate-action"
                ) =>
            {
                cfg.policy_maps[p].1.lines.push(line.text.clone());
                let cl = &mut cfg.policy_maps[p].1.classes[k];
                cl.lines.push(line.text.clone());
                let pol = cl.actions.police.as_mut().expect("police mode");
                police_actions(&mut c, pol, &mut cfg.warnings, line.number)?;
                Mode::Police(p, k)
            }
            Mode::PClass(p, k) | Mode::Police(p, k) => {
                cfg.policy_maps[p].1.lines.push(line.text.clone());
                let open = class_action(&mut cfg, p, k, &mut c, &line, platform)?;
                if open {
                    Mode::Police(p, k)
                } else {
                    Mode::PClass(p, k)
                }
            }
        };
    }
    if ignored > 0 {
        cfg.warnings.push(Warning {
            line: 0,
            message: format!("{ignored} configuration line(s) outside class-map, policy-map, access lists and interfaces were not read"),
        });
    }
    assemble(cfg, platform)
}

fn top_level(
    cfg: &mut Config,
    c: &mut Cursor<'_>,
    line: &Line,
    _platform: Platform,
) -> Result<Mode> {
    let w = c.next_word().expect("word");
    match w.text.to_ascii_lowercase().as_str() {
        "class-map" => {
            let mut all = true;
            if c.eat("match-any") {
                all = false;
            } else {
                c.eat("match-all");
            }
            if c.eat("type") {
                let t = c.expect("qos")?;
                if !t.text.eq_ignore_ascii_case("qos") {
                    return Err(ImportError::at(t, "only class-map type qos is supported"));
                }
                if c.eat("match-any") {
                    all = false;
                } else {
                    c.eat("match-all");
                }
            }
            let n = c.expect("a class-map name")?;
            cfg.class_maps.retain(|(k, _)| *k != n.text);
            cfg.class_maps.push((
                n.text.clone(),
                ClassMap {
                    all,
                    matches: Vec::new(),
                },
            ));
            Ok(Mode::ClassMap(cfg.class_maps.len() - 1))
        }
        "policy-map" => {
            if c.eat("type") {
                let t = c.expect("qos")?;
                if !t.text.eq_ignore_ascii_case("qos") {
                    return Err(ImportError::at(t, "only policy-map type qos is supported"));
                }
            }
            let n = c.expect("a policy-map name")?;
            cfg.policy_maps.retain(|(k, _)| *k != n.text);
            cfg.policy_maps.push((
                n.text.clone(),
                PolicyMap {
                    word: n.clone(),
                    classes: Vec::new(),
                    lines: vec![line.text.clone()],
                },
            ));
            Ok(Mode::Policy(cfg.policy_maps.len() - 1))
        }
        "interface" => {
            let n = c.expect("an interface name")?;
            let mut name = n.text.clone();
            while let Some(x) = c.next_word() {
                name.push_str(&x.text);
            }
            cfg.interfaces.push(Interface {
                name,
                lines: vec![line.text.clone()],
                ..Default::default()
            });
            Ok(Mode::Interface(cfg.interfaces.len() - 1))
        }
        "access-list" => {
            let n = c.expect("an access-list number")?.text.clone();
            let i = acl_index(cfg, &n);
            acl_entry(cfg, i, c)?;
            Ok(Mode::Top)
        }
        "ip" => {
            c.next_word();
            let kind = c.expect("standard or extended")?;
            if !matches!(kind.text.as_str(), "standard" | "extended") {
                return Err(ImportError::at(kind, "expected standard or extended"));
            }
            let n = c.expect("an access-list name")?.text.clone();
            let i = acl_index(cfg, &n);
            Ok(Mode::Acl(i))
        }
        _ => Ok(Mode::Top),
    }
}

fn acl_index(cfg: &mut Config, n: &str) -> usize {
    match cfg.acls.iter().position(|(k, _)| k == n) {
        Some(i) => i,
        None => {
            cfg.acls.push((n.to_string(), Vec::new()));
            cfg.acls.len() - 1
        }
    }
}

/// `[seq] permit PROTO SRC [WILD] [eq P] DST [WILD] [eq P]`, or a standard
/// `permit SRC [WILD]`; `deny` cannot be expressed by qoslab's filters.
fn acl_entry(cfg: &mut Config, i: usize, c: &mut Cursor<'_>) -> Result<()> {
    let mut a = c.expect("permit")?;
    if a.text.parse::<u32>().is_ok() {
        a = c.expect("permit")?;
    }
    match a.text.as_str() {
        "remark" => return Ok(()),
        "permit" => {}
        "deny" => {
            return Err(ImportError::at(
                a,
                "deny entries are not modelled (qoslab filters only select); rewrite the class with permit entries",
            ))
        }
        _ => return Err(ImportError::at(a, "expected permit (or remark)")),
    }
    let start = a.clone();
    let first = c.expect("a protocol or a source")?;
    let proto = match first.text.as_str() {
        "ip" => None,
        "tcp" | "udp" | "icmp" => Some(first.text.clone()),
        p if p.parse::<u8>().is_ok() => Some(p.to_string()),
        _ => {
            // A standard ACL: source only.
            let src = address(c, first)?;
            let mut t = Vec::new();
            if let Some(s) = src {
                t.push(format!("src {s}"));
            }
            if !c.done() {
                return Err(ImportError::at(
                    c.peek().expect("word"),
                    "unexpected word in a standard access-list entry",
                ));
            }
            let cls = if t.is_empty() {
                "any".into()
            } else {
                t.join(" ")
            };
            cfg.acls[i].1.push((cls, start));
            return Ok(());
        }
    };
    let sw = c.expect("a source (any, host A, A WILDCARD)")?;
    let src = address(c, sw)?;
    let sport = port(c)?;
    let dw = c.expect("a destination (any, host A, A WILDCARD)")?;
    let dst = address(c, dw)?;
    let dport = port(c)?;
    if let Some(x) = c.peek() {
        return Err(ImportError::at(
            x,
            "this access-list option is not modelled (supported: protocol, addresses, eq PORT)",
        ));
    }
    let mut t = Vec::new();
    if let Some(s) = src {
        t.push(format!("src {s}"));
    }
    if let Some(s) = dst {
        t.push(format!("dst {s}"));
    }
    if let Some(p) = sport {
        t.push(format!("sport {p}"));
    }
    if let Some(p) = dport {
        t.push(format!("dport {p}"));
    }
    if let Some(p) = proto {
        t.push(format!("proto {p}"));
    }
    let cls = if t.is_empty() {
        "any".into()
    } else {
        t.join(" ")
    };
    cfg.acls[i].1.push((cls, start));
    Ok(())
}

/// `any`, `host A`, `A WILDCARD` (a contiguous wildcard) → `A/LEN` (None = any).
fn address(c: &mut Cursor<'_>, w: &Word) -> Result<Option<String>> {
    match w.text.as_str() {
        "any" => Ok(None),
        "host" => Ok(Some(format!("{}/32", ipv4(c.expect("an address")?)?.1))),
        _ => {
            let (_, a) = ipv4(w)?;
            let wild = match c.peek() {
                Some(x) if ipv4(x).is_ok() => {
                    c.next_word();
                    ipv4(x)?.0
                }
                _ => 0,
            };
            let mask = !wild;
            if mask.leading_ones() + mask.trailing_zeros() != 32 {
                return Err(ImportError::at(
                    w,
                    "a non-contiguous wildcard mask is not modelled",
                ));
            }
            Ok(Some(format!("{a}/{}", mask.leading_ones())))
        }
    }
}

fn ipv4(w: &Word) -> Result<(u32, String)> {
    let parts: Vec<&str> = w.text.split('.').collect();
    let bad = || ImportError::at(w, "expected an IPv4 address A.B.C.D");
    if parts.len() != 4 {
        return Err(bad());
    }
    let mut v = 0u32;
    for p in parts {
        v = (v << 8) | p.parse::<u8>().map_err(|_| bad())? as u32;
    }
    Ok((v, w.text.clone()))
}

fn port(c: &mut Cursor<'_>) -> Result<Option<String>> {
    if !c.eat("eq") {
        if let Some(x) = c.peek() {
            if matches!(x.text.as_str(), "gt" | "lt" | "neq" | "range") {
                return Err(ImportError::at(
                    x,
                    "port operators other than eq are not modelled",
                ));
            }
        }
        return Ok(None);
    }
    let p = c.expect("a port number")?;
    let v = match p.text.as_str() {
        "www" => 80,
        "domain" => 53,
        "ftp" => 21,
        "telnet" => 23,
        "smtp" => 25,
        t => t
            .parse::<u16>()
            .map_err(|_| ImportError::at(p, "expected a port number"))?,
    };
    Ok(Some(v.to_string()))
}

fn class_map_line(cfg: &mut Config, i: usize, c: &mut Cursor<'_>) -> Result<()> {
    let w = c.next_word().expect("word");
    match w.text.to_ascii_lowercase().as_str() {
        "description" => return Ok(()),
        "match" => {}
        _ => return Err(ImportError::at(w, "expected match … in a class-map")),
    }
    let k = c.expect("dscp, precedence, access-group or any")?;
    let mut key = k.text.to_ascii_lowercase();
    if key == "ip" {
        key = c.expect("dscp or precedence")?.text.to_ascii_lowercase();
    }
    let m = match key.as_str() {
        "any" => Match::Any,
        "dscp" => {
            let mut v = Vec::new();
            while let Some(x) = c.next_word() {
                let d = qoslab_core::classify::DscpSet::parse(&x.text)
                    .map_err(|e| ImportError::at(x, e.message))?;
                v.extend((0u8..64).filter(|b| d.contains(*b)));
            }
            if v.is_empty() {
                return Err(ImportError::at(
                    c.end(),
                    "expected DSCP values (ef, af41, cs3, 0-63)",
                ));
            }
            Match::Dscp(v)
        }
        "precedence" => {
            let mut v = Vec::new();
            while let Some(x) = c.next_word() {
                let p = prec_value(x)?;
                v.extend((p * 8)..(p * 8 + 8));
            }
            if v.is_empty() {
                return Err(ImportError::at(c.end(), "expected precedence values 0-7"));
            }
            Match::Dscp(v)
        }
        "access-group" => {
            let n = c.expect("an access-list number or name NAME")?;
            let n = if n.text == "name" {
                c.expect("an access-list name")?
            } else {
                n
            };
            Match::Acl(n.text.clone())
        }
        "not" | "protocol" | "class-map" | "cos" | "qos-group" | "discard-class"
        | "input-interface" => {
            return Err(ImportError::at(
                k,
                format!(
                    "match {key} is not modelled (supported: dscp, precedence, access-group, any)"
                ),
            ))
        }
        _ => {
            return Err(ImportError::at(
                k,
                "expected dscp, precedence, access-group or any",
            ))
        }
    };
    cfg.class_maps[i].1.matches.push((m, k.clone()));
    Ok(())
}

fn prec_value(x: &Word) -> Result<u8> {
    let names = [
        "routine",
        "priority",
        "immediate",
        "flash",
        "flash-override",
        "critical",
        "internet",
        "network",
    ];
    if let Some(i) = names.iter().position(|n| x.text.eq_ignore_ascii_case(n)) {
        return Ok(i as u8);
    }
    x.text
        .parse::<u8>()
        .ok()
        .filter(|p| *p <= 7)
        .ok_or_else(|| ImportError::at(x, "expected a precedence 0-7"))
}

fn interface_line(cfg: &mut Config, i: usize, c: &mut Cursor<'_>, line: &Line) -> Result<()> {
    let w = c.next_word().expect("word");
    match w.text.to_ascii_lowercase().as_str() {
        "service-policy" => {
            let d = c.expect("output or input")?;
            let dir = match d.text.as_str() {
                "output" => Direction::Egress,
                "input" => Direction::Ingress,
                _ => return Err(ImportError::at(d, "expected output or input")),
            };
            let n = c.expect("a policy-map name")?;
            cfg.interfaces[i]
                .policies
                .push((dir, n.text.clone(), n.clone()));
            cfg.interfaces[i].lines.push(line.text.clone());
        }
        "bandwidth" => {
            let v = c.expect("kbit/s")?;
            let k = v
                .text
                .parse::<u64>()
                .map_err(|_| ImportError::at(v, "expected the interface bandwidth in kbit/s"))?;
            cfg.interfaces[i].bandwidth_kbps = Some(k);
            cfg.interfaces[i].lines.push(line.text.clone());
        }
        _ => {}
    }
    Ok(())
}

/// a × b / c without overflow (saturating at u64::MAX).
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    (a as u128 * b as u128 / c.max(1) as u128).min(u64::MAX as u128) as u64
}

/// kbit/s (IOS's unit for bandwidth and priority) → bit/s.
fn kbit(w: &Word, what: &str) -> Result<u64> {
    number(w, what)?
        .checked_mul(1000)
        .ok_or_else(|| ImportError::at(w, format!("{what}: too large")))
}

fn number(w: &Word, what: &str) -> Result<u64> {
    w.text
        .parse::<u64>()
        .map_err(|_| ImportError::at(w, format!("expected {what}")))
}

/// One command inside `policy-map … class …`. Returns true when a
/// multi-line `police` was opened (its actions follow on their own lines).
fn class_action(
    cfg: &mut Config,
    p: usize,
    k: usize,
    c: &mut Cursor<'_>,
    line: &Line,
    _platform: Platform,
) -> Result<bool> {
    let w = c.next_word().expect("word").clone();
    let cl = &mut cfg.policy_maps[p].1.classes[k];
    cl.lines.push(line.text.clone());
    let a = &mut cl.actions;
    let dup = |w: &Word| ImportError::at(w, "given twice in this class");
    match w.text.to_ascii_lowercase().as_str() {
        "police" => {
            if a.police.is_some() {
                return Err(dup(&w));
            }
            let mut pol = Police { word: Some(w.clone()), ..Default::default() };
            police_args(c, &mut pol)?;
            let open = pol.conform.is_none() && c.done();
            police_actions(c, &mut pol, &mut cfg.warnings, line.number)?;
            cfg.policy_maps[p].1.classes[k].actions.police = Some(pol);
            return Ok(open);
        }
        "shape" => {
            if a.shape.is_some() {
                return Err(dup(&w));
            }
            let m = c.expect("average or peak")?;
            let peak = match m.text.as_str() {
                "average" => false,
                "peak" => true,
                "adaptive" | "fecn-adapt" | "fr-voice-adapt" => {
                    return Err(ImportError::at(m, "adaptive shaping is not modelled"))
                }
                _ => return Err(ImportError::at(m, "expected average or peak")),
            };
            let cir = rate_arg(c, "the shaped rate in bit/s or percent N")?;
            let (bc, be) = if matches!(cir, Rate::Percent(..)) {
                let bc = if c.peek().is_some() { Some(ms_arg(c)?) } else { None };
                let be = if c.peek().is_some() { Some(ms_arg(c)?) } else { None };
                (bc, be)
            } else {
                let bc = match c.next_word() {
                    Some(x) => Some(Burst::Bytes(number(x, "Bc in bits")?)),
                    None => None,
                };
                let be = match c.next_word() {
                    Some(x) => Some(Burst::Bytes(number(x, "Be in bits")?)),
                    None => None,
                };
                (bc, be)
            };
            if let Some(x) = c.peek() {
                return Err(ImportError::at(x, "unexpected word after shape"));
            }
            a.shape = Some(Shape { word: w.clone(), peak, cir, bc, be });
        }
        "bandwidth" => {
            if a.bandwidth.is_some() {
                return Err(dup(&w));
            }
            let remaining = c.eat("remaining");
            let r = if remaining {
                if c.eat("ratio") {
                    return Err(ImportError::at(&w, "bandwidth remaining ratio is not modelled (use percent)"));
                }
                if !c.eat("percent") {
                    return Err(ImportError::at(c.peek().unwrap_or(&w), "expected percent N"));
                }
                let v = c.expect("a percentage")?;
                Rate::Percent(number(v, "a percentage")?, v.clone())
            } else if c.eat("percent") {
                let v = c.expect("a percentage")?;
                Rate::Percent(number(v, "a percentage")?, v.clone())
            } else {
                let v = c.expect("kbit/s")?;
                Rate::Bps(kbit(v, "the bandwidth in kbit/s")?)
            };
            a.bandwidth = Some((r, remaining, w.clone()));
        }
        "priority" => {
            if a.priority.is_some() {
                return Err(dup(&w));
            }
            if c.eat("level") {
                c.expect("a level")?;
                cfg.warnings.push(Warning { line: line.number, message: "priority level is modelled as one strict-priority band".into() });
            }
            let r = if c.eat("percent") {
                let v = c.expect("a percentage")?;
                Some(Rate::Percent(number(v, "a percentage")?, v.clone()))
            } else if let Some(v) = c.next_word() {
                Some(Rate::Bps(kbit(v, "the priority rate in kbit/s")?))
            } else {
                None
            };
            if let Some(x) = c.next_word() {
                return Err(ImportError::at(x, "a priority burst is not modelled"));
            }
            let a = &mut cfg.policy_maps[p].1.classes[k].actions;
            a.priority = Some((r, w.clone()));
        }
        "fair-queue" => {
            if let Some(x) = c.peek() {
                return Err(ImportError::at(x, "fair-queue options are not modelled (dynamic queues: 256)"));
            }
            a.fair_queue = Some(w.clone());
        }
        "queue-limit" => {
            let v = c.expect("a limit")?;
            let n = number(v, "a queue limit")?;
            let unit = match c.next_word() {
                None => "packets".to_string(),
                Some(u) => match u.text.as_str() {
                    "packets" | "bytes" | "ms" | "us" => u.text.clone(),
                    _ => return Err(ImportError::at(u, "expected packets, bytes or ms")),
                },
            };
            a.queue_limit = Some((n, unit, v.clone()));
        }
        "random-detect" => {
            let wr = a.wred.get_or_insert_with(Wred::default);
            if wr.word.is_none() {
                wr.word = Some(w.clone());
            }
            match c.next_word() {
                None => {}
                Some(x) => match x.text.as_str() {
                    "dscp-based" => wr.dscp_based = true,
                    "precedence-based" => {
                        return Err(ImportError::at(x, "precedence-based WRED is not modelled (use dscp-based with AF code points)"))
                    }
                    "ecn" => wr.ecn = true,
                    "exponential-weighting-constant" => {
                        wr.ewma = Some(number(c.expect("a constant")?, "a number")?)
                    }
                    "dscp" => {
                        let d = c.expect("a DSCP")?;
                        let set = qoslab_core::classify::DscpSet::parse(&d.text)
                            .map_err(|e| ImportError::at(d, e.message))?;
                        let v = (0u8..64).find(|b| set.contains(*b)).expect("one");
                        let min = number(c.expect("the minimum threshold (packets)")?, "packets")?;
                        let max = number(c.expect("the maximum threshold (packets)")?, "packets")?;
                        let den = match c.next_word() {
                            Some(x) => number(x, "the mark probability denominator")?,
                            None => 10,
                        };
                        wr.levels.push((v, min, max, den, d.clone()));
                    }
                    _ => {
                        return Err(ImportError::at(x, "random-detect option not modelled (dscp-based, dscp V MIN MAX DENOM, exponential-weighting-constant, ecn)"))
                    }
                },
            }
        }
        "service-policy" => {
            let n = c.expect("a child policy-map name")?;
            a.child = Some((n.text.clone(), n.clone()));
        }
        "description" => {}
        "set" => {
            return Err(ImportError::at(
                &w,
                "set (unconditional marking) is not modelled; mark with police … conform-action set-dscp-transmit",
            ))
        }
        _ => {
            return Err(ImportError::at(
                &w,
                "not modelled in a policy-map class (supported: police, shape, bandwidth, priority, fair-queue, queue-limit, random-detect, service-policy)",
            ))
        }
    }
    Ok(false)
}

fn rate_arg(c: &mut Cursor<'_>, what: &str) -> Result<Rate> {
    if c.eat("percent") {
        let v = c.expect("a percentage")?;
        let n = number(v, "a percentage 1-100")?;
        if !(1..=100).contains(&n) {
            return Err(ImportError::at(v, "expected a percentage 1-100"));
        }
        return Ok(Rate::Percent(n, v.clone()));
    }
    let v = c.expect(what)?;
    Ok(Rate::Bps(number(
        v,
        "a rate in bit/s (IOS takes plain bits per second)",
    )?))
}

fn ms_arg(c: &mut Cursor<'_>) -> Result<Burst> {
    let v = c.expect("a burst in ms")?;
    let n = number(v, "milliseconds")?;
    if !c.eat("ms") {
        return Err(ImportError::at(
            c.peek().unwrap_or(v),
            "expected 'ms' after a burst given with percent",
        ));
    }
    Ok(Burst::Ms(n))
}

/// `police CIR [BC [BE]]`, `police cir CIR [bc BC] [be BE] [pir PIR [be
/// PBE]]`, `police cir percent N [bc MS ms] [be MS ms]`.
fn police_args(c: &mut Cursor<'_>, pol: &mut Police) -> Result<()> {
    let percent = |pol: &Police| matches!(pol.cir, Some(Rate::Percent(..)));
    while let Some(w) = c.peek() {
        match w.text.to_ascii_lowercase().as_str() {
            "cir" | "rate" => {
                c.next_word();
                pol.cir = Some(rate_arg(c, "the CIR in bit/s")?);
            }
            "bc" => {
                c.next_word();
                pol.bc = Some(if percent(pol) {
                    ms_arg(c)?
                } else {
                    Burst::Bytes(number(c.expect("Bc in bytes")?, "Bc in bytes")?)
                });
            }
            "be" if pol.pir.is_some() => {
                c.next_word();
                pol.pbe = Some(Burst::Bytes(number(
                    c.expect("Be in bytes")?,
                    "Be in bytes",
                )?));
            }
            "be" => {
                c.next_word();
                pol.be = Some(if percent(pol) {
                    ms_arg(c)?
                } else {
                    Burst::Bytes(number(c.expect("Be in bytes")?, "Be in bytes")?)
                });
            }
            "pir" => {
                c.next_word();
                pol.pir = Some(rate_arg(c, "the PIR in bit/s")?);
            }
            "conform-action" | "exceed-action" | "violate-action" => break,
            t if t.parse::<u64>().is_ok() => {
                c.next_word();
                let v = number(w, "a number")?;
                if pol.cir.is_none() {
                    pol.cir = Some(Rate::Bps(v));
                } else if pol.bc.is_none() {
                    pol.bc = Some(Burst::Bytes(v));
                } else if pol.be.is_none() {
                    pol.be = Some(Burst::Bytes(v));
                } else {
                    return Err(ImportError::at(
                        w,
                        "too many numbers after police (CIR BC BE)",
                    ));
                }
            }
            _ => return Err(ImportError::at(w, "expected cir, bc, be, pir or an action")),
        }
    }
    if pol.cir.is_none() {
        return Err(ImportError::at(
            pol.word.as_ref().expect("word"),
            "police needs a CIR (police cir BPS)",
        ));
    }
    Ok(())
}

/// `conform-action A [exceed-action A [violate-action A]]`, on the police
/// line or on lines of their own.
fn police_actions(
    c: &mut Cursor<'_>,
    pol: &mut Police,
    warns: &mut Vec<Warning>,
    ln: usize,
) -> Result<()> {
    while let Some(w) = c.next_word() {
        let slot = match w.text.to_ascii_lowercase().as_str() {
            "conform-action" => &mut pol.conform,
            "exceed-action" => &mut pol.exceed,
            "violate-action" => &mut pol.violate,
            _ => {
                return Err(ImportError::at(
                    w,
                    "expected conform-action, exceed-action or violate-action",
                ))
            }
        };
        let a = c.expect("an action (transmit, drop, set-dscp-transmit V)")?;
        let v = match a.text.to_ascii_lowercase().as_str() {
            "transmit" => "transmit".to_string(),
            "drop" => "drop".to_string(),
            "set-dscp-transmit" => {
                let d = c.expect("a DSCP")?;
                let set = qoslab_core::classify::DscpSet::parse(&d.text)
                    .map_err(|e| ImportError::at(d, e.message))?;
                let v = (0u8..64).find(|b| set.contains(*b)).expect("one");
                format!("set-dscp:{v}")
            }
            "set-prec-transmit" => {
                let d = c.expect("a precedence")?;
                let p = prec_value(d)?;
                warns.push(Warning {
                    line: ln,
                    message: format!("set-prec-transmit {p} rewrites the precedence bits; modelled as set-dscp CS{p} ({})", p * 8),
                });
                format!("set-dscp:{}", p * 8)
            }
            _ => return Err(ImportError::at(
                a,
                "police action not modelled (transmit, drop, set-dscp-transmit, set-prec-transmit)",
            )),
        };
        *slot = Some(v);
    }
    Ok(())
}

// ---- assembly ----------------------------------------------------------------

fn assemble(cfg: Config, platform: Platform) -> Result<Imported> {
    let mut out = Imported {
        policies: Vec::new(),
        warnings: cfg.warnings.clone(),
    };
    let mut attached: Vec<String> = Vec::new();
    for ifc in &cfg.interfaces {
        for (dir, name, w) in &ifc.policies {
            let link = ifc.bandwidth_kbps.map(|k| k.saturating_mul(1000));
            let spec = policy(&cfg, name, w, link, platform, *dir, &mut out.warnings, 0)?;
            let mut source = policy_lines(&cfg, name);
            source.extend(ifc.lines.iter().cloned());
            attached.push(name.clone());
            out.policies.push(ImportedPolicy {
                attach: format!("interface {}", ifc.name),
                direction: *dir,
                spec,
                source,
            });
        }
    }
    if cfg.interfaces.iter().all(|i| i.policies.is_empty()) {
        // No interface: every policy-map that is no other's child, as egress.
        let children: Vec<&String> = cfg
            .policy_maps
            .iter()
            .flat_map(|(_, p)| {
                p.classes
                    .iter()
                    .filter_map(|c| c.actions.child.as_ref().map(|x| &x.0))
            })
            .collect();
        for (name, pm) in &cfg.policy_maps {
            if children.contains(&name) {
                continue;
            }
            let spec = policy(
                &cfg,
                name,
                &pm.word,
                None,
                platform,
                Direction::Egress,
                &mut out.warnings,
                0,
            )?;
            out.policies.push(ImportedPolicy {
                attach: format!("policy-map {name}"),
                direction: Direction::Egress,
                spec,
                source: policy_lines(&cfg, name),
            });
        }
    }
    Ok(out)
}

fn policy_lines(cfg: &Config, name: &str) -> Vec<String> {
    let mut v = Vec::new();
    if let Some((_, pm)) = cfg.policy_maps.iter().find(|(k, _)| k == name) {
        for c in &pm.classes {
            if let Some((_, cm)) = cfg.class_maps.iter().find(|(k, _)| *k == c.name) {
                let _ = cm;
                v.push(format!("class-map {}", c.name));
            }
        }
        v.extend(pm.lines.iter().cloned());
        for c in &pm.classes {
            if let Some((child, _)) = &c.actions.child {
                v.extend(policy_lines(cfg, child));
            }
        }
    }
    v
}

fn resolve_rate(r: &Rate, link: Option<u64>, what: &str) -> Result<u64> {
    match r {
        Rate::Bps(b) => Ok(*b),
        Rate::Percent(n, w) => match link {
            Some(l) => Ok(mul_div(l, *n, 100)),
            None => Err(ImportError::at(
                w,
                format!("{what} in percent needs the rate it is a percentage of: the interface's `bandwidth` (kbit/s) or a parent policy's shape"),
            )),
        },
    }
}

fn burst_bytes(b: &Burst, rate_bps: u64) -> u64 {
    match b {
        Burst::Bytes(v) => *v,
        Burst::Ms(ms) => mul_div(rate_bps / 8, *ms, 1000),
    }
}

fn burst_bits(b: &Burst, rate_bps: u64) -> u64 {
    match b {
        Burst::Bytes(v) => *v,
        Burst::Ms(ms) => mul_div(rate_bps, *ms, 1000),
    }
}

fn has_queueing(a: &Actions) -> bool {
    a.bandwidth.is_some()
        || a.priority.is_some()
        || a.fair_queue.is_some()
        || a.wred.is_some()
        || a.queue_limit.is_some()
}

fn empty(a: &Actions) -> bool {
    a.police.is_none() && a.shape.is_none() && a.child.is_none() && !has_queueing(a)
}

/// The policy spec of policy-map `name`.
#[allow(clippy::too_many_arguments)]
fn policy(
    cfg: &Config,
    name: &str,
    w: &Word,
    link: Option<u64>,
    platform: Platform,
    dir: Direction,
    warns: &mut Vec<Warning>,
    depth: usize,
) -> Result<PolicySpec> {
    let Some((_, pm)) = cfg.policy_maps.iter().find(|(k, _)| k == name) else {
        return Err(ImportError::at(w, "no policy-map of this name"));
    };
    if depth > 3 {
        return Err(ImportError::at(
            w,
            "service-policy nesting deeper than three levels",
        ));
    }
    let default = pm.classes.iter().find(|c| c.name == "class-default");
    let users: Vec<&PClass> = pm
        .classes
        .iter()
        .filter(|c| c.name != "class-default" && !empty(&c.actions))
        .collect();
    // One class for all traffic: class-default alone, or one user class
    // that matches any with an empty class-default.
    let single: Option<&PClass> = match (users.as_slice(), default) {
        ([], Some(d)) => Some(d),
        ([u], d) if d.is_none_or(|d| empty(&d.actions)) && matches_any(cfg, &u.name) => Some(u),
        _ => None,
    };
    if dir == Direction::Ingress {
        let Some(cl) = single else {
            return Err(ImportError::at(w, "an input policy with several classes: qoslab's ingress is one policer for all traffic"));
        };
        let a = &cl.actions;
        if a.shape.is_some() || has_queueing(a) || a.child.is_some() {
            return Err(ImportError::at(
                &cl.word,
                "an input policy may only police (nothing queues on ingress)",
            ));
        }
        let Some(p) = &a.police else {
            return Err(ImportError::at(
                &cl.word,
                "an input policy without police does nothing qoslab models",
            ));
        };
        return Ok(PolicySpec::Police(meter(p, link)?));
    }
    if let Some(cl) = single {
        return single_class(cfg, cl, link, platform, warns, depth);
    }
    if users.is_empty() {
        return Err(ImportError::at(w, "an empty policy-map"));
    }
    let root = classes(cfg, pm, w, link, platform, warns, depth)?;
    Ok(PolicySpec::Tree(Box::new(TreeSpec { police: None, root })))
}

fn matches_any(cfg: &Config, class: &str) -> bool {
    cfg.class_maps
        .iter()
        .find(|(k, _)| k == class)
        .is_some_and(|(_, cm)| {
            cm.matches.iter().any(|(m, _)| matches!(m, Match::Any))
                && (!cm.all || cm.matches.len() == 1)
        })
}

/// All traffic in one class: a flat policer, a flat shaper, or a shaper /
/// queue tree.
fn single_class(
    cfg: &Config,
    cl: &PClass,
    link: Option<u64>,
    platform: Platform,
    warns: &mut Vec<Warning>,
    depth: usize,
) -> Result<PolicySpec> {
    let a = &cl.actions;
    if a.bandwidth.is_some() || a.priority.is_some() {
        let w = a
            .bandwidth
            .as_ref()
            .map(|b| &b.2)
            .or(a.priority.as_ref().map(|p| &p.1))
            .expect("one");
        return Err(ImportError::at(w, "bandwidth/priority in the only class: there is nothing to share the link with (give the classes that compete)"));
    }
    let police = a.police.as_ref().map(|p| meter(p, link)).transpose()?;
    let Some(shape) = &a.shape else {
        if let Some((_, w)) = &a.child {
            return Err(ImportError::at(
                w,
                "a child service-policy without shape in the parent class is not modelled",
            ));
        }
        if !has_queueing(a) {
            return match police {
                Some(m) => Ok(PolicySpec::Police(m)),
                None => Err(ImportError::at(&cl.word, "this class has no action")),
            };
        }
        let q = queue(a, None, platform, warns)?;
        if police.is_none() && q.kind == "pfifo" {
            let n = q.params[0].1.parse::<u32>().unwrap_or(64);
            return Ok(PolicySpec::Fifo(FifoSpec {
                limit: FifoLimit::Packets(n),
                head_drop: false,
            }));
        }
        return Ok(PolicySpec::Tree(Box::new(TreeSpec { police, root: q })));
    };
    let (params, cir) = shape_params(shape, a, link, platform, warns)?;
    let child = if let Some((child, w)) = &a.child {
        if has_queueing(a) {
            return Err(ImportError::at(
                w,
                "queueing actions beside a child service-policy",
            ));
        }
        match policy(
            cfg,
            child,
            w,
            Some(cir),
            platform,
            Direction::Egress,
            warns,
            depth + 1,
        )? {
            PolicySpec::Tree(t) if t.police.is_none() => Some(t.root),
            PolicySpec::Fifo(f) => Some(fifo_node(f)),
            PolicySpec::Police(m) => {
                return Err(ImportError::at(
                    w,
                    format!(
                    "a child policy that only polices under a shaper is not modelled ({} police)",
                    m.kind
                ),
                ))
            }
            _ => {
                return Err(ImportError::at(
                    w,
                    "this child policy cannot sit under a shaper",
                ))
            }
        }
    } else if a.fair_queue.is_some() || a.wred.is_some() {
        Some(queue(a, Some(cir), platform, warns)?)
    } else if platform == Platform::Ios {
        // Classic IOS: the shaping queue of class-default is WFQ.
        warns.push(Warning {
            line: shape.word.line,
            message: "profile ios: the shaping queue is flow-based WFQ (fair-queue, congestive discard threshold 64, 256 dynamic queues), as classic IOS shapes class-default".into(),
        });
        let ql = a.queue_limit.as_ref().map(|q| q.0).unwrap_or(64);
        Some(QdiscSpec::leaf(
            "fair-queue",
            &[("queue_limit", &ql.to_string())],
        ))
    } else {
        None
    };
    let mut shape_params = params;
    match child {
        None => {
            if let Some((n, unit, w)) = &a.queue_limit {
                shape_params.push((
                    "queue_limit".into(),
                    packets_of(*n, unit, Some(cir), w)?.to_string(),
                ));
            }
            if police.is_none() {
                return Ok(PolicySpec::Shape(ShaperSpec {
                    kind: "shape".into(),
                    params: shape_params,
                }));
            }
            let mut root = QdiscSpec::leaf("shape", &[]);
            root.params = shape_params;
            Ok(PolicySpec::Tree(Box::new(TreeSpec { police, root })))
        }
        Some(ch) => {
            let mut root = QdiscSpec::leaf("shape", &[]);
            root.params = shape_params;
            root.child = Some(Box::new(ch));
            Ok(PolicySpec::Tree(Box::new(TreeSpec { police, root })))
        }
    }
}

fn fifo_node(f: FifoSpec) -> QdiscSpec {
    match f.limit {
        FifoLimit::Packets(n) => QdiscSpec::leaf("pfifo", &[("limit", &n.to_string())]),
        FifoLimit::Bytes(b) => QdiscSpec::leaf("bfifo", &[("limit", &fmt::size(b))]),
    }
}

fn shape_params(
    s: &Shape,
    _a: &Actions,
    link: Option<u64>,
    platform: Platform,
    warns: &mut Vec<Warning>,
) -> Result<(Vec<(String, String)>, u64)> {
    let cir = resolve_rate(&s.cir, link, "shape")?;
    let mut p = vec![("cir".to_string(), fmt::rate(cir))];
    let bc = s.bc.as_ref().map(|b| burst_bits(b, cir));
    let be = s.be.as_ref().map(|b| burst_bits(b, cir));
    let mut rate = cir;
    if s.peak {
        // shape peak sends Bc + Be per Tc: shape average at CIR·(1+Be/Bc)
        // with Bc' = Bc + Be, Be' = 0.
        let probe = qoslab_core::shaper::AnyShaper::from_params(
            "shape",
            qoslab_core::Params::new(
                "shape",
                [
                    ("cir", fmt::rate(cir)),
                    ("profile", platform.name().to_string()),
                ],
            ),
        )
        .map_err(|e| ImportError::at(&s.word, e.message))?;
        let d = qoslab_core::Shaper::describe(&probe);
        let get = |k: &str| {
            d.iter()
                .find(|(x, _)| *x == k)
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let bc = bc.unwrap_or(get("bc_bits"));
        let be = be.unwrap_or(get("be_bits"));
        if bc == 0 {
            return Err(ImportError::at(&s.word, "shape peak with Bc 0"));
        }
        rate = cir.saturating_add(mul_div(cir, be, bc));
        p = vec![
            ("cir".to_string(), fmt::rate(rate)),
            ("bc".into(), bc.saturating_add(be).to_string()),
            ("be".into(), "0".into()),
        ];
        warns.push(Warning {
            line: s.word.line,
            message: format!("shape peak {cir}: sends Bc + Be = {} bits per Tc, modelled as shape average {rate} with bc {} and be 0", bc.saturating_add(be), bc.saturating_add(be)),
        });
    } else {
        if let Some(b) = bc {
            p.push(("bc".into(), b.to_string()));
        }
        if let Some(b) = be {
            p.push(("be".into(), b.to_string()));
        }
    }
    p.push(("profile".into(), platform.name().into()));
    Ok((p, rate))
}

/// A queue limit in packets (`bytes` and `ms` as IOS converts them, with
/// 1500-byte packets).
fn packets_of(n: u64, unit: &str, rate: Option<u64>, w: &Word) -> Result<u64> {
    match unit {
        "packets" => Ok(n),
        "bytes" => Ok((n / 1500).max(1)),
        "ms" | "us" => {
            let Some(r) = rate else {
                return Err(ImportError::at(
                    w,
                    "a queue-limit in time needs the class rate (shape or bandwidth)",
                ));
            };
            let ns = if unit == "ms" {
                n as u128 * 1_000_000
            } else {
                n as u128 * 1000
            };
            let p = r as u128 * ns / 8 / 1500 / 1_000_000_000;
            Ok((p.min(u64::MAX as u128) as u64).max(1))
        }
        _ => Err(ImportError::at(w, "expected packets, bytes or ms")),
    }
}

/// The class's queue: fair-queue, wred, or a pfifo with the queue-limit.
fn queue(
    a: &Actions,
    rate: Option<u64>,
    platform: Platform,
    warns: &mut Vec<Warning>,
) -> Result<QdiscSpec> {
    let ql = match &a.queue_limit {
        Some((n, unit, w)) => packets_of(*n, unit, rate, w)?,
        None => platform.queue_limit(rate),
    };
    if let (Some(fq), Some(wr)) = (&a.fair_queue, &a.wred) {
        let _ = fq;
        return Err(ImportError::at(
            wr.word.as_ref().expect("word"),
            "fair-queue with random-detect in one class is not modelled",
        ));
    }
    if a.fair_queue.is_some() {
        return Ok(QdiscSpec::leaf(
            "fair-queue",
            &[("queue_limit", &ql.to_string())],
        ));
    }
    if let Some(wr) = &a.wred {
        let w0 = wr.word.as_ref().expect("word");
        if !wr.dscp_based && !wr.levels.is_empty() {
            return Err(ImportError::at(
                w0,
                "per-DSCP thresholds need random-detect dscp-based",
            ));
        }
        if wr.levels.is_empty() {
            return Err(ImportError::at(
                w0,
                "WRED's default threshold tables are not modelled: give random-detect dscp-based and random-detect dscp V MIN MAX DENOM for the AFx1, AFx2 and AFx3 code points",
            ));
        }
        let mut lv: [Option<(u64, u64, u64)>; 3] = [None; 3];
        for (d, min, max, den, w) in &wr.levels {
            let c = qoslab_core::aqm::rio::af_drop_precedence(*d).index();
            let v = (*min, *max, *den);
            match lv[c] {
                Some(x) if x != v => {
                    return Err(ImportError::at(w, "thresholds that differ within one AF drop precedence are not modelled (qoslab's wred has green / yellow / red levels)"))
                }
                _ => lv[c] = Some(v),
            }
        }
        let mut p: Vec<(String, String)> = vec![
            ("classify".into(), "dscp".into()),
            ("limit".into(), format!("{ql}p")),
        ];
        for (i, name) in ["green", "yellow", "red"].iter().enumerate() {
            let Some((min, max, den)) = lv[i] else {
                return Err(ImportError::at(
                    w0,
                    format!(
                        "no thresholds for the {name} level (AFx{} code points)",
                        i + 1
                    ),
                ));
            };
            p.push((format!("{name}-min"), format!("{min}p")));
            p.push((format!("{name}-max"), format!("{max}p")));
            p.push((
                format!("{name}-probability"),
                format!("{}", 1.0 / den as f64),
            ));
        }
        p.push(("ewma".into(), wr.ewma.unwrap_or(9).to_string()));
        if wr.ecn {
            p.push(("ecn".into(), "true".into()));
        }
        if let Some(r) = rate {
            p.push(("bandwidth".into(), fmt::rate(r)));
        }
        let mut q = QdiscSpec::leaf("wred", &[]);
        q.params = p;
        return Ok(q);
    }
    let _ = warns;
    Ok(QdiscSpec::leaf("pfifo", &[("limit", &ql.to_string())]))
}

fn meter(p: &Police, link: Option<u64>) -> Result<MeterSpec> {
    let cir = resolve_rate(p.cir.as_ref().expect("cir"), link, "police")?;
    let mut v: Vec<(String, String)> = Vec::new();
    let kind = if let Some(pir) = &p.pir {
        let pir = resolve_rate(pir, link, "police pir")?;
        // IOS's two-rate defaults: Bc = CIR/32, Be = PIR/32 bytes (250 ms).
        let cbs =
            p.bc.as_ref()
                .map_or((cir / 32).max(1500), |b| burst_bytes(b, cir));
        let pbs = p
            .pbe
            .as_ref()
            .map_or((pir / 32).max(1500), |b| burst_bytes(b, pir));
        v.push(("cir".into(), fmt::rate(cir)));
        v.push(("cbs".into(), fmt::size(cbs)));
        v.push(("pir".into(), fmt::rate(pir)));
        v.push(("pbs".into(), fmt::size(pbs)));
        "trtcm"
    } else {
        v.push(("cir".into(), fmt::rate(cir)));
        if let Some(b) = &p.bc {
            v.push(("bc".into(), fmt::size(burst_bytes(b, cir))));
        }
        if let Some(b) = &p.be {
            v.push(("be".into(), fmt::size(burst_bytes(b, cir))));
        }
        "police"
    };
    for (k, a) in [
        ("conform", &p.conform),
        ("exceed", &p.exceed),
        ("violate", &p.violate),
    ] {
        if let Some(a) = a {
            v.push((k.into(), a.clone()));
        }
    }
    Ok(MeterSpec {
        kind: kind.into(),
        params: v,
    })
}

/// Several competing classes (CBWFQ / LLQ, or per-class policers): an
/// `htb` when bandwidth/priority share a known link rate, else `drr` with
/// equal quanta (classes sharing one interface FIFO in IOS).
fn classes(
    cfg: &Config,
    pm: &PolicyMap,
    w: &Word,
    link: Option<u64>,
    platform: Platform,
    warns: &mut Vec<Warning>,
    depth: usize,
) -> Result<QdiscSpec> {
    let queueing = pm
        .classes
        .iter()
        .any(|c| c.actions.bandwidth.is_some() || c.actions.priority.is_some());
    let mut filters: Vec<FilterSpec> = Vec::new();
    for c in pm.classes.iter().filter(|c| c.name != "class-default") {
        for f in class_filters(cfg, &c.name, &c.word)? {
            filters.push(FilterSpec {
                classifier: f,
                class: c.name.clone(),
            });
        }
    }
    let mut specs: Vec<ClassSpec> = Vec::new();
    let root_id = format!("{}-root", pm.word.text);
    let mut all = pm.classes.clone();
    if !all.iter().any(|c| c.name == "class-default") {
        all.push(PClass {
            name: "class-default".into(),
            word: pm.word.clone(),
            actions: Actions::default(),
            lines: Vec::new(),
        });
    }
    if queueing {
        let Some(total) = link else {
            return Err(ImportError::at(w, "bandwidth/priority share the link: give the interface's `bandwidth` (kbit/s) or shape in a parent policy, so the classes' rates are known"));
        };
        let mut reserved = 0u64;
        let mut rates: Vec<Option<u64>> = Vec::new();
        for c in &all {
            let a = &c.actions;
            let r = if let Some((r, wq)) = &a.priority {
                Some(match r {
                    Some(r) => resolve_rate(r, Some(total), "priority")?,
                    None => return Err(ImportError::at(wq, "priority without a rate is not modelled (strict priority with no policer could starve the rest)")),
                })
            } else if let Some((r, remaining, _)) = &a.bandwidth {
                if *remaining {
                    None
                } else {
                    Some(resolve_rate(r, Some(total), "bandwidth")?)
                }
            } else {
                None
            };
            reserved = reserved.saturating_add(r.unwrap_or(0));
            rates.push(r);
        }
        if reserved > total {
            return Err(ImportError::at(
                w,
                format!(
                    "the classes reserve {} of a {} link",
                    fmt::rate(reserved),
                    fmt::rate(total)
                ),
            ));
        }
        let rest = total - reserved;
        let remaining_sum: u64 = all
            .iter()
            .filter_map(|c| match &c.actions.bandwidth {
                Some((Rate::Percent(n, _), true, _)) => Some(*n),
                _ => None,
            })
            .sum();
        specs.push(ClassSpec {
            id: root_id.clone(),
            parent: None,
            params: vec![
                ("rate".into(), fmt::rate(total)),
                ("ceil".into(), fmt::rate(total)),
            ],
            police: None,
            qdisc: None,
        });
        let unassigned = all
            .iter()
            .zip(&rates)
            .filter(|(c, r)| r.is_none() && !matches!(c.actions.bandwidth, Some((_, true, _))))
            .count() as u64;
        for (c, r) in all.iter().zip(rates) {
            let a = &c.actions;
            let rate = match r {
                Some(r) => r,
                None => match &a.bandwidth {
                    Some((Rate::Percent(n, _), true, _)) => {
                        mul_div(rest, *n, 100.max(remaining_sum))
                    }
                    _ => (mul_div(rest, 100 - remaining_sum.min(100), 100) / unassigned.max(1))
                        .max(8000),
                },
            };
            let prio = a.priority.is_some();
            let ceil = if prio { rate } else { total };
            if a.shape.is_some() || a.child.is_some() {
                return Err(ImportError::at(
                    &c.word,
                    "shape or a child policy inside a CBWFQ class is not modelled",
                ));
            }
            let q = queue(a, Some(rate), platform, warns)?;
            specs.push(ClassSpec {
                id: c.name.clone(),
                parent: Some(root_id.clone()),
                params: vec![
                    ("rate".into(), fmt::rate(rate)),
                    ("ceil".into(), fmt::rate(ceil)),
                    ("prio".into(), if prio { "0" } else { "1" }.into()),
                ],
                police: a
                    .police
                    .as_ref()
                    .map(|p| meter(p, Some(total)))
                    .transpose()?,
                qdisc: Some(q),
            });
        }
        warns.push(Warning {
            line: w.line,
            message: format!("policy-map {}: CBWFQ/LLQ modelled as htb (priority classes: prio 0, ceil = their rate; bandwidth classes: rate = bandwidth, ceil = {})", pm.word.text, fmt::rate(total)),
        });
        let mut q = QdiscSpec::leaf("htb", &[("default", "class-default")]);
        q.classes = specs;
        q.filters = filters;
        return Ok(q);
    }
    let _ = depth;
    for c in &all {
        let a = &c.actions;
        if a.shape.is_some() || a.child.is_some() {
            return Err(ImportError::at(
                &c.word,
                "per-class shaping beside other classes is not modelled",
            ));
        }
        let q = if has_queueing(a) {
            Some(queue(a, link, platform, warns)?)
        } else {
            None
        };
        specs.push(ClassSpec {
            id: c.name.clone(),
            parent: None,
            params: Vec::new(),
            police: a.police.as_ref().map(|p| meter(p, link)).transpose()?,
            qdisc: q,
        });
    }
    warns.push(Warning {
        line: w.line,
        message: format!("policy-map {}: classes without bandwidth/priority share one interface queue in IOS; qoslab meters per class under drr with equal quanta (differs only when the link is congested)", pm.word.text),
    });
    let mut q = QdiscSpec::leaf("drr", &[("default", "class-default")]);
    q.classes = specs;
    q.filters = filters;
    Ok(q)
}

/// The classifier texts of class-map `name` (several = match-any).
fn class_filters(cfg: &Config, name: &str, w: &Word) -> Result<Vec<String>> {
    let Some((_, cm)) = cfg.class_maps.iter().find(|(k, _)| k == name) else {
        return Err(ImportError::at(w, "no class-map of this name"));
    };
    if cm.matches.is_empty() {
        return Err(ImportError::at(w, "the class-map has no match statement"));
    }
    let mut each: Vec<Vec<String>> = Vec::new();
    for (m, mw) in &cm.matches {
        each.push(match m {
            Match::Any => vec!["any".into()],
            Match::Dscp(v) => vec![format!(
                "dscp {}",
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )],
            Match::Acl(n) => match cfg.acls.iter().find(|(k, _)| k == n) {
                Some((_, e)) if !e.is_empty() => e.iter().map(|(c, _)| c.clone()).collect(),
                _ => {
                    return Err(ImportError::at(
                        mw,
                        format!("access-list {n} is not defined in the text"),
                    ))
                }
            },
        });
    }
    if !cm.all || each.len() == 1 {
        return Ok(each.into_iter().flatten().collect());
    }
    // match-all of several statements: only `any` combines with others.
    let rest: Vec<Vec<String>> = each
        .into_iter()
        .filter(|v| v != &vec!["any".to_string()])
        .collect();
    match rest.as_slice() {
        [] => Ok(vec!["any".into()]),
        [one] => Ok(one.clone()),
        _ => Err(ImportError::at(
            &cm.matches[1].1,
            "match-all of several conditions (e.g. dscp and access-group) is not modelled: qoslab's classifiers match either the 5-tuple or the DSCP",
        )),
    }
}

#[cfg(test)]
mod tests;
