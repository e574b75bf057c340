//! Wire segments per second the forwarder's model sustains on one core in
//! the GSO mode (`--offload on`), without the sockets: TSO super-packets
//! (44 segments of 1448 payload bytes, 1514 bytes on the wire) from s0 to
//! d0 across the dumbbell of `benchmarks/emu_linerate.py`'s GSO case
//! (40 Gbit/s links, a 10 Gbit/s tbf on the bottleneck), offered at
//! 9.5 Gbit/s of wire bytes: the model's per-segment work of the real loop
//! (an event per hop, the queue and conditioner calls) minus the copies
//! and system calls.
//!
//! `cargo run --release -p qoslab-emu --example gso_model_bench`

use qoslab_emu::conditioner;
use qoslab_emu::gso::{self, SuperPacket};
use qoslab_emu::model::{Io, Model, Point};
use qoslab_sim::net::Net;
use std::rc::Rc;
use std::time::Instant;

struct Count(u64);

impl Io for Count {
    fn deliver(&mut self, _host: u32, _t_ns: u64, _frame: &[u8]) {
        self.0 += 1;
    }
    fn deliver_segment(&mut self, _host: u32, _t_ns: u64, _sp: &Rc<SuperPacket>, _i: usize) {
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
access = { rate = "40gbit", delay = "0ms" }
bottleneck = { rate = "40gbit", delay = "0ms" }
[policy.bottleneck.egress]
shape = { kind = "tbf", rate = "10gbit", burst = "1250000B", latency = "20ms" }
[[traffic]]
kind = "udp"
rate = "1gbit"
"#;

const MSS: usize = 1448;
const SEGMENTS: usize = 44;

/// A TCP/IPv4 TSO super-packet of `SEGMENTS` x `MSS` payload bytes
/// (20-byte IPv4 and 32-byte TCP headers) and its virtio-net header.
fn super_packet(seq: u32) -> (Vec<u8>, [u8; gso::VNET_HDR_BYTES]) {
    let payload = SEGMENTS * MSS;
    let mut f = vec![0u8; 14 + 20 + 32 + payload];
    f[12] = 0x08;
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + 32 + payload) as u16).to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
    ip[20..22].copy_from_slice(&40000u16.to_be_bytes());
    ip[22..24].copy_from_slice(&5201u16.to_be_bytes());
    ip[24..28].copy_from_slice(&seq.to_be_bytes());
    ip[32] = 8 << 4;
    ip[33] = 0x10;
    let mut vnet = [0u8; gso::VNET_HDR_BYTES];
    vnet[0] = gso::F_NEEDS_CSUM;
    vnet[1] = gso::GSO_TCPV4;
    vnet[4..6].copy_from_slice(&(MSS as u16).to_ne_bytes());
    (f, vnet)
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
    let (f, vnet) = super_packet(1);
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50_000);
    // 44 x 1514 wire bytes at 9.5 Gbit/s: one super-packet every 56 092 ns.
    let gap = (SEGMENTS as u64 * 1514 * 8) * 1_000_000_000 / 9_500_000_000;
    let mut spare = Vec::new();
    let start = Instant::now();
    for k in 0..n {
        let t = k * gap;
        m.advance(t, t, &mut io);
        let sp = SuperPacket::new(&f, &vnet, std::mem::take(&mut spare)).expect("super-packet");
        m.ingress_super(t, s0, sp, &mut io);
        spare = Vec::with_capacity(f.len());
    }
    m.advance(u64::MAX / 2, u64::MAX / 2, &mut io);
    let secs = start.elapsed().as_secs_f64();
    let segs = n * SEGMENTS as u64;
    println!(
        "{n} super-packets = {segs} segments, {} delivered, {secs:.3} s: {:.0} segments/s \
         through the model ({:.0} ns per segment)",
        io.0,
        segs as f64 / secs,
        secs * 1e9 / segs as f64
    );
}
