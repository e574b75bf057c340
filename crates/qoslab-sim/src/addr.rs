//! Host addressing shared by the emulator (the namespaces it creates) and
//! the simulator's captures, so a capture of the same scenario shows the
//! same addresses whichever way it was made.
//!
//! The hosts of a scenario are numbered in node order ([`hosts`]); host `i`
//! is IPv4 `10.77.(i / 250).(i % 250 + 1)` with the locally administered
//! MAC `02:71:ii:ii:ii:01` (the low 24 bits of `i`).

use crate::config::Topology;
use crate::net::Net;
use crate::PlannedFlow;

/// The host nodes of `net` for `flows`: a dumbbell's senders and
/// receivers; in an explicit topology, the nodes traffic names.
pub fn hosts(topology: &Topology, net: &Net, flows: &[PlannedFlow]) -> Vec<String> {
    net.nodes
        .iter()
        .map(|n| n.name.clone())
        .filter(|name| match topology {
            Topology::Dumbbell(_) => name != "r1" && name != "r2",
            Topology::Explicit(_) => flows.iter().any(|f| &f.from == name || &f.to == name),
        })
        .collect()
}

/// IPv4 address of host `index` (250 per /24, from 10.77.0.1).
pub fn host_ipv4(index: u32) -> [u8; 4] {
    [10, 77, (index / 250) as u8, (index % 250 + 1) as u8]
}

/// A locally administered, deterministic MAC for host `index`.
pub fn host_mac(index: u32) -> [u8; 6] {
    [
        0x02,
        0x71,
        (index >> 16) as u8,
        (index >> 8) as u8,
        index as u8,
        0x01,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_the_host_index() {
        assert_eq!(host_ipv4(0), [10, 77, 0, 1]);
        assert_eq!(host_ipv4(249), [10, 77, 0, 250]);
        assert_eq!(host_ipv4(250), [10, 77, 1, 1]);
        assert_eq!(host_mac(0x01_02_03), [2, 0x71, 1, 2, 3, 1]);
    }
}
