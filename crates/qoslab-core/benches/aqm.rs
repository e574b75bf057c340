//! AQM throughput: 1M packets through `red`, `wred`, `rio`, `codel`, `pie`
//! via `AnyAqm` (enum dispatch), in two loops:
//! (a) `light`: each arrival is enqueued and immediately dequeued (queue of
//!     one, the AQM's bookkeeping without drops);
//! (b) `overload_2x`: 1000-byte arrivals every 100 µs, one dequeue per two
//!     arrivals, so the queue builds and the AQM drops (drained dequeue
//!     drops included).
//! Reported as offered packets/s (criterion "elem/s").
//!
//! Run: `cargo bench -p qoslab-core --bench aqm`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qoslab_core::aqm::AnyAqm;
use qoslab_core::{Color, Instant, Packet, Params, Shaper};
use std::hint::black_box;
use std::time::Duration;

const N: u64 = 1_000_000;

fn make(kind: &str) -> AnyAqm {
    let pairs: &[(&str, &str)] = match kind {
        "red" => &[("limit", "400000"), ("avpkt", "1000")],
        "wred" | "rio" => &[("preset", "rfc2963")],
        _ => &[], // codel, pie: the Linux defaults
    };
    AnyAqm::from_params(kind, Params::new(kind, pairs.iter().copied())).unwrap()
}

fn pkt(i: u64) -> Packet {
    Packet {
        color: Color::from_u8((i % 3) as u8).unwrap(),
        ..Packet::new(i, 1000)
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("aqm");
    g.throughput(Throughput::Elements(N));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for kind in ["red", "wred", "rio", "codel", "pie"] {
        g.bench_function(format!("{kind}/light"), |b| {
            b.iter(|| {
                let mut a = make(kind);
                let mut sent = 0u64;
                for i in 0..N {
                    let now = Instant::from_ns(i * 10_000);
                    let _ = a.enqueue(now, pkt(i));
                    sent += a.dequeue(now).is_some() as u64;
                }
                black_box(sent)
            })
        });
        g.bench_function(format!("{kind}/overload_2x"), |b| {
            b.iter(|| {
                let mut a = make(kind);
                let (mut sent, mut dropped) = (0u64, 0u64);
                for i in 0..N {
                    let now = Instant::from_ns(i * 100_000);
                    dropped += a.enqueue(now, pkt(i)).is_err() as u64;
                    if i % 2 == 1 {
                        sent += a.dequeue(now).is_some() as u64;
                    }
                    dropped += a.take_dropped().count() as u64;
                }
                assert!(dropped > 0);
                black_box((sent, dropped))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
