//! The delay-based half of Google Congestion Control as libwebrtc's goog_cc runs it: send-time groups, the trendline overuse detector, AIMD rate control, and the acknowledged bitrate.
//! Follows libwebrtc `modules/congestion_controller/goog_cc/` (`inter_arrival_delta.cc`, `trendline_estimator.cc`, `aimd_rate_control.cc`, `link_capacity_estimator.cc`, `bitrate_estimator.cc`, `delay_based_bwe.cc`); draft-ietf-rmcat-gcc-02 §5.
//!
//! Faithful: packets are grouped by send time (5 ms groups; a packet arriving within 5 ms of
//! the group's last with a negative propagation delta joins it as a burst, up to 100 ms);
//! each completed group gives a send and an arrival delta; the trendline filter accumulates
//! their difference, smooths it (0.9), and fits a least-squares slope over the last 20
//! groups; the detector compares min(deltas, 60)·slope·4 with an adaptive threshold (start
//! 12.5 ms, k_up 0.0087, k_down 0.039, clamp [6, 600], no adaptation 15 ms beyond it, time
//! step ≤ 100 ms) and says "overusing" after 10 ms over it (and ≥ 2 samples) when the slope
//! is not falling, "underusing" below −threshold, else "normal"; AIMD (increase on normal
//! from hold, hold on underuse, decrease on overuse) multiplies by 1.08^Δt (Δt ≤ 1 s) far
//! from the link capacity estimate and adds one average packet per 2·(RTT + 100 ms) near it,
//! never above 1.5 × acknowledged + 10 kb/s; a decrease sets 0.85 × acknowledged − 5 kb/s
//! (0.85 × the capacity estimate if that is not below the current rate), at most once per
//! RTT ∈ [10, 200] ms unless the acknowledged rate is under half the estimate; the
//! acknowledged bitrate is the Bayesian bitrate estimator over 500 ms (first) then 150 ms
//! windows (uncertainty scale 10, variance + 5 per sample).
//! A probe result (`rt::gcc_probe`) sets the estimate when not overusing (`SetEstimate`).
//! Simplified (named): no ALR detection, no network state
//! predictor. Arrival times come from RFC 8888 reports (`rt::rfc8888`, every 25 ms as
//! libwebrtc's ccfb `min_send_delta`), one `on_feedback` per report as goog_cc runs
//! `OnTransportPacketsFeedback` per feedback message; the sender paces at 2.5 × the target
//! (`kDefaultPaceMultiplier`).

use crate::rt::feedback::TransportPacketsFeedback;
use crate::time::Nanos;

/// `kSendTimeGroupLength`.
const GROUP_LENGTH: Nanos = Nanos::from_ms(5);
/// `kBurstDeltaThreshold`.
const BURST_DELTA: Nanos = Nanos::from_ms(5);
/// `kMaxBurstDuration`.
const MAX_BURST: Nanos = Nanos::from_ms(100);
/// `kDefaultTrendlineWindowSize`.
pub const TRENDLINE_WINDOW: usize = 20;
/// `kDefaultTrendlineSmoothingCoeff`.
pub const SMOOTHING: f64 = 0.9;
/// `kDefaultTrendlineThresholdGain`.
pub const THRESHOLD_GAIN: f64 = 4.0;
/// Threshold adaptation gains (`k_up_`, `k_down_`).
pub const K_UP: f64 = 0.0087;
/// See [`K_UP`].
pub const K_DOWN: f64 = 0.039;
/// `kOverUsingTimeThreshold`, ms.
pub const OVERUSING_TIME_MS: f64 = 10.0;
/// `kMinNumDeltas`.
const MIN_NUM_DELTAS: u32 = 60;
/// `kDeltaCounterMax`.
const DELTA_COUNTER_MAX: u32 = 1000;
/// `kMaxAdaptOffsetMs`.
const MAX_ADAPT_OFFSET_MS: f64 = 15.0;
/// `kDefaultBackoffFactor`.
pub const BETA: f64 = 0.85;

/// `BandwidthUsage`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Usage {
    /// `kBwNormal`.
    Normal,
    /// `kBwUnderusing`.
    Underusing,
    /// `kBwOverusing`.
    Overusing,
}

#[derive(Copy, Clone, Debug)]
struct Group {
    first_send: Nanos,
    send: Nanos,
    first_arrival: Nanos,
    complete: Nanos,
}

/// `InterArrivalDelta`: send-time groups and their deltas.
#[derive(Clone, Debug, Default)]
pub struct InterArrival {
    cur: Option<Group>,
    prev: Option<Group>,
}

impl InterArrival {
    fn belongs_to_burst(g: &Group, arrival: Nanos, send: Nanos) -> bool {
        let arrival_delta = arrival.0 as i64 - g.complete.0 as i64;
        let send_delta = send.0 as i64 - g.send.0 as i64;
        if send_delta == 0 {
            return true;
        }
        let propagation_delta = arrival_delta - send_delta;
        propagation_delta < 0
            && arrival_delta <= BURST_DELTA.0 as i64
            && arrival.saturating_sub(g.first_arrival) < MAX_BURST
    }

    /// `ComputeDeltas`: a packet sent at `send`, arrived at `arrival`; when it opens a new
    /// group, the (send, arrival) deltas of the group it closes against the one before, ms.
    pub fn compute_deltas(&mut self, send: Nanos, arrival: Nanos) -> Option<(f64, f64)> {
        let Some(mut g) = self.cur else {
            self.cur = Some(Group {
                first_send: send,
                send,
                first_arrival: arrival,
                complete: arrival,
            });
            return None;
        };
        if g.first_send > send {
            return None; // reordered
        }
        let mut out = None;
        let new_group =
            !Self::belongs_to_burst(&g, arrival, send) && send - g.first_send > GROUP_LENGTH;
        if new_group {
            if let Some(p) = self.prev {
                let send_delta = (g.send.0 as f64 - p.send.0 as f64) * 1e-6;
                let arrival_delta = (g.complete.0 as f64 - p.complete.0 as f64) * 1e-6;
                if arrival_delta >= 0.0 {
                    out = Some((send_delta, arrival_delta));
                }
            }
            self.prev = Some(g);
            g = Group {
                first_send: send,
                send,
                first_arrival: arrival,
                complete: arrival,
            };
        } else {
            g.send = g.send.max(send);
        }
        g.complete = arrival;
        self.cur = Some(g);
        out
    }
}

/// `TrendlineEstimator`: the delay-gradient slope and the overuse detector on it.
#[derive(Clone, Debug)]
pub struct Trendline {
    num_deltas: u32,
    first_arrival_ms: Option<f64>,
    accumulated_ms: f64,
    smoothed_ms: f64,
    /// (arrival ms since the first, smoothed delay ms).
    hist: std::collections::VecDeque<(f64, f64)>,
    /// The adaptive threshold, ms.
    pub threshold: f64,
    last_update_ms: Option<f64>,
    prev_trend: f64,
    time_over_using: Option<f64>,
    overuse_counter: u32,
    usage: Usage,
}

impl Default for Trendline {
    fn default() -> Self {
        Trendline {
            num_deltas: 0,
            first_arrival_ms: None,
            accumulated_ms: 0.0,
            smoothed_ms: 0.0,
            hist: Default::default(),
            threshold: 12.5,
            last_update_ms: None,
            prev_trend: 0.0,
            time_over_using: None,
            overuse_counter: 0,
            usage: Usage::Normal,
        }
    }
}

/// `LinearFitSlope`: least-squares slope of y on x.
pub fn linear_fit_slope(points: impl Iterator<Item = (f64, f64)> + Clone) -> Option<f64> {
    let n = points.clone().count() as f64;
    let (sx, sy) = points
        .clone()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (xa, ya) = (sx / n, sy / n);
    let (num, den) = points.fold((0.0, 0.0), |(nu, de), (x, y)| {
        (nu + (x - xa) * (y - ya), de + (x - xa) * (x - xa))
    });
    (den != 0.0).then_some(num / den)
}

impl Trendline {
    /// The detector's state.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The slope of the last fit (the previous trend).
    pub fn trend(&self) -> f64 {
        self.prev_trend
    }

    /// `UpdateTrendline`: one group delta (ms) arriving at `arrival_ms`.
    pub fn update(&mut self, recv_delta_ms: f64, send_delta_ms: f64, arrival_ms: f64) {
        let delta = recv_delta_ms - send_delta_ms;
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival_ms.get_or_insert(arrival_ms);
        self.accumulated_ms += delta;
        self.smoothed_ms = SMOOTHING * self.smoothed_ms + (1.0 - SMOOTHING) * self.accumulated_ms;
        self.hist.push_back((arrival_ms - first, self.smoothed_ms));
        if self.hist.len() > TRENDLINE_WINDOW {
            self.hist.pop_front();
        }
        let mut trend = self.prev_trend;
        if self.hist.len() == TRENDLINE_WINDOW {
            trend = linear_fit_slope(self.hist.iter().copied()).unwrap_or(trend);
        }
        self.detect(trend, send_delta_ms, arrival_ms);
    }

    /// `Detect`.
    fn detect(&mut self, trend: f64, ts_delta: f64, now_ms: f64) {
        if self.num_deltas < 2 {
            self.usage = Usage::Normal;
            return;
        }
        let modified = self.num_deltas.min(MIN_NUM_DELTAS) as f64 * trend * THRESHOLD_GAIN;
        if modified > self.threshold {
            let t = match self.time_over_using {
                None => ts_delta / 2.0,
                Some(t) => t + ts_delta,
            };
            self.time_over_using = Some(t);
            self.overuse_counter += 1;
            if t > OVERUSING_TIME_MS && self.overuse_counter > 1 && trend >= self.prev_trend {
                self.time_over_using = Some(0.0);
                self.overuse_counter = 0;
                self.usage = Usage::Overusing;
            }
        } else if modified < -self.threshold {
            self.time_over_using = None;
            self.overuse_counter = 0;
            self.usage = Usage::Underusing;
        } else {
            self.time_over_using = None;
            self.overuse_counter = 0;
            self.usage = Usage::Normal;
        }
        self.prev_trend = trend;
        self.update_threshold(modified, now_ms);
    }

    /// `UpdateThreshold`: γ += k·(|m| − γ)·Δt, k = k_down below γ, k_up above.
    fn update_threshold(&mut self, modified: f64, now_ms: f64) {
        let last = *self.last_update_ms.get_or_insert(now_ms);
        if modified.abs() > self.threshold + MAX_ADAPT_OFFSET_MS {
            self.last_update_ms = Some(now_ms);
            return;
        }
        let k = if modified.abs() < self.threshold {
            K_DOWN
        } else {
            K_UP
        };
        // goog_cc keeps integer milliseconds here.
        let dt = (now_ms.floor() - last.floor()).min(100.0);
        self.threshold += k * (modified.abs() - self.threshold) * dt;
        self.threshold = self.threshold.clamp(6.0, 600.0);
        self.last_update_ms = Some(now_ms);
    }
}

/// `LinkCapacityEstimator` (kb/s).
#[derive(Clone, Debug)]
struct LinkCapacity {
    estimate_kbps: Option<f64>,
    deviation_kbps: f64,
}

impl LinkCapacity {
    fn deviation_estimate(&self, e: f64) -> f64 {
        (self.deviation_kbps * e).sqrt()
    }
    fn upper_kbps(&self) -> f64 {
        self.estimate_kbps
            .map_or(f64::INFINITY, |e| e + 3.0 * self.deviation_estimate(e))
    }
    fn lower_kbps(&self) -> f64 {
        self.estimate_kbps
            .map_or(0.0, |e| (e - 3.0 * self.deviation_estimate(e)).max(0.0))
    }
    fn on_overuse(&mut self, sample_kbps: f64) {
        let alpha = 0.05;
        let e = match self.estimate_kbps {
            None => sample_kbps,
            Some(e) => (1.0 - alpha) * e + alpha * sample_kbps,
        };
        self.estimate_kbps = Some(e);
        let norm = e.max(1.0);
        let err = e - sample_kbps;
        self.deviation_kbps =
            ((1.0 - alpha) * self.deviation_kbps + alpha * err * err / norm).clamp(0.4, 2.5);
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RateState {
    Hold,
    Increase,
    Decrease,
}

/// `AimdRateControl` (bits/s), started with `SetStartBitrate`.
#[derive(Clone, Debug)]
pub struct Aimd {
    current_bps: f64,
    min_bps: f64,
    latest_acked_bps: f64,
    state: RateState,
    link: LinkCapacity,
    last_change: Option<Nanos>,
    rtt: Nanos,
}

impl Aimd {
    /// Start at `start_bps`, never below `min_bps`.
    pub fn new(start_bps: f64, min_bps: f64) -> Self {
        Aimd {
            current_bps: start_bps,
            min_bps,
            latest_acked_bps: start_bps,
            state: RateState::Hold,
            link: LinkCapacity {
                estimate_kbps: None,
                deviation_kbps: 0.4,
            },
            last_change: None,
            rtt: Nanos::from_ms(200),
        }
    }

    /// The estimate, bits/s.
    pub fn rate_bps(&self) -> f64 {
        self.current_bps
    }

    /// `SetRtt`.
    pub fn set_rtt(&mut self, rtt: Nanos) {
        self.rtt = rtt;
    }

    /// `SetEstimate`: jump to `bps` (a probe result), clamped at the floor.
    pub fn set_estimate(&mut self, bps: f64, now: Nanos) {
        self.current_bps = bps.max(self.min_bps);
        self.last_change = Some(now);
    }

    /// `TimeToReduceFurther`.
    pub fn time_to_reduce_further(&self, now: Nanos, acked_bps: f64) -> bool {
        let interval = self.rtt.clamp(Nanos::from_ms(10), Nanos::from_ms(200));
        if self
            .last_change
            .is_none_or(|t| now.saturating_sub(t) >= interval)
        {
            return true;
        }
        acked_bps < 0.5 * self.current_bps
    }

    /// `GetNearMaxIncreaseRateBpsPerSecond`.
    fn near_max_increase_bps_per_s(&self) -> f64 {
        let frame_bytes = self.current_bps / 8.0 / 30.0;
        let packets = (frame_bytes / 1200.0).ceil().max(1.0);
        let avg_packet_bits = frame_bytes / packets * 8.0;
        let response_s = 2.0 * (self.rtt.as_secs_f64() + 0.1);
        (avg_packet_bits / response_s).max(4000.0)
    }

    /// `Update` / `ChangeBitrate` with the detector's `usage` and the acknowledged rate.
    pub fn update(&mut self, usage: Usage, acked_bps: Option<f64>, now: Nanos) -> f64 {
        if let Some(a) = acked_bps {
            self.latest_acked_bps = a;
        }
        let acked = self.latest_acked_bps;
        // ChangeState.
        match usage {
            Usage::Normal => {
                if self.state == RateState::Hold {
                    self.last_change = Some(now);
                    self.state = RateState::Increase;
                }
            }
            Usage::Overusing => self.state = RateState::Decrease,
            Usage::Underusing => self.state = RateState::Hold,
        }
        let mut new = None;
        match self.state {
            RateState::Hold => {}
            RateState::Increase => {
                if acked / 1e3 > self.link.upper_kbps() {
                    self.link.estimate_kbps = None;
                }
                let limit = 1.5 * acked + 10_000.0;
                if self.current_bps < limit {
                    let dt = self
                        .last_change
                        .map_or(f64::INFINITY, |t| now.saturating_sub(t).as_secs_f64());
                    let inc = if self.link.estimate_kbps.is_some() {
                        self.near_max_increase_bps_per_s() * dt
                    } else {
                        let alpha = 1.08f64.powf(dt.min(1.0));
                        (self.current_bps * (alpha - 1.0)).max(1000.0)
                    };
                    new = Some((self.current_bps + inc).min(limit));
                }
                self.last_change = Some(now);
            }
            RateState::Decrease => {
                let mut dec = acked * BETA;
                if dec > 5000.0 {
                    dec -= 5000.0;
                }
                if dec > self.current_bps {
                    if let Some(e) = self.link.estimate_kbps {
                        dec = BETA * e * 1e3;
                    }
                }
                if dec < self.current_bps {
                    new = Some(dec);
                }
                if acked / 1e3 < self.link.lower_kbps() {
                    self.link.estimate_kbps = None;
                }
                self.link.on_overuse(acked / 1e3);
                self.state = RateState::Hold;
                self.last_change = Some(now);
            }
        }
        self.current_bps = new.unwrap_or(self.current_bps).max(self.min_bps);
        self.current_bps
    }
}

/// `BitrateEstimator` behind `AcknowledgedBitrateEstimator` (kb/s internally).
#[derive(Clone, Debug)]
pub struct AckedBitrate {
    sum_bytes: f64,
    current_window_ms: i64,
    prev_time_ms: Option<i64>,
    estimate_kbps: Option<f64>,
    var: f64,
}

impl Default for AckedBitrate {
    fn default() -> Self {
        AckedBitrate {
            sum_bytes: 0.0,
            current_window_ms: 0,
            prev_time_ms: None,
            estimate_kbps: None,
            var: 50.0,
        }
    }
}

impl AckedBitrate {
    /// The estimate, bits/s.
    pub fn bitrate_bps(&self) -> Option<f64> {
        self.estimate_kbps.map(|k| k * 1e3)
    }

    /// `Update`: `bytes` acknowledged as received at `at`.
    pub fn update(&mut self, at: Nanos, bytes: u64) {
        let window_ms = if self.estimate_kbps.is_none() {
            500
        } else {
            150
        };
        let now_ms = (at.0 / 1_000_000) as i64;
        // UpdateWindow.
        if self.prev_time_ms.is_some_and(|p| now_ms < p) {
            self.prev_time_ms = None;
            self.sum_bytes = 0.0;
            self.current_window_ms = 0;
        }
        if let Some(p) = self.prev_time_ms {
            self.current_window_ms += now_ms - p;
            if now_ms - p > window_ms {
                self.sum_bytes = 0.0;
                self.current_window_ms %= window_ms;
            }
        }
        self.prev_time_ms = Some(now_ms);
        let mut sample = None;
        if self.current_window_ms >= window_ms {
            sample = Some(8.0 * self.sum_bytes / window_ms as f64);
            self.current_window_ms -= window_ms;
            self.sum_bytes = 0.0;
        }
        self.sum_bytes += bytes as f64;
        let Some(s) = sample else {
            return;
        };
        let Some(e) = self.estimate_kbps else {
            self.estimate_kbps = Some(s);
            return;
        };
        let uncertainty = 10.0 * (e - s).abs() / e.max(1e-9);
        let sample_var = uncertainty * uncertainty;
        let pred_var = self.var + 5.0;
        let new = (sample_var * e + pred_var * s) / (sample_var + pred_var);
        self.estimate_kbps = Some(new.max(0.0));
        self.var = sample_var * pred_var / (sample_var + pred_var);
    }
}

/// `DelayBasedBwe` with its acknowledged bitrate: one per media sender.
#[derive(Clone, Debug)]
pub struct DelayBasedBwe {
    inter: InterArrival,
    /// The trendline detector.
    pub trendline: Trendline,
    /// The AIMD rate control.
    pub aimd: Aimd,
    /// The acknowledged bitrate.
    pub acked: AckedBitrate,
    last_seen: Option<Nanos>,
}

impl DelayBasedBwe {
    /// Start at `start_bps`, floor `min_bps`.
    pub fn new(start_bps: f64, min_bps: f64) -> Self {
        DelayBasedBwe {
            inter: InterArrival::default(),
            trendline: Trendline::default(),
            aimd: Aimd::new(start_bps, min_bps),
            acked: AckedBitrate::default(),
            last_seen: None,
        }
    }

    /// The delay-based estimate, bits/s.
    pub fn rate_bps(&self) -> f64 {
        self.aimd.rate_bps()
    }

    /// `OnTransportPacketsFeedback`: acknowledged bitrate first, then every received
    /// packet through the groups and the detector, then `MaybeUpdateEstimate` with the probe
    /// result `probe_bps` (the report's completed probe cluster, if any); true when the probe
    /// result set the estimate.
    pub fn on_feedback(
        &mut self,
        fb: &TransportPacketsFeedback,
        rtt: Nanos,
        probe_bps: Option<f64>,
    ) -> bool {
        let now = fb.feedback_time;
        self.aimd.set_rtt(rtt);
        let mut got = false;
        for p in fb.received() {
            let Some(arrival) = p.receive_time else {
                continue;
            };
            got = true;
            self.acked.update(arrival, p.sent.size_bytes as u64);
            // kStreamTimeOut: 2 s without packets resets the groups and the detector.
            if self
                .last_seen
                .is_some_and(|t| now.saturating_sub(t) > Nanos::from_secs(2))
            {
                self.inter = InterArrival::default();
                self.trendline = Trendline::default();
            }
            self.last_seen = Some(now);
            if let Some((send_ms, recv_ms)) = self.inter.compute_deltas(p.sent.send_time, arrival) {
                self.trendline
                    .update(recv_ms, send_ms, arrival.0 as f64 * 1e-6);
            }
        }
        if !got {
            return false;
        }
        let acked = self.acked.bitrate_bps();
        let usage = self.trendline.usage();
        if usage == Usage::Overusing {
            match acked {
                Some(a) if self.aimd.time_to_reduce_further(now, a) => {
                    self.aimd.update(usage, acked, now);
                }
                None if self
                    .aimd
                    .time_to_reduce_further(now, self.aimd.rate_bps() / 2.0 - 1.0) =>
                {
                    let half = self.aimd.rate_bps() / 2.0;
                    self.aimd.current_bps = half.max(self.aimd.min_bps);
                    self.aimd.last_change = Some(now);
                }
                _ => {}
            }
        } else if let Some(p) = probe_bps {
            // MaybeUpdateEstimate: not overusing, a probe result sets the estimate.
            self.aimd.set_estimate(p, now);
            return true;
        } else {
            self.aimd.update(usage, acked, now);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(send_ms: f64, first_arrival_ms: f64, complete_ms: f64) -> Group {
        let ns = |ms: f64| Nanos((ms * 1e6) as u64);
        Group {
            first_send: ns(send_ms),
            send: ns(send_ms),
            first_arrival: ns(first_arrival_ms),
            complete: ns(complete_ms),
        }
    }

    #[test]
    fn overuse_needs_two_samples_10_ms_over_the_threshold_and_a_trend_not_falling() {
        // TrendlineEstimator::Detect: modified = min(num_deltas, 60)·trend·4 against the
        // threshold (12.5); time over using starts at ts_delta/2 and adds ts_delta; over-use
        // needs time > 10 ms AND overuse_counter > 1 AND trend >= the previous trend.
        // The same `now` keeps the adaptive threshold at 12.5 (no time passes).
        let fresh = || Trendline {
            num_deltas: 60,
            ..Trendline::default()
        };
        let mut t = fresh();
        t.detect(0.1, 30.0, 1000.0); // modified 24: time 15 ms, counter 1
        assert_eq!(t.usage(), Usage::Normal);
        t.detect(0.1, 30.0, 1000.0); // time 45 ms, counter 2, trend equal to the last
        assert_eq!(t.usage(), Usage::Overusing);
        assert_eq!((t.time_over_using, t.overuse_counter), (Some(0.0), 0));
        // A falling trend does not signal over-use.
        let mut t = fresh();
        t.detect(0.1, 30.0, 1000.0);
        t.detect(0.09, 30.0, 1000.0);
        assert_eq!(t.usage(), Usage::Normal);
        // Below −threshold: under-use at once.
        let mut t = fresh();
        t.detect(-0.1, 30.0, 1000.0);
        assert_eq!(t.usage(), Usage::Underusing);
        // Fewer than two deltas: always normal.
        let mut t = Trendline {
            num_deltas: 1,
            ..Trendline::default()
        };
        t.detect(1.0, 30.0, 1000.0);
        t.detect(1.0, 30.0, 1000.0);
        assert_eq!(t.usage(), Usage::Normal);
    }

    #[test]
    fn link_capacity_smooths_overuse_samples_with_alpha_0_05_and_a_normalised_deviation() {
        // LinkCapacityEstimator::Update(sample, alpha = 0.05): e = (1−α)e + α·s (the first
        // sample is taken whole); deviation = (1−α)·dev + α·(e − s)²/max(e, 1), clamped to
        // [0.4, 2.5]; bounds e ± 3·sqrt(dev·e).
        let mut c = LinkCapacity {
            estimate_kbps: None,
            deviation_kbps: 0.4,
        };
        assert_eq!((c.upper_kbps(), c.lower_kbps()), (f64::INFINITY, 0.0));
        c.on_overuse(1000.0);
        // dev = 0.95·0.4 = 0.38, clamped up to 0.4; bounds 1000 ± 3·sqrt(400) = 1000 ± 60.
        assert_eq!(c.estimate_kbps, Some(1000.0));
        assert_eq!(c.deviation_kbps, 0.4);
        assert!((c.upper_kbps() - 1060.0).abs() < 1e-9 && (c.lower_kbps() - 940.0).abs() < 1e-9);
        c.on_overuse(900.0);
        // e = 995; dev = 0.38 + 0.05·95²/995 = 0.833517…
        let dev = 0.38 + 0.05 * 9025.0 / 995.0;
        assert!((c.estimate_kbps.unwrap() - 995.0).abs() < 1e-9);
        assert!(
            (c.deviation_kbps - dev).abs() < 1e-12,
            "{}",
            c.deviation_kbps
        );
        assert!((c.upper_kbps() - (995.0 + 3.0 * (dev * 995.0).sqrt())).abs() < 1e-9);
        // A far sample saturates the deviation at 2.5.
        c.on_overuse(100.0);
        assert_eq!(c.deviation_kbps, 2.5);
    }

    #[test]
    fn a_burst_arrives_faster_than_sent_within_5_ms_and_100_ms_of_the_first_arrival() {
        // InterArrivalDelta::BelongsToBurst: same send time, or propagation delta < 0 and
        // arrival delta <= kBurstDeltaThreshold (5 ms) and arrival − first arrival <
        // kMaxBurstDuration (100 ms).
        let g = group(10.0, 50.0, 52.0);
        let ms = |x: f64| Nanos((x * 1e6) as u64);
        // Sent 3 ms later, arrived 2 ms later: propagation −1 ms.
        assert!(InterArrival::belongs_to_burst(&g, ms(54.0), ms(13.0)));
        // Propagation exactly 0 is not a burst (strictly negative).
        assert!(!InterArrival::belongs_to_burst(&g, ms(55.0), ms(13.0)));
        // Arrival delta exactly 5 ms (sent 6 ms later) still is; 5 ms + 1 µs is not.
        assert!(InterArrival::belongs_to_burst(&g, ms(57.0), ms(16.0)));
        assert!(!InterArrival::belongs_to_burst(&g, ms(57.001), ms(16.0)));
        // The same send time always belongs, however late it arrives.
        assert!(InterArrival::belongs_to_burst(&g, ms(500.0), ms(10.0)));
        // 100 ms after the group's first arrival the burst ends.
        let long = group(10.0, 0.0, 98.0);
        assert!(InterArrival::belongs_to_burst(&long, ms(99.9), ms(13.0)));
        assert!(!InterArrival::belongs_to_burst(&long, ms(100.0), ms(13.0)));
    }

    #[test]
    fn acked_bitrate_first_sample_spans_500_ms_then_bayesian_updates_over_150_ms() {
        // BitrateEstimator::Update: the first window is kInitialRateWindowMs (500 ms), the
        // sample 8·bytes/window kb/s becomes the estimate; then 150 ms windows combine with
        // sample_var = (10·|e − s|/e)², pred_var = var + 5:
        // e' = (sample_var·e + pred_var·s)/(sample_var + pred_var),
        // var' = sample_var·pred_var/(sample_var + pred_var).
        let mut a = AckedBitrate::default();
        a.update(Nanos::ZERO, 1000);
        assert_eq!(a.bitrate_bps(), None);
        a.update(Nanos::from_ms(499), 0);
        assert_eq!(a.bitrate_bps(), None);
        a.update(Nanos::from_ms(500), 0);
        // 8·1000 B / 500 ms = 16 kb/s.
        assert_eq!(a.bitrate_bps(), Some(16_000.0));
        let mut a = AckedBitrate {
            sum_bytes: 15_000.0,
            current_window_ms: 140,
            prev_time_ms: Some(0),
            estimate_kbps: Some(1000.0),
            var: 50.0,
        };
        a.update(Nanos::from_ms(10), 500);
        // Sample 8·15 000/150 = 800 kb/s; sample_var (10·200/1000)² = 4, pred_var 55:
        // e' = (4·1000 + 55·800)/59 = 813.5593…, var' = 220/59 = 3.7288….
        let e = a.bitrate_bps().unwrap() / 1e3;
        assert!((e - 48_000.0 / 59.0).abs() < 1e-9, "{e}");
        assert!((a.var - 220.0 / 59.0).abs() < 1e-12, "{}", a.var);
        // The acknowledged bytes of this call open the next window.
        assert_eq!((a.sum_bytes, a.current_window_ms), (500.0, 0));
    }

    /// A one-way delay growing by `slope` ms per ms of arrival time: group deltas of 10 ms
    /// sent, 10·(1 + slope) ms received. The accumulated delay is then a ramp and the
    /// smoothed one a ramp delayed by the filter, whose least-squares slope over 20 points
    /// tends to the same `slope` once the 0.9 smoothing has settled (exactly, up to 0.9^k).
    #[test]
    fn trendline_slope_of_a_delay_ramp_is_the_ramp() {
        let mut t = Trendline::default();
        let slope = 0.05;
        let mut arrival = 0.0;
        for _ in 0..400 {
            arrival += 10.0 * (1.0 + slope);
            t.update(10.0 * (1.0 + slope), 10.0, arrival);
        }
        // Arrival spacing 10.5 ms, delay +0.5 ms per group: slope per arrival ms = 0.5/10.5.
        let want = 0.5 / 10.5;
        assert!((t.trend() - want).abs() < 1e-9, "{} vs {want}", t.trend());
    }

    /// The least-squares fit itself, exact on a line.
    #[test]
    fn linear_fit_is_exact_on_a_line() {
        let pts: Vec<(f64, f64)> = (0..20)
            .map(|i| (i as f64 * 3.0, 2.0 + 0.25 * i as f64 * 3.0))
            .collect();
        assert_eq!(linear_fit_slope(pts.iter().copied()), Some(0.25));
    }

    /// Flat delay: normal; the threshold falls by k_down·(|m| − γ)·Δt per group toward 6.
    #[test]
    fn flat_delay_is_normal_and_the_threshold_adapts_by_k_down() {
        let mut t = Trendline::default();
        // The first delta only counts (fewer than 2), the second starts the clock.
        t.update(10.0, 10.0, 10.0);
        t.update(10.0, 10.0, 20.0);
        assert_eq!(t.usage(), Usage::Normal);
        assert_eq!(t.threshold, 12.5);
        t.update(10.0, 10.0, 30.0);
        assert_eq!(t.usage(), Usage::Normal);
        // m = 0: γ = 12.5 + 0.039·(0 − 12.5)·10 = 7.625.
        assert!((t.threshold - 7.625).abs() < 1e-12, "{}", t.threshold);
        t.update(10.0, 10.0, 40.0);
        assert_eq!(t.threshold, 6.0);
    }

    /// Above the threshold by less than 15 ms, γ rises by k_up·(|m| − γ)·Δt.
    #[test]
    fn the_threshold_rises_by_k_up() {
        let mut t = Trendline {
            threshold: 12.5,
            num_deltas: 60,
            last_update_ms: Some(0.0),
            ..Default::default()
        };
        t.update_threshold(20.0, 10.0);
        assert!((t.threshold - (12.5 + K_UP * 7.5 * 10.0)).abs() < 1e-12);
        // More than 15 ms beyond it: no adaptation.
        let g = t.threshold;
        t.update_threshold(g + 15.5, 20.0);
        assert_eq!(t.threshold, g);
    }

    /// A steep ramp: the modified trend exceeds γ; "overusing" comes once more than 10 ms of
    /// send time has been spent over it (first sample counts half its delta) with ≥ 2 samples.
    #[test]
    fn overuse_is_signalled_after_the_time_threshold() {
        let mut t = Trendline::default();
        // Fill the window with a flat history so the slope is known, then ramp.
        let mut arrival = 0.0;
        let mut states = Vec::new();
        for i in 0..60 {
            let recv = if i < 20 { 5.0 } else { 6.0 }; // +1 ms per 5 ms group
            arrival += recv;
            t.update(recv, 5.0, arrival);
            states.push((t.usage(), t.time_over_using));
        }
        let first_over = states.iter().position(|s| s.1.is_some()).unwrap();
        // First sample over: 2.5 ms; then 7.5, 12.5 > 10 → overuse at the third.
        assert_eq!(states[first_over].1, Some(2.5));
        assert_eq!(states[first_over + 1].1, Some(7.5));
        assert_eq!(states[first_over + 1].0, Usage::Normal);
        assert_eq!(states[first_over + 2].0, Usage::Overusing);
    }

    /// What the detector cannot see. A sender at r × the bottleneck rate C behind a standing
    /// queue: groups leave 10 ms apart and arrive 10·r ms apart, so the delay slope per
    /// arrival ms is 1 − 1/r and the modified trend tends (from below) to
    /// min(num_deltas, 60) × 4 × (1 − 1/r) = 240·(1 − 1/r). After a quiet link has brought the
    /// threshold to its 6 ms floor, that is "normal" for ever when 240·(1 − 1/r) < 6, i.e.
    /// r < 1/0.975 = 1.0256 (a sender less than 2.56 % above C fills a queue unseen), and
    /// "overusing" once it is above: the first sample over counts half its 10 ms send delta,
    /// the second brings 15 ms > 10 ms with 2 samples, and the trend is still rising.
    #[test]
    fn a_rate_less_than_2_56_percent_above_the_bottleneck_is_never_overuse() {
        let run = |r: f64| {
            let mut t = Trendline::default();
            let mut arrival = 0.0;
            for _ in 0..200 {
                arrival += 10.0;
                t.update(10.0, 10.0, arrival);
            }
            assert_eq!(t.threshold, 6.0);
            let mut seen = Vec::new();
            for _ in 0..200 {
                arrival += 10.0 * r;
                t.update(10.0 * r, 10.0, arrival);
                let m = t.num_deltas.min(MIN_NUM_DELTAS) as f64 * t.trend() * THRESHOLD_GAIN;
                seen.push((m, t.threshold, t.usage()));
            }
            seen
        };
        let below = run(1.025);
        assert!(below
            .iter()
            .all(|&(_, g, u)| u == Usage::Normal && g == 6.0));
        let m_end = below.last().unwrap().0;
        let want = 240.0 * (1.0 - 1.0 / 1.025); // 5.8537
        assert!(m_end < want && want - m_end < 1e-6, "{m_end} vs {want}");
        let above = run(1.0265);
        let over = above
            .iter()
            .position(|&(m, g, _)| m > g)
            .expect("m passes the floor");
        assert_eq!(above[over].2, Usage::Normal);
        assert_eq!(above[over + 1].2, Usage::Overusing);
        assert!(above[over + 1..]
            .iter()
            .all(|&(_, _, u)| u == Usage::Overusing));
    }

    /// `TimeToReduceFurther`: an over-use cuts again only once the RTT, clamped to
    /// [10, 200] ms, has passed since the last change, or at once when the acknowledged rate
    /// is under half the estimate. In the increase state every report is a change, so with a
    /// long queue (RTT ≥ 200 ms) an over-use must hold for 200 ms of reports before it cuts.
    #[test]
    fn an_overuse_cuts_only_a_clamped_rtt_after_the_last_change() {
        let mut a = Aimd::new(20e6, 1e5);
        a.set_rtt(Nanos::from_ms(450));
        a.update(Usage::Normal, Some(20e6), Nanos::from_ms(1000));
        assert!(!a.time_to_reduce_further(Nanos::from_ms(1199), 20e6));
        assert!(a.time_to_reduce_further(Nanos::from_ms(1200), 20e6));
        let half = 0.5 * a.rate_bps();
        assert!(!a.time_to_reduce_further(Nanos::from_ms(1025), half));
        assert!(a.time_to_reduce_further(Nanos::from_ms(1025), half - 1.0));
        a.set_rtt(Nanos::from_ms(5));
        assert!(!a.time_to_reduce_further(Nanos::from_ms(1009), 20e6));
        assert!(a.time_to_reduce_further(Nanos::from_ms(1010), 20e6));
    }

    /// Near the link-capacity estimate (set by an over-use) the increase is additive,
    /// `GetNearMaxIncreaseRateBpsPerSecond`: one average packet of a 30 fps frame (frame
    /// split into ceil(frame / 1200 B) packets) per 2·(RTT + 100 ms), at least 4 kb/s per s.
    #[test]
    fn near_the_capacity_estimate_the_increase_is_one_packet_per_response_time() {
        let climb = |acked: f64, rtt_ms: u64| {
            let mut a = Aimd::new(2.0 * acked, 1e4);
            a.set_rtt(Nanos::from_ms(rtt_ms));
            a.update(Usage::Overusing, Some(acked), Nanos::from_secs(1));
            let start = a.rate_bps();
            assert_eq!(start, 0.85 * acked - 5000.0);
            // Hold → increase: Δt = 0, no step.
            assert_eq!(
                a.update(Usage::Normal, Some(acked), Nanos::from_secs(2)),
                start
            );
            a.update(Usage::Normal, Some(acked), Nanos::from_secs(3)) - start
        };
        // 20 Mb/s, RTT 40 ms: from 16.995 Mb/s, 70 812.5 B frames in 60 packets of
        // 1180.21 B = 9441.67 bits per 0.28 s.
        let inc = climb(20e6, 40);
        assert!((inc - 16.995e6 / 30.0 / 60.0 / 0.28).abs() < 1e-6, "{inc}");
        assert!((inc - 33_720.238).abs() < 1e-3, "{inc}");
        // 0.5 Mb/s, RTT 20 ms: from 420 kb/s, 1750 B frames in 2 packets of 875 B = 7000
        // bits per 0.24 s: 29 166.7 b/s per s, 6.9 % of the rate per second.
        let inc = climb(0.5e6, 20);
        assert!((inc - 7000.0 / 0.24).abs() < 1e-6, "{inc}");
        // From 20.5 kb/s: one 85.4 B frame = 683 bits per 0.24 s is below the 4 kb/s floor.
        assert_eq!(climb(0.03e6, 20), 4000.0);
    }

    /// On overuse the estimate becomes 0.85 × acknowledged − 5 kb/s.
    #[test]
    fn overuse_sets_0_85_of_the_acknowledged_rate() {
        let mut a = Aimd::new(10e6, 100e3);
        let r = a.update(Usage::Overusing, Some(8e6), Nanos::from_secs(1));
        assert_eq!(r, 0.85 * 8e6 - 5000.0);
        // Not below the current rate → capacity-based (0.85 × its estimate) only if lower.
        let r2 = a.update(Usage::Overusing, Some(9e6), Nanos::from_secs(2));
        assert_eq!(r2, r);
    }

    /// Far from a capacity estimate the increase is multiplicative, 8 % per second, and
    /// never above 1.5 × acknowledged + 10 kb/s.
    #[test]
    fn increase_is_eight_percent_per_second_capped_by_the_acknowledged_rate() {
        let mut a = Aimd::new(1e6, 100e3);
        // Hold → increase: Δt = 0, so the 1 kb/s minimum step.
        let r = a.update(Usage::Normal, Some(1e6), Nanos::from_secs(0));
        assert_eq!(r, 1_001_000.0);
        let r = a.update(Usage::Normal, Some(1e6), Nanos::from_secs(1));
        assert!((r - 1.08 * 1_001_000.0).abs() < 1e-6, "{r}");
        let r2 = a.update(Usage::Normal, Some(0.5e6), Nanos::from_secs(2));
        assert_eq!(r2, r); // above 1.5·0.5 + 0.01 = 0.76 Mb/s: no increase
    }

    fn result(seq: u64, send_us: u64, recv_us: u64) -> crate::rt::feedback::PacketResult {
        use crate::rt::feedback::{PacketResult, SentPacket};
        PacketResult {
            sent: SentPacket {
                seq,
                size_bytes: 1200,
                send_time: Nanos(send_us * 1000),
            },
            receive_time: Some(Nanos(recv_us * 1000)),
            ecn: crate::packet::Ecn::NotEct,
        }
    }

    /// `kStreamTimeOut`: a report more than 2 s after the last packet seen starts the send
    /// groups afresh (exactly 2 s does not): the group open before the gap is forgotten.
    #[test]
    fn two_seconds_without_packets_reset_the_groups() {
        let gap = |silence_ms: u64| {
            let mut d = DelayBasedBwe::new(1e6, 1e5);
            let msg = |at_ms: u64, p| TransportPacketsFeedback {
                feedback_time: Nanos::from_ms(at_ms),
                packets: vec![p],
                data_in_flight_bytes: 0,
            };
            let rtt = Nanos::from_ms(40);
            d.on_feedback(&msg(100, result(1, 0, 20_000)), rtt, None);
            d.on_feedback(&msg(100, result(2, 10_000, 30_000)), rtt, None);
            let at = 100 + silence_ms;
            let send_us = at * 1000 - 20_000;
            d.on_feedback(&msg(at, result(3, send_us, at * 1000)), rtt, None);
            d.inter.prev.is_some()
        };
        // Kept: packet 3 closes packet 2's group, which becomes `prev`; reset: packet 3 opens
        // the first group again and there is no `prev`.
        assert!(gap(2000));
        assert!(!gap(2001));
    }

    /// `MaybeUpdateEstimate`: not over-using, a probe result sets the estimate to it
    /// (`SetEstimate`), up or down, and reports that it did; with no result AIMD runs.
    #[test]
    fn a_probe_result_sets_the_estimate_when_not_overusing() {
        let fb = |t: u64| TransportPacketsFeedback {
            feedback_time: Nanos(t * 1000),
            packets: vec![result(1, t, t + 20_000)],
            data_in_flight_bytes: 0,
        };
        let mut d = DelayBasedBwe::new(1e6, 1e5);
        assert!(d.on_feedback(&fb(0), Nanos::from_ms(40), Some(5.7e6)));
        assert_eq!(d.rate_bps(), 5.7e6);
        assert!(d.on_feedback(&fb(30_000), Nanos::from_ms(40), Some(4.2e6)));
        assert_eq!(d.rate_bps(), 4.2e6);
        assert!(!d.on_feedback(&fb(60_000), Nanos::from_ms(40), None));
        // Below the floor: the floor.
        assert!(d.on_feedback(&fb(90_000), Nanos::from_ms(40), Some(5e4)));
        assert_eq!(d.rate_bps(), 1e5);
    }

    /// One report carrying packets drives the groups, the trendline and the acknowledged
    /// bitrate exactly as one feedback per packet with the same samples: both see the same
    /// packets in the same order. They differ in the rate step only: goog_cc runs
    /// `MaybeUpdateEstimate` once per feedback message, so N per-packet messages at the
    /// report's instant take N AIMD steps where the report takes one (each extra step at
    /// Δt = 0 adds the 1 kb/s minimum increase).
    #[test]
    fn a_report_drives_the_detector_as_per_packet_feedback_and_the_rate_once() {
        // A packet every 1 ms; one-way delay growing 0.2 ms per 5 ms group from 100 ms on
        // (a queue building), reports every 25 ms of arrival.
        let pkts: Vec<_> = (0..1500u64)
            .map(|i| {
                let send = i * 1000;
                let extra = if i >= 100 { (i - 100) * 40 } else { 0 };
                result(i + 1, send, send + 20_000 + extra)
            })
            .collect();
        let rtt = Nanos::from_ms(40);
        // `a` takes `chunk` as one report at `at`, `b` as one message per packet at `at`.
        let feed = |a: &mut DelayBasedBwe, b: &mut DelayBasedBwe, chunk: &[_], at: Nanos| {
            let msg = |packets: Vec<_>| TransportPacketsFeedback {
                feedback_time: at,
                packets,
                data_in_flight_bytes: 0,
            };
            a.on_feedback(&msg(chunk.to_vec()), rtt, None);
            for p in chunk {
                b.on_feedback(&msg(vec![*p]), rtt, None);
            }
        };
        let mut a = DelayBasedBwe::new(1e6, 1e5);
        let mut b = a.clone();
        let mut seen_overuse = false;
        for chunk in pkts.chunks(25) {
            let at = chunk.last().unwrap().receive_time.unwrap() + Nanos::from_ms(1);
            feed(&mut a, &mut b, chunk, at);
            assert_eq!(a.trendline.trend(), b.trendline.trend());
            assert_eq!(a.trendline.threshold, b.trendline.threshold);
            assert_eq!(a.trendline.usage(), b.trendline.usage());
            assert_eq!(a.acked.bitrate_bps(), b.acked.bitrate_bps());
            seen_overuse |= a.trendline.usage() == Usage::Overusing;
        }
        assert!(
            seen_overuse,
            "the ramp must reach overuse for the test to mean anything"
        );
        // The rate: fresh estimators, one report of 25 packets at one instant. The first
        // message moves hold → increase with Δt = 0: +1 kb/s; the per-packet path takes 24
        // more such steps.
        let mut a = DelayBasedBwe::new(1e6, 1e5);
        let mut b = a.clone();
        feed(&mut a, &mut b, &pkts[..25], Nanos::from_ms(50));
        assert_eq!(a.rate_bps(), 1_001_000.0);
        assert_eq!(b.rate_bps(), 1_025_000.0);
    }

    /// `AimdRateControl::ChangeBitrate` keeps the link-capacity estimate only while the
    /// acknowledged rate stays inside its bounds: above `UpperBound` on increase, or below
    /// `LowerBound` on decrease, it is reset (and the decrease's `Update` then takes the
    /// sample whole).
    #[test]
    fn the_capacity_estimate_is_reset_when_the_acked_rate_leaves_its_bounds() {
        let mut a = Aimd::new(2e6, 1e4);
        // First over-use at 1000 kb/s: the estimate is the sample, bounds 1000 ± 60 kb/s.
        a.update(Usage::Overusing, Some(1e6), Nanos::from_secs(1));
        assert_eq!(a.link.estimate_kbps, Some(1000.0));
        // 950 kb/s is inside [940, 1060]: smoothed, 0.95·1000 + 0.05·950 = 997.5.
        a.update(Usage::Overusing, Some(0.95e6), Nanos::from_secs(2));
        assert!((a.link.estimate_kbps.unwrap() - 997.5).abs() < 1e-9);
        // 500 kb/s is below the lower bound: reset, then the sample is taken whole.
        a.update(Usage::Overusing, Some(0.5e6), Nanos::from_secs(3));
        assert_eq!(a.link.estimate_kbps, Some(500.0));
        // Hold → increase at 510 kb/s (inside 500 ± 3·sqrt(dev·500)): kept.
        a.update(Usage::Normal, Some(0.51e6), Nanos::from_secs(4));
        assert_eq!(a.link.estimate_kbps, Some(500.0));
        // 700 kb/s is above the upper bound (at most 500 + 3·sqrt(2.5·500) ≈ 606): reset.
        a.update(Usage::Normal, Some(0.7e6), Nanos::from_secs(5));
        assert_eq!(a.link.estimate_kbps, None);
        // Exactly at a bound is inside (strict comparisons): 940 kb/s against [940, 1060].
        let mut a = Aimd::new(2e6, 1e4);
        a.update(Usage::Overusing, Some(1e6), Nanos::from_secs(1));
        assert_eq!(a.link.lower_kbps(), 940.0);
        a.update(Usage::Overusing, Some(0.94e6), Nanos::from_secs(2));
        assert!((a.link.estimate_kbps.unwrap() - 997.0).abs() < 1e-9);
    }

    /// `InterArrivalDelta::NewTimestampGroup`: a packet opens a new group only when sent more
    /// than 5 ms (`kSendTimeGroupLength`) after the group's first; 5 ms exactly joins it.
    /// Groups {100, 105 ms} (completed at 160 ms) and {110.001 ms} (170 ms): deltas 5.001 and
    /// 10 ms.
    #[test]
    fn a_group_spans_packets_sent_within_5_ms_of_its_first() {
        let ms = |x: f64| Nanos::from_secs_f64(x * 1e-3);
        let mut ia = InterArrival::default();
        assert_eq!(ia.compute_deltas(ms(100.0), ms(150.0)), None);
        assert_eq!(ia.compute_deltas(ms(105.0), ms(160.0)), None);
        assert!(ia.prev.is_none());
        assert_eq!(ia.compute_deltas(ms(110.001), ms(170.0)), None);
        let (send, arrival) = ia.compute_deltas(ms(116.0), ms(180.0)).unwrap();
        assert!((send - 5.001).abs() < 1e-9 && (arrival - 10.0).abs() < 1e-9);
    }

    /// `InterArrivalDelta::ComputeDeltas`: a packet sent before the current group's first
    /// packet is reordered and ignored; one with the same send time joins the group and moves
    /// its completion time.
    #[test]
    fn a_reordered_packet_is_ignored_and_a_same_send_time_one_joins_the_group() {
        let ms = |x: u64| Nanos::from_ms(x);
        let mut ia = InterArrival::default();
        assert_eq!(ia.compute_deltas(ms(10), ms(50)), None);
        // Sent at 5 ms, before the group's first (10 ms): ignored, the group unchanged.
        assert_eq!(ia.compute_deltas(ms(5), ms(51)), None);
        let g = ia.cur.unwrap();
        assert_eq!((g.first_send, g.send, g.complete), (ms(10), ms(10), ms(50)));
        // Sent at 10 ms too, arriving at 60 ms: same group, completed at 60 ms.
        assert_eq!(ia.compute_deltas(ms(10), ms(60)), None);
        assert_eq!(ia.cur.unwrap().complete, ms(60));
        assert!(ia.prev.is_none());
    }
}
