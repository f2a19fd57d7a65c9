//! The receiver side (`l4s-flow -s`): one l4s-core `TcpReceiver` per (peer address,
//! connection id), created by a SYN, ended by the sender's Done or by the peer's silence.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use l4s_core::packet::{tcp_flags, Transport};
use l4s_core::tcp::{TcpConfig, TcpReceiver, DATA_SEQ_START, TCP_IP_HEADER_BYTES};
use l4s_core::{Ecn, Endpoint, Nanos, Packet};

use crate::clock::{set_min_timer_slack, Clock};
use crate::error::FlowError;
use crate::sock::{wait, EcnSocket, RecvBatch};
use crate::wire::{self, Body, Control, ReceiverReport};
use crate::INTERRUPTED;

/// Everything `l4s-flow -s` takes.
#[derive(Clone, Debug)]
pub struct ServerOpts {
    /// UDP port.
    pub port: u16,
    /// Address to bind; None = all IPv6 and IPv4 addresses.
    pub bind: Option<IpAddr>,
    /// Drop a connection whose sender sends nothing for this long.
    pub peer_timeout: Nanos,
    /// Serve one connection, then exit (-1): 0 when it ended with Done, 3 when it vanished.
    pub one_off: bool,
    /// Interval report period; None = none.
    pub interval: Option<Nanos>,
    /// Write the connection reports here at exit.
    pub json: Option<PathBuf>,
    /// No lines on stdout.
    pub quiet: bool,
}

struct Conn {
    /// Connection id (from the sender).
    id: u32,
    /// Index in order of arrival (printed).
    idx: u32,
    sock: usize,
    peer: SocketAddr,
    rcv: TcpReceiver,
    rep: ReceiverReport,
    last_rx: Nanos,
    started: Nanos,
    /// When the sender's Done arrived (the report was sent); kept a while to answer repeats.
    closed: Option<Nanos>,
    iv_bytes: u64,
    iv_ce: u64,
    iv_pkts: u64,
}

/// The result of one connection, as printed and written to `--json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConnResult {
    /// Sender address.
    pub peer: String,
    /// Connection id.
    pub conn: u32,
    /// Seconds from the SYN to the end.
    pub duration_s: f64,
    /// "done" or "vanished".
    pub end: &'static str,
    /// The receiver's counts.
    pub report: ReceiverReport,
    /// Datagrams that were not l4s-flow datagrams (whole server, at this point).
    pub foreign_datagrams: u64,
}

fn finish(c: &Conn, now: Nanos, end: &'static str, foreign: u64, quiet: bool) -> ConnResult {
    let d = now.saturating_sub(c.started).as_secs_f64();
    if !quiet {
        println!(
            "[{:>3}] {} conn {:08x} {end}: {} bytes in {:.2} s ({:.2} Mbit/s), {} data datagrams: {} ECT(1), {} ECT(0), {} CE, {} Not-ECT, {} bad payloads",
            c.idx,
            c.peer,
            c.id,
            c.rep.delivered_bytes,
            d,
            c.rep.delivered_bytes as f64 * 8.0 / d.max(1e-9) / 1e6,
            c.rep.data_pkts,
            c.rep.ect1_pkts,
            c.rep.ect0_pkts,
            c.rep.ce_pkts,
            c.rep.not_ect_pkts,
            c.rep.bad_payload_pkts
        );
    }
    ConnResult {
        peer: c.peer.to_string(),
        conn: c.id,
        duration_s: d,
        end,
        report: c.rep,
        foreign_datagrams: foreign,
    }
}

pub(crate) fn bind_all(o: &ServerOpts) -> Result<Vec<EcnSocket>, FlowError> {
    match o.bind {
        Some(ip) => Ok(vec![EcnSocket::bind(SocketAddr::new(ip, o.port))?]),
        None => {
            // A dual-stack [::] socket serves IPv4 (v4-mapped) and IPv6; fall back to IPv4
            // where the host has no IPv6.
            match EcnSocket::bind(SocketAddr::from((Ipv6Addr::UNSPECIFIED, o.port))) {
                Ok(s) => Ok(vec![s]),
                Err(FlowError::Bind { source, .. })
                    if source.raw_os_error() == Some(libc::EAFNOSUPPORT) =>
                {
                    Ok(vec![EcnSocket::bind(SocketAddr::from((
                        Ipv4Addr::UNSPECIFIED,
                        o.port,
                    )))?])
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// Serve until interrupted (or, with `one_off`, until the first connection ends).
pub fn run(o: &ServerOpts) -> Result<Vec<ConnResult>, FlowError> {
    if let Some(j) = &o.json {
        if j.exists() {
            return Err(FlowError::Exists {
                flag: "--json",
                path: j.display().to_string(),
            });
        }
    }
    let mut socks = bind_all(o)?;
    set_min_timer_slack();
    if !o.quiet {
        for s in &socks {
            if let Ok(a) = s.local_addr() {
                println!("l4s-flow: server listening on {a} (udp)");
            }
        }
    }
    let clock = Clock::start();
    let mut conns: HashMap<(SocketAddr, u32), Conn> = HashMap::new();
    let mut results = Vec::new();
    let mut foreign = 0u64;
    let mut stray = 0u64;
    let mut batch = RecvBatch::new();
    let mut buf = Vec::with_capacity(2048);
    let mut next_id = 0u32;
    let mut next_iv = o.interval;
    let rcv_cfg = TcpConfig {
        ecn: None,
        ..TcpConfig::default()
    };
    let mut outcome: Result<(), FlowError> = Ok(());
    'serve: loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        let now = clock.now();
        for (si, sock) in socks.iter_mut().enumerate() {
            loop {
                let n = match sock.recv_batch(&mut batch) {
                    Ok(n) => n,
                    // An ICMP error about an earlier reply to a vanished client: not ours to end on.
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
                    Err(e) => return Err(FlowError::io("recvmmsg", e)),
                };
                for i in 0..n {
                    let Some(r) = sock.received(&batch, i) else {
                        continue;
                    };
                    let d = match wire::decode(r.data) {
                        Ok(d) if !r.truncated => d,
                        _ => {
                            foreign += 1;
                            continue;
                        }
                    };
                    let key = (r.from, d.conn);
                    match d.body {
                        Body::Segment(h, payload) => {
                            let is_syn = h.has(tcp_flags::SYN) && !h.has(tcp_flags::ACK);
                            let c = match conns.entry(key) {
                                Entry::Occupied(e) => e.into_mut(),
                                Entry::Vacant(v) if is_syn => {
                                    if !o.quiet {
                                        println!(
                                            "l4s-flow: connection {:08x} from {}",
                                            d.conn, r.from
                                        );
                                    }
                                    next_id += 1;
                                    v.insert(Conn {
                                        id: d.conn,
                                        idx: next_id - 1,
                                        sock: si,
                                        peer: r.from,
                                        rcv: TcpReceiver::new(next_id - 1, &rcv_cfg),
                                        rep: ReceiverReport::default(),
                                        last_rx: now,
                                        started: now,
                                        closed: None,
                                        iv_bytes: 0,
                                        iv_ce: 0,
                                        iv_pkts: 0,
                                    })
                                }
                                Entry::Vacant(_) => {
                                    // A late segment of a finished or unknown connection.
                                    stray += 1;
                                    continue;
                                }
                            };
                            c.last_rx = now;
                            if c.closed.is_some() {
                                continue;
                            }
                            let ecn = r.ecn.unwrap_or(Ecn::NotEct);
                            if h.payload_bytes > 0 {
                                c.rep.data_pkts += 1;
                                c.iv_pkts += 1;
                                match ecn {
                                    Ecn::NotEct => c.rep.not_ect_pkts += 1,
                                    Ecn::Ect1 => c.rep.ect1_pkts += 1,
                                    Ecn::Ect0 => c.rep.ect0_pkts += 1,
                                    Ecn::Ce => {
                                        c.rep.ce_pkts += 1;
                                        c.iv_ce += 1;
                                    }
                                }
                                let off = h.seq.saturating_sub(DATA_SEQ_START);
                                if h.seq < DATA_SEQ_START || !wire::check_pattern(payload, off) {
                                    c.rep.bad_payload_pkts += 1;
                                }
                            }
                            let pkt = Packet {
                                bytes: h.payload_bytes + TCP_IP_HEADER_BYTES,
                                ecn,
                                sent_at: h.ts_val,
                                transport: Transport::Tcp(h),
                                ..Default::default()
                            };
                            c.rcv.handle_packet(pkt, now);
                        }
                        Body::Control(Control::Done) => {
                            let Some(c) = conns.get_mut(&key) else {
                                stray += 1;
                                continue;
                            };
                            c.last_rx = now;
                            c.rep.delivered_bytes = c.rcv.delivered_bytes();
                            wire::encode_control(&mut buf, c.id, &Control::Report(c.rep));
                            // Best effort: the sender repeats Done until a report arrives.
                            let _ = sock.send(&buf, Ecn::NotEct, Some(c.peer));
                            if c.closed.is_none() {
                                c.closed = Some(now);
                                results.push(finish(c, now, "done", foreign, o.quiet));
                            }
                        }
                        // A reverse request is not served yet (`l4slab flow -R` refuses to run).
                        Body::Control(Control::Report(_) | Control::Reverse(_)) => foreign += 1,
                    }
                }
                if n < crate::sock::BATCH {
                    break;
                }
            }
        }
        // Timers and ACKs.
        let now = clock.now();
        for c in conns.values_mut() {
            if c.closed.is_some() {
                continue;
            }
            if c.rcv.poll_timeout().is_some_and(|t| t <= now) {
                c.rcv.handle_timeout(now);
            }
            while let Some(p) = c.rcv.poll_transmit(now) {
                let Some(h) = p.tcp() else { continue };
                wire::encode_segment(&mut buf, c.id, h, |_| {});
                match socks[c.sock].send(&buf, p.ecn, Some(c.peer)) {
                    Ok(()) => {}
                    // A full send buffer or a transient error loses an ACK, as a network would.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            || e.raw_os_error() == Some(libc::ENOBUFS)
                            || e.kind() == std::io::ErrorKind::ConnectionRefused => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        return Err(FlowError::EcnUnsupported {
                            option: if c.peer.is_ipv4() {
                                "IP_TOS"
                            } else {
                                "IPV6_TCLASS"
                            },
                            source: e,
                        })
                    }
                    Err(_) => {}
                }
            }
        }
        // Ends: linger after Done, silence before it.
        let mut ended = Vec::new();
        for (k, c) in conns.iter() {
            let quiet_for = now.saturating_sub(c.last_rx);
            match c.closed {
                Some(t) => {
                    // Keep answering repeated Done for a while (our report may be lost).
                    let linger = if o.one_off {
                        Nanos::from_ms(300)
                    } else {
                        o.peer_timeout
                    };
                    if now.saturating_sub(t) >= linger {
                        ended.push((*k, true));
                    }
                }
                None if quiet_for > o.peer_timeout => ended.push((*k, false)),
                None => {}
            }
        }
        for (k, done) in ended {
            if let Some(mut c) = conns.remove(&k) {
                if !done {
                    c.rep.delivered_bytes = c.rcv.delivered_bytes();
                    if !o.quiet {
                        println!(
                            "l4s-flow: {} conn {:08x} vanished: no datagram for {:.1} s",
                            c.peer,
                            c.id,
                            now.saturating_sub(c.last_rx).as_secs_f64()
                        );
                    }
                    results.push(finish(&c, now, "vanished", foreign, o.quiet));
                    if o.one_off {
                        outcome = Err(FlowError::PeerVanished(format!(
                            "client {} vanished: no datagram for {:.1} s after {} bytes",
                            c.peer,
                            now.saturating_sub(c.last_rx).as_secs_f64(),
                            c.rep.delivered_bytes
                        )));
                        break 'serve;
                    }
                } else if o.one_off {
                    break 'serve;
                }
            }
        }
        if let Some(t) = next_iv {
            if now >= t {
                for c in conns.values_mut().filter(|c| c.closed.is_none()) {
                    let b = c.rcv.delivered_bytes();
                    let dt = o.interval.map_or(1.0, |i| i.as_secs_f64());
                    if !o.quiet {
                        println!(
                            "[{:>3}] {:>8.2} Mbit/s received, CE {:.1}% of {} data datagrams",
                            c.idx,
                            (b - c.iv_bytes) as f64 * 8.0 / dt / 1e6,
                            if c.iv_pkts > 0 {
                                100.0 * c.iv_ce as f64 / c.iv_pkts as f64
                            } else {
                                0.0
                            },
                            c.iv_pkts
                        );
                    }
                    c.iv_bytes = b;
                    c.iv_ce = 0;
                    c.iv_pkts = 0;
                }
                next_iv = o.interval.map(|i| t + i);
            }
        }
        // Sleep until the next receiver timer, silence deadline or interval.
        let mut deadline: Option<Nanos> = next_iv;
        for c in conns.values() {
            let t = match c.closed {
                Some(t) => t + o.peer_timeout,
                None => {
                    let silence = c.last_rx + o.peer_timeout + Nanos(1);
                    c.rcv.poll_timeout().map_or(silence, |d| d.min(silence))
                }
            };
            deadline = Some(deadline.map_or(t, |d| d.min(t)));
        }
        let now = clock.now();
        let fds: Vec<_> = socks.iter().map(|s| (s.fd(), false)).collect();
        // Without a deadline, wake at least once a second to notice an interrupt.
        let left = deadline.map_or(1_000_000_000, |d| d.saturating_sub(now).0);
        if left > 0 {
            wait(&fds, Some(left.min(1_000_000_000))).map_err(|e| FlowError::io("ppoll", e))?;
        }
    }
    if !o.quiet && (foreign > 0 || stray > 0) {
        println!("l4s-flow: ignored {foreign} foreign datagram(s) and {stray} late segment(s)");
    }
    if let Some(j) = &o.json {
        let v = serde_json::json!({
            "l4slab_version": env!("CARGO_PKG_VERSION"),
            "role": "server",
            "foreign_datagrams": foreign,
            "stray_segments": stray,
            "connections": results,
        });
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        std::fs::write(j, text + "\n")
            .map_err(|e| FlowError::io(format!("write {}", j.display()), e))?;
    }
    outcome.map(|_| results)
}
