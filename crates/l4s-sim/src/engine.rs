//! Discrete-event core: a binary-heap event queue ordered by (time, insertion sequence), and
//! per-path delay lines. Ties at the same nanosecond run in insertion order, so a run is a pure
//! function of the scenario and seed.
//!
//! Events are 32-byte keys with no payload pointers; packets in propagation wait in per-flow
//! delay lines (a constant delay keeps them in order), so the heap holds a few events per flow
//! instead of one per packet in flight, and nothing is allocated per packet once the buffers
//! have grown.

use l4s_core::{Nanos, Packet};
use std::collections::VecDeque;

/// What an event does; `arg` is the flow index where one applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    SenderTimer,
    ReceiverTimer,
    /// The head of a flow's forward delay line reaches the receiver.
    FwdArrive,
    /// The head of a flow's reverse delay line reaches the sender.
    RevArrive,
    /// The bottleneck can take the next packet.
    LinkService,
    /// The bottleneck finished sending its packet.
    LinkDone,
    AqmTimer,
    AckLinkDone,
    Sample,
    Warmup,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// time_ns << 64 | seq: one integer comparison orders by time, then insertion.
    key: u128,
    pub kind: Kind,
    pub arg: u32,
}

impl Event {
    #[inline]
    pub fn time(&self) -> Nanos {
        Nanos((self.key >> 64) as u64)
    }
}

/// The future event list: a deque kept sorted by key (earliest first), plus one slot for the
/// bottleneck link's event (`LinkService` / `LinkDone`, of which at most one is ever
/// outstanding) that bypasses it — a third of all events in a saturated run. The list holds a
/// few events per flow, and a new event is usually among the latest, so a sorted insert (a
/// short scan from the back) and an O(1) pop beat a binary heap's sift-down. Keys are unique,
/// so the pop order is the same as a heap's.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: VecDeque<Event>,
    slot: Option<Event>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: VecDeque::with_capacity(n),
            slot: None,
            seq: 0,
        }
    }
    #[inline]
    pub fn push(&mut self, t: Nanos, kind: Kind, arg: u32) {
        let key = ((t.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        let e = Event { key, kind, arg };
        // Keys are unique and a new one is larger than every key at the same time: find the
        // first later event, scanning from the back (usually a step or two).
        let n = self.heap.len();
        let mut i = n;
        while i > 0 && self.heap[i - 1].key > key {
            i -= 1;
            if n - i > 8 {
                // Far from the back: finish with a binary search over the front part.
                i = self.heap.partition_point(|x| x.key < key);
                break;
            }
        }
        if i == n {
            self.heap.push_back(e);
        } else {
            self.heap.insert(i, e);
        }
    }
    /// Schedule the link's single outstanding event (replaces none: the caller guarantees
    /// at most one is pending).
    #[inline]
    pub fn push_link(&mut self, t: Nanos, kind: Kind) {
        debug_assert!(self.slot.is_none(), "two link events outstanding");
        let key = ((t.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.slot = Some(Event { key, kind, arg: 0 });
    }
    /// Pop the earliest event if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Nanos) -> Option<Event> {
        let limit = ((until.0 as u128) << 64) | u64::MAX as u128;
        let heap_key = self.heap.front().map_or(u128::MAX, |e| e.key);
        match self.slot {
            Some(e) if e.key <= heap_key => {
                if e.key > limit {
                    return None;
                }
                self.slot = None;
                Some(e)
            }
            _ => {
                if heap_key > limit {
                    return None;
                }
                self.heap.pop_front()
            }
        }
    }
    pub fn len(&self) -> usize {
        self.heap.len() + self.slot.is_some() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The times of one endpoint's timer events still in the queue, latest first. A new event is
/// pushed only when the wanted time is earlier than every outstanding one; an outstanding
/// earlier event fires, finds nothing due and re-arms. So a timer that swings between a near
/// pacing release and a far RTO leaves no stale entries piling up in the heap.
#[derive(Debug, Default)]
pub struct TimerSlots {
    /// Strictly decreasing; the earliest is last.
    times: Vec<Nanos>,
}

impl TimerSlots {
    /// True when an event at `w` must be pushed (and records it).
    #[inline]
    pub fn arm(&mut self, w: Nanos) -> bool {
        if self.times.last().is_some_and(|&e| e <= w) {
            return false;
        }
        self.times.push(w);
        true
    }
    /// The event at `t` fired. Events of one endpoint fire in time order, so it is the earliest.
    #[inline]
    pub fn fired(&mut self, t: Nanos) {
        debug_assert_eq!(self.times.last(), Some(&t));
        self.times.pop();
    }
    pub fn outstanding(&self) -> usize {
        self.times.len()
    }
}

/// Packets in propagation on one path, ordered by arrival time. `armed` is the arrival time
/// for which an event is in the queue (events for other times are stale and skipped).
#[derive(Debug, Default)]
pub struct DelayLine {
    q: VecDeque<(Nanos, Packet)>,
    pub armed: Option<Nanos>,
}

impl DelayLine {
    /// Arrival time of the last packet (for order-keeping jitter).
    pub fn back_time(&self) -> Nanos {
        self.q.back().map_or(Nanos::ZERO, |x| x.0)
    }
    /// Add a packet arriving at `at`; returns the time an event must be scheduled for, if the
    /// head changed to an earlier time than the armed one.
    #[inline]
    pub fn push(&mut self, at: Nanos, pkt: Packet) -> Option<Nanos> {
        if self.q.back().is_none_or(|b| b.0 <= at) {
            self.q.push_back((at, pkt));
        } else {
            // Reordering jitter: keep the line sorted (stable for equal times).
            let idx = self.q.partition_point(|x| x.0 <= at);
            self.q.insert(idx, (at, pkt));
        }
        let head = self.q.front().map(|x| x.0)?;
        if self.armed.is_none_or(|a| head < a) {
            self.armed = Some(head);
            return Some(head);
        }
        None
    }
    /// Take the head if it has arrived by `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Nanos) -> Option<Packet> {
        if self.q.front()?.0 <= now {
            return self.q.pop_front().map(|x| x.1);
        }
        None
    }
    pub fn head_time(&self) -> Option<Nanos> {
        self.q.front().map(|x| x.0)
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Nanos(5), Kind::Sample, 0);
        q.push(Nanos(3), Kind::LinkDone, 1);
        q.push(Nanos(5), Kind::Warmup, 2);
        q.push(Nanos(3), Kind::LinkService, 3);
        let got: Vec<u32> = std::iter::from_fn(|| q.pop_until(Nanos(10)).map(|e| e.arg)).collect();
        assert_eq!(got, vec![1, 3, 0, 2]);
        q.push(Nanos(11), Kind::Sample, 9);
        assert!(q.pop_until(Nanos(10)).is_none());
        assert_eq!(q.len(), 1);
        // The link slot interleaves with the heap by (time, insertion order).
        q.push(Nanos(20), Kind::Sample, 4);
        q.push_link(Nanos(11), Kind::LinkDone);
        q.push(Nanos(11), Kind::Sample, 5);
        let got: Vec<(u64, Kind)> =
            std::iter::from_fn(|| q.pop_until(Nanos(20)).map(|e| (e.time().0, e.kind))).collect();
        assert_eq!(
            got,
            vec![
                (11, Kind::Sample),
                (11, Kind::LinkDone),
                (11, Kind::Sample),
                (20, Kind::Sample)
            ]
        );
        q.push_link(Nanos(30), Kind::LinkService);
        assert!(q.pop_until(Nanos(29)).is_none());
        assert_eq!(q.pop_until(Nanos(30)).unwrap().kind, Kind::LinkService);
        assert!(q.is_empty());
    }

    #[test]
    fn timer_slots_push_only_for_an_earlier_time() {
        let mut s = TimerSlots::default();
        assert!(s.arm(Nanos(200))); // RTO
        assert!(s.arm(Nanos(10))); // pacing release, earlier: a second event
        assert!(!s.arm(Nanos(10))); // same time: already there
        assert!(!s.arm(Nanos(150))); // later than the earliest: that one will re-arm
        assert_eq!(s.outstanding(), 2);
        s.fired(Nanos(10));
        assert!(!s.arm(Nanos(210))); // the 200 event is still out
        s.fired(Nanos(200));
        assert!(s.arm(Nanos(210)));
        assert_eq!(s.outstanding(), 1);
    }

    #[test]
    fn delay_line_arms_only_for_an_earlier_head() {
        let mut d = DelayLine::default();
        let p = Packet::default();
        assert_eq!(d.push(Nanos(10), p), Some(Nanos(10)));
        assert_eq!(d.push(Nanos(20), p), None);
        // A reordered packet ahead of the head needs an earlier event.
        assert_eq!(d.push(Nanos(5), p), Some(Nanos(5)));
        assert_eq!(d.push(Nanos(15), p), None);
        let times: Vec<u64> = std::iter::from_fn(|| {
            let t = d.head_time()?;
            d.pop_due(t).map(|_| t.0)
        })
        .collect();
        assert_eq!(times, vec![5, 10, 15, 20]);
    }
}
