//! The bases of every exception the extension raises, defined in Python
//! (`python/qoslab/errors.py`) so that each class is both a
//! `qoslab.QoslabError` and the built-in it always was (`ValueError`,
//! `MemoryError`): PyO3's `create_exception!` takes one base only.

pyo3::import_exception!(qoslab.errors, QoslabError);
pyo3::import_exception!(qoslab.errors, QoslabValueError);
pyo3::import_exception!(qoslab.errors, QoslabMemoryError);
#[cfg(target_os = "linux")]
pyo3::import_exception!(qoslab.errors, QoslabRuntimeError);
