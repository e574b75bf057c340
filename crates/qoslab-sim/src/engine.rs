//! The event queue: a binary min-heap of small `Copy` events keyed by
//! `(time_ns, rank)`, keys unique, so a run never depends on heap
//! internals. The rank says which of the events due at one nanosecond runs
//! first (below).
//! Time never goes backwards: an event scheduled in the past runs "now".
//!
//! The heap is hand-written rather than `std::collections::BinaryHeap`:
//! the key `(time_ns, seq)` is one `u128` (one comparison), and a pop
//! moves the last entry down from the root through a hole, bottom-up
//! (Floyd), without the swap through memory that std's `pop` does first
//! (issue 12: the heap was a fifth of the engine's time at 10 Gbit/s).
//!
//! **Deadlines** (issue 12): besides one-shot events, the queue holds
//! *deadline slots* ([`EventQueue::set_deadline`]): at most one entry per
//! slot, in a second, indexed heap, moved in place when the deadline moves
//! (later or earlier) and taken out when it is cleared, so a deadline that
//! moved later costs no event. The engine gives each TCP endpoint one slot
//! (its `next_timer()`).
//!
//! **Order at one nanosecond** (issue 12, sixth round). Every entry's key
//! is `time << 64 | rank`; the rank's two top bits are its class, and the
//! classes run in this order, whatever order their events were scheduled in:
//!
//! 0. **transmitters** ([`EventQueue::schedule_ranked`] with
//!    [`rank_tx`]): a link direction's transmitter freeing up, then its
//!    shaper's wake-up, by direction index. A transmission that ends at
//!    `T` has ended for everything else that happens at `T`: a packet
//!    handed to the direction at `T` finds the transmitter free (or the
//!    next queued packet already on it) and is counted against the queue
//!    without the packet that starts at `T`. This is what lets a FIFO's
//!    departures be computed when a packet is enqueued (no event per
//!    packet, `crate::sim`): the queue it sees is the same.
//! 1. **deadlines** ([`EventQueue::set_deadline`]: TCP timers), by slot.
//!    Linux has no defined order between a timer and a packet received in
//!    the same instant; the rule is that of `__do_softirq`
//!    (kernel/softirq.c), which runs pending softirqs in bit order,
//!    `TIMER_SOFTIRQ` (1) before `NET_RX_SOFTIRQ` (3).
//! 2. **arrivals** ([`rank_arrive`]): the packet at the head of a wire
//!    reaching its far end (a wire delivers its packets in order, one at a
//!    time, so one entry per direction), in an order drawn per nanosecond
//!    from a hash of the time and the direction index: deterministic, and
//!    no direction always first (see [`rank_arrive`]).
//! 3. **the rest** ([`EventQueue::schedule`]: traffic sources, connection
//!    starts and stops, fetch requests, samples), in the order they were
//!    scheduled (an insertion counter).
//!
//! Before the sixth round classes 0, 2 and 3 were one class ordered by
//! insertion, so an arrival's place among events at its nanosecond
//! depended on when the event that sent it ran; results changed once
//! (docs/performance.md, "Sixth round").

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    /// `time_ns << 64 | rank`: orders by time, then rank.
    key: u128,
    ev: E,
}

#[inline]
fn key(time_ns: u64, seq: u64) -> u128 {
    (time_ns as u128) << 64 | seq as u128
}

/// Pending events in deterministic order.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// A binary min-heap on `key`.
    heap: Vec<Entry<E>>,
    seq: u64,
    now_ns: u64,
    /// The deadline slots: an indexed binary min-heap on `key`, whose low
    /// 64 bits are the slot.
    dl: Vec<Entry<E>>,
    /// Position of each slot in `dl` ([`NO_POS`] when it has no deadline).
    dl_pos: Vec<u32>,
}

/// Class 0: transmitters (`rank_tx`).
const CLASS_TX: u64 = 0;
/// Class 1: deadline slots.
const CLASS_DEADLINE: u64 = 1 << 62;
/// Class 2: arrivals (`rank_arrive`).
const CLASS_ARRIVE: u64 = 2 << 62;
/// Class 3: the rest, by insertion (the first sequence number).
const FIRST_SEQ: u64 = 3 << 62;
/// The low bits of a rank (below its class).
const IN_CLASS: u64 = (1 << 62) - 1;

/// The rank of direction `d`'s transmitter freeing up (`wake` = false) or
/// of its shaper's wake-up (`wake` = true): class 0, by direction, the
/// transmitter before the wake-up.
#[inline]
pub fn rank_tx(d: u32, wake: bool) -> u64 {
    CLASS_TX | (d as u64) << 1 | wake as u64
}

/// The rank of the packet at the head of direction `d`'s wire arriving at
/// `time_ns`: class 2, then a hash of (time, direction), then the
/// direction (so ranks are unique). Arrivals at one node at the same
/// nanosecond are in no physical order; a fixed one (by direction index)
/// made the same access link lose every tie for a full queue when all
/// links run at one rate in lock step (4 flows at 100 Mbit/s: Jain 0.51
/// instead of 1.00), so each nanosecond draws its own order from the hash,
/// the same in every run and independent of when the arrival was
/// scheduled.
#[inline]
pub fn rank_arrive(d: u32, time_ns: u64) -> u64 {
    // splitmix64's finaliser (Steele, Lea, Flood 2014).
    let mut z = time_ns ^ (d as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    CLASS_ARRIVE | (z & ((1 << 30) - 1)) << 32 | d as u64
}

/// The deadline slot of a deadline key.
#[inline]
fn slot_of(k: u128) -> usize {
    (k as u64 & IN_CLASS) as usize
}

/// "This slot has no deadline".
const NO_POS: u32 = u32::MAX;

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            seq: FIRST_SEQ,
            now_ns: 0,
            dl: Vec::new(),
            dl_pos: Vec::new(),
        }
    }

    /// Schedules `ev` at `time_ns` (clamped to now: time never goes back).
    #[inline]
    pub fn schedule(&mut self, time_ns: u64, ev: E) {
        let time_ns = time_ns.max(self.now_ns);
        self.push(Entry {
            key: key(time_ns, self.seq),
            ev,
        });
        self.seq += 1;
    }

    /// Schedules `ev` at `time_ns` (clamped to now) under a fixed `rank`
    /// ([`rank_tx`], [`rank_arrive`]): its place among the events due at
    /// that nanosecond does not depend on when it was scheduled. The caller
    /// keeps ranks unique among pending events (one per direction and
    /// kind), or schedules only identical events under one.
    #[inline]
    pub fn schedule_ranked(&mut self, time_ns: u64, rank: u64, ev: E) {
        debug_assert!(rank < CLASS_DEADLINE || rank & !IN_CLASS == CLASS_ARRIVE);
        self.push(Entry {
            key: key(time_ns.max(self.now_ns), rank),
            ev,
        });
    }

    /// Removes the earliest event or deadline if it is due at or before
    /// `until_ns`, advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until_ns: u64) -> Option<(u64, E)> {
        let ev_key = self.heap.first().map_or(u128::MAX, |e| e.key);
        if let Some(d) = self.dl.first() {
            if d.key < ev_key {
                let d = *d;
                let time_ns = (d.key >> 64) as u64;
                if time_ns > until_ns {
                    return None;
                }
                self.dl_remove_at(0);
                debug_assert!(time_ns >= self.now_ns, "time went backwards");
                self.now_ns = time_ns;
                return Some((time_ns, d.ev));
            }
        }
        let top = *self.heap.first()?;
        let time_ns = (top.key >> 64) as u64;
        if time_ns > until_ns {
            return None;
        }
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            self.sift_from_root(last);
        }
        debug_assert!(time_ns >= self.now_ns, "time went backwards");
        self.now_ns = time_ns;
        Some((time_ns, top.ev))
    }

    /// [`EventQueue::pop_until`], where the event popped from the main
    /// heap may name its successor: `follow(&ev)` returns `(time_ns, rank,
    /// ev)` to schedule ranked ([`EventQueue::schedule_ranked`]) in its
    /// place, and the new entry takes the root's place in one sift instead
    /// of a pop and a push (issue 12: a wire's next arrival, scheduled by
    /// nearly every arrival). The heap holds the same entries as after the
    /// pop and the `schedule_ranked`, and keys are unique, so the order of
    /// events is the same. Deadlines are popped as by `pop_until`.
    #[inline]
    pub fn pop_until_with(
        &mut self,
        until_ns: u64,
        follow: impl FnOnce(&E) -> Option<(u64, u64, E)>,
    ) -> Option<(u64, E)> {
        let ev_key = self.heap.first().map_or(u128::MAX, |e| e.key);
        if let Some(d) = self.dl.first() {
            if d.key < ev_key {
                return self.pop_until(until_ns);
            }
        }
        let top = *self.heap.first()?;
        let time_ns = (top.key >> 64) as u64;
        if time_ns > until_ns {
            return None;
        }
        debug_assert!(time_ns >= self.now_ns, "time went backwards");
        self.now_ns = time_ns;
        match follow(&top.ev) {
            Some((t, rank, ev)) => {
                debug_assert!(rank < CLASS_DEADLINE || rank & !IN_CLASS == CLASS_ARRIVE);
                let e = Entry {
                    key: key(t.max(time_ns), rank),
                    ev,
                };
                self.sift_down_from(0, e);
            }
            None => {
                let last = self.heap.pop().expect("not empty");
                if !self.heap.is_empty() {
                    self.sift_from_root(last);
                }
            }
        }
        Some((time_ns, top.ev))
    }

    /// Sets the deadline of `slot` to `time_ns` (clamped to now) with the
    /// event `ev` to return when it is due, moving an earlier or later
    /// deadline of the slot in place; `None` clears it. A slot's deadline
    /// is returned once by [`EventQueue::pop_until`] and is then cleared.
    /// Slots are small integers (a `Vec` indexed by slot holds positions).
    pub fn set_deadline(&mut self, slot: u32, time_ns: Option<u64>, ev: E) {
        let s = slot as usize;
        if s >= self.dl_pos.len() {
            self.dl_pos.resize(s + 1, NO_POS);
        }
        let at = self.dl_pos[s];
        let Some(t) = time_ns else {
            if at != NO_POS {
                self.dl_remove_at(at as usize);
            }
            return;
        };
        let e = Entry {
            key: key(t.max(self.now_ns), CLASS_DEADLINE | slot as u64),
            ev,
        };
        if at == NO_POS {
            self.dl.push(e);
            let i = self.dl.len() - 1;
            self.dl_sift_up(i, e);
        } else {
            let i = at as usize;
            let old = self.dl[i].key;
            if e.key < old {
                self.dl_sift_up(i, e);
            } else if e.key > old {
                self.dl_sift_down(i, e);
            } else {
                // The same deadline: the heap is unchanged; only the
                // event is rewritten (issue 12: no sift for a no-op).
                self.dl[i].ev = e.ev;
            }
        }
    }

    /// The deadline of `slot`, if it has one.
    pub fn deadline(&self, slot: u32) -> Option<u64> {
        match self.dl_pos.get(slot as usize) {
            Some(&i) if i != NO_POS => Some((self.dl[i as usize].key >> 64) as u64),
            _ => None,
        }
    }

    /// Removes one pending event due at `time_ns` for which `is` holds;
    /// returns whether there was one. Only events due now are searched
    /// for: they are the top of the heap (a node due later has no
    /// descendant due earlier), so the search visits the events due now
    /// and their children, not the whole heap. The other events keep their
    /// order (the keys are unique).
    pub fn remove_due_now(&mut self, time_ns: u64, is: impl Fn(&E) -> bool) -> bool {
        if time_ns != self.now_ns {
            return false;
        }
        let mut stack = [0usize; 64];
        let mut top = 0;
        let mut found = None;
        if !self.heap.is_empty() {
            stack[0] = 0;
            top = 1;
        }
        while top > 0 {
            top -= 1;
            let i = stack[top];
            let e = &self.heap[i];
            if (e.key >> 64) as u64 != time_ns {
                continue;
            }
            if is(&e.ev) {
                found = Some(i);
                break;
            }
            for c in [2 * i + 1, 2 * i + 2] {
                if c < self.heap.len() && top < stack.len() {
                    stack[top] = c;
                    top += 1;
                }
            }
        }
        let Some(i) = found else {
            return false;
        };
        let last = self.heap.pop().expect("not empty");
        if i < self.heap.len() {
            if i > 0 && self.heap[(i - 1) / 2].key > last.key {
                self.sift_up(i, last);
            } else {
                self.sift_down_from(i, last);
            }
        }
        true
    }

    /// When the earliest pending event is due.
    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        let k = self
            .heap
            .first()
            .map_or(u128::MAX, |e| e.key)
            .min(self.dl.first().map_or(u128::MAX, |e| e.key));
        (k != u128::MAX).then_some((k >> 64) as u64)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.dl.is_empty()
    }

    /// Takes the entry at `i` out of the deadline heap.
    fn dl_remove_at(&mut self, i: usize) {
        let gone = slot_of(self.dl[i].key);
        self.dl_pos[gone] = NO_POS;
        let last = self.dl.pop().expect("not empty");
        if i < self.dl.len() {
            if last.key < self.dl[i].key {
                self.dl_sift_up(i, last);
            } else {
                self.dl_sift_down(i, last);
            }
        }
    }

    /// Deadline heap: puts `e` at the hole `i`, moving it up past larger
    /// parents (positions kept in `dl_pos`).
    fn dl_sift_up(&mut self, mut i: usize, e: Entry<E>) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.dl[parent].key <= e.key {
                break;
            }
            self.dl[i] = self.dl[parent];
            self.dl_pos[slot_of(self.dl[i].key)] = i as u32;
            i = parent;
        }
        self.dl[i] = e;
        self.dl_pos[slot_of(e.key)] = i as u32;
    }

    /// Deadline heap: puts `e` at the hole `i`, moving it down past smaller
    /// children.
    fn dl_sift_down(&mut self, mut i: usize, e: Entry<E>) {
        let n = self.dl.len();
        loop {
            let mut c = 2 * i + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && self.dl[c + 1].key < self.dl[c].key {
                c += 1;
            }
            if self.dl[c].key >= e.key {
                break;
            }
            self.dl[i] = self.dl[c];
            self.dl_pos[slot_of(self.dl[i].key)] = i as u32;
            i = c;
        }
        self.dl[i] = e;
        self.dl_pos[slot_of(e.key)] = i as u32;
    }

    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let i = self.heap.len();
        self.heap.push(e);
        self.sift_up(i, e);
    }

    /// Puts `e` into the hole at `i`, moving it up past larger parents.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry<E>) {
        let h = &mut self.heap;
        while i > 0 {
            let parent = (i - 1) / 2;
            if h[parent].key <= e.key {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = e;
    }

    /// Puts `e` in place of the root (removed): the hole goes down to a
    /// leaf along the smaller children, then `e` rises from there (it came
    /// from the bottom, so it rarely rises far).
    #[inline]
    fn sift_from_root(&mut self, e: Entry<E>) {
        self.sift_down_from(0, e)
    }

    /// Puts `e` into the hole at `i`, whose parent is not larger than `e`:
    /// the hole goes down to a leaf, then `e` rises from there (never above
    /// `i`).
    #[inline]
    fn sift_down_from(&mut self, mut i: usize, e: Entry<E>) {
        let h = &mut self.heap;
        let n = h.len();
        let mut child = 2 * i + 1;
        while child + 1 < n {
            let c = child + (h[child + 1].key < h[child].key) as usize;
            h[i] = h[c];
            i = c;
            child = 2 * i + 1;
        }
        if child < n {
            h[i] = h[child];
            i = child;
        }
        self.sift_up(i, e);
    }
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(30, 'c');
        q.schedule(10, 'a');
        q.schedule(30, 'd');
        q.schedule(10, 'b');
        q.schedule(20, 'x');
        let mut out = Vec::new();
        while let Some((t, e)) = q.pop_until(u64::MAX) {
            out.push((t, e));
        }
        assert_eq!(out, [(10, 'a'), (10, 'b'), (20, 'x'), (30, 'c'), (30, 'd')]);
    }

    #[test]
    fn pops_in_key_order_under_random_interleaving() {
        // Against a sorted reference: random pushes and pops, ties included.
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut id = 0u64;
        for _ in 0..20_000 {
            if next() % 3 != 0 {
                let t = q.now_ns + next() % 50;
                q.schedule(t, id);
                reference.push((t, id));
                id += 1;
            } else if let Some((t, e)) = q.pop_until(u64::MAX) {
                reference.sort();
                assert_eq!(reference.remove(0), (t, e));
            }
        }
        reference.sort();
        for want in reference {
            assert_eq!(q.pop_until(u64::MAX), Some(want));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn deadlines_run_first_at_one_ns_in_slot_order() {
        let mut q = EventQueue::new();
        q.schedule(10, 'a');
        q.set_deadline(5, Some(10), 'x');
        q.set_deadline(2, Some(30), 'y');
        q.set_deadline(2, Some(10), 'y'); // moved earlier: same rank
        q.set_deadline(7, Some(5), 'z');
        q.set_deadline(7, Some(40), 'z'); // moved later: no early pop
        q.set_deadline(9, Some(10), 'w');
        q.set_deadline(9, None, 'w'); // cleared
        assert_eq!(q.deadline(7), Some(40));
        assert_eq!(q.deadline(9), None);
        let out: Vec<(u64, char)> = std::iter::from_fn(|| q.pop_until(u64::MAX)).collect();
        assert_eq!(out, [(10, 'y'), (10, 'x'), (10, 'a'), (40, 'z')]);
        assert_eq!(q.deadline(7), None, "a popped deadline is cleared");
    }

    #[test]
    fn deadlines_and_events_pop_in_key_order_under_random_moves() {
        // Against a reference: random events, deadlines set, moved and
        // cleared; a deadline sorts before events at its ns, by slot.
        let mut q = EventQueue::new();
        let mut events: Vec<(u64, u64, u64)> = Vec::new(); // (t, seq, id)
        let mut dls: Vec<Option<u64>> = vec![None; 40];
        let mut x = 55555u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut id, mut seq) = (1000u64, 0u64);
        for _ in 0..40_000 {
            let now = q.now_ns;
            match next() % 5 {
                0 | 1 => {
                    let t = now + next() % 20;
                    q.schedule(t, id);
                    events.push((t, seq, id));
                    id += 1;
                    seq += 1;
                }
                2 => {
                    let slot = next() % 40;
                    let t = (next() % 7 != 0).then(|| now + next() % 30);
                    q.set_deadline(slot as u32, t, slot);
                    dls[slot as usize] = t;
                }
                _ => {
                    let want_dl = dls
                        .iter()
                        .enumerate()
                        .filter_map(|(s, t)| t.map(|t| (t, s as u64)))
                        .min();
                    let want_ev = events.iter().min().copied();
                    let want = match (want_dl, want_ev) {
                        (Some(d), Some(e)) if d.0 <= e.0 => Some(d),
                        (Some(d), None) => Some(d),
                        (_, Some(e)) => Some((e.0, e.2)),
                        (None, None) => None,
                    };
                    let got = q.pop_until(u64::MAX);
                    assert_eq!(got, want);
                    if let Some((t, v)) = want {
                        if v < 40 {
                            dls[v as usize] = None;
                        } else {
                            events.retain(|e| e.2 != v);
                        }
                        assert_eq!(q.now_ns, t);
                    }
                }
            }
        }
    }

    #[test]
    fn arrival_ranks_are_unique_and_no_direction_always_wins() {
        // Over many nanoseconds, each of 4 directions comes first about a
        // quarter of the time.
        let mut first = [0u32; 4];
        for t in 0..40_000u64 {
            let r: Vec<u64> = (0..4).map(|d| rank_arrive(d, t)).collect();
            let min = (0..4).min_by_key(|&d| r[d]).unwrap();
            first[min] += 1;
            assert!(r.iter().all(|&x| x & !IN_CLASS == CLASS_ARRIVE));
        }
        assert!(
            first.iter().all(|&n| (9_000..11_000).contains(&n)),
            "{first:?}"
        );
    }

    #[test]
    fn at_one_ns_transmitters_then_deadlines_then_arrivals_then_the_rest() {
        // Scheduled in the reverse of the rule's order: the rule wins.
        let mut q = EventQueue::new();
        q.schedule(10, "other-1");
        let (first, second) = match rank_arrive(0, 10) < rank_arrive(3, 10) {
            true => ("arrive-0", "arrive-3"),
            false => ("arrive-3", "arrive-0"),
        };
        q.schedule_ranked(10, rank_arrive(0, 10), "arrive-0");
        q.schedule_ranked(10, rank_arrive(3, 10), "arrive-3");
        q.set_deadline(4, Some(10), "timer-4");
        q.schedule_ranked(10, rank_tx(2, true), "wake-2");
        q.schedule_ranked(10, rank_tx(2, false), "tx-2");
        q.schedule_ranked(10, rank_tx(1, false), "tx-1");
        q.set_deadline(0, Some(10), "timer-0");
        q.schedule(10, "other-2");
        q.schedule_ranked(5, rank_arrive(9, 5), "earlier");
        let out: Vec<&str> = std::iter::from_fn(|| q.pop_until(u64::MAX).map(|e| e.1)).collect();
        assert_eq!(
            out,
            [
                "earlier", "tx-1", "tx-2", "wake-2", "timer-0", "timer-4", first, second,
                "other-1", "other-2"
            ]
        );
        // Ranked events in the past are clamped to now, like the others.
        q.schedule_ranked(3, rank_arrive(1, 3), "late");
        assert_eq!(q.pop_until(u64::MAX), Some((10, "late")));
    }

    #[test]
    fn removing_an_event_due_now_keeps_the_others_in_order() {
        // Against a sorted reference: random pushes, pops and removals of
        // an event due now (as the engine removes a stale `TxDone`).
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut x = 987654321u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut id, mut removed) = (0u64, 0);
        for _ in 0..30_000 {
            match next() % 4 {
                0 | 1 => {
                    let t = q.now_ns + next() % 8;
                    q.schedule(t, id);
                    reference.push((t, id));
                    id += 1;
                }
                2 => {
                    if let Some((t, e)) = q.pop_until(u64::MAX) {
                        reference.sort();
                        assert_eq!(reference.remove(0), (t, e));
                    }
                }
                _ => {
                    let now = q.now_ns;
                    let due: Vec<u64> = reference
                        .iter()
                        .filter(|r| r.0 == now)
                        .map(|r| r.1)
                        .collect();
                    let want = due.get(next() as usize % due.len().max(1)).copied();
                    let got = q.remove_due_now(now, |&e| Some(e) == want);
                    assert_eq!(got, want.is_some());
                    if let Some(w) = want {
                        reference.retain(|r| r.1 != w);
                        removed += 1;
                    }
                    assert!(!q.remove_due_now(now + 1, |_| true), "only now");
                }
            }
        }
        assert!(removed > 1000, "{removed}");
        reference.sort();
        for want in reference {
            assert_eq!(q.pop_until(u64::MAX), Some(want));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn many_ties_keep_fifo_order_and_the_past_is_clamped_to_now() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            q.schedule(5, i);
        }
        for i in 0..1000u32 {
            assert_eq!(q.pop_until(u64::MAX), Some((5, i)));
        }
        q.schedule(1, 7); // in the past: runs at now = 5
        assert_eq!(q.pop_until(4), None);
        assert_eq!(q.pop_until(5), Some((5, 7)));
        assert!(q.is_empty());
    }
}
