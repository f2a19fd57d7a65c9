//! AccECN feedback: exact CE counting through the ACE field, the safer delta when ACKs
//! are lost, CCs that handle ECN themselves.

use super::*;

/// AccECN flow whose second flight (segments 10..29, 20 packets) has its first `m` segments
/// CE-marked; with `ack_loss` every ACK for that flight but the last is dropped.
fn accecn_marks(m: u64, ack_loss: bool) -> (u64, Vec<AckSample>) {
    let (cc, log) = Probe::boxed(false);
    let cfg = TcpConfig {
        ecn: Some(EcnMode::AccEcn),
        ..sized(60 * MSS)
    };
    let mut s = TcpSender::new(0, cfg, cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50))
        .fwd(ce_first_tx((10..10 + m).collect()))
        .rev(move |p, _| {
            let a = p.tcp().unwrap().ack;
            !(ack_loss && a > seq_of(10) && a < seq_of(30))
        });
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    assert!(s.is_done());
    assert_eq!(s.ecn_mode(), EcnMode::AccEcn);
    assert_eq!(r.r_cep(), 5 + m);
    let acks = log.lock().unwrap().acks.clone();
    (s.stats().ce_acked, acks)
}

#[test]
fn accecn_counts_ce_exactly_without_ack_loss() {
    // Each ACK covers at most two packets (delayed ACK, quick ACK on CE change), so the
    // 3-bit ACE never wraps between ACKs and the sender counts every mark.
    for m in [9u64, 16, 20] {
        let (ce, acks) = accecn_marks(m, false);
        assert_eq!(ce, m, "m={m}");
        assert!(acks.iter().all(|a| a.acked_pkts <= 2));
        assert_eq!(acks.iter().map(|a| a.ce_delta_pkts as u64).sum::<u64>(), m);
        assert!(acks.iter().all(|a| a.ece == (a.ce_delta_pkts > 0)));
    }
}

#[test]
fn accecn_safer_delta_when_acks_are_lost() {
    // Only the ACK for segment 29 arrives: it newly acks N = 20 packets, s.cep = 5,
    // ACE = (5 + m) mod 8, delta = m mod 8, safer delta = 20 − ((20 − delta) mod 8):
    //   m = 9:  delta 1, 20 − (19 mod 8 = 3) = 17 (over-estimate: the safe side);
    //   m = 16: delta 0, 20 − (20 mod 8 = 4) = 16 (plain modulo would say 0);
    //   m = 20: delta 4, 20 − (16 mod 8 = 0) = 20.
    for (m, want) in [(9u64, 17u64), (16, 16), (20, 20)] {
        let (ce, acks) = accecn_marks(m, true);
        assert_eq!(ce, want, "m={m}");
        let big = acks
            .iter()
            .find(|a| a.acked_pkts == 20)
            .expect("one ACK for 20");
        assert_eq!(big.ce_delta_pkts as u64, want);
        assert!(big.ece);
    }
}

#[test]
fn accecn_with_cc_handling_ecn_does_not_enter_cwr() {
    let log = Arc::new(Mutex::new(Log::default()));
    let cc = Probe {
        inner: Reno::default(),
        log: log.clone(),
        pacing_bps: None,
        handles_ecn: true,
    };
    let cfg = TcpConfig {
        ecn: Some(EcnMode::AccEcn),
        ..sized(300 * MSS)
    };
    let mut s = TcpSender::new(0, cfg, Box::new(cc));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(ce_first_tx(vec![100, 250]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    let log = log.lock().unwrap();
    assert_eq!(log.ssthresh_calls, 0);
    assert!(!log.states.contains(&CaState::Cwr));
    assert_eq!(s.stats().ce_acked, 2);
    // Without handles_ecn the same marks (more than a window apart) give two CWR episodes.
    let (cc, log) = Probe::boxed(false);
    let cfg = TcpConfig {
        ecn: Some(EcnMode::AccEcn),
        ..sized(300 * MSS)
    };
    let mut s = TcpSender::new(0, cfg, cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(ce_first_tx(vec![100, 250]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    assert_eq!(log.lock().unwrap().ssthresh_calls, 2);
    assert_eq!(s.stats().ce_acked, 2);
    // AccECN does not use the CWR flag: every data segment carries the constant ACE = 5.
    assert!(pipe.data().all(|d| d.h().ace() == 0b101));
}
