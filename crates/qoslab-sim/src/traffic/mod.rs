//! Traffic sources: when each sends, and what. One file per kind.
//!
//! - [`udp`] — iperf3 `-u` constant bit rate and on/off UDP.
//! - [`ping`] — ICMP echo probes.
//! - [`bulk`] — iperf3 TCP bulk transfer (a `TcpSender` / `TcpReceiver` pair).
//! - [`fetch`] — request/response chunks over one such connection.

pub mod bulk;
pub mod fetch;
pub mod ping;
pub mod udp;

/// IPv4 (20) + UDP (8) header bytes, also IPv4 + ICMP echo (20 + 8).
pub const IP_UDP_HEADER_BYTES: u32 = 28;
