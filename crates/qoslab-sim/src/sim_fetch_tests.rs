//! `tcp-fetch` (request/response chunks, restart after idle) and size
//! tables (tc-stab) through the engine.

use super::*;
use crate::config::*;
use crate::run;
use crate::testutil::*;
use qoslab_core::{Duration, Rate};
use qoslab_policy::spec::MeterSpec;
use qoslab_policy::stab::{LinkLayer, SizeTable};

fn fetch(tcp: TcpConfig, chunks: u32, chunk_bytes: u64, pause_ms: u64) -> TrafficSpec {
    TrafficSpec::TcpFetch {
        flows: 1,
        endpoints: Endpoints::default(),
        schedule: Schedule::default(),
        chunks,
        chunk_bytes,
        pause: Duration::from_ms(pause_ms),
        request_bytes: 100,
        tcp,
        label: String::new(),
    }
}

fn dumbbell(bottleneck: LinkParams, egress: Option<PolicySpec>) -> DumbbellSpec {
    DumbbellSpec {
        senders: 1,
        receivers: 1,
        access: lp(1_000_000_000, Duration::from_us(100)),
        sender_delays: vec![],
        bottleneck,
        bottleneck_egress: egress,
        bottleneck_reverse_egress: None,
        ingress_police: None,
        timer: TimerSpec::default(),
    }
}

fn fetch_run(idle_restart: bool, pause_ms: u64) -> SimResult {
    let mut tcp = TcpConfig::profile("linux").unwrap();
    tcp.slow_start_after_idle = idle_restart;
    // 100 ms RTT, 100 Mbit/s: 1 MB chunks end in slow start's last rounds,
    // so the window a chunk starts from shows in its time.
    let d = dumbbell(lp(100_000_000, Duration::from_us(49_800)), None);
    let c = cfg(
        Topology::Dumbbell(d),
        vec![fetch(tcp, 3, 1_000_000, pause_ms)],
        30,
    );
    run(&c, &mut |_| true).unwrap()
}

#[test]
fn chunks_follow_requests_and_pauses() {
    let r = fetch_run(true, 1000);
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert_eq!(f.chunks.len(), 3);
    for (k, c) in f.chunks.iter().enumerate() {
        assert_eq!(c.index as usize, k);
        let end = c.end_ns.expect("every chunk finished");
        // The request crosses 100 us + 49.8 ms + 100 us one way.
        let transit = c.start_ns - c.request_ns;
        assert!((50_000_000..50_100_000).contains(&transit), "{c:?}");
        assert!(end > c.start_ns && c.client_done_ns.unwrap() < end);
        assert_eq!(c.bytes_acked, 1_000_000);
        assert_eq!((c.retransmits, c.packets_lost, c.timeouts), (0, 0, 0));
        if k > 0 {
            // The next request leaves `pause` after the client had it all.
            let prev = f.chunks[k - 1].client_done_ns.unwrap();
            assert_eq!(c.request_ns, prev + 1_000_000_000);
        }
    }
    // Flow goodput spans the pauses: below every chunk's.
    assert!(f.chunks.iter().all(|c| c.goodput_bps > f.goodput_bps));
}

#[test]
fn a_pause_longer_than_the_rto_restarts_the_window() {
    // Linux tcp_cwnd_restart: after 1 s idle (RTO ≈ 300 ms) the window
    // falls back toward IW10, so chunk 1 takes longer than with the
    // restart off (the window kept from chunk 0).
    let on = fetch_run(true, 1000);
    let off = fetch_run(false, 1000);
    let dur = |r: &SimResult, k: usize| {
        let c = &r.flows[0].chunks[k];
        c.end_ns.unwrap() - c.start_ns
    };
    assert_eq!(
        dur(&on, 0),
        dur(&off, 0),
        "chunk 0 starts from IW10 either way"
    );
    assert!(
        dur(&on, 1) > dur(&off, 1) + 100_000_000,
        "restart {} ns vs kept window {} ns",
        dur(&on, 1),
        dur(&off, 1)
    );
    // A pause shorter than the RTO keeps the window (no restart).
    let short = fetch_run(true, 100);
    assert_eq!(dur(&short, 1), dur(&fetch_run(false, 100), 1));
}

#[test]
fn a_lost_request_is_sent_again() {
    // 20 % loss both ways on a 10 Mbit/s bottleneck: some request is lost
    // on some seed, and every chunk still completes.
    let mut lost_any = false;
    for seed in 1..=8 {
        let mut b = lp(10_000_000, Duration::from_ms(10));
        b.loss_ppm = 200_000;
        let d = dumbbell(b, None);
        let mut c = cfg(
            Topology::Dumbbell(d),
            vec![fetch(TcpConfig::profile("linux").unwrap(), 3, 20_000, 100)],
            120,
        );
        c.seed = seed;
        let r = run(&c, &mut |_| true).unwrap();
        let f = &r.flows[0];
        assert!(
            f.chunks.iter().all(|c| c.end_ns.is_some()),
            "seed {seed}: {f:?}"
        );
        lost_any |= f.chunks.iter().any(|c| c.request_retries > 0);
    }
    assert!(lost_any, "no request was lost in 8 seeds at 20 % loss");
}

#[test]
fn fetch_keys_are_checked() {
    let d = dumbbell(lp(10_000_000, Duration::from_ms(10)), None);
    let mut t = fetch(TcpConfig::profile("linux").unwrap(), 0, 1000, 0);
    let c = cfg(Topology::Dumbbell(d.clone()), vec![t.clone()], 1);
    assert!(run(&c, &mut |_| true)
        .unwrap_err()
        .to_string()
        .contains("chunks"));
    if let TrafficSpec::TcpFetch {
        chunks,
        request_bytes,
        ..
    } = &mut t
    {
        *chunks = 1;
        *request_bytes = 5000;
    }
    let c = cfg(Topology::Dumbbell(d), vec![t], 1);
    assert!(run(&c, &mut |_| true)
        .unwrap_err()
        .to_string()
        .contains("request_size"));
}

/// A 2 Mbit/s UDP stream of 1500-byte IP packets through a 1 Mbit/s policer
/// with a size table: the policer counts what the table says, so the
/// packets that pass shrink by 1500/counted.
fn police_udp(stab: Option<SizeTable>) -> SimResult {
    let police = PolicySpec::Police(MeterSpec {
        kind: "police".into(),
        params: kv(&[("cir", "1mbit"), ("bc", "3000B")]),
    });
    let egress = match stab {
        Some(stab) => PolicySpec::Sized {
            stab,
            inner: Box::new(police),
        },
        None => police,
    };
    let d = dumbbell(lp(100_000_000, Duration::from_ms(1)), Some(egress));
    let udp = TrafficSpec::UdpCbr {
        flows: 1,
        endpoints: Endpoints::default(),
        schedule: Schedule::default(),
        rate: Rate::from_bps(2_000_000),
        payload_bytes: 1472,
        label: String::new(),
    };
    run(&cfg(Topology::Dumbbell(d), vec![udp], 20), &mut |_| true).unwrap()
}

#[test]
fn a_size_table_makes_the_policer_count_cells_and_headers() {
    let plain = police_udp(None);
    let eth = police_udp(Some(
        SizeTable::new(14, LinkLayer::Ethernet, 0, None, None).unwrap(),
    ));
    let atm = police_udp(Some(
        SizeTable::new(0, LinkLayer::Atm, 0, None, None).unwrap(),
    ));
    let passed = |r: &SimResult| r.flows[0].bytes_delivered as f64 * 8.0 / 20.0;
    // Delivered payload ≈ 1 Mbit/s · 1472 / counted size.
    for (r, counted) in [(&plain, 1500.0), (&eth, 1514.0), (&atm, 1696.0)] {
        let want = 1e6 * 1472.0 / counted;
        let got = passed(r);
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{counted}: {got} vs {want}"
        );
    }
    // The policy reports the counted bytes; the link serialised real ones.
    let p = &atm.policies[0];
    assert_eq!(p.bytes_in, p.packets_in * 1696);
    assert!(p
        .describe
        .iter()
        .any(|(k, v)| k == "stab_linklayer" && v == "atm"));
}

/// One data segment (`-n 1448`) of an iperf3-like bulk flow through a
/// one-frame policer (10 Mbit/s, Bc 1514 B counting 66 B of headers), RTT
/// 20 ms, with or without iperf3's cookie.
fn one_segment_through_one_frame(preamble_bytes: u32) -> SimResult {
    let mut tcp = TcpConfig::profile("linux").unwrap();
    tcp.app_preamble_bytes = preamble_bytes;
    let police = PolicySpec::Sized {
        stab: SizeTable::new(14, LinkLayer::Ethernet, 0, None, None).unwrap(),
        inner: Box::new(PolicySpec::Police(MeterSpec {
            kind: "police".into(),
            params: kv(&[("cir", "10mbit"), ("bc", "1514B")]),
        })),
    };
    let d = dumbbell(lp(1_000_000_000, Duration::from_us(9_800)), Some(police));
    let bulk = TrafficSpec::TcpBulk {
        flows: 1,
        endpoints: Endpoints::default(),
        schedule: Schedule::default(),
        bytes: Some(1448),
        tcp,
        label: String::new(),
    };
    run(&cfg(Topology::Dumbbell(d), vec![bulk], 3), &mut |_| true).unwrap()
}

/// iperf3's cookie (`iperf_tcp_connect`, src/iperf_tcp.c) and the wait for
/// TEST_RUNNING: without them the handshake's ACK (66 B) leaves the bucket
/// short of one frame and the first data segment, right behind it, is
/// dropped and retransmitted; with them the 103-byte cookie frame passes,
/// the bucket refills during the round trip, and the data passes at once,
/// one round trip later; the cookie is not counted as data.
#[test]
fn the_iperf3_cookie_goes_first_and_the_data_waits_a_round_trip() {
    let bare = one_segment_through_one_frame(0);
    let iperf3 = one_segment_through_one_frame(TcpConfig::IPERF3_COOKIE_BYTES);
    let (b, i) = (&bare.flows[0], &iperf3.flows[0]);
    assert!(b.retransmits >= 1, "bare: {} retransmits", b.retransmits);
    assert_eq!(i.retransmits, 0);
    assert_eq!((b.bytes_delivered, i.bytes_delivered), (1448, 1448));
    // Acknowledged three round trips (of about 20 ms) after the SYN: the
    // handshake, the cookie, the data; the bare flow's loss took longer.
    let rtt_ns = 20_000_000;
    assert!(
        i.end_ns > 3 * rtt_ns && i.end_ns < 3 * rtt_ns + rtt_ns / 2,
        "{}",
        i.end_ns
    );
    assert!(b.end_ns > i.end_ns, "{} vs {}", b.end_ns, i.end_ns);
}
