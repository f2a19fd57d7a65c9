//! Send-buffer autotuning and the bound it puts on a backlogged writer's data in flight.
//! Follows Linux `tcp_sndbuf_expand` / `tcp_should_expand_sndbuf` / `tcp_new_space`
//! (net/ipv4/tcp_input.c), `__sk_stream_is_writeable` / `sk_stream_memory_free`
//! (include/net/sock.h, the `tcp_poll` EPOLLOUT rule) and `tcp_stream_alloc_skb` (net/ipv4/tcp.c).
//!
//! Linux charges every skb of the write and retransmission queues to `sk_wmem_queued` by its
//! truesize (payload + the skb's head), and a writer may add data only while `sk_wmem_queued <
//! sk_sndbuf`. `sk_sndbuf` starts at `tcp_wmem[1]` and grows with cwnd (`tcp_sndbuf_expand`:
//! 2 × cwnd × the worst-case truesize of one segment) up to `tcp_wmem[2]`. A poll()ing writer
//! is woken only when a third of the buffer is free (`sk_stream_wspace >= sk_stream_min_wspace`),
//! then writes one chunk. At 200 Mb/s / 100 ms (BDP 2.5 MB) the 4 MB default cap holds the
//! queued data between 2/3 of 4 MB and that plus a chunk, so the flow is send-buffer limited
//! long before its cwnd is. Not modelled: memory pressure (`tcp_under_memory_pressure`),
//! SO_SNDBUF locking, `tcp_notsent_lowat`, and the skb merging of SACK processing
//! (`tcp_shift_skb_data`), which lowers the head overhead a little during recovery.

use crate::tcp::DATA_SEQ_START;

/// `tcp_wmem[1]`: the initial `sk_sndbuf`.
pub const TCP_WMEM_DEFAULT: u64 = 16_384;
/// `MAX_TCP_HEADER` = `L1_CACHE_ALIGN(128 + MAX_HEADER)` with `MAX_HEADER` = `LL_MAX_HEADER` 32
/// (x86-64, no Wi-Fi, Hyper-V or IP tunnel drivers, as this machine's 6.18 kernel is built).
pub const MAX_TCP_HEADER: u64 = 192;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` with `MAX_SKB_FRAGS` 17.
pub const SKB_SHINFO_BYTES: u64 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` (232 bytes on x86-64).
pub const SKB_STRUCT_BYTES: u64 = 256;
/// truesize of a new write-queue skb (`tcp_stream_alloc_skb`: `SKB_TRUESIZE(skb_end_offset)`,
/// a 576-byte small head cache object of which 256 bytes precede the shared info): 256 + 256 +
/// 320. Its payload (page fragments) adds its own length.
pub const SKB_HEAD_TRUESIZE: u64 = 832;
/// `TCP_INIT_CWND`: `tcp_sndbuf_expand` sizes for at least this many segments.
pub const TCP_INIT_CWND: u32 = 10;
/// `sysctl_tcp_reordering` default: `tcp_sndbuf_expand` sizes for at least reordering + 1.
pub const TCP_REORDERING: u32 = 3;
/// Bytes the writer hands to each `send()` (l4slab's kernel-stack sender, kernel_flow.py, a
/// non-blocking socket behind select()).
pub const APP_WRITE_BYTES: u64 = 256 * 1024;
/// The timestamp option's bytes: the MSS option (`mss_clamp`) counts them, the model's `mss`
/// (payload per segment, Linux `mss_cache`) does not.
pub const TCP_TIMESTAMP_OPTION_BYTES: u32 = 12;
/// `sk_gso_max_size` default: `tcp_xmit_size_goal` builds write-queue skbs up to this.
const GSO_MAX_SIZE: u64 = super::tso::GSO_MAX_SIZE;

/// `tcp_sndbuf_expand`'s `per_mss`: the worst-case truesize of one segment (an skb per
/// segment, its head a power-of-two kmalloc) for an MSS option of `mss_clamp` bytes.
pub fn sndbuf_per_mss(mss_clamp: u32) -> u64 {
    (mss_clamp as u64 + MAX_TCP_HEADER + SKB_SHINFO_BYTES).next_power_of_two() + SKB_STRUCT_BYTES
}

/// The sender's send buffer and the backlogged application that keeps it filled.
#[derive(Clone, Debug, PartialEq)]
pub struct SndBuf {
    /// `tcp_wmem[2]`: the cap of autotuning.
    pub wmem_max: u64,
    /// `sk_sndbuf`.
    pub sk_sndbuf: u64,
    /// `tp->write_seq`: the end of the data the application has written.
    pub write_seq: u64,
}

impl SndBuf {
    /// A connection's buffer before `tcp_init_buffer_space` (`sk_sndbuf` = `tcp_wmem[1]`).
    pub fn new(wmem_max: u64) -> Self {
        SndBuf {
            wmem_max,
            sk_sndbuf: TCP_WMEM_DEFAULT.min(wmem_max),
            write_seq: DATA_SEQ_START,
        }
    }

    /// `tcp_sndbuf_expand`: room for 2 × max(cwnd, `TCP_INIT_CWND`, reordering + 1) segments
    /// at `sndbuf_per_mss`, never above `tcp_wmem[2]`, never shrinking.
    pub fn sndbuf_expand(&mut self, cwnd: u32, mss_clamp: u32) {
        let nr_segs = cwnd.max(TCP_INIT_CWND).max(TCP_REORDERING + 1) as u64;
        let sndmem = 2 * nr_segs * sndbuf_per_mss(mss_clamp);
        if self.sk_sndbuf < sndmem {
            self.sk_sndbuf = sndmem.min(self.wmem_max);
        }
    }

    /// `sk_wmem_queued`: payload from `snd_una` to `write_seq` plus one skb head per
    /// `skb_payload` bytes (the segments of one TSO skb, `tcp_tso_segs` × mss).
    pub fn wmem_queued(&self, snd_una: u64, skb_payload: u64) -> u64 {
        let payload = self.write_seq.saturating_sub(snd_una);
        payload + payload.div_ceil(skb_payload.max(1)) * SKB_HEAD_TRUESIZE
    }

    /// `__sk_stream_is_writeable`: poll() reports EPOLLOUT when the free space is at least
    /// half of what is queued (`sk_stream_wspace >= sk_stream_min_wspace`) and the buffer is
    /// not full (`sk_stream_memory_free`).
    pub fn is_writeable(&self, queued: u64) -> bool {
        self.sk_sndbuf.saturating_sub(queued) >= queued >> 1 && queued < self.sk_sndbuf
    }

    /// `sk_stream_write_space` waking the writer, which then writes `APP_WRITE_BYTES` per
    /// `send()` while poll() says writeable; `tcp_sendmsg_locked` adds skbs of `size_goal`
    /// (`tcp_xmit_size_goal`: `GSO_MAX_SIZE` rounded down to whole segments) while
    /// `sk_stream_memory_free`, so a `send()` stops at the first skb boundary past
    /// `sk_sndbuf`. `end` caps the writing (a sized transfer).
    pub fn write_space(&mut self, snd_una: u64, mss: u32, skb_payload: u64, end: u64) {
        let size_goal = (GSO_MAX_SIZE / mss as u64).max(1) * mss as u64;
        while self.write_seq < end && self.is_writeable(self.wmem_queued(snd_una, skb_payload)) {
            let mut chunk = APP_WRITE_BYTES;
            while chunk > 0
                && self.write_seq < end
                && self.wmem_queued(snd_una, skb_payload) < self.sk_sndbuf
            {
                let n = chunk.min(size_goal).min(end - self.write_seq);
                self.write_seq += n;
                chunk -= n;
            }
        }
    }
}
