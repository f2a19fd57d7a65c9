//! The dumbbell: N sender/receiver pairs sharing one bottleneck (AQM + link model) toward the
//! receivers, each with its own base RTT; ACKs return on an uncongested path (or an optional
//! rate-limited FIFO). Time is virtual, in ns; see `engine` for the event list.
//!
//! A `[[links]]` chain puts more hops after this one (`chain`, `hops`): hop 0 is the bottleneck
//! below, the others repeat it, joined by their propagation delays.
//!
//! Simplifications (named):
//! - a flow's whole forward propagation, rtt/2, is applied after the bottleneck (senders reach
//!   the queue at once), and rtt/2 on the way back; only the sum matters for every figure;
//! - loss (i.i.d. or Gilbert–Elliott) and jitter act on the forward path after the bottleneck;
//!   the ACK path is lossless and jitter-free;
//! - the ACK link, when rate-limited, is a tail-drop FIFO without AQM;
//! - a packet counts as CE-marked by the AQM when it leaves the AQM with CE (senders never send
//!   CE), and DualPI2 packets are attributed to L or C by their codepoint (CE by their flow's).

use crate::aqm_config::AqmConfig;
use crate::bottleneck::{Bottleneck, Service, Verdicts};
use crate::engine::{DelayLine, EventQueue, Kind, PacketSlab, TimerSlots};
use crate::error::SimError;
use crate::flows::{build_flow, FlowEnds, SimReceiver, SimSender};
use crate::recorder::{Recorder, SummaryCtx};
use crate::results::{RunResults, Totals};
use crate::scenario::{FlowConfig, LinkConfig, LinkModelKind, Scenario};
use l4s_core::link::{
    ConstantRate, GilbertElliott, Jitter, LinkModel, LossModel, MahimahiTrace, MahimahiTraceData,
    RandomLoss, RateSchedule, Txop1ms,
};
use l4s_core::{Endpoint, FlowStats, Nanos, Packet, Rate, Rng};
use std::collections::VecDeque;

mod chain;
mod pull_wait;
mod wifi;

/// Timer firings at one instant after which an endpoint is declared stuck.
const LIVELOCK_LIMIT: u32 = 1_000_000;

/// A flow's endpoints. What the engine itself reads of the flow on every event is in its
/// [`FlowHot`] record, a separate dense array: with thousands of flows each event meets a
/// flow that is not in cache, and its engine state then costs two lines instead of being
/// spread over the tail of this slot and two small heap blocks.
struct Flow {
    sender: SimSender,
    receiver: SimReceiver,
    /// Timer times beyond the ones [`FwdSide`]/[`RevSide`] keep inline (rarely used).
    sender_spill: Vec<Nanos>,
    receiver_spill: Vec<Nanos>,
}

/// Inline timer times of a sender (an RTO, a tail loss probe and a pacing release can all
/// be outstanding) and of a receiver (a delayed ACK, a GRO flush).
const SENDER_TIMES: usize = 3;
const RECEIVER_TIMES: usize = 2;

/// The engine's per-flow state, one cache line per direction.
#[repr(C)]
struct FlowHot {
    fwd: FwdSide,
    rev: RevSide,
}

/// The forward path's line: what the bottleneck's verdicts, the packet's propagation, the
/// arrivals at the receiver and the receiver's timers read.
#[repr(align(64))]
struct FwdSide {
    line: DelayLine,
    /// Propagation after the (last) bottleneck.
    delay: Nanos,
    receiver_timers: TimerSlots<RECEIVER_TIMES>,
    /// Smallest sender→receiver one-way delay seen (`Nanos::MAX`: none yet).
    min_owd: Nanos,
    l4s: bool,
    /// Last hop of a `[[links]]` chain the flow crosses (0 for one link).
    last_hop: u8,
}

/// The reverse path's line: what the ACK arrivals at the sender and the sender's timers read.
#[repr(align(64))]
struct RevSide {
    line: DelayLine,
    delay: Nanos,
    sender_timers: TimerSlots<SENDER_TIMES>,
    /// Consecutive timer firings (either end) at one instant: the instant and the count
    /// (livelock guard).
    same_instant_at: Nanos,
    same_instant_n: u32,
    /// First hop of a `[[links]]` chain the flow crosses (0 for one link).
    first_hop: u8,
    /// A sized transfer whose completion time is still to be recorded.
    await_done: bool,
}

const _: () = assert!(std::mem::size_of::<FwdSide>() == 64);
const _: () = assert!(std::mem::size_of::<RevSide>() == 64);

/// The bottleneck and its surroundings.
struct Net {
    /// The AQM, link model, loss and jitter (the emulator drives the same object). While a
    /// packet is serialised it already sits on its delay line (see `propagate`).
    bn: Bottleneck,
    ack_link: Option<AckLink>,
    totals: Totals,
    /// `[link] model = "wifi"`: the MAC below the AQM (the `link` above then only gives the
    /// PHY rate as the summary's capacity).
    wifi: Option<wifi::WifiHop>,
}

/// Optional rate-limited reverse path: tail-drop FIFO + constant rate.
struct AckLink {
    rate: Rate,
    limit: usize,
    q: VecDeque<Packet>,
    busy: Option<Packet>,
}

/// Read and parse the trace file `[link]` names, relative to `base_dir` (I/O lives here, not
/// in l4s-core).
pub fn load_trace(
    base_dir: Option<&std::path::Path>,
    file: &str,
) -> Result<MahimahiTraceData, SimError> {
    let path = match base_dir {
        Some(d) => d.join(file),
        None => std::path::PathBuf::from(file),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| SimError::Io {
        path: "link.trace".into(),
        file: path.clone(),
        source: e,
    })?;
    MahimahiTraceData::parse(&text)
        .map_err(|e| SimError::field("link.trace", format!("{}: {e}", path.display())))
}

/// The link model of a validated `[link]` table (the emulator builds its links here too).
pub fn build_link(
    l: &LinkConfig,
    base_dir: Option<&std::path::Path>,
) -> Result<Box<dyn LinkModel>, SimError> {
    if let Some(file) = &l.trace {
        let data = load_trace(base_dir, file)?;
        let t = MahimahiTrace::new(data, l.once)
            .map_err(|e| SimError::field("link.trace", format!("{file}: {e}")))?;
        return Ok(Box::new(t));
    }
    let base = l.rate.unwrap_or(Rate(0));
    let steps: Vec<(Nanos, Rate)> = l.steps.iter().map(|x| (x.at, x.rate)).collect();
    let sched = RateSchedule::with_steps(base, &steps)
        .map_err(|e| SimError::field("link.steps", e.to_string()))?;
    Ok(match l.model.unwrap_or_default() {
        LinkModelKind::Smooth => Box::new(ConstantRate::with_schedule(sched)),
        LinkModelKind::Txop1ms => Box::new(Txop1ms::new(sched)),
        // The MAC runs in `wifi`; this rate (the PHY's) is the summary's capacity only.
        LinkModelKind::Wifi => match &l.wifi {
            Some(w) => {
                let p = w.params_in(base_dir)?;
                match &p.rate_trace {
                    Some(tr) => Box::new(ConstantRate::with_schedule(tr.schedule().clone())),
                    None => Box::new(ConstantRate::new(Rate(p.phy.rate_bps() as u64))),
                }
            }
            None => return Err(SimError::field("link.wifi", "missing")),
        },
    })
}

/// The loss process of `[link]` (`loss` or `[link.gilbert]`), None when lossless.
pub fn build_loss(l: &LinkConfig, rng: Rng) -> Result<Option<Box<dyn LossModel>>, SimError> {
    Ok(if let Some(g) = &l.gilbert {
        Some(Box::new(
            GilbertElliott::new(g.p, g.r, g.loss_good, g.loss_bad, rng)
                .map_err(|e| SimError::param("link.gilbert.", e))?,
        ))
    } else if l.loss > 0.0 {
        Some(Box::new(
            RandomLoss::new(l.loss, rng)
                .map_err(|e| SimError::field("link.loss", e.to_string()))?,
        ))
    } else {
        None
    })
}

/// The jitter of `[link]`, None without `jitter`.
pub fn build_jitter(l: &LinkConfig, rng: Rng) -> Option<Jitter> {
    (l.jitter.0 > 0).then(|| Jitter::new(l.jitter, l.reorder, rng))
}

/// The simulator's side of the bottleneck's verdicts: counted, classified by the flow's
/// class, recorded and captured.
struct SimVerdicts<'a> {
    rec: &'a mut Recorder,
    capture: &'a mut Option<Vec<crate::pcap::CaptureRecord>>,
    hot: &'a [FlowHot],
    totals: &'a mut Totals,
    /// The recorder's index of this bottleneck's first queue (0 for `[link]`, more for the
    /// later hops of a `[[links]]` chain).
    q_base: u8,
}

impl Verdicts for SimVerdicts<'_> {
    #[inline]
    fn verdict(
        &mut self,
        cfg: &AqmConfig,
        _link: &dyn LinkModel,
        now: Nanos,
        p: &Packet,
        sojourn: Nanos,
        verdict: u8,
    ) {
        if verdict == 2 {
            self.totals.aqm_dropped_pkts += 1;
        }
        let q = self.q_base + cfg.queue_of(p.ecn, self.hot[p.flow as usize].fwd.l4s);
        note_verdict(self.rec, self.capture, now, p, q, sojourn, verdict);
    }
}

/// One AQM verdict (0 pass, 1 CE, 2 drop) to the recorder and, when a pcapng capture is on,
/// to the capture: every place the AQM decides goes through here, whatever the link.
fn note_verdict(
    rec: &mut Recorder,
    capture: &mut Option<Vec<crate::pcap::CaptureRecord>>,
    now: Nanos,
    p: &Packet,
    queue: u8,
    sojourn: Nanos,
    verdict: u8,
) {
    if let Some(c) = capture {
        c.push(crate::pcap::CaptureRecord::of(
            p, now, queue, verdict, sojourn,
        ));
    }
    rec.on_packet(now, p.flow, queue, sojourn, verdict);
}

/// One instance of the `[[flows]]` entry `fc`: its endpoints and its engine state, its base
/// RTT split in half each way (on a `[[links]]` chain the forward half less the delays of the
/// hops before its last).
fn new_flow(ends: FlowEnds, fc: &FlowConfig, hops: &[crate::hops::HopSpec]) -> (Flow, FlowHot) {
    let half = Nanos(fc.rtt.0 / 2);
    let (first, last) = crate::hops::flow_path(fc, hops.len());
    let hot = FlowHot {
        fwd: FwdSide {
            line: DelayLine::default(),
            delay: crate::hops::final_segment(hops, fc),
            receiver_timers: TimerSlots::default(),
            min_owd: Nanos::MAX,
            l4s: ends.l4s,
            last_hop: last as u8,
        },
        rev: RevSide {
            line: DelayLine::default(),
            delay: fc.rtt - half,
            sender_timers: TimerSlots::default(),
            same_instant_at: Nanos::MAX,
            same_instant_n: 0,
            first_hop: first as u8,
            await_done: fc.bytes.is_some(),
        },
    };
    let flow = Flow {
        sender: ends.sender,
        receiver: ends.receiver,
        sender_spill: Vec::new(),
        receiver_spill: Vec::new(),
    };
    (flow, hot)
}

/// What the summary says of each flow besides its counters, one entry per flow.
#[derive(Default)]
struct FlowLabels {
    cc: Vec<String>,
    class: Vec<String>,
    base_rtt_ms: Vec<f64>,
    start: Vec<Nanos>,
    host: Vec<serde_json::Value>,
    /// Frame deadline of real-time flows (`app_results`).
    deadline: Vec<Option<Nanos>>,
    /// The flows after the `[[flows]]` ones: workload transfers and probes.
    extras: Vec<crate::workloads::ExtraKind>,
}

/// Every instance (`count` of each `[[flows]]` entry) in order, with its labels.
fn build_flows(
    s: &Scenario,
    link: &dyn LinkModel,
) -> Result<(Vec<Flow>, Vec<FlowHot>, FlowLabels), SimError> {
    let mut flows = Vec::new();
    let mut hot = Vec::new();
    let mut labels = FlowLabels::default();
    for (i, fc) in s.flows.iter().enumerate() {
        for _ in 0..fc.count {
            let id = flows.len() as u32;
            let start = crate::start_jitter::effective_start(s.seed, id, fc);
            let fc_run = FlowConfig {
                start,
                ..fc.clone()
            };
            let fc = &fc_run;
            let ends = build_flow(i, id, fc, s.seed)?;
            labels.start.push(fc.start);
            labels.cc.push(fc.cc.clone());
            labels
                .class
                .push(if ends.l4s { "L4S" } else { "Classic" }.to_string());
            labels.base_rtt_ms.push(fc.rtt.as_ms_f64());
            labels.host.push(crate::flows::host_summary(fc));
            labels.deadline.push(
                crate::rt_flows::is_rt(fc)
                    .then(|| fc.deadline.unwrap_or(crate::rt_flows::DEFAULT_DEADLINE)),
            );
            let (f, h) = new_flow(ends, fc, &s.hops);
            flows.push(f);
            hot.push(h);
        }
    }
    // Workload transfers and probes follow, built like `[[flows]]` entries.
    for (fc, kind) in crate::workloads::expand(s, link)? {
        let id = flows.len() as u32;
        let ends = match &kind {
            crate::workloads::ExtraKind::Probe { probe } => {
                crate::workloads::build_probe(s, *probe, id)?
            }
            crate::workloads::ExtraKind::Transfer { .. } => build_flow(0, id, &fc, s.seed)?,
        };
        labels.start.push(fc.start);
        labels.cc.push(fc.cc.clone());
        labels
            .class
            .push(if ends.l4s { "L4S" } else { "Classic" }.to_string());
        labels.base_rtt_ms.push(fc.rtt.as_ms_f64());
        labels.host.push(serde_json::Value::Null);
        labels.deadline.push(None);
        labels.extras.push(kind);
        let (f, h) = new_flow(ends, &fc, &s.hops);
        flows.push(f);
        hot.push(h);
    }
    Ok((flows, hot, labels))
}

impl Net {
    /// The AQM, link model, loss and jitter of the forward path and the optional ACK link,
    /// each drawing from its own stream of the scenario's seed.
    fn new(s: &Scenario) -> Result<Self, SimError> {
        let seed = s.seed;
        let bn = Bottleneck::new(&s.link, &s.aqm, s.base_dir.as_deref(), seed, "")?;
        let wifi = match &s.link.wifi {
            Some(w) if s.link.model == Some(LinkModelKind::Wifi) => {
                let mut h = wifi::WifiHop::new(
                    w.params_in(s.base_dir.as_deref())?,
                    w.uplink(),
                    Rng::derive(seed, "link/wifi"),
                    w.ap_mode()?,
                    (w.txq_params()?, Rng::derive(seed, "link/wifi/txq")),
                    (w.aql_limits(), w.airtime_fairness()),
                )?;
                h.add_station_aqms(s)?;
                Some(h)
            }
            _ => None,
        };
        let ack_link = s.ack_link.as_ref().map(|a| AckLink {
            rate: a.rate,
            limit: a.limit as usize,
            q: VecDeque::new(),
            busy: None,
        });
        Ok(Net {
            bn,
            ack_link,
            totals: Totals::default(),
            wifi,
        })
    }
}

/// One simulated run: the flows, the bottleneck, the event list and the recorder.
pub struct World {
    flows: Vec<Flow>,
    /// The engine's state of each flow, indexed like `flows`.
    hot: Vec<FlowHot>,
    /// Per flow: an endpoint handled something since the flow's last per-flow row. A flow
    /// whose endpoints did nothing repeats its previous row's stats (`Recorder::repeat_flow`)
    /// instead of reading them from endpoint state that is likely out of cache: with 10 000
    /// flows most flows have no event between two samples 16 ms apart. Set by the four
    /// handlers that call the endpoints' `&mut` methods (`sender_timer`, `receiver_timer`,
    /// `fwd_arrive`, `rev_arrive`, and the drains they run); a new caller must set it too.
    touched: Vec<bool>,
    net: Net,
    ev: EventQueue,
    /// The packets on every flow's delay lines.
    slab: PacketSlab,
    rec: Recorder,
    now: Nanos,
    /// End of the run.
    end: Nanos,
    /// Set when a model misbehaves; the run stops with this error.
    abort: Option<SimError>,
    events: u64,
    sample_period: Nanos,
    /// Per-flow rows at every this-many-th sample (`[output] flow_sample_interval`).
    flow_every: u64,
    stats_buf: Vec<(FlowStats, FlowStats)>,
    labels: FlowLabels,
    /// `--pcap`: every packet the AQM passed, marked or dropped (`pcap`).
    capture: Option<Vec<crate::pcap::CaptureRecord>>,
    /// Simulated time reached, ns, for a progress display polled by another thread.
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// `[[links]]`: hops 1.. of the chain (hop 0 is `net`); None for one link.
    chain: Option<chain::Chain>,
}

impl World {
    /// Build the bottleneck, the flows and the recorder of a scenario, ready to `run`.
    pub fn new(s: &Scenario) -> Result<Self, SimError> {
        s.validate()?;
        // A chain's hop 0 is built as [link]; its errors name links[0].
        let net = Net::new(s).map_err(|e| match s.hops.is_empty() {
            true => e,
            false => crate::hops::reprefix(e, "link", "links[0]"),
        })?;
        let (flows, hot, labels) = build_flows(s, net.bn.link.as_ref())?;
        let mut q0 = Vec::new();
        net.bn.aqm.sample(Nanos::ZERO, &mut q0);
        let mut rec = Recorder::new(s.warmup, q0, flows.len(), s.output.packets);
        let chain = chain::Chain::new(s, &mut rec)?;
        let n = flows.len();
        let mut w = World {
            flows,
            hot,
            // The first per-flow row reads every flow.
            touched: vec![true; n],
            net,
            ev: EventQueue::with_capacity(8 * n + 16),
            slab: PacketSlab::new(),
            rec,
            now: Nanos::ZERO,
            end: s.duration,
            abort: None,
            events: 0,
            sample_period: Nanos::from_ms(16),
            flow_every: s.flow_sample_every(),
            stats_buf: Vec::with_capacity(n),
            labels,
            capture: None,
            progress: None,
            chain,
        };
        w.wifi_init(s);
        Ok(w)
    }

    /// Run to `s.duration` with `opts` (a pcapng capture, a progress counter).
    pub fn run_with(
        mut self,
        s: &Scenario,
        opts: &crate::RunOptions,
    ) -> Result<(RunResults, crate::RunExtras), SimError> {
        self.capture = opts.pcap.then(Vec::new);
        self.progress = opts.progress.clone();
        let progress = self.progress.clone();
        let mut pcap_records = None;
        let res = self.run_inner(s, &mut pcap_records)?;
        if let Some(p) = progress {
            p.store(s.duration.0, std::sync::atomic::Ordering::Relaxed);
        }
        let pcapng = pcap_records.map(|r| crate::pcap::write_pcapng(&r, &res.queue_names));
        Ok((res, crate::RunExtras { pcapng }))
    }

    /// Run to `s.duration` and produce the results.
    pub fn run(self, s: &Scenario) -> Result<RunResults, SimError> {
        let mut none = None;
        self.run_inner(s, &mut none)
    }

    fn run_inner(
        mut self,
        s: &Scenario,
        capture_out: &mut Option<Vec<crate::pcap::CaptureRecord>>,
    ) -> Result<RunResults, SimError> {
        let end = s.duration;
        // Samples are scheduled one at a time (the heap stays a few events per flow deep).
        self.sample_period = s.sample_period();
        if self.sample_period <= end {
            self.ev.push(self.sample_period, Kind::Sample, 0);
        }
        if s.warmup.0 > 0 {
            self.ev.push(s.warmup, Kind::Warmup, 0);
        } else {
            self.snapshot();
        }
        for f in 0..self.flows.len() {
            self.arm_sender(f);
            self.arm_receiver(f);
        }
        self.arm_aqm();
        let mut polled: u32 = 0;
        while let Some(e) = self.ev.pop_until(end) {
            self.now = e.time();
            if let Some(p) = &self.progress {
                polled = polled.wrapping_add(1);
                if polled.is_multiple_of(4096) {
                    p.store(self.now.0, std::sync::atomic::Ordering::Relaxed);
                }
            }
            self.dispatch(e.kind, e.arg as usize, e.time());
            if let Some(err) = self.abort.take() {
                return Err(err);
            }
        }
        self.now = end;
        *capture_out = self.capture.take();
        self.finish(s)
    }

    /// Hand one event to its handler. Handlers of events that can go stale (a delay line or
    /// the AQM re-armed earlier) return without counting them.
    #[inline]
    fn dispatch(&mut self, kind: Kind, f: usize, t: Nanos) {
        match kind {
            Kind::SenderTimer => self.sender_timer(f, t),
            Kind::ReceiverTimer => self.receiver_timer(f, t),
            Kind::FwdArrive => self.fwd_arrive(f, t),
            Kind::RevArrive => self.rev_arrive(f, t),
            Kind::LinkService => {
                self.events += 1;
                self.net.bn.serve_due();
                self.link_service(t);
            }
            Kind::LinkDone => {
                self.events += 1;
                self.link_done(t);
            }
            Kind::AqmTimer => self.aqm_timer(t),
            Kind::AckLinkDone => {
                self.events += 1;
                self.ack_link_done(t);
            }
            Kind::Sample => self.sample(t),
            Kind::Warmup => {
                self.events += 1;
                self.snapshot();
            }
            Kind::Wifi => self.wifi_timer(t),
            Kind::HopService => self.hop_service_event(f, t),
            Kind::HopDone => self.hop_done(f, t),
            Kind::HopArrive => self.hop_arrive(f, t),
            Kind::HopAqmTimer => self.hop_aqm_timer(f, t),
            Kind::WifiAqmTimer => self.wifi_aqm_timer(f, t),
        }
    }

    /// The sender of flow `f` asked to be woken at `t`.
    fn sender_timer(&mut self, f: usize, t: Nanos) {
        self.hot[f]
            .rev
            .sender_timers
            .fired(t, &mut self.flows[f].sender_spill);
        self.events += 1;
        self.touched[f] = true;
        self.guard_livelock(f, t, "sender");
        let fl = &mut self.flows[f];
        if fl.sender.poll_timeout().is_some_and(|w| w <= t) {
            fl.sender.handle_timeout(t);
        }
        self.pump_sender(f);
    }

    /// The receiver of flow `f` asked to be woken at `t`.
    fn receiver_timer(&mut self, f: usize, t: Nanos) {
        self.hot[f]
            .fwd
            .receiver_timers
            .fired(t, &mut self.flows[f].receiver_spill);
        self.events += 1;
        self.touched[f] = true;
        self.guard_livelock(f, t, "receiver");
        let fl = &mut self.flows[f];
        if fl.receiver.poll_timeout().is_some_and(|w| w <= t) {
            fl.receiver.handle_timeout(t);
        }
        self.pump_receiver(f);
    }

    /// The packets due at `t` on flow `f`'s forward delay line reach its receiver.
    fn fwd_arrive(&mut self, f: usize, t: Nanos) {
        if !self.hot[f].fwd.line.fire(t) {
            return;
        }
        self.events += 1;
        self.touched[f] = true;
        while let Some(i) = self.hot[f].fwd.line.pop_due(&mut self.slab, t) {
            self.net.totals.delivered_pkts += 1;
            let owd = t - self.slab.packet(i).sent_at;
            let m = &mut self.hot[f].fwd.min_owd;
            *m = owd.min(*m);
            self.flows[f]
                .receiver
                .handle_packet(*self.slab.packet(i), t);
            // Each arrival's answer leaves before the next arrival is processed, as
            // with one event per packet.
            self.drain_receiver(f);
        }
        self.arm_receiver(f);
        if let Some(h) = self.hot[f].fwd.line.rearm() {
            self.ev.push(h, Kind::FwdArrive, f as u32);
        }
    }

    /// The ACKs due at `t` on flow `f`'s reverse delay line reach its sender; a sized
    /// transfer that is now done records its completion time.
    fn rev_arrive(&mut self, f: usize, t: Nanos) {
        if !self.hot[f].rev.line.fire(t) {
            return;
        }
        self.events += 1;
        self.touched[f] = true;
        while let Some(i) = self.hot[f].rev.line.pop_due(&mut self.slab, t) {
            self.net.totals.acks_delivered += 1;
            self.flows[f].sender.handle_packet(*self.slab.packet(i), t);
            self.drain_sender(f);
        }
        self.arm_sender(f);
        if self.hot[f].rev.await_done && self.flows[f].sender.is_done() {
            self.hot[f].rev.await_done = false;
            self.rec.counters[f].done_at = Some(t);
        }
        if let Some(h) = self.hot[f].rev.line.rearm() {
            self.ev.push(h, Kind::RevArrive, f as u32);
        }
    }

    /// The AQM's own timer (e.g. DualPI2's PI update every tupdate).
    fn aqm_timer(&mut self, t: Nanos) {
        if !self.net.bn.aqm_timer(t) {
            return;
        }
        self.events += 1;
        self.arm_aqm();
    }

    /// Record one row per queue and per flow, and schedule the next sample.
    fn sample(&mut self, t: Nanos) {
        self.events += 1;
        // Sample k lands at exactly k·period (no drift from repeated addition).
        let k = t.0 / self.sample_period.0 + 1;
        self.ev
            .push(Nanos(self.sample_period.0 * k), Kind::Sample, 0);
        self.wifi_sample(t);
        self.chain_sample(t);
        self.rec.sample_queues(t, self.net.bn.aqm.as_ref());
        // This is sample k - 1 (at (k - 1)·period): it carries per-flow rows when k - 1 is a
        // multiple of flow_every, i.e. at multiples of the flow sample interval.
        if (k - 1).is_multiple_of(self.flow_every) {
            // Workload transfers and probes (after the `[[flows]]` ones) get no rows.
            let n_main = self.flows.len() - self.labels.extras.len();
            for (i, fl) in self.flows.iter().enumerate().take(n_main) {
                if std::mem::take(&mut self.touched[i]) {
                    self.rec
                        .sample_flow(t, i, &fl.sender.stats(), &fl.receiver.stats());
                } else {
                    self.rec.repeat_flow(t, i, n_main);
                }
            }
            self.rec.end_sample(t);
        }
    }

    /// An endpoint whose timer keeps firing at one instant without moving on would hang the
    /// run: stop it with an error naming the flow instead.
    #[cold]
    fn livelock(&mut self, f: usize, t: Nanos, side: &str) {
        self.abort = Some(SimError::Model(format!(
            "flow {f} {side} asked to be woken at {t} {LIVELOCK_LIMIT} times without time moving on"
        )));
    }

    #[inline]
    fn guard_livelock(&mut self, f: usize, t: Nanos, side: &str) {
        let r = &mut self.hot[f].rev;
        if r.same_instant_at == t {
            r.same_instant_n += 1;
            if r.same_instant_n >= LIVELOCK_LIMIT {
                self.livelock(f, t, side);
            }
        } else {
            r.same_instant_at = t;
            r.same_instant_n = 0;
        }
    }

    fn collect_stats(&mut self) {
        self.stats_buf.clear();
        for fl in &self.flows {
            self.stats_buf
                .push((fl.sender.stats(), fl.receiver.stats()));
        }
    }

    /// Count wasted opportunities up to now if the link is idle (they are counted lazily).
    fn flush_unused(&mut self) -> u64 {
        self.net.bn.flush_unused(self.now)
    }

    fn snapshot(&mut self) {
        let unused = self.flush_unused();
        self.collect_stats();
        self.wifi_sample(self.now);
        self.wifi_warmup();
        self.chain_sample(self.now);
        self.chain_warmup();
        self.rec
            .warmup_snapshot(self.now, self.net.bn.aqm.as_ref(), &self.stats_buf, unused);
    }

    fn arm_sender(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        if let Some(w) = fl.sender.poll_timeout() {
            let w = w.max(self.now);
            if self.hot[f].rev.sender_timers.arm(w, &mut fl.sender_spill) {
                self.ev.push(w, Kind::SenderTimer, f as u32);
            }
        }
    }

    fn arm_receiver(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        if let Some(w) = fl.receiver.poll_timeout() {
            let w = w.max(self.now);
            if self.hot[f]
                .fwd
                .receiver_timers
                .arm(w, &mut fl.receiver_spill)
            {
                self.ev.push(w, Kind::ReceiverTimer, f as u32);
            }
        }
    }

    fn arm_aqm(&mut self) {
        if let Some(w) = self.net.bn.arm_aqm(self.now) {
            self.ev.push(w, Kind::AqmTimer, 0);
        }
    }

    /// Send everything the sender of flow `f` releases now into the bottleneck.
    fn pump_sender(&mut self, f: usize) {
        self.drain_sender(f);
        self.arm_sender(f);
    }

    /// Send what the sender releases now, without re-arming its timer (for a batch of
    /// same-instant arrivals, armed once after the batch).
    #[inline]
    fn drain_sender(&mut self, f: usize) {
        let now = self.now;
        while let Some(mut p) = self.flows[f].sender.poll_transmit(now) {
            // The engine owns the flow id and release time of what leaves an endpoint.
            p.flow = f as u32;
            p.sent_at = now;
            self.net.totals.sent_pkts += 1;
            match self.hot[f].rev.first_hop {
                0 => self.enqueue(p),
                k => self.hop_enqueue(k as usize, p),
            }
        }
    }

    /// Send everything the receiver of flow `f` releases now onto the ACK path.
    fn pump_receiver(&mut self, f: usize) {
        self.drain_receiver(f);
        self.arm_receiver(f);
    }

    #[inline]
    fn drain_receiver(&mut self, f: usize) {
        let now = self.now;
        while let Some(mut p) = self.flows[f].receiver.poll_transmit(now) {
            p.flow = f as u32;
            p.sent_at = now;
            self.net.totals.acks_sent += 1;
            if self.wifi_up(p) {
                continue;
            }
            if self.net.ack_link.is_some() {
                self.ack_enqueue(p);
            } else {
                self.onto_rev_line(p, now);
            }
        }
    }

    fn enqueue(&mut self, p: Packet) {
        let Some(p) = self.wifi_sta_enqueue(p) else {
            return;
        };
        let now = self.now;
        let (bn, mut v) = self.bottleneck();
        if bn.enqueue(p, now, &mut v) {
            if self.net.wifi.is_some() {
                self.wifi_pull(now);
            } else if self.net.bn.idle() {
                self.start_service(now);
            }
        }
        self.arm_aqm();
    }

    /// One dequeue from the AQM at `now`: its drops and the packet it passes (CE-marked or not)
    /// go to the recorder and the capture; the packet is returned for the link or the MAC.
    fn aqm_dequeue(&mut self, now: Nanos) -> Option<Packet> {
        let (bn, mut v) = self.bottleneck();
        bn.dequeue(now, &mut v)
    }

    /// The bottleneck and where its verdicts go.
    #[inline]
    fn bottleneck(&mut self) -> (&mut Bottleneck, SimVerdicts<'_>) {
        let World {
            net,
            rec,
            capture,
            hot,
            ..
        } = self;
        let v = SimVerdicts {
            rec,
            capture,
            hot,
            totals: &mut net.totals,
            q_base: 0,
        };
        (&mut net.bn, v)
    }

    /// The link takes the next packet from the AQM at `now`.
    fn link_service(&mut self, now: Nanos) {
        if let Some(p) = self.aqm_dequeue(now) {
            // None: the link ended (a `once` trace) before this packet did: it stays on it.
            if let Some(fin) = self.net.bn.transmit(now, p.bytes) {
                self.ev.push_link(fin, Kind::LinkDone);
                self.propagate(p, now, fin);
            }
        }
        self.arm_aqm();
    }

    /// A packet serialised over [start, fin]: count it, then lose it or put it on its flow's
    /// forward delay line. Done when transmission starts (saves holding the packet on the
    /// link); the loss and jitter rolls happen in transmission order either way.
    #[inline]
    fn propagate(&mut self, p: Packet, start: Nanos, fin: Nanos) {
        let share = crate::recorder::window_share(start, fin, self.rec.warmup, self.end);
        self.rec.link_bytes_after_warmup += p.bytes as f64 * share;
        let f = p.flow as usize;
        if self.net.bn.lost() {
            self.net.totals.link_lost_pkts += 1;
            self.rec.counters[f].link_losses += 1;
            return;
        }
        let fwd = &mut self.hot[f].fwd;
        if fwd.last_hop > 0 {
            self.hop_propagate(0, p, fin);
            return;
        }
        let at = self
            .net
            .bn
            .jitter(fin + fwd.delay, fwd.line.back_time(&self.slab));
        if let Some(h) = fwd.line.push(&mut self.slab, at, p) {
            self.ev.push(h, Kind::FwdArrive, f as u32);
        }
    }

    /// The packet on the link has left it at `now`: start the next one.
    fn link_done(&mut self, now: Nanos) {
        if self.net.bn.link_done() {
            self.start_service(now);
        }
    }

    /// The idle link has a packet waiting: serve it now, or when the link model next can.
    fn start_service(&mut self, now: Nanos) {
        match self.net.bn.start_service(now) {
            Service::Now => self.link_service(now),
            Service::At(s) => self.ev.push_link(s, Kind::LinkService),
            Service::Never => {}
        }
    }

    fn ack_enqueue(&mut self, p: Packet) {
        let now = self.now;
        let Some(a) = self.net.ack_link.as_mut() else {
            return;
        };
        if a.busy.is_none() {
            let fin = now + a.rate.tx_time(p.bytes as u64);
            a.busy = Some(p);
            self.ev.push(fin, Kind::AckLinkDone, 0);
        } else if a.q.len() >= a.limit {
            self.net.totals.acks_dropped += 1;
        } else {
            a.q.push_back(p);
        }
    }

    fn ack_link_done(&mut self, now: Nanos) {
        let Some(a) = self.net.ack_link.as_mut() else {
            return;
        };
        let Some(p) = a.busy.take() else {
            return;
        };
        if let Some(next) = a.q.pop_front() {
            let fin = now + a.rate.tx_time(next.bytes as u64);
            a.busy = Some(next);
            self.ev.push(fin, Kind::AckLinkDone, 0);
        }
        self.onto_rev_line(p, now);
    }

    /// Put ACK `p`, leaving the last queue of the reverse path at `left`, on its flow's
    /// reverse delay line; queue an event when the line needs one.
    #[inline(always)]
    fn onto_rev_line(&mut self, p: Packet, left: Nanos) {
        let f = p.flow as usize;
        let rev = &mut self.hot[f].rev;
        if let Some(h) = rev.line.push(&mut self.slab, left + rev.delay, p) {
            self.ev.push(h, Kind::RevArrive, f as u32);
        }
    }

    fn finish(mut self, s: &Scenario) -> Result<RunResults, SimError> {
        let unused = self.flush_unused();
        self.collect_stats();
        self.wifi_sample(self.now);
        self.chain_sample(self.now);
        let hop_docs = self.chain_hop_docs(s);
        let chain_in_flight = self.chain.as_ref().map_or(0, |c| c.in_flight(&self.slab));
        let (wifi_down, wifi_up) = self.wifi_in_flight();
        let n = &self.net;
        let mut totals = n.totals.clone();
        totals.in_flight_pkts = n.bn.aqm.backlog_pkts()
            + n.bn.stuck_pkts
            + self
                .hot
                .iter()
                .map(|h| h.fwd.line.len(&self.slab) as u64)
                .sum::<u64>()
            + wifi_down
            + chain_in_flight;
        totals.acks_in_flight = self
            .hot
            .iter()
            .map(|h| h.rev.line.len(&self.slab) as u64)
            .sum::<u64>()
            + n.ack_link
                .as_ref()
                .map_or(0, |a| a.q.len() as u64 + a.busy.is_some() as u64)
            + wifi_up;
        let capacity_bytes = n.bn.link.capacity_bytes(s.warmup, s.duration);
        let raw = s.raw.clone();
        let aqm_params = s.aqm.profile_json();
        let buffer = s
            .buffer
            .as_ref()
            .map_or(serde_json::Value::Null, |b| b.to_json());
        let ctx = SummaryCtx {
            seed: s.seed,
            duration: s.duration,
            sample_interval: s.sample_period(),
            capacity_bytes,
            aqm_kind: n.bn.aqm.kind(),
            flow_cc: &self.labels.cc,
            flow_class: &self.labels.class,
            base_rtt_ms: &self.labels.base_rtt_ms,
            flow_start: &self.labels.start,
            flow_host: &self.labels.host,
            raw: &raw,
            aqm_params: &aqm_params,
            buffer: &buffer,
        };
        let wifi = self.wifi_summary((s.duration - s.warmup).as_secs_f64());
        for (c, h) in self.rec.counters.iter_mut().zip(&self.hot) {
            c.min_owd = (h.fwd.min_owd != Nanos::MAX).then_some(h.fwd.min_owd);
        }
        let done_at: Vec<Option<Nanos>> = self.rec.counters.iter().map(|c| c.done_at).collect();
        let logs = self
            .flows
            .iter_mut()
            .map(|f| (f.sender.take_app_log(), f.receiver.take_app_log()))
            .collect();
        let mut res = self.rec.finish(
            ctx,
            self.net.bn.aqm.as_ref(),
            &self.stats_buf,
            unused,
            totals,
            self.events,
        );
        if let Some(block) = wifi {
            crate::wifi_config::add_to_summary(&mut res.summary_json, block);
        }
        if let Some(docs) = hop_docs {
            chain::add_hops_to_summary(&mut res.summary_json, docs);
        }
        crate::app_results::finish(
            s,
            self.net.bn.link.as_ref(),
            crate::app_results::AppInputs {
                logs,
                deadline: &self.labels.deadline,
                start: &self.labels.start,
                done_at: &done_at,
                extras: &self.labels.extras,
            },
            &mut res,
        );
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An endpoint that always wants to be woken now and never sends: a model bug.
    struct Stuck;
    impl Endpoint for Stuck {
        fn handle_packet(&mut self, _pkt: Packet, _now: Nanos) {}
        fn poll_transmit(&mut self, _now: Nanos) -> Option<Packet> {
            None
        }
        fn poll_timeout(&self) -> Option<Nanos> {
            Some(Nanos::from_ms(5))
        }
        fn handle_timeout(&mut self, _now: Nanos) {}
        fn stats(&self) -> FlowStats {
            FlowStats::default()
        }
    }

    #[test]
    fn a_stuck_endpoint_stops_the_run_with_an_error() {
        let s = Scenario::from_toml_str(
            "duration = \"1s\"\n[link]\nrate = \"1mbit\"\n[[flows]]\ncc = \"cbr\"\nrtt = \"2ms\"\nrate = \"1kbit\"\n",
        )
        .unwrap();
        let mut w = World::new(&s).unwrap();
        w.flows[0].sender = SimSender::Dyn(Box::new(Stuck));
        let e = w.run(&s).unwrap_err().to_string();
        assert!(e.contains("flow 0 sender") && e.contains("5ms"), "{e}");
    }
}
