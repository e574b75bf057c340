//! Issue 15: near 2^63 ns, shapers and AQMs returned departures that
//! wrapped negative in the bindings' signed 64-bit times. Arrival times are
//! now refused at or beyond `TIME_HORIZON_NS` (2^62 ns, ≈ 146 years) and any
//! departure at or beyond 2^63 ns is an error, never a value. These
//! properties run every shaper and AQM kind over the whole accepted range.

use proptest::prelude::*;
use qoslab_core::drive::{
    meter_trace, shape_trace, TraceShaper, DEPARTURE_LIMIT_NS, DROPPED, TIME_HORIZON_NS,
};
use qoslab_core::{Params, Policer};

/// Every shaper and AQM kind, with parameters tc or IOS would accept.
const KINDS: &[(&str, &[(&str, &str)])] = &[
    (
        "tbf",
        &[("rate", "1mbit"), ("burst", "3000B"), ("limit", "30000B")],
    ),
    ("shape", &[("cir", "1mbit")]),
    (
        "srras",
        &[
            ("cir", "1mbit"),
            ("mir", "10mbit"),
            ("cir_th", "3000"),
            ("mir_th", "12000"),
            ("buffer", "20000"),
        ],
    ),
    (
        "trras",
        &[
            ("cir", "1mbit"),
            ("pir", "2mbit"),
            ("mir", "10mbit"),
            ("cir_th", "3000"),
            ("pir_th", "6000"),
            ("mir_th", "12000"),
            ("buffer", "20000"),
        ],
    ),
    (
        "g-srras",
        &[
            ("cbs", "3000"),
            ("ebs", "6000"),
            ("cir", "1mbit"),
            ("mir", "10mbit"),
            ("cir_th", "3000"),
            ("mir_th", "12000"),
            ("buffer", "20000"),
        ],
    ),
    (
        "g-trras",
        &[
            ("cbs", "3000"),
            ("pbs", "6000"),
            ("cir", "1mbit"),
            ("pir", "2mbit"),
            ("mir", "10mbit"),
            ("cir_th", "3000"),
            ("pir_th", "6000"),
            ("mir_th", "12000"),
            ("buffer", "20000"),
        ],
    ),
    (
        "red",
        &[
            ("rate", "1mbit"),
            ("limit", "100000B"),
            ("min", "10000B"),
            ("max", "30000B"),
            ("avpkt", "1000B"),
        ],
    ),
    ("wred", &[("rate", "1mbit"), ("preset", "rfc2963")]),
    ("rio", &[("rate", "1mbit"), ("preset", "rfc2963")]),
    ("codel", &[("rate", "1mbit")]),
    ("pie", &[("rate", "1mbit")]),
];

const METERS: &[(&str, &[(&str, &str)])] = &[
    ("police", &[("cir", "1mbit"), ("bc", "3000B")]),
    (
        "srtcm",
        &[("cir", "1mbit"), ("cbs", "3000B"), ("ebs", "6000B")],
    ),
    (
        "trtcm",
        &[
            ("cir", "1mbit"),
            ("pir", "2mbit"),
            ("cbs", "3000B"),
            ("pbs", "6000B"),
        ],
    ),
    ("tswtcm", &[("ctr", "1mbit"), ("ptr", "2mbit")]),
];

fn build(kind: &str, pairs: &[(&str, &str)]) -> Option<TraceShaper> {
    TraceShaper::from_params(kind, Params::new(kind, pairs.iter().copied()))
        .map_err(|e| eprintln!("{kind}: {e}"))
        .ok()
}

/// Sorted arrivals starting at `t0`, gaps below 2^40 ns, sizes 1..=9000.
fn trace() -> impl Strategy<Value = (Vec<u64>, Vec<u32>)> {
    (
        0..TIME_HORIZON_NS,
        prop::collection::vec((0u64..(1 << 40), 1u32..=9000), 1..60),
    )
        .prop_map(|(t0, v)| {
            let mut t = t0;
            let mut times = Vec::new();
            let mut sizes = Vec::new();
            for (gap, size) in v {
                t = t.saturating_add(gap % 3_000_000);
                times.push(t);
                sizes.push(size);
            }
            (times, sizes)
        })
}

#[test]
fn every_kind_of_the_table_builds() {
    for (kind, pairs) in KINDS {
        assert!(build(kind, pairs).is_some(), "{kind}");
    }
    for (kind, pairs) in METERS {
        let m = Policer::from_params(kind, Params::new(kind, pairs.iter().copied()));
        assert!(m.is_ok(), "{kind}: {:?}", m.err());
    }
}

proptest! {

    /// Below the horizon: no panic, no departure before its arrival, none
    /// at or beyond 2^63 ns — or a refusal naming the horizon.
    #[test]
    fn no_departure_before_arrival_up_to_the_horizon(
        (times, sizes) in trace(), k in 0..KINDS.len()
    ) {
        let (kind, pairs) = KINDS[k];
        let mut s = build(kind, pairs).unwrap();
        let mut dep = vec![0u64; times.len()];
        match shape_trace(&mut s, &times, &sizes, &mut dep) {
            Ok(sum) => {
                for (i, &d) in dep.iter().enumerate() {
                    if d != DROPPED {
                        prop_assert!(d >= times[i], "{kind}: packet {i} departs {d} < {}", times[i]);
                        prop_assert!(d < DEPARTURE_LIMIT_NS);
                    }
                }
                prop_assert_eq!(sum.sent_packets + sum.dropped_packets, times.len() as u64);
            }
            Err(e) => prop_assert!(e.message.contains("horizon"), "{kind}: {}", e.message),
        }
    }

    /// At or beyond the horizon: refused up front, naming it.
    #[test]
    fn times_beyond_the_horizon_are_refused(t in TIME_HORIZON_NS..=u64::MAX, k in 0..KINDS.len()) {
        let (kind, pairs) = KINDS[k];
        let mut s = build(kind, pairs).unwrap();
        let mut dep = [0u64; 2];
        let e = shape_trace(&mut s, &[0, t], &[1500, 1500], &mut dep).unwrap_err();
        prop_assert_eq!(e.index, 1);
        prop_assert!(e.message.contains("2^62 ns"), "{}", e.message);
    }

    /// Meters: no panic anywhere in the accepted range.
    #[test]
    fn meters_take_the_whole_range((times, sizes) in trace(), k in 0..METERS.len()) {
        let (kind, pairs) = METERS[k];
        let mut m = Policer::from_params(kind, Params::new(kind, pairs.iter().copied())).unwrap();
        let n = times.len();
        let (mut c, mut a) = (vec![0u8; n], vec![0u8; n]);
        let s = meter_trace(&mut m, &times, &sizes, None, &mut c, &mut a).unwrap();
        prop_assert_eq!(s.packets.iter().sum::<u64>(), n as u64);
    }
}

/// The case: a tbf fed at 2^63 − 1 ms is refused, not wrapped.
#[test]
fn the_reported_tbf_case_is_refused() {
    let mut s = build("tbf", KINDS[0].1).unwrap();
    let t0 = (1u64 << 63) - 1_000_000;
    let times: Vec<u64> = (0..50).map(|i| t0 + i * 100).collect();
    let mut dep = vec![0u64; 50];
    let e = shape_trace(&mut s, &times, &[1500; 50], &mut dep).unwrap_err();
    assert!(e.message.contains("horizon"), "{}", e.message);
}
