//! The emulation: start the namespace sides, forward packets between their TUN devices through
//! one path per direction on the wall clock (sleep-then-spin), stop when the client command exits
//! or a signal arrives, and return the command's exit status.

use crate::cli::Options;
use crate::clock::{self, Clock};
pub use crate::error::EmuError;
use crate::host;
use crate::live::DirCounters;
use crate::ns::{RunAs, Side, SideSpec};
use crate::offload::{self, GsoWriter, OffloadStats};
use crate::output::{self, LatenessUs};
use crate::path::{Path, PathConfig};
use crate::record::{MahimahiHeader, PathResults};
use crate::scenario::{self, DirectionTables, EmuScenario};
use crate::tun::{Tun, MAX_PACKET};
use l4s_core::Nanos;
use serde_json::{json, Value};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

/// Addresses of the two ends of the emulated link.
pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Server end (two-namespace mode) or host end (host mode).
pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// IPv6 client end.
pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x4c34, 0, 0, 0, 0, 0, 1);
/// IPv6 server end.
pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x4c34, 0, 0, 0, 0, 0, 2);

/// Packets read from one TUN device per loop turn before looking at the other and the clock.
const READ_BATCH: usize = 64;
/// The longest the driver blocks when no packet is due (it also checks children then).
const IDLE_WAIT: Nanos = Nanos(50_000_000);
/// How long the client waits for the server command to open a socket.
const SERVER_READY_TIMEOUT: Nanos = Nanos(3_000_000_000);

/// How often the Mahimahi log text is appended to its file.
const LOG_FLUSH: Nanos = Nanos(100_000_000);

/// Period of the live statistics lines.
const STATS_TICK: Nanos = Nanos(250_000_000);

/// The descriptor live statistics go to (non-blocking: a stalled reader loses lines, never
/// stalls the link).
struct StatsOut(std::fs::File);

impl StatsOut {
    fn open(fd: Option<i32>) -> Option<StatsOut> {
        let fd = fd?;
        // SAFETY: F_GETFD/F_SETFL on a number the user passed; a closed number fails F_GETFD and
        // is ignored, an open one is taken over (the caller handed it to us for this purpose).
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) < 0 {
                return None;
            }
            let fl = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            Some(StatsOut(std::fs::File::from_raw_fd(fd)))
        }
    }
    fn line(&mut self, v: &Value) {
        use std::io::Write;
        let _ = writeln!(self.0, "{v}");
    }
}

/// The type implementing one direction of the link.
pub type Direction = Path;

/// What one direction did, for the run directory.
#[derive(Clone, Debug)]
pub struct DirectionReport {
    /// "uplink" (client → server) or "downlink".
    pub name: &'static str,
    /// The recorder's results (the simulator's columns and summary).
    pub results: PathResults,
    /// What the offload edge did on this direction's reading side.
    pub offload: OffloadStats,
    /// Frames written on this direction's far side, and how many were GSO frames.
    pub frames_out: (u64, u64),
}

/// Result of one emulation.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The client command's exit status (128 + signal if it was killed; 128 + signal of the
    /// emulator if a signal stopped the run).
    pub exit: i32,
    /// Wall-clock length of the emulation.
    pub duration: Nanos,
    /// Both directions.
    pub directions: Vec<DirectionReport>,
    /// The signal that stopped the run, if any.
    pub signal: Option<i32>,
    /// Whether the driver ran under SCHED_FIFO.
    pub realtime: bool,
    /// CPU time of the emulator process itself (user, system), seconds.
    pub cpu_s: (f64, f64),
    /// TUN offloads (IFF_VNET_HDR + TSO) were on.
    pub offload: bool,
    /// The server command's exit status when it ended by itself before the client did.
    pub server_exit: Option<i32>,
    /// Each side's kernel TCP settings at its start (`net.ipv4.tcp_congestion_control`,
    /// `net.ipv4.tcp_ecn`), by side: "client", "server" or "host".
    pub tcp_sysctls: Vec<(String, Vec<(String, String)>)>,
    /// The namespaces' default congestion control asked for (`--tcp-cc`, else cubic).
    pub tcp_cc: String,
    /// The host-wide allowed list before and during the run, when the run widened it.
    pub tcp_allowed: Option<(String, String)>,
    /// `--rt-priority`: the commands' SCHED_FIFO priority.
    pub rt_priority: Option<i32>,
    /// The injected stall (`L4SLAB_EMU_TEST_STALL_MS`, tests only), ms.
    pub test_stall_ms: Option<u64>,
    /// 100 ms windows in which the driver reached its awake cap and stopped spinning
    /// (`clock::SPIN_CAP`; each such window's last departures are timer wake-ups).
    pub spin_capped_windows: u64,
}

/// Tests only: `L4SLAB_EMU_TEST_STALL_MS=N` makes the driver sleep N ms once, 1 s after the
/// client command started, as a descheduled emulator on a loaded host would (the run's
/// lateness shows it).
const TEST_STALL_ENV: &str = "L4SLAB_EMU_TEST_STALL_MS";

/// User and system CPU time of this process so far (not of its children).
fn own_cpu_s() -> (f64, f64) {
    // SAFETY: rusage is plain data; getrusage fills the exclusively borrowed local.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the local above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

/// The user to run commands as: the invoking user under sudo, else whoever we are.
fn invoking_user() -> Option<RunAs> {
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let uid = std::env::var("SUDO_UID").ok()?.parse().ok()?;
    let gid = std::env::var("SUDO_GID").ok()?.parse().ok()?;
    Some(RunAs { uid, gid })
}

/// For an unprivileged run: our own ids, mapped to themselves in a user namespace.
fn own_ids_if_unprivileged() -> Option<RunAs> {
    // SAFETY: getters that take nothing and cannot fail.
    unsafe {
        if libc::geteuid() == 0 {
            None
        } else {
            Some(RunAs {
                uid: libc::geteuid(),
                gid: libc::getegid(),
            })
        }
    }
}

/// Build one direction from its tables: the simulator's [link]/[aqm] reading and
/// validation, this direction's delay, and random streams "uplink/..." or "downlink/...".
fn build_direction(
    t: &DirectionTables,
    scen: &EmuScenario,
    base_dir: Option<&std::path::Path>,
    doc: &Value,
) -> Result<Direction, EmuError> {
    let mut cfg = PathConfig::from_tables(t.link.clone(), t.aqm.clone())
        .map_err(|e| EmuError::Config(e.to_string()))?;
    cfg.delay = t.delay;
    cfg.seed = scen.seed;
    cfg.stream = format!("{}/", t.name);
    cfg.sample_interval = scen.sample_interval;
    cfg.warmup = scen.warmup;
    cfg.base_dir = base_dir.map(|p| p.to_path_buf());
    cfg.per_packet = scen.per_packet;
    cfg.scenario = doc.clone();
    Path::new(cfg).map_err(|e| EmuError::Config(e.to_string()))
}

/// Block the signals the driver handles and return a signalfd that reports them.
fn signal_fd() -> Result<OwnedFd, EmuError> {
    // SAFETY: sigset operations on a local set; sigprocmask and signalfd read it. The returned
    // descriptor is new and owned by the OwnedFd.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
            libc::sigaddset(&mut set, s);
        }
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) < 0 {
            return Err(EmuError::Os {
                what: "sigprocmask".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(EmuError::Os {
                what: "signalfd".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Read pending signals; returns a terminating one (SIGINT/SIGTERM/SIGHUP) if any arrived.
fn read_signals(fd: &OwnedFd) -> Option<i32> {
    let mut stop = None;
    loop {
        // SAFETY: signalfd_siginfo is plain data; read() fills at most its size.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                &mut info as *mut _ as *mut libc::c_void,
                std::mem::size_of::<libc::signalfd_siginfo>(),
            )
        };
        if n <= 0 {
            return stop;
        }
        let s = info.ssi_signo as i32;
        if s != libc::SIGCHLD {
            stop = Some(s);
        }
    }
}

/// Wait until one of `fds` is readable or `timeout` passes (ns resolution; 1 ns timer slack).
fn wait_readable(fds: &[&OwnedFd], timeout: Option<std::time::Duration>) {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: ppoll reads `pfds.len()` pollfds from the live vector and one optional timespec.
    unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        );
    }
}

/// The live AQM's queues now (for the dashboard).
fn queue_samples(dir: &Direction, now: Nanos) -> Vec<l4s_core::aqm::QueueSample> {
    let mut v = Vec::new();
    dir.aqm().sample(now, &mut v);
    v
}

/// Per-direction scratch space and counters of the reading edge.
#[derive(Default)]
struct Reader {
    /// Segments of a super-packet are built here.
    scratch: Vec<u8>,
    stats: OffloadStats,
}

/// Read up to READ_BATCH frames from `tun` into `dir` (super-packets split into wire packets
/// first, all at the instant of their read).
fn read_into(
    tun: &Tun,
    dir: &mut Direction,
    buf: &mut [u8],
    rd: &mut Reader,
    clock: &Clock,
) -> usize {
    let mut n = 0;
    while n < READ_BATCH {
        match tun.read(buf) {
            Ok(Some(len)) => {
                let now = clock.now();
                if tun.vnet() {
                    // A refused frame is counted in the stats and dropped.
                    let _ = offload::split_frame(
                        &mut buf[..len],
                        &mut rd.scratch,
                        &mut rd.stats,
                        |p| dir.push(p, now),
                    );
                } else {
                    dir.push(&buf[..len], now);
                }
                n += 1;
            }
            _ => break,
        }
    }
    n
}

/// Per-direction state of the writing edge.
#[derive(Default)]
struct Writer {
    /// Offloads on: consecutive segments of a flow go out as one GSO frame (as GRO would).
    gso: GsoWriter,
    /// Scheduled times of the packets held in `gso`'s frame.
    pending: Vec<Nanos>,
}

/// Write every packet of `dir` that is due to `tun`; returns how many.
fn write_due(
    tun: &Tun,
    dir: &mut Direction,
    clock: &Clock,
    live: &mut DirCounters,
    w: &mut Writer,
) -> usize {
    let mut n = 0;
    let mut now = clock.now();
    // A write error means the receiving side is gone (end of run): the packet is lost
    // exactly as on a link whose far end went down.
    let emit = |f: &[u8], at: &mut Option<Nanos>| {
        // Lateness is taken when the write starts: the write itself runs the receiving
        // stack (the packet is delivered by the time it returns).
        *at = Some(clock.now());
        let _ = tun.write_frame(f);
    };
    while let Some((pkt, scheduled)) = dir.pop_due(now) {
        live.delivered(&pkt);
        if tun.vnet() {
            let mut wrote = None;
            w.pending.push(scheduled);
            w.gso.push(&pkt, &mut |f: &[u8]| emit(f, &mut wrote));
            if let Some(t) = wrote {
                // Written: everything pending but this packet if it is now held.
                let keep = usize::from(w.gso.held());
                let done = w.pending.len() - keep;
                for s in w.pending.drain(..done) {
                    dir.record_sent(s, t);
                }
            }
        } else {
            dir.record_sent(scheduled, now);
            let _ = tun.write(&pkt);
        }
        dir.recycle(pkt);
        now = clock.now();
        n += 1;
    }
    if tun.vnet() {
        let mut wrote = None;
        w.gso.flush(&mut |f: &[u8]| emit(f, &mut wrote));
        if let Some(t) = wrote {
            for s in w.pending.drain(..) {
                dir.record_sent(s, t);
            }
        }
    }
    n
}

/// A result file written as the run goes: a Mahimahi log of one direction (`--uplink-log` /
/// `--downlink-log`) or the pcapng trace (`--pcap`).
struct MmLogFile {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    /// Something was logged: the file is a result from then on and is never removed.
    used: bool,
}

impl Drop for MmLogFile {
    /// A run that fails before logging anything leaves no empty log behind (a rerun with the
    /// same flags would otherwise be refused for an existing file).
    fn drop(&mut self) {
        if !self.used {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl MmLogFile {
    /// Create `path` (it must not exist: a user's file is never truncated), owned by the
    /// invoking user under sudo.
    fn create(
        path: &std::path::Path,
        run_as: Option<RunAs>,
        what: &str,
    ) -> Result<MmLogFile, EmuError> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| EmuError::Os {
                what: format!("create {what} {}", path.display()),
                source: e,
            })?;
        if let Some(ids) = run_as {
            let _ = std::os::unix::fs::chown(path, Some(ids.uid), Some(ids.gid));
        }
        Ok(MmLogFile {
            path: path.to_path_buf(),
            file: std::io::BufWriter::new(f),
            used: false,
        })
    }

    /// Append what `dir` logged up to `now`.
    fn append(&mut self, dir: &mut Direction, now: Nanos) -> Result<(), EmuError> {
        let text = dir.take_mahimahi_log(now);
        self.write(text.as_bytes())
    }

    /// Append `bytes`.
    fn write(&mut self, bytes: &[u8]) -> Result<(), EmuError> {
        use std::io::Write;
        self.used = true;
        self.file.write_all(bytes).map_err(|e| EmuError::Os {
            what: format!("write {}", self.path.display()),
            source: e,
        })
    }

    /// Append both directions' pcapng blocks up to `now` (`--pcap`).
    fn append_capture(&mut self, dirs: [&mut Direction; 2], now: Nanos) -> Result<(), EmuError> {
        for d in dirs {
            let b = d.take_capture(now);
            self.write(&b)?;
        }
        Ok(())
    }

    /// Write out everything buffered.
    fn finish(mut self) -> Result<(), EmuError> {
        use std::io::Write;
        self.file.flush().map_err(|e| EmuError::Os {
            what: format!("write {}", self.path.display()),
            source: e,
        })
    }
}

/// CLOCK_REALTIME in ns (the pcapng trace's timestamps; in whole ms, Mahimahi's
/// raw_timestamp).
fn wall_clock_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The mm-link header of one direction's log.
fn mahimahi_header(t: &DirectionTables, logfile: &std::path::Path, init_ms: u64) -> MahimahiHeader {
    let source = match (t.link.get("trace"), t.link.get("rate")) {
        (Some(Value::String(tr)), _) => tr.clone(),
        (_, Some(r)) => format!("rate {}", r.as_str().map_or(r.to_string(), str::to_string)),
        _ => "link".into(),
    };
    let queue = match t.aqm.as_object() {
        Some(m) => {
            let kind = m.get("kind").and_then(Value::as_str).unwrap_or("fifo");
            let args: Vec<String> = m
                .iter()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_string)))
                .collect();
            if args.is_empty() {
                kind.to_string()
            } else {
                format!("{kind} [{}]", args.join(", "))
            }
        }
        None => "fifo".into(),
    };
    MahimahiHeader {
        link_name: t.name.to_string(),
        source,
        logfile: logfile.display().to_string(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        queue,
        init_ms,
    }
}

/// Prepare the flow directory the commands may write to (contract with `l4slab flow`).
fn flow_dir(output: Option<&PathBuf>, run_as: Option<RunAs>) -> Result<PathBuf, EmuError> {
    let dir = match output {
        Some(o) => o.join("flows"),
        None => std::env::temp_dir().join(format!("l4s-emu-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| EmuError::Os {
        what: format!("create {}", dir.display()),
        source: e,
    })?;
    if let Some(ids) = run_as {
        let _ = std::os::unix::fs::chown(&dir, Some(ids.uid), Some(ids.gid));
    }
    Ok(dir)
}

/// COMMAND's program as the side would find it (a path, or a name looked up in PATH): an
/// error before anything starts when it is not an executable file, so that a mistyped
/// command leaves no run directory (its exit status is 127, as a shell's).
fn check_program(prog: &str) -> Result<(), EmuError> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if prog.contains('/') {
        runnable(std::path::Path::new(prog))
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| runnable(&d.join(prog))))
    };
    if found {
        Ok(())
    } else {
        Err(EmuError::NotFound(format!(
            "cannot run the client command `{prog}`: no such executable{}; nothing was run",
            if prog.contains('/') { "" } else { " on PATH" }
        )))
    }
}

/// Run one emulation as the options say.
pub fn run(o: &Options) -> Result<Outcome, EmuError> {
    let run_as = invoking_user();
    let user_ns = own_ids_if_unprivileged();
    let scen = scenario::from_doc(&o.doc)?;
    if let Some(prog) = o.command.first() {
        check_program(prog)?;
    }
    let base_dir = o.scenario.as_ref().and_then(|p| p.parent());
    let doc = Value::Object(o.doc.clone());
    let mut up = build_direction(&scen.uplink, &scen, base_dir, &doc)?;
    let mut down = build_direction(&scen.downlink, &scen, base_dir, &doc)?;
    // `[link] model = "wifi"`: one medium, the access point on the side the scenario says
    // (the server's unless `emulator.access_point = "client"`).
    match scen.access_point {
        scenario::AccessPoint::Server => {
            Path::share_wifi(&mut up, &mut down, scen.stations.clone())
        }
        scenario::AccessPoint::Client => {
            Path::share_wifi(&mut down, &mut up, scen.stations.clone())
        }
    }
    .map_err(|e| EmuError::Config(e.to_string()))?;
    let flows = flow_dir(o.output.as_ref(), run_as)?;
    if o.uplink_log.is_some() && o.uplink_log == o.downlink_log {
        return Err(EmuError::Config(
            "--downlink-log: the same file as --uplink-log; give each direction its own".into(),
        ));
    }
    // The logs are enabled at the clock's start (their init timestamp); created here so that
    // a refused file stops the run before anything starts.
    let mut up_log = match &o.uplink_log {
        Some(p) => Some(MmLogFile::create(p, run_as, "Mahimahi log")?),
        None => None,
    };
    let mut down_log = match &o.downlink_log {
        Some(p) => Some(MmLogFile::create(p, run_as, "Mahimahi log")?),
        None => None,
    };
    let mut pcap = match &o.pcap {
        Some(p) => Some(MmLogFile::create(p, run_as, "pcapng trace")?),
        None => None,
    };
    // The sampling period the recorder uses (sample_interval, else the AQM's tupdate), for
    // `l4slab flow` senders to sample on the same grid.
    let sample_ns = scen
        .sample_interval
        .or_else(|| {
            PathConfig::from_tables(scen.uplink.link.clone(), scen.uplink.aqm.clone())
                .ok()
                .map(|c| c.sample_period())
        })
        .unwrap_or(Nanos::from_ms(16))
        .as_ns();
    // Host mode: the far end is a TUN device on the host (set up before any other fork).
    let host = if o.host {
        if o.server.is_some() {
            return Err(EmuError::Config(
                "--server: not with --host (in host mode the far end is the host itself)".into(),
            ));
        }
        Some(host::setup(!o.no_offload)?)
    } else {
        None
    };
    let (client_v4, server_v4) = host
        .as_ref()
        .map_or((CLIENT_V4, SERVER_V4), |h| (h.client_addr, h.host_addr));
    let base_env = vec![
        ("L4SLAB_CLIENT".to_string(), client_v4.to_string()),
        ("L4SLAB_SERVER".to_string(), server_v4.to_string()),
        ("L4SLAB_CLIENT6".to_string(), CLIENT_V6.to_string()),
        ("L4SLAB_SERVER6".to_string(), SERVER_V6.to_string()),
        ("L4SLAB_FLOW_DIR".to_string(), flows.display().to_string()),
        (
            "L4SLAB_SAMPLE_INTERVAL_NS".to_string(),
            sample_ns.to_string(),
        ),
    ];
    let command = if o.command.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
    } else {
        o.command.clone()
    };
    let tcp_cc = o
        .tcp_cc
        .clone()
        .unwrap_or_else(|| crate::tcp_cc::DEFAULT_CC.to_string());
    crate::tcp_cc::check(&tcp_cc)?;
    // As root: every available congestion control allowed for the run (the namespaces'
    // default must be in the host-wide list; see crate::tcp_cc), put back afterwards.
    let allowed = if user_ns.is_none() {
        crate::tcp_cc::allow_all()
    } else {
        None
    };
    let gateway4 = host.as_ref().map(|h| h.host_addr);
    let spec = |label: &str, me4, me6, cmd: Vec<String>| SideSpec {
        label: label.into(),
        tun_name: "l4s0".into(),
        addr4: me4,
        prefix4: 24,
        addr6: me6,
        prefix6: 64,
        gateway4,
        command: cmd,
        env: base_env.clone(),
        run_as,
        user_ns,
        offload: !o.no_offload,
        tcp_cc: tcp_cc.clone(),
        tcp_cc_required: o.tcp_cc.is_some(),
        rt_priority: o.rt_priority,
    };
    // Before the forks, so that the descriptor is close-on-exec for every command.
    let mut stats = StatsOut::open(o.stats_fd);
    // Forks happen here, while the emulator is single-threaded.
    let mut server = match &o.server {
        Some(cmd) => Some(Side::spawn(&spec(
            "server",
            SERVER_V4,
            SERVER_V6,
            vec!["/bin/sh".into(), "-c".into(), cmd.clone()],
        ))?),
        None => None,
    };
    let mut client = Side::spawn(&spec("client", client_v4, CLIENT_V6, command))?;
    if server.is_none() && host.is_none() && !o.quiet {
        // mm-link's shell reaches the outside; this namespace, without a far end, does not.
        eprintln!(
            "l4s-emu: no --server and no --host: the client namespace reaches nothing beyond \
             the emulated link (its packets are counted, then dropped); add --server CMD for \
             a peer at {SERVER_V4}, or --host to reach the host and the networks beyond it"
        );
    }
    let sigfd = signal_fd()?;
    clock::set_timer_slack_1ns();
    // After the forks: the sides keep the normal policy.
    let realtime = !o.no_realtime && clock::try_realtime();
    let clock = Clock::start();
    let init_ns = wall_clock_ns();
    let init_ms = (init_ns / 1_000_000) as u64;
    if let Some(f) = pcap.as_mut() {
        // Interface 0 is the uplink, 1 the downlink; timestamps on the wall clock.
        up.enable_capture(0, init_ns as u64);
        down.enable_capture(1, init_ns as u64);
        f.write(&l4s_sim::pcap::file_header(&["uplink", "downlink"]))?;
    }
    for (l, d, t) in [
        (&up_log, &mut up, &scen.uplink),
        (&down_log, &mut down, &scen.downlink),
    ] {
        if let Some(l) = l {
            d.enable_mahimahi_log(&mahimahi_header(t, &l.path, init_ms));
        }
    }
    let start_env = [("L4SLAB_T0_NS".to_string(), clock.t0_ns().to_string())];
    if let Some(s) = server.as_mut() {
        s.go(&start_env)?;
    } else {
        client.go(&start_env)?;
    }
    let mut client_started = server.is_none();
    let mut client_started_at = client_started.then_some(Nanos::ZERO);
    let spin = o.spin.unwrap_or(clock::DEFAULT_SPIN);
    let mut buf = vec![0u8; MAX_PACKET];
    let mut signal = None;
    let mut next_child_check = Nanos::ZERO;
    let (mut live_up, mut live_down) = (DirCounters::default(), DirCounters::default());
    let mut last_tick = Nanos::ZERO;
    let (mut rd_up, mut rd_down) = (Reader::default(), Reader::default());
    let (mut wr_up, mut wr_down) = (Writer::default(), Writer::default());
    let mut next_log_flush = LOG_FLUSH;
    let mut log_error = None;
    let test_stall_ms = std::env::var(TEST_STALL_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let mut stall_pending = test_stall_ms;
    let mut meter = clock::SpinMeter::new(clock.now());
    loop {
        let due = client_started_at.map(|t| t + Nanos::from_secs(1));
        if let Some(ms) = stall_pending.filter(|_| due.is_some_and(|d| clock.now() >= d)) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            stall_pending = None;
        }
        // Arrivals, then departures, on both sides.
        {
            let far = server
                .as_ref()
                .map(|s| &s.tun)
                .or(host.as_ref().map(|h| &h.tun));
            if let Some(far) = far {
                read_into(&client.tun, &mut up, &mut buf, &mut rd_up, &clock);
                read_into(far, &mut down, &mut buf, &mut rd_down, &clock);
                write_due(far, &mut up, &clock, &mut live_up, &mut wr_up);
                write_due(&client.tun, &mut down, &clock, &mut live_down, &mut wr_down);
            } else {
                // No server side: the client's packets leave through the link and vanish.
                read_into(&client.tun, &mut up, &mut buf, &mut rd_up, &clock);
                while up.pop_due(clock.now()).is_some() {}
                // The downlink runs a Wi-Fi medium the uplink may be waiting on.
                while down.pop_due(clock.now()).is_some() {}
            }
        }
        let now = clock.now();
        if now >= next_child_check {
            next_child_check = now + Nanos::from_ms(5);
            if let Some(sig) = read_signals(&sigfd) {
                signal = Some(sig);
                break;
            }
            if !client_started {
                let srv = server
                    .as_mut()
                    .map(|s| (s.has_listener(), s.try_reap().is_some()));
                if let Some((listening, exited)) = srv {
                    if listening || exited || now >= SERVER_READY_TIMEOUT {
                        client.go(&start_env)?;
                        client_started = true;
                        client_started_at = Some(now);
                    }
                }
            }
            if client.try_reap().is_some() {
                break;
            }
            if stats.is_some() && now >= last_tick + STATS_TICK {
                let dt = now - last_tick;
                last_tick = now;
                let line = json!({
                    "t_s": now.as_secs_f64(),
                    "dirs": [
                        live_up.tick("uplink", dt, &queue_samples(&up, now)),
                        live_down.tick("downlink", dt, &queue_samples(&down, now)),
                    ],
                });
                if let Some(out) = stats.as_mut() {
                    out.line(&line);
                }
            }
            if let Some(s) = server.as_mut() {
                s.try_reap();
            }
            if now >= next_log_flush {
                next_log_flush = now + LOG_FLUSH;
                // A log that cannot be written (disk full) stops; the run and its results go on.
                for (l, d) in [(&mut up_log, &mut up), (&mut down_log, &mut down)] {
                    if let Some(Err(e)) = l.as_mut().map(|f| f.append(d, now)) {
                        log_error.get_or_insert(e);
                        *l = None;
                    }
                }
                if let Some(Err(e)) = pcap
                    .as_mut()
                    .map(|f| f.append_capture([&mut up, &mut down], now))
                {
                    log_error.get_or_insert(e);
                    pcap = None;
                }
            }
        }
        let deadline = [up.next_deadline(), down.next_deadline()]
            .into_iter()
            .flatten()
            .min();
        meter.awake_until(now);
        let budget = match deadline {
            Some(d) => Clock::sleep_budget(now, d, meter.spin(spin)),
            None => Some(std::time::Duration::from_nanos(IDLE_WAIT.as_ns())),
        };
        if let Some(b) = budget {
            let b = b.min(std::time::Duration::from_millis(5));
            let far = server
                .as_ref()
                .map(|s| &s.tun)
                .or(host.as_ref().map(|h| &h.tun));
            match far {
                Some(f) => wait_readable(&[client.tun.fd(), f.fd(), &sigfd], Some(b)),
                None => wait_readable(&[client.tun.fd(), &sigfd], Some(b)),
            }
            meter.woke_at(clock.now());
        }
    }
    let end = clock.now();
    // A server that ended by itself before the client (a failed start, a crash) is reported.
    let server_exit = server.as_mut().and_then(Side::try_reap);
    let mut tcp_sysctls: Vec<(String, Vec<(String, String)>)> = Vec::new();
    if host.is_some() {
        tcp_sysctls.push(("host".into(), crate::ns::tcp_sysctls()));
    }
    for s in server.iter().chain(std::iter::once(&client)) {
        tcp_sysctls.push((s.label.clone(), s.sysctls.clone()));
    }
    // Ending a side kills every process of its PID namespace; its network namespace and TUN
    // device go when the last descriptor (ours) closes.
    if let Some(s) = server.as_mut() {
        s.kill();
        s.reap();
    }
    if signal.is_some() {
        client.kill();
    }
    let client_status = client.reap();
    drop(client);
    drop(server);
    // The host end's device goes with its descriptor; the guardian removes the NAT rules.
    drop(host);
    if o.output.is_none() {
        let _ = std::fs::remove_dir_all(&flows);
    }
    // The logs end where the summaries end (at `end`); a failed write is reported after the
    // results are saved rather than losing them.
    for (l, d) in [(up_log, &mut up), (down_log, &mut down)] {
        if let Some(mut l) = l {
            if let Err(e) = l.append(d, end).and_then(|()| l.finish()) {
                log_error.get_or_insert(e);
            }
        }
    }
    if let Some(mut f) = pcap {
        let done = f
            .append_capture([&mut up, &mut down], end)
            .and_then(|()| f.finish());
        if let Err(e) = done {
            log_error.get_or_insert(e);
        }
    }
    if let Some(e) = log_error {
        eprintln!("l4s-emu: error: {e}");
    }
    let mut exit = signal.map_or(client_status, |s| 128 + s);
    if let Some(code) = server_exit.filter(|&c| c != 0 && signal.is_none()) {
        eprintln!(
            "l4s-emu: error: the server command (--server) exited with status {code} before the \
             client command ended"
        );
        if exit == 0 {
            exit = code;
        }
    }
    Ok(Outcome {
        exit,
        server_exit,
        tcp_sysctls,
        tcp_cc,
        tcp_allowed: allowed
            .as_ref()
            .map(|a| (a.before.clone(), a.during.clone())),
        rt_priority: o.rt_priority,
        test_stall_ms,
        spin_capped_windows: meter.capped_windows,
        duration: end,
        directions: vec![
            DirectionReport {
                name: "uplink",
                results: up.finish(end),
                offload: rd_up.stats,
                frames_out: (wr_up.gso.frames(), wr_up.gso.merged_frames()),
            },
            DirectionReport {
                name: "downlink",
                results: down.finish(end),
                offload: rd_down.stats,
                frames_out: (wr_down.gso.frames(), wr_down.gso.merged_frames()),
            },
        ],
        signal,
        realtime,
        cpu_s: own_cpu_s(),
        offload: !o.no_offload,
    })
}

/// One direction's lateness figures.
pub fn lateness_of(r: &PathResults, count: u64) -> LatenessUs {
    LatenessUs {
        count,
        p50: r.lateness_p50_us,
        p99: r.lateness_p99_us,
        max: r.lateness_max_us,
    }
}

/// The outcome as JSON (`emulator.json` in the output directory).
pub fn outcome_json(o: &Outcome, doc: &Value) -> Value {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let dirs: Vec<Value> = o
        .directions
        .iter()
        .map(|d| {
            let r = &d.results;
            json!({
                "name": d.name,
                "sent_pkts": r.run.totals.sent_pkts,
                "delivered_pkts": r.run.totals.delivered_pkts,
                "aqm_dropped_pkts": r.run.totals.aqm_dropped_pkts,
                "link_lost_pkts": r.run.totals.link_lost_pkts,
                "malformed": r.malformed,
                "lateness_us": {
                    "p50": num(r.lateness_p50_us),
                    "p99": num(r.lateness_p99_us),
                    "max": num(r.lateness_max_us),
                },
                "offload": {
                    "enabled": o.offload,
                    "frames": d.offload.frames,
                    "gso_frames": d.offload.gso_frames,
                    "gso_segments": d.offload.gso_segments,
                    "csum_completed": d.offload.csum_completed,
                    "refused": d.offload.refused,
                    "frames_out": d.frames_out.0,
                    "gso_frames_out": d.frames_out.1,
                },
            })
        })
        .collect();
    json!({
        "exit_status": o.exit,
        "duration_s": o.duration.as_secs_f64(),
        "signal": o.signal,
        "realtime": o.realtime,
        "cpu_user_s": o.cpu_s.0,
        "cpu_sys_s": o.cpu_s.1,
        "offload": o.offload,
        "server_exit_status": o.server_exit,
        "priority": {
            "emulator": if o.realtime {
                json!({"policy": "SCHED_FIFO", "priority": clock::EMULATOR_PRIORITY})
            } else {
                json!({"policy": "SCHED_OTHER", "priority": 0})
            },
            "commands_rt_priority": o.rt_priority,
        },
        "tcp_cc": {
            "default": o.tcp_cc,
            "allowed_before": o.tcp_allowed.as_ref().map(|a| a.0.clone()),
            "allowed_during": o.tcp_allowed.as_ref().map(|a| a.1.clone()),
        },
        "test_stall_ms": o.test_stall_ms,
        "spin": {
            "cap": clock::SPIN_CAP,
            "window_s": clock::SPIN_WINDOW.as_secs_f64(),
            "capped_windows": o.spin_capped_windows,
        },
        "tcp_sysctls": o.tcp_sysctls.iter().map(|(side, kv)| {
            let m: serde_json::Map<String, Value> =
                kv.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            (side.clone(), Value::Object(m))
        }).collect::<serde_json::Map<String, Value>>(),
        "scenario": doc,
        "directions": dirs,
    })
}

/// Write `emulator.json` and `raw/<direction>.json` into `out`.
pub fn write_outputs(out: &std::path::Path, o: &Outcome, doc: &Value) -> Result<(), EmuError> {
    let io = |what: String| move |e: std::io::Error| EmuError::Os { what, source: e };
    let raw = out.join("raw");
    std::fs::create_dir_all(&raw).map_err(io(format!("create {}", raw.display())))?;
    for d in &o.directions {
        let r = &d.results;
        let v = output::direction_json(
            &r.run,
            &r.flow_keys,
            lateness_of(r, r.run.totals.delivered_pkts),
            r.malformed,
        );
        let p = raw.join(format!("{}.json", d.name));
        std::fs::write(&p, v.to_string()).map_err(io(format!("write {}", p.display())))?;
    }
    // Last: its presence marks a finished emulation.
    let p = out.join("emulator.json");
    let text = serde_json::to_string_pretty(&outcome_json(o, doc)).unwrap_or_default();
    std::fs::write(&p, text).map_err(io(format!("write {}", p.display())))
}
