//! l4s-core: sans-I/O L4S algorithms. Nothing here reads a clock, touches a socket or a file,
//! or uses a global RNG: callers pass the time (`Nanos`) and own the random streams (`Rng`), so
//! the simulator (virtual time) and the emulator (wall clock) drive the very same objects.

// `Aqm::enqueue` hands a dropped packet back by value (`Err(Packet)`) so that the caller can
// account for it without an allocation; the packet is larger than clippy's default for errors.
#![allow(clippy::result_large_err)]

pub mod aqm;
pub mod cbr;
pub mod cc;
pub mod error;
pub mod link;
pub mod packet;
pub mod rng;
pub mod tcp;
pub mod time;

pub use error::{ParamError, ParseError};
pub use packet::{Ecn, Packet};
pub use rng::Rng;
pub use time::{parse_duration, parse_rate, Nanos, Rate};

/// Per-flow state an end host reports to recorders (DESIGN.md `flows.parquet`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowStats {
    /// Payload bytes delivered in order to the receiving application.
    pub delivered_bytes: u64,
    /// Data packets put on the wire (including retransmissions).
    pub sent_pkts: u64,
    pub retransmits: u64,
    /// Congestion window in packets (fractional where the CC keeps one); NaN for non-window senders.
    pub cwnd_pkts: f64,
    pub ssthresh_pkts: f64,
    /// Smoothed RTT; zero before the first sample.
    pub srtt: Nanos,
    /// Pacing rate in bits/s; 0 when not pacing.
    pub pacing_bps: u64,
    /// Packets the sender learned were CE-marked (cumulative).
    pub ce_acked: u64,
    /// Packets declared lost (cumulative).
    pub lost_pkts: u64,
    /// The CC's α where it has one, else NaN.
    pub alpha: f64,
    /// Data bytes sent and not yet acknowledged.
    pub in_flight_bytes: u64,
}

/// A sans-I/O end host, in the style of quinn-proto: feed it packets and timeouts with the
/// current time; ask it for packets to send and for the time it next wants to be woken.
pub trait Endpoint: Send {
    /// A packet arrived from the network at `now`.
    fn handle_packet(&mut self, pkt: Packet, now: Nanos);
    /// The next packet to put on the wire at `now`, if any may leave now (cwnd and pacing allow).
    fn poll_transmit(&mut self, now: Nanos) -> Option<Packet>;
    /// When the endpoint next needs `handle_timeout` (RTO, delayed ACK, pacing release, start).
    fn poll_timeout(&self) -> Option<Nanos>;
    fn handle_timeout(&mut self, now: Nanos);
    fn stats(&self) -> FlowStats;
    /// A sized transfer has been fully delivered and acknowledged (never for bulk flows).
    fn is_done(&self) -> bool {
        false
    }
}
