//! CUBIC congestion control with HyStart (RFC 9438).
//! Follows Linux net/ipv4/tcp_cubic.c: `bictcp_update`, `cubictcp_recalc_ssthresh`, `hystart_update`.
//!
//! Faithful to Linux: β = 717/1024, C = 410/1024 (`bic_scale` 41; RFC 9438: 0.4), fast convergence
//! (`last_max_cwnd = cwnd·(1+β)/2` when the window did not regain the previous maximum), the
//! cubic target is evaluated one `delay_min` ahead (t + min RTT), `cnt = cwnd/(target − cwnd)`
//! (else `100·cwnd`), `cnt ≤ 20` before the first loss, the Reno-friendly estimate `tcp_cwnd`
//! grows by one per `cwnd·15/8` ACKed packets (`beta_scale` = 8(1+β)/(3(1−β)) = 15), `cnt ≥ 2`,
//! the target is recomputed at most every 1/32 s unless cwnd changed. HyStart (Linux default
//! on, both detectors): a round starts on the first RTT sample with snd_una past `end_seq`
//! (in `hystart_update`, for any window); ACK-train (ACKs ≤ 2 ms apart spanning more than
//! `(delay_min + hystart_ack_delay)/2` since the round start — not halved when fq paces
//! the flow (`sk_pacing_status` = `SK_PACING_FQ`), with
//! `hystart_ack_delay` = min(1 ms, 4·64 KiB / Linux's default pacing rate)) and delay increase
//! (minimum of the first 8 RTT samples of a round above `delay_min + clamp(delay_min/8, 4 ms,
//! 16 ms)`), only for cwnd ≥ 16 (`hystart_low_window`); on detection ssthresh = cwnd. RTT samples in the first second after
//! a congestion event are ignored, as Linux does.
//!
//! Simplified: W(t) is computed in f64 seconds (`C·|t−K|³` floored to whole packets like
//! Linux's shift) instead of Linux's fixed point (`BICTCP_HZ` = 2^-10 s time units,
//! `cube_rtt_scale`, and `cubic_root()` with its lookup table + one Newton step); K uses
//! `f64::cbrt`. The per-jiffy short cut in `bictcp_update` is not modelled, and the epoch is not
//! shifted over idle periods (`CA_EVENT_TX_START` needs the last send time, which `CcState`
//! does not carry). Classic ECN is optional (`ecn` flag); ECE is answered by the TCP sender
//! entering CWR with this `ssthresh()` (β), as in Linux.

use super::{
    tcp_cong_avoid_ai, tcp_slow_start, AckSample, CaState, CcState, CongestionControl, EcnMode,
};
use crate::time::Nanos;

/// `BICTCP_BETA_SCALE` and `beta`: β = 717/1024 ≈ 0.7.
const BICTCP_BETA_SCALE: u64 = 1024;
const BETA: u64 = 717;
/// C = `bic_scale`·10/1024 = 410/1024 = 0.400390625 as Linux's `cube_rtt_scale` and
/// `cube_factor` give it (RFC 9438 §5.1 says 0.4).
const CUBE_C: f64 = 410.0 / 1024.0;
/// `beta_scale` = 8·(1024+717)/3/(1024−717) = 15 (integer, as Linux computes it).
const BETA_SCALE: u32 = 15;
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_ACK_DELTA: Nanos = Nanos::from_us(2000);
const HYSTART_DELAY_MIN: Nanos = Nanos::from_us(4000);
const HYSTART_DELAY_MAX: Nanos = Nanos::from_us(16000);
/// `GSO_MAX_SIZE` (`sk_gso_max_size` of a default device), bytes.
const GSO_MAX_SIZE: u64 = 65536;

/// CUBIC congestion control (RFC 9438, Linux `tcp_cubic.c`).
///
/// Laid out by hand (`repr(C)`, one cache line aligned): the first 64 bytes hold what every
/// ACK in congestion avoidance reads or writes (`cong_avoid`, `pkts_acked`), so with many
/// flows an ACK misses one line of this state instead of two or three.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Cubic {
    epoch_start: Option<Nanos>,
    last_time: Nanos,
    /// Minimum RTT seen (zero = none yet).
    delay_min: Nanos,
    /// K in seconds.
    bic_k_s: f64,
    /// Increase cwnd by 1 per `cnt` ACKed packets.
    cnt: u32,
    ack_cnt: u32,
    last_cwnd: u32,
    /// Reno-friendly window estimate W_est.
    tcp_cwnd: u32,
    bic_origin_point: u32,
    /// Grow at least as fast as Reno would (RFC 9438 §4.3, Linux `tcp_friendliness`).
    pub tcp_friendliness: bool,
    /// HyStart on (Linux `hystart = 1`).
    pub hystart: bool,
    /// Ask for classic ECN.
    pub ecn: bool,
    // HyStart
    found: bool,
    // Then what only a loss or slow start touches.
    last_max_cwnd: u32,
    /// Lower `W_max` further when a loss comes before the previous `W_max` was regained
    /// (Linux `fast_convergence`).
    pub fast_convergence: bool,
    round_start: Option<Nanos>,
    last_ack: Nanos,
    end_seq: u64,
    curr_rtt: Nanos,
    sample_cnt: u32,
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic::new(false)
    }
}

impl Cubic {
    /// CUBIC with Linux defaults (HyStart, fast convergence, TCP friendliness), asking for
    /// classic ECN when `ecn`.
    pub fn new(ecn: bool) -> Self {
        Cubic {
            ecn,
            hystart: true,
            fast_convergence: true,
            tcp_friendliness: true,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: Nanos::ZERO,
            bic_origin_point: 0,
            bic_k_s: 0.0,
            delay_min: Nanos::ZERO,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            found: false,
            round_start: None,
            last_ack: Nanos::ZERO,
            end_seq: 0,
            curr_rtt: Nanos::MAX,
            sample_cnt: 0,
        }
    }

    /// `bictcp_reset`: forget the epoch, the maxima and `delay_min`.
    fn reset(&mut self) {
        let keep = (
            self.ecn,
            self.hystart,
            self.fast_convergence,
            self.tcp_friendliness,
        );
        *self = Cubic::new(keep.0);
        self.hystart = keep.1;
        self.fast_convergence = keep.2;
        self.tcp_friendliness = keep.3;
    }

    /// `bictcp_hystart_reset`: start a new HyStart round at `now`.
    fn hystart_reset(&mut self, tp: &CcState, now: Option<Nanos>) {
        self.round_start = now;
        self.last_ack = now.unwrap_or(Nanos::ZERO);
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = Nanos::MAX;
        self.sample_cnt = 0;
    }

    /// K in seconds (for inspection).
    pub fn k_s(&self) -> f64 {
        self.bic_k_s
    }
    /// W_max (`last_max_cwnd`).
    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }
    /// The Reno-friendly estimate W_est (`tcp_cwnd`).
    pub fn w_est(&self) -> u32 {
        self.tcp_cwnd
    }

    /// `bictcp_update`: set `cnt` so that cwnd reaches the cubic (or Reno-friendly) target.
    fn update(&mut self, tp: &CcState, acked: u32, now: Nanos) {
        let cwnd = tp.snd_cwnd.max(1);
        self.ack_cnt = self.ack_cnt.saturating_add(acked);
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= Nanos::from_ms(31) {
            // HZ/32 ≈ 31 ms: the target moves slowly, do not recompute per ACK.
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k_s = 0.0;
                    self.bic_origin_point = cwnd;
                } else {
                    // K = cbrt((W_max − cwnd)/C) (RFC 9438 eq. 2 with cwnd = β·W_max).
                    self.bic_k_s = ((self.last_max_cwnd - cwnd) as f64 / CUBE_C).cbrt();
                    self.bic_origin_point = self.last_max_cwnd;
                }
                now
            }
        };
        // Target one min RTT ahead, as Linux does: t = elapsed + delay_min.
        let t_s = (now.saturating_sub(epoch_start) + self.delay_min).as_secs_f64();
        let offs = t_s - self.bic_k_s;
        let delta = (CUBE_C * offs.abs().powi(3)).floor();
        let origin = self.bic_origin_point as f64;
        let bic_target = if offs < 0.0 {
            (origin - delta).max(0.0)
        } else {
            (origin + delta).min(u32::MAX as f64 / 2.0)
        } as u32;
        self.cnt = if bic_target > cwnd {
            cwnd / (bic_target - cwnd)
        } else {
            100u32.saturating_mul(cwnd) // very slow growth
        };
        // Before the first loss, grow at least 1 packet per 20 ACKs.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        if self.tcp_friendliness {
            // W_est (RFC 9438 §4.3): +1 per cwnd·15/8 ACKed ≈ α_cubic = 3(1−β)/(1+β) per RTT.
            let d = ((cwnd as u64 * BETA_SCALE as u64) >> 3).max(1) as u32;
            while self.ack_cnt > d {
                self.ack_cnt -= d;
                self.tcp_cwnd += 1;
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                if self.cnt > max_cnt {
                    self.cnt = max_cnt;
                }
            }
        }
        self.cnt = self.cnt.max(2);
    }

    /// `hystart_ack_delay`: min(1 ms, 4·GSO_MAX_SIZE / sk_pacing_rate), the cushion for
    /// ACK aggregation. Linux sets sk_pacing_rate for every flow (`tcp_update_pacing_rate`:
    /// mss·max(cwnd, in_flight)/srtt × 200% while cwnd < ssthresh/2, else 120%); zero rate
    /// (no RTT yet) gives no cushion.
    fn hystart_ack_delay(tp: &CcState) -> Nanos {
        if tp.srtt == Nanos::ZERO {
            return Nanos::ZERO;
        }
        let pkts = tp.snd_cwnd.max(tp.packets_in_flight) as u128;
        let ratio_pct: u128 = if tp.snd_cwnd < tp.snd_ssthresh / 2 {
            200
        } else {
            120
        };
        // bytes/s = mss·pkts·ratio/100 / srtt
        let rate = tp.mss as u128 * pkts * ratio_pct * 10_000_000 / tp.srtt.as_ns() as u128;
        if rate == 0 {
            return Nanos::ZERO;
        }
        let us = (GSO_MAX_SIZE as u128 * 4 * 1_000_000 / rate).min(1000);
        Nanos::from_us(us as u64)
    }

    /// `hystart_update`: start a new round once snd_una passes `end_seq`, then (cwnd ≥
    /// `hystart_low_window`) look for an ACK train or a delay increase in this round.
    fn hystart_update(&mut self, tp: &mut CcState, delay: Nanos, now: Nanos) {
        if tp.snd_una > self.end_seq {
            self.hystart_reset(tp, Some(now));
        }
        if tp.snd_cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        if let Some(round_start) = self.round_start {
            if now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA {
                self.last_ack = now;
                // Pacing may have delayed packets by up to RTT/2 in slow start, so only an
                // unpaced socket (SK_PACING_NONE) halves delay_min + hystart_ack_delay. CUBIC
                // never asks for internal pacing (SK_PACING_NEEDED); only fq paces it.
                let mut threshold = self.delay_min + Self::hystart_ack_delay(tp);
                if !tp.fq_paced {
                    threshold = Nanos(threshold.as_ns() / 2);
                }
                if now.saturating_sub(round_start) > threshold {
                    self.found = true;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
        if self.curr_rtt > delay {
            self.curr_rtt = delay;
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let eta = Nanos(self.delay_min.as_ns() / 8)
                .max(HYSTART_DELAY_MIN)
                .min(HYSTART_DELAY_MAX);
            if self.curr_rtt > self.delay_min + eta {
                self.found = true;
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn requested_ecn(&self) -> EcnMode {
        if self.ecn {
            EcnMode::Classic
        } else {
            EcnMode::None
        }
    }
    fn init(&mut self, tp: &mut CcState) {
        self.reset();
        if self.hystart {
            self.hystart_reset(tp, None);
        }
    }
    /// `cubictcp_recalc_ssthresh`: end the epoch, remember W_max (with fast convergence),
    /// return β·cwnd.
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        let cwnd = tp.snd_cwnd;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            (cwnd as u64 * (BICTCP_BETA_SCALE + BETA) / (2 * BICTCP_BETA_SCALE)) as u32
        } else {
            cwnd
        };
        ((cwnd as u64 * BETA / BICTCP_BETA_SCALE) as u32).max(2)
    }
    /// `cubictcp_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcState, ack: &AckSample) {
        if !tp.is_cwnd_limited() {
            return;
        }
        let mut acked = ack.acked_pkts;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tp, acked, ack.now);
        tcp_cong_avoid_ai(tp, self.cnt, acked);
    }
    /// `cubictcp_acked`: track `delay_min` and run HyStart.
    fn pkts_acked(&mut self, tp: &mut CcState, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        // Discard delay samples right after fast recovery (1 s).
        if let Some(e) = self.epoch_start {
            if ack.now.saturating_sub(e) < Nanos::from_secs(1) {
                return;
            }
        }
        let delay = rtt.max(Nanos::from_us(1));
        if self.delay_min == Nanos::ZERO || self.delay_min > delay {
            self.delay_min = delay;
        }
        // The round reset lives in hystart_update, before the low-window check, so rounds
        // also advance for small or not cwnd-limited windows (Linux 25c1a9ca53db).
        if !self.found && tp.in_slow_start() && self.hystart {
            self.hystart_update(tp, delay, ack.now);
        }
    }
    /// `cubictcp_state`: an RTO forgets everything.
    fn set_state(&mut self, tp: &mut CcState, new: CaState) {
        if new == CaState::Loss {
            self.reset();
            self.hystart_reset(tp, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testutil::Driver;

    /// Loss at W_max = 100, then drive ACKs for `secs` at `rtt`; returns (t, cwnd) per round.
    fn after_loss(rtt: Nanos, secs: f64) -> (Cubic, Vec<(f64, u32)>) {
        let mut cc = Cubic::new(false);
        let mut d = Driver::new(&mut cc, EcnMode::None, rtt);
        d.tp.snd_cwnd = 100;
        // The first epoch would start with last_max = 0; a loss at 100 sets W_max.
        let ss = cc.ssthresh(&mut d.tp);
        assert_eq!(ss, 70); // 100·717/1024 = 70.02 → 70
        assert_eq!(cc.w_max(), 100);
        d.tp.snd_cwnd = ss;
        d.tp.snd_ssthresh = ss;
        let t0 = d.now;
        let mut out = vec![];
        while (d.now - t0).as_secs_f64() < secs {
            d.round(&mut cc, rtt, |_| false);
            out.push(((d.now - t0).as_secs_f64(), d.tp.snd_cwnd));
        }
        (cc, out)
    }

    #[test]
    fn hystart_ack_delay_is_four_gso_frames_at_the_pacing_rate_capped_at_1_ms() {
        // tcp_cubic.c hystart_ack_delay: min(USEC_PER_MSEC, GSO_MAX_SIZE·4·USEC_PER_SEC /
        // sk_pacing_rate), sk_pacing_rate = mss·max(cwnd, packets_out)·ratio/100 / srtt
        // (tcp_update_pacing_rate: ratio 200 % while cwnd < ssthresh/2, else 120 %).
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 100;
        tp.packets_in_flight = 0;
        tp.snd_ssthresh = u32::MAX;
        tp.srtt = Nanos::from_us(1000);
        // 1448·100·2 / 1 ms = 289 600 000 B/s; 65536·4·1e6 / 289.6e6 = 905.19 µs.
        assert_eq!(Cubic::hystart_ack_delay(&tp), Nanos::from_us(905));
        // Past half of ssthresh the ratio is 120 %: 173 760 000 B/s → 1508.7 µs, capped at 1 ms.
        tp.snd_ssthresh = 200;
        assert_eq!(Cubic::hystart_ack_delay(&tp), Nanos::from_us(1000));
        // srtt 0.5 ms at 120 %: 347 520 000 B/s → 754.3 µs.
        tp.srtt = Nanos::from_us(500);
        assert_eq!(Cubic::hystart_ack_delay(&tp), Nanos::from_us(754));
        // More packets out than cwnd count instead: 1448·150·1.2 / 0.5 ms = 521 280 000 B/s
        // → 502.9 µs.
        tp.packets_in_flight = 150;
        assert_eq!(Cubic::hystart_ack_delay(&tp), Nanos::from_us(502));
        // No RTT sample yet: no pacing rate, no delay allowance.
        tp.srtt = Nanos::ZERO;
        assert_eq!(Cubic::hystart_ack_delay(&tp), Nanos::ZERO);
    }

    fn w_cubic(t: f64, k: f64) -> f64 {
        CUBE_C * (t - k).powi(3) + 100.0
    }

    #[test]
    fn window_follows_cubic_curve_after_loss() {
        // RTT 100 ms keeps the Reno-friendly estimate below W(t) up to t ≈ 6 s:
        // W_est(t) = 70 + (8/15)·t/0.1 → at t = 4.217 s: 92.5 < 100 = W(K).
        let rtt = Nanos::from_ms(100);
        let (cc, trace) = after_loss(rtt, 5.5);
        // K = cbrt((W_max − cwnd)/C) = cbrt(30·1024/410) = cbrt(74.927) = 4.2158 s
        // (Linux's C = 410/1024; RFC 9438's C = 0.4 would give cbrt(75) = 4.2172 s).
        assert!((cc.k_s() - 4.2158).abs() < 1e-4, "K = {}", cc.k_s());
        let k = cc.k_s();
        for &t_check in &[1.0, 2.0, 3.0, 4.2158, 5.0] {
            let (t, cwnd) = *trace
                .iter()
                .find(|(t, _)| *t >= t_check)
                .expect("trace covers the check time");
            // Linux aims at W(t + min_rtt) over the next RTT, so cwnd at t lies between
            // W(t) and W(t + rtt); compare with W at t (e.g. W(1) = 0.4·(−3.217)³ + 100 = 86.7,
            // W(2) = 95.6, W(3) = 99.3, W(K) = 100, W(5) = 100.2) within 3 %.
            let w = w_cubic(t, k);
            let err = (cwnd as f64 - w).abs() / w;
            assert!(err < 0.03, "t={t:.3} cwnd={cwnd} W(t)={w:.1}");
        }
        // Concave then convex: never above W_max before K (plateau), above it after K.
        assert!(trace
            .iter()
            .filter(|(t, _)| *t < k - 0.3)
            .all(|&(_, c)| c <= 100));
    }

    #[test]
    fn target_is_evaluated_one_min_rtt_ahead() {
        // bictcp_update: bic_target = W(t + delay_min), cnt = cwnd / (bic_target − cwnd).
        // W_max 100, cwnd 70: K = cbrt(30 / C) = 4.2158 s with C = 410/1024.
        // Epoch start, delay_min 100 ms: t = 0.1 s, |t − K|³·C = 4.1158³·0.4004 = 27.9
        //   -> floor 27 -> target 73 -> cnt = 70 / 3 = 23. (W(t) at t = 0 would give 29 or
        //   30 -> target 71 or 70 -> cnt 70 or 7000.)
        // 1 s later: t = 1.1 s, 3.1158³·0.4004 = 12.1 -> 12 -> target 88 -> cnt = 70/18 = 3.
        //   (At t = 1.0 s: 13.5 -> 13 -> 87 -> cnt = 70/17 = 4.)
        let mut cc = Cubic::new(false);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 70;
        cc.last_max_cwnd = 100;
        cc.delay_min = Nanos::from_ms(100);
        let t0 = Nanos::from_secs(10);
        cc.update(&tp, 1, t0);
        assert!((cc.k_s() - 4.2158).abs() < 1e-4, "K = {}", cc.k_s());
        assert_eq!(cc.cnt, 23);
        cc.update(&tp, 1, t0 + Nanos::from_secs(1));
        assert_eq!(cc.cnt, 3);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut cc = Cubic::new(false);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 100;
        assert_eq!(cc.ssthresh(&mut tp), 70);
        assert_eq!(cc.w_max(), 100);
        // The next loss comes at 80 < W_max: W_max = 80·(1024+717)/2048 = 68.0 → 68,
        // ssthresh = 80·717/1024 = 56.0 → 56.
        tp.snd_cwnd = 80;
        assert_eq!(cc.ssthresh(&mut tp), 56);
        assert_eq!(cc.w_max(), 68);
        // Without fast convergence W_max would be the window at the loss.
        let mut cc2 = Cubic::new(false);
        cc2.fast_convergence = false;
        tp.snd_cwnd = 100;
        cc2.ssthresh(&mut tp);
        tp.snd_cwnd = 80;
        cc2.ssthresh(&mut tp);
        assert_eq!(cc2.w_max(), 80);
        // Floor of 2 packets.
        tp.snd_cwnd = 2;
        assert_eq!(cc2.ssthresh(&mut tp), 2);
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_rtt() {
        // RTT 10 ms: W(2 s) = 0.4·(2.01 − 4.217)³ + 100 = 95.7, but W_est grows by
        // 8/15 packet per RTT: W_est(2 s) = 70 + 200·8/15 = 176.7 (RFC 9438 §4.3:
        // W_est = β·W_max + 3(1−β)/(1+β)·t/RTT = 70 + 0.529·200 = 175.9).
        // (At RTT ≲ 2 ms Linux's HZ/32 recompute throttle makes cwnd lag W_est by several
        // packets; 10 ms keeps that lag ≈ 1–2 packets.)
        let rtt = Nanos::from_ms(10);
        let (cc, trace) = after_loss(rtt, 2.0);
        let &(t, cwnd) = trace.last().unwrap();
        let w_est = 70.0 + (8.0 / 15.0) * t / 0.010;
        let err = (cwnd as f64 - w_est).abs() / w_est;
        assert!(err < 0.05, "t={t} cwnd={cwnd} W_est={w_est:.1}");
        assert!(cwnd as f64 > 1.5 * w_cubic(t, cc.k_s()));
        assert!((cc.w_est() as f64 - w_est).abs() / w_est < 0.05);
    }

    /// bictcp_update's Reno estimate: `while (ca->ack_cnt > delta)` with delta =
    /// cwnd·beta_scale >> 3 = 8·15/8 = 15 at cwnd 8: the 15th ACK counted adds nothing, the
    /// 16th adds one packet to tcp_cwnd and leaves 1.
    #[test]
    fn the_reno_estimate_grows_after_more_than_cwnd_times_15_over_8_acks() {
        let mut cc = Cubic::new(false);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 8;
        cc.update(&tp, 1, Nanos::from_secs(1)); // epoch start: ack_cnt 1, tcp_cwnd 8
        cc.ack_cnt = 14;
        cc.update(&tp, 1, Nanos::from_secs(2));
        assert_eq!((cc.ack_cnt, cc.tcp_cwnd), (15, 8));
        cc.update(&tp, 1, Nanos::from_secs(3));
        assert_eq!((cc.ack_cnt, cc.tcp_cwnd), (1, 9));
    }

    #[test]
    fn hystart_delay_increase_ends_slow_start() {
        let rtt = Nanos::from_ms(10);
        let mut cc = Cubic::new(false);
        let mut d = Driver::new(&mut cc, EcnMode::None, rtt);
        d.tp.snd_cwnd = 16;
        // ACKs 5 ms apart: never an ACK train (delta > 2 ms).
        for _ in 0..40 {
            d.now += Nanos::from_ms(5);
            d.ack(&mut cc, 1, 0, rtt);
        }
        assert!(d.tp.in_slow_start(), "flat RTT must not end slow start");
        // delay_min = 10 ms; threshold = 10 + clamp(10/8, 4, 16) = 14 ms. 13 ms: stays.
        let start = d.tp.snd_nxt;
        while d.tp.snd_una <= start + 1448 * 20 {
            d.now += Nanos::from_ms(5);
            d.ack(&mut cc, 1, 0, Nanos::from_ms(13));
        }
        assert!(d.tp.in_slow_start(), "13 ms < 14 ms threshold");
        // 15 ms RTT for a whole round: the minimum of the first 8 samples is 15 > 14 ms.
        let start = d.tp.snd_nxt;
        while d.tp.snd_una <= start + 1448 * 20 && d.tp.in_slow_start() {
            d.now += Nanos::from_ms(5);
            d.ack(&mut cc, 1, 0, Nanos::from_ms(15));
        }
        assert!(!d.tp.in_slow_start());
        assert_eq!(d.tp.snd_ssthresh, d.tp.snd_cwnd);
    }

    #[test]
    fn hystart_ack_train_ends_slow_start() {
        // delay_min 10 ms: a train of ACKs 1 ms apart ends slow start once it spans more
        // than delay_min/2 = 5 ms after the round start, i.e. on the 6th ACK after the reset.
        let rtt = Nanos::from_ms(10);
        let mut cc = Cubic::new(false);
        let mut d = Driver::new(&mut cc, EcnMode::None, rtt);
        d.tp.snd_cwnd = 20;
        // ACKs 5 ms apart (no train) until snd_una passes end_seq = snd_nxt at init (10
        // packets): the 11th ACK starts a HyStart round at its own time.
        for _ in 0..11 {
            d.now += Nanos::from_ms(5);
            d.ack(&mut cc, 1, 0, rtt);
        }
        assert!(d.tp.in_slow_start());
        let mut n = 0;
        while d.tp.in_slow_start() && n < 50 {
            d.now += Nanos::from_ms(1);
            d.ack(&mut cc, 1, 0, rtt);
            n += 1;
        }
        // ACKs at +1..+6 ms; the 6th is the first with now − round_start = 6 ms > 5 ms.
        assert_eq!(n, 6);
        assert_eq!(d.tp.snd_ssthresh, d.tp.snd_cwnd);
    }

    /// Slow start at cwnd 20 (srtt 10 ms), end_seq = 20 packets from `init`; the first ACK
    /// (snd_una = 21 packets) starts a HyStart round at t0 = 1 s.
    fn hystart_setup() -> (Cubic, CcState) {
        let mut cc = Cubic::new(false);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 20;
        tp.srtt = Nanos::from_ms(10);
        tp.snd_nxt = 20 * 1448;
        cc.init(&mut tp);
        tp.snd_una = 21 * 1448;
        tp.snd_nxt = 40 * 1448;
        tp.packets_in_flight = 20;
        tp.is_cwnd_limited = true;
        (cc, tp)
    }

    fn sample(now: Nanos, rtt: Nanos) -> AckSample {
        AckSample {
            now,
            acked_pkts: 1,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    #[test]
    fn hystart_round_starts_in_pkts_acked_even_when_not_cwnd_limited() {
        // Linux hystart_update (called from cubictcp_acked) resets the round when snd_una
        // passes end_seq, whether or not cong_avoid runs (not cwnd-limited: it returns early).
        let (mut cc, mut tp) = hystart_setup();
        tp.is_cwnd_limited = false;
        tp.max_packets_out = 1; // 20 ≥ 2·1: not cwnd-limited in slow start
        let t0 = Nanos::from_secs(1);
        let ack = sample(t0, Nanos::from_ms(10));
        cc.pkts_acked(&mut tp, &ack);
        cc.cong_avoid(&mut tp, &ack);
        assert_eq!(cc.round_start, Some(t0));
        assert_eq!(cc.end_seq, 40 * 1448);
        assert_eq!(tp.snd_cwnd, 20);
    }

    #[test]
    fn hystart_ack_train_threshold_includes_ack_delay() {
        // Not paced: threshold = (delay_min + hystart_ack_delay)/2. Pacing rate Linux would
        // set: 1448·20·200%/10 ms = 5.79 MB/s → 4·65536/5.79e6 s = 45 ms, capped at 1 ms:
        // threshold = (10 + 1)/2 = 5.5 ms. ACKs every 0.5 ms after the round start at t0:
        // the 11th (t0 + 5.5 ms) is not past it (delay_min/2 = 5 ms would fire there), the
        // 12th (t0 + 6 ms) is.
        let (mut cc, mut tp) = hystart_setup();
        let t0 = Nanos::from_secs(1);
        let rtt = Nanos::from_ms(10);
        for k in 0..=12u64 {
            let ack = sample(t0 + Nanos::from_us(500 * k), rtt);
            cc.pkts_acked(&mut tp, &ack);
            assert_eq!(cc.found, k == 12, "k = {k}");
            if cc.found {
                break;
            }
            cc.cong_avoid(&mut tp, &ack);
            tp.snd_una += 1448;
        }
        assert_eq!(tp.snd_ssthresh, tp.snd_cwnd);
    }

    /// A HyStart round of ACKs 5 ms apart (never a train) each carrying an `rtt_ms` sample,
    /// with delay_min set to `delay_min_ms`: for each ACK, whether slow start has ended.
    fn delay_round(delay_min_ms: u64, rtt_ms: u64, acks: u64) -> Vec<bool> {
        let (mut cc, mut tp) = hystart_setup();
        cc.delay_min = Nanos::from_ms(delay_min_ms);
        tp.snd_nxt = 80 * 1448; // the round stays open for all the ACKs
        let t0 = Nanos::from_secs(1);
        (0..acks)
            .map(|k| {
                let ack = sample(t0 + Nanos::from_ms(5 * k), Nanos::from_ms(rtt_ms));
                cc.pkts_acked(&mut tp, &ack);
                if !cc.found {
                    cc.cong_avoid(&mut tp, &ack);
                    tp.snd_una += 1448;
                }
                cc.found
            })
            .collect()
    }

    /// hystart_update's delay test: the first `HYSTART_MIN_SAMPLES` (8) samples of a round
    /// only collect their minimum; the 9th compares it with delay_min + clamp(delay_min/8,
    /// 4, 16 ms) = 14 ms (delay_min 10 ms). With every sample at 20 ms and ACKs 5 ms apart
    /// (never a train), slow start ends on the 9th ACK of the round, not the 8th.
    #[test]
    fn hystart_delay_test_runs_from_the_ninth_sample_of_a_round() {
        let found = delay_round(10, 20, 12);
        let first = found.iter().position(|&f| f);
        assert_eq!(first, Some(8), "{found:?}");
    }

    /// The delay threshold's margin is delay_min/8 clamped to [4, 16] ms: at delay_min 80 ms
    /// it is 10 ms, so 89 ms samples stay in slow start and 91 ms ones end it.
    #[test]
    fn hystart_delay_margin_is_an_eighth_of_delay_min() {
        assert!(!delay_round(80, 89, 9)[8]);
        assert!(delay_round(80, 91, 9)[8]);
    }

    #[test]
    fn hystart_ack_train_threshold_is_not_halved_under_fq() {
        // fq_classify sets SK_PACING_FQ, so hystart_update keeps threshold = delay_min +
        // hystart_ack_delay = 10 + 1 = 11 ms. ACKs every 0.5 ms from the round start t0: the
        // 22nd (t0 + 11 ms) is not past it, the 23rd (t0 + 11.5 ms) is. Unpaced, the 12th
        // would fire (previous test).
        let (mut cc, mut tp) = hystart_setup();
        tp.fq_paced = true;
        // Keep the round open for all 24 ACKs: it ends once snd_una passes end_seq = snd_nxt.
        tp.snd_nxt = 80 * 1448;
        let t0 = Nanos::from_secs(1);
        let rtt = Nanos::from_ms(10);
        for k in 0..=23u64 {
            let ack = sample(t0 + Nanos::from_us(500 * k), rtt);
            cc.pkts_acked(&mut tp, &ack);
            assert_eq!(cc.found, k == 23, "k = {k}");
            if cc.found {
                break;
            }
            cc.cong_avoid(&mut tp, &ack);
            tp.snd_una += 1448;
        }
        assert_eq!(tp.snd_ssthresh, tp.snd_cwnd);
    }

    #[test]
    fn rto_resets_state() {
        let mut cc = Cubic::new(true);
        assert_eq!(cc.requested_ecn(), EcnMode::Classic);
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 100;
        cc.ssthresh(&mut tp);
        cc.set_state(&mut tp, CaState::Loss);
        assert_eq!(cc.w_max(), 0);
        assert!(cc.ecn, "configuration survives the reset");
    }

    /// What every ACK in congestion avoidance touches stays in the first cache line.
    #[test]
    fn per_ack_fields_share_the_first_cache_line() {
        use std::mem::{align_of, offset_of};
        assert_eq!(align_of::<Cubic>(), 64);
        for end in [
            offset_of!(Cubic, epoch_start) + std::mem::size_of::<Option<Nanos>>(),
            offset_of!(Cubic, last_time) + 8,
            offset_of!(Cubic, delay_min) + 8,
            offset_of!(Cubic, bic_k_s) + 8,
            offset_of!(Cubic, cnt) + 4,
            offset_of!(Cubic, ack_cnt) + 4,
            offset_of!(Cubic, last_cwnd) + 4,
            offset_of!(Cubic, tcp_cwnd) + 4,
            offset_of!(Cubic, bic_origin_point) + 4,
            offset_of!(Cubic, tcp_friendliness) + 1,
            offset_of!(Cubic, hystart) + 1,
            offset_of!(Cubic, found) + 1,
        ] {
            assert!(end <= 64, "a per-ACK field ends at byte {end}");
        }
    }
}
