//! summary.json's per-queue sojourn figures against the exact ones computed from the same run's
//! per-packet records: the mean is exact, p50/p95/p99 are within the histogram's stated bound.

use l4s_sim::histogram::RELATIVE_ERROR;
use l4s_sim::recorder::percentile;
use l4s_sim::run_toml;

#[test]
fn summary_sojourns_match_the_per_packet_records_within_the_bound() {
    // DualPI2 with an L and a C queue, both busy, 3 s, warmup 1 s, per-packet records on.
    let r = run_toml(
        r#"
seed = 5
duration = "3s"
warmup = "1s"
[link]
rate = "40mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "30ms"
count = 2
[output]
packets = true
"#,
    )
    .unwrap();
    let p = r.packets.as_ref().unwrap();
    let summary: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    for (qi, name) in r.queue_names.iter().enumerate() {
        // The summary counts packets that left the queue (verdict pass/marked) at or after
        // warmup; sojourns come back from ms to ns exactly enough for the comparison.
        let mut ns: Vec<u64> = (0..p.t_s.len())
            .filter(|&i| p.queue[i] as usize == qi && p.verdict[i] != 2 && p.t_s[i] >= 1.0)
            .map(|i| (p.sojourn_ms[i] * 1e6).round() as u64)
            .collect();
        ns.sort_unstable();
        assert!(ns.len() > 1000, "queue {name}: {} packets", ns.len());
        let q = summary["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["name"] == name.as_str())
            .unwrap();
        let mean = ns.iter().map(|&x| x as f64).sum::<f64>() / ns.len() as f64 / 1e6;
        let got = q["sojourn_ms"]["mean"].as_f64().unwrap();
        assert!(
            (got - mean).abs() <= 1e-9 * mean,
            "{name} mean {got} vs {mean}"
        );
        for (key, qq) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
            let want = percentile(&ns, qq) / 1e6;
            let got = q["sojourn_ms"][key].as_f64().unwrap();
            assert!(
                (got - want).abs() <= want * RELATIVE_ERROR + 1e-9,
                "{name} {key}: {got} vs exact {want}"
            );
        }
    }
}
