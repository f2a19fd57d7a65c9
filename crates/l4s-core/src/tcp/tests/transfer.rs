//! Data transfer, RTT (RFC 6298) and the receiver's ACKs: delayed and quick ACKs, SACK
//! blocks, the ECN echo of each feedback mode.

use super::*;

#[test]
fn sized_transfer_completes_with_partial_last_segment() {
    let n = 100 * MSS + 500;
    let (mut s, mut r) = reno_pair(sized(n), TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(25));
    pipe.run(&mut s, &mut r, Nanos::from_secs(30), |_, _| {});
    assert!(s.is_done());
    assert_eq!(r.delivered_bytes(), n);
    assert_eq!(r.stats().delivered_bytes, n);
    let st = s.stats();
    assert_eq!(st.delivered_bytes, n);
    assert_eq!(st.sent_pkts, 101);
    assert_eq!(st.retransmits, 0);
    assert_eq!(st.in_flight_bytes, 0);
    let last = pipe.data().last().unwrap();
    assert_eq!(last.h().payload_bytes, 500);
    assert_eq!(last.pkt.bytes, 552);
    // Ids are unique.
    let mut ids: Vec<u64> = pipe
        .fwd_log
        .iter()
        .chain(pipe.rev_log.iter())
        .map(|x| x.pkt.id)
        .collect();
    let len = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), len);
    // Every ACK acks two segments (flights are even: 10, 20, 40, ...) except the one for the
    // 101st, lone segment, held 40 ms by the delayed-ACK timer: samples are 50 ms and one
    // 90 ms at the end, srtt = 7/8·50 + 1/8·90 = 55 ms.
    assert_eq!(st.srtt, Nanos::from_ms(55));
}

#[test]
fn slow_start_doubles_per_round_with_delayed_acks() {
    // Linux Reno slow start counts packets acked (cwnd += acked), so an ACK for two segments
    // adds two: 10 -> 20 -> 40 -> 80 over three rounds.
    let (mut s, mut r) = reno_pair(TcpConfig::default(), TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50));
    let mut cwnd_at = Vec::new();
    // Handshake 0..100 ms, round k's ACKs arrive by 100 + 100k ms (+ 1 ms margin).
    let marks = [
        Nanos::from_ms(199),
        Nanos::from_ms(299),
        Nanos::from_ms(399),
    ];
    let mut i = 0;
    pipe.run(&mut s, &mut r, Nanos::from_ms(400), |now, s| {
        if i < marks.len() && now >= marks[i] {
            i += 1;
        }
        while cwnd_at.len() < i {
            cwnd_at.push(s.cc_state().snd_cwnd);
        }
    });
    assert_eq!(s.cc_state().snd_cwnd, 80);
    assert_eq!(cwnd_at[..2], [20, 40]);
}

#[test]
fn rtt_samples_follow_rfc6298_end_to_end() {
    // ACK every segment (delack_segments = 1) over a 100 ms RTT: every sample is 100 ms.
    let rcfg = TcpConfig {
        delack_segments: 1,
        ..Default::default()
    };
    let (mut s, mut r) = reno_pair(sized(MSS), rcfg);
    let mut pipe = Pipe::new(Nanos::from_ms(50));
    pipe.run(&mut s, &mut r, Nanos::from_secs(5), |_, _| {});
    // Two samples of 100 ms (SYN, one data segment): srtt = 100, rttvar = 3/4·50 = 37.5 ms,
    // 4·rttvar = 150 ms < min_rto, so RTO = 100 + 200 = 300 ms (Linux floors rttvar_us at
    // tcp_rto_min).
    let e = s.rtt_estimator();
    assert_eq!(e.srtt(), Nanos::from_ms(100));
    assert_eq!(e.rttvar(), Nanos::from_us(37_500));
    assert_eq!(s.rto(), Nanos::from_ms(300));
    assert_eq!(s.cc_state().min_rtt, Nanos::from_ms(100));
}

fn established_receiver(cfg: &TcpConfig, ecn_req: EcnMode) -> TcpReceiver {
    let mut r = TcpReceiver::new(0, cfg);
    r.handle_packet(syn(accecn::syn_flags(ecn_req), Ecn::NotEct), Nanos::ZERO);
    r.poll_transmit(Nanos::ZERO).expect("syn/ack");
    let ack = TcpHeader {
        seq: 1,
        ack: 1,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    r.handle_packet(
        Packet {
            transport: Transport::Tcp(ack),
            ..Default::default()
        },
        Nanos::ZERO,
    );
    r
}

fn seg(k: u64, ecn: Ecn, flags: u16) -> Packet {
    let h = TcpHeader {
        seq: seq_of(k),
        ack: 1,
        flags: tcp_flags::ACK | flags,
        payload_bytes: MSS as u32,
        ..Default::default()
    };
    Packet {
        bytes: 1500,
        ecn,
        transport: Transport::Tcp(h),
        ..Default::default()
    }
}

fn drain(r: &mut TcpReceiver, now: Nanos) -> Vec<TcpHeader> {
    let mut v = Vec::new();
    while let Some(p) = r.poll_transmit(now) {
        v.push(*p.tcp().unwrap());
    }
    v
}

#[test]
fn delayed_ack_every_second_segment_and_40ms_timer() {
    // Quick-ACK start-up off: these tests look at the steady delayed-ACK policy.
    let cfg = TcpConfig {
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut r = established_receiver(&cfg, EcnMode::None);
    let t = Nanos::from_ms;
    r.handle_packet(seg(0, Ecn::NotEct, 0), t(1));
    assert!(drain(&mut r, t(1)).is_empty());
    assert_eq!(r.poll_timeout(), Some(t(41)));
    r.handle_packet(seg(1, Ecn::NotEct, 0), t(2));
    let a = drain(&mut r, t(2));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].ack, seq_of(2));
    assert_eq!(r.poll_timeout(), None);
    // A lone segment is acked by the 40 ms timer.
    r.handle_packet(seg(2, Ecn::NotEct, 0), t(10));
    assert!(drain(&mut r, t(10)).is_empty());
    assert_eq!(r.poll_timeout(), Some(t(50)));
    r.handle_timeout(t(50));
    let a = drain(&mut r, t(50));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].ack, seq_of(3));
}

#[test]
fn first_sixteen_segments_are_quick_acked() {
    // Linux enters quick-ACK mode with TCP_MAX_QUICKACKS = 16 on the first data packet.
    let mut r = established_receiver(&TcpConfig::default(), EcnMode::None);
    let t = Nanos::from_ms(1);
    for k in 0..16 {
        r.handle_packet(seg(k, Ecn::NotEct, 0), t);
        let a = drain(&mut r, t);
        assert_eq!((a.len(), a[0].ack), (1, seq_of(k + 1)), "segment {k}");
    }
    // The 17th waits for the 18th.
    r.handle_packet(seg(16, Ecn::NotEct, 0), t);
    assert!(drain(&mut r, t).is_empty());
    r.handle_packet(seg(17, Ecn::NotEct, 0), t);
    assert_eq!(drain(&mut r, t)[0].ack, seq_of(18));
}

#[test]
fn out_of_order_data_is_acked_at_once_with_sack_blocks_most_recent_first() {
    // Quick-ACK start-up off: these tests look at the steady delayed-ACK policy.
    let cfg = TcpConfig {
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut r = established_receiver(&cfg, EcnMode::None);
    let t = Nanos::from_ms(1);
    r.handle_packet(seg(0, Ecn::NotEct, 0), t);
    drain(&mut r, t);
    // Holes at 1, 3-4, 6-7: segments 2, 5, 8 arrive; each is acked at once.
    for k in [2u64, 5, 8] {
        r.handle_packet(seg(k, Ecn::NotEct, 0), t);
        let a = drain(&mut r, t);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].ack, seq_of(1));
        assert_eq!(
            a[0].sack[0],
            (seq_of(k), seq_of(k + 1)),
            "newest block first"
        );
    }
    let a = drain(&mut r, t);
    assert!(a.is_empty());
    // Segment 4 joins 5: block [4,6) becomes first, then the most recent other ones, 8 and 2
    // (RFC 2018 §4).
    r.handle_packet(seg(4, Ecn::NotEct, 0), t);
    let a = drain(&mut r, t);
    assert_eq!(a[0].n_sack, 3);
    assert_eq!(
        a[0].sack,
        [
            (seq_of(4), seq_of(6)),
            (seq_of(8), seq_of(9)),
            (seq_of(2), seq_of(3))
        ]
    );
    // Filling hole 1 advances rcv_nxt to 3 and is acked at once (hole filled).
    r.handle_packet(seg(1, Ecn::NotEct, 0), t);
    let a = drain(&mut r, t);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].ack, seq_of(3));
    assert_eq!(a[0].n_sack, 2);
    assert_eq!(
        a[0].sack[..2],
        [(seq_of(4), seq_of(6)), (seq_of(8), seq_of(9))]
    );
    // A duplicate is acked at once.
    r.handle_packet(seg(0, Ecn::NotEct, 0), t);
    assert_eq!(drain(&mut r, t).len(), 1);
}

#[test]
fn accecn_receiver_quickacks_on_ce_change_and_counts_ace() {
    // Quick-ACK start-up off: these tests look at the steady delayed-ACK policy.
    let cfg = TcpConfig {
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut r = established_receiver(&cfg, EcnMode::AccEcn);
    assert_eq!(r.ecn_mode(), EcnMode::AccEcn);
    let t = Nanos::from_ms(1);
    // Linux acks at once on any change of the IP-ECN field from the previous packet (the
    // handshake ACK was Not-ECT), so the first ECT(1) segment is acked at once, ACE = 5.
    r.handle_packet(seg(0, Ecn::Ect1, 0), t);
    let a = drain(&mut r, t);
    assert_eq!((a.len(), a[0].ace()), (1, 5));
    // Same field again: delayed.
    r.handle_packet(seg(1, Ecn::Ect1, 0), t);
    assert!(drain(&mut r, t).is_empty());
    // CE after ECT(1): ACK at once (segments 1 and 2), r.cep = 6 -> ACE 6.
    r.handle_packet(seg(2, Ecn::Ce, 0), t);
    let a = drain(&mut r, t);
    assert_eq!((a.len(), a[0].ack, a[0].ace()), (1, seq_of(3), 6));
    // CE again: no change, delayed.
    r.handle_packet(seg(3, Ecn::Ce, 0), t);
    assert!(drain(&mut r, t).is_empty());
    // Back to ECT(1): ACK at once, r.cep = 7.
    r.handle_packet(seg(4, Ecn::Ect1, 0), t);
    let a = drain(&mut r, t);
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].ack, a[0].ace()), (seq_of(5), 7));
    assert_eq!(r.r_cep(), 7);
    // With quick-ACK off the CE change waits for the second segment.
    let cfg = TcpConfig {
        quickack_on_ce_change: false,
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut r = established_receiver(&cfg, EcnMode::AccEcn);
    r.handle_packet(seg(0, Ecn::Ce, 0), t);
    assert!(drain(&mut r, t).is_empty());
    r.handle_packet(seg(1, Ecn::Ce, 0), t);
    // r.cep = 5 + 2 = 7.
    assert_eq!(drain(&mut r, t)[0].ace(), 7);
}

#[test]
fn dctcp_receiver_echoes_ce_state_per_packet() {
    let cfg = TcpConfig {
        dctcp_ece: true,
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut r = established_receiver(&cfg, EcnMode::Classic);
    let t = Nanos::from_ms(1);
    let ece = |a: &TcpHeader| a.has(tcp_flags::ECE);
    r.handle_packet(seg(0, Ecn::Ect0, 0), t);
    assert!(drain(&mut r, t).is_empty());
    // CE after a delayed non-CE segment: ACK 0 without ECE, then ACK 1 with ECE.
    r.handle_packet(seg(1, Ecn::Ce, 0), t);
    let a = drain(&mut r, t);
    assert_eq!(a.len(), 2);
    assert_eq!((a[0].ack, ece(&a[0])), (seq_of(1), false));
    assert_eq!((a[1].ack, ece(&a[1])), (seq_of(2), true));
    // Two more CE: ordinary delayed ACK, ECE on.
    r.handle_packet(seg(2, Ecn::Ce, 0), t);
    assert!(drain(&mut r, t).is_empty());
    r.handle_packet(seg(3, Ecn::Ce, 0), t);
    let a = drain(&mut r, t);
    assert_eq!((a.len(), a[0].ack, ece(&a[0])), (1, seq_of(4), true));
    // Non-CE with nothing pending: one immediate ACK, ECE off (no latch, no CWR needed).
    r.handle_packet(seg(4, Ecn::Ect0, 0), t);
    let a = drain(&mut r, t);
    assert_eq!((a.len(), a[0].ack, ece(&a[0])), (1, seq_of(5), false));
}

#[test]
fn classic_receiver_latches_ece_until_cwr() {
    // Quick-ACK start-up off: these tests look at the steady delayed-ACK policy.
    let cfg = TcpConfig {
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut r = established_receiver(&cfg, EcnMode::Classic);
    assert_eq!(r.ecn_mode(), EcnMode::Classic);
    let t = Nanos::from_ms(1);
    r.handle_packet(seg(0, Ecn::Ect0, 0), t);
    assert!(drain(&mut r, t).is_empty());
    // First CE: quick-ACK mode for two ACKs (tcp_enter_quickack_mode(sk, 2)), with ECE.
    r.handle_packet(seg(1, Ecn::Ce, 0), t);
    let a = drain(&mut r, t);
    assert_eq!(a.len(), 1);
    assert!(a[0].has(tcp_flags::ECE));
    r.handle_packet(seg(2, Ecn::Ect0, 0), t);
    let a = drain(&mut r, t);
    assert_eq!((a.len(), a[0].ack), (1, seq_of(3)));
    assert!(a[0].has(tcp_flags::ECE));
    // Then unmarked data keep ECE on, with ordinary delayed ACKs.
    r.handle_packet(seg(3, Ecn::Ect0, 0), t);
    assert!(drain(&mut r, t).is_empty());
    r.handle_packet(seg(4, Ecn::Ect0, 0), t);
    let a = drain(&mut r, t);
    assert!(a[0].has(tcp_flags::ECE));
    // CWR clears the latch and is acked at once.
    r.handle_packet(seg(5, Ecn::Ect0, tcp_flags::CWR), t);
    let a = drain(&mut r, t);
    assert_eq!(a.len(), 1);
    assert!(!a[0].has(tcp_flags::ECE));
    // A CE-marked CWR segment latches again.
    r.handle_packet(seg(6, Ecn::Ce, tcp_flags::CWR), t);
    assert!(drain(&mut r, t)[0].has(tcp_flags::ECE));
}
