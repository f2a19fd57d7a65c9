//! The receiver side (`l4s-flow -s`): one l4s-core `TcpReceiver` per (peer address,
//! connection id), created by a SYN, ended by the sender's Done or by the peer's silence.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use l4s_core::{Ecn, Nanos};

use crate::client::ReverseOutcome;
use crate::clock::{set_min_timer_slack, Clock};
use crate::error::FlowError;
use crate::receiver::{is_syn, RecvConn};
use crate::sock::{wait, EcnSocket, RecvBatch};
use crate::wire::{self, Body, Control, ReceiverReport, ReverseRequest};
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
    /// Busy-wait this long before a send deadline of a reverse run's sender.
    pub spin: Nanos,
    /// Refuse reverse runs (-R) with a [`Control::ReverseRefused`].
    pub no_reverse: bool,
}

/// A reverse run (-R) in progress: the sender's thread (`client::serve_reverse`).
struct Reverse {
    idx: u32,
    peer: SocketAddr,
    conn: u32,
    started: Nanos,
    handle: std::thread::JoinHandle<Result<ReverseOutcome, FlowError>>,
}

impl Reverse {
    fn start(
        o: &ServerOpts,
        idx: u32,
        peer: SocketAddr,
        conn: u32,
        req: ReverseRequest,
        now: Nanos,
    ) -> Self {
        if !o.quiet {
            println!(
                "l4s-flow: reverse connection {conn:08x} from {peer}: sending cc {}, {}",
                req.cc_name(),
                match req.bytes {
                    Some(b) => format!("{b} bytes"),
                    None => format!("{:.1} s", req.duration.as_secs_f64()),
                }
            );
        }
        let (bind, spin, peer_timeout) = (o.bind, o.spin, o.peer_timeout);
        let handle = std::thread::spawn(move || {
            crate::client::serve_reverse(&req, peer, conn, bind, spin, peer_timeout)
        });
        Reverse {
            idx,
            peer,
            conn,
            started: now,
            handle,
        }
    }

    /// The ended thread's result (printed unless quiet), and its error.
    fn join(self, now: Nanos, foreign: u64, quiet: bool) -> (ConnResult, Option<FlowError>) {
        let r = self.handle.join().unwrap_or_else(|_| {
            Err(FlowError::PeerVanished(
                "the reverse sender's thread panicked".into(),
            ))
        });
        // The sender's own duration (the thread also lingered for the client's repeats).
        let mut duration_s = now.saturating_sub(self.started).as_secs_f64();
        let (end, report, err, line) = match r {
            Ok(out) => {
                duration_s = out.summary.duration_s;
                let s = &out.summary;
                let line = format!(
                    "{} bytes acknowledged in {:.2} s ({:.2} Mbit/s), retr {}",
                    s.bytes_acked, s.duration_s, s.tput_mbps, s.retransmits
                );
                ("done", out.report.unwrap_or_default(), None, line)
            }
            Err(e) => (
                "vanished",
                ReceiverReport::default(),
                Some(e),
                String::new(),
            ),
        };
        if !quiet {
            match &err {
                None => println!(
                    "[{:>3}] {} conn {:08x} reverse {end}: {line}",
                    self.idx, self.peer, self.conn
                ),
                // The client's end of the path refused our data: it has gone (not a server
                // that is missing, as the error's own hint would say to a client).
                Some(FlowError::Unreachable { source, .. }) => println!(
                    "[{:>3}] {} conn {:08x} reverse ended: the client has gone ({source})",
                    self.idx, self.peer, self.conn
                ),
                Some(e) => println!(
                    "[{:>3}] {} conn {:08x} reverse ended: {e}",
                    self.idx, self.peer, self.conn
                ),
            }
        }
        let res = ConnResult {
            peer: self.peer.to_string(),
            conn: self.conn,
            duration_s,
            end,
            report,
            foreign_datagrams: foreign,
            reverse: true,
        };
        (res, err)
    }
}

struct Conn {
    /// Connection id (from the sender).
    id: u32,
    /// Index in order of arrival (printed).
    idx: u32,
    sock: usize,
    peer: SocketAddr,
    r: RecvConn,
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
    /// A reverse run (-R): this server sent and `report` is the client's receiver counts.
    pub reverse: bool,
}

fn finish(c: &Conn, now: Nanos, end: &'static str, foreign: u64, quiet: bool) -> ConnResult {
    let d = now.saturating_sub(c.r.started).as_secs_f64();
    let rep = c.r.rep;
    if !quiet {
        println!(
            "[{:>3}] {} conn {:08x} {end}: {} bytes in {:.2} s ({:.2} Mbit/s), {} data datagrams: {} ECT(1), {} ECT(0), {} CE, {} Not-ECT, {} bad payloads",
            c.idx,
            c.peer,
            c.id,
            rep.delivered_bytes,
            d,
            rep.delivered_bytes as f64 * 8.0 / d.max(1e-9) / 1e6,
            rep.data_pkts,
            rep.ect1_pkts,
            rep.ect0_pkts,
            rep.ce_pkts,
            rep.not_ect_pkts,
            rep.bad_payload_pkts
        );
    }
    ConnResult {
        peer: c.peer.to_string(),
        conn: c.id,
        duration_s: d,
        end,
        report: rep,
        foreign_datagrams: foreign,
        reverse: false,
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
    // Reverse runs (-R): one sender thread each, keyed like the receivers.
    let mut reverse: HashMap<(SocketAddr, u32), Reverse> = HashMap::new();
    // Served reverse requests, kept for a peer timeout (when they ended) against late repeats.
    let mut reverse_ended: HashMap<(SocketAddr, u32), Nanos> = HashMap::new();
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
                            let is_syn = is_syn(&h);
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
                                        r: RecvConn::new(next_id - 1, now),
                                    })
                                }
                                Entry::Vacant(_) => {
                                    // A late segment of a finished or unknown connection.
                                    stray += 1;
                                    continue;
                                }
                            };
                            c.r.on_segment(h, payload, r.ecn, now);
                        }
                        Body::Control(Control::Done) => {
                            let Some(c) = conns.get_mut(&key) else {
                                stray += 1;
                                continue;
                            };
                            let (report, first) = c.r.on_done(now);
                            wire::encode_control(&mut buf, c.id, &report);
                            // Best effort: the sender repeats Done until a report arrives.
                            let _ = sock.send(&buf, Ecn::NotEct, Some(c.peer));
                            if first {
                                results.push(finish(c, now, "done", foreign, o.quiet));
                            }
                        }
                        Body::Control(Control::Reverse(req)) => {
                            if o.no_reverse {
                                wire::encode_control(&mut buf, d.conn, &Control::ReverseRefused);
                                let _ = sock.send(&buf, Ecn::NotEct, Some(r.from));
                            } else if reverse_ended.contains_key(&key) {
                                // A late repeat of a request already served.
                                stray += 1;
                            } else if let Entry::Vacant(v) = reverse.entry(key) {
                                // A repeated request of a running one is answered by its data.
                                next_id += 1;
                                v.insert(Reverse::start(o, next_id - 1, r.from, d.conn, req, now));
                            }
                        }
                        Body::Control(
                            Control::Report(_) | Control::SenderReport(_) | Control::ReverseRefused,
                        ) => foreign += 1,
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
            let sock = &socks[c.sock];
            c.r.transmit(c.id, now, &mut buf, c.peer.is_ipv4(), |b, e| {
                sock.send(b, e, Some(c.peer))
            })?;
        }
        // Ends: linger after Done, silence before it.
        let mut ended = Vec::new();
        for (k, c) in conns.iter() {
            let quiet_for = now.saturating_sub(c.r.last_rx);
            match c.r.closed {
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
                    c.r.rep.delivered_bytes = c.r.delivered();
                    if !o.quiet {
                        println!(
                            "l4s-flow: {} conn {:08x} vanished: no datagram for {:.1} s",
                            c.peer,
                            c.id,
                            now.saturating_sub(c.r.last_rx).as_secs_f64()
                        );
                    }
                    results.push(finish(&c, now, "vanished", foreign, o.quiet));
                    if o.one_off {
                        outcome = Err(FlowError::PeerVanished(format!(
                            "client {} vanished: no datagram for {:.1} s after {} bytes",
                            c.peer,
                            now.saturating_sub(c.r.last_rx).as_secs_f64(),
                            c.r.rep.delivered_bytes
                        )));
                        break 'serve;
                    }
                } else if o.one_off && reverse.is_empty() {
                    break 'serve;
                }
            }
        }
        // Reverse senders that ended.
        let done: Vec<_> = reverse
            .iter()
            .filter(|(_, r)| r.handle.is_finished())
            .map(|(k, _)| *k)
            .collect();
        reverse_ended.retain(|_, t| now.saturating_sub(*t) < o.peer_timeout);
        for k in done {
            reverse_ended.insert(k, now);
            if let Some(rv) = reverse.remove(&k) {
                let (res, err) = rv.join(now, foreign, o.quiet);
                results.push(res);
                if o.one_off && reverse.is_empty() && conns.is_empty() {
                    if let Some(e) = err {
                        outcome = Err(e);
                    }
                    break 'serve;
                }
            }
        }
        if let Some(t) = next_iv {
            if now >= t {
                for c in conns.values_mut().filter(|c| c.r.closed.is_none()) {
                    let row = c.r.interval(now);
                    if !o.quiet {
                        println!("{}", row.line(c.idx));
                    }
                }
                next_iv = o.interval.map(|i| t + i);
            }
        }
        // Sleep until the next receiver timer, silence deadline or interval.
        let mut deadline: Option<Nanos> = next_iv;
        for c in conns.values() {
            let t = match c.r.closed {
                Some(t) => t + o.peer_timeout,
                None => c.r.deadline(o.peer_timeout),
            };
            deadline = Some(deadline.map_or(t, |d| d.min(t)));
        }
        if !reverse.is_empty() {
            // Notice a reverse sender's end soon (its thread has no way to wake this loop).
            let t = now + Nanos::from_ms(50);
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
    // Reverse senders end by themselves (Done, silence or the interrupt).
    let now = clock.now();
    for (_, rv) in reverse.drain() {
        results.push(rv.join(now, foreign, o.quiet).0);
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
