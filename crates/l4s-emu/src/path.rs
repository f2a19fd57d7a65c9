//! One direction of the emulated bottleneck, sans-I/O: parse -> `Aqm::enqueue` -> link-model
//! departure -> loss/jitter -> delay line, driven by whatever clock the caller passes.
//! The AQM, link model, loss and jitter are the simulator's own bottleneck object
//! (`l4s_sim::bottleneck::Bottleneck`), stepped in `World`'s order; a Wi-Fi link replaces the
//! link model with the shared medium of `crate::wifi`.
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
use l4s_core::link::{LinkModel, MahimahiTraceData};
use l4s_core::wifi::Dir;
use l4s_core::{Ecn, Nanos, Packet, Rng};
use l4s_sim::aqm_config::AqmConfig;
use l4s_sim::bottleneck::{Bottleneck, Service, Verdicts};
use l4s_sim::scenario::LinkConfig;
use l4s_sim::world::load_trace;
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
    /// `[link] model = "wifi"`: the client station it goes to or comes from.
    station: u8,
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

/// Internal events, in tie order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Sample,
    Warmup,
    AqmTimer,
    Deliver,
    Link,
    Wifi,
}

/// One direction of the emulated bottleneck: parse -> Aqm::enqueue -> link model departure ->
/// delay line.
pub struct Path {
    /// The AQM, link model, loss and jitter: the simulator's bottleneck object.
    bn: Bottleneck,
    /// Ports of the datagrams being fragmented, for their later fragments.
    frag_owner: FragmentOwners,
    /// The packet being serialised leaves at .0: (that instant, its bytes, its arrival time).
    done: Option<(Nanos, u32, Nanos)>,
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
    /// `--pcap`: this direction's Enhanced Packet Blocks not yet written out.
    capture: Option<Capture>,
    /// `[link] model = "wifi"`: this direction's side of the medium (the MAC replaces the link).
    wifi: Option<crate::wifi::Role>,
    /// The access point's `driver` queue rows and the summary's `wifi` block (as the simulator).
    wifi_record: Option<l4s_sim::wifi_config::WifiRecord>,
    /// The client station of each flow id (`wifi.clients[].flows`).
    flow_station: Vec<u8>,
}

/// One direction's share of the `--pcap` trace (`l4s_sim::pcap` blocks).
struct Capture {
    /// Interface index in the file's header.
    iface: u32,
    /// Wall-clock time of the emulation's start, ns since the Unix epoch.
    t0_ns: u64,
    queue_names: Vec<&'static str>,
    blocks: Vec<u8>,
}

impl Capture {
    /// The headers of packet `s` as it left the AQM (or arrived, for a drop), with the
    /// verdict `v` as a comment.
    fn note(&mut self, now: Nanos, s: &Slot, flow: u32, q: u8, sojourn: Nanos, v: u8) {
        let (buf, payload) = (&s.buf[..], s.payload);
        let hdr = buf
            .len()
            .saturating_sub(payload as usize)
            .max(20.min(buf.len()));
        let queue = self.queue_names.get(q as usize).copied().unwrap_or("?");
        let comment = l4s_sim::pcap::verdict_comment(v, queue, flow, sojourn);
        l4s_sim::pcap::packet_block(
            &mut self.blocks,
            self.iface,
            self.t0_ns + now.0,
            &buf[..hdr],
            buf.len() as u32,
            &comment,
        );
    }
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
        // A Wi-Fi direction is an access point with its own medium until `share_wifi` makes
        // the other direction its client station.
        let wifi = match &cfg.link.wifi {
            Some(w) if cfg.link.model == Some(l4s_sim::scenario::LinkModelKind::Wifi) => {
                if w.ap_mode()? == l4s_core::wifi::ApMode::AqmInTxq && w.n_clients() > 1 {
                    return Err(SimError::field(
                        "link.wifi.ap",
                        "\"aqm_in_txq\" with several [[link.wifi.clients]] is not run by the \
                         emulator (one AQM instance per direction); expected \"mac80211\" or \
                         \"driver_fifo\"",
                    ));
                }
                Some(crate::wifi::Role::new_ap(
                    w,
                    w.params_in(cfg.base_dir.as_deref())?,
                    Rng::derive(cfg.seed, &format!("{}link/wifi", cfg.stream)),
                    Rng::derive(cfg.seed, &format!("{}link/wifi/txq", cfg.stream)),
                )?)
            }
            _ => None,
        };
        let bn = Bottleneck::with_aqm(
            &cfg.link,
            &cfg.aqm,
            aqm,
            cfg.base_dir.as_deref(),
            cfg.seed,
            &cfg.stream,
        )?;
        let trace = match &cfg.link.trace {
            Some(f) => Some((load_trace(cfg.base_dir.as_deref(), f)?, cfg.link.once)),
            None => None,
        };
        let sample_period = cfg.sample_period();
        if sample_period.0 == 0 {
            return Err(SimError::field("sample_interval", "\"0s\" must be > 0"));
        }
        let mut q0 = Vec::new();
        bn.aqm.sample(Nanos::ZERO, &mut q0);
        let rec = PathRecorder::new(cfg.warmup, q0, cfg.per_packet);
        let mut p = Path {
            bn,
            frag_owner: FragmentOwners::default(),
            done: None,
            delay: cfg.delay,
            t: Nanos::ZERO,
            sample_period,
            next_sample: sample_period,
            warmup_pending: cfg.warmup.0 > 0,
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            pool: Vec::new(),
            line: VecDeque::new(),
            counted: 0,
            rec,
            events: 0,
            seed: cfg.seed,
            scenario: cfg.scenario,
            mm_log: None,
            trace,
            capture: None,
            wifi,
            wifi_record: None,
            flow_station: Vec::new(),
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
            l.opportunities(now, self.bn.link.as_ref());
            l.arrival(now, parsed.len as u32);
        }
        let key = match parsed.frag {
            Some(f) => self.frag_owner.attribute(parsed.key, f),
            None => parsed.key,
        };
        let flow = self.rec.flow_id(&key, parsed.ecn == Ecn::Ect1, now);
        let station = match &self.wifi {
            Some(w) => w.medium().borrow().stations.station(&key),
            None => 0,
        };
        if self.wifi.is_some() && self.flow_station.len() <= flow as usize {
            self.flow_station.resize(flow as usize + 1, 0);
            self.flow_station[flow as usize] = station;
        }
        self.rec.totals.sent_pkts += 1;
        let buf = PacketBuf::copy_into(self.pool.pop().unwrap_or_default(), &pkt[..parsed.len]);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Slot {
                    buf,
                    orig_ecn: parsed.ecn,
                    payload: parsed.payload_len as u32,
                    station,
                };
                s
            }
            None => {
                self.slots.push(Slot {
                    buf,
                    orig_ecn: parsed.ecn,
                    payload: parsed.payload_len as u32,
                    station,
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
            self.link_at(),
            self.wifi_at(),
            self.bn.aqm_armed,
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
                l.opportunities(t, self.bn.link.as_ref());
                l.take()
            }
            None => String::new(),
        }
    }

    /// Keep a pcapng trace of every AQM verdict (`--pcap`) as interface `iface` of the file,
    /// timestamps offset by `t0_epoch_ns` (the emulation's start on the wall clock).
    pub fn enable_capture(&mut self, iface: u32, t0_epoch_ns: u64) {
        let mut q = Vec::new();
        self.bn.aqm.sample(self.t, &mut q);
        self.capture = Some(Capture {
            iface,
            t0_ns: t0_epoch_ns,
            queue_names: q.iter().map(|s| s.name).collect(),
            blocks: Vec::new(),
        });
    }

    /// The pcapng blocks produced up to `now` since the last call (empty when the capture is
    /// off); the caller appends them to the file after its header.
    pub fn take_capture(&mut self, now: Nanos) -> Vec<u8> {
        self.advance(now);
        self.capture
            .as_mut()
            .map_or_else(Vec::new, |c| std::mem::take(&mut c.blocks))
    }

    /// One Wi-Fi medium for both directions: `ap` stays the access point (the direction it
    /// transmits), `station` becomes its client stations' direction (its own medium is
    /// dropped); `stations` says which station each packet belongs to. An error names
    /// `link.model` when only one direction is a Wi-Fi link, `emulator.stations` when a
    /// station does not exist.
    pub fn share_wifi(
        station: &mut Path,
        ap: &mut Path,
        stations: crate::wifi::StationMap,
    ) -> Result<(), SimError> {
        match (&station.wifi, &ap.wifi) {
            (None, None) if stations.ports.is_empty() => Ok(()),
            (None, None) => Err(SimError::field(
                "emulator.stations",
                "applies with [link] model = \"wifi\" only",
            )),
            (Some(_), Some(medium)) => {
                let m = medium.medium().clone();
                let n = m.borrow().mac.clients();
                stations
                    .check(n)
                    .map_err(|e| SimError::field("emulator.stations", e))?;
                m.borrow_mut().stations = stations;
                station.wifi = Some(crate::wifi::Role::Station(m.clone()));
                // The access point records its TXQs and the driver queue (rows from time 0,
                // in the simulator's order); a warmup of 0 took its snapshot already: take it
                // again.
                if let Some(t) = m.borrow_mut().txq.as_mut() {
                    t.register(ap.rec.recorder_mut());
                }
                let mut r = l4s_sim::wifi_config::WifiRecord::default();
                r.register(ap.rec.recorder_mut(), &m.borrow().mac);
                ap.wifi_record = Some(r);
                if !ap.warmup_pending {
                    ap.snapshot();
                }
                Ok(())
            }
            _ => Err(SimError::field(
                "link.model",
                "\"wifi\" on one direction only; both directions share the one medium (set it \
                 in [link], not in emulator.uplink/downlink)",
            )),
        }
    }

    /// Packets refused by the parser so far.
    pub fn malformed(&self) -> u64 {
        self.rec.malformed
    }

    /// The live AQM (for a dashboard).
    pub fn aqm(&self) -> &dyn Aqm {
        self.bn.aqm.as_ref()
    }

    /// Everything the run directory needs for this direction: the simulator's RunResults
    /// (samples every sample interval from the live AQM, per-flow rows keyed by 5-tuple,
    /// optional per-packet rows, summary.json), lateness p50/p99/max, malformed count.
    pub fn finish(mut self, now: Nanos) -> PathResults {
        self.advance(now);
        let end = self.t;
        let unused = self.flush_unused();
        let in_line = (self.line.len() - self.counted) as u64;
        self.rec.totals.in_flight_pkts =
            self.bn.aqm.backlog_pkts() + self.bn.stuck_pkts + in_line + self.wifi_held();
        let capacity_bytes = self.bn.link.capacity_bytes(self.rec.warmup(), end);
        let aqm_params = self.bn.aqm_cfg.profile_json();
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
        let window_s = (end.saturating_sub(self.rec.warmup())).as_secs_f64();
        let wifi = match (&self.wifi_record, self.ap_medium()) {
            (Some(r), Some(m)) => {
                let m = m.borrow();
                let mut block = r.summary(&m.mac, window_s);
                block["ap"] = serde_json::json!(m.ap.name());
                l4s_sim::wifi_txq::add_clients(
                    &mut block,
                    &m.mac,
                    &self.flow_station,
                    m.txq.as_ref(),
                );
                Some(block)
            }
            _ => None,
        };
        let mut res = self.rec.finish(ctx, self.bn.aqm.as_ref());
        if let Some(block) = wifi {
            l4s_sim::wifi_config::add_to_summary(&mut res.run.summary_json, block);
        }
        res
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
            consider(self.bn.aqm_armed, Ev::AqmTimer);
            consider(self.line.get(self.counted).map(|f| f.at), Ev::Deliver);
            consider(self.link_at(), Ev::Link);
            consider(self.wifi_at(), Ev::Wifi);
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
                    self.wifi_sample(t);
                    self.rec.sample(t, self.bn.aqm.as_ref());
                }
                Ev::Warmup => {
                    self.warmup_pending = false;
                    self.snapshot();
                }
                Ev::AqmTimer => {
                    self.bn.aqm_timer(t);
                    self.arm_aqm();
                }
                Ev::Deliver => {
                    let f = &self.line[self.counted];
                    let (flow, payload, ce, owd) = (f.flow, f.payload, f.ce, f.at - f.sent_at);
                    self.rec.on_delivered(flow, payload, ce);
                    self.rec.on_owd(flow, owd);
                    self.counted += 1;
                }
                Ev::Wifi => self.wifi_event(t),
                Ev::Link => match self.done.take() {
                    Some((_, bytes, arrived)) => {
                        if let Some(l) = &mut self.mm_log {
                            l.opportunities(t, self.bn.link.as_ref());
                            l.departure(t, bytes, arrived);
                        }
                        self.link_done(t, bytes)
                    }
                    None => {
                        self.bn.serve_due();
                        self.link_service(t);
                    }
                },
            }
        }
        self.t = self.t.max(now);
    }

    /// The slot of packet `id`, taken out of the store.
    fn free_slot(&mut self, id: u64) -> Slot {
        let slot = (id & 0xffff_ffff) as u32;
        self.free.push(slot);
        std::mem::take(&mut self.slots[slot as usize])
    }

    /// The MAC's next instant (the access point's side runs it); on the station's side, now
    /// when the medium holds uplink packets for it.
    fn wifi_at(&self) -> Option<Nanos> {
        match &self.wifi {
            Some(crate::wifi::Role::Ap(m)) => m.borrow().mac.poll_timeout(),
            Some(crate::wifi::Role::Station(m)) => {
                m.borrow().up_out.front().map(|e| e.0.max(self.t))
            }
            None => None,
        }
    }

    /// The medium when this direction is its access point.
    fn ap_medium(&self) -> Option<std::rc::Rc<std::cell::RefCell<crate::wifi::Medium>>> {
        match &self.wifi {
            Some(crate::wifi::Role::Ap(m)) => Some(m.clone()),
            _ => None,
        }
    }

    /// Update the driver queue's row before a sample (`World::wifi_sample`).
    fn wifi_sample(&mut self, t: Nanos) {
        let m = self.ap_medium();
        if let (Some(r), Some(m)) = (self.wifi_record.as_mut(), m) {
            let mut m = m.borrow_mut();
            let m = &mut *m;
            if let Some(x) = m.txq.as_mut() {
                x.sample(self.rec.recorder_mut(), &m.mac, t);
            }
            r.sample(self.rec.recorder_mut(), &m.mac, t);
        }
    }

    /// Packets the MAC holds for this direction (driver queue, in the air, awaiting retry,
    /// behind a hole in the reorder buffer; the station's queue).
    fn wifi_held(&self) -> u64 {
        match &self.wifi {
            Some(crate::wifi::Role::Ap(m)) => {
                let m = m.borrow();
                let txq = m.txq.as_ref().map_or(0, |t| t.txqs.total_pkts());
                m.mac.driver_backlog(self.t).1 .0 + m.mac.reorder_held().0 + txq
            }
            Some(crate::wifi::Role::Station(m)) => {
                let m = m.borrow();
                m.mac.queued_up() + m.mac.reorder_held().1 + m.up_out.len() as u64
            }
            None => 0,
        }
    }

    /// Move packets from the AQM to the driver queue while it has room (the AQM's dequeue
    /// happens when the driver pulls, as with mac80211's AQL; `World::wifi_pull`). With
    /// `ap = "mac80211"` the AQM is the root qdisc: it is dequeued at once into the stations'
    /// TXQs, and the driver's scheduling loop runs when its hardware queue is empty (else on
    /// TX status).
    fn wifi_pull(&mut self, now: Nanos) {
        let Some(crate::wifi::Role::Ap(m)) = self.wifi.clone() else {
            return;
        };
        if m.borrow().txq.is_some() {
            self.txq_fill(&m, now);
            let wake = m.borrow().mac.schedules_on_enqueue();
            if wake {
                self.txq_pull(&m, now);
            }
            self.arm_aqm();
            return;
        }
        if m.borrow().mac.params().driver == l4s_core::wifi::TxDriver::Ath9k {
            // `ap = "aqm_in_txq"` with ath9k, one client station (`World::ath9k_aqm_pull`).
            let (bn, mut v) = self.bottleneck(true);
            let mut mm = m.borrow_mut();
            mm.mac
                .ath_tx_sched_aggr_from(0, now, || bn.dequeue(now, &mut v));
            if let Some(r) = self.wifi_record.as_mut() {
                r.note_pending(&mm.mac, now);
            }
            drop(mm);
            self.arm_aqm();
            return;
        }
        while m.borrow().mac.has_room() && !self.bn.aqm.is_empty() {
            let (bn, mut v) = self.bottleneck(true);
            let Some(p) = bn.dequeue(now, &mut v) else {
                break;
            };
            let sta = self.slots[(p.id & 0xffff_ffff) as usize].station as usize;
            m.borrow_mut().mac.push_down_to(sta, p, now);
            if let Some(r) = self.wifi_record.as_mut() {
                r.note_pending(&m.borrow().mac, now);
            }
        }
        self.arm_aqm();
    }

    /// The root qdisc is dequeued as soon as it holds a packet (`IFF_NO_QUEUE`): each packet
    /// goes into its station's TXQ (`World::txq_fill`); the TXQ's overflow drops free their
    /// slots.
    fn txq_fill(&mut self, m: &std::rc::Rc<std::cell::RefCell<crate::wifi::Medium>>, now: Nanos) {
        while !self.bn.aqm.is_empty() {
            let (bn, mut v) = self.bottleneck(true);
            let Some(p) = bn.dequeue(now, &mut v) else {
                break;
            };
            let sta = self.slots[(p.id & 0xffff_ffff) as usize].station as usize;
            let mut mm = m.borrow_mut();
            let Some(t) = mm.txq.as_mut() else { break };
            t.enqueue(sta, p, now, |q, d| self.txq_verdict(now, d, q, 2));
        }
    }

    /// The driver's scheduling loop over the stations' TXQs (`World::txq_pull`): CoDel's
    /// drops and marks are the TXQ's verdicts, written into the packets' bytes.
    fn txq_pull(&mut self, m: &std::rc::Rc<std::cell::RefCell<crate::wifi::Medium>>, now: Nanos) {
        let mut mm = m.borrow_mut();
        let mm = &mut *mm;
        let Some(t) = mm.txq.as_mut() else { return };
        t.pull(&mut mm.mac, now, |mac, q, p, v| {
            self.txq_verdict(now, p, q, v);
            if v != 2 {
                if let Some(r) = self.wifi_record.as_mut() {
                    r.note_pending(mac, now);
                }
            }
        });
    }

    /// A TXQ verdict on packet `p` (row `q`): a drop (2) frees its slot, a CE mark (1) is
    /// written into its IP header; each is recorded as the simulator's `note_verdict`.
    fn txq_verdict(&mut self, now: Nanos, p: &Packet, q: u8, v: u8) {
        let sojourn = now - p.enqueued_at;
        let slot = (p.id & 0xffff_ffff) as usize;
        self.rec.on_packet(now, p.flow, q, sojourn, v);
        if let Some(c) = &mut self.capture {
            c.note(now, &self.slots[slot], p.flow, q, sojourn, v);
        }
        if v == 2 {
            let s = self.free_slot(p.id);
            self.recycle(s.buf);
        } else if v == 1 && packet::set_ecn(&mut self.slots[slot].buf, Ecn::Ce).is_err() {
            // Unreachable: the bytes parsed at push.
            self.rec.malformed += 1;
        }
    }

    /// The MAC's instant `t`: on the access point's side, run the medium, put what reached
    /// the client on the delay line, hand the uplink's to the station's side, refill the
    /// driver queue (`World::wifi_timer`); on the station's side, collect the uplink's.
    fn wifi_event(&mut self, t: Nanos) {
        match self.wifi.clone() {
            Some(crate::wifi::Role::Ap(m)) => {
                let mut mm = m.borrow_mut();
                mm.mac.handle_timeout(t);
                let mm_ = &mut *mm;
                if let Some(x) = mm_.txq.as_mut() {
                    x.register_airtime(&mm_.mac);
                }
                let first_tx: Vec<(u32, Nanos)> = mm.mac.drain_first_tx().collect();
                let mut down = Vec::new();
                while let Some((dir, p)) = mm.mac.poll_dropped() {
                    match dir {
                        Dir::Down => down.push((p, false)),
                        Dir::Up => mm.up_out.push_back((t, p, false)),
                    }
                }
                while let Some((dir, p)) = mm.mac.poll_delivered() {
                    if t >= self.rec.warmup() {
                        if let Some(r) = self.wifi_record.as_mut() {
                            r.on_mac_delivered(dir, (t - p.enqueued_at).0);
                        }
                    }
                    match dir {
                        Dir::Down => down.push((p, true)),
                        Dir::Up => mm.up_out.push_back((t, p, true)),
                    }
                }
                drop(mm);
                if let Some(r) = &self.wifi_record {
                    for (flow, wait) in first_tx {
                        self.rec.on_packet(t, flow, r.driver_q, wait, 0);
                    }
                }
                for (p, delivered) in down {
                    let s = self.free_slot(p.id);
                    if delivered {
                        // Utilisation counts what the MAC delivered (released in order to
                        // the station) against the PHY rate, as the simulator's
                        // `World::wifi_timer` -> `propagate` does.
                        self.rec.on_link_done(t, p.bytes);
                        self.propagate(p, s, t);
                    } else {
                        // Dropped after the retry limit (or by the reorder buffer's timeout).
                        self.rec.on_link_loss(p.flow);
                        self.recycle(s.buf);
                    }
                }
                if m.borrow().txq.is_some() {
                    // TX status: the driver's tx worker schedules the TXQs again.
                    self.txq_pull(&m, t);
                }
                self.wifi_pull(t);
            }
            Some(crate::wifi::Role::Station(m)) => loop {
                let e = m.borrow_mut().up_out.pop_front();
                let Some((at, p, delivered)) = e else { break };
                let s = self.free_slot(p.id);
                if !delivered {
                    self.rec.on_link_loss(p.flow);
                    self.recycle(s.buf);
                    continue;
                }
                // As the simulator's uplink: the one-way delay after the medium, no loss roll.
                self.insert_in_line(at + self.delay, &p, s);
            },
            None => {}
        }
    }

    /// The bottleneck and where its verdicts go; `hold`: a passed packet keeps its slot.
    fn bottleneck(&mut self, hold: bool) -> (&mut Bottleneck, PathVerdicts<'_>) {
        let v = PathVerdicts {
            rec: &mut self.rec,
            slots: &mut self.slots,
            free: &mut self.free,
            pool: &mut self.pool,
            capture: &mut self.capture,
            mm_log: &mut self.mm_log,
            passed: None,
            hold,
        };
        (&mut self.bn, v)
    }

    /// The link's next instant: the serialised packet's end, or the pending service.
    fn link_at(&self) -> Option<Nanos> {
        self.done.map(|d| d.0).or(self.bn.service_at)
    }

    fn arm_aqm(&mut self) {
        // The instant is polled by `advance` (no event list to push it to).
        let _ = self.bn.arm_aqm(self.t);
    }

    /// Count wasted opportunities up to now if the link is idle (they are counted lazily).
    fn flush_unused(&mut self) -> u64 {
        self.bn.flush_unused(self.t)
    }

    fn snapshot(&mut self) {
        let unused = self.flush_unused();
        self.wifi_sample(self.t);
        if let (Some(_), Some(m)) = (&self.wifi_record, self.ap_medium()) {
            // The `wifi` block counts from the end of warmup (`World::wifi_warmup`).
            let mut m = m.borrow_mut();
            m.mac.reset_stats();
            if let Some(x) = m.txq.as_mut() {
                x.warmup();
            }
        }
        self.rec
            .warmup_snapshot(self.t, self.bn.aqm.as_ref(), unused);
    }

    fn enqueue(&mut self, p: Packet) {
        let now = self.t;
        if let Some(crate::wifi::Role::Station(m)) = self.wifi.clone() {
            // The client station's queue (tail drop at uplink_limit_pkts), no AQM: as the
            // simulator's uplink. The packet's bytes stay in their slot until the MAC is done.
            let sta = self.slots[(p.id & 0xffff_ffff) as usize].station as usize;
            if !m.borrow_mut().mac.push_up_from(sta, p, now) {
                let s = self.free_slot(p.id);
                self.rec.on_link_loss(p.flow);
                self.recycle(s.buf);
            }
            return;
        }
        let (bn, mut v) = self.bottleneck(false);
        if bn.enqueue(p, now, &mut v) {
            if self.wifi.is_some() {
                self.wifi_pull(now);
            } else if self.bn.idle() {
                self.start_service(now);
            }
        }
        self.arm_aqm();
    }

    /// The idle link has a packet waiting: serve it now, or when the link model next can
    /// (`World::start_service`).
    fn start_service(&mut self, now: Nanos) {
        if self.bn.start_service(now) == Service::Now {
            self.link_service(now);
        }
    }

    /// The link takes the next packet from the AQM at `now` (`World::link_service`).
    fn link_service(&mut self, now: Nanos) {
        let (bn, mut v) = self.bottleneck(false);
        let p = bn.dequeue(now, &mut v);
        if let (Some(p), Some(s)) = (p, v.passed.take()) {
            match self.bn.transmit(now, p.bytes) {
                Some(fin) => {
                    self.done = Some((fin, p.bytes, p.sent_at));
                    self.propagate(p, s, fin);
                }
                // The link ended (a `once` trace) before this packet did: it stays on it.
                None => self.recycle(s.buf),
            }
        }
        self.arm_aqm();
    }

    /// Loss, delay and jitter for a packet whose last bit leaves at `fin` (`World::propagate`).
    fn propagate(&mut self, p: Packet, s: Slot, fin: Nanos) {
        if self.bn.lost() {
            self.rec.on_link_loss(p.flow);
            self.recycle(s.buf);
            return;
        }
        let prev = self.line.back().map_or(Nanos::ZERO, |f| f.at);
        let at = self.bn.jitter(fin + self.delay, prev);
        self.insert_in_line(at, &p, s);
    }

    /// Put packet `p` (its bytes in `s`) on the delay line, due at `at`, in delivery order.
    fn insert_in_line(&mut self, at: Nanos, p: &Packet, s: Slot) {
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
        self.rec.on_link_done(now, bytes);
        if self.bn.link_done() {
            self.start_service(now);
        }
    }
}

/// The emulator's side of the bottleneck's verdicts: the packet's bytes live in a slot named
/// by the low 32 bits of its id; a drop frees it, a pass hands it to the link (`passed`)
/// with the AQM's CE mark written into the IP header.
struct PathVerdicts<'a> {
    rec: &'a mut PathRecorder,
    slots: &'a mut Vec<Slot>,
    free: &'a mut Vec<u32>,
    pool: &'a mut Vec<Vec<u8>>,
    capture: &'a mut Option<Capture>,
    mm_log: &'a mut Option<MahimahiLog>,
    passed: Option<Slot>,
    /// A passed packet keeps its slot (it waits in the Wi-Fi driver queue), CE written there.
    hold: bool,
}

impl Verdicts for PathVerdicts<'_> {
    fn verdict(
        &mut self,
        cfg: &AqmConfig,
        link: &dyn LinkModel,
        now: Nanos,
        p: &Packet,
        sojourn: Nanos,
        verdict: u8,
    ) {
        let slot = (p.id & 0xffff_ffff) as u32;
        if self.hold && verdict != 2 {
            let s = &mut self.slots[slot as usize];
            let q = cfg.queue_of(s.orig_ecn, matches!(s.orig_ecn, Ecn::Ect1 | Ecn::Ce));
            let marked = p.ecn != s.orig_ecn;
            if marked && packet::set_ecn(&mut s.buf, p.ecn).is_err() {
                self.rec.malformed += 1;
            }
            let verdict = (marked && p.ecn == Ecn::Ce) as u8;
            self.rec.on_packet(now, p.flow, q, sojourn, verdict);
            if let Some(c) = self.capture {
                c.note(now, s, p.flow, q, sojourn, verdict);
            }
            return;
        }
        let mut s = std::mem::take(&mut self.slots[slot as usize]);
        self.free.push(slot);
        // A CE arrival is classified as Linux does with the default mask (with L); the
        // simulator maps CE through the flow's class.
        let q = cfg.queue_of(s.orig_ecn, matches!(s.orig_ecn, Ecn::Ect1 | Ecn::Ce));
        if verdict == 2 {
            self.rec.on_packet(now, p.flow, q, sojourn, 2);
            if let Some(c) = self.capture {
                c.note(now, &s, p.flow, q, sojourn, 2);
            }
            if let Some(l) = self.mm_log {
                l.opportunities(now, link);
                l.drop(now, p.bytes);
            }
            if self.pool.len() < POOL_MAX {
                self.pool.push(s.buf.into_vec());
            }
            return;
        }
        // Marked here only if the AQM changed the codepoint (a CE arrival passes as CE).
        let marked = p.ecn != s.orig_ecn;
        if marked && packet::set_ecn(&mut s.buf, p.ecn).is_err() {
            // Unreachable: the bytes parsed at push. Count rather than forward them.
            self.rec.malformed += 1;
        }
        let verdict = (marked && p.ecn == Ecn::Ce) as u8;
        self.rec.on_packet(now, p.flow, q, sojourn, verdict);
        if let Some(c) = self.capture {
            c.note(now, &s, p.flow, q, sojourn, verdict);
        }
        self.passed = Some(s);
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
