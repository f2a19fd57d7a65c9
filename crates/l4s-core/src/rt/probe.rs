//! Latency-under-load probe: a small request every `interval`, answered at once by the peer;
//! the round-trip times give responsiveness in round trips per minute (RPM).
//! Follows the responsiveness metric of draft-ietf-ippm-responsiveness (RPM = 60 s / the
//! median round-trip time under working conditions).
//!
//! Simplified (named): one request/response packet pair per exchange (no TCP/TLS set-up or
//! HTTP/2 request as networkQuality sends), so the RTT is the network's round trip alone.

use crate::packet::{Ecn, Packet, Transport};
use crate::rt::{AppLog, Replies};
use crate::time::Nanos;
use crate::{Endpoint, FlowStats, ParamError};

/// Parameters of a probe.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeConfig {
    /// Time between requests.
    pub interval: Nanos,
    /// IP bytes of a request and of its response.
    pub packet_bytes: u32,
    /// Codepoint of requests and responses.
    pub ecn: Ecn,
    /// First request.
    pub start: Nanos,
    /// No request at or after this.
    pub stop: Option<Nanos>,
}

impl ProbeConfig {
    /// Check the parameters; errors name the scenario key.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.interval.0 == 0 {
            return Err(ParamError::new(
                "interval",
                self.interval,
                "a duration > 0, e.g. \"100ms\"",
            ));
        }
        if !(28..=65_535).contains(&self.packet_bytes) {
            return Err(ParamError::new(
                "packet_size",
                self.packet_bytes,
                "an integer in [28, 65535] (IP bytes)",
            ));
        }
        Ok(())
    }
}

/// The requesting side.
#[derive(Clone, Debug)]
pub struct ProbeClient {
    flow: u32,
    cfg: ProbeConfig,
    next: u64,
    sent_at: Vec<Nanos>,
    rtts: Vec<(Nanos, Nanos)>,
}

impl ProbeClient {
    /// A probe for flow `flow` with validated parameters.
    pub fn new(flow: u32, cfg: ProbeConfig) -> Result<Self, ParamError> {
        cfg.validate()?;
        Ok(ProbeClient {
            flow,
            cfg,
            next: 0,
            sent_at: Vec::new(),
            rtts: Vec::new(),
        })
    }

    fn next_at(&self) -> Option<Nanos> {
        let t = self.cfg.start + Nanos(self.cfg.interval.0 * self.next);
        self.cfg.stop.is_none_or(|s| t < s).then_some(t)
    }
}

impl Endpoint for ProbeClient {
    fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
        if let Transport::Udp { seq } = pkt.transport {
            if let Some(&at) = self.sent_at.get(seq as usize) {
                self.rtts.push((at, now - at));
            }
        }
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        let at = self.next_at()?;
        if at > now {
            return None;
        }
        let seq = self.next;
        self.next += 1;
        self.sent_at.push(now);
        let mut p = Packet::new(
            ((self.flow as u64) << 40) | seq,
            self.flow,
            self.cfg.packet_bytes,
            self.cfg.ecn,
        );
        p.transport = Transport::Udp { seq };
        Some(p)
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.next_at()
    }

    fn handle_timeout(&mut self, _now: Nanos) {}

    fn stats(&self) -> FlowStats {
        FlowStats {
            sent_pkts: self.next,
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            alpha: f64::NAN,
            ..Default::default()
        }
    }

    fn take_app_log(&mut self) -> AppLog {
        AppLog::ProbeRtts(std::mem::take(&mut self.rtts))
    }
}

/// The answering side: echoes each request at once.
#[derive(Clone, Debug, Default)]
pub struct ProbeServer {
    pending: Replies,
}

impl Endpoint for ProbeServer {
    fn handle_packet(&mut self, pkt: Packet, _now: Nanos) {
        self.pending.push(pkt);
    }

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        self.pending.pop(now)
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }

    fn handle_timeout(&mut self, _now: Nanos) {}

    fn stats(&self) -> FlowStats {
        FlowStats {
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            alpha: f64::NAN,
            ..Default::default()
        }
    }
}
