//! CUBIC's window law through the TCP model under a frozen marking/drop probability: the mean
//! window against the closed forms of Linux `tcp_cubic.c` (Reno-friendly region) and RFC 9438
//! §5.1 (cubic region). The marks are periodic (one per 1/p data packets), the case the
//! closed forms solve exactly; Bernoulli marks give a different mean under the same law.

use super::*;

/// How the forward path signals congestion to the CUBIC flow.
#[derive(Clone, Copy, Debug)]
enum Signal {
    /// CE on the `n`-th, 2n-th, ... data packet (classic ECN, RFC 3168 feedback).
    MarkEvery(u64),
    /// Drop the `n`-th, 2n-th, ... data packet (no ECN).
    DropEvery(u64),
}

/// What one run shows of the window: its time-weighted mean, the timeouts, and the
/// reductions as (time in s, cwnd just before it, lowest cwnd after it).
struct CubicRun {
    mean: f64,
    rtos: u64,
    cuts: Vec<(f64, f64, f64)>,
}

/// One CUBIC flow from `from` to `until` through a 100 Mb/s bottleneck (above every window
/// here, so the window, not the link, limits) with base RTT `rtt`, under `signal`.
fn cubic_run(signal: Signal, rtt: Nanos, from: Nanos, until: Nanos) -> CubicRun {
    let ecn = matches!(signal, Signal::MarkEvery(_));
    let cc = crate::cc::by_name_with(
        "cubic",
        &crate::cc::CcParams {
            ecn,
            ..Default::default()
        },
    )
    .expect("cc");
    let mut s = TcpSender::new(0, TcpConfig::default(), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut n_data = 0u64;
    let mut pipe = Pipe::new(Nanos(rtt.0 / 2))
        .bottleneck(Rate::from_mbps(100), 100_000)
        .fwd(move |pkt, _| {
            if pkt.tcp().is_none_or(|h| h.payload_bytes == 0) {
                return true;
            }
            n_data += 1;
            match signal {
                Signal::MarkEvery(n) => {
                    if n_data.is_multiple_of(n) {
                        assert!(pkt.ecn.is_ecn_capable(), "classic ECN was negotiated");
                        pkt.ecn = Ecn::Ce;
                    }
                    true
                }
                Signal::DropEvery(n) => !n_data.is_multiple_of(n),
            }
        });
    let (mut area, mut last_t, mut last_w) = (0.0f64, from, 0.0f64);
    let mut cuts: Vec<(f64, f64, f64)> = Vec::new();
    let mut rising = true;
    pipe.run(&mut s, &mut r, until, |now, s| {
        let w = s.stats().cwnd_pkts;
        if now > from {
            area += last_w * (now - last_t).as_secs_f64();
            last_t = now;
            if rising && w < last_w - 0.5 {
                cuts.push((now.as_secs_f64(), last_w, w));
                rising = false;
            } else if !rising && w > last_w + 0.5 {
                rising = true;
            }
            if let Some(c) = cuts.last_mut() {
                if !rising {
                    c.2 = c.2.min(w);
                }
            }
        }
        last_w = w;
    });
    CubicRun {
        mean: area / (until - from).as_secs_f64(),
        rtos: s.rto_count(),
        cuts,
    }
}

/// β = 717/1024 and C = 410/1024 as `tcp_cubic.c` sets them (`beta`, `bic_scale`·10/1024).
const BETA: f64 = 717.0 / 1024.0;
const C: f64 = 410.0 / 1024.0;
/// The Reno-friendly increase per RTT: `tcp_cwnd` gains one per cwnd·`beta_scale`/8 packets
/// ACKed, `beta_scale` = 8·(1024 + 717)/3/(1024 − 717) = 15 in integers, so 8/15 per RTT
/// (RFC 9438 §4.3's 3(1 − β)/(1 + β) = 0.529).
const A_RENO: f64 = 8.0 / 15.0;

/// RFC 9438 §5.1 (RFC 8312 §5.1) average window under one loss per 1/p packets, at the
/// loss W = W_max: (C(3 + β)/(4(1 − β)))^¼ · RTT^¾ / p^¾ (RTT in seconds).
fn rfc9438_cubic_mean(p: f64, rtt_s: f64) -> f64 {
    (C * (3.0 + BETA) / (4.0 * (1.0 - BETA))).powf(0.25) * rtt_s.powf(0.75) / p.powf(0.75)
}

/// Reno-friendly region, deterministic: W̄ = sqrt(a(1 + β)/(2(1 − β)p)) with a = 8/15.
fn reno_friendly_mean(p: f64) -> f64 {
    (A_RENO * (1.0 + BETA) / (2.0 * (1.0 - BETA) * p)).sqrt()
}

/// The same law with Linux's one reduction round: a mark at W_m enters CWR for one RTT (PRR
/// sends β·W_m while the window falls from W_m to β·W_m, mean (1 + β)W_m/2, no increase),
/// then the linear growth at a per RTT from β·W_m back to W_m sends (1 − β²)W_m²/(2a). One
/// mark per N = 1/p packets: N = β·W_m + (1 − β²)W_m²/(2a); both phases average
/// (1 + β)W_m/2.
fn reno_friendly_mean_with_cwr_round(n: f64) -> f64 {
    let q = (1.0 - BETA * BETA) / (2.0 * A_RENO);
    let w_m = (-BETA + (BETA * BETA + 4.0 * q * n).sqrt()) / (2.0 * q);
    (1.0 + BETA) / 2.0 * w_m
}

/// Where the cubic region's reduction may fall under Linux's integer target. `bictcp_update`
/// floors C·|t − K|³ to whole packets, so the target equals W_max for |t − K| < C^(−1/3) =
/// 1.357 s: a mark anywhere on that plateau finds cwnd = W_max, no fast convergence follows,
/// and every such cycle repeats. For a cut at epoch time T (the epoch starts after the CWR
/// round; Linux aims at W(t + RTT), so cwnd(t) ≈ W(t) = W_max − C(K − t)³), one mark per N
/// packets requires N = β·W_max + ∫₀ᵀ W(t)dt / RTT; returns the mean window (CWR round
/// included) of the cycle with T = K + `offset`.
fn cubic_cycle_mean(n: f64, rtt_s: f64, offset: f64) -> f64 {
    let cycle = |w_m: f64| {
        let k = ((1.0 - BETA) * w_m / C).cbrt();
        let t = (k + offset).max(0.0);
        let integral = w_m * t - C * (k.powi(4) - (k - t).powi(4)) / 4.0;
        let packets = BETA * w_m + integral / rtt_s;
        let mean = ((1.0 + BETA) / 2.0 * w_m * rtt_s + integral) / (rtt_s + t);
        (packets, mean)
    };
    let (mut lo, mut hi) = (2.0f64, 1e6f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cycle(mid).0 > n {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    cycle(lo).1
}

/// Reno-friendly region: RTT 30 ms, one CE mark (classic ECN) or one drop per 2000 data
/// packets (p = 5·10⁻⁴).
///
/// Region: the cubic law would average rfc9438_cubic_mean(5e-4, 0.03) = 22.7 packets, the
/// Reno-friendly estimate 55.0, so `tcp_cwnd` sets cnt all cycle (W_max ≈ 62 gives
/// K = ∛((62 − 43)/C) = 3.6 s, longer than the 1.2 s cycle: the cubic target stays below
/// W_est). The crossover at 30 ms: equal means at p = RTT³·(1.0543/1.2298)⁴ = 1.46·10⁻⁵,
/// a window of 322 packets; below it Reno-friendly.
///
/// Expected: the law with the CWR round, reno_friendly_mean_with_cwr_round(2000) = 54.38
/// (without it, 55.00). Tolerance 5 %: cwnd is an integer that follows W_est one packet
/// at a time (`cnt = cwnd/(tcp_cwnd − cwnd)`: it lags W_est by up to one packet, ≈ 2 %),
/// ssthresh is floored (⌊62·717/1024⌋ = 43, not 43.4), and the run includes delayed ACKs and
/// PRR. Measured when written: 52.32 (marks) and 52.30 (drops), −3.8 %.
#[test]
fn cubic_reno_friendly_window_under_frozen_marks_and_drops() {
    let expected = reno_friendly_mean_with_cwr_round(2000.0);
    assert!((expected - 54.38).abs() < 0.01, "{expected}");
    assert!((reno_friendly_mean(5e-4) - 55.00).abs() < 0.01);
    assert!(
        rfc9438_cubic_mean(5e-4, 0.03) < 0.5 * expected,
        "Reno-friendly region"
    );
    for signal in [Signal::MarkEvery(2000), Signal::DropEvery(2000)] {
        let run = cubic_run(
            signal,
            Nanos::from_ms(30),
            Nanos::from_secs(10),
            Nanos::from_secs(40),
        );
        assert_eq!(run.rtos, 0, "{signal:?}");
        assert!(
            (run.mean / expected - 1.0).abs() < 0.05,
            "{signal:?}: mean window {:.2} vs {expected:.2} from the Linux rules",
            run.mean
        );
    }
}

/// Cubic region: RTT 200 ms, one CE mark or one drop per 5000 data packets (p = 2·10⁻⁴).
///
/// Region: RFC 9438 §5.1 gives 187.5 packets, the Reno-friendly law 87.0 (crossover at
/// 200 ms: p = 4.3·10⁻³, 18.7 packets), and W_est = β·W_max + 8/15 per RTT stays below
/// the cubic curve all cycle.
///
/// Expected, from the Linux rules: the reduction lands on the W_max plateau (see
/// `cubic_cycle_mean`), so the steady cycles range from T = K − 1.357 s (mean 222.0) to
/// T = K + 1.357 s (154.0); RFC 9438's closed form is the T = K member (183.0 with the CWR
/// round, 187.5 without). The mean must lie in that range, each reduction must be the
/// integer β cut of the window at the mark, and the measured cycle must be the cubic curve
/// through its own W_max: the packets it predicts for one cycle from (W_max, trough,
/// period) within 3 % of 5000. Measured when written: mean 201.4 (+7.4 % over RFC 9438),
/// W_max 221, trough 154, period 4.98 s, 4975 packets predicted. Drops gave the same once
/// the RTO stopped firing inside fast recovery (at srtt 200 ms an RTO of max(200 ms, srtt +
/// 4·rttvar) = 201 ms expired before the retransmission's ACK; Linux's is srtt + 200 ms).
#[test]
fn cubic_region_window_under_frozen_marks_and_drops() {
    let rtt_s = 0.2;
    let (hi, mid, lo) = (
        cubic_cycle_mean(5000.0, rtt_s, -C.powf(-1.0 / 3.0)),
        cubic_cycle_mean(5000.0, rtt_s, 0.0),
        cubic_cycle_mean(5000.0, rtt_s, C.powf(-1.0 / 3.0)),
    );
    assert!(
        (hi - 221.96).abs() < 0.05 && (mid - 183.02).abs() < 0.05,
        "{hi} {mid}"
    );
    assert!((lo - 153.95).abs() < 0.05, "{lo}");
    assert!((rfc9438_cubic_mean(2e-4, rtt_s) - 187.48).abs() < 0.01);
    assert!(reno_friendly_mean(2e-4) < 0.5 * mid, "cubic region");
    for signal in [Signal::MarkEvery(5000), Signal::DropEvery(5000)] {
        // The slow-start overshoot (2264 packets) takes ~35 s of fast-convergence cycles
        // to settle.
        let run = cubic_run(
            signal,
            Nanos::from_ms(200),
            Nanos::from_secs(50),
            Nanos::from_secs(160),
        );
        assert_eq!(
            run.rtos, 0,
            "{signal:?}: a single loss per cycle needs no RTO"
        );
        assert!(
            run.mean > lo && run.mean < hi,
            "{signal:?}: mean window {:.2} outside the Linux steady states [{lo:.2}, {hi:.2}]",
            run.mean
        );
        let n = run.cuts.len();
        assert!(n >= 10, "{signal:?}: {n} reductions");
        let (t0, _, _) = run.cuts[n - 3];
        let (t1, w_m, trough) = run.cuts[n - 2];
        assert_eq!(trough, (w_m * 717.0 / 1024.0).floor(), "{signal:?}");
        let period = t1 - t0;
        let k = ((w_m - trough) / C).cbrt();
        let t = period - rtt_s;
        assert!(
            (t - k).abs() < C.powf(-1.0 / 3.0),
            "{signal:?}: cut off the plateau"
        );
        let packets = trough + (w_m * t - C * (k.powi(4) - (k - t).powi(4)) / 4.0) / rtt_s;
        assert!(
            (packets / 5000.0 - 1.0).abs() < 0.03,
            "{signal:?}: W_max {w_m}, trough {trough}, period {period:.2} s predict {packets:.0} packets per mark"
        );
    }
}
