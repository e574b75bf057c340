//! Builders shared by the tests of several modules.

use crate::config::*;
use qoslab_core::{Duration, Rate};

pub fn lp(bps: u64, delay: Duration) -> LinkParams {
    LinkParams {
        rate: Rate::from_bps(bps),
        delay,
        delay_reverse: None,
        loss_ppm: 0,
        queue_limit_packets: 1000,
    }
}

pub fn link(a: &str, b: &str, p: LinkParams) -> LinkSpec {
    LinkSpec {
        a: a.into(),
        b: b.into(),
        params: p,
        egress_ab: None,
        egress_ba: None,
        ingress_police_ab: None,
        ingress_police_ba: None,
    }
}

pub fn nodes(names: &[&str]) -> Vec<NodeSpec> {
    names
        .iter()
        .map(|n| NodeSpec {
            name: n.to_string(),
            timer: TimerSpec::default(),
            routes: vec![],
        })
        .collect()
}

pub fn ends(from: &str, to: &str) -> Endpoints {
    Endpoints {
        from: Some(from.into()),
        to: Some(to.into()),
        dscp: 0,
    }
}

pub fn cfg(topology: Topology, traffic: Vec<TrafficSpec>, secs: u64) -> SimConfig {
    SimConfig {
        name: "t".into(),
        duration: Duration::from_secs(secs),
        seed: 1,
        topology,
        traffic,
        record: RecordSpec::default(),
    }
}

pub fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
