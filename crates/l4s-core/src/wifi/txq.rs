//! mac80211's transmit queues: one flow table shared by every station's TXQ (a "tin"), fair
//! queueing per TXQ with a 300-byte quantum, and CoDel per flow (20 ms / 100 ms / ECN on).
//! Linux `include/net/fq_impl.h` (`fq_init`, `fq_flow_classify`, `fq_tin_enqueue`,
//! `fq_find_fattest_flow`, `fq_flow_drop`, `fq_tin_dequeue`) and `net/mac80211/tx.c`
//! (`ieee80211_txq_setup_flows`: `fq_init(fq, 4096)`, cparams 20 ms / 100 ms / ECN;
//! `fq_tin_dequeue_func` → `codel_dequeue(.., &flow->backlog, ..)`).
//!
//! Faithful to Linux: 4096 flows shared by all TXQs (a flow already owned by another TXQ sends
//! the packet to this TXQ's default flow, `fq_flow_classify`); limit 8192 packets and 16 MB
//! over all TXQs; over either, `fq_flow_drop` head-drops min(32, qlen/2) packets (at least one)
//! from the fattest flow of any TXQ; new flows get one quantum on `new_flows`, an emptied new
//! flow passes once through `old_flows` if that list is non-empty; CoDel runs per flow on the
//! shared state machine of `aqm/codel.rs` but sees the *flow's* backlog for its "≤ MTU" rule,
//! with `mtu` 0 (mac80211 never sets `cparams.mtu`): CoDel drops unless the flow would be
//! empty. The 2025 revert of `sta_update_codel_params` (50/300 ms for slow stations) is
//! followed: every TXQ uses the interface's 20/100 ms.
//!
//! A proposal, not upstream: `ce_threshold` (CE-mark ECN-capable packets whose sojourn exceeds
//! it, optionally ECT(1) only: selector 0x01 / mask 0x03 as `sch_fq_codel`'s) — mac80211
//! sets `CODEL_DISABLED_THRESHOLD` and offers no knob.
//!
//! Simplifications (named): memory is counted as IP bytes (Linux counts `skb->truesize`); the
//! flow hash is the seeded mix of `Packet::flow` that `fq_codel.rs` uses; one TID per station
//! (best effort).

use crate::aqm::codel::{CodelConfig, CodelQueue, CodelStats, CodelVars};
use crate::aqm::fifo::PacketQueue;
use crate::aqm::fq_codel::mix64;
use crate::aqm::{AqmStats, QueueSample};
use crate::error::ParamError;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// `fq_init(fq, 4096)` in `ieee80211_txq_setup_flows`.
pub const TXQ_FLOWS: u32 = 4096;
/// `fq->quantum` (`fq_init`).
pub const TXQ_QUANTUM: u32 = 300;
/// `fq->limit` (`fq_init`), packets over all TXQs.
pub const TXQ_LIMIT_PKTS: u64 = 8192;
/// `fq->memory_limit` (`fq_init`, VHT-capable hardware), bytes over all TXQs.
pub const TXQ_MEMORY_LIMIT: u64 = 16 << 20;
/// Most packets one `fq_flow_drop` removes.
const FQ_FLOW_DROP_MAX: u64 = 32;

/// The TXQ CoDel's parameters (`[link.wifi]` `txq_*` keys).
#[derive(Clone, Debug, PartialEq)]
pub struct TxqParams {
    /// CoDel target (mac80211: 20 ms).
    pub target: Nanos,
    /// CoDel interval (mac80211: 100 ms).
    pub interval: Nanos,
    /// CE-mark instead of dropping ECN-capable packets (mac80211: on).
    pub ecn: bool,
    /// CE-mark ECN-capable packets whose sojourn exceeds this (a proposal: not in mac80211).
    pub ce_threshold: Option<Nanos>,
    /// Apply `ce_threshold` to ECT(1) packets only (selector 0x01, mask 0x03).
    pub ce_threshold_ect1: bool,
}

impl Default for TxqParams {
    fn default() -> Self {
        TxqParams {
            target: Nanos::from_ms(20),
            interval: Nanos::from_ms(100),
            ecn: true,
            ce_threshold: None,
            ce_threshold_ect1: true,
        }
    }
}

impl TxqParams {
    /// Range checks; errors name the `[link.wifi]` key.
    pub fn validate(&self) -> Result<(), ParamError> {
        let ok = |t: Nanos| (1_000..=60_000_000_000).contains(&t.0);
        if !ok(self.target) {
            return Err(ParamError::new(
                "txq_target",
                self.target,
                "a duration in [1us, 60s]",
            ));
        }
        if !ok(self.interval) {
            return Err(ParamError::new(
                "txq_interval",
                self.interval,
                "a duration in [1us, 60s]",
            ));
        }
        if let Some(t) = self.ce_threshold {
            if !ok(t) {
                return Err(ParamError::new(
                    "txq_ce_threshold",
                    t,
                    "a duration in [1us, 60s]",
                ));
            }
        }
        Ok(())
    }

    fn codel_config(&self) -> CodelConfig {
        let (sel, mask) = if self.ce_threshold_ect1 {
            (0x01, 0x03)
        } else {
            (0, 0)
        };
        CodelConfig {
            target: self.target,
            interval: self.interval,
            // mac80211's cparams are zero-initialised and `codel_params_init` leaves `mtu`.
            mtu_bytes: 0,
            ecn: self.ecn,
            ce_threshold: self.ce_threshold,
            ce_threshold_selector: sel,
            ce_threshold_mask: mask,
        }
    }
}

/// One flow (`struct fq_flow` with its `codel_vars`).
#[derive(Clone, Debug, Default)]
struct FqFlow {
    q: PacketQueue,
    deficit: i64,
    cvars: CodelVars,
    /// The TXQ that owns it (`flow->tin`).
    tin: Option<u32>,
    /// On the owner's `new_flows` or `old_flows`.
    listed: bool,
}

/// One TXQ (`struct fq_tin` + the `txq_info` counters).
#[derive(Clone, Debug, Default)]
struct Tin {
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    backlog_pkts: u64,
    backlog_bytes: u64,
    stats: AqmStats,
    cstats: CodelStats,
    overlimit: u64,
    collisions: u64,
}

/// CoDel's view of one flow: its FIFO, the flow backlog it tests, and the totals it updates.
struct FlowQueue<'a> {
    q: &'a mut PacketQueue,
    tin_pkts: &'a mut u64,
    tin_bytes: &'a mut u64,
    fq_pkts: &'a mut u64,
    fq_bytes: &'a mut u64,
}

impl CodelQueue for FlowQueue<'_> {
    fn dequeue_head(&mut self) -> Option<Packet> {
        let p = self.q.pop()?;
        *self.tin_pkts -= 1;
        *self.tin_bytes -= p.bytes as u64;
        *self.fq_pkts -= 1;
        *self.fq_bytes -= p.bytes as u64;
        Some(p)
    }
    /// `&flow->backlog`: mac80211 passes the flow's bytes, not the interface's.
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
}

/// Every station's TXQ over one shared flow table (`local->fq`).
#[derive(Clone, Debug)]
pub struct Txqs {
    cfg: CodelConfig,
    perturbation: u64,
    /// `TXQ_FLOWS` hashed flows, then one default flow per TXQ.
    flows: Vec<FqFlow>,
    tins: Vec<Tin>,
    backlog_pkts: u64,
    backlog_bytes: u64,
}

impl Txqs {
    /// `n` TXQs (one per station) with `p`; `rng` seeds the flow hash.
    pub fn new(n: usize, p: &TxqParams, mut rng: Rng) -> Result<Self, ParamError> {
        p.validate()?;
        Ok(Txqs {
            cfg: p.codel_config(),
            perturbation: rng.next_u64(),
            flows: vec![FqFlow::default(); TXQ_FLOWS as usize + n],
            tins: vec![Tin::default(); n],
            backlog_pkts: 0,
            backlog_bytes: 0,
        })
    }

    /// Number of TXQs.
    pub fn len(&self) -> usize {
        self.tins.len()
    }
    /// No TXQ at all.
    pub fn is_empty(&self) -> bool {
        self.tins.is_empty()
    }

    /// `fq_flow_idx` then `fq_flow_classify`: the hashed flow, or the TXQ's default flow when
    /// another TXQ owns it.
    pub fn flow_index(&self, tin: usize, flow: u32) -> usize {
        let h = (mix64(flow as u64 ^ self.perturbation) >> 32) as u32;
        let idx = ((h as u64 * TXQ_FLOWS as u64) >> 32) as usize;
        match self.flows[idx].tin {
            Some(t) if t as usize != tin => TXQ_FLOWS as usize + tin,
            _ => idx,
        }
    }

    /// `fq_tin_enqueue` at `now`: packets dropped over the limits go to `dropped` (with their
    /// TXQ), the arriving one included when its own flow was the fattest.
    pub fn enqueue(
        &mut self,
        tin: usize,
        mut pkt: Packet,
        now: Nanos,
        dropped: &mut Vec<(usize, Packet)>,
    ) {
        let idx = self.flow_index(tin, pkt.flow);
        if idx >= TXQ_FLOWS as usize {
            // `tin->collisions++` in fq_flow_classify: the hashed flow belongs to another TXQ.
            self.tins[tin].collisions += 1;
        }
        pkt.enqueued_at = now;
        let bytes = pkt.bytes as u64;
        let t = &mut self.tins[tin];
        t.backlog_pkts += 1;
        t.backlog_bytes += bytes;
        t.stats.enqueued += 1;
        self.backlog_pkts += 1;
        self.backlog_bytes += bytes;
        let f = &mut self.flows[idx];
        f.tin = Some(tin as u32);
        if !f.listed {
            f.listed = true;
            f.deficit = TXQ_QUANTUM as i64;
            t.new_flows.push_back(idx as u32);
        }
        f.q.push(pkt);
        let mut oom = self.backlog_bytes > TXQ_MEMORY_LIMIT;
        while self.backlog_pkts > TXQ_LIMIT_PKTS || oom {
            let Some(fat) = self.fattest() else { return };
            let owner = self.flows[fat].tin.unwrap_or(0) as usize;
            let n = (self.flows[fat].q.len() / 2).clamp(1, FQ_FLOW_DROP_MAX);
            for _ in 0..n {
                let Some(p) = self.flows[fat].q.pop() else {
                    break;
                };
                let t = &mut self.tins[owner];
                t.backlog_pkts -= 1;
                t.backlog_bytes -= p.bytes as u64;
                t.stats.dropped_dequeue += 1;
                self.backlog_pkts -= 1;
                self.backlog_bytes -= p.bytes as u64;
                dropped.push((owner, p));
            }
            self.tins[owner].overlimit += 1;
            if oom {
                oom = self.backlog_bytes > TXQ_MEMORY_LIMIT;
            }
        }
    }

    /// `fq_find_fattest_flow`: most bytes (the first found on a tie: hashed flows by index,
    /// then default flows).
    fn fattest(&self) -> Option<usize> {
        let mut best = None;
        let mut len = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.q.bytes() > len {
                len = f.q.bytes();
                best = Some(i);
            }
        }
        best
    }

    /// `fq_tin_dequeue` with `fq_tin_dequeue_func` (CoDel per flow) on TXQ `tin` at `now`:
    /// the packet for the driver and whether CoDel CE-marked it; CoDel drops go to `dropped`.
    pub fn dequeue(
        &mut self,
        tin: usize,
        now: Nanos,
        dropped: &mut Vec<Packet>,
    ) -> Option<(Packet, bool)> {
        loop {
            let t = &mut self.tins[tin];
            let (from_new, idx) = if let Some(&i) = t.new_flows.front() {
                (true, i as usize)
            } else if let Some(&i) = t.old_flows.front() {
                (false, i as usize)
            } else {
                return None;
            };
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += TXQ_QUANTUM as i64;
                Self::move_to_old(t, from_new);
                continue;
            }
            let before = (t.cstats.drop_count, t.cstats.marked_pkts);
            let mut fq = FlowQueue {
                q: &mut f.q,
                tin_pkts: &mut t.backlog_pkts,
                tin_bytes: &mut t.backlog_bytes,
                fq_pkts: &mut self.backlog_pkts,
                fq_bytes: &mut self.backlog_bytes,
            };
            let skb = f
                .cvars
                .dequeue(&mut fq, &self.cfg, &mut t.cstats, now, dropped);
            t.cstats.account(before.0, &mut t.stats);
            match skb {
                Some(p) => {
                    f.deficit -= p.bytes as i64;
                    t.stats.dequeued += 1;
                    return Some((p, t.cstats.marked_pkts > before.1));
                }
                None => {
                    // Force a pass through old_flows to prevent starvation.
                    if from_new && !t.old_flows.is_empty() {
                        Self::move_to_old(t, true);
                    } else {
                        if from_new {
                            t.new_flows.pop_front();
                        } else {
                            t.old_flows.pop_front();
                        }
                        f.listed = false;
                        f.tin = None;
                    }
                }
            }
        }
    }

    fn move_to_old(t: &mut Tin, from_new: bool) {
        let idx = if from_new {
            t.new_flows.pop_front()
        } else {
            t.old_flows.pop_front()
        };
        if let Some(i) = idx {
            t.old_flows.push_back(i);
        }
    }

    /// Packets and bytes queued in TXQ `tin`.
    pub fn backlog(&self, tin: usize) -> (u64, u64) {
        let t = &self.tins[tin];
        (t.backlog_pkts, t.backlog_bytes)
    }

    /// Packets queued over every TXQ.
    pub fn total_pkts(&self) -> u64 {
        self.backlog_pkts
    }

    /// TXQ `tin`'s counters with its backlog.
    pub fn stats(&self, tin: usize) -> AqmStats {
        let t = &self.tins[tin];
        t.stats.with_backlog(t.backlog_pkts, t.backlog_bytes)
    }

    /// TXQ `tin`'s CoDel counters (`txqi->cstats`).
    pub fn codel_stats(&self, tin: usize) -> &CodelStats {
        &self.tins[tin].cstats
    }

    /// Overflow drop rounds and flow-table collisions of TXQ `tin`.
    pub fn overlimit_collisions(&self, tin: usize) -> (u64, u64) {
        (self.tins[tin].overlimit, self.tins[tin].collisions)
    }

    /// TXQ `tin` as one queue row named `name`; head sojourn = oldest head among its flows.
    pub fn sample(&self, tin: usize, name: &'static str, now: Nanos) -> QueueSample {
        let t = &self.tins[tin];
        let head = t
            .new_flows
            .iter()
            .chain(t.old_flows.iter())
            .map(|&i| self.flows[i as usize].q.head_sojourn(now))
            .max()
            .unwrap_or(Nanos::ZERO);
        QueueSample {
            backlog_pkts: t.backlog_pkts,
            backlog_bytes: t.backlog_bytes,
            head_sojourn: head,
            ..QueueSample::empty(name)
        }
        .with_counters(&t.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::{Aqm, Codel, CodelParams};
    use crate::packet::Ecn;

    const MS: u64 = 1_000_000;

    fn pkt(id: u64, flow: u32, ecn: Ecn) -> Packet {
        Packet::new(id, flow, 1500, ecn)
    }

    /// Two flow ids that hash to different flows.
    fn two_flows(q: &Txqs) -> (u32, u32) {
        let a = 0;
        let b = (1..1000).find(|&f| q.flow_index(0, f) != q.flow_index(0, a));
        (a, b.unwrap_or(1))
    }

    /// fq_impl.h's DRR with a 300 B quantum: two backlogged flows of 1500 B packets alternate
    /// packet by packet (each packet drives the deficit to −1200, then four rounds of +300
    /// bring it back above 0 while the other flow sends one).
    #[test]
    fn drr_alternates_between_backlogged_flows() {
        let mut q = Txqs::new(1, &TxqParams::default(), Rng::new(1)).unwrap();
        let (a, b) = two_flows(&q);
        let mut d = Vec::new();
        for i in 0..10 {
            q.enqueue(0, pkt(i, a, Ecn::NotEct), Nanos(0), &mut d);
        }
        for i in 10..20 {
            q.enqueue(0, pkt(i, b, Ecn::NotEct), Nanos(0), &mut d);
        }
        let mut dd = Vec::new();
        let order: Vec<u32> = (0..8)
            .map(|_| q.dequeue(0, Nanos(MS), &mut dd).unwrap().0.flow)
            .collect();
        assert_eq!(order, vec![a, b, a, b, a, b, a, b]);
        // The fq-wide and per-TXQ backlogs follow each dequeue, and so do the TXQ's counters.
        assert_eq!(q.total_pkts(), 12);
        assert_eq!(q.backlog(0), (12, 12 * 1500));
        let s = q.stats(0);
        assert_eq!((s.enqueued, s.dequeued, s.backlog_pkts), (20, 8, 12));
    }

    /// `fq_tin_enqueue`'s memory rule: drop from the fattest flow while `memory_usage >
    /// memory_limit` (16 MiB), re-checked after each batch, so a batch that brings the
    /// backlog to exactly the limit is the last. (Packet sizes far beyond an MTU only to
    /// reach the byte limit with few packets.) A holds 2 × 6 MiB (12 MiB, under the limit);
    /// B's 10 MiB makes 22 MiB; the fattest, A, loses half its packets (1): 16 MiB, done.
    #[test]
    fn memory_limit_drops_until_the_backlog_is_at_most_16_mib() {
        let mut q = Txqs::new(1, &TxqParams::default(), Rng::new(1)).unwrap();
        let (a, b) = two_flows(&q);
        let mut d = Vec::new();
        for i in 0..2 {
            q.enqueue(0, Packet::new(i, a, 6 << 20, Ecn::NotEct), Nanos(0), &mut d);
        }
        assert!(d.is_empty());
        q.enqueue(
            0,
            Packet::new(2, b, 10 << 20, Ecn::NotEct),
            Nanos(0),
            &mut d,
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].1.id, 0);
        assert_eq!(q.backlog(0), (2, TXQ_MEMORY_LIMIT));
    }

    /// DRR is fair in bytes, not packets: beside a flow of 1500 B packets, a flow of 300 B
    /// packets sends five packets per big one. While both stay backlogged the bytes served
    /// never differ by more than one quantum plus one maximum packet (Shreedhar & Varghese's
    /// DRR bound: 300 + 1500 B).
    #[test]
    fn drr_shares_bytes_between_flows_of_different_packet_sizes() {
        let mut q = Txqs::new(1, &TxqParams::default(), Rng::new(1)).unwrap();
        let (a, b) = two_flows(&q);
        let mut d = Vec::new();
        for i in 0..40 {
            q.enqueue(0, pkt(i, a, Ecn::NotEct), Nanos(0), &mut d);
        }
        for i in 40..240 {
            q.enqueue(0, Packet::new(i, b, 300, Ecn::NotEct), Nanos(0), &mut d);
        }
        let (mut bytes_a, mut bytes_b) = (0i64, 0i64);
        let mut dd = Vec::new();
        while bytes_a + bytes_b < 30_000 {
            let (p, _) = q.dequeue(0, Nanos(MS), &mut dd).unwrap();
            if p.flow == a {
                bytes_a += p.bytes as i64;
            } else {
                bytes_b += p.bytes as i64;
            }
            assert!((bytes_a - bytes_b).abs() <= 1800, "{bytes_a} vs {bytes_b}");
        }
        assert!(dd.is_empty());
    }

    /// Isolation: a sparse flow (one packet per 10 ms) beside a bulk flow that keeps the TXQ
    /// 200 packets deep for 2 s is never dropped or marked (its own flow is always empty,
    /// so CoDel's flow-backlog rule never lets it drop) while the bulk flow is CoDel-marked.
    #[test]
    fn sparse_flow_isolated_from_bulk_flow() {
        let mut q = Txqs::new(1, &TxqParams::default(), Rng::new(2)).unwrap();
        let (bulk, sparse) = two_flows(&q);
        let mut d = Vec::new();
        let mut dd = Vec::new();
        let mut id = 0;
        let (mut sparse_marked, mut bulk_marked, mut sparse_seen) = (0, 0, 0);
        for ms in 0..2000u64 {
            let now = Nanos(ms * MS);
            while q.backlog(0).0 < 200 {
                id += 1;
                q.enqueue(0, pkt(id, bulk, Ecn::Ect1), now, &mut d);
            }
            if ms % 10 == 0 {
                id += 1;
                q.enqueue(0, pkt(id, sparse, Ecn::Ect1), now, &mut d);
            }
            // One packet per millisecond leaves (a 12 Mb/s link).
            if let Some((p, m)) = q.dequeue(0, now, &mut dd) {
                if p.flow == sparse {
                    sparse_seen += 1;
                    sparse_marked += u64::from(m || p.ecn == Ecn::Ce);
                } else {
                    bulk_marked += u64::from(m);
                }
            }
        }
        assert!(d.is_empty() && dd.is_empty());
        assert_eq!(sparse_seen, 200);
        assert_eq!(sparse_marked, 0);
        assert!(
            bulk_marked > 0,
            "the bulk flow sits 200 ms deep: CoDel marks it"
        );
    }

    /// The control law on one flow equals the `codel` qdisc's on the same arrivals (the qdisc
    /// backlog and the flow backlog coincide for one flow and stay above 1514 B, so the MTU
    /// rule does not differ): same marks at the same instants.
    #[test]
    fn codel_control_law_matches_codel_aqm() {
        let p = TxqParams::default();
        let mut txq = Txqs::new(1, &p, Rng::new(3)).unwrap();
        let mut codel = Codel::new(
            CodelParams {
                target: p.target,
                interval: p.interval,
                ecn: true,
                limit: 100_000,
                ..Default::default()
            },
            Rng::new(0),
        )
        .unwrap();
        let (mut d, mut d1, mut d2) = (Vec::new(), Vec::new(), Vec::new());
        let (mut marks_txq, mut marks_codel) = (Vec::new(), Vec::new());
        for k in 0..3000u64 {
            // Two arrivals and one departure per ms: the queue grows by one packet per ms.
            let now = Nanos(k * MS);
            for j in 0..2 {
                let id = 2 * k + j;
                txq.enqueue(0, pkt(id, 7, Ecn::Ect0), now, &mut d);
                let _ = codel.enqueue(pkt(id, 7, Ecn::Ect0), now);
            }
            if let Some((a, _)) = txq.dequeue(0, now, &mut d1) {
                if a.ecn == Ecn::Ce {
                    marks_txq.push((k, a.id));
                }
            }
            if let Some(b) = codel.dequeue(now, &mut d2) {
                if b.ecn == Ecn::Ce {
                    marks_codel.push((k, b.id));
                }
            }
        }
        assert!(marks_txq.len() > 10);
        assert_eq!(marks_txq, marks_codel);
        // Departure k is packet k, which arrived at ⌊k/2⌋ ms: sojourn ⌈k/2⌉ ms reaches the
        // 20 ms target at k = 39, so first_above_time = 139 ms and the first mark is at the
        // first dequeue after it (now > first_above_time), k = 140.
        assert_eq!(marks_txq[0].0, 140);
    }

    /// `txq_ce_threshold` (ECT(1) only) marks ECT(1) packets above the threshold and never a
    /// Not-ECT or ECT(0) packet; without the selector ECT(0) is marked too.
    #[test]
    fn ce_threshold_marks_only_ect1() {
        for ect1_only in [true, false] {
            let p = TxqParams {
                ce_threshold: Some(Nanos::from_ms(1)),
                ce_threshold_ect1: ect1_only,
                ..Default::default()
            };
            let mut q = Txqs::new(1, &p, Rng::new(4)).unwrap();
            let mut d = Vec::new();
            let kinds = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1];
            for (i, e) in kinds.iter().enumerate() {
                // Flow ids 0..3 in one TXQ; each packet waits 2 ms (> 1 ms) before leaving.
                q.enqueue(0, pkt(i as u64, i as u32, *e), Nanos(0), &mut d);
            }
            let mut out = Vec::new();
            let mut dd = Vec::new();
            while let Some((p, _)) = q.dequeue(0, Nanos(2 * MS), &mut dd) {
                out.push((p.id, p.ecn));
            }
            out.sort_by_key(|x| x.0);
            let want_ect0 = if ect1_only { Ecn::Ect0 } else { Ecn::Ce };
            assert_eq!(
                out,
                vec![(0, Ecn::NotEct), (1, want_ect0), (2, Ecn::Ce)],
                "ect1_only = {ect1_only}"
            );
            assert_eq!(q.codel_stats(0).ce_mark, if ect1_only { 1 } else { 2 });
        }
    }

    /// Over 8192 packets `fq_flow_drop` takes min(32, qlen/2) from the fattest flow's head
    /// (whatever TXQ it is in); the thin flow keeps its packets.
    #[test]
    fn over_limit_drops_from_fattest_flow() {
        let mut q = Txqs::new(2, &TxqParams::default(), Rng::new(5)).unwrap();
        let mut d = Vec::new();
        q.enqueue(1, pkt(0, 99, Ecn::NotEct), Nanos(0), &mut d);
        for i in 1..=8192u64 {
            q.enqueue(0, pkt(i, 1, Ecn::NotEct), Nanos(0), &mut d);
        }
        // 8193 packets: the fattest (8192 packets of flow 1) loses min(32, 4096) = 32.
        assert_eq!(d.len(), 32);
        assert!(d.iter().all(|(tin, p)| *tin == 0 && p.flow == 1));
        assert_eq!(d[0].1.id, 1, "head drop");
        assert_eq!(q.backlog(1).0, 1);
        assert_eq!(q.total_pkts(), 8193 - 32);
    }

    /// A flow owned by one TXQ sends another TXQ's packets of the same hash to that TXQ's
    /// default flow (`fq_flow_classify`).
    #[test]
    fn hash_collision_across_txqs_uses_default_flow() {
        let mut q = Txqs::new(2, &TxqParams::default(), Rng::new(6)).unwrap();
        let mut d = Vec::new();
        q.enqueue(0, pkt(0, 5, Ecn::NotEct), Nanos(0), &mut d);
        assert_eq!(q.flow_index(1, 5), TXQ_FLOWS as usize + 1);
        q.enqueue(1, pkt(1, 5, Ecn::NotEct), Nanos(0), &mut d);
        assert_eq!(q.overlimit_collisions(1).1, 1);
        let mut dd = Vec::new();
        assert_eq!(q.dequeue(1, Nanos(0), &mut dd).map(|x| x.0.id), Some(1));
        assert_eq!(q.dequeue(0, Nanos(0), &mut dd).map(|x| x.0.id), Some(0));
    }
}
