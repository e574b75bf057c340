//! GSO super-packets (`qoslab emulate --offload on`): the virtio-net header
//! the kernel puts in front of each frame on a PACKET_VNET_HDR socket, and
//! the split of a TCP/IPv4 super-packet into the wire segments it stands
//! for.
//!
//! Why split: a conditioner must count what the wire carries. Linux's tbf
//! does the same for a GSO packet longer than its bucket (`tbf_segment` in
//! net/sched/sch_tbf.c: `skb_gso_segment`, then each segment enqueued and
//! charged on its own), so a 64 KB super-packet is policed, shaped, lost
//! and captured as its ~44 segments — a policer may drop some of them.
//!
//! Layouts: `struct virtio_net_hdr` (include/uapi/linux/virtio_net.h; the
//! packet socket writes it in host byte order, `vio_le()` on little-endian
//! hosts). Segmentation as `tcp_gso_segment` (net/ipv4/tcp_offload.c) and
//! `inet_gso_segment` (net/ipv4/af_inet.c) do it: every segment carries
//! the headers, `gso_size` payload bytes (the last the rest), the sequence
//! number advanced by the payload before it, CWR only on the first, FIN
//! and PSH only on the last, the IPv4 identification incremented per
//! segment, the IPv4 and TCP checksums recomputed.

use crate::frame::{self, ETH_HEADER_BYTES};

/// `sizeof(struct virtio_net_hdr)`.
pub const VNET_HDR_BYTES: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the L4 checksum is left to offload.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`, `_TCPV4`; `_ECN` is a flag bit.
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
const GSO_ECN: u8 = 0x80;

/// The fields of a `struct virtio_net_hdr` this crate reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    /// `gso_type` without the ECN bit.
    pub gso_type: u8,
    pub gso_size: u16,
}

/// Reads a virtio-net header (host byte order, as the packet socket
/// writes it).
pub fn parse_vnet(b: &[u8; VNET_HDR_BYTES]) -> VnetHdr {
    VnetHdr {
        flags: b[0],
        gso_type: b[1] & !GSO_ECN,
        gso_size: u16::from_ne_bytes([b[4], b[5]]),
    }
}

/// Why a super-packet cannot be split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GsoError {
    /// Not TCP over IPv4 (UDP, IPv6 GSO are not produced by the emulated
    /// hosts' traffic: iperf3 and ping).
    Unsupported,
    /// Headers inconsistent with the bytes, or `gso_size` of 0.
    Malformed,
}

/// Splits TCP/IPv4 super-packet `frame` into segments of at most
/// `gso_size` payload bytes, calling `each` with every segment (a complete
/// wire frame with valid checksums) in order; returns how many.
/// `scratch` is reused between calls.
pub fn segment_tcp4(
    frame: &[u8],
    gso_size: usize,
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(&[u8]),
) -> Result<usize, GsoError> {
    let info = frame::parse(frame).map_err(|_| GsoError::Malformed)?;
    if info.protocol != 6 {
        return Err(GsoError::Unsupported);
    }
    let ip = &frame[ETH_HEADER_BYTES..info.wire_bytes as usize];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
        return Err(GsoError::Malformed); // a fragment cannot be TSO'd
    }
    let doff = usize::from(*ip.get(ihl + 12).ok_or(GsoError::Malformed)? >> 4) * 4;
    let hdr = ihl + doff;
    if doff < 20 || hdr > ip.len() || gso_size == 0 {
        return Err(GsoError::Malformed);
    }
    let payload = &ip[hdr..];
    if payload.is_empty() {
        each(&frame[..info.wire_bytes as usize]);
        return Ok(1);
    }
    let id0 = u16::from_be_bytes([ip[4], ip[5]]);
    let seq0 = u32::from_be_bytes([ip[ihl + 4], ip[ihl + 5], ip[ihl + 6], ip[ihl + 7]]);
    let flags0 = ip[ihl + 13];
    let n = payload.len().div_ceil(gso_size);
    for (i, chunk) in payload.chunks(gso_size).enumerate() {
        scratch.clear();
        scratch.extend_from_slice(&frame[..ETH_HEADER_BYTES + hdr]);
        scratch.extend_from_slice(chunk);
        let s = &mut scratch[ETH_HEADER_BYTES..];
        let total = (hdr + chunk.len()) as u16;
        s[2..4].copy_from_slice(&total.to_be_bytes());
        s[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        let seq = seq0.wrapping_add((i * gso_size) as u32);
        s[ihl + 4..ihl + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = flags0;
        if i > 0 {
            flags &= !0x80; // CWR
        }
        if i + 1 < n {
            flags &= !(0x01 | 0x08); // FIN, PSH
        }
        s[ihl + 13] = flags;
        s[10] = 0;
        s[11] = 0;
        let ck = ip_header_checksum(&s[..ihl]);
        s[10..12].copy_from_slice(&ck.to_be_bytes());
        frame::complete_l4_checksum(scratch);
        each(scratch);
    }
    Ok(n)
}

fn ip_header_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for w in h.chunks(2) {
        sum += (u32::from(w[0]) << 8) | w.get(1).map_or(0, |&x| u32::from(x));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An Ethernet + IPv4 + TCP (32-byte header: timestamps) frame of
    /// `payload` bytes, IPv4 id 7, sequence `seq`, flags `flags`.
    fn tcp_frame(payload: usize, seq: u32, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 32 + payload];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let total = (20 + 32 + payload) as u16;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[4..6].copy_from_slice(&7u16.to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 77, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 77, 0, 2]);
        ip[20..22].copy_from_slice(&40000u16.to_be_bytes());
        ip[22..24].copy_from_slice(&5201u16.to_be_bytes());
        ip[24..28].copy_from_slice(&seq.to_be_bytes());
        ip[32] = 8 << 4;
        ip[33] = flags;
        for (i, b) in ip[52..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        f
    }

    fn sum16(b: &[u8]) -> u32 {
        let mut sum: u32 = 0;
        for w in b.chunks(2) {
            sum += (u32::from(w[0]) << 8) | w.get(1).map_or(0, |&x| u32::from(x));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum
    }

    fn tcp_checksum_ok(f: &[u8]) -> bool {
        let ip = &f[14..];
        let l4 = &ip[20..];
        let mut pseudo = ip[12..20].to_vec();
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&(l4.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(l4);
        sum16(&pseudo) == 0xffff
    }

    #[test]
    fn a_super_packet_becomes_its_wire_segments() {
        // 3000 bytes at gso_size 1448: 1448 + 1448 + 104, PSH|FIN|CWR|ACK.
        let f = tcp_frame(3000, 0xffff_fff0, 0x80 | 0x10 | 0x08 | 0x01);
        let mut segs = Vec::new();
        let n = segment_tcp4(&f, 1448, &mut Vec::new(), |s| segs.push(s.to_vec())).unwrap();
        assert_eq!(n, 3);
        let sizes: Vec<u32> = segs
            .iter()
            .map(|s| frame::parse(s).unwrap().wire_bytes)
            .collect();
        assert_eq!(sizes, vec![1514, 1514, 14 + 52 + 104]);
        let mut payload = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let ip = &s[14..];
            assert_eq!(sum16(&ip[..20]), 0xffff, "IPv4 header checksum");
            assert!(tcp_checksum_ok(s), "TCP checksum of segment {i}");
            assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 7 + i as u16);
            let seq = u32::from_be_bytes([ip[24], ip[25], ip[26], ip[27]]);
            assert_eq!(seq, 0xffff_fff0u32.wrapping_add(1448 * i as u32));
            let fl = ip[33];
            assert_eq!(fl & 0x80 != 0, i == 0, "CWR only first");
            assert_eq!(fl & 0x09 != 0, i == 2, "FIN/PSH only last");
            assert!(fl & 0x10 != 0, "ACK on every segment");
            payload.extend_from_slice(&ip[52..]);
        }
        assert_eq!(payload, f[14 + 52..].to_vec());
    }

    #[test]
    fn non_tcp_and_bad_sizes_are_refused() {
        let mut f = tcp_frame(100, 1, 0x10);
        assert_eq!(
            segment_tcp4(&f, 0, &mut Vec::new(), |_| {}),
            Err(GsoError::Malformed)
        );
        f[14 + 9] = 17;
        assert_eq!(
            segment_tcp4(&f, 1448, &mut Vec::new(), |_| {}),
            Err(GsoError::Unsupported)
        );
    }

    #[test]
    fn vnet_header_fields() {
        let mut b = [0u8; VNET_HDR_BYTES];
        b[0] = F_NEEDS_CSUM;
        b[1] = GSO_TCPV4 | GSO_ECN;
        b[4..6].copy_from_slice(&1448u16.to_ne_bytes());
        let h = parse_vnet(&b);
        assert_eq!((h.flags, h.gso_type, h.gso_size), (1, GSO_TCPV4, 1448));
    }

    proptest! {
        #[test]
        fn segments_carry_the_payload_in_order(payload in 1usize..20_000, mss in 1usize..3000) {
            let f = tcp_frame(payload, 1000, 0x18);
            let mut segs: Vec<Vec<u8>> = Vec::new();
            let n = segment_tcp4(&f, mss, &mut Vec::new(), |s| segs.push(s.to_vec()));
            prop_assert_eq!(n.unwrap(), payload.div_ceil(mss));
            prop_assert_eq!(segs.len(), payload.div_ceil(mss));
            let mut got = Vec::new();
            for s in &segs {
                prop_assert!(s.len() <= 14 + 52 + mss);
                got.extend_from_slice(&s[66..]);
            }
            prop_assert_eq!(&got[..], &f[66..]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), mss in 0usize..100) {
            let mut f = vec![0u8; 12];
            f.extend_from_slice(&[0x08, 0x00]);
            f.extend_from_slice(&bytes);
            let _ = segment_tcp4(&f, mss, &mut Vec::new(), |_| {});
        }
    }
}
