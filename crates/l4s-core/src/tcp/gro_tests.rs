//! Tests of the GRO host model: batches and ACKs for known arrival patterns, derived from the
//! Linux rules (`tcp_gro_receive`, `inet_gro_flush`, `skb_gro_receive`, `__tcp_ack_snd_check`,
//! `tcp_ecn_received_counters`).

use super::gro::{Gro, GroConfig, GroReceiver, SuperSegment, GRO_MAX_SIZE};
use super::{TcpConfig, TcpReceiver, TCP_IP_HEADER_BYTES};
use crate::packet::{tcp_flags, Ecn, Packet, TcpHeader, Transport};
use crate::time::{Nanos, Rate};
use crate::Endpoint;

const MSS: u32 = 1448;
const WIRE: u32 = MSS + TCP_IP_HEADER_BYTES; // 1500

fn tcp_pkt(id: u64, h: TcpHeader, bytes: u32, ecn: Ecn) -> Packet {
    let mut p = Packet::new(id, 0, bytes, ecn);
    p.transport = Transport::Tcp(h);
    p
}

/// Data segment `i` (payload `len`), all sent in the same ms tick unless `ts` says otherwise.
fn seg(i: u64, len: u32, ecn: Ecn, ts: Nanos) -> Packet {
    let h = TcpHeader {
        seq: 1 + i * MSS as u64,
        ack: 1,
        flags: tcp_flags::ACK,
        payload_bytes: len,
        ts_val: ts,
        ..Default::default()
    };
    tcp_pkt(i, h, len + TCP_IP_HEADER_BYTES, ecn)
}

fn full(i: u64, ecn: Ecn) -> Packet {
    seg(i, MSS, ecn, Nanos::ZERO)
}

/// Serialisation time of a 1500-byte packet at `mbps`: back-to-back arrivals behind a link.
fn spacing(mbps: u64) -> Nanos {
    Rate::from_mbps(mbps).tx_time(WIRE as u64)
}

/// Feed `arrivals` (time, packet) to a bare GRO layer, running each poll when it falls due
/// strictly before the next arrival; returns the batches as (segments, ECN) per delivery,
/// grouped per poll.
fn batches(cfg: GroConfig, arrivals: Vec<(Nanos, Packet)>) -> Vec<Vec<(u32, Ecn)>> {
    let mut g = Gro::new(cfg);
    let mut polls = Vec::new();
    let mut out: Vec<SuperSegment> = Vec::new();
    let mut flush = |g: &mut Gro, polls: &mut Vec<Vec<(u32, Ecn)>>| {
        g.poll(&mut out);
        polls.push(out.drain(..).map(|s| (s.segs, s.pkt.ecn)).collect());
    };
    for (t, p) in arrivals {
        if g.poll_at().is_some_and(|w| w < t) {
            flush(&mut g, &mut polls);
        }
        if g.arrive(p, t) {
            flush(&mut g, &mut polls);
        }
    }
    if g.poll_at().is_some() {
        flush(&mut g, &mut polls);
    }
    polls
}

fn at_rate(mbps: u64, pkts: Vec<Packet>) -> Vec<(Nanos, Packet)> {
    let gap = spacing(mbps);
    pkts.into_iter()
        .enumerate()
        .map(|(i, p)| (Nanos::from_ns(gap.as_ns() * i as u64), p))
        .collect()
}

fn window(us: u64) -> GroConfig {
    GroConfig {
        rx_usecs: Nanos::from_us(us),
        ..Default::default()
    }
}

#[test]
fn back_to_back_arrivals_merge_per_moderation_window() {
    // 1 Gb/s: a 1500-byte packet every 12 µs. A window opened by the packet at t0 closes at
    // t0 + rx_usecs and takes every packet that arrived by then: ⌊W/12⌋ + 1 of them.
    // W = 16 µs (mlx5 default): arrivals 0, 12 → 2; the next window opens at 24.
    let segs: Vec<Packet> = (0..10).map(|i| full(i, Ecn::Ect1)).collect();
    let got = batches(GroConfig::default(), at_rate(1000, segs.clone()));
    assert_eq!(got, vec![vec![(2, Ecn::Ect1)]; 5]);
    // W = 50 µs: arrivals 0, 12, 24, 36, 48 → 5 per poll.
    let got = batches(window(50), at_rate(1000, segs.clone()));
    assert_eq!(got, vec![vec![(5, Ecn::Ect1)]; 2]);
    // 100 Mb/s: one packet every 120 µs, longer than either window: nothing merges.
    let got = batches(GroConfig::default(), at_rate(100, segs.clone()));
    assert_eq!(got, vec![vec![(1, Ecn::Ect1)]; 10]);
    // 100 Mb/s with W = 250 µs: arrivals 0, 120, 240 → 3, then 360.. → 3, 3, and 1 left.
    let got = batches(window(250), at_rate(100, segs));
    let sizes: Vec<u32> = got.iter().map(|p| p[0].0).collect();
    assert_eq!(sizes, vec![3, 3, 3, 1]);
}

#[test]
fn a_ce_packet_never_merges_with_ect_ones() {
    // inet_gro_flush compares the whole TOS byte: ECT(1), ECT(1), CE, ECT(1), ECT(1) in one
    // poll give three super-segments, in order; two CE packets in a row merge with each other.
    let ecn = [Ecn::Ect1, Ecn::Ect1, Ecn::Ce, Ecn::Ect1, Ecn::Ect1];
    let pkts = (0..5).map(|i| full(i, ecn[i as usize])).collect();
    let got = batches(window(50), at_rate(1000, pkts));
    assert_eq!(
        got,
        vec![vec![(2, Ecn::Ect1), (1, Ecn::Ce), (2, Ecn::Ect1)]]
    );
    let ecn = [Ecn::Ect1, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ect1];
    let pkts = (0..5).map(|i| full(i, ecn[i as usize])).collect();
    let got = batches(window(50), at_rate(1000, pkts));
    assert_eq!(
        got,
        vec![vec![(1, Ecn::Ect1), (3, Ecn::Ce), (1, Ecn::Ect1)]]
    );
}

#[test]
fn a_gap_ends_the_window_and_the_next_packet_opens_one() {
    // 1 Gb/s pairs: 0, 12 µs, then a 200 µs gap, 212, 224 µs: two polls of 2 (W = 16 µs).
    let t = |us| Nanos::from_us(us);
    let arr = vec![
        (t(0), full(0, Ecn::Ect1)),
        (t(12), full(1, Ecn::Ect1)),
        (t(212), full(2, Ecn::Ect1)),
        (t(224), full(3, Ecn::Ect1)),
    ];
    assert_eq!(
        batches(GroConfig::default(), arr),
        vec![vec![(2, Ecn::Ect1)], vec![(2, Ecn::Ect1)]]
    );
}

#[test]
fn flush_rules_of_tcp_gro_receive() {
    let z = Nanos::ZERO;
    let all_at_once = |pkts: Vec<Packet>| {
        let cfg = GroConfig {
            rx_usecs: Nanos::from_us(100),
            rx_frames: 64,
        };
        let got = batches(cfg, pkts.into_iter().map(|p| (z, p)).collect());
        assert_eq!(got.len(), 1);
        got[0].iter().map(|b| b.0).collect::<Vec<u32>>()
    };
    // The IP length stays below 65536: 52 + n·1448 < 65536 → n ≤ 45, so 50 segments → 45 + 5.
    const { assert!(52 + 45 * 1448 < GRO_MAX_SIZE && 52 + 46 * 1448 >= GRO_MAX_SIZE) };
    assert_eq!(
        all_at_once((0..50).map(|i| full(i, Ecn::Ect1)).collect()),
        vec![45, 5]
    );
    // A short segment merges and completes the super-segment; the next one starts anew.
    let pkts = vec![
        full(0, Ecn::Ect1),
        full(1, Ecn::Ect1),
        seg(2, 500, Ecn::Ect1, z),
        {
            let mut p = full(3, Ecn::Ect1);
            // Starts right after the short segment.
            p.tcp_mut().unwrap().seq = 1 + 2 * MSS as u64 + 500;
            p
        },
    ];
    assert_eq!(all_at_once(pkts), vec![3, 1]);
    // A sequence hole (segment 2 missing) flushes: 0, 1 | 3, 4.
    let pkts = [0, 1, 3, 4].iter().map(|&i| full(i, Ecn::Ect1)).collect();
    assert_eq!(all_at_once(pkts), vec![2, 2]);
    // CWR on a segment flushes the held one, and that segment heads the next.
    let mut cwr = full(2, Ecn::Ect0);
    cwr.tcp_mut().unwrap().flags |= tcp_flags::CWR;
    let pkts = vec![
        full(0, Ecn::Ect0),
        full(1, Ecn::Ect0),
        cwr,
        full(3, Ecn::Ect0),
    ];
    assert_eq!(all_at_once(pkts), vec![2, 2]);
    // A new TSval tick (1 ms later) flushes; within the same ms tick it merges.
    let pkts = vec![
        seg(0, MSS, Ecn::Ect1, Nanos::from_us(100)),
        seg(1, MSS, Ecn::Ect1, Nanos::from_us(900)),
        seg(2, MSS, Ecn::Ect1, Nanos::from_us(1100)),
    ];
    assert_eq!(all_at_once(pkts), vec![2, 1]);
    // PSH merges and completes.
    let mut psh = full(1, Ecn::Ect1);
    psh.tcp_mut().unwrap().flags |= tcp_flags::PSH;
    let pkts = vec![full(0, Ecn::Ect1), psh, full(2, Ecn::Ect1)];
    assert_eq!(all_at_once(pkts), vec![2, 1]);
}

#[test]
fn rx_frames_fires_the_interrupt_before_the_timer() {
    // rx_frames = 3, a long window: every third arrival polls at once.
    let cfg = GroConfig {
        rx_usecs: Nanos::from_us(1000),
        rx_frames: 3,
    };
    let pkts = (0..7).map(|i| full(i, Ecn::Ect1)).collect();
    let got = batches(cfg, at_rate(1000, pkts));
    let sizes: Vec<u32> = got.iter().map(|p| p[0].0).collect();
    assert_eq!(sizes, vec![3, 3, 1]);
}

#[test]
fn config_ranges_are_checked_by_name() {
    let bad = GroConfig {
        rx_usecs: Nanos::from_us(4096),
        ..Default::default()
    };
    assert_eq!(bad.validate().unwrap_err().param, "rx_usecs");
    let bad = GroConfig {
        rx_frames: 0,
        ..Default::default()
    };
    assert_eq!(bad.validate().unwrap_err().param, "rx_frames");
    assert!(GroConfig::default().validate().is_ok());
}

// ----- through the TCP receiver -----------------------------------------------------------------

/// A GRO receiver after an AccECN handshake, out of quick-ACK mode.
fn accecn_receiver(cfg: GroConfig) -> GroReceiver {
    let tcfg = TcpConfig {
        initial_quickacks: 0,
        ..Default::default()
    };
    let mut g = GroReceiver::new(TcpReceiver::new(0, &tcfg), cfg);
    let syn = TcpHeader {
        flags: tcp_flags::SYN | tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE,
        ..Default::default()
    };
    let ack = TcpHeader {
        seq: 1,
        ack: 1,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    // SYN and the handshake's ACK carry no payload: GRO passes them up alone.
    for h in [syn, ack] {
        g.handle_packet(tcp_pkt(100, h, 60, Ecn::NotEct), Nanos::ZERO);
        while let Some(w) = g.poll_timeout() {
            g.handle_timeout(w);
        }
        while g.poll_transmit(Nanos::ZERO).is_some() {}
    }
    assert_eq!(g.receiver().ecn_mode(), crate::cc::EcnMode::AccEcn);
    g
}

/// Deliver `arrivals` (times after `t0`), run due polls and timers; return the ACKs'
/// (time, ack number, ACE).
fn acks_for(g: &mut GroReceiver, arrivals: Vec<(Nanos, Packet)>) -> Vec<(Nanos, u64, u8)> {
    let t0 = Nanos::from_ms(1);
    let mut acks = Vec::new();
    let drain = |g: &mut GroReceiver, t: Nanos, acks: &mut Vec<(Nanos, u64, u8)>| {
        while let Some(p) = g.poll_transmit(t) {
            let h = p.tcp().unwrap();
            acks.push((t, h.ack, h.ace()));
        }
    };
    for (dt, p) in arrivals {
        let t = t0 + dt;
        while let Some(w) = g.poll_timeout().filter(|&w| w < t) {
            g.handle_timeout(w);
            drain(g, w, &mut acks);
        }
        g.handle_packet(p, t);
        drain(g, t, &mut acks);
    }
    while let Some(w) = g.poll_timeout() {
        g.handle_timeout(w);
        drain(g, w, &mut acks);
    }
    acks
}

#[test]
fn one_ack_per_super_segment_and_ce_counted_per_segment() {
    // 20 segments back to back at 1 Gb/s, W = 50 µs: 4 polls of 5 segments. Each
    // super-segment leaves 5 segments (> one rcv_mss) unacknowledged, so each gets one ACK at
    // once (`__tcp_ack_snd_check`): 4 ACKs. Without GRO: 10 at once (segment 0 for its ECN
    // change from the handshake's Not-ECT, then every second segment), segment 19 waiting.
    let pkts: Vec<Packet> = (0..20).map(|i| full(i, Ecn::Ect1)).collect();
    let mut g = accecn_receiver(window(50));
    let acks = acks_for(&mut g, at_rate(1000, pkts.clone()));
    let want: Vec<u64> = (1..=4).map(|k| 1 + 5 * k * MSS as u64).collect();
    assert_eq!(acks.iter().map(|a| a.1).collect::<Vec<_>>(), want);
    assert_eq!(g.gro_stats().polls, 2 + 4); // the handshake's SYN and ACK took one each

    let mut plain = TcpReceiver::new(
        0,
        &TcpConfig {
            initial_quickacks: 0,
            ..Default::default()
        },
    );
    let mut n_plain = 0;
    for h in [
        TcpHeader {
            flags: tcp_flags::SYN | tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE,
            ..Default::default()
        },
        TcpHeader {
            seq: 1,
            ack: 1,
            flags: tcp_flags::ACK,
            ..Default::default()
        },
    ] {
        plain.handle_packet(tcp_pkt(100, h, 60, Ecn::NotEct), Nanos::ZERO);
        while plain.poll_transmit(Nanos::ZERO).is_some() {}
    }
    for (t, p) in at_rate(1000, pkts) {
        plain.handle_packet(p, t);
        while plain.poll_transmit(t).is_some() {
            n_plain += 1;
        }
    }
    assert_eq!(n_plain, 10);
}

#[test]
fn ace_stays_exact_when_ce_segments_merge() {
    // W = 50 µs at 1 Gb/s: polls of 5. Poll 1: ECT1 ×2 | CE | ECT1 ×2; poll 2: CE ×5.
    // Super-segments: [2], [CE 1], [2] then [CE 5]. r.cep = 5 + 1 + 5 = 11 (ACE 3), every
    // CE segment counted once (tcp_ecn_received_counters adds gso_segs for a CE skb).
    // ACKs: [2] → ACK at once (2 segments); [CE 1] → change-triggered ACK; [2] → ACK at once
    // (2 segments; also an ECN change); [CE 5] → ACK at once. ACE per ACK: 5, 6, 6, 11 mod 8.
    let ecn = [
        Ecn::Ect1,
        Ecn::Ect1,
        Ecn::Ce,
        Ecn::Ect1,
        Ecn::Ect1,
        Ecn::Ce,
        Ecn::Ce,
        Ecn::Ce,
        Ecn::Ce,
        Ecn::Ce,
    ];
    let pkts = (0..10).map(|i| full(i, ecn[i as usize])).collect();
    let mut g = accecn_receiver(window(50));
    let acks = acks_for(&mut g, at_rate(1000, pkts));
    assert_eq!(g.receiver().r_cep(), 11);
    let m = MSS as u64;
    assert_eq!(
        acks.iter().map(|a| (a.1, a.2)).collect::<Vec<_>>(),
        vec![
            (1 + 2 * m, 5),
            (1 + 3 * m, 6),
            (1 + 5 * m, 6),
            (1 + 10 * m, 3)
        ]
    );
}

#[test]
fn a_lone_segment_waits_for_the_delayed_ack_timer() {
    // 100 Mb/s (120 µs apart) with the default 16 µs window: every poll holds one segment, so
    // the receiver ACKs as without GRO: segment 0 at once (ECN change from the handshake's
    // Not-ECT), segment 2 (two unacknowledged), and segment 3 alone waits for the 40 ms
    // delayed-ACK timer armed at its poll (arrival + 16 µs).
    let pkts = (0..4).map(|i| full(i, Ecn::Ect1)).collect();
    let mut g = accecn_receiver(GroConfig::default());
    let arrivals = at_rate(100, pkts);
    let last = arrivals[3].0;
    let acks = acks_for(&mut g, arrivals);
    let m = MSS as u64;
    assert_eq!(
        acks.iter().map(|a| a.1).collect::<Vec<_>>(),
        vec![1 + m, 1 + 3 * m, 1 + 4 * m]
    );
    let t0 = Nanos::from_ms(1);
    assert_eq!(acks[0].0, t0 + Nanos::from_us(16));
    assert_eq!(
        acks[2].0,
        t0 + last + Nanos::from_us(16) + Nanos::from_ms(40)
    );
    assert_eq!(g.gro_stats().polls, 2 + 4); // the handshake's SYN and ACK took one each
}
