//! The simulator: builds the model from a [`SimConfig`] and runs the event
//! loop.
//!
//! Data flow of one packet: a source allocates it in the arena and hands it
//! to its node → the route gives the outgoing direction → egress policer
//! (drop / remark) → queue or shaper → transmitter (serialization) → wire
//! (loss, propagation) → `Arrive` at the next node → ingress policer → either
//! delivered to the destination's endpoint or routed on.
//!
//! **Order of events at one nanosecond** (issue 12, sixth round; the keys
//! are [`crate::engine`]'s): (0) transmitters freeing up (`TxDone`), then
//! shaper wake-ups (`Wake`), by direction index; (1) TCP timers, by
//! endpoint slot; (2) arrivals (`Arrive`, one per wire), in an order drawn
//! per nanosecond from a hash of (time, direction); (3) everything else in
//! the order it was scheduled. A transmission that ends at `T` has ended
//! for every packet handed to its direction at `T`. With this rule a plain
//! FIFO's departures are computed when it takes a packet
//! ([`Link::computed`]: no `TxDone` per packet, drops and backlog as with
//! one), and a TBF whose head will not conform when the current
//! transmission ends arms its wake-up at once (`fold_tbf_wake`); the
//! tests run whole scenarios both ways and compare every result field.
//!
//! **Carried hops** (issue 12): a packet put on a wire whose far end
//! would pass it straight on to a direction that wire alone feeds is
//! carried there at once (`carry_hop`: one event fewer per such hop,
//! results identical).

use crate::arena::Arena;
use crate::capture::{CaptureSink, Point, Taps};
use crate::config::{PolicySpec, SimConfig, TrafficSpec};
use crate::engine::{rank_arrive, rank_tx, EventQueue};
use crate::link::{Link, NEVER_NS, NO_FEEDER};
use crate::net::{cfg_err, Net, Routes, NO_ROUTE};
use crate::policy::{self, EgressQueue, Policy};
use crate::result::{Series, SimResult};
use crate::stats::{self, FlowStat, Proto};
use crate::tcp::{AppLimit, TcpHeader, TcpReceiver, TcpSender};
use crate::timer::{fire_time_ns, lateness_ns};
use crate::traffic::bulk::{IoBuf, Side, TcpConn};
use crate::traffic::fetch::{self, Fetch};
use crate::traffic::ping::PingClock;
use crate::traffic::udp::UdpClock;
use crate::traffic::IP_UDP_HEADER_BYTES;
use crate::{Progress, SimError};
use qoslab_core::packet::FiveTuple;
use qoslab_core::queue::{Fifo, FifoLimit};
use qoslab_core::rng::Rng;
use qoslab_core::{Action, Color, Instant, Packet};

/// How often the progress callback runs (events).
const PROGRESS_EVERY: u64 = 1 << 18;
/// The largest routing table (node x flow endpoint, 4 bytes each) a run may build.
const MAX_ROUTE_BYTES: u64 = 1_000_000_000;
/// A packet that has crossed this many nodes is dropped (a routing loop).
const MAX_HOPS: u8 = 64;
/// RNG stream bases: link directions, traffic sources, congestion control.
const STREAM_LINK: u64 = 0x1_0000;
const STREAM_SOURCE: u64 = 0x2_0000_0000;
const STREAM_CC: u64 = 0x3_0000_0000;
const STREAM_TREE: u64 = 0x4_0000_0000;
const STREAM_TIMER: u64 = 0x5_0000_0000;

/// What a packet is, for the endpoint that receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Udp,
    PingRequest,
    PingReply,
    /// TCP segment toward the receiver (data, SYN).
    TcpToReceiver,
    /// TCP segment toward the sender (ACK, SYN-ACK).
    TcpToSender,
    /// A `tcp-fetch` request (client → server); `seq` = chunk number.
    FetchRequest,
}

/// A packet in flight, as the capture taps see it: `Hot` and its TCP
/// header (kept apart in the engine, see `Pkts`).
#[derive(Clone, Copy, Debug)]
pub struct Pkt {
    pub src: u32,
    pub dst: u32,
    pub flow: u32,
    pub kind: Kind,
    pub hops: u8,
    pub dscp: u8,
    pub color: Color,
    pub size_bytes: u32,
    /// Payload bytes delivered to the application on arrival.
    pub payload_bytes: u32,
    /// Departure time at the source (ping RTT).
    pub sent_ns: u64,
    pub seq: u32,
    pub tcp: TcpHeader,
}

impl Pkt {
    /// The packet as conditioners see it (see `Hot::core`).
    #[inline]
    pub fn core(&self, id: u32) -> Packet {
        self.hot().core(id)
    }

    fn hot(&self) -> Hot {
        Hot {
            src: self.src,
            dst: self.dst,
            flow: self.flow,
            kind: self.kind,
            hops: self.hops,
            dscp: self.dscp,
            color: self.color,
            size_bytes: self.size_bytes,
            payload_bytes: self.payload_bytes,
            sent_ns: self.sent_ns,
            seq: self.seq,
        }
    }
}

/// The fields of a packet that routing, queues and policers read (40 B;
/// [`Pkt`] without its TCP header).
#[derive(Clone, Copy, Debug)]
struct Hot {
    src: u32,
    dst: u32,
    flow: u32,
    kind: Kind,
    hops: u8,
    dscp: u8,
    color: Color,
    size_bytes: u32,
    payload_bytes: u32,
    sent_ns: u64,
    seq: u32,
}

/// Packets in flight: the hot fields in one arena, the TCP headers (about
/// 110 B, read only by the receiving endpoint) in a vector beside it under
/// the same slot number. Every hop reads the hot part; with thousands of
/// packets on the wires at 10 Gbit/s, 160-byte slots made each hop a
/// cache miss (issue 12).
#[derive(Debug, Default)]
struct Pkts {
    hot: Arena<Hot>,
    tcp: Vec<TcpHeader>,
}

impl Pkts {
    #[inline]
    fn alloc(&mut self, p: Pkt) -> u32 {
        self.alloc_parts(p.hot(), &p.tcp)
    }
    /// [`Pkts::alloc`] from its two parts: the header is copied once,
    /// into its slot (issue 12: 110 B per segment).
    #[inline]
    fn alloc_parts(&mut self, hot: Hot, tcp: &TcpHeader) -> u32 {
        let id = self.hot.alloc(hot);
        match self.tcp.get_mut(id as usize) {
            Some(h) => *h = *tcp,
            None => {
                debug_assert_eq!(id as usize, self.tcp.len());
                self.tcp.push(*tcp);
            }
        }
        id
    }
    #[inline]
    fn get(&self, id: u32) -> &Hot {
        self.hot.get(id)
    }
    #[inline]
    fn get_mut(&mut self, id: u32) -> &mut Hot {
        self.hot.get_mut(id)
    }
    #[inline]
    fn tcp(&self, id: u32) -> &TcpHeader {
        &self.tcp[id as usize]
    }
    #[inline]
    fn free(&mut self, id: u32) {
        self.hot.free(id)
    }
    /// The whole packet (for a capture tap).
    fn full(&self, id: u32) -> Pkt {
        let h = self.get(id);
        Pkt {
            src: h.src,
            dst: h.dst,
            flow: h.flow,
            kind: h.kind,
            hops: h.hops,
            dscp: h.dscp,
            color: h.color,
            size_bytes: h.size_bytes,
            payload_bytes: h.payload_bytes,
            sent_ns: h.sent_ns,
            seq: h.seq,
            tcp: *self.tcp(id),
        }
    }
    #[cfg(test)]
    fn live(&self) -> usize {
        self.hot.live()
    }
}

impl Hot {
    /// The packet as conditioners see it. The 5-tuple is synthetic but
    /// stable: node `n` is 10.0.x.y with x.y = n + 1, the flow picks the
    /// source port, the service port is iperf3's 5201 (ICMP: ports 0).
    ///
    /// Read from [`TUPLE_BY_KIND`] rather than a `match`: every hop builds
    /// this, and a jump on the kind, which alternates between data and ACKs,
    /// was 2.4 mispredicted indirect branches per bottleneck packet at
    /// 100 Mbit/s (cachegrind; issue 12).
    #[inline]
    fn core(&self, id: u32) -> Packet {
        let t = TUPLE_BY_KIND[self.kind as usize];
        let flow_port = 10_000u16.wrapping_add(self.flow as u16);
        let (protocol, sport, dport) = (
            t.protocol,
            (flow_port & t.sport_flow) | t.sport,
            (flow_port & t.dport_flow) | t.dport,
        );
        Packet {
            id: id as u64,
            flow: self.flow,
            size_bytes: self.size_bytes,
            dscp: self.dscp,
            color: self.color,
            tuple: FiveTuple {
                src_addr: 0x0a00_0000 | (self.src + 1),
                dst_addr: 0x0a00_0000 | (self.dst + 1),
                src_port: sport,
                dst_port: dport,
                protocol,
            },
        }
    }
}

/// How [`Hot::core`] makes a packet's protocol and ports from its kind:
/// a port is the flow's port where its mask is all ones, else the fixed
/// value (iperf3's 5201, or 0 for ICMP).
#[derive(Clone, Copy)]
struct TupleRule {
    protocol: u8,
    sport_flow: u16,
    sport: u16,
    dport_flow: u16,
    dport: u16,
}

/// [`TupleRule`] by `Kind as usize` (the order of [`Kind`]'s variants).
const TUPLE_BY_KIND: [TupleRule; 6] = {
    const fn r(protocol: u8, s_flow: bool, sport: u16, d_flow: bool, dport: u16) -> TupleRule {
        TupleRule {
            protocol,
            sport_flow: if s_flow { 0xffff } else { 0 },
            sport,
            dport_flow: if d_flow { 0xffff } else { 0 },
            dport,
        }
    }
    let mut t = [r(0, false, 0, false, 0); 6];
    t[Kind::Udp as usize] = r(17, true, 0, false, 5201);
    t[Kind::PingRequest as usize] = r(1, false, 0, false, 0);
    t[Kind::PingReply as usize] = r(1, false, 0, false, 0);
    t[Kind::TcpToReceiver as usize] = r(6, true, 0, false, 5201);
    t[Kind::TcpToSender as usize] = r(6, false, 5201, true, 0);
    t[Kind::FetchRequest as usize] = r(6, false, 5201, true, 0);
    t
};

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    TxDone(u32),
    /// The head of direction `d`'s wire (`Link::in_flight`) arrives.
    Arrive(u32),
    Wake(u32),
    Source(u32),
    TcpStart(u32),
    TcpStop(u32),
    TcpTimer(u32, Side),
    /// The client of `tcp-fetch` connection `c` sends its next request.
    FetchRequest(u32),
    /// Connection `c`'s request for chunk `k` may need sending again
    /// (attempt `n`).
    FetchRetry(u32, u32, u32),
    Sample,
}

enum Clock {
    Udp(UdpClock),
    Ping(PingClock),
}

struct Source {
    flow: u32,
    clock: Clock,
    size_bytes: u32,
    payload_bytes: u32,
    kind: Kind,
    /// Sequence number of the send scheduled next (ping).
    next_seq: u32,
}

/// Network-level counters (conservation checks, debugging).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetCounters {
    pub created: u64,
    pub delivered: u64,
    pub dropped_policy: u64,
    pub lost_link: u64,
    pub dropped_loop: u64,
}

/// How to build the connections of one `[[traffic]]` TCP entry, and a
/// sender as it is before it starts (what the cwnd series shows for a
/// connection not started yet).
struct TcpRecipe {
    /// Index of the `[[traffic]]` entry.
    spec: usize,
    tcp: crate::config::TcpConfig,
    app: AppLimit,
    fresh: TcpSender,
    /// A `tcp-fetch` entry's request/response schedule, copied into each
    /// connection when it starts.
    fetch: Option<Box<Fetch>>,
}

/// A TCP connection: its endpoints once started, else only where they come
/// from (16 bytes).
struct ConnSlot {
    conn: Option<Box<TcpConn>>,
    flow: u32,
    recipe: u32,
}

impl ConnSlot {
    /// The started connection (events only exist for started ones).
    #[inline]
    fn get(&self) -> &TcpConn {
        self.conn
            .as_deref()
            .expect("a TCP event before its connection started")
    }
    #[inline]
    fn get_mut(&mut self) -> &mut TcpConn {
        self.conn
            .as_deref_mut()
            .expect("a TCP event before its connection started")
    }
}

pub struct Sim {
    duration_ns: u64,
    name: String,
    seed: u64,
    record: crate::config::RecordSpec,
    node_names: Vec<String>,
    links: Vec<Link>,
    routes: Routes,
    policies: Vec<Policy>,
    pkts: Pkts,
    q: EventQueue<Ev>,
    now_ns: u64,
    flows: Vec<FlowStat>,
    sources: Vec<Source>,
    /// TCP connections; the endpoints of each are built when it starts, so
    /// a flow that has not started holds only its slot (issue 12: idle flows
    /// small, 100,000 flows well under 1 GB).
    conns: Vec<ConnSlot>,
    /// Per `[[traffic]]` TCP entry: what its connections are built from.
    tcp_recipes: Vec<TcpRecipe>,
    io: IoBuf,
    series: Series,
    /// Scratch: packets a queue dropped, waiting to be freed.
    dropped: Vec<qoslab_core::Dropped>,
    /// Per `[[traffic]]` entry: the DSCP its packets leave with
    /// (`Endpoints::dscp`) and its flows' label.
    spec_dscp: Vec<u8>,
    spec_label: Vec<String>,
    pub counters: NetCounters,
    events: u64,
    /// `TxDone` events that found another `TxDone` live (see
    /// [`Link::tx_done_at_ns`]); each costs one heap pop and nothing else.
    stale_events: u64,
    /// The events by kind (`events` and `stale_events` are their sums).
    by_kind: crate::result::EventCounts,
    /// Capture taps (`None`: no capture requested, nothing recorded).
    taps: Option<Box<Taps>>,
    /// TBF wake-ups armed when a transmission starts instead of a
    /// `TxDone` that would find the head not conforming
    /// (`fold_tbf_wake`); off only in the tests that compare with a
    /// `TxDone` per packet.
    fold_tbf_wakes: bool,
    /// Packets carried across idle hops fed by one wire (`carry_hop`); off
    /// only in the tests that compare with an arrival per hop.
    carry_hops: bool,
    /// Every delivery (time, flow, wire bytes), for the tests' window checks.
    #[cfg(test)]
    pub deliveries: Vec<(u64, u32, u32)>,
}

/// Flow `flow`'s congestion control, seeded from the run's seed.
fn cc_for(
    tcp: &crate::config::TcpConfig,
    seed: u64,
    flow: u32,
) -> Option<Box<dyn crate::cc::CongestionControl>> {
    let cc_seed = Rng::new(seed, STREAM_CC + flow as u64).next_u64();
    let cubic = crate::cc::CubicConfig {
        reno_estimate_counts_acks: tcp.cubic_reno_estimate_counts_acks,
        slow_start_through_ssthresh: tcp.slow_start_through_ssthresh,
        ..Default::default()
    };
    crate::cc::build_for(tcp.cc, cc_seed, cubic)
}

/// A connection's sender counters; zero before it started (a new sender's).
fn conn_stats(c: &ConnSlot) -> crate::tcp::SenderStats {
    c.conn
        .as_ref()
        .map_or_else(Default::default, |x| x.sender.stats())
}

fn ns(d: qoslab_core::Duration) -> u64 {
    d.as_ns()
}

impl Sim {
    /// Validates `cfg` and builds the model.
    pub fn new(cfg: &SimConfig) -> Result<Sim, SimError> {
        if cfg.duration.as_ns() == 0 {
            return Err(cfg_err("duration", "must be > 0"));
        }
        if stats::wants_samples(&cfg.record) && cfg.record.interval.as_ns() == 0 {
            return Err(cfg_err("record.interval", "must be > 0"));
        }
        let net = Net::build(&cfg.topology)?;
        let node_names: Vec<String> = net.nodes.iter().map(|n| n.name.clone()).collect();
        let (links, policies) = build_links(cfg, &net)?;

        let mut sim = Sim {
            duration_ns: cfg.duration.as_ns(),
            name: cfg.name.clone(),
            seed: cfg.seed,
            record: cfg.record,
            node_names,
            links,
            routes: Routes::compute(&net, &[]),
            policies,
            pkts: Pkts::default(),
            q: EventQueue::new(),
            now_ns: 0,
            flows: Vec::new(),
            sources: Vec::new(),
            conns: Vec::new(),
            tcp_recipes: Vec::new(),
            io: IoBuf::default(),
            series: Series::default(),
            dropped: Vec::new(),
            spec_dscp: Vec::new(),
            spec_label: Vec::new(),
            counters: NetCounters::default(),
            events: 0,
            stale_events: 0,
            by_kind: Default::default(),
            taps: None,
            fold_tbf_wakes: true,
            carry_hops: true,
            #[cfg(test)]
            deliveries: Vec::new(),
        };
        for l in &mut sim.links {
            l.computed = l.can_compute_departures();
        }
        let pairs = sim.add_traffic(cfg, &net)?;
        let dsts: Vec<u32> = pairs.iter().flat_map(|&(_, a, b)| [a, b]).collect();
        sim.check_memory(cfg, &net, &dsts)?;
        sim.routes = Routes::compute(&net, &dsts);
        let mut feeders = Feeders::new(sim.links.len());
        for &(i, a, b) in &pairs {
            for (x, y) in [(a, b), (b, a)] {
                let path = sim
                    .routes
                    .path(&net, x, y)
                    .map_err(|m| cfg_err(format!("traffic[{i}]"), m))?;
                feeders.add_path(&path);
            }
        }
        feeders.apply(&mut sim.links);
        if stats::wants_samples(&sim.record) {
            let iv = sim.record.interval.as_ns();
            if iv <= sim.duration_ns {
                sim.q.schedule(iv, Ev::Sample);
            }
        }
        Ok(sim)
    }

    /// Refuses, before anything big is allocated, a run whose routing table
    /// or recorded series would not fit in memory (the process would abort
    /// part-way otherwise), saying what to change.
    fn check_memory(&self, cfg: &SimConfig, net: &Net, dsts: &[u32]) -> Result<(), SimError> {
        let mut uniq = dsts.to_vec();
        uniq.sort_unstable();
        uniq.dedup();
        let route_bytes = (net.nodes.len() as u64)
            .saturating_mul(uniq.len() as u64)
            .saturating_mul(4);
        if route_bytes > MAX_ROUTE_BYTES {
            return Err(cfg_err(
                "traffic",
                format!(
                    "{} nodes with {} flow endpoints need a {} routing table (limit {}): \
                     use fewer hosts or fewer distinct endpoints",
                    net.nodes.len(),
                    uniq.len(),
                    stats::fmt_bytes(route_bytes),
                    stats::fmt_bytes(MAX_ROUTE_BYTES)
                ),
            ));
        }
        let series = stats::interval_series_bytes(
            &self.record,
            self.duration_ns,
            self.flows.len() as u64,
            self.conns.len() as u64,
            self.policies.len() as u64,
        );
        if series > stats::MAX_RECORD_BYTES {
            return Err(cfg_err(
                "record.interval",
                format!(
                    "recording every {} for {} would take about {} of memory (limit {}): \
                     raise record.interval, record fewer series or shorten the run",
                    self.record.interval,
                    cfg.duration,
                    stats::fmt_bytes(series),
                    stats::fmt_bytes(stats::MAX_RECORD_BYTES)
                ),
            ));
        }
        for (i, t) in cfg.traffic.iter().enumerate() {
            let TrafficSpec::Ping { interval, .. } = t else {
                continue;
            };
            let probes = self.duration_ns / interval.as_ns().max(1);
            let bytes = probes.saturating_mul(stats::PING_ROW_BYTES);
            if probes > u64::from(u32::MAX) || (self.record.ping && bytes > stats::MAX_RECORD_BYTES)
            {
                return Err(cfg_err(
                    format!("traffic[{i}].interval"),
                    format!(
                        "a ping every {interval} for {} is {probes} probes, too many to record \
                         ({}, limit {}): raise the interval",
                        cfg.duration,
                        stats::fmt_bytes(bytes),
                        stats::fmt_bytes(stats::MAX_RECORD_BYTES)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Expands the traffic specs into flows and sources; returns
    /// (spec index, from, to) of every flow for route checks.
    fn add_traffic(
        &mut self,
        cfg: &SimConfig,
        net: &Net,
    ) -> Result<Vec<(usize, u32, u32)>, SimError> {
        let mut pairs = Vec::new();
        for (i, t) in cfg.traffic.iter().enumerate() {
            let path = |f: &str| format!("traffic[{i}].{f}");
            let (flows, endpoints, schedule, label) = match t {
                TrafficSpec::TcpBulk {
                    flows,
                    endpoints,
                    schedule,
                    label,
                    ..
                }
                | TrafficSpec::TcpFetch {
                    flows,
                    endpoints,
                    schedule,
                    label,
                    ..
                }
                | TrafficSpec::UdpCbr {
                    flows,
                    endpoints,
                    schedule,
                    label,
                    ..
                }
                | TrafficSpec::OnOff {
                    flows,
                    endpoints,
                    schedule,
                    label,
                    ..
                } => (*flows, endpoints, schedule, label),
                TrafficSpec::Ping {
                    endpoints,
                    schedule,
                    label,
                    ..
                } => (1, endpoints, schedule, label),
            };
            if flows == 0 {
                return Err(cfg_err(path("flows"), "must be at least 1"));
            }
            let total = self.flows.len() as u64 + u64::from(flows);
            if total > stats::MAX_FLOWS {
                return Err(cfg_err(
                    path("flows"),
                    format!(
                        "{total} flows in all is more than the {} one run can hold in memory",
                        stats::MAX_FLOWS
                    ),
                ));
            }
            let resolve =
                |name: &Option<String>, field: &str, k: u32, dumbbell_prefix: &str, count: u32| {
                    match name {
                        Some(n) => net
                            .node_index(n)
                            .ok_or_else(|| cfg_err(path(field), format!("unknown node '{n}'"))),
                        None => match &cfg.topology {
                            crate::config::Topology::Dumbbell(_) => net
                                .node_index(&format!("{dumbbell_prefix}{}", k % count))
                                .ok_or_else(|| cfg_err(path(field), "no such dumbbell host")),
                            crate::config::Topology::Explicit(_) => Err(cfg_err(
                                path(field),
                                "an explicit topology needs the node named",
                            )),
                        },
                    }
                };
            let (ns_, nr) = match &cfg.topology {
                crate::config::Topology::Dumbbell(d) => (d.senders.max(1), d.receivers.max(1)),
                crate::config::Topology::Explicit(_) => (1, 1),
            };
            if endpoints.dscp > 63 {
                return Err(cfg_err(
                    path("dscp"),
                    format!("{} is above 63 (6 bits)", endpoints.dscp),
                ));
            }
            self.spec_dscp.push(endpoints.dscp);
            self.spec_label.push(if label.is_empty() {
                default_label(t)
            } else {
                label.clone()
            });
            for k in 0..flows {
                let from = resolve(&endpoints.from, "from", k, "s", ns_)?;
                let to = resolve(&endpoints.to, "to", k, "d", nr)?;
                if from == to {
                    return Err(cfg_err(path("to"), "a flow from a node to itself"));
                }
                let start = ns(schedule.start)
                    .saturating_add(ns(schedule.stagger).saturating_mul(k as u64));
                let stop = schedule.stop.map_or(u64::MAX, ns);
                let flow_id = self.flows.len() as u32;
                pairs.push((i, from, to));
                match t {
                    TrafficSpec::UdpCbr {
                        rate,
                        payload_bytes,
                        ..
                    }
                    | TrafficSpec::OnOff {
                        rate,
                        payload_bytes,
                        ..
                    } => {
                        if rate.bps() == 0 {
                            return Err(cfg_err(path("rate"), "must be > 0"));
                        }
                        check_payload(*payload_bytes, &path("payload_bytes"))?;
                        let clock = match t {
                            TrafficSpec::OnOff {
                                on,
                                off,
                                exponential,
                                ..
                            } => {
                                if on.as_ns() == 0 {
                                    return Err(cfg_err(path("on"), "must be > 0"));
                                }
                                UdpClock::on_off(
                                    start,
                                    rate.bps(),
                                    *payload_bytes,
                                    ns(*on),
                                    ns(*off),
                                    *exponential,
                                    Rng::new(cfg.seed, STREAM_SOURCE + flow_id as u64),
                                )
                            }
                            _ => UdpClock::cbr(start, rate.bps(), *payload_bytes),
                        };
                        let f = FlowStat::new(Proto::Udp, i as u32, from, to, start, stop);
                        self.add_source(f, Clock::Udp(clock), *payload_bytes, Kind::Udp);
                    }
                    TrafficSpec::Ping {
                        interval,
                        payload_bytes,
                        ..
                    } => {
                        if interval.as_ns() == 0 {
                            return Err(cfg_err(path("interval"), "must be > 0"));
                        }
                        check_payload(*payload_bytes, &path("payload_bytes"))?;
                        let f = FlowStat::new(Proto::Ping, i as u32, from, to, start, stop);
                        let clock = Clock::Ping(PingClock::new(start, ns(*interval)));
                        self.add_source(f, clock, *payload_bytes, Kind::PingRequest);
                    }
                    TrafficSpec::TcpBulk { .. } | TrafficSpec::TcpFetch { .. } => {
                        let (tcp, app, fetch) = match t {
                            TrafficSpec::TcpBulk { bytes, tcp, .. } => {
                                if *bytes == Some(0) {
                                    return Err(cfg_err(path("bytes"), "must be > 0"));
                                }
                                (
                                    tcp,
                                    bytes.map_or(AppLimit::Unlimited, AppLimit::Bytes),
                                    None,
                                )
                            }
                            TrafficSpec::TcpFetch {
                                chunks,
                                chunk_bytes,
                                pause,
                                request_bytes,
                                tcp,
                                ..
                            } => {
                                if *chunks == 0 {
                                    return Err(cfg_err(path("chunks"), "must be at least 1"));
                                }
                                if *chunk_bytes == 0 {
                                    return Err(cfg_err(path("chunk_size"), "must be > 0"));
                                }
                                if *request_bytes == 0 || *request_bytes > tcp.mss {
                                    return Err(cfg_err(
                                        path("request_size"),
                                        format!(
                                            "must be 1..={} bytes (one segment of the MSS)",
                                            tcp.mss
                                        ),
                                    ));
                                }
                                let f =
                                    Fetch::new(*chunks, *chunk_bytes, ns(*pause), *request_bytes);
                                (tcp, AppLimit::Bytes(0), Some(Box::new(f)))
                            }
                            _ => unreachable!("matched above"),
                        };
                        check_tcp(tcp, &path("tcp"))?;
                        // Checked here; built again, with the same seed,
                        // when the connection starts.
                        let cc = cc_for(tcp, cfg.seed, flow_id).ok_or_else(|| {
                            cfg_err(
                                path("tcp.cc"),
                                format!("congestion control {:?} is not available yet", tcp.cc),
                            )
                        })?;
                        let mut f = FlowStat::new(Proto::Tcp, i as u32, from, to, start, stop);
                        let c = self.conns.len() as u32;
                        f.tcp = Some(c);
                        if self.tcp_recipes.last().is_none_or(|r| r.spec != i) {
                            self.tcp_recipes.push(TcpRecipe {
                                spec: i,
                                tcp: tcp.clone(),
                                app,
                                fresh: TcpSender::new(tcp, cc, app),
                                fetch,
                            });
                        }
                        self.conns.push(ConnSlot {
                            conn: None,
                            flow: flow_id,
                            recipe: (self.tcp_recipes.len() - 1) as u32,
                        });
                        self.flows.push(f);
                        if start < self.duration_ns {
                            self.q.schedule(start, Ev::TcpStart(c));
                        }
                        if stop > start && stop < self.duration_ns {
                            self.q.schedule(stop, Ev::TcpStop(c));
                        }
                    }
                }
            }
        }
        Ok(pairs)
    }

    /// Adds a UDP or ping flow and schedules its first packet.
    fn add_source(&mut self, f: FlowStat, clock: Clock, payload_bytes: u32, kind: Kind) {
        let mut s = Source {
            flow: self.flows.len() as u32,
            clock,
            size_bytes: payload_bytes + IP_UDP_HEADER_BYTES,
            payload_bytes,
            kind,
            next_seq: 0,
        };
        let (t, seq) = next_send(&mut s);
        s.next_seq = seq;
        if t < f.stop_ns && t < self.duration_ns {
            self.q.schedule(t, Ev::Source(self.sources.len() as u32));
        }
        self.flows.push(f);
        self.sources.push(s);
    }
}

/// Which directions can hand packets to which (for `carry_hop`): every
/// packet of the model travels between the two endpoints of one flow (data
/// one way, ACKs, replies and requests the other), along the static routes,
/// so tracing those paths both ways finds every direction that can feed
/// each one. A direction's own node sending counts as a feeder of its own.
struct Feeders {
    /// Per direction: [`Feeders::UNSET`], the one feeder seen,
    /// [`Feeders::LOCAL`] or [`Feeders::MANY`].
    of: Vec<u32>,
}

impl Feeders {
    const UNSET: u32 = u32::MAX;
    const MANY: u32 = u32::MAX - 1;
    const LOCAL: u32 = u32::MAX - 2;

    fn new(n: usize) -> Feeders {
        Feeders {
            of: vec![Self::UNSET; n],
        }
    }

    /// A path's hops (directions), its first sent by its node.
    fn add_path(&mut self, path: &[u32]) {
        let mut prev = Self::LOCAL;
        for &d in path {
            let f = &mut self.of[d as usize];
            *f = match *f {
                Self::UNSET => prev,
                x if x == prev => x,
                _ => Self::MANY,
            };
            prev = d;
        }
    }

    /// Sets each direction's `sole_feeder` and each feeder's `carry_next`.
    fn apply(&self, links: &mut [Link]) {
        for l in links.iter_mut() {
            l.sole_feeder = NO_FEEDER;
            l.carry_next = false;
        }
        for (d, &f) in self.of.iter().enumerate() {
            if (f as usize) < links.len() {
                links[d].sole_feeder = f;
                let feeder = &mut links[f as usize];
                feeder.carry_next = feeder.ingress_policer.is_none();
            }
        }
    }
}

/// The deadline slot of endpoint `side` of connection `c` (its rank among
/// timers due at the same nanosecond: [`crate::engine`]).
#[inline]
fn tcp_slot(c: u32, side: Side) -> u32 {
    c * 2 + side as u32
}

/// Schedules the `TxDone` of direction `d` for when its transmitter frees
/// up; it becomes the one live `TxDone` of `d` (any other pending one is
/// stale from now on). Since transmitters run first at their nanosecond
/// (the order in [`crate::engine`]), no other event can restart a
/// transmitter before its `TxDone`, so none is ever stale: debug builds
/// assert that at most one `TxDone` per direction is pending and that none
/// pops stale; release builds count them (`SimResult::stale_events`, 0 on
/// every bench case).
///
/// A `TxDone` that this makes stale is taken out of the heap when it is
/// due now (the usual case: another event at the instant the transmitter
/// freed up ran first and restarted it), so it costs no event (issue 12:
/// 1.6 % of the events at 10 Gbit/s). It would have done nothing, and the
/// other events keep their order, so the run is otherwise the same.
#[inline]
fn arm_tx_done(q: &mut EventQueue<Ev>, l: &mut Link, d: u32) {
    let old = l.tx_done_at_ns;
    if old == l.busy_until_ns {
        // Already pending, under the same key.
        return;
    }
    if old != NEVER_NS && q.remove_due_now(old, |e| matches!(e, Ev::TxDone(x) if *x == d)) {
        #[cfg(debug_assertions)]
        {
            l.tx_done_pending -= 1;
        }
    }
    l.tx_done_at_ns = l.busy_until_ns;
    q.schedule_ranked(l.busy_until_ns, rank_tx(d, false), Ev::TxDone(d));
    #[cfg(debug_assertions)]
    {
        l.tx_done_pending += 1;
        debug_assert!(
            l.tx_done_pending <= 1,
            "link direction {d}: {} TxDone events pending (a stale one)",
            l.tx_done_pending
        );
    }
}

/// A TBF whose head will not conform when the transmission that just
/// started ends: arms now the wake-up that the `TxDone` at that end would
/// arm (the qdisc watchdog, `tbf_dequeue` → `qdisc_watchdog_schedule_ns`),
/// and no `TxDone` (issue 12: case a's second event per packet). Exact
/// because nothing between now and then can change the answer: only this
/// transmitter dequeues, arrivals while it is busy join the TBF's FIFO
/// behind the head and do not poll it, and the head's conformance time
/// (`Tbf::next_ready`) depends on the head and the buckets alone. The
/// wake-up's nominal time, its lateness draw (the direction's own stream,
/// no other draw in between) and the rule "armed only for an earlier
/// expiry" are those of `kick` at the `TxDone`'s time. Returns whether it
/// did (else the caller arms the `TxDone`).
#[inline]
fn fold_tbf_wake(q: &mut EventQueue<Ev>, l: &mut Link, d: u32) -> bool {
    let EgressQueue::Shaper(qoslab_core::AnyShaper::Tbf(tbf)) = &l.queue else {
        return false;
    };
    let end = l.busy_until_ns;
    let Some(ready) = qoslab_core::Shaper::next_ready(tbf, Instant::from_ns(end)) else {
        return false;
    };
    if ready.as_ns() <= end {
        return false;
    }
    debug_assert_eq!(l.tx_done_at_ns, NEVER_NS, "a TxDone live at a dequeue");
    debug_assert_eq!(l.wake_nominal_ns, NEVER_NS, "a wake-up armed at a dequeue");
    let nominal = fire_time_ns(l.timer, ready.as_ns()).max(end + 1);
    arm_wake(q, l, d, nominal);
    true
}

/// Arms direction `d`'s shaper wake-up for the timer expiry `nominal_ns`,
/// late by a fresh draw of the link's timer lateness (one per armed expiry).
fn arm_wake(q: &mut EventQueue<Ev>, l: &mut Link, d: u32, nominal_ns: u64) {
    let late = match l.timer_rng.as_mut() {
        Some(rng) => lateness_ns(l.timer, rng),
        None => 0,
    };
    let fire = nominal_ns.saturating_add(late);
    l.wake_nominal_ns = nominal_ns;
    l.wake_at_ns = fire;
    q.schedule_ranked(fire, rank_tx(d, true), Ev::Wake(d));
}

/// Whether a packet of `size_bytes` handed to direction `l` now would go
/// through its queue untouched: a plain FIFO (no policer, no size table, no
/// policy watching it), empty, that takes the packet, on an idle
/// transmitter. Then `enqueue` + `dequeue` would put it in and hand it
/// straight back with the FIFO as it was (a FIFO keeps no counters of its
/// own), so the engine skips both (issue 12: most hops of a dumbbell, and
/// every hop of an ACK, find their link idle). Everything else the packet
/// meets (taps, serialisation, the loss draw, the event numbers) is the
/// same, so runs are identical (`benchmarks/engine_digest.sh`).
#[inline]
fn passes_through(l: &Link, now_ns: u64, size_bytes: u32) -> bool {
    let EgressQueue::Fifo(f) = &l.queue else {
        return false;
    };
    now_ns >= l.busy_until_ns
        && l.wake_at_ns == NEVER_NS
        && l.egress_policer.is_none()
        && l.queue_policy.is_none()
        && l.stab.is_none()
        && qoslab_core::Shaper::backlog_packets(f) == 0
        && match f.limit() {
            FifoLimit::Packets(n) => n > 0,
            FifoLimit::Bytes(b) => size_bytes as u64 <= b,
        }
}

/// Records a data segment in the `segments` series (out of line: issue
/// 12, the send loop's size when nothing is recorded).
#[cold]
#[inline(never)]
fn record_segment(s: &mut Series, now_ns: u64, flow: u32, h: &TcpHeader) {
    s.seg_time_ns.push(now_ns);
    s.seg_flow.push(flow);
    s.seg_seq.push(h.seq);
    s.seg_len.push(h.payload_len);
    s.seg_retransmit.push(h.retransmit);
}

/// Records an RTT sample in the `rtt` series (out of line, as above).
#[cold]
#[inline(never)]
fn record_rtt(s: &mut Series, now_ns: u64, flow: u32, rtt_ns: u64) {
    s.rtt_time_ns.push(now_ns);
    s.rtt_flow.push(flow);
    s.rtt_ns.push(rtt_ns);
}

/// Frees a packet lost in the network and charges it to its flow.
#[inline]
fn drop_from_flow(flows: &mut [FlowStat], pkts: &mut Pkts, id: u32) {
    let p = pkts.get(id);
    let c = flows[p.flow as usize].c_mut();
    c.packets_dropped += 1;
    if p.kind == Kind::TcpToReceiver && p.payload_bytes > 0 {
        c.data_dropped += 1;
    }
    pkts.free(id);
}

fn next_send(s: &mut Source) -> (u64, u32) {
    match &mut s.clock {
        Clock::Udp(c) => (c.next_ns(), 0),
        Clock::Ping(p) => p.next(),
    }
}

/// The counters a `tcp-fetch` chunk is measured by, now.
fn fetch_base(s: &TcpSender, f: &FlowStat) -> fetch::Base {
    let st = s.stats();
    fetch::Base {
        retransmits: st.retransmits,
        timeouts: st.timeouts,
        fast_recoveries: st.fast_recoveries,
        data_lost: f.c().data_dropped,
        bytes_acked: st.bytes_acked,
    }
}

/// The TCP settings the engine relies on (the endpoints own the rest).
fn check_tcp(t: &crate::config::TcpConfig, path: &str) -> Result<(), SimError> {
    let bad = |f: &str, m: &str| Err(cfg_err(format!("{path}.{f}"), m));
    if t.mss == 0 || t.mss > 65_495 {
        return bad("mss", "must be 1..=65495 bytes");
    }
    if t.header_bytes < 20 || t.header_bytes > 120 {
        return bad("header_bytes", "must be 20..=120 bytes");
    }
    if t.initial_window_segments == 0 {
        return bad("initial_window_segments", "must be at least 1");
    }
    if t.receive_window_bytes < t.mss as u64 {
        return bad("receive_window_bytes", "must hold at least one MSS");
    }
    if t.rcvbuf_lock_bytes.is_some() && t.rcvbuf_autotune {
        return bad(
            "rcvbuf_lock_bytes",
            "a locked SO_RCVBUF turns autotuning off (rcvbuf_autotune = false)",
        );
    }
    if t.send_buffer_bytes.is_some_and(|b| b < t.mss as u64) {
        return bad("send_buffer_bytes", "must hold at least one MSS");
    }
    if !t.window_scaling && t.receive_window_bytes > 65_535 {
        // RFC 7323 §2.2: never a silent cap at 65535 B.
        return bad(
            "receive_window_bytes",
            "above 65535 B needs window_scaling = true (RFC 7323 §2.2)",
        );
    }
    if t.min_rto.as_ns() == 0 || t.min_rto > t.max_rto || t.initial_rto.as_ns() == 0 {
        return bad("min_rto", "need 0 < min_rto <= max_rto and initial_rto > 0");
    }
    if t.ack_every_segments == 0 {
        return bad("ack_every_segments", "must be at least 1");
    }
    if t.recovery == crate::config::RecoveryKind::Sack && !t.sack {
        return bad("recovery", "SACK recovery needs sack = true");
    }
    Ok(())
}

fn check_payload(b: u32, path: &str) -> Result<(), SimError> {
    if b == 0 || b > 65_507 {
        return Err(cfg_err(path, format!("{b} bytes: must be 1..=65507")));
    }
    Ok(())
}

fn default_label(t: &TrafficSpec) -> String {
    match t {
        TrafficSpec::TcpBulk { .. } => "bulk",
        TrafficSpec::TcpFetch { .. } => "fetch",
        TrafficSpec::UdpCbr { .. } => "udp",
        TrafficSpec::OnOff { .. } => "onoff",
        TrafficSpec::Ping { .. } => "ping",
    }
    .into()
}

impl Sim {
    /// Runs to the end (or until `progress` says stop).
    pub fn run(
        mut self,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<SimResult, SimError> {
        self.run_loop(progress)?;
        Ok(self.finish())
    }

    /// The event loop; leaves the model in its end state.
    pub fn run_loop(&mut self, progress: &mut dyn FnMut(Progress) -> bool) -> Result<(), SimError> {
        let end = self.duration_ns;
        // An arrival's successor on its wire (the next packet in flight)
        // takes its place in the heap as it is popped (`pop_until_with`).
        while let Some((t, ev)) = self.q.pop_until_with(end, |ev| match *ev {
            Ev::Arrive(d) => self.links[d as usize]
                .in_flight
                .get(1)
                .map(|&(next, _, _)| (next, rank_arrive(d, next), Ev::Arrive(d))),
            _ => None,
        }) {
            self.now_ns = t;
            self.events += 1;

            match ev {
                Ev::Arrive(d) => {
                    let l = &mut self.links[d as usize];
                    let (at, id, _) = l.in_flight.pop_front().expect("an arrival");
                    debug_assert_eq!(at, t);
                    if let Some(&(_, next_id, last_hop)) = l.in_flight.front() {
                        // (Its arrival is already in the heap.) Load what the next arrival on this wire will
                        // read, a few events ahead of it: packet slots
                        // are touched once per hop, about a millisecond
                        // apart, and are out of cache by then (issue 12,
                        // 10 Gbit/s: these two loads were 17 % of the
                        // run). Reading them early changes nothing else.
                        std::hint::black_box(self.pkts.get(next_id).dst);
                        if last_hop {
                            std::hint::black_box(self.pkts.tcp(next_id).seq);
                        }
                    }
                    self.by_kind.arrive += 1;
                    self.on_arrive(d, id)
                }
                Ev::TxDone(d) => {
                    let l = &mut self.links[d as usize];
                    #[cfg(debug_assertions)]
                    {
                        l.tx_done_pending -= 1;
                    }
                    if l.tx_done_at_ns == t {
                        l.tx_done_at_ns = NEVER_NS;
                        self.by_kind.tx_done += 1;
                        self.kick(d);
                    } else {
                        debug_assert!(false, "direction {d}: a stale TxDone at {t} ns");
                        self.stale_events += 1;
                        self.by_kind.tx_done_stale += 1;
                    }
                }
                Ev::Wake(d) => {
                    let l = &mut self.links[d as usize];
                    if l.wake_at_ns == t {
                        l.wake_at_ns = NEVER_NS;
                        l.wake_nominal_ns = NEVER_NS;
                        self.by_kind.wake += 1;
                        self.kick(d);
                    } else {
                        self.by_kind.wake_stale += 1;
                    }
                }
                Ev::Source(s) => {
                    self.by_kind.source += 1;
                    self.on_source(s)
                }
                Ev::TcpStart(c) => self.tcp_start(c),
                Ev::TcpStop(c) => self.tcp_stop(c),
                Ev::TcpTimer(c, side) => self.on_tcp_timer(c, side),
                Ev::FetchRequest(c) => {
                    self.by_kind.fetch += 1;
                    self.fetch_request(c, 0)
                }
                Ev::FetchRetry(c, k, n) => {
                    self.by_kind.fetch += 1;
                    self.fetch_retry(c, k, n)
                }
                Ev::Sample => {
                    self.by_kind.sample += 1;
                    self.on_sample()
                }
            }
            if self.events % PROGRESS_EVERY == 0 && !progress(self.progress()) {
                return Err(SimError::Cancelled);
            }
        }
        self.now_ns = end;
        // Computed departures: what has started by the end has been sent.
        for l in self.links.iter_mut().filter(|l| l.computed) {
            l.catch_up(end);
        }
        if !progress(self.progress()) {
            return Err(SimError::Cancelled);
        }
        Ok(())
    }

    /// Connection `c` starts (out of line, as the other rare events:
    /// issue 12, the event loop's size).
    #[inline(never)]
    fn tcp_start(&mut self, c: u32) {
        let t = self.now_ns;
        self.by_kind.tcp_start_stop += 1;
        self.build_conn(c);
        let mut io = std::mem::take(&mut self.io);
        self.conns[c as usize]
            .get_mut()
            .sender
            .start(Instant::from_ns(t), &mut io);
        self.after_tcp(c, Side::Sender, io, t);
    }

    /// Connection `c`'s sender stops.
    #[inline(never)]
    fn tcp_stop(&mut self, c: u32) {
        let t = self.now_ns;
        self.by_kind.tcp_start_stop += 1;
        self.conns[c as usize]
            .get_mut()
            .sender
            .stop(Instant::from_ns(t));
        let io = std::mem::take(&mut self.io);
        self.after_tcp(c, Side::Sender, io, t);
    }

    fn progress(&self) -> Progress {
        Progress {
            sim_time_ns: self.now_ns,
            duration_ns: self.duration_ns,
            events: self.events,
        }
    }

    #[inline]
    fn drop_pkt(&mut self, id: u32) {
        drop_from_flow(&mut self.flows, &mut self.pkts, id);
    }

    /// Hands packet `id` to the route out of `node`.
    #[inline]
    fn forward(&mut self, node: u32, id: u32) {
        let dst = self.pkts.get(id).dst;
        let d = self.routes.next(node, dst);
        if d == NO_ROUTE {
            // Validated for every flow's endpoints; unreachable in practice.
            self.counters.dropped_loop += 1;
            self.drop_pkt(id);
            return;
        }
        self.enqueue(d, id);
    }

    /// Egress of direction `d`: policer, then queue, then the transmitter.
    fn enqueue(&mut self, d: u32, id: u32) {
        if self.taps.is_some() {
            self.tap(d, Point::Ingress, self.now_ns, id);
        }
        let now = Instant::from_ns(self.now_ns);
        let l = &mut self.links[d as usize];
        if l.computed {
            l.catch_up(self.now_ns);
        }
        let data = self.pkts.get_mut(id);
        if passes_through(l, self.now_ns, data.size_bytes) {
            // What the queue would do (take the packet, hand it straight
            // back, change nothing), done without it.
            let (size, dst) = (data.size_bytes, data.dst);
            self.start_tx(d, id, size, dst);
            return;
        }
        let mut p = data.core(id);
        if let Some(t) = &l.stab {
            // tc-stab: the policy counts this size; the wire the real one.
            p.size_bytes = t.pkt_len(p.size_bytes);
        }
        if let Some(pi) = l.egress_policer {
            if !self.police(pi, id, &mut p) {
                return;
            }
        } else if let Some(qp) = l.queue_policy {
            let pol = &mut self.policies[qp as usize];
            if pol.tree {
                pol.count_in_queue(&p);
            } else {
                pol.count_in_green(p.size_bytes);
            }
        }
        let l = &mut self.links[d as usize];
        if !l.computed {
            self.enqueue_queue(d, now, p);
            return;
        }
        // The departure is known now (see `Link::computed`).
        let data = self.pkts.get(id);
        let (wire, dst) = (data.size_bytes, data.dst);
        match l.offer(self.now_ns, p, wire) {
            Ok(_) => {
                if let Some(qp) = l.queue_policy {
                    let (qp_n, qb) = (l.queue.backlog_packets(), l.queue.backlog_bytes());
                    self.policies[qp as usize].observe_queue(qp_n, qb);
                }
                self.put_on_wire(d, id, dst);
            }
            Err(dr) => {
                self.dropped.push(dr);
                self.free_dropped(d);
            }
        }
    }

    /// The policer `pi` meets packet `id` (`p`, as the policy counts it),
    /// at egress or ingress; false: it dropped it. A re-mark or colour goes
    /// to both `p` and the stored packet. Out of line (issue 12: the hop
    /// code's size).
    #[inline(never)]
    fn police(&mut self, pi: u32, id: u32, p: &mut Packet) -> bool {
        let now = Instant::from_ns(self.now_ns);
        let pol = &mut self.policies[pi as usize];
        let v = pol.police(now, p);
        let data = self.pkts.get_mut(id);
        match v.action {
            Action::Drop => {
                pol.count_drop(p.size_bytes);
                self.counters.dropped_policy += 1;
                drop_from_flow(&mut self.flows, &mut self.pkts, id);
                return false;
            }
            Action::SetDscp(x) => {
                p.dscp = x;
                data.dscp = x;
            }
            Action::Transmit => {}
        }
        p.color = v.color;
        data.color = v.color;
        true
    }

    /// Egress of direction `d` through its queue or shaper (departures
    /// not computed): the queue, then the transmitter.
    #[inline(never)]
    fn enqueue_queue(&mut self, d: u32, now: Instant, p: Packet) {
        let l = &mut self.links[d as usize];
        if let Err(dr) = l.queue.enqueue(now, p) {
            self.dropped.push(dr);
        }
        l.queue.take_dropped(&mut self.dropped);
        self.free_dropped(d);
        let l = &mut self.links[d as usize];
        if let Some(qp) = l.queue_policy {
            let (qp_n, qb) = (l.queue.backlog_packets(), l.queue.backlog_bytes());
            self.policies[qp as usize].observe_queue(qp_n, qb);
        }
        self.kick(d);
    }

    /// Shows packet `id` to the capture taps (out of line: the hop code
    /// stays small when nothing is captured, issue 12).
    #[cold]
    #[inline(never)]
    fn tap(&mut self, d: u32, point: Point, end_ns: u64, id: u32) {
        let p = self.pkts.full(id);
        if let Some(t) = self.taps.as_mut() {
            t.tap(d, point, self.now_ns, end_ns, &p);
        }
    }

    /// Frees the packets the queue of `d` dropped (in `self.dropped`) and
    /// charges them to the queue's policy and their flows.
    #[inline]
    fn free_dropped(&mut self, d: u32) {
        if self.dropped.is_empty() {
            return;
        }
        let qp = self.links[d as usize].queue_policy;
        for dr in self.dropped.drain(..) {
            if let Some(qp) = qp {
                self.policies[qp as usize].count_drop(dr.packet.size_bytes);
            }
            self.counters.dropped_policy += 1;
            drop_from_flow(&mut self.flows, &mut self.pkts, dr.packet.id as u32);
        }
    }

    /// Starts the next transmission on `d` if the transmitter is idle, or
    /// arranges to come back when it is / when the shaper allows.
    fn kick(&mut self, d: u32) {
        let now = self.now_ns;
        let l = &mut self.links[d as usize];
        if now < l.busy_until_ns {
            // (A wake-up pending while the transmitter is busy was armed
            // in place of its `TxDone`: `fold_tbf_wake`.)
            if l.tx_done_at_ns != l.busy_until_ns && l.wake_at_ns == NEVER_NS {
                arm_tx_done(&mut self.q, l, d);
            }
            return;
        }
        // A shaper waiting for its wake-up is throttled: arrivals do not
        // poll it (only the node's timer does), though they may bring the
        // wake-up forward (a rate-adaptive shaper speeding up).
        let throttled = l.wake_at_ns != NEVER_NS;
        let head = if throttled {
            None
        } else {
            let h = l.queue.dequeue(Instant::from_ns(now));
            l.queue.take_dropped(&mut self.dropped);
            h
        };
        if !self.dropped.is_empty() {
            self.free_dropped(d);
        }
        let l = &mut self.links[d as usize];
        match head {
            Some(p) => {
                let id = p.id as u32;
                // The real size (a size table may have changed `p`'s). The
                // queue's copy is read where it is the same: the slot is
                // out of cache after the packet's wait in the queue.
                let size = match l.stab {
                    None => p.size_bytes,
                    Some(_) => self.pkts.get(id).size_bytes,
                };
                // `p`'s address is 10.x.y.z with x.y.z = node + 1 (see
                // `Hot::core`) below 2²⁴ nodes.
                let dst = match self.node_names.len() < (1 << 24) - 1 {
                    true => (p.tuple.dst_addr & 0x00ff_ffff) - 1,
                    false => self.pkts.get(id).dst,
                };
                self.start_tx(d, id, size, dst);
                let l = &mut self.links[d as usize];
                if l.queue.backlog_packets() > 0
                    && !(self.fold_tbf_wakes && fold_tbf_wake(&mut self.q, l, d))
                {
                    arm_tx_done(&mut self.q, l, d);
                }
            }
            None => {
                if let Some(t) = l.queue.next_ready(Instant::from_ns(now)) {
                    let nominal = fire_time_ns(l.timer, t.as_ns()).max(now + 1);
                    // Re-armed only for an earlier expiry; a late timer's
                    // lateness is drawn once per armed expiry.
                    if nominal < l.wake_nominal_ns {
                        arm_wake(&mut self.q, l, d, nominal);
                    }
                }
            }
        }
    }

    /// Puts packet `id` (`size` bytes, for node `dst`) on direction `d`'s
    /// idle transmitter now: serialisation, the loss draw, and its arrival
    /// at the far end (the wire's FIFO, under an event number taken now).
    /// One copy for both callers (kick and the pass-through of `enqueue`):
    /// inlined twice, the hop code outgrew the instruction cache.
    #[inline(never)]
    fn start_tx(&mut self, d: u32, id: u32, size: u32, dst: u32) {
        let now = self.now_ns;
        let l = &mut self.links[d as usize];
        debug_assert_eq!(size, self.pkts.get(id).size_bytes);
        debug_assert_eq!(dst, self.pkts.get(id).dst);
        let tx = l.tx_time_ns(size);
        l.busy_until_ns = now.saturating_add(tx);
        l.tx_packets += 1;
        l.tx_bytes += size as u64;
        if self.taps.is_some() {
            let end = l.busy_until_ns;
            self.tap(d, Point::Egress, end, id);
        }
        let l = &mut self.links[d as usize];
        if l.draw_loss() {
            l.lost_packets += 1;
            self.counters.lost_link += 1;
            drop_from_flow(&mut self.flows, &mut self.pkts, id);
        } else {
            self.put_on_wire(d, id, dst);
        }
    }

    /// Packet `id` (for node `dst`), whose transmission on `d` ends at
    /// `busy_until_ns`, reaches the far end one delay later: the wire's
    /// FIFO, its head in the event queue.
    /// Always inlined into its two callers (issue 12: the call's register
    /// saves were a fifth of its cost).
    #[inline(always)]
    fn put_on_wire(&mut self, d: u32, id: u32, dst: u32) {
        if self.links[d as usize].carry_next && self.carry(d, id, dst) {
            return;
        }
        self.wire_push(d, id, dst);
    }

    /// Packet `id` (for node `dst`), just put on direction `d_in`'s wire,
    /// crosses the next nodes now where that provably changes nothing
    /// (`carry_hop`), and joins the wire of the last direction it was
    /// carried onto. False: not carried (the caller puts it on `d_in`'s
    /// wire). Out of line: the hop code's size (issue 12).
    #[inline(never)]
    fn carry(&mut self, d_in: u32, id: u32, dst: u32) -> bool {
        let mut d = d_in;
        while let Some(next) = self.carry_hop(d, id, dst) {
            d = next;
            if !self.links[d as usize].carry_next {
                break;
            }
        }
        if d == d_in {
            return false;
        }
        self.wire_push(d, id, dst);
        true
    }

    /// Carries packet `id` (for node `dst`), whose transmission on `d`
    /// ends at `busy_until_ns`, across `d`'s far end now: it starts on the
    /// next direction at the instant it would have arrived (`t1`), without
    /// an `Arrive` event at that node (issue 12: one event per hop of an
    /// ACK crossing idle links). Returns the direction it now occupies, or
    /// `None` (the packet goes on `d`'s wire and arrives as usual).
    ///
    /// Exact when the next direction `o` has `d` as its only feeder
    /// ([`Link::sole_feeder`]: no other wire, and not its own node, can
    /// hand it a packet) and no packet bound for `o` is on `d`'s wire
    /// uncarried ([`Link::inbound_uncarried`]): nothing can then touch `o`
    /// before `t1`, so its state now is its state at `t1` (a computed FIFO
    /// is first caught up to `t1`), and the arrival at `t1` would find it
    /// passing the packet straight through (`passes_through`) and start it
    /// at `t1`. What that arrival would do is done here with `t1` as the
    /// time: the hop count, the transmission's end, `o`'s counters, and
    /// (in the caller) the packet joining `o`'s wire, whose `Arrive` is
    /// ranked by (time, direction) alone, so no event changes order. `o`
    /// must draw no loss (a loss frees the packet's slot, which would then
    /// be reused earlier) and watch no queue policy (queue samples); a
    /// tapped direction has no sole feeder (`set_capture`); `t1` must be
    /// within the run (`o`'s counters at the end).
    /// Else the packet is counted as on its way to `o` uncarried.
    fn carry_hop(&mut self, d: u32, id: u32, dst: u32) -> Option<u32> {
        let l = &self.links[d as usize];
        let node = l.to;
        if dst == node {
            return None;
        }
        let t1 = l.busy_until_ns.saturating_add(l.delay_ns);
        let o = self.routes.next(node, dst);
        if o == NO_ROUTE || self.links[o as usize].sole_feeder != d {
            return None;
        }
        let data = self.pkts.get(id);
        let (size, hops) = (data.size_bytes, data.hops);
        let lo = &mut self.links[o as usize];
        let ok = self.carry_hops
            && t1 <= self.duration_ns
            && hops + 1 < MAX_HOPS
            && lo.inbound_uncarried == 0
            && lo.loss_ppm == 0
            && lo.queue_policy.is_none()
            && {
                if lo.computed {
                    lo.catch_up(t1);
                }
                passes_through(lo, t1, size)
            };
        if !ok {
            lo.inbound_uncarried += 1;
            return None;
        }
        lo.busy_until_ns = t1.saturating_add(lo.tx_time_ns(size));
        lo.tx_packets += 1;
        lo.tx_bytes += size as u64;
        self.pkts.get_mut(id).hops = hops + 1;
        Some(o)
    }

    /// [`Sim::put_on_wire`] without carrying.
    #[inline(always)]
    fn wire_push(&mut self, d: u32, id: u32, dst: u32) {
        let l = &mut self.links[d as usize];
        let at = l.busy_until_ns.saturating_add(l.delay_ns);
        if l.in_flight.is_empty() {
            self.q
                .schedule_ranked(at, rank_arrive(d, at), Ev::Arrive(d));
        }
        debug_assert!(l.in_flight.back().is_none_or(|b| b.0 < at));
        l.in_flight.push_back((at, id, dst == l.to));
    }

    fn on_arrive(&mut self, d: u32, id: u32) {
        let l = &self.links[d as usize];
        let node = l.to;
        let carry_next = l.carry_next;
        if let Some(pi) = l.ingress_policer {
            if !self.police_ingress(pi, id) {
                return;
            }
        }
        let data = self.pkts.get_mut(id);
        if data.dst == node {
            self.deliver(node, id);
            return;
        }
        if carry_next {
            // Counted by `carry_hop` if bound for a direction `d` feeds alone.
            let o = self.routes.next(node, data.dst);
            if o != NO_ROUTE && self.links[o as usize].sole_feeder == d {
                self.links[o as usize].inbound_uncarried -= 1;
            }
        }
        let data = self.pkts.get_mut(id);
        data.hops += 1;
        if data.hops >= MAX_HOPS {
            self.counters.dropped_loop += 1;
            self.drop_pkt(id);
            return;
        }
        self.forward(node, id);
    }

    /// The ingress policer `pi` meets packet `id`; false: it dropped it.
    #[inline(never)]
    fn police_ingress(&mut self, pi: u32, id: u32) -> bool {
        let mut p = self.pkts.get(id).core(id);
        self.police(pi, id, &mut p)
    }

    /// Packet `id` reached its destination `node`.
    fn deliver(&mut self, node: u32, id: u32) {
        self.counters.delivered += 1;
        let data = *self.pkts.get(id);
        #[cfg(test)]
        self.deliveries
            .push((self.now_ns, data.flow, data.size_bytes));
        if !matches!(data.kind, Kind::TcpToReceiver | Kind::TcpToSender) {
            self.deliver_other(node, id, data);
            return;
        }
        let f = &mut self.flows[data.flow as usize];
        let Some(c) = f.tcp else {
            self.pkts.free(id);
            return;
        };
        let now = Instant::from_ns(self.now_ns);
        let mut io = std::mem::take(&mut self.io);
        let conn = self.conns[c as usize].get_mut();
        // The header is read where it lies (110 B not copied); the slot
        // is freed after, before anything can be allocated (`after_tcp`).
        let tcp = self.pkts.tcp(id);
        let side = if data.kind == Kind::TcpToReceiver {
            conn.receiver.on_segment(now, tcp, &mut io);
            let delivered = conn.receiver.delivered_bytes();
            if delivered > f.c_mut().bytes_delivered {
                f.c_mut().last_rx_ns = self.now_ns;
            }
            f.c_mut().bytes_delivered = delivered;
            if conn.fetch.is_some() {
                let syn = tcp.flags & crate::tcp::SYN != 0;
                self.fetch_progress(c, syn, delivered);
            }
            Side::Receiver
        } else {
            conn.sender.on_segment(now, tcp, &mut io);
            Side::Sender
        };
        self.pkts.free(id);
        self.after_tcp(c, side, io, self.now_ns);
    }

    /// The client of fetch connection `c` received data (`syn`: the
    /// SYN-ACK), `delivered` bytes in all: its next request, if one is due.
    #[inline(never)]
    fn fetch_progress(&mut self, c: u32, syn: bool, delivered: u64) {
        let t = self.now_ns;
        let Some(fe) = self.conns[c as usize].get_mut().fetch.as_deref_mut() else {
            return;
        };
        if syn && fe.records.is_empty() {
            // Request 0 leaves right after the SYN-ACK.
            self.q.schedule(t, Ev::FetchRequest(c));
        } else if fe.client_progress(delivered, t) && (fe.client_done as usize) < fe.chunks as usize
        {
            let at = t.saturating_add(fe.pause_ns);
            if at < self.duration_ns {
                self.q.schedule(at, Ev::FetchRequest(c));
            }
        }
    }

    /// Packet `id` (not TCP) reached its destination `node`.
    #[inline(never)]
    fn deliver_other(&mut self, node: u32, id: u32, data: Hot) {
        let f = &mut self.flows[data.flow as usize];
        match data.kind {
            Kind::Udp => {
                f.c_mut().packets_received += 1;
                f.c_mut().bytes_delivered += data.payload_bytes as u64;
                f.c_mut().last_rx_ns = self.now_ns;
                self.pkts.free(id);
            }
            Kind::PingRequest => {
                // The echo reply reuses the slot: same size, back to the source.
                let from = f.from;
                let r = self.pkts.get_mut(id);
                r.kind = Kind::PingReply;
                r.src = node;
                r.dst = from;
                r.hops = 0;
                r.color = Color::Green;
                self.counters.created += 1;
                self.forward(node, id);
            }
            Kind::PingReply => {
                f.c_mut().packets_received += 1;
                f.c_mut().bytes_delivered += data.payload_bytes as u64;
                f.c_mut().last_rx_ns = self.now_ns;
                let rtt = self.now_ns - data.sent_ns;
                f.c_mut().rtt.push(rtt, self.record.exact_rtt_percentiles);
                if self.record.ping {
                    let s = &mut self.series;
                    s.ping_time_ns.push(self.now_ns);
                    s.ping_flow.push(data.flow);
                    s.ping_seq.push(data.seq);
                    s.ping_rtt_ns.push(rtt);
                }
                self.pkts.free(id);
            }
            Kind::FetchRequest => {
                self.pkts.free(id);
                let Some(c) = f.tcp else { return };
                self.fetch_arrived(c, data.seq);
            }
            Kind::TcpToReceiver | Kind::TcpToSender => unreachable!("delivered by `deliver`"),
        }
    }

    /// Builds connection `c`'s endpoints (at its start), exactly as they
    /// would have been built with the scenario: same config, same cc seed.
    fn build_conn(&mut self, c: u32) {
        let slot = &mut self.conns[c as usize];
        if slot.conn.is_some() {
            return;
        }
        let r = &self.tcp_recipes[slot.recipe as usize];
        let cc = cc_for(&r.tcp, self.seed, slot.flow).expect("checked when the flow was built");
        slot.conn = Some(Box::new(TcpConn {
            sender: TcpSender::new(&r.tcp, cc, r.app),
            receiver: TcpReceiver::new(&r.tcp),
            flow: slot.flow,
            header_bytes: r.tcp.header_bytes,
            fetch: r.fetch.clone(),
        }));
    }

    /// A TCP timer event: the endpoint's deadline came (it is kept exact:
    /// see [`crate::traffic::bulk`]); run its timer, then re-arm.
    fn on_tcp_timer(&mut self, c: u32, side: Side) {
        let now = self.now_ns;
        let conn = self.conns[c as usize].get_mut();
        match conn.next_timer_ns(side) {
            Some(t) if t <= now => {
                match side {
                    Side::Sender => self.by_kind.tcp_timer_sender += 1,
                    Side::Receiver => self.by_kind.tcp_timer_receiver += 1,
                }
                let mut io = std::mem::take(&mut self.io);
                let at = Instant::from_ns(now);
                match side {
                    Side::Sender => conn.sender.on_timer(at, &mut io),
                    Side::Receiver => conn.receiver.on_timer(at, &mut io),
                }
                // A timer still due after it ran is retried 1 ns later,
                // never in a loop at the same instant.
                self.after_tcp(c, side, io, now + 1);
            }
            // Not reached while every call into an endpoint ends in
            // `after_tcp` (which keeps the deadline exact); counted so
            // that a path that forgets it shows in `events_by_kind`.
            t => {
                self.by_kind.tcp_timer_early += 1;
                self.q
                    .set_deadline(tcp_slot(c, side), t, Ev::TcpTimer(c, side));
            }
        }
    }

    /// Sends what endpoint `side` of connection `c` transmitted, records
    /// its RTT samples, re-arms its timer (no earlier than `min_timer_ns`).
    fn after_tcp(&mut self, c: u32, side: Side, mut io: IoBuf, min_timer_ns: u64) {
        let now = self.now_ns;
        let conn = self.conns[c as usize].get();
        let flow = conn.flow;
        let hdr = conn.header_bytes;
        let f = &self.flows[flow as usize];
        let (src, dst, kind) = match side {
            Side::Sender => (f.from, f.to, Kind::TcpToReceiver),
            Side::Receiver => (f.to, f.from, Kind::TcpToSender),
        };
        let dscp = self.spec_dscp[f.spec as usize];
        let segments = side == Side::Sender && self.record.segments;
        for h in &io.out {
            if segments && h.payload_len > 0 {
                record_segment(&mut self.series, now, flow, h);
            }
            let hot = Hot {
                src,
                dst,
                flow,
                kind,
                hops: 0,
                dscp,
                color: Color::Green,
                size_bytes: h.payload_len + hdr,
                payload_bytes: h.payload_len,
                sent_ns: now,
                seq: 0,
            };
            let id = self.pkts.alloc_parts(hot, h);
            self.counters.created += 1;
            self.forward(src, id);
        }
        io.out.clear();
        if !io.rtt.is_empty() {
            let f = &mut self.flows[flow as usize];
            for r in io.rtt.drain(..) {
                f.c_mut()
                    .rtt
                    .push(r.as_ns(), self.record.exact_rtt_percentiles);
                if self.record.rtt {
                    record_rtt(&mut self.series, now, flow, r.as_ns());
                }
            }
        }
        self.io = io;
        let conn = self.conns[c as usize].get_mut();
        if side == Side::Sender && conn.sender.is_done() {
            self.sender_done(c);
        }
        let conn = self.conns[c as usize].get();
        let t = conn.next_timer_ns(side).map(|t| t.max(min_timer_ns));
        self.q
            .set_deadline(tcp_slot(c, side), t, Ev::TcpTimer(c, side));
    }

    /// The sender of connection `c` has sent all it had (out of line:
    /// rare, issue 12).
    #[inline(never)]
    fn sender_done(&mut self, c: u32) {
        let now = self.now_ns;
        let conn = self.conns[c as usize].get_mut();
        let f = &mut self.flows[conn.flow as usize];
        match conn.fetch.as_deref_mut() {
            None => {
                f.c_mut().done_ns.get_or_insert(now);
            }
            Some(fe) => {
                if fe.in_progress().is_some() {
                    fe.server_finished(now, fetch_base(&conn.sender, f));
                    if fe.all_done() {
                        f.c_mut().done_ns.get_or_insert(now);
                    }
                }
            }
        }
    }

    /// The client of connection `c` sends its next request (`retry` > 0:
    /// a copy of the current one).
    #[inline(never)]
    fn fetch_request(&mut self, c: u32, retry: u32) {
        let now = self.now_ns;
        let conn = self.conns[c as usize].get_mut();
        let rto = conn.sender.rto().as_ns();
        let hdr = conn.header_bytes;
        let flow = conn.flow;
        let Some(fe) = conn.fetch.as_deref_mut() else {
            return;
        };
        let k = if retry == 0 {
            let k = fe.records.len() as u32;
            if k >= fe.chunks {
                return;
            }
            fe.request_sent(k, now);
            k
        } else {
            let k = fe.records.len() as u32 - 1;
            fe.records[k as usize].request_retries = retry;
            k
        };
        let req = fe.request_bytes;
        let f = &self.flows[flow as usize];
        if now >= f.stop_ns {
            return;
        }
        let (src, dst) = (f.to, f.from);
        let id = self.pkts.alloc(Pkt {
            src,
            dst,
            flow,
            kind: Kind::FetchRequest,
            hops: 0,
            dscp: self.spec_dscp[f.spec as usize],
            color: Color::Green,
            size_bytes: req + hdr,
            payload_bytes: 0,
            sent_ns: now,
            seq: k,
            tcp: TcpHeader::default(),
        });
        self.counters.created += 1;
        // RFC 6298 §5.5: the retry timer doubles per attempt.
        let wait = rto.saturating_mul(1u64 << retry.min(20));
        let at = now.saturating_add(wait);
        if retry < fetch::MAX_REQUEST_RETRIES && at < self.duration_ns {
            self.q.schedule(at, Ev::FetchRetry(c, k, retry + 1));
        }
        self.forward(src, id);
    }

    /// The retry timer of request `k`: resend it unless the server has it.
    #[inline(never)]
    fn fetch_retry(&mut self, c: u32, k: u32, attempt: u32) {
        let Some(fe) = self.conns[c as usize].get().fetch.as_deref() else {
            return;
        };
        if fe.server_started > k {
            return;
        }
        self.fetch_request(c, attempt);
    }

    /// Request `k` of connection `c` reached the server.
    fn fetch_arrived(&mut self, c: u32, k: u32) {
        let now = self.now_ns;
        let conn = self.conns[c as usize].get_mut();
        let f = &self.flows[conn.flow as usize];
        let base = fetch_base(&conn.sender, f);
        let Some(fe) = conn.fetch.as_deref_mut() else {
            return;
        };
        if !fe.request_arrived(k, now, base) {
            return;
        }
        let bytes = fe.chunk_bytes;
        let mut io = std::mem::take(&mut self.io);
        conn.sender.app_write(Instant::from_ns(now), bytes, &mut io);
        self.after_tcp(c, Side::Sender, io, now);
    }

    #[inline(never)]
    fn on_source(&mut self, si: u32) {
        let now = self.now_ns;
        let s = &mut self.sources[si as usize];
        let f = &mut self.flows[s.flow as usize];
        if now >= f.stop_ns {
            return;
        }
        let pkt = Pkt {
            src: f.from,
            dst: f.to,
            flow: s.flow,
            kind: s.kind,
            hops: 0,
            dscp: self.spec_dscp[f.spec as usize],
            color: Color::Green,
            size_bytes: s.size_bytes,
            payload_bytes: s.payload_bytes,
            sent_ns: now,
            seq: s.next_seq,
            tcp: TcpHeader::default(),
        };
        f.c_mut().packets_sent += 1;
        let from = f.from;
        let stop = f.stop_ns;
        let (t, seq) = next_send(s);
        s.next_seq = seq;
        if t < stop && t < self.duration_ns {
            self.q.schedule(t, Ev::Source(si));
        }
        let id = self.pkts.alloc(pkt);
        self.counters.created += 1;
        self.forward(from, id);
    }

    #[inline(never)]
    fn on_sample(&mut self) {
        let t = self.now_ns;
        let now = Instant::from_ns(t);
        let r = self.record;
        if r.goodput {
            let conns = &self.conns;
            stats::sample_goodput(&mut self.series, t, &mut self.flows, |f| {
                f.tcp
                    .map_or(0, |c| conn_stats(&conns[c as usize]).retransmits)
            });
        }
        if r.cwnd {
            for c in &self.conns {
                let sender = match &c.conn {
                    Some(conn) => &conn.sender,
                    None => &self.tcp_recipes[c.recipe as usize].fresh,
                };
                let s = &mut self.series;
                s.cwnd_time_ns.push(t);
                s.cwnd_flow.push(c.flow);
                s.cwnd_bytes.push(sender.cwnd_bytes());
                s.ssthresh_bytes.push(sender.ssthresh_bytes());
                s.cwnd_state.push(sender.ca_state());
            }
        }
        for l in self.links.iter_mut().filter(|l| l.computed) {
            l.catch_up(t);
        }
        let links = &self.links;
        sample_policies(&mut self.series, &r, &mut self.policies, now, t, |d| {
            &links[d as usize].queue
        });
        let next = t.saturating_add(r.interval.as_ns());
        if next <= self.duration_ns {
            self.q.schedule(next, Ev::Sample);
        }
    }

    /// The flows as built, with the `[[traffic]]` entry each came from
    /// (entries expand to `flows` flows each, in order; ping to one).
    pub fn planned_flows(&self, cfg: &SimConfig) -> Vec<crate::PlannedFlow> {
        let origin = cfg.traffic.iter().enumerate().flat_map(|(i, t)| {
            let n = match t {
                TrafficSpec::TcpBulk { flows, .. }
                | TrafficSpec::TcpFetch { flows, .. }
                | TrafficSpec::UdpCbr { flows, .. }
                | TrafficSpec::OnOff { flows, .. } => *flows,
                TrafficSpec::Ping { .. } => 1,
            };
            std::iter::repeat_n(i as u32, n as usize)
        });
        self.flows
            .iter()
            .zip(origin)
            .enumerate()
            .map(|(id, (f, ti))| crate::PlannedFlow {
                id: id as u32,
                traffic_index: ti,
                protocol: f.protocol.as_str(),
                label: self.spec_label[f.spec as usize].clone(),
                from: self.node_names[f.from as usize].clone(),
                to: self.node_names[f.to as usize].clone(),
                start_ns: f.start_ns,
                stop_ns: (f.stop_ns != u64::MAX).then_some(f.stop_ns),
            })
            .collect()
    }

    /// Records the packets passing `points` (direction, point, file index
    /// handed to `sink`).
    pub fn set_capture(&mut self, points: &[(u32, Point, u32)], sink: Box<dyn CaptureSink>) {
        self.taps = Some(Box::new(Taps::new(self.links.len(), points, sink)));
        // A carried packet skips its next direction's taps (`carry_hop`):
        // no packet is carried onto a tapped direction. (Called before the
        // run: no packet is on its way yet.)
        for &(d, _, _) in points {
            self.links[d as usize].sole_feeder = NO_FEEDER;
        }
        // A tap on a transmitter sees each packet when it starts: those
        // directions keep a `TxDone` per packet.
        for &(d, p, _) in points {
            if p == Point::Egress {
                self.links[d as usize].computed = false;
            }
        }
    }

    /// Takes the capture sink back (after the run).
    pub fn take_capture(&mut self) -> Option<Box<dyn CaptureSink>> {
        self.taps.take().map(|t| t.sink)
    }

    /// The engine as it was before departures were computed: a `TxDone`
    /// per packet on every direction and no folded TBF wake-ups (for the
    /// tests that show both give the same run).
    #[cfg(test)]
    pub fn event_per_packet(&mut self) {
        for l in &mut self.links {
            l.computed = false;
        }
        self.fold_tbf_wakes = false;
        self.carry_hops = false;
    }

    /// No packet carried across a hop (`carry_hop`): an `Arrive` per hop,
    /// for the tests that show both give the same run.
    #[cfg(test)]
    pub fn arrive_per_hop(&mut self) {
        self.carry_hops = false;
    }

    /// Packets in flight or queued (arena slots in use).
    #[cfg(test)]
    pub fn packets_live(&self) -> usize {
        self.pkts.live()
    }

    #[cfg(test)]
    pub fn flows(&self) -> &[FlowStat] {
        &self.flows
    }

    /// Assembles the result.
    pub fn finish(self) -> SimResult {
        let end = self.duration_ns;
        let flows: Vec<_> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let label = &self.spec_label[f.spec as usize];
                let mut r = f.result(i as u32, &self.node_names, label, end);
                if let Some(c) = f.tcp {
                    let slot = &self.conns[c as usize];
                    if let Some(conn) = slot.conn.as_deref() {
                        if let Some(fe) = conn.fetch.as_deref() {
                            let mut fe = fe.clone();
                            for k in fe.server_done..fe.server_started {
                                fe.fill_counters(k, fetch_base(&conn.sender, f));
                            }
                            r.chunks = fe.records;
                        }
                    }
                    let st = conn_stats(slot);
                    r.packets_sent = st.segments_sent;
                    r.retransmits = st.retransmits;
                    r.timeouts = st.timeouts;
                    r.fast_recoveries = st.fast_recoveries;
                    r.packets_lost = f.c().packets_dropped;
                }
                r
            })
            .collect();
        let sum_goodput_bps = flows
            .iter()
            .filter(|f| f.protocol != "ping")
            .map(|f| f.goodput_bps)
            .sum();
        let tcp: Vec<f64> = flows
            .iter()
            .filter(|f| f.protocol == "tcp")
            .map(|f| f.goodput_bps)
            .collect();
        let link_tx_packets = self.links.iter().map(|l| l.tx_packets).collect();
        let mut policies: Vec<_> = Vec::with_capacity(self.policies.len());
        for p in self.policies {
            let mut res = p.res;
            if let Some(d) = p.queue_dir.filter(|_| p.tree) {
                if let EgressQueue::Tree(t) = &self.links[d as usize].queue {
                    res.classes = t.class_results();
                }
            }
            policies.push(res);
        }
        SimResult {
            name: self.name,
            seed: self.seed,
            duration_ns: end,
            flows,
            policies,
            series: self.series,
            sum_goodput_bps,
            jain_fairness: crate::result::jain_fairness(&tcp),
            events: self.events,
            stale_events: self.stale_events,
            events_by_kind: {
                debug_assert_eq!(self.by_kind.total(), self.events);
                self.by_kind
            },
            link_tx_packets,
        }
    }
}

/// Every link direction of `net` with its conditioners, and the reported
/// policies (ingress policers first, then each direction's egress policy in
/// direction order): built through `qoslab-policy` with the engine's names,
/// seeds and defaults. Shared by the simulator and the emulator's forwarder,
/// so both condition (and number) the same policies.
pub fn build_links(cfg: &SimConfig, net: &Net) -> Result<(Vec<Link>, Vec<Policy>), SimError> {
    let mut policies = Vec::new();
    let mut ingress_policy = Vec::new();
    for plan in &net.ingress {
        let pol = policy::build_policer(&plan.spec, &plan.path)?;
        let kind = plan.spec.kind.to_ascii_lowercase();
        let mut p = Policy::new(plan.name.clone(), kind, pol.describe());
        p.policer = Some(pol);
        policies.push(p);
        ingress_policy.push(policies.len() as u32 - 1);
    }
    let mut links = Vec::with_capacity(net.dirs.len());
    for (i, d) in net.dirs.iter().enumerate() {
        let name = format!("{} egress", net.dir_name(i as u32));
        let device = || -> Result<Fifo, SimError> {
            Fifo::new(FifoLimit::Packets(d.params.queue_limit_packets), false)
                .map_err(|e| cfg_err(format!("{}.queue_limit_packets", d.path), e.message))
        };
        let mut egress_policer = None;
        let mut queue_policy = None;
        let mut stab = None;
        let queue = match &d.egress {
            None => {
                let q = EgressQueue::Fifo(device()?);
                if d.report_device_queue {
                    let mut p = Policy::new(name, "fifo".into(), q.describe());
                    p.queue_dir = Some(i as u32);
                    policies.push(p);
                    queue_policy = Some(policies.len() as u32 - 1);
                }
                q
            }
            Some(plan) => {
                let (spec, table) = plan.spec.without_stab();
                stab = table;
                let (q, mut p) = match spec {
                    PolicySpec::Police(m) => {
                        let pol = policy::build_policer(m, &plan.path)?;
                        let kind = m.kind.to_ascii_lowercase();
                        let mut p = Policy::new(name, kind, pol.describe());
                        p.policer = Some(pol);
                        (EgressQueue::Fifo(device()?), p)
                    }
                    PolicySpec::Shape(s) => {
                        let sh = policy::build_shaper(s, &plan.path)?;
                        let q = EgressQueue::Shaper(sh);
                        let p = Policy::new(name, s.kind.to_ascii_lowercase(), q.describe());
                        (q, p)
                    }
                    PolicySpec::Fifo(f) => {
                        let q = EgressQueue::Fifo(policy::build_fifo(f, &plan.path)?);
                        let p = Policy::new(name, "fifo".into(), q.describe());
                        (q, p)
                    }
                    PolicySpec::Sized { .. } => {
                        return Err(cfg_err(plan.path.clone(), "one size table per policy"))
                    }
                    PolicySpec::Tree(t) => {
                        let seed = Rng::new(cfg.seed, STREAM_TREE + i as u64).next_u64();
                        let tree = crate::tree::build(t, &plan.path, seed)?;
                        let q = EgressQueue::Tree(tree);
                        let kind = t.root.kind.to_ascii_lowercase();
                        // The tree's describe rows already carry its warnings
                        // (tc's r2q/quantum, the kernel's class upgrades):
                        // adding `tree.warnings()` again printed each twice.
                        let mut p = Policy::new(name, kind, q.describe());
                        p.tree = true;
                        (q, p)
                    }
                };
                p.queue_dir = Some(i as u32);
                if let Some(t) = &stab {
                    p.res
                        .describe
                        .extend(t.describe().into_iter().map(|(k, v)| (k.to_string(), v)));
                }
                let police = p.policer.is_some();
                policies.push(p);
                let idx = policies.len() as u32 - 1;
                queue_policy = Some(idx);
                if police {
                    egress_policer = Some(idx);
                }
                q
            }
        };
        let mut l = Link::new(
            d.to,
            d.params.rate,
            ns(d.params.delay),
            d.params.loss_ppm,
            Rng::new(cfg.seed, STREAM_LINK + i as u64),
            queue,
            net.nodes[d.from as usize].timer,
        );
        l.egress_policer = egress_policer;
        l.stab = stab;
        l.queue_policy = queue_policy;
        l.timer_rng = Some(Rng::new(cfg.seed, STREAM_TIMER + i as u64));
        l.ingress_policer = d.ingress.map(|k| ingress_policy[k]);
        links.push(l);
    }
    Ok((links, policies))
}

/// One sample of every policy's queue length, bucket tokens and per-colour
/// bytes since the last sample, at `t_ns` on the series' time axis (what
/// `[record] queue / tokens / colors` ask for). `queue_of(d)` is link
/// direction `d`'s egress queue. Shared by the simulator and the emulator's
/// forwarder, so both report the same columns the same way.
pub fn sample_policies<'a>(
    series: &mut Series,
    r: &crate::config::RecordSpec,
    policies: &mut [Policy],
    now: Instant,
    t_ns: u64,
    queue_of: impl Fn(u32) -> &'a EgressQueue,
) {
    if r.queue || r.tokens {
        for (i, p) in policies.iter().enumerate() {
            let (qp, qb, tok) = match p.queue_dir {
                Some(d) => {
                    let q = queue_of(d);
                    let tok = match (&p.policer, q.tokens_bytes(now)) {
                        (Some(pol), _) => policy::meter_tokens_bytes(&pol.meter),
                        (None, t) => t,
                    };
                    (q.backlog_packets() as u64, q.backlog_bytes(), tok)
                }
                None => (
                    0,
                    0,
                    p.policer
                        .as_ref()
                        .and_then(|x| policy::meter_tokens_bytes(&x.meter)),
                ),
            };
            let s = &mut *series;
            s.queue_time_ns.push(t_ns);
            s.queue_policy.push(i as u32);
            s.queue_packets.push(qp);
            s.queue_bytes.push(qb);
            s.tokens_bytes
                .push(if r.tokens { tok.unwrap_or(-1) } else { -1 });
        }
    }
    if r.colors {
        for (i, p) in policies.iter_mut().enumerate() {
            let s = &mut *series;
            s.color_time_ns.push(t_ns);
            s.color_policy.push(i as u32);
            s.color_green_bytes
                .push(p.res.color_bytes[0] - p.last_color_bytes[0]);
            s.color_yellow_bytes
                .push(p.res.color_bytes[1] - p.last_color_bytes[1]);
            s.color_red_bytes
                .push(p.res.color_bytes[2] - p.last_color_bytes[2]);
            s.color_dropped_bytes
                .push(p.res.bytes_dropped - p.last_bytes_dropped);
            p.last_color_bytes = p.res.color_bytes;
            p.last_bytes_dropped = p.res.bytes_dropped;
        }
    }
}

#[cfg(test)]
#[path = "sim_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "sim_tcp_tests.rs"]
mod tcp_tests;

#[cfg(test)]
#[path = "sim_fetch_tests.rs"]
mod fetch_tests;

// A child of this module so it reads the built model's fields directly.
#[path = "estimate.rs"]
mod estimate;
pub use estimate::Estimate;
