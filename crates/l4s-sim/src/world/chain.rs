//! The hops after the first of a `[[links]]` chain (`hops`): each an AQM and a link model of
//! its own, joined by one-way propagation lines; hop 0 is the world's `Net`. A packet leaves a
//! hop as it does the one-link bottleneck (loss and jitter after the link), then propagates
//! for that hop's `delay` to the next hop its flow crosses, or, after its flow's last hop,
//! to the flow's own forward delay line (see `hops` for how the base RTT is split).

use super::{SimVerdicts, World};
use crate::bottleneck::{Bottleneck, Service};
use crate::engine::{DelayLine, Kind};
use crate::error::SimError;
use crate::scenario::Scenario;
use l4s_core::aqm::QueueSample;
use l4s_core::{Nanos, Packet};
use serde_json::{json, Value};

/// One hop after the first: a bottleneck of its own (the object `[link]` uses) and where its
/// queues sit in the recorder.
pub(super) struct Hop {
    bn: Bottleneck,
    /// Bytes whose last bit left this hop in (warmup, duration].
    link_bytes_after_warmup: f64,
    /// Index of this hop's first queue in the recorder's extra queues.
    extra_q: usize,
    /// Index of this hop's first queue in the recorder's columns.
    q_base: u8,
}

/// Hops 1.. of the chain and the propagation lines between all hops.
pub(super) struct Chain {
    /// Hop k ≥ 1 at index k − 1.
    hops: Vec<Hop>,
    /// `lines[k]`: packets propagating from hop k to hop k + 1.
    lines: Vec<DelayLine>,
    /// One-way propagation after each hop.
    delays: Vec<Nanos>,
    /// Unused transmit opportunities of every hop at the warmup instant.
    unused_at_warmup: Vec<u64>,
}

impl Chain {
    /// Hops 1.. of `s.hops`, each with its own random streams, their queues registered with
    /// the recorder after hop 0's; None for the one-link form.
    pub(super) fn new(
        s: &Scenario,
        rec: &mut crate::recorder::Recorder,
    ) -> Result<Option<Self>, SimError> {
        if s.hops.is_empty() {
            return Ok(None);
        }
        let n0 = rec.queue_names.len();
        rec.queue_labels = rec.queue_names[..n0]
            .iter()
            .map(|q| (s.hops[0].name.clone(), format!("{}/{q}", s.hops[0].name)))
            .collect();
        let mut hops = Vec::new();
        for (k, h) in s.hops.iter().enumerate().skip(1) {
            let named = |e| crate::hops::reprefix(e, "link", &format!("links[{k}]"));
            let bn = Bottleneck::new(
                &h.link,
                &h.aqm,
                s.base_dir.as_deref(),
                s.seed,
                &format!("links[{k}]/"),
            )
            .map_err(named)?;
            let mut q0 = Vec::new();
            bn.aqm.sample(Nanos::ZERO, &mut q0);
            let extra_q = rec.extra_queues.len();
            let q_base = rec.queue_names.len() as u8;
            for q in q0 {
                rec.add_extra_queue(q.name);
                rec.queue_labels
                    .push((h.name.clone(), format!("{}/{}", h.name, q.name)));
                let i = rec.extra_queues.len() - 1;
                rec.extra_queues[i] = q;
            }
            hops.push(Hop {
                bn,
                link_bytes_after_warmup: 0.0,
                extra_q,
                q_base,
            });
        }
        Ok(Some(Chain {
            hops,
            lines: (0..s.hops.len()).map(|_| DelayLine::default()).collect(),
            delays: s.hops.iter().map(|h| h.delay).collect(),
            unused_at_warmup: vec![0; s.hops.len()],
        }))
    }

    fn hop(&mut self, k: usize) -> &mut Hop {
        &mut self.hops[k - 1]
    }

    /// Packets held by hops 1.. and the lines between hops (for conservation).
    pub(super) fn in_flight(&self, slab: &crate::engine::PacketSlab) -> u64 {
        self.hops
            .iter()
            .map(|h| h.bn.aqm.backlog_pkts() + h.bn.stuck_pkts)
            .sum::<u64>()
            + self.lines.iter().map(|l| l.len(slab) as u64).sum::<u64>()
    }
}

impl World {
    /// A packet of flow `p.flow` enters hop `k` ≥ 1 (sent there, or arriving from hop k − 1).
    pub(super) fn hop_enqueue(&mut self, k: usize, p: Packet) {
        let now = self.now;
        let Some((h, mut v)) = self.hop_and_verdicts(k) else {
            return;
        };
        if h.bn.enqueue(p, now, &mut v) && h.bn.idle() {
            self.hop_start_service(k, now);
        }
        self.hop_arm_aqm(k);
    }

    /// Hop `k` ≥ 1 and where its verdicts go (as `bottleneck` for hop 0).
    fn hop_and_verdicts(&mut self, k: usize) -> Option<(&mut Hop, SimVerdicts<'_>)> {
        let World {
            chain,
            net,
            rec,
            capture,
            hot,
            ..
        } = self;
        let h = chain.as_mut()?.hop(k);
        let q_base = h.q_base;
        let v = SimVerdicts {
            rec,
            capture,
            hot,
            totals: &mut net.totals,
            q_base,
        };
        Some((h, v))
    }

    /// The idle link of hop `k` has a packet waiting: serve it now or when its model can.
    fn hop_start_service(&mut self, k: usize, now: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        match c.hop(k).bn.start_service(now) {
            Service::Now => self.hop_service(k, now),
            Service::At(s) => self.ev.push(s, Kind::HopService, k as u32),
            Service::Never => {}
        }
    }

    /// `Kind::HopService`: the link of hop `k` can take its next packet.
    pub(super) fn hop_service_event(&mut self, k: usize, now: Nanos) {
        self.events += 1;
        if let Some(c) = self.chain.as_mut() {
            c.hop(k).bn.serve_due();
        }
        self.hop_service(k, now);
    }

    /// The link of hop `k` takes the next packet from its AQM at `now` (the one-link
    /// `link_service` and `propagate` for this hop).
    fn hop_service(&mut self, k: usize, now: Nanos) {
        let (warmup, end) = (self.rec.warmup, self.end);
        let Some((h, mut v)) = self.hop_and_verdicts(k) else {
            return;
        };
        let sent = h.bn.dequeue(now, &mut v).and_then(|p| {
            // None: the link ended (a `once` trace) before this packet did: it stays on it.
            let fin = h.bn.transmit(now, p.bytes)?;
            let share = crate::recorder::window_share(now, fin, warmup, end);
            h.link_bytes_after_warmup += p.bytes as f64 * share;
            Some((p, fin, h.bn.lost()))
        });
        if let Some((p, fin, lost)) = sent {
            self.ev.push(fin, Kind::HopDone, k as u32);
            if lost {
                self.net.totals.link_lost_pkts += 1;
                self.rec.counters[p.flow as usize].link_losses += 1;
            } else {
                self.hop_propagate(k, p, fin);
            }
        }
        self.hop_arm_aqm(k);
    }

    /// `Kind::HopDone`: the packet on hop `k`'s link has left it.
    pub(super) fn hop_done(&mut self, k: usize, now: Nanos) {
        self.events += 1;
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        if c.hop(k).bn.link_done() {
            self.hop_start_service(k, now);
        }
    }

    /// A packet that left hop `k` (last bit at `fin`, not lost): on to the next hop its flow
    /// crosses, after this hop's delay (and jitter), or onto the flow's forward delay line
    /// after its last hop.
    pub(super) fn hop_propagate(&mut self, k: usize, p: Packet, fin: Nanos) {
        let f = p.flow as usize;
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let Chain {
            hops,
            lines,
            delays,
            ..
        } = c;
        let (line_len, last) = (lines.len(), self.hot[f].fwd.last_hop as usize);
        let bn = if k == 0 {
            &mut self.net.bn
        } else {
            &mut hops[k - 1].bn
        };
        if k < last && k + 1 < line_len {
            let line = &mut lines[k];
            let at = bn.jitter(fin + delays[k], line.back_time(&self.slab));
            if let Some(h) = line.push(&mut self.slab, at, p) {
                self.ev.push(h, Kind::HopArrive, k as u32);
            }
        } else {
            let fwd = &mut self.hot[f].fwd;
            let at = bn.jitter(fin + fwd.delay, fwd.line.back_time(&self.slab));
            if let Some(h) = fwd.line.push(&mut self.slab, at, p) {
                self.ev.push(h, Kind::FwdArrive, f as u32);
            }
        }
    }

    /// `Kind::HopArrive`: the packets due on the line after hop `k` reach hop k + 1.
    pub(super) fn hop_arrive(&mut self, k: usize, t: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        if !c.lines[k].fire(t) {
            return;
        }
        self.events += 1;
        loop {
            let Some(c) = self.chain.as_mut() else {
                return;
            };
            let Some(i) = c.lines[k].pop_due(&mut self.slab, t) else {
                break;
            };
            let p = *self.slab.packet(i);
            self.hop_enqueue(k + 1, p);
        }
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        if let Some(h) = c.lines[k].rearm() {
            self.ev.push(h, Kind::HopArrive, k as u32);
        }
    }

    fn hop_arm_aqm(&mut self, k: usize) {
        let now = self.now;
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        if let Some(w) = c.hop(k).bn.arm_aqm(now) {
            self.ev.push(w, Kind::HopAqmTimer, k as u32);
        }
    }

    /// `Kind::HopAqmTimer`: the AQM timer of hop `k`.
    pub(super) fn hop_aqm_timer(&mut self, k: usize, t: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        if !c.hop(k).bn.aqm_timer(t) {
            return;
        }
        self.events += 1;
        self.hop_arm_aqm(k);
    }

    /// Hand the recorder the current state of every queue of hops 1.. (before a sample, the
    /// warmup snapshot and the end).
    pub(super) fn chain_sample(&mut self, now: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let mut buf: Vec<QueueSample> = Vec::new();
        for h in &c.hops {
            buf.clear();
            h.bn.aqm.sample(now, &mut buf);
            for (j, q) in buf.drain(..).enumerate() {
                self.rec.extra_queues[h.extra_q + j] = q;
            }
        }
    }

    /// Unused transmit opportunities of hop `k` up to now (counted lazily by the models).
    fn hop_unused(&mut self, k: usize) -> u64 {
        let now = self.now;
        if k == 0 {
            return self.flush_unused();
        }
        let Some(c) = self.chain.as_mut() else {
            return 0;
        };
        c.hop(k).bn.flush_unused(now)
    }

    /// End of warmup: the hops' counters start here.
    pub(super) fn chain_warmup(&mut self) {
        let n = self.chain.as_ref().map_or(0, |c| c.lines.len());
        for k in 0..n {
            let u = self.hop_unused(k);
            if let Some(c) = self.chain.as_mut() {
                c.unused_at_warmup[k] = u;
            }
        }
    }

    /// summary.json's `hops` entries before the queue figures are in (None for one link):
    /// per hop its name, delay, capacity, utilisation, AQM and resolved buffer. Called before
    /// the recorder finishes; `add_hops_to_summary` adds each hop's queues.
    pub(super) fn chain_hop_docs(&mut self, s: &Scenario) -> Option<Vec<Value>> {
        self.chain.as_ref()?;
        let window_s = (s.duration - s.warmup).as_secs_f64();
        let buffers = crate::hops::buffers_json(&s.hops);
        let mut out = Vec::new();
        for (k, spec) in s.hops.iter().enumerate() {
            let unused = self.hop_unused(k);
            let c = self.chain.as_ref()?;
            let (link, bytes, aqm_kind) = if k == 0 {
                (
                    self.net.bn.link.as_ref(),
                    self.rec.link_bytes_after_warmup,
                    self.net.bn.aqm.kind(),
                )
            } else {
                let h = &c.hops[k - 1];
                (
                    h.bn.link.as_ref(),
                    h.link_bytes_after_warmup,
                    h.bn.aqm.kind(),
                )
            };
            let cap = link.capacity_bytes(s.warmup, s.duration);
            let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
            out.push(json!({
                "name": spec.name,
                "index": k,
                "delay_ms": spec.delay.as_ms_f64(),
                "capacity_mbps": num(cap * 8.0 / window_s / 1e6),
                "utilisation": num(bytes / cap),
                "unused_txops": unused - c.unused_at_warmup[k],
                "aqm": aqm_kind,
                "buffer": buffers[k],
            }));
        }
        Some(out)
    }
}

/// Add the `hops` block to a summary document: each hop's entry from `chain_hop_docs` with
/// the names of its queues and their summed packets, marks and drops (from `queues`).
pub(super) fn add_hops_to_summary(summary_json: &mut String, mut hops: Vec<Value>) {
    let Ok(mut v) = serde_json::from_str::<Value>(summary_json) else {
        return;
    };
    let queues = v["queues"].as_array().cloned().unwrap_or_default();
    for h in &mut hops {
        let mine: Vec<&Value> = queues.iter().filter(|q| q["hop"] == h["name"]).collect();
        let sum = |key: &str| mine.iter().filter_map(|q| q[key].as_u64()).sum::<u64>();
        h["queues"] = json!(mine.iter().map(|q| q["name"].clone()).collect::<Vec<_>>());
        h["packets"] = json!(sum("packets"));
        h["marks"] = json!(sum("marks"));
        h["drops"] = json!(sum("drops"));
    }
    v["hops"] = Value::Array(hops);
    if let Some(w) = v.get_mut("windows") {
        w["hops"] = json!("after_warmup");
    }
    if let Ok(s) = serde_json::to_string_pretty(&v) {
        *summary_json = s;
    }
}
