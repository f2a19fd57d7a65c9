//! The originator side of a block-ack session: the driver/firmware queue below the AQM (limited
//! in packets or in airtime like mac80211's AQL), A-MPDU building (≤ max MPDUs, ≤ max PPDU
//! airtime, inside the BlockAck window), and per-MPDU retries up to the retry limit.
//! IEEE 802.11-2020 §10.12 (A-MPDU), §10.25 (block ack); Linux mac80211 AQL
//! (`ieee80211_txq_airtime_check`: a queue may be pulled while its pending airtime is below the limit).
//! An aggregate is built when the AP wins the medium (firmware queues), or formed ahead into
//! the hardware queue (ath9k `ath_tx_form_aggr`) and loaded when the AP wins it.

use super::phy::Phy;
use crate::packet::Packet;
use crate::time::Nanos;
use std::collections::VecDeque;

/// How much the driver queue may hold (queued, in flight and awaiting retry together).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum DriverLimit {
    /// At most this many packets.
    Packets(u32),
    /// Pulled from above while the pending airtime estimate is below this (AQL).
    Airtime(Nanos),
}

/// One MPDU of the session.
#[derive(Copy, Clone, Debug)]
pub struct Mpdu {
    /// Sequence number in the session (unbounded).
    pub seq: u64,
    /// The IP packet it carries; `enqueued_at` is when it entered the driver queue, then when
    /// it was first sent.
    pub pkt: Packet,
    /// Transmissions that failed so far.
    pub retries: u32,
    /// Its AQL airtime charge, ns.
    pub airtime_ns: u64,
}

/// What building an aggregate took out of the driver queue, for the statistics.
#[derive(Copy, Clone, Debug, Default)]
pub struct Built {
    /// PSDU bytes of the A-MPDU (0: nothing to send).
    pub psdu_bytes: u64,
    /// MPDUs in it.
    pub mpdus: u32,
}

/// Originator state: the driver queue, the MPDUs in the air and those awaiting retry.
#[derive(Clone, Debug)]
pub struct TxSession {
    /// Queued packets with the airtime charged when they entered (the PHY rate may change).
    queue: VecDeque<(Packet, u64)>,
    /// MPDUs that failed and wait for a later aggregate, in sequence order.
    retry: VecDeque<Mpdu>,
    /// MPDUs of the exchange in progress, in sequence order.
    in_flight: Vec<Mpdu>,
    /// Aggregates formed into the hardware queue, oldest first, with their PSDU bytes
    /// (ath9k's shape; empty otherwise).
    formed: VecDeque<(Vec<Mpdu>, u64)>,
    next_seq: u64,
    limit: DriverLimit,
    /// Packets queued, in the air or awaiting retry.
    pending_pkts: u64,
    /// Their airtime estimate, ns.
    pending_ns: u64,
    /// Packets handed down and not yet sent once (queued or in a formed aggregate), bytes.
    unsent: (u64, u64),
}

impl TxSession {
    /// An empty session whose driver queue holds at most `limit`.
    pub fn new(limit: DriverLimit) -> Self {
        TxSession {
            queue: VecDeque::new(),
            retry: VecDeque::new(),
            in_flight: Vec::with_capacity(64),
            formed: VecDeque::new(),
            next_seq: 0,
            limit,
            pending_pkts: 0,
            pending_ns: 0,
            unsent: (0, 0),
        }
    }

    /// Whether the queue above may hand down another packet now.
    #[inline]
    pub fn has_room(&self) -> bool {
        match self.limit {
            DriverLimit::Packets(n) => self.pending_pkts < n as u64,
            DriverLimit::Airtime(t) => self.pending_ns < t.0,
        }
    }

    /// A packet handed down at `now` (the caller checked `has_room`, or tail-drops).
    pub fn push(&mut self, mut p: Packet, now: Nanos, phy: &Phy) {
        p.enqueued_at = now;
        let charge_ns = phy.subframe_airtime_ns(p.bytes);
        self.pending_pkts += 1;
        self.pending_ns += charge_ns;
        self.unsent.0 += 1;
        self.unsent.1 += p.bytes as u64;
        self.queue.push_back((p, charge_ns));
    }

    /// Something to put in an aggregate (new or retry; not counting formed aggregates).
    #[inline]
    pub fn backlogged(&self) -> bool {
        !self.queue.is_empty() || !self.retry.is_empty()
    }

    /// Packets in the driver queue not yet sent once (queued or in a formed aggregate), and
    /// their bytes.
    pub fn queued(&self) -> (u64, u64) {
        self.unsent
    }

    /// Everything the driver holds: queued, in the air, awaiting retry (packets, airtime ns).
    pub fn pending(&self) -> (u64, u64) {
        (self.pending_pkts, self.pending_ns)
    }

    /// Time the head of the driver queue has waited at `now`.
    pub fn head_wait(&self, now: Nanos) -> Nanos {
        let formed = self
            .formed
            .iter()
            .flat_map(|(a, _)| a.iter())
            .find(|m| m.retries == 0)
            .map(|m| m.pkt.enqueued_at);
        formed
            .or(self.queue.front().map(|(p, _)| p.enqueued_at))
            .map_or(Nanos::ZERO, |t| now.saturating_sub(t))
    }

    /// How many of the waiting retries and queued packets the next aggregate takes: retries
    /// first (oldest first), then new packets, while the aggregate has fewer than
    /// `max_mpdus`, stays within `max_ppdu_ns` and the sequence numbers stay inside the
    /// BlockAck window of `window` from the oldest outstanding MPDU (waiting for retry, in the
    /// air or in a formed aggregate). Returns (retries, new packets, PSDU bytes).
    fn plan(
        &self,
        phy: &Phy,
        max_mpdus: u32,
        max_ppdu_ns: u64,
        window: u64,
    ) -> (usize, usize, u64) {
        let oldest = [
            self.retry.front().map(|m| m.seq),
            self.in_flight.first().map(|m| m.seq),
            self.formed
                .front()
                .and_then(|(a, _)| a.first())
                .map(|m| m.seq),
        ];
        let win_start = oldest.into_iter().flatten().fold(self.next_seq, u64::min);
        let mut bytes = 0u64;
        let mut n = 0usize;
        let fits = |bytes: u64, sb: u64, n: usize| {
            n == 0 || (n < max_mpdus as usize && phy.ppdu_ns(bytes + sb) <= max_ppdu_ns)
        };
        for m in &self.retry {
            let sb = phy.subframe_bytes(m.pkt.bytes);
            if !fits(bytes, sb, n) {
                break;
            }
            bytes += sb;
            n += 1;
        }
        let retries = n;
        for (k, (p, _)) in self.queue.iter().enumerate() {
            let sb = phy.subframe_bytes(p.bytes);
            if n as u32 >= max_mpdus
                || self.next_seq + k as u64 >= win_start + window
                || !fits(bytes, sb, n)
            {
                break;
            }
            bytes += sb;
            n += 1;
        }
        (retries, n - retries, bytes)
    }

    /// Move the MPDUs `plan` chose into `agg`; their PSDU bytes.
    fn fill(
        &mut self,
        agg: &mut Vec<Mpdu>,
        phy: &Phy,
        max_mpdus: u32,
        max_ppdu_ns: u64,
        window: u64,
    ) -> Built {
        let (retries, new, bytes) = self.plan(phy, max_mpdus, max_ppdu_ns, window);
        agg.extend(self.retry.drain(..retries));
        for (p, charge_ns) in self.queue.drain(..new) {
            agg.push(Mpdu {
                seq: self.next_seq,
                pkt: p,
                retries: 0,
                airtime_ns: charge_ns,
            });
            self.next_seq += 1;
        }
        // In sequence order: retries were older than any new one, and the retries left
        // behind (size limit) are newer than those taken.
        Built {
            psdu_bytes: bytes,
            mpdus: agg.len() as u32,
        }
    }

    /// The MPDUs of `in_flight` sent for the first time at `now`: `on_first_tx` sees each
    /// packet leaving the driver queue and its wait there; its `enqueued_at` becomes `now`.
    fn first_tx(&mut self, now: Nanos, mut on_first_tx: impl FnMut(&Packet, Nanos)) {
        for m in self.in_flight.iter_mut().filter(|m| m.retries == 0) {
            on_first_tx(&m.pkt, now.saturating_sub(m.pkt.enqueued_at));
            m.pkt.enqueued_at = now;
            self.unsent.0 -= 1;
            self.unsent.1 -= m.pkt.bytes as u64;
        }
    }

    /// Fill `in_flight` for a transmission at `now` (the rule of [`TxSession::plan`]).
    /// `on_first_tx` sees each packet leaving the driver queue and its wait.
    pub fn build(
        &mut self,
        phy: &Phy,
        max_mpdus: u32,
        max_ppdu_ns: u64,
        window: u64,
        now: Nanos,
        on_first_tx: impl FnMut(&Packet, Nanos),
    ) -> Built {
        debug_assert!(self.in_flight.is_empty());
        let mut agg = std::mem::take(&mut self.in_flight);
        let built = self.fill(&mut agg, phy, max_mpdus, max_ppdu_ns, window);
        self.in_flight = agg;
        self.first_tx(now, on_first_tx);
        built
    }

    /// Whether the packets waiting (retries and queued) all fit in the next aggregate: the
    /// driver keeps pulling from its TXQ while they do (`ath_tx_form_aggr`'s loop).
    pub fn aggregate_open(&self, phy: &Phy, max_mpdus: u32, max_ppdu_ns: u64, window: u64) -> bool {
        let (r, n, _) = self.plan(phy, max_mpdus, max_ppdu_ns, window);
        r + n == self.retry.len() + self.queue.len()
    }

    /// ath9k `ath_tx_form_aggr`: form the next aggregate now (the rule of
    /// [`TxSession::plan`]) into the hardware queue; what does not fit stays waiting.
    pub fn form(&mut self, phy: &Phy, max_mpdus: u32, max_ppdu_ns: u64, window: u64) -> Built {
        let mut agg = Vec::with_capacity(max_mpdus as usize);
        let built = self.fill(&mut agg, phy, max_mpdus, max_ppdu_ns, window);
        if built.mpdus > 0 {
            self.formed.push_back((agg, built.psdu_bytes));
        }
        built
    }

    /// The oldest formed aggregate goes in the air at `now` (see [`TxSession::build`]).
    pub fn load_formed(&mut self, now: Nanos, on_first_tx: impl FnMut(&Packet, Nanos)) -> Built {
        debug_assert!(self.in_flight.is_empty());
        let Some((agg, bytes)) = self.formed.pop_front() else {
            return Built::default();
        };
        self.in_flight = agg;
        self.first_tx(now, on_first_tx);
        Built {
            psdu_bytes: bytes,
            mpdus: self.in_flight.len() as u32,
        }
    }

    /// Take the MPDUs of the finished exchange (give the vector back with `restore`).
    pub fn take_in_flight(&mut self) -> Vec<Mpdu> {
        std::mem::take(&mut self.in_flight)
    }

    /// Hand back the (emptied) vector `take_in_flight` returned, keeping its capacity.
    pub fn restore(&mut self, mut v: Vec<Mpdu>) {
        v.clear();
        self.in_flight = v;
    }

    /// MPDUs of the exchange in progress that are retransmissions.
    pub fn in_flight_retries(&self) -> usize {
        self.in_flight.iter().filter(|m| m.retries > 0).count()
    }

    /// An MPDU of the finished exchange that was acknowledged or given up: release its charge.
    pub fn release(&mut self, m: &Mpdu) {
        self.pending_pkts -= 1;
        self.pending_ns -= m.airtime_ns;
    }

    /// Put the failed MPDUs `failed` (sequence order) back for retry, merged with those waiting.
    pub fn requeue(&mut self, failed: &mut Vec<Mpdu>) {
        if failed.is_empty() {
            return;
        }
        if self.retry.is_empty() || self.retry.front().is_some_and(|r| r.seq > failed[0].seq) {
            // Common case: the failed ones are older than every waiting retry.
            for m in failed.drain(..).rev() {
                self.retry.push_front(m);
            }
            return;
        }
        let mut merged: Vec<Mpdu> = self.retry.drain(..).collect();
        merged.append(failed);
        merged.sort_by_key(|m| m.seq);
        self.retry.extend(merged);
    }
}
