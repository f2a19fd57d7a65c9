//! Real-time media receiver: counts packets, CE marks and sequence gaps, answers every data
//! packet with one feedback packet, and records when each frame is complete.
//! Follows L4STeam udp_prague `PragueCC::DataReceivedSequence` (a gap counts as loss, a late
//! packet takes one back) and `udp_prague_receiver.cpp` (one ACK per data packet, echoing
//! the cumulative counters and the packet's timestamp). With RFC 8888 feedback
//! ([`RtReceiver::with_ccfb`], for SCReAMv2) it sends `rt::rfc8888` reports instead.
//!
//! A frame is complete when all its bytes have arrived; there is no retransmission, so a frame
//! with a lost packet never completes (a deadline miss). Frames more than `KEEP_FRAMES` behind
//! the newest one seen are forgotten (bounded memory).

use std::collections::BTreeMap;

use crate::packet::{Ecn, Packet, Transport};
use crate::rt::rfc8888::{CcfbGenerator, CcfbReport, ReportLog};
use crate::rt::{AppLog, DoneFrame, Replies, RtHeader};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats};

/// IP bytes of a feedback packet (udp_prague's ACK message with IP/UDP headers).
pub const FEEDBACK_BYTES: u32 = 64;
/// Incomplete frames kept per flow.
const KEEP_FRAMES: u64 = 1024;

/// The receiving end of a media flow.
#[derive(Clone, Debug, Default)]
pub struct RtReceiver {
    flow: u32,
    received: u64,
    ce: u64,
    lost: u64,
    delivered_bytes: u64,
    /// Bytes received per incomplete frame.
    partial: BTreeMap<u64, u64>,
    newest_frame: u64,
    pending: Replies,
    done: Vec<DoneFrame>,
    /// RFC 8888 mode: the report generator and where report bytes go (else per-packet ACKs).
    ccfb: Option<(CcfbGenerator, ReportLog)>,
    reports: u64,
    last_ecn: Ecn,
}

impl RtReceiver {
    /// A receiver for flow `flow`.
    pub fn new(flow: u32) -> Self {
        RtReceiver {
            flow,
            ..Default::default()
        }
    }

    /// A receiver that answers with RFC 8888 reports every `interval` (libwebrtc's ccfb)
    /// instead of one ACK per packet; the report bytes go to `log`, shared with the sender.
    pub fn with_ccfb(flow: u32, interval: Nanos, log: ReportLog) -> Self {
        RtReceiver {
            flow,
            ccfb: Some((CcfbGenerator::new(interval), log)),
            ..Default::default()
        }
    }

    /// Queue report `r` as a packet of its wire size, its bytes in the report log.
    fn send_report(&mut self, r: CcfbReport) {
        let Some((_, log)) = &self.ccfb else {
            return;
        };
        self.reports += 1;
        log.put(self.reports, r.encode());
        let id = ((self.flow as u64) << 40) | (1 << 39) | self.reports;
        let mut fb = Packet::new(id, self.flow, r.wire_bytes(), self.last_ecn);
        fb.transport = Transport::Rt(RtHeader {
            seq: self.reports,
            feedback: true,
            ccfb: true,
            ..Default::default()
        });
        self.pending.push(fb);
    }
}

impl Endpoint for RtReceiver {
    fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
        let Transport::Rt(h) = pkt.transport else {
            return;
        };
        if h.feedback {
            return;
        }
        self.received += 1;
        // DataReceivedSequence: packets skipped since the last one are lost; a packet that
        // arrives late takes one loss back.
        let expected = self.received + self.lost;
        if h.seq >= expected {
            self.lost += h.seq - expected;
        } else if self.lost > 0 {
            self.lost -= 1;
        }
        if pkt.ecn == Ecn::Ce {
            self.ce += 1;
        }
        // Padding (a GCC probe) belongs to no frame: counted and reported only.
        let got = if h.padding {
            &mut 0
        } else {
            self.delivered_bytes += pkt.bytes as u64;
            self.partial.entry(h.frame).or_insert(0)
        };
        *got += pkt.bytes as u64;
        if !h.padding && *got >= h.frame_bytes as u64 {
            self.partial.remove(&h.frame);
            self.done.push(DoneFrame {
                frame: h.frame,
                done_at: now,
            });
        }
        self.newest_frame = self.newest_frame.max(h.frame);
        let floor = self.newest_frame.saturating_sub(KEEP_FRAMES);
        while let Some((&f, _)) = self.partial.first_key_value() {
            if f >= floor {
                break;
            }
            self.partial.remove(&f);
        }
        if let Some((g, _)) = self.ccfb.as_mut() {
            self.last_ecn = pkt.ecn;
            if let Some(r) = g.on_packet(h.seq, pkt.ecn, h.marker, now) {
                self.send_report(r);
            }
            return;
        }
        let mut fb = Packet::new(pkt.id, self.flow, FEEDBACK_BYTES, pkt.ecn);
        fb.transport = Transport::Rt(RtHeader {
            seq: h.seq,
            feedback: true,
            received: self.received,
            ce: self.ce,
            lost: self.lost,
            echo: pkt.sent_at,
            ..Default::default()
        });
        self.pending.push(fb);
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        self.pending.pop(now)
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.ccfb.as_ref()?.0.next_feedback_time()
    }

    fn handle_timeout(&mut self, now: Nanos) {
        if let Some(r) = self.ccfb.as_mut().and_then(|(g, _)| g.poll(now)) {
            self.send_report(r);
        }
    }

    fn stats(&self) -> FlowStats {
        FlowStats {
            delivered_bytes: self.delivered_bytes,
            ce_acked: self.ce,
            lost_pkts: self.lost,
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            alpha: f64::NAN,
            ..Default::default()
        }
    }

    fn take_app_log(&mut self) -> AppLog {
        AppLog::FramesDone(std::mem::take(&mut self.done))
    }
}
