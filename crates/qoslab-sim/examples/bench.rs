//! Engine benchmark (not a test): fixed scenarios, wall time, events/s,
//! simulated seconds per wall second, peak RSS and aggregate goodput.
//!
//! `cargo run --release -p qoslab-sim --example bench [case]`
//!
//! Each case runs in its own child process so that its peak RSS
//! (getrusage `ru_maxrss`) is its own.

use qoslab_core::{Duration, Rate};
use qoslab_sim::config::*;
use std::process::Command;
use std::time::Instant as WallClock;

fn lp(bps: u64, delay: Duration, queue: u32) -> LinkParams {
    LinkParams {
        rate: Rate::from_bps(bps),
        delay,
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

fn peak_rss_mb() -> f64 {
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
        return f64::NAN;
    }
    u.maxrss_kb as f64 / 1024.0
}

fn run_case(name: &str) {
    let (cfg, what) = case(name).expect("known case");
    let t0 = WallClock::now();
    let r = qoslab_sim::run(&cfg, &mut |_| true).unwrap_or_else(|e| panic!("{name}: {e}"));
    let wall = t0.elapsed().as_secs_f64();
    let sim_s = r.duration_ns as f64 / 1e9;
    println!(
        "({name}) {what}\n    wall {wall:.3} s | {:.2} M events ({:.1} M events/s) | {:.0} sim s per wall s | peak RSS {:.1} MB | goodput {:.2} Mbit/s (Jain {:.3}, retransmits {})",
        r.events as f64 / 1e6,
        r.events as f64 / wall / 1e6,
        sim_s / wall,
        peak_rss_mb(),
        r.sum_goodput_bps / 1e6,
        r.jain_fairness,
        r.flows.iter().map(|f| f.retransmits).sum::<u64>(),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(name) = args.first() {
        run_case(name);
        return;
    }
    println!("qoslab-sim engine benchmark (targets: a ≤ 0.06 s, c ≤ 1.2 s and < 32 MB)");
    let me = std::env::current_exe().expect("own path");
    for name in ["a", "b", "c"] {
        let st = Command::new(&me).arg(name).status().expect("spawn a case");
        if !st.success() {
            eprintln!("case {name} failed");
        }
    }
}
