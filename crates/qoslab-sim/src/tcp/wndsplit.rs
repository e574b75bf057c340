//! Where Linux cuts new data at the receive window's right edge: the
//! segment that ends a window-limited burst may be shorter than the MSS.
//!
//! `tcp_write_xmit` (net/ipv4/tcp_output.c, Linux 6.18) sends the head skb
//! of the write queue when its first MSS fits in the window
//! (`tcp_snd_wnd_test`: `seq + mss ≤ snd_una + snd_wnd`) and then cuts it
//! with `tcp_mss_split_point`: at most `max_segs` segments (the congestion
//! quota, at most `tcp_tso_segs`, the autosized TSO burst of `tcp/tso.rs`),
//! else `needed` = min(skb length, window left from the skb's start). When
//! `needed` is not a whole number of segments the partial last segment is
//! kept unless `tcp_nagle_check(partial, tp, nonagle)` holds it, which with
//! Nagle on (iperf3 without `-N`: `nonagle` 0) is Minshall's rule
//! (`tcp_minshall_check`: a sub-MSS segment sent earlier, `snd_sml`, is not
//! yet acknowledged). `tso_fragment` then splits the skb there, so the
//! burst's last frame carries the few bytes up to the window's edge, and
//! the remainder skb starts at the new SND.NXT, where the next pass meets
//! `tcp_snd_wnd_test` again: it waits until the window has opened by a
//! whole MSS.
//!
//! The partial segment came with "tcp: allow splice() to build full TSO
//! packets" (E. Dumazet, 2012); Linux 2.6.32's `tcp_mss_split_point`
//! returns `needed - needed % mss_now`, whole segments only.
//!
//! In the simulator the sender emits one segment at a time, so the skbs
//! of a pass are counted: `run` full new segments sent so far in this pass
//! make `run / max_segs` whole TSO bursts and one more begun; the partial
//! belongs to the begun one (`run % max_segs > 0`), whose first MSS passed
//! the window test. If the full bursts used the window up to less than an
//! MSS, a new burst would start there and fail `tcp_snd_wnd_test`: no
//! partial. Boundaries between the application's skbs in the write queue
//! (`size_goal`, up to 64 KB) are not modelled: Linux 6.18's `tcp_grow_skb`
//! merges the next skbs into the head up to the congestion quota.
//!
//! Seen on the policer truth's 4-flow CUBIC case (`tcp:tcp_probe` on the
//! kernel through `qoslab emulate`): the slow start's burst stopped at
//! snd_una + snd_wnd = 181 270 with a 232-byte frame, the same offset in
//! every flow because their receivers' windows grow alike.

/// Bytes of the segment at the window's edge that Linux sends, or `None`
/// when it waits.
///
/// * `window_left`: right window edge − SND.NXT, bytes (the caller has
///   found that a whole segment does not fit);
/// * `run`: full-size new segments sent earlier in this send pass;
/// * `max_segs`: segments per TSO burst (`tcp_tso_segs`, ≥ 1);
/// * `small_unacked`: Minshall's check, a sub-MSS segment is in flight.
pub fn partial_at_window_edge(
    window_left: u64,
    mss: u64,
    run: u64,
    max_segs: u64,
    small_unacked: bool,
) -> Option<u64> {
    if window_left == 0 || window_left >= mss || small_unacked {
        return None;
    }
    (run % max_segs.max(1) > 0).then_some(window_left)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    #[test]
    fn the_burst_that_reached_the_edge_keeps_its_short_last_segment() {
        // 55 full segments of a 79 872-byte window sent in bursts of 45:
        // the second burst (10 segments) takes the 232 bytes left.
        assert_eq!(partial_at_window_edge(232, MSS, 55, 45, false), Some(232));
    }

    #[test]
    fn no_partial_when_a_new_burst_would_start_short_of_one_mss() {
        // The window opened by less than an MSS since the last pass.
        assert_eq!(partial_at_window_edge(232, MSS, 0, 45, false), None);
        // Two whole bursts of 4 ended 232 bytes before the edge.
        assert_eq!(partial_at_window_edge(232, MSS, 8, 4, false), None);
    }

    #[test]
    fn minshall_holds_a_second_small_segment() {
        assert_eq!(partial_at_window_edge(232, MSS, 3, 45, true), None);
    }

    #[test]
    fn a_whole_segment_or_nothing_is_not_a_partial() {
        assert_eq!(partial_at_window_edge(0, MSS, 3, 45, false), None);
        assert_eq!(partial_at_window_edge(MSS, MSS, 3, 45, false), None);
    }
}
