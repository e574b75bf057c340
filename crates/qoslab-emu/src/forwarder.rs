//! The real-time forwarder: a thread that enters the forwarder namespace,
//! opens the ports (and the kernel-backend veth pairs), and runs the
//! [`Model`] against `CLOCK_MONOTONIC`.
//!
//! Loop: read every port's receive ring (up to [`BATCH`] frames per port
//! per round, each stamped with its kernel receive time, after running the
//! events due by then so the model's time never goes backwards) and every
//! kernel-backend socket (recvmmsg), run the events due, write what they
//! released into the ports' transmit rings and flush each ring with one
//! `send()` ([`crate::ring`]), then sleep in ppoll until
//! [`SPIN_NS`] before the next due event — or until a frame arrives —
//! and spin the last stretch. Each event's lateness (clock when run −
//! due time) goes into a histogram; conditioners never see it.

use crate::capture::Capture;
use crate::conditioner;
use crate::gso;
use crate::model::{Counters, DirResult, Io, Model, Point};
use crate::ring::{self, RxRing, TxRing};
use crate::sys::{self, PacketSocket};
use crate::timing::{monotonic_ns, realtime_ns, LatencyHist};
use qoslab_scenario::Scenario;
use qoslab_sim::net::Net;
use qoslab_sim::result::{PolicyResult, Series};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// Frames read per port (ring) or per recvmmsg call (kernel backend) in
/// one round before the loop runs the due events and flushes.
pub const BATCH: usize = 64;
/// Sleep until this long before the next due event, then spin.
pub const SPIN_NS: u64 = 50_000;
/// Longest sleep (so a stop request is seen quickly).
const MAX_SLEEP_NS: u64 = 20_000_000;
/// Socket buffers: large enough that socket accounting never drops before
/// a qdisc's own limit does.
const SOCKET_BUFFER_BYTES: i32 = 64 << 20;

/// An emulator failure, one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmuError(pub String);

impl std::fmt::Display for EmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EmuError {}

/// Where the hosts and interfaces are.
#[derive(Clone, Debug, Default)]
pub struct EmuSpec {
    /// The forwarder's network namespace (`/run/netns/NAME`).
    pub netns: String,
    /// Host node → port interface name in `netns`.
    pub ports: Vec<(String, String)>,
    /// Host node → IPv4 address.
    pub host_ips: Vec<(String, String)>,
    /// Link direction (`r1->r2`) → (send interface, read-back interface).
    pub kernel_links: Vec<(String, String, String)>,
    /// (link direction, `ingress` | `egress`, pcap path).
    pub captures: Vec<(String, String, PathBuf)>,
    /// CLOCK_MONOTONIC origin of the series.
    pub t0_ns: u64,
    /// `--offload on`: the hosts send GSO super-packets (TSO on their
    /// veths); the ports read them with their virtio-net header and the
    /// forwarder splits each into its wire segments ([`crate::gso`]).
    pub offload: bool,
}

/// Live counters, readable while the forwarder runs.
#[derive(Debug, Default)]
pub struct LiveStats {
    pub frames_in: AtomicU64,
    pub frames_out: AtomicU64,
    pub dropped: AtomicU64,
    pub lost: AtomicU64,
    pub unroutable: AtomicU64,
    pub oversize: AtomicU64,
    pub policy_drops: Vec<AtomicU64>,
}

/// Lateness summary of the event loop.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl Timing {
    fn of(h: &LatencyHist) -> Timing {
        Timing {
            count: h.count,
            mean_ns: h.mean_ns(),
            p50_ns: h.quantile(0.5),
            p99_ns: h.quantile(0.99),
            p999_ns: h.quantile(0.999),
            max_ns: h.max_ns,
        }
    }
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct EmuResult {
    pub policies: Vec<PolicyResult>,
    pub links: Vec<DirResult>,
    pub series: Series,
    pub counters: Counters,
    pub timing: Timing,
    /// The loop ran with real-time priority (SCHED_FIFO).
    pub realtime: bool,
    /// Frames the ports' transmit rings (or kernel send buffers) refused
    /// (should stay 0).
    pub tx_refused: u64,
    /// Frames the ports' receive rings dropped for lack of a free slot
    /// (the loop fell behind; should stay 0).
    pub rx_ring_drops: u64,
    /// `--offload on`: super-packets rebuilt for the hosts, and the wire
    /// segments they carried.
    pub tx_super_packets: u64,
    pub tx_super_segments: u64,
    /// (path, frames) per capture written.
    pub captures: Vec<(PathBuf, u64)>,
}

/// The running forwarder. Dropping it stops the thread.
pub struct Handle {
    stop: Arc<AtomicBool>,
    live: Arc<LiveStats>,
    thread: Option<JoinHandle<Result<EmuResult, EmuError>>>,
    pub policy_names: Vec<String>,
}

impl Handle {
    pub fn live(&self) -> &LiveStats {
        &self.live
    }

    /// The loop is still running (it ends on `stop` or on an I/O error,
    /// which `stop` then returns).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops the loop, joins the thread, returns the results.
    pub fn stop(&mut self) -> Result<EmuResult, EmuError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| EmuError("the forwarder thread panicked".into()))?,
            None => Err(EmuError("the forwarder was already stopped".into())),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop();
        }
    }
}

fn parse_point(s: &str) -> Result<Point, EmuError> {
    match s {
        "ingress" => Ok(Point::Ingress),
        "egress" => Ok(Point::Egress),
        _ => Err(EmuError(format!(
            "capture point '{s}': expected 'ingress' or 'egress'"
        ))),
    }
}

/// Everything resolved from the scenario and the spec, before any I/O.
struct Resolved {
    net: Net,
    /// (host node, ifname).
    ports: Vec<(u32, String)>,
    /// (IPv4 host order, host node).
    ips: Vec<(u32, u32)>,
    /// (dir, send ifname, read ifname).
    kernel: Vec<(u32, String, String)>,
    captures: Vec<(u32, Point, PathBuf)>,
}

fn resolve(sc: &Scenario, spec: &EmuSpec) -> Result<Resolved, EmuError> {
    let cfg = &sc.config;
    let net = Net::build(&cfg.topology).map_err(|e| EmuError(e.to_string()))?;
    let flows = qoslab_sim::plan_flows(cfg).map_err(|e| EmuError(e.to_string()))?;
    let hosts = crate::plan::hosts(&cfg.topology, &net, &flows);
    let node = |name: &str, what: &str| -> Result<u32, EmuError> {
        if !hosts.iter().any(|h| h == name) {
            return Err(EmuError(format!(
                "{what}: '{name}' is not a host of this scenario (hosts: {})",
                hosts.join(", ")
            )));
        }
        Ok(net.node_index(name).expect("a host is a node"))
    };
    let mut ports = Vec::new();
    for (h, ifname) in &spec.ports {
        ports.push((node(h, "ports")?, ifname.clone()));
    }
    for h in &hosts {
        if !spec.ports.iter().any(|(x, _)| x == h) {
            return Err(EmuError(format!("ports: no port given for host '{h}'")));
        }
    }
    let mut ips = Vec::new();
    for (h, ip) in &spec.host_ips {
        let n = node(h, "host_ips")?;
        let a: Ipv4Addr = ip
            .parse()
            .map_err(|_| EmuError(format!("host_ips: '{ip}' for '{h}' is not an IPv4 address")))?;
        if ips.iter().any(|&(x, _)| x == u32::from(a)) {
            return Err(EmuError(format!("host_ips: {ip} given twice")));
        }
        ips.push((u32::from(a), n));
    }
    let dir = |name: &str, what: &str| -> Result<u32, EmuError> {
        (0..net.dirs.len() as u32)
            .find(|&d| net.dir_name(d) == name)
            .ok_or_else(|| {
                EmuError(format!(
                    "{what}: no link direction '{name}' (e.g. {})",
                    net.dir_name(0)
                ))
            })
    };
    let mut kernel = Vec::new();
    for (l, a, b) in &spec.kernel_links {
        kernel.push((dir(l, "kernel_links")?, a.clone(), b.clone()));
    }
    let mut captures = Vec::new();
    for (l, p, path) in &spec.captures {
        captures.push((dir(l, "captures")?, parse_point(p)?, path.clone()));
    }
    Ok(Resolved {
        net,
        ports,
        ips,
        kernel,
        captures,
    })
}

/// Starts the forwarder for scenario `sc`; returns once the thread is in
/// the namespace with every socket and capture open (or with the error
/// that stopped it).
pub fn start(sc: &Scenario, spec: EmuSpec) -> Result<Handle, EmuError> {
    let r = resolve(sc, &spec)?;
    // Check the conditioners (and kernel forms) here, where errors are
    // cheap to report; the thread builds its own copy (trees are not Send).
    let kdirs: Vec<u32> = r.kernel.iter().map(|k| k.0).collect();
    let cond =
        conditioner::build(&sc.config, &r.net, &kdirs).map_err(|e| EmuError(e.to_string()))?;
    for &(d, ..) in &r.kernel {
        let dd = &cond.dirs[d as usize];
        if let Some(Some(p)) = dd.kernel {
            if cond.kernel[p as usize].is_none() {
                return Err(EmuError(format!(
                    "kernel_links: the policy of '{}' has no Linux qdisc form",
                    dd.name
                )));
            }
        }
    }
    let policy_names: Vec<String> = cond.policies.iter().map(|p| p.res.name.clone()).collect();
    let live = Arc::new(LiveStats {
        policy_drops: (0..policy_names.len()).map(|_| AtomicU64::new(0)).collect(),
        ..LiveStats::default()
    });
    drop(cond);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Result<(), EmuError>>();
    let cfg = sc.config.clone();
    let (stop2, live2) = (stop.clone(), live.clone());
    let thread = std::thread::Builder::new()
        .name("qoslab-emu".into())
        .spawn(move || run(cfg, spec, r, kdirs, stop2, live2, tx))
        .map_err(|e| EmuError(format!("cannot start the forwarder thread: {e}")))?;
    let mut h = Handle {
        stop,
        live,
        thread: Some(thread),
        policy_names,
    };
    match rx.recv() {
        Ok(Ok(())) => Ok(h),
        Ok(Err(e)) => {
            let _ = h.stop();
            Err(e)
        }
        Err(_) => Err(h
            .stop()
            .err()
            .unwrap_or_else(|| EmuError("the forwarder stopped while starting".into()))),
    }
}

/// The [`Io`] of the real sockets.
struct RealIo {
    /// Per node: index into `ports`.
    port_of: Vec<Option<usize>>,
    /// Per port: its transmit ring.
    ports: Vec<TxRing>,
    /// Per direction: the kernel socket it sends into.
    kernel_tx: Vec<Option<PacketSocket>>,
    /// Capture points → index in `capture_files`: several points may share a
    /// file (both directions of a link in one pcap, as tcpdump on a port).
    captures: HashMap<(u32, Point), usize>,
    capture_files: Vec<Capture>,
    error: Option<String>,
    tx_refused: u64,
}

impl Io for RealIo {
    fn deliver(&mut self, host: u32, _t_ns: u64, frame: &[u8]) {
        if let Some(p) = self.port_of[host as usize] {
            let r = &mut self.ports[p];
            match r.push(frame) {
                Ok(true) => {}
                Ok(false) => self.tx_refused += 1,
                Err(e) => {
                    let name = r.ifname().to_string();
                    self.error
                        .get_or_insert_with(|| format!("sending on '{name}': {e}"));
                }
            }
        }
    }
    fn kernel_send(&mut self, dir: u32, frame: &[u8]) -> bool {
        let Some(s) = &self.kernel_tx[dir as usize] else {
            return false;
        };
        match s.send(frame) {
            Ok(ok) => ok,
            Err(e) => {
                self.error
                    .get_or_insert_with(|| format!("sending into '{}': {e}", s.ifname));
                false
            }
        }
    }
    fn capture(&mut self, dir: u32, point: Point, t_ns: u64, frame: &[u8]) {
        if let Some(&i) = self.captures.get(&(dir, point)) {
            if let Err(e) = self.capture_files[i].write(t_ns, frame) {
                self.error.get_or_insert(e);
            }
        }
    }
}

impl RealIo {
    fn flush(&mut self) {
        for r in &mut self.ports {
            if let Err(e) = r.flush() {
                let name = r.ifname().to_string();
                self.error
                    .get_or_insert_with(|| format!("sending on '{name}': {e}"));
            }
        }
    }
}

fn run(
    cfg: qoslab_sim::SimConfig,
    spec: EmuSpec,
    r: Resolved,
    kdirs: Vec<u32>,
    stop: Arc<AtomicBool>,
    live: Arc<LiveStats>,
    ready: mpsc::Sender<Result<(), EmuError>>,
) -> Result<EmuResult, EmuError> {
    let setup = || -> Result<_, String> {
        sys::enter_netns(&spec.netns)?;
        sys::precise_timers();
        let rt = sys::realtime_priority();
        let mut ports = Vec::new();
        let mut port_of = vec![None; r.net.nodes.len()];
        for (n, ifname) in &r.ports {
            port_of[*n as usize] = Some(ports.len());
            ports.push((*n, ring::open(ifname, spec.offload)?));
        }
        let mut kernel_tx: Vec<Option<PacketSocket>> =
            (0..r.net.dirs.len()).map(|_| None).collect();
        let mut kernel_rx = Vec::new();
        for (d, a, b) in &r.kernel {
            kernel_tx[*d as usize] = Some(PacketSocket::open(a, SOCKET_BUFFER_BYTES)?);
            kernel_rx.push((*d, PacketSocket::open(b, SOCKET_BUFFER_BYTES)?));
        }
        let mtu = ports.iter().map(|(_, p)| p.0.mtu()).max().unwrap_or(1500);
        let offset = i128::from(realtime_ns()) - i128::from(monotonic_ns());
        let mut captures = HashMap::new();
        let mut files: Vec<Capture> = Vec::new();
        for (d, p, path) in &r.captures {
            let i = match files.iter().position(|c| c.path() == path.as_path()) {
                Some(i) => i,
                None => {
                    files.push(Capture::create(path, mtu + 14, offset)?);
                    files.len() - 1
                }
            };
            captures.insert((*d, *p), i);
        }
        Ok((
            ports,
            port_of,
            kernel_tx,
            kernel_rx,
            (captures, files),
            mtu,
            rt,
        ))
    };
    let (ports, port_of, kernel_tx, kernel_rx, (captures, capture_files), mtu, realtime) =
        match setup() {
            Ok(x) => x,
            Err(e) => {
                let _ = ready.send(Err(EmuError(e.clone())));
                return Err(EmuError(e));
            }
        };
    let cond = conditioner::build(&cfg, &r.net, &kdirs).map_err(|e| EmuError(e.to_string()))?;
    let max_frame = mtu as usize + crate::frame::ETH_HEADER_BYTES;
    let mut model = Model::new(&r.net, cond, &r.ips, max_frame, cfg.record, spec.t0_ns);
    for (d, p, _) in &r.captures {
        model.tap(*d, *p);
    }
    let mut rx_rings: Vec<(u32, RxRing)> = Vec::new();
    let mut io = RealIo {
        port_of,
        ports: Vec::new(),
        kernel_tx,
        captures,
        capture_files,
        error: None,
        tx_refused: 0,
    };
    for (n, (rx, tx)) in ports {
        rx_rings.push((n, rx));
        io.ports.push(tx);
    }
    let mut fds: Vec<libc::pollfd> = rx_rings
        .iter()
        .map(|(_, r)| r.raw_fd())
        .chain(kernel_rx.iter().map(|(_, s)| s.raw_fd()))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let _ = ready.send(Ok(()));

    let mut bufs = vec![vec![0u8; max_frame]; BATCH];
    let mut lens = vec![0usize; BATCH];
    let mut stamps = vec![0u64; BATCH];
    let mut csum = vec![false; BATCH];
    let mut rx_ring_drops = 0u64;
    let mut seg = Vec::with_capacity(max_frame);
    // Kernel receive stamps are CLOCK_REALTIME: shift them by the offset
    // taken now (NTP slews it by parts per million at most during a run).
    let real_minus_mono = i128::from(realtime_ns()) - i128::from(monotonic_ns());
    // When a frame arrived: the kernel's stamp, never in the future nor
    // before what the model already ran (`advance` keeps that order).
    let arrival = |stamp: u64, wall: u64| match stamp {
        0 => wall,
        s => ((i128::from(s) - real_minus_mono).max(0) as u64).min(wall),
    };
    while !stop.load(Ordering::Relaxed) {
        let mut got = 0;
        for (h, rx) in &mut rx_rings {
            let wall = monotonic_ns();
            for _ in 0..BATCH {
                let Some(f) = rx.peek() else { break };
                got += 1;
                let limit = if f.vnet.is_some_and(|v| v.gso_type != gso::GSO_NONE) {
                    usize::MAX
                } else {
                    max_frame
                };
                if f.len > limit || f.data.len() < f.len {
                    model.counters.frames_in += 1;
                    model.counters.oversize += 1;
                    rx.release();
                    continue;
                }
                let t = arrival(f.stamp_ns, wall);
                model.advance(t, wall, &mut io);
                if let Some(v) = f.vnet.filter(|v| v.gso_type != gso::GSO_NONE) {
                    // A super-packet: on to the model as its wire segments,
                    // all read at `t` (they crossed the veth together).
                    model.counters.super_packets += 1;
                    let r = match v.gso_type {
                        gso::GSO_TCPV4 => {
                            gso::segment_tcp4(f.data, usize::from(v.gso_size), &mut seg, |s| {
                                model.ingress_owned(t, *h, s, &mut io)
                            })
                        }
                        _ => Err(gso::GsoError::Unsupported),
                    };
                    if r.is_err() {
                        model.counters.frames_in += 1;
                        model.counters.unroutable += 1;
                    }
                    rx.release();
                    continue;
                }
                if f.csum_not_ready && crate::frame::complete_l4_checksum(f.data) {
                    model.counters.checksums_completed += 1;
                }
                model.ingress(t, *h, f.data, &mut io);
                rx.release();
            }
            if std::mem::take(&mut rx.losing) {
                rx_ring_drops += rx.drops();
            }
        }
        for (d, sock) in &kernel_rx {
            for _ in 0..4 {
                let n = sock
                    .recv_batch(&mut bufs, &mut lens, &mut stamps, &mut csum)
                    .map_err(|e| EmuError(format!("reading '{}': {e}", sock.ifname)))?;
                if n == 0 {
                    break;
                }
                let wall = monotonic_ns();
                for i in 0..n {
                    if lens[i] > max_frame {
                        model.counters.frames_in += 1;
                        model.counters.oversize += 1;
                        continue;
                    }
                    let t = arrival(stamps[i], wall);
                    model.advance(t, wall, &mut io);
                    let f = &mut bufs[i][..lens[i]];
                    if csum[i] && crate::frame::complete_l4_checksum(f) {
                        model.counters.checksums_completed += 1;
                    }
                    model.kernel_return(t, *d, f, &mut io);
                }
                got += n;
                if n < BATCH {
                    break;
                }
            }
        }
        let t = monotonic_ns();
        model.advance(t, t, &mut io);
        io.flush();
        if let Some(e) = io.error.take() {
            return Err(EmuError(e));
        }
        publish(&model, &live);
        if got > 0 {
            continue;
        }
        let now = monotonic_ns();
        match model.next_due() {
            Some(d) if d <= now.saturating_add(SPIN_NS) => {
                std::hint::spin_loop();
            }
            Some(d) => sys::wait_readable(&mut fds, (d - SPIN_NS - now).min(MAX_SLEEP_NS)),
            None => sys::wait_readable(&mut fds, MAX_SLEEP_NS),
        }
    }
    for (_, rx) in &rx_rings {
        rx_ring_drops += rx.drops();
    }
    io.flush();
    let tx_super_packets = io.ports.iter().map(|r| r.coalesced).sum();
    let tx_super_segments = io.ports.iter().map(|r| r.coalesced_segments).sum();
    publish(&model, &live);
    let tx_refused = io.tx_refused;
    let mut written = Vec::new();
    for c in io.capture_files.drain(..) {
        let n = c.packets;
        let p = c.path().to_path_buf();
        c.finish().map_err(EmuError)?;
        written.push((p, n));
    }
    let (policies, links, series, counters, lateness) = model.finish();
    Ok(EmuResult {
        policies,
        links,
        series,
        counters,
        timing: Timing::of(&lateness),
        realtime,
        tx_refused,
        rx_ring_drops,
        tx_super_packets,
        tx_super_segments,
        captures: written,
    })
}

fn publish(m: &Model, live: &LiveStats) {
    let c = &m.counters;
    live.frames_in.store(c.frames_in, Ordering::Relaxed);
    live.frames_out.store(c.frames_out, Ordering::Relaxed);
    live.dropped.store(c.dropped, Ordering::Relaxed);
    live.lost.store(c.lost, Ordering::Relaxed);
    live.unroutable.store(c.unroutable, Ordering::Relaxed);
    live.oversize.store(c.oversize, Ordering::Relaxed);
    for (a, v) in live.policy_drops.iter().zip(m.policy_drops()) {
        a.store(v, Ordering::Relaxed);
    }
}
