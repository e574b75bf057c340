//! TCP through the engine: throughput against the closed forms (link rate,
//! awnd/RTT, Mathis et al.), byte conservation, the ISR 4000 shaper case.

use super::*;
use crate::config::*;
use crate::run;
use crate::testutil::*;
use qoslab_core::Duration;

fn tcp_profile(profile: &str, cc: CcKind) -> TcpConfig {
    TcpConfig {
        cc,
        ..TcpConfig::profile(profile).unwrap()
    }
}

fn bulk(flows: u32, tcp: TcpConfig, bytes: Option<u64>) -> TrafficSpec {
    TrafficSpec::TcpBulk {
        flows,
        endpoints: Endpoints::default(),
        schedule: Schedule::default(),
        bytes,
        tcp,
        label: String::new(),
    }
}

fn dumbbell(senders: u32, access: LinkParams, bottleneck: LinkParams) -> DumbbellSpec {
    DumbbellSpec {
        senders,
        receivers: senders,
        access,
        sender_delays: vec![],
        bottleneck,
        bottleneck_egress: None,
        bottleneck_reverse_egress: None,
        ingress_police: None,
        timer: TimerSpec::default(),
    }
}

/// Mean goodput (payload bit/s) of flow `f` over the intervals ending after `from_s`.
fn steady_goodput(r: &SimResult, f: u32, from_s: u64) -> f64 {
    let s = &r.series;
    let iv = 100_000_000u64;
    let (mut bytes, mut n) = (0u64, 0u64);
    for i in 0..s.goodput_time_ns.len() {
        if s.goodput_flow[i] == f && s.goodput_time_ns[i] > from_s * 1_000_000_000 {
            bytes += s.goodput_bytes[i];
            n += 1;
        }
    }
    bytes as f64 * 8.0 / (n as f64 * iv as f64 / 1e9)
}

#[test]
fn one_reno_flow_fills_an_idle_link() {
    let d = dumbbell(
        1,
        lp(1_000_000_000, Duration::from_ms(1)),
        lp(10_000_000, Duration::from_ms(5)),
    );
    // awnd 200 kB > BDP (17.5 kB) + what the 1000-packet queue holds: the
    // link, not the window, limits, and nothing is lost.
    let mut tcp = tcp_profile("linux", CcKind::Reno);
    tcp.receive_window_bytes = 200_000;
    tcp.rcvbuf_autotune = false;
    let c = cfg(Topology::Dumbbell(d), vec![bulk(1, tcp, None)], 20);
    let r = run(&c, &mut |_| true).unwrap();
    assert_eq!(r.flows[0].retransmits, 0);
    // Payload share of the wire: 1448 of 1500 bytes.
    let want = 10e6 * 1448.0 / 1500.0;
    let got = steady_goodput(&r, 0, 5);
    assert!((got / want - 1.0).abs() < 0.02, "{got} vs {want}");
    assert!(r.flows[0].goodput_bps > 0.9 * want);
}

#[test]
fn one_reno_flow_is_held_to_awnd_over_rtt() {
    // 64512 B window, 14 ms of propagation, 100 Mbit/s: window-limited.
    let d = dumbbell(
        1,
        lp(1_000_000_000, Duration::from_ms(1)),
        lp(100_000_000, Duration::from_ms(5)),
    );
    let mut tcp = tcp_profile("windows10", CcKind::Reno);
    tcp.receive_window_bytes = 64_512;
    tcp.rcvbuf_autotune = false;
    let c = cfg(Topology::Dumbbell(d), vec![bulk(1, tcp, None)], 10);
    let r = run(&c, &mut |_| true).unwrap();
    // The RTT the flow sees (ack_rtt, delayed-ACK pairing included).
    let rtt = r.flows[0].rtt.mean_ns as f64 / 1e9;
    assert!(rtt > 0.014 && rtt < 0.0145, "{rtt}");
    let want = 64_512.0 * 8.0 / rtt;
    let got = steady_goodput(&r, 0, 2);
    assert!((got / want - 1.0).abs() < 0.02, "{got} vs {want}");
    assert_eq!(r.flows[0].retransmits, 0);
}

#[test]
fn a_byte_limited_transfer_delivers_exactly_its_bytes_through_loss() {
    let mut bottleneck = lp(20_000_000, Duration::from_ms(10));
    bottleneck.loss_ppm = 10_000; // 1 %
    let d = dumbbell(2, lp(1_000_000_000, Duration::from_ms(1)), bottleneck);
    let c = cfg(
        Topology::Dumbbell(d),
        vec![bulk(2, tcp_profile("linux", CcKind::Reno), Some(3_000_000))],
        30,
    );
    let mut s = Sim::new(&c).unwrap();
    s.run_loop(&mut |_| true).unwrap();
    let n = s.counters;
    assert_eq!(
        n.created,
        n.delivered + n.dropped_policy + n.lost_link + n.dropped_loop + s.packets_live() as u64,
        "{n:?}"
    );
    let r = s.finish();
    for f in &r.flows {
        assert_eq!(f.bytes_delivered, 3_000_000, "{f:?}");
        assert!(f.end_ns < 30_000_000_000);
        assert!(f.retransmits > 0 && f.packets_lost > 0, "{f:?}");
        // all payload crossed at least once: sent ≥ bytes / mss
        assert!(f.packets_sent >= 3_000_000 / 1448);
    }
}

#[test]
fn reno_under_random_loss_follows_mathis() {
    // Mathis, Semke, Mahdavi, Ott (1997): BW = MSS / RTT · C / √p, C ≈ 1.22.
    let p_ppm = 2_000u32;
    let mut total = 0.0;
    let mut rtt_sum = 0.0;
    let seeds = [1u64, 2, 3];
    for &seed in &seeds {
        let mut bottleneck = lp(1_000_000_000, Duration::from_ms(9));
        bottleneck.loss_ppm = p_ppm;
        let d = dumbbell(1, lp(1_000_000_000, Duration::from_ms(1)), bottleneck);
        let mut c = cfg(
            Topology::Dumbbell(d),
            vec![bulk(1, tcp_profile("linux", CcKind::Reno), None)],
            40,
        );
        c.seed = seed;
        let r = run(&c, &mut |_| true).unwrap();
        total += steady_goodput(&r, 0, 5);
        rtt_sum += r.flows[0].rtt.mean_ns as f64 / 1e9;
    }
    let got = total / seeds.len() as f64;
    let rtt = rtt_sum / seeds.len() as f64;
    let p = p_ppm as f64 / 1e6;
    let want = 1448.0 * 8.0 / rtt * 1.22 / p.sqrt();
    eprintln!("mathis: {got} vs {want} (rtt {rtt})");
    assert!(
        (got / want - 1.0).abs() < 0.2,
        "{got} vs Mathis {want} (rtt {rtt})"
    );
}

#[test]
fn isr4000_shape_gives_each_windows_flow_awnd_over_rtt() {
    // The ISR 4000 source's shaper result (python/qoslab/data/reference/
    // cisco-isr4000-20mbit.toml [shape]): 4 × 4.83 Mbit/s.
    let mut d = dumbbell(
        4,
        lp(1_000_000_000, Duration::from_us(1250)),
        lp(1_000_000_000, Duration::from_us(100)),
    );
    d.senders = 1;
    d.receivers = 1;
    d.bottleneck_egress = Some(PolicySpec::Shape(ShaperSpec {
        kind: "shape".into(),
        params: kv(&[("cir", "20mbit"), ("queue-limit", "200")]),
    }));
    let mut c = cfg(
        Topology::Dumbbell(d),
        vec![bulk(4, TcpConfig::profile("windows10").unwrap(), None)],
        20,
    );
    c.record.queue = true;
    let r = run(&c, &mut |_| true).unwrap();
    assert_eq!(r.policies[0].packets_dropped, 0, "{:?}", r.policies[0]);
    let sum: f64 = (0..4).map(|f| steady_goodput(&r, f, 5)).sum();
    let want_sum = 20e6 * 1460.0 / 1500.0;
    assert!((sum / want_sum - 1.0).abs() < 0.02, "{sum}");
    for f in 0..4 {
        let g = steady_goodput(&r, f, 5);
        assert!((g / 4.83e6 - 1.0).abs() < 0.05, "flow {f}: {g}");
        // RTT ≈ awnd·4 / rate: the queue holds all four windows.
        let rtt_ms = r.flows[f as usize].rtt.p50_ns as f64 / 1e6;
        assert!((95.0..115.0).contains(&rtt_ms), "{rtt_ms}");
    }
    eprintln!(
        "isr4000 shape: {:?}",
        r.flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>()
    );
    assert!(r.jain_fairness > 0.999);
}

/// `flows` Linux CUBIC flows from 2 senders through a 10 Mbit/s policer on a
/// 20 Mbit/s bottleneck, for `secs` seconds (the policer drops).
fn policed_cubic(flows: u32, secs: u64) -> SimConfig {
    let mut d = dumbbell(
        2,
        lp(1_000_000_000, Duration::from_ms(1)),
        lp(20_000_000, Duration::from_ms(2)),
    );
    d.bottleneck_egress = Some(PolicySpec::Police(MeterSpec {
        kind: "police".into(),
        params: kv(&[("cir", "10mbit")]),
    }));
    cfg(
        Topology::Dumbbell(d),
        vec![bulk(flows, tcp_profile("linux", CcKind::Cubic), None)],
        secs,
    )
}

#[test]
fn tcp_runs_are_deterministic_and_record_what_is_asked() {
    let mut c = policed_cubic(3, 5);
    c.record = RecordSpec {
        rtt: true,
        cwnd: true,
        segments: true,
        colors: true,
        ..RecordSpec::default()
    };
    let a = run(&c, &mut |_| true).unwrap();
    let b = run(&c, &mut |_| true).unwrap();
    assert_eq!(a, b);
    let s = &a.series;
    assert!(!s.rtt_ns.is_empty() && s.rtt_ns.len() == s.rtt_flow.len());
    assert_eq!(s.cwnd_time_ns.len(), 50 * 3);
    assert!(s.seg_retransmit.iter().any(|&x| x));
    assert!(a
        .flows
        .iter()
        .all(|f| f.protocol == "tcp" && f.retransmits > 0));
    assert!(a.jain_fairness > 0.5 && a.jain_fairness <= 1.0);
    // Every algorithm runs (BBR paces).
    let mut c2 = c.clone();
    if let TrafficSpec::TcpBulk { tcp, .. } = &mut c2.traffic[0] {
        tcp.cc = CcKind::Bbr;
    }
    let r = run(&c2, &mut |_| true).unwrap();
    assert!(r.sum_goodput_bps > 5e6, "{}", r.sum_goodput_bps);
}

#[test]
fn per_interval_retransmits_add_up_to_each_flows_total() {
    let c = policed_cubic(2, 4);
    let r = run(&c, &mut |_| true).unwrap();
    let s = &r.series;
    assert_eq!(s.goodput_retransmits.len(), s.goodput_flow.len());
    for f in &r.flows {
        let per_interval: Vec<u64> = (0..s.goodput_flow.len())
            .filter(|&i| s.goodput_flow[i] == f.id)
            .map(|i| s.goodput_retransmits[i])
            .collect();
        assert!(f.retransmits > 0, "the policer drops: {}", f.retransmits);
        // Spread over the run, not one lump.
        assert!(per_interval.iter().filter(|&&x| x > 0).count() > 1);
        assert_eq!(per_interval.iter().sum::<u64>(), f.retransmits);
    }
}

/// Issue 12: at rates with a whole number of ns per byte (100 Mbit/s:
/// 80 ns, 1 Gbit/s: 8 ns) another event often runs at exactly the instant a
/// transmitter frees up. The `TxDone` pending then must die quietly; when it
/// re-armed itself each coincidence started a chain of events living as long
/// as the link stayed busy (here 44.9 events per bottleneck packet at
/// 100 Mbit/s; the 1 Gbit/s case trips the debug check of `arm_tx_done`).
/// Without chains it costs 6.10–6.15 (measured): per data segment 3
/// `Arrive`s and the bottleneck's `TxDone`, per delayed ACK (one per two
/// segments) 3 `Arrive`s, and the second of each pair of segments a sender
/// emits at once waits for its access link's `TxDone`: 3 + 1 + 1.5 + 0.5
/// = 6, plus TCP timers. One chain alone would add about one event per packet, so
/// the bound 6.5 catches even that. Event counts are deterministic, so this
/// bounds work without timing anything.
/// The linux profile with a fixed window: the autotuned receiver adds one
/// read wake-up per burst of readable data (tcp/rcvbuf.rs), work of its
/// own that the bound below is not about.
fn fixed_window_linux() -> TcpConfig {
    let mut t = TcpConfig::profile("linux").unwrap();
    t.rcvbuf_autotune = false;
    t
}

#[test]
fn events_per_bottleneck_packet_stay_flat_at_whole_ns_per_byte_rates() {
    for (bps, ms) in [(100_000_000u64, 1_000u64), (1_000_000_000, 200)] {
        // Access links as fast as the bottleneck: their transmitters share
        // its clock, so coincidences are frequent.
        let d = dumbbell(
            4,
            lp(bps, Duration::from_ms(1)),
            lp(bps, Duration::from_us(500)),
        );
        let mut c = cfg(
            Topology::Dumbbell(d),
            vec![bulk(4, fixed_window_linux(), None)],
            1,
        );
        c.duration = Duration::from_ms(ms);
        let r = run(&c, &mut |_| true).unwrap();
        let bottleneck = *r.link_tx_packets.iter().max().unwrap();
        assert!(bottleneck > 5_000, "{bps} bit/s: only {bottleneck} packets");
        let per_packet = r.events as f64 / bottleneck as f64;
        assert!(
            per_packet <= 6.5,
            "{bps} bit/s: {per_packet:.2} events per bottleneck packet ({} stale)",
            r.stale_events
        );
        // A stale `TxDone` needs an exact coincidence and never repeats
        // (measured: 116 in 8,286 packets at 100 Mbit/s, 659 in 15,092 at
        // 1 Gbit/s).
        assert!(
            r.stale_events * 10 < bottleneck,
            "{bps} bit/s: {} stale in {bottleneck} packets",
            r.stale_events
        );
    }
}

/// The default RTT summary comes from the bounded histogram: same count,
/// min, max and run as with every sample kept, percentiles within the
/// 0.4 % the histogram promises (crate::hist).
#[test]
fn histogram_rtt_percentiles_match_the_exact_ones_within_the_stated_error() {
    let hist = run(&policed_cubic(3, 5), &mut |_| true).unwrap();
    let mut c = policed_cubic(3, 5);
    c.record.exact_rtt_percentiles = true;
    let exact = run(&c, &mut |_| true).unwrap();
    assert_eq!(hist.events, exact.events);
    for (h, e) in hist.flows.iter().zip(&exact.flows) {
        let (h, e) = (h.rtt, e.rtt);
        assert!(e.exact && !h.exact);
        // Enough samples for the percentiles to mean something.
        assert!(e.samples > 400, "{} samples", e.samples);
        assert_eq!(
            (h.samples, h.min_ns, h.max_ns),
            (e.samples, e.min_ns, e.max_ns)
        );
        assert!((h.mean_ns - e.mean_ns).abs() <= e.mean_ns * 1e-9);
        for (a, b) in [(h.p50_ns, e.p50_ns), (h.p95_ns, e.p95_ns)] {
            assert!(a.abs_diff(b) * 1000 <= b * 4, "{a} vs exact {b}");
        }
    }
}

/// A flow that stops at 2 s of a 6 s run, through a 1 Mbit/s tbf with a
/// deep queue: its queued bytes arrive after `stop`, and its goodput (iperf3's
/// receiver bytes over receiver time) cannot exceed the shaped rate. Counting
/// those bytes over [start, stop] gave 1.49 Mbit/s before.
#[test]
fn goodput_of_a_flow_stopped_early_stays_below_the_shaped_rate() {
    let mut d = dumbbell(
        1,
        lp(100_000_000, Duration::from_ms(1)),
        lp(100_000_000, Duration::from_ms(10)),
    );
    d.bottleneck_egress = Some(PolicySpec::Shape(ShaperSpec {
        kind: "tbf".into(),
        params: kv(&[("rate", "1mbit"), ("burst", "5000"), ("limit", "200000")]),
    }));
    let mut t = bulk(1, tcp_profile("linux", CcKind::Cubic), None);
    if let TrafficSpec::TcpBulk { schedule, .. } = &mut t {
        schedule.stop = Some(Duration::from_secs(2));
    }
    let r = run(&cfg(Topology::Dumbbell(d), vec![t], 6), &mut |_| true).unwrap();
    let f = &r.flows[0];
    assert!(f.end_ns > 2_000_000_000, "end {} ns", f.end_ns);
    assert!(f.goodput_bps <= 1_000_000.0, "goodput {}", f.goodput_bps);
    assert!(f.goodput_bps > 900_000.0, "goodput {}", f.goodput_bps);
}

/// A sender buffer below the BDP bounds what is in flight, so the flow
/// gets sndbuf / RTT whatever the receiver's window (6 MiB here).
#[test]
fn a_small_sndbuf_limits_goodput_to_sndbuf_over_rtt() {
    let d = dumbbell(
        1,
        lp(1_000_000_000, Duration::from_ms(1)),
        lp(100_000_000, Duration::from_ms(24)),
    );
    let mut tcp = tcp_profile("linux", CcKind::Cubic);
    tcp.send_buffer_bytes = Some(64 * 1024);
    let r = run(
        &cfg(Topology::Dumbbell(d), vec![bulk(1, tcp, None)], 4),
        &mut |_| true,
    )
    .unwrap();
    // 65536 B per 50 ms RTT = 10.5 Mbit/s of payload; no loss on a
    // 100 Mbit/s path.
    let g = steady_goodput(&r, 0, 1);
    assert!((9.5e6..10.6e6).contains(&g), "{g}");
    assert_eq!(r.flows[0].retransmits, 0);
}

/// Issue 12: a TCP flow that has not started holds its 48-byte `FlowStat`
/// and a 16-byte connection slot, nothing on the heap: no endpoints, no
/// counters (its label and DSCP are kept once per `[[traffic]]` entry).
/// 100,000 such flows are 6.4 MB. Started flows get their endpoints and
/// counters, and a run whose flows start late gives zero rows for them.
#[test]
fn a_flow_not_started_is_64_bytes_and_allocates_nothing() {
    assert_eq!(std::mem::size_of::<FlowStat>(), 48);
    assert_eq!(std::mem::size_of::<ConnSlot>(), 16);
    let d = dumbbell(
        2,
        lp(1_000_000_000, Duration::from_ms(1)),
        lp(10_000_000, Duration::from_ms(5)),
    );
    let mut late = bulk(3, tcp_profile("linux", CcKind::Cubic), None);
    if let TrafficSpec::TcpBulk { schedule, .. } = &mut late {
        schedule.start = Duration::from_secs(5);
    }
    let now = bulk(1, tcp_profile("linux", CcKind::Cubic), None);
    let c = cfg(Topology::Dumbbell(d), vec![now, late], 1);
    let mut s = Sim::new(&c).unwrap();
    assert!(s.conns.iter().all(|c| c.conn.is_none()));
    assert!(s.flows.iter().all(|f| f.c().packets_sent == 0));
    s.run_loop(&mut |_| true).unwrap();
    assert!(s.conns[0].conn.is_some());
    assert!(s.conns[1..].iter().all(|c| c.conn.is_none()));
    let r = s.finish();
    assert!(r.flows[0].bytes_delivered > 0);
    for f in &r.flows[1..] {
        assert_eq!(
            (f.bytes_delivered, f.packets_sent, f.retransmits),
            (0, 0, 0)
        );
    }
}
