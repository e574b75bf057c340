//! Bindings for captures in (`qoslab-capture`): analyse a pcap/pcapng
//! capture's flows and detect policing, with the GIL released; results as
//! dicts of plain values and NumPy columns. A capture that cannot be read
//! raises `qoslab.CaptureError` (a `ValueError`, one line).

use numpy::Element;
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qoslab_capture::analysis::{self, Analysis, FlowOut, Options, RttSummary};
use qoslab_capture::policing::{self, Detection, PolicingRow};
use qoslab_capture::{reader, CaptureError as CoreError};

create_exception!(
    qoslab,
    CaptureError,
    crate::errors::QoslabValueError,
    "A capture file cannot be read."
);

fn err(e: CoreError) -> PyErr {
    CaptureError::new_err(e.message)
}

fn col<'py, T: Element + Copy>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    name: &str,
    v: &[T],
) -> PyResult<()> {
    d.set_item(name, crate::stream::array(py, v)?)
}

fn rtt_dict<'py>(py: Python<'py>, r: &RttSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("samples", r.samples)?;
    d.set_item("min_ns", r.min_ns)?;
    d.set_item("mean_ns", r.mean_ns)?;
    d.set_item("p50_ns", r.p50_ns)?;
    d.set_item("p95_ns", r.p95_ns)?;
    d.set_item("max_ns", r.max_ns)?;
    Ok(d)
}

fn flow_dict<'py>(py: Python<'py>, f: &FlowOut) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", f.id)?;
    d.set_item("protocol", f.protocol)?;
    d.set_item("from", &f.from)?;
    d.set_item("to", &f.to)?;
    d.set_item("connection", f.connection)?;
    d.set_item("start_ns", f.start_ns)?;
    d.set_item("end_ns", f.end_ns)?;
    d.set_item("bytes_delivered", f.bytes_delivered)?;
    d.set_item("goodput_bps", f.goodput_bps)?;
    d.set_item("packets_sent", f.packets_sent)?;
    d.set_item("packets", f.packets)?;
    d.set_item("wire_bytes", f.wire_bytes)?;
    d.set_item("payload_bytes", f.payload_bytes)?;
    d.set_item("retransmits", f.retransmits)?;
    d.set_item("fast_retransmits", f.fast_retransmits)?;
    d.set_item("rto_retransmits", f.rto_retransmits)?;
    d.set_item("spurious_retransmits", f.spurious_retransmits)?;
    d.set_item("out_of_order", f.out_of_order)?;
    d.set_item("lost_segments", f.lost_segments)?;
    d.set_item("keep_alives", f.keep_alives)?;
    d.set_item("timeouts", f.timeouts)?;
    d.set_item("fast_recoveries", f.fast_recoveries)?;
    d.set_item("dup_acks", f.dup_acks)?;
    d.set_item("sack_blocks", f.sack_blocks)?;
    d.set_item("zero_windows", f.zero_windows)?;
    d.set_item("max_bytes_in_flight", f.max_bytes_in_flight)?;
    d.set_item("mss", f.mss)?;
    d.set_item("wscale", f.wscale)?;
    d.set_item("warnings", f.warnings.clone())?;
    d.set_item("rtt", rtt_dict(py, &f.rtt)?)?;
    Ok(d)
}

fn analysis_dict<'py>(py: Python<'py>, a: &Analysis) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("format", a.format)?;
    d.set_item("records", a.records)?;
    d.set_item("ip_packets", a.ip_packets)?;
    d.set_item("non_ip", a.non_ip)?;
    d.set_item("malformed", a.malformed)?;
    d.set_item("unknown_linktypes", a.unknown_linktypes.clone())?;
    d.set_item("start_epoch_ns", a.start_epoch_ns)?;
    d.set_item("duration_ns", a.duration_ns)?;
    d.set_item("bin_ns", a.bin_ns)?;
    d.set_item("warnings", a.warnings.clone())?;
    let flows = PyList::empty(py);
    for f in &a.flows {
        flows.append(flow_dict(py, f)?)?;
    }
    d.set_item("flows", flows)?;
    let s = &a.series;
    let series = PyDict::new(py);
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.goodput_time_ns)?;
    col(py, &t, "flow", &s.goodput_flow)?;
    col(py, &t, "bytes", &s.goodput_bytes)?;
    col(py, &t, "retransmits", &s.goodput_retransmits)?;
    series.set_item("goodput", t)?;
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.goodput_time_ns)?;
    col(py, &t, "flow", &s.goodput_flow)?;
    col(py, &t, "wire_bytes", &s.io_wire_bytes)?;
    col(py, &t, "payload_bytes", &s.io_payload_bytes)?;
    series.set_item("io", t)?;
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.rtt_time_ns)?;
    col(py, &t, "flow", &s.rtt_flow)?;
    col(py, &t, "rtt_ns", &s.rtt_ns)?;
    series.set_item("rtt", t)?;
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.seg_time_ns)?;
    col(py, &t, "flow", &s.seg_flow)?;
    col(py, &t, "seq", &s.seg_seq)?;
    col(py, &t, "len", &s.seg_len)?;
    col(py, &t, "retransmit", &s.seg_retransmit)?;
    series.set_item("segments", t)?;
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.ack_time_ns)?;
    col(py, &t, "flow", &s.ack_flow)?;
    col(py, &t, "ack", &s.ack_seq)?;
    col(py, &t, "rwnd_bytes", &s.ack_rwnd_bytes)?;
    series.set_item("acks", t)?;
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.sack_time_ns)?;
    col(py, &t, "flow", &s.sack_flow)?;
    col(py, &t, "left", &s.sack_left)?;
    col(py, &t, "right", &s.sack_right)?;
    series.set_item("sacks", t)?;
    let t = PyDict::new(py);
    col(py, &t, "time_ns", &s.inflight_time_ns)?;
    col(py, &t, "flow", &s.inflight_flow)?;
    col(py, &t, "bytes", &s.inflight_bytes)?;
    series.set_item("inflight", t)?;
    d.set_item("series", series)?;
    Ok(d)
}

/// Analyse a capture (pcap/pcapng, optionally xz-compressed) given as bytes:
/// flows per direction, Wireshark-style TCP analysis, series.
#[pyfunction]
#[pyo3(signature = (data, bin_ns, port=None))]
pub fn analyze_capture<'py>(
    py: Python<'py>,
    data: &[u8],
    bin_ns: u64,
    port: Option<u16>,
) -> PyResult<Bound<'py, PyDict>> {
    let a = py
        .detach(|| {
            let bytes = reader::decompress(data)?;
            analysis::analyze(&bytes, Options { bin_ns, port })
        })
        .map_err(err)?;
    analysis_dict(py, &a)
}

fn detection_dict<'py>(py: Python<'py>, d: &Detection) -> PyResult<Bound<'py, PyDict>> {
    let x = PyDict::new(py);
    let ok = d.code == policing::Code::Policed;
    x.set_item("code", d.code as u8)?;
    x.set_item("meaning", d.code.describe())?;
    x.set_item("policed", ok)?;
    x.set_item("rate_bps", if ok { Some(d.rate_bps) } else { None })?;
    x.set_item("burst_bytes", if ok { Some(d.burst_bytes) } else { None })?;
    Ok(x)
}

fn row_dict<'py>(py: Python<'py>, r: &PolicingRow) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("flow", r.flow)?;
    d.set_item("segment", r.segment)?;
    d.set_item("direction", r.direction)?;
    d.set_item("from", format!("{}:{}", r.endpoints.0, r.endpoints.1))?;
    d.set_item("to", format!("{}:{}", r.endpoints.2, r.endpoints.3))?;
    d.set_item("data_packets", r.data_packets)?;
    d.set_item("losses", r.losses)?;
    d.set_item("all_losses", detection_dict(py, &r.all_losses)?)?;
    d.set_item("cutoff2", detection_dict(py, &r.cutoff2)?)?;
    // The published CSV row after its file column.
    let csv = r.flach_csv("");
    d.set_item("flach_csv", &csv[1..])?;
    d.set_item("verdict", r.verdict())?;
    match r.extension {
        Some(e) => {
            let x = PyDict::new(py);
            x.set_item("bucket_bytes", e.bucket_bytes)?;
            x.set_item("intercept_bytes", e.intercept_bytes)?;
            x.set_item("wire_rate_bps", e.wire_rate_bps)?;
            x.set_item("loss_fraction", e.loss_fraction)?;
            d.set_item("extension", x)?;
        }
        None => d.set_item("extension", py.None())?,
    }
    Ok(d)
}

/// Run the policing detector of Flach et al. (SIGCOMM 2016) over a capture's
/// TCP flows: one row per flow, segment and direction.
#[pyfunction]
#[pyo3(signature = (data, port=None))]
pub fn policing_capture<'py>(
    py: Python<'py>,
    data: &[u8],
    port: Option<u16>,
) -> PyResult<Bound<'py, PyList>> {
    let rows = py
        .detach(|| {
            let bytes = reader::decompress(data)?;
            let (packets, _) = qoslab_capture::policing_input(&bytes, port)?;
            Ok::<_, CoreError>(policing::detect_all(&packets))
        })
        .map_err(err)?;
    let out = PyList::empty(py);
    for r in &rows {
        out.append(row_dict(py, r)?)?;
    }
    Ok(out)
}

/// A capture as a trace: every frame's time (ns from the first record) and
/// its length on the wire, in time order; plus the reader's warnings.
#[pyfunction]
pub fn capture_trace<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let (times, sizes, warnings) = py
        .detach(|| {
            let bytes = reader::decompress(data)?;
            let mut frames: Vec<(i64, u64)> = Vec::new();
            let mut summary = reader::read_records(&bytes, |r| frames.push((r.ts_ns(), r.orig_len as u64)))?;
            // Capture points timestamp out of order now and then; a trace is in time order.
            let late = frames.windows(2).filter(|w| w[1].0 < w[0].0).count();
            if late > 0 {
                frames.sort_by_key(|f| f.0);
                summary.warnings.push(format!(
                    "{late} frames were timestamped before the frame captured ahead of them; frames sorted by time"
                ));
            }
            let t0 = frames.first().map_or(0, |f| f.0);
            let times: Vec<u64> = frames.iter().map(|f| (f.0 - t0) as u64).collect();
            let sizes: Vec<u64> = frames.iter().map(|f| f.1).collect();
            Ok::<_, CoreError>((times, sizes, summary.warnings))
        })
        .map_err(err)?;
    let d = PyDict::new(py);
    col(py, &d, "time_ns", &times)?;
    col(py, &d, "size_bytes", &sizes)?;
    d.set_item("warnings", warnings)?;
    Ok(d)
}

/// Register the capture functions and `CaptureError` in `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CaptureError", m.py().get_type::<CaptureError>())?;
    m.add_function(wrap_pyfunction!(analyze_capture, m)?)?;
    m.add_function(wrap_pyfunction!(policing_capture, m)?)?;
    m.add_function(wrap_pyfunction!(capture_trace, m)?)?;
    Ok(())
}
