//! Whole-model tests: exact link arithmetic, shaper and policer bounds,
//! timers, conservation, determinism, configuration errors.

use super::*;
use crate::config::*;
use crate::run;
use crate::testutil::*;
use qoslab_core::{Duration, Rate};

fn udp(from: &str, to: &str, bps: u64, payload: u32) -> TrafficSpec {
    TrafficSpec::UdpCbr {
        flows: 1,
        endpoints: ends(from, to),
        schedule: Schedule::default(),
        rate: Rate::from_bps(bps),
        payload_bytes: payload,
        label: String::new(),
    }
}

fn ping(from: &str, to: &str, interval: Duration, payload: u32) -> TrafficSpec {
    TrafficSpec::Ping {
        endpoints: ends(from, to),
        schedule: Schedule::default(),
        interval,
        payload_bytes: payload,
        label: String::new(),
    }
}

fn run_sim(c: &SimConfig) -> Sim {
    let mut s = Sim::new(c).unwrap();
    s.run_loop(&mut |_| true).unwrap();
    s
}

/// a — r — b, the middle link is the interesting one.
fn three(mid: LinkParams, egress: Option<PolicySpec>) -> ExplicitTopology {
    let fast = lp(1_000_000_000, Duration::from_us(10));
    let mut m = link("r", "b", mid);
    m.egress_ab = egress;
    ExplicitTopology {
        nodes: nodes(&["a", "r", "b"]),
        links: vec![link("a", "r", fast), m],
    }
}

#[test]
fn ping_rtt_is_serialization_plus_propagation_exactly() {
    // 97 B payload + 28 = 125 B = 1000 bit: 1 ms at 1 Mbit/s.
    let t = ExplicitTopology {
        nodes: nodes(&["a", "b"]),
        links: vec![link("a", "b", lp(1_000_000, Duration::from_ms(10)))],
    };
    let c = cfg(
        Topology::Explicit(t),
        vec![ping("a", "b", Duration::from_secs(1), 97)],
        3,
    );
    let r = run(&c, &mut |_| true).unwrap();
    assert_eq!(r.series.ping_rtt_ns, [22_000_000, 22_000_000, 22_000_000]);
    assert_eq!(r.series.ping_seq, [0, 1, 2]);
    assert_eq!(r.flows[0].packets_lost, 0);
    // Store and forward over a router: two hops each way.
    let t = three(lp(1_000_000, Duration::from_ms(10)), None);
    let c = cfg(
        Topology::Explicit(t),
        vec![ping("a", "b", Duration::from_secs(1), 97)],
        1,
    );
    let r = run(&c, &mut |_| true).unwrap();
    // 125 B at 1 Gbit/s = 1000 ns, + 10 µs, each way.
    assert_eq!(
        r.series.ping_rtt_ns,
        [2 * (1_000 + 10_000 + 1_000_000 + 10_000_000)]
    );
}

#[test]
fn back_to_back_packets_queue_behind_each_other() {
    // Two pings from two sources at t=0 onto a 1 Mbit/s link: the second
    // waits one serialization time.
    let t = ExplicitTopology {
        nodes: nodes(&["a", "b"]),
        links: vec![link("a", "b", lp(1_000_000, Duration::from_ms(1)))],
    };
    let c = cfg(
        Topology::Explicit(t),
        vec![
            ping("a", "b", Duration::from_secs(10), 97),
            ping("a", "b", Duration::from_secs(10), 97),
        ],
        1,
    );
    let r = run(&c, &mut |_| true).unwrap();
    // The replies of b also queue (both requests arrive 1 ms apart, so no).
    assert_eq!(r.series.ping_rtt_ns, [4_000_000, 5_000_000]);
}

fn window_max_bytes(arr: &[(u64, u32, u32)], window_ns: u64) -> u64 {
    let mut best = 0u64;
    let mut sum = 0u64;
    let mut lo = 0;
    for hi in 0..arr.len() {
        sum += arr[hi].2 as u64;
        while arr[hi].0 - arr[lo].0 > window_ns {
            sum -= arr[lo].2 as u64;
            lo += 1;
        }
        best = best.max(sum);
    }
    best
}

#[test]
fn udp_through_a_tbf_never_beats_rate_plus_burst_over_any_window() {
    let tbf = PolicySpec::Shape(ShaperSpec {
        kind: "tbf".into(),
        params: kv(&[("rate", "10mbit"), ("burst", "20000"), ("limit", "100000")]),
    });
    let t = three(lp(100_000_000, Duration::from_ms(1)), Some(tbf));
    let c = cfg(
        Topology::Explicit(t),
        vec![udp("a", "b", 30_000_000, 1472)],
        3,
    );
    let s = run_sim(&c);
    let arr = &s.deliveries;
    assert!(arr.len() > 1000);
    for w_ms in [0u64, 1, 5, 20, 100, 1000] {
        let w = w_ms * 1_000_000;
        let max = window_max_bytes(arr, w);
        // burst + rate·w, plus the one packet counted at both window edges.
        let bound = 20_000 + 10_000_000 * w / 8_000_000_000 + 1500;
        assert!(max <= bound, "window {w_ms} ms: {max} > {bound}");
    }
    // and it does reach its rate
    let bytes: u64 = arr.iter().map(|a| a.2 as u64).sum();
    let rate = bytes as f64 * 8.0 / 3.0;
    assert!(rate > 9.9e6 && rate < 10.2e6, "{rate}");
    let pol = &s.policies[0].res;
    assert_eq!(pol.kind, "tbf");
    assert!(pol.packets_dropped > 0);
    assert!(pol.max_queue_bytes <= 100_000);
}

#[test]
fn policer_drops_are_counted_and_packets_are_conserved() {
    let police = PolicySpec::Police(MeterSpec {
        kind: "police".into(),
        params: kv(&[("cir", "20mbit"), ("bc", "10000")]),
    });
    let mut mid = lp(100_000_000, Duration::from_ms(2));
    mid.loss_ppm = 1000;
    let t = three(mid, Some(police));
    let c = cfg(
        Topology::Explicit(t),
        vec![
            udp("a", "b", 30_000_000, 1472),
            ping("a", "b", Duration::from_ms(10), 56),
        ],
        2,
    );
    let s = run_sim(&c);
    let n = s.counters;
    assert!(n.dropped_policy > 0 && n.lost_link > 0, "{n:?}");
    assert_eq!(
        n.created,
        n.delivered + n.dropped_policy + n.lost_link + n.dropped_loop + s.packets_live() as u64,
        "{n:?}"
    );
    let p = &s.policies[0].res;
    assert_eq!(p.packets_dropped, n.dropped_policy);
    assert_eq!(p.color_packets.iter().sum::<u64>(), p.packets_in);
    let udp = &s.flows()[0];
    let rate = udp.c().bytes_delivered as f64 * 8.0 / 2.0;
    // 20 Mbit/s of 1500 B packets carry 1472/1500 payload, minus 0.1 % loss.
    assert!(rate > 19.0e6 && rate < 19.7e6, "{rate}");
    let r = s.finish();
    assert_eq!(
        r.policies[0].packets_dropped,
        r.policies[0].color_packets[1]
    );
    assert_eq!(
        r.flows[0].packets_lost,
        r.flows[0].packets_sent - (r.flows[0].bytes_delivered / 1472)
    );
}

/// UDP at 20 Mbit/s through a 10 Mbit/s TBF on a node with the given timer.
fn tbf_rate_with_timer(timer: TimerSpec, burst: &str) -> f64 {
    let tbf = PolicySpec::Shape(ShaperSpec {
        kind: "tbf".into(),
        params: kv(&[("rate", "10mbit"), ("burst", burst), ("limit", "200000")]),
    });
    let mut t = three(lp(100_000_000, Duration::from_ms(1)), Some(tbf));
    t.nodes[1].timer = timer;
    let c = cfg(
        Topology::Explicit(t),
        vec![udp("a", "b", 20_000_000, 972)],
        4,
    );
    let s = run_sim(&c);
    let bytes: u64 = s
        .deliveries
        .iter()
        .filter(|d| d.0 >= 1_000_000_000)
        .map(|d| d.2 as u64)
        .sum();
    bytes as f64 * 8.0 / 3.0
}

#[test]
fn a_jiffies_timer_caps_tbf_below_its_rate_when_burst_is_under_rate_over_hz() {
    // rate / HZ at 10 Mbit/s and HZ = 100 is 12500 B.
    let hr = tbf_rate_with_timer(TimerSpec::default(), "5000");
    let hz_small = tbf_rate_with_timer(TimerSpec::Hz(100), "5000");
    let hz_big = tbf_rate_with_timer(TimerSpec::Hz(100), "15000");
    assert!(hr > 9.9e6, "{hr}");
    // At most one bucket (5000 B, + one packet of overdraft) per 10 ms tick.
    assert!(hz_small < 4.9e6 && hz_small > 3.5e6, "{hz_small}");
    assert!(hz_big > 9.8e6, "{hz_big}");
    // Slack delays wake-ups but a big enough bucket absorbs it.
    let slack = tbf_rate_with_timer(
        TimerSpec::HighRes {
            slack: Duration::from_us(500),
        },
        "15000",
    );
    assert!(slack > 9.9e6, "{slack}");
}

fn busy_dumbbell() -> SimConfig {
    let d = DumbbellSpec {
        senders: 2,
        receivers: 2,
        access: LinkParams {
            loss_ppm: 2000,
            ..lp(100_000_000, Duration::from_ms(1))
        },
        sender_delays: vec![Duration::from_ms(3)],
        bottleneck: lp(20_000_000, Duration::from_ms(5)),
        bottleneck_egress: Some(PolicySpec::Shape(ShaperSpec {
            kind: "shape".into(),
            params: kv(&[("cir", "10mbit")]),
        })),
        bottleneck_reverse_egress: None,
        ingress_police: Some(MeterSpec {
            kind: "srtcm".into(),
            params: kv(&[("cir", "8mbit"), ("cbs", "10000"), ("ebs", "10000")]),
        }),
        timer: TimerSpec::default(),
    };
    let mut c = cfg(
        Topology::Dumbbell(d),
        vec![
            TrafficSpec::OnOff {
                flows: 3,
                endpoints: Endpoints::default(),
                schedule: Schedule {
                    start: Duration::ZERO,
                    stagger: Duration::from_ms(100),
                    stop: Some(Duration::from_secs(2)),
                },
                rate: Rate::from_bps(6_000_000),
                payload_bytes: 1000,
                on: Duration::from_ms(50),
                off: Duration::from_ms(50),
                exponential: true,
                label: String::new(),
            },
            TrafficSpec::Ping {
                endpoints: Endpoints::default(),
                schedule: Schedule::default(),
                interval: Duration::from_ms(20),
                payload_bytes: 56,
                label: "probe".into(),
            },
        ],
        3,
    );
    c.record = RecordSpec {
        queue: true,
        tokens: true,
        colors: true,
        ..RecordSpec::default()
    };
    c
}

#[test]
fn two_runs_of_the_same_config_are_identical_and_seeds_matter() {
    let c = busy_dumbbell();
    let a = run(&c, &mut |_| true).unwrap();
    let b = run(&c, &mut |_| true).unwrap();
    assert_eq!(a, b);
    assert!(a.series.color_yellow_bytes.iter().sum::<u64>() > 0);
    assert!(a.series.tokens_bytes.iter().any(|&t| t > 0));
    assert_eq!(a.series.goodput_time_ns.len(), 30 * 4);
    assert_eq!(a.flows.len(), 4);
    assert_eq!(
        (a.flows[1].from.as_str(), a.flows[1].to.as_str()),
        ("s1", "d1")
    );
    assert_eq!(
        (a.flows[2].from.as_str(), a.flows[2].to.as_str()),
        ("s0", "d0")
    );
    assert_eq!(a.flows[2].start_ns, 200_000_000);
    // Goodput time runs to the last byte received, after the 2 s stop
    // (the shaper's queue drains), never past the run.
    assert!((2_000_000_000..=3_000_000_000).contains(&a.flows[0].end_ns));
    let names: Vec<&str> = a.policies.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["r1 ingress", "r1->r2 egress"]);
    let mut c2 = c.clone();
    c2.seed = 2;
    let d = run(&c2, &mut |_| true).unwrap();
    assert_ne!(a.flows[0].bytes_delivered, d.flows[0].bytes_delivered);
}

#[test]
fn the_tuple_table_gives_each_kind_its_protocol_and_ports() {
    // Reference: the 5-tuple rules as stated in `Hot::core`'s comment.
    for kind in [
        Kind::Udp,
        Kind::PingRequest,
        Kind::PingReply,
        Kind::TcpToReceiver,
        Kind::TcpToSender,
        Kind::FetchRequest,
    ] {
        for flow in [0u32, 1, 77, 55_535, 65_535, 65_536, u32::MAX] {
            let fp = 10_000u16.wrapping_add(flow as u16);
            let want = match kind {
                Kind::Udp => (17, fp, 5201),
                Kind::PingRequest | Kind::PingReply => (1, 0, 0),
                Kind::TcpToReceiver => (6, fp, 5201),
                Kind::TcpToSender | Kind::FetchRequest => (6, 5201, fp),
            };
            let h = Hot {
                src: 3,
                dst: 9,
                flow,
                kind,
                hops: 0,
                dscp: 0,
                color: Color::Green,
                size_bytes: 100,
                payload_bytes: 60,
                sent_ns: 0,
                seq: 0,
            };
            let t = h.core(5).tuple;
            assert_eq!(
                (t.protocol, t.src_port, t.dst_port),
                want,
                "{kind:?} {flow}"
            );
            assert_eq!((t.src_addr, t.dst_addr), (0x0a00_0004, 0x0a00_000a));
        }
    }
}

#[test]
fn the_result_digest_sees_every_result_field_and_no_event_count() {
    // `benchmarks/engine_digest.sh` relies on this: identical results give
    // identical digests whatever the event counts, and a change of one
    // byte, one series entry or one float bit gives another digest.
    let c = busy_dumbbell();
    let a = run(&c, &mut |_| true).unwrap();
    let mut b = a.clone();
    b.events += 1000;
    b.stale_events += 1;
    b.events_by_kind.arrive += 1;
    assert_eq!(a.digest(), b.digest());
    assert!(a
        .digest_line("x")
        .starts_with(&format!("x digest={:016x} ", a.digest())));
    let mut changed = Vec::new();
    let mut x = a.clone();
    x.flows[0].bytes_delivered += 1;
    changed.push(x);
    let mut x = a.clone();
    x.flows[3].rtt.mean_ns = f64::from_bits(x.flows[3].rtt.mean_ns.to_bits() + 1);
    changed.push(x);
    let mut x = a.clone();
    *x.series.queue_packets.last_mut().unwrap() += 1;
    changed.push(x);
    let mut x = a.clone();
    x.policies[1].packets_dropped += 1;
    changed.push(x);
    let mut x = a.clone();
    x.link_tx_packets[0] += 1;
    changed.push(x);
    for (i, x) in changed.iter().enumerate() {
        assert_ne!(a.digest(), x.digest(), "change {i} not seen");
    }
    let mut c2 = c.clone();
    c2.seed = 2;
    assert_ne!(a.digest(), run(&c2, &mut |_| true).unwrap().digest());
}

#[test]
fn progress_is_reported_and_can_cancel() {
    let c = busy_dumbbell();
    let mut calls = 0;
    let r = run(&c, &mut |p| {
        calls += 1;
        assert!(p.sim_time_ns <= p.duration_ns);
        true
    })
    .unwrap();
    assert!(calls >= 1 && r.events > 0);
    assert_eq!(run(&c, &mut |_| false), Err(SimError::Cancelled));
}

fn err_path(c: &SimConfig) -> String {
    match Sim::new(c) {
        Err(SimError::Config { path, .. }) => path,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted a bad config"),
    }
}

#[test]
fn bad_configs_are_errors_with_paths_never_panics() {
    let base = busy_dumbbell();
    let mut c = base.clone();
    c.traffic[1] = ping("s0", "nowhere", Duration::from_ms(10), 56);
    assert_eq!(err_path(&c), "traffic[1].to");
    let mut c = base.clone();
    if let Topology::Dumbbell(d) = &mut c.topology {
        d.bottleneck_egress = Some(PolicySpec::Shape(ShaperSpec {
            kind: "tbf".into(),
            params: kv(&[("rate", "10mbit"), ("burst", "1x")]),
        }));
    }
    assert_eq!(err_path(&c), "bottleneck.egress.burst");
    let mut c = base.clone();
    if let Topology::Dumbbell(d) = &mut c.topology {
        d.bottleneck.rate = Rate::from_bps(0);
    }
    assert_eq!(err_path(&c), "topology.bottleneck.rate");
    let mut c = base.clone();
    c.duration = Duration::ZERO;
    assert_eq!(err_path(&c), "duration");
    let mut c = base.clone();
    c.traffic[1] = ping("s0", "s0", Duration::from_ms(10), 56);
    assert_eq!(err_path(&c), "traffic[1].to");
    let mut c = base.clone();
    c.traffic[1] = ping("s0", "d0", Duration::ZERO, 56);
    assert_eq!(err_path(&c), "traffic[1].interval");
    // unroutable: an island node
    let mut t = three(lp(1_000_000, Duration::from_ms(1)), None);
    t.nodes.push(NodeSpec {
        name: "island".into(),
        timer: TimerSpec::default(),
        routes: vec![],
    });
    let c = cfg(
        Topology::Explicit(t),
        vec![ping("a", "island", Duration::from_ms(1), 1)],
        1,
    );
    assert_eq!(err_path(&c), "traffic[0]");
}

/// A late node timer costs a one-packet tbf rate (every wake-up late), is
/// seeded (same run twice), and the exact default is unchanged by it.
#[test]
fn a_late_timer_slows_a_small_burst_tbf_and_is_deterministic() {
    let mk = |timer: TimerSpec| {
        let d = DumbbellSpec {
            senders: 1,
            receivers: 1,
            access: lp(1_000_000_000, Duration::from_ms(1)),
            sender_delays: vec![],
            bottleneck: lp(1_000_000_000, Duration::from_ms(1)),
            bottleneck_egress: Some(PolicySpec::Shape(ShaperSpec {
                kind: "tbf".into(),
                params: kv(&[("rate", "100mbit"), ("burst", "1540"), ("limit", "100000")]),
            })),
            bottleneck_reverse_egress: None,
            ingress_police: None,
            timer,
        };
        cfg(
            Topology::Dumbbell(d),
            vec![TrafficSpec::UdpCbr {
                flows: 1,
                endpoints: Endpoints::default(),
                schedule: Schedule::default(),
                rate: Rate::from_bps(150_000_000),
                payload_bytes: 1472,
                label: String::new(),
            }],
            1,
        )
    };
    let exact = run(&mk(TimerSpec::default()), &mut |_| true).unwrap();
    let late = TimerSpec::HighResLate {
        mean: Duration::from_us(20),
        max: Duration::from_ms(2),
    };
    let a = run(&mk(late), &mut |_| true).unwrap();
    let b = run(&mk(late), &mut |_| true).unwrap();
    assert_eq!(a, b);
    let (e, l) = (exact.flows[0].goodput_bps, a.flows[0].goodput_bps);
    // Exact: the tbf's rate. Late by ~20 µs per 123 µs packet: ~15 % less.
    assert!(e > 95e6, "exact {e}");
    assert!(l < 0.92 * e && l > 0.70 * e, "late {l} vs exact {e}");
}

/// A TCP dumbbell with every link at a whole number of ns per byte (so
/// transmissions end at the very ns other events happen), the bottleneck's
/// egress `egress`, and everything recorded that shows a queue.
fn tcp_ties(egress: Option<PolicySpec>, timer: TimerSpec) -> SimConfig {
    let d = DumbbellSpec {
        senders: 3,
        receivers: 3,
        access: lp(1_000_000_000, Duration::from_us(200)),
        sender_delays: vec![Duration::from_us(100), Duration::from_us(700)],
        bottleneck: LinkParams {
            queue_limit_packets: 30,
            ..lp(100_000_000, Duration::from_ms(2))
        },
        bottleneck_egress: egress,
        bottleneck_reverse_egress: None,
        ingress_police: None,
        timer,
    };
    let tcp = crate::config::TcpConfig::profile("linux").unwrap();
    let mut c = cfg(
        Topology::Dumbbell(d),
        vec![
            TrafficSpec::TcpBulk {
                flows: 4,
                endpoints: Endpoints::default(),
                schedule: Schedule {
                    start: Duration::ZERO,
                    stagger: Duration::from_ms(7),
                    stop: None,
                },
                bytes: None,
                tcp,
                label: String::new(),
            },
            udp("s0", "d1", 3_000_000, 1000),
            ping("s2", "d2", Duration::from_ms(3), 56),
        ],
        2,
    );
    c.record = RecordSpec {
        interval: Duration::from_us(500),
        goodput: true,
        rtt: true,
        queue: true,
        tokens: true,
        segments: true,
        exact_rtt_percentiles: true,
        ..RecordSpec::default()
    };
    c
}

#[test]
fn computed_departures_and_folded_wakes_give_the_run_a_txdone_per_packet_gave() {
    // The whole result (every flow, policy, queue sample, segment, RTT
    // sample; `SimResult::digest`) of the engine as it is against the
    // same engine with a `TxDone` per packet and no folded TBF wake-ups,
    // under the same order at one ns: identical, events apart.
    let tbf = |burst: &str| {
        Some(PolicySpec::Shape(ShaperSpec {
            kind: "tbf".into(),
            params: kv(&[("rate", "40mbit"), ("burst", burst), ("limit", "60000")]),
        }))
    };
    let cases = [
        ("device fifo", tcp_ties(None, TimerSpec::default())),
        (
            "pfifo 12",
            tcp_ties(
                Some(PolicySpec::Fifo(qoslab_policy::spec::FifoSpec {
                    limit: qoslab_policy::spec::FifoLimit::Packets(12),
                    head_drop: false,
                })),
                TimerSpec::default(),
            ),
        ),
        (
            "bfifo 20000",
            tcp_ties(
                Some(PolicySpec::Fifo(qoslab_policy::spec::FifoSpec {
                    limit: qoslab_policy::spec::FifoLimit::Bytes(20_000),
                    head_drop: false,
                })),
                TimerSpec::default(),
            ),
        ),
        ("tbf", tcp_ties(tbf("10000"), TimerSpec::default())),
        ("tbf hz100", tcp_ties(tbf("20000"), TimerSpec::Hz(100))),
        (
            "tbf slack",
            tcp_ties(
                tbf("5000"),
                TimerSpec::HighRes {
                    slack: Duration::from_us(50),
                },
            ),
        ),
        ("lossy, shaped, policed", busy_dumbbell()),
    ];
    for (name, c) in cases {
        let mut new = Sim::new(&c).unwrap();
        let computed = new.links.iter().filter(|l| l.computed).count();
        new.run_loop(&mut |_| true).unwrap();
        let mut old = Sim::new(&c).unwrap();
        old.event_per_packet();
        old.run_loop(&mut |_| true).unwrap();
        let (new, old) = (new.finish(), old.finish());
        assert!(
            old.events > new.events,
            "{name}: {} -> {}",
            old.events,
            new.events
        );
        assert!(!new.series.queue_packets.is_empty() || name == "lossy, shaped, policed");
        assert_eq!(
            new.digest_line(name).rsplit_once(" events=").unwrap().0,
            old.digest_line(name).rsplit_once(" events=").unwrap().0,
            "{name}: {computed} directions computed"
        );
        assert_eq!(new.stale_events, 0, "{name}");
    }
}

#[test]
fn carried_hops_give_the_run_an_arrive_per_hop_gave() {
    // The whole result (`SimResult::digest`: every flow, policy, queue
    // sample, segment, RTT sample) with packets carried across the hops
    // their wire feeds alone (`carry_hop`) against the same engine with an
    // `Arrive` per hop: identical, events apart, and fewer events.
    let grid_like = {
        // Every link at one rate (transmitters in lock step), 3 s.
        let d = DumbbellSpec {
            senders: 2,
            receivers: 2,
            access: lp(10_000_000, Duration::from_ms(1)),
            sender_delays: vec![],
            bottleneck: LinkParams {
                queue_limit_packets: 40,
                ..lp(10_000_000, Duration::from_us(500))
            },
            bottleneck_egress: None,
            bottleneck_reverse_egress: None,
            ingress_police: None,
            timer: TimerSpec::default(),
        };
        let mut c = tcp_ties(None, TimerSpec::default());
        c.topology = Topology::Dumbbell(d);
        c.traffic.truncate(1);
        c
    };
    let mid_sender = {
        // r sends to b as well: r → b has two feeders and is never carried
        // onto; b → r → a (the ACKs) is.
        let mut c = cfg(
            Topology::Explicit(three(lp(20_000_000, Duration::from_ms(3)), None)),
            vec![
                TrafficSpec::TcpBulk {
                    flows: 2,
                    endpoints: ends("a", "b"),
                    schedule: Schedule::default(),
                    bytes: None,
                    tcp: crate::config::TcpConfig::profile("linux").unwrap(),
                    label: String::new(),
                },
                udp("r", "b", 4_000_000, 1000),
            ],
            2,
        );
        c.record = RecordSpec {
            interval: Duration::from_ms(1),
            goodput: true,
            rtt: true,
            queue: true,
            segments: true,
            exact_rtt_percentiles: true,
            ..RecordSpec::default()
        };
        c
    };
    let cases = [
        ("device fifo", tcp_ties(None, TimerSpec::default())),
        (
            "pfifo 12",
            tcp_ties(
                Some(PolicySpec::Fifo(qoslab_policy::spec::FifoSpec {
                    limit: qoslab_policy::spec::FifoLimit::Packets(12),
                    head_drop: false,
                })),
                TimerSpec::default(),
            ),
        ),
        ("lossy, shaped, policed", busy_dumbbell()),
        ("all links at 10 Mbit/s", grid_like),
        ("a sender mid-path", mid_sender),
    ];
    for (name, c) in cases {
        let mut new = Sim::new(&c).unwrap();
        let carriers = new.links.iter().filter(|l| l.carry_next).count();
        new.run_loop(&mut |_| true).unwrap();
        // Each direction's uncarried count is what is on its feeder's wire
        // bound for it (a count below zero panics in a debug build).
        for (o, l) in new.links.iter().enumerate() {
            let Some(f) = new.links.get(l.sole_feeder as usize) else {
                continue;
            };
            let on_wire = f
                .in_flight
                .iter()
                .filter(|&&(_, id, last)| {
                    !last && new.routes.next(f.to, new.pkts.get(id).dst) == o as u32
                })
                .count();
            let counted = if f.carry_next { on_wire } else { 0 };
            assert_eq!(
                l.inbound_uncarried as usize, counted,
                "{name}: direction {o}"
            );
        }
        let mut old = Sim::new(&c).unwrap();
        old.arrive_per_hop();
        old.run_loop(&mut |_| true).unwrap();
        let (new, old) = (new.finish(), old.finish());
        if name != "lossy, shaped, policed" {
            // (There the ingress policer meets every packet at the
            // bottleneck's far end, and lossy access links are not carried
            // onto.)
            assert!(
                old.events > new.events,
                "{name}: {} -> {} ({carriers} directions carry)",
                old.events,
                new.events
            );
        }
        assert_eq!(
            new.digest_line(name).rsplit_once(" events=").unwrap().0,
            old.digest_line(name).rsplit_once(" events=").unwrap().0,
            "{name}: {carriers} directions carry"
        );
    }
}
