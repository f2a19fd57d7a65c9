//! TCP data sender: handshake with ECN negotiation, segment scoreboard, SACK (RFC 6675
//! DupThresh) or NewReno (RFC 6582) loss recovery with PRR (RFC 6937), RTO with backoff
//! (RFC 6298), classic ECN (RFC 3168) and AccECN feedback, Linux rate sampling and pacing.
//!
//! The ACK path (`sender/ack.rs`, one method per step) follows Linux `tcp_ack()`
//! (net/ipv4/tcp_input.c): SACK tagging, cumulative clean-up, ECN decoding, RTT
//! (`tcp_ack_update_rtt`: oldest newly acked never-retransmitted segment for srtt, newest for
//! the CC's sample and min_rtt; the timestamp echo when only retransmitted data was acked),
//! `tcp_rate_gen` (net/ipv4/tcp_rate.c; built here before the CC hooks, in Linux just before
//! `tcp_cong_control`), `pkts_acked`, `in_ack_event`, the state machine of
//! `tcp_fastretrans_alert` (CWR / Recovery / Loss exits and entries), then
//! `tcp_cong_control`: the CC's `cong_control` if it has one, else PRR (`tcp_cwnd_reduction`)
//! in CWR/Recovery, else `cong_avoid` when the ACK advanced `snd_una` (in Open, Disorder and
//! Loss, as `tcp_may_raise_cwnd`).
//!
//! Loss detection: with SACK a segment is lost when DupThresh = 3 segments above it are
//! SACKed (RFC 6675 `IsLost`); without SACK the third duplicate ACK marks the head lost and a
//! partial ACK in Recovery marks the new head lost (Linux `tcp_newreno_mark_lost`), duplicate
//! ACKs counting as SACKed segments (`tcp_add_reno_sack`). With SACK a lost retransmission is
//! found when DupThresh segments beyond the `snd_nxt` of its sending are SACKed (Linux 3.x
//! `tcp_mark_lost_retrans`); otherwise by the RTO. Tail losses: a tail loss probe (Linux
//! `tcp_schedule_loss_probe` / `tcp_send_loss_probe`, RFC 8985 §7) sends one new segment or
//! resends the last one after PTO = 2·srtt (+200 ms with one packet out, else +2 ms, capped
//! by the RTO); when the probe's segment is delivered, the un-SACKed segments sent before it
//! are marked lost at once (RACK's rule with a zero reordering window, applied once per probe;
//! general RACK is not modelled). RTO: every non-SACKed segment is marked lost and resent in
//! order (go-back-N) from cwnd = 1 in the Loss state.
//!
//! `CcState::packets_in_flight` is always the current `tcp_packets_in_flight`; whether the
//! window was used to the full is the send-time record `CcState::is_cwnd_limited` /
//! `max_packets_out`, kept as Linux `tcp_cwnd_validate` does (the in-flight count after an
//! ACK is always below cwnd, so it cannot tell). `internal_pacing` and `write_queue_empty`
//! tell the CC that the sender paces by itself and whether unsent data waits.
//! The CA events `EcnIsCe`/`EcnNoCe` belong to the data receiver in Linux (DCTCP's
//! delayed-ACK state) and are not raised by the sender.
//!
//! ECN: classic ECE makes the sender enter CWR once per window (unless the CC handles ECN),
//! with CWR on the next new data segment; AccECN decodes the ACE delta ([`super::accecn`]).
//! Retransmissions are Not-ECT with classic ECN (RFC 3168 §6.1.5) unless the CC needs ECN
//! (`CongestionControl::needs_ecn`, Linux TCP_CONG_NEEDS_ECN: DCTCP), and carry the
//! data codepoint with AccECN. SYN retransmissions fall back from ECN as Linux does.
//! Pacing: each packet leaves no earlier than `tcp_wstamp_ns`, advanced by len/rate with len
//! the payload (`skb->len` in `tcp_update_skb_after_send`), from the 10th data segment on.
//! With `qdisc = fq` ([`super::fq_pacing`]) TCP hands segments down at once within TSQ,
//! stamped with that departure time, and they wait in fq while counting as in flight.
//! Not modelled: undo of spurious recoveries (DSACK, F-RTO), RACK beyond the probe rule,
//! cwnd restart after idle (CwndRestart is never raised), TSO/GSO.

use std::collections::VecDeque;

mod ack;
mod recovery;
mod tlp;

pub use tlp::{TLP_TIMEOUT_MIN, TLP_WC_DELACK};

use super::fq_pacing::{self, FqHost, HostQdisc};
use super::rtt::{RttEstimator, INITIAL_RTO};
use super::{accecn, packet_id, TcpConfig, DATA_SEQ_START, SYN_BYTES, TCP_IP_HEADER_BYTES};
use crate::cc::{CaState, CcState, CongestionControl, CwndEvent, EcnMode};
use crate::packet::{tcp_flags, Ecn, Packet, TcpHeader, Transport};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats};

/// RFC 6675 DupThresh (Linux `tcp_reordering` default 3).
pub const DUP_THRESH: u32 = 3;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SndState {
    /// Before `start`.
    Idle,
    SynSent,
    Established,
}

/// One segment in the retransmission queue (Linux `sk_buff` + `tcp_skb_cb`).
///
/// Exactly one cache line, aligned to it: a segment is written once when sent and read once
/// when acknowledged, both a window apart from the last touch of that slot, so each access
/// is a miss once the windows outgrow the cache; unaligned, most segments straddle two lines.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Seg {
    seq: u64,
    len: u32,
    /// Last transmission time.
    tx_time: Nanos,
    /// Rate-sample snapshot at the last transmission (`tcp_rate_skb_sent`).
    first_tx_mstamp: Nanos,
    delivered_mstamp: Nanos,
    delivered: u64,
    app_limited: bool,
    sacked: bool,
    lost: bool,
    /// Retransmitted since it was marked lost and not yet acknowledged (`TCPCB_SACKED_RETRANS`).
    retrans: bool,
    /// Ever retransmitted (`TCPCB_EVER_RETRANS`; Karn's rule).
    ever_retrans: bool,
    /// `snd_nxt` when last retransmitted (Linux 3.x `TCP_SKB_CB(skb)->ack_seq`).
    retrans_nxt: u64,
}

impl Seg {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// TCP data sender: the handshake, the retransmission queue, loss recovery, ECN feedback and
/// pacing, around one `CongestionControl`.
///
/// The fields are laid out by hand (`repr(C)`, 64-byte aligned) so that what every event
/// touches sits in the first cache lines and the rarely read state after it: with thousands
/// of flows each event meets a sender that is not in cache, and every extra line is a miss.
#[repr(C, align(64))]
pub struct TcpSender {
    // Line 0: what every ACK, every send and every sample (`stats`) reads.
    cc: Box<dyn CongestionControl>,
    snd_una: u64,
    snd_nxt: u64,
    sent_pkts: u64,
    retransmits: u64,
    lost_pkts: u64,
    packets_out: u32,
    state: SndState,
    /// `cfg.pacing`, copied here because every send, timer poll and sample reads it.
    pacing: bool,
    /// `fq.is_some()` and `tso.is_some()`, copied here (both are fixed at construction)
    /// because every send and timer poll asks.
    has_fq: bool,
    has_tso: bool,
    // Lines 1-2: the CC's view (its first 64 bytes are what `stats` and the CCs read most), then
    // the timer state every event polls.
    tp: CcState,
    rto_deadline: Option<Nanos>,
    last_now: Nanos,
    // Lines 3-7: the rest of what an ACK, a send or a timer poll touches in the common case
    // (no loss episode): retransmission queue, counts, rate sampling, RTT, the probe timer,
    // the copies of the configuration they read, and the send limits.
    segs: VecDeque<Seg>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    max_packets_out: u32,
    /// Pacing: earliest departure of the next packet (`tp->tcp_wstamp_ns`).
    wstamp: Nanos,
    /// Recovery point (`tp->high_seq`).
    high_seq: u64,
    /// Tail loss probe: when the probe timer fires, the probe to send, the end of the
    /// outstanding probe episode (`tp->tlp_high_seq`), whether the probe was a retransmission,
    /// and the probe's send time and segment end (for marking the holes below it lost).
    tlp_deadline: Option<Nanos>,
    delivered_mstamp: Nanos,
    first_tx_mstamp: Nanos,
    /// `tp->app_limited`: delivered count at which the app-limited bubble ends (0 = none).
    app_limited_until: u64,
    ts_recent: Nanos,
    cwnd_usage_seq: u64,
    next_id: u64,
    rtt: RttEstimator,
    flow: u32,
    /// NewReno duplicate-ACK count standing in for `sacked_out` (`tcp_add_reno_sack`).
    reno_sacked: u32,
    prr_out: u32,
    /// Linux `tcp_cwnd_validate` state: was the window the limit when data was last sent,
    /// the most packets out in this window, and the window's end.
    is_cwnd_limited: bool,
    tlp_pending: bool,
    tlp_retrans: bool,
    /// Classic ECN: put CWR on the next new data segment (`TCP_ECN_QUEUE_CWR`).
    cwr_pending: bool,
    /// `cfg.sack`, `cfg.tlp`, `cfg.stop` and `cfg.rwnd_bytes`, copied here because every
    /// ACK, send or timer poll reads them and `cfg` spans two cold lines.
    sack: bool,
    tlp: bool,
    /// Third handshake ACK to send, with its AccECN ACE reflection.
    handshake_ack: Option<u8>,
    /// `sack_cache` holds blocks: only then must an ACK without SACK blocks clear it, so
    /// the (cold) cache is not written on every ACK.
    sack_cache_used: bool,
    /// (seq, `retrans_nxt`) of every retransmission in the order sent, so by non-decreasing
    /// `retrans_nxt` (`snd_nxt` never moves back): the lost-retransmission check pops only
    /// the head entries whose `retrans_nxt` the SACKs have passed instead of walking the
    /// window on every ACK. Entries of segments since acknowledged, SACKed or resent are
    /// stale and skipped; emptied whenever no retransmission is outstanding.
    retrans_fifo: VecDeque<(u64, u64)>,
    tlp_probe: Option<(Nanos, u64)>,
    rwnd_bytes: u64,
    tlp_high_seq: Option<u64>,
    stop: Option<Nanos>,
    app_end: Option<u64>,
    /// End of the data the application has written so far (Linux: the write queue that
    /// `tcp_sendmsg` fills); None = an always-backlogged application (the default).
    app_written_end: Option<u64>,
    // Then what only some configurations or events touch: SACK and loss-episode bookkeeping,
    // the host models, AccECN, the handshake, the counters read at the end, the configuration.
    /// SACK blocks of the previous ACK: ranges already tagged (Linux `recv_sack_cache`).
    sack_cache: [(u64, u64); 3],
    /// End of the highest SACKed segment seen.
    highest_sacked_end: u64,
    /// Segments below this sequence have had the DupThresh rule applied.
    lost_mark_seq: u64,
    ack_thinning: accecn::AckThinning,
    /// fq qdisc under the sender (`cfg.qdisc`): EDT holding queue and TSQ.
    fq: Option<FqHost>,
    /// TSO host: bursts and NIC spacing (`cfg.tso_nic_rate`).
    tso: Option<super::tso::TsoHost>,
    /// Send buffer and its backlogged writer (`cfg.tcp_wmem_max`).
    sndbuf: Option<super::sndbuf::SndBuf>,
    /// AccECN s.cep: CE packets the peer has reported (+5), wrapping like ACE mod 8.
    s_cep: u64,
    /// No lost, not yet retransmitted segment starts below this sequence (Linux
    /// `retransmit_skb_hint`).
    retransmit_hint: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    syn_deadline: Option<Nanos>,
    syn_rto: Nanos,
    syn_sent_at: Nanos,
    /// SYN retransmissions so far (Linux `icsk_retransmits` in SYN-SENT).
    syn_retries: u32,
    syn_retransmitted: bool,
    syn_pending: bool,
    requested_ecn: EcnMode,
    tlp_probes: u64,
    rto_count: u64,
    cfg: TcpConfig,
}

impl TcpSender {
    /// A sender for `flow` after checking `cfg` ([`TcpConfig::validate`]).
    pub fn try_new(
        flow: u32,
        cfg: TcpConfig,
        cc: Box<dyn CongestionControl>,
    ) -> Result<Self, crate::ParamError> {
        cfg.validate()?;
        Ok(Self::new(flow, cfg, cc))
    }

    /// A sender for `flow`. `cfg` should have passed [`TcpConfig::validate`] (or use
    /// [`TcpSender::try_new`]); out-of-range values are clamped here rather than panicking.
    pub fn new(flow: u32, cfg: TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let mut cfg = cfg;
        cfg.mss = cfg.mss.max(1);
        cfg.init_cwnd = cfg.init_cwnd.max(1);
        let mut tp = CcState::new(cfg.mss);
        tp.snd_cwnd = cfg.init_cwnd;
        let requested_ecn = cfg.ecn.unwrap_or_else(|| cc.requested_ecn());
        let app_end = cfg.bytes.map(|b| DATA_SEQ_START + b);
        TcpSender {
            flow,
            pacing: cfg.pacing,
            sack: cfg.sack,
            tlp: cfg.tlp,
            stop: cfg.stop,
            rwnd_bytes: cfg.rwnd_bytes,
            has_fq: cfg.qdisc == HostQdisc::Fq,
            has_tso: cfg.tso_nic_rate.is_some(),
            rtt: RttEstimator::new(cfg.min_rto, cfg.max_rto),
            cc,
            tp,
            state: SndState::Idle,
            requested_ecn,
            next_id: 0,
            syn_deadline: None,
            syn_rto: INITIAL_RTO.min(cfg.max_rto),
            syn_sent_at: Nanos::ZERO,
            syn_retransmitted: false,
            syn_retries: 0,
            syn_pending: false,
            handshake_ack: None,
            snd_una: 0,
            snd_nxt: 0,
            app_end,
            app_written_end: None,
            segs: VecDeque::new(),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            reno_sacked: 0,
            highest_sacked_end: 0,
            retransmit_hint: 0,
            lost_mark_seq: 0,
            sack_cache: [(0, 0); 3],
            sack_cache_used: false,
            retrans_fifo: VecDeque::new(),
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            cwr_pending: false,
            s_cep: accecn::CEP_INIT,
            ack_thinning: accecn::AckThinning::default(),
            rto_deadline: None,
            tlp_deadline: None,
            tlp_pending: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            tlp_probe: None,
            tlp_probes: 0,
            ts_recent: Nanos::ZERO,
            delivered_mstamp: Nanos::ZERO,
            first_tx_mstamp: Nanos::ZERO,
            app_limited_until: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            wstamp: Nanos::ZERO,
            tso: cfg.tso_nic_rate.map(super::tso::TsoHost::new),
            sndbuf: cfg.tcp_wmem_max.map(super::sndbuf::SndBuf::new),
            fq: (cfg.qdisc == HostQdisc::Fq).then(FqHost::new),
            last_now: Nanos::ZERO,
            sent_pkts: 0,
            retransmits: 0,
            lost_pkts: 0,
            rto_count: 0,
            cfg,
        }
    }

    /// ECN mode negotiated (None before the handshake completes).
    pub fn ecn_mode(&self) -> EcnMode {
        self.tp.ecn
    }
    /// Congestion state (Linux `icsk_ca_state`: Open, Disorder, CWR, Recovery, Loss).
    pub fn ca_state(&self) -> CaState {
        self.tp.ca_state
    }
    /// The state a CC sees (cwnd, ssthresh, srtt, delivered, ...).
    pub fn cc_state(&self) -> &CcState {
        &self.tp
    }
    /// The RFC 6298 estimator behind the RTO.
    pub fn rtt_estimator(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Current retransmission timeout including backoff.
    pub fn rto(&self) -> Nanos {
        self.rtt.rto()
    }
    /// Retransmission timeouts so far.
    pub fn rto_count(&self) -> u64 {
        self.rto_count
    }
    /// Oldest unacknowledged sequence number (`snd_una`).
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    /// The fq host under the sender (`qdisc = fq`): its held packets and TSQ bytes.
    pub fn fq_host(&self) -> Option<&FqHost> {
        self.fq.as_ref()
    }
    /// `tcp_packets_in_flight()`: packets_out − (sacked_out + lost_out) + retrans_out.
    pub fn in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.left_out())
    }

    /// Recount the scoreboard and compare with the incremental counters (for tests).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let count = |f: fn(&Seg) -> bool| self.segs.iter().filter(|s| f(s)).count() as u32;
        let checks = [
            ("packets_out", self.packets_out, self.segs.len() as u32),
            ("sacked_out", self.sacked_out, count(|s| s.sacked)),
            ("lost_out", self.lost_out, count(|s| s.lost)),
            ("retrans_out", self.retrans_out, count(|s| s.retrans)),
        ];
        for (name, kept, real) in checks {
            if kept != real {
                return Err(format!("{name}: counter {kept} != scoreboard {real}"));
            }
        }
        if self.segs.iter().any(|s| s.sacked && (s.lost || s.retrans)) {
            return Err("a SACKed segment is marked lost or in retransmission".into());
        }
        if self.segs.iter().any(|s| s.retrans && !s.lost) {
            return Err("a retransmission in flight is not marked lost".into());
        }
        if let (Some(f), Some(b)) = (self.segs.front(), self.segs.back()) {
            if f.seq != self.snd_una || b.end() != self.snd_nxt {
                return Err(format!(
                    "queue [{}, {}) vs snd_una {} snd_nxt {}",
                    f.seq,
                    b.end(),
                    self.snd_una,
                    self.snd_nxt
                ));
            }
        }
        if let Some(bad) = self
            .segs
            .iter()
            .find(|s| s.seq < self.retransmit_hint && s.lost && !s.retrans && !s.sacked)
        {
            return Err(format!(
                "lost segment {} below the retransmit hint",
                bad.seq
            ));
        }
        if self.is_sack() {
            if let Some(bad) = self
                .segs
                .iter()
                .find(|s| s.seq < self.lost_mark_seq && !s.sacked && !s.lost)
            {
                return Err(format!("segment {} below lost_mark_seq not lost", bad.seq));
            }
        }
        if !self
            .retrans_fifo
            .iter()
            .zip(self.retrans_fifo.iter().skip(1))
            .all(|(a, b)| a.1 <= b.1)
        {
            return Err("retrans_fifo is not ordered by retrans_nxt".into());
        }
        if let Some(bad) = self
            .segs
            .iter()
            .find(|s| s.retrans && !self.retrans_fifo.contains(&(s.seq, s.retrans_nxt)))
        {
            return Err(format!(
                "retransmission {} missing from retrans_fifo",
                bad.seq
            ));
        }
        if self.left_out() > self.packets_out + self.retrans_out {
            return Err("left_out exceeds packets_out".into());
        }
        if (self.is_sack() && self.reno_sacked != 0) || (!self.is_sack() && self.sacked_out != 0) {
            return Err("both sacked_out and reno_sacked count".into());
        }
        Ok(())
    }

    /// `tcp_left_out`: SACKed (or, without SACK, duplicate-ACKed) plus lost segments.
    /// Only one of `sacked_out` (SACK) and `reno_sacked` (NewReno) ever counts for a given
    /// connection and the other stays 0 (`check_invariants`), so their sum needs no branch on
    /// the configuration, whose cache line every `in_flight` would otherwise touch.
    fn left_out(&self) -> u32 {
        self.sacked_out + self.reno_sacked + self.lost_out
    }

    fn is_sack(&self) -> bool {
        self.sack
    }

    fn new_id(&mut self) -> u64 {
        let id = packet_id(self.flow, false, self.next_id);
        self.next_id += 1;
        id
    }

    fn make_syn(&mut self, now: Nanos) -> Packet {
        // ECN fallback on SYN loss (RFC 3168 §6.1.1.1; Linux `__tcp_retransmit_skb` with
        // tcp_ecn_fallback = 1): a classic request is dropped from every retransmitted SYN,
        // an AccECN request is repeated once and dropped from the second retransmission on.
        let keep_ecn = match self.requested_ecn {
            EcnMode::AccEcn => self.syn_retries <= 1,
            _ => self.syn_retries == 0,
        };
        let ecn_flags = if keep_ecn {
            accecn::syn_flags(self.requested_ecn)
        } else {
            0
        };
        let h = TcpHeader {
            seq: 0,
            ack: 0,
            flags: tcp_flags::SYN | ecn_flags,
            ts_val: now,
            ..Default::default()
        };
        Packet {
            id: self.new_id(),
            flow: self.flow,
            bytes: SYN_BYTES,
            ecn: Ecn::NotEct,
            sent_at: now,
            enqueued_at: now,
            transport: Transport::Tcp(h),
        }
    }

    fn sync_tp(&mut self) {
        self.tp.snd_una = self.snd_una;
        self.tp.snd_nxt = self.snd_nxt;
        self.tp.packets_in_flight = self.in_flight();
        self.tp.app_limited = self.app_limited_until != 0;
        self.tp.is_cwnd_limited = self.is_cwnd_limited;
        self.tp.max_packets_out = self.max_packets_out;
        self.tp.internal_pacing = self.pacing && !self.has_fq;
        self.tp.fq_paced = self.has_fq;
        self.tp.write_queue_empty = !self.new_data_available();
    }

    fn set_ca_state(&mut self, s: CaState) {
        if self.tp.ca_state != s {
            self.sync_tp();
            self.cc.set_state(&mut self.tp, s);
            self.tp.ca_state = s;
        }
    }

    /// The application wrote `bytes` more (Linux `tcp_sendmsg` appending to the write queue).
    /// The first call turns the sender application-limited: from then on it sends only what
    /// was written (call it with 0 before the start to begin with an empty queue). Never
    /// called (the default), the application always has data.
    pub fn app_write(&mut self, bytes: u64) {
        let end = self.app_written_end.unwrap_or(DATA_SEQ_START);
        self.app_written_end = Some(end.saturating_add(bytes));
    }

    /// The sequence number new data may not reach: the sized transfer's end (`bytes`) or what
    /// the application has written, whichever is lower.
    fn data_end(&self) -> u64 {
        let end = self
            .app_end
            .unwrap_or(u64::MAX)
            .min(self.app_written_end.unwrap_or(u64::MAX));
        match &self.sndbuf {
            Some(b) => end.min(b.write_seq),
            None => end,
        }
    }

    /// `tcp_check_space` -> `tcp_new_space` after an ACK that freed data (and
    /// `tcp_init_buffer_space` at the handshake, `freed` true): expand `sk_sndbuf` unless the
    /// window is full (`tcp_should_expand_sndbuf`), then wake the writer
    /// (`sk_stream_write_space`), who refills the buffer ([`super::sndbuf`]).
    pub(super) fn check_space(&mut self, freed: bool) {
        if self.sndbuf.is_none() || !freed {
            return;
        }
        let expand = self.in_flight() < self.tp.snd_cwnd;
        let mss = self.tp.mss;
        let skb_payload = self.tso_segs() as u64 * mss as u64;
        let end = self
            .app_end
            .unwrap_or(u64::MAX)
            .min(self.app_written_end.unwrap_or(u64::MAX));
        let cwnd = self.tp.snd_cwnd;
        let snd_una = self.snd_una;
        let Some(b) = self.sndbuf.as_mut() else {
            return;
        };
        if expand {
            // mss_clamp: the peer's MSS option, which counts the timestamp option's bytes.
            b.sndbuf_expand(cwnd, mss + super::sndbuf::TCP_TIMESTAMP_OPTION_BYTES);
        }
        // The woken writer's first send() asks tcp_rate_check_app_limited before it adds data.
        if b.write_seq < end && b.is_writeable(b.wmem_queued(snd_una, skb_payload)) {
            self.rate_check_app_limited();
        }
        if let Some(b) = self.sndbuf.as_mut() {
            b.write_space(snd_una, mss, skb_payload, end);
        }
    }

    /// `tcp_rate_check_app_limited` as `tcp_sendmsg_locked` runs it when the writer sends:
    /// application-limited when less than one MSS is written and unsent, nothing of the flow
    /// waits in the host (fq's queue, or the rest of a TSO burst at the NIC), the window has
    /// room and every lost segment has been retransmitted.
    fn rate_check_app_limited(&mut self) {
        let unsent = self.data_end().saturating_sub(self.snd_nxt);
        let host_queued = self.fq.as_ref().is_some_and(|fq| !fq.is_empty())
            || self.tso.as_ref().is_some_and(|t| t.in_burst());
        if unsent < self.tp.mss as u64
            && !host_queued
            && self.in_flight() < self.tp.snd_cwnd
            && self.lost_out <= self.retrans_out
        {
            self.mark_app_limited();
        }
    }

    /// `tp->app_limited = (tp->delivered + tcp_packets_in_flight(tp)) ? : 1`.
    fn mark_app_limited(&mut self) {
        self.app_limited_until = (self.tp.delivered + self.in_flight() as u64).max(1);
        self.tp.app_limited = true;
    }

    /// `sk_sndbuf` and `tp->write_seq` of the send-buffer model (None without `tcp_wmem_max`).
    pub fn sndbuf_state(&self) -> Option<(u64, u64)> {
        self.sndbuf.as_ref().map(|b| (b.sk_sndbuf, b.write_seq))
    }

    fn new_data_available(&self) -> bool {
        if let Some(stop) = self.stop {
            if self.last_now >= stop {
                return false;
            }
        }
        let end = self.data_end();
        if self.snd_nxt >= end {
            return false;
        }
        // Receive window: bytes outstanding after sending one more segment.
        self.snd_nxt + self.tp.mss as u64 - self.snd_una <= self.rwnd_bytes
    }

    /// Index of the lowest lost segment not yet retransmitted.
    fn next_lost(&self) -> Option<usize> {
        if self.lost_out <= self.retrans_out {
            return None;
        }
        let from = self.seg_index(self.retransmit_hint.max(self.snd_una));
        self.segs
            .iter()
            .skip(from)
            .position(|s| s.lost && !s.retrans && !s.sacked)
            .map(|k| k + from)
    }

    fn pacing_rate(&self) -> Option<u64> {
        if !self.pacing {
            return None;
        }
        match self.tp.pacing_rate_bps.filter(|&r| r > 0) {
            // fq paces every socket: without a CC rate, the one tcp_update_pacing_rate sets.
            None if self.has_fq => fq_pacing::tcp_update_pacing_rate(
                self.tp.mss,
                self.tp.snd_cwnd,
                self.packets_out,
                self.tp.snd_ssthresh,
                self.tp.srtt,
            ),
            r => r,
        }
    }

    /// TCP itself waits for `wstamp` (internal pacing, or a TSO host's NIC spacing); under
    /// fq it never does: the segment waits in fq instead.
    fn send_gated(&self) -> bool {
        // `has_fq` first: under fq the pacing rate need not be worked out at all.
        !self.has_fq && (self.has_tso || self.pacing_rate().is_some())
    }

    /// `tcp_pacing_check` without fq, `tcp_small_queue_check` (and, for a retransmission of
    /// the segment at `seq`, `skb_still_in_host_queue`) with it.
    fn xmit_blocked(&self, now: Nanos, payload: u32, retransmit_seq: Option<u64>) -> bool {
        // Asking the hot copy first keeps the cold `fq` line out of every unpaced-by-fq send.
        let fq = if self.has_fq { self.fq.as_ref() } else { None };
        let Some(fq) = fq else {
            return self.send_gated() && now < self.wstamp;
        };
        if retransmit_seq.is_some_and(|seq| fq.holds_seq(seq)) {
            return true;
        }
        let rate_bytes = self.pacing_rate().unwrap_or(0) / 8;
        let factor = retransmit_seq.is_some() as u32;
        let limit = fq_pacing::tsq_limit(fq_pacing::truesize(payload), rate_bytes, factor);
        fq.small_queue_throttled(limit, self.packets_out)
    }

    /// The time stamp of a transmission: now, or under fq its departure time `tcp_wstamp_ns`
    /// (`skb->tstamp` and `skb_mstamp_ns` in `__tcp_transmit_skb`).
    fn tx_stamp(&self, now: Nanos) -> Nanos {
        if self.has_fq {
            self.wstamp.max(now)
        } else {
            now
        }
    }

    /// `tcp_write_xmit` under fq: hand segments down while cwnd and TSQ allow, then release
    /// the packet fq holds whose time has come.
    fn fq_xmit(&mut self, now: Nanos) -> Option<Packet> {
        if self.tlp_pending {
            self.tlp_pending = false;
            if let Some(p) = self.send_loss_probe(self.tx_stamp(now)) {
                self.fq_enqueue(p);
            }
        }
        while let Some(p) = self.transmit_data(now) {
            self.fq_enqueue(p);
        }
        self.fq.as_mut()?.dequeue(now)
    }

    fn fq_enqueue(&mut self, p: Packet) {
        let payload = p.tcp().map_or(0, |h| h.payload_bytes);
        if let Some(fq) = self.fq.as_mut() {
            fq.enqueue(p.sent_at, payload, p);
        }
    }

    /// `tcp_tso_segs` for the next burst, at most the window's room (`tcp_write_xmit` builds
    /// the skb from min(tso_segs, cwnd quota)), then the segment's departure through the
    /// TSO host; pacing starts at the 10th data segment as without TSO.
    fn tso_after_send(&mut self, now: Nanos, payload_bytes: u32) -> Nanos {
        let rate = self.pacing_rate().filter(|_| self.sent_pkts >= 10);
        let segs = self.tso_segs();
        // in_flight() already counts this segment: the room it had before it left.
        let room = self.tp.snd_cwnd.saturating_sub(self.in_flight()) + 1;
        let wire = payload_bytes + TCP_IP_HEADER_BYTES;
        let start = self.wstamp;
        let host = self.tso.as_mut().expect("tso host");
        host.on_segment_sent(start.max(now), payload_bytes, wire, segs.min(room), rate)
    }

    /// `tcp_tso_segs`: the CC's own rule, else `tcp_tso_autosize` on `sk_pacing_rate`.
    fn tso_segs(&self) -> u32 {
        self.cc.tso_segs(&self.tp).unwrap_or_else(|| {
            // Without a CC rule: tcp_tso_autosize on sk_pacing_rate, which Linux also sets
            // for unpaced flows (tcp_update_pacing_rate: 200 % of cwnd·mss/srtt in slow
            // start, 120 % after).
            let bytes_per_s = match self.tp.pacing_rate_bps {
                Some(r) => r / 8,
                None if self.tp.srtt > Nanos::ZERO => {
                    let pct = if self.tp.snd_cwnd < self.tp.snd_ssthresh / 2 {
                        200
                    } else {
                        120
                    };
                    let b = self.tp.snd_cwnd as u128 * self.tp.mss as u128 * 1_000_000_000
                        / self.tp.srtt.as_ns() as u128;
                    (b * pct / 100) as u64
                }
                None => 0,
            };
            super::tso::tso_autosize(bytes_per_s, self.tp.mss, self.tp.min_rtt)
        })
    }

    /// `tcp_write_xmit` -> `tcp_tso_should_defer` before a new TSO burst of new data: hold
    /// it for the next ACK while the window has room for less than a whole burst.
    fn tso_defers(&self, now: Nanos) -> bool {
        if self.tso.as_ref().is_none_or(|h| h.in_burst()) {
            return false;
        }
        let check = super::tso::DeferCheck {
            now,
            wstamp: self.wstamp,
            in_recovery: matches!(self.ca_state(), CaState::Recovery | CaState::Loss),
            cwnd: self.tp.snd_cwnd,
            in_flight: self.in_flight(),
            mss: self.tp.mss,
            max_segs: self.tso_segs(),
            send_win: (self.snd_una.saturating_add(self.rwnd_bytes)).saturating_sub(self.snd_nxt),
            unsent: self.data_end().saturating_sub(self.snd_nxt),
            head_tx: self.segs.front().map(|s| s.tx_time),
            srtt: self.tp.srtt,
        };
        super::tso::tso_should_defer(&check)
    }

    /// True when cwnd and the application would let a data segment leave (pacing aside).
    fn can_send_data(&self) -> bool {
        self.state == SndState::Established
            && self.in_flight() < self.tp.snd_cwnd
            && (self.next_lost().is_some() || self.new_data_available())
    }

    /// Stamp a data segment as sent (`tcp_rate_skb_sent`, pacing, timers, PRR).
    /// `idle`: no packet was outstanding before this one (new sampling epoch, Linux
    /// `tcp_rate_skb_sent`); `no_flight`: nothing was in flight (`CA_EVENT_TX_START`).
    fn on_data_sent(
        &mut self,
        idx: usize,
        payload_bytes: u32,
        now: Nanos,
        idle: bool,
        no_flight: bool,
    ) {
        if idle {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        if no_flight {
            self.sync_tp();
            self.cc.cwnd_event(&mut self.tp, CwndEvent::TxStart);
        }
        let first_tx = self.first_tx_mstamp;
        let dmst = self.delivered_mstamp;
        let delivered = self.tp.delivered;
        let app_limited = self.app_limited_until != 0;
        let s = &mut self.segs[idx];
        s.tx_time = now;
        s.first_tx_mstamp = first_tx;
        s.delivered_mstamp = dmst;
        s.delivered = delivered;
        s.app_limited = app_limited;
        self.sent_pkts += 1;
        self.prr_out += 1;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        // __tcp_transmit_skb / tcp_update_skb_after_send: every transmission moves
        // tcp_wstamp_ns up to now; from the 10th data segment on (`tp->data_segs_out >= 10`,
        // this one counted) it also advances by len/rate, with a credit for lateness of at
        // most half the packet time. len is `skb->len` of the write-queue skb: the payload,
        // without the TCP/IP headers (they are pushed on the transmitted clone), so the pacer
        // runs (payload + headers)/payload faster than a rate computed on wire bytes.
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        if self.has_tso {
            self.wstamp = self.tso_after_send(now, payload_bytes);
            return;
        }
        if let (Some(rate), true) = (self.pacing_rate(), self.sent_pkts >= 10) {
            // payload·8·10^9 fits in u64 for any u32 payload below 2.3 GB: the same
            // quotient as in u128 without the 128-bit division.
            let len_ns = match (payload_bytes as u64).checked_mul(8_000_000_000) {
                Some(bits_ns) => bits_ns / rate,
                None => ((payload_bytes as u128 * 8_000_000_000) / rate as u128) as u64,
            };
            let credit = self.wstamp.0 - prior.0.min(self.wstamp.0);
            let len_ns = len_ns - (len_ns / 2).min(credit);
            self.wstamp = Nanos(self.wstamp.0 + len_ns);
        }
    }

    /// The packet carrying segment `idx`, which starts at `seq` with `len` bytes: the caller
    /// passes them because it has them at hand, and reading them back from a segment just
    /// appended waits for its cache line (the queue's tail slot was last touched a whole
    /// ring ago).
    fn data_packet(
        &mut self,
        idx: usize,
        (seq, len): (u64, u32),
        now: Nanos,
        retransmission: bool,
        idle: bool,
        no_flight: bool,
    ) -> Packet {
        let mut h = TcpHeader {
            seq,
            ack: 1,
            flags: tcp_flags::ACK,
            payload_bytes: len,
            ts_val: now,
            ts_ecr: self.ts_recent,
            ..Default::default()
        };
        let mut ecn = self.cc.data_ecn(self.tp.ecn);
        match self.tp.ecn {
            EcnMode::Classic => {
                // tcp_ecn_send: retransmissions go Not-ECT unless the CC needs ECN.
                if retransmission && !self.cc.needs_ecn() {
                    ecn = Ecn::NotEct;
                } else if self.cwr_pending {
                    h.flags |= tcp_flags::CWR;
                    self.cwr_pending = false;
                }
            }
            // Our r.cep for the ACK direction never moves (ACKs are Not-ECT): ACE = 5.
            EcnMode::AccEcn => h.set_ace((accecn::CEP_INIT & accecn::ACE_MASK) as u8),
            EcnMode::None => ecn = Ecn::NotEct,
        }
        let bytes = len + TCP_IP_HEADER_BYTES;
        self.on_data_sent(idx, len, now, idle, no_flight);
        Packet {
            id: self.new_id(),
            flow: self.flow,
            bytes,
            ecn,
            sent_at: now,
            enqueued_at: now,
            transport: Transport::Tcp(h),
        }
    }

    /// Linux `tcp_cwnd_validate`: track how fully the window is used.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if self.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    #[inline]
    fn transmit_data(&mut self, now: Nanos) -> Option<Packet> {
        // The window is full on most calls (each drain of the sender ends with one, and with
        // fq every paced departure polls): answer those here, as the full path would (no
        // packet, `tcp_cwnd_validate` with the window the limit), without entering it.
        if self.in_flight() >= self.tp.snd_cwnd {
            self.cwnd_validate(true);
            return None;
        }
        self.transmit_data_room(now)
    }

    /// `transmit_data` when the window has room.
    #[inline(never)]
    fn transmit_data_room(&mut self, now: Nanos) -> Option<Packet> {
        let p = self.transmit_data_inner(now);
        if p.is_some() {
            let limited = self.in_flight() >= self.tp.snd_cwnd;
            self.cwnd_validate(limited);
        } else if self.in_flight() >= self.tp.snd_cwnd {
            self.cwnd_validate(true);
        }
        p
    }

    fn transmit_data_inner(&mut self, now: Nanos) -> Option<Packet> {
        let in_flight = self.in_flight();
        if in_flight >= self.tp.snd_cwnd {
            return None;
        }
        let idle = self.packets_out == 0;
        let no_flight = in_flight == 0;
        if let Some(idx) = self.next_lost() {
            let (seq, len) = (self.segs[idx].seq, self.segs[idx].len);
            self.retransmit_hint = seq;
            if self.xmit_blocked(now, len, Some(seq)) {
                return None;
            }
            let tx = self.tx_stamp(now);
            let snd_nxt = self.snd_nxt;
            let s = &mut self.segs[idx];
            s.retrans = true;
            s.ever_retrans = true;
            s.retrans_nxt = snd_nxt;
            self.retrans_fifo.push_back((seq, snd_nxt));
            self.retrans_out += 1;
            self.retransmits += 1;
            return Some(self.data_packet(idx, (seq, len), tx, true, idle, no_flight));
        }
        if !self.new_data_available() {
            // Nothing to send while the window has room. Linux asks
            // `tcp_rate_check_app_limited` in `tcp_sendmsg_locked`, when the application
            // writes: with a modelled send buffer its writer's send() does (`check_space`);
            // without one the application has nothing more to give, so it is asked here.
            if self.sndbuf.is_none() {
                self.mark_app_limited();
            }
            return None;
        }
        if self.has_tso && self.tso_defers(now) {
            // tcp_tso_should_defer sets is_cwnd_limited: the window cut the burst short.
            self.cwnd_validate(true);
            return None;
        }
        if self.xmit_blocked(now, self.tp.mss, None) {
            return None;
        }
        let tx = self.tx_stamp(now);
        // Wrapped at once so that the packet is built where it is returned, not moved.
        let p = Some(self.send_new_segment(tx, idle, no_flight));
        // tcp_write_xmit -> tcp_schedule_loss_probe after new data.
        self.schedule_loss_probe(now, false);
        p
    }

    /// Put the next new segment on the wire (cwnd and pacing already checked by the caller).
    fn send_new_segment(&mut self, now: Nanos, idle: bool, no_flight: bool) -> Packet {
        let end = self.data_end();
        // The current MSS (`mss_cache`): a CC may lower it mid-flow (Prague 0.7).
        let len = (end - self.snd_nxt).min(self.tp.mss as u64) as u32;
        let seq = self.snd_nxt;
        self.segs.push_back(Seg {
            seq,
            len,
            tx_time: now,
            first_tx_mstamp: now,
            delivered_mstamp: now,
            delivered: 0,
            app_limited: false,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            retrans_nxt: 0,
        });
        self.snd_nxt += len as u64;
        self.packets_out += 1;
        let idx = self.segs.len() - 1;
        self.data_packet(idx, (seq, len), now, false, idle, no_flight)
    }

    // ----- ACK processing -------------------------------------------------------------------

    fn on_synack(&mut self, pkt: &Packet, h: &TcpHeader, now: Nanos) {
        if h.ack != 1 {
            return;
        }
        self.tp.ecn = accecn::client_result(self.requested_ecn, h.flags);
        if !self.syn_retransmitted {
            // Karn: only an unambiguous SYN gives a sample (Linux measures the SYN RTT).
            self.rtt.on_sample(now - self.syn_sent_at);
            self.tp.srtt = self.rtt.srtt();
            self.tp.min_rtt = self.rtt.srtt();
        }
        self.ts_recent = h.ts_val;
        self.state = SndState::Established;
        self.syn_deadline = None;
        self.syn_pending = false;
        self.snd_una = DATA_SEQ_START;
        self.snd_nxt = DATA_SEQ_START;
        self.high_seq = DATA_SEQ_START;
        self.check_space(true); // tcp_init_transfer -> tcp_init_buffer_space
        self.handshake_ack = Some(accecn::handshake_ace(pkt.ecn));
        self.sync_tp();
        self.cc.init(&mut self.tp);
    }

    fn handshake_ack_packet(&mut self, ace: u8, now: Nanos) -> Packet {
        let mut h = TcpHeader {
            seq: DATA_SEQ_START,
            ack: 1,
            flags: tcp_flags::ACK,
            ts_val: now,
            ts_ecr: self.ts_recent,
            ..Default::default()
        };
        if self.tp.ecn == EcnMode::AccEcn {
            // AccECN §3.2.2.1: the first ACK reflects the SYN/ACK's IP-ECN field.
            h.set_ace(ace);
        }
        Packet {
            id: self.new_id(),
            flow: self.flow,
            bytes: TCP_IP_HEADER_BYTES,
            ecn: Ecn::NotEct,
            sent_at: now,
            enqueued_at: now,
            transport: Transport::Tcp(h),
        }
    }

    /// Segment index holding byte `seq` (the number of segments when `seq` lies beyond them).
    /// Segments are full-sized for the MSS they were sent with; the MSS may change mid-flow,
    /// so the guess from the configured MSS is checked and a binary search used otherwise.
    fn seg_index(&self, seq: u64) -> usize {
        let Some(f) = self.segs.front() else {
            return 0;
        };
        if seq <= f.seq {
            return 0;
        }
        let guess = ((seq - f.seq) / self.cfg.mss as u64) as usize;
        match self.segs.get(guess) {
            Some(s) if s.seq <= seq && seq < s.end() => guess,
            _ => self.segs.partition_point(|s| s.end() <= seq),
        }
    }
}

impl Endpoint for TcpSender {
    fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
        self.last_now = self.last_now.max(now);
        // Borrowed, not copied: the header is most of the packet's bytes.
        let Some(h) = pkt.tcp() else {
            return;
        };
        match self.state {
            SndState::Idle => {}
            SndState::SynSent => {
                if h.has(tcp_flags::SYN) && h.has(tcp_flags::ACK) {
                    self.on_synack(&pkt, h, now);
                }
            }
            SndState::Established => {
                if h.has(tcp_flags::ACK) && !h.has(tcp_flags::SYN) {
                    self.on_ack(h, now);
                } else if h.has(tcp_flags::SYN) && h.has(tcp_flags::ACK) {
                    // Duplicate SYN/ACK (our handshake ACK was lost or slow): re-ACK it.
                    self.handshake_ack = Some(accecn::handshake_ace(pkt.ecn));
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        self.last_now = self.last_now.max(now);
        match self.state {
            SndState::Idle => {
                if now >= self.cfg.start {
                    self.state = SndState::SynSent;
                    self.syn_sent_at = now;
                    self.syn_deadline = Some(now + self.syn_rto);
                    return Some(self.make_syn(now));
                }
                None
            }
            SndState::SynSent => {
                if self.syn_pending {
                    self.syn_pending = false;
                    self.syn_sent_at = now;
                    self.syn_deadline = Some(now + self.syn_rto);
                    return Some(self.make_syn(now));
                }
                None
            }
            SndState::Established => {
                if let Some(ace) = self.handshake_ack.take() {
                    return Some(self.handshake_ack_packet(ace, now));
                }
                if self.has_fq {
                    return self.fq_xmit(now);
                }
                if self.tlp_pending {
                    self.tlp_pending = false;
                    if let Some(p) = self.send_loss_probe(now) {
                        return Some(p);
                    }
                }
                self.transmit_data(now)
            }
        }
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        match self.state {
            SndState::Idle => Some(self.cfg.start),
            SndState::SynSent => self.syn_deadline,
            SndState::Established => {
                let mut t = self.rto_deadline;
                if let Some(p) = self.tlp_deadline {
                    t = Some(t.map_or(p, |r| r.min(p)));
                }
                if self.send_gated() && self.wstamp > self.last_now && self.can_send_data() {
                    t = Some(t.map_or(self.wstamp, |r| r.min(self.wstamp)));
                }
                let fq_next = if self.has_fq {
                    self.fq.as_ref().and_then(FqHost::next_departure)
                } else {
                    None
                };
                if let Some(d) = fq_next {
                    t = Some(t.map_or(d, |r| r.min(d)));
                }
                if let Some(stop) = self.stop {
                    // Wake at stop so that the application-limited state is recorded.
                    if stop > self.last_now {
                        t = Some(t.map_or(stop, |r| r.min(stop)));
                    }
                }
                t
            }
        }
    }

    fn handle_timeout(&mut self, now: Nanos) {
        self.last_now = self.last_now.max(now);
        match self.state {
            SndState::Idle => {}
            SndState::SynSent => {
                if let Some(d) = self.syn_deadline {
                    if now >= d {
                        // RFC 6298 §5.5 for the SYN: back off and resend.
                        self.syn_retransmitted = true;
                        self.syn_retries += 1;
                        self.syn_rto =
                            Nanos((self.syn_rto.0.saturating_mul(2)).min(self.cfg.max_rto.0));
                        self.syn_pending = true;
                        self.syn_deadline = None;
                    }
                }
            }
            SndState::Established => {
                if let Some(p) = self.tlp_deadline {
                    if now >= p {
                        self.tlp_deadline = None;
                        if self.tlp_high_seq.is_none() && self.packets_out > 0 {
                            // The probe timer stands in for the RTO timer (Linux has one
                            // timer): the RTO restarts when the probe leaves.
                            self.tlp_pending = true;
                            self.rto_deadline = Some(now + self.rtt.rto());
                        }
                    }
                }
                if let Some(d) = self.rto_deadline {
                    if now >= d {
                        if self.packets_out > 0 {
                            self.on_rto(now);
                        } else {
                            self.rto_deadline = None;
                        }
                    }
                }
            }
        }
    }

    fn stats(&self) -> FlowStats {
        FlowStats {
            delivered_bytes: self.snd_una.saturating_sub(DATA_SEQ_START),
            sent_pkts: self.sent_pkts,
            retransmits: self.retransmits,
            cwnd_pkts: self.cc.cwnd_precise(&self.tp),
            ssthresh_pkts: if self.tp.snd_ssthresh == u32::MAX {
                f64::INFINITY
            } else {
                self.tp.snd_ssthresh as f64
            },
            srtt: self.tp.srtt,
            pacing_bps: self.pacing_rate().unwrap_or(0),
            ce_acked: self.tp.delivered_ce,
            lost_pkts: self.lost_pkts,
            alpha: self.cc.alpha(),
            in_flight_bytes: self.snd_nxt.saturating_sub(self.snd_una),
            target_bps: 0.0,
            acked_bytes: 0,
        }
    }

    fn is_done(&self) -> bool {
        match self.app_end {
            Some(end) => self.state == SndState::Established && self.snd_una >= end,
            None => false,
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// What `stats` and every event read must stay in the sender's first cache line and the
    /// first 64 bytes of the CC state right behind it (two lines per sample instead of five).
    #[test]
    fn hot_fields_stay_in_the_first_cache_lines() {
        assert_eq!(align_of::<TcpSender>(), 64);
        for end in [
            offset_of!(TcpSender, cc) + size_of::<Box<dyn CongestionControl>>(),
            offset_of!(TcpSender, snd_una) + 8,
            offset_of!(TcpSender, snd_nxt) + 8,
            offset_of!(TcpSender, sent_pkts) + 8,
            offset_of!(TcpSender, retransmits) + 8,
            offset_of!(TcpSender, lost_pkts) + 8,
            offset_of!(TcpSender, packets_out) + 4,
            offset_of!(TcpSender, state) + 1,
            offset_of!(TcpSender, pacing) + 1,
            offset_of!(TcpSender, has_fq) + 1,
            offset_of!(TcpSender, has_tso) + 1,
        ] {
            assert!(end <= 64, "a line-0 field ends at byte {end}");
        }
        assert_eq!(offset_of!(TcpSender, tp), 64);
        for end in [
            offset_of!(CcState, snd_cwnd) + 4,
            offset_of!(CcState, snd_ssthresh) + 4,
            offset_of!(CcState, mss) + 4,
            offset_of!(CcState, srtt) + 8,
            offset_of!(CcState, delivered_ce) + 8,
            offset_of!(CcState, pacing_rate_bps) + size_of::<Option<u64>>(),
        ] {
            assert!(end <= 64, "a hot CcState field ends at byte {end}");
        }
    }

    /// The rest of what an ACK or a send touches without a loss episode fills lines 3-7, and
    /// the state only SACK blocks, losses, fq, TSO, AccECN or the handshake touch comes after.
    #[test]
    fn per_event_fields_fill_lines_3_to_7() {
        assert_eq!(offset_of!(TcpSender, segs), 192);
        let hot_end = offset_of!(TcpSender, app_written_end) + size_of::<Option<u64>>();
        assert_eq!(hot_end, 512, "lines 3-7 end at byte {hot_end}");
        for start in [
            offset_of!(TcpSender, sack_cache),
            offset_of!(TcpSender, highest_sacked_end),
            offset_of!(TcpSender, lost_mark_seq),
            offset_of!(TcpSender, fq),
            offset_of!(TcpSender, tso),
            offset_of!(TcpSender, s_cep),
            offset_of!(TcpSender, cfg),
        ] {
            assert!(start >= 512, "a cold field starts at byte {start}");
        }
    }

    /// The copies kept in the hot lines agree with what they copy.
    #[test]
    fn hot_copies_match_the_configuration() {
        for (qdisc, tso) in [
            (HostQdisc::None, None),
            (HostQdisc::Fq, None),
            (HostQdisc::None, Some(crate::time::Rate::from_mbps(1000))),
        ] {
            let cfg = TcpConfig {
                qdisc,
                tso_nic_rate: tso,
                pacing: qdisc == HostQdisc::None,
                ..Default::default()
            };
            let s = TcpSender::new(0, cfg.clone(), Box::new(crate::cc::reno::Reno::default()));
            assert_eq!(s.has_fq, s.fq.is_some());
            assert_eq!(s.has_tso, s.tso.is_some());
            assert_eq!(s.pacing, cfg.pacing);
            assert_eq!(s.sack, cfg.sack);
            assert_eq!(s.tlp, cfg.tlp);
            assert_eq!(s.stop, cfg.stop);
            assert_eq!(s.rwnd_bytes, cfg.rwnd_bytes);
        }
    }
}
