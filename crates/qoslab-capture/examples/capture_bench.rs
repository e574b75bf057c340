//! Reader + analysis throughput on one core:
//! `cargo run --release -p qoslab-capture --example capture_bench -- CAPTURE [REPEAT]`
//! (the capture is decompressed once, outside the timing).
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: bench CAPTURE [REPEAT]");
        std::process::exit(2);
    };
    let repeat: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes = qoslab_capture::reader::decompress(&raw)
        .expect("decompress")
        .into_owned();
    let opts = qoslab_capture::analysis::Options::default();
    let mut records = 0u64;
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    for _ in 0..repeat {
        let a = qoslab_capture::analysis::analyze(&bytes, opts).expect("analyze");
        records += a.records;
    }
    let s = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    println!(
        "{records} packets: {:.2} million packets/s per CPU second ({cpu:.3} s CPU), {:.2} million/s wall ({s:.3} s); {:.0} MB of capture per CPU second",
        records as f64 / cpu / 1e6,
        records as f64 / s / 1e6,
        bytes.len() as f64 * repeat as f64 / cpu / 1e6
    );
}

/// User + system CPU time of this process (Linux `/proc/self/stat`, clock ticks
/// of 1/100 s), so that a machine loaded by other jobs does not count.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
