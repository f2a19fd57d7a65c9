//! TUN devices and interface set-up by ioctl: /dev/net/tun with IFF_TUN | IFF_NO_PI (raw IP
//! packets, no 4-byte header), non-blocking batched reads; see Linux Documentation/networking/tuntap.rst.
//! With offloads, IFF_VNET_HDR + TUNSETOFFLOAD (drivers/net/tun.c `set_offload`): every frame
//! starts with a virtio-net header and reads may return TSO super-packets (see `offload`).

use crate::error::EmuError;
use std::ffi::CString;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Largest frame read from or written to a TUN device: a 64 KiB GSO super-packet plus its
/// virtio-net header (the device MTU is far below this).
pub const MAX_PACKET: usize = 65_536 + crate::offload::VNET_HDR_LEN;

/// Offloads asked for with TUNSETOFFLOAD: partial checksums and TCP segmentation (with CWR).
const OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;

/// The device MTU the emulator configures (the simulator's packets are 1500 bytes too).
pub const MTU: i32 = 1500;

fn last_os_error(what: &str) -> EmuError {
    EmuError::Os {
        what: what.to_string(),
        source: std::io::Error::last_os_error(),
    }
}

fn ifreq_for(name: &str) -> Result<libc::ifreq, EmuError> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(EmuError::Config(format!(
            "interface name {name:?}: 1 to {} bytes",
            libc::IFNAMSIZ - 1
        )));
    }
    // SAFETY: ifreq is plain old data (a name array and a union of integers/sockaddrs);
    // all-zero is a valid value for every field.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// A socket used only as a handle for interface ioctls (SIOCSIF*).
fn ctl_socket(family: libc::c_int) -> Result<OwnedFd, EmuError> {
    // SAFETY: socket() takes no pointers; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_os_error("socket for interface ioctls"));
    }
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl_ifreq(
    fd: RawFd,
    request: libc::c_ulong,
    req: &mut libc::ifreq,
    what: &str,
) -> Result<(), EmuError> {
    // SAFETY: every SIOC*IF* request used here reads/writes one `struct ifreq`, which `req` is.
    let rc = unsafe { libc::ioctl(fd, request as _, req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(last_os_error(what));
    }
    Ok(())
}

fn sockaddr_v4(a: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(a).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size (16 bytes) on Linux; the kernel reads
    // the family field to interpret the rest.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Set the interface up (IFF_UP | IFF_RUNNING added to its flags).
pub fn set_up(name: &str) -> Result<(), EmuError> {
    let sock = ctl_socket(libc::AF_INET)?;
    let mut req = ifreq_for(name)?;
    ioctl_ifreq(
        sock.as_raw_fd(),
        libc::SIOCGIFFLAGS,
        &mut req,
        "SIOCGIFFLAGS",
    )?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    ioctl_ifreq(
        sock.as_raw_fd(),
        libc::SIOCSIFFLAGS,
        &mut req,
        "SIOCSIFFLAGS",
    )
}

/// Give `name` the IPv4 address `addr/prefix` and the MTU; the kernel adds the connected route.
pub fn set_ipv4(name: &str, addr: Ipv4Addr, prefix: u8, mtu: i32) -> Result<(), EmuError> {
    let sock = ctl_socket(libc::AF_INET)?;
    let fd = sock.as_raw_fd();
    let mut req = ifreq_for(name)?;
    req.ifr_ifru.ifru_addr = sockaddr_v4(addr);
    ioctl_ifreq(fd, libc::SIOCSIFADDR, &mut req, "SIOCSIFADDR")?;
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix.min(32)))
    };
    let mut req = ifreq_for(name)?;
    req.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::from(mask));
    ioctl_ifreq(fd, libc::SIOCSIFNETMASK, &mut req, "SIOCSIFNETMASK")?;
    let mut req = ifreq_for(name)?;
    req.ifr_ifru.ifru_mtu = mtu;
    ioctl_ifreq(fd, libc::SIOCSIFMTU, &mut req, "SIOCSIFMTU")
}

/// Add the IPv6 address `addr/prefix` to `name` (SIOCSIFADDR on an AF_INET6 socket).
pub fn set_ipv6(name: &str, addr: Ipv6Addr, prefix: u32) -> Result<(), EmuError> {
    let sock = ctl_socket(libc::AF_INET6)?;
    let mut req = ifreq_for(name)?;
    ioctl_ifreq(
        sock.as_raw_fd(),
        libc::SIOCGIFINDEX,
        &mut req,
        "SIOCGIFINDEX",
    )?;
    // SAFETY: SIOCGIFINDEX filled the ifindex member of the union.
    let ifindex = unsafe { req.ifr_ifru.ifru_ifindex };
    let r6 = libc::in6_ifreq {
        ifr6_addr: libc::in6_addr {
            s6_addr: addr.octets(),
        },
        ifr6_prefixlen: prefix,
        ifr6_ifindex: ifindex,
    };
    // SAFETY: SIOCSIFADDR on an AF_INET6 socket reads one `struct in6_ifreq`, which `r6` is.
    let rc = unsafe {
        libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCSIFADDR as _,
            &r6 as *const libc::in6_ifreq,
        )
    };
    if rc < 0 {
        return Err(last_os_error("SIOCSIFADDR (IPv6)"));
    }
    Ok(())
}

/// Write a sysctl under /proc/sys (of the calling process's network namespace for net.*).
pub fn write_sysctl(path: &str, value: &str) -> Result<(), EmuError> {
    std::fs::write(path, value).map_err(|e| EmuError::Os {
        what: format!("write {path}"),
        source: e,
    })
}

/// An open TUN device (IFF_TUN | IFF_NO_PI, non-blocking, with IFF_VNET_HDR when offloads
/// are on); closing it removes the device.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    vnet: bool,
}

impl Tun {
    /// Create the TUN device `name` in the calling process's network namespace; `offload`:
    /// with IFF_VNET_HDR and checksum/TSO offloads (reads are then virtio-net frames).
    pub fn create(name: &str, offload: bool) -> Result<Tun, EmuError> {
        let path = CString::new("/dev/net/tun").map_err(|e| EmuError::Config(e.to_string()))?;
        // SAFETY: `path` is a valid NUL-terminated string; the result is a new descriptor or -1.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(EmuError::TunDenied(e));
        }
        // SAFETY: fd is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = ifreq_for(name)?;
        let vnet = if offload { libc::IFF_VNET_HDR } else { 0 };
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | vnet) as libc::c_short;
        // SAFETY: TUNSETIFF reads one `struct ifreq` (name + flags), which `req` is.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut req) };
        if rc < 0 {
            return Err(last_os_error("TUNSETIFF"));
        }
        if offload {
            // SAFETY: TUNSETOFFLOAD takes its flags as the integer argument itself.
            let rc = unsafe {
                libc::ioctl(
                    fd.as_raw_fd(),
                    libc::TUNSETOFFLOAD as _,
                    OFFLOADS as libc::c_ulong,
                )
            };
            if rc < 0 {
                return Err(last_os_error("TUNSETOFFLOAD (use --no-offload)"));
            }
        }
        let tun = Tun { fd, vnet: offload };
        tun.set_nonblocking()?;
        Ok(tun)
    }

    /// Wrap a TUN descriptor received from another process; `vnet`: it was opened with
    /// IFF_VNET_HDR.
    pub fn from_fd(fd: OwnedFd, vnet: bool) -> Tun {
        Tun { fd, vnet }
    }

    /// Frames carry a virtio-net header (offloads on).
    pub fn vnet(&self) -> bool {
        self.vnet
    }

    /// The descriptor (for polling and for passing to another process).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Put the descriptor in non-blocking mode (reads return WouldBlock when empty).
    pub fn set_nonblocking(&self) -> Result<(), EmuError> {
        // SAFETY: fcntl F_GETFL/F_SETFL on a descriptor we own; no pointers involved.
        unsafe {
            let fl = libc::fcntl(self.fd.as_raw_fd(), libc::F_GETFL);
            if fl < 0 || libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) < 0
            {
                return Err(last_os_error("fcntl O_NONBLOCK"));
            }
        }
        Ok(())
    }

    /// Read one frame into `buf` (with offloads: virtio-net header + packet); Ok(None) when
    /// none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        // SAFETY: read() writes at most buf.len() bytes into the exclusively borrowed `buf`.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(n as usize))
    }

    /// Write one packet (the kernel delivers it as if received on the interface); with
    /// offloads it goes behind an all-zero virtio-net header (no GSO, checksums complete).
    pub fn write(&self, pkt: &[u8]) -> std::io::Result<usize> {
        let hdr = &crate::offload::VNET_HDR_NONE;
        let iov = [
            libc::iovec {
                iov_base: hdr.as_ptr() as *mut libc::c_void,
                iov_len: hdr.len(),
            },
            libc::iovec {
                iov_base: pkt.as_ptr() as *mut libc::c_void,
                iov_len: pkt.len(),
            },
        ];
        let iov = if self.vnet { &iov[..] } else { &iov[1..] };
        // SAFETY: writev() reads the borrowed header and packet through `iov`, which both
        // outlive the call; the kernel does not write through iov_base.
        let n =
            unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((n as usize).saturating_sub(if self.vnet { hdr.len() } else { 0 }))
    }
}

impl Tun {
    /// Write one whole frame as it is (with offloads: the caller's virtio-net header first).
    pub fn write_frame(&self, frame: &[u8]) -> std::io::Result<usize> {
        // SAFETY: write() reads frame.len() bytes from the borrowed slice.
        let n = unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

/// `struct rtentry` of linux/route.h (not in the libc crate), for SIOCADDRT.
#[repr(C)]
struct RtEntry {
    rt_pad1: libc::c_ulong,
    rt_dst: libc::sockaddr,
    rt_gateway: libc::sockaddr,
    rt_genmask: libc::sockaddr,
    rt_flags: libc::c_ushort,
    rt_pad2: libc::c_short,
    rt_pad3: libc::c_ulong,
    rt_pad4: *mut libc::c_void,
    rt_metric: libc::c_short,
    rt_dev: *mut libc::c_char,
    rt_mtu: libc::c_ulong,
    rt_window: libc::c_ulong,
    rt_irtt: libc::c_ushort,
}

/// Add the IPv4 default route via `gw` on device `dev` (SIOCADDRT, as route(8) does).
pub fn add_default_v4(dev: &str, gw: Ipv4Addr) -> Result<(), EmuError> {
    let sock = ctl_socket(libc::AF_INET)?;
    let name = CString::new(dev).map_err(|e| EmuError::Config(e.to_string()))?;
    let mut rt = RtEntry {
        rt_pad1: 0,
        rt_dst: sockaddr_v4(Ipv4Addr::UNSPECIFIED),
        rt_gateway: sockaddr_v4(gw),
        rt_genmask: sockaddr_v4(Ipv4Addr::UNSPECIFIED),
        rt_flags: libc::RTF_UP | libc::RTF_GATEWAY,
        rt_pad2: 0,
        rt_pad3: 0,
        rt_pad4: std::ptr::null_mut(),
        rt_metric: 0,
        rt_dev: name.as_ptr() as *mut libc::c_char,
        rt_mtu: 0,
        rt_window: 0,
        rt_irtt: 0,
    };
    // SAFETY: SIOCADDRT reads one `struct rtentry` (laid out above as in linux/route.h) and the
    // NUL-terminated device name it points to, which `name` keeps alive for the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCADDRT as _, &mut rt) };
    if rc < 0 {
        return Err(last_os_error("SIOCADDRT (default route)"));
    }
    Ok(())
}
