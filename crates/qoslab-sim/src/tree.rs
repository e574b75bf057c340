//! Policy trees live in `qoslab-policy` ([`qoslab_policy::tree`]); this
//! module keeps the simulator's old paths working, with [`build`]'s error
//! as a [`SimError::Config`].

use crate::config::TreeSpec;
use crate::SimError;
pub use qoslab_policy::tree::*;

/// Builds `spec` ([`qoslab_policy::tree::build`]: errors name `path.…` in
/// the spec's own structure); `seed` feeds every random component that has
/// no `seed` of its own.
pub fn build(spec: &TreeSpec, path: &str, seed: u64) -> Result<PolicyTree, SimError> {
    Ok(qoslab_policy::tree::build(spec, path, seed)?)
}

#[cfg(test)]
mod tests {
    use crate::config::*;
    use crate::testutil::*;
    use qoslab_core::{Duration, Rate};

    fn tree(root: QdiscSpec) -> TreeSpec {
        TreeSpec { police: None, root }
    }

    /// UDP at 20 Mbit/s into a 10 Mbit/s link whose queue is CoDel with a
    /// limit never reached, so every drop is CoDel's own, at dequeue (an
    /// unresponsive flow: the control law's drop rate grows as √count, too
    /// slowly to hold a 2× overload in 3 s): the drops reach the policy
    /// result, the root class and the flow, and packets are conserved.
    #[test]
    fn codel_at_the_bottleneck_reports_its_dequeue_drops() {
        let fast = lp(1_000_000_000, Duration::from_us(10));
        let mut mid = link("r", "b", lp(10_000_000, Duration::from_ms(1)));
        mid.egress_ab = Some(PolicySpec::Tree(Box::new(tree(QdiscSpec::leaf(
            "codel",
            &[("limit", "100000")],
        )))));
        let topo = Topology::Explicit(ExplicitTopology {
            nodes: nodes(&["a", "r", "b"]),
            links: vec![link("a", "r", fast), mid],
        });
        let udp = TrafficSpec::UdpCbr {
            flows: 1,
            endpoints: ends("a", "b"),
            schedule: Schedule::default(),
            rate: Rate::from_bps(20_000_000),
            payload_bytes: 1472,
            label: String::new(),
        };
        let r = crate::run(&cfg(topo, vec![udp], 3), &mut |_| true).unwrap();
        let p = &r.policies[0];
        let root = &p.classes[0];
        assert!(p.packets_dropped > 100, "{p:?}");
        assert_eq!(root.packets_dropped, p.packets_dropped);
        assert!(p.max_queue_packets < 100_000, "{p:?}");
        let f = &r.flows[0];
        assert!(f.packets_lost >= p.packets_dropped, "{f:?}");
        // In = out + dropped + still queued.
        let queued = root.packets_in - root.packets_out - root.packets_dropped;
        assert!(queued <= root.max_queue_packets, "{root:?}");
        assert_eq!(
            root.packets_out, 2500,
            "10 Mbit/s for 3 s of 1500-byte packets"
        );
    }
}
