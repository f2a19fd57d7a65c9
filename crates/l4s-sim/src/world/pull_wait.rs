//! For an AQM in the Wi-Fi driver's pull path (`ap = "aqm_in_txq"` / `"driver_fifo"`): each
//! pulled packet's AQM sojourn split at its first pull opportunity (mac80211 AQL room,
//! `ieee80211_txq_airtime_check`, or the driver limit) into driver wait and the rest.

use crate::histogram::SojournHistogram;
use l4s_core::Nanos;

/// For an AQM in the driver's pull path (`aqm_in_txq`, `driver_fifo`): each pulled packet's
/// AQM sojourn split at the first instant after its enqueue at which the driver had room
/// (a pull opportunity: TX status freed room, or it arrived while there was room). Before it:
/// waiting for driver room (AQL / driver limit); after it: waiting behind the packets that
/// took that room and the later ones (the AQM's own queue). Per AQM queue, after warm-up.
#[derive(Default)]
pub(crate) struct PullWait {
    /// Pull opportunities, increasing; those older than `PULL_WAIT_HORIZON` are forgotten
    /// (a packet older than that counts from the oldest one kept).
    opens: std::collections::VecDeque<Nanos>,
    /// The same per client station (`aqm_in_txq` with several stations: a station's pull
    /// opportunity is its own AQL room).
    sta_opens: Vec<std::collections::VecDeque<Nanos>>,
    /// Per AQM queue: (driver-wait histogram, sum of driver waits, sum of sojourns, ns).
    per_queue: Vec<(SojournHistogram, u64, u64)>,
}

/// How far back pull opportunities are kept.
const PULL_WAIT_HORIZON: Nanos = Nanos(10_000_000_000);

impl PullWait {
    /// The driver has room at `now` with packets waiting above it.
    pub(super) fn open(&mut self, now: Nanos) {
        if self.opens.back() != Some(&now) {
            self.opens.push_back(now);
        }
        while self
            .opens
            .front()
            .is_some_and(|&t| t + PULL_WAIT_HORIZON < now)
        {
            self.opens.pop_front();
        }
    }

    /// Station `sta`'s share of the driver has room at `now` with packets waiting for it.
    pub(super) fn open_sta(&mut self, sta: usize, now: Nanos) {
        if self.sta_opens.len() <= sta {
            self.sta_opens.resize_with(sta + 1, Default::default);
        }
        std::mem::swap(&mut self.opens, &mut self.sta_opens[sta]);
        self.open(now);
        std::mem::swap(&mut self.opens, &mut self.sta_opens[sta]);
    }

    /// The driver wait of a packet enqueued at `enq` and pulled at `now`.
    pub(super) fn driver_wait(&self, enq: Nanos, now: Nanos) -> Nanos {
        Self::first_open(&self.opens, enq, now)
    }

    /// The same for station `sta`'s own pull opportunities.
    pub(super) fn driver_wait_sta(&self, sta: usize, enq: Nanos, now: Nanos) -> Nanos {
        self.sta_opens
            .get(sta)
            .map_or(Nanos::ZERO, |o| Self::first_open(o, enq, now))
    }

    fn first_open(opens: &std::collections::VecDeque<Nanos>, enq: Nanos, now: Nanos) -> Nanos {
        let i = opens.partition_point(|&t| t < enq);
        let first = opens.get(i).copied().unwrap_or(now).min(now);
        first.saturating_sub(enq)
    }

    pub(super) fn record(&mut self, q: usize, sojourn: Nanos, wait: Nanos) {
        if self.per_queue.len() <= q {
            self.per_queue
                .resize_with(q + 1, || (SojournHistogram::new(), 0, 0));
        }
        let e = &mut self.per_queue[q];
        e.0.record(wait.0);
        e.1 += wait.0;
        e.2 += sojourn.0;
    }

    /// The summary's `pull_wait` entries (queue names as the recorder's).
    pub(super) fn summary(&self, names: &[&'static str]) -> serde_json::Value {
        let ms = |ns: f64| ns / 1e6;
        let v: Vec<serde_json::Value> = self
            .per_queue
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.0.is_empty())
            .map(|(q, (h, wait, soj))| {
                let n = h.len() as f64;
                let [p50, p99] = h.percentiles([0.5, 0.99]);
                serde_json::json!({
                    "queue": names.get(q).copied().unwrap_or("?"),
                    "packets": h.len(),
                    "sojourn_ms_mean": ms(*soj as f64 / n),
                    "driver_wait_ms": {"mean": ms(*wait as f64 / n), "p50": ms(p50), "p99": ms(p99)},
                    "behind_ms_mean": ms((*soj - *wait) as f64 / n),
                })
            })
            .collect();
        serde_json::json!(v)
    }
}
