//! `[[traffic]]`: iperf3-like TCP bulk flows, request/response chunk
//! fetches over one TCP connection (`tcp-fetch`), UDP constant bit rate,
//! UDP on/off and ping probes. The keys a table may hold depend on its `kind`;
//! any other key is rejected with the nearest valid one.

use crate::reader::{Cx, Field, Result, Section};
use crate::topology::check_node;
use qoslab_core::Duration;
use qoslab_sim::config::{CcKind, Endpoints, RecoveryKind, Schedule, TcpConfig, TrafficSpec};

pub const KINDS: [&str; 5] = ["tcp-bulk", "tcp-fetch", "udp", "onoff", "ping"];

/// `tcp-fetch` defaults: the USC-NSL policing lab's client (Flach et al.,
/// SIGCOMM 2016: 5 chunks of 2 MB, one connection), a 1 s pause, and a
/// 100-byte request (a short HTTP GET).
pub const DEFAULT_FETCH_CHUNKS: u32 = 5;
pub const DEFAULT_FETCH_CHUNK_BYTES: u64 = 2_000_000;
pub const DEFAULT_FETCH_PAUSE: Duration = Duration::from_secs(1);
pub const DEFAULT_FETCH_REQUEST_BYTES: u32 = 100;

/// iperf3's UDP block size when `-l` is not given (its default for UDP is
/// the path MSS with a 1460-byte fallback; 1460 on Ethernet).
pub const DEFAULT_UDP_PAYLOAD_BYTES: u32 = 1460;
/// `ping -s` default (iputils): 56 data bytes.
pub const DEFAULT_PING_PAYLOAD_BYTES: u32 = 56;
/// `ping -i` default: one second.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(1);

const CC: [(&str, CcKind); 6] = [
    ("reno", CcKind::Reno),
    ("newreno", CcKind::NewReno),
    ("cubic", CcKind::Cubic),
    ("bbr", CcKind::Bbr),
    ("compound", CcKind::Compound),
    ("ctcp", CcKind::Compound),
];
const RECOVERY: [(&str, RecoveryKind); 3] = [
    ("reno", RecoveryKind::Reno),
    ("newreno", RecoveryKind::NewReno),
    ("sack", RecoveryKind::Sack),
];

/// Context for checking node names.
pub(crate) struct Nodes<'n> {
    pub names: &'n [String],
    pub duration: Duration,
}

pub(crate) fn traffic(
    cx: &mut Cx<'_>,
    mut t: Section<'_>,
    nodes: &Nodes<'_>,
) -> Result<TrafficSpec> {
    let kind_f = t.require(
        cx,
        "kind",
        "what to send: kind = \"tcp-bulk\", \"tcp-fetch\", \"udp\", \"onoff\" or \"ping\"",
    )?;
    let kind = kind_f.choice(cx, &KINDS)?;
    let endpoints = endpoints(cx, &mut t, nodes)?;
    let schedule = schedule(cx, &mut t, nodes)?;
    let label = match t.get(cx, "label") {
        Some(f) => f.string(cx)?,
        None => String::new(),
    };
    let flows = if kind == "ping" {
        1
    } else {
        match t.get(cx, "flows") {
            Some(f) => f.count(cx)?,
            None => 1,
        }
    };
    let spec = match kind {
        "tcp-bulk" => {
            let bytes = match t.get(cx, "bytes") {
                Some(f) => match f.size(cx)? {
                    0 => {
                        return Err(f.error(
                            cx,
                            "bytes must be above 0 (leave it out to send until stop)",
                        ))
                    }
                    n => Some(n),
                },
                None => None,
            };
            let mut tcp = tcp_config(cx, &mut t)?;
            // iperf3 writes its cookie first and sends data at TEST_RUNNING.
            tcp.app_preamble_bytes = TcpConfig::IPERF3_COOKIE_BYTES;
            TrafficSpec::TcpBulk {
                flows,
                endpoints,
                schedule,
                bytes,
                tcp,
                label,
            }
        }
        "tcp-fetch" => {
            let chunks = match t.get(cx, "chunks") {
                Some(f) => f.count(cx)?,
                None => DEFAULT_FETCH_CHUNKS,
            };
            let chunk_bytes = match t.get(cx, "chunk_size") {
                Some(f) => match f.size(cx)? {
                    0 => return Err(f.error(cx, "chunk_size must be above 0")),
                    n => n,
                },
                None => DEFAULT_FETCH_CHUNK_BYTES,
            };
            let pause = match t.get(cx, "pause") {
                Some(f) => f.time(cx)?,
                None => DEFAULT_FETCH_PAUSE,
            };
            let request_f = t.get(cx, "request_size");
            let request_bytes = match &request_f {
                Some(f) => match f.size(cx)? {
                    n @ 1..=65_495 => n as u32,
                    _ => return Err(f.error(cx, "request_size must be 1 to 65495 bytes")),
                },
                None => DEFAULT_FETCH_REQUEST_BYTES,
            };
            let tcp = tcp_config(cx, &mut t)?;
            if let Some(f) = request_f.filter(|_| request_bytes > tcp.mss) {
                return Err(f.error(
                    cx,
                    format!(
                        "request_size must fit one segment (mss = {} bytes)",
                        tcp.mss
                    ),
                ));
            }
            TrafficSpec::TcpFetch {
                flows,
                endpoints,
                schedule,
                chunks,
                chunk_bytes,
                pause,
                request_bytes,
                tcp,
                label,
            }
        }
        "udp" | "onoff" => {
            let rate_f = t.require(cx, "rate", "the sending rate, e.g. rate = \"10mbit\"")?;
            let rate = rate_f.rate(cx)?;
            if rate.bps() == 0 {
                return Err(rate_f.error(cx, "the rate must be above 0"));
            }
            let payload_bytes = payload(cx, &mut t, DEFAULT_UDP_PAYLOAD_BYTES)?;
            if kind == "udp" {
                TrafficSpec::UdpCbr {
                    flows,
                    endpoints,
                    schedule,
                    rate,
                    payload_bytes,
                    label,
                }
            } else {
                let on = positive_time(
                    cx,
                    &mut t,
                    "on",
                    "how long each burst lasts, e.g. on = \"1s\"",
                )?;
                let off = positive_time(
                    cx,
                    &mut t,
                    "off",
                    "how long each pause lasts, e.g. off = \"1s\"",
                )?;
                let exponential = match t.get(cx, "exponential") {
                    Some(f) => f.bool(cx)?,
                    None => false,
                };
                TrafficSpec::OnOff {
                    flows,
                    endpoints,
                    schedule,
                    rate,
                    payload_bytes,
                    on,
                    off,
                    exponential,
                    label,
                }
            }
        }
        _ => {
            let interval = match t.get(cx, "interval") {
                Some(f) => {
                    let d = f.time(cx)?;
                    if d == Duration::ZERO {
                        return Err(f.error(cx, "the ping interval must be above 0"));
                    }
                    d
                }
                None => DEFAULT_PING_INTERVAL,
            };
            let payload_bytes = payload(cx, &mut t, DEFAULT_PING_PAYLOAD_BYTES)?;
            TrafficSpec::Ping {
                endpoints,
                schedule,
                interval,
                payload_bytes,
                label,
            }
        }
    };
    t.finish(cx, &format!("for kind = \"{kind}\""))?;
    Ok(spec)
}

fn positive_time(
    cx: &mut Cx<'_>,
    t: &mut Section<'_>,
    key: &'static str,
    what: &str,
) -> Result<Duration> {
    let f = t.require(cx, key, what)?;
    let d = f.time(cx)?;
    if d == Duration::ZERO {
        return Err(f.error(cx, format!("{key} must be above 0")));
    }
    Ok(d)
}

/// `size` (or its iperf spelling `length`): payload bytes per packet.
fn payload(cx: &mut Cx<'_>, t: &mut Section<'_>, default: u32) -> Result<u32> {
    let Some(f) = t.get_either(cx, "size", "length")? else {
        return Ok(default);
    };
    match f.size(cx)? {
        n @ 1..=65_507 => Ok(n as u32),
        n => Err(f.error(
            cx,
            format!("the payload must be 1 to 65507 bytes (one UDP datagram), got {n}"),
        )),
    }
}

fn endpoints(cx: &mut Cx<'_>, t: &mut Section<'_>, nodes: &Nodes<'_>) -> Result<Endpoints> {
    let mut node = |key: &'static str, cx: &mut Cx<'_>| -> Result<Option<String>> {
        let Some(f) = t.get(cx, key) else {
            return Ok(None);
        };
        let name = f.string(cx)?;
        check_node(cx, &f, nodes.names, &name, f.at)?;
        Ok(Some(name))
    };
    let from = node("from", cx)?;
    let to = node("to", cx)?;
    let dscp = match t.get(cx, "dscp") {
        Some(f) => dscp(cx, &f)?,
        None => 0,
    };
    Ok(Endpoints { from, to, dscp })
}

/// One DSCP: 0..=63 or a name (`ef`, `af11`, `cs1`, `default`).
fn dscp(cx: &mut Cx<'_>, f: &Field<'_>) -> Result<u8> {
    let s = f.scalar_string(cx)?;
    let set = qoslab_core::classify::DscpSet::parse(&s).map_err(|e| f.error(cx, e.message))?;
    if set.0.count_ones() != 1 {
        return Err(f.error(
            cx,
            format!("a source sends one DSCP: 0..63, ef, afXY or csN, got '{s}'"),
        ));
    }
    Ok(set.0.trailing_zeros() as u8)
}

fn schedule(cx: &mut Cx<'_>, t: &mut Section<'_>, nodes: &Nodes<'_>) -> Result<Schedule> {
    let start_f = t.get(cx, "start");
    let start = match &start_f {
        Some(f) => {
            let s = f.time(cx)?;
            if s >= nodes.duration {
                return Err(f.error(
                    cx,
                    "starts at or after the end of the run (scenario.duration)",
                ));
            }
            s
        }
        None => Duration::ZERO,
    };
    let stagger = match t.get(cx, "stagger") {
        Some(f) => f.time(cx)?,
        None => Duration::ZERO,
    };
    let stop = match t.get(cx, "stop") {
        Some(f) => {
            let s = f.time(cx)?;
            if s <= start {
                return Err(f.error(cx, "stop must come after start"));
            }
            Some(s)
        }
        None => None,
    };
    Ok(Schedule {
        start,
        stagger,
        stop,
    })
}

/// The OS `profile` and any field override.
fn tcp_config(cx: &mut Cx<'_>, t: &mut Section<'_>) -> Result<TcpConfig> {
    let mut c = match t.get(cx, "profile") {
        Some(f) => {
            let name = f.choice(cx, &TcpConfig::PROFILES)?;
            TcpConfig::profile(name).expect("PROFILES names profiles")
        }
        None => TcpConfig::profile("linux").expect("linux is a profile"),
    };
    if let Some(f) = t.get(cx, "cc") {
        let names: Vec<&'static str> = CC.iter().map(|(n, _)| *n).collect();
        let n = f.choice(cx, &names)?;
        c.cc = CC.iter().find(|(k, _)| *k == n).expect("chosen from CC").1;
    }
    if let Some(f) = t.get(cx, "recovery") {
        let names: Vec<&'static str> = RECOVERY.iter().map(|(n, _)| *n).collect();
        let n = f.choice(cx, &names)?;
        c.recovery = RECOVERY.iter().find(|(k, _)| *k == n).expect("chosen").1;
    }
    if let Some(f) = t.get(cx, "sack") {
        c.sack = f.bool(cx)?;
    }
    if let Some(f) = t.get(cx, "mss") {
        c.mss = bounded(cx, &f, 88, 65_495, "an MSS of 88 to 65495 bytes")?;
    }
    if let Some(f) = t.get(cx, "header_bytes") {
        c.header_bytes = bounded(
            cx,
            &f,
            20,
            120,
            "20 to 120 header bytes (40, or 52 with timestamps)",
        )?;
    }
    if let Some(f) = t.get(cx, "initial_window") {
        c.initial_window_segments = f.count(cx)?;
    }
    if let Some(f) = t.get(cx, "initial_ssthresh") {
        c.initial_ssthresh_bytes = if f.is_str()
            && ["infinite", "inf", "none"].contains(&f.str(cx, "")?.to_ascii_lowercase().as_str())
        {
            None
        } else {
            Some(f.size(cx).map_err(|_| {
                f.error(cx, "expected a size such as \"64kb\" or \"infinite\" (RFC 5681's arbitrarily high)")
            })?)
        };
    }
    let mut window = t.get_either(cx, "window", "awnd")?;
    let window_given = window.is_some();
    if let Some(f) = &window {
        if f.is_str() && f.str(cx, "")?.eq_ignore_ascii_case("auto") {
            // Linux's receive-buffer autotuning (the linux profiles'
            // default); other stacks' autotuning is not modelled.
            if !c.profile.starts_with("linux") {
                return Err(f.error(
                    cx,
                    format!(
                        "window = \"auto\" is Linux's receive-buffer autotuning; profile \
                         {} needs a window size",
                        c.profile
                    ),
                ));
            }
            c.rcvbuf_autotune = true;
            window = None;
        } else {
            let w = f.size(cx).map_err(|_| {
                f.error(
                    cx,
                    "expected a size such as \"64kb\" or \"auto\" (Linux autotuning)",
                )
            })?;
            if w == 0 {
                return Err(f.error(cx, "the receive window must be above 0"));
            }
            c.receive_window_bytes = w;
            // An explicit buffer locks it (SO_RCVBUF: SOCK_RCVBUF_LOCK).
            c.rcvbuf_autotune = false;
        }
    }
    if let Some(f) = t.get(cx, "rcvbuf") {
        // SO_RCVBUF as setsockopt takes it (iperf3 -w): Linux turns it into
        // a locked buffer and a window of its own (tcp/rcvbuf.rs).
        if !c.profile.starts_with("linux") {
            return Err(f.error(
                cx,
                format!(
                    "rcvbuf is a Linux socket buffer (SO_RCVBUF); profile {} needs `window`",
                    c.profile
                ),
            ));
        }
        if window_given {
            return Err(f.error(
                cx,
                "give `rcvbuf` (the socket buffer) or `window` (the advertised window), not both",
            ));
        }
        let b = f.size(cx)?;
        if b < c.mss as u64 {
            return Err(f.error(
                cx,
                format!("rcvbuf must hold at least one MSS ({} B)", c.mss),
            ));
        }
        c.rcvbuf_lock_bytes = Some(b);
        c.rcvbuf_autotune = false;
        c.receive_window_bytes = qoslab_sim::tcp::locked_window_bytes(&c, b);
    }
    if let Some(f) = t.get(cx, "sndbuf") {
        let b = f.size(cx)?;
        if b < c.mss as u64 {
            return Err(f.error(
                cx,
                format!("sndbuf must hold at least one MSS ({} B)", c.mss),
            ));
        }
        c.send_buffer_bytes = Some(b);
    }
    let scaling = t.get(cx, "window_scaling");
    if let Some(f) = &scaling {
        c.window_scaling = f.bool(cx)?;
    }
    // RFC 7323 §2.2: without the window scale option the 16-bit field caps
    // the window at 65535 B. Never cap silently: say where the two meet.
    if !c.window_scaling && c.receive_window_bytes > 65_535 {
        let msg = format!(
            "a receive window of {} B needs window_scaling = true (without it TCP \
             advertises at most 65535 B, RFC 7323 §2.2)",
            c.receive_window_bytes
        );
        return Err(match window.as_ref().or(scaling.as_ref()) {
            Some(f) => f.error(cx, msg),
            None => cx.err(t.at, &format!("{}.window", t.path), msg),
        });
    }
    for (key, slot) in [
        ("min_rto", &mut c.min_rto),
        ("max_rto", &mut c.max_rto),
        ("initial_rto", &mut c.initial_rto),
    ] {
        if let Some(f) = t.get(cx, key) {
            let d = f.time(cx)?;
            if d == Duration::ZERO {
                return Err(f.error(cx, format!("{key} must be above 0")));
            }
            *slot = d;
        }
    }
    if let Some(f) = t.get(cx, "delayed_ack") {
        c.delayed_ack = if f.is_bool() {
            match f.bool(cx)? {
                false => None,
                true => Some(c.delayed_ack.unwrap_or(Duration::from_ms(40))),
            }
        } else {
            let d = f.time(cx).map_err(|_| {
                f.error(cx, "expected a delayed-ACK timeout such as \"40ms\", or false to ACK every segment at once")
            })?;
            (d != Duration::ZERO).then_some(d)
        };
    }
    if let Some(f) = t.get(cx, "ack_every") {
        c.ack_every_segments = f.count(cx)?;
    }
    if let Some(f) = t.get(cx, "quickack") {
        c.quickack_segments = f.u32(cx)?;
    }
    for (key, slot) in [
        ("pacing", &mut c.pacing),
        ("frto", &mut c.frto),
        ("rack", &mut c.rack),
        ("tlp", &mut c.tlp),
        ("limited_transmit", &mut c.limited_transmit),
        ("rescue_retransmit", &mut c.rescue_retransmit),
        ("rto_clears_sack", &mut c.rto_clears_sack),
        ("slow_start_after_idle", &mut c.slow_start_after_idle),
        ("linux_rto", &mut c.linux_rto),
        ("quickack_on_out_of_order", &mut c.quickack_on_out_of_order),
        ("mark_lost_retrans", &mut c.mark_lost_retrans),
        ("rate_halving", &mut c.rate_halving),
        ("fack", &mut c.fack),
    ] {
        if let Some(f) = t.get(cx, key) {
            *slot = f.bool(cx)?;
        }
    }
    if c.min_rto > c.max_rto {
        let at = t.at;
        return Err(cx.err(
            at,
            &format!("{}.min_rto", t.path),
            "min_rto exceeds max_rto",
        ));
    }
    if c.recovery == RecoveryKind::Sack && !c.sack {
        let at = t.at;
        return Err(cx.err(
            at,
            &format!("{}.recovery", t.path),
            "recovery = \"sack\" needs sack = true (give recovery = \"newreno\" without SACK)",
        ));
    }
    Ok(c)
}

fn bounded(cx: &Cx<'_>, f: &Field<'_>, lo: u64, hi: u64, what: &str) -> Result<u32> {
    match f.size(cx) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n as u32),
        _ => Err(f.error(cx, format!("expected {what}"))),
    }
}

/// `d` as the shortest exact spelling a scenario takes (`"200ms"`, `"1s"`).
fn time_text(d: Duration) -> String {
    let ns = d.as_ns();
    for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns != 0 && ns % per == 0 {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

/// The value every TCP key of a `[[traffic]]` table takes under OS
/// `profile` when the table does not set it, as the scenario would spell
/// it (the scenario reference's profile table is generated from this, so
/// it cannot drift from [`TcpConfig::profile`]). `None` for an unknown
/// profile.
pub fn tcp_profile_defaults(profile: &str) -> Option<Vec<(&'static str, String)>> {
    let c = TcpConfig::profile(profile)?;
    let cc = CC.iter().find(|(_, k)| *k == c.cc).map_or("?", |(n, _)| n);
    let recovery = RECOVERY
        .iter()
        .find(|(_, k)| *k == c.recovery)
        .map_or("?", |(n, _)| n);
    let b = |v: bool| v.to_string();
    Some(vec![
        ("cc", cc.to_string()),
        ("recovery", recovery.to_string()),
        ("sack", b(c.sack)),
        ("mss", format!("{}B", c.mss)),
        ("header_bytes", c.header_bytes.to_string()),
        ("initial_window", c.initial_window_segments.to_string()),
        (
            "initial_ssthresh",
            c.initial_ssthresh_bytes
                .map_or("infinite".to_string(), |v| format!("{v}B")),
        ),
        (
            "window",
            if c.rcvbuf_autotune {
                "auto".to_string()
            } else {
                format!("{}B", c.receive_window_bytes)
            },
        ),
        (
            "rcvbuf",
            c.rcvbuf_lock_bytes
                .map_or("none".to_string(), |v| format!("{v}B")),
        ),
        (
            "sndbuf",
            c.send_buffer_bytes
                .map_or("unlimited".to_string(), |v| format!("{v}B")),
        ),
        ("window_scaling", b(c.window_scaling)),
        ("min_rto", time_text(c.min_rto)),
        ("max_rto", time_text(c.max_rto)),
        ("initial_rto", time_text(c.initial_rto)),
        (
            "delayed_ack",
            c.delayed_ack.map_or("false".to_string(), time_text),
        ),
        ("ack_every", c.ack_every_segments.to_string()),
        ("quickack", c.quickack_segments.to_string()),
        ("pacing", b(c.pacing)),
        ("frto", b(c.frto)),
        ("rack", b(c.rack)),
        ("tlp", b(c.tlp)),
        ("limited_transmit", b(c.limited_transmit)),
        ("rescue_retransmit", b(c.rescue_retransmit)),
        ("rto_clears_sack", b(c.rto_clears_sack)),
        ("slow_start_after_idle", b(c.slow_start_after_idle)),
        ("linux_rto", b(c.linux_rto)),
        ("quickack_on_out_of_order", b(c.quickack_on_out_of_order)),
        ("mark_lost_retrans", b(c.mark_lost_retrans)),
        ("rate_halving", b(c.rate_halving)),
        ("fack", b(c.fack)),
    ])
}

#[cfg(test)]
mod profile_tests {
    use super::*;

    /// Every profile's defaults, written back into a scenario as overrides,
    /// parse and give the profile's own `TcpConfig`: the table is complete
    /// and spelled as the reader reads it.
    #[test]
    fn profile_defaults_round_trip_through_the_reader() {
        for p in TcpConfig::PROFILES {
            let d = tcp_profile_defaults(p).expect("a profile");
            let mut t = format!(
                "[scenario]\nduration = \"1s\"\n[topology]\naccess = {{ rate = \"1gbit\" }}\n\
                 bottleneck = {{ rate = \"10mbit\" }}\n[[traffic]]\nkind = \"tcp-bulk\"\n\
                 profile = \"{p}\"\n"
            );
            for (k, v) in &d {
                if (*k == "sndbuf" && v == "unlimited") || (*k == "rcvbuf" && v == "none") {
                    continue;
                }
                let quoted = matches!(v.as_str(), "true" | "false") || v.parse::<u64>().is_ok();
                if quoted {
                    t.push_str(&format!("{k} = {v}\n"));
                } else {
                    t.push_str(&format!("{k} = \"{v}\"\n"));
                }
            }
            let sc = crate::parse(&t, "p.toml").unwrap_or_else(|e| panic!("{p}: {e}\n{t}"));
            let TrafficSpec::TcpBulk { tcp, .. } = &sc.config.traffic[0] else {
                panic!("tcp-bulk")
            };
            let mut want = TcpConfig::profile(p).unwrap();
            want.app_preamble_bytes = TcpConfig::IPERF3_COOKIE_BYTES; // tcp-bulk is iperf3
            assert_eq!(*tcp, want, "{p}");
        }
    }
}
