//! Captures out, the pure part: Ethernet/IPv4/TCP|UDP|ICMP frames built from
//! header fields with `etherparse` (checksums included, computed over the
//! zero payload a simulated packet stands for), cut to a snap length.
//!
//! TCP options are laid out as Linux lays them out (`tcp_options_write`,
//! net/ipv4/tcp_output.c): a SYN carries MSS, then SACK-permitted and
//! timestamps (or NOP NOP SACK-permitted without timestamps), then NOP and
//! the window scale; other segments carry NOP NOP TSval/TSecr and, when
//! there are SACK blocks, NOP NOP SACK (three blocks fit beside
//! timestamps, four without; RFC 2018 §3).

use etherparse::{
    EtherType, Ethernet2Header, IcmpEchoHeader, Icmpv4Header, Icmpv4Type, IpDscp, IpNumber,
    Ipv4Header, TcpHeader, TcpOptionElement, UdpHeader,
};

/// How much of each frame a capture keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snap {
    /// Headers only (Ethernet, IP, TCP with options / UDP / ICMP).
    Headers,
    /// At most this many bytes (the payload is zeros).
    Bytes(u32),
}

impl Snap {
    /// `0` means headers only, as the `snaplen` knob spells it.
    pub fn from_knob(n: u32) -> Snap {
        if n == 0 {
            Snap::Headers
        } else {
            Snap::Bytes(n)
        }
    }

    /// The pcap file header's snap length for this setting.
    pub fn file_snaplen(self) -> u32 {
        match self {
            Snap::Headers => 65535,
            Snap::Bytes(n) => n,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Fields {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub ttl: u8,
    /// 6-bit DiffServ code point.
    pub dscp: u8,
    pub id: u16,
}

/// TCP options of one segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// SYN only.
    pub mss: Option<u16>,
    /// SYN only.
    pub sack_permitted: bool,
    /// SYN only: the shift offered.
    pub wscale: Option<u8>,
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks [left, right) on the wire (at most 4; 3 with timestamps).
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFields {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub syn: bool,
    pub ack_flag: bool,
    pub fin: bool,
    /// The window field as sent (already shifted).
    pub window: u16,
    pub options: TcpOptions,
    pub payload_len: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    Tcp(TcpFields),
    Udp {
        sport: u16,
        dport: u16,
        payload_len: u32,
    },
    IcmpEcho {
        reply: bool,
        id: u16,
        seq: u16,
        payload_len: u32,
    },
}

/// Builds frames; holds the zero payload the checksums are computed over.
#[derive(Default)]
pub struct FrameBuilder {
    zeros: Vec<u8>,
}

/// The largest IPv4 payload (the total length field is 16 bits).
const MAX_IP_PAYLOAD: u32 = 65535 - 20;

impl FrameBuilder {
    fn zeros(&mut self, n: u32) -> &[u8] {
        if self.zeros.len() < n as usize {
            self.zeros.resize(n as usize, 0);
        }
        &self.zeros[..n as usize]
    }

    /// Writes the captured bytes of the frame into `out` (cleared first)
    /// and returns the frame's length on the wire. A payload too large for
    /// IPv4 is cut to fit (simulated TCP never sends one).
    pub fn build(&mut self, ip: &Ipv4Fields, l4: &L4, snap: Snap, out: &mut Vec<u8>) -> u32 {
        out.clear();
        let eth = Ethernet2Header {
            source: ip.src_mac,
            destination: ip.dst_mac,
            ether_type: EtherType::IPV4,
        };
        out.extend_from_slice(&eth.to_bytes());
        let ih = |proto: IpNumber, l4_len: u32| {
            let mut h = Ipv4Header::new(l4_len as u16, ip.ttl, proto, ip.src, ip.dst)
                .expect("payload length bounded above");
            h.dscp = IpDscp::try_new(ip.dscp & 0x3f).expect("6 bits");
            h.identification = ip.id;
            h.dont_fragment = proto == IpNumber::TCP;
            h.header_checksum = h.calc_header_checksum();
            h
        };
        let payload_len;
        match *l4 {
            L4::Tcp(t) => {
                let mut h = TcpHeader::new(t.sport, t.dport, t.seq, t.window);
                h.syn = t.syn;
                h.ack = t.ack_flag;
                h.fin = t.fin;
                h.acknowledgment_number = if t.ack_flag { t.ack } else { 0 };
                h.set_options(&tcp_options(&t.options))
                    .expect("at most 40 option bytes by construction");
                payload_len = t.payload_len.min(MAX_IP_PAYLOAD - h.header_len() as u32);
                let iph = ih(IpNumber::TCP, h.header_len() as u32 + payload_len);
                h.checksum = h
                    .calc_checksum_ipv4(&iph, self.zeros(payload_len))
                    .expect("length bounded above");
                out.extend_from_slice(&iph.to_bytes());
                out.extend_from_slice(&h.to_bytes());
            }
            L4::Udp {
                sport,
                dport,
                payload_len: n,
            } => {
                payload_len = n.min(MAX_IP_PAYLOAD - 8);
                let iph = ih(IpNumber::UDP, 8 + payload_len);
                let h = UdpHeader::with_ipv4_checksum(sport, dport, &iph, self.zeros(payload_len))
                    .expect("length bounded above");
                out.extend_from_slice(&iph.to_bytes());
                out.extend_from_slice(&h.to_bytes());
            }
            L4::IcmpEcho {
                reply,
                id,
                seq,
                payload_len: n,
            } => {
                payload_len = n.min(MAX_IP_PAYLOAD - 8);
                let echo = IcmpEchoHeader { id, seq };
                let ty = if reply {
                    Icmpv4Type::EchoReply(echo)
                } else {
                    Icmpv4Type::EchoRequest(echo)
                };
                let iph = ih(IpNumber::ICMP, 8 + payload_len);
                let h = Icmpv4Header::with_checksum(ty, self.zeros(payload_len));
                out.extend_from_slice(&iph.to_bytes());
                out.extend_from_slice(&h.to_bytes());
            }
        }
        let wire = out.len() as u32 + payload_len;
        match snap {
            Snap::Headers => {}
            Snap::Bytes(n) => {
                let keep = wire.min(n.max(1)) as usize;
                if keep <= out.len() {
                    out.truncate(keep);
                } else {
                    out.resize(keep, 0);
                }
            }
        }
        wire
    }
}

/// The option list in Linux's order (see the module doc).
fn tcp_options(o: &TcpOptions) -> Vec<TcpOptionElement> {
    use TcpOptionElement::*;
    let mut v = Vec::with_capacity(8);
    if let Some(mss) = o.mss {
        v.push(MaximumSegmentSize(mss));
        match (o.sack_permitted, o.timestamps) {
            (true, Some((a, b))) => {
                v.push(SelectiveAcknowledgementPermitted);
                v.push(Timestamp(a, b));
            }
            (false, Some((a, b))) => {
                v.extend([Noop, Noop, Timestamp(a, b)]);
            }
            (true, None) => v.extend([Noop, Noop, SelectiveAcknowledgementPermitted]),
            (false, None) => {}
        }
        if let Some(s) = o.wscale {
            v.extend([Noop, WindowScale(s)]);
        }
        return v;
    }
    let max_blocks = if let Some((a, b)) = o.timestamps {
        v.extend([Noop, Noop, Timestamp(a, b)]);
        3
    } else {
        4
    };
    let n = (o.sack_len as usize).min(max_blocks);
    if n > 0 {
        let b = &o.sack[..n];
        let mut rest = [None; 3];
        for (i, x) in b[1..].iter().enumerate() {
            rest[i] = Some(*x);
        }
        v.extend([Noop, Noop, SelectiveAcknowledgement(b[0], rest)]);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{self, L4 as D4};

    fn ip() -> Ipv4Fields {
        Ipv4Fields {
            src_mac: [2, 0x71, 0, 0, 0, 1],
            dst_mac: [2, 0x71, 0, 0, 1, 1],
            src: [10, 77, 0, 1],
            dst: [10, 77, 0, 2],
            ttl: 64,
            dscp: 46,
            id: 7,
        }
    }

    #[test]
    fn a_timestamped_data_segment_is_66_bytes_plus_payload_and_decodes_back() {
        let mut b = FrameBuilder::default();
        let mut out = Vec::new();
        let t = TcpFields {
            sport: 10000,
            dport: 5201,
            seq: 0xffff_fff0,
            ack: 5,
            ack_flag: true,
            window: 512,
            options: TcpOptions {
                timestamps: Some((100, 90)),
                sack: [(1, 2), (3, 4), (5, 6), (7, 8)],
                sack_len: 4,
                ..Default::default()
            },
            payload_len: 1448,
            ..Default::default()
        };
        let wire = b.build(&ip(), &L4::Tcp(t), Snap::Headers, &mut out);
        // 14 + 20 + 20 + 12 (NOP NOP TS) + 28 (NOP NOP SACK ×3) + payload.
        assert_eq!(out.len(), 14 + 20 + 20 + 12 + 28);
        assert_eq!(wire, out.len() as u32 + 1448);
        let d = decode::decode(1, &out).expect("decodes");
        let D4::Tcp(tcp) = d.l4 else { panic!("tcp") };
        assert_eq!(
            (tcp.sport, tcp.dport, tcp.seq, tcp.ack),
            (10000, 5201, 0xffff_fff0, 5)
        );
        assert_eq!(tcp.payload_len, 1448);
    }

    #[test]
    fn syn_options_are_linux_ordered_and_snaplen_cuts() {
        let o = TcpOptions {
            mss: Some(1448),
            sack_permitted: true,
            wscale: Some(7),
            timestamps: Some((1, 0)),
            ..Default::default()
        };
        let raw: Vec<u8> = {
            let mut h = TcpHeader::new(1, 2, 3, 4);
            h.set_options(&tcp_options(&o)).unwrap();
            h.options.as_slice().to_vec()
        };
        assert_eq!(&raw[..4], &[2, 4, 0x05, 0xa8]);
        assert_eq!(&raw[4..6], &[4, 2]);
        assert_eq!(raw[6], 8);
        assert_eq!(&raw[16..20], &[1, 3, 3, 7]);
        let mut b = FrameBuilder::default();
        let mut out = Vec::new();
        let u = L4::Udp {
            sport: 1,
            dport: 2,
            payload_len: 1000,
        };
        assert_eq!(
            b.build(&ip(), &u, Snap::Bytes(100), &mut out),
            14 + 28 + 1000
        );
        assert_eq!(out.len(), 100);
        assert!(decode::decode(1, &out).is_ok());
    }
}
