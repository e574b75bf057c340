//! # qoslab-sim — a deterministic packet-level discrete-event simulator
//!
//! TCP senders and receivers, UDP and ping sources run over nodes and
//! point-to-point links; any link's egress (and ingress) can carry a
//! conditioner from `qoslab-core`. Time is integer nanoseconds, every random
//! choice comes from a seeded per-component stream: the same [`SimConfig`]
//! gives byte-identical [`SimResult`]s.
//!
//! Seams:
//! - [`config`] — what to simulate (plain data; the scenario file layer and
//!   the Python bindings build it).
//! - [`result`] — what came out (summaries and the time series asked for).
//! - [`cc`] — the congestion-control trait and its algorithms.
//! - [`tcp`] — sans-I/O TCP sender and receiver state machines.
//! - [`policy`], [`tree`] — the link conditioners, re-exported from
//!   `qoslab-policy` under their old paths.
//! - [`run`] — the entry point.

pub mod addr;
mod arena;
pub mod capture;
pub mod cc;
pub mod config;
pub mod engine;
mod hist;
pub mod link;
pub mod net;
pub mod policy;
pub mod result;
mod sim;
mod stats;
pub mod tcp;
#[cfg(test)]
mod testutil;
pub mod timer;
mod traffic;
pub mod tree;

pub use config::SimConfig;
pub use net::MAX_NODES;
pub use result::SimResult;
pub use sim::{build_links, sample_policies};

use core::fmt;

/// Why a simulation could not run (bad configuration found while building
/// the model, or the caller cancelled it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The configuration is inconsistent: `path` names the item (e.g.
    /// `traffic[1].to`, `links[0].egress.cir`), `message` what is wrong.
    Config { path: String, message: String },
    /// The progress callback asked to stop (Ctrl-C).
    Cancelled,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config { path, message } => write!(f, "{path}: {message}"),
            SimError::Cancelled => write!(f, "simulation cancelled"),
        }
    }
}

impl std::error::Error for SimError {}

/// A policy that cannot be built is a configuration error at its path.
impl From<qoslab_policy::PolicyError> for SimError {
    fn from(e: qoslab_policy::PolicyError) -> SimError {
        SimError::Config {
            path: e.path,
            message: e.message,
        }
    }
}

/// How far a run has got, handed to the progress callback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub sim_time_ns: u64,
    pub duration_ns: u64,
    pub events: u64,
}

/// One flow as the engine numbers it ([`result::FlowResult::id`] order):
/// what the emulator (`qoslab-emu`) needs to start the same flow with real
/// programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFlow {
    pub id: u32,
    /// Index of the `[[traffic]]` entry (`SimConfig::traffic`) it comes from.
    pub traffic_index: u32,
    /// `tcp`, `udp` or `ping`.
    pub protocol: &'static str,
    pub label: String,
    pub from: String,
    pub to: String,
    pub start_ns: u64,
    /// `None`: runs to the end.
    pub stop_ns: Option<u64>,
}

/// Validates `config` exactly as [`run`] does and lists its flows (same
/// ids, endpoints and schedule as the simulation would use).
pub fn plan_flows(config: &SimConfig) -> Result<Vec<PlannedFlow>, SimError> {
    Ok(sim::Sim::new(config)?.planned_flows(config))
}

/// Validates `config` exactly as [`run`] does and estimates what running it
/// takes: events, rows per recorded series and an upper bound of its peak
/// memory ([`Estimate`]). Pure: nothing is run.
pub fn estimate(config: &SimConfig) -> Result<Estimate, SimError> {
    Ok(sim::Sim::new(config)?.estimate(config))
}

pub use sim::{Estimate, Kind, Pkt};

/// Runs `config` like [`run`], handing every packet that passes `points`
/// (direction, [`capture::Point`], file index) to `sink`, then finishes the
/// sink. The second member is what the sink's `finish` gave: records
/// written per file, or why a file could not be written (the simulated
/// result is unaffected either way).
pub fn run_with_capture(
    config: &SimConfig,
    progress: &mut dyn FnMut(Progress) -> bool,
    points: &[(u32, capture::Point, u32)],
    sink: Box<dyn capture::CaptureSink>,
) -> Result<(SimResult, Result<Vec<u64>, String>), SimError> {
    let mut sim = sim::Sim::new(config)?;
    sim.set_capture(points, sink);
    sim.run_loop(progress)?;
    let mut sink = sim.take_capture().expect("set above");
    let written = sink.finish(config.duration.as_ns());
    Ok((sim.finish(), written))
}

/// Run `config` to completion. `progress` is called every few hundred
/// thousand events; returning `false` cancels the run (→ [`SimError::Cancelled`]).
pub fn run(
    config: &SimConfig,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<SimResult, SimError> {
    sim::Sim::new(config)?.run(progress)
}
