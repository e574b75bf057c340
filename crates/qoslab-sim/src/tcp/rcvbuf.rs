//! Linux receive-buffer autotuning and window selection, as in Linux 6.18
//! (the kernel of the machine the ground truth was measured on), with the
//! application reading every in-order byte at once (iperf3's server).
//!
//! The receive buffer `sk_rcvbuf` counts memory, not payload: each queued
//! segment costs its `truesize`, and the window is derived from memory
//! through `scaling_ratio` = payload / truesize in 1/256 units
//! (`tcp_win_from_space`, `tcp_space_from_win`, include/net/tcp.h; the
//! ratio replaced `tcp_adv_win_scale` in 6.5). Starting from
//! `tcp_rmem[1]` it grows once per receiver RTT to twice what the
//! application consumed in the last one (Dynamic Right-Sizing), so a
//! sender in slow start is never given much more than it can use.
//!
//! Pieces, each after its kernel function:
//! - initial window and scale: `tcp_select_initial_window`
//!   (net/ipv4/tcp_output.c) from `tcp_full_space` of `tcp_rmem[1]` at
//!   the default ratio (50 %, `TCP_DEFAULT_SCALING_RATIO`), rounded down
//!   to the MSS (65160 B for 131072 B and MSS 1448, as Linux's SYN-ACK);
//!   the scale from `max(space, tcp_rmem[2], rmem_max)`;
//! - `tcp_init_buffer_space` (net/ipv4/tcp_input.c) at establishment:
//!   `window_clamp` = full space less one segment (64088 B, as `ss -ti`
//!   shows on the kernel), `rcv_ssthresh` ≤ clamp,
//!   `rcvq_space.space` = min(rcv_ssthresh, rcv_wnd, 10 · advmss);
//! - `tcp_measure_rcv_mss`: the first full-sized segment fixes the ratio
//!   to the one measured (`scaling_ratio` = len/truesize) and sets the
//!   clamp to the full space at that ratio (`tcp_set_window_clamp`);
//! - `tcp_grow_window`: each data segment of ≥ 128 B raises `rcv_ssthresh`
//!   by max(2 · advmss, 2 · len) up to min(clamp, free space), and asks
//!   for an immediate ACK (`icsk_ack.quick |= 1`);
//! - `tcp_rcv_rtt_measure_ts` / `tcp_rcv_rtt_measure` + `tcp_rcv_rtt_update`:
//!   the receiver's RTT from echoed timestamps (EWMA 1/8) or, without
//!   timestamps, once per window (minimum);
//! - the application (iperf3's server) reads everything queued
//!   `receiver_read_delay` after data becomes readable (its wake-up), one
//!   segment at a time;
//! - `tcp_rcv_space_adjust`, after each segment read: at most once per
//!   receiver RTT, when the bytes read since the last measure less those
//!   still queued exceed `rcvq_space.space`, call
//!   `tcp_rcvbuf_grow`: rcvwin = 2 · new + 4 · new · (new − old) / old +
//!   the out-of-order span, `sk_rcvbuf` = min(space_from_win(rcvwin),
//!   `tcp_rmem[2]`), clamp follows; `tcp_data_queue_ofo` calls it too
//!   (with the space unchanged). Once a measure counts more than the
//!   last, the buffer jumps (seen on the kernel: advertised 80896 B for
//!   0.6 s, then growing two segments per segment received up to 1.8 MB);
//! - `__tcp_select_window` / `tcp_select_window` (tcp_output.c): the
//!   window is min(free space, `rcv_ssthresh`), aligned up to the scale
//!   granularity; zero below 1/16 of the buffer or one MSS when less than
//!   half is free; never shrinking the right edge already offered.
//!
//! - a buffer the application set (`SO_RCVBUF`, `TcpConfig::rcvbuf_lock_bytes`):
//!   `sk_setsockopt` (net/core/sock.c) caps the value at `rmem_max`, doubles
//!   it and sets `SOCK_RCVBUF_LOCK`; `tcp_openreq_init_rwin`
//!   (net/ipv4/tcp_minisocks.c) then clamps the window to the buffer's full
//!   space, which also bounds the scale `tcp_select_initial_window` picks
//!   (0 for 32 KB, 1 for 64 KB), and `tcp_rcvbuf_grow` returns at once on
//!   the lock. So `-w 32768` advertises 31856 B in the SYN-ACK (50 %) and
//!   at most 39096 B once a segment has set the ratio (40448 B rounded down
//!   to the MSS, unscaled).
//!
//! Left out: memory pressure (`tcp_under_memory_pressure`), receive-queue
//! pruning/collapsing (`tcp_prune_queue`, `tcp_clamp_window`), SO_RCVLOWAT,
//! and the per-skb truesize varying with the driver: one measured ratio.

use crate::config::TcpConfig;
use qoslab_core::Instant;

/// `TCP_RMEM_TO_WIN_SCALE` (include/net/tcp.h).
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: 50 % until a segment has been measured.
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// `TCP_INIT_CWND`, used by `tcp_init_buffer_space`.
const INIT_CWND: u64 = 10;
/// `TCP_MIN_RCVMSS`: the initial receive-MSS guess (`tcp_initialize_rcv_mss`).
const MIN_RCVMSS: u64 = 536;
/// `TCP_MAX_WSCALE`.
const MAX_WSCALE: u32 = 14;
/// `tcp_default_init_rwnd` of Linux 3.x-4.19 (2 · `TCP_INIT_CWND`, for an
/// MSS up to 1460): the segments the SYN's window offers and
/// `tcp_fixup_rcvbuf` sizes the first buffer by.
const INIT_RWND_SEGS: u64 = 20;
/// `SKB_TRUESIZE(x)` overhead of Linux 3.x on x86_64: the sk_buff and
/// skb_shared_info structures, each aligned to the 64 B cache line
/// (256 + 320 B), plus `MAX_TCP_HEADER` = 128 + `MAX_HEADER` (176 B with
/// tunnels configured, as distribution kernels are). For a 1460 B MSS this
/// gives 2340 B per segment, hence a 374400 B buffer and a window clamp of
/// 185740 B from `tcp_fixup_rcvbuf`; the USC-NSL lab's client offered at
/// most 184832 B before its first autotuning step (shape10M-q100k, 1.29 s).
const SKB_OVERHEAD_3X: u64 = 256 + 320 + 128 + 176;
/// The TCP timestamp option, aligned (`TCPOLEN_TSTAMP_ALIGNED`).
const TSTAMP_ALIGNED: u64 = 12;
/// `net.core.rmem_max` default (`SK_RMEM_MAX`, 212992 B): enters the
/// scale choice only when above `tcp_rmem[2]`, which it never is here.
const RMEM_MAX: u64 = 212_992;
/// `SOCK_MIN_RCVBUF` (2048 + `sizeof(struct sk_buff)`, 232 B on x86-64).
const SOCK_MIN_RCVBUF: u64 = 2048 + 232;

/// The largest window Linux advertises for a locked `SO_RCVBUF` of
/// `so_rcvbuf` bytes once the ratio is measured: what a fixed-buffer
/// connection's window settles at (see this module), for the estimates and
/// captures that want one number.
pub fn locked_window_bytes(cfg: &TcpConfig, so_rcvbuf: u64) -> u64 {
    let rcvbuf = (2 * so_rcvbuf.min(RMEM_MAX)).max(SOCK_MIN_RCVBUF);
    let ratio = (cfg.rcv_scaling_ratio as u64).clamp(1, 255);
    (rcvbuf * ratio) >> RMEM_TO_WIN_SCALE
}

#[derive(Clone)]
pub struct RcvBuf {
    advmss: u64,
    rcv_mss: u64,
    /// Payload per truesize in 1/256: `tp->scaling_ratio`.
    ratio: u64,
    /// The ratio a full segment gives on the path (`rcv_scaling_ratio`).
    measured_ratio: u64,
    rcvbuf: u64,
    rcvbuf_max: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    rcv_wnd: u64,
    rcv_wup: u64,
    wscale: u32,
    space: u64,
    space_seq: u64,
    space_time: Instant,
    /// Receiver RTT × 8 in ns (`rcv_rtt_est.rtt_us`, scaled as Linux).
    rtt8_ns: u64,
    last_tsecr: u64,
    /// Without timestamps: the per-window measure (`rcv_rtt_est.seq/time`).
    rtt_seq: u64,
    rtt_time: Option<Instant>,
    timestamps: bool,
    established: bool,
    /// Linux 3.4-4.19's establishment-time buffer (`TcpConfig::rcvbuf_fixup`),
    /// with receive-buffer moderation on (`tcp_moderate_rcvbuf`).
    fixup: Option<bool>,
    /// `tp->tcp_mstamp`: when the last segment was processed. The DRS
    /// measure is timed with it, not with the read ("We do not refresh
    /// tp->tcp_mstamp here", tcp_rcv_space_adjust).
    mstamp: Instant,
    /// `SOCK_RCVBUF_LOCK`: the application set the buffer, no autotuning.
    locked: bool,
}

impl RcvBuf {
    pub fn new(cfg: &TcpConfig) -> RcvBuf {
        let timestamps = cfg.header_bytes >= 52;
        let mss = cfg.mss.max(1) as u64;
        // tp->advmss: `ss -ti` on the receiver shows advmss 1448 = the
        // MSS less the timestamp option, as the profile's `mss`.
        let advmss = mss;
        // sk_setsockopt(SO_RCVBUF): min(val, rmem_max) doubled, locked.
        let locked = cfg
            .rcvbuf_lock_bytes
            .map(|v| (2 * v.min(RMEM_MAX)).max(SOCK_MIN_RCVBUF));
        let rcvbuf = locked.unwrap_or(cfg.rcvbuf_initial_bytes.max(2 * mss));
        let mut b = RcvBuf {
            advmss,
            rcv_mss: MIN_RCVMSS.min(advmss),
            ratio: DEFAULT_SCALING_RATIO,
            measured_ratio: (cfg.rcv_scaling_ratio as u64).clamp(1, 255),
            rcvbuf,
            rcvbuf_max: if locked.is_some() {
                rcvbuf
            } else {
                cfg.rcvbuf_max_bytes.max(rcvbuf)
            },
            window_clamp: 0,
            rcv_ssthresh: 0,
            rcv_wnd: 0,
            rcv_wup: 1,
            wscale: 0,
            space: 0,
            space_seq: 1,
            space_time: Instant::ZERO,
            rtt8_ns: 0,
            last_tsecr: 0,
            rtt_seq: 0,
            rtt_time: None,
            timestamps,
            established: false,
            fixup: cfg.rcvbuf_fixup.then_some(cfg.rcvbuf_autotune),
            mstamp: Instant::ZERO,
            locked: locked.is_some(),
        };
        // tcp_openreq_init_rwin: no clamp (0 = 65535 << 14) unless the
        // user locked a smaller buffer, which clamps to its full space.
        let full = b.win_from_space(rcvbuf);
        let clamp = if b.locked {
            full
        } else {
            65535u64 << MAX_WSCALE
        };
        // tcp_select_initial_window (tcp_output.c), called with
        // tcp_full_space() and the MSS less the timestamp option; the SYN
        // window is at most U16_MAX.
        let mut space = full.min(clamp);
        if space > mss {
            space -= space % mss;
        }
        b.rcv_wnd = space.min(65535);
        if b.fixup.is_some() {
            // 3.x: at most `tcp_default_init_rwnd` segments in the SYN.
            b.rcv_wnd = b.rcv_wnd.min(INIT_RWND_SEGS * b.mss_3x());
        }
        if cfg.window_scaling {
            let s = space.max(cfg.rcvbuf_max_bytes).max(RMEM_MAX).min(clamp);
            b.wscale = (s.ilog2().saturating_sub(15)).min(MAX_WSCALE);
        }
        b.window_clamp = (65535u64 << b.wscale).min(clamp);
        // tcp_create_openreq_child: rcv_ssthresh = rcv_wnd.
        b.rcv_ssthresh = b.rcv_wnd;
        b
    }

    /// The MSS Linux 3.x's active opener sizes its first window and buffer
    /// with: `tp->advmss`, the route's MSS without the timestamp option
    /// (`tcp_connect_init` deducts it only once `ts_recent_stamp` is set):
    /// 1460 on Ethernet, as the lab client's SYN window 29200 = 20 × 1460.
    fn mss_3x(&self) -> u64 {
        self.advmss + if self.timestamps { TSTAMP_ALIGNED } else { 0 }
    }

    /// Linux 3.4-4.19 `tcp_fixup_rcvbuf`: `sk_rcvbuf` at least
    /// 2 · `SKB_TRUESIZE(advmss + MAX_TCP_HEADER)` · `tcp_default_init_rwnd`,
    /// four times that with `tcp_moderate_rcvbuf` ("Dynamic Right Sizing
    /// (DRS) has 2 to 3 RTT latency"), at most `tcp_rmem[2]`.
    fn fixup_rcvbuf(&mut self, moderate: bool) {
        let mss = self.mss_3x();
        let mut rcvmem = 2 * (mss + SKB_OVERHEAD_3X) * INIT_RWND_SEGS;
        if moderate {
            rcvmem <<= 2;
        }
        if self.rcvbuf < rcvmem {
            self.rcvbuf = rcvmem.min(self.rcvbuf_max);
        }
    }

    /// Window-scale shift.
    pub fn wscale(&self) -> u32 {
        self.wscale
    }

    /// The (unscaled) window of the SYN-ACK.
    pub fn syn_window(&self) -> u64 {
        self.rcv_wnd.min(65535)
    }

    fn win_from_space(&self, space: u64) -> u64 {
        (space * self.ratio) >> RMEM_TO_WIN_SCALE
    }

    fn space_from_win(&self, win: u64) -> u64 {
        (win << RMEM_TO_WIN_SCALE) / self.ratio
    }

    /// `tcp_space`: window worth of the memory not taken by queued
    /// segments (`queued` payload bytes: out-of-order ones and in-order
    /// ones the application has not read yet).
    fn free_space(&self, queued: u64) -> u64 {
        let used = self.space_from_win(queued);
        self.win_from_space(self.rcvbuf.saturating_sub(used))
    }

    /// `tcp_init_buffer_space`, when the handshake completes.
    pub fn establish(&mut self, now: Instant, rcv_nxt: u64) {
        if self.established {
            return;
        }
        self.established = true;
        if let Some(moderate) = self.fixup {
            self.fixup_rcvbuf(moderate);
        }
        let maxwin = self.win_from_space(self.rcvbuf);
        if self.window_clamp >= maxwin {
            // tcp_app_win = 31: maxwin >> 31 is 0 for any real buffer.
            self.window_clamp = if maxwin > 4 * self.advmss {
                maxwin.max(4 * self.advmss)
            } else {
                maxwin
            };
        }
        // "Force reservation of one segment."
        if self.window_clamp > 2 * self.advmss && self.window_clamp + self.advmss > maxwin {
            self.window_clamp = (2 * self.advmss).max(maxwin.saturating_sub(self.advmss));
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.space = self
            .rcv_ssthresh
            .min(self.rcv_wnd)
            .min(INIT_CWND * self.advmss);
        self.space_seq = rcv_nxt;
        self.space_time = now;
        self.mstamp = now;
    }

    /// Per data segment, before it is queued: the receiver-side RTT from
    /// the echoed timestamp (`tcp_rcv_rtt_measure_ts`), the receive MSS
    /// and scaling ratio (`tcp_measure_rcv_mss`).
    pub fn on_data(&mut self, now: Instant, len: u64, ts_ecr: u64) {
        self.mstamp = now;
        if self.timestamps && ts_ecr != 0 && ts_ecr != self.last_tsecr {
            self.last_tsecr = ts_ecr;
            if len >= self.rcv_mss {
                // Linux's TSval clock ticks in ms (`tcp_time_stamp_ts`,
                // TCP_TS_HZ 1000; µs only with the route's TCP_TS_USEC),
                // so the receiver's samples are whole ms
                // (`tcp_rtt_tsopt_us`); a zero difference is not a sample.
                let delta_ms = (now.as_ns() / 1_000_000).saturating_sub(ts_ecr / 1_000_000);
                if delta_ms > 0 {
                    self.rtt_update(delta_ms * 1_000_000, false);
                }
            }
        }
        if len >= self.rcv_mss {
            if len != self.rcv_mss && self.ratio != self.measured_ratio {
                // tcp_measure_rcv_mss → tcp_set_window_clamp on a new ratio.
                self.ratio = self.measured_ratio;
                let clamp = self.win_from_space(self.rcvbuf);
                if clamp < self.window_clamp {
                    self.window_clamp = clamp;
                    self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
                } else if clamp > self.window_clamp {
                    self.window_clamp = clamp;
                    self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
                }
                if self.window_clamp < self.space {
                    self.space = self.window_clamp;
                }
            }
            self.rcv_mss = len.min(self.advmss);
        }
    }

    /// `tcp_rcv_rtt_update`: EWMA 1/8 with timestamps, a minimum without
    /// (`win_dep`, compared as the kernel does against the scaled value).
    fn rtt_update(&mut self, sample_ns: u64, win_dep: bool) {
        let m = sample_ns.max(1);
        if self.rtt8_ns == 0 {
            self.rtt8_ns = m << 3;
        } else if !win_dep {
            let cur = self.rtt8_ns as i128;
            let d = m as i128 - (cur >> 3);
            self.rtt8_ns = (cur + d).max(1) as u64;
        } else if m < self.rtt8_ns {
            self.rtt8_ns = m << 3;
        }
    }

    /// `tcp_rcv_rtt_measure` (no timestamps): one sample per window.
    fn rtt_measure_window(&mut self, now: Instant, rcv_nxt: u64) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            self.rtt_update(now.saturating_since(t).as_ns(), true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_grow_window`; true when the window grew (the kernel then
    /// sets `icsk_ack.quick`, so the segment is acknowledged at once).
    pub fn grow_window(&mut self, len: u64, ooo_bytes: u64) -> bool {
        if len < 128 {
            return false;
        }
        let limit = self.window_clamp.min(self.free_space(ooo_bytes));
        if limit <= self.rcv_ssthresh {
            return false;
        }
        let room = limit - self.rcv_ssthresh;
        // Check #2 holds with the segment's own truesize at the measured
        // ratio (win_from_space(truesize) ≤ len): incr = 2 · advmss.
        let incr = (2 * self.advmss).max(2 * len);
        self.rcv_ssthresh += room.min(incr);
        true
    }

    /// In-order data queued for the application (`tcp_event_data_recv`);
    /// `queued` = unread + out-of-order payload bytes.
    pub fn on_in_order(&mut self, now: Instant, len: u64, rcv_nxt: u64, queued: u64) -> bool {
        if !self.timestamps {
            self.rtt_measure_window(now, rcv_nxt);
        }
        self.grow_window(len, queued)
    }

    /// The application has just copied one segment, up to `copied_seq`
    /// (`tcp_recvmsg_locked` calls `tcp_rcv_space_adjust` per skb).
    pub fn on_read(&mut self, copied_seq: u64, rcv_nxt: u64, ooo_span: u64) {
        self.space_adjust(self.mstamp, copied_seq, rcv_nxt, ooo_span);
    }

    /// `tcp_cleanup_rbuf` after a read: send a window update when the
    /// offered window is at most half the clamp and the read at least
    /// doubles it.
    pub fn read_opens_window(&self, rcv_nxt: u64, queued: u64) -> bool {
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        if 2 * cur > self.window_clamp {
            return false;
        }
        let new = self.raw_window(queued, 1u64 << self.wscale);
        new > 0 && new >= 2 * cur
    }

    /// Whether the application's read of everything up to `rcv_nxt`, one
    /// [`RcvBuf::on_read`] per `mss` from `copied_seq`, would end in a
    /// window update ([`RcvBuf::read_opens_window`]); nothing changes. The
    /// receiver needs no event for a read that sends nothing (issue 12).
    pub fn read_would_open_window(
        &self,
        copied_seq: u64,
        rcv_nxt: u64,
        mss: u64,
        ooo_span: u64,
        ooo_bytes: u64,
    ) -> bool {
        let mut b = self.clone();
        let mut copied = copied_seq;
        while copied < rcv_nxt {
            copied = (copied + mss).min(rcv_nxt);
            b.on_read(copied, rcv_nxt, ooo_span);
            // Every read of one loop is timed with the same `mstamp`, so
            // once the first has measured (or could not), the others
            // return at the once-per-RTT check: only the first counts.
            if b.rtt8_ns >> 3 > 0 {
                break;
            }
        }
        b.read_opens_window(rcv_nxt, ooo_bytes)
    }

    /// `__tcp_ack_snd_check`'s "right edge of window advances far
    /// enough": the window computed now (`__tcp_select_window`, before the
    /// never-shrink rule) is at least the one last advertised. While the
    /// application has not read, queued data shrinks it and the kernel
    /// leaves the ACK to the read (`tcp_cleanup_rbuf`).
    pub fn window_keeps_up(&self, queued: u64) -> bool {
        self.raw_window(queued, 1u64 << self.wscale) >= self.rcv_wnd
    }

    /// Out-of-order data queued (`tcp_data_queue_ofo`).
    pub fn on_out_of_order(&mut self, len: u64, ooo_bytes: u64, ooo_span: u64) -> bool {
        let quick = self.grow_window(len, ooo_bytes);
        self.rcvbuf_grow(self.space, ooo_span);
        quick
    }

    /// `tcp_rcv_space_adjust`: the bytes read since the last measure
    /// less those still queued (`copied -= inq`, Linux ≥ 6.16). A flight
    /// that arrives as one burst is mostly still queued when its first
    /// segment is read, so it does not count: through a policer with a
    /// big bucket the buffer stays at `tcp_rmem[1]` (seen on the kernel:
    /// `ss -tmi` rcv_space 14480, rb 131072 for seconds).
    fn space_adjust(&mut self, now: Instant, copied_seq: u64, rcv_nxt: u64, ooo_span: u64) {
        if self.rtt8_ns == 0 || !self.established {
            return;
        }
        if now.saturating_since(self.space_time).as_ns() < self.rtt8_ns >> 3 {
            return;
        }
        let inq = rcv_nxt.saturating_sub(copied_seq);
        let copied = copied_seq.saturating_sub(self.space_seq) as i64 - inq as i64;
        if copied > self.space as i64 {
            self.rcvbuf_grow(copied as u64, ooo_span);
        }
        self.space_seq = copied_seq;
        self.space_time = now;
    }

    /// `tcp_rcvbuf_grow(sk, newval)`, Linux 6.18 (its tracepoint on this
    /// kernel carries rcv_ssthresh/window_clamp/rcv_wnd, the October 2025
    /// series "tcp: fix too slow tcp_rcvbuf_grow() action"): twice what was
    /// consumed ("DRS is always one RTT late") plus, in slow start, twice
    /// the growth rate applied to it, plus the out-of-order span.
    fn rcvbuf_grow(&mut self, newval: u64, ooo_span: u64) {
        let oldval = self.space;
        self.space = newval;
        if self.locked {
            // "sk->sk_userlocks & SOCK_RCVBUF_LOCK": no autotuning.
            return;
        }
        let mut rcvwin = newval << 1;
        if oldval > 0 && newval > oldval {
            let grow = (rcvwin as u128 * (newval - oldval) as u128 / oldval as u128) as u64;
            rcvwin = rcvwin.saturating_add(grow << 1);
        }
        let rcvwin = rcvwin.saturating_add(ooo_span);
        let rcvbuf = self.space_from_win(rcvwin).min(self.rcvbuf_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.win_from_space(rcvbuf);
        }
    }

    /// `tcp_select_window` around `__tcp_select_window`: the window in
    /// bytes for an ACK sent now (a multiple of the scale granularity).
    pub fn select_window(&mut self, rcv_nxt: u64, queued: u64) -> u64 {
        let gran = 1u64 << self.wscale;
        let mut new = self.raw_window(queued, gran);
        // Never shrink the offered window (tcp_select_window).
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        if new < cur {
            new = cur.div_ceil(gran) * gran;
        }
        new = new.min(65535u64 << self.wscale);
        self.rcv_wnd = new;
        self.rcv_wup = rcv_nxt;
        new
    }

    fn raw_window(&self, queued: u64, gran: u64) -> u64 {
        let allowed = self.win_from_space(self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mss = self.rcv_mss.min(full);
        let mut free = self.free_space(queued);
        if free < full >> 1 {
            free = (free / gran) * gran;
            if free < allowed >> 4 || free < mss {
                return 0;
            }
        }
        free = free.min(self.rcv_ssthresh);
        if self.wscale > 0 {
            free.div_ceil(gran) * gran
        } else {
            // Unscaled: a multiple of the MSS, kept when within one MSS.
            let window = self.rcv_wnd;
            if window + mss <= free || window > free {
                if mss > 0 {
                    free - free % mss
                } else {
                    free
                }
            } else {
                window
            }
        }
    }

    #[cfg(test)]
    fn state(&self) -> (u64, u64, u64, u64) {
        (
            self.rcvbuf,
            self.window_clamp,
            self.rcv_ssthresh,
            self.space,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux() -> TcpConfig {
        TcpConfig::profile("linux").unwrap()
    }

    #[test]
    fn initial_window_and_scale_as_linux_6_18() {
        // Measured on this machine (Linux 6.18, tcp_rmem 4096 131072
        // 33554432): SYN-ACK window 65160, scale 10.
        let b = RcvBuf::new(&linux());
        assert_eq!((b.syn_window(), b.wscale()), (65160, 10));
    }

    #[test]
    fn first_segment_sets_ratio_then_window_grows_two_segments_each() {
        let mut b = RcvBuf::new(&linux());
        b.establish(Instant::ZERO, 1);
        // tcp_init_buffer_space: clamp 65536 - 1448 (`ss -ti` rcv_ssthresh
        // 64088 on the kernel), space 10 · 1448.
        assert_eq!(b.state(), (131072, 64088, 64088, 14480));
        b.on_data(Instant::from_ns(1), 1448, 0);
        assert!(b.on_in_order(Instant::from_ns(1), 1448, 1449, 0));
        // Clamp at the measured ratio 158/256 of 131072 = 80896; the
        // window grows by 2 · len: 65160 + 2896 → aligned to 1024, as the
        // kernel's first ACK of data.
        assert_eq!(b.window_clamp, 80896);
        assert_eq!(b.select_window(1449, 0), 68608);
        for i in 1..40u64 {
            b.on_in_order(Instant::from_ns(1 + i), 1448, 1449 + 1448 * i, 0);
        }
        assert_eq!(
            b.select_window(1 + 1448 * 40, 0),
            80896,
            "the 131072 B buffer's cap"
        );
    }

    /// Linux 3.x (`linux-3.x`): the SYN offers 20 segments of 1460 B
    /// (`tcp_default_init_rwnd`; the USC-NSL lab client's 29200 B), and
    /// `tcp_fixup_rcvbuf` lets the window grow two segments per segment far
    /// past what `tcp_rmem[1]` = 87380 B alone allows (42 kB, where the
    /// window stopped for two round trips before this rule).
    #[test]
    fn linux_3x_fixup_rcvbuf_lets_slow_start_run_on_the_first_buffer() {
        let l3 = TcpConfig::profile("linux-3.x").unwrap();
        let mut b = RcvBuf::new(&l3);
        assert_eq!(b.syn_window(), 29200);
        b.establish(Instant::ZERO, 1);
        let (rcvbuf, clamp, ssthresh, _) = b.state();
        // 2 · (1460 + 880) · 20 · 4 and its half less one segment (1448).
        assert_eq!((rcvbuf, clamp, ssthresh), (374_400, 185_752, 29200));
        b.on_data(Instant::from_ns(1), 1448, 0);
        for i in 0..30u64 {
            b.on_in_order(Instant::from_ns(2 + i), 1448, 1449 + 1448 * i, 0);
        }
        // 30 segments in: 29200 + 30 · 2896 B, past the 43690 B a 87380 B
        // buffer gives, still below the clamp.
        assert_eq!(b.select_window(1 + 1448 * 30, 0), 116_096);
        let mut without = l3.clone();
        without.rcvbuf_fixup = false;
        let mut b = RcvBuf::new(&without);
        b.establish(Instant::ZERO, 1);
        b.on_data(Instant::from_ns(1), 1448, 0);
        for i in 0..30u64 {
            b.on_in_order(Instant::from_ns(2 + i), 1448, 1449 + 1448 * i, 0);
        }
        assert!(b.select_window(1 + 1448 * 30, 0) < 43_690);
    }

    #[test]
    fn a_locked_so_rcvbuf_advertises_what_linux_does() {
        // iperf3 -w N: SO_RCVBUF N → sk_rcvbuf 2N, locked. Linux 6.18
        // (tcp_openreq_init_rwin, tcp_select_initial_window): scale from
        // the clamped full space; after the first full segment the ratio
        // 158/256 gives the cap, unscaled windows in whole MSS.
        for (n, scale, syn, cap) in [
            (32_768u64, 0, 31_856, 39_096),
            (65_536, 1, 65_160, 80_896),
            (131_072, 2, 65_535, 161_792),
        ] {
            let mut c = linux();
            c.rcvbuf_autotune = false;
            c.rcvbuf_lock_bytes = Some(n);
            let mut b = RcvBuf::new(&c);
            assert_eq!((b.wscale(), b.syn_window()), (scale, syn), "SO_RCVBUF {n}");
            b.establish(Instant::ZERO, 1);
            b.on_data(Instant::from_ns(1), 1448, 0);
            let mut seq = 1;
            for i in 0..200u64 {
                seq += 1448;
                b.on_in_order(Instant::from_ns(2 + i), 1448, seq, 0);
            }
            assert_eq!(b.select_window(seq, 0), cap, "SO_RCVBUF {n}");
            // Reading never grows a locked buffer.
            b.rcvbuf_grow(10 * n, 0);
            assert_eq!(b.state().0, 2 * n);
        }
    }

    /// One RTT of `n` segments, each read either as it comes (spread
    /// arrivals) or after the whole flight is in (one burst).
    fn flight(b: &mut RcvBuf, t_ns: u64, seq: &mut u64, n: u64, burst: bool) {
        let start = *seq;
        let end = start + n * 1448;
        if burst {
            b.on_data(Instant::from_ns(t_ns), 1448, 0);
            let mut c = start;
            while c < end {
                c += 1448;
                b.on_read(c, end, 0);
            }
        } else {
            for i in 1..=n {
                let c = start + i * 1448;
                b.on_data(Instant::from_ns(t_ns + i), 1448, 0);
                b.on_in_order(Instant::from_ns(t_ns + i), 1448, c, 0);
                b.on_read(c, c, 0);
            }
        }
        *seq = end;
    }

    #[test]
    fn spread_arrivals_double_the_buffer_bursts_do_not() {
        let rtt = 50_000_000u64;
        for burst in [false, true] {
            let mut b = RcvBuf::new(&linux());
            b.establish(Instant::ZERO, 1);
            b.on_data(Instant::from_ns(rtt), 1448, 1); // receiver RTT 50 ms
            let mut seq = 1;
            for (k, n) in [10u64, 20, 40, 56, 56].into_iter().enumerate() {
                flight(&mut b, (k as u64 + 1) * rtt, &mut seq, n, burst);
            }
            let (rcvbuf, clamp, _, space) = b.state();
            if burst {
                // What is still queued at the first read does not count.
                assert_eq!((rcvbuf, space), (131072, 14480));
            } else {
                // 56 segments read in the last RTT: buffer for 2 · 56.
                assert_eq!(space, 56 * 1448);
                assert_eq!(clamp, (rcvbuf * 158) >> 8);
                assert!(clamp + 256 >= 2 * 56 * 1448, "{clamp}");
            }
        }
    }
}
