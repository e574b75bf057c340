//! Thin PyO3 bindings: convert, call qoslab-core, map errors, convert back.
use pyo3::prelude::*;

/// The qoslab-core version these bindings were built from.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    Ok(())
}
