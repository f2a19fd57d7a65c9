//! The client of a reverse run (`l4slab flow -c HOST -R`, as iperf3 -R): each stream asks the
//! server to send ([`Control::Reverse`]) and receives with the server's [`RecvConn`]; at the end
//! the server's [`SenderSummary`] makes the result the same shape as a forward run's.
//!
//! The server sends each stream from a new UDP port (its own socket, so that its sender loop is
//! the client's); this side learns that port from the first segment and connects to it.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use l4s_core::{Ecn, Nanos};

use crate::client::{
    any_of_family_or_bind, check_mss_fits, early_json, finish_run, is_scalable, run_words,
    stream_local, ClientCounters, ClientOpts, ClientStart, StreamEnd,
};
use crate::clock::{set_min_timer_slack, Clock};
use crate::drain::{drain, Connection, Rx};
use crate::error::FlowError;
use crate::receiver::{is_syn, ReceiverInterval, RecvConn};
use crate::sock::{wait, EcnSocket, RecvBatch};
use crate::wire::{self, Body, Control, ReceiverReport, ReverseRequest, SenderSummary, CCS};
use crate::{EmuEnv, INTERRUPTED};

/// How often a request or a report is repeated until it is answered.
const REPEAT: Nanos = Nanos(200_000_000);

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// The request is out (since, last sent); no segment yet.
    Asking(Nanos, Nanos),
    Receiving,
    /// The sender's Done was answered with our report (since, last sent); waiting for its
    /// summary.
    Closing(Nanos, Nanos),
    Finished,
}

struct RevStream {
    id: u32,
    conn: u32,
    sock: EcnSocket,
    /// The server's data port, learnt from its first segment.
    data_from: Option<SocketAddr>,
    rcv: Option<RecvConn>,
    phase: Phase,
    sender: Option<SenderSummary>,
    intervals: Vec<ReceiverInterval>,
    last_rx: Nanos,
}

impl Connection for RevStream {
    fn sock(&mut self) -> &mut EcnSocket {
        &mut self.sock
    }
    fn conn(&self) -> u32 {
        self.conn
    }
}

impl RevStream {
    fn received(&self) -> Option<ReceiverReport> {
        self.rcv.as_ref().map(|r| ReceiverReport {
            delivered_bytes: r.delivered(),
            ..r.rep
        })
    }
}

/// Run a reverse client from [`crate::client::prepare`]'s start (the options are validated as
/// a forward run's; the server sends with the start's flow entry).
pub fn run(
    o: &ClientOpts,
    emu: &EmuEnv,
    start: &ClientStart,
) -> Result<serde_json::Value, FlowError> {
    let fl = &start.flow;
    let (peer, mss) = (start.peer, start.mss);
    if let Some(d) = &emu.flow_dir {
        eprintln!(
            "l4s-flow: warning: -R: the sender is the server, so this client writes no flow \
             CSV to L4SLAB_FLOW_DIR ({})",
            d.display()
        );
    }
    let early = |e: FlowError| early_json(o, e);
    // The path MTU toward the server (taken as the path's from it) from a connected probe: the
    // streams' sockets stay unconnected until the server's data port is known.
    let probe = EcnSocket::bind(any_of_family_or_bind(o.bind, peer)).map_err(early)?;
    probe.connect(peer).map_err(early)?;
    check_mss_fits(mss, o.mss.is_some(), peer, probe.path_mtu()).map_err(early)?;
    drop(probe);
    let cc = CCS.iter().position(|c| *c == fl.cc).unwrap_or(0) as u8;
    set_min_timer_slack();
    let clock = Clock::start();
    let mut streams = Vec::new();
    for i in 0..o.parallel {
        let sock = EcnSocket::bind(stream_local(o, peer, i)).map_err(early)?;
        streams.push(RevStream {
            id: i,
            conn: crate::client::conn_id(i),
            sock,
            data_from: None,
            rcv: None,
            phase: Phase::Asking(Nanos::ZERO, Nanos::ZERO),
            sender: None,
            intervals: Vec::new(),
            last_rx: Nanos::ZERO,
        });
    }
    if !o.quiet && !o.json_stdout {
        println!(
            "l4s-flow: reverse: {peer} sends to this host, cc {}, {} stream(s), mss {mss}{}; \
             the interval lines are this receiver's",
            o.cc,
            o.parallel,
            run_words(o)
        );
    }
    let req = |stream: u32| ReverseRequest {
        cc,
        ecn: o.ecn,
        duration: o.duration,
        bytes: o.bytes,
        mss_bytes: mss,
        seed: o.seed,
        rate_bps: o.rate_bps,
        omit: o.omit,
        stream,
    };
    let mut counters = ClientCounters::default();
    let mut buf = Vec::with_capacity(2048);
    for s in &streams {
        wire::encode_control(&mut buf, s.conn, &Control::Reverse(req(s.id)));
        s.sock
            .send(&buf, Ecn::NotEct, Some(peer))
            .map_err(|e| early(FlowError::Unreachable { peer, source: e }))?;
    }
    let result = receive(o, peer, &mut streams, &clock, &req, &mut counters);
    let result = match result {
        Ok(())
            if streams
                .iter()
                .all(|s| s.received().is_none_or(|r| r.delivered_bytes == 0)) =>
        {
            Err(FlowError::NothingDelivered(format!(
                "no byte was delivered from {peer} in {:.1} s (mss {mss}): does the path pass \
                 UDP datagrams of this size?",
                clock.now().as_secs_f64()
            )))
        }
        r => r,
    };
    let ends: Vec<_> = streams
        .iter()
        .map(|s| {
            let la = s.sock.local_addr().map_or("?".into(), |a| a.to_string());
            let from = s.data_from.map_or("?".into(), |a| a.to_string());
            StreamEnd {
                id: s.id,
                conn: s.conn,
                flow: format!("udp {from}>{la}"),
                sender: s.sender.clone(),
                receiver: s.received(),
                intervals: serde_json::to_value(&s.intervals).unwrap_or_default(),
            }
        })
        .collect();
    let l4s = ends
        .iter()
        .any(|e| e.sender.as_ref().is_some_and(|s| s.l4s));
    finish_run(
        o,
        peer,
        mss,
        &ends,
        &counters,
        result,
        "receiver",
        is_scalable(o, l4s),
    )
}

/// Receive until every stream has the sender's summary (or gave up on it), or an error.
fn receive(
    o: &ClientOpts,
    peer: SocketAddr,
    streams: &mut [RevStream],
    clock: &Clock,
    req: &dyn Fn(u32) -> ReverseRequest,
    counters: &mut ClientCounters,
) -> Result<(), FlowError> {
    let mut batch = RecvBatch::new();
    let mut buf = Vec::with_capacity(2048);
    let mut next_iv = o.interval;
    let pt = o.peer_timeout;
    loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Err(FlowError::Interrupted);
        }
        let now = clock.now();
        for s in streams.iter_mut() {
            drain(
                s,
                &mut batch,
                || now,
                |s, rx, now| {
                    let (r, body) = match rx {
                        Rx::Datagram(r, body) => (r, body),
                        // Our data is in; a server that already exited only costs its summary.
                        Rx::Failed(_)
                            if matches!(s.phase, Phase::Closing(..) | Phase::Finished) =>
                        {
                            warn_no_summary(s, "the server has gone");
                            s.phase = Phase::Finished;
                            return Ok(());
                        }
                        Rx::Failed(e) if s.data_from.is_none() => {
                            return Err(FlowError::Unreachable { peer, source: e })
                        }
                        Rx::Failed(e) => return Err(gone(s, format!("{e}"))),
                        Rx::Foreign => {
                            counters.foreign_datagrams += 1;
                            return Ok(());
                        }
                        Rx::BatchEnd(_) => return Ok(()),
                    };
                    s.last_rx = now;
                    match body {
                        Body::Segment(h, payload) => {
                            if s.data_from.is_none() {
                                // ICMP errors and the ACKs' address: the server's data port.
                                s.sock.connect(r.from)?;
                                s.data_from = Some(r.from);
                                s.phase = Phase::Receiving;
                            }
                            if s.rcv.is_none() {
                                if !is_syn(&h) {
                                    counters.foreign_datagrams += 1;
                                    return Ok(());
                                }
                                s.rcv = Some(RecvConn::new(s.id, now));
                            }
                            if let Some(rc) = s.rcv.as_mut() {
                                rc.on_segment(h, payload, r.ecn, now);
                            }
                        }
                        Body::Control(Control::Done) => {
                            let Some(rc) = s.rcv.as_mut() else {
                                counters.foreign_datagrams += 1;
                                return Ok(());
                            };
                            let (report, first) = rc.on_done(now);
                            wire::encode_control(&mut buf, s.conn, &report);
                            // Best effort: the sender repeats Done until a report arrives.
                            let _ = s.sock.send(&buf, Ecn::NotEct, None);
                            if first {
                                s.phase = Phase::Closing(now, now);
                            }
                        }
                        Body::Control(Control::SenderReport(sum)) => {
                            s.sender = Some(sum);
                            s.phase = Phase::Finished;
                        }
                        Body::Control(Control::ReverseRefused) => {
                            return Err(FlowError::Refused(format!(
                                "-R: the server at {peer} does not serve reverse runs (it runs \
                             with --no-reverse); run `l4slab flow -s` on this host and \
                             `l4slab flow -c` there instead"
                            )))
                        }
                        Body::Control(Control::Report(_) | Control::Reverse(_)) => {
                            counters.foreign_datagrams += 1
                        }
                    }
                    Ok(())
                },
            )?;
            counters.rx_overflow = counters.rx_overflow.max(s.sock.rx_overflow);
        }
        // ACKs, repeats and silences.
        let now = clock.now();
        for s in streams.iter_mut() {
            if let (Some(rc), Some(from)) = (s.rcv.as_mut(), s.data_from) {
                let sock = &s.sock;
                rc.transmit(s.conn, now, &mut buf, from.is_ipv4(), |b, e| {
                    sock.send(b, e, None)
                })?;
            }
            match s.phase {
                Phase::Asking(since, _) if now.saturating_sub(since) > pt => {
                    return Err(FlowError::PeerVanished(format!(
                        "no answer from {peer} to the reverse request within {:.1} s (stream {}): \
                         is `l4slab flow -s` running there, does it serve -R (servers older than \
                         reverse mode ignore it), and does a firewall pass UDP from it to this \
                         host (the server sends from a new port per stream)?",
                        pt.as_secs_f64(),
                        s.id
                    )));
                }
                Phase::Asking(since, last) if now.saturating_sub(last) >= REPEAT => {
                    wire::encode_control(&mut buf, s.conn, &Control::Reverse(req(s.id)));
                    let _ = s.sock.send(&buf, Ecn::NotEct, Some(peer));
                    s.phase = Phase::Asking(since, now);
                }
                Phase::Receiving if now.saturating_sub(s.last_rx) > pt => {
                    let quiet_s = now.saturating_sub(s.last_rx).as_secs_f64();
                    return Err(gone(s, format!("no datagram for {quiet_s:.1} s")));
                }
                Phase::Closing(since, _) if now.saturating_sub(since) >= pt => {
                    warn_no_summary(s, &format!("none after {:.1} s", pt.as_secs_f64()));
                    s.phase = Phase::Finished;
                }
                Phase::Closing(since, last) if now.saturating_sub(last) >= REPEAT => {
                    // Our report again: the server answers it with its summary.
                    if let Some(rc) = s.rcv.as_mut() {
                        let (report, _) = rc.on_done(now);
                        wire::encode_control(&mut buf, s.conn, &report);
                        let _ = s.sock.send(&buf, Ecn::NotEct, None);
                    }
                    s.phase = Phase::Closing(since, now);
                }
                _ => {}
            }
        }
        if let Some(t) = next_iv {
            if now >= t {
                for s in streams.iter_mut().filter(|s| s.phase == Phase::Receiving) {
                    if let Some(rc) = s.rcv.as_mut() {
                        let row = rc.interval(now);
                        if !o.quiet {
                            // The sender leaves the first -O seconds of its run out.
                            let omitted = if now < o.omit { "  (omitted)" } else { "" };
                            println!("{}{omitted}", row.line(s.id));
                        }
                        s.intervals.push(row);
                    }
                }
                next_iv = o.interval.map(|i| t + i);
            }
        }
        if streams.iter().all(|s| s.phase == Phase::Finished) {
            return Ok(());
        }
        // Sleep until the earliest deadline.
        let mut deadline = now + pt;
        for s in streams.iter() {
            let t = match s.phase {
                Phase::Asking(since, last) => (last + REPEAT).min(since + pt + Nanos(1)),
                Phase::Receiving => s
                    .rcv
                    .as_ref()
                    .map_or(s.last_rx + pt + Nanos(1), |r| r.deadline(pt)),
                Phase::Closing(since, last) => (last + REPEAT).min(since + pt),
                Phase::Finished => continue,
            };
            deadline = deadline.min(t);
        }
        if let Some(t) = next_iv {
            deadline = deadline.min(t);
        }
        let left = deadline.saturating_sub(clock.now()).0;
        if left > 0 {
            let fds: Vec<_> = streams.iter().map(|s| (s.sock.fd(), false)).collect();
            wait(&fds, Some(left)).map_err(|e| FlowError::io("ppoll", e))?;
        }
    }
}

/// The server stopped sending mid-run.
fn gone(s: &RevStream, why: String) -> FlowError {
    FlowError::PeerVanished(format!(
        "{} stopped sending: {why} (stream {}, {} bytes received); the server stopped or the \
         path is down",
        s.data_from.map_or("the server".into(), |a| a.to_string()),
        s.id,
        s.received().map_or(0, |r| r.delivered_bytes)
    ))
}

fn warn_no_summary(s: &RevStream, why: &str) {
    eprintln!(
        "l4s-flow: warning: stream {}: no sender report from the server ({why}); its sender \
         counts are missing",
        s.id
    );
}
