//! Airtime Queue Limits: how much estimated airtime a station's TXQ may have handed to the
//! driver and not yet seen TX status for. Linux `include/net/cfg80211.h`
//! (`IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L/H`, `IEEE80211_AQL_THRESHOLD`), `net/mac80211/tx.c`
//! (`ieee80211_txq_airtime_check`, `ieee80211_txq_schedule_airtime_check`) and
//! `net/mac80211/sta_info.c` (`ieee80211_sta_update_pending_airtime`).
//!
//! The pending airtime itself is kept where the charge is made: [`super::ampdu::TxSession`]
//! adds each packet's airtime estimate when the driver dequeues it from the TXQ and subtracts
//! it on TX status (acknowledged, or given up after the retry limit), as mac80211 charges
//! `tx_time_est` in `ieee80211_tx_dequeue` and releases it in `ieee80211_tx_status`. This file
//! holds the limits and the two checks. Only drivers that set `NL80211_EXT_FEATURE_AQL`
//! (ath10k, mt76, ...) have AQL; of the others, ath9k is `driver = "ath9k"` (its hardware
//! queue of two aggregates bounds what it holds) and a push driver is `ap = "driver_fifo"`.

use crate::time::Nanos;

/// `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L`: 5000 µs.
pub const AQL_TXQ_LIMIT_LOW: Nanos = Nanos(5_000_000);
/// `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H`: 12000 µs.
pub const AQL_TXQ_LIMIT_HIGH: Nanos = Nanos(12_000_000);
/// `IEEE80211_AQL_THRESHOLD`: 24000 µs over the interface.
pub const AQL_THRESHOLD: Nanos = Nanos(24_000_000);

/// The limits of one access category (`local->aql_txq_limit_low/high[ac]`, `aql_threshold`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AqlLimits {
    /// A station below this may always be served.
    pub low: Nanos,
    /// A station below this may be served while the interface is below `threshold`.
    pub high: Nanos,
    /// The interface's pending airtime above which every station is held to `low`.
    pub threshold: Nanos,
}

impl Default for AqlLimits {
    fn default() -> Self {
        AqlLimits {
            low: AQL_TXQ_LIMIT_LOW,
            high: AQL_TXQ_LIMIT_HIGH,
            threshold: AQL_THRESHOLD,
        }
    }
}

impl AqlLimits {
    /// `ieee80211_txq_airtime_check`: may the driver take another frame from a station whose
    /// pending airtime is `sta_pending` while the interface's is `total_pending`?
    #[inline]
    pub fn txq_airtime_check(&self, sta_pending: u64, total_pending: u64) -> bool {
        sta_pending < self.low.0 || (total_pending < self.threshold.0 && sta_pending < self.high.0)
    }

    /// `ieee80211_txq_schedule_airtime_check`: the access category's pending airtime must stay
    /// below (n − 1)·low/2 + high with `n_active` TXQs on its active list (n ≥ 1).
    #[inline]
    pub fn schedule_airtime_check(&self, ac_pending: u64, n_active: usize) -> bool {
        let n = n_active.max(1) as u64;
        ac_pending < (n - 1) * self.low.0 / 2 + self.high.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// The per-station rule: below 5 ms always; 5..12 ms only while the interface total is
    /// below 24 ms; never at 12 ms.
    #[test]
    fn station_limit_switches_to_low_over_threshold() {
        let a = AqlLimits::default();
        assert!(a.txq_airtime_check(4_999_999, 100 * MS));
        assert!(!a.txq_airtime_check(5 * MS, 24 * MS));
        assert!(a.txq_airtime_check(5 * MS, 24 * MS - 1));
        assert!(a.txq_airtime_check(12 * MS - 1, 23 * MS));
        assert!(!a.txq_airtime_check(12 * MS, 12 * MS));
    }

    /// The per-AC cap: 12 ms with one active TXQ, 12 + 2.5·(n−1) ms with n.
    #[test]
    fn ac_cap_grows_by_half_low_per_txq() {
        let a = AqlLimits::default();
        assert!(a.schedule_airtime_check(12 * MS - 1, 1));
        assert!(!a.schedule_airtime_check(12 * MS, 1));
        assert!(a.schedule_airtime_check(29_499_999, 8));
        assert!(!a.schedule_airtime_check(29_500_000, 8));
    }
}
