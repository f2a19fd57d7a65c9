//! `[[flows]] gro` / `rx_usecs` / `rx_frames` (the GRO receiver host): accepted values, the
//! errors for the others, and CE feedback that stays exact when GRO merges segments.

mod common;
use common::parse_err;

use l4s_sim::{run_toml, Scenario};

fn scenario(extra: &str) -> String {
    format!(
        r#"
seed = 2
duration = "3s"
[link]
rate = "200mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "10ms"
{extra}
"#
    )
}

#[test]
fn gro_keys_are_checked_by_name() {
    Scenario::from_toml_str(&scenario("gro = true\nrx_usecs = \"50us\"\nrx_frames = 64"))
        .unwrap_or_else(|e| panic!("{e}"));
    let msg = parse_err(&scenario("rx_usecs = \"50us\""));
    assert!(msg.starts_with("flows[0].rx_usecs: "), "{msg}");
    assert!(msg.contains("gro = true"), "{msg}");
    let msg = parse_err(&scenario("rx_frames = 4"));
    assert!(msg.starts_with("flows[0].rx_frames: "), "{msg}");
    let msg = parse_err(&scenario("gro = true\nrx_usecs = \"5ms\""));
    assert!(msg.starts_with("flows[0].rx_usecs: "), "{msg}");
    assert!(msg.contains("4095us"), "{msg}");
    let msg = parse_err(&scenario("gro = true\nrx_frames = 0"));
    assert!(msg.starts_with("flows[0].rx_frames: "), "{msg}");
    assert!(msg.contains("[1, 65535]"), "{msg}");
    let cbr = "duration = \"1s\"\n[link]\nrate = \"10mbit\"\n[[flows]]\ncc = \"cbr\"\nrtt = \"5ms\"\nrate = \"1mbit\"\ngro = true\n";
    let msg = parse_err(cbr);
    assert!(msg.starts_with("flows[0].gro: "), "{msg}");
}

/// (CE marks the sender counted, L-queue marks) for one run.
fn marks(extra: &str) -> (u64, u64) {
    let r = run_toml(&scenario(extra)).unwrap();
    let s: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    let ce = s["flows"][0]["ce_marks"].as_u64().unwrap();
    let q = s["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "L")
        .unwrap()["marks"]
        .as_u64()
        .unwrap();
    (ce, q)
}

#[test]
fn ce_feedback_stays_exact_with_gro() {
    // 200 Mb/s: a packet every 60 µs, so a 250 µs window merges up to 5 segments; CE
    // segments merge only with CE ones and the receiver adds every one to r.cep. The sender
    // counts the marks the queue made, less those still in flight at the end.
    for extra in ["", "gro = true\nrx_usecs = \"250us\""] {
        let (ce, q) = marks(extra);
        assert!(q > 100, "{extra}: {q} marks");
        assert!(
            ce <= q && q - ce <= 20,
            "{extra}: counted {ce}, queue marked {q}"
        );
    }
}
