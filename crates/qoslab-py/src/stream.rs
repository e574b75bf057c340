//! Traces run in chunks: `MeterRun` and `ShapeRun` wrap
//! `qoslab_core::drive::{MeterStream, ShapeStream}` so that `qoslab meter`
//! / `qoslab shape` stream a CSV of any length in bounded memory, and the
//! whole-array API (`qoslab.police`, `qoslab.shape`) goes through the same
//! code.
//!
//! Each `push` runs its packets in slices of [`SLICE`] with the GIL
//! released and, between slices, takes the GIL back and checks for
//! signals: Ctrl-C raises `KeyboardInterrupt` within one slice (a few ms)
//! instead of after the whole trace.
//!
//! Result arrays are allocated by NumPy (`numpy.empty`), which raises
//! `MemoryError` when it cannot, turned into `qoslab.ResourceError`:
//! `PyArray1::from_slice` / `from_vec` treat a failed allocation as a
//! panic ("PyObject pointer is null"), and a Rust `Vec` that cannot grow
//! aborts the process.

use crate::sim::ResourceError;
use crate::{config_err, pairs, policy_err, slice, trace_err, unit_err, Columns};
use numpy::{Element, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use qoslab_core::drive::{MeterStream, ShapeStream, TraceFields};
use qoslab_core::meter::Policer;
use qoslab_core::params::Params;
use qoslab_core::parse;
use qoslab_core::shaper::Shaper;
use qoslab_policy::trace::{TracePolicy, DEFAULT_SEED};
use std::ops::Range;
use std::sync::Mutex;

/// Packets run per GIL release: 2^14, a few ms of work for any kind even
/// on a loaded machine (a CoDel queue of 10^6 packets: about 15 ms), so a
/// signal is seen well within the 0.5 s the CLI promises; the release and
/// the signal check cost about a microsecond.
pub(crate) const SLICE: usize = 1 << 14;

/// A 1-D NumPy array of `n` elements, uninitialised, or
/// `qoslab.ResourceError` if it cannot be allocated.
pub(crate) fn empty<'py, T: Element>(
    py: Python<'py>,
    n: usize,
) -> PyResult<Bound<'py, PyArray1<T>>> {
    let np = py.import("numpy")?;
    let dtype = numpy::dtype::<T>(py);
    match np.getattr("empty")?.call1((n, dtype)) {
        Ok(a) => Ok(a.cast_into::<PyArray1<T>>()?),
        Err(e) if e.is_instance_of::<PyMemoryError>(py) => Err(out_of_memory(n, size_of::<T>())),
        Err(e) => Err(e),
    }
}

fn out_of_memory(n: usize, each: usize) -> PyErr {
    let mb = (n as f64 * each as f64) / 1e6;
    ResourceError::new_err(format!(
        "out of memory: could not allocate the result for {n} packets ({mb:.1} MB)"
    ))
}

/// `v` copied into a new NumPy array (fallible, see [`empty`]).
pub(crate) fn array<'py, T: Element + Copy>(
    py: Python<'py>,
    v: &[T],
) -> PyResult<Bound<'py, PyArray1<T>>> {
    let a = empty::<T>(py, v.len())?;
    // SAFETY: `a` is new, contiguous and not shared with anyone yet.
    unsafe { a.as_slice_mut() }
        .map_err(|e| PyValueError::new_err(e.to_string()))?
        .copy_from_slice(v);
    Ok(a)
}

/// Arrays of a chunk whose lengths differ: a `TraceError` at the chunk's
/// first packet.
fn length_err(py: Python<'_>, index: usize) -> PyErr {
    let message = "times_ns, sizes and every column must have one entry per packet".into();
    trace_err(py, qoslab_core::drive::TraceError { index, message })
}

fn ranges(n: usize) -> impl Iterator<Item = Range<usize>> {
    (0..n.div_ceil(SLICE)).map(move |k| k * SLICE..((k + 1) * SLICE).min(n))
}

/// `f`'s columns restricted to packets `r`.
fn sub<'a>(f: &TraceFields<'a>, r: &Range<usize>) -> TraceFields<'a> {
    fn s<'a, T>(c: Option<&'a [T]>, r: &Range<usize>) -> Option<&'a [T]> {
        c.map(|c| c.get(r.clone()).unwrap_or(&c[c.len().min(r.start)..]))
    }
    TraceFields {
        colors: s(f.colors, r),
        flow: s(f.flow, r),
        dscp: s(f.dscp, r),
        src_addr: s(f.src_addr, r),
        dst_addr: s(f.dst_addr, r),
        src_port: s(f.src_port, r),
        dst_port: s(f.dst_port, r),
        protocol: s(f.protocol, r),
    }
}

/// A meter over a trace given in chunks: `push` colours the next chunk.
#[pyclass(module = "qoslab._core")]
pub(crate) struct MeterRun {
    policer: Policer,
    stream: MeterStream,
    describe: Vec<(String, String)>,
}

type MeterChunk<'py> = (Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<u8>>);

#[pymethods]
impl MeterRun {
    #[new]
    fn new(py: Python<'_>, kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let policer = Policer::from_params(kind, Params::new(kind, pairs(params)?))
            .map_err(|e| config_err(py, e))?;
        let describe = crate::owned(policer.describe());
        Ok(MeterRun {
            policer,
            stream: MeterStream::default(),
            describe,
        })
    }

    /// Colours and action codes of the next chunk of packets. A bad packet
    /// raises `TraceError` with its index in the whole trace.
    #[pyo3(signature = (times_ns, sizes, colors=None))]
    fn push<'py>(
        &mut self,
        py: Python<'py>,
        times_ns: PyReadonlyArray1<'py, u64>,
        sizes: PyReadonlyArray1<'py, u32>,
        colors: Option<PyReadonlyArray1<'py, u8>>,
    ) -> PyResult<MeterChunk<'py>> {
        let t = slice(&times_ns, "times_ns")?;
        let s = slice(&sizes, "sizes")?;
        let c = colors.as_ref().map(|c| slice(c, "colors")).transpose()?;
        let n = t.len();
        if s.len() != n || c.is_some_and(|c| c.len() != n) {
            return Err(length_err(py, self.stream.packets()));
        }
        let (out_c, out_a) = (empty::<u8>(py, n)?, empty::<u8>(py, n)?);
        // SAFETY: both arrays are new and only written here.
        let oc =
            unsafe { out_c.as_slice_mut() }.map_err(|e| PyValueError::new_err(e.to_string()))?;
        let oa =
            unsafe { out_a.as_slice_mut() }.map_err(|e| PyValueError::new_err(e.to_string()))?;
        for r in ranges(n) {
            let (pol, st) = (&mut self.policer, &mut self.stream);
            let (oc, oa) = (&mut oc[r.clone()], &mut oa[r.clone()]);
            let c = c.map(|c| &c[r.clone()]);
            let res = py.detach(|| st.push(pol, &t[r.clone()], &s[r.clone()], c, oc, oa));
            res.map_err(|e| trace_err(py, e))?;
            py.check_signals()?;
        }
        Ok((out_c, out_a))
    }

    /// Totals so far: packets and bytes per colour, drops, remarks.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::meter_summary(py, &self.stream.summary())
    }

    /// The meter's effective parameters (with its actions).
    fn describe(&self) -> Vec<(String, String)> {
        self.describe.clone()
    }
}

/// A shaper, queue, scheduler or tree over a trace given in chunks: `push`
/// enqueues the next chunk, `take` hands out the departures known so far in
/// trace order, `finish` drains it after the last chunk.
#[pyclass(module = "qoslab._core")]
pub(crate) struct ShapeRun {
    /// In a `Mutex` only to be `Sync` (a tree holds `dyn Shaper + Send`);
    /// `&mut self` reaches it without locking.
    policy: Mutex<TracePolicy>,
    stream: ShapeStream,
    describe: Vec<(String, String)>,
    finished: bool,
}

impl ShapeRun {
    fn with(policy: TracePolicy) -> Self {
        let describe = crate::owned(policy.describe());
        ShapeRun {
            policy: Mutex::new(policy),
            stream: ShapeStream::default(),
            describe,
            finished: false,
        }
    }
}

#[pymethods]
impl ShapeRun {
    /// Flat `kind` (a shaper, or an AQM, queue, classless scheduler or prio
    /// behind a link of `rate`) from string parameters.
    #[staticmethod]
    fn kind(py: Python<'_>, kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let p = TracePolicy::from_params(kind, &pairs(params)?).map_err(|e| policy_err(py, e))?;
        Ok(Self::with(p))
    }

    /// A whole policy tree given as TOML (`text`, the table of a scenario's
    /// `[policy.LINK.DIR]`; `file` names it in errors, which are
    /// `ScenarioError`s located in it), behind a link of `rate` when given.
    #[staticmethod]
    #[pyo3(signature = (text, file, rate=None))]
    fn tree(py: Python<'_>, text: &str, file: &str, rate: Option<&str>) -> PyResult<Self> {
        let spec = qoslab_scenario::parse_policy(text, file)
            .map_err(|e| crate::sim::scenario_err(py, e))?;
        let rate = rate
            .map(|r| parse::parse_rate(r).map_err(|e| unit_err(py, "rate", e)))
            .transpose()?;
        let p = TracePolicy::from_tree(&spec, qoslab_scenario::POLICY_BASE, rate, DEFAULT_SEED)
            .map_err(|e| policy_err(py, e))?;
        Ok(Self::with(p))
    }

    /// Enqueues the next chunk (`columns`: the optional header columns of
    /// these packets); returns how many departures are known.
    #[pyo3(signature = (times_ns, sizes, columns=None))]
    fn push<'py>(
        &mut self,
        py: Python<'py>,
        times_ns: PyReadonlyArray1<'py, u64>,
        sizes: PyReadonlyArray1<'py, u32>,
        columns: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<usize> {
        if self.finished {
            return Err(PyValueError::new_err("push after finish"));
        }
        let t = slice(&times_ns, "times_ns")?;
        let s = slice(&sizes, "sizes")?;
        if s.len() != t.len() {
            return Err(length_err(py, self.stream.packets()));
        }
        let cols = Columns::read(columns)?;
        let fields = cols.fields()?;
        for r in ranges(t.len()) {
            let (pol, st) = (policy_mut(&mut self.policy), &mut self.stream);
            let f = sub(&fields, &r);
            let (tr, sr) = (&t[r.clone()], &s[r.clone()]);
            let res = py.detach(|| st.push(pol, tr, sr, &f));
            res.map_err(|e| trace_err(py, e))?;
            py.check_signals()?;
        }
        Ok(self.stream.ready())
    }

    /// After the last chunk: sends what is still queued. Returns the
    /// summary (sent, dropped, delays, largest backlog, warnings).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if !self.finished {
            let (pol, st) = (policy_mut(&mut self.policy), &mut self.stream);
            py.detach(|| st.finish(pol)).map_err(|e| trace_err(py, e))?;
            self.finished = true;
        }
        let d = crate::shape_summary(py, &self.stream.summary())?;
        d.set_item("warnings", policy_mut(&mut self.policy).warnings())?;
        Ok(d)
    }

    /// The departures known so far (at most `limit`), in trace order: ns,
    /// or `2**64 - 1` for a dropped packet.
    #[pyo3(signature = (limit=None))]
    fn take<'py>(
        &mut self,
        py: Python<'py>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let n = self.stream.ready().min(limit.unwrap_or(usize::MAX));
        let a = empty::<u64>(py, n)?;
        // SAFETY: `a` is new and only written here.
        let out = unsafe { a.as_slice_mut() }.map_err(|e| PyValueError::new_err(e.to_string()))?;
        let got = self.stream.take(out);
        debug_assert_eq!(got, n);
        Ok(a)
    }

    /// Packets pushed so far.
    fn packets(&self) -> usize {
        self.stream.packets()
    }

    /// One row per class (root first): packets, bytes, drops, colours,
    /// largest queue.
    fn classes<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        crate::class_rows(py, &policy_mut(&mut self.policy).class_results())
    }

    /// The effective parameters (and, but for a shaper, the link `rate`).
    fn describe(&self) -> Vec<(String, String)> {
        self.describe.clone()
    }
}

/// The policy of a `ShapeRun` (a panic while it was held cannot have left
/// it half-updated in a way that matters more than the panic itself).
fn policy_mut(m: &mut Mutex<TracePolicy>) -> &mut TracePolicy {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}
