//! What `qoslab emulate` must set up for a scenario: the host namespaces,
//! the flows (same ids and order as the simulator's `FlowResult`s) with
//! the Linux settings each needs, the policies (with their `tc` form when
//! the kernel has the qdisc) and the links.
//!
//! A TCP setting real Linux cannot be given per namespace, route or
//! socket is refused as a located [`ScenarioError`]: the flow's
//! `TcpConfig` is compared with the `linux` profile, field by field; a
//! difference is accepted only where there is a Linux knob for it:
//! - `cc` reno / newreno → `reno`, `cubic`, `bbr` (`TCP_CONGESTION`);
//! - `sack`, `window_scaling`, `frto`, `rack`, `tlp` → sysctls
//!   `net.ipv4.tcp_sack`, `tcp_window_scaling`, `tcp_frto`,
//!   `tcp_recovery`, `tcp_early_retrans` (per network namespace);
//! - timestamps via `header_bytes` 52 / 40 → `tcp_timestamps`;
//! - `rcvbuf` (SO_RCVBUF) → iperf3 `-w`, which sets SO_RCVBUF and
//!   SO_SNDBUF to that value; a fixed `window` (an advertised window,
//!   which no Linux knob sets) and `sndbuf` are refused; `mss` → iperf3
//!   `-M`;
//! - `initial_window`, `initial_ssthresh`, `min_rto` → `ip route` metrics
//!   `initcwnd`, `ssthresh`, `rto_min` (ip-route(8)).

use crate::conditioner::{self, KernelQdisc};
use qoslab_scenario::{Scenario, ScenarioError};
use qoslab_sim::config::{CcKind, RecoveryKind, TcpConfig, TrafficSpec};
use qoslab_sim::net::Net;
use qoslab_sim::{PlannedFlow, SimError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpPlan {
    /// `cubic`, `reno` or `bbr`.
    pub cc: &'static str,
    pub sack: bool,
    pub timestamps: bool,
    pub window_scaling: bool,
    /// iperf3 `-w`: SO_RCVBUF and SO_SNDBUF as setsockopt takes them
    /// (the scenario's `rcvbuf`). `None`: leave Linux's buffer
    /// autotuning alone.
    pub socket_buffer_bytes: Option<u64>,
    pub mss: u32,
    pub initial_window_segments: u32,
    pub initial_ssthresh_bytes: Option<u64>,
    pub min_rto_ns: u64,
    pub frto: bool,
    pub rack: bool,
    pub tlp: bool,
    /// The simulator has no ECN: always off.
    pub ecn: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdpPlan {
    pub rate_bps: u64,
    pub payload_bytes: u32,
    pub on_ns: Option<u64>,
    pub off_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PingPlan {
    pub interval_ns: u64,
    pub payload_bytes: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowPlan {
    pub flow: PlannedFlow,
    pub bytes: Option<u64>,
    pub dscp: u8,
    pub tcp: Option<TcpPlan>,
    pub udp: Option<UdpPlan>,
    pub ping: Option<PingPlan>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyPlan {
    pub name: String,
    /// The link direction it conditions (`None`: an ingress policer
    /// shared by several directions).
    pub link: Option<String>,
    pub kind: String,
    pub kernel: Option<KernelQdisc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkPlan {
    pub name: String,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub loss_ppm: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub record_interval_ns: u64,
    /// Host nodes (namespaces to create), in node order.
    pub hosts: Vec<String>,
    pub flows: Vec<FlowPlan>,
    pub policies: Vec<PolicyPlan>,
    pub links: Vec<LinkPlan>,
}

fn located(sc: &Scenario, path: String, message: String) -> ScenarioError {
    let e = SimError::Config { path, message };
    sc.locate(&e).expect("a Config error is always located")
}

/// The host nodes (shared with the simulator's captures, which address
/// hosts the same way).
pub use qoslab_sim::addr::hosts;

/// Plans `sc`, or says (located in the file) why it cannot be emulated.
pub fn plan(sc: &Scenario) -> Result<Plan, ScenarioError> {
    let cfg = &sc.config;
    let sim_err = |e: SimError| match sc.locate(&e) {
        Some(l) => l,
        None => located(sc, "scenario".into(), e.to_string()),
    };
    let planned = qoslab_sim::plan_flows(cfg).map_err(sim_err)?;
    let net = Net::build(&cfg.topology).map_err(sim_err)?;
    let cond = conditioner::build(cfg, &net, &[]).map_err(sim_err)?;
    let mut flows = Vec::with_capacity(planned.len());
    for f in planned.iter() {
        let ti = f.traffic_index as usize;
        let t = &cfg.traffic[ti];
        let (mut bytes, mut tcp, mut udp, mut ping) = (None, None, None, None);
        let dscp = match t {
            TrafficSpec::TcpBulk {
                bytes: b,
                tcp: c,
                endpoints,
                ..
            } => {
                bytes = *b;
                tcp = Some(linux_tcp(sc, ti, c)?);
                endpoints.dscp
            }
            TrafficSpec::TcpFetch { .. } => {
                return Err(located(
                    sc,
                    format!("traffic[{ti}].kind"),
                    "tcp-fetch cannot be emulated yet (iperf3 has no request/response mode); \
                     use tcp-bulk"
                        .into(),
                ));
            }
            TrafficSpec::UdpCbr {
                rate,
                payload_bytes,
                endpoints,
                ..
            } => {
                udp = Some(UdpPlan {
                    rate_bps: rate.bps(),
                    payload_bytes: *payload_bytes,
                    on_ns: None,
                    off_ns: None,
                });
                endpoints.dscp
            }
            TrafficSpec::OnOff {
                rate,
                payload_bytes,
                on,
                off,
                exponential,
                endpoints,
                ..
            } => {
                if *exponential {
                    return Err(located(
                        sc,
                        format!("traffic[{ti}].exponential"),
                        "exponential on/off periods cannot be emulated (iperf3 has no such \
                         mode); use fixed periods"
                            .into(),
                    ));
                }
                udp = Some(UdpPlan {
                    rate_bps: rate.bps(),
                    payload_bytes: *payload_bytes,
                    on_ns: Some(on.as_ns()),
                    off_ns: Some(off.as_ns()),
                });
                endpoints.dscp
            }
            TrafficSpec::Ping {
                interval,
                payload_bytes,
                endpoints,
                ..
            } => {
                ping = Some(PingPlan {
                    interval_ns: interval.as_ns(),
                    payload_bytes: *payload_bytes,
                });
                endpoints.dscp
            }
        };
        flows.push(FlowPlan {
            flow: f.clone(),
            bytes,
            dscp,
            tcp,
            udp,
            ping,
        });
    }
    let policies = cond
        .policies
        .iter()
        .zip(&cond.policy_dir)
        .zip(&cond.kernel)
        .map(|((p, d), k)| PolicyPlan {
            name: p.res.name.clone(),
            link: d.map(|d| net.dir_name(d)),
            kind: p.res.kind.clone(),
            kernel: k.clone(),
        })
        .collect();
    let links = cond
        .dirs
        .iter()
        .map(|d| LinkPlan {
            name: d.name.clone(),
            rate_bps: d.link.rate.bps(),
            delay_ns: d.link.delay_ns,
            loss_ppm: d.link.loss_ppm,
        })
        .collect();
    Ok(Plan {
        name: cfg.name.clone(),
        seed: cfg.seed,
        duration_ns: cfg.duration.as_ns(),
        record_interval_ns: cfg.record.interval.as_ns(),
        hosts: hosts(&cfg.topology, &net, &planned),
        flows,
        policies,
        links,
    })
}

/// The Linux form of traffic `ti`'s TCP settings, or the first setting
/// Linux cannot be given, located at its key (or at `profile` when the
/// OS profile is what set it).
pub fn linux_tcp(sc: &Scenario, ti: usize, c: &TcpConfig) -> Result<TcpPlan, ScenarioError> {
    let linux = TcpConfig::profile("linux").expect("linux is a profile");
    let profile = TcpConfig::profile(&c.profile);
    let refuse = |key: &str, same_as_profile: bool, what: String| {
        let (path, why) = if same_as_profile && c.profile != "linux" {
            (
                format!("traffic[{ti}].profile"),
                format!("profile '{}' sets {what}", c.profile),
            )
        } else {
            (format!("traffic[{ti}].{key}"), what)
        };
        Err(located(
            sc,
            path,
            format!("{why}, which Linux cannot do (qoslab emulate runs real Linux TCP)"),
        ))
    };
    let from_profile = |f: &dyn Fn(&TcpConfig) -> bool| profile.as_ref().is_some_and(f);
    let cc = match c.cc {
        CcKind::Cubic => "cubic",
        CcKind::Bbr => "bbr",
        CcKind::Reno | CcKind::NewReno => "reno",
        CcKind::Compound => {
            return refuse(
                "cc",
                from_profile(&|p| p.cc == CcKind::Compound),
                "cc = compound (Compound TCP)".into(),
            )
        }
    };
    let recovery_ok = match c.recovery {
        RecoveryKind::Sack => c.sack,
        // Without SACK, Linux recovers NewReno-style (tcp_input.c,
        // tcp_try_undo_partial / tcp_add_reno_sack).
        RecoveryKind::NewReno => !c.sack,
        RecoveryKind::Reno => false,
    };
    if !recovery_ok {
        return refuse(
            "recovery",
            from_profile(&|p| p.recovery == c.recovery),
            format!(
                "recovery = {:?} with sack = {} (Linux recovers with SACK when it is on, NewReno otherwise)",
                c.recovery, c.sack
            )
            .to_ascii_lowercase(),
        );
    }
    // The forwarder always counts whole Ethernet frames (14 B more than the IP
    // packet), as tc does on a veth; a scenario that already counts them in the
    // simulator (66 = 52 + 14, 54 = 40 + 14) means the same real TCP.
    let timestamps = match c.header_bytes {
        52 | 66 => true,
        40 | 54 => false,
        n => {
            return refuse(
                "header_bytes",
                from_profile(&|p| p.header_bytes == n),
                format!(
                    "header_bytes = {n} (Linux sends 52 with timestamps or 40 without; \
                     66 or 54 with the Ethernet header counted)"
                ),
            )
        }
    };
    macro_rules! same {
        ($field:ident, $key:literal, $show:expr) => {
            if c.$field != linux.$field {
                return refuse(
                    $key,
                    from_profile(&|p| p.$field == c.$field),
                    format!("{} = {}", $key, $show(&c.$field)),
                );
            }
        };
    }
    let dur = |d: &qoslab_core::Duration| d.to_string();
    let opt_dur = |d: &Option<qoslab_core::Duration>| d.map_or("off".into(), |d| d.to_string());
    let num = |n: &u32| n.to_string();
    let flag = |b: &bool| b.to_string();
    same!(linux_rto, "linux_rto", flag);
    same!(initial_rto, "initial_rto", dur);
    same!(max_rto, "max_rto", dur);
    same!(delayed_ack, "delayed_ack", opt_dur);
    same!(ack_every_segments, "ack_every", num);
    same!(quickack_segments, "quickack", num);
    same!(limited_transmit, "limited_transmit", flag);
    same!(rescue_retransmit, "rescue_retransmit", flag);
    same!(rto_clears_sack, "rto_clears_sack", flag);
    // Behaviours of older kernels (the linux-3.x profile) that this kernel's
    // TCP no longer has and no sysctl brings back.
    same!(quickack_on_out_of_order, "quickack_on_out_of_order", flag);
    same!(mark_lost_retrans, "mark_lost_retrans", flag);
    same!(tso_defer, "tso_defer", flag);
    same!(cwnd_limited_by_flight, "cwnd_limited_by_flight", flag);
    // Linux 2.6 (the linux-2.6 profile): PRR replaced rate-halving in 3.2 and
    // FACK was removed in 4.15; no sysctl brings either back.
    same!(rate_halving, "rate_halving", flag);
    same!(fack, "fack", flag);
    same!(rcvbuf_fixup, "rcvbuf_fixup", flag);
    // A fixed advertised window: Linux derives its window from the socket
    // buffer's memory (tcp_select_initial_window, tcp_win_from_space), so
    // iperf3 -w N advertises about 1.23 N, not N. Say which key means it.
    if !c.rcvbuf_autotune && c.rcvbuf_lock_bytes.is_none() {
        let w = c.receive_window_bytes;
        return refuse(
            "window",
            from_profile(&|p| !p.rcvbuf_autotune),
            format!(
                "window = {w} B fixes the advertised window (iperf3 -w sets the socket buffer, \
                 from which Linux advertises about 1.23 times as much: give rcvbuf = \
                 \"{}B\" for about this window)",
                w * 256 / (2 * u64::from(c.rcv_scaling_ratio.max(1)))
            ),
        );
    }
    // iperf3 -w sets SO_SNDBUF to the SO_RCVBUF value; it has no option
    // for a sender buffer of its own, and the simulator's `sndbuf` counts
    // payload, not the kernel's doubled memory.
    if let Some(b) = c.send_buffer_bytes {
        return refuse(
            "sndbuf",
            from_profile(&|p| p.send_buffer_bytes == c.send_buffer_bytes),
            format!(
                "sndbuf = {b} B (iperf3 has no separate send-buffer option; with rcvbuf its -w \
                 also sets SO_SNDBUF to that value)"
            ),
        );
    }
    if c.pacing && c.cc != CcKind::Bbr {
        return refuse(
            "pacing",
            from_profile(&|p| p.pacing),
            format!("pacing = true with cc = {cc} (Linux paces only BBR without the fq qdisc)"),
        );
    }
    Ok(TcpPlan {
        cc,
        sack: c.sack,
        timestamps,
        window_scaling: c.window_scaling,
        socket_buffer_bytes: c.rcvbuf_lock_bytes,
        mss: c.mss,
        initial_window_segments: c.initial_window_segments,
        initial_ssthresh_bytes: c.initial_ssthresh_bytes,
        min_rto_ns: c.min_rto.as_ns(),
        frto: c.frto,
        rack: c.rack,
        tlp: c.tlp,
        ecn: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[scenario]
duration = "3s"
[topology]
senders = 2
receivers = 1
bottleneck = { rate = "10mbit", delay = "20ms" }
access = { rate = "1gbit", delay = "1ms" }
[policy.bottleneck.egress]
shape = { kind = "tbf", rate = "10mbit", burst = "10kb", latency = "50ms" }
"#;

    fn sc(traffic: &str) -> Scenario {
        qoslab_scenario::parse(&format!("{BASE}{traffic}"), "x.toml").unwrap()
    }

    #[test]
    fn dumbbell_plan_has_hosts_flows_policies_and_links() {
        let s = sc(r#"
[[traffic]]
kind = "tcp-bulk"
flows = 2
rcvbuf = "1mb"
[[traffic]]
kind = "ping"
from = "s0"
to = "d0"
interval = "100ms"
"#);
        let p = plan(&s).unwrap();
        assert_eq!(p.hosts, ["s0", "s1", "d0"]);
        assert_eq!(p.flows.len(), 3);
        assert_eq!(p.flows[1].flow.from, "s1");
        assert_eq!(p.flows[2].flow.traffic_index, 1);
        let t = p.flows[0].tcp.as_ref().unwrap();
        assert_eq!((t.cc, t.timestamps, t.mss), ("cubic", true, 1448));
        assert_eq!(t.socket_buffer_bytes, Some(1024 * 1024));
        assert_eq!(p.policies.len(), 1);
        assert_eq!(p.policies[0].name, "r1->r2 egress");
        assert_eq!(p.policies[0].link.as_deref(), Some("r1->r2"));
        let Some(KernelQdisc::Root { qdisc, args }) = &p.policies[0].kernel else {
            panic!("{:?}", p.policies[0].kernel)
        };
        assert_eq!(qdisc, "tbf");
        assert_eq!(args[..2], ["rate".to_string(), "10mbit".to_string()]);
        assert_eq!(p.links.len(), 8);
    }

    #[test]
    fn explicit_topology_hosts_are_the_nodes_traffic_names() {
        let text = r#"
[scenario]
duration = "1s"
[[node]]
name = "a"
[[node]]
name = "r"
[[node]]
name = "b"
[[node]]
name = "c"
[[link]]
a = "a"
b = "r"
rate = "100mbit"
delay = "1ms"
[[link]]
a = "r"
b = "b"
rate = "10mbit"
delay = "5ms"
[[link]]
a = "r"
b = "c"
rate = "10mbit"
delay = "5ms"
[policy.r-b.egress]
fifo = { limit = "20p" }
[[traffic]]
kind = "ping"
from = "b"
to = "a"
"#;
        let s = qoslab_scenario::parse(text, "e.toml").unwrap();
        let p = plan(&s).unwrap();
        assert_eq!(p.hosts, ["a", "b"]);
        assert_eq!(p.policies.len(), 1);
        assert_eq!(p.policies[0].link.as_deref(), Some("r->b"));
        assert_eq!(
            p.policies[0].kernel,
            Some(KernelQdisc::Root {
                qdisc: "pfifo".into(),
                args: vec!["limit".into(), "20".into()]
            })
        );
    }

    #[test]
    fn windows_profile_and_unmappable_keys_are_refused_where_they_are() {
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nprofile = \"windows10\"\n");
        let e = plan(&s).unwrap_err();
        assert_eq!(e.path, "traffic[0].profile");
        assert!(e.message.contains("Linux cannot"), "{e}");
        assert_eq!(e.line, 13, "{e}");
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nprofile = \"linux-3.x\"\n");
        let e = plan(&s).unwrap_err();
        assert_eq!(e.path, "traffic[0].profile");
        assert!(e.message.contains("linux-3.x"), "{e}");
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nmark_lost_retrans = true\n");
        assert_eq!(plan(&s).unwrap_err().path, "traffic[0].mark_lost_retrans");
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nprofile = \"linux-2.6\"\n");
        let e = plan(&s).unwrap_err();
        assert_eq!(e.path, "traffic[0].profile");
        assert!(e.message.contains("linux-2.6"), "{e}");
        for key in ["rate_halving", "fack"] {
            let s = sc(&format!("[[traffic]]\nkind = \"tcp-bulk\"\n{key} = true\n"));
            let e = plan(&s).unwrap_err();
            assert_eq!(e.path, format!("traffic[0].{key}"), "{e}");
            assert_eq!(e.line, 13, "{e}");
        }
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nmax_rto = \"60s\"\n");
        let e = plan(&s).unwrap_err();
        assert_eq!(e.path, "traffic[0].max_rto");
        assert_eq!(e.line, 13, "{e}");
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\ncc = \"reno\"\nsack = false\nrecovery = \"newreno\"\n");
        assert_eq!(plan(&s).unwrap().flows[0].tcp.as_ref().unwrap().cc, "reno");
    }

    #[test]
    fn rcvbuf_is_iperf3_w_and_a_fixed_window_or_sndbuf_is_refused() {
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nrcvbuf = \"32kb\"\n");
        let t = plan(&s).unwrap().flows[0].tcp.clone().unwrap();
        assert_eq!(t.socket_buffer_bytes, Some(32_768));
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nwindow = \"64kb\"\n");
        let e = plan(&s).unwrap_err();
        assert_eq!(e.path, "traffic[0].window");
        assert!(e.to_string().contains("rcvbuf = \"53092B\""), "{e}");
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\nrcvbuf = \"64kb\"\nsndbuf = \"64kb\"\n");
        let e = plan(&s).unwrap_err();
        assert_eq!(e.path, "traffic[0].sndbuf");
        assert_eq!(e.line, 14, "{e}");
        let s = sc("[[traffic]]\nkind = \"tcp-bulk\"\n");
        assert_eq!(
            plan(&s).unwrap().flows[0]
                .tcp
                .clone()
                .unwrap()
                .socket_buffer_bytes,
            None
        );
    }
}
