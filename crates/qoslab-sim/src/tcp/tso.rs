//! The send quantum: how many segments Linux puts in one TSO/GSO "skb",
//! i.e. how many leave back to back per pacing release.
//!
//! Linux sizes every skb from the pacing rate whatever the device
//! (net/ipv4/tcp_output.c `tcp_tso_autosize`, `tcp_tso_segs`, since Linux
//! 3.12 "tcp: TSO packets automatic sizing"; the RTT term since 5.18,
//! sysctl `tcp_tso_rtt_log` = 9):
//!
//! ```text
//! bytes = sk_pacing_rate >> sk_pacing_shift          (≈ 1 ms of data; shift 10)
//! r     = min_rtt_us >> tcp_tso_rtt_log
//! if r < 32: bytes += gso_max_size >> r              (short RTTs get bigger bursts)
//! segs  = max(min(bytes, gso_max_size) / mss, min_tso_segs)
//! ```
//!
//! `min_tso_segs` is the algorithm's (`ca_ops->min_tso_segs`: BBR's
//! `bbr_min_tso_segs`, 1 below 1.2 Mbit/s and 2 above) or the sysctl
//! `tcp_min_tso_segs` (2). `gso_max_size` is `GSO_LEGACY_MAX_SIZE` (65536),
//! the default of every Ethernet-like device (veth included), which is why
//! the quantum does not depend on the device: 2 segments at 10 Mbit/s, 8
//! at 100 Mbit/s for a 1448 B MSS. Pacing then spaces skbs, not segments
//! (`tcp_update_skb_after_send` advances the departure time by `skb->len`).
//!
//! BBR's own estimate of the quantum for its cwnd budget, `bbr_tso_segs_goal`
//! (net/ipv4/tcp_bbr.c), is the same without the RTT term, capped at
//! `GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER` bytes and 127 segments.

use qoslab_core::{Duration, Rate};

/// Linux `sk_pacing_shift` default (`sk->sk_pacing_shift = 10`, ~1 ms).
pub const PACING_SHIFT: u32 = 10;
/// Linux sysctl `tcp_tso_rtt_log` default.
pub const TSO_RTT_LOG: u32 = 9;
/// `GSO_LEGACY_MAX_SIZE`, the default `sk_gso_max_size`.
pub const GSO_MAX_SIZE_BYTES: u64 = 65_536;
/// Linux sysctl `tcp_min_tso_segs` default.
pub const MIN_TSO_SEGS: u32 = 2;
/// `MAX_TCP_HEADER` = L1_CACHE_ALIGN(128 + MAX_HEADER) on x86-64 (320).
const MAX_TCP_HEADER_BYTES: u64 = 320;
/// BBR's cap on its goal (`min(segs, 0x7FU)`).
const BBR_MAX_TSO_SEGS: u64 = 0x7f;
/// `bbr_min_tso_rate`, bit/s.
const BBR_MIN_TSO_RATE_BPS: u64 = 1_200_000;

fn pacing_bytes_per_ms(rate: Rate) -> u64 {
    (rate.bps() / 8) >> PACING_SHIFT
}

/// Linux `bbr_min_tso_segs`.
pub fn bbr_min_tso_segs(pacing_rate: Option<Rate>) -> u32 {
    // sk_pacing_rate < (bbr_min_tso_rate >> 3), both in bytes/s.
    match pacing_rate {
        Some(r) if r.bps() / 8 >= BBR_MIN_TSO_RATE_BPS >> 3 => 2,
        _ => 1,
    }
}

/// Linux `bbr_tso_segs_goal`, segments.
pub fn bbr_tso_segs_goal(pacing_rate: Option<Rate>, mss: u64) -> u64 {
    let bytes = pacing_rate
        .map_or(0, pacing_bytes_per_ms)
        .min(GSO_MAX_SIZE_BYTES - 1 - MAX_TCP_HEADER_BYTES);
    let segs = (bytes / mss.max(1)).max(bbr_min_tso_segs(pacing_rate) as u64);
    segs.min(BBR_MAX_TSO_SEGS)
}

/// Linux `tcp_tso_autosize`: segments per skb at `pacing_rate` with the
/// connection's minimum RTT, never below `min_tso_segs`.
pub fn tso_autosize_segs(
    pacing_rate: Rate,
    min_rtt: Option<Duration>,
    mss: u64,
    min_tso_segs: u32,
) -> u32 {
    let mut bytes = pacing_bytes_per_ms(pacing_rate);
    // Linux keeps min_rtt in µs, ~0U before a sample.
    let r = min_rtt.map_or(u64::from(u32::MAX), |d| d.as_ns() / 1000) >> TSO_RTT_LOG;
    if r < 32 {
        bytes += GSO_MAX_SIZE_BYTES >> r;
    }
    let segs = bytes.min(GSO_MAX_SIZE_BYTES) / mss.max(1);
    u32::try_from(segs).unwrap_or(u32::MAX).max(min_tso_segs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    #[test]
    fn bbr_goal_is_two_at_10_mbit_and_eight_at_100_mbit() {
        let r = |bps| Some(Rate::from_bps(bps));
        assert_eq!(bbr_tso_segs_goal(r(10_000_000), MSS), 2);
        assert_eq!(bbr_tso_segs_goal(r(100_000_000), MSS), 8);
        assert_eq!(bbr_tso_segs_goal(r(1_000_000), MSS), 1);
        assert_eq!(bbr_tso_segs_goal(None, MSS), 1);
        // Capped at 127 segments of a small MSS, and at ~64 kB.
        assert_eq!(bbr_tso_segs_goal(r(100_000_000_000), 100), 127);
        assert_eq!(bbr_tso_segs_goal(r(100_000_000_000), MSS), 45);
    }

    #[test]
    fn autosize_adds_a_burst_at_short_rtts() {
        let rate = Rate::from_bps(100_000_000);
        let long = Some(Duration::from_ms(20));
        assert_eq!(tso_autosize_segs(rate, long, MSS, 2), 8);
        assert_eq!(
            tso_autosize_segs(Rate::from_bps(10_000_000), long, MSS, 2),
            2
        );
        // 1 ms min RTT: r = 1000 >> 9 = 1, +32 kB.
        let short = Some(Duration::from_ms(1));
        assert_eq!(
            tso_autosize_segs(rate, short, MSS, 2),
            (12_207 + 32_768) / 1448
        );
        // Never above 64 kB.
        let fast = Rate::from_bps(10_000_000_000);
        assert_eq!(tso_autosize_segs(fast, long, MSS, 2), 65_536 / 1448);
        assert_eq!(tso_autosize_segs(Rate::from_bps(1_000), None, MSS, 1), 1);
    }
}
