//! Shaper throughput: 1M packets enqueued and dequeued through `tbf` and
//! `shape`, (a) as `drive::shape_trace` over an in-memory trace offered at
//! twice the shaping rate with room for the whole backlog (and at exactly
//! the rate, where no backlog builds), and (b) as a
//! tight enqueue/dequeue loop where the clock advances one packet time per
//! packet (every packet conforms on arrival). Reported as packets/s
//! (criterion "elem/s"); target ≥ 20 M packets/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qoslab_core::drive::shape_trace;
use qoslab_core::{AnyShaper, Instant, Packet, Params, Shaper};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1_000_000;
const SIZE: u32 = 1000;

/// 8 Gbit/s = 1000 bytes per µs: arrivals every 500 ns offer twice that.
fn tbf() -> AnyShaper {
    let p = Params::new(
        "tbf",
        [("rate", "8gbit"), ("burst", "100kb"), ("limit", "1gb")],
    );
    AnyShaper::from_params("tbf", p).unwrap()
}

fn shape() -> AnyShaper {
    let p = Params::new("shape", [("cir", "8gbit"), ("queue-limit", "2000000")]);
    AnyShaper::from_params("shape", p).unwrap()
}

fn bench(c: &mut Criterion) {
    let times: Vec<u64> = (0..N as u64).map(|i| i * 500).collect();
    let times_1x: Vec<u64> = (0..N as u64).map(|i| i * 1_000).collect();
    let sizes = vec![SIZE; N];
    let mut dep = vec![0u64; N];
    let mut g = c.benchmark_group("shapers");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for (name, make) in [("tbf", tbf as fn() -> AnyShaper), ("shape", shape)] {
        g.bench_function(format!("{name}/shape_trace_2x_overload"), |b| {
            b.iter(|| {
                let mut s = make();
                let sum = shape_trace(&mut s, black_box(&times), &sizes, &mut dep).unwrap();
                assert_eq!(sum.sent_packets, N as u64);
                black_box(sum)
            })
        });
        // Offered at exactly the shaping rate: no backlog builds, so this
        // isolates the driver + shaper cost from the deep-queue memory traffic.
        g.bench_function(format!("{name}/shape_trace_1x"), |b| {
            b.iter(|| {
                let mut s = make();
                let sum = shape_trace(&mut s, black_box(&times_1x), &sizes, &mut dep).unwrap();
                assert_eq!(sum.sent_packets, N as u64);
                black_box(sum)
            })
        });
        g.bench_function(format!("{name}/enqueue_dequeue_loop"), |b| {
            b.iter(|| {
                let mut s = make();
                let mut sent = 0u64;
                for i in 0..N as u64 {
                    // One packet time (1 µs at 8 Gbit/s) per packet.
                    let now = Instant::from_ns(i * 1_000);
                    let _ = s.enqueue(now, Packet::new(i, SIZE));
                    while let Some(p) = s.dequeue(now) {
                        sent += black_box(p).size_bytes as u64;
                    }
                }
                black_box(sent)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
