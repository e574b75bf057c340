//! TCP as sans-I/O state machines: the engine hands a [`TcpSender`] or
//! [`TcpReceiver`] the segments that arrive and the timers that fire; they
//! answer through a [`TcpIo`] with the segments to put on the wire. No
//! clock, no queue of their own outside the send window, so the same code
//! can be unit-tested with a hand-driven clock.
//!
//! Sequence numbers are 64-bit and start at 0 (ISN 0, SYN consumes 0, data
//! starts at 1): nothing wraps in a simulation, and sequence plots read
//! directly as byte offsets.
//!
//! The engine's contract, for each endpoint:
//! 1. call the endpoint (`start`, `on_segment`, `on_timer`) with `now`;
//! 2. transmit every header passed to [`TcpIo::transmit`] (wire size =
//!    `payload_len + header_bytes` of the connection's [`TcpConfig`]);
//! 3. then read `next_timer()` and (re)arm one timer event for it; a timer
//!    event whose time no longer equals `next_timer()` is stale and ignored.
//!
//! [`TcpConfig`]: crate::config::TcpConfig

mod delack;
#[cfg(test)]
mod harness;
mod jiffies;
mod pacing;
mod rack;
mod rate;
mod ratehalving;
mod rcvbuf;
mod receiver;
mod rtt;
mod scoreboard;
mod sender;
pub(crate) mod tso;
mod windows;
mod wndsplit;

pub use pacing::{default_pacing_rate, Pacer};
pub use rate::{RateEstimator, TxRateInfo};
pub use rcvbuf::locked_window_bytes;
pub use receiver::TcpReceiver;
pub use rtt::RttEstimator;
pub use sender::{AppLimit, CaState, SenderStats, TcpSender, DUP_THRESH};

use qoslab_core::Duration;

/// Segment flags.
pub const SYN: u8 = 1;
pub const ACK: u8 = 2;
pub const FIN: u8 = 4;

/// Up to four SACK blocks [start, end) (RFC 2018; three fit beside
/// timestamps, four without — we allow four and let the sender of the
/// option decide how many to fill).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub blocks: [(u64, u64); 4],
    pub len: u8,
}

impl SackBlocks {
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len as usize]
    }
}

/// The header of one simulated TCP segment (there is no payload: only its
/// length matters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    pub seq: u64,
    pub ack: u64,
    pub payload_len: u32,
    pub flags: u8,
    /// Advertised receive window in bytes, already scaled (a receiver
    /// without window scaling never advertises more than 65535).
    pub window: u64,
    pub sack: SackBlocks,
    /// RFC 7323 timestamps in nanoseconds of the sender's clock (the
    /// simulation clock): TSval, TSecr. 0 = absent.
    pub ts_val: u64,
    pub ts_ecr: u64,
    /// True when this data segment is a retransmission (for logs and
    /// plots only; a real receiver cannot see it, and ours ignores it).
    pub retransmit: bool,
}

/// What a TCP endpoint asks of the engine.
pub trait TcpIo {
    /// Put this segment on the wire now.
    fn transmit(&mut self, header: TcpHeader);
    /// An RTT sample was taken (Wireshark `tcp.analysis.ack_rtt`
    /// definition: an ACK that acknowledges new data, timed against the
    /// segment it acknowledges). Default: ignored.
    fn rtt_sample(&mut self, _rtt: Duration) {}
}
