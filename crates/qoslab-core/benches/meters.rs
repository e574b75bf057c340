//! Per-packet cost of every meter kind: colour 1M packets from a
//! pre-generated in-memory trace (arrival times, sizes), single core.
//! Throughput is reported in elements = packets.
//!
//! The trace offers ~1.5× each meter's committed rate so that every branch
//! (green, yellow, red) is exercised, with sizes 64–1518 bytes and jittered
//! gaps from a fixed-seed generator (identical on every run).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qoslab_core::meter::{AnyMeter, Meter};
use qoslab_core::params::Params;
use qoslab_core::rng::Rng;
use qoslab_core::{Color, Instant};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1_000_000;

/// (time ns, size) pairs at about 30 Mbit/s offered load.
fn trace() -> (Vec<u64>, Vec<u32>) {
    let mut rng = Rng::new(42, 0);
    let mut t = 0u64;
    let mut times = Vec::with_capacity(N);
    let mut sizes = Vec::with_capacity(N);
    for _ in 0..N {
        let size = 64 + (rng.next_u64() % 1455) as u32;
        // mean gap ≈ size·8/30e6 s, jittered ×[0, 2)
        let mean = size as u64 * 8 * 1_000_000_000 / 30_000_000;
        t += rng.next_u64() % (2 * mean);
        times.push(t);
        sizes.push(size);
    }
    (times, sizes)
}

fn meters() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    vec![
        ("police", vec![("cir", "20mbit"), ("bc", "16k")]),
        (
            "linux-police",
            vec![("rate", "20mbit"), ("burst", "16k"), ("mtu", "2k")],
        ),
        (
            "srtcm",
            vec![("cir", "20mbit"), ("cbs", "16k"), ("ebs", "16k")],
        ),
        (
            "trtcm",
            vec![
                ("cir", "20mbit"),
                ("cbs", "16k"),
                ("pir", "25mbit"),
                ("pbs", "16k"),
            ],
        ),
        (
            "tswtcm",
            vec![("ctr", "20mbit"), ("ptr", "25mbit"), ("win_len", "100ms")],
        ),
        (
            "mef",
            vec![
                ("cir", "20mbit"),
                ("cbs", "16k"),
                ("eir", "5mbit"),
                ("ebs", "16k"),
                ("cf", "1"),
            ],
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let (times, sizes) = trace();
    let mut g = c.benchmark_group("meters");
    g.throughput(Throughput::Elements(N as u64));
    g.measurement_time(Duration::from_secs(2));
    g.warm_up_time(Duration::from_millis(500));
    g.sample_size(20);
    for (kind, kv) in meters() {
        let mut p = Params::new(kind, kv);
        let proto = AnyMeter::from_params(kind, &mut p).expect("bench config");
        p.finish().expect("bench config keys");
        g.bench_function(kind, |b| {
            b.iter_batched_ref(
                || proto.clone(),
                |m| {
                    let mut greens = 0u32;
                    for (&t, &size) in times.iter().zip(&sizes) {
                        let c = m.color(Instant::from_ns(t), size, Color::Green);
                        greens += (c == Color::Green) as u32;
                    }
                    black_box(greens)
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
