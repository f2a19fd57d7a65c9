//! `[[flows]] prague_cwnd_mode` (Linux tcp_prague.c 0.7 module parameter) and the TSO host keys
//! `tso` / `nic_rate`: accepted values and the errors for the others.

mod common;
use common::parse_err;

use l4s_sim::Scenario;

fn scenario(cc: &str, extra: &str) -> String {
    format!(
        r#"
duration = "4s"
[link]
rate = "10mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "{cc}"
rtt = "5ms"
{extra}
[[flows]]
cc = "cubic"
rtt = "5ms"
"#
    )
}

#[test]
fn accepts_the_three_linux_values() {
    for m in 0..=2 {
        let s = scenario("prague", &format!("prague_cwnd_mode = {m}"));
        Scenario::from_toml_str(&s).unwrap_or_else(|e| panic!("mode {m}: {e}"));
    }
}

#[test]
fn out_of_range_mode_names_the_field_and_the_values() {
    let msg = parse_err(&scenario("prague", "prague_cwnd_mode = 3"));
    assert!(msg.starts_with("flows[0].prague_cwnd_mode: "), "{msg}");
    assert!(msg.contains('3') && msg.contains("0 (window)"), "{msg}");
}

#[test]
fn mode_on_another_cc_is_refused() {
    let msg = parse_err(&scenario("dctcp", "prague_cwnd_mode = 1"));
    assert!(msg.starts_with("flows[0].prague_cwnd_mode: "), "{msg}");
    assert!(msg.contains("prague"), "{msg}");
}

#[test]
fn nic_rate_needs_tso_and_a_sane_rate() {
    let msg = parse_err(&scenario("prague", "nic_rate = \"1gbit\""));
    assert!(msg.starts_with("flows[0].nic_rate: "), "{msg}");
    assert!(msg.contains("tso = true"), "{msg}");
    let ok = scenario("prague", "tso = true\nnic_rate = \"10gbit\"");
    Scenario::from_toml_str(&ok).unwrap_or_else(|e| panic!("{e}"));
    let msg = parse_err(&scenario("prague", "tso = true\nnic_rate = \"1kbit\""));
    assert!(msg.starts_with("flows[0].nic_rate: "), "{msg}");
}
