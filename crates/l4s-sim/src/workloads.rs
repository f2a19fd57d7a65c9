//! `[[workloads]]` (Poisson arrivals of sized TCP transfers with sizes from an empirical CDF)
//! and `[[probes]]` (request/response latency probes): configuration, checks, the flows they
//! expand to, and the slowdown denominator (a transfer's completion time alone on the link).
//!
//! Size CDFs: "web-search" is the DCTCP paper's web-search distribution (Alizadeh et al.,
//! SIGCOMM 2010) and "data-mining" the VL2 paper's data-mining distribution (Greenberg et
//! al., SIGCOMM 2009), as tabulated in 1460-byte packets by the pFabric ns-2 scripts
//! (CDF_web-search.tcl, CDF_data-mining.tcl; mean 1138 and 5117 packets). A size is drawn by
//! inverting the CDF with linear interpolation between its points (ns-2
//! EmpiricalRandomVariable, INTER_INTERPOLATE), the first point's probability being a point
//! mass. Arrivals are a Poisson process of rate λ = load·C / (8·E[size]) (payload bytes;
//! C the link's mean rate over [start, stop)) or `rate` flows/s.

use crate::error::SimError;
use crate::scenario::{FlowConfig, FlowEcn, Scenario};
use l4s_core::rt::probe::ProbeConfig;
use l4s_core::tcp::{SYN_BYTES, TCP_IP_HEADER_BYTES};
use l4s_core::{Ecn, Nanos, Rng};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Upper bound on the transfers all workloads of a run may start (memory sanity).
pub const MAX_WORKLOAD_FLOWS: f64 = 200_000.0;
/// Congestion controls a transfer may use (the TCP models).
const TRANSFER_CCS: [&str; 6] = ["prague", "dctcp", "reno", "cubic", "bbr1", "bbr3"];
/// Bytes per packet of the pFabric tables.
const PFABRIC_PKT_BYTES: f64 = 1460.0;
/// DCTCP web search: (size in 1460-byte packets, cumulative probability).
const WEB_SEARCH: [(f64, f64); 12] = [
    (6.0, 0.0),
    (6.0, 0.15),
    (13.0, 0.2),
    (19.0, 0.3),
    (33.0, 0.4),
    (53.0, 0.53),
    (133.0, 0.6),
    (667.0, 0.7),
    (1333.0, 0.8),
    (3333.0, 0.9),
    (6667.0, 0.97),
    (20000.0, 1.0),
];
/// VL2 data mining: (size in 1460-byte packets, cumulative probability).
const DATA_MINING: [(f64, f64); 9] = [
    (1.0, 0.0),
    (1.0, 0.5),
    (2.0, 0.6),
    (3.0, 0.7),
    (7.0, 0.8),
    (267.0, 0.9),
    (2107.0, 0.95),
    (66667.0, 0.99),
    (666667.0, 1.0),
];

/// The congestion control of a workload's transfers: one name, or names with weights.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum CcChoice {
    /// Every transfer uses this one.
    One(String),
    /// Each transfer draws one, with probability proportional to its weight.
    Mix(BTreeMap<String, f64>),
}

/// `[[workloads]]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Offered load as a fraction of the link's mean rate (exclusive with `rate`).
    pub load: Option<f64>,
    /// Arrivals per second (exclusive with `load`).
    pub rate: Option<f64>,
    /// "web-search", "data-mining", or a CDF file ("bytes probability" per line) relative to
    /// the scenario file.
    pub sizes: String,
    /// TCP congestion control(s) of the transfers (default "cubic").
    pub cc: Option<CcChoice>,
    /// ECN use of every transfer (as `[[flows]] ecn`).
    pub ecn: Option<FlowEcn>,
    /// Base RTT of every transfer.
    pub rtt: Nanos,
    /// First arrival no earlier than this (default 0).
    #[serde(default)]
    pub start: Nanos,
    /// No arrival at or after this (default: the end of the run).
    pub stop: Option<Nanos>,
}

/// `[[probes]]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    /// Time between requests (default 100 ms).
    pub interval: Option<Nanos>,
    /// "l4s" (ECT(1)), "classic" (ECT(0)) or "none" (default "l4s").
    pub ecn: Option<FlowEcn>,
    /// Base RTT of the probe path.
    pub rtt: Nanos,
    /// IP bytes of a request and of a response (default 100).
    pub packet_size: Option<u32>,
    /// First request (default 0).
    #[serde(default)]
    pub start: Nanos,
    /// No request at or after this (default: the end of the run).
    pub stop: Option<Nanos>,
}

impl ProbeSpec {
    /// The endpoint parameters.
    pub fn config(&self) -> ProbeConfig {
        ProbeConfig {
            interval: self.interval.unwrap_or(Nanos::from_ms(100)),
            packet_bytes: self.packet_size.unwrap_or(100),
            ecn: match self.ecn {
                Some(FlowEcn::Classic) => Ecn::Ect0,
                Some(FlowEcn::None) => Ecn::NotEct,
                _ => Ecn::Ect1,
            },
            start: self.start,
            stop: self.stop,
        }
    }
    /// "L4S" or "Classic", as flows' classes.
    pub fn class(&self) -> &'static str {
        if self.config().ecn == Ecn::Ect1 {
            "L4S"
        } else {
            "Classic"
        }
    }
}

/// A size CDF: (bytes, cumulative probability) points, sizes non-decreasing, probabilities
/// non-decreasing from ≥ 0 to exactly 1.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeCdf {
    points: Vec<(f64, f64)>,
}

impl SizeCdf {
    /// A named distribution, or None.
    pub fn named(name: &str) -> Option<Self> {
        let t: &[(f64, f64)] = match name {
            "web-search" => &WEB_SEARCH,
            "data-mining" => &DATA_MINING,
            _ => return None,
        };
        Some(SizeCdf {
            points: t.iter().map(|&(p, c)| (p * PFABRIC_PKT_BYTES, c)).collect(),
        })
    }

    /// Parse a CDF file: one "bytes probability" pair per line, '#' comments.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut points = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(a), Some(b), 2) = (f.first(), f.get(1), f.len()) else {
                return Err(format!(
                    "line {}: expected two numbers \"bytes probability\"",
                    n + 1
                ));
            };
            let (Ok(x), Ok(c)) = (a.parse::<f64>(), b.parse::<f64>()) else {
                return Err(format!("line {}: \"{line}\" is not two numbers", n + 1));
            };
            if !(x.is_finite() && x >= 1.0) {
                return Err(format!("line {}: size {x} must be ≥ 1 byte", n + 1));
            }
            if !(0.0..=1.0).contains(&c) {
                return Err(format!(
                    "line {}: probability {c} is outside [0, 1] (write 0.15, not 15)",
                    n + 1
                ));
            }
            if let Some(&(px, pc)) = points.last() {
                if x < px || c < pc {
                    return Err(format!(
                        "line {}: sizes and probabilities must not decrease ({px} {pc} then {x} {c})",
                        n + 1
                    ));
                }
            }
            points.push((x, c));
        }
        match points.last() {
            None => Err("no points".into()),
            Some(&(_, c)) if c != 1.0 => Err(format!("the last probability is {c}; expected 1")),
            _ => Ok(SizeCdf { points }),
        }
    }

    /// The size at cumulative probability `u` in [0, 1): linear between points, the first
    /// point a point mass.
    pub fn quantile(&self, u: f64) -> f64 {
        let p = &self.points;
        if u <= p[0].1 {
            return p[0].0;
        }
        for w in p.windows(2) {
            let ((x0, c0), (x1, c1)) = (w[0], w[1]);
            if u <= c1 && c1 > c0 {
                return x0 + (x1 - x0) * (u - c0) / (c1 - c0);
            }
        }
        p[p.len() - 1].0
    }

    /// The CDF at `x` (for tests): linear between points.
    pub fn cdf(&self, x: f64) -> f64 {
        let p = &self.points;
        if x < p[0].0 {
            return 0.0;
        }
        let mut last = 0.0;
        for w in p.windows(2) {
            let ((x0, c0), (x1, c1)) = (w[0], w[1]);
            if x >= x0 && x < x1 {
                return c0 + (c1 - c0) * (x - x0) / (x1 - x0);
            }
            last = c1;
        }
        if x >= p[p.len() - 1].0 {
            1.0
        } else {
            last
        }
    }

    /// Mean size: the point mass plus each segment's midpoint times its probability.
    pub fn mean(&self) -> f64 {
        let p = &self.points;
        let mut m = p[0].0 * p[0].1;
        for w in p.windows(2) {
            m += (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1);
        }
        m
    }

    /// A size in whole bytes (at least 1).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        (self.quantile(rng.uniform()).round() as u64).max(1)
    }
}

/// The completion time of a transfer of `bytes` alone on an empty link of `rate_bps` with base
/// RTT `rtt`: the TCP model's slow start without loss, its receiver ACKing every segment. The
/// SYN (60 B) and the SYN/ACK's return take its serialisation + one RTT; the handshake's last
/// ACK (52 B, the model sends it on its own) is serialised before the data; then round i sends
/// w_i = iw·2^i segments and the next round starts when its first ACK returns (one segment's
/// serialisation + one RTT later); once a round's window covers what is left, or its
/// serialisation covers an RTT (the link never idles again), the rest leaves back to back and
/// completes one RTT after its last bit is serialised. Segments are mss + 52 B on the wire.
pub fn ideal_fct_s(bytes: u64, mss: u32, rate_bps: f64, rtt: Nanos, iw: u32) -> f64 {
    let r = rtt.as_secs_f64();
    let hdr = TCP_IP_HEADER_BYTES as f64;
    let n = bytes.div_ceil(mss as u64).max(1);
    let tx = (mss as f64 + hdr) * 8.0 / rate_bps;
    let last = (bytes - (n - 1) * mss as u64) as f64;
    let tx_last = (last + hdr) * 8.0 / rate_bps;
    let mut t = (SYN_BYTES as f64 + hdr) * 8.0 / rate_bps + r;
    let mut rem = n;
    let mut w = iw.max(1) as u64;
    loop {
        if w >= rem || w as f64 * tx >= r + tx {
            return t + (rem - 1) as f64 * tx + tx_last + r;
        }
        t += tx + r;
        rem -= w;
        w *= 2;
    }
}

/// What an extra (non-`[[flows]]`) flow is.
#[derive(Clone, Debug, PartialEq)]
pub enum ExtraKind {
    /// A transfer of workload `workload` of `bytes` payload bytes.
    Transfer {
        /// Index into `[[workloads]]`.
        workload: usize,
        /// Payload bytes.
        bytes: u64,
    },
    /// Probe `probe`.
    Probe {
        /// Index into `[[probes]]`.
        probe: usize,
    },
}

fn field(path: String, msg: impl Into<String>) -> SimError {
    SimError::field(path, msg)
}

/// Check `[[workloads]]` and `[[probes]]` (everything but files, which `expand` reads).
pub fn validate(s: &Scenario) -> Result<(), SimError> {
    for (i, w) in s.workloads.iter().enumerate() {
        let p = |f: &str| format!("workloads[{i}].{f}");
        match (w.load, w.rate) {
            (Some(_), Some(_)) => {
                return Err(field(
                    p("load"),
                    "set together with rate; expected one of load, rate",
                ))
            }
            (None, None) => {
                return Err(field(
                    p("load"),
                    "missing; expected load = 0.5 (fraction of the link) or rate = 100 (flows/s)",
                ))
            }
            (Some(l), None) if !(l > 0.0 && l <= 1.0) => {
                return Err(field(
                    p("load"),
                    format!("{l} is out of range; expected a fraction in (0, 1]"),
                ))
            }
            (None, Some(r)) if !(r > 0.0 && r.is_finite()) => {
                return Err(field(
                    p("rate"),
                    format!("{r} is out of range; expected flows per second > 0"),
                ))
            }
            _ => {}
        }
        if w.rtt.0 == 0 {
            return Err(field(p("rtt"), "\"0s\" must be > 0, e.g. \"20ms\""));
        }
        if w.start >= s.duration {
            return Err(field(
                p("start"),
                format!(
                    "\"{}\" is not before the end of the run (duration \"{}\")",
                    w.start, s.duration
                ),
            ));
        }
        if let Some(stop) = w.stop {
            if stop <= w.start {
                return Err(field(
                    p("stop"),
                    format!("\"{stop}\" is not after start \"{}\"", w.start),
                ));
            }
        }
        if w.ecn == Some(FlowEcn::L4s) {
            for cc in cc_names(w) {
                if !matches!(cc.as_str(), "prague" | "dctcp" | "bbr3") {
                    return Err(field(p("ecn"), format!("\"l4s\" needs an L4S congestion control, not \"{cc}\"; expected cc among prague, dctcp, bbr3")));
                }
            }
        }
        if let Some(CcChoice::Mix(m)) = &w.cc {
            if m.is_empty() {
                return Err(field(
                    p("cc"),
                    "an empty table; expected e.g. {cubic = 0.5, prague = 0.5}",
                ));
            }
            for (k, v) in m {
                if !(*v > 0.0 && v.is_finite()) {
                    return Err(field(
                        format!("workloads[{i}].cc.{k}"),
                        format!("weight {v} must be > 0"),
                    ));
                }
            }
        }
        for cc in cc_names(w) {
            if !TRANSFER_CCS.contains(&cc.as_str()) {
                return Err(field(
                    p("cc"),
                    format!(
                        "\"{cc}\" is not a TCP congestion control; expected one of {}",
                        TRANSFER_CCS.join(", ")
                    ),
                ));
            }
        }
        if SizeCdf::named(&w.sizes).is_none() && w.sizes.trim().is_empty() {
            return Err(field(
                p("sizes"),
                "empty; expected \"web-search\", \"data-mining\" or a CDF file",
            ));
        }
    }
    for (i, pr) in s.probes.iter().enumerate() {
        let p = |f: &str| format!("probes[{i}].{f}");
        if pr.rtt.0 == 0 {
            return Err(field(p("rtt"), "\"0s\" must be > 0, e.g. \"20ms\""));
        }
        if pr.ecn == Some(FlowEcn::Accecn) {
            return Err(field(
                p("ecn"),
                "\"accecn\" is TCP feedback; expected one of \"l4s\", \"classic\", \"none\"",
            ));
        }
        if let Some(stop) = pr.stop {
            if stop <= pr.start {
                return Err(field(
                    p("stop"),
                    format!("\"{stop}\" is not after start \"{}\"", pr.start),
                ));
            }
        }
        if pr.start >= s.duration {
            return Err(field(
                p("start"),
                format!(
                    "\"{}\" is not before the end of the run (duration \"{}\")",
                    pr.start, s.duration
                ),
            ));
        }
        pr.config()
            .validate()
            .map_err(|e| SimError::param(&p(""), e))?;
    }
    Ok(())
}

fn cc_names(w: &WorkloadConfig) -> Vec<String> {
    match &w.cc {
        None => vec!["cubic".into()],
        Some(CcChoice::One(c)) => vec![c.clone()],
        Some(CcChoice::Mix(m)) => m.keys().cloned().collect(),
    }
}

/// The `[[flows]]`-style entry of one transfer.
fn transfer_flow(w: &WorkloadConfig, cc: String, bytes: u64, start: Nanos) -> FlowConfig {
    FlowConfig {
        cc,
        rtt: w.rtt,
        count: 1,
        start,
        stop: None,
        bytes: Some(bytes),
        ecn: w.ecn,
        ..FlowConfig::default()
    }
}

/// The size CDF of workload `i`, reading a file relative to the scenario's directory.
pub fn size_cdf(s: &Scenario, i: usize) -> Result<SizeCdf, SimError> {
    let w = &s.workloads[i];
    if let Some(c) = SizeCdf::named(&w.sizes) {
        return Ok(c);
    }
    let path = match &s.base_dir {
        Some(d) => d.join(&w.sizes),
        None => std::path::PathBuf::from(&w.sizes),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        field(
            format!("workloads[{i}].sizes"),
            format!(
                "\"{}\" is neither \"web-search\", \"data-mining\" nor a readable CDF file ({}: {e})",
                w.sizes,
                path.display()
            ),
        )
    })?;
    SizeCdf::parse(&text).map_err(|e| {
        field(
            format!("workloads[{i}].sizes"),
            format!("{}: {e}", path.display()),
        )
    })
}

/// The mean link rate over [from, to), bits/s.
pub fn mean_rate_bps(link: &dyn l4s_core::link::LinkModel, from: Nanos, to: Nanos) -> f64 {
    link.capacity_bytes(from, to) * 8.0 / (to - from).as_secs_f64().max(1e-9)
}

/// Every transfer of every workload (in arrival order per workload) and every probe, as flow
/// entries with what they are. Arrivals and sizes draw from the seed's "workload/i" streams.
pub fn expand(
    s: &Scenario,
    link: &dyn l4s_core::link::LinkModel,
) -> Result<Vec<(FlowConfig, ExtraKind)>, SimError> {
    let mut out = Vec::new();
    for (i, w) in s.workloads.iter().enumerate() {
        let cdf = size_cdf(s, i)?;
        let stop = w.stop.unwrap_or(s.duration).min(s.duration);
        let lambda = match (w.load, w.rate) {
            (Some(l), _) => l * mean_rate_bps(link, w.start, stop) / 8.0 / cdf.mean(),
            (_, Some(r)) => r,
            _ => 0.0,
        };
        let expected = lambda * (stop - w.start).as_secs_f64();
        if expected > MAX_WORKLOAD_FLOWS {
            // Blame the key the user wrote: `load` or `rate`.
            let key = if w.load.is_some() { "load" } else { "rate" };
            return Err(field(
                format!("workloads[{i}].{key}"),
                format!("gives about {expected:.0} transfers; at most {MAX_WORKLOAD_FLOWS} per run (shorten start..stop or lower the {key})"),
            ));
        }
        let mut rng = Rng::derive(s.seed, &format!("workload/{i}"));
        let ccs: Vec<(String, f64)> = match &w.cc {
            None => vec![("cubic".into(), 1.0)],
            Some(CcChoice::One(c)) => vec![(c.clone(), 1.0)],
            Some(CcChoice::Mix(m)) => m.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        };
        let total_w: f64 = ccs.iter().map(|c| c.1).sum();
        let mut t = w.start.as_secs_f64();
        loop {
            t += rng.exponential(1.0 / lambda);
            let at = Nanos::from_secs_f64(t);
            if at >= stop {
                break;
            }
            let bytes = cdf.sample(&mut rng);
            let mut pick = rng.uniform() * total_w;
            let mut cc = ccs[ccs.len() - 1].0.clone();
            for (name, wt) in &ccs {
                if pick < *wt {
                    cc = name.clone();
                    break;
                }
                pick -= wt;
            }
            out.push((
                transfer_flow(w, cc, bytes, at),
                ExtraKind::Transfer { workload: i, bytes },
            ));
        }
    }
    for (i, p) in s.probes.iter().enumerate() {
        let mut fc = transfer_flow(
            &WorkloadConfig {
                load: None,
                rate: None,
                sizes: String::new(),
                cc: None,
                ecn: p.ecn,
                rtt: p.rtt,
                start: p.start,
                stop: p.stop,
            },
            "probe".into(),
            0,
            p.start,
        );
        fc.bytes = None;
        fc.stop = p.stop;
        out.push((fc, ExtraKind::Probe { probe: i }));
    }
    Ok(out)
}

/// The two ends of probe `i` as flow `id`.
pub fn build_probe(s: &Scenario, i: usize, id: u32) -> Result<crate::flows::FlowEnds, SimError> {
    use crate::flows::{SimReceiver, SimSender};
    use l4s_core::rt::probe::{ProbeClient, ProbeServer};
    let cfg = s.probes[i].config();
    let l4s = cfg.ecn == Ecn::Ect1;
    let c = ProbeClient::new(id, cfg).map_err(|e| SimError::param(&format!("probes[{i}]."), e))?;
    Ok(crate::flows::FlowEnds {
        sender: SimSender::Dyn(Box::new(c)),
        receiver: SimReceiver::Dyn(Box::new(ProbeServer::default())),
        l4s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_cdf_whose_size_or_probability_falls_is_refused_at_that_line() {
        // Either one falling is an error on its own (a CDF is non-decreasing in both).
        assert_eq!(
            SizeCdf::parse("100 0.5\n50 1.0").unwrap_err(),
            "line 2: sizes and probabilities must not decrease (100 0.5 then 50 1)"
        );
        assert_eq!(
            SizeCdf::parse("100 0.5\n200 0.4\n300 1").unwrap_err(),
            "line 2: sizes and probabilities must not decrease (100 0.5 then 200 0.4)"
        );
        // Equal neighbours are allowed (a step in the CDF).
        assert!(SizeCdf::parse("100 0.5\n100 0.7\n200 0.7\n300 1").is_ok());
        // A file with no points (empty, or comments only) is refused, as is one that ends
        // below probability 1.
        assert_eq!(SizeCdf::parse("").unwrap_err(), "no points");
        assert_eq!(SizeCdf::parse("# sizes\n\n").unwrap_err(), "no points");
        assert_eq!(
            SizeCdf::parse("100 0.5\n200 0.9").unwrap_err(),
            "the last probability is 0.9; expected 1"
        );
    }
}
