//! The loss-based rate controller of Google Congestion Control, the Classic comparator of the
//! real-time sender. Follows draft-ietf-rmcat-gcc-02 §6 ("Loss-based controller").
//!
//! Faithful: on each report the fraction of packets lost since the previous report, f_l,
//! sets the target: f_l > 10 % → A·(1 − 0.5·f_l); f_l < 2 % → 1.05·A; otherwise unchanged.
//! Simplified (named): only the loss-based half of GCC (no delay-based trendline / arrival-time
//! filter, §5, so the target is A alone rather than min(A_delay, A_loss)); a report is
//! formed every `REPORT_INTERVAL` from the per-packet feedback counters (RTCP receiver reports
//! carry the same cumulative counts); with ECN enabled a CE mark counts as a loss (RFC 3168
//! §5: CE is treated as a drop).

use crate::rt::prague::FeedbackCounters;
use crate::time::Nanos;

/// How often the controller runs: one report per 100 ms.
pub const REPORT_INTERVAL: Nanos = Nanos::from_ms(100);

/// GCC loss-based controller state.
#[derive(Clone, Debug)]
pub struct GccLoss {
    rate_bps: f64,
    min_bps: f64,
    max_bps: f64,
    ce_is_loss: bool,
    last: FeedbackCounters,
    next_report: Option<Nanos>,
}

impl GccLoss {
    /// A controller starting at `init_bps`, kept in [`min_bps`, `max_bps`].
    pub fn new(init_bps: u64, min_bps: u64, max_bps: u64, ce_is_loss: bool) -> Self {
        GccLoss {
            rate_bps: init_bps as f64,
            min_bps: min_bps as f64,
            max_bps: max_bps as f64,
            ce_is_loss,
            last: FeedbackCounters::default(),
            next_report: None,
        }
    }

    /// New cumulative feedback at `now`; a report is evaluated once per `REPORT_INTERVAL`.
    pub fn on_feedback(&mut self, fb: FeedbackCounters, now: Nanos) {
        let due = *self.next_report.get_or_insert(now + REPORT_INTERVAL);
        if now < due {
            return;
        }
        self.next_report = Some(now + REPORT_INTERVAL);
        let recv = fb.received.saturating_sub(self.last.received);
        let mut lost = fb.lost.saturating_sub(self.last.lost);
        if self.ce_is_loss {
            lost += fb.ce.saturating_sub(self.last.ce);
        }
        self.last = fb;
        if recv + lost == 0 {
            return;
        }
        self.apply_loss_fraction(lost as f64 / (recv + lost) as f64);
    }

    /// draft-ietf-rmcat-gcc-02 §6, the rule itself.
    pub fn apply_loss_fraction(&mut self, f_l: f64) {
        if f_l > 0.10 {
            self.rate_bps *= 1.0 - 0.5 * f_l;
        } else if f_l < 0.02 {
            self.rate_bps *= 1.05;
        }
        self.rate_bps = self.rate_bps.clamp(self.min_bps, self.max_bps);
    }

    /// Target rate, bits/s.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// libwebrtc `SendSideBandwidthEstimation::SetSendBitrate` (a probe result).
    pub fn set_send_bitrate(&mut self, bps: f64) {
        self.rate_bps = bps.clamp(self.min_bps, self.max_bps);
    }

    /// libwebrtc `SendSideBandwidthEstimation::CapBitrateToThresholds`: the loss-based
    /// target never exceeds the delay-based limit.
    pub fn cap(&mut self, limit_bps: f64) {
        self.rate_bps = self.rate_bps.min(limit_bps).max(self.min_bps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_fraction_rules_of_section_6() {
        let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
        g.apply_loss_fraction(0.0);
        assert!((g.rate_bps() - 1_050_000.0).abs() < 1e-6);
        g.apply_loss_fraction(0.05); // between 2 % and 10 %: hold
        assert!((g.rate_bps() - 1_050_000.0).abs() < 1e-6);
        g.apply_loss_fraction(0.2); // 1 − 0.5·0.2 = 0.9
        assert!((g.rate_bps() - 945_000.0).abs() < 1e-6);
    }

    #[test]
    fn loss_fraction_of_exactly_ten_and_two_percent_holds_the_rate() {
        // draft-ietf-rmcat-gcc-02 §6: strict f_l > 0.1 and f_l < 0.02; both bounds hold A.
        let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
        g.apply_loss_fraction(0.10);
        assert_eq!(g.rate_bps(), 1_000_000.0);
        g.apply_loss_fraction(0.02);
        assert_eq!(g.rate_bps(), 1_000_000.0);
    }

    #[test]
    fn a_report_is_formed_once_per_interval_from_the_counter_deltas() {
        // First feedback at 0 arms the report at 100 ms; feedback at 99 ms is ignored.
        // At 100 ms: received 80, lost 0, CE 20 counted as loss: f_l = 20/100 = 0.2,
        // A = 1e6·(1 − 0.1) = 900 000. Next report due at 200 ms with deltas from 100 ms.
        let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, true);
        let fb = |received, ce, lost| FeedbackCounters { received, ce, lost };
        g.on_feedback(fb(0, 0, 0), Nanos::ZERO);
        g.on_feedback(fb(80, 20, 0), Nanos::from_ms(99));
        assert_eq!(g.rate_bps(), 1_000_000.0);
        g.on_feedback(fb(80, 20, 0), Nanos::from_ms(100));
        assert!((g.rate_bps() - 900_000.0).abs() < 1e-6);
        // 199 ms is inside the next interval: ignored, its counters not taken as the base.
        g.on_feedback(fb(90, 20, 0), Nanos::from_ms(199));
        assert!((g.rate_bps() - 900_000.0).abs() < 1e-6);
        // 200 ms: 99 more received, 1 lost: f_l = 0.01 < 2 %: A = 945 000.
        g.on_feedback(fb(179, 20, 1), Nanos::from_ms(200));
        assert!((g.rate_bps() - 945_000.0).abs() < 1e-6);
        // 300 ms: 10 received, 10 lost: f_l = 0.5 → ×(1 − 0.25) = 708 750.
        g.on_feedback(fb(189, 20, 11), Nanos::from_ms(300));
        assert!((g.rate_bps() - 708_750.0).abs() < 1e-6);
        // Without ce_is_loss the same CE deltas are not a loss: f_l = 0 → ×1.05.
        let mut h = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
        h.on_feedback(fb(0, 0, 0), Nanos::ZERO);
        h.on_feedback(fb(80, 20, 0), Nanos::from_ms(100));
        assert!((h.rate_bps() - 1_050_000.0).abs() < 1e-6);
    }

    #[test]
    fn probe_result_and_delay_cap_are_clamped_to_the_bounds() {
        // SetSendBitrate clamps to [min, max]; CapBitrateToThresholds keeps min(A, limit) >= min.
        let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
        g.set_send_bitrate(20_000_000.0);
        assert_eq!(g.rate_bps(), 10_000_000.0);
        g.set_send_bitrate(50_000.0);
        assert_eq!(g.rate_bps(), 100_000.0);
        g.set_send_bitrate(2_000_000.0);
        g.cap(1_500_000.0);
        assert_eq!(g.rate_bps(), 1_500_000.0);
        g.cap(3_000_000.0);
        assert_eq!(g.rate_bps(), 1_500_000.0);
        g.cap(10_000.0);
        assert_eq!(g.rate_bps(), 100_000.0);
    }
}
