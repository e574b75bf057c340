//! Thin PyO3 bindings: convert, call qoslab-core, map errors, convert back.
//! Scenarios and the simulator are bound in [`sim`].
//!
//! No logic lives here. Every kind of meter or shaper goes through
//! `Policer::from_params` / `drive::TraceShaper::from_params` (the shapers,
//! and the AQMs behind a link of `rate`) and the batch drivers in
//! `qoslab_core::drive`, so a kind added to the core is usable from Python
//! without touching this crate. Input validation that needs Python types
//! (dtypes, negative numbers) is done in `python/qoslab`; this layer only
//! accepts contiguous `uint64`/`uint32`/`uint8` arrays.
//!
//! Errors: `qoslab_core::ConfigError` becomes `qoslab.ConfigError` (a
//! `ValueError` with `.param` and `.message`), `drive::TraceError` becomes
//! `qoslab.TraceError` (a `ValueError` with `.index` and `.message`). Nothing
//! here unwraps user data, so no panic can reach Python.

mod capture;
mod sim;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use qoslab_core::drive::{
    self, MeterSummary, ShapeSummary, TraceError as CoreTraceError, TraceShaper,
};
use qoslab_core::meter::{Policer, METER_KINDS};
use qoslab_core::params::{ConfigError as CoreConfigError, Params};
use qoslab_core::parse;
use qoslab_core::shaper::Shaper;

create_exception!(
    qoslab,
    ConfigError,
    PyValueError,
    "A conditioner parameter (or kind) is invalid; `.param` names it, `.message` says why."
);
create_exception!(
    qoslab,
    TraceError,
    PyValueError,
    "A trace is invalid; `.index` is the 0-based packet index, `.message` says why."
);

/// The one place core errors become Python exceptions.
fn config_err(py: Python<'_>, e: CoreConfigError) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    let v = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in
    // practice; if it ever did, the message still carries the parameter.
    let _ = v.setattr("param", e.param);
    let _ = v.setattr("message", e.message);
    err
}

fn trace_err(py: Python<'_>, e: CoreTraceError) -> PyErr {
    let err = TraceError::new_err(e.to_string());
    let v = err.value(py);
    let _ = v.setattr("index", e.index);
    let _ = v.setattr("message", e.message);
    err
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, what: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a contiguous 1-D array")))
}

/// Reads a `dict[str, str]` in insertion order (so the first bad key is the
/// one reported).
fn params(kind: &str, d: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut pairs: Vec<(String, String)> = Vec::with_capacity(d.len());
    for (k, v) in d.iter() {
        let key: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("parameter names must be str, got {k:?}")))?;
        let value: String = v.extract().map_err(|_| {
            PyTypeError::new_err(format!("parameter {key} must be given as a str, got {v:?}"))
        })?;
        pairs.push((key, value));
    }
    Ok(Params::new(kind, pairs))
}

/// The core version these bindings were built from.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// (kind, description) of every meter kind.
#[pyfunction]
fn meter_kinds() -> Vec<(&'static str, &'static str)> {
    METER_KINDS.to_vec()
}

/// (kind, description) of every kind `shape_trace` runs: the shapers, then
/// the AQMs (which need `rate`, the link draining their queue).
#[pyfunction]
fn shaper_kinds() -> Vec<(&'static str, String)> {
    TraceShaper::kinds()
}

fn build_policer(py: Python<'_>, kind: &str, p: &Bound<'_, PyDict>) -> PyResult<Policer> {
    Policer::from_params(kind, params(kind, p)?).map_err(|e| config_err(py, e))
}

fn build_shaper(py: Python<'_>, kind: &str, p: &Bound<'_, PyDict>) -> PyResult<TraceShaper> {
    TraceShaper::from_params(kind, params(kind, p)?).map_err(|e| config_err(py, e))
}

fn owned(d: Vec<(&'static str, String)>) -> Vec<(String, String)> {
    d.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The effective parameters of meter `kind` (with its actions), including
/// derived defaults, as (name, value) pairs.
#[pyfunction]
fn describe_meter(
    py: Python<'_>,
    kind: &str,
    params: &Bound<'_, PyDict>,
) -> PyResult<Vec<(String, String)>> {
    Ok(owned(build_policer(py, kind, params)?.describe()))
}

/// The effective parameters of shaper or AQM `kind`, including derived
/// defaults (and, for an AQM, its link `rate`).
#[pyfunction]
fn describe_shaper(
    py: Python<'_>,
    kind: &str,
    params: &Bound<'_, PyDict>,
) -> PyResult<Vec<(String, String)>> {
    Ok(owned(build_shaper(py, kind, params)?.describe()))
}

fn meter_summary<'py>(py: Python<'py>, s: &MeterSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", s.packets.to_vec())?;
    d.set_item("bytes", s.bytes.to_vec())?;
    d.set_item("dropped_packets", s.dropped_packets)?;
    d.set_item("dropped_bytes", s.dropped_bytes)?;
    d.set_item("remarked_packets", s.remarked_packets)?;
    Ok(d)
}

fn shape_summary<'py>(py: Python<'py>, s: &ShapeSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("sent_packets", s.sent_packets)?;
    d.set_item("sent_bytes", s.sent_bytes)?;
    d.set_item("dropped_packets", s.dropped_packets)?;
    d.set_item("dropped_bytes", s.dropped_bytes)?;
    d.set_item("max_delay_ns", s.max_delay_ns)?;
    d.set_item("total_delay_ns", s.total_delay_ns)?;
    d.set_item("max_backlog_packets", s.max_backlog_packets)?;
    Ok(d)
}

type MeterOut<'py> = (
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyDict>,
);

/// Meters a trace: returns (colours, action codes, summary dict). The GIL is
/// released while the packets run through the meter.
#[pyfunction]
#[pyo3(signature = (kind, params, times_ns, sizes, colors=None))]
fn meter_trace<'py>(
    py: Python<'py>,
    kind: &str,
    params: &Bound<'_, PyDict>,
    times_ns: PyReadonlyArray1<'py, u64>,
    sizes: PyReadonlyArray1<'py, u32>,
    colors: Option<PyReadonlyArray1<'py, u8>>,
) -> PyResult<MeterOut<'py>> {
    let mut pol = build_policer(py, kind, params)?;
    let t = slice(&times_ns, "times_ns")?;
    let s = slice(&sizes, "sizes")?;
    let c = match &colors {
        Some(c) => Some(slice(c, "colors")?),
        None => None,
    };
    let n = t.len();
    let (mut out_c, mut out_a) = (vec![0u8; n], vec![0u8; n]);
    let res = py.detach(|| drive::meter_trace(&mut pol, t, s, c, &mut out_c, &mut out_a));
    let summary = res.map_err(|e| trace_err(py, e))?;
    Ok((
        PyArray1::from_vec(py, out_c),
        PyArray1::from_vec(py, out_a),
        meter_summary(py, &summary)?,
    ))
}

/// Shapes a trace: returns (departure times in ns, `2**64 - 1` for a dropped
/// packet; summary dict). The GIL is released during the run.
#[pyfunction]
fn shape_trace<'py>(
    py: Python<'py>,
    kind: &str,
    params: &Bound<'_, PyDict>,
    times_ns: PyReadonlyArray1<'py, u64>,
    sizes: PyReadonlyArray1<'py, u32>,
) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyDict>)> {
    let mut shaper = build_shaper(py, kind, params)?;
    let t = slice(&times_ns, "times_ns")?;
    let s = slice(&sizes, "sizes")?;
    let mut dep = vec![0u64; t.len()];
    let res = py.detach(|| drive::shape_trace(&mut shaper, t, s, &mut dep));
    let summary = res.map_err(|e| trace_err(py, e))?;
    Ok((PyArray1::from_vec(py, dep), shape_summary(py, &summary)?))
}

fn unit_err(py: Python<'_>, param: &str, e: parse::UnitError) -> PyErr {
    config_err(py, CoreConfigError::new(param, e.to_string()))
}

/// Parses a rate the way tc does ("20mbit") into bits per second.
#[pyfunction]
fn parse_rate(py: Python<'_>, s: &str) -> PyResult<u64> {
    parse::parse_rate(s)
        .map(|r| r.bps())
        .map_err(|e| unit_err(py, "rate", e))
}

/// Parses a size the way tc does ("32kb") into bytes.
#[pyfunction]
fn parse_size(py: Python<'_>, s: &str) -> PyResult<u64> {
    parse::parse_size(s)
        .map(|b| b.get())
        .map_err(|e| unit_err(py, "size", e))
}

/// Parses a time the way tc does ("50ms"; a bare number is µs) into ns.
#[pyfunction]
fn parse_time(py: Python<'_>, s: &str) -> PyResult<u64> {
    parse::parse_time(s)
        .map(|d| d.as_ns())
        .map_err(|e| unit_err(py, "time", e))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("ScenarioError", py.get_type::<sim::ScenarioError>())?;
    m.add("Cancelled", py.get_type::<sim::Cancelled>())?;
    m.add_function(wrap_pyfunction!(sim::scenario_info, m)?)?;
    m.add_function(wrap_pyfunction!(sim::simulate_toml, m)?)?;
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(meter_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(shaper_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(describe_meter, m)?)?;
    m.add_function(wrap_pyfunction!(describe_shaper, m)?)?;
    m.add_function(wrap_pyfunction!(meter_trace, m)?)?;
    m.add_function(wrap_pyfunction!(shape_trace, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    capture::register(m)?;
    Ok(())
}
