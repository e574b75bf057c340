//! Linux system calls the forwarder needs: entering a network namespace,
//! AF_PACKET raw sockets bound to one interface (packet(7)), batched
//! receive/send (recvmmsg(2), sendmmsg(2)) and a precise ppoll(2).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Moves the calling thread into network namespace `name`
/// (`/run/netns/NAME`, as `ip netns add` creates it). Only this thread
/// changes namespace (setns(2) acts per thread).
pub fn enter_netns(name: &str) -> Result<(), String> {
    let path = format!("/run/netns/{name}");
    let c = CString::new(path.clone()).map_err(|_| format!("bad namespace name {name:?}"))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(format!("network namespace '{name}' ({path}): {e}"));
    }
    // SAFETY: `fd` was just opened and is owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: plain syscall on a valid fd.
    cvt(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) })
        .map_err(|e| format!("entering network namespace '{name}': {e} (needs root)"))?;
    Ok(())
}

/// Lets timers of this thread fire with 1 ns slack instead of the 50 µs
/// default (prctl(2) PR_SET_TIMERSLACK), so ppoll wakes when asked.
pub fn precise_timers() {
    // SAFETY: plain prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
}

/// Asks for real-time scheduling of this thread (sched(7) SCHED_FIFO,
/// lowest real-time priority) so that busy neighbours on the machine do
/// not delay its wake-ups; `false` when not allowed (the loop still runs,
/// later). The kernel's RT throttling (`sched_rt_runtime_us`) keeps a few
/// percent of each CPU for other tasks.
pub fn realtime_priority() -> bool {
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: plain syscall on this thread (tid 0 = caller).
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Undoes [`realtime_priority`] and [`pin_to_cpu`] for this thread (a
/// helper thread spawned by a forwarder thread inherits both): ordinary
/// scheduling (SCHED_OTHER) on any CPU. Best effort.
pub fn ordinary_scheduling() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscalls on this thread (tid 0 = caller); all-zero is an
    // empty cpu_set_t, filled below for every CPU the machine has.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
        let n = libc::sysconf(libc::_SC_NPROCESSORS_CONF).clamp(1, 1024) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in 0..n {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Pins this thread to CPU `cpu` (sched_setaffinity(2)); `false` when not
/// allowed or no such CPU (the thread then runs wherever it is put).
pub fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: all-zero is an empty cpu_set_t; CPU_SET and the syscall act
    // on this local set and this thread (tid 0 = caller).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// An AF_PACKET SOCK_RAW socket bound to one interface.
pub struct PacketSocket {
    fd: OwnedFd,
    pub ifname: String,
    pub mtu: u32,
}

const ETH_P_ALL: u16 = 0x0003;

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `v` outlives the call; the length matches its type.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

impl PacketSocket {
    /// Opens a non-blocking raw socket on `ifname` receiving every
    /// protocol, ignoring the frames it sends itself
    /// (PACKET_IGNORE_OUTGOING), with `buf_bytes` receive and send buffers
    /// (SO_RCVBUFFORCE / SO_SNDBUFFORCE: root may exceed rmem_max).
    pub fn open(ifname: &str, buf_bytes: i32) -> Result<PacketSocket, String> {
        Self::open_as(ifname, buf_bytes, true)
    }

    /// As [`PacketSocket::open`]; `receive = false` binds with protocol 0
    /// (packet(7): no frame is queued to it), for a socket that only sends
    /// — a forwarder thread's transmit ring on a port another thread reads.
    pub fn open_as(ifname: &str, buf_bytes: i32, receive: bool) -> Result<PacketSocket, String> {
        let err = |what: &str, e: io::Error| format!("interface '{ifname}': {what}: {e}");
        let c = CString::new(ifname).map_err(|_| format!("bad interface name {ifname:?}"))?;
        // SAFETY: `c` is a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if ifindex == 0 {
            return Err(format!(
                "interface '{ifname}' not found in the forwarder's namespace"
            ));
        }
        // Protocol 0 until bound: no frame of another interface is queued.
        // SAFETY: plain syscall.
        let fd = cvt(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        })
        .map_err(|e| err("AF_PACKET socket (needs root / CAP_NET_RAW)", e))?;
        // SAFETY: `fd` is a fresh socket owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            if setsockopt_int(raw, libc::SOL_SOCKET, force, buf_bytes).is_err() {
                setsockopt_int(raw, libc::SOL_SOCKET, plain, buf_bytes)
                    .map_err(|e| err("socket buffer", e))?;
            }
        }
        setsockopt_int(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)
            .map_err(|e| err("PACKET_IGNORE_OUTGOING (Linux >= 4.20)", e))?;
        // The kernel's receive time of each frame (socket(7) SO_TIMESTAMPNS,
        // CLOCK_REALTIME), so a frame is stamped when it arrived, not when
        // a busy loop got round to reading it.
        setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .map_err(|e| err("SO_TIMESTAMPNS", e))?;
        // packet(7) PACKET_AUXDATA: tells which frames still need their
        // checksum (the sender left it to offload).
        setsockopt_int(raw, libc::SOL_PACKET, libc::PACKET_AUXDATA, 1)
            .map_err(|e| err("PACKET_AUXDATA", e))?;
        // SAFETY: all-zero is a valid sockaddr_ll.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = if receive { ETH_P_ALL.to_be() } else { 0 };
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the given length.
        cvt(unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })
        .map_err(|e| err("bind", e))?;
        let mtu = if_mtu(raw, ifname).map_err(|e| err("MTU", e))?;
        Ok(PacketSocket {
            fd,
            ifname: ifname.to_string(),
            mtu,
        })
    }

    /// A second handle on the same socket (dup(2)): one side reads while
    /// the other writes batches.
    pub fn try_clone(&self) -> Result<PacketSocket, String> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| format!("interface '{}': dup: {e}", self.ifname))?;
        Ok(PacketSocket {
            fd,
            ifname: self.ifname.clone(),
            mtu: self.mtu,
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receives up to `bufs.len()` frames without blocking; `lens[i]` is
    /// each frame's real length (MSG_TRUNC: may exceed the buffer),
    /// `stamps[i]` its kernel receive time (CLOCK_REALTIME ns; 0 if none),
    /// `csum[i]` whether its TCP/UDP checksum was left to offload.
    pub fn recv_batch(
        &self,
        bufs: &mut [Vec<u8>],
        lens: &mut [usize],
        stamps: &mut [u64],
        csum: &mut [bool],
    ) -> io::Result<usize> {
        let n = bufs.len().min(lens.len()).min(stamps.len()).min(csum.len());
        let mut control = vec![[0u64; CONTROL_WORDS]; n];
        let mut iov: Vec<libc::iovec> = bufs[..n]
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: all-zero mmsghdrs are valid; each points at one iovec.
        let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
        for ((m, v), c) in msgs.iter_mut().zip(iov.iter_mut()).zip(control.iter_mut()) {
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = c.as_mut_ptr() as *mut libc::c_void;
            m.msg_hdr.msg_controllen = std::mem::size_of_val(c);
        }
        // SAFETY: `msgs` and the buffers they point at live across the call.
        let r = unsafe {
            libc::recvmmsg(
                self.raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        for (i, m) in msgs[..r as usize].iter().enumerate() {
            lens[i] = m.msg_len as usize;
            (stamps[i], csum[i]) = control_data(&m.msg_hdr);
        }
        Ok(r as usize)
    }

    /// Sends one frame without blocking; `Ok(false)` when the kernel
    /// refused it for lack of room (ENOBUFS: a qdisc dropped it; EAGAIN:
    /// the socket's send buffer is full).
    pub fn send(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: `frame` is valid for its length.
        let r = unsafe {
            libc::send(
                self.raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOBUFS) | Some(libc::EAGAIN) => Ok(false),
            _ => Err(e),
        }
    }

    /// Sends `frames` with sendmmsg(2); returns how many the kernel
    /// refused for lack of room (those are dropped).
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut refused = 0;
        let mut at = 0;
        while at < frames.len() {
            let chunk = &frames[at..];
            let mut iov: Vec<libc::iovec> = chunk
                .iter()
                .map(|f| libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                })
                .collect();
            // SAFETY: as in recv_batch.
            let mut msgs: Vec<libc::mmsghdr> = (0..chunk.len())
                .map(|_| unsafe { std::mem::zeroed() })
                .collect();
            for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: `msgs` and the frames live across the call.
            let r = unsafe {
                libc::sendmmsg(
                    self.raw_fd(),
                    msgs.as_mut_ptr(),
                    msgs.len() as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    // The first frame did not fit: drop it, go on.
                    Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                        refused += 1;
                        at += 1;
                    }
                    _ => return Err(e),
                }
            } else {
                at += (r as usize).max(1);
            }
        }
        Ok(refused)
    }
}

/// Control buffer per message, in u64 words (cmsg alignment): room for
/// one SCM_TIMESTAMPNS (32 B) and one PACKET_AUXDATA (40 B).
const CONTROL_WORDS: usize = 16;

/// `TP_STATUS_CSUMNOTREADY` (linux/if_packet.h).
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;

/// The SCM_TIMESTAMPNS of a received message in ns (or 0), and whether
/// its auxdata says the checksum is not ready.
fn control_data(h: &libc::msghdr) -> (u64, bool) {
    let (mut stamp, mut csum) = (0, false);
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled,
    // within `msg_controllen`; payloads are read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let (level, ty) = ((*c).cmsg_level, (*c).cmsg_type);
            if level == libc::SOL_SOCKET && ty == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
            } else if level == libc::SOL_PACKET && ty == libc::PACKET_AUXDATA {
                // tpacket_auxdata begins with `__u32 tp_status`.
                let status = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32);
                csum = status & TP_STATUS_CSUMNOTREADY != 0;
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    (stamp, csum)
}

fn if_mtu(fd: RawFd, ifname: &str) -> io::Result<u32> {
    // SAFETY: all-zero is a valid ifreq.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req
        .ifr_name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the name and writes ifru_mtu.
    cvt(unsafe { libc::ioctl(fd, libc::SIOCGIFMTU, &mut req) })?;
    // SAFETY: the kernel filled the mtu member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
}

/// Waits until one of `fds` is readable or `timeout_ns` passed (ppoll(2));
/// `true` when it returned for the timeout (no fd ready, no signal).
pub fn wait_readable(fds: &mut [libc::pollfd], timeout_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    for f in fds.iter_mut() {
        f.revents = 0;
    }
    // SAFETY: `fds` and `ts` are valid for the call; no signal mask.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    r == 0
}

/// A non-blocking eventfd(2): one forwarder thread wakes another with it.
pub fn eventfd() -> Result<OwnedFd, String> {
    // SAFETY: plain syscall; the fd is owned below.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })
        .map_err(|e| format!("eventfd: {e}"))?;
    // SAFETY: `fd` is a fresh descriptor owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes eventfd `fd` readable (wakes a thread polling it).
pub fn eventfd_kick(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from `one`; a full counter (EAGAIN) is fine.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
}

/// Clears eventfd `fd` (non-blocking).
pub fn eventfd_drain(fd: RawFd) {
    let mut v: u64 = 0;
    // SAFETY: reads at most 8 bytes into `v`; EAGAIN when not kicked.
    unsafe { libc::read(fd, &mut v as *mut u64 as *mut libc::c_void, 8) };
}
