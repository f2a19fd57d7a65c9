//! RT-Prague against its closed form under a frozen marking probability, and its growth
//! without marks. A two-packet-delay harness: each data packet reaches the receiver R/2 after
//! it leaves, each feedback packet the sender R/2 later; no bottleneck, no queue.

use super::gcc::GccLoss;
use super::prague::{FeedbackCounters, RtPrague};
use super::receiver::RtReceiver;
use super::sender::{RtConfig, RtSender};
use super::Controller;
use crate::packet::{Ecn, Packet};
use crate::time::Nanos;
use crate::Endpoint;
use std::collections::VecDeque;

/// Drive `snd` and a receiver for `dur` with every `1/p`-th data packet CE-marked
/// (deterministic: packet n is marked when ⌊n·p⌋ grows). Returns (bytes sent in [from, dur),
/// the sender).
fn run(mut snd: RtSender, rtt: Nanos, p: f64, dur: Nanos, from: Nanos) -> (u64, RtSender) {
    let mut rcv = RtReceiver::new(0);
    let half = Nanos(rtt.0 / 2);
    let mut fwd: VecDeque<(Nanos, Packet)> = VecDeque::new();
    let mut rev: VecDeque<(Nanos, Packet)> = VecDeque::new();
    let mut now = Nanos::ZERO;
    let (mut n, mut bytes) = (0u64, 0u64);
    while now < dur {
        while let Some(mut pkt) = snd.poll_transmit(now) {
            n += 1;
            if ((n as f64) * p).floor() > (((n - 1) as f64) * p).floor() {
                pkt.ecn = Ecn::Ce;
            }
            pkt.sent_at = now;
            if now >= from {
                bytes += pkt.bytes as u64;
            }
            fwd.push_back((now + half, pkt));
        }
        while fwd.front().is_some_and(|x| x.0 <= now) {
            let (_, pkt) = fwd.pop_front().unwrap();
            rcv.handle_packet(pkt, now);
            while let Some(a) = rcv.poll_transmit(now) {
                rev.push_back((now + half, a));
            }
        }
        while rev.front().is_some_and(|x| x.0 <= now) {
            let (_, a) = rev.pop_front().unwrap();
            snd.handle_packet(a, now);
        }
        // Next instant anything happens.
        let mut next = Nanos::MAX;
        if let Some(t) = snd.poll_timeout() {
            next = next.min(t.max(now + Nanos(1)));
        }
        if let Some(x) = fwd.front() {
            next = next.min(x.0);
        }
        if let Some(x) = rev.front() {
            next = next.min(x.0);
        }
        if next == Nanos::MAX {
            break;
        }
        if snd.poll_timeout().is_some_and(|t| t <= next) {
            snd.handle_timeout(next);
        }
        now = next;
    }
    (bytes, snd)
}

fn prague(fps: u32, init_bps: u64, max_bps: u64) -> RtSender {
    RtSender::new(
        0,
        RtConfig {
            controller: Controller::Prague,
            fps,
            frame_budget: Nanos(1_000_000_000 / fps as u64),
            init_rate_bps: init_bps,
            min_rate_bps: 100_000,
            max_rate_bps: max_bps,
            max_packet_bytes: 1400,
            ecn: Ecn::Ect1,
            start: Nanos::ZERO,
            stop: None,
            encoder: None,
            seed: 0,
            feedback_interval: crate::rt::rfc8888::DEFAULT_FEEDBACK_INTERVAL,
        },
    )
    .unwrap()
}

// Unit pins of single conditions that the long-run closed forms below cannot see (issue 32:
// each of these survived every test when mutated). Each asserts an exact state.

/// draft-ietf-rmcat-gcc-02 §6 uses strict inequalities: f_l > 10 % cuts, f_l < 2 % grows, so
/// exactly 10 %, exactly 2 % and anything between (8 %) leave the target unchanged; 11 % cuts
/// by 1 − 0.5·0.11.
#[test]
fn gcc_loss_thresholds_are_strict_and_the_band_between_holds() {
    for f in [0.02, 0.08, 0.10] {
        let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
        g.apply_loss_fraction(f);
        assert_eq!(g.rate_bps(), 1_000_000.0, "f_l = {f}");
    }
    let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
    g.apply_loss_fraction(0.11);
    assert!((g.rate_bps() - 945_000.0).abs() < 1e-6, "{}", g.rate_bps());
    // The same through the counters: a report 100 ms after the first feedback, 1 lost of 10
    // (exactly 10 %) holds; the next, 11 lost of 100, cuts.
    let mut g = GccLoss::new(1_000_000, 100_000, 10_000_000, false);
    g.on_feedback(FeedbackCounters::default(), Nanos::ZERO);
    let fb = |received, lost| FeedbackCounters {
        received,
        ce: 0,
        lost,
    };
    g.on_feedback(fb(9, 1), Nanos::from_ms(100));
    assert_eq!(g.rate_bps(), 1_000_000.0);
    g.on_feedback(fb(98, 12), Nanos::from_ms(200));
    assert!((g.rate_bps() - 945_000.0).abs() < 1e-6, "{}", g.rate_bps());
}

/// udp_prague `get_alpha_shift`: (1 << ALPHA_SHIFT)·REF_RTT / frame interval = 16·25 ms / 20 ms
/// = 20 at 50 fps; `ACKReceived` moves α by (prob − α)/shift once a vrtt has passed. After a
/// 40 ms RTT sample (vrtt 40 ms) and feedback {10 received, 10 CE} at 50 ms: α = 1/20.
#[test]
fn rt_prague_alpha_gain_is_one_over_the_frame_rate_shift() {
    let mut cc = RtPrague::new(50, 10_000_000, 100_000, 1_000_000_000, 1400);
    assert_eq!(cc.alpha_shift(), 20.0);
    cc.on_rtt_sample(Nanos::from_ms(40));
    let fb = FeedbackCounters {
        received: 10,
        ce: 10,
        lost: 0,
    };
    cc.on_feedback(fb, 10, Nanos::from_ms(50));
    assert_eq!(cc.alpha(), 0.05);
}

/// udp_prague `ACKReceived` leaves cs_in_cwr only when the packets sent at the cut are
/// accounted for AND a vrtt has passed since it. fps 50 (reference RTT 20 ms), srtt 5 ms, so
/// vrtt = 20 ms: a CE at 10 ms cuts; a new CE at 16 ms (6 ms later) does not; one at 31 ms
/// (21 ms later) cuts again.
#[test]
fn rt_prague_cuts_at_most_once_per_virtual_rtt() {
    let mut cc = RtPrague::new(50, 10_000_000, 100_000, 1_000_000_000, 1400);
    cc.on_rtt_sample(Nanos::from_ms(5));
    let fb = |n: u64| FeedbackCounters {
        received: 10 * n,
        ce: n,
        lost: 0,
    };
    cc.on_feedback(fb(1), 10, Nanos::from_ms(10));
    assert_eq!(cc.cwr_events, 1);
    cc.on_feedback(fb(2), 20, Nanos::from_ms(16));
    assert_eq!(cc.cwr_events, 1);
    cc.on_feedback(fb(3), 30, Nanos::from_ms(31));
    assert_eq!(cc.cwr_events, 2);
}

/// Steady state under a frozen, deterministic marking fraction p at base RTT R ≥ the
/// reference RTT (so vrtt = srtt = R and the (srtt/vrtt)² scaler is 1), with full-size
/// packets s = 1400 B and the 1-packet increment (every cut resets `rtts_to_growth` to ≥ 7
/// vrtts and cuts come every ~1.5 R, so growth mode is never reached).
///
/// Let n be the packets per RTT (window W = n·s). Each non-CE ACK adds s·s/W = s/n bytes,
/// so a cycle of length T adds (1 − p)·(n·T/R)·s/n = (1 − p)·s·T/R. A cut removes W·α/2 with
/// α → p (the CE fraction per vrtt). A cycle is one RTT of CWR (it ends when the packets sent
/// at the cut are acknowledged and a vrtt has passed) plus the wait for the next CE, uniform
/// over the 1/p packets between marks: on average 1/(2p) packets = R/(2pn). Balance:
///   n·s·p/2 = (1 − p)·s·(1 + 1/(2pn))  ⇔  p²n² − 2(1 − p)p·n − (1 − p) = 0
///   n = [(1 − p) + √((1 − p)² + (1 − p))] / p,   rate = n·s·8/R.
/// p = 0.05, R = 40 ms: n = 46.22 packets, 12.94 Mb/s.
#[test]
fn rt_prague_converges_to_the_closed_form_rate_under_frozen_marking() {
    let (p, r) = (0.05f64, Nanos::from_ms(40));
    let q = 1.0 - p;
    let n = (q + (q * q + q).sqrt()) / p;
    let expect_bps = n * 1400.0 * 8.0 / r.as_secs_f64();
    assert!((expect_bps / 1e6 - 12.94).abs() < 0.01, "{expect_bps}");
    // fps 50: reference RTT 20 ms < R; frame budget = interval, so frames tile the time.
    let (bytes, snd) = run(
        prague(50, 10_000_000, 1_000_000_000),
        r,
        p,
        Nanos::from_secs(60),
        Nanos::from_secs(20),
    );
    let got_bps = bytes as f64 * 8.0 / 40.0;
    let alpha = snd.prague().unwrap().alpha();
    eprintln!(
        "RT-Prague p={p}: {:.3} Mb/s measured, {:.3} closed form, alpha {alpha:.4}",
        got_bps / 1e6,
        expect_bps / 1e6
    );
    assert!((alpha - p).abs() < 0.01, "α {alpha} vs p {p}");
    assert!(
        (got_bps / expect_bps - 1.0).abs() < 0.05,
        "measured {:.3} Mb/s, closed form {:.3} Mb/s",
        got_bps / 1e6,
        expect_bps / 1e6
    );
}

/// Without any mark the rate grows (1 packet per vrtt, then 1 ms worth of rate per vrtt once
/// `rtts_to_growth` has run out) up to max_rate, and each frame is max_rate·frame_budget.
#[test]
fn without_marks_rt_prague_reaches_max_rate_and_frames_follow() {
    let max = 20_000_000u64;
    let (_, mut snd) = run(
        prague(50, 1_000_000, max),
        Nanos::from_ms(20),
        0.0,
        Nanos::from_secs(30),
        Nanos::ZERO,
    );
    assert_eq!(snd.rate_bps(), max as f64);
    let log = match snd.take_app_log() {
        super::AppLog::FramesSent(v) => v,
        _ => panic!("no frame log"),
    };
    let last = log.iter().rev().find(|f| f.bytes > 0).unwrap();
    // 20 Mb/s · 20 ms / 8 = 50 000 bytes.
    assert_eq!(last.bytes, 50_000);
    let first = log.iter().find(|f| f.bytes > 0).unwrap();
    assert!(first.bytes < 5_000, "{}", first.bytes);
}
