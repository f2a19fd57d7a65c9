//! RTP Control Protocol feedback for congestion control ("ccfb"): the report's wire format, the
//! receiver that sends it and the sender side that turns it into per-packet results.
//! Follows RFC 8888 §3.1 and libwebrtc `CongestionControlFeedbackGenerator`
//! (`congestion_control_feedback_generator.cc`) and `TransportFeedbackAdapter::
//! ProcessCongestionControlFeedback` (`transport_feedback_adapter.cc`).
//!
//! Wire format (§3.1): RTCP header (V=2, FMT=11, PT=205, length), sender SSRC; per media SSRC:
//! SSRC, begin_seq, num_reports, then one 16-bit metric per sequence number in
//! [begin_seq, begin_seq + num_reports) — R (received), ECN (2 bits), arrival time offset
//! (ATO, 13 bits, 1/1024 s before the report timestamp; 0x1FFE over range, 0x1FFF unavailable) —
//! padded to 32 bits; last the report timestamp (the middle 32 bits of NTP time).
//! Generator: a report leaves once a packet with the marker bit (a frame's last) has arrived and
//! `min_send_delta` (25 ms) has passed since the previous report, or `max_wait_for_marker`
//! (25 ms) after the oldest unreported packet; it covers every sequence number from the one
//! after the previous report's last to the highest received (`CongestionControlFeedbackTracker::
//! AddPacketsToFeedback`), gaps as not received; a packet older than that start moves it back
//! (`ReceivedPacket`). Adapter: received packets leave the send history; packets the report
//! names as not received, and history entries in the report's sequence range it does not
//! name, are reported lost once (`previously_reported_lost`); they stay in the history in
//! case a later report names them received. Packets covered only by a report that was lost
//! are never reported (neither received nor lost): they leave the bytes in flight once a
//! later report acknowledges a higher sequence number (`RetrievePacketFeedback`).
//! Simplified (named): the report-rate budget (5 % of the send estimate, `max_send_delta`
//! 250 ms) is not modelled, so reports follow `min_send_delta`; one media SSRC per report; the
//! report timestamp is unwrapped against the sender's clock (simulated hosts share a clock).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::packet::Ecn;
use crate::rt::feedback::{PacketResult, SentPacket, TransportPacketsFeedback};
use crate::time::Nanos;

/// libwebrtc `min_send_delta`: 25 ms between reports.
pub const DEFAULT_FEEDBACK_INTERVAL: Nanos = Nanos::from_ms(25);
/// libwebrtc `max_wait_for_marker`: 25 ms.
pub const MAX_WAIT_FOR_MARKER: Nanos = Nanos::from_ms(25);
/// IPv4 + UDP headers around the RTCP packet, bytes.
pub const IP_UDP_BYTES: u32 = 28;
/// ATO code for an over-range offset (§3.1).
pub const ATO_OVERRANGE: u16 = 0x1FFE;
/// ATO code for an unavailable offset (§3.1).
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// Send history kept for feedback (libwebrtc keeps 60 s).
const HISTORY_WINDOW: Nanos = Nanos::from_ms(60_000);

/// One 16-bit metric block.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Metric {
    /// R: the packet was received.
    pub received: bool,
    /// Its ECN codepoint on arrival.
    pub ecn: Ecn,
    /// Arrival time offset, 1/1024 s before the report timestamp (13 bits).
    pub ato: u16,
}

/// A congestion control feedback report for one media SSRC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CcfbReport {
    /// SSRC of the report's sender.
    pub sender_ssrc: u32,
    /// SSRC of the media source.
    pub media_ssrc: u32,
    /// First sequence number reported.
    pub begin_seq: u16,
    /// One metric per sequence number from `begin_seq`.
    pub metrics: Vec<Metric>,
    /// Middle 32 bits of the NTP time the report was made.
    pub report_timestamp: u32,
}

/// Why a byte string is not an RFC 8888 report.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Rfc8888Error {
    /// Shorter than its header or than its length field says.
    #[error("truncated RFC 8888 report ({0} bytes)")]
    Truncated(usize),
    /// Not version 2, FMT 11, PT 205.
    #[error("not an RFC 8888 report (first bytes {0:#06x})")]
    NotCcfb(u16),
}

fn ecn_bits(e: Ecn) -> u16 {
    e as u16
}

fn ecn_of(bits: u16) -> Ecn {
    match bits & 3 {
        0b01 => Ecn::Ect1,
        0b10 => Ecn::Ect0,
        0b11 => Ecn::Ce,
        _ => Ecn::NotEct,
    }
}

/// Compact NTP (16.16 seconds) of `t`.
pub fn compact_ntp(t: Nanos) -> u32 {
    let secs = t.0 / 1_000_000_000;
    let frac = ((t.0 % 1_000_000_000) << 16) / 1_000_000_000;
    (((secs & 0xFFFF) << 16) | frac) as u32
}

/// The time at or before `now` whose compact NTP is `ts` (the latest such).
pub fn unwrap_compact_ntp(ts: u32, now: Nanos) -> Nanos {
    let period: u64 = 65_536 * 1_000_000_000;
    let base = now.0 - now.0 % period;
    let off =
        ((ts >> 16) as u64) * 1_000_000_000 + ((((ts & 0xFFFF) as u64) * 1_000_000_000) >> 16);
    let t = base + off;
    if t > now.0 && t >= period {
        Nanos(t - period)
    } else {
        Nanos(t)
    }
}

/// ATO code of an arrival `offset` before the report (1/1024 s units, rounded down).
pub fn ato_of(offset: Nanos) -> u16 {
    let units = offset.0 * 1024 / 1_000_000_000;
    if units >= ATO_OVERRANGE as u64 {
        ATO_OVERRANGE
    } else {
        units as u16
    }
}

impl CcfbReport {
    /// RTCP bytes: 8 (header, sender SSRC) + 8 (SSRC, begin_seq, num_reports) + 2 per metric
    /// padded to 4 + 4 (report timestamp).
    pub fn rtcp_bytes(&self) -> u32 {
        let m = self.metrics.len() as u32;
        8 + 8 + (2 * m).div_ceil(4) * 4 + 4
    }

    /// IP bytes of the packet carrying it.
    pub fn wire_bytes(&self) -> u32 {
        self.rtcp_bytes() + IP_UDP_BYTES
    }

    /// The report as RTCP bytes (network order).
    pub fn encode(&self) -> Vec<u8> {
        let n = self.rtcp_bytes() as usize;
        let mut b = Vec::with_capacity(n);
        b.push(0x80 | 11); // V=2, P=0, FMT=11
        b.push(205); // PT = RTPFB
        b.extend_from_slice(&((n / 4 - 1) as u16).to_be_bytes());
        b.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        b.extend_from_slice(&self.media_ssrc.to_be_bytes());
        b.extend_from_slice(&self.begin_seq.to_be_bytes());
        b.extend_from_slice(&(self.metrics.len() as u16).to_be_bytes());
        for m in &self.metrics {
            let v = if m.received {
                0x8000 | (ecn_bits(m.ecn) << 13) | (m.ato & 0x1FFF)
            } else {
                0
            };
            b.extend_from_slice(&v.to_be_bytes());
        }
        if self.metrics.len() % 2 == 1 {
            b.extend_from_slice(&[0, 0]);
        }
        b.extend_from_slice(&self.report_timestamp.to_be_bytes());
        b
    }

    /// Parse RTCP bytes of one report with one media SSRC.
    pub fn decode(b: &[u8]) -> Result<Self, Rfc8888Error> {
        let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if b.len() < 20 {
            return Err(Rfc8888Error::Truncated(b.len()));
        }
        if b[0] != 0x80 | 11 || b[1] != 205 {
            return Err(Rfc8888Error::NotCcfb(be16(0)));
        }
        let len = (be16(2) as usize + 1) * 4;
        let count = be16(14) as usize;
        if b.len() < len || len < 20 + (2 * count).div_ceil(4) * 4 {
            return Err(Rfc8888Error::Truncated(b.len()));
        }
        let metrics = (0..count)
            .map(|i| {
                let v = be16(16 + 2 * i);
                Metric {
                    received: v & 0x8000 != 0,
                    ecn: ecn_of(v >> 13),
                    ato: v & 0x1FFF,
                }
            })
            .collect();
        Ok(CcfbReport {
            sender_ssrc: be32(4),
            media_ssrc: be32(8),
            begin_seq: be16(12),
            metrics,
            report_timestamp: be32(len - 4),
        })
    }
}

/// RFC 8888 reports on their way from a media receiver to its sender. A simulated packet is
/// small and `Copy`, so the report packet carries the report's id and wire size while its
/// bytes wait here; the sender takes them when (and only when) the packet arrives, so a report
/// lost on the return path is never seen. Reports not taken are forgotten after `KEEP_REPORTS`.
#[derive(Clone, Debug, Default)]
pub struct ReportLog(Arc<Mutex<BTreeMap<u64, Vec<u8>>>>);

/// Reports kept in a [`ReportLog`].
const KEEP_REPORTS: usize = 4096;

impl ReportLog {
    /// Keep report `id`'s bytes.
    pub fn put(&self, id: u64, bytes: Vec<u8>) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, bytes);
            while m.len() > KEEP_REPORTS {
                m.pop_first();
            }
        }
    }

    /// Report `id`'s bytes, removed from the log.
    pub fn take(&self, id: u64) -> Option<Vec<u8>> {
        self.0.lock().ok()?.remove(&id)
    }
}

/// A received packet waiting for the next report.
#[derive(Copy, Clone, Debug)]
struct Arrival {
    seq: u64,
    at: Nanos,
    ecn: Ecn,
}

/// The receiving side: libwebrtc `CongestionControlFeedbackGenerator`.
#[derive(Clone, Debug)]
pub struct CcfbGenerator {
    interval: Nanos,
    packets: Vec<Arrival>,
    /// `last_sequence_number_in_feedback_`.
    last_in_feedback: Option<u64>,
    marker_seen: bool,
    next_possible: Nanos,
}

impl CcfbGenerator {
    /// Reports at most every `interval` (libwebrtc `min_send_delta`).
    pub fn new(interval: Nanos) -> Self {
        CcfbGenerator {
            interval,
            packets: Vec::new(),
            last_in_feedback: None,
            marker_seen: false,
            next_possible: Nanos::ZERO,
        }
    }

    /// When the next report is due (`None`: nothing to report).
    pub fn next_feedback_time(&self) -> Option<Nanos> {
        let first = self.packets.first()?;
        Some(if self.marker_seen {
            self.next_possible
        } else {
            self.next_possible.max(first.at + MAX_WAIT_FOR_MARKER)
        })
    }

    /// A media packet arrived; returns a report when one is due now (`OnReceivedPacket`).
    pub fn on_packet(
        &mut self,
        seq: u64,
        ecn: Ecn,
        marker: bool,
        now: Nanos,
    ) -> Option<CcfbReport> {
        self.marker_seen |= marker;
        // Older than the next report's start: the next report starts from it again (the
        // tracker keeps no history: packets between are written as not received, which the
        // sender ignores for those it already had reported).
        if self.last_in_feedback.is_some_and(|l| seq <= l) {
            self.last_in_feedback = seq.checked_sub(1);
        }
        self.packets.push(Arrival { seq, at: now, ecn });
        match self.next_feedback_time() {
            Some(t) if t < now => Some(self.send(now)),
            _ => None,
        }
    }

    /// The timer (`Process`): a report if one is due at `now`.
    pub fn poll(&mut self, now: Nanos) -> Option<CcfbReport> {
        match self.next_feedback_time() {
            Some(t) if t <= now => Some(self.send(now)),
            _ => None,
        }
    }

    /// `SendFeedback`: every sequence number from the one after the last report's last to the
    /// highest received (a duplicate keeps a CE mark), gaps as not received.
    fn send(&mut self, now: Nanos) -> CcfbReport {
        self.packets.sort_by_key(|a| (a.seq, a.at));
        let begin = self.last_in_feedback.map_or(self.packets[0].seq, |l| l + 1);
        let end = self.packets[self.packets.len() - 1].seq;
        self.last_in_feedback = Some(end);
        let mut metrics = vec![Metric::default(); (end - begin + 1) as usize];
        for a in &self.packets {
            let m = &mut metrics[(a.seq - begin) as usize];
            if m.received {
                if a.ecn == Ecn::Ce {
                    m.ecn = Ecn::Ce;
                }
                continue;
            }
            *m = Metric {
                received: true,
                ecn: a.ecn,
                ato: ato_of(now.saturating_sub(a.at)),
            };
        }
        self.packets.clear();
        self.marker_seen = false;
        self.next_possible = now + self.interval;
        CcfbReport {
            sender_ssrc: 0,
            media_ssrc: 0,
            begin_seq: begin as u16,
            metrics,
            report_timestamp: compact_ntp(now),
        }
    }
}

/// The sending side: libwebrtc `TransportFeedbackAdapter` for RFC 8888 reports.
#[derive(Clone, Debug, Default)]
pub struct FeedbackAdapter {
    /// Sent packets not yet reported received, with `previously_reported_lost`.
    history: BTreeMap<u64, (SentPacket, bool)>,
    /// Highest sequence number acknowledged so far.
    last_ack: Option<u64>,
    /// Highest sequence number sent (for unwrapping the 16-bit ones of a report).
    top_sent: u64,
}

impl FeedbackAdapter {
    /// An empty send history.
    pub fn new() -> Self {
        Self::default()
    }

    /// A media packet left (`ProcessSentPacket`).
    pub fn on_sent(&mut self, p: SentPacket) {
        self.history.insert(p.seq, (p, false));
        self.top_sent = self.top_sent.max(p.seq);
    }

    /// Bytes sent above the highest acknowledged sequence number.
    pub fn in_flight_bytes(&self) -> u64 {
        let from = self.last_ack.map_or(0, |a| a + 1);
        self.history
            .range(from..)
            .map(|(_, (p, _))| p.size_bytes as u64)
            .sum()
    }

    /// The full sequence number whose low 16 bits are `s`, nearest the highest sent.
    fn unwrap_seq(&self, s: u16) -> u64 {
        let top = self.top_sent;
        let cand = (top & !0xFFFF) | s as u64;
        [cand.wrapping_sub(0x1_0000), cand, cand + 0x1_0000]
            .into_iter()
            .filter(|&c| c <= top + 0x8000)
            .min_by_key(|&c| c.abs_diff(top))
            .unwrap_or(cand)
    }

    /// Forget acknowledged-as-lost packets after the history window.
    fn forget_old(&mut self, now: Nanos) {
        let last_ack = self.last_ack.unwrap_or(0);
        self.history
            .retain(|&s, (p, _)| s > last_ack || p.send_time + HISTORY_WINDOW > now);
    }

    /// A per-packet ACK of `seq` (udp_prague style, no report): `seq` received at
    /// `receive_time`, the unacknowledged packets below it lost (once), as a report covering
    /// the numbers after the highest acknowledged up to `seq` would say.
    pub fn on_ack(
        &mut self,
        seq: u64,
        receive_time: Nanos,
        ecn: Ecn,
        now: Nanos,
    ) -> Option<TransportPacketsFeedback> {
        let from = self.last_ack.map_or(0, |a| a + 1).min(seq);
        let mut packets = Vec::new();
        for (&s, e) in self.history.range_mut(from..=seq) {
            if s == seq {
                packets.push(PacketResult {
                    sent: e.0,
                    receive_time: Some(receive_time),
                    ecn,
                });
            } else if !e.1 {
                e.1 = true;
                packets.push(PacketResult {
                    sent: e.0,
                    receive_time: None,
                    ecn: Ecn::NotEct,
                });
            }
        }
        self.history.remove(&seq);
        self.last_ack = Some(self.last_ack.map_or(seq, |a| a.max(seq)));
        self.forget_old(now);
        (!packets.is_empty()).then(|| TransportPacketsFeedback {
            feedback_time: now,
            packets,
            data_in_flight_bytes: self.in_flight_bytes(),
        })
    }

    /// A report arrived at `now`: the per-packet results (`ProcessCongestionControlFeedback`),
    /// or `None` when it reports nothing the sender knows.
    pub fn on_report(&mut self, r: &CcfbReport, now: Nanos) -> Option<TransportPacketsFeedback> {
        let report_at = unwrap_compact_ntp(r.report_timestamp, now);
        let mut packets = Vec::new();
        let begin = self.unwrap_seq(r.begin_seq);
        let end = begin + r.metrics.len() as u64; // exclusive
        let mut seen: Option<(u64, u64)> = None;
        for (i, m) in r.metrics.iter().enumerate() {
            let seq = begin + i as u64;
            let Some(&(sent, lost_before)) = self.history.get(&seq) else {
                continue;
            };
            seen = Some(seen.map_or((seq, seq), |(lo, hi)| (lo.min(seq), hi.max(seq))));
            self.last_ack = Some(self.last_ack.map_or(seq, |a| a.max(seq)));
            if m.received && m.ato != ATO_UNAVAILABLE {
                self.history.remove(&seq);
                let offset = Nanos(m.ato as u64 * 1_000_000_000 / 1024);
                packets.push(PacketResult {
                    sent,
                    receive_time: Some(report_at.saturating_sub(offset)),
                    ecn: m.ecn,
                });
            } else if !lost_before {
                self.history.insert(seq, (sent, true));
                packets.push(PacketResult {
                    sent,
                    receive_time: None,
                    ecn: Ecn::NotEct,
                });
            }
        }
        // In the report's range but not named in it (every number is, as this generator
        // writes reports; kept for reports from elsewhere): lost, once.
        if let Some((lo, hi)) = seen {
            for (&seq, e) in self.history.range_mut(lo..=hi.min(end)) {
                if !e.1 && !packets.iter().any(|p| p.sent.seq == seq) {
                    e.1 = true;
                    packets.push(PacketResult {
                        sent: e.0,
                        receive_time: None,
                        ecn: Ecn::NotEct,
                    });
                }
            }
        }
        packets.sort_by_key(|p| p.sent.seq);
        self.forget_old(now);
        (!packets.is_empty()).then(|| TransportPacketsFeedback {
            feedback_time: now,
            packets,
            data_in_flight_bytes: self.in_flight_bytes(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_round_trips_through_its_wire_format() {
        let r = CcfbReport {
            sender_ssrc: 0xDEAD_BEEF,
            media_ssrc: 7,
            begin_seq: 65_534,
            metrics: vec![
                Metric {
                    received: true,
                    ecn: Ecn::Ect1,
                    ato: 0,
                },
                Metric::default(),
                Metric {
                    received: true,
                    ecn: Ecn::Ce,
                    ato: 0x1FFD,
                },
            ],
            report_timestamp: 0x0001_8000,
        };
        let b = r.encode();
        // 8 + 8 + 3 metrics padded to 8 + 4 = 28 bytes; length field 28/4 − 1 = 6.
        assert_eq!(b.len(), 28);
        assert_eq!(r.wire_bytes(), 28 + 28);
        assert_eq!(&b[0..4], &[0x8B, 205, 0, 6]);
        // Received, ECN 01, ATO 0 → 0xA000; not received → 0; CE, 0x1FFD → 0xFFFD.
        assert_eq!(&b[16..22], &[0xA0, 0x00, 0, 0, 0xFF, 0xFD]);
        assert_eq!(CcfbReport::decode(&b), Ok(r));
        assert_eq!(
            CcfbReport::decode(&b[..20]),
            Err(Rfc8888Error::Truncated(20))
        );
        let mut bad = b.clone();
        bad[1] = 200;
        assert!(matches!(
            CcfbReport::decode(&bad),
            Err(Rfc8888Error::NotCcfb(_))
        ));
    }

    #[test]
    fn ato_and_compact_ntp_units() {
        assert_eq!(ato_of(Nanos::from_ms(1000)), 1024);
        assert_eq!(ato_of(Nanos(976_562)), 0); // just under 1/1024 s
        assert_eq!(ato_of(Nanos::from_ms(9000)), ATO_OVERRANGE);
        let t = Nanos(70_000 * 1_000_000_000 + 500_000_000);
        assert_eq!(compact_ntp(t), ((70_000 % 65_536) << 16) | 0x8000);
        assert_eq!(
            unwrap_compact_ntp(compact_ntp(t), t + Nanos::from_ms(30)),
            t
        );
        // In the third 65 536 s period (37 h in): the same 16.16 value, unwrapped there.
        let t = Nanos(140_000 * 1_000_000_000 + 500_000_000);
        assert_eq!(
            unwrap_compact_ntp(compact_ntp(t), t + Nanos::from_ms(30)),
            t
        );
        // A timestamp just before a period boundary read just after it: the earlier period.
        let t = Nanos(2 * 65_536 * 1_000_000_000 - 500_000_000);
        assert_eq!(
            unwrap_compact_ntp(compact_ntp(t), t + Nanos::from_secs(1)),
            t
        );
    }

    /// RFC 8888 §3.1: the metric blocks (2 bytes each) are padded to a 32-bit boundary, and
    /// the length field counts 32-bit words minus one: 20 bytes + ⌈n/2⌉·4 for n metrics.
    #[test]
    fn metric_blocks_pad_to_32_bits_for_odd_counts_only() {
        for n in 0..=5usize {
            let r = CcfbReport {
                sender_ssrc: 1,
                media_ssrc: 2,
                begin_seq: 10,
                metrics: vec![
                    Metric {
                        received: true,
                        ecn: Ecn::Ect0,
                        ato: 3,
                    };
                    n
                ],
                report_timestamp: 0x0002_0001,
            };
            let b = r.encode();
            let len = 20 + n.div_ceil(2) * 4;
            assert_eq!(b.len(), len, "{n} metrics");
            assert_eq!(u16::from_be_bytes([b[2], b[3]]) as usize, len / 4 - 1);
            assert_eq!(CcfbReport::decode(&b), Ok(r), "{n} metrics");
        }
    }

    /// A marker (frame end) sends once 25 ms have passed since the last report; without a
    /// marker a report leaves 25 ms after the oldest unreported arrival.
    #[test]
    fn generator_timing_follows_libwebrtc() {
        let ms = Nanos::from_ms;
        let mut g = CcfbGenerator::new(DEFAULT_FEEDBACK_INTERVAL);
        assert!(g.on_packet(1, Ecn::Ect1, false, ms(100)).is_none());
        assert_eq!(g.next_feedback_time(), Some(ms(125)));
        let r = g
            .on_packet(2, Ecn::Ect1, true, ms(101))
            .expect("marker: due");
        assert_eq!(r.metrics.len(), 2);
        assert!(g.on_packet(3, Ecn::Ce, true, ms(110)).is_none());
        assert_eq!(g.next_feedback_time(), Some(ms(126)));
        let r = g.poll(ms(126)).expect("due");
        assert_eq!(r.begin_seq, 3);
        assert_eq!(r.metrics[0].ecn, Ecn::Ce);
        assert_eq!(r.metrics[0].ato, ato_of(ms(16)));
    }

    /// `SendFeedback` details: a gap is reported as not received, a duplicate keeps a CE
    /// mark; a packet at exactly the next possible time is reported by the timer, not on
    /// arrival (`OnReceivedPacket` sends only once that time has passed); a packet older
    /// than the last report's end starts the next report from it.
    #[test]
    fn reports_mark_gaps_keep_ce_on_duplicates_and_restart_at_a_late_packet() {
        let ms = Nanos::from_ms;
        let mut g = CcfbGenerator::new(DEFAULT_FEEDBACK_INTERVAL);
        assert!(g.on_packet(1, Ecn::Ect1, false, ms(100)).is_none());
        assert!(g.on_packet(1, Ecn::Ce, false, ms(101)).is_none());
        let r = g
            .on_packet(3, Ecn::Ect1, true, ms(102))
            .expect("marker: due");
        assert_eq!(r.begin_seq, 1);
        let got: Vec<(bool, Ecn)> = r.metrics.iter().map(|m| (m.received, m.ecn)).collect();
        assert_eq!(
            got,
            [(true, Ecn::Ce), (false, Ecn::NotEct), (true, Ecn::Ect1)]
        );
        // Next possible report at 127 ms: a marker packet arriving then waits for the timer.
        assert!(g.on_packet(4, Ecn::Ect1, true, ms(127)).is_none());
        assert_eq!(g.poll(ms(127)).expect("due").begin_seq, 4);
        // Seq 2 arrives late (after the report up to 4): the next report starts at 2.
        g.on_packet(2, Ecn::Ect1, false, ms(130));
        let r = g.poll(ms(200)).expect("due");
        assert_eq!((r.begin_seq, r.metrics.len()), (2, 1));
        // A duplicate of the last reported packet (2) is reported again, from 2.
        g.on_packet(2, Ecn::Ect1, false, ms(230));
        let r = g.poll(ms(300)).expect("due");
        assert_eq!((r.begin_seq, r.metrics.len()), (2, 1));
    }

    /// A [`ReportLog`] keeps the newest 4096 reports, and hands each out once.
    #[test]
    fn the_report_log_keeps_4096_reports_and_gives_each_once() {
        let log = ReportLog::default();
        for id in 1..=4097u64 {
            log.put(id, vec![id as u8]);
        }
        assert_eq!(log.take(1), None);
        assert_eq!(log.take(2), Some(vec![2]));
        assert_eq!(log.take(2), None);
        assert_eq!(log.take(4097), Some(vec![4097u64 as u8]));
    }

    fn sent(seq: u64, at_ms: u64) -> SentPacket {
        SentPacket {
            seq,
            size_bytes: 1000,
            send_time: Nanos::from_ms(at_ms),
        }
    }

    /// A per-packet ACK reports its packet received and the unacknowledged ones below it lost,
    /// each loss once.
    #[test]
    fn a_per_packet_ack_reports_its_packet_and_the_gap_below_once() {
        let ms = Nanos::from_ms;
        let mut a = FeedbackAdapter::new();
        for s in 1..=4 {
            a.on_sent(sent(s, s));
        }
        let seqs = |fb: TransportPacketsFeedback| -> Vec<(u64, bool)> {
            fb.packets
                .iter()
                .map(|p| (p.sent.seq, p.received()))
                .collect()
        };
        let fb = a.on_ack(3, ms(30), Ecn::Ect0, ms(40)).unwrap();
        assert_eq!(fb.packets[2].receive_time, Some(ms(30)));
        assert_eq!(seqs(fb), vec![(1, false), (2, false), (3, true)]);
        assert_eq!(
            seqs(a.on_ack(4, ms(31), Ecn::Ect0, ms(41)).unwrap()),
            vec![(4, true)]
        );
        assert_eq!(a.in_flight_bytes(), 0);
    }

    /// Bytes in flight count what was sent above the highest sequence number a report named,
    /// received or not: 4 packets of 1000 B, a report naming 1 and 2 received and 3 lost leaves only 4 in flight (1000 B),
    /// although 3 stays in the history in case a later report names it received.
    #[test]
    fn in_flight_counts_from_above_the_highest_reported_sequence_number() {
        let mut a = FeedbackAdapter::new();
        for s in 1..=4 {
            a.on_sent(sent(s, s));
        }
        let got = Metric {
            received: true,
            ecn: Ecn::Ect1,
            ato: 0,
        };
        let r = CcfbReport {
            begin_seq: 1,
            metrics: vec![got, got, Metric::default()],
            report_timestamp: compact_ntp(Nanos::from_ms(50)),
            ..Default::default()
        };
        let fb = a.on_report(&r, Nanos::from_ms(50)).unwrap();
        assert_eq!(fb.lost_count(), 1);
        assert_eq!(fb.data_in_flight_bytes, 1000);
        assert_eq!(a.in_flight_bytes(), 1000);
    }

    /// libwebrtc's ccfb on a lost report: the generator's next report starts after the lost
    /// one's last sequence number (`AddPacketsToFeedback`), and the adapter reports as lost only
    /// packets inside a report's own range (`ProcessCongestionControlFeedback`): the lost
    /// report's packets are never reported, neither received nor lost; they leave the bytes in
    /// flight once a higher sequence number is acknowledged. A gap inside a report is lost once.
    #[test]
    fn a_lost_report_leaves_its_packets_unreported_and_out_of_flight() {
        let ms = Nanos::from_ms;
        let mut a = FeedbackAdapter::new();
        let mut g = CcfbGenerator::new(DEFAULT_FEEDBACK_INTERVAL);
        for s in 1..=8 {
            a.on_sent(sent(s, s));
        }
        assert_eq!(a.in_flight_bytes(), 8000);
        for s in 1..=3 {
            g.on_packet(s, Ecn::Ect1, false, ms(20 + s));
        }
        let _lost = g.poll(ms(50)).expect("due");
        // 4 never arrives; 5 and 6 do.
        for s in 5..=6 {
            g.on_packet(s, Ecn::Ect1, false, ms(60 + s));
        }
        let r = g.poll(ms(90)).expect("due");
        assert_eq!((r.begin_seq, r.metrics.len()), (4, 3));
        let fb = a
            .on_report(&CcfbReport::decode(&r.encode()).unwrap(), ms(100))
            .unwrap();
        let seqs: Vec<(u64, bool)> = fb
            .packets
            .iter()
            .map(|p| (p.sent.seq, p.received()))
            .collect();
        assert_eq!(seqs, vec![(4, false), (5, true), (6, true)]);
        assert_eq!(fb.data_in_flight_bytes, 2000);
        // The gap stays in the history (a later report could name it received) but is not
        // reported lost again by a report whose range covers it.
        let again = CcfbReport {
            begin_seq: 4,
            metrics: vec![Metric::default()],
            report_timestamp: compact_ntp(ms(110)),
            ..Default::default()
        };
        assert_eq!(a.on_report(&again, ms(115)), None);
        // Receive times: the report time (1/65536 s resolution) minus the ATO (1/1024 s,
        // rounded down).
        let report_at = unwrap_compact_ntp(compact_ntp(ms(90)), ms(100));
        assert_eq!(report_at, Nanos(5898 * 1_000_000_000 / 65_536));
        let want = report_at - Nanos(ato_of(ms(25)) as u64 * 1_000_000_000 / 1024);
        assert_eq!(fb.packets[1].receive_time, Some(want));
    }
}
