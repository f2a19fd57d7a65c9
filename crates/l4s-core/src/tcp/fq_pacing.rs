//! Sender host with the fq qdisc under Linux's EDT model: TCP hands each segment down at once,
//! stamped with its earliest departure time, within the TCP Small Queues allowance.
//! Follows Linux net/ipv4/tcp_output.c (`tcp_write_xmit`, `tcp_small_queue_check`,
//! `__tcp_transmit_skb`, `tcp_update_skb_after_send`), net/ipv4/tcp_input.c
//! (`tcp_update_pacing_rate`) and net/sched/sch_fq.c (`fq_enqueue`, `fq_dequeue`).
//!
//! Why it matters: under fq, `tcp_needs_internal_pacing` is false (fq_classify sets
//! `sk_pacing_status = SK_PACING_FQ`), so `tcp_pacing_check` never stops `tcp_write_xmit`.
//! A segment leaves TCP as soon as cwnd and TSQ allow, counts in `packets_out` while it waits
//! in fq for `skb->tstamp` (= `tcp_wstamp_ns`), and the window can be full although the pacer
//! sets the pace. Under internal pacing TCP keeps the segment until `tcp_wstamp_ns`, so it is
//! not in flight while it waits.
//!
//! TSQ: before each transmission `sk_wmem_alloc` (1 + the truesize of every skb TCP handed
//! down that the device has not freed) must not exceed max(2·truesize, pacing_rate >>
//! `sk_pacing_shift`) (doubled for retransmissions); `tcp_limit_output_bytes` caps it only
//! for sockets with `SK_PACING_NONE`, so not here. A socket with at most one skb in its
//! retransmit queue may always send (`tcp_rtx_queue_empty_or_single_skb`). Here the device
//! frees a skb the moment fq releases it (the host NIC is not the bottleneck).

use std::collections::VecDeque;

use crate::packet::Packet;
use crate::time::Nanos;

/// The queueing discipline under a sender (the `[[flows]] qdisc` key).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum HostQdisc {
    /// No pacing qdisc (e.g. fq_codel, the usual distribution default): a pacing CC paces
    /// inside TCP (`tcp_pacing_check` on `tcp_wstamp_ns`, `SK_PACING_NEEDED`).
    #[default]
    None,
    /// fq with EDT: segments wait in fq until their departure time and count as in flight.
    Fq,
}

/// Approximate `skb->truesize` bytes beyond the payload of a TCP write-queue skb on x86-64:
/// `SKB_TRUESIZE` of its linear part (`MAX_TCP_HEADER` headroom, 320) plus the aligned
/// `struct sk_buff` (256) and `struct skb_shared_info` (320). Linux adds the payload in page
/// fragments; the exact figure depends on the kernel build. It only decides how many packets
/// `pacing_rate >> 10` bytes of TSQ allowance hold at rates where that exceeds 2·truesize.
pub const SKB_TRUESIZE_OVERHEAD: u64 = 896;

/// `sk_pacing_shift` default (`tcp_small_queue_check`): about 1 ms of data below TCP.
pub const SK_PACING_SHIFT: u32 = 10;

/// `skb->truesize` of a skb carrying `payload` bytes (see [`SKB_TRUESIZE_OVERHEAD`]).
pub fn truesize(payload: u32) -> u64 {
    payload as u64 + SKB_TRUESIZE_OVERHEAD
}

/// `tcp_small_queue_check` limit in bytes: max(2·truesize, pacing_rate >> 10) << factor
/// (`factor` 1 for retransmissions), with the pacing rate in bytes per second.
pub fn tsq_limit(truesize: u64, pacing_bytes_per_s: u64, factor: u32) -> u64 {
    (2 * truesize).max(pacing_bytes_per_s >> SK_PACING_SHIFT) << factor
}

/// `tcp_update_pacing_rate` in bit/s for a CC that sets no rate of its own: mss·cwnd/srtt
/// (cwnd at least `packets_out`) ×2 while cwnd < ssthresh/2 (`tcp_pacing_ss_ratio` 200),
/// else ×1.2 (`tcp_pacing_ca_ratio` 120). None before the first RTT sample.
pub fn tcp_update_pacing_rate(
    mss: u32,
    snd_cwnd: u32,
    packets_out: u32,
    snd_ssthresh: u32,
    srtt: Nanos,
) -> Option<u64> {
    let srtt_us = srtt.as_ns() / 1000;
    if srtt_us == 0 {
        return None;
    }
    // Linux: mss · (USEC_PER_SEC/100 << 3) · ratio · cwnd / srtt_us(<<3), in bytes/s.
    let ratio: u128 = if snd_cwnd < snd_ssthresh / 2 {
        200
    } else {
        120
    };
    let cwnd = snd_cwnd.max(packets_out) as u128;
    let bytes = mss as u128 * 10_000 * ratio * cwnd / srtt_us as u128;
    Some((bytes * 8).min(u64::MAX as u128) as u64)
}

/// One skb in fq: its `time_to_send` (`skb->tstamp`), truesize, and the packet.
#[derive(Clone, Debug)]
struct Held {
    time_to_send: Nanos,
    truesize: u64,
    pkt: Packet,
}

/// fq's queue of one flow (time-ordered, as `flow_queue_add` keeps it) and the socket's TSQ
/// accounting (`sk_wmem_alloc` without its initial 1).
#[derive(Clone, Debug, Default)]
pub struct FqHost {
    queue: VecDeque<Held>,
    wmem_alloc: u64,
}

impl FqHost {
    /// An empty host queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Truesize bytes handed below TCP and not yet released (`sk_wmem_alloc` − 1).
    pub fn wmem_alloc(&self) -> u64 {
        self.wmem_alloc
    }

    /// Packets waiting in fq.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True when fq holds nothing of this flow.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// `tcp_small_queue_check`: true when TSQ stops the next transmission. `rtx_queue_len`
    /// is the number of sent, unacknowledged segments before this one.
    pub fn small_queue_throttled(&self, limit: u64, rtx_queue_len: u32) -> bool {
        // refcount_read(&sk->sk_wmem_alloc) starts at 1 (the socket's own reference).
        self.wmem_alloc + 1 > limit && rtx_queue_len > 1
    }

    /// `fq_enqueue`: hold `pkt` (with `payload` bytes) until `time_to_send`; packets of equal
    /// time keep their order.
    pub fn enqueue(&mut self, time_to_send: Nanos, payload: u32, pkt: Packet) {
        let ts = truesize(payload);
        self.wmem_alloc += ts;
        let held = Held {
            time_to_send,
            truesize: ts,
            pkt,
        };
        // Departure stamps almost always grow (`tcp_wstamp_ns` only moves forward): append
        // without the search and the shifting insert in that case.
        if self
            .queue
            .back()
            .is_none_or(|h| h.time_to_send <= time_to_send)
        {
            self.queue.push_back(held);
            return;
        }
        let at = self
            .queue
            .partition_point(|h| h.time_to_send <= time_to_send);
        self.queue.insert(at, held);
    }

    /// `fq_dequeue`: the head packet once `now` ≥ its time to send; the device frees the skb
    /// (`tcp_wfree`), which returns its truesize to TSQ.
    pub fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        let head = self.queue.front()?;
        if head.time_to_send > now {
            return None;
        }
        self.wmem_alloc -= head.truesize;
        self.queue.pop_front().map(|h| h.pkt)
    }

    /// When the head packet may leave (the fq watchdog).
    pub fn next_departure(&self) -> Option<Nanos> {
        self.queue.front().map(|h| h.time_to_send)
    }

    /// `skb_still_in_host_queue`: a transmission of the segment starting at `seq` still waits
    /// here, so Linux does not retransmit it yet (`TCPSpuriousRtxHostQueues`).
    pub fn holds_seq(&self, seq: u64) -> bool {
        self.queue.iter().any(|h| {
            h.pkt
                .tcp()
                .is_some_and(|t| t.seq == seq && t.payload_bytes > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, TcpHeader, Transport};

    fn pkt(seq: u64) -> Packet {
        Packet {
            id: seq,
            flow: 0,
            bytes: 1500,
            ecn: Ecn::NotEct,
            sent_at: Nanos::ZERO,
            enqueued_at: Nanos::ZERO,
            transport: Transport::Tcp(TcpHeader {
                seq,
                payload_bytes: 1448,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn tsq_allows_two_skbs_at_low_rates_and_a_millisecond_at_high_rates() {
        // 2·truesize dominates below 2·2344·1024 B/s (≈ 39 Mb/s): with sk_wmem_alloc
        // starting at 1, the third skb finds 1 + 2·truesize > 2·truesize and waits.
        let t = truesize(1448);
        assert_eq!(t, 2344);
        let lim = tsq_limit(t, 1_250_000, 0);
        assert_eq!(lim, 2 * t);
        let mut h = FqHost::new();
        let mut n = 0;
        while !h.small_queue_throttled(lim, 10) {
            h.enqueue(Nanos::from_ms(1), 1448, pkt(n));
            n += 1;
        }
        assert_eq!(n, 2);
        // 100 Mb/s: 12_500_000 >> 10 = 12207 B; skbs go down while 1 + k·2344 ≤ 12207,
        // i.e. k ≤ 5, so the sixth is the last: 6 skbs (14064 B) below TCP.
        let lim = tsq_limit(t, 12_500_000, 0);
        assert_eq!(lim, 12_207);
        let mut h = FqHost::new();
        let mut n = 0;
        while !h.small_queue_throttled(lim, 10) {
            h.enqueue(Nanos::from_ms(1), 1448, pkt(n));
            n += 1;
        }
        assert_eq!(n, 6);
        // Retransmissions get twice the allowance; a single skb in the rtx queue never waits.
        assert_eq!(tsq_limit(t, 12_500_000, 1), 24_414);
        assert!(!h.small_queue_throttled(lim, 1));
    }

    #[test]
    fn fq_releases_in_time_order_and_returns_truesize() {
        let mut h = FqHost::new();
        h.enqueue(Nanos::from_ms(3), 1448, pkt(3));
        h.enqueue(Nanos::from_ms(1), 1448, pkt(1));
        h.enqueue(Nanos::from_ms(3), 1448, pkt(4));
        assert_eq!(h.wmem_alloc(), 3 * 2344);
        assert!(h.holds_seq(4) && !h.holds_seq(2));
        assert!(h.dequeue(Nanos::from_us(999)).is_none());
        assert_eq!(h.next_departure(), Some(Nanos::from_ms(1)));
        let got: Vec<u64> = std::iter::from_fn(|| h.dequeue(Nanos::from_ms(3)))
            .map(|p| p.tcp().unwrap().seq)
            .collect();
        assert_eq!(got, vec![1, 3, 4]);
        assert_eq!(h.wmem_alloc(), 0);
    }

    #[test]
    fn pacing_rate_of_an_unpaced_cc_is_tcp_update_pacing_rate() {
        // 1448 B · 10 packets / 50 ms = 289.6 kB/s; ×2 in slow start (cwnd < ssthresh/2),
        // ×1.2 after: 4.6336 and 2.78016 Mb/s.
        let srtt = Nanos::from_ms(50);
        assert_eq!(
            tcp_update_pacing_rate(1448, 10, 0, u32::MAX, srtt),
            Some(4_633_600)
        );
        assert_eq!(
            tcp_update_pacing_rate(1448, 10, 0, 10, srtt),
            Some(2_780_160)
        );
        // packets_out above cwnd counts (after a cut).
        assert_eq!(
            tcp_update_pacing_rate(1448, 10, 20, 10, srtt),
            Some(5_560_320)
        );
        assert_eq!(tcp_update_pacing_rate(1448, 10, 0, 10, Nanos::ZERO), None);
    }
}
