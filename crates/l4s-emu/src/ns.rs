//! Anonymous network (+ PID, + user when unprivileged) namespaces, each owned by a process tree
//! the emulator started, so that nothing outlives it: see unshare(2), pid_namespaces(7), PR_SET_PDEATHSIG.
//!
//! One *side* is: emulator ─fork→ holder (unshare NEWNET|NEWPID[|NEWUSER], PDEATHSIG=KILL)
//! ─fork→ init (PID 1 of the new PID namespace, PDEATHSIG=KILL): it sets up `lo` and a TUN
//! device, hands the TUN descriptor back to the emulator, waits for "go", then runs the
//! command and reaps everything in the namespace. When the emulator dies for any reason (even
//! SIGKILL) the holder is killed, so init is killed, so the kernel kills every process of the PID
//! namespace; the TUN device lives only as long as its descriptor and the network namespace only as
//! long as its processes and that descriptor: no /run/netns name, no interface, no process is left.

use crate::error::EmuError;
use crate::tun::{self, Tun};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;

/// Who runs the command: user and group ids (the invoking user when started with sudo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// What one namespace side looks like.
#[derive(Clone, Debug)]
pub struct SideSpec {
    /// "client" or "server" (in messages).
    pub label: String,
    /// Name of the TUN device inside the namespace.
    pub tun_name: String,
    /// This side's IPv4 address on the TUN device.
    pub addr4: Ipv4Addr,
    /// IPv4 prefix length of the emulated link's subnet.
    pub prefix4: u8,
    /// This side's IPv6 address on the TUN device.
    pub addr6: Ipv6Addr,
    /// IPv6 prefix length.
    pub prefix6: u32,
    /// Default gateway through the TUN device (host mode), if any.
    pub gateway4: Option<Ipv4Addr>,
    /// argv of the command (argv[0] looked up in PATH).
    pub command: Vec<String>,
    /// Environment added for the command.
    pub env: Vec<(String, String)>,
    /// Drop to this user before running the command (None: keep the current ids).
    pub run_as: Option<RunAs>,
    /// Create a user namespace mapping this (outer uid, outer gid) to itself: unprivileged runs.
    pub user_ns: Option<RunAs>,
    /// Open the TUN device with IFF_VNET_HDR and TSO/checksum offloads.
    pub offload: bool,
    /// The namespace's `net.ipv4.tcp_congestion_control` (`crate::tcp_cc`).
    pub tcp_cc: String,
    /// `tcp_cc` was asked for (`--tcp-cc`): a refusal stops the run (else it is a warning).
    pub tcp_cc_required: bool,
    /// Run the command under SCHED_FIFO at this priority (`--rt-priority`).
    pub rt_priority: Option<i32>,
}

/// A running side: the holder process and the TUN descriptor of its namespace.
#[derive(Debug)]
pub struct Side {
    /// The label from the spec.
    pub label: String,
    /// The holder process (in the side's network namespace; parent of its PID 1).
    pub holder: libc::pid_t,
    /// The TUN device inside the side's network namespace.
    pub tun: Tun,
    ctl: UnixStream,
    /// The side's kernel TCP settings at its start ([`tcp_sysctls`] read inside it).
    pub sysctls: Vec<(String, String)>,
    /// Exit status once reaped (as a shell reports it: code, or 128 + signal).
    pub status: Option<i32>,
}

fn os_err(what: &str) -> EmuError {
    EmuError::Os {
        what: what.to_string(),
        source: std::io::Error::last_os_error(),
    }
}

/// Convert a wait status to a shell-style exit code (128 + signal for a killed process).
pub fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Arrange to receive SIGKILL when the parent dies; exit if it already has. `parent` is None
/// for PID 1 of a new PID namespace, whose parent lies outside it (getppid() is 0 there); that
/// process also exits when its control socket closes.
fn die_with_parent(parent: Option<libc::pid_t>) {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number; getppid and _exit take nothing.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        // The parent may have died between fork and prctl: then nobody would kill us.
        if parent.is_some_and(|p| libc::getppid() != p) {
            libc::_exit(1);
        }
    }
}

/// Send one descriptor over a Unix socket (SCM_RIGHTS) with a one-byte payload.
fn send_fd(sock: &UnixStream, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [b'F'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    // Room for one cmsghdr carrying one int, aligned as CMSG_SPACE requires.
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is valid. All pointers below point into live locals
    // (`iov`, `cbuf`) sized as the CMSG_* macros require, and the kernel only reads them.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd);
        if libc::sendmsg(sock.as_raw_fd(), &msg, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receive one descriptor sent by [`send_fd`]; None when the peer closed without sending one.
fn recv_fd(sock: &UnixStream) -> std::io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: as in send_fd; the kernel writes at most msg_controllen bytes into `cbuf` and one
    // byte into `byte`; the received descriptor is new and becomes owned by the OwnedFd.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf);
        let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let c = libc::CMSG_FIRSTHDR(&msg);
        if n == 0 || c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
            return Ok(None);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const RawFd);
        Ok(Some(OwnedFd::from_raw_fd(fd)))
    }
}

/// Build the namespace side's network: `lo` up, the TUN device with its addresses, up.
fn setup_network(spec: &SideSpec) -> Result<Tun, EmuError> {
    tun::set_up("lo")?;
    // The TUN first: a run that cannot have one is refused for that alone, before any
    // warning about the namespace's TCP settings.
    let dev = Tun::create(&spec.tun_name, spec.offload)?;
    if let Err(e) = crate::tcp_cc::set_default(&spec.tcp_cc) {
        let why = format!(
            "the {} namespace refused net.ipv4.tcp_congestion_control = {} ({e}): outside the \
             host's namespace the kernel takes as a default only a congestion control listed in \
             the host-wide net.ipv4.tcp_allowed_congestion_control ({}), which only root can \
             widen",
            spec.label,
            spec.tcp_cc,
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
                .unwrap_or_default()
                .trim()
        );
        if spec.tcp_cc_required {
            return Err(EmuError::Config(format!("--tcp-cc: {why}")));
        }
        eprintln!("l4s-emu: warning: {why}; TCP there runs the inherited default");
    }
    // The link is a point-to-point wire: no duplicate address detection (it would hold the IPv6
    // address tentative for a second) and no router solicitations on it.
    let conf = format!("/proc/sys/net/ipv6/conf/{}", spec.tun_name);
    let have_v6 = std::path::Path::new(&conf).exists();
    if have_v6 {
        tun::write_sysctl(&format!("{conf}/accept_dad"), "0")?;
        let _ = tun::write_sysctl(&format!("{conf}/router_solicitations"), "0");
    }
    tun::set_ipv4(&spec.tun_name, spec.addr4, spec.prefix4, tun::MTU)?;
    tun::set_up(&spec.tun_name)?;
    if have_v6 {
        tun::set_ipv6(&spec.tun_name, spec.addr6, spec.prefix6)?;
    }
    if let Some(gw) = spec.gateway4 {
        tun::add_default_v4(&spec.tun_name, gw)?;
    }
    Ok(dev)
}

/// The kernel TCP settings a command in this network namespace gets: the congestion control
/// (a new namespace inherits the initial one's, see tcp_sk_init) and tcp_ecn (per namespace,
/// default 2: ECN when the peer asks).
pub fn tcp_sysctls() -> Vec<(String, String)> {
    ["tcp_congestion_control", "tcp_ecn"]
        .iter()
        .map(|k| {
            let v = std::fs::read_to_string(format!("/proc/sys/net/ipv4/{k}"))
                .map_or_else(|_| "unknown".to_string(), |v| v.trim().to_string());
            (format!("net.ipv4.{k}"), v)
        })
        .collect()
}

/// Report a set-up error to the emulator: the byte `E` (in place of the descriptor message of
/// [`send_fd`]), then the text.
fn send_error(sock: &mut UnixStream, text: &str) {
    let _ = sock.write_all(b"E");
    let _ = send_msg(sock, text.as_bytes());
}

/// Write `s` as a length-prefixed message.
fn send_msg(sock: &mut UnixStream, s: &[u8]) -> std::io::Result<()> {
    sock.write_all(&(s.len() as u32).to_le_bytes())?;
    sock.write_all(s)
}

fn recv_msg(sock: &mut UnixStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    sock.read_exact(&mut len)?;
    let n = u32::from_le_bytes(len) as usize;
    if n > 1 << 20 {
        return Err(std::io::Error::other("control message too long"));
    }
    let mut v = vec![0u8; n];
    sock.read_exact(&mut v)?;
    Ok(v)
}

/// Body of PID 1 of the side's namespaces; never returns.
fn init_main(spec: &SideSpec, mut ctl: UnixStream) -> ! {
    let code = match setup_network(spec) {
        Ok(dev) => {
            let sent = send_fd(&ctl, dev.fd().as_raw_fd()).and_then(|()| {
                let kv: Vec<String> = tcp_sysctls()
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                send_msg(&mut ctl, kv.join("\n").as_bytes())
            });
            drop(dev);
            if sent.is_err() {
                1
            } else {
                run_command(spec, &mut ctl)
            }
        }
        Err(e) => {
            // The error travels to the emulator, which prints it once.
            send_error(&mut ctl, &e.to_string());
            1
        }
    };
    // SAFETY: _exit ends this forked process without running the parent's destructors.
    unsafe { libc::_exit(code) }
}

/// Wait for "go" (the extra environment), run the command, reap every process until it exits.
fn run_command(spec: &SideSpec, ctl: &mut UnixStream) -> i32 {
    let go = match recv_msg(ctl) {
        Ok(v) => v,
        Err(_) => return 1, // the emulator went away before the start
    };
    let mut cmd = std::process::Command::new(&spec.command[0]);
    cmd.args(&spec.command[1..]);
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    for line in go.split(|&b| b == b'\n') {
        let s = String::from_utf8_lossy(line);
        if let Some((k, v)) = s.split_once('=') {
            cmd.env(k, v);
        }
    }
    if let Some(ids) = spec.run_as {
        cmd.uid(ids.uid).gid(ids.gid);
    }
    if let Some(prio) = spec.rt_priority {
        // Set on this process (still privileged), inherited by the command across the uid
        // change and exec (no SCHED_RESET_ON_FORK), and by everything it starts.
        let param = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: sched_setscheduler reads one sched_param from the live local.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            eprintln!(
                "l4s-emu: warning: --rt-priority {prio}: the {} command runs at normal \
                 priority ({}; needs root or CAP_SYS_NICE)",
                spec.label,
                std::io::Error::last_os_error()
            );
        }
    }
    let init = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child after the uid/gid change (which clears
    // PDEATHSIG, hence here) and only calls async-signal-safe prctl/getppid/_exit.
    unsafe {
        cmd.pre_exec(move || {
            die_with_parent(Some(init));
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c.id() as libc::pid_t,
        Err(e) => {
            eprintln!(
                "l4s-emu: error: cannot run {} command `{}`: {e}",
                spec.label, spec.command[0]
            );
            return 127;
        }
    };
    // PID 1 of a PID namespace adopts every orphan of it: reap them all, stop at our child.
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes one int into `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == child {
            return exit_code(status);
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1;
        }
    }
}

/// Write the user namespace's id maps: the outer ids map to themselves, nothing else exists.
fn map_ids(ids: RunAs) -> Result<(), EmuError> {
    tun::write_sysctl("/proc/self/setgroups", "deny")?;
    tun::write_sysctl("/proc/self/uid_map", &format!("{0} {0} 1\n", ids.uid))?;
    tun::write_sysctl("/proc/self/gid_map", &format!("{0} {0} 1\n", ids.gid))
}

/// Body of the holder process; never returns.
fn holder_main(spec: &SideSpec, ctl: UnixStream, emulator: libc::pid_t) -> ! {
    die_with_parent(Some(emulator));
    let mut flags = libc::CLONE_NEWNET | libc::CLONE_NEWPID;
    if spec.user_ns.is_some() {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: unshare takes flags only; it moves this (single-threaded) process into new namespaces.
    if unsafe { libc::unshare(flags) } < 0 {
        let e = std::io::Error::last_os_error();
        let msg = if spec.user_ns.is_some() {
            format!(
                "cannot create user + network namespaces as an unprivileged user: {e}; run as \
                 root (sudo) or allow unprivileged user namespaces (sysctl user.max_user_namespaces, \
                 kernel.apparmor_restrict_unprivileged_userns=0)"
            )
        } else {
            format!("cannot create network namespaces: {e}; the emulator needs CAP_SYS_ADMIN (run as root)")
        };
        let mut ctl = ctl;
        send_error(&mut ctl, &msg);
        // SAFETY: ends this forked process.
        unsafe { libc::_exit(1) }
    }
    if let Some(ids) = spec.user_ns {
        if let Err(e) = map_ids(ids) {
            let mut ctl = ctl;
            send_error(&mut ctl, &e.to_string());
            // SAFETY: ends this forked process.
            unsafe { libc::_exit(1) }
        }
    }
    // SAFETY: fork in a single-threaded process; the child continues with a copy of our memory.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        die_with_parent(None);
        init_main(spec, ctl);
    }
    drop(ctl);
    let mut code = 1;
    if pid > 0 {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes one int into `status`.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        code = exit_code(status);
    }
    // SAFETY: ends this forked process with init's (so the command's) exit status.
    unsafe { libc::_exit(code) }
}

impl Side {
    /// Start a side: create its namespaces and TUN device; the command waits for [`Side::go`].
    /// Call while the emulator is still single-threaded (it forks).
    pub fn spawn(spec: &SideSpec) -> Result<Side, EmuError> {
        if spec.command.is_empty() {
            return Err(EmuError::Config(format!("{}: empty command", spec.label)));
        }
        let (ours, theirs) = UnixStream::pair().map_err(|e| EmuError::Os {
            what: "socketpair".into(),
            source: e,
        })?;
        let me = std::process::id() as libc::pid_t;
        // SAFETY: the emulator is single-threaded here (documented precondition), so the child
        // may run ordinary Rust code until it execs or _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(os_err("fork"));
        }
        if pid == 0 {
            drop(ours);
            holder_main(spec, theirs, me);
        }
        drop(theirs);
        let mut ours = ours;
        match recv_fd(&ours) {
            Ok(Some(fd)) => {
                let tun = Tun::from_fd(fd, spec.offload);
                tun.set_nonblocking()?;
                let text = recv_msg(&mut ours).unwrap_or_default();
                let sysctls = String::from_utf8_lossy(&text)
                    .lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                Ok(Side {
                    label: spec.label.clone(),
                    holder: pid,
                    tun,
                    sysctls,
                    ctl: ours,
                    status: None,
                })
            }
            _ => {
                // No descriptor: the side sent an error text (or died); report it.
                let text = recv_msg(&mut ours).unwrap_or_default();
                let text = String::from_utf8_lossy(&text).trim().to_string();
                // SAFETY: kill/waitpid on the child we just forked and have not reaped.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    let mut st: libc::c_int = 0;
                    libc::waitpid(pid, &mut st, 0);
                }
                Err(EmuError::Privilege(if text.is_empty() {
                    format!("{}: namespace set-up failed", spec.label)
                } else {
                    text
                }))
            }
        }
    }

    /// Start the command with this extra environment.
    pub fn go(&mut self, env: &[(String, String)]) -> Result<(), EmuError> {
        let mut s = String::new();
        for (k, v) in env {
            s.push_str(k);
            s.push('=');
            s.push_str(v);
            s.push('\n');
        }
        send_msg(&mut self.ctl, s.as_bytes()).map_err(|e| EmuError::Os {
            what: format!("start {} command", self.label),
            source: e,
        })
    }

    /// SIGKILL the holder: its PID 1 and so every process of the side die with it.
    pub fn kill(&self) {
        if self.status.is_none() {
            // SAFETY: kill takes a pid we forked and have not reaped (so it cannot be reused).
            unsafe {
                libc::kill(self.holder, libc::SIGKILL);
            }
        }
    }

    /// Non-blocking check for the holder's exit; records and returns the status.
    pub fn try_reap(&mut self) -> Option<i32> {
        if self.status.is_none() {
            let mut st: libc::c_int = 0;
            // SAFETY: waitpid writes one int into `st`.
            let r = unsafe { libc::waitpid(self.holder, &mut st, libc::WNOHANG) };
            if r == self.holder {
                self.status = Some(exit_code(st));
            }
        }
        self.status
    }

    /// Blocking wait for the holder's exit.
    pub fn reap(&mut self) -> i32 {
        while self.status.is_none() {
            let mut st: libc::c_int = 0;
            // SAFETY: waitpid writes one int into `st`.
            let r = unsafe { libc::waitpid(self.holder, &mut st, 0) };
            if r == self.holder {
                self.status = Some(exit_code(st));
            } else if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                self.status = Some(1);
            }
        }
        self.status.unwrap_or(1)
    }

    /// True once a TCP socket listens or a UDP socket is bound in this side's namespace
    /// (read from /proc/PID/net/*, which shows the holder's network namespace).
    pub fn has_listener(&self) -> bool {
        let base = format!("/proc/{}/net", self.holder);
        for (file, tcp) in [
            ("tcp", true),
            ("tcp6", true),
            ("udp", false),
            ("udp6", false),
        ] {
            let Ok(text) = std::fs::read_to_string(format!("{base}/{file}")) else {
                continue;
            };
            for line in text.lines().skip(1) {
                let st = line.split_whitespace().nth(3).unwrap_or("");
                if !tcp || st == "0A" {
                    return true;
                }
            }
        }
        false
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        self.kill();
        self.reap();
    }
}
