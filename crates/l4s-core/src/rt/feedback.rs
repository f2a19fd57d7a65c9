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

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of three packets (1200 B received CE, 800 B lost, 1000 B received ECT(1)):
    /// received bytes count only the two received (2200), one loss, one CE mark.
    #[test]
    fn a_report_counts_received_bytes_losses_and_ce_marks() {
        let pkt = |seq, size_bytes, rx: Option<u64>, ecn| PacketResult {
            sent: SentPacket {
                seq,
                size_bytes,
                send_time: Nanos::from_ms(seq),
            },
            receive_time: rx.map(Nanos::from_ms),
            ecn,
        };
        let fb = TransportPacketsFeedback {
            feedback_time: Nanos::from_ms(50),
            packets: vec![
                pkt(1, 1200, Some(21), Ecn::Ce),
                pkt(2, 800, None, Ecn::NotEct),
                pkt(3, 1000, Some(23), Ecn::Ect1),
            ],
            data_in_flight_bytes: 0,
        };
        assert_eq!(fb.received_bytes(), 2200);
        assert_eq!(fb.lost_count(), 1);
        assert_eq!(fb.ce_count(), 1);
        assert_eq!(
            fb.received().map(|p| p.sent.seq).collect::<Vec<_>>(),
            [1, 3]
        );
    }
}
