//! The link's conditioners and their counters live in `qoslab-policy`
//! (shared with the emulator, the trace drivers and the bindings); this
//! module keeps the simulator's old paths working. The builders here are
//! `qoslab_policy::policy`'s with the error as a [`SimError::Config`].

use crate::SimError;
use qoslab_core::queue::Fifo;
use qoslab_core::{AnyShaper, ConfigError, Policer};
pub use qoslab_policy::policy::{meter_tokens_bytes, EgressQueue, Policy};
use qoslab_policy::spec::{FifoSpec, MeterSpec, ShaperSpec};

/// A core parameter error as a config error at `path.<param>`.
pub fn core_err(path: &str, e: ConfigError) -> SimError {
    qoslab_policy::policy::core_err(path, e).into()
}

/// Builds the policer of `spec`; errors name `path.<param>`.
pub fn build_policer(spec: &MeterSpec, path: &str) -> Result<Policer, SimError> {
    Ok(qoslab_policy::policy::build_policer(spec, path)?)
}

/// Builds the shaper of `spec`; errors name `path.<param>`.
pub fn build_shaper(spec: &ShaperSpec, path: &str) -> Result<AnyShaper, SimError> {
    Ok(qoslab_policy::policy::build_shaper(spec, path)?)
}

/// Builds the FIFO of `spec`; errors name `path.<param>`.
pub fn build_fifo(spec: &FifoSpec, path: &str) -> Result<Fifo, SimError> {
    Ok(qoslab_policy::policy::build_fifo(spec, path)?)
}
