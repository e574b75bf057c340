//! Captures in: read pcap/pcapng files, analyse their TCP and UDP flows as
//! Wireshark's TCP analysis does, and detect traffic policing with the
//! detector of Flach et al., SIGCOMM 2016 ([`policing`]). Captures out:
//! frames built from header fields ([`writer`]) and the simulator's pcap
//! sink ([`simcap`]).

pub mod analysis;
pub mod decode;
pub mod policing;
pub mod reader;
pub mod simcap;
pub mod writer;

use std::fmt;

/// A capture that cannot be read at all (one line for the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    pub message: String,
}

impl CaptureError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CaptureError {}

/// The TCP packets of a capture (IPv4 and IPv6), in captured order, as the
/// policing detector takes them; `port` keeps only connections with that port
/// at either end (the published rows were computed on captures cut down so).
pub fn policing_input(
    bytes: &[u8],
    port: Option<u16>,
) -> Result<(Vec<policing::InPacket>, reader::ReadSummary), CaptureError> {
    let mut out = Vec::new();
    let summary = reader::read_records(bytes, |r| {
        let Ok(d) = decode::decode(r.linktype, r.data) else {
            return;
        };
        let decode::L4::Tcp(t) = d.l4 else { return };
        if let Some(p) = port {
            if t.sport != p && t.dport != p {
                return;
            }
        }
        out.push(policing::InPacket {
            ts_sec: r.ts_sec,
            ts_usec: r.ts_nsec / 1000,
            src: d.src,
            dst: d.dst,
            sport: t.sport,
            dport: t.dport,
            seq: t.seq,
            ack: t.ack,
            flags: t.flags,
            data_len: t.payload_len,
            wire_len: r.orig_len,
            options: t.options.to_vec(),
        });
    })?;
    Ok((out, summary))
}
