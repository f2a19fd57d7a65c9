//! Constant-bit-rate (paced UDP) source and its sink, as sans-I/O [`Endpoint`]s.
//! An unresponsive sender paced at an exact rate like iperf3's UDP mode (no RFC governs it);
//! optional ECT(1) to use an L4S queue, as unresponsive L4S traffic does.
//!
//! Packet `n` of an on-period starting at `t0` leaves at `t0 + floor(n·bytes·8/rate)` ns, so the
//! long-run rate is exact with no rounding drift. With `on`/`off` set the source alternates
//! deterministic on and off periods starting with "on" at `start`. Packet ids are
//! `flow << 40 | n`, unique per run as long as flow ids are.

use crate::packet::{Ecn, Packet, Transport};
use crate::time::{Nanos, Rate};
use crate::{Endpoint, FlowStats, ParamError};

/// Parameters of a [`CbrSource`].
#[derive(Clone, Debug, PartialEq)]
pub struct CbrConfig {
    /// Sending rate while on.
    pub rate: Rate,
    /// IP length of every packet.
    pub packet_bytes: u32,
    /// Codepoint the packets carry (ECT(1) to use the L4S queue).
    pub ecn: Ecn,
    /// When the first packet leaves.
    pub start: Nanos,
    /// When sending stops (None = until the end of the run).
    pub stop: Option<Nanos>,
    /// On/off periods; both set or neither.
    pub on: Option<Nanos>,
    /// Length of each off period (with `on`).
    pub off: Option<Nanos>,
}

impl CbrConfig {
    /// Check rate, packet size and the on/off pair against their allowed ranges.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.rate.bps() == 0 {
            return Err(ParamError::new(
                "rate",
                self.rate,
                "a rate > 0, e.g. \"10mbit\"",
            ));
        }
        if !(28..=65_535).contains(&self.packet_bytes) {
            return Err(ParamError::new(
                "packet_size",
                self.packet_bytes,
                "an integer in [28, 65535] (IP bytes)",
            ));
        }
        match (self.on, self.off) {
            (Some(on), Some(_)) if on.0 == 0 => Err(ParamError::new("on", on, "a duration > 0")),
            (Some(_), None) | (None, Some(_)) => Err(ParamError::new(
                "off",
                "set without its partner",
                "both of on and off, or neither",
            )),
            _ => Ok(()),
        }
    }
}

/// A paced, unresponsive source.
#[derive(Clone, Debug)]
pub struct CbrSource {
    flow: u32,
    cfg: CbrConfig,
    /// Start of the current on-period.
    period_start: Nanos,
    /// Index of the next packet within the current on-period.
    n_in_period: u64,
    /// Its offset from the period start: floor(n·B/rate) ns, and the remainder n·B mod rate.
    offset_ns: u64,
    offset_rem: u64,
    /// B / rate and B mod rate with B = packet bits·1e9 (≤ 5.3e14: fits u64).
    step_q: u64,
    step_r: u64,
    /// Total packets sent (also the id counter).
    sent: u64,
    next_at: Option<Nanos>,
}

impl CbrSource {
    /// A source for flow `flow` with validated parameters.
    pub fn new(flow: u32, cfg: CbrConfig) -> Result<Self, ParamError> {
        cfg.validate()?;
        let b = cfg.packet_bytes as u64 * 8 * 1_000_000_000;
        let rate = cfg.rate.bps();
        let mut s = CbrSource {
            flow,
            period_start: cfg.start,
            cfg,
            n_in_period: 0,
            offset_ns: 0,
            offset_rem: 0,
            step_q: b / rate,
            step_r: b % rate,
            sent: 0,
            next_at: None,
        };
        s.next_at = s.compute_next();
        Ok(s)
    }

    /// Advance `offset` from packet n to n + 1: offset_n = floor(n·B / rate) with
    /// B = bits·1e9, kept as quotient + remainder so no division is needed per packet.
    fn step_offset(&mut self) {
        self.offset_ns += self.step_q;
        self.offset_rem += self.step_r;
        let rate = self.cfg.rate.bps();
        if self.offset_rem >= rate {
            self.offset_ns += 1;
            self.offset_rem -= rate;
        }
    }

    /// When packet `n_in_period` leaves, rolling to the next on-period when this one is over.
    fn compute_next(&mut self) -> Option<Nanos> {
        let mut t = self.period_start + Nanos(self.offset_ns);
        if let (Some(on), Some(off)) = (self.cfg.on, self.cfg.off) {
            if t >= self.period_start + on {
                self.period_start = self.period_start + on + off;
                self.n_in_period = 0;
                self.offset_ns = 0;
                self.offset_rem = 0;
                t = self.period_start;
            }
        }
        match self.cfg.stop {
            Some(stop) if t >= stop => None,
            _ => Some(t),
        }
    }
}

impl Endpoint for CbrSource {
    fn handle_packet(&mut self, _pkt: Packet, _now: Nanos) {}

    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
        let at = self.next_at?;
        if at > now {
            return None;
        }
        let mut p = Packet::new(
            ((self.flow as u64) << 40) | self.sent,
            self.flow,
            self.cfg.packet_bytes,
            self.cfg.ecn,
        );
        p.sent_at = now;
        p.transport = Transport::Udp { seq: self.sent };
        self.sent += 1;
        self.n_in_period += 1;
        self.step_offset();
        self.next_at = self.compute_next();
        Some(p)
    }

    fn poll_timeout(&self) -> Option<Nanos> {
        self.next_at
    }

    fn handle_timeout(&mut self, _now: Nanos) {}

    fn stats(&self) -> FlowStats {
        FlowStats {
            sent_pkts: self.sent,
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            pacing_bps: self.cfg.rate.bps(),
            alpha: f64::NAN,
            ..Default::default()
        }
    }
}

/// Receives a CBR flow: counts bytes and CE marks, sends nothing back.
#[derive(Clone, Debug, Default)]
pub struct CbrSink {
    delivered_bytes: u64,
    delivered_pkts: u64,
    ce_pkts: u64,
    /// Highest sequence number seen + 1, to count gaps as losses.
    next_seq: u64,
    lost: u64,
}

impl CbrSink {
    /// A sink that has received nothing yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// Packets received.
    pub fn delivered_pkts(&self) -> u64 {
        self.delivered_pkts
    }
}

impl Endpoint for CbrSink {
    fn handle_packet(&mut self, pkt: Packet, _now: Nanos) {
        self.delivered_bytes += pkt.bytes as u64;
        self.delivered_pkts += 1;
        if pkt.ecn == Ecn::Ce {
            self.ce_pkts += 1;
        }
        if let Transport::Udp { seq } = pkt.transport {
            if seq >= self.next_seq {
                self.lost += seq - self.next_seq;
                self.next_seq = seq + 1;
            } else {
                // A late (reordered) packet that was counted as a gap.
                self.lost = self.lost.saturating_sub(1);
            }
        }
    }
    fn poll_transmit(&mut self, _now: Nanos) -> Option<Packet> {
        None
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    fn handle_timeout(&mut self, _now: Nanos) {}
    fn stats(&self) -> FlowStats {
        FlowStats {
            delivered_bytes: self.delivered_bytes,
            ce_acked: self.ce_pkts,
            lost_pkts: self.lost,
            cwnd_pkts: f64::NAN,
            ssthresh_pkts: f64::NAN,
            alpha: f64::NAN,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> CbrConfig {
        CbrConfig {
            rate: Rate::from_mbps(12),
            packet_bytes: 1500,
            ecn: Ecn::Ect1,
            start: Nanos::from_ms(10),
            stop: None,
            on: None,
            off: None,
        }
    }

    fn drain(s: &mut CbrSource, until: Nanos) -> Vec<Nanos> {
        let mut out = Vec::new();
        while let Some(t) = s.poll_timeout() {
            if t > until {
                break;
            }
            s.handle_timeout(t);
            while let Some(p) = s.poll_transmit(t) {
                out.push(p.sent_at);
            }
        }
        out
    }

    #[test]
    fn sends_at_exact_spacing_from_start() {
        // 1500 B at 12 Mb/s = one packet per ms from 10 ms.
        let mut s = CbrSource::new(3, cfg()).unwrap();
        assert!(s.poll_transmit(Nanos::from_ms(9)).is_none());
        let times = drain(&mut s, Nanos::from_ms(19));
        assert_eq!(times.len(), 10);
        assert_eq!(times[0], Nanos::from_ms(10));
        assert_eq!(times[9], Nanos::from_ms(19));
        assert_eq!(s.stats().sent_pkts, 10);
    }

    #[test]
    fn non_integer_spacing_has_no_drift() {
        // 1000 B at 3 Mb/s: 8000 bits / 3e6 = 2.6667 ms; packet 3000 at exactly 8 s.
        let mut s = CbrSource::new(
            0,
            CbrConfig {
                rate: Rate::from_mbps(3),
                packet_bytes: 1000,
                start: Nanos::ZERO,
                ..cfg()
            },
        )
        .unwrap();
        let times = drain(&mut s, Nanos::from_secs(8));
        assert_eq!(times.len(), 3001);
        assert_eq!(times[3000], Nanos::from_secs(8));
    }

    #[test]
    fn on_off_and_stop() {
        // On 3 ms, off 2 ms, 1 pkt/ms from 10 ms: 10,11,12 | 15,16,17 | 20 (stop at 21 ms).
        let mut s = CbrSource::new(
            0,
            CbrConfig {
                on: Some(Nanos::from_ms(3)),
                off: Some(Nanos::from_ms(2)),
                stop: Some(Nanos::from_ms(21)),
                ..cfg()
            },
        )
        .unwrap();
        let ms: Vec<u64> = drain(&mut s, Nanos::from_secs(1))
            .iter()
            .map(|t| t.as_ns() / 1_000_000)
            .collect();
        assert_eq!(ms, vec![10, 11, 12, 15, 16, 17, 20]);
        assert!(s.poll_timeout().is_none());
    }

    #[test]
    fn sink_counts_bytes_marks_and_gaps() {
        let mut k = CbrSink::new();
        for seq in [0u64, 1, 3, 4] {
            let mut p = Packet::new(seq, 0, 1000, if seq == 4 { Ecn::Ce } else { Ecn::Ect1 });
            p.transport = Transport::Udp { seq };
            k.handle_packet(p, Nanos::ZERO);
        }
        let st = k.stats();
        assert_eq!(
            (st.delivered_bytes, st.ce_acked, st.lost_pkts),
            (4000, 1, 1)
        );
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = CbrSource::new(
            0,
            CbrConfig {
                rate: Rate(0),
                ..cfg()
            },
        )
        .unwrap_err();
        assert_eq!(e.param, "rate");
        let e = CbrSource::new(
            0,
            CbrConfig {
                on: Some(Nanos::from_ms(1)),
                ..cfg()
            },
        )
        .unwrap_err();
        assert_eq!(e.param, "off");
    }
}
