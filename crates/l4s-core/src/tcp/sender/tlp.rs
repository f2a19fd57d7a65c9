//! Tail loss probe of the TCP sender (RFC 8985 §7; Linux `tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe`, `tcp_process_tlp_ack`), with the probe-triggered loss marking.

use super::TcpSender;
use crate::cc::CaState;
use crate::packet::Packet;
use crate::tcp::rtt::INITIAL_RTO;
use crate::time::Nanos;

/// Extra probe timeout when a single packet is out: the worst-case delayed ACK (Linux
/// `TCP_RTO_MIN` in `tcp_schedule_loss_probe`, RFC 8985 WCDelAckT).
pub const TLP_WC_DELACK: Nanos = Nanos::from_ms(200);
/// Extra probe timeout otherwise (Linux `TCP_TIMEOUT_MIN`, two jiffies at HZ=1000).
pub const TLP_TIMEOUT_MIN: Nanos = Nanos::from_ms(2);

impl TcpSender {
    /// Tail loss probes sent so far.
    pub fn tlp_probes(&self) -> u64 {
        self.tlp_probes
    }

    /// `tcp_schedule_loss_probe`: PTO = 2·srtt (+ the worst-case delayed ACK when one packet
    /// is out, else 2 ms), never later than the RTO; only in Open/Disorder/CWR with SACK.
    pub(super) fn schedule_loss_probe(&mut self, now: Nanos, advancing_rto: bool) {
        let eligible = self.tlp
            && self.is_sack()
            && self.packets_out > 0
            && matches!(
                self.tp.ca_state,
                CaState::Open | CaState::Disorder | CaState::Cwr
            );
        if !eligible {
            self.tlp_deadline = None;
            return;
        }
        let mut pto = if self.rtt.has_sample() {
            let extra = if self.packets_out == 1 {
                TLP_WC_DELACK
            } else {
                TLP_TIMEOUT_MIN
            };
            Nanos(2 * self.rtt.srtt().0) + extra
        } else {
            INITIAL_RTO
        };
        let rto_delta = if advancing_rto {
            Some(self.rtt.rto())
        } else {
            self.rto_deadline.map(|d| d - now)
        };
        if let Some(d) = rto_delta {
            if d > Nanos::ZERO {
                pto = pto.min(d);
            }
        }
        self.tlp_deadline = Some(now + pto);
    }

    /// `tcp_send_loss_probe`: one new segment if the application has one (regardless of
    /// cwnd), else a retransmission of the last segment. Pacing is not applied to the probe.
    pub(super) fn send_loss_probe(&mut self, now: Nanos) -> Option<Packet> {
        let idle = self.packets_out == 0;
        let no_flight = self.in_flight() == 0;
        let p = if self.new_data_available() {
            self.tlp_retrans = false;
            self.send_new_segment(now, idle, no_flight)
        } else {
            let idx = self.segs.len().checked_sub(1)?;
            let last = &self.segs[idx];
            if last.sacked {
                return None;
            }
            let seg = (last.seq, last.len);
            // Not marked lost: the probe is not counted twice in flight (Linux counts it in
            // retrans_out); ever_retrans keeps Karn's rule.
            self.segs[idx].ever_retrans = true;
            self.retransmits += 1;
            self.tlp_retrans = true;
            self.data_packet(idx, seg, now, true, idle, no_flight)
        };
        let last = self.segs.back().map(|s| s.end()).unwrap_or(self.snd_nxt);
        self.tlp_high_seq = Some(self.snd_nxt);
        self.tlp_probe = Some((now, last));
        self.tlp_probes += 1;
        self.rto_deadline = Some(now + self.rtt.rto());
        Some(p)
    }

    /// When the probe's segment is delivered, every un-SACKed segment sent before it is lost
    /// (the RACK rule with a zero reordering window, applied once per probe).
    pub(super) fn mark_lost_after_probe(&mut self, ack: u64) -> u32 {
        let Some((probe_tx, probe_end)) = self.tlp_probe else {
            return 0;
        };
        let delivered = ack >= probe_end
            || self
                .segs
                .back()
                .is_some_and(|s| s.end() == probe_end && s.sacked);
        if !delivered {
            return 0;
        }
        self.tlp_probe = None;
        let mut newly = 0;
        for s in self.segs.iter_mut() {
            if !s.sacked && !s.lost && s.tx_time < probe_tx {
                s.lost = true;
                newly += 1;
                self.retransmit_hint = self.retransmit_hint.min(s.seq);
            }
        }
        self.lost_out += newly;
        newly
    }

    /// `tcp_process_tlp_ack`: end the probe episode; a retransmitted probe followed by an ACK
    /// beyond the episode means it repaired a loss, so the window is reduced once.
    pub(super) fn process_tlp_ack(
        &mut self,
        ack: u64,
        una_advanced: bool,
        newly_acked_sacked: u32,
    ) {
        let Some(hs) = self.tlp_high_seq else {
            return;
        };
        if ack < hs {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = None;
        } else if ack > hs {
            self.tlp_high_seq = None;
            if matches!(self.tp.ca_state, CaState::Open | CaState::Disorder) {
                self.init_cwnd_reduction();
                self.set_ca_state(CaState::Cwr);
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open);
            }
        } else if !una_advanced && newly_acked_sacked == 0 {
            // A pure duplicate ACK: original and probe both arrived, nothing was lost.
            self.tlp_high_seq = None;
        }
    }
}
