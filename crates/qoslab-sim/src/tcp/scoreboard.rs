//! The retransmission queue and SACK scoreboard: every segment sent and
//! not yet cumulatively acknowledged, with its SACKed / lost /
//! retransmitted marks (RFC 6675 §3 "scoreboard"; Linux keeps the same
//! marks in `TCP_SKB_CB(skb)->sacked`, net/ipv4/tcp_input.c).
//!
//! Segment boundaries never change: a retransmission resends exactly the
//! original segment (no repacketisation), and the receiver ACKs and SACKs
//! at those boundaries.
//!
//! Counters follow Linux `tcp_packets_in_flight` in bytes:
//! `in flight = outstanding − sacked − lost + retransmitted`, which is RFC
//! 6675's `pipe` (SetPipe, §4): an un-SACKed octet counts once unless
//! `IsLost`, plus once more if it was retransmitted (and that
//! retransmission is not itself presumed lost).

use super::rate::TxRateInfo;
use qoslab_core::{Duration, Instant};
use std::collections::VecDeque;

/// One segment in the retransmission queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentSegment {
    pub seq: u64,
    pub len: u32,
    /// Time of the latest (re)transmission.
    pub sent_at: Instant,
    /// Time of the original transmission.
    pub first_sent_at: Instant,
    /// Retransmitted at least once (Karn: no RTT sample from it).
    pub ever_retransmitted: bool,
    /// A retransmission of it is presumed in flight.
    pub retrans_in_flight: bool,
    /// Presumed lost (IsLost, or everything after an RTO).
    pub lost: bool,
    pub sacked: bool,
    pub tx: TxRateInfo,
    /// SND.NXT when the latest retransmission left (Linux keeps it in
    /// `TCP_SKB_CB(skb)->ack_seq` for `tcp_mark_lost_retrans`); 0 if never
    /// retransmitted.
    pub retrans_snd_nxt: u64,
    /// A lower bound on the SACKed run starting here: when `sacked`, the
    /// segments at this index and the `sacked_run − 1` after it are all
    /// SACKed (0 = not yet known). Only a hint for skipping runs in
    /// [`Scoreboard::rack_detect`] and [`Scoreboard::sack`]: SACKed marks
    /// are only cleared all at once ([`Scoreboard::forget_sacked`]), and
    /// removing segments from the head leaves the counts forward true.
    pub sacked_run: u32,
}

impl SentSegment {
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    segs: VecDeque<SentSegment>,
    outstanding_bytes: u64,
    sacked_bytes: u64,
    /// Lost and not SACKed.
    lost_bytes: u64,
    /// Retransmission in flight, not SACKed.
    retrans_bytes: u64,
    /// Every loss marked so far, a retransmission lost again included
    /// (Linux `tp->lost`, see [`Scoreboard::lost_events_bytes`]).
    lost_events_bytes: u64,
    /// No segment below this sequence is lost and not yet retransmitted.
    retransmit_hint: u64,
    /// Highest end of a segment ever SACKed.
    highest_sacked_end: u64,
    /// Every un-SACKed segment below this sequence is marked lost
    /// (IsLost is monotone in the sequence number, so the marked region
    /// only grows: loss marking is incremental).
    lost_floor: u64,
}

impl Scoreboard {
    pub fn new() -> Self {
        Scoreboard::default()
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Segments outstanding (Linux `packets_out`).
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    pub fn get(&self, idx: usize) -> Option<&SentSegment> {
        self.segs.get(idx)
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }

    pub fn retrans_bytes(&self) -> u64 {
        self.retrans_bytes
    }

    /// RFC 6675 `pipe` / Linux `tcp_packets_in_flight`, in bytes.
    pub fn pipe(&self) -> u64 {
        (self.outstanding_bytes - self.sacked_bytes - self.lost_bytes) + self.retrans_bytes
    }

    /// A new segment was sent (its `seq` must be the end of the last one).
    pub fn push(&mut self, seg: SentSegment) {
        self.outstanding_bytes += seg.len as u64;
        self.segs.push_back(seg);
    }

    fn forget(&mut self, seg: &SentSegment) {
        self.outstanding_bytes -= seg.len as u64;
        if seg.sacked {
            self.sacked_bytes -= seg.len as u64;
        } else {
            if seg.lost {
                self.lost_bytes -= seg.len as u64;
            }
            if seg.retrans_in_flight {
                self.retrans_bytes -= seg.len as u64;
            }
        }
    }

    /// Cumulative ACK up to `ack`: remove the segments it covers and hand
    /// each to `f` (in sequence order). A segment only partly covered is
    /// trimmed (cannot happen with our receiver, kept for robustness).
    pub fn ack_to(&mut self, ack: u64, mut f: impl FnMut(&SentSegment)) {
        while let Some(front) = self.segs.front().copied() {
            if front.end() <= ack {
                self.segs.pop_front();
                self.forget(&front);
                f(&front);
            } else {
                if front.seq < ack {
                    let cut = ack - front.seq;
                    self.forget(&front);
                    let mut rest = front;
                    rest.seq = ack;
                    rest.len -= cut as u32;
                    self.segs[0] = rest;
                    self.unforget(&rest);
                }
                break;
            }
        }
    }

    fn unforget(&mut self, seg: &SentSegment) {
        self.outstanding_bytes += seg.len as u64;
        if seg.sacked {
            self.sacked_bytes += seg.len as u64;
        } else {
            if seg.lost {
                self.lost_bytes += seg.len as u64;
            }
            if seg.retrans_in_flight {
                self.retrans_bytes += seg.len as u64;
            }
        }
    }

    /// Mark the segments lying wholly inside the SACK block [start, end)
    /// SACKed; hand each newly SACKed segment to `f`.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(&SentSegment)) {
        let mut i = self.segs.partition_point(|s| s.seq < start);
        while i < self.segs.len() {
            let seg = self.segs[i];
            if seg.end() > end {
                break;
            }
            if seg.sacked {
                // Ends grow with the index: the run's segments would all
                // be skipped here, or the first one too long ends the
                // loop, as the segment after the run then does.
                i = self.sacked_run_end(i);
                continue;
            }
            self.forget(&seg);
            self.highest_sacked_end = self.highest_sacked_end.max(seg.end());
            self.segs[i].sacked = true;
            self.segs[i].sacked_run = 1;
            let now = self.segs[i];
            self.unforget(&now);
            f(&now);
            i += 1;
        }
    }

    /// The index of the first segment at or after `i` (which is SACKed)
    /// that is not SACKed, or the length: hops over the runs' recorded
    /// lengths and records the whole span at `i`, so the next walk
    /// crosses it in one step.
    fn sacked_run_end(&mut self, i: usize) -> usize {
        let n = self.segs.len();
        let mut j = i + (self.segs[i].sacked_run.max(1) as usize);
        while j < n && self.segs[j].sacked {
            j += self.segs[j].sacked_run.max(1) as usize;
        }
        let j = j.min(n);
        self.segs[i].sacked_run = u32::try_from(j - i).unwrap_or(u32::MAX);
        j
    }

    /// RFC 6675 §4 IsLost for every un-SACKed segment: lost when
    /// `dup_thresh` SACKed segments, or more than (dup_thresh − 1)·SMSS
    /// SACKed bytes, lie above it. Marks them and returns the bytes newly
    /// marked lost.
    pub fn mark_lost_by_sack(&mut self, dup_thresh: u32, mss: u32) -> u64 {
        if self.sacked_bytes == 0 {
            return 0;
        }
        let byte_thresh = (dup_thresh.saturating_sub(1) as u64) * mss as u64;
        // The lowest point with enough SACKed data above it: walk down
        // from the highest SACKed segment to the DupThresh-th SACKed one.
        let top = self
            .segs
            .partition_point(|s| s.end() <= self.highest_sacked_end);
        let (mut segs_above, mut bytes_above) = (0u32, 0u64);
        let mut point = None;
        for i in (0..top).rev() {
            let seg = self.segs[i];
            if seg.sacked {
                segs_above += 1;
                bytes_above += seg.len as u64;
                if segs_above >= dup_thresh || bytes_above > byte_thresh {
                    point = Some(seg.seq);
                    break;
                }
            }
        }
        let Some(point) = point else {
            return 0;
        };
        if point <= self.lost_floor {
            return 0;
        }
        let from = self.segs.partition_point(|s| s.seq < self.lost_floor);
        let mut newly = 0;
        for i in from..self.segs.len() {
            let seg = self.segs[i];
            if seg.seq >= point {
                break;
            }
            newly += self.mark_lost_if_unsacked(i);
        }
        self.lost_floor = point;
        newly
    }

    /// Mark the first segment lost (fast retransmit without SACK: the
    /// duplicate ACKs name it). Returns the bytes newly marked.
    pub fn mark_head_lost(&mut self) -> u64 {
        if self.segs.is_empty() {
            return 0;
        }
        self.mark_lost_if_unsacked(0)
    }

    /// Marks segment `i` lost unless it is SACKed or marked already, and
    /// moves the retransmission hint back to it. Returns the bytes newly
    /// marked (its length, or 0).
    fn mark_lost_if_unsacked(&mut self, i: usize) -> u64 {
        let seg = self.segs[i];
        if seg.sacked || seg.lost {
            return 0;
        }
        self.segs[i].lost = true;
        self.lost_bytes += seg.len as u64;
        self.lost_events_bytes += seg.len as u64;
        self.retransmit_hint = self.retransmit_hint.min(seg.seq);
        seg.len as u64
    }

    /// RTO (Linux `tcp_enter_loss` / `tcp_timeout_mark_lost`): every
    /// un-SACKed segment is lost, retransmissions included — except, with
    /// `spare_after = Some(t)` (RACK, RFC 8985 §6.3), segments other than
    /// the first sent after `t` (less than RACK.rtt ago), which are not
    /// overdue yet. Returns the bytes newly marked.
    pub fn mark_all_lost(&mut self, spare_after: Option<Instant>) -> u64 {
        let mut newly = 0;
        let mut all = true;
        for i in 0..self.segs.len() {
            let seg = self.segs[i];
            if seg.sacked {
                continue;
            }
            if i > 0 && spare_after.is_some_and(|t| seg.sent_at > t) {
                all = false;
                continue;
            }
            newly += self.mark_lost_at(i);
        }
        self.retransmit_hint = 0;
        if let (true, Some(last)) = (all, self.segs.back()) {
            self.lost_floor = self.lost_floor.max(last.end());
        }
        newly
    }

    /// Forget every SACKed mark (RFC 2018 §8: "after a retransmit timeout
    /// the data sender SHOULD turn off all of the SACKed bits", since the
    /// receiver may have reneged; Linux does it only when it detects
    /// reneging, `tcp_timeout_mark_lost` with `is_reneg`; NetBSD and older
    /// FreeBSD always, `tcp_free_sackholes` in `tcp_timer_rexmt`). The
    /// segments count as outstanding again (not lost: the caller marks
    /// them); later SACK blocks mark them anew. Returns the bytes unmarked.
    pub fn forget_sacked(&mut self) -> u64 {
        let mut unmarked = 0;
        for i in 0..self.segs.len() {
            let seg = self.segs[i];
            if seg.sacked {
                self.forget(&seg);
                self.segs[i].sacked = false;
                self.segs[i].sacked_run = 0;
                let now = self.segs[i];
                self.unforget(&now);
                unmarked += seg.len as u64;
            }
        }
        self.highest_sacked_end = 0;
        self.lost_floor = 0;
        self.retransmit_hint = 0;
        unmarked
    }

    /// Mark segment `idx` (not SACKed) lost; a retransmission of it in
    /// flight is lost too. Returns the bytes newly counted lost.
    fn mark_lost_at(&mut self, idx: usize) -> u64 {
        let seg = self.segs[idx];
        let mut newly = 0;
        if !seg.lost {
            self.segs[idx].lost = true;
            self.lost_bytes += seg.len as u64;
            self.lost_events_bytes += seg.len as u64;
            newly = seg.len as u64;
        }
        if seg.retrans_in_flight {
            self.segs[idx].retrans_in_flight = false;
            self.retrans_bytes -= seg.len as u64;
            // "Account for retransmits that are lost again".
            self.lost_events_bytes += seg.len as u64;
        }
        self.retransmit_hint = self.retransmit_hint.min(seg.seq);
        newly
    }

    /// RACK loss detection, RFC 8985 §6.2 step 5 (Linux
    /// `tcp_rack_detect_loss`): every segment neither SACKed nor waiting
    /// for its retransmission that was sent before the most recently
    /// delivered one (`rack_xmit`, `rack_end`: its time and end) and
    /// `wait` = RACK.rtt + reo_wnd or more before `now` is lost. Returns
    /// the bytes newly lost and the longest time still to wait for a
    /// segment sent before it but not yet overdue (the reordering timer).
    ///
    /// Original transmissions leave in sequence order, so the walk stops
    /// at the first never-retransmitted segment sent after `rack_xmit`.
    pub fn rack_detect(
        &mut self,
        rack_xmit: Instant,
        rack_end: u64,
        wait: Duration,
        now: Instant,
    ) -> (u64, Option<Duration>) {
        let (mut newly, mut remaining) = (0, None::<Duration>);
        let mut i = 0;
        while i < self.segs.len() {
            let s = self.segs[i];
            if s.sacked {
                i = self.sacked_run_end(i);
                continue;
            }
            i += 1;
            if s.lost && !s.retrans_in_flight {
                continue;
            }
            if (s.sent_at, s.end()) >= (rack_xmit, rack_end) {
                if s.ever_retransmitted {
                    continue;
                }
                break;
            }
            let deadline = s.sent_at.saturating_add(wait);
            if deadline <= now {
                newly += self.mark_lost_at(i - 1);
            } else {
                let left = deadline - now;
                remaining = Some(remaining.map_or(left, |r| r.max(left)));
            }
        }
        (newly, remaining)
    }

    /// Bytes marked lost so far, counting a retransmission that is lost
    /// again as a new loss: Linux's `tp->lost` (net/ipv4/tcp_input.c
    /// `tcp_mark_skb_lost` → `tcp_notify_skb_loss_event`, the branch
    /// "Account for retransmits that are lost again"; `tcp_sum_lost` before
    /// 5.11), whose growth over one ACK is the rate sample's `rs->losses`
    /// (`tcp_ack` → `tcp_rate_gen`). A segment's first loss alone is
    /// [`Scoreboard::lost_bytes`]'s business.
    pub fn lost_events_bytes(&self) -> u64 {
        self.lost_events_bytes
    }

    /// Highest end of a segment ever SACKed (Linux `tcp_highest_sack_seq`).
    pub fn highest_sacked_end(&self) -> u64 {
        self.highest_sacked_end
    }

    /// The last segment sent (highest sequence), for the tail loss probe.
    pub fn last_index(&self) -> Option<usize> {
        self.segs.len().checked_sub(1)
    }

    /// Undo every loss mark (Linux `tcp_undo_cwnd_reduction` with
    /// `unmark_loss`): the losses were spurious. Retransmissions in flight
    /// stay counted.
    pub fn unmark_lost(&mut self) {
        for seg in self.segs.iter_mut() {
            if seg.lost && !seg.sacked {
                self.lost_bytes -= seg.len as u64;
            }
            seg.lost = false;
        }
        self.lost_floor = 0;
        self.retransmit_hint = u64::MAX;
    }

    /// Index of the first segment presumed lost whose retransmission is
    /// not in flight (RFC 6675 NextSeg rule 1, Linux
    /// `tcp_xmit_retransmit_queue`).
    pub fn first_lost_unsent(&mut self) -> Option<usize> {
        if self.lost_bytes == 0 {
            return None;
        }
        let start = self.segs.partition_point(|s| s.seq < self.retransmit_hint);
        for i in start..self.segs.len() {
            let s = &self.segs[i];
            if s.lost && !s.sacked && !s.retrans_in_flight {
                self.retransmit_hint = s.seq;
                return Some(i);
            }
        }
        self.retransmit_hint = u64::MAX;
        None
    }

    /// Index of the lowest un-SACKed, not-lost, not-retransmitted segment
    /// that has SACKed data above it (RFC 6675 NextSeg rule 3).
    pub fn first_unsacked_below_sack(&self) -> Option<usize> {
        if self.sacked_bytes == 0 {
            return None;
        }
        let highest_sacked = self.segs.iter().rposition(|s| s.sacked)?;
        (0..highest_sacked).find(|&i| {
            let s = &self.segs[i];
            !s.sacked && !s.lost && !s.retrans_in_flight
        })
    }

    /// Index of the highest segment neither SACKed nor being
    /// retransmitted (RFC 6675 NextSeg rule 4).
    pub fn last_unsacked_unsent(&self) -> Option<usize> {
        self.segs
            .iter()
            .rposition(|s| !s.sacked && !s.retrans_in_flight)
    }

    /// Linux ≤ 4.3 `tcp_mark_lost_retrans` (net/ipv4/tcp_input.c, with
    /// FACK, in the Recovery state; removed in 4.4 when RACK took over): a
    /// retransmission is lost once data above SND.NXT as it was when the
    /// retransmission left — data sent after it — is SACKed
    /// (`received_upto`, the highest SACKed sequence). Its segment is
    /// marked lost again so that it is retransmitted again. Returns the
    /// bytes whose retransmission was found lost.
    pub fn mark_lost_retrans(&mut self, received_upto: u64) -> u64 {
        if self.retrans_bytes == 0 {
            return 0;
        }
        let mut found = 0;
        for i in 0..self.segs.len() {
            let seg = self.segs[i];
            if seg.seq >= received_upto {
                break;
            }
            if seg.retrans_in_flight && !seg.sacked && received_upto > seg.retrans_snd_nxt {
                self.mark_lost_at(i);
                found += seg.len as u64;
            }
        }
        found
    }

    /// Linux `fackets_out`: the segments from SND.UNA up to and including
    /// the highest SACKed one, SACKed or not (FACK's "forward-most" point,
    /// counted in segments).
    pub fn fackets_out(&self) -> u64 {
        if self.sacked_bytes == 0 {
            return 0;
        }
        self.segs
            .partition_point(|s| s.end() <= self.highest_sacked_end) as u64
    }

    /// FACK loss marking, Linux 2.6.32 `tcp_update_scoreboard` (FACK
    /// branch) → `tcp_mark_head_lost(sk, fackets_out − reordering)`
    /// (net/ipv4/tcp_input.c): counting every segment from the head, SACKed
    /// or not, the first max(fackets_out − `reordering`, 1) — those more
    /// than `reordering` segments below the highest SACKed one — are lost
    /// if not SACKed (`tcp_skb_mark_lost`: a segment already marked, a
    /// retransmission in flight included, stays as it is). Never past
    /// `high_seq`, the recovery point. Nothing while fackets_out ≤
    /// `reordering` (`tcp_time_to_recover`'s "classic rule" is not met
    /// and the caller does not ask). RFC 6675 instead needs `reordering`
    /// SACKed segments above a hole; under a burst of drops FACK marks the
    /// whole burst at the first SACK. Returns the bytes newly marked lost.
    pub fn mark_lost_fack(&mut self, reordering: u64, high_seq: u64) -> u64 {
        let fackets = self.fackets_out();
        if fackets <= reordering {
            return 0;
        }
        let count = (fackets - reordering).max(1) as usize;
        let mut newly = 0;
        for i in 0..count.min(self.segs.len()) {
            let seg = self.segs[i];
            if seg.end() > high_seq {
                break;
            }
            newly += self.mark_lost_if_unsacked(i);
        }
        newly
    }

    /// Linux 2.6.32 `tcp_timeout_skbs` (with FACK, from
    /// `tcp_update_scoreboard`): from the head, every segment whose latest
    /// transmission is more than `rto` old is lost (if neither SACKed nor
    /// marked already); the walk stops at the first that is not. Returns
    /// the bytes newly marked lost.
    pub fn mark_lost_timed_out(&mut self, now: Instant, rto: Duration) -> u64 {
        let mut newly = 0;
        for i in 0..self.segs.len() {
            let seg = self.segs[i];
            if now.saturating_since(seg.sent_at) <= rto {
                break;
            }
            newly += self.mark_lost_if_unsacked(i);
        }
        newly
    }

    /// `tcp_head_timedout`: the head segment's latest transmission is more
    /// than `rto` old.
    pub fn head_timed_out(&self, now: Instant, rto: Duration) -> bool {
        self.segs
            .front()
            .is_some_and(|s| now.saturating_since(s.sent_at) > rto)
    }

    /// Record the SND.NXT of segment `idx`'s latest retransmission.
    pub fn note_retrans_snd_nxt(&mut self, idx: usize, snd_nxt: u64) {
        self.segs[idx].retrans_snd_nxt = snd_nxt;
    }

    /// Record a retransmission of segment `idx` at `now`.
    pub fn mark_retransmitted(&mut self, idx: usize, now: Instant, tx: TxRateInfo) {
        let seg = self.segs[idx];
        if !seg.retrans_in_flight && !seg.sacked {
            self.retrans_bytes += seg.len as u64;
        }
        let s = &mut self.segs[idx];
        s.retrans_in_flight = true;
        s.ever_retransmitted = true;
        s.sent_at = now;
        s.tx = tx;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new();
        for i in 0..n {
            b.push(SentSegment {
                seq: 1 + i * 1000,
                len: 1000,
                sent_at: Instant::ZERO,
                retrans_snd_nxt: 0,
                first_sent_at: Instant::ZERO,
                ever_retransmitted: false,
                retrans_in_flight: false,
                lost: false,
                sacked: false,
                sacked_run: 0,
                tx: TxRateInfo::default(),
            });
        }
        b
    }

    /// Linux `tcp_mark_skb_lost`: a retransmission that RACK finds lost
    /// again adds to `tp->lost` (and so to the ACK's `rs->losses`), though
    /// the segment was counted lost once already; `lost_out` (here
    /// `lost_bytes`) counts it once.
    #[test]
    fn a_retransmission_lost_again_is_a_new_loss_event() {
        let mut b = board(3);
        let ms = |n: u64| Instant::from_ns(n * 1_000_000);
        // Segment 1 is lost (segment 2, sent as late, is SACKed)...
        b.sack(2001, 3001, |_| {});
        let (lost, _) = b.rack_detect(Instant::ZERO, 3001, Duration::ZERO, ms(50));
        assert_eq!(
            (lost, b.lost_bytes(), b.lost_events_bytes()),
            (2000, 2000, 2000)
        );
        // ...both are retransmitted at 50 ms; the second retransmission is
        // SACKed, so RACK finds the first one lost again.
        b.mark_retransmitted(0, ms(50), TxRateInfo::default());
        b.mark_retransmitted(1, ms(51), TxRateInfo::default());
        b.sack(1001, 2001, |_| {});
        let (lost, _) = b.rack_detect(ms(51), 2001, Duration::ZERO, ms(101));
        assert_eq!(lost, 0, "no segment lost for the first time");
        assert_eq!(b.lost_bytes(), 1000);
        assert_eq!(b.lost_events_bytes(), 3000);
        assert_eq!(b.pipe(), 0);
    }

    proptest::proptest! {
        /// The SACKed-run hints (`sacked_run`) only skip work: after any
        /// sequence of SACK blocks, each followed by a RACK pass, the SACKed
        /// segments are exactly those lying wholly inside a block seen, each
        /// is handed over once, every hint covers SACKed segments only, and
        /// RACK marks lost exactly the un-SACKed segments sent before the
        /// newest SACKed one (a plain walk, computed here apart).
        #[test]
        fn sacked_run_hints_change_no_result(
            blocks in proptest::collection::vec((0u64..40_000, 1u64..12_000), 1..30)
        ) {
            let n = 40u64;
            let mut b = board(n);
            for i in 0..n as usize {
                b.segs[i].sent_at = Instant::from_ns(i as u64 * 1_000_000);
            }
            let mut sacked = vec![false; n as usize];
            let mut lost = vec![false; n as usize];
            for (start, len) in blocks {
                let (start, end) = (1 + start, 1 + start + len);
                let mut handed = Vec::new();
                b.sack(start, end, |s| handed.push((s.seq - 1) / 1000));
                let mut want = Vec::new();
                for i in 0..n {
                    let (lo, hi) = (1 + i * 1000, 1 + (i + 1) * 1000);
                    if lo >= start && hi <= end && !sacked[i as usize] {
                        sacked[i as usize] = true;
                        want.push(i);
                    }
                }
                proptest::prop_assert_eq!(handed, want);
                if let Some(h) = sacked.iter().rposition(|&x| x) {
                    let seg = *b.get(h).unwrap();
                    let (newly, _) = b.rack_detect(
                        seg.sent_at,
                        seg.end(),
                        Duration::ZERO,
                        Instant::from_ns(1_000_000_000_000),
                    );
                    let mut want_newly = 0;
                    for i in 0..h {
                        if !sacked[i] && !lost[i] {
                            lost[i] = true;
                            want_newly += 1000;
                        }
                    }
                    proptest::prop_assert_eq!(newly, want_newly);
                }
                for i in 0..n as usize {
                    let s = b.get(i).unwrap();
                    proptest::prop_assert_eq!((s.sacked, s.lost), (sacked[i], lost[i]));
                    if s.sacked {
                        let run = s.sacked_run as usize;
                        proptest::prop_assert!(sacked[i..(i + run).min(n as usize)].iter().all(|&x| x));
                    }
                }
            }
        }
    }

    #[test]
    fn pipe_follows_rfc6675_setpipe() {
        let mut b = board(10);
        assert_eq!(b.pipe(), 10_000);
        // Segment 0 lost, segments 1..=3 SACKed: IsLost(0) (3 SACKed above).
        let mut n = 0;
        b.sack(1001, 4001, |_| n += 1);
        assert_eq!(n, 3);
        assert_eq!(b.mark_lost_by_sack(3, 1000), 1000);
        assert_eq!(b.pipe(), 10_000 - 3000 - 1000);
        let i = b.first_lost_unsent().unwrap();
        assert_eq!(i, 0);
        b.mark_retransmitted(i, Instant::ZERO, TxRateInfo::default());
        assert_eq!(b.pipe(), 7000);
        assert_eq!(b.first_lost_unsent(), None);
        // Cumulative ACK past the SACKed run.
        let mut acked = Vec::new();
        b.ack_to(4001, |s| acked.push((s.seq, s.sacked)));
        assert_eq!(
            acked,
            vec![(1, false), (1001, true), (2001, true), (3001, true)]
        );
        assert_eq!((b.pipe(), b.sacked_bytes(), b.lost_bytes()), (6000, 0, 0));
    }

    /// A burst of drops (segments 0..=7) then one SACKed segment (8):
    /// FACK marks the first fackets_out − 3 = 6 segments lost at that first
    /// SACK; RFC 6675 marks nothing until three segments are SACKed.
    #[test]
    fn fack_marks_a_burst_at_the_first_sack_rfc6675_does_not() {
        let mut b = board(12);
        b.sack(8001, 9001, |_| {}); // segment 8
        assert_eq!(b.fackets_out(), 9);
        let mut rfc = b.clone();
        assert_eq!(rfc.mark_lost_by_sack(3, 1000), 0, "one SACKed segment");
        assert_eq!(b.mark_lost_fack(3, u64::MAX), 6000, "segments 0..=5");
        assert_eq!((0..12).filter(|&i| b.get(i).unwrap().lost).count(), 6);
        // The three below the highest SACK are not lost (reordering room).
        assert!(!b.get(6).unwrap().lost && !b.get(7).unwrap().lost);
        // Idempotent; more SACKs move the point up.
        assert_eq!(b.mark_lost_fack(3, u64::MAX), 0);
        b.sack(9001, 10_001, |_| {});
        assert_eq!(b.mark_lost_fack(3, u64::MAX), 1000, "segment 6");
    }

    /// Nothing at fackets_out ≤ 3, nothing past the recovery point, and
    /// SACKed segments inside the count are skipped but counted.
    #[test]
    fn fack_threshold_recovery_point_and_sacked_segments() {
        let mut b = board(10);
        b.sack(2001, 3001, |_| {}); // segment 2: fackets_out = 3
        assert_eq!(b.mark_lost_fack(3, u64::MAX), 0);
        b.sack(3001, 4001, |_| {}); // segment 3: fackets_out = 4
        assert_eq!(b.mark_lost_fack(3, 1000), 0, "segment 0 ends past 1000");
        assert_eq!(b.mark_lost_fack(3, u64::MAX), 1000, "segment 0 only");
        b.sack(6001, 7001, |_| {}); // fackets_out = 7: count 4 = 0..=3
        assert_eq!(b.mark_lost_fack(3, u64::MAX), 1000, "segment 1");
        assert!(!b.get(2).unwrap().lost && !b.get(3).unwrap().lost);
    }

    /// `tcp_timeout_skbs`: from the head while older than the RTO.
    #[test]
    fn timed_out_segments_from_the_head_are_lost() {
        let mut b = board(4);
        for (i, t) in [0u64, 10, 300, 20].iter().enumerate() {
            b.segs[i].sent_at = Instant::from_ns(t * 1_000_000);
        }
        let now = Instant::from_ns(250_000_000);
        let rto = Duration::from_ms(200);
        assert!(b.head_timed_out(now, rto));
        assert_eq!(b.mark_lost_timed_out(now, rto), 2000, "0 and 1, not 3");
        assert!(!b.get(3).unwrap().lost);
        assert!(!b.head_timed_out(Instant::from_ns(200_000_000), rto));
    }

    #[test]
    fn two_sacked_segments_are_not_enough_but_2mss_plus_one_byte_is() {
        let mut b = board(5);
        b.sack(2001, 4001, |_| {});
        assert_eq!(b.mark_lost_by_sack(3, 1000), 0);
        let mut c = board(5);
        c.sack(2001, 4001, |_| {});
        assert_eq!(c.mark_lost_by_sack(3, 999), 2000, "segments 0 and 1");
    }

    #[test]
    fn rto_marks_everything_unsacked_lost() {
        let mut b = board(4);
        b.sack(2001, 3001, |_| {});
        b.mark_head_lost();
        b.mark_retransmitted(0, Instant::ZERO, TxRateInfo::default());
        assert_eq!(b.mark_all_lost(None), 2000);
        assert_eq!((b.pipe(), b.lost_bytes(), b.retrans_bytes()), (0, 3000, 0));
        assert_eq!(b.first_lost_unsent(), Some(0));
    }

    #[test]
    fn forgetting_sacked_marks_makes_them_retransmittable() {
        let mut b = board(4);
        b.sack(1001, 3001, |_| {});
        assert_eq!(b.forget_sacked(), 2000);
        assert_eq!((b.sacked_bytes(), b.pipe()), (0, 4000));
        assert_eq!(b.mark_all_lost(None), 4000);
        assert_eq!(b.pipe(), 0);
        let mut order = Vec::new();
        while let Some(i) = b.first_lost_unsent() {
            order.push(i);
            b.mark_retransmitted(i, Instant::ZERO, TxRateInfo::default());
        }
        assert_eq!(order, vec![0, 1, 2, 3]);
        // A later SACK block marks a segment again: its retransmission
        // leaves the pipe.
        b.sack(1001, 2001, |_| {});
        assert_eq!((b.sacked_bytes(), b.pipe()), (1000, 3000));
    }

    /// RACK: segments sent before the delivered one by more than the
    /// window are lost, later or younger ones wait (and say how long).
    #[test]
    fn rack_marks_by_send_time() {
        let mut b = Scoreboard::new();
        for i in 0..6u64 {
            b.push(SentSegment {
                seq: 1 + i * 1000,
                len: 1000,
                sent_at: Instant::from_ns(i * 1_000_000),
                retrans_snd_nxt: 0,
                first_sent_at: Instant::from_ns(i * 1_000_000),
                ever_retransmitted: false,
                retrans_in_flight: false,
                lost: false,
                sacked: false,
                sacked_run: 0,
                tx: TxRateInfo::default(),
            });
        }
        // Segment 4 (sent at 4 ms) SACKed at 24 ms: RACK.rtt = 20 ms.
        b.sack(4001, 5001, |_| {});
        let rtt = Duration::from_ms(20);
        let now = Instant::from_ns(24_000_000);
        // reo_wnd 1.5 ms: segments 0..=2 (sent ≤ 2 ms) are overdue, 3
        // (sent at 3 ms) has 0.5 ms left; 5 was sent after 4.
        let (lost, wait) = b.rack_detect(
            Instant::from_ns(4_000_000),
            5001,
            rtt + Duration::from_us(1500),
            now,
        );
        assert_eq!(lost, 3000);
        assert_eq!(wait, Some(Duration::from_us(500)));
        assert!(!b.segs[3].lost && !b.segs[5].lost);
        // RTO sparing segments sent after 2.5 ms: 0..=2 already lost,
        // the head rule does not matter, 3 and 5 are spared.
        assert_eq!(b.mark_all_lost(Some(Instant::from_ns(2_500_000))), 0);
        assert_eq!(b.mark_all_lost(None), 2000);
    }

    /// RFC 6675 IsLost by its definition, for comparison.
    fn is_lost_brute(b: &Scoreboard, idx: usize, mss: u64) -> bool {
        let above = (idx + 1..b.segs.len()).filter(|&j| b.segs[j].sacked);
        let (n, bytes) = above.fold((0, 0), |(n, by), j| (n + 1, by + b.segs[j].len as u64));
        n >= 3 || bytes > 2 * mss
    }

    proptest::proptest! {
        #[test]
        fn incremental_marking_matches_islost(
            ops in proptest::collection::vec((0u64..40, 1u64..4, proptest::bool::ANY), 1..30)
        ) {
            let mut b = board(40);
            for (start, len, ack) in ops {
                if ack {
                    b.ack_to(1 + start * 1000 / 4, |_| {});
                } else {
                    b.sack(1 + start * 1000, 1 + (start + len) * 1000, |_| {});
                }
                b.mark_lost_by_sack(3, 1000);
                for i in 0..b.segs.len() {
                    if !b.segs[i].sacked {
                        proptest::prop_assert_eq!(b.segs[i].lost, is_lost_brute(&b, i, 1000), "seg {}", i);
                    }
                }
                let pipe: u64 = b.segs.iter().filter(|s| !s.sacked && !s.lost).map(|s| s.len as u64).sum();
                proptest::prop_assert_eq!(b.pipe(), pipe);
            }
        }
    }
}
