//! GCC's bandwidth probing as libwebrtc's goog_cc runs it: the probe controller's exponential probes and the probe bitrate estimator.
//! Follows libwebrtc `modules/congestion_controller/goog_cc/probe_controller.cc` (`InitiateExponentialProbing`, `SetEstimatedBitrate`, `InitiateProbing`) and `probe_bitrate_estimator.cc` (`HandleProbeAndEstimateBitrate`); clusters as `modules/pacing/bitrate_prober.cc` sends them.
//!
//! Faithful: at the call's start two clusters at 3 × and 6 × the start rate
//! (`first_exponential_probe_scale`, `second_exponential_probe_scale`); while waiting for a
//! result, an estimate above 0.7 × the last cluster's rate (`further_probe_threshold`) starts
//! one more at 2 × the estimate (`further_exponential_probe_scale`); a cluster at or above the
//! maximum rate is capped to it and ends exponential probing; 1 s without such a result
//! (`kMaxWaitingTimeForProbingResult`) ends it too. A cluster is at least 5 packets
//! (`min_probe_packets_sent`) and rate × 15 ms bytes (`min_probe_duration`). The estimator
//! keeps the cluster's first/last send and receive times and returns min(send rate, receive
//! rate) once ≥ 80 % of its packets and bytes arrived, 0.95 × the receive rate when that is
//! under 0.9 × the send rate, nothing when an interval is ≤ 0 or > 1 s or receive/send > 2.
//! Simplified (named): no ALR probing, no periodic probing, no probing on a max-rate change or
//! after a large drop; probe clusters are padding only (libwebrtc's pacer sends queued media
//! at the probe rate first and pads the rest).

use crate::time::Nanos;

/// `first_exponential_probe_scale`.
pub const FIRST_EXPONENTIAL_PROBE_SCALE: f64 = 3.0;
/// `second_exponential_probe_scale`.
pub const SECOND_EXPONENTIAL_PROBE_SCALE: f64 = 6.0;
/// `further_exponential_probe_scale`.
pub const FURTHER_EXPONENTIAL_PROBE_SCALE: f64 = 2.0;
/// `further_probe_threshold`.
pub const FURTHER_PROBE_THRESHOLD: f64 = 0.7;
/// `min_probe_packets_sent`.
pub const MIN_PROBE_PACKETS_SENT: u32 = 5;
/// `min_probe_duration`.
pub const MIN_PROBE_DURATION: Nanos = Nanos::from_ms(15);
/// `kMaxWaitingTimeForProbingResult`.
const MAX_WAITING_FOR_PROBING_RESULT: Nanos = Nanos::from_secs(1);
/// `kMinReceivedProbesRatio`, `kMinReceivedBytesRatio`.
const MIN_RECEIVED_RATIO: f64 = 0.8;
/// `kMaxValidRatio`.
const MAX_VALID_RATIO: f64 = 2.0;
/// `kMinRatioForUnsaturatedLink`.
const MIN_RATIO_FOR_UNSATURATED_LINK: f64 = 0.9;
/// `kTargetUtilizationFraction`.
const TARGET_UTILIZATION_FRACTION: f64 = 0.95;
/// `kMaxProbeInterval`, `kMaxClusterHistory`.
const MAX_PROBE_INTERVAL: Nanos = Nanos::from_secs(1);

/// `ProbeClusterConfig`: what the pacer sends.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ProbeCluster {
    /// Cluster id (from 1).
    pub id: u32,
    /// Probe rate, bits/s.
    pub rate_bps: f64,
    /// Packets at least.
    pub min_probes: u32,
    /// Bytes at least (rate × `min_probe_duration`).
    pub min_bytes: u64,
}

/// `ProbeController` state (exponential probing only).
#[derive(Clone, Debug)]
pub struct ProbeController {
    max_bps: f64,
    waiting: bool,
    min_to_probe_further_bps: f64,
    last_initiated: Nanos,
    next_id: u32,
}

impl ProbeController {
    /// A controller probing up to `max_bps`.
    pub fn new(max_bps: f64) -> Self {
        ProbeController {
            max_bps,
            waiting: false,
            min_to_probe_further_bps: f64::INFINITY,
            last_initiated: Nanos::ZERO,
            next_id: 1,
        }
    }

    /// `InitiateExponentialProbing`: the clusters at the call's start.
    pub fn initiate_exponential(&mut self, start_bps: f64, now: Nanos) -> Vec<ProbeCluster> {
        self.initiate(
            now,
            &[
                FIRST_EXPONENTIAL_PROBE_SCALE * start_bps,
                SECOND_EXPONENTIAL_PROBE_SCALE * start_bps,
            ],
        )
    }

    /// `SetEstimatedBitrate` (with `Process`'s waiting timeout): a further cluster, if any.
    pub fn set_estimate(&mut self, bps: f64, now: Nanos) -> Vec<ProbeCluster> {
        if self.waiting && now.saturating_sub(self.last_initiated) > MAX_WAITING_FOR_PROBING_RESULT
        {
            self.waiting = false;
        }
        if self.waiting && bps > self.min_to_probe_further_bps {
            return self.initiate(now, &[FURTHER_EXPONENTIAL_PROBE_SCALE * bps]);
        }
        Vec::new()
    }

    /// `InitiateProbing` with `probe_further`: a cluster at or above the maximum is capped and
    /// ends exponential probing.
    fn initiate(&mut self, now: Nanos, rates: &[f64]) -> Vec<ProbeCluster> {
        let mut further = true;
        let mut out = Vec::new();
        for &r in rates {
            let mut r = r;
            if r >= self.max_bps {
                r = self.max_bps;
                further = false;
            }
            out.push(ProbeCluster {
                id: self.next_id,
                rate_bps: r,
                min_probes: MIN_PROBE_PACKETS_SENT,
                min_bytes: (r * MIN_PROBE_DURATION.as_secs_f64() / 8.0) as u64,
            });
            self.next_id += 1;
        }
        self.last_initiated = now;
        self.waiting = further;
        self.min_to_probe_further_bps = if further {
            out.last().map_or(f64::INFINITY, |c| c.rate_bps) * FURTHER_PROBE_THRESHOLD
        } else {
            f64::INFINITY
        };
        out
    }
}

/// `AggregatedCluster`.
#[derive(Clone, Debug)]
struct Aggregated {
    id: u32,
    first_send: Nanos,
    last_send: Nanos,
    first_recv: Nanos,
    last_recv: Nanos,
    size_last_send: u64,
    size_first_recv: u64,
    size_total: u64,
    num_probes: u32,
}

/// `ProbeBitrateEstimator`.
#[derive(Clone, Debug, Default)]
pub struct ProbeBitrateEstimator {
    clusters: Vec<Aggregated>,
    estimate_bps: Option<f64>,
}

impl ProbeBitrateEstimator {
    /// `HandleProbeAndEstimateBitrate`: a received probe packet of `cluster`, `bytes` sent at
    /// `send` and received at `recv`; the cluster's rate once it is complete and valid.
    pub fn handle(
        &mut self,
        cluster: &ProbeCluster,
        send: Nanos,
        recv: Nanos,
        bytes: u64,
    ) -> Option<f64> {
        // EraseOldClusters: last receive more than kMaxClusterHistory ago.
        self.clusters
            .retain(|c| c.last_recv + MAX_PROBE_INTERVAL >= recv);
        let i = match self.clusters.iter().position(|c| c.id == cluster.id) {
            Some(i) => i,
            None => {
                self.clusters.push(Aggregated {
                    id: cluster.id,
                    first_send: Nanos(u64::MAX),
                    last_send: Nanos::ZERO,
                    first_recv: Nanos(u64::MAX),
                    last_recv: Nanos::ZERO,
                    size_last_send: 0,
                    size_first_recv: 0,
                    size_total: 0,
                    num_probes: 0,
                });
                self.clusters.len() - 1
            }
        };
        let c = &mut self.clusters[i];
        if send < c.first_send {
            c.first_send = send;
        }
        if send > c.last_send {
            c.last_send = send;
            c.size_last_send = bytes;
        }
        if recv < c.first_recv {
            c.first_recv = recv;
            c.size_first_recv = bytes;
        }
        if recv > c.last_recv {
            c.last_recv = recv;
        }
        c.size_total += bytes;
        c.num_probes += 1;
        let min_probes = (cluster.min_probes as f64 * MIN_RECEIVED_RATIO) as u32;
        let min_size = cluster.min_bytes as f64 * MIN_RECEIVED_RATIO;
        if c.num_probes < min_probes || (c.size_total as f64) < min_size {
            return None;
        }
        let send_iv = c.last_send.saturating_sub(c.first_send);
        let recv_iv = c.last_recv.saturating_sub(c.first_recv);
        if c.last_send <= c.first_send
            || send_iv > MAX_PROBE_INTERVAL
            || c.last_recv <= c.first_recv
            || recv_iv > MAX_PROBE_INTERVAL
        {
            return None;
        }
        // The last packet sent and the first received do not count toward the rate.
        let send_rate = (c.size_total - c.size_last_send) as f64 * 8.0 / send_iv.as_secs_f64();
        let recv_rate = (c.size_total - c.size_first_recv) as f64 * 8.0 / recv_iv.as_secs_f64();
        if recv_rate / send_rate > MAX_VALID_RATIO {
            return None;
        }
        let mut res = send_rate.min(recv_rate);
        if recv_rate < MIN_RATIO_FOR_UNSATURATED_LINK * send_rate {
            res = TARGET_UTILIZATION_FRACTION * recv_rate;
        }
        self.estimate_bps = Some(res);
        Some(res)
    }

    /// `FetchAndResetLastEstimatedBitrate`.
    pub fn fetch_and_reset(&mut self) -> Option<f64> {
        self.estimate_bps.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_probes_at_3_and_6_times_the_start_rate_with_15_ms_of_bytes() {
        let mut p = ProbeController::new(20e6);
        let c = p.initiate_exponential(1e6, Nanos::ZERO);
        // 3 Mb/s × 15 ms = 5625 B, 6 Mb/s × 15 ms = 11250 B; at least 5 packets each.
        assert_eq!(
            c,
            vec![
                ProbeCluster {
                    id: 1,
                    rate_bps: 3e6,
                    min_probes: 5,
                    min_bytes: 5625
                },
                ProbeCluster {
                    id: 2,
                    rate_bps: 6e6,
                    min_probes: 5,
                    min_bytes: 11250
                },
            ]
        );
        // Waiting: an estimate must exceed 0.7 × 6 Mb/s = 4.2 Mb/s to probe further.
        assert!(p.set_estimate(4.2e6, Nanos::from_ms(100)).is_empty());
        let f = p.set_estimate(5.8e6, Nanos::from_ms(200));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rate_bps, 11.6e6);
        assert_eq!(f[0].id, 3);
        // Next threshold 0.7 × 11.6 = 8.12 Mb/s; 2 × 11 = 22 Mb/s ≥ max: capped, probing ends.
        let g = p.set_estimate(11e6, Nanos::from_ms(300));
        assert_eq!(g[0].rate_bps, 20e6);
        assert!(p.set_estimate(19e6, Nanos::from_ms(400)).is_empty());
    }

    #[test]
    fn no_result_within_one_second_ends_probing() {
        let mut p = ProbeController::new(100e6);
        p.initiate_exponential(1e6, Nanos::ZERO);
        assert!(p.set_estimate(5e6, Nanos::from_ms(1001)).is_empty());
        assert!(p.set_estimate(5e6, Nanos::from_ms(1002)).is_empty());
        // kMaxWaitingTimeForProbingResult is 1 s, exclusive: at exactly 1 s it still probes.
        let mut p = ProbeController::new(100e6);
        p.initiate_exponential(1e6, Nanos::ZERO);
        let f = p.set_estimate(5e6, Nanos::from_secs(1));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rate_bps, 10e6);
    }

    /// A probe rate at the maximum is capped and ends the exponential probing: with a 6 Mb/s
    /// maximum the second start probe (6 Mb/s) is the last, whatever the estimate.
    #[test]
    fn a_probe_at_the_maximum_rate_ends_probing() {
        let mut p = ProbeController::new(6e6);
        let c = p.initiate_exponential(1e6, Nanos::ZERO);
        assert_eq!((c[0].rate_bps, c[1].rate_bps), (3e6, 6e6));
        assert!(p.set_estimate(5.8e6, Nanos::from_ms(100)).is_empty());
    }

    fn cluster() -> ProbeCluster {
        ProbeCluster {
            id: 1,
            rate_bps: 6e6,
            min_probes: 5,
            min_bytes: 11250,
        }
    }

    /// 10 packets of 1200 B of `cluster()` sent every 1.6 ms (6 Mb/s), received every
    /// `recv_ns` from 50 ms: each packet's result.
    fn feed(e: &mut ProbeBitrateEstimator, recv_ns: u64) -> Vec<Option<f64>> {
        (0..10u64)
            .map(|k| {
                let (send, recv) = (Nanos(k * 1_600_000), Nanos(50_000_000 + k * recv_ns));
                e.handle(&cluster(), send, recv, 1200)
            })
            .collect()
    }

    #[test]
    fn estimator_is_min_of_send_and_receive_rate() {
        // Received every 2 ms (4.8 Mb/s).
        let mut e = ProbeBitrateEstimator::default();
        let out = feed(&mut e, 2_000_000);
        // 0.8 × 11250 = 9000 B are needed: 8 packets (9600 B), none before.
        assert!(out[..7].iter().all(|r| r.is_none()), "{out:?}");
        // At 8: send 7 × 1200 B / 11.2 ms = 6 Mb/s, receive 7 × 1200 B / 14 ms = 4.8 Mb/s.
        assert!((out[7].unwrap() - 0.95 * 4.8e6).abs() < 1e-3, "{out:?}");
        // send 9 × 1200 B / 14.4 ms = 6 Mb/s; receive 9 × 1200 B / 18 ms = 4.8 Mb/s
        // < 0.9 × 6: 0.95 × 4.8 Mb/s.
        let r = out[9].unwrap();
        assert!((r - 0.95 * 4.8e6).abs() < 1e-3, "{r}");
        assert_eq!(e.fetch_and_reset(), Some(r));
        assert_eq!(e.fetch_and_reset(), None);
    }

    #[test]
    fn estimator_unsaturated_link_gives_the_min() {
        // Received every 1.7 ms: 9 × 1200 × 8 / 15.3 ms = 5.647 Mb/s ≥ 0.9 × 6: the minimum.
        let out = feed(&mut ProbeBitrateEstimator::default(), 1_700_000);
        let want = 9.0 * 1200.0 * 8.0 / 0.0153;
        assert!((out[9].unwrap() - want).abs() < 1e-3);
    }

    /// `kMinReceivedProbesRatio` (0.8) of a cluster's 5 probes, truncated: the 4th received
    /// probe can give an estimate when the bytes suffice (here they always do), the 3rd not.
    #[test]
    fn four_of_five_probes_are_enough() {
        let small = ProbeCluster {
            min_bytes: 0,
            ..cluster()
        };
        let mut e = ProbeBitrateEstimator::default();
        let out: Vec<bool> = (0..4u64)
            .map(|k| {
                let (send, recv) = (Nanos(k * 1_600_000), Nanos(50_000_000 + k * 2_000_000));
                e.handle(&small, send, recv, 1200).is_some()
            })
            .collect();
        assert_eq!(out, [false, false, false, true]);
    }

    /// EraseOldClusters: a cluster whose last packet arrived more than 1 s before is
    /// forgotten, so a late packet of it starts the count afresh; at exactly 1 s it is kept
    /// (its 11th probe). (Either way the receive interval, now over 1 s, gives no estimate.)
    #[test]
    fn a_cluster_silent_for_over_a_second_is_forgotten() {
        let late = |gap: Nanos| {
            let mut e = ProbeBitrateEstimator::default();
            feed(&mut e, 2_000_000);
            let last_recv = Nanos(50_000_000 + 9 * 2_000_000);
            assert!(e
                .handle(&cluster(), Nanos(16_000_000), last_recv + gap, 1200)
                .is_none());
            (e.clusters.len(), e.clusters[0].num_probes)
        };
        assert_eq!(late(Nanos::from_secs(1)), (1, 11));
        assert_eq!(late(Nanos::from_secs(1) + Nanos(1)), (1, 1));
    }

    #[test]
    fn estimator_rejects_a_receive_rate_over_twice_the_send_rate() {
        // Received 0.7 ms apart: 12.3 Mb/s > 2 × 6 Mb/s: no estimate.
        let out = feed(&mut ProbeBitrateEstimator::default(), 700_000);
        assert!(out.iter().all(|r| r.is_none()), "{out:?}");
    }
}
