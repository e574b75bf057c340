//! A recorded series column handed to Python without NumPy.
//!
//! `qoslab run` prints its table from a handful of the run's numbers, and
//! importing NumPy (about 0.1 s) was a third of its time. With
//! `simulate_toml(..., numpy=False)` each series column is a [`Column`]: the
//! values stay in the Rust `Vec` the engine filled, Python reads them as a
//! list (`tolist()`, `len()`, iteration), and `numpy.asarray(column)`
//! (`__array__`) makes the NumPy array `numpy=True` would have returned —
//! same dtype, same values, allocated as [`crate::stream::array`] does (a
//! failed allocation is `qoslab.ResourceError`). NumPy is imported by that
//! first conversion, not before.

use numpy::Element;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// The values of one column, in the engine's own element type.
pub(crate) enum Data {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// An element type a column can hold, and its NumPy dtype name.
pub(crate) trait Value: Element + Copy + Sized {
    const DTYPE: &'static str;
    fn data(v: Vec<Self>) -> Data;
}

macro_rules! value {
    ($t:ty, $variant:ident, $name:literal) => {
        impl Value for $t {
            const DTYPE: &'static str = $name;
            fn data(v: Vec<Self>) -> Data {
                Data::$variant(v)
            }
        }
    };
}
value!(bool, Bool, "bool");
value!(u8, U8, "uint8");
value!(u32, U32, "uint32");
value!(u64, U64, "uint64");
value!(i64, I64, "int64");
value!(f64, F64, "float64");

/// Runs `$body` with `$v` bound to the column's `Vec`, whatever its type.
macro_rules! each {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::Bool($v) => $body,
            Data::U8($v) => $body,
            Data::U32($v) => $body,
            Data::U64($v) => $body,
            Data::I64($v) => $body,
            Data::F64($v) => $body,
        }
    };
}

/// One column of a recorded series: `len()`, `tolist()`, iteration, the
/// NumPy `dtype` name it converts to, and `numpy.asarray(column)`.
#[pyclass(module = "qoslab._core", frozen)]
pub(crate) struct Column {
    data: Data,
    dtype: &'static str,
}

impl Column {
    /// The column of `v` (moved, not copied).
    pub(crate) fn new<T: Value>(v: Vec<T>) -> Self {
        Column {
            data: T::data(v),
            dtype: T::DTYPE,
        }
    }
}

#[pymethods]
impl Column {
    fn __len__(&self) -> usize {
        each!(&self.data, v => v.len())
    }

    /// The NumPy dtype of `numpy.asarray(column)` ("uint64", "bool"...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype
    }

    /// The values as a list of Python ints (floats, bools).
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        each!(&self.data, v => PyList::new(py, v.iter().copied()))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.tolist(py)?.as_any().try_iter()?.into_any())
    }

    /// NumPy's conversion protocol: a new array of the column's dtype
    /// (`dtype` given: converted to it). It cannot share the column's
    /// memory, so `copy=False` is refused as NumPy asks.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "a qoslab Column is not NumPy memory: it cannot be viewed without a copy",
            ));
        }
        let a = each!(&self.data, v => crate::stream::array(py, v)?.into_any());
        match dtype {
            Some(d) if !d.is_none() => a.call_method1("astype", (d,)),
            _ => Ok(a),
        }
    }

    fn __repr__(&self) -> String {
        format!("Column(dtype={}, len={})", self.dtype, self.__len__())
    }
}
