//! Scenario parsing: a full file to the exact `SimConfig`, and one test per
//! error class, each checking the line:column and the message.

use super::*;
use qoslab_core::Rate;
use qoslab_sim::config::*;

const FULL: &str = r#"
[scenario]
name = "full"
duration = "20s"
seed = 7
description = "every section"
source = "An article, its author, https://example.org/x, 2020"

[topology]
senders = 2
receivers = 1
access = { rate = "1gbit", delay = "1ms", loss = "0.1%", queue_limit = "500p" }
bottleneck = { rate = "100mbit", delay = "0.5ms" }
sender_delays = ["2ms"]

[policy.bottleneck.egress]
police = { cir = "20mbit", bc = "625000B", exceed = "drop" }

[policy.bottleneck.reverse]
fifo = { limit = "64kb", head_drop = true }

[policy.access.ingress]
police = { kind = "srtcm", cir = "1mbit", cbs = 3000, ebs = "6000B" }

[[traffic]]
kind = "tcp-bulk"
flows = 4
profile = "windows10"
stagger = "10ms"
cc = "newreno"
recovery = "newreno"
sack = false
delayed_ack = false
window = "128kb"
window_scaling = true
initial_ssthresh = "infinite"
label = "bulk"

[[traffic]]
kind = "udp"
rate = "1mbit"
length = 1000
from = "s1"
to = "d0"
start = "1s"
stop = "5s"

[[traffic]]
kind = "onoff"
rate = "2mbit"
on = "100ms"
off = "900ms"
exponential = true

[[traffic]]
kind = "ping"
interval = "200ms"

[record]
interval = "50ms"
series = ["goodput", "rtt", "queue"]
"#;

fn s(x: &str) -> String {
    x.to_string()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(k, v)| (s(k), s(v))).collect()
}

#[test]
fn a_full_scenario_becomes_exactly_this_config() {
    let sc = parse(FULL, "full.toml").unwrap();
    assert_eq!(sc.description, "every section");
    assert_eq!(
        sc.source,
        "An article, its author, https://example.org/x, 2020"
    );
    let mut w10 = TcpConfig::profile("windows10").unwrap();
    w10.cc = CcKind::NewReno;
    w10.recovery = RecoveryKind::NewReno;
    w10.sack = false;
    w10.delayed_ack = None;
    w10.receive_window_bytes = 128 * 1024;
    w10.app_preamble_bytes = TcpConfig::IPERF3_COOKIE_BYTES; // tcp-bulk is iperf3
    w10.window_scaling = true;
    w10.initial_ssthresh_bytes = None;
    let expected = SimConfig {
        name: s("full"),
        duration: Duration::from_secs(20),
        seed: 7,
        topology: Topology::Dumbbell(DumbbellSpec {
            senders: 2,
            receivers: 1,
            access: LinkParams {
                rate: Rate::from_bps(1_000_000_000),
                delay: Duration::from_ms(1),
                delay_reverse: None,
                loss_ppm: 1000,
                queue_limit_packets: 500,
            },
            sender_delays: vec![Duration::from_ms(2)],
            bottleneck: LinkParams {
                rate: Rate::from_bps(100_000_000),
                delay: Duration::from_us(500),
                delay_reverse: None,
                loss_ppm: 0,
                queue_limit_packets: 1000,
            },
            bottleneck_egress: Some(PolicySpec::Police(MeterSpec {
                kind: s("police"),
                params: pairs(&[("cir", "20mbit"), ("bc", "625000B"), ("exceed", "drop")]),
            })),
            bottleneck_reverse_egress: Some(PolicySpec::Fifo(FifoSpec {
                limit: FifoLimit::Bytes(65536),
                head_drop: true,
            })),
            ingress_police: Some(MeterSpec {
                kind: s("srtcm"),
                params: pairs(&[("cir", "1mbit"), ("cbs", "3000"), ("ebs", "6000B")]),
            }),
            timer: TimerSpec::default(),
        }),
        traffic: vec![
            TrafficSpec::TcpBulk {
                flows: 4,
                endpoints: Endpoints::default(),
                schedule: Schedule {
                    start: Duration::ZERO,
                    stagger: Duration::from_ms(10),
                    stop: None,
                },
                bytes: None,
                tcp: w10,
                label: s("bulk"),
            },
            TrafficSpec::UdpCbr {
                flows: 1,
                endpoints: Endpoints {
                    from: Some(s("s1")),
                    to: Some(s("d0")),
                    dscp: 0,
                },
                schedule: Schedule {
                    start: Duration::from_secs(1),
                    stagger: Duration::ZERO,
                    stop: Some(Duration::from_secs(5)),
                },
                rate: Rate::from_bps(1_000_000),
                payload_bytes: 1000,
                label: s(""),
            },
            TrafficSpec::OnOff {
                flows: 1,
                endpoints: Endpoints::default(),
                schedule: Schedule::default(),
                rate: Rate::from_bps(2_000_000),
                payload_bytes: traffic::DEFAULT_UDP_PAYLOAD_BYTES,
                on: Duration::from_ms(100),
                off: Duration::from_ms(900),
                exponential: true,
                label: s(""),
            },
            TrafficSpec::Ping {
                endpoints: Endpoints::default(),
                schedule: Schedule::default(),
                interval: Duration::from_ms(200),
                payload_bytes: 56,
                label: s(""),
            },
        ],
        record: RecordSpec {
            interval: Duration::from_ms(50),
            goodput: true,
            rtt: true,
            cwnd: false,
            queue: true,
            tokens: false,
            colors: false,
            ping: false,
            segments: false,
            exact_rtt_percentiles: false,
        },
    };
    assert_eq!(sc.config, expected);
}

const MINIMAL: &str = r#"[scenario]
duration = "1s"

[topology]
access = { rate = "1gbit" }
bottleneck = { rate = "10mbit", delay = "2ms" }

[[traffic]]
kind = "tcp-bulk"
"#;

#[test]
fn defaults_fill_what_a_minimal_scenario_leaves_out() {
    let c = parse(MINIMAL, "dir/quick.toml").unwrap().config;
    assert_eq!(c.name, "quick");
    assert_eq!(c.seed, DEFAULT_SEED);
    assert_eq!(c.record, RecordSpec::default());
    let Topology::Dumbbell(d) = &c.topology else {
        panic!("dumbbell expected")
    };
    assert_eq!((d.senders, d.receivers), (1, 1));
    assert_eq!(d.access.delay, Duration::ZERO);
    assert_eq!(d.bottleneck.queue_limit_packets, 1000);
    let TrafficSpec::TcpBulk { tcp, flows, .. } = &c.traffic[0] else {
        panic!("tcp-bulk expected")
    };
    assert_eq!(*flows, 1);
    let mut linux = TcpConfig::profile("linux").unwrap();
    linux.app_preamble_bytes = TcpConfig::IPERF3_COOKIE_BYTES; // tcp-bulk is iperf3
    assert_eq!(*tcp, linux);
    assert_eq!(parse(MINIMAL, "<string>").unwrap().config.name, "scenario");
}

const EXPLICIT: &str = r#"[scenario]
duration = "2s"

[[node]]
name = "h1"

[[node]]
name = "r"
timer = "hz:250"
routes = { h2 = "h2" }

[[node]]
name = "h2"
timer = { slack = "50us" }

[[link]]
a = "h1"
b = "r"
rate = "1gbit"

[[link]]
name = "wan"
a = "r"
b = "h2"
rate = "10mbit"
delay = "20ms"
loss = 0.01

[policy.wan.egress]
shape = { kind = "tbf", rate = "5mbit", burst = "10kb", limit = "30kb" }

[policy.h1-r.ingress]
police = { cir = "8mbit" }

[[traffic]]
kind = "ping"
from = "h1"
to = "h2"
"#;

#[test]
fn explicit_nodes_links_and_named_policies() {
    let c = parse(EXPLICIT, "x.toml").unwrap().config;
    let Topology::Explicit(e) = &c.topology else {
        panic!("explicit expected")
    };
    assert_eq!(e.nodes.len(), 3);
    assert_eq!(e.nodes[0].timer, TimerSpec::default());
    assert_eq!(e.nodes[1].timer, TimerSpec::Hz(250));
    assert_eq!(e.nodes[1].routes, vec![(s("h2"), s("h2"))]);
    assert_eq!(
        e.nodes[2].timer,
        TimerSpec::HighRes {
            slack: Duration::from_us(50)
        }
    );
    assert_eq!(e.links[1].params.loss_ppm, 10_000);
    assert_eq!(
        e.links[1].egress_ab,
        Some(PolicySpec::Shape(ShaperSpec {
            kind: s("tbf"),
            params: pairs(&[("rate", "5mbit"), ("burst", "10kb"), ("limit", "30kb")]),
        }))
    );
    assert!(e.links[0].ingress_police_ab.is_some());
    assert!(e.links[0].egress_ab.is_none());
}

/// Parses `text` expecting an error; returns (line, column, path, message).
fn err(text: &str) -> (usize, usize, String, String) {
    let e = parse(text, "t.toml").expect_err("should fail");
    assert!(
        e.to_string()
            .starts_with(&format!("t.toml:{}:{}: ", e.line, e.column)),
        "{e}"
    );
    (e.line, e.column, e.path, e.message)
}

fn with(extra: &str) -> String {
    format!("{MINIMAL}{extra}")
}

#[test]
fn toml_syntax_errors_are_located() {
    let (l, c, p, m) = err("[scenario]\nduration = 1s\n");
    assert_eq!((l, c), (2, 12));
    assert_eq!(p, "");
    assert!(
        m.starts_with("invalid TOML: string values must be quoted"),
        "{m}"
    );
    let (l, c, _, m) = err("[scenario]\nx = 1\nx = 2\n");
    assert_eq!((l, c), (3, 1));
    assert!(m.contains("duplicate key"), "{m}");
}

#[test]
fn a_misspelt_key_is_rejected_with_the_nearest_one() {
    let text = MINIMAL.replace("kind = \"tcp-bulk\"", "kind = \"tcp-bulk\"\nflow = 4");
    let (l, c, p, m) = err(&text);
    assert_eq!((l, c), (10, 1));
    assert_eq!(p, "traffic[0].flow");
    assert!(m.contains("did you mean 'flows'?"), "{m}");
    assert!(m.contains("for kind = \"tcp-bulk\""), "{m}");
}

#[test]
fn keys_of_another_kind_are_rejected() {
    let text = MINIMAL.replace(
        "kind = \"tcp-bulk\"",
        "kind = \"tcp-bulk\"\nrate = \"1mbit\"",
    );
    let (_, _, p, m) = err(&text);
    assert_eq!(p, "traffic[0].rate");
    assert!(
        m.starts_with("unknown key 'rate' for kind = \"tcp-bulk\""),
        "{m}"
    );
}

#[test]
fn an_unknown_table_is_rejected() {
    let (l, c, p, m) = err(&with("\n[recrod]\ninterval = \"1s\"\n"));
    assert_eq!((l, c), (11, 2));
    assert_eq!(p, "recrod");
    assert!(m.contains("did you mean 'record'?"), "{m}");
}

#[test]
fn a_missing_required_key_points_at_its_table() {
    let (l, _, p, m) = err("[scenario]\nname = \"x\"\n");
    assert_eq!(l, 1);
    assert_eq!(p, "scenario.duration");
    assert!(m.contains("missing key 'duration'"), "{m}");
    let (_, _, p, m) = err("[scenario]\nduration = \"1s\"\n[topology]\naccess = { rate = \"1gbit\" }\nbottleneck = { rate = \"1gbit\" }\n");
    assert_eq!(p, "traffic");
    assert!(m.contains("[[traffic]]"), "{m}");
    let (_, _, p, _) = err(&MINIMAL.replace(
        "access = { rate = \"1gbit\" }",
        "access = { delay = \"1ms\" }",
    ));
    assert_eq!(p, "topology.access.rate");
}

#[test]
fn bad_units_say_what_was_expected() {
    let (l, c, p, m) = err(&MINIMAL.replace("\"10mbit\"", "\"10 megabits\""));
    assert_eq!((l, c), (6, 23));
    assert_eq!(p, "topology.bottleneck.rate");
    assert!(m.contains("expected a rate such as '20mbit'"), "{m}");
    let (_, _, p, m) = err(&MINIMAL.replace("duration = \"1s\"", "duration = 20"));
    assert_eq!(p, "scenario.duration");
    assert!(m.contains("a time with its unit"), "{m}");
}

#[test]
fn a_wrong_type_says_what_it_got() {
    let (_, _, p, m) =
        err(&MINIMAL.replace("kind = \"tcp-bulk\"", "kind = \"tcp-bulk\"\nflows = \"4\""));
    assert_eq!(p, "traffic[0].flows");
    assert_eq!(m, "expected a positive integer, got '4'");
    let (_, _, _, m) =
        err(&MINIMAL.replace("kind = \"tcp-bulk\"", "kind = \"tcp-bulk\"\nflows = 0"));
    assert_eq!(m, "expected a positive integer, got 0");
}

#[test]
fn a_misspelt_choice_gets_the_nearest_value() {
    let (_, _, p, m) = err(&MINIMAL.replace("\"tcp-bulk\"", "\"tcp-blk\""));
    assert_eq!(p, "traffic[0].kind");
    assert!(m.contains("did you mean \"tcp-bulk\"?"), "{m}");
    let (_, _, p, m) = err(&MINIMAL.replace(
        "kind = \"tcp-bulk\"",
        "kind = \"tcp-bulk\"\nprofile = \"windows11\"",
    ));
    assert_eq!(p, "traffic[0].profile");
    assert!(m.contains("did you mean \"windows10\"?"), "{m}");
    let (_, _, p, m) = err(&with("[record]\nseries = [\"goodput\", \"cwdn\"]\n"));
    assert_eq!(p, "record.series[1]");
    assert!(m.contains("did you mean \"cwnd\"?"), "{m}");
}

#[test]
fn a_core_parameter_error_points_at_that_parameter() {
    let text = with("\n[policy.bottleneck.egress]\npolice = { cir = \"20mbit\",\n  bz = \"1\" }\n");
    let (l, c, p, m) = err(&text);
    assert_eq!((l, c), (13, 8));
    assert_eq!(p, "policy.bottleneck.egress.police.bz");
    assert!(m.contains("did you mean 'bc'?"), "{m}");
    let text = with("\n[policy.bottleneck.egress]\nshape = { kind = \"tbf\", rate = \"1mbit\", burst = \"lots\", limit = \"10kb\" }\n");
    let (_, _, p, m) = err(&text);
    assert_eq!(p, "policy.bottleneck.egress.shape.burst");
    assert!(m.starts_with("expected a size"), "{m}");
    let text =
        with("\n[policy.bottleneck.egress]\nshape = { kind = \"tbff\", rate = \"1mbit\" }\n");
    let (l, c, p, m) = err(&text);
    assert_eq!((l, c), (12, 18));
    assert_eq!(p, "policy.bottleneck.egress.shape.kind");
    assert!(m.contains("did you mean 'tbf'?"), "{m}");
    let text = with("\n[policy.bottleneck.egress]\nshape = { kind = \"tbf\", burst = \"10kb\" }\n");
    let (_, _, p, m) = err(&text);
    assert_eq!(p, "policy.bottleneck.egress.shape");
    assert!(m.starts_with("rate: missing"), "{m}");
}

#[test]
fn a_policy_is_exactly_one_conditioner() {
    let (_, _, p, m) = err(&with(
        "\n[policy.bottleneck.egress]\nfifo = { limit = \"10p\" }\nshape = { cir = \"1mbit\" }\n",
    ));
    assert_eq!(p, "policy.bottleneck.egress.shape");
    assert!(m.contains("one root: shape and fifo"), "{m}");
    let (_, _, p, m) = err(&with("\n[policy.bottleneck.egress]\n"));
    assert_eq!(p, "policy.bottleneck.egress");
    assert!(m.contains("a policy needs police"), "{m}");
    let (_, _, p, m) = err(&with(
        "\n[policy.access.ingress]\nfifo = { limit = \"10p\" }\n",
    ));
    assert_eq!(p, "policy.access.ingress.police");
    assert!(m.contains("missing key 'police'"), "{m}");
    let (_, _, p, m) = err(&with(
        "\n[policy.botleneck.egress]\nfifo = { limit = \"10p\" }\n",
    ));
    assert_eq!(p, "policy.botleneck");
    assert!(m.contains("did you mean 'bottleneck'?"), "{m}");
}

#[test]
fn unknown_nodes_and_links_are_named_with_the_nearest() {
    let (_, _, p, m) =
        err(&MINIMAL.replace("kind = \"tcp-bulk\"", "kind = \"tcp-bulk\"\nto = \"d1\""));
    assert_eq!(p, "traffic[0].to");
    assert!(m.contains("no node named 'd1' (did you mean 'd0'?)"), "{m}");
    let (_, _, p, m) = err(&EXPLICIT.replace("[policy.wan.egress]", "[policy.wna.egress]"));
    assert_eq!(p, "policy.wna");
    assert!(m.contains("did you mean 'wan'?"), "{m}");
    let (_, _, p, m) = err(&EXPLICIT.replace("b = \"h2\"", "b = \"h22\""));
    assert_eq!(p, "link[1].b");
    assert!(m.contains("did you mean 'h2'?"), "{m}");
    let (_, _, p, m) = err(&EXPLICIT.replace("name = \"h2\"\n", "name = \"h1\"\n"));
    assert_eq!(p, "node[2].name");
    assert!(m.contains("declared twice"), "{m}");
}

#[test]
fn topology_forms_do_not_mix_and_one_is_needed() {
    let (_, _, p, m) = err(&with("[[node]]\nname = \"x\"\n"));
    assert_eq!(p, "node");
    assert!(m.contains("not both"), "{m}");
    let (_, _, p, m) = err("[scenario]\nduration = \"1s\"\n[[traffic]]\nkind = \"ping\"\n");
    assert_eq!(p, "topology");
    assert!(m.contains("missing topology"), "{m}");
    let sc = parse(
        &MINIMAL.replace("[topology]", "[topology]\ntimer = \"hz:250\""),
        "t.toml",
    )
    .unwrap();
    let Topology::Dumbbell(d) = &sc.config.topology else {
        panic!("dumbbell")
    };
    assert_eq!(d.timer, TimerSpec::Hz(250));
    let (_, _, p, m) = err(&MINIMAL.replace("[topology]", "[topology]\ntimer = { slack = 5 }"));
    assert_eq!(p, "topology.timer.slack");
    assert!(m.contains("a time with its unit"), "{m}");
    let (_, _, p, m) = err(&EXPLICIT.replace("\"hz:250\"", "\"hz:fast\""));
    assert_eq!(p, "node[1].timer");
    assert!(m.contains("hz:N"), "{m}");
}

#[test]
fn inconsistent_values_are_refused() {
    let (_, _, p, m) =
        err(&MINIMAL.replace("kind = \"tcp-bulk\"", "kind = \"tcp-bulk\"\nstart = \"2s\""));
    assert_eq!(p, "traffic[0].start");
    assert!(m.contains("after the end of the run"), "{m}");
    let (_, _, p, _) = err(&MINIMAL.replace(
        "kind = \"tcp-bulk\"",
        "kind = \"tcp-bulk\"\nstart = \"0.5s\"\nstop = \"0.2s\"",
    ));
    assert_eq!(p, "traffic[0].stop");
    let (_, _, p, m) =
        err(&MINIMAL.replace("kind = \"tcp-bulk\"", "kind = \"tcp-bulk\"\nsack = false"));
    assert_eq!(p, "traffic[0].recovery");
    assert!(m.contains("needs sack = true"), "{m}");
    let (_, _, p, m) = err(&MINIMAL.replace(
        "kind = \"tcp-bulk\"",
        "kind = \"udp\"\nrate = \"1mbit\"\nsize = 1\nlength = 2",
    ));
    assert_eq!(p, "traffic[0].length");
    assert!(m.contains("give one of them"), "{m}");
    let (_, _, p, m) = err(&MINIMAL.replace(
        "{ rate = \"1gbit\" }",
        "{ rate = \"1gbit\", loss = \"150%\" }",
    ));
    assert_eq!(p, "topology.access.loss");
    assert!(m.contains("cannot exceed 1"), "{m}");
    let (_, _, p, m) = err(&MINIMAL.replace(
        "{ rate = \"1gbit\" }",
        "{ rate = \"1gbit\", queue_limit = \"64kb\" }",
    ));
    assert_eq!(p, "topology.access.queue_limit");
    assert!(m.contains("counts packets"), "{m}");
    let (_, _, p, m) = err(&with("[record]\nseries = [\"rtt\", \"rtt\"]\n"));
    assert_eq!(p, "record.series[1]");
    assert!(m.contains("twice"), "{m}");
}

#[test]
fn engine_errors_are_located_at_the_key_they_name() {
    let sc = parse(FULL, "full.toml").unwrap();
    let e = SimError::Config {
        path: s("traffic[1].to"),
        message: s("no route"),
    };
    let located = sc.locate(&e).unwrap();
    assert_eq!(
        located.to_string(),
        "full.toml:44:6: traffic[1].to: no route"
    );
    // A path below what the file gave falls back to its nearest parent.
    let e = SimError::Config {
        path: s("traffic[3].payload"),
        message: s("x"),
    };
    assert_eq!(sc.locate(&e).unwrap().line, 55);
    let e = SimError::Config {
        path: s("simulator"),
        message: s("the engine is not built yet"),
    };
    assert_eq!(
        sc.locate(&e).unwrap().to_string(),
        "full.toml:1:1: simulator: the engine is not built yet"
    );
    assert!(sc.locate(&SimError::Cancelled).is_none());
}

#[test]
fn the_same_text_parses_to_the_same_config() {
    assert_eq!(
        parse(FULL, "a").unwrap().config,
        parse(FULL, "a").unwrap().config
    );
}

#[test]
fn engine_policy_and_link_paths_map_to_scenario_keys() {
    let at = |sc: &Scenario, path: &str| {
        let e = SimError::Config {
            path: s(path),
            message: s("m"),
        };
        let l = sc.locate(&e).unwrap();
        assert_eq!(l.path, path, "the engine's path is kept in the message");
        (l.line, l.column)
    };
    let sc = parse(FULL, "full.toml").unwrap();
    // [policy.bottleneck.egress] police = { cir = ... } is on line 17.
    assert_eq!(at(&sc, "bottleneck.egress.cir"), (17, 18));
    assert_eq!(at(&sc, "bottleneck.egress"), (16, 1)); // its [header]
    assert_eq!(at(&sc, "bottleneck.reverse_egress.limit"), (20, 18));
    assert_eq!(at(&sc, "ingress_police.cbs").0, 23);
    assert_eq!(at(&sc, "topology.access.queue_limit_packets").0, 12);
    assert_eq!(at(&sc, "topology.bottleneck.queue_limit_packets").0, 13);
    assert_eq!(at(&sc, "duration"), (4, 12));
    let sc = parse(EXPLICIT, "x.toml").unwrap();
    let line_of = |needle: &str| EXPLICIT.lines().position(|l| l.contains(needle)).unwrap() + 1;
    assert_eq!(
        at(&sc, "links[1].egress_ab.burst").0,
        line_of("burst = \"10kb\"")
    );
    assert_eq!(
        at(&sc, "links[0].ingress_police_ab").0,
        line_of("[policy.h1-r.ingress]")
    );
    assert_eq!(
        at(&sc, "links[1].params.rate").0,
        line_of("rate = \"10mbit\"")
    );
    assert_eq!(
        at(&sc, "nodes[1].routes[0].next_hop").0,
        line_of("routes = ")
    );
}

#[test]
fn loss_recovery_switches_override_the_profile() {
    let text = MINIMAL.replace(
        "kind = \"tcp-bulk\"",
        "kind = \"tcp-bulk\"\nprofile = \"windows10\"\nrack = false\ntlp = false\nfrto = false\nlinux_rto = true\nlimited_transmit = false\nrescue_retransmit = true\nrto_clears_sack = true",
    );
    assert_ne!(text, MINIMAL, "the traffic table is in MINIMAL");
    let c = parse(&text, "x.toml").unwrap().config;
    let TrafficSpec::TcpBulk { tcp, .. } = &c.traffic[0] else {
        panic!("tcp-bulk expected")
    };
    let w10 = TcpConfig::profile("windows10").unwrap();
    assert!(w10.rack && w10.tlp && w10.frto && !w10.linux_rto);
    assert!(!tcp.rack && !tcp.tlp && !tcp.frto && tcp.linux_rto);
    assert!(!tcp.limited_transmit && tcp.rescue_retransmit && tcp.rto_clears_sack);
    let (_, _, path, msg) = err(&text.replace("rack = false", "rakc = false"));
    assert!(
        path.ends_with("rakc") && msg.contains("rack"),
        "{path}: {msg}"
    );
}

#[test]
fn rtt_percentiles_default_to_the_histogram_and_exact_is_a_choice() {
    let sc = parse(&with("[record]\nseries = [\"rtt\"]\n"), "t.toml").unwrap();
    assert!(!sc.config.record.exact_rtt_percentiles);
    let sc = parse(&with("[record]\nrtt_percentiles = \"exact\"\n"), "t.toml").unwrap();
    assert!(sc.config.record.exact_rtt_percentiles);
    let (l, _, p, m) = err(&with("[record]\nrtt_percentiles = \"exakt\"\n"));
    assert_eq!(p, "record.rtt_percentiles");
    assert_eq!(l, MINIMAL.lines().count() + 2);
    assert!(m.contains("did you mean \"exact\"?"), "{m}");
}

/// RFC 7323 §2.2: a window above 65535 B without window scaling is an
/// error at the key that asked for it, never a silent cap.
#[test]
fn a_window_above_64k_without_scaling_is_a_located_error() {
    let head = "[scenario]\nname = \"w\"\nduration = \"1s\"\n[topology]\nsenders = 1\n\
                receivers = 1\naccess = { rate = \"1gbit\", delay = \"1ms\" }\n\
                bottleneck = { rate = \"10mbit\", delay = \"1ms\" }\n[[traffic]]\n";
    let e = parse(
        &format!("{head}kind = \"tcp-bulk\"\nprofile = \"windows-xp\"\nwindow = \"128kb\"\n"),
        "w.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("w.toml:12:"), "{e}");
    assert!(e.contains("window_scaling = true"), "{e}");
    let e = parse(
        &format!("{head}kind = \"tcp-bulk\"\nwindow_scaling = false\n"),
        "w.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("w.toml:11:"), "{e}");
    // Within 65535 B, or with scaling, it is fine.
    parse(
        &format!("{head}kind = \"tcp-bulk\"\nprofile = \"windows-xp\"\nwindow = \"65535B\"\n"),
        "w.toml",
    )
    .unwrap();
    parse(
        &format!("{head}kind = \"tcp-bulk\"\nprofile = \"windows7\"\n"),
        "w.toml",
    )
    .unwrap();
}

#[test]
fn delay_reverse_sets_the_b_to_a_direction_and_is_located_when_bad() {
    let head = "[scenario]\nname = \"d\"\nduration = \"1s\"\n[topology]\n";
    let tail = "\n[[traffic]]\nkind = \"ping\"\n";
    let sc = parse(
        &format!(
            "{head}bottleneck = {{ rate = \"10mbit\", delay = \"10ms\", delay_reverse = \"40ms\" }}\n\
             access = {{ rate = \"1gbit\" }}{tail}"
        ),
        "d.toml",
    )
    .unwrap();
    let Topology::Dumbbell(d) = &sc.config.topology else {
        panic!("dumbbell")
    };
    assert_eq!(d.bottleneck.delay, Duration::from_ms(10));
    assert_eq!(d.bottleneck.delay_reverse, Some(Duration::from_ms(40)));
    let e = parse(
        &format!(
            "{head}bottleneck = {{ rate = \"10mbit\", delay_reverse = \"fast\" }}\n\
             access = {{ rate = \"1gbit\" }}{tail}"
        ),
        "d.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("d.toml:5:"), "{e}");
    assert!(e.contains("delay_reverse"), "{e}");
}

#[test]
fn a_late_timer_is_parsed_and_its_errors_located() {
    let head = "[scenario]\nname = \"t\"\nduration = \"1s\"\n[topology]\n\
                access = { rate = \"1gbit\" }\nbottleneck = { rate = \"10mbit\" }\n";
    let tail = "\n[[traffic]]\nkind = \"ping\"\n";
    let sc = parse(
        &format!(
            "{head}timer = {{ lateness = \"exponential\", mean = \"20us\", max = \"2ms\" }}{tail}"
        ),
        "t.toml",
    )
    .unwrap();
    let Topology::Dumbbell(d) = &sc.config.topology else {
        panic!("dumbbell")
    };
    assert_eq!(
        d.timer,
        TimerSpec::HighResLate {
            mean: Duration::from_us(20),
            max: Duration::from_ms(2)
        }
    );
    for (bad, col, what) in [
        ("{ lateness = \"exponential\", mean = \"20us\" }", 22, "max"),
        (
            "{ lateness = \"pareto\", mean = \"1us\", max = \"1ms\" }",
            22,
            "exponential",
        ),
        (
            "{ lateness = \"exponential\", mean = \"2ms\", max = \"1ms\" }",
            57,
            "mean <= max",
        ),
        ("{ mean = \"2ms\" }", 18, "lateness"),
    ] {
        let e = parse(&format!("{head}timer = {bad}{tail}"), "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("t.toml:7:{col}:")), "{bad}: {e}");
        assert!(e.contains(what), "{bad}: {e}");
    }
}

/// `window = "auto"` is Linux's receive-buffer autotuning (the linux
/// profile's default); an explicit size locks the buffer (SO_RCVBUF); other
/// profiles have no autotuning modelled, so "auto" is refused there.
#[test]
fn window_auto_is_linux_autotuning_and_a_size_turns_it_off() {
    let tcp_of = |text: &str| {
        let c = parse(text, "x.toml").unwrap().config;
        let TrafficSpec::TcpBulk { tcp, .. } = &c.traffic[0] else {
            panic!("tcp-bulk expected")
        };
        tcp.clone()
    };
    let set = |extra: &str| {
        MINIMAL.replace(
            "kind = \"tcp-bulk\"",
            &format!("kind = \"tcp-bulk\"\n{extra}"),
        )
    };
    assert!(tcp_of(MINIMAL).rcvbuf_autotune, "the linux default");
    assert!(tcp_of(&set("window = \"auto\"")).rcvbuf_autotune);
    let fixed = tcp_of(&set("window = \"64kb\""));
    assert!(!fixed.rcvbuf_autotune);
    assert_eq!(fixed.receive_window_bytes, 64 * 1024);
    let (_, _, path, msg) = err(&set("profile = \"windows10\"\nwindow = \"auto\""));
    assert!(
        path.ends_with("window") && msg.contains("autotuning"),
        "{path}: {msg}"
    );
    let (_, _, path, msg) = err(&set("window = \"automatic\""));
    assert!(
        path.ends_with("window") && msg.contains("auto"),
        "{path}: {msg}"
    );
    // rcvbuf: SO_RCVBUF as setsockopt takes it; the window is Linux's.
    let locked = tcp_of(&set("rcvbuf = \"32kb\""));
    assert_eq!(locked.rcvbuf_lock_bytes, Some(32 * 1024));
    assert!(!locked.rcvbuf_autotune);
    assert_eq!(locked.receive_window_bytes, 40_448, "2 x 32768 x 158/256");
    let (_, _, path, msg) = err(&set("window = \"64kb\"\nrcvbuf = \"32kb\""));
    assert!(
        path.ends_with("rcvbuf") && msg.contains("not both"),
        "{path}: {msg}"
    );
    let (_, _, path, msg) = err(&set("profile = \"windows10\"\nrcvbuf = \"32kb\""));
    assert!(
        path.ends_with("rcvbuf") && msg.contains("Linux"),
        "{path}: {msg}"
    );
}

#[test]
fn unknown_keys_of_the_dumbbell_links_are_refused() {
    let text = "[scenario]\nduration = \"1s\"\n[topology]\naccess = { rate = \"1gbit\", dealy = \"1ms\" }\n\
                bottleneck = { rate = \"10mbit\" }\n[[traffic]]\nkind = \"udp\"\nrate = \"1mbit\"\n";
    let e = crate::parse(text, "t.toml").unwrap_err();
    assert_eq!(
        (e.line, e.path.as_str()),
        (4, "topology.access.dealy"),
        "{e}"
    );
    assert!(e.message.contains("did you mean 'delay'"), "{e}");
}

/// A dumbbell with two senders, an HTB root and `filters` (TOML lines).
fn with_filters(filters: &str, traffic: &str) -> String {
    format!(
        "[scenario]\nduration = \"1s\"\n[topology]\nsenders = 2\naccess = {{ rate = \"1gbit\" }}\n\
         bottleneck = {{ rate = \"10mbit\" }}\n[policy.bottleneck.egress]\nhtb = {{ default = \"20\" }}\n\
         [[policy.bottleneck.egress.class]]\nid = \"10\"\nrate = \"5mbit\"\n\
         [[policy.bottleneck.egress.class]]\nid = \"20\"\nrate = \"5mbit\"\n{filters}{traffic}"
    )
}

fn filter(m: &str) -> String {
    format!("[[policy.bottleneck.egress.filter]]\nmatch = {m}\nclass = \"10\"\n")
}

#[test]
fn a_filter_matching_no_flow_is_a_located_warning() {
    let udp = "[[traffic]]\nkind = \"udp\"\nrate = \"1mbit\"\n";
    let text = with_filters(&filter("{ dst_port = 5001, protocol = \"udp\" }"), udp);
    let sc = crate::parse(&text, "f.toml").unwrap();
    assert_eq!(sc.warnings.len(), 1);
    let w = &sc.warnings[0];
    assert_eq!(
        (w.line, w.path.as_str()),
        (16, "policy.bottleneck.egress.filter[0]")
    );
    assert!(w.message.contains("no packet has this dst_port"), "{w}");
    // Each field alone matches something, together nothing: said so.
    let text = with_filters(&filter("{ dst_port = 5201, protocol = \"tcp\" }"), udp);
    let w = &crate::parse(&text, "f.toml").unwrap().warnings;
    assert!(
        w[0].message.contains("no packet has this protocol"),
        "{}",
        w[0]
    );
    let text = with_filters(&filter("{ dscp = \"ef\" }"), udp);
    let w = &crate::parse(&text, "f.toml").unwrap().warnings;
    assert!(w[0].message.contains("the flows use dscp 0"), "{}", w[0]);
}

#[test]
fn filters_matching_some_flow_give_no_warning() {
    let tcp = "[[traffic]]\nkind = \"tcp-bulk\"\nflows = 2\ndscp = \"ef\"\n\
               [[traffic]]\nkind = \"ping\"\n";
    // s0 = 10.0.0.1, s1 = 10.0.0.2, r1, r2, d0 = 10.0.0.5; flow 1 from port
    // 10001; ACKs from port 5201; pings are ICMP.
    for m in [
        "{ dst_port = 5201 }",
        "{ src_port = 5201, protocol = \"tcp\" }",
        "{ src_port = 10001 }",
        "{ src = \"10.0.0.2\" }",
        "{ dst = \"10.0.0.5/32\", protocol = \"tcp\" }",
        "{ protocol = \"icmp\" }",
        "{ dscp = \"ef\" }",
        "{ color = \"red\" }",
        "{ any = true }",
        "\"dport 5201 proto tcp\"",
    ] {
        let text = with_filters(&filter(m), tcp);
        let sc = crate::parse(&text, "f.toml").unwrap();
        assert!(sc.warnings.is_empty(), "{m}: {:?}", sc.warnings);
    }
    let text = with_filters(&filter("{ src = \"10.0.0.3\" }"), tcp);
    let w = &crate::parse(&text, "f.toml").unwrap().warnings;
    assert!(w[0].message.contains("no packet has this src"), "{}", w[0]);
}

#[test]
fn a_dict_scenario_error_names_the_key_path_not_a_line() {
    let e = crate::parse("[scenario]\nduration = 5\n", crate::DICT_FILE).unwrap_err();
    assert!(
        e.to_string().starts_with("<dict>: scenario.duration: "),
        "{e}"
    );
}
