//! The fq/EDT sender host with TSQ (`qdisc = fq`) against Linux `tcp_write_xmit`,
//! `tcp_small_queue_check` and `tcp_is_cwnd_limited`, and internal pacing beside it.

use super::*;
use crate::tcp::fq_pacing::{truesize, tsq_limit, HostQdisc};

/// A CC with a fixed window and a fixed pacing rate (no growth: only the sender's rules act).
struct Fixed {
    cwnd: u32,
    pacing_bps: u64,
}

impl CongestionControl for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn requested_ecn(&self) -> EcnMode {
        EcnMode::None
    }
    fn init(&mut self, tp: &mut CcState) {
        tp.snd_cwnd = self.cwnd;
        tp.pacing_rate_bps = Some(self.pacing_bps);
    }
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        tp.snd_cwnd
    }
}

fn fq(cfg: TcpConfig) -> TcpConfig {
    TcpConfig {
        qdisc: HostQdisc::Fq,
        ..cfg
    }
}

#[test]
fn fq_releases_segments_at_their_edt_stamps_within_the_tsq_limit() {
    // The same schedule as internal pacing (`pacing_spaces_departures_by_payload_over_rate`):
    // under EDT, fq releases each skb at tcp_wstamp_ns, which advances by payload/rate
    // (1448·8/12 Mb/s = 965333 ns) from the 10th segment on, with half a packet of credit
    // after the idle gap. What differs is where a segment waits: in fq, handed down early.
    let log = Arc::new(Mutex::new(Log::default()));
    let cc = Probe {
        inner: Reno::default(),
        log,
        pacing_bps: Some(12_000_000),
        handles_ecn: false,
    };
    let mut s = TcpSender::new(0, fq(sized(20 * MSS)), Box::new(cc));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(50));
    // TSQ at 12 Mb/s: max(2·truesize, 1.5e6 >> 10 = 1464) = 2·truesize, so after each
    // transmission at most limit − 1 + truesize bytes are below TCP: two skbs.
    let t = truesize(1448);
    let limit = tsq_limit(t, 12_000_000 / 8, 0);
    assert_eq!(limit, 2 * t);
    let (mut max_held, mut max_wmem, mut early) = (0usize, 0u64, 0usize);
    pipe.run(&mut s, &mut r, Nanos::from_secs(5), |now, s| {
        let h = s.fq_host().expect("fq host");
        max_held = max_held.max(h.len());
        max_wmem = max_wmem.max(h.wmem_alloc());
        if h.next_departure().is_some_and(|d| d > now) {
            early += 1;
        }
    });
    let t_dep: Vec<u64> = pipe.data().map(|d| d.t.as_ns()).collect();
    let len_ns = 1448 * 8 * 1_000_000_000u64 / 12_000_000;
    let mut want = vec![100_000_000u64; 10];
    let mut next = 200_000_000u64;
    want.push(next);
    next += len_ns - len_ns / 2;
    for _ in 0..9 {
        want.push(next);
        next += len_ns;
    }
    assert_eq!(t_dep, want);
    // Each segment's TSval is its EDT stamp (skb_mstamp_ns), not the handover time.
    for d in pipe.data() {
        assert_eq!(d.h().ts_val, d.t);
    }
    assert_eq!(max_held, 2);
    assert!(max_wmem <= limit - 1 + t, "{max_wmem} > {}", limit - 1 + t);
    assert!(
        early > 0,
        "segments never waited in fq ahead of their departure"
    );
}

#[test]
fn tsq_allows_about_a_millisecond_of_data_at_high_rates() {
    // 200 Mb/s: pacing_rate >> 10 = 25e6 >> 10 = 24414 B > 2·truesize; a skb goes down while
    // 1 + held ≤ 24414, so 1 + k·2344 ≤ 24414 → k ≤ 10: at most 11 skbs below TCP.
    let cc = Fixed {
        cwnd: 100,
        pacing_bps: 200_000_000,
    };
    let mut s = TcpSender::new(0, fq(sized(400 * MSS)), Box::new(cc));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(10));
    let t = truesize(1448);
    let limit = tsq_limit(t, 25_000_000, 0);
    assert_eq!(limit, 24_414);
    let want = ((limit - 1) / t + 1) as usize;
    assert_eq!(want, 11);
    let mut max_held = 0usize;
    pipe.run(&mut s, &mut r, Nanos::from_secs(5), |_, s| {
        max_held = max_held.max(s.fq_host().expect("fq").len());
    });
    assert_eq!(max_held, want);
    assert!(s.is_done());
}

/// Fraction of ACK-time samples after `warmup` at which the window counted as used
/// (`tcp_is_cwnd_limited` as the CC sees it), for a cwnd-2 flow paced at 100 kb/s.
fn cwnd_limited_share(qdisc: HostQdisc) -> f64 {
    let cc = Fixed {
        cwnd: 2,
        pacing_bps: 100_000,
    };
    let cfg = TcpConfig {
        qdisc,
        ..TcpConfig::default()
    };
    let mut s = TcpSender::new(0, cfg, Box::new(cc));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let mut pipe = Pipe::new(Nanos::from_ms(30));
    let (mut yes, mut all) = (0u32, 0u32);
    pipe.run(&mut s, &mut r, Nanos::from_secs(20), |now, s| {
        if now > Nanos::from_secs(5) {
            all += 1;
            yes += s.cc_state().is_cwnd_limited() as u32;
        }
    });
    assert!(all > 100, "{all} samples");
    yes as f64 / all as f64
}

#[test]
fn a_slow_paced_window_is_cwnd_limited_under_fq_only() {
    // 100 kb/s: one 1448-B segment per 115.84 ms, longer than the 60 ms RTT. Paced inside
    // TCP, a segment leaves only at tcp_wstamp_ns and its ACK is back before the next one
    // leaves: in flight never reaches cwnd = 2, tcp_pacing_check (not the cwnd test) ends
    // every tcp_write_xmit, and is_cwnd_limited stays false. Under fq, TCP hands the next
    // segment to fq at once (TSQ allows two skbs), in flight reaches 2, the cwnd test ends
    // tcp_write_xmit and tcp_cwnd_validate records a cwnd-limited window.
    assert_eq!(cwnd_limited_share(HostQdisc::None), 0.0);
    assert_eq!(cwnd_limited_share(HostQdisc::Fq), 1.0);
}

/// Reno whose MSS drops to 500 B once 20 packets were delivered (as Prague 0.7 lowers
/// `mss_cache` through `tcp_sync_mss`).
struct ShrinkingMss(Reno);

impl CongestionControl for ShrinkingMss {
    fn name(&self) -> &'static str {
        "shrinking-mss"
    }
    fn requested_ecn(&self) -> EcnMode {
        EcnMode::None
    }
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        self.0.ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut CcState, ack: &AckSample) {
        self.0.cong_avoid(tp, ack);
        if tp.delivered >= 20 {
            tp.mss = 500;
        }
    }
}

#[test]
fn new_segments_take_a_lowered_mss_and_recovery_handles_mixed_sizes() {
    // 100 kB: segments sent before the change are 1448 B, those after it 500 B. One of
    // each size is lost; SACK recovery must find them by sequence number (the segment
    // index can no longer be computed from one MSS) and resend each whole.
    let total = 100_000u64;
    let mut s = TcpSender::new(0, sized(total), Box::new(ShrinkingMss(Reno::default())));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    let lost = [DATA_SEQ_START + 15 * MSS, 0];
    let mut lost_small = None;
    let mut seen = std::collections::HashSet::new();
    let mut pipe = Pipe::new(Nanos::from_ms(20)).fwd(move |p, _| {
        let h = *p.tcp().expect("tcp");
        if h.payload_bytes == 0 || !seen.insert(h.seq) {
            return true;
        }
        if h.payload_bytes == 500 && lost_small.is_none() {
            // The 5th small segment's first transmission.
            lost_small = Some(h.seq + 4 * 500);
        }
        !(h.seq == lost[0] || Some(h.seq) == lost_small)
    });
    pipe.run(&mut s, &mut r, Nanos::from_secs(30), |_, s| {
        s.check_invariants().expect("scoreboard");
    });
    assert!(s.is_done(), "transfer did not finish");
    assert_eq!(s.stats().delivered_bytes, total);
    let sizes: Vec<u32> = pipe.data().map(|d| d.h().payload_bytes).collect();
    assert!(sizes.iter().all(|&b| b == 1448 || b <= 500), "{sizes:?}");
    let small = sizes.iter().filter(|&&b| b == 500).count();
    assert!(small >= 50, "{small} segments of 500 B: {sizes:?}");
    assert!(
        s.stats().retransmits >= 2,
        "both losses recovered by retransmission"
    );
    // The lost 1448-B segment was resent whole (Linux would fragment it to the new MSS).
    assert!(pipe
        .data()
        .any(|d| d.h().seq == lost[0] && d.h().payload_bytes == 1448 && d.t > Nanos::from_ms(100)));
}

#[test]
fn retransmissions_get_twice_the_tsq_allowance() {
    // tcp_small_queue_check(sk, skb, 1) for a retransmission (`tcp_xmit_retransmit_queue`):
    // the limit is doubled. At 12 Mb/s new data stops at 2·truesize = 4688 B (two skbs held
    // in fq after a transmission: 1 + 2·2344 > 4688); a retransmission still goes down while
    // 1 + k·2344 ≤ 9376, k ≤ 3, so with losses to repair fq holds three or four skbs (how
    // many retransmissions one ACK releases is PRR's), never more. Without the doubling it
    // would never hold more than two.
    // cwnd 60 is three times the path's 20.7-packet BDP (12 Mb/s × 20 ms): the pacer, not
    // the window, sets the pace, so fq always holds what TSQ lets down.
    let cc = Fixed {
        cwnd: 60,
        pacing_bps: 12_000_000,
    };
    let mut s = TcpSender::new(0, fq(sized(200 * MSS)), Box::new(cc));
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    // The first transmission of segments 80..86 is lost: a burst SACK recovery repairs.
    let lost: Vec<u64> = (80..86).map(|i| DATA_SEQ_START + i * MSS).collect();
    let mut seen = std::collections::HashSet::new();
    let mut pipe = Pipe::new(Nanos::from_ms(20)).fwd(move |p, _| {
        let h = *p.tcp().expect("tcp");
        let first = h.payload_bytes > 0 && seen.insert(h.seq);
        !(first && lost.contains(&h.seq))
    });
    let t = truesize(1448);
    let new_limit = tsq_limit(t, 1_500_000, 0);
    let rtx_limit = tsq_limit(t, 1_500_000, 1);
    assert_eq!((new_limit, rtx_limit), (2 * t, 4 * t));
    let (mut max_held, mut max_wmem) = (0usize, 0u64);
    pipe.run(&mut s, &mut r, Nanos::from_secs(10), |_, s| {
        let h = s.fq_host().expect("fq");
        max_held = max_held.max(h.len());
        max_wmem = max_wmem.max(h.wmem_alloc());
    });
    assert!(s.is_done(), "transfer did not finish");
    assert!(
        s.stats().retransmits >= 6,
        "{} retransmits",
        s.stats().retransmits
    );
    // New data alone never leaves more than two skbs in fq (the other tests); a third or
    // fourth is a retransmission let down by the doubled allowance, and four is its bound.
    assert!((3..=4).contains(&max_held), "{max_held} skbs held");
    assert!(max_wmem <= rtx_limit - 1 + t, "{max_wmem}");
}
