//! One direction of a point-to-point link: its queue (or shaper), its
//! transmitter and its wire.
//!
//! A packet handed to the direction goes through the optional egress
//! policer, then into [`EgressQueue`]. When the transmitter is idle it pulls
//! the head (`dequeue(now)`); a packet of `L` bytes occupies it for
//! `⌈8·L·10⁹ / rate⌉` ns (serialization, [`Rate::tx_time`]) and reaches the
//! far end `delay` ns after its last bit left. Random loss (`loss_ppm`)
//! is drawn per packet from the direction's own RNG stream when the packet
//! is put on the wire. A shaper that holds packets but releases none now
//! says when it will ([`EgressQueue::next_ready`]); the transmitter asks the
//! sending node's timer to wake it then ([`crate::timer`]).
//!
//! The state machine lives in `crate::sim` (it needs the event queue and
//! the packet arena); this module holds the per-direction state.

use crate::config::TimerSpec;
use crate::policy::EgressQueue;
use qoslab_core::rng::Rng;
use qoslab_core::{Bytes, Rate};
use std::collections::VecDeque;

/// "No wake-up armed".
pub const NEVER_NS: u64 = u64::MAX;

/// Runtime state of one link direction.
#[derive(Debug)]
pub struct Link {
    pub to: u32,
    pub rate: Rate,
    pub delay_ns: u64,
    pub loss_ppm: u32,
    pub rng: Rng,
    pub queue: EgressQueue,
    /// Policy index of an egress policer in front of the queue.
    pub egress_policer: Option<u32>,
    /// The egress policy's size table (tc-stab): what its policer and
    /// queue count per packet; serialisation uses the real size.
    pub stab: Option<qoslab_policy::stab::SizeTable>,
    /// Policy index that reports this direction's queue.
    pub queue_policy: Option<u32>,
    /// Policy index of the policer on `to`'s ingress for these packets.
    pub ingress_policer: Option<u32>,
    /// The sending node's timer (shaper wake-ups).
    pub timer: TimerSpec,
    /// The transmitter is serializing until then.
    pub busy_until_ns: u64,
    /// When the one live `TxDone` event of this direction is due, or
    /// [`NEVER_NS`]. A `TxDone` popped at any other time is stale (another
    /// event already restarted the transmitter at that instant) and is
    /// ignored: re-arming it would start a second chain of `TxDone`s that
    /// lives as long as the link stays busy (issue 12).
    pub tx_done_at_ns: u64,
    /// `TxDone` events of this direction in the heap (debug check).
    #[cfg(debug_assertions)]
    pub tx_done_pending: u32,
    /// The pending shaper wake-up, or [`NEVER_NS`].
    pub wake_at_ns: u64,
    /// The expiry that wake-up was armed for, before its random lateness
    /// ([`crate::timer::lateness_ns`]); equal to `wake_at_ns` without it.
    pub wake_nominal_ns: u64,
    /// Draws of the node timer's lateness (the simulator's; the emulator's
    /// clock is late by itself).
    pub timer_rng: Option<Rng>,
    /// 8·10⁹ / rate as a reduced fraction `num / den` of ns per byte, when
    /// `num · size` cannot overflow a u64 for any u32 size: the exact
    /// serialisation time then needs no 128-bit division (issue 12: at
    /// 10 Gbit/s, 4/5 ns per byte, that division was 2 % of the run).
    ns_per_byte: Option<(u64, u64)>,
    /// Packets on the wire: (arrival time, packet, whether the far end is
    /// its destination), in arrival order (one delay, transmissions in
    /// order). Only the head has an `Arrive` event in the heap (ranked by
    /// direction, [`crate::engine::rank_arrive`]), so the heap holds one
    /// event per busy wire instead of one per packet (issue 12: at
    /// 10 Gbit/s a wire holds thousands). On a direction whose departures
    /// are computed ([`Link::computed`]) it also holds packets still
    /// waiting in the queue: their departure is already known.
    pub in_flight: VecDeque<(u64, u32, bool)>,
    /// Departures computed at enqueue (issue 12, sixth round): a tail-drop
    /// FIFO on a loss-free direction whose transmitter no capture watches.
    /// A packet the FIFO takes gets its transmission start (the later of
    /// now and the end of the transmission before it) and its arrival at
    /// the far end at once, so the direction needs no `TxDone` event per
    /// packet. The FIFO still holds the packets that have not started
    /// ([`Link::waiting`]), so its drop decisions and its backlog at any
    /// time (queue samples, queue statistics) are what a per-packet
    /// `TxDone` gave: [`Link::catch_up`] takes out those started by now.
    /// `busy_until_ns` is then the end of the last transmission planned.
    pub computed: bool,
    /// Computed departures: (start time, wire size) of each packet in the
    /// FIFO, in FIFO order; each starts later than the last `catch_up`.
    pub waiting: VecDeque<(u64, u32)>,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub lost_packets: u64,
    /// The one direction whose packets can be handed to this one, from the
    /// routes of every flow's two endpoints ([`NO_FEEDER`]: several, or
    /// packets its own node sends). Such a direction can be carried onto
    /// from that feeder's wire (`sim.rs` `carry_hop`).
    pub sole_feeder: u32,
    /// Some direction leaving `to` has this one as its sole feeder, and no
    /// ingress policer meets this direction's packets at `to`: packets put
    /// on this wire may be carried straight on (`sim.rs` `carry_hop`).
    pub carry_next: bool,
    /// Packets bound for this direction on its sole feeder's wire that
    /// were not carried: they will be handed to it when they arrive, so
    /// while any is on the way no packet is carried onto it.
    pub inbound_uncarried: u32,
}

/// [`Link::sole_feeder`]: no single feeder.
pub const NO_FEEDER: u32 = u32::MAX;

impl Link {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        to: u32,
        rate: Rate,
        delay_ns: u64,
        loss_ppm: u32,
        rng: Rng,
        queue: EgressQueue,
        timer: TimerSpec,
    ) -> Link {
        let bps = rate.bps();
        let ns_per_byte = (bps > 0)
            .then(|| {
                let g = gcd(8_000_000_000, bps);
                (8_000_000_000 / g, bps / g)
            })
            .filter(|&(num, _)| num <= u32::MAX as u64);
        Link {
            to,
            rate,
            delay_ns,
            loss_ppm,
            rng,
            queue,
            egress_policer: None,
            stab: None,
            queue_policy: None,
            ingress_policer: None,
            timer,
            busy_until_ns: 0,
            tx_done_at_ns: NEVER_NS,
            #[cfg(debug_assertions)]
            tx_done_pending: 0,
            wake_at_ns: NEVER_NS,
            wake_nominal_ns: NEVER_NS,
            timer_rng: None,
            ns_per_byte,
            in_flight: VecDeque::new(),
            computed: false,
            waiting: VecDeque::new(),
            tx_packets: 0,
            tx_bytes: 0,
            lost_packets: 0,
            sole_feeder: NO_FEEDER,
            carry_next: false,
            inbound_uncarried: 0,
        }
    }

    /// Serialization time of `size_bytes`, rounded up to the next ns.
    #[inline]
    pub fn tx_time_ns(&self, size_bytes: u32) -> u64 {
        match self.ns_per_byte {
            Some((num, 1)) => num * size_bytes as u64,
            Some((num, den)) => (num * size_bytes as u64).div_ceil(den),
            None => self.rate.tx_time(Bytes::new(size_bytes as u64)).as_ns(),
        }
    }

    /// Whether this direction's departures can be computed at enqueue (see
    /// [`Link::computed`]): a tail-drop FIFO and no random loss (a loss is
    /// drawn, and charged to its flow, when the transmission starts).
    pub fn can_compute_departures(&self) -> bool {
        matches!(&self.queue, EgressQueue::Fifo(f) if !f.is_head_drop()) && self.loss_ppm == 0
    }

    /// Computed departures: the packets whose transmission started by
    /// `now_ns` leave the FIFO (and are counted as sent), as the
    /// `TxDone`s at or before `now_ns` would have dequeued them. A
    /// transmission that starts at `now_ns` has started (the order at one
    /// nanosecond, [`crate::engine`]).
    #[inline]
    pub fn catch_up(&mut self, now_ns: u64) {
        // Mostly nothing has started since the last call: that test
        // inlined, the loop out of line (issue 12: the call's register
        // saves were most of its cost).
        if self
            .waiting
            .front()
            .is_some_and(|&(start, _)| start <= now_ns)
        {
            self.catch_up_started(now_ns);
        }
    }

    /// [`Link::catch_up`] once a transmission has started.
    #[inline(never)]
    fn catch_up_started(&mut self, now_ns: u64) {
        while let Some(&(start, size)) = self.waiting.front() {
            if start > now_ns {
                break;
            }
            self.waiting.pop_front();
            let EgressQueue::Fifo(f) = &mut self.queue else {
                unreachable!("computed departures need a FIFO")
            };
            let p = qoslab_core::Shaper::dequeue(f, qoslab_core::Instant::from_ns(start));
            debug_assert!(p.is_some(), "the FIFO and its departures disagree");
            self.tx_packets += 1;
            self.tx_bytes += size as u64;
        }
    }

    /// Computed departures: offers `p` (as the queue counts it; `wire_bytes`
    /// its real size) to the FIFO at `now_ns`. Taken: returns when its
    /// transmission starts, and `busy_until_ns` is when it ends; the packet
    /// stays in the FIFO until then. Refused: the FIFO's drop.
    #[inline]
    pub fn offer(
        &mut self,
        now_ns: u64,
        p: qoslab_core::Packet,
        wire_bytes: u32,
    ) -> Result<u64, qoslab_core::Dropped> {
        debug_assert!(self.computed);
        self.catch_up(now_ns);
        let EgressQueue::Fifo(f) = &mut self.queue else {
            unreachable!("computed departures need a FIFO")
        };
        qoslab_core::Shaper::enqueue(f, qoslab_core::Instant::from_ns(now_ns), p)?;
        let start = now_ns.max(self.busy_until_ns);
        self.busy_until_ns = start.saturating_add(self.tx_time_ns(wire_bytes));
        self.waiting.push_back((start, wire_bytes));
        Ok(start)
    }

    /// Draws whether the packet now put on the wire is lost.
    #[inline]
    pub fn draw_loss(&mut self) -> bool {
        self.loss_ppm > 0 && self.rng.chance(self.loss_ppm as u64, 1_000_000)
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoslab_core::queue::{Fifo, FifoLimit};

    fn link(bps: u64) -> Link {
        Link::new(
            1,
            Rate::from_bps(bps),
            0,
            0,
            Rng::new(1, 1),
            EgressQueue::Fifo(Fifo::new(FifoLimit::Packets(1), false).unwrap()),
            TimerSpec::default(),
        )
    }

    #[test]
    fn serialization_time_is_exact_and_rounds_up() {
        assert_eq!(link(1_000_000_000).tx_time_ns(1500), 12_000);
        assert_eq!(link(20_000_000).tx_time_ns(1500), 600_000);
        assert_eq!(link(70_000_000).tx_time_ns(1500), 171_429); // 171428.57…
        assert_eq!(link(3).tx_time_ns(1), 2_666_666_667);
        assert_eq!(link(10_000_000_000).tx_time_ns(1500), 1200);
        assert_eq!(link(10_000_000_000).tx_time_ns(66), 53); // 52.8
                                                             // The fraction against the 128-bit reference, sizes up to u32::MAX.
        for bps in [
            1,
            3,
            7,
            56_000,
            70_000_000,
            999_999_937,
            10_000_000_000,
            400_000_000_000,
        ] {
            let l = link(bps);
            for size in [0u32, 1, 40, 1500, 65_535, 1 << 20, u32::MAX] {
                let want = Rate::from_bps(bps).tx_time(Bytes::new(size as u64)).as_ns();
                assert_eq!(l.tx_time_ns(size), want, "{bps} bit/s, {size} B");
            }
        }
    }

    /// The per-packet `TxDone` model the engine used before departures were
    /// computed (`sim.rs` `kick`): a packet is enqueued, the transmitter
    /// pulls the head when it is idle, and a `TxDone` at the end of each
    /// transmission pulls the next. `TxDone`s due at or before a packet's
    /// arrival run first (the order at one nanosecond, `crate::engine`).
    struct PerPacket {
        fifo: Fifo,
        busy_until_ns: u64,
        tx_done_at: Option<u64>,
        start_of: Vec<Option<u64>>,
        /// Arrivals that came at the very nanosecond a `TxDone` was due
        /// with a packet waiting (where the order at one ns matters).
        coincidences: u32,
    }

    impl PerPacket {
        fn kick(&mut self, now: u64, l: &Link) {
            if now < self.busy_until_ns {
                self.tx_done_at = Some(self.busy_until_ns);
                return;
            }
            if let Some(p) = self.fifo.dequeue(Instant::from_ns(now)) {
                self.start_of[p.id as usize] = Some(now);
                self.busy_until_ns = now + l.tx_time_ns(p.size_bytes);
                if self.fifo.backlog_packets() > 0 {
                    self.tx_done_at = Some(self.busy_until_ns);
                }
            }
        }
        fn run_tx_done_until(&mut self, now: u64, l: &Link) {
            while let Some(t) = self.tx_done_at.filter(|&t| t <= now) {
                if t == now && self.fifo.backlog_packets() > 0 {
                    self.coincidences += 1;
                }
                self.tx_done_at = None;
                self.kick(t, l);
            }
        }
    }

    use qoslab_core::{Instant, Packet, Shaper};

    #[test]
    fn computed_departures_are_what_a_txdone_per_packet_gave() {
        // Random arrival streams, with many arrivals at the very ns a
        // transmission ends (whole ns per byte, sizes from a few values):
        // the same start of every packet, the same drops, the same backlog
        // at random sampling instants.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut coincidences = 0;
        let mut drops = 0;
        for case in 0..400 {
            let bps = [8_000_000_000u64, 1_000_000_000, 100_000_000, 70_000_000][case % 4];
            let limit = match next() % 3 {
                0 => FifoLimit::Bytes(next() % 6000 + 40),
                _ => FifoLimit::Packets((next() % 6) as u32),
            };
            let mut l = Link::new(
                1,
                Rate::from_bps(bps),
                0,
                0,
                Rng::new(1, 1),
                EgressQueue::Fifo(Fifo::new(limit, false).unwrap()),
                TimerSpec::default(),
            );
            assert!(l.can_compute_departures());
            l.computed = true;
            let mut r = PerPacket {
                fifo: Fifo::new(limit, false).unwrap(),
                busy_until_ns: 0,
                tx_done_at: None,
                start_of: Vec::new(),
                coincidences: 0,
            };
            let sizes = [40u32, 100, 1500];
            let unit = l.tx_time_ns(100).max(1);
            let mut now = 0u64;
            let mut starts = Vec::new();
            for id in 0..300u64 {
                // Gaps of whole transmissions (ties with departures), zero
                // (bursts) or anything.
                now += match next() % 4 {
                    0 => 0,
                    1 => unit * (next() % 20),
                    2 => l.tx_time_ns(1500) * (next() % 3),
                    _ => next() % (unit * 30),
                };
                if next() % 8 == 0 {
                    // A sample: the backlog a queue series would show.
                    r.run_tx_done_until(now, &l);
                    l.catch_up(now);
                    assert_eq!(l.queue.backlog_packets(), r.fifo.backlog_packets());
                    assert_eq!(l.queue.backlog_bytes(), r.fifo.backlog_bytes());
                }
                let size = sizes[(next() % 3) as usize];
                let p = Packet {
                    id,
                    size_bytes: size,
                    ..Packet::default()
                };
                r.start_of.push(None);
                r.run_tx_done_until(now, &l);
                let kept = r.fifo.enqueue(Instant::from_ns(now), p).is_ok();
                if kept {
                    r.kick(now, &l);
                }
                match l.offer(now, p, size) {
                    Ok(start) => {
                        assert!(
                            kept,
                            "case {case} packet {id}: taken, the old model dropped it"
                        );
                        assert_eq!(l.busy_until_ns, start + l.tx_time_ns(size));
                        starts.push(Some(start));
                    }
                    Err(_) => {
                        assert!(
                            !kept,
                            "case {case} packet {id}: dropped, the old model took it"
                        );
                        drops += 1;
                        starts.push(None);
                    }
                }
            }
            r.run_tx_done_until(u64::MAX, &l);
            assert_eq!(starts, r.start_of, "case {case}: departures");
            l.catch_up(u64::MAX);
            assert_eq!(l.queue.backlog_packets(), 0);
            let sent = starts.iter().flatten().count() as u64;
            assert_eq!(l.tx_packets, sent, "case {case}: packets sent");
            coincidences += r.coincidences;
        }
        assert!(coincidences > 500, "{coincidences} same-ns ties exercised");
        assert!(drops > 1000, "{drops} drops exercised");
    }
}
