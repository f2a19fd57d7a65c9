//! PI2 base AQM: the proportional-integral controller that updates the base probability p'.
//! Follows Linux `calculate_probability` (sch_dualpi2.c) and RFC 9332 §A.1 `dualpi2_update`.
//!
//! Units. Linux takes alpha/beta over netlink in 1/256 Hz, scales them by
//! `dualpi2_scale_alpha_beta` to `alpha·MAX_PROB/(4·10^9)` per nanosecond, multiplies by the
//! delay error in nanoseconds and divides by 64 (`__scale_delta`). Net effect, written in f64:
//!
//! ```text
//! p' += alpha[Hz] · (qdelay − target)[s] + beta[Hz] · (qdelay − prev_qdelay)[s]
//! ```
//!
//! i.e. alpha/beta multiply seconds of delay error and give probability per update. They are
//! NOT multiplied by tupdate (unlike RFC 9332's `alpha = alpha_U · Tupdate` form), so changing
//! `tupdate` changes the loop gain per second — as in Linux.
//!
//! Simplification (named): p' is an f64 in [0, 1], not Linux's u32 fraction of `MAX_PROB`.
//! Linux's integer scaling quantises the defaults to alpha ≈ 0.16007 Hz and beta ≈ 3.1978 Hz
//! (41/256 Hz → internal 44, 819/256 Hz → internal 879); we use the given f64 values exactly.
//! The test `linux_integer_update_matches_f64_units` shows the two agree to < 0.1 %.

use crate::time::Nanos;

/// The PI2 controller state.
#[derive(Clone, Debug)]
pub struct Pi2 {
    target: Nanos,
    alpha_hz: f64,
    beta_hz: f64,
    /// Upper bound on p': 1, or 1/k without drop_overload (Linux caps at `MAX_PROB / k`).
    max_p: f64,
    p_prime: f64,
    /// qdelay seen at the previous update (Linux `last_qdelay`).
    prev_qdelay: Nanos,
}

/// Signed difference a − b in seconds.
fn diff_secs(a: Nanos, b: Nanos) -> f64 {
    (a.as_ns() as i128 - b.as_ns() as i128) as f64 * 1e-9
}

impl Pi2 {
    /// A PI2 controller with p' = 0 (RFC 9332 §A.1 `alpha`, `beta`, `target`; p' ≤ `max_p`).
    pub fn new(target: Nanos, alpha_hz: f64, beta_hz: f64, max_p: f64) -> Self {
        Pi2 {
            target,
            alpha_hz,
            beta_hz,
            max_p,
            p_prime: 0.0,
            prev_qdelay: Nanos::ZERO,
        }
    }

    /// One PI update with the current queue delay (Linux: max of the two head sojourns).
    /// Returns the new p'.
    pub fn update(&mut self, qdelay: Nanos) -> f64 {
        let delta = self.alpha_hz * diff_secs(qdelay, self.target)
            + self.beta_hz * diff_secs(qdelay, self.prev_qdelay);
        self.prev_qdelay = qdelay;
        // Linux bounds new_prob to [0, MAX_PROB] (saturating u32), then caps at MAX_PROB/k
        // when drop_overload is off.
        self.p_prime = (self.p_prime + delta).clamp(0.0, 1.0).min(self.max_p);
        self.p_prime
    }

    /// The base probability p' after the last update (Linux `q->pi2_prob`).
    pub fn p_prime(&self) -> f64 {
        self.p_prime
    }

    /// The queue delay seen at the last update (Linux `last_qdelay`).
    pub fn prev_qdelay(&self) -> Nanos {
        self.prev_qdelay
    }

    /// Force p' (tests and experiments that want a fixed probability).
    pub fn set_p_prime(&mut self, p: f64) {
        self.p_prime = p.clamp(0.0, 1.0).min(self.max_p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux_default() -> Pi2 {
        Pi2::new(Nanos::from_ms(15), 0.16, 3.2, 1.0)
    }

    #[test]
    fn constant_25ms_sojourn_gives_closed_form() {
        // First update from p'=0, prev=0:
        //   0.16·(0.025−0.015) + 3.2·(0.025−0) = 0.0016 + 0.08 = 0.0816
        // Later updates: prev = 0.025, so the beta term is 0 and p' grows by 0.0016 each:
        //   p'_n = 0.0816 + (n−1)·0.0016; n = 10 → 0.0816 + 0.0144 = 0.096.
        let mut pi = linux_default();
        let q = Nanos::from_ms(25);
        assert!((pi.update(q) - 0.0816).abs() < 1e-12);
        for n in 2..=10u32 {
            let want = 0.0816 + (n - 1) as f64 * 0.0016;
            assert!((pi.update(q) - want).abs() < 1e-12, "update {n}");
        }
        assert!((pi.p_prime() - 0.096).abs() < 1e-12);
        assert_eq!(pi.prev_qdelay(), q);
    }

    #[test]
    fn clamps_at_one_and_zero() {
        let mut pi = linux_default();
        // qdelay 1 s: 0.16·0.985 + 3.2·1.0 = 3.3576 > 1 → clamped to 1.
        assert_eq!(pi.update(Nanos::from_secs(1)), 1.0);
        // Back to 0: 0.16·(−0.015) + 3.2·(0 − 1) = −3.2024 → 1 − 3.2024 < 0 → 0.
        assert_eq!(pi.update(Nanos::ZERO), 0.0);
        // Empty queue again: 0.16·(−0.015) = −0.0024 → stays 0 (no negative probability).
        assert_eq!(pi.update(Nanos::ZERO), 0.0);
    }

    #[test]
    fn qdelay_at_target_is_a_fixed_point() {
        let mut pi = linux_default();
        pi.update(Nanos::from_ms(25)); // 0.0816 as above
                                       // q = target: alpha term 0; beta term 3.2·(0.015−0.025) = −0.032 → 0.0496.
        assert!((pi.update(Nanos::from_ms(15)) - 0.0496).abs() < 1e-12);
        // From now on q = target = prev: both terms 0, p' constant.
        for _ in 0..50 {
            assert!((pi.update(Nanos::from_ms(15)) - 0.0496).abs() < 1e-12);
        }
    }

    #[test]
    fn cap_at_one_over_k_without_drop_overload() {
        // k = 2 and drop_overload off: Linux caps p' at MAX_PROB/k, here 1/2.
        let mut pi = Pi2::new(Nanos::from_ms(15), 0.16, 3.2, 0.5);
        assert_eq!(pi.update(Nanos::from_secs(1)), 0.5);
        pi.set_p_prime(0.9);
        assert_eq!(pi.p_prime(), 0.5);
    }

    #[test]
    fn linux_integer_update_matches_f64_units() {
        // Linux: pi2_alpha = ((41 · (2^32−1)) >> 2) / 10^9 = 44 (41 = round(0.16·256)),
        //        pi2_beta  = ((819 · (2^32−1)) >> 2) / 10^9 = 879 (819 = round(3.2·256)).
        let max_prob = u32::MAX as u64;
        let scale = |p: u64| ((p * max_prob) >> 2) / 1_000_000_000;
        assert_eq!(scale(41), 44);
        assert_eq!(scale(819), 879);
        // One update from prob 0 with qdelay 25 ms, prev 0, target 15 ms:
        // delta = 10^7·44 + 2.5·10^7·879 = 2.2415·10^10; >> 6 → 350_234_375 (of 2^32−1).
        let delta: u64 = 10_000_000 * 44 + 25_000_000 * 879;
        let linux_prob = (delta / 64) as f64 / max_prob as f64;
        assert!((linux_prob - 0.081546).abs() < 1e-6, "{linux_prob}");
        let mut pi = linux_default();
        let ours = pi.update(Nanos::from_ms(25)); // 0.0816
        assert!(
            ((ours - linux_prob) / ours).abs() < 1e-3,
            "{ours} vs {linux_prob}"
        );
    }
}
