//! tc / MQC text embedded in a scenario's policy table.

use crate::parse;
use qoslab_policy::spec::PolicySpec;

const HEAD: &str = "[scenario]\nname = \"x\"\nduration = \"1s\"\n\n[topology]\nsenders = 1\nreceivers = 1\naccess = { rate = \"1gbit\", delay = \"1ms\" }\nbottleneck = { rate = \"1gbit\", delay = \"1ms\" }\n\n";
const TAIL: &str = "\n[[traffic]]\nkind = \"tcp-bulk\"\nflows = 1\n";

fn scenario(policy: &str) -> String {
    format!("{HEAD}{policy}{TAIL}")
}

fn egress(text: &str) -> PolicySpec {
    let s = parse(&scenario(text), "s.toml").unwrap_or_else(|e| panic!("{e}"));
    match s.config.topology {
        qoslab_sim::config::Topology::Dumbbell(d) => d.bottleneck_egress.unwrap(),
        _ => panic!(),
    }
}

#[test]
fn tc_and_mqc_text_give_the_policy_of_the_table_form() {
    let tc = egress(
        "[policy.bottleneck.egress]\ntc = \"\"\"\ntc qdisc add dev eth0 root handle 1: htb default 20\ntc class add dev eth0 parent 1: classid 1:20 htb rate 2mbit ceil 2mbit burst 1600 cburst 1600\n\"\"\"\n",
    );
    let PolicySpec::Tree(t) = tc else { panic!() };
    assert_eq!(t.root.kind, "htb");
    assert_eq!(t.root.classes[0].id, "20");
    let m = egress(
        "[policy.bottleneck.egress]\nplatform = \"ios-xe\"\nmqc = \"\"\"\npolicy-map P\n class class-default\n  shape average 20000000\n  queue-limit 200 packets\n\"\"\"\n",
    );
    let PolicySpec::Shape(s) = m else { panic!() };
    assert_eq!(s.kind, "shape");
    assert!(s.params.contains(&("queue_limit".into(), "200".into())));
    let i = parse(
        &scenario("[policy.access.ingress]\ntc = \"\"\"\ntc qdisc add dev eth0 ingress\ntc filter add dev eth0 parent ffff: u32 match u32 0 0 police rate 1mbit burst 10k drop\n\"\"\"\n"),
        "s.toml",
    )
    .unwrap();
    let qoslab_sim::config::Topology::Dumbbell(d) = i.config.topology else {
        panic!()
    };
    assert_eq!(d.ingress_police.unwrap().kind, "linux-police");
}

#[test]
fn errors_in_the_text_are_located_at_their_file_line() {
    // HEAD has 10 lines; the table header is line 11, `tc = """` line 12,
    // the text's line 2 is the file's line 14.
    let text = scenario(
        "[policy.bottleneck.egress]\ntc = \"\"\"\ntc qdisc add dev eth0 root handle 1: htb default 20\ntc class add dev eth0 parent 1: classid 1:20 htb rate 2mbit cel 2mbit\n\"\"\"\n",
    );
    let e = parse(&text, "s.toml").unwrap_err();
    assert_eq!((e.line, e.column), (14, 61), "{e}");
    assert!(e.message.contains("'cel'"), "{e}");
    let e = parse(
        &scenario("[policy.bottleneck.egress]\nmqc = \"\"\"\npolicy-map P\n class class-default\n  police 8000\n\"\"\"\n"),
        "s.toml",
    )
    .unwrap_err();
    assert!(e.message.contains("platform"), "{e}");
    let e = parse(
        &scenario("[policy.bottleneck.egress]\ntc = \"tc qdisc add dev eth0 root tbf rate 1mbit\"\nplatfrm = 1\n"),
        "s.toml",
    )
    .unwrap_err();
    assert!(
        e.message.contains("platfrm") && e.message.contains("platform"),
        "{e}"
    );
}

/// Import → rendered TOML → scenario → built policy: `describe` shows
/// the numbers tc or the router printed for the same configuration.
fn round_trip(from: &str, text: &str, platform: &str) -> Vec<(String, String)> {
    let imported = match from {
        "tc" => qoslab_import::tc::import(text),
        _ => {
            qoslab_import::mqc::import(text, qoslab_import::mqc::Platform::parse(platform).unwrap())
        }
    }
    .unwrap();
    let p = imported
        .select(qoslab_import::Direction::Egress, None)
        .unwrap();
    let toml =
        qoslab_import::render::render(p, &imported.warnings, from, "policy.bottleneck.egress");
    let spec = egress(&toml);
    assert_eq!(spec, p.spec, "the scenario reads back the imported spec");
    qoslab_import::render::derived(&spec).unwrap().0
}

fn get<'a>(d: &'a [(String, String)], k: &str) -> &'a str {
    d.iter()
        .find(|(x, _)| x == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{k} in {d:?}"))
}

#[test]
fn round_trips_show_what_tc_and_ios_show() {
    // tc-tbf(8): limit = rate × latency + buffer = 22500 B/s × 20 ms + 1540.
    let d = round_trip(
        "tc",
        "tc qdisc add dev eth1 root tbf rate 180kbit latency 20ms buffer 1540",
        "",
    );
    assert_eq!((get(&d, "limit"), get(&d, "burst")), ("1990B", "1540B"));
    // `tc -s -d class show` prints quantum 25000 for a 2 Mbit/s class, r2q 10.
    let d = round_trip(
        "tc",
        "tc qdisc replace dev eth1 root handle 1:0 htb default 20\ntc class add dev eth1 parent 1: classid 1:20 htb rate 2Mbit ceil 2Mbit burst 1600 cburst 1600",
        "",
    );
    let class = get(&d, "class");
    assert!(
        class.contains("quantum=25000") && class.contains("burst=1600B cburst=1600B"),
        "{class}"
    );
    // ISR 4000 (habr.com/ru/post/317048): "shape (average) cir 20000000, bc 80000, be 80000", queue-limit 83.
    let d = round_trip(
        "mqc",
        "policy-map S\n class class-default\n  shape average 20000000\n",
        "ios-xe",
    );
    assert_eq!(
        (
            get(&d, "bc_bits"),
            get(&d, "be_bits"),
            get(&d, "queue_limit")
        ),
        ("80000", "80000", "83")
    );
    // 3725 (packetlife.net, 2008): Sustain 25000, Excess 25000, Interval 25 ms, Increment 3125 bytes.
    let d = round_trip(
        "mqc",
        "policy-map S\n class class-default\n  shape average 1000000\n",
        "ios",
    );
    assert_eq!(
        (
            get(&d, "bc_bits"),
            get(&d, "be_bits"),
            get(&d, "tc_ms"),
            get(&d, "increment_bytes")
        ),
        ("25000", "25000", "25", "3125")
    );
    // police 20000000 on the ISR 4000: bc 625000 bytes; police cir 1000000 on the 3725: bc 31250.
    let d = round_trip(
        "mqc",
        "policy-map P\n class class-default\n  police 20000000\n",
        "ios-xe",
    );
    assert!(get(&d, "bc").starts_with("625000B"), "{d:?}");
    let d = round_trip(
        "mqc",
        "policy-map P\n class class-default\n  police cir 1000000\n",
        "ios",
    );
    assert!(get(&d, "bc").starts_with("31250B"), "{d:?}");
}

#[test]
fn a_stab_beside_mqc_sizes_the_imported_policy_and_is_refused_beside_tc() {
    let m = egress(
        "[policy.bottleneck.egress]\nplatform = \"ios-xe\"\nstab = { overhead = 14 }\nmqc = \"\"\"\npolicy-map P\n class class-default\n  police 20000000\n\"\"\"\n",
    );
    let PolicySpec::Sized { stab, inner } = m else {
        panic!("{m:?}")
    };
    assert_eq!(stab.pkt_len(1500), 1514);
    assert!(matches!(*inner, PolicySpec::Police(_)), "{inner:?}");
    let e = parse(
        &scenario("[policy.bottleneck.egress]\ntc = \"tc qdisc add dev eth0 root tbf rate 1mbit burst 10kb latency 50ms\"\nstab = { overhead = 14 }\n"),
        "s.toml",
    )
    .unwrap_err();
    assert!(e.message.contains("stab beside tc"), "{e}");
    assert_eq!(e.line, 13, "{e}");
}
