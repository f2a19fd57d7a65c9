//! The hops after the first of a `[[links]]` chain (`hops`): each an AQM and a link model of
//! its own, joined by one-way propagation lines; hop 0 is the world's `Net`. A packet leaves a
//! hop as it does the one-link bottleneck (loss and jitter after the link), then propagates
//! for that hop's `delay` to the next hop its flow crosses, or, after its flow's last hop,
//! to the flow's own forward delay line (see `hops` for how the base RTT is split).

use super::{build_jitter, build_link, build_loss, note_verdict, World};
use crate::aqm_config::AqmConfig;
use crate::engine::{DelayLine, Kind};
use crate::error::SimError;
use crate::scenario::Scenario;
use l4s_core::aqm::{Aqm, QueueSample};
use l4s_core::link::{Jitter, LinkModel, LossModel};
use l4s_core::{Ecn, Nanos, Packet, Rng};
use serde_json::{json, Value};

/// One hop after the first: the `Net` fields of the one-link bottleneck that a chain repeats.
pub(super) struct Hop {
    aqm: Box<dyn Aqm>,
    aqm_cfg: AqmConfig,
    aqm_armed: Option<Nanos>,
    link: Box<dyn LinkModel>,
    busy: bool,
    service_pending: bool,
    /// Packets on a link that ended before they did (never delivered).
    stuck_pkts: u64,
    loss: Option<Box<dyn LossModel>>,
    jitter: Option<Jitter>,
    dropped: Vec<Packet>,
    /// Bytes whose last bit left this hop in (warmup, duration].
    link_bytes_after_warmup: u64,
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
            let at = |what: &str| format!("links[{k}]/{what}");
            let aqm = h.aqm.build(Rng::derive(s.seed, &at("aqm")))?;
            let named = |e| crate::hops::reprefix(e, "link", &format!("links[{k}]"));
            let link = build_link(&h.link, s.base_dir.as_deref()).map_err(named)?;
            let loss = build_loss(&h.link, Rng::derive(s.seed, &at("loss"))).map_err(named)?;
            let jitter = build_jitter(&h.link, Rng::derive(s.seed, &at("jitter")));
            let mut q0 = Vec::new();
            aqm.sample(Nanos::ZERO, &mut q0);
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
                aqm,
                aqm_cfg: h.aqm.clone(),
                aqm_armed: None,
                link,
                busy: false,
                service_pending: false,
                stuck_pkts: 0,
                loss,
                jitter,
                dropped: Vec::with_capacity(16),
                link_bytes_after_warmup: 0,
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
    pub(super) fn in_flight(&self) -> u64 {
        self.hops
            .iter()
            .map(|h| h.aqm.backlog_pkts() + h.stuck_pkts)
            .sum::<u64>()
            + self.lines.iter().map(|l| l.len() as u64).sum::<u64>()
    }
}

impl World {
    /// A packet of flow `p.flow` enters hop `k` ≥ 1 (sent there, or arriving from hop k − 1).
    pub(super) fn hop_enqueue(&mut self, k: usize, p: Packet) {
        let now = self.now;
        let l4s = self.flows[p.flow as usize].l4s;
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let h = c.hop(k);
        let (ecn, q_base) = (p.ecn, h.q_base);
        if let Err(d) = h.aqm.enqueue(p, now) {
            self.net.totals.aqm_dropped_pkts += 1;
            let q = q_base + h.aqm_cfg.queue_of(ecn, l4s);
            note_verdict(&mut self.rec, &mut self.capture, now, &d, q, Nanos::ZERO, 2);
        } else if !h.busy && !h.service_pending {
            self.hop_start_service(k, now);
        }
        self.hop_arm_aqm(k);
    }

    /// The idle link of hop `k` has a packet waiting: serve it now or when its model can.
    fn hop_start_service(&mut self, k: usize, now: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let h = c.hop(k);
        let s = h.link.next_service(now);
        if s == now {
            self.hop_service(k, now);
        } else if s != Nanos::MAX {
            h.service_pending = true;
            self.ev.push(s, Kind::HopService, k as u32);
        }
    }

    /// `Kind::HopService`: the link of hop `k` can take its next packet.
    pub(super) fn hop_service_event(&mut self, k: usize, now: Nanos) {
        self.events += 1;
        if let Some(c) = self.chain.as_mut() {
            c.hop(k).service_pending = false;
        }
        self.hop_service(k, now);
    }

    /// The link of hop `k` takes the next packet from its AQM at `now` (the one-link
    /// `aqm_dequeue` + `link_service` for this hop).
    fn hop_service(&mut self, k: usize, now: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let h = c.hop(k);
        h.dropped.clear();
        let p = h.aqm.dequeue(now, &mut h.dropped);
        for d in h.dropped.drain(..) {
            self.net.totals.aqm_dropped_pkts += 1;
            let q = h.q_base + h.aqm_cfg.queue_of(d.ecn, self.flows[d.flow as usize].l4s);
            note_verdict(
                &mut self.rec,
                &mut self.capture,
                now,
                &d,
                q,
                d.sojourn(now),
                2,
            );
        }
        if let Some(p) = p {
            let q = h.q_base + h.aqm_cfg.queue_of(p.ecn, self.flows[p.flow as usize].l4s);
            let verdict = (p.ecn == Ecn::Ce) as u8;
            note_verdict(
                &mut self.rec,
                &mut self.capture,
                now,
                &p,
                q,
                p.sojourn(now),
                verdict,
            );
            let fin = h.link.transmit(now, p.bytes);
            h.busy = true;
            if fin == Nanos::MAX {
                h.stuck_pkts += 1;
            } else {
                self.ev.push(fin, Kind::HopDone, k as u32);
                if fin > self.rec.warmup && fin <= self.end {
                    h.link_bytes_after_warmup += p.bytes as u64;
                }
                if h.loss.as_mut().is_some_and(|l| l.is_lost()) {
                    self.net.totals.link_lost_pkts += 1;
                    self.rec.counters[p.flow as usize].link_losses += 1;
                } else {
                    self.hop_propagate(k, p, fin);
                }
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
        let h = c.hop(k);
        h.busy = false;
        if !h.aqm.is_empty() {
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
        let (line_len, last) = (c.lines.len(), self.flows[f].path.1 as usize);
        let jitter = if k == 0 {
            self.net.jitter.as_mut()
        } else {
            c.hops[k - 1].jitter.as_mut()
        };
        if k < last && k + 1 < line_len {
            let line = &mut c.lines[k];
            let mut at = fin + c.delays[k];
            if let Some(j) = jitter {
                at = j.arrival(at, line.back_time());
            }
            if let Some(h) = line.push(&mut self.slab, at, p) {
                self.ev.push(h, Kind::HopArrive, k as u32);
            }
        } else {
            let fl = &mut self.flows[f];
            let mut at = fin + fl.fwd_delay;
            if let Some(j) = jitter {
                at = j.arrival(at, fl.fwd.back_time());
            }
            if let Some(h) = fl.fwd.push(&mut self.slab, at, p) {
                self.ev.push(h, Kind::FwdArrive, f as u32);
            }
        }
    }

    /// `Kind::HopArrive`: the packets due on the line after hop `k` reach hop k + 1.
    pub(super) fn hop_arrive(&mut self, k: usize, t: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        if c.lines[k].armed != Some(t) {
            return;
        }
        self.events += 1;
        c.lines[k].armed = None;
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
        if let Some(h) = c.lines[k].head_time() {
            c.lines[k].armed = Some(h);
            self.ev.push(h, Kind::HopArrive, k as u32);
        }
    }

    fn hop_arm_aqm(&mut self, k: usize) {
        let now = self.now;
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let h = c.hop(k);
        if let Some(w) = h.aqm.next_wakeup() {
            let w = w.max(now);
            if h.aqm_armed.is_none_or(|a| w < a) {
                h.aqm_armed = Some(w);
                self.ev.push(w, Kind::HopAqmTimer, k as u32);
            }
        }
    }

    /// `Kind::HopAqmTimer`: the AQM timer of hop `k`.
    pub(super) fn hop_aqm_timer(&mut self, k: usize, t: Nanos) {
        let Some(c) = self.chain.as_mut() else {
            return;
        };
        let h = c.hop(k);
        if h.aqm_armed != Some(t) {
            return;
        }
        self.events += 1;
        h.aqm_armed = None;
        h.aqm.on_timer(t);
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
            h.aqm.sample(now, &mut buf);
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
        let h = c.hop(k);
        if !h.busy && !h.service_pending && h.aqm.is_empty() {
            let _ = h.link.next_service(now);
        }
        h.link.unused_txops()
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
                    self.net.link.as_ref(),
                    self.rec.link_bytes_after_warmup,
                    self.net.aqm.kind(),
                )
            } else {
                let h = &c.hops[k - 1];
                (h.link.as_ref(), h.link_bytes_after_warmup, h.aqm.kind())
            };
            let cap = link.capacity_bytes(s.warmup, s.duration);
            let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
            out.push(json!({
                "name": spec.name,
                "index": k,
                "delay_ms": spec.delay.as_ms_f64(),
                "capacity_mbps": num(cap * 8.0 / window_s / 1e6),
                "utilisation": num(bytes as f64 / cap),
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
