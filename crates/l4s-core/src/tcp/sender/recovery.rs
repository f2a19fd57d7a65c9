//! Loss marking and window reduction of the TCP sender: RFC 6675 `IsLost` (DupThresh),
//! Linux `tcp_mark_lost_retrans`, `tcp_newreno_mark_lost`, PRR (`tcp_cwnd_reduction`,
//! RFC 6937), `tcp_enter_loss`.

use super::{TcpSender, DUP_THRESH};
use crate::cc::{CaState, CwndEvent, EcnMode};
use crate::time::Nanos;

impl TcpSender {
    /// RFC 6675 `IsLost`: mark every unSACKed segment with ≥ DupThresh SACKed segments above
    /// it. Returns the number newly marked.
    ///
    /// Every unSACKed segment below the DupThresh-th highest SACKed one is lost, and that
    /// segment only moves up, so only the range above the previous one (`lost_mark_seq`) is
    /// visited: amortised O(1) per ACK instead of a walk over the window.
    pub(super) fn mark_lost_dupthresh(&mut self) -> u32 {
        if self.sacked_out < DUP_THRESH || self.segs.is_empty() {
            return 0;
        }
        // Find the DupThresh-th highest SACKed segment, walking down from the highest one.
        let top = self.seg_index(self.highest_sacked_end.saturating_sub(1));
        let mut i = top.min(self.segs.len() - 1);
        let mut count = 0u32;
        let third = loop {
            if self.segs[i].sacked {
                count += 1;
                if count == DUP_THRESH {
                    break Some(i);
                }
            }
            if i == 0 {
                break None;
            }
            i -= 1;
        };
        let Some(third) = third else { return 0 };
        let limit_seq = self.segs[third].seq;
        let from = self.seg_index(self.lost_mark_seq.max(self.snd_una));
        let mut newly = 0u32;
        for j in from..third {
            let s = &mut self.segs[j];
            if !s.sacked && !s.lost {
                s.lost = true;
                newly += 1;
                self.retransmit_hint = self.retransmit_hint.min(s.seq);
            }
        }
        self.lost_mark_seq = self.lost_mark_seq.max(limit_seq);
        self.lost_out += newly;
        newly
    }

    /// Lost retransmissions (Linux 3.x `tcp_mark_lost_retrans`, the DupThresh rule applied to
    /// retransmissions): a retransmission is lost when SACKs reach DupThresh segments beyond
    /// the `snd_nxt` it was sent at; it is marked for another retransmission without an RTO.
    pub(super) fn mark_lost_retrans(&mut self) -> u32 {
        if self.retrans_out == 0 {
            // Every entry is stale: nothing is in retransmission.
            self.retrans_fifo.clear();
            return 0;
        }
        let received_upto = self.highest_sacked_end;
        let margin = DUP_THRESH as u64 * self.tp.mss as u64;
        let mut newly = 0u32;
        // The FIFO is ordered by `retrans_nxt`, so the retransmissions the rule can hit are
        // its head: O(1) per ACK while none is lost, where Linux 3.x walks the queue.
        while let Some(&(seq, nxt)) = self.retrans_fifo.front() {
            if received_upto < nxt + margin {
                break;
            }
            self.retrans_fifo.pop_front();
            if seq < self.snd_una {
                continue; // cumulatively acknowledged since
            }
            let i = self.seg_index(seq);
            let Some(s) = self.segs.get_mut(i) else {
                continue;
            };
            // Stale unless still in retransmission; a segment resent later has a newer
            // entry, and its own (current) `retrans_nxt` decides.
            if s.seq == seq && s.retrans && received_upto >= s.retrans_nxt + margin {
                s.retrans = false;
                newly += 1;
                self.retransmit_hint = self.retransmit_hint.min(seq);
            }
        }
        self.retrans_out -= newly;
        newly
    }

    /// `tcp_limit_reno_sacked`: duplicate ACKs cannot stand for more segments than are out
    /// beyond the holes (at least one).
    pub(super) fn limit_reno_sacked(&mut self) {
        let holes = self.lost_out.max(1).min(self.packets_out);
        if self.reno_sacked + holes > self.packets_out {
            self.reno_sacked = self.packets_out - holes;
        }
    }

    /// Mark the head segment lost (NewReno); returns 1 if it was newly marked.
    pub(super) fn mark_head_lost(&mut self) -> u32 {
        match self.segs.front_mut() {
            Some(s) if !s.lost && !s.sacked => {
                s.lost = true;
                self.lost_out += 1;
                self.retransmit_hint = self.retransmit_hint.min(s.seq);
                1
            }
            _ => 0,
        }
    }

    /// `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.sync_tp();
        self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
        if self.tp.ecn == EcnMode::Classic {
            self.cwr_pending = true;
        }
    }

    /// `tcp_end_cwnd_reduction`: nothing for a CC with `cong_control` (BBR, Prague), whose
    /// window is its own; else cwnd = ssthresh and `CA_EVENT_COMPLETE_CWR`.
    pub(super) fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.tp.snd_ssthresh < u32::MAX
            && matches!(self.tp.ca_state, CaState::Cwr | CaState::Recovery)
        {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
        self.sync_tp();
        self.cc.cwnd_event(&mut self.tp, CwndEvent::CompleteCwr);
    }

    /// `tcp_cwnd_reduction` (PRR, RFC 6937 with Linux's slow-start reduction bound).
    pub(super) fn cwnd_reduction(
        &mut self,
        newly_acked_sacked: u32,
        newly_lost: u32,
        una_advanced: bool,
    ) {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return;
        }
        let in_flight = self.in_flight() as i64;
        let ssthresh = self.tp.snd_ssthresh as i64;
        let delta = ssthresh - in_flight;
        self.prr_delivered += newly_acked_sacked;
        let mut sndcnt: i64 = if delta < 0 {
            // Proportional rate reduction: ceil(prr_delivered·ssthresh / prior_cwnd) − prr_out.
            let dividend = ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else {
            let mut s =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tp.snd_cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    pub(super) fn enter_recovery(&mut self) {
        if !matches!(self.tp.ca_state, CaState::Cwr | CaState::Recovery) {
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    pub(super) fn enter_cwr(&mut self) {
        if matches!(self.tp.ca_state, CaState::Open | CaState::Disorder) {
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// RTO expiry (`tcp_retransmit_timer` → `tcp_enter_loss`).
    pub(super) fn on_rto(&mut self, now: Nanos) {
        self.rto_count += 1;
        self.tlp_deadline = None;
        self.tlp_pending = false;
        self.tlp_high_seq = None;
        self.tlp_probe = None;
        let st = self.tp.ca_state;
        if matches!(st, CaState::Open | CaState::Disorder)
            || self.high_seq <= self.snd_una
            || (st == CaState::Loss && self.rtt.backoff() == 0)
        {
            self.sync_tp();
            self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
            self.cc.cwnd_event(&mut self.tp, CwndEvent::Loss);
        }
        // tcp_timeout_mark_lost: everything not SACKed is lost; no retransmission is in flight.
        let mut newly = 0u64;
        for s in self.segs.iter_mut() {
            s.retrans = false;
            if !s.sacked && !s.lost {
                s.lost = true;
                newly += 1;
            }
        }
        self.lost_pkts += newly;
        self.retransmit_hint = self.snd_una;
        self.retrans_out = 0;
        self.retrans_fifo.clear();
        self.reno_sacked = 0;
        self.lost_out = self.segs.iter().filter(|s| s.lost).count() as u32;
        self.tp.snd_cwnd = self.in_flight() + 1;
        self.tp.snd_cwnd_cnt = 0;
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.snd_nxt;
        if self.tp.ecn == EcnMode::Classic {
            self.cwr_pending = true;
        }
        self.rtt.on_timeout();
        self.rto_deadline = Some(now + self.rtt.rto());
    }
}

/// A few byte ranges without allocation: 3 SACK blocks, each cut into at most 4 pieces by
/// the 3 cached blocks, fit in 12.
#[derive(Clone, Copy, Default)]
pub(super) struct Ranges {
    v: [(u64, u64); 12],
    n: usize,
}

impl Ranges {
    pub(super) fn push(&mut self, r: (u64, u64)) {
        if self.n < self.v.len() {
            self.v[self.n] = r;
            self.n += 1;
        }
    }
    pub(super) fn as_slice(&self) -> &[(u64, u64)] {
        &self.v[..self.n]
    }
}

/// Append to `out` the parts of [start, end) not covered by any of `cached`.
///
/// The pieces live in small arrays on the stack: a block can split only the one piece it
/// lies strictly inside, so three blocks leave at most four pieces (copying a whole
/// [`Ranges`] per block cost more than the subtraction itself).
pub(super) fn subtract_ranges(start: u64, end: u64, cached: &[(u64, u64); 3], out: &mut Ranges) {
    // Most blocks of an ACK repeat one of the previous ACK's unchanged: nothing is new.
    if cached
        .iter()
        .any(|&(cs, ce)| cs < ce && cs <= start && end <= ce)
    {
        return;
    }
    let mut pieces = [(start, end); 4];
    let mut n = 1;
    for &(cs, ce) in cached {
        if cs >= ce {
            continue;
        }
        let mut next = [(0u64, 0u64); 4];
        let mut m = 0;
        for &(s, e) in &pieces[..n] {
            if ce <= s || cs >= e {
                next[m] = (s, e);
                m += 1;
                continue;
            }
            if s < cs {
                next[m] = (s, cs);
                m += 1;
            }
            if ce < e {
                next[m] = (ce, e);
                m += 1;
            }
        }
        pieces = next;
        n = m;
    }
    for &r in &pieces[..n] {
        out.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::{subtract_ranges, Ranges};

    #[test]
    fn sack_cache_subtraction() {
        let mut out = Ranges::default();
        // [10, 50) minus {[20, 30), [40, 60)} = [10, 20) + [30, 40).
        subtract_ranges(10, 50, &[(20, 30), (40, 60), (0, 0)], &mut out);
        assert_eq!(out.as_slice(), [(10, 20), (30, 40)]);
        let mut out = Ranges::default();
        subtract_ranges(10, 50, &[(0, 100), (0, 0), (0, 0)], &mut out);
        assert!(out.as_slice().is_empty());
        subtract_ranges(10, 50, &[(0, 0); 3], &mut out);
        assert_eq!(out.as_slice(), [(10, 50)]);
        // Three cached blocks inside cut one range into four pieces.
        let mut out = Ranges::default();
        subtract_ranges(0, 100, &[(10, 20), (30, 40), (50, 60)], &mut out);
        assert_eq!(out.as_slice(), [(0, 10), (20, 30), (40, 50), (60, 100)]);
    }
}
