//! RFC 2963 rate adaptive shapers: enqueue + dequeue of 1M packets through
//! each of srRAS, trRAS, G-srRAS, G-trRAS, driven as `drive::shape_trace`
//! drives them. Throughput is reported in packets/s (target ≥ 20M/s).
//!
//! The trace is bursty on purpose (bursts of 1–8 back-to-back packets, 40–
//! 1540 B, offered at about 1.2 × CIR) so that the occupancy moves through
//! the thresholds, the EAR's exponential is computed at most arrivals, the
//! green variants' meter model is consulted at every head, and a few
//! packets are tail-dropped.
//!
//! Run: `cargo bench -p qoslab-core --bench ras`
//! (short: `-- --measurement-time 2 --warm-up-time 1`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qoslab_core::drive::shape_trace;
use qoslab_core::rng::Rng;
use qoslab_core::{AnyShaper, Params};
use std::hint::black_box;

const N: usize = 1_000_000;

fn trace() -> (Vec<u64>, Vec<u32>) {
    let mut rng = Rng::new(2963, 0);
    let (mut times, mut sizes) = (Vec::with_capacity(N), Vec::with_capacity(N));
    let mut t = 0u64;
    while times.len() < N {
        let burst = 1 + rng.next_u64() % 8;
        let mut bytes = 0u64;
        for _ in 0..burst {
            if times.len() == N {
                break;
            }
            let size = 40 + (rng.next_u64() % 1501) as u32;
            bytes += size as u64;
            times.push(t);
            sizes.push(size);
        }
        // Mean gap so that the offered load is ~1.2 × 100 Mbit/s CIR
        // (bytes·8 bit / 120e6 bit/s in ns = bytes · 200/3), jittered ±50 %.
        let mean = bytes * 200 / 3;
        t += mean / 2 + rng.next_u64() % (mean + 1);
    }
    (times, sizes)
}

fn shaper(kind: &str) -> AnyShaper {
    let mut kv = vec![
        ("cir", "100mbit"),
        ("mir", "1gbit"),
        ("line_rate", "1gbit"),
        ("buffer", "256kb"),
        ("mir_th", "200kb"),
    ];
    if kind.starts_with("g-") {
        kv.push(("cbs", "16kb"));
    } else {
        kv.push(("cir_th", "16kb"));
    }
    if kind.contains("tr") {
        kv.push(("pir", "200mbit"));
        if kind.starts_with("g-") {
            kv.push(("pbs", "64kb"));
        } else {
            kv.push(("pir_th", "64kb"));
        }
    }
    AnyShaper::from_params(kind, Params::new(kind, kv)).expect("valid bench config")
}

fn bench(c: &mut Criterion) {
    let (times, sizes) = trace();
    let mut dep = vec![0u64; N];
    let mut g = c.benchmark_group("ras");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    for kind in ["srras", "trras", "g-srras", "g-trras"] {
        let proto = shaper(kind);
        g.bench_function(kind, |b| {
            b.iter(|| {
                let mut s = proto.clone();
                let sum = shape_trace(&mut s, black_box(&times), black_box(&sizes), &mut dep)
                    .expect("sorted trace");
                black_box(sum)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
