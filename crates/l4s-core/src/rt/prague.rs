//! Rate-based Prague congestion control of a real-time (frame-mode) sender ("RT-Prague").
//! Follows L4STeam udp_prague `prague_cc.cpp`: `PragueCC::PacketReceived` (RTT), `ACKReceived`
//! (α, loss, additive increase, CE reduction), `GetCCInfoVideo` (frame size).
//!
//! Faithful: α is an EWMA of the CE fraction of the packets received in the last virtual RTT
//! (vrtt = max(srtt, reference RTT)), updated at most once per vrtt, with gain 1/shift where
//! shift = 16·25 ms / frame interval (`get_alpha_shift`; 16 in bulk mode); on new CE, at most
//! once per vrtt and round (`cs_in_cwr`), the window (or rate) shrinks by α/2; on new loss, at
//! most once per vrtt and round, it halves; every non-CE ACK adds
//! packet_size·increment·(srtt/vrtt)²/W bytes to the window W (window mode), or the rate
//! equivalent (rate mode, used when srtt ≤ 2 ms or ≤ one packet's pacing interval), with
//! increment = one max-size packet until `rtts_to_growth` vrtts without CE have passed, then
//! 1 ms worth of the rate; pacing rate = W/srtt clamped to [min_rate, max_rate]; packet size
//! = rate·vrtt/2 clamped to [150 B, max packet]; burst = 250 µs of the rate; packet window =
//! 1.03·W/packet + 1 (≥ 2); frame size = max(packet, rate·frame_budget); frame window =
//! packet window·packet/frame (≥ 2, `GetCCInfoVideo`). Start (constructor): initial window
//! 10 max-size packets (`PRAGUE_INITWIN`), packet window ⌈W/packet⌉. An RTT sample whose
//! ACK timestamp is older than the previous one is dropped (`PacketReceived`);
//! `ResetCCInfo` (the sender's 1 s feedback timeout) returns to the initial rate and a
//! one-packet window. Sizes are UDP payload bytes, as udp_prague counts them.
//! Simplified (named): floating point instead of the µB/µs fixed point; the undo of a loss
//! reduction when the lost count falls again (reordering) is not modelled; timestamps are
//! the simulator's nanoseconds (no 32-bit µs wrap-around).

use crate::time::Nanos;

/// udp_prague `REF_RTT`: 25 ms.
pub const REF_RTT_NS: u64 = 25_000_000;
/// udp_prague `PRAGUE_MINMTU`: smallest packet, bytes.
pub const MIN_PACKET_BYTES: f64 = 150.0;
/// udp_prague `MIN_STEP`: vrtts without CE before faster growth.
const MIN_STEP: f64 = 7.0;
/// udp_prague `RATE_STEP`: one more vrtt of waiting per 1.92 MB/s of rate.
const RATE_STEP_BYTES_PER_S: f64 = 1_920_000.0;
/// udp_prague `QUEUE_GROWTH`: in growth mode the increment is 1 ms worth of the rate.
const QUEUE_GROWTH_S: f64 = 0.001;
/// udp_prague `BURST_TIME`: 250 µs.
const BURST_S: f64 = 250e-6;
/// udp_prague `RATE_OFFSET`: the packet window allows 3 % above the rate.
const WINDOW_OFFSET: f64 = 1.03;
/// udp_prague `PRAGUE_INITWIN`: initial window, max-size packets.
pub const INIT_WINDOW_PKTS: f64 = 10.0;
/// udp_prague `PRAGUE_INITRATE`: 12 500 B/s = 100 kb/s.
pub const INIT_RATE_BPS: u64 = 100_000;
/// udp_prague `MIN_PKT_WIN`: the packet window is at least 2 packets.
const MIN_PKT_WIN: u64 = 2;
/// Bytes a UDP payload carries on the wire on top: IPv4 (20) + UDP (8) headers.
pub const WIRE_OVERHEAD_BYTES: u32 = 28;
/// udp_prague `MIN_FRAME_WIN`: the frame window is at least 2 frames.
pub const MIN_FRAME_WIN: u64 = 2;

/// What `GetCCInfoVideo` hands the frame sender when a frame starts; the sender keeps it
/// for the whole frame.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct VideoInfo {
    /// Pacing rate, bytes/s.
    pub pacing_rate: f64,
    /// Bytes (UDP payload) of the frame.
    pub frame_bytes: u64,
    /// Frames allowed in flight.
    pub frame_window: u64,
    /// Packets per burst.
    pub packet_burst: u32,
    /// Payload bytes per packet.
    pub packet_bytes: u64,
}

/// `cs_tp`: where the controller is in its reduction cycle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CcState {
    Init,
    CongAvoid,
    InLoss,
    InCwr,
}

/// `cca_tp`: window- or rate-based update.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Mode {
    Window,
    Rate,
}

/// The cumulative counters a feedback packet echoes (udp_prague `ackmessage_t`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedbackCounters {
    /// Data packets received so far.
    pub received: u64,
    /// Of those, CE-marked.
    pub ce: u64,
    /// Data packets the receiver counts as lost (sequence gaps).
    pub lost: u64,
}

/// RT-Prague state (one `PragueCC` object).
#[derive(Clone, Debug)]
pub struct RtPrague {
    max_packet_bytes: f64,
    init_rate: f64,
    min_rate: f64,
    max_rate: f64,
    ref_rtt_s: f64,
    alpha_shift: f64,
    srtt_s: f64,
    vrtt_s: f64,
    state: CcState,
    mode: Mode,
    // Last feedback seen.
    fb: FeedbackCounters,
    // ACK timestamp of the last RTT sample taken (`m_r_prev_ts`).
    prev_ack_ts: Nanos,
    // α bookkeeping.
    alpha: f64,
    alpha_ts: Nanos,
    alpha_received: u64,
    alpha_ce: u64,
    alpha_sent: u64,
    // Loss and CWR round ends.
    loss_ts: Nanos,
    loss_sent: u64,
    cwr_ts: Nanos,
    cwr_sent: u64,
    rtts_to_growth: f64,
    /// Pacing rate, bytes/s.
    rate: f64,
    /// Window, bytes.
    window: f64,
    packet_bytes: f64,
    packet_burst: u32,
    packet_window: u64,
    /// CE reductions applied (for tests and stats).
    pub cwr_events: u64,
}

impl RtPrague {
    /// A controller for frames at `fps` (0 = bulk mode) starting at `init_rate_bps`, kept in
    /// [`min_rate_bps`, `max_rate_bps`], with packets of at most `max_packet_bytes` (UDP
    /// payload). As the `PragueCC` constructor: window 10 max-size packets, packet size
    /// rate·reference RTT/2, packet window ⌈W/packet⌉ ≥ 2.
    pub fn new(
        fps: u32,
        init_rate_bps: u64,
        min_rate_bps: u64,
        max_rate_bps: u64,
        max_packet_bytes: u32,
    ) -> Self {
        // get_ref_rtt / get_alpha_shift: in frame mode the frame interval replaces 25 ms.
        let (ref_rtt_s, alpha_shift) = if fps > 0 {
            let interval_us = 1_000_000 / fps as u64;
            (
                interval_us as f64 * 1e-6,
                ((16 * REF_RTT_NS / 1000) / interval_us).max(1) as f64,
            )
        } else {
            (REF_RTT_NS as f64 * 1e-9, 16.0)
        };
        let rate = init_rate_bps as f64 / 8.0;
        let mut s = RtPrague {
            max_packet_bytes: max_packet_bytes as f64,
            init_rate: rate,
            min_rate: min_rate_bps as f64 / 8.0,
            max_rate: max_rate_bps as f64 / 8.0,
            ref_rtt_s,
            alpha_shift,
            srtt_s: 0.0,
            vrtt_s: ref_rtt_s,
            state: CcState::Init,
            mode: Mode::Window,
            fb: FeedbackCounters::default(),
            prev_ack_ts: Nanos::ZERO,
            alpha: 0.0,
            alpha_ts: Nanos::ZERO,
            alpha_received: 0,
            alpha_ce: 0,
            alpha_sent: 0,
            loss_ts: Nanos::ZERO,
            loss_sent: 0,
            cwr_ts: Nanos::ZERO,
            cwr_sent: 0,
            rtts_to_growth: (rate / RATE_STEP_BYTES_PER_S).floor() + MIN_STEP,
            rate,
            window: 0.0,
            packet_bytes: 0.0,
            packet_burst: 1,
            packet_window: 2,
            cwr_events: 0,
        };
        s.window = INIT_WINDOW_PKTS * s.max_packet_bytes;
        s.packet_bytes = (rate * ref_rtt_s / MIN_PKT_WIN as f64)
            .floor()
            .clamp(MIN_PACKET_BYTES, s.max_packet_bytes);
        s.packet_burst = ((rate * BURST_S / s.packet_bytes) as u32).max(1);
        s.packet_window = ((s.window / s.packet_bytes).ceil() as u64).max(MIN_PKT_WIN);
        s
    }

    /// `ResetCCInfo`, called by the sender after 1 s without feedback while window-limited:
    /// back to the initial rate, a one-packet window (packet window 2), α 0, state init.
    pub fn reset(&mut self, now: Nanos) {
        self.state = CcState::Init;
        self.mode = Mode::Window;
        self.alpha_ts = now;
        self.alpha = 0.0;
        self.rate = self.init_rate;
        self.window = self.max_packet_bytes;
        self.packet_burst = 1;
        self.packet_bytes = self.max_packet_bytes;
        self.packet_window = MIN_PKT_WIN;
        self.rtts_to_growth = (self.rate / RATE_STEP_BYTES_PER_S).floor() + MIN_STEP;
    }

    /// `PacketReceived`: an RTT sample from an ACK stamped `ack_ts` by the receiver. Once
    /// started, an ACK older than the last one sampled is ignored (returns false).
    pub fn packet_received(&mut self, ack_ts: Nanos, rtt: Nanos) -> bool {
        if self.state != CcState::Init && self.prev_ack_ts > ack_ts {
            return false;
        }
        self.on_rtt_sample(rtt);
        self.prev_ack_ts = ack_ts;
        true
    }

    /// The α gain's denominator (`get_alpha_shift`).
    pub fn alpha_shift(&self) -> f64 {
        self.alpha_shift
    }

    /// `PacketReceived`: an RTT sample from an echoed timestamp; srtt is an EWMA with gain
    /// 1/8 (the first sample sets it), vrtt = max(srtt, reference RTT).
    pub fn on_rtt_sample(&mut self, rtt: Nanos) {
        let r = rtt.as_secs_f64();
        if self.state == CcState::Init {
            self.srtt_s = r;
        } else {
            self.srtt_s += (r - self.srtt_s) / 8.0;
        }
        self.vrtt_s = self.srtt_s.max(self.ref_rtt_s);
    }

    /// `ACKReceived`: new cumulative counters from the receiver; `packets_sent` is the
    /// sender's count of data packets sent so far. Older feedback is ignored.
    pub fn on_feedback(&mut self, fb: FeedbackCounters, packets_sent: u64, now: Nanos) {
        if fb.received < self.fb.received || fb.ce < self.fb.ce {
            return;
        }
        let srtt = self.srtt_s.max(1e-6);
        let vrtt = Nanos::from_secs_f64(self.vrtt_s);
        if self.state == CcState::Init {
            self.window = srtt * self.rate;
            self.state = CcState::CongAvoid;
        }
        // Below 2 ms, or one packet's pacing interval, the RTT says too little: rate mode.
        let pacing_interval_s = self.packet_bytes / self.rate;
        if srtt <= 0.002 || srtt <= pacing_interval_s {
            self.mode = Mode::Rate;
        } else {
            if self.mode == Mode::Rate {
                self.window = srtt * self.rate;
            }
            self.mode = Mode::Window;
        }
        // α: once a vrtt has passed and the packets sent at the last update are accounted for.
        if fb.received + fb.lost > self.alpha_sent && now.saturating_sub(self.alpha_ts) >= vrtt {
            let n = fb.received.saturating_sub(self.alpha_received);
            if n > 0 {
                let prob = (fb.ce - self.alpha_ce) as f64 / n as f64;
                self.alpha += (prob - self.alpha) / self.alpha_shift;
                self.alpha = self.alpha.min(1.0);
            }
            self.alpha_sent = packets_sent;
            self.alpha_ce = fb.ce;
            self.alpha_received = fb.received;
            self.alpha_ts = now;
            if self.rtts_to_growth > 0.0 {
                self.rtts_to_growth -= 1.0;
            }
        }
        // The loss round ends after a vrtt and once the packets sent at the cut are accounted.
        if self.state == CcState::InLoss
            && fb.received + fb.lost > self.loss_sent
            && now.saturating_sub(self.loss_ts) >= vrtt
        {
            self.state = CcState::CongAvoid;
        }
        if self.state != CcState::InLoss && fb.lost > self.fb.lost {
            // vrtts until a 25 ms flow would meet the bottleneck again (rescaled twice).
            let ref_s = REF_RTT_NS as f64 * 1e-9;
            self.rtts_to_growth =
                (self.rate / 2.0 / self.max_packet_bytes * ref_s / self.vrtt_s * ref_s).floor();
            match self.mode {
                Mode::Window => self.window -= self.window / 2.0,
                Mode::Rate => self.rate -= self.rate / 2.0,
            }
            self.state = CcState::InLoss;
            self.loss_sent = packets_sent;
            self.loss_ts = now;
        }
        // Additive increase for every non-CE ACK outside a loss round.
        let acks = (fb.received - self.fb.received) as f64 - (fb.ce - self.fb.ce) as f64;
        if self.state != CcState::InLoss && acks > 0.0 {
            let mut increment = self.rate * QUEUE_GROWTH_S;
            if increment < self.max_packet_bytes || self.rtts_to_growth > 0.0 {
                increment = self.max_packet_bytes;
            }
            match self.mode {
                Mode::Window => {
                    let scaler = (srtt / self.vrtt_s).powi(2);
                    self.window += acks * self.packet_bytes * scaler * increment / self.window;
                }
                Mode::Rate => {
                    self.rate += acks * increment * self.packet_bytes
                        / (self.vrtt_s * self.vrtt_s * self.rate);
                }
            }
        }
        if self.state == CcState::InCwr
            && fb.received + fb.lost > self.cwr_sent
            && now.saturating_sub(self.cwr_ts) >= vrtt
        {
            self.state = CcState::CongAvoid;
        }
        // CE: cut by α/2, once per round.
        if self.state == CcState::CongAvoid && fb.ce > self.fb.ce {
            self.rtts_to_growth = (self.rate / RATE_STEP_BYTES_PER_S).floor() + MIN_STEP;
            match self.mode {
                Mode::Window => self.window -= self.window * self.alpha / 2.0,
                Mode::Rate => self.rate -= self.rate * self.alpha / 2.0,
            }
            self.state = CcState::InCwr;
            self.cwr_sent = packets_sent;
            self.cwr_ts = now;
            self.cwr_events += 1;
        }
        if self.mode != Mode::Rate {
            self.rate = self.window / srtt;
        }
        self.rate = self.rate.clamp(self.min_rate, self.max_rate);
        self.window = (self.rate * srtt).max(1e-6);
        self.derive_packet_params();
        self.fb = fb;
    }

    /// Packet size, burst and packet window from the rate (end of `ACKReceived`).
    fn derive_packet_params(&mut self) {
        self.packet_bytes = (self.rate * self.vrtt_s / 2.0)
            .floor()
            .clamp(MIN_PACKET_BYTES, self.max_packet_bytes);
        self.packet_burst = ((self.rate * BURST_S / self.packet_bytes) as u32).max(1);
        self.packet_window =
            ((self.window * WINDOW_OFFSET / self.packet_bytes) as u64 + 1).max(MIN_PKT_WIN);
    }

    /// Pacing rate, bits/s.
    pub fn rate_bps(&self) -> f64 {
        self.rate * 8.0
    }
    /// α in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// Smoothed RTT.
    pub fn srtt(&self) -> Nanos {
        Nanos::from_secs_f64(self.srtt_s)
    }
    /// Bytes per packet now.
    pub fn packet_bytes(&self) -> u32 {
        self.packet_bytes as u32
    }
    /// Packets that may leave back to back.
    pub fn packet_burst(&self) -> u32 {
        self.packet_burst
    }
    /// Packets allowed in flight.
    pub fn packet_window(&self) -> u64 {
        self.packet_window
    }
    /// `GetCCInfoVideo`: bytes of the next frame, max(packet, rate·frame_budget).
    pub fn frame_bytes(&self, frame_budget: Nanos) -> u64 {
        (self.rate * frame_budget.as_secs_f64()).max(self.packet_bytes) as u64
    }

    /// `GetCCInfoVideo`: what a frame starting now is sent with; the frame window is
    /// packet window·packet size/frame size (integer division), at least `MIN_FRAME_WIN`.
    pub fn video_info(&self, frame_budget: Nanos) -> VideoInfo {
        let frame_bytes = self.frame_bytes(frame_budget).max(1);
        let packet_bytes = self.packet_bytes as u64;
        VideoInfo {
            pacing_rate: self.rate,
            frame_bytes,
            frame_window: (self.packet_window * packet_bytes / frame_bytes).max(MIN_FRAME_WIN),
            packet_burst: self.packet_burst,
            packet_bytes,
        }
    }
}
