//! Round-trip time estimation and retransmission timeout (RFC 6298 §2, §5.5–5.7).
//! srtt/rttvar updated with α = 1/8, β = 1/4 in integer nanoseconds; RTO = srtt + max(4·rttvar,
//! min_rto) as Linux `tcp_rtt_estimator`/`__tcp_set_rto` floor it, with binary backoff.

use crate::time::Nanos;

/// Clock granularity G of RFC 6298 §2 (the Linux jiffy at HZ=1000).
pub const CLOCK_GRANULARITY: Nanos = Nanos::from_ms(1);
/// RTO before any sample (RFC 6298 §2.1), also the SYN timeout (Linux `TCP_TIMEOUT_INIT`).
pub const INITIAL_RTO: Nanos = Nanos::from_secs(1);

/// RFC 6298 RTT estimator: srtt, rttvar and the backed-off retransmission timeout.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Nanos,
    rttvar: Nanos,
    has_sample: bool,
    min_rto: Nanos,
    max_rto: Nanos,
    /// Number of consecutive timeouts (Linux `icsk_backoff`).
    backoff: u32,
}

impl RttEstimator {
    /// No sample yet: the RTO is `INITIAL_RTO` within [min_rto, max_rto].
    pub fn new(min_rto: Nanos, max_rto: Nanos) -> Self {
        RttEstimator {
            srtt: Nanos::ZERO,
            rttvar: Nanos::ZERO,
            has_sample: false,
            min_rto,
            max_rto,
            backoff: 0,
        }
    }

    /// RFC 6298 §2.2 (first sample) and §2.3 (later samples). A valid sample also ends the
    /// backoff (§5.7; Linux resets `icsk_backoff` in `tcp_ack_update_rtt`).
    pub fn on_sample(&mut self, r: Nanos) {
        if !self.has_sample {
            self.srtt = r;
            self.rttvar = Nanos(r.0 / 2);
            self.has_sample = true;
        } else {
            let diff = self.srtt.0.abs_diff(r.0);
            // rttvar = (1 - 1/4)·rttvar + 1/4·|srtt - R|; srtt = (1 - 1/8)·srtt + 1/8·R.
            self.rttvar = Nanos((3 * self.rttvar.0 + diff) / 4);
            self.srtt = Nanos((7 * self.srtt.0 + r.0) / 8);
        }
        self.backoff = 0;
    }

    /// A retransmission timer expired: back the timer off (RFC 6298 §5.5).
    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// At least one RTT sample was taken.
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
    /// Smoothed RTT (RFC 6298 SRTT).
    pub fn srtt(&self) -> Nanos {
        self.srtt
    }
    /// RTT variation (RFC 6298 RTTVAR).
    pub fn rttvar(&self) -> Nanos {
        self.rttvar
    }
    /// Consecutive timeouts (Linux `icsk_backoff`).
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// RTO without backoff: srtt + max(G, 4·rttvar, min_rto), at most max_rto; 1 s (at least
    /// min_rto) before the first sample. Linux floors the variance term, not the sum
    /// (`tcp_rtt_estimator`: `rttvar_us` ≥ `mdev_max_us` ≥ `tcp_rto_min_us`; `__tcp_set_rto`
    /// = srtt + rttvar_us), so the timer never fires within min_rto of one srtt; RFC 6298
    /// §2.4's max(min_rto, srtt + 4·rttvar) would fire during every fast recovery once srtt
    /// approaches min_rto.
    pub fn base_rto(&self) -> Nanos {
        let rto = if self.has_sample {
            self.srtt
                + CLOCK_GRANULARITY
                    .max(Nanos(4 * self.rttvar.0))
                    .max(self.min_rto)
        } else {
            INITIAL_RTO.max(self.min_rto)
        };
        rto.min(self.max_rto)
    }

    /// The timer to arm now: base RTO doubled per backoff step, at most max_rto.
    pub fn rto(&self) -> Nanos {
        let base = self.base_rto();
        if self.backoff == 0 {
            // The usual case (every ACK re-arms the timer): base_rto is already capped.
            return base;
        }
        let base = base.0 as u128;
        let shifted = base << self.backoff.min(64);
        Nanos(shifted.min(self.max_rto.0 as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(Nanos::from_ms(200), Nanos::from_secs(120))
    }

    #[test]
    fn rfc6298_exact_updates() {
        let mut e = est();
        // §2.1: 1 s before any sample.
        assert_eq!(e.rto(), Nanos::from_secs(1));
        // First sample R = 100 ms: srtt = 100, rttvar = 50, RTO = 100 + 4·50 = 300 ms.
        e.on_sample(Nanos::from_ms(100));
        assert_eq!(e.srtt(), Nanos::from_ms(100));
        assert_eq!(e.rttvar(), Nanos::from_ms(50));
        assert_eq!(e.rto(), Nanos::from_ms(300));
        // R = 200 ms: rttvar = 3/4·50 + 1/4·|100-200| = 62.5; srtt = 7/8·100 + 1/8·200 = 112.5;
        // RTO = 112.5 + 250 = 362.5 ms.
        e.on_sample(Nanos::from_ms(200));
        assert_eq!(e.rttvar(), Nanos::from_us(62_500));
        assert_eq!(e.srtt(), Nanos::from_us(112_500));
        assert_eq!(e.rto(), Nanos::from_us(362_500));
        // R = 100 ms: rttvar = 3/4·62.5 + 1/4·12.5 = 50; srtt = 7/8·112.5 + 12.5 = 110.9375;
        // RTO = 110.9375 + 200 = 310.9375 ms.
        e.on_sample(Nanos::from_ms(100));
        assert_eq!(e.rttvar(), Nanos::from_ms(50));
        assert_eq!(e.srtt(), Nanos(110_937_500));
        assert_eq!(e.rto(), Nanos(310_937_500));
    }

    #[test]
    fn min_rto_and_granularity_apply() {
        let mut e = est();
        // R = 10 ms: 4·rttvar = 20 ms < min_rto, so RTO = srtt + min_rto = 210 ms (Linux
        // floors rttvar_us at tcp_rto_min; RFC 6298 §2.4 would give max(200, 30) = 200 ms).
        e.on_sample(Nanos::from_ms(10));
        assert_eq!(e.rto(), Nanos::from_ms(210));
        // Many identical samples drive rttvar to 0: RTO = srtt + G, still floored at min_rto.
        let mut e = RttEstimator::new(Nanos::ZERO, Nanos::from_secs(120));
        for _ in 0..200 {
            e.on_sample(Nanos::from_ms(10));
        }
        assert_eq!(e.rttvar(), Nanos::ZERO);
        assert_eq!(e.rto(), Nanos::from_ms(11));
    }

    #[test]
    fn backoff_doubles_until_max_and_resets_on_sample() {
        let mut e = est();
        e.on_sample(Nanos::from_ms(100)); // RTO 300 ms
        e.on_timeout();
        assert_eq!(e.rto(), Nanos::from_ms(600));
        e.on_timeout();
        assert_eq!(e.rto(), Nanos::from_ms(1200));
        for _ in 0..20 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), Nanos::from_secs(120));
        e.on_sample(Nanos::from_ms(100));
        assert_eq!(e.backoff(), 0);
        // rttvar = 3/4·50 + 0 = 37.5; 4·rttvar = 150 < min_rto: RTO = 100 + 200 = 300 ms.
        assert_eq!(e.rto(), Nanos::from_ms(300));
    }

    #[test]
    fn rto_stays_min_rto_above_srtt_at_long_rtt() {
        // 200 identical samples of 200 ms drive rttvar to 0. Linux keeps rttvar_us ≥
        // tcp_rto_min (200 ms), so RTO = 200 + 200 = 400 ms. RFC 6298's max(min_rto, srtt +
        // max(G, 4·rttvar)) gives 201 ms: one srtt, so the timer fired before the fast
        // retransmission of a single drop could be acknowledged.
        let mut e = est();
        for _ in 0..200 {
            e.on_sample(Nanos::from_ms(200));
        }
        assert_eq!(e.rttvar(), Nanos::ZERO);
        assert_eq!(e.rto(), Nanos::from_ms(400));
    }
}
