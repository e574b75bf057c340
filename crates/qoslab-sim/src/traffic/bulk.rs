//! iperf3 TCP bulk transfer: one [`TcpSender`] (the client, at the source
//! host) and one [`TcpReceiver`] (the server, at the destination) per flow,
//! driven through the sans-I/O contract of [`crate::tcp`]. Each data
//! connection first carries iperf3's 37-byte cookie and its data waits for
//! the cookie's ACK (iperf3's TEST_RUNNING), set by the scenario's
//! `tcp-bulk` as [`TcpConfig::app_preamble_bytes`](crate::config::TcpConfig::app_preamble_bytes).
//!
//! Timers: each endpoint exposes one `next_timer()`; the engine keeps it as
//! the endpoint's deadline slot in the event queue
//! ([`crate::engine::EventQueue::set_deadline`]), set after every call into
//! the endpoint: a deadline moved later (an RTO pushed back by each ACK, a
//! delayed ACK cancelled by the next segment, an application read pushed
//! back) moves the slot and costs no event; the event comes only when the
//! deadline is due. Timers due at the same nanosecond as a packet arrival
//! run before it, whichever event set them (the rule is in
//! [`crate::engine`]). TCP timers are exact (Linux uses hrtimers for RTO,
//! delayed ACK and pacing), whatever the node's
//! [`TimerSpec`](crate::config::TimerSpec).

use crate::tcp::{TcpHeader, TcpIo, TcpReceiver, TcpSender};
use qoslab_core::Duration;

/// Which endpoint of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender = 0,
    Receiver = 1,
}

/// One TCP connection.
pub struct TcpConn {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    /// Index of the flow in the results.
    pub flow: u32,
    pub header_bytes: u32,
    /// `tcp-fetch`: the request/response state (`None` for bulk).
    pub fetch: Option<Box<super::fetch::Fetch>>,
}

impl TcpConn {
    pub fn next_timer_ns(&self, side: Side) -> Option<u64> {
        match side {
            Side::Sender => self.sender.next_timer(),
            Side::Receiver => self.receiver.next_timer(),
        }
        .map(|t| t.as_ns())
    }
}

/// What an endpoint asked for during one call; reused between calls so
/// the steady state allocates nothing.
#[derive(Debug, Default)]
pub struct IoBuf {
    pub out: Vec<TcpHeader>,
    pub rtt: Vec<Duration>,
}

impl TcpIo for IoBuf {
    fn transmit(&mut self, header: TcpHeader) {
        self.out.push(header);
    }
    fn rtt_sample(&mut self, rtt: Duration) {
        self.rtt.push(rtt);
    }
}
