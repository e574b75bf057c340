//! Frames per second the forwarder's model sustains on one core, without
//! the sockets: 1514-byte frames from s0 to d0 across a dumbbell whose
//! bottleneck runs a tbf (the per-frame work of the real loop minus the
//! recvmmsg / sendmmsg system calls).
//!
//! `cargo run --release -p qoslab-emu --example model_bench`

use qoslab_emu::conditioner;
use qoslab_emu::model::{Io, Model, Point};
use qoslab_sim::net::Net;
use std::time::Instant;

struct Count(u64);

impl Io for Count {
    fn deliver(&mut self, _host: u32, _t_ns: u64, _frame: &[u8]) {
        self.0 += 1;
    }
    fn kernel_send(&mut self, _dir: u32, _frame: &[u8]) -> bool {
        true
    }
    fn capture(&mut self, _dir: u32, _point: Point, _t_ns: u64, _frame: &[u8]) {}
}

const SCENARIO: &str = r#"
[scenario]
duration = "100s"
[topology]
senders = 1
receivers = 1
access = { rate = "10gbit", delay = "0ms" }
bottleneck = { rate = "10gbit", delay = "10ms" }
[policy.bottleneck.egress]
shape = { kind = "tbf", rate = "2gbit", burst = "100kb", latency = "10ms" }
[[traffic]]
kind = "udp"
rate = "1gbit"
"#;

fn frame() -> Vec<u8> {
    let mut f = vec![0u8; 1514];
    f[12] = 0x08;
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&1500u16.to_be_bytes());
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
    f
}

fn main() {
    let sc = qoslab_scenario::parse(SCENARIO, "bench.toml").expect("scenario");
    let net = Net::build(&sc.config.topology).expect("net");
    let cond = conditioner::build(&sc.config, &net, &[]).expect("conditioners");
    let s0 = net.node_index("s0").expect("s0");
    let d0 = net.node_index("d0").expect("d0");
    let ips = [(0x0a00_0001, s0), (0x0a00_0002, d0)];
    let mut m = Model::new(&net, cond, &ips, 1514, sc.config.record, 0);
    let mut io = Count(0);
    let f = frame();
    let n = 2_000_000u64;
    // Offered at 1 Gbit/s (one frame every 12 112 ns): under the tbf rate.
    let gap = 12_112u64;
    let start = Instant::now();
    for k in 0..n {
        let t = k * gap;
        m.advance(t, t, &mut io);
        m.ingress(t, s0, &f, &mut io);
    }
    m.advance(u64::MAX / 2, u64::MAX / 2, &mut io);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{n} frames, {} delivered, {:.3} s: {:.0} frames/s through the model",
        io.0,
        secs,
        n as f64 / secs
    );
}
