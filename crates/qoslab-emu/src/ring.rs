//! AF_PACKET TPACKET_V2 receive and transmit rings (packet(7), the kernel's
//! Documentation/networking/packet_mmap.rst): the ports' fast path.
//!
//! Why rings: per forwarded frame the old recvmmsg/sendmmsg path paid a
//! copy into a socket buffer and a message header walk on both sides; the
//! kernel time per frame, not the userspace loop, bounded the rate (issue
//! 16 measured 7.5 µs of kernel time per frame through a TUN forwarder and
//! 2.3 Gbit/s through V2 rings on this machine). With a receive ring the
//! kernel writes each frame straight into memory mapped here and the loop
//! reads it without a system call; with a transmit ring the loop writes
//! frames into mapped slots and one `send()` hands the whole batch over.
//!
//! TPACKET_V2, not V3: V3 hands frames over per block, and a block that
//! does not fill is retired by a timer of at least 1 ms — latency an
//! emulator of sub-millisecond links cannot add. V2 hands over each frame.
//!
//! Each received frame keeps what the socket path gave: the kernel's
//! receive time (`tp_sec`/`tp_nsec`, CLOCK_REALTIME, the skb's stamp or
//! the time `tpacket_rcv` ran) and `TP_STATUS_CSUMNOTREADY` (the sender
//! left the TCP/UDP checksum to offload).

use crate::gso::{self, Coalesce, Run, SuperPacket, VnetHdr, VNET_HDR_BYTES};
use crate::sys::PacketSocket;
use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A super-packet being rebuilt for the host (`--offload on`), not yet
/// handed to the kernel.
enum Open {
    /// Wire frames joined as GRO would ([`Coalesce`]) in TX slot `.0`.
    Join(usize, Coalesce),
    /// Consecutive segments of one super-packet ([`Run`]): indices only,
    /// written (or sent straight from the super-packet) when closed.
    Run(Run),
}

/// Send buffer of a port's direct socket: room for a few dozen 64 KB
/// super-packets in flight (veth orphans each skb as it forwards it).
const DIRECT_SNDBUF_BYTES: i32 = 16 << 20;

/// `TPACKET_V2` (linux/if_packet.h `enum tpacket_versions`).
const TPACKET_V2: libc::c_int = 1;
/// `TP_STATUS_KERNEL`: the slot belongs to the kernel (RX).
const TP_STATUS_KERNEL: u32 = 0;
/// `TP_STATUS_USER`: a received frame waits in the slot (RX).
const TP_STATUS_USER: u32 = 1;
/// `TP_STATUS_LOSING`: the kernel dropped frames for lack of a slot.
const TP_STATUS_LOSING: u32 = 1 << 2;
/// `TP_STATUS_CSUMNOTREADY` (RX).
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
/// TX statuses.
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 1 << 2;
/// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`: where a TX frame's data
/// starts in its slot (`tp_hdrlen - sizeof(struct sockaddr_ll)` in
/// `tpacket_parse_header`, without PACKET_TX_HAS_OFF).
const TX_DATA_OFFSET: usize = 32;
/// Bytes of one ring (each of RX and TX): 4096 wire-sized frames (about
/// 50 ms at 1 Gbit/s) or 64 super-packets, so that a late wake-up of the
/// loop is absorbed by the ring, not dropped by it.
const RING_BYTES: usize = 8 << 20;

/// Bytes of a PACKET_VNET_HDR socket's RX ring: 256 super-packet slots
/// (64 filled the ring in a loaded 1 flow run and lost frames).
const GSO_RX_RING_BYTES: usize = 32 << 20;

/// Slot geometry: (frame bytes, block bytes, blocks) for frames of up to
/// `max_frame` bytes in a ring of `RING_BYTES`.
pub fn geometry(max_frame: usize) -> (usize, usize, usize) {
    geometry_in(max_frame, RING_BYTES)
}

/// Slot geometry in a ring of `ring_bytes`. Frames are a power of two
/// (≥ 2048) so they tile the blocks, which are page multiples
/// (`packet_set_ring`'s checks).
fn geometry_in(max_frame: usize, ring_bytes: usize) -> (usize, usize, usize) {
    // Room for the tpacket2 header, the sockaddr_ll and the MAC alignment
    // `tpacket_rcv` adds in front of the frame (≤ 96 bytes), with slack.
    let frame = (max_frame + 128).next_power_of_two().max(2048);
    let block = frame.max(1 << 16);
    let blocks = (ring_bytes / block).max(4);
    (frame, block, blocks)
}

/// The mapping of one socket's RX and TX rings (RX first, then TX, as the
/// kernel lays them out in one mmap).
struct Mapping {
    sock: PacketSocket,
    base: NonNull<u8>,
    bytes: usize,
    /// (frame bytes, frames) of the RX and of the TX ring.
    rx: (usize, usize),
    tx: (usize, usize),
    /// Where the TX ring starts in the mapping.
    tx_at: usize,
    vnet: bool,
}

impl Mapping {
    fn offset(&self, tx: bool, i: usize) -> usize {
        if tx {
            self.tx_at + i * self.tx.0
        } else {
            i * self.rx.0
        }
    }

    fn frames(&self, tx: bool) -> usize {
        if tx {
            self.tx.1
        } else {
            self.rx.1
        }
    }

    /// The tpacket2 header status word of RX (`tx = false`) or TX slot `i`.
    fn status(&self, tx: bool, i: usize) -> &AtomicU32 {
        let at = self.offset(tx, i);
        // SAFETY: `at` is inside the mapping (i < frames) and slot starts
        // are 16-byte aligned; `tp_status` is the header's first u32, which
        // the kernel also accesses as a whole word.
        unsafe { &*(self.base.as_ptr().add(at) as *const AtomicU32) }
    }

    fn slot(&self, tx: bool, i: usize) -> *mut u8 {
        let at = self.offset(tx, i);
        // SAFETY: inside the mapping, as above.
        unsafe { self.base.as_ptr().add(at) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`bytes` are the mapping mmap returned.
        unsafe { libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.bytes) };
    }
}

fn set_opt<T>(fd: RawFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a valid value of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            opt,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Largest frame a GSO super-packet makes: 64 KB of IPv4 + Ethernet.
const GSO_MAX_FRAME: usize = 65_535 + crate::frame::ETH_HEADER_BYTES;

fn req(max_frame: usize, ring_bytes: usize) -> libc::tpacket_req {
    let (frame, block, blocks) = geometry_in(max_frame, ring_bytes);
    libc::tpacket_req {
        tp_block_size: block as u32,
        tp_block_nr: blocks as u32,
        tp_frame_size: frame as u32,
        tp_frame_nr: (block / frame * blocks) as u32,
    }
}

/// Opens `ifname` with an RX and a TX ring for frames of up to its MTU +
/// the Ethernet header; returns the two halves (the loop reads one and
/// writes the other).
///
/// `vnet`: PACKET_VNET_HDR (`--offload on`): each received frame comes
/// with its virtio-net header (GSO type and size), RX slots hold 64 KB
/// super-packets, and each sent frame carries a header (all zero for a
/// wire frame with complete checksums; a GSO header for a super-packet,
/// joined or forwarded whole).
pub fn open(ifname: &str, vnet: bool) -> Result<(RxRing, TxRing), String> {
    let (m, max_frame) = map(ifname, vnet, true)?;
    Ok((
        RxRing {
            m: m.clone(),
            next: 0,
            losing: false,
        },
        TxRing::of(m, max_frame, direct(ifname, vnet)?),
    ))
}

/// `--offload on`: a port's second, ring-less socket (protocol 0: it
/// receives nothing) with virtio-net headers, through which a super-packet
/// forwarded whole is sent straight from its buffer. A packet socket with
/// a TX ring sends only from the ring (`packet_sendmsg` → `tpacket_snd`,
/// net/packet/af_packet.c), and `tpacket_snd` hangs the slot's pages on
/// the skb as zero-copy frags, so the veth (`__dev_forward_skb` →
/// `skb_orphan_frags_rx`, net/core/dev.c) copies all 64 KB again
/// (`skb_copy_ubufs`) after this crate copied them into the slot. From a
/// ring-less socket (`packet_snd`) the kernel copies the bytes once into
/// pages of its own, which veth forwards as they are.
fn direct(ifname: &str, vnet: bool) -> Result<Option<PacketSocket>, String> {
    if !vnet {
        return Ok(None);
    }
    let sock = PacketSocket::open_as(ifname, DIRECT_SNDBUF_BYTES, false)?;
    set_opt(sock.raw_fd(), libc::PACKET_VNET_HDR, &1 as &libc::c_int)
        .map_err(|e| format!("interface '{ifname}': PACKET_VNET_HDR: {e}"))?;
    Ok(Some(sock))
}

/// A transmit ring alone on `ifname` (its socket receives nothing): a
/// forwarder thread delivering to a port that another thread reads.
pub fn open_tx(ifname: &str, vnet: bool) -> Result<TxRing, String> {
    let (m, max_frame) = map(ifname, vnet, false)?;
    Ok(TxRing::of(m, max_frame, direct(ifname, vnet)?))
}

fn map(ifname: &str, vnet: bool, receive: bool) -> Result<(Rc<Mapping>, usize), String> {
    // The socket path's options carry over: PACKET_IGNORE_OUTGOING, the
    // receive time stamps (SO_TIMESTAMPNS turns on the kernel's receive
    // stamping, which tpacket_rcv reports), buffers for the kernel tests.
    let sock = PacketSocket::open_as(ifname, 1 << 20, receive)?;
    let fd = sock.raw_fd();
    let max_frame = sock.mtu as usize + crate::frame::ETH_HEADER_BYTES;
    let err = |what: &str, e: io::Error| format!("interface '{ifname}': {what}: {e}");
    if vnet {
        // Before the rings: the kernel refuses it once they exist.
        set_opt(fd, libc::PACKET_VNET_HDR, &1 as &libc::c_int)
            .map_err(|e| err("PACKET_VNET_HDR", e))?;
    }
    set_opt(fd, libc::PACKET_VERSION, &TPACKET_V2).map_err(|e| err("PACKET_VERSION", e))?;
    // A TX frame the kernel cannot parse is skipped (status WRONG_FORMAT)
    // instead of stopping the whole batch.
    set_opt(fd, libc::PACKET_LOSS, &1 as &libc::c_int).map_err(|e| err("PACKET_LOSS", e))?;
    let rx = if !receive {
        // SAFETY: all-zero is a valid (empty) tpacket_req.
        unsafe { std::mem::zeroed() }
    } else if vnet {
        req(GSO_MAX_FRAME, GSO_RX_RING_BYTES)
    } else {
        req(max_frame, RING_BYTES)
    };
    // With virtio-net headers the TX slots hold rebuilt super-packets.
    let tx = if vnet {
        req(GSO_MAX_FRAME + VNET_HDR_BYTES, 2 * RING_BYTES)
    } else {
        req(max_frame, RING_BYTES)
    };
    if receive {
        set_opt(fd, libc::PACKET_RX_RING, &rx).map_err(|e| err("PACKET_RX_RING", e))?;
    }
    set_opt(fd, libc::PACKET_TX_RING, &tx).map_err(|e| err("PACKET_TX_RING", e))?;
    let ring_bytes = |r: &libc::tpacket_req| (r.tp_block_size * r.tp_block_nr) as usize;
    let bytes = ring_bytes(&rx) + ring_bytes(&tx);
    // SAFETY: a fresh shared mapping of the socket's rings.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_LOCKED,
            fd,
            0,
        )
    };
    let p = if p == libc::MAP_FAILED {
        // MAP_LOCKED may exceed RLIMIT_MEMLOCK; the rings work unlocked.
        // SAFETY: as above.
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    } else {
        p
    };
    if p == libc::MAP_FAILED {
        return Err(err("mmap of the packet rings", io::Error::last_os_error()));
    }
    let m = Rc::new(Mapping {
        sock,
        base: NonNull::new(p as *mut u8).expect("mmap returned a mapping"),
        bytes,
        rx: (rx.tp_frame_size as usize, rx.tp_frame_nr as usize),
        tx: (tx.tp_frame_size as usize, tx.tp_frame_nr as usize),
        tx_at: ring_bytes(&rx),
        vnet,
    });
    Ok((m, max_frame))
}

/// One received frame, in its ring slot until [`RxRing::release`].
pub struct RxFrame<'a> {
    /// The captured bytes (`tp_snaplen`), writable (checksum completion).
    pub data: &'a mut [u8],
    /// The frame's real length (`tp_len`; larger than `data` when the
    /// slot truncated it).
    pub len: usize,
    /// Kernel receive time, CLOCK_REALTIME ns (0 if none).
    pub stamp_ns: u64,
    /// The TCP/UDP checksum was left to offload.
    pub csum_not_ready: bool,
    /// The virtio-net header (PACKET_VNET_HDR sockets only).
    pub vnet: Option<VnetHdr>,
}

/// The receive half.
pub struct RxRing {
    m: Rc<Mapping>,
    next: usize,
    /// The kernel reported a full ring since the last look.
    pub losing: bool,
}

impl RxRing {
    pub fn raw_fd(&self) -> RawFd {
        self.m.sock.raw_fd()
    }

    pub fn ifname(&self) -> &str {
        &self.m.sock.ifname
    }

    pub fn mtu(&self) -> u32 {
        self.m.sock.mtu
    }

    /// The oldest received frame not yet released, if any.
    pub fn peek(&mut self) -> Option<RxFrame<'_>> {
        let st = self.m.status(false, self.next).load(Ordering::Acquire);
        if st & TP_STATUS_USER == 0 {
            return None;
        }
        self.losing |= st & TP_STATUS_LOSING != 0;
        let slot = self.m.slot(false, self.next);
        // SAFETY: the slot holds a tpacket2_hdr written by the kernel
        // before it set TP_STATUS_USER (acquire above); it is ours until
        // `release`.
        let h = unsafe { &*(slot as *const libc::tpacket2_hdr) };
        let mac = usize::from(h.tp_mac);
        let snap = (h.tp_snaplen as usize).min(self.m.rx.0.saturating_sub(mac));
        // The kernel writes the virtio-net header just before the MAC
        // header (`tpacket_rcv`: `h.raw + macoff - sizeof(vnet_hdr)`).
        let vnet = (self.m.vnet && mac >= VNET_HDR_BYTES).then(|| {
            let mut b = [0u8; VNET_HDR_BYTES];
            // SAFETY: [mac - 10, mac) lies inside the slot.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    slot.add(mac - VNET_HDR_BYTES),
                    b.as_mut_ptr(),
                    b.len(),
                )
            };
            gso::parse_vnet(&b)
        });
        // SAFETY: [mac, mac + snap) lies inside the slot (clamped above).
        let data = unsafe { std::slice::from_raw_parts_mut(slot.add(mac), snap) };
        Some(RxFrame {
            data,
            len: h.tp_len as usize,
            stamp_ns: u64::from(h.tp_sec) * 1_000_000_000 + u64::from(h.tp_nsec),
            csum_not_ready: st & TP_STATUS_CSUMNOTREADY != 0,
            vnet,
        })
    }

    /// Gives the frame [`peek`](Self::peek) returned back to the kernel.
    pub fn release(&mut self) {
        self.m
            .status(false, self.next)
            .store(TP_STATUS_KERNEL, Ordering::Release);
        self.next = (self.next + 1) % self.m.frames(false);
    }

    /// Frames the kernel dropped for lack of a free slot since the last
    /// call (PACKET_STATISTICS `tp_drops`, which the read resets).
    pub fn drops(&self) -> u64 {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for the call.
        let r = unsafe {
            libc::getsockopt(
                self.raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if r < 0 {
            0
        } else {
            u64::from(st.tp_drops)
        }
    }
}

/// The transmit half.
pub struct TxRing {
    m: Rc<Mapping>,
    next: usize,
    /// Frames written since the last flush.
    queued: usize,
    max_frame: usize,
    /// Frames the kernel refused to parse (PACKET_LOSS skipped them).
    pub wrong_format: u64,
    /// `--offload on`: the super-packet being rebuilt.
    open: Option<Open>,
    /// `--offload on`: the ring-less socket whole super-packets go out
    /// through ([`direct`]), and those waiting for the next flush. Every
    /// frame queued in the ring was queued before them (a frame queued
    /// after them sends them first), so a host gets frames in the order
    /// they were delivered.
    direct: Option<PacketSocket>,
    pending: Vec<Run>,
    /// Wire segments dropped after they were accepted: a closing run that
    /// found no free slot, or a whole super-packet the direct socket
    /// refused (ENOBUFS / EAGAIN), as a full device queue drops them.
    pub refused: u64,
    /// Super-packets of ≥ 2 segments handed over, and their segments.
    pub coalesced: u64,
    pub coalesced_segments: u64,
    /// Of those, super-packets handed over as they were read (every
    /// segment delivered, back to back, unchanged).
    pub whole: u64,
}

impl TxRing {
    pub fn mtu(&self) -> u32 {
        self.m.sock.mtu
    }

    fn of(m: Rc<Mapping>, max_frame: usize, direct: Option<PacketSocket>) -> TxRing {
        TxRing {
            m,
            next: 0,
            queued: 0,
            max_frame,
            wrong_format: 0,
            open: None,
            direct,
            pending: Vec::new(),
            refused: 0,
            coalesced: 0,
            coalesced_segments: 0,
            whole: 0,
        }
    }

    /// The bytes after the virtio-net header of TX slot `i`.
    fn frame_room(&mut self, i: usize) -> &mut [u8] {
        let slot = self.m.slot(true, i);
        let room = self.m.tx.0 - TX_DATA_OFFSET - VNET_HDR_BYTES;
        // SAFETY: the slot is ours (written by us, not yet SEND_REQUEST);
        // [TX_DATA_OFFSET + 10, frame size) lies inside it.
        unsafe { std::slice::from_raw_parts_mut(slot.add(TX_DATA_OFFSET + VNET_HDR_BYTES), room) }
    }

    /// Hands the open super-packet (if any) to the kernel's side: a
    /// joined one or a part of a super-packet into its TX slot (headers
    /// and virtio-net header finished, SEND_REQUEST), a whole one to the
    /// direct socket's queue.
    fn close_open(&mut self) -> io::Result<()> {
        let Some(o) = self.open.take() else {
            return Ok(());
        };
        let mut vnet = [0u8; VNET_HDR_BYTES];
        let (i, len, segments) = match o {
            Open::Join(i, c) => {
                c.finish(self.frame_room(i), &mut vnet);
                (i, c.len(), c.segments as usize)
            }
            Open::Run(r) => {
                let n = r.segments();
                if r.whole() && n > 1 && self.direct.is_some() {
                    self.coalesced += 1;
                    self.coalesced_segments += n as u64;
                    self.whole += 1;
                    // Frames queued in the ring were delivered before it.
                    self.send_ring()?;
                    self.pending.push(r);
                    return Ok(());
                }
                let Some(i) = self.take_slot()? else {
                    self.refused += n as u64;
                    return Ok(());
                };
                let Some(len) = r.write(self.frame_room(i), &mut vnet) else {
                    // Cannot happen with the slot geometry (room for
                    // 64 KB); hand back the slot unsent, not garbage.
                    self.next = i;
                    self.queued -= 1;
                    self.refused += n as u64;
                    return Ok(());
                };
                self.whole += u64::from(r.whole() && n > 1);
                (i, len, n)
            }
        };
        if segments > 1 {
            self.coalesced += 1;
            self.coalesced_segments += segments as u64;
        }
        let slot = self.m.slot(true, i);
        // SAFETY: the slot is ours until the status store below.
        unsafe {
            std::ptr::copy_nonoverlapping(vnet.as_ptr(), slot.add(TX_DATA_OFFSET), vnet.len());
            let h = &mut *(slot as *mut libc::tpacket2_hdr);
            h.tp_len = (VNET_HDR_BYTES + len) as u32;
            h.tp_snaplen = h.tp_len;
        }
        self.m
            .status(true, i)
            .store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        Ok(())
    }

    pub fn ifname(&self) -> &str {
        &self.m.sock.ifname
    }

    /// A free slot for the next frame (flushing our own unsent frames
    /// if the ring is full of them), or `None` when there is none.
    fn take_slot(&mut self) -> io::Result<Option<usize>> {
        // Whole super-packets delivered before this frame leave before it.
        self.send_direct()?;
        let mut st = self.m.status(true, self.next).load(Ordering::Acquire);
        if st & !TP_STATUS_WRONG_FORMAT != TP_STATUS_AVAILABLE && self.queued > 0 {
            // Full of our own unsent frames: send them, look again.
            self.send_ring()?;
            st = self.m.status(true, self.next).load(Ordering::Acquire);
        }
        if st == TP_STATUS_WRONG_FORMAT {
            self.wrong_format += 1;
        } else if st != TP_STATUS_AVAILABLE {
            return Ok(None);
        }
        let i = self.next;
        self.next = (self.next + 1) % self.m.frames(true);
        self.queued += 1;
        Ok(Some(i))
    }

    /// Queues `frame`; `false` when no slot is free (every slot waits to
    /// be sent or is still being sent: the frame is dropped, as a full
    /// device queue would).
    pub fn push(&mut self, frame: &[u8]) -> io::Result<bool> {
        if frame.len() > self.max_frame {
            return Ok(false);
        }
        if self.extend_open(|o, ring| match o {
            Open::Join(i, c) => c.append(ring.frame_room(*i), frame),
            _ => false,
        })? {
            return Ok(true);
        }
        let Some(i) = self.take_slot()? else {
            return Ok(false);
        };
        let slot = self.m.slot(true, i);
        let vh = if self.m.vnet { VNET_HDR_BYTES } else { 0 };
        // SAFETY: the slot is ours (AVAILABLE); header + frame fit (the
        // geometry leaves ≥ 128 bytes past them, TX_DATA_OFFSET is 32).
        unsafe {
            let data = slot.add(TX_DATA_OFFSET);
            // An all-zero virtio-net header: no GSO, checksum complete.
            std::ptr::write_bytes(data, 0, vh);
            std::ptr::copy_nonoverlapping(frame.as_ptr(), data.add(vh), frame.len());
            let h = &mut *(slot as *mut libc::tpacket2_hdr);
            h.tp_len = (vh + frame.len()) as u32;
            h.tp_snaplen = (vh + frame.len()) as u32;
        }
        // With virtio-net headers, a TCP data segment may start a
        // super-packet: its slot stays ours until it is closed.
        match Coalesce::start(frame).filter(|_| self.m.vnet) {
            Some(c) => self.open = Some(Open::Join(i, c)),
            None => self
                .m
                .status(true, i)
                .store(TP_STATUS_SEND_REQUEST, Ordering::Release),
        }
        Ok(true)
    }

    /// Offers the next frame to the super-packet still open (one being
    /// joined in its slot, or a run of one super-packet's segments):
    /// `append` gets it and this ring and says whether it took the frame.
    /// When it did not, the open one is closed (handed over) first.
    fn extend_open(
        &mut self,
        append: impl FnOnce(&mut Open, &mut TxRing) -> bool,
    ) -> io::Result<bool> {
        if let Some(mut o) = self.open.take() {
            let taken = append(&mut o, self);
            self.open = Some(o);
            if taken {
                return Ok(true);
            }
            self.close_open()?;
        }
        Ok(false)
    }

    /// Queues wire segment `index` of super-packet `sp`, unchanged since
    /// it was read (`--offload on` only): segments of one super-packet
    /// delivered back to back make one [`Run`], which goes out closed as
    /// one frame — the super-packet as it came in, virtio-net header
    /// included, sent straight from its buffer by the direct socket when
    /// the run is all of it; otherwise its segments copied once into a TX
    /// slot. `false` when it cannot be queued.
    pub fn push_segment(&mut self, sp: &Rc<SuperPacket>, index: usize) -> io::Result<bool> {
        if !self.m.vnet {
            let mut f = Vec::new();
            sp.write_segment(index, &mut f);
            return self.push(&f);
        }
        if self.extend_open(|o, _| match o {
            Open::Run(r) => r.append(sp, index),
            _ => false,
        })? {
            return Ok(true);
        }
        match Run::start(sp, index) {
            Some(r) => self.open = Some(Open::Run(r)),
            None => return Ok(false),
        }
        Ok(true)
    }

    /// Frames queued and not yet flushed.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Hands every queued frame to the kernel: the ring's with one
    /// `send()`, then the whole super-packets with one `sendmmsg()`.
    pub fn flush(&mut self) -> io::Result<()> {
        self.close_open()?;
        self.send_ring()?;
        self.send_direct()
    }

    /// Sends the whole super-packets waiting for the direct socket, one
    /// `sendmmsg()` for all (each message: its virtio-net header and its
    /// bytes as read); one the kernel refuses for lack of room is dropped
    /// and counted (`refused`).
    fn send_direct(&mut self) -> io::Result<()> {
        let Some(sock) = &self.direct else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut iov: Vec<[libc::iovec; 2]> = self
            .pending
            .iter()
            .map(|r| {
                let sp = r.super_packet();
                [
                    libc::iovec {
                        iov_base: sp.vnet().as_ptr() as *mut libc::c_void,
                        iov_len: VNET_HDR_BYTES,
                    },
                    libc::iovec {
                        iov_base: sp.bytes().as_ptr() as *mut libc::c_void,
                        iov_len: sp.bytes().len(),
                    },
                ]
            })
            .collect();
        // SAFETY: all-zero is a valid mmsghdr (no name, no control).
        let mut msgs: Vec<libc::mmsghdr> = (0..iov.len())
            .map(|_| unsafe { std::mem::zeroed() })
            .collect();
        for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
            m.msg_hdr.msg_iov = v.as_mut_ptr();
            m.msg_hdr.msg_iovlen = 2;
        }
        let mut at = 0;
        let mut interrupted = 0;
        // Each round sends at least one message or drops one (or is one of
        // at most 8 interrupted tries).
        while at < msgs.len() {
            // SAFETY: `msgs`, their iovecs and the super-packets they point
            // into (held by `pending`) live across the call.
            let r = unsafe {
                libc::sendmmsg(
                    sock.raw_fd(),
                    msgs[at..].as_mut_ptr(),
                    (msgs.len() - at) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r > 0 {
                at += r as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    self.refused += self.pending[at].segments() as u64;
                    at += 1;
                }
                Some(libc::EINTR) if interrupted < 8 => interrupted += 1,
                _ => {
                    self.pending.clear();
                    return Err(e);
                }
            }
        }
        self.pending.clear();
        Ok(())
    }

    /// Hands every frame queued in the ring to the kernel with one
    /// `send()` (it walks the ring from its own position and sends each
    /// SEND_REQUEST slot).
    fn send_ring(&mut self) -> io::Result<()> {
        if self.queued == 0 {
            return Ok(());
        }
        // SAFETY: a zero-length send on a TX-ring socket: no buffer read.
        let r = unsafe {
            libc::send(
                self.m.sock.raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // Device queue full: the frames stay queued for the next
                // flush (their slots stay SEND_REQUEST).
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => return Ok(()),
                _ => return Err(e),
            }
        }
        self.queued = 0;
        Ok(())
    }
}
