//! The congestion-control interface, shaped like Linux `struct tcp_congestion_ops`
//! (include/net/tcp.h) with the slow-start / additive-increase helpers of net/ipv4/tcp_cong.c.

pub mod bbr;
pub mod bbr3;
pub mod bbr_common;
pub mod cubic;
pub mod dctcp;
pub mod prague;
pub mod registry;
pub mod reno;
#[cfg(test)]
mod testutil;

use crate::packet::Ecn;
use crate::time::Nanos;

pub use registry::{by_name, by_name_with, CcParams};

/// What ECN the two ends negotiated (or, before the handshake, what a CC asks for).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    /// No ECN: data is Not-ECT.
    #[default]
    None,
    /// RFC 3168 ECN: ECE latched until CWR.
    Classic,
    /// Accurate ECN (draft-ietf-tcpm-accurate-ecn): ACE counter feedback.
    AccEcn,
}

/// Linux `enum tcp_ca_state`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum CaState {
    /// No loss or congestion signal outstanding (`TCP_CA_Open`).
    #[default]
    Open,
    /// SACKs or dupACKs seen, no loss declared yet (`TCP_CA_Disorder`).
    Disorder,
    /// Window reduced for an ECN signal (`TCP_CA_CWR`).
    Cwr,
    /// Fast recovery after a loss (`TCP_CA_Recovery`).
    Recovery,
    /// Retransmission timeout: slow start from one packet (`TCP_CA_Loss`).
    Loss,
}

/// Linux `enum tcp_ca_event`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CwndEvent {
    /// First transmission after idle (`CA_EVENT_TX_START`).
    TxStart,
    /// cwnd restarted after idle (`CA_EVENT_CWND_RESTART`).
    CwndRestart,
    /// End of a CWR episode (`CA_EVENT_COMPLETE_CWR`).
    CompleteCwr,
    /// RTO fired (`CA_EVENT_LOSS`).
    Loss,
    /// A packet arrived without CE after CE ones (`CA_EVENT_ECN_NO_CE`).
    EcnNoCe,
    /// A CE packet arrived after non-CE ones (`CA_EVENT_ECN_IS_CE`).
    EcnIsCe,
}

/// The part of Linux `struct tcp_sock` a congestion control reads and writes. The TCP sender
/// owns it and hands it to every hook, as the kernel hands `sk`. Laid out by hand (`repr(C)`)
/// so that the hot fields share one cache line inside the sender (see `TcpSender`).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct CcState {
    // The first 64 bytes: what the samples and every CC read on each ACK.
    /// Congestion window in packets (`tp->snd_cwnd`).
    pub snd_cwnd: u32,
    /// Slow-start threshold in packets (`tp->snd_ssthresh`); `u32::MAX` = infinite.
    pub snd_ssthresh: u32,
    /// Sender maximum segment size (payload bytes).
    pub mss: u32,
    /// Additive-increase counter (`tp->snd_cwnd_cnt`).
    pub snd_cwnd_cnt: u32,
    /// Smoothed RTT (RFC 6298), zero before the first sample.
    pub srtt: Nanos,
    /// Minimum RTT seen (windowed min in Linux; lifetime min here unless the TCP model says otherwise).
    pub min_rtt: Nanos,
    /// Packets delivered (cumulatively and SACKed) since the start (`tp->delivered`).
    pub delivered: u64,
    /// Of those, delivered with CE feedback (`tp->delivered_ce`).
    pub delivered_ce: u64,
    /// Pacing rate the CC asks for in bits/s (`sk->sk_pacing_rate`); None = no pacing.
    pub pacing_rate_bps: Option<u64>,
    // Then the rest (field order is layout: `repr(C)`).
    /// Bytes sent but not yet acknowledged start here (`tp->snd_una`), next new byte (`tp->snd_nxt`).
    pub snd_una: u64,
    /// Next new byte to send (`tp->snd_nxt`).
    pub snd_nxt: u64,
    /// Upper bound on cwnd (`tp->snd_cwnd_clamp`).
    pub snd_cwnd_clamp: u32,
    /// Packets in flight now (`tcp_packets_in_flight`).
    pub packets_in_flight: u32,
    /// Most packets out in the current window of data (`tp->max_packets_out`).
    pub max_packets_out: u32,
    /// The window was fully used in the current window of data (`tp->is_cwnd_limited`), kept
    /// by the sender at send time as Linux `tcp_cwnd_validate` does. After an ACK the
    /// in-flight count is always below cwnd, so only this send-time record can tell.
    pub is_cwnd_limited: bool,
    /// The TCP sender paces by itself (`tcp_needs_internal_pacing`: no fq qdisc below it).
    pub internal_pacing: bool,
    /// An fq qdisc paces the flow (`sk_pacing_status == SK_PACING_FQ`, set by `fq_classify`).
    pub fq_paced: bool,
    /// No data waits to be sent for the first time (`tcp_write_queue_empty`).
    pub write_queue_empty: bool,
    /// The sender is application-limited (`tp->app_limited` non-zero).
    pub app_limited: bool,
    /// Loss-recovery state (`inet_csk(sk)->icsk_ca_state`).
    pub ca_state: CaState,
    /// What the handshake negotiated.
    pub ecn: EcnMode,
}

impl CcState {
    /// Linux defaults: IW10 (RFC 6928), infinite ssthresh.
    pub fn new(mss: u32) -> Self {
        CcState {
            mss,
            snd_cwnd: 10,
            snd_ssthresh: u32::MAX,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            srtt: Nanos::ZERO,
            min_rtt: Nanos::ZERO,
            delivered: 0,
            delivered_ce: 0,
            packets_in_flight: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            internal_pacing: false,
            fq_paced: false,
            write_queue_empty: true,
            ca_state: CaState::Open,
            ecn: EcnMode::None,
            pacing_rate_bps: None,
            app_limited: false,
            snd_una: 0,
            snd_nxt: 0,
        }
    }
    /// `tcp_in_slow_start()`.
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }
    /// `tcp_is_cwnd_limited()`: the send-time flag, or in slow start cwnd below twice the
    /// most packets out in this window (so that slow start can double what was used).
    pub fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        self.in_slow_start() && self.snd_cwnd < self.max_packets_out.saturating_mul(2)
    }
}

/// What one ACK tells the CC: Linux `struct ack_sample` + `struct rate_sample`, plus the ECN
/// feedback the TCP layer decoded (classic ECE or the AccECN ACE delta).
#[derive(Clone, Debug, Default)]
pub struct AckSample {
    /// When the ACK arrived.
    pub now: Nanos,
    /// Packets newly acknowledged (cumulatively or by SACK) by this ACK.
    pub acked_pkts: u32,
    /// Payload bytes newly acknowledged by this ACK.
    pub acked_bytes: u64,
    /// RTT sample from this ACK, if it gave one (Karn's rule applied).
    pub rtt: Option<Nanos>,
    /// The ACK signals congestion: classic ECE, or AccECN with a CE delta > 0 (Linux FLAG_ECE).
    pub ece: bool,
    /// Packets newly reported CE-marked (AccECN ACE delta, Linux `ece_delta`); with classic ECN
    /// it is `acked_pkts` when ECE is set, as Linux DCTCP counts it.
    pub ce_delta_pkts: u32,
    /// `rs->prior_delivered`: `tp->delivered` when the newest acked packet was sent.
    pub prior_delivered: u64,
    /// `rs->delivered`: packets delivered over the sample interval.
    pub rs_delivered: u64,
    /// `rs->interval_us`: length of the sample interval (zero = no valid rate sample).
    pub rs_interval: Nanos,
    /// `rs->is_app_limited`.
    pub is_app_limited: bool,
    /// `rs->losses`: packets newly marked lost while processing this ACK.
    pub losses: u32,
    /// `rs->prior_in_flight`.
    pub prior_in_flight: u32,
}

/// A congestion control algorithm (Linux `tcp_congestion_ops`). Hooks the TCP sender calls:
/// `init` after the handshake; per ACK `pkts_acked`, `in_ack_event`, then either `cong_control`
/// (when `has_cong_control`) or `cong_avoid` (in Open/Disorder, when cwnd-limited);
/// `ssthresh` on entering Recovery, Loss or CWR; `set_state` and `cwnd_event` on transitions.
pub trait CongestionControl: Send {
    /// Name as in scenario files ("reno", "prague", ...).
    fn name(&self) -> &'static str;

    /// ECN handshake this CC asks for (Prague: AccEcn; Reno default: None).
    fn requested_ecn(&self) -> EcnMode;

    /// IP-ECN codepoint for data once `negotiated` is known (Prague ECT(1); classic ECT(0)).
    fn data_ecn(&self, negotiated: EcnMode) -> Ecn {
        match negotiated {
            EcnMode::None => Ecn::NotEct,
            _ => Ecn::Ect0,
        }
    }

    /// Linux `TCP_CONG_NEEDS_ECN`: the CC relies on ECN for every data segment, so with
    /// classic ECN retransmissions keep the ECT codepoint instead of going Not-ECT
    /// (`tcp_ecn_send`; RFC 3168 §6.1.5 otherwise). DCTCP sets it.
    fn needs_ecn(&self) -> bool {
        false
    }

    /// The receiving end runs this CC's classic-ECN receiver (Linux: the peer socket has the
    /// same CC, and DCTCP's `cwnd_event` handles `CA_EVENT_ECN_IS_CE`/`NO_CE` with
    /// `dctcp_ece_ack_update`: ECE mirrors the CE state packet by packet, with an immediate
    /// ACK on each change). Sets [`crate::tcp::TcpConfig::dctcp_ece`] on the receiver.
    fn dctcp_receiver(&self) -> bool {
        false
    }

    /// True when the CC reacts to CE feedback itself (Prague, BBRv3); the TCP sender then does
    /// not enter CWR on ECE. False: ECE makes the sender call `ssthresh` and enter CWR once per
    /// window, as `tcp_enter_cwr()` does (Reno, Cubic, DCTCP).
    fn handles_ecn(&self) -> bool {
        false
    }

    /// Set up at connection start (`ca_ops->init`).
    fn init(&mut self, _tp: &mut CcState) {}

    /// New slow-start threshold on a congestion event (`ca_ops->ssthresh`).
    fn ssthresh(&mut self, tp: &mut CcState) -> u32;

    /// Window growth per ACK (`ca_ops->cong_avoid`).
    fn cong_avoid(&mut self, _tp: &mut CcState, _ack: &AckSample) {}

    /// Full control per ACK (`ca_ops->cong_control`), used instead of `cong_avoid` + PRR
    /// when `has_cong_control()` (BBR, Prague).
    fn cong_control(&mut self, _tp: &mut CcState, _ack: &AckSample) {}

    /// The CC implements `cong_control` (Linux: `ca_ops->cong_control` is set).
    fn has_cong_control(&self) -> bool {
        false
    }

    /// `ca_ops->pkts_acked` (RTT sample, acked count).
    fn pkts_acked(&mut self, _tp: &mut CcState, _ack: &AckSample) {}

    /// `ca_ops->in_ack_event` (DCTCP's α update lives here).
    fn in_ack_event(&mut self, _tp: &mut CcState, _ack: &AckSample) {}

    /// `ca_ops->set_state`.
    fn set_state(&mut self, _tp: &mut CcState, _new: CaState) {}

    /// `ca_ops->cwnd_event`.
    fn cwnd_event(&mut self, _tp: &mut CcState, _ev: CwndEvent) {}

    /// `ca_ops->undo_cwnd` (after a spurious loss); Reno's `tcp_reno_undo_cwnd` by default.
    fn undo_cwnd(&mut self, tp: &mut CcState, prior_cwnd: u32) -> u32 {
        tp.snd_cwnd.max(prior_cwnd)
    }

    /// The CC's own TSO burst size (`ca_ops->tso_segs`, L4S team tree; Prague's
    /// `prague_tso_segs`); None = `tcp_tso_autosize`.
    fn tso_segs(&self, _tp: &CcState) -> Option<u32> {
        None
    }

    /// The window with its fractional part where the CC keeps one (Prague), for recording.
    fn cwnd_precise(&self, tp: &CcState) -> f64 {
        tp.snd_cwnd as f64
    }

    /// The CC's own view of the marking fraction (DCTCP/Prague α), NaN where it has none.
    fn alpha(&self) -> f64 {
        f64::NAN
    }
}

/// `tcp_slow_start()` (tcp_cong.c): grow cwnd by `acked` up to ssthresh; returns the leftover
/// acked packets to use in congestion avoidance.
pub fn tcp_slow_start(tp: &mut CcState, acked: u32) -> u32 {
    let cwnd = tp.snd_cwnd.saturating_add(acked).min(tp.snd_ssthresh);
    let used = cwnd - tp.snd_cwnd;
    tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
    acked - used
}

/// `tcp_cong_avoid_ai()` (tcp_cong.c): cwnd += 1 per `w` acked packets, carrying the
/// remainder in `snd_cwnd_cnt`.
pub fn tcp_cong_avoid_ai(tp: &mut CcState, w: u32, acked: u32) {
    let w = w.max(1);
    if tp.snd_cwnd_cnt >= w {
        tp.snd_cwnd_cnt = 0;
        tp.snd_cwnd += 1;
    }
    tp.snd_cwnd_cnt += acked;
    if tp.snd_cwnd_cnt >= w {
        let delta = tp.snd_cwnd_cnt / w;
        tp.snd_cwnd_cnt -= delta * w;
        tp.snd_cwnd += delta;
    }
    tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_cwnd_clamp);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the CCs that keep a marking fraction (DCTCP, Prague, BBRv3 with ECN) report α;
    /// the others report NaN, which the stats and plots read as "none", not as α = 0.
    #[test]
    fn a_cc_without_a_marking_fraction_reports_alpha_as_nan() {
        assert!(reno::Reno::default().alpha().is_nan());
        assert!(cubic::Cubic::default().alpha().is_nan());
    }

    /// tcp_cong_avoid_ai's two steps: a count already at w (w shrank since) first gives one
    /// packet and restarts from 0; a stretch ACK of 25 at w = 10 gives 2 and keeps 5; the
    /// clamp holds.
    #[test]
    fn additive_increase_credits_a_stale_count_and_stretch_acks() {
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 10;
        tp.snd_cwnd_cnt = 12;
        tcp_cong_avoid_ai(&mut tp, 10, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (11, 1));
        tp.snd_cwnd_cnt = 0;
        tcp_cong_avoid_ai(&mut tp, 10, 25);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (13, 5));
        tp.snd_cwnd_clamp = 13;
        tcp_cong_avoid_ai(&mut tp, 10, 10);
        assert_eq!(tp.snd_cwnd, 13);
        // Slow start at the clamp: the window stops there, the leftover is what ssthresh
        // did not take.
        tp.snd_cwnd = 12;
        tp.snd_ssthresh = 100;
        assert_eq!(tcp_slow_start(&mut tp, 5), 0);
        assert_eq!(tp.snd_cwnd, 13);
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_leftover() {
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 10;
        tp.snd_ssthresh = 12;
        assert_eq!(tcp_slow_start(&mut tp, 5), 3);
        assert_eq!(tp.snd_cwnd, 12);
    }

    #[test]
    fn additive_increase_is_one_packet_per_window() {
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 10;
        tp.snd_ssthresh = 5;
        // 10 ACKs of 1 packet each at w = 10 add exactly one packet.
        for _ in 0..9 {
            tcp_cong_avoid_ai(&mut tp, 10, 1);
        }
        assert_eq!(tp.snd_cwnd, 10);
        tcp_cong_avoid_ai(&mut tp, 10, 1);
        assert_eq!(tp.snd_cwnd, 11);
        assert_eq!(tp.snd_cwnd_cnt, 0);
    }
}
