//! The TSO host inside the sender, packet by packet through a fixed-delay pipe: Prague's
//! bursts follow `prague_tso_segs`; unpaced segments keep the NIC's spacing; behind a
//! bottleneck an ACK-clocked sender's bursts follow `tcp_tso_should_defer`.

use std::collections::BTreeMap;

use super::{TcpConfig, TcpReceiver, TcpSender};
use crate::cc::CcParams;
use crate::packet::Packet;
use crate::time::{Nanos, Rate};
use crate::Endpoint;

/// One departure: time, payload bytes, the sender's pacing rate just before it.
struct Departure {
    t: Nanos,
    payload: u32,
    pacing_bps: u64,
}

/// Runs `cc` through a 10 ms one-way pipe without a rate limit for `until`; returns the data
/// departures.
fn departures(cc: &str, nic: Rate, until: Nanos) -> Vec<Departure> {
    let cfg = TcpConfig {
        tso_nic_rate: Some(nic),
        ..Default::default()
    };
    let params = CcParams {
        accecn: true,
        ..Default::default()
    };
    let cc = crate::cc::by_name_with(cc, &params).expect("cc");
    let mut s = TcpSender::new(0, cfg.clone(), cc);
    let one_way = Nanos::from_ms(10);
    let mut out = Vec::new();
    drive(
        &mut s,
        until,
        one_way,
        |s| s.stats().pacing_bps,
        |now, p, pacing_bps| {
            if let Some(h) = p.tcp().filter(|h| h.payload_bytes > 0) {
                out.push(Departure {
                    t: now,
                    payload: h.payload_bytes,
                    pacing_bps,
                });
            }
            Some(now + one_way)
        },
    );
    out
}

/// The sender and a default receiver packet by packet until `until`: `pre` reads the
/// sender's state before each transmission, `sent` gets each data/ACK packet the sender
/// sends with that state and returns its arrival time at the receiver (None: lost); ACKs
/// take `one_way` back.
fn drive<T>(
    s: &mut TcpSender,
    until: Nanos,
    one_way: Nanos,
    mut pre: impl FnMut(&TcpSender) -> T,
    mut sent: impl FnMut(Nanos, &Packet, T) -> Option<Nanos>,
) {
    let mut r = TcpReceiver::new(0, &TcpConfig::default());
    // (time, seq) → (to receiver, packet)
    let mut events: BTreeMap<(Nanos, u64), (bool, Packet)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut now = Nanos::ZERO;
    while now < until {
        loop {
            let state = pre(s);
            let Some(p) = s.poll_transmit(now) else { break };
            seq += 1;
            if let Some(at) = sent(now, &p, state) {
                events.insert((at, seq), (true, p));
            }
        }
        while let Some(a) = r.poll_transmit(now) {
            seq += 1;
            events.insert((now + one_way, seq), (false, a));
        }
        let mut next = events.keys().next().map(|k| k.0);
        for t in [s.poll_timeout(), r.poll_timeout()].into_iter().flatten() {
            next = Some(next.map_or(t, |n: Nanos| n.min(t)));
        }
        let Some(t) = next else { break };
        now = t.max(now);
        while let Some((&k, _)) = events.iter().next().filter(|(k, _)| k.0 <= now) {
            let (to_rcv, p) = events.remove(&k).expect("event");
            if to_rcv {
                r.handle_packet(p, now);
            } else {
                s.handle_packet(p, now);
            }
        }
        if s.poll_timeout().is_some_and(|d| d <= now) {
            s.handle_timeout(now);
        }
        if r.poll_timeout().is_some_and(|d| d <= now) {
            r.handle_timeout(now);
        }
    }
}

/// Bursts: runs of departures each one NIC serialisation time (1500 B) after the previous.
fn bursts(d: &[Departure], nic: Rate) -> Vec<(usize, usize)> {
    let gap = nic.tx_time(1500);
    let mut out = vec![(0usize, 1usize)];
    for i in 1..d.len() {
        let last = out.last_mut().expect("burst");
        if d[i].t - d[i - 1].t == gap {
            last.1 += 1;
        } else {
            out.push((i, 1));
        }
    }
    out
}

/// Prague 0.7: no burst is longer than max(1, pacing rate in packets of 1500 B per second
/// shifted right by 12) segments at the rate in force when it started (shorter ones are cut by the window,
/// as `tcp_write_xmit` cuts an skb to the cwnd quota), and bursts of exactly that size appear
/// at several rates as slow start raises the rate.
#[test]
fn prague_bursts_follow_prague_tso_segs() {
    let nic = Rate::from_mbps(10_000);
    let d = departures("prague", nic, Nanos::from_ms(600));
    let mut exact = std::collections::BTreeSet::new();
    let mut checked = 0;
    for (start, len) in bursts(&d, nic) {
        let rate = d[start].pacing_bps;
        // Pacing starts at the 10th data segment (the initial window leaves unpaced); far
        // below the NIC rate, or a burst's pacing gap could fall under the NIC's spacing.
        if start < 10 || rate == 0 || rate > nic.bps() / 4 || d[start].payload < 1448 {
            continue;
        }
        let want = ((rate / 8 / 1500) >> 12).max(1) as usize;
        checked += 1;
        assert!(len <= want, "burst of {len} at {rate} b/s, rule {want}");
        if len == want {
            exact.insert(want);
        }
    }
    assert!(checked > 100, "{checked} bursts");
    assert!(exact.len() >= 3, "complete bursts only of sizes {exact:?}");
}

/// Cubic is not paced: its segments leave as the window opens, never closer together than the
/// NIC's serialisation time of a 1500-byte packet (without TSO they could leave at one
/// instant). The burst size, `tcp_tso_autosize`, is checked by hand in `tso::tests`.
#[test]
fn unpaced_segments_leave_at_the_nic_rate() {
    let nic = Rate::from_mbps(1_000);
    let d = departures("cubic", nic, Nanos::from_ms(400));
    assert!(d.len() > 1000, "{} departures", d.len());
    let gap = nic.tx_time(1500);
    let min = d.windows(2).map(|w| w[1].t - w[0].t).min().expect("gaps");
    assert_eq!(min, gap);
}

/// One data departure behind a bottleneck: time, payload, and what `tcp_tso_autosize` asks
/// for at that instant (Linux's unpaced `sk_pacing_rate`: 120 % of cwnd·mss/srtt in
/// congestion avoidance), with the sender's state.
struct Sent {
    t: Nanos,
    open: bool,
    ssthresh_set: bool,
    want: u32,
}

/// Reno with TSO (1 Gb/s NIC) through a 50 Mb/s drop-tail bottleneck of `buffer` packets and
/// a 40 ms RTT, ACKs every other segment; returns the data departures until `until`.
fn behind_bottleneck(until: Nanos, buffer: usize) -> Vec<Sent> {
    let nic = Rate::from_mbps(1_000);
    let link = Rate::from_mbps(50);
    let cfg = TcpConfig {
        tso_nic_rate: Some(nic),
        ..Default::default()
    };
    let cc = crate::cc::by_name_with("reno", &CcParams::default()).expect("cc");
    let mut s = TcpSender::new(0, cfg.clone(), cc);
    let one_way = Nanos::from_ms(20);
    // Departure times from the bottleneck of the packets still in it (drop-tail).
    let mut in_link: std::collections::VecDeque<Nanos> = Default::default();
    let mut link_free = Nanos::ZERO;
    let mut out = Vec::new();
    drive(
        &mut s,
        until,
        one_way,
        |s| {
            (
                s.cc_state().clone(),
                s.ca_state() == crate::cc::CaState::Open,
            )
        },
        |now, p, (tp, open)| {
            if p.tcp().is_some_and(|h| h.payload_bytes > 0) {
                let bps = tp.snd_cwnd as u128 * tp.mss as u128 * 1_000_000_000
                    / tp.srtt.as_ns().max(1) as u128
                    * 120
                    / 100;
                out.push(Sent {
                    t: now,
                    open,
                    ssthresh_set: tp.snd_ssthresh < u32::MAX / 2,
                    want: super::tso::tso_autosize(bps as u64, tp.mss, tp.min_rtt),
                });
            }
            while in_link.front().is_some_and(|&d| d <= now) {
                in_link.pop_front();
            }
            if in_link.len() >= buffer {
                return None;
            }
            link_free = link_free.max(now) + link.tx_time(p.bytes as u64);
            in_link.push_back(link_free);
            Some(link_free + one_way)
        },
    );
    out
}

/// `tcp_tso_should_defer`: in congestion avoidance an ACK-clocked sender without fq, whose
/// ACKs each open about 2 segments of window, holds new data until the window has room for
/// a whole `tcp_tso_segs` burst (the oldest unacknowledged segment is an RTT old, more than
/// srtt/2, and 2-3 segments are far below a third of the window). So every burst it starts
/// in Open state is exactly `tcp_tso_autosize` of the rate at that instant (4-5 segments
/// here: 1.2·cwnd·mss/srtt >> 10 bytes), where without the rule a burst of about 2 segments
/// follows each ACK.
#[test]
fn tcp_tso_should_defer_makes_ack_clocked_bursts_of_tso_segs() {
    let nic = Rate::from_mbps(1_000);
    let gap = nic.tx_time(1500);
    let d = behind_bottleneck(Nanos::from_secs(6), 250);
    let mut checked = 0;
    let mut start = 0;
    for i in 1..=d.len() {
        if i < d.len() && d[i].t - d[i - 1].t == gap {
            continue;
        }
        let (b, len) = (&d[start], (i - start) as u32);
        // Congestion avoidance after the first loss episode, in Open state throughout.
        if b.ssthresh_set && d[start..i].iter().all(|x| x.open) && b.t > Nanos::from_secs(2) {
            assert_eq!(len, b.want, "burst at {:?}", b.t);
            checked += 1;
        }
        start = i;
    }
    assert!(checked > 500, "{checked} bursts checked");
}
