//! `tcp-fetch` traffic and `stab` size tables in scenario files.

use super::*;
use qoslab_core::Duration;
use qoslab_policy::spec::PolicySpec;
use qoslab_policy::stab::LinkLayer;
use qoslab_sim::config::*;

const FETCH: &str = r#"[scenario]
duration = "60s"

[topology]
access = { rate = "1gbit" }
bottleneck = { rate = "1gbit", delay = "50ms" }

[policy.bottleneck.egress]
police = { cir = "1500000bit", bc = "100000B" }
stab = { overhead = 14 }

[[traffic]]
kind = "tcp-fetch"
chunks = 3
chunk_size = "1000000B"
pause = "500ms"
request_size = "8B"
slow_start_after_idle = false
"#;

#[test]
fn a_fetch_and_a_size_table_become_this_config() {
    let c = parse(FETCH, "f.toml").unwrap().config;
    let TrafficSpec::TcpFetch {
        chunks,
        chunk_bytes,
        pause,
        request_bytes,
        tcp,
        ..
    } = &c.traffic[0]
    else {
        panic!("tcp-fetch expected: {:?}", c.traffic[0])
    };
    assert_eq!((*chunks, *chunk_bytes, *request_bytes), (3, 1_000_000, 8));
    assert_eq!(*pause, Duration::from_ms(500));
    assert!(!tcp.slow_start_after_idle);
    let Topology::Dumbbell(d) = &c.topology else {
        panic!("dumbbell expected")
    };
    let Some(PolicySpec::Sized { stab, inner }) = &d.bottleneck_egress else {
        panic!("a sized policy expected: {:?}", d.bottleneck_egress)
    };
    assert_eq!(
        (stab.overhead_bytes, stab.linklayer),
        (14, LinkLayer::Ethernet)
    );
    assert!(matches!(**inner, PolicySpec::Police(_)));
    assert_eq!(stab.pkt_len(1500), 1514);
}

#[test]
fn fetch_defaults_are_the_usc_lab_client() {
    let text = FETCH.replace(
        "chunks = 3\nchunk_size = \"1000000B\"\npause = \"500ms\"\nrequest_size = \"8B\"\n",
        "",
    );
    let c = parse(&text, "f.toml").unwrap().config;
    let TrafficSpec::TcpFetch {
        chunks,
        chunk_bytes,
        pause,
        request_bytes,
        ..
    } = &c.traffic[0]
    else {
        panic!()
    };
    assert_eq!((*chunks, *chunk_bytes, *request_bytes), (5, 2_000_000, 100));
    assert_eq!(*pause, Duration::from_secs(1));
}

fn err(text: &str) -> (usize, usize, String, String) {
    let e = parse(text, "t.toml").expect_err("should fail");
    (e.line, e.column, e.path, e.message)
}

#[test]
fn bad_fetch_and_stab_keys_are_located() {
    let (l, _, p, m) = err(&FETCH.replace("chunk_size = \"1000000B\"", "chunk_size = 0"));
    assert_eq!((l, p.as_str()), (15, "traffic[0].chunk_size"), "{m}");
    let (l, _, p, m) = err(&FETCH.replace("request_size = \"8B\"", "request_size = \"9000B\""));
    assert_eq!((l, p.as_str()), (17, "traffic[0].request_size"));
    assert!(m.contains("mss = 1448"), "{m}");
    let (l, _, p, m) = err(&FETCH.replace("overhead = 14", "linklayer = \"atn\""));
    assert_eq!(
        (l, p.as_str()),
        (10, "policy.bottleneck.egress.stab.linklayer")
    );
    assert!(m.contains("atm"), "{m}");
    let (l, _, p, m) = err(&FETCH.replace("overhead = 14", "overhed = 14"));
    assert_eq!(
        (l, p.as_str()),
        (10, "policy.bottleneck.egress.stab.overhed"),
        "{m}"
    );
    assert!(m.contains("overhead"), "{m}");
    let (l, _, p, _) = err(&FETCH.replace("overhead = 14", "linklayer = \"atm\", tsize = 1"));
    assert_eq!((l, p.as_str()), (10, "policy.bottleneck.egress.stab.tsize"));
    let (_, _, p, m) = err(&FETCH.replace("chunks = 3", "chunks = 3\nbytes = 5"));
    assert_eq!(p, "traffic[0].bytes");
    assert!(m.contains("tcp-fetch"), "{m}");
}
