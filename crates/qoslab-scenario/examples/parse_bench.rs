//! Scenario parsing time against file size (a measurement, not a test).
//!
//! `cargo run --release -p qoslab-scenario --example parse_bench [N…]`
//!
//! Builds a dumbbell scenario with N `[[traffic]]` tables (default 1000
//! and 10000) and prints the best of five parses of each.

use std::time::Instant;

fn scenario(tables: usize) -> String {
    let mut s = String::from(
        "[scenario]\nname = \"parse-bench\"\nduration = \"1s\"\n\n[topology]\nsenders = 4\n\
         receivers = 4\naccess = { rate = \"1gbit\", delay = \"1ms\" }\n\
         bottleneck = { rate = \"100mbit\", delay = \"5ms\" }\n",
    );
    for i in 0..tables {
        s.push_str(&format!(
            "\n[[traffic]]\nkind = \"udp\"\nfrom = \"s{}\"\nto = \"d{}\"\nrate = \"{}kbit\"\n\
             length = 1200\nstart = \"{}ms\"\nlabel = \"u{i}\"\n",
            i % 4,
            i % 4,
            100 + i % 50,
            i % 500
        ));
    }
    s
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("N: a number of [[traffic]] tables"))
        .collect();
    let sizes = if args.is_empty() {
        vec![1000, 10_000]
    } else {
        args
    };
    for n in sizes {
        let text = scenario(n);
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t0 = Instant::now();
            let sc = qoslab_scenario::parse(&text, "bench.toml").expect("valid scenario");
            best = best.min(t0.elapsed().as_secs_f64());
            assert_eq!(sc.config.traffic.len(), n);
        }
        println!(
            "{n} [[traffic]] tables ({} kB): parse {:.2} ms (best of 5)",
            text.len() / 1000,
            best * 1e3
        );
    }
}
