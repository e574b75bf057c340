use super::*;
use qoslab_policy::spec::PolicySpec;

fn egress(text: &str) -> PolicySpec {
    import(text)
        .unwrap()
        .select(Direction::Egress, None)
        .unwrap()
        .spec
        .clone()
}

#[test]
fn htb_with_classes_leaves_and_filters() {
    let s = egress(
        "tc qdisc replace dev eth1 root handle 1:0 htb default 20\n\
         tc class add dev eth1 parent 1: classid 1:1 htb rate 10Mbit\n\
         tc class add dev eth1 parent 1:1 classid 1:10 htb rate 4mbit ceil 10mbit burst 1600 cburst 1600\n\
         tc class add dev eth1 parent 1:1 classid 1:20 htb rate 6mbit ceil 10mbit\n\
         tc qdisc add dev eth1 parent 1:20 handle 40: sfq perturb 10\n\
         tc qdisc add dev eth1 parent 1:10 bfifo limit 30kb\n\
         tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10\n",
    );
    let PolicySpec::Tree(t) = s else {
        panic!("{s:?}")
    };
    assert_eq!(t.root.kind, "htb");
    assert_eq!(
        t.root.params,
        vec![("default".to_string(), "20".to_string())]
    );
    assert_eq!(t.root.classes.len(), 3);
    let c10 = &t.root.classes[1];
    assert_eq!(c10.parent.as_deref(), Some("1"));
    assert_eq!(c10.params[0], ("rate".into(), "4mbit".into()));
    assert_eq!(c10.params[2], ("burst".into(), "1600B".into()));
    let leaf = c10.qdisc.as_ref().unwrap();
    assert_eq!(
        leaf.params,
        vec![("limit".to_string(), "30720B".to_string())]
    );
    assert_eq!(t.root.classes[2].qdisc.as_ref().unwrap().params[0].1, "10s");
    assert_eq!(t.root.filters[0].classifier, "dport 5001/0xffff");
    assert_eq!(t.root.filters[0].class, "10");
    qoslab_policy::tree::build(&t, "p", 1).unwrap();
}

#[test]
fn tbf_alone_is_a_flat_shaper_and_bps_units_warn() {
    let i = import("tc qdisc add dev eth0 root tbf rate 50Mbps burst 10kb/8 latency 20ms").unwrap();
    let PolicySpec::Shape(s) = &i.policies[0].spec else {
        panic!()
    };
    assert_eq!(s.params[0], ("rate".into(), "400mbit".into()));
    assert_eq!(s.params[1], ("burst".into(), "10240B".into()));
    assert_eq!(s.params[2], ("latency".into(), "20ms".into()));
    assert!(
        i.warnings.iter().any(|w| w.message.contains("byte units")),
        "{:?}",
        i.warnings
    );
}

#[test]
fn errors_point_at_the_token() {
    let e = import("tc qdisc add dev eth0 root tbf rate 1mbit burst 3k limt 10k").unwrap_err();
    assert_eq!((e.line, e.column, e.token.as_str()), (1, 52, "limt"), "{e}");
    let e = import("\ntc qdisc add dev eth0 root netem delay 50ms loss 1%").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("delay = \"50ms\"") && e.message.contains("loss = 0.01"),
        "{e}"
    );
    let e = import("tc qdisc add dev eth0 root cake bandwidth 1mbit").unwrap_err();
    assert_eq!(e.token, "cake");
    let e = import("tc qdisc add dev eth0 root tbf rate 1mbit burst").unwrap_err();
    assert!(e.message.contains("expected a size"), "{e}");
}

#[test]
fn ingress_police_is_an_ingress_policer() {
    let i = import(
        "tc qdisc add dev eth0 handle ffff: ingress\n\
         tc filter add dev eth0 parent ffff: protocol ip prio 1 u32 match u32 0 0 police rate 1mbit burst 10k drop flowid :1\n",
    )
    .unwrap();
    let p = i.select(Direction::Ingress, None).unwrap();
    let PolicySpec::Police(m) = &p.spec else {
        panic!()
    };
    assert_eq!(m.kind, "linux-police");
    assert!(m.params.contains(&("exceed".into(), "drop".into())));
    qoslab_policy::policy::build_policer(m, "x").unwrap();
}

#[test]
fn hfsc_curves_are_normalised() {
    let s = egress(
        "tc qdisc add dev eth0 root handle 1: hfsc default 10\n\
         tc class add dev eth0 parent 1: classid 1:10 hfsc sc rate 2mbit ul m2 4mbit\n\
         tc class add dev eth0 parent 1: classid 1:20 hfsc rt umax 1500b dmax 10ms rate 500kbit\n\
         tc class add dev eth0 parent 1: classid 1:30 hfsc rt umax 1500b dmax 60ms rate 500kbit\n",
    );
    let PolicySpec::Tree(t) = s else { panic!() };
    assert_eq!(t.root.kind, "hfsc");
    let c = &t.root.classes;
    assert_eq!(
        c[0].params[0],
        ("rt".into(), "m1 0bit d 0us m2 2mbit".into())
    );
    assert_eq!(
        c[0].params[1],
        ("ls".into(), "m1 0bit d 0us m2 2mbit".into())
    );
    assert_eq!(
        c[0].params[2],
        ("ul".into(), "m1 0bit d 0us m2 4mbit".into())
    );
    // 1500 B in 10 ms = 150000 B/s > 62500 B/s: concave, m1 = 1.2 Mbit/s.
    assert_eq!(c[1].params[0].1, "m1 1200kbit d 10000us m2 500kbit");
    // 1500 B in 60 ms = 25000 B/s < 62500: convex, d = 60000 - 24000 µs.
    assert_eq!(c[2].params[0].1, "m1 0bit d 36000us m2 500kbit");
}

#[test]
fn show_output_is_read() {
    let text = "qdisc htb 1: dev veth0 root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 ver 3.17 direct_qlen 1000\n \
                Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n \
                backlog 0b 0p requeues 0\n\
                qdisc bfifo 20: dev veth0 parent 1:20 limit 30Kb\n\
                class htb 1:20 root leaf 20: prio 0 quantum 25000 rate 2Mbit ceil 2Mbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0\n \
                lended: 0 borrowed: 0 giants: 0\n \
                tokens: 100000 ctokens: 100000\n";
    let i = import(text).unwrap();
    let PolicySpec::Tree(t) = &i.policies[0].spec else {
        panic!()
    };
    assert_eq!(
        t.root.params,
        vec![
            ("r2q".to_string(), "10".to_string()),
            ("default".to_string(), "20".to_string()),
            ("direct_qlen".to_string(), "1000".to_string())
        ]
    );
    let c = &t.root.classes[0];
    assert!(c.params.contains(&("quantum".into(), "25000".into())));
    assert!(c.params.contains(&("burst".into(), "1600B".into())));
    assert_eq!(c.qdisc.as_ref().unwrap().params[0].1, "30720B");
    assert!(i.warnings.iter().any(|w| w.message.contains("show")));
}

#[test]
fn hfsc_import_builds() {
    let s = egress(
        "tc qdisc add dev eth0 root handle 1: hfsc default 20\n\
         tc class add dev eth0 parent 1: classid 1:1 hfsc sc rate 10mbit ul rate 10mbit\n\
         tc class add dev eth0 parent 1:1 classid 1:10 hfsc rt m1 4mbit d 10ms m2 1mbit ls rate 2mbit\n\
         tc class add dev eth0 parent 1:1 classid 1:20 hfsc ls rate 8mbit\n",
    );
    let PolicySpec::Tree(t) = s else { panic!() };
    qoslab_policy::tree::build(&t, "p", 1).unwrap();
}

#[test]
fn overhead_and_atm_linklayer_reach_tbf_htb_and_police() {
    // tc-stab's per-qdisc cousins: tbf, htb classes and act_police carry
    // `overhead` and `linklayer` in their own rate tables (psched_ratecfg).
    let s = egress(
        "tc qdisc add dev eth0 root tbf rate 1mbit burst 10kb limit 30kb overhead 10 linklayer atm",
    );
    let PolicySpec::Shape(t) = &s else {
        panic!("{s:?}")
    };
    assert!(
        t.params.contains(&("overhead".into(), "10".into())),
        "{t:?}"
    );
    assert!(
        t.params.contains(&("linklayer".into(), "atm".into())),
        "{t:?}"
    );
    qoslab_policy::policy::build_shaper(t, "x").unwrap();

    let s = egress(
        "tc qdisc add dev eth0 root handle 1: htb default 10\n\
         tc class add dev eth0 parent 1: classid 1:10 htb rate 1mbit overhead 10 linklayer adsl\n",
    );
    let PolicySpec::Tree(t) = s else { panic!() };
    let c = &t.root.classes[0].params;
    assert!(c.contains(&("overhead".into(), "10".into())), "{c:?}");
    assert!(c.contains(&("linklayer".into(), "adsl".into())), "{c:?}");
    qoslab_policy::tree::build(&t, "p", 1).unwrap();

    let i = import(
        "tc qdisc add dev eth0 handle ffff: ingress\n\
         tc filter add dev eth0 parent ffff: protocol ip prio 1 u32 match u32 0 0 police rate 1mbit burst 10k overhead 4 linklayer atm drop flowid :1\n",
    )
    .unwrap();
    let PolicySpec::Police(m) = &i.select(Direction::Ingress, None).unwrap().spec else {
        panic!()
    };
    assert!(
        m.params.contains(&("linklayer".into(), "atm".into())),
        "{m:?}"
    );
    qoslab_policy::policy::build_policer(m, "x").unwrap();

    let e = import("tc qdisc add dev eth0 root tbf rate 1mbit burst 10kb limit 30kb linklayer ppp")
        .unwrap_err();
    assert!(e.message.contains("ethernet, atm or adsl"), "{e:?}");
}
