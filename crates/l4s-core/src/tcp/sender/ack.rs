//! The ACK path of the TCP sender, one method per step of Linux `tcp_ack()`
//! (net/ipv4/tcp_input.c), called in the order `on_ack` lists them.

use super::recovery::{subtract_ranges, Ranges};
use super::{Seg, TcpSender, DUP_THRESH};
use crate::cc::{AckSample, CaState, EcnMode};
use crate::packet::{tcp_flags, TcpHeader};
use crate::time::Nanos;

/// Per-ACK rate-sample bookkeeping (Linux `struct rate_sample` while it is being built).
#[derive(Default)]
struct RateBuild {
    prior_delivered: Option<u64>,
    prior_mstamp: Nanos,
    /// Send-phase interval of the newest delivered segment.
    snd_interval: Nanos,
    is_app_limited: bool,
    newest_tx: Nanos,
    newest_end: u64,
}

impl RateBuild {
    /// `tcp_rate_skb_delivered`: remember the most recently sent delivered segment.
    fn skb_delivered(&mut self, s: &Seg) {
        let newer = match self.prior_delivered {
            None => true,
            Some(_) => {
                s.tx_time > self.newest_tx
                    || (s.tx_time == self.newest_tx && s.end() > self.newest_end)
            }
        };
        if newer {
            self.prior_delivered = Some(s.delivered);
            self.prior_mstamp = s.delivered_mstamp;
            self.is_app_limited = s.app_limited;
            self.newest_tx = s.tx_time;
            self.newest_end = s.end();
            self.snd_interval = s.tx_time - s.first_tx_mstamp;
        }
    }
}

/// The finished rate sample (`tcp_rate_gen`): packets delivered over the interval.
struct RateSample {
    prior_delivered: u64,
    delivered: u64,
    interval: Nanos,
}

/// What one ACK has changed so far, handed from step to step (Linux keeps it in `tcp_ack`'s
/// locals, `struct tcp_sacktag_state` and `struct rate_sample`).
struct AckState {
    /// The cumulative acknowledgement number.
    ack: u64,
    /// `snd_una` before this ACK.
    prior_una: u64,
    /// `tp->delivered` before this ACK.
    prior_delivered: u64,
    prior_in_flight: u32,
    rb: RateBuild,
    /// Payload bytes newly SACKed or cumulatively acknowledged.
    acked_bytes: u64,
    /// Send times of the oldest and newest newly SACKed never-retransmitted segments.
    first_sackt: Option<Nanos>,
    last_sackt: Option<Nanos>,
    /// Send times of the oldest and newest cumulatively acknowledged never-retransmitted ones.
    first_ackt: Option<Nanos>,
    last_ackt: Option<Nanos>,
    /// A retransmitted segment was cumulatively acknowledged (`FLAG_RETRANS_DATA_ACKED`).
    retrans_data_acked: bool,
    /// Segments the cumulative ACK removed from the queue.
    pkts_cum_acked: u32,
    /// Segments newly delivered: SACKed, cumulatively acknowledged or (NewReno) dupACKed.
    newly_acked_sacked: u32,
    /// Segments newly marked lost (`rs->losses`).
    newly_lost: u32,
    /// Congestion was signalled: ECE (classic) or a grown ACE counter (AccECN).
    ece: bool,
    /// Newly CE-marked packets the ACK reports.
    ce_delta: u64,
    /// RTT sample for the CC and min_rtt (`ca_rtt_us`).
    ca_rtt: Option<Nanos>,
}

impl AckState {
    /// Nothing changed yet: the ACK number and the sender's state before it.
    fn new(ack: u64, snd: &TcpSender) -> Self {
        AckState {
            ack,
            prior_una: snd.snd_una,
            prior_delivered: snd.tp.delivered,
            prior_in_flight: snd.in_flight(),
            rb: RateBuild::default(),
            acked_bytes: 0,
            first_sackt: None,
            last_sackt: None,
            first_ackt: None,
            last_ackt: None,
            retrans_data_acked: false,
            pkts_cum_acked: 0,
            newly_acked_sacked: 0,
            newly_lost: 0,
            ece: false,
            ce_delta: 0,
            ca_rtt: None,
        }
    }

    /// The ACK advanced `snd_una` (Linux `FLAG_SND_UNA_ADVANCED`).
    fn una_advanced(&self) -> bool {
        self.ack > self.prior_una
    }

    /// What the CC hooks see of this ACK (Linux `struct ack_sample` and `struct rate_sample`).
    fn sample(&self, now: Nanos, rs: &RateSample) -> AckSample {
        AckSample {
            now,
            acked_pkts: self.newly_acked_sacked,
            acked_bytes: self.acked_bytes,
            rtt: self.ca_rtt,
            ece: self.ece,
            ce_delta_pkts: self.ce_delta as u32,
            prior_delivered: rs.prior_delivered,
            rs_delivered: rs.delivered,
            rs_interval: rs.interval,
            is_app_limited: self.rb.is_app_limited,
            losses: self.newly_lost,
            prior_in_flight: self.prior_in_flight,
        }
    }
}

impl TcpSender {
    /// `tcp_ack`: process one ACK of an established connection.
    pub(super) fn on_ack(&mut self, h: &TcpHeader, now: Nanos) {
        if h.ack > self.snd_nxt || h.ack < self.snd_una {
            // Acknowledges data never sent, or older than what is already acknowledged
            // (reordered ACK): ignored, as Linux does for the cumulative part.
            return;
        }
        self.ts_recent = h.ts_val;
        let mut a = AckState::new(h.ack, self);
        if self.is_sack() {
            self.sacktag_write_queue(h, &mut a); // tcp_sacktag_write_queue
        }
        self.clean_rtx_queue(&mut a); // tcp_clean_rtx_queue
        if !self.is_sack() {
            self.count_reno_dupacks(h, &mut a); // tcp_add_reno_sack, tcp_remove_reno_sacks
        }
        a.newly_acked_sacked = (self.tp.delivered - a.prior_delivered) as u32;
        if self.is_sack() {
            a.newly_lost += self.mark_sack_losses(a.ack); // RFC 6675 IsLost, tcp_mark_lost_retrans
        }
        self.ecn_feedback(h, &mut a); // FLAG_ECE, tcp_accecn_process
        self.ack_update_rtt(h, now, &mut a); // tcp_ack_update_rtt
        let rs = self.rate_gen(now, &a); // tcp_rate_gen
        let mut sample = a.sample(now, &rs);
        self.ca_ack_hooks(&sample); // pkts_acked, tcp_in_ack_event
        self.process_tlp_ack(a.ack, a.una_advanced(), a.newly_acked_sacked); // tcp_process_tlp_ack
        self.fastretrans_alert(&mut a); // tcp_fastretrans_alert
        sample.losses = a.newly_lost; // rs->losses, now with NewReno's head marking
        self.cong_control(&sample, a.una_advanced()); // tcp_cong_control
        self.set_xmit_timer(now, a.una_advanced()); // tcp_set_xmit_timer
        self.check_space(a.una_advanced()); // tcp_check_space (SOCK_QUEUE_SHRUNK)
    }

    /// `tcp_sacktag_write_queue`: tag the segments that this ACK's SACK blocks newly cover.
    fn sacktag_write_queue(&mut self, h: &TcpHeader, a: &mut AckState) {
        if h.n_sack == 0 {
            // Most ACKs carry no SACK block: nothing to tag, and no cached block survives.
            if self.sack_cache_used {
                self.sack_cache = [(0, 0); 3];
                self.sack_cache_used = false;
            }
            return;
        }
        let mut ranges = Ranges::default();
        for (start, end) in h.sack_blocks() {
            if end > self.snd_una.max(a.ack) && start < end {
                // Only the parts not already tagged through last ACK's blocks.
                subtract_ranges(start, end, &self.sack_cache, &mut ranges);
            }
        }
        self.sack_cache = [(0, 0); 3];
        for (c, b) in self.sack_cache.iter_mut().zip(h.sack_blocks()) {
            *c = b;
        }
        self.sack_cache_used = true;
        for &(start, end) in ranges.as_slice() {
            self.sacktag_walk(start, end, a);
        }
    }

    /// `tcp_sacktag_walk`: tag every whole segment inside [start, end) above the cumulative ACK.
    fn sacktag_walk(&mut self, start: u64, end: u64, a: &mut AckState) {
        let mut i = self.seg_index(start.max(self.snd_una));
        while i < self.segs.len() {
            let s = &self.segs[i];
            if s.seq >= end {
                break;
            }
            if s.seq >= start && s.end() <= end && !s.sacked && s.end() > a.ack {
                self.sacktag_one(i, a);
            }
            i += 1;
        }
    }

    /// `tcp_sacktag_one`: segment `i` is newly SACKed, so it is neither lost nor in flight.
    fn sacktag_one(&mut self, i: usize, a: &mut AckState) {
        let s = &mut self.segs[i];
        s.sacked = true;
        self.sacked_out += 1;
        self.highest_sacked_end = self.highest_sacked_end.max(s.end());
        if s.lost {
            s.lost = false;
            self.lost_out -= 1;
        }
        if s.retrans {
            s.retrans = false;
            self.retrans_out -= 1;
        }
        if !s.ever_retrans {
            let t = s.tx_time;
            a.first_sackt = Some(a.first_sackt.map_or(t, |f| f.min(t)));
            a.last_sackt = Some(a.last_sackt.map_or(t, |l| l.max(t)));
        }
        a.acked_bytes += s.len as u64;
        self.tp.delivered += 1;
        a.rb.skb_delivered(&self.segs[i]);
    }

    /// `tcp_clean_rtx_queue`: drop the cumulatively acknowledged segments and advance `snd_una`.
    fn clean_rtx_queue(&mut self, a: &mut AckState) {
        while let Some(s) = self.segs.front() {
            if s.end() > a.ack {
                break;
            }
            let s = self.segs.pop_front().expect("front exists");
            self.packets_out -= 1;
            a.pkts_cum_acked += 1;
            if s.lost {
                self.lost_out -= 1;
            }
            if s.retrans {
                self.retrans_out -= 1;
            }
            if s.ever_retrans {
                a.retrans_data_acked = true;
            } else {
                if a.first_ackt.is_none() {
                    a.first_ackt = Some(s.tx_time);
                }
                a.last_ackt = Some(s.tx_time);
            }
            if s.sacked {
                self.sacked_out -= 1;
            } else {
                a.acked_bytes += s.len as u64;
                if self.is_sack() {
                    self.tp.delivered += 1;
                }
                a.rb.skb_delivered(&s);
            }
        }
        self.snd_una = a.ack;
    }

    /// NewReno: duplicate ACKs stand in for SACKed segments (`tcp_add_reno_sack`,
    /// `tcp_remove_reno_sacks`).
    fn count_reno_dupacks(&mut self, h: &TcpHeader, a: &mut AckState) {
        if a.una_advanced() {
            // tcp_remove_reno_sacks: one ACK filled the hole, the rest eat dupacks.
            let acked = a.pkts_cum_acked;
            self.tp.delivered += (acked as u64)
                .saturating_sub(self.reno_sacked as u64)
                .max(1);
            self.reno_sacked = self.reno_sacked.saturating_sub(acked.saturating_sub(1));
        } else if self.packets_out > 0 && h.payload_bytes == 0 {
            // tcp_add_reno_sack: an out-of-order segment was delivered.
            let prior = self.reno_sacked;
            self.reno_sacked += 1;
            self.limit_reno_sacked();
            if self.reno_sacked > prior {
                self.tp.delivered += 1;
            }
        }
        self.limit_reno_sacked();
    }

    /// SACK loss detection: RFC 6675 `IsLost` (DupThresh), lost retransmissions (Linux 3.x
    /// `tcp_mark_lost_retrans`) and the holes below a delivered tail loss probe. Returns the
    /// number of segments newly marked lost.
    fn mark_sack_losses(&mut self, ack: u64) -> u32 {
        let n =
            self.mark_lost_dupthresh() + self.mark_lost_retrans() + self.mark_lost_after_probe(ack);
        self.lost_pkts += n as u64;
        n
    }

    /// ECN feedback: classic ECE (Linux `FLAG_ECE`) or the AccECN ACE delta
    /// (`tcp_accecn_process`), counted into `delivered_ce`.
    fn ecn_feedback(&mut self, h: &TcpHeader, a: &mut AckState) {
        match self.tp.ecn {
            EcnMode::Classic => {
                if h.has(tcp_flags::ECE) {
                    a.ece = true;
                    a.ce_delta = a.newly_acked_sacked as u64;
                }
            }
            EcnMode::AccEcn => {
                // Only ACKs with forward progress carry a usable ACE.
                if a.una_advanced() || a.newly_acked_sacked > 0 {
                    a.ce_delta =
                        self.ack_thinning
                            .delta(h.ace(), self.s_cep, a.newly_acked_sacked as u64);
                    self.s_cep += a.ce_delta;
                    a.ece = a.ce_delta > 0;
                }
            }
            EcnMode::None => {}
        }
        self.tp.delivered_ce += a.ce_delta;
    }

    /// `tcp_ack_update_rtt`: Karn's rule on the cumulative part, SACK as fallback, the
    /// timestamp echo when only retransmitted data was acknowledged; updates srtt and min_rtt.
    fn ack_update_rtt(&mut self, h: &TcpHeader, now: Nanos, a: &mut AckState) {
        let seq_rtt = if a.retrans_data_acked {
            None
        } else {
            a.first_ackt.map(|t| now - t)
        };
        let sack_rtt = a.first_sackt.map(|t| now - t);
        let mut ca_rtt = if a.retrans_data_acked {
            None
        } else {
            a.last_ackt.map(|t| now - t)
        };
        if let Some(t) = a.last_sackt {
            ca_rtt = Some(now - t);
        }
        let mut srtt_sample = seq_rtt.or(sack_rtt);
        if srtt_sample.is_none() && a.una_advanced() && h.ts_ecr > Nanos::ZERO {
            // Only retransmitted data was acknowledged: RFC 7323 timestamp echo (Linux
            // tcp_rtt_tsopt_us), which also ends the RTO backoff.
            let r = now - h.ts_ecr;
            srtt_sample = Some(r);
            ca_rtt = Some(r);
        }
        if let Some(r) = srtt_sample {
            self.rtt.on_sample(r);
            self.tp.srtt = self.rtt.srtt();
        }
        if let Some(r) = ca_rtt {
            if self.tp.min_rtt == Nanos::ZERO || r < self.tp.min_rtt {
                self.tp.min_rtt = r;
            }
        }
        a.ca_rtt = ca_rtt;
    }

    /// `tcp_rate_gen` (net/ipv4/tcp_rate.c): end the app-limited bubble and finish the rate
    /// sample from the newest delivered segment.
    fn rate_gen(&mut self, now: Nanos, a: &AckState) -> RateSample {
        if self.app_limited_until != 0 && self.tp.delivered > self.app_limited_until {
            self.app_limited_until = 0;
            self.tp.app_limited = false;
        }
        if a.newly_acked_sacked > 0 {
            self.delivered_mstamp = now;
        }
        let Some(pd) = a.rb.prior_delivered else {
            return RateSample {
                prior_delivered: 0,
                delivered: 0,
                interval: Nanos::ZERO,
            };
        };
        // Linux moves the start of the next send interval to the newest delivered send.
        self.first_tx_mstamp = a.rb.newest_tx;
        let ack_interval = now - a.rb.prior_mstamp;
        let interval = a.rb.snd_interval.max(ack_interval);
        if interval < self.tp.min_rtt {
            // Implausibly short: Linux discards the sample.
            return RateSample {
                prior_delivered: pd,
                delivered: 0,
                interval: Nanos::ZERO,
            };
        }
        RateSample {
            prior_delivered: pd,
            delivered: self.tp.delivered - pd,
            interval,
        }
    }

    /// The CC's per-ACK hooks: `pkts_acked` (from `tcp_clean_rtx_queue`), then
    /// `tcp_in_ack_event`.
    fn ca_ack_hooks(&mut self, sample: &AckSample) {
        self.sync_tp();
        if sample.acked_pkts > 0 || sample.rtt.is_some() {
            self.cc.pkts_acked(&mut self.tp, sample);
        }
        self.cc.in_ack_event(&mut self.tp, sample);
    }

    /// `tcp_fastretrans_alert`: leave CWR, Recovery or Loss once `high_seq` is acknowledged,
    /// mark NewReno losses, then from Open, Disorder or CWR enter Recovery or try to open.
    fn fastretrans_alert(&mut self, a: &mut AckState) {
        if self.snd_una >= self.high_seq {
            self.exit_reduction_state();
        }
        if !self.is_sack() {
            a.newly_lost += self.newreno_mark_lost(a.una_advanced());
        }
        if matches!(
            self.tp.ca_state,
            CaState::Open | CaState::Disorder | CaState::Cwr
        ) {
            if self.lost_out > 0 {
                // tcp_time_to_recover.
                self.enter_recovery();
            } else {
                self.try_to_open(a.ece);
            }
        }
    }

    /// The state exits of `tcp_fastretrans_alert` once `snd_una` has reached `high_seq`.
    fn exit_reduction_state(&mut self) {
        match self.tp.ca_state {
            // CWR is held until something above high_seq is acked, so that the CWR
            // flag has reached the receiver.
            CaState::Cwr if self.snd_una != self.high_seq => {
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open);
            }
            CaState::Recovery => {
                self.reno_sacked = 0;
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open);
            }
            CaState::Loss => {
                self.reno_sacked = 0;
                self.set_ca_state(CaState::Open);
            }
            _ => {}
        }
    }

    /// `tcp_newreno_mark_lost`: the third duplicate ACK, or a partial ACK in Recovery, marks
    /// the head lost. Returns the number of segments newly marked lost.
    fn newreno_mark_lost(&mut self, una_advanced: bool) -> u32 {
        let st = self.tp.ca_state;
        if (matches!(st, CaState::Open | CaState::Disorder | CaState::Cwr)
            && self.reno_sacked >= DUP_THRESH)
            || (st == CaState::Recovery && una_advanced)
        {
            let n = self.mark_head_lost();
            self.limit_reno_sacked();
            self.lost_pkts += n as u64;
            n
        } else {
            0
        }
    }

    /// `tcp_try_to_open`: CWR on ECN feedback the CC leaves to the sender, else
    /// `tcp_try_keep_open` (Disorder while anything is SACKed, lost or retransmitted).
    fn try_to_open(&mut self, ece: bool) {
        if ece && !self.cc.handles_ecn() {
            self.enter_cwr();
        }
        if self.tp.ca_state != CaState::Cwr {
            let disorder = self.left_out() > 0 || self.retrans_out > 0;
            self.set_ca_state(if disorder {
                CaState::Disorder
            } else {
                CaState::Open
            });
        }
    }

    /// `tcp_cong_control`: the CC's own `cong_control` if it has one, else PRR
    /// (`tcp_cwnd_reduction`) in CWR/Recovery, else `cong_avoid` when the ACK advanced
    /// `snd_una` (`tcp_may_raise_cwnd`).
    fn cong_control(&mut self, sample: &AckSample, una_advanced: bool) {
        self.sync_tp();
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tp, sample);
            self.sync_tp();
        } else if matches!(self.tp.ca_state, CaState::Cwr | CaState::Recovery) {
            self.cwnd_reduction(sample.acked_pkts, sample.losses, una_advanced);
        } else if una_advanced {
            self.cc.cong_avoid(&mut self.tp, sample);
            self.sync_tp();
        }
        self.tp.snd_cwnd = self.tp.snd_cwnd.max(1);
    }

    /// `tcp_set_xmit_timer`: restart the retransmission timer when `snd_una` advanced (RFC 6298
    /// §5.2–5.3) and re-arm the probe timer; outside Open/Disorder/CWR no probe is pending.
    fn set_xmit_timer(&mut self, now: Nanos, una_advanced: bool) {
        if una_advanced {
            self.rto_deadline = if self.packets_out > 0 {
                Some(now + self.rtt.rto())
            } else {
                None
            };
            self.schedule_loss_probe(now, true);
        } else if !matches!(
            self.tp.ca_state,
            CaState::Open | CaState::Disorder | CaState::Cwr
        ) {
            self.tlp_deadline = None;
        }
    }
}
