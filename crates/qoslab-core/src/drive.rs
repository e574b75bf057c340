//! Run a whole trace through a conditioner: the batch entry points behind the
//! Python vectorised functions and `qoslab meter` / `qoslab shape`.
//!
//! A trace is parallel slices: arrival times (ns, non-decreasing), sizes
//! (bytes, > 0) and optionally incoming colours. Outputs are written into
//! caller-provided slices so that nothing allocates per packet.

use crate::aqm::{AnyAqm, AQM_KINDS};
use crate::meter::Policer;
use crate::packet::{Color, Packet};
use crate::params::{ConfigError, Params};
use crate::shaper::{AnyShaper, Dropped, Shaper, SHAPER_KINDS};
use crate::time::Instant;
use crate::units::{Bytes, Rate};
use core::fmt;

/// A problem with the trace itself, pointing at the packet (0-based index;
/// a CSV reader adds its header and 1-based line numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub index: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "packet {}: {}", self.index, self.message)
    }
}

impl std::error::Error for TraceError {}

/// Totals of a metered trace, per colour and for drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MeterSummary {
    pub packets: [u64; 3],
    pub bytes: [u64; 3],
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub remarked_packets: u64,
}

/// Totals of a shaped trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShapeSummary {
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Largest (departure − arrival) of a sent packet, ns.
    pub max_delay_ns: u64,
    /// Sum of (departure − arrival) over sent packets, ns.
    pub total_delay_ns: u128,
    /// Largest backlog seen right after an enqueue, packets.
    pub max_backlog_packets: u64,
}

/// Departure time written for a dropped packet.
pub const DROPPED: u64 = u64::MAX;

/// Arrival times must be below this (2^62 ns, about 146 years): the time
/// arithmetic of every conditioner is saturating `u64`, and departures must
/// fit the signed 64-bit ns the bindings return, so this leaves 2^62 ns of
/// headroom for delays. A later departure is refused ([`DEPARTURE_LIMIT_NS`]).
pub const TIME_HORIZON_NS: u64 = crate::time::TIME_HORIZON_NS;

/// A departure at or after this (2^63 ns) is refused with an error rather
/// than returned: it would not fit a signed 64-bit time (issue 15).
pub const DEPARTURE_LIMIT_NS: u64 = 1 << 63;

fn horizon_error(index: usize, what: &str, ns: u64) -> TraceError {
    TraceError {
        index,
        message: format!(
            "{what} {ns} ns is beyond qoslab's time horizon: arrival times must be \
             below 2^62 ns ({TIME_HORIZON_NS} ns, about 146 years) and departures below \
             2^63 ns (re-base the trace's times to its first packet)"
        ),
    }
}

/// Checks a chunk of a trace (lengths agree, times sorted and below the
/// horizon, sizes above zero) whose first packet is packet `base` of the
/// whole trace and follows a packet that arrived at `prev` (errors name
/// the packet's index in the whole trace).
fn check_chunk(
    times: &[u64],
    sizes: &[u32],
    base: usize,
    prev: Option<u64>,
) -> Result<(), TraceError> {
    if times.len() != sizes.len() {
        return Err(TraceError {
            index: base + times.len().min(sizes.len()),
            message: format!("{} times but {} sizes", times.len(), sizes.len()),
        });
    }
    // One branch-free pass for the common, valid chunk; only a chunk with
    // a fault runs the passes below, which name the fault the same way as
    // before (the horizon first, then sizes and order, in trace order).
    let mut ok = true;
    let mut before_ns = prev.unwrap_or(0);
    for (&t, &size) in times.iter().zip(sizes) {
        ok &= (size != 0) & (t >= before_ns) & (t < TIME_HORIZON_NS);
        before_ns = t;
    }
    if ok {
        return Ok(());
    }
    if let Some(i) = times.iter().position(|&t| t >= TIME_HORIZON_NS) {
        return Err(horizon_error(base + i, "time_ns", times[i]));
    }
    let mut before = prev;
    for i in 0..times.len() {
        if sizes[i] == 0 {
            return Err(TraceError {
                index: base + i,
                message: "size_bytes must be greater than zero".into(),
            });
        }
        if let Some(b) = before.filter(|&b| times[i] < b) {
            return Err(TraceError {
                index: base + i,
                message: format!(
                    "time_ns {} is before the previous packet's {b}; traces must be sorted by time",
                    times[i],
                ),
            });
        }
        before = Some(times[i]);
    }
    Ok(())
}

/// Meters every packet; writes its colour (0 green, 1 yellow, 2 red) and its
/// action code ([`crate::packet::Action::code`]) into `out_color`/`out_action`.
pub fn meter_trace(
    policer: &mut Policer,
    times: &[u64],
    sizes: &[u32],
    colors_in: Option<&[u8]>,
    out_color: &mut [u8],
    out_action: &mut [u8],
) -> Result<MeterSummary, TraceError> {
    let mut m = MeterStream::default();
    m.push(policer, times, sizes, colors_in, out_color, out_action)?;
    Ok(m.summary())
}

/// [`meter_trace`] over a trace given in consecutive chunks, so that a
/// trace of any length runs in bounded memory: the meter keeps its own
/// state between calls, and this keeps the totals, the packet count (errors
/// name a packet's index in the whole trace) and the last arrival (the
/// order check spans chunks). Any split gives the same colours and totals
/// as one call over the whole trace (tested).
#[derive(Clone, Debug, Default)]
pub struct MeterStream {
    s: MeterSummary,
    packets: usize,
    last_ns: Option<u64>,
}

impl MeterStream {
    /// Meters the next chunk (see [`meter_trace`]). After an error the
    /// stream must not be pushed again: the meter may have seen part of it.
    pub fn push(
        &mut self,
        policer: &mut Policer,
        times: &[u64],
        sizes: &[u32],
        colors_in: Option<&[u8]>,
        out_color: &mut [u8],
        out_action: &mut [u8],
    ) -> Result<(), TraceError> {
        let base = self.packets;
        check_chunk(times, sizes, base, self.last_ns)?;
        let n = times.len();
        if out_color.len() != n || out_action.len() != n || colors_in.is_some_and(|c| c.len() != n)
        {
            return Err(TraceError {
                index: base,
                message: "output/colour arrays must have one entry per packet".into(),
            });
        }
        if let Some(c) = colors_in {
            if let Some(i) = c.iter().position(|&x| Color::from_u8(x).is_none()) {
                return Err(TraceError {
                    index: base + i,
                    message: format!("color {} is not 0 (green), 1 (yellow) or 2 (red)", c[i]),
                });
            }
        }
        // Colour the chunk with the meter kind chosen once, then apply the
        // per-colour actions (a table of three) and count.
        policer
            .meter
            .color_trace(times, sizes, colors_in, out_color);
        let verdicts = Color::ALL.map(|c| policer.actions.verdict(c).action);
        let codes = verdicts.map(|a| a.code());
        let s = &mut self.s;
        for ((&c, a), &size) in out_color.iter().zip(out_action.iter_mut()).zip(sizes) {
            let ci = c as usize;
            *a = codes[ci];
            s.packets[ci] += 1;
            s.bytes[ci] += size as u64;
            match verdicts[ci] {
                crate::packet::Action::Drop => {
                    s.dropped_packets += 1;
                    s.dropped_bytes += size as u64;
                }
                crate::packet::Action::SetDscp(_) => s.remarked_packets += 1,
                crate::packet::Action::Transmit => {}
            }
        }
        self.packets += n;
        self.last_ns = times.last().copied().or(self.last_ns);
        Ok(())
    }

    /// Totals so far.
    pub fn summary(&self) -> MeterSummary {
        self.s
    }

    /// Packets metered so far.
    pub fn packets(&self) -> usize {
        self.packets
    }
}

/// Runs the trace through `shaper` as an event loop: before each arrival,
/// release every packet whose time has come, at the time it comes; after the
/// last arrival, drain. Writes each packet's departure time (ns), or
/// [`DROPPED`], into `departures`.
///
/// Drops outside `enqueue`'s return ([`Shaper::drain_dropped`]: CoDel at
/// dequeue, SFQ at a rehash, a [`crate::sched::Gate`] refusing its child's
/// head) are collected after every call and counted as dropped. A
/// `dequeue` that gives nothing after `next_ready` said ready (everything
/// waiting was dropped, or a gate's shaper held its new head back) is
/// followed by a fresh `next_ready`; the loop stops only if a call makes no
/// progress at all (no packet, no drop, not later), which would be a bug.
pub fn shape_trace<S: Shaper>(
    shaper: &mut S,
    times: &[u64],
    sizes: &[u32],
    departures: &mut [u64],
) -> Result<ShapeSummary, TraceError> {
    shape_trace_fields(shaper, times, sizes, &TraceFields::default(), departures)
}

/// Optional per-packet header fields of a trace, beyond time and size: a
/// missing column leaves the field as [`Packet::new`] has it (flow 0,
/// DSCP 0, green, an all-zero 5-tuple), so every filter that looks at it
/// sees the same value for every packet and the default class gets them.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceFields<'a> {
    /// Incoming colour, 0 green, 1 yellow, 2 red.
    pub colors: Option<&'a [u8]>,
    /// Flow id: what SFQ, FQ-CoDel and fair-queue hash when the 5-tuple is
    /// all zero ([`crate::classify::flow_hash`]).
    pub flow: Option<&'a [u32]>,
    /// DiffServ code point, 0..=63.
    pub dscp: Option<&'a [u8]>,
    pub src_addr: Option<&'a [u32]>,
    pub dst_addr: Option<&'a [u32]>,
    pub src_port: Option<&'a [u16]>,
    pub dst_port: Option<&'a [u16]>,
    pub protocol: Option<&'a [u8]>,
}

impl TraceFields<'_> {
    /// No header column at all: every packet is [`Packet::new`].
    fn is_plain(&self) -> bool {
        self.colors.is_none()
            && self.flow.is_none()
            && self.dscp.is_none()
            && self.src_addr.is_none()
            && self.dst_addr.is_none()
            && self.src_port.is_none()
            && self.dst_port.is_none()
            && self.protocol.is_none()
    }

    fn check(&self, n: usize) -> Result<(), TraceError> {
        let lens = [
            ("color", self.colors.map(<[u8]>::len)),
            ("flow", self.flow.map(<[u32]>::len)),
            ("dscp", self.dscp.map(<[u8]>::len)),
            ("src", self.src_addr.map(<[u32]>::len)),
            ("dst", self.dst_addr.map(<[u32]>::len)),
            ("src_port", self.src_port.map(<[u16]>::len)),
            ("dst_port", self.dst_port.map(<[u16]>::len)),
            ("proto", self.protocol.map(<[u8]>::len)),
        ];
        for (name, len) in lens {
            if len.is_some_and(|l| l != n) {
                return Err(TraceError {
                    index: 0,
                    message: format!("column {name} must have one entry per packet"),
                });
            }
        }
        Ok(())
    }

    /// Packet `i` of `size_bytes` with the fields given.
    fn packet(&self, i: usize, size_bytes: u32) -> Result<Packet, TraceError> {
        let mut p = Packet::new(i as u64, size_bytes);
        if let Some(c) = self.colors {
            p.color = Color::from_u8(c[i]).ok_or_else(|| TraceError {
                index: i,
                message: format!("color {} is not 0 (green), 1 (yellow) or 2 (red)", c[i]),
            })?;
        }
        if let Some(d) = self.dscp {
            if d[i] > 63 {
                return Err(TraceError {
                    index: i,
                    message: format!("dscp {} is above 63", d[i]),
                });
            }
            p.dscp = d[i];
        }
        let pick32 = |c: Option<&[u32]>, d: u32| c.map_or(d, |v| v[i]);
        let pick16 = |c: Option<&[u16]>, d: u16| c.map_or(d, |v| v[i]);
        p.flow = pick32(self.flow, p.flow);
        let t = &mut p.tuple;
        t.src_addr = pick32(self.src_addr, t.src_addr);
        t.dst_addr = pick32(self.dst_addr, t.dst_addr);
        t.src_port = pick16(self.src_port, t.src_port);
        t.dst_port = pick16(self.dst_port, t.dst_port);
        t.protocol = self.protocol.map_or(t.protocol, |v| v[i]);
        Ok(p)
    }
}

/// [`shape_trace`] with packet header fields (colour, flow, DSCP, 5-tuple)
/// from `fields`, for schedulers and filters that look at them.
pub fn shape_trace_fields<S: Shaper>(
    shaper: &mut S,
    times: &[u64],
    sizes: &[u32],
    fields: &TraceFields<'_>,
    departures: &mut [u64],
) -> Result<ShapeSummary, TraceError> {
    let n = times.len();
    if departures.len() != n {
        return Err(TraceError {
            index: 0,
            message: "departures must have one entry per packet".into(),
        });
    }
    let mut run = ShapeStream::default();
    run.push(shaper, times, sizes, fields)?;
    let s = run.finish(shaper)?;
    let got = run.take(departures);
    debug_assert_eq!(got, n);
    Ok(s)
}

/// Departure slot of a packet still in the shaper (neither sent nor
/// dropped yet); never a real departure (those are below 2^63).
const PENDING: u64 = u64::MAX - 1;

/// [`shape_trace_fields`] over a trace given in consecutive chunks, so that
/// a trace of any length runs in bounded memory: the shaper keeps its
/// queue, and this keeps the event loop's clock, the totals and one slot
/// (arrival, departure) per packet from the oldest one not yet sent or
/// dropped to the newest — what is in the shaper, not the whole trace.
/// [`Self::take`] hands out the departures that are known, in trace order;
/// [`Self::finish`] drains the shaper after the last chunk.
///
/// Splitting changes nothing: before each arrival the loop releases what
/// is due by then, exactly as over the whole trace, so any split gives the
/// same departures and totals (tested with chunks of 1, 7, 4096 packets).
#[derive(Clone, Debug, Default)]
pub struct ShapeStream {
    s: ShapeSummary,
    clock: Instant,
    dropped: Vec<Dropped>,
    /// Trace index of `slots[head]`.
    first: usize,
    /// (arrival ns, departure ns / [`DROPPED`] / [`PENDING`]) per packet
    /// from `first` on, at `slots[head..]`; the slots before `head` were
    /// taken already. A `Vec` with a start offset rather than a
    /// `VecDeque`: the per-packet push and the lookup of a departing
    /// packet's slot then need no wrap-around arithmetic (issue 12: the
    /// deque's index mapping cost a few instructions per packet). The taken
    /// prefix is dropped in [`Self::push_with`] once it is at least half of
    /// the vector, so each slot is moved at most once on average.
    slots: Vec<(u64, u64)>,
    head: usize,
    last_ns: Option<u64>,
}

impl ShapeStream {
    /// Enqueues the next chunk (`fields` are the chunk's own columns),
    /// releasing before each arrival what is due by then. After an error
    /// the stream must not be pushed again.
    pub fn push<S: Shaper>(
        &mut self,
        shaper: &mut S,
        times: &[u64],
        sizes: &[u32],
        fields: &TraceFields<'_>,
    ) -> Result<(), TraceError> {
        // An enum of conditioners picks its variant here, once per chunk.
        shaper.push_chunk(self, times, sizes, fields)
    }

    /// [`Self::push`] for one concrete conditioner type (what
    /// [`Shaper::push_chunk`] calls).
    #[doc(hidden)]
    pub fn push_with<S: Shaper>(
        &mut self,
        shaper: &mut S,
        times: &[u64],
        sizes: &[u32],
        fields: &TraceFields<'_>,
    ) -> Result<(), TraceError> {
        let base = self.packets();
        check_chunk(times, sizes, base, self.last_ns)?;
        let n = times.len();
        fields.check(n).map_err(|e| at(e, base))?;
        if self.head > 0 && self.head >= self.slots.len() / 2 {
            self.slots.drain(..self.head);
            self.head = 0;
        }
        self.slots.try_reserve(n).map_err(|_| TraceError {
            index: base,
            message: format!("out of memory holding {n} more packets"),
        })?;
        // Without header columns every packet is `Packet::new` (the same
        // value `fields.packet` builds then), so the loop skips the eight
        // column checks per packet.
        if fields.is_plain() {
            self.push_loop(shaper, times, sizes, base, |_, size| {
                Ok(Packet::new(0, size))
            })?;
        } else {
            self.push_loop(shaper, times, sizes, base, |i, size| {
                fields.packet(i, size).map_err(|e| at(e, base))
            })?;
        }
        self.last_ns = times.last().copied().or(self.last_ns);
        Ok(())
    }

    #[inline(always)]
    fn push_loop<S: Shaper>(
        &mut self,
        shaper: &mut S,
        times: &[u64],
        sizes: &[u32],
        base: usize,
        packet: impl Fn(usize, u32) -> Result<Packet, TraceError>,
    ) -> Result<(), TraceError> {
        for (i, (&t, &size)) in times.iter().zip(sizes).enumerate() {
            let now = Instant::from_ns(t);
            self.release(shaper, Some(now))?;
            self.clock = self.clock.max(now);
            let mut pkt = packet(i, size)?;
            pkt.id = (base + i) as u64;
            self.slots.push((t, PENDING));
            if let Err(d) = shaper.enqueue(now, pkt) {
                self.drop_packet(&d);
            }
            self.count_drops(shaper);
            self.s.max_backlog_packets = self
                .s
                .max_backlog_packets
                .max(shaper.backlog_packets() as u64);
        }
        Ok(())
    }

    /// After the last chunk: sends everything still queued. Every packet's
    /// departure is then known ([`Self::take`]); a packet the shaper neither
    /// sent nor reported dropped is [`DROPPED`].
    pub fn finish<S: Shaper>(&mut self, shaper: &mut S) -> Result<ShapeSummary, TraceError> {
        shaper.finish_stream(self)
    }

    /// [`Self::finish`] for one concrete conditioner type (what
    /// [`Shaper::finish_stream`] calls).
    #[doc(hidden)]
    pub fn finish_with<S: Shaper>(&mut self, shaper: &mut S) -> Result<ShapeSummary, TraceError> {
        self.release(shaper, None)?;
        if shaper.backlog_packets() > 0 && shaper.next_ready(self.clock) == Some(Instant::NEVER) {
            // A wait that saturated to "never": these packets would depart
            // beyond u64 ns; refused, not reported as dropped.
            let i = self.slots[self.head..]
                .iter()
                .position(|&(_, d)| d == PENDING);
            let i = self.first + i.unwrap_or(0);
            return Err(horizon_error(i, "a departure after", DEPARTURE_LIMIT_NS));
        }
        for slot in self.slots[self.head..]
            .iter_mut()
            .filter(|(_, d)| *d == PENDING)
        {
            slot.1 = DROPPED;
        }
        Ok(self.s)
    }

    /// Moves the departures known so far (ns, or [`DROPPED`]), in trace
    /// order, into the front of `out`, at most `out.len()` of them; returns
    /// how many. A packet still in the shaper holds back every later one.
    pub fn take(&mut self, out: &mut [u64]) -> usize {
        // Copy, then mark the taken slots as gone at once (a `pop_front`
        // per packet cost about 20 instructions).
        let mut k = 0;
        for &(_, d) in &self.slots[self.head..] {
            if k == out.len() || d == PENDING {
                break;
            }
            out[k] = d;
            k += 1;
        }
        self.head += k;
        self.first += k;
        if self.head == self.slots.len() {
            // Nothing left: start over at the front (no move needed).
            self.slots.clear();
            self.head = 0;
        }
        k
    }

    /// How many departures [`Self::take`] would hand out now.
    pub fn ready(&self) -> usize {
        let live = &self.slots[self.head..];
        live.iter()
            .position(|&(_, d)| d == PENDING)
            .unwrap_or(live.len())
    }

    /// Packets pushed so far.
    pub fn packets(&self) -> usize {
        self.first + self.slots.len() - self.head
    }

    /// Totals so far.
    pub fn summary(&self) -> ShapeSummary {
        self.s
    }

    fn slot(&mut self, id: u64) -> Option<&mut (u64, u64)> {
        let k = (id as usize).checked_sub(self.first)?;
        self.slots.get_mut(self.head + k)
    }

    fn drop_packet(&mut self, d: &Dropped) {
        self.s.dropped_packets += 1;
        self.s.dropped_bytes += d.packet.size_bytes as u64;
        if let Some(slot) = self.slot(d.packet.id) {
            slot.1 = DROPPED;
        }
    }

    /// Counts the drops `shaper` made outside `enqueue`'s return; true if any.
    #[inline(always)]
    fn count_drops<S: Shaper>(&mut self, shaper: &mut S) -> bool {
        shaper.drain_dropped(&mut self.dropped);
        if self.dropped.is_empty() {
            return false;
        }
        let mut dropped = std::mem::take(&mut self.dropped);
        for d in dropped.drain(..) {
            self.drop_packet(&d);
        }
        self.dropped = dropped;
        true
    }

    /// Releases every packet ready by `until` (all of them if `None`).
    #[inline(always)]
    fn release<S: Shaper>(
        &mut self,
        shaper: &mut S,
        until: Option<Instant>,
    ) -> Result<(), TraceError> {
        while let Some(ready) = shaper.next_ready(self.clock) {
            if until.is_some_and(|u| ready > u) || ready == Instant::NEVER {
                break;
            }
            let at = ready.max(self.clock);
            let got = shaper.dequeue(at);
            let dropped_some = self.count_drops(shaper);
            self.clock = at;
            let Some(p) = got else {
                let later = shaper.next_ready(at).is_none_or(|t| t > at);
                if !dropped_some && !later {
                    // Promised a packet now, gave none, dropped none:
                    // looping would spin forever (a bug, caught by tests).
                    debug_assert!(
                        false,
                        "next_ready said {ready:?} but dequeue({at:?}) gave nothing"
                    );
                    break;
                }
                continue;
            };
            let i = p.id as usize;
            if at.as_ns() >= DEPARTURE_LIMIT_NS {
                return Err(horizon_error(i, "departure", at.as_ns()));
            }
            let Some(slot) = self.slot(p.id) else {
                debug_assert!(false, "packet {i} left the shaper twice");
                continue;
            };
            slot.1 = at.as_ns();
            let delay = at.as_ns() - slot.0;
            self.s.sent_packets += 1;
            self.s.sent_bytes += p.size_bytes as u64;
            self.s.max_delay_ns = self.s.max_delay_ns.max(delay);
            self.s.total_delay_ns += delay as u128;
        }
        Ok(())
    }
}

/// `e` (indexed within a chunk) indexed within the whole trace.
fn at(mut e: TraceError, base: usize) -> TraceError {
    e.index += base;
    e
}

/// A link of `rate` serving queue `S`: the queue gives up its head only
/// when the link is free, and the link is then busy for the packet's
/// transmission time (`size·8/rate`, rounded up to the ns).
///
/// This is how a root qdisc meets its device in Linux: `__qdisc_run` /
/// `qdisc_restart` (net/sched/sch_generic.c) dequeue the next packet when
/// the driver can take one, i.e. when the previous one is on the wire. A
/// bare AQM ([`AnyAqm`]) has no service rate of its own (it is ready
/// whenever it holds a packet), so a trace through it needs this link to
/// build a queue at all. The packet leaves the queue — its sojourn, as
/// CoDel (RFC 8289 §3) and PIE (RFC 8033 §4.2 timestamps) measure it, ends
/// — at the start of its transmission, and that instant is what
/// [`shape_trace`] records as its departure.
#[derive(Clone, Debug)]
pub struct Link<S> {
    queue: S,
    rate: Rate,
    free_at: Instant,
}

impl<S: Shaper> Link<S> {
    /// `rate` must be above zero (a zero-rate link never sends).
    pub fn new(queue: S, rate: Rate) -> Result<Self, ConfigError> {
        if rate.bps() == 0 {
            return Err(ConfigError::new("rate", "must be greater than zero"));
        }
        Ok(Link {
            queue,
            rate,
            free_at: Instant::ZERO,
        })
    }

    /// The queue served (its counters).
    pub fn queue(&self) -> &S {
        &self.queue
    }
}

impl<S: Shaper> Shaper for Link<S> {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        self.queue.enqueue(now, pkt)
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        if now < self.free_at {
            return None;
        }
        let p = self.queue.dequeue(now)?;
        let tx = self.rate.tx_time(Bytes::new(p.size_bytes as u64));
        self.free_at = now.saturating_add(tx);
        Some(p)
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        // Asked at `free_at` at the latest, so that the queue sees the
        // instant the packet would really leave (CoDel decides there).
        self.queue
            .next_ready(now.max(self.free_at))
            .map(|t| t.max(self.free_at))
    }
    fn backlog_packets(&self) -> usize {
        self.queue.backlog_packets()
    }
    fn backlog_bytes(&self) -> u64 {
        self.queue.backlog_bytes()
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let mut d = self.queue.describe();
        d.push(("rate", self.rate.to_string()));
        d.push(("rate_bps", self.rate.bps().to_string()));
        d
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        self.queue.drain_dropped(out);
    }
}

/// Every kind [`shape_trace`] can run from string parameters: a shaper
/// ([`SHAPER_KINDS`]) or an AQM ([`AQM_KINDS`]) behind a [`Link`] of the
/// required parameter `rate`.
///
/// The AQMs stay out of [`AnyShaper`] on purpose: the simulator's flat
/// `shape = {...}` path does not drain [`Shaper::drain_dropped`].
#[derive(Clone, Debug)]
// One per trace, built once.
#[allow(clippy::large_enum_variant)]
pub enum TraceShaper {
    Shaper(AnyShaper),
    Aqm(Link<AnyAqm>),
}

/// What an AQM kind needs on a trace besides its own keys.
const AQM_RATE_NOTE: &str = "; on a trace also rate (required: the link draining the queue)";

impl TraceShaper {
    /// Builds shaper or AQM `kind`; an AQM takes `rate` (required) for its
    /// link, every other key is the AQM's own. Unknown keys are rejected.
    pub fn from_params(kind: &str, mut p: Params) -> Result<Self, ConfigError> {
        let k = kind.to_ascii_lowercase();
        if SHAPER_KINDS.iter().any(|(n, _)| *n == k) {
            return AnyShaper::from_params(&k, p).map(TraceShaper::Shaper);
        }
        if !AQM_KINDS.iter().any(|(n, _)| *n == k) {
            let all: Vec<(&str, &str)> = SHAPER_KINDS.iter().chain(AQM_KINDS).copied().collect();
            return Err(crate::meter::unknown_kind("shaper", &k, &all));
        }
        let rate = p.opt_rate("rate")?.ok_or_else(|| {
            ConfigError::new(
                "rate",
                format!(
                    "missing: {k} on a trace needs rate, the link draining its queue (e.g. 10mbit)"
                ),
            )
        })?;
        let aqm = AnyAqm::from_params(&k, p)?;
        Link::new(aqm, rate).map(TraceShaper::Aqm)
    }

    /// (kind, description) of every kind [`Self::from_params`] builds:
    /// shapers, then AQMs (their descriptions say that they need `rate`).
    pub fn kinds() -> Vec<(&'static str, String)> {
        let shapers = SHAPER_KINDS.iter().map(|(k, d)| (*k, d.to_string()));
        let aqms = AQM_KINDS
            .iter()
            .map(|(k, d)| (*k, format!("{d}{AQM_RATE_NOTE}")));
        shapers.chain(aqms).collect()
    }
}

/// `match` over both [`TraceShaper`] variants, binding the inner one to `$s`.
macro_rules! each_trace_shaper {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            TraceShaper::Shaper($s) => $e,
            TraceShaper::Aqm($s) => $e,
        }
    };
}

impl Shaper for TraceShaper {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        each_trace_shaper!(self, s => s.enqueue(now, pkt))
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        each_trace_shaper!(self, s => s.dequeue(now))
    }
    #[inline]
    fn next_ready(&self, now: Instant) -> Option<Instant> {
        each_trace_shaper!(self, s => s.next_ready(now))
    }
    fn backlog_packets(&self) -> usize {
        each_trace_shaper!(self, s => s.backlog_packets())
    }
    fn backlog_bytes(&self) -> u64 {
        each_trace_shaper!(self, s => s.backlog_bytes())
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        each_trace_shaper!(self, s => s.describe())
    }
    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        each_trace_shaper!(self, s => s.drain_dropped(out))
    }
    fn push_chunk(
        &mut self,
        stream: &mut ShapeStream,
        times: &[u64],
        sizes: &[u32],
        fields: &TraceFields<'_>,
    ) -> Result<(), TraceError> {
        each_trace_shaper!(self, s => s.push_chunk(stream, times, sizes, fields))
    }
    fn finish_stream(&mut self, stream: &mut ShapeStream) -> Result<ShapeSummary, TraceError> {
        each_trace_shaper!(self, s => s.finish_stream(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::Policer;
    use crate::params::Params;

    /// A tbf (one 1000-byte packet per ms) draining a CoDel child offered
    /// twice that: CoDel drops at dequeue (when it drops everything
    /// waiting, the gate's `dequeue` gives nothing after `next_ready` said
    /// ready). Every packet is sent or dropped, and the summary agrees with the
    /// departures.
    #[test]
    fn shape_trace_counts_drops_at_dequeue_and_survives_empty_dequeues() {
        use crate::aqm::AnyAqm;
        use crate::sched::Gate;
        use crate::shaper::Tbf;
        let mut p = Params::new(
            "tbf",
            [("rate", "8mbit"), ("burst", "1000"), ("limit", "3000")],
        );
        let tbf = Tbf::from_params(&mut p).unwrap();
        let codel = AnyAqm::from_params(
            "codel",
            Params::new(
                "codel",
                [("limit", "10000"), ("target", "1ms"), ("interval", "10ms")],
            ),
        )
        .unwrap();
        let mut g = Gate::new(tbf, Box::new(codel));
        let n = 4000;
        let times: Vec<u64> = (0..n as u64).map(|i| i * 500_000).collect();
        let sizes = vec![1000u32; n];
        let mut dep = vec![0u64; n];
        let s = shape_trace(&mut g, &times, &sizes, &mut dep).unwrap();
        let lost = dep.iter().filter(|&&d| d == DROPPED).count() as u64;
        assert!(s.dropped_packets > 1000, "{s:?}");
        assert_eq!(s.sent_packets + s.dropped_packets, n as u64, "{s:?}");
        assert_eq!(lost, s.dropped_packets);
        assert_eq!(s.dropped_bytes, 1000 * s.dropped_packets);
        // The sent ones left at the tbf's rate, in order.
        let sent: Vec<u64> = dep.iter().copied().filter(|&d| d != DROPPED).collect();
        assert!(sent.windows(2).all(|w| w[1] >= w[0] + 1_000_000), "spacing");
    }

    /// A bursty trace (seeded): gaps of 0 to ~2 ms, sizes 40 to 1500 bytes.
    fn bursty(n: usize, seed: u64) -> (Vec<u64>, Vec<u32>) {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut t = 0u64;
        (0..n)
            .map(|_| {
                let r = next();
                t += if r % 4 == 0 { 0 } else { (r >> 8) % 2_000_000 };
                (t, 40 + ((r >> 32) % 1461) as u32)
            })
            .unzip()
    }

    /// Parameters of the shapers the trace-loop tests drive.
    const TBF: &[(&str, &str)] = &[("rate", "2mbit"), ("burst", "3000"), ("limit", "20kb")];
    const CODEL: &[(&str, &str)] = &[("rate", "2mbit"), ("target", "2ms"), ("interval", "20ms")];
    const RAS: &[(&str, &str)] = &[
        ("cbs", "3000"),
        ("pbs", "6000"),
        ("cir", "1mbit"),
        ("pir", "2mbit"),
        ("mir", "10mbit"),
        ("cir_th", "3000"),
        ("pir_th", "6000"),
        ("mir_th", "12000"),
        ("buffer", "20000"),
    ];

    /// Shaping in chunks of 1, 7 and 4096 packets gives exactly the
    /// departures and totals of one call over the whole trace, for shapers
    /// and AQMs (their state is carried across chunks), and holds a window
    /// of the packets still in the shaper, not the trace.
    #[test]
    fn shape_stream_in_chunks_equals_the_whole_trace() {
        let kinds: &[(&str, &[(&str, &str)])] = &[
            ("tbf", TBF),
            ("shape", &[("cir", "2mbit")]),
            ("g-trras", RAS),
            (
                "red",
                &[
                    ("rate", "2mbit"),
                    ("limit", "60kb"),
                    ("min", "6kb"),
                    ("max", "18kb"),
                    ("avpkt", "1000"),
                    ("bandwidth", "2mbit"),
                ],
            ),
            ("codel", CODEL),
            ("pie", &[("rate", "2mbit"), ("target", "5ms")]),
        ];
        let (times, sizes) = bursty(20_000, 7);
        for (kind, pairs) in kinds {
            let build = || trace_shaper(kind, pairs).unwrap_or_else(|e| panic!("{kind}: {e}"));
            let mut whole = vec![0u64; times.len()];
            let want = shape_trace(&mut build(), &times, &sizes, &mut whole).unwrap();
            assert!(
                want.sent_packets > 0 && want.dropped_packets > 0,
                "{kind}: {want:?}"
            );
            for chunk in [1, 7, 4096] {
                let mut sh = build();
                let mut run = ShapeStream::default();
                let mut got = vec![0u64; times.len()];
                let (mut done, mut held) = (0, 0);
                for (t, s) in times.chunks(chunk).zip(sizes.chunks(chunk)) {
                    run.push(&mut sh, t, s, &TraceFields::default()).unwrap();
                    done += run.take(&mut got[done..]);
                    held = held.max(run.packets() - done);
                }
                assert!(held <= times.len() / 5, "{kind}: {held} held");
                let s = run.finish(&mut sh).unwrap();
                done += run.take(&mut got[done..]);
                assert_eq!(done, times.len(), "{kind}/{chunk}");
                assert_eq!(s, want, "{kind}/{chunk}");
                assert!(got == whole, "{kind}/{chunk}: departures differ");
            }
        }
    }

    /// The event loop as a plain reference, written apart from
    /// [`ShapeStream`] (no slot window, no chunking): before each arrival
    /// it dequeues whatever the shaper says is ready by then, at
    /// max(ready, clock); after the last one, everything left. Departures
    /// are indexed by packet id; one never sent stays [`DROPPED`].
    fn reference_shape<S: Shaper>(
        sh: &mut S,
        times: &[u64],
        sizes: &[u32],
    ) -> (Vec<u64>, ShapeSummary) {
        let mut dep = vec![DROPPED; times.len()];
        let mut s = ShapeSummary::default();
        let mut clock = Instant::ZERO;
        let mut dropped = Vec::new();
        let count = |s: &mut ShapeSummary, d: &[Dropped]| {
            for d in d {
                s.dropped_packets += 1;
                s.dropped_bytes += d.packet.size_bytes as u64;
            }
        };
        let mut release = |sh: &mut S,
                           clock: &mut Instant,
                           s: &mut ShapeSummary,
                           dep: &mut [u64],
                           until: Option<u64>| {
            while let Some(ready) = sh.next_ready(*clock) {
                if ready == Instant::NEVER || until.is_some_and(|u| ready.as_ns() > u) {
                    break;
                }
                let at = ready.max(*clock);
                let got = sh.dequeue(at);
                sh.drain_dropped(&mut dropped);
                count(s, &dropped);
                dropped.clear();
                *clock = at;
                if let Some(p) = got {
                    let delay = at.as_ns() - times[p.id as usize];
                    dep[p.id as usize] = at.as_ns();
                    s.sent_packets += 1;
                    s.sent_bytes += p.size_bytes as u64;
                    s.max_delay_ns = s.max_delay_ns.max(delay);
                    s.total_delay_ns += delay as u128;
                }
            }
        };
        for (i, (&t, &size)) in times.iter().zip(sizes).enumerate() {
            release(sh, &mut clock, &mut s, &mut dep, Some(t));
            clock = clock.max(Instant::from_ns(t));
            let mut p = Packet::new(0, size);
            p.id = i as u64;
            if let Err(d) = sh.enqueue(Instant::from_ns(t), p) {
                s.dropped_packets += 1;
                s.dropped_bytes += d.packet.size_bytes as u64;
            }
            let mut more = Vec::new();
            sh.drain_dropped(&mut more);
            for d in &more {
                s.dropped_packets += 1;
                s.dropped_bytes += d.packet.size_bytes as u64;
            }
            s.max_backlog_packets = s.max_backlog_packets.max(sh.backlog_packets() as u64);
        }
        release(sh, &mut clock, &mut s, &mut dep, None);
        (dep, s)
    }

    /// Differential test of the trace loop (issue 12 reshaped its slot
    /// bookkeeping): every departure and total of [`shape_trace`] and of a
    /// stream in chunks of 1 and 7 equals the plain reference loop's, for
    /// the shapers the loop drives and an AQM behind a link.
    #[test]
    fn shape_stream_matches_a_plain_reference_loop() {
        let kinds: &[(&str, &[(&str, &str)])] = &[
            ("tbf", TBF),
            ("shape", &[("cir", "2mbit"), ("queue-limit", "20")]),
            ("g-trras", RAS),
            ("codel", CODEL),
        ];
        let (times, sizes) = bursty(20_000, 11);
        for (kind, pairs) in kinds {
            let build = || trace_shaper(kind, pairs).unwrap_or_else(|e| panic!("{kind}: {e}"));
            let (want_dep, want) = reference_shape(&mut build(), &times, &sizes);
            assert!(
                want.sent_packets > 0 && want.dropped_packets > 0,
                "{kind}: {want:?}"
            );
            let mut whole = vec![0u64; times.len()];
            let got = shape_trace(&mut build(), &times, &sizes, &mut whole).unwrap();
            assert_eq!(got, want, "{kind}");
            assert!(whole == want_dep, "{kind}: departures differ");
            for chunk in [1, 7] {
                let mut sh = build();
                let mut run = ShapeStream::default();
                let mut out = vec![0u64; times.len()];
                let (mut done, mut pushed) = (0, 0);
                for (t, s) in times.chunks(chunk).zip(sizes.chunks(chunk)) {
                    run.push(&mut sh, t, s, &TraceFields::default()).unwrap();
                    // Take a few at a time, so that taken slots pile up
                    // ahead of the live ones and get compacted.
                    let end = (done + 3).min(out.len());
                    done += run.take(&mut out[done..end]);
                    pushed += t.len();
                    assert_eq!(run.packets(), pushed, "{kind}/{chunk}");
                    assert!(done + run.ready() <= pushed, "{kind}/{chunk}");
                }
                assert_eq!(run.finish(&mut sh).unwrap(), want, "{kind}/{chunk}");
                done += run.take(&mut out[done..]);
                assert_eq!(done, times.len(), "{kind}/{chunk}");
                assert!(out == want_dep, "{kind}/{chunk}: departures differ");
            }
        }
    }

    /// Metering in chunks gives the colours, actions and totals of one
    /// call; the order check and error indices span chunks.
    #[test]
    fn meter_stream_in_chunks_equals_the_whole_trace() {
        let (times, sizes) = bursty(20_000, 11);
        let kinds: &[(&str, &[(&str, &str)])] = &[
            (
                "srtcm",
                &[
                    ("cir", "2mbit"),
                    ("cbs", "3000"),
                    ("ebs", "6000"),
                    ("violate", "drop"),
                ],
            ),
            (
                "trtcm",
                &[
                    ("cir", "1mbit"),
                    ("pir", "3mbit"),
                    ("cbs", "3000"),
                    ("pbs", "6000"),
                ],
            ),
            ("tswtcm", &[("ctr", "1mbit"), ("ptr", "3mbit")]),
        ];
        for (kind, pairs) in kinds {
            let build =
                || Policer::from_params(kind, Params::new(kind, pairs.iter().copied())).unwrap();
            let n = times.len();
            let (mut c, mut a) = (vec![0u8; n], vec![0u8; n]);
            let want = meter_trace(&mut build(), &times, &sizes, None, &mut c, &mut a).unwrap();
            for chunk in [1, 7, 4096] {
                let mut pol = build();
                let mut m = MeterStream::default();
                let (mut c2, mut a2) = (vec![0u8; n], vec![0u8; n]);
                for (k, (t, s)) in times.chunks(chunk).zip(sizes.chunks(chunk)).enumerate() {
                    let r = k * chunk..k * chunk + t.len();
                    m.push(&mut pol, t, s, None, &mut c2[r.clone()], &mut a2[r])
                        .unwrap();
                }
                assert_eq!(m.summary(), want, "{kind}/{chunk}");
                assert!(c == c2 && a == a2, "{kind}/{chunk}");
            }
        }
        let p = [("cir", "8mbit"), ("cbs", "1000"), ("ebs", "1000")];
        let mut pol = Policer::from_params("srtcm", Params::new("srtcm", p)).unwrap();
        let mut m = MeterStream::default();
        m.push(&mut pol, &[5, 9], &[1, 1], None, &mut [0; 2], &mut [0; 2])
            .unwrap();
        let e = m
            .push(&mut pol, &[8], &[1], None, &mut [0; 1], &mut [0; 1])
            .unwrap_err();
        assert_eq!(e.index, 2, "{e}");
        let mut sh = trace_shaper("codel", &[("rate", "1mbit")]).unwrap();
        let mut run = ShapeStream::default();
        run.push(&mut sh, &[5, 9], &[1, 1], &TraceFields::default())
            .unwrap();
        let e = run
            .push(&mut sh, &[9, 9], &[1, 0], &TraceFields::default())
            .unwrap_err();
        assert_eq!(e.index, 3, "{e}");
    }

    fn trace_shaper(kind: &str, pairs: &[(&str, &str)]) -> Result<TraceShaper, ConfigError> {
        TraceShaper::from_params(kind, Params::new(kind, pairs.iter().copied()))
    }

    /// `n` packets of 1000 bytes, one every `gap_ns`.
    fn periodic(n: usize, gap_ns: u64) -> (Vec<u64>, Vec<u32>) {
        ((0..n as u64).map(|i| i * gap_ns).collect(), vec![1000; n])
    }

    /// A 10 Mbit/s link (800 µs per 1000-byte packet) offered 10.5 Mbit/s
    /// of unresponsive traffic for 10 s: a FIFO would build ~600 kB (half a
    /// second) by the end. CoDel (target 5 ms, interval 100 ms) drops about
    /// the 5% excess, the link stays busy, and once its control law has
    /// settled (last 5 s) the sojourn of what is sent stays near the
    /// target: median 9.3 ms, 99th percentile 12.2 ms, never 20 ms.
    #[test]
    fn codel_on_an_overloaded_link_drops_and_keeps_sojourn_near_target() {
        let mut c = trace_shaper(
            "codel",
            &[("rate", "10mbit"), ("target", "5ms"), ("interval", "100ms")],
        )
        .unwrap();
        let n = 13_125;
        let (times, sizes) = periodic(n, 761_905);
        let mut dep = vec![0u64; n];
        let s = shape_trace(&mut c, &times, &sizes, &mut dep).unwrap();
        assert_eq!(s.sent_packets + s.dropped_packets, n as u64, "{s:?}");
        assert!((400..=900).contains(&s.dropped_packets), "{s:?}");
        // The link never idles while overloaded: 12 500 fit in 10 s.
        assert!(s.sent_packets >= 12_490, "{s:?}");
        let mut late: Vec<u64> = (0..n)
            .filter(|&i| dep[i] != DROPPED && times[i] >= 5_000_000_000)
            .map(|i| dep[i] - times[i])
            .collect();
        late.sort_unstable();
        let median = late[late.len() / 2];
        assert!(
            (5_000_000..=15_000_000).contains(&median),
            "median {median}"
        );
        assert!(late[late.len() - 1] < 20_000_000, "max {:?}", late.last());
        // Back to back: consecutive departures one transmission apart.
        let sent: Vec<u64> = dep.iter().copied().filter(|&d| d != DROPPED).collect();
        assert!(sent.windows(2).all(|w| w[1] >= w[0] + 800_000), "spacing");
    }

    /// RED (min 30 kB) on a 10 Mbit/s link fed bursts of 20 packets
    /// (20 kB) every 50 ms: the queue never reaches min, nothing is
    /// dropped. Bursts of 100 packets into the same RED do get dropped.
    #[test]
    fn red_drops_nothing_below_min_and_drops_above() {
        let run = |burst: u64| {
            let mut r = trace_shaper(
                "red",
                &[
                    ("rate", "10mbit"),
                    ("limit", "200kb"),
                    ("min", "30kb"),
                    ("max", "90kb"),
                    ("avpkt", "1000"),
                    ("bandwidth", "10mbit"),
                ],
            )
            .unwrap();
            let times: Vec<u64> = (0..200 * burst)
                .map(|i| (i / burst) * 50_000_000 + i % burst)
                .collect();
            let sizes = vec![1000u32; times.len()];
            let mut dep = vec![0u64; times.len()];
            shape_trace(&mut r, &times, &sizes, &mut dep).unwrap()
        };
        let s = run(20);
        assert_eq!((s.dropped_packets, s.sent_packets), (0, 4000), "{s:?}");
        // The first of each burst goes straight onto the idle link.
        assert_eq!(s.max_backlog_packets, 19, "{s:?}");
        let s = run(100);
        assert!(s.dropped_packets > 0, "{s:?}");
    }

    #[test]
    fn link_serves_a_fifo_at_its_rate() {
        let mut l = trace_shaper("pie", &[("rate", "8mbit"), ("target", "1s")]).unwrap();
        // Five packets at once, one later while the link is idle.
        let times = [0, 0, 0, 0, 0, 20_000_000];
        let sizes = [1000, 500, 1000, 1000, 1000, 1000];
        let mut dep = [0u64; 6];
        let s = shape_trace(&mut l, &times, &sizes, &mut dep).unwrap();
        assert_eq!(
            dep,
            [0, 1_000_000, 1_500_000, 2_500_000, 3_500_000, 20_000_000]
        );
        assert_eq!(s.max_delay_ns, 3_500_000);
        let d = l.describe();
        assert!(d.contains(&("rate", "8mbit".to_string())), "{d:?}");
        assert!(d.contains(&("kind", "pie".to_string())), "{d:?}");
    }

    #[test]
    fn trace_shaper_names_the_bad_key_and_lists_every_kind() {
        assert!(matches!(
            trace_shaper(
                "TBF",
                &[("rate", "1mbit"), ("burst", "10kb"), ("limit", "20kb")]
            ),
            Ok(TraceShaper::Shaper(_))
        ));
        let e = trace_shaper("codel", &[("target", "5ms")]).unwrap_err();
        assert_eq!(e.param, "rate");
        assert!(e.message.contains("missing"), "{e}");
        let e = trace_shaper("codel", &[("rate", "0")]).unwrap_err();
        assert_eq!(e.param, "rate");
        let e = trace_shaper("codel", &[("rate", "1mbit"), ("targett", "5ms")]).unwrap_err();
        assert_eq!(e.param, "targett");
        assert!(e.message.contains("did you mean 'target'"), "{e}");
        let e = trace_shaper("red", &[("rate", "1mbit"), ("min", "5kb")]).unwrap_err();
        assert_eq!(e.param, "limit", "{e}");
        let e = trace_shaper("codl", &[]).unwrap_err();
        assert_eq!(e.param, "kind");
        assert!(e.message.contains("did you mean 'codel'"), "{e}");
        assert!(
            e.message.contains("tbf") && e.message.contains("wred"),
            "{e}"
        );
        let kinds: Vec<&str> = TraceShaper::kinds().iter().map(|(k, _)| *k).collect();
        let want = ["tbf", "shape", "srras", "trras", "g-srras", "g-trras"];
        assert_eq!(kinds[..6], want);
        assert_eq!(kinds[6..], ["red", "wred", "rio", "codel", "pie"]);
        let kinds = TraceShaper::kinds();
        assert!(kinds[9].1.contains("rate (required"), "{:?}", kinds[9]);
    }

    #[test]
    fn meter_trace_counts_colours_and_rejects_unsorted_times() {
        let mut pol = Policer::from_params(
            "srtcm",
            Params::new(
                "srtcm",
                [
                    ("cir", "8mbit"),
                    ("cbs", "1000"),
                    ("ebs", "1000"),
                    ("violate", "drop"),
                ],
            ),
        )
        .unwrap();
        let times = [0, 0, 0, 1_000_000];
        let sizes = [1000, 1000, 1000, 1000];
        let (mut c, mut a) = ([9u8; 4], [9u8; 4]);
        let s = meter_trace(&mut pol, &times, &sizes, None, &mut c, &mut a).unwrap();
        assert_eq!(c, [0, 1, 2, 0]);
        assert_eq!(a, [0, 0, 1, 0]);
        assert_eq!(s.packets, [2, 1, 1]);
        assert_eq!(s.dropped_bytes, 1000);
        let e =
            meter_trace(&mut pol, &[5, 3], &[1, 1], None, &mut [0; 2], &mut [0; 2]).unwrap_err();
        assert_eq!(e.index, 1);
        let e =
            meter_trace(&mut pol, &[5, 6], &[1, 0], None, &mut [0; 2], &mut [0; 2]).unwrap_err();
        assert_eq!(e.index, 1);
        let e =
            meter_trace(&mut pol, &[5], &[1], Some(&[7]), &mut [0; 1], &mut [0; 1]).unwrap_err();
        assert!(e.message.contains("color 7"));
    }

    /// The header columns reach the packets the shaper sees (a FIFO keeps
    /// them as given), and bad values name their packet.
    #[test]
    fn trace_fields_set_the_packet_and_bad_values_name_it() {
        struct Spy(Vec<Packet>);
        impl Shaper for Spy {
            fn enqueue(&mut self, _: Instant, p: Packet) -> Result<(), Dropped> {
                self.0.push(p);
                Ok(())
            }
            fn dequeue(&mut self, _: Instant) -> Option<Packet> {
                (!self.0.is_empty()).then(|| self.0.remove(0))
            }
            fn next_ready(&self, now: Instant) -> Option<Instant> {
                (!self.0.is_empty()).then_some(now)
            }
            fn backlog_packets(&self) -> usize {
                self.0.len()
            }
            fn backlog_bytes(&self) -> u64 {
                0
            }
            fn describe(&self) -> Vec<(&'static str, String)> {
                Vec::new()
            }
        }
        struct Log<S>(S, Vec<Packet>);
        impl<S: Shaper> Shaper for Log<S> {
            fn enqueue(&mut self, now: Instant, p: Packet) -> Result<(), Dropped> {
                self.1.push(p);
                self.0.enqueue(now, p)
            }
            fn dequeue(&mut self, now: Instant) -> Option<Packet> {
                self.0.dequeue(now)
            }
            fn next_ready(&self, now: Instant) -> Option<Instant> {
                self.0.next_ready(now)
            }
            fn backlog_packets(&self) -> usize {
                self.0.backlog_packets()
            }
            fn backlog_bytes(&self) -> u64 {
                self.0.backlog_bytes()
            }
            fn describe(&self) -> Vec<(&'static str, String)> {
                Vec::new()
            }
        }
        let f = TraceFields {
            colors: Some(&[0, 2]),
            flow: Some(&[7, 8]),
            dscp: Some(&[46, 0]),
            src_addr: Some(&[0x0a00_0001, 0]),
            dst_addr: Some(&[0x0a00_0002, 0]),
            src_port: Some(&[1234, 0]),
            dst_port: Some(&[5001, 0]),
            protocol: Some(&[17, 6]),
        };
        let mut s = Log(Spy(Vec::new()), Vec::new());
        let mut dep = [0; 2];
        shape_trace_fields(&mut s, &[0, 1], &[100, 100], &f, &mut dep).unwrap();
        let p = s.1[0];
        assert_eq!((p.flow, p.dscp, p.color), (7, 46, Color::Green));
        assert_eq!(
            (
                p.tuple.src_addr,
                p.tuple.dst_addr,
                p.tuple.src_port,
                p.tuple.dst_port
            ),
            (0x0a00_0001, 0x0a00_0002, 1234, 5001)
        );
        assert_eq!((s.1[1].color, s.1[1].tuple.protocol), (Color::Red, 6));
        let bad = TraceFields {
            dscp: Some(&[0, 64]),
            ..TraceFields::default()
        };
        let e = shape_trace_fields(&mut Spy(Vec::new()), &[0, 1], &[1, 1], &bad, &mut dep);
        assert_eq!(e.unwrap_err().index, 1);
        let short = TraceFields {
            flow: Some(&[1]),
            ..TraceFields::default()
        };
        let e = shape_trace_fields(&mut Spy(Vec::new()), &[0, 1], &[1, 1], &short, &mut dep);
        assert!(e.unwrap_err().message.contains("column flow"));
        // Without fields: the packets of shape_trace.
        let mut s = Log(Spy(Vec::new()), Vec::new());
        shape_trace(&mut s, &[0], &[100], &mut [0]).unwrap();
        assert_eq!(s.1[0], Packet::new(0, 100));
    }
}
