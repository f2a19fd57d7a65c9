//! `l4slab flow --app probe`: l4s-core's latency-under-load probe (`rt::probe::ProbeClient`
//! and its echoing `ProbeServer`, the responsiveness metric of draft-ietf-ippm-responsiveness)
//! over UDP, one request/response datagram pair per exchange, as the simulator runs it.
//!
//! The client's model time is the emulation clock ($L4SLAB_T0_NS = 0), so a `[[probes]]`
//! entry's start/stop/interval mean what they mean in the simulator; each datagram has the
//! entry's `packet_size` in IP bytes. The answered exchanges go to `probes-<pid>.csv`.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use l4s_core::packet::Transport;
use l4s_core::rt::probe::{ProbeClient, ProbeServer};
use l4s_core::rt::AppLog;
use l4s_core::{Ecn, Endpoint, Nanos, Packet};
use l4s_sim::workloads::ProbeSpec;
use serde::Deserialize;

use crate::clock::{monotonic_ns, set_min_timer_slack};
use crate::error::FlowError;
use crate::server::ServerOpts;
use crate::sock::{any_of_family, wait, EcnSocket, RecvBatch};
use crate::{EmuEnv, INTERRUPTED};

/// First bytes of a probe datagram.
const MAGIC: [u8; 4] = *b"L4PQ";
/// Magic + sequence number.
pub const PROBE_HEADER_BYTES: usize = 12;
/// After `stop`, answers are awaited this long before the client ends by itself.
const LINGER: Nanos = Nanos(2_000_000_000);

/// The plan file of `--app probe`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbePlan {
    /// The simulator's flow id of the probe.
    pub flow: u32,
    /// The `[[probes]]` entry as the scenario has it.
    pub probe: ProbeSpec,
}

fn ip_udp_bytes(peer: &SocketAddr) -> usize {
    (if peer.is_ipv4() { 20 } else { 40 }) + crate::wire::UDP_HEADER_BYTES
}

fn decode(b: &[u8]) -> Option<u64> {
    if b.len() < PROBE_HEADER_BYTES || b[..4] != MAGIC {
        return None;
    }
    Some(u64::from_be_bytes(b[4..12].try_into().ok()?))
}

fn usage(msg: String) -> FlowError {
    FlowError::Usage {
        flag: "--plan",
        msg,
    }
}

/// Run the probe of `plan` against `host:port` (an `l4slab flow -s --app probe`) until its
/// `stop` plus 2 s, or SIGTERM (the emulator's end); writes every answered exchange (request
/// time, RTT) to `probes-<pid>.csv` in $L4SLAB_FLOW_DIR.
pub fn run_client(
    host: &str,
    port: u16,
    bind: Option<std::net::IpAddr>,
    plan: &ProbePlan,
    emu: &EmuEnv,
) -> Result<(), FlowError> {
    let peer = crate::client::resolve(host, port)?;
    let cfg = plan.probe.config();
    let payload = (cfg.packet_bytes as usize)
        .checked_sub(ip_udp_bytes(&peer))
        .filter(|&n| n >= PROBE_HEADER_BYTES)
        .ok_or_else(|| {
            usage(format!(
                "packet_size {} is too small: a probe datagram needs {} IP bytes",
                cfg.packet_bytes,
                ip_udp_bytes(&peer) + PROBE_HEADER_BYTES
            ))
        })?;
    let stop = cfg.stop;
    let mut client = ProbeClient::new(plan.flow, cfg)
        .map_err(|e| usage(format!("{}: {} is out of range", e.param, e.value)))?;
    let mut csv = crate::workload::create_csv(emu, "probes", "t_s,rtt_ms")?;
    let local = match bind {
        Some(ip) => SocketAddr::new(ip, 0),
        None => any_of_family(&peer.ip()),
    };
    let mut sock = EcnSocket::bind(local)?;
    sock.connect(peer)?;
    set_min_timer_slack();
    let now = || Nanos(monotonic_ns().saturating_sub(emu.t0_ns));
    let mut batch = RecvBatch::new();
    let mut buf = vec![0u8; payload];
    let result = (|| loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Ok(());
        }
        let n = match sock.recv_batch(&mut batch) {
            Ok(n) => n,
            // The echo server was not up yet: that request is lost.
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => 0,
            Err(e) => return Err(FlowError::Unreachable { peer, source: e }),
        };
        let t = now();
        for i in 0..n {
            let Some(r) = sock.received(&batch, i) else {
                continue;
            };
            if let Some(seq) = decode(r.data) {
                let mut p = Packet::new(seq, plan.flow, r.data.len() as u32, Ecn::NotEct);
                p.ecn = r.ecn.unwrap_or(Ecn::NotEct);
                p.transport = Transport::Udp { seq };
                client.handle_packet(p, t);
            }
        }
        while let Some(p) = client.poll_transmit(t) {
            let Transport::Udp { seq } = p.transport else {
                continue;
            };
            buf[..4].copy_from_slice(&MAGIC);
            buf[4..12].copy_from_slice(&seq.to_be_bytes());
            match sock.send(&buf, p.ecn, None) {
                Ok(()) => {}
                // A full send buffer loses the request, as a drop would.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(FlowError::Unreachable { peer, source: e }),
            }
        }
        if stop.is_some_and(|s| t >= s + LINGER) {
            return Ok(());
        }
        let deadline = client.poll_timeout().unwrap_or(t + Nanos::from_ms(100));
        let left = deadline.saturating_sub(now());
        if left > Nanos::ZERO {
            wait(&[(sock.fd(), false)], Some(left.0)).map_err(|e| FlowError::io("ppoll", e))?;
        }
    })();
    if let (Some(f), AppLog::ProbeRtts(rtts)) = (csv.as_mut(), client.take_app_log()) {
        for (at, rtt) in rtts {
            writeln!(f, "{:.9},{:.6}", at.as_secs_f64(), rtt.as_ms_f64())
                .map_err(|e| FlowError::io("write probes csv", e))?;
        }
    }
    result
}

/// Answer every probe request at once with l4s-core's `ProbeServer` (same size, the
/// codepoint it chooses), until SIGTERM.
pub fn run_server(o: &ServerOpts) -> Result<(), FlowError> {
    let mut socks = crate::server::bind_all(o)?;
    set_min_timer_slack();
    let mut srv = ProbeServer::default();
    let mut batch = RecvBatch::new();
    let t0 = monotonic_ns();
    if !o.quiet {
        for s in &socks {
            if let Ok(a) = s.local_addr() {
                println!("l4s-flow: probe server listening on {a} (udp)");
            }
        }
    }
    while !INTERRUPTED.load(Ordering::Relaxed) {
        for s in socks.iter_mut() {
            let n = s
                .recv_batch(&mut batch)
                .map_err(|e| FlowError::io("recvmmsg", e))?;
            for i in 0..n {
                let Some(r) = s.received(&batch, i) else {
                    continue;
                };
                let Some(seq) = decode(r.data) else {
                    continue;
                };
                let now = Nanos(monotonic_ns() - t0);
                let mut p = Packet::new(seq, 0, r.data.len() as u32, Ecn::NotEct);
                p.ecn = r.ecn.unwrap_or(Ecn::NotEct);
                p.transport = Transport::Udp { seq };
                srv.handle_packet(p, now);
                if let Some(back) = srv.poll_transmit(now) {
                    // Best effort, as a lost response.
                    let _ = s.send(r.data, back.ecn, Some(r.from));
                }
            }
        }
        let fds: Vec<_> = socks.iter().map(|s| (s.fd(), false)).collect();
        wait(&fds, Some(100_000_000)).map_err(|e| FlowError::io("ppoll", e))?;
    }
    Ok(())
}
