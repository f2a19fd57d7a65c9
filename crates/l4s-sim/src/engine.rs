//! Discrete-event core: the event list on the key (time, insertion sequence) — a 4-ary heap
//! while it is small, a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, JACM 1990) while it is
//! large — and per-path delay lines. Ties at the same nanosecond run in insertion order, so a
//! run is a pure function of the scenario and seed.
//!
//! Events are 24-byte records with no payload pointers; packets in propagation wait in per-flow
//! delay lines (a constant delay keeps them in order) stored in one shared slab, so the event
//! list holds a few events per flow instead of one per packet in flight, and nothing is
//! allocated per packet once the slab and the buckets have grown. With thousands of flows the
//! radix heap's sequential access (appends to a bucket, a scan of the lowest one) replaces the
//! heap's walk of a new cache line per level of a list of ~30 000 events.

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
    /// Wi-Fi `ap = "aqm_in_txq"`: the AQM timer of client station `arg` (≥ 1).
    WifiAqmTimer,
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
    /// The event due at `t`, numbered `*seq` (which then moves on): the one way events get
    /// their insertion order.
    #[inline(always)]
    fn numbered(t: Nanos, seq: &mut u64, kind: Kind, arg: u32) -> Event {
        let e = Event {
            t: t.0,
            seq: *seq,
            arg,
            kind,
        };
        *seq += 1;
        e
    }
    /// (time, seq) as one integer: one comparison orders by time, then insertion.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.t as u128) << 64) | self.seq as u128
    }
}

/// Children per node of the small-list heap. Four children of 24 bytes sit in 1.5 cache lines,
/// and the heap is half as deep as a binary one.
const ARITY: usize = 4;

/// An implicit 4-ary min-heap on the event key: the event list while it is small (a few
/// hundred events, up to ~100 flows), where it stays in L1 and a push or pop is a few compares.
#[derive(Debug, Default)]
struct QuadHeap {
    heap: Vec<Event>,
}

impl QuadHeap {
    #[inline]
    fn push(&mut self, e: Event) {
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
    #[inline]
    fn min_key(&self) -> u128 {
        self.heap.first().map_or(u128::MAX, Event::key)
    }
    /// Remove the root (the heap is not empty).
    #[inline]
    fn pop(&mut self) -> Event {
        let h = &mut self.heap;
        let last = h.pop().expect("pop on an empty heap");
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
}

/// Bits of the key per level of the radix heap: 16 buckets per level, so an event moves down
/// at most once per 4 bits of its distance from the last popped key.
const DIGIT_BITS: u32 = 4;
/// Buckets per level.
const RADIX: usize = 1 << DIGIT_BITS;
/// Buckets in all: 32 levels of 16 over the 128-bit `(time, seq)` key.
const BUCKETS: usize = (128 / DIGIT_BITS as usize) * RADIX;
/// Events per block of a bucket's chain (192 bytes, 3 cache lines).
const BLOCK: usize = 8;
/// 64-bit words of the non-empty-bucket bitmap.
const WORDS: usize = BUCKETS / 64;

/// The bucket of `key` given the last popped key `last` (`key > last`): the level of the
/// highest 4-bit digit in which they differ, and `key`'s value of that digit (above `last`'s).
/// Bucket order is key order: a key in a lower bucket is below every key in a higher one.
#[inline(always)]
fn bucket_of(key: u128, last: u128) -> usize {
    let level = (127 - (key ^ last).leading_zeros()) / DIGIT_BITS;
    let digit = (key >> (level * DIGIT_BITS)) as usize & (RADIX - 1);
    level as usize * RADIX + digit
}

/// A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path
/// problem", JACM 1990) on the unique key `(time << 64) | seq`: the event list once it is
/// large (thousands of flows).
///
/// A radix heap needs a monotone queue: no key below the last one popped. The simulator never
/// schedules in the past and the sequence number never repeats, so every new key is above
/// every popped one (a debug assertion checks it). Keys are cut into 4-bit digits; bucket
/// `(level, digit)` holds the events whose key first differs from the last popped key in the
/// digit at `level` and has the value `digit` there, so every key of a bucket is below every
/// key of the next one. A push appends to its bucket; a pop scans the lowest non-empty bucket
/// for its minimum, makes it the new last key and moves the rest to lower levels (they share
/// that digit with it now). An event moves at most once per digit of its distance from the
/// last popped key (an RTT ahead is ~7 digits), and every access is a sequential walk over a
/// bucket's blocks, where a heap of ~30 000 events at 10 000 flows walks ~7 levels of a
/// 720 KB array per pop, a new cache line each.
///
/// The buckets are chains of 8-event blocks in one arena with a free list (the most recently
/// freed block is reused first, so it is still in cache), not one vector each: 512 vectors
/// each kept the room of the most events it ever held, and at 10 000 flows that, with the
/// allocator's reaction to freeing them, added 15 MB to the peak memory.
#[derive(Debug)]
struct RadixHeap {
    /// Event storage: block `k` is `arena[k * BLOCK..(k + 1) * BLOCK]`.
    arena: Vec<Event>,
    /// Per block: the next (older, full) block of its bucket, or of the free list.
    next: Vec<u32>,
    /// First free block.
    free: u32,
    /// Per bucket (`bucket_of(key, last)`): its newest block (`NIL` when empty) and the
    /// events in it; the older blocks of its chain are full. Events in a bucket are unordered.
    heads: Vec<(u32, u32)>,
    /// Bit `i % 64` of word `i / 64` set when bucket `i` is not empty.
    nonempty: [u64; WORDS],
    /// Key of the last event popped, or a lower bound of every key held.
    last: u128,
    /// The lowest bucket's minimum (key, arena index), once scanned: while the link slot
    /// wins, repeated pops reuse it instead of rescanning.
    min: Option<(u128, usize)>,
    /// Events held.
    len: usize,
}

/// Fills a new block's unused places.
const NO_EVENT: Event = Event {
    t: 0,
    seq: 0,
    arg: 0,
    kind: Kind::Sample,
};

impl RadixHeap {
    fn new() -> Self {
        RadixHeap {
            arena: Vec::new(),
            next: Vec::new(),
            free: NIL,
            heads: vec![(NIL, 0); BUCKETS],
            nonempty: [0; WORDS],
            last: 0,
            min: None,
            len: 0,
        }
    }
    /// Append `e` to bucket `b`; returns its arena index.
    #[inline(always)]
    fn append(&mut self, b: usize, e: Event) -> usize {
        let (mut head, mut n) = self.heads[b];
        if head == NIL || n as usize == BLOCK {
            let k = if self.free != NIL {
                let k = self.free;
                self.free = self.next[k as usize];
                k
            } else {
                self.arena.extend_from_slice(&[NO_EVENT; BLOCK]);
                self.next.push(NIL);
                (self.next.len() - 1) as u32
            };
            self.next[k as usize] = head;
            (head, n) = (k, 0);
        }
        let at = head as usize * BLOCK + n as usize;
        self.arena[at] = e;
        self.heads[b] = (head, n + 1);
        self.nonempty[b / 64] |= 1 << (b % 64);
        at
    }
    /// Insert `e`, whose key is above `last`.
    #[inline]
    fn push(&mut self, e: Event) {
        let key = e.key();
        let at = self.append(bucket_of(key, self.last), e);
        self.len += 1;
        // Below the known minimum: it is the new one (and lies in the lowest bucket).
        if let Some((k, _)) = self.min {
            if key < k {
                self.min = Some((key, at));
            }
        }
    }
    /// The lowest non-empty bucket (there is one).
    #[inline(always)]
    fn lowest_bucket(&self) -> usize {
        let w = self
            .nonempty
            .iter()
            .position(|&w| w != 0)
            .expect("a non-empty bucket");
        w * 64 + self.nonempty[w].trailing_zeros() as usize
    }
    /// The smallest key held (`u128::MAX` when empty).
    #[inline]
    fn min_key(&mut self) -> u128 {
        if let Some((k, _)) = self.min {
            return k;
        }
        if self.len == 0 {
            return u128::MAX;
        }
        let (mut blk, mut n) = self.heads[self.lowest_bucket()];
        let (mut k, mut at) = (u128::MAX, 0);
        while blk != NIL {
            let base = blk as usize * BLOCK;
            for (i, e) in self.arena[base..base + n as usize].iter().enumerate() {
                let ek = e.key();
                if ek < k {
                    (k, at) = (ek, base + i);
                }
            }
            (blk, n) = (self.next[blk as usize], BLOCK as u32);
        }
        self.min = Some((k, at));
        k
    }
    /// Remove the minimum (`min_key` has found it) and redistribute the rest of its bucket
    /// below the new last key, freeing its blocks.
    #[inline]
    fn pop(&mut self) -> Event {
        let (key, at) = self.min.take().expect("pop before min_key");
        let b = self.lowest_bucket();
        let e = self.arena[at];
        self.last = key;
        self.len -= 1;
        let (mut blk, mut n) = self.heads[b];
        self.heads[b] = (NIL, 0);
        self.nonempty[b / 64] &= !(1 << (b % 64));
        // The rest share the digits from b's level up with the new last key, so each lands on
        // a lower level (never back in b).
        while blk != NIL {
            let base = blk as usize * BLOCK;
            for i in base..base + n as usize {
                if i != at {
                    let x = self.arena[i];
                    self.append(bucket_of(x.key(), key), x);
                }
            }
            // Read in full: free it (the next append may take it).
            (blk, n) = (self.free_block(blk), BLOCK as u32);
        }
        e
    }
    /// Put block `blk` (read in full) on the free list; returns the next block of its chain.
    #[inline(always)]
    fn free_block(&mut self, blk: u32) -> u32 {
        let older = self.next[blk as usize];
        self.next[blk as usize] = self.free;
        self.free = blk;
        older
    }
    /// Move every event out (into `out`), leaving the heap empty with its blocks free.
    fn drain_into(&mut self, out: &mut Vec<Event>) {
        for b in 0..BUCKETS {
            let (mut blk, mut n) = self.heads[b];
            while blk != NIL {
                let base = blk as usize * BLOCK;
                out.extend_from_slice(&self.arena[base..base + n as usize]);
                (blk, n) = (self.free_block(blk), BLOCK as u32);
            }
            self.heads[b] = (NIL, 0);
        }
        self.nonempty = [0; WORDS];
        self.min = None;
        self.len = 0;
    }
}

/// Events outstanding above which the list moves from the 4-ary heap to the radix heap: a
/// heap of 512 events (12 KB) still sits in L1, where its few compares per level beat the
/// radix heap's bucket bookkeeping; past it the heap's levels leave L1 and then L2.
const TO_RADIX: usize = 512;
/// Events outstanding below which it moves back (a quarter of `TO_RADIX`, so a list hovering
/// near the threshold does not move at every event).
const TO_HEAP: usize = TO_RADIX / 4;

/// The future event list, ordered by the unique key `(time, insertion sequence)`: a 4-ary heap
/// while it is small, a radix heap while it is large (moving the events over when the count
/// crosses `TO_RADIX` up or `TO_HEAP` down), plus one slot for the bottleneck link's event
/// (`LinkService` / `LinkDone`, of which at most one is ever outstanding) that bypasses both —
/// a third of all events in a saturated run.
///
/// Keys are unique (the sequence number never repeats), so the pop order is a total order:
/// that of any correct priority queue on the same keys, whichever structure holds the events
/// and whenever they move (a test checks it against an ordered map).
#[derive(Debug)]
pub struct EventQueue {
    small: QuadHeap,
    large: RadixHeap,
    /// The radix heap holds the events (else the 4-ary heap).
    radix: bool,
    /// Thresholds (`TO_RADIX`, `TO_HEAP`; tests move them).
    to_radix: usize,
    to_heap: usize,
    slot: Option<Event>,
    seq: u64,
    /// Time of the last event popped (slot included): nothing is scheduled before it, so
    /// `(now, 0)` is below every key held or pushed later (the sequence starts at 1).
    now: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_capacity(0)
    }
}

impl EventQueue {
    /// An empty list with room for about `n` events in the small structure.
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            small: QuadHeap {
                heap: Vec::with_capacity(n.min(TO_RADIX + 1)),
            },
            large: RadixHeap::new(),
            radix: false,
            to_radix: TO_RADIX,
            to_heap: TO_HEAP,
            slot: None,
            // From 1, so that `(now, 0)` is below every key.
            seq: 1,
            now: 0,
        }
    }
    #[inline]
    fn next_event(&mut self, t: Nanos, kind: Kind, arg: u32) -> Event {
        debug_assert!(
            t.0 >= self.now,
            "event {kind:?} scheduled at {} ns, before the current time {} ns",
            t.0,
            self.now
        );
        Event::numbered(t, &mut self.seq, kind, arg)
    }
    /// Schedule `kind` for flow `arg` at `t` (after every event already due at `t`; `t` is
    /// not before the last event popped).
    #[inline]
    pub fn push(&mut self, t: Nanos, kind: Kind, arg: u32) {
        let e = self.next_event(t, kind, arg);
        if self.radix {
            self.push_large(e);
        } else {
            self.small.push(e);
            if self.small.heap.len() > self.to_radix {
                self.move_to_radix();
            }
        }
    }
    #[inline(never)]
    fn push_large(&mut self, e: Event) {
        self.large.push(e);
    }
    /// Move the heap's events into the radix heap. Every key held and every key pushed later
    /// is above `(now, 0)`, which becomes the radix heap's lower bound.
    #[cold]
    fn move_to_radix(&mut self) {
        self.large.last = (self.now as u128) << 64;
        for e in self.small.heap.drain(..) {
            self.large.push(e);
        }
        self.radix = true;
    }
    /// Move the radix heap's events back into the 4-ary heap.
    #[cold]
    fn move_to_heap(&mut self) {
        let mut v = std::mem::take(&mut self.small.heap);
        self.large.drain_into(&mut v);
        v.sort_unstable_by_key(Event::key);
        // A sorted array is a valid heap.
        self.small.heap = v;
        self.radix = false;
    }
    /// Schedule the link's single outstanding event (replaces none: the caller guarantees
    /// at most one is pending).
    #[inline]
    pub fn push_link(&mut self, t: Nanos, kind: Kind) {
        debug_assert!(self.slot.is_none(), "two link events outstanding");
        self.slot = Some(self.next_event(t, kind, 0));
    }
    /// Pop the earliest event if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Nanos) -> Option<Event> {
        let limit = ((until.0 as u128) << 64) | u64::MAX as u128;
        // The small list's path inline; the radix heap's out of line (a call per pop is
        // nothing beside its misses, and inlining it made the common path slower). The choice
        // between the link slot and the list is written out in each: sharing it as a helper
        // cost the small path 1.2 % of the run's instructions.
        let e = if self.radix {
            self.pop_large(limit)?
        } else {
            let list_key = self.small.min_key();
            match self.slot {
                Some(e) if e.key() <= list_key => {
                    if e.key() > limit {
                        return None;
                    }
                    self.slot = None;
                    e
                }
                _ => {
                    if list_key > limit || self.small.heap.is_empty() {
                        return None;
                    }
                    self.small.pop()
                }
            }
        };
        self.now = e.t;
        Some(e)
    }
    /// `pop_until` from the radix heap (without the `now` update).
    #[inline(never)]
    fn pop_large(&mut self, limit: u128) -> Option<Event> {
        let list_key = self.large.min_key();
        match self.slot {
            Some(e) if e.key() <= list_key => {
                if e.key() > limit {
                    return None;
                }
                self.slot = None;
                Some(e)
            }
            _ => {
                if list_key > limit || self.large.len == 0 {
                    return None;
                }
                let e = self.large.pop();
                if self.large.len < self.to_heap {
                    self.move_to_heap();
                }
                Some(e)
            }
        }
    }
    /// Events outstanding (the link slot included).
    pub fn len(&self) -> usize {
        self.small.heap.len() + self.large.len + self.slot.is_some() as usize
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

    use std::collections::BTreeMap;

    /// The reference the event list must pop like: an ordered map on `(time, seq)` (plus the
    /// link slot), numbering events the same way.
    struct MapQueue {
        map: BTreeMap<(u64, u64), Event>,
        slot: Option<Event>,
        seq: u64,
    }

    impl MapQueue {
        fn new() -> Self {
            MapQueue {
                map: BTreeMap::new(),
                slot: None,
                seq: 1,
            }
        }
        fn next_event(&mut self, t: Nanos, kind: Kind, arg: u32) -> Event {
            Event::numbered(t, &mut self.seq, kind, arg)
        }
        fn push(&mut self, t: Nanos, kind: Kind, arg: u32) {
            let e = self.next_event(t, kind, arg);
            self.map.insert((e.t, e.seq), e);
        }
        fn push_link(&mut self, t: Nanos, kind: Kind) {
            assert!(self.slot.is_none());
            self.slot = Some(self.next_event(t, kind, 0));
        }
        fn pop_until(&mut self, until: Nanos) -> Option<Event> {
            let first = self.map.values().next().copied();
            let e = match (first, self.slot) {
                (Some(f), Some(s)) if s.key() <= f.key() => s,
                (None, Some(s)) => s,
                (Some(f), _) => f,
                (None, None) => return None,
            };
            if e.t > until.0 {
                return None;
            }
            if self.slot == Some(e) {
                self.slot = None;
            } else {
                self.map.remove(&(e.t, e.seq));
            }
            Some(e)
        }
        fn len(&self) -> usize {
            self.map.len() + self.slot.is_some() as usize
        }
    }

    #[test]
    fn event_list_pops_like_an_ordered_map_in_either_structure_and_across_moves() {
        // The same seeded sequence of pushes, link-slot pushes and pops up to a random horizon
        // drives both queues; every pop must return the identical event (time, seq, kind,
        // flow). Times are monotone like the simulator's: each push is at or after the time of
        // the last popped event (`now`), with many ties at exactly `now` and at a few shared
        // future nanoseconds, plus link-like (µs), RTT-like (ms) and far (s) delays. Two time
        // bases: from 0, and from 2^62 ns so the high key bits are exercised too.
        // Thresholds: the simulator's; the radix heap from the first event; the heap only; and
        // moves every few dozen events.
        let modes = [(TO_RADIX, TO_HEAP), (0, 0), (usize::MAX, 0), (48, 12)];
        for ((seed, base), (to_radix, to_heap)) in [
            (0x9E37_79B9_7F4A_7C15u64, 0u64),
            (0xD1B5_4A32_D192_ED03, 1 << 62),
        ]
        .into_iter()
        .flat_map(|sb| modes.map(|m| (sb, m)))
        {
            let mut x = seed;
            let mut rnd = move |m: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % m
            };
            let mut q = EventQueue::with_capacity(64);
            (q.to_radix, q.to_heap) = (to_radix, to_heap);
            let mut r = MapQueue::new();
            let mut moves = 0u64;
            let mut now = base;
            let (mut pops, mut ties, mut link_pops, mut deepest, mut empty_horizons) =
                (0u64, 0u64, 0u64, 0usize, 0u64);
            let kinds = [
                Kind::SenderTimer,
                Kind::FwdArrive,
                Kind::RevArrive,
                Kind::Sample,
            ];
            for op in 0..300_000u32 {
                let was_radix = q.radix;
                // Phases: grow to a few thousand outstanding, then drain, then grow again.
                let grow = (op / 50_000) % 2 == 0;
                match rnd(if grow { 10 } else { 20 }) {
                    0..=5 => {
                        let dt = match rnd(10) {
                            0..=2 => 0,                         // tie at now
                            3 => 1_000 - now % 1_000,           // shared grid point
                            4..=6 => rnd(20_000),               // link-like
                            7..=8 => 50_000_000 + rnd(100_000), // RTT-like
                            _ => rnd(3_000_000_000),            // far (RTO, samples)
                        };
                        let (kind, arg) = (kinds[rnd(4) as usize], rnd(10_000) as u32);
                        q.push(Nanos(now + dt), kind, arg);
                        r.push(Nanos(now + dt), kind, arg);
                    }
                    6 if r.slot.is_none() => {
                        let t = Nanos(now + rnd(3) * rnd(12_000));
                        q.push_link(t, Kind::LinkDone);
                        r.push_link(t, Kind::LinkDone);
                    }
                    _ => {
                        // Pop everything due by a horizon a little ahead (sometimes none is),
                        // or, now and then while draining, seconds ahead (the list empties).
                        let ahead = if !grow && rnd(200) == 0 {
                            4_000_000_000
                        } else {
                            rnd(30_000)
                        };
                        let until = Nanos(now + ahead);
                        let mut any = false;
                        loop {
                            let (a, b) = (q.pop_until(until), r.pop_until(until));
                            assert_eq!(a, b, "op {op}: event list and ordered map disagree");
                            let Some(e) = a else { break };
                            assert!(e.t >= now && e.t <= until.0);
                            ties += u64::from(e.t == now);
                            link_pops += u64::from(e.kind == Kind::LinkDone);
                            now = e.t;
                            pops += 1;
                            any = true;
                        }
                        empty_horizons += u64::from(!any);
                    }
                }
                assert_eq!(q.len(), r.len());
                deepest = deepest.max(q.len());
                moves += u64::from(q.radix != was_radix);
            }
            // Drain both to the end.
            loop {
                let (a, b) = (q.pop_until(Nanos(u64::MAX)), r.pop_until(Nanos(u64::MAX)));
                assert_eq!(a, b);
                if a.is_none() {
                    break;
                }
                pops += 1;
            }
            assert!(q.is_empty() && r.len() == 0);
            // The sequence did exercise what it is meant to.
            assert!(pops > 150_000, "{pops} pops");
            assert!(ties > 20_000, "{ties} pops at an already popped time");
            assert!(link_pops > 5_000, "{link_pops} link-slot pops");
            assert!(deepest > 2_000, "{deepest} outstanding at most");
            assert!(
                empty_horizons > 1_000,
                "{empty_horizons} horizons with nothing due"
            );
            // Moves between the structures: none with a threshold never reached, one with the
            // radix heap from the start, back and forth with the others (each growth phase
            // passes `TO_RADIX`, each drain empties the list now and then).
            let want_moves = match (to_radix, to_heap) {
                (usize::MAX, _) => 0..=0,
                (0, 0) => 1..=1,
                (48, _) => 100..=u64::MAX,
                _ => 4..=u64::MAX,
            };
            assert!(
                want_moves.contains(&moves),
                "{moves} moves between heap and radix heap with thresholds ({to_radix}, {to_heap})"
            );
        }
    }

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
    fn queue_pops_like_a_sorted_list_under_random_interleaving() {
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
