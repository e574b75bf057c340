//! A loopback for the TCP tests: one sender, one receiver, a fixed one-way
//! delay each way, an optional bottleneck serialisation rate on the data
//! direction (unbounded FIFO), and a list of data segments to drop.
//! Events run in (time, insertion order), like the engine.

use super::{TcpHeader, TcpIo, TcpReceiver, TcpSender};
use qoslab_core::{Bytes, Duration, Instant, Rate};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug)]
enum Ev {
    ToReceiver(TcpHeader),
    ToSender(TcpHeader),
    SenderTimer,
    ReceiverTimer,
}

#[derive(Default)]
struct Cap {
    out: Vec<TcpHeader>,
    rtts: Vec<Duration>,
}

impl TcpIo for Cap {
    fn transmit(&mut self, h: TcpHeader) {
        self.out.push(h);
    }
    fn rtt_sample(&mut self, rtt: Duration) {
        self.rtts.push(rtt);
    }
}

/// Sender state after one of its events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trace {
    pub at: Instant,
    pub pipe: u64,
    pub flight: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub ca: u8,
}

/// Which side transmitted a logged segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

pub struct Harness {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub now: Instant,
    pub delay: Duration,
    /// Serialisation rate of the data direction (None = infinite).
    pub bottleneck: Option<Rate>,
    pub header_bytes: u32,
    /// (seq, n): drop the first n transmissions of the data segment
    /// starting at seq.
    pub drops: Vec<(u64, u32)>,
    /// Drop this many of the sender's SYNs.
    pub drop_syns: u32,
    /// (seq, extra): the first transmission of the data segment starting
    /// at seq arrives `extra` later (reordering).
    pub reorder: Vec<(u64, Duration)>,
    /// [from, to): the receiver's segments sent in this interval are held
    /// and delivered, in order, at `to + delay` (an ACK-path stall).
    pub stall: Option<(Instant, Instant)>,
    /// Every transmission: (time, side, header, dropped).
    pub log: Vec<(Instant, Side, TcpHeader, bool)>,
    pub rtts: Vec<(Instant, Duration)>,
    /// After every sender event.
    pub trace: Vec<Trace>,
    events: BTreeMap<(Instant, u64), Ev>,
    next_id: u64,
    busy_until: Instant,
    sender_timer: Option<Instant>,
    receiver_timer: Option<Instant>,
}

impl Harness {
    pub fn new(sender: TcpSender, receiver: TcpReceiver, delay: Duration) -> Harness {
        Harness {
            sender,
            receiver,
            now: Instant::ZERO,
            delay,
            bottleneck: None,
            header_bytes: 40,
            drops: Vec::new(),
            drop_syns: 0,
            stall: None,
            reorder: Vec::new(),
            log: Vec::new(),
            rtts: Vec::new(),
            trace: Vec::new(),
            events: BTreeMap::new(),
            next_id: 0,
            busy_until: Instant::ZERO,
            sender_timer: None,
            receiver_timer: None,
        }
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.events.insert((at, self.next_id), ev);
        self.next_id += 1;
    }

    fn dispatch(&mut self, side: Side, cap: Cap) {
        for r in cap.rtts {
            self.rtts.push((self.now, r));
        }
        for h in cap.out {
            let mut dropped = false;
            if side == Side::Sender && h.flags & super::SYN != 0 && self.drop_syns > 0 {
                self.drop_syns -= 1;
                dropped = true;
            }
            if side == Side::Sender && h.payload_len > 0 {
                if let Some(d) = self.drops.iter_mut().find(|d| d.0 == h.seq && d.1 > 0) {
                    d.1 -= 1;
                    dropped = true;
                }
            }
            self.log.push((self.now, side, h, dropped));
            if dropped {
                continue;
            }
            match side {
                Side::Sender => {
                    let mut at = self.now;
                    if let Some(rate) = self.bottleneck {
                        let wire = Bytes::new((h.payload_len + self.header_bytes) as u64);
                        at = self.busy_until.max(self.now) + rate.tx_time(wire);
                        self.busy_until = at;
                    }
                    let reordered = self.reorder.iter().position(|r| r.0 == h.seq);
                    if let Some(i) = reordered.filter(|_| h.payload_len > 0) {
                        at += self.reorder.remove(i).1;
                    }
                    self.push(at + self.delay, Ev::ToReceiver(h));
                }
                Side::Receiver => {
                    let mut at = self.now;
                    if let Some((from, to)) = self.stall {
                        if (from..to).contains(&at) {
                            at = to;
                        }
                    }
                    self.push(at + self.delay, Ev::ToSender(h))
                }
            }
        }
        match side {
            Side::Sender => {
                let s = &self.sender;
                self.trace.push(Trace {
                    at: self.now,
                    pipe: s.bytes_in_flight(),
                    flight: s.flight_size_bytes(),
                    cwnd: s.cwnd_bytes(),
                    ssthresh: s.ssthresh_bytes(),
                    ca: s.ca_state(),
                });
                let t = s.next_timer();
                if let Some(at) = t.filter(|_| t != self.sender_timer) {
                    self.push(at.max(self.now), Ev::SenderTimer);
                }
                self.sender_timer = t;
            }
            Side::Receiver => {
                let t = self.receiver.next_timer();
                if let Some(at) = t.filter(|_| t != self.receiver_timer) {
                    self.push(at.max(self.now), Ev::ReceiverTimer);
                }
                self.receiver_timer = t;
            }
        }
    }

    pub fn start(&mut self) {
        let mut cap = Cap::default();
        self.sender.start(self.now, &mut cap);
        self.dispatch(Side::Sender, cap);
    }

    /// Run events up to and including `until`.
    pub fn run_until(&mut self, until: Instant) {
        while let Some((&(at, id), _)) = self.events.first_key_value() {
            if at > until {
                break;
            }
            let ev = self.events.remove(&(at, id)).unwrap();
            self.now = at;
            let mut cap = Cap::default();
            match ev {
                Ev::ToReceiver(h) => {
                    self.receiver.on_segment(at, &h, &mut cap);
                    self.dispatch(Side::Receiver, cap);
                }
                Ev::ToSender(h) => {
                    self.sender.on_segment(at, &h, &mut cap);
                    self.dispatch(Side::Sender, cap);
                }
                Ev::SenderTimer => {
                    if self.sender.next_timer() == Some(at) {
                        self.sender.on_timer(at, &mut cap);
                        self.dispatch(Side::Sender, cap);
                    }
                }
                Ev::ReceiverTimer => {
                    if self.receiver.next_timer() == Some(at) {
                        self.receiver.on_timer(at, &mut cap);
                        self.dispatch(Side::Receiver, cap);
                    }
                }
            }
        }
        self.now = self.now.max(until);
    }

    /// Run until the sender is done (or `limit`); returns the time.
    pub fn run_to_done(&mut self, limit: Instant) -> Instant {
        while !self.sender.is_done() {
            let Some((&(at, _), _)) = self.events.first_key_value() else {
                break;
            };
            if at > limit {
                break;
            }
            self.run_until(at);
        }
        self.now
    }

    /// Data transmissions of the sender: (time, seq, retransmission, dropped).
    pub fn data_sent(&self) -> Vec<(Instant, u64, bool, bool)> {
        self.log
            .iter()
            .filter(|(_, side, h, _)| *side == Side::Sender && h.payload_len > 0)
            .map(|(t, _, h, d)| (*t, h.seq, h.retransmit, *d))
            .collect()
    }

    /// Pure ACKs of the receiver (SYN-ACK excluded): (time, header).
    pub fn acks(&self) -> Vec<(Instant, TcpHeader)> {
        self.log
            .iter()
            .filter(|(_, side, h, _)| *side == Side::Receiver && h.flags & super::SYN == 0)
            .map(|(t, _, h, _)| (*t, *h))
            .collect()
    }
}
