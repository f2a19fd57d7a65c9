//! CoDel AQM: drop or CE-mark at dequeue once the sojourn stayed above target for an interval.
//! RFC 8289 §5 as Linux `codel_impl.h` (`codel_dequeue`, `codel_should_drop`) and `sch_codel.c`.
//!
//! The CoDel state machine ([`CodelVars`] + [`CodelConfig`] + [`CodelStats`]) is shared with
//! FQ-CoDel, which keeps one [`CodelVars`] per flow (Linux `struct codel_vars`).
//!
//! Faithful to Linux: the control law `drop_next = t + interval/√count` uses Linux's Q0.16
//! reciprocal square root refined by one Newton step per drop (`codel_Newton_step`), so the gaps
//! are 99.998 ms, 50.0 ms, 56.25 ms, 48.8 ms, ... for interval 100 ms (exact √ would give
//! 100, 70.7, 57.7, 50 ms); the count-reuse rule on
//! re-entering the dropping state within 16·interval; no drop while the backlog left after the
//! head is ≤ `mtu_bytes` bytes; no cap on drops per dequeue (Linux has none);
//! `ce_threshold` CE-marks ECN-capable packets whose sojourn exceeds it, optionally only those
//! whose DS field matches `ce_threshold_selector` under `ce_threshold_mask`.
//!
//! Simplifications (named): time is kept in nanoseconds instead of Linux's 1024-ns `codel_time_t`
//! ticks (no 32-bit wrap-around); the control-law increment is floored at 1 ns (Linux's
//! `reciprocal_scale` may add 0 ticks); the DS field seen by the selector is the packet's two ECN bits
//! (the model has no DSCP, so DSCP reads as 0).

use super::{Aqm, AqmStats, QueueSample};
use crate::aqm::fifo::PacketQueue;
use crate::error::ParamError;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Nanos;

/// Linux `psched_mtu()` of an Ethernet device: 1500 B MTU + 14 B link header.
pub const DEFAULT_MTU_BYTES: u32 = 1514;
/// Q0.16 value of 1.0 (saturated): `~0U >> REC_INV_SQRT_SHIFT`.
const REC_INV_SQRT_ONE: u16 = u16::MAX;

/// Set CE on an ECN-capable packet, as Linux `INET_ECN_set_ce`: true for ECT(0), ECT(1) and
/// CE (already marked), false for Not-ECT.
pub(crate) fn set_ce(pkt: &mut Packet) -> bool {
    if pkt.ecn.is_ecn_capable() {
        pkt.ecn = crate::packet::Ecn::Ce;
        true
    } else {
        false
    }
}

/// The CoDel parameters the state machine reads (Linux `struct codel_params`).
#[derive(Clone, Debug, PartialEq)]
pub struct CodelConfig {
    /// Acceptable standing sojourn time (`codel_params.target`).
    pub target: Nanos,
    /// Window over which the sojourn must stay above target before dropping starts.
    pub interval: Nanos,
    /// Backlog (bytes left after the head) at or below which CoDel never drops.
    pub mtu_bytes: u32,
    /// CE-mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Mark when the sojourn exceeds this (`None` = Linux `CODEL_DISABLED_THRESHOLD`).
    pub ce_threshold: Option<Nanos>,
    /// Apply `ce_threshold` only where `(ds_field & mask) == selector`; mask 0 = all packets.
    pub ce_threshold_selector: u8,
    /// DS-field mask for the `ce_threshold` selector (0 = every packet).
    pub ce_threshold_mask: u8,
}

/// Counters of the state machine (Linux `struct codel_stats`, cumulative here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen at dequeue.
    pub maxpacket: u32,
    /// Packets dropped by the control law.
    pub drop_count: u64,
    /// Packets CE-marked instead of dropped by the control law.
    pub ecn_mark: u64,
    /// Packets CE-marked because their sojourn exceeded `ce_threshold`.
    pub ce_mark: u64,
    /// Packets that left with CE set by either rule (each packet once).
    pub marked_pkts: u64,
}

impl CodelStats {
    /// Carry one CoDel dequeue into the qdisc's counters: the control-law drops since
    /// `drops_before` (the `drop_count` before the dequeue) and the packets marked so far.
    pub(crate) fn account(&self, drops_before: u64, stats: &mut AqmStats) {
        stats.dropped_dequeue += self.drop_count - drops_before;
        stats.marked = self.marked_pkts;
    }

    /// The xstats `tc_codel_xstats` and `tc_fq_codel_qd_stats` both report, with the qdisc's
    /// tail-drop count `drop_overlimit`.
    pub(crate) fn xstats(&self, drop_overlimit: u64) -> Vec<(&'static str, f64)> {
        vec![
            ("maxpacket", self.maxpacket as f64),
            ("drop_overlimit", drop_overlimit as f64),
            ("ecn_mark", self.ecn_mark as f64),
            ("ce_mark", self.ce_mark as f64),
        ]
    }
}

/// Per-queue CoDel state (Linux `struct codel_vars`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    /// `count` at the last entry to the dropping state.
    pub lastcount: u32,
    /// In the dropping state (`codel_vars.dropping`).
    pub dropping: bool,
    /// 1/√count in Q0.16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn will have been above target for a whole interval (`None` = below).
    pub first_above_time: Option<Nanos>,
    /// Time of the next drop while dropping (or of the last one).
    pub drop_next: Nanos,
    /// Sojourn time of the last packet examined.
    pub ldelay: Nanos,
}

impl Default for CodelVars {
    fn default() -> Self {
        CodelVars {
            count: 0,
            lastcount: 0,
            dropping: false,
            rec_inv_sqrt: 0,
            first_above_time: None,
            drop_next: Nanos::ZERO,
            ldelay: Nanos::ZERO,
        }
    }
}

/// What CoDel needs from the queue it controls (Linux passes `dequeue_func` and `backlog`).
pub(crate) trait CodelQueue {
    /// Remove the head packet, updating all backlog accounting.
    fn dequeue_head(&mut self) -> Option<Packet>;
    /// Bytes left in the whole qdisc after the removal (Linux `sch->qstats.backlog`).
    fn backlog_bytes(&self) -> u64;
}

impl CodelQueue for PacketQueue {
    fn dequeue_head(&mut self) -> Option<Packet> {
        self.pop()
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes()
    }
}

impl CodelVars {
    /// One Newton iteration of 1/√count in Linux's fixed point (`codel_Newton_step`):
    /// x' = x/2 · (3 − count·x²). The wrapping arithmetic is Linux's own.
    fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u64) << 16; // Q0.32
        let invsqrt2 = (invsqrt * invsqrt) >> 32;
        let mut val = (3u64 << 32).wrapping_sub((self.count as u64).wrapping_mul(invsqrt2));
        val >>= 2; // keeps the next product inside 64 bits
        val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> 16) as u16;
    }

    /// `t + interval/√count` (`codel_control_law`), never less than one unit after `t`.
    fn control_law(t: Nanos, interval: Nanos, rec_inv_sqrt: u16) -> Nanos {
        let scale = (rec_inv_sqrt as u128) << 16; // Q0.32
        let inc = ((interval.as_ns() as u128 * scale) >> 32) as u64;
        t + Nanos(inc.max(1))
    }

    /// Linux `codel_should_drop`: has the sojourn of `pkt`, just taken from the queue, been
    /// ≥ target for more than an interval?
    fn should_drop<Q: CodelQueue>(
        &mut self,
        cx: &mut DequeueCtx<'_, Q>,
        pkt: Option<&Packet>,
    ) -> bool {
        let Some(pkt) = pkt else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = pkt.sojourn(cx.now);
        cx.stats.maxpacket = cx.stats.maxpacket.max(pkt.bytes);
        if self.ldelay < cx.cfg.target || cx.q.backlog_bytes() <= cx.cfg.mtu_bytes as u64 {
            // Went below target (or too little queue to matter): stay below for an interval.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(cx.now + cx.cfg.interval);
                false
            }
            Some(t) => cx.now > t,
        }
    }

    /// Linux `codel_dequeue`: take the next packet from `q`, dropping (pushed onto `dropped`) or
    /// CE-marking as the control law says, then apply `ce_threshold`. The steps:
    /// [`should_drop`](Self::should_drop) on the head, then either
    /// [`signal_on_schedule`](Self::signal_on_schedule) (already dropping) or
    /// [`enter_dropping`](Self::enter_dropping) (should start), then
    /// [`ce_threshold_mark`](Self::ce_threshold_mark).
    pub(crate) fn dequeue<Q: CodelQueue>(
        &mut self,
        q: &mut Q,
        cfg: &CodelConfig,
        stats: &mut CodelStats,
        now: Nanos,
        dropped: &mut Vec<Packet>,
    ) -> Option<Packet> {
        let mut cx = DequeueCtx {
            q,
            cfg,
            stats,
            now,
            dropped,
        };
        let Some(skb) = cx.q.dequeue_head() else {
            // Linux clears only `dropping` here (RFC 8289's pseudocode also clears
            // first_above_time); this matters in FQ-CoDel, where a flow can empty while the
            // qdisc backlog stays above one MTU.
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(&mut cx, Some(&skb));
        let (skb, ecn_marked) = if self.dropping {
            if drop {
                self.signal_on_schedule(&mut cx, skb)
            } else {
                // Sojourn went below target: leave the dropping state.
                self.dropping = false;
                (Some(skb), false)
            }
        } else if drop {
            self.enter_dropping(&mut cx, skb)
        } else {
            (Some(skb), false)
        };
        let mut skb = skb?;
        let ce_marked = self.ce_threshold_mark(&mut cx, &mut skb);
        if ecn_marked || ce_marked {
            cx.stats.marked_pkts += 1;
        }
        Some(skb)
    }

    /// The dropping state's loop in `codel_dequeue`: while the next signal is due, count it and
    /// CE-mark `skb` (which ends the loop) or drop it and look at the next packet, leaving the
    /// dropping state once the queue no longer qualifies. Returns the packet to send and whether
    /// the control law marked it.
    ///
    /// Several drops may be due at once when the backlog is large. No cap (Linux has none): the
    /// loop ends when the queue no longer qualifies (an empty queue or a backlog ≤ MTU leaves the
    /// dropping state) or the schedule catches up.
    fn signal_on_schedule<Q: CodelQueue>(
        &mut self,
        cx: &mut DequeueCtx<'_, Q>,
        skb: Packet,
    ) -> (Option<Packet>, bool) {
        let mut skb = Some(skb);
        while self.dropping && cx.now >= self.drop_next {
            let Some(mut p) = skb.take() else { break };
            self.count = self.count.wrapping_add(1);
            self.newton_step();
            if cx.mark(&mut p) {
                self.drop_next =
                    Self::control_law(self.drop_next, cx.cfg.interval, self.rec_inv_sqrt);
                return (Some(p), true);
            }
            skb = cx.drop_and_take_next(p);
            if self.should_drop(cx, skb.as_ref()) {
                self.drop_next =
                    Self::control_law(self.drop_next, cx.cfg.interval, self.rec_inv_sqrt);
            } else {
                self.dropping = false;
            }
        }
        (skb, false)
    }

    /// `codel_dequeue` when not dropping but it should be: signal once (CE-mark `skb`, or drop
    /// it and take the next packet), enter the dropping state with a fresh or reused count, and
    /// schedule the next signal one control-law step from now. Returns the packet to send and
    /// whether it was marked.
    fn enter_dropping<Q: CodelQueue>(
        &mut self,
        cx: &mut DequeueCtx<'_, Q>,
        mut skb: Packet,
    ) -> (Option<Packet>, bool) {
        let out = if cx.mark(&mut skb) {
            (Some(skb), true)
        } else {
            let next = cx.drop_and_take_next(skb);
            // Linux recomputes `drop` here only for its side effects (ldelay,
            // first_above_time); the dropping state is entered regardless.
            self.should_drop(cx, next.as_ref());
            (next, false)
        };
        self.dropping = true;
        self.restart_count(cx.now, cx.cfg.interval);
        self.drop_next = Self::control_law(cx.now, cx.cfg.interval, self.rec_inv_sqrt);
        out
    }

    /// The count on entering the dropping state: if we went above target soon after leaving it,
    /// the drop rate that controlled the queue last time is a good starting point (RFC 8289
    /// §5.4, Linux's `delta > 1` rule within 16 intervals); otherwise start again at 1.
    fn restart_count(&mut self, now: Nanos, interval: Nanos) {
        let delta = self.count.wrapping_sub(self.lastcount);
        let recent = now < self.drop_next.saturating_add(Nanos(interval.as_ns() * 16));
        if delta > 1 && recent {
            self.count = delta;
            self.newton_step();
        } else {
            self.count = 1;
            self.rec_inv_sqrt = REC_INV_SQRT_ONE;
        }
        self.lastcount = self.count;
    }

    /// The `ce_threshold` step at the end of `codel_dequeue`: CE-mark an ECN-capable packet
    /// whose sojourn (`ldelay`) exceeds the threshold and whose DS field the selector picks,
    /// whatever the control law did. True when this step marked it.
    fn ce_threshold_mark<Q: CodelQueue>(
        &self,
        cx: &mut DequeueCtx<'_, Q>,
        skb: &mut Packet,
    ) -> bool {
        let Some(th) = cx.cfg.ce_threshold else {
            return false;
        };
        if self.ldelay <= th {
            return false;
        }
        let selected = cx.cfg.ce_threshold_mask == 0
            || (skb.ecn.bits() & cx.cfg.ce_threshold_mask) == cx.cfg.ce_threshold_selector;
        if selected && set_ce(skb) {
            cx.stats.ce_mark += 1;
            return true;
        }
        false
    }
}

/// What one `codel_dequeue` call works on: the queue (Linux `ctx` with `dequeue_func` and
/// `drop_func`), the parameters, the counters, the time, and where dropped packets go.
struct DequeueCtx<'a, Q> {
    q: &'a mut Q,
    cfg: &'a CodelConfig,
    stats: &'a mut CodelStats,
    now: Nanos,
    dropped: &'a mut Vec<Packet>,
}

impl<Q: CodelQueue> DequeueCtx<'_, Q> {
    /// CE-mark `pkt` in place of a drop when ECN is on and the packet is ECN-capable.
    fn mark(&mut self, pkt: &mut Packet) -> bool {
        if self.cfg.ecn && set_ce(pkt) {
            self.stats.ecn_mark += 1;
            return true;
        }
        false
    }

    /// Drop `pkt` (Linux `drop_func`) and take the next packet (`dequeue_func`).
    fn drop_and_take_next(&mut self, pkt: Packet) -> Option<Packet> {
        self.dropped.push(pkt);
        self.stats.drop_count += 1;
        self.q.dequeue_head()
    }
}

/// Parameters of [`Codel`] (Linux `tc qdisc ... codel`).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodelParams {
    /// Acceptable standing sojourn time (Linux default 5 ms).
    pub target: Nanos,
    /// Sliding window over which the sojourn must stay above target (default 100 ms).
    pub interval: Nanos,
    /// Buffer in packets (Linux `DEFAULT_CODEL_LIMIT` 1000).
    pub limit: u64,
    /// CE-mark ECN-capable packets instead of dropping (Linux `codel_params_init`: off for the
    /// codel qdisc; fq_codel turns it on).
    pub ecn: bool,
    /// Mark ECN-capable packets whose sojourn exceeds this (off by default).
    pub ce_threshold: Option<Nanos>,
    /// Device MTU incl. link header (`psched_mtu`): no drop while ≤ this many bytes are queued
    /// behind the head.
    pub mtu_bytes: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: Nanos::from_ms(5),
            interval: Nanos::from_ms(100),
            limit: 1000,
            ecn: false,
            ce_threshold: None,
            mtu_bytes: DEFAULT_MTU_BYTES,
        }
    }
}

/// Range checks shared with FQ-CoDel.
pub(crate) fn validate_codel_times(target: Nanos, interval: Nanos) -> Result<(), ParamError> {
    let max = Nanos::from_secs(60);
    if target < Nanos::from_us(1) || target > max {
        return Err(ParamError::new(
            "target",
            target,
            "a duration in [1us, 60s]",
        ));
    }
    if interval < Nanos::from_us(1) || interval > max {
        return Err(ParamError::new(
            "interval",
            interval,
            "a duration in [1us, 60s]",
        ));
    }
    Ok(())
}

pub(crate) fn validate_mtu(mtu: u32) -> Result<(), ParamError> {
    if !(68..=65_535).contains(&mtu) {
        return Err(ParamError::new(
            "mtu_bytes",
            mtu,
            "an integer in [68, 65535] (bytes)",
        ));
    }
    Ok(())
}

impl CodelParams {
    /// Check every parameter against its allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        validate_codel_times(self.target, self.interval)?;
        if self.limit == 0 {
            return Err(ParamError::new(
                "limit",
                self.limit,
                "an integer >= 1 (packets)",
            ));
        }
        validate_mtu(self.mtu_bytes)?;
        Ok(())
    }
}

/// Single-queue CoDel (Linux `sch_codel`): tail drop at `limit`, CoDel at dequeue.
#[derive(Clone, Debug)]
pub struct Codel {
    cfg: CodelConfig,
    limit: u64,
    q: PacketQueue,
    vars: CodelVars,
    cstats: CodelStats,
    stats: AqmStats,
    /// Tail drops (Linux xstat `drop_overlimit`).
    drop_overlimit: u64,
}

impl Codel {
    /// CoDel is deterministic; `rng` is accepted for a uniform constructor shape.
    pub fn new(params: CodelParams, _rng: Rng) -> Result<Self, ParamError> {
        params.validate()?;
        Ok(Codel {
            cfg: CodelConfig {
                target: params.target,
                interval: params.interval,
                mtu_bytes: params.mtu_bytes,
                ecn: params.ecn,
                ce_threshold: params.ce_threshold,
                ce_threshold_selector: 0,
                ce_threshold_mask: 0,
            },
            limit: params.limit,
            q: PacketQueue::with_capacity(params.limit.min(1 << 16) as usize),
            vars: CodelVars::default(),
            cstats: CodelStats::default(),
            stats: AqmStats::default(),
            drop_overlimit: 0,
        })
    }

    /// The CoDel state (for tests and recorders).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
    /// The CoDel counters (`struct codel_stats`).
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }
}

impl Aqm for Codel {
    fn kind(&self) -> &'static str {
        "codel"
    }
    fn enqueue(&mut self, mut pkt: Packet, now: Nanos) -> Result<(), Packet> {
        if self.q.len() >= self.limit {
            self.drop_overlimit += 1;
            self.stats.dropped_enqueue += 1;
            return Err(pkt);
        }
        pkt.enqueued_at = now;
        self.q.push(pkt);
        self.stats.enqueued += 1;
        Ok(())
    }
    fn dequeue(&mut self, now: Nanos, dropped: &mut Vec<Packet>) -> Option<Packet> {
        let drops_before = self.cstats.drop_count;
        let p = self
            .vars
            .dequeue(&mut self.q, &self.cfg, &mut self.cstats, now, dropped);
        self.cstats.account(drops_before, &mut self.stats);
        if p.is_some() {
            self.stats.dequeued += 1;
        }
        p
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
    /// Linux `tc_codel_xstats` (times in µs; `drop_next` relative to `now`, signed).
    fn xstats(&self, now: Nanos) -> Vec<(&'static str, f64)> {
        let drop_next_us = if self.vars.dropping {
            (self.vars.drop_next.as_ns() as f64 - now.as_ns() as f64) * 1e-3
        } else {
            0.0
        };
        let mut x = self.cstats.xstats(self.drop_overlimit);
        x.extend([
            ("count", self.vars.count as f64),
            ("lastcount", self.vars.lastcount as f64),
            ("ldelay", self.vars.ldelay.as_us_f64()),
            ("drop_next", drop_next_us),
            ("dropping", self.vars.dropping as u8 as f64),
        ]);
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;

    const MS: u64 = 1_000_000;

    fn codel(params: CodelParams) -> Codel {
        Codel::new(params, Rng::new(1)).unwrap()
    }

    #[test]
    fn xstats_give_drop_next_in_microseconds_from_now_while_dropping() {
        // tc_codel_xstats: drop_next = codel_time_to_us(drop_next − now), signed; 0 when
        // not dropping.
        let mut c = codel(CodelParams::default());
        let x = |c: &Codel, now| -> std::collections::HashMap<_, _> {
            c.xstats(now).into_iter().collect()
        };
        assert_eq!(x(&c, Nanos(100 * MS))["drop_next"], 0.0);
        c.vars.dropping = true;
        c.vars.drop_next = Nanos(105 * MS);
        assert_eq!(x(&c, Nanos(100 * MS))["drop_next"], 5_000.0);
        assert_eq!(x(&c, Nanos(107 * MS))["drop_next"], -2_000.0);
        c.vars.count = 3;
        c.vars.lastcount = 2;
        let all = x(&c, Nanos(100 * MS));
        assert_eq!(
            (all["count"], all["lastcount"], all["dropping"]),
            (3.0, 2.0, 1.0)
        );
    }

    /// Linux `codel_dequeue`'s drop loop has no cap: it runs while `now ≥ drop_next` and the
    /// next head still qualifies, however many drops that takes in one call.
    #[test]
    fn drop_loop_is_not_capped() {
        let mut c = codel(CodelParams::default()); // target 5 ms, interval 100 ms, MTU 1514
        for id in 0..400 {
            c.enqueue(Packet::new(id, 0, 1514, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        let mut d = Vec::new();
        // 10 ms: P0, 399·1514 B left → first_above_time = 110 ms, no drop.
        assert_eq!(c.dequeue(Nanos(10 * MS), &mut d).unwrap().id, 0);
        // 111 ms > 110 ms: drop P1, return P2; dropping, count 1, drop_next ≈ 211 ms.
        assert_eq!(c.dequeue(Nanos(111 * MS), &mut d).unwrap().id, 2);
        assert_eq!(d.len(), 1);
        d.clear();
        // 100 s: the gaps interval/√count over ~400 drops sum to ≈ 2·0.1·√400 = 4 s ≪ 100 s,
        // so every drop is due. P_j is dropped while the packet after it leaves > 1514 B
        // behind: P3..P397 (395 drops); P398 leaves 1514 B (≤ MTU) → dropping ends, returned.
        assert_eq!(c.dequeue(Nanos(100_000 * MS), &mut d).unwrap().id, 398);
        assert_eq!(d.len(), 395);
        assert_eq!((d[0].id, d[394].id), (3, 397));
        assert_eq!(c.backlog_pkts(), 1);
        assert!(!c.vars().dropping);
    }

    /// Linux `codel_dump_stats` (tc_codel_xstats) right after the first drop: ldelay,
    /// maxpacket and the mark counters, as `codel_should_drop` leaves them (codel_impl.h).
    #[test]
    fn xstats_after_the_first_drop_report_ldelay_and_maxpacket() {
        let mut c = codel(CodelParams::default()); // target 5 ms, interval 100 ms
        for id in 0..400 {
            c.enqueue(Packet::new(id, 0, 1514, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        let mut d = Vec::new();
        c.dequeue(Nanos(10 * MS), &mut d); // first_above_time = 110 ms
        c.dequeue(Nanos(111 * MS), &mut d); // drops P1, returns P2
        let x: std::collections::HashMap<_, _> = c.xstats(Nanos(150 * MS)).into_iter().collect();
        // ldelay: P2's sojourn when examined at 111 ms, entered at 0 → 111 000 µs.
        assert_eq!(x["ldelay"], 111_000.0);
        // maxpacket: the largest packet codel_should_drop has seen, 1514 B.
        assert_eq!(x["maxpacket"], 1514.0);
        // Entering the dropping state: count = lastcount = 1 (not the control law's inputs).
        assert_eq!((x["count"], x["lastcount"]), (1.0, 1.0));
        assert_eq!(
            (x["drop_overlimit"], x["ecn_mark"], x["ce_mark"]),
            (0.0, 0.0, 0.0)
        );
    }

    /// Fill with `n` packets of 1500 B enqueued at t = 0.
    fn fill(c: &mut Codel, n: u64, ecn: Ecn) {
        for i in 0..n {
            c.enqueue(Packet::new(i, 0, 1500, ecn), Nanos::ZERO)
                .unwrap();
        }
    }

    /// Dequeue once at `t`; return (packet, number dropped).
    fn deq(c: &mut Codel, t: u64) -> (Option<Packet>, usize) {
        let mut d = Vec::new();
        let p = c.dequeue(Nanos(t), &mut d);
        (p, d.len())
    }

    #[test]
    fn no_drop_while_sojourn_below_target() {
        // Packet k enters at k ms; from k = 4 on, one packet leaves at k ms + 0.999999 ms, i.e.
        // packet k-4 after 4.999999 ms < 5 ms target, with packets k-3..k (6000 B > one MTU)
        // still queued. For 2 s (20 intervals) CoDel must stay in the "below" state.
        let mut c = codel(CodelParams::default());
        for k in 0..2000u64 {
            c.enqueue(Packet::new(k, 0, 1500, Ecn::NotEct), Nanos(k * MS))
                .unwrap();
            if k >= 4 {
                let (p, nd) = deq(&mut c, k * MS + 999_999);
                assert_eq!(nd, 0);
                assert_eq!(p.unwrap().id, k - 4);
                assert!(c.vars().first_above_time.is_none());
            }
        }
        assert_eq!(c.stats().dropped_dequeue, 0);
        // Contrast: the next packet (1996, entered at 1996 ms) left at exactly 2001 ms has a
        // 5 ms sojourn, which is not below target: the interval timer starts.
        deq(&mut c, 2001 * MS);
        assert_eq!(c.vars().first_above_time, Some(Nanos(2101 * MS)));
    }

    #[test]
    fn drop_times_follow_linux_control_law() {
        // 400 packets of 1500 B all enqueued at t = 0, so the head sojourn equals `now` and the
        // backlog stays far above one MTU. Interval I = 100 ms = 100_000_000 ns.
        //
        // t = 5 ms: sojourn 5 ms is not below target -> first_above_time = 105 ms; no drop.
        // A drop needs now > first_above_time, so the first drop is at 105 ms + 1 ns:
        //   d1 = 105_000_001.
        // Entering the dropping state: count = 1, rec_inv_sqrt = 0xFFFF (Q0.16 ~ 1.0);
        //   drop_next = d1 + (I * (0xFFFF << 16)) >> 32 = d1 + 99_998_474 = 204_998_475 = d2.
        // At d2: count = 2, Newton from x = 0xFFFF/2^16: x' = x/2 (3 - 2x^2) -> 32769
        //   (0.500015); gap = (I * (32769 << 16)) >> 32 = 50_001_525 -> d3 = 255_000_000.
        // count = 3: x' = 36864 (0.5625) -> gap 56_250_000 -> d4 = 311_250_000.
        // count = 4: x' = 31968 (0.48779) -> gap 48_779_296 -> d5 = 360_029_296.
        // count = 5: x' = 28935 (0.44151) -> gap 44_151_306 -> d6 = 404_180_602.
        // count = 6: x' = 26481 (0.40407) -> gap 40_406_799 -> d7 = 444_587_401.
        // (Exact sqrt would give gaps 100, 70.7, 57.7, 50, 44.7, 40.8 ms: Linux's one Newton step
        // per drop is 29% short at count 2 and within 1.2% from count 5 on.)
        let expected = [
            105_000_001u64,
            204_998_475,
            255_000_000,
            311_250_000,
            360_029_296,
            404_180_602,
            444_587_401,
        ];
        let mut c = codel(CodelParams::default());
        fill(&mut c, 400, Ecn::NotEct);
        assert_eq!(deq(&mut c, 5 * MS).1, 0);
        assert_eq!(c.vars().first_above_time, Some(Nanos(105 * MS)));
        for (k, &d) in expected.iter().enumerate() {
            // One ns before the due time: a packet leaves, nothing is dropped.
            let (p, nd) = deq(&mut c, d - 1);
            assert!(p.is_some());
            assert_eq!(nd, 0, "early drop before d{}", k + 1);
            // At the due time: exactly one drop.
            let (p, nd) = deq(&mut c, d);
            assert!(p.is_some());
            assert_eq!(nd, 1, "no drop at d{} = {d}", k + 1);
            assert_eq!(c.vars().count, k as u32 + 1);
            assert!(c.vars().dropping);
        }
        assert_eq!(c.stats().dropped_dequeue, expected.len() as u64);
        let s = c.stats();
        assert_eq!(s.enqueued, s.dequeued + s.dropped_dequeue + s.backlog_pkts);
    }

    #[test]
    fn ect_packets_are_marked_at_the_drop_times() {
        // Same schedule as above with ecn on and ECT(0) packets: CE instead of drops, and the
        // marks come at the same instants (count and drop_next advance identically).
        let mut c = codel(CodelParams {
            ecn: true,
            ..Default::default()
        });
        fill(&mut c, 100, Ecn::Ect0);
        deq(&mut c, 5 * MS);
        let (p, nd) = deq(&mut c, 105 * MS);
        assert_eq!((p.unwrap().ecn, nd), (Ecn::Ect0, 0));
        let (p, nd) = deq(&mut c, 105_000_001);
        assert_eq!((p.unwrap().ecn, nd), (Ecn::Ce, 0));
        let (p, _) = deq(&mut c, 204_998_474);
        assert_eq!(p.unwrap().ecn, Ecn::Ect0);
        let (p, nd) = deq(&mut c, 204_998_475);
        assert_eq!((p.unwrap().ecn, nd), (Ecn::Ce, 0));
        assert_eq!(c.codel_stats().ecn_mark, 2);
        assert_eq!(c.stats().marked, 2);
        assert_eq!(c.stats().dropped_dequeue, 0);
        // A Not-ECT packet at the next due time (255 ms) is dropped even with ecn on.
        let mut c2 = codel(CodelParams {
            ecn: true,
            ..Default::default()
        });
        fill(&mut c2, 3, Ecn::NotEct);
        for i in 3..100 {
            c2.enqueue(Packet::new(i, 0, 1500, Ecn::Ect0), Nanos::ZERO)
                .unwrap();
        }
        deq(&mut c2, 5 * MS);
        // Head is Not-ECT (id 1): dropped; the next (id 2, Not-ECT) is returned.
        let (p, nd) = deq(&mut c2, 105_000_001);
        assert_eq!((p.unwrap().id, nd), (2, 1));
    }

    #[test]
    fn count_is_reused_when_reentering_soon() {
        // Drive to count = 4 (drops d1..d4 above), then let the sojourn fall below target, then
        // rise again within 16 intervals of drop_next: Linux sets count = count - lastcount
        // = 4 - 1 = 3 (delta > 1) instead of 1.
        let mut c = codel(CodelParams::default());
        fill(&mut c, 60, Ecn::NotEct);
        deq(&mut c, 5 * MS);
        for d in [105_000_001u64, 204_998_475, 255_000_000, 311_250_000] {
            assert_eq!(deq(&mut c, d).1, 1);
        }
        assert_eq!((c.vars().count, c.vars().lastcount), (4, 1));
        // Drain the old packets without drops: all remaining 60 - 4 - 4 - 1 = 51 packets go out
        // at t = 311.25 ms (drop_next = 360 ms is not due).
        while deq(&mut c, 311_250_000).0.is_some() {}
        // Empty queue: dequeue returns None and leaves the dropping state.
        assert!(!c.vars().dropping);
        // New burst at 320 ms, served from 325 ms with sojourn >= 5 ms.
        for i in 0..50 {
            c.enqueue(Packet::new(100 + i, 0, 1500, Ecn::NotEct), Nanos(320 * MS))
                .unwrap();
        }
        assert_eq!(deq(&mut c, 325 * MS).1, 0); // first_above_time = 425 ms
        let (_, nd) = deq(&mut c, 425 * MS + 1);
        assert_eq!(nd, 1);
        // 425 ms < drop_next (360.03 ms) + 16 * 100 ms, delta = 4 - 1 = 3 > 1 -> count = 3.
        assert_eq!((c.vars().count, c.vars().lastcount), (3, 3));
    }

    /// Count 4 and drop_next = 360_029_296 ns as in `count_is_reused_when_reentering_soon`,
    /// then an empty queue; a new burst enqueued at `burst_ms` is first served 5 ms later and
    /// the first drop is taken at `drop_at` ns. Returns the count after that drop.
    fn count_after_reentry(burst_ms: u64, drop_at: u64) -> u32 {
        let mut c = codel(CodelParams::default());
        fill(&mut c, 60, Ecn::NotEct);
        deq(&mut c, 5 * MS);
        for d in [105_000_001u64, 204_998_475, 255_000_000, 311_250_000] {
            assert_eq!(deq(&mut c, d).1, 1);
        }
        while deq(&mut c, 311_250_000).0.is_some() {}
        assert!(!c.vars().dropping && c.vars().drop_next == Nanos(360_029_296));
        for i in 0..50 {
            c.enqueue(
                Packet::new(100 + i, 0, 1500, Ecn::NotEct),
                Nanos(burst_ms * MS),
            )
            .unwrap();
        }
        assert_eq!(deq(&mut c, (burst_ms + 5) * MS).1, 0);
        assert_eq!(deq(&mut c, drop_at).1, 1);
        c.vars().count
    }

    #[test]
    fn count_reuse_window_is_sixteen_intervals() {
        // Linux codel_dequeue: reuse when `now - drop_next < 16 * interval`, i.e. before
        // 360_029_296 + 1_600_000_000 = 1_960_029_296 ns. 12 intervals after drop_next is
        // inside that window (an 8-interval window would restart at count 1).
        assert_eq!(count_after_reentry(1_400, 1_560_029_296), 3);
        // The last nanosecond inside the window reuses; the boundary itself does not.
        assert_eq!(count_after_reentry(1_800, 1_960_029_295), 3);
        assert_eq!(count_after_reentry(1_800, 1_960_029_296), 1);
    }

    #[test]
    fn no_drop_with_at_most_one_mtu_behind_the_head() {
        // Two packets: after taking the head, 1500 B <= mtu 1514 remain -> never drop.
        let mut c = codel(CodelParams::default());
        fill(&mut c, 2, Ecn::NotEct);
        assert_eq!(deq(&mut c, 500 * MS).1, 0);
        assert!(c.vars().first_above_time.is_none());
    }

    #[test]
    fn ce_threshold_marks_late_ect_packets_only() {
        // ce_threshold 1 ms: sojourn 1 ms exactly is not marked (strictly after), 1 ms + 1 ns is
        // for ECN-capable packets; Not-ECT is left alone. Target 5 ms is never reached.
        let mut c = codel(CodelParams {
            ce_threshold: Some(Nanos::from_ms(1)),
            ..Default::default()
        });
        c.enqueue(Packet::new(0, 0, 1500, Ecn::Ect1), Nanos::ZERO)
            .unwrap();
        c.enqueue(Packet::new(1, 0, 1500, Ecn::Ect1), Nanos::ZERO)
            .unwrap();
        c.enqueue(Packet::new(2, 0, 1500, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        c.enqueue(Packet::new(3, 0, 1500, Ecn::Ect0), Nanos::ZERO)
            .unwrap();
        assert_eq!(deq(&mut c, MS).0.unwrap().ecn, Ecn::Ect1);
        assert_eq!(deq(&mut c, MS + 1).0.unwrap().ecn, Ecn::Ce);
        assert_eq!(deq(&mut c, 2 * MS).0.unwrap().ecn, Ecn::NotEct);
        assert_eq!(deq(&mut c, 2 * MS).0.unwrap().ecn, Ecn::Ce);
        assert_eq!(c.codel_stats().ce_mark, 2);
        assert_eq!(c.stats().marked, 2);
    }

    #[test]
    fn tail_drop_at_limit_and_validation() {
        let mut c = codel(CodelParams {
            limit: 2,
            ..Default::default()
        });
        fill(&mut c, 2, Ecn::NotEct);
        assert!(c
            .enqueue(Packet::new(9, 0, 1500, Ecn::NotEct), Nanos::ZERO)
            .is_err());
        assert_eq!(c.stats().dropped_enqueue, 1);
        let e = Codel::new(
            CodelParams {
                interval: Nanos::ZERO,
                ..Default::default()
            },
            Rng::new(0),
        )
        .unwrap_err();
        assert_eq!(e.param, "interval");
        let e = Codel::new(
            CodelParams {
                limit: 0,
                ..Default::default()
            },
            Rng::new(0),
        )
        .unwrap_err();
        assert_eq!(e.param, "limit");
        assert!(!CodelParams::default().ecn);
    }

    /// `mtu_bytes` takes [68, 65535]: 68 is IPv4's minimum MTU (RFC 791), 65535 its largest
    /// datagram.
    #[test]
    fn mtu_is_accepted_in_68_to_65535_only() {
        for m in [68, 1500, 65_535] {
            assert!(validate_mtu(m).is_ok(), "{m}");
        }
        for m in [0, 67, 65_536] {
            assert_eq!(validate_mtu(m).unwrap_err().param, "mtu_bytes", "{m}");
        }
    }

    /// The documented range of target and interval, [1us, 60s], is closed at both ends.
    #[test]
    fn target_and_interval_accept_exactly_1us_and_60s_and_nothing_outside() {
        let (lo, hi) = (Nanos::from_us(1), Nanos::from_secs(60));
        for (t, i) in [(lo, lo), (hi, hi), (lo, hi)] {
            assert!(validate_codel_times(t, i).is_ok(), "{t:?} {i:?}");
        }
        let out = [Nanos(999), Nanos(60_000_000_001)];
        for x in out {
            assert_eq!(validate_codel_times(x, hi).unwrap_err().param, "target");
            assert_eq!(validate_codel_times(hi, x).unwrap_err().param, "interval");
        }
    }

    #[test]
    fn params_deserialize_with_duration_strings() {
        use serde::de::value::{Error, MapDeserializer};
        use serde::Deserialize;
        // serde's in-memory map deserializer stands in for TOML (no format crate here).
        let ok = vec![("target", "2ms"), ("interval", "50ms")];
        let p = CodelParams::deserialize(MapDeserializer::<_, Error>::new(ok.into_iter())).unwrap();
        assert_eq!(p.target, Nanos::from_ms(2));
        assert_eq!(p.interval, Nanos::from_ms(50));
        assert_eq!(p.limit, 1000);
        let bad = vec![("tagret", "2ms")];
        assert!(
            CodelParams::deserialize(MapDeserializer::<_, Error>::new(bad.into_iter())).is_err()
        );
    }
}
