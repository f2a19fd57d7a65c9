//! TSO/GSO burst sizing and the departure times of a burst's segments (host burstiness).
//! Follows Linux net/ipv4/tcp_output.c `tcp_tso_autosize` / `tcp_tso_segs` (and the L4S team's
//! `ca_ops->tso_segs` hook that Prague's `prague_tso_segs` fills) and `tcp_update_skb_after_send`.
//!
//! A TSO skb of n segments leaves the qdisc at once and the NIC puts its segments on the wire
//! back to back at its line rate; the pacer then holds the next skb for skb->len / pacing rate
//! (the whole payload of the burst). Defaults: `sk_pacing_shift` 10 (~1 ms of data),
//! `tcp_min_tso_segs` 2, `tcp_tso_rtt_log` 9, `sk_gso_max_size` 65536 (`GSO_LEGACY_MAX_SIZE`).
//! Before a new burst of new data, `tcp_tso_should_defer` may hold the send until the window
//! has room for a whole burst ([`tso_should_defer`]); that is what makes an ACK-clocked
//! kernel sender without fq put bursts of `tcp_tso_segs` segments on the wire.

use crate::time::{Nanos, Rate};

/// `sk_pacing_shift` default: a burst of pacing_rate >> 10 bytes, about 1 ms of data.
pub const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_min_tso_segs` default.
pub const MIN_TSO_SEGS: u32 = 2;
/// `sysctl_tcp_tso_rtt_log` default: add gso_max_size >> (min_rtt_us >> 9).
pub const TSO_RTT_LOG: u32 = 9;
/// `sk_gso_max_size` default (`GSO_LEGACY_MAX_SIZE`).
pub const GSO_MAX_SIZE: u64 = 65_536;

/// `tcp_tso_autosize(sk, mss, tcp_min_tso_segs)` with the default sysctls: segments per TSO skb
/// at `pacing_bytes_per_s` and a minimum RTT of `min_rtt`.
pub fn tso_autosize(pacing_bytes_per_s: u64, mss: u32, min_rtt: Nanos) -> u32 {
    let mut bytes = pacing_bytes_per_s >> PACING_SHIFT;
    let r = (min_rtt.as_ns() / 1000) >> TSO_RTT_LOG;
    // Small RTTs get bigger bursts: gso_max_size >> r when r < 32 bits (`BITS_PER_TYPE`).
    if r < 32 {
        bytes += GSO_MAX_SIZE >> r;
    }
    bytes = bytes.min(GSO_MAX_SIZE);
    ((bytes / mss.max(1) as u64) as u32).max(MIN_TSO_SEGS)
}

/// `sysctl_tcp_tso_win_divisor` default: a third of the window is always worth sending.
pub const TSO_WIN_DIVISOR: u64 = 3;
/// `tcp_tso_should_defer` never defers past 1 ms after the last transmission (`NSEC_PER_MSEC`).
pub const TSO_DEFER_MAX_IDLE: Nanos = Nanos::from_ms(1);

/// What `tcp_tso_should_defer` reads, in the model's terms.
#[derive(Copy, Clone, Debug)]
pub struct DeferCheck {
    /// The time of the transmit attempt (`tp->tcp_clock_cache`).
    pub now: Nanos,
    /// `tp->tcp_wstamp_ns`: the last transmission's departure time (later under pacing).
    pub wstamp: Nanos,
    /// `icsk_ca_state >= TCP_CA_Recovery` (Recovery or Loss).
    pub in_recovery: bool,
    /// `tcp_snd_cwnd`, in segments.
    pub cwnd: u32,
    /// `tcp_packets_in_flight`.
    pub in_flight: u32,
    /// `mss_cache`.
    pub mss: u32,
    /// `max_segs` of `tcp_write_xmit`: `tcp_tso_segs`.
    pub max_segs: u32,
    /// Bytes the receive window still allows beyond the next byte to send (`send_win`).
    pub send_win: u64,
    /// New data the application has queued and not sent (the skb cannot grow past it).
    pub unsent: u64,
    /// Send time of the oldest unacknowledged segment (`tcp_rtx_queue_head`), if any.
    pub head_tx: Option<Nanos>,
    /// Smoothed RTT.
    pub srtt: Nanos,
}

/// Linux `tcp_tso_should_defer` (net/ipv4/tcp_output.c) with `tcp_tso_win_divisor` 3: true
/// when a bulk sender should hold new data for the next ACK rather than send a burst shorter
/// than `max_segs`. It sends now in Recovery/Loss, more than 1 ms after the last
/// transmission, when a whole burst fits (`limit >= max_segs * mss`), when all queued data
/// fits (the skb will not grow: FIN/EOR, or nothing more written), when a third of the
/// window fits, with nothing in flight, or when the oldest unacknowledged segment left less
/// than srtt/2 ago (the next ACK may come too late).
pub fn tso_should_defer(c: &DeferCheck) -> bool {
    if c.in_recovery || c.max_segs <= 1 || c.now > c.wstamp + TSO_DEFER_MAX_IDLE {
        return false;
    }
    let mss = c.mss as u64;
    let cong_win = c.cwnd.saturating_sub(c.in_flight) as u64 * mss;
    let limit = c.send_win.min(cong_win);
    if limit >= c.max_segs as u64 * mss || limit >= c.unsent {
        return false;
    }
    // win_divisor: chunk = min(snd_wnd, cwnd * mss) / divisor.
    let chunk = c.send_win.min(c.cwnd as u64 * mss) / TSO_WIN_DIVISOR;
    if limit >= chunk {
        return false;
    }
    match c.head_tx {
        None => false,
        // `srtt_us >> 4`: srtt_us holds 8 * srtt, so this is srtt / 2.
        Some(head) => c.now.saturating_sub(head) >= Nanos(c.srtt.as_ns() / 2),
    }
}

/// The host side of a flow: its NIC line rate and the burst in progress.
#[derive(Clone, Debug)]
pub struct TsoHost {
    /// NIC line rate the segments of one burst leave at.
    pub nic_rate: Rate,
    /// Segments still to send in the current burst.
    left: u32,
    /// Payload bytes of the current burst so far.
    burst_payload: u64,
    /// When the current burst started (its skb's departure time).
    burst_start: Nanos,
}

impl TsoHost {
    /// A host whose NIC sends at `nic_rate`.
    pub fn new(nic_rate: Rate) -> Self {
        TsoHost {
            nic_rate,
            left: 0,
            burst_payload: 0,
            burst_start: Nanos::ZERO,
        }
    }

    /// True while a burst has segments left: they leave at the NIC rate, not the pacer's.
    pub fn in_burst(&self) -> bool {
        self.left > 0
    }

    /// One segment of `payload` (wire `bytes`) leaves at `now`; `segs` is the burst size for a
    /// new burst (from [`tso_autosize`] or the CC's own rule). Returns the earliest time the
    /// next segment may leave: at the NIC rate within the burst, and after the burst
    /// start + burst payload / pacing rate (`tcp_update_skb_after_send` on the whole skb) once
    /// the burst is complete. `pacing_bps` None: not paced, only the NIC spacing applies.
    pub fn on_segment_sent(
        &mut self,
        now: Nanos,
        payload: u32,
        bytes: u32,
        segs: u32,
        pacing_bps: Option<u64>,
    ) -> Nanos {
        if self.left == 0 {
            self.left = segs.max(1);
            self.burst_payload = 0;
            self.burst_start = now;
        }
        self.left -= 1;
        self.burst_payload += payload as u64;
        let wire_next = now + self.nic_rate.tx_time(bytes as u64);
        if self.left > 0 {
            return wire_next;
        }
        match pacing_bps {
            Some(rate) if rate > 0 => {
                let len_ns = (self.burst_payload as u128 * 8 * 1_000_000_000 / rate as u128) as u64;
                wire_next.max(self.burst_start + Nanos(len_ns))
            }
            _ => wire_next,
        }
    }

    /// The window or the application cut the burst short: the next segment starts a new one.
    pub fn end_burst(&mut self) {
        self.left = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tcp_tso_autosize by hand: rate >> 10 bytes, plus 65536 >> (min_rtt_us >> 9), at most
    /// 65536, in whole segments, at least 2.
    #[test]
    fn autosize_follows_the_linux_formula() {
        let mss = 1448;
        // 100 Mb/s = 12.5 MB/s: 12 207 B per ~1 ms; min_rtt 40 ms: r = 78, no RTT term.
        assert_eq!(
            tso_autosize(12_500_000, mss, Nanos::from_ms(40)),
            12_207 / 1448
        );
        // 10 Mb/s: 1220 B < one segment: the floor of 2.
        assert_eq!(tso_autosize(1_250_000, mss, Nanos::from_ms(40)), 2);
        // 1 Gb/s: 122 070 B capped at 65 536 B = 45 segments.
        assert_eq!(tso_autosize(125_000_000, mss, Nanos::from_ms(40)), 45);
        // 100 Mb/s at min_rtt 5 ms: r = 5000 >> 9 = 9, + 65536 >> 9 = 128 B: 12 335 B = 8.
        assert_eq!(
            tso_autosize(12_500_000, mss, Nanos::from_ms(5)),
            12_335 / 1448
        );
        // 100 Mb/s at min_rtt 1 ms: r = 1, + 32 768 B: 44 975 B = 31 segments.
        assert_eq!(tso_autosize(12_500_000, mss, Nanos::from_ms(1)), 31);
    }

    /// A sender in congestion avoidance, ~2 segments of room after an ACK, burst goal 4, the
    /// oldest unacknowledged segment sent 40 ms ago, srtt 40 ms, window 170 segments.
    fn deferring() -> DeferCheck {
        DeferCheck {
            now: Nanos::from_ms(1000),
            wstamp: Nanos::from_ms(1000) - Nanos::from_us(500),
            in_recovery: false,
            cwnd: 170,
            in_flight: 168,
            mss: 1448,
            max_segs: 4,
            send_win: u64::MAX,
            unsent: u64::MAX,
            head_tx: Some(Nanos::from_ms(960)),
            srtt: Nanos::from_ms(40),
        }
    }

    /// Linux `tcp_tso_should_defer`, branch by branch: it defers the short burst above, and
    /// each `goto send_now` condition alone turns that into "send now".
    #[test]
    fn tcp_tso_should_defer_follows_each_linux_branch() {
        assert!(tso_should_defer(&deferring()));
        let now = |f: fn(&mut DeferCheck)| {
            let mut c = deferring();
            f(&mut c);
            !tso_should_defer(&c)
        };
        // icsk_ca_state >= TCP_CA_Recovery.
        assert!(now(|c| c.in_recovery = true));
        // The last write more than 1 ms ago (1 ms exactly still defers: `delta > 0`).
        assert!(now(|c| c.wstamp = c.now - Nanos::from_us(1001)));
        assert!(!now(|c| c.wstamp = c.now - Nanos::from_ms(1)));
        // A full burst fits: limit >= max_segs * mss (3 segments of room still defer).
        assert!(now(|c| c.in_flight = 166));
        assert!(!now(|c| c.in_flight = 167));
        // The receive window is the limit but it holds all that is queued.
        assert!(now(|c| c.unsent = 2 * 1448));
        // A third of the window fits: cwnd 6, 2 of room = 2896 B >= 6·1448/3.
        assert!(now(|c| {
            c.cwnd = 6;
            c.in_flight = 4
        }));
        // cwnd 7: 7·1448/3 = 3378 B > 2896 B: defer.
        assert!(!now(|c| {
            c.cwnd = 7;
            c.in_flight = 5
        }));
        // The next ACK may come too late: head sent less than srtt/2 = 20 ms ago.
        assert!(now(|c| c.head_tx = Some(c.now - Nanos::from_us(19_999))));
        assert!(!now(|c| c.head_tx = Some(c.now - Nanos::from_ms(20))));
        // Nothing in flight; a one-segment skb is Nagle's business, not this function's.
        assert!(now(|c| c.head_tx = None));
        assert!(now(|c| c.max_segs = 1));
    }

    /// A burst of 3 segments at a 1 Gb/s NIC, paced at 10 Mb/s: the segments leave 12 µs apart
    /// (1500 B at 1 Gb/s), the next burst 3·1448·8/10 Mb/s = 3.4752 ms after the first.
    #[test]
    fn burst_leaves_at_nic_rate_then_waits_for_the_pacer() {
        let mut h = TsoHost::new(Rate::from_mbps(1000));
        let t0 = Nanos::from_ms(100);
        let t1 = h.on_segment_sent(t0, 1448, 1500, 3, Some(10_000_000));
        assert_eq!(t1, t0 + Nanos(12_000));
        assert!(h.in_burst());
        let t2 = h.on_segment_sent(t1, 1448, 1500, 3, Some(10_000_000));
        assert_eq!(t2, t0 + Nanos(24_000));
        let t3 = h.on_segment_sent(t2, 1448, 1500, 3, Some(10_000_000));
        assert_eq!(t3, t0 + Nanos(3_475_200));
        assert!(!h.in_burst());
    }
}
