//! mac80211's airtime-fairness scheduler: the driver asks for the next station TXQ of an
//! access category; a deficit round robin in airtime picks it. Linux `net/mac80211/tx.c`
//! (`ieee80211_txq_schedule_start`, `ieee80211_next_txq`, `__ieee80211_schedule_txq`) and
//! `net/mac80211/sta_info.c` (`ieee80211_register_airtime`, `IEEE80211_DEFAULT_AIRTIME_WEIGHT`).
//!
//! Faithful to Linux (the deficit round robin restored in 5.19, `ieee80211_sta_deficit`
//! since then; the 5.15 virtual-time scheduler `airtime_v_t` was reverted): one active list
//! per AC; `next_txq` walks it from the head: a TXQ whose station's deficit *less its
//! `aql_tx_pending`* is negative gets `weight` (256 µs) added and goes to the tail, as does
//! one that fails the AQL check; the walk ends empty once it is back at its first TXQ with no
//! AQL-eligible one seen, so while one TXQ is eligible the walk keeps adding the weight until
//! that TXQ is served (the DRR is work-conserving: it orders the eligible TXQs, it never holds
//! back the only one); a TXQ is handed out at most once per scheduling round. A TXQ returned
//! with frames left goes back to the head of the list under airtime fairness (so it leaves
//! only once its deficit is spent) and to the tail without it (plain round robin, where the
//! deficit is never charged). The deficit is charged with the TX and RX airtime of the
//! station (`AIRTIME_USE_TX | AIRTIME_USE_RX`) reported on TX status.
//! Not modelled: `ieee80211_sta_keep_active` (a station idle for 100 ms stops being charged
//! and leaves the list; the stations here are charged while they have traffic).

use std::collections::VecDeque;

/// `IEEE80211_DEFAULT_AIRTIME_WEIGHT`: 256 (µs of airtime per DRR round).
pub const AIRTIME_WEIGHT: i64 = 256;

/// The DRR state of one access category over `n` stations.
#[derive(Clone, Debug)]
pub struct AirtimeScheduler {
    /// `NL80211_EXT_FEATURE_AIRTIME_FAIRNESS` set.
    pub fairness: bool,
    active: VecDeque<usize>,
    on_list: Vec<bool>,
    /// `sta->airtime[ac].deficit`, µs.
    deficit: Vec<i64>,
    weight: Vec<i64>,
    schedule_round: u16,
    txq_round: Vec<u16>,
    /// Airtime registered per station, ns (TX + RX).
    airtime_ns: Vec<u64>,
}

impl AirtimeScheduler {
    /// `n` stations, each with weight 256; `fairness` = airtime fairness on.
    pub fn new(n: usize, fairness: bool) -> Self {
        AirtimeScheduler {
            fairness,
            active: VecDeque::with_capacity(n),
            on_list: vec![false; n],
            deficit: vec![0; n],
            weight: vec![AIRTIME_WEIGHT; n],
            schedule_round: 0,
            txq_round: vec![0; n],
            airtime_ns: vec![0; n],
        }
    }

    /// `ieee80211_txq_schedule_start`: a new scheduling round.
    pub fn schedule_start(&mut self) {
        self.schedule_round = self.schedule_round.wrapping_add(1);
        if self.schedule_round == 0 {
            self.schedule_round = 1;
        }
    }

    /// `__ieee80211_schedule_txq` / `ieee80211_return_txq`: station `sta`'s TXQ has frames
    /// (`has_frames`) and is put back on the active list if it is not on it.
    pub fn return_txq(&mut self, sta: usize, has_frames: bool) {
        if self.on_list[sta] || !has_frames {
            return;
        }
        self.on_list[sta] = true;
        if self.fairness {
            self.active.push_front(sta);
        } else {
            self.active.push_back(sta);
        }
    }

    /// `ieee80211_next_txq`: the next station to serve in this round, or None. `aql` gives,
    /// for a station, `ieee80211_txq_airtime_check` and its `aql_tx_pending` airtime (ns):
    /// the deficit tested is `ieee80211_sta_deficit`, the deficit less the airtime already
    /// handed to the driver and not yet reported (tx.c, since Linux 5.19).
    pub fn next_txq(&mut self, mut aql: impl FnMut(usize) -> (bool, u64)) -> Option<usize> {
        let mut head: Option<usize> = None;
        let mut found_eligible = false;
        loop {
            let &sta = self.active.front()?;
            if head == Some(sta) {
                if !found_eligible {
                    return None;
                }
                found_eligible = false;
            }
            if head.is_none() {
                head = Some(sta);
            }
            let (aql, pending_ns) = aql(sta);
            if aql {
                found_eligible = true;
            }
            let deficit = self.deficit[sta] - (pending_ns / 1_000) as i64;
            if deficit < 0 {
                self.deficit[sta] += self.weight[sta];
            }
            if deficit < 0 || !aql {
                self.active.pop_front();
                self.active.push_back(sta);
                continue;
            }
            if self.txq_round[sta] == self.schedule_round {
                return None;
            }
            self.active.pop_front();
            self.on_list[sta] = false;
            self.txq_round[sta] = self.schedule_round;
            return Some(sta);
        }
    }

    /// `ieee80211_register_airtime`: TX status (or RX) of `airtime_ns` for `sta`; the deficit
    /// is charged only under airtime fairness.
    pub fn register_airtime(&mut self, sta: usize, airtime_ns: u64) {
        self.airtime_ns[sta] += airtime_ns;
        if self.fairness {
            self.deficit[sta] -= (airtime_ns / 1_000) as i64;
        }
    }

    /// Airtime registered for `sta` so far, ns.
    pub fn airtime_ns(&self, sta: usize) -> u64 {
        self.airtime_ns[sta]
    }

    /// Stations on the active list.
    pub fn active_len(&self) -> usize {
        self.active.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two always-backlogged stations whose frames take 200 µs and 2000 µs of airtime, one
    /// frame per `next_txq` (no aggregation, as Heusse et al. 2003): with airtime fairness
    /// their airtime is equal to within one frame; without it each sends the same number of
    /// frames and the slow one takes 2000/2200 of the airtime (the performance anomaly).
    #[test]
    fn drr_equalises_airtime_and_round_robin_shows_the_anomaly() {
        let cost = [200_000u64, 2_000_000];
        for fairness in [true, false] {
            let mut s = AirtimeScheduler::new(2, fairness);
            s.return_txq(0, true);
            s.return_txq(1, true);
            let mut frames = [0u64; 2];
            let mut t = 0u64;
            while t < 10_000_000_000 {
                s.schedule_start();
                while let Some(sta) = s.next_txq(|_| (true, 0)) {
                    frames[sta] += 1;
                    t += cost[sta];
                    s.register_airtime(sta, cost[sta]);
                    s.return_txq(sta, true);
                }
            }
            let (a0, a1) = (s.airtime_ns(0) as f64, s.airtime_ns(1) as f64);
            let share1 = a1 / (a0 + a1);
            if fairness {
                assert!((share1 - 0.5).abs() < 0.01, "share {share1}");
                // Throughputs in the ratio of the rates: 10 fast frames per slow one.
                let r = frames[0] as f64 / frames[1] as f64;
                assert!((r - 10.0).abs() < 0.1, "ratio {r}");
            } else {
                assert!((frames[0] as i64 - frames[1] as i64).abs() <= 1);
                assert!((share1 - 2000.0 / 2200.0).abs() < 1e-3, "share {share1}");
            }
        }
    }

    /// The walk is work-conserving: station 0 alone passes AQL with deficit −1000 µs and
    /// 500 µs pending (`ieee80211_sta_deficit` = −1500), station 1 is held by AQL with
    /// deficit −300 and 12 ms pending. Each pass adds 256 µs to both, so station 0 is served
    /// after ⌈1500/256⌉ = 6 passes: deficits −1000 + 6·256 = 536 and −300 + 6·256 = 1236.
    #[test]
    fn only_aql_eligible_station_is_topped_up_until_served() {
        let mut s = AirtimeScheduler::new(2, true);
        s.register_airtime(0, 1_000_000);
        s.register_airtime(1, 300_000);
        s.return_txq(1, true);
        s.return_txq(0, true);
        s.schedule_start();
        let pending = [500_000u64, 12_000_000];
        assert_eq!(s.next_txq(|sta| (sta == 0, pending[sta])), Some(0));
        assert_eq!(s.deficit, vec![536, 1236]);
    }

    /// A station that fails the AQL check is skipped (moved to the tail) and the round ends
    /// when no station is eligible.
    #[test]
    fn aql_blocked_station_is_skipped() {
        let mut s = AirtimeScheduler::new(2, true);
        s.return_txq(0, true);
        s.return_txq(1, true);
        s.schedule_start();
        assert_eq!(s.next_txq(|sta| (sta == 1, 0)), Some(1));
        assert_eq!(s.next_txq(|_| (false, 0)), None);
        assert_eq!(s.active_len(), 1);
    }
}
