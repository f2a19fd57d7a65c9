//! The receiving end of one l4s-flow connection: an l4s-core `TcpReceiver` fed with the
//! datagrams' segments and IP-ECN codepoints, its counts ([`ReceiverReport`]) and its ACKs.
//! Used by the server for a forward run and by the client for a reverse run (-R).

use l4s_core::packet::{TcpHeader, Transport};
use l4s_core::tcp::{TcpConfig, TcpReceiver, DATA_SEQ_START, TCP_IP_HEADER_BYTES};
use l4s_core::{Ecn, Endpoint, Nanos, Packet};

use crate::error::FlowError;
use crate::wire::{self, Control, ReceiverReport};

/// A SYN without ACK: the segment that opens a connection (RFC 9293 §3.5).
pub fn is_syn(h: &TcpHeader) -> bool {
    h.has(l4s_core::packet::tcp_flags::SYN) && !h.has(l4s_core::packet::tcp_flags::ACK)
}

/// One receiver interval, as printed and stored in a reverse run's JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReceiverInterval {
    /// Interval start, s since the run began.
    pub start_s: f64,
    /// Interval end, s since the run began.
    pub end_s: f64,
    /// Payload bytes delivered in order in the interval.
    pub bytes: u64,
    /// Goodput in Mbit/s.
    pub mbps: f64,
    /// Data datagrams received in the interval.
    pub data_pkts: u64,
    /// Fraction of them that arrived CE-marked.
    pub ce_fraction: f64,
}

impl ReceiverInterval {
    /// The printed line of stream or connection `id`.
    pub fn line(&self, id: u32) -> String {
        format!(
            "[{id:>3}] {:>6.2}-{:<6.2} s  {:>12}  {:>8.2} Mbit/s received, CE {:.1}% of {} data datagrams",
            self.start_s,
            self.end_s,
            crate::report::human_bytes(self.bytes),
            self.mbps,
            100.0 * self.ce_fraction,
            self.data_pkts
        )
    }
}

/// A connection's receiver and counts.
pub struct RecvConn {
    rcv: TcpReceiver,
    /// What was received so far (`delivered_bytes` is set by [`RecvConn::delivered`]).
    pub rep: ReceiverReport,
    /// When the last datagram of the connection arrived.
    pub last_rx: Nanos,
    /// When its SYN arrived.
    pub started: Nanos,
    /// When the sender's Done arrived (the report was sent).
    pub closed: Option<Nanos>,
    /// Counts at the last interval boundary: (time, bytes, CE datagrams, data datagrams).
    iv: (Nanos, u64, u64, u64),
}

impl RecvConn {
    /// A receiver for a connection whose SYN arrived at `now`; `idx` names it in l4s-core.
    pub fn new(idx: u32, now: Nanos) -> Self {
        let cfg = TcpConfig {
            // The receiver answers in the feedback mode the sender's SYN asks for.
            ecn: None,
            ..TcpConfig::default()
        };
        RecvConn {
            rcv: TcpReceiver::new(idx, &cfg),
            rep: ReceiverReport::default(),
            last_rx: now,
            started: now,
            closed: None,
            iv: (now, 0, 0, 0),
        }
    }

    /// Bytes delivered in order so far.
    pub fn delivered(&self) -> u64 {
        self.rcv.delivered_bytes()
    }

    /// A segment arrived with IP-ECN codepoint `ecn` (None: not readable, taken as Not-ECT):
    /// count it, check its payload against the pattern and hand it to the TCP receiver.
    pub fn on_segment(&mut self, h: TcpHeader, payload: &[u8], ecn: Option<Ecn>, now: Nanos) {
        self.last_rx = now;
        if self.closed.is_some() {
            return;
        }
        let ecn = ecn.unwrap_or(Ecn::NotEct);
        if h.payload_bytes > 0 {
            let r = &mut self.rep;
            r.data_pkts += 1;
            match ecn {
                Ecn::NotEct => r.not_ect_pkts += 1,
                Ecn::Ect1 => r.ect1_pkts += 1,
                Ecn::Ect0 => r.ect0_pkts += 1,
                Ecn::Ce => r.ce_pkts += 1,
            }
            let off = h.seq.saturating_sub(DATA_SEQ_START);
            if h.seq < DATA_SEQ_START || !wire::check_pattern(payload, off) {
                r.bad_payload_pkts += 1;
            }
        }
        let pkt = Packet {
            bytes: h.payload_bytes + TCP_IP_HEADER_BYTES,
            ecn,
            sent_at: h.ts_val,
            transport: Transport::Tcp(h),
            ..Default::default()
        };
        self.rcv.handle_packet(pkt, now);
    }

    /// The sender's Done arrived: the report to send back (again, for a repeated Done).
    /// Returns whether this is the first Done.
    pub fn on_done(&mut self, now: Nanos) -> (Control, bool) {
        self.last_rx = now;
        self.rep.delivered_bytes = self.rcv.delivered_bytes();
        let first = self.closed.is_none();
        if first {
            self.closed = Some(now);
        }
        (Control::Report(self.rep), first)
    }

    /// Run the delayed-ACK timer and send the ACKs due through `send` (encoded for connection
    /// `conn`). A full send buffer or a transient error loses an ACK, as a network would; a
    /// refused ECN codepoint is an error.
    pub fn transmit(
        &mut self,
        conn: u32,
        now: Nanos,
        buf: &mut Vec<u8>,
        peer_is_v4: bool,
        mut send: impl FnMut(&[u8], Ecn) -> std::io::Result<()>,
    ) -> Result<(), FlowError> {
        if self.closed.is_some() {
            return Ok(());
        }
        if self.rcv.poll_timeout().is_some_and(|t| t <= now) {
            self.rcv.handle_timeout(now);
        }
        while let Some(p) = self.rcv.poll_transmit(now) {
            let Some(h) = p.tcp() else { continue };
            wire::encode_segment(buf, conn, h, |_| {});
            match send(buf, p.ecn) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    return Err(FlowError::EcnUnsupported {
                        option: if peer_is_v4 { "IP_TOS" } else { "IPV6_TCLASS" },
                        source: e,
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// When the receiver next needs the loop: its timer, or the silence limit.
    pub fn deadline(&self, peer_timeout: Nanos) -> Nanos {
        let silence = self.last_rx + peer_timeout + Nanos(1);
        self.rcv.poll_timeout().map_or(silence, |d| d.min(silence))
    }

    /// The interval since the last call (or the SYN) up to `now`.
    pub fn interval(&mut self, now: Nanos) -> ReceiverInterval {
        let (t0, b0, ce0, n0) = self.iv;
        let b = self.rcv.delivered_bytes();
        let (ce, n) = (self.rep.ce_pkts, self.rep.data_pkts);
        let dt = now.saturating_sub(t0).as_secs_f64().max(1e-9);
        self.iv = (now, b, ce, n);
        let pkts = n - n0;
        ReceiverInterval {
            start_s: t0.as_secs_f64(),
            end_s: now.as_secs_f64(),
            bytes: b - b0,
            mbps: (b - b0) as f64 * 8.0 / dt / 1e6,
            data_pkts: pkts,
            ce_fraction: if pkts > 0 {
                (ce - ce0) as f64 / pkts as f64
            } else {
                0.0
            },
        }
    }
}
