//! DualQ schedulers: Linux's credit-based WRR (C-queue protection) and RFC 9332's time-shifted FIFO.
//! WRR follows Linux `dequeue_packet` / `dualpi2_calculate_c_protection`; TS-FIFO RFC 9332 §A.1/§4.2.2.

use super::classifier::QueueId;
use crate::time::Nanos;

/// What the scheduler sees of the two queues when it picks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HeadView {
    /// Packets in the L-queue.
    pub l_pkts: u64,
    /// Packets in the C-queue.
    pub c_pkts: u64,
    /// Sojourn time of the L-queue head.
    pub l_sojourn: Nanos,
    /// Sojourn time of the C-queue head.
    pub c_sojourn: Nanos,
}

/// A pick: which queue to take the head from, and the WRR credit change per byte to apply
/// if (and only if) the packet is actually sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pick {
    /// The queue whose head leaves next.
    pub queue: QueueId,
    credit_per_byte: i64,
}

/// Linux credit WRR. `credit` starts at MTU·(wc − wl) (negative by default, so L goes first);
/// L is served while C is empty or credit ≤ 0, and then credit += wc·len if C was non-empty;
/// C is served otherwise, credit −= wl·len if L was non-empty. Dropped packets do not change
/// the credit; a dequeue attempt that finds both queues empty resets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreditWrr {
    wc: i64,
    wl: i64,
    init: i64,
    credit: i64,
}

impl CreditWrr {
    /// `c_protection_pct` = wc in percent (0..=100), wl = 100 − wc.
    pub fn new(c_protection_pct: u8, mtu_bytes: u32) -> Self {
        let wc = c_protection_pct as i64;
        let wl = 100 - wc;
        let init = mtu_bytes as i64 * (wc - wl);
        CreditWrr {
            wc,
            wl,
            init,
            credit: init,
        }
    }
    /// The WRR credit now (Linux `c_protection_credit`).
    pub fn credit(&self) -> i64 {
        self.credit
    }
    fn pick(&mut self, v: &HeadView) -> Option<Pick> {
        if v.l_pkts > 0 && (v.c_pkts == 0 || self.credit <= 0) {
            Some(Pick {
                queue: QueueId::L,
                credit_per_byte: if v.c_pkts > 0 { self.wc } else { 0 },
            })
        } else if v.c_pkts > 0 {
            Some(Pick {
                queue: QueueId::C,
                credit_per_byte: if v.l_pkts > 0 { -self.wl } else { 0 },
            })
        } else {
            self.credit = self.init;
            None
        }
    }
}

/// RFC 9332 time-shifted FIFO: serve L when its head has waited at least as long as the C
/// head minus `tshift` (`lq.time() + tshift >= cq.time()`), i.e. C must be `tshift` older
/// to win.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TsFifo {
    /// How much older the C head must be to go before the L head.
    pub tshift: Nanos,
}

impl TsFifo {
    fn pick(&self, v: &HeadView) -> Option<Pick> {
        let queue = if v.l_pkts > 0
            && (v.c_pkts == 0 || v.l_sojourn.saturating_add(self.tshift) >= v.c_sojourn)
        {
            QueueId::L
        } else if v.c_pkts > 0 {
            QueueId::C
        } else {
            return None;
        };
        Some(Pick {
            queue,
            credit_per_byte: 0,
        })
    }
}

/// The scheduler between the two queues, chosen by `scheduler = "wrr" | "tsfifo"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// Linux credit-based weighted round robin (`scheduler = "wrr"`).
    Wrr(CreditWrr),
    /// RFC 9332 time-shifted FIFO (`scheduler = "tsfifo"`).
    TsFifo(TsFifo),
}

impl Scheduler {
    /// Choose the queue to dequeue from; `None` when both are empty.
    pub fn pick(&mut self, v: &HeadView) -> Option<Pick> {
        match self {
            Scheduler::Wrr(w) => w.pick(v),
            Scheduler::TsFifo(t) => t.pick(v),
        }
    }
    /// The picked packet of `bytes` was sent (not dropped): apply its credit change.
    pub fn on_sent(&mut self, pick: Pick, bytes: u32) {
        if let Scheduler::Wrr(w) = self {
            w.credit += pick.credit_per_byte * bytes as i64;
        }
    }
    /// WRR credit (Linux xstat `credit`); `None` for schedulers without one.
    pub fn credit(&self) -> Option<i64> {
        match self {
            Scheduler::Wrr(w) => Some(w.credit),
            Scheduler::TsFifo(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(l: u64, c: u64) -> HeadView {
        HeadView {
            l_pkts: l,
            c_pkts: c,
            l_sojourn: Nanos::ZERO,
            c_sojourn: Nanos::ZERO,
        }
    }

    /// Drive the scheduler alone over `l` L and `c` C packets of 1500 B, all sent.
    fn order(s: &mut Scheduler, mut l: u64, mut c: u64) -> String {
        let mut out = String::new();
        while let Some(p) = s.pick(&view(l, c)) {
            match p.queue {
                QueueId::L => {
                    l -= 1;
                    out.push('L')
                }
                QueueId::C => {
                    c -= 1;
                    out.push('C')
                }
            }
            s.on_sent(p, 1500);
        }
        out
    }

    #[test]
    fn wrr_initial_credit_is_mtu_times_weight_difference() {
        // wc = 10, wl = 90, MTU 1500: 1500·(10 − 90) = −120000.
        assert_eq!(CreditWrr::new(10, 1500).credit(), -120_000);
        // wc = 50: 0 → L still first (credit ≤ 0).
        assert_eq!(CreditWrr::new(50, 1500).credit(), 0);
    }

    #[test]
    fn wrr_c_protection_50_alternates() {
        // credit 0 → L (+50·1500 = 75000) → C (−50·1500 → 0) → L ...
        let mut s = Scheduler::Wrr(CreditWrr::new(50, 1500));
        assert_eq!(order(&mut s, 3, 3), "LCLCLC");
    }

    #[test]
    fn tsfifo_prefers_l_unless_c_is_tshift_older() {
        let s = TsFifo {
            tshift: Nanos::from_ms(30),
        };
        let mut v = view(1, 1);
        v.l_sojourn = Nanos::from_ms(1);
        v.c_sojourn = Nanos::from_ms(31); // 1 + 30 >= 31 → L
        assert_eq!(s.pick(&v).unwrap().queue, QueueId::L);
        v.c_sojourn = Nanos::from_ns(31_000_001); // C older by more than tshift → C
        assert_eq!(s.pick(&v).unwrap().queue, QueueId::C);
        assert_eq!(s.pick(&view(0, 0)), None);
    }
}
