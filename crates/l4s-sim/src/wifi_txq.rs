//! The TXQ layer of a mac80211 access point, shared by the simulator's `World` and the
//! emulator's access point: Linux `net/mac80211/tx.c` (`ieee80211_txq_enqueue`,
//! `ieee80211_next_txq`, `ieee80211_tx_dequeue`, `ieee80211_return_txq`), with the driver's
//! scheduling loop of an AQL driver (mt76 / ath10k) or of ath9k (`ath9k/xmit.c`
//! `ath_txq_schedule`, `ath_tx_sched_aggr`).
//!
//! Each client station's TXQ (`l4s_core::wifi::Txqs`: fq_impl.h FQ + CoDel), the airtime DRR
//! (`l4s_core::wifi::AirtimeScheduler`) and AQL (`l4s_core::wifi::AqlLimits`) between the root
//! qdisc and the driver (`l4s_core::wifi::WifiMac`), their `txq/N` queue rows and the
//! per-station entries of the summary's `wifi.clients` block. The caller owns the clock and
//! says where each verdict goes (the simulator's recorder, or the emulator's packet slots).

use crate::recorder::Recorder;
use l4s_core::wifi::{AirtimeScheduler, AqlLimits, TxDriver, TxqParams, Txqs, WifiMac};
use l4s_core::{Nanos, Packet, Rng};
use serde_json::{json, Value};

/// The `txq/N` row names (at most 64 stations).
pub fn txq_name(i: usize) -> &'static str {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        (0..64)
            .map(|i| &*Box::leak(format!("txq/{i}").into_boxed_str()))
            .collect()
    })[i.min(63)]
}

/// The stations' TXQs of a mac80211 AP, the driver's scheduler and their recorder rows.
pub struct TxqLayer {
    /// Each station's TXQ.
    pub txqs: Txqs,
    /// The `txq/N` rows' indices among the recorder's queues.
    pub q: Vec<u8>,
    /// The airtime DRR.
    pub sched: AirtimeScheduler,
    aql: AqlLimits,
    /// The driver's shape below the TXQs.
    pub driver: TxDriver,
    /// Per station: airtime already registered with the scheduler, ns (down + up).
    registered: Vec<u64>,
    /// Per station: pending AQL airtime summed over samples after warmup, its max, count.
    aql_acc: Vec<(u64, u64, u64)>,
    drops: Vec<(usize, Packet)>,
    codel_drops: Vec<Packet>,
}

impl TxqLayer {
    /// `n` stations' TXQs with `p` (random streams from `rng`), pulled by `driver` (under
    /// `aql` for an AQL driver), scheduled with airtime fairness on or off.
    pub fn new(
        n: usize,
        p: &TxqParams,
        rng: Rng,
        (driver, aql): (TxDriver, AqlLimits),
        fairness: bool,
    ) -> Result<Self, l4s_core::ParamError> {
        Ok(TxqLayer {
            txqs: Txqs::new(n, p, rng)?,
            q: Vec::new(),
            sched: AirtimeScheduler::new(n, fairness),
            aql,
            driver,
            registered: vec![0; n],
            aql_acc: vec![(0, 0, 0); n],
            drops: Vec::new(),
            codel_drops: Vec::new(),
        })
    }

    /// Register the `txq/N` rows with the recorder.
    pub fn register(&mut self, rec: &mut Recorder) {
        self.q = (0..self.txqs.len())
            .map(|i| rec.add_extra_queue(txq_name(i)))
            .collect();
    }

    /// A packet the root qdisc released for station `sta` (`ieee80211_queue_skb` →
    /// `fq_tin_enqueue`); `on_drop(row, packet)` for each packet the TXQ's overflow drops.
    pub fn enqueue(
        &mut self,
        sta: usize,
        p: Packet,
        now: Nanos,
        mut on_drop: impl FnMut(u8, &Packet),
    ) {
        self.txqs.enqueue(sta, p, now, &mut self.drops);
        // `schedule_and_wake_txq`: the TXQ joins the active list.
        self.sched.return_txq(sta, true);
        for (owner, d) in self.drops.drain(..) {
            on_drop(self.q[owner], &d);
        }
    }

    /// The driver's scheduling loop, run when a frame enters a TXQ (`drv_wake_tx_queue`; an
    /// AQL driver's tx worker only while its hardware queue is empty, see the callers) and on
    /// TX status. Each frame goes to the MAC; `on(mac, row, packet, verdict)` sees CoDel's
    /// drops (2) before, each frame handed down (1 when CoDel marked it CE, else 0) after.
    pub fn pull(
        &mut self,
        mac: &mut WifiMac,
        now: Nanos,
        on: impl FnMut(&WifiMac, u8, &Packet, u8),
    ) {
        match self.driver {
            TxDriver::FirmwareRr => self.pull_aql(mac, now, on),
            TxDriver::Ath9k => self.ath_txq_schedule(mac, now, on),
        }
    }

    /// The scheduling loop of an AQL driver (mt76 / ath10k shape): a round of
    /// `ieee80211_txq_schedule_start` (skipped while the AC is over its AQL cap,
    /// `ieee80211_txq_schedule_airtime_check`), then for each station `ieee80211_next_txq`
    /// hands out, frames while `ieee80211_txq_airtime_check` allows (`ieee80211_tx_dequeue` →
    /// `fq_tin_dequeue` → `codel_dequeue`), then `ieee80211_return_txq`.
    fn pull_aql(
        &mut self,
        mac: &mut WifiMac,
        now: Nanos,
        mut on: impl FnMut(&WifiMac, u8, &Packet, u8),
    ) {
        if !self
            .aql
            .schedule_airtime_check(mac.pending_total().1, self.sched.active_len())
        {
            return;
        }
        self.sched.schedule_start();
        loop {
            let aql = self.aql;
            let next = self.sched.next_txq(|sta| {
                let pending = mac.pending_to(sta).1;
                (
                    aql.txq_airtime_check(pending, mac.pending_total().1),
                    pending,
                )
            });
            let Some(sta) = next else { return };
            while aql.txq_airtime_check(mac.pending_to(sta).1, mac.pending_total().1)
                && self.pull_one(mac, sta, now, &mut on)
            {}
            let left = self.txqs.backlog(sta).0 > 0;
            self.sched.return_txq(sta, left);
        }
    }

    /// ath9k `ath_txq_schedule`: a round of `ieee80211_txq_schedule_start`, then for each
    /// TXQ `ieee80211_next_txq` hands out, `ath_tx_sched_aggr`, then
    /// `ieee80211_return_txq(hw, queue, force)` with `force` = frames left in the driver
    /// (`tid->retry_q`). ath9k has no AQL (`ath9k_set_hw_capab` sets
    /// `NL80211_EXT_FEATURE_AIRTIME_FAIRNESS`, not `_AQL`), so `ieee80211_txq_airtime_check`
    /// is true and `aql_tx_pending` stays 0 (`ieee80211_tx_dequeue` charges it only with the
    /// AQL feature): `ieee80211_sta_deficit` is the deficit alone. CoDel's sojourn is
    /// measured when `ath_tx_sched_aggr` pulls (aggregate formation).
    fn ath_txq_schedule(
        &mut self,
        mac: &mut WifiMac,
        now: Nanos,
        mut on: impl FnMut(&WifiMac, u8, &Packet, u8),
    ) {
        self.sched.schedule_start();
        while let Some(sta) = self.sched.next_txq(|_| (true, 0)) {
            mac.ath_tx_sched_aggr(sta, now, |mac| self.pull_one(mac, sta, now, &mut on));
            let force = mac.driver_holds(sta);
            let left = self.txqs.backlog(sta).0 > 0;
            self.sched.return_txq(sta, left || force);
        }
    }

    /// `ieee80211_tx_dequeue` of one frame of `sta`'s TXQ into the driver; false when empty.
    fn pull_one(
        &mut self,
        mac: &mut WifiMac,
        sta: usize,
        now: Nanos,
        on: &mut impl FnMut(&WifiMac, u8, &Packet, u8),
    ) -> bool {
        let q = self.q[sta];
        let got = self.txqs.dequeue(sta, now, &mut self.codel_drops);
        for d in self.codel_drops.drain(..) {
            on(mac, q, &d, 2);
        }
        let Some((p, marked)) = got else {
            return false;
        };
        mac.push_down_to(sta, p, now);
        on(mac, q, &p, u8::from(marked));
        true
    }

    /// TX status / RX: `ieee80211_register_airtime` (AIRTIME_USE_TX | AIRTIME_USE_RX) of the
    /// airtime the MAC accounted to each station since the last call.
    pub fn register_airtime(&mut self, mac: &WifiMac) {
        for sta in 0..self.registered.len() {
            let (d, u) = mac.station_airtime_ns(sta);
            let total = d + u;
            if total > self.registered[sta] {
                self.sched
                    .register_airtime(sta, total - self.registered[sta]);
            }
            self.registered[sta] = total;
        }
    }

    /// End of warmup: the MAC's per-station airtime restarts at 0.
    pub fn warmup(&mut self) {
        self.registered.iter_mut().for_each(|r| *r = 0);
    }

    /// Update the `txq/N` rows before a sample at `t` (and the AQL backlog after warmup).
    pub fn sample(&mut self, rec: &mut Recorder, mac: &WifiMac, t: Nanos) {
        let base = rec.queue_names.len() - rec.extra_queues.len();
        for sta in 0..self.q.len() {
            let i = self.q[sta] as usize - base;
            rec.extra_queues[i] = self.txqs.sample(sta, txq_name(sta), t);
            if t >= rec.warmup {
                let a = mac.pending_to(sta).1;
                let acc = &mut self.aql_acc[sta];
                *acc = (acc.0 + a, acc.1.max(a), acc.2 + 1);
            }
        }
    }

    /// Station `sta`'s `txq` and `aql_pending_ms` entries of `wifi.clients`.
    fn client_entries(&self, sta: usize, c: &mut Value) {
        // CoDel counters cumulative over the run (the TXQ's sojourns after warmup are the
        // `txq/N` entry of `queues`).
        let cs = self.txqs.codel_stats(sta);
        let (overlimit, collisions) = self.txqs.overlimit_collisions(sta);
        let st = self.txqs.stats(sta);
        let (sum, max, n) = self.aql_acc[sta];
        c["txq"] = json!({
            "queue": txq_name(sta),
            "codel_drops": cs.drop_count,
            "codel_ecn_marks": cs.ecn_mark,
            "ce_threshold_marks": cs.ce_mark,
            "overlimit_drops": st.dropped_dequeue - cs.drop_count,
            "overlimit_rounds": overlimit,
            "collisions": collisions,
        });
        c["aql_pending_ms"] = json!({
            "mean": if n > 0 { json!(sum as f64 / n as f64 / 1e6) } else { Value::Null },
            "max": max as f64 / 1e6,
        });
    }
}

/// The summary's `wifi.clients` entries (and `airtime_fairness` with TXQs) added to `block`:
/// per station the flows whose `station_of` entry it is, airtime shares of the busy medium, and with
/// `ap = "mac80211"` its TXQ counters and AQL backlog.
pub fn add_clients(block: &mut Value, mac: &WifiMac, station_of: &[u8], txq: Option<&TxqLayer>) {
    let busy = mac.stats().busy_ns.max(1) as f64;
    let clients: Vec<Value> = (0..mac.clients())
        .map(|sta| {
            let (d, u) = mac.station_airtime_ns(sta);
            let flows: Vec<usize> = (0..station_of.len())
                .filter(|&f| station_of[f] as usize == sta)
                .collect();
            let mut c = json!({
                "station": sta,
                "flows": flows,
                "airtime_share": {"downlink": d as f64 / busy, "uplink": u as f64 / busy},
            });
            if let Some(t) = txq {
                t.client_entries(sta, &mut c);
            }
            c
        })
        .collect();
    block["clients"] = json!(clients);
    if let Some(t) = txq {
        block["airtime_fairness"] = json!(t.sched.fairness);
    }
}
