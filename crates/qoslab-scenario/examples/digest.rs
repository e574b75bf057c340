//! Result digests of scenario files, for `benchmarks/engine_digest.sh`
//! (an engine change meant to keep results bit-identical is checked by
//! comparing these before and after it).
//!
//! `cargo run --release -p qoslab-scenario --example digest -- FILE …`
//! prints one line per file ([`qoslab_sim::result::SimResult::digest_line`]).
//! Each file runs as written plus three things recorded that add no
//! event: exact RTT percentiles, every RTT sample and every data segment
//! sent (time, sequence, length, retransmission), so a result that moved by
//! one nanosecond anywhere changes the digest.

use std::process::ExitCode;

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: digest FILE.toml …");
        return ExitCode::from(2);
    }
    for f in &files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{f}: {e}");
                return ExitCode::from(2);
            }
        };
        let mut sc = match qoslab_scenario::parse(&text, f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let r = &mut sc.config.record;
        r.exact_rtt_percentiles = true;
        r.rtt = true;
        r.segments = true;
        match qoslab_sim::run(&sc.config, &mut |_| true) {
            Ok(res) => println!("{}", res.digest_line(f)),
            Err(e) => {
                eprintln!("{f}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
