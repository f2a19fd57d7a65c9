//! Recorders: per-queue and per-flow series every sample interval, optional per-packet rows,
//! a bounded histogram of per-packet sojourns after warmup for summary.json, and the summary
//! document itself.
//!
//! summary.json figures cover the window (warmup, duration]: a flow's `tput_mbps` is its
//! goodput (payload delivered in order) over the whole window even if it starts or stops
//! inside it; queue sojourn statistics cover every packet dequeued in the window: the mean is
//! exact, the percentiles interpolate between closest ranks (numpy's default) on a log-linear
//! histogram and are within 2^-11 (0.049 %) of the exact ones (`histogram`); counters are
//! differences of cumulative counters at the two ends; `srtt_ms` is the mean of the sampled
//! smoothed RTTs in the window; utilisation is bytes that finished serialisation in the window
//! over the bytes the link could carry in it. The one exception is `packets` (sent, delivered,
//! aqm_dropped, link_lost, in_flight): the whole run [0, duration], because only there does
//! sent = delivered + dropped + lost + in flight hold. `windows` names both in the document.

use crate::histogram::SojournHistogram;
use crate::results::{FlowColumns, PacketColumns, QueueColumns, RunResults, Totals};
use l4s_core::aqm::QueueSample;
use l4s_core::{FlowStats, Nanos};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Value};

/// Per-flow cumulative counters the engine keeps (the endpoints do not see drops).
#[derive(Clone, Debug, Default)]
pub struct FlowCounters {
    /// Packets of this flow the AQM dropped (enqueue or dequeue).
    pub aqm_drops: u64,
    /// Packets of this flow lost on the link (random / Gilbert–Elliott loss).
    pub link_losses: u64,
    /// Smallest sender→receiver one-way delay seen.
    pub min_owd: Option<Nanos>,
    /// When a sized transfer was fully acknowledged.
    pub done_at: Option<Nanos>,
}

/// The values of one per-flow row that come from the flow's endpoints.
struct FlowRow {
    delivered_bytes: u64,
    cwnd_pkts: f64,
    srtt_ms: f64,
    pacing_mbps: f64,
    ce_acked: u64,
    /// Media senders' target rate, Mb/s (0 for others).
    target_mbps: f64,
    /// Media senders' bytes reported received, cumulative.
    acked_bytes: u64,
}

/// Snapshot at the warmup instant, subtracted from end values for summary.json.
#[derive(Clone, Debug, Default)]
struct WarmupSnap {
    queues: Vec<QueueSample>,
    /// The AQM's named counters (`Aqm::counters`, e.g. DualPI2's marks by cause).
    aqm_counters: Vec<(&'static str, u64)>,
    /// (sender stats, delivered bytes, CE count, engine counters) per flow.
    flows: Vec<(FlowStats, u64, u64, FlowCounters)>,
    unused_txops: u64,
}

/// Collects the sample, per-packet and summary data of one run.
pub struct Recorder {
    /// End of the warmup (summary.json counts from here).
    pub warmup: Nanos,
    /// Queue names in `QueueSample` order ("L", "C", "single", "fq").
    pub queue_names: Vec<&'static str>,
    /// Sojourns (ns) of packets dequeued at or after warmup, per queue (bounded memory).
    pub sojourns: Vec<SojournHistogram>,
    /// Per-packet rows, when `[output] packets = true`.
    pub packets: Option<PacketColumns>,
    samples: QueueColumns,
    flows: FlowColumns,
    prev_q: Vec<QueueSample>,
    prev_delivered: Vec<u64>,
    /// Media senders' acked bytes at the previous sample, per flow.
    prev_acked: Vec<u64>,
    prev_t: Nanos,
    /// srtt sums over samples after warmup, per flow (sum_ms, n).
    srtt_acc: Vec<(f64, u64)>,
    /// Engine-side counters per flow.
    pub counters: Vec<FlowCounters>,
    /// Bytes serialised by the bottleneck in (warmup, duration], the packet on the link at
    /// either instant for its share (`window_share`).
    pub link_bytes_after_warmup: f64,
    snap: Option<WarmupSnap>,
    scratch: Vec<QueueSample>,
    /// Queues below the AQM (e.g. a Wi-Fi driver queue), sampled after the AQM's own; their
    /// latest state, set by the engine before each sample.
    pub extra_queues: Vec<QueueSample>,
    /// `[[links]]` chains: (hop name, "hop/queue" name) of every queue in column order; empty
    /// for one link, whose queues keep their bare names.
    pub queue_labels: Vec<(String, String)>,
}

/// summary.json's `aqm_counters`: each named AQM counter's increase since warmup (an empty
/// object for AQMs without named counters).
fn aqm_counters(aqm: &dyn l4s_core::aqm::Aqm, snap: &WarmupSnap) -> Value {
    let mut m = serde_json::Map::new();
    for (name, end) in aqm.counters() {
        let start = snap
            .aqm_counters
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v);
        m.insert(name.to_string(), json!(end.saturating_sub(start)));
    }
    Value::Object(m)
}

/// Delivered bytes as the receiver reports them (falling back to the sender's view).
pub fn delivered(sender: &FlowStats, receiver: &FlowStats) -> u64 {
    receiver.delivered_bytes.max(sender.delivered_bytes)
}

/// CE marks the flow learned of (sender feedback), or counted at the receiver (CBR).
pub fn ce_count(sender: &FlowStats, receiver: &FlowStats) -> u64 {
    sender.ce_acked.max(receiver.ce_acked)
}

/// Percentile with linear interpolation between closest ranks (numpy's default), on sorted data.
pub fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] as f64 + (h - lo as f64) * (sorted[hi] as f64 - sorted[lo] as f64)
}

fn num(x: f64) -> Value {
    // JSON has no NaN: absent figures are null.
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²); NaN when every x is 0.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (xs.len() as f64 * s2)
}

impl Recorder {
    /// A recorder for these queues (their initial samples) and `n_flows` flows.
    pub fn new(
        warmup: Nanos,
        queue_init: Vec<QueueSample>,
        n_flows: usize,
        per_packet: bool,
    ) -> Self {
        let queue_names = queue_init.iter().map(|q| q.name).collect::<Vec<_>>();
        Recorder {
            warmup,
            sojourns: vec![SojournHistogram::new(); queue_names.len()],
            queue_names,
            packets: per_packet.then(PacketColumns::default),
            samples: QueueColumns::default(),
            flows: FlowColumns::default(),
            prev_q: queue_init,
            prev_delivered: vec![0; n_flows],
            prev_acked: vec![0; n_flows],
            prev_t: Nanos::ZERO,
            srtt_acc: vec![(0.0, 0); n_flows],
            counters: vec![FlowCounters::default(); n_flows],
            link_bytes_after_warmup: 0.0,
            snap: None,
            scratch: Vec::new(),
            extra_queues: Vec::new(),
            queue_labels: Vec::new(),
        }
    }

    /// Add a queue below the AQM named `name`; its index in the columns.
    pub fn add_extra_queue(&mut self, name: &'static str) -> u8 {
        self.queue_names.push(name);
        self.sojourns.push(SojournHistogram::new());
        self.prev_q.push(QueueSample::empty(name));
        self.extra_queues.push(QueueSample::empty(name));
        (self.queue_names.len() - 1) as u8
    }

    /// A packet left the queue (verdict 0 pass / 1 marked) or was dropped by the AQM (2).
    #[inline]
    pub fn on_packet(&mut self, now: Nanos, flow: u32, queue: u8, sojourn: Nanos, verdict: u8) {
        if verdict == 2 {
            self.counters[flow as usize].aqm_drops += 1;
        } else if now >= self.warmup {
            self.sojourns[queue as usize].record(sojourn.0);
        }
        if let Some(p) = &mut self.packets {
            p.t_s.push(now.as_secs_f64());
            p.flow.push(flow);
            p.queue.push(queue);
            p.sojourn_ms.push(sojourn.as_ms_f64());
            p.verdict.push(verdict);
        }
    }

    /// One sampling instant: `queues` from the AQM, `flows` as (sender, receiver) stats.
    pub fn sample(
        &mut self,
        now: Nanos,
        aqm: &dyn l4s_core::aqm::Aqm,
        flows: &[(FlowStats, FlowStats)],
    ) {
        self.sample_queues(now, aqm);
        for (i, (s, r)) in flows.iter().enumerate() {
            self.sample_flow(now, i, s, r);
        }
        self.end_sample(now);
    }

    /// A sampling instant, part 1: one row per queue. Then [`Recorder::sample_flow`] for each
    /// flow in order, then [`Recorder::end_sample`] (the engine feeds each flow's stats as it
    /// reads them instead of gathering them all first).
    pub fn sample_queues(&mut self, now: Nanos, aqm: &dyn l4s_core::aqm::Aqm) {
        let t_s = now.as_secs_f64();
        self.scratch.clear();
        aqm.sample(now, &mut self.scratch);
        self.scratch.extend(self.extra_queues.iter().cloned());
        for (i, q) in self.scratch.iter().enumerate() {
            let prev = &self.prev_q[i];
            self.samples.t_s.push(t_s);
            self.samples.queue.push(i as u8);
            self.samples.backlog_pkts.push(q.backlog_pkts);
            self.samples.backlog_bytes.push(q.backlog_bytes);
            self.samples.sojourn_ms.push(q.head_sojourn.as_ms_f64());
            self.samples.marks.push(q.marks - prev.marks);
            self.samples.drops.push(q.drops - prev.drops);
            self.samples.p_prime.push(q.p_prime);
            self.samples.p_c.push(q.p_c);
            self.samples.p_cl.push(q.p_cl);
        }
        std::mem::swap(&mut self.prev_q, &mut self.scratch);
    }

    /// A sampling instant, part 2: the row of flow `i` from its sender's and receiver's stats.
    #[inline]
    pub fn sample_flow(&mut self, now: Nanos, i: usize, s: &FlowStats, r: &FlowStats) {
        let row = FlowRow {
            delivered_bytes: delivered(s, r),
            cwnd_pkts: s.cwnd_pkts,
            srtt_ms: s.srtt.as_ms_f64(),
            pacing_mbps: s.pacing_bps as f64 / 1e6,
            ce_acked: ce_count(s, r),
            target_mbps: s.target_bps / 1e6,
            acked_bytes: s.acked_bytes,
        };
        self.push_flow_row(now, i, row);
    }

    /// A sampling instant, part 2, for a flow whose endpoints have not changed since its
    /// previous row, `back` rows ago (the rows per flow sample): the same stats again, read
    /// from that row instead of from the endpoints, whose state is the part of a many-flow
    /// run's memory least likely to be in cache.
    #[inline]
    pub fn repeat_flow(&mut self, now: Nanos, i: usize, back: usize) {
        let c = &self.flows;
        let k = c.flow.len() - back;
        debug_assert_eq!(c.flow[k] as usize, i);
        let row = FlowRow {
            delivered_bytes: c.delivered_bytes[k],
            cwnd_pkts: c.cwnd_pkts[k],
            srtt_ms: c.srtt_ms[k],
            pacing_mbps: c.pacing_mbps[k],
            ce_acked: c.ce_acked[k],
            target_mbps: c.target_mbps[k],
            acked_bytes: self.prev_acked[i],
        };
        self.push_flow_row(now, i, row);
    }

    #[inline(always)]
    fn push_flow_row(&mut self, now: Nanos, i: usize, row: FlowRow) {
        let t_s = now.as_secs_f64();
        let dt = (now - self.prev_t).as_secs_f64();
        let d = row.delivered_bytes;
        self.flows.t_s.push(t_s);
        self.flows.flow.push(i as u32);
        self.flows.delivered_bytes.push(d);
        let tput = if dt > 0.0 {
            d.saturating_sub(self.prev_delivered[i]) as f64 * 8.0 / dt / 1e6
        } else {
            0.0
        };
        self.flows.tput_mbps.push(tput);
        self.flows.cwnd_pkts.push(row.cwnd_pkts);
        self.flows.srtt_ms.push(row.srtt_ms);
        self.flows.pacing_mbps.push(row.pacing_mbps);
        self.flows.ce_acked.push(row.ce_acked);
        self.flows.target_mbps.push(row.target_mbps);
        // Acknowledged rate: bytes the feedback reported received over the interval (media
        // senders; 0 for others, whose count stays 0).
        let acked = if dt > 0.0 {
            row.acked_bytes.saturating_sub(self.prev_acked[i]) as f64 * 8.0 / dt / 1e6
        } else {
            0.0
        };
        self.flows.acked_mbps.push(acked);
        self.prev_acked[i] = row.acked_bytes;
        self.prev_delivered[i] = d;
        // srtt_ms > 0 exactly when the smoothed RTT in ns is (a positive count over 1e6).
        if now >= self.warmup && row.srtt_ms > 0.0 {
            self.srtt_acc[i].0 += row.srtt_ms;
            self.srtt_acc[i].1 += 1;
        }
    }

    /// A sampling instant, part 3: every flow's row is in.
    pub fn end_sample(&mut self, now: Nanos) {
        self.prev_t = now;
    }

    /// Snapshot at the warmup instant.
    pub fn warmup_snapshot(
        &mut self,
        now: Nanos,
        aqm: &dyn l4s_core::aqm::Aqm,
        flows: &[(FlowStats, FlowStats)],
        unused_txops: u64,
    ) {
        let mut queues = Vec::new();
        aqm.sample(now, &mut queues);
        queues.extend(self.extra_queues.iter().cloned());
        self.snap = Some(WarmupSnap {
            queues,
            aqm_counters: aqm.counters(),
            flows: flows
                .iter()
                .enumerate()
                .map(|(i, (s, r))| {
                    (
                        s.clone(),
                        delivered(s, r),
                        ce_count(s, r),
                        self.counters[i].clone(),
                    )
                })
                .collect(),
            unused_txops,
        });
    }

    /// Finish: build the columns and summary.json.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        mut self,
        ctx: SummaryCtx<'_>,
        aqm: &dyn l4s_core::aqm::Aqm,
        flows: &[(FlowStats, FlowStats)],
        unused_txops: u64,
        totals: Totals,
        events: u64,
    ) -> RunResults {
        let end = ctx.duration;
        let window = (end - self.warmup).as_secs_f64();
        let snap = self.take_warmup_snap(flows.len());
        let mut end_q = Vec::new();
        aqm.sample(end, &mut end_q);
        end_q.extend(self.extra_queues.iter().cloned());
        let tputs = self.flow_tputs(flows, &snap, window);
        let queue_docs = self.queue_summaries(&end_q, &snap);
        let cap_bytes = ctx.capacity_bytes;
        let summary = json!({
            "l4slab_version": env!("CARGO_PKG_VERSION"),
            "seed": ctx.seed,
            "duration_s": end.as_secs_f64(),
            "warmup_s": self.warmup.as_secs_f64(),
            "sample_interval_s": ctx.sample_interval.as_secs_f64(),
            "link": {
                "capacity_mbps": num(cap_bytes * 8.0 / window / 1e6),
                "utilisation": num(self.link_bytes_after_warmup / cap_bytes),
                "unused_txops": unused_txops - snap.unused_txops,
            },
            "aqm": ctx.aqm_kind,
            "aqm_params": ctx.aqm_params,
            "buffer": ctx.buffer,
            "aqm_counters": aqm_counters(aqm, &snap),
            "queues": queue_docs,
            "jain": num(jain(&tputs)),
            "packets": {
                "sent": totals.sent_pkts,
                "delivered": totals.delivered_pkts,
                "aqm_dropped": totals.aqm_dropped_pkts,
                "link_lost": totals.link_lost_pkts,
                "in_flight": totals.in_flight_pkts,
            },
            "events": events,
            // Which time window each block counts (see the module comment).
            "windows": {
                "after_warmup_s": [self.warmup.as_secs_f64(), end.as_secs_f64()],
                "whole_run_s": [0.0, end.as_secs_f64()],
                "link": "after_warmup",
                "flows": "after_warmup",
                "queues": "after_warmup",
                "aqm_counters": "after_warmup",
                "jain": "after_warmup",
                "packets": "whole_run",
            },
            "scenario": ctx.raw,
        });
        // The `flows` entries are written one at a time into the text instead of being built
        // as a `Value` tree first (about 5 KB of small allocations per flow, 55 MB at 10 000
        // flows, at the moment the run's columns are largest).
        let doc = SummaryDoc {
            fields: &summary,
            flows: FlowDocs {
                rec: &self,
                ctx: &ctx,
                flows,
                snap: &snap,
                tputs: &tputs,
            },
        };
        let summary_json = serde_json::to_string_pretty(&doc)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        RunResults {
            queue_names: if self.queue_labels.is_empty() {
                self.queue_names.iter().map(|s| s.to_string()).collect()
            } else {
                self.queue_labels.iter().map(|l| l.1.clone()).collect()
            },
            flow_cc: ctx.flow_cc.to_vec(),
            flow_class: ctx.flow_class.to_vec(),
            samples: self.samples,
            flows: self.flows,
            packets: self.packets,
            summary_json,
            events,
            totals,
            flow_min_owd_ms: self
                .counters
                .iter()
                .map(|c| c.min_owd.map_or(f64::NAN, |t| t.as_ms_f64()))
                .collect(),
            app: Default::default(),
        }
    }

    /// The warmup snapshot, or zeros when the run had no warmup.
    fn take_warmup_snap(&mut self, n_flows: usize) -> WarmupSnap {
        self.snap.take().unwrap_or_else(|| WarmupSnap {
            queues: self
                .prev_q
                .iter()
                .map(|q| QueueSample::empty(q.name))
                .collect(),
            aqm_counters: Vec::new(),
            flows: vec![(FlowStats::default(), 0, 0, FlowCounters::default()); n_flows],
            unused_txops: 0,
        })
    }

    /// Each flow's throughput over the window after warmup, Mb/s (summary.json's `tput_mbps`
    /// and Jain's index).
    fn flow_tputs(
        &self,
        flows: &[(FlowStats, FlowStats)],
        snap: &WarmupSnap,
        window: f64,
    ) -> Vec<f64> {
        flows
            .iter()
            .zip(&snap.flows)
            .map(|((s, r), (_, d0, _, _))| {
                delivered(s, r).saturating_sub(*d0) as f64 * 8.0 / window / 1e6
            })
            .collect()
    }

    /// summary.json's `queues` entries: sojourn statistics and counter differences since
    /// warmup.
    fn queue_summaries(&self, end_q: &[QueueSample], snap: &WarmupSnap) -> Vec<Value> {
        let mut queue_docs = Vec::new();
        for (i, q) in end_q.iter().enumerate() {
            let q0 = &snap.queues[i];
            let h = &self.sojourns[i];
            let mean = h.mean() / 1e6;
            let [p50, p95, p99] = h.percentiles([0.50, 0.95, 0.99]);
            let mut doc = json!({
                "name": q.name,
                "sojourn_ms": {
                    "mean": num(mean),
                    "p50": num(p50 / 1e6),
                    "p95": num(p95 / 1e6),
                    "p99": num(p99 / 1e6),
                },
                "marks": q.marks - q0.marks,
                "drops": q.drops - q0.drops,
                "packets": q.packets - q0.packets,
            });
            if let Some((hop, name)) = self.queue_labels.get(i) {
                doc["name"] = json!(name);
                doc["hop"] = json!(hop);
            }
            queue_docs.push(doc);
        }
        queue_docs
    }
}

/// summary.json: the document's other fields (a JSON object, whose keys serde_json keeps
/// sorted) with `flows` written in its sorted place, so the text is what serialising one
/// `Value` holding all of them gives.
struct SummaryDoc<'a> {
    fields: &'a Value,
    flows: FlowDocs<'a>,
}

impl Serialize for SummaryDoc<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let Value::Object(fields) = self.fields else {
            return self.fields.serialize(ser);
        };
        let mut m = ser.serialize_map(Some(fields.len() + 1))?;
        let mut flows_written = false;
        for (k, v) in fields {
            if !flows_written && k.as_str() > "flows" {
                m.serialize_entry("flows", &self.flows)?;
                flows_written = true;
            }
            m.serialize_entry(k, v)?;
        }
        if !flows_written {
            m.serialize_entry("flows", &self.flows)?;
        }
        m.end()
    }
}

/// summary.json's `flows` entries over the window after warmup, one [`FlowDoc`] per flow.
struct FlowDocs<'a> {
    rec: &'a Recorder,
    ctx: &'a SummaryCtx<'a>,
    flows: &'a [(FlowStats, FlowStats)],
    snap: &'a WarmupSnap,
    tputs: &'a [f64],
}

/// One flow's summary entry. The fields are in the sorted order of their names (the order of
/// a serde_json object); f64 values that are not finite are written as null, as `num` does.
#[derive(serde::Serialize)]
struct FlowDoc<'a> {
    base_rtt_ms: f64,
    cc: &'a str,
    ce_marks: u64,
    class: &'a str,
    drops: u64,
    fct_s: Option<f64>,
    host: Option<&'a Value>,
    id: usize,
    retransmits: u64,
    srtt_ms: Option<f64>,
    start_s: Option<f64>,
    tput_mbps: f64,
}

impl Serialize for FlowDocs<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let ctx = self.ctx;
        let mut seq = ser.serialize_seq(Some(self.flows.len()))?;
        for (i, (s, r)) in self.flows.iter().enumerate() {
            let (s0, _, ce0, c0) = &self.snap.flows[i];
            let c = &self.rec.counters[i];
            let (sum, n) = self.rec.srtt_acc[i];
            seq.serialize_element(&FlowDoc {
                base_rtt_ms: ctx.base_rtt_ms[i],
                cc: &ctx.flow_cc[i],
                ce_marks: ce_count(s, r).saturating_sub(*ce0),
                class: &ctx.flow_class[i],
                drops: (c.aqm_drops + c.link_losses) - (c0.aqm_drops + c0.link_losses),
                fct_s: c.done_at.map(|d| (d - ctx.flow_start[i]).as_secs_f64()),
                host: ctx.flow_host.get(i),
                id: i,
                retransmits: s.retransmits.saturating_sub(s0.retransmits),
                srtt_ms: (n > 0).then(|| sum / n as f64),
                start_s: ctx.flow_start.get(i).map(|t| t.as_secs_f64()),
                tput_mbps: self.tputs[i],
            })?;
        }
        seq.end()
    }
}

/// What the summary needs from the run besides the recorder's own data.
pub struct SummaryCtx<'a> {
    /// The scenario's seed.
    pub seed: u64,
    /// Run length.
    pub duration: Nanos,
    /// Sampling period of the series.
    pub sample_interval: Nanos,
    /// Bytes the link could carry after warmup (for utilisation).
    pub capacity_bytes: f64,
    /// The AQM `kind`.
    pub aqm_kind: &'a str,
    /// Congestion control name per flow.
    pub flow_cc: &'a [String],
    /// "L4S" or "Classic" per flow.
    pub flow_class: &'a [String],
    /// Base RTT per flow, ms.
    pub base_rtt_ms: &'a [f64],
    /// Start time per flow (for flow completion times).
    pub flow_start: &'a [Nanos],
    /// The effective host settings of each flow (`flows::host_summary`; empty when unknown,
    /// as for the emulator's real programs, which then report null).
    pub flow_host: &'a [Value],
    /// The scenario document as given.
    pub raw: &'a Value,
    /// Effective values of the AQM settings a kernel profile decides (Null if none).
    pub aqm_params: &'a Value,
    /// How a limit in BDP units was resolved (`bdp::BufferSizing::to_json`; Null if none).
    pub buffer: &'a Value,
}

/// The share of a packet serialised over [start, fin] that falls in the window (from, to]:
/// the packet on the link when the window opens or closes counts for its part inside, so
/// bytes over capacity (utilisation) cannot exceed 1 on a constant-rate link. A packet with
/// no serialisation time (fin = start) counts whole when fin is in the window.
pub fn window_share(start: Nanos, fin: Nanos, from: Nanos, to: Nanos) -> f64 {
    if fin <= start {
        return if fin > from && fin <= to { 1.0 } else { 0.0 };
    }
    let (lo, hi) = (start.max(from), fin.min(to));
    if hi <= lo {
        0.0
    } else if lo == start && hi == fin {
        // Wholly inside (nearly every packet): x/x is exactly 1.0, without the division.
        1.0
    } else {
        (hi - lo).0 as f64 / (fin - start).0 as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_share_is_the_part_of_the_serialisation_inside_the_window() {
        let ms = Nanos::from_ms;
        // Wholly inside, straddling the start, straddling the end, outside.
        assert_eq!(window_share(ms(2), ms(3), ms(1), ms(10)), 1.0);
        assert_eq!(window_share(ms(0), ms(4), ms(1), ms(10)), 0.75);
        assert_eq!(window_share(ms(9), ms(11), ms(1), ms(10)), 0.5);
        assert_eq!(window_share(ms(11), ms(12), ms(1), ms(10)), 0.0);
        // No serialisation time: whole when it ends in (from, to].
        assert_eq!(window_share(ms(1), ms(1), ms(1), ms(10)), 0.0);
        assert_eq!(window_share(ms(10), ms(10), ms(1), ms(10)), 1.0);
    }

    #[test]
    fn a_repeated_flow_row_is_the_row_its_unchanged_stats_give() {
        // Two recorders see the same three samples of two flows; flow 1's endpoints do
        // nothing after the first. One reads flow 1's (unchanged) stats every time, the other
        // repeats its previous row: the columns and the srtt means must be identical, with
        // flow 1 once before warmup (no srtt yet, then an RTT) and once after it.
        let ms = Nanos::from_ms;
        let st = |d: u64, srtt_ms: u64, ce: u64| FlowStats {
            delivered_bytes: d,
            cwnd_pkts: 10.5,
            srtt: ms(srtt_ms),
            pacing_bps: 12_345_678,
            ce_acked: ce,
            ..Default::default()
        };
        let idle = [st(0, 0, 0), st(90_000, 42, 3)];
        for one in idle {
            let mut full = Recorder::new(ms(20), Vec::new(), 2, false);
            let mut rep = Recorder::new(ms(20), Vec::new(), 2, false);
            for (k, t) in [ms(16), ms(32), ms(48)].into_iter().enumerate() {
                let busy = st(1_000 * (k as u64 + 1), 20 + k as u64, k as u64);
                for r in [&mut full, &mut rep] {
                    r.sample_flow(t, 0, &busy, &FlowStats::default());
                }
                full.sample_flow(t, 1, &one, &FlowStats::default());
                match k {
                    0 => rep.sample_flow(t, 1, &one, &FlowStats::default()),
                    _ => rep.repeat_flow(t, 1, 2),
                }
                full.end_sample(t);
                rep.end_sample(t);
            }
            assert_eq!(full.flows, rep.flows);
            assert_eq!(full.srtt_acc, rep.srtt_acc);
            assert_eq!(full.prev_delivered, rep.prev_delivered);
        }
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        // numpy.percentile([1,2,3,4], 50) = 2.5; 95 -> 3.85; 99 -> 3.97.
        let v = [1, 2, 3, 4];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert!((percentile(&v, 0.95) - 3.85).abs() < 1e-12);
        assert!((percentile(&v, 0.99) - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[7], 0.99), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn jain_index_bounds() {
        // Equal shares -> 1; one of n flows has everything -> 1/n.
        assert_eq!(jain(&[5.0, 5.0, 5.0]), 1.0);
        assert_eq!(jain(&[9.0, 0.0, 0.0]), 1.0 / 3.0);
        // (1+3)^2 / (2*(1+9)) = 16/20 = 0.8.
        assert!((jain(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        assert!(jain(&[0.0, 0.0]).is_nan());
    }
}
