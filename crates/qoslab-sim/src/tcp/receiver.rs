//! The passive TCP endpoint (iperf3 server): answers the SYN, acknowledges
//! data, hands in-order bytes to an application that reads instantly.
//!
//! - Handshake: a SYN (or a retransmitted one) is answered with SYN-ACK
//!   carrying an unscaled window (RFC 7323 §2.2: the window field of a
//!   SYN is never scaled).
//! - Cumulative ACKs (RFC 9293 §3.10.7.4).
//! - Delayed ACKs, RFC 1122 §4.2.3.2 and RFC 5681 §4.2: an ACK at least
//!   every `ack_every_segments` full-sized segments, otherwise when the
//!   `delayed_ack` timer (started by the first unacknowledged segment)
//!   fires. An out-of-order segment, a segment that fills all or part of a
//!   gap, or a duplicate segment is acknowledged at once (RFC 5681 §4.2;
//!   Linux `__tcp_ack_snd_check` acks at once while the out-of-order queue
//!   is non-empty, `tcp_data_queue` on duplicates). On the Linux profiles
//!   (quick-acks and `timer_hz`) the timer is Linux's adaptive `ato` on
//!   the jiffies timer wheel (see [`super::delack`]: 40 ms up to the
//!   handshake's RTT, run at a tick); otherwise it is the fixed
//!   `delayed_ack` (Windows' 200 ms timer is a free-running tick: not
//!   modelled).
//! - Linux quick-ack mode (`tcp_incr_quickack` / `tcp_in_quickack_mode`,
//!   net/ipv4/tcp_input.c): the first `quickack_segments` data segments
//!   are acknowledged at once, so slow start is not slowed by delayed ACKs.
//!   Linux also re-enters it when in-order data arrives more than an RTO
//!   after the last (`tcp_event_data_recv`; see
//!   `TcpReceiver::quickack_after_idle`). A duplicate segment re-enters it
//!   (`tcp_enter_quickack_mode` on `tcp_data_queue`'s `out_of_window`
//!   path), and with [`TcpConfig::quickack_on_out_of_order`] (Linux
//!   before 4.18) so does every out-of-order segment; every ACK sent
//!   uses one quick-ack up (`tcp_dec_quickack_mode`).
//! - SACK, RFC 2018 §4: the first block covers the most recently received
//!   segment, then the most recently reported other blocks; three blocks
//!   fit beside timestamps, four without. D-SACK, RFC 2883: a duplicate
//!   segment is reported in the first block.
//! - Timestamps, RFC 7323 §4.3: TS.Recent is taken from a segment with
//!   SEG.SEQ ≤ Last.ACK.sent, so a delayed ACK echoes the earliest
//!   segment it acknowledges and an ACK of out-of-order data echoes the
//!   last in-order one. Timestamps are on when the connection's
//!   `header_bytes ≥ 52` (40 + the 12-byte option, as the profiles say).
//! - Advertised window: the free receive buffer, `receive_window_bytes −
//!   out-of-order bytes` (the application reads in-order data at once),
//!   capped at 65535 without window scaling, rounded down to the scale
//!   granularity with it (shift chosen as Linux
//!   `tcp_select_initial_window`: the smallest with window ≤ 65535·2^s);
//!   the right edge never moves left (RFC 9293 §3.8.6 "SHOULD NOT shrink",
//!   Linux `tcp_select_window`, BSD `tcp_output`). Because the right edge
//!   is held while a hole is open, a sender still sees the full window
//!   beyond `rcv_nxt`.
//!
//! - With `rcvbuf_autotune` (the linux profile's default) the window is
//!   Linux's autotuned one instead, see [`super::rcvbuf`]; a segment that
//!   grows the window is acknowledged at once (`tcp_grow_window` sets
//!   `icsk_ack.quick`); so is a locked `SO_RCVBUF`
//!   ([`TcpConfig::rcvbuf_lock_bytes`]). With either, the every-second-
//!   segment ACK is sent only if the window computed now is not below the
//!   one last advertised (`__tcp_ack_snd_check`, net/ipv4/tcp_input.c:
//!   "right edge of window advances far enough"); otherwise the
//!   application's read sends it (`__tcp_cleanup_rbuf`, net/ipv4/tcp.c:
//!   "Once-per-two-segments ACK was not sent by tcp_input.c"), so a
//!   window-limited flight is acknowledged once, window open, after the read.
//!
//! Left out: FIN/close, SACK compression (Linux ≥ 4.18 `tcp_sack_compress`
//! delays ACKs of out-of-order data by up to ~1 ms), window probes.

use super::delack::LinuxAto;
use super::rcvbuf::RcvBuf;
use super::{TcpHeader, TcpIo, ACK, SYN};
use crate::config::TcpConfig;
use qoslab_core::{Duration, Instant};
use std::collections::BTreeMap;

/// Linux caps the window-scale shift at 14 (RFC 7323 §2.3).
const MAX_WSCALE: u32 = 14;

/// The longest a read waits for the receive path to go idle (1 ms).
const READ_WAIT_MAX_NS: u64 = 1_000_000;

/// How many recently reported SACK blocks are remembered.
const SACK_MEMORY: usize = 8;

pub struct TcpReceiver {
    mss: u32,
    /// Buffer size after the no-scaling cap.
    rwnd_bytes: u64,
    wscale: u32,
    timestamps: bool,
    sack: bool,
    max_sack_blocks: usize,
    delayed_ack: Option<Duration>,
    /// This end's retransmission timeout as Linux's `icsk_rto` after the
    /// handshake's RTT sample (`initial_rto` before it), for
    /// `TcpReceiver::quickack_after_idle`; `min_rto` and `max_rto` bound it.
    icsk_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    /// When the SYN-ACK left (the handshake's RTT sample starts there).
    synack_at: Option<Instant>,
    /// `icsk_ack.lrcvtime`: when in-order data last arrived.
    lrcvtime: Option<Instant>,
    /// Data was copied in the receive path (`cleanup_after_copy` is due).
    cleanup_due: bool,
    ack_every: u32,
    quickack_left: u32,
    /// Linux quick-acks at all (`quickack_segments > 0`): a duplicate
    /// segment re-enters quick-ack mode.
    linux_quickack: bool,
    /// Linux < 4.18: an out-of-order segment re-enters quick-ack mode.
    quickack_on_ooo: bool,
    syn_seen: bool,
    rcv_nxt: u64,
    /// Out-of-order data: start → end, disjoint and non-adjacent.
    ooo: BTreeMap<u64, u64>,
    ooo_bytes: u64,
    /// SACK blocks, most recent first (RFC 2018 §4).
    sack_recent: Vec<(u64, u64)>,
    dsack: Option<(u64, u64)>,
    ts_recent: u64,
    last_ack_sent: u64,
    right_edge: u64,
    unacked_full_segments: u32,
    delack_at: Option<Instant>,
    /// Linux's adaptive delayed-ACK timeout on the jiffies timer wheel
    /// (the Linux profiles: quick-acks and `timer_hz`); `None`: the fixed
    /// `delayed_ack`.
    linux_ato: Option<LinuxAto>,
    delivered_bytes: u64,
    acks_sent: u64,
    /// Linux receive-buffer autotuning, when the profile has it.
    autotune: Option<RcvBuf>,
    /// With autotuning, the application's reads: what it has read up to,
    /// and when it next reads (`receiver_read_delay` after data became
    /// readable). Without, it reads everything at once.
    copied_seq: u64,
    read_at: Option<Instant>,
    /// When the data waiting for the pending read became readable.
    read_first: Option<Instant>,
    read_delay: Duration,
    /// `TcpConfig::app_preamble_bytes`: read by the application's set-up
    /// (iperf3 `iperf_tcp_accept` reads the cookie), not counted as data.
    preamble_bytes: u64,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> TcpReceiver {
        // A locked SO_RCVBUF takes the same window code, without growth.
        let autotune =
            (cfg.rcvbuf_autotune || cfg.rcvbuf_lock_bytes.is_some()).then(|| RcvBuf::new(cfg));
        let (rwnd_bytes, wscale) = if let Some(a) = &autotune {
            (a.syn_window(), a.wscale())
        } else if cfg.window_scaling {
            let rwnd = cfg.receive_window_bytes.min(65535u64 << MAX_WSCALE);
            let mut s = 0;
            while rwnd > 65535u64 << s {
                s += 1;
            }
            (rwnd, s)
        } else {
            (cfg.receive_window_bytes.min(65535), 0)
        };
        let timestamps = cfg.header_bytes >= 52;
        TcpReceiver {
            mss: cfg.mss.max(1),
            rwnd_bytes,
            wscale,
            timestamps,
            sack: cfg.sack,
            max_sack_blocks: if timestamps { 3 } else { 4 },
            delayed_ack: cfg.delayed_ack,
            icsk_rto: cfg.initial_rto,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
            synack_at: None,
            lrcvtime: None,
            cleanup_due: false,
            ack_every: cfg.ack_every_segments.max(1),
            quickack_left: cfg.quickack_segments,
            linux_quickack: cfg.quickack_segments > 0,
            quickack_on_ooo: cfg.quickack_on_out_of_order,
            syn_seen: false,
            rcv_nxt: 1,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            sack_recent: Vec::new(),
            dsack: None,
            ts_recent: 0,
            last_ack_sent: 1,
            right_edge: 1,
            unacked_full_segments: 0,
            delack_at: None,
            linux_ato: cfg
                .timer_hz
                .filter(|_| cfg.quickack_segments > 0)
                .map(|hz| LinuxAto::new(hz, cfg.timer_wheel_levels)),
            delivered_bytes: 0,
            acks_sent: 0,
            autotune,
            copied_seq: 1,
            read_at: None,
            read_first: None,
            read_delay: cfg.receiver_read_delay,
            preamble_bytes: cfg.app_preamble_bytes as u64,
        }
    }

    /// In-order payload bytes given to the application, its preamble
    /// (iperf3's cookie) not counted, as iperf3 does not count it.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes.saturating_sub(self.preamble_bytes)
    }

    /// Pure ACKs (and SYN-ACKs) sent.
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// Window-scale shift this receiver uses (0 without scaling).
    pub fn window_scale(&self) -> u32 {
        self.wscale
    }

    /// The next instant this receiver must run. A pending read that would
    /// send nothing (no window update) is not one: it only changes the
    /// receiver's own state, so it is done, as of its time, when the
    /// receiver is next entered (`catch_up_read`), and
    /// costs no event (issue 12: one per segment below 1 Gbit/s).
    pub fn next_timer(&self) -> Option<Instant> {
        // A read no earlier than the delayed ACK cannot be the minimum,
        // whether or not it sends an ACK: `read_sends_ack` (the costly
        // part, issue 12) is asked only when the answer matters.
        match (self.delack_at, self.read_at) {
            (Some(a), Some(b)) if b < a && self.read_sends_ack() => Some(b),
            (Some(a), _) => Some(a),
            (None, Some(b)) if self.read_sends_ack() => Some(b),
            _ => None,
        }
    }

    /// Whether the pending read ends in a window update.
    fn read_sends_ack(&self) -> bool {
        // As in `read`: a pending once-per-two-segments ACK, which reading
        // does not change, or a read that opens the window.
        let pending = self.two_segment_ack_pending();
        self.autotune.as_ref().is_some_and(|a| {
            pending
                || a.read_would_open_window(
                    self.copied_seq,
                    self.rcv_nxt,
                    self.mss as u64,
                    self.ooo_span(),
                    self.ooo_bytes,
                )
        })
    }

    /// `__tcp_cleanup_rbuf`'s first reason to ACK at a read (net/ipv4/tcp.c):
    /// an ACK is pending and "Once-per-two-segments ACK was not sent by
    /// tcp_input.c" (more than one MSS received since the last ACK).
    fn two_segment_ack_pending(&self) -> bool {
        self.delack_at.is_some() && self.rcv_nxt - self.last_ack_sent > self.mss as u64
    }

    /// Does a read due by `now` that had no event (it sends nothing, see
    /// [`TcpReceiver::next_timer`]), as of its own time. A read due at
    /// `now` itself comes first too: it is a timer, and at one nanosecond
    /// the engine runs timers before packet arrivals ([`crate::engine`]),
    /// so this is the order it would have had with an event.
    fn catch_up_read(&mut self, now: Instant, io: &mut dyn TcpIo) {
        if let Some(t) = self.read_at.filter(|&t| t <= now) {
            self.read(t, io);
        }
    }

    pub fn on_timer(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.catch_up_read(now, io);
        if self.delack_at.is_some_and(|t| t <= now) {
            self.send_ack(now, io);
        }
    }

    /// Payload bytes held in the receive buffer: unread in-order data and
    /// out-of-order data.
    fn queued(&self) -> u64 {
        (self.rcv_nxt - self.copied_seq) + self.ooo_bytes
    }

    /// In-order data is readable: schedule the application's read.
    fn readable(&mut self, now: Instant) {
        if self.autotune.is_none() {
            self.copied_seq = self.rcv_nxt;
            return;
        }
        if self.read_delay.as_ns() == 0 {
            // Linux < 4.14's prequeue: see `cleanup_after_copy`.
            self.consume();
            self.cleanup_due = true;
            return;
        }
        // The application runs once the receive path has been idle for
        // `read_delay` (while segments keep arriving the CPU is in the
        // receive softirq): Linux 6.18 traced through the emulator
        // (tcp:tcp_rcv_space_adjust, one call per segment read) reads a
        // whole flight in one loop after its last segment arrived. Bounded
        // so that a steady stream is still read.
        let first = *self.read_first.get_or_insert(now);
        let cap = first.saturating_add(Duration::from_ns(READ_WAIT_MAX_NS));
        self.read_at = Some(now.saturating_add(self.read_delay).min(cap));
    }

    /// The application reads everything queued, one segment at a time
    /// (`tcp_recvmsg_locked` → `tcp_rcv_space_adjust` per skb), then
    /// `tcp_cleanup_rbuf` may send a window update.
    fn read(&mut self, now: Instant, io: &mut dyn TcpIo) {
        self.read_at = None;
        self.read_first = None;
        // Reading does not change it (it depends on what arrived and was ACKed).
        let pending = self.two_segment_ack_pending();
        if self.autotune.is_none() {
            return;
        }
        self.consume();
        self.cleanup_rbuf(pending, now, io);
    }

    /// The application's copy of every in-order byte queued, one segment
    /// at a time (`tcp_rcv_space_adjust` per skb).
    fn consume(&mut self) {
        let (nxt, span, mss) = (self.rcv_nxt, self.ooo_span(), self.mss as u64);
        let Some(a) = &mut self.autotune else {
            self.copied_seq = nxt;
            return;
        };
        while self.copied_seq < nxt {
            self.copied_seq = (self.copied_seq + mss).min(nxt);
            a.on_read(self.copied_seq, nxt, span);
        }
    }

    /// `__tcp_cleanup_rbuf` (net/ipv4/tcp.c) after a read: ACK if the
    /// once-per-two-segments ACK is `pending`, or the read opens the window.
    fn cleanup_rbuf(&mut self, pending: bool, now: Instant, io: &mut dyn TcpIo) {
        let opens = self
            .autotune
            .as_ref()
            .is_some_and(|a| a.read_opens_window(self.rcv_nxt, self.ooo_bytes));
        if pending || opens {
            self.send_ack(now, io);
        }
    }

    /// With `receiver_read_delay` zero (`linux-3.x`): Linux before 4.14
    /// (prequeue removed by "tcp: remove prequeue support", E. Dumazet,
    /// 2017) hands a segment to a reader blocked in `tcp_recvmsg` through
    /// `tcp_prequeue` (net/ipv4/tcp_ipv4.c) and the socket backlog, and
    /// `tcp_rcv_established`'s fast path copies it straight to the user
    /// (`tcp_copy_to_iovec`, the `ucopy` path) *before* `__tcp_ack_snd_check`,
    /// so unread data never shrinks the window and the every-second-segment
    /// ACK is sent; the reader's `tcp_cleanup_rbuf` runs after that check.
    /// The USC-NSL lab client (Linux 3.x, a blocking reader) acknowledges
    /// every second segment (2,328 of 2,890 ACKs without SACK in
    /// police1.5M-bc100k cover two segments, 2 % more than two), where a
    /// reader woken after the burst (today's Linux, `receiver_read_delay`
    /// 50 µs) answers a flight with stretch ACKs.
    fn cleanup_after_copy(&mut self, now: Instant, io: &mut dyn TcpIo) {
        if std::mem::take(&mut self.cleanup_due) {
            let pending = self.two_segment_ack_pending();
            self.cleanup_rbuf(pending, now, io);
        }
    }

    pub fn on_segment(&mut self, now: Instant, h: &TcpHeader, io: &mut dyn TcpIo) {
        self.on_segment_acked(now, h, io);
        self.cleanup_after_copy(now, io);
    }

    /// A segment, up to and including its ACK decision
    /// (`tcp_rcv_established` / `tcp_data_queue`, `__tcp_ack_snd_check`).
    fn on_segment_acked(&mut self, now: Instant, h: &TcpHeader, io: &mut dyn TcpIo) {
        self.catch_up_read(now, io);
        if h.flags & SYN != 0 {
            self.on_syn(now, h, io);
            return;
        }
        if !self.syn_seen {
            return; // noise before the SYN
        }
        self.handshake_rtt_sample(now);
        if let Some(a) = &mut self.autotune {
            // The handshake's ACK (or the first data): established.
            a.establish(now, self.rcv_nxt);
            if h.payload_len > 0 {
                a.on_data(now, h.payload_len as u64, h.ts_ecr);
            }
        }
        if h.payload_len == 0 {
            return; // the handshake's ACK
        }
        // RFC 7323 §4.3 (2): TS.Recent from segments at or left of the
        // last ACK sent.
        if self.timestamps
            && h.ts_val != 0
            && h.ts_val >= self.ts_recent
            && h.seq <= self.last_ack_sent
        {
            self.ts_recent = h.ts_val;
        }
        let start = h.seq;
        let end = h.seq + h.payload_len as u64;
        if end <= self.rcv_nxt {
            // Duplicate: ACK at once, D-SACK it (RFC 2883 §4); Linux also
            // enters quick-ack mode (`tcp_data_queue`, `out_of_window`).
            if self.sack {
                self.dsack = Some((start, end));
            }
            if self.linux_quickack {
                self.enter_quickack();
            }
            self.send_quick_ack(now, io);
            return;
        }
        if start > self.rcv_nxt {
            self.on_out_of_order(start, end);
            let (queued, span) = (self.queued(), self.ooo_span());
            if let Some(a) = &mut self.autotune {
                a.on_out_of_order(h.payload_len as u64, queued, span);
            }
            if self.quickack_on_ooo {
                self.enter_quickack();
            }
            self.send_quick_ack(now, io);
            return;
        }
        // In order (possibly overlapping what we have).
        let had_gap = !self.ooo.is_empty();
        if let Some(a) = &mut self.linux_ato {
            a.on_data(now); // tcp_data_queue → tcp_event_data_recv
        }
        let preamble_end = 1 + self.preamble_bytes;
        let preamble_done = self.preamble_bytes > 0 && self.rcv_nxt < preamble_end;
        self.advance(end);
        self.quickack_after_idle(now);
        let preamble_done = preamble_done && self.rcv_nxt >= preamble_end;
        let (nxt, queued) = (self.rcv_nxt, self.queued());
        if let Some(a) = &mut self.autotune {
            if a.on_in_order(now, h.payload_len as u64, nxt, queued) {
                // tcp_grow_window: icsk_ack.quick |= 1.
                self.quickack_left = self.quickack_left.max(1);
            }
        }
        self.readable(now);
        if preamble_done {
            // iperf3's server has read the cookie and sends TEST_RUNNING on
            // the control connection now (`iperf_run_server`); that small
            // segment, taking this path back, is stood for by an ACK at
            // once, and the client's data waits for it.
            self.send_quick_ack(now, io);
            return;
        }
        if had_gap {
            self.send_quick_ack(now, io); // fills (part of) a gap: RFC 5681 §4.2
            return;
        }
        if self.quickack_left > 0 {
            self.quickack_left -= 1;
            self.send_ack(now, io);
            return;
        }
        let Some(delay) = self.delayed_ack else {
            self.send_ack(now, io);
            return;
        };
        if h.payload_len >= self.mss {
            self.unacked_full_segments += 1;
        }
        if self.unacked_full_segments >= self.ack_every && self.window_keeps_up() {
            self.send_ack(now, io);
        } else if self.delack_at.is_none() {
            self.delack_at = Some(match &self.linux_ato {
                Some(a) => a.timer_at(now),
                None => now.saturating_add(delay),
            });
        }
    }

    /// The passive opener's RTT sample from its SYN-ACK to the first
    /// segment after it (`tcp_synack_rtt_meas`, Linux ≥ 3.1, "RFC2988bis +
    /// taking RTT sample from 3WHS for the passive open side"), turned into
    /// `icsk_rto` as `tcp_rtt_estimator`'s first sample does: SRTT = m,
    /// RTTVAR = max(m/2, `TCP_RTO_MIN`), RTO = SRTT + RTTVAR
    /// (`__tcp_set_rto`), at most `TCP_RTO_MAX`. The only sample a pure
    /// receiver takes; later ones (an application's requests) are left out.
    fn handshake_rtt_sample(&mut self, now: Instant) {
        if let Some(sent) = self.synack_at.take() {
            let m = now.saturating_since(sent);
            if let Some(a) = &mut self.linux_ato {
                a.on_handshake_rtt(m);
            }
            let var = Duration::from_ns(m.as_ns() / 2).max(self.min_rto);
            self.icsk_rto = (m + var).min(self.max_rto);
        }
    }

    /// Linux `tcp_event_data_recv` (net/ipv4/tcp_input.c, 3.x and 6.x
    /// alike): in-order data arriving more than `icsk_rto` after the last
    /// ("Too long gap. Apparently sender failed to restart window, so that
    /// we send ACKs quickly.") re-enters quick-ack mode (`tcp_incr_quickack`),
    /// so the first min(rcv_wnd / (2·MSS), 16) segments after an idle period
    /// (a fetch's next response, data after an RTO stall) are acknowledged
    /// one by one. Seen in the USC-NSL lab captures: the client ACKs the
    /// first 15-16 segments of every 2 MB response one by one, then every
    /// second one. Linux profiles only (those with quick-acks).
    fn quickack_after_idle(&mut self, now: Instant) {
        if !self.linux_quickack {
            return;
        }
        if let Some(last) = self.lrcvtime {
            if now.saturating_since(last) > self.icsk_rto {
                self.enter_quickack();
            }
        }
        self.lrcvtime = Some(now);
    }

    fn on_syn(&mut self, now: Instant, h: &TcpHeader, io: &mut dyn TcpIo) {
        // Karn: a SYN-ACK sent again gives no handshake sample
        // (`tcp_synack_rtt_meas` takes none when `req->num_retrans`).
        self.synack_at = (!self.syn_seen).then_some(now);
        self.syn_seen = true;
        if self.timestamps && h.ts_val != 0 {
            self.ts_recent = self.ts_recent.max(h.ts_val);
        }
        let window = self.rwnd_bytes.min(65535);
        self.right_edge = self.right_edge.max(self.rcv_nxt + window);
        self.acks_sent += 1;
        io.transmit(TcpHeader {
            seq: 0,
            ack: self.rcv_nxt,
            flags: SYN | ACK,
            window,
            ts_val: self.ts_val(now),
            ts_ecr: self.ts_recent,
            ..TcpHeader::default()
        });
    }

    /// With Linux's receive buffer (autotuned or locked): the every-second-
    /// segment ACK waits for the read when unread data would shrink the
    /// window (`__tcp_ack_snd_check`, net/ipv4/tcp_input.c); the read's
    /// `tcp_cleanup_rbuf` then acknowledges the lot with the window open.
    fn window_keeps_up(&self) -> bool {
        let queued = self.queued();
        self.autotune
            .as_ref()
            .is_none_or(|a| a.window_keeps_up(queued))
    }

    /// Linux `tcp_enter_quickack_mode` → `tcp_incr_quickack`
    /// (net/ipv4/tcp_input.c): the next min(rcv_wnd / (2·MSS), 16)
    /// segments are acknowledged at once (at least 2; `TCP_MAX_QUICKACKS`
    /// = 16), rcv_wnd being the window last advertised. Raises the count,
    /// never lowers it.
    fn enter_quickack(&mut self) {
        const TCP_MAX_QUICKACKS: u64 = 16;
        let rcv_wnd = self.right_edge.saturating_sub(self.last_ack_sent);
        let quick = (rcv_wnd / (2 * self.mss as u64)).clamp(2, TCP_MAX_QUICKACKS);
        self.quickack_left = self.quickack_left.max(quick as u32);
    }

    /// An immediate ACK that uses up one quick-ack, as every ACK Linux
    /// sends does (`tcp_event_ack_sent` → `tcp_dec_quickack_mode`).
    fn send_quick_ack(&mut self, now: Instant, io: &mut dyn TcpIo) {
        if self.linux_quickack {
            self.quickack_left = self.quickack_left.saturating_sub(1);
        }
        self.send_ack(now, io);
    }

    /// Move rcv_nxt to `end`, then pull in out-of-order data now in order.
    fn advance(&mut self, end: u64) {
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        while let Some((&s, &e)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.remove(&s);
            self.ooo_bytes -= e - s;
            self.rcv_nxt = self.rcv_nxt.max(e);
        }
        self.delivered_bytes += self.rcv_nxt - before;
        let nxt = self.rcv_nxt;
        self.sack_recent.retain(|&(_, e)| e > nxt);
    }

    /// Store [start, end) above rcv_nxt, merging with its neighbours; the
    /// merged block becomes the first SACK block.
    fn on_out_of_order(&mut self, start: u64, end: u64) {
        let (mut s, mut e) = (start, end);
        // Blocks touching or overlapping [start, end), taken from the one
        // that starts at or before `end`, walking down. A block holding all
        // of [start, end) is the only one touching it (blocks are disjoint
        // and non-adjacent).
        while let Some((&bs, &be)) = self.ooo.range(..=end).next_back() {
            if be < start {
                break;
            }
            if bs <= start && end <= be && self.sack {
                self.dsack = Some((start, end)); // already held
            }
            self.ooo.remove(&bs);
            self.ooo_bytes -= be - bs;
            s = s.min(bs);
            e = e.max(be);
        }
        self.ooo.insert(s, e);
        self.ooo_bytes += e - s;
        self.sack_recent.retain(|&(bs, be)| be < s || bs > e);
        self.sack_recent.insert(0, (s, e));
        self.sack_recent.truncate(SACK_MEMORY);
    }

    /// Bytes from rcv_nxt to the end of the highest out-of-order block.
    fn ooo_span(&self) -> u64 {
        self.ooo
            .last_key_value()
            .map_or(0, |(_, &e)| e.saturating_sub(self.rcv_nxt))
    }

    fn window(&mut self) -> u64 {
        let queued = self.queued();
        if let Some(a) = &mut self.autotune {
            let w = a.select_window(self.rcv_nxt, queued);
            self.right_edge = self.right_edge.max(self.rcv_nxt + w);
            return w;
        }
        let free = self.rwnd_bytes.saturating_sub(self.ooo_bytes);
        let free = (free >> self.wscale) << self.wscale;
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
        self.right_edge - self.rcv_nxt
    }

    fn ts_val(&self, now: Instant) -> u64 {
        if self.timestamps {
            now.as_ns().max(1)
        } else {
            0
        }
    }

    fn send_ack(&mut self, now: Instant, io: &mut dyn TcpIo) {
        let mut sack = super::SackBlocks::default();
        if self.sack {
            let blocks = self
                .dsack
                .take()
                .into_iter()
                .chain(self.sack_recent.iter().copied());
            for b in blocks.take(self.max_sack_blocks) {
                sack.blocks[sack.len as usize] = b;
                sack.len += 1;
            }
        }
        let window = self.window();
        self.acks_sent += 1;
        io.transmit(TcpHeader {
            seq: 1,
            ack: self.rcv_nxt,
            payload_len: 0,
            flags: ACK,
            window,
            sack,
            ts_val: self.ts_val(now),
            ts_ecr: if self.timestamps { self.ts_recent } else { 0 },
            retransmit: false,
        });
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_full_segments = 0;
        self.delack_at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Out(Vec<TcpHeader>);
    impl TcpIo for Out {
        fn transmit(&mut self, h: TcpHeader) {
            self.0.push(h);
        }
    }

    fn cfg() -> TcpConfig {
        let mut c = TcpConfig::profile("linux").unwrap();
        c.rcvbuf_autotune = false; // a fixed 6 MiB buffer (tests below)
        c.mss = 1000;
        c.quickack_segments = 0;
        c
    }

    fn data(seq: u64, len: u32) -> TcpHeader {
        TcpHeader {
            seq,
            ack: 1,
            payload_len: len,
            flags: ACK,
            window: 65535,
            ts_val: 1000 + seq,
            ..TcpHeader::default()
        }
    }

    fn ms(v: u64) -> Instant {
        Instant::from_ns(v * 1_000_000)
    }

    fn syn(r: &mut TcpReceiver, out: &mut Out) {
        let s = TcpHeader {
            flags: SYN,
            ts_val: 7,
            ..TcpHeader::default()
        };
        r.on_segment(Instant::ZERO, &s, out);
    }

    /// The SYN, then the handshake's ACK 100 ms later (its RTT sample).
    fn handshake_100ms(r: &mut TcpReceiver, out: &mut Out) {
        syn(r, out);
        let ack = TcpHeader {
            ack: 1,
            flags: ACK,
            ..TcpHeader::default()
        };
        r.on_segment(ms(100), &ack, out);
    }

    #[test]
    fn syn_ack_window_is_unscaled_and_capped() {
        let mut r = TcpReceiver::new(&cfg());
        let mut out = Out::default();
        syn(&mut r, &mut out);
        let sa = out.0[0];
        assert_eq!(
            (sa.flags, sa.ack, sa.window, sa.ts_ecr),
            (SYN | ACK, 1, 65535, 7)
        );
        assert_eq!(r.window_scale(), 7, "6 MiB needs 2^7");
        // Later ACKs advertise the full (scaled) 6 MiB.
        r.on_segment(ms(1), &data(1, 1000), &mut out);
        r.on_segment(ms(2), &data(1001, 1000), &mut out);
        assert_eq!(out.0.last().unwrap().window, 6 * 1024 * 1024);
    }

    #[test]
    fn every_second_full_segment_and_timer() {
        let mut r = TcpReceiver::new(&cfg());
        let mut out = Out::default();
        syn(&mut r, &mut out);
        r.on_segment(ms(10), &data(1, 1000), &mut out);
        assert_eq!(out.0.len(), 1, "first segment delayed");
        assert_eq!(r.next_timer(), Some(ms(50)), "40 ms delayed-ACK timer");
        r.on_segment(ms(11), &data(1001, 1000), &mut out);
        assert_eq!(out.0.len(), 2, "second full segment ACKed at once");
        assert_eq!(out.0[1].ack, 2001);
        assert_eq!(out.0[1].ts_ecr, 1001, "echoes the earliest unacked segment");
        assert_eq!(r.next_timer(), None);
        // A lone small segment waits for the timer.
        r.on_segment(ms(20), &data(2001, 500), &mut out);
        r.on_timer(ms(59), &mut out);
        assert_eq!(out.0.len(), 2);
        r.on_timer(ms(60), &mut out);
        assert_eq!(out.0.len(), 3);
        assert_eq!(out.0[2].ack, 2501);
        assert_eq!(r.delivered_bytes(), 2500);
    }

    /// Linux's `ato` (tcp/delack.rs) on the receiver: after a 50 ms
    /// handshake and a segment 36 ms after the previous one, `ato` is 14
    /// jiffies, cut to the RTT's 13, and the timer runs at the tick after:
    /// 56 ms after the lone segment, not the fixed 40 ms.
    #[test]
    fn linux_delayed_ack_follows_ato_and_the_handshake_rtt() {
        let mut c = cfg();
        c.quickack_segments = 1;
        c.timer_hz = Some(250);
        let mut r = TcpReceiver::new(&c);
        let mut out = Out::default();
        syn(&mut r, &mut out);
        let hs = TcpHeader {
            flags: ACK,
            ack: 1,
            ..TcpHeader::default()
        };
        r.on_segment(ms(50), &hs, &mut out);
        r.on_segment(ms(100), &data(1, 1000), &mut out);
        assert_eq!(out.0.len(), 2, "quick ACK");
        r.on_segment(ms(136), &data(1001, 1000), &mut out);
        assert_eq!(out.0.len(), 2, "delayed");
        assert_eq!(r.next_timer(), Some(ms(192)));
        // The fixed timer of the other profiles.
        c.timer_hz = None;
        let mut r = TcpReceiver::new(&c);
        syn(&mut r, &mut out);
        r.on_segment(ms(50), &hs, &mut out);
        r.on_segment(ms(100), &data(1, 1000), &mut out);
        r.on_segment(ms(136), &data(1001, 1000), &mut out);
        assert_eq!(r.next_timer(), Some(ms(176)));
    }

    /// `tcp_event_data_recv`: in-order data more than `icsk_rto` (here
    /// 100 ms + max(50 ms, 200 ms) from the handshake) after the last
    /// re-enters quick-ack mode; a shorter pause does not.
    #[test]
    fn data_after_an_idle_rto_is_quick_acked() {
        let acks_after_pause = |pause_ms: u64| {
            let mut c = cfg();
            c.quickack_segments = 16;
            let mut r = TcpReceiver::new(&c);
            let mut out = Out::default();
            handshake_100ms(&mut r, &mut out);
            let mut seq = 1;
            for i in 0..40 {
                r.on_segment(ms(101) + Duration::from_us(i), &data(seq, 1000), &mut out);
                seq += 1000;
            }
            let before = out.0.len();
            let t = 101 + pause_ms;
            for i in 0..4 {
                r.on_segment(ms(t) + Duration::from_us(i), &data(seq, 1000), &mut out);
                seq += 1000;
            }
            out.0.len() - before
        };
        assert_eq!(
            acks_after_pause(301),
            4,
            "idle > RTO (300 ms): one ACK each"
        );
        assert_eq!(acks_after_pause(299), 2, "idle < RTO: every second segment");
    }

    /// The ACK advances (in segments) a receiver of `profile` sends for a
    /// flight of 100 back-to-back 1448 B segments (1.2 µs apart, a 1 Gbit/s
    /// burst) once its window has stopped growing.
    fn ack_advances_in_a_burst(profile: &str) -> Vec<u64> {
        let c = TcpConfig::profile(profile).unwrap();
        let mut r = TcpReceiver::new(&c);
        let mut out = Out::default();
        handshake_100ms(&mut r, &mut out);
        // Flights of 100 segments every 100 ms let the window grow to its
        // clamp (while it grows, every segment is ACKed: tcp_grow_window);
        // the last flight is the one measured.
        let mut seq = 1;
        let mut first_ack = 0;
        for flight in 0..20u64 {
            first_ack = out.0.len();
            for i in 0..100u64 {
                let t = ms(101 + 100 * flight) + Duration::from_ns(1_200 * i);
                while let Some(tt) = r.next_timer().filter(|&tt| tt < t) {
                    r.on_timer(tt, &mut out);
                }
                r.on_segment(t, &data(seq, 1448), &mut out);
                seq += 1448;
            }
        }
        while let Some(t) = r.next_timer().filter(|&t| t < ms(2200)) {
            r.on_timer(t, &mut out);
        }
        let acks: Vec<u64> = out.0[first_ack - 1..].iter().map(|h| h.ack).collect();
        let mut adv: Vec<u64> = acks.windows(2).map(|w| (w[1] - w[0]) / 1448).collect();
        adv.retain(|&n| n > 0);
        adv
    }

    /// Linux < 4.14's prequeue (`linux-3.x`, `receiver_read_delay` 0): the
    /// data is copied before `__tcp_ack_snd_check`, so a burst is
    /// acknowledged every second segment, as the USC-NSL lab client did;
    /// today's reader, woken after the burst, leaves stretch ACKs.
    #[test]
    fn prequeue_acknowledges_a_burst_every_second_segment() {
        let old = ack_advances_in_a_burst("linux-3.x");
        assert!(!old.is_empty() && old.iter().all(|&n| n == 2), "{old:?}");
        let new = ack_advances_in_a_burst("linux");
        assert!(new.iter().any(|&n| n > 2), "{new:?}");
    }

    #[test]
    fn quickack_then_delayed() {
        let mut c = cfg();
        c.quickack_segments = 3;
        let mut r = TcpReceiver::new(&c);
        let mut out = Out::default();
        syn(&mut r, &mut out);
        for i in 0..5u64 {
            r.on_segment(ms(i), &data(1 + 1000 * i, 1000), &mut out);
        }
        // 3 quick ACKs, then segment 4 delayed, segment 5 ACKed (2nd).
        let acks: Vec<u64> = out.0[1..].iter().map(|h| h.ack).collect();
        assert_eq!(acks, vec![1001, 2001, 3001, 5001]);
    }

    #[test]
    fn out_of_order_sack_blocks_most_recent_first_and_gap_fill() {
        let mut r = TcpReceiver::new(&cfg());
        let mut out = Out::default();
        syn(&mut r, &mut out);
        r.on_segment(ms(1), &data(1001, 1000), &mut out); // hole at 1
        r.on_segment(ms(2), &data(4001, 1000), &mut out); // hole at 3001
        r.on_segment(ms(3), &data(2001, 1000), &mut out); // extends first
        let last = out.0.last().unwrap();
        assert_eq!(last.ack, 1);
        assert_eq!(last.sack.as_slice(), &[(1001, 3001), (4001, 5001)]);
        assert_eq!(out.0.len(), 4, "every out-of-order segment ACKed at once");
        let edges: Vec<u64> = out.0[1..].iter().map(|a| a.ack + a.window).collect();
        assert!(
            edges.windows(2).all(|w| w[1] >= w[0]),
            "right edge never shrinks: {edges:?}"
        );
        assert_eq!(
            last.ts_ecr, 7,
            "out-of-order data leaves TS.Recent (the SYN's)"
        );
        // Filling the first hole: immediate ACK, one block left.
        r.on_segment(ms(4), &data(1, 1000), &mut out);
        let last = out.0.last().unwrap();
        assert_eq!(
            (last.ack, last.sack.as_slice()),
            (3001, &[(4001, 5001)][..])
        );
        // Duplicate: D-SACK first.
        r.on_segment(ms(5), &data(1, 1000), &mut out);
        let last = out.0.last().unwrap();
        assert_eq!(last.sack.as_slice(), &[(1, 1001), (4001, 5001)]);
        assert_eq!(r.delivered_bytes(), 3000);
    }

    /// The ACK numbers sent after `from`, for in-order segments 3001.. of
    /// 1000 B that follow a hole at 1001 filled after an out-of-order
    /// segment (2001) or, with `dup`, a duplicate of the first segment.
    fn acks_after_disorder(ooo_quickack: bool, dup: bool) -> Vec<u64> {
        let mut c = cfg();
        c.quickack_segments = 1; // Linux quick-acks (used up by segment 1)
        c.receive_window_bytes = 10_000; // rcv_wnd / (2·MSS) = 5 quick-acks
        c.quickack_on_out_of_order = ooo_quickack;
        let mut r = TcpReceiver::new(&c);
        let mut out = Out::default();
        syn(&mut r, &mut out);
        r.on_segment(ms(1), &data(1, 1000), &mut out);
        if dup {
            r.on_segment(ms(2), &data(1, 1000), &mut out);
            r.on_segment(ms(3), &data(1001, 1000), &mut out);
            r.on_segment(ms(4), &data(2001, 1000), &mut out);
        } else {
            r.on_segment(ms(2), &data(2001, 1000), &mut out); // out of order
            r.on_segment(ms(3), &data(1001, 1000), &mut out); // fills the hole
        }
        let from = out.0.len();
        for i in 0..5u64 {
            r.on_segment(ms(10 + i), &data(3001 + 1000 * i, 1000), &mut out);
        }
        out.0[from..].iter().map(|h| h.ack).collect()
    }

    #[test]
    fn out_of_order_segment_enters_quickack_mode_before_linux_4_18() {
        // Linux < 4.18 tcp_data_queue: tcp_enter_quickack_mode for an
        // out-of-order segment → quick = min(rcv_wnd / (2·MSS), 16) = 5;
        // the ACK of the out-of-order segment and the one of the hole
        // filling use two (tcp_dec_quickack_mode), so three in-order
        // segments are ACKed one by one before every second one again.
        assert_eq!(
            acks_after_disorder(true, false),
            vec![4001, 5001, 6001, 8001]
        );
        // Linux ≥ 4.18: out-of-order data is ACKed at once but leaves the
        // delayed-ACK rule alone (every second full segment).
        assert_eq!(acks_after_disorder(false, false), vec![5001, 7001]);
    }

    #[test]
    fn duplicate_segment_enters_quickack_mode_in_every_linux() {
        // tcp_data_queue's out_of_window path (a retransmission of data
        // already received): 5 quick-acks, one used by the duplicate's own
        // ACK, then segments 1001 and 2001 use two more.
        assert_eq!(acks_after_disorder(false, true), vec![4001, 5001, 7001]);
    }

    #[test]
    fn a_full_locked_buffer_is_acknowledged_once_by_the_read() {
        // iperf3 -w 32768 on Linux 6.18: a 39096 B window (27 segments)
        // arriving back to back, read 50 µs after the last one. While the
        // data is unread the window would shrink, so __tcp_ack_snd_check
        // sends no every-second-segment ACK; the read's tcp_cleanup_rbuf
        // acknowledges all of it with the window open again, so the sender
        // gets its whole window at once (one train per round trip).
        let mut c = TcpConfig::profile("linux").unwrap();
        c.rcvbuf_autotune = false;
        c.rcvbuf_lock_bytes = Some(32_768);
        c.quickack_segments = 0;
        let mut r = TcpReceiver::new(&c);
        let mut out = Out::default();
        syn(&mut r, &mut out);
        // Past the window's growth from the SYN-ACK's 31856 B: one flight
        // read as it comes.
        let us = |v: u64| Instant::from_ns(v * 1000);
        let mut seq = 1u64;
        let mut t = 1_000u64;
        for _ in 0..2 {
            for _ in 0..27 {
                r.on_segment(us(t), &data(seq, 1448), &mut out);
                seq += 1448;
                t += 1;
            }
            t += 60;
            r.on_timer(us(t), &mut out);
            t += 50_000;
        }
        let from = out.0.len();
        for _ in 0..27 {
            r.on_segment(us(t), &data(seq, 1448), &mut out);
            seq += 1448;
            t += 1;
        }
        let during = out.0.len() - from;
        r.on_timer(us(t + 60), &mut out);
        let last = out.0.last().unwrap();
        assert!(during <= 2, "{during} ACKs while the data was unread");
        assert_eq!(last.ack, seq, "the read acknowledges everything");
        // The whole window again: 26 segments here (rcv_ssthresh stops a
        // little short of the 40448 B clamp, as tcp_grow_window's room
        // shrinks with the unread data), at most 27 = 39096 B.
        assert!(
            (37_648..=39_096).contains(&last.window),
            "and opens the window: {}",
            last.window
        );
        // A short flight (10 segments): the read does not double the
        // window, but an ACK is pending for more than one MSS, so
        // tcp_cleanup_rbuf sends it at the read, not the 40 ms timer.
        t += 50_000;
        for _ in 0..10 {
            r.on_segment(us(t), &data(seq, 1448), &mut out);
            seq += 1448;
            t += 1;
        }
        let from = out.0.len();
        r.on_timer(us(t + 60), &mut out);
        assert_eq!(out.0.len(), from + 1, "ACKed by the read");
        assert_eq!(out.0.last().unwrap().ack, seq);
    }

    #[test]
    fn window_without_scaling_counts_out_of_order_bytes() {
        let mut c = cfg();
        c.window_scaling = false;
        c.receive_window_bytes = 64512;
        c.delayed_ack = None;
        let mut r = TcpReceiver::new(&c);
        let mut out = Out::default();
        syn(&mut r, &mut out);
        assert_eq!(out.0[0].window, 64512);
        r.on_segment(ms(1), &data(1, 1000), &mut out);
        assert_eq!(out.0[1].window, 64512);
        // Out-of-order data: the free space shrinks but the right edge
        // (1001 + 64512) is held.
        r.on_segment(ms(2), &data(2001, 1000), &mut out);
        assert_eq!(out.0[2].window, 64512);
        r.on_segment(ms(3), &data(1001, 1000), &mut out);
        assert_eq!((out.0[3].ack, out.0[3].window), (3001, 64512));
    }
}
