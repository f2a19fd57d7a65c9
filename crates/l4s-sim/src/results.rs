//! Columnar run results, one `Vec` per column (Arrow-compatible, no strings per sample).
//! Column names and meanings follow DESIGN.md (`samples.parquet`, `flows.parquet`,
//! `packets.parquet`, `summary.json`).

/// Per-queue samples every `sample_interval`: one row per queue per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueColumns {
    pub t_s: Vec<f64>,
    /// Index into `RunResults::queue_names` ("L", "C", "single", "fq").
    pub queue: Vec<u8>,
    pub backlog_pkts: Vec<u64>,
    pub backlog_bytes: Vec<u64>,
    /// Head-packet sojourn at the sampling instant, ms.
    pub sojourn_ms: Vec<f64>,
    /// CE marks and drops within the interval ending at t_s.
    pub marks: Vec<u64>,
    pub drops: Vec<u64>,
    pub p_prime: Vec<f64>,
    pub p_c: Vec<f64>,
    pub p_cl: Vec<f64>,
}

/// Per-flow samples: one row per flow per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowColumns {
    pub t_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub delivered_bytes: Vec<u64>,
    /// Goodput over the interval ending at t_s, Mb/s.
    pub tput_mbps: Vec<f64>,
    pub cwnd_pkts: Vec<f64>,
    pub srtt_ms: Vec<f64>,
    pub pacing_mbps: Vec<f64>,
    /// Cumulative CE-marked packets the sender learned of.
    pub ce_acked: Vec<u64>,
}

/// Optional per-packet records (opt-in; large).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketColumns {
    /// Time the packet left the bottleneck queue (or was dropped), s.
    pub t_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub queue: Vec<u8>,
    pub sojourn_ms: Vec<f64>,
    /// 0 = pass, 1 = CE-marked by the AQM, 2 = dropped.
    pub verdict: Vec<u8>,
}

/// Everything one run produces. `summary_json` is the DESIGN.md `summary.json` document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResults {
    pub queue_names: Vec<String>,
    /// Per-flow cc names and classes ("L4S" | "Classic"), indexed by flow id.
    pub flow_cc: Vec<String>,
    pub flow_class: Vec<String>,
    pub samples: QueueColumns,
    pub flows: FlowColumns,
    pub packets: Option<PacketColumns>,
    pub summary_json: String,
    /// Events the engine processed (for the benchmark).
    pub events: u64,
    /// Packet accounting (conservation).
    pub totals: Totals,
    /// Smallest sender→receiver one-way delay each flow saw, ms (NaN if nothing arrived).
    pub flow_min_owd_ms: Vec<f64>,
}

/// Packet accounting on the bottleneck (forward) path at the end of a run. Conservation:
/// `sent_pkts == delivered_pkts + aqm_dropped_pkts + link_lost_pkts + in_flight_pkts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Packets senders put on the wire.
    pub sent_pkts: u64,
    /// Packets that reached a receiver.
    pub delivered_pkts: u64,
    pub aqm_dropped_pkts: u64,
    pub link_lost_pkts: u64,
    /// In the AQM, on the link, or propagating at the end.
    pub in_flight_pkts: u64,
    /// Reverse (ACK) path: sent by receivers, delivered to senders, dropped by the ACK link,
    /// in flight at the end.
    pub acks_sent: u64,
    pub acks_delivered: u64,
    pub acks_dropped: u64,
    pub acks_in_flight: u64,
}
