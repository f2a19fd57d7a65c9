//! BBR v3: the BBRv2/v3 model with bandwidth/inflight bounds and loss/ECN response (draft-cardwell-ccwg-bbr).
//! Follows google/bbr `v3` branch net/ipv4/tcp_bbr.c: `bbr_main`, `bbr_update_cycle_phase`, `bbr_adapt_upper_bounds`, `bbr_adapt_lower_bounds`.
//!
//! Faithful core (constants as Linux v3):
//! - Startup: pacing gain 2.77 (`bbr_startup_pacing_gain` = 256·277/100 + 1), cwnd gain 2;
//!   exit on a bandwidth plateau (3 rounds < 25 % growth), on too much loss in Startup
//!   (≥ 6 loss events in a Recovery round and loss rate > 2 %) or on 2 consecutive rounds with
//!   CE ratio ≥ 50 % (`bbr_check_ecn_too_high_in_startup`), the latter two setting
//!   inflight_hi = max(BDP, inflight_latest). Drain at 1/2.885 until inflight ≤ BDP.
//! - ProbeBW phases Down (0.91) → Cruise (1.0) → Refill (1.0, one round) → Up (1.25, cwnd gain
//!   2.25) → Down; a probe starts after a random 2–3 s wall clock wait or after
//!   min(63, target inflight) rounds (Reno coexistence), or quickly after ECN-only cycles
//!   (`bbr_ecn_reprobe_gain`); Up grows inflight_hi with a doubling slope each round while
//!   cwnd-limited and ends on a bandwidth plateau or when a previous probe went too high and
//!   inflight reached inflight_hi; Down ends when inflight ≤ min(BDP, inflight_hi − 15 %).
//! - Model: bw = min(max bw over the last 2 probe cycles (`bw_hi[2]`), `bw_lo`); upper bound
//!   `inflight_hi` and lower bounds `inflight_lo`/`bw_lo`; `bw_latest`/`inflight_latest` per
//!   round. "Inflight too high" while probing (loss > `bbr_loss_thresh` 2 % of the flight, or
//!   CE > `bbr_ecn_thresh` 50 % of the delivered packets of the sample) cuts
//!   inflight_hi = max(tx_in_flight, (1 − β)·target inflight), β = 0.3, once per probe, and
//!   ends Up. When not probing, once per round: ECN → inflight_lo ×= (1 − ecn_alpha·1/3)
//!   (`bbr_ecn_lower_bounds`, `bbr_ecn_factor`); loss → bw_lo, inflight_lo ×= 0.7 but not below
//!   the latest round's delivery (`bbr_loss_lower_bounds`). cwnd is capped by inflight_hi
//!   (Up/Down/Refill), by inflight_hi − 15 % headroom (Cruise, ProbeRTT), and by inflight_lo.
//! - `ecn_alpha`: EWMA of the CE ratio per round, gain 1/16, initial 1.0, 8-bit fixed point.
//! - ProbeRTT every 5 s (`bbr_probe_rtt_win_ms`), cwnd = max(4, BDP/2) for ≥ 200 ms and one
//!   round; min_rtt window 10 s; pacing margin 1 %; quantisation budget max(cwnd, 3·TSO goal)
//!   (+2 in Up); ack-aggregation allowance (`extra_acked`).
//!
//! Option `l4s` ("L4S-compatible BBR"): ask for AccECN, send ECT(1), and treat CE as the
//! shallow-threshold signal at any RTT. Linux v3 uses ECN only when the route says the ECN is
//! shallow-threshold (`TCP_ECN_LOW`) and min_rtt ≤ `bbr_ecn_max_rtt_us` (5 ms); with `l4s` the
//! RTT limit is lifted (as with `bbr_ecn_max_rtt_us = 0`). Without `l4s` this BBR asks for no ECN.
//!
//! Simplified (named): per-packet loss marking (`bbr_skb_marked_lost`, with the exact
//! `bbr_inflight_hi_from_lost_skb` prefix) is replaced by the ACK path: the loss/CE counts of a
//! rate sample (`rs->lost`, `rs->delivered_ce`) are reconstructed from cumulative counters at
//! the sample's `prior_delivered`, and `tx_in_flight` ≈ delivered + lost over that sample.
//! Not modelled: PLB, the app-limited fast path, TLP loss-probe recovery, the precise-ACK CE
//! receiver state machine, EDT in `bbr_packets_in_net_at_edt`, undo of spurious recovery
//! beyond restoring the saved bounds. The TSO-oriented quantisation budget is kept as Linux
//! computes it: below ~3 ms min_rtt its min_rtt allowance (64 KB >> (min_rtt/512 µs)) keeps
//! tens of packets of cwnd although the model sends single packets.
//!
//! The units, min-RTT filter, ProbeRTT clock, ACK-aggregation estimate and pacing rule that v1
//! shares unchanged live in [`super::bbr_common`]; this file keeps what is v3's own.

use super::bbr_common::{
    bw_sample, saved_cwnd, AckAggregation, Pacing, ProbeRtt, RttMin, BBR_CWND_MIN_TARGET,
    BBR_EXTRA_ACKED_WIN_RTTS, BBR_FULL_BW_CNT, BBR_FULL_BW_THRESH, BBR_MIN_RTT_WIN, BBR_SCALE,
    BBR_UNIT, BW_UNIT, GSO_BUDGET_BYTES,
};
use super::{AckSample, CaState, CcState, CongestionControl, CwndEvent, EcnMode};
use crate::packet::Ecn;
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// `bbr_startup_pacing_gain` ≈ 2.77.
pub const BBR_STARTUP_PACING_GAIN: u64 = BBR_UNIT * 277 / 100 + 1;
/// `bbr_startup_cwnd_gain` = 2.
pub const BBR_STARTUP_CWND_GAIN: u64 = BBR_UNIT * 2;
/// `bbr_drain_gain` = 1/2.885.
pub const BBR_DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain` = 2 in ProbeBW.
pub const BBR_CWND_GAIN: u64 = BBR_UNIT * 2;
/// Pacing gains of the phases Up, Down, Cruise, Refill.
pub const BBR_PACING_GAIN: [u64; 4] = [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT];
/// `bbr_beta`: multiplicative cut 0.3 of inflight_hi/bw_lo on congestion.
pub const BBR_BETA: u64 = BBR_UNIT * 30 / 100;
/// `bbr_ecn_alpha_gain`: EWMA gain 1/16 of ecn_alpha.
pub const BBR_ECN_ALPHA_GAIN: u64 = BBR_UNIT / 16;
/// `bbr_ecn_alpha_init`: ecn_alpha starts at 1.0.
pub const BBR_ECN_ALPHA_INIT: u64 = BBR_UNIT;
/// `bbr_ecn_factor`: inflight_lo cut is ecn_alpha·1/3.
pub const BBR_ECN_FACTOR: u64 = BBR_UNIT / 3;
/// `bbr_ecn_thresh`: CE ratio 50 % means inflight too high.
pub const BBR_ECN_THRESH: u64 = BBR_UNIT / 2;
/// `bbr_ecn_reprobe_gain`: probe again sooner after ECN-only cycles.
pub const BBR_ECN_REPROBE_GAIN: u64 = BBR_UNIT / 2;
/// `bbr_loss_thresh`: loss above 2 % of the flight means inflight too high.
pub const BBR_LOSS_THRESH: u64 = BBR_UNIT * 2 / 100;
/// `bbr_full_loss_cnt`: loss events in a round that end Startup.
pub const BBR_FULL_LOSS_CNT: u32 = 6;
/// `bbr_full_ecn_cnt`: rounds of high CE that end Startup.
pub const BBR_FULL_ECN_CNT: u32 = 2;
/// `bbr_inflight_headroom`: leave 15 % below inflight_hi when cruising.
pub const BBR_INFLIGHT_HEADROOM: u64 = BBR_UNIT * 15 / 100;
/// Extra cwnd gain in Up, in units of BBR_UNIT/4.
pub const BBR_BW_PROBE_CWND_GAIN: u64 = 1;
/// `bbr_bw_probe_max_rounds`: most rounds between probes (Reno coexistence).
pub const BBR_BW_PROBE_MAX_ROUNDS: u32 = 63;
/// `bbr_bw_probe_rand_rounds`: random extra rounds before a probe.
pub const BBR_BW_PROBE_RAND_ROUNDS: u64 = 2;
/// `bbr_bw_probe_base_us`: least wall-clock wait between probes.
pub const BBR_BW_PROBE_BASE: Nanos = Nanos::from_secs(2);
/// `bbr_bw_probe_rand_us`: random extra wait, up to 1 s.
pub const BBR_BW_PROBE_RAND_US: u64 = 1_000_000;
/// `bbr_probe_rtt_win_ms`: ProbeRTT at least every 5 s.
pub const BBR_PROBE_RTT_WIN: Nanos = Nanos::from_secs(5);
/// `bbr_probe_rtt_cwnd_gain`: ProbeRTT cwnd is BDP/2.
pub const BBR_PROBE_RTT_CWND_GAIN: u64 = BBR_UNIT / 2;
const BBR_ECN_MAX_RTT_US: u64 = 5000;
const TCP_MIN_TSO_SEGS: u64 = 2;
const UNSET: u32 = u32::MAX;

/// `enum bbr_mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up until the bandwidth plateaus or loss/CE is too high.
    Startup,
    /// Drain the queue Startup built.
    Drain,
    /// Steady state: the Down/Cruise/Refill/Up cycle.
    ProbeBw,
    /// Cut cwnd to max(4, BDP/2) to refresh min_rtt.
    ProbeRtt,
}

/// `enum bbr_pacing_gain_phase`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Probe for bandwidth at pacing gain 1.25.
    Up = 0,
    /// Drain the probe's queue at pacing gain 0.91.
    Down = 1,
    /// Hold at gain 1 with headroom below inflight_hi.
    Cruise = 2,
    /// One round at gain 1 to refill the pipe before Up.
    Refill = 3,
}

/// `enum bbr_ack_phase`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// What one ACK's rate sample says (the subset of `struct rate_sample` BBRv3 reads).
#[derive(Clone, Copy, Debug, Default)]
struct Rs {
    acked: u32,
    delivered: u64,
    delivered_ce: u64,
    lost: u64,
    tx_in_flight: u64,
    is_app_limited: bool,
    is_ece: bool,
    prior_delivered: u64,
    valid: bool,
}

/// BBR v3 congestion control (google/bbr v3 `tcp_bbr.c`).
#[derive(Clone, Debug)]
pub struct Bbr3 {
    l4s: bool,
    rng: Rng,
    mode: Mode,
    phase: Phase,
    ack_phase: AckPhase,
    /// The 10 s min_rtt filter, fed from `probe_rtt_min`.
    min_rtt: RttMin,
    /// The 5 s filter whose expiry triggers ProbeRTT.
    probe_rtt_min: RttMin,
    probe_rtt: ProbeRtt,
    next_rtt_delivered: u64,
    round_start: bool,
    cycle_mstamp: Nanos,
    prev_ca_state: CaState,
    idle_restart: bool,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    prior_cwnd: u32,
    init_cwnd: u32,
    pacing: Pacing,
    ack_aggr: AckAggregation,
    // v3 model
    startup_ecn_rounds: u32,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    loss_events_in_round: u32,
    undo_bw_lo: u64,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u64,
    bw_lo: u64,
    bw_hi: [u64; 2],
    inflight_latest: u32,
    inflight_lo: u32,
    inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_up_rounds: u32,
    probe_wait: Nanos,
    ecn_eligible: bool,
    ecn_alpha: u64,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    // Cumulative counters for rate-sample reconstruction.
    delivered: u64,
    delivered_ce: u64,
    lost: u64,
    history: VecDeque<(u64, u64, u64)>,
}

impl Bbr3 {
    /// `l4s`: AccECN + ECT(1) + ECN response at any RTT. `seed`: random probe timing.
    pub fn new(l4s: bool, seed: u64) -> Self {
        Bbr3 {
            l4s,
            rng: Rng::derive(seed, "bbr3"),
            mode: Mode::Startup,
            phase: Phase::Up,
            ack_phase: AckPhase::Init,
            min_rtt: RttMin::default(),
            probe_rtt_min: RttMin::default(),
            probe_rtt: ProbeRtt::default(),
            next_rtt_delivered: 0,
            round_start: false,
            cycle_mstamp: Nanos::ZERO,
            prev_ca_state: CaState::Open,
            idle_restart: false,
            pacing_gain: BBR_STARTUP_PACING_GAIN,
            cwnd_gain: BBR_STARTUP_CWND_GAIN,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw_cnt: 0,
            full_bw: 0,
            prior_cwnd: 0,
            init_cwnd: 10,
            pacing: Pacing::default(),
            ack_aggr: AckAggregation::default(),
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 1,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            loss_events_in_round: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: u64::MAX,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: UNSET,
            inflight_hi: UNSET,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            bw_probe_up_rounds: 0,
            probe_wait: Nanos::ZERO,
            ecn_eligible: false,
            ecn_alpha: BBR_ECN_ALPHA_INIT,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            history: VecDeque::new(),
        }
    }

    /// Current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Current ProbeBW phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// inflight_hi in packets (None = unbounded).
    pub fn inflight_hi(&self) -> Option<u32> {
        (self.inflight_hi != UNSET).then_some(self.inflight_hi)
    }
    /// inflight_lo in packets (None = unbounded).
    pub fn inflight_lo(&self) -> Option<u32> {
        (self.inflight_lo != UNSET).then_some(self.inflight_lo)
    }
    /// The CE-ratio EWMA ecn_alpha in [0, 1].
    pub fn ecn_alpha(&self) -> f64 {
        self.ecn_alpha as f64 / BBR_UNIT as f64
    }
    /// The max-bandwidth estimate in packets per second.
    pub fn max_bw_pps(&self) -> f64 {
        self.max_bw() as f64 / BW_UNIT as f64 * 1e6
    }
    /// Startup found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    fn max_bw(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }
    fn bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }
    fn can_use_ecn(&self, tp: &CcState) -> bool {
        self.l4s && tp.ecn != EcnMode::None
    }

    fn bdp(&self, bw: u64, gain: u64) -> u32 {
        self.min_rtt.bdp(bw, gain, self.init_cwnd)
    }

    /// v3 `bbr_tso_segs_goal`: pacing budget plus a min_rtt-based allowance.
    fn tso_segs_goal(&self, tp: &CcState) -> u32 {
        let mut bytes = self.pacing.rate >> 10;
        let r = self.min_rtt.us >> 9;
        if r < 32 {
            bytes += 65536 >> r;
        }
        let bytes = bytes.min(GSO_BUDGET_BYTES);
        (bytes / tp.mss.max(1) as u64).max(TCP_MIN_TSO_SEGS) as u32
    }

    /// v3 `bbr_quantization_budget`.
    fn quantization_budget(&self, tp: &CcState, cwnd: u32) -> u32 {
        let mut cwnd = cwnd
            .max(3 * self.tso_segs_goal(tp))
            .max(BBR_CWND_MIN_TARGET);
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, tp: &CcState, bw: u64, gain: u64) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_target_inflight`.
    fn target_inflight(&self, tp: &CcState) -> u32 {
        self.inflight(tp, self.bw(), BBR_UNIT).min(tp.snd_cwnd)
    }

    fn packets_in_net(&self, tp: &CcState, inflight_now: u32) -> u32 {
        if self.pacing_gain > BBR_UNIT {
            inflight_now + self.tso_segs_goal(tp)
        } else {
            inflight_now
        }
    }

    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.phase, Phase::Refill | Phase::Up))
    }

    /// `bbr_set_pacing_rate` (v3 Startup gain 2.77 for the srtt-based start).
    fn set_pacing_rate(&mut self, tp: &mut CcState, bw: u64, gain: u64) {
        self.pacing
            .set(tp, bw, gain, BBR_STARTUP_PACING_GAIN, self.full_bw_reached);
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, tp: &CcState) {
        let in_probe_rtt = self.mode == Mode::ProbeRtt;
        self.prior_cwnd = saved_cwnd(
            self.prior_cwnd,
            self.prev_ca_state,
            in_probe_rtt,
            tp.snd_cwnd,
        );
    }

    /// Rebuild `rs->delivered_ce`, `rs->lost`, `tx_in_flight` for this ACK's sample.
    fn rate_sample(&mut self, ack: &AckSample) -> Rs {
        self.delivered += ack.acked_pkts as u64;
        self.delivered_ce += ack.ce_delta_pkts as u64;
        self.lost += ack.losses as u64;
        // The counters as they stood when the sampled packet was sent.
        let mut then = (0u64, 0u64, 0u64);
        while let Some(&front) = self.history.front() {
            if front.0 <= ack.prior_delivered {
                then = front;
                if self.history.len() > 1 && self.history[1].0 <= ack.prior_delivered {
                    self.history.pop_front();
                    continue;
                }
            }
            break;
        }
        self.history
            .push_back((self.delivered, self.delivered_ce, self.lost));
        let valid = ack.rs_interval > Nanos::ZERO && ack.acked_pkts > 0;
        let delivered = ack.rs_delivered;
        let delivered_ce = (self.delivered_ce - then.1).min(delivered);
        let lost = self.lost - then.2;
        Rs {
            acked: ack.acked_pkts,
            delivered,
            delivered_ce,
            lost,
            tx_in_flight: delivered + lost,
            is_app_limited: self
                .probe_rtt
                .sample_app_limited(ack.is_app_limited, ack.prior_delivered),
            // FLAG_ECE (`ack.ece`) is set whenever the ACK reports new CE (classic ECE, or an
            // AccECN ACE delta > 0), as in v3's `rs->is_ece = !!(flag & FLAG_ECE)`.
            is_ece: ack.ece,
            prior_delivered: ack.prior_delivered,
            valid,
        }
    }

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, tp: &CcState, ack: &AckSample) {
        self.round_start = false;
        if ack.rs_interval > Nanos::ZERO && ack.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tp.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_update_ecn_alpha`: per round, α ← (1 − 1/16)·α + ce_ratio/16.
    fn update_ecn_alpha(&mut self, tp: &CcState) -> Option<u64> {
        if !self.ecn_eligible
            && self.can_use_ecn(tp)
            && (self.l4s || self.min_rtt.us <= BBR_ECN_MAX_RTT_US)
        {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return None;
        }
        let delivered = self.delivered - self.alpha_last_delivered;
        let delivered_ce = self.delivered_ce - self.alpha_last_delivered_ce;
        if delivered == 0 {
            return None;
        }
        let ce_ratio = (delivered_ce << BBR_SCALE) / delivered;
        let gain = BBR_ECN_ALPHA_GAIN;
        let mut alpha = ((BBR_UNIT - gain) * self.ecn_alpha) >> BBR_SCALE;
        alpha += (gain * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT);
        self.alpha_last_delivered = self.delivered;
        self.alpha_last_delivered_ce = self.delivered_ce;
        self.check_ecn_too_high_in_startup(tp, ce_ratio);
        Some(ce_ratio)
    }

    fn handle_queue_too_high_in_startup(&mut self, tp: &CcState) {
        self.full_bw_reached = true;
        let bdp = self.inflight(tp, self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    fn check_ecn_too_high_in_startup(&mut self, tp: &CcState, ce_ratio: u64) {
        if self.full_bw_reached || !self.ecn_eligible {
            return;
        }
        if ce_ratio >= BBR_ECN_THRESH {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= BBR_FULL_ECN_CNT {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    fn update_latest_delivery_signals(&mut self, tp: &CcState, rs: &Rs, sample_bw: u64) {
        self.loss_round_start = false;
        if !rs.valid {
            return;
        }
        self.bw_latest = self.bw_latest.max(sample_bw);
        self.inflight_latest = self
            .inflight_latest
            .max(rs.delivered.min(UNSET as u64) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
        }
    }

    /// Once per round, restart the latest-delivery filters.
    fn advance_latest_delivery_signals(&mut self, rs: &Rs, sample_bw: u64) {
        if self.loss_round_start {
            self.bw_latest = sample_bw;
            self.inflight_latest = rs.delivered.min(UNSET as u64) as u32;
        }
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = u64::MAX;
        self.inflight_lo = UNSET;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_ecn_cut`: 1 − ecn_alpha·ecn_factor.
    fn ecn_cut(&self) -> u64 {
        BBR_UNIT - ((self.ecn_alpha * BBR_ECN_FACTOR) >> BBR_SCALE)
    }

    fn init_lower_bounds(&mut self, tp: &CcState, init_bw: bool) {
        if init_bw && self.bw_lo == u64::MAX {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = tp.snd_cwnd;
        }
    }

    /// `bbr_adapt_lower_bounds`: multiplicative cuts on ECN / loss when not probing.
    fn adapt_lower_bounds(&mut self, tp: &CcState) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET;
        if self.ecn_in_round {
            self.init_lower_bounds(tp, false);
            ecn_inflight_lo = ((self.inflight_lo as u64 * self.ecn_cut()) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(tp, true);
            let loss_cut = BBR_UNIT - BBR_BETA;
            self.bw_lo = self
                .bw_latest
                .max(((self.bw_lo as u128 * loss_cut as u128) >> BBR_SCALE) as u64);
            self.inflight_lo = self
                .inflight_latest
                .max(((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// `bbr_update_congestion_signals`.
    fn update_congestion_signals(&mut self, tp: &CcState, rs: &Rs, ack: &AckSample, bw: u64) {
        if !rs.valid {
            return;
        }
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(bw);
        }
        self.loss_in_round |= ack.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_update_ack_aggregation`: v3 windows are 1 round until the pipe is full, then 5,
    /// against bw = min(max_bw, bw_lo).
    fn update_ack_aggregation(&mut self, tp: &CcState, rs: &Rs, now: Nanos) {
        if rs.acked == 0 || !rs.valid {
            return;
        }
        let win_rtts = if self.full_bw_reached {
            BBR_EXTRA_ACKED_WIN_RTTS
        } else {
            1
        };
        let bw = self.bw();
        self.ack_aggr
            .update(self.round_start, win_rtts, bw, rs.acked, now, tp.snd_cwnd);
    }

    /// `bbr_ack_aggregation_cwnd`: v3 adds it from the start, against bw.
    fn ack_aggregation_cwnd(&self) -> u32 {
        self.ack_aggr.cwnd(self.bw())
    }

    /// `bbr_check_loss_too_high_in_startup`.
    fn check_loss_too_high_in_startup(&mut self, tp: &CcState, rs: &Rs, ack: &AckSample) {
        if self.full_bw_reached {
            return;
        }
        if ack.losses > 0 && self.loss_events_in_round < 0xF {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start
            && tp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= BBR_FULL_LOSS_CNT
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(tp);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_check_full_bw_reached` (v3: also the plateau detector of Up).
    fn check_full_bw_reached(&mut self, rs: &Rs, sample_bw: u64) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u128 * BBR_FULL_BW_THRESH as u128) >> BBR_SCALE) as u64;
        if sample_bw >= bw_thresh {
            self.reset_full_bw();
            self.full_bw = sample_bw;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_now = self.full_bw_cnt >= BBR_FULL_BW_CNT;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tp: &mut CcState, now: Nanos) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net(tp, tp.packets_in_flight)
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp, now);
        }
    }

    /// `bbr_is_inflight_too_high`: loss > 2 % of the flight or CE > 50 % of delivered.
    fn is_inflight_too_high(&self, rs: &Rs) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let loss_thresh = (rs.tx_in_flight * BBR_LOSS_THRESH) >> BBR_SCALE;
            if rs.lost > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible {
            let ecn_thresh = (rs.delivered * BBR_ECN_THRESH) >> BBR_SCALE;
            if rs.delivered_ce > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_with_headroom`: inflight_hi − 15 %.
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom =
            (((self.inflight_hi as u64 * BBR_INFLIGHT_HEADROOM) >> BBR_SCALE) as u32).max(1);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(BBR_CWND_MIN_TARGET)
    }

    /// `bbr_handle_inflight_too_high`: cap inflight_hi once per probe, end Up.
    fn handle_inflight_too_high(&mut self, tp: &CcState, rs: &Rs, now: Nanos) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.is_app_limited {
            let floor = (self.target_inflight(tp) as u64 * (BBR_UNIT - BBR_BETA)) >> BBR_SCALE;
            self.inflight_hi = rs.tx_in_flight.max(floor).min(UNSET as u64 - 1) as u32;
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.start_bw_probe_down(tp, now);
        }
    }

    fn raise_inflight_hi_slope(&mut self, tp: &CcState) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(30);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.snd_cwnd / growth_this_round).max(1);
    }

    fn probe_inflight_hi_upward(&mut self, tp: &CcState, rs: &Rs) {
        if !tp.is_cwnd_limited() || tp.snd_cwnd < self.inflight_hi {
            return; // not fully using inflight_hi
        }
        self.bw_probe_up_acks += rs.acked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// `bbr_adapt_upper_bounds`; true when it decided a state transition.
    fn adapt_upper_bounds(&mut self, tp: &CcState, rs: &Rs, now: Nanos) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited && self.bw_hi[1] != 0 {
                // Advance the 2-cycle max filter.
                self.bw_hi[0] = self.bw_hi[1];
                self.bw_hi[1] = 0;
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tp, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tp, rs, now);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi as u64 {
                self.inflight_hi = rs.tx_in_flight.min(UNSET as u64 - 1) as u32;
            }
            if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }

    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(BBR_BW_PROBE_RAND_ROUNDS) as u32;
        self.probe_wait = BBR_BW_PROBE_BASE + Nanos::from_us(self.rng.below(BBR_BW_PROBE_RAND_US));
    }

    fn start_bw_probe_refill(&mut self, tp: &CcState, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tp.delivered;
        self.phase = Phase::Refill;
    }

    fn start_bw_probe_up(&mut self, tp: &CcState, sample_bw: u64, now: Nanos) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_mstamp = now;
        self.reset_full_bw();
        self.full_bw = sample_bw;
        self.phase = Phase::Up;
        self.raise_inflight_hi_slope(tp);
    }

    fn start_bw_probe_down(&mut self, tp: &CcState, now: Nanos) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_mstamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
        self.phase = Phase::Down;
    }

    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.phase = Phase::Cruise;
    }

    fn is_reno_coexistence_probe_time(&self, tp: &CcState) -> bool {
        let rounds = BBR_BW_PROBE_MAX_ROUNDS.min(self.target_inflight(tp));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_check_time_to_probe_bw`.
    fn check_time_to_probe_bw(&mut self, tp: &CcState, now: Nanos) -> bool {
        if self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && tp.ca_state == CaState::Open
        {
            // ECN-only congestion: re-probe soon with a volume of inflight_hi/2.
            let v = (self.inflight_hi as u64 * BBR_ECN_REPROBE_GAIN) >> BBR_SCALE;
            let n = if v == 0 { 0 } else { 63 - v.leading_zeros() };
            self.start_bw_probe_refill(tp, n);
            return true;
        }
        if now.saturating_sub(self.cycle_mstamp) > self.probe_wait
            || self.is_reno_coexistence_probe_time(tp)
        {
            self.start_bw_probe_refill(tp, 0);
            return true;
        }
        false
    }

    fn check_time_to_cruise(&self, tp: &CcState, inflight: u32, bw: u64) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`: the ProbeBW state machine.
    fn update_cycle_phase(&mut self, tp: &CcState, rs: &Rs, ack: &AckSample, sample_bw: u64) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tp, rs, ack.now) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net(tp, ack.prior_in_flight);
        let bw = self.max_bw();
        match self.phase {
            Phase::Cruise => {
                self.check_time_to_probe_bw(tp, ack.now);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tp, sample_bw, ack.now);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if tp.is_cwnd_limited() && tp.snd_cwnd >= self.inflight_hi {
                    // inflight_hi is limiting bw growth: not a plateau.
                    self.reset_full_bw();
                    self.full_bw = sample_bw;
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tp, ack.now);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(tp, ack.now) {
                    return;
                }
                if self.check_time_to_cruise(tp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        BBR_CWND_MIN_TARGET.max(self.bdp(self.bw(), BBR_PROBE_RTT_CWND_GAIN))
    }

    fn exit_probe_rtt(&mut self, tp: &CcState, now: Nanos) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp, now);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_probe_rtt_done`: after 200 ms and a round at low inflight, schedule the
    /// next ProbeRTT, restore cwnd and leave (`bbr_exit_probe_rtt`).
    fn check_probe_rtt_done(&mut self, tp: &mut CcState, now: Nanos) {
        if !self.probe_rtt.time_is_up(now) {
            return;
        }
        self.probe_rtt_min.stamp = now; // schedule the next ProbeRTT
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(tp, now);
    }

    /// `bbr_update_min_rtt`: the 5 s ProbeRTT filter feeds the 10 s min_rtt filter; its expiry
    /// enters ProbeRTT (cwnd max(4, BDP/2)).
    fn update_min_rtt(&mut self, tp: &mut CcState, ack: &AckSample) {
        let now = ack.now;
        let probe_rtt_expired = self.probe_rtt_min.expired(now, BBR_PROBE_RTT_WIN);
        self.probe_rtt_min.update(ack.rtt, now, probe_rtt_expired);
        let min_rtt_expired = self.min_rtt.expired(now, BBR_MIN_RTT_WIN);
        if self.probe_rtt_min.us <= self.min_rtt.us || min_rtt_expired {
            self.min_rtt = self.probe_rtt_min;
        }
        if probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(tp);
            self.probe_rtt.enter();
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = tp.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            let cwnd_target = self.probe_rtt_cwnd();
            if self.probe_rtt.on_ack(
                tp,
                self.round_start,
                cwnd_target,
                &mut self.next_rtt_delivered,
                now,
            ) {
                self.check_probe_rtt_done(tp, now);
            }
        }
        if ack.rs_delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (BBR_STARTUP_PACING_GAIN, BBR_STARTUP_CWND_GAIN),
            Mode::Drain => (BBR_DRAIN_GAIN, BBR_STARTUP_CWND_GAIN),
            Mode::ProbeBw => {
                let mut c = BBR_CWND_GAIN;
                if self.phase == Phase::Up {
                    c += BBR_UNIT * BBR_BW_PROBE_CWND_GAIN / 4;
                }
                (BBR_PACING_GAIN[self.phase as usize], c)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    /// v3 `bbr_set_cwnd`, then `bbr_bound_cwnd_for_inflight_model`.
    fn set_cwnd(&mut self, tp: &mut CcState, acked: u32, bw: u64) {
        let mut cwnd = tp.snd_cwnd;
        if acked > 0 {
            let mut target = self.bdp(bw, self.cwnd_gain);
            target += self.ack_aggregation_cwnd();
            target = self.quantization_budget(tp, target);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            cwnd = cwnd.max(BBR_CWND_MIN_TARGET);
        }
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            tp.snd_cwnd = tp.snd_cwnd.min(self.probe_rtt_cwnd());
        }
        // Bound by the model.
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.phase != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.phase == Phase::Cruise)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(BBR_CWND_MIN_TARGET);
        tp.snd_cwnd = tp.snd_cwnd.min(cap);
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }
    fn requested_ecn(&self) -> EcnMode {
        if self.l4s {
            EcnMode::AccEcn
        } else {
            EcnMode::None
        }
    }
    fn data_ecn(&self, negotiated: EcnMode) -> Ecn {
        match negotiated {
            EcnMode::None => Ecn::NotEct,
            _ if self.l4s => Ecn::Ect1,
            _ => Ecn::Ect0,
        }
    }
    /// CE is a model input here (ecn_alpha, inflight bounds): the sender must not also
    /// enter CWR for it.
    fn handles_ecn(&self) -> bool {
        true
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    /// `bbr_init`.
    fn init(&mut self, tp: &mut CcState) {
        let (l4s, rng) = (self.l4s, self.rng.clone());
        *self = Bbr3::new(l4s, 0);
        self.rng = rng;
        self.init_cwnd = tp.snd_cwnd.min(0x7F);
        tp.snd_ssthresh = u32::MAX;
        self.next_rtt_delivered = tp.delivered;
        if tp.min_rtt > Nanos::ZERO {
            self.min_rtt.us = tp.min_rtt.as_ns() / 1000;
            self.probe_rtt_min.us = self.min_rtt.us;
        }
        self.pacing.init_from_rtt(tp, BBR_STARTUP_PACING_GAIN);
        self.pacing.publish(tp);
        // Start sampling ECN after the first full flight is ACKed.
        self.loss_round_delivered = tp.delivered + 1;
        self.delivered = tp.delivered;
        self.delivered_ce = tp.delivered_ce;
        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;
    }
    /// `bbr_ssthresh`: remember cwnd and the bounds for undo.
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        self.save_cwnd(tp);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tp.snd_ssthresh
    }
    /// `bbr_main`.
    fn cong_control(&mut self, tp: &mut CcState, ack: &AckSample) {
        let rs = self.rate_sample(ack);
        self.update_round_start(tp, ack);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(tp);
        }
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        let sample_bw = bw_sample(ack).unwrap_or(0);
        self.update_latest_delivery_signals(tp, &rs, sample_bw);
        // bbr_update_model
        self.update_congestion_signals(tp, &rs, ack, sample_bw);
        self.update_ack_aggregation(tp, &rs, ack.now);
        self.check_loss_too_high_in_startup(tp, &rs, ack);
        self.check_full_bw_reached(&rs, sample_bw);
        self.check_drain(tp, ack.now);
        self.update_cycle_phase(tp, &rs, ack, sample_bw);
        self.update_min_rtt(tp, ack);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs.acked, bw);
        self.advance_latest_delivery_signals(&rs, sample_bw);
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }
    /// `bbr_set_state`.
    fn set_state(&mut self, tp: &mut CcState, new: CaState) {
        if new == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                self.inflight_lo = tp.snd_cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        }
    }
    fn cwnd_event(&mut self, tp: &mut CcState, ev: CwndEvent) {
        if ev == CwndEvent::TxStart && tp.app_limited {
            self.idle_restart = true;
            self.ack_aggr.restart_epoch();
            if self.mode == Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            }
        }
    }
    /// `bbr_undo_cwnd`: spurious loss, restore the saved bounds.
    fn undo_cwnd(&mut self, _tp: &mut CcState, _prior_cwnd: u32) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.prior_cwnd
    }
    fn alpha(&self) -> f64 {
        if self.ecn_eligible {
            self.ecn_alpha()
        } else {
            f64::NAN
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::bbr::tests::Path;

    const RTT: Nanos = Nanos::from_ms(50);

    fn no_marks(_: u32) -> bool {
        false
    }

    /// `bbr_check_drain`: DRAIN ends once the packets in the network are at most the
    /// estimated BDP (`bbr_inflight(bw, BBR_UNIT)`), inclusive; one more keeps it draining.
    /// (Drain paces below 1, so no TSO allowance is added to the packets in flight.)
    #[test]
    fn drain_ends_when_inflight_is_at_most_the_bdp() {
        let drain_with = |extra: u32| {
            let mut cc = Bbr3::new(false, 1);
            let mut tp = CcState::new(1448);
            cc.mode = Mode::Drain;
            cc.update_gains();
            let bdp = cc.inflight(&tp, cc.max_bw(), BBR_UNIT);
            assert!(bdp > 0);
            tp.packets_in_flight = bdp + extra;
            cc.check_drain(&mut tp, Nanos::from_secs(1));
            cc.mode
        };
        assert_eq!(drain_with(0), Mode::ProbeBw);
        assert_eq!(drain_with(1), Mode::Drain);
    }

    /// `bbr_bound_cwnd_for_inflight_model`: PROBE_BW outside CRUISE is capped at inflight_hi,
    /// CRUISE and PROBE_RTT at inflight_hi less its headroom, STARTUP and DRAIN not by
    /// inflight_hi; every mode by inflight_lo. (No ACKed packets: only the bounds act.)
    #[test]
    fn cwnd_bounds_follow_the_mode() {
        let bounded = |mode: Mode, phase: Phase, lo: u32| {
            let mut cc = Bbr3::new(false, 1);
            let mut tp = CcState::new(1448);
            tp.snd_cwnd = 500;
            cc.mode = mode;
            cc.phase = phase;
            cc.inflight_hi = 100;
            cc.inflight_lo = lo;
            cc.set_cwnd(&mut tp, 0, 0);
            tp.snd_cwnd
        };
        let headroom = Bbr3 {
            inflight_hi: 100,
            ..Bbr3::new(false, 1)
        }
        .inflight_with_headroom();
        // Headroom (100·38) >> 8 = 14 packets (15 % as 38/256): 86.
        assert_eq!(headroom, 86);
        assert_eq!(bounded(Mode::Startup, Phase::Down, UNSET), 500);
        // The phase left from an earlier PROBE_BW cycle does not matter outside PROBE_BW.
        assert_eq!(bounded(Mode::Startup, Phase::Cruise, UNSET), 500);
        assert_eq!(bounded(Mode::Drain, Phase::Down, UNSET), 500);
        assert_eq!(bounded(Mode::Startup, Phase::Down, 50), 50);
        for phase in [Phase::Up, Phase::Down, Phase::Refill] {
            assert_eq!(bounded(Mode::ProbeBw, phase, UNSET), 100, "{phase:?}");
        }
        assert_eq!(bounded(Mode::ProbeBw, Phase::Cruise, UNSET), 86);
        assert!(bounded(Mode::ProbeRtt, Phase::Down, UNSET) <= 86);
    }

    /// `bbr_check_time_to_cruise`: not while inflight is above inflight_hi less its headroom
    /// (86 of 100); else once inflight is at most the BDP (`bbr_inflight(bw, BBR_UNIT)`).
    #[test]
    fn cruise_starts_at_most_at_the_bdp_and_below_the_headroom() {
        let mut cc = Bbr3::new(false, 1);
        let tp = CcState::new(1448);
        cc.inflight_hi = 100;
        let bdp = cc.inflight(&tp, 0, BBR_UNIT);
        assert!(bdp < 86, "{bdp}");
        assert!(cc.check_time_to_cruise(&tp, bdp, 0));
        assert!(!cc.check_time_to_cruise(&tp, bdp + 1, 0));
        // With the BDP above the headroom, the headroom decides: 86 cruises, 87 does not.
        let mut big = Bbr3::new(false, 1);
        big.inflight_hi = 100;
        big.init_cwnd = 1000; // no RTT sample: the BDP is the initial window
        assert!(big.inflight(&tp, 0, BBR_UNIT) > 87);
        assert!(big.check_time_to_cruise(&tp, 86, 0));
        assert!(!big.check_time_to_cruise(&tp, 87, 0));
    }

    /// `bbr_is_inflight_too_high`: lost > 2 % of tx_in_flight ((100·5) >> 8 = 1: 2 lost is
    /// too high, 1 is not; nothing without a flight); CE > 50 % of delivered ((10·128) >> 8 =
    /// 5: 6 CE is too high) and only when ECN-eligible.
    #[test]
    fn inflight_is_too_high_above_2_percent_loss_or_half_ce() {
        let rs = |lost, tx_in_flight, delivered, delivered_ce| Rs {
            lost,
            tx_in_flight,
            delivered,
            delivered_ce,
            ..Rs::default()
        };
        let mut cc = Bbr3::new(true, 1);
        assert!(!cc.is_inflight_too_high(&rs(1, 100, 0, 0)));
        assert!(cc.is_inflight_too_high(&rs(2, 100, 0, 0)));
        assert!(!cc.is_inflight_too_high(&rs(5, 0, 0, 0)));
        cc.ecn_eligible = true;
        assert!(!cc.is_inflight_too_high(&rs(0, 0, 10, 5)));
        assert!(cc.is_inflight_too_high(&rs(0, 0, 10, 6)));
        cc.ecn_eligible = false;
        assert!(!cc.is_inflight_too_high(&rs(0, 0, 10, 10)));
    }

    #[test]
    fn gains_per_mode_and_phase_are_linux_v3s() {
        // tcp_bbr.c (v3): startup pacing gain BBR_UNIT·277/100 + 1 = 710 (2.77), startup and
        // drain cwnd gain 2, drain pacing BBR_UNIT·1000/2885 = 88; PROBE_BW pacing 5/4, 0.91,
        // 1, 1 by phase and cwnd gain 2, plus BBR_UNIT·bw_probe_cwnd_gain/4 (0.25) in UP.
        assert_eq!((BBR_STARTUP_PACING_GAIN, BBR_DRAIN_GAIN), (710, 88));
        let mut cc = Bbr3::new(false, 1);
        cc.mode = Mode::Startup;
        cc.update_gains();
        assert_eq!((cc.pacing_gain, cc.cwnd_gain), (710, 512));
        cc.mode = Mode::Drain;
        cc.update_gains();
        assert_eq!((cc.pacing_gain, cc.cwnd_gain), (88, 512));
        cc.mode = Mode::ProbeBw;
        for (phase, pacing, cwnd) in [
            (Phase::Up, 320, 576),
            (Phase::Down, 232, 512),
            (Phase::Cruise, 256, 512),
            (Phase::Refill, 256, 512),
        ] {
            cc.phase = phase;
            cc.update_gains();
            assert_eq!((cc.pacing_gain, cc.cwnd_gain), (pacing, cwnd), "{phase:?}");
        }
        cc.mode = Mode::ProbeRtt;
        cc.update_gains();
        assert_eq!((cc.pacing_gain, cc.cwnd_gain), (256, 256));
    }

    #[test]
    fn startup_counts_loss_events_per_round_up_to_15() {
        // bbr_check_loss_too_high_in_startup: each ACK with losses counts one loss event
        // while the count is below 0xf; the count restarts at the next loss round.
        let mut cc = Bbr3::new(false, 1);
        let tp = CcState::new(1448);
        let rs = Rs::default();
        let lossy = AckSample {
            losses: 1,
            ..AckSample::default()
        };
        cc.loss_round_start = false;
        for _ in 0..20 {
            cc.check_loss_too_high_in_startup(&tp, &rs, &lossy);
        }
        assert_eq!(cc.loss_events_in_round, 15);
        cc.loss_round_start = true;
        cc.check_loss_too_high_in_startup(&tp, &rs, &AckSample::default());
        assert_eq!(cc.loss_events_in_round, 0);
    }

    #[test]
    fn tso_segs_goal_adds_64_kb_halved_per_512_us_of_min_rtt() {
        // v3 bbr_tso_segs_generic: bytes = pacing_rate >> sk_pacing_shift (10); plus
        // GSO_MAX_SIZE >> (min_rtt_us >> tso_rtt_shift (9)) while that shift is < 32; capped
        // at the GSO budget; segs = max(bytes / mss, 2).
        let mut cc = Bbr3::new(false, 1);
        let tp = CcState::new(1448);
        cc.pacing.rate = 10_000_000; // B/s: 10 000 000 >> 10 = 9765
        cc.min_rtt.us = 1000; // >> 9 = 1: + 32 768
        assert_eq!(cc.tso_segs_goal(&tp), 29); // 42 533 / 1448 = 29.4
        cc.min_rtt.us = 20_000; // >> 9 = 39: no allowance
        assert_eq!(cc.tso_segs_goal(&tp), 6); // 9765 / 1448 = 6.7
        cc.pacing.rate = 1_000_000; // 976 B: below one segment, the floor of 2
        assert_eq!(cc.tso_segs_goal(&tp), 2);
        // At 1 GB/s (976 562 B per ms) the GSO budget, 65 536 − 1 − MAX_TCP_HEADER (320) =
        // 65 215 B, caps the burst: 130 segments of 500 B.
        cc.pacing.rate = 1_000_000_000;
        assert_eq!(cc.tso_segs_goal(&CcState::new(500)), 130);
        // 65 215 B is one byte short of 64 segments of 1019 B (65 216): 63.
        assert_eq!(cc.tso_segs_goal(&CcState::new(1019)), 63);
    }

    #[test]
    fn an_ecn_only_cycle_reprobes_with_log2_of_half_inflight_hi_rounds() {
        // bbr_check_time_to_probe_bw: with ECN-eligible marks and no loss in the cycle (Open),
        // start the refill at once with bw_probe_up_rounds = ilog2(inflight_hi · ecn_reprobe_gain
        // (1/2)): inflight_hi 100 → ilog2(50) = 5.
        let mut cc = Bbr3::new(true, 1);
        let tp = CcState::new(1448);
        cc.ecn_eligible = true;
        cc.ecn_in_cycle = true;
        cc.loss_in_cycle = false;
        cc.inflight_hi = 100;
        assert!(cc.check_time_to_probe_bw(&tp, Nanos::ZERO));
        assert_eq!((cc.phase, cc.bw_probe_up_rounds), (Phase::Refill, 5));
        // A loss in the cycle leaves the ECN path: no probe before probe_wait.
        let mut cc = Bbr3::new(true, 1);
        cc.ecn_eligible = true;
        cc.ecn_in_cycle = true;
        cc.loss_in_cycle = true;
        cc.inflight_hi = 100;
        cc.probe_wait = Nanos::from_secs(2);
        assert!(!cc.check_time_to_probe_bw(&tp, Nanos::ZERO));
        // bbr_has_elapsed_in_phase is strict: a cycle started at 1 s with a 2 s wait probes
        // after 3 s, not at 3 s.
        let waiting = |now: Nanos| {
            let mut cc = Bbr3::new(true, 1);
            cc.cycle_mstamp = Nanos::from_secs(1);
            cc.probe_wait = Nanos::from_secs(2);
            cc.check_time_to_probe_bw(&tp, now)
        };
        assert!(!waiting(Nanos::from_secs(3)));
        assert!(waiting(Nanos::from_secs(3) + Nanos(1)));
        // bbr_is_reno_coexistence_probe_time: a probe also starts, before the wait, once the
        // rounds since the last probe reach min(63, target_inflight) (a Reno flow's growth).
        let coexist = |short: u32| {
            let mut cc = Bbr3::new(true, 1);
            let mut tp = CcState::new(1448);
            tp.snd_cwnd = 10;
            let rounds = cc.target_inflight(&tp).min(63);
            assert!(rounds > 1);
            cc.rounds_since_probe = rounds - short;
            cc.cycle_mstamp = Nanos::from_secs(1);
            cc.probe_wait = Nanos::from_secs(2);
            cc.check_time_to_probe_bw(&tp, Nanos::from_secs(1))
        };
        assert!(coexist(0));
        assert!(!coexist(1));
    }

    #[test]
    fn probing_up_raises_inflight_hi_one_packet_per_probe_up_cnt_acked_while_cwnd_limited() {
        // bbr_probe_inflight_hi_upward: only when cwnd-limited and cwnd >= inflight_hi;
        // bw_probe_up_acks += acked; inflight_hi += acks / cnt, the remainder kept.
        let mut cc = Bbr3::new(false, 1);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 120;
        tp.is_cwnd_limited = true;
        cc.inflight_hi = 100;
        cc.bw_probe_up_cnt = 10;
        cc.round_start = false;
        let rs = Rs {
            acked: 25,
            ..Rs::default()
        };
        cc.probe_inflight_hi_upward(&tp, &rs);
        assert_eq!((cc.inflight_hi, cc.bw_probe_up_acks), (102, 5));
        // Not cwnd-limited: inflight_hi is not the binding limit, nothing changes.
        tp.is_cwnd_limited = false;
        tp.snd_ssthresh = 50; // out of slow start
        cc.probe_inflight_hi_upward(&tp, &rs);
        assert_eq!((cc.inflight_hi, cc.bw_probe_up_acks), (102, 5));
        // cwnd-limited below inflight_hi (101 < 102): inflight_hi is not in use, unchanged;
        // at it (102) the ACKs count again: 5 + 25 = 30 → +3.
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = 101;
        cc.probe_inflight_hi_upward(&tp, &rs);
        assert_eq!((cc.inflight_hi, cc.bw_probe_up_acks), (102, 5));
        tp.snd_cwnd = 102;
        cc.probe_inflight_hi_upward(&tp, &rs);
        assert_eq!((cc.inflight_hi, cc.bw_probe_up_acks), (105, 0));
    }

    #[test]
    fn inflight_with_headroom_leaves_15_percent_of_inflight_hi_but_at_least_one_packet() {
        // bbr_inflight_with_headroom: headroom = max(1, inflight_hi·(15 % of BBR_UNIT =
        // 38/256)); return max(inflight_hi − headroom, bbr_cwnd_min_target = 4).
        let mut cc = Bbr3::new(false, 1);
        assert_eq!(cc.inflight_with_headroom(), UNSET);
        cc.inflight_hi = 1000; // 1000·38 >> 8 = 148
        assert_eq!(cc.inflight_with_headroom(), 852);
        cc.inflight_hi = 10; // 10·38 >> 8 = 1
        assert_eq!(cc.inflight_with_headroom(), 9);
        cc.inflight_hi = 4; // 4 − max(0, 1) = 3, raised to the floor of 4
        assert_eq!(cc.inflight_with_headroom(), 4);
    }

    #[test]
    fn probe_wait_is_two_to_three_seconds_and_rounds_zero_or_one() {
        // bbr_pick_probe_wait: rounds_since_bw_probe = random 0..BBR_BW_PROBE_RAND_ROUNDS (2),
        // probe_wait_us = BBR_BW_PROBE_BASE_US (2 s) + random 0..BBR_BW_PROBE_RAND_US (1 s).
        let mut cc = Bbr3::new(false, 7);
        let (mut waits, mut rounds) = (vec![], [0u32; 2]);
        for _ in 0..400 {
            cc.pick_probe_wait();
            assert!(
                cc.probe_wait >= Nanos::from_secs(2) && cc.probe_wait < Nanos::from_secs(3),
                "{:?}",
                cc.probe_wait
            );
            rounds[cc.rounds_since_probe as usize] += 1;
            waits.push(cc.probe_wait);
        }
        // Both round counts and a spread of waits occur (uniform draws: each half ~200 times).
        assert!(rounds[0] > 120 && rounds[1] > 120, "{rounds:?}");
        let below = waits.iter().filter(|w| **w < Nanos::from_ms(2500)).count();
        assert!((120..=280).contains(&below), "{below}");
    }

    /// Run a path of `b_pps` (BDP = b_pps·50 ms) until ProbeBW Up with probe samples armed.
    fn to_probe_up(l4s: bool, b_pps: f64) -> (Bbr3, Path, u32) {
        let bdp = (b_pps * RTT.as_secs_f64()).round() as u32;
        let mut cc = Bbr3::new(l4s, 11);
        let ecn = if l4s { EcnMode::AccEcn } else { EcnMode::None };
        let mut p = Path::with_ecn(&mut cc, RTT, ecn);
        for _ in 0..300 {
            if cc.mode() == Mode::ProbeBw && cc.phase() == Phase::Up {
                break;
            }
            let rate = (p.tp.snd_cwnd as f64 / RTT.as_secs_f64()).min(b_pps);
            let n = p.tp.snd_cwnd.min(bdp);
            p.round_with(&mut cc, RTT, rate, n, Some(bdp), no_marks, no_marks);
        }
        assert_eq!((cc.mode(), cc.phase()), (Mode::ProbeBw, Phase::Up));
        assert!(cc.bw_probe_samples);
        // The bandwidth filter holds the bottleneck rate (BW_UNIT fixed point: < 1 pkt/s off).
        assert!((cc.max_bw_pps() - b_pps).abs() < 1.0, "{}", cc.max_bw_pps());
        // Startup ended on a bandwidth plateau, so inflight_hi has no value yet.
        assert_eq!(cc.inflight_hi(), None);
        (cc, p, bdp)
    }

    #[test]
    fn ecn_negotiation_follows_l4s_option() {
        let l4s = Bbr3::new(true, 0);
        assert_eq!(l4s.requested_ecn(), EcnMode::AccEcn);
        assert_eq!(l4s.data_ecn(EcnMode::AccEcn), Ecn::Ect1);
        let plain = Bbr3::new(false, 0);
        assert_eq!(plain.requested_ecn(), EcnMode::None);
        assert_eq!(plain.data_ecn(EcnMode::None), Ecn::NotEct);
    }

    #[test]
    fn ecn_alpha_is_ewma_of_ce_ratio() {
        let mut cc = Bbr3::new(true, 1);
        let mut p = Path::with_ecn(&mut cc, RTT, EcnMode::AccEcn);
        // Every 4th packet CE. α is updated at each round start over the packets delivered
        // since the previous one: the first update sees 1 packet (CE) → ratio 256; then
        // rounds of 40 packets with 10 CE → ratio (10 << 8)/40 = 64. Integer recurrence
        // α ← (240·α >> 8) + (16·ratio >> 8) from α = 256: 256, 244, 232, 221.
        // Exact while Startup keeps rounds aligned with our 40-packet rounds. Later, phase
        // changes restart BBR's round (next_rtt_delivered = delivered), which adds updates
        // over short windows whose CE share is not exactly 1/4 (e.g. 1 CE in 7 packets):
        // α then decays at least as fast as one update per path round and stays near F
        // (a short window moves α by at most g·|F_w − F| ≈ 0.016–0.05).
        let mut expect: u64 = 256;
        let g: f64 = 1.0 / 16.0;
        let mut prev: f64 = 1.0;
        for r in 0..80 {
            p.round_with(&mut cc, RTT, 1000.0, 40, Some(40), |i| i % 4 == 0, no_marks);
            let ratio = if r == 0 { 256 } else { 64 };
            expect = ((240 * expect) >> 8) + ((16 * ratio) >> 8);
            let a = cc.ecn_alpha();
            if r == 0 {
                // A CE delivered in this (Startup) cycle is remembered for the cycle.
                assert!(cc.ecn_in_cycle);
            }
            if r <= 3 {
                assert_eq!(cc.ecn_alpha, expect, "round {r}");
            }
            if r >= 1 {
                let closed = (1.0 - g).powi(r) + (1.0 - (1.0 - g).powi(r)) * 0.25;
                assert!(
                    a <= closed + 0.01,
                    "round {r}: {a} decays slower than {closed}"
                );
                assert!(a >= 0.25 - 0.05, "round {r}: {a}");
                assert!(a <= prev.max(0.25) + 0.05, "round {r}: not decaying");
            }
            prev = a;
        }
        assert!(
            (cc.ecn_alpha() - 0.25).abs() < 0.03,
            "alpha {}",
            cc.ecn_alpha()
        );
    }

    #[test]
    fn ecn_above_threshold_lowers_inflight_hi_while_probing() {
        let (cc0, p0, bdp) = to_probe_up(true, 1000.0);
        assert_eq!(bdp, 50);
        // 40 % CE (i % 5 < 2) stays under bbr_ecn_thresh = 50 % of a flight: no cut.
        let (mut cc, mut p) = (cc0.clone(), p0.clone());
        p.round_with(&mut cc, RTT, 1000.0, 50, Some(50), |i| i % 5 < 2, no_marks);
        assert_eq!(cc.inflight_hi(), None);
        // All CE: at the 26th ACK more than half of the sample's flight (rs.delivered = 50)
        // is CE → inflight_hi = max(tx_in_flight = 50, (1 − 0.3)·target 52 = 36) = 50, and
        // the probe stops (Down, or straight to an ECN re-probe Refill).
        let (mut cc, mut p) = (cc0, p0);
        p.round_with(&mut cc, RTT, 1000.0, 50, Some(50), |_| true, no_marks);
        assert_eq!(cc.inflight_hi(), Some(50));
        assert_ne!(cc.phase(), Phase::Up);
        assert!(
            p.tp.snd_cwnd <= 50,
            "cwnd {} capped by inflight_hi",
            p.tp.snd_cwnd
        );
    }

    #[test]
    fn loss_above_two_percent_caps_inflight_hi() {
        // BDP 200 so that 2 % is more than one packet: loss_thresh = 5/256 (1.95 %);
        // "too high" when lost > tx_in_flight·5 >> 8.
        let (cc0, p0, bdp) = to_probe_up(false, 4000.0);
        assert_eq!(bdp, 200);
        // 3 losses: tx_in_flight = 200 + 3 = 203, thresh = 1015 >> 8 = 3 → 3 > 3 is false.
        let (mut cc, mut p) = (cc0.clone(), p0.clone());
        p.round_with(&mut cc, RTT, 4000.0, 200, Some(200), no_marks, |i| {
            [10, 70, 130].contains(&i)
        });
        assert_eq!(cc.inflight_hi(), None);
        // 5 losses: at the 4th, tx = 204, thresh = 1020 >> 8 = 3 → 4 > 3: inflight_hi =
        // max(204, 0.7·target) = 204 and Up ends.
        let (mut cc, mut p) = (cc0, p0);
        p.round_with(&mut cc, RTT, 4000.0, 200, Some(200), no_marks, |i| {
            i % 40 == 10
        });
        assert_eq!(cc.inflight_hi(), Some(204));
        assert_ne!(cc.phase(), Phase::Up);
    }

    #[test]
    fn lower_bounds_cut_by_ecn_and_loss_when_not_probing() {
        let mut cc = Bbr3::new(true, 0);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 60;
        cc.mode = Mode::ProbeBw;
        cc.phase = Phase::Down;
        cc.ecn_alpha = 128; // α = 0.5
        cc.ecn_in_round = true;
        cc.adapt_lower_bounds(&tp);
        // ecn_cut = 256 − (128·85 >> 8 = 42) = 214: 60·214 >> 8 = 50 ≈ 60·(1 − 0.5/3).
        assert_eq!(cc.inflight_lo(), Some(50));
        // Loss: inflight_lo = max(inflight_latest, 0.7·inflight_lo) = max(30, 50·180 >> 8 = 35).
        cc.ecn_in_round = false;
        cc.loss_in_round = true;
        cc.inflight_latest = 30;
        cc.bw_hi = [1000, 0];
        cc.bw_latest = 500;
        cc.adapt_lower_bounds(&tp);
        assert_eq!(cc.inflight_lo(), Some(35));
        // bw_lo = max(bw_latest 500, 1000·180 >> 8 = 703) = 703.
        assert_eq!(cc.bw_lo, 703);
        // While probing (Up) the lower bounds are left alone.
        cc.phase = Phase::Up;
        cc.adapt_lower_bounds(&tp);
        assert_eq!(cc.inflight_lo(), Some(35));
    }

    #[test]
    fn startup_exits_on_persistent_high_ce() {
        let mut cc = Bbr3::new(true, 2);
        let mut p = Path::with_ecn(&mut cc, RTT, EcnMode::AccEcn);
        // Rates keep doubling (no plateau), but every packet is CE: two round-start updates
        // with a CE ratio ≥ 50 % end Startup (bbr_full_ecn_cnt = 2), setting inflight_hi =
        // max(BDP, inflight_latest).
        let mut rounds = 0;
        while cc.mode() == Mode::Startup && rounds < 10 {
            let n = p.tp.snd_cwnd;
            let rate = n as f64 / RTT.as_secs_f64();
            p.round_with(&mut cc, RTT, rate, n, None, |_| true, no_marks);
            rounds += 1;
        }
        assert!(cc.full_bw_reached());
        assert!(rounds <= 3, "rounds {rounds}");
        assert!(cc.inflight_hi().is_some());
        // Without ECN (l4s off) the same path keeps Startup going.
        let mut cc = Bbr3::new(false, 2);
        let mut p = Path::with_ecn(&mut cc, RTT, EcnMode::None);
        for _ in 0..4 {
            let n = p.tp.snd_cwnd;
            p.round_with(&mut cc, RTT, n as f64 / 0.05, n, None, |_| true, no_marks);
        }
        assert_eq!(cc.mode(), Mode::Startup);
    }

    proptest::proptest! {
        /// Random rates, CE and losses: cwnd ≥ 4, pacing > 0, α ∈ [0, 1].
        #[test]
        fn invariants_under_random_feedback(
            rounds in proptest::collection::vec((100.0f64..5000.0, 0u32..4, 0u32..3), 1..40),
        ) {
            let mut cc = Bbr3::new(true, 3);
            let mut p = Path::with_ecn(&mut cc, RTT, EcnMode::AccEcn);
            for (rate, ce_every, loss_at) in rounds {
                let n = p.tp.snd_cwnd.clamp(4, 300);
                p.round_with(
                    &mut cc,
                    RTT,
                    rate,
                    n,
                    None,
                    |i| ce_every > 0 && i % (ce_every + 1) == 0,
                    |i| loss_at > 0 && i == loss_at * 7,
                );
                proptest::prop_assert!(p.tp.snd_cwnd >= BBR_CWND_MIN_TARGET);
                proptest::prop_assert!(p.tp.pacing_rate_bps.unwrap_or(0) > 0);
                proptest::prop_assert!((0.0..=1.0).contains(&cc.ecn_alpha()));
            }
        }
    }
}
