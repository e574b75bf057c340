//! Packets per second of every meter and shaper, one core, in-memory traces.
//!
//! Run: `cargo bench -p qoslab-core --bench pps` (prints one line per kind).
//! Meters colour 20 M packets with `AnyMeter::color_trace` (the loop under
//! `drive::meter_trace`, i.e. `qoslab meter` and the NumPy path); shapers run `drive::shape_trace`, i.e. one
//! enqueue and one dequeue per packet plus the `next_ready` polls. Each
//! figure is the best of three runs. Kinds that are not registered are
//! skipped, so the list grows with the conditioners.
//!
//! Timed by the thread's on-CPU nanoseconds (`/proc/thread-self/schedstat`,
//! first field), so a machine shared with other jobs inflates the figures
//! less than wall-clock time would (cache sharing still does); the wall-clock
//! rate is printed beside it. Where the file is missing, both are wall time.
//!
//! `PPS_ONLY=KIND[,KIND…]` runs only those lines (e.g. `PPS_ONLY=tbf,srras`,
//! `htb100-shaping` included); `PPS_SCALE=N` divides every packet count by
//! N (for instruction counts under `valgrind --tool=cachegrind`, whose
//! counts, unlike times, do not depend on the machine's load).
//!
//! `htb100-shaping`: the `sched` bench's `htb100_shaping` case (100 HTB
//! leaves at 50 Mbit/s, ceil 100 Mbit/s, under an 8 Gbit/s root, offered
//! 10 Gbit/s of 1000 B packets), per offered packet: one enqueue plus every
//! dequeue that succeeds and the one that does not.

use qoslab_core::classify::{Classifier, Filters, FlowHash};
use qoslab_core::drive::shape_trace;
use qoslab_core::meter::Policer;
use qoslab_core::params::Params;
use qoslab_core::rng::Rng;
use qoslab_core::sched::{Htb, HtbClassConfig, HtbConfig};
use qoslab_core::shaper::AnyShaper;
use qoslab_core::Instant;
use qoslab_core::{Packet, Rate, Shaper};
use std::hint::black_box;
use std::time::Instant as Wall;

const METERS: &[(&str, &[(&str, &str)])] = &[
    ("police", &[("cir", "100mbit")]),
    (
        "linux-police",
        &[("rate", "100mbit"), ("burst", "64kb"), ("mtu", "1600")],
    ),
    (
        "srtcm",
        &[("cir", "100mbit"), ("cbs", "30000"), ("ebs", "60000")],
    ),
    (
        "trtcm",
        &[
            ("cir", "100mbit"),
            ("cbs", "30000"),
            ("pir", "150mbit"),
            ("pbs", "60000"),
        ],
    ),
    ("tswtcm", &[("ctr", "100mbit"), ("ptr", "150mbit")]),
    (
        "mef",
        &[
            ("cir", "100mbit"),
            ("cbs", "30000"),
            ("eir", "50mbit"),
            ("ebs", "60000"),
            ("cf", "1"),
        ],
    ),
];

const SHAPERS: &[(&str, &[(&str, &str)])] = &[
    (
        "tbf",
        &[("rate", "100mbit"), ("burst", "30000"), ("limit", "100mb")],
    ),
    ("shape", &[("cir", "100mbit"), ("queue-limit", "1000000")]),
    (
        "srras",
        &[
            ("cir", "100mbit"),
            ("mir", "1gbit"),
            ("cir-th", "30000"),
            ("mir-th", "300000"),
            ("buffer", "100mb"),
        ],
    ),
    (
        "trras",
        &[
            ("cir", "100mbit"),
            ("pir", "150mbit"),
            ("mir", "1gbit"),
            ("cir-th", "30000"),
            ("pir-th", "60000"),
            ("mir-th", "300000"),
            ("buffer", "100mb"),
        ],
    ),
];

/// A trace offered at about `load` × 100 Mbit/s, sizes 64..1500 bytes.
fn trace(n: usize, load_num: u64, load_den: u64) -> (Vec<u64>, Vec<u32>) {
    let mut rng = Rng::new(42, 0);
    let (mut times, mut sizes) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut t = 0u64;
    for _ in 0..n {
        let size = 64 + (rng.next_u64() % 1437) as u32;
        // mean gap = size·8/100e6 s · den/num, jittered ×[0, 2)
        let mean_ns = size as u64 * 80 * load_den / load_num;
        t += rng.next_u64() % (2 * mean_ns + 1);
        times.push(t);
        sizes.push(size);
    }
    (times, sizes)
}

/// This thread's time on a CPU so far, in ns (None where unavailable).
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Best of three runs of `f`: (CPU seconds, wall seconds), each the least.
fn best_of_three(mut f: impl FnMut()) -> (f64, f64) {
    let (mut cpu, mut wall) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        let (c0, w0) = (cpu_ns(), Wall::now());
        f();
        let w = w0.elapsed().as_secs_f64();
        let c = match (c0, cpu_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 * 1e-9,
            _ => w,
        };
        cpu = cpu.min(c);
        wall = wall.min(w);
    }
    (cpu, wall)
}

fn rates(n: usize, (cpu, wall): (f64, f64)) -> String {
    format!(
        "{:>12.1} {:>10.1}",
        n as f64 / cpu / 1e6,
        n as f64 / wall / 1e6
    )
}

/// The `sched` bench's `htb100_shaping` tree.
fn htb_shaping() -> Htb {
    let mut classes = vec![HtbClassConfig::new(None, Rate::from_bps(8_000_000_000))];
    for _ in 0..100 {
        classes.push(
            HtbClassConfig::new(Some(0), Rate::from_bps(50_000_000))
                .ceil(Rate::from_bps(100_000_000)),
        );
    }
    let hash = Classifier::FlowHash(FlowHash::new(100, 1).expect("100 buckets"));
    Htb::new(HtbConfig::default(), classes, Filters::new().push(hash, 1)).expect("valid tree")
}

/// Whether `PPS_ONLY` (comma-separated kinds; unset = all) selects `kind`.
fn wanted(kind: &str) -> bool {
    std::env::var("PPS_ONLY").map_or(true, |v| v.split(',').any(|k| k.trim() == kind))
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let scale: usize = std::env::var("PPS_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&s| s > 0)
        .unwrap_or(1);
    println!("{:<14} {:>12} {:>10}  note", "kind", "Mpkt/CPU-s", "Mpkt/s");
    let n = 20_000_000 / scale;
    let (times, sizes) = trace(n, 3, 2);
    let mut out = vec![0u8; n];
    for (kind, params) in METERS.iter().filter(|(k, _)| wanted(k)) {
        let Ok(policer) = Policer::from_params(kind, Params::new(kind, params.iter().copied()))
        else {
            println!("{kind:<14} {:>12}  not registered", "-");
            continue;
        };
        let secs = best_of_three(|| {
            let mut m = policer.meter.clone();
            m.color_trace(&times, &sizes, None, &mut out);
            black_box(&out);
        });
        let green = out.iter().filter(|&&c| c == 0).count() as f64 / n as f64;
        println!(
            "{kind:<14} {}  meter, {:.0}% green",
            rates(n, secs),
            green * 100.0
        );
    }
    let n = 2_000_000 / scale;
    let (times, sizes) = trace(n, 3, 2);
    let mut departures = vec![0u64; n];
    for (kind, params) in SHAPERS.iter().filter(|(k, _)| wanted(k)) {
        let Ok(shaper) = AnyShaper::from_params(kind, Params::new(kind, params.iter().copied()))
        else {
            println!("{kind:<14} {:>12}  not registered", "-");
            continue;
        };
        let mut dropped = 0;
        let secs = best_of_three(|| {
            let mut s = shaper.clone();
            let summary =
                shape_trace(&mut s, &times, &sizes, &mut departures).expect("valid trace");
            dropped = summary.dropped_packets;
            black_box(&departures);
        });
        println!(
            "{kind:<14} {}  shaper enqueue+dequeue, {dropped} dropped",
            rates(n, secs)
        );
    }
    if !wanted("htb100-shaping") {
        return;
    }
    let n = 2_000_000 / scale;
    let pkts: Vec<Packet> = (0..n as u64)
        .map(|i| {
            let mut p = Packet::new(i, 1000);
            p.flow = (i % 997) as u32;
            p
        })
        .collect();
    let mut bytes = 0u64;
    let secs = best_of_three(|| {
        let mut q = htb_shaping();
        bytes = 0;
        for (i, p) in pkts.iter().enumerate() {
            let t = Instant::from_ns(i as u64 * 800);
            while let Some(out) = q.dequeue(t) {
                bytes += out.size_bytes as u64;
            }
            let _ = q.enqueue(t, *p);
        }
        black_box(bytes);
    });
    // Sanity check (ours against the configured root rate): throttled.
    let gbps = bytes as f64 * 8.0 / (n as f64 * 800.0);
    assert!(
        (gbps / 8.0 - 1.0).abs() < 0.01,
        "htb100-shaping: {gbps} Gbit/s"
    );
    println!(
        "{:<14} {}  per offered packet, {gbps:.2} Gbit/s left",
        "htb100-shaping",
        rates(n, secs)
    );
}
