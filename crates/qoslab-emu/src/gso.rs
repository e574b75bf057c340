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
    /// The header as read (forwarded as it came with an unchanged
    /// super-packet).
    pub raw: [u8; VNET_HDR_BYTES],
}

/// Reads a virtio-net header (host byte order, as the packet socket
/// writes it).
pub fn parse_vnet(b: &[u8; VNET_HDR_BYTES]) -> VnetHdr {
    VnetHdr {
        flags: b[0],
        gso_type: b[1] & !GSO_ECN,
        gso_size: u16::from_ne_bytes([b[4], b[5]]),
        raw: *b,
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

/// Where a TCP/IPv4 super-packet's headers are and how it splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// IPv4 header bytes.
    ihl: usize,
    /// Ethernet + IPv4 + TCP header bytes.
    hdr: usize,
    /// Frame bytes (Ethernet header + IPv4 total length).
    len: usize,
    gso_size: usize,
    /// Segments (1 for a super-packet without payload).
    n: usize,
    id0: u16,
    seq0: u32,
    flags0: u8,
}

impl Layout {
    fn of(frame: &[u8], gso_size: usize) -> Result<Layout, GsoError> {
        let info = frame::parse(frame).map_err(|_| GsoError::Malformed)?;
        if info.protocol != 6 {
            return Err(GsoError::Unsupported);
        }
        let len = info.wire_bytes as usize;
        let ip = &frame[ETH_HEADER_BYTES..len];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
            return Err(GsoError::Malformed); // a fragment cannot be TSO'd
        }
        let doff = usize::from(*ip.get(ihl + 12).ok_or(GsoError::Malformed)? >> 4) * 4;
        let hdr = ihl + doff;
        if doff < 20 || hdr > ip.len() || gso_size == 0 {
            return Err(GsoError::Malformed);
        }
        Ok(Layout {
            ihl,
            hdr: ETH_HEADER_BYTES + hdr,
            len,
            gso_size,
            n: (ip.len() - hdr).div_ceil(gso_size).max(1),
            id0: u16::from_be_bytes([ip[4], ip[5]]),
            seq0: u32::from_be_bytes([ip[ihl + 4], ip[ihl + 5], ip[ihl + 6], ip[ihl + 7]]),
            flags0: ip[ihl + 13],
        })
    }

    /// Payload bytes of segments `[i, j)`.
    fn payload(&self, i: usize, j: usize) -> std::ops::Range<usize> {
        let a = (self.hdr + i * self.gso_size).min(self.len);
        let b = (self.hdr + j * self.gso_size).min(self.len);
        a..b
    }

    /// Rewrites `h` (a copy of the super-packet's headers) into the
    /// headers of segments `[i, j)` as one packet, as `tcp_gso_segment` /
    /// `inet_gso_segment` make them: IPv4 length, id advanced per segment,
    /// sequence number advanced by the payload before, CWR only on the
    /// first segment, FIN and PSH only on the last; IPv4 checksum
    /// recomputed (the TCP checksum is the caller's).
    fn rewrite_headers(&self, h: &mut [u8], i: usize, j: usize) {
        let s = &mut h[ETH_HEADER_BYTES..];
        let ihl = self.ihl;
        let total = (self.hdr - ETH_HEADER_BYTES + self.payload(i, j).len()) as u16;
        s[2..4].copy_from_slice(&total.to_be_bytes());
        s[4..6].copy_from_slice(&self.id0.wrapping_add(i as u16).to_be_bytes());
        let seq = self.seq0.wrapping_add((i * self.gso_size) as u32);
        s[ihl + 4..ihl + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = self.flags0;
        if i > 0 {
            flags &= !TCP_CWR;
        }
        if j < self.n {
            flags &= !(TCP_FIN | TCP_PSH);
        }
        s[ihl + 13] = flags;
        s[10] = 0;
        s[11] = 0;
        let ck = ip_header_checksum(&s[..ihl]);
        s[10..12].copy_from_slice(&ck.to_be_bytes());
    }

    /// Writes wire segment `i` of `frame` into `out` (cleared first): the
    /// headers, its payload, both checksums complete.
    fn write_segment(&self, frame: &[u8], i: usize, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&frame[..self.hdr]);
        out.extend_from_slice(&frame[self.payload(i, i + 1)]);
        self.rewrite_headers(out, i, i + 1);
        frame::complete_l4_checksum(out);
    }
}

/// Splits TCP/IPv4 super-packet `frame` into segments of at most
/// `gso_size` payload bytes, calling `each` with every segment (a complete
/// wire frame with valid checksums, built in `scratch`) in order; returns
/// how many.
pub fn segment_tcp4(
    frame: &[u8],
    gso_size: usize,
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(&mut Vec<u8>),
) -> Result<usize, GsoError> {
    let l = Layout::of(frame, gso_size)?;
    for i in 0..l.n {
        l.write_segment(frame, i, scratch);
        each(scratch);
    }
    Ok(l.n)
}

/// A TCP/IPv4 super-packet kept whole, as it was read with its virtio-net
/// header (`--offload on`). The model carries its wire segments as
/// descriptors (this packet and an index; every conditioner sees each
/// segment's own wire length and the headers, which are the same for all
/// but seq/length/flags), and bytes are made for a segment only when
/// something needs them: a capture, a kernel qdisc, a DSCP rewrite, or a
/// delivery that does not carry the whole super-packet ([`Run`]).
#[derive(Debug)]
pub struct SuperPacket {
    bytes: Vec<u8>,
    vnet: [u8; VNET_HDR_BYTES],
    l: Layout,
}

impl SuperPacket {
    /// Copies super-packet `frame` (read with virtio-net header `vnet`)
    /// into `buf` (cleared first; pass a spare buffer to reuse it).
    pub fn new(
        frame: &[u8],
        vnet: &[u8; VNET_HDR_BYTES],
        mut buf: Vec<u8>,
    ) -> Result<SuperPacket, GsoError> {
        let h = parse_vnet(vnet);
        if h.gso_type != GSO_TCPV4 {
            return Err(GsoError::Unsupported);
        }
        let l = Layout::of(frame, usize::from(h.gso_size))?;
        buf.clear();
        buf.extend_from_slice(&frame[..l.len]);
        Ok(SuperPacket {
            bytes: buf,
            vnet: *vnet,
            l,
        })
    }

    /// The super-packet's bytes as read (the TCP checksum field holds
    /// what the sender left in it: the pseudo-header sum).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its virtio-net header as read.
    pub fn vnet(&self) -> &[u8; VNET_HDR_BYTES] {
        &self.vnet
    }

    /// Wire segments.
    pub fn segments(&self) -> usize {
        self.l.n
    }

    /// Bytes of wire segment `i` (Ethernet header + IPv4 total length, as
    /// tc counts them).
    pub fn segment_bytes(&self, i: usize) -> u32 {
        (self.l.hdr + self.l.payload(i, i + 1).len()) as u32
    }

    /// Writes wire segment `i` into `out` (as [`segment_tcp4`] makes it).
    pub fn write_segment(&self, i: usize, out: &mut Vec<u8>) {
        self.l.write_segment(&self.bytes, i, out);
    }
}

/// Segments `[first, next)` of one [`SuperPacket`], delivered to a host back
/// to back (`--offload on`). Only the indices are kept while the run grows:
/// when it closes as the whole super-packet, the super-packet is handed
/// over as it came — its bytes and its virtio-net header, no checksum
/// touched, and with a direct socket not even copied here
/// ([`crate::ring::TxRing`]); otherwise [`Run::write`] copies the run's
/// segments into a transmit slot with their own headers (one segment: a
/// wire frame with complete checksums; more: one GSO packet of them, as
/// [`Coalesce`] makes).
#[derive(Clone, Debug)]
pub struct Run {
    sp: std::rc::Rc<SuperPacket>,
    first: usize,
    next: usize,
}

impl Run {
    /// Starts a run with segment `i` of `sp`; `None` past its last segment.
    pub fn start(sp: &std::rc::Rc<SuperPacket>, i: usize) -> Option<Run> {
        (i < sp.l.n).then(|| Run {
            sp: sp.clone(),
            first: i,
            next: i + 1,
        })
    }

    /// Appends segment `i` of `sp` when it continues the run.
    pub fn append(&mut self, sp: &std::rc::Rc<SuperPacket>, i: usize) -> bool {
        if i != self.next || !std::rc::Rc::ptr_eq(sp, &self.sp) {
            return false;
        }
        self.next += 1;
        true
    }

    /// Segments in the run.
    pub fn segments(&self) -> usize {
        self.next - self.first
    }

    /// The run is the whole super-packet.
    pub fn whole(&self) -> bool {
        self.first == 0 && self.next == self.sp.l.n
    }

    /// The super-packet the run is of.
    pub fn super_packet(&self) -> &SuperPacket {
        &self.sp
    }

    /// Writes the run into `room` (a transmit slot's bytes after the
    /// virtio-net header) and its virtio-net header into `vnet`; returns
    /// the frame's bytes, `None` if it does not fit.
    pub fn write(&self, room: &mut [u8], vnet: &mut [u8; VNET_HDR_BYTES]) -> Option<usize> {
        let l = &self.sp.l;
        let b = &self.sp.bytes;
        if self.whole() {
            room.get_mut(..l.len)?.copy_from_slice(&b[..l.len]);
            *vnet = self.sp.vnet;
            return Some(l.len);
        }
        let p = l.payload(self.first, self.next);
        let len = l.hdr + p.len();
        room.get_mut(..len)?;
        room[..l.hdr].copy_from_slice(&b[..l.hdr]);
        room[l.hdr..len].copy_from_slice(&b[p]);
        l.rewrite_headers(&mut room[..l.hdr], self.first, self.next);
        *vnet = [0; VNET_HDR_BYTES];
        if self.segments() == 1 {
            frame::complete_l4_checksum(&mut room[..len]);
            return Some(len);
        }
        let tcp = ETH_HEADER_BYTES + l.ihl;
        let cwr = room[tcp + 13] & TCP_CWR != 0;
        write_gso_tail(room, len, tcp, l.hdr, l.gso_size, cwr, vnet);
        Some(len)
    }
}

/// The TCP checksum field of a GSO packet of `len` bytes in `head` (the
/// pseudo-header sum, left to the kernel as a TSO sender leaves it) and
/// its virtio-net header: GSO into `gso_size` segments, checksum needed
/// (`VIRTIO_NET_HDR_F_NEEDS_CSUM`), ECN when the first segment has CWR.
fn write_gso_tail(
    head: &mut [u8],
    len: usize,
    tcp: usize,
    hdr: usize,
    gso_size: usize,
    cwr: bool,
    vnet: &mut [u8; VNET_HDR_BYTES],
) {
    let ip = ETH_HEADER_BYTES;
    let l4_len = (len - tcp) as u64;
    let sum = frame::ones_sum(&head[ip + 12..ip + 20]) + 6 + l4_len;
    head[tcp + 16..tcp + 18].copy_from_slice(&frame::fold(sum).to_be_bytes());
    vnet[0] = F_NEEDS_CSUM;
    vnet[1] = GSO_TCPV4 | if cwr { GSO_ECN } else { 0 };
    vnet[2..4].copy_from_slice(&(hdr as u16).to_ne_bytes());
    vnet[4..6].copy_from_slice(&(gso_size as u16).to_ne_bytes());
    vnet[6..8].copy_from_slice(&(tcp as u16).to_ne_bytes());
    vnet[8..10].copy_from_slice(&16u16.to_ne_bytes());
}

fn ip_header_checksum(h: &[u8]) -> u16 {
    !frame::fold(frame::ones_sum(h))
}

/// TCP flag bits.
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
const TCP_CWR: u8 = 0x80;

/// A super-packet being rebuilt on the way out (`--offload on`): wire
/// segments of one TCP flow, consecutive in sequence and in delivery,
/// joined back into one frame the kernel carries as one GSO packet (what
/// GRO does on a NIC's receive path, `tcp_gro_receive` in
/// net/ipv4/tcp_offload.c: same headers and options, contiguous
/// sequence numbers, every segment but the last of the first one's size,
/// PSH ends it). Only the delivery to a host is coalesced: every
/// conditioner, loss draw and capture has seen the segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalesce {
    /// Ethernet + IPv4 + TCP header bytes.
    hdr: usize,
    /// IPv4 header bytes.
    ihl: usize,
    /// Payload of the first segment: every appended one but the last has it.
    pub gso_size: usize,
    /// Payload bytes so far.
    payload: usize,
    next_seq: u32,
    pub segments: u32,
    /// A short or PSH segment ended it.
    closed: bool,
}

/// The headers of a TCP/IPv4 wire frame that may start or extend a
/// super-packet: (IPv4 header bytes, header bytes, payload bytes, seq,
/// flags); `None` for anything else (not TCP, fragments, no payload, SYN /
/// FIN / RST / URG / CWR / ECE).
fn tcp_segment(f: &[u8]) -> Option<(usize, usize, usize, u32, u8)> {
    let info = frame::parse(f).ok()?;
    if info.protocol != 6 {
        return None;
    }
    let ip = &f[ETH_HEADER_BYTES..info.wire_bytes as usize];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
        return None;
    }
    let doff = usize::from(*ip.get(ihl + 12)? >> 4) * 4;
    let hdr = ihl + doff;
    if doff < 20 || hdr >= ip.len() {
        return None;
    }
    let flags = ip[ihl + 13];
    if flags & !(TCP_ACK | TCP_PSH) != 0 || flags & TCP_ACK == 0 {
        return None;
    }
    let seq = u32::from_be_bytes([ip[ihl + 4], ip[ihl + 5], ip[ihl + 6], ip[ihl + 7]]);
    Some((ihl, ETH_HEADER_BYTES + hdr, ip.len() - hdr, seq, flags))
}

impl Coalesce {
    /// Starts a super-packet with wire frame `f` (already copied as the
    /// head), or `None` when `f` cannot be extended.
    pub fn start(f: &[u8]) -> Option<Coalesce> {
        let (ihl, hdr, payload, seq, flags) = tcp_segment(f)?;
        Some(Coalesce {
            hdr,
            ihl,
            gso_size: payload,
            payload,
            next_seq: seq.wrapping_add(payload as u32),
            segments: 1,
            closed: flags & TCP_PSH != 0,
        })
    }

    /// Appends wire frame `next` to the super-packet in `head` (the first
    /// `self.len()` bytes are it, `head.len()` is the room) when it
    /// continues it; `false` (nothing written) otherwise.
    pub fn append(&mut self, head: &mut [u8], next: &[u8]) -> bool {
        if self.closed {
            return false;
        }
        let Some((ihl, hdr, payload, seq, flags)) = tcp_segment(next) else {
            return false;
        };
        let end = self.hdr + self.payload;
        if ihl != self.ihl
            || hdr != self.hdr
            || seq != self.next_seq
            || payload > self.gso_size
            || end + payload > head.len()
            || end + payload - ETH_HEADER_BYTES > 65_535
        {
            return false;
        }
        let (h, n) = (&head[..self.hdr], &next[..self.hdr]);
        let ip = ETH_HEADER_BYTES;
        let tcp = ip + ihl;
        // Same Ethernet header; IPv4 version/IHL/TOS, flags/TTL/protocol,
        // addresses; TCP ports, ACK number, offset, window, options. (The
        // IPv4 length, id and checksum, the sequence number, flags and TCP
        // checksum differ per segment.)
        let same = |a: usize, b: usize| h[a..b] == n[a..b];
        if !(same(0, ip + 2)
            && same(ip + 6, ip + 10)
            && same(ip + 12, tcp)
            && same(tcp, tcp + 4)
            && same(tcp + 8, tcp + 13)
            && same(tcp + 14, tcp + 16)
            && same(tcp + 20, self.hdr))
        {
            return false;
        }
        head[end..end + payload].copy_from_slice(&next[hdr..hdr + payload]);
        self.payload += payload;
        self.segments += 1;
        self.next_seq = seq.wrapping_add(payload as u32);
        head[tcp + 13] |= flags & TCP_PSH;
        self.closed = payload < self.gso_size || flags & TCP_PSH != 0;
        true
    }

    /// Bytes of the super-packet.
    pub fn len(&self) -> usize {
        self.hdr + self.payload
    }

    /// Always false (a super-packet has its head).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Finishes the super-packet in `head[..self.len()]` and writes its
    /// virtio-net header: with one segment, nothing changes (a wire frame,
    /// checksums complete, an all-zero header); with more, the IPv4 length
    /// and checksum are rewritten, the TCP checksum field holds the
    /// pseudo-header sum and the header asks for GSO into `gso_size`
    /// segments with the checksum left to the kernel
    /// (`VIRTIO_NET_HDR_F_NEEDS_CSUM`, as a TSO sender hands it over).
    pub fn finish(&self, head: &mut [u8], vnet: &mut [u8; VNET_HDR_BYTES]) {
        *vnet = [0; VNET_HDR_BYTES];
        if self.segments < 2 {
            return;
        }
        let ip = ETH_HEADER_BYTES;
        let tcp = ip + self.ihl;
        let total = (self.len() - ip) as u16;
        head[ip + 2..ip + 4].copy_from_slice(&total.to_be_bytes());
        head[ip + 10] = 0;
        head[ip + 11] = 0;
        let ck = ip_header_checksum(&head[ip..tcp]);
        head[ip + 10..ip + 12].copy_from_slice(&ck.to_be_bytes());
        write_gso_tail(head, self.len(), tcp, self.hdr, self.gso_size, false, vnet);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An Ethernet + IPv4 + TCP (32-byte header: timestamps) frame of
    /// `payload` bytes, IPv4 id 7, sequence `seq`, flags `flags`.
    pub(crate) fn tcp_frame(payload: usize, seq: u32, flags: u8) -> Vec<u8> {
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

        #[test]
        fn coalescing_the_segments_gives_the_super_packet_back(payload in 1usize..20_000, mss in 500usize..3000) {
            let f = tcp_frame(payload, 77, 0x18);
            let mut segs: Vec<Vec<u8>> = Vec::new();
            segment_tcp4(&f, mss, &mut Vec::new(), |s| segs.push(s.to_vec())).unwrap();
            let mut head = vec![0u8; 70_000];
            head[..segs[0].len()].copy_from_slice(&segs[0]);
            let mut c = Coalesce::start(&segs[0]).unwrap();
            for s in &segs[1..] {
                prop_assert!(c.append(&mut head, s));
            }
            let mut vnet = [0u8; VNET_HDR_BYTES];
            c.finish(&mut head, &mut vnet);
            prop_assert_eq!(c.len(), f.len());
            prop_assert_eq!(c.segments as usize, segs.len());
            // Payload and addresses as the original; re-split, the same segments.
            prop_assert_eq!(&head[66..c.len()], &f[66..]);
            if segs.len() > 1 {
                let v = parse_vnet(&vnet);
                prop_assert_eq!((v.flags, v.gso_type, usize::from(v.gso_size)), (F_NEEDS_CSUM, GSO_TCPV4, mss));
                let mut again: Vec<Vec<u8>> = Vec::new();
                segment_tcp4(&head[..c.len()], mss, &mut Vec::new(), |s| again.push(s.to_vec())).unwrap();
                prop_assert_eq!(again, segs);
            } else {
                prop_assert_eq!(vnet, [0u8; VNET_HDR_BYTES]);
            }
        }
    }

    #[test]
    fn a_gap_another_flow_or_a_push_ends_a_super_packet() {
        let f = tcp_frame(4 * 1448, 1000, 0x10);
        let mut segs: Vec<Vec<u8>> = Vec::new();
        segment_tcp4(&f, 1448, &mut Vec::new(), |s| segs.push(s.to_vec())).unwrap();
        let mut head = vec![0u8; 70_000];
        head[..segs[0].len()].copy_from_slice(&segs[0]);
        let mut c = Coalesce::start(&segs[0]).unwrap();
        assert!(!c.append(&mut head, &segs[2]), "a gap in sequence");
        let mut other = segs[1].clone();
        other[14 + 20] ^= 1; // another source port
        assert!(!c.append(&mut head, &other), "another flow");
        let mut pushed = segs[1].clone();
        pushed[14 + 33] |= TCP_PSH;
        assert!(c.append(&mut head, &pushed));
        assert!(!c.append(&mut head, &segs[2]), "PSH ended it");
        let syn = tcp_frame(10, 1, 0x02);
        assert_eq!(Coalesce::start(&syn), None);
        assert_eq!(Coalesce::start(&tcp_frame(0, 1, 0x10)), None, "a pure ACK");
    }

    /// `frame` as the forwarder reads it: a TSO super-packet with its
    /// virtio-net header.
    fn read_super(frame: &[u8], mss: usize) -> std::rc::Rc<SuperPacket> {
        let mut vnet = [0u8; VNET_HDR_BYTES];
        vnet[0] = F_NEEDS_CSUM;
        vnet[1] = GSO_TCPV4;
        vnet[2..4].copy_from_slice(&66u16.to_ne_bytes());
        vnet[4..6].copy_from_slice(&(mss as u16).to_ne_bytes());
        vnet[6..8].copy_from_slice(&34u16.to_ne_bytes());
        vnet[8..10].copy_from_slice(&16u16.to_ne_bytes());
        std::rc::Rc::new(SuperPacket::new(frame, &vnet, Vec::new()).unwrap())
    }

    /// Runs segments `[i, j)` of `sp` through a slot: (frame, vnet header).
    fn run_of(
        sp: &std::rc::Rc<SuperPacket>,
        i: usize,
        j: usize,
    ) -> (Vec<u8>, [u8; VNET_HDR_BYTES]) {
        let mut room = vec![0xeeu8; 70_000];
        let mut r = Run::start(sp, i).unwrap();
        for k in i + 1..j {
            assert!(r.append(sp, k));
        }
        let mut vnet = [0xffu8; VNET_HDR_BYTES];
        let len = r.write(&mut room, &mut vnet).unwrap();
        assert_eq!(
            r.write(&mut room[..len - 1], &mut vnet),
            None,
            "too small a slot"
        );
        (room[..len].to_vec(), vnet)
    }

    #[test]
    fn a_whole_run_is_the_super_packet_as_it_came() {
        // The sender's pseudo-header sum in the checksum field, CWR and PSH:
        // all forwarded untouched, virtio-net header included.
        let mut f = tcp_frame(44 * 1448, 5, 0x80 | 0x18);
        f[14 + 20 + 16] = 0xab;
        f[14 + 20 + 17] = 0xcd;
        let sp = read_super(&f, 1448);
        let (out, vnet) = run_of(&sp, 0, 44);
        assert_eq!(out, f);
        assert_eq!(&vnet, sp.vnet());
        // Not a run of another super-packet, nor one out of order.
        let other = read_super(&f, 1448);
        let mut r = Run::start(&sp, 0).unwrap();
        assert!(!r.append(&other, 1));
        assert!(!r.append(&sp, 2));
        assert!(r.append(&sp, 1));
        assert!(!r.whole());
        assert!(Run::start(&sp, 44).is_none());
    }

    proptest! {
        #[test]
        fn a_partial_run_is_its_segments(payload in 1usize..20_000, mss in 500usize..3000, a in 0usize..50, b in 0usize..50) {
            let f = tcp_frame(payload, 0xffff_ff00, 0x80 | 0x10 | 0x08 | 0x01);
            let sp = read_super(&f, mss);
            let n = sp.segments();
            let (i, j) = ((a % n).min(b % n), (a % n).max(b % n) + 1);
            prop_assume!(j - i < n);
            let mut segs: Vec<Vec<u8>> = Vec::new();
            segment_tcp4(&f, mss, &mut Vec::new(), |s| segs.push(s.to_vec())).unwrap();
            for (k, s) in segs.iter().enumerate() {
                let mut one = Vec::new();
                sp.write_segment(k, &mut one);
                prop_assert_eq!(&one, s);
                prop_assert_eq!(sp.segment_bytes(k) as usize, s.len());
            }
            let (out, vnet) = run_of(&sp, i, j);
            if j - i == 1 {
                // One segment: the wire frame itself, checksums complete.
                prop_assert_eq!(&out, &segs[i]);
                prop_assert_eq!(vnet, [0u8; VNET_HDR_BYTES]);
            } else {
                // More: one GSO packet the kernel splits into exactly them.
                let v = parse_vnet(&vnet);
                prop_assert_eq!((v.flags, v.gso_type, usize::from(v.gso_size)), (F_NEEDS_CSUM, GSO_TCPV4, mss));
                prop_assert_eq!(vnet[1] & GSO_ECN != 0, i == 0, "ECN with the first segment's CWR");
                prop_assert!(sum16(&out[14..34]) == 0xffff);
                let mut again: Vec<Vec<u8>> = Vec::new();
                segment_tcp4(&out, mss, &mut Vec::new(), |s| again.push(s.to_vec())).unwrap();
                prop_assert_eq!(&again[..], &segs[i..j]);
            }
        }
    }
}
