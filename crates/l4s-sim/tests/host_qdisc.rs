//! `[[flows]] qdisc`: Prague runs over fq by default (tcp_prague.c asks for the fq qdisc),
//! every other CC over no pacing qdisc; an explicit value overrides either default.

use l4s_sim::run_toml;

/// The run's summary.json without the echo of the scenario text.
fn summary(cc: &str, extra: &str) -> serde_json::Value {
    let ecn = if cc == "prague" { "ecn = \"l4s\"" } else { "" };
    let toml = format!(
        r#"
duration = "3s"
[link]
rate = "5mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "{cc}"
rtt = "30ms"
{ecn}
{extra}
[[flows]]
cc = "cubic"
rtt = "30ms"
"#
    );
    let out = run_toml(&toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let mut v: serde_json::Value = serde_json::from_str(&out.summary_json).expect("json");
    v.as_object_mut().expect("object").remove("scenario");
    v
}

#[test]
fn prague_defaults_to_fq_and_the_others_to_none() {
    let prague = summary("prague", "");
    assert_eq!(prague, summary("prague", "qdisc = \"fq\""));
    assert_ne!(prague, summary("prague", "qdisc = \"none\""));
    let cubic = summary("cubic", "");
    assert_eq!(cubic, summary("cubic", "qdisc = \"none\""));
    // Under fq even Cubic is paced (at tcp_update_pacing_rate), so its run changes.
    assert_ne!(cubic, summary("cubic", "qdisc = \"fq\""));
}

#[test]
fn summary_records_each_flows_effective_host() {
    // Defaults resolved: Prague over fq, Cubic over none, no TSO or GRO.
    let s = summary("prague", "");
    let host = |s: &serde_json::Value, i: usize| s["flows"][i]["host"].clone();
    assert_eq!(
        host(&s, 0),
        serde_json::json!({"qdisc": "fq", "tso": false, "gro": false})
    );
    assert_eq!(
        host(&s, 1),
        serde_json::json!({"qdisc": "none", "tso": false, "gro": false})
    );
    // Set values, with the TSO NIC rate and GRO moderation defaults filled in.
    let s = summary("cubic", "qdisc = \"fq\"\ntso = true\ngro = true");
    assert_eq!(
        host(&s, 0),
        serde_json::json!({"qdisc": "fq", "tso": true, "gro": true, "nic_rate_mbps": 1000.0,
                           "rx_usecs": 16.0, "rx_frames": 32})
    );
}
