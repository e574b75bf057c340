//! Captures out of the simulator: a [`CaptureSink`] that turns the packets
//! of tapped link directions into Ethernet/IPv4 frames ([`crate::writer`])
//! and writes them to pcap files (nanosecond timestamps = simulated time,
//! LINKTYPE_ETHERNET) with the `pcap-file` crate — each to a temporary file
//! renamed into place when the run finishes (removed if it does not).
//!
//! How simulated packets map to wire fields:
//! * addresses and MACs: the emulator's host numbering ([`qoslab_sim::addr`]),
//!   so a simulated and an emulated capture of one scenario look alike;
//!   ports as the simulator's classifiers see them (client 10000 + flow id,
//!   server 5201; ICMP echo id = flow id + 1, sequence = the ping's);
//! * TCP sequence numbers: the simulator counts from 0 (ISN 0); the wire
//!   adds a fixed, per flow and side pseudo-random ISN modulo 2^32 (RFC
//!   9293 §3.4.1 wants unpredictable ISNs; any ISN exercises the reader's
//!   wrap handling the same way);
//! * window: the field carries the window shifted right by the sender's
//!   scale, rounded up as Linux's `__tcp_select_window` rounds
//!   (net/ipv4/tcp_output.c), unscaled and capped at 65535 on a SYN (RFC
//!   7323 §2.2);
//! * timestamps: TSval/TSecr from the simulated nanosecond clock on a 1 ms
//!   clock (Linux's `TCP_TS_HZ` = 1000, include/net/tcp.h), plus 1 so no
//!   value is 0;
//! * MSS option: the simulator's payload-per-segment `mss`, plus the 12
//!   bytes of the timestamp option when it is on (RFC 6691 §2);
//! * IP: TTL 64 less the hops the packet crossed, DF on TCP, DSCP as carried,
//!   ID counting per flow direction.
//!
//! Frame lengths are real header lengths: a segment with SACK blocks is
//! longer on the wire than the simulator's fixed `header_bytes` (which
//! counts IP + TCP + timestamps only).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use qoslab_sim::capture::{CaptureSink, WireFlow};
use qoslab_sim::tcp::{ACK, FIN, SYN};
use qoslab_sim::{Kind, Pkt};

use crate::writer::{FrameBuilder, Ipv4Fields, Snap, TcpFields, TcpOptions, L4};

/// Client port of flow `f` (as `qoslab_sim::Pkt::core`).
fn client_port(flow: u32) -> u16 {
    10_000u16.wrapping_add(flow as u16)
}
const SERVER_PORT: u16 = 5201;

/// The wire ISN of flow `flow`'s side (0 client, 1 server): fixed,
/// spread over the sequence space (a SplitMix64 step).
pub fn isn(flow: u32, side: u32) -> u32 {
    let mut z = (u64::from(flow) * 2 + u64::from(side) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}

/// TSval/TSecr on the wire for a simulated timestamp (0 = none).
fn ts_wire(ns: u64) -> u32 {
    if ns == 0 {
        0
    } else {
        (ns / 1_000_000 + 1) as u32
    }
}

struct Out {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<PcapWriter<BufWriter<File>>>,
    packets: u64,
}

impl Drop for Out {
    fn drop(&mut self) {
        // Not finished (a cancelled or failed run): leave no half file.
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key(u64, u64);

/// The simulator's pcap writer.
pub struct PcapSink {
    files: Vec<Out>,
    flows: Vec<WireFlow>,
    node_host: Vec<Option<u32>>,
    snap: Snap,
    build: FrameBuilder,
    buf: Vec<u8>,
    /// Records not yet written, by (time, arrival order).
    pending: BinaryHeap<Reverse<(Key, u32)>>,
    pending_pkts: Vec<Option<(u32, Pkt)>>,
    free: Vec<u32>,
    order: u64,
    ip_id: Vec<[u16; 2]>,
    error: Option<String>,
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    path.with_file_name(name)
}

impl PcapSink {
    /// Opens (as temporaries) one pcap file per path; file index `i` of
    /// the taps writes to `paths[i]`.
    pub fn create(
        paths: &[PathBuf],
        flows: Vec<WireFlow>,
        node_host: Vec<Option<u32>>,
        snap: Snap,
    ) -> Result<PcapSink, String> {
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let tmp = tmp_path(path);
            let f = File::create(&tmp).map_err(|e| format!("capture {}: {e}", path.display()))?;
            let header = PcapHeader {
                version_major: 2,
                version_minor: 4,
                ts_correction: 0,
                ts_accuracy: 0,
                snaplen: snap.file_snaplen(),
                datalink: DataLink::ETHERNET,
                ts_resolution: TsResolution::NanoSecond,
                endianness: Endianness::native(),
            };
            // Pushed before the writer exists so a failure below removes it.
            files.push(Out {
                path: path.clone(),
                tmp: tmp.clone(),
                writer: None,
                packets: 0,
            });
            let w = PcapWriter::with_header(BufWriter::with_capacity(1 << 20, f), header)
                .map_err(|e| format!("capture {}: {e}", path.display()))?;
            files.last_mut().expect("pushed").writer = Some(w);
        }
        let n = flows.len();
        Ok(PcapSink {
            files,
            flows,
            node_host,
            snap,
            build: FrameBuilder::default(),
            buf: Vec::with_capacity(256),
            pending: BinaryHeap::new(),
            pending_pkts: Vec::new(),
            free: Vec::new(),
            order: 0,
            ip_id: vec![[0; 2]; n],
            error: None,
        })
    }

    /// The frame fields of `p`; `None` for a `tcp-fetch` request, which the
    /// simulator models outside the connection's sequence space (a packet of
    /// its own, not a TCP segment): written as a segment it would carry
    /// sequence numbers the connection never had, so captures leave it out
    /// (docs/captures.md says so).
    fn fields(&mut self, p: &Pkt) -> Option<(Ipv4Fields, L4)> {
        if p.kind == Kind::FetchRequest {
            return None;
        }
        let host = |n: u32| {
            self.node_host
                .get(n as usize)
                .copied()
                .flatten()
                .unwrap_or(n)
        };
        let (src, dst) = (host(p.src), host(p.dst));
        let wf = &self.flows[p.flow as usize];
        let side = match p.kind {
            Kind::TcpToSender | Kind::PingReply => 1,
            _ => 0,
        };
        let id = &mut self.ip_id[p.flow as usize][side];
        *id = id.wrapping_add(1);
        let ip = Ipv4Fields {
            src_mac: qoslab_sim::addr::host_mac(src),
            dst_mac: qoslab_sim::addr::host_mac(dst),
            src: qoslab_sim::addr::host_ipv4(src),
            dst: qoslab_sim::addr::host_ipv4(dst),
            ttl: 64u8.saturating_sub(p.hops),
            dscp: p.dscp,
            id: *id,
        };
        let l4 = match p.kind {
            Kind::Udp => L4::Udp {
                sport: client_port(p.flow),
                dport: SERVER_PORT,
                payload_len: p.payload_bytes,
            },
            Kind::PingRequest | Kind::PingReply => L4::IcmpEcho {
                reply: p.kind == Kind::PingReply,
                id: (p.flow as u16).wrapping_add(1),
                seq: p.seq as u16,
                payload_len: p.payload_bytes,
            },
            Kind::TcpToReceiver | Kind::TcpToSender => {
                let to_rx = p.kind == Kind::TcpToReceiver;
                let (mine, theirs) = if to_rx {
                    (isn(p.flow, 0), isn(p.flow, 1))
                } else {
                    (isn(p.flow, 1), isn(p.flow, 0))
                };
                let (sport, dport) = if to_rx {
                    (client_port(p.flow), SERVER_PORT)
                } else {
                    (SERVER_PORT, client_port(p.flow))
                };
                let h = &p.tcp;
                let wt = wf.tcp.unwrap_or(qoslab_sim::capture::WireTcp {
                    mss: 1448,
                    sack: false,
                    timestamps: h.ts_val != 0,
                    wscale: None,
                });
                let syn = h.flags & SYN != 0;
                let shift = wt.wscale.unwrap_or(0);
                let window = if syn {
                    h.window.min(65535)
                } else {
                    h.window.div_ceil(1u64 << shift).min(65535)
                } as u16;
                let mut o = TcpOptions {
                    timestamps: wt
                        .timestamps
                        .then(|| (ts_wire(h.ts_val), ts_wire(h.ts_ecr))),
                    ..Default::default()
                };
                if syn {
                    // The simulator's `mss` is payload per segment; the
                    // option excludes TCP options (RFC 6691 §2), so with
                    // timestamps it is 12 bytes larger (Linux: 1460 for
                    // 1448-byte segments on a 1500-byte MTU).
                    let opt = wt.mss + if wt.timestamps { 12 } else { 0 };
                    o.mss = Some(opt.min(65535) as u16);
                    o.sack_permitted = wt.sack;
                    o.wscale = wt.wscale;
                } else {
                    for (i, &(a, b)) in h.sack.as_slice().iter().take(4).enumerate() {
                        o.sack[i] = (theirs.wrapping_add(a as u32), theirs.wrapping_add(b as u32));
                        o.sack_len += 1;
                    }
                }
                L4::Tcp(TcpFields {
                    sport,
                    dport,
                    seq: mine.wrapping_add(h.seq as u32),
                    ack: theirs.wrapping_add(h.ack as u32),
                    syn,
                    ack_flag: h.flags & ACK != 0,
                    fin: h.flags & FIN != 0,
                    window,
                    options: o,
                    payload_len: h.payload_len,
                })
            }
            Kind::FetchRequest => unreachable!("left out above"),
        };
        Some((ip, l4))
    }

    fn write(&mut self, file: u32, t_ns: u64, p: &Pkt) {
        if self.error.is_some() {
            return;
        }
        let Some((ip, l4)) = self.fields(p) else {
            return;
        };
        let mut buf = std::mem::take(&mut self.buf);
        let wire = self.build.build(&ip, &l4, self.snap, &mut buf);
        let ts = Duration::new(t_ns / 1_000_000_000, (t_ns % 1_000_000_000) as u32);
        let out = &mut self.files[file as usize];
        let w = out.writer.as_mut().expect("open until finish");
        match w.write_packet(&PcapPacket::new(ts, wire, &buf)) {
            Ok(_) => out.packets += 1,
            Err(e) => self.error = Some(format!("capture {}: {e}", out.path.display())),
        }
        self.buf = buf;
    }

    /// Writes every pending record stamped at or before `t_ns`.
    fn drain(&mut self, t_ns: u64) {
        while let Some(Reverse((Key(t, _), slot))) = self.pending.peek() {
            if *t > t_ns {
                break;
            }
            let (t, slot) = (*t, *slot);
            self.pending.pop();
            let (file, p) = self.pending_pkts[slot as usize].take().expect("pending");
            self.free.push(slot);
            self.write(file, t, &p);
        }
    }
}

impl CaptureSink for PcapSink {
    fn record(&mut self, now_ns: u64, file: u32, t_ns: u64, pkt: &Pkt) {
        self.drain(now_ns.min(t_ns).saturating_sub(1));
        if t_ns <= now_ns && self.pending.is_empty() {
            self.write(file, t_ns, pkt);
            return;
        }
        let slot = match self.free.pop() {
            Some(s) => {
                self.pending_pkts[s as usize] = Some((file, *pkt));
                s
            }
            None => {
                self.pending_pkts.push(Some((file, *pkt)));
                (self.pending_pkts.len() - 1) as u32
            }
        };
        self.order += 1;
        self.pending.push(Reverse((Key(t_ns, self.order), slot)));
    }

    fn finish(&mut self, _end_ns: u64) -> Result<Vec<u64>, String> {
        self.drain(u64::MAX);
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for out in &mut self.files {
            let w = out.writer.take().expect("finished once");
            let mut f = w.into_writer();
            std::io::Write::flush(&mut f)
                .map_err(|e| format!("capture {}: {e}", out.path.display()))?;
            drop(f);
            std::fs::rename(&out.tmp, &out.path)
                .map_err(|e| format!("capture {}: {e}", out.path.display()))?;
        }
        Ok(self.files.iter().map(|f| f.packets).collect())
    }
}

/// Why a captured simulation did not give a result.
#[derive(Debug)]
pub enum RunError {
    Sim(qoslab_sim::SimError),
    /// A capture that could not be set up or written (one line).
    Capture(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Sim(e) => write!(f, "{e}"),
            RunError::Capture(m) => f.write_str(m),
        }
    }
}

/// Runs `cfg` writing each capture spec to its path (specs naming the same
/// path share one file). Returns the result and (path, packets) per file.
pub fn run(
    cfg: &qoslab_sim::config::SimConfig,
    captures: &[(qoslab_sim::capture::CaptureSpec, PathBuf)],
    snap: Snap,
    progress: &mut dyn FnMut(qoslab_sim::Progress) -> bool,
) -> Result<(qoslab_sim::result::SimResult, Vec<(PathBuf, u64)>), RunError> {
    let net = qoslab_sim::net::Net::build(&cfg.topology).map_err(RunError::Sim)?;
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut points = Vec::new();
    for (spec, path) in captures {
        let file = match paths.iter().position(|p| p == path) {
            Some(i) => i,
            None => {
                paths.push(path.clone());
                paths.len() - 1
            }
        } as u32;
        for (d, p) in spec.taps(&net).map_err(RunError::Capture)? {
            if points.iter().any(|&(d2, p2, _)| (d2, p2) == (d, p)) {
                return Err(RunError::Capture(format!(
                    "capture: {} {} is tapped twice",
                    net.dir_name(d),
                    p.name()
                )));
            }
            points.push((d, p, file));
        }
    }
    let (flows, node_host) = qoslab_sim::capture::wire_flows(cfg).map_err(RunError::Sim)?;
    let sink = PcapSink::create(&paths, flows, node_host, snap).map_err(RunError::Capture)?;
    let (result, written) = qoslab_sim::run_with_capture(cfg, progress, &points, Box::new(sink))
        .map_err(RunError::Sim)?;
    let counts = written.map_err(RunError::Capture)?;
    Ok((result, paths.into_iter().zip(counts).collect()))
}
