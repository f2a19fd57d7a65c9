//! Real-time media sender: frames at `fps`, sized by the rate controller, sent as a paced
//! burst within `frame_budget`. Follows L4STeam udp_prague `udp_prague_sender.cpp` (frame loop:
//! `GetCCInfoVideo` per frame, packets paced in bursts of `packet_burst`, the last packet of a
//! frame cut to what is left but at least 150 B, late frames skipped to the newest slot).
//!
//! Frame k is captured at start + k/fps. If the previous frame is still being sent when a
//! slot comes, the newest passed slot is sent when it is done and older ones are skipped (logged
//! with 0 bytes), as udp_prague's `frame_adv`. RT-Prague sizes a frame rate·frame_budget and
//! paces it at its rate; the comparators (GCC loss-based, fixed CBR) size it rate/fps (an
//! encoder's target bitrate) and pace it over the frame budget. RT-Prague also keeps at most
//! `packet_window` packets in flight (sent − received − lost as echoed).
//! Simplified (named): packet sizes are IP lengths (udp_prague's are UDP payloads); after
//! `STALL_NS` without feedback while window-limited the in-flight count is forgotten
//! (udp_prague resets its CC on such a timeout; here the rate is kept).

use crate::packet::{Ecn, Packet, Transport};
use crate::rng::Rng;
use crate::rt::encoder::{Encoder, EncoderConfig};
use crate::rt::feedback::SentPacket;
use crate::rt::gcc::GccLoss;
use crate::rt::prague::{FeedbackCounters, RtPrague, MIN_PACKET_BYTES};
use crate::rt::rfc8888::{unwrap_compact_ntp, CcfbReport, FeedbackAdapter, ReportLog};
use crate::rt::scream::ScreamV2;
use crate::rt::{AppLog, Controller, RtHeader, SentFrame};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats, ParamError};

/// Without feedback for this long a window-limited sender forgets what is in flight.
const STALL_NS: u64 = 1_000_000_000;

/// Parameters of a media sender.
#[derive(Clone, Debug, PartialEq)]
pub struct RtConfig {
    /// The rate controller.
    pub controller: Controller,
    /// Frames per second, 1..=255 (udp_prague's `fps_tp`).
    pub fps: u32,
    /// Time over which a frame is paced, in (0, 1/fps].
    pub frame_budget: Nanos,
    /// Starting rate, bits/s.
    pub init_rate_bps: u64,
    /// Lowest rate, bits/s.
    pub min_rate_bps: u64,
    /// Highest rate, bits/s.
    pub max_rate_bps: u64,
    /// Largest packet, IP bytes.
    pub max_packet_bytes: u32,
    /// Codepoint of the data packets.
    pub ecn: Ecn,
    /// First capture.
    pub start: Nanos,
    /// No capture at or after this.
    pub stop: Option<Nanos>,
    /// The encoder model for controllers that set a target bitrate (`None`: frames are exactly
    /// rate/fps, as before the model existed).
    pub encoder: Option<EncoderConfig>,
    /// Seed of the encoder's frame-size draws (from the scenario seed).
    pub seed: u64,
    /// RFC 8888 report interval (libwebrtc `min_send_delta`), for controllers fed by reports.
    pub feedback_interval: Nanos,
}

impl RtConfig {
    /// The interval between captures.
    pub fn frame_interval(&self) -> Nanos {
        Nanos(1_000_000_000 / self.fps.max(1) as u64)
    }

    /// Check every parameter against its range; errors name the scenario key.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1..=255).contains(&self.fps) {
            return Err(ParamError::new("fps", self.fps, "an integer in [1, 255]"));
        }
        if self.frame_budget.0 == 0 || self.frame_budget > self.frame_interval() {
            return Err(ParamError::new(
                "frame_budget",
                self.frame_budget,
                &format!("a duration in (0, 1/fps = {}]", self.frame_interval()),
            ));
        }
        if !(MIN_PACKET_BYTES as u32..=65_535).contains(&self.max_packet_bytes) {
            return Err(ParamError::new(
                "packet_size",
                self.max_packet_bytes,
                "an integer in [150, 65535] (IP bytes)",
            ));
        }
        if self.min_rate_bps == 0 {
            return Err(ParamError::new(
                "min_rate",
                "0bit",
                "a rate > 0, e.g. \"100kbit\"",
            ));
        }
        if self.max_rate_bps < self.min_rate_bps {
            return Err(ParamError::new(
                "max_rate",
                format!("{}bit", self.max_rate_bps),
                "a rate ≥ min_rate",
            ));
        }
        if let Controller::Scream(p) = &self.controller {
            p.validate()?;
        }
        if let Some(e) = &self.encoder {
            e.validate(self.fps)?;
        }
        if self.feedback_interval.0 == 0 || self.feedback_interval > Nanos::from_ms(1000) {
            return Err(ParamError::new(
                "feedback_interval",
                self.feedback_interval,
                "a duration in (0, 1s]",
            ));
        }
        if let Controller::Fixed(r) = self.controller {
            if r == 0 {
                return Err(ParamError::new(
                    "rate",
                    "0bit",
                    "a rate > 0, e.g. \"4mbit\"",
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Ctl {
    Prague(RtPrague),
    Gcc(GccLoss),
    Fixed(f64),
    Scream(Box<ScreamV2>),
}

/// The frame being sent.
#[derive(Clone, Debug)]
struct Current {
    frame: u64,
    capture_at: Nanos,
    bytes: u64,
    sent: u64,
    pace_bps: f64,
}

/// A frame-based media sender.
#[derive(Clone, Debug)]
pub struct RtSender {
    flow: u32,
    cfg: RtConfig,
    ctl: Ctl,
    /// Index of the next capture slot.
    next_slot: u64,
    cur: Option<Current>,
    next_send: Nanos,
    in_burst: u32,
    burst_bytes: u64,
    burst_start: Nanos,
    /// Data packets sent (the last seq number).
    sent_pkts: u64,
    sent_bytes: u64,
    fb: FeedbackCounters,
    last_fb_at: Nanos,
    /// Packets forgotten after a stall (count as neither received nor lost).
    forgotten: u64,
    srtt: Nanos,
    log: Vec<SentFrame>,
    encoder: Option<Encoder>,
    /// RFC 8888 feedback: the send history and where report bytes arrive.
    ccfb: Option<(FeedbackAdapter, ReportLog)>,
}

impl RtSender {
    /// A sender for flow `flow` with validated parameters.
    pub fn new(flow: u32, cfg: RtConfig) -> Result<Self, ParamError> {
        cfg.validate()?;
        let ctl = match cfg.controller {
            Controller::Prague => Ctl::Prague(RtPrague::new(
                cfg.fps,
                cfg.init_rate_bps,
                cfg.min_rate_bps,
                cfg.max_rate_bps,
                cfg.max_packet_bytes,
            )),
            Controller::GccLoss => Ctl::Gcc(GccLoss::new(
                cfg.init_rate_bps,
                cfg.min_rate_bps,
                cfg.max_rate_bps,
                cfg.ecn.is_ecn_capable(),
            )),
            Controller::Fixed(r) => Ctl::Fixed(r as f64),
            Controller::Scream(p) => Ctl::Scream(Box::new(ScreamV2::new(
                p,
                cfg.init_rate_bps,
                cfg.min_rate_bps,
                cfg.max_rate_bps,
            ))),
        };
        let encoder = match (&cfg.encoder, cfg.controller) {
            (_, Controller::Prague) | (None, _) => None,
            (Some(e), _) => Some(Encoder::new(
                e.clone(),
                cfg.fps,
                Rng::derive(cfg.seed, &format!("rt/{flow}/encoder")),
            )?),
        };
        let ccfb = matches!(cfg.controller, Controller::Scream(_))
            .then(|| (FeedbackAdapter::new(), ReportLog::default()));
        Ok(RtSender {
            flow,
            next_send: cfg.start,
            last_fb_at: cfg.start,
            cfg,
            ctl,
            next_slot: 0,
            cur: None,
            in_burst: 0,
            burst_bytes: 0,
            burst_start: Nanos::ZERO,
            sent_pkts: 0,
            sent_bytes: 0,
            fb: FeedbackCounters::default(),
            forgotten: 0,
            srtt: Nanos::ZERO,
            log: Vec::new(),
            encoder,
            ccfb,
        })
    }

    /// Where this sender takes RFC 8888 reports from (hand it to the receiver), if it uses them.
    pub fn report_log(&self) -> Option<ReportLog> {
        self.ccfb.as_ref().map(|(_, l)| l.clone())
    }

    /// The SCReAMv2 state, when this sender runs it.
    pub fn scream(&self) -> Option<&ScreamV2> {
        match &self.ctl {
            Ctl::Scream(s) => Some(s),
            _ => None,
        }
    }

    /// An RFC 8888 report packet arrived: decode it, turn it into per-packet results, take an
    /// RTT sample (arrival − send − the newest packet's arrival time offset) and run the
    /// controller.
    fn on_ccfb(&mut self, id: u64, now: Nanos) {
        let Some((adapter, log)) = self.ccfb.as_mut() else {
            return;
        };
        let Some(report) = log.take(id).and_then(|b| CcfbReport::decode(&b).ok()) else {
            return;
        };
        let Some(fb) = adapter.on_report(&report, now) else {
            return;
        };
        let report_at = unwrap_compact_ntp(report.report_timestamp, now);
        if let Some(r) = fb.received().max_by_key(|r| r.sent.seq) {
            let held = report_at.saturating_sub(r.receive_time.unwrap_or(report_at));
            let rtt = now.saturating_sub(r.sent.send_time).saturating_sub(held);
            self.srtt = if self.srtt.0 == 0 {
                rtt
            } else {
                Nanos((7 * self.srtt.0 + rtt.0) / 8)
            };
        }
        let (ce, lost) = (fb.ce_count() as u64, fb.lost_count() as u64);
        self.fb.ce += ce;
        self.fb.lost += lost;
        self.fb.received += fb.received().count() as u64;
        self.last_fb_at = now;
        if let Ctl::Scream(s) = &mut self.ctl {
            s.on_feedback(&fb, self.srtt.max(Nanos(1)));
        }
    }

    /// Capture time of slot `k` (exact, no drift).
    fn slot_time(&self, k: u64) -> Nanos {
        self.cfg.start + Nanos(k * 1_000_000_000 / self.cfg.fps as u64)
    }

    /// When frame `k` is (or was) captured: start + k/fps.
    pub fn capture_time(&self, k: u64) -> Nanos {
        self.slot_time(k)
    }

    fn stopped(&self, t: Nanos) -> bool {
        self.cfg.stop.is_some_and(|s| t >= s)
    }

    /// The controller's rate, bits/s.
    pub fn rate_bps(&self) -> f64 {
        match &self.ctl {
            Ctl::Prague(p) => p.rate_bps(),
            Ctl::Gcc(g) => g.rate_bps(),
            Ctl::Fixed(r) => *r,
            Ctl::Scream(s) => s.target_bps(),
        }
    }

    /// The RT-Prague state, when this sender runs it.
    pub fn prague(&self) -> Option<&RtPrague> {
        match &self.ctl {
            Ctl::Prague(p) => Some(p),
            _ => None,
        }
    }

    fn packet_bytes(&self) -> u64 {
        match &self.ctl {
            Ctl::Prague(p) => p.packet_bytes() as u64,
            _ => self.cfg.max_packet_bytes as u64,
        }
    }

    fn burst_pkts(&self) -> u32 {
        match &self.ctl {
            Ctl::Prague(p) => p.packet_burst(),
            _ => 1,
        }
    }

    fn in_flight(&self) -> u64 {
        self.sent_pkts
            .saturating_sub(self.fb.received + self.fb.lost + self.forgotten)
    }

    fn window_blocked(&self) -> bool {
        match &self.ctl {
            Ctl::Prague(p) => self.in_flight() >= p.packet_window(),
            _ => false,
        }
    }

    /// Start the newest due frame if idle, logging skipped slots.
    fn start_due_frame(&mut self, now: Nanos) {
        if self.cur.is_some() || self.slot_time(self.next_slot) > now {
            return;
        }
        // The newest slot at or before now.
        let elapsed = (now - self.cfg.start).0 as u128;
        let newest = ((elapsed * self.cfg.fps as u128) / 1_000_000_000) as u64;
        let newest = newest.max(self.next_slot);
        for k in self.next_slot..newest {
            let at = self.slot_time(k);
            if self.stopped(at) {
                break;
            }
            self.log.push(SentFrame {
                frame: k,
                capture_at: at,
                bytes: 0,
                rate_bps: self.rate_bps(),
            });
        }
        let capture_at = self.slot_time(newest);
        self.next_slot = newest + 1;
        if self.stopped(capture_at) {
            return;
        }
        let rate = self.rate_bps();
        let sized = match self.encoder.as_mut() {
            Some(e) => e.encode(capture_at, rate).bytes as f64,
            None => rate / 8.0 / self.cfg.fps as f64,
        };
        let (bytes, pace_bps) = match &self.ctl {
            Ctl::Prague(p) => (p.frame_bytes(self.cfg.frame_budget), rate),
            // libwebrtc's pacer runs at 1.5 × the target (ScreamNetworkController).
            Ctl::Scream(s) => (sized.max(MIN_PACKET_BYTES) as u64, s.pacing_bps()),
            _ => {
                let b = sized.max(MIN_PACKET_BYTES) as u64;
                (b, b as f64 * 8.0 / self.cfg.frame_budget.as_secs_f64())
            }
        };
        self.log.push(SentFrame {
            frame: newest,
            capture_at,
            bytes,
            rate_bps: rate,
        });
        self.cur = Some(Current {
            frame: newest,
            capture_at,
            bytes,
            sent: 0,
            pace_bps,
        });
        self.next_send = self.next_send.max(now);
        self.in_burst = 0;
        self.burst_bytes = 0;
        self.burst_start = self.next_send;
    }
}

impl Endpoint for RtSender {
    fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
        let Transport::Rt(h) = pkt.transport else {
            return;
        };
        if !h.feedback {
            return;
        }
        if h.ccfb {
            self.on_ccfb(h.seq, now);
            return;
        }
        let rtt = now.saturating_sub(h.echo);
        self.srtt = if self.srtt.0 == 0 {
            rtt
        } else {
            Nanos((7 * self.srtt.0 + rtt.0) / 8)
        };
        let fb = FeedbackCounters {
            received: h.received,
            ce: h.ce,
            lost: h.lost,
        };
        match &mut self.ctl {
            Ctl::Prague(p) => {
                p.on_rtt_sample(rtt);
                p.on_feedback(fb, self.sent_pkts, now);
            }
            Ctl::Gcc(g) => g.on_feedback(fb, now),
            Ctl::Fixed(_) | Ctl::Scream(_) => {}
        }
        if fb.received >= self.fb.received {
            self.fb = fb;
            self.last_fb_at = now;
        }
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        self.start_due_frame(now);
        let cur = self.cur.as_ref()?;
        if now < self.next_send || self.window_blocked() {
            return None;
        }
        let left = cur.bytes - cur.sent;
        let size = if left <= self.packet_bytes() {
            left.max(MIN_PACKET_BYTES as u64)
        } else {
            self.packet_bytes()
        };
        self.sent_pkts += 1;
        self.sent_bytes += size;
        let mut p = Packet::new(
            ((self.flow as u64) << 40) | self.sent_pkts,
            self.flow,
            size as u32,
            self.cfg.ecn,
        );
        p.sent_at = now;
        p.transport = Transport::Rt(RtHeader {
            seq: self.sent_pkts,
            frame: cur.frame,
            frame_bytes: cur.bytes.min(u32::MAX as u64) as u32,
            capture_at: cur.capture_at,
            marker: left <= size,
            ..Default::default()
        });
        if let Some((a, _)) = self.ccfb.as_mut() {
            a.on_sent(SentPacket {
                seq: self.sent_pkts,
                size_bytes: size as u32,
                send_time: now,
            });
        }
        let pace = cur.pace_bps.max(1.0);
        let done = left <= size;
        if let Some(c) = self.cur.as_mut() {
            c.sent += size.min(left);
        }
        // Bursts of up to `packet_burst` packets leave back to back; the next burst waits
        // until the bytes so far would have left at the pacing rate.
        self.in_burst += 1;
        self.burst_bytes += size;
        if self.in_burst >= self.burst_pkts() || done {
            self.next_send =
                self.burst_start + Nanos::from_secs_f64(self.burst_bytes as f64 * 8.0 / pace);
            self.next_send = self.next_send.max(now);
            self.burst_start = self.next_send;
            self.in_burst = 0;
            self.burst_bytes = 0;
        }
        if done {
            self.cur = None;
        }
        Some(p)
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        if self.cur.is_some() {
            if self.window_blocked() {
                return Some(self.last_fb_at + Nanos(STALL_NS));
            }
            return Some(self.next_send);
        }
        let next = self.slot_time(self.next_slot).max(self.next_send);
        (!self.stopped(self.slot_time(self.next_slot))).then_some(next)
    }

    fn handle_timeout(&mut self, now: Nanos) {
        if self.cur.is_some() && self.window_blocked() && now >= self.last_fb_at + Nanos(STALL_NS) {
            self.forgotten += self.in_flight();
            self.last_fb_at = now;
        }
    }

    fn stats(&self) -> FlowStats {
        let (cwnd, alpha) = match &self.ctl {
            Ctl::Prague(p) => (p.packet_window() as f64, p.alpha()),
            Ctl::Scream(s) => (
                s.ref_window_bytes() / self.cfg.max_packet_bytes as f64,
                s.l4s_alpha(),
            ),
            _ => (f64::NAN, f64::NAN),
        };
        let pacing = match &self.ctl {
            Ctl::Scream(s) => s.pacing_bps(),
            _ => self.rate_bps(),
        };
        FlowStats {
            sent_pkts: self.sent_pkts,
            cwnd_pkts: cwnd,
            ssthresh_pkts: f64::NAN,
            srtt: self.srtt,
            pacing_bps: pacing as u64,
            ce_acked: self.fb.ce,
            lost_pkts: self.fb.lost,
            alpha,
            in_flight_bytes: self.ccfb.as_ref().map_or(0, |(a, _)| a.in_flight_bytes()),
            ..Default::default()
        }
    }

    fn take_app_log(&mut self) -> AppLog {
        AppLog::FramesSent(std::mem::take(&mut self.log))
    }
}
