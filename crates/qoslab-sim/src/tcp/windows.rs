//! Rules of the Windows TCP stack that differ from Linux's, behind the
//! Windows profiles' configuration (nothing here runs for `linux*`).
//!
//! - RACK and TLP only on connections of more than 10 ms RTT. Windows 10
//!   Anniversary Update (1607) and Windows Server 2016 shipped RACK and the
//!   tail loss probe ("Announcing: New Transport Advancements in the
//!   Anniversary Update for Windows 10 and Windows Server 2016", Microsoft
//!   Networking blog, July 2016); the stack's lead engineer told the IETF
//!   they are "enabled for > 10 msec RTT connections" (P. Balasubramanian,
//!   "Updates on Windows TCP", IETF 100 TCPM session, November 2017, slide
//!   2, recapping the IETF 98 report). Which RTT decides is not published;
//!   Windows picks its per-connection TCP template from "the initial RTT
//!   as measured by the TCP connection handshake" (Microsoft Networking
//!   blog, "TCP Templates for Windows Server 2019", 2018-10-03), so the
//!   handshake RTT decides here too, once per connection. Below the floor
//!   a lost retransmission or a lost tail waits for the retransmission
//!   timeout (MinRto 300 ms), as RFC 6675 recovery without RACK does.

use qoslab_core::Duration;

/// Whether RACK and TLP run on a connection whose handshake measured
/// `handshake_rtt`, under the profile's floor `min_rtt`
/// ([`TcpConfig::rack_tlp_min_rtt`](crate::config::TcpConfig::rack_tlp_min_rtt)).
/// No floor (every Linux profile): always. A floor and no handshake
/// sample (the SYN was retransmitted, no timestamps): off, as the RTT
/// is not known to exceed it.
pub(crate) fn rack_tlp_allowed(min_rtt: Option<Duration>, handshake_rtt: Option<Duration>) -> bool {
    match (min_rtt, handshake_rtt) {
        (None, _) => true,
        (Some(min), Some(rtt)) => rtt > min,
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_above_the_floor() {
        let ms = Duration::from_ms;
        assert!(rack_tlp_allowed(None, Some(ms(1))));
        assert!(rack_tlp_allowed(None, None));
        assert!(!rack_tlp_allowed(Some(ms(10)), Some(ms(5))));
        assert!(
            !rack_tlp_allowed(Some(ms(10)), Some(ms(10))),
            "> 10 ms, not >="
        );
        assert!(rack_tlp_allowed(Some(ms(10)), Some(ms(11))));
        assert!(!rack_tlp_allowed(Some(ms(10)), None));
    }
}
