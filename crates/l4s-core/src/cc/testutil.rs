//! Test-only stand-in for the TCP sender: feeds a CC synthetic ACK streams at a fixed RTT,
//! calling the hooks in the order `tcp_ack()` does (pkts_acked, in_ack_event, CWR, cong_*).

use super::{AckSample, CaState, CcState, CongestionControl, EcnMode};
use crate::time::Nanos;

pub const MSS: u32 = 1448;

/// A greedy sender that keeps its window full: one ACK per packet, ACKs spread evenly over
/// the RTT. Classic ECE makes it enter CWR once per window with `cwnd = ssthresh()` at once
/// (a simplification of PRR, enough for CC unit tests).
pub struct Driver {
    pub tp: CcState,
    pub now: Nanos,
    cwr_high_seq: Option<u64>,
}

impl Driver {
    pub fn new(cc: &mut dyn CongestionControl, ecn: EcnMode, rtt: Nanos) -> Self {
        Driver::with_cwnd(cc, ecn, rtt, 10, u32::MAX)
    }

    /// As `new`, with the window (and one window in flight) and ssthresh set before `init`.
    pub fn with_cwnd(
        cc: &mut dyn CongestionControl,
        ecn: EcnMode,
        rtt: Nanos,
        cwnd: u32,
        ssthresh: u32,
    ) -> Self {
        let mut tp = CcState::new(MSS);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        tp.ecn = ecn;
        tp.srtt = rtt;
        tp.min_rtt = rtt;
        tp.snd_nxt = tp.snd_cwnd as u64 * MSS as u64;
        tp.packets_in_flight = tp.snd_cwnd;
        // A bulk sender that fills its window (`tcp_cwnd_validate` recorded it).
        tp.is_cwnd_limited = true;
        cc.init(&mut tp);
        Driver {
            tp,
            now: Nanos::from_secs(1),
            cwr_high_seq: None,
        }
    }

    /// One ACK covering `acked` packets of which `ce` were CE-marked.
    pub fn ack(&mut self, cc: &mut dyn CongestionControl, acked: u32, ce: u32, rtt: Nanos) {
        let tp = &mut self.tp;
        tp.packets_in_flight = tp.snd_cwnd;
        let prior_delivered = tp.delivered;
        tp.snd_una += acked as u64 * MSS as u64;
        tp.delivered += acked as u64;
        tp.delivered_ce += ce as u64;
        let ack = AckSample {
            now: self.now,
            acked_pkts: acked,
            acked_bytes: acked as u64 * MSS as u64,
            rtt: Some(rtt),
            ece: ce > 0,
            ce_delta_pkts: ce,
            prior_delivered,
            rs_delivered: tp.snd_cwnd as u64,
            rs_interval: rtt,
            is_app_limited: false,
            losses: 0,
            prior_in_flight: tp.packets_in_flight,
        };
        cc.pkts_acked(tp, &ack);
        cc.in_ack_event(tp, &ack);
        if !cc.handles_ecn() && tp.ecn != EcnMode::None {
            if let Some(h) = self.cwr_high_seq {
                // Linux holds CWR until something *above* high_seq is ACKed.
                if tp.snd_una > h {
                    self.cwr_high_seq = None;
                    cc.set_state(tp, CaState::Open);
                    tp.ca_state = CaState::Open;
                }
            }
            if ack.ece && self.cwr_high_seq.is_none() {
                let s = cc.ssthresh(tp);
                tp.snd_ssthresh = s;
                tp.snd_cwnd = s;
                cc.set_state(tp, CaState::Cwr);
                tp.ca_state = CaState::Cwr;
                self.cwr_high_seq = Some(tp.snd_nxt);
            }
        }
        if cc.has_cong_control() {
            cc.cong_control(tp, &ack);
        } else if matches!(tp.ca_state, CaState::Open | CaState::Disorder) {
            cc.cong_avoid(tp, &ack);
        }
        let next = tp.snd_una + tp.snd_cwnd as u64 * MSS as u64;
        tp.snd_nxt = tp.snd_nxt.max(next);
    }

    /// One round trip: one single-packet ACK for each packet in flight at its start
    /// (snd_nxt − snd_una), spaced evenly over `rtt`; `marked(i)` says whether the i-th
    /// carries CE. Returns the number of ACKs.
    pub fn round(
        &mut self,
        cc: &mut dyn CongestionControl,
        rtt: Nanos,
        mut marked: impl FnMut(u32) -> bool,
    ) -> u32 {
        let w = ((self.tp.snd_nxt - self.tp.snd_una) / MSS as u64).max(1) as u32;
        let gap = Nanos(rtt.as_ns() / w as u64);
        for i in 0..w {
            self.now += gap;
            let ce = marked(i) as u32;
            self.ack(cc, 1, ce, rtt);
        }
        w
    }
}
