//! Classic ECN feedback (RFC 3168): ECE until CWR, one reduction per window, the ECT
//! codepoint of retransmissions.

use super::*;

#[test]
fn classic_ecn_ece_latched_until_cwr_and_one_reduction_per_window() {
    let (cc, log) = Probe::boxed(true);
    let mut s = TcpSender::new(0, sized(300 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    // Four marks within one window (the 80-segment flight 70..149).
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(ce_first_tx(vec![100, 105, 110, 115]));
    let mut at_exit = None;
    let mut prev = CaState::Open;
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, s| {
        if prev == CaState::Cwr && s.ca_state() != CaState::Cwr && at_exit.is_none() {
            at_exit = Some((s.cc_state().snd_cwnd, s.cc_state().snd_ssthresh));
        }
        prev = s.ca_state();
    });
    assert!(s.is_done());
    assert_eq!(s.ecn_mode(), EcnMode::Classic);
    let log = log.lock().unwrap();
    assert_eq!(
        log.ssthresh_calls, 1,
        "one reduction for marks within one window"
    );
    assert!(log.states.contains(&CaState::Cwr));
    assert!(!log.states.contains(&CaState::Recovery));
    let (cwnd, ssthresh) = at_exit.expect("CWR ended");
    assert_eq!(cwnd, ssthresh);
    // Exactly one CWR, on new data (the first segment sent after entering CWR).
    let cwr: Vec<&Sent> = pipe.data().filter(|d| d.h().has(tcp_flags::CWR)).collect();
    assert_eq!(cwr.len(), 1);
    let cwr_seq = cwr[0].h().seq;
    assert!(cwr_seq >= seq_of(150), "CWR rides on new data");
    // ECE on every ACK from the first CE until the ACK that covers the CWR segment.
    let acks: Vec<&Sent> = pipe.acks().collect();
    let first_ece = acks.iter().position(|a| a.h().has(tcp_flags::ECE)).unwrap();
    // The quick ACK for CE segment 100 acks up to 101 (segment 99 was delayed-acked with 98).
    assert_eq!(acks[first_ece].h().ack, seq_of(101));
    let clear = acks.iter().position(|a| a.h().ack > cwr_seq).unwrap();
    assert!(acks[first_ece..clear]
        .iter()
        .all(|a| a.h().has(tcp_flags::ECE)));
    assert!(acks[clear..].iter().all(|a| !a.h().has(tcp_flags::ECE)));
    // ce_delta_pkts = acked_pkts on ECE ACKs (Linux tcp_count_delivered), 0 otherwise, and
    // ce_acked is their sum.
    assert!(log
        .acks
        .iter()
        .all(|a| a.ce_delta_pkts == if a.ece { a.acked_pkts } else { 0 }));
    let ece_pkts: u64 = log.acks.iter().map(|a| a.ce_delta_pkts as u64).sum();
    assert!(ece_pkts >= 16);
    assert_eq!(s.stats().ce_acked, ece_pkts);
}

#[test]
fn classic_ecn_marks_two_windows_apart_reduce_twice() {
    let (cc, log) = Probe::boxed(true);
    let mut s = TcpSender::new(0, sized(800 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(ce_first_tx(vec![100, 500]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    assert!(s.is_done());
    assert_eq!(log.lock().unwrap().ssthresh_calls, 2);
    assert_eq!(pipe.data().filter(|d| d.h().has(tcp_flags::CWR)).count(), 2);
}

#[test]
fn classic_ecn_retransmissions_are_not_ect() {
    let (cc, _log) = Probe::boxed(true);
    let mut s = TcpSender::new(0, sized(300 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[100]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    let tx: Vec<&Sent> = pipe.data().filter(|d| d.h().seq == seq_of(100)).collect();
    assert_eq!(tx.len(), 2);
    assert_eq!(tx[0].pkt.ecn, Ecn::Ect0);
    assert_eq!(tx[1].pkt.ecn, Ecn::NotEct); // RFC 3168 §6.1.5
}

/// A `cong_control` CC that leaves the window alone and answers `ssthresh` with 5.
struct OwnWindow {
    log: Arc<Mutex<Log>>,
}

impl CongestionControl for OwnWindow {
    fn name(&self) -> &'static str {
        "own-window"
    }
    fn requested_ecn(&self) -> EcnMode {
        EcnMode::None
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn ssthresh(&mut self, _tp: &mut CcState) -> u32 {
        5
    }
    fn set_state(&mut self, _tp: &mut CcState, new: CaState) {
        self.log.lock().expect("log").states.push(new);
    }
    fn cwnd_event(&mut self, _tp: &mut CcState, ev: CwndEvent) {
        self.log.lock().expect("log").events.push(ev);
    }
}

#[test]
fn recovery_end_leaves_a_cong_control_window_alone() {
    // Linux tcp_end_cwnd_reduction returns at once for a CC with cong_control (BBR,
    // Prague): cwnd is not set to ssthresh and CA_EVENT_COMPLETE_CWR is not raised. The CC
    // never changes IW10 and says ssthresh = 5: after one fast recovery cwnd is still 10.
    let log = Arc::new(Mutex::new(Log::default()));
    let cc = Box::new(OwnWindow { log: log.clone() });
    let mut s = TcpSender::new(0, sized(300 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[100]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(30), |_, _| {});
    assert!(s.is_done());
    assert_eq!(s.rto_count(), 0);
    let log = log.lock().unwrap();
    assert!(log.states.contains(&CaState::Recovery));
    assert_eq!(log.states.last(), Some(&CaState::Open));
    assert!(!log.events.contains(&CwndEvent::CompleteCwr));
    assert_eq!(s.cc_state().snd_ssthresh, 5);
    assert_eq!(s.cc_state().snd_cwnd, 10);
}

#[test]
fn dctcp_retransmissions_keep_ect() {
    // Linux tcp_ecn_send: a CC flagged TCP_CONG_NEEDS_ECN (DCTCP) keeps ECT on
    // retransmissions over classic ECN; the same loss as above, resent as ECT(0).
    let cc = crate::cc::by_name("dctcp").expect("dctcp");
    assert!(cc.needs_ecn());
    let mut s = TcpSender::new(0, sized(300 * MSS), cc);
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50)).fwd(drop_first_tx(&[100]));
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
    assert_eq!(s.ecn_mode(), EcnMode::Classic);
    let tx: Vec<&Sent> = pipe.data().filter(|d| d.h().seq == seq_of(100)).collect();
    assert_eq!(tx.len(), 2);
    assert_eq!(tx[0].pkt.ecn, Ecn::Ect0);
    assert_eq!(tx[1].pkt.ecn, Ecn::Ect0);
}
