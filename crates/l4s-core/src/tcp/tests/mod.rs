//! Tests of the TCP state machines through a deterministic fixed-delay pipe.
//! The pipe has no rate limit: windows alone shape the traffic, which keeps the expected
//! numbers hand-computable. This file holds the harness (the pipe, a hook-recording CC,
//! helpers that drop or CE-mark chosen segments); the tests live in one file per topic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use super::*;
use crate::cc::reno::Reno;
use crate::cc::{AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::packet::{tcp_flags, Ecn, Packet, TcpHeader, Transport};
use crate::time::{Nanos, Rate};
use crate::Endpoint;

const MSS: u64 = 1448;

mod accecn_feedback;
mod cubic_frozen;
mod ecn;
mod every_cc;
mod fq_pacing;
mod handshake;
mod pacing;
mod recovery;
mod robustness;
mod rto_tlp;
mod scalable;
mod transfer;

// ----- harness ---------------------------------------------------------------------------------

type Filter = Box<dyn FnMut(&mut Packet, Nanos) -> bool>;

struct Ev {
    t: Nanos,
    n: u64,
    to_receiver: bool,
    pkt: Packet,
}
impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        self.t == o.t && self.n == o.n
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    // Min-heap on (time, insertion order).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.n).cmp(&(self.t, self.n))
    }
}

/// A logged packet: when it left, the packet as it went on (after marking), and whether the
/// pipe delivered it.
#[derive(Clone, Debug)]
struct Sent {
    t: Nanos,
    pkt: Packet,
    kept: bool,
}
impl Sent {
    fn h(&self) -> &TcpHeader {
        self.pkt.tcp().expect("tcp")
    }
}

struct Pipe {
    /// Optional forward bottleneck: rate and drop-tail limit in packets (queue + the one on
    /// the wire), with exact serialisation.
    bottleneck: Option<(Rate, usize)>,
    /// CE-mark ECN-capable packets that find at least this many packets in the bottleneck.
    mark_k: Option<usize>,
    /// Departure times of the packets in the bottleneck.
    queue: std::collections::VecDeque<Nanos>,
    delay_fwd: Nanos,
    delay_rev: Nanos,
    /// Extra per-packet delay in [0, jitter) from a seeded stream: reorders packets.
    jitter: Option<(Nanos, crate::Rng)>,
    fwd: Filter,
    rev: Filter,
    fwd_log: Vec<Sent>,
    rev_log: Vec<Sent>,
}

impl Pipe {
    fn new(one_way: Nanos) -> Self {
        Pipe {
            bottleneck: None,
            mark_k: None,
            queue: std::collections::VecDeque::new(),
            delay_fwd: one_way,
            delay_rev: one_way,
            jitter: None,
            fwd: Box::new(|_, _| true),
            rev: Box::new(|_, _| true),
            fwd_log: Vec::new(),
            rev_log: Vec::new(),
        }
    }
    fn jitter_sample(&mut self) -> Nanos {
        match &mut self.jitter {
            Some((j, rng)) if j.0 > 0 => Nanos(rng.below(j.0)),
            _ => Nanos::ZERO,
        }
    }
    fn bottleneck(mut self, rate: Rate, limit_pkts: usize) -> Self {
        self.bottleneck = Some((rate, limit_pkts));
        self
    }
    fn fwd(mut self, f: impl FnMut(&mut Packet, Nanos) -> bool + 'static) -> Self {
        self.fwd = Box::new(f);
        self
    }
    fn rev(mut self, f: impl FnMut(&mut Packet, Nanos) -> bool + 'static) -> Self {
        self.rev = Box::new(f);
        self
    }

    /// Drive both ends until `until` or until the sender is done and nothing is pending.
    /// `probe` sees the sender after every event.
    fn run(
        &mut self,
        s: &mut TcpSender,
        r: &mut TcpReceiver,
        until: Nanos,
        mut probe: impl FnMut(Nanos, &TcpSender),
    ) {
        let mut heap = BinaryHeap::new();
        let mut n = 0u64;
        let mut now = Nanos::ZERO;
        for _ in 0..20_000_000u64 {
            loop {
                let mut any = false;
                while let Some(mut p) = s.poll_transmit(now) {
                    any = true;
                    let mut kept = (self.fwd)(&mut p, now);
                    let mut depart = now;
                    if let (true, Some((rate, limit))) = (kept, self.bottleneck) {
                        while self.queue.front().is_some_and(|&d| d <= now) {
                            self.queue.pop_front();
                        }
                        if self.queue.len() >= limit {
                            kept = false;
                        } else {
                            if self.mark_k.is_some_and(|k| self.queue.len() >= k)
                                && p.ecn.is_ecn_capable()
                            {
                                p.ecn = Ecn::Ce;
                            }
                            let start = self.queue.back().copied().unwrap_or(now).max(now);
                            depart = start + rate.tx_time(p.bytes as u64);
                            self.queue.push_back(depart);
                        }
                    }
                    self.fwd_log.push(Sent {
                        t: now,
                        pkt: p,
                        kept,
                    });
                    if kept {
                        n += 1;
                        heap.push(Ev {
                            t: depart + self.delay_fwd + self.jitter_sample(),
                            n,
                            to_receiver: true,
                            pkt: p,
                        });
                    }
                }
                while let Some(mut p) = r.poll_transmit(now) {
                    any = true;
                    let kept = (self.rev)(&mut p, now);
                    self.rev_log.push(Sent {
                        t: now,
                        pkt: p,
                        kept,
                    });
                    if kept {
                        n += 1;
                        heap.push(Ev {
                            t: now + self.delay_rev + self.jitter_sample(),
                            n,
                            to_receiver: false,
                            pkt: p,
                        });
                    }
                }
                if !any {
                    break;
                }
            }
            probe(now, s);
            if s.is_done() && heap.is_empty() {
                return;
            }
            let mut next = heap.peek().map(|e: &Ev| e.t);
            for t in [s.poll_timeout(), r.poll_timeout()].into_iter().flatten() {
                next = Some(next.map_or(t, |x| x.min(t)));
            }
            let Some(next) = next else { return };
            if next > until {
                return;
            }
            now = now.max(next);
            while heap.peek().is_some_and(|e| e.t <= now) {
                let e = heap.pop().expect("peeked");
                if e.to_receiver {
                    r.handle_packet(e.pkt, now);
                } else {
                    s.handle_packet(e.pkt, now);
                }
            }
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            if r.poll_timeout().is_some_and(|t| t <= now) {
                r.handle_timeout(now);
            }
        }
        panic!("harness did not converge");
    }

    fn data(&self) -> impl Iterator<Item = &Sent> {
        self.fwd_log.iter().filter(|x| x.h().payload_bytes > 0)
    }
    fn acks(&self) -> impl Iterator<Item = &Sent> {
        self.rev_log.iter().filter(|x| !x.h().has(tcp_flags::SYN))
    }
}

fn seq_of(k: u64) -> u64 {
    DATA_SEQ_START + k * MSS
}

/// Drop the first transmission of the data segments with these indices (0-based).
fn drop_first_tx(indices: &'static [u64]) -> impl FnMut(&mut Packet, Nanos) -> bool {
    let mut seen = std::collections::HashSet::new();
    move |p, _| {
        let h = p.tcp().expect("tcp");
        if h.payload_bytes == 0 {
            return true;
        }
        let k = (h.seq - DATA_SEQ_START) / MSS;
        !(indices.contains(&k) && seen.insert(k))
    }
}

/// A Reno that records the hooks the sender calls.
#[derive(Default)]
struct Log {
    ssthresh_calls: u32,
    states: Vec<CaState>,
    events: Vec<CwndEvent>,
    acks: Vec<AckSample>,
}

struct Probe {
    inner: Reno,
    log: Arc<Mutex<Log>>,
    pacing_bps: Option<u64>,
    handles_ecn: bool,
}

impl Probe {
    fn boxed(ecn: bool) -> (Box<dyn CongestionControl>, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        let cc = Probe {
            inner: Reno::with_ecn(ecn),
            log: log.clone(),
            pacing_bps: None,
            handles_ecn: false,
        };
        (Box::new(cc), log)
    }
}

impl CongestionControl for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn requested_ecn(&self) -> EcnMode {
        self.inner.requested_ecn()
    }
    fn handles_ecn(&self) -> bool {
        self.handles_ecn
    }
    fn init(&mut self, tp: &mut CcState) {
        tp.pacing_rate_bps = self.pacing_bps;
    }
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        self.log.lock().expect("log").ssthresh_calls += 1;
        self.inner.ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut CcState, ack: &AckSample) {
        self.inner.cong_avoid(tp, ack)
    }
    fn in_ack_event(&mut self, _tp: &mut CcState, ack: &AckSample) {
        self.log.lock().expect("log").acks.push(ack.clone());
    }
    fn set_state(&mut self, _tp: &mut CcState, new: CaState) {
        self.log.lock().expect("log").states.push(new);
    }
    fn cwnd_event(&mut self, _tp: &mut CcState, ev: CwndEvent) {
        self.log.lock().expect("log").events.push(ev);
    }
}

fn reno_pair(cfg: TcpConfig, rcfg: TcpConfig) -> (TcpSender, TcpReceiver) {
    let s = TcpSender::new(0, cfg.clone(), Box::new(Reno::default()));
    let r = TcpReceiver::new(0, &rcfg);
    (s, r)
}

fn sized(n_bytes: u64) -> TcpConfig {
    TcpConfig {
        bytes: Some(n_bytes),
        ..Default::default()
    }
}

/// CE-mark the first transmission of the data segments with these indices.
fn ce_first_tx(indices: Vec<u64>) -> impl FnMut(&mut Packet, Nanos) -> bool {
    let mut seen = std::collections::HashSet::new();
    move |p, _| {
        let h = *p.tcp().expect("tcp");
        if h.payload_bytes > 0 {
            let k = (h.seq - DATA_SEQ_START) / MSS;
            if indices.contains(&k) && seen.insert(k) && p.ecn.is_ecn_capable() {
                p.ecn = Ecn::Ce;
            }
        }
        true
    }
}

/// A SYN with these TCP flags and IP ECN codepoint.
fn syn(flags: u16, ecn: Ecn) -> Packet {
    Packet {
        id: 1,
        bytes: SYN_BYTES,
        ecn,
        transport: Transport::Tcp(TcpHeader {
            flags: tcp_flags::SYN | flags,
            ..Default::default()
        }),
        ..Default::default()
    }
}
