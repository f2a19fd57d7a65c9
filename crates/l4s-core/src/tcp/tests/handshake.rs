//! Handshake and ECN negotiation: the SYN/SYN-ACK/ACK codepoints (RFC 3168 §6.1.1,
//! AccECN draft §3.1), SYN retransmission and the ECN fallback on SYN loss.

use super::*;

#[test]
fn config_validation_names_the_parameter() {
    assert!(TcpConfig::default().validate().is_ok());
    let e = TcpConfig {
        mss: 10,
        ..Default::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.param, "mss");
    let e = TcpConfig {
        min_rto: Nanos::from_secs(500),
        ..Default::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.param, "min_rto");
    let e = TcpConfig {
        bytes: Some(0),
        ..Default::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.param, "bytes");
    let bad = TcpConfig {
        delack_timeout: Nanos::ZERO,
        ..Default::default()
    };
    let e = TcpSender::try_new(0, bad.clone(), Box::new(Reno::default()))
        .err()
        .unwrap();
    assert_eq!(e.param, "delack_timeout");
    assert!(e.to_string().contains("(0, 1s]"), "{e}");
    assert!(TcpReceiver::try_new(0, &bad).is_err());
    assert!(TcpSender::try_new(0, TcpConfig::default(), Box::new(Reno::default())).is_ok());
}

#[test]
fn handshake_negotiation_matrix_end_to_end() {
    use EcnMode::*;
    let cases = [
        (None, None, None),
        (None, AccEcn, None),
        (Classic, None, None),
        (Classic, Classic, Classic),
        (Classic, AccEcn, Classic),
        (AccEcn, None, None),       // no-ECN server: plain TCP
        (AccEcn, Classic, Classic), // classic server answers ECE only: fall back to classic
        (AccEcn, AccEcn, AccEcn),
    ];
    for (req, sup, want) in cases {
        let cfg = TcpConfig {
            ecn: Some(req),
            ..sized(20 * MSS)
        };
        let rcfg = TcpConfig {
            ecn: Some(sup),
            ..Default::default()
        };
        let (mut s, mut r) = reno_pair(cfg, rcfg);
        let mut pipe = Pipe::new(Nanos::from_ms(10));
        pipe.run(&mut s, &mut r, Nanos::from_secs(10), |_, _| {});
        assert!(s.is_done(), "{req:?}/{sup:?}");
        assert_eq!(s.ecn_mode(), want, "sender {req:?}/{sup:?}");
        assert_eq!(r.ecn_mode(), want, "receiver {req:?}/{sup:?}");
        let syn = pipe.fwd_log[0].h();
        assert!(syn.has(tcp_flags::SYN));
        assert_eq!(
            syn.flags & (tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE),
            accecn::syn_flags(req)
        );
        assert_eq!(pipe.fwd_log[0].pkt.bytes, SYN_BYTES);
        let synack = pipe.rev_log[0].h();
        assert!(synack.has(tcp_flags::SYN) && synack.has(tcp_flags::ACK));
        let ecn_bits = synack.flags & (tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE);
        match want {
            None => assert_eq!(ecn_bits, 0),
            Classic => assert_eq!(ecn_bits, tcp_flags::ECE),
            // SYN is Not-ECT -> 0b010 = CWR only.
            AccEcn => assert_eq!(synack.ace(), 0b010),
        }
        // Data codepoint: Reno's data_ecn is ECT(0) once any ECN is negotiated.
        let want_ecn = if want == None { Ecn::NotEct } else { Ecn::Ect0 };
        assert!(
            pipe.data().all(|d| d.pkt.ecn == want_ecn),
            "{req:?}/{sup:?}"
        );
        // SYN, SYN/ACK and ACKs are Not-ECT.
        assert_eq!(pipe.fwd_log[0].pkt.ecn, Ecn::NotEct);
        assert!(pipe.rev_log.iter().all(|a| a.pkt.ecn == Ecn::NotEct));
        assert_eq!(r.delivered_bytes(), 20 * MSS);
    }
}

#[test]
fn synack_reflects_syn_ip_ecn_table() {
    // draft-ietf-tcpm-accurate-ecn: Not-ECT 010, ECT(1) 011, ECT(0) 100, CE 110.
    let table = [
        (Ecn::NotEct, 0b010),
        (Ecn::Ect1, 0b011),
        (Ecn::Ect0, 0b100),
        (Ecn::Ce, 0b110),
    ];
    for (ecn, ace) in table {
        let mut r = TcpReceiver::new(3, &TcpConfig::default());
        r.handle_packet(syn(accecn::syn_flags(EcnMode::AccEcn), ecn), Nanos::ZERO);
        let sa = r.poll_transmit(Nanos::ZERO).expect("syn/ack");
        assert_eq!(sa.tcp().unwrap().ace(), ace, "{ecn:?}");
        assert_eq!(sa.ecn, Ecn::NotEct);
        // Receiver ids carry the flow and the receiver bit.
        assert_eq!(sa.id >> 40, 3);
        assert_ne!(sa.id & RECEIVER_ID_BIT, 0);
    }
    // A classic SYN to an AccECN-capable server gets a classic SYN/ACK (ECE only).
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    r.handle_packet(
        syn(accecn::syn_flags(EcnMode::Classic), Ecn::NotEct),
        Nanos::ZERO,
    );
    let sa = r.poll_transmit(Nanos::ZERO).unwrap();
    assert_eq!(sa.tcp().unwrap().ace(), 0b001);
    assert_eq!(r.ecn_mode(), EcnMode::Classic);
}

#[test]
fn sender_takes_accecn_synack_and_reflects_it_in_first_ack() {
    let cfg = TcpConfig {
        ecn: Some(EcnMode::AccEcn),
        ..Default::default()
    };
    let mut s = TcpSender::new(7, cfg, Box::new(Reno::default()));
    let synp = s.poll_transmit(Nanos::ZERO).expect("syn");
    assert_eq!(synp.tcp().unwrap().ace(), 0b111);
    assert_eq!(synp.id, 7 << 40);
    let mut sa = TcpHeader {
        seq: 0,
        ack: 1,
        flags: tcp_flags::SYN | tcp_flags::ACK,
        ..Default::default()
    };
    sa.set_ace(0b100); // the SYN arrived ECT(0): any non-classic reflection means AccECN
    let mut p = Packet {
        transport: Transport::Tcp(sa),
        ecn: Ecn::Ce,
        ..Default::default()
    };
    p.bytes = SYN_BYTES;
    s.handle_packet(p, Nanos::from_ms(30));
    assert_eq!(s.ecn_mode(), EcnMode::AccEcn);
    // The first ACK reflects the SYN/ACK's IP-ECN (CE -> 0b110).
    let a = s.poll_transmit(Nanos::from_ms(30)).unwrap();
    assert_eq!(a.tcp().unwrap().payload_bytes, 0);
    assert_eq!(a.tcp().unwrap().ace(), 0b110);
    // Data then carry ACE = 5 (our r.cep for the ACK direction) and ECT(0) for Reno.
    let d = s.poll_transmit(Nanos::from_ms(30)).unwrap();
    assert_eq!(d.tcp().unwrap().ace(), 0b101);
    assert_eq!(d.bytes, 1448 + TCP_IP_HEADER_BYTES);
    assert_eq!(d.bytes, 1500);
    // SYN RTT sample: 30 ms -> 4·rttvar = 60 ms, floored to min_rto: RTO = 30 + 200 ms.
    assert_eq!(s.cc_state().srtt, Nanos::from_ms(30));
    assert_eq!(s.rto(), Nanos::from_ms(230));
}

#[test]
fn lost_syn_is_retransmitted_after_one_second_then_two() {
    let (mut s, mut r) = reno_pair(sized(5 * MSS), TcpConfig::default());
    let mut n_syn = 0;
    let mut pipe = Pipe::new(Nanos::from_ms(10)).fwd(move |p, _| {
        if p.tcp().unwrap().has(tcp_flags::SYN) {
            n_syn += 1;
            return n_syn > 2;
        }
        true
    });
    pipe.run(&mut s, &mut r, Nanos::from_secs(10), |_, _| {});
    let syn_times: Vec<Nanos> = pipe
        .fwd_log
        .iter()
        .filter(|x| x.h().has(tcp_flags::SYN))
        .map(|x| x.t)
        .collect();
    // RFC 6298 §2.1 initial RTO 1 s, doubled per retry: 0, 1 s, 3 s.
    assert_eq!(
        syn_times,
        vec![Nanos::ZERO, Nanos::from_secs(1), Nanos::from_secs(3)]
    );
    assert!(s.is_done());
    // Karn: the retransmitted SYN gives no RTT sample. The 5 data segments are within the
    // receiver's 16 initial quick ACKs, so every sample is 20 ms.
    assert_eq!(s.cc_state().srtt, Nanos::from_ms(20));
}

#[test]
fn ecn_falls_back_when_syns_are_lost() {
    // (request, SYNs lost) -> (ECN bits on each SYN sent, negotiated mode). Classic drops
    // ECE+CWR on every retransmitted SYN; AccECN keeps AE+CWR+ECE on the first retry only.
    use EcnMode::*;
    let acc = accecn::syn_flags(AccEcn);
    let cls = accecn::syn_flags(Classic);
    let cases: [(EcnMode, u32, Vec<u16>, EcnMode); 5] = [
        (Classic, 0, vec![cls], Classic),
        (Classic, 1, vec![cls, 0], None),
        (AccEcn, 0, vec![acc], AccEcn),
        (AccEcn, 1, vec![acc, acc], AccEcn),
        (AccEcn, 2, vec![acc, acc, 0], None),
    ];
    for (req, lost, want_flags, want_mode) in cases {
        let cfg = TcpConfig {
            ecn: Some(req),
            ..sized(3 * MSS)
        };
        let (mut s, mut r) = reno_pair(cfg, TcpConfig::default());
        let mut n_syn = 0;
        let mut pipe = Pipe::new(Nanos::from_ms(10)).fwd(move |p, _| {
            if p.tcp().unwrap().has(tcp_flags::SYN) {
                n_syn += 1;
                return n_syn > lost;
            }
            true
        });
        pipe.run(&mut s, &mut r, Nanos::from_secs(20), |_, _| {});
        let flags: Vec<u16> = pipe
            .fwd_log
            .iter()
            .filter(|x| x.h().has(tcp_flags::SYN))
            .map(|x| x.h().flags & (tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE))
            .collect();
        assert_eq!(flags, want_flags, "{req:?} with {lost} SYNs lost");
        assert_eq!(s.ecn_mode(), want_mode, "{req:?} with {lost} SYNs lost");
        assert!(s.is_done());
    }
}
