//! The real-time forwarder: threads that enter the forwarder namespace,
//! open the ports (and the kernel-backend veth pairs), and run the
//! [`Model`] against `CLOCK_MONOTONIC`.
//!
//! One thread per independent group of ports (`plan_threads`): ports whose
//! frames share no link direction, no ingress policer and no capture file
//! are read by different threads, each with its own copy of the model, of
//! which it only ever touches its own directions — so no model state is
//! shared and the hot path takes no lock. On the two-host path (data one
//! way, ACKs the other) that is one thread per direction, each pinned to a
//! CPU: the kernel work each `send()` runs (the receiving host's stack in
//! softirq) is then spread over two cores instead of one. Every thread
//! writes to any port through a transmit ring of its own.
//!
//! Loop (per thread): read each of its ports' receive rings (up to [`BATCH`] frames per port
//! per round, each stamped with its kernel receive time, after running the
//! events due by then so the model's time never goes backwards) and every
//! kernel-backend socket (recvmmsg), run the events due, write what they
//! released into the ports' transmit rings and flush each ring with one
//! `send()` ([`crate::ring`]); with several threads, spin while any of them
//! read a frame in the last [`IDLE_SPIN_NS`]; else sleep in ppoll until
//! [`SPIN_NS`] before the next due event — or until a frame arrives or a
//! peer kicks it — and spin the last stretch. With `busy_poll` the
//! loop never sleeps. Each event's lateness (clock when run − due time), and
//! each timed sleep's (woken − asked), go into histograms; conditioners
//! never see them.

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
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// Frames read per port (ring) or per recvmmsg call (kernel backend) in
/// one round before the loop runs the due events and flushes.
pub const BATCH: usize = 64;
/// Longest sleep (so a stop request is seen quickly).
const MAX_SLEEP_NS: u64 = 20_000_000;
/// Sleep until this long before the next due event, then spin. Fixed: a
/// margin learnt from late wake-ups (up to 1 ms) was tried and measured
/// (2026-11-24, quiet machine): the SCHED_FIFO thread then spun through
/// most gaps between a 100 Mbit/s TBF's releases, took the CPU from the
/// hosts' TCP, and the TBF's rate fell to 97.6 % of ideal (100.0 % with
/// this margin). The sleeps' lateness stays measured (`Timing::wake_*`).
pub const SPIN_NS: u64 = 50_000;
/// While the loop reads a batch of frames, frames the model released into
/// the TX rings wait for the round's flush, behind the rest of the batch
/// (each read frame costs a µs or two of model work). Once the oldest of
/// them is this far past its due time, the rings are flushed at once,
/// mid-batch: a frame released on time is then never held more than about
/// this long by reading, while at line rate (frames due a few µs apart)
/// rounds still flush in batches (issue 16, the delay line's "handed late").
pub const EAGER_FLUSH_NS: u64 = 20_000;
/// With several threads: after any of them read a frame, spin (instead of
/// sleeping in ppoll) this long: a reply or the next frame of a burst is
/// then read without the wake-up of a sleeping thread on an idle virtual
/// CPU (tens of µs).
pub const IDLE_SPIN_NS: u64 = 200_000;
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
    /// Forwarder threads: 0 = one per independent group of ports, at most
    /// one per CPU; 1 = a single thread; n = at most n.
    pub threads: usize,
    /// `--busy-poll`: the threads never sleep in ppoll; they spin on their
    /// rings and clocks, so a frame or a due release is seen within about a
    /// µs instead of after a wake-up (an IPI to a halted virtual CPU: tens of
    /// µs). Costs a CPU per thread, all the time.
    pub busy_poll: bool,
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
    /// Timed sleeps in ppoll that ran out, and how late they woke (woken
    /// − asked): p50, p99, maximum.
    pub wake_count: u64,
    pub wake_p50_ns: u64,
    pub wake_p99_ns: u64,
    pub wake_max_ns: u64,
    /// Frames handed to a host's port, and how late after the model
    /// released them (their due time): when the port's `send()` began
    /// (`handed_*`: the loop's lateness plus the batch they waited in) and
    /// when it returned (`sent_*`: plus the kernel's work on the frames
    /// queued before them, which for a veth runs the receiving host's stack).
    /// The receiving host stamps a frame between the two.
    pub sent_count: u64,
    pub handed_p50_ns: u64,
    pub handed_p99_ns: u64,
    pub sent_p50_ns: u64,
    pub sent_p99_ns: u64,
    pub sent_max_ns: u64,
}

impl Timing {
    fn of(h: &LatencyHist, wake: &LatencyHist, handed: &LatencyHist, sent: &LatencyHist) -> Timing {
        Timing {
            count: h.count,
            mean_ns: h.mean_ns(),
            p50_ns: h.quantile(0.5),
            p99_ns: h.quantile(0.99),
            p999_ns: h.quantile(0.999),
            max_ns: h.max_ns,
            wake_count: wake.count,
            wake_p50_ns: wake.quantile(0.5),
            wake_p99_ns: wake.quantile(0.99),
            wake_max_ns: wake.max_ns,
            sent_count: sent.count,
            handed_p50_ns: handed.quantile(0.5),
            handed_p99_ns: handed.quantile(0.99),
            sent_p50_ns: sent.quantile(0.5),
            sent_p99_ns: sent.quantile(0.99),
            sent_max_ns: sent.max_ns,
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
    /// Of `tx_super_packets`, those handed over exactly as they were read
    /// (bytes and virtio-net header: all their segments delivered back to
    /// back, unchanged).
    pub tx_whole_super_packets: u64,
    /// (path, frames) per capture written.
    pub captures: Vec<(PathBuf, u64)>,
    /// Forwarder threads that ran.
    pub threads: usize,
}

/// The running forwarder. Dropping it stops the thread.
pub struct Handle {
    stop: Arc<AtomicBool>,
    live: Arc<LiveStats>,
    threads: Vec<JoinHandle<Result<Part, EmuError>>>,
    owners: Owners,
    pub policy_names: Vec<String>,
}

impl Handle {
    pub fn live(&self) -> &LiveStats {
        &self.live
    }

    /// The loop is still running (it ends on `stop` or on an I/O error,
    /// which `stop` then returns).
    pub fn is_running(&self) -> bool {
        !self.threads.is_empty() && self.threads.iter().all(|t| !t.is_finished())
    }

    /// Stops the loop, joins the threads, returns the results (merged
    /// over the threads; the first thread's error if one failed).
    pub fn stop(&mut self) -> Result<EmuResult, EmuError> {
        self.stop.store(true, Ordering::Relaxed);
        if self.threads.is_empty() {
            return Err(EmuError("the forwarder was already stopped".into()));
        }
        let mut parts = Vec::new();
        let mut first_err = None;
        for t in self.threads.drain(..) {
            match t.join() {
                Ok(Ok(p)) => parts.push(p),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(EmuError("a forwarder thread panicked".into()));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(merge(parts, &self.owners)),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            let _ = self.stop();
        }
    }
}

/// What one thread produced.
struct Part {
    res: EmuResult,
    lateness: LatencyHist,
    wake: LatencyHist,
    handed: LatencyHist,
    sent: LatencyHist,
}

/// Which thread's copy of the model holds each direction's and each
/// policy's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Owners {
    dir: Vec<usize>,
    policy: Vec<usize>,
}

/// The threads' results as one: each direction's and policy's counters
/// from the thread that owns it (the others' copies never saw a frame of
/// it), network counters summed, series rows of owned policies in time
/// order, lateness histograms added.
fn merge(mut parts: Vec<Part>, owners: &Owners) -> EmuResult {
    if parts.len() == 1 {
        let p = parts.pop().expect("one part");
        let mut res = p.res;
        res.timing = Timing::of(&p.lateness, &p.wake, &p.handed, &p.sent);
        return res;
    }
    let mut lateness = LatencyHist::default();
    let mut wake = LatencyHist::default();
    let mut handed = LatencyHist::default();
    let mut sent = LatencyHist::default();
    for p in &parts {
        lateness.merge(&p.lateness);
        wake.merge(&p.wake);
        handed.merge(&p.handed);
        sent.merge(&p.sent);
    }
    let pick = |i: usize, o: &[usize]| o.get(i).copied().unwrap_or(0).min(parts.len() - 1);
    let policies = (0..parts[0].res.policies.len())
        .map(|i| parts[pick(i, &owners.policy)].res.policies[i].clone())
        .collect();
    let links = (0..parts[0].res.links.len())
        .map(|i| parts[pick(i, &owners.dir)].res.links[i].clone())
        .collect();
    let mut series = Series::default();
    let mut queue_rows = Vec::new();
    let mut color_rows = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let s = &p.res.series;
        for i in 0..s.queue_time_ns.len() {
            if pick(s.queue_policy[i] as usize, &owners.policy) == k {
                queue_rows.push((s.queue_time_ns[i], s.queue_policy[i], k, i));
            }
        }
        for i in 0..s.color_time_ns.len() {
            if pick(s.color_policy[i] as usize, &owners.policy) == k {
                color_rows.push((s.color_time_ns[i], s.color_policy[i], k, i));
            }
        }
    }
    // The single-threaded order: by time, then by policy.
    queue_rows.sort_unstable();
    color_rows.sort_unstable();
    for &(t, pol, k, i) in &queue_rows {
        let s = &parts[k].res.series;
        series.queue_time_ns.push(t);
        series.queue_policy.push(pol);
        series.queue_packets.push(s.queue_packets[i]);
        series.queue_bytes.push(s.queue_bytes[i]);
        series.tokens_bytes.push(s.tokens_bytes[i]);
    }
    for &(t, pol, k, i) in &color_rows {
        let s = &parts[k].res.series;
        series.color_time_ns.push(t);
        series.color_policy.push(pol);
        series.color_green_bytes.push(s.color_green_bytes[i]);
        series.color_yellow_bytes.push(s.color_yellow_bytes[i]);
        series.color_red_bytes.push(s.color_red_bytes[i]);
        series.color_dropped_bytes.push(s.color_dropped_bytes[i]);
    }
    let mut counters = Counters::default();
    for p in &parts {
        let c = &p.res.counters;
        counters.frames_in += c.frames_in;
        counters.frames_out += c.frames_out;
        counters.unroutable += c.unroutable;
        counters.oversize += c.oversize;
        counters.dropped += c.dropped;
        counters.lost += c.lost;
        counters.loops += c.loops;
        counters.checksums_completed += c.checksums_completed;
        counters.super_packets += c.super_packets;
    }
    let sum = |f: fn(&EmuResult) -> u64| parts.iter().map(|p| f(&p.res)).sum::<u64>();
    EmuResult {
        policies,
        links,
        series,
        counters,
        timing: Timing::of(&lateness, &wake, &handed, &sent),
        realtime: parts.iter().all(|p| p.res.realtime),
        tx_refused: sum(|r| r.tx_refused),
        rx_ring_drops: sum(|r| r.rx_ring_drops),
        tx_super_packets: sum(|r| r.tx_super_packets),
        tx_super_segments: sum(|r| r.tx_super_segments),
        tx_whole_super_packets: sum(|r| r.tx_whole_super_packets),
        captures: parts.iter().flat_map(|p| p.res.captures.clone()).collect(),
        threads: parts.len(),
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

/// How the ports are shared out between threads.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ThreadPlan {
    /// Per thread: indices into [`Resolved::ports`] of the ports it reads.
    groups: Vec<Vec<usize>>,
    owners: Owners,
}

/// Groups the ports so that no two groups' frames meet: a port's frames
/// use the directions on the routes from its host to every other host (and
/// those directions' ingress policers); ports sharing any of these, or
/// whose directions share a capture file, go in one group. Then at most
/// `max_threads` groups (the surplus dealt round-robin onto the first).
fn plan_threads(r: &Resolved, policy_dir: &[Option<u32>], max_threads: usize) -> ThreadPlan {
    let net = &r.net;
    let n_dirs = net.dirs.len();
    let hosts: Vec<u32> = r.ips.iter().map(|&(_, n)| n).collect();
    let routes = qoslab_sim::net::Routes::compute(net, &hosts);
    let mut parent: Vec<usize> = (0..r.ports.len()).collect();
    fn find(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    let union = |p: &mut Vec<usize>, a: usize, b: usize| {
        let (a, b) = (find(p, a), find(p, b));
        if a != b {
            p[a.max(b)] = a.min(b);
        }
    };
    // Resource → first port using it: directions, then ingress policers.
    let mut user: Vec<Option<usize>> = vec![None; n_dirs + net.ingress.len()];
    for (i, &(a, _)) in r.ports.iter().enumerate() {
        for &b in &hosts {
            let Ok(path) = routes.path(net, a, b) else {
                continue;
            };
            for d in path {
                let ing = net.dirs[d as usize].ingress.map(|k| n_dirs + k);
                for res in std::iter::once(d as usize).chain(ing) {
                    match user[res] {
                        Some(o) => union(&mut parent, o, i),
                        None => user[res] = Some(i),
                    }
                }
            }
        }
    }
    for (_, _, path) in &r.captures {
        let mut first: Option<usize> = None;
        for (d, _, _) in r.captures.iter().filter(|c| &c.2 == path) {
            if let Some(u) = user[*d as usize] {
                match first {
                    Some(f) => union(&mut parent, f, u),
                    None => first = Some(u),
                }
            }
        }
    }
    let mut roots: Vec<usize> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..r.ports.len() {
        let root = find(&mut parent, i);
        match roots.iter().position(|&x| x == root) {
            Some(g) => groups[g].push(i),
            None => {
                roots.push(root);
                groups.push(vec![i]);
            }
        }
    }
    let n = groups.len().clamp(1, max_threads.max(1));
    let mut dealt: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, g) in groups.into_iter().enumerate() {
        dealt[k % n].extend(g);
    }
    let mut group_of = vec![0; r.ports.len()];
    for (g, ports) in dealt.iter().enumerate() {
        for &p in ports {
            group_of[p] = g;
        }
    }
    let owner = |res: usize| user[res].map_or(0, |p| group_of[p]);
    let dir: Vec<usize> = (0..n_dirs).map(owner).collect();
    let policy = policy_dir
        .iter()
        .enumerate()
        .map(|(k, pd)| match pd {
            Some(d) => dir[*d as usize],
            // A shared ingress policer (index k < the ingress count).
            None if k < net.ingress.len() => owner(n_dirs + k),
            None => 0,
        })
        .collect();
    ThreadPlan {
        groups: dealt,
        owners: Owners { dir, policy },
    }
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
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max_threads = match spec.threads {
        0 => cpus,
        n => n,
    };
    let plan = plan_threads(&r, &cond.policy_dir, max_threads);
    let live = Arc::new(LiveStats {
        policy_drops: (0..policy_names.len()).map(|_| AtomicU64::new(0)).collect(),
        ..LiveStats::default()
    });
    drop(cond);
    let stop = Arc::new(AtomicBool::new(false));
    let activity = Arc::new(AtomicU64::new(0));
    let mut peers = Vec::new();
    for _ in &plan.groups {
        peers.push(Peer {
            sleeping: AtomicBool::new(false),
            wake: sys::eventfd().map_err(EmuError)?,
        });
    }
    let peers = Arc::new(peers);
    let (tx, rx) = mpsc::channel::<Result<(), EmuError>>();
    let n = plan.groups.len();
    let mut h = Handle {
        stop: stop.clone(),
        live: live.clone(),
        threads: Vec::new(),
        owners: plan.owners.clone(),
        policy_names,
    };
    for (g, reads) in plan.groups.iter().enumerate() {
        let mut part = Resolved {
            net: r.net.clone(),
            ports: r.ports.clone(),
            ips: r.ips.clone(),
            kernel: Vec::new(),
            captures: Vec::new(),
        };
        part.kernel = r
            .kernel
            .iter()
            .filter(|k| plan.owners.dir[k.0 as usize] == g)
            .cloned()
            .collect();
        part.captures = r
            .captures
            .iter()
            .filter(|c| plan.owners.dir[c.0 as usize] == g)
            .cloned()
            .collect();
        let job = Job {
            cfg: sc.config.clone(),
            spec: spec.clone(),
            r: part,
            reads: reads.clone(),
            kdirs: kdirs.clone(),
            cpu: (n > 1).then_some(g % cpus),
            stop: stop.clone(),
            live: live.clone(),
            activity: activity.clone(),
            me: g,
            peers: peers.clone(),
        };
        let tx = tx.clone();
        let stop2 = stop.clone();
        let name = if n > 1 {
            format!("qoslab-emu-{g}")
        } else {
            "qoslab-emu".into()
        };
        let t = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let res = run(job, tx);
                if res.is_err() {
                    // One thread failing ends the run for all.
                    stop2.store(true, Ordering::Relaxed);
                }
                res
            })
            .map_err(|e| EmuError(format!("cannot start a forwarder thread: {e}")));
        match t {
            Ok(t) => h.threads.push(t),
            Err(e) => {
                let _ = h.stop();
                return Err(e);
            }
        }
    }
    drop(tx);
    for _ in 0..n {
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = h.stop();
                return Err(e);
            }
            Err(_) => {
                return Err(h
                    .stop()
                    .err()
                    .unwrap_or_else(|| EmuError("the forwarder stopped while starting".into())))
            }
        }
    }
    Ok(h)
}

/// One forwarder thread's share.
struct Job {
    cfg: qoslab_sim::SimConfig,
    spec: EmuSpec,
    /// Every port (the thread may deliver to any), and only the kernel
    /// links and captures of the directions it owns.
    r: Resolved,
    /// Indices into `r.ports` of the ports it reads.
    reads: Vec<usize>,
    /// Every kernel-backend direction (the model's conditioners).
    kdirs: Vec<u32>,
    /// Pin to this CPU (several threads).
    cpu: Option<usize>,
    stop: Arc<AtomicBool>,
    live: Arc<LiveStats>,
    /// When any thread last read a frame (CLOCK_MONOTONIC ns).
    activity: Arc<AtomicU64>,
    /// This thread's index in `peers`.
    me: usize,
    peers: Arc<Vec<Peer>>,
}

/// A thread as the others see it: asleep in ppoll or not, and the eventfd
/// in its poll set that wakes it. A thread that reads a frame wakes the
/// sleeping others at once, so that the reply to it (a ping's, an ACK
/// after idle), which comes back on a port another thread reads, finds
/// that thread awake and spinning ([`IDLE_SPIN_NS`]): its wake-up runs
/// alongside the forwarding instead of after it.
struct Peer {
    sleeping: AtomicBool,
    wake: std::os::fd::OwnedFd,
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
    /// Per port: the due times of the frames queued since its last flush.
    due: Vec<Vec<u64>>,
    /// The earliest due time among them all (`u64::MAX`: none queued).
    oldest_due: u64,
    /// Port indices, reused by `flush` to order them.
    order: Vec<usize>,
    /// Flush mid-round when late ([`EAGER_FLUSH_NS`]); off with `offload`,
    /// where a flush closes the runs of segments being joined
    /// ([`crate::gso::Run`]) and a split run costs a host more than a few µs.
    eager: bool,
    /// Per delivered frame: its port's `send()` began / returned − due.
    handed: LatencyHist,
    sent: LatencyHist,
}

impl RealIo {
    /// Hands a frame due at `t_ns` to `host`'s TX ring through `push`: a
    /// full ring is counted (`tx_refused`), the first send error kept for
    /// the run's end.
    fn push_to(
        &mut self,
        host: u32,
        t_ns: u64,
        push: impl FnOnce(&mut TxRing) -> std::io::Result<bool>,
    ) {
        if let Some(p) = self.port_of[host as usize] {
            let r = &mut self.ports[p];
            match push(r) {
                Ok(true) => {
                    self.due[p].push(t_ns);
                    self.oldest_due = self.oldest_due.min(t_ns);
                }
                Ok(false) => self.tx_refused += 1,
                Err(e) => {
                    let name = r.ifname().to_string();
                    self.error
                        .get_or_insert_with(|| format!("sending on '{name}': {e}"));
                }
            }
        }
    }
}

impl Io for RealIo {
    fn deliver(&mut self, host: u32, t_ns: u64, frame: &[u8]) {
        self.push_to(host, t_ns, |r| r.push(frame));
    }
    fn deliver_segment(&mut self, host: u32, t_ns: u64, sp: &Rc<gso::SuperPacket>, i: usize) {
        self.push_to(host, t_ns, |r| r.push_segment(sp, i));
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
    /// Flushes now, mid-round, when a frame queued since the last flush is
    /// already [`EAGER_FLUSH_NS`] past its due time at `wall_ns`.
    fn flush_if_late(&mut self, wall_ns: u64) {
        if self.eager
            && self.oldest_due != u64::MAX
            && wall_ns.saturating_sub(self.oldest_due) >= EAGER_FLUSH_NS
        {
            self.flush();
        }
    }

    /// Sends what each port queued, the port with the earliest due frame
    /// first (a ping's port is not made to wait behind the `send()` of a
    /// port carrying a load, whose receiving stack runs inside it); records
    /// how late its frames were handed over and sent (the clock is read only
    /// around a port's send that carries frames of this round).
    fn flush(&mut self) {
        self.order.clear();
        self.order.extend(0..self.ports.len());
        let due = &self.due;
        self.order
            .sort_by_key(|&p| due[p].iter().copied().min().unwrap_or(u64::MAX));
        for k in 0..self.order.len() {
            let p = self.order[k];
            let (r, due) = (&mut self.ports[p], &mut self.due[p]);
            let began = if due.is_empty() { 0 } else { monotonic_ns() };
            if let Err(e) = r.flush() {
                let name = r.ifname().to_string();
                self.error
                    .get_or_insert_with(|| format!("sending on '{name}': {e}"));
            }
            if !due.is_empty() {
                let done = monotonic_ns();
                for d in due.drain(..) {
                    self.handed.record(began.saturating_sub(d));
                    self.sent.record(done.saturating_sub(d));
                }
            }
        }
        self.oldest_due = u64::MAX;
    }
}

fn run(job: Job, ready: mpsc::Sender<Result<(), EmuError>>) -> Result<Part, EmuError> {
    let Job {
        cfg,
        spec,
        r,
        reads,
        kdirs,
        cpu,
        stop,
        live,
        activity,
        me,
        peers,
    } = job;
    let setup = || -> Result<_, String> {
        sys::enter_netns(&spec.netns)?;
        sys::precise_timers();
        if let Some(c) = cpu {
            // Best effort: unpinned threads still work.
            sys::pin_to_cpu(c);
        }
        let rt = sys::realtime_priority();
        let mut ports = Vec::new();
        let mut port_of = vec![None; r.net.nodes.len()];
        for (i, (n, ifname)) in r.ports.iter().enumerate() {
            port_of[*n as usize] = Some(ports.len());
            if reads.contains(&i) {
                let (rx, tx) = ring::open(ifname, spec.offload)?;
                ports.push((*n, Some(rx), tx));
            } else {
                ports.push((*n, None, ring::open_tx(ifname, spec.offload)?));
            }
        }
        let mut kernel_tx: Vec<Option<PacketSocket>> =
            (0..r.net.dirs.len()).map(|_| None).collect();
        let mut kernel_rx = Vec::new();
        for (d, a, b) in &r.kernel {
            kernel_tx[*d as usize] = Some(PacketSocket::open(a, SOCKET_BUFFER_BYTES)?);
            kernel_rx.push((*d, PacketSocket::open(b, SOCKET_BUFFER_BYTES)?));
        }
        let mtu = ports.iter().map(|(_, _, t)| t.mtu()).max().unwrap_or(1500);
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
    let busy_poll = spec.busy_poll;
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
        due: Vec::new(),
        oldest_due: u64::MAX,
        order: Vec::new(),
        eager: !spec.offload,
        handed: LatencyHist::default(),
        sent: LatencyHist::default(),
    };
    for (n, rx, tx) in ports {
        if let Some(rx) = rx {
            rx_rings.push((n, rx));
        }
        io.ports.push(tx);
        io.due.push(Vec::new());
    }
    let mut fds: Vec<libc::pollfd> = rx_rings
        .iter()
        .map(|(_, r)| r.raw_fd())
        .chain(kernel_rx.iter().map(|(_, s)| s.raw_fd()))
        .chain((peers.len() > 1).then(|| peers[me].wake.as_raw_fd()))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let _ = ready.send(Ok(()));
    // `start` waits for every thread's word: a thread that panicked before
    // sending it must leave the channel with no sender, not this one.
    drop(ready);

    let mut bufs = vec![vec![0u8; max_frame]; BATCH];
    let mut lens = vec![0usize; BATCH];
    let mut stamps = vec![0u64; BATCH];
    let mut csum = vec![false; BATCH];
    let mut rx_ring_drops = 0u64;
    let mut shown = Shown::default();
    let mut wake = LatencyHist::default();
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
            for _ in 0..BATCH {
                let Some(f) = rx.peek() else { break };
                got += 1;
                // Read per frame: the events run before it are recorded
                // as late as they really are, not as of the batch's start.
                let wall = monotonic_ns();
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
                    // A super-packet: copied out of the ring once, on to
                    // the model as descriptors of its wire segments, all
                    // read at `t` (they crossed the veth together).
                    model.counters.super_packets += 1;
                    match gso::SuperPacket::new(f.data, &v.raw, Vec::new()) {
                        Ok(sp) => model.ingress_super(t, *h, sp, &mut io),
                        Err(_) => {
                            model.counters.frames_in += 1;
                            model.counters.unroutable += 1;
                        }
                    }
                    rx.release();
                    io.flush_if_late(wall);
                    continue;
                }
                if f.csum_not_ready && crate::frame::complete_l4_checksum(f.data) {
                    model.counters.checksums_completed += 1;
                }
                model.ingress(t, *h, f.data, &mut io);
                rx.release();
                io.flush_if_late(wall);
            }
            if std::mem::take(&mut rx.losing) {
                rx_ring_drops += rx.drops();
            }
        }
        if got > 0 && peers.len() > 1 {
            activity.fetch_max(monotonic_ns(), Ordering::Relaxed);
            for (j, p) in peers.iter().enumerate() {
                if j != me && p.sleeping.swap(false, Ordering::AcqRel) {
                    sys::eventfd_kick(p.wake.as_raw_fd());
                }
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
                    io.flush_if_late(wall);
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
        publish(&model, &live, &mut shown);
        let now = monotonic_ns();
        if got > 0 {
            activity.fetch_max(now, Ordering::Relaxed);
            continue;
        }
        // One thread alone gets a reply back inside its own `send()` (the
        // receiving host answers in softirq): spinning would only burn CPU.
        let recent = activity
            .load(Ordering::Relaxed)
            .saturating_add(IDLE_SPIN_NS);
        if peers.len() > 1 && now < recent {
            std::hint::spin_loop();
            continue;
        }
        if busy_poll {
            std::hint::spin_loop();
            continue;
        }
        let sleep_ns = match model.next_due() {
            Some(d) if d <= now.saturating_add(SPIN_NS) => {
                std::hint::spin_loop();
                continue;
            }
            Some(d) => (d - SPIN_NS - now).min(MAX_SLEEP_NS),
            None => MAX_SLEEP_NS,
        };
        let mine = &peers[me];
        mine.sleeping.store(true, Ordering::Release);
        let timed_out = sys::wait_readable(&mut fds, sleep_ns);
        mine.sleeping.store(false, Ordering::Release);
        if timed_out && sleep_ns < MAX_SLEEP_NS {
            // Only sleeps that end at an event: how late the wake-up came.
            let late = monotonic_ns().saturating_sub(now + sleep_ns);
            wake.record(late);
        }
        if fds.last().is_some_and(|f| f.revents != 0) && peers.len() > 1 {
            // Kicked: clear the eventfd (the last fd polled).
            sys::eventfd_drain(mine.wake.as_raw_fd());
        }
    }
    for (_, rx) in &rx_rings {
        rx_ring_drops += rx.drops();
    }
    io.flush();
    let tx_super_packets = io.ports.iter().map(|r| r.coalesced).sum();
    let tx_super_segments = io.ports.iter().map(|r| r.coalesced_segments).sum();
    let tx_whole_super_packets = io.ports.iter().map(|r| r.whole).sum();
    publish(&model, &live, &mut shown);
    // Refused at push time, and runs / whole super-packets refused when sent.
    let tx_refused = io.tx_refused + io.ports.iter().map(|r| r.refused).sum::<u64>();
    let mut written = Vec::new();
    for c in io.capture_files.drain(..) {
        let n = c.packets;
        let p = c.path().to_path_buf();
        c.finish().map_err(EmuError)?;
        written.push((p, n));
    }
    let (policies, links, series, counters, lateness) = model.finish();
    Ok(Part {
        res: EmuResult {
            policies,
            links,
            series,
            counters,
            timing: Timing::of(&lateness, &wake, &io.handed, &io.sent),
            realtime,
            tx_refused,
            rx_ring_drops,
            tx_super_packets,
            tx_super_segments,
            tx_whole_super_packets,
            captures: written,
            threads: 1,
        },
        lateness,
        wake,
        handed: io.handed,
        sent: io.sent,
    })
}

/// What one thread has added to the live counters so far.
#[derive(Default)]
struct Shown {
    counters: [u64; 6],
    policy_drops: Vec<u64>,
}

/// Adds this thread's counts since the last call to the live counters
/// (shared by the threads).
fn publish(m: &Model, live: &LiveStats, shown: &mut Shown) {
    let c = &m.counters;
    let now = [
        c.frames_in,
        c.frames_out,
        c.dropped,
        c.lost,
        c.unroutable,
        c.oversize,
    ];
    let slots = [
        &live.frames_in,
        &live.frames_out,
        &live.dropped,
        &live.lost,
        &live.unroutable,
        &live.oversize,
    ];
    for ((a, v), s) in slots.iter().zip(now).zip(shown.counters.iter_mut()) {
        if v != *s {
            a.fetch_add(v - *s, Ordering::Relaxed);
            *s = v;
        }
    }
    shown.policy_drops.resize(live.policy_drops.len(), 0);
    for ((a, v), s) in live
        .policy_drops
        .iter()
        .zip(m.policy_drops())
        .zip(shown.policy_drops.iter_mut())
    {
        if v != *s {
            a.fetch_add(v - *s, Ordering::Relaxed);
            *s = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolved ports/ips of a dumbbell with `senders` and `receivers`,
    /// plus `captures` (link direction, point, file).
    fn resolved(
        senders: u32,
        receivers: u32,
        captures: &[(&str, &str, &str)],
    ) -> (Resolved, Vec<Option<u32>>) {
        let text = format!(
            r#"
[scenario]
duration = "10s"
[topology]
senders = {senders}
receivers = {receivers}
access = {{ rate = "1gbit", delay = "0ms" }}
bottleneck = {{ rate = "1gbit", delay = "1ms" }}
[policy.bottleneck.egress]
shape = {{ kind = "tbf", rate = "10mbit", burst = "10kb", limit = "100000b" }}
[[traffic]]
kind = "udp"
rate = "1mbit"
"#
        );
        let sc = qoslab_scenario::parse(&text, "t.toml").unwrap();
        let net = Net::build(&sc.config.topology).unwrap();
        let flows = qoslab_sim::plan_flows(&sc.config).unwrap();
        let hosts = crate::plan::hosts(&sc.config.topology, &net, &flows);
        let spec = EmuSpec {
            ports: hosts
                .iter()
                .enumerate()
                .map(|(i, h)| (h.clone(), format!("p{i}")))
                .collect(),
            host_ips: hosts
                .iter()
                .enumerate()
                .map(|(i, h)| (h.clone(), format!("10.0.0.{}", i + 1)))
                .collect(),
            captures: captures
                .iter()
                .map(|(l, p, f)| (l.to_string(), p.to_string(), PathBuf::from(f)))
                .collect(),
            ..EmuSpec::default()
        };
        let r = resolve(&sc, &spec).unwrap();
        let cond = conditioner::build(&sc.config, &r.net, &[]).unwrap();
        (r, cond.policy_dir)
    }

    #[test]
    fn two_hosts_run_one_thread_per_direction() {
        let (r, pd) = resolved(1, 1, &[]);
        let p = plan_threads(&r, &pd, 2);
        assert_eq!(p.groups.len(), 2, "{p:?}");
        // Each direction is owned by the thread reading the port it leaves from.
        let fwd = (0..r.net.dirs.len() as u32)
            .find(|&d| r.net.dir_name(d) == "r1->r2")
            .unwrap();
        let back = (0..r.net.dirs.len() as u32)
            .find(|&d| r.net.dir_name(d) == "r2->r1")
            .unwrap();
        assert_ne!(p.owners.dir[fwd as usize], p.owners.dir[back as usize]);
        assert_eq!(p.owners.policy, vec![p.owners.dir[fwd as usize]]);
        // At most the threads asked for.
        assert_eq!(plan_threads(&r, &pd, 1).groups, vec![vec![0, 1]]);
    }

    #[test]
    fn ports_sharing_a_direction_share_a_thread() {
        // Two senders share r1->r2 (and the receiver's replies share r1's
        // access links with the sender-to-sender paths): one group.
        let (r, pd) = resolved(2, 1, &[]);
        let p = plan_threads(&r, &pd, 2);
        assert_eq!(p.groups.len(), 1, "{p:?}");
        assert!(p.owners.dir.iter().all(|&o| o == 0));
    }

    #[test]
    fn a_capture_file_of_both_directions_joins_their_threads() {
        let both = [
            ("r1->r2", "egress", "/tmp/x.pcap"),
            ("r2->r1", "egress", "/tmp/x.pcap"),
        ];
        let (r, pd) = resolved(1, 1, &both);
        assert_eq!(plan_threads(&r, &pd, 2).groups.len(), 1);
        let apart = [
            ("r1->r2", "egress", "/tmp/x.pcap"),
            ("r2->r1", "egress", "/tmp/y.pcap"),
        ];
        let (r, pd) = resolved(1, 1, &apart);
        assert_eq!(plan_threads(&r, &pd, 2).groups.len(), 2);
    }

    #[test]
    fn merged_results_take_each_direction_from_its_owner() {
        let owners = Owners {
            dir: vec![0, 1],
            policy: vec![1],
        };
        let part = |k: u64| {
            let mut lateness = LatencyHist::default();
            lateness.record(1000 * (k + 1));
            let mut series = Series::default();
            for t in [100, 200] {
                series.queue_time_ns.push(t);
                series.queue_policy.push(0);
                series.queue_packets.push(k);
                series.queue_bytes.push(k);
                series.tokens_bytes.push(-1);
            }
            Part {
                res: EmuResult {
                    policies: vec![{
                        let mut p =
                            qoslab_sim::policy::Policy::new("p".into(), "tbf".into(), Vec::new());
                        p.res.packets_dropped = 10 + k;
                        p.res
                    }],
                    links: (0..2)
                        .map(|d| DirResult {
                            packets: 100 * k + d,
                            ..DirResult::default()
                        })
                        .collect(),
                    series,
                    counters: Counters {
                        frames_in: 5,
                        ..Counters::default()
                    },
                    timing: Timing::default(),
                    realtime: true,
                    tx_refused: 0,
                    rx_ring_drops: k,
                    tx_super_packets: 0,
                    tx_super_segments: 0,
                    tx_whole_super_packets: 0,
                    captures: Vec::new(),
                    threads: 1,
                },
                lateness,
                wake: LatencyHist::default(),
                handed: LatencyHist::default(),
                sent: LatencyHist::default(),
            }
        };
        let m = merge(vec![part(0), part(1)], &owners);
        assert_eq!(m.threads, 2);
        assert_eq!(m.links[0].packets, 0);
        assert_eq!(m.links[1].packets, 101);
        assert_eq!(m.policies[0].packets_dropped, 11);
        assert_eq!(m.series.queue_packets, vec![1, 1]);
        assert_eq!(m.series.queue_time_ns, vec![100, 200]);
        assert_eq!(m.counters.frames_in, 10);
        assert_eq!(m.rx_ring_drops, 1);
        assert_eq!(m.timing.count, 2);
    }
}
