//! Frame bytes → IP addresses and TCP/UDP header fields, through `etherparse`
//! (lax slicing, so a frame cut short by the snap length still yields its
//! headers). Link types: Ethernet (1, with VLAN tags), Linux cooked SLL (113)
//! and SLL2 (276), raw IP (101, 12, 14, 228, 229), BSD loopback (0, 108).

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};
use std::net::IpAddr;

/// TCP header fields of one segment.
#[derive(Debug, Clone, Copy)]
pub struct Tcp<'a> {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    /// FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10 (RFC 9293 §3.1 bit order).
    pub flags: u8,
    pub window: u16,
    /// Payload length claimed by the IP header (not what the snap length kept).
    pub payload_len: u32,
    pub options: &'a [u8],
}

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

#[derive(Debug, Clone, Copy)]
pub enum L4<'a> {
    Tcp(Tcp<'a>),
    Udp {
        sport: u16,
        dport: u16,
        payload_len: u32,
    },
    Other(u8),
}

#[derive(Debug, Clone, Copy)]
pub struct Decoded<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub l4: L4<'a>,
}

/// Why a frame yields no IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    UnknownLinktype(i32),
    NotIp,
    Malformed,
}

/// Decode one frame of the given link type.
pub fn decode(linktype: i32, data: &[u8]) -> Result<Decoded<'_>, Skip> {
    let sliced = match linktype {
        1 => LaxSlicedPacket::from_ethernet(data).map_err(|_| Skip::Malformed)?,
        113 => {
            // Linux cooked v1: 16-byte header, protocol (EtherType) in bytes 14..16.
            let proto = data.get(14..16).ok_or(Skip::Malformed)?;
            let et = EtherType(u16::from_be_bytes([proto[0], proto[1]]));
            LaxSlicedPacket::from_ether_type(et, &data[16..])
        }
        276 => {
            // Linux cooked v2: 20-byte header, protocol in bytes 0..2.
            if data.len() < 20 {
                return Err(Skip::Malformed);
            }
            let et = EtherType(u16::from_be_bytes([data[0], data[1]]));
            LaxSlicedPacket::from_ether_type(et, &data[20..])
        }
        101 | 12 | 14 | 228 | 229 => LaxSlicedPacket::from_ip(data).map_err(|_| Skip::Malformed)?,
        0 | 108 => {
            // BSD loopback: 4-byte address family (host order for 0, network for 108).
            if data.len() < 4 {
                return Err(Skip::Malformed);
            }
            LaxSlicedPacket::from_ip(&data[4..]).map_err(|_| Skip::Malformed)?
        }
        other => return Err(Skip::UnknownLinktype(other)),
    };
    let (src, dst, l4_len) = match &sliced.net {
        Some(LaxNetSlice::Ipv4(v4)) => {
            let h = v4.header();
            let total = h.total_len() as u32;
            let hdr =
                h.ihl() as u32 * 4 + v4.extensions().auth.map_or(0, |a| a.slice().len() as u32);
            // total_len 0: segmentation offload left it unset; trust the captured bytes.
            let l4 = if total == 0 {
                v4.payload().payload.len() as u32
            } else {
                total.saturating_sub(hdr)
            };
            (
                IpAddr::from(h.source_addr()),
                IpAddr::from(h.destination_addr()),
                l4,
            )
        }
        Some(LaxNetSlice::Ipv6(v6)) => {
            let h = v6.header();
            let plen = h.payload_length() as u32;
            let ext = v6.extensions().slice().len() as u32;
            let l4 = if plen == 0 {
                v6.payload().payload.len() as u32
            } else {
                plen.saturating_sub(ext)
            };
            (
                IpAddr::from(h.source_addr()),
                IpAddr::from(h.destination_addr()),
                l4,
            )
        }
        _ => return Err(Skip::NotIp),
    };
    let proto = match &sliced.net {
        Some(LaxNetSlice::Ipv4(v4)) => v4.payload().ip_number.0,
        Some(LaxNetSlice::Ipv6(v6)) => v6.payload().ip_number.0,
        _ => 0,
    };
    let l4 = match sliced.transport {
        Some(TransportSlice::Tcp(t)) => {
            let hl = t.data_offset() as u32 * 4;
            let b: &[u8] = t.slice();
            let opt_end = (hl as usize).clamp(20, b.len().max(20)).min(b.len());
            Tcp {
                sport: t.source_port(),
                dport: t.destination_port(),
                seq: t.sequence_number(),
                ack: t.acknowledgment_number(),
                flags: b[13],
                window: t.window_size(),
                payload_len: l4_len.saturating_sub(hl),
                options: b.get(20..opt_end).unwrap_or(&[]),
            }
            .into()
        }
        Some(TransportSlice::Udp(u)) => L4::Udp {
            sport: u.source_port(),
            dport: u.destination_port(),
            payload_len: l4_len.saturating_sub(8),
        },
        _ => L4::Other(proto),
    };
    Ok(Decoded { src, dst, l4 })
}

impl<'a> From<Tcp<'a>> for L4<'a> {
    fn from(t: Tcp<'a>) -> Self {
        L4::Tcp(t)
    }
}

/// One TCP option: (kind, data) as the option list walks (kinds 0 and 1 are one byte).
pub fn tcp_options(opts: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut rest = opts;
    std::iter::from_fn(move || {
        let (&kind, tail) = rest.split_first()?;
        if kind <= 1 {
            rest = tail;
            return Some((kind, &[][..]));
        }
        let len = *tail.first()? as usize;
        if len < 2 || len > rest.len() {
            rest = &[];
            return None;
        }
        let data = &rest[2..len];
        rest = &rest[len..];
        Some((kind, data))
    })
}

/// The MSS option's value, if any.
pub fn mss_option(opts: &[u8]) -> Option<u16> {
    tcp_options(opts)
        .find(|(k, d)| *k == 2 && d.len() == 2)
        .map(|(_, d)| u16::from_be_bytes([d[0], d[1]]))
}

/// The window-scale option's shift, if any (RFC 7323 §2.3: capped at 14).
pub fn wscale_option(opts: &[u8]) -> Option<u8> {
    tcp_options(opts)
        .find(|(k, d)| *k == 3 && d.len() == 1)
        .map(|(_, d)| d[0].min(14))
}

/// Whether the timestamps option is present.
pub fn has_timestamps(opts: &[u8]) -> bool {
    tcp_options(opts).any(|(k, _)| k == 8)
}

/// SACK blocks (RFC 2018) as (left, right) edges; `None` if the option is malformed.
pub fn sack_blocks(opts: &[u8]) -> Option<Vec<(u32, u32)>> {
    let (_, d) = tcp_options(opts).find(|(k, _)| *k == 5)?;
    if d.len() % 8 != 0 {
        return None;
    }
    Some(
        d.chunks_exact(8)
            .map(|c| {
                (
                    u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                    u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect(),
    )
}
