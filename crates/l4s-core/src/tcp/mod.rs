//! TCP sender and receiver state machines (sans-I/O, quinn-proto style), byte-accurate
//! sequence accounting per RFC 9293, 5681, 6675, 6937, 6298, 3168 and AccECN (RFC 9768,
//! draft-ietf-tcpm-accurate-ecn), following Linux net/ipv4/tcp_{input,output,rate}.c.
//!
//! The data flows one way: a [`TcpSender`] opens the connection with a SYN, sends data, and
//! processes ACKs; a [`TcpReceiver`] answers with a SYN/ACK and (delayed) ACKs. Both implement
//! [`crate::Endpoint`]. Congestion control is pluggable through [`crate::cc::CongestionControl`].
//! Driving them: after every `handle_packet`/`handle_timeout`, call `poll_transmit(now)` until
//! it returns None, then sleep until `poll_timeout()` (or the next arriving packet).
//!
//! Not modelled (named here so that nothing is hidden): FIN/close, receive-window updates
//! (the sender is limited by a fixed `rwnd_bytes`), TSQ without fq, the SACK-permitted option
//! (each side uses its own `sack` setting: the receiver sends SACK blocks when its config says
//! so and the sender uses them when its own does), PAWS, re-entering quick-ACK mode after
//! idle, DSACK, undo, RACK (a simplified tail loss probe is modelled), cwnd restart after
//! idle, connection abort after too many retransmissions (`tcp_retries2`). Details per file.

pub mod accecn;
pub mod fq_pacing;
pub mod gro;
#[cfg(test)]
mod gro_tests;
pub mod receiver;
pub mod rtt;
pub mod sender;
pub mod sndbuf;
#[cfg(test)]
mod sndbuf_tests;
pub mod tso;
#[cfg(test)]
mod tso_tests;

#[cfg(test)]
mod tests;

pub use crate::cc::EcnMode;
pub use receiver::TcpReceiver;
pub use sender::TcpSender;

use crate::error::{check_range_u64, ParamError};
use crate::time::Nanos;

/// IP + TCP header bytes of a data or ACK packet: 20 (IPv4) + 20 (TCP) + 12 (timestamp option
/// with two NOPs), so an IP packet is `mss + 52` bytes (1500 for the default MSS 1448).
pub const TCP_IP_HEADER_BYTES: u32 = 52;
/// IP length of a SYN or SYN/ACK: 20 + 20 + 20 bytes of options (MSS, SACK-permitted,
/// timestamps, window scale), as Linux sends them.
pub const SYN_BYTES: u32 = 60;
/// Bit that marks receiver-originated packet ids: `(flow << 40) | RECEIVER_ID_BIT | counter`.
pub const RECEIVER_ID_BIT: u64 = 1 << 39;
/// The first data byte's sequence number: the SYN occupies sequence number 0 (ISN = 0).
pub const DATA_SEQ_START: u64 = 1;

/// Configuration of one TCP connection (both ends read it; see each field for which).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Sender maximum segment size: payload bytes per full segment.
    pub mss: u32,
    /// Sender: the ECN handshake to ask for (None = what the CC requests).
    /// Receiver: what it supports (AccEcn: AccECN and classic; Classic: classic only;
    /// Some(EcnMode::None): no ECN). None on the receiver = supports everything (AccEcn).
    pub ecn: Option<EcnMode>,
    /// Sender: use SACK blocks for loss recovery (else NewReno). Receiver: send SACK blocks.
    pub sack: bool,
    /// Receiver: ACK at least every this many full in-order segments (Linux: 2).
    pub delack_segments: u32,
    /// Receiver: the first this many data segments are each acknowledged at once (Linux
    /// `tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)` on the first data packet: 16); 0 = none.
    pub initial_quickacks: u32,
    /// Receiver: delayed-ACK timer (Linux `TCP_DELACK_MIN` = 40 ms, the floor of its ATO).
    pub delack_timeout: Nanos,
    /// Receiver: ACK at once when ECN feedback changes (AccECN: the IP-ECN field of arriving
    /// data differs from the previous packet's; classic: the first CE that latches ECE).
    pub quickack_on_ce_change: bool,
    /// Receiver with classic ECN: echo ECE as DCTCP's receiver does (Linux
    /// `dctcp_ece_ack_update`): ECE = CE state of the latest data packet, an immediate ACK
    /// when that state changes (after first acking any delayed data with the old state), and
    /// no latching until CWR. Set it for DCTCP flows, whose receiver runs DCTCP too.
    pub dctcp_ece: bool,
    /// Initial window in packets (RFC 6928 IW10).
    pub init_cwnd: u32,
    /// Lower bound of the retransmission timeout (Linux `TCP_RTO_MIN`, 200 ms).
    pub min_rto: Nanos,
    /// Upper bound of the retransmission timeout (Linux `TCP_RTO_MAX`, 120 s).
    pub max_rto: Nanos,
    /// Sized transfer of this many payload bytes; None = bulk (never done).
    pub bytes: Option<u64>,
    /// When the sender sends its SYN.
    pub start: Nanos,
    /// After this time the sender sends no new data.
    pub stop: Option<Nanos>,
    /// Peer receive window the sender respects (bytes in flight), large by default.
    pub rwnd_bytes: u64,
    /// Honour the CC's pacing rate (Linux internal pacing via `tcp_wstamp_ns`).
    pub pacing: bool,
    /// Tail loss probe (Linux `tcp_early_retrans` = 3, RFC 8985 §7), with SACK only.
    pub tlp: bool,
    /// Sender host with TSO: paced data leaves in bursts of `tcp_tso_segs` segments, back to
    /// back at this NIC rate ([`tso`]); None = one segment at a time (no host burstiness).
    pub tso_nic_rate: Option<crate::time::Rate>,
    /// Sender host qdisc: none (a pacing CC paces inside TCP) or fq with EDT and TSQ
    /// ([`fq_pacing`]).
    pub qdisc: fq_pacing::HostQdisc,
    /// Sender host's `net.ipv4.tcp_wmem[2]`: a backlogged application behind an autotuned send
    /// buffer capped at this many bytes ([`sndbuf`]); None = no send-buffer limit.
    pub tcp_wmem_max: Option<u64>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            ecn: None,
            sack: true,
            delack_segments: 2,
            initial_quickacks: 16,
            delack_timeout: Nanos::from_ms(40),
            quickack_on_ce_change: true,
            dctcp_ece: false,
            init_cwnd: 10,
            min_rto: Nanos::from_ms(200),
            max_rto: Nanos::from_secs(120),
            bytes: None,
            start: Nanos::ZERO,
            stop: None,
            rwnd_bytes: 1 << 40,
            pacing: true,
            tlp: true,
            tso_nic_rate: None,
            qdisc: fq_pacing::HostQdisc::None,
            tcp_wmem_max: None,
        }
    }
}

impl TcpConfig {
    /// Check every field; the error names the field and its allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        check_range_u64("mss", self.mss as u64, 64, 65_483)?;
        check_range_u64("delack_segments", self.delack_segments as u64, 1, 1 << 16)?;
        check_range_u64("init_cwnd", self.init_cwnd as u64, 1, 1 << 20)?;
        if let Some(r) = self.tso_nic_rate {
            check_range_u64("nic_rate", r.bps(), 1_000_000, 1_000_000_000_000)?;
        }
        if let Some(w) = self.tcp_wmem_max {
            // The sysctl is an int of at least one page (proc_dointvec_minmax, SK_MEM_QUANTUM).
            check_range_u64("tcp_wmem", w, 4096, i32::MAX as u64)?;
        }
        if self.min_rto == Nanos::ZERO || self.min_rto > self.max_rto {
            return Err(ParamError::new(
                "min_rto",
                self.min_rto,
                &format!("a duration in (0, max_rto = {}]", self.max_rto),
            ));
        }
        if self.delack_timeout == Nanos::ZERO || self.delack_timeout > Nanos::from_secs(1) {
            return Err(ParamError::new(
                "delack_timeout",
                self.delack_timeout,
                "a duration in (0, 1s]",
            ));
        }
        if self.bytes == Some(0) {
            return Err(ParamError::new(
                "bytes",
                0,
                "at least 1 byte (or unset for bulk)",
            ));
        }
        if let Some(stop) = self.stop {
            if stop <= self.start {
                return Err(ParamError::new("stop", stop, "a time after start"));
            }
        }
        if self.rwnd_bytes < self.mss as u64 {
            return Err(ParamError::new(
                "rwnd_bytes",
                self.rwnd_bytes,
                "at least one mss",
            ));
        }
        Ok(())
    }

    /// IP length of a full-sized data packet.
    pub fn full_packet_bytes(&self) -> u32 {
        self.mss + TCP_IP_HEADER_BYTES
    }
}

/// Packet id: flow in the high bits, a per-endpoint counter below (unique per run).
pub(crate) fn packet_id(flow: u32, receiver: bool, counter: u64) -> u64 {
    ((flow as u64) << 40)
        | if receiver { RECEIVER_ID_BIT } else { 0 }
        | (counter & (RECEIVER_ID_BIT - 1))
}
