//! The event queue: a binary min-heap of small `Copy` events keyed by
//! `(time_ns, seq)`. `seq` is the insertion counter, so events due at the
//! same nanosecond run in the order they were scheduled (FIFO tie-break, as
//! nexosim and ns-3 do) and a run never depends on heap internals.
//! Time never goes backwards: an event scheduled in the past runs "now".

use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time_ns: u64,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time_ns == o.time_ns && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed: the std heap is a max-heap, we want the earliest first.
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time_ns, o.seq).cmp(&(self.time_ns, self.seq))
    }
}

/// Pending events in deterministic order.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now_ns: u64,
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            now_ns: 0,
        }
    }

    /// Schedules `ev` at `time_ns` (clamped to now: time never goes back).
    #[inline]
    pub fn schedule(&mut self, time_ns: u64, ev: E) {
        let time_ns = time_ns.max(self.now_ns);
        self.heap.push(Entry {
            time_ns,
            seq: self.seq,
            ev,
        });
        self.seq += 1;
    }

    /// Takes the insertion number the next [`EventQueue::schedule`] would
    /// use, for an event that is put in the heap later with
    /// [`EventQueue::schedule_seq`] (it then runs exactly where it would
    /// have had it been scheduled now).
    #[inline]
    pub fn reserve_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    /// Schedules `ev` at `time_ns` under a number from
    /// [`EventQueue::reserve_seq`]. The caller makes sure no event ordered
    /// after `(time_ns, seq)` has run yet (a per-link FIFO of arrivals whose
    /// head is always in the heap does).
    #[inline]
    pub fn schedule_seq(&mut self, time_ns: u64, seq: u64, ev: E) {
        debug_assert!(seq < self.seq, "seq {seq} was not reserved");
        debug_assert!(time_ns >= self.now_ns, "an arrival in the past");
        self.heap.push(Entry { time_ns, seq, ev });
    }

    /// Removes the earliest event if it is due at or before `until_ns`,
    /// advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until_ns: u64) -> Option<(u64, E)> {
        let top = self.heap.peek()?;
        if top.time_ns > until_ns {
            return None;
        }
        let e = self.heap.pop().expect("peeked");
        debug_assert!(e.time_ns >= self.now_ns, "time went backwards");
        self.now_ns = e.time_ns;
        Some((e.time_ns, e.ev))
    }

    /// When the earliest pending event is due.
    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time_ns)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    fn a_reserved_seq_runs_where_it_was_reserved() {
        let mut q = EventQueue::new();
        q.schedule(10, 'a');
        let s = q.reserve_seq();
        q.schedule(10, 'c');
        q.schedule_seq(10, s, 'b');
        let out: Vec<char> = std::iter::from_fn(|| q.pop_until(u64::MAX).map(|e| e.1)).collect();
        assert_eq!(out, ['a', 'b', 'c']);
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
