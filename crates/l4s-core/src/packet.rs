//! The packet every component passes around, and its IP-ECN codepoint.
//! ECN bit values follow RFC 3168 §5 (ECT(1) = 01, ECT(0) = 10, CE = 11).

use crate::time::Nanos;

/// The two IP-ECN bits (RFC 3168 §5, RFC 9331 for ECT(1) as the L4S identifier).
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable (00).
    #[default]
    NotEct = 0b00,
    /// ECN-capable, L4S identifier (01, RFC 9331).
    Ect1 = 0b01,
    /// ECN-capable, Classic (10).
    Ect0 = 0b10,
    /// Congestion Experienced (11), set by an AQM.
    Ce = 0b11,
}

impl Ecn {
    /// All four codepoints in bit order.
    pub const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

    /// The codepoint for the low two bits of the IPv4 TOS / IPv6 traffic-class byte.
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    /// The two ECN bits.
    pub const fn bits(self) -> u8 {
        self as u8
    }
    /// ECN-capable transport: an AQM may CE-mark instead of dropping (CE counts as capable).
    pub const fn is_ecn_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

/// TCP flag bits as on the wire (RFC 9293 §3.1; AE is the former NS bit, AccECN §3.2).
pub mod tcp_flags {
    /// No more data from sender.
    pub const FIN: u16 = 0x001;
    /// Synchronise sequence numbers (connection set-up).
    pub const SYN: u16 = 0x002;
    /// Reset the connection.
    pub const RST: u16 = 0x004;
    /// Push function.
    pub const PSH: u16 = 0x008;
    /// The acknowledgment field is significant.
    pub const ACK: u16 = 0x010;
    /// The urgent pointer is significant.
    pub const URG: u16 = 0x020;
    /// ECN-Echo (RFC 3168); with AE and CWR, the AccECN ACE counter.
    pub const ECE: u16 = 0x040;
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: u16 = 0x080;
    /// Accurate ECN bit, most significant bit of ACE.
    pub const AE: u16 = 0x100;
}

/// AccECN option byte counters (draft-ietf-tcpm-accurate-ecn §3.2.3), as seen by the receiver:
/// bytes of payload that arrived with ECT(0), CE and ECT(1). 24-bit on the wire.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AccEcnOption {
    /// Payload bytes received with ECT(0).
    pub e0b: u32,
    /// Payload bytes received with CE.
    pub ceb: u32,
    /// Payload bytes received with ECT(1).
    pub e1b: u32,
}

/// A SACK block [start, end) in absolute byte sequence space (RFC 2018).
pub type SackBlock = (u64, u64);

/// Up to three SACK blocks of one header, stored as signed 32-bit offsets of each edge from the
/// header's `ack` (read and written through [`TcpHeader::sack_block`] and
/// [`TcpHeader::set_sack`], which speak absolute sequence numbers). 32 bits are enough because
/// real TCP carries SACK edges as 32-bit sequence numbers that only make sense within 2^31 of
/// the cumulative ACK (RFC 2018 §3 with RFC 7323 §2.3's window of at most 2^30 bytes); storing
/// offsets instead of two u64 per block keeps [`Packet`] under 128 bytes, so the simulator
/// copies fewer cache lines per packet.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SackOffsets([(i32, i32); 3]);

/// A SACK block that [`TcpHeader::set_sack`] cannot store: too many blocks, or an edge 2^31
/// bytes or more away from the header's `ack`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SACK blocks: {0}")]
pub struct SackError(&'static str);

/// The fields of a TCP header the models use. Sequence numbers are 64-bit and never wrap:
/// wrap-around is a wire-format concern handled by the emulator's header parser.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    /// First payload byte (absolute, 64-bit).
    pub seq: u64,
    /// Next byte expected by the sender of this segment (cumulative ACK).
    pub ack: u64,
    /// Bitwise OR of [`tcp_flags`].
    pub flags: u16,
    /// TCP payload bytes carried (0 for a pure ACK).
    pub payload_bytes: u32,
    /// Up to three SACK blocks relative to `ack`, most recent first; `n_sack` says how many
    /// are valid. Set `ack` first, then write them with [`TcpHeader::set_sack`].
    pub sack: SackOffsets,
    /// How many of `sack` are valid.
    pub n_sack: u8,
    /// Timestamp option (RFC 7323): sender's clock at transmission and the echoed value.
    pub ts_val: Nanos,
    /// Timestamp echo reply: the peer's `ts_val` being echoed.
    pub ts_ecr: Nanos,
    /// AccECN option, when present.
    pub accecn: Option<AccEcnOption>,
}

impl TcpHeader {
    /// Is `flag` (one of [`tcp_flags`]) set?
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
    /// SACK block `i` (0 = most recent) in absolute sequence space; `i` must be below 3, and
    /// only blocks below `n_sack` are meaningful.
    pub fn sack_block(&self, i: usize) -> SackBlock {
        let (s, e) = self.sack.0[i];
        // Sign-extend, then add modulo 2^64: the exact inverse of `rel` below.
        (
            self.ack.wrapping_add(s as i64 as u64),
            self.ack.wrapping_add(e as i64 as u64),
        )
    }
    /// The valid SACK blocks (the first `n_sack`, at most 3), most recent first.
    pub fn sack_blocks(&self) -> impl Iterator<Item = SackBlock> + '_ {
        (0..(self.n_sack as usize).min(3)).map(|i| self.sack_block(i))
    }
    /// Store `blocks` (at most 3, most recent first) relative to the current `ack` and set
    /// `n_sack`; unused slots are zeroed. Refused, leaving the header unchanged, when there are
    /// more than 3 or an edge is 2^31 bytes or more away from `ack` (see [`SackOffsets`]).
    pub fn set_sack(&mut self, blocks: &[SackBlock]) -> Result<(), SackError> {
        if blocks.len() > 3 {
            return Err(SackError("at most 3 blocks fit in a header"));
        }
        let mut out = [(0i32, 0i32); 3];
        for (o, &(s, e)) in out.iter_mut().zip(blocks) {
            *o = (self.rel(s)?, self.rel(e)?);
        }
        self.sack = SackOffsets(out);
        self.n_sack = blocks.len() as u8;
        Ok(())
    }
    /// `x - ack` as a signed 32-bit offset, if it fits.
    fn rel(&self, x: u64) -> Result<i32, SackError> {
        i32::try_from(x.wrapping_sub(self.ack) as i64)
            .map_err(|_| SackError("an edge is 2^31 bytes or more away from the cumulative ACK"))
    }
    /// The 3-bit ACE field carried in AE, CWR, ECE (AccECN §3.2.2).
    pub fn ace(&self) -> u8 {
        (((self.flags & tcp_flags::AE != 0) as u8) << 2)
            | (((self.flags & tcp_flags::CWR != 0) as u8) << 1)
            | ((self.flags & tcp_flags::ECE != 0) as u8)
    }
    /// Write the 3-bit ACE field into AE, CWR, ECE.
    pub fn set_ace(&mut self, ace: u8) {
        self.flags &= !(tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE);
        if ace & 0b100 != 0 {
            self.flags |= tcp_flags::AE;
        }
        if ace & 0b010 != 0 {
            self.flags |= tcp_flags::CWR;
        }
        if ace & 0b001 != 0 {
            self.flags |= tcp_flags::ECE;
        }
    }
}

/// What the packet carries above IP.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Nothing the models read (raw payload).
    #[default]
    None,
    /// A TCP segment.
    Tcp(TcpHeader),
    /// A datagram with a sequence number (the CBR / real-time source).
    Udp {
        /// Datagram number within its flow.
        seq: u64,
    },
    /// A real-time media packet or its feedback (`crate::rt`).
    Rt(RtHeader),
}

// The simulator copies packets through delay lines, queues and endpoints: keep them under two
// 64-byte cache lines.
const _: () = assert!(std::mem::size_of::<Packet>() < 128);

/// One packet. `bytes` is the IP length that links serialise and byte-mode AQMs count.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// Unique per run (assigned by whoever creates the packet).
    pub id: u64,
    /// Flow index in the scenario.
    pub flow: u32,
    /// IP length in bytes.
    pub bytes: u32,
    /// IP-ECN codepoint.
    pub ecn: Ecn,
    /// When the sending host released it.
    pub sent_at: Nanos,
    /// When it entered the current queue (set by the AQM on enqueue).
    pub enqueued_at: Nanos,
    /// What it carries above IP.
    pub transport: Transport,
}

impl Packet {
    /// A packet with no transport header, stamped at time zero.
    pub fn new(id: u64, flow: u32, bytes: u32, ecn: Ecn) -> Self {
        Packet {
            id,
            flow,
            bytes,
            ecn,
            ..Default::default()
        }
    }
    /// The TCP header, if it is a TCP segment.
    pub fn tcp(&self) -> Option<&TcpHeader> {
        match &self.transport {
            Transport::Tcp(h) => Some(h),
            _ => None,
        }
    }
    /// The TCP header for writing, if it is a TCP segment.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpHeader> {
        match &mut self.transport {
            Transport::Tcp(h) => Some(h),
            _ => None,
        }
    }
    /// Time spent in the current queue at `now`.
    pub fn sojourn(&self, now: Nanos) -> Nanos {
        now - self.enqueued_at
    }
}

/// What a real-time packet carries above UDP: data fields for media packets, the echoed
/// counters for feedback (udp_prague `framemessage_t` / `ackmessage_t`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RtHeader {
    /// Data packet number, from 1.
    pub seq: u64,
    /// Frame number (from 0) of a media packet.
    pub frame: u64,
    /// Total bytes of that frame.
    pub frame_bytes: u32,
    /// When the frame was captured (its latency runs from here).
    pub capture_at: Nanos,
    /// Feedback: a feedback packet (else data).
    pub feedback: bool,
    /// Feedback: cumulative data packets received.
    pub received: u64,
    /// Feedback: cumulative CE-marked packets.
    pub ce: u64,
    /// Feedback: cumulative packets counted lost.
    pub lost: u64,
    /// Feedback: the acknowledged data packet's send time, echoed (for the RTT).
    pub echo: Nanos,
    /// Data: the last packet of its frame (the RTP marker bit).
    pub marker: bool,
    /// Feedback: an RFC 8888 report; `seq` is its id in the flow's [`crate::rt::rfc8888::ReportLog`].
    pub ccfb: bool,
    /// Data: padding (a GCC probe packet), counted and reported but part of no frame.
    pub padding: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_bits_match_rfc3168() {
        assert_eq!(Ecn::NotEct.bits(), 0b00);
        assert_eq!(Ecn::Ect1.bits(), 0b01);
        assert_eq!(Ecn::Ect0.bits(), 0b10);
        assert_eq!(Ecn::Ce.bits(), 0b11);
        for e in Ecn::ALL {
            assert_eq!(Ecn::from_bits(e.bits()), e);
            // Upper (DSCP) bits are ignored.
            assert_eq!(Ecn::from_bits(0xb8 | e.bits()), e);
        }
        assert!(!Ecn::NotEct.is_ecn_capable());
        assert!(Ecn::Ce.is_ecn_capable());
    }

    #[test]
    fn sack_blocks_round_trip_relative_to_ack() {
        let mut h = TcpHeader {
            ack: 5_000_000_000,
            ..Default::default()
        };
        // Above the ACK, below it (a D-SACK-like stale block) and at the limits of the range.
        let lo = h.ack - (1 << 31);
        let hi = h.ack + (1 << 31) - 1;
        let blocks = [
            (h.ack + 10, h.ack + 1_000_000),
            (h.ack - 20, h.ack - 10),
            (lo, hi),
        ];
        h.set_sack(&blocks).expect("in range");
        assert_eq!(h.n_sack, 3);
        assert_eq!(h.sack_blocks().collect::<Vec<_>>(), blocks);
        // Out of range by one byte either way, or too many blocks: refused, header unchanged.
        let before = h;
        assert!(h.set_sack(&[(lo - 1, h.ack)]).is_err());
        assert!(h.set_sack(&[(h.ack, hi + 1)]).is_err());
        assert!(h.set_sack(&[(h.ack, h.ack + 1); 4]).is_err());
        assert_eq!(h, before);
        // Fewer blocks: n_sack follows and the unused slots are cleared.
        h.set_sack(&blocks[..1]).expect("in range");
        assert_eq!(h.n_sack, 1);
        assert_eq!(h.sack_block(1), (h.ack, h.ack));
        // Near the top of the 64-bit space the offsets wrap exactly as they were computed.
        let mut w = TcpHeader {
            ack: u64::MAX - 5,
            ..Default::default()
        };
        w.set_sack(&[(u64::MAX - 2, 3)])
            .expect("in range modulo 2^64");
        assert_eq!(w.sack_block(0), (u64::MAX - 2, 3));
    }

    #[test]
    fn ace_field_round_trips_through_flags() {
        for ace in 0..8u8 {
            let mut h = TcpHeader {
                flags: tcp_flags::ACK | tcp_flags::SYN,
                ..Default::default()
            };
            h.set_ace(ace);
            assert_eq!(h.ace(), ace);
            assert!(h.has(tcp_flags::ACK) && h.has(tcp_flags::SYN));
        }
    }
}
