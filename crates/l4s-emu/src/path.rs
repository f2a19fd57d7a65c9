//! One direction of the emulated bottleneck, sans-I/O: parse -> `Aqm::enqueue` -> link-model
//! departure -> loss/jitter -> delay line, driven by whatever clock the caller passes.
//! The link and AQM semantics are the simulator's (`l4s_sim::world`): same builders, same order.
//!
//! Time: every internal event (link service/finish, AQM timer, sampling instant, warmup,
//! delivery) carries its own scheduled instant and runs at that instant, in time order, before
//! anything the caller reports at a later `now`. A caller that wakes late therefore changes
//! nothing but the lateness of the writes: the link model, the AQM and the records see the
//! same times they would in the simulator for the same arrival times.
//!
//! The bottleneck follows `World::link_service` / `link_done` / `propagate`: when the link is
//! idle and a packet arrives it asks `next_service`, dequeues from the AQM at that instant (so
//! the AQM sees the real sojourn), serialises with `transmit`, rolls loss, adds the one-way
//! delay and jitter, and starts the next packet when the last bit has left. At equal instants
//! events run as in the simulator's usual insertion order: sample, warmup, AQM timer,
//! delivery, link; a packet pushed at exactly such an instant comes after them (in the
//! simulator that order depends on when each event happened to be scheduled, so a run fed
//! arrivals that coincide to the nanosecond with samples or trace opportunities may differ
//! from the simulator's in those ties only).

use crate::packet::{self, FlowKey, Fragment, PacketBuf, Transport};
use crate::record::{FinishCtx, MahimahiHeader, MahimahiLog, PathRecorder, PathResults};
use l4s_core::aqm::Aqm;
use l4s_core::link::{Jitter, LinkModel, LossModel, MahimahiTraceData};
use l4s_core::{Ecn, Nanos, Packet, Rng};
use l4s_sim::aqm_config::AqmConfig;
use l4s_sim::scenario::LinkConfig;
use l4s_sim::world::{build_jitter, build_link, build_loss, load_trace};
use l4s_sim::SimError;
use serde_json::Value;
use std::collections::VecDeque;
use std::path::PathBuf;

/// How one direction is built. [`PathConfig::from_tables`] reads the scenario's `[link]` and
/// `[aqm]` tables with the simulator's validation.
#[derive(Clone, Debug)]
pub struct PathConfig {
    /// The `[link]` table (validated).
    pub link: LinkConfig,
    /// The `[aqm]` table.
    pub aqm: AqmConfig,
    /// One-way propagation delay after the bottleneck.
    pub delay: Nanos,
    /// Scenario seed.
    pub seed: u64,
    /// Prefix of this direction's random streams (e.g. "uplink/"); "" gives exactly the
    /// simulator's streams ("aqm", "link/loss", "link/jitter").
    pub stream: String,
    /// Sampling period; None: the AQM's tupdate (16 ms where it has none).
    pub sample_interval: Option<Nanos>,
    /// Start of the summary window.
    pub warmup: Nanos,
    /// Directory a relative trace path resolves against.
    pub base_dir: Option<PathBuf>,
    /// Record one row per packet.
    pub per_packet: bool,
    /// The scenario document echoed into summary.json.
    pub scenario: Value,
}

impl PathConfig {
    /// A direction with `link` and `aqm`, no delay, seed 1, the simulator's streams.
    pub fn new(link: LinkConfig, aqm: AqmConfig) -> Self {
        PathConfig {
            link,
            aqm,
            delay: Nanos::ZERO,
            seed: 1,
            stream: String::new(),
            sample_interval: None,
            warmup: Nanos::ZERO,
            base_dir: None,
            per_packet: false,
            scenario: Value::Null,
        }
    }

    /// Read the `[link]` and `[aqm]` tables (as parsed TOML/JSON values) with the simulator's
    /// keys, checks and field-path errors (`link.rate: ...`, `aqm.step_thresh: ...`).
    pub fn from_tables(link: Value, aqm: Value) -> Result<Self, SimError> {
        Ok(Self::new(
            LinkConfig::from_value(link)?,
            AqmConfig::from_value(aqm)?,
        ))
    }

    /// The sampling period in effect.
    pub fn sample_period(&self) -> Nanos {
        self.sample_interval
            .unwrap_or_else(|| self.aqm.default_sample_interval())
    }
}

/// A packet inside the path (in the AQM or on the link), by slot.
#[derive(Debug, Default)]
struct Slot {
    buf: PacketBuf,
    orig_ecn: Ecn,
    payload: u32,
}

/// A packet propagating after the bottleneck.
#[derive(Debug)]
struct InFlight {
    at: Nanos,
    flow: u32,
    payload: u32,
    sent_at: Nanos,
    /// Leaves the path carrying CE.
    ce: bool,
    buf: PacketBuf,
}

/// The link's single outstanding event (as the simulator's link slot).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LinkEv {
    /// The link can take the next packet.
    Service(Nanos),
    /// The packet being serialised has left; (time, its bytes, its arrival time).
    Done(Nanos, u32, Nanos),
}

/// Internal events, in tie order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Sample,
    Warmup,
    AqmTimer,
    Deliver,
    Link,
}

/// One direction of the emulated bottleneck: parse -> Aqm::enqueue -> link model departure ->
/// delay line.
pub struct Path {
    aqm: Box<dyn Aqm>,
    aqm_cfg: AqmConfig,
    /// Ports of the datagrams being fragmented, for their later fragments.
    frag_owner: FragmentOwners,
    aqm_armed: Option<Nanos>,
    link: Box<dyn LinkModel>,
    link_ev: Option<LinkEv>,
    /// A packet is on the link (including one a `once` trace will never finish).
    busy: bool,
    stuck_pkts: u64,
    loss: Option<Box<dyn LossModel>>,
    jitter: Option<Jitter>,
    delay: Nanos,
    /// Time of the last event run (never decreases).
    t: Nanos,
    sample_period: Nanos,
    next_sample: Nanos,
    warmup_pending: bool,
    slots: Vec<Slot>,
    free: Vec<u32>,
    seq: u64,
    pool: Vec<Vec<u8>>,
    dropped: Vec<Packet>,
    line: VecDeque<InFlight>,
    /// Entries at the front of `line` already counted as delivered.
    counted: usize,
    rec: PathRecorder,
    events: u64,
    seed: u64,
    scenario: Value,
    mm_log: Option<MahimahiLog>,
    /// The trace and `once`, for the Mahimahi log's opportunity lines.
    trace: Option<(MahimahiTraceData, bool)>,
}

/// Buffers kept for reuse.
const POOL_MAX: usize = 4096;

impl Path {
    /// Build from the scenario's [link] and [aqm] tables plus this direction's one-way delay
    /// and random streams derived from the scenario seed.
    pub fn new(cfg: PathConfig) -> Result<Path, SimError> {
        let aqm = cfg
            .aqm
            .build(Rng::derive(cfg.seed, &format!("{}aqm", cfg.stream)))?;
        Self::with_aqm(cfg, aqm)
    }

    /// Like [`Path::new`] with an AQM built by the caller (e.g. a DualPI2 held at a fixed p').
    /// `cfg.aqm` must describe the same kind (it classifies packets for the records).
    pub fn with_aqm(cfg: PathConfig, aqm: Box<dyn Aqm>) -> Result<Path, SimError> {
        cfg.link.validate()?;
        if cfg.link.model == Some(l4s_sim::scenario::LinkModelKind::Wifi) {
            // The Wi-Fi MAC shares one medium between both directions; the emulator's
            // per-direction paths do not drive it yet (the simulator does).
            return Err(SimError::field(
                "link.model",
                "\"wifi\" runs in the simulator only; the emulator does not model a Wi-Fi hop yet",
            ));
        }
        let link = build_link(&cfg.link, cfg.base_dir.as_deref())?;
        let trace = match &cfg.link.trace {
            Some(f) => Some((load_trace(cfg.base_dir.as_deref(), f)?, cfg.link.once)),
            None => None,
        };
        let loss = build_loss(
            &cfg.link,
            Rng::derive(cfg.seed, &format!("{}link/loss", cfg.stream)),
        )?;
        let jitter = build_jitter(
            &cfg.link,
            Rng::derive(cfg.seed, &format!("{}link/jitter", cfg.stream)),
        );
        let sample_period = cfg.sample_period();
        if sample_period.0 == 0 {
            return Err(SimError::field("sample_interval", "\"0s\" must be > 0"));
        }
        let mut q0 = Vec::new();
        aqm.sample(Nanos::ZERO, &mut q0);
        let rec = PathRecorder::new(cfg.warmup, q0, cfg.per_packet);
        let mut p = Path {
            aqm,
            aqm_cfg: cfg.aqm,
            frag_owner: FragmentOwners::default(),
            aqm_armed: None,
            link,
            link_ev: None,
            busy: false,
            stuck_pkts: 0,
            loss,
            jitter,
            delay: cfg.delay,
            t: Nanos::ZERO,
            sample_period,
            next_sample: sample_period,
            warmup_pending: cfg.warmup.0 > 0,
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            pool: Vec::new(),
            dropped: Vec::with_capacity(16),
            line: VecDeque::new(),
            counted: 0,
            rec,
            events: 0,
            seed: cfg.seed,
            scenario: cfg.scenario,
            mm_log: None,
            trace,
        };
        if !p.warmup_pending {
            p.snapshot();
        }
        p.arm_aqm();
        Ok(p)
    }

    /// An IP packet (no link-layer header) read at time `now` (ns since the emulation
    /// started). Malformed packets are counted and dropped here.
    pub fn push(&mut self, pkt: &[u8], now: Nanos) {
        self.advance(now);
        let now = self.t;
        let parsed = match packet::parse(pkt) {
            Ok(p) => p,
            Err(_) => {
                self.rec.malformed += 1;
                return;
            }
        };
        if parsed.transport == Transport::Other {
            self.rec.unclassified += 1;
        }
        if let Some(l) = &mut self.mm_log {
            l.opportunities(now, self.link.as_ref());
            l.arrival(now, parsed.len as u32);
        }
        let key = match parsed.frag {
            Some(f) => self.frag_owner.attribute(parsed.key, f),
            None => parsed.key,
        };
        let flow = self.rec.flow_id(&key, parsed.ecn == Ecn::Ect1, now);
        self.rec.totals.sent_pkts += 1;
        let buf = PacketBuf::copy_into(self.pool.pop().unwrap_or_default(), &pkt[..parsed.len]);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Slot {
                    buf,
                    orig_ecn: parsed.ecn,
                    payload: parsed.payload_len as u32,
                };
                s
            }
            None => {
                self.slots.push(Slot {
                    buf,
                    orig_ecn: parsed.ecn,
                    payload: parsed.payload_len as u32,
                });
                (self.slots.len() - 1) as u32
            }
        };
        // The id names the slot (low 32 bits) and stays unique per run (high bits).
        let id = (self.seq << 32) | slot as u64;
        self.seq = self.seq.wrapping_add(1) & 0xffff_ffff;
        let p = Packet {
            id,
            flow,
            bytes: parsed.len as u32,
            ecn: parsed.ecn,
            sent_at: now,
            ..Default::default()
        };
        self.enqueue(p);
    }

    /// The next packet whose delivery time (link departure + delay) is <= now, with that
    /// scheduled time; its bytes already carry any CE mark with a valid checksum. Runs link
    /// service and AQM timers up to `now` as needed.
    pub fn pop_due(&mut self, now: Nanos) -> Option<(PacketBuf, Nanos)> {
        self.advance(now);
        if self.line.front()?.at > self.t {
            return None;
        }
        let f = self.line.pop_front()?;
        // Everything due by `t` has been counted by `advance`.
        self.counted = self.counted.saturating_sub(1);
        Some((f.buf, f.at))
    }

    /// The earliest instant at which pop_due can return something or the path must run (link
    /// service, txop, AQM timer, sample instant); None when idle.
    pub fn next_deadline(&self) -> Option<Nanos> {
        [
            self.line.front().map(|f| f.at),
            self.link_ev.map(|e| match e {
                LinkEv::Service(t) | LinkEv::Done(t, ..) => t,
            }),
            self.aqm_armed,
            Some(self.next_sample),
            self.warmup_pending.then(|| self.rec.warmup()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The actual write time of a packet that was scheduled at `scheduled` (lateness = actual
    /// - scheduled).
    pub fn record_sent(&mut self, scheduled: Nanos, actual: Nanos) {
        self.rec.lateness.record(scheduled, actual);
    }

    /// Hand a buffer back for reuse (optional; saves an allocation per packet).
    pub fn recycle(&mut self, buf: PacketBuf) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(buf.into_vec());
        }
    }

    /// Keep Mahimahi's link log for this direction (`--uplink-log` / `--downlink-log`);
    /// `link_name` goes into its header ("uplink", "downlink").
    pub fn enable_mahimahi_log(&mut self, header: &MahimahiHeader) {
        let trace = self.trace.as_ref().map(|(d, once)| (d, *once));
        self.mm_log = Some(MahimahiLog::new(header, trace));
    }

    /// The Mahimahi log text produced up to `now` since the last call (empty when the log is
    /// off); the caller appends it to the log file.
    pub fn take_mahimahi_log(&mut self, now: Nanos) -> String {
        self.advance(now);
        let t = self.t;
        match &mut self.mm_log {
            Some(l) => {
                l.opportunities(t, self.link.as_ref());
                l.take()
            }
            None => String::new(),
        }
    }

    /// Packets refused by the parser so far.
    pub fn malformed(&self) -> u64 {
        self.rec.malformed
    }

    /// The live AQM (for a dashboard).
    pub fn aqm(&self) -> &dyn Aqm {
        self.aqm.as_ref()
    }

    /// Everything the run directory needs for this direction: the simulator's RunResults
    /// (samples every sample interval from the live AQM, per-flow rows keyed by 5-tuple,
    /// optional per-packet rows, summary.json), lateness p50/p99/max, malformed count.
    pub fn finish(mut self, now: Nanos) -> PathResults {
        self.advance(now);
        let end = self.t;
        let unused = self.flush_unused();
        let in_line = (self.line.len() - self.counted) as u64;
        self.rec.totals.in_flight_pkts = self.aqm.backlog_pkts() + self.stuck_pkts + in_line;
        let capacity_bytes = self.link.capacity_bytes(self.rec.warmup(), end);
        let aqm_params = self.aqm_cfg.profile_json();
        let ctx = FinishCtx {
            end,
            seed: self.seed,
            sample_interval: self.sample_period,
            capacity_bytes,
            unused_txops: unused,
            delay: self.delay,
            scenario: &self.scenario,
            aqm_params: &aqm_params,
            events: self.events,
        };
        self.rec.finish(ctx, self.aqm.as_ref())
    }

    /// Run every internal event due at or before `now`, each at its own instant.
    fn advance(&mut self, now: Nanos) {
        loop {
            let mut next: Option<(Nanos, Ev)> = None;
            let mut consider = |t: Option<Nanos>, ev: Ev| {
                if let Some(t) = t {
                    if next.is_none_or(|(nt, ne)| (t, ev) < (nt, ne)) {
                        next = Some((t, ev));
                    }
                }
            };
            consider(Some(self.next_sample), Ev::Sample);
            consider(self.warmup_pending.then(|| self.rec.warmup()), Ev::Warmup);
            consider(self.aqm_armed, Ev::AqmTimer);
            consider(self.line.get(self.counted).map(|f| f.at), Ev::Deliver);
            consider(
                self.link_ev.map(|e| match e {
                    LinkEv::Service(t) | LinkEv::Done(t, ..) => t,
                }),
                Ev::Link,
            );
            let Some((t, ev)) = next else { break };
            if t > now {
                break;
            }
            self.t = self.t.max(t);
            self.events += 1;
            match ev {
                Ev::Sample => {
                    // Sample k lands at exactly k·period.
                    self.next_sample =
                        Nanos(self.sample_period.0 * (t.0 / self.sample_period.0 + 1));
                    self.rec.sample(t, self.aqm.as_ref());
                }
                Ev::Warmup => {
                    self.warmup_pending = false;
                    self.snapshot();
                }
                Ev::AqmTimer => {
                    self.aqm_armed = None;
                    self.aqm.on_timer(t);
                    self.arm_aqm();
                }
                Ev::Deliver => {
                    let f = &self.line[self.counted];
                    let (flow, payload, ce, owd) = (f.flow, f.payload, f.ce, f.at - f.sent_at);
                    self.rec.on_delivered(flow, payload, ce);
                    self.rec.on_owd(flow, owd);
                    self.counted += 1;
                }
                Ev::Link => match self.link_ev.take() {
                    Some(LinkEv::Service(_)) => self.link_service(t),
                    Some(LinkEv::Done(_, bytes, arrived)) => {
                        if let Some(l) = &mut self.mm_log {
                            l.opportunities(t, self.link.as_ref());
                            l.departure(t, bytes, arrived);
                        }
                        self.link_done(t, bytes)
                    }
                    None => {}
                },
            }
        }
        self.t = self.t.max(now);
    }

    fn arm_aqm(&mut self) {
        if let Some(w) = self.aqm.next_wakeup() {
            let w = w.max(self.t);
            if self.aqm_armed.is_none_or(|a| w < a) {
                self.aqm_armed = Some(w);
            }
        }
    }

    /// Count wasted opportunities up to now if the link is idle (they are counted lazily).
    fn flush_unused(&mut self) -> u64 {
        if !self.busy && self.link_ev.is_none() && self.aqm.is_empty() {
            let _ = self.link.next_service(self.t);
        }
        self.link.unused_txops()
    }

    fn snapshot(&mut self) {
        let unused = self.flush_unused();
        self.rec.warmup_snapshot(self.t, self.aqm.as_ref(), unused);
    }

    fn free_slot(&mut self, slot: u32) -> Slot {
        let s = std::mem::take(&mut self.slots[slot as usize]);
        self.free.push(slot);
        s
    }

    fn queue_of(&self, orig: Ecn) -> u8 {
        // A CE arrival is classified as Linux does with the default mask (with L); the
        // simulator's helper maps CE through the flow's class.
        self.aqm_cfg
            .queue_of(orig, matches!(orig, Ecn::Ect1 | Ecn::Ce))
    }

    fn enqueue(&mut self, p: Packet) {
        let now = self.t;
        if let Err(d) = self.aqm.enqueue(p, now) {
            let s = self.free_slot((d.id & 0xffff_ffff) as u32);
            let q = self.queue_of(s.orig_ecn);
            self.rec.on_packet(now, d.flow, q, Nanos::ZERO, 2);
            if let Some(l) = &mut self.mm_log {
                l.drop(now, d.bytes);
            }
            self.recycle(s.buf);
        } else if !self.busy && self.link_ev.is_none() {
            let s = self.link.next_service(now);
            if s == now {
                self.link_service(now);
            } else if s != Nanos::MAX {
                self.link_ev = Some(LinkEv::Service(s));
            }
        }
        self.arm_aqm();
    }

    /// The link takes the next packet from the AQM at `now` (`World::link_service`).
    fn link_service(&mut self, now: Nanos) {
        self.dropped.clear();
        let p = self.aqm.dequeue(now, &mut self.dropped);
        let mut dropped = std::mem::take(&mut self.dropped);
        for d in dropped.drain(..) {
            let s = self.free_slot((d.id & 0xffff_ffff) as u32);
            let q = self.queue_of(s.orig_ecn);
            self.rec.on_packet(now, d.flow, q, d.sojourn(now), 2);
            if let Some(l) = &mut self.mm_log {
                l.opportunities(now, self.link.as_ref());
                l.drop(now, d.bytes);
            }
            self.recycle(s.buf);
        }
        self.dropped = dropped;
        if let Some(p) = p {
            let mut s = self.free_slot((p.id & 0xffff_ffff) as u32);
            let q = self.queue_of(s.orig_ecn);
            let marked = p.ecn != s.orig_ecn;
            if marked && packet::set_ecn(&mut s.buf, p.ecn).is_err() {
                // Unreachable: the bytes parsed at push. Count rather than forward them.
                self.rec.malformed += 1;
            }
            self.rec.on_packet(
                now,
                p.flow,
                q,
                p.sojourn(now),
                (marked && p.ecn == Ecn::Ce) as u8,
            );
            let fin = self.link.transmit(now, p.bytes);
            self.busy = true;
            if fin == Nanos::MAX {
                // The link ended (a `once` trace) before this packet did: it stays on it.
                self.stuck_pkts += 1;
                self.recycle(s.buf);
            } else {
                self.link_ev = Some(LinkEv::Done(fin, p.bytes, p.sent_at));
                self.propagate(p, s, fin);
            }
        }
        self.arm_aqm();
    }

    /// Loss, delay and jitter for a packet whose last bit leaves at `fin` (`World::propagate`).
    fn propagate(&mut self, p: Packet, s: Slot, fin: Nanos) {
        if self.loss.as_mut().is_some_and(|l| l.is_lost()) {
            self.rec.on_link_loss(p.flow);
            self.recycle(s.buf);
            return;
        }
        let mut at = fin + self.delay;
        if let Some(j) = &mut self.jitter {
            at = j.arrival(at, self.line.back().map_or(Nanos::ZERO, |f| f.at));
        }
        let f = InFlight {
            at,
            flow: p.flow,
            payload: s.payload,
            sent_at: p.sent_at,
            ce: p.ecn == Ecn::Ce,
            buf: s.buf,
        };
        if self.line.back().is_none_or(|b| b.at <= at) {
            self.line.push_back(f);
        } else {
            // Reordering jitter: keep the line sorted (stable for equal times). Counted
            // entries are due by now <= at, so they stay in front.
            let idx = self.line.partition_point(|x| x.at <= at);
            self.line.insert(idx, f);
        }
    }

    /// The packet on the link has left at `now`: start the next one (`World::link_done`).
    fn link_done(&mut self, now: Nanos, bytes: u32) {
        self.busy = false;
        self.rec.on_link_done(now, bytes);
        if !self.aqm.is_empty() {
            let s = self.link.next_service(now);
            if s == now {
                self.link_service(now);
            } else if s != Nanos::MAX {
                self.link_ev = Some(LinkEv::Service(s));
            }
        }
    }
}

/// Attributes IP fragments to their flow: the first fragment carries the ports; later ones are
/// found by the reassembly key (src, dst, protocol, identification; RFC 791 §3.2, RFC 8200
/// §4.5), so a fragmented flow is one flow and not a portless one besides it.
#[derive(Debug, Default)]
struct FragmentOwners {
    ports: std::collections::HashMap<ReassemblyKey, (u16, u16)>,
}

/// (source, destination, protocol, identification).
type ReassemblyKey = ([u8; 16], [u8; 16], u8, u32);

impl FragmentOwners {
    /// Datagrams in reassembly remembered at once (a lost last fragment would otherwise leave
    /// its entry forever; the kernel's ipfrag_high_thresh bounds its table the same way).
    const MAX_ENTRIES: usize = 4096;

    fn attribute(&mut self, key: FlowKey, f: Fragment) -> FlowKey {
        let rkey = (key.src, key.dst, key.proto, f.id);
        let mut key = key;
        if f.first {
            if self.ports.len() >= Self::MAX_ENTRIES {
                self.ports.clear();
            }
            if !f.last {
                self.ports.insert(rkey, (key.sport, key.dport));
            }
        } else if let Some(&(sp, dp)) = self.ports.get(&rkey) {
            (key.sport, key.dport) = (sp, dp);
            if f.last {
                self.ports.remove(&rkey);
            }
        }
        key
    }
}
