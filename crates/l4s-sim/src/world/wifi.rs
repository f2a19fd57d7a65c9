//! The Wi-Fi bottleneck in the simulator: the AQM feeds the MAC's driver queue whenever it has
//! room (the AQM's dequeue happens when the driver pulls, as with mac80211's AQL), TCP ACKs
//! contend on the same medium, and what the recipient's reorder buffer releases goes on the
//! flows' delay lines. The model is `l4s_core::wifi` (IEEE 802.11-2020 EDCA, A-MPDU, block ack).
//!
//! With `ap = "mac80211"` (the default) the AQM is the root qdisc of a Linux AP: each packet it
//! takes is dequeued at once (no backpressure) into the station's TXQ (`l4s_core::wifi::txq`,
//! mac80211's FQ-CoDel), and the driver pulls from the TXQ under AQL. With `"aqm_in_txq"` or
//! `"driver_fifo"` the AQM itself is pulled by the driver (one client station: the same
//! mechanics).

use super::World;
use crate::engine::Kind;
use crate::wifi_config::WifiRecord;
use l4s_core::wifi::{ApMode, Dir, TxqParams, Txqs, WifiMac, WifiParams};
use l4s_core::{Nanos, Packet, Rng};

/// The station's TXQ of a mac80211 AP and its recorder row.
pub(super) struct TxqLayer {
    pub(super) txqs: Txqs,
    /// The `txq/0` row's index among the recorder's queues.
    pub(super) q: u8,
    drops: Vec<(usize, Packet)>,
    codel_drops: Vec<Packet>,
}

/// The MAC and the engine's bookkeeping around it.
pub(super) struct WifiHop {
    pub(super) mac: WifiMac,
    /// TCP ACKs cross the medium (else they take the usual ACK path).
    pub(super) uplink: bool,
    armed: Option<Nanos>,
    /// The driver queue's rows and the summary's `wifi` block.
    pub(super) record: WifiRecord,
    /// The AP's queueing design.
    pub(super) ap: ApMode,
    /// `ap = "mac80211"`: the station's TXQ between the root qdisc and the driver.
    pub(super) txq: Option<TxqLayer>,
}

impl WifiHop {
    pub(super) fn new(
        p: WifiParams,
        uplink: bool,
        rng: Rng,
        ap: ApMode,
        (txq, txq_rng): (TxqParams, Rng),
    ) -> Result<Self, crate::SimError> {
        let field = |e: l4s_core::ParamError| {
            crate::SimError::field(format!("link.wifi.{}", e.param), e.to_string())
        };
        let mac = WifiMac::new(p, rng).map_err(field)?;
        let txq = match ap {
            ApMode::Mac80211 => Some(TxqLayer {
                txqs: Txqs::new(1, &txq, txq_rng).map_err(field)?,
                q: 0,
                drops: Vec::new(),
                codel_drops: Vec::new(),
            }),
            _ => None,
        };
        Ok(WifiHop {
            mac,
            uplink,
            armed: None,
            record: WifiRecord::default(),
            ap,
            txq,
        })
    }
}

impl World {
    /// Register the driver queue with the recorder (after both exist).
    pub(super) fn wifi_init(&mut self) {
        if let Some(h) = &mut self.net.wifi {
            if let Some(t) = &mut h.txq {
                t.q = self.rec.add_extra_queue("txq/0");
            }
            h.record.register(&mut self.rec, &h.mac);
        }
    }

    /// Move packets from the AQM to the driver queue while it has room (through the TXQ with
    /// `ap = "mac80211"`).
    pub(super) fn wifi_pull(&mut self, now: Nanos) {
        if self.net.wifi.as_ref().is_some_and(|h| h.txq.is_some()) {
            self.txq_fill(now);
            self.txq_pull(now);
            self.arm_wifi();
            self.arm_aqm();
            return;
        }
        while self.net.wifi.as_ref().is_some_and(|h| h.mac.has_room())
            && !self.net.bn.aqm.is_empty()
        {
            let Some(p) = self.aqm_dequeue(now) else {
                break;
            };
            let Some(h) = self.net.wifi.as_mut() else {
                break;
            };
            h.mac.push_down(p, now);
            h.record.note_pending(&h.mac, now);
        }
        self.arm_wifi();
        self.arm_aqm();
    }

    /// The root qdisc is dequeued as soon as it holds a packet (`IFF_NO_QUEUE`: mac80211 never
    /// stops the netdev queue): each packet goes into the station's TXQ (`fq_tin_enqueue`;
    /// its overflow drops are the TXQ's).
    fn txq_fill(&mut self, now: Nanos) {
        while !self.net.bn.aqm.is_empty() {
            let Some(p) = self.aqm_dequeue(now) else {
                break;
            };
            let Some(t) = self.net.wifi.as_mut().and_then(|h| h.txq.as_mut()) else {
                break;
            };
            t.txqs.enqueue(0, p, now, &mut t.drops);
            let q = t.q;
            for (_, d) in t.drops.drain(..) {
                self.net.totals.aqm_dropped_pkts += 1;
                super::note_verdict(
                    &mut self.rec,
                    &mut self.capture,
                    now,
                    &d,
                    q,
                    now - d.enqueued_at,
                    2,
                );
            }
        }
    }

    /// The driver pulls from the TXQ while AQL lets it (`ieee80211_tx_dequeue` →
    /// `fq_tin_dequeue` → `codel_dequeue`): CoDel's drops and marks are the TXQ's verdicts.
    fn txq_pull(&mut self, now: Nanos) {
        loop {
            let Some(h) = self.net.wifi.as_mut() else {
                return;
            };
            if !h.mac.has_room() {
                return;
            }
            let Some(t) = h.txq.as_mut() else { return };
            let got = t.txqs.dequeue(0, now, &mut t.codel_drops);
            let q = t.q;
            for d in t.codel_drops.drain(..) {
                self.net.totals.aqm_dropped_pkts += 1;
                super::note_verdict(
                    &mut self.rec,
                    &mut self.capture,
                    now,
                    &d,
                    q,
                    now - d.enqueued_at,
                    2,
                );
            }
            let Some((p, marked)) = got else { return };
            super::note_verdict(
                &mut self.rec,
                &mut self.capture,
                now,
                &p,
                q,
                now - p.enqueued_at,
                u8::from(marked),
            );
            if let Some(h) = self.net.wifi.as_mut() {
                h.mac.push_down(p, now);
                h.record.note_pending(&h.mac, now);
            }
        }
    }

    /// A TCP ACK from a receiver enters the client station's uplink queue; false when ACKs do
    /// not cross the medium.
    pub(super) fn wifi_up(&mut self, p: Packet) -> bool {
        let now = self.now;
        let Some(h) = self.net.wifi.as_mut().filter(|h| h.uplink) else {
            return false;
        };
        if !h.mac.push_up(p, now) {
            self.net.totals.acks_dropped += 1;
        }
        self.arm_wifi();
        true
    }

    fn arm_wifi(&mut self) {
        let now = self.now;
        let Some(h) = self.net.wifi.as_mut() else {
            return;
        };
        if let Some(t) = h.mac.poll_timeout() {
            let t = t.max(now);
            if h.armed != Some(t) {
                h.armed = Some(t);
                self.ev.push(t, Kind::Wifi, 0);
            }
        }
    }

    /// The MAC's timer: run the medium, hand over what it delivered, refill the driver queue.
    pub(super) fn wifi_timer(&mut self, t: Nanos) {
        let Some(h) = self.net.wifi.as_mut() else {
            return;
        };
        if h.armed != Some(t) {
            return;
        }
        self.events += 1;
        h.armed = None;
        h.mac.handle_timeout(t);
        let after_warmup = t >= self.rec.warmup;
        for (flow, wait) in h.mac.drain_first_tx() {
            self.rec.on_packet(t, flow, h.record.driver_q, wait, 0);
        }
        while let Some((dir, p)) = self.net.wifi.as_mut().and_then(|h| h.mac.poll_dropped()) {
            match dir {
                Dir::Down => {
                    self.net.totals.link_lost_pkts += 1;
                    self.rec.counters[p.flow as usize].link_losses += 1;
                }
                Dir::Up => self.net.totals.acks_dropped += 1,
            }
        }
        while let Some((dir, p)) = self.net.wifi.as_mut().and_then(|h| h.mac.poll_delivered()) {
            if after_warmup {
                if let Some(h) = self.net.wifi.as_mut() {
                    h.record.on_mac_delivered(dir, (t - p.enqueued_at).0);
                }
            }
            match dir {
                Dir::Down => self.propagate(p, t, t),
                Dir::Up => self.onto_rev_line(p, t),
            }
        }
        self.wifi_pull(t);
        self.arm_wifi();
    }

    /// Update the driver queue's row before a sample.
    pub(super) fn wifi_sample(&mut self, t: Nanos) {
        if let Some(h) = &mut self.net.wifi {
            h.record.sample(&mut self.rec, &h.mac, t);
            if let Some(x) = &h.txq {
                let i = x.q as usize - (self.rec.queue_names.len() - self.rec.extra_queues.len());
                self.rec.extra_queues[i] = x.txqs.sample(0, "txq/0", t);
            }
        }
    }

    /// End of warmup: the `wifi` block counts from here.
    pub(super) fn wifi_warmup(&mut self) {
        if let Some(h) = &mut self.net.wifi {
            h.mac.reset_stats();
        }
    }

    /// Packets the MAC holds (driver queue, in the air, awaiting retry, behind a hole).
    pub(super) fn wifi_in_flight(&self) -> (u64, u64) {
        self.net.wifi.as_ref().map_or((0, 0), |h| {
            let (_, (pending, _)) = h.mac.driver_backlog(self.now);
            let held = h.mac.reorder_held();
            let txq = h.txq.as_ref().map_or(0, |t| t.txqs.total_pkts());
            (pending + held.0 + txq, h.mac.queued_up() + held.1)
        })
    }

    /// The summary's `wifi` block (None without a Wi-Fi link).
    pub(super) fn wifi_summary(&self, window_s: f64) -> Option<serde_json::Value> {
        let h = self.net.wifi.as_ref()?;
        let mut v = h.record.summary(&h.mac, window_s);
        v["ap"] = serde_json::json!(h.ap.name());
        if let Some(t) = &h.txq {
            // Cumulative over the run (the TXQ's sojourns after warmup are in `queues`).
            let c = t.txqs.codel_stats(0);
            let (overlimit, collisions) = t.txqs.overlimit_collisions(0);
            let st = t.txqs.stats(0);
            v["txq"] = serde_json::json!([{
                "station": 0,
                "queue": "txq/0",
                "codel_drops": c.drop_count,
                "codel_ecn_marks": c.ecn_mark,
                "ce_threshold_marks": c.ce_mark,
                "overlimit_drops": st.dropped_dequeue - c.drop_count,
                "overlimit_rounds": overlimit,
                "collisions": collisions,
            }]);
        }
        Some(v)
    }
}
