//! # qoslab-emu — the userspace network of `qoslab emulate` (Linux only)
//!
//! Real hosts (network namespaces running iperf3 and ping) each have one
//! veth whose other end, the *port*, lives in a forwarder namespace. This
//! crate reads Ethernet frames from the ports (AF_PACKET rings), carries them
//! through the scenario's topology exactly as the simulator would —
//! routes from `qoslab_sim::net`, the policies `qoslab_sim` builds from
//! the same scenario, serialisation, loss, delay — and writes them,
//! unchanged, to the destination host's port, in real time.
//!
//! - [`frame`]: Ethernet/IPv4 parsing (proptested).
//! - [`gso`]: virtio-net headers, TCP/IPv4 super-packets split into wire
//!   segments (`--offload on`).
//! - [`conditioner`]: the one place conditioners are built.
//! - [`tc`]: tc command lines of policy trees the kernel can run.
//! - [`model`]: the network as a discrete-event model, no I/O, no clock.
//! - [`timing`]: clocks, lateness histogram.
//! - [`sys`]: namespaces, packet sockets, ppoll.
//! - [`ring`]: the ports' TPACKET_V2 receive and transmit rings.
//! - [`capture`]: pcap files.
//! - [`plan`](mod@plan): what the orchestration must set up (`emu_plan`).
//! - [`forwarder`]: the real-time thread and its handle (`emu_start`).

#![cfg(target_os = "linux")]

pub mod capture;
pub mod conditioner;
pub mod forwarder;
pub mod frame;
pub mod gso;
pub mod model;
pub mod plan;
pub mod ring;
pub mod sys;
pub mod tc;
pub mod timing;

pub use forwarder::{start, EmuError, EmuResult, EmuSpec, Handle, LiveStats};
pub use plan::{plan, Plan};
