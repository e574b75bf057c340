//! Engine benchmark (not a test): fixed scenarios, wall time, events/s,
//! events and CPU ns per bottleneck packet, peak RSS and aggregate goodput.
//!
//! `cargo run --release -p qoslab-sim --example bench [case]`: the cases
//! a, b, c (issue 3) and r100m, r1g, r10g (issue 12: whole ns per byte, 10 s).
//!
//! `cargo run --release -p qoslab-sim --example bench -- scaling [--write FILE]`:
//! the scaling table (rate × duration × flows); with `--write` it replaces
//! the table between the `<!-- scaling:begin -->` / `<!-- scaling:end -->`
//! markers of FILE (docs/performance.md), atomically.
//!
//! `cargo run --release -p qoslab-sim --example bench -- events [CASE …]`:
//! events per bottleneck data packet by kind, for the cases above and the
//! scaling table's points (deterministic: any machine gives the same table).
//!
//! `bench -- events grid:1000000000:10:4 read0:1000000000:10:4`: the
//! diagnosis of the rate axis (issue 12). A `read0:` point is the grid
//! point whose receiving application reads at once (`receiver_read_delay`
//! 0), so its receivers ACK every second segment at any rate, as they do
//! below 1 Gbit/s; at 1 Gbit/s that alone takes the cost per bottleneck
//! packet to the 10 Mbit/s row's: the cost follows the ACKs per data
//! packet, not the rate (docs/performance.md).
//!
//! `cargo run --release -p qoslab-sim --example bench -- digest [CASE …]`:
//! one result digest per case (`benchmarks/engine_digest.sh` compares them
//! before and after an engine change).
//!
//! Each run happens in its own child process so that its peak RSS
//! (getrusage `ru_maxrss`) and CPU time are its own.

use qoslab_core::{Duration, Rate};
use qoslab_sim::config::*;
use std::process::Command;
use std::time::Instant as WallClock;

fn lp(bps: u64, delay: Duration, queue: u32) -> LinkParams {
    LinkParams {
        rate: Rate::from_bps(bps),
        delay,
        delay_reverse: None,
        loss_ppm: 0,
        queue_limit_packets: queue,
    }
}

fn kv(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `n` senders and receivers on 1 Gbit/s, 1 ms access links.
fn dumbbell(n: u32, bottleneck: LinkParams, egress: Option<PolicySpec>) -> DumbbellSpec {
    DumbbellSpec {
        senders: n,
        receivers: n,
        access: lp(1_000_000_000, Duration::from_ms(1), 1000),
        sender_delays: vec![],
        bottleneck,
        bottleneck_egress: egress,
        bottleneck_reverse_egress: None,
        ingress_police: None,
        timer: TimerSpec::default(),
    }
}

fn four_cubic(egress: PolicySpec) -> SimConfig {
    // RTT 5 ms: 2 × (1 ms + 0.5 ms + 1 ms) of propagation.
    let d = dumbbell(
        4,
        lp(1_000_000_000, Duration::from_us(500), 1000),
        Some(egress),
    );
    SimConfig {
        name: "bench".into(),
        duration: Duration::from_secs(20),
        seed: 1,
        topology: Topology::Dumbbell(d),
        traffic: vec![TrafficSpec::TcpBulk {
            flows: 4,
            endpoints: Endpoints::default(),
            schedule: Schedule::default(),
            bytes: None,
            tcp: TcpConfig::profile("linux").unwrap(),
            label: String::new(),
        }],
        record: RecordSpec::default(),
    }
}

fn case(name: &str) -> Option<(SimConfig, &'static str)> {
    Some(match name {
        "a" => (
            four_cubic(PolicySpec::Shape(ShaperSpec {
                kind: "tbf".into(),
                // limit 200 packets of 1500 B
                params: kv(&[("rate", "20mbit"), ("burst", "20000"), ("limit", "300000")]),
            })),
            "4 CUBIC flows, 20 Mbit/s TBF (burst 20000 B, limit 200×1500 B), RTT 5 ms, 20 s",
        ),
        "b" => (
            four_cubic(PolicySpec::Police(MeterSpec {
                kind: "police".into(),
                params: kv(&[("cir", "20mbit")]),
            })),
            "4 CUBIC flows, 20 Mbit/s Cisco police (bc 625000 B), RTT 5 ms, 20 s",
        ),
        "c" => {
            let d = dumbbell(100, lp(70_000_000, Duration::from_ms(3), 800), None);
            let mut tcp = TcpConfig::profile("linux").unwrap();
            tcp.receive_window_bytes = 65_535;
            tcp.rcvbuf_autotune = false;
            tcp.window_scaling = false;
            (
                SimConfig {
                    name: "bench-c".into(),
                    duration: Duration::from_secs(102),
                    seed: 1,
                    topology: Topology::Dumbbell(d),
                    traffic: vec![TrafficSpec::TcpBulk {
                        flows: 100,
                        endpoints: Endpoints::default(),
                        schedule: Schedule::default(),
                        bytes: None,
                        tcp,
                        label: String::new(),
                    }],
                    record: RecordSpec::default(),
                },
                "100 CUBIC flows, 70 Mbit/s bottleneck, 800-packet FIFO, RTT 10 ms, 64 KB windows, 102 s",
            )
        }
        _ => return None,
    })
}

/// `flows` CUBIC flows for `secs` s through a `bps` FIFO bottleneck
/// (1000 packets), every link at the bottleneck's rate (their transmitters
/// share its clock: the worst case for same-instant events), RTT 5 ms.
/// Up to 100 sender / receiver pairs (more flows share them: the routing
/// table of 20,000 hosts would pass the engine's 1 GB limit). No series
/// are recorded, so memory is the model's own.
fn grid(bps: u64, secs: u64, flows: u32) -> SimConfig {
    grid_tcp(bps, secs, flows, TcpConfig::profile("linux").unwrap())
}

/// [`grid`] with the TCP configuration `tcp`.
fn grid_tcp(bps: u64, secs: u64, flows: u32, tcp: TcpConfig) -> SimConfig {
    let d = dumbbell(flows.min(100), lp(bps, Duration::from_us(500), 1000), None);
    let d = DumbbellSpec {
        access: lp(bps, Duration::from_ms(1), 1000),
        ..d
    };
    SimConfig {
        name: "bench-grid".into(),
        duration: Duration::from_secs(secs),
        seed: 1,
        topology: Topology::Dumbbell(d),
        traffic: vec![TrafficSpec::TcpBulk {
            flows,
            endpoints: Endpoints::default(),
            schedule: Schedule::default(),
            bytes: None,
            tcp,
            label: String::new(),
        }],
        record: RecordSpec {
            goodput: false,
            ..RecordSpec::default()
        },
    }
}

/// A named case, a grid point `grid:BPS:SECS:FLOWS` (`read0:BPS:SECS:FLOWS`:
/// the same, receivers reading at once), or `idle:N`: the
/// 1-flow 100 Mbit/s grid point for 10 s plus N TCP flows that would start
/// at 20 s, i.e. never. It prints the resident memory while the model runs
/// (the largest seen at the progress calls, before any result is built):
/// that of `idle:N` less that of `idle:1`, over N − 1, is what an idle flow
/// costs (issue 12: ≤ 64 B).
fn lookup(name: &str) -> Option<(SimConfig, String)> {
    if let Some(n) = name.strip_prefix("idle:") {
        let n: u32 = n.parse().ok().filter(|&n| n > 0)?;
        let mut cfg = grid(100_000_000, 10, 1);
        cfg.traffic.push(TrafficSpec::TcpBulk {
            flows: n,
            endpoints: Endpoints::default(),
            schedule: Schedule {
                start: Duration::from_secs(20),
                ..Schedule::default()
            },
            bytes: None,
            tcp: TcpConfig::profile("linux").unwrap(),
            label: String::new(),
        });
        return Some((
            cfg,
            format!("1 CUBIC flow, 100 Mbit/s FIFO, 10 s, plus {n} TCP flows never started"),
        ));
    }
    for (prefix, read0) in [("grid:", false), ("read0:", true)] {
        let Some(spec) = name.strip_prefix(prefix) else {
            continue;
        };
        let v: Vec<u64> = spec.split(':').filter_map(|x| x.parse().ok()).collect();
        let [bps, secs, flows] = v[..] else {
            return None;
        };
        let mut tcp = TcpConfig::profile("linux").unwrap();
        let mut what = format!("{flows} CUBIC flows, {} FIFO, {secs} s", fmt_rate(bps));
        if read0 {
            // Diagnosis only (module doc): not a benchmark case.
            tcp.receiver_read_delay = Duration::from_ns(0);
            what.push_str(", receivers reading at once");
        }
        return Some((grid_tcp(bps, secs, flows as u32, tcp), what));
    }
    let rate = match name {
        "r100m" => Some(100_000_000),
        "r1g" => Some(1_000_000_000),
        "r10g" => Some(10_000_000_000),
        _ => None,
    };
    if let Some(bps) = rate {
        return Some((
            grid(bps, 10, 4),
            format!(
                "4 CUBIC flows, {} FIFO (all links at that rate), RTT 5 ms, 10 s",
                fmt_rate(bps)
            ),
        ));
    }
    case(name).map(|(c, w)| (c, w.to_string()))
}

fn fmt_rate(bps: u64) -> String {
    match bps {
        b if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => {
            format!("{} Gbit/s", b / 1_000_000_000)
        }
        b if b % 1_000_000 == 0 => format!("{} Mbit/s", b / 1_000_000),
        b => format!("{b} bit/s"),
    }
}

/// This process's resident memory now, in MB (0 where unknown).
fn resident_mb() -> f64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |pages| pages * 4096.0 / 1e6)
}

#[repr(C)]
struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    maxrss_kb: i64,
    rest: [i64; 13],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
}

/// (peak RSS in MB, user + system CPU seconds) of this process so far.
fn usage() -> (f64, f64) {
    let mut u = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss_kb: 0,
        rest: [0; 13],
    };
    // SAFETY: getrusage(RUSAGE_SELF = 0) fills the struct, whose layout is
    // Linux's 64-bit `struct rusage` (two timevals, then 14 longs).
    let rc = unsafe { getrusage(0, &mut u) };
    if rc != 0 {
        return (f64::NAN, f64::NAN);
    }
    let secs = |t: [i64; 2]| t[0] as f64 + t[1] as f64 * 1e-6;
    (u.maxrss_kb as f64 / 1024.0, secs(u.utime) + secs(u.stime))
}

/// What one run measured (the child prints it as one `RESULT` line).
struct Measured {
    wall_s: f64,
    cpu_s: f64,
    events: u64,
    stale: u64,
    packets: u64,
    rss_mb: f64,
    goodput_bps: f64,
}

impl Measured {
    fn parse(line: &str) -> Option<Measured> {
        let v: Vec<f64> = line
            .strip_prefix("RESULT ")?
            .split(' ')
            .filter_map(|x| x.parse().ok())
            .collect();
        let [wall_s, cpu_s, events, stale, packets, rss_mb, goodput_bps] = v[..] else {
            return None;
        };
        Some(Measured {
            wall_s,
            cpu_s,
            events: events as u64,
            stale: stale as u64,
            packets: packets as u64,
            rss_mb,
            goodput_bps,
        })
    }
    fn ns_per_packet(&self) -> f64 {
        self.cpu_s * 1e9 / self.packets.max(1) as f64
    }
    fn events_per_packet(&self) -> f64 {
        self.events as f64 / self.packets.max(1) as f64
    }
}

fn run_case(name: &str) {
    let (cfg, what) = lookup(name).expect("known case");
    let cpu0 = usage().1;
    let t0 = WallClock::now();
    let mut live_mb = 0f64;
    let r = qoslab_sim::run(&cfg, &mut |_| {
        live_mb = live_mb.max(resident_mb());
        true
    })
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let wall = t0.elapsed().as_secs_f64();
    if name.starts_with("idle:") {
        println!("IDLE {name} resident while running {live_mb:.3} MB");
    }
    let (rss, cpu1) = usage();
    // The bottleneck carries every flow's data: the busiest direction.
    let packets = r.link_tx_packets.iter().copied().max().unwrap_or(0);
    let m = Measured {
        wall_s: wall,
        cpu_s: cpu1 - cpu0,
        events: r.events,
        stale: r.stale_events,
        packets,
        rss_mb: rss,
        goodput_bps: r.sum_goodput_bps,
    };
    let sim_s = r.duration_ns as f64 / 1e9;
    println!(
        "({name}) {what}\n    wall {wall:.3} s | {:.2} M events ({:.1} M events/s, {:.2} per bottleneck packet, {} stale) | {:.0} ns CPU per bottleneck packet | {:.0} sim s per wall s | peak RSS {:.1} MB | goodput {:.2} Mbit/s (Jain {:.3}, retransmits {})",
        r.events as f64 / 1e6,
        r.events as f64 / wall / 1e6,
        m.events_per_packet(),
        m.stale,
        m.ns_per_packet(),
        sim_s / wall,
        rss,
        r.sum_goodput_bps / 1e6,
        r.jain_fairness,
        r.flows.iter().map(|f| f.retransmits).sum::<u64>(),
    );
    println!(
        "RESULT {} {} {} {} {} {} {}",
        m.wall_s, m.cpu_s, m.events, m.stale, m.packets, m.rss_mb, m.goodput_bps
    );
    // Directions come in pairs (a → b, b → a): the bottleneck's reverse
    // carries the receivers' ACKs.
    let (bn, _) = r
        .link_tx_packets
        .iter()
        .enumerate()
        .max_by_key(|x| x.1)
        .unwrap_or((0, &0));
    let acks = r.link_tx_packets.get(bn ^ 1).copied().unwrap_or(0);
    let kinds: Vec<String> = r
        .events_by_kind
        .named()
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    println!("KINDS acks={acks} {}", kinds.join(" "));
}

/// The events of one run by kind (`KINDS` line of a child), plus the ACKs
/// (packets on the bottleneck's reverse direction).
fn parse_kinds(line: &str) -> Option<Vec<(String, u64)>> {
    line.strip_prefix("KINDS ")?
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Runs `name` in a child process; echoes its report, returns its figures.
fn spawn(me: &std::path::Path, name: &str, echo: bool) -> Option<Measured> {
    spawn_kinds(me, name, echo).map(|x| x.0)
}

/// [`spawn`], with the events by kind.
fn spawn_kinds(
    me: &std::path::Path,
    name: &str,
    echo: bool,
) -> Option<(Measured, Vec<(String, u64)>)> {
    let out = Command::new(me).arg(name).output().expect("spawn a case");
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!(
            "case {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let (mut m, mut kinds) = (None, Vec::new());
    for line in text.lines() {
        if let Some(k) = parse_kinds(line) {
            kinds = k;
            continue;
        }
        match Measured::parse(line) {
            Some(x) => m = Some(x),
            None if echo => println!("{line}"),
            None => {}
        }
    }
    m.map(|m| (m, kinds))
}

/// Events per bottleneck data packet by kind, one row per benchmark case
/// (markdown; event counts are deterministic, so any machine gives the
/// same table).
fn events_table(me: &std::path::Path, cases: &[String]) -> String {
    let mut md = String::new();
    let mut header = false;
    for name in cases {
        eprintln!("running {name}");
        let Some((m, kinds)) = spawn_kinds(me, name, false) else {
            md.push_str(&format!("| {name} | failed |\n"));
            continue;
        };
        // The kinds come in a fixed order, so the rows line up.
        if !header {
            md.push_str("| case | bottleneck packets | ACKs / packet | events / packet |");
            for (k, _) in kinds.iter().skip(1) {
                md.push_str(&format!(" {k} |"));
            }
            md.push_str("\n|---|---|---|---|");
            md.push_str(&"---|".repeat(kinds.len().saturating_sub(1)));
            md.push('\n');
            header = true;
        }
        let per = |n: u64| n as f64 / m.packets.max(1) as f64;
        md.push_str(&format!(
            "| {name} | {} | {:.3} | {:.3} |",
            m.packets,
            per(kinds.first().map_or(0, |x| x.1)),
            m.events_per_packet()
        ));
        for (_, n) in kinds.iter().skip(1) {
            md.push_str(&format!(" {:.3} |", per(*n)));
        }
        md.push('\n');
    }
    md
}

/// (bottleneck bit/s, simulated s, flows).
type GridPoint = (u64, u64, u64);

/// The scaling table's points: each axis varied with the others fixed.
fn scaling_points() -> [(&'static str, Vec<GridPoint>); 3] {
    [
        (
            // At least 10 s and 0.8 M bottleneck packets per row: 10 s at
            // 10 Mbit/s is 8,336 packets in 5-10 ms of CPU, too short for
            // getrusage to time (issue 12); the longer runs are the same
            // scenario in steady state (the duration axis is flat).
            "rate (4 flows, ≥ 10 s and ≥ 0.8 M packets)",
            [10_000_000, 100_000_000, 1_000_000_000, 10_000_000_000]
                .map(|b| (b, (10_000_000_000 / b).max(10), 4))
                .to_vec(),
        ),
        (
            "duration (4 flows, 10 Mbit/s)",
            [1, 10, 100, 1000, 10_000]
                .map(|s| (10_000_000, s, 4))
                .to_vec(),
        ),
        (
            "flows (1 Gbit/s, 10 s)",
            [1, 10, 100, 1000, 10_000]
                .map(|n| (1_000_000_000, 10, n))
                .to_vec(),
        ),
    ]
}

/// The scaling table (markdown), one row per point of [`scaling_points`].
fn scaling(me: &std::path::Path) -> String {
    let (_, load) = (
        0,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default(),
    );
    let load = load.split(' ').next().unwrap_or("?").to_string();
    let mut md = format!(
        "Generated by `cargo run --release -p qoslab-sim --example bench -- scaling --write docs/performance.md` \
         (load average {load} when it started; one run per row, each in its own process).\n\n\
         | axis | rate | simulated | flows | bottleneck packets | ACKs / packet | events / packet | stale | ns CPU / packet | wall s | peak RSS MB | goodput Mbit/s |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for (axis, points) in scaling_points() {
        for (bps, secs, flows) in points {
            let name = format!("grid:{bps}:{secs}:{flows}");
            eprintln!("running {name}");
            let Some((m, kinds)) = spawn_kinds(me, &name, false) else {
                md.push_str(&format!(
                    "| {axis} | {} | {secs} s | {flows} | failed | | | | | | | |\n",
                    fmt_rate(bps)
                ));
                continue;
            };
            // ACKs (the bottleneck's reverse direction) per data packet:
            // what the cost per packet follows (module doc, `read0:`).
            let acks = kinds.first().map_or(0, |x| x.1);
            md.push_str(&format!(
                "| {axis} | {} | {secs} s | {flows} | {} | {:.3} | {:.2} | {} | {:.0} | {:.2} | {:.1} | {:.1} |\n",
                fmt_rate(bps),
                m.packets,
                acks as f64 / m.packets.max(1) as f64,
                m.events_per_packet(),
                m.stale,
                m.ns_per_packet(),
                m.wall_s,
                m.rss_mb,
                m.goodput_bps / 1e6
            ));
        }
    }
    md
}

/// Replaces the text between the scaling markers of `path` (temp file +
/// rename, so a failed run never leaves half a document).
fn write_between_markers(path: &str, table: &str) -> Result<(), String> {
    const BEGIN: &str = "<!-- scaling:begin -->";
    const END: &str = "<!-- scaling:end -->";
    let doc = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
        return Err(format!("{path}: no {BEGIN} … {END} markers"));
    };
    if b < a {
        return Err(format!("{path}: {END} comes before {BEGIN}"));
    }
    let new = format!("{}{BEGIN}\n{table}{}", &doc[..a], &doc[b..]);
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, new).map_err(|e| format!("{tmp}: {e}"))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{path}: {e}"))
}

/// The bench cases and every point of the scaling table.
fn all_cases() -> Vec<String> {
    let mut cases: Vec<String> = ["a", "b", "c", "r100m", "r1g", "r10g"]
        .map(String::from)
        .to_vec();
    for (bps, secs, flows) in scaling_points().into_iter().flat_map(|x| x.1) {
        let g = format!("grid:{bps}:{secs}:{flows}");
        if !cases.contains(&g) {
            cases.push(g);
        }
    }
    cases
}

/// The result digest of case `name` (`SimResult::digest_line`), for
/// `benchmarks/engine_digest.sh`: an engine change meant to keep results
/// bit-identical must leave it unchanged. Runs with exact RTT percentiles
/// and, where the run is short enough to keep them in memory (≤ 10¹⁰ bits
/// through the bottleneck, e.g. 1 Gbit/s for 10 s), every RTT sample and
/// every data segment sent recorded; none of these adds an event.
fn digest(name: &str) -> String {
    let (mut cfg, _) = lookup(name).expect("known case");
    let r = &mut cfg.record;
    r.exact_rtt_percentiles = true;
    let bits = match &cfg.topology {
        Topology::Dumbbell(d) => {
            d.bottleneck.rate.bps() as u128 * cfg.duration.as_ns() as u128 / 1_000_000_000
        }
        Topology::Explicit(_) => u128::MAX,
    };
    if bits <= 10_000_000_000 {
        r.rtt = true;
        r.segments = true;
    }
    let res = qoslab_sim::run(&cfg, &mut |_| true).unwrap_or_else(|e| panic!("{name}: {e}"));
    res.digest_line(name)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let me = std::env::current_exe().expect("own path");
    match args.first().map(String::as_str) {
        Some("events") => {
            // `events [CASE …]`: events per bottleneck packet by kind.
            let mut cases: Vec<String> = args[1..].to_vec();
            if cases.is_empty() {
                cases = all_cases();
            }
            if let Some(bad) = cases.iter().find(|c| lookup(c).is_none()) {
                eprintln!("bench: unknown case {bad}");
                std::process::exit(2);
            }
            println!("{}", events_table(&me, &cases));
        }
        Some("digest") => {
            // `digest [CASE …]`: one result digest per case (see `digest`).
            let cases = if args.len() > 1 {
                args[1..].to_vec()
            } else {
                all_cases()
            };
            if let Some(bad) = cases.iter().find(|c| lookup(c).is_none()) {
                eprintln!("bench: unknown case {bad}");
                std::process::exit(2);
            }
            for name in &cases {
                println!("{}", digest(name));
            }
        }
        Some("scaling") => {
            let table = scaling(&me);
            match args.get(1).map(String::as_str) {
                Some("--write") => {
                    let path = args.get(2).map_or("docs/performance.md", String::as_str);
                    if let Err(e) = write_between_markers(path, &table) {
                        eprintln!("bench: {e}");
                        std::process::exit(2);
                    }
                    println!("{table}\nwritten to {path}");
                }
                _ => println!("{table}"),
            }
        }
        Some(name) => {
            if lookup(name).is_none() {
                eprintln!("bench: unknown case {name} (a, b, c, r100m, r1g, r10g, grid:BPS:SECS:FLOWS, read0:BPS:SECS:FLOWS, idle:N, scaling)");
                std::process::exit(2);
            }
            run_case(name)
        }
        None => {
            println!(
                "qoslab-sim engine benchmark (targets: a ≤ 0.06 s, c ≤ 1.2 s and < 32 MB; \
                 ≤ 6 events per bottleneck packet; r10g ≤ 10 s wall)"
            );
            for name in ["a", "b", "c", "r100m", "r1g", "r10g"] {
                spawn(&me, name, true);
            }
        }
    }
}
