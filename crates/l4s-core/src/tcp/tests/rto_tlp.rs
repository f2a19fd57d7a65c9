//! Timers: the retransmission timeout with backoff (RFC 6298) and the tail loss probe
//! (RFC 8985 §7, Linux `tcp_send_loss_probe`).

use super::*;

#[test]
fn rto_backs_off_1x_2x_4x_with_cwnd_one() {
    // RTT 100 ms: the SYN sample gives srtt 100, rttvar 50, RTO = 300 ms. Every data packet
    // is then lost, so no further sample arrives. Tail loss probes off: this is the RTO alone.
    let (cc, log) = Probe::boxed(false);
    let cfg = TcpConfig {
        tlp: false,
        ..Default::default()
    };
    let mut s = TcpSender::new(0, cfg, cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(|p, _| p.tcp().unwrap().payload_bytes == 0);
    let mut cwnd_after_rto = Vec::new();
    let mut seen = 0;
    pipe.run(&mut s, &mut r, Nanos::from_ms(5000), |_, s| {
        if s.rto_count() > seen {
            seen = s.rto_count();
            cwnd_after_rto.push(s.cc_state().snd_cwnd);
        }
    });
    let head: Vec<u64> = pipe
        .data()
        .filter(|d| d.h().seq == DATA_SEQ_START)
        .map(|d| d.t.as_ns() / 1_000_000)
        .collect();
    // First sent at 100 ms (SYN/ACK arrival); the timer armed then fires at 100 + 300 = 400,
    // then backs off: +600 -> 1000, +1200 -> 2200, +2400 -> 4600 ms.
    assert_eq!(head, vec![100, 400, 1000, 2200, 4600]);
    // Only the head is resent: cwnd = in flight (0 after marking all lost) + 1 = 1, and it
    // stays 1 because nothing is acknowledged.
    assert_eq!(pipe.data().count(), 10 + 4);
    assert_eq!(cwnd_after_rto, vec![1, 1, 1, 1]);
    assert_eq!(s.ca_state(), CaState::Loss);
    let log = log.lock().unwrap();
    // ssthresh is reduced once (10/2 = 5): later timeouts in Loss keep it (tcp_enter_loss).
    assert_eq!(log.ssthresh_calls, 1);
    assert_eq!(s.cc_state().snd_ssthresh, 5);
    assert_eq!(
        log.events.iter().filter(|e| **e == CwndEvent::Loss).count(),
        1
    );
    assert_eq!(s.stats().lost_pkts, 10);
    assert_eq!(s.stats().retransmits, 4);
}

#[test]
fn rto_recovers_go_back_n_in_slow_start() {
    // Lose the whole initial window once; the RTO resends it in order from cwnd 1 with slow
    // start up to ssthresh = 5 (tail loss probes off; with them see the TLP tests).
    let (cc, log) = Probe::boxed(false);
    let cfg = TcpConfig {
        tlp: false,
        ..sized(10 * MSS)
    };
    let mut s = TcpSender::new(0, cfg, cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe =
        Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(10), |_, _| {});
    assert!(s.is_done());
    assert_eq!(s.rto_count(), 1);
    assert_eq!(s.stats().retransmits, 10);
    let resent: Vec<u64> = pipe
        .data()
        .skip(10)
        .map(|d| (d.h().seq - 1) / MSS)
        .collect();
    assert_eq!(resent, (0..10).collect::<Vec<_>>());
    let log = log.lock().unwrap();
    assert_eq!(log.states.first(), Some(&CaState::Loss));
    assert_eq!(log.states.last(), Some(&CaState::Open));
    assert_eq!(log.ssthresh_calls, 1);
}

#[test]
fn tail_loss_probe_repairs_a_lost_tail_without_rto() {
    // 20 segments over a 100 ms RTT; the last two (18, 19) are lost. Segments 10..19 leave
    // at 200 ms; the ACK for 17 arrives at 300 ms with 2 packets out, so the probe timer is
    // min(2·srtt + 2 ms, RTO) = min(202, 300) ms (srtt 100 ms, RTO = srtt + min_rto):
    // the probe (a retransmission of 19, no new data) leaves at 502 ms; its SACK at 602 ms
    // shows 18, sent before it, lost: fast recovery resends 18 at 602 ms, acked at 702 ms.
    let (cc, log) = Probe::boxed(false);
    let mut s = TcpSender::new(0, sized(20 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[18, 19]));
    let mut done_at = None;
    pipe.run(&mut s, &mut r, Nanos::from_secs(10), |now, s| {
        if s.is_done() && done_at.is_none() {
            done_at = Some(now);
        }
    });
    assert!(s.is_done());
    assert_eq!(s.rto_count(), 0);
    assert_eq!(s.tlp_probes(), 1);
    let tx: Vec<(u64, u64)> = pipe
        .data()
        .filter(|d| d.h().seq >= seq_of(18))
        .map(|d| ((d.h().seq - 1) / MSS, d.t.as_ns() / 1_000_000))
        .collect();
    assert_eq!(tx, vec![(18, 200), (19, 200), (19, 502), (18, 602)]);
    assert_eq!(done_at, Some(Nanos::from_ms(702)));
    let log = log.lock().unwrap();
    assert_eq!(log.ssthresh_calls, 1);
    assert!(log.states.contains(&CaState::Recovery));
    // Without the probe the same losses wait for the RTO (600 ms) and restart from cwnd 1.
    let (cc, _log) = Probe::boxed(false);
    let cfg = TcpConfig {
        tlp: false,
        ..sized(20 * MSS)
    };
    let mut s = TcpSender::new(0, cfg, cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[18, 19]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(10), |_, _| {});
    assert_eq!((s.rto_count(), s.tlp_probes()), (1, 0));
}

#[test]
fn tail_loss_probe_sends_new_data_when_there_is_some() {
    // Bulk flow whose ACKs all stop after the first flight: the probe is a new segment
    // (cwnd ignored), sent once; the RTO follows.
    let (cc, _log) = Probe::boxed(false);
    let mut s = TcpSender::new(0, TcpConfig::default(), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).rev(|p, _| p.tcp().unwrap().has(tcp_flags::SYN));
    pipe.run(&mut s, &mut r, Nanos::from_ms(1000), |_, _| {});
    // IW 10 at 100 ms; no ACK ever: PTO = min(2·100 + 2, RTO 300) = 202 ms -> probe = new
    // segment 10 at 302 ms; RTO restarts then: 302 + 300 = 602 ms.
    let t: Vec<(u64, u64)> = pipe
        .data()
        .map(|d| ((d.h().seq - 1) / MSS, d.t.as_ns() / 1_000_000))
        .collect();
    assert_eq!(t[9..], [(9, 100), (10, 302), (0, 602)]);
    assert_eq!(s.tlp_probes(), 1);
}
