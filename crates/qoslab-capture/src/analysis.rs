//! Flows of a capture and Wireshark-style TCP analysis per flow direction.
//!
//! The rules follow Wireshark's `epan/dissectors/packet-tcp.c`
//! (`tcp_analyze_sequence_number`, `tcp_calculate_ack_rtt`):
//! * **retransmission** — a segment carrying data (or SYN/FIN) that starts
//!   below the highest sequence number sent (`nextseq`), not a keep-alive;
//!   **fast retransmission** when the receiver sent ≥ 2 duplicate ACKs for
//!   exactly its sequence number within the last 20 ms; **out-of-order** (not
//!   counted as a retransmission) when it comes < 3 ms after the previous
//!   segment and does not end at `nextseq`; every other one is RTO-class;
//! * **duplicate ACK** — no data, no SYN/FIN/RST, same ACK number and same
//!   window as the previous ACK of that direction;
//! * **ack_rtt** — an ACK equal to the end of a still unacknowledged
//!   segment gives `ACK time − segment time` (the segment's first
//!   transmission: Wireshark's unacked list keeps it);
//! * **bytes in flight** — at each data segment, `nextseq − last ACK` of the
//!   peer; **receive window** — the window field shifted by the window scale
//!   of the SYN (RFC 7323 §2.3) when both SYNs carried the option;
//! * **previous segment not captured** — a segment starting above `nextseq`.
//!
//! Sequence numbers are unwrapped to 64 bits per direction and reported
//! relative to the direction's first sequence number (SYN = 0, as Wireshark's
//! relative numbers). A 4-tuple is reused by a new connection when a SYN
//! arrives after a FIN or RST, or with an initial sequence number other than
//! the connection's.
//!
//! Recovery *episodes* (`timeouts`, `fast_recoveries`, as `qoslab run`
//! counts them) are counted as the first RTO-class or fast retransmission
//! while no episode is open; an episode closes when the peer's cumulative
//! ACK reaches the highest sequence sent when it opened (RFC 6582 `recover`).

use std::collections::HashMap;
use std::net::IpAddr;

use crate::decode::{self, Decoded, Skip, ACK, FIN, L4, RST, SYN};
use crate::reader::{self, Record};
use crate::CaptureError;

/// What to analyse.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// IO-graph bin width (the goodput series' interval).
    pub bin_ns: u64,
    /// Keep only connections with this TCP/UDP port at either end.
    pub port: Option<u16>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bin_ns: 100_000_000,
            port: None,
        }
    }
}

/// Min, mean, nearest-rank p50/p95 and max of a set of samples (ns), as `qoslab run`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RttSummary {
    pub samples: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub max_ns: u64,
}

pub fn rtt_summary(samples: &[u64]) -> RttSummary {
    if samples.is_empty() {
        return RttSummary::default();
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = |p: u64| v[((p * v.len() as u64).div_ceil(100) as usize).clamp(1, v.len()) - 1];
    RttSummary {
        samples: v.len() as u64,
        min_ns: v[0],
        mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
        p50_ns: rank(50),
        p95_ns: rank(95),
        max_ns: v[v.len() - 1],
    }
}

/// One flow of the result: one direction of a TCP connection that carried
/// data, or one direction of a UDP 4-tuple.
#[derive(Debug, Clone, Default)]
pub struct FlowOut {
    pub id: u32,
    pub protocol: &'static str,
    /// `ip:port` of the sender and the receiver.
    pub from: String,
    pub to: String,
    /// Which use of the 4-tuple (0 for the first connection, 1 after a reuse, …).
    pub connection: u32,
    /// Times relative to the capture's first record.
    pub start_ns: u64,
    pub end_ns: u64,
    /// TCP: bytes cumulatively acknowledged by the receiver (or, without
    /// ACKs in the capture, distinct payload bytes sent); UDP: payload bytes.
    pub bytes_delivered: u64,
    pub goodput_bps: f64,
    /// Data segments (or datagrams), retransmissions included.
    pub packets_sent: u64,
    pub packets: u64,
    pub wire_bytes: u64,
    pub payload_bytes: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub spurious_retransmits: u64,
    pub rto_retransmits: u64,
    pub out_of_order: u64,
    pub lost_segments: u64,
    pub keep_alives: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Received from the peer.
    pub dup_acks: u64,
    pub sack_blocks: u64,
    pub zero_windows: u64,
    pub rtt: RttSummary,
    pub max_bytes_in_flight: u64,
    pub mss: Option<u16>,
    /// Window scale shifts of the sender and the receiver, when both SYNs carried one.
    pub wscale: Option<(u8, u8)>,
    pub warnings: Vec<String>,
}

/// Column-wise series; `flow` indexes [`Analysis::flows`], times are ns from
/// the capture's first record, sequence numbers relative and unwrapped.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Per flow per bin ending at `time_ns`: bytes delivered (ACKed), retransmissions.
    pub goodput_time_ns: Vec<u64>,
    pub goodput_flow: Vec<u32>,
    pub goodput_bytes: Vec<u64>,
    pub goodput_retransmits: Vec<u64>,
    /// IO graph per flow per bin: frame bytes and payload bytes sent (retransmissions included).
    pub io_wire_bytes: Vec<u64>,
    pub io_payload_bytes: Vec<u64>,
    pub rtt_time_ns: Vec<u64>,
    pub rtt_flow: Vec<u32>,
    pub rtt_ns: Vec<u64>,
    pub seg_time_ns: Vec<u64>,
    pub seg_flow: Vec<u32>,
    pub seg_seq: Vec<u64>,
    pub seg_len: Vec<u32>,
    pub seg_retransmit: Vec<bool>,
    /// The ACK line and the receive-window line (ack + rwnd) of each flow.
    pub ack_time_ns: Vec<u64>,
    pub ack_flow: Vec<u32>,
    pub ack_seq: Vec<u64>,
    pub ack_rwnd_bytes: Vec<u64>,
    pub sack_time_ns: Vec<u64>,
    pub sack_flow: Vec<u32>,
    pub sack_left: Vec<u64>,
    pub sack_right: Vec<u64>,
    pub inflight_time_ns: Vec<u64>,
    pub inflight_flow: Vec<u32>,
    pub inflight_bytes: Vec<u64>,
}

/// The analysis of one capture.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    pub format: &'static str,
    pub records: u64,
    pub ip_packets: u64,
    pub non_ip: u64,
    pub malformed: u64,
    pub unknown_linktypes: Vec<(i32, u64)>,
    /// Epoch time of the first record (ns) and the capture's span.
    pub start_epoch_ns: i64,
    pub duration_ns: u64,
    pub bin_ns: u64,
    pub flows: Vec<FlowOut>,
    pub series: Series,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Unwrap {
    known: bool,
    last_low: u32,
    last_ext: i64,
}

impl Unwrap {
    fn ext(&mut self, v: u32) -> i64 {
        if !self.known {
            self.known = true;
            // Start far from 0 so a wrap below the first value stays positive.
            self.last_ext = (1i64 << 32) + v as i64;
            self.last_low = v;
            return self.last_ext;
        }
        let e = self.last_ext + v.wrapping_sub(self.last_low) as i32 as i64;
        if e > self.last_ext {
            self.last_ext = e;
            self.last_low = v;
        }
        e
    }
}

#[derive(Debug, Clone, Default)]
struct Dir {
    src: Option<(IpAddr, u16)>,
    dst: Option<(IpAddr, u16)>,
    seqs: Unwrap,
    base: Option<i64>,
    nextseq: Option<i64>,
    lastack: Option<i64>,
    lastack_time: i64,
    dupacknum: u32,
    lastwindow: Option<u16>,
    syn_wscale: Option<u8>,
    syn_seen: bool,
    mss: Option<u16>,
    /// Unacknowledged segments (seq, end, time), oldest first.
    unacked: std::collections::VecDeque<(i64, i64, i64)>,
    nextseq_time: i64,
    /// This direction has sent an ACK (the peer's bytes in flight are valid: Wireshark's valid_bif).
    sent_ack: bool,
    /// Bytes covered by this direction's last SACK blocks.
    sacked_now: u64,
    recover: Option<i64>,
    first_ns: Option<i64>,
    last_ns: i64,
    first_data_ns: Option<i64>,
    last_ack_adv_ns: i64,
    acked_bytes: u64,
    unique_bytes: u64,
    /// IO bins (index, [acked, retransmits, wire, payload]) in arrival order,
    /// sparse: a corrupted timestamp years away costs one entry, not years of bins.
    bins: Vec<(u64, [u64; 4])>,
    rtts: Vec<u64>,
    out: FlowOut,
    proto_udp: bool,
    /// The other direction of a TCP connection (its index in `dirs`; the
    /// pair is adjacent but need not start at an even index, a UDP flow
    /// may come between).
    peer: usize,
}

impl Dir {
    fn rel(&self, e: i64) -> u64 {
        (e - self.base.unwrap_or(e)).max(0) as u64
    }
    fn bin(&mut self, t: i64, bin_ns: u64) -> &mut [u64; 4] {
        let i = t.max(0) as u64 / bin_ns;
        if self.bins.last().is_none_or(|b| b.0 != i) {
            self.bins.push((i, [0; 4]));
        }
        &mut self.bins.last_mut().expect("just pushed").1
    }

    /// The bins sorted and merged; every bin from the first to the last when
    /// that span is at most `MAX_DENSE_BINS`, else only the non-empty ones.
    fn dense_bins(&mut self) -> (Vec<(u64, [u64; 4])>, bool) {
        let mut v = std::mem::take(&mut self.bins);
        v.sort_by_key(|b| b.0);
        let mut merged: Vec<(u64, [u64; 4])> = Vec::with_capacity(v.len());
        for (i, b) in v {
            match merged.last_mut() {
                Some(last) if last.0 == i => {
                    for (x, y) in last.1.iter_mut().zip(b) {
                        *x += y;
                    }
                }
                _ => merged.push((i, b)),
            }
        }
        let (Some(first), Some(last)) = (merged.first(), merged.last()) else {
            return (merged, true);
        };
        if last.0 - first.0 >= MAX_DENSE_BINS {
            return (merged, false);
        }
        let mut dense = Vec::with_capacity((last.0 - first.0 + 1) as usize);
        let mut it = merged.iter().peekable();
        for i in first.0..=last.0 {
            match it.peek() {
                Some(b) if b.0 == i => dense.push(*it.next().expect("peeked")),
                _ => dense.push((i, [0; 4])),
            }
        }
        (dense, true)
    }
}

struct Conn {
    dirs: [usize; 2],
    ends: [(IpAddr, u16); 2],
    closed: bool,
    isn_a: Option<u32>,
    index: u32,
    syn_time: Option<i64>,
    first_rtt: Option<i64>,
}

/// Internal series rows keyed by direction id; remapped to flow ids at the end.
#[derive(Default)]
struct Rows {
    rtt: Vec<(u64, usize, u64)>,
    seg: Vec<(u64, usize, u64, u32, bool)>,
    ack: Vec<(u64, usize, u64, u64)>,
    sack: Vec<(u64, usize, u64, u64)>,
    inflight: Vec<(u64, usize, u64)>,
}

struct State {
    opts: Options,
    start: Option<i64>,
    dirs: Vec<Dir>,
    conns: Vec<Conn>,
    tcp_keys: HashMap<(Endpoint, Endpoint), usize>,
    last_tcp: Option<((Endpoint, Endpoint), usize)>,
    udp_keys: HashMap<(Endpoint, Endpoint), usize>,
    rows: Rows,
    a: Analysis,
    unknown: HashMap<i32, u64>,
    last_ns: i64,
}

/// An address and port.
type Endpoint = (IpAddr, u16);

const FAST_RETRANS_WINDOW_NS: i64 = 20_000_000;
const OOO_DEFAULT_NS: i64 = 3_000_000;
const TIME_BOUND_NS: i64 = 1 << 60;
/// Beyond this many bins in one flow's span, empty bins are left out of the series.
const MAX_DENSE_BINS: u64 = 1_000_000;
/// Wireshark's TCP_MAX_UNACKED_SEGMENTS.
const MAX_UNACKED: usize = 10_000;

/// `delta < limit` as Wireshark computes it, in unsigned 64 bits: a negative
/// delta (timestamps out of order in the capture) is never below the limit.
fn elapsed_below(delta: i64, limit: i64) -> bool {
    (0..limit).contains(&delta)
}

fn endpoint(addr: (IpAddr, u16)) -> String {
    match addr.0 {
        IpAddr::V4(v) => format!("{v}:{}", addr.1),
        IpAddr::V6(v) => format!("[{v}]:{}", addr.1),
    }
}

impl State {
    fn record(&mut self, r: &Record) {
        let t_abs = r.ts_ns();
        let start = *self.start.get_or_insert(t_abs);
        // Bounded so that differences of two times never overflow (corrupted timestamps).
        let t = (t_abs - start).clamp(-TIME_BOUND_NS, TIME_BOUND_NS);
        self.last_ns = self.last_ns.max(t);
        let d = match decode::decode(r.linktype, r.data) {
            Ok(d) => d,
            Err(Skip::UnknownLinktype(l)) => {
                *self.unknown.entry(l).or_default() += 1;
                return;
            }
            Err(Skip::NotIp) => {
                self.a.non_ip += 1;
                return;
            }
            Err(Skip::Malformed) => {
                self.a.malformed += 1;
                return;
            }
        };
        self.a.ip_packets += 1;
        match d.l4 {
            L4::Tcp(tcp) => {
                if let Some(p) = self.opts.port {
                    if tcp.sport != p && tcp.dport != p {
                        return;
                    }
                }
                self.tcp(&d, &tcp, t, r.orig_len as u64);
            }
            L4::Udp {
                sport,
                dport,
                payload_len,
            } => {
                if let Some(p) = self.opts.port {
                    if sport != p && dport != p {
                        return;
                    }
                }
                let key = ((d.src, sport), (d.dst, dport));
                let id = match self.udp_keys.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = self.dirs.len();
                        self.dirs.push(Dir {
                            src: Some(key.0),
                            dst: Some(key.1),
                            proto_udp: true,
                            ..Default::default()
                        });
                        self.udp_keys.insert(key, i);
                        i
                    }
                };
                let bin_ns = self.opts.bin_ns;
                let dir = &mut self.dirs[id];
                dir.first_ns.get_or_insert(t);
                dir.first_data_ns.get_or_insert(t);
                dir.last_ns = t;
                dir.last_ack_adv_ns = t;
                dir.out.packets += 1;
                dir.out.packets_sent += 1;
                dir.out.wire_bytes += r.orig_len as u64;
                dir.out.payload_bytes += payload_len as u64;
                dir.acked_bytes += payload_len as u64;
                let b = dir.bin(t, bin_ns);
                b[0] += payload_len as u64;
                b[2] += r.orig_len as u64;
                b[3] += payload_len as u64;
            }
            L4::Other(_) => {}
        }
    }

    fn conn_for(
        &mut self,
        src: (IpAddr, u16),
        dst: (IpAddr, u16),
        tcp: &decode::Tcp,
    ) -> (usize, usize, usize) {
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        let is_syn = tcp.flags & SYN != 0 && tcp.flags & ACK == 0;
        // Consecutive packets mostly belong to one connection: skip the hash then.
        let existing = match self.last_tcp {
            Some((k, ci)) if k == key => Some(ci),
            _ => self.tcp_keys.get(&key).copied(),
        };
        let reuse = match existing {
            Some(ci) => {
                let c = &self.conns[ci];
                is_syn && (c.closed || c.isn_a.is_some_and(|i| i != tcp.seq))
            }
            None => false,
        };
        let ci = match existing {
            Some(ci) if !reuse => ci,
            _ => {
                let index = existing.map_or(0, |ci| self.conns[ci].index + 1);
                let d0 = self.dirs.len();
                for (s, d, peer) in [(src, dst, d0 + 1), (dst, src, d0)] {
                    self.dirs.push(Dir {
                        src: Some(s),
                        dst: Some(d),
                        peer,
                        ..Default::default()
                    });
                }
                self.conns.push(Conn {
                    dirs: [d0, d0 + 1],
                    ends: [src, dst],
                    closed: false,
                    isn_a: None,
                    index,
                    syn_time: None,
                    first_rtt: None,
                });
                self.tcp_keys.insert(key, self.conns.len() - 1);
                self.conns.len() - 1
            }
        };
        self.last_tcp = Some((key, ci));
        let c = &mut self.conns[ci];
        if is_syn && c.isn_a.is_none() && c.ends[0] == src {
            c.isn_a = Some(tcp.seq);
        }
        if tcp.flags & (FIN | RST) != 0 {
            c.closed = true;
        }
        if c.ends[0] == src {
            (c.dirs[0], c.dirs[1], ci)
        } else {
            (c.dirs[1], c.dirs[0], ci)
        }
    }

    fn tcp(&mut self, d: &Decoded, tcp: &decode::Tcp, t: i64, wire: u64) {
        let (fi, ri, ci) = self.conn_for((d.src, tcp.sport), (d.dst, tcp.dport), tcp);
        let bin_ns = self.opts.bin_ns;
        let flags = tcp.flags;
        // Handshake RTT as Wireshark's ts_first_rtt: the SYN to the first pure ACK.
        let conn = &mut self.conns[ci];
        if flags & (SYN | ACK) == SYN {
            conn.syn_time = Some(t);
        } else if flags & (SYN | ACK) == ACK && conn.first_rtt.is_none() {
            conn.first_rtt = conn.syn_time.map(|s| t - s);
        }
        let ooo_threshold = conn.first_rtt.filter(|&r| r > 0).unwrap_or(OOO_DEFAULT_NS);
        // Two disjoint mutable borrows of the direction pair.
        let (fwd, rev) = if fi < ri {
            let (lo, hi) = self.dirs.split_at_mut(ri);
            (&mut lo[fi], &mut hi[0])
        } else {
            let (lo, hi) = self.dirs.split_at_mut(fi);
            (&mut hi[0], &mut lo[ri])
        };
        let seglen = tcp.payload_len as i64;
        let syn_fin = (flags & SYN != 0) as i64 + (flags & FIN != 0) as i64;
        let plain = flags & (SYN | FIN | RST) == 0;
        fwd.first_ns.get_or_insert(t);
        fwd.last_ns = t;
        fwd.out.packets += 1;
        fwd.out.wire_bytes += wire;
        fwd.out.payload_bytes += seglen as u64;
        if flags & SYN != 0 {
            fwd.syn_seen = true;
            fwd.syn_wscale = decode::wscale_option(tcp.options);
            fwd.mss = decode::mss_option(tcp.options);
        }
        let seq = fwd.seqs.ext(tcp.seq);
        if fwd.base.is_none() {
            fwd.base = Some(seq);
        }
        let ack = if flags & ACK != 0 {
            let a = rev.seqs.ext(tcp.ack);
            if rev.base.is_none() {
                rev.base = Some(a - 1);
            }
            Some(a)
        } else {
            None
        };
        {
            let b = fwd.bin(t, bin_ns);
            b[2] += wire;
            b[3] += seglen as u64;
        }
        let next = fwd.nextseq;
        // Zero-window probe: one byte at nextseq into a closed window.
        let zwp = seglen == 1 && next == Some(seq) && rev.lastwindow == Some(0);
        if tcp.window == 0 && plain && flags & ACK != 0 {
            rev.out.zero_windows += 1;
        }
        let mut keep_alive = false;
        if !zwp {
            if next.is_some_and(|n| seq > n) && flags & RST == 0 {
                fwd.out.lost_segments += 1;
            }
            if seglen <= 1 && next == Some(seq + 1) && plain {
                keep_alive = true;
                fwd.out.keep_alives += 1;
            }
            let dup = seglen == 0
                && tcp.window != 0
                && fwd.lastwindow == Some(tcp.window)
                && next == Some(seq)
                && ack.is_some()
                && fwd.lastack == ack
                && plain;
            if dup {
                fwd.dupacknum += 1;
                rev.out.dup_acks += 1;
            }
        }
        if ack.is_some() && ack != fwd.lastack {
            fwd.dupacknum = 0;
        }
        let mut retrans = false;
        if (seglen > 0 || syn_fin > 0) && !keep_alive {
            let mut not_advanced = next.is_some_and(|n| seq < n);
            if seglen > 1 && next == Some(seq + 1) {
                not_advanced = false;
            }
            let spurious = seglen > 0 && rev.lastack.is_some_and(|a| seq + seglen <= a);
            let fast = not_advanced
                && rev.dupacknum >= 2
                && rev.lastack == Some(seq)
                && elapsed_below(t - rev.lastack_time, FAST_RETRANS_WINDOW_NS);
            let ooo = not_advanced
                && elapsed_below(t - fwd.nextseq_time, ooo_threshold)
                && next != Some(seq + seglen + syn_fin);
            let class = if spurious {
                Some(&mut fwd.out.spurious_retransmits)
            } else if fast {
                Some(&mut fwd.out.fast_retransmits)
            } else if ooo {
                fwd.out.out_of_order += 1;
                None
            } else if not_advanced {
                Some(&mut fwd.out.rto_retransmits)
            } else {
                None
            };
            if let Some(c) = class {
                *c += 1;
                retrans = true;
                fwd.out.retransmits += 1;
                fwd.bin(t, bin_ns)[1] += 1;
                if !spurious && fwd.recover.is_none() {
                    fwd.recover = next;
                    if fast {
                        fwd.out.fast_recoveries += 1;
                    } else {
                        fwd.out.timeouts += 1;
                    }
                }
            }
            if fwd.unacked.len() < MAX_UNACKED {
                fwd.unacked.push_back((seq, seq + seglen + syn_fin, t));
            }
        }
        let seg_end = seq + seglen + syn_fin;
        if (next.is_none_or(|n| seg_end > n)) && !zwp {
            let from = next.unwrap_or(seq).max(seq);
            fwd.unique_bytes += (seg_end - from - syn_fin).max(0) as u64;
            fwd.nextseq = Some(seg_end);
            fwd.nextseq_time = t;
        }
        fwd.lastwindow = Some(tcp.window);
        if let Some(ack) = ack {
            let prev = fwd.lastack;
            if prev.is_none_or(|p| ack > p) {
                // Bytes newly acknowledged (the SYN takes one sequence number).
                let from = prev.unwrap_or(rev.base.unwrap_or(ack) + rev.syn_seen as i64);
                let upto = ack.min(rev.nextseq.unwrap_or(ack).max(from));
                let delta = (upto - from).max(0) as u64;
                rev.acked_bytes += delta;
                if delta > 0 {
                    rev.last_ack_adv_ns = t;
                    rev.bin(t, bin_ns)[0] += delta;
                }
                if rev.recover.is_some_and(|r| ack >= r) {
                    rev.recover = None;
                }
            }
            fwd.lastack = Some(ack);
            fwd.lastack_time = t;
            fwd.sent_ack = true;
            // ack_rtt: the oldest unacked segment ending exactly at the ACK.
            let mut rtt = None;
            rev.unacked.retain_mut(|u| {
                if ack == u.1 {
                    rtt.get_or_insert(t - u.2);
                    false
                } else if ack > u.0 && ack < u.1 {
                    u.0 = ack;
                    true
                } else {
                    u.1 > ack
                }
            });
            if let Some(r) = rtt {
                let r = r.max(0) as u64;
                rev.rtts.push(r);
                self.rows.rtt.push((t as u64, ri, r));
            }
            let scaled = match (fwd.syn_wscale, rev.syn_wscale) {
                (Some(s), Some(_)) if flags & SYN == 0 => (tcp.window as u64) << s,
                _ => tcp.window as u64,
            };
            self.rows.ack.push((t as u64, ri, rev.rel(ack), scaled));
            fwd.sacked_now = 0;
            if let Some(blocks) = decode::sack_blocks(tcp.options) {
                for (l, r) in blocks {
                    rev.out.sack_blocks += 1;
                    let (le, re) = (rev.seqs.ext(l), rev.seqs.ext(r));
                    fwd.sacked_now += (re - le).max(0) as u64;
                    self.rows
                        .sack
                        .push((t as u64, ri, rev.rel(le), rev.rel(re)));
                }
            }
        }
        if seglen > 0 {
            fwd.out.packets_sent += 1;
            fwd.first_data_ns.get_or_insert(t);
            self.rows
                .seg
                .push((t as u64, fi, fwd.rel(seq), seglen as u32, retrans));
            // Bytes in flight as Wireshark's default: the span of the unacked
            // segments, less what the peer's last SACK blocks cover.
            if rev.sent_ack && !fwd.unacked.is_empty() {
                let lo = fwd.unacked.iter().map(|u| u.0).min().unwrap_or(0);
                let hi = fwd.unacked.iter().map(|u| u.1).max().unwrap_or(0);
                let inflight = (hi - lo - rev.sacked_now as i64 - syn_fin).max(0) as u64;
                if inflight > 0 {
                    fwd.out.max_bytes_in_flight = fwd.out.max_bytes_in_flight.max(inflight);
                    self.rows.inflight.push((t as u64, fi, inflight));
                }
            }
        }
    }

    fn finish(mut self, summary: reader::ReadSummary) -> Analysis {
        let bin_ns = self.opts.bin_ns;
        let mut a = std::mem::take(&mut self.a);
        a.format = summary.format;
        a.records = summary.records;
        a.warnings = summary.warnings;
        a.bin_ns = bin_ns;
        a.start_epoch_ns = self.start.unwrap_or(0);
        a.duration_ns = self.last_ns.max(0) as u64;
        let mut unknown: Vec<(i32, u64)> = self.unknown.into_iter().collect();
        unknown.sort();
        for (l, n) in &unknown {
            a.warnings
                .push(format!("{n} frames of unsupported link type {l} skipped"));
        }
        a.unknown_linktypes = unknown;
        if a.malformed > 0 {
            a.warnings
                .push(format!("{} malformed frames skipped", a.malformed));
        }
        // Directions that carried data become flows, in order of their first data.
        let conn_index: HashMap<usize, u32> = self
            .conns
            .iter()
            .flat_map(|c| c.dirs.iter().map(move |&d| (d, c.index)))
            .collect();
        let mut order: Vec<usize> = (0..self.dirs.len())
            .filter(|&i| self.dirs[i].out.packets_sent > 0)
            .collect();
        order.sort_by_key(|&i| (self.dirs[i].first_data_ns.unwrap_or(0), i));
        let mut flow_of = vec![u32::MAX; self.dirs.len()];
        for (fid, &i) in order.iter().enumerate() {
            flow_of[i] = fid as u32;
        }
        for &i in &order {
            let fid = flow_of[i];
            let udp = self.dirs[i].proto_udp;
            let wscale = if udp {
                None
            } else {
                let p = &self.dirs[self.dirs[i].peer];
                self.dirs[i].syn_wscale.zip(p.syn_wscale)
            };
            let peer_mss = if udp {
                None
            } else {
                self.dirs[self.dirs[i].peer].mss
            };
            let dir = &mut self.dirs[i];
            let mut f = std::mem::take(&mut dir.out);
            f.id = fid;
            f.protocol = if udp { "udp" } else { "tcp" };
            f.from = dir.src.map(endpoint).unwrap_or_default();
            f.to = dir.dst.map(endpoint).unwrap_or_default();
            f.connection = conn_index.get(&i).copied().unwrap_or(0);
            f.start_ns = dir.first_ns.unwrap_or(0).max(0) as u64;
            let acked = dir.acked_bytes > 0;
            f.bytes_delivered = if acked || udp {
                dir.acked_bytes
            } else {
                dir.unique_bytes
            };
            let end = if acked {
                dir.last_ack_adv_ns.max(dir.last_ns)
            } else {
                dir.last_ns
            };
            f.end_ns = end.max(0) as u64;
            let span = f.end_ns.saturating_sub(f.start_ns);
            f.goodput_bps = if span > 0 {
                f.bytes_delivered as f64 * 8e9 / span as f64
            } else {
                0.0
            };
            f.rtt = rtt_summary(&dir.rtts);
            f.mss = peer_mss;
            f.wscale = wscale;
            if !udp {
                if !dir.syn_seen {
                    f.warnings.push("no SYN captured: connection started before the capture; window scale unknown".into());
                }
                if !acked {
                    f.warnings.push(
                        "no ACKs captured for this direction: goodput counts distinct bytes sent"
                            .into(),
                    );
                }
                if f.lost_segments > 0 {
                    f.warnings.push(format!(
                        "{} segments not captured (sequence gaps)",
                        f.lost_segments
                    ));
                }
            }
            let (bins, dense) = dir.dense_bins();
            if !dense {
                f.warnings.push(
                    "the flow spans more than a million bins: empty bins are left out".into(),
                );
            }
            for (b, v) in bins {
                a.series
                    .goodput_time_ns
                    .push((b + 1).saturating_mul(bin_ns));
                a.series.goodput_flow.push(fid);
                a.series.goodput_bytes.push(v[0]);
                a.series.goodput_retransmits.push(v[1]);
                a.series.io_wire_bytes.push(v[2]);
                a.series.io_payload_bytes.push(v[3]);
            }
            a.flows.push(f);
        }
        let s = &mut a.series;
        for (t, d, v) in self.rows.rtt {
            if flow_of[d] != u32::MAX {
                s.rtt_time_ns.push(t);
                s.rtt_flow.push(flow_of[d]);
                s.rtt_ns.push(v);
            }
        }
        for (t, d, seq, len, rx) in self.rows.seg {
            s.seg_time_ns.push(t);
            s.seg_flow.push(flow_of[d]);
            s.seg_seq.push(seq);
            s.seg_len.push(len);
            s.seg_retransmit.push(rx);
        }
        for (t, d, ack, rwnd) in self.rows.ack {
            if flow_of[d] != u32::MAX {
                s.ack_time_ns.push(t);
                s.ack_flow.push(flow_of[d]);
                s.ack_seq.push(ack);
                s.ack_rwnd_bytes.push(rwnd);
            }
        }
        for (t, d, l, r) in self.rows.sack {
            if flow_of[d] != u32::MAX {
                s.sack_time_ns.push(t);
                s.sack_flow.push(flow_of[d]);
                s.sack_left.push(l);
                s.sack_right.push(r);
            }
        }
        for (t, d, b) in self.rows.inflight {
            s.inflight_time_ns.push(t);
            s.inflight_flow.push(flow_of[d]);
            s.inflight_bytes.push(b);
        }
        a
    }
}

/// Read and analyse a capture held in memory (decompressed: see [`reader::decompress`]).
pub fn analyze(bytes: &[u8], opts: Options) -> Result<Analysis, CaptureError> {
    if opts.bin_ns == 0 {
        return Err(CaptureError::new("bin width must be > 0"));
    }
    let mut st = State {
        opts,
        start: None,
        dirs: Vec::new(),
        conns: Vec::new(),
        tcp_keys: HashMap::new(),
        last_tcp: None,
        udp_keys: HashMap::new(),
        rows: Rows::default(),
        a: Analysis::default(),
        unknown: HashMap::new(),
        last_ns: 0,
    };
    let summary = reader::read_records(bytes, |r| st.record(r))?;
    if summary.records > 0 && st.a.ip_packets == 0 && !st.unknown.is_empty() {
        let l: Vec<String> = st.unknown.keys().map(|k| k.to_string()).collect();
        return Err(CaptureError::new(format!(
            "no packet could be decoded: unsupported link type {} (supported: Ethernet 1, Linux SLL 113, SLL2 276, raw IP 101/12/14/228/229, loopback 0/108)",
            l.join(", ")
        )));
    }
    Ok(st.finish(summary))
}
