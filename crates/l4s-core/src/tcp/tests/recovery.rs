//! Loss recovery: SACK (RFC 6675) and NewReno (RFC 6582) episodes, lost retransmissions,
//! PRR (RFC 6937).

use super::*;

fn recovery_case(sack: bool, losses: &'static [u64]) {
    // 300 segments over a 100 ms RTT. The losses sit in the fourth flight (segments 70..150
    // leave at ~400 ms with cwnd 80), far enough from its end for DupThresh SACKs / dupacks.
    let cfg = TcpConfig {
        sack,
        ..sized(300 * MSS)
    };
    let rcfg = TcpConfig {
        sack,
        ..Default::default()
    };
    let (cc, log) = Probe::boxed(false);
    let mut s = TcpSender::new(0, cfg, cc);
    let mut r = TcpReceiver::new(0, &rcfg);
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(losses));
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    let what = format!("sack={sack} losses={losses:?}");
    assert!(s.is_done(), "{what}");
    assert_eq!(r.delivered_bytes(), 300 * MSS);
    assert_eq!(s.rto_count(), 0, "{what}");
    let st = s.stats();
    assert_eq!(st.retransmits, losses.len() as u64, "{what}");
    assert_eq!(st.lost_pkts, losses.len() as u64, "{what}");
    // The retransmissions are exactly the lost segments.
    let mut resent: Vec<u64> = Vec::new();
    let mut first = std::collections::HashSet::new();
    for d in pipe.data() {
        let k = (d.h().seq - 1) / MSS;
        if !first.insert(k) {
            resent.push(k);
        }
    }
    assert_eq!(resent, losses.to_vec(), "{what}");
    assert_eq!(pipe.data().filter(|d| !d.kept).count(), losses.len());
    let log = log.lock().unwrap();
    assert_eq!(log.ssthresh_calls, 1, "{what}");
    let n_recovery = log
        .states
        .iter()
        .filter(|s| **s == CaState::Recovery)
        .count();
    assert_eq!(n_recovery, 1, "{what}");
    assert!(!log.states.contains(&CaState::Loss), "{what}");
    assert_eq!(s.ca_state(), CaState::Open);
    assert_eq!(
        log.events
            .iter()
            .filter(|e| **e == CwndEvent::CompleteCwr)
            .count(),
        1
    );
}

#[test]
fn sack_recovers_one_two_three_losses_in_one_episode() {
    recovery_case(true, &[100]);
    recovery_case(true, &[100, 103]);
    recovery_case(true, &[100, 103, 106]);
}

#[test]
fn newreno_recovers_one_two_three_losses_in_one_episode() {
    recovery_case(false, &[100]);
    recovery_case(false, &[100, 103]);
    recovery_case(false, &[100, 103, 106]);
}

#[test]
fn lost_retransmission_is_found_by_sack_without_rto() {
    // Segment 100 and its first retransmission are both dropped. The retransmission leaves
    // at ~500 ms with snd_nxt beyond segment 150; new data sent during recovery is SACKed
    // DupThresh segments past that point, so it is resent again in the same episode.
    let (cc, log) = Probe::boxed(false);
    let mut s = TcpSender::new(0, sized(400 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut n100 = 0;
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(move |p, _| {
        let h = p.tcp().unwrap();
        if h.payload_bytes > 0 && h.seq == seq_of(100) {
            n100 += 1;
            return n100 > 2;
        }
        true
    });
    let mut broken = None;
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, s| {
        if broken.is_none() {
            broken = s.check_invariants().err();
        }
    });
    assert_eq!(broken, None);
    assert!(s.is_done());
    assert_eq!(s.rto_count(), 0);
    assert_eq!(pipe.data().filter(|d| d.h().seq == seq_of(100)).count(), 3);
    assert_eq!(s.stats().retransmits, 2);
    assert_eq!(s.stats().lost_pkts, 2);
    let log = log.lock().unwrap();
    assert_eq!(log.ssthresh_calls, 1, "one recovery episode");
    assert!(!log.states.contains(&CaState::Loss));
}

#[test]
fn prr_ends_recovery_at_ssthresh() {
    // One loss with cwnd 80 at detection: ssthresh = 40 and, after PRR, cwnd = ssthresh when
    // snd_una passes the recovery point (tcp_end_cwnd_reduction); no slow-start overshoot.
    let (cc, log) = Probe::boxed(false);
    let mut s = TcpSender::new(0, sized(300 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[100]));
    let mut at_exit = None;
    let mut was_recovery = false;
    let mut max_in_recovery = 0;
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, s| {
        let rec = s.ca_state() == CaState::Recovery;
        if rec {
            max_in_recovery = max_in_recovery.max(s.in_flight());
        }
        if was_recovery && !rec && at_exit.is_none() {
            at_exit = Some((s.cc_state().snd_cwnd, s.cc_state().snd_ssthresh));
        }
        was_recovery = rec;
    });
    let (cwnd, ssthresh) = at_exit.expect("recovery happened");
    assert_eq!(log.lock().unwrap().ssthresh_calls, 1);
    // Flights of 10, 20, 40 then 80 segments (70..149) leave at 100, 200, 300, 400 ms. At
    // 500 ms the ACKs for 70..99 (15 delayed ACKs of 2) raise cwnd 80 -> 110; then the SACKs
    // for 101, 102, 103 make segment 100 lost (DupThresh 3): ssthresh = 110/2 = 55, and the
    // exit cwnd equals it.
    assert_eq!(ssthresh, 55);
    assert_eq!(cwnd, ssthresh);
    // PRR with the slow-start reduction bound: when recovery starts, segments 100..149 are
    // out, 49 SACKed and 1 lost, so in flight = 0 < ssthresh; each of the 47 SACKs from the
    // entry one on (103..149) allows sndcnt = prr_delivered − prr_out, so the burst after
    // that ACK train is 47 segments (the retransmission + 46 new) and in flight peaks at 47
    // until the retransmission's ACK ends recovery one RTT later.
    assert_eq!(max_in_recovery, 47);
}
