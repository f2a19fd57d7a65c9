//! `[link.wifi]`: the keys of the Wi-Fi bottleneck (`[link] model = "wifi"`), their defaults
//! and checks, and the summary.json `wifi` block. The model is l4s-core's `wifi` module
//! (IEEE 802.11-2020 EDCA / A-MPDU / block ack; mac80211 AQL for the driver queue).

use crate::error::SimError;
use crate::histogram::SojournHistogram;
use crate::recorder::Recorder;
use l4s_core::aqm::QueueSample;
use l4s_core::wifi::{
    ApMode, AqlLimits, ClientParams, Dir, DirStats, DriverLimit, Phy, RateTrace, Standard,
    TxDriver, TxqParams, WifiMac, WifiParams, WifiStats,
};
use l4s_core::{Nanos, Rate};
use serde::Deserialize;
use serde_json::{json, Value};

/// `[link.wifi]` as written.
#[derive(Clone, Debug, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct WifiConfig {
    /// PHY data rate with 802.11a OFDM timing (instead of `standard` + `mcs`).
    pub phy_rate: Option<Rate>,
    /// PHY rate over time with 802.11a OFDM timing: a file of `time_s,rate_mbps` lines,
    /// relative to the scenario file (instead of `phy_rate` or `standard` + `mcs`).
    pub rate_trace: Option<String>,
    /// "ac" (VHT) or "ax" (HE).
    pub standard: Option<String>,
    /// VHT-MCS 0–9 / HE-MCS 0–11.
    pub mcs: Option<u32>,
    /// Channel width, MHz (default 80).
    pub width: Option<u32>,
    /// Spatial streams (default 1).
    pub streams: Option<u32>,
    /// Most MPDUs per A-MPDU (default 64).
    pub max_mpdus: Option<u32>,
    /// Longest PPDU (default "5484us").
    pub max_ppdu: Option<Nanos>,
    /// Other saturated stations on the channel (default 0).
    pub stations: Option<u32>,
    /// Per-MPDU error probability of both directions (default 0).
    pub per: Option<f64>,
    /// Per-MPDU error probability of the downlink data MPDUs (instead of `per`).
    pub per_down: Option<f64>,
    /// Per-MPDU error probability of the uplink MPDUs, the TCP ACKs (instead of `per`).
    pub per_up: Option<f64>,
    /// Failed tries after which an MPDU is dropped (default 7).
    pub retry_limit: Option<u32>,
    /// Reorder-buffer hole timeout (default "100ms").
    pub reorder_timeout: Option<Nanos>,
    /// Driver queue limit as airtime, AQL-like (default "12ms").
    pub driver_limit: Option<Nanos>,
    /// Driver queue limit in packets instead of airtime.
    pub driver_limit_pkts: Option<u32>,
    /// The client station's uplink queue, packets (default 1000).
    pub uplink_limit_pkts: Option<u32>,
    /// TCP ACKs contend on the medium (default true); false sends them on the usual ACK path.
    pub uplink: Option<bool>,
    /// EDCA AIFSN (default 3, AC_BE).
    pub aifsn: Option<u32>,
    /// EDCA CWmin (default 15).
    pub cw_min: Option<u32>,
    /// EDCA CWmax (default 1023).
    pub cw_max: Option<u32>,
    /// aSlotTime (default "9us").
    pub slot: Option<Nanos>,
    /// aSIFSTime (default "16us").
    pub sifs: Option<Nanos>,
    /// The AP's queueing: "mac80211" (default), "aqm_in_txq" or "driver_fifo".
    pub ap: Option<String>,
    /// The driver below the TXQs: "firmware_rr" (default; AQL, firmware round robin, as
    /// ath10k / mt76) or "ath9k" (no AQL, a hardware queue of two formed aggregates).
    pub driver: Option<String>,
    /// mac80211 TXQ CoDel target (default "20ms").
    pub txq_target: Option<Nanos>,
    /// mac80211 TXQ CoDel interval (default "100ms").
    pub txq_interval: Option<Nanos>,
    /// mac80211 TXQ CoDel marks ECN-capable packets instead of dropping (default true).
    pub txq_ecn: Option<bool>,
    /// CE threshold in the TXQ CoDel (a proposal; mac80211 has none). Default off.
    pub txq_ce_threshold: Option<Nanos>,
    /// `txq_ce_threshold` on ECT(1) packets only (default true).
    pub txq_ce_threshold_ect1: Option<bool>,
    /// mac80211 airtime fairness among stations (default true).
    pub airtime_fairness: Option<bool>,
    /// The client stations (`[[link.wifi.clients]]`; default: one, with the keys above).
    pub clients: Vec<ClientConfig>,
}

/// One `[[link.wifi.clients]]` entry: its own rate and error rate (the rest is the table's).
#[derive(Clone, Debug, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// MCS with the table's `standard`, `width` and `streams`.
    pub mcs: Option<u32>,
    /// PHY rate with 802.11a OFDM timing (instead of `mcs`).
    pub phy_rate: Option<Rate>,
    /// Per-MPDU error probability to and from it (default: the table's).
    pub per: Option<f64>,
    /// Per-MPDU error probability of the MPDUs to it (instead of `per`).
    pub per_down: Option<f64>,
    /// Per-MPDU error probability of the MPDUs from it (instead of `per`).
    pub per_up: Option<f64>,
    /// Its PHY rate over time (a `time_s,rate_mbps` file as the table's `rate_trace`,
    /// instead of `mcs` / `phy_rate`).
    pub rate_trace: Option<String>,
}

/// `per` sets both directions, `per_down` / `per_up` one each (not together with `per`);
/// each unset direction is `inherit`'s. Errors name `{prefix}<key>`.
fn per_pair(
    prefix: &str,
    (per, down, up): (Option<f64>, Option<f64>, Option<f64>),
    inherit: (f64, f64),
) -> Result<(f64, f64), SimError> {
    for (key, v) in [("per_down", down), ("per_up", up)] {
        if per.is_some() && v.is_some() {
            return Err(err(
                &format!("{prefix}{key}"),
                "set together with per (which sets both directions); expected per or per_down / per_up",
            ));
        }
    }
    let pair = (
        down.or(per).unwrap_or(inherit.0),
        up.or(per).unwrap_or(inherit.1),
    );
    for (key, v, given) in [("per_down", pair.0, down), ("per_up", pair.1, up)] {
        if !(v.is_finite() && (0.0..1.0).contains(&v)) {
            let key = if given.is_some() { key } else { "per" };
            return Err(err(
                &format!("{prefix}{key}"),
                format!("{v} is not a probability in [0, 1)"),
            ));
        }
    }
    Ok(pair)
}

fn err(key: &str, msg: impl Into<String>) -> SimError {
    SimError::field(format!("link.wifi.{key}"), msg)
}

/// Most points a rate trace may hold.
const RATE_TRACE_MAX_POINTS: usize = 1_000_000;

/// Parse a rate trace: one `time_s,rate_mbps` point per line (blank lines and `#` comments
/// skipped), times in seconds from 0 strictly increasing, rates in [1, 10000] Mb/s. The error
/// names the line and the field.
pub fn parse_rate_trace(text: &str) -> Result<Vec<(Nanos, u64)>, String> {
    let mut points: Vec<(Nanos, u64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = i + 1;
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [time, rate] = fields[..] else {
            return Err(format!(
                "line {n}: {} field(s); expected two, time_s,rate_mbps",
                fields.len()
            ));
        };
        let prev = points.last().map(|p| p.0);
        let t = time
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && (0.0..=1e6).contains(t))
            .map(|t| Nanos((t * 1e9).round() as u64));
        let t = match (t, prev) {
            (None, _) => {
                return Err(format!(
                    "line {n}: time_s \"{time}\" is not a time in [0, 1000000] seconds"
                ))
            }
            (Some(t), None) if t != Nanos::ZERO => {
                return Err(format!(
                    "line {n}: time_s {time} starts the trace; expected 0 (the rate from the start)"
                ))
            }
            (Some(t), Some(p)) if t <= p => {
                return Err(format!(
                    "line {n}: time_s {time} is not after the previous point's; expected strictly increasing times"
                ))
            }
            (Some(t), _) => t,
        };
        let Some(mbps) = rate
            .parse::<f64>()
            .ok()
            .filter(|r| r.is_finite() && (1.0..=10_000.0).contains(r))
        else {
            return Err(format!(
                "line {n}: rate_mbps \"{rate}\" is not a rate in [1, 10000] Mb/s"
            ));
        };
        if points.len() == RATE_TRACE_MAX_POINTS {
            return Err(format!(
                "line {n}: more than {RATE_TRACE_MAX_POINTS} points"
            ));
        }
        points.push((t, (mbps * 1e6).round() as u64));
    }
    if points.is_empty() {
        return Err("no points; expected lines time_s,rate_mbps from time 0".into());
    }
    Ok(points)
}

/// Read and check the rate trace `file` of `[link.wifi] <key>` (relative to `base_dir`).
fn read_rate_trace(
    key: &str,
    file: &str,
    base_dir: Option<&std::path::Path>,
    aggregated: bool,
) -> Result<RateTrace, SimError> {
    let path = match base_dir {
        Some(d) => d.join(file),
        None => std::path::PathBuf::from(file),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| SimError::Io {
        path: format!("link.wifi.{key}"),
        file: path.clone(),
        source: e,
    })?;
    let points =
        parse_rate_trace(&text).map_err(|e| err(key, format!("{}: {e}", path.display())))?;
    RateTrace::new(&points, aggregated).map_err(|e| err(key, format!("{}: {e}", path.display())))
}

impl WifiConfig {
    /// The model's parameters, a rate trace read relative to the current directory; every
    /// error names `link.wifi.<key>` and its range.
    pub fn params(&self) -> Result<WifiParams, SimError> {
        self.params_in(None)
    }

    /// The model's parameters with `rate_trace` (the table's and each client's) read
    /// relative to `base_dir`.
    pub fn params_in(&self, base_dir: Option<&std::path::Path>) -> Result<WifiParams, SimError> {
        let mut p = self.params_with()?;
        let aggregated = p.max_mpdus > 1;
        if let Some(file) = &self.rate_trace {
            let trace = read_rate_trace("rate_trace", file, base_dir, aggregated)?;
            p.phy = trace.phys()[0];
            p.rate_trace = Some(trace);
        }
        for (i, c) in self.clients.iter().enumerate().skip(1) {
            if let Some(file) = &c.rate_trace {
                let key = format!("clients[{i}].rate_trace");
                let trace = read_rate_trace(&key, file, base_dir, aggregated)?;
                let cp = &mut p.more_clients[i - 1];
                cp.phy = trace.phys()[0];
                cp.rate_trace = Some(trace);
            }
        }
        Ok(p)
    }

    /// Every check but the rate trace file's content (read when the run starts).
    pub fn check(&self) -> Result<(), SimError> {
        self.txq_params()?;
        self.params_with().map(|_| ())
    }

    /// The parameters the keys give (with `rate_trace`, a stand-in 54 Mb/s OFDM PHY that
    /// `params_in` replaces by the trace's).
    fn params_with(&self) -> Result<WifiParams, SimError> {
        if self.rate_trace.is_some() {
            for (k, set) in [
                ("phy_rate", self.phy_rate.is_some()),
                ("standard", self.standard.is_some()),
                ("mcs", self.mcs.is_some()),
                ("width", self.width.is_some()),
                ("streams", self.streams.is_some()),
            ] {
                if set {
                    return Err(err(
                        "rate_trace",
                        format!("set together with {k}; expected rate_trace (the PHY rate over time) or a fixed phy_rate / standard + mcs"),
                    ));
                }
            }
        }
        let phy = match (&self.phy_rate, &self.standard) {
            // A stand-in until `params_in` reads the trace.
            _ if self.rate_trace.is_some() => {
                Phy::ofdm(54_000_000, self.max_mpdus.unwrap_or(64) > 1)
                    .map_err(|e| err("rate_trace", e.to_string()))?
            }
            (Some(_), Some(_)) => {
                return Err(err(
                    "phy_rate",
                    "set together with standard; expected phy_rate or standard + mcs",
                ))
            }
            (None, None) => return Err(err(
                "standard",
                "missing; expected standard = \"ac\" | \"ax\" with mcs, phy_rate = \"54mbit\" or rate_trace = \"file\"",
            )),
            (Some(r), None) => {
                for (k, set) in [
                    ("mcs", self.mcs.is_some()),
                    ("width", self.width.is_some()),
                    ("streams", self.streams.is_some()),
                ] {
                    if set {
                        return Err(err(k, "applies with standard only, not with phy_rate"));
                    }
                }
                Phy::ofdm(r.bps(), self.max_mpdus.unwrap_or(64) > 1)
                    .map_err(|e| err("phy_rate", e.to_string()))?
            }
            (None, Some(s)) => {
                let std = match s.as_str() {
                    "ac" => Standard::Vht,
                    "ax" => Standard::He,
                    other => {
                        return Err(err(
                            "standard",
                            format!("\"{other}\" is unknown; expected \"ac\" or \"ax\""),
                        ))
                    }
                };
                let Some(mcs) = self.mcs else {
                    return Err(err("mcs", "missing (required with standard)"));
                };
                Phy::mcs(
                    std,
                    mcs,
                    self.width.unwrap_or(80),
                    self.streams.unwrap_or(1),
                )
                .map_err(|e| SimError::param("link.wifi.", e))?
            }
        };
        let mut p = WifiParams::new(phy);
        p.driver = self.tx_driver()?;
        let e = &mut p.edca;
        e.aifsn = self.aifsn.unwrap_or(e.aifsn);
        e.cw_min = self.cw_min.unwrap_or(e.cw_min);
        e.cw_max = self.cw_max.unwrap_or(e.cw_max);
        e.slot = self.slot.unwrap_or(e.slot);
        e.sifs = self.sifs.unwrap_or(e.sifs);
        p.max_mpdus = self.max_mpdus.unwrap_or(p.max_mpdus);
        p.max_ppdu = self.max_ppdu.unwrap_or(p.max_ppdu);
        p.stations = self.stations.unwrap_or(0);
        (p.per, p.per_up) = per_pair("", (self.per, self.per_down, self.per_up), (0.0, 0.0))?;
        p.retry_limit = self.retry_limit.unwrap_or(p.retry_limit);
        p.reorder_timeout = self.reorder_timeout.unwrap_or(p.reorder_timeout);
        p.uplink_limit_pkts = self.uplink_limit_pkts.unwrap_or(p.uplink_limit_pkts);
        p.driver_limit = match (self.driver_limit, self.driver_limit_pkts) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "driver_limit_pkts",
                    "set together with driver_limit; expected one of them",
                ))
            }
            (Some(t), None) => DriverLimit::Airtime(t),
            (None, Some(n)) => DriverLimit::Packets(n),
            (None, None) => p.driver_limit,
        };
        let (table_per, table_per_up) = (p.per, p.per_up);
        for (i, c) in self.clients.iter().enumerate() {
            let key = |k: &str| format!("clients[{i}].{k}");
            if c.rate_trace.is_some() {
                if let Some(k) = [("mcs", c.mcs.is_some()), ("phy_rate", c.phy_rate.is_some())]
                    .iter()
                    .find(|(_, set)| *set)
                    .map(|(k, _)| k)
                {
                    return Err(err(
                        &key("rate_trace"),
                        format!(
                            "set together with {k}; expected rate_trace or a fixed mcs / phy_rate"
                        ),
                    ));
                }
                if i == 0 {
                    return Err(err(
                        &key("rate_trace"),
                        "the first client's rate trace is [link.wifi] rate_trace; expected it there",
                    ));
                }
            }
            let phy = match (c.phy_rate, c.mcs) {
                (Some(_), Some(_)) => {
                    return Err(err(
                        &key("phy_rate"),
                        "set together with mcs; expected one of them",
                    ))
                }
                (Some(r), None) => Phy::ofdm(r.bps(), p.max_mpdus > 1)
                    .map_err(|e| err(&key("phy_rate"), e.to_string()))?,
                (None, Some(m)) => {
                    let std = match self.standard.as_deref() {
                        Some("ax") => Standard::He,
                        Some("ac") => Standard::Vht,
                        _ => {
                            return Err(err(
                                &key("mcs"),
                                "needs standard = \"ac\" | \"ax\" in [link.wifi]",
                            ))
                        }
                    };
                    Phy::mcs(std, m, self.width.unwrap_or(80), self.streams.unwrap_or(1))
                        .map_err(|e| SimError::param(&format!("link.wifi.clients[{i}]."), e))?
                }
                (None, None) => p.phy,
            };
            let (per, per_up) = per_pair(
                &key(""),
                (c.per, c.per_down, c.per_up),
                (table_per, table_per_up),
            )?;
            if i == 0 {
                if self.rate_trace.is_some() && (c.phy_rate.is_some() || c.mcs.is_some()) {
                    return Err(err(
                        "clients[0].mcs",
                        "set together with rate_trace (which is the first client's rate)",
                    ));
                }
                p.phy = phy;
                (p.per, p.per_up) = (per, per_up);
            } else {
                p.more_clients.push(ClientParams {
                    phy,
                    per,
                    per_up,
                    rate_trace: None,
                });
            }
        }
        if self.clients.len() > 64 {
            return Err(err(
                "clients",
                format!("{} stations; expected 1 to 64", self.clients.len()),
            ));
        }
        p.validate().map_err(|e| SimError::param("link.wifi.", e))?;
        Ok(p)
    }

    /// Number of client stations.
    pub fn n_clients(&self) -> usize {
        self.clients.len().max(1)
    }

    /// Airtime fairness among stations (mac80211's DRR; default on).
    pub fn airtime_fairness(&self) -> bool {
        self.airtime_fairness.unwrap_or(true)
    }

    /// The AQL limits of `ap = "mac80211"`: low 5 ms (or `driver_limit` when lower), high
    /// `driver_limit` (default 12 ms), interface threshold 24 ms.
    pub fn aql_limits(&self) -> AqlLimits {
        let mut a = AqlLimits::default();
        if let Some(h) = self.driver_limit {
            a.high = h;
            a.low = a.low.min(h);
        }
        a
    }

    /// The AP's queueing design (`ap`).
    pub fn ap_mode(&self) -> Result<ApMode, SimError> {
        match &self.ap {
            None => Ok(ApMode::default()),
            Some(s) => ApMode::parse(s).ok_or_else(|| {
                err(
                    "ap",
                    format!("\"{s}\" is unknown; expected \"mac80211\", \"aqm_in_txq\" or \"driver_fifo\""),
                )
            }),
        }
    }

    /// The driver below the TXQs (`driver`): ath9k pulls from per-station TXQs (`ap =
    /// "mac80211"`, or `"aqm_in_txq"` with one client station), has no AQL (so no
    /// `driver_limit`) and sends only aggregates (`max_mpdus` > 1).
    pub fn tx_driver(&self) -> Result<TxDriver, SimError> {
        let Some(s) = &self.driver else {
            return Ok(TxDriver::default());
        };
        let d = TxDriver::parse(s).ok_or_else(|| {
            err(
                "driver",
                format!("\"{s}\" is unknown; expected \"firmware_rr\" or \"ath9k\""),
            )
        })?;
        if d == TxDriver::Ath9k {
            let ap = self.ap_mode()?;
            if ap == ApMode::DriverFifo {
                return Err(err(
                    "driver",
                    "\"ath9k\" applies with link.wifi.ap = \"mac80211\" or \"aqm_in_txq\" \
                     (the per-station queues its scheduler pulls from), not \"driver_fifo\"",
                ));
            }
            if ap == ApMode::AqmInTxq && self.clients.len() > 1 {
                return Err(err(
                    "driver",
                    "\"ath9k\" with link.wifi.ap = \"aqm_in_txq\" runs one client station; \
                     expected ap = \"mac80211\" for several [[link.wifi.clients]]",
                ));
            }
            for (k, set) in [
                ("driver_limit", self.driver_limit.is_some()),
                ("driver_limit_pkts", self.driver_limit_pkts.is_some()),
            ] {
                if set {
                    return Err(err(
                        k,
                        "applies with driver = \"firmware_rr\"; ath9k has no AQL and holds \
                         ATH_AGGR_MIN_QDEPTH = 2 aggregates in its hardware queue",
                    ));
                }
            }
            if self.max_mpdus == Some(1) {
                return Err(err(
                    "max_mpdus",
                    "1 with driver = \"ath9k\", whose hardware queue holds aggregates; \
                     expected an integer in [2, 256]",
                ));
            }
        }
        Ok(d)
    }

    /// The mac80211 TXQ parameters (`txq_*`), range-checked; the keys apply with
    /// `ap = "mac80211"` only.
    pub fn txq_params(&self) -> Result<TxqParams, SimError> {
        let mut p = TxqParams::default();
        p.target = self.txq_target.unwrap_or(p.target);
        p.interval = self.txq_interval.unwrap_or(p.interval);
        p.ecn = self.txq_ecn.unwrap_or(p.ecn);
        p.ce_threshold = self.txq_ce_threshold;
        p.ce_threshold_ect1 = self.txq_ce_threshold_ect1.unwrap_or(p.ce_threshold_ect1);
        p.validate().map_err(|e| SimError::param("link.wifi.", e))?;
        if self.ap_mode()? == ApMode::Mac80211 && self.driver_limit_pkts.is_some() {
            return Err(err(
                "driver_limit_pkts",
                "applies with ap = \"driver_fifo\" or \"aqm_in_txq\"; mac80211 limits the \
                 driver by AQL airtime (driver_limit)",
            ));
        }
        if self.ap_mode()? == ApMode::AqmInTxq
            && self.clients.len() > 1
            && self.driver_limit_pkts.is_some()
        {
            return Err(err(
                "driver_limit_pkts",
                "applies to one client station; with several, \"aqm_in_txq\" limits each \
                 station's driver share by AQL airtime (driver_limit)",
            ));
        }
        if self.ap_mode()? != ApMode::Mac80211 {
            for (k, set) in [
                ("txq_target", self.txq_target.is_some()),
                ("txq_interval", self.txq_interval.is_some()),
                ("txq_ecn", self.txq_ecn.is_some()),
                ("txq_ce_threshold", self.txq_ce_threshold.is_some()),
                (
                    "txq_ce_threshold_ect1",
                    self.txq_ce_threshold_ect1.is_some(),
                ),
            ] {
                if set {
                    return Err(err(
                        k,
                        "applies with ap = \"mac80211\" only (its TXQ CoDel)",
                    ));
                }
            }
        }
        Ok(p)
    }

    /// Whether TCP ACKs cross the medium.
    pub fn uplink(&self) -> bool {
        self.uplink.unwrap_or(true)
    }
}

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn ms_quantiles(us: &[u32]) -> Value {
    if us.is_empty() {
        return json!({"mean": null, "p50": null, "p95": null, "p99": null});
    }
    let mut v = us.to_vec();
    v.sort_unstable();
    let q = |x: f64| v[((v.len() - 1) as f64 * x).round() as usize] as f64 / 1e3;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e3;
    json!({"mean": num(mean), "p50": q(0.5), "p95": q(0.95), "p99": q(0.99)})
}

fn hist_ms(h: &SojournHistogram) -> Value {
    let [p50, p95, p99] = h.percentiles([0.5, 0.95, 0.99]);
    json!({"mean": num(h.mean() / 1e6), "p50": num(p50 / 1e6), "p95": num(p95 / 1e6),
           "p99": num(p99 / 1e6)})
}

fn dir_block(d: &DirStats, mac_delay: &SojournHistogram) -> Value {
    let aggs: u64 = d.agg_hist.iter().sum();
    let mpdus: u64 = d
        .agg_hist
        .iter()
        .enumerate()
        .map(|(k, n)| k as u64 * n)
        .sum();
    // The q-quantile of the aggregate size straight from its histogram.
    let agg_q = |q: f64| -> Value {
        let rank = (aggs as f64 * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (k, &n) in d.agg_hist.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return json!(k);
            }
        }
        Value::Null
    };
    json!({
        "txops": d.txops,
        "mpdu_tx": d.mpdu_tx,
        "retries": d.retries,
        "per_errors": d.per_errors,
        "collided_mpdus": d.collided_mpdus,
        "retry_drops": d.retry_drops,
        "reorder_late_drops": d.reorder_late_drops,
        "reorder_timeouts": d.reorder_timeouts,
        "queue_drops": d.queue_drops,
        "delivered": d.delivered,
        "aggregate_mpdus": {
            "mean": if aggs > 0 { num(mpdus as f64 / aggs as f64) } else { Value::Null },
            "p50": agg_q(0.5), "p95": agg_q(0.95),
            "hist": d.agg_hist,
        },
        "access_delay_ms": ms_quantiles(&d.access_delay_us),
        "mac_delay_ms": hist_ms(mac_delay),
    })
}

/// The summary.json `wifi` block over a window of `window_s` seconds.
fn summary_block(
    p: &WifiParams,
    s: &WifiStats,
    window_s: f64,
    mac_delay: &[SojournHistogram; 2],
    driver: Value,
) -> Value {
    let w = window_s * 1e9;
    let limit = match p.driver_limit {
        DriverLimit::Airtime(t) => json!({"airtime_ms": t.as_ms_f64()}),
        DriverLimit::Packets(n) => json!({"packets": n}),
    };
    let mut block = json!({
        // With a rate trace the rate varies: link.capacity_mbps gives its mean over the window.
        "phy_rate_mbps": if p.rate_trace.is_some() { Value::Null } else { num(p.phy.rate_bps() / 1e6) },
        "stations": p.stations,
        "per": p.per,
        "per_up": p.per_up,
        "retry_limit": p.retry_limit,
        "airtime": {
            "utilisation": num(s.busy_ns as f64 / w),
            "downlink": num(s.down.airtime_ns as f64 / w),
            "uplink": num(s.up.airtime_ns as f64 / w),
            "others": num(s.others_airtime_ns as f64 / w),
            "collisions": num(s.collision_ns as f64 / w),
        },
        "exchanges": s.exchanges,
        "collisions": s.collisions,
        "downlink": dir_block(&s.down, &mac_delay[0]),
        "uplink": dir_block(&s.up, &mac_delay[1]),
        "driver": {"limit": limit, "stats": driver},
    });
    if let Some(t) = &p.rate_trace {
        block["rate_trace_points"] = json!(t.phys().len());
    }
    block
}

/// Add the `wifi` block to a finished summary document.
pub fn add_to_summary(summary_json: &mut String, block: Value) {
    if let Ok(mut v) = serde_json::from_str::<Value>(summary_json) {
        v["wifi"] = block;
        if let Some(w) = v.get_mut("windows") {
            w["wifi"] = json!("after_warmup");
        }
        if let Ok(s) = serde_json::to_string_pretty(&v) {
            *summary_json = s;
        }
    }
}

/// The driver queue as a queue row: queued packets, their bytes, the head's wait; drops are
/// the MPDUs dropped after the retry limit.
pub fn driver_sample(mac: &WifiMac, now: Nanos) -> QueueSample {
    let ((pkts, bytes, head), _) = mac.driver_backlog(now);
    let s = mac.counters();
    QueueSample {
        backlog_pkts: pkts,
        backlog_bytes: bytes,
        head_sojourn: head,
        drops: s.down.retry_drops,
        packets: s.down.mpdu_tx - s.down.retries,
        ..QueueSample::empty("driver")
    }
}

/// What a run records around the MAC, shared by the simulator's `World` and the emulator's
/// access point: the `driver` queue's rows and the summary's `wifi` block.
pub struct WifiRecord {
    /// The driver queue's index in the recorder's queues.
    pub driver_q: u8,
    /// First transmission → release by the reorder buffer, per direction (after warmup).
    mac_delay: [SojournHistogram; 2],
    /// Most packets the driver ever held (queued + in the air + awaiting retry).
    pub max_pending_pkts: u64,
    /// Driver backlog (queued packets) summed over samples after warmup, its max, the count.
    backlog_acc: (u64, u64, u64),
}

impl Default for WifiRecord {
    fn default() -> Self {
        WifiRecord {
            driver_q: 0,
            mac_delay: [SojournHistogram::new(), SojournHistogram::new()],
            max_pending_pkts: 0,
            backlog_acc: (0, 0, 0),
        }
    }
}

impl WifiRecord {
    /// The index of the driver queue's row among the recorder's extra queues.
    fn extra_index(&self, rec: &Recorder) -> usize {
        self.driver_q as usize - (rec.queue_names.len() - rec.extra_queues.len())
    }

    /// Register the driver queue with the recorder, with its row at time 0.
    pub fn register(&mut self, rec: &mut Recorder, mac: &WifiMac) {
        self.driver_q = rec.add_extra_queue("driver");
        let i = self.extra_index(rec);
        rec.extra_queues[i] = driver_sample(mac, Nanos::ZERO);
    }

    /// The driver just took a packet: track the most it ever held.
    pub fn note_pending(&mut self, mac: &WifiMac, now: Nanos) {
        let (_, (pending, _)) = mac.driver_backlog(now);
        self.max_pending_pkts = self.max_pending_pkts.max(pending);
    }

    /// The reorder buffer released a packet after `delay_ns` since its first transmission.
    pub fn on_mac_delivered(&mut self, dir: Dir, delay_ns: u64) {
        self.mac_delay[(dir == Dir::Up) as usize].record(delay_ns);
    }

    /// Update the driver queue's row before a sample at `t`.
    pub fn sample(&mut self, rec: &mut Recorder, mac: &WifiMac, t: Nanos) {
        let q = driver_sample(mac, t);
        if t >= rec.warmup {
            self.backlog_acc.0 += q.backlog_pkts;
            self.backlog_acc.1 = self.backlog_acc.1.max(q.backlog_pkts);
            self.backlog_acc.2 += 1;
        }
        let i = self.extra_index(rec);
        rec.extra_queues[i] = q;
    }

    /// The summary's `wifi` block over the `window_s` seconds after warmup (the MAC's stats
    /// reset at warmup).
    pub fn summary(&self, mac: &WifiMac, window_s: f64) -> Value {
        let (sum, max, n) = self.backlog_acc;
        let driver = json!({
            "backlog_pkts": {"mean": if n > 0 { json!(sum as f64 / n as f64) } else { json!(null) },
                             "max": max},
            "max_pending_pkts": self.max_pending_pkts,
        });
        let mut block = summary_block(
            mac.params(),
            &mac.stats(),
            window_s,
            &self.mac_delay,
            driver,
        );
        if mac.params().driver == TxDriver::Ath9k {
            block["tx_driver"] = json!(TxDriver::Ath9k.name());
            block["hw_queue_max_aggregates"] = json!(mac.hw_queue_max());
        }
        block
    }
}
