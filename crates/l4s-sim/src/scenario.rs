//! Scenario files (DESIGN.md "The scenario format"): TOML or JSON, read with
//! `deny_unknown_fields`, then validated; every error names the field path and what is allowed.

use crate::aqm_config::AqmConfig;
use crate::error::SimError;
use l4s_core::{Nanos, Rate};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

/// Upper bound on the number of flows in one scenario (sanity, not a model limit).
pub const MAX_FLOWS: u64 = 10_000;
/// Upper bound on sampling instants per run (memory sanity: rows × (queues + flows)).
pub const MAX_SAMPLES: u64 = 10_000_000;

/// How a constant-rate bottleneck delivers bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LinkModelKind {
    /// Exact serialisation, bytes·8/rate per packet.
    #[default]
    Smooth,
    /// Mahimahi-style: the bytes of each millisecond leave in one burst at its end.
    Txop1ms,
    /// An IEEE 802.11 MAC hop configured by `[link.wifi]` (see `wifi_config`).
    Wifi,
}

/// `[link.gilbert]`: Gilbert–Elliott bursty loss (netem `gemodel` p, r, 1-h, 1-k).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertConfig {
    /// Good → Bad transition probability per packet.
    pub p: f64,
    /// Bad → Good transition probability per packet.
    pub r: f64,
    /// Loss probability in the Good state (netem `1-h`, default 0).
    #[serde(default)]
    pub loss_good: f64,
    /// Loss probability in the Bad state (netem `1-k`, default 1).
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

/// `[[link.steps]]`: the rate changes to `rate` at `at`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// When the new rate starts.
    pub at: Nanos,
    /// The new rate.
    pub rate: Rate,
}

/// `[link]`: the bottleneck, sender → receiver.
#[derive(Clone, Debug, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// Constant rate (unless `trace` is given).
    pub rate: Option<Rate>,
    /// Mahimahi trace file, relative to the scenario file's directory.
    pub trace: Option<String>,
    /// Play the trace once instead of looping it.
    pub once: bool,
    /// How a constant-rate link delivers bytes (default smooth).
    pub model: Option<LinkModelKind>,
    /// i.i.d. loss probability per packet leaving the bottleneck.
    pub loss: f64,
    /// Gilbert–Elliott bursty loss instead of `loss`.
    pub gilbert: Option<GilbertConfig>,
    /// Rate changes over time.
    pub steps: Vec<RateStep>,
    /// Extra delay after the bottleneck, uniform in [0, jitter] per packet.
    pub jitter: Nanos,
    /// Let jittered packets overtake each other.
    pub reorder: bool,
    /// `[link.wifi]`, with `model = "wifi"`.
    pub wifi: Option<crate::wifi_config::WifiConfig>,
}

/// `[ack_link]`: optional rate limit on the ACK (reverse) path, with its own tail-drop FIFO.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckLinkConfig {
    /// Rate of the ACK path.
    pub rate: Rate,
    /// Queue limit of the ACK path, packets (default 1000).
    #[serde(default = "default_ack_limit")]
    pub limit: u64,
}

fn default_ack_limit() -> u64 {
    1000
}

/// Sender host qdisc of a TCP flow (`[[flows]] qdisc`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowQdisc {
    /// No pacing qdisc: a pacing CC paces inside TCP (`tcp_wstamp_ns` internal pacing).
    None,
    /// fq with EDT: paced segments wait in fq, count as in flight, TSQ bounds them.
    Fq,
}

/// ECN use of a flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowEcn {
    /// No ECN (Not-ECT).
    None,
    /// Classic ECN feedback (RFC 3168) with ECT(0).
    Classic,
    /// AccECN feedback with the CC's usual codepoint.
    Accecn,
    /// AccECN feedback with ECT(1) (L4S, RFC 9331).
    L4s,
}

/// `[[flows]]`: `count` identical flows.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// prague | dctcp | reno | cubic | bbr1 | bbr3 | cbr
    pub cc: String,
    /// Base RTT (propagation both ways): rtt/2 forward incl. the bottleneck, rtt/2 back.
    pub rtt: Nanos,
    /// Number of identical flows (default 1).
    #[serde(default = "one_u64")]
    pub count: u64,
    /// Start time (default 0).
    #[serde(default)]
    pub start: Nanos,
    /// The flow starts at `start` plus a uniform offset in [0, start_jitter) drawn from the
    /// seed (default: one base RTT; "0s" for exactly `start`). See `start_jitter`.
    pub start_jitter: Option<Nanos>,
    /// Stop sending new data at this time (default: never).
    pub stop: Option<Nanos>,
    /// Sized transfer (TCP only): payload bytes.
    pub bytes: Option<u64>,
    /// ECN use (default: what the CC asks for).
    pub ecn: Option<FlowEcn>,
    /// `[[links]]` chains: the first and last hop this flow crosses (default: all; `hops`).
    pub path: Option<[u32; 2]>,
    /// cbr: sending rate.
    pub rate: Option<Rate>,
    /// cbr: IP bytes per packet (default 1500).
    pub packet_size: Option<u32>,
    /// cbr: on/off periods.
    pub on: Option<Nanos>,
    /// cbr: off period between `on` periods.
    pub off: Option<Nanos>,
    /// TCP: sender MSS in payload bytes (default 1448: 1500-byte packets).
    pub mss: Option<u32>,
    /// TCP: SACK loss recovery (default true).
    pub sack: Option<bool>,
    /// TCP: initial window in packets (default 10).
    pub init_cwnd: Option<u32>,
    /// TCP: honour the CC's pacing rate (default true).
    pub pacing: Option<bool>,
    /// Prague: Linux `prague_cwnd_mode` (0 window, 1 rate, 2 switch; default 2 as in 0.7).
    pub prague_cwnd_mode: Option<u8>,
    /// TCP: the sender host uses TSO (bursts of `tcp_tso_segs` segments; default false).
    pub tso: Option<bool>,
    /// TCP with `tso`: the host NIC's line rate (default "1gbit").
    pub nic_rate: Option<Rate>,
    /// TCP: the receiver host batches arrivals (NIC moderation) and merges them with GRO,
    /// ACKing once per super-segment (default false).
    pub gro: Option<bool>,
    /// TCP with `gro`: interrupt delay after the first pending packet (default "16us", mlx5).
    pub rx_usecs: Option<Nanos>,
    /// TCP with `gro`: interrupt once this many packets are pending (default 32, mlx5).
    pub rx_frames: Option<u32>,
    /// TCP: the sender host's `net.ipv4.tcp_wmem[2]` in bytes: a backlogged application behind
    /// Linux's autotuned send buffer capped there (default: no send-buffer limit).
    pub tcp_wmem: Option<u64>,
    /// TCP: sender host qdisc, "fq" (EDT pacing, TSQ) or "none" (default "fq" for Prague,
    /// as the L4S team's kernels run it; "none" for the others).
    pub qdisc: Option<FlowQdisc>,
    /// Emulator only: "model" (default), "kernel" or "command"; the simulator runs the model.
    pub stack: Option<crate::stack::FlowStack>,
    /// stack = "command": client program template ({server}, {port}, {duration}).
    pub command: Option<String>,
    /// stack = "command": server program template (optional).
    pub server_command: Option<String>,
    /// rt-*: frames per second (default 60).
    pub fps: Option<u32>,
    /// rt-*: time a frame is paced over (default 1/fps).
    pub frame_budget: Option<Nanos>,
    /// rt-*: a frame later than this after capture is a deadline miss (default 100 ms).
    pub deadline: Option<Nanos>,
    /// rt-prague / rt-gcc: starting rate (default 1 Mb/s, within min and max).
    pub init_rate: Option<Rate>,
    /// rt-prague / rt-gcc: lowest rate (default 100 kb/s, udp_prague's PRAGUE_MINRATE).
    pub min_rate: Option<Rate>,
    /// rt-prague / rt-gcc: highest rate (default 1 Gb/s).
    pub max_rate: Option<Rate>,
    /// `[link] model = "wifi"`: the client station (index in `[[link.wifi.clients]]`) this
    /// flow's data goes to (default 0).
    pub station: Option<u32>,
    /// rt-* except rt-prague: encoder frame-size coefficient of variation (default 0.21).
    pub frame_size_cv: Option<f64>,
    /// rt-* except rt-prague: time between key frames (default: only the first frame).
    pub keyframe_interval: Option<Nanos>,
    /// rt-* except rt-prague: key frame size in delta frames (default 4).
    pub keyframe_ratio: Option<f64>,
    /// rt-* except rt-prague: delay before a new target reaches the frames (default 1/fps).
    pub encoder_lag: Option<Nanos>,
    /// rt-scream: RFC 8888 report interval (default 25 ms, libwebrtc's min_send_delta).
    pub feedback_interval: Option<Nanos>,
    /// rt-gcc: goog_cc's exponential probing at the call's start (default false).
    pub gcc_probing: Option<bool>,
    /// rt-scream: libwebrtc BetaLoss (0.7).
    pub scream_beta_loss: Option<f64>,
    /// rt-scream: libwebrtc L4sAvgG (1/16).
    pub scream_l4s_avg_g: Option<f64>,
    /// rt-scream: libwebrtc MinRefWindow, bytes (3000).
    pub scream_min_ref_window: Option<f64>,
    /// rt-scream: libwebrtc MaxSegmentSize, bytes (1000).
    pub scream_max_segment_size: Option<f64>,
    /// rt-scream: libwebrtc BytesInFlightHeadRoom (1.1).
    pub scream_bytes_in_flight_head_room: Option<f64>,
    /// rt-scream: libwebrtc PostCongestionDelayRtts (100).
    pub scream_post_congestion_delay_rtts: Option<f64>,
    /// rt-scream: libwebrtc MultiplicativeIncreaseFactor (0.02).
    pub scream_multiplicative_increase_factor: Option<f64>,
    /// rt-scream: libwebrtc VirtualRtt (25 ms).
    pub scream_virtual_rtt: Option<Nanos>,
    /// rt-scream: libwebrtc QDelayTarget (100 ms).
    pub scream_queue_delay_target: Option<Nanos>,
    /// rt-scream: libwebrtc QDelayThreshold (0.5 of the target).
    pub scream_queue_delay_threshold: Option<f64>,
}

fn one_u64() -> u64 {
    1
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    /// Record one row per packet leaving or dropped at the bottleneck (large).
    pub packets: bool,
    /// Per-flow rows (flows.csv) every this much, a multiple of the sample interval (default:
    /// the sample interval). Queue rows keep the sample interval.
    pub flow_sample_interval: Option<Nanos>,
}

/// The document as written, before the `[aqm]` table is read by kind.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioDoc {
    #[serde(default = "one_u64")]
    seed: u64,
    duration: Nanos,
    #[serde(default)]
    warmup: Nanos,
    sample_interval: Option<Nanos>,
    link: Option<LinkConfig>,
    /// `[[links]]`: a chain of hops (`hops`), instead of `[link]` + `[aqm]`.
    links: Option<Vec<Value>>,
    ack_link: Option<AckLinkConfig>,
    aqm: Option<Value>,
    #[serde(default)]
    flows: Vec<FlowConfig>,
    #[serde(default)]
    output: OutputConfig,
    #[serde(default)]
    workloads: Vec<crate::workloads::WorkloadConfig>,
    #[serde(default)]
    probes: Vec<crate::workloads::ProbeSpec>,
}

/// A parsed scenario. Build with [`Scenario::from_toml_str`] / [`Scenario::from_json_str`] /
/// [`Scenario::load`]; [`Scenario::validate`] checks cross-field rules.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Root of every random choice of the run.
    pub seed: u64,
    /// Simulated time of the run.
    pub duration: Nanos,
    /// Time before summary.json starts counting.
    pub warmup: Nanos,
    /// None: the AQM's tupdate (16 ms where it has none).
    pub sample_interval: Option<Nanos>,
    /// The bottleneck.
    pub link: LinkConfig,
    /// Optional rate-limited ACK path.
    pub ack_link: Option<AckLinkConfig>,
    /// The bottleneck's AQM.
    pub aqm: AqmConfig,
    /// How a limit given in BDP units (`limit = "2bdp"`) was resolved; None otherwise.
    pub buffer: Option<crate::bdp::BufferSizing>,
    /// The flows, in `[[flows]]` order.
    pub flows: Vec<FlowConfig>,
    /// What to record besides the series.
    pub output: OutputConfig,
    /// `[[workloads]]`: Poisson arrivals of sized TCP transfers (`workloads`).
    pub workloads: Vec<crate::workloads::WorkloadConfig>,
    /// `[[probes]]`: request/response latency probes (`workloads`).
    pub probes: Vec<crate::workloads::ProbeSpec>,
    /// `[[links]]`: every hop of the chain (hop 0 is also `link`, `aqm`, `buffer`); empty for
    /// the one-link form `[link]` + `[aqm]`.
    pub hops: Vec<crate::hops::HopSpec>,
    /// The document as given, echoed into summary.json.
    pub raw: Value,
    /// Directory relative trace paths resolve against (the scenario file's directory).
    pub base_dir: Option<PathBuf>,
}

/// Turn serde's messages into `path: message` with the path pointing at the field itself.
pub(crate) fn path_error(
    prefix: &str,
    e: serde_path_to_error::Error<serde_json::Error>,
) -> SimError {
    let mut path = e.path().to_string();
    if path == "." {
        path.clear();
    }
    let msg = e.inner().to_string();
    let join = |p: &str, f: &str| {
        let base = [prefix, p]
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(".");
        if base.is_empty() {
            f.to_string()
        } else if f.is_empty() {
            base
        } else {
            format!("{base}.{f}")
        }
    };
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or("");
        return SimError::field(join(&path, name), "missing (required)");
    }
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or("");
        let allowed = rest.split_once(", expected ").map_or("", |x| x.1);
        // serde_path_to_error already ends the path with the unknown key.
        let full = if path == name || path.ends_with(&format!(".{name}")) {
            join(&path, "")
        } else {
            join(&path, name)
        };
        return SimError::field(full, format!("unknown field; expected {allowed}"));
    }
    let p = join(&path, "");
    // serde names Rust types ("expected struct FlowConfig"); a user wrote a TOML table.
    let msg = match msg.find("expected struct ") {
        Some(i) => format!("{}expected a table", &msg[..i]),
        None => msg,
    };
    let msg = in_words(&msg, &p);
    let msg = if msg.starts_with("invalid type") && msg.ends_with("expected a string") {
        format!("{msg}: durations and rates are written as strings, e.g. \"15ms\", \"50mbit\"")
    } else {
        msg
    };
    SimError::field(if p.is_empty() { "scenario".into() } else { p }, msg)
}

/// serde's Rust type names at the end of a message ("expected u64", "untagged enum
/// CcChoice") in the words of the scenario format: the range a value may take.
fn in_words(msg: &str, path: &str) -> String {
    if msg.contains("untagged enum CcChoice") {
        return "expected a congestion control name (cc = \"cubic\") or a table of names and \
                weights (cc = { cubic = 1, prague = 1 })"
            .into();
    }
    let Some((head, ty)) = msg.rsplit_once(", expected ") else {
        return msg.to_string();
    };
    let hop = path.contains(".path[");
    let words = match ty {
        _ if hop && ty == "u32" => "a hop index: a whole number from 0 (the first [[links]] entry)",
        "u8" => "a whole number from 0 to 255",
        "u16" => "a whole number from 0 to 65535",
        "u32" => "a whole number from 0 to 4294967295",
        "u64" | "usize" => "a whole number ≥ 0",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        _ => return msg.to_string(),
    };
    format!("{}; expected {words}", head.replace('`', ""))
}

impl Scenario {
    /// Parse and validate a TOML scenario.
    pub fn from_toml_str(s: &str) -> Result<Self, SimError> {
        let v: Value = toml::from_str(s).map_err(|e| SimError::Syntax(e.to_string()))?;
        Self::from_value(v)
    }

    /// The Python front end sends the scenario as a JSON object after applying overrides.
    pub fn from_json_str(s: &str) -> Result<Self, SimError> {
        let v: Value = serde_json::from_str(s).map_err(|e| SimError::Syntax(e.to_string()))?;
        Self::from_value(v)
    }

    /// Read a TOML (or `.json`) scenario file; trace paths resolve against its directory.
    pub fn load(path: &std::path::Path) -> Result<Self, SimError> {
        let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
            path: "scenario".into(),
            file: path.to_path_buf(),
            source: e,
        })?;
        let mut s = if path.extension().is_some_and(|e| e == "json") {
            Self::from_json_str(&text)?
        } else {
            Self::from_toml_str(&text)?
        };
        s.base_dir = path.parent().map(|p| p.to_path_buf());
        Ok(s)
    }

    /// Read a parsed document (TOML or JSON) into a validated scenario.
    pub fn from_value(v: Value) -> Result<Self, SimError> {
        if !v.is_object() {
            return Err(SimError::Syntax(
                "a scenario is a table (TOML) / object (JSON)".into(),
            ));
        }
        let doc: ScenarioDoc =
            serde_path_to_error::deserialize(v.clone()).map_err(|e| path_error("", e))?;
        let (link, aqm, buffer, hops) = match (doc.link, doc.links) {
            (Some(_), Some(_)) => {
                return Err(SimError::field(
                    "links",
                    "set together with [link]; a [[links]] chain replaces [link] and [aqm]                      (each hop has its own rate and [links.aqm]): keep one form",
                ))
            }
            (None, Some(_)) if doc.aqm.is_some() => {
                return Err(SimError::field(
                    "aqm",
                    "set together with [[links]]; give each hop its AQM as [links.aqm]",
                ))
            }
            (None, Some(links)) => {
                let hops = crate::hops::parse(links, &doc.flows)?;
                let h0 = &hops[0];
                (h0.link.clone(), h0.aqm.clone(), h0.buffer.clone(), hops)
            }
            (None, None) => return Err(SimError::field("link", "missing (required)")),
            (Some(link), None) => {
                let (aqm_table, buffer) = crate::bdp::resolve(
                    doc.aqm
                        .unwrap_or_else(|| serde_json::json!({"kind": "fifo"})),
                    &link,
                    &doc.flows,
                )?;
                (link, AqmConfig::from_value(aqm_table)?, buffer, Vec::new())
            }
        };
        let s = Scenario {
            seed: doc.seed,
            duration: doc.duration,
            warmup: doc.warmup,
            sample_interval: doc.sample_interval,
            link,
            ack_link: doc.ack_link,
            aqm,
            buffer,
            flows: doc.flows,
            output: doc.output,
            workloads: doc.workloads,
            probes: doc.probes,
            hops,
            raw: v,
            base_dir: None,
        };
        s.validate()?;
        Ok(s)
    }

    /// The sampling period: `sample_interval`, else the AQM's tupdate, else 16 ms.
    pub fn sample_period(&self) -> Nanos {
        self.sample_interval
            .unwrap_or_else(|| self.aqm.default_sample_interval())
    }

    /// Per-flow rows are written at every `flow_sample_every()`-th sample.
    pub fn flow_sample_every(&self) -> u64 {
        let p = self.sample_period().0.max(1);
        self.output
            .flow_sample_interval
            .map_or(1, |f| (f.0 / p).max(1))
    }

    /// Total number of flows after expanding `count`.
    pub fn n_flows(&self) -> u64 {
        self.flows.iter().map(|f| f.count).sum()
    }

    /// Cross-field checks; also run by the constructors.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.duration.0 == 0 {
            return Err(SimError::field(
                "duration",
                "\"0s\" must be > 0, e.g. \"30s\"",
            ));
        }
        if self.warmup >= self.duration {
            return Err(SimError::field(
                "warmup",
                format!(
                    "\"{}\" is not shorter than duration \"{}\"; expected 0 ≤ warmup < duration",
                    self.warmup, self.duration
                ),
            ));
        }
        if self.sample_interval == Some(Nanos::ZERO) {
            return Err(SimError::field(
                "sample_interval",
                "\"0s\" must be > 0, e.g. \"16ms\"",
            ));
        }
        if let Some(f) = self.output.flow_sample_interval {
            let p = self.sample_period();
            if f.0 == 0 || f.0 % p.0.max(1) != 0 {
                return Err(SimError::field(
                    "output.flow_sample_interval",
                    format!(
                        "\"{f}\" is not a positive multiple of the sample interval \"{p}\"; \
                         expected e.g. \"{}\"",
                        Nanos(p.0 * 10)
                    ),
                ));
            }
        }
        let n_samples = self.duration.0 / self.sample_period().0.max(1);
        if n_samples > MAX_SAMPLES {
            return Err(SimError::field(
                "sample_interval",
                format!(
                    "\"{}\" gives {n_samples} samples over duration \"{}\"; at most {MAX_SAMPLES}",
                    self.sample_period(),
                    self.duration
                ),
            ));
        }
        self.validate_link()?;
        if let (Some(_), Some(w)) = (&self.ack_link, &self.link.wifi) {
            if w.uplink() {
                return Err(SimError::field(
                    "ack_link",
                    "set with a Wi-Fi link whose uplink carries the ACKs; remove [ack_link] or \
                     set link.wifi.uplink = false",
                ));
            }
        }
        if let Some(a) = &self.ack_link {
            if a.rate.bps() == 0 {
                return Err(SimError::field(
                    "ack_link.rate",
                    "is zero; expected a rate > 0, e.g. \"1mbit\"",
                ));
            }
            if a.limit == 0 {
                return Err(SimError::field("ack_link.limit", "0 must be ≥ 1 (packets)"));
            }
        }
        if self.flows.is_empty() && self.workloads.is_empty() && self.probes.is_empty() {
            return Err(SimError::field(
                "flows",
                "empty; expected at least one [[flows]], [[workloads]] or [[probes]] table",
            ));
        }
        if self.n_flows() > MAX_FLOWS {
            return Err(SimError::field(
                "flows",
                format!("{} flows in total; at most {MAX_FLOWS}", self.n_flows()),
            ));
        }
        for (i, fl) in self.flows.iter().enumerate() {
            crate::flows::validate_flow(i, fl)?;
            if let Some(j) = fl.start_jitter {
                if fl.start + j > self.duration {
                    return Err(SimError::field(
                        format!("flows[{i}].start_jitter"),
                        format!(
                            "\"{j}\" reaches past the end of the run (start \"{}\", duration \
                             \"{}\"); expected start + start_jitter ≤ duration",
                            fl.start, self.duration
                        ),
                    ));
                }
            }
            // A flow that starts after the run has ended sends nothing: always a mistake.
            if fl.start >= self.duration {
                return Err(SimError::field(
                    format!("flows[{i}].start"),
                    format!(
                        "\"{}\" is not before the end of the run (duration \"{}\"); expected \
                         0 ≤ start < duration",
                        fl.start, self.duration
                    ),
                ));
            }
        }
        let clients = match (&self.link.wifi, self.link.model) {
            (Some(w), Some(LinkModelKind::Wifi)) => w.n_clients(),
            _ => 0,
        };
        for (i, fl) in self.flows.iter().enumerate() {
            if let Some(st) = fl.station {
                if st as usize >= clients {
                    return Err(SimError::field(
                        format!("flows[{i}].station"),
                        match clients {
                            0 => "applies to [link] model = \"wifi\" only".to_string(),
                            n => format!("{st} is not a client station; expected 0 to {}", n - 1),
                        },
                    ));
                }
            }
        }
        crate::hops::validate_flows(&self.hops, &self.flows)?;
        crate::hops::validate_extras(self)?;
        crate::workloads::validate(self)?;
        Ok(())
    }

    fn validate_link(&self) -> Result<(), SimError> {
        self.link.validate()
    }
}

impl LinkConfig {
    /// Read a `[link]` table on its own (the emulator's bottleneck), with the scenario's
    /// field-path errors and checks.
    pub fn from_value(v: Value) -> Result<Self, SimError> {
        let l: LinkConfig =
            serde_path_to_error::deserialize(v).map_err(|e| path_error("link", e))?;
        l.validate()?;
        Ok(l)
    }

    /// The `[link]` checks of [`Scenario::validate`].
    pub fn validate(&self) -> Result<(), SimError> {
        let l = self;
        if l.model == Some(LinkModelKind::Wifi) || l.wifi.is_some() {
            return l.validate_wifi();
        }
        match (&l.rate, &l.trace) {
            (Some(_), Some(_)) => {
                return Err(SimError::field(
                    "link",
                    "both rate and trace are set; expected exactly one of them",
                ))
            }
            (None, None) => {
                return Err(SimError::field(
                    "link",
                    "neither rate nor trace is set; expected rate = \"50mbit\" or trace = \"file\"",
                ))
            }
            (Some(r), None) if r.bps() == 0 => {
                return Err(SimError::field(
                    "link.rate",
                    "is zero; expected a rate > 0, e.g. \"50mbit\"",
                ));
            }
            _ => {}
        }
        if l.trace.is_some() {
            if l.model.is_some() {
                return Err(SimError::field(
                    "link.model",
                    "applies to rate links only; a trace is always delivered in opportunities",
                ));
            }
            if !l.steps.is_empty() {
                return Err(SimError::field(
                    "link.steps",
                    "apply to rate links only, not to a trace",
                ));
            }
        } else if l.once {
            return Err(SimError::field("link.once", "applies to trace links only"));
        }
        if !(0.0..=1.0).contains(&l.loss) {
            return Err(SimError::field(
                "link.loss",
                format!(
                    "{} is out of range; expected a probability in [0, 1]",
                    l.loss
                ),
            ));
        }
        if let Some(g) = &l.gilbert {
            if l.loss > 0.0 {
                return Err(SimError::field(
                    "link.gilbert",
                    "set together with link.loss; expected one loss model",
                ));
            }
            for (name, v) in [
                ("p", g.p),
                ("r", g.r),
                ("loss_good", g.loss_good),
                ("loss_bad", g.loss_bad),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(SimError::field(
                        format!("link.gilbert.{name}"),
                        format!("{v} is out of range; expected a probability in [0, 1]"),
                    ));
                }
            }
        }
        let mut prev = Nanos::ZERO;
        for (i, s) in l.steps.iter().enumerate() {
            if i > 0 && s.at <= prev {
                return Err(SimError::field(
                    format!("link.steps[{i}].at"),
                    format!(
                        "\"{}\" is not after the previous step \"{}\"; step times must strictly increase",
                        s.at, prev
                    ),
                ));
            }
            prev = s.at;
        }
        if l.reorder && l.jitter.0 == 0 {
            return Err(SimError::field("link.reorder", "needs link.jitter > 0"));
        }
        Ok(())
    }

    /// The checks of a Wi-Fi link: the `[link.wifi]` table and no rate-link keys.
    fn validate_wifi(&self) -> Result<(), SimError> {
        let Some(w) = &self.wifi else {
            return Err(SimError::field(
                "link.wifi",
                "missing; model = \"wifi\" needs a [link.wifi] table (standard + mcs, or phy_rate)",
            ));
        };
        if self.model != Some(LinkModelKind::Wifi) {
            return Err(SimError::field(
                "link.wifi",
                "applies to model = \"wifi\" only; add model = \"wifi\" to [link]",
            ));
        }
        for (key, set) in [
            ("rate", self.rate.is_some()),
            ("trace", self.trace.is_some()),
            ("steps", !self.steps.is_empty()),
        ] {
            if set {
                return Err(SimError::field(
                    format!("link.{key}"),
                    "does not apply to model = \"wifi\"; the rate comes from [link.wifi]",
                ));
            }
        }
        w.check()?;
        let plain = LinkConfig {
            rate: Some(Rate(1)),
            model: None,
            wifi: None,
            ..self.clone()
        };
        plain.validate()
    }
}
