//! TCP data receiver: SYN/ACK with ECN negotiation, cumulative + SACK acknowledgements,
//! delayed ACKs and ECN feedback (Linux `__tcp_ack_snd_check`, `tcp_ecn_check_ce`, RFC 2018).
//!
//! ACK policy (Linux): ACK each of the first `initial_quickacks` data segments at once (quick-
//! ACK mode), then ACK at once when `delack_segments` in-order segments are unacknowledged,
//! when data arrives out of order or while the out-of-order queue is non-empty, for duplicate
//! data, for a classic CWR data segment, and (with `quickack_on_ce_change`) when ECN feedback
//! changes; otherwise arm the `delack_timeout` timer at the first unacknowledged segment.
//! Classic ECN (RFC 3168 §6.1.3): ECE on every ACK from the first CE until data with CWR;
//! or, with `dctcp_ece`, DCTCP's receiver (Linux `dctcp_ece_ack_update`): ECE mirrors the CE
//! state of the latest data packet, with an immediate ACK on each change.
//! AccECN: r.cep counts CE packets from 5; every ACK carries ACE = r.cep mod 8; a data
//! packet whose IP-ECN field differs from the previous packet's is acked at once (Linux's
//! change-triggered ACK, `prev_ecnfield`; RFC 9768 asks at least for not-CE -> CE).
//! Simplified: quick-ACK mode is not re-entered after idle, no adaptive ATO (the timer is
//! fixed), no DSACK, no AccECN option, no increment-triggered ACKs, no SYN/ACK retransmission
//! timer (the client's SYN retransmission covers it); ACKs and SYN/ACKs are Not-ECT.

use std::collections::VecDeque;

use super::{accecn, packet_id, TcpConfig, DATA_SEQ_START, SYN_BYTES, TCP_IP_HEADER_BYTES};
use crate::cc::EcnMode;
use crate::packet::{tcp_flags, Ecn, Packet, SackBlock, TcpHeader, Transport};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RcvState {
    Listen,
    SynRcvd,
    Established,
}

/// TCP data receiver: the handshake answer, delayed and quick ACKs, SACK blocks and the ECN
/// echo of each feedback mode.
pub struct TcpReceiver {
    flow: u32,
    supported_ecn: EcnMode,
    sack: bool,
    delack_segments: u32,
    delack_timeout: Nanos,
    quickack_on_ce_change: bool,
    dctcp_ece: bool,
    state: RcvState,
    ecn: EcnMode,
    next_id: u64,
    /// Next in-order byte expected (`rcv_nxt`).
    rcv_nxt: u64,
    /// Out-of-order data held, sorted disjoint [start, end).
    ooo: Vec<SackBlock>,
    /// SACK blocks in the order to report them, most recently changed first (RFC 2018 §4).
    sack_recent: Vec<SackBlock>,
    /// In-order segments received since the last ACK.
    unacked_segs: u32,
    /// Quick-ACK credit: ACKs still to send at once (Linux `icsk_ack.quick`).
    quick: u32,
    initial_quickacks: u32,
    saw_data: bool,
    delack_deadline: Option<Nanos>,
    /// `rcv_nxt` carried by the last ACK sent (RFC 7323 `Last.ACK.sent`).
    last_ack_sent: u64,
    ts_recent: Nanos,
    /// AccECN CE packet counter r.cep (starts at 5) and byte counters (kept for inspection).
    r_cep: u64,
    pub(crate) r_bytes: crate::packet::AccEcnOption,
    /// Classic ECN: ECE latched until CWR (Linux `TCP_ECN_DEMAND_CWR`).
    demand_cwr: bool,
    last_data_ce: bool,
    /// IP-ECN field of the previous packet of any kind (Linux `tp->prev_ecnfield`).
    prev_ecnfield: Ecn,
    outq: VecDeque<Packet>,
    acks_sent: u64,
}

impl TcpReceiver {
    /// A receiver for `flow` after checking `cfg` ([`TcpConfig::validate`]).
    pub fn try_new(flow: u32, cfg: &TcpConfig) -> Result<Self, crate::ParamError> {
        cfg.validate()?;
        Ok(Self::new(flow, cfg))
    }

    /// A receiver for `flow`; see [`TcpConfig`] for the fields it reads.
    pub fn new(flow: u32, cfg: &TcpConfig) -> Self {
        TcpReceiver {
            flow,
            supported_ecn: cfg.ecn.unwrap_or(EcnMode::AccEcn),
            sack: cfg.sack,
            delack_segments: cfg.delack_segments.max(1),
            delack_timeout: cfg.delack_timeout,
            quickack_on_ce_change: cfg.quickack_on_ce_change,
            dctcp_ece: cfg.dctcp_ece,
            state: RcvState::Listen,
            ecn: EcnMode::None,
            next_id: 0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            sack_recent: Vec::new(),
            unacked_segs: 0,
            quick: 0,
            initial_quickacks: cfg.initial_quickacks,
            saw_data: false,
            delack_deadline: None,
            last_ack_sent: 0,
            ts_recent: Nanos::ZERO,
            r_cep: accecn::CEP_INIT,
            r_bytes: Default::default(),
            demand_cwr: false,
            last_data_ce: false,
            prev_ecnfield: Ecn::NotEct,
            outq: VecDeque::new(),
            acks_sent: 0,
        }
    }

    /// The ECN feedback mode the handshake settled on.
    pub fn ecn_mode(&self) -> EcnMode {
        self.ecn
    }
    /// AccECN r.cep (CE packets received + 5).
    pub fn r_cep(&self) -> u64 {
        self.r_cep
    }
    /// Pure ACKs sent so far (SYN/ACKs excluded).
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }
    /// Payload bytes received in order.
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt.saturating_sub(DATA_SEQ_START)
    }

    fn new_packet(&mut self, bytes: u32, h: TcpHeader, now: Nanos) -> Packet {
        let id = packet_id(self.flow, true, self.next_id);
        self.next_id += 1;
        Packet {
            id,
            flow: self.flow,
            bytes,
            ecn: Ecn::NotEct,
            sent_at: now,
            enqueued_at: now,
            transport: Transport::Tcp(h),
        }
    }

    fn on_syn(&mut self, pkt: &Packet, h: &TcpHeader, now: Nanos) {
        // A repeated SYN (our SYN/ACK was lost) is answered again, reflecting its own IP-ECN.
        self.ecn = accecn::server_choice(accecn::requested_by_syn(h.flags), self.supported_ecn);
        self.rcv_nxt = h.seq + 1;
        self.last_ack_sent = self.rcv_nxt;
        self.ts_recent = h.ts_val;
        self.state = RcvState::SynRcvd;
        let mut sh = TcpHeader {
            seq: 0,
            ack: self.rcv_nxt,
            flags: tcp_flags::SYN | tcp_flags::ACK,
            ts_val: now,
            ts_ecr: h.ts_val,
            ..Default::default()
        };
        match self.ecn {
            EcnMode::None => {}
            // RFC 3168 §6.1.1: ECN-setup SYN/ACK has ECE set and CWR clear.
            EcnMode::Classic => sh.flags |= tcp_flags::ECE,
            EcnMode::AccEcn => sh.set_ace(accecn::handshake_ace(pkt.ecn)),
        }
        let p = self.new_packet(SYN_BYTES, sh, now);
        self.outq.push_back(p);
    }

    /// Insert [start, end) into the out-of-order set and put its (merged) block first in the
    /// SACK report order.
    fn add_ooo(&mut self, start: u64, end: u64) {
        let mut s = start;
        let mut e = end;
        self.ooo.retain(|&(a, b)| {
            if b < s || a > e {
                true
            } else {
                s = s.min(a);
                e = e.max(b);
                false
            }
        });
        let pos = self.ooo.partition_point(|&(a, _)| a < s);
        self.ooo.insert(pos, (s, e));
        self.sack_recent.retain(|&(a, b)| b < s || a > e);
        self.sack_recent.insert(0, (s, e));
    }

    /// Advance `rcv_nxt` over out-of-order data that is now contiguous.
    fn absorb_ooo(&mut self) {
        while let Some(&(a, b)) = self.ooo.first() {
            if a > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(b);
            self.ooo.remove(0);
        }
        let nxt = self.rcv_nxt;
        self.sack_recent.retain(|&(_, b)| b > nxt);
    }

    /// `segs`: the original segments a GRO super-segment carries (1 without GRO).
    fn on_data(&mut self, pkt: &Packet, h: &TcpHeader, segs: u32, now: Nanos) {
        let mut ack_now = false;
        if !self.saw_data {
            // tcp_event_data_recv: the first data packet starts in quick-ACK mode.
            self.saw_data = true;
            self.quick = self.initial_quickacks;
        }
        let len = h.payload_bytes as u64;
        let is_ce = pkt.ecn == Ecn::Ce;
        match self.ecn {
            EcnMode::AccEcn => {
                match pkt.ecn {
                    Ecn::Ce => {
                        // `tcp_ecn_received_counters`: pcount = max(1, gso_segs) CE packets.
                        self.r_cep += segs.max(1) as u64;
                        self.r_bytes.ceb = (self.r_bytes.ceb + len as u32) & 0xFF_FFFF;
                    }
                    Ecn::Ect0 => self.r_bytes.e0b = (self.r_bytes.e0b + len as u32) & 0xFF_FFFF,
                    Ecn::Ect1 => self.r_bytes.e1b = (self.r_bytes.e1b + len as u32) & 0xFF_FFFF,
                    Ecn::NotEct => {}
                }
                // AccECN change-triggered ACK (Linux `tcp_ecn_received_counters`): the IP-ECN
                // field differs from the previous packet's.
                if self.quickack_on_ce_change && pkt.ecn != self.prev_ecnfield {
                    ack_now = true;
                }
            }
            EcnMode::Classic if self.dctcp_ece => {
                // dctcp_ece_ack_update: on a CE-state change, first ACK what is pending
                // with the old ECE, then ACK this segment at once with the new one.
                if is_ce != self.last_data_ce {
                    if self.delack_deadline.is_some() {
                        self.send_ack(now);
                    }
                    ack_now = true;
                }
                self.demand_cwr = is_ce;
            }
            EcnMode::Classic => {
                // Linux `tcp_ecn_accept_cwr`, then `tcp_ecn_check_ce`: a CE-marked CWR
                // segment latches ECE again.
                if h.has(tcp_flags::CWR) {
                    self.demand_cwr = false;
                    ack_now = true;
                }
                if is_ce && !self.demand_cwr {
                    self.demand_cwr = true;
                    if self.quickack_on_ce_change {
                        // tcp_enter_quickack_mode(sk, 2): this ACK and the next go at once.
                        self.quick = self.quick.max(2);
                    }
                }
            }
            EcnMode::None => {}
        }
        self.last_data_ce = is_ce;

        let seq = h.seq;
        let end = seq + len;
        if end <= self.rcv_nxt {
            // Entirely duplicate: a spurious retransmission; ACK at once (Linux sends a DSACK).
            ack_now = true;
        } else if seq <= self.rcv_nxt {
            // RFC 7323 §4.3: TS.Recent from a segment that starts at or below Last.ACK.sent.
            if seq <= self.last_ack_sent {
                self.ts_recent = h.ts_val;
            }
            let had_ooo = !self.ooo.is_empty();
            self.rcv_nxt = end;
            self.absorb_ooo();
            // A super-segment of n ≥ 2 leaves more than one rcv_mss unacknowledged, so
            // `__tcp_ack_snd_check` ACKs it at once (delack_segments 2).
            self.unacked_segs += segs.max(1);
            if had_ooo {
                // Filling (part of) a hole: ACK every segment while reordering is visible.
                ack_now = true;
            }
        } else {
            self.add_ooo(seq, end);
            ack_now = true;
        }
        if !ack_now && (self.unacked_segs >= self.delack_segments || self.quick > 0) {
            ack_now = true;
        }
        if ack_now {
            self.send_ack(now);
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.delack_timeout);
        }
    }

    fn send_ack(&mut self, now: Nanos) {
        let mut h = TcpHeader {
            seq: 1,
            ack: self.rcv_nxt,
            flags: tcp_flags::ACK,
            ts_val: now,
            ts_ecr: self.ts_recent,
            ..Default::default()
        };
        match self.ecn {
            EcnMode::Classic if self.demand_cwr => h.flags |= tcp_flags::ECE,
            EcnMode::AccEcn => h.set_ace((self.r_cep & accecn::ACE_MASK) as u8),
            _ => {}
        }
        let mut bytes = TCP_IP_HEADER_BYTES;
        if self.sack {
            let mut n = self.sack_recent.len().min(3);
            // Blocks lie above rcv_nxt within the flight, far inside the 2^31 bytes a header
            // can carry; should a flight ever exceed that (rwnd_bytes beyond Linux's 2^30
            // cap), send the blocks that fit, as a 32-bit wire would have to.
            while h.set_sack(&self.sack_recent[..n]).is_err() {
                n -= 1;
            }
            if n > 0 {
                // kind + length (2) + 8 per block, padded with 2 NOPs to a 4-byte multiple.
                bytes += 4 + 8 * n as u32;
            }
        }
        self.unacked_segs = 0;
        self.quick = self.quick.saturating_sub(1);
        self.delack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.acks_sent += 1;
        let p = self.new_packet(bytes, h, now);
        self.outq.push_back(p);
    }
}

impl TcpReceiver {
    /// Handle one packet that stands for `segs` original segments: a GRO super-segment
    /// (`tcp/gro.rs`) whose header is its first segment's with `payload_bytes` the total.
    pub fn handle_segments(&mut self, pkt: &Packet, segs: u32, now: Nanos) {
        // Borrowed, not copied: the header is most of the packet's bytes.
        let Some(h) = pkt.tcp() else {
            return;
        };
        self.on_packet(pkt, h, segs, now);
        self.prev_ecnfield = pkt.ecn;
    }
}

impl Endpoint for TcpReceiver {
    fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
        self.handle_segments(&pkt, 1, now);
    }

    fn poll_transmit(&mut self, _now: Nanos) -> Option<Packet> {
        self.outq.pop_front()
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.delack_deadline
    }

    fn handle_timeout(&mut self, now: Nanos) {
        if let Some(t) = self.delack_deadline {
            if now >= t {
                self.send_ack(now);
            }
        }
    }

    fn stats(&self) -> FlowStats {
        FlowStats {
            delivered_bytes: self.delivered_bytes(),
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            alpha: f64::NAN,
            ..Default::default()
        }
    }
}

impl TcpReceiver {
    fn on_packet(&mut self, pkt: &Packet, h: &TcpHeader, segs: u32, now: Nanos) {
        if h.has(tcp_flags::SYN) {
            if !h.has(tcp_flags::ACK) && self.state != RcvState::Established {
                self.on_syn(pkt, h, now);
            }
            return;
        }
        match self.state {
            RcvState::Listen => return,
            RcvState::SynRcvd => {
                if h.has(tcp_flags::ACK) && h.ack >= 1 {
                    self.state = RcvState::Established;
                } else {
                    return;
                }
            }
            RcvState::Established => {}
        }
        if h.payload_bytes > 0 {
            self.on_data(pkt, h, segs, now);
        }
    }
}
