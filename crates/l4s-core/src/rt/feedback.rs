//! Transport-wide feedback as a media rate controller consumes it: one result per sent packet.
//! Follows libwebrtc `api/transport/network_types.h` (`SentPacket`, `PacketResult`, `TransportPacketsFeedback`).
//!
//! Every feedback format (RFC 8888 congestion-control feedback, udp_prague's per-packet ACK) is turned
//! into a [`TransportPacketsFeedback`] before a controller (GCC, SCReAMv2) sees it, so the
//! controllers do not depend on the wire format and a test can drive them with hand-made reports.

use crate::packet::Ecn;
use crate::time::Nanos;

/// A media packet as the sender sent it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SentPacket {
    /// Data packet number (the transport-wide sequence number).
    pub seq: u64,
    /// Bytes on the wire, as the controller accounts them.
    pub size_bytes: u32,
    /// When it left the sender.
    pub send_time: Nanos,
}

/// What the feedback says of one sent packet.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketResult {
    /// The packet as sent.
    pub sent: SentPacket,
    /// When the receiver got it; `None`: reported as not received.
    pub receive_time: Option<Nanos>,
    /// The ECN codepoint it arrived with (meaningful only when received).
    pub ecn: Ecn,
}

impl PacketResult {
    /// Whether the receiver reported the packet as received.
    pub fn received(&self) -> bool {
        self.receive_time.is_some()
    }
}

/// One feedback event: the results it carries, in sequence order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransportPacketsFeedback {
    /// When the sender processed the feedback.
    pub feedback_time: Nanos,
    /// Per-packet results, in increasing `sent.seq`.
    pub packets: Vec<PacketResult>,
    /// Bytes the sender still has in flight after this feedback.
    pub data_in_flight_bytes: u64,
}

impl TransportPacketsFeedback {
    /// Results of the packets reported received.
    pub fn received(&self) -> impl Iterator<Item = &PacketResult> {
        self.packets.iter().filter(|p| p.received())
    }

    /// Bytes of the packets reported received (as sent, IP bytes).
    pub fn received_bytes(&self) -> u64 {
        self.received().map(|p| p.sent.size_bytes as u64).sum()
    }

    /// Number of packets reported as not received.
    pub fn lost_count(&self) -> usize {
        self.packets.iter().filter(|p| !p.received()).count()
    }

    /// Number of received packets that arrived CE-marked.
    pub fn ce_count(&self) -> usize {
        self.received().filter(|p| p.ecn == Ecn::Ce).count()
    }
}
