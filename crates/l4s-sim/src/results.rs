//! Columnar run results, one `Vec` per column (Arrow-compatible, no strings per sample).
//! Column names and meanings follow DESIGN.md (`samples.parquet`, `flows.parquet`,
//! `packets.parquet`, `summary.json`).

/// Per-queue samples every `sample_interval`: one row per queue per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueColumns {
    /// Sample time, s.
    pub t_s: Vec<f64>,
    /// Index into `RunResults::queue_names` ("L", "C", "single", "fq").
    pub queue: Vec<u8>,
    /// Packets queued.
    pub backlog_pkts: Vec<u64>,
    /// Bytes queued.
    pub backlog_bytes: Vec<u64>,
    /// Head-packet sojourn at the sampling instant, ms.
    pub sojourn_ms: Vec<f64>,
    /// CE marks and drops within the interval ending at t_s.
    pub marks: Vec<u64>,
    /// Drops within the interval ending at t_s.
    pub drops: Vec<u64>,
    /// Base probability p' (DualPI2) or drop probability (PIE); NaN where the AQM has none.
    pub p_prime: Vec<f64>,
    /// Classic probability p_C = p'² (DualPI2); NaN elsewhere.
    pub p_c: Vec<f64>,
    /// Coupled L4S probability p_CL = k·p' (DualPI2); NaN elsewhere.
    pub p_cl: Vec<f64>,
}

/// Per-flow samples: one row per flow per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowColumns {
    /// Sample time, s.
    pub t_s: Vec<f64>,
    /// Flow id.
    pub flow: Vec<u32>,
    /// Payload bytes delivered in order so far.
    pub delivered_bytes: Vec<u64>,
    /// Goodput over the interval ending at t_s, Mb/s.
    pub tput_mbps: Vec<f64>,
    /// Congestion window, packets.
    pub cwnd_pkts: Vec<f64>,
    /// Smoothed RTT, ms.
    pub srtt_ms: Vec<f64>,
    /// Pacing rate, Mb/s (0 when the sender does not pace).
    pub pacing_mbps: Vec<f64>,
    /// Cumulative CE-marked packets the sender learned of.
    pub ce_acked: Vec<u64>,
    /// Media (rt-*) senders: the rate controller's target, Mb/s; 0 for other flows.
    pub target_mbps: Vec<f64>,
    /// Media (rt-*) senders: bytes the feedback reported received over the interval ending
    /// at t_s, Mb/s (IP bytes); 0 for other flows.
    pub acked_mbps: Vec<f64>,
}

/// Optional per-packet records (opt-in; large).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketColumns {
    /// Time the packet left the bottleneck queue (or was dropped), s.
    pub t_s: Vec<f64>,
    /// Flow id.
    pub flow: Vec<u32>,
    /// Index into `RunResults::queue_names`.
    pub queue: Vec<u8>,
    /// Time in the queue, ms.
    pub sojourn_ms: Vec<f64>,
    /// 0 = pass, 1 = CE-marked by the AQM, 2 = dropped.
    pub verdict: Vec<u8>,
}

/// Everything one run produces. `summary_json` is the DESIGN.md `summary.json` document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResults {
    /// Names of the queue indices in the columns.
    pub queue_names: Vec<String>,
    /// Per-flow cc names and classes ("L4S" | "Classic"), indexed by flow id.
    pub flow_cc: Vec<String>,
    /// "L4S" or "Classic" per flow.
    pub flow_class: Vec<String>,
    /// Per-queue series (`samples.parquet`).
    pub samples: QueueColumns,
    /// Per-flow series (`flows.parquet`).
    pub flows: FlowColumns,
    /// Per-packet rows (`packets.parquet`), when asked for.
    pub packets: Option<PacketColumns>,
    /// The `summary.json` document.
    pub summary_json: String,
    /// Events the engine processed (for the benchmark).
    pub events: u64,
    /// Packet accounting (conservation).
    pub totals: Totals,
    /// Smallest sender→receiver one-way delay each flow saw, ms (NaN if nothing arrived).
    pub flow_min_owd_ms: Vec<f64>,
    /// Frames, transfer completion times and probe round trips (`app_results`).
    pub app: crate::app_results::AppTables,
}

/// Packet accounting on the bottleneck (forward) path at the end of a run. Conservation:
/// `sent_pkts == delivered_pkts + aqm_dropped_pkts + link_lost_pkts + in_flight_pkts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Packets senders put on the wire.
    pub sent_pkts: u64,
    /// Packets that reached a receiver.
    pub delivered_pkts: u64,
    /// Packets the AQM dropped.
    pub aqm_dropped_pkts: u64,
    /// Packets the link's loss model lost.
    pub link_lost_pkts: u64,
    /// In the AQM, on the link, or propagating at the end.
    pub in_flight_pkts: u64,
    /// Reverse (ACK) path: sent by receivers, delivered to senders, dropped by the ACK link,
    /// in flight at the end.
    pub acks_sent: u64,
    /// ACKs that reached their sender.
    pub acks_delivered: u64,
    /// ACKs the ACK link's FIFO dropped.
    pub acks_dropped: u64,
    /// ACKs still on the way at the end.
    pub acks_in_flight: u64,
}
