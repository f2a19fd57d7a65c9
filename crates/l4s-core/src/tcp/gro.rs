//! GRO at the receiver host: NIC interrupt moderation batches arrivals into NAPI polls, and GRO
//! merges a flow's in-order segments of one poll into a super-segment TCP handles once.
//! Follows Linux net/core/gro.c `dev_gro_receive` / `gro_flush` (at the end of the NAPI poll),
//! net/ipv4/tcp_offload.c `tcp_gro_receive`, include/net/gro.h `inet_gro_flush` (IP TOS) and
//! `skb_gro_receive` (`gro_max_size`).
//!
//! Moderation (mlx5 CQ moderation, period started by the first completion, as
//! `MLX5_CQ_PERIOD_MODE_START_FROM_EQE`): the first packet that arrives while no interrupt is
//! pending starts a `rx_usecs` timer; the interrupt fires when it expires or when `rx_frames`
//! packets are pending, and the NAPI poll then takes every pending packet. Defaults are mlx5's
//! `MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC` (16 µs) and `..._PKTS` (32).
//!
//! Merge rules (`tcp_gro_receive`, comparing with the held super-segment's first header):
//! a new segment merges only when it carries no CWR, the other flags (except FIN/PSH) and the
//! ACK number are equal, the TCP options are equal (the timestamps: Linux's TSval/TSecr tick
//! in ms, so they are compared per ms), the IP TOS is equal (so a CE packet never merges with
//! ECT ones), its payload is at most the first segment's (gso_size), it starts where the held
//! data ends, and the IP length stays below `gro_max_size` (65536, `GRO_LEGACY_MAX_SIZE`).
//! When it does not merge the held one is completed and the new one is held (or passed up
//! alone when it has no payload or carries SYN/RST/FIN/URG/PSH). A merged segment shorter than
//! the gso_size or carrying PSH/FIN completes the super-segment. Everything held is completed
//! at the end of the poll.
//!
//! Simplified (named): one moderation timer per flow (a NIC queue shared by several flows
//! batches them together; GRO itself is per flow), no adaptive moderation (DIM / dynamic ITR),
//! no NAPI budget (64 packets; `rx_frames` ≤ 64 keeps a poll within it), no `gro_flush_timeout`,
//! no IP ID check, processing inside a poll takes no time.

use std::collections::VecDeque;

use super::receiver::TcpReceiver;
use crate::error::ParamError;
use crate::packet::{tcp_flags, Packet, TcpHeader, Transport};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats};

/// mlx5 `MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC` (0x10): the default `rx_usecs`.
pub const DEFAULT_RX_USECS: Nanos = Nanos::from_us(16);
/// mlx5 `MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_PKTS` (0x20): the default `rx_frames`.
pub const DEFAULT_RX_FRAMES: u32 = 32;
/// `GRO_LEGACY_MAX_SIZE`: a super-segment's IP length stays below this (`skb_gro_receive`).
pub const GRO_MAX_SIZE: u64 = 65_536;

/// The receiver host's NIC moderation settings (`ethtool -C rx-usecs / rx-frames`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GroConfig {
    /// Interrupt delay after the first pending packet (0: an interrupt per arrival instant).
    pub rx_usecs: Nanos,
    /// Interrupt as soon as this many packets are pending.
    pub rx_frames: u32,
}

impl Default for GroConfig {
    fn default() -> Self {
        GroConfig {
            rx_usecs: DEFAULT_RX_USECS,
            rx_frames: DEFAULT_RX_FRAMES,
        }
    }
}

impl GroConfig {
    /// Check the fields against mlx5's ranges (`cq_period` 12 bits of µs, `cq_max_count` 16).
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.rx_usecs > Nanos::from_us(4095) {
            return Err(ParamError::new(
                "rx_usecs",
                self.rx_usecs,
                "a duration in [0us, 4095us]",
            ));
        }
        crate::error::check_range_u64("rx_frames", self.rx_frames as u64, 1, 65_535)
    }
}

/// One packet handed to TCP: a super-segment of `segs` original segments (1: not merged).
#[derive(Clone, Debug)]
pub struct SuperSegment {
    /// The first segment's packet, with `bytes` and `payload_bytes` covering all of them.
    pub pkt: Packet,
    /// Original segments merged into it (Linux `gso_segs`).
    pub segs: u32,
}

/// Counters of the GRO layer.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct GroStats {
    /// NAPI polls run.
    pub polls: u64,
    /// Packets handed to TCP (super-segments and packets passed up alone).
    pub delivered: u64,
    /// Original packets received.
    pub packets: u64,
}

/// The held super-segment (Linux: the skb on the GRO list).
#[derive(Clone, Debug)]
struct Held {
    pkt: Packet,
    segs: u32,
    /// `skb_shinfo(p)->gso_size`: the first segment's payload.
    gso_size: u32,
    /// Sequence number after the held data.
    end_seq: u64,
}

/// Linux timestamps tick in ms (`tcp_time_stamp_ts` without usec TS).
fn ts_tick(t: Nanos) -> u64 {
    t.as_ns() / 1_000_000
}

/// The options of two data headers compare equal as Linux's byte compare would.
fn same_options(a: &TcpHeader, b: &TcpHeader) -> bool {
    ts_tick(a.ts_val) == ts_tick(b.ts_val)
        && ts_tick(a.ts_ecr) == ts_tick(b.ts_ecr)
        && a.n_sack == b.n_sack
        && a.sack_blocks().eq(b.sack_blocks())
        && a.accecn == b.accecn
}

/// NIC moderation plus GRO for one flow's arriving packets.
#[derive(Clone, Debug)]
pub struct Gro {
    cfg: GroConfig,
    pending: VecDeque<Packet>,
    poll_at: Option<Nanos>,
    held: Option<Held>,
    stats: GroStats,
}

impl Gro {
    /// Moderation and GRO with `cfg` (validated by the caller with [`GroConfig::validate`]).
    pub fn new(cfg: GroConfig) -> Self {
        Gro {
            cfg,
            pending: VecDeque::new(),
            poll_at: None,
            held: None,
            stats: GroStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> GroStats {
        self.stats
    }

    /// When the pending interrupt fires (None: nothing pending).
    pub fn poll_at(&self) -> Option<Nanos> {
        self.poll_at
    }

    /// A packet reached the NIC at `now`. Returns true when `rx_frames` are pending, so the
    /// interrupt fires now.
    pub fn arrive(&mut self, pkt: Packet, now: Nanos) -> bool {
        self.stats.packets += 1;
        self.pending.push_back(pkt);
        if self.poll_at.is_none() {
            self.poll_at = Some(now + self.cfg.rx_usecs);
        }
        if self.pending.len() >= self.cfg.rx_frames as usize {
            self.poll_at = Some(now);
        }
        self.poll_at.is_some_and(|t| t <= now)
    }

    /// The NAPI poll: GRO over every pending packet in arrival order, then `gro_flush` of
    /// what is held. Super-segments go to `out` in the order TCP receives them.
    pub fn poll(&mut self, out: &mut Vec<SuperSegment>) {
        self.poll_at = None;
        self.stats.polls += 1;
        let before = out.len();
        while let Some(p) = self.pending.pop_front() {
            self.receive(p, out);
        }
        self.complete(out);
        self.stats.delivered += (out.len() - before) as u64;
    }

    fn complete(&mut self, out: &mut Vec<SuperSegment>) {
        if let Some(h) = self.held.take() {
            out.push(SuperSegment {
                pkt: h.pkt,
                segs: h.segs,
            });
        }
    }

    /// `dev_gro_receive` → `inet_gro_receive` → `tcp_gro_receive` for one packet.
    fn receive(&mut self, pkt: Packet, out: &mut Vec<SuperSegment>) {
        let Some(th) = pkt.tcp() else {
            // Not TCP: no GRO for it here; it goes up after what is held.
            self.complete(out);
            out.push(SuperSegment { pkt, segs: 1 });
            return;
        };
        let len = th.payload_bytes;
        let flags = th.flags;
        let mut mss = 1u32;
        let mut merged = false;
        if let Some(h) = self.held.as_mut() {
            let th2 = h.pkt.tcp().copied().unwrap_or_default();
            let mut flush = flags & tcp_flags::CWR != 0;
            let keep = tcp_flags::CWR | tcp_flags::FIN | tcp_flags::PSH;
            flush |= (flags ^ th2.flags) & !keep != 0;
            flush |= th.ack != th2.ack;
            flush |= !same_options(th, &th2);
            // inet_gro_flush: all IP fields but length and checksum, TOS (and ECN) included.
            flush |= pkt.ecn != h.pkt.ecn;
            mss = h.gso_size;
            // `(len - 1) >= mss` in u32: a packet without payload never merges.
            flush |= len.wrapping_sub(1) >= mss;
            flush |= th.seq != h.end_seq;
            // skb_gro_receive: -E2BIG when p->len + len >= gro_max_size.
            if !flush && (h.pkt.bytes as u64 + len as u64) < GRO_MAX_SIZE {
                h.pkt.bytes += len;
                h.segs += 1;
                h.end_seq += len as u64;
                if let Transport::Tcp(hh) = &mut h.pkt.transport {
                    hh.payload_bytes += len;
                    hh.flags |= flags & (tcp_flags::FIN | tcp_flags::PSH);
                }
                merged = true;
            } else {
                mss = 1;
            }
        }
        // out_check_final: a short segment or one of these flags completes at once.
        let final_flags =
            tcp_flags::URG | tcp_flags::PSH | tcp_flags::RST | tcp_flags::SYN | tcp_flags::FIN;
        let flush = len < mss || flags & final_flags != 0;
        if self.held.is_some() && (!merged || flush) {
            self.complete(out);
        }
        if !merged {
            if flush || len == 0 {
                out.push(SuperSegment { pkt, segs: 1 });
            } else {
                let end_seq = th.seq + len as u64;
                self.held = Some(Held {
                    pkt,
                    segs: 1,
                    gso_size: len,
                    end_seq,
                });
            }
        }
    }
}

/// A TCP receiver behind a GRO host: the [`Endpoint`] the simulator drives for `gro = true`.
pub struct GroReceiver {
    rx: TcpReceiver,
    gro: Gro,
    batch: Vec<SuperSegment>,
}

impl GroReceiver {
    /// `rx` behind NIC moderation and GRO with `cfg`.
    pub fn new(rx: TcpReceiver, cfg: GroConfig) -> Self {
        GroReceiver {
            rx,
            gro: Gro::new(cfg),
            batch: Vec::new(),
        }
    }

    /// The TCP receiver.
    pub fn receiver(&self) -> &TcpReceiver {
        &self.rx
    }

    /// The GRO layer's counters.
    pub fn gro_stats(&self) -> GroStats {
        self.gro.stats()
    }

    fn poll(&mut self, now: Nanos) {
        self.gro.poll(&mut self.batch);
        for s in self.batch.drain(..) {
            self.rx.handle_segments(&s.pkt, s.segs, now);
        }
    }
}

impl Endpoint for GroReceiver {
    fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
        if self.gro.arrive(pkt, now) {
            self.poll(now);
        }
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        self.rx.poll_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        match (self.gro.poll_at(), self.rx.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Nanos) {
        if self.gro.poll_at().is_some_and(|t| t <= now) {
            self.poll(now);
        }
        self.rx.handle_timeout(now);
    }

    fn stats(&self) -> FlowStats {
        self.rx.stats()
    }
}
