//! Real-time media sender: frames at `fps`, sized by the rate controller, sent as a paced
//! burst within `frame_budget`. Follows L4STeam udp_prague `udp_prague_sender.cpp` (frame loop:
//! `GetCCInfoVideo` per frame, packets paced in bursts of `packet_burst`, the last packet of a
//! frame cut to what is left but at least 150 B, late frames skipped to the newest slot).
//!
//! Frame k is captured at start + k/fps. If the previous frame is still being sent when a
//! slot comes, the newest passed slot is sent when it is done and older ones are skipped (logged
//! with 0 bytes), as udp_prague's `frame_adv`. RT-Prague sizes a frame rate·frame_budget and
//! paces it at its rate; the others size it rate/fps (an encoder's target bitrate) and pace
//! it as libwebrtc's pacer does (SCReAMv2 1.5 ×, full GCC 2.5 × the target) or, for GCC's
//! loss-based half and fixed CBR, over the frame budget. SCReAMv2 and full GCC read RFC 8888
//! reports (`rt::rfc8888`), the others per-packet ACKs.
//! RT-Prague runs udp_prague's `--rtmode` loop (`udp_prague_sender.cpp` ~131-284): what
//! `GetCCInfoVideo` gives at a frame's start (rate, frame size and window, burst, packet
//! size) holds for the whole frame; bursts leave while frames in flight
//! ([`super::frame_window`]) ≤ the frame window; at or above it the sender waits for an
//! ACK (one burst per ACK, if pacing allows) and after `SND_TIMEOUT` without one resets the
//! CC (`ResetCCInfo`), abandons the frame and starts the next one at once; a late wake-up
//! brings the next burst forward by the lateness (`compRecv`). Sizes are UDP payloads;
//! a packet is payload + 28 bytes (IPv4 + UDP) on the wire.
//! Simplified (named): udp_prague exits after its fourth feedback timeout (`MAX_TIMEOUT`);
//! here the flow keeps going.

use crate::packet::{Ecn, Packet, Transport};
use crate::rng::Rng;
use crate::rt::encoder::{Encoder, EncoderConfig};
use crate::rt::feedback::SentPacket;
use crate::rt::frame_window::FrameWindow;
use crate::rt::gcc::GccLoss;
use crate::rt::gcc_delay::DelayBasedBwe;
use crate::rt::gcc_probe::{ProbeBitrateEstimator, ProbeCluster, ProbeController};
use crate::rt::prague::{
    FeedbackCounters, RtPrague, VideoInfo, MIN_PACKET_BYTES, WIRE_OVERHEAD_BYTES,
};
use crate::rt::rfc8888::{unwrap_compact_ntp, CcfbReport, FeedbackAdapter, ReportLog};
use crate::rt::scream::ScreamV2;
use crate::rt::{AppLog, Controller, RtHeader, SentFrame};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats, ParamError};

/// udp_prague `SND_TIMEOUT`: a window-limited sender waits this long for an ACK, then resets.
pub const SND_TIMEOUT: Nanos = Nanos::from_secs(1);

/// libwebrtc `kDefaultPaceMultiplier`: goog_cc's pacer runs at 2.5 × the target rate.
pub const GCC_PACE_MULTIPLIER: f64 = 2.5;

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
    /// Full GCC's exponential probing (`rt::gcc_probe`): the simulator's `gcc_probing` key
    /// (default off); always off where the wire format has no padding packet (`l4slab flow`).
    pub gcc_probing: bool,
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
    GccFull(Box<GccFull>),
    Fixed(f64),
    Scream(Box<ScreamV2>),
}

/// Full GCC: both estimators, fed by RFC 8888 reports.
#[derive(Clone, Debug)]
struct GccFull {
    loss: GccLoss,
    delay: DelayBasedBwe,
    /// Exponential probing (`rt::gcc_probe`); `None`: off.
    probing: Option<GccProbing>,
}

/// goog_cc's probe controller, the probe clusters the pacer owes, and the estimator.
#[derive(Clone, Debug)]
struct GccProbing {
    controller: ProbeController,
    estimator: ProbeBitrateEstimator,
    started: bool,
    pending: std::collections::VecDeque<ProbeCluster>,
    /// The cluster being sent: (cluster, its start, packets sent, bytes sent).
    active: Option<(ProbeCluster, Nanos, u32, u64)>,
    /// When the next probe packet is due.
    next: Nanos,
    /// Probe packets sent and not yet reported: seq → cluster.
    sent: std::collections::BTreeMap<u64, ProbeCluster>,
}

impl GccProbing {
    /// The next probe packet's time, if a cluster is owed.
    fn due(&self) -> Option<Nanos> {
        (!self.started || self.active.is_some() || !self.pending.is_empty()).then_some(self.next)
    }
}

impl GccFull {
    /// goog_cc's target: min(loss-based, delay-based), the loss-based one capped at the
    /// delay-based limit.
    fn rate_bps(&self) -> f64 {
        self.loss.rate_bps().min(self.delay.rate_bps())
    }
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

/// RT-Prague's frame-loop state (udp_prague `--rtmode` sender variables).
#[derive(Clone, Debug)]
struct PragueLoop {
    fw: FrameWindow,
    /// `GetCCInfoVideo` at the current frame's start.
    info: VideoInfo,
    /// Woken by an ACK since the last loop iteration.
    ack_wake: bool,
    /// Last loop iteration (burst or ACK): a full window times out `SND_TIMEOUT` later.
    wait_since: Nanos,
    /// Waiting for the pacing timer (not for an ACK).
    timer_wait: bool,
    /// `compRecv`: lateness of timer wake-ups to take off the next interval, ns (≤ 0).
    comp_ns: i64,
    /// Feedback timeouts (CC resets).
    timeouts: u64,
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
    /// Capture grid: slot `grid_k` is at `grid_at` (udp_prague restarts it after a reset).
    grid_at: Nanos,
    grid_k: u64,
    pl: Option<PragueLoop>,
    /// Data packets sent (the last seq number).
    sent_pkts: u64,
    sent_bytes: u64,
    fb: FeedbackCounters,
    srtt: Nanos,
    log: Vec<SentFrame>,
    encoder: Option<Encoder>,
    /// RFC 8888 feedback: the send history and where report bytes arrive.
    ccfb: Option<(FeedbackAdapter, ReportLog)>,
    /// Per-packet ACK feedback: (seq, IP bytes) of the packets sent and not yet answered.
    unacked: std::collections::VecDeque<(u64, u32)>,
    /// Bytes the feedback reported received.
    acked_bytes: u64,
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
            Controller::Gcc => Ctl::GccFull(Box::new(GccFull {
                loss: GccLoss::new(
                    cfg.init_rate_bps,
                    cfg.min_rate_bps,
                    cfg.max_rate_bps,
                    cfg.ecn.is_ecn_capable(),
                ),
                delay: DelayBasedBwe::new(cfg.init_rate_bps as f64, cfg.min_rate_bps as f64),
                probing: cfg.gcc_probing.then(|| GccProbing {
                    controller: ProbeController::new(cfg.max_rate_bps as f64),
                    estimator: ProbeBitrateEstimator::default(),
                    started: false,
                    pending: Default::default(),
                    active: None,
                    next: cfg.start,
                    sent: Default::default(),
                }),
            })),
            Controller::Fixed(r) => Ctl::Fixed(r as f64),
            Controller::Scream(p) => Ctl::Scream(Box::new(ScreamV2::new(
                p,
                cfg.init_rate_bps,
                cfg.min_rate_bps,
                cfg.max_rate_bps,
            ))),
        };
        let pl = match &ctl {
            Ctl::Prague(p) => Some(PragueLoop {
                fw: FrameWindow::default(),
                info: p.video_info(cfg.frame_budget),
                ack_wake: false,
                wait_since: cfg.start,
                timer_wait: true,
                comp_ns: 0,
                timeouts: 0,
            }),
            _ => None,
        };
        let encoder = match (&cfg.encoder, cfg.controller) {
            (_, Controller::Prague) | (None, _) => None,
            (Some(e), _) => Some(Encoder::new(
                e.clone(),
                cfg.fps,
                Rng::derive(cfg.seed, &format!("rt/{flow}/encoder")),
            )?),
        };
        // SCReAMv2 and full GCC take RFC 8888 reports (libwebrtc's ccfb); RT-Prague keeps
        // udp_prague's per-packet ACKs, GCC-loss and CBR the per-packet counters.
        let ccfb = matches!(cfg.controller, Controller::Scream(_) | Controller::Gcc)
            .then(|| (FeedbackAdapter::new(), ReportLog::default()));
        Ok(RtSender {
            flow,
            next_send: cfg.start,
            grid_at: cfg.start,
            grid_k: 0,
            pl,
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
            srtt: Nanos::ZERO,
            log: Vec::new(),
            encoder,
            ccfb,
            unacked: Default::default(),
            acked_bytes: 0,
        })
    }

    /// Where this sender takes RFC 8888 reports from (hand it to the receiver), if it uses them.
    pub fn report_log(&self) -> Option<ReportLog> {
        self.ccfb.as_ref().map(|(_, l)| l.clone())
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
        self.acked_bytes += fb.received_bytes();
        match &mut self.ctl {
            Ctl::Scream(s) => {
                s.on_feedback(&fb, self.srtt.max(Nanos(1)));
            }
            // goog_cc `OnTransportPacketsFeedback`: the delay-based estimate from the report's
            // packets, the loss-based one from the counters, capped at the delay-based limit.
            // A completed probe cluster's rate (ProbeBitrateEstimator) goes to the delay-based
            // estimate; when it was taken (not overusing) the loss-based one is set to it too
            // (goog_cc_network_control.cc: `SetSendBitrate` on a probe result); the probe
            // controller then sees the new target (`SetEstimatedBitrate`).
            Ctl::GccFull(g) => {
                let mut probe_bps = None;
                if let Some(pr) = g.probing.as_mut() {
                    for r in fb.received() {
                        let Some(c) = pr.sent.remove(&r.sent.seq) else {
                            continue;
                        };
                        let at = r.receive_time.unwrap_or(now);
                        pr.estimator
                            .handle(&c, r.sent.send_time, at, r.sent.size_bytes as u64);
                    }
                    for p in fb.packets.iter().filter(|p| !p.received()) {
                        pr.sent.remove(&p.sent.seq);
                    }
                    probe_bps = pr.estimator.fetch_and_reset();
                }
                let took_probe = g.delay.on_feedback(&fb, self.srtt, probe_bps);
                g.loss.on_feedback(self.fb, now);
                if took_probe {
                    g.loss.set_send_bitrate(g.delay.rate_bps());
                }
                let limit = g.delay.rate_bps();
                g.loss.cap(limit);
                let target = g.rate_bps().min(self.cfg.max_rate_bps as f64);
                if let Some(pr) = g.probing.as_mut() {
                    let more = pr.controller.set_estimate(target, now);
                    pr.pending.extend(more);
                }
            }
            _ => {}
        }
    }

    /// Capture time of slot `k` (exact, no drift).
    fn slot_time(&self, k: u64) -> Nanos {
        self.grid_at + Nanos(k.saturating_sub(self.grid_k) * 1_000_000_000 / self.cfg.fps as u64)
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
            Ctl::GccFull(g) => g.rate_bps().min(self.cfg.max_rate_bps as f64),
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

    /// RT-Prague's frames in flight and frame window, when this sender runs it.
    pub fn frame_window(&self) -> Option<(i64, u64)> {
        self.pl
            .as_ref()
            .map(|l| (l.fw.in_flight(), l.info.frame_window))
    }

    /// RT-Prague's feedback timeouts (CC resets) so far.
    pub fn feedback_timeouts(&self) -> u64 {
        self.pl.as_ref().map_or(0, |l| l.timeouts)
    }

    /// RT-Prague: the window is full (`frame_inflight ≥ frame_window`): wait for an ACK.
    fn window_full(&self) -> bool {
        self.pl
            .as_ref()
            .is_some_and(|l| l.fw.in_flight() >= l.info.frame_window as i64)
    }

    /// Start the newest due frame if idle, logging skipped slots.
    fn start_due_frame(&mut self, now: Nanos) {
        if self.cur.is_some() || self.slot_time(self.next_slot) > now {
            return;
        }
        // The newest slot at or before now.
        let elapsed = (now - self.grid_at).0 as u128;
        let newest = self.grid_k + ((elapsed * self.cfg.fps as u128) / 1_000_000_000) as u64;
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
            Ctl::Prague(p) => {
                let info = p.video_info(self.cfg.frame_budget);
                if let Some(l) = self.pl.as_mut() {
                    l.info = info;
                    l.comp_ns = 0;
                }
                (info.frame_bytes, info.pacing_rate * 8.0)
            }
            // libwebrtc's pacer runs at 1.5 × the target (ScreamNetworkController).
            Ctl::Scream(s) => (sized.max(MIN_PACKET_BYTES) as u64, s.pacing_bps()),
            // goog_cc paces at `kDefaultPaceMultiplier` (2.5) × the target, whatever the
            // frame's size (goog_cc_network_control.cc `pacing_factor_`; pacing_controller.cc).
            Ctl::GccFull(_) => (
                sized.max(MIN_PACKET_BYTES) as u64,
                GCC_PACE_MULTIPLIER * rate,
            ),
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
        // The ACK answers packet h.seq; older unanswered ones are not counted as received.
        while let Some(&(seq, bytes)) = self.unacked.front() {
            if seq > h.seq {
                break;
            }
            self.unacked.pop_front();
            if seq == h.seq {
                self.acked_bytes += bytes as u64;
            }
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
                // udp_prague's ACK handling order: frame stats, PacketReceived (the ACK's
                // timestamp is when the receiver sent it), ACKReceived; then the loop wakes.
                if let Some(l) = self.pl.as_mut() {
                    l.fw.on_ack(h.seq, h.lost);
                    l.ack_wake = true;
                    l.wait_since = now;
                }
                p.packet_received(pkt.sent_at, rtt);
                p.on_feedback(fb, self.sent_pkts, now);
            }
            Ctl::Gcc(g) => g.on_feedback(fb, now),
            // A per-packet ACK to full GCC (a receiver without RFC 8888 reports, as the
            // emulator's `l4slab flow` has today): a one-packet report of the packet it answers,
            // received when the ACK left the receiver.
            Ctl::GccFull(g) => {
                let ack = self
                    .ccfb
                    .as_mut()
                    .and_then(|(a, _)| a.on_ack(h.seq, pkt.sent_at, pkt.ecn, now));
                if let Some(report) = ack {
                    self.acked_bytes += report.received_bytes();
                    g.delay.on_feedback(&report, self.srtt, None);
                }
                g.loss.on_feedback(fb, now);
                let limit = g.delay.rate_bps();
                g.loss.cap(limit);
            }
            Ctl::Fixed(_) | Ctl::Scream(_) => {}
        }
        if fb.received >= self.fb.received {
            self.fb = fb;
        }
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        if self.pl.is_some() {
            return self.poll_prague(now);
        }
        if let Some(p) = self.poll_probe(now) {
            return Some(p);
        }
        self.start_due_frame(now);
        let max_bytes = self.packet_bytes();
        let cur = self.cur.as_mut()?;
        if now < self.next_send {
            return None;
        }
        let left = cur.bytes - cur.sent;
        let size = if left <= max_bytes {
            left.max(MIN_PACKET_BYTES as u64)
        } else {
            max_bytes
        };
        cur.sent += size.min(left);
        self.sent_pkts += 1;
        self.sent_bytes += size;
        let sent = SentPacket {
            seq: self.sent_pkts,
            size_bytes: size as u32,
            send_time: now,
        };
        match self.ccfb.as_mut() {
            Some((a, _)) => a.on_sent(sent),
            None => push_unacked(&mut self.unacked, sent.seq, size as u32),
        }
        let p = media_packet(
            self.flow,
            self.cfg.ecn,
            self.sent_pkts,
            size,
            now,
            cur,
            cur.bytes,
        );
        let pace = cur.pace_bps.max(1.0);
        let done = left <= size;
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
        if let Some(l) = &self.pl {
            if self.window_full() {
                return Some(l.wait_since + SND_TIMEOUT);
            }
        }
        let probe = match &self.ctl {
            Ctl::GccFull(g) => g.probing.as_ref().and_then(|p| p.due()),
            _ => None,
        }
        .filter(|&t| !self.stopped(t));
        let media = if self.cur.is_some() {
            Some(self.next_send)
        } else {
            let next = self.slot_time(self.next_slot).max(self.next_send);
            (!self.stopped(self.slot_time(self.next_slot))).then_some(next)
        };
        match (probe, media) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Nanos) {
        let full = self.window_full();
        let (Some(l), Ctl::Prague(p)) = (self.pl.as_mut(), &mut self.ctl) else {
            return;
        };
        // udp_prague_sender.cpp ~265-273: no ACK for SND_TIMEOUT with the window full.
        if !full || now < l.wait_since + SND_TIMEOUT {
            return;
        }
        p.reset(now);
        l.fw.clear_in_flight();
        l.timeouts += 1;
        l.wait_since = now;
        l.timer_wait = true;
        // frame_sent = 0, frame_timer = 0: the frame is abandoned, the next one starts now.
        self.cur = None;
        self.next_send = now;
        self.grid_at = now;
        self.grid_k = self.next_slot;
        self.in_burst = 0;
        self.burst_bytes = 0;
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
            target_bps: self.rate_bps(),
            acked_bytes: self.acked_bytes,
            ..Default::default()
        }
    }

    fn take_app_log(&mut self) -> AppLog {
        AppLog::FramesSent(std::mem::take(&mut self.log))
    }
}

/// Remember packet `seq` of `bytes` until an ACK answers it (the newest 65536 at most: a
/// sender whose ACKs stopped long ago does not grow without bound).
fn push_unacked(q: &mut std::collections::VecDeque<(u64, u32)>, seq: u64, bytes: u32) {
    if q.len() >= 1 << 16 {
        q.pop_front();
    }
    q.push_back((seq, bytes));
}

/// Data packet `seq` of `bytes` (IP) carrying part of frame `cur` (`frame_bytes` in all),
/// after `cur.sent` counts it (the frame's last packet carries the RTP marker).
fn media_packet(
    flow: u32,
    ecn: Ecn,
    seq: u64,
    bytes: u64,
    now: Nanos,
    cur: &Current,
    frame_bytes: u64,
) -> Packet {
    let mut p = Packet::new(((flow as u64) << 40) | seq, flow, bytes as u32, ecn);
    p.sent_at = now;
    p.transport = Transport::Rt(RtHeader {
        seq,
        frame: cur.frame,
        frame_bytes: frame_bytes.min(u32::MAX as u64) as u32,
        capture_at: cur.capture_at,
        marker: cur.sent >= cur.bytes,
        ..Default::default()
    });
    p
}

/// Wire bytes of an RT-Prague frame of `frame` payload bytes in packets of `pkt`: full
/// packets, then the rest in one packet of at least 150 B (`udp_prague_sender.cpp` ~165),
/// each with its IP + UDP header.
pub(super) fn prague_frame_wire_bytes(frame: u64, pkt: u64) -> u64 {
    let pkt = pkt.max(1);
    let (full, rest) = (frame / pkt, frame % pkt);
    let last = if rest > 0 {
        rest.max(MIN_PACKET_BYTES as u64)
    } else {
        0
    };
    let n = full + u64::from(rest > 0);
    full * pkt + last + n * WIRE_OVERHEAD_BYTES as u64
}

impl RtSender {
    /// A probe packet of full GCC's current cluster if one is due (bitrate_prober.cc: a
    /// cluster's packets leave at its rate, until it has `min_probes` packets and `min_bytes`
    /// bytes; the clusters of the call's start are created when it starts). Padding: frame 0
    /// of no bytes, which the receiver counts and reports but does not assemble.
    fn poll_probe(&mut self, now: Nanos) -> Option<Packet> {
        let size = self.packet_bytes();
        let init = self.cfg.init_rate_bps as f64;
        let stopped = self.stopped(now);
        let Ctl::GccFull(g) = &mut self.ctl else {
            return None;
        };
        let pr = g.probing.as_mut()?;
        if stopped || now < pr.next {
            return None;
        }
        if !pr.started {
            pr.started = true;
            let c = pr.controller.initiate_exponential(init, now);
            pr.pending.extend(c);
        }
        if pr.active.is_none() {
            let c = pr.pending.pop_front()?;
            pr.active = Some((c, now, 0, 0));
        }
        let (c, start, n, bytes) = pr.active.as_mut()?;
        *n += 1;
        *bytes += size;
        pr.next = *start + Nanos::from_secs_f64(*bytes as f64 * 8.0 / c.rate_bps.max(1.0));
        let cluster = *c;
        if *n >= c.min_probes && *bytes >= c.min_bytes {
            pr.active = None;
        }
        self.sent_pkts += 1;
        self.sent_bytes += size;
        let seq = self.sent_pkts;
        pr.sent.insert(seq, cluster);
        if let Some((a, _)) = self.ccfb.as_mut() {
            a.on_sent(SentPacket {
                seq,
                size_bytes: size as u32,
                send_time: now,
            });
        }
        let mut p = Packet::new(
            ((self.flow as u64) << 40) | seq,
            self.flow,
            size as u32,
            self.cfg.ecn,
        );
        p.sent_at = now;
        p.transport = Transport::Rt(RtHeader {
            seq,
            padding: true,
            ..Default::default()
        });
        Some(p)
    }

    /// One pass of udp_prague's `--rtmode` loop at `now`, one packet per call.
    fn poll_prague(&mut self, now: Nanos) -> Option<Packet> {
        let l = self.pl.as_mut()?;
        let window = l.info.frame_window as i64;
        let in_flight = l.fw.in_flight();
        // The loop runs when an ACK arrived, or when the pacing / frame timer it waits for
        // (only while below the window) has come.
        let timer_due = in_flight < window && now >= self.next_send;
        if !(l.ack_wake || timer_due) {
            return None;
        }
        // ~277-283: a wake-up after the timer it waited for brings the next burst forward.
        if l.timer_wait && now > self.next_send && in_flight > 0 {
            l.comp_ns -= (now - self.next_send).0 as i64;
        }
        if self.in_burst == 0 && self.cur.is_none() && now >= self.next_send {
            self.start_due_frame(now);
        }
        let next_slot_at = self.slot_time(self.next_slot);
        let l = self.pl.as_mut()?;
        let window = l.info.frame_window as i64;
        let sendable = self.cur.is_some()
            && l.fw.in_flight() <= window
            && self.in_burst < l.info.packet_burst
            && now >= self.next_send;
        if !sendable {
            l.ack_wake = false;
            l.timer_wait = l.fw.in_flight() < window;
            return None;
        }
        let cur = self.cur.as_mut()?;
        if cur.sent == 0 {
            l.fw.start_frame(cur.frame);
        }
        let mut payload = l.info.packet_bytes;
        if cur.sent + payload > cur.bytes {
            payload = if cur.sent + MIN_PACKET_BYTES as u64 > cur.bytes {
                MIN_PACKET_BYTES as u64
            } else {
                cur.bytes - cur.sent
            };
        }
        self.sent_pkts += 1;
        let wire = payload + WIRE_OVERHEAD_BYTES as u64;
        self.sent_bytes += wire;
        l.fw.on_sent(self.sent_pkts, cur.frame);
        push_unacked(&mut self.unacked, self.sent_pkts, wire as u32);
        cur.sent += payload;
        let done = cur.sent >= cur.bytes;
        let frame_wire = prague_frame_wire_bytes(cur.bytes, l.info.packet_bytes);
        let p = media_packet(
            self.flow,
            self.cfg.ecn,
            self.sent_pkts,
            wire,
            now,
            cur,
            frame_wire,
        );
        self.in_burst += 1;
        if self.in_burst >= l.info.packet_burst || done {
            // End of the burst (~178-197): the next frame's slot, or the paced interval of
            // this burst's bytes less the lateness owed.
            if done {
                self.cur = None;
                self.next_send = next_slot_at;
            } else {
                let d_ns = l.comp_ns
                    + (payload as f64 * self.in_burst as f64 * 1e9 / l.info.pacing_rate) as i64;
                self.next_send = if d_ns <= 0 {
                    now + Nanos(1000)
                } else {
                    now + Nanos(d_ns as u64)
                };
                l.comp_ns = 0;
            }
            l.fw.end_burst(done);
            self.in_burst = 0;
            l.ack_wake = false;
            l.wait_since = now;
            l.timer_wait = l.fw.in_flight() < window;
        }
        Some(p)
    }
}
