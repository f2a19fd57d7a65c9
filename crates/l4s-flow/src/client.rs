//! The sender side (`l4s-flow -c`): wall-clock driver of l4s-core `TcpSender`s over UDP.
//! The driving loop follows the sans-I/O contract of `l4s_core::tcp` (handle, poll_transmit
//! until None, sleep until poll_timeout); sleeps end by ppoll with 1 ns slack, then spin.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use l4s_core::packet::{tcp_flags, Transport};
use l4s_core::{Ecn, Endpoint, FlowStats, Nanos, Packet};
use l4s_sim::flows::{build_flow, validate_flow, SimSender};
use l4s_sim::scenario::{FlowConfig, FlowEcn};

use crate::clock::{set_min_timer_slack, Clock};
use crate::drain::{drain, Connection, Rx};
use crate::error::FlowError;
use crate::report::{format_row, interval_row, FlowCsv, IntervalRow, PacingError, Snapshot};
use crate::sock::{any_of_family, wait, EcnSocket, RecvBatch};
use crate::wire::{self, Body, Control, ReceiverReport, ReverseRequest, SenderSummary};
use crate::{EmuEnv, INTERRUPTED};

/// Datagrams a stream may send per loop iteration before the sockets are read again.
const SEND_BUDGET: u32 = 16;

/// Everything `l4s-flow -c` takes.
#[derive(Clone, Debug)]
pub struct ClientOpts {
    /// Server host name or address.
    pub host: String,
    /// Server UDP port.
    pub port: u16,
    /// Local address to bind (-B).
    pub bind: Option<std::net::IpAddr>,
    /// Local UDP port of stream 0 (--cport, as iperf3's); stream i binds cport + i. None:
    /// an ephemeral port.
    pub cport: Option<u16>,
    /// Congestion control name.
    pub cc: String,
    /// ECN mode; None = what the CC asks for.
    pub ecn: Option<FlowEcn>,
    /// Send for this long (-t); ignored when `bytes` is set.
    pub duration: Nanos,
    /// Send exactly this many bytes per stream (-n).
    pub bytes: Option<u64>,
    /// Parallel streams (-P).
    pub parallel: u32,
    /// Application rate limit per stream in bits/s (-b); None = always backlogged.
    pub rate_bps: Option<u64>,
    /// Interval report period (-i); None = no interval lines.
    pub interval: Option<Nanos>,
    /// JSON result file.
    pub json: Option<PathBuf>,
    /// MSS; None = fits a 1500-byte MTU.
    pub mss: Option<u32>,
    /// End with an error when the server sends nothing for this long.
    pub peer_timeout: Nanos,
    /// Busy-wait this long before a deadline instead of sleeping.
    pub spin: Nanos,
    /// Seed of the CCs' random streams.
    pub seed: u64,
    /// No interval lines on stdout.
    pub quiet: bool,
    /// Leave this much of the start out of the result (-O); `duration` includes it.
    pub omit: Nanos,
    /// Print the JSON result on stdout instead of the text lines (-J).
    pub json_stdout: bool,
    /// Reverse (-R): ask the server to send; this side receives.
    pub reverse: bool,
}

/// Why a stream's loop is where it is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Sending,
    /// Sent `Done`, waiting for the server's report (since, last Done sent).
    Closing(Nanos, Nanos),
    Finished,
}

struct Stream {
    id: u32,
    conn: u32,
    sock: EcnSocket,
    peer: SocketAddr,
    flow_name: String,
    sender: SimSender,
    /// The application's writes at -b's rate; None = always backlogged.
    supply: Option<AppSupply>,
    l4s: bool,
    phase: Phase,
    /// A datagram the kernel would not take yet (send buffer full), with its codepoint.
    pending: Option<(Vec<u8>, Ecn, bool)>,
    /// The send budget of the last loop iteration ran out with the model still sending.
    more: bool,
    last_rx: Nanos,
    /// The release time the loop slept toward when poll_transmit last gave nothing.
    gate: Option<Nanos>,
    pacing: PacingError,
    /// Data datagrams sent, by the codepoint the model chose (index = ECN bits).
    data_ecn: [u64; 4],
    data_pkts: u64,
    report: Option<ReceiverReport>,
    snap: Snapshot,
    intervals: Vec<IntervalRow>,
    csv_prev: (f64, u64),
    end_s: f64,
    final_stats: Option<FlowStats>,
    /// srtt after the last ACK that left two or more segments in flight: an ACK the receiver
    /// sent at once (every second segment), not the lone last segment's, which waits for the
    /// 40 ms delayed-ACK timer and would add 40/8 = 5 ms to srtt (RFC 6298 gain 1/8).
    srtt_steady: Option<Nanos>,
    /// The counters at the end of the omitted start (-O; zeros without it).
    omit_snap: Option<Snapshot>,
}

/// iperf3's -b for TCP: an application writing at `rate_bps` from the start, whole segments
/// at a time. As iperf3's throttle (the average rate since the start compared with -b), the
/// bytes written by `t` are rate·t, here rounded down to whole MSS-sized writes so that the
/// model's segments stay full (a partial write would leave as a short segment, TCP_NODELAY).
#[derive(Copy, Clone, Debug)]
struct AppSupply {
    rate_bps: u64,
    mss_bytes: u64,
    written_bytes: u64,
}

impl AppSupply {
    /// What the application has written by `now` (since the clock's start).
    fn due_bytes(&self, now: Nanos) -> u64 {
        let b = (self.rate_bps as u128 * now.as_ns() as u128 / 8_000_000_000) as u64;
        b - b % self.mss_bytes
    }

    /// Hand the sender what was written since the last call.
    fn write_due(&mut self, sender: &mut SimSender, now: Nanos) {
        let due = self.due_bytes(now);
        if due > self.written_bytes {
            if let SimSender::Tcp(t) = sender {
                t.app_write(due - self.written_bytes);
            }
            self.written_bytes = due;
        }
    }

    /// When the next whole segment is written.
    fn next_write_at(&self) -> Nanos {
        let bits = (self.written_bytes + self.mss_bytes) as u128 * 8_000_000_000;
        Nanos(bits.div_ceil(self.rate_bps as u128).min(u64::MAX as u128) as u64)
    }
}

/// Totals over the run, for the JSON result and the tests.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ClientCounters {
    /// Datagrams that were not l4s-flow datagrams of this connection.
    pub foreign_datagrams: u64,
    /// Datagrams the kernel dropped at our socket (SO_RXQ_OVFL).
    pub rx_overflow: u64,
}

pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, FlowError> {
    let mut it = (host, port)
        .to_socket_addrs()
        .map_err(|e| FlowError::Resolve {
            host: host.to_string(),
            msg: e.to_string(),
        })?;
    it.next().ok_or_else(|| FlowError::Resolve {
        host: host.to_string(),
        msg: "no address".into(),
    })
}

/// The largest MSS whose datagram fits both the path MTU (no IP fragmentation: a fragment
/// carries no ports and the whole datagram is lost with any one of them) and the receiver's
/// per-datagram buffer ([`crate::sock::RECV_BUF_BYTES`], beyond which it is truncated).
pub fn max_mss(path_mtu: usize, ipv6: bool) -> u32 {
    let by_buffer = (crate::sock::RECV_BUF_BYTES - wire::BASE_HEADER_BYTES) as u32;
    wire::default_mss(path_mtu, ipv6).min(by_buffer)
}

pub(crate) fn check_mss_fits(
    mss: u32,
    given: bool,
    peer: SocketAddr,
    path_mtu: Option<usize>,
) -> Result<(), FlowError> {
    let mtu = path_mtu.unwrap_or(1500);
    let most = max_mss(mtu, peer.is_ipv6());
    if mss > most {
        let why = if most < wire::default_mss(mtu, peer.is_ipv6()) {
            format!(
                "the receiver's {}-byte datagram buffer",
                crate::sock::RECV_BUF_BYTES
            )
        } else {
            format!("the path MTU to {} ({mtu} bytes)", peer.ip())
        };
        return Err(FlowError::Usage {
            flag: if given { "--mss" } else { "-c" },
            msg: format!("{mss}: a datagram does not fit {why}; allowed 1..={most}"),
        });
    }
    Ok(())
}

/// The local address of a client socket: -B's address, or any of the server's family.
pub(crate) fn any_of_family_or_bind(
    bind: Option<std::net::IpAddr>,
    peer: SocketAddr,
) -> SocketAddr {
    match bind {
        Some(ip) => SocketAddr::new(ip, 0),
        None => any_of_family(&peer.ip()),
    }
}

/// The local address of client stream `i`: [`any_of_family_or_bind`] with `--cport` + i.
pub(crate) fn stream_local(o: &ClientOpts, peer: SocketAddr, i: u32) -> SocketAddr {
    let mut a = any_of_family_or_bind(o.bind, peer);
    if let Some(p) = o.cport {
        a.set_port(p.saturating_add(i as u16));
    }
    a
}

/// A connection id unlikely to repeat across runs (demultiplexing key with the address).
pub fn conn_id(i: u32) -> u32 {
    let t = crate::clock::monotonic_ns();
    let x = (std::process::id() as u64) << 32 ^ t ^ ((i as u64) << 20);
    // splitmix64 finaliser: spread the bits.
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}

/// The scenario-style flow entry for these options (validated like a scenario's `[[flows]]`).
pub fn flow_config(o: &ClientOpts, mss: u32) -> Result<FlowConfig, FlowError> {
    let fl = FlowConfig {
        cc: o.cc.clone(),
        // The base RTT is the network's here; the model does not read it.
        rtt: Nanos::from_ms(1),
        count: 1,
        start: Nanos::ZERO,
        start_jitter: None,
        stop: if o.bytes.is_some() {
            None
        } else {
            Some(o.duration)
        },
        bytes: o.bytes,
        ecn: o.ecn,
        mss: Some(mss),
        // This TCP runs in user space and paces itself; no EDT qdisc sits below it.
        qdisc: Some(l4s_sim::scenario::FlowQdisc::None),
        ..FlowConfig::default()
    };
    if !wire::CCS.contains(&fl.cc.as_str()) {
        return Err(FlowError::Usage {
            flag: "--cc",
            msg: format!(
                "\"{}\" is not a congestion control l4s-flow runs; expected one of {}",
                fl.cc,
                wire::CCS.join(", ")
            ),
        });
    }
    validate_flow(0, &fl).map_err(|e| {
        let s = e.to_string();
        let flag = if s.starts_with("flows[0].ecn") {
            "--ecn"
        } else if s.starts_with("flows[0].cc") {
            "--cc"
        } else if s.starts_with("flows[0].mss") {
            "--mss"
        } else if s.starts_with("flows[0].bytes") {
            "-n"
        } else {
            "-t"
        };
        let msg = s.split_once(": ").map_or(s.clone(), |(_, m)| m.to_string());
        FlowError::Usage { flag, msg }
    })?;
    Ok(fl)
}

impl Connection for Stream {
    fn sock(&mut self) -> &mut EcnSocket {
        &mut self.sock
    }
    fn conn(&self) -> u32 {
        self.conn
    }
}

impl Stream {
    fn send_now(&mut self, buf: &[u8], ecn: Ecn) -> Result<bool, FlowError> {
        match self.sock.send(buf, ecn, None) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Err(FlowError::EcnUnsupported {
                option: if self.peer.is_ipv4() {
                    "IP_TOS"
                } else {
                    "IPV6_TCLASS"
                },
                source: e,
            }),
            Err(e) => Err(FlowError::Unreachable {
                peer: self.peer,
                source: e,
            }),
        }
    }

    fn send_control(&mut self, c: &Control, buf: &mut Vec<u8>) -> Result<(), FlowError> {
        wire::encode_control(buf, self.conn, c);
        let b = std::mem::take(buf);
        let r = self.send_now(&b, Ecn::NotEct);
        *buf = b;
        r.map(|_| ())
    }
}

/// Refuse a `--json` file that exists or whose directory does not (checked before the run).
pub(crate) fn check_json_target(o: &ClientOpts) -> Result<(), FlowError> {
    if let Some(j) = &o.json {
        if j.exists() {
            return Err(FlowError::Exists {
                flag: "--json",
                path: j.display().to_string(),
            });
        }
        let dir = j.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(d) = dir.filter(|d| !d.is_dir()) {
            return Err(FlowError::Usage {
                flag: "--json",
                msg: format!("{}: no such directory", d.display()),
            });
        }
    }
    Ok(())
}

/// A run that fails before it starts still writes its JSON (with the error).
pub(crate) fn early_json(o: &ClientOpts, e: FlowError) -> FlowError {
    if let Some(j) = &o.json {
        let v = serde_json::json!({
            "l4slab_version": env!("CARGO_PKG_VERSION"),
            "role": "client",
            "reverse": o.reverse,
            "server": format!("{}:{}", o.host, o.port),
            "cc": o.cc,
            "error": e.to_string(),
            "streams": [],
        });
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        if let Err(w) = std::fs::write(j, text + "\n") {
            eprintln!("l4s-flow: warning: write {}: {w}", j.display());
        }
    }
    e
}

/// Write the result to `--json` and, with -J, to stdout.
pub(crate) fn emit_json(o: &ClientOpts, json: &serde_json::Value) -> Result<(), FlowError> {
    if let Some(j) = &o.json {
        let text = serde_json::to_string_pretty(json).unwrap_or_default();
        std::fs::write(j, text + "\n")
            .map_err(|e| FlowError::io(format!("write {}", j.display()), e))?;
    }
    if o.json_stdout {
        println!("{}", serde_json::to_string_pretty(json).unwrap_or_default());
    }
    Ok(())
}

/// A stream's sender: the CC model, its -b supply, its state, on socket `sock` toward `peer`.
fn new_stream(
    i: u32,
    conn: u32,
    sock: EcnSocket,
    peer: SocketAddr,
    fl: &FlowConfig,
    o: &ClientOpts,
    mss: u32,
) -> Result<Stream, FlowError> {
    let ends = build_flow(0, i, fl, o.seed).map_err(|e| FlowError::Usage {
        flag: "--cc",
        msg: e.to_string(),
    })?;
    let mut sender = ends.sender;
    let supply = o.rate_bps.map(|rate_bps| AppSupply {
        rate_bps,
        mss_bytes: mss as u64,
        written_bytes: 0,
    });
    if supply.is_some() {
        match &mut sender {
            // An empty write queue until the first write is due.
            SimSender::Tcp(t) => t.app_write(0),
            SimSender::Dyn(_) => {
                return Err(FlowError::Usage {
                    flag: "-b",
                    msg: format!("--cc {} is not a TCP sender", o.cc),
                })
            }
        }
    }
    let la = sock
        .local_addr()
        .map_err(|e| FlowError::io("getsockname", e))?;
    Ok(Stream {
        id: i,
        conn,
        sock,
        peer,
        flow_name: format!("udp {la}>{peer}"),
        sender,
        supply,
        l4s: ends.l4s,
        phase: Phase::Sending,
        pending: None,
        more: false,
        last_rx: Nanos::ZERO,
        gate: None,
        pacing: PacingError::default(),
        data_ecn: [0; 4],
        data_pkts: 0,
        report: None,
        snap: Snapshot::default(),
        intervals: Vec::new(),
        csv_prev: (0.0, 0),
        end_s: 0.0,
        final_stats: None,
        srtt_steady: None,
        omit_snap: (o.omit == Nanos::ZERO).then(Snapshot::default),
    })
}

/// What a client run of either direction starts from ([`prepare`]).
pub struct ClientStart {
    /// The server's address.
    pub peer: SocketAddr,
    /// TCP MSS in payload bytes.
    pub mss: u32,
    /// The options as a scenario flow entry (what the l4s-core model is built from).
    pub flow: FlowConfig,
}

/// What a client run needs first, in either direction: `--json`'s target checked, the peer
/// resolved, the MSS and the flow's settings (an error is also written to `--json`).
pub fn prepare(o: &ClientOpts) -> Result<ClientStart, FlowError> {
    check_json_target(o)?;
    let early = |e: FlowError| early_json(o, e);
    let peer = resolve(&o.host, o.port).map_err(early)?;
    let mss = o.mss.unwrap_or(wire::default_mss(1500, peer.is_ipv6()));
    let flow = flow_config(o, mss).map_err(early)?;
    Ok(ClientStart { peer, mss, flow })
}

/// Run the client of a forward run (this host sends; `-R` is [`crate::reverse::run`]) from
/// [`prepare`]'s start; returns the JSON result (also written to `--json`).
pub fn run(
    o: &ClientOpts,
    emu: &EmuEnv,
    start: &ClientStart,
) -> Result<serde_json::Value, FlowError> {
    let (peer, mss, fl) = (start.peer, start.mss, &start.flow);
    let early = |e: FlowError| early_json(o, e);
    set_min_timer_slack();
    let clock = Clock::start();
    let mut streams = Vec::new();
    for i in 0..o.parallel {
        let sock = EcnSocket::bind(stream_local(o, peer, i)).map_err(early)?;
        sock.connect(peer).map_err(early)?;
        if i == 0 {
            check_mss_fits(mss, o.mss.is_some(), peer, sock.path_mtu()).map_err(early)?;
        }
        streams.push(new_stream(i, conn_id(i), sock, peer, fl, o, mss).map_err(early)?);
    }
    let mut csv = match &emu.flow_dir {
        Some(d) => Some(FlowCsv::create(
            &d.join(format!("flow-{}.csv", std::process::id())),
        )?),
        None => None,
    };
    let scalable = is_scalable(o, streams.iter().any(|s| s.l4s));
    if !o.quiet && !o.json_stdout {
        println!(
            "l4s-flow: connecting to {peer}, cc {}, {} stream(s), mss {mss}{}",
            o.cc,
            o.parallel,
            run_words(o)
        );
    }
    let mut counters = ClientCounters::default();
    let result = drive(
        o,
        mss,
        &mut streams,
        &clock,
        csv.as_mut().map(|c| (c, emu)),
        scalable,
        &mut counters,
    );
    if let Some(c) = csv.as_mut() {
        c.flush()?;
    }
    // A run that delivered nothing failed, whatever ended it.
    let result = match result {
        Ok(())
            if streams
                .iter()
                .all(|s| s.sender.stats().delivered_bytes == 0) =>
        {
            Err(FlowError::NothingDelivered(format!(
                "no byte was delivered to {peer} in {:.1} s (mss {mss}): is `l4slab flow -s` \
                 running there, does the path pass UDP datagrams of this size?",
                clock.now().as_secs_f64()
            )))
        }
        r => r,
    };
    let now = clock.now();
    let ends: Vec<_> = streams
        .iter()
        .map(|s| StreamEnd {
            id: s.id,
            conn: s.conn,
            flow: s.flow_name.clone(),
            sender: Some(s.summary(now)),
            receiver: s.report,
            intervals: serde_json::to_value(&s.intervals).unwrap_or_default(),
        })
        .collect();
    finish_run(o, peer, mss, &ends, &counters, result, "sender", scalable)
}

/// The end of a run in either direction: the JSON result (also written when the run failed,
/// with its error), then the run's error if any, else the final lines (`-q` drops the
/// interval lines only; the final lines are the run's result).
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish_run(
    o: &ClientOpts,
    peer: SocketAddr,
    mss: u32,
    ends: &[StreamEnd],
    counters: &ClientCounters,
    result: Result<(), FlowError>,
    intervals_side: &str,
    scalable: bool,
) -> Result<serde_json::Value, FlowError> {
    let json = result_json(
        o,
        peer,
        mss,
        ends,
        counters,
        result.as_ref().err(),
        intervals_side,
    );
    emit_json(o, &json)?;
    result?;
    if !o.json_stdout {
        print_summary(ends, scalable);
    }
    Ok(json)
}

/// Prague and DCTCP (or any L4S flow) print α and CE in their lines.
pub(crate) fn is_scalable(o: &ClientOpts, any_l4s: bool) -> bool {
    matches!(o.cc.as_str(), "prague" | "dctcp") || any_l4s
}

/// ", N bytes each" or ", T s", and the -b limit, for the first line.
pub(crate) fn run_words(o: &ClientOpts) -> String {
    format!(
        "{}{}",
        match o.bytes {
            Some(b) => format!(", {b} bytes each"),
            None => format!(", {:.1} s", o.duration.as_secs_f64()),
        },
        match o.rate_bps {
            Some(r) => format!(", application-limited to {:.3} Mbit/s each", r as f64 / 1e6),
            None => String::new(),
        }
    )
}

/// Drive `streams` (the sans-I/O contract of `l4s_core::tcp`) until each has sent what it
/// must and has its receiver's report, or an error ends the run. The client runs it for a
/// forward run, the server for each stream of a reverse one.
fn drive(
    o: &ClientOpts,
    mss: u32,
    streams: &mut [Stream],
    clock: &Clock,
    mut csv: Option<(&mut FlowCsv, &EmuEnv)>,
    scalable: bool,
    counters: &mut ClientCounters,
) -> Result<(), FlowError> {
    let mut batch = RecvBatch::new();
    let mut buf = Vec::with_capacity(2048);
    let mut next_iv = o.interval;
    let mut next_csv = csv.as_ref().map(|(_, emu)| emu.sample_interval);
    loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Err(FlowError::Interrupted);
        }
        let now = clock.now();
        // 1. Receive everything waiting.
        for s in streams.iter_mut() {
            drain(
                s,
                &mut batch,
                || now,
                |s, rx, now| {
                    if let Rx::Datagram(..) = rx {
                        s.last_rx = now;
                    }
                    match rx {
                        Rx::Datagram(r, Body::Segment(h, _)) => {
                            let pkt = Packet {
                                bytes: h.payload_bytes + l4s_core::tcp::TCP_IP_HEADER_BYTES,
                                ecn: r.ecn.unwrap_or(Ecn::NotEct),
                                sent_at: h.ts_val,
                                transport: Transport::Tcp(h),
                                ..Default::default()
                            };
                            s.sender.handle_packet(pkt, now);
                        }
                        Rx::Datagram(_, Body::Control(Control::Report(rep))) => {
                            s.report = Some(rep);
                            if matches!(s.phase, Phase::Closing(..)) {
                                s.phase = Phase::Finished;
                            }
                        }
                        Rx::Datagram(
                            _,
                            Body::Control(
                                Control::Done
                                | Control::Reverse(_)
                                | Control::SenderReport(_)
                                | Control::ReverseRefused,
                            ),
                        )
                        | Rx::Foreign => counters.foreign_datagrams += 1,
                        Rx::BatchEnd(n) => {
                            if n > 0 {
                                let st = s.sender.stats();
                                if st.in_flight_bytes >= 2 * mss as u64 {
                                    s.srtt_steady = Some(st.srtt);
                                }
                            }
                        }
                        // The data is acknowledged; a receiver that already exited (its ICMP
                        // port unreachable) only costs its report.
                        Rx::Failed(_) if matches!(s.phase, Phase::Closing(..)) => {
                            warn_no_report(s, "the server has gone");
                            s.phase = Phase::Finished;
                        }
                        Rx::Failed(e) => {
                            return Err(FlowError::Unreachable {
                                peer: s.peer,
                                source: e,
                            })
                        }
                    }
                    Ok(())
                },
            )?;
            counters.rx_overflow = counters.rx_overflow.max(s.sock.rx_overflow);
        }
        // 2. Timers, 3. transmit.
        let now = clock.now();
        for s in streams.iter_mut() {
            if s.phase == Phase::Finished {
                continue;
            }
            if s.sender.poll_timeout().is_some_and(|t| t <= now) {
                s.sender.handle_timeout(now);
            }
            if let Some(a) = s.supply.as_mut() {
                a.write_due(&mut s.sender, now);
            }
            if let Some((b, ecn, _)) = s.pending.take() {
                if !s.send_now(&b, ecn)? {
                    s.pending = Some((b, ecn, false));
                    continue;
                }
            }
            // A bounded burst per iteration, so that ACKs are read between bursts (the
            // role TSQ plays in Linux: the window is not dumped into the socket at once).
            let mut budget = SEND_BUDGET;
            s.more = false;
            while budget > 0 {
                let Some(p) = s.sender.poll_transmit(now) else {
                    break;
                };
                budget -= 1;
                let Some(h) = p.tcp() else { continue };
                let h = *h;
                let off = h.seq.saturating_sub(l4s_core::tcp::DATA_SEQ_START);
                wire::encode_segment(&mut buf, s.conn, &h, |dst| wire::fill_pattern(dst, off));
                if h.payload_bytes > 0 && !h.has(tcp_flags::SYN) {
                    s.data_pkts += 1;
                    s.data_ecn[p.ecn.bits() as usize] += 1;
                }
                let t_send = clock.now();
                if let Some(g) = s.gate.take() {
                    if t_send >= g {
                        s.pacing.push(t_send.0 - g.0);
                    }
                }
                if !s.send_now(&buf, p.ecn)? {
                    s.pending = Some((buf.clone(), p.ecn, true));
                    break;
                }
            }
            s.more = budget == 0;
            s.gate = s.sender.poll_timeout().filter(|&t| t > now);
            if let Some(a) = &s.supply {
                // Waiting for the application is not a pacing delay.
                let st = s.sender.stats();
                if st.delivered_bytes + st.in_flight_bytes >= a.written_bytes {
                    s.gate = None;
                }
            }
        }
        // 4. Completion and the end-of-run handshake.
        let now = clock.now();
        for s in streams.iter_mut() {
            match s.phase {
                Phase::Sending => {
                    let done = s.sender.is_done()
                        || (o.bytes.is_none() && now >= o.duration && {
                            let st = s.sender.stats();
                            st.in_flight_bytes == 0
                                || now >= o.duration + o.peer_timeout.min(Nanos::from_secs(2))
                        });
                    if done {
                        s.end_s = now.as_secs_f64();
                        s.final_stats = Some(s.sender.stats());
                        s.send_control(&Control::Done, &mut buf)?;
                        s.phase = Phase::Closing(now, now);
                    }
                }
                Phase::Closing(since, last) => {
                    if now.saturating_sub(since) >= o.peer_timeout {
                        // The data is acknowledged; only the receiver's report is missing.
                        eprintln!(
                            "l4s-flow: warning: stream {}: no report from {} after {:.1} s; its receiver counts are missing",
                            s.id,
                            s.peer,
                            o.peer_timeout.as_secs_f64()
                        );
                        s.phase = Phase::Finished;
                    } else if now.saturating_sub(last) >= Nanos::from_ms(200) {
                        if s.send_control(&Control::Done, &mut buf).is_err() {
                            warn_no_report(s, "the server has gone");
                            s.phase = Phase::Finished;
                        } else {
                            s.phase = Phase::Closing(since, now);
                        }
                    }
                }
                Phase::Finished => {}
            }
            if s.phase == Phase::Sending && now.saturating_sub(s.last_rx) > o.peer_timeout {
                if s.last_rx == Nanos::ZERO {
                    return Err(FlowError::PeerVanished(format!(
                        "no answer from {} within {:.1} s (stream {}): is `l4slab flow -s` running there, and does a firewall pass UDP port {}?",
                        s.peer,
                        o.peer_timeout.as_secs_f64(),
                        s.id,
                        s.peer.port()
                    )));
                }
                let st = s.sender.stats();
                return Err(FlowError::PeerVanished(format!(
                    "{} stopped answering: no datagram for {:.1} s (stream {}, {} bytes acknowledged); the server stopped or the path is down",
                    s.peer,
                    now.saturating_sub(s.last_rx).as_secs_f64(),
                    s.id,
                    st.delivered_bytes
                )));
            }
        }
        // 5. The end of the omitted start, interval lines and emulator samples.
        for s in streams.iter_mut().filter(|s| s.omit_snap.is_none()) {
            if now >= o.omit {
                s.omit_snap = Some(Snapshot::of(&s.sender.stats(), now.as_secs_f64()));
            }
        }
        if let Some(t) = next_iv {
            if now >= t {
                for s in streams.iter_mut() {
                    if s.phase != Phase::Sending {
                        continue;
                    }
                    let st = s.sender.stats();
                    let ts = now.as_secs_f64();
                    let row = interval_row(&s.snap, &st, ts, mss);
                    if !o.quiet {
                        let omitted = if s.omit_snap.is_none() {
                            "  (omitted)"
                        } else {
                            ""
                        };
                        println!("{}{omitted}", format_row(s.id, &row, scalable));
                    }
                    s.intervals.push(row);
                    s.snap = Snapshot::of(&st, ts);
                }
                next_iv = o.interval.map(|i| t + i);
            }
        }
        if let (Some(t), Some((c, emu))) = (next_csv, csv.as_mut()) {
            if now >= t {
                let t_s = (clock.origin_ns() + now.0).saturating_sub(emu.t0_ns) as f64 / 1e9;
                for s in streams.iter_mut() {
                    let st = s.sender.stats();
                    let (pt, pb) = s.csv_prev;
                    let dt = (t_s - pt).max(1e-9);
                    let tput = st.delivered_bytes.saturating_sub(pb) as f64 * 8.0 / dt / 1e6;
                    c.row(t_s, &s.flow_name, &o.cc, &st, tput)?;
                    s.csv_prev = (t_s, st.delivered_bytes);
                }
                next_csv = Some(t + emu.sample_interval);
            }
        }
        if streams.iter().all(|s| s.phase == Phase::Finished) {
            return Ok(());
        }
        // 6. Sleep until the earliest deadline, then spin.
        let mut deadline = now + o.peer_timeout;
        let mut want_write = false;
        for s in streams.iter() {
            match s.phase {
                Phase::Finished => continue,
                Phase::Closing(_, last) => deadline = deadline.min(last + Nanos::from_ms(200)),
                Phase::Sending => {
                    if let Some(t) = s.sender.poll_timeout() {
                        deadline = deadline.min(t);
                    }
                    if let Some(a) = &s.supply {
                        deadline = deadline.min(a.next_write_at());
                    }
                    if o.bytes.is_none() {
                        deadline = deadline.min(o.duration.max(now + Nanos::from_ms(1)));
                    }
                }
            }
            want_write |= s.pending.is_some();
            if s.more && s.phase == Phase::Sending {
                deadline = now;
            }
        }
        if let Some(t) = next_iv {
            deadline = deadline.min(t);
        }
        if let Some(t) = next_csv {
            deadline = deadline.min(t);
        }
        let now = clock.now();
        let left = deadline.saturating_sub(now);
        if left > o.spin || want_write {
            let fds: Vec<_> = streams
                .iter()
                .map(|s| (s.sock.fd(), s.pending.is_some()))
                .collect();
            let t = if want_write {
                left.0.min(1_000_000)
            } else {
                left.0 - o.spin.0
            };
            wait(&fds, Some(t)).map_err(|e| FlowError::io("ppoll", e))?;
        }
    }
}

fn warn_no_report(s: &Stream, why: &str) {
    eprintln!(
        "l4s-flow: warning: stream {}: no report from {} ({why}); its receiver counts are missing",
        s.id, s.peer
    );
}

impl Stream {
    /// What the sender measured, for the JSON result and the final lines.
    fn summary(&self, now: Nanos) -> SenderSummary {
        let st = self
            .final_stats
            .clone()
            .unwrap_or_else(|| self.sender.stats());
        let end = if self.end_s > 0.0 {
            self.end_s
        } else {
            now.as_secs_f64()
        };
        let from = self.omit_snap.unwrap_or_default();
        let counted = st.delivered_bytes.saturating_sub(from.delivered_bytes);
        SenderSummary {
            l4s: self.l4s,
            bytes_acked: st.delivered_bytes,
            start_s: from.t_s,
            duration_s: end,
            tput_mbps: counted as f64 * 8.0 / (end - from.t_s).max(1e-9) / 1e6,
            omitted_bytes: from.delivered_bytes,
            omitted_retransmits: from.retransmits,
            data_pkts_sent: self.data_pkts,
            data_ecn_sent: self.data_ecn,
            sent_pkts: st.sent_pkts,
            retransmits: st.retransmits,
            lost_pkts: st.lost_pkts,
            ce_acked: st.ce_acked,
            cwnd_pkts: st.cwnd_pkts.is_finite().then_some(st.cwnd_pkts),
            // The srtt of the run, not of the delayed-ACK tail.
            srtt_ms: self.srtt_steady.unwrap_or(st.srtt).as_ms_f64(),
            srtt_last_ms: st.srtt.as_ms_f64(),
            alpha: st.alpha.is_finite().then_some(st.alpha),
            pacing_error: self.pacing.summary(),
        }
    }
}

/// One stream's end of a run, forward or reverse: what its sender and receiver reported
/// (None when that report never arrived) and its interval rows.
pub(crate) struct StreamEnd {
    pub id: u32,
    pub conn: u32,
    pub flow: String,
    pub sender: Option<SenderSummary>,
    pub receiver: Option<ReceiverReport>,
    pub intervals: serde_json::Value,
}

/// What a reverse run's sender (the server) ends with.
#[derive(Clone, Debug)]
pub struct ReverseOutcome {
    /// The sender's measurements (also sent to the client).
    pub summary: SenderSummary,
    /// The client's receiver counts, when they arrived.
    pub report: Option<ReceiverReport>,
}

/// The server's side of a reverse run (-R): the client's sender loop ([`drive`]) on a new
/// socket connected to `peer`, for connection `conn`, with the request's settings; then the
/// [`SenderSummary`] to the client, repeated while it asks (it repeats its report until the
/// summary arrives).
pub fn serve_reverse(
    req: &ReverseRequest,
    peer: SocketAddr,
    conn: u32,
    bind: Option<std::net::IpAddr>,
    spin: Nanos,
    peer_timeout: Nanos,
) -> Result<ReverseOutcome, FlowError> {
    let o = ClientOpts {
        host: peer.ip().to_string(),
        port: peer.port(),
        bind,
        cport: None,
        cc: req.cc_name().to_string(),
        ecn: req.ecn,
        duration: req.duration,
        bytes: req.bytes,
        parallel: 1,
        rate_bps: req.rate_bps,
        interval: None,
        json: None,
        mss: Some(req.mss_bytes),
        peer_timeout,
        spin,
        seed: req.seed,
        quiet: true,
        omit: req.omit,
        json_stdout: false,
        reverse: false,
    };
    let fl = flow_config(&o, req.mss_bytes)?;
    // The server's address of the peer's family (-B when it is of that family).
    let local = match bind {
        Some(ip) if ip.is_ipv4() == peer.is_ipv4() => SocketAddr::new(ip, 0),
        _ => any_of_family(&peer.ip()),
    };
    let sock = EcnSocket::bind(local)?;
    sock.connect(peer)?;
    set_min_timer_slack();
    let mut streams = [new_stream(
        req.stream,
        conn,
        sock,
        peer,
        &fl,
        &o,
        req.mss_bytes,
    )?];
    let clock = Clock::start();
    let mut counters = ClientCounters::default();
    drive(
        &o,
        req.mss_bytes,
        &mut streams,
        &clock,
        None,
        false,
        &mut counters,
    )?;
    let [mut s] = streams;
    let summary = s.summary(clock.now());
    let mut buf = Vec::with_capacity(2048);
    let msg = Control::SenderReport(summary.clone());
    s.send_control(&msg, &mut buf)?;
    // Answer the client's repeated report (it lost our summary) for a while.
    // One second covers five of its 200 ms repeats.
    let until = clock.now() + peer_timeout.min(Nanos::from_secs(1));
    let mut batch = RecvBatch::new();
    while clock.now() < until && !INTERRUPTED.load(Ordering::Relaxed) {
        // Short waits: the signal that ends the server wakes its main thread only.
        let left = until.saturating_sub(clock.now()).0.min(100_000_000);
        wait(&[(s.sock.fd(), false)], Some(left)).map_err(|e| FlowError::io("ppoll", e))?;
        // A client that has gone (ICMP port unreachable) needs nothing more.
        let Ok(n) = s.sock.recv_batch(&mut batch) else {
            break;
        };
        let asks = (0..n).any(|i| {
            s.sock.received(&batch, i).is_some_and(|r| {
                matches!(wire::decode(r.data), Ok(d) if d.conn == conn
                    && matches!(d.body, Body::Control(Control::Report(_))))
            })
        });
        if asks {
            let _ = s.send_control(&msg, &mut buf);
        }
    }
    Ok(ReverseOutcome {
        summary,
        report: s.report,
    })
}

/// A stream's result row (from the end of the omitted start to its end) for the final line.
fn final_row(s: &SenderSummary) -> IntervalRow {
    let counted = s.bytes_acked.saturating_sub(s.omitted_bytes);
    IntervalRow {
        start_s: s.start_s,
        end_s: s.duration_s,
        bytes: counted,
        mbps: s.tput_mbps,
        retransmits: s.retransmits.saturating_sub(s.omitted_retransmits),
        cwnd_pkts: s.cwnd_pkts.unwrap_or(f64::INFINITY),
        srtt_ms: s.srtt_ms,
        pacing_mbps: 0.0,
        alpha: s.alpha,
        ce_fraction: 0.0,
    }
}

/// The final lines: per stream the sender's, the receiver's and the pacing error; [SUM].
pub(crate) fn print_summary(ends: &[StreamEnd], scalable: bool) {
    println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    let mut sum = (0u64, 0.0f64, 0u64, f64::INFINITY, 0.0f64);
    for e in ends {
        let mut end_s = 0.0;
        if let Some(sr) = &e.sender {
            let row = final_row(sr);
            end_s = row.end_s;
            sum = (
                sum.0 + row.bytes,
                sum.1 + row.mbps,
                sum.2 + row.retransmits,
                sum.3.min(row.start_s),
                sum.4.max(row.end_s),
            );
            println!("{}  sender", format_row(e.id, &row, false));
        }
        if let Some(r) = e.receiver {
            let mut line = format!(
                "[{:>3}]   0.00-{:<6.2} s  {:>12}  receiver  bad payloads {}",
                e.id,
                end_s,
                crate::report::human_bytes(r.delivered_bytes),
                r.bad_payload_pkts
            );
            if scalable {
                line.push_str(&format!(
                    "  CE {} of {} data datagrams",
                    r.ce_pkts, r.data_pkts
                ));
            }
            println!("{line}");
        }
        if let Some(sr) = &e.sender {
            let p = &sr.pacing_error;
            println!(
                "[{:>3}] pacing error (send − release): mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs over {} sends",
                e.id, p.mean_us, p.p50_us, p.p99_us, p.max_us, p.n
            );
        }
    }
    if ends.len() > 1 {
        // As iperf3: the streams' bytes and rates added up.
        println!(
            "[SUM] {:>6.2}-{:<6.2} s  {:>12}  {:>8.2} Mbit/s  retr {:<4} sender",
            if sum.3.is_finite() { sum.3 } else { 0.0 },
            sum.4,
            crate::report::human_bytes(sum.0),
            sum.1,
            sum.2
        );
    }
}

/// A stream's JSON object; the sender's keys are null when its report is missing.
fn stream_json(e: &StreamEnd) -> serde_json::Value {
    let mut v = serde_json::json!({
        "id": e.id,
        "conn": e.conn,
        "flow": e.flow,
        "receiver": e.receiver,
        "intervals": e.intervals,
    });
    let Some(s) = &e.sender else {
        for k in [
            "class",
            "bytes_acked",
            "duration_s",
            "tput_mbps",
            "omitted_bytes",
            "data_pkts_sent",
            "data_ecn_sent",
            "sent_pkts",
            "retransmits",
            "lost_pkts",
            "ce_acked",
            "cwnd_pkts",
            "srtt_ms",
            "srtt_last_ms",
            "alpha",
            "pacing_error",
        ] {
            v[k] = serde_json::Value::Null;
        }
        return v;
    };
    let mut ecn = serde_json::Map::new();
    for c in Ecn::ALL {
        ecn.insert(format!("{c:?}"), s.data_ecn_sent[c.bits() as usize].into());
    }
    let fields = serde_json::json!({
        "class": if s.l4s { "L4S" } else { "Classic" },
        "bytes_acked": s.bytes_acked,
        "duration_s": s.duration_s,
        "tput_mbps": s.tput_mbps,
        "omitted_bytes": s.omitted_bytes,
        "data_pkts_sent": s.data_pkts_sent,
        "data_ecn_sent": ecn,
        "sent_pkts": s.sent_pkts,
        "retransmits": s.retransmits,
        "lost_pkts": s.lost_pkts,
        "ce_acked": s.ce_acked,
        "cwnd_pkts": s.cwnd_pkts,
        "srtt_ms": s.srtt_ms,
        "srtt_last_ms": s.srtt_last_ms,
        "alpha": s.alpha,
        "pacing_error": s.pacing_error,
    });
    if let (Some(m), serde_json::Value::Object(f)) = (v.as_object_mut(), fields) {
        m.extend(f);
    }
    v
}

/// The run's JSON result; `intervals_side` says whose counters the interval rows are
/// ("sender" forward, "receiver" in reverse).
pub(crate) fn result_json(
    o: &ClientOpts,
    peer: SocketAddr,
    mss: u32,
    ends: &[StreamEnd],
    c: &ClientCounters,
    err: Option<&FlowError>,
    intervals_side: &str,
) -> serde_json::Value {
    let ss: Vec<_> = ends.iter().map(stream_json).collect();
    // As iperf3's "sum": the streams added up.
    let count = |k: &str| -> u64 { ss.iter().filter_map(|v| v[k].as_u64()).sum() };
    let sum = serde_json::json!({
        "bytes_acked": count("bytes_acked"),
        "tput_mbps": ss.iter().filter_map(|v| v["tput_mbps"].as_f64()).sum::<f64>(),
        "retransmits": count("retransmits"),
        "receiver_delivered_bytes": ends
            .iter()
            .filter_map(|e| e.receiver.map(|r| r.delivered_bytes))
            .sum::<u64>(),
        "streams": ss.len(),
    });
    serde_json::json!({
        "l4slab_version": env!("CARGO_PKG_VERSION"),
        "role": "client",
        "reverse": o.reverse,
        "intervals_side": intervals_side,
        "omit_s": o.omit.as_secs_f64(),
        "sum": sum,
        "server": peer.to_string(),
        "cc": o.cc,
        "ecn": o.ecn.map(|e| format!("{e:?}").to_lowercase()),
        "mss": mss,
        "seed": o.seed,
        "realtime": crate::REALTIME.load(Ordering::Relaxed),
        "bytes_per_stream": o.bytes,
        "rate_limit_bps": o.rate_bps,
        "duration_s": if o.bytes.is_none() { Some(o.duration.as_secs_f64()) } else { None },
        "foreign_datagrams": c.foreign_datagrams,
        "rx_overflow": c.rx_overflow,
        "error": err.map(|e| e.to_string()),
        "streams": ss,
    })
}
