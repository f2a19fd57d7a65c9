//! Discrete-event core: a 4-ary-heap event list ordered by (time, insertion sequence), and
//! per-path delay lines. Ties at the same nanosecond run in insertion order, so a run is a pure
//! function of the scenario and seed.
//!
//! Events are 24-byte records with no payload pointers; packets in propagation wait in per-flow
//! delay lines (a constant delay keeps them in order) stored in one shared slab, so the heap
//! holds a few events per flow instead of one per packet in flight, and nothing is allocated
//! per packet once the slab has grown.

use l4s_core::{Nanos, Packet};

/// What an event does; `arg` is the flow index where one applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A sender asked to be woken (RTO, probe, pacing, start).
    SenderTimer,
    /// A receiver asked to be woken (delayed ACK).
    ReceiverTimer,
    /// The head of a flow's forward delay line reaches the receiver.
    FwdArrive,
    /// The head of a flow's reverse delay line reaches the sender.
    RevArrive,
    /// The bottleneck can take the next packet.
    LinkService,
    /// The bottleneck finished sending its packet.
    LinkDone,
    /// The AQM's own timer (e.g. the PI update every tupdate).
    AqmTimer,
    /// The ACK link finished sending an ACK.
    AckLinkDone,
    /// Record one sample row per queue and per flow.
    Sample,
    /// End of the warmup: snapshot the counters summary.json subtracts.
    Warmup,
    /// The Wi-Fi MAC's next event (channel access, end of an exchange, reorder timeout).
    Wifi,
    /// `[[links]]`: hop `arg` (≥ 1) can take its next packet.
    HopService,
    /// `[[links]]`: hop `arg` (≥ 1) finished sending its packet.
    HopDone,
    /// `[[links]]`: the head of the line after hop `arg` reaches hop `arg` + 1.
    HopArrive,
    /// `[[links]]`: the AQM timer of hop `arg` (≥ 1).
    HopAqmTimer,
}

/// One scheduled event: 24 bytes, no payload pointers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Event {
    t: u64,
    /// Insertion sequence number: orders events due at the same nanosecond.
    seq: u64,
    /// The flow index where one applies.
    pub arg: u32,
    /// What the event does.
    pub kind: Kind,
}

impl Event {
    /// When the event is due.
    #[inline]
    pub fn time(&self) -> Nanos {
        Nanos(self.t)
    }
    /// (time, seq) as one integer: one comparison orders by time, then insertion.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.t as u128) << 64) | self.seq as u128
    }
}

/// Children per node of the event heap. Four children of 24 bytes sit in 1.5 cache lines, and
/// the heap is half as deep as a binary one, so a pop touches fewer lines.
const ARITY: usize = 4;

/// The future event list: an implicit 4-ary min-heap ordered by (time, insertion sequence), plus
/// one slot for the bottleneck link's event (`LinkService` / `LinkDone`, of which at most one
/// is ever outstanding) that bypasses it — a third of all events in a saturated run.
///
/// Push and pop cost O(log4 n) whatever the insertion pattern: with thousands of flows the
/// events of one flow (pacing releases, arrivals, delayed ACKs) land anywhere in the list, and
/// the sorted deque this replaces paid a memmove proportional to the list length for each of
/// them. Keys are unique (the sequence number never repeats), so the pop order is a total order
/// and equal to that of any other correct priority queue on the same keys.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<Event>,
    slot: Option<Event>,
    seq: u64,
}

impl EventQueue {
    /// An empty list with room for `n` events.
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: Vec::with_capacity(n),
            slot: None,
            seq: 0,
        }
    }
    #[inline]
    fn next_event(&mut self, t: Nanos, kind: Kind, arg: u32) -> Event {
        let e = Event {
            t: t.0,
            seq: self.seq,
            arg,
            kind,
        };
        self.seq += 1;
        e
    }
    /// Schedule `kind` for flow `arg` at `t` (after every event already due at `t`).
    #[inline]
    pub fn push(&mut self, t: Nanos, kind: Kind, arg: u32) {
        let e = self.next_event(t, kind, arg);
        let key = e.key();
        // Sift up: move the hole from the new leaf toward the root past every larger parent.
        let h = &mut self.heap;
        let mut i = h.len();
        h.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if h[parent].key() <= key {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = e;
    }
    /// Schedule the link's single outstanding event (replaces none: the caller guarantees
    /// at most one is pending).
    #[inline]
    pub fn push_link(&mut self, t: Nanos, kind: Kind) {
        debug_assert!(self.slot.is_none(), "two link events outstanding");
        self.slot = Some(self.next_event(t, kind, 0));
    }
    /// Remove the heap's root (the heap is not empty).
    #[inline]
    fn pop_root(&mut self) -> Event {
        let h = &mut self.heap;
        let last = h.pop().expect("pop_root on an empty heap");
        let n = h.len();
        if n == 0 {
            return last;
        }
        let top = h[0];
        // Sift down: move the hole from the root toward the leaves past every smaller child,
        // then drop the former last element into it.
        let key = last.key();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut c = first;
            let mut ck = h[first].key();
            for (j, e) in h[first + 1..end].iter().enumerate() {
                let k = e.key();
                if k < ck {
                    c = first + 1 + j;
                    ck = k;
                }
            }
            if ck >= key {
                break;
            }
            h[i] = h[c];
            i = c;
        }
        h[i] = last;
        top
    }
    /// Pop the earliest event if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Nanos) -> Option<Event> {
        let limit = ((until.0 as u128) << 64) | u64::MAX as u128;
        let heap_key = self.heap.first().map_or(u128::MAX, Event::key);
        match self.slot {
            Some(e) if e.key() <= heap_key => {
                if e.key() > limit {
                    return None;
                }
                self.slot = None;
                Some(e)
            }
            _ => {
                if heap_key > limit {
                    return None;
                }
                Some(self.pop_root())
            }
        }
    }
    /// Events outstanding (the link slot included).
    pub fn len(&self) -> usize {
        self.heap.len() + self.slot.is_some() as usize
    }
    /// True when no event is outstanding.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The times of one endpoint's timer events still in the queue. A new event is pushed only
/// when the wanted time is earlier than every outstanding one; an outstanding earlier event
/// fires, finds nothing due and re-arms. So a timer that swings between a near pacing release
/// and a far RTO leaves no stale entries piling up in the heap.
///
/// The `K` earliest times are kept inline (the engine reads them on every event of the
/// endpoint, so they sit in the flow's hot line); later ones, which a sender rarely has, go
/// to a spill list the caller keeps beside the endpoint. An empty place holds
/// [`TimerSlots::NEVER`].
#[derive(Debug, Clone, Copy)]
pub struct TimerSlots<const K: usize> {
    /// Strictly increasing, earliest first, then `NEVER`s.
    times: [Nanos; K],
}

impl<const K: usize> Default for TimerSlots<K> {
    fn default() -> Self {
        TimerSlots {
            times: [Self::NEVER; K],
        }
    }
}

impl<const K: usize> TimerSlots<K> {
    /// An empty place. Also the one time never armed: an event due then could not fire
    /// before the end of any run.
    pub const NEVER: Nanos = Nanos::MAX;

    /// True when an event at `w` must be pushed (and records it). `spill` holds the times
    /// beyond the `K` earliest, latest first; it is this endpoint's own list.
    #[inline]
    pub fn arm(&mut self, w: Nanos, spill: &mut Vec<Nanos>) -> bool {
        if self.times[0] <= w {
            return false;
        }
        let last = self.times[K - 1];
        if last != Self::NEVER {
            // Earlier than every time already spilled: the list stays latest first.
            spill.push(last);
        }
        self.times.copy_within(0..K - 1, 1);
        self.times[0] = w;
        true
    }
    /// The event at `t` fired. Events of one endpoint fire in time order, so it is the earliest.
    #[inline]
    pub fn fired(&mut self, t: Nanos, spill: &mut Vec<Nanos>) {
        debug_assert_eq!(self.times[0], t);
        // Times spill only from full inline places: with a free place the list is empty and
        // not read (it sits in the endpoint's slot, another cache line).
        let full = self.times[K - 1] != Self::NEVER;
        self.times.copy_within(1..K, 0);
        self.times[K - 1] = match full {
            true => spill.pop().unwrap_or(Self::NEVER),
            false => Self::NEVER,
        };
    }
    /// Armed times not yet fired (`spill` as given to `arm`).
    pub fn outstanding(&self, spill: &[Nanos]) -> usize {
        self.times.iter().filter(|&&t| t != Self::NEVER).count() + spill.len()
    }
}

/// No slot (end of a list, or an empty line).
const NIL: u32 = u32::MAX;

/// One packet in propagation and the next packet of its line: two whole cache lines (the
/// packet is 120 bytes; its arrival time is kept apart, in `PacketSlab::at`), so taking the
/// packet off its line and copying it out touches two lines, not the three an unaligned
/// 136-byte slot mostly straddles.
#[derive(Debug)]
#[repr(C, align(64))]
struct Slot {
    pkt: Packet,
    next: u32,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 128);

/// Storage of every packet in propagation on every path, shared by all delay lines. A freed
/// slot is reused first (LIFO free list), so the packets in flight stay in a compact, recently
/// touched block of memory whatever the number of flows; one buffer per line scattered those
/// copies over as many cache lines and pages as there are flows.
#[derive(Debug, Default)]
pub struct PacketSlab {
    slots: Vec<Slot>,
    /// Arrival time of the packet in each slot.
    at: Vec<Nanos>,
    /// Head of the free list (threaded through `Slot::next`).
    free: u32,
    /// Slots in use.
    used: usize,
}

impl PacketSlab {
    /// An empty slab (the free list starts empty: slots are created on demand).
    pub fn new() -> Self {
        PacketSlab {
            slots: Vec::new(),
            at: Vec::new(),
            free: NIL,
            used: 0,
        }
    }
    #[inline(always)]
    fn alloc(&mut self, at: Nanos, pkt: Packet) -> u32 {
        self.used += 1;
        if self.free != NIL {
            let i = self.free;
            let s = &mut self.slots[i as usize];
            self.free = s.next;
            s.next = NIL;
            s.pkt = pkt;
            self.at[i as usize] = at;
            i
        } else {
            // A line keeps its tail's slot in 31 bits (`DelayLine::tail`): 2^31 packets in
            // propagation would be 290 GB of them.
            assert!(self.slots.len() < INDEX as usize, "packet slab full");
            self.slots.push(Slot { pkt, next: NIL });
            self.at.push(at);
            (self.slots.len() - 1) as u32
        }
    }
    /// The packet in slot `i` (as handed out by [`DelayLine::pop_due`]).
    #[inline(always)]
    pub fn packet(&self, i: u32) -> &Packet {
        &self.slots[i as usize].pkt
    }
    /// Packets held (on all lines).
    pub fn len(&self) -> usize {
        self.used
    }
    /// No packet held.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }
}

/// `DelayLine::tail`'s flag: an event is queued for the head's arrival time.
const ARMED: u32 = 1 << 31;
/// `DelayLine::tail`'s slot index (`INDEX` itself: none).
const INDEX: u32 = ARMED - 1;

/// Packets in propagation on one path, ordered by arrival time: a list through a
/// [`PacketSlab`]. The line itself is 16 bytes inline in its flow's hot line: the head's slot
/// and arrival time (checked without touching the slab), the tail's slot (whose arrival time,
/// needed to append, is read from the slab) and whether an event is queued for the head
/// ("armed"; events for other times are stale and skipped).
///
/// An armed line's event is always for its head's time: arming sets it to the head, and
/// while armed the head only moves earlier (a reordered packet), which arms the new head.
/// Packets are taken off only after [`DelayLine::fire`] disarmed the line.
#[derive(Debug)]
pub struct DelayLine {
    /// Arrival time of the head (valid when the line is not empty).
    head_at: Nanos,
    /// Slot of the head (`NIL` when empty).
    head: u32,
    /// Slot of the tail in the low 31 bits (`INDEX` when empty), [`ARMED`] on top.
    tail: u32,
}

impl Default for DelayLine {
    fn default() -> Self {
        DelayLine {
            head_at: Nanos::ZERO,
            head: NIL,
            tail: INDEX,
        }
    }
}

impl DelayLine {
    #[inline(always)]
    fn tail_slot(&self) -> u32 {
        self.tail & INDEX
    }
    #[inline(always)]
    fn armed(&self) -> bool {
        self.tail & ARMED != 0
    }
    /// Arrival time of the last packet (for order-keeping jitter); zero when empty.
    pub fn back_time(&self, slab: &PacketSlab) -> Nanos {
        if self.head == NIL {
            Nanos::ZERO
        } else {
            slab.at[self.tail_slot() as usize]
        }
    }
    /// Add a packet arriving at `at`; returns the time an event must be scheduled for, if the
    /// line was not armed or its head changed to an earlier time.
    #[inline(always)]
    pub fn push(&mut self, slab: &mut PacketSlab, at: Nanos, pkt: Packet) -> Option<Nanos> {
        let i = slab.alloc(at, pkt);
        let armed = self.armed();
        let mut new_head = false;
        if self.head == NIL {
            self.head = i;
            self.tail = i;
            self.head_at = at;
            new_head = true;
        } else {
            let tail = self.tail_slot();
            if slab.at[tail as usize] <= at {
                slab.slots[tail as usize].next = i;
                self.tail = i;
            } else if at < self.head_at {
                // Reordering jitter: a new head.
                slab.slots[i as usize].next = self.head;
                self.head = i;
                self.head_at = at;
                new_head = true;
            } else {
                // Reordering jitter: after the last packet due at or before `at` (stable for
                // equal times), found by walking from the head (lines are short, and this is
                // rare).
                let mut prev = self.head;
                loop {
                    let nx = slab.slots[prev as usize].next;
                    if nx == NIL || slab.at[nx as usize] > at {
                        slab.slots[i as usize].next = nx;
                        slab.slots[prev as usize].next = i;
                        break;
                    }
                    prev = nx;
                }
            }
        }
        // Armed from here on. An armed line's event is for its old head: a new event only
        // for an earlier head.
        self.tail |= ARMED;
        (!armed || new_head).then_some(self.head_at)
    }
    /// The line's event at `t` fired: true (and the line disarmed) when it is the live one,
    /// false when it is stale.
    #[inline(always)]
    pub fn fire(&mut self, t: Nanos) -> bool {
        if !self.armed() || self.head_at != t {
            return false;
        }
        self.tail &= INDEX;
        true
    }
    /// After the due packets were taken: the time of the event to queue for the new head
    /// (the line is armed again), None when the line is empty.
    #[inline(always)]
    pub fn rearm(&mut self) -> Option<Nanos> {
        if self.head == NIL {
            return None;
        }
        self.tail |= ARMED;
        Some(self.head_at)
    }
    /// Take the head if it has arrived by `now` (the line disarmed by [`DelayLine::fire`]):
    /// its slot in `slab`, already freed, whose packet ([`PacketSlab::packet`]) stays valid
    /// until the next push. Handing out the slot instead of the packet lets the caller pass
    /// the packet on with one copy.
    #[inline(always)]
    pub fn pop_due(&mut self, slab: &mut PacketSlab, now: Nanos) -> Option<u32> {
        debug_assert!(!self.armed(), "pop_due on an armed line");
        if self.head == NIL || self.head_at > now {
            return None;
        }
        let i = self.head;
        let s = &mut slab.slots[i as usize];
        self.head = s.next;
        s.next = slab.free;
        slab.free = i;
        slab.used -= 1;
        if self.head == NIL {
            self.tail = INDEX;
        } else {
            self.head_at = slab.at[self.head as usize];
        }
        Some(i)
    }
    /// Arrival time of the head packet.
    pub fn head_time(&self) -> Option<Nanos> {
        (self.head != NIL).then_some(self.head_at)
    }
    /// Packets on the line (walks it: for the end-of-run accounting).
    pub fn len(&self, slab: &PacketSlab) -> usize {
        let mut n = 0;
        let mut i = self.head;
        while i != NIL {
            n += 1;
            i = slab.slots[i as usize].next;
        }
        n
    }
    /// No packet on the line.
    pub fn is_empty(&self) -> bool {
        self.head == NIL
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
    fn heap_pops_like_a_sorted_list_under_random_interleaving() {
        // Reference: every outstanding (time, seq) in a BTreeSet; the heap must hand out the
        // same sequence of (time, arg) for pushes at random times (many ties, some far, some
        // near) interleaved with pops up to a moving horizon, at sizes from 0 to a few thousand.
        use std::collections::BTreeSet;
        let mut x = 0x2545F4914F6CDD1Du64;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut q = EventQueue::default();
        let mut model = BTreeSet::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let mut deepest = 0;
        for round in 0..20_000u32 {
            let pushes = if round < 5_000 { 2 } else { rnd(3) };
            for _ in 0..pushes {
                // Mostly near (ties at `now` included), sometimes far ahead.
                let dt = if rnd(4) == 0 { rnd(1_000_000) } else { rnd(50) };
                let arg = rnd(1 << 20) as u32;
                q.push(Nanos(now + dt), Kind::FwdArrive, arg);
                model.insert((now + dt, seq, arg));
                seq += 1;
            }
            now += rnd(40);
            while let Some(e) = q.pop_until(Nanos(now)) {
                let want = model.pop_first().expect("model has the event");
                assert_eq!((e.time().0, e.arg), (want.0, want.2));
                assert!(want.0 <= now);
            }
            assert!(model.first().is_none_or(|m| m.0 > now));
            assert_eq!(q.len(), model.len());
            deepest = deepest.max(q.len());
        }
        assert!(
            seq > 20_000 && deepest > 1_000,
            "{seq} pushes, {deepest} deep"
        );
    }

    /// A xorshift64 stream for the randomised tests below.
    fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        }
    }

    #[test]
    fn timer_slots_push_only_for_an_earlier_time() {
        let mut s = TimerSlots::<2>::default();
        let mut spill = Vec::new();
        assert!(s.arm(Nanos(200), &mut spill)); // RTO
        assert!(s.arm(Nanos(10), &mut spill)); // pacing release, earlier: a second event
        assert!(!s.arm(Nanos(10), &mut spill)); // same time: already there
        assert!(!s.arm(Nanos(150), &mut spill)); // later than the earliest: that one will re-arm
        assert_eq!(s.outstanding(&spill), 2);
        // A third, earlier still: the latest (200) leaves the inline places for the spill list.
        assert!(s.arm(Nanos(5), &mut spill));
        assert_eq!(
            (s.outstanding(&spill), spill.as_slice()),
            (3, &[Nanos(200)][..])
        );
        s.fired(Nanos(5), &mut spill);
        assert!(spill.is_empty()); // 200 is back inline
        s.fired(Nanos(10), &mut spill);
        assert!(!s.arm(Nanos(210), &mut spill)); // the 200 event is still out
        s.fired(Nanos(200), &mut spill);
        assert!(s.arm(Nanos(210), &mut spill));
        assert_eq!(s.outstanding(&spill), 1);
        // NEVER is never armed: no event could fire then.
        assert!(!TimerSlots::<2>::default().arm(TimerSlots::<2>::NEVER, &mut spill));
    }

    /// `TimerSlots` as it was, one `Vec` per endpoint, latest first: the reference below.
    #[derive(Default)]
    struct VecTimer(Vec<Nanos>);
    impl VecTimer {
        fn arm(&mut self, w: Nanos) -> bool {
            if self.0.last().is_some_and(|&e| e <= w) {
                return false;
            }
            self.0.push(w);
            true
        }
        fn fired(&mut self, t: Nanos) {
            assert_eq!(self.0.pop(), Some(t));
        }
    }

    fn timer_slots_match_the_vec<const K: usize>(seed: u64) {
        // An endpoint asks for random times (mostly near, sometimes far: a pacing release
        // under an RTO), its events fire in time order; both keepers must ask for the same
        // pushes and hold the same number of times, however deep the stack gets.
        let mut rnd = xorshift(seed);
        let (mut s, mut spill, mut v) =
            (TimerSlots::<K>::default(), Vec::new(), VecTimer::default());
        let mut queued = std::collections::BTreeSet::new();
        let (mut now, mut deepest) = (0u64, 0);
        for _ in 0..50_000 {
            let far = rnd(3) == 0;
            let w = Nanos(now + if far { rnd(100_000) } else { rnd(100) });
            let push = s.arm(w, &mut spill);
            assert_eq!(push, v.arm(w), "arm({w:?})");
            if push {
                queued.insert(w);
            }
            if rnd(2) == 0 {
                if let Some(t) = queued.pop_first() {
                    now = t.0;
                    s.fired(t, &mut spill);
                    v.fired(t);
                }
            }
            assert_eq!(s.outstanding(&spill), v.0.len());
            deepest = deepest.max(v.0.len());
        }
        assert!(
            deepest > K + 2,
            "the stack reached {deepest}: the spill was not exercised"
        );
    }

    #[test]
    fn timer_slots_ask_for_the_pushes_a_vec_of_times_asks_for() {
        timer_slots_match_the_vec::<1>(0x9E3779B97F4A7C15);
        timer_slots_match_the_vec::<2>(0x2545F4914F6CDD1D);
        timer_slots_match_the_vec::<3>(0xD1B54A32D192ED03);
    }

    /// Fire a line's event at `t` and take what is due, then re-arm; the packets taken.
    fn fire_and_take(d: &mut DelayLine, slab: &mut PacketSlab, t: Nanos) -> Vec<u64> {
        let mut got = Vec::new();
        if d.fire(t) {
            while let Some(i) = d.pop_due(slab, t) {
                got.push(slab.packet(i).id);
            }
            d.rearm();
        }
        got
    }

    #[test]
    fn delay_line_arms_only_for_an_earlier_head() {
        let mut slab = PacketSlab::new();
        let mut d = DelayLine::default();
        let p = |id| Packet::new(id, 0, 100, l4s_core::Ecn::NotEct);
        assert_eq!(d.push(&mut slab, Nanos(10), p(1)), Some(Nanos(10)));
        assert_eq!(d.push(&mut slab, Nanos(20), p(2)), None);
        // A reordered packet ahead of the head needs an earlier event.
        assert_eq!(d.push(&mut slab, Nanos(5), p(3)), Some(Nanos(5)));
        assert_eq!(d.push(&mut slab, Nanos(15), p(4)), None);
        // Equal times keep their insertion order.
        assert_eq!(d.push(&mut slab, Nanos(15), p(5)), None);
        assert_eq!(d.push(&mut slab, Nanos(10), p(6)), None);
        assert_eq!(
            (d.len(&slab), slab.len(), d.back_time(&slab)),
            (6, 6, Nanos(20))
        );
        // The event queued for 10 is stale: the head is at 5 now.
        assert!(!d.fire(Nanos(10)));
        let mut got = Vec::new();
        while let Some(t) = d.head_time() {
            got.extend(
                fire_and_take(&mut d, &mut slab, t)
                    .into_iter()
                    .map(|id| (t.0, id)),
            );
        }
        assert_eq!(
            got,
            vec![(5, 3), (10, 1), (10, 6), (15, 4), (15, 5), (20, 2)]
        );
        assert!(d.is_empty() && slab.is_empty() && d.back_time(&slab) == Nanos::ZERO);
        assert!(!d.fire(Nanos(20)) && d.pop_due(&mut slab, Nanos(100)).is_none());
        assert_eq!(d.rearm(), None);
        // Empty again: the next packet needs an event.
        assert_eq!(d.push(&mut slab, Nanos(30), p(7)), Some(Nanos(30)));
    }

    /// `DelayLine` as it was (a sorted list, `armed` the time of the queued event): the
    /// reference below.
    #[derive(Default)]
    struct RefLine {
        pkts: Vec<(Nanos, u64)>,
        armed: Option<Nanos>,
    }
    impl RefLine {
        fn push(&mut self, at: Nanos, id: u64) -> Option<Nanos> {
            let k = self.pkts.partition_point(|&(a, _)| a <= at);
            self.pkts.insert(k, (at, id));
            let head = self.pkts[0].0;
            if self.armed.is_none_or(|a| head < a) {
                self.armed = Some(head);
                return Some(head);
            }
            None
        }
        fn fire(&mut self, t: Nanos) -> Vec<u64> {
            if self.armed != Some(t) {
                return Vec::new();
            }
            self.armed = None;
            let n = self.pkts.partition_point(|&(a, _)| a <= t);
            let got = self.pkts.drain(..n).map(|p| p.1).collect();
            if let Some(&(h, _)) = self.pkts.first() {
                self.armed = Some(h);
            }
            got
        }
    }

    #[test]
    fn delay_lines_behave_like_sorted_lists_with_an_armed_time() {
        // Three lines over one slab, driven as the world drives them: pushes at the send
        // time plus a delay with reordering jitter, an event queued whenever a push asks
        // for one, events fired in time order (stale ones included). Every push's answer,
        // every fire's packets, the back time and the length match the reference.
        let mut rnd = xorshift(0xA0761D6478BD642F);
        let mut slab = PacketSlab::new();
        let mut lines: Vec<(DelayLine, RefLine)> = (0..3).map(|_| Default::default()).collect();
        let mut events = std::collections::BTreeSet::new();
        let (mut seq, mut now, mut id, mut stale) = (0u64, 0u64, 0u64, 0);
        for _ in 0..30_000 {
            for _ in 0..rnd(3) {
                let l = rnd(3) as usize;
                let (d, r) = &mut lines[l];
                let spread = if rnd(4) == 0 { 40 } else { 3 };
                let at = Nanos(now + 50 + rnd(spread));
                assert_eq!(
                    d.back_time(&slab),
                    r.pkts.last().map_or(Nanos::ZERO, |p| p.0)
                );
                id += 1;
                let got = d.push(
                    &mut slab,
                    at,
                    Packet::new(id, l as u32, 100, l4s_core::Ecn::NotEct),
                );
                assert_eq!(got, r.push(at, id), "push at {at:?}");
                if let Some(h) = got {
                    events.insert((h, seq, l));
                    seq += 1;
                }
            }
            now += rnd(8);
            while events.first().is_some_and(|e| e.0 .0 <= now) {
                let (t, _, l) = events.pop_first().expect("an event");
                let (d, r) = &mut lines[l];
                let want = r.fire(t);
                stale += want.is_empty() as u32;
                assert_eq!(fire_and_take(d, &mut slab, t), want, "event at {t:?}");
                if let Some(h) = r.armed.filter(|_| !want.is_empty()) {
                    events.insert((h, seq, l));
                    seq += 1;
                }
            }
            for (d, r) in &lines {
                assert_eq!(d.len(&slab), r.pkts.len());
            }
        }
        assert!(
            stale > 50 && id > 20_000,
            "{stale} stale events, {id} packets"
        );
    }

    #[test]
    fn delay_lines_share_the_slab_and_reuse_freed_slots() {
        // Two lines interleaved over one slab: each hands back its own packets in order, and
        // the slab never holds more slots than the most packets in flight at once.
        let mut slab = PacketSlab::new();
        let (mut a, mut b) = (DelayLine::default(), DelayLine::default());
        let mut next_id = 0u64;
        let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
        for t in 0..1000u64 {
            for (line, flow) in [(&mut a, 0u32), (&mut b, 1u32)] {
                next_id += 1;
                let pkt = Packet::new(next_id, flow, 100, l4s_core::Ecn::NotEct);
                line.push(&mut slab, Nanos(t + 5 + flow as u64), pkt);
            }
            got_a.extend(fire_and_take(&mut a, &mut slab, Nanos(t)));
            got_b.extend(fire_and_take(&mut b, &mut slab, Nanos(t)));
            assert_eq!(slab.len(), a.len(&slab) + b.len(&slab));
        }
        assert!(got_a.windows(2).all(|w| w[0] < w[1]) && got_a.iter().all(|i| i % 2 == 1));
        assert!(got_b.windows(2).all(|w| w[0] < w[1]) && got_b.iter().all(|i| i % 2 == 0));
        assert_eq!((got_a.len(), got_b.len()), (995, 994));
        // 5 + 6 packets in flight at most, plus the two just pushed before the pops.
        assert!(slab.slots.len() <= 13, "{} slots", slab.slots.len());
    }
}
