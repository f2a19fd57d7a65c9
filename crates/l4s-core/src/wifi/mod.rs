//! A Wi-Fi (IEEE 802.11 EDCA) bottleneck hop, sans-I/O: the access point's driver queue below
//! the AQM, A-MPDUs answered by BlockAcks, per-MPDU errors and retries, the recipient's reorder
//! buffer, the client station's uplink (TCP ACKs) and `stations` saturated contenders sharing
//! one half-duplex medium. IEEE 802.11-2020 §10.23.2 (EDCA), §10.12 (A-MPDU), §10.25 (block
//! ack); Bianchi, IEEE JSAC 18(3) 2000 (saturation model); Linux mac80211 AQL.
//!
//! How a caller drives a [`WifiMac`]: hand packets down with [`WifiMac::push_down`] while
//! [`WifiMac::has_room`] (that is when the AQM above sees its dequeue), ACKs up with
//! [`WifiMac::push_up`]; call [`WifiMac::handle_timeout`] at [`WifiMac::poll_timeout`]; then
//! collect [`WifiMac::poll_delivered`] and refill the driver queue.
//!
//! Simplifications (named): one access category (best effort) and TXOP limit 0 (one PPDU per
//! channel access); a failed exchange (collision, or no MPDU decoded) keeps the medium busy as
//! long as a successful one (PPDU + SIFS + BlockAck: the originators' BlockAck timeout, the
//! others' EIFS); frames reach the recipient's reorder buffer when the exchange ends; a
//! contender that empties its queue stops counting down and resumes its drawn backoff when it
//! has a frame again; the other stations send full aggregates of 1500-byte packets; no rate
//! control, RTS/CTS, OFDMA, MU-MIMO, hidden nodes or capture.

pub mod airtime;
pub mod ampdu;
pub mod ap;
pub mod aql;
pub mod edca;
pub mod phy;
pub mod reorder;
#[cfg(test)]
mod tests;
pub mod txq;

pub use airtime::AirtimeScheduler;
pub use ampdu::DriverLimit;
pub use ap::{ApMode, TxDriver, ATH_AGGR_MIN_QDEPTH};
pub use aql::AqlLimits;
pub use edca::EdcaParams;
pub use phy::{Phy, RateTrace, Standard};
pub use txq::{TxqParams, Txqs};

use crate::error::ParamError;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Nanos;
use ampdu::{Mpdu, TxSession};
use edca::{Backoff, SaturatedContenders};
use reorder::ReorderBuffer;
use std::collections::VecDeque;

/// Index of the access point (downlink) among the contenders; client station `i` is `1 + i`.
const AP: usize = 0;
/// IP size of the other stations' packets.
const OTHER_PKT_BYTES: u32 = 1500;

/// The hop's parameters, validated by [`WifiParams::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct WifiParams {
    /// The PHY's airtime arithmetic.
    pub phy: Phy,
    /// EDCA timing and contention windows.
    pub edca: EdcaParams,
    /// Most MPDUs in one A-MPDU (and the BlockAck window).
    pub max_mpdus: u32,
    /// Longest PPDU (aPPDUMaxTime, 5.484 ms for VHT/HE).
    pub max_ppdu: Nanos,
    /// Other saturated stations contending for the medium.
    pub stations: u32,
    /// Probability that one downlink MPDU (AP → first client) is received in error.
    pub per: f64,
    /// Probability that one uplink MPDU (first client → AP: the TCP ACKs) is received in error.
    pub per_up: f64,
    /// Failed transmissions after which an MPDU is dropped (it is sent at most limit + 1 times).
    pub retry_limit: u32,
    /// The longest a received frame waits behind a hole in the reorder buffer.
    pub reorder_timeout: Nanos,
    /// The access point's driver queue limit.
    pub driver_limit: DriverLimit,
    /// The client station's uplink queue, packets (tail drop).
    pub uplink_limit_pkts: u32,
    /// PHY rate over time instead of the fixed `phy` (which should then be the trace's first
    /// point's): each PPDU uses the rate in force at its start.
    pub rate_trace: Option<RateTrace>,
    /// Client stations after the first (whose PHY and error rate are `phy` and `per`): each
    /// with its own block-ack sessions, reorder buffers and uplink contention.
    pub more_clients: Vec<ClientParams>,
    /// How the AP's driver hands aggregates to the medium: per-station firmware queues
    /// served round robin, or ath9k's hardware queue of formed aggregates.
    pub driver: TxDriver,
}

/// A client station's own link (`[[link.wifi.clients]]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClientParams {
    /// The PHY of the frames to and from it.
    pub phy: Phy,
    /// Probability that one MPDU to it is received in error.
    pub per: f64,
    /// Probability that one MPDU from it is received in error.
    pub per_up: f64,
    /// Its PHY rate over time instead of the fixed `phy` (which should then be the trace's
    /// first point's); not for the first client, whose trace is [`WifiParams::rate_trace`].
    pub rate_trace: Option<RateTrace>,
}

impl WifiParams {
    /// Defaults around `phy`: AC_BE EDCA, 64 MPDUs, 5.484 ms, no other stations, no errors,
    /// retry limit 7 (dot11ShortRetryLimit), 100 ms reorder timeout (mac80211), AQL 12 ms
    /// (mac80211's per-station high limit, used while the interface is under its threshold).
    pub fn new(phy: Phy) -> Self {
        WifiParams {
            phy,
            edca: EdcaParams::default(),
            max_mpdus: 64,
            max_ppdu: Nanos::from_us(5_484),
            stations: 0,
            per: 0.0,
            per_up: 0.0,
            retry_limit: 7,
            reorder_timeout: Nanos::from_ms(100),
            driver_limit: DriverLimit::Airtime(Nanos::from_ms(12)),
            uplink_limit_pkts: 1000,
            rate_trace: None,
            more_clients: Vec::new(),
            driver: TxDriver::FirmwareRr,
        }
    }

    /// Range checks; each error names the key (as in `[link.wifi]`) and its range.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.edca.validate()?;
        if !(1..=256).contains(&self.max_mpdus) {
            return Err(ParamError::new(
                "max_mpdus",
                self.max_mpdus,
                "an integer in [1, 256]",
            ));
        }
        if !(100_000..=10_000_000).contains(&self.max_ppdu.0) {
            return Err(ParamError::new(
                "max_ppdu",
                self.max_ppdu,
                "a duration in [100us, 10ms]",
            ));
        }
        if self.stations > 200 {
            return Err(ParamError::new(
                "stations",
                self.stations,
                "an integer in [0, 200]",
            ));
        }
        for (key, v) in [("per_down", self.per), ("per_up", self.per_up)] {
            if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                return Err(ParamError::new(key, v, "a probability in [0, 1)"));
            }
        }
        if self.retry_limit > 255 {
            return Err(ParamError::new(
                "retry_limit",
                self.retry_limit,
                "an integer in [0, 255]",
            ));
        }
        if !(1_000_000..=10_000_000_000).contains(&self.reorder_timeout.0) {
            return Err(ParamError::new(
                "reorder_timeout",
                self.reorder_timeout,
                "a duration in [1ms, 10s]",
            ));
        }
        match self.driver_limit {
            DriverLimit::Packets(n) if !(1..=100_000).contains(&n) => {
                return Err(ParamError::new(
                    "driver_limit_pkts",
                    n,
                    "an integer in [1, 100000]",
                ))
            }
            DriverLimit::Airtime(t) if !(100_000..=1_000_000_000).contains(&t.0) => {
                return Err(ParamError::new(
                    "driver_limit",
                    t,
                    "a duration in [100us, 1s]",
                ))
            }
            _ => {}
        }
        if self.more_clients.len() > 63 {
            return Err(ParamError::new(
                "clients",
                self.more_clients.len() + 1,
                "1 to 64 client stations",
            ));
        }
        for c in &self.more_clients {
            for (key, v) in [("per_down", c.per), ("per_up", c.per_up)] {
                if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                    return Err(ParamError::new(key, v, "a probability in [0, 1)"));
                }
            }
        }
        if !(1..=100_000).contains(&self.uplink_limit_pkts) {
            return Err(ParamError::new(
                "uplink_limit_pkts",
                self.uplink_limit_pkts,
                "an integer in [1, 100000]",
            ));
        }
        Ok(())
    }

    /// The medium time of one exchange: PPDU + SIFS + response.
    pub fn exchange_ns(&self, psdu_bytes: u64) -> u64 {
        self.phy.ppdu_ns(psdu_bytes) + self.edca.sifs.0 + self.phy.response_ns()
    }

    /// MPDUs and PSDU bytes of a full aggregate of `ip_bytes` packets under both limits.
    pub fn full_aggregate(&self, ip_bytes: u32) -> (u32, u64) {
        let sb = self.phy.subframe_bytes(ip_bytes);
        let mut k = 1u32;
        while k < self.max_mpdus && self.phy.ppdu_ns((k as u64 + 1) * sb) <= self.max_ppdu.0 {
            k += 1;
        }
        (k, k as u64 * sb)
    }
}

/// Which way a packet crossed the medium.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Access point → client station (data).
    Down,
    /// Client station → access point (TCP ACKs).
    Up,
}

/// Counters of one direction's block-ack session.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    /// Channel accesses won (alone or in a collision).
    pub txops: u64,
    /// MPDU transmissions, first ones and retries.
    pub mpdu_tx: u64,
    /// MPDU retransmissions.
    pub retries: u64,
    /// MPDUs received in error (the `per` roll).
    pub per_errors: u64,
    /// MPDUs lost to collisions.
    pub collided_mpdus: u64,
    /// MPDUs dropped after the retry limit.
    pub retry_drops: u64,
    /// Packets the recipient's reorder buffer released.
    pub delivered: u64,
    /// Aggregates by number of MPDUs (index = MPDUs).
    pub agg_hist: Vec<u64>,
    /// Channel-access delay of each transmission, µs: from the frame being ready (queue
    /// non-empty, or the previous exchange's end) to its PPDU start.
    pub access_delay_us: Vec<u32>,
    /// Medium time of this direction's exchanges, ns.
    pub airtime_ns: u64,
    /// Packets the uplink queue tail-dropped.
    pub queue_drops: u64,
    /// Frames the recipient discarded because its reorder timeout had moved the window past
    /// them (counted at the end of the run, see [`WifiMac::stats`]).
    pub reorder_late_drops: u64,
    /// Times the reorder timeout released frames across a hole.
    pub reorder_timeouts: u64,
}

/// Medium-wide counters.
#[derive(Clone, Debug, Default)]
pub struct WifiStats {
    /// Downlink (AP → client).
    pub down: DirStats,
    /// Uplink (client → AP).
    pub up: DirStats,
    /// Exchanges on the medium (a collision counts once).
    pub exchanges: u64,
    /// Exchanges with two or more transmitters.
    pub collisions: u64,
    /// Medium busy time, ns (all exchanges).
    pub busy_ns: u64,
    /// Medium time lost to collisions, ns.
    pub collision_ns: u64,
    /// Medium time of the other stations' successful exchanges, ns.
    pub others_airtime_ns: u64,
    /// Successful exchanges of the other stations.
    pub others_success: u64,
    /// IP payload bytes those carried.
    pub others_bytes: u64,
}

/// A contender's exchange in progress.
#[derive(Copy, Clone, Debug)]
struct Tx {
    who: usize,
    /// MPDUs for the other stations' synthetic aggregates.
    mpdus: u32,
}

/// The shared medium with its contenders.
pub struct WifiMac {
    p: WifiParams,
    rng: Rng,
    /// The AP's and each client station's channel access.
    backoff: Vec<Backoff>,
    /// The other stations' channel access, in aggregate.
    others: SaturatedContenders,
    /// Scratch: the other stations transmitting in the exchange being started.
    others_tx: Vec<u32>,
    /// The AP's block-ack session (driver queue) to each client station.
    down: Vec<TxSession>,
    /// Each client station's uplink session.
    up: Vec<TxSession>,
    /// Recipient buffers: at each client (downlink frames) and at the AP (each uplink).
    rx_down: Vec<ReorderBuffer>,
    rx_up: Vec<ReorderBuffer>,
    /// The reorder buffers' (late drops, timeouts) at the last reset, down and up.
    rx_base: [(u64, u64); 2],
    /// When the AP and each client last became ready to contend (access-delay origin).
    ready_since: Vec<Nanos>,
    /// Each client station's PHY and PER (the first one's PHY follows the rate trace).
    clients: Vec<ClientParams>,
    /// The station the AP's exchange in progress is addressed to.
    ap_to: usize,
    /// ath9k's hardware queue: the station of each formed aggregate, oldest (in the air
    /// while the AP transmits) first; at most [`ATH_AGGR_MIN_QDEPTH`].
    hw_queue: VecDeque<usize>,
    /// The most aggregates the hardware queue ever held.
    hw_queue_max: usize,
    /// Per station: medium time of the AP's exchanges to it and of its own, ns.
    sta_airtime_ns: Vec<(u64, u64)>,
    /// End of the exchange in progress.
    busy_until: Option<Nanos>,
    /// The medium went idle at this instant.
    idle_from: Nanos,
    txs: Vec<Tx>,
    collided: bool,
    exchange_ns: u64,
    others_mpdus: u32,
    others_ppdu_ns: u64,
    /// The rate-trace point whose PHY is in `p.phy`.
    trace_at: usize,
    /// The same for each client with its own rate trace (index = station).
    client_trace_at: Vec<usize>,
    /// Some client after the first has a rate trace.
    client_traces: bool,
    released: Vec<Packet>,
    failed: Vec<Mpdu>,
    delivered: VecDeque<(Dir, Packet)>,
    dropped: VecDeque<(Dir, Packet)>,
    first_tx: Vec<(u32, Nanos)>,
    stats: WifiStats,
}

impl WifiMac {
    /// A medium with these parameters, drawing every random choice from `rng`.
    pub fn new(mut p: WifiParams, mut rng: Rng) -> Result<Self, ParamError> {
        p.validate()?;
        if let Some(tr) = &p.rate_trace {
            p.phy = tr.phys()[0];
        }
        // Draw order: the AP, each client, then each other station.
        let n = 1 + p.more_clients.len();
        let backoff: Vec<Backoff> = (0..=n)
            .map(|_| {
                let mut b = Backoff::new(&p.edca);
                b.draw(&mut rng);
                b.start = p.edca.aifs();
                b
            })
            .collect();
        let mut clients = vec![ClientParams {
            phy: p.phy,
            per: p.per,
            per_up: p.per_up,
            rate_trace: None,
        }];
        clients.extend(p.more_clients.iter().cloned());
        for c in &mut clients {
            if let Some(tr) = &c.rate_trace {
                c.phy = tr.phys()[0];
            }
        }
        let others =
            SaturatedContenders::new(p.stations as usize, &p.edca, p.edca.aifs(), &mut rng);
        let (others_mpdus, others_psdu) = p.full_aggregate(OTHER_PKT_BYTES);
        let others_ppdu_ns = p.phy.ppdu_ns(others_psdu);
        let mut stats = WifiStats::default();
        stats.down.agg_hist = vec![0; p.max_mpdus as usize + 1];
        stats.up.agg_hist = vec![0; p.max_mpdus as usize + 1];
        Ok(WifiMac {
            down: vec![TxSession::new(p.driver_limit); n],
            up: vec![TxSession::new(DriverLimit::Packets(p.uplink_limit_pkts)); n],
            rx_down: vec![ReorderBuffer::new(p.reorder_timeout); n],
            rx_up: vec![ReorderBuffer::new(p.reorder_timeout); n],
            rx_base: [(0, 0); 2],
            ready_since: vec![Nanos::ZERO; n + 1],
            clients,
            ap_to: 0,
            hw_queue: VecDeque::with_capacity(ATH_AGGR_MIN_QDEPTH),
            hw_queue_max: 0,
            sta_airtime_ns: vec![(0, 0); n],
            busy_until: None,
            idle_from: Nanos::ZERO,
            txs: Vec::with_capacity(4),
            collided: false,
            exchange_ns: 0,
            others_mpdus,
            others_ppdu_ns,
            trace_at: 0,
            client_trace_at: vec![0; n],
            client_traces: p.more_clients.iter().any(|c| c.rate_trace.is_some()),
            released: Vec::with_capacity(64),
            failed: Vec::with_capacity(64),
            delivered: VecDeque::with_capacity(128),
            dropped: VecDeque::new(),
            first_tx: Vec::with_capacity(64),
            stats,
            backoff,
            others,
            others_tx: Vec::with_capacity(8),
            rng,
            p,
        })
    }

    /// The parameters (with a rate trace, `phy` is the one in force at the last exchange or
    /// hand-over).
    pub fn params(&self) -> &WifiParams {
        &self.p
    }

    /// The counters, with the reorder buffers' counts since the last reset.
    pub fn stats(&self) -> WifiStats {
        let mut s = self.stats.clone();
        let (down, up) = self.rx_counts();
        s.down.reorder_late_drops = down.0 - self.rx_base[0].0;
        s.down.reorder_timeouts = down.1 - self.rx_base[0].1;
        s.up.reorder_late_drops = up.0 - self.rx_base[1].0;
        s.up.reorder_timeouts = up.1 - self.rx_base[1].1;
        s
    }

    /// The reorder buffers' (late drops, timeouts) summed over the stations: down, up.
    fn rx_counts(&self) -> ((u64, u64), (u64, u64)) {
        let sum = |v: &[ReorderBuffer]| {
            v.iter()
                .fold((0, 0), |a, r| (a.0 + r.late_drops, a.1 + r.timeouts))
        };
        (sum(&self.rx_down), sum(&self.rx_up))
    }

    /// The running counters without a copy (a per-sample read: `stats` clones the access-delay
    /// list); the reorder-buffer fields stay zero here, `stats` fills them in.
    #[inline]
    pub fn counters(&self) -> &WifiStats {
        &self.stats
    }

    /// Zero the counters (e.g. at the end of a warmup).
    pub fn reset_stats(&mut self) {
        let n = self.p.max_mpdus as usize + 1;
        self.stats = WifiStats::default();
        let (down, up) = self.rx_counts();
        self.rx_base = [down, up];
        for a in self.sta_airtime_ns.iter_mut() {
            *a = (0, 0);
        }
        self.stats.down.agg_hist = vec![0; n];
        self.stats.up.agg_hist = vec![0; n];
    }

    /// Whether the driver queue takes another packet from the AQM now.
    #[inline]
    pub fn has_room(&self) -> bool {
        match self.p.driver_limit {
            DriverLimit::Packets(n) => self.pending_total().0 < n as u64,
            DriverLimit::Airtime(t) => self.pending_total().1 < t.0,
        }
    }

    /// Client stations.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// What the AP's driver holds for station `sta` (queued, in the air, awaiting retry):
    /// packets and airtime estimate, ns (mac80211's `aql_tx_pending`).
    pub fn pending_to(&self, sta: usize) -> (u64, u64) {
        self.down[sta].pending()
    }

    /// What the AP's driver holds over all stations (`aql_total_pending_airtime`).
    pub fn pending_total(&self) -> (u64, u64) {
        self.down
            .iter()
            .fold((0, 0), |a, s| (a.0 + s.pending().0, a.1 + s.pending().1))
    }

    /// Whether a frame entering a TXQ runs the driver's scheduling loop now: an AQL driver's
    /// tx worker runs on enqueue only while its hardware queue is empty (otherwise on TX
    /// status); ath9k schedules on every wake (`ath9k_wake_tx_queue` → `ath_txq_schedule`).
    pub fn schedules_on_enqueue(&self) -> bool {
        self.p.driver == TxDriver::Ath9k || self.pending_total().0 == 0
    }

    /// Per station: medium time of the AP's exchanges to it and of its own (uplink), ns,
    /// since the last reset.
    pub fn station_airtime_ns(&self, sta: usize) -> (u64, u64) {
        self.sta_airtime_ns[sta]
    }

    /// The AP's driver queue over all stations: (packets queued not yet sent, their bytes,
    /// oldest head wait at `now`), and everything pending (packets, airtime ns) including in
    /// the air and awaiting retry.
    pub fn driver_backlog(&self, now: Nanos) -> ((u64, u64, Nanos), (u64, u64)) {
        let (mut p, mut b, mut w) = (0, 0, Nanos::ZERO);
        for s in &self.down {
            let (sp, sb) = s.queued();
            p += sp;
            b += sb;
            w = w.max(s.head_wait(now));
        }
        ((p, b, w), self.pending_total())
    }

    /// Packets the recipients hold behind a hole: (downlink, uplink).
    pub fn reorder_held(&self) -> (u64, u64) {
        let held = |v: &[ReorderBuffer]| v.iter().map(|r| r.held() as u64).sum();
        (held(&self.rx_down), held(&self.rx_up))
    }

    /// Packets the client stations hold for the uplink (queued, in the air, awaiting retry).
    pub fn queued_up(&self) -> u64 {
        self.up.iter().map(|s| s.pending().0).sum()
    }

    /// Hand a downlink packet for the first client to the driver queue at `now` (after
    /// checking `has_room`).
    pub fn push_down(&mut self, p: Packet, now: Nanos) {
        self.push_down_to(0, p, now);
    }

    /// Hand a downlink packet for client `sta` to the driver at `now`; its airtime estimate
    /// at that station's rate is charged until TX status. With ath9k's driver it waits for
    /// [`WifiMac::form_aggregate`] (the AP contends once an aggregate is formed).
    pub fn push_down_to(&mut self, sta: usize, p: Packet, now: Nanos) {
        self.follow_rate_trace(now);
        let phy = self.phy_of(sta);
        self.down[sta].push(p, now, &phy);
        if self.p.driver == TxDriver::FirmwareRr {
            self.activate(AP, now);
        }
    }

    /// ath9k: aggregates in the hardware queue (the one in the air included).
    pub fn hw_queue_len(&self) -> usize {
        self.hw_queue.len()
    }

    /// ath9k: the most aggregates the hardware queue ever held.
    pub fn hw_queue_max(&self) -> usize {
        self.hw_queue_max
    }

    /// The driver holds frames for `sta` not yet in an aggregate (ath9k: `tid->retry_q`,
    /// failed subframes first, then a frame pulled for an aggregate it did not fit in).
    pub fn driver_holds(&self, sta: usize) -> bool {
        self.down[sta].backlogged()
    }

    /// Whether every frame the driver holds for `sta` still fits in one aggregate at `now`
    /// (ath9k's `ath_tx_form_aggr` pulls from the TXQ while this holds; the same limits as
    /// the MAC's aggregate: `max_mpdus`, `max_ppdu` at the station's rate, the BlockAck
    /// window).
    pub fn aggregate_open(&mut self, sta: usize, now: Nanos) -> bool {
        self.follow_rate_trace(now);
        let phy = self.phy_of(sta);
        let p = &self.p;
        self.down[sta].aggregate_open(&phy, p.max_mpdus, p.max_ppdu.0, p.max_mpdus as u64)
    }

    /// ath9k `ath_tx_form_aggr` + `ath_tx_txqaddbuf`: form one aggregate of `sta`'s frames
    /// at `now` onto the hardware queue (the caller checked its room); the MPDUs in it (0:
    /// nothing fits the BlockAck window, nothing is queued).
    pub fn form_aggregate(&mut self, sta: usize, now: Nanos) -> u32 {
        debug_assert_eq!(self.p.driver, TxDriver::Ath9k);
        debug_assert!(self.hw_queue.len() < ATH_AGGR_MIN_QDEPTH);
        self.follow_rate_trace(now);
        let phy = self.phy_of(sta);
        let p = &self.p;
        let built = self.down[sta].form(&phy, p.max_mpdus, p.max_ppdu.0, p.max_mpdus as u64);
        if built.mpdus > 0 {
            self.hw_queue.push_back(sta);
            self.hw_queue_max = self.hw_queue_max.max(self.hw_queue.len());
            self.activate(AP, now);
        }
        built.mpdus
    }

    /// ath9k `ath_tx_sched_aggr` for station `sta` at `now`, `pull(mac)` taking one frame of
    /// the station's queue above into the driver (`ieee80211_tx_dequeue` then
    /// [`WifiMac::push_down_to`]; false when it is empty). The first frame comes from the
    /// driver's `tid->retry_q` or else the queue (`ath_tx_get_tid_subframe`); with
    /// [`ATH_AGGR_MIN_QDEPTH`] aggregates in the hardware queue it waits there (-EBUSY);
    /// else `ath_tx_form_aggr` pulls while the frames fit one aggregate (the one that does
    /// not stays in `retry_q`) and the aggregate joins the hardware queue. Returns the
    /// aggregate's MPDUs (0: none formed).
    pub fn ath_tx_sched_aggr(
        &mut self,
        sta: usize,
        now: Nanos,
        mut pull: impl FnMut(&mut WifiMac) -> bool,
    ) -> u32 {
        if !self.driver_holds(sta) && !pull(self) {
            return 0; // -ENOENT
        }
        if self.hw_queue.len() >= ATH_AGGR_MIN_QDEPTH {
            return 0; // -EBUSY
        }
        while self.aggregate_open(sta, now) && pull(self) {}
        self.form_aggregate(sta, now)
    }

    /// [`WifiMac::ath_tx_sched_aggr`] with a queue above that only dequeues: each packet
    /// `dequeue` returns is handed down to `sta`.
    pub fn ath_tx_sched_aggr_from(
        &mut self,
        sta: usize,
        now: Nanos,
        mut dequeue: impl FnMut() -> Option<Packet>,
    ) -> u32 {
        self.ath_tx_sched_aggr(sta, now, |mac| {
            dequeue().map(|p| mac.push_down_to(sta, p, now)).is_some()
        })
    }

    /// Whether the AP has something to send: any station's frames (firmware queues), or a
    /// formed aggregate (ath9k).
    fn ap_backlogged(&self) -> bool {
        match self.p.driver {
            TxDriver::FirmwareRr => self.down.iter().any(|s| s.backlogged()),
            TxDriver::Ath9k => !self.hw_queue.is_empty(),
        }
    }

    /// The first client station sends an uplink packet at `now`; false when its queue is full
    /// (the packet is dropped).
    pub fn push_up(&mut self, p: Packet, now: Nanos) -> bool {
        self.push_up_from(0, p, now)
    }

    /// Client `sta` sends an uplink packet at `now`; false when its queue is full.
    pub fn push_up_from(&mut self, sta: usize, p: Packet, now: Nanos) -> bool {
        if !self.up[sta].has_room() {
            self.stats.up.queue_drops += 1;
            return false;
        }
        self.follow_rate_trace(now);
        let phy = self.phy_of(sta);
        self.up[sta].push(p, now, &phy);
        self.activate(1 + sta, now);
        true
    }

    /// The PHY of frames to and from client `sta` (the first follows the rate trace).
    #[inline]
    fn phy_of(&self, sta: usize) -> Phy {
        if sta == 0 {
            self.p.phy
        } else {
            self.clients[sta].phy
        }
    }

    /// With a rate trace, put the PHY in force at `t` in `p.phy` (and the other stations'
    /// full aggregate at that rate).
    fn follow_rate_trace(&mut self, t: Nanos) {
        if self.client_traces {
            for (c, at) in self.clients.iter_mut().zip(self.client_trace_at.iter_mut()) {
                if let Some(tr) = &c.rate_trace {
                    *at = tr.index_at(t, *at);
                    c.phy = tr.phys()[*at];
                }
            }
        }
        let Some(tr) = &self.p.rate_trace else {
            return;
        };
        let i = tr.index_at(t, self.trace_at);
        if i == self.trace_at && self.p.phy == tr.phys()[i] {
            return;
        }
        self.trace_at = i;
        self.p.phy = tr.phys()[i];
        let (mpdus, psdu) = self.p.full_aggregate(OTHER_PKT_BYTES);
        self.others_mpdus = mpdus;
        self.others_ppdu_ns = self.p.phy.ppdu_ns(psdu);
    }

    /// Contender `i` has a frame at `now`: it starts (or resumes) its countdown after AIFS,
    /// on the slot grid of the idle medium.
    fn activate(&mut self, i: usize, now: Nanos) {
        let b = &mut self.backoff[i];
        if b.active {
            return;
        }
        b.active = true;
        self.ready_since[i] = now;
        let aifs = self.p.edca.aifs();
        b.start = match self.busy_until {
            Some(end) => end + aifs,
            None => {
                let grid = self.idle_from + aifs;
                let want = now + aifs;
                let slot = self.p.edca.slot.0;
                Nanos(grid.0 + (want.0 - grid.0).div_ceil(slot) * slot)
            }
        };
    }

    /// The next instant `handle_timeout` has work: the exchange's end, the next channel
    /// access, or a reorder-buffer timeout.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let mac = match self.busy_until {
            Some(t) => Some(t),
            None => self.next_access(),
        };
        self.rx_down
            .iter()
            .chain(self.rx_up.iter())
            .filter_map(|r| r.next_timeout())
            .chain(mac)
            .min()
    }

    /// The earliest channel access among active contenders.
    fn next_access(&self) -> Option<Nanos> {
        let slot = self.p.edca.slot;
        self.backoff
            .iter()
            .filter(|b| b.active)
            .map(|b| b.tx_at(slot))
            .chain(self.others.next_tx(slot))
            .min()
    }

    /// Run everything due at `now`.
    pub fn handle_timeout(&mut self, now: Nanos) {
        loop {
            match self.busy_until {
                Some(end) if end <= now => self.finish_exchange(end),
                Some(_) => break,
                None => match self.next_access() {
                    Some(t) if t <= now => self.start_exchange(t),
                    _ => break,
                },
            }
        }
        self.released.clear();
        for (rx, dir) in self
            .rx_down
            .iter_mut()
            .map(|r| (r, Dir::Down))
            .chain(self.rx_up.iter_mut().map(|r| (r, Dir::Up)))
        {
            if rx.next_timeout().is_some_and(|t| t <= now) {
                rx.expire(now, &mut self.released);
                self.delivered
                    .extend(self.released.drain(..).map(|p| (dir, p)));
            }
        }
    }

    /// A packet the recipient released, in order, at the last `handle_timeout`.
    #[inline]
    pub fn poll_delivered(&mut self) -> Option<(Dir, Packet)> {
        self.delivered.pop_front()
    }

    /// A packet the MAC lost (retry limit, or discarded by the reorder buffer after its
    /// timeout), since the last call. Uplink queue tail drops are only counted.
    #[inline]
    pub fn poll_dropped(&mut self) -> Option<(Dir, Packet)> {
        self.dropped.pop_front()
    }

    /// (flow, driver-queue wait) of each downlink packet first sent since the last call.
    pub fn drain_first_tx(&mut self) -> std::vec::Drain<'_, (u32, Nanos)> {
        self.first_tx.drain(..)
    }

    /// Every contender whose countdown ends at `t` transmits; the others freeze.
    fn start_exchange(&mut self, t: Nanos) {
        self.follow_rate_trace(t);
        let slot = self.p.edca.slot;
        self.txs.clear();
        for (i, b) in self.backoff.iter_mut().enumerate() {
            if !b.active {
                continue;
            }
            if b.tx_at(slot) == t {
                self.txs.push(Tx { who: i, mpdus: 0 });
            } else {
                b.freeze(t, slot);
            }
        }
        self.others_tx.clear();
        self.others.busy(t, slot, &mut self.others_tx);
        let first_other = self.backoff.len();
        self.txs.extend(self.others_tx.iter().map(|&j| Tx {
            who: first_other + j as usize,
            mpdus: 0,
        }));
        let mut longest = 0u64;
        for k in 0..self.txs.len() {
            let who = self.txs[k].who;
            let ppdu = if who < first_other {
                let psdu = self.build(who, t);
                let sta = if who == AP { self.ap_to } else { who - 1 };
                self.phy_of(sta).ppdu_ns(psdu)
            } else {
                self.txs[k].mpdus = self.others_mpdus;
                self.others_ppdu_ns
            };
            longest = longest.max(ppdu);
        }
        let dur = longest + self.p.edca.sifs.0 + self.p.phy.response_ns();
        self.exchange_ns = dur;
        self.collided = self.txs.len() > 1;
        self.busy_until = Some(t + Nanos(dur));
        self.stats.exchanges += 1;
        self.stats.busy_ns += dur;
        if self.collided {
            self.stats.collisions += 1;
            self.stats.collision_ns += dur;
        }
    }

    /// The station whose frames the AP sends next: round robin over the stations the driver
    /// holds frames for, one aggregate each (the firmware's per-station queues, as ath10k's
    /// and mt76's; which frames reach them is mac80211's airtime scheduler's choice); with
    /// ath9k the head of the hardware queue.
    fn next_station(&self) -> usize {
        if self.p.driver == TxDriver::Ath9k {
            return self.hw_queue.front().copied().unwrap_or(0);
        }
        let n = self.down.len();
        (0..n)
            .map(|k| (self.ap_to + 1 + k) % n)
            .find(|&i| self.down[i].backlogged())
            .unwrap_or(0)
    }

    /// Build the AP's or a client's aggregate at `t`; its PSDU bytes.
    fn build(&mut self, who: usize, t: Nanos) -> u64 {
        let sta = if who == AP {
            self.ap_to = self.next_station();
            self.ap_to
        } else {
            who - 1
        };
        let phy = self.phy_of(sta);
        let p = &self.p;
        let window = p.max_mpdus as u64;
        let (sess, st) = if who == AP {
            (&mut self.down[sta], &mut self.stats.down)
        } else {
            (&mut self.up[sta], &mut self.stats.up)
        };
        let first_tx = &mut self.first_tx;
        let on_first_tx = |pkt: &Packet, w| {
            if who == AP {
                first_tx.push((pkt.flow, w));
            }
        };
        let built = if who == AP && p.driver == TxDriver::Ath9k {
            sess.load_formed(t, on_first_tx)
        } else {
            sess.build(&phy, p.max_mpdus, p.max_ppdu.0, window, t, on_first_tx)
        };
        st.txops += 1;
        st.mpdu_tx += built.mpdus as u64;
        st.retries += sess.in_flight_retries() as u64;
        st.agg_hist[built.mpdus as usize] += 1;
        let air = phy.ppdu_ns(built.psdu_bytes) + p.edca.sifs.0 + phy.response_ns();
        st.airtime_ns += air;
        if who == AP {
            self.sta_airtime_ns[sta].0 += air;
        } else {
            self.sta_airtime_ns[sta].1 += air;
        }
        let wait = t.saturating_sub(self.ready_since[who]);
        st.access_delay_us
            .push((wait.0 / 1_000).min(u32::MAX as u64) as u32);
        built.psdu_bytes
    }

    /// The exchange that ends at `end`: outcomes, deliveries, new backoffs.
    fn finish_exchange(&mut self, end: Nanos) {
        self.busy_until = None;
        self.idle_from = end;
        let txs = std::mem::take(&mut self.txs);
        for tx in &txs {
            match tx.who {
                w if w < self.backoff.len() => self.finish_session(w, end),
                i => {
                    let p = &self.p;
                    let j = (i - self.backoff.len()) as u32;
                    self.others
                        .finish(j, self.collided, &p.edca, p.retry_limit, &mut self.rng);
                    if !self.collided {
                        self.stats.others_success += 1;
                        self.stats.others_bytes += tx.mpdus as u64 * OTHER_PKT_BYTES as u64;
                        self.stats.others_airtime_ns += self.exchange_ns;
                    }
                }
            }
        }
        self.txs = txs;
        self.txs.clear();
        let start = end + self.p.edca.aifs();
        let ap_backlogged = self.ap_backlogged();
        for (i, b) in self.backoff.iter_mut().enumerate() {
            let was = b.active;
            b.active = if i == AP {
                ap_backlogged
            } else {
                self.up[i - 1].backlogged()
            };
            if b.active && !was {
                self.ready_since[i] = end;
            }
            if b.active {
                b.start = start;
            }
        }
        self.others.restart(start);
    }

    /// The AP's (downlink) or a client's (uplink) aggregate is over at `end`.
    fn finish_session(&mut self, who: usize, end: Nanos) {
        let p = &self.p;
        let sta = if who == AP { self.ap_to } else { who - 1 };
        // The downlink's PER for the AP's aggregates, the uplink's for the client's.
        let c = &self.clients[sta];
        let per = if who == AP { c.per } else { c.per_up };
        let (sess, rx, st, dir) = if who == AP {
            (
                &mut self.down[sta],
                &mut self.rx_down[sta],
                &mut self.stats.down,
                Dir::Down,
            )
        } else {
            (
                &mut self.up[sta],
                &mut self.rx_up[sta],
                &mut self.stats.up,
                Dir::Up,
            )
        };
        let mut any_ok = false;
        self.released.clear();
        let mut flight = sess.take_in_flight();
        for m in flight.iter_mut() {
            let errored = per > 0.0 && self.rng.bernoulli(per);
            let ok = !self.collided && !errored;
            if ok {
                any_ok = true;
                sess.release(m);
                if !rx.receive(m.seq, m.pkt, end, &mut self.released) {
                    self.dropped.push_back((dir, m.pkt));
                }
                continue;
            }
            if self.collided {
                st.collided_mpdus += 1;
            } else {
                st.per_errors += 1;
            }
            m.retries += 1;
            if m.retries > p.retry_limit {
                sess.release(m);
                st.retry_drops += 1;
                rx.skip(m.seq, &mut self.released);
                self.dropped.push_back((dir, m.pkt));
            } else {
                self.failed.push(*m);
            }
        }
        sess.restore(flight);
        let mut retry = std::mem::take(&mut self.failed);
        sess.requeue(&mut retry);
        self.failed = retry;
        if who == AP && p.driver == TxDriver::Ath9k {
            // TX status: the aggregate leaves the hardware queue (`ath_tx_process_buffer`:
            // `axq_ampdu_depth--`); its failed subframes wait in `tid->retry_q`.
            self.hw_queue.pop_front();
        }
        st.delivered += self.released.len() as u64;
        self.delivered
            .extend(self.released.drain(..).map(|p| (dir, p)));
        let backlogged = if who == AP {
            // Frames left for the AP: queued or awaiting retry, or formed (ath9k).
            self.down.iter().any(|s| s.backlogged()) || !self.hw_queue.is_empty()
        } else {
            self.up[sta].backlogged()
        };
        let b = &mut self.backoff[who];
        if any_ok {
            b.success(&p.edca, &mut self.rng);
        } else {
            b.failure(&p.edca, &mut self.rng);
            if !backlogged {
                // Every MPDU reached the retry limit: the frame is given up, CW resets.
                b.give_up(&p.edca, &mut self.rng);
            }
        }
        self.ready_since[who] = end;
    }
}
