//! Ethernet + IPv4 header parsing: what the router needs (destination
//! address) and what classifiers read (5-tuple, DSCP), from a frame as an
//! AF_PACKET socket hands it over (destination MAC first, no FCS).
//!
//! Layouts: Ethernet II (IEEE 802.3 §3.1.1, EtherType 0x0800 for IPv4),
//! IPv4 header (RFC 791 §3.1), TCP/UDP ports in the first four bytes of
//! the transport header (RFC 9293 §3.1, RFC 768). Every index is checked:
//! a frame of any bytes gives an error, never a panic (proptested).

/// Ethernet II header bytes (no VLAN tag).
pub const ETH_HEADER_BYTES: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;

/// Why a frame cannot be forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Not IPv4 over Ethernet II (ARP, IPv6, VLAN-tagged, runt).
    NotIpv4,
    /// Claims to be IPv4 but the header is inconsistent with the bytes.
    Malformed,
}

/// The fields of one IPv4 frame that routing and classification use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub src_addr: u32,
    pub dst_addr: u32,
    /// TCP/UDP ports of an unfragmented (or first-fragment) datagram; 0
    /// otherwise (ICMP, later fragments, truncated headers).
    pub src_port: u16,
    pub dst_port: u16,
    pub protocol: u8,
    pub dscp: u8,
    /// Bytes as tc counts them on a veth egress: Ethernet header + IP
    /// total length (Ethernet padding of short frames excluded).
    pub wire_bytes: u32,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Parses `frame`.
pub fn parse(frame: &[u8]) -> Result<FrameInfo, FrameError> {
    if be16(frame, 12).ok_or(FrameError::NotIpv4)? != ETHERTYPE_IPV4 {
        return Err(FrameError::NotIpv4);
    }
    let ip = &frame[ETH_HEADER_BYTES..];
    let vihl = *ip.first().ok_or(FrameError::Malformed)?;
    if vihl >> 4 != 4 {
        return Err(FrameError::Malformed);
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    let total = usize::from(be16(ip, 2).ok_or(FrameError::Malformed)?);
    if ihl < 20 || total < ihl || total > ip.len() {
        return Err(FrameError::Malformed);
    }
    let tos = ip[1];
    let frag = be16(ip, 6).ok_or(FrameError::Malformed)?;
    let protocol = ip[9];
    let src_addr = be32(ip, 12).ok_or(FrameError::Malformed)?;
    let dst_addr = be32(ip, 16).ok_or(FrameError::Malformed)?;
    let first_fragment = frag & 0x1fff == 0;
    let l4 = &ip[ihl..total];
    let (src_port, dst_port) = match protocol {
        6 | 17 if first_fragment => match (be16(l4, 0), be16(l4, 2)) {
            (Some(s), Some(d)) => (s, d),
            _ => (0, 0),
        },
        _ => (0, 0),
    };
    Ok(FrameInfo {
        src_addr,
        dst_addr,
        src_port,
        dst_port,
        protocol,
        dscp: tos >> 2,
        wire_bytes: (ETH_HEADER_BYTES + total) as u32,
    })
}

/// Rewrites the DSCP of an IPv4 `frame` (a policer's `set-dscp` action),
/// keeping ECN bits, and updates the header checksum incrementally
/// (RFC 1624 eqn. 3). Frames that are not IPv4 are left alone.
pub fn set_dscp(frame: &mut [u8], dscp: u8) {
    if parse(frame).is_err() {
        return;
    }
    let ip = &mut frame[ETH_HEADER_BYTES..];
    let old_word = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] = (dscp << 2) | (ip[1] & 0x03);
    let new_word = u16::from_be_bytes([ip[0], ip[1]]);
    let hc = u16::from_be_bytes([ip[10], ip[11]]);
    // HC' = ~(~HC + ~m + m')
    let mut sum = u32::from(!hc) + u32::from(!old_word) + u32::from(new_word);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let out = !(sum as u16);
    ip[10..12].copy_from_slice(&out.to_be_bytes());
}

/// Fills in the TCP or UDP checksum of an IPv4 `frame` whose sender left
/// it to checksum offload (the kernel marks such frames
/// `TP_STATUS_CSUMNOTREADY`; the field holds only the pseudo-header sum):
/// the one's-complement sum of the pseudo-header and the segment with the
/// field zeroed (RFC 9293 §3.1, RFC 768; UDP writes 0 as 0xffff). What a
/// NIC would have put on the wire. Returns whether it wrote one.
pub fn complete_l4_checksum(frame: &mut [u8]) -> bool {
    let Ok(info) = parse(frame) else {
        return false;
    };
    let ip = &mut frame[ETH_HEADER_BYTES..info.wire_bytes as usize];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let fragmented = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    let at = match info.protocol {
        6 => 16,
        17 => 6,
        _ => return false,
    };
    let l4_len = ip.len() - ihl;
    if fragmented || l4_len < at + 2 || (info.protocol == 6 && l4_len < 20) {
        return false;
    }
    ip[ihl + at] = 0;
    ip[ihl + at + 1] = 0;
    let mut sum = ones_sum(&ip[12..20]) + u64::from(info.protocol) + l4_len as u64;
    sum += ones_sum(&ip[ihl..]);
    let mut c = !fold(sum);
    if info.protocol == 17 && c == 0 {
        c = 0xffff;
    }
    ip[ihl + at..ihl + at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// The Internet checksum's sum of `b` as 16-bit big-endian words (an odd
/// last byte padded with zero), not yet folded: RFC 1071 §2 (B) lets the
/// sum run in wider words and fold at the end (2^16 ≡ 1 mod 2^16 − 1), so
/// it adds 32-bit words, eight bytes a step, into 64 bits (no overflow
/// below 2^32 steps). `b` must start at an even offset of the summed data.
pub fn ones_sum(b: &[u8]) -> u64 {
    let mut sum: u64 = 0;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        sum += (w >> 32) + (w & 0xffff_ffff);
    }
    for w in chunks.remainder().chunks(2) {
        sum += (u64::from(w[0]) << 8) | w.get(1).map_or(0, |&x| u64::from(x));
    }
    sum
}

/// Folds a [`ones_sum`] to 16 bits (end-around carry).
pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// A 32-bit hash of the 5-tuple (FNV-1a), the `Packet::flow` identity.
pub fn flow_hash(f: &FrameInfo) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |b: &[u8]| {
        for x in b {
            h ^= u32::from(*x);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    eat(&f.src_addr.to_be_bytes());
    eat(&f.dst_addr.to_be_bytes());
    eat(&f.src_port.to_be_bytes());
    eat(&f.dst_port.to_be_bytes());
    eat(&[f.protocol]);
    h
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An Ethernet + IPv4 + UDP frame of `payload` bytes, with a correct
    /// IP header checksum.
    pub fn udp_frame(src: [u8; 4], dst: [u8; 4], dscp: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + payload];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let total = (20 + 8 + payload) as u16;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[1] = dscp << 2;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let ck = ip_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&ck.to_be_bytes());
        ip[20..22].copy_from_slice(&40000u16.to_be_bytes());
        ip[22..24].copy_from_slice(&5201u16.to_be_bytes());
        f
    }

    fn ip_checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for w in h.chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn udp_frame_fields() {
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 2], 46, 100);
        f.extend_from_slice(&[0; 4]); // Ethernet padding is not counted
        let i = parse(&f).unwrap();
        assert_eq!(i.src_addr, 0x0a00_0001);
        assert_eq!(i.dst_addr, 0x0a00_0102);
        assert_eq!((i.src_port, i.dst_port, i.protocol), (40000, 5201, 17));
        assert_eq!(i.dscp, 46);
        assert_eq!(i.wire_bytes, 14 + 128);
    }

    #[test]
    fn non_ipv4_and_broken_headers_are_refused() {
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 2], 0, 10);
        f[12] = 0x86; // IPv6
        f[13] = 0xdd;
        assert_eq!(parse(&f), Err(FrameError::NotIpv4));
        let mut g = udp_frame([10, 0, 0, 1], [10, 0, 1, 2], 0, 10);
        g[14 + 2] = 0x40; // total length beyond the frame
        assert_eq!(parse(&g), Err(FrameError::Malformed));
        assert_eq!(parse(&g[..13]), Err(FrameError::NotIpv4));
    }

    #[test]
    fn set_dscp_keeps_the_header_checksum_valid() {
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 2], 0, 10);
        set_dscp(&mut f, 10);
        assert_eq!(parse(&f).unwrap().dscp, 10);
        assert_eq!(ip_checksum(&f[14..34]), 0);
    }

    #[test]
    fn completed_udp_checksum_verifies_to_zero() {
        let mut f = udp_frame([10, 0, 0, 1], [10, 0, 1, 2], 0, 33);
        for (i, b) in f[42..].iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        f[40] = 0x12; // a partial (pseudo-header) sum, as offload leaves it
        assert!(complete_l4_checksum(&mut f));
        // Verify: the sum over pseudo-header + segment is all ones.
        let ip = &f[14..];
        let mut sum: u32 = 0;
        let mut add = |b: &[u8]| {
            for w in b.chunks(2) {
                sum += (u32::from(w[0]) << 8) | w.get(1).map_or(0, |&x| u32::from(x));
            }
        };
        add(&ip[12..20]);
        add(&[0, 17]);
        add(&(ip.len() as u16 - 20).to_be_bytes());
        add(&ip[20..]);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
        let mut icmp = udp_frame([10, 0, 0, 1], [10, 0, 1, 2], 0, 8);
        icmp[14 + 9] = 1;
        assert!(!complete_l4_checksum(&mut icmp));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
            let mut b = bytes.clone();
            set_dscp(&mut b, 63);
            complete_l4_checksum(&mut b);
        }

        #[test]
        fn ipv4_ethertype_with_arbitrary_rest_never_panics(
            rest in proptest::collection::vec(any::<u8>(), 0..120)
        ) {
            let mut f = vec![0u8; 12];
            f.extend_from_slice(&[0x08, 0x00]);
            f.extend_from_slice(&rest);
            if let Ok(i) = parse(&f) {
                prop_assert!(i.wire_bytes as usize <= f.len());
            }
            complete_l4_checksum(&mut f);
        }

        #[test]
        fn wide_sum_folds_to_the_16_bit_word_sum(
            bytes in proptest::collection::vec(any::<u8>(), 0..3000)
        ) {
            // RFC 1071's definition, one 16-bit word at a time.
            let mut naive: u64 = 0;
            for w in bytes.chunks(2) {
                naive += (u64::from(w[0]) << 8) | w.get(1).map_or(0, |&x| u64::from(x));
            }
            prop_assert_eq!(fold(ones_sum(&bytes)), fold(naive));
        }
    }
}
