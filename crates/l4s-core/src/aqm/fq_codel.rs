//! FQ-CoDel: hashed per-flow CoDel queues served by DRR, new flows ahead of old ones.
//! RFC 8290 §4-5 as Linux `sch_fq_codel.c` (`fq_codel_enqueue`, `fq_codel_drop`, `__fq_codel_dequeue`).
//!
//! Faithful to Linux: 1024 buckets, quantum = MTU (1514 B), limit 10240 packets, memory limit
//! 32 MiB, ECN on; a flow entering with an empty bucket joins `new_flows` with deficit = quantum;
//! a flow whose deficit is ≤ 0 gets another quantum and goes to the tail of `old_flows`; an
//! emptied new flow goes to `old_flows` if that list is non-empty (no starvation by flows that
//! keep re-entering as new), else leaves the lists; CoDel runs per flow with its own
//! [`CodelVars`] (the shared state machine of `codel.rs`) but sees the whole qdisc backlog for
//! its MTU rule, as Linux passes `sch->qstats.backlog`; over the packet or memory limit,
//! `fq_codel_drop` head-drops from the fattest flow (most bytes) until half its bytes or
//! `drop_batch_size` (64) packets are gone, and adds the number dropped to that flow's CoDel
//! `count`; `ce_threshold` with `ce_threshold_selector`/`ce_threshold_mask`
//! (`ce_threshold_ect1_only` = selector 0x01 / mask 0x03, tc's `ce_threshold_selector 0x1/0x3`).
//!
//! Simplifications (named): the flow hash is a seeded 64-bit mix of `Packet::flow` (Linux hashes
//! the 5-tuple with a per-boot random key), mapped to a bucket by `reciprocal_scale` as Linux;
//! no external classifier or `skb->priority` override; memory is counted as the IP length of
//! queued packets (Linux counts `skb->truesize`, which is larger); the DS field seen by the
//! selector is the packet's ECN bits (no DSCP in the model). Overflow drops of packets that were
//! already queued cannot be returned from `enqueue` (the trait hands back only the arriving
//! packet), so they are counted at once in `dropped_dequeue` (keeping AqmStats conservation) and
//! handed over in the `dropped` vector of the next `dequeue` call.
//!
//! The "fq" [`QueueSample`] reports the totals over all flows and, as `head_sojourn`, the largest
//! head sojourn among the active flows (the oldest packet in the qdisc).

use super::{Aqm, AqmStats, QueueSample};
use crate::aqm::codel::{
    validate_codel_times, validate_mtu, CodelConfig, CodelQueue, CodelStats, CodelVars,
    DEFAULT_MTU_BYTES,
};
use crate::aqm::fifo::PacketQueue;
use crate::error::ParamError;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Linux `FQ_CODEL_QUANTUM_MAX`.
pub const FQ_CODEL_QUANTUM_MAX: u32 = 1 << 20;
/// ECN bits of ECT(1) and the ECN mask (Linux `INET_ECN_ECT_1`, `INET_ECN_MASK`).
const INET_ECN_ECT_1: u8 = 0x01;
const INET_ECN_MASK: u8 = 0x03;

/// Parameters of [`FqCodel`] (Linux `tc qdisc ... fq_codel`).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelParams {
    /// Number of hash buckets (Linux default 1024).
    pub flows: u32,
    /// DRR quantum in bytes (Linux default: device MTU incl. header, 1514).
    pub quantum: u32,
    /// Total buffer in packets (Linux default 10240).
    pub limit: u64,
    /// Byte bound on queued packets (Linux default 32 MiB on 64-bit x86).
    pub memory_limit: Option<u64>,
    /// Most packets `fq_codel_drop` removes per overflow (Linux default 64).
    pub drop_batch_size: u32,
    /// CoDel target sojourn per flow (Linux default 5 ms).
    pub target: Nanos,
    /// CoDel interval per flow (Linux default 100 ms).
    pub interval: Nanos,
    /// CE-mark ECN-capable packets instead of dropping (Linux default on for fq_codel).
    pub ecn: bool,
    /// Mark packets whose sojourn exceeds this (off by default).
    pub ce_threshold: Option<Nanos>,
    /// Apply ce_threshold only where `(ds_field & mask) == selector` (mask 0: all packets).
    pub ce_threshold_selector: u8,
    /// DS-field mask for `ce_threshold_selector` (0 = every packet).
    pub ce_threshold_mask: u8,
    /// Convenience for L4S: ce_threshold only on ECT(1) (selector 0x01, mask 0x03).
    pub ce_threshold_ect1_only: bool,
    /// Device MTU incl. link header, for CoDel's "backlog ≤ MTU" rule.
    pub mtu_bytes: u32,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            flows: 1024,
            quantum: DEFAULT_MTU_BYTES,
            limit: 10 * 1024,
            memory_limit: Some(32 << 20),
            drop_batch_size: 64,
            target: Nanos::from_ms(5),
            interval: Nanos::from_ms(100),
            ecn: true,
            ce_threshold: None,
            ce_threshold_selector: 0,
            ce_threshold_mask: 0,
            ce_threshold_ect1_only: false,
            mtu_bytes: DEFAULT_MTU_BYTES,
        }
    }
}

impl FqCodelParams {
    /// Check every parameter against its allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1..=65_536).contains(&self.flows) {
            return Err(ParamError::new(
                "flows",
                self.flows,
                "an integer in [1, 65536]",
            ));
        }
        if !(256..=FQ_CODEL_QUANTUM_MAX).contains(&self.quantum) {
            return Err(ParamError::new(
                "quantum",
                self.quantum,
                "an integer in [256, 1048576] (bytes)",
            ));
        }
        if self.limit == 0 {
            return Err(ParamError::new(
                "limit",
                self.limit,
                "an integer >= 1 (packets)",
            ));
        }
        if let Some(m) = self.memory_limit {
            if !(1..=1u64 << 31).contains(&m) {
                return Err(ParamError::new(
                    "memory_limit",
                    m,
                    "an integer in [1, 2147483648] (bytes)",
                ));
            }
        }
        if self.drop_batch_size == 0 {
            return Err(ParamError::new(
                "drop_batch_size",
                self.drop_batch_size,
                "an integer >= 1 (packets)",
            ));
        }
        validate_codel_times(self.target, self.interval)?;
        validate_mtu(self.mtu_bytes)?;
        if self.ce_threshold_ect1_only
            && (self.ce_threshold_selector != 0 || self.ce_threshold_mask != 0)
        {
            return Err(ParamError::new(
                "ce_threshold_ect1_only",
                "set together with ce_threshold_selector/ce_threshold_mask",
                "either ce_threshold_ect1_only or an explicit selector/mask",
            ));
        }
        Ok(())
    }

    fn codel_config(&self) -> CodelConfig {
        let (selector, mask) = if self.ce_threshold_ect1_only {
            (INET_ECN_ECT_1, INET_ECN_MASK)
        } else {
            (self.ce_threshold_selector, self.ce_threshold_mask)
        };
        CodelConfig {
            target: self.target,
            interval: self.interval,
            mtu_bytes: self.mtu_bytes,
            ecn: self.ecn,
            ce_threshold: self.ce_threshold,
            ce_threshold_selector: selector,
            ce_threshold_mask: mask,
        }
    }
}

/// Which DRR list a bucket is on (Linux: `flowchain` membership).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlowList {
    /// On no list: the bucket is empty and idle.
    None,
    /// On `new_flows`: served first, one quantum, after becoming active.
    New,
    /// On `old_flows`: served round-robin by deficit.
    Old,
}

/// One bucket (Linux `struct fq_codel_flow`).
#[derive(Clone, Debug)]
struct Flow {
    q: PacketQueue,
    deficit: i64,
    cvars: CodelVars,
    list: FlowList,
}

/// The view CoDel gets of one bucket: its FIFO plus the qdisc-wide backlog counters.
struct BucketQueue<'a> {
    q: &'a mut PacketQueue,
    backlog_pkts: &'a mut u64,
    backlog_bytes: &'a mut u64,
}

impl CodelQueue for BucketQueue<'_> {
    fn dequeue_head(&mut self) -> Option<Packet> {
        let p = self.q.pop()?;
        *self.backlog_pkts -= 1;
        *self.backlog_bytes -= p.bytes as u64;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.backlog_bytes
    }
}

/// FQ-CoDel queue discipline.
#[derive(Clone, Debug)]
pub struct FqCodel {
    cfg: CodelConfig,
    quantum: i64,
    limit: u64,
    memory_limit: Option<u64>,
    drop_batch_size: u32,
    /// Hash key drawn from the Rng (Linux: random perturbation of the flow hash).
    perturbation: u64,
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    backlog_pkts: u64,
    backlog_bytes: u64,
    cstats: CodelStats,
    stats: AqmStats,
    /// Overflow drops waiting to be handed out by the next dequeue.
    pending_drops: Vec<Packet>,
    drop_overlimit: u64,
    drop_overmemory: u64,
    new_flow_count: u64,
}

/// SplitMix64 finaliser: a full-avalanche 64-bit mix.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl FqCodel {
    /// FQ-CoDel with validated parameters; `rng` seeds the flow hash perturbation.
    pub fn new(params: FqCodelParams, mut rng: Rng) -> Result<Self, ParamError> {
        params.validate()?;
        let flow = Flow {
            q: PacketQueue::default(),
            deficit: 0,
            cvars: CodelVars::default(),
            list: FlowList::None,
        };
        Ok(FqCodel {
            cfg: params.codel_config(),
            quantum: params.quantum as i64,
            limit: params.limit,
            memory_limit: params.memory_limit,
            drop_batch_size: params.drop_batch_size,
            perturbation: rng.next_u64(),
            flows: vec![flow; params.flows as usize],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog_pkts: 0,
            backlog_bytes: 0,
            cstats: CodelStats::default(),
            stats: AqmStats::default(),
            pending_drops: Vec::new(),
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
        })
    }

    /// Bucket of a flow id: seeded hash, then Linux `reciprocal_scale(hash, flows_cnt)`.
    pub fn bucket(&self, flow: u32) -> usize {
        let h = (mix64(flow as u64 ^ self.perturbation) >> 32) as u32;
        ((h as u64 * self.flows.len() as u64) >> 32) as usize
    }

    /// CoDel state of a bucket (for tests and recorders).
    pub fn flow_vars(&self, bucket: usize) -> Option<&CodelVars> {
        self.flows.get(bucket).map(|f| &f.cvars)
    }
    /// Which DRR list a bucket is on.
    pub fn flow_list(&self, bucket: usize) -> Option<FlowList> {
        self.flows.get(bucket).map(|f| f.list)
    }
    /// The CoDel counters summed over all flows.
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }

    /// Linux `fq_codel_drop`: head-drop up to half the bytes (at most `drop_batch_size`
    /// packets) of the fattest bucket into `pending_drops`; returns the bucket.
    fn drop_from_fattest(&mut self) -> usize {
        let mut idx = 0;
        let mut maxbacklog = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.q.bytes() > maxbacklog {
                maxbacklog = f.q.bytes();
                idx = i;
            }
        }
        if maxbacklog == 0 {
            // Only zero-byte packets queued (Linux cannot meet this): take the longest bucket.
            idx = (0..self.flows.len())
                .max_by_key(|&i| self.flows[i].q.len())
                .unwrap_or(0);
        }
        let threshold = maxbacklog / 2;
        let flow = &mut self.flows[idx];
        let mut len = 0u64;
        let mut i = 0u32;
        while let Some(p) = flow.q.pop() {
            len += p.bytes as u64;
            self.backlog_pkts -= 1;
            self.backlog_bytes -= p.bytes as u64;
            self.pending_drops.push(p);
            i += 1;
            if i >= self.drop_batch_size || len >= threshold {
                break;
            }
        }
        // Tell CoDel to raise its signal for this flow too.
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        idx
    }

    /// Move the head of the list the flow was taken from to the tail of `old_flows`.
    fn rotate_to_old(&mut self, from_new: bool) {
        let idx = if from_new {
            self.new_flows.pop_front()
        } else {
            self.old_flows.pop_front()
        };
        if let Some(idx) = idx {
            self.old_flows.push_back(idx);
            self.flows[idx as usize].list = FlowList::Old;
        }
    }
}

impl Aqm for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Nanos) -> Result<(), Packet> {
        let idx = self.bucket(pkt.flow);
        pkt.enqueued_at = now;
        let bytes = pkt.bytes as u64;
        let flow = &mut self.flows[idx];
        flow.q.push(pkt);
        self.backlog_pkts += 1;
        self.backlog_bytes += bytes;
        if flow.list == FlowList::None {
            flow.list = FlowList::New;
            flow.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        let memory_limited = self.memory_limit.is_some_and(|m| self.backlog_bytes > m);
        if self.backlog_pkts <= self.limit && !memory_limited {
            self.stats.enqueued += 1;
            return Ok(());
        }
        let first = self.pending_drops.len();
        let fat = self.drop_from_fattest();
        let n = (self.pending_drops.len() - first) as u64;
        self.drop_overlimit += n;
        if memory_limited {
            self.drop_overmemory += n;
        }
        // Head drops reach the arriving (tail) packet only if its whole bucket went.
        if fat == idx && self.flows[idx].q.is_empty() {
            if let Some(own) = self.pending_drops.pop() {
                self.stats.dropped_enqueue += 1;
                self.stats.dropped_dequeue += n - 1;
                return Err(own);
            }
        }
        self.stats.enqueued += 1;
        self.stats.dropped_dequeue += n;
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos, dropped: &mut Vec<Packet>) -> Option<Packet> {
        dropped.append(&mut self.pending_drops);
        loop {
            let (from_new, idx) = if let Some(&i) = self.new_flows.front() {
                (true, i as usize)
            } else if let Some(&i) = self.old_flows.front() {
                (false, i as usize)
            } else {
                return None;
            };
            if self.flows[idx].deficit <= 0 {
                self.flows[idx].deficit += self.quantum;
                self.rotate_to_old(from_new);
                continue;
            }
            let drops_before = self.cstats.drop_count;
            let flow = &mut self.flows[idx];
            let mut bq = BucketQueue {
                q: &mut flow.q,
                backlog_pkts: &mut self.backlog_pkts,
                backlog_bytes: &mut self.backlog_bytes,
            };
            let skb = flow
                .cvars
                .dequeue(&mut bq, &self.cfg, &mut self.cstats, now, dropped);
            self.cstats.account(drops_before, &mut self.stats);
            match skb {
                Some(p) => {
                    flow.deficit -= p.bytes as i64;
                    self.stats.dequeued += 1;
                    return Some(p);
                }
                None => {
                    // Emptied: a new flow passes through old_flows once (if others wait
                    // there) so that it cannot starve them by re-entering as new.
                    if from_new && !self.old_flows.is_empty() {
                        self.rotate_to_old(true);
                    } else {
                        if from_new {
                            self.new_flows.pop_front();
                        } else {
                            self.old_flows.pop_front();
                        }
                        self.flows[idx].list = FlowList::None;
                    }
                }
            }
        }
    }

    fn backlog_pkts(&self) -> u64 {
        self.backlog_pkts
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }

    fn sample(&self, now: Nanos, out: &mut Vec<QueueSample>) {
        // The oldest head among the active flows stands for the whole qdisc.
        let head_sojourn = self
            .new_flows
            .iter()
            .chain(self.old_flows.iter())
            .map(|&i| self.flows[i as usize].q.head_sojourn(now))
            .max()
            .unwrap_or(Nanos::ZERO);
        let s = QueueSample {
            backlog_pkts: self.backlog_pkts,
            backlog_bytes: self.backlog_bytes,
            head_sojourn,
            ..QueueSample::empty("fq")
        };
        out.push(s.with_counters(&self.stats));
    }

    fn stats(&self) -> AqmStats {
        self.stats
            .with_backlog(self.backlog_pkts, self.backlog_bytes)
    }

    /// Linux `tc_fq_codel_qd_stats`.
    fn xstats(&self, _now: Nanos) -> Vec<(&'static str, f64)> {
        let mut x = self.cstats.xstats(self.drop_overlimit);
        x.extend([
            ("new_flow_count", self.new_flow_count as f64),
            ("new_flows_len", self.new_flows.len() as f64),
            ("old_flows_len", self.old_flows.len() as f64),
            ("memory_usage", self.backlog_bytes as f64),
            ("drop_overmemory", self.drop_overmemory as f64),
        ]);
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;

    /// `mix64` is SplitMix64's finaliser: applied to the generator's first two states from
    /// seed 0 (k·0x9E3779B97F4A7C15) it gives the published first two outputs.
    #[test]
    fn mix64_is_the_splitmix64_finaliser() {
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        assert_eq!(mix64(GAMMA), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(GAMMA.wrapping_mul(2)), 0x6E78_9E6A_A1B9_65F4);
    }

    const MS: u64 = 1_000_000;

    fn fq(params: FqCodelParams) -> FqCodel {
        FqCodel::new(params, Rng::new(3)).unwrap()
    }

    /// Two flow ids that land in different buckets of `q`.
    fn distinct_flows(q: &FqCodel, n: usize) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut used = Vec::new();
        for f in 0..10_000u32 {
            let b = q.bucket(f);
            if !used.contains(&b) {
                used.push(b);
                out.push(f);
                if out.len() == n {
                    break;
                }
            }
        }
        out
    }

    fn deq(q: &mut FqCodel, t: u64, d: &mut Vec<Packet>) -> Option<Packet> {
        q.dequeue(Nanos(t), d)
    }

    #[test]
    fn a_sample_reports_the_oldest_head_among_the_flows() {
        // The sample's head sojourn is the largest head sojourn over the active flows (new
        // and old lists): flow A's head waited 5 ms at t = 5 ms, flow B's 3 ms.
        let mut q = fq(FqCodelParams::default());
        let f = distinct_flows(&q, 2);
        q.enqueue(Packet::new(0, f[0], 1514, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        q.enqueue(Packet::new(1, f[1], 1000, Ecn::NotEct), Nanos(2 * MS))
            .unwrap();
        let mut out = Vec::new();
        q.sample(Nanos(5 * MS), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].head_sojourn, Nanos(5 * MS));
        assert_eq!((out[0].backlog_pkts, out[0].backlog_bytes), (2, 2514));
        // Empty: no head, zero.
        let mut d = Vec::new();
        while deq(&mut q, 6 * MS, &mut d).is_some() {}
        out.clear();
        q.sample(Nanos(7 * MS), &mut out);
        assert_eq!(out[0].head_sojourn, Nanos::ZERO);
    }

    /// Linux fq_codel_dump_stats with two new flows and nothing dequeued yet.
    #[test]
    fn xstats_of_two_new_flows_before_any_dequeue() {
        let mut q = fq(FqCodelParams::default());
        let f = distinct_flows(&q, 2);
        q.enqueue(Packet::new(0, f[1], 1000, Ecn::NotEct), Nanos(7 * MS))
            .unwrap();
        q.enqueue(Packet::new(1, f[0], 500, Ecn::NotEct), Nanos(2 * MS))
            .unwrap();
        // Two new flows, none old yet; memory as queued bytes (1000 + 500); nothing dequeued,
        // so maxpacket (set in codel_should_drop) is still 0.
        let x: std::collections::HashMap<_, _> = q.xstats(Nanos(10 * MS)).into_iter().collect();
        assert_eq!(
            (x["new_flow_count"], x["new_flows_len"], x["old_flows_len"]),
            (2.0, 2.0, 0.0)
        );
        assert_eq!((x["memory_usage"], x["drop_overmemory"]), (1500.0, 0.0));
        assert_eq!((x["maxpacket"], x["drop_overlimit"]), (0.0, 0.0));
    }

    /// Linux `codel_dequeue` on an empty flow only clears `dropping`; `first_above_time` is
    /// cleared by `codel_should_drop` alone. So a flow that emptied while the qdisc backlog
    /// stayed above one MTU keeps its `first_above_time` and, back later, is dropped at once.
    #[test]
    fn emptied_flow_keeps_first_above_time() {
        let mut q = fq(FqCodelParams {
            ecn: false,
            ..Default::default()
        });
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let mut d = Vec::new();
        // t = 0: A0 (id 0) then B0..B9 (ids 10..19), 1514 B each.
        q.enqueue(Packet::new(0, a, 1514, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        for id in 10..20 {
            q.enqueue(Packet::new(id, b, 1514, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        // t = 10 ms, three dequeues:
        // 1. A0: sojourn 10 ms ≥ 5 ms, 10·1514 B left > 1514 → A.first_above_time = 110 ms.
        // 2. A's deficit 0 → +quantum, to old_flows; B0 (B.first_above_time = 110 ms).
        // 3. B's deficit 0 → to old_flows behind A; A is empty → codel_dequeue(A) returns
        //    NULL (dropping = false, first_above_time untouched) and A leaves the lists; B1.
        let ids: Vec<u64> = (0..3)
            .map(|_| deq(&mut q, 10 * MS, &mut d).unwrap().id)
            .collect();
        assert_eq!(ids, vec![0, 10, 11]);
        assert!(d.is_empty());
        assert_eq!(
            q.flows[q.bucket(a)].cvars.first_above_time,
            Some(Nanos(110 * MS))
        );
        // t = 200 ms: A1 (id 1) arrives; A is a new flow again, served first at t = 210 ms.
        // A1: sojourn 10 ms ≥ 5 ms, B2..B9 = 8·1514 B left > 1514, and 210 > 110 ms → drop;
        // A is then empty (should_drop(NULL) clears first_above_time), goes to old_flows.
        // B2: sojourn 210 ms, 7·1514 B left, 210 > 110 → drop; B3 is returned.
        q.enqueue(Packet::new(1, a, 1514, Ecn::NotEct), Nanos(200 * MS))
            .unwrap();
        let p = deq(&mut q, 210 * MS, &mut d).unwrap();
        assert_eq!(d.iter().map(|p| p.id).collect::<Vec<_>>(), vec![1, 12]);
        assert_eq!(p.id, 13);
    }

    #[test]
    fn drr_gives_equal_bytes_per_round() {
        // Flow A: 1500 B packets, flow B: 500 B packets, quantum Q = 1514, all served at t = 0
        // (sojourn 0: CoDel stays idle). Linux deficits:
        //   A (new, 1514): 1514 -> 14 -> -1486: two packets, then +Q = 28, to old_flows.
        //   B (new, 1514): 1514 -> 1014 -> 514 -> 14 -> -486: four packets, +Q = 1028.
        //   A: 28 -> -1472: one packet, +Q = 42.  B: 1028 -> 528 -> 28 -> -472: three, 1042.
        //   A: one packet, 56.  B: three packets, 1056.
        // Order: A A B B B B A B B B A B B B; after each B turn A - B = 1000 B.
        let mut q = fq(FqCodelParams::default());
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        // A's first packet arrives first, so A heads new_flows.
        for i in 0..1800 {
            if i < 600 {
                q.enqueue(Packet::new(i, a, 1500, Ecn::NotEct), Nanos::ZERO)
                    .unwrap();
            }
            q.enqueue(Packet::new(10_000 + i, b, 500, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        let mut d = Vec::new();
        let mut order = Vec::new();
        let (mut bytes_a, mut bytes_b) = (0i64, 0i64);
        let mut prev = None;
        for _ in 0..(300 * 4) {
            let p = deq(&mut q, 0, &mut d).unwrap();
            if prev == Some(b) && p.flow == a {
                // A B-turn just ended: within one quantum.
                assert!((bytes_a - bytes_b).abs() <= 1514, "{bytes_a} vs {bytes_b}");
            }
            if p.flow == a {
                bytes_a += p.bytes as i64;
            } else {
                bytes_b += p.bytes as i64;
            }
            // Mid-turn the gap stays below quantum + one packet.
            assert!((bytes_a - bytes_b).abs() <= 1514 + 1500);
            order.push(if p.flow == a { 'A' } else { 'B' });
            prev = Some(p.flow);
        }
        let first: String = order[..14].iter().collect();
        assert_eq!(first, "AABBBBABBBABBB");
        assert!(d.is_empty());
    }

    #[test]
    fn sparse_flow_is_served_before_the_bulk_flow() {
        // Bulk: 500 B packets, quantum 1514. Deficit 1514 -> 1014 -> 514 -> 14 -> -486 (4
        // packets); 5th call: +Q = 1028, bulk to old_flows, served -> 528.
        let mut q = fq(FqCodelParams::default());
        let f = distinct_flows(&q, 2);
        let (bulk, sparse) = (f[0], f[1]);
        for i in 0..20 {
            q.enqueue(Packet::new(i, bulk, 500, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        let mut d = Vec::new();
        for _ in 0..5 {
            assert_eq!(deq(&mut q, 0, &mut d).unwrap().flow, bulk);
        }
        assert_eq!(q.flow_list(q.bucket(bulk)), Some(FlowList::Old));
        // A packet of a new (sparse) flow jumps ahead of the 15 queued bulk packets.
        q.enqueue(Packet::new(100, sparse, 200, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        assert_eq!(q.flow_list(q.bucket(sparse)), Some(FlowList::New));
        assert_eq!(deq(&mut q, 0, &mut d).unwrap().id, 100); // sparse deficit 1514 -> 1314
                                                             // Next call: the sparse bucket is empty; as old_flows is non-empty it moves there,
                                                             // behind bulk (RFC 8290 §4.2), and bulk (deficit 528 > 0) is served -> 28.
        assert_eq!(deq(&mut q, 0, &mut d).unwrap().flow, bulk);
        assert_eq!(q.flow_list(q.bucket(sparse)), Some(FlowList::Old));
        // A second sparse packet now waits for its DRR turn: bulk (28 > 0) goes first -> -472,
        // then bulk is rotated (+Q = 1042) and the sparse bucket (1314 > 0) is served.
        q.enqueue(Packet::new(101, sparse, 200, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        assert_eq!(deq(&mut q, 0, &mut d).unwrap().flow, bulk);
        assert_eq!(deq(&mut q, 0, &mut d).unwrap().id, 101);
    }

    #[test]
    fn overflow_drops_half_of_the_fattest_flow() {
        // limit 20: A holds 15 x 1500 B = 22500 B, B holds 5. The 21st packet (on B) overflows:
        // fattest = A, threshold = 22500 / 2 = 11250 B -> head-drop 8 packets (12000 B >= 11250).
        let mut q = fq(FqCodelParams {
            limit: 20,
            ..Default::default()
        });
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        for i in 0..15 {
            q.enqueue(Packet::new(i, a, 1500, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        for i in 0..5 {
            q.enqueue(Packet::new(100 + i, b, 1500, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        assert!(q
            .enqueue(Packet::new(105, b, 1500, Ecn::NotEct), Nanos::ZERO)
            .is_ok());
        assert_eq!(q.backlog_pkts(), 21 - 8);
        assert_eq!(q.flow_vars(q.bucket(a)).unwrap().count, 8);
        let s = q.stats();
        assert_eq!(
            (s.enqueued, s.dropped_dequeue, s.dropped_enqueue),
            (21, 8, 0)
        );
        assert_eq!(s.enqueued, s.dequeued + s.dropped_dequeue + s.backlog_pkts);
        // fq_codel_enqueue: q->drop_overlimit += the batch dropped (no memory limit here).
        let x: std::collections::HashMap<_, _> = q.xstats(Nanos::ZERO).into_iter().collect();
        assert_eq!((x["drop_overlimit"], x["drop_overmemory"]), (8.0, 0.0));
        // The dropped packets come out with the next dequeue: A's first 8 (ids 0..8).
        let mut d = Vec::new();
        let p = deq(&mut q, 0, &mut d).unwrap();
        assert_eq!(p.id, 8);
        let ids: Vec<u64> = d.iter().map(|p| p.id).collect();
        assert_eq!(ids, (0..8).collect::<Vec<u64>>());
    }

    #[test]
    fn overflow_batch_is_capped_and_may_take_the_arriving_packet() {
        // drop_batch_size 3: same overflow as above stops after 3 packets.
        let mut q = fq(FqCodelParams {
            limit: 20,
            drop_batch_size: 3,
            ..Default::default()
        });
        let f = distinct_flows(&q, 2);
        for i in 0..21 {
            let flow = if i < 15 { f[0] } else { f[1] };
            q.enqueue(Packet::new(i, flow, 1500, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        assert_eq!(q.backlog_pkts(), 18);
        // limit 2: B holds 2 x 100 B; a 1500 B arrival on A makes A the fattest (1500 > 200),
        // threshold 750: its only packet - the arriving one - is dropped and handed back.
        let mut q = fq(FqCodelParams {
            limit: 2,
            ..Default::default()
        });
        let f = distinct_flows(&q, 2);
        q.enqueue(Packet::new(0, f[1], 100, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        q.enqueue(Packet::new(1, f[1], 100, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        let back = q
            .enqueue(Packet::new(2, f[0], 1500, Ecn::NotEct), Nanos::ZERO)
            .unwrap_err();
        assert_eq!(back.id, 2);
        let s = q.stats();
        assert_eq!(
            (s.enqueued, s.dropped_enqueue, s.dropped_dequeue),
            (2, 1, 0)
        );
        // Memory limit 4000 B: A 2 x 1500 + B 1 x 1500 = 4500 B > 4000 -> one drop from A
        // (3000 B fattest, threshold 1500 reached by one packet).
        let mut q = fq(FqCodelParams {
            memory_limit: Some(4000),
            ..Default::default()
        });
        let f = distinct_flows(&q, 2);
        q.enqueue(Packet::new(0, f[0], 1500, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        q.enqueue(Packet::new(1, f[0], 1500, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        q.enqueue(Packet::new(2, f[1], 1500, Ecn::NotEct), Nanos::ZERO)
            .unwrap();
        assert_eq!(q.backlog_bytes(), 3000);
        let x = q.xstats(Nanos::ZERO);
        assert!(x.contains(&("drop_overmemory", 1.0)));
    }

    #[test]
    fn ce_threshold_selector_marks_only_ect1() {
        // ce_threshold 1 ms, sojourn 2 ms (< 5 ms target, so only the threshold acts).
        // ect1_only = selector 0x01 / mask 0x03: ECT(1) -> CE; ECT(0) untouched; a packet already
        // CE (0x03 & 0x03 != 0x01) is not counted. Without a selector ECT(0) is marked too.
        for ect1_only in [true, false] {
            let mut q = fq(FqCodelParams {
                ce_threshold: Some(Nanos::from_ms(1)),
                ce_threshold_ect1_only: ect1_only,
                ..Default::default()
            });
            let f = distinct_flows(&q, 3);
            q.enqueue(Packet::new(0, f[0], 1500, Ecn::Ect1), Nanos::ZERO)
                .unwrap();
            q.enqueue(Packet::new(1, f[1], 1500, Ecn::Ect0), Nanos::ZERO)
                .unwrap();
            q.enqueue(Packet::new(2, f[2], 1500, Ecn::Ce), Nanos::ZERO)
                .unwrap();
            let mut d = Vec::new();
            let mut out = Vec::new();
            while let Some(p) = deq(&mut q, 2 * MS, &mut d) {
                out.push((p.id, p.ecn));
            }
            out.sort_by_key(|x| x.0);
            let ect0_after = if ect1_only { Ecn::Ect0 } else { Ecn::Ce };
            assert_eq!(
                out,
                vec![(0, Ecn::Ce), (1, ect0_after), (2, Ecn::Ce)],
                "ect1_only = {ect1_only}"
            );
            // ce_mark counts set_ce successes: 1 with the selector, 3 without (CE counts).
            assert_eq!(q.codel_stats().ce_mark, if ect1_only { 1 } else { 3 });
        }
    }

    #[test]
    fn codel_state_is_per_flow() {
        // A: 60 Not-ECT packets queued at t = 0 (sojourn = now). B: one fresh packet enqueued
        // just before each dequeue pair (sojourn 0). From 5 ms on A's sojourn is >= target;
        // after an interval A's CoDel drops; B's never leaves the "below" state.
        let mut q = fq(FqCodelParams::default());
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        for i in 0..60 {
            q.enqueue(Packet::new(i, a, 1500, Ecn::NotEct), Nanos::ZERO)
                .unwrap();
        }
        let mut d = Vec::new();
        let mut dropped_flows = Vec::new();
        for k in 1..=25u64 {
            let t = k * 10 * MS;
            q.enqueue(Packet::new(1000 + k, b, 1500, Ecn::NotEct), Nanos(t))
                .unwrap();
            deq(&mut q, t, &mut d);
            deq(&mut q, t, &mut d);
            dropped_flows.extend(d.drain(..).map(|p| p.flow));
        }
        assert!(!dropped_flows.is_empty());
        assert!(dropped_flows.iter().all(|&fl| fl == a));
        assert!(q.flow_vars(q.bucket(a)).unwrap().count >= 1);
        assert_eq!(q.flow_vars(q.bucket(b)).unwrap().count, 0);
    }

    #[test]
    fn hashing_is_seeded_and_in_range() {
        let q1 = FqCodel::new(FqCodelParams::default(), Rng::new(1)).unwrap();
        let q1b = FqCodel::new(FqCodelParams::default(), Rng::new(1)).unwrap();
        let q2 = FqCodel::new(FqCodelParams::default(), Rng::new(2)).unwrap();
        let map = |q: &FqCodel| (0..200u32).map(|f| q.bucket(f)).collect::<Vec<_>>();
        assert_eq!(map(&q1), map(&q1b));
        assert_ne!(map(&q1), map(&q2));
        assert!(map(&q1).iter().all(|&b| b < 1024));
        // 200 flows in 1024 buckets: expected distinct buckets 1024 (1 - (1023/1024)^200) = 181.
        let mut m = map(&q1);
        m.sort();
        m.dedup();
        assert!(m.len() > 165, "{}", m.len());
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = |p: FqCodelParams| FqCodel::new(p, Rng::new(0)).unwrap_err().param;
        assert_eq!(
            bad(FqCodelParams {
                quantum: 100,
                ..Default::default()
            }),
            "quantum"
        );
        assert_eq!(
            bad(FqCodelParams {
                flows: 0,
                ..Default::default()
            }),
            "flows"
        );
        assert_eq!(
            bad(FqCodelParams {
                ce_threshold_ect1_only: true,
                ce_threshold_mask: 3,
                ..Default::default()
            }),
            "ce_threshold_ect1_only"
        );
        let d = FqCodelParams::default();
        assert!(d.ecn);
        assert_eq!((d.flows, d.quantum, d.limit), (1024, 1514, 10240));
    }
}
