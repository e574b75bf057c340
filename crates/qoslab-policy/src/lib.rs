//! # qoslab-policy — one policy layer over `qoslab-core`
//!
//! Everything between "a policy written as strings" and "a `Shaper` a
//! link drains", shared by the simulator (`qoslab-sim`), the emulator, the
//! trace drivers (`qoslab shape`) and the Python bindings, so none of them
//! depends on another for its conditioners:
//!
//! - [`spec`] — the policy specs (`PolicySpec`, `TreeSpec`, `QdiscSpec`, …),
//!   plain data with each conditioner's parameters as strings.
//! - [`registry`] — every kind name, its family, description, aliases and
//!   canonical name, built from `qoslab-core`'s own kind lists.
//! - [`tree`] — `TreeSpec` → `PolicyTree` (one `Shaper` with per-class
//!   counting taps).
//! - [`policy`] — `EgressQueue` (FIFO, shaper or tree), `Policy` (a policer
//!   and the per-policy counters), the `build_*` helpers.
//! - [`result`] — `PolicyResult` / `ClassResult`, what a policy reports.
//! - [`trace`] — any queue, scheduler, shaper or whole tree run over a
//!   trace behind a link of some rate.
//!
//! Errors are [`PolicyError`]s: a path inside the caller's configuration
//! (`links[0].egress_ab.class[2].ceil`) and a message; the simulator turns
//! them into its `SimError::Config`, the scenario layer locates them in the
//! file.

pub mod policy;
pub mod registry;
pub mod result;
pub mod spec;
pub mod stab;
pub mod trace;
pub mod tree;

pub use policy::{EgressQueue, Policy};
pub use registry::{Family, Kind};
pub use result::{ClassResult, PolicyResult};
pub use spec::{
    ClassSpec, FifoLimit, FifoSpec, FilterSpec, MeterSpec, PolicySpec, QdiscSpec, ShaperSpec,
    TreeSpec,
};
pub use tree::PolicyTree;

use core::fmt;

/// A policy that cannot be built: `path` names the item in the caller's
/// configuration (`bottleneck.egress.class[2].ceil`), `message` what is
/// wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    pub path: String,
    pub message: String,
}

impl PolicyError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> PolicyError {
        PolicyError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for PolicyError {}
