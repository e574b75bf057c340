//! Reader + analysis throughput on one core:
//! `cargo run --release -p qoslab-capture --example bench -- CAPTURE [REPEAT]`
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
    let t0 = Instant::now();
    for _ in 0..repeat {
        let a = qoslab_capture::analysis::analyze(&bytes, opts).expect("analyze");
        records += a.records;
    }
    let s = t0.elapsed().as_secs_f64();
    println!(
        "{records} packets in {s:.3} s: {:.2} million packets/s ({:.0} MB/s) read and analysed",
        records as f64 / s / 1e6,
        bytes.len() as f64 * repeat as f64 / s / 1e6
    );
}
