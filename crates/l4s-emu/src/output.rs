//! The emulator's raw output: per direction, the simulator's result columns as JSON
//! (`raw/uplink.json`, `raw/downlink.json`), which `l4slab emulate` turns into the standard run
//! directory with the simulator's own writers.

use l4s_sim::results::RunResults;
use serde_json::{json, Value};

/// Lateness figures of one direction, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatenessUs {
    /// Packets measured.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

fn num(x: f64) -> Value {
    // JSON has no NaN: an undefined figure is null (read back as NaN).
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn fcol(v: &[f64]) -> Value {
    Value::Array(v.iter().map(|&x| num(x)).collect())
}

/// One direction's results as the JSON object `l4slab emulate` reads.
pub fn direction_json(
    run: &RunResults,
    flow_keys: &[String],
    lateness: LatenessUs,
    malformed: u64,
) -> Value {
    let s = &run.samples;
    let f = &run.flows;
    let summary: Value = serde_json::from_str(&run.summary_json).unwrap_or(Value::Null);
    let packets = run.packets.as_ref().map(|p| {
        json!({
            "t_s": fcol(&p.t_s), "flow": p.flow, "queue": p.queue,
            "sojourn_ms": fcol(&p.sojourn_ms), "verdict": p.verdict,
        })
    });
    json!({
        "queue_names": run.queue_names,
        "flow_cc": run.flow_cc,
        "flow_class": run.flow_class,
        "flow_keys": flow_keys,
        "samples": {
            "t_s": fcol(&s.t_s), "queue": s.queue, "backlog_pkts": s.backlog_pkts,
            "backlog_bytes": s.backlog_bytes, "sojourn_ms": fcol(&s.sojourn_ms),
            "marks": s.marks, "drops": s.drops, "p_prime": fcol(&s.p_prime),
            "p_c": fcol(&s.p_c), "p_cl": fcol(&s.p_cl),
        },
        "flows": {
            "t_s": fcol(&f.t_s), "flow": f.flow, "delivered_bytes": f.delivered_bytes,
            "tput_mbps": fcol(&f.tput_mbps), "cwnd_pkts": fcol(&f.cwnd_pkts),
            "srtt_ms": fcol(&f.srtt_ms), "pacing_mbps": fcol(&f.pacing_mbps),
            "ce_acked": f.ce_acked,
        },
        "packets": packets,
        "summary": summary,
        "lateness_us": {
            "count": lateness.count, "p50": num(lateness.p50), "p99": num(lateness.p99),
            "max": num(lateness.max),
        },
        "malformed": malformed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_becomes_null_and_columns_keep_their_length() {
        let mut r = RunResults {
            summary_json: "{\"jain\": 1.0}".into(),
            ..Default::default()
        };
        r.samples.t_s = vec![0.0, 0.016];
        r.samples.p_c = vec![f64::NAN, 0.5];
        let v = direction_json(&r, &[], LatenessUs::default(), 3);
        assert_eq!(v["samples"]["t_s"].as_array().map(Vec::len), Some(2));
        assert_eq!(v["samples"]["p_c"][0], Value::Null);
        assert_eq!(v["samples"]["p_c"][1], 0.5);
        assert_eq!(v["summary"]["jain"], 1.0);
        assert_eq!(v["malformed"], 3);
    }
}
