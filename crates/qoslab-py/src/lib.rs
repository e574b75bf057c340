//! Thin PyO3 bindings: convert, call qoslab-core, map errors, convert back.
//! Scenarios and the simulator are bound in the `sim` module.
//!
//! No logic lives here. Every meter goes through `Policer::from_params`,
//! every queue, scheduler, shaper or whole tree through
//! `qoslab_policy::trace::TracePolicy` (behind a link of `rate` where the
//! kind does not pace itself), and the batch drivers in
//! `qoslab_core::drive`; kind lists come from `qoslab_policy::registry`, so
//! a kind added to the core is usable from Python without touching this
//! crate. Input validation that needs Python types
//! (dtypes, negative numbers) is done in `python/qoslab`; this layer only
//! accepts contiguous `uint64`/`uint32`/`uint8` arrays.
//!
//! Errors: `qoslab_core::ConfigError` becomes `qoslab.ConfigError` (a
//! `ValueError` with `.param` and `.message`), `drive::TraceError` becomes
//! `qoslab.TraceError` (a `ValueError` with `.index` and `.message`). Nothing
//! here unwraps user data, so no panic can reach Python.

mod capture;
mod column;
#[cfg(target_os = "linux")]
mod emu;
mod errors;
mod import;
mod sim;
mod stream;

use numpy::PyReadonlyArray1;
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use qoslab_core::drive::{MeterSummary, ShapeSummary, TraceError as CoreTraceError, TraceFields};
use qoslab_core::meter::Policer;
use qoslab_core::params::{ConfigError as CoreConfigError, Params};
use qoslab_core::parse;
use qoslab_core::shaper::Shaper;
use qoslab_policy::registry::{self, Family};
use qoslab_policy::trace::TracePolicy;
use qoslab_policy::{ClassResult, PolicyError};

create_exception!(
    qoslab,
    ConfigError,
    crate::errors::QoslabValueError,
    "A conditioner parameter (or kind) is invalid; `.param` names it, `.message` says why."
);
create_exception!(
    qoslab,
    TraceError,
    crate::errors::QoslabValueError,
    "A trace is invalid; `.index` is the 0-based packet index, `.message` says why."
);

/// The one place core errors become Python exceptions.
pub(crate) fn config_err(py: Python<'_>, e: CoreConfigError) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    let v = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in
    // practice; if it ever did, the message still carries the parameter.
    let _ = v.setattr("param", e.param);
    let _ = v.setattr("message", e.message);
    err
}

pub(crate) fn trace_err(py: Python<'_>, e: CoreTraceError) -> PyErr {
    let err = TraceError::new_err(e.to_string());
    let v = err.value(py);
    let _ = v.setattr("index", e.index);
    let _ = v.setattr("message", e.message);
    err
}

pub(crate) fn slice<'a, T: numpy::Element>(
    a: &'a PyReadonlyArray1<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a contiguous 1-D array")))
}

/// A policy error as a `ConfigError` whose `param` is the error's path.
pub(crate) fn policy_err(py: Python<'_>, e: PolicyError) -> PyErr {
    config_err(py, CoreConfigError::new(e.path, e.message))
}

/// Reads a `dict[str, str]` in insertion order (so the first bad key is the
/// one reported).
fn params(kind: &str, d: &Bound<'_, PyDict>) -> PyResult<Params> {
    Ok(Params::new(kind, pairs(d)?))
}

pub(crate) fn pairs(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, String)>> {
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
    Ok(pairs)
}

/// The core version these bindings were built from.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// (kind, family, description) of every meter kind (the registry's).
#[pyfunction]
fn meter_kinds() -> Vec<(&'static str, &'static str, &'static str)> {
    registry::kinds()
        .iter()
        .filter(|k| k.family == Family::Meter)
        .map(|k| (k.name, k.family.name(), k.description))
        .collect()
}

/// (kind, family, description) of every kind `shape_trace` runs, in
/// registry order, then `tree` (`shape_policy`); each description says
/// what the kind needs on a trace (`rate`, or a whole tree).
#[pyfunction]
fn shaper_kinds() -> Vec<(&'static str, &'static str, String)> {
    TracePolicy::kinds()
}

fn build_policer(py: Python<'_>, kind: &str, p: &Bound<'_, PyDict>) -> PyResult<Policer> {
    Policer::from_params(kind, params(kind, p)?).map_err(|e| config_err(py, e))
}

fn build_shaper(py: Python<'_>, kind: &str, p: &Bound<'_, PyDict>) -> PyResult<TracePolicy> {
    TracePolicy::from_params(kind, &pairs(p)?).map_err(|e| policy_err(py, e))
}

pub(crate) fn owned(d: Vec<(&'static str, String)>) -> Vec<(String, String)> {
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

/// The effective parameters of shaper, AQM, queue or scheduler `kind`,
/// including derived defaults (and, but for a shaper, its link `rate`).
#[pyfunction]
fn describe_shaper(
    py: Python<'_>,
    kind: &str,
    params: &Bound<'_, PyDict>,
) -> PyResult<Vec<(String, String)>> {
    Ok(owned(build_shaper(py, kind, params)?.describe()))
}

pub(crate) fn meter_summary<'py>(
    py: Python<'py>,
    s: &MeterSummary,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", s.packets.to_vec())?;
    d.set_item("bytes", s.bytes.to_vec())?;
    d.set_item("dropped_packets", s.dropped_packets)?;
    d.set_item("dropped_bytes", s.dropped_bytes)?;
    d.set_item("remarked_packets", s.remarked_packets)?;
    Ok(d)
}

pub(crate) fn shape_summary<'py>(
    py: Python<'py>,
    s: &ShapeSummary,
) -> PyResult<Bound<'py, PyDict>> {
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

/// The optional header columns of a trace (`color`, `flow`, `dscp`, `src`,
/// `dst`, `src_port`, `dst_port`, `proto`) as contiguous arrays of their
/// types (u8, u32, u8, u32, u32, u16, u16, u8); `python/qoslab` converts
/// and checks them.
pub(crate) struct Columns<'py> {
    u8s: [Option<PyReadonlyArray1<'py, u8>>; 3],
    u32s: [Option<PyReadonlyArray1<'py, u32>>; 3],
    u16s: [Option<PyReadonlyArray1<'py, u16>>; 2],
}

impl<'py> Columns<'py> {
    const U8: [&'static str; 3] = ["color", "dscp", "proto"];
    const U32: [&'static str; 3] = ["flow", "src", "dst"];
    const U16: [&'static str; 2] = ["src_port", "dst_port"];

    pub(crate) fn read(d: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let mut c = Columns {
            u8s: [None, None, None],
            u32s: [None, None, None],
            u16s: [None, None],
        };
        let Some(d) = d else { return Ok(c) };
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let bad = || PyTypeError::new_err(format!("column {key}: wrong array type"));
            if let Some(i) = Self::U8.iter().position(|n| *n == key) {
                c.u8s[i] = Some(v.extract().map_err(|_| bad())?);
            } else if let Some(i) = Self::U32.iter().position(|n| *n == key) {
                c.u32s[i] = Some(v.extract().map_err(|_| bad())?);
            } else if let Some(i) = Self::U16.iter().position(|n| *n == key) {
                c.u16s[i] = Some(v.extract().map_err(|_| bad())?);
            } else {
                return Err(PyValueError::new_err(format!(
                    "unknown trace column '{key}'; columns: color, flow, dscp, src, dst, src_port, dst_port, proto"
                )));
            }
        }
        Ok(c)
    }

    pub(crate) fn fields(&self) -> PyResult<TraceFields<'_>> {
        fn sl<'a, T: numpy::Element>(
            a: &'a Option<PyReadonlyArray1<'_, T>>,
            n: &str,
        ) -> PyResult<Option<&'a [T]>> {
            a.as_ref().map(|a| slice(a, n)).transpose()
        }
        Ok(TraceFields {
            colors: sl(&self.u8s[0], "color")?,
            dscp: sl(&self.u8s[1], "dscp")?,
            protocol: sl(&self.u8s[2], "proto")?,
            flow: sl(&self.u32s[0], "flow")?,
            src_addr: sl(&self.u32s[1], "src")?,
            dst_addr: sl(&self.u32s[2], "dst")?,
            src_port: sl(&self.u16s[0], "src_port")?,
            dst_port: sl(&self.u16s[1], "dst_port")?,
        })
    }
}

pub(crate) fn class_rows<'py>(
    py: Python<'py>,
    rows: &[ClassResult],
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    rows.iter()
        .map(|c| {
            let d = PyDict::new(py);
            d.set_item("name", &c.name)?;
            d.set_item("kind", &c.kind)?;
            d.set_item("parent", c.parent)?;
            d.set_item("packets_in", c.packets_in)?;
            d.set_item("bytes_in", c.bytes_in)?;
            d.set_item("packets_out", c.packets_out)?;
            d.set_item("bytes_out", c.bytes_out)?;
            d.set_item("packets_dropped", c.packets_dropped)?;
            d.set_item("bytes_dropped", c.bytes_dropped)?;
            d.set_item("color_packets_in", c.color_packets_in.to_vec())?;
            d.set_item("color_packets_out", c.color_packets_out.to_vec())?;
            d.set_item("color_packets_dropped", c.color_packets_dropped.to_vec())?;
            d.set_item("max_queue_packets", c.max_queue_packets)?;
            d.set_item("max_queue_bytes", c.max_queue_bytes)?;
            Ok(d)
        })
        .collect()
}

pub(crate) fn unit_err(py: Python<'_>, param: &str, e: parse::UnitError) -> PyErr {
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
    m.add("QoslabError", py.get_type::<errors::QoslabError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("ScenarioError", py.get_type::<sim::ScenarioError>())?;
    m.add("Cancelled", py.get_type::<sim::Cancelled>())?;
    m.add_function(wrap_pyfunction!(sim::scenario_info, m)?)?;
    m.add_function(wrap_pyfunction!(sim::tcp_profile_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(sim::simulate_toml, m)?)?;
    m.add("ResourceError", py.get_type::<sim::ResourceError>())?;
    m.add_function(wrap_pyfunction!(sim::estimate_toml, m)?)?;
    m.add_function(wrap_pyfunction!(sim::host_address, m)?)?;
    #[cfg(target_os = "linux")]
    {
        m.add("EmulationError", py.get_type::<emu::EmulationError>())?;
        m.add_class::<emu::EmuHandle>()?;
        m.add_function(wrap_pyfunction!(emu::emu_plan, m)?)?;
        m.add_function(wrap_pyfunction!(emu::emu_start, m)?)?;
    }
    m.add_function(wrap_pyfunction!(import::import_config, m)?)?;
    m.add(
        "ConfigImportError",
        py.get_type::<import::ConfigImportError>(),
    )?;
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(meter_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(shaper_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(describe_meter, m)?)?;
    m.add_function(wrap_pyfunction!(describe_shaper, m)?)?;
    m.add_class::<column::Column>()?;
    m.add_class::<stream::MeterRun>()?;
    m.add_class::<stream::ShapeRun>()?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    capture::register(m)?;
    Ok(())
}
