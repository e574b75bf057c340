//! Bindings for scenarios and the simulator: parse a TOML scenario with
//! `qoslab-scenario`, run it with `qoslab_sim::run` with the GIL released,
//! and hand the result back as a dict of plain values and NumPy columns
//! (with `numpy=False`, [`crate::column::Column`]s that become NumPy arrays
//! only when converted: `qoslab run`'s table never imports NumPy).
//!
//! Errors: a bad scenario (or a configuration error the engine finds,
//! located back in the file) becomes `qoslab.ScenarioError` (a `ValueError`
//! with `.file`, `.line`, `.column`, `.path`, `.message`; `str()` is
//! `file:line:col: path: message`). A cancelled run — Ctrl-C while it runs,
//! or the progress callback returning `False` — raises `qoslab.Cancelled`,
//! a `KeyboardInterrupt`; an exception raised by the callback is re-raised.

use crate::column::{Column, Value};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qoslab_capture::simcap::RunError;
use qoslab_capture::writer::Snap;
use qoslab_scenario::{Scenario, ScenarioError as CoreScenarioError, SERIES};
use qoslab_sim::capture::CaptureSpec;
use qoslab_sim::result::{FlowResult, PolicyResult, RttSummary, Series};
use qoslab_sim::{Progress, SimError, SimResult};

create_exception!(
    qoslab,
    ScenarioError,
    crate::errors::QoslabValueError,
    "A scenario is invalid; `.file`, `.line`, `.column`, `.path` locate it, `.message` says why."
);
create_exception!(
    qoslab,
    Cancelled,
    PyKeyboardInterrupt,
    "The simulation was cancelled (Ctrl-C, or the progress callback returned False)."
);

create_exception!(
    qoslab,
    ResourceError,
    crate::errors::QoslabMemoryError,
    "A run would need more memory than allowed (refused before it starts), or an allocation failed."
);

pub(crate) fn scenario_err(py: Python<'_>, e: CoreScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let v = err.value(py);
    let _ = v.setattr("file", e.file);
    let _ = v.setattr("line", e.line);
    let _ = v.setattr("column", e.column);
    let _ = v.setattr("path", e.path);
    let _ = v.setattr("message", e.message);
    err
}

pub(crate) fn parse(py: Python<'_>, text: &str, filename: &str) -> PyResult<Scenario> {
    qoslab_scenario::parse(text, filename).map_err(|e| scenario_err(py, e))
}

/// What a scenario says, without running it: name, seed, duration_ns,
/// description, source and the recorded series names.
#[pyfunction]
#[pyo3(signature = (text, filename="<string>"))]
pub(crate) fn scenario_info<'py>(
    py: Python<'py>,
    text: &str,
    filename: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(py, text, filename)?;
    let d = PyDict::new(py);
    d.set_item("name", &sc.config.name)?;
    d.set_item("seed", sc.config.seed)?;
    d.set_item("duration_ns", sc.config.duration.as_ns())?;
    d.set_item("description", &sc.description)?;
    d.set_item("source", &sc.source)?;
    d.set_item("record_interval_ns", sc.config.record.interval.as_ns())?;
    d.set_item("series", recorded(&sc))?;
    let cap = PyDict::new(py);
    let links: Vec<(String, Option<String>)> = sc
        .capture
        .links
        .iter()
        .map(|c| (capture_spec_text(c), c.file.clone()))
        .collect();
    cap.set_item("links", links)?;
    cap.set_item("snaplen", sc.capture.snaplen)?;
    d.set_item("capture", cap)?;
    // Valid but probably unmeant (a filter matching no flow), located.
    let warnings = PyList::empty(py);
    for w in &sc.warnings {
        let x = PyDict::new(py);
        x.set_item("file", &w.file)?;
        x.set_item("line", w.line)?;
        x.set_item("column", w.column)?;
        x.set_item("path", &w.path)?;
        x.set_item("message", &w.message)?;
        x.set_item("text", w.to_string())?;
        warnings.append(x)?;
    }
    d.set_item("warnings", warnings)?;
    Ok(d)
}

/// The value each TCP key of a `[[traffic]]` table takes under OS
/// `profile` when not set, spelled as in a scenario (`[(key, value)]`);
/// `ValueError` for an unknown profile. The scenario reference's profile
/// table is generated from it.
#[pyfunction]
pub(crate) fn tcp_profile_defaults(profile: &str) -> PyResult<Vec<(&'static str, String)>> {
    qoslab_scenario::tcp_profile_defaults(profile)
        .ok_or_else(|| PyValueError::new_err(format!("unknown TCP profile '{profile}'")))
}

/// `LINK[:side]` of a capture spec (without its file).
fn capture_spec_text(c: &qoslab_sim::capture::CaptureSpec) -> String {
    match c.point {
        Some(p) => format!("{}:{}", c.link, p.name()),
        None => c.link.clone(),
    }
}

pub(crate) fn recorded(sc: &Scenario) -> Vec<&'static str> {
    let r = &sc.config.record;
    let on = [
        r.goodput, r.rtt, r.cwnd, r.queue, r.tokens, r.colors, r.ping, r.segments,
    ];
    SERIES
        .iter()
        .zip(on)
        .filter_map(|(n, on)| on.then_some(*n))
        .collect()
}

/// Validates scenario `text` as a run would and estimates what running it
/// takes (`qoslab_sim::estimate`): events, rows per recorded series and an
/// upper bound of the run's peak memory in bytes. Nothing is run.
#[pyfunction]
#[pyo3(signature = (text, filename="<string>", seed=None))]
pub(crate) fn estimate_toml<'py>(
    py: Python<'py>,
    text: &str,
    filename: &str,
    seed: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut sc = parse(py, text, filename)?;
    if let Some(s) = seed {
        sc.config.seed = s;
    }
    let est = py
        .detach(|| qoslab_sim::estimate(&sc.config))
        .map_err(|e| match sc.locate(&e) {
            Some(located) => scenario_err(py, located),
            None => PyValueError::new_err(e.to_string()),
        })?;
    let d = PyDict::new(py);
    d.set_item("name", &sc.config.name)?;
    d.set_item("duration_ns", est.duration_ns)?;
    d.set_item("flows", est.flows)?;
    d.set_item("tcp_flows", est.tcp_flows)?;
    d.set_item("policies", est.policies)?;
    d.set_item("link_directions", est.link_directions)?;
    d.set_item("packet_hops", est.packet_hops)?;
    d.set_item("events", est.events)?;
    let rows = PyDict::new(py);
    for (name, n) in &est.series_rows {
        rows.set_item(*name, *n)?;
    }
    d.set_item("series_rows", rows)?;
    d.set_item("series_bytes", est.series_bytes)?;
    d.set_item("flow_state_bytes", est.flow_state_bytes)?;
    d.set_item("packet_bytes", est.packet_bytes)?;
    d.set_item("peak_memory_bytes", est.peak_memory_bytes)?;
    Ok(d)
}

/// Parses and runs scenario `text`; `seed` overrides the file's seed.
/// `progress(sim_time_ns, duration_ns, events)` is called at every report
/// of the engine; returning `False` cancels. The GIL is released while the
/// simulation runs (taken back briefly for each report and to check for
/// Ctrl-C). `numpy=False`: the series columns are `Column`s instead of
/// NumPy arrays (`numpy.asarray(column)` gives the same array).
#[pyfunction]
#[pyo3(signature = (text, filename="<string>", seed=None, progress=None, captures=None, snaplen=0, numpy=true))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
pub(crate) fn simulate_toml<'py>(
    py: Python<'py>,
    text: &str,
    filename: &str,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
    captures: Option<Vec<(String, String)>>,
    snaplen: u32,
    numpy: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut sc = parse(py, text, filename)?;
    if let Some(s) = seed {
        sc.config.seed = s;
    }
    let mut failure: Option<PyErr> = None;
    let config = &sc.config;
    let outcome = py.detach(|| {
        let mut report = |p: Progress| -> bool {
            Python::attach(|py| {
                if let Err(e) = py.check_signals() {
                    failure = Some(e);
                    return false;
                }
                let Some(cb) = &progress else {
                    return true;
                };
                match cb.call1(py, (p.sim_time_ns, p.duration_ns, p.events)) {
                    Ok(r) => {
                        // None (no return value) means "go on".
                        let stop = !r.is_none(py) && !r.bind(py).is_truthy().unwrap_or(true);
                        !stop
                    }
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            })
        };
        match &captures {
            None => qoslab_sim::run(config, &mut report).map_err(RunError::Sim),
            Some(c) => {
                let mut specs = Vec::with_capacity(c.len());
                for (spec, path) in c {
                    let s = CaptureSpec::parse(spec).map_err(RunError::Capture)?;
                    specs.push((s, std::path::PathBuf::from(path)));
                }
                qoslab_capture::simcap::run(config, &specs, Snap::from_knob(snaplen), &mut report)
                    .map(|(r, _)| r)
            }
        }
    });
    let outcome = match outcome {
        Ok(r) => Ok(r),
        Err(RunError::Sim(e)) => Err(e),
        Err(RunError::Capture(m)) => return Err(PyValueError::new_err(m)),
    };
    match outcome {
        Ok(r) => result_dict(py, &sc, r, numpy),
        Err(SimError::Cancelled) => Err(match failure {
            Some(e) if !e.is_instance_of::<PyKeyboardInterrupt>(py) => e,
            _ => Cancelled::new_err("simulation cancelled"),
        }),
        Err(e) => Err(match sc.locate(&e) {
            Some(located) => scenario_err(py, located),
            None => PyValueError::new_err(e.to_string()),
        }),
    }
}

fn rtt_dict<'py>(py: Python<'py>, r: &RttSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("samples", r.samples)?;
    d.set_item("min_ns", r.min_ns)?;
    d.set_item("mean_ns", r.mean_ns)?;
    d.set_item("p50_ns", r.p50_ns)?;
    d.set_item("p95_ns", r.p95_ns)?;
    d.set_item("max_ns", r.max_ns)?;
    d.set_item("percentiles", if r.exact { "exact" } else { "histogram" })?;
    Ok(d)
}

fn flow_dict<'py>(py: Python<'py>, f: &FlowResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", f.id)?;
    d.set_item("protocol", f.protocol)?;
    d.set_item("label", &f.label)?;
    d.set_item("from", &f.from)?;
    d.set_item("to", &f.to)?;
    d.set_item("start_ns", f.start_ns)?;
    d.set_item("end_ns", f.end_ns)?;
    d.set_item("bytes_delivered", f.bytes_delivered)?;
    d.set_item("goodput_bps", f.goodput_bps)?;
    d.set_item("packets_sent", f.packets_sent)?;
    d.set_item("retransmits", f.retransmits)?;
    d.set_item("packets_lost", f.packets_lost)?;
    d.set_item("timeouts", f.timeouts)?;
    d.set_item("fast_recoveries", f.fast_recoveries)?;
    d.set_item("rtt", rtt_dict(py, &f.rtt)?)?;
    let chunks = PyList::empty(py);
    for c in &f.chunks {
        let x = PyDict::new(py);
        x.set_item("index", c.index)?;
        x.set_item("request_ns", c.request_ns)?;
        x.set_item("start_ns", c.start_ns)?;
        x.set_item("end_ns", c.end_ns)?;
        x.set_item("client_done_ns", c.client_done_ns)?;
        x.set_item("bytes", c.bytes)?;
        x.set_item("bytes_acked", c.bytes_acked)?;
        x.set_item("goodput_bps", c.goodput_bps)?;
        x.set_item("retransmits", c.retransmits)?;
        x.set_item("packets_lost", c.packets_lost)?;
        x.set_item("timeouts", c.timeouts)?;
        x.set_item("fast_recoveries", c.fast_recoveries)?;
        x.set_item("request_retries", c.request_retries)?;
        chunks.append(x)?;
    }
    d.set_item("chunks", chunks)?;
    Ok(d)
}

pub(crate) fn policy_dict<'py>(py: Python<'py>, p: &PolicyResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("kind", &p.kind)?;
    d.set_item("packets_in", p.packets_in)?;
    d.set_item("bytes_in", p.bytes_in)?;
    d.set_item("packets_dropped", p.packets_dropped)?;
    d.set_item("bytes_dropped", p.bytes_dropped)?;
    d.set_item("color_packets", p.color_packets.to_vec())?;
    d.set_item("color_bytes", p.color_bytes.to_vec())?;
    d.set_item("max_queue_packets", p.max_queue_packets)?;
    d.set_item("max_queue_bytes", p.max_queue_bytes)?;
    d.set_item("describe", p.describe.clone())?;
    let classes = PyList::empty(py);
    for c in &p.classes {
        let x = PyDict::new(py);
        x.set_item("name", &c.name)?;
        x.set_item("kind", &c.kind)?;
        x.set_item("parent", c.parent)?;
        x.set_item("packets_in", c.packets_in)?;
        x.set_item("bytes_in", c.bytes_in)?;
        x.set_item("packets_out", c.packets_out)?;
        x.set_item("bytes_out", c.bytes_out)?;
        x.set_item("packets_dropped", c.packets_dropped)?;
        x.set_item("bytes_dropped", c.bytes_dropped)?;
        x.set_item("color_packets_in", c.color_packets_in.to_vec())?;
        x.set_item("color_packets_out", c.color_packets_out.to_vec())?;
        x.set_item("color_packets_dropped", c.color_packets_dropped.to_vec())?;
        x.set_item("max_queue_packets", c.max_queue_packets)?;
        x.set_item("max_queue_bytes", c.max_queue_bytes)?;
        classes.append(x)?;
    }
    d.set_item("classes", classes)?;
    Ok(d)
}

/// One table of named columns: NumPy arrays, or `Column`s (`numpy` false).
struct Table<'py> {
    py: Python<'py>,
    d: Bound<'py, PyDict>,
    numpy: bool,
}

impl<'py> Table<'py> {
    fn new(py: Python<'py>, numpy: bool) -> Self {
        Table {
            py,
            d: PyDict::new(py),
            numpy,
        }
    }
    fn col<T: Value>(self, name: &str, v: Vec<T>) -> PyResult<Self> {
        if self.numpy {
            self.d.set_item(name, crate::stream::array(self.py, &v)?)?;
        } else {
            self.d.set_item(name, Column::new(v))?;
        }
        Ok(self)
    }
}

/// The series as tables of columns, moved out of the engine's `Vec`s.
fn series_dict(py: Python<'_>, s: Series, numpy: bool) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let t = || Table::new(py, numpy);
    d.set_item(
        "goodput",
        t().col("time_ns", s.goodput_time_ns)?
            .col("flow", s.goodput_flow)?
            .col("bytes", s.goodput_bytes)?
            .col("retransmits", s.goodput_retransmits)?
            .d,
    )?;
    d.set_item(
        "rtt",
        t().col("time_ns", s.rtt_time_ns)?
            .col("flow", s.rtt_flow)?
            .col("rtt_ns", s.rtt_ns)?
            .d,
    )?;
    d.set_item(
        "cwnd",
        t().col("time_ns", s.cwnd_time_ns)?
            .col("flow", s.cwnd_flow)?
            .col("cwnd_bytes", s.cwnd_bytes)?
            .col("ssthresh_bytes", s.ssthresh_bytes)?
            .col("state", s.cwnd_state)?
            .d,
    )?;
    d.set_item(
        "queue",
        t().col("time_ns", s.queue_time_ns)?
            .col("policy", s.queue_policy)?
            .col("packets", s.queue_packets)?
            .col("bytes", s.queue_bytes)?
            .col("tokens_bytes", s.tokens_bytes)?
            .d,
    )?;
    d.set_item(
        "colors",
        t().col("time_ns", s.color_time_ns)?
            .col("policy", s.color_policy)?
            .col("green_bytes", s.color_green_bytes)?
            .col("yellow_bytes", s.color_yellow_bytes)?
            .col("red_bytes", s.color_red_bytes)?
            .col("dropped_bytes", s.color_dropped_bytes)?
            .d,
    )?;
    d.set_item(
        "ping",
        t().col("time_ns", s.ping_time_ns)?
            .col("flow", s.ping_flow)?
            .col("seq", s.ping_seq)?
            .col("rtt_ns", s.ping_rtt_ns)?
            .d,
    )?;
    d.set_item(
        "segments",
        t().col("time_ns", s.seg_time_ns)?
            .col("flow", s.seg_flow)?
            .col("seq", s.seg_seq)?
            .col("len", s.seg_len)?
            .col("retransmit", s.seg_retransmit)?
            .d,
    )?;
    Ok(d)
}

fn result_dict<'py>(
    py: Python<'py>,
    sc: &Scenario,
    r: SimResult,
    numpy: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &r.name)?;
    d.set_item("seed", r.seed)?;
    d.set_item("duration_ns", r.duration_ns)?;
    d.set_item("description", &sc.description)?;
    d.set_item("source", &sc.source)?;
    d.set_item("record_interval_ns", sc.config.record.interval.as_ns())?;
    d.set_item("recorded", recorded(sc))?;
    d.set_item("sum_goodput_bps", r.sum_goodput_bps)?;
    d.set_item("jain_fairness", r.jain_fairness)?;
    d.set_item("events", r.events)?;
    let flows = PyList::empty(py);
    for f in &r.flows {
        flows.append(flow_dict(py, f)?)?;
    }
    d.set_item("flows", flows)?;
    let policies = PyList::empty(py);
    for p in &r.policies {
        policies.append(policy_dict(py, p)?)?;
    }
    d.set_item("policies", policies)?;
    d.set_item("series", series_dict(py, r.series, numpy)?)?;
    Ok(d)
}

/// The address and MAC of host `index` (the emulator's namespaces and the
/// simulator's captures share this numbering, `qoslab_sim::addr`).
#[pyfunction]
pub(crate) fn host_address(index: u32) -> (String, String) {
    let ip = qoslab_sim::addr::host_ipv4(index);
    let mac = qoslab_sim::addr::host_mac(index);
    (
        format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3]),
        mac.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
    )
}
