//! Scheduler throughput: enqueue + dequeue of 1M packets through pfifo,
//! PRIO (3 bands, DSCP filter), DRR (4 classes by flow hash), HTB (100 leaf
//! classes under one root, flow-hash filter), Cisco WFQ (256 queues) and
//! SFQ / FQ-CoDel (128 / 1024 flows), one packet in and one out per step after a 64-packet backlog,
//! the clock advancing 80 ns per packet (1000 B at 100 Gbit/s, so no class
//! is ever rate-limited). Reported as packets/s (criterion "elem/s");
//! targets ≥ 10 Mpps for FIFO/PRIO/DRR, ≥ 3 Mpps for HTB with 100 classes.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qoslab_core::classify::{Classifier, Filters, FlowHash};
use qoslab_core::sched::{pfifo, Drr, FqCodel, Htb, HtbClassConfig, HtbConfig, Prio, Sfq, Wfq};
use qoslab_core::{Instant, Packet, Params, Rate, Shaper};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1_000_000;

fn packets() -> Vec<Packet> {
    (0..N as u64)
        .map(|i| {
            let mut p = Packet::new(i, 1000);
            p.flow = (i % 997) as u32;
            p.dscp = if i % 3 == 0 { 46 } else { 0 };
            p
        })
        .collect()
}

fn run(q: &mut dyn Shaper, pkts: &[Packet]) -> u64 {
    let mut sent = 0u64;
    let mut now = 0u64;
    for p in &pkts[..64] {
        let _ = q.enqueue(Instant::from_ns(now), *p);
    }
    for p in &pkts[64..] {
        now += 80;
        let t = Instant::from_ns(now);
        let _ = q.enqueue(t, *p);
        if q.dequeue(t).is_some() {
            sent += 1;
        }
    }
    sent
}

fn hash(n: u32) -> Classifier {
    Classifier::FlowHash(FlowHash::new(n, 1).unwrap())
}

fn make(kind: &str) -> Box<dyn Shaper + Send> {
    match kind {
        "pfifo" => pfifo(100_000),
        "prio" => {
            let f = Filters::new().push(Classifier::parse("dscp ef").unwrap(), 0);
            Box::new(Prio::from_params(&mut Params::new("prio", [("limit", "100000")]), f).unwrap())
        }
        "drr" => {
            let classes = (0..4).map(|_| (pfifo(100_000), None)).collect();
            Box::new(Drr::new(classes, Filters::new().push(hash(4), 0)).unwrap())
        }
        "htb100" => {
            let mut classes = vec![HtbClassConfig::new(None, Rate::from_bps(100_000_000_000))];
            for _ in 0..100 {
                classes.push(
                    HtbClassConfig::new(Some(0), Rate::from_bps(1_000_000_000))
                        .ceil(Rate::from_bps(100_000_000_000)),
                );
            }
            Box::new(
                Htb::new(
                    HtbConfig::default(),
                    classes,
                    Filters::new().push(hash(100), 1),
                )
                .unwrap(),
            )
        }
        "wfq" => Box::new(Wfq::new(64, 256, 100_000).unwrap()),
        "sfq" => {
            Box::new(Sfq::from_params(&mut Params::new("sfq", [("limit", "10000")]), 1).unwrap())
        }
        "fq_codel" => Box::new(
            FqCodel::from_params(&mut Params::new("fq_codel", Vec::<(&str, &str)>::new()), 1)
                .unwrap(),
        ),
        _ => unreachable!(),
    }
}

fn bench(c: &mut Criterion) {
    let pkts = packets();
    let mut g = c.benchmark_group("sched");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for kind in ["pfifo", "prio", "drr", "htb100", "wfq", "sfq", "fq_codel"] {
        g.bench_function(format!("{kind}/enqueue_dequeue"), |b| {
            b.iter(|| {
                let mut q = make(kind);
                let sent = run(q.as_mut(), black_box(&pkts));
                assert!(sent as usize > N * 9 / 10, "{kind}: {sent}");
                black_box(sent)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
