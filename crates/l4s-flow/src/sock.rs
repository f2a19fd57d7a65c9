//! UDP sockets that set the IP-ECN codepoint per datagram and read it back: the syscall edge.
//! Send: `sendmsg` with an IP_TOS (IPv4, v4-mapped) or IPV6_TCLASS control message (ip(7),
//! ipv6(7)); receive: `recvmmsg` batches with IP_RECVTOS / IPV6_RECVTCLASS and SO_RXQ_OVFL.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use l4s_core::Ecn;

use crate::error::FlowError;

/// Largest datagram we read (an l4s-flow datagram fits 1500-byte MTUs; larger ones are foreign).
pub const RECV_BUF_BYTES: usize = 2048;
/// Datagrams read per `recvmmsg` call.
pub const BATCH: usize = 32;
const CMSG_BUF_BYTES: usize = 128;
/// Socket buffer size asked for (the kernel caps it at net.core.[rw]mem_max unless root).
const SOCK_BUF_BYTES: libc::c_int = 8 << 20;

/// A non-blocking UDP socket with per-datagram ECN.
pub struct EcnSocket {
    sock: UdpSocket,
    ipv6: bool,
    /// Datagrams the kernel dropped because our receive buffer was full (SO_RXQ_OVFL).
    pub rx_overflow: u64,
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller; the option value is a live c_int
    // whose size we pass, as setsockopt(2) requires.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Peer address as the user knows it: v4-mapped IPv6 addresses shown as IPv4.
pub fn canonical(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, v6.port())),
            None => a,
        },
        v4 => v4,
    }
}

fn sockaddr_to_std(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in; sockaddr_storage is
            // large and aligned enough for it.
            let sin: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6: &libc::sockaddr_in6 =
                unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

fn std_to_sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for a sockaddr_in.
            let sin: &mut libc::sockaddr_in =
                unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6: &mut libc::sockaddr_in6 =
                unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_flowinfo = v6.flowinfo();
            sin6.sin6_scope_id = v6.scope_id();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// One received datagram in a [`RecvBatch`].
pub struct Received<'a> {
    /// The UDP payload.
    pub data: &'a [u8],
    /// Sender address (v4-mapped addresses canonicalised to IPv4).
    pub from: SocketAddr,
    /// IP-ECN codepoint read from the IP header; None when the kernel gave no TOS/TCLASS.
    pub ecn: Option<Ecn>,
    /// The datagram was longer than our buffer (certainly not ours).
    pub truncated: bool,
}

/// Buffers for one `recvmmsg` batch.
pub struct RecvBatch {
    bufs: Vec<[u8; RECV_BUF_BYTES]>,
    addrs: Vec<libc::sockaddr_storage>,
    cmsgs: Vec<[u64; CMSG_BUF_BYTES / 8]>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    n: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBatch {
    /// Buffers for [`BATCH`] datagrams.
    pub fn new() -> Self {
        RecvBatch {
            bufs: vec![[0u8; RECV_BUF_BYTES]; BATCH],
            // SAFETY: plain old data; all-zero is valid.
            addrs: vec![unsafe { zeroed() }; BATCH],
            cmsgs: vec![[0u64; CMSG_BUF_BYTES / 8]; BATCH],
            iovs: Vec::with_capacity(BATCH),
            hdrs: Vec::with_capacity(BATCH),
            n: 0,
        }
    }
    /// Datagrams in the last batch.
    pub fn len(&self) -> usize {
        self.n
    }
    /// The last batch held no datagram.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl EcnSocket {
    /// Bind to `addr` and enable ECN reception. Errors name the address and what failed.
    pub fn bind(addr: SocketAddr) -> Result<Self, FlowError> {
        let sock = UdpSocket::bind(addr).map_err(|e| FlowError::Bind { addr, source: e })?;
        Self::setup(sock, addr.is_ipv6())
    }

    fn setup(sock: UdpSocket, ipv6: bool) -> Result<Self, FlowError> {
        sock.set_nonblocking(true)
            .map_err(|e| FlowError::io("set O_NONBLOCK", e))?;
        let fd = sock.as_raw_fd();
        let ecn_opt = |level, name, what: &'static str| {
            setsockopt_int(fd, level, name, 1).map_err(|e| FlowError::EcnUnsupported {
                option: what,
                source: e,
            })
        };
        if ipv6 {
            ecn_opt(libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, "IPV6_RECVTCLASS")?;
            // v4-mapped peers of a dual-stack socket report their TOS through IP_RECVTOS.
            ecn_opt(libc::IPPROTO_IP, libc::IP_RECVTOS, "IP_RECVTOS")?;
        } else {
            ecn_opt(libc::IPPROTO_IP, libc::IP_RECVTOS, "IP_RECVTOS")?;
        }
        // Best effort: larger buffers (bursts at high rate) and the overflow counter.
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, SOCK_BUF_BYTES);
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, SOCK_BUF_BYTES);
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, SOCK_BUF_BYTES);
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, SOCK_BUF_BYTES);
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1);
        Ok(EcnSocket {
            sock,
            ipv6,
            rx_overflow: 0,
        })
    }

    /// Connect to `peer` (so ICMP errors such as port unreachable come back as errors).
    pub fn connect(&self, peer: SocketAddr) -> Result<(), FlowError> {
        self.sock
            .connect(peer)
            .map_err(|e| FlowError::Unreachable { peer, source: e })
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr().map(canonical)
    }

    /// The kernel's path MTU to the connected peer (getsockopt IP_MTU / IPV6_MTU, ip(7)):
    /// the route's MTU, or less once PMTU discovery learned it.
    pub fn path_mtu(&self) -> Option<usize> {
        let (level, name) = if self.local_addr().ok()?.is_ipv6() {
            (libc::IPPROTO_IPV6, libc::IPV6_MTU)
        } else {
            (libc::IPPROTO_IP, libc::IP_MTU)
        };
        let mut v: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into the live c_int `v`.
        let r = unsafe {
            libc::getsockopt(
                self.fd(),
                level,
                name,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0 && v > 0).then_some(v as usize)
    }

    /// The file descriptor (for poll).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Send `buf` with IP-ECN codepoint `ecn`, to `to` (None on a connected socket).
    /// WouldBlock means the send buffer is full: retry when the socket is writable.
    pub fn send(&self, buf: &[u8], ecn: Ecn, to: Option<SocketAddr>) -> io::Result<()> {
        // The TOS byte's DSCP bits stay 0 (best effort); only the two ECN bits are set.
        let tos: libc::c_int = ecn.bits() as libc::c_int;
        let v4_path = match to {
            Some(SocketAddr::V4(_)) => true,
            Some(SocketAddr::V6(v6)) => v6.ip().to_ipv4_mapped().is_some(),
            None => match self.sock.peer_addr() {
                Ok(SocketAddr::V6(v6)) => v6.ip().to_ipv4_mapped().is_some(),
                Ok(SocketAddr::V4(_)) => true,
                Err(e) => return Err(e),
            },
        };
        let (level, ty) = if v4_path {
            (libc::IPPROTO_IP, libc::IP_TOS)
        } else {
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
        };
        // A v4 address on a v6 socket must be given as v4-mapped.
        let to = to.map(|a| match (a, self.ipv6) {
            (SocketAddr::V4(v4), true) => {
                SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0))
            }
            _ => a,
        });
        let mut cbuf = [0u64; CMSG_BUF_BYTES / 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        let mut dst = to.map(|a| std_to_sockaddr(&a));
        if let Some((ss, len)) = dst.as_mut() {
            msg.msg_name = (ss as *mut libc::sockaddr_storage).cast();
            msg.msg_namelen = *len;
        }
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE only computes a size.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as _;
        // SAFETY: msg_control points at `cbuf` (aligned for cmsghdr, larger than CMSG_SPACE of
        // one int), so CMSG_FIRSTHDR is non-null and the header and data fit inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = level;
            (*c).cmsg_type = ty;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::c_int, tos);
        }
        // SAFETY: every pointer in `msg` refers to a live local buffer of the stated length.
        let r = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, 0) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Read up to [`BATCH`] datagrams without blocking; Ok(0) when none is waiting.
    pub fn recv_batch(&mut self, b: &mut RecvBatch) -> io::Result<usize> {
        b.iovs.clear();
        b.hdrs.clear();
        b.n = 0;
        for i in 0..BATCH {
            b.iovs.push(libc::iovec {
                iov_base: b.bufs[i].as_mut_ptr().cast(),
                iov_len: RECV_BUF_BYTES,
            });
        }
        for i in 0..BATCH {
            // SAFETY: mmsghdr is plain old data; all-zero is valid.
            let mut h: libc::mmsghdr = unsafe { zeroed() };
            h.msg_hdr.msg_name = (&mut b.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut b.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = b.cmsgs[i].as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = CMSG_BUF_BYTES as _;
            b.hdrs.push(h);
        }
        // SAFETY: the headers point at BATCH live buffers owned by `b` that outlive the call;
        // MSG_DONTWAIT makes it return at once when nothing is queued.
        let r = unsafe {
            libc::recvmmsg(
                self.sock.as_raw_fd(),
                b.hdrs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(0)
            } else {
                Err(e)
            };
        }
        b.n = r as usize;
        // SO_RXQ_OVFL: the latest cumulative drop count of the socket.
        for i in 0..b.n {
            if let Some(d) = cmsg_scan(&b.hdrs[i].msg_hdr).1 {
                self.rx_overflow = self.rx_overflow.max(d as u64);
            }
        }
        Ok(b.n)
    }

    /// Datagram `i` of the last batch.
    pub fn received<'a>(&self, b: &'a RecvBatch, i: usize) -> Option<Received<'a>> {
        if i >= b.n {
            return None;
        }
        let h = &b.hdrs[i];
        let from = canonical(sockaddr_to_std(&b.addrs[i])?);
        let len = (h.msg_len as usize).min(RECV_BUF_BYTES);
        Some(Received {
            data: &b.bufs[i][..len],
            from,
            ecn: cmsg_scan(&h.msg_hdr).0,
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        })
    }
}

/// The TOS/TCLASS and SO_RXQ_OVFL values in a received message's control data.
fn cmsg_scan(m: &libc::msghdr) -> (Option<Ecn>, Option<u32>) {
    let mut ecn = None;
    let mut ovfl = None;
    // SAFETY: `m` is a msghdr filled by recvmmsg whose control buffer is live; the CMSG_*
    // macros stay within msg_controllen, and each data read matches the type's size.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(m);
        while !c.is_null() {
            let lvl = (*c).cmsg_level;
            let ty = (*c).cmsg_type;
            let data = libc::CMSG_DATA(c);
            let dlen = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
            if lvl == libc::IPPROTO_IP && ty == libc::IP_TOS && dlen >= 1 {
                // IP_TOS arrives as one byte (ip(7)).
                ecn = Some(Ecn::from_bits(*data));
            } else if lvl == libc::IPPROTO_IPV6 && ty == libc::IPV6_TCLASS && dlen >= 4 {
                let v = std::ptr::read_unaligned(data as *const libc::c_int);
                ecn = Some(Ecn::from_bits(v as u8));
            } else if lvl == libc::SOL_SOCKET && ty == libc::SO_RXQ_OVFL && dlen >= 4 {
                ovfl = Some(std::ptr::read_unaligned(data as *const u32));
            }
            c = libc::CMSG_NXTHDR(m, c);
        }
    }
    (ecn, ovfl)
}

/// Wait until one of `fds` is readable (or writable, for those flagged) or `timeout_ns` passes
/// (None = forever). Uses ppoll for nanosecond timeouts; EINTR counts as a wake-up.
pub fn wait(fds: &[(RawFd, bool)], timeout_ns: Option<u64>) -> io::Result<()> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, w)| libc::pollfd {
            fd,
            events: libc::POLLIN | if w { libc::POLLOUT } else { 0 },
            revents: 0,
        })
        .collect();
    let ts = timeout_ns.map(|t| libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds` and `ts` are live for the call; a null sigmask leaves signals unchanged.
    let r = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Unspecified address of the family of `ip`, port 0 (for a client socket).
pub fn any_of_family(ip: &IpAddr) -> SocketAddr {
    match ip {
        IpAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
        IpAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
    }
}
