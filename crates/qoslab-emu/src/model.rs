//! The emulated network as a real-time discrete-event model, free of I/O
//! and of any clock: the driver ([`crate::forwarder`]) hands it frames with
//! the time they were read and asks it to run the events due by a time; a
//! test hands it a fake clock.
//!
//! Per frame: parse → destination host from the IPv4 destination → the
//! simulator's static route (`qoslab_sim::net::Routes`) hop by hop; on each
//! link direction exactly the simulator's steps (`qoslab_sim`'s
//! `Sim::enqueue` / `kick` / `on_arrive`): egress policer, queue / shaper /
//! tree, transmitter `⌈8L/rate⌉`, loss draw from the direction's seeded
//! stream, propagation delay, ingress policer at the far end. Conditioners
//! see `now` = the due time of the event being processed (or the read
//! time of a frame), never the wall-clock time the loop got there, so a
//! late wake-up shifts when a frame leaves, not the release schedule.

use crate::conditioner::{Conditioners, Dir};
use crate::frame::{self, FrameInfo};
use crate::gso::SuperPacket;
use crate::timing::LatencyHist;
use qoslab_core::packet::FiveTuple;
use qoslab_core::{Action, Color, Instant, Packet};
use qoslab_sim::config::RecordSpec;
use qoslab_sim::engine::EventQueue;
use qoslab_sim::link::NEVER_NS;
use qoslab_sim::net::{Net, Routes, NO_ROUTE};
use qoslab_sim::policy::{EgressQueue, Policy};
use qoslab_sim::result::{PolicyResult, Series};
use qoslab_sim::timer::fire_time_ns;
use std::collections::HashMap;
use std::rc::Rc;

/// A frame that has crossed this many nodes is dropped (as the simulator).
const MAX_HOPS: u8 = 64;

/// Where a capture taps a link direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Point {
    /// Before the egress policy (as offered to it).
    Ingress,
    /// After the transmitter (stamped when the last bit leaves).
    Egress,
}

/// What the model asks of the outside world.
pub trait Io {
    /// Write `frame` to the port of host node `host`.
    fn deliver(&mut self, host: u32, t_ns: u64, frame: &[u8]);
    /// Write wire segment `index` of super-packet `sp` (`--offload on`),
    /// unchanged since it was read, to the port of host node `host`. The
    /// real ports join segments delivered back to back
    /// ([`crate::gso::Run`]); by default, the segment's bytes are made and
    /// delivered as a frame.
    fn deliver_segment(&mut self, host: u32, t_ns: u64, sp: &Rc<SuperPacket>, index: usize) {
        let mut f = Vec::new();
        sp.write_segment(index, &mut f);
        self.deliver(host, t_ns, &f);
    }
    /// Send `frame` into direction `dir`'s real qdisc; `false` when the
    /// kernel refused it (the qdisc dropped it).
    fn kernel_send(&mut self, dir: u32, frame: &[u8]) -> bool;
    /// A capture point saw `frame` at `t_ns` (model clock).
    fn capture(&mut self, dir: u32, point: Point, t_ns: u64, frame: &[u8]);
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    TxDone(u32),
    Arrive(u32, u32),
    Wake(u32),
    Sample,
}

/// One frame in the network.
struct Slot {
    buf: Vec<u8>,
    len: u32,
    /// `--offload on`: the frame is wire segment `.1` of super-packet `.0`
    /// and `buf` is empty until something needs its bytes
    /// ([`Model::materialise`]).
    seg: Option<(Rc<SuperPacket>, usize)>,
    info: FrameInfo,
    /// `frame::flow_hash(&info)`, computed once per frame instead of once
    /// per conditioner call (a super-packet's segments each hop).
    flow: u32,
    dst: u32,
    hops: u8,
    color: Color,
}

/// Counters of one link direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirResult {
    pub name: String,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub loss_ppm: u32,
    /// Frames / bytes put on the wire by the transmitter.
    pub packets: u64,
    pub bytes: u64,
    /// Frames lost on the wire (loss draws).
    pub lost: u64,
    /// Frames dropped by this direction's policies (egress policer, queue,
    /// shaper, tree, real qdisc; the far end's ingress policer).
    pub dropped: u64,
}

/// Network-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub frames_in: u64,
    pub frames_out: u64,
    /// Not IPv4, malformed, unknown destination, destination = source.
    pub unroutable: u64,
    /// Longer than the port MTU allows.
    pub oversize: u64,
    pub dropped: u64,
    pub lost: u64,
    pub loops: u64,
    /// TCP/UDP checksums filled in for senders that left them to offload.
    pub checksums_completed: u64,
    /// GSO super-packets read (`--offload on`), each handed to the model
    /// as its wire segments (counted in `frames_in`).
    pub super_packets: u64,
}

/// The model.
pub struct Model {
    dirs: Vec<Dir>,
    policies: Vec<Policy>,
    routes: Routes,
    host_by_ip: HashMap<u32, u32>,
    q: EventQueue<Ev>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    frame_capacity: usize,
    /// Where a segment's bytes are made for a capture or a kernel qdisc.
    scratch: Vec<u8>,
    dropped: Vec<qoslab_core::Dropped>,
    dir_dropped: Vec<u64>,
    /// Per direction: capture at [ingress, egress].
    taps: Vec<[bool; 2]>,
    record: RecordSpec,
    t0_ns: u64,
    series: Series,
    pub counters: Counters,
    pub lateness: LatencyHist,
    /// Per policy: packets dropped (live view for progress).
    now_ns: u64,
}

impl Model {
    /// A model of `net` with `cond`; `host_ips` maps IPv4 addresses
    /// (host order) to host nodes; frames up to `max_frame_bytes`;
    /// series samples every `record.interval` from `t0_ns`.
    pub fn new(
        net: &Net,
        cond: Conditioners,
        host_ips: &[(u32, u32)],
        max_frame_bytes: usize,
        record: RecordSpec,
        t0_ns: u64,
    ) -> Model {
        let hosts: Vec<u32> = host_ips.iter().map(|&(_, n)| n).collect();
        let n_dirs = cond.dirs.len();
        let mut q = EventQueue::new();
        let wants = record.queue || record.tokens || record.colors;
        if wants && record.interval.as_ns() > 0 {
            q.schedule(t0_ns.saturating_add(record.interval.as_ns()), Ev::Sample);
        }
        Model {
            dirs: cond.dirs,
            policies: cond.policies,
            routes: Routes::compute(net, &hosts),
            host_by_ip: host_ips.iter().copied().collect(),
            q,
            slots: Vec::new(),
            free: Vec::new(),
            frame_capacity: max_frame_bytes,
            scratch: Vec::new(),
            dropped: Vec::new(),
            dir_dropped: vec![0; n_dirs],
            taps: vec![[false; 2]; n_dirs],
            record,
            t0_ns,
            series: Series::default(),
            counters: Counters::default(),
            lateness: LatencyHist::default(),
            now_ns: 0,
        }
    }

    /// Capture frames of direction `dir` at `point`.
    pub fn tap(&mut self, dir: u32, point: Point) {
        self.taps[dir as usize][point as usize] = true;
    }

    /// When the next event is due.
    pub fn next_due(&self) -> Option<u64> {
        self.q.peek_time()
    }

    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    fn alloc(&mut self, frame: &[u8], info: FrameInfo, dst: u32) -> u32 {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(Slot {
                    buf: Vec::with_capacity(self.frame_capacity),
                    len: 0,
                    seg: None,
                    info,
                    flow: 0,
                    dst,
                    hops: 0,
                    color: Color::Green,
                });
                self.slots.len() as u32 - 1
            }
        };
        let s = &mut self.slots[id as usize];
        s.buf.clear();
        s.buf.extend_from_slice(frame);
        s.len = frame.len() as u32;
        s.flow = frame::flow_hash(&info);
        s.info = info;
        s.dst = dst;
        s.hops = 0;
        s.color = Color::Green;
        id
    }

    #[inline]
    fn release(&mut self, id: u32) {
        self.slots[id as usize].seg = None;
        self.free.push(id);
    }

    /// Gives a segment slot its own bytes (before they change: a DSCP
    /// rewrite); a no-op for a frame.
    fn materialise(&mut self, id: u32) {
        let s = &mut self.slots[id as usize];
        if let Some((sp, i)) = s.seg.take() {
            sp.write_segment(i, &mut s.buf);
            s.len = s.buf.len() as u32;
        }
    }

    /// The bytes of frame `id` (a segment's made in `scratch`).
    fn bytes<'a>(slots: &'a [Slot], scratch: &'a mut Vec<u8>, id: u32) -> &'a [u8] {
        let s = &slots[id as usize];
        match &s.seg {
            Some((sp, i)) => {
                sp.write_segment(*i, scratch);
                scratch
            }
            None => &s.buf[..s.len as usize],
        }
    }

    fn route(&mut self, frame: &[u8]) -> Option<(FrameInfo, u32)> {
        let info = frame::parse(frame).ok()?;
        let dst = *self.host_by_ip.get(&info.dst_addr)?;
        Some((info, dst))
    }

    /// A frame read from host node `from`'s port at `now_ns`.
    pub fn ingress(&mut self, now_ns: u64, from: u32, frame: &[u8], io: &mut dyn Io) {
        let Some((info, dst)) = self.admit(now_ns, from, frame) else {
            return;
        };
        let id = self.alloc(frame, info, dst);
        self.forward(from, id, io);
    }

    /// Counts a frame in and routes it: its parsed headers and destination
    /// host, or `None` (counted) when it is too long or has nowhere to go.
    fn admit(&mut self, now_ns: u64, from: u32, frame: &[u8]) -> Option<(FrameInfo, u32)> {
        self.now_ns = self.now_ns.max(now_ns);
        self.counters.frames_in += 1;
        if frame.len() > self.frame_capacity {
            self.counters.oversize += 1;
            return None;
        }
        match self.route(frame) {
            Some((info, dst)) if dst != from => Some((info, dst)),
            _ => {
                self.counters.unroutable += 1;
                None
            }
        }
    }

    /// A GSO super-packet read from host node `from`'s port at `now_ns`
    /// (`--offload on`): its wire segments enter one by one, in order, as
    /// descriptors — each counted, routed, policed, queued, shaped and lost
    /// as the frame it stands for (its own wire length; the headers
    /// classifiers read are the super-packet's), as Linux tbf's
    /// `tbf_segment` (net/sched/sch_tbf.c) enqueues a GSO packet's
    /// segments; bytes are made for a segment only when needed.
    pub fn ingress_super(&mut self, now_ns: u64, from: u32, sp: SuperPacket, io: &mut dyn Io) {
        self.now_ns = self.now_ns.max(now_ns);
        let routed = match self.route(sp.bytes()) {
            Some((info, dst)) if dst != from => Some((info, dst)),
            _ => None,
        };
        let sp = Rc::new(sp);
        for i in 0..sp.segments() {
            self.counters.frames_in += 1;
            let wire = sp.segment_bytes(i);
            if wire as usize > self.frame_capacity {
                self.counters.oversize += 1;
                continue;
            }
            let Some((mut info, dst)) = routed else {
                self.counters.unroutable += 1;
                continue;
            };
            info.wire_bytes = wire;
            let id = self.alloc(&[], info, dst);
            let s = &mut self.slots[id as usize];
            s.seg = Some((sp.clone(), i));
            s.len = wire;
            self.forward(from, id, io);
        }
    }

    /// A frame read back from kernel-backed direction `dir`'s qdisc at
    /// `now_ns`: it goes on to the direction's transmitter.
    pub fn kernel_return(&mut self, now_ns: u64, dir: u32, frame: &[u8], io: &mut dyn Io) {
        self.now_ns = self.now_ns.max(now_ns);
        if frame.len() > self.frame_capacity {
            self.counters.oversize += 1;
            return;
        }
        let Some((info, dst)) = self.route(frame) else {
            self.counters.unroutable += 1;
            return;
        };
        let id = self.alloc(frame, info, dst);
        let p = self.core(id);
        let l = &mut self.dirs[dir as usize].link;
        if let Err(dr) = l.queue.enqueue(Instant::from_ns(self.now_ns), p) {
            self.dropped.push(dr);
        }
        self.free_dropped(dir);
        self.kick(dir, io);
    }

    /// Runs every event due at or before `until_ns`; `wall_ns` is the real
    /// time now (for the lateness record).
    pub fn advance(&mut self, until_ns: u64, wall_ns: u64, io: &mut dyn Io) {
        while let Some((t, ev)) = self.q.pop_until(until_ns) {
            self.now_ns = t;
            if !matches!(ev, Ev::Sample) {
                self.lateness.record(wall_ns.saturating_sub(t));
            }
            match ev {
                Ev::Arrive(d, id) => self.on_arrive(d, id, io),
                Ev::TxDone(d) => {
                    // Only the one live TxDone restarts the transmitter; one made
                    // stale by another event at the same instant is dropped (as
                    // the simulator's `Link::tx_done_at_ns`, issue 12).
                    let l = &mut self.dirs[d as usize].link;
                    if l.tx_done_at_ns == t {
                        l.tx_done_at_ns = NEVER_NS;
                        self.kick(d, io);
                    }
                }
                Ev::Wake(d) => {
                    let l = &mut self.dirs[d as usize].link;
                    if l.wake_at_ns == t {
                        l.wake_at_ns = NEVER_NS;
                        self.kick(d, io);
                    }
                }
                Ev::Sample => self.on_sample(),
            }
        }
        self.now_ns = self.now_ns.max(until_ns);
    }

    fn core(&self, id: u32) -> Packet {
        let s = &self.slots[id as usize];
        let i = &s.info;
        Packet {
            id: id as u64,
            flow: s.flow,
            size_bytes: i.wire_bytes,
            dscp: i.dscp,
            color: s.color,
            tuple: FiveTuple {
                src_addr: i.src_addr,
                dst_addr: i.dst_addr,
                src_port: i.src_port,
                dst_port: i.dst_port,
                protocol: i.protocol,
            },
        }
    }

    fn forward(&mut self, node: u32, id: u32, io: &mut dyn Io) {
        let dst = self.slots[id as usize].dst;
        let d = self.routes.next(node, dst);
        if d == NO_ROUTE {
            self.counters.unroutable += 1;
            self.release(id);
            return;
        }
        self.enqueue(d, id, io);
    }

    fn drop_at(&mut self, d: u32, id: u32) {
        self.dir_dropped[d as usize] += 1;
        self.counters.dropped += 1;
        self.release(id);
    }

    /// Egress of direction `d` (as `Sim::enqueue`).
    fn enqueue(&mut self, d: u32, id: u32, io: &mut dyn Io) {
        let now = Instant::from_ns(self.now_ns);
        if self.taps[d as usize][Point::Ingress as usize] {
            let b = Self::bytes(&self.slots, &mut self.scratch, id);
            io.capture(d, Point::Ingress, self.now_ns, b);
        }
        let mut p = self.core(id);
        if let Some(kp) = self.dirs[d as usize].kernel {
            if let Some(kp) = kp {
                self.policies[kp as usize].count_in_queue(&p);
            }
            let b = Self::bytes(&self.slots, &mut self.scratch, id);
            let ok = io.kernel_send(d, b);
            if !ok {
                if let Some(kp) = kp {
                    self.policies[kp as usize].count_drop(p.size_bytes);
                }
                self.drop_at(d, id);
            } else {
                self.release(id);
            }
            return;
        }
        let l = &mut self.dirs[d as usize].link;
        if let Some(t) = &l.stab {
            // tc-stab (as the simulator): the policy counts this size, the
            // transmitter serialises the real one.
            p.size_bytes = t.pkt_len(p.size_bytes);
        }
        if let Some(pi) = l.egress_policer {
            let pol = &mut self.policies[pi as usize];
            let v = pol.police(now, &p);
            match v.action {
                Action::Drop => {
                    pol.count_drop(p.size_bytes);
                    self.drop_at(d, id);
                    return;
                }
                Action::SetDscp(x) => {
                    p.dscp = x;
                    self.materialise(id);
                    let s = &mut self.slots[id as usize];
                    frame::set_dscp(&mut s.buf[..s.len as usize], x);
                    s.info.dscp = x;
                }
                Action::Transmit => {}
            }
            p.color = v.color;
            self.slots[id as usize].color = v.color;
        } else if let Some(qp) = l.queue_policy {
            let pol = &mut self.policies[qp as usize];
            if pol.tree {
                pol.count_in_queue(&p);
            } else {
                pol.count_in_green(p.size_bytes);
            }
        }
        let l = &mut self.dirs[d as usize].link;
        if let Err(dr) = l.queue.enqueue(now, p) {
            self.dropped.push(dr);
        }
        l.queue.take_dropped(&mut self.dropped);
        self.free_dropped(d);
        let l = &self.dirs[d as usize].link;
        if let Some(qp) = l.queue_policy {
            let (n, b) = (l.queue.backlog_packets(), l.queue.backlog_bytes());
            self.policies[qp as usize].observe_queue(n, b);
        }
        self.kick(d, io);
    }

    /// Frees what the queue of `d` dropped (usually nothing: the check is
    /// inlined into every caller, the work is not).
    #[inline]
    fn free_dropped(&mut self, d: u32) {
        if !self.dropped.is_empty() {
            self.free_dropped_now(d);
        }
    }

    #[inline(never)]
    fn free_dropped_now(&mut self, d: u32) {
        let qp = self.dirs[d as usize].link.queue_policy;
        let dropped = std::mem::take(&mut self.dropped);
        for dr in &dropped {
            if let Some(qp) = qp {
                self.policies[qp as usize].count_drop(dr.packet.size_bytes);
            }
            self.drop_at(d, dr.packet.id as u32);
        }
        self.dropped = dropped;
        self.dropped.clear();
    }

    /// The transmitter of `d` (as `Sim::kick`).
    fn kick(&mut self, d: u32, io: &mut dyn Io) {
        let now = self.now_ns;
        let l = &mut self.dirs[d as usize].link;
        if now < l.busy_until_ns {
            if l.tx_done_at_ns != l.busy_until_ns {
                l.tx_done_at_ns = l.busy_until_ns;
                self.q.schedule(l.busy_until_ns, Ev::TxDone(d));
            }
            return;
        }
        let throttled = l.wake_at_ns != NEVER_NS;
        let head = if throttled {
            None
        } else {
            let h = l.queue.dequeue(Instant::from_ns(now));
            l.queue.take_dropped(&mut self.dropped);
            h
        };
        self.free_dropped(d);
        let l = &mut self.dirs[d as usize].link;
        match head {
            Some(p) => {
                let id = p.id as u32;
                // The real frame's length (a size table changes only what
                // the policy counted).
                let size = self.slots[id as usize].info.wire_bytes;
                let tx = l.tx_time_ns(size);
                l.busy_until_ns = now.saturating_add(tx);
                l.tx_packets += 1;
                l.tx_bytes += u64::from(size);
                let done = l.busy_until_ns;
                let lost = l.draw_loss();
                let arrive = done.saturating_add(l.delay_ns);
                let more = l.queue.backlog_packets() > 0;
                if more {
                    l.tx_done_at_ns = done;
                    self.q.schedule(done, Ev::TxDone(d));
                }
                if self.taps[d as usize][Point::Egress as usize] {
                    let b = Self::bytes(&self.slots, &mut self.scratch, id);
                    io.capture(d, Point::Egress, done, b);
                }
                if lost {
                    self.dirs[d as usize].link.lost_packets += 1;
                    self.counters.lost += 1;
                    self.release(id);
                } else {
                    self.q.schedule(arrive, Ev::Arrive(d, id));
                }
            }
            None => {
                if let Some(t) = l.queue.next_ready(Instant::from_ns(now)) {
                    let fire = fire_time_ns(l.timer, t.as_ns()).max(now + 1);
                    if fire < l.wake_at_ns {
                        l.wake_at_ns = fire;
                        self.q.schedule(fire, Ev::Wake(d));
                    }
                }
            }
        }
    }

    fn on_arrive(&mut self, d: u32, id: u32, io: &mut dyn Io) {
        let l = &self.dirs[d as usize].link;
        let node = l.to;
        if let Some(pi) = l.ingress_policer {
            let now = Instant::from_ns(self.now_ns);
            let p = self.core(id);
            let pol = &mut self.policies[pi as usize];
            let v = pol.police(now, &p);
            match v.action {
                Action::Drop => {
                    pol.count_drop(p.size_bytes);
                    self.drop_at(d, id);
                    return;
                }
                Action::SetDscp(x) => {
                    self.materialise(id);
                    let s = &mut self.slots[id as usize];
                    frame::set_dscp(&mut s.buf[..s.len as usize], x);
                    s.info.dscp = x;
                }
                Action::Transmit => {}
            }
            self.slots[id as usize].color = v.color;
        }
        let s = &mut self.slots[id as usize];
        if s.dst == node {
            self.counters.frames_out += 1;
            match &s.seg {
                Some((sp, i)) => io.deliver_segment(node, self.now_ns, sp, *i),
                None => io.deliver(node, self.now_ns, &s.buf[..s.len as usize]),
            }
            self.release(id);
            return;
        }
        s.hops += 1;
        if s.hops >= MAX_HOPS {
            self.counters.loops += 1;
            self.release(id);
            return;
        }
        self.forward(node, id, io);
    }

    /// Queue / tokens / colours per policy (as `Sim::on_sample`), times
    /// relative to `t0_ns`.
    fn on_sample(&mut self) {
        let t = self.now_ns;
        let rel = t.saturating_sub(self.t0_ns);
        let now = Instant::from_ns(t);
        let r = self.record;
        let dirs = &self.dirs;
        qoslab_sim::sample_policies(&mut self.series, &r, &mut self.policies, now, rel, |d| {
            &dirs[d as usize].link.queue
        });
        self.q
            .schedule(t.saturating_add(r.interval.as_ns()), Ev::Sample);
    }

    /// Per-policy drops so far (cheap, for live stats).
    pub fn policy_drops(&self) -> impl Iterator<Item = u64> + '_ {
        self.policies.iter().map(|p| p.res.packets_dropped)
    }

    /// The summaries and series.
    pub fn finish(
        self,
    ) -> (
        Vec<PolicyResult>,
        Vec<DirResult>,
        Series,
        Counters,
        LatencyHist,
    ) {
        let mut policies = Vec::with_capacity(self.policies.len());
        for p in &self.policies {
            let mut res = p.res.clone();
            if let Some(d) = p.queue_dir.filter(|_| p.tree) {
                if let EgressQueue::Tree(t) = &self.dirs[d as usize].link.queue {
                    res.classes = t.class_results();
                }
            }
            policies.push(res);
        }
        let dirs = self
            .dirs
            .iter()
            .zip(&self.dir_dropped)
            .map(|(d, &dropped)| DirResult {
                name: d.name.clone(),
                rate_bps: d.link.rate.bps(),
                delay_ns: d.link.delay_ns,
                loss_ppm: d.link.loss_ppm,
                packets: d.link.tx_packets,
                bytes: d.link.tx_bytes,
                lost: d.link.lost_packets,
                dropped,
            })
            .collect();
        (policies, dirs, self.series, self.counters, self.lateness)
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
