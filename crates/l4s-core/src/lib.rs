//! l4s-core: sans-I/O L4S algorithms. Nothing here reads a clock, touches a socket or a file,
//! or uses a global RNG: callers pass the time (`Nanos`) and own the random streams (`Rng`), so
//! the simulator (virtual time) and the emulator (wall clock) drive the very same objects.
//!
//! # How the pieces fit
//!
//! A packet ([`Packet`], with its IP-ECN codepoint [`Ecn`]) leaves a sending [`Endpoint`] (a
//! [`tcp::TcpSender`] with a [`cc::CongestionControl`], or a [`cbr::CbrSource`]), waits in an
//! AQM ([`aqm::Aqm`]) in front of a bottleneck [`link::LinkModel`], possibly meets a
//! [`link::LossModel`] or [`link::Jitter`], and reaches a receiving [`Endpoint`]
//! ([`tcp::TcpReceiver`], [`cbr::CbrSink`]), whose ACKs travel back. The driver (l4s-sim's event
//! loop, or the emulator's) owns the clock and calls the objects in that order; it asks each
//! for the next time it wants to run (`poll_timeout`, `next_wakeup`, `next_service`).
//!
//! # Module map: where each RFC section and Linux function lives
//!
//! | module | algorithm | follows |
//! |---|---|---|
//! | [`aqm`] | the queue-discipline trait [`aqm::Aqm`], [`aqm::Verdict`], [`aqm::QueueSample`], [`aqm::AqmStats`] | a Linux `Qdisc` (`enqueue`, `dequeue`, watchdog, xstats) |
//! | [`aqm::dualpi2`] | DualQ Coupled AQM with PI2: [`classifier`](aqm::dualpi2::classifier), [`pi2`](aqm::dualpi2::pi2), [`coupling`](aqm::dualpi2::coupling), [`step`](aqm::dualpi2::step), [`scheduler`](aqm::dualpi2::scheduler) | RFC 9332 §2, §A; Linux `sch_dualpi2.c` (`dualpi2_skb_classify`, `calculate_probability`, `must_drop`, `do_step_aqm`, `dequeue_packet`) |
//! | [`aqm::codel`] | CoDel control law and state machine | RFC 8289 §5; Linux `codel_impl.h` (`codel_dequeue`, `codel_should_drop`, `codel_Newton_step`), `sch_codel.c` |
//! | [`aqm::fq_codel`] | per-flow CoDel under DRR, new flows first | RFC 8290 §4–5; Linux `sch_fq_codel.c` (`fq_codel_enqueue`, `fq_codel_drop`, `__fq_codel_dequeue`) |
//! | [`aqm::pie`] | PIE drop probability from queue delay | RFC 8033 §4–5; Linux `pie.c` (`pie_calculate_probability`, `pie_drop_early`, `pie_process_dequeue`) |
//! | [`aqm::fifo`] | tail drop; step ECN marking | Linux pfifo/bfifo; RFC 8257 §3.1 (mark above K) |
//! | [`cc`] | the congestion-control trait [`cc::CongestionControl`], [`cc::CcState`], [`cc::AckSample`], slow start and AIMD helpers | Linux `struct tcp_congestion_ops`, `tcp_slow_start`, `tcp_cong_avoid_ai` (tcp_cong.c) |
//! | [`cc::prague`] | TCP Prague (scalable, L4S), v0.7 with its rate mode (`prague_cwnd_mode`) and MSS reduction | L4STeam `tcp_prague.c` (`prague_update_alpha`, `prague_enter_cwr`, `prague_update_cwnd`, `prague_cwnd_transit`, ...) |
//! | [`cc::dctcp`] | DCTCP | RFC 8257 §3.3–3.5; Linux `tcp_dctcp.c` |
//! | [`cc::reno`] | Reno / NewReno window | RFC 5681 §3.1; Linux `tcp_reno_cong_avoid`, `tcp_reno_ssthresh` |
//! | [`cc::cubic`] | CUBIC with HyStart | RFC 9438; Linux `tcp_cubic.c` (`bictcp_update`, `hystart_update`) |
//! | [`cc::bbr`], [`cc::bbr3`], [`cc::bbr_common`] | BBR v1, BBR v3 and what they share | Linux `tcp_bbr.c` (mainline v1; google/bbr v3): `bbr_main`, `bbr_update_model`, `bbr_update_min_rtt`, `bbr_set_cwnd` |
//! | [`tcp`] | TCP sender and receiver: handshake and ECN negotiation, SACK scoreboard, loss recovery with PRR, RTO, TLP, pacing, delayed ACK | RFC 9293, 5681, 6675, 6582, 6937, 6298, 8985, 3168; Linux `tcp_ack`, `tcp_fastretrans_alert`, `tcp_rate_gen` (tcp_input.c, tcp_rate.c) |
//! | [`tcp::accecn`] | Accurate ECN: handshake codepoints, ACE counter, option byte counters | RFC 9768 / draft-ietf-tcpm-accurate-ecn; Linux `tcp_accecn_process` |
//! | [`tcp::rtt`] | srtt, rttvar and RTO | RFC 6298 §2, §5 |
//! | [`tcp::tso`] | TSO burst sizing and a burst's departures at the NIC rate (opt-in host model) | Linux `tcp_tso_autosize`, `tcp_tso_segs`, Prague's `prague_tso_segs` |
//! | [`tcp::fq_pacing`] | fq qdisc under the sender: EDT holding queue and TCP Small Queues | Linux `tcp_small_queue_check`, `tcp_write_xmit`, `sch_fq.c` `fq_dequeue` |
//! | [`link`] | bottleneck rate ([`link::ConstantRate`], [`link::MahimahiTrace`], [`link::Txop1ms`]), loss ([`link::RandomLoss`], [`link::GilbertElliott`]), [`link::Jitter`], rate steps | Mahimahi `link_queue.cc`; netem `loss gemodel` |
//! | [`cbr`] | constant-bit-rate UDP source and sink | iperf3 UDP mode (no RFC) |
//! | [`rt`] | real-time media sender/receiver (frames at fps, per-frame latency), RT-Prague, GCC's loss-based controller, latency probes | L4STeam udp_prague `prague_cc.cpp`; draft-ietf-rmcat-gcc-02 §6 |
//! | [`packet`] | [`Packet`], [`Ecn`], the TCP header fields the models use | RFC 3168 §5, RFC 9331 (ECT(1)), RFC 9293 §3.1 |
//! | [`time`] | [`Nanos`], [`Rate`], duration and rate parsing | tc(8) units |
//! | [`rng`] | the seeded [`Rng`] streams | xoshiro256++, SplitMix64 |
//! | [`error`] | [`ParamError`], [`ParseError`]: messages that name the field and the allowed range | |
//!
//! Each algorithm file opens with what it is, the RFC section or Linux function it follows, and
//! a list of where it is faithful and where it is simplified (named), so a reader can check a
//! rule against its source.

// `Aqm::enqueue` hands a dropped packet back by value (`Err(Packet)`) so that the caller can
// account for it without an allocation; the packet is larger than clippy's default for errors.
#![allow(clippy::result_large_err)]
// Every public item says what it is in one line (clippy -D warnings makes this an error in CI).
#![warn(missing_docs)]

pub mod aqm;
pub mod cbr;
pub mod cc;
pub mod error;
pub mod link;
pub mod packet;
pub mod rng;
pub mod rt;
pub mod tcp;
pub mod time;
pub mod wifi;

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
    /// Data packets sent again (fast retransmit, RTO, TLP), cumulative.
    pub retransmits: u64,
    /// Congestion window in packets (fractional where the CC keeps one); NaN for non-window senders.
    pub cwnd_pkts: f64,
    /// Slow-start threshold in packets; infinite before the first congestion event, NaN for non-window senders.
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
    /// A media rate controller's target rate, bits/s; 0 for senders without one.
    pub target_bps: f64,
    /// Media senders: bytes (IP) the feedback reported received, cumulative.
    pub acked_bytes: u64,
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
    /// The time `poll_timeout` asked for has come: run the timers due at `now`.
    fn handle_timeout(&mut self, now: Nanos);
    /// The flow's counters and state now, for the recorder.
    fn stats(&self) -> FlowStats;
    /// A sized transfer has been fully delivered and acknowledged (never for bulk flows).
    fn is_done(&self) -> bool {
        false
    }
    /// Application records kept since the last call (frames sent or completed, probe round
    /// trips); [`rt::AppLog::None`] for endpoints without any.
    fn take_app_log(&mut self) -> rt::AppLog {
        rt::AppLog::None
    }
}
