//! Mahimahi trace links deliver the trace's rate, and count unused opportunities exactly.

use l4s_sim::{run_in, Scenario};
use std::path::{Path, PathBuf};

fn overload(trace: &str, duration: &str, cbr: &str) -> String {
    format!(
        r#"
duration = "{duration}"
sample_interval = "100ms"
[link]
trace = "{trace}"
[aqm]
kind = "fifo"
limit = 20000
[[flows]]
cc = "cbr"
rtt = "20ms"
rate = "{cbr}"
start_jitter = "0s"  # the queue is busy from t = 0 (goodput = capacity)
"#
    )
}

fn summary(dir: &Path, toml: &str) -> serde_json::Value {
    let s = Scenario::from_toml_str(toml).unwrap();
    let r = run_in(&s, dir).unwrap();
    serde_json::from_str(&r.summary_json).unwrap()
}

#[test]
fn synthetic_trace_delivers_its_rate() {
    // 100 ms period, 500 opportunities bunched irregularly: 500 * 1504 B * 8 / 0.1 s
    // = 60.16 Mb/s. Under a 90 Mb/s CBR overload the queue never empties, so goodput =
    // capacity (in payload-agnostic bytes: packets may span opportunities).
    let dir = std::env::temp_dir().join(format!("l4s-sim-trace-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    let mut n = 0;
    for ms in 1..=100u32 {
        // 0..=9 opportunities per ms, varying, summing to 500 over the period.
        let k = (ms * 7 % 10) as usize;
        for _ in 0..k {
            text.push_str(&format!("{ms}\n"));
            n += 1;
        }
    }
    assert_eq!(n, 450);
    for _ in 0..50 {
        text.push_str("100\n");
    }
    std::fs::write(dir.join("syn.down"), &text).unwrap();
    let v = summary(&dir, &overload("syn.down", "3s", "90mbit"));
    let cap = v["link"]["capacity_mbps"].as_f64().unwrap();
    assert!((cap - 60.16).abs() < 1e-6, "{cap}");
    let tput = v["flows"][0]["tput_mbps"].as_f64().unwrap();
    assert!((tput / 60.16 - 1.0).abs() < 0.01, "{tput}");
    assert_eq!(v["link"]["unused_txops"].as_u64().unwrap(), 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unused_opportunities_are_counted() {
    // Trace "1": one 1504 B opportunity per ms (opportunities at 1, 2, 3, ... ms). CBR of
    // 1504 B every 2 ms (6.016 Mb/s) from 0: the packet of 0 ms leaves at 1 ms, the one of
    // 2k ms at 2k ms. Used: 1, 2, 4, ..., 1000 ms; wasted: 3, 5, ..., 999 ms = 499.
    let dir = std::env::temp_dir().join(format!("l4s-sim-unused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("one.down"), "1\n").unwrap();
    let toml = r#"
duration = "1s"
[link]
trace = "one.down"
[aqm]
kind = "fifo"
[[flows]]
cc = "cbr"
rtt = "20ms"
rate = "6.016mbit"
packet_size = 1504
start_jitter = "0s"  # packets at exactly 2k ms
"#;
    let v = summary(&dir, toml);
    assert_eq!(v["link"]["unused_txops"].as_u64().unwrap(), 499);
    std::fs::remove_dir_all(&dir).ok();
}

/// The shared traces live beside the checkout (CI: ../shared/traces from the repo root);
/// `L4SLAB_TRACES` points elsewhere (e.g. for a worktree not beside shared/).
fn shared_traces() -> Option<PathBuf> {
    let d = match std::env::var_os("L4SLAB_TRACES") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"),
    };
    d.join("TMobile-LTE-short.down").exists().then_some(d)
}

#[test]
fn real_tmobile_trace_delivers_its_mean_rate() {
    let Some(dir) = shared_traces() else {
        eprintln!("skipped: ../shared/traces not present");
        return;
    };
    let text = std::fs::read_to_string(dir.join("TMobile-LTE-short.down")).unwrap();
    let data = l4s_core::link::MahimahiTraceData::parse(&text).unwrap();
    // README: 194846 lines over 140 s, 16.75 Mb/s mean.
    assert_eq!(data.opportunities(), 194_846);
    let mean = data.mean_rate_bps() / 1e6;
    assert!((mean - 16.75).abs() < 0.01, "{mean}");
    // One full period under a 40 Mb/s overload: goodput = the trace's mean rate ±1%.
    let period = format!("{}ms", data.period_ms());
    let v = summary(&dir, &overload("TMobile-LTE-short.down", &period, "40mbit"));
    let tput = v["flows"][0]["tput_mbps"].as_f64().unwrap();
    assert!((tput / mean - 1.0).abs() < 0.01, "{tput} vs {mean}");
}
