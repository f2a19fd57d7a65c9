//! The queue-discipline interface every AQM implements, shaped like a Linux Qdisc
//! (`enqueue`/`dequeue`/watchdog timer/xstats) but sans-I/O: the caller passes the time.

pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq_codel;
pub mod pie;

use crate::packet::Packet;
use crate::time::Nanos;

pub use codel::{Codel, CodelParams};
pub use dualpi2::{DualPi2, DualPi2Params};
pub use fifo::{Fifo, FifoEcn, FifoEcnParams, FifoParams};
pub use fq_codel::{FqCodel, FqCodelParams};
pub use pie::{Pie, PieParams};

/// What happened to a packet, for per-packet records.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forwarded unchanged.
    Pass,
    /// Forwarded with CE set by this AQM.
    Marked,
    /// Dropped by this AQM (tail drop, early drop or drop at dequeue).
    Dropped,
}

/// One queue's state at a sampling instant (DESIGN.md `samples.parquet`).
/// Counters are cumulative since creation; the recorder differences them per interval.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSample {
    /// "L", "C", "single" or "fq".
    pub name: &'static str,
    /// Packets queued at the sampling instant.
    pub backlog_pkts: u64,
    /// Bytes queued at the sampling instant.
    pub backlog_bytes: u64,
    /// Sojourn time of the head packet now (0 when empty).
    pub head_sojourn: Nanos,
    /// Packets CE-marked by the AQM in this queue, cumulative.
    pub marks: u64,
    /// Packets dropped by the AQM in this queue (enqueue and dequeue), cumulative.
    pub drops: u64,
    /// Packets dequeued and forwarded from this queue, cumulative.
    pub packets: u64,
    /// Base probability p' (DualPI2), drop probability (PIE); NaN where the AQM has none.
    pub p_prime: f64,
    /// Classic probability p_C = p'^2 (DualPI2); NaN elsewhere.
    pub p_c: f64,
    /// Coupled L4S probability p_CL = k*p' (DualPI2); NaN elsewhere.
    pub p_cl: f64,
}

impl QueueSample {
    /// A sample of an empty queue named `name`: zero backlog and counters, NaN probabilities.
    pub fn empty(name: &'static str) -> Self {
        QueueSample {
            name,
            backlog_pkts: 0,
            backlog_bytes: 0,
            head_sojourn: Nanos::ZERO,
            marks: 0,
            drops: 0,
            packets: 0,
            p_prime: f64::NAN,
            p_c: f64::NAN,
            p_cl: f64::NAN,
        }
    }

    /// This sample with its cumulative counters taken from `stats`: marks, drops at enqueue and
    /// dequeue, and packets forwarded.
    pub fn with_counters(self, stats: &AqmStats) -> Self {
        QueueSample {
            marks: stats.marked,
            drops: stats.dropped_enqueue + stats.dropped_dequeue,
            packets: stats.dequeued,
            ..self
        }
    }
}

/// Counters every AQM keeps (cumulative). Conservation:
/// `enqueued == dequeued + dropped_dequeue + backlog_pkts`, and every offered packet is either
/// enqueued or counted in `dropped_enqueue`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AqmStats {
    /// Packets accepted into the queue.
    pub enqueued: u64,
    /// Packets refused at enqueue (tail drop, early drop, overload).
    pub dropped_enqueue: u64,
    /// Packets removed and dropped at dequeue.
    pub dropped_dequeue: u64,
    /// Packets handed to the link.
    pub dequeued: u64,
    /// Packets CE-marked by the AQM.
    pub marked: u64,
    /// Packets queued now (filled in by [`Aqm::stats`]).
    pub backlog_pkts: u64,
    /// Bytes queued now (filled in by [`Aqm::stats`]).
    pub backlog_bytes: u64,
}

impl AqmStats {
    /// These counters with a queue's current backlog filled in (what [`Aqm::stats`] returns).
    pub fn with_backlog(&self, backlog_pkts: u64, backlog_bytes: u64) -> AqmStats {
        AqmStats {
            backlog_pkts,
            backlog_bytes,
            ..self.clone()
        }
    }
}

/// A queue discipline. Sans-I/O: time comes in as `now`, randomness from the `Rng` the AQM
/// was built with, and nothing here sleeps or reads a clock.
pub trait Aqm: Send {
    /// Short kind name as in scenario files ("dualpi2", "fifo", ...).
    fn kind(&self) -> &'static str;

    /// Offer a packet at `now`. `Err(pkt)` hands back a packet dropped at enqueue.
    /// The AQM stamps `enqueued_at` itself.
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Packet>;

    /// Take the next packet for the link at `now`, with its verdict (CE) applied. Packets the
    /// AQM drops while looking for one are pushed onto `dropped` (the caller clears it).
    fn dequeue(&mut self, now: Nanos, dropped: &mut Vec<Packet>) -> Option<Packet>;

    /// The earliest time the AQM wants `on_timer` called (e.g. the next PI update), if any.
    fn next_wakeup(&self) -> Option<Nanos> {
        None
    }

    /// Run timer work due at `now` (the caller calls it at or after `next_wakeup`).
    fn on_timer(&mut self, _now: Nanos) {}

    /// Packets queued now (Linux `sch->q.qlen`).
    fn backlog_pkts(&self) -> u64;
    /// Bytes queued now (Linux `sch->qstats.backlog`).
    fn backlog_bytes(&self) -> u64;
    /// No packet is queued.
    fn is_empty(&self) -> bool {
        self.backlog_pkts() == 0
    }

    /// Per-queue state for the recorder, appended to `out`.
    fn sample(&self, now: Nanos, out: &mut Vec<QueueSample>);

    /// The cumulative counters with the current backlog.
    fn stats(&self) -> AqmStats;

    /// Algorithm-specific statistics named as Linux xstats (e.g. DualPI2's `prob`, `delay_c`,
    /// `step_marks`, `credit`).
    fn xstats(&self, _now: Nanos) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Cumulative event counters by name (e.g. DualPI2's marks by cause), which summary.json
    /// reports as differences since warmup. None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Byte-or-packet buffer limit shared by the AQMs. Linux qdiscs count `limit` in packets;
/// `limit_bytes` (when set) adds a byte bound, as bfifo does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct Limit {
    /// Most packets the queue holds (tc `limit`).
    pub pkts: u64,
    /// Most bytes the queue holds, if bounded (bfifo `limit` in bytes).
    pub bytes: Option<u64>,
}

impl Limit {
    /// Would admitting `pkt_bytes` more exceed the limit?
    pub fn would_overflow(&self, backlog_pkts: u64, backlog_bytes: u64, pkt_bytes: u32) -> bool {
        backlog_pkts + 1 > self.pkts
            || self
                .bytes
                .is_some_and(|b| backlog_bytes + pkt_bytes as u64 > b)
    }
}

#[cfg(test)]
mod sample_tests {
    use super::{AqmStats, QueueSample};
    use crate::time::Nanos;

    /// A queue sample's counters are the AQM's: marks = marked, drops = dropped at enqueue +
    /// at dequeue, packets = dequeued; the instantaneous fields stay the sample's.
    #[test]
    fn a_sample_takes_marks_drops_and_packets_from_the_aqm_counters() {
        let stats = AqmStats {
            enqueued: 20,
            dropped_enqueue: 2,
            dropped_dequeue: 5,
            dequeued: 11,
            marked: 3,
            backlog_pkts: 4,
            backlog_bytes: 6000,
        };
        let s = QueueSample {
            backlog_pkts: 4,
            head_sojourn: Nanos(9),
            ..QueueSample::empty("single")
        }
        .with_counters(&stats);
        assert_eq!((s.marks, s.drops, s.packets), (3, 7, 11));
        assert_eq!(
            (s.name, s.backlog_pkts, s.head_sojourn),
            ("single", 4, Nanos(9))
        );
        assert!(s.p_prime.is_nan());
    }
}
