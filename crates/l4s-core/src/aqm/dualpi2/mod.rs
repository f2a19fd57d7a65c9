//! DualPI2: the DualQ Coupled AQM with a PI2 base AQM (L-queue + C-queue, coupled marking).
//! Follows Linux `net/sched/sch_dualpi2.c` (mainline 6.17+) by default, RFC 9332 §2 and §A as options.
//!
//! The parts, each in its own file so a user can swap them:
//! - [`classifier`]: ECN mask → L or C (`dualpi2_skb_classify`);
//! - [`pi2`]: the PI controller updating p' every `tupdate` (`calculate_probability`);
//! - [`coupling`]: p_C = p'² and p_CL = k·p' with the overload rules (`must_drop`);
//! - [`step`]: the L-queue's native AQM, Linux step or RFC ramp (`do_step_aqm`, RFC `laqm`);
//! - [`scheduler`]: credit WRR or time-shifted FIFO (`dequeue_packet`).
//!
//! Where this differs from Linux (named simplifications):
//! - probabilities are f64 and rolls use `Rng::uniform() < p` (Linux: `get_random_u32() <=
//!   prob` on a u32 scale, which fires with probability 2^-32 even at prob 0);
//! - only ECN-mask classification: Linux's tc-filter / skb->priority classes and the
//!   "LLLL" (no-AQM L) class are not modelled, so every L packet is ECN-capable;
//! - `split_gso` is irrelevant (no GSO aggregates) and the implicit truesize `memlimit` is not
//!   modelled (`limit_bytes` bounds packet bytes instead);
//! - the PI timer is assumed started at t = 0: the first update is due at `tupdate`, then
//!   each one `tupdate` after the time `on_timer` ran (Linux re-arms from "now" too);
//! - the RFC ramp variant rolls once with p_L = max(ramp, p_CL) at dequeue (RFC uses the
//!   deterministic `recur()`); its coupled part follows Linux's 2·MTU floor and overload rules;
//!   with `drop_early` the overload rules run at enqueue but the ramp roll stays at dequeue.
//! - `xstats` `prob` is p' as a fraction (Linux reports p'·(2^32−1)); `memory_used` is omitted.

#[cfg(test)]
mod cause_tests;
pub mod classifier;
pub mod coupling;
pub mod params;
pub mod pi2;
pub mod scheduler;
pub mod step;
#[cfg(test)]
mod tests;

pub use classifier::{EcnMask, QueueId};
pub use params::{DualPi2Params, KernelProfile, LAqmKind, PiQdelay, SchedulerKind};

use super::fifo::PacketQueue;
use super::{Aqm, AqmStats, Limit, QueueSample};
use crate::error::ParamError;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::Nanos;
use coupling::{Action, Coupling};
use pi2::Pi2;
use scheduler::{HeadView, Scheduler};
use step::LAqm;

/// Per-packet state Linux keeps in the skb control block.
#[derive(Copy, Clone, Debug, Default)]
struct Meta {
    /// `apply_step`: L packet that found ≥ `min_qlen_step` packets in L at enqueue.
    apply_step: bool,
    /// CE-marked at enqueue (drop_early).
    marked: bool,
}

/// Marks and drops by cause, cumulative (l4slab's own counters; Linux keeps only `ecn_mark`
/// and `step_marks`). Every CE-mark action counted by Linux `ecn_mark` lands in exactly one of
/// `coupled_marks_l`, `overload_marks_l`, `ramp_marks_l`, `classic_marks` or `step_marks`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkCauses {
    /// L packets CE-marked by the coupled roll k·p' (`dualpi2_scalable_marking`, no overload).
    pub coupled_marks_l: u64,
    /// L packets CE-marked because k·p' > 1 (overload: every L packet is marked).
    pub overload_marks_l: u64,
    /// L packets dropped under overload (drop_overload: the p'² roll hit).
    pub overload_drops_l: u64,
    /// Not-ECT L packets dropped by the coupled roll (only with a wider `ecn_mask`).
    pub coupled_drops_l: u64,
    /// Not-ECT L packets dropped by the step (`do_step_aqm`'s drop).
    pub step_drops_l: u64,
    /// L packets the step marked that the coupled or overload rule had already marked
    /// (Linux counts such a packet twice in `ecn_mark`).
    pub step_marks_also_coupled: u64,
    /// L packets CE-marked by the RFC ramp variant (one roll at max(ramp, k·p')).
    pub ramp_marks_l: u64,
    /// Not-ECT L packets dropped by the RFC ramp variant.
    pub ramp_drops_l: u64,
    /// C packets CE-marked by the p'² roll (`dualpi2_classic_marking`).
    pub classic_marks: u64,
    /// C packets dropped by the p'² roll (Not-ECT, or any under overload).
    pub classic_drops: u64,
}

/// One of the two queues with its per-packet metadata and counters.
#[derive(Clone, Debug, Default)]
struct SubQueue {
    /// The packets with their metadata side by side.
    q: PacketQueue<Meta>,
    /// Packets forwarded carrying a CE mark applied here (a packet counts once).
    marks: u64,
    /// Packets dropped (tail, early, at dequeue).
    drops: u64,
    /// Packets forwarded.
    packets: u64,
    /// Linux `packets_in_l` / `packets_in_c`: packets accepted.
    packets_in: u64,
}

impl SubQueue {
    fn push(&mut self, pkt: Packet, meta: Meta) {
        self.q.push_tagged(pkt, meta);
        self.packets_in += 1;
    }
    fn pop(&mut self) -> Option<(Packet, Meta)> {
        self.q.pop_tagged()
    }
}

/// The DualPI2 qdisc.
#[derive(Clone, Debug)]
pub struct DualPi2 {
    params: DualPi2Params,
    limit: Limit,
    coupling: Coupling,
    pi2: Pi2,
    l_aqm: LAqm,
    sched: Scheduler,
    rng: Rng,
    l: SubQueue,
    c: SubQueue,
    next_update: Nanos,
    /// Head sojourns of L and C at the last dequeue (L4S team `qdelay_l`/`qdelay_c`).
    deq_qdelay: (Nanos, Nanos),
    stats: AqmStats,
    /// Linux xstats.
    maxq: u64,
    ecn_mark: u64,
    step_marks: u64,
    /// l4slab's counters by cause.
    causes: MarkCauses,
}

impl DualPi2 {
    /// Check the parameters (`DualPi2Params::validate`) and build an empty DualPI2 qdisc.
    pub fn new(params: DualPi2Params, rng: Rng) -> Result<DualPi2, ParamError> {
        params.validate()?;
        let coupling = Coupling {
            k: params.k,
            drop_overload: params.drop_overload,
        };
        let max_p = if params.drop_overload {
            1.0
        } else {
            1.0 / params.k as f64
        };
        Ok(DualPi2 {
            limit: Limit {
                pkts: params.limit,
                bytes: params.limit_bytes,
            },
            coupling,
            pi2: Pi2::new(params.target, params.alpha, params.beta, max_p),
            l_aqm: params.build_l_aqm(),
            sched: params.build_scheduler(),
            rng,
            l: SubQueue::default(),
            c: SubQueue::default(),
            next_update: params.tupdate,
            deq_qdelay: (Nanos::ZERO, Nanos::ZERO),
            stats: AqmStats::default(),
            maxq: 0,
            ecn_mark: 0,
            step_marks: 0,
            causes: MarkCauses::default(),
            params,
        })
    }

    /// The parameters it was built with.
    pub fn params(&self) -> &DualPi2Params {
        &self.params
    }
    /// Base probability p'.
    pub fn p_prime(&self) -> f64 {
        self.pi2.p_prime()
    }
    /// Classic probability p'².
    pub fn p_c(&self) -> f64 {
        self.coupling.p_c(self.p_prime())
    }
    /// Coupled L4S probability min(k·p', 1).
    pub fn p_cl(&self) -> f64 {
        self.coupling.p_cl(self.p_prime())
    }
    /// k·p' > 1.
    pub fn overloaded(&self) -> bool {
        self.coupling.overloaded(self.p_prime())
    }
    /// WRR credit (bytes·percent); `None` with the time-shifted FIFO.
    pub fn credit(&self) -> Option<i64> {
        self.sched.credit()
    }
    /// Linux `ecn_mark`: CE-mark actions (coupled and step; a packet marked by both counts 2).
    pub fn ecn_mark(&self) -> u64 {
        self.ecn_mark
    }
    /// Linux `step_marks`.
    pub fn step_marks(&self) -> u64 {
        self.step_marks
    }
    /// Marks and drops by cause (l4slab's own counters, see [`MarkCauses`]).
    pub fn mark_causes(&self) -> MarkCauses {
        self.causes
    }
    /// Linux `maxq`: largest total queue length found by an accepted packet.
    pub fn maxq(&self) -> u64 {
        self.maxq
    }
    /// Packets in the L-queue.
    pub fn l_backlog_pkts(&self) -> u64 {
        self.l.q.len()
    }
    /// Packets in the C-queue.
    pub fn c_backlog_pkts(&self) -> u64 {
        self.c.q.len()
    }
    /// Override p' (for experiments at a fixed probability; the next PI update moves on from
    /// here). Clamped to [0, 1], and to 1/k without drop_overload.
    pub fn set_p_prime(&mut self, p: f64) {
        self.pi2.set_p_prime(p);
    }

    fn queue(&mut self, q: QueueId) -> &mut SubQueue {
        match q {
            QueueId::L => &mut self.l,
            QueueId::C => &mut self.c,
        }
    }

    /// Linux `must_drop`: the coupled AQM decision, marking in place. True = drop.
    /// "Never mark/drop if we have a standing queue of less than 2 MTUs."
    fn must_drop(&mut self, class: QueueId, pkt: &mut Packet) -> bool {
        if self.backlog_bytes() < 2 * self.params.mtu_bytes as u64 {
            return false;
        }
        let p = self.pi2.p_prime();
        let c = &mut self.causes;
        let action = match class {
            QueueId::C => {
                let a = self.coupling.classic(p, pkt.ecn, &mut self.rng);
                match a {
                    Action::Mark => c.classic_marks += 1,
                    Action::Drop => c.classic_drops += 1,
                    Action::Pass => {}
                }
                a
            }
            QueueId::L => {
                let roll_coupled = matches!(self.l_aqm, LAqm::Step(_));
                let a = self
                    .coupling
                    .scalable(p, pkt.ecn, &mut self.rng, roll_coupled);
                match (a, self.coupling.overloaded(p)) {
                    (Action::Mark, true) => c.overload_marks_l += 1,
                    (Action::Mark, false) => c.coupled_marks_l += 1,
                    (Action::Drop, true) => c.overload_drops_l += 1,
                    (Action::Drop, false) => c.coupled_drops_l += 1,
                    (Action::Pass, _) => {}
                }
                a
            }
        };
        self.apply(action, pkt)
    }

    /// Carry out an action; true = drop. Marks count as Linux `dualpi2_mark`.
    fn apply(&mut self, action: Action, pkt: &mut Packet) -> bool {
        match action {
            Action::Pass => false,
            Action::Mark => {
                pkt.ecn = Ecn::Ce;
                self.ecn_mark += 1;
                false
            }
            Action::Drop => true,
        }
    }

    fn drop_at_dequeue(&mut self, q: QueueId, pkt: Packet, dropped: &mut Vec<Packet>) {
        self.queue(q).drops += 1;
        self.stats.dropped_dequeue += 1;
        dropped.push(pkt);
    }

    /// The L-queue's native AQM at dequeue (Linux `do_step_aqm` or RFC ramp). True = drop.
    fn native_l_aqm(
        &mut self,
        pkt: &mut Packet,
        meta: Meta,
        now: Nanos,
        marked: &mut bool,
    ) -> bool {
        let sojourn = pkt.sojourn(now);
        let action = match self.l_aqm {
            LAqm::Step(s) => {
                if !(meta.apply_step && s.exceeded(sojourn, self.l.q.len())) {
                    return false;
                }
                if !pkt.ecn.is_ecn_capable() {
                    self.causes.step_drops_l += 1;
                    return true;
                }
                self.step_marks += 1;
                if *marked {
                    self.causes.step_marks_also_coupled += 1;
                }
                Action::Mark
            }
            LAqm::Ramp(r) => {
                let p = self.pi2.p_prime();
                let floor_ok = self.backlog_bytes() >= 2 * self.params.mtu_bytes as u64;
                let p_cl = if floor_ok && !self.coupling.overloaded(p) {
                    self.coupling.p_cl_raw(p)
                } else {
                    0.0 // overload is handled by `must_drop`
                };
                let p_l = r.prob(sojourn, self.l.q.len() + 1).max(p_cl);
                let a = Coupling::roll_l(p_l, pkt.ecn, &mut self.rng);
                match a {
                    Action::Mark => self.causes.ramp_marks_l += 1,
                    Action::Drop => self.causes.ramp_drops_l += 1,
                    Action::Pass => {}
                }
                a
            }
        };
        *marked |= action == Action::Mark;
        self.apply(action, pkt)
    }
}

impl Aqm for DualPi2 {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Nanos) -> Result<(), Packet> {
        let class = self.params.ecn_mask.classify(pkt.ecn);
        if self
            .limit
            .would_overflow(self.backlog_pkts(), self.backlog_bytes(), pkt.bytes)
        {
            self.queue(class).drops += 1;
            self.stats.dropped_enqueue += 1;
            return Err(pkt);
        }
        let mut meta = Meta::default();
        if self.params.drop_early {
            let ecn_mark_before = self.ecn_mark;
            if self.must_drop(class, &mut pkt) {
                self.queue(class).drops += 1;
                self.stats.dropped_enqueue += 1;
                return Err(pkt);
            }
            meta.marked = self.ecn_mark > ecn_mark_before;
        }
        self.maxq = self.maxq.max(self.backlog_pkts());
        pkt.enqueued_at = now;
        if class == QueueId::L {
            // Linux `skb_apply_step`: decided against the L length before this packet.
            meta.apply_step = self.l.q.len() >= self.params.min_qlen_step;
        }
        self.queue(class).push(pkt, meta);
        self.stats.enqueued += 1;
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos, dropped: &mut Vec<Packet>) -> Option<Packet> {
        loop {
            let view = HeadView {
                l_pkts: self.l.q.len(),
                c_pkts: self.c.q.len(),
                l_sojourn: self.l.q.head_sojourn(now),
                c_sojourn: self.c.q.head_sojourn(now),
            };
            self.deq_qdelay = (view.l_sojourn, view.c_sojourn);
            // Both empty: the scheduler resets the WRR credit (Linux `dequeue_packet`).
            let pick = self.sched.pick(&view)?;
            let q = pick.queue;
            let (mut pkt, meta) = self.queue(q).pop()?;
            let mut marked = meta.marked;
            if !self.params.drop_early {
                let before = self.ecn_mark;
                if self.must_drop(q, &mut pkt) {
                    self.drop_at_dequeue(q, pkt, dropped);
                    continue;
                }
                marked |= self.ecn_mark > before;
            }
            if q == QueueId::L && self.native_l_aqm(&mut pkt, meta, now, &mut marked) {
                self.drop_at_dequeue(q, pkt, dropped);
                continue;
            }
            // Only packets actually sent change the WRR credit.
            self.sched.on_sent(pick, pkt.bytes);
            let sq = self.queue(q);
            sq.packets += 1;
            if marked {
                sq.marks += 1;
                self.stats.marked += 1;
            }
            self.stats.dequeued += 1;
            return Some(pkt);
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        Some(self.next_update)
    }

    fn on_timer(&mut self, now: Nanos) {
        if now < self.next_update {
            return;
        }
        // qdelay = max(head sojourn of L, head sojourn of C); an empty queue counts 0.
        let qdelay = match self.params.pi_qdelay {
            PiQdelay::Timer => self.l.q.head_sojourn(now).max(self.c.q.head_sojourn(now)),
            PiQdelay::Dequeue => self.deq_qdelay.0.max(self.deq_qdelay.1),
        };
        self.pi2.update(qdelay);
        self.next_update = now + self.params.tupdate;
    }

    fn backlog_pkts(&self) -> u64 {
        self.l.q.len() + self.c.q.len()
    }

    fn backlog_bytes(&self) -> u64 {
        self.l.q.bytes() + self.c.q.bytes()
    }

    /// "L" then "C". Both rows carry the shared probabilities: p_prime = p', p_c = p'², and
    /// p_cl = min(k·p', 1) (the coupled L probability as applied; > 1 means overload, see
    /// [`DualPi2::overloaded`]). Counters are cumulative per queue: marks = forwarded packets
    /// CE-marked here (a packet marked by both coupled and step counts once), drops = tail,
    /// early and dequeue drops, packets = forwarded.
    fn sample(&self, now: Nanos, out: &mut Vec<QueueSample>) {
        for (name, sq) in [("L", &self.l), ("C", &self.c)] {
            out.push(QueueSample {
                name,
                backlog_pkts: sq.q.len(),
                backlog_bytes: sq.q.bytes(),
                head_sojourn: sq.q.head_sojourn(now),
                marks: sq.marks,
                drops: sq.drops,
                packets: sq.packets,
                p_prime: self.p_prime(),
                p_c: self.p_c(),
                p_cl: self.p_cl(),
            });
        }
    }

    fn stats(&self) -> AqmStats {
        AqmStats {
            backlog_pkts: self.backlog_pkts(),
            backlog_bytes: self.backlog_bytes(),
            ..self.stats.clone()
        }
    }

    /// Linux `ecn_mark` and `step_marks`, then l4slab's [`MarkCauses`].
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.causes;
        vec![
            ("ecn_mark", self.ecn_mark),
            ("step_marks", self.step_marks),
            ("coupled_marks_l", c.coupled_marks_l),
            ("overload_marks_l", c.overload_marks_l),
            ("overload_drops_l", c.overload_drops_l),
            ("coupled_drops_l", c.coupled_drops_l),
            ("step_drops_l", c.step_drops_l),
            ("step_marks_also_coupled", c.step_marks_also_coupled),
            ("ramp_marks_l", c.ramp_marks_l),
            ("ramp_drops_l", c.ramp_drops_l),
            ("classic_marks", c.classic_marks),
            ("classic_drops", c.classic_drops),
            ("marked_l", self.l.marks),
            ("marked_c", self.c.marks),
        ]
    }

    fn xstats(&self, now: Nanos) -> Vec<(&'static str, f64)> {
        // Linux `convert_ns_to_usec`: whole microseconds, rounded down.
        let us = |t: Nanos| (t.as_ns() / 1_000) as f64;
        let mut v = vec![
            ("prob", self.p_prime()),
            ("delay_c", us(self.c.q.head_sojourn(now))),
            ("delay_l", us(self.l.q.head_sojourn(now))),
            ("packets_in_c", self.c.packets_in as f64),
            ("packets_in_l", self.l.packets_in as f64),
            ("maxq", self.maxq as f64),
            ("ecn_mark", self.ecn_mark as f64),
            ("step_marks", self.step_marks as f64),
        ];
        // l4slab's counters after Linux's (the first two are `ecn_mark` and `step_marks`).
        v.extend(
            self.counters()
                .into_iter()
                .skip(2)
                .map(|(n, x)| (n, x as f64)),
        );
        if let Some(c) = self.credit() {
            v.push(("credit", c as f64));
        }
        v
    }
}
