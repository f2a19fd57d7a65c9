//! Buffer sizes in bandwidth-delay products: `[aqm] limit = "2bdp"` (or `limit_bytes`) is
//! resolved here, once, against the link rate and a flow's base RTT, before the AQM is built.
//!
//! BDP [bytes] = rate [b/s] · base RTT [s] / 8. The rate is `aqm.bdp_rate` if given, else the
//! link's (initial) `rate`; a trace link has no single rate, so it needs `bdp_rate`. The RTT is
//! that of the `[[flows]]` entry `aqm.bdp_flow` (default: the entry with the smallest base
//! RTT, the first on a tie). A packet limit counts packets, so the BDP is divided by the size
//! of that flow's packets as the queue sees them (TCP: MSS + 52 bytes of headers; cbr:
//! `packet_size`); a byte limit counts IP bytes. The result is rounded up (a buffer never
//! smaller than asked) and at least 1. Simulator and emulator both read the resolved table.

use crate::error::SimError;
use crate::scenario::{FlowConfig, LinkConfig};
use l4s_core::tcp::{TcpConfig, TCP_IP_HEADER_BYTES};
use l4s_core::{parse_rate, Rate};
use serde_json::{json, Map, Value};

/// `[aqm]` keys that only steer the BDP resolution (removed before the AQM reads its table).
pub const BDP_KEYS: [&str; 2] = ["bdp_flow", "bdp_rate"];

/// How a limit written in BDP units was resolved (summary.json `buffer`).
#[derive(Clone, Debug, PartialEq)]
pub struct BufferSizing {
    /// `limit` (packets) or `limit_bytes`.
    pub key: &'static str,
    /// As written, e.g. "2bdp".
    pub given: String,
    /// The multiple of the BDP.
    pub factor: f64,
    /// The rate used.
    pub rate: Rate,
    /// Where the rate came from: "link.rate" or "aqm.bdp_rate".
    pub rate_from: &'static str,
    /// `[[flows]]` entry whose base RTT was used.
    pub flow: usize,
    /// That flow's base RTT, ns.
    pub rtt_ns: u64,
    /// IP bytes per packet the packet limit counts (that flow's packet size).
    pub packet_bytes: u32,
    /// One BDP in bytes.
    pub bdp_bytes: f64,
    /// The resolved limit (packets for `limit`, bytes for `limit_bytes`).
    pub value: u64,
}

impl BufferSizing {
    /// summary.json's `buffer` entry.
    pub fn to_json(&self) -> Value {
        let unit = if self.key == "limit" { "pkts" } else { "bytes" };
        json!({
            "key": self.key,
            "given": self.given,
            "bdp_factor": self.factor,
            "rate_mbps": self.rate.mbps(),
            "rate_from": self.rate_from,
            "rtt_flow": self.flow,
            "rtt_ms": self.rtt_ns as f64 / 1e6,
            "packet_bytes": self.packet_bytes,
            "bdp_bytes": self.bdp_bytes,
            "bdp_pkts": self.bdp_bytes / self.packet_bytes as f64,
            "value": self.value,
            "unit": unit,
        })
    }
}

/// "2bdp", "0.5 bdp", "1.5BDP" -> Some(factor); None when the string does not end in "bdp".
fn bdp_factor(s: &str) -> Option<Result<f64, ()>> {
    let t = s.trim().to_ascii_lowercase();
    let num = t.strip_suffix("bdp")?.trim();
    Some(match num.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(()),
    })
}

/// IP bytes of one packet of `[[flows]]` entry `fl`, as a queue counts it.
pub fn packet_bytes(fl: &FlowConfig) -> u32 {
    if fl.cc == "cbr" {
        fl.packet_size.unwrap_or(1500)
    } else {
        fl.mss.unwrap_or(TcpConfig::default().mss) + TCP_IP_HEADER_BYTES
    }
}

/// Resolve BDP-unit limits in the `[aqm]` table `aqm`; returns the table the AQM reads
/// (integers, the steering keys removed) and how it was resolved (None: no BDP unit used).
pub fn resolve(
    aqm: Value,
    link: &LinkConfig,
    flows: &[FlowConfig],
) -> Result<(Value, Option<BufferSizing>), SimError> {
    let Value::Object(mut map) = aqm else {
        return Ok((aqm, None));
    };
    let steer: Map<String, Value> = BDP_KEYS
        .iter()
        .filter_map(|k| map.remove(*k).map(|v| (k.to_string(), v)))
        .collect();
    let mut found: Option<(&'static str, String, f64)> = None;
    for key in ["limit", "limit_bytes"] {
        let Some(Value::String(s)) = map.get(key) else {
            continue;
        };
        match bdp_factor(s) {
            Some(Ok(f)) => {
                if found.is_some() {
                    return Err(SimError::field(
                        "aqm.limit_bytes",
                        "set together with limit in BDP units; give one of them in BDP units",
                    ));
                }
                found = Some((key, s.clone(), f));
            }
            Some(Err(())) => {
                return Err(SimError::field(
                    format!("aqm.{key}"),
                    format!("\"{s}\" is not a BDP multiple; expected a number > 0 before \"bdp\", e.g. \"2bdp\", \"0.5bdp\""),
                ))
            }
            None => {
                return Err(SimError::field(
                    format!("aqm.{key}"),
                    format!("\"{s}\" is not a {}; expected an integer ≥ 1 or a BDP multiple such as \"2bdp\"",
                            if key == "limit" { "packet count" } else { "byte count" }),
                ))
            }
        }
    }
    let Some((key, given, factor)) = found else {
        if let Some(k) = steer.keys().next() {
            return Err(SimError::field(
                format!("aqm.{k}"),
                "applies only when limit or limit_bytes is given in BDP units, e.g. limit = \"2bdp\"",
            ));
        }
        return Ok((Value::Object(map), None));
    };
    let (rate, rate_from) = match steer.get("bdp_rate") {
        Some(Value::String(r)) => {
            let rate = parse_rate(r).map_err(|e| SimError::field("aqm.bdp_rate", e.to_string()))?;
            if rate.bps() == 0 {
                return Err(SimError::field("aqm.bdp_rate", "is zero; expected a rate > 0, e.g. \"12mbit\""));
            }
            (rate, "aqm.bdp_rate")
        }
        Some(v) => {
            return Err(SimError::field(
                "aqm.bdp_rate",
                format!("{v} is not a rate; rates are written as strings, e.g. \"12mbit\""),
            ))
        }
        None => match (link.rate, &link.trace) {
            (Some(r), _) if r.bps() > 0 => (r, "link.rate"),
            (_, Some(t)) => {
                return Err(SimError::field(
                    format!("aqm.{key}"),
                    format!("\"{given}\": a trace link (\"{t}\") has no single rate, so its BDP is undefined; give the rate to size the buffer with as aqm.bdp_rate, e.g. the trace's mean rate"),
                ))
            }
            _ => {
                return Err(SimError::field(
                    format!("aqm.{key}"),
                    format!("\"{given}\": the BDP needs link.rate > 0 (or aqm.bdp_rate)"),
                ))
            }
        },
    };
    let flow = match steer.get("bdp_flow") {
        Some(v) => match v.as_u64() {
            Some(i) if (i as usize) < flows.len() => i as usize,
            _ => {
                return Err(SimError::field(
                    "aqm.bdp_flow",
                    format!(
                        "{v} is not a [[flows]] entry; expected an integer in [0, {}]",
                        flows.len().saturating_sub(1)
                    ),
                ))
            }
        },
        None => {
            let mut best: Option<usize> = None;
            for (i, f) in flows.iter().enumerate() {
                if best.is_none_or(|b| f.rtt < flows[b].rtt) {
                    best = Some(i);
                }
            }
            best.ok_or_else(|| {
                SimError::field(format!("aqm.{key}"), format!("\"{given}\": the BDP needs a flow's base RTT, and there is no [[flows]] entry"))
            })?
        }
    };
    let fl = &flows[flow];
    if fl.rtt.0 == 0 {
        return Err(SimError::field(
            format!("aqm.{key}"),
            format!("\"{given}\": flows[{flow}].rtt is 0, so the BDP is 0; name a flow with a base RTT > 0 in aqm.bdp_flow"),
        ));
    }
    let pkt = packet_bytes(fl);
    let bdp_bytes = rate.bps() as f64 * fl.rtt.0 as f64 / 8e9;
    let unit = if key == "limit" { pkt as f64 } else { 1.0 };
    // Rounded up; the 1e-9 keeps an exact multiple (e.g. 2·208.33… pkts computed as
    // 416.666…67) from gaining a packet through float error only when it is within 1e-9.
    let value = ((factor * bdp_bytes / unit) - 1e-9).ceil().max(1.0) as u64;
    map.insert(key.to_string(), Value::from(value));
    Ok((
        Value::Object(map),
        Some(BufferSizing {
            key,
            given,
            factor,
            rate,
            rate_from,
            flow,
            rtt_ns: fl.rtt.0,
            packet_bytes: pkt,
            bdp_bytes,
            value,
        }),
    ))
}

/// The `[aqm]` table as given, with a BDP-unit limit replaced by its resolved value and the
/// steering keys removed: what another engine (the emulator) builds the same AQM from.
pub fn effective_aqm_table(raw_aqm: Option<&Value>, sizing: Option<&BufferSizing>) -> Value {
    let mut t = raw_aqm.cloned().unwrap_or_else(|| json!({"kind": "fifo"}));
    if let (Value::Object(m), Some(b)) = (&mut t, sizing) {
        for k in BDP_KEYS {
            m.remove(k);
        }
        m.insert(b.key.to_string(), Value::from(b.value));
    }
    t
}

/// What the simulator resolves from a scenario before it runs, as JSON for another engine:
/// `aqm` (the table to build the AQM from), `buffer` (how a BDP limit was resolved) and
/// `flow_start_ns` (each flow's start after `start_jitter`).
pub fn effective_settings_json(s: &crate::Scenario) -> String {
    let aqm = effective_aqm_table(s.raw.get("aqm"), s.buffer.as_ref());
    let buffer = s.buffer.as_ref().map_or(Value::Null, |b| b.to_json());
    let starts: Vec<u64> = crate::start_jitter::effective_starts(s)
        .iter()
        .map(|t| t.0)
        .collect();
    json!({"aqm": aqm, "buffer": buffer, "flow_start_ns": starts}).to_string()
}

#[cfg(test)]
mod tests {
    use crate::{AqmConfig, Scenario};

    fn scen(link: &str, aqm: &str, flows: &str) -> Result<Scenario, String> {
        Scenario::from_toml_str(&format!(
            "duration = \"1s\"\n[link]\n{link}\n[aqm]\n{aqm}\n{flows}"
        ))
        .map_err(|e| e.to_string())
    }

    const ONE_FLOW_25MS: &str = "[[flows]]\ncc = \"cubic\"\nrtt = \"25ms\"\n";

    #[test]
    fn two_bdp_packets_at_100mbit_25ms() {
        // BDP = 100e6 · 0.025 / 8 = 312 500 B = 208.33 packets of 1500 B; 2 BDP = 416.67 -> 417.
        let s = scen(
            "rate = \"100mbit\"",
            "kind = \"fifo\"\nlimit = \"2bdp\"",
            ONE_FLOW_25MS,
        )
        .unwrap();
        match &s.aqm {
            AqmConfig::Fifo(p) => assert_eq!(p.limit, 417),
            other => panic!("{other:?}"),
        }
        let b = s.buffer.as_ref().unwrap();
        assert_eq!((b.value, b.packet_bytes, b.flow), (417, 1500, 0));
        assert_eq!(b.bdp_bytes, 312_500.0);
        assert_eq!(b.to_json()["unit"], "pkts");
    }

    #[test]
    fn exact_multiple_is_not_rounded_up() {
        // 120 Mb/s · 20 ms / 8 = 300 000 B = exactly 200 packets; 0.5 BDP = 100.
        let s = scen(
            "rate = \"120mbit\"",
            "kind = \"pie\"\nlimit = \"0.5bdp\"",
            "[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n",
        )
        .unwrap();
        assert_eq!(s.buffer.unwrap().value, 100);
    }

    #[test]
    fn byte_limit_counts_bytes() {
        let s = scen(
            "rate = \"100mbit\"",
            "kind = \"dualpi2\"\nlimit_bytes = \"1bdp\"",
            ONE_FLOW_25MS,
        )
        .unwrap();
        match &s.aqm {
            AqmConfig::DualPi2(p) => assert_eq!(p.limit_bytes, Some(312_500)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn smallest_rtt_by_default_or_the_named_flow_with_its_packet_size() {
        let flows = "[[flows]]\ncc = \"prague\"\nrtt = \"40ms\"\nmss = 948\n\
                     [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n";
        // Smallest RTT: flows[1], 20 ms, 1500 B: 10 Mb/s · 20 ms / 8 = 25 000 B -> 16.67 -> 17.
        let s = scen(
            "rate = \"10mbit\"",
            "kind = \"fifo\"\nlimit = \"1bdp\"",
            flows,
        )
        .unwrap();
        let b = s.buffer.unwrap();
        assert_eq!((b.flow, b.rtt_ns, b.value), (1, 20_000_000, 17));
        // Named: flows[0], 40 ms, 948 + 52 = 1000 B packets: 50 000 B -> 50 packets.
        let s = scen(
            "rate = \"10mbit\"",
            "kind = \"fifo\"\nlimit = \"1bdp\"\nbdp_flow = 0",
            flows,
        )
        .unwrap();
        let b = s.buffer.unwrap();
        assert_eq!((b.flow, b.packet_bytes, b.value), (0, 1000, 50));
    }

    #[test]
    fn trace_link_needs_bdp_rate() {
        let e = scen(
            "trace = \"x.down\"",
            "kind = \"fifo\"\nlimit = \"2bdp\"",
            ONE_FLOW_25MS,
        )
        .unwrap_err();
        assert!(
            e.starts_with("aqm.limit:") && e.contains("aqm.bdp_rate") && e.contains("mean"),
            "{e}"
        );
        // 12 Mb/s · 25 ms / 8 = 37 500 B = 25 packets; 2 BDP = 50.
        let s = scen(
            "trace = \"x.down\"",
            "kind = \"fifo\"\nlimit = \"2bdp\"\nbdp_rate = \"12mbit\"",
            ONE_FLOW_25MS,
        )
        .unwrap();
        let b = s.buffer.unwrap();
        assert_eq!((b.value, b.rate_from), (50, "aqm.bdp_rate"));
    }

    #[test]
    fn bad_bdp_inputs_name_the_field() {
        let cases = [
            ("kind = \"fifo\"\nlimit = \"xbdp\"", "aqm.limit:"),
            ("kind = \"fifo\"\nlimit = \"-1bdp\"", "aqm.limit:"),
            ("kind = \"fifo\"\nlimit = \"200pkts\"", "aqm.limit:"),
            (
                "kind = \"fifo\"\nlimit = 100\nbdp_flow = 0",
                "aqm.bdp_flow:",
            ),
            (
                "kind = \"fifo\"\nlimit = \"1bdp\"\nbdp_flow = 3",
                "aqm.bdp_flow:",
            ),
            (
                "kind = \"fifo\"\nlimit = \"1bdp\"\nbdp_rate = 5",
                "aqm.bdp_rate:",
            ),
            (
                "kind = \"fifo\"\nlimit = \"1bdp\"\nlimit_bytes = \"1bdp\"",
                "aqm.limit_bytes:",
            ),
            (
                "kind = \"codel\"\nlimit_bytes = \"1bdp\"",
                "aqm.limit_bytes:",
            ),
        ];
        for (aqm, want) in cases {
            let e = scen("rate = \"10mbit\"", aqm, ONE_FLOW_25MS).unwrap_err();
            assert!(e.starts_with(want), "{aqm}: {e}");
        }
    }

    #[test]
    fn resolved_buffer_is_in_summary_json() {
        let s = scen(
            "rate = \"10mbit\"",
            "kind = \"fifo\"\nlimit = \"2bdp\"",
            "[[flows]]\ncc = \"cbr\"\nrtt = \"24ms\"\nrate = \"1mbit\"\n",
        )
        .unwrap();
        let r = crate::run(&s).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
        // 10 Mb/s · 24 ms / 8 = 30 000 B = 20 packets; 2 BDP = 40.
        assert_eq!(v["buffer"]["value"], 40);
        assert_eq!(v["buffer"]["given"], "2bdp");
        assert_eq!(v["scenario"]["aqm"]["limit"], "2bdp");
    }
}
