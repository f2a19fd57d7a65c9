//! Real-time (interactive) traffic: a frame-based media sender and receiver, their rate
//! controllers, and a request/response latency probe; L4STeam udp_prague's frame mode.
//!
//! A video source captures a frame every 1/fps; its size follows the rate controller (the
//! encoder follows the CC); the frame leaves as a paced burst within `frame_budget`; the
//! receiver echoes cumulative counters per packet (udp_prague's per-packet ACK) and records
//! when each frame is complete. Controllers: [`prague::RtPrague`] (L4S), [`gcc::GccLoss`]
//! (Classic, loss-based), [`scream::ScreamV2`] (WebRTC's L4S controller, fed by RFC 8888
//! reports from [`rfc8888`]) and a fixed rate (CBR video); frames sized from a target bitrate
//! go through the [`encoder`] model.

pub mod encoder;
pub mod feedback;
pub mod frame_window;
pub mod gcc;
pub mod gcc_delay;
pub mod gcc_probe;
pub mod prague;
pub mod probe;
pub mod receiver;
pub mod rfc8888;
pub mod scream;
pub mod sender;

pub use crate::packet::RtHeader;
use crate::packet::{Ecn, Packet};
use crate::time::Nanos;

/// The replies an answering endpoint (the media receiver, the probe server) owes: each
/// leaves at the next poll, in the order queued, stamped with its send time.
#[derive(Clone, Debug, Default)]
pub(crate) struct Replies(Vec<Packet>);

impl Replies {
    /// Queue `reply`. It keeps the codepoint of the packet it answers, but a CE mark is the
    /// path's, not a codepoint to send: it goes back as ECT(1).
    pub(crate) fn push(&mut self, mut reply: Packet) {
        if reply.ecn == Ecn::Ce {
            reply.ecn = Ecn::Ect1;
        }
        self.0.push(reply);
    }

    /// The oldest queued reply, stamped as sent at `now`.
    pub(crate) fn pop(&mut self, now: Nanos) -> Option<Packet> {
        if self.0.is_empty() {
            return None;
        }
        let mut p = self.0.remove(0);
        p.sent_at = now;
        Some(p)
    }
}

/// A frame as the sender captured it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SentFrame {
    /// Frame number.
    pub frame: u64,
    /// Capture time.
    pub capture_at: Nanos,
    /// Bytes (0 for a frame skipped because the previous one was still being sent).
    pub bytes: u64,
    /// Controller rate when the frame was sized, bits/s.
    pub rate_bps: f64,
}

/// A frame the receiver got completely.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DoneFrame {
    /// Frame number.
    pub frame: u64,
    /// When its last byte arrived.
    pub done_at: Nanos,
}

/// Application records an endpoint hands to the driver ([`crate::Endpoint::take_app_log`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum AppLog {
    /// Nothing.
    #[default]
    None,
    /// The frames a media sender captured.
    FramesSent(Vec<SentFrame>),
    /// The frames a media receiver completed.
    FramesDone(Vec<DoneFrame>),
    /// A probe's exchanges: (request sent at, round-trip time).
    ProbeRtts(Vec<(Nanos, Nanos)>),
}

/// Which rate controller drives a media sender.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Controller {
    /// RT-Prague (udp_prague frame mode).
    Prague,
    /// GCC's loss-based controller (CE counted as loss when the flow uses ECN).
    GccLoss,
    /// Full GCC: goog_cc's delay-based estimate ([`gcc_delay`]) and the loss-based one,
    /// the lower of the two.
    Gcc,
    /// A fixed encoder rate (CBR video), bits/s.
    Fixed(u64),
    /// SCReAMv2 (libwebrtc), fed by RFC 8888 reports.
    Scream(scream::ScreamParams),
}

#[cfg(test)]
mod tests;
