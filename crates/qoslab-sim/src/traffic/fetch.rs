//! Request/response over one persistent TCP connection (`tcp-fetch`): an
//! HTTP/1.1-style client fetching `chunks` objects of `chunk_bytes` each,
//! as in the USC-NSL policing lab (Flach et al., "An Internet-Wide
//! Analysis of Traffic Policing", SIGCOMM 2016: a client fetching 5 chunks
//! of 2 MB over one connection with a pause between requests).
//!
//! The connection is the bulk kind's [`TcpConn`](super::bulk::TcpConn): the
//! data sender is the server (the flow's `from`), the receiver the client
//! (`to`). The sender starts with nothing to send and is given each
//! response by [`TcpSender::app_write`](crate::tcp::TcpSender::app_write),
//! which applies Linux's restart after idle (`tcp_cwnd_restart`).
//!
//! Timeline of chunk *k*:
//! 1. the client sends request *k* (`request_bytes` + the TCP/IP headers)
//!    toward the server: request 0 as soon as the client has answered the
//!    server's SYN, request *k* + 1 `pause` after the client has every byte
//!    of response *k*;
//! 2. its arrival at the server starts the chunk (the server writes
//!    `chunk_bytes`);
//! 3. the ACK covering the response's last byte arriving at the server
//!    ends it. Start and end are both server-side instants, as in a
//!    capture taken at the server.
//!
//! Simplifications (said where they matter):
//! - the handshake runs from the server's side (the simulator's TCP sender
//!   opens the connection), so the first request leaves with the client's
//!   SYN-ACK; per-chunk figures start at the request's arrival and do not
//!   see this;
//! - the request is not a TCP segment of the client's own send queue: the
//!   client resends it if the response has not started after an RTO,
//!   taking the server's RTO estimate (same path, same RTT) and doubling it
//!   per retry (RFC 6298 §5.5), which is what the client's TCP would do for
//!   a lost request.

use crate::result::ChunkResult;

/// Retries of one request before the fetch gives up (RFC 1122's R2 is at
/// least 100 s; at a doubling RTO this is far beyond any run here).
pub const MAX_REQUEST_RETRIES: u32 = 15;

/// Counters of the connection sampled at a chunk's start.
#[derive(Clone, Copy, Debug, Default)]
pub struct Base {
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    pub data_lost: u64,
    pub bytes_acked: u64,
}

/// One client/server pair's request/response state.
#[derive(Clone, Debug)]
pub struct Fetch {
    pub chunks: u32,
    pub chunk_bytes: u64,
    pub pause_ns: u64,
    pub request_bytes: u32,
    /// One record per request sent, in order.
    pub records: Vec<ChunkResult>,
    /// Chunks the client has received in full.
    pub client_done: u32,
    /// Chunks the server has started (requests that arrived).
    pub server_started: u32,
    /// Chunks the server has seen acknowledged in full.
    pub server_done: u32,
    /// Counters at the start of each chunk begun at the server.
    pub bases: Vec<Base>,
}

impl Fetch {
    pub fn new(chunks: u32, chunk_bytes: u64, pause_ns: u64, request_bytes: u32) -> Fetch {
        Fetch {
            chunks,
            chunk_bytes,
            pause_ns,
            request_bytes,
            records: Vec::with_capacity(chunks as usize),
            client_done: 0,
            server_started: 0,
            server_done: 0,
            bases: Vec::with_capacity(chunks as usize),
        }
    }

    /// The client sends request `index` now (the first copy).
    pub fn request_sent(&mut self, index: u32, now_ns: u64) {
        debug_assert_eq!(index as usize, self.records.len());
        self.records.push(ChunkResult {
            index,
            request_ns: now_ns,
            bytes: self.chunk_bytes,
            ..ChunkResult::default()
        });
    }

    /// Request `index` arrived at the server: true if it starts a chunk
    /// (not a duplicate of one already started).
    pub fn request_arrived(&mut self, index: u32, now_ns: u64, base: Base) -> bool {
        if index != self.server_started || index >= self.chunks {
            return false;
        }
        self.server_started += 1;
        self.bases.push(base);
        self.records[index as usize].start_ns = now_ns;
        true
    }

    /// The chunk in progress at the server, if any.
    pub fn in_progress(&self) -> Option<u32> {
        (self.server_done < self.server_started).then_some(self.server_done)
    }

    /// The server saw everything it was asked for acknowledged: every
    /// chunk in progress ends (more than one when a request arrived before
    /// the ACK that completed the previous response, which was lost).
    pub fn server_finished(&mut self, now_ns: u64, now: Base) {
        while let Some(k) = self.in_progress() {
            self.server_done += 1;
            self.records[k as usize].end_ns = Some(now_ns);
            self.fill_counters(k, now);
        }
    }

    /// Counters of chunk `k` as increments over its base (also used for a
    /// chunk the run cut short). Chunks overlap only in the lost-ACK case
    /// above, where both count what happened while both were open.
    pub fn fill_counters(&mut self, k: u32, now: Base) {
        let b = self.bases[k as usize];
        let r = &mut self.records[k as usize];
        r.retransmits = now.retransmits - b.retransmits;
        r.timeouts = now.timeouts - b.timeouts;
        r.fast_recoveries = now.fast_recoveries - b.fast_recoveries;
        r.packets_lost = now.data_lost - b.data_lost;
        r.bytes_acked = (now.bytes_acked - b.bytes_acked).min(r.bytes);
        r.goodput_bps = match r.end_ns {
            Some(e) if e > r.start_ns => r.bytes as f64 * 8.0 * 1e9 / (e - r.start_ns) as f64,
            _ => 0.0,
        };
    }

    /// The client now holds `delivered` bytes in order: returns true when
    /// that completes a response (the caller schedules the next request).
    pub fn client_progress(&mut self, delivered: u64, now_ns: u64) -> bool {
        let k = self.client_done;
        if k >= self.chunks || (k as usize) >= self.records.len() {
            return false;
        }
        if delivered >= (k as u64 + 1) * self.chunk_bytes {
            self.client_done += 1;
            self.records[k as usize].client_done_ns = Some(now_ns);
            return true;
        }
        false
    }

    /// True once every chunk was acknowledged at the server.
    pub fn all_done(&self) -> bool {
        self.server_done >= self.chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_counters_are_increments_and_duplicates_ignored() {
        let mut f = Fetch::new(2, 1000, 5, 100);
        f.request_sent(0, 10);
        let b0 = Base {
            retransmits: 3,
            bytes_acked: 0,
            ..Base::default()
        };
        assert!(f.request_arrived(0, 60, b0));
        assert!(
            !f.request_arrived(0, 70, b0),
            "a resent request is a duplicate"
        );
        assert_eq!(f.in_progress(), Some(0));
        assert!(!f.client_progress(999, 100));
        assert!(f.client_progress(1000, 110));
        f.server_finished(
            160,
            Base {
                retransmits: 5,
                bytes_acked: 1000,
                ..Base::default()
            },
        );
        let r = &f.records[0];
        assert_eq!((r.start_ns, r.end_ns, r.retransmits), (60, Some(160), 2));
        assert_eq!(r.client_done_ns, Some(110));
        assert!((r.goodput_bps - 1000.0 * 8.0 * 1e9 / 100.0).abs() < 1e-6);
        assert!(!f.all_done());
        assert_eq!(f.in_progress(), None);
    }
}
