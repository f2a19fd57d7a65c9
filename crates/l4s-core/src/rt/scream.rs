//! SCReAMv2, the L4S rate controller of WebRTC ("rt-scream"): a reference window driven by CE
//! marks, loss and queue delay, turned into a target bitrate. Follows libwebrtc
//! `modules/congestion_controller/scream/scream_v2.cc` (`ScreamV2::UpdateL4SAlpha`,
//! `UpdateRefWindowAndTargetRate`), `delay_based_congestion_control.cc` and the defaults of
//! `scream_v2_parameters.cc`; draft-johansson-ccwg-rfc8298bis-screamv2 §4.2.
//!
//! Faithful: α = EWMA (g = 1/16) of the CE fraction of received packets, updated at most every
//! min(10 ms, srtt); at most one reaction per min(srtt, virtual RTT): on CE the reference window
//! shrinks by α/2 (scaled by max(0.5, 1 − MSS/W) and, without queue delay, by the closeness to
//! the last inflection point ref_window_i), on loss by `beta_loss`, on a queue delay above
//! `queue_delay_target`·`queue_delay_threshold` (while α is below the virtual-α limit) by the
//! delay-based back-off ("virtual CE"); after 100 RTTs without congestion the first CE resets
//! the window to the bytes in flight of the previous RTT and sets α = 0.25; the window grows by
//! MSS/W per unmarked byte acknowledged, scaled by (srtt/virtual RTT)² below the virtual RTT, by
//! the delay-based increase scale, by the closeness to ref_window_i, and by a multiplicative
//! term 1 + 0.02·W/MSS that ramps in over `post_congestion_delay_rtts` after a congestion event;
//! growth stops at MSS + `bytes_in_flight_head_room` × the largest bytes in flight of this or
//! the last RTT; target = W/srtt (scaled down when W is close to an MSS or when bytes in flight
//! exceed `data_in_flight_limit` × W under queue delay), clamped to [min, max]. The pacer runs at
//! 1.5 × the target (`ScreamNetworkController::GetPacerConfig`), start rate 300 kb/s.
//! Simplified (named): the delay-based minimum bandwidth (`SetMinDelayBasedBwe`) is 0; the
//! periodic padding probe (`PeriodicPadding`) is not modelled; smoothed RTT comes from the
//! sender's feedback path (see `rt::rfc8888`).

use crate::packet::Ecn;
use crate::rt::feedback::TransportPacketsFeedback;
use crate::time::Nanos;
use crate::ParamError;

/// libwebrtc's `ScreamV2Parameters` defaults (`scream_v2_parameters.cc`), each a scenario key.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ScreamParams {
    /// `MinRefWindow`, bytes (3000).
    pub min_ref_window_bytes: f64,
    /// `L4sAvgG`: EWMA gain of α (1/16).
    pub l4s_avg_g: f64,
    /// `MaxSegmentSize`, bytes (1000).
    pub max_segment_size_bytes: f64,
    /// `BytesInFlightHeadRoom` (1.1).
    pub bytes_in_flight_head_room: f64,
    /// `BetaLoss`: window factor on loss (0.7).
    pub beta_loss: f64,
    /// `PostCongestionDelayRtts` (100).
    pub post_congestion_delay_rtts: f64,
    /// `MultiplicativeIncreaseFactor` (0.02).
    pub multiplicative_increase_factor: f64,
    /// `VirtualRtt` (25 ms).
    pub virtual_rtt: Nanos,
    /// `BackoffScaleFactorCloseToRefWindowI` (2).
    pub backoff_scale_factor_close_to_ref_window_i: f64,
    /// `NumberOfRttsBetweenRefWindowIUpdates` (10).
    pub number_of_rtts_between_ref_window_i_updates: f64,
    /// `NumberOfRttsBetweenResetRefWindowIOnCongestion` (100).
    pub number_of_rtts_between_reset_ref_window_i_on_congestion: f64,
    /// `DataInFlightLimit` (0.9).
    pub data_in_flight_limit: f64,
    /// `MaxDataInFlightLimitCompensation` (1.5).
    pub max_data_in_flight_limit_compensation: f64,
    /// `QDelayAvgG` (1/4).
    pub queue_delay_avg_g: f64,
    /// `BaseDelayWindowLength`: base-delay history entries (10).
    pub base_delay_window_length: usize,
    /// `BaseDelayHistoryUpdateInterval` (1 min).
    pub base_delay_history_update_interval: Nanos,
    /// `QDelayTarget` (100 ms).
    pub queue_delay_target: Nanos,
    /// `QDelayIncreasedThreshold` (0.25 of the target).
    pub queue_delay_increased_threshold: f64,
    /// `QDelayThreshold` (0.5 of the target).
    pub queue_delay_threshold: f64,
}

impl Default for ScreamParams {
    fn default() -> Self {
        ScreamParams {
            min_ref_window_bytes: 3000.0,
            l4s_avg_g: 1.0 / 16.0,
            max_segment_size_bytes: 1000.0,
            bytes_in_flight_head_room: 1.1,
            beta_loss: 0.7,
            post_congestion_delay_rtts: 100.0,
            multiplicative_increase_factor: 0.02,
            virtual_rtt: Nanos::from_ms(25),
            backoff_scale_factor_close_to_ref_window_i: 2.0,
            number_of_rtts_between_ref_window_i_updates: 10.0,
            number_of_rtts_between_reset_ref_window_i_on_congestion: 100.0,
            data_in_flight_limit: 0.9,
            max_data_in_flight_limit_compensation: 1.5,
            queue_delay_avg_g: 0.25,
            base_delay_window_length: 10,
            base_delay_history_update_interval: Nanos::from_secs_f64(60.0),
            queue_delay_target: Nanos::from_ms(100),
            queue_delay_increased_threshold: 0.25,
            queue_delay_threshold: 0.5,
        }
    }
}

/// `ScreamNetworkController`: the pacer runs at this factor × the target.
pub const PACING_FACTOR: f64 = 1.5;
/// `ScreamNetworkController`'s `kDefaultStartRate`: 300 kb/s.
pub const DEFAULT_START_BPS: u64 = 300_000;

impl ScreamParams {
    /// Check the parameters a scenario can set; errors name the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        let unit = |k: &str, v: f64| -> Result<(), ParamError> {
            if v > 0.0 && v <= 1.0 {
                Ok(())
            } else {
                Err(ParamError::new(k, v, "a number in (0, 1]"))
            }
        };
        unit("scream_l4s_avg_g", self.l4s_avg_g)?;
        unit("scream_beta_loss", self.beta_loss)?;
        unit("scream_queue_delay_threshold", self.queue_delay_threshold)?;
        if !(self.bytes_in_flight_head_room >= 1.0 && self.bytes_in_flight_head_room <= 10.0) {
            return Err(ParamError::new(
                "scream_bytes_in_flight_head_room",
                self.bytes_in_flight_head_room,
                "a number in [1, 10]",
            ));
        }
        if !(0.0..=1.0).contains(&self.multiplicative_increase_factor) {
            return Err(ParamError::new(
                "scream_multiplicative_increase_factor",
                self.multiplicative_increase_factor,
                "a number in [0, 1]",
            ));
        }
        if !(self.post_congestion_delay_rtts >= 1.0 && self.post_congestion_delay_rtts <= 10_000.0)
        {
            return Err(ParamError::new(
                "scream_post_congestion_delay_rtts",
                self.post_congestion_delay_rtts,
                "a number in [1, 10000]",
            ));
        }
        if self.virtual_rtt.0 == 0 || self.virtual_rtt > Nanos::from_ms(1000) {
            return Err(ParamError::new(
                "scream_virtual_rtt",
                self.virtual_rtt,
                "a duration in (0, 1s]",
            ));
        }
        if self.queue_delay_target.0 == 0 || self.queue_delay_target > Nanos::from_ms(10_000) {
            return Err(ParamError::new(
                "scream_queue_delay_target",
                self.queue_delay_target,
                "a duration in (0, 10s]",
            ));
        }
        if !(self.min_ref_window_bytes >= 1.0 && self.min_ref_window_bytes <= 1e9) {
            return Err(ParamError::new(
                "scream_min_ref_window",
                self.min_ref_window_bytes,
                "a number of bytes in [1, 1e9]",
            ));
        }
        if !(self.max_segment_size_bytes >= 1.0 && self.max_segment_size_bytes <= 65_535.0) {
            return Err(ParamError::new(
                "scream_max_segment_size",
                self.max_segment_size_bytes,
                "a number of bytes in [1, 65535]",
            ));
        }
        Ok(())
    }
}

/// libwebrtc `DelayBasedCongestionControl`: queue delay = one-way delay − base delay (the minimum
/// over a windowed history updated once per `base_delay_history_update_interval`), averaged with
/// gain `queue_delay_avg_g` upward and followed at once downward.
#[derive(Clone, Debug)]
struct DelayBased {
    /// Windowed minimum of the base delay, newest last (`WindowedMinFilter`), seconds.
    history: Vec<f64>,
    next_base_delay: f64,
    last_base_delay_update: f64,
    last_smoothed_rtt: f64,
    queue_delay_avg: f64,
}

impl DelayBased {
    fn new() -> Self {
        DelayBased {
            history: vec![f64::INFINITY],
            next_base_delay: f64::INFINITY,
            last_base_delay_update: f64::NEG_INFINITY,
            last_smoothed_rtt: 0.0,
            queue_delay_avg: f64::INFINITY,
        }
    }

    fn history_min(&self) -> f64 {
        self.history.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn on_feedback(&mut self, p: &ScreamParams, msg: &TransportPacketsFeedback, srtt: f64) {
        if msg.packets.is_empty() {
            return;
        }
        self.last_smoothed_rtt = srtt;
        // SortedByReceiveTime: the received packets in arrival order.
        let mut rx: Vec<(Nanos, Nanos)> = msg
            .received()
            .filter_map(|r| r.receive_time.map(|t| (t, r.sent.send_time)))
            .collect();
        rx.sort_by_key(|&(t, _)| t);
        for (recv, sent) in rx {
            let owd = recv.0 as f64 / 1e9 - sent.0 as f64 / 1e9;
            self.next_base_delay = self.next_base_delay.min(owd);
            // UseAllPacketsWhenCalculatingQDelay (default true): every packet updates the average.
            let q = owd - self.next_base_delay.min(self.history_min());
            if q < self.queue_delay_avg {
                self.queue_delay_avg = q;
            } else {
                self.queue_delay_avg =
                    p.queue_delay_avg_g * q + (1.0 - p.queue_delay_avg_g) * self.queue_delay_avg;
            }
        }
        let now = secs(msg.feedback_time);
        if now - self.last_base_delay_update >= secs(p.base_delay_history_update_interval) {
            self.history.push(self.next_base_delay);
            if self.history.len() > p.base_delay_window_length.max(1) {
                self.history.remove(0);
            }
            self.last_base_delay_update = now;
            self.next_base_delay = f64::INFINITY;
        }
    }

    fn target(p: &ScreamParams) -> f64 {
        secs(p.queue_delay_target)
    }

    fn is_queue_delay_detected(&self, p: &ScreamParams) -> bool {
        self.queue_delay_avg > Self::target(p) * p.queue_delay_increased_threshold
    }

    fn should_reduce_reference_window(&self, p: &ScreamParams) -> bool {
        self.queue_delay_avg > Self::target(p) * p.queue_delay_threshold
    }

    fn scale_increase(&self, p: &ScreamParams) -> f64 {
        (1.0 - self.queue_delay_avg / (Self::target(p) * p.queue_delay_threshold)).clamp(0.1, 1.0)
    }

    /// `UpdateReferenceWindow`: the back-off of a "virtual CE" from the queue delay.
    fn update_reference_window(&self, p: &ScreamParams, w: f64, virtual_alpha_lim: f64) -> f64 {
        // SetMinDelayBasedBwe is not used here: the floor is 0.
        let min_allowed = 0.0;
        if w < min_allowed {
            return min_allowed;
        }
        let thr = Self::target(p) * p.queue_delay_threshold;
        let alpha_v =
            (2.0 * virtual_alpha_lim * (self.queue_delay_avg - thr) / thr).clamp(0.0, 1.0);
        let mut backoff = alpha_v * p.queue_delay_threshold;
        backoff /= (self.last_smoothed_rtt / secs(p.virtual_rtt)).max(1.0);
        f64::max(min_allowed, (1.0 - backoff) * w)
    }
}

fn secs(t: Nanos) -> f64 {
    t.0 as f64 / 1e9
}

/// Seconds from `t` to `now` (∞ when `t` has not happened: libwebrtc's MinusInfinity).
fn since(now: Nanos, t: Option<Nanos>) -> f64 {
    t.map_or(f64::INFINITY, |t| secs(now.saturating_sub(t)))
}

/// SCReAMv2 state (one `ScreamV2` object).
#[derive(Clone, Debug)]
pub struct ScreamV2 {
    p: ScreamParams,
    start_bps: f64,
    fed: bool,
    min_bps: f64,
    max_bps: f64,
    target_bps: f64,
    ref_window: f64,
    ref_window_i: f64,
    l4s_alpha: f64,
    delivered_this_rtt: u64,
    marked_this_rtt: u64,
    last_l4s_alpha_update: Option<Nanos>,
    last_data_in_flight_update: Option<Nanos>,
    max_in_flight_this_rtt: f64,
    max_in_flight_prev_rtt: f64,
    last_reaction: Option<Nanos>,
    last_ref_window_i_update: Option<Nanos>,
    delay: DelayBased,
}

impl ScreamV2 {
    /// A controller with validated parameters whose target stays in [`min_bps`, `max_bps`];
    /// it reports `start_bps` until the first feedback.
    pub fn new(p: ScreamParams, start_bps: u64, min_bps: u64, max_bps: u64) -> Self {
        ScreamV2 {
            ref_window: p.min_ref_window_bytes,
            p,
            start_bps: start_bps as f64,
            fed: false,
            min_bps: min_bps as f64,
            max_bps: max_bps as f64,
            // libwebrtc's target_rate_ starts at zero (the virtual-α limit is then infinite).
            target_bps: 0.0,
            ref_window_i: 1.0,
            l4s_alpha: 0.0,
            delivered_this_rtt: 0,
            marked_this_rtt: 0,
            last_l4s_alpha_update: None,
            last_data_in_flight_update: None,
            max_in_flight_this_rtt: 0.0,
            max_in_flight_prev_rtt: 0.0,
            last_reaction: None,
            last_ref_window_i_update: None,
            delay: DelayBased::new(),
        }
    }

    /// Target bitrate, bits/s.
    pub fn target_bps(&self) -> f64 {
        if self.fed {
            self.target_bps
        } else {
            self.start_bps
        }
    }

    /// Pacing rate, bits/s: `PACING_FACTOR` × the target.
    pub fn pacing_bps(&self) -> f64 {
        self.target_bps() * PACING_FACTOR
    }

    /// Reference window, bytes.
    pub fn ref_window_bytes(&self) -> f64 {
        self.ref_window
    }

    /// The reference window at the last inflection point, bytes.
    pub fn ref_window_i_bytes(&self) -> f64 {
        self.ref_window_i
    }

    /// The L4S α.
    pub fn l4s_alpha(&self) -> f64 {
        self.l4s_alpha
    }

    /// The averaged queue delay, s (∞ before the first feedback).
    pub fn queue_delay_s(&self) -> f64 {
        self.delay.queue_delay_avg
    }

    fn mss_ratio(&self) -> f64 {
        self.p.max_segment_size_bytes / self.ref_window
    }

    fn scale_close_to_ref_window_i(&self) -> f64 {
        let f = self.p.backoff_scale_factor_close_to_ref_window_i;
        let scl = f * (self.ref_window - self.ref_window_i).abs() / self.ref_window_i;
        (scl * scl).clamp(0.1, 1.0)
    }

    fn multiplicative_scale_factor(&self) -> f64 {
        1.0 + self.p.multiplicative_increase_factor * self.ref_window
            / self.p.max_segment_size_bytes
    }

    /// `OnTransportPacketsFeedback`: one feedback report with the sender's smoothed RTT;
    /// returns the new target, bits/s.
    pub fn on_feedback(&mut self, msg: &TransportPacketsFeedback, smoothed_rtt: Nanos) -> f64 {
        let srtt = secs(smoothed_rtt);
        self.fed = true;
        self.delay.on_feedback(&self.p, msg, srtt);
        self.update_l4s_alpha(msg, srtt);
        self.update_ref_window_and_target(msg, srtt);
        self.target_bps
    }

    fn update_l4s_alpha(&mut self, msg: &TransportPacketsFeedback, srtt: f64) {
        let received = msg.received().count() as u64;
        if received == 0 {
            return;
        }
        self.delivered_this_rtt += received;
        self.marked_this_rtt += msg.ce_count() as u64;
        let now = msg.feedback_time;
        if since(now, self.last_l4s_alpha_update) < f64::min(0.010, srtt) {
            return;
        }
        self.last_l4s_alpha_update = Some(now);
        let frac = self.marked_this_rtt as f64 / self.delivered_this_rtt as f64;
        let g = self.p.l4s_avg_g;
        self.l4s_alpha = g * frac + (1.0 - g) * self.l4s_alpha;
        self.delivered_this_rtt = 0;
        self.marked_this_rtt = 0;
    }

    /// The L4S α below which queue delay governs: two MSS per RTT (at least 1 ms) over the
    /// target rate, both in bytes per second.
    fn virtual_alpha_lim(&self, srtt: f64) -> f64 {
        (2.0 * self.p.max_segment_size_bytes / srtt.max(0.001)) / (self.target_bps / 8.0)
    }

    fn update_ref_window_and_target(&mut self, msg: &TransportPacketsFeedback, srtt: f64) {
        let p = self.p;
        let now = msg.feedback_time;
        let vrtt = secs(p.virtual_rtt);
        let mss = p.max_segment_size_bytes;
        let in_flight = msg.data_in_flight_bytes as f64;
        self.max_in_flight_this_rtt = self.max_in_flight_this_rtt.max(in_flight);
        let scl = self.scale_close_to_ref_window_i();
        let eff_rtt = srtt.max(0.001);
        let virtual_alpha_lim = self.virtual_alpha_lim(srtt);

        let (mut is_ce, mut is_loss, mut is_virtual_ce) = (false, false, false);
        if since(now, self.last_reaction) >= srtt.min(vrtt) {
            is_ce = msg.ce_count() > 0;
            is_loss = msg.lost_count() > 0;
            is_virtual_ce =
                self.l4s_alpha < virtual_alpha_lim && self.delay.should_reduce_reference_window(&p);
        }
        if (is_ce || is_loss || is_virtual_ce)
            && since(now, self.last_ref_window_i_update)
                > p.number_of_rtts_between_ref_window_i_updates * srtt
        {
            self.last_ref_window_i_update = Some(now);
            self.ref_window_i = self.ref_window;
        }
        if is_loss {
            self.ref_window *= p.beta_loss;
        }
        if is_ce {
            let mut backoff = self.l4s_alpha / 2.0;
            backoff *= f64::max(0.5, 1.0 - self.mss_ratio());
            if !self.delay.is_queue_delay_detected(&p) {
                backoff *= f64::max(0.25, scl);
            }
            if since(now, self.last_reaction)
                > p.number_of_rtts_between_reset_ref_window_i_on_congestion * vrtt.max(srtt)
            {
                // First congestion after a long quiet time: the window may be far above what
                // was in flight; bring it down to that and react hard.
                self.ref_window = self.max_in_flight_prev_rtt.clamp(
                    p.min_ref_window_bytes,
                    self.ref_window.max(p.min_ref_window_bytes),
                );
                backoff = backoff.max(0.25);
                self.l4s_alpha = 0.25;
            }
            self.ref_window *= 1.0 - backoff;
        }
        if is_virtual_ce {
            self.ref_window =
                self.delay
                    .update_reference_window(&p, self.ref_window, virtual_alpha_lim);
        }
        if is_ce || is_loss || is_virtual_ce {
            self.last_reaction = Some(now);
        }

        // Reference window increase (draft §4.2.2.2): lost packets count as acknowledged bytes.
        let acked_not_marked: f64 = msg
            .packets
            .iter()
            .filter(|r| !(r.received() && r.ecn == Ecn::Ce))
            .map(|r| r.sent.size_bytes as f64)
            .sum();
        let mut increase = acked_not_marked * self.mss_ratio();
        if srtt < vrtt {
            let r = srtt / vrtt;
            increase *= r * r;
        }
        if self.l4s_alpha < virtual_alpha_lim {
            increase *= self.delay.scale_increase(&p);
        }
        increase *= f64::max(0.25, scl);
        increase *= f64::max(0.5, 1.0 - self.mss_ratio());
        let rtt = vrtt.max(srtt);
        let post =
            (since(now, self.last_reaction) / (p.post_congestion_delay_rtts * rtt)).clamp(0.0, 1.0);
        increase *= 1.0 + (self.multiplicative_scale_factor() - 1.0) * post * scl;
        let max_allowed = f64::max(
            mss + self.max_in_flight_this_rtt.max(self.max_in_flight_prev_rtt)
                * p.bytes_in_flight_head_room,
            p.min_ref_window_bytes,
        );
        if self.ref_window < max_allowed {
            self.ref_window =
                (self.ref_window + increase).clamp(p.min_ref_window_bytes, max_allowed);
        }

        let mut scale = 1.0;
        if self.delay.is_queue_delay_detected(&p) {
            let ratio = in_flight / self.ref_window;
            if ratio > p.data_in_flight_limit {
                scale /= f64::min(
                    p.max_data_in_flight_limit_compensation,
                    ratio / p.data_in_flight_limit,
                );
            }
        }
        scale *= 1.0 - (self.mss_ratio() - 0.1).clamp(0.0, 0.2);
        self.target_bps =
            (scale * self.ref_window * 8.0 / eff_rtt).clamp(self.min_bps, self.max_bps);

        if since(now, self.last_data_in_flight_update) >= rtt {
            self.last_data_in_flight_update = Some(now);
            self.max_in_flight_prev_rtt = self.max_in_flight_this_rtt;
            self.max_in_flight_this_rtt = 0.0;
        }
    }
}

#[cfg(test)]
mod tests;
