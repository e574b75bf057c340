//! Linux `tc` in: a script of `tc qdisc|class|filter add|replace|change|del
//! …` lines, or the output of `tc -s -d qdisc show` / `tc -s -d class show`
//! / `tc filter show` (the same objects, printed), into policy specs.
//!
//! Options are read the way iproute2 reads them (iproute2 `tc/q_tbf.c`,
//! `q_htb.c`, `q_hfsc.c`, `q_sfq.c`, `q_red.c`, `q_fifo.c`, `q_prio.c`,
//! `q_drr.c`, `q_fq_codel.c`, `q_codel.c`, `q_pie.c`, `q_netem.c`,
//! `f_u32.c`, `m_police.c`; units `tc/tc_util.c` `get_rate64`, `get_size`,
//! `get_time`, through `qoslab_core::parse`, the project's one copy of
//! those tables): class ids and `default` are hexadecimal (`get_tc_classid`,
//! `get_u32(…, 16)`), `burst 10kb/8` carries a cell size tc no longer uses
//! for anything the kernel's rate code reads, `latency` and `r2q` are kept
//! as given (qoslab derives limit and quantum the way tc and the kernel do,
//! and the renderer prints the derived values).
//!
//! Every value written into a spec is re-spelled exactly (`2mbit`,
//! `1600B`), so the spec does not depend on tc's unit traps; a rate given in
//! tc's byte units (`50Mbps` = 400 Mbit/s) is warned about.

use crate::lex::{self, Cursor, Line, Word};
use crate::{fmt, Direction, ImportError, Imported, ImportedPolicy, Result, Warning};
use qoslab_core::parse;
use qoslab_policy::spec::{
    ClassSpec, FifoLimit, FifoSpec, FilterSpec, MeterSpec, PolicySpec, QdiscSpec, ShaperSpec,
    TreeSpec,
};

/// Where a qdisc or class hangs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parent {
    Root,
    Ingress,
    Class(u32, u32),
}

#[derive(Clone, Debug)]
struct Qd {
    dev: String,
    kind: String,
    handle: Option<u32>,
    parent: Parent,
    params: Vec<(String, String)>,
    line: Line,
}

#[derive(Clone, Debug)]
struct Cl {
    dev: String,
    major: u32,
    minor: u32,
    parent: Parent,
    params: Vec<(String, String)>,
    line: Line,
}

#[derive(Clone, Debug)]
struct Flt {
    dev: String,
    parent: u32,
    prio: u32,
    seq: usize,
    classifier: String,
    flowid: Option<(u32, u32, Word)>,
    police: Option<MeterSpec>,
    line: Line,
}

#[derive(Default)]
struct State {
    qdiscs: Vec<Qd>,
    classes: Vec<Cl>,
    filters: Vec<Flt>,
    warnings: Vec<Warning>,
    /// Lines from `tc … show` output (values rounded by tc's printer).
    show_output: bool,
    /// `tc class show dev X` does not print the device: shown objects
    /// without one belong to the last device printed.
    last_dev: String,
}

impl State {
    fn warn(&mut self, line: usize, m: impl Into<String>) {
        self.warnings.push(Warning {
            line,
            message: m.into(),
        });
    }
}

/// Imports a tc script or tc show output.
pub fn import(text: &str) -> Result<Imported> {
    let mut st = State::default();
    let lines = lex::lines(text, lex::SHELL);
    let mut last_filter: Option<usize> = None;
    for line in &lines {
        let mut c = Cursor::new(line);
        let first = c.peek().expect("non-empty line");
        // `tc … show` output: statistics lines are indented; a u32 filter's
        // keys follow it as indented `match` lines.
        if line.indent > 0 && !is_command(&first.text) {
            if first.text == "match" {
                if let Some(i) = last_filter {
                    shown_match(&mut st, i, line)?;
                }
            }
            continue;
        }
        match first.text.as_str() {
            "qdisc" | "class" | "filter" => {
                st.show_output = true;
                let clean = without_raw(line);
                let mut c = Cursor::new(&clean);
                c.next_word();
                last_filter = shown(&mut st, &first.text, &mut c, &clean)?;
            }
            _ => {
                last_filter = None;
                command(&mut st, &mut c, line)?;
            }
        }
    }
    if st.show_output {
        st.warn(
            0,
            "read from `tc … show` output: tc prints rates and sizes rounded \
             (sprint_rate / sprint_size in tc/tc_util.c), so values are as printed, \
             not necessarily as configured",
        );
    }
    assemble(st)
}

/// `tc -r` (raw) output adds `[hex]` after handles and values: drop it.
fn without_raw(line: &Line) -> Line {
    let raw = |t: &str| t.starts_with('[') && t.ends_with(']');
    let mut l = line.clone();
    l.words.retain(|w| !raw(&w.text));
    for w in &mut l.words {
        if let Some(i) = w.text.find('[') {
            if raw(&w.text[i..]) && i > 0 {
                w.text.truncate(i);
            }
        }
    }
    l
}

fn is_command(w: &str) -> bool {
    w == "tc" || w.ends_with("/tc") || w == "sudo"
}

/// A `tc OBJECT VERB …` line.
fn command(st: &mut State, c: &mut Cursor<'_>, line: &Line) -> Result<()> {
    let w = c.expect("a tc command")?;
    let w = if w.text == "sudo" {
        c.expect("tc after sudo")?
    } else {
        w
    };
    if !is_command(&w.text) {
        if w.text.starts_with('$') {
            return Err(ImportError::at(
                w,
                "a shell variable: expand it first (the importer reads tc lines, it does not run the shell)",
            ));
        }
        return Err(ImportError::at(
            w,
            "expected a tc command (tc qdisc|class|filter add …) or tc show output (qdisc …, class …)",
        ));
    }
    // Global options (-s, -d, -b is not supported).
    while let Some(o) = c.peek() {
        if o.text.starts_with('-') {
            if matches!(
                o.text.as_str(),
                "-s" | "-d" | "-p" | "-i" | "-r" | "-stats" | "-details"
            ) {
                c.next_word();
                continue;
            }
            return Err(ImportError::at(
                o,
                "unsupported tc option (supported: -s, -d)",
            ));
        }
        break;
    }
    let obj = c.expect("qdisc, class or filter")?;
    let obj_name = match obj.text.as_str() {
        "qdisc" | "qd" | "q" => "qdisc",
        "class" | "cl" | "c" => "class",
        "filter" | "f" | "filt" => "filter",
        _ => {
            return Err(ImportError::at(
                obj,
                "expected qdisc, class or filter (other tc objects are not policies)",
            ))
        }
    };
    let verb = c.expect("add, replace, change or del")?;
    match verb.text.as_str() {
        "add" | "replace" | "change" | "ch" | "chg" | "a" | "r" => {}
        "del" | "delete" | "d" => return delete(st, obj_name, c),
        "show" | "list" | "ls" | "s" => {
            st.warn(line.number, "a show command: nothing to import from it");
            return Ok(());
        }
        _ => {
            return Err(ImportError::at(
                verb,
                "expected add, replace, change or del",
            ))
        }
    }
    let replace = verb.text.starts_with('r') || verb.text.starts_with('c');
    match obj_name {
        "qdisc" => {
            let q = qdisc_head(st, c, line, false)?;
            put_qdisc(st, q, replace);
        }
        "class" => {
            let cl = class_head(st, c, line, false)?;
            put_class(st, cl);
        }
        _ => {
            let f = filter(st, c, line, false)?;
            st.filters.push(f);
        }
    }
    Ok(())
}

fn put_qdisc(st: &mut State, q: Qd, replace: bool) {
    let same = |x: &Qd| {
        x.dev == q.dev && (x.parent == q.parent || (q.handle.is_some() && x.handle == q.handle))
    };
    if let Some(i) = st.qdiscs.iter().position(same) {
        if replace || st.qdiscs[i].kind == q.kind {
            st.qdiscs[i] = q;
            return;
        }
    }
    st.qdiscs.push(q);
}

fn put_class(st: &mut State, cl: Cl) {
    if let Some(i) = st
        .classes
        .iter()
        .position(|x| x.dev == cl.dev && x.major == cl.major && x.minor == cl.minor)
    {
        st.classes[i] = cl;
    } else {
        st.classes.push(cl);
    }
}

fn delete(st: &mut State, obj: &str, c: &mut Cursor<'_>) -> Result<()> {
    let mut dev = String::new();
    let mut parent = None;
    let mut id = None;
    while let Some(w) = c.next_word() {
        match w.text.as_str() {
            "dev" => dev = c.expect("a device name")?.text.clone(),
            "root" => parent = Some(Parent::Root),
            "ingress" => parent = Some(Parent::Ingress),
            "parent" => parent = Some(parent_id(c.expect("a parent id")?)?),
            "handle" | "classid" => id = Some(class_id(c.expect("an id")?)?),
            _ => {}
        }
    }
    match obj {
        "qdisc" => {
            let root = st.qdiscs.iter().position(|q| {
                q.dev == dev
                    && (Some(q.parent) == parent || id.is_some_and(|i| q.handle == Some(i.0)))
            });
            if let Some(i) = root {
                if st.qdiscs[i].parent == Parent::Root {
                    st.qdiscs
                        .retain(|q| q.dev != dev || q.parent == Parent::Ingress);
                    st.classes.retain(|q| q.dev != dev);
                    st.filters.retain(|q| q.dev != dev);
                } else {
                    st.qdiscs.remove(i);
                }
            }
        }
        "class" => {
            if let Some((maj, min)) = id {
                st.classes
                    .retain(|x| !(x.dev == dev && x.major == maj && x.minor == min));
            }
        }
        _ => st.filters.retain(|f| f.dev != dev),
    }
    Ok(())
}

/// `1:20` → (1, 0x20); `1:` → (1, 0); `:20` → (0, 0x20). Hexadecimal, as
/// `get_tc_classid` (tc/tc_util.c).
fn class_id(w: &Word) -> Result<(u32, u32)> {
    let bad = || {
        ImportError::at(
            w,
            "expected a class id MAJOR:MINOR in hexadecimal (e.g. 1:20, 1:)",
        )
    };
    let s = w.text.as_str();
    let (a, b) = match s.split_once(':') {
        Some(x) => x,
        None => (s, ""),
    };
    let hex = |x: &str| -> Result<u32> {
        if x.is_empty() {
            return Ok(0);
        }
        let x = x.trim_start_matches("0x");
        u32::from_str_radix(x, 16)
            .ok()
            .filter(|v| *v <= 0xffff)
            .ok_or_else(bad)
    };
    Ok((hex(a)?, hex(b)?))
}

fn parent_id(w: &Word) -> Result<Parent> {
    match w.text.as_str() {
        "root" => Ok(Parent::Root),
        "ffff:" | "ffff:0" | "ingress" => Ok(Parent::Ingress),
        _ => {
            let (a, b) = class_id(w)?;
            Ok(Parent::Class(a, b))
        }
    }
}

/// Minor as the spec's class id: lowercase hex, no prefix (tc prints it so).
fn minor_id(m: u32) -> String {
    format!("{m:x}")
}

/// `[dev D] (root|ingress|parent P) [handle H:] KIND opts…` of a qdisc
/// (`shown`: the `qdisc KIND H: dev D root refcnt 2 …` form).
fn qdisc_head(st: &mut State, c: &mut Cursor<'_>, line: &Line, shown: bool) -> Result<Qd> {
    let mut dev = String::new();
    let mut parent = None;
    let mut handle = None;
    let mut kind: Option<&Word> = None;
    if shown {
        kind = Some(c.expect("the qdisc kind")?);
        handle = Some(class_id(c.expect("the qdisc handle (e.g. 1:)")?)?.0);
    }
    while kind.is_none() || shown {
        let Some(w) = c.peek() else { break };
        match w.text.as_str() {
            "dev" => {
                c.next_word();
                dev = c.expect("a device name")?.text.clone();
            }
            "root" => {
                c.next_word();
                parent = Some(Parent::Root);
            }
            "ingress" if !shown => {
                c.next_word();
                parent = Some(Parent::Ingress);
                kind = Some(w);
            }
            "parent" => {
                c.next_word();
                parent = Some(parent_id(c.expect("a parent id")?)?);
            }
            "handle" if !shown => {
                c.next_word();
                handle = Some(class_id(c.expect("a handle such as 1:")?)?.0);
            }
            "refcnt" if shown => {
                c.next_word();
                c.expect("a count")?;
            }
            "estimator" | "stab" | "ingress_block" | "egress_block" => {
                return Err(ImportError::at(w, "not supported by the importer"))
            }
            _ if shown => break,
            _ => {
                c.next_word();
                kind = Some(w);
            }
        }
    }
    let kind = kind.ok_or_else(|| ImportError::at(c.end(), "expected a qdisc kind"))?;
    let parent = match parent {
        Some(p) => p,
        None if kind.text == "ingress" || kind.text == "clsact" => Parent::Ingress,
        None => {
            return Err(ImportError::at(
                kind,
                "expected root, ingress or parent MAJOR:MINOR before the kind",
            ))
        }
    };
    if kind.text == "ingress" {
        return Ok(Qd {
            dev,
            kind: "ingress".into(),
            handle: Some(0xffff),
            parent: Parent::Ingress,
            params: Vec::new(),
            line: line.clone(),
        });
    }
    let (kind_name, params) = qdisc_opts(st, kind, c, line.number, shown)?;
    Ok(Qd {
        dev,
        kind: kind_name,
        handle,
        parent,
        params,
        line: line.clone(),
    })
}

fn class_head(st: &mut State, c: &mut Cursor<'_>, line: &Line, shown: bool) -> Result<Cl> {
    let mut dev = String::new();
    let mut parent = None;
    let mut id = None;
    let mut kind: Option<&Word> = None;
    if shown {
        kind = Some(c.expect("the class kind")?);
        id = Some(class_id(c.expect("the class id")?)?);
    }
    while let Some(w) = c.peek() {
        match w.text.as_str() {
            "dev" => {
                c.next_word();
                dev = c.expect("a device name")?.text.clone();
            }
            "root" => {
                c.next_word();
                parent = Some(Parent::Root);
            }
            "parent" => {
                c.next_word();
                parent = Some(parent_id(c.expect("a parent id")?)?);
            }
            "classid" if !shown => {
                c.next_word();
                id = Some(class_id(c.expect("a class id such as 1:10")?)?);
            }
            "leaf" if shown => {
                c.next_word();
                c.expect("the leaf qdisc's handle")?;
            }
            _ if shown || kind.is_some() => break,
            _ => {
                c.next_word();
                kind = Some(w);
            }
        }
    }
    let kind =
        kind.ok_or_else(|| ImportError::at(c.end(), "expected a class kind (htb, hfsc, drr)"))?;
    let Some((major, minor)) = id else {
        return Err(ImportError::at(kind, "a class needs classid MAJOR:MINOR"));
    };
    let parent = parent.unwrap_or(Parent::Root);
    let params = class_opts(st, kind, c, line.number, shown)?;
    Ok(Cl {
        dev,
        major,
        minor,
        parent,
        params,
        line: line.clone(),
    })
}

/// A line of show output: `qdisc …`, `class …`, `filter …`. Returns the
/// index of a filter (its `match` lines follow).
fn shown(st: &mut State, obj: &str, c: &mut Cursor<'_>, line: &Line) -> Result<Option<usize>> {
    match obj {
        "qdisc" => {
            let mut q = qdisc_head(st, c, line, true)?;
            inherit_dev(st, &mut q.dev);
            // Kernel defaults the user never set (`noqueue`, `mq`, the
            // per-queue children of mq) are not policies.
            if matches!(
                q.kind.as_str(),
                "noqueue" | "mq" | "fq" | "pfifo_fast_default"
            ) {
                return Ok(None);
            }
            put_qdisc(st, q, true);
            Ok(None)
        }
        "class" => {
            // Classes a qdisc has by construction (tbf's, prio's bands,
            // mq's queues) are not configuration.
            if c.peek()
                .is_some_and(|k| !matches!(k.text.as_str(), "htb" | "hfsc" | "drr"))
            {
                return Ok(None);
            }
            let mut cl = class_head(st, c, line, true)?;
            inherit_dev(st, &mut cl.dev);
            put_class(st, cl);
            Ok(None)
        }
        _ => {
            let mut f = filter(st, c, line, true)?;
            inherit_dev(st, &mut f.dev);
            // The first show line of a u32 filter (`fh 800: ht divisor 1`)
            // is its hash table, not a rule.
            if f.flowid.is_none() && f.classifier.is_empty() {
                return Ok(None);
            }
            st.filters.push(f);
            Ok(Some(st.filters.len() - 1))
        }
    }
}

fn inherit_dev(st: &mut State, dev: &mut String) {
    if dev.is_empty() {
        dev.clone_from(&st.last_dev);
    } else {
        st.last_dev.clone_from(dev);
    }
}

// ---- values ------------------------------------------------------------

fn rate(st: &mut State, w: &Word, line: usize) -> Result<String> {
    if w.text.ends_with('%') {
        return Err(ImportError::at(
            w,
            "a rate in percent of the device's speed: the importer does not know the device; give the rate",
        ));
    }
    let r = parse::parse_rate(&w.text).map_err(|e| ImportError::at(w, e.to_string()))?;
    let lower = w.text.to_ascii_lowercase();
    if lower.ends_with("bps") {
        st.warn(
            line,
            format!(
                "'{}' is in tc's byte units: {} bytes/s = {} bit/s ({}); write '{}' if bits were meant",
                w.text,
                r.bps() / 8,
                r.bps(),
                fmt::rate(r.bps()),
                w.text[..w.text.len() - 3].to_string() + "bit"
            ),
        );
    }
    Ok(fmt::rate(r.bps()))
}

/// A size, with tc's optional `/CELL` (ignored by the kernel's rate code
/// since psched_ratecfg; noted).
fn size(st: &mut State, w: &Word, line: usize) -> Result<String> {
    let (v, cell) = match w.text.split_once('/') {
        Some((v, c)) => (v, Some(c)),
        None => (w.text.as_str(), None),
    };
    let b = parse::parse_size(v).map_err(|e| ImportError::at(w, e.to_string()))?;
    if let Some(c) = cell {
        if c.parse::<u32>().is_err() {
            return Err(ImportError::at(
                w,
                "expected SIZE/CELL with a number of bytes after '/'",
            ));
        }
        if !st.show_output && c != "1" {
            st.warn(
                line,
                format!(
                    "cell size '/{c}' ignored: Linux rate tables no longer use it (psched_ratecfg)"
                ),
            );
        }
    }
    Ok(fmt::size(b.get()))
}

fn time(w: &Word) -> Result<String> {
    let t = parse::parse_time(&w.text).map_err(|e| ImportError::at(w, e.to_string()))?;
    Ok(fmt::time(t.as_ns()))
}

fn count(w: &Word) -> Result<String> {
    w.text
        .parse::<u64>()
        .map(|v| v.to_string())
        .map_err(|_| ImportError::at(w, "expected a whole number"))
}

fn float(w: &Word) -> Result<String> {
    w.text
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|_| w.text.clone())
        .ok_or_else(|| ImportError::at(w, "expected a number such as 0.02"))
}

/// A show-output size that tc prints with a `p` (packets): `1000p`.
fn packets(w: &Word) -> Result<String> {
    let t = w.text.trim_end_matches('p');
    t.parse::<u64>()
        .map(|v| v.to_string())
        .map_err(|_| ImportError::at(w, "expected a number of packets"))
}

fn unsupported(w: &Word, kind: &str, why: &str) -> ImportError {
    ImportError::at(
        w,
        format!("{kind} option '{}' is not supported: {why}", w.text),
    )
}

// ---- qdisc options -------------------------------------------------------

/// Reads a qdisc's options into qoslab's keys for `kind`.
fn qdisc_opts(
    st: &mut State,
    kind: &Word,
    c: &mut Cursor<'_>,
    ln: usize,
    shown: bool,
) -> Result<(String, Vec<(String, String)>)> {
    let k = kind.text.as_str();
    let mut p: Vec<(String, String)> = Vec::new();
    let push = |p: &mut Vec<(String, String)>, key: &str, v: String| {
        p.retain(|(x, _)| x != key);
        p.push((key.to_string(), v));
    };
    let name = match k {
        "tbf" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "rate" => push(&mut p, "rate", rate(st, c.expect("a rate")?, ln)?),
                    "burst" | "buffer" | "maxburst" => {
                        push(&mut p, "burst", size(st, c.expect("a size")?, ln)?)
                    }
                    "limit" => push(&mut p, "limit", size(st, c.expect("a size")?, ln)?),
                    "latency" | "lat" => push(&mut p, "latency", time(c.expect("a time")?)?),
                    "peakrate" => push(&mut p, "peakrate", rate(st, c.expect("a rate")?, ln)?),
                    "mtu" | "minburst" => push(&mut p, "mtu", size(st, c.expect("a size")?, ln)?),
                    "mpu" => push(&mut p, "mpu", size(st, c.expect("a size")?, ln)?),
                    "linklayer" => push(&mut p, "linklayer", linklayer(c.expect("ethernet, atm or adsl")?)?),
                    "overhead" => push(&mut p, "overhead", count(c.expect("bytes")?)?),
                    _ => return Err(unknown_opt(w, "tbf", "rate, burst, limit | latency, peakrate, mtu, mpu")),
                }
            }
            if shown && p.iter().any(|(x, _)| x == "limit") {
                // tc prints `lat` (derived from the limit) always and the
                // limit itself with -r or when lat would be negative: the
                // limit is the kernel's value, lat a rounded view of it.
                p.retain(|(x, _)| x != "latency");
            }
            if !p.iter().any(|(x, _)| x == "rate") || !p.iter().any(|(x, _)| x == "burst") {
                return Err(ImportError::at(
                    kind,
                    "tbf: both \"burst\" and \"rate\" are required (tc/q_tbf.c)",
                ));
            }
            if !p.iter().any(|(x, _)| x == "limit" || x == "latency") {
                return Err(ImportError::at(
                    kind,
                    "tbf: either \"limit\" or \"latency\" is required (tc/q_tbf.c)",
                ));
            }
            "tbf"
        }
        "htb" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "default" => {
                        let d = c.expect("a class minor in hex")?;
                        let v = u32::from_str_radix(d.text.trim_start_matches("0x"), 16)
                            .map_err(|_| ImportError::at(d, "expected a class minor in hexadecimal (tc reads default as hex)"))?;
                        if v != 0 {
                            push(&mut p, "default", minor_id(v));
                        }
                    }
                    "r2q" => push(&mut p, "r2q", count(c.expect("a number")?)?),
                    "direct_qlen" => push(&mut p, "direct_qlen", packets(c.expect("packets")?)?),
                    "direct_packets_stat" if shown => {
                        c.expect("a count")?;
                    }
                    "ver" if shown => {
                        c.expect("a version")?;
                    }
                    "offload" => return Err(unsupported(w, "htb", "hardware offload")),
                    _ => return Err(unknown_opt(w, "htb", "default, r2q, direct_qlen")),
                }
            }
            "htb"
        }
        "hfsc" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "default" => {
                        let d = c.expect("a class minor in hex")?;
                        let v = u32::from_str_radix(d.text.trim_start_matches("0x"), 16)
                            .map_err(|_| ImportError::at(d, "expected a class minor in hexadecimal"))?;
                        if v != 0 {
                            push(&mut p, "default", minor_id(v));
                        }
                    }
                    _ => return Err(unknown_opt(w, "hfsc", "default")),
                }
            }
            "hfsc"
        }
        "sfq" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "quantum" => push(&mut p, "quantum", size(st, c.expect("a size")?, ln)?),
                    "perturb" => {
                        let v = c.expect("seconds")?;
                        let s = if shown { time(v)? } else { format!("{}s", count(v)?) };
                        push(&mut p, "perturb", s)
                    }
                    "limit" => push(&mut p, "limit", packets(c.expect("packets")?)?),
                    "divisor" => push(&mut p, "divisor", count(c.expect("a number")?)?),
                    "flows" => push(&mut p, "flows", count(c.expect("a number")?)?),
                    "depth" => push(&mut p, "depth", count(c.expect("a number")?)?),
                    "headdrop" => push(&mut p, "headdrop", "true".into()),
                    "redflowlimit" | "min" | "max" | "probability" | "ecn" | "harddrop" => {
                        return Err(unsupported(w, "sfq", "SFQ with RED per flow is not modelled"))
                    }
                    _ => return Err(unknown_opt(w, "sfq", "quantum, perturb, limit, divisor, flows, depth, headdrop")),
                }
            }
            "sfq"
        }
        "red" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "limit" => push(&mut p, "limit", size(st, c.expect("a size")?, ln)?),
                    "min" => push(&mut p, "min", size(st, c.expect("a size")?, ln)?),
                    "max" => push(&mut p, "max", size(st, c.expect("a size")?, ln)?),
                    "avpkt" => push(&mut p, "avpkt", size(st, c.expect("a size")?, ln)?),
                    "burst" => push(&mut p, "burst", count(c.expect("packets")?)?),
                    "probability" => push(&mut p, "probability", float(c.expect("a probability")?)?),
                    "bandwidth" => push(&mut p, "bandwidth", rate(st, c.expect("a rate")?, ln)?),
                    "ecn" | "harddrop" | "adaptive" => push(&mut p, &w.text, "true".into()),
                    "nodrop" | "qevent" => return Err(unsupported(w, "red", "not modelled")),
                    _ => return Err(unknown_opt(w, "red", "limit, min, max, avpkt, burst, probability, bandwidth, ecn, harddrop, adaptive")),
                }
            }
            "red"
        }
        "pfifo" | "bfifo" | "pfifo_head_drop" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "limit" => {
                        let v = c.expect("a limit")?;
                        let s = if k == "bfifo" { size(st, v, ln)? } else { packets(v)? };
                        push(&mut p, "limit", s)
                    }
                    _ => return Err(unknown_opt(w, k, "limit")),
                }
            }
            k
        }
        "pfifo_fast" => {
            // tc show prints `bands 3 priomap …`; tc add takes no options.
            let mut priomap = Vec::new();
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "bands" => {
                        let b = c.expect("3")?;
                        if b.text != "3" {
                            return Err(ImportError::at(b, "pfifo_fast has 3 bands"));
                        }
                    }
                    "priomap" => {
                        for _ in 0..16 {
                            priomap.push(count(c.expect("16 band numbers")?)?);
                        }
                    }
                    "multiqueue" => {
                        c.expect("on/off")?;
                    }
                    _ => return Err(unknown_opt(w, "pfifo_fast", "none")),
                }
            }
            st.warn(
                ln,
                "pfifo_fast is modelled as prio with 3 bands and the default priomap, each band a pfifo of 1000 packets (tx_queue_len)",
            );
            if !priomap.is_empty() {
                push(&mut p, "priomap", priomap.join(" "));
            }
            "prio"
        }
        "prio" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "bands" => push(&mut p, "bands", count(c.expect("a number")?)?),
                    "priomap" => {
                        let mut v = Vec::new();
                        while let Some(x) = c.peek() {
                            if x.text.parse::<u8>().is_err() {
                                break;
                            }
                            v.push(x.text.clone());
                            c.next_word();
                        }
                        if v.len() != 16 {
                            return Err(ImportError::at(w, "priomap needs 16 band numbers"));
                        }
                        push(&mut p, "priomap", v.join(" "));
                    }
                    "multiqueue" => return Err(unsupported(w, "prio", "multiqueue")),
                    _ => return Err(unknown_opt(w, "prio", "bands, priomap")),
                }
            }
            "prio"
        }
        "drr" => {
            if let Some(w) = c.next_word() {
                return Err(unknown_opt(w, "drr", "none (quantum is a class option)"));
            }
            "drr"
        }
        "fq_codel" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "limit" => push(&mut p, "limit", packets(c.expect("packets")?)?),
                    "flows" => push(&mut p, "flows", count(c.expect("a number")?)?),
                    "target" => push(&mut p, "target", time(c.expect("a time")?)?),
                    "interval" => push(&mut p, "interval", time(c.expect("a time")?)?),
                    "quantum" => push(&mut p, "quantum", size(st, c.expect("a size")?, ln)?),
                    "ecn" => push(&mut p, "ecn", "true".into()),
                    "noecn" => push(&mut p, "ecn", "false".into()),
                    "drop_batch" => push(&mut p, "drop_batch", count(c.expect("a number")?)?),
                    "memory_limit" if shown => {
                        c.expect("a size")?;
                    }
                    "ce_threshold" | "memory_limit" | "ce_threshold_selector" => {
                        return Err(unsupported(w, "fq_codel", "not modelled"))
                    }
                    _ => return Err(unknown_opt(w, "fq_codel", "limit, flows, target, interval, quantum, ecn, noecn, drop_batch")),
                }
            }
            "fq_codel"
        }
        "codel" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "limit" => push(&mut p, "limit", packets(c.expect("packets")?)?),
                    "target" => push(&mut p, "target", time(c.expect("a time")?)?),
                    "interval" => push(&mut p, "interval", time(c.expect("a time")?)?),
                    "ce_threshold" => push(&mut p, "ce_threshold", time(c.expect("a time")?)?),
                    "ecn" => push(&mut p, "ecn", "true".into()),
                    "noecn" => push(&mut p, "ecn", "false".into()),
                    _ => return Err(unknown_opt(w, "codel", "limit, target, interval, ce_threshold, ecn, noecn")),
                }
            }
            "codel"
        }
        "pie" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "limit" => push(&mut p, "limit", packets(c.expect("packets")?)?),
                    "target" => push(&mut p, "target", time(c.expect("a time")?)?),
                    "tupdate" => push(&mut p, "tupdate", time(c.expect("a time")?)?),
                    "alpha" => push(&mut p, "alpha", count(c.expect("a number")?)?),
                    "beta" => push(&mut p, "beta", count(c.expect("a number")?)?),
                    "ecn" => push(&mut p, "ecn", "true".into()),
                    "noecn" => push(&mut p, "ecn", "false".into()),
                    "bytemode" => push(&mut p, "bytemode", "true".into()),
                    "nobytemode" => push(&mut p, "bytemode", "false".into()),
                    "dq_rate_estimator" | "no_dq_rate_estimator" => {
                        return Err(unsupported(w, "pie", "the dequeue-rate estimator is not modelled (RFC 8033 timestamps are)"))
                    }
                    _ => return Err(unknown_opt(w, "pie", "limit, target, tupdate, alpha, beta, ecn, bytemode")),
                }
            }
            "pie"
        }
        "netem" => return Err(netem(kind, c)),
        "clsact" => {
            return Err(ImportError::at(
                kind,
                "clsact is not supported: use the ingress qdisc with a police filter",
            ))
        }
        _ => {
            return Err(ImportError::at(
                kind,
                "qdisc kind not supported by the importer (supported: tbf, htb, hfsc, sfq, red, pfifo, bfifo, pfifo_head_drop, pfifo_fast, prio, drr, fq_codel, codel, pie, ingress; netem's delay/loss/rate go on the link)",
            ))
        }
    };
    Ok((name.to_string(), p))
}

fn unknown_opt(w: &Word, kind: &str, valid: &str) -> ImportError {
    ImportError::at(w, format!("unknown {kind} option (expected {valid})"))
}

/// tc's `linklayer` word (tc/tc_core.c `get_linklayer`: `adsl` is ATM's
/// alias), as the conditioners' `linklayer` parameter takes it.
fn linklayer(w: &Word) -> Result<String> {
    match w.text.as_str() {
        "ethernet" | "atm" | "adsl" => Ok(w.text.clone()),
        _ => Err(ImportError::at(
            w,
            "expected a linklayer: ethernet, atm or adsl",
        )),
    }
}

/// netem: delay, loss and rate are the link's own settings in qoslab; name
/// them instead of importing a policy.
fn netem(kind: &Word, c: &mut Cursor<'_>) -> ImportError {
    let mut link = Vec::new();
    let mut other = None;
    while let Some(w) = c.next_word() {
        match w.text.as_str() {
            "delay" => {
                if let Some(v) = c.next_word() {
                    link.push(format!("delay = \"{}\"", v.text));
                }
                if let Some(j) = c.peek() {
                    if parse::parse_time(&j.text).is_ok() && other.is_none() {
                        other = Some(format!("jitter {}", j.text));
                    }
                }
            }
            "loss" => {
                let v = c.next_word();
                let v = match v {
                    Some(x) if x.text == "random" => c.next_word(),
                    x => x,
                };
                if let Some(v) = v {
                    let pct = v
                        .text
                        .trim_end_matches('%')
                        .parse::<f64>()
                        .unwrap_or(f64::NAN);
                    link.push(format!("loss = {}", pct / 100.0));
                }
            }
            "rate" => {
                if let Some(v) = c.next_word() {
                    link.push(format!("rate = \"{}\"", v.text));
                }
            }
            "limit" => {
                c.next_word();
            }
            x if other.is_none() && x.parse::<f64>().is_err() => other = Some(x.to_string()),
            _ => {}
        }
    }
    let mut m =
        String::from("netem is not a policy in qoslab: its delay, loss and rate are the link's");
    if !link.is_empty() {
        m += &format!(" — write {} in the link's table", link.join(", "));
    }
    if let Some(o) = other {
        m += &format!("; '{o}' (jitter, correlation, reordering, duplication, corruption, slots) is not modelled");
    }
    ImportError::at(kind, m)
}

// ---- class options ---------------------------------------------------------

fn class_opts(
    st: &mut State,
    kind: &Word,
    c: &mut Cursor<'_>,
    ln: usize,
    shown: bool,
) -> Result<Vec<(String, String)>> {
    let mut p: Vec<(String, String)> = Vec::new();
    let push = |p: &mut Vec<(String, String)>, key: &str, v: String| {
        p.retain(|(x, _)| x != key);
        p.push((key.to_string(), v));
    };
    match kind.text.as_str() {
        "htb" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "rate" => push(&mut p, "rate", rate(st, c.expect("a rate")?, ln)?),
                    "ceil" => push(&mut p, "ceil", rate(st, c.expect("a rate")?, ln)?),
                    "burst" | "buffer" | "maxburst" => {
                        push(&mut p, "burst", size(st, c.expect("a size")?, ln)?)
                    }
                    "cburst" | "cbuffer" | "cmaxburst" => {
                        push(&mut p, "cburst", size(st, c.expect("a size")?, ln)?)
                    }
                    "prio" => push(&mut p, "prio", count(c.expect("a priority")?)?),
                    "quantum" => push(&mut p, "quantum", count(c.expect("bytes")?)?),
                    "mtu" => push(&mut p, "mtu", size(st, c.expect("a size")?, ln)?),
                    "mpu" => {
                        let v = size(st, c.expect("a size")?, ln)?;
                        // show output prints `mpu 0b` after burst and cburst.
                        if v != "0B" {
                            push(&mut p, "mpu", v);
                        }
                    }
                    "linklayer" => {
                        let ll = linklayer(c.expect("ethernet, atm or adsl")?)?;
                        // show output prints `linklayer ethernet`, the default.
                        if ll != "ethernet" {
                            push(&mut p, "linklayer", ll);
                        }
                    }
                    "level" if shown => {
                        c.expect("a level")?;
                    }
                    "overhead" => push(&mut p, "overhead", count(c.expect("bytes")?)?),
                    _ => return Err(unknown_opt(
                        w,
                        "htb class",
                        "rate, ceil, burst, cburst, prio, quantum, mtu, mpu, overhead, linklayer",
                    )),
                }
            }
            if !p.iter().any(|(k, _)| k == "rate") {
                return Err(ImportError::at(
                    kind,
                    "htb: \"rate\" is required (tc/q_htb.c)",
                ));
            }
        }
        "hfsc" => {
            while let Some(w) = c.next_word() {
                let key = match w.text.as_str() {
                    "sc" | "rt" | "ls" | "ul" => w.text.clone(),
                    _ => return Err(unknown_opt(w, "hfsc class", "sc, rt, ls, ul")),
                };
                let curve = hfsc_curve(st, c, w, ln)?;
                if key == "sc" {
                    push(&mut p, "rt", curve.clone());
                    push(&mut p, "ls", curve);
                } else {
                    push(&mut p, &key, curve);
                }
            }
            if p.is_empty() {
                return Err(ImportError::at(
                    kind,
                    "hfsc: a class needs sc, rt, ls or ul (tc/q_hfsc.c)",
                ));
            }
        }
        "drr" => {
            while let Some(w) = c.next_word() {
                match w.text.as_str() {
                    "quantum" => push(&mut p, "quantum", size(st, c.expect("a size")?, ln)?),
                    _ => return Err(unknown_opt(w, "drr class", "quantum")),
                }
            }
        }
        "prio" if shown => while c.next_word().is_some() {},
        _ => {
            return Err(ImportError::at(
                kind,
                "class kind not supported (htb, hfsc, drr; prio classes are implicit)",
            ))
        }
    }
    Ok(p)
}

/// An HFSC service curve, normalised to `m1 R d T m2 R` (tc/q_hfsc.c
/// `hfsc_get_sc1` / `hfsc_get_sc2`: the `umax U dmax D rate R` form
/// becomes a concave curve m1 = ⌈U/D⌉ when that is above R, else a convex
/// one with m1 = 0 and d = ⌈D − U/R⌉).
fn hfsc_curve(st: &mut State, c: &mut Cursor<'_>, at: &Word, ln: usize) -> Result<String> {
    let first = c.peek().ok_or_else(|| {
        ImportError::at(
            c.end(),
            "expected a service curve: [m1 R] [d T] m2 R, or [umax S] [dmax T] rate R",
        )
    })?;
    let mut m1 = 0u64;
    let mut d_us = 0u64;
    if matches!(first.text.as_str(), "m1" | "d" | "m2") {
        if c.eat("m1") {
            m1 = rate_bps(st, c.expect("a rate")?, ln)?;
        }
        if c.eat("d") {
            d_us = parse::parse_time(&c.expect("a time")?.text)
                .map_err(|e| ImportError::at(&c.words[c.pos - 1], e.to_string()))?
                .as_ns()
                / 1000;
        }
        if !c.eat("m2") {
            return Err(ImportError::at(c.peek().unwrap_or(at), "expected m2 RATE"));
        }
        let m2 = rate_bps(st, c.expect("a rate")?, ln)?;
        return Ok(curve(m1, d_us, m2));
    }
    let mut umax = 0u64;
    let mut dmax_us = 0u64;
    if c.eat("umax") {
        let w = c.expect("a size")?;
        umax = parse::parse_size(&w.text)
            .map_err(|e| ImportError::at(w, e.to_string()))?
            .get();
    }
    if c.eat("dmax") {
        let w = c.expect("a time")?;
        dmax_us = parse::parse_time(&w.text)
            .map_err(|e| ImportError::at(w, e.to_string()))?
            .as_ns()
            / 1000;
    }
    if !c.eat("rate") {
        return Err(ImportError::at(
            c.peek().unwrap_or(at),
            "expected rate RATE (or m1/d/m2)",
        ));
    }
    let rw = c.expect("a rate")?;
    let rate_b = rate_bps(st, rw, ln)?;
    if umax != 0 && dmax_us == 0 {
        return Err(ImportError::at(at, "HFSC: umax given but dmax is zero."));
    }
    // tc works in bytes/s here (get_rate); umax bytes, dmax µs.
    let rate_bytes = rate_b / 8;
    let m1_bytes = (umax as u128 * 1_000_000).div_ceil(dmax_us.max(1) as u128);
    if dmax_us != 0 && m1_bytes > rate_bytes as u128 {
        let m1 = (m1_bytes * 8).min(u64::MAX as u128) as u64;
        Ok(curve(m1, dmax_us, rate_b))
    } else {
        if rate_bytes == 0 {
            return Err(ImportError::at(
                rw,
                "HFSC: rate must be above 0 with umax/dmax",
            ));
        }
        // ceil(dmax - umax·1e6/rate) in µs, never below 0.
        let sub = (umax as f64) * 1e6 / rate_bytes as f64;
        let d = ((dmax_us as f64) - sub).ceil().max(0.0) as u64;
        Ok(curve(0, d, rate_b))
    }
}

fn curve(m1_bps: u64, d_us: u64, m2_bps: u64) -> String {
    format!(
        "m1 {} d {}us m2 {}",
        fmt::rate(m1_bps),
        d_us,
        fmt::rate(m2_bps)
    )
}

fn rate_bps(st: &mut State, w: &Word, ln: usize) -> Result<u64> {
    let s = rate(st, w, ln)?;
    Ok(parse::parse_rate(&s).expect("re-spelled").bps())
}

// ---- filters ---------------------------------------------------------------

/// `[dev D] [parent P] [protocol ip] [prio N] [handle H] u32|matchall|basic
/// … [flowid|classid X] [police …|action police …]`.
fn filter(st: &mut State, c: &mut Cursor<'_>, line: &Line, shown: bool) -> Result<Flt> {
    let mut dev = String::new();
    let mut parent = None;
    let mut prio = 0u32;
    let mut kind: Option<&Word> = None;
    while kind.is_none() {
        let Some(w) = c.next_word() else { break };
        match w.text.as_str() {
            "dev" => dev = c.expect("a device name")?.text.clone(),
            "parent" => parent = Some(parent_id(c.expect("a parent")?)?),
            "root" => parent = Some(Parent::Root),
            "ingress" => parent = Some(Parent::Ingress),
            "protocol" => {
                let p = c.expect("a protocol")?;
                if !matches!(p.text.as_str(), "ip" | "all" | "0x0800") {
                    return Err(ImportError::at(
                        p,
                        "only protocol ip (IPv4) filters are modelled",
                    ));
                }
            }
            "prio" | "pref" | "priority" => {
                let v = c.expect("a priority")?;
                prio = v
                    .text
                    .parse()
                    .map_err(|_| ImportError::at(v, "expected a number"))?;
            }
            "handle" | "chain" | "fh" | "order" | "key" | "ht" | "bkt" => {
                c.expect("a value")?;
            }
            "estimator" => return Err(ImportError::at(w, "estimator is not supported")),
            _ => kind = Some(w),
        }
    }
    let kind =
        kind.ok_or_else(|| ImportError::at(c.end(), "expected a filter kind (u32, matchall)"))?;
    let mut tuple: Vec<String> = Vec::new();
    let mut dscp: Option<String> = None;
    let mut flowid = None;
    let mut police = None;
    let mut any = false;
    match kind.text.as_str() {
        "u32" | "matchall" | "basic" => {}
        _ => {
            return Err(ImportError::at(
                kind,
                "filter kind not supported (u32, matchall, basic without ematch)",
            ))
        }
    }
    while let Some(w) = c.next_word() {
        match w.text.as_str() {
            "match" if kind.text == "u32" => u32_match(c, w, &mut tuple, &mut dscp, &mut any)?,
            "flowid" | "classid" => {
                let v = c.expect("a class id")?;
                let (a, b) = class_id(v)?;
                flowid = Some((a, b, v.clone()));
            }
            "police" => police = Some(police_action(st, c, line.number)?),
            "action" | "act" => {
                let a = c.expect("an action")?;
                if a.text != "police" {
                    return Err(ImportError::at(a, "only the police action is modelled"));
                }
                police = Some(police_action(st, c, line.number)?);
            }
            "divisor" | "link" | "offset" | "hashkey" | "sample" | "ematch" | "skip_hw"
            | "skip_sw"
                if !shown || matches!(w.text.as_str(), "ematch") =>
            {
                return Err(ImportError::at(
                    w,
                    format!(
                        "u32 '{}' (hash tables, links, offsets, ematch) is not supported",
                        w.text
                    ),
                ));
            }
            _ if shown => {}
            _ => {
                return Err(ImportError::at(
                    w,
                    "expected match, flowid, classid or police",
                ))
            }
        }
    }
    let classifier = match (tuple.is_empty(), &dscp) {
        (true, None) if any || kind.text != "u32" || !shown => "any".to_string(),
        (true, None) => String::new(),
        (false, None) => tuple.join(" "),
        (true, Some(d)) => format!("dscp {d}"),
        (false, Some(_)) => {
            return Err(ImportError::at(
                kind,
                "a u32 filter on dsfield together with addresses/ports/protocol: qoslab's classifiers match either the 5-tuple or the DSCP; split it",
            ))
        }
    };
    let parent = match parent {
        Some(Parent::Ingress) => 0xffff,
        Some(Parent::Class(maj, _)) => maj,
        Some(Parent::Root) | None => 0,
    };
    Ok(Flt {
        dev,
        parent,
        prio,
        seq: st.filters.len(),
        classifier,
        flowid,
        police,
        line: line.clone(),
    })
}

fn hex_or_dec(w: &Word) -> Result<u64> {
    let t = w.text.as_str();
    let r = if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else {
        t.parse::<u64>()
    };
    r.map_err(|_| ImportError::at(w, "expected a number (decimal or 0x hex)"))
}

/// `match ip src|dst A/L`, `match ip sport|dport N MASK`, `match ip
/// protocol N MASK`, `match ip dsfield|tos V MASK`, `match u32 0 0` (tc/f_u32.c).
fn u32_match(
    c: &mut Cursor<'_>,
    at: &Word,
    tuple: &mut Vec<String>,
    dscp: &mut Option<String>,
    any: &mut bool,
) -> Result<()> {
    let sel = c.expect("ip or u32")?;
    match sel.text.as_str() {
        "ip" => {
            let f = c.expect("src, dst, sport, dport, protocol, dsfield or tos")?;
            match f.text.as_str() {
                "src" | "dst" => {
                    let v = c.expect("an address A.B.C.D/LEN")?;
                    tuple.push(format!("{} {}", f.text, v.text));
                }
                "sport" | "dport" => {
                    let v = c.expect("a port")?;
                    let m = c.expect("a mask such as 0xffff")?;
                    let (pv, pm) = (hex_or_dec(v)?, hex_or_dec(m)?);
                    if pm > 0xffff || pv > 0xffff {
                        return Err(ImportError::at(v, "a port and mask are 16 bits"));
                    }
                    tuple.push(format!("{} {}/0x{:x}", f.text, pv & pm, pm));
                }
                "protocol" => {
                    let v = c.expect("a protocol number")?;
                    let m = c.expect("a mask (0xff)")?;
                    if hex_or_dec(m)? != 0xff {
                        return Err(ImportError::at(
                            m,
                            "only the full protocol mask 0xff is modelled",
                        ));
                    }
                    tuple.push(format!("proto {}", hex_or_dec(v)?));
                }
                "dsfield" | "tos" => {
                    let v = c.expect("a value")?;
                    let m = c.expect("a mask (0xfc)")?;
                    let (tv, tm) = (hex_or_dec(v)?, hex_or_dec(m)?);
                    if tm != 0xfc || tv & 0x3 != 0 || tv > 0xff {
                        return Err(ImportError::at(
                            m,
                            "only the DSCP bits (mask 0xfc) of dsfield are modelled",
                        ));
                    }
                    *dscp = Some((tv >> 2).to_string());
                }
                _ => {
                    return Err(ImportError::at(
                        f,
                        "u32 ip match not supported (src, dst, sport, dport, protocol, dsfield)",
                    ))
                }
            }
        }
        "u32" | "u16" | "u8" => {
            let v = c.expect("a value")?;
            let m = c.expect("a mask")?;
            if hex_or_dec(v)? == 0 && hex_or_dec(m)? == 0 {
                *any = true;
                if c.eat("at") {
                    c.expect("an offset")?;
                }
                return Ok(());
            }
            return Err(ImportError::at(sel, "raw u32 matches are supported only as 'match u32 0 0' (all packets); use match ip …"));
        }
        _ => return Err(ImportError::at(at, "expected match ip … or match u32 0 0")),
    }
    Ok(())
}

/// `tc filter show` prints u32 keys as `match VALUE/MASK at OFFSET` over
/// the IPv4 header (f_u32.c `print_raw`); offsets 0 (ToS), 8 (protocol),
/// 12, 16 (addresses), 20 (ports) are mapped back.
fn shown_match(st: &mut State, i: usize, line: &Line) -> Result<()> {
    let mut c = Cursor::new(line);
    c.next_word();
    let vm = c.expect("VALUE/MASK")?;
    if !c.eat("at") {
        return Err(ImportError::at(
            c.peek().unwrap_or(vm),
            "expected 'at OFFSET'",
        ));
    }
    let off_w = c.expect("an offset")?;
    let bad = || ImportError::at(vm, "expected 8-digit hex VALUE/MASK");
    let (v, m) = vm.text.split_once('/').ok_or_else(bad)?;
    let v = u32::from_str_radix(v, 16).map_err(|_| bad())?;
    let m = u32::from_str_radix(m, 16).map_err(|_| bad())?;
    let off: i64 = off_w
        .text
        .parse()
        .map_err(|_| ImportError::at(off_w, "expected a number"))?;
    let f = &mut st.filters[i];
    let mut add = |s: String| {
        if f.classifier.is_empty() || f.classifier == "any" {
            f.classifier = s;
        } else {
            f.classifier = format!("{} {s}", f.classifier);
        }
    };
    let ip = |x: u32| {
        format!(
            "{}.{}.{}.{}",
            x >> 24,
            (x >> 16) & 0xff,
            (x >> 8) & 0xff,
            x & 0xff
        )
    };
    match off {
        _ if m == 0 => {
            if f.classifier.is_empty() {
                f.classifier = "any".into();
            }
        }
        12 | 16 => {
            if m.leading_ones() + m.trailing_zeros() != 32 {
                return Err(ImportError::at(vm, "a non-prefix address mask is not supported"));
            }
            let key = if off == 12 { "src" } else { "dst" };
            add(format!("{key} {}/{}", ip(v), m.leading_ones()));
        }
        20 => {
            let (sm, dm) = (m >> 16, m & 0xffff);
            if sm != 0 {
                add(format!("sport {}/0x{sm:x}", v >> 16));
            }
            if dm != 0 {
                add(format!("dport {}/0x{dm:x}", v & 0xffff));
            }
        }
        8 if m == 0x00ff_0000 => add(format!("proto {}", (v >> 16) & 0xff)),
        0 if m == 0x00fc_0000 => {
            if f.classifier.is_empty() || f.classifier == "any" {
                f.classifier = format!("dscp {}", (v >> 18) & 0x3f);
            } else {
                return Err(ImportError::at(vm, "a dsfield key together with 5-tuple keys is not supported"));
            }
        }
        _ => {
            return Err(ImportError::at(
                off_w,
                "a u32 key at this offset/mask is not modelled (ToS 0, protocol 8, addresses 12/16, ports 20)",
            ))
        }
    }
    if !matches!(off, 0 | 8 | 12 | 16 | 20) && m != 0 {
        st.warn(line.number, "unexpected u32 offset");
    }
    Ok(())
}

/// tc `police` (tc/m_police.c) → qoslab's `linux-police` meter (act_police:
/// time tokens). The exceed action is the bare control word (`drop`) or the
/// first half of `conform-exceed EXCEED[/CONFORM]`; tc's default is
/// `reclassify`, which qoslab does not model.
fn police_action(st: &mut State, c: &mut Cursor<'_>, ln: usize) -> Result<MeterSpec> {
    let mut p: Vec<(String, String)> = Vec::new();
    let start = c.words.get(c.pos.saturating_sub(1)).cloned();
    let mut exceed: Option<(String, Word)> = None;
    let mut conform: Option<(String, Word)> = None;
    while let Some(w) = c.peek() {
        match w.text.as_str() {
            "rate" => {
                c.next_word();
                p.push(("rate".into(), rate(st, c.expect("a rate")?, ln)?));
            }
            "burst" | "buffer" | "maxburst" => {
                c.next_word();
                p.push(("burst".into(), size(st, c.expect("a size")?, ln)?));
            }
            "mtu" | "minburst" => {
                c.next_word();
                p.push(("mtu".into(), size(st, c.expect("a size")?, ln)?));
            }
            "peakrate" => {
                c.next_word();
                p.push(("peakrate".into(), rate(st, c.expect("a rate")?, ln)?));
            }
            "mpu" => {
                c.next_word();
                p.push(("mpu".into(), size(st, c.expect("a size")?, ln)?));
            }
            "overhead" => {
                c.next_word();
                p.push(("overhead".into(), count(c.expect("bytes")?)?));
            }
            "linklayer" => {
                c.next_word();
                p.push((
                    "linklayer".into(),
                    linklayer(c.expect("ethernet, atm or adsl")?)?,
                ));
            }
            "index" => {
                c.next_word();
                c.expect("an index")?;
            }
            "drop" | "shot" | "ok" | "pass" | "continue" | "pipe" | "reclassify" => {
                c.next_word();
                exceed = Some((w.text.clone(), w.clone()));
            }
            "conform-exceed" => {
                c.next_word();
                let v = c.expect("EXCEED[/CONFORM]")?;
                let (e, k) = match v.text.split_once('/') {
                    Some((e, k)) => (e.to_string(), Some(k.to_string())),
                    None => (v.text.clone(), None),
                };
                exceed = Some((e, v.clone()));
                if let Some(k) = k {
                    conform = Some((k, v.clone()));
                }
            }
            "avrate" | "pkts_rate" | "pkts_burst" | "goto" => {
                return Err(ImportError::at(
                    w,
                    format!("police {} is not modelled", w.text),
                ))
            }
            _ => break,
        }
    }
    let map = |(a, w): (String, Word)| -> Result<String> {
        match a.as_str() {
            "drop" | "shot" => Ok("drop".into()),
            "ok" | "pass" | "pipe" | "continue" => Ok("transmit".into()),
            _ => Err(ImportError::at(
                &w,
                format!("police action '{a}' is not modelled (drop, ok/pass/pipe/continue)"),
            )),
        }
    };
    let start = start.unwrap_or_else(|| c.end().clone());
    let exceed = exceed.ok_or_else(|| {
        ImportError::at(
            &start,
            "police without drop/pass: tc's default exceed action is reclassify, which qoslab does not model; add drop",
        )
    })?;
    if !p.iter().any(|(k, _)| k == "rate") || !p.iter().any(|(k, _)| k == "burst") {
        return Err(ImportError::at(
            &start,
            "police needs rate and burst (tc/m_police.c)",
        ));
    }
    p.push(("exceed".into(), map(exceed)?));
    if let Some(k) = conform {
        p.push(("conform".into(), map(k)?));
    }
    Ok(MeterSpec {
        kind: "linux-police".into(),
        params: p,
    })
}

// ---- assembly --------------------------------------------------------------

fn assemble(st: State) -> Result<Imported> {
    let mut out = Imported {
        policies: Vec::new(),
        warnings: st.warnings.clone(),
    };
    let mut devs: Vec<String> = Vec::new();
    for q in &st.qdiscs {
        if !devs.contains(&q.dev) {
            devs.push(q.dev.clone());
        }
    }
    for f in &st.filters {
        if !devs.contains(&f.dev) {
            devs.push(f.dev.clone());
        }
    }
    for dev in devs {
        let attach = if dev.is_empty() {
            "dev ?".to_string()
        } else {
            format!("dev {dev}")
        };
        if let Some(root) = st
            .qdiscs
            .iter()
            .find(|q| q.dev == dev && q.parent == Parent::Root)
        {
            let mut source = Vec::new();
            let mut used = vec![false; st.filters.len()];
            let node = node(&st, root, &mut source, &mut used)?;
            for (i, f) in st.filters.iter().enumerate() {
                if f.dev == dev && f.parent != 0xffff && !used[i] {
                    return Err(ImportError::at(
                        &f.line.words[0],
                        format!(
                            "filter attached to {:x}:, which is not a classful qdisc of dev {dev}",
                            f.parent
                        ),
                    ));
                }
            }
            let spec = flatten(node);
            out.policies.push(ImportedPolicy {
                attach: attach.clone(),
                direction: Direction::Egress,
                spec,
                source,
            });
        }
        let ingress: Vec<&Flt> = st
            .filters
            .iter()
            .filter(|f| f.dev == dev && f.parent == 0xffff)
            .collect();
        if !ingress.is_empty() {
            if !st
                .qdiscs
                .iter()
                .any(|q| q.dev == dev && q.kind == "ingress")
            {
                return Err(ImportError::at(
                    &ingress[0].line.words[0],
                    "a filter on parent ffff: needs the ingress qdisc (tc qdisc add dev … ingress)",
                ));
            }
            if ingress.len() > 1 {
                return Err(ImportError::at(
                    &ingress[1].line.words[0],
                    "qoslab's ingress is one policer for all traffic; several ingress filters are not modelled",
                ));
            }
            let f = ingress[0];
            let Some(m) = &f.police else {
                return Err(ImportError::at(
                    &f.line.words[0],
                    "an ingress filter without police does nothing qoslab models",
                ));
            };
            if f.classifier != "any" {
                return Err(ImportError::at(
                    &f.line.words[0],
                    format!("qoslab's ingress policer meters all traffic; this filter matches only '{}'", f.classifier),
                ));
            }
            let mut source: Vec<String> = st
                .qdiscs
                .iter()
                .filter(|q| q.dev == dev && q.kind == "ingress")
                .map(|q| q.line.text.clone())
                .collect();
            source.push(f.line.text.clone());
            out.policies.push(ImportedPolicy {
                attach,
                direction: Direction::Ingress,
                spec: PolicySpec::Police(m.clone()),
                source,
            });
        }
    }
    Ok(out)
}

/// The simplest policy form for a tree: a tbf alone is a flat shaper, a
/// FIFO alone a flat FIFO (as a scenario writes them by hand).
fn flatten(root: QdiscSpec) -> PolicySpec {
    let plain = root.classes.is_empty() && root.filters.is_empty() && root.child.is_none();
    if plain && root.kind == "tbf" {
        return PolicySpec::Shape(ShaperSpec {
            kind: root.kind,
            params: root.params,
        });
    }
    if plain && (root.kind == "pfifo" || root.kind == "bfifo") {
        let limit = root
            .params
            .iter()
            .find(|(k, _)| k == "limit")
            .map(|(_, v)| v.clone());
        let limit = match (root.kind.as_str(), limit) {
            ("pfifo", l) => l
                .and_then(|l| l.parse::<u32>().ok())
                .map(FifoLimit::Packets)
                .unwrap_or(FifoLimit::Packets(1000)),
            (_, l) => l
                .and_then(|l| parse::parse_size(&l).ok())
                .map(|b| FifoLimit::Bytes(b.get()))
                .unwrap_or(FifoLimit::Bytes(1000 * 1514)),
        };
        return PolicySpec::Fifo(FifoSpec {
            limit,
            head_drop: false,
        });
    }
    PolicySpec::Tree(Box::new(TreeSpec { police: None, root }))
}

/// Builds the spec of qdisc `q` with its classes, filters and children.
fn node(st: &State, q: &Qd, source: &mut Vec<String>, used: &mut [bool]) -> Result<QdiscSpec> {
    source.push(q.line.text.clone());
    let mut spec = QdiscSpec {
        kind: q.kind.clone(),
        params: q.params.clone(),
        classes: Vec::new(),
        filters: Vec::new(),
        child: None,
    };
    let Some(h) = q.handle else {
        return if st
            .classes
            .iter()
            .any(|c| c.dev == q.dev && c.parent != Parent::Root)
            && matches!(q.kind.as_str(), "htb" | "hfsc" | "drr" | "prio")
        {
            Err(ImportError::at(
                &q.line.words[0],
                "a classful qdisc needs a handle (handle 1:)",
            ))
        } else {
            Ok(spec)
        };
    };
    let child_of = |maj: u32, min: u32| {
        st.qdiscs
            .iter()
            .find(|x| x.dev == q.dev && x.parent == Parent::Class(maj, min))
    };
    match q.kind.as_str() {
        "htb" | "hfsc" | "drr" => {
            for cl in st.classes.iter().filter(|c| c.dev == q.dev && c.major == h) {
                source.push(cl.line.text.clone());
                let parent = match cl.parent {
                    Parent::Class(maj, min) if maj == h && min != 0 => Some(minor_id(min)),
                    Parent::Class(maj, 0) if maj == h => None,
                    Parent::Root => None,
                    _ => {
                        return Err(ImportError::at(
                            &cl.line.words[0],
                            format!(
                                "class {h:x}:{:x} has a parent outside qdisc {h:x}:",
                                cl.minor
                            ),
                        ))
                    }
                };
                if parent.is_some() && q.kind == "drr" {
                    return Err(ImportError::at(&cl.line.words[0], "drr classes are flat"));
                }
                let qdisc = match child_of(h, cl.minor) {
                    Some(cq) => Some(node(st, cq, source, used)?),
                    None => None,
                };
                spec.classes.push(ClassSpec {
                    id: minor_id(cl.minor),
                    parent,
                    params: cl.params.clone(),
                    police: None,
                    qdisc,
                });
            }
            if spec.classes.is_empty() {
                return Err(ImportError::at(
                    &q.line.words[0],
                    format!("{} qdisc {h:x}: has no classes (tc class add … parent {h:x}: classid {h:x}:N {} …)", q.kind, q.kind),
                ));
            }
        }
        "prio" => {
            let bands = q
                .params
                .iter()
                .find(|(k, _)| k == "bands")
                .and_then(|(_, v)| v.parse::<u32>().ok())
                .unwrap_or(3);
            for b in 1..=bands {
                if let Some(cq) = child_of(h, b) {
                    let qd = node(st, cq, source, used)?;
                    spec.classes.push(ClassSpec {
                        id: b.to_string(),
                        parent: None,
                        params: Vec::new(),
                        police: None,
                        qdisc: Some(qd),
                    });
                }
            }
        }
        "tbf" => {
            if let Some(cq) = st
                .qdiscs
                .iter()
                .find(|x| x.dev == q.dev && matches!(x.parent, Parent::Class(maj, _) if maj == h))
            {
                spec.child = Some(Box::new(node(st, cq, source, used)?));
            }
        }
        _ => {}
    }
    // Filters attached to this qdisc, in tc's order: by prio, then as added.
    let mut mine: Vec<(usize, &Flt)> = st
        .filters
        .iter()
        .enumerate()
        .filter(|(_, f)| f.dev == q.dev && f.parent == h)
        .collect();
    mine.sort_by_key(|(_, f)| (f.prio, f.seq));
    for (i, f) in mine {
        used[i] = true;
        source.push(f.line.text.clone());
        if !matches!(q.kind.as_str(), "htb" | "hfsc" | "drr" | "prio") {
            return Err(ImportError::at(
                &f.line.words[0],
                format!("{} has no classes to filter into", q.kind),
            ));
        }
        let Some((maj, min, w)) = &f.flowid else {
            return Err(ImportError::at(
                &f.line.words[0],
                "a filter needs flowid (or classid) MAJOR:MINOR",
            ));
        };
        if *maj != h && *maj != 0 {
            return Err(ImportError::at(
                w,
                format!("flowid {maj:x}:{min:x} is not a class of qdisc {h:x}:"),
            ));
        }
        let id = if q.kind == "prio" {
            min.to_string()
        } else {
            minor_id(*min)
        };
        if q.kind == "prio" && !spec.classes.iter().any(|c| c.id == id) {
            spec.classes.push(ClassSpec {
                id: id.clone(),
                parent: None,
                params: Vec::new(),
                police: None,
                qdisc: None,
            });
        }
        if let Some(m) = &f.police {
            // A police action on the only filter into a class meters that
            // class (what reaches it through this filter).
            let n = st
                .filters
                .iter()
                .filter(|g| {
                    g.dev == f.dev && g.parent == h && g.flowid.as_ref().map(|x| x.1) == Some(*min)
                })
                .count();
            let default = spec.params.iter().any(|(k, v)| k == "default" && *v == id);
            let Some(c) = spec.classes.iter_mut().find(|c| c.id == id) else {
                return Err(ImportError::at(w, format!("no class {h:x}:{min:x}")));
            };
            if n > 1 || default || c.police.is_some() {
                return Err(ImportError::at(
                    &f.line.words[0],
                    "a police action on one of several ways into a class is not modelled (qoslab meters a whole class)",
                ));
            }
            c.police = Some(m.clone());
        }
        let classifier = if f.classifier.is_empty() {
            "any".to_string()
        } else {
            f.classifier.clone()
        };
        spec.filters.push(FilterSpec {
            classifier,
            class: id,
        });
    }
    if q.kind == "prio" {
        spec.classes
            .sort_by_key(|c| c.id.parse::<u32>().unwrap_or(0));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests;
