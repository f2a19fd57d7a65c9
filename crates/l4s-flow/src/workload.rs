//! `l4slab flow --app workload`: the short transfers of a scenario's `[[workloads]]` in one
//! process, each an l4s-core TCP sender over its own UDP socket (its own 5-tuple, as a TCP
//! connection), started at its arrival time on the emulation clock.
//!
//! Arrivals, sizes and congestion controls come from the simulator's generator
//! (`l4s_sim::workloads::expand`, handed over by the emulator's scenario mode as a plan
//! file); each sender is built as the simulator builds it (`flows::build_flow` with the
//! simulator's flow id and seed). The completion time is the simulator's (world.rs
//! `rev_arrive`): from the transfer's start (its SYN) to the ACK after which the sender is
//! done. A transfer the driver starts late (an arrival before the process is up, or a late
//! wake-up) is timed from its actual start; the lateness is its own column.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;

use l4s_core::packet::Transport;
use l4s_core::{Ecn, Endpoint, Nanos, Packet};
use l4s_sim::flows::{build_flow, SimSender};
use l4s_sim::scenario::{FlowConfig, FlowEcn, FlowQdisc};
use serde::Deserialize;

use crate::clock::{monotonic_ns, set_min_timer_slack};
use crate::drain::{drain, Connection, Rx};
use crate::error::FlowError;
use crate::sock::{any_of_family, wait, EcnSocket, RecvBatch};
use crate::wire::{self, Body, Control};
use crate::{EmuEnv, INTERRUPTED};

/// One transfer of the plan.
#[derive(Clone, Debug, Deserialize)]
pub struct Transfer {
    /// The simulator's flow id (also the sender's random-stream id).
    pub flow: u32,
    /// Index into `[[workloads]]`.
    pub workload: u32,
    /// Arrival, ns on the emulation clock ($L4SLAB_T0_NS = 0).
    pub start_ns: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Congestion control.
    pub cc: String,
    /// ECN use (None: what the CC asks for).
    pub ecn: Option<FlowEcn>,
}

/// The plan file of `--app workload`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadPlan {
    /// The scenario's seed.
    pub seed: u64,
    /// MSS of every transfer (None: a datagram fills a 1500-byte MTU).
    pub mss: Option<u32>,
    /// In any order; each starts at its `start_ns`.
    pub transfers: Vec<Transfer>,
}

/// Read a JSON plan file (`--plan`).
pub fn read_plan<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, FlowError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| FlowError::io(format!("--plan {}", path.display()), e))?;
    serde_json::from_str(&text).map_err(|e| FlowError::Usage {
        flag: "--plan",
        msg: format!("{}: {e}", path.display()),
    })
}

/// A new CSV file in the emulator's flow directory (None outside the emulator).
pub fn create_csv(
    emu: &EmuEnv,
    stem: &str,
    header: &str,
) -> Result<Option<std::fs::File>, FlowError> {
    let Some(d) = &emu.flow_dir else {
        return Ok(None);
    };
    let p = d.join(format!("{stem}-{}.csv", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .map_err(|e| FlowError::io(format!("create {}", p.display()), e))?;
    writeln!(f, "{header}").map_err(|e| FlowError::io(format!("write {}", p.display()), e))?;
    Ok(Some(f))
}

struct Active {
    t: usize,
    sock: EcnSocket,
    conn: u32,
    sender: SimSender,
    /// A datagram the kernel would not take yet, with its codepoint.
    pending: Option<(Vec<u8>, Ecn)>,
    /// When the sender was built and its SYN left.
    started: Nanos,
    done: bool,
}

impl Connection for Active {
    fn sock(&mut self) -> &mut EcnSocket {
        &mut self.sock
    }
    fn conn(&self) -> u32 {
        self.conn
    }
}

fn send_err(peer: SocketAddr, e: std::io::Error) -> Result<bool, FlowError> {
    match e.kind() {
        std::io::ErrorKind::WouldBlock => Ok(false),
        _ if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(false),
        _ => Err(FlowError::Unreachable { peer, source: e }),
    }
}

/// Run the transfers of `plan` to `host:port` (an `l4slab flow -s`); each completed one adds
/// a row to `fct-<pid>.csv` in $L4SLAB_FLOW_DIR. Ends when every transfer is complete, or
/// at SIGTERM (the emulator's end) with the unfinished ones left without a row.
pub fn run(
    host: &str,
    port: u16,
    bind: Option<std::net::IpAddr>,
    plan: &WorkloadPlan,
    spin: Nanos,
    emu: &EmuEnv,
) -> Result<(), FlowError> {
    let peer = crate::client::resolve(host, port)?;
    let mss = plan.mss.unwrap_or(wire::default_mss(1500, peer.is_ipv6()));
    let mut csv = create_csv(
        emu,
        "fct",
        "flow,workload,size_bytes,start_s,fct_s,start_late_us",
    )?;
    set_min_timer_slack();
    let now = || Nanos(monotonic_ns().saturating_sub(emu.t0_ns));
    let mut order: Vec<usize> = (0..plan.transfers.len()).collect();
    order.sort_by_key(|&i| (plan.transfers[i].start_ns, plan.transfers[i].flow));
    let mut next = 0;
    let mut active: Vec<Active> = Vec::new();
    let mut batch = RecvBatch::new();
    let mut buf = Vec::with_capacity(2048);
    loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Ok(());
        }
        // 1. Arrivals.
        let t = now();
        while next < order.len() && Nanos(plan.transfers[order[next]].start_ns) <= t {
            let tr = &plan.transfers[order[next]];
            next += 1;
            let fc = FlowConfig {
                cc: tr.cc.clone(),
                // The base RTT is the network's here; the model does not read it.
                rtt: Nanos::from_ms(1),
                bytes: Some(tr.bytes),
                ecn: tr.ecn,
                mss: Some(mss),
                qdisc: Some(FlowQdisc::None),
                ..FlowConfig::default()
            };
            let ends = build_flow(0, tr.flow, &fc, plan.seed).map_err(|e| FlowError::Usage {
                flag: "--plan",
                msg: format!("transfer of flow {}: {e}", tr.flow),
            })?;
            let local = match bind {
                Some(ip) => SocketAddr::new(ip, 0),
                None => any_of_family(&peer.ip()),
            };
            let sock = EcnSocket::bind(local)?;
            sock.connect(peer)?;
            active.push(Active {
                t: order[next - 1],
                sock,
                conn: crate::client::conn_id(tr.flow),
                sender: ends.sender,
                pending: None,
                started: now(),
                done: false,
            });
        }
        // 2. ACKs; a transfer is complete at the ACK after which its sender is done.
        for a in active.iter_mut() {
            drain(a, &mut batch, now, |a, rx, t| {
                match rx {
                    Rx::Datagram(r, Body::Segment(h, _)) => {
                        let pkt = Packet {
                            bytes: h.payload_bytes + l4s_core::tcp::TCP_IP_HEADER_BYTES,
                            ecn: r.ecn.unwrap_or(Ecn::NotEct),
                            sent_at: h.ts_val,
                            transport: Transport::Tcp(h),
                            ..Default::default()
                        };
                        a.sender.handle_packet(pkt, t);
                    }
                    Rx::Datagram(_, Body::Control(_)) | Rx::Foreign => {}
                    // The receiver was not up yet: the SYN is lost and retransmitted.
                    Rx::Failed(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
                    Rx::Failed(e) => return Err(FlowError::Unreachable { peer, source: e }),
                    Rx::BatchEnd(_) => {
                        if !a.done && a.sender.is_done() {
                            a.done = true;
                            let tr = &plan.transfers[a.t];
                            if let Some(f) = csv.as_mut() {
                                let start = Nanos(tr.start_ns);
                                writeln!(
                                    f,
                                    "{},{},{},{:.9},{:.9},{:.3}",
                                    tr.flow,
                                    tr.workload,
                                    tr.bytes,
                                    start.as_secs_f64(),
                                    t.saturating_sub(a.started).as_secs_f64(),
                                    a.started.saturating_sub(start).0 as f64 / 1e3
                                )
                                .map_err(|e| FlowError::io("write fct csv", e))?;
                            }
                            // Best effort: the receiver then reports and frees the connection.
                            wire::encode_control(&mut buf, a.conn, &Control::Done);
                            let _ = a.sock.send(&buf, Ecn::NotEct, None);
                        }
                    }
                }
                Ok(())
            })?;
        }
        active.retain(|a| !a.done);
        if next == order.len() && active.is_empty() {
            return Ok(());
        }
        // 3. Timers and transmissions.
        let t = now();
        for a in active.iter_mut() {
            if a.sender.poll_timeout().is_some_and(|d| d <= t) {
                a.sender.handle_timeout(t);
            }
            if let Some((b, ecn)) = a.pending.take() {
                match a.sock.send(&b, ecn, None) {
                    Ok(()) => {}
                    Err(e) => {
                        if !send_err(peer, e)? {
                            a.pending = Some((b, ecn));
                            continue;
                        }
                    }
                }
            }
            while let Some(p) = a.sender.poll_transmit(t) {
                let Some(h) = p.tcp() else { continue };
                let h = *h;
                let off = h.seq.saturating_sub(l4s_core::tcp::DATA_SEQ_START);
                wire::encode_segment(&mut buf, a.conn, &h, |dst| wire::fill_pattern(dst, off));
                if let Err(e) = a.sock.send(&buf, p.ecn, None) {
                    if !send_err(peer, e)? {
                        a.pending = Some((buf.clone(), p.ecn));
                        break;
                    }
                }
            }
        }
        // 4. Sleep until the next arrival or sender deadline, then spin.
        let t = now();
        let mut deadline = order.get(next).map_or(t + Nanos::from_secs(1), |&i| {
            Nanos(plan.transfers[i].start_ns)
        });
        let mut want_write = false;
        for a in &active {
            if let Some(d) = a.sender.poll_timeout() {
                deadline = deadline.min(d);
            }
            want_write |= a.pending.is_some();
        }
        let left = deadline.saturating_sub(t);
        if left > spin || want_write {
            let fds: Vec<_> = active
                .iter()
                .map(|a| (a.sock.fd(), a.pending.is_some()))
                .collect();
            let ns = if want_write {
                left.0.min(1_000_000)
            } else {
                left.0 - spin.0
            };
            wait(&fds, Some(ns)).map_err(|e| FlowError::io("ppoll", e))?;
        }
    }
}
