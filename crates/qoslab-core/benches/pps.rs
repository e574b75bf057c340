//! Packets per second of every meter and shaper, one core, in-memory traces.
//!
//! Run: `cargo bench -p qoslab-core --bench pps` (prints one line per kind).
//! Meters colour 20 M packets in a tight loop (what `qoslab meter` and the
//! NumPy path do per packet); shapers run `drive::shape_trace`, i.e. one
//! enqueue and one dequeue per packet plus the `next_ready` polls. Each
//! figure is the best of three runs. Kinds that are not registered are
//! skipped, so the list grows with the conditioners.

use qoslab_core::drive::shape_trace;
use qoslab_core::meter::{Meter, Policer};
use qoslab_core::params::Params;
use qoslab_core::rng::Rng;
use qoslab_core::shaper::AnyShaper;
use qoslab_core::{Color, Instant};
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

fn best_of_three(mut f: impl FnMut() -> f64) -> f64 {
    (0..3).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    println!("{:<14} {:>12}  note", "kind", "Mpkt/s");
    let n = 20_000_000;
    let (times, sizes) = trace(n, 3, 2);
    let mut out = vec![0u8; n];
    for (kind, params) in METERS {
        let Ok(policer) = Policer::from_params(kind, Params::new(kind, params.iter().copied()))
        else {
            println!("{kind:<14} {:>12}  not registered", "-");
            continue;
        };
        let secs = best_of_three(|| {
            let mut m = policer.meter.clone();
            let start = Wall::now();
            for i in 0..n {
                out[i] = m.color(Instant::from_ns(times[i]), sizes[i], Color::Green) as u8;
            }
            black_box(&out);
            start.elapsed().as_secs_f64()
        });
        let green = out.iter().filter(|&&c| c == 0).count() as f64 / n as f64;
        println!(
            "{kind:<14} {:>12.1}  meter, {:.0}% green",
            n as f64 / secs / 1e6,
            green * 100.0
        );
    }
    let n = 2_000_000;
    let (times, sizes) = trace(n, 3, 2);
    let mut departures = vec![0u64; n];
    for (kind, params) in SHAPERS {
        let Ok(shaper) = AnyShaper::from_params(kind, Params::new(kind, params.iter().copied()))
        else {
            println!("{kind:<14} {:>12}  not registered", "-");
            continue;
        };
        let mut dropped = 0;
        let secs = best_of_three(|| {
            let mut s = shaper.clone();
            let start = Wall::now();
            let summary =
                shape_trace(&mut s, &times, &sizes, &mut departures).expect("valid trace");
            dropped = summary.dropped_packets;
            black_box(&departures);
            start.elapsed().as_secs_f64()
        });
        println!(
            "{kind:<14} {:>12.1}  shaper enqueue+dequeue, {dropped} dropped",
            n as f64 / secs / 1e6
        );
    }
}
