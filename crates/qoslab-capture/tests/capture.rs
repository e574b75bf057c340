//! Reader and TCP analysis on captures built here: link types, pcapng with
//! unknown blocks, IPv6 extension headers, wrapped sequence numbers, 4-tuple
//! reuse, retransmission classes, RTT and window scale; robustness (truncated,
//! empty, unknown link type, arbitrary bytes: never a panic).

use etherparse::{PacketBuilder, TcpOptionElement};
use proptest::prelude::*;
use qoslab_capture::analysis::{analyze, Analysis, Options};
use qoslab_capture::{policing, policing_input};

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];

#[derive(Clone, Copy, Default)]
struct Seg {
    t_us: u64,
    from_client: bool,
    seq: u32,
    ack: Option<u32>,
    syn: bool,
    fin: bool,
    len: usize,
    window: u16,
    wscale: Option<u8>,
    sack: Option<(u32, u32)>,
}

/// The IPv4/TCP bytes of one segment (client 10.0.0.1:40000, server 10.0.0.2:80).
fn ip_packet(s: &Seg) -> Vec<u8> {
    let (src, dst, sp, dp) = if s.from_client {
        (C, S, 40000, 80)
    } else {
        (S, C, 80, 40000)
    };
    let mut b = PacketBuilder::ipv4(src, dst, 64).tcp(sp, dp, s.seq, s.window.max(1));
    if let Some(a) = s.ack {
        b = b.ack(a);
    }
    if s.syn {
        b = b.syn();
    }
    if s.fin {
        b = b.fin();
    }
    let mut opts = Vec::new();
    if s.syn {
        opts.push(TcpOptionElement::MaximumSegmentSize(1460));
        if let Some(w) = s.wscale {
            opts.push(TcpOptionElement::WindowScale(w));
        }
    }
    if let Some((l, r)) = s.sack {
        opts.push(TcpOptionElement::SelectiveAcknowledgement(
            (l, r),
            [None, None, None],
        ));
    }
    let b = b.options(&opts).unwrap();
    let mut out = Vec::new();
    b.write(&mut out, &vec![0u8; s.len]).unwrap();
    out
}

fn ethernet(ip: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(ip);
    f
}

fn pcap(linktype: u32, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = 0xa1b2c3d4u32.to_le_bytes().to_vec();
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65535, linktype] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (t_us, f) in frames {
        let secs = 1_700_000_000 + t_us / 1_000_000;
        for v in [
            secs as u32,
            (t_us % 1_000_000) as u32,
            f.len() as u32,
            f.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(f);
    }
    out
}

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let len = 12 + body.len() as u32;
    let mut b = kind.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// pcapng: section header, an unknown block, one interface, enhanced packets (µs).
fn pcapng(linktype: u16, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut out = block(0x0A0D_0D0A, &shb);
    out.extend(block(0x0000_0BAD, b"an unknown block type"));
    let mut idb = linktype.to_le_bytes().to_vec();
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&65535u32.to_le_bytes());
    out.extend(block(1, &idb));
    for (t_us, f) in frames {
        let ts = 1_700_000_000_000_000u64 + t_us;
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts as u32).to_le_bytes());
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(f);
        out.extend(block(6, &epb));
    }
    out
}

/// A bulk transfer: handshake (window scale 7 both ways), `n` data segments
/// of 1000 bytes from the server each ACKed 10 ms later, from ISN `isn`.
fn transfer(isn: u32, n: u32) -> Vec<Seg> {
    let mut v = vec![
        Seg {
            t_us: 0,
            from_client: true,
            seq: 7,
            syn: true,
            wscale: Some(7),
            window: 500,
            ..Default::default()
        },
        Seg {
            t_us: 10_000,
            seq: isn,
            ack: Some(8),
            syn: true,
            wscale: Some(7),
            window: 500,
            ..Default::default()
        },
        Seg {
            t_us: 20_000,
            from_client: true,
            seq: 8,
            ack: Some(isn.wrapping_add(1)),
            window: 500,
            ..Default::default()
        },
    ];
    for i in 0..n {
        let seq = isn.wrapping_add(1 + 1000 * i);
        let t = 30_000 + 1_000 * i as u64;
        v.push(Seg {
            t_us: t,
            seq,
            ack: Some(8),
            len: 1000,
            window: 500,
            ..Default::default()
        });
        v.push(Seg {
            t_us: t + 10_000,
            from_client: true,
            seq: 8,
            ack: Some(seq.wrapping_add(1000)),
            window: 100,
            ..Default::default()
        });
    }
    v.sort_by_key(|s| s.t_us);
    v
}

fn frames(segs: &[Seg], link: impl Fn(&[u8]) -> Vec<u8>) -> Vec<(u64, Vec<u8>)> {
    segs.iter().map(|s| (s.t_us, link(&ip_packet(s)))).collect()
}

fn run(bytes: &[u8]) -> Analysis {
    analyze(
        bytes,
        Options {
            bin_ns: 10_000_000,
            port: None,
        },
    )
    .expect("analyze")
}

fn server_flow(a: &Analysis) -> &qoslab_capture::analysis::FlowOut {
    a.flows
        .iter()
        .find(|f| f.from == "10.0.0.2:80")
        .expect("server flow")
}

#[test]
fn link_types_and_pcapng_with_an_unknown_block() {
    let segs = transfer(1000, 5);
    let sll = |ip: &[u8]| {
        let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0, 0x08, 0x00];
        f.extend_from_slice(ip);
        f
    };
    let sll2 = |ip: &[u8]| {
        let mut f = vec![
            0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0,
        ];
        f.extend_from_slice(ip);
        f
    };
    let captures = [
        pcap(1, &frames(&segs, ethernet)),
        pcap(113, &frames(&segs, sll)),
        pcap(101, &frames(&segs, |ip| ip.to_vec())),
        pcapng(276, &frames(&segs, sll2)),
        pcapng(1, &frames(&segs, ethernet)),
    ];
    for c in &captures {
        let a = run(c);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        let f = server_flow(&a);
        assert_eq!(
            (f.packets_sent, f.bytes_delivered, f.retransmits),
            (5, 5000, 0)
        );
        // Five data segments and the SYN-ACK (timed by the handshake's ACK, as Wireshark).
        assert_eq!(f.rtt.samples, 6);
        assert_eq!(f.rtt.min_ns, 10_000_000);
        assert_eq!(f.wscale, Some((7, 7)));
    }
    assert_eq!(run(&captures[3]).format, "pcapng");
}

#[test]
fn ack_line_carries_the_scaled_receive_window() {
    let a = run(&pcap(1, &frames(&transfer(1000, 3), ethernet)));
    let s = &a.series;
    let fid = server_flow(&a).id;
    let rwnd: Vec<u64> = (0..s.ack_flow.len())
        .filter(|&i| s.ack_flow[i] == fid)
        .map(|i| s.ack_rwnd_bytes[i])
        .collect();
    // The handshake ACK's 500 and the data ACKs' 100, shifted by the SYN's scale 7.
    assert_eq!(rwnd, vec![500 << 7, 100 << 7, 100 << 7, 100 << 7]);
}

#[test]
fn wrapped_sequence_numbers_unwrap_to_64_bits() {
    let a = run(&pcap(1, &frames(&transfer(0xFFFF_F000, 10), ethernet)));
    let f = server_flow(&a);
    assert_eq!((f.retransmits, f.out_of_order, f.lost_segments), (0, 0, 0));
    assert_eq!(f.bytes_delivered, 10_000);
    let seqs: Vec<u64> = (0..a.series.seg_seq.len())
        .filter(|&i| a.series.seg_flow[i] == f.id)
        .map(|i| a.series.seg_seq[i])
        .collect();
    assert_eq!(seqs, (0..10).map(|i| 1 + 1000 * i).collect::<Vec<u64>>());
}

/// Two IPv6 TCP segments, each behind a hop-by-hop header.
fn ipv6_hop_by_hop_frames() -> Vec<(u64, Vec<u8>)> {
    use etherparse::{IpNumber, Ipv6Header, TcpHeader};
    let mut frames = Vec::new();
    for (i, len) in [(0u32, 100usize), (1, 200)] {
        let mut tcp = TcpHeader::new(443, 50000, 1 + 100 * i, 1000);
        tcp.ack = true;
        tcp.acknowledgment_number = 5;
        let mut ip = Ipv6Header {
            next_header: IpNumber::IPV6_HEADER_HOP_BY_HOP,
            hop_limit: 64,
            source: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            destination: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            ..Default::default()
        };
        ip.payload_length = (8 + tcp.header_len() + len) as u16;
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        ip.write(&mut f).unwrap();
        f.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 0]); // hop-by-hop: next TCP, 8 bytes
        tcp.write(&mut f).unwrap();
        f.extend(std::iter::repeat_n(0u8, len));
        frames.push((i as u64 * 1000, f));
    }
    frames
}

#[test]
fn ipv6_with_a_hop_by_hop_header() {
    let a = run(&pcap(1, &ipv6_hop_by_hop_frames()));
    assert_eq!(a.flows.len(), 1);
    let f = &a.flows[0];
    assert_eq!(f.from, "[2001:db8::1]:443");
    assert_eq!(f.payload_bytes, 300);
    assert_eq!(f.packets_sent, 2);
}

/// Two connections on one 4-tuple: a transfer, FIN, then a new handshake.
fn reused_tuple_segments() -> Vec<Seg> {
    let mut segs = transfer(1000, 3);
    let end = segs.last().unwrap().t_us;
    segs.push(Seg {
        t_us: end + 1000,
        seq: 3001,
        ack: Some(8),
        fin: true,
        window: 500,
        ..Default::default()
    });
    let mut second = transfer(900_000, 2);
    for s in &mut second {
        s.t_us += end + 100_000;
    }
    segs.extend(second);
    segs
}

#[test]
fn a_reused_four_tuple_is_a_new_connection() {
    let a = run(&pcap(1, &frames(&reused_tuple_segments(), ethernet)));
    let servers: Vec<_> = a.flows.iter().filter(|f| f.from == "10.0.0.2:80").collect();
    assert_eq!(servers.len(), 2);
    assert_eq!((servers[0].connection, servers[1].connection), (0, 1));
    assert_eq!((servers[0].packets_sent, servers[1].packets_sent), (3, 2));
    assert!(servers.iter().all(|f| f.retransmits == 0));
}

#[test]
fn retransmissions_are_classified_fast_rto_and_spurious() {
    let isn = 1000u32;
    let seq = |i: u32| isn + 1 + 1000 * i;
    let mut segs = transfer(isn, 0);
    let d = |t: u64, i: u32| Seg {
        t_us: t,
        seq: seq(i),
        ack: Some(8),
        len: 1000,
        window: 500,
        ..Default::default()
    };
    let a = |t: u64, ack: u32, sack: Option<(u32, u32)>| Seg {
        t_us: t,
        from_client: true,
        seq: 8,
        ack: Some(ack),
        window: 100,
        sack,
        ..Default::default()
    };
    for i in 0..6 {
        segs.push(d(30_000 + i as u64 * 100, i));
    }
    // Segment 1 lost: ACK of 0, then three duplicates with SACK.
    segs.push(a(40_000, seq(1), None));
    segs.push(a(40_100, seq(1), Some((seq(2), seq(3)))));
    segs.push(a(40_200, seq(1), Some((seq(2), seq(4)))));
    segs.push(a(40_300, seq(1), Some((seq(2), seq(5)))));
    segs.push(d(40_400, 1)); // fast retransmission (3 dup ACKs, < 20 ms)
    segs.push(a(50_400, seq(6), None));
    // Segment 6 sent, never ACKed: retransmitted after 300 ms (RTO-class).
    segs.push(d(60_000, 6));
    segs.push(d(360_000, 6));
    segs.push(a(370_000, seq(7), None));
    // Segment 6 again, although ACKed: spurious.
    segs.push(d(380_000, 6));
    let an = run(&pcap(1, &frames(&segs, ethernet)));
    let f = server_flow(&an);
    assert_eq!(f.fast_retransmits, 1, "fast");
    assert_eq!(f.rto_retransmits, 1, "rto");
    assert_eq!(f.spurious_retransmits, 1, "spurious");
    assert_eq!(f.retransmits, 3);
    assert_eq!(f.dup_acks, 3);
    assert_eq!(f.sack_blocks, 3);
    assert_eq!((f.fast_recoveries, f.timeouts), (1, 1));
    assert_eq!(f.bytes_delivered, 7000);
}

#[test]
fn bad_files_are_errors_or_warnings_never_panics() {
    let good = pcap(1, &frames(&transfer(1000, 20), ethernet));
    // Truncated in the middle of a record: the records before it are kept.
    let cut = &good[..good.len() - 30];
    let a = run(cut);
    assert_eq!(a.records, 42);
    assert!(
        a.warnings[0].starts_with("capture truncated or corrupted after record 42"),
        "{:?}",
        a.warnings
    );
    // Empty, not a capture, unknown link type: one clear error each.
    let e = analyze(&[], Options::default()).unwrap_err();
    assert_eq!(e.message, "empty file (no capture header)");
    let e = analyze(b"GIF89a not a capture", Options::default()).unwrap_err();
    assert!(e.message.starts_with("not a pcap or pcapng capture"), "{e}");
    let e = analyze(&pcap(147, &[(0, vec![1, 2, 3])]), Options::default()).unwrap_err();
    assert!(e.message.contains("unsupported link type 147"), "{e}");
    // A header alone is an empty, valid capture.
    let a = run(&pcap(1, &[]));
    assert_eq!((a.records, a.flows.len()), (0, 0));
}

#[test]
fn policing_detector_runs_on_built_captures() {
    let bytes = pcap(1, &frames(&transfer(1000, 50), ethernet));
    let (packets, _) = policing_input(&bytes, Some(80)).unwrap();
    let rows = policing::detect_all(&packets);
    // One segment (request-less transfer: all data from B), both directions, no loss.
    assert_eq!(rows.len(), 2);
    let b2a = rows.iter().find(|r| r.direction == "b2a").unwrap();
    assert_eq!((b2a.data_packets, b2a.losses), (50, 0));
    assert_eq!(
        b2a.flach_csv("x"),
        "x,0,0,b2a,50,0,False,[code 1, null, null],False,[code 1, null, null]"
    );
}

/// The seed corpus (`tests/corpus/`, also the cargo-fuzz target's seeds):
/// the tricky shapes of input, built by the helpers above. Regenerate with
/// `cargo test -p qoslab-capture --test capture -- --ignored write_seed_corpus`.
fn seed_corpus() -> Vec<(&'static str, Vec<u8>)> {
    let good = pcap(1, &frames(&transfer(1000, 20), ethernet));
    let mut bad_block = pcapng(1, &frames(&transfer(1000, 4), ethernet));
    // A block whose trailing length disagrees with its leading one.
    bad_block.extend(block(6, &[0u8; 20]));
    let n = bad_block.len();
    bad_block[n - 4] ^= 0x40;
    vec![
        (
            "truncated-mid-record.pcap",
            good[..good.len() - 30].to_vec(),
        ),
        ("header-only.pcap", pcap(1, &[])),
        (
            "pcapng-unknown-block.pcapng",
            pcapng(1, &frames(&transfer(1000, 5), ethernet)),
        ),
        ("pcapng-bad-block-length.pcapng", bad_block),
        ("ipv6-hop-by-hop.pcap", pcap(1, &ipv6_hop_by_hop_frames())),
        (
            "tuple-reuse.pcap",
            pcap(1, &frames(&reused_tuple_segments(), ethernet)),
        ),
        (
            "seq-wrap.pcap",
            pcap(1, &frames(&transfer(0xFFFF_F000, 10), ethernet)),
        ),
        ("linux-sll.pcap", {
            let sll = |ip: &[u8]| {
                let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 2, 0, 0, 0x08, 0x00];
                f.extend_from_slice(ip);
                f
            };
            pcap(113, &frames(&transfer(1000, 5), sll))
        }),
        ("unknown-linktype.pcap", pcap(147, &[(0, vec![1, 2, 3])])),
    ]
}

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");

#[test]
#[ignore = "writes tests/corpus/; run by hand to regenerate the seeds"]
fn write_seed_corpus() {
    std::fs::create_dir_all(CORPUS).unwrap();
    for (name, bytes) in seed_corpus() {
        std::fs::write(format!("{CORPUS}/{name}"), bytes).unwrap();
    }
}

/// Every committed seed: the synthetic ones are what the builders make
/// today, and each file is an error, or an analysis with the expected
/// warning, never a panic.
#[test]
fn seed_corpus_is_committed_and_reads_as_expected() {
    for (name, bytes) in seed_corpus() {
        let committed = std::fs::read(format!("{CORPUS}/{name}"))
            .unwrap_or_else(|e| panic!("{name}: {e} (run write_seed_corpus)"));
        assert_eq!(committed, bytes, "{name} differs from its builder");
    }
    let mut files: Vec<_> = std::fs::read_dir(CORPUS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let got = analyze(&bytes, Options::default());
        match name.as_str() {
            "unknown-linktype.pcap" => assert!(got.is_err(), "{name}"),
            "truncated-mid-record.pcap" | "pcapng-bad-block-length.pcapng" => {
                let a = got.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(
                    !a.warnings.is_empty() && a.records > 0,
                    "{name}: {:?}",
                    a.warnings
                );
            }
            _ => {
                let a = got.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(a.warnings.is_empty(), "{name}: {:?}", a.warnings);
            }
        }
        if let Ok((p, _)) = policing_input(&bytes, None) {
            let _ = policing::detect_all(&p);
        }
    }
}

fn corpus_files() -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir(CORPUS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// `PROPTEST_CASES` when set (the fuzz campaign, benchmarks/fuzz_campaign.sh),
/// else CI's budget `ci`.
fn campaign_cases(ci: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ci)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(campaign_cases(256)))]

    /// A seed of the corpus with bytes overwritten, then cut anywhere.
    #[test]
    fn mutated_seed_corpus_never_panics(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..24),
        cut in any::<prop::sample::Index>(),
    ) {
        let files = corpus_files();
        let mut bytes = files[pick.index(files.len())].clone();
        for (i, b) in edits {
            let n = bytes.len();
            if n > 0 {
                bytes[i.index(n)] = b;
            }
        }
        let keep = cut.index(bytes.len() + 1);
        bytes.truncate(keep);
        let _ = analyze(&bytes, Options::default());
        if let Ok((p, _)) = policing_input(&bytes, None) {
            let _ = policing::detect_all(&p);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(campaign_cases(256)))]

    /// Arbitrary bytes: an error or an analysis, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = analyze(&bytes, Options::default());
        if let Ok((p, _)) = policing_input(&bytes, None) {
            let _ = policing::detect_all(&p);
        }
    }

    /// A valid capture with bytes overwritten anywhere (headers, lengths, options).
    #[test]
    fn corrupted_captures_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..40),
        ng in any::<bool>(),
    ) {
        let segs = transfer(0xFFFF_FF00, 12);
        let mut bytes = if ng { pcapng(1, &frames(&segs, ethernet)) } else { pcap(1, &frames(&segs, ethernet)) };
        for (i, b) in edits {
            let n = bytes.len();
            bytes[i.index(n)] = b;
        }
        let _ = analyze(&bytes, Options::default());
        if let Ok((p, _)) = policing_input(&bytes, None) {
            let _ = policing::detect_all(&p);
        }
    }
}

/// Big-endian pcap with nanosecond timestamps (magic a1b23c4d).
fn pcap_be_ns(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = 0xa1b2_3c4du32.to_be_bytes().to_vec();
    out.extend_from_slice(&2u16.to_be_bytes());
    out.extend_from_slice(&4u16.to_be_bytes());
    for v in [0u32, 0, 65535, 1] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    for (t_ns, f) in frames {
        let secs = 1_700_000_000 + t_ns / 1_000_000_000;
        for v in [
            secs as u32,
            (t_ns % 1_000_000_000) as u32,
            f.len() as u32,
            f.len() as u32,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(f);
    }
    out
}

#[test]
fn big_endian_nanosecond_pcap_keeps_nanoseconds() {
    let segs = transfer(1000, 4);
    // Times in ns, shifted by 7 ns so that a µs reader would lose them.
    let frames: Vec<(u64, Vec<u8>)> = segs
        .iter()
        .map(|s| {
            (
                s.t_us * 1000 + if s.from_client { 7 } else { 0 },
                ethernet(&ip_packet(s)),
            )
        })
        .collect();
    let a = run(&pcap_be_ns(&frames));
    let f = server_flow(&a);
    assert_eq!(f.packets_sent, 4);
    assert_eq!(f.rtt.min_ns, 10_000_007);
}

/// Found by the corpus fuzzer: a UDP flow seen before a TCP connection put
/// the connection's two directions at an odd index, and the analysis took
/// the wrong direction as each one's peer (window scale, MSS) or indexed
/// past the end.
#[test]
fn a_udp_flow_before_a_tcp_connection_keeps_the_peers_right() {
    let mut udp = etherparse::UdpHeader::without_ipv4_checksum(53, 53, 4).unwrap();
    udp.checksum = 0;
    let mut ip = etherparse::Ipv4Header::new(12, 64, etherparse::IpNumber::UDP, C, S).unwrap();
    ip.header_checksum = ip.calc_header_checksum();
    let mut u = Vec::new();
    ip.write(&mut u).unwrap();
    udp.write(&mut u).unwrap();
    u.extend_from_slice(&[0; 4]);
    let mut fr = vec![(0u64, ethernet(&u))];
    fr.extend(frames(&transfer(1000, 5), ethernet));
    let a = run(&pcap(1, &fr));
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(server_flow(&a).wscale, Some((7, 7)));
    assert_eq!(a.flows.len(), 2); // the UDP flow and the server's data
}
