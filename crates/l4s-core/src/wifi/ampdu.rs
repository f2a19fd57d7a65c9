//! The originator side of a block-ack session: the driver/firmware queue below the AQM (limited
//! in packets or in airtime like mac80211's AQL), A-MPDU building (≤ max MPDUs, ≤ max PPDU
//! airtime, inside the BlockAck window), and per-MPDU retries up to the retry limit.
//! IEEE 802.11-2020 §10.12 (A-MPDU), §10.25 (block ack); Linux mac80211 AQL
//! (`ieee80211_txq_airtime_check`: a queue may be pulled while its pending airtime is below the limit).

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
    next_seq: u64,
    limit: DriverLimit,
    /// Packets queued, in the air or awaiting retry.
    pending_pkts: u64,
    /// Their airtime estimate, ns.
    pending_ns: u64,
    queued_bytes: u64,
}

impl TxSession {
    /// An empty session whose driver queue holds at most `limit`.
    pub fn new(limit: DriverLimit) -> Self {
        TxSession {
            queue: VecDeque::new(),
            retry: VecDeque::new(),
            in_flight: Vec::with_capacity(64),
            next_seq: 0,
            limit,
            pending_pkts: 0,
            pending_ns: 0,
            queued_bytes: 0,
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
        self.queued_bytes += p.bytes as u64;
        self.queue.push_back((p, charge_ns));
    }

    /// Something to send (new or retry).
    #[inline]
    pub fn backlogged(&self) -> bool {
        !self.queue.is_empty() || !self.retry.is_empty()
    }

    /// Packets in the driver queue not yet sent once, and their bytes.
    pub fn queued(&self) -> (u64, u64) {
        (self.queue.len() as u64, self.queued_bytes)
    }

    /// Everything the driver holds: queued, in the air, awaiting retry (packets, airtime ns).
    pub fn pending(&self) -> (u64, u64) {
        (self.pending_pkts, self.pending_ns)
    }

    /// Time the head of the driver queue has waited at `now`.
    pub fn head_wait(&self, now: Nanos) -> Nanos {
        self.queue
            .front()
            .map_or(Nanos::ZERO, |(p, _)| now.saturating_sub(p.enqueued_at))
    }

    /// Fill `in_flight` for a transmission at `now`: retries first (oldest first), then new
    /// packets, while the aggregate has fewer than `max_mpdus`, stays within `max_ppdu_ns` and
    /// the sequence numbers stay inside the BlockAck window of `window` from the oldest
    /// outstanding MPDU. `on_first_tx` sees each packet leaving the driver queue and its wait.
    pub fn build(
        &mut self,
        phy: &Phy,
        max_mpdus: u32,
        max_ppdu_ns: u64,
        window: u64,
        now: Nanos,
        mut on_first_tx: impl FnMut(&Packet, Nanos),
    ) -> Built {
        debug_assert!(self.in_flight.is_empty());
        let win_start = self.retry.front().map_or(self.next_seq, |m| m.seq);
        let mut bytes = 0u64;
        let fits = |bytes: u64, sb: u64, n: usize| n == 0 || phy.ppdu_ns(bytes + sb) <= max_ppdu_ns;
        while let Some(m) = self.retry.front() {
            let sb = phy.subframe_bytes(m.pkt.bytes);
            if self.in_flight.len() as u32 >= max_mpdus || !fits(bytes, sb, self.in_flight.len()) {
                break;
            }
            bytes += sb;
            if let Some(m) = self.retry.pop_front() {
                self.in_flight.push(m);
            }
        }
        while let Some((p, _)) = self.queue.front() {
            let sb = phy.subframe_bytes(p.bytes);
            if self.in_flight.len() as u32 >= max_mpdus
                || self.next_seq >= win_start + window
                || !fits(bytes, sb, self.in_flight.len())
            {
                break;
            }
            let Some((mut p, charge_ns)) = self.queue.pop_front() else {
                break;
            };
            self.queued_bytes -= p.bytes as u64;
            on_first_tx(&p, now.saturating_sub(p.enqueued_at));
            p.enqueued_at = now;
            bytes += sb;
            self.in_flight.push(Mpdu {
                seq: self.next_seq,
                pkt: p,
                retries: 0,
                airtime_ns: charge_ns,
            });
            self.next_seq += 1;
        }
        // In-flight MPDUs are in sequence order: retries were older than any new one, and
        // the retries left behind (size limit) are newer than those taken.
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
