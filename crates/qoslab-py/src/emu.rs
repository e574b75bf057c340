//! Bindings for the emulator (`qoslab-emu`, Linux only): `emu_plan` says
//! what `qoslab emulate` must set up for a scenario; `emu_start` starts the
//! userspace forwarder in a Rust thread and returns an `EmuHandle`
//! (`stats()`, `stop()`; dropping it stops the thread).
//!
//! Errors: a scenario that cannot be emulated raises `qoslab.ScenarioError`
//! (located, as `qoslab run`); I/O failures (namespace or interface
//! missing, not root) raise `qoslab.EmulationError`, a `qoslab.QoslabError`
//! and a `RuntimeError`.

use crate::sim::{parse, policy_dict, recorded, scenario_err};
use numpy::{Element, PyArray1};
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qoslab_emu::conditioner::KernelQdisc;
use qoslab_emu::{EmuError, EmuSpec, Handle};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

create_exception!(
    qoslab,
    EmulationError,
    crate::errors::QoslabRuntimeError,
    "The emulator could not run (namespace or interface missing, not root, I/O error)."
);

fn emu_err(e: EmuError) -> PyErr {
    EmulationError::new_err(e.0)
}

/// What `qoslab emulate` must set up for scenario `text`: hosts, flows
/// (the simulator's ids) with their Linux settings, policies with their tc
/// form, links.
#[pyfunction]
#[pyo3(signature = (text, filename="<string>"))]
pub(crate) fn emu_plan<'py>(
    py: Python<'py>,
    text: &str,
    filename: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(py, text, filename)?;
    let p = qoslab_emu::plan(&sc).map_err(|e| scenario_err(py, e))?;
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("seed", p.seed)?;
    d.set_item("duration_ns", p.duration_ns)?;
    d.set_item("record_interval_ns", p.record_interval_ns)?;
    d.set_item("series", recorded(&sc))?;
    d.set_item("hosts", &p.hosts)?;
    let flows = PyList::empty(py);
    for f in &p.flows {
        let x = PyDict::new(py);
        x.set_item("id", f.flow.id)?;
        x.set_item("protocol", f.flow.protocol)?;
        x.set_item("traffic_index", f.flow.traffic_index)?;
        x.set_item("label", &f.flow.label)?;
        x.set_item("from", &f.flow.from)?;
        x.set_item("to", &f.flow.to)?;
        x.set_item("start_ns", f.flow.start_ns)?;
        x.set_item("stop_ns", f.flow.stop_ns)?;
        x.set_item("bytes", f.bytes)?;
        x.set_item("dscp", f.dscp)?;
        match &f.tcp {
            Some(t) => {
                let y = PyDict::new(py);
                y.set_item("cc", t.cc)?;
                y.set_item("sack", t.sack)?;
                y.set_item("timestamps", t.timestamps)?;
                y.set_item("window_scaling", t.window_scaling)?;
                y.set_item("socket_buffer_bytes", t.socket_buffer_bytes)?;
                y.set_item("mss", t.mss)?;
                y.set_item("initial_window_segments", t.initial_window_segments)?;
                y.set_item("initial_ssthresh_bytes", t.initial_ssthresh_bytes)?;
                y.set_item("min_rto_ns", t.min_rto_ns)?;
                y.set_item("frto", t.frto)?;
                y.set_item("rack", t.rack)?;
                y.set_item("tlp", t.tlp)?;
                y.set_item("ecn", t.ecn)?;
                x.set_item("tcp", y)?;
            }
            None => x.set_item("tcp", py.None())?,
        }
        match &f.udp {
            Some(u) => {
                let y = PyDict::new(py);
                y.set_item("rate_bps", u.rate_bps)?;
                y.set_item("payload_bytes", u.payload_bytes)?;
                y.set_item("on_ns", u.on_ns)?;
                y.set_item("off_ns", u.off_ns)?;
                x.set_item("udp", y)?;
            }
            None => x.set_item("udp", py.None())?,
        }
        match &f.ping {
            Some(g) => {
                let y = PyDict::new(py);
                y.set_item("interval_ns", g.interval_ns)?;
                y.set_item("payload_bytes", g.payload_bytes)?;
                x.set_item("ping", y)?;
            }
            None => x.set_item("ping", py.None())?,
        }
        flows.append(x)?;
    }
    d.set_item("flows", flows)?;
    let policies = PyList::empty(py);
    for pol in &p.policies {
        let x = PyDict::new(py);
        x.set_item("name", &pol.name)?;
        x.set_item("link", &pol.link)?;
        x.set_item("kind", &pol.kind)?;
        match &pol.kernel {
            None => x.set_item("kernel", py.None())?,
            Some(KernelQdisc::Root { qdisc, args }) => {
                let k = PyDict::new(py);
                k.set_item("qdisc", qdisc)?;
                k.set_item("tc_args", args)?;
                x.set_item("kernel", k)?;
            }
            Some(KernelQdisc::Commands(c)) => {
                let k = PyDict::new(py);
                k.set_item("qdisc", "htb")?;
                k.set_item("commands", c)?;
                x.set_item("kernel", k)?;
            }
        }
        policies.append(x)?;
    }
    d.set_item("policies", policies)?;
    let links = PyList::empty(py);
    for l in &p.links {
        let x = PyDict::new(py);
        x.set_item("name", &l.name)?;
        x.set_item("rate_bps", l.rate_bps)?;
        x.set_item("delay_ns", l.delay_ns)?;
        x.set_item("loss_ppm", l.loss_ppm)?;
        links.append(x)?;
    }
    d.set_item("links", links)?;
    Ok(d)
}

/// A running forwarder.
#[pyclass(module = "qoslab._core")]
pub(crate) struct EmuHandle {
    inner: Option<Handle>,
}

fn col<'py, T: Element + Clone>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    name: &str,
    v: &[T],
) -> PyResult<()> {
    d.set_item(name, PyArray1::from_slice(py, v))
}

#[pymethods]
impl EmuHandle {
    /// Live counters: running (false once stopped, or after an I/O error
    /// that `stop()` will raise), frames_in, frames_out, dropped, lost,
    /// unroutable, oversize, policy_drops (per policy, in policy_names
    /// order), policy_names.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let Some(h) = &self.inner else {
            d.set_item("running", false)?;
            return Ok(d);
        };
        let l = h.live();
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        d.set_item("running", h.is_running())?;
        d.set_item("frames_in", g(&l.frames_in))?;
        d.set_item("frames_out", g(&l.frames_out))?;
        d.set_item("dropped", g(&l.dropped))?;
        d.set_item("lost", g(&l.lost))?;
        d.set_item("unroutable", g(&l.unroutable))?;
        d.set_item("oversize", g(&l.oversize))?;
        let pd: Vec<u64> = l.policy_drops.iter().map(g).collect();
        d.set_item("policy_drops", pd)?;
        d.set_item("policy_names", h.policy_names.clone())?;
        Ok(d)
    }

    /// Stops the forwarder (joins its thread) and returns the results.
    fn stop<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut h = self
            .inner
            .take()
            .ok_or_else(|| EmulationError::new_err("the emulator was already stopped"))?;
        let r = py.detach(|| h.stop()).map_err(emu_err)?;
        let d = PyDict::new(py);
        let policies = PyList::empty(py);
        for p in &r.policies {
            policies.append(policy_dict(py, p)?)?;
        }
        d.set_item("policies", policies)?;
        let links = PyList::empty(py);
        for l in &r.links {
            let x = PyDict::new(py);
            x.set_item("name", &l.name)?;
            x.set_item("rate_bps", l.rate_bps)?;
            x.set_item("delay_ns", l.delay_ns)?;
            x.set_item("loss_ppm", l.loss_ppm)?;
            x.set_item("packets", l.packets)?;
            x.set_item("bytes", l.bytes)?;
            x.set_item("lost", l.lost)?;
            x.set_item("dropped", l.dropped)?;
            links.append(x)?;
        }
        d.set_item("links", links)?;
        let s = &r.series;
        let sd = PyDict::new(py);
        col(py, &sd, "queue_time_ns", &s.queue_time_ns)?;
        col(py, &sd, "queue_policy", &s.queue_policy)?;
        col(py, &sd, "queue_packets", &s.queue_packets)?;
        col(py, &sd, "queue_bytes", &s.queue_bytes)?;
        col(py, &sd, "tokens_bytes", &s.tokens_bytes)?;
        col(py, &sd, "color_time_ns", &s.color_time_ns)?;
        col(py, &sd, "color_policy", &s.color_policy)?;
        col(py, &sd, "color_green_bytes", &s.color_green_bytes)?;
        col(py, &sd, "color_yellow_bytes", &s.color_yellow_bytes)?;
        col(py, &sd, "color_red_bytes", &s.color_red_bytes)?;
        col(py, &sd, "color_dropped_bytes", &s.color_dropped_bytes)?;
        d.set_item("series", sd)?;
        let t = PyDict::new(py);
        t.set_item("count", r.timing.count)?;
        t.set_item("mean_ns", r.timing.mean_ns)?;
        t.set_item("p50_ns", r.timing.p50_ns)?;
        t.set_item("p99_ns", r.timing.p99_ns)?;
        t.set_item("p999_ns", r.timing.p999_ns)?;
        t.set_item("max_ns", r.timing.max_ns)?;
        t.set_item("wake_count", r.timing.wake_count)?;
        t.set_item("wake_p50_ns", r.timing.wake_p50_ns)?;
        t.set_item("wake_p99_ns", r.timing.wake_p99_ns)?;
        t.set_item("wake_max_ns", r.timing.wake_max_ns)?;
        t.set_item("sent_count", r.timing.sent_count)?;
        t.set_item("handed_p50_ns", r.timing.handed_p50_ns)?;
        t.set_item("handed_p99_ns", r.timing.handed_p99_ns)?;
        t.set_item("sent_p50_ns", r.timing.sent_p50_ns)?;
        t.set_item("sent_p99_ns", r.timing.sent_p99_ns)?;
        t.set_item("sent_max_ns", r.timing.sent_max_ns)?;
        t.set_item("realtime_priority", r.realtime)?;
        d.set_item("timing", t)?;
        let c = &r.counters;
        d.set_item("frames_in", c.frames_in)?;
        d.set_item("frames_out", c.frames_out)?;
        d.set_item("unroutable", c.unroutable)?;
        d.set_item("oversize", c.oversize)?;
        d.set_item("dropped", c.dropped)?;
        d.set_item("lost", c.lost)?;
        d.set_item("loops", c.loops)?;
        d.set_item("checksums_completed", c.checksums_completed)?;
        d.set_item("super_packets", c.super_packets)?;
        d.set_item("tx_refused", r.tx_refused)?;
        d.set_item("rx_ring_drops", r.rx_ring_drops)?;
        d.set_item("tx_super_packets", r.tx_super_packets)?;
        d.set_item("tx_super_segments", r.tx_super_segments)?;
        d.set_item("tx_whole_super_packets", r.tx_whole_super_packets)?;
        let caps: Vec<(String, u64)> = r
            .captures
            .iter()
            .map(|(p, n)| (p.display().to_string(), *n))
            .collect();
        d.set_item("captures", caps)?;
        d.set_item("threads", r.threads)?;
        Ok(d)
    }
}

/// Starts the forwarder of scenario `text` in namespace `netns`.
#[pyfunction]
#[pyo3(signature = (text, filename, netns, ports, host_ips, kernel_links, captures, t0_ns, offload=false, threads=0, busy_poll=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn emu_start(
    py: Python<'_>,
    text: &str,
    filename: &str,
    netns: &str,
    ports: HashMap<String, String>,
    host_ips: HashMap<String, String>,
    kernel_links: HashMap<String, (String, String)>,
    captures: Vec<(String, String, PathBuf)>,
    t0_ns: u64,
    offload: bool,
    threads: usize,
    busy_poll: bool,
) -> PyResult<EmuHandle> {
    let sc = parse(py, text, filename)?;
    // Refuse what `emu_plan` refuses.
    qoslab_emu::plan(&sc).map_err(|e| scenario_err(py, e))?;
    let mut ports: Vec<(String, String)> = ports.into_iter().collect();
    ports.sort();
    let mut host_ips: Vec<(String, String)> = host_ips.into_iter().collect();
    host_ips.sort();
    let mut kernel: Vec<(String, String, String)> = kernel_links
        .into_iter()
        .map(|(l, (a, b))| (l, a, b))
        .collect();
    kernel.sort();
    let spec = EmuSpec {
        netns: netns.to_string(),
        ports,
        host_ips,
        kernel_links: kernel,
        captures,
        t0_ns,
        offload,
        threads,
        busy_poll,
    };
    let h = py
        .detach(|| qoslab_emu::start(&sc, spec))
        .map_err(emu_err)?;
    Ok(EmuHandle { inner: Some(h) })
}
