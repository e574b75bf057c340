//! Capture taps: which link directions a run records, and the sink the
//! packets go to. The engine only hands over each tapped packet with its
//! time; building frames and writing files is the sink's business (the
//! `qoslab-capture` crate), so this crate stays free of I/O. A run without
//! taps pays one `Option` test per enqueue and per transmission.
//!
//! The points are the emulator's (`qoslab-emu`, `model::Point`): *ingress*
//! sees a packet as it is offered to a direction's egress policy (before
//! any policer or queue, stamped with the arrival time), *egress* sees it
//! leave the transmitter (stamped when its last bit is sent, as a capture
//! on the far side of a serialising link would).

use crate::config::{SimConfig, TrafficSpec};
use crate::net::Net;
use crate::sim::Pkt;
use crate::SimError;

/// Where on a link direction a capture taps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Point {
    /// Before the egress policy (as offered to it).
    Ingress = 0,
    /// After the transmitter (stamped when the last bit leaves).
    Egress = 1,
}

impl Point {
    pub fn parse(s: &str) -> Option<Point> {
        match s {
            "ingress" => Some(Point::Ingress),
            "egress" => Some(Point::Egress),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Point::Ingress => "ingress",
            Point::Egress => "egress",
        }
    }
}

/// What a capture spec (`LINK[:ingress|egress][=FILE]`, the spelling of
/// `qoslab emulate --capture`) asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureSpec {
    /// `A->B` as in the results.
    pub link: String,
    /// `None`: both directions in one file — LINK at ingress and the
    /// reverse direction at egress, what tcpdump on the upstream router's
    /// port would see (the data before the policer, the ACKs coming back).
    pub point: Option<Point>,
    pub file: Option<String>,
}

impl CaptureSpec {
    /// Parses `LINK[:ingress|egress][=FILE]`; the error says what was expected.
    pub fn parse(spec: &str) -> Result<CaptureSpec, String> {
        let (where_, file) = match spec.split_once('=') {
            Some((w, "")) => return Err(format!("capture '{spec}': no file after '=' ({w}=FILE)")),
            Some((w, f)) => (w, Some(f.to_string())),
            None => (spec, None),
        };
        let (link, point) = match where_.split_once(':') {
            Some((l, p)) => match Point::parse(p) {
                Some(p) => (l, Some(p)),
                None => {
                    return Err(format!(
                        "capture '{spec}': the side after ':' must be ingress or egress, got '{p}'"
                    ))
                }
            },
            None => (where_, None),
        };
        match link.split_once("->") {
            Some((a, b)) if !a.is_empty() && !b.is_empty() => {}
            _ => {
                return Err(format!(
                    "capture '{spec}': expected LINK[:ingress|egress][=FILE] with LINK as 'A->B', \
                     e.g. r1->r2"
                ))
            }
        }
        Ok(CaptureSpec {
            link: link.to_string(),
            point,
            file,
        })
    }

    /// The (direction, point) taps of this spec in `net`, or which link
    /// directions exist.
    pub fn taps(&self, net: &Net) -> Result<Vec<(u32, Point)>, String> {
        let dir = |name: &str| -> Result<u32, String> {
            (0..net.dirs.len() as u32)
                .find(|&d| net.dir_name(d) == name)
                .ok_or_else(|| {
                    let all: Vec<String> = (0..net.dirs.len() as u32)
                        .map(|d| net.dir_name(d))
                        .collect();
                    format!(
                        "capture: no link direction '{name}' (there are {})",
                        all.join(", ")
                    )
                })
        };
        let d = dir(&self.link)?;
        Ok(match self.point {
            Some(p) => vec![(d, p)],
            None => {
                let (a, b) = self.link.split_once("->").expect("checked by parse");
                vec![
                    (d, Point::Ingress),
                    (dir(&format!("{b}->{a}"))?, Point::Egress),
                ]
            }
        })
    }

    /// The file name used when none is given (`r1->r2` → `r1-r2.pcap`,
    /// with `:egress` → `r1-r2-egress.pcap`).
    pub fn default_file_name(&self) -> String {
        let base = self.link.replace("->", "-");
        match self.point {
            Some(p) => format!("{base}-{}.pcap", p.name()),
            None => format!("{base}.pcap"),
        }
    }
}

/// Receives the tapped packets of a run.
pub trait CaptureSink: Send {
    /// Packet `pkt` passed tap `file` (an index the caller chose) at
    /// `t_ns`; `now_ns` is the engine's clock (`t_ns ≥ now_ns`: an egress
    /// tap is stamped when the transmission ends, so the sink sees
    /// records slightly out of time order and must reorder them, knowing
    /// no later record will be stamped before `now_ns`).
    fn record(&mut self, now_ns: u64, file: u32, t_ns: u64, pkt: &Pkt);
    /// The run ended at `end_ns`: write what is pending and close; gives
    /// the records written per file.
    fn finish(&mut self, end_ns: u64) -> Result<Vec<u64>, String>;
}

/// The taps of a run: per direction, the file index of its ingress and
/// egress taps (`NONE` if untapped).
pub(crate) struct Taps {
    pub at: Vec<[u32; 2]>,
    pub sink: Box<dyn CaptureSink>,
}

pub(crate) const NONE: u32 = u32::MAX;

impl Taps {
    pub fn new(dirs: usize, points: &[(u32, Point, u32)], sink: Box<dyn CaptureSink>) -> Taps {
        let mut at = vec![[NONE; 2]; dirs];
        for &(d, p, f) in points {
            at[d as usize][p as usize] = f;
        }
        Taps { at, sink }
    }

    #[inline]
    pub fn tap(&mut self, d: u32, p: Point, now_ns: u64, t_ns: u64, pkt: &Pkt) {
        let f = self.at[d as usize][p as usize];
        if f != NONE {
            self.sink.record(now_ns, f, t_ns, pkt);
        }
    }
}

/// TCP options a connection's segments carry on the wire, from its
/// [`TcpConfig`](crate::config::TcpConfig) (both endpoints of a simulated
/// connection share one config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireTcp {
    pub mss: u32,
    pub sack: bool,
    /// RFC 7323 timestamps (`header_bytes` ≥ 52).
    pub timestamps: bool,
    /// The window-scale shift both ends offer (`None`: window scaling off).
    /// The receiver's rule (smallest shift with the receive window ≤
    /// 65535·2^s, Linux `tcp_select_initial_window`); the sender's own
    /// receive window comes from the same config.
    pub wscale: Option<u8>,
}

/// What a capture needs of one flow beyond its packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireFlow {
    /// Host indices (see [`crate::addr`]) of the flow's source and
    /// destination.
    pub from_host: u32,
    pub to_host: u32,
    pub tcp: Option<WireTcp>,
}

/// Per flow (result order), the addressing and TCP options its packets
/// carry in a capture; also the node → host index map.
pub fn wire_flows(cfg: &SimConfig) -> Result<(Vec<WireFlow>, Vec<Option<u32>>), SimError> {
    let planned = crate::plan_flows(cfg)?;
    let net = Net::build(&cfg.topology)?;
    let hosts = crate::addr::hosts(&cfg.topology, &net, &planned);
    let host_of = |name: &str| hosts.iter().position(|h| h == name).map(|i| i as u32);
    let node_host: Vec<Option<u32>> = net.nodes.iter().map(|n| host_of(&n.name)).collect();
    let flows = planned
        .iter()
        .map(|f| {
            let tcp = match &cfg.traffic[f.traffic_index as usize] {
                TrafficSpec::TcpBulk { tcp, .. } => Some(WireTcp {
                    mss: tcp.mss,
                    sack: tcp.sack,
                    timestamps: tcp.header_bytes >= 52,
                    wscale: tcp.window_scaling.then(|| {
                        let rwnd = tcp.receive_window_bytes.min(65535u64 << 14);
                        let mut s = 0u8;
                        while rwnd > 65535u64 << s {
                            s += 1;
                        }
                        s
                    }),
                }),
                _ => None,
            };
            WireFlow {
                from_host: host_of(&f.from).expect("a flow's ends are hosts"),
                to_host: host_of(&f.to).expect("a flow's ends are hosts"),
                tcp,
            }
        })
        .collect();
    Ok((flows, node_host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_as_the_emulator_spells_them() {
        let s = CaptureSpec::parse("r1->r2").unwrap();
        assert_eq!((s.link.as_str(), s.point, s.file), ("r1->r2", None, None));
        let s = CaptureSpec::parse("r2->r1:egress=/tmp/x.pcap").unwrap();
        assert_eq!(s.point, Some(Point::Egress));
        assert_eq!(s.file.as_deref(), Some("/tmp/x.pcap"));
        assert_eq!(s.default_file_name(), "r2-r1-egress.pcap");
        for bad in ["r1", "r1->r2:middle", "r1->r2=", "->r2"] {
            assert!(CaptureSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
