//! The emulator's recording: the simulator's recorder (samples from the live AQM, per-flow
//! rows, per-packet rows, summary.json) fed by one path direction, flows keyed by 5-tuple, plus
//! the emulator's own figures (departure lateness, malformed packets).
//!
//! Differences from a simulator run, by construction:
//! - a flow is a 5-tuple seen on this direction, numbered in order of first appearance (at most
//!   [`MAX_FLOWS`]; later ones share one "other" row); its `cc` is the transport's name
//!   ("tcp", "udp", "icmp", "ip47") and its class is "L4S" once any of its packets arrived with
//!   ECT(1);
//! - `delivered_bytes` / `tput_mbps` count transport payload bytes (TCP/UDP data, the whole IP
//!   payload otherwise) that left the path, retransmissions included: the emulator sees the
//!   wire, not the receiving application; `cwnd_pkts`, `srtt_ms` and `pacing_mbps` are unknown
//!   here (NaN / 0) and come from `l4slab flow`'s own rows where available;
//! - `ce_marks` per flow counts packets that left the path carrying CE.

use crate::packet::FlowKey;
use l4s_core::aqm::{Aqm, QueueSample};
use l4s_core::link::{LinkModel, MahimahiTraceData};
use l4s_core::{FlowStats, Nanos};
use l4s_sim::recorder::{Recorder, SummaryCtx};
use l4s_sim::results::{RunResults, Totals};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A word-at-a-time multiplicative hasher (the rustc "Fx" mix) for the flow table: flow keys
/// come from the user's own programs, so SipHash's flooding resistance buys nothing and costs
/// ~10% of the per-packet time.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut c = bytes.chunks_exact(8);
        for w in &mut c {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            self.add(u64::from_le_bytes(a));
        }
        for &b in c.remainder() {
            self.add(b as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Flows tracked individually per direction; packets of further flows share one "other" row.
pub const MAX_FLOWS: usize = 4096;

/// Departure lateness (actual − scheduled write time) in a log-linear histogram: buckets are
/// exact below 128 ns, then 64 per power of two (relative error < 1/64); the maximum is exact.
#[derive(Clone, Debug)]
pub struct LatenessHist {
    counts: Vec<u64>,
    n: u64,
    /// Writes that happened before their scheduled time (counted as lateness 0).
    pub early: u64,
    max_ns: u64,
}

/// Sub-buckets per power of two.
const SUB_BITS: u32 = 6;

impl Default for LatenessHist {
    fn default() -> Self {
        LatenessHist {
            counts: vec![0; ((64 - SUB_BITS) << SUB_BITS) as usize + (2 << SUB_BITS)],
            n: 0,
            early: 0,
            max_ns: 0,
        }
    }
}

impl LatenessHist {
    fn index(v: u64) -> usize {
        if v < (2 << SUB_BITS) {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros(); // >= SUB_BITS + 1
        let shift = msb - SUB_BITS;
        let sub = (v >> shift) as usize - (1 << SUB_BITS); // 0 .. 2^SUB_BITS
        (2 << SUB_BITS) + (((shift - 1) as usize) << SUB_BITS) + sub
    }
    /// Lowest value of bucket `i` and its width.
    fn bounds(i: usize) -> (u64, u64) {
        let lin = 2usize << SUB_BITS;
        if i < lin {
            return (i as u64, 1);
        }
        let j = i - lin;
        let shift = (j >> SUB_BITS) as u32 + 1;
        let sub = (j & ((1 << SUB_BITS) - 1)) as u64 + (1 << SUB_BITS);
        (sub << shift, 1u64 << shift)
    }
    /// Record one write `scheduled` for, done at `actual`.
    pub fn record(&mut self, scheduled: Nanos, actual: Nanos) {
        if actual < scheduled {
            self.early += 1;
        }
        let v = (actual - scheduled).0;
        self.counts[Self::index(v)] += 1;
        self.n += 1;
        self.max_ns = self.max_ns.max(v);
    }
    /// Writes recorded.
    pub fn len(&self) -> u64 {
        self.n
    }
    /// Nothing recorded.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Largest lateness, ns (exact).
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
    /// The `q` quantile (0..=1) in ns: the midpoint of the bucket holding the value of rank
    /// ceil(q·n) (nearest rank), capped at the exact maximum; NaN when empty.
    pub fn quantile_ns(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = Self::bounds(i);
                let mid = if w == 1 {
                    lo as f64
                } else {
                    lo as f64 + (w as f64 - 1.0) / 2.0
                };
                return mid.min(self.max_ns as f64);
            }
        }
        self.max_ns as f64
    }
}

/// One flow's counters on this direction.
#[derive(Clone, Debug)]
struct FlowEntry {
    key: Option<FlowKey>,
    /// The sender-side view: packets offered.
    sender: FlowStats,
    /// The receiver-side view: payload bytes delivered, CE packets delivered.
    receiver: FlowStats,
    first_seen: Nanos,
    l4s: bool,
}

impl FlowEntry {
    fn new(key: Option<FlowKey>, now: Nanos) -> Self {
        let unknown = FlowStats {
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            alpha: f64::NAN,
            ..Default::default()
        };
        FlowEntry {
            key,
            sender: unknown.clone(),
            receiver: unknown,
            first_seen: now,
            l4s: false,
        }
    }
}

/// Everything one direction records; the path feeds it, `finish` turns it into results.
pub struct PathRecorder {
    rec: Recorder,
    index: HashMap<FlowKey, u32, BuildHasherDefault<FxHasher>>,
    flows: Vec<FlowEntry>,
    stats_buf: Vec<(FlowStats, FlowStats)>,
    /// Departure lateness.
    pub lateness: LatenessHist,
    /// Packets refused by the parser.
    pub malformed: u64,
    /// Packets forwarded without a transport classification.
    pub unclassified: u64,
    /// Packet accounting (conservation), completed at `finish`.
    pub totals: Totals,
    unused_at_warmup: Option<u64>,
}

/// The results of one direction.
#[derive(Clone, Debug)]
pub struct PathResults {
    /// The simulator's result shape (samples, flows, optional packets, summary.json).
    pub run: RunResults,
    /// The 5-tuple of each flow id (`udp 10.0.0.1:40000>10.0.0.2:5201`; "other" for the
    /// shared overflow row).
    pub flow_keys: Vec<String>,
    /// Departure lateness quantiles, µs (NaN when nothing was sent).
    pub lateness_p50_us: f64,
    /// 99th percentile of lateness, µs.
    pub lateness_p99_us: f64,
    /// Largest lateness, µs.
    pub lateness_max_us: f64,
    /// Packets refused by the parser.
    pub malformed: u64,
}

/// Bytes a flow must have delivered (whole run) to count in Jain's index: about 68 full-sized
/// packets, far above a control connection's or a ping's few kB, far below any bulk transfer.
pub const DATA_FLOW_MIN_BYTES: u64 = 100_000;

/// What [`PathRecorder::finish`] needs from the path.
pub struct FinishCtx<'a> {
    /// End of the run (the `now` of `Path::finish`).
    pub end: Nanos,
    /// Scenario seed.
    pub seed: u64,
    /// Sampling period.
    pub sample_interval: Nanos,
    /// Bytes the link could carry in (warmup, end].
    pub capacity_bytes: f64,
    /// Unused delivery opportunities at the end.
    pub unused_txops: u64,
    /// One-way delay of this direction.
    pub delay: Nanos,
    /// The scenario document to echo.
    pub scenario: &'a Value,
    /// The AQM's effective kernel-profile settings (`AqmConfig::profile_json`, as the
    /// simulator reports them).
    pub aqm_params: &'a Value,
    /// Events the path processed.
    pub events: u64,
}

impl PathRecorder {
    /// A recorder for an AQM whose queues are `queue_init` (its sample at time 0).
    pub fn new(warmup: Nanos, queue_init: Vec<QueueSample>, per_packet: bool) -> Self {
        PathRecorder {
            rec: Recorder::new(warmup, queue_init, MAX_FLOWS + 1, per_packet),
            index: HashMap::default(),
            flows: Vec::new(),
            stats_buf: Vec::new(),
            lateness: LatenessHist::default(),
            malformed: 0,
            unclassified: 0,
            totals: Totals::default(),
            unused_at_warmup: None,
        }
    }

    /// The simulator's recorder underneath (for the Wi-Fi driver queue's rows).
    pub fn recorder_mut(&mut self) -> &mut Recorder {
        &mut self.rec
    }

    /// The warmup instant.
    pub fn warmup(&self) -> Nanos {
        self.rec.warmup
    }

    /// The flow id of `key` (a new one on first sight), noting an ECT(1) arrival.
    pub fn flow_id(&mut self, key: &FlowKey, ect1: bool, now: Nanos) -> u32 {
        let id = match self.index.get(key) {
            Some(&id) => id,
            None if self.flows.len() < MAX_FLOWS => {
                let id = self.flows.len() as u32;
                self.index.insert(*key, id);
                self.flows.push(FlowEntry::new(Some(*key), now));
                id
            }
            None => {
                if self.flows.len() == MAX_FLOWS {
                    self.flows.push(FlowEntry::new(None, now));
                }
                MAX_FLOWS as u32
            }
        };
        let f = &mut self.flows[id as usize];
        f.l4s |= ect1;
        f.sender.sent_pkts += 1;
        id
    }

    /// A packet of `flow` with `payload` transport bytes left the path; `ce` if it carries CE.
    pub fn on_delivered(&mut self, flow: u32, payload: u32, ce: bool) {
        let r = &mut self.flows[flow as usize].receiver;
        r.delivered_bytes += payload as u64;
        r.ce_acked += ce as u64;
        self.totals.delivered_pkts += 1;
    }

    /// A packet left the AQM (verdict 0 pass / 1 CE-marked here) or was dropped by it (2).
    pub fn on_packet(&mut self, now: Nanos, flow: u32, queue: u8, sojourn: Nanos, verdict: u8) {
        if verdict == 2 {
            self.totals.aqm_dropped_pkts += 1;
        }
        self.rec.on_packet(now, flow, queue, sojourn, verdict);
    }

    /// A packet was lost on the link (loss model).
    pub fn on_link_loss(&mut self, flow: u32) {
        self.totals.link_lost_pkts += 1;
        self.rec.counters[flow as usize].link_losses += 1;
    }

    /// `bytes` finished serialisation at `fin` (for utilisation after warmup).
    pub fn on_link_done(&mut self, fin: Nanos, bytes: u32) {
        if fin > self.rec.warmup {
            self.rec.link_bytes_after_warmup += bytes as f64;
        }
    }

    /// Smallest one-way delay (ingress to scheduled delivery) of `flow`.
    pub fn on_owd(&mut self, flow: u32, owd: Nanos) {
        let c = &mut self.rec.counters[flow as usize];
        if c.min_owd.is_none_or(|m| owd < m) {
            c.min_owd = Some(owd);
        }
    }

    fn collect(&mut self, pad: bool) {
        self.stats_buf.clear();
        for f in &self.flows {
            self.stats_buf.push((f.sender.clone(), f.receiver.clone()));
        }
        if pad {
            // The simulator's recorder keeps a warmup row per flow; flows first seen after
            // the warmup instant start from zero counters.
            let blank = FlowEntry::new(None, Nanos::ZERO);
            self.stats_buf
                .resize(MAX_FLOWS + 1, (blank.sender, blank.receiver));
        }
    }

    /// A sampling instant.
    pub fn sample(&mut self, now: Nanos, aqm: &dyn Aqm) {
        self.collect(false);
        self.rec.sample(now, aqm, &self.stats_buf);
    }

    /// The warmup instant, with the link's unused opportunities so far.
    pub fn warmup_snapshot(&mut self, now: Nanos, aqm: &dyn Aqm, unused_txops: u64) {
        self.collect(true);
        self.rec
            .warmup_snapshot(now, aqm, &self.stats_buf, unused_txops);
        self.unused_at_warmup = Some(unused_txops);
    }

    /// Build the results: the simulator's summary.json with flows named by 5-tuple and an
    /// `emulator` section (lateness, malformed and unclassified packets, the one-way delay).
    pub fn finish(mut self, ctx: FinishCtx<'_>, aqm: &dyn Aqm) -> PathResults {
        self.collect(false);
        let flow_keys: Vec<String> = self
            .flows
            .iter()
            .map(|f| f.key.map_or_else(|| "other".to_string(), |k| k.to_string()))
            .collect();
        let flow_cc: Vec<String> = self
            .flows
            .iter()
            .map(|f| {
                f.key
                    .map_or_else(|| "other".to_string(), |k| k.transport_name())
            })
            .collect();
        let flow_class: Vec<String> = self
            .flows
            .iter()
            .map(|f| if f.l4s { "L4S" } else { "Classic" }.to_string())
            .collect();
        let base_rtt_ms = vec![f64::NAN; self.flows.len()];
        let flow_start: Vec<Nanos> = self.flows.iter().map(|f| f.first_seen).collect();
        let sctx = SummaryCtx {
            seed: ctx.seed,
            duration: ctx.end,
            sample_interval: ctx.sample_interval,
            capacity_bytes: ctx.capacity_bytes,
            aqm_kind: aqm.kind(),
            flow_cc: &flow_cc,
            flow_class: &flow_class,
            base_rtt_ms: &base_rtt_ms,
            flow_start: &flow_start,
            flow_host: &[],
            raw: ctx.scenario,
            aqm_params: ctx.aqm_params,
            buffer: &serde_json::Value::Null,
        };
        let stats = std::mem::take(&mut self.stats_buf);
        let mut run = self.rec.finish(
            sctx,
            aqm,
            &stats,
            ctx.unused_txops,
            self.totals.clone(),
            ctx.events,
        );
        let us = |ns: f64| ns / 1e3;
        let (p50, p99) = (
            us(self.lateness.quantile_ns(0.50)),
            us(self.lateness.quantile_ns(0.99)),
        );
        let max = if self.lateness.is_empty() {
            f64::NAN
        } else {
            us(self.lateness.max_ns() as f64)
        };
        if let Ok(mut doc) = serde_json::from_str::<Value>(&run.summary_json) {
            if let Some(fl) = doc.get_mut("flows").and_then(Value::as_array_mut) {
                for (i, f) in fl.iter_mut().enumerate() {
                    if let (Some(obj), Some(k)) = (f.as_object_mut(), flow_keys.get(i)) {
                        obj.insert("flow".into(), json!(k));
                    }
                }
            }
            let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
            // Jain's index over the flows that carried data: a control connection (iperf3's),
            // ICMP or DNS would count as a starved flow and pull it towards 1/n.
            let data: Vec<usize> = (0..self.flows.len())
                .filter(|&i| self.flows[i].receiver.delivered_bytes >= DATA_FLOW_MIN_BYTES)
                .collect();
            let tputs: Vec<f64> = data
                .iter()
                .map(|&i| doc["flows"][i]["tput_mbps"].as_f64().unwrap_or(0.0))
                .collect();
            let others: Vec<&String> = (0..self.flows.len())
                .filter(|i| !data.contains(i))
                .filter_map(|i| flow_keys.get(i))
                .collect();
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("jain".into(), num(l4s_sim::recorder::jain(&tputs)));
                obj.insert(
                    "jain_flows".into(),
                    json!({"min_bytes": DATA_FLOW_MIN_BYTES, "counted": data,
                           "not_counted": others}),
                );
                obj.insert(
                    "emulator".into(),
                    json!({
                        "one_way_delay_ms": ctx.delay.as_ms_f64(),
                        "lateness_us": {"p50": num(p50), "p99": num(p99), "max": num(max),
                                        "packets": self.lateness.len(), "early": self.lateness.early},
                        "malformed_pkts": self.malformed,
                        "unclassified_pkts": self.unclassified,
                    }),
                );
            }
            if let Ok(s) = serde_json::to_string_pretty(&doc) {
                run.summary_json = s;
            }
        }
        PathResults {
            run,
            flow_keys,
            lateness_p50_us: p50,
            lateness_p99_us: p99,
            lateness_max_us: max,
            malformed: self.malformed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_cover_every_value_in_order() {
        // Indices are monotone and bucket bounds contain their values.
        let mut prev = 0;
        for v in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX / 3, u64::MAX]) {
            let i = LatenessHist::index(v);
            assert!(i >= prev, "{v}");
            prev = i;
            let (lo, w) = LatenessHist::bounds(i);
            assert!(lo <= v && v - lo < w, "v={v} lo={lo} w={w}");
        }
        assert!(LatenessHist::index(u64::MAX) < LatenessHist::default().counts.len());
    }

    #[test]
    fn quantiles_are_within_one_sixtyfourth() {
        // Lateness 1..=10000 ns: nearest-rank p50 = 5000, p99 = 9900, max exact.
        let mut h = LatenessHist::default();
        for v in 1..=10_000u64 {
            h.record(Nanos(1_000_000), Nanos(1_000_000 + v));
        }
        h.record(Nanos(10), Nanos(5));
        assert_eq!((h.len(), h.early), (10_001, 1));
        let p50 = h.quantile_ns(0.5);
        let p99 = h.quantile_ns(0.99);
        assert!((p50 - 5000.0).abs() <= 5000.0 / 64.0, "{p50}");
        assert!((p99 - 9900.0).abs() <= 9900.0 / 64.0, "{p99}");
        assert_eq!(h.max_ns(), 10_000);
        assert_eq!(h.quantile_ns(1.0), 10_000.0);
        assert!(LatenessHist::default().quantile_ns(0.5).is_nan());
        // Small values are exact.
        let mut h = LatenessHist::default();
        h.record(Nanos(0), Nanos(100));
        assert_eq!(h.quantile_ns(0.5), 100.0);
    }
}

/// Mahimahi's link log (`mm-link --uplink-log`), so that existing analysis scripts work on
/// emulator runs: `t + bytes` arrival, `t # bytes` delivery opportunity, `t - bytes delay`
/// departure after `delay` ms in the queue and on the link, `t d 1 bytes` AQM drop; `t` in
/// integer ms since the emulation started (the header's base timestamp is 0).
///
/// Opportunities: a trace link logs one `t # 1504` line per trace opportunity, looping as the
/// link does, like mm-link; a rate link (which Mahimahi has not) logs per millisecond the
/// whole bytes it could carry in that millisecond (floor of the cumulative capacity, so the
/// sum is exact).
#[derive(Debug)]
pub struct MahimahiLog {
    buf: String,
    /// Opportunity lines are written for every whole ms up to and including this one.
    opp_ms: u64,
    cum_bytes: u64,
    trace: Option<TraceCursor>,
}

/// The header lines mm-link writes (link_queue.cc): `# mahimahi mm-link (NAME) [SOURCE] >
/// LOGFILE`, `# command line: ...`, `# queue: ...`, `# init timestamp: T0` (wall-clock ms
/// since the Unix epoch at the start; every event time counts from it) and `# base
/// timestamp: 0` (the link's start, ms after T0: here the same instant).
#[derive(Clone, Debug, Default)]
pub struct MahimahiHeader {
    /// "uplink" or "downlink".
    pub link_name: String,
    /// The trace file, or the rate (mm-link names its trace file here).
    pub source: String,
    /// The log file's path.
    pub logfile: String,
    /// The emulator's command line.
    pub command_line: String,
    /// The queue (AQM) and its settings.
    pub queue: String,
    /// CLOCK_REALTIME in ms at the emulation's start.
    pub init_ms: u64,
}

impl MahimahiHeader {
    /// The header text, one line per field, as mm-link orders them.
    pub fn text(&self) -> String {
        format!(
            "# mahimahi mm-link ({}) [{}] > {}\n# command line: {}\n# queue: {}\n\
             # init timestamp: {}\n# base timestamp: 0\n",
            self.link_name, self.source, self.logfile, self.command_line, self.queue, self.init_ms
        )
    }
}

/// Walks a trace's opportunity groups as the link does (base += period per loop).
#[derive(Debug)]
struct TraceCursor {
    groups: Vec<(u64, u32)>,
    once: bool,
    idx: usize,
    base_ms: u64,
}

impl TraceCursor {
    fn peek(&mut self) -> Option<(u64, u32)> {
        if self.idx == self.groups.len() {
            let period = self.groups.last()?.0;
            if self.once || period == 0 {
                return None;
            }
            self.idx = 0;
            self.base_ms += period;
        }
        let (ms, n) = *self.groups.get(self.idx)?;
        Some((self.base_ms + ms, n))
    }
}

impl MahimahiLog {
    /// A log with its header; `trace` (the trace's groups and `once`) selects per-opportunity
    /// lines, else per-millisecond capacity lines of a rate link.
    pub fn new(header: &MahimahiHeader, trace: Option<(&MahimahiTraceData, bool)>) -> Self {
        MahimahiLog {
            buf: header.text(),
            opp_ms: 0,
            cum_bytes: 0,
            trace: trace.map(|(d, once)| TraceCursor {
                groups: d.groups().to_vec(),
                once,
                idx: 0,
                base_ms: 0,
            }),
        }
    }

    /// Write the opportunity lines of every millisecond up to `now` (a trace's opportunities
    /// at `now`'s millisecond included, a rate link's whole milliseconds only).
    pub fn opportunities(&mut self, now: Nanos, link: &dyn LinkModel) {
        use std::fmt::Write as _;
        let now_ms = now.0 / 1_000_000;
        if let Some(c) = &mut self.trace {
            while let Some((t, n)) = c.peek() {
                if t > now_ms {
                    break;
                }
                for _ in 0..n {
                    let _ = writeln!(self.buf, "{t} # 1504");
                }
                c.idx += 1;
            }
            return;
        }
        while self.opp_ms < now_ms {
            self.opp_ms += 1;
            let t = self.opp_ms;
            let cum = link.capacity_bytes(Nanos::ZERO, Nanos::from_ms(t)).floor() as u64;
            let b = cum.saturating_sub(self.cum_bytes);
            self.cum_bytes = cum;
            if b > 0 {
                let _ = writeln!(self.buf, "{t} # {b}");
            }
        }
    }

    /// An arrival of `bytes` at `now`.
    pub fn arrival(&mut self, now: Nanos, bytes: u32) {
        use std::fmt::Write as _;
        let _ = writeln!(self.buf, "{} + {bytes}", now.0 / 1_000_000);
    }

    /// A departure at `now` of a packet that arrived at `arrived`.
    pub fn departure(&mut self, now: Nanos, bytes: u32, arrived: Nanos) {
        use std::fmt::Write as _;
        let (t, a) = (now.0 / 1_000_000, arrived.0 / 1_000_000);
        let _ = writeln!(self.buf, "{t} - {bytes} {}", t - a.min(t));
    }

    /// An AQM drop at `now`.
    pub fn drop(&mut self, now: Nanos, bytes: u32) {
        use std::fmt::Write as _;
        let _ = writeln!(self.buf, "{} d 1 {bytes}", now.0 / 1_000_000);
    }

    /// The text logged so far (then cleared).
    pub fn take(&mut self) -> String {
        std::mem::take(&mut self.buf)
    }
}
