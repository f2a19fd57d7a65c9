//! Bottleneck link models, sans-I/O: given a packet ready at `now`, when may it start and when
//! does its last byte leave. ConstantRate (exact serialisation), Mahimahi traces (mm-link
//! `LinkQueue::rationalize` semantics), 1 ms delivery bursts, random and Gilbert–Elliott loss,
//! delay jitter and rate steps.
//!
//! How the simulator drives a [`LinkModel`]: when the link is idle and the queue holds a packet,
//! it asks `next_service(now)` for the instant the link can take bytes, dequeues from the AQM at
//! that instant (so the AQM sees the real sojourn), and calls `transmit(start, bytes)` for the
//! finish time. Trace semantics follow Mahimahi's `link_queue.cc`: every opportunity carries
//! 1504 bytes, the bytes of one packet may span several opportunities, the bytes an opportunity
//! has left after a packet finishes serve the next packet only if that packet was queued by the
//! opportunity's timestamp, and an opportunity that finds the queue empty is wasted ("unused
//! txops"). Simplifications: a packet's delivery instant is the timestamp of the opportunity
//! that carries its last byte (as Mahimahi); rate steps change the rate mid-packet exactly
//! (piecewise-constant rate integration).

use crate::error::ParseError;
use crate::rng::Rng;
use crate::time::{Nanos, Rate};

/// Bytes per Mahimahi delivery opportunity (mm-link `PACKET_SIZE`: 1500 B + 4 B of framing).
pub const MAHIMAHI_TXOP_BYTES: u64 = 1504;

/// A serialising link. `next_service` then `transmit` for each packet, in time order.
pub trait LinkModel: Send {
    /// Earliest instant ≥ `now` at which the link can start sending a packet that is queued at
    /// `now`. `Nanos::MAX` when it never will (a `once` trace that has ended, a zero rate).
    fn next_service(&mut self, now: Nanos) -> Nanos;
    /// Send `bytes` starting at `start` (a value `next_service` returned); the instant the last
    /// byte leaves. `Nanos::MAX` when the link ends before the packet does.
    fn transmit(&mut self, start: Nanos, bytes: u32) -> Nanos;
    /// Delivery opportunities wasted because the queue was empty (0 for smooth links).
    fn unused_txops(&self) -> u64 {
        0
    }
    /// Bytes the link could deliver in `(from, to]` (an opportunity at `to` counts, one at
    /// `from` does not, matching packets counted by the instant they finish): the
    /// denominator of utilisation.
    fn capacity_bytes(&self, from: Nanos, to: Nanos) -> f64;
}

/// A piecewise-constant rate: `steps[0].0 == 0`, strictly increasing change instants.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSchedule {
    steps: Vec<(Nanos, Rate)>,
}

impl RateSchedule {
    /// A schedule that keeps `rate` for ever.
    pub fn constant(rate: Rate) -> Self {
        RateSchedule {
            steps: vec![(Nanos::ZERO, rate)],
        }
    }

    /// `base` from time 0, then each `(at, rate)` from `at` on. `at` must strictly increase.
    pub fn with_steps(base: Rate, steps: &[(Nanos, Rate)]) -> Result<Self, ParseError> {
        let mut v = vec![(Nanos::ZERO, base)];
        for &(at, r) in steps {
            let last = v[v.len() - 1].0;
            if at <= last && !(v.len() == 1 && at == Nanos::ZERO) {
                return Err(ParseError::new(
                    &at.to_string(),
                    "is not after the previous step; step times must strictly increase",
                ));
            }
            if at == Nanos::ZERO {
                v[0].1 = r;
            } else {
                v.push((at, r));
            }
        }
        Ok(RateSchedule { steps: v })
    }

    /// Index of the segment holding `t`, searching forward from `hint`.
    pub fn segment(&self, t: Nanos, mut hint: usize) -> usize {
        if hint >= self.steps.len() || self.steps[hint].0 > t {
            hint = 0;
        }
        while hint + 1 < self.steps.len() && self.steps[hint + 1].0 <= t {
            hint += 1;
        }
        hint
    }

    fn seg_end(&self, i: usize) -> Nanos {
        self.steps.get(i + 1).map_or(Nanos::MAX, |s| s.0)
    }

    /// The rate in force at time `t`.
    pub fn rate_at(&self, t: Nanos) -> Rate {
        self.steps[self.segment(t, 0)].1
    }

    /// Bits carried in `[from, to)`, as bit·ns / 1e9, exact in u128 bit·nanoseconds.
    fn bit_ns(&self, from: Nanos, to: Nanos) -> u128 {
        let mut acc = 0u128;
        let mut i = self.segment(from, 0);
        let mut t = from;
        while t < to {
            let end = self.seg_end(i).min(to);
            acc += self.steps[i].1.bps() as u128 * (end.0 - t.0) as u128;
            t = end;
            i += 1;
            if i >= self.steps.len() {
                break;
            }
        }
        acc
    }
}

/// Exact serialisation at a (possibly stepped) constant rate: a packet of `b` bytes takes
/// `b·8/rate` (rounded up to the ns), and back-to-back packets never exceed the rate.
#[derive(Clone, Debug)]
pub struct ConstantRate {
    sched: RateSchedule,
    hint: usize,
    /// Last (bytes, rate) → serialisation time: packets mostly share a size, so this saves
    /// a 128-bit division per packet.
    memo: (u32, u64, Nanos),
}

impl ConstantRate {
    /// A byte-accurate link at the constant `rate`.
    pub fn new(rate: Rate) -> Self {
        Self::with_schedule(RateSchedule::constant(rate))
    }
    /// A byte-accurate link whose rate follows `sched`.
    pub fn with_schedule(sched: RateSchedule) -> Self {
        ConstantRate {
            sched,
            hint: 0,
            memo: (0, 0, Nanos::ZERO),
        }
    }
}

impl LinkModel for ConstantRate {
    fn next_service(&mut self, now: Nanos) -> Nanos {
        // A zero-rate segment (outage) delays the start to the next non-zero rate.
        let mut i = self.sched.segment(now, self.hint);
        let mut t = now;
        while self.sched.steps[i].1.bps() == 0 {
            if i + 1 >= self.sched.steps.len() {
                return Nanos::MAX;
            }
            i += 1;
            t = self.sched.steps[i].0;
        }
        self.hint = i;
        t
    }

    fn transmit(&mut self, start: Nanos, bytes: u32) -> Nanos {
        let mut i = self.sched.segment(start, self.hint);
        self.hint = i;
        if i + 1 == self.sched.steps.len() {
            // Fast path: no further step.
            let r = self.sched.steps[i].1.bps();
            if self.memo.0 != bytes || self.memo.1 != r {
                self.memo = (bytes, r, self.sched.steps[i].1.tx_time(bytes as u64));
            }
            return start.saturating_add(self.memo.2);
        }
        // Remaining work in bit·ns; integrate the rate across step boundaries.
        let mut left = bytes as u128 * 8 * 1_000_000_000;
        let mut t = start;
        loop {
            let r = self.sched.steps[i].1.bps() as u128;
            let end = self.sched.seg_end(i);
            if end == Nanos::MAX {
                if r == 0 {
                    return Nanos::MAX;
                }
                return Nanos((t.0 as u128 + left.div_ceil(r)).min(u64::MAX as u128) as u64);
            }
            let cap = r * (end.0 - t.0) as u128;
            if r > 0 && left <= cap {
                return Nanos(t.0 + left.div_ceil(r) as u64);
            }
            left -= cap;
            t = end;
            i += 1;
        }
    }

    fn capacity_bytes(&self, from: Nanos, to: Nanos) -> f64 {
        self.sched.bit_ns(from, to) as f64 / 8e9
    }
}

/// The cursor over delivery opportunities shared by trace and 1 ms burst links.
#[derive(Clone, Debug, Default)]
struct OppCursor {
    /// Timestamp of the current opportunity group (all opportunities of one millisecond).
    t: Nanos,
    /// Bytes still unused in it.
    left: u64,
    /// Bytes it had.
    full: u64,
    /// The cursor has not reached any opportunity yet.
    fresh: bool,
    unused: u64,
}

/// A source of delivery opportunities in time order.
trait OppSource {
    /// Next group: (timestamp, bytes), or None when the link has ended.
    fn next_group(&mut self) -> Option<(Nanos, u64)>;
    /// Opportunities wasted when a group is abandoned with `left` of `full` bytes unused.
    fn wasted(&self, left: u64, full: u64) -> u64;
}

impl OppCursor {
    fn new() -> Self {
        OppCursor {
            fresh: true,
            ..Default::default()
        }
    }

    /// Move to the next group; false when there is none.
    fn advance<S: OppSource>(&mut self, src: &mut S) -> bool {
        match src.next_group() {
            Some((t, b)) => {
                self.t = t;
                self.left = b;
                self.full = b;
                self.fresh = false;
                true
            }
            None => {
                self.t = Nanos::MAX;
                self.left = 0;
                false
            }
        }
    }

    fn next_service<S: OppSource>(&mut self, src: &mut S, now: Nanos) -> Nanos {
        if self.fresh && !self.advance(src) {
            return Nanos::MAX;
        }
        // Bytes of an opportunity serve a packet only if it was queued by the opportunity's
        // timestamp (Mahimahi asserts arrival_time <= delivery time).
        while self.left == 0 || self.t < now {
            if self.t == Nanos::MAX {
                return Nanos::MAX;
            }
            if self.left > 0 {
                self.unused += src.wasted(self.left, self.full);
            }
            if !self.advance(src) {
                return Nanos::MAX;
            }
        }
        self.t
    }

    fn transmit<S: OppSource>(&mut self, src: &mut S, bytes: u32) -> Nanos {
        let mut rem = bytes as u64;
        loop {
            let take = rem.min(self.left);
            self.left -= take;
            rem -= take;
            if rem == 0 {
                return self.t;
            }
            if !self.advance(src) {
                return Nanos::MAX;
            }
        }
    }
}

/// A parsed Mahimahi trace: non-decreasing millisecond timestamps, one 1504-byte delivery
/// opportunity per line, grouped by millisecond.
#[derive(Clone, Debug, PartialEq)]
pub struct MahimahiTraceData {
    /// (timestamp_ms, opportunities at that millisecond), strictly increasing timestamps.
    groups: Vec<(u64, u32)>,
    lines: u64,
}

impl MahimahiTraceData {
    /// Parse the text of a trace file. Errors name the (1-based) line: non-numeric,
    /// decreasing, or a file without timestamps. Blank lines are skipped.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut groups: Vec<(u64, u32)> = Vec::new();
        let mut lines = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let s = raw.trim();
            if s.is_empty() {
                continue;
            }
            let ms: u64 = s.parse().map_err(|_| {
                ParseError::new(
                    s,
                    &format!(
                        "on line {} is not a timestamp; expected a non-negative integer (milliseconds)",
                        i + 1
                    ),
                )
            })?;
            match groups.last_mut() {
                Some(last) if last.0 == ms => last.1 += 1,
                Some(last) if last.0 > ms => {
                    return Err(ParseError::new(
                        s,
                        &format!(
                            "on line {} is smaller than the previous timestamp {}; timestamps must not decrease",
                            i + 1,
                            last.0
                        ),
                    ))
                }
                _ => groups.push((ms, 1)),
            }
            lines += 1;
        }
        if groups.is_empty() {
            return Err(ParseError::new(
                "",
                "trace is empty; expected one millisecond timestamp per line",
            ));
        }
        Ok(MahimahiTraceData { groups, lines })
    }

    /// (timestamp ms, opportunities at that millisecond) in one pass, strictly increasing.
    pub fn groups(&self) -> &[(u64, u32)] {
        &self.groups
    }
    /// Number of delivery opportunities (lines) in one pass.
    pub fn opportunities(&self) -> u64 {
        self.lines
    }
    /// The last timestamp: the loop period in ms.
    pub fn period_ms(&self) -> u64 {
        self.groups[self.groups.len() - 1].0
    }
    /// Mean rate of one pass in bits/s (lines · 1504 B over the period).
    pub fn mean_rate_bps(&self) -> f64 {
        self.lines as f64 * MAHIMAHI_TXOP_BYTES as f64 * 8.0 / (self.period_ms() as f64 * 1e-3)
    }
}

/// Iterates a trace's groups, looping with base += last timestamp unless `once`.
#[derive(Clone, Debug)]
struct TraceSource {
    data: MahimahiTraceData,
    once: bool,
    idx: usize,
    base_ms: u64,
}

impl OppSource for TraceSource {
    fn next_group(&mut self) -> Option<(Nanos, u64)> {
        if self.idx == self.data.groups.len() {
            if self.once {
                return None;
            }
            self.idx = 0;
            self.base_ms += self.data.period_ms();
        }
        let (ms, n) = self.data.groups[self.idx];
        self.idx += 1;
        Some((
            Nanos::from_ms(self.base_ms + ms),
            n as u64 * MAHIMAHI_TXOP_BYTES,
        ))
    }
    fn wasted(&self, left: u64, _full: u64) -> u64 {
        // Opportunities are used in turn; the whole ones left over found the queue empty.
        left / MAHIMAHI_TXOP_BYTES
    }
}

/// A link driven by a Mahimahi trace (mm-link semantics, see the module comment).
#[derive(Clone, Debug)]
pub struct MahimahiTrace {
    src: TraceSource,
    cur: OppCursor,
}

impl MahimahiTrace {
    /// A looping trace must last more than 0 ms (Mahimahi refuses it too).
    pub fn new(data: MahimahiTraceData, once: bool) -> Result<Self, ParseError> {
        if !once && data.period_ms() == 0 {
            return Err(ParseError::new(
                "0",
                "is the last timestamp; a looping trace must end after 0 ms (or set once = true)",
            ));
        }
        Ok(MahimahiTrace {
            src: TraceSource {
                data,
                once,
                idx: 0,
                base_ms: 0,
            },
            cur: OppCursor::new(),
        })
    }
    /// The parsed trace.
    pub fn data(&self) -> &MahimahiTraceData {
        &self.src.data
    }
}

impl LinkModel for MahimahiTrace {
    fn next_service(&mut self, now: Nanos) -> Nanos {
        self.cur.next_service(&mut self.src, now)
    }
    fn transmit(&mut self, _start: Nanos, bytes: u32) -> Nanos {
        self.cur.transmit(&mut self.src, bytes)
    }
    fn unused_txops(&self) -> u64 {
        self.cur.unused
    }
    fn capacity_bytes(&self, from: Nanos, to: Nanos) -> f64 {
        let mut src = TraceSource {
            idx: 0,
            base_ms: 0,
            ..self.src.clone()
        };
        let mut bytes = 0u64;
        while let Some((t, b)) = src.next_group() {
            if t > to {
                break;
            }
            if t > from {
                bytes += b;
            }
        }
        bytes as f64
    }
}

/// 1 ms ticks carrying the bytes a (stepped) rate accrues in the millisecond before each tick.
#[derive(Clone, Debug)]
struct TickSource {
    sched: RateSchedule,
    /// Next tick index k (tick at k ms carries [(k−1) ms, k ms)).
    k: u64,
    /// Cumulative bytes credited up to the previous tick.
    credited_bytes: u64,
}

impl OppSource for TickSource {
    fn next_group(&mut self) -> Option<(Nanos, u64)> {
        loop {
            let t = Nanos::from_ms(self.k);
            // Floor of the cumulative byte count keeps the long-run rate exact.
            let total = (self.sched.bit_ns(Nanos::ZERO, t) / 8_000_000_000) as u64;
            let b = total - self.credited_bytes;
            self.credited_bytes = total;
            self.k += 1;
            if b > 0 {
                return Some((t, b));
            }
            // A silent millisecond (zero rate): stop if the rate stays zero for ever.
            let i = self.sched.segment(t, 0);
            if i + 1 == self.sched.steps.len() && self.sched.steps[i].1.bps() == 0 {
                return None;
            }
        }
    }
    fn wasted(&self, left: u64, full: u64) -> u64 {
        (left == full) as u64
    }
}

/// Constant (or stepped) rate delivered in Mahimahi-style 1 ms bursts: each millisecond tick
/// releases the bytes the rate accrued over the previous millisecond.
#[derive(Clone, Debug)]
pub struct Txop1ms {
    src: TickSource,
    cur: OppCursor,
}

impl Txop1ms {
    /// 1 ms transmit opportunities carrying the bytes of `sched` per millisecond.
    pub fn new(sched: RateSchedule) -> Self {
        Txop1ms {
            src: TickSource {
                sched,
                k: 1,
                credited_bytes: 0,
            },
            cur: OppCursor::new(),
        }
    }
}

impl LinkModel for Txop1ms {
    fn next_service(&mut self, now: Nanos) -> Nanos {
        self.cur.next_service(&mut self.src, now)
    }
    fn transmit(&mut self, _start: Nanos, bytes: u32) -> Nanos {
        self.cur.transmit(&mut self.src, bytes)
    }
    fn unused_txops(&self) -> u64 {
        self.cur.unused
    }
    fn capacity_bytes(&self, from: Nanos, to: Nanos) -> f64 {
        self.src.sched.bit_ns(from, to) as f64 / 8e9
    }
}

/// A per-packet loss process.
pub trait LossModel: Send {
    /// Draw the fate of the next packet: true = lost.
    fn is_lost(&mut self) -> bool;
}

/// Independent losses with probability `p` per packet.
#[derive(Clone, Debug)]
pub struct RandomLoss {
    p: f64,
    rng: Rng,
}

impl RandomLoss {
    /// I.i.d. loss with probability `p` in [0, 1].
    pub fn new(p: f64, rng: Rng) -> Result<Self, crate::ParamError> {
        crate::error::check_range_f64("loss", p, 0.0, 1.0)?;
        Ok(RandomLoss { p, rng })
    }
}

impl LossModel for RandomLoss {
    fn is_lost(&mut self) -> bool {
        self.p > 0.0 && self.rng.bernoulli(self.p)
    }
}

/// Gilbert–Elliott two-state loss (as netem `loss gemodel p r 1-h 1-k`): per packet, first the
/// state moves (Good→Bad with `p`, Bad→Good with `r`), then the packet is lost with
/// `loss_good` in Good and `loss_bad` in Bad. Mean burst length in Bad is 1/r packets.
#[derive(Clone, Debug)]
pub struct GilbertElliott {
    p: f64,
    r: f64,
    loss_good: f64,
    loss_bad: f64,
    bad: bool,
    rng: Rng,
}

impl GilbertElliott {
    /// Gilbert–Elliott loss with validated probabilities, starting in Good.
    pub fn new(
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
        rng: Rng,
    ) -> Result<Self, crate::ParamError> {
        use crate::error::check_range_f64;
        check_range_f64("p", p, 0.0, 1.0)?;
        check_range_f64("r", r, 0.0, 1.0)?;
        check_range_f64("loss_good", loss_good, 0.0, 1.0)?;
        check_range_f64("loss_bad", loss_bad, 0.0, 1.0)?;
        Ok(GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
            bad: false,
            rng,
        })
    }
    /// Long-run loss rate: π_B·loss_bad + π_G·loss_good with π_B = p/(p+r).
    pub fn mean_loss(&self) -> f64 {
        if self.p + self.r == 0.0 {
            return self.loss_good;
        }
        let pi_b = self.p / (self.p + self.r);
        pi_b * self.loss_bad + (1.0 - pi_b) * self.loss_good
    }
}

impl LossModel for GilbertElliott {
    fn is_lost(&mut self) -> bool {
        let flip = if self.bad { self.r } else { self.p };
        if self.rng.bernoulli(flip) {
            self.bad = !self.bad;
        }
        let l = if self.bad {
            self.loss_bad
        } else {
            self.loss_good
        };
        self.rng.bernoulli(l)
    }
}

/// Extra one-way delay drawn uniformly from `[0, max]` per packet. Without `reorder` a packet
/// never overtakes the one before it on the same path (delay = max(drawn, previous arrival)),
/// as netem does when a rate or a FIFO follows the jitter; with `reorder` it may.
#[derive(Clone, Debug)]
pub struct Jitter {
    max: Nanos,
    reorder: bool,
    rng: Rng,
}

impl Jitter {
    /// Jitter up to `max`, with or without reordering.
    pub fn new(max: Nanos, reorder: bool, rng: Rng) -> Self {
        Jitter { max, reorder, rng }
    }
    /// Packets may overtake each other.
    pub fn reorders(&self) -> bool {
        self.reorder
    }
    /// Arrival instant for a packet that would arrive at `t` without jitter, on a path whose
    /// previous packet arrives at `prev_arrival`.
    pub fn arrival(&mut self, t: Nanos, prev_arrival: Nanos) -> Nanos {
        let extra = if self.max.0 == 0 {
            0
        } else {
            self.rng.below(self.max.0 + 1)
        };
        let a = t + Nanos(extra);
        if self.reorder {
            a
        } else {
            a.max(prev_arrival)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_serialises_exactly() {
        let mut l = ConstantRate::new(Rate::from_mbps(12));
        // 1500 B at 12 Mb/s = 1 ms.
        assert_eq!(l.next_service(Nanos::from_ms(5)), Nanos::from_ms(5));
        assert_eq!(l.transmit(Nanos::from_ms(5), 1500), Nanos::from_ms(6));
        // capacity over 1 s = 12e6/8 = 1.5e6 bytes.
        assert_eq!(
            l.capacity_bytes(Nanos::ZERO, Nanos::from_secs(1)),
            1_500_000.0
        );
    }

    #[test]
    fn rate_step_mid_packet_integrates_both_rates() {
        // 12 Mb/s until 0.5 ms, then 24 Mb/s. 1500 B = 12000 bits: 6000 bits in the first
        // 0.5 ms, the other 6000 bits at 24 Mb/s take 0.25 ms -> finish at 0.75 ms.
        let s = RateSchedule::with_steps(
            Rate::from_mbps(12),
            &[(Nanos::from_us(500), Rate::from_mbps(24))],
        )
        .unwrap();
        let mut l = ConstantRate::with_schedule(s);
        assert_eq!(l.transmit(Nanos::ZERO, 1500), Nanos::from_us(750));
        // After the step: 1500 B at 24 Mb/s = 0.5 ms.
        assert_eq!(l.transmit(Nanos::from_ms(1), 1500), Nanos::from_us(1500));
        // Capacity over [0, 1 ms): 6000 + 12000 bits = 2250 bytes.
        assert_eq!(l.capacity_bytes(Nanos::ZERO, Nanos::from_ms(1)), 2250.0);
    }

    #[test]
    fn zero_rate_segment_is_an_outage() {
        let s = RateSchedule::with_steps(
            Rate::from_mbps(12),
            &[
                (Nanos::from_ms(1), Rate(0)),
                (Nanos::from_ms(3), Rate::from_mbps(12)),
            ],
        )
        .unwrap();
        let mut l = ConstantRate::with_schedule(s);
        assert_eq!(l.next_service(Nanos::from_ms(2)), Nanos::from_ms(3));
        // Started at 0.5 ms: 6000 bits by 1 ms, pause 2 ms, 6000 more bits by 3.5 ms.
        assert_eq!(l.transmit(Nanos::from_us(500), 1500), Nanos::from_us(3500));
        assert!(RateSchedule::with_steps(
            Rate(1),
            &[(Nanos::from_ms(2), Rate(2)), (Nanos::from_ms(2), Rate(3))]
        )
        .is_err());
    }

    #[test]
    fn trace_parse_errors_name_the_line() {
        let e = MahimahiTraceData::parse("1\n2\nx\n").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
        let e = MahimahiTraceData::parse("1\n5\n4\n").unwrap_err();
        assert!(
            e.to_string().contains("line 3") && e.to_string().contains("5"),
            "{e}"
        );
        let e = MahimahiTraceData::parse("\n\n").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = MahimahiTraceData::parse("-3\n").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        let d = MahimahiTraceData::parse("0\n").unwrap();
        assert!(MahimahiTrace::new(d.clone(), false).is_err());
        assert!(MahimahiTrace::new(d, true).is_ok());
    }

    #[test]
    fn trace_of_one_line_is_12mbit_one_packet_per_ms() {
        // README.mahimahi: a file holding "1" is one MTU per millisecond, looping.
        let d = MahimahiTraceData::parse("1\n").unwrap();
        assert_eq!(d.period_ms(), 1);
        // 1504 B * 8 / 1 ms = 12.032 Mb/s.
        assert!((d.mean_rate_bps() - 12.032e6).abs() < 1.0);
        let mut l = MahimahiTrace::new(d, false).unwrap();
        assert_eq!(l.next_service(Nanos::ZERO), Nanos::from_ms(1));
        assert_eq!(l.transmit(Nanos::from_ms(1), 1500), Nanos::from_ms(1));
        // 4 bytes are left in the 1 ms opportunity: a packet queued by 1 ms may use them.
        assert_eq!(l.next_service(Nanos::from_ms(1)), Nanos::from_ms(1));
        // 1500 B: 4 at 1 ms, 1496 at 2 ms.
        assert_eq!(l.transmit(Nanos::from_ms(1), 1500), Nanos::from_ms(2));
        assert_eq!(l.unused_txops(), 0);
        // Idle until 10.5 ms: the 8 leftover bytes at 2 ms are not a whole opportunity;
        // opportunities at 3..=10 ms (8 of them) found the queue empty.
        assert_eq!(l.next_service(Nanos::from_us(10_500)), Nanos::from_ms(11));
        assert_eq!(l.unused_txops(), 8);
    }

    #[test]
    fn a_packet_may_span_opportunities_and_once_traces_end() {
        let d = MahimahiTraceData::parse("0\n0\n5\n9\n").unwrap();
        assert_eq!(d.opportunities(), 4);
        let mut l = MahimahiTrace::new(d, true).unwrap();
        assert_eq!(l.next_service(Nanos::ZERO), Nanos::ZERO);
        // 4000 B: 3008 at 0 ms, 992 at 5 ms.
        assert_eq!(l.transmit(Nanos::ZERO, 4000), Nanos::from_ms(5));
        // 512 bytes left at 5 ms; a packet queued at 6 ms waits for 9 ms.
        assert_eq!(l.next_service(Nanos::from_ms(6)), Nanos::from_ms(9));
        assert_eq!(l.transmit(Nanos::from_ms(9), 1000), Nanos::from_ms(9));
        // After the last line the link is gone.
        assert_eq!(l.next_service(Nanos::from_ms(10)), Nanos::MAX);
        // Capacity over (0, 9 ms]: the opportunities at 5 and 9 ms; over (0, 4 ms]: none.
        assert_eq!(
            l.capacity_bytes(Nanos::ZERO, Nanos::from_ms(9)),
            2.0 * 1504.0
        );
        assert_eq!(l.capacity_bytes(Nanos::ZERO, Nanos::from_ms(4)), 0.0);
    }

    #[test]
    fn looping_trace_adds_the_last_timestamp_to_the_base() {
        let d = MahimahiTraceData::parse("2\n4\n").unwrap();
        let l = MahimahiTrace::new(d, false).unwrap();
        // Opportunities at 2, 4, then 6, 8, 10, 12 ... : (0, 12 ms] holds 2..=12 = 6,
        // (3 ms, 11 ms] holds 4, 6, 8, 10 = 4.
        assert_eq!(
            l.capacity_bytes(Nanos::ZERO, Nanos::from_ms(12)),
            6.0 * 1504.0
        );
        assert_eq!(
            l.capacity_bytes(Nanos::from_ms(3), Nanos::from_ms(11)),
            4.0 * 1504.0
        );
    }

    #[test]
    fn txop1ms_releases_the_rate_in_millisecond_bursts() {
        // 50 Mb/s = 6250 bytes per ms.
        let mut l = Txop1ms::new(RateSchedule::constant(Rate::from_mbps(50)));
        assert_eq!(l.next_service(Nanos::from_us(300)), Nanos::from_ms(1));
        for _ in 0..4 {
            assert_eq!(l.transmit(Nanos::from_ms(1), 1500), Nanos::from_ms(1));
        }
        // 6250 - 6000 = 250 bytes left at 1 ms; the 5th packet ends at 2 ms.
        assert_eq!(l.transmit(Nanos::from_ms(1), 1500), Nanos::from_ms(2));
        // Idle until 5.5 ms: ticks 3, 4, 5 wasted whole (tick 2 was partly used).
        assert_eq!(l.next_service(Nanos::from_us(5500)), Nanos::from_ms(6));
        assert_eq!(l.unused_txops(), 3);
    }

    #[test]
    fn gilbert_elliott_long_run_loss_matches_stationary_rate() {
        // p = 0.01, r = 0.25, loss_bad = 1: pi_B = 0.01/0.26 = 0.03846.
        let mut g = GilbertElliott::new(0.01, 0.25, 0.0, 1.0, Rng::new(3)).unwrap();
        assert!((g.mean_loss() - 0.038_461_5).abs() < 1e-6);
        let n = 400_000;
        let lost = (0..n).filter(|_| g.is_lost()).count() as f64 / n as f64;
        // Bursts average 4 packets, so the variance is ~8x binomial; 5 sigma ~ 0.0024.
        assert!((lost - 0.038_46).abs() < 0.0025, "{lost}");
        assert!(GilbertElliott::new(1.5, 0.1, 0.0, 1.0, Rng::new(1)).is_err());
    }

    #[test]
    fn jitter_without_reorder_keeps_order() {
        let mut j = Jitter::new(Nanos::from_ms(2), false, Rng::new(9));
        let mut prev = Nanos::ZERO;
        for i in 0..1000u64 {
            let t = Nanos::from_us(10 * i);
            let a = j.arrival(t, prev);
            assert!(a >= t && a <= t + Nanos::from_ms(2).max(prev - t));
            assert!(a >= prev);
            prev = a;
        }
        let mut j = Jitter::new(Nanos::from_ms(2), true, Rng::new(9));
        let mut inversions = 0;
        let mut prev = Nanos::ZERO;
        for i in 0..1000u64 {
            let a = j.arrival(Nanos::from_us(10 * i), prev);
            inversions += (a < prev) as u32;
            prev = a;
        }
        // 10 us spacing vs 2 ms jitter: almost every other packet overtakes.
        assert!(inversions > 300, "{inversions}");
    }
}
