use super::*;
use qoslab_policy::spec::PolicySpec;

fn egress(text: &str, platform: Platform) -> PolicySpec {
    import(text, platform)
        .unwrap()
        .select(Direction::Egress, None)
        .unwrap()
        .spec
        .clone()
}

#[test]
fn police_in_class_default_is_a_flat_policer() {
    let s = egress(
        "policy-map Policer_20\n class class-default\n  police 20000000\n!\ninterface GigabitEthernet0/0/1\n service-policy output Policer_20\n",
        Platform::IosXe,
    );
    let PolicySpec::Police(m) = s else {
        panic!("{s:?}")
    };
    assert_eq!(m.kind, "police");
    assert_eq!(m.params, vec![("cir".to_string(), "20mbit".to_string())]);
}

#[test]
fn police_multi_line_actions_and_two_rate() {
    let s = egress(
        "policy-map P\n class class-default\n  police cir 1000000 bc 31250 pir 2000000 be 62500\n   conform-action transmit\n   exceed-action set-dscp-transmit af12\n   violate-action drop\n",
        Platform::Ios,
    );
    let PolicySpec::Police(m) = s else {
        panic!("{s:?}")
    };
    assert_eq!(m.kind, "trtcm");
    assert!(
        m.params.contains(&("exceed".into(), "set-dscp:12".into())),
        "{m:?}"
    );
    assert!(m.params.contains(&("pbs".into(), "62500B".into())), "{m:?}");
    qoslab_policy::policy::build_policer(&m, "p").unwrap();
}

#[test]
fn shape_with_queue_limit_and_fair_queue() {
    let s = egress(
        "policy-map Shaper_20\n class class-default\n  shape average 20000000\n  queue-limit 200 packets\n",
        Platform::IosXe,
    );
    let PolicySpec::Shape(sh) = s else {
        panic!("{s:?}")
    };
    assert_eq!(
        sh.params,
        vec![
            ("cir".to_string(), "20mbit".to_string()),
            ("profile".to_string(), "ios-xe".to_string()),
            ("queue_limit".to_string(), "200".to_string())
        ]
    );
    let s = egress(
        "class-map match-any shaper_class\n match any\npolicy-map Shaper\n class shaper_class\n  shape average 20000000\n  queue-limit 200 packets\n  fair-queue\n",
        Platform::IosXe,
    );
    let PolicySpec::Tree(t) = s else {
        panic!("{s:?}")
    };
    assert_eq!(t.root.kind, "shape");
    let c = t.root.child.as_ref().unwrap();
    assert_eq!(c.kind, "fair-queue");
    assert_eq!(
        c.params,
        vec![("queue_limit".to_string(), "200".to_string())]
    );
    qoslab_policy::tree::build(&t, "p", 1).unwrap();
}

#[test]
fn classic_ios_shapes_class_default_into_wfq() {
    let i = import(
        "policy-map Shape\n class class-default\n  shape average 1000000\n",
        Platform::Ios,
    )
    .unwrap();
    let PolicySpec::Tree(t) = &i.policies[0].spec else {
        panic!()
    };
    assert_eq!(t.root.child.as_ref().unwrap().kind, "fair-queue");
    assert!(i.warnings.iter().any(|w| w.message.contains("profile ios")));
}

#[test]
fn llq_cbwfq_becomes_htb_with_filters() {
    let text = "class-map match-any VOICE\n match dscp ef\nclass-map match-all WEB\n match access-group 101\n\
                access-list 101 permit tcp any any eq 80\n\
                policy-map WAN\n class VOICE\n  priority 1000\n class WEB\n  bandwidth percent 30\n  random-detect dscp-based\n  random-detect dscp af11 20 40 10\n  random-detect dscp af12 15 40 10\n  random-detect dscp af13 10 40 10\n class class-default\n  fair-queue\n\
                interface Serial0/0\n bandwidth 10000\n service-policy output WAN\n";
    let i = import(text, Platform::Ios).unwrap();
    let p = i.select(Direction::Egress, Some("Serial0/0")).unwrap();
    let PolicySpec::Tree(t) = &p.spec else {
        panic!()
    };
    assert_eq!(t.root.kind, "htb");
    assert_eq!(t.root.classes.len(), 4);
    assert_eq!(t.root.filters[0].classifier, "dscp 46");
    assert_eq!(t.root.filters[1].classifier, "dport 80 proto tcp");
    let voice = &t.root.classes[1];
    assert!(voice.params.contains(&("ceil".into(), "1mbit".into())));
    let web = &t.root.classes[2];
    assert!(web.params.contains(&("rate".into(), "3mbit".into())));
    assert_eq!(web.qdisc.as_ref().unwrap().kind, "wred");
    qoslab_policy::tree::build(t, "p", 1).unwrap();
}

#[test]
fn errors_name_line_column_token() {
    let e = import(
        "policy-map P\n class class-default\n  shape average 1000000\n  set dscp ef\n",
        Platform::Ios,
    )
    .unwrap_err();
    assert_eq!((e.line, e.column, e.token.as_str()), (4, 3, "set"), "{e}");
    let e = import("policy-map P\n class VOICE\n", Platform::Ios).unwrap_err();
    assert_eq!((e.line, e.token.as_str()), (2, "VOICE"), "{e}");
    let e = import(
        "policy-map P\n class class-default\n  police cir percent 10\n",
        Platform::Ios,
    )
    .unwrap_err();
    assert!(e.message.contains("bandwidth"), "{e}");
    let e = import(
        "policy-map P\n class class-default\n  police 8000 conform-action set-qos-transmit 3\n",
        Platform::Ios,
    )
    .unwrap_err();
    assert_eq!(e.token, "set-qos-transmit");
}

#[test]
fn percent_uses_the_interface_bandwidth_and_child_policy_nests() {
    let text = "policy-map CHILD\n class class-default\n  fair-queue\npolicy-map PARENT\n class class-default\n  shape average percent 50\n  service-policy CHILD\ninterface Gi0/1\n bandwidth 20000\n service-policy output PARENT\n";
    let s = egress(text, Platform::IosXe);
    let PolicySpec::Tree(t) = s else { panic!() };
    assert_eq!(t.root.params[0], ("cir".into(), "10mbit".into()));
    assert_eq!(t.root.child.as_ref().unwrap().kind, "fair-queue");
}

#[test]
fn a_running_config_with_other_blocks_imports() {
    let text = "hostname R1\n!\nclass-map match-any VOICE\n match dscp ef\npolicy-map P\n class VOICE\n  police 64000\n class class-default\n  police 1000000\nrouter ospf 1\n network 10.0.0.0 0.255.255.255 area 0\ninterface Gi0/1\n ip address 10.0.0.1 255.255.255.0\n service-policy output P\nline vty 0 4\n login\n";
    let i = import(text, Platform::IosXe).unwrap();
    let p = i.select(Direction::Egress, None).unwrap();
    let PolicySpec::Tree(t) = &p.spec else {
        panic!()
    };
    assert_eq!(t.root.kind, "drr");
    assert_eq!(
        t.root.classes[0].police.as_ref().unwrap().params[0].1,
        "64kbit"
    );
    assert!(i
        .warnings
        .iter()
        .any(|w| w.message.contains("were not read")));
}
