//! Robustness: a drop-tail bottleneck, random loss/reordering/marks (proptest), stop
//! time, receive window, `tcp_cwnd_validate` state, start time.

use super::*;

#[test]
fn reno_through_a_drop_tail_bottleneck_keeps_the_link_busy() {
    // 10 Mb/s, base RTT 40 ms: BDP = 10e6·0.04/8/1500 = 33.3 packets; a BDP of buffer lets
    // Reno's halved window still fill the link, so goodput stays near the rate.
    for sack in [true, false] {
        let cfg = TcpConfig {
            sack,
            ..Default::default()
        };
        let rcfg = TcpConfig {
            sack,
            ..Default::default()
        };
        let mut s = TcpSender::new(0, cfg, Box::new(Reno::default()));
        let mut r = TcpReceiver::new(0, &rcfg);
        let mut pipe = Pipe::new(Nanos::from_ms(20)).bottleneck(Rate::from_mbps(10), 34);
        let mut broken = None;
        pipe.run(&mut s, &mut r, Nanos::from_secs(30), |_, s| {
            if broken.is_none() {
                broken = s.check_invariants().err();
            }
        });
        assert_eq!(broken, None);
        // Drops older than a second have been found and repaired by the end of the run.
        let drops = pipe
            .fwd_log
            .iter()
            .filter(|x| !x.kept && x.t < Nanos::from_secs(29))
            .count() as u64;
        let st = s.stats();
        let goodput_bps = r.delivered_bytes() as f64 * 8.0 / 30.0;
        // Payload share of the link: 1448/1500 of 10 Mb/s = 9.65 Mb/s.
        assert!(goodput_bps > 0.9 * 9.65e6, "sack={sack}: {goodput_bps}");
        assert!(drops > 0);
        // Every drop is retransmitted once found, and nothing else is (no spurious
        // retransmission: measured 94 drops / 94 retransmissions with SACK, 79 / 79 without).
        let all_drops = pipe.fwd_log.iter().filter(|x| !x.kept).count() as u64;
        assert!(
            st.retransmits >= drops,
            "sack={sack}: {} < {drops}",
            st.retransmits
        );
        assert!(
            st.retransmits <= all_drops,
            "sack={sack}: spurious retransmissions"
        );
        assert_eq!(s.rto_count(), 0);
        assert!(s.cc_state().srtt >= Nanos::from_ms(40));
    }
}

mod prop {
    use super::*;
    use crate::Rng;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the CC, loss and reordering of data and ACKs, ECN mode and SACK setting,
        /// a sized transfer completes, delivers every byte exactly, and the scoreboard stays
        /// coherent.
        #[test]
        fn transfer_survives_random_loss_and_marks(
            seed in 0u64..1_000_000,
            fwd_loss in 0.0f64..0.3,
            rev_loss in 0.0f64..0.3,
            ce in 0.0f64..0.3,
            sack in any::<bool>(),
            ecn in 0usize..3,
            n_segs in 1u64..120,
            tail in 0u64..1448,
            cc_idx in 0usize..6,
            jitter_ms in 0u64..15,
        ) {
            let mode = [EcnMode::None, EcnMode::Classic, EcnMode::AccEcn][ecn];
            let bytes = n_segs * MSS + tail;
            let cfg = TcpConfig { sack, ecn: Some(mode), ..sized(bytes) };
            let rcfg = TcpConfig { sack, ..Default::default() };
            let name = ["reno", "cubic", "dctcp", "prague", "bbr1", "bbr3"][cc_idx];
            let params = crate::cc::CcParams { seed, ..Default::default() };
            let cc = crate::cc::by_name_with(name, &params).expect("cc");
            let mut s = TcpSender::new(0, cfg, cc);
            let mut r = TcpReceiver::new(0, &rcfg);
            let mut rng_f = Rng::derive(seed, "fwd");
            let mut rng_r = Rng::derive(seed, "rev");
            let mut pipe = Pipe::new(Nanos::from_ms(10))
                .fwd(move |p, _| {
                    if p.ecn.is_ecn_capable() && rng_f.bernoulli(ce) {
                        p.ecn = Ecn::Ce;
                    }
                    !rng_f.bernoulli(fwd_loss)
                })
                .rev(move |_, _| !rng_r.bernoulli(rev_loss));
            // Up to 15 ms of random extra delay per packet reorders data and ACKs.
            pipe.jitter = Some((Nanos::from_ms(jitter_ms), Rng::derive(seed, "jitter")));
            let mut broken = None;
            // Heavy loss hits retransmissions too, and the RTO backs off up to max_rto.
            pipe.run(&mut s, &mut r, Nanos::from_secs(1_000_000), |now, s| {
                if broken.is_none() {
                    if let Err(e) = s.check_invariants() {
                        broken = Some(format!("{now}: {e}"));
                    }
                }
            });
            prop_assert!(broken.is_none(), "{:?}", broken);
            prop_assert!(s.is_done(), "not done: una {} of {}", s.snd_una(), bytes + 1);
            prop_assert_eq!(r.delivered_bytes(), bytes);
            let st = s.stats();
            prop_assert_eq!(st.in_flight_bytes, 0);
            prop_assert_eq!(s.in_flight(), 0);
            if mode == EcnMode::None {
                prop_assert_eq!(st.ce_acked, 0);
            }
            // Every forward drop of data was repaired by a retransmission.
            let data_drops = pipe.data().filter(|d| !d.kept).count() as u64;
            prop_assert!(st.retransmits >= data_drops);
        }
    }
}

#[test]
#[ignore = "speed probe, run by hand in release"]
fn speed_probe_big_window() {
    let mut s = TcpSender::new(0, TcpConfig::default(), Box::new(Reno::default()));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).bottleneck(Rate::from_mbps(1000), 8000);
    let t0 = std::time::Instant::now();
    pipe.run(&mut s, &mut r, Nanos::from_secs(30), |_, _| {});
    let st = s.stats();
    eprintln!(
        "wall {:?} pkts {} rtx {} rto {} goodput {:.1} Mb/s",
        t0.elapsed(),
        st.sent_pkts,
        st.retransmits,
        s.rto_count(),
        r.delivered_bytes() as f64 * 8.0 / 30.0 / 1e6
    );
}

#[test]
fn stop_ends_new_data_and_rwnd_caps_the_flight() {
    // Bulk flow stopped at 1 s: no new data leaves after it (retransmissions may), and
    // everything sent is acked.
    let cfg = TcpConfig {
        stop: Some(Nanos::from_secs(1)),
        ..Default::default()
    };
    let (mut s, mut r) = reno_pair(cfg, TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(25)).bottleneck(Rate::from_mbps(10), 30);
    pipe.run(&mut s, &mut r, Nanos::from_secs(5), |_, _| {});
    let stop = Nanos::from_secs(1);
    let max_before = pipe
        .data()
        .filter(|d| d.t < stop)
        .map(|d| d.h().seq)
        .max()
        .unwrap();
    assert!(pipe
        .data()
        .filter(|d| d.t >= stop)
        .all(|d| d.h().seq <= max_before));
    let st = s.stats();
    assert_eq!(st.in_flight_bytes, 0);
    assert_eq!(r.delivered_bytes(), st.delivered_bytes);
    assert!(st.delivered_bytes > 100 * MSS);
    assert!(!s.is_done(), "bulk flows are never done");
    assert!(s.cc_state().app_limited);
    // A 5-segment receive window caps the bytes outstanding.
    let cfg = TcpConfig {
        rwnd_bytes: 5 * MSS,
        ..sized(50 * MSS)
    };
    let (mut s, mut r) = reno_pair(cfg, TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(25));
    let mut max_out = 0;
    pipe.run(&mut s, &mut r, Nanos::from_secs(10), |_, s| {
        max_out = max_out.max(s.stats().in_flight_bytes);
    });
    assert!(s.is_done());
    assert_eq!(max_out, 5 * MSS);
}

#[test]
fn cc_state_carries_tcp_cwnd_validate_record() {
    // Linux tcp_cwnd_validate at send time: a bulk sender puts its whole IW10 out, the 10th
    // segment makes in_flight = 10 = cwnd (is_cwnd_limited, max_packets_out = 10); a 3-segment
    // transfer leaves 3 < 10 out (not limited, max_packets_out = 3, nothing left unsent).
    // The CC reads the record on the first ACK, when in flight is already below cwnd.
    for (cfg, limited, max_out, queue_empty) in [
        (TcpConfig::default(), true, 10, false),
        (sized(3 * MSS), false, 3, true),
    ] {
        let (mut s, mut r) = reno_pair(cfg, TcpConfig::default());
        let mut pipe = Pipe::new(Nanos::from_ms(25));
        let mut seen = None;
        // SYN/ACK back at 50 ms, data out at 50 ms, first ACK back at 100 ms (+ delayed ACK).
        pipe.run(&mut s, &mut r, Nanos::from_ms(400), |_, s| {
            if seen.is_none() && s.snd_una() > DATA_SEQ_START {
                let tp = s.cc_state();
                seen = Some((
                    tp.is_cwnd_limited,
                    tp.max_packets_out,
                    tp.write_queue_empty,
                    tp.internal_pacing,
                    tp.packets_in_flight < tp.snd_cwnd,
                ));
            }
        });
        assert_eq!(seen, Some((limited, max_out, queue_empty, true, true)));
    }
}

#[test]
fn start_time_delays_the_syn() {
    let cfg = TcpConfig {
        start: Nanos::from_ms(250),
        ..sized(MSS)
    };
    let (mut s, mut r) = reno_pair(cfg, TcpConfig::default());
    assert_eq!(s.poll_timeout(), Some(Nanos::from_ms(250)));
    assert!(s.poll_transmit(Nanos::from_ms(100)).is_none());
    let mut pipe = Pipe::new(Nanos::from_ms(25));
    pipe.run(&mut s, &mut r, Nanos::from_secs(5), |_, _| {});
    assert_eq!(pipe.fwd_log[0].t, Nanos::from_ms(250));
    assert!(s.is_done());
}
