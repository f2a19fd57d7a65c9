//! Native L4S AQM of the L-queue: Linux's step threshold (time or packets), or RFC 9332's ramp.
//! Step follows Linux `do_step_aqm` / `skb_apply_step`; the ramp follows RFC 9332 §A.1 `laqm()`.

use crate::time::Nanos;

/// Linux step threshold: `step_thresh` in time (default 1 ms) or in packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StepThresh {
    /// Mark when the packet's sojourn time is strictly greater than this.
    Time(Nanos),
    /// Mark when the L-queue, after this packet left it, holds strictly more packets than this
    /// (Linux compares `qdisc_qlen(l_queue)` after the dequeue).
    Packets(u64),
}

/// Linux step AQM.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Marking threshold, in time or in packets (Linux `step_thresh`).
    pub thresh: StepThresh,
}

impl Step {
    /// `do_step_aqm`'s test, for a packet whose `apply_step` flag is set (decided at enqueue
    /// from `min_qlen_step`).
    pub fn exceeded(&self, sojourn: Nanos, l_len_after_pkts: u64) -> bool {
        match self.thresh {
            StepThresh::Time(t) => sojourn > t,
            StepThresh::Packets(n) => l_len_after_pkts > n,
        }
    }
}

/// RFC 9332 §A.1 ramp: 0 up to `min_th`, linear to 1 over `range`, 1 from maxTh = min_th+range.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ramp {
    /// Ramp start (RFC 9332 §A.1 `minTh`).
    pub min_th: Nanos,
    /// Width of the ramp (> 0).
    pub range: Nanos,
    /// RFC `Th_len`: no native ramp mark while the L-queue, counting the packet being
    /// dequeued, holds ≤ th_len packets (do not mark a lone packet on a slow link).
    ///
    /// Reading chosen: RFC 9332 §A.1 tests `lq.len() > Th_len` on the line after
    /// `lq.dequeue(pkt)`, which taken literally counts only the packets left behind (so with
    /// Th_len = 1 a queue of 1 or 2 is never ramp-marked); its comments ("> 1 packet queued",
    /// "suppress marking 1 pkt queue") describe the queue including the packet, which we
    /// follow. Set `th_len = 2` for the literal reading with the RFC default.
    pub th_len_pkts: u64,
}

impl Ramp {
    /// Native L4S marking probability p'_L = laqm(sojourn).
    pub fn prob(&self, sojourn: Nanos, l_len_incl_pkts: u64) -> f64 {
        if l_len_incl_pkts <= self.th_len_pkts {
            return 0.0;
        }
        let max_th = self.min_th.saturating_add(self.range);
        if sojourn >= max_th {
            1.0
        } else if sojourn > self.min_th {
            (sojourn - self.min_th).as_ns() as f64 / self.range.as_ns() as f64
        } else {
            0.0
        }
    }
}

/// The L-queue's native AQM, chosen by `l_aqm = "step" | "ramp"`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LAqm {
    /// Linux default: step marks OR-ed with the independent coupled roll.
    Step(Step),
    /// RFC 9332: one roll at p_L = max(ramp(sojourn), p_CL).
    Ramp(Ramp),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_step_is_strictly_greater() {
        let s = Step {
            thresh: StepThresh::Time(Nanos::from_ms(1)),
        };
        assert!(!s.exceeded(Nanos::from_us(999), 100));
        assert!(!s.exceeded(Nanos::from_ms(1), 100)); // equal: no mark ('>' in Linux)
        assert!(s.exceeded(Nanos::from_ns(1_000_001), 0));
    }

    #[test]
    fn packet_step_counts_the_queue_behind() {
        let s = Step {
            thresh: StepThresh::Packets(5),
        };
        assert!(!s.exceeded(Nanos::from_secs(9), 5)); // 5 left, not > 5
        assert!(s.exceeded(Nanos::ZERO, 6));
    }

    #[test]
    fn ramp_matches_rfc_shape() {
        // RFC 9332 §A.1 defaults: minTh = 800 us, range = 400 us (maxTh = 1.2 ms), Th_len = 1.
        let r = Ramp {
            min_th: Nanos::from_us(800),
            range: Nanos::from_us(400),
            th_len_pkts: 1,
        };
        assert_eq!(r.prob(Nanos::from_us(800), 10), 0.0);
        // 900 us: (900−800)/400 = 0.25; 1100 us: 300/400 = 0.75.
        assert!((r.prob(Nanos::from_us(900), 10) - 0.25).abs() < 1e-12);
        assert!((r.prob(Nanos::from_us(1100), 10) - 0.75).abs() < 1e-12);
        assert_eq!(r.prob(Nanos::from_us(1200), 10), 1.0);
        assert_eq!(r.prob(Nanos::from_ms(50), 10), 1.0);
        // A lone packet (queue of 1 ≤ Th_len) is never marked by the ramp.
        assert_eq!(r.prob(Nanos::from_ms(50), 1), 0.0);
    }
}
