//! The model driven by a fake clock: routing of host pairs, the virtual
//! clock's release schedule under late wake-ups, drops and counters.

use super::*;
use crate::conditioner;
use crate::frame::tests::udp_frame;
use qoslab_core::rng::Rng;

#[derive(Default)]
struct FakeIo {
    delivered: Vec<(u32, u64, usize)>,
    delivered_frames: Vec<Vec<u8>>,
    kernel: Vec<(u32, usize)>,
    kernel_refuse: bool,
    captured: Vec<(u32, Point, u64)>,
    captured_frames: Vec<Vec<u8>>,
    /// Per delivery: the wire segment index when it came as a descriptor
    /// of an unchanged super-packet segment, `None` for a frame.
    delivered_as: Vec<Option<usize>>,
}

impl Io for FakeIo {
    fn deliver(&mut self, host: u32, t_ns: u64, frame: &[u8]) {
        self.delivered.push((host, t_ns, frame.len()));
        self.delivered_frames.push(frame.to_vec());
        self.delivered_as.push(None);
    }
    fn deliver_segment(&mut self, host: u32, t_ns: u64, sp: &Rc<SuperPacket>, index: usize) {
        let mut f = Vec::new();
        sp.write_segment(index, &mut f);
        self.deliver(host, t_ns, &f);
        *self.delivered_as.last_mut().unwrap() = Some(index);
    }
    fn kernel_send(&mut self, dir: u32, frame: &[u8]) -> bool {
        self.kernel.push((dir, frame.len()));
        !self.kernel_refuse
    }
    fn capture(&mut self, dir: u32, point: Point, t_ns: u64, frame: &[u8]) {
        self.captured.push((dir, point, t_ns));
        self.captured_frames.push(frame.to_vec());
    }
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fn scenario(policy: &str) -> (qoslab_scenario::Scenario, Net) {
    let text = format!(
        r#"
[scenario]
duration = "10s"
[topology]
senders = 1
receivers = 1
access = {{ rate = "1gbit", delay = "0ms" }}
bottleneck = {{ rate = "1gbit", delay = "20ms" }}
{policy}
[[traffic]]
kind = "udp"
rate = "1mbit"
[record]
series = ["queue", "tokens", "colors"]
interval = "100ms"
"#
    );
    let sc = qoslab_scenario::parse(&text, "t.toml").unwrap();
    let net = Net::build(&sc.config.topology).unwrap();
    (sc, net)
}

fn model(policy: &str, kernel: &[u32]) -> (Model, Net) {
    let (sc, net) = scenario(policy);
    let cond = conditioner::build(&sc.config, &net, kernel).unwrap();
    let s0 = net.node_index("s0").unwrap();
    let d0 = net.node_index("d0").unwrap();
    let ips = [(u32::from_be_bytes(A), s0), (u32::from_be_bytes(B), d0)];
    let m = Model::new(&net, cond, &ips, 1514, sc.config.record, 0);
    (m, net)
}

const TBF: &str = r#"[policy.bottleneck.egress]
shape = { kind = "tbf", rate = "10mbit", burst = "1514b", limit = "100000b" }"#;

/// Runs every event, each processed `late(k)` ns after it was due (the
/// real loop's wake-up error).
fn drain(m: &mut Model, io: &mut FakeIo, mut late: impl FnMut() -> u64) {
    for _ in 0..100_000 {
        let Some(due) = m.next_due() else { break };
        if due > 5_000_000_000 {
            break;
        }
        let wall = due + late();
        m.advance(wall, wall, io);
    }
}

#[test]
fn tbf_releases_full_frames_exactly_1211_2_us_apart_however_late_the_loop() {
    // 1514 B at 10 Mbit/s = 1 211 200 ns; the 1 Gbit/s links add a fixed
    // 12 112 ns per hop and the bottleneck 20 ms.
    let mut rng = Rng::new(7, 1);
    for max_late in [0u64, 50_000, 3_000_000] {
        let (mut m, net) = model(TBF, &[]);
        let s0 = net.node_index("s0").unwrap();
        let d0 = net.node_index("d0").unwrap();
        let mut io = FakeIo::default();
        let f = udp_frame(A, B, 0, 1514 - 42);
        for _ in 0..20 {
            m.ingress(0, s0, &f, &mut io);
        }
        drain(&mut m, &mut io, || {
            if max_late == 0 {
                0
            } else {
                rng.next_u64() % max_late
            }
        });
        assert_eq!(io.delivered.len(), 20, "late up to {max_late} ns");
        assert!(io
            .delivered
            .iter()
            .all(|&(h, _, len)| h == d0 && len == 1514));
        let t: Vec<u64> = io.delivered.iter().map(|d| d.1).collect();
        for w in t.windows(2) {
            assert_eq!(w[1] - w[0], 1_211_200, "late up to {max_late} ns: {t:?}");
        }
        // The first frame: 3 serialisations at 1 Gbit/s (access, the
        // bottleneck after tbf's full bucket, access) and 20 ms.
        assert_eq!(t[0], 3 * 12_112 + 20_000_000);
        if max_late > 0 {
            assert!(m.lateness.max_ns > 0 && m.lateness.count > 40);
        }
    }
}

#[test]
fn a_size_table_changes_what_the_tbf_counts_not_what_the_wire_carries() {
    // stab overhead 86: tbf counts 1514 + 86 = 1600 B per frame (tc-stab's
    // 4-byte cells round nothing here), so frames leave 1600 B at
    // 10 Mbit/s = 1.28 ms apart; the wire still carries 1514 B frames,
    // serialised in 12 112 ns at 1 Gbit/s (as the simulator, sim.rs).
    let policy = r#"[policy.bottleneck.egress]
shape = { kind = "tbf", rate = "10mbit", burst = "1600b", limit = "100000b" }
stab = { overhead = 86 }"#;
    let (mut m, net) = model(policy, &[]);
    let s0 = net.node_index("s0").unwrap();
    let mut io = FakeIo::default();
    let f = udp_frame(A, B, 0, 1514 - 42);
    for _ in 0..10 {
        m.ingress(0, s0, &f, &mut io);
    }
    drain(&mut m, &mut io, || 0);
    assert_eq!(io.delivered.len(), 10);
    assert!(io.delivered.iter().all(|&(_, _, len)| len == 1514));
    let t: Vec<u64> = io.delivered.iter().map(|d| d.1).collect();
    assert_eq!(t[0], 3 * 12_112 + 20_000_000);
    for w in t.windows(2) {
        assert_eq!(w[1] - w[0], 1_280_000, "{t:?}");
    }
    let (policies, links, ..) = m.finish();
    assert_eq!(
        policies[0].bytes_in,
        10 * 1600,
        "the policy counts the table's size"
    );
    let bottleneck = links.iter().find(|l| l.name == "r1->r2").unwrap();
    assert_eq!(bottleneck.bytes, 10 * 1514, "the wire carries the real one");
}

#[test]
fn host_pairs_follow_the_simulators_route_and_strangers_are_unroutable() {
    let (mut m, net) = model("", &[]);
    let s0 = net.node_index("s0").unwrap();
    let d0 = net.node_index("d0").unwrap();
    for d in 0..net.dirs.len() as u32 {
        m.tap(d, Point::Egress);
    }
    let mut io = FakeIo::default();
    m.ingress(0, s0, &udp_frame(A, B, 0, 100), &mut io);
    m.ingress(0, d0, &udp_frame(B, A, 0, 100), &mut io);
    m.ingress(0, s0, &udp_frame(A, [10, 9, 9, 9], 0, 100), &mut io);
    m.ingress(0, s0, &udp_frame(A, A, 0, 100), &mut io);
    let mut arp = udp_frame(A, B, 0, 100);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    m.ingress(0, s0, &arp, &mut io);
    drain(&mut m, &mut io, || 0);
    assert_eq!(m.counters.unroutable, 3);
    assert_eq!(m.counters.frames_out, 2);
    let hosts: Vec<u32> = io.delivered.iter().map(|d| d.0).collect();
    assert_eq!(hosts, [d0, s0]);
    let mut path: Vec<String> = io.captured.iter().map(|c| net.dir_name(c.0)).collect();
    path.sort();
    let mut want = ["s0->r1", "r1->r2", "r2->d0", "d0->r2", "r2->r1", "r1->s0"];
    want.sort();
    assert_eq!(path, want);
}

#[test]
fn a_full_queue_drops_and_counts_and_oversize_frames_never_enter() {
    let pol = r#"[policy.bottleneck.egress]
fifo = { limit = "3" }"#;
    let (mut m, net) = model(&format!("{pol}\n"), &[]);
    let s0 = net.node_index("s0").unwrap();
    let mut io = FakeIo::default();
    // 1 Gbit/s in, 1 Gbit/s out: a burst of 10 at one instant queues
    // behind the access link first, so slow the bottleneck's view by
    // offering them at the same virtual time after the access link.
    let f = udp_frame(A, B, 0, 1400);
    for _ in 0..10 {
        m.ingress(0, s0, &f, &mut io);
    }
    m.ingress(0, s0, &vec![0u8; 2000], &mut io);
    drain(&mut m, &mut io, || 0);
    assert_eq!(m.counters.oversize, 1);
    assert_eq!(m.counters.frames_in, 11);
    let (policies, dirs, ..) = m.finish();
    let p = &policies[0];
    assert_eq!(p.name, "r1->r2 egress");
    assert_eq!(p.packets_in, 10);
    assert_eq!(p.packets_dropped + io.delivered.len() as u64, 10);
    let r1r2 = dirs.iter().find(|d| d.name == "r1->r2").unwrap();
    assert_eq!(r1r2.dropped, p.packets_dropped);
}

#[test]
fn kernel_direction_hands_frames_to_the_kernel_and_counts_refusals() {
    let (sc, net) = scenario(TBF);
    let d = (0..net.dirs.len() as u32)
        .find(|&d| net.dir_name(d) == "r1->r2")
        .unwrap();
    let (mut m, _) = model(TBF, &[d]);
    let s0 = net.node_index("s0").unwrap();
    let mut io = FakeIo::default();
    let f = udp_frame(A, B, 0, 1000);
    m.ingress(0, s0, &f, &mut io);
    m.advance(500_000, 500_000, &mut io);
    assert_eq!(io.kernel, [(d, f.len())]);
    // Read back from the qdisc: on to the link's transmitter and delay.
    m.kernel_return(1_000_000, d, &f, &mut io);
    io.kernel_refuse = true;
    m.ingress(2_000_000, s0, &f, &mut io);
    m.advance(50_000_000, 50_000_000, &mut io);
    assert_eq!(io.delivered.len(), 1);
    assert_eq!(io.delivered[0].1, 1_000_000 + 2 * 8_336 + 20_000_000);
    let (policies, ..) = m.finish();
    assert_eq!(policies[0].packets_in, 2);
    assert_eq!(policies[0].packets_dropped, 1);
    drop(sc);
}

#[test]
fn series_sample_every_interval_relative_to_t0() {
    let (mut m, net) = model(TBF, &[]);
    let s0 = net.node_index("s0").unwrap();
    let mut io = FakeIo::default();
    m.ingress(0, s0, &udp_frame(A, B, 0, 1000), &mut io);
    m.advance(350_000_000, 350_000_000, &mut io);
    let (_, _, s, ..) = m.finish();
    assert_eq!(s.queue_time_ns, [100_000_000, 200_000_000, 300_000_000]);
    assert_eq!(s.tokens_bytes[2], 1514);
    assert_eq!(s.color_green_bytes[0], 1042);
}

/// A 44-segment TSO super-packet from A to B (MSS 1448, 1514-byte wire
/// segments) as the forwarder reads it, and its wire segments as
/// `tcp_gso_segment` would make them.
fn super_packet(payload: usize) -> (SuperPacket, Vec<Vec<u8>>) {
    let mut sp = crate::gso::tests::tcp_frame(payload, 1000, 0x18);
    sp[14 + 12..14 + 16].copy_from_slice(&A);
    sp[14 + 16..14 + 20].copy_from_slice(&B);
    let mut vnet = [0u8; crate::gso::VNET_HDR_BYTES];
    vnet[0] = crate::gso::F_NEEDS_CSUM;
    vnet[1] = crate::gso::GSO_TCPV4;
    vnet[4..6].copy_from_slice(&1448u16.to_ne_bytes());
    let mut segs = Vec::new();
    crate::gso::segment_tcp4(&sp, 1448, &mut Vec::new(), |s| segs.push(s.clone())).unwrap();
    (SuperPacket::new(&sp, &vnet, Vec::new()).unwrap(), segs)
}

#[test]
fn a_policer_drops_part_of_a_super_packet_segment_by_segment() {
    // `--offload on`: the super-packet enters the model as its 44 wire
    // segments, so the policer charges, passes and drops wire segments: a
    // 20 000-byte bucket passes the first 13 (13 x 1514 = 19 682 B) and
    // drops the rest.
    let pol = r#"[policy.bottleneck.egress]
police = { cir = "4mbit", bc = "20000B" }"#;
    let (mut m, net) = model(&format!("{pol}\n"), &[]);
    let s0 = net.node_index("s0").unwrap();
    let d0 = net.node_index("d0").unwrap();
    let mut io = FakeIo::default();
    let (sp, segs) = super_packet(44 * 1448);
    assert_eq!(sp.segments(), 44);
    m.ingress_super(0, s0, sp, &mut io);
    drain(&mut m, &mut io, || 0);
    assert_eq!(m.counters.frames_in, 44);
    let (policies, links, ..) = m.finish();
    let p = &policies[0];
    assert_eq!(p.packets_in, 44);
    assert_eq!(p.bytes_in, 44 * 1514);
    assert_eq!(p.packets_dropped, 31);
    assert_eq!(p.bytes_dropped, 31 * 1514);
    let bn = links.iter().find(|l| l.name == "r1->r2").unwrap();
    assert_eq!((bn.packets, bn.bytes), (13, 13 * 1514));
    assert_eq!(io.delivered.len(), 13);
    assert!(io
        .delivered
        .iter()
        .all(|&(h, _, len)| h == d0 && len == 1514));
    // The survivors are exactly the super-packet's first 13 wire segments,
    // in order, byte for byte, handed over as descriptors (no bytes made).
    assert_eq!(io.delivered_frames, segs[..13].to_vec());
    assert_eq!(io.delivered_as, (0..13).map(Some).collect::<Vec<_>>());
}

#[test]
fn a_remarked_segment_gets_its_own_bytes_the_others_stay_descriptors() {
    // Exceeding segments are re-marked (DSCP 10), not dropped: those get
    // bytes of their own with the new DSCP and a valid IPv4 checksum; the
    // conforming first 13 still travel as descriptors, and so does the
    // last, 166-byte segment: it fits in the 318 bytes the first 13 left.
    let pol = r#"[policy.bottleneck.egress]
police = { cir = "4mbit", bc = "20000B", exceed = "set-dscp:10" }"#;
    let (mut m, net) = model(&format!("{pol}\n"), &[]);
    let s0 = net.node_index("s0").unwrap();
    let mut io = FakeIo::default();
    let (sp, segs) = super_packet(20 * 1448 + 100);
    m.ingress_super(0, s0, sp, &mut io);
    drain(&mut m, &mut io, || 0);
    assert_eq!(io.delivered.len(), 21);
    for (i, f) in io.delivered_frames.iter().enumerate() {
        if i < 13 || i == 20 {
            assert_eq!(io.delivered_as[i], Some(i));
            assert_eq!(f, &segs[i]);
        } else {
            assert_eq!(io.delivered_as[i], None, "segment {i} was re-marked");
            let mut want = segs[i].clone();
            crate::frame::set_dscp(&mut want, 10);
            assert_eq!(f, &want);
            assert_eq!(f[15] >> 2, 10);
        }
    }
    assert_eq!(io.delivered[20].2, 14 + 52 + 100);
}

#[test]
fn captures_of_a_super_packet_show_its_wire_segments() {
    let (mut m, net) = model(TBF, &[]);
    let s0 = net.node_index("s0").unwrap();
    let bn = (0..net.dirs.len() as u32)
        .find(|&d| net.dir_name(d) == "r1->r2")
        .unwrap();
    m.tap(bn, Point::Ingress);
    m.tap(bn, Point::Egress);
    let mut io = FakeIo::default();
    let (sp, segs) = super_packet(5 * 1448);
    m.ingress_super(0, s0, sp, &mut io);
    drain(&mut m, &mut io, || 0);
    let ingress: Vec<Vec<u8>> = (0..io.captured.len())
        .filter(|&k| io.captured[k].1 == Point::Ingress)
        .map(|k| io.captured_frames[k].clone())
        .collect();
    let egress: Vec<Vec<u8>> = (0..io.captured.len())
        .filter(|&k| io.captured[k].1 == Point::Egress)
        .map(|k| io.captured_frames[k].clone())
        .collect();
    assert_eq!(ingress, segs);
    assert_eq!(egress, segs);
    // The TBF (10 Mbit/s, one-frame bucket) released them one by one,
    // 1 211 200 ns apart, as it would the wire frames.
    let t: Vec<u64> = io
        .captured
        .iter()
        .filter(|c| c.1 == Point::Egress)
        .map(|c| c.2)
        .collect();
    assert!(t.windows(2).all(|w| w[1] - w[0] >= 1_211_200), "{t:?}");
    assert_eq!(io.delivered_frames, segs);
}

/// A TSO super-packet from A to B of `payload` bytes in segments of `mss`
/// (sequence `seq`), and its wire segments as `tcp_gso_segment` makes them.
fn super_packet_of(payload: usize, mss: usize, seq: u32) -> (SuperPacket, Vec<Vec<u8>>) {
    let mut sp = crate::gso::tests::tcp_frame(payload, seq, 0x18);
    sp[14 + 12..14 + 16].copy_from_slice(&A);
    sp[14 + 16..14 + 20].copy_from_slice(&B);
    let mut vnet = [0u8; crate::gso::VNET_HDR_BYTES];
    vnet[0] = crate::gso::F_NEEDS_CSUM;
    vnet[1] = crate::gso::GSO_TCPV4;
    vnet[4..6].copy_from_slice(&(mss as u16).to_ne_bytes());
    let mut segs = Vec::new();
    crate::gso::segment_tcp4(&sp, mss, &mut Vec::new(), |s| segs.push(s.clone())).unwrap();
    (SuperPacket::new(&sp, &vnet, Vec::new()).unwrap(), segs)
}

/// What a run of the model did: every delivery (host, time, bytes), every
/// capture (direction, point, time, bytes), and the policies' and links'
/// summaries.
type Outcome = (
    Vec<(u32, u64, usize)>,
    Vec<Vec<u8>>,
    Vec<(u32, Point, u64)>,
    Vec<Vec<u8>>,
    Vec<PolicyResult>,
    Vec<DirResult>,
    Counters,
);

/// Feeds `stream` (read time, payload, MSS) into a fresh model as the
/// forwarder does (`advance` to each read time first), either as
/// super-packets (descriptors) or as the wire frames they stand for.
fn run_stream(policy: &str, stream: &[(u64, usize, usize)], as_super: bool) -> Outcome {
    let (mut m, net) = model(policy, &[]);
    let s0 = net.node_index("s0").unwrap();
    let bn = (0..net.dirs.len() as u32)
        .find(|&d| net.dir_name(d) == "r1->r2")
        .unwrap();
    m.tap(bn, Point::Egress);
    let mut io = FakeIo::default();
    let mut seq = 1u32;
    for &(t, payload, mss) in stream {
        m.advance(t, t, &mut io);
        let (sp, segs) = super_packet_of(payload, mss, seq);
        seq = seq.wrapping_add(payload as u32);
        if as_super {
            m.ingress_super(t, s0, sp, &mut io);
        } else {
            for s in &segs {
                m.ingress(t, s0, s, &mut io);
            }
        }
    }
    // Long enough to drain the deepest tbf queue (400 kB at 1 Mbit/s is
    // 3.2 s); the series samples keep the event queue from ever emptying.
    let end = stream.last().map_or(0, |s| s.0) + 10_000_000_000;
    m.advance(end, end, &mut io);
    let c = m.counters;
    // Drained: every segment in was delivered, dropped or lost.
    assert_eq!(
        c.frames_in,
        c.frames_out + c.dropped + c.lost + c.unroutable
    );
    let counters = m.counters;
    let (policies, dirs, ..) = m.finish();
    (
        io.delivered,
        io.delivered_frames,
        io.captured,
        io.captured_frames,
        policies,
        dirs,
        counters,
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Differential: a super-packet handed over as descriptors of its wire
    /// segments meets every conditioner exactly as those wire segments
    /// would, read one by one at the same time — the same passes, drops and
    /// re-marks, the same release times to the nanosecond, the same bytes
    /// delivered and captured, the same counters — through a tbf or a
    /// policer of random rate and bucket.
    #[test]
    fn super_packets_meet_the_conditioners_as_their_wire_segments(
        tbf in proptest::prelude::any::<bool>(),
        rate_kbit in 1_000u64..900_000,
        burst in 1_514u64..200_000,
        limit in 1_514u64..400_000,
        remark in proptest::prelude::any::<bool>(),
        stream in proptest::collection::vec((0u64..3_000_000, 1usize..64_000, 536usize..=1448), 1..40),
    ) {
        let policy = if tbf {
            format!(r#"[policy.bottleneck.egress]
shape = {{ kind = "tbf", rate = "{rate_kbit}kbit", burst = "{burst}b", limit = "{}b" }}"#, limit.max(burst))
        } else {
            let exceed = if remark { r#", exceed = "set-dscp:10""# } else { "" };
            format!(r#"[policy.bottleneck.egress]
police = {{ cir = "{rate_kbit}kbit", bc = "{burst}B"{exceed} }}"#)
        };
        let mut t = 0;
        let stream: Vec<(u64, usize, usize)> = stream
            .into_iter()
            .map(|(gap, payload, mss)| {
                t += gap;
                (t, payload, mss)
            })
            .collect();
        let a = run_stream(&policy, &stream, true);
        let b = run_stream(&policy, &stream, false);
        // Every bucket holds a full segment: the first one always gets through.
        proptest::prop_assert!(!a.0.is_empty());
        proptest::prop_assert_eq!(&a.0, &b.0, "deliveries (host, ns, bytes)");
        proptest::prop_assert_eq!(&a.1, &b.1, "delivered bytes");
        proptest::prop_assert_eq!(&a.2, &b.2, "captures");
        proptest::prop_assert_eq!(&a.3, &b.3, "captured bytes");
        proptest::prop_assert_eq!(&a.4, &b.4, "policy results");
        proptest::prop_assert_eq!(&a.5, &b.5, "links");
        let (mut ca, cb) = (a.6, b.6);
        proptest::prop_assert_eq!(ca.super_packets, 0);
        ca.super_packets = 0;
        proptest::prop_assert_eq!(ca, cb);
    }
}
