//! What BBR v1 and BBR v3 share unchanged: fixed-point units, BDP and pacing arithmetic, the
//! windowed min-RTT filter, the ProbeRTT clock, the ACK-aggregation estimate and `bbr_save_cwnd`.
//! Follows Linux net/ipv4/tcp_bbr.c (mainline v1 and google/bbr v3 alike): `bbr_bdp`,
//! `bbr_rate_bytes_per_sec`, `bbr_init_pacing_rate_from_rtt`, `bbr_set_pacing_rate`,
//! `bbr_update_min_rtt`, `bbr_check_probe_rtt_done`, `bbr_update_ack_aggregation`,
//! `bbr_ack_aggregation_cwnd`, `bbr_save_cwnd`.
//!
//! What differs between the versions stays in `bbr.rs` and `bbr3.rs` and is passed in here
//! explicitly: the Startup gain (v1 2.885, v3 2.77), the ProbeRTT cwnd (v1 4 packets, v3
//! max(4, BDP/2)), which filter triggers ProbeRTT (v1 the 10 s min_rtt, v3 a separate 5 s one),
//! the aggregation window before the pipe is full (v1 5 rounds, v3 1 round) and the bandwidth
//! the allowance is measured against (v1 max_bw, v3 min(max_bw, bw_lo)).

use super::{AckSample, CaState, CcState};
use crate::time::Nanos;

/// Rate unit: packets per µs scaled by 2^24 (`BW_SCALE`).
pub const BW_SCALE: u32 = 24;
/// 1 packet/µs in rate units.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain unit: 2^8 = 1.0 (`BBR_SCALE`).
pub const BBR_SCALE: u32 = 8;
/// A gain of 1.0 in gain units.
pub const BBR_UNIT: u64 = 1 << BBR_SCALE;
/// `bbr_cwnd_min_target`: cwnd never goes below 4 packets (and is 4 in v1 ProbeRTT).
pub const BBR_CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh`: the pipe is full once bw grew less than 25 % ...
pub const BBR_FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
/// `bbr_full_bw_cnt`: ... in 3 consecutive rounds.
pub const BBR_FULL_BW_CNT: u32 = 3;
/// `bbr_min_rtt_win_sec`: window of the min_rtt filter.
pub const BBR_MIN_RTT_WIN: Nanos = Nanos::from_secs(10);
/// `bbr_probe_rtt_mode_ms`: ProbeRTT holds its low cwnd at least this long.
pub const BBR_PROBE_RTT_MODE: Nanos = Nanos::from_ms(200);
/// Pacing is set 1 % below the estimated rate (`bbr_pacing_margin_percent`).
pub const BBR_PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_extra_acked_win_rtts`: rounds per ACK-aggregation window once the pipe is full.
pub const BBR_EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_extra_acked_max_us`: the aggregation allowance is at most 100 ms of bandwidth.
const BBR_EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `bbr_ack_epoch_acked_reset_thresh`: restart an aggregation epoch after 2^20 packets.
const BBR_ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// GSO_MAX_SIZE − 1 − MAX_TCP_HEADER: the most bytes one TSO burst may carry.
pub(crate) const GSO_BUDGET_BYTES: u64 = 65536 - 1 - 320;

/// Linux `state >= TCP_CA_Recovery` (Recovery or Loss).
pub(crate) fn is_recovery(s: CaState) -> bool {
    matches!(s, CaState::Recovery | CaState::Loss)
}

/// Gain-scaled BDP in packets, rounded up (`bbr_bdp` once min_rtt is known).
pub(crate) fn bdp_pkts(bw: u64, min_rtt_us: u64, gain: u64) -> u32 {
    let w = bw as u128 * min_rtt_us as u128;
    (((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)).min(u32::MAX as u128) as u32
}

/// `bbr_rate_bytes_per_sec()`: bw (scaled) × mss × gain × (100 − margin) %.
pub(crate) fn rate_bytes_per_sec(bw: u64, mss: u32, gain: u64, margin_pct: u64) -> u64 {
    let mut rate = bw as u128 * mss as u128;
    rate = (rate * gain as u128) >> BBR_SCALE;
    rate *= (1_000_000 / 100 * (100 - margin_pct)) as u128;
    rate >>= BW_SCALE;
    (rate.min(u64::MAX as u128) as u64).max(1)
}

/// Delivery-rate sample in BBR units (`rs.delivered·BW_UNIT/interval_us`), None if invalid.
pub(crate) fn bw_sample(ack: &AckSample) -> Option<u64> {
    let interval_us = ack.rs_interval.as_ns() / 1000;
    if interval_us == 0 {
        return None;
    }
    Some((ack.rs_delivered as u128 * BW_UNIT as u128 / interval_us as u128) as u64)
}

/// `bbr_save_cwnd`: the cwnd to restore after recovery or ProbeRTT — the current one, or the
/// larger of it and the saved one when recovery or ProbeRTT has already cut it.
pub(crate) fn saved_cwnd(
    prior_cwnd: u32,
    prev_ca_state: CaState,
    in_probe_rtt: bool,
    snd_cwnd: u32,
) -> u32 {
    if !is_recovery(prev_ca_state) && !in_probe_rtt {
        snd_cwnd
    } else {
        prior_cwnd.max(snd_cwnd)
    }
}

/// A windowed minimum RTT (`min_rtt_us` + `min_rtt_stamp`; v3's `probe_rtt_min_us` +
/// `probe_rtt_min_stamp` too): the lowest sample, replaced by any sample once it is older than
/// the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RttMin {
    /// The minimum in µs (`u32::MAX` = no sample yet, as Linux initialises it).
    pub us: u64,
    /// When the minimum was measured.
    pub stamp: Nanos,
}

impl Default for RttMin {
    fn default() -> Self {
        RttMin {
            us: u32::MAX as u64,
            stamp: Nanos::ZERO,
        }
    }
}

impl RttMin {
    /// Whether a sample has been taken.
    pub fn is_known(&self) -> bool {
        self.us != u32::MAX as u64
    }

    /// Has the minimum gone unrefreshed for longer than `win` at `now`?
    pub fn expired(&self, now: Nanos, win: Nanos) -> bool {
        now > self.stamp + win
    }

    /// Take `rtt` if it is lower than the minimum or the minimum had `expired`.
    pub fn update(&mut self, rtt: Option<Nanos>, now: Nanos, expired: bool) {
        if let Some(rtt) = rtt {
            let rtt_us = rtt.as_ns() / 1000;
            if rtt_us < self.us || expired {
                self.us = rtt_us;
                self.stamp = now;
            }
        }
    }

    /// `bbr_bdp`: gain·bw·min_rtt in packets, or `init_cwnd` before any RTT sample.
    pub fn bdp(&self, bw: u64, gain: u64, init_cwnd: u32) -> u32 {
        if !self.is_known() {
            return init_cwnd;
        }
        bdp_pkts(bw, self.us, gain)
    }
}

/// The ProbeRTT clock: once inflight has fallen to the ProbeRTT cwnd, hold it for 200 ms and
/// one round (`probe_rtt_done_stamp`, `probe_rtt_round_done`), and treat samples of packets
/// sent meanwhile as app-limited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProbeRtt {
    /// When the 200 ms are up (`None` = inflight has not fallen yet).
    done_stamp: Option<Nanos>,
    /// A round has ended since inflight fell.
    round_done: bool,
    /// Linux marks `tp->app_limited = delivered + in_flight` in ProbeRTT: samples of packets
    /// sent before that many deliveries count as app-limited. Kept here (CcState only has a
    /// bool owned by the sender).
    app_limited_until: u64,
}

impl ProbeRtt {
    /// Entering ProbeRTT: the clock starts only once inflight has fallen.
    pub fn enter(&mut self) {
        self.done_stamp = None;
    }

    /// Is this rate sample app-limited: the sender said so, or it was sent during ProbeRTT?
    pub fn sample_app_limited(&self, is_app_limited: bool, prior_delivered: u64) -> bool {
        is_app_limited || prior_delivered < self.app_limited_until
    }

    /// One ACK while in ProbeRTT (the in-mode part of `bbr_update_min_rtt`): mark what is in
    /// flight app-limited; start the clock and a new round (`next_rtt_delivered`) once inflight
    /// ≤ `cwnd_target`; afterwards note the end of a round. True when a round has ended since,
    /// i.e. when `bbr_check_probe_rtt_done` runs.
    pub fn on_ack(
        &mut self,
        tp: &CcState,
        round_start: bool,
        cwnd_target: u32,
        next_rtt_delivered: &mut u64,
        now: Nanos,
    ) -> bool {
        // Ignore low-rate samples during this mode.
        self.app_limited_until = (tp.delivered + tp.packets_in_flight as u64).max(1);
        if self.done_stamp.is_none() && tp.packets_in_flight <= cwnd_target {
            self.done_stamp = Some(now + BBR_PROBE_RTT_MODE);
            self.round_done = false;
            *next_rtt_delivered = tp.delivered;
            return false;
        }
        if self.done_stamp.is_none() {
            return false;
        }
        if round_start {
            self.round_done = true;
        }
        self.round_done
    }

    /// The time test of `bbr_check_probe_rtt_done`: have the 200 ms passed at `now`?
    pub fn time_is_up(&self, now: Nanos) -> bool {
        matches!(self.done_stamp, Some(done) if now > done)
    }
}

/// The ACK-aggregation estimate (`extra_acked`): how many packets beyond `bw`·elapsed the
/// receiver acknowledged in an epoch, max over two windows of rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AckAggregation {
    /// Start of the current epoch (`ack_epoch_mstamp`).
    epoch_mstamp: Nanos,
    /// Packets ACKed in the current epoch (`ack_epoch_acked`).
    epoch_acked: u32,
    /// Largest excess in the two windows (`extra_acked[2]`).
    extra_acked: [u32; 2],
    /// Rounds in the current window (`extra_acked_win_rtts`).
    win_rtts: u32,
    /// The current window (`extra_acked_win_idx`).
    win_idx: usize,
}

impl AckAggregation {
    /// `bbr_update_ack_aggregation` for `acked` packets at `now`: windows of `win_rtts` rounds,
    /// the expected delivery at `bw`, the excess capped by `snd_cwnd`.
    pub fn update(
        &mut self,
        round_start: bool,
        win_rtts: u32,
        bw: u64,
        acked: u32,
        now: Nanos,
        snd_cwnd: u32,
    ) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1F);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let epoch_us = now.saturating_sub(self.epoch_mstamp).as_ns() / 1000;
        let mut expected = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        // Reset the epoch when ACKs came slower than expected or the count would overflow.
        if self.epoch_acked as u64 <= expected
            || self.epoch_acked + acked >= BBR_ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.epoch_acked = 0;
            self.epoch_mstamp = now;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(0xFFFFF);
        let extra = (self.epoch_acked as u64 - expected).min(snd_cwnd as u64) as u32;
        let idx = self.win_idx;
        self.extra_acked[idx] = self.extra_acked[idx].max(extra);
    }

    /// `bbr_ack_aggregation_cwnd` (gain 1.0): the larger window's excess, at most 100 ms of `bw`.
    pub fn cwnd(&self, bw: u64) -> u32 {
        let max_aggr = (bw as u128 * BBR_EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128) as u32;
        self.extra_acked[0].max(self.extra_acked[1]).min(max_aggr)
    }

    /// Restart the epoch count when sending restarts after idle (`CA_EVENT_TX_START`); the next
    /// ACK restarts the epoch clock (no clock here).
    pub fn restart_epoch(&mut self) {
        self.epoch_acked = 0;
    }
}

/// The pacing rate in bytes/s (`sk_pacing_rate`) and whether it was set from a real RTT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pacing {
    /// Bytes per second.
    pub rate: u64,
    /// Set from a measured srtt (`has_seen_rtt`).
    has_seen_rtt: bool,
}

impl Pacing {
    /// `bbr_init_pacing_rate_from_rtt`: `startup_gain`·cwnd/srtt (srtt 1 ms before any sample).
    pub fn init_from_rtt(&mut self, tp: &CcState, startup_gain: u64) {
        let rtt_us = if tp.srtt > Nanos::ZERO {
            self.has_seen_rtt = true;
            (tp.srtt.as_ns() / 1000).max(1)
        } else {
            1000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us;
        self.rate = rate_bytes_per_sec(bw, tp.mss, startup_gain, BBR_PACING_MARGIN_PERCENT);
    }

    /// `bbr_set_pacing_rate`: gain·bw less the margin, re-initialised from the first srtt,
    /// never lowered before the pipe is full; published to the sender in bits/s.
    pub fn set(
        &mut self,
        tp: &mut CcState,
        bw: u64,
        gain: u64,
        startup_gain: u64,
        full_bw_reached: bool,
    ) {
        if !self.has_seen_rtt && tp.srtt > Nanos::ZERO {
            self.init_from_rtt(tp, startup_gain);
        }
        let rate = rate_bytes_per_sec(bw, tp.mss, gain, BBR_PACING_MARGIN_PERCENT);
        if full_bw_reached || rate > self.rate {
            self.rate = rate;
        }
        self.publish(tp);
    }

    /// Hand the rate to the sender (`tp.pacing_rate_bps`, bits/s).
    pub fn publish(&self, tp: &mut CcState) {
        tp.pacing_rate_bps = Some(self.rate.saturating_mul(8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Nanos {
        Nanos::from_ms(n)
    }

    #[test]
    fn rtt_min_keeps_the_lowest_until_the_window_expires() {
        let mut m = RttMin::default();
        assert!(!m.is_known());
        // Before any sample the BDP is the initial window.
        assert_eq!(m.bdp(BW_UNIT, BBR_UNIT, 10), 10);
        let t0 = Nanos::from_secs(1);
        m.update(Some(Nanos::from_ms(40)), t0, m.expired(t0, BBR_MIN_RTT_WIN));
        assert_eq!((m.us, m.stamp), (40_000, t0));
        // A higher sample inside the window is ignored, a lower one taken.
        let t1 = t0 + Nanos::from_secs(5);
        m.update(Some(Nanos::from_ms(50)), t1, m.expired(t1, BBR_MIN_RTT_WIN));
        assert_eq!(m.us, 40_000);
        m.update(Some(Nanos::from_ms(30)), t1, m.expired(t1, BBR_MIN_RTT_WIN));
        assert_eq!((m.us, m.stamp), (30_000, t1));
        // Expiry is strict: exactly one window later the old minimum still stands.
        let edge = t1 + BBR_MIN_RTT_WIN;
        assert!(!m.expired(edge, BBR_MIN_RTT_WIN));
        let t2 = edge + Nanos(1);
        assert!(m.expired(t2, BBR_MIN_RTT_WIN));
        m.update(Some(Nanos::from_ms(60)), t2, true);
        assert_eq!((m.us, m.stamp), (60_000, t2));
        // BDP at 1 packet/µs over 60 ms: 60 000 packets, ×2 with gain 2.
        assert_eq!(m.bdp(BW_UNIT, BBR_UNIT, 10), 60_000);
        assert_eq!(m.bdp(BW_UNIT, 2 * BBR_UNIT, 10), 120_000);
    }

    #[test]
    fn probe_rtt_clock_starts_at_low_inflight_and_needs_200ms_and_a_round() {
        let mut p = ProbeRtt::default();
        p.enter();
        let mut tp = CcState::new(1448);
        tp.delivered = 1000;
        tp.packets_in_flight = 10;
        let mut next_rtt_delivered = 0;
        let t0 = Nanos::from_secs(10);
        // Inflight above the target: the clock does not start.
        assert!(!p.on_ack(&tp, true, 4, &mut next_rtt_delivered, t0));
        assert!(!p.time_is_up(t0 + Nanos::from_secs(1)));
        // Samples of what is in flight now (delivered + in flight = 1010) are app-limited.
        assert!(p.sample_app_limited(false, 1009));
        assert!(!p.sample_app_limited(false, 1010));
        // Inflight at the target: the clock starts and a new round begins at `delivered`.
        tp.packets_in_flight = 4;
        assert!(!p.on_ack(&tp, false, 4, &mut next_rtt_delivered, t0));
        assert_eq!(next_rtt_delivered, 1000);
        // No round ended yet: not done, whatever the time.
        assert!(!p.on_ack(&tp, false, 4, &mut next_rtt_delivered, t0 + ms(1)));
        // A round ends: check_probe_rtt_done runs from now on, but only after 200 ms passes.
        assert!(p.on_ack(&tp, true, 4, &mut next_rtt_delivered, t0 + ms(2)));
        assert!(p.on_ack(&tp, false, 4, &mut next_rtt_delivered, t0 + ms(3)));
        assert!(!p.time_is_up(t0 + BBR_PROBE_RTT_MODE));
        assert!(p.time_is_up(t0 + BBR_PROBE_RTT_MODE + Nanos(1)));
        // The next ProbeRTT (10 s later) restarts the clock: not up until inflight falls again
        // and 200 ms pass from then.
        let t1 = t0 + Nanos::from_secs(10);
        p.enter();
        assert!(!p.time_is_up(t1));
        assert!(!p.on_ack(&tp, true, 4, &mut next_rtt_delivered, t1));
        assert!(!p.time_is_up(t1 + BBR_PROBE_RTT_MODE));
        assert!(p.time_is_up(t1 + BBR_PROBE_RTT_MODE + Nanos(1)));
    }

    #[test]
    fn ack_aggregation_counts_acks_beyond_the_expected_delivery() {
        // bw = 1 packet per 1024 µs (exact in BW_UNIT): over 5120 µs, 5 packets are expected.
        let bw = BW_UNIT / 1024;
        let us = Nanos::from_us;
        let mut a = AckAggregation::default();
        let t0 = Nanos::from_secs(1);
        // First ACK: the epoch starts now, everything acked is extra.
        a.update(false, 5, bw, 10, t0, 100);
        assert_eq!(a.cwnd(bw), 10);
        // 5120 µs later 10 more: 20 acked in the epoch, 5 expected -> 15 extra.
        a.update(false, 5, bw, 10, t0 + us(5120), 100);
        assert_eq!(a.cwnd(bw), 15);
        // The excess is capped by cwnd: 30 acked, 5 expected, but cwnd 12.
        let mut capped = AckAggregation::default();
        capped.update(false, 5, bw, 30, t0, 12);
        assert_eq!(capped.cwnd(bw), 12);
        // The allowance is at most 100 ms of bandwidth: floor(100 000 / 1024) = 97 packets.
        let mut big = AckAggregation::default();
        big.update(false, 5, bw, 500, t0, 1000);
        assert_eq!(big.cwnd(bw), 97);
        // ACKs slower than expected restart the epoch: at 40 960 µs, 40 expected > 20 acked.
        a.update(false, 5, bw, 2, t0 + us(40_960), 100);
        assert_eq!(a.epoch_acked, 2);
        assert_eq!(a.cwnd(bw), 15, "the window keeps its maximum");
        // With 1-round windows each round start moves to the other window and clears it;
        // the allowance is the larger of the two windows.
        let mut w = AckAggregation::default();
        w.update(false, 1, bw, 8, t0, 100);
        w.update(true, 1, bw, 1, t0 + us(102_400), 100);
        assert_eq!(w.extra_acked, [8, 1]);
        assert_eq!(w.cwnd(bw), 8);
        w.update(true, 1, bw, 1, t0 + us(204_800), 100);
        assert_eq!(w.extra_acked, [1, 1], "the 8 aged out two rounds later");
    }

    #[test]
    fn saved_cwnd_keeps_the_larger_once_cut() {
        assert_eq!(saved_cwnd(50, CaState::Open, false, 30), 30);
        assert_eq!(saved_cwnd(50, CaState::Recovery, false, 30), 50);
        assert_eq!(saved_cwnd(50, CaState::Loss, false, 60), 60);
        assert_eq!(saved_cwnd(50, CaState::Open, true, 4), 50);
    }

    #[test]
    fn pacing_rate_is_never_lowered_before_the_pipe_is_full() {
        let mut tp = CcState::new(1000);
        // 10 packets per 10.24 ms = 1 packet per 1024 µs, exact in BW_UNIT.
        tp.srtt = Nanos::from_us(10_240);
        let mut p = Pacing::default();
        // 1000 B / 1024 µs · 0.99 = 966 796.875 B/s, floored.
        p.init_from_rtt(&tp, BBR_UNIT);
        assert_eq!(p.rate, 966_796);
        let half = BW_UNIT / 2048;
        p.set(&mut tp, half, BBR_UNIT, BBR_UNIT, false);
        assert_eq!(p.rate, 966_796, "kept before full bw");
        p.set(&mut tp, half, BBR_UNIT, BBR_UNIT, true);
        assert_eq!(p.rate, 483_398);
        assert_eq!(tp.pacing_rate_bps, Some(483_398 * 8));
        // bbr_init_pacing_rate_from_rtt runs on the first `set` with an RTT sample (and not
        // before one): from a fresh state, a zero bandwidth still gives the RTT-based rate.
        let mut fresh = Pacing::default();
        let mut no_rtt = CcState::new(1000);
        fresh.set(&mut no_rtt, 0, BBR_UNIT, BBR_UNIT, false);
        assert!(!fresh.has_seen_rtt);
        // No RTT sample: not initialised from one; the zero bandwidth gives the 1 B/s floor.
        assert_eq!(fresh.rate, 1);
        fresh.set(&mut tp, 0, BBR_UNIT, BBR_UNIT, false);
        assert_eq!(fresh.rate, 966_796);
        // Before the pipe is full a higher rate is still taken: back to 966 796.
        p.set(&mut tp, 2 * half, BBR_UNIT, BBR_UNIT, false);
        assert_eq!(p.rate, 966_796);
    }

    /// `bbr_update_min_rtt` takes a sample strictly below the minimum (or any sample once it
    /// expired): an equal sample does not refresh the minimum's timestamp.
    #[test]
    fn an_equal_rtt_sample_does_not_refresh_the_min_rtt_stamp() {
        let mut m = RttMin::default();
        m.update(Some(Nanos::from_ms(10)), Nanos::from_secs(1), false);
        assert_eq!((m.us, m.stamp), (10_000, Nanos::from_secs(1)));
        m.update(Some(Nanos::from_ms(10)), Nanos::from_secs(2), false);
        assert_eq!((m.us, m.stamp), (10_000, Nanos::from_secs(1)));
        m.update(Some(Nanos::from_us(9_999)), Nanos::from_secs(3), false);
        assert_eq!((m.us, m.stamp), (9_999, Nanos::from_secs(3)));
        // Expired: even a larger sample is taken.
        m.update(Some(Nanos::from_ms(20)), Nanos::from_secs(4), true);
        assert_eq!((m.us, m.stamp), (20_000, Nanos::from_secs(4)));
    }
}
