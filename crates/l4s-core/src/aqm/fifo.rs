//! FIFO with tail drop, and FIFO with ECN step marking (the "DCTCP-style" queue).
//! Tail drop as Linux pfifo/bfifo; step marking as RFC 8257 §3.1 (mark when the instantaneous
//! queue exceeds K) with the threshold in packets (at enqueue) or in sojourn time (at dequeue).

use super::{Aqm, AqmStats, Limit, QueueSample};
use crate::error::ParamError;
use crate::packet::{Ecn, Packet};
use crate::time::Nanos;
use std::collections::VecDeque;

/// Parameters of [`Fifo`].
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FifoParams {
    /// Buffer in packets (Linux pfifo `limit`; default 1000 as txqueuelen).
    pub limit: u64,
    /// Optional byte bound (bfifo).
    pub limit_bytes: Option<u64>,
}

impl Default for FifoParams {
    fn default() -> Self {
        FifoParams {
            limit: 1000,
            limit_bytes: None,
        }
    }
}

impl FifoParams {
    /// Check the limits: at least one packet and, if set, one byte.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.limit == 0 {
            return Err(ParamError::new(
                "limit",
                self.limit,
                "an integer >= 1 (packets)",
            ));
        }
        if self.limit_bytes == Some(0) {
            return Err(ParamError::new("limit_bytes", 0, "an integer >= 1 (bytes)"));
        }
        Ok(())
    }
    fn limit(&self) -> Limit {
        Limit {
            pkts: self.limit,
            bytes: self.limit_bytes,
        }
    }
}

/// The packet store under every single-queue AQM: a FIFO with byte accounting. `M` is what
/// the AQM keeps beside each packet (DualPI2's skb-cb metadata), nothing by default; it sits
/// in the same deque entry as its packet, so a packet and its tag cost one push and one pop.
#[derive(Clone, Debug)]
pub struct PacketQueue<M = ()> {
    q: VecDeque<(Packet, M)>,
    bytes: u64,
}

impl<M> Default for PacketQueue<M> {
    fn default() -> Self {
        PacketQueue::with_capacity(0)
    }
}

impl PacketQueue {
    /// Append a packet at the tail.
    pub fn push(&mut self, pkt: Packet) {
        self.push_tagged(pkt, ());
    }
    /// Remove the head packet.
    pub fn pop(&mut self) -> Option<Packet> {
        self.pop_tagged().map(|(p, ())| p)
    }
}

impl<M> PacketQueue<M> {
    /// An empty queue with room for `n` packets before it reallocates.
    pub fn with_capacity(n: usize) -> Self {
        PacketQueue {
            q: VecDeque::with_capacity(n),
            bytes: 0,
        }
    }
    /// Append a packet and its tag at the tail.
    pub fn push_tagged(&mut self, pkt: Packet, tag: M) {
        self.bytes += pkt.bytes as u64;
        self.q.push_back((pkt, tag));
    }
    /// Remove the head packet with its tag.
    pub fn pop_tagged(&mut self) -> Option<(Packet, M)> {
        let (p, tag) = self.q.pop_front()?;
        self.bytes -= p.bytes as u64;
        Some((p, tag))
    }
    /// The head packet, left in place.
    pub fn head(&self) -> Option<&Packet> {
        self.q.front().map(|(p, _)| p)
    }
    /// Packets queued.
    pub fn len(&self) -> u64 {
        self.q.len() as u64
    }
    /// No packet is queued.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Bytes queued.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Sojourn of the head packet at `now`, zero when empty.
    pub fn head_sojourn(&self, now: Nanos) -> Nanos {
        self.head().map_or(Nanos::ZERO, |p| p.sojourn(now))
    }
    /// A sample named `name` with this queue's backlog and head sojourn at `now`; the AQM
    /// fills in its own counters and probabilities.
    pub fn sample(&self, name: &'static str, now: Nanos) -> QueueSample {
        QueueSample {
            backlog_pkts: self.len(),
            backlog_bytes: self.bytes(),
            head_sojourn: self.head_sojourn(now),
            ..QueueSample::empty(name)
        }
    }
    /// The AQM's counters with this queue's backlog filled in.
    pub fn stats_with_backlog(&self, stats: &AqmStats) -> AqmStats {
        stats.with_backlog(self.len(), self.bytes())
    }
}

/// pfifo/bfifo admission: hands the packet back as `Err` (counted as an enqueue drop) when it
/// would take the queue past `limit`, else as `Ok` to be queued.
fn tail_drop(
    limit: &Limit,
    q: &PacketQueue,
    stats: &mut AqmStats,
    pkt: Packet,
) -> Result<Packet, Packet> {
    if limit.would_overflow(q.len(), q.bytes(), pkt.bytes) {
        stats.dropped_enqueue += 1;
        return Err(pkt);
    }
    Ok(pkt)
}

/// Tail-drop FIFO.
#[derive(Clone, Debug)]
pub struct Fifo {
    limit: Limit,
    q: PacketQueue,
    stats: AqmStats,
}

impl Fifo {
    /// A tail-drop FIFO with validated parameters.
    pub fn new(params: FifoParams) -> Result<Self, ParamError> {
        params.validate()?;
        Ok(Fifo {
            limit: params.limit(),
            q: PacketQueue::with_capacity(params.limit.min(1 << 16) as usize),
            stats: AqmStats::default(),
        })
    }
}

impl Aqm for Fifo {
    fn kind(&self) -> &'static str {
        "fifo"
    }
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Packet> {
        let mut pkt = tail_drop(&self.limit, &self.q, &mut self.stats, pkt)?;
        pkt.enqueued_at = now;
        self.q.push(pkt);
        self.stats.enqueued += 1;
        Ok(())
    }
    fn dequeue(&mut self, _now: Nanos, _dropped: &mut Vec<Packet>) -> Option<Packet> {
        let p = self.q.pop()?;
        self.stats.dequeued += 1;
        Some(p)
    }
    fn backlog_pkts(&self) -> u64 {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn sample(&self, now: Nanos, out: &mut Vec<QueueSample>) {
        out.push(self.q.sample("single", now).with_counters(&self.stats));
    }
    fn stats(&self) -> AqmStats {
        self.q.stats_with_backlog(&self.stats)
    }
}

/// Parameters of [`FifoEcn`]: exactly one of `mark_sojourn` / `mark_pkts` is used.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FifoEcnParams {
    /// Buffer in packets (default 1000).
    pub limit: u64,
    /// Optional byte bound (bfifo).
    pub limit_bytes: Option<u64>,
    /// Mark at dequeue when the packet's sojourn exceeds this (time-based step, as DualPI2's L queue).
    pub mark_sojourn: Option<Nanos>,
    /// Mark at enqueue when the queue already holds more than this many packets (RFC 8257 K).
    pub mark_pkts: Option<u64>,
    /// Drop Not-ECT packets that would have been marked (true) or let them pass (false, as a
    /// DCTCP switch that only marks).
    pub drop_not_ect: bool,
}

impl Default for FifoEcnParams {
    fn default() -> Self {
        FifoEcnParams {
            limit: 1000,
            limit_bytes: None,
            mark_sojourn: Some(Nanos::from_ms(1)),
            mark_pkts: None,
            drop_not_ect: false,
        }
    }
}

impl FifoEcnParams {
    /// Check the limits and that exactly one marking threshold is set.
    pub fn validate(&self) -> Result<(), ParamError> {
        FifoParams {
            limit: self.limit,
            limit_bytes: self.limit_bytes,
        }
        .validate()?;
        match (self.mark_sojourn, self.mark_pkts) {
            (Some(_), Some(_)) => Err(ParamError::new(
                "mark_pkts",
                "set together with mark_sojourn",
                "only one of mark_sojourn (time) or mark_pkts (packets)",
            )),
            (None, None) => Err(ParamError::new(
                "mark_sojourn",
                "unset",
                "one of mark_sojourn (e.g. \"1ms\") or mark_pkts (e.g. 65)",
            )),
            _ => Ok(()),
        }
    }
}

/// FIFO that CE-marks above a step threshold.
#[derive(Clone, Debug)]
pub struct FifoEcn {
    params: FifoEcnParams,
    limit: Limit,
    q: PacketQueue,
    stats: AqmStats,
}

impl FifoEcn {
    /// A step-marking FIFO with validated parameters.
    pub fn new(params: FifoEcnParams) -> Result<Self, ParamError> {
        params.validate()?;
        let limit = Limit {
            pkts: params.limit,
            bytes: params.limit_bytes,
        };
        Ok(FifoEcn {
            params,
            limit,
            q: PacketQueue::with_capacity(1024),
            stats: AqmStats::default(),
        })
    }

    /// Apply a step verdict: CE for ECN-capable packets, else drop or pass.
    /// Returns false when the packet must be dropped.
    fn congestion(&mut self, pkt: &mut Packet) -> bool {
        if pkt.ecn.is_ecn_capable() {
            if pkt.ecn != Ecn::Ce {
                pkt.ecn = Ecn::Ce;
            }
            self.stats.marked += 1;
            true
        } else {
            !self.params.drop_not_ect
        }
    }
}

impl Aqm for FifoEcn {
    fn kind(&self) -> &'static str {
        "fifo_ecn"
    }
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Packet> {
        let mut pkt = tail_drop(&self.limit, &self.q, &mut self.stats, pkt)?;
        if let Some(k) = self.params.mark_pkts {
            // RFC 8257 §3.1: mark on arrival when the instantaneous queue exceeds K.
            if self.q.len() >= k && !self.congestion(&mut pkt) {
                self.stats.dropped_enqueue += 1;
                return Err(pkt);
            }
        }
        pkt.enqueued_at = now;
        self.q.push(pkt);
        self.stats.enqueued += 1;
        Ok(())
    }
    fn dequeue(&mut self, now: Nanos, dropped: &mut Vec<Packet>) -> Option<Packet> {
        while let Some(mut p) = self.q.pop() {
            if let Some(th) = self.params.mark_sojourn {
                if p.sojourn(now) > th && !self.congestion(&mut p) {
                    self.stats.dropped_dequeue += 1;
                    dropped.push(p);
                    continue;
                }
            }
            self.stats.dequeued += 1;
            return Some(p);
        }
        None
    }
    fn backlog_pkts(&self) -> u64 {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn sample(&self, now: Nanos, out: &mut Vec<QueueSample>) {
        out.push(self.q.sample("single", now).with_counters(&self.stats));
    }
    fn stats(&self) -> AqmStats {
        self.q.stats_with_backlog(&self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u64, ecn: Ecn) -> Packet {
        Packet::new(id, 0, 1500, ecn)
    }

    #[test]
    fn tail_drop_at_packet_limit() {
        let mut f = Fifo::new(FifoParams {
            limit: 3,
            limit_bytes: None,
        })
        .unwrap();
        for i in 0..3 {
            assert!(f.enqueue(pkt(i, Ecn::NotEct), Nanos::ZERO).is_ok());
        }
        let back = f.enqueue(pkt(3, Ecn::NotEct), Nanos::ZERO).unwrap_err();
        assert_eq!(back.id, 3);
        let mut d = Vec::new();
        let ids: Vec<u64> =
            std::iter::from_fn(|| f.dequeue(Nanos::ZERO, &mut d).map(|p| p.id)).collect();
        assert_eq!(ids, vec![0, 1, 2]);
        let s = f.stats();
        assert_eq!((s.enqueued, s.dropped_enqueue, s.dequeued), (3, 1, 3));
    }

    #[test]
    fn byte_limit_counts_bytes() {
        // 4000 bytes hold two 1500-byte packets, not three.
        let mut f = Fifo::new(FifoParams {
            limit: 100,
            limit_bytes: Some(4000),
        })
        .unwrap();
        assert!(f.enqueue(pkt(0, Ecn::NotEct), Nanos::ZERO).is_ok());
        assert!(f.enqueue(pkt(1, Ecn::NotEct), Nanos::ZERO).is_ok());
        assert!(f.enqueue(pkt(2, Ecn::NotEct), Nanos::ZERO).is_err());
        assert_eq!(f.backlog_bytes(), 3000);
    }

    #[test]
    fn sojourn_step_marks_only_late_ect_packets() {
        let mut f = FifoEcn::new(FifoEcnParams {
            mark_sojourn: Some(Nanos::from_ms(1)),
            ..Default::default()
        })
        .unwrap();
        f.enqueue(pkt(0, Ecn::Ect1), Nanos::ZERO).unwrap();
        f.enqueue(pkt(1, Ecn::Ect0), Nanos::ZERO).unwrap();
        f.enqueue(pkt(2, Ecn::NotEct), Nanos::ZERO).unwrap();
        f.enqueue(pkt(3, Ecn::Ect1), Nanos::from_us(900)).unwrap();
        let mut d = Vec::new();
        // At 1 ms exactly: sojourn == threshold, no mark (strictly greater marks).
        assert_eq!(f.dequeue(Nanos::from_ms(1), &mut d).unwrap().ecn, Ecn::Ect1);
        // At 1.5 ms: 1.5 ms > 1 ms -> CE.
        assert_eq!(
            f.dequeue(Nanos::from_us(1500), &mut d).unwrap().ecn,
            Ecn::Ce
        );
        // Not-ECT passes unmarked when drop_not_ect is off.
        assert_eq!(
            f.dequeue(Nanos::from_us(1500), &mut d).unwrap().ecn,
            Ecn::NotEct
        );
        // Packet 3 waited 0.6 ms: no mark.
        assert_eq!(
            f.dequeue(Nanos::from_us(1500), &mut d).unwrap().ecn,
            Ecn::Ect1
        );
        assert_eq!(f.stats().marked, 1);
        assert!(d.is_empty());
    }

    #[test]
    fn length_step_marks_above_k_and_drops_not_ect_when_asked() {
        let mut f = FifoEcn::new(FifoEcnParams {
            mark_sojourn: None,
            mark_pkts: Some(2),
            drop_not_ect: true,
            ..Default::default()
        })
        .unwrap();
        f.enqueue(pkt(0, Ecn::Ect0), Nanos::ZERO).unwrap();
        f.enqueue(pkt(1, Ecn::Ect0), Nanos::ZERO).unwrap();
        // Queue holds 2 = K: the third arrival is marked, a Not-ECT one dropped.
        f.enqueue(pkt(2, Ecn::Ect0), Nanos::ZERO).unwrap();
        assert!(f.enqueue(pkt(3, Ecn::NotEct), Nanos::ZERO).is_err());
        let mut d = Vec::new();
        let ecns: Vec<Ecn> =
            std::iter::from_fn(|| f.dequeue(Nanos::ZERO, &mut d).map(|p| p.ecn)).collect();
        assert_eq!(ecns, vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ce]);
    }

    #[test]
    fn parameters_are_validated_by_name() {
        let e = Fifo::new(FifoParams {
            limit: 0,
            limit_bytes: None,
        })
        .unwrap_err();
        assert_eq!(e.param, "limit");
        let e = FifoEcn::new(FifoEcnParams {
            mark_sojourn: Some(Nanos::from_ms(1)),
            mark_pkts: Some(5),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("only one of"));
        // Neither: a step AQM needs its threshold.
        let e = FifoEcn::new(FifoEcnParams {
            mark_sojourn: None,
            mark_pkts: None,
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.param, "mark_sojourn");
        assert!(FifoEcn::new(FifoEcnParams {
            mark_sojourn: None,
            mark_pkts: Some(65),
            ..Default::default()
        })
        .is_ok());
    }
}
