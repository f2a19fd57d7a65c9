//! The Wi-Fi bottleneck in the simulator: the AQM feeds the MAC's driver queue whenever it has
//! room (the AQM's dequeue happens when the driver pulls, as with mac80211's AQL), TCP ACKs
//! contend on the same medium, and what the recipient's reorder buffer releases goes on the
//! flows' delay lines. The model is `l4s_core::wifi` (IEEE 802.11-2020 EDCA, A-MPDU, block ack).
//!
//! With `ap = "mac80211"` (the default) the AQM is the root qdisc of a Linux AP: each packet it
//! takes is dequeued at once (no backpressure) into the station's TXQ (`l4s_core::wifi::txq`,
//! mac80211's FQ-CoDel), and the driver pulls from the TXQ under AQL. With `"aqm_in_txq"` or
//! `"driver_fifo"` the AQM itself is pulled by the driver (one client station: the same
//! mechanics); with several stations `"aqm_in_txq"` gives each station its own instance of
//! the AQM, pulled under that station's AQL room. For a pulled AQM, `super::pull_wait` splits
//! each packet's sojourn into waiting for driver room and waiting behind the queue ahead.
//!
//! Several client stations (`[[link.wifi.clients]]`, `[[flows]] station = N`): mac80211 keeps
//! one TXQ per station (`txq/N` rows) and the driver's scheduling loop asks the airtime DRR
//! for the next station (`ieee80211_txq_schedule_start`, `ieee80211_next_txq`), takes frames
//! from it while `ieee80211_txq_airtime_check` allows, and returns it
//! (`ieee80211_return_txq`); TX and RX airtime are registered per station at TX status.
//! `driver_fifo` keeps one AQM and one driver FIFO for all stations.

use super::pull_wait::PullWait;
use super::World;
use crate::engine::Kind;
use crate::wifi_config::WifiRecord;
use crate::wifi_txq::TxqLayer;
use l4s_core::aqm::QueueSample;
use l4s_core::wifi::WifiParams;
use l4s_core::wifi::{ApMode, AqlLimits, Dir, TxDriver, TxqParams, WifiMac};
use l4s_core::{Nanos, Packet, Rng};

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
    /// `ap = "mac80211"`: the stations' TXQs between the root qdisc and the driver.
    pub(super) txq: Option<TxqLayer>,
    /// The client station of each flow instance.
    pub(super) station_of: Vec<u8>,
    /// The AQM's sojourn split for a pull-path AQM (None with `ap = "mac80211"`).
    pull_wait: Option<PullWait>,
    /// `ap = "aqm_in_txq"` with several client stations: the scenario's AQM of stations
    /// 1.. (station 0's is the bottleneck's), each with its own queue rows.
    sta_aqm: Vec<StaAqm>,
    /// The AQL limits each station's TXQ is pulled under (`aqm_in_txq`, several stations).
    aql: AqlLimits,
}

/// One client station's own AQM (`aqm_in_txq`, stations 1..) and its queue rows.
pub(super) struct StaAqm {
    bn: crate::bottleneck::Bottleneck,
    /// The recorder's index of its first queue.
    q_base: u8,
    /// Index of its first queue among the recorder's extra queues.
    extra_q: usize,
}

/// The row name of AQM queue `name` of client station `sta` ≥ 1 ("L/1", "C/1", "single/1"),
/// made once per name for the process.
fn sta_queue_name(name: &str, sta: usize) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let key = format!("{name}/{sta}");
    let mut m = NAMES
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    m.entry(key.clone())
        .or_insert_with(|| Box::leak(key.into_boxed_str()))
}

impl WifiHop {
    pub(super) fn new(
        p: WifiParams,
        uplink: bool,
        rng: Rng,
        ap: ApMode,
        (txq, txq_rng): (TxqParams, Rng),
        (aql, fairness): (AqlLimits, bool),
    ) -> Result<Self, crate::SimError> {
        let field = |e: l4s_core::ParamError| crate::SimError::param("link.wifi.", e);
        let mac = WifiMac::new(p, rng).map_err(field)?;
        let n = mac.clients();
        let ath9k = mac.params().driver == TxDriver::Ath9k;
        let txq = match ap {
            ApMode::Mac80211 => {
                let driver = (mac.params().driver, aql);
                Some(TxqLayer::new(n, &txq, txq_rng, driver, fairness).map_err(field)?)
            }
            _ => None,
        };
        Ok(WifiHop {
            mac,
            uplink,
            armed: None,
            record: WifiRecord::default(),
            ap,
            // ath9k pulls an aggregate at a time, not while the driver has room.
            pull_wait: (txq.is_none() && !ath9k).then(PullWait::default),
            sta_aqm: Vec::new(),
            aql,
            txq,
            station_of: Vec::new(),
        })
    }
}

impl WifiHop {
    /// `ap = "aqm_in_txq"` with several stations: the scenario's AQM for stations 1.., each
    /// drawing from its own stream ("link/wifi/txq{N}/aqm").
    pub(super) fn add_station_aqms(
        &mut self,
        s: &crate::scenario::Scenario,
    ) -> Result<(), crate::SimError> {
        if self.ap != ApMode::AqmInTxq {
            return Ok(());
        }
        for sta in 1..self.mac.clients() {
            let bn = crate::bottleneck::Bottleneck::new(
                &s.link,
                &s.aqm,
                s.base_dir.as_deref(),
                s.seed,
                &format!("link/wifi/txq{sta}/"),
            )?;
            self.sta_aqm.push(StaAqm {
                bn,
                q_base: 0,
                extra_q: 0,
            });
        }
        Ok(())
    }

    /// The client station flow `flow`'s packets go to (or come from).
    #[inline]
    fn station(&self, flow: u32) -> usize {
        self.station_of
            .get(flow as usize)
            .map_or(0, |&s| s as usize)
    }
}

impl World {
    /// Register the driver queue with the recorder (after both exist).
    pub(super) fn wifi_init(&mut self, s: &crate::scenario::Scenario) {
        if let Some(h) = &mut self.net.wifi {
            // Flow instances in order (`count` of each entry), then workloads at station 0.
            h.station_of = s
                .flows
                .iter()
                .flat_map(|f| std::iter::repeat_n(f.station.unwrap_or(0) as u8, f.count as usize))
                .collect();
            h.station_of.resize(self.flows.len(), 0);
            if let Some(t) = &mut h.txq {
                t.register(&mut self.rec);
            }
            for (k, a) in h.sta_aqm.iter_mut().enumerate() {
                let mut q0 = Vec::new();
                a.bn.aqm.sample(Nanos::ZERO, &mut q0);
                a.extra_q = self.rec.extra_queues.len();
                a.q_base = self.rec.queue_names.len() as u8;
                for q in q0 {
                    self.rec.add_extra_queue(sta_queue_name(q.name, k + 1));
                }
            }
            h.record.register(&mut self.rec, &h.mac);
        }
    }

    /// `ap = "aqm_in_txq"` with several stations: a packet for station ≥ 1 enters that
    /// station's AQM (and the driver pulls); the others are handed back for the bottleneck's.
    pub(super) fn wifi_sta_enqueue(&mut self, p: Packet) -> Option<Packet> {
        let Some(h) = self.net.wifi.as_mut() else {
            return Some(p);
        };
        let sta = h.station(p.flow);
        if sta == 0 || h.sta_aqm.is_empty() {
            return Some(p);
        }
        let now = self.now;
        let queued = match self.sta_aqm_and_verdicts(sta) {
            Some((a, mut v)) => a.bn.enqueue(p, now, &mut v),
            None => false,
        };
        if queued {
            self.wifi_pull(now);
        }
        self.wifi_arm_sta_aqm(sta);
        None
    }

    /// Station `sta`'s AQM (≥ 1) and where its verdicts go (its own rows).
    fn sta_aqm_and_verdicts(
        &mut self,
        sta: usize,
    ) -> Option<(&mut StaAqm, super::SimVerdicts<'_>)> {
        let super::World {
            net,
            rec,
            capture,
            hot,
            ..
        } = self;
        let a = net.wifi.as_mut()?.sta_aqm.get_mut(sta.wrapping_sub(1))?;
        let v = super::SimVerdicts {
            rec,
            capture,
            hot,
            totals: &mut net.totals,
            q_base: a.q_base,
        };
        Some((a, v))
    }

    /// Station `sta`'s AQM (≥ 1) dequeues at `now`: the packet and its first row's index.
    fn sta_aqm_dequeue(&mut self, sta: usize, now: Nanos) -> Option<(Packet, u8)> {
        let (a, mut v) = self.sta_aqm_and_verdicts(sta)?;
        let p = a.bn.dequeue(now, &mut v)?;
        Some((p, a.q_base))
    }

    /// Station `sta`'s own AQM (≥ 1; None for station 0, whose AQM is the bottleneck's).
    fn sta_aqm(&mut self, sta: usize) -> Option<&mut StaAqm> {
        self.net
            .wifi
            .as_mut()
            .and_then(|h| h.sta_aqm.get_mut(sta.wrapping_sub(1)))
    }

    fn wifi_arm_sta_aqm(&mut self, sta: usize) {
        let now = self.now;
        let Some(a) = self.sta_aqm(sta) else {
            return;
        };
        if let Some(w) = a.bn.arm_aqm(now) {
            self.ev.push(w, Kind::WifiAqmTimer, sta as u32);
        }
    }

    /// `Kind::WifiAqmTimer`: the AQM timer of station `sta` (≥ 1).
    pub(super) fn wifi_aqm_timer(&mut self, sta: usize, t: Nanos) {
        let Some(a) = self.sta_aqm(sta) else {
            return;
        };
        if !a.bn.aqm_timer(t) {
            return;
        }
        self.events += 1;
        self.wifi_arm_sta_aqm(sta);
    }

    /// `ap = "aqm_in_txq"` with several stations: each station's AQM is pulled while its
    /// share of the driver passes `ieee80211_txq_airtime_check` (stations in index order;
    /// the airtime DRR is not run: under AQL it does not hold a station back, see
    /// `airtime.rs`).
    fn sta_pull(&mut self, now: Nanos) {
        let Some(n) = self.net.wifi.as_ref().map(|h| h.mac.clients()) else {
            return;
        };
        let after_warmup = now >= self.rec.warmup;
        for sta in 0..n {
            loop {
                let Some(h) = self.net.wifi.as_mut() else {
                    return;
                };
                let empty = match sta {
                    0 => self.net.bn.aqm.is_empty(),
                    k => h.sta_aqm[k - 1].bn.aqm.is_empty(),
                };
                if empty
                    || !h
                        .aql
                        .txq_airtime_check(h.mac.pending_to(sta).1, h.mac.pending_total().1)
                {
                    break;
                }
                if let Some(w) = h.pull_wait.as_mut() {
                    w.open_sta(sta, now);
                }
                let got = match sta {
                    0 => self.aqm_dequeue(now).map(|p| (p, 0)),
                    k => self.sta_aqm_dequeue(k, now),
                };
                let Some((p, q_base)) = got else {
                    break;
                };
                let q = q_base as usize
                    + self
                        .net
                        .bn
                        .aqm_cfg
                        .queue_of(p.ecn, self.hot[p.flow as usize].fwd.l4s)
                        as usize;
                let Some(h) = self.net.wifi.as_mut() else {
                    return;
                };
                if let Some(w) = h.pull_wait.as_mut().filter(|_| after_warmup) {
                    let wait = w.driver_wait_sta(sta, p.enqueued_at, now);
                    w.record(q, now - p.enqueued_at, wait);
                }
                h.mac.push_down_to(sta, p, now);
                h.record.note_pending(&h.mac, now);
            }
            self.wifi_arm_sta_aqm(sta);
        }
    }

    /// Move packets from the AQM to the driver queue while it has room (through the TXQ with
    /// `ap = "mac80211"`).
    pub(super) fn wifi_pull(&mut self, now: Nanos) {
        if self.net.wifi.as_ref().is_some_and(|h| h.txq.is_some()) {
            self.txq_fill(now);
            // Otherwise the loop runs on TX status (`wifi_timer`).
            if self
                .net
                .wifi
                .as_ref()
                .is_some_and(|h| h.mac.schedules_on_enqueue())
            {
                self.txq_pull(now);
            }
            self.arm_wifi();
            self.arm_aqm();
            return;
        }
        if self
            .net
            .wifi
            .as_ref()
            .is_some_and(|h| !h.sta_aqm.is_empty())
        {
            self.sta_pull(now);
            self.arm_wifi();
            self.arm_aqm();
            return;
        }
        if self
            .net
            .wifi
            .as_ref()
            .is_some_and(|h| h.mac.params().driver == TxDriver::Ath9k)
        {
            self.ath9k_aqm_pull(now);
            self.arm_wifi();
            self.arm_aqm();
            return;
        }
        if !self.net.bn.aqm.is_empty() {
            if let Some(w) = self
                .net
                .wifi
                .as_mut()
                .filter(|h| h.mac.has_room())
                .and_then(|h| h.pull_wait.as_mut())
            {
                w.open(now);
            }
        }
        let after_warmup = now >= self.rec.warmup;
        while self.net.wifi.as_ref().is_some_and(|h| h.mac.has_room())
            && !self.net.bn.aqm.is_empty()
        {
            let Some(p) = self.aqm_dequeue(now) else {
                break;
            };
            let q = self
                .net
                .bn
                .aqm_cfg
                .queue_of(p.ecn, self.hot[p.flow as usize].fwd.l4s) as usize;
            let Some(h) = self.net.wifi.as_mut() else {
                break;
            };
            if let Some(w) = h.pull_wait.as_mut().filter(|_| after_warmup) {
                let wait = w.driver_wait(p.enqueued_at, now);
                w.record(q, now - p.enqueued_at, wait);
            }
            let sta = h.station(p.flow);
            h.mac.push_down_to(sta, p, now);
            h.record.note_pending(&h.mac, now);
        }
        self.arm_wifi();
        self.arm_aqm();
    }

    /// `ap = "aqm_in_txq"` with ath9k (one client station): `ath_txq_schedule` with the
    /// scenario's AQM as the one TXQ, run on each wake and TX status: one
    /// `ath_tx_sched_aggr` (the DRR over a single TXQ hands it out once per round).
    fn ath9k_aqm_pull(&mut self, now: Nanos) {
        // The hop steps aside while the bottleneck's AQM is dequeued (its verdicts go to the
        // recorder, not to the hop).
        let Some(mut h) = self.net.wifi.take() else {
            return;
        };
        let (bn, mut v) = self.bottleneck();
        h.mac
            .ath_tx_sched_aggr_from(0, now, || bn.dequeue(now, &mut v));
        h.record.note_pending(&h.mac, now);
        self.net.wifi = Some(h);
    }

    /// The root qdisc is dequeued as soon as it holds a packet (`IFF_NO_QUEUE`: mac80211 never
    /// stops the netdev queue): each packet goes into the station's TXQ (`fq_tin_enqueue`;
    /// its overflow drops are the TXQ's).
    fn txq_fill(&mut self, now: Nanos) {
        while !self.net.bn.aqm.is_empty() {
            let Some(p) = self.aqm_dequeue(now) else {
                break;
            };
            let World {
                net, rec, capture, ..
            } = self;
            let Some(h) = net.wifi.as_mut() else {
                break;
            };
            let sta = h.station(p.flow);
            let Some(t) = h.txq.as_mut() else { break };
            let totals = &mut net.totals;
            t.enqueue(sta, p, now, |q, d| {
                totals.aqm_dropped_pkts += 1;
                super::note_verdict(rec, capture, now, d, q, now - d.enqueued_at, 2);
            });
        }
    }

    /// The driver's scheduling loop (`TxqLayer::pull`): CoDel's drops and marks are the
    /// TXQ's verdicts.
    fn txq_pull(&mut self, now: Nanos) {
        let World {
            net, rec, capture, ..
        } = self;
        let Some(h) = net.wifi.as_mut() else {
            return;
        };
        let Some(t) = h.txq.as_mut() else { return };
        let (record, totals) = (&mut h.record, &mut net.totals);
        t.pull(&mut h.mac, now, |mac, q, p, v| {
            if v == 2 {
                totals.aqm_dropped_pkts += 1;
            }
            super::note_verdict(rec, capture, now, p, q, now - p.enqueued_at, v);
            if v != 2 {
                record.note_pending(mac, now);
            }
        });
    }

    /// A TCP ACK from a receiver enters the client station's uplink queue; false when ACKs do
    /// not cross the medium.
    pub(super) fn wifi_up(&mut self, p: Packet) -> bool {
        let now = self.now;
        let Some(h) = self.net.wifi.as_mut().filter(|h| h.uplink) else {
            return false;
        };
        let sta = h.station(p.flow);
        if !h.mac.push_up_from(sta, p, now) {
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
        if let Some(x) = &mut h.txq {
            x.register_airtime(&h.mac);
        }
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
        if self.net.wifi.as_ref().is_some_and(|h| h.txq.is_some()) {
            // TX status: the driver's tx worker schedules the TXQs again.
            self.txq_pull(t);
        }
        self.wifi_pull(t);
        self.arm_wifi();
    }

    /// Update the driver queue's row before a sample.
    pub(super) fn wifi_sample(&mut self, t: Nanos) {
        if let Some(h) = &mut self.net.wifi {
            h.record.sample(&mut self.rec, &h.mac, t);
            let mut buf = Vec::new();
            for a in &h.sta_aqm {
                buf.clear();
                a.bn.aqm.sample(t, &mut buf);
                for (j, q) in buf.drain(..).enumerate() {
                    let name = self.rec.extra_queues[a.extra_q + j].name;
                    self.rec.extra_queues[a.extra_q + j] = QueueSample { name, ..q };
                }
            }
            if let Some(x) = &mut h.txq {
                x.sample(&mut self.rec, &h.mac, t);
            }
        }
    }

    /// End of warmup: the `wifi` block counts from here.
    pub(super) fn wifi_warmup(&mut self) {
        if let Some(h) = &mut self.net.wifi {
            h.mac.reset_stats();
            if let Some(x) = &mut h.txq {
                x.warmup();
            }
        }
    }

    /// Packets the MAC holds (driver queue, in the air, awaiting retry, behind a hole).
    pub(super) fn wifi_in_flight(&self) -> (u64, u64) {
        self.net.wifi.as_ref().map_or((0, 0), |h| {
            let (_, (pending, _)) = h.mac.driver_backlog(self.now);
            let held = h.mac.reorder_held();
            let txq = h.txq.as_ref().map_or(0, |t| t.txqs.total_pkts())
                + h.sta_aqm
                    .iter()
                    .map(|a| a.bn.aqm.backlog_pkts())
                    .sum::<u64>();
            (pending + held.0 + txq, h.mac.queued_up() + held.1)
        })
    }

    /// The summary's `wifi` block (None without a Wi-Fi link).
    pub(super) fn wifi_summary(&self, window_s: f64) -> Option<serde_json::Value> {
        let h = self.net.wifi.as_ref()?;
        let mut v = h.record.summary(&h.mac, window_s);
        v["ap"] = serde_json::json!(h.ap.name());
        if let Some(w) = &h.pull_wait {
            v["pull_wait"] = w.summary(&self.rec.queue_names);
        }
        crate::wifi_txq::add_clients(&mut v, &h.mac, &h.station_of, h.txq.as_ref());
        Some(v)
    }
}
