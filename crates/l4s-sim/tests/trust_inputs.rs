//! Inputs that used to be accepted silently or checked only by `run`: ambiguous rate units,
//! a zero rate, flows that start after the run ends, and `check` on broken trace files.

use l4s_sim::Scenario;
use std::process::Command;

const BASE: &str = r#"
duration = "1s"
[link]
rate = "10mbit"
[aqm]
kind = "fifo"
[[flows]]
cc = "cbr"
rtt = "20ms"
rate = "1mbit"
"#;

fn err(toml: &str) -> String {
    match Scenario::from_toml_str(toml) {
        Ok(_) => panic!("accepted:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bps_link_rate_is_ambiguous_not_megabytes() {
    let e = err(&BASE.replace("\"10mbit\"", "\"50Mbps\""));
    assert!(e.starts_with("link.rate: \"50Mbps\" is ambiguous"), "{e}");
    assert!(e.contains("\"50mbit\"") && e.contains("\"50mbyte\""), "{e}");
    // The spellings that are not ambiguous mean megabits.
    for ok in ["\"50Mbit/s\"", "\"50Mb/s\"", "\"50Mbit\""] {
        let s = Scenario::from_toml_str(&BASE.replace("\"10mbit\"", ok)).unwrap();
        assert_eq!(s.link.rate.unwrap().bps(), 50_000_000, "{ok}");
    }
}

#[test]
fn zero_rate_is_not_echoed_as_another_spelling() {
    let e = err(&BASE.replace("\"10mbit\"", "\"0mbit\""));
    assert!(
        e.starts_with("link.rate: is zero; expected a rate > 0"),
        "{e}"
    );
    assert!(!e.contains("0bit\""), "{e}");
}

#[test]
fn flow_starting_after_the_end_is_refused() {
    let e = err(&BASE.replace("rtt = \"20ms\"", "rtt = \"20ms\"\nstart = \"2s\""));
    assert!(
        e.starts_with("flows[0].start: \"2s\" is not before the end"),
        "{e}"
    );
    assert!(e.contains("duration \"1s\""), "{e}");
    let e = err(&BASE.replace("rtt = \"20ms\"", "rtt = \"20ms\"\nstart = \"1s\""));
    assert!(
        e.starts_with("flows[0].start"),
        "start == duration sends nothing: {e}"
    );
    assert!(Scenario::from_toml_str(
        &BASE.replace("rtt = \"20ms\"", "rtt = \"20ms\"\nstart = \"999ms\"")
    )
    .is_ok());
}

fn check(dir: &std::path::Path, trace: Option<(&str, &str)>) -> (bool, String) {
    let link = match trace {
        Some((name, body)) => {
            std::fs::write(dir.join(name), body).unwrap();
            format!("trace = \"{name}\"")
        }
        None => "trace = \"missing.down\"".to_string(),
    };
    let sc = dir.join("s.toml");
    std::fs::write(&sc, BASE.replace("rate = \"10mbit\"", &link)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
        .args(["check", sc.to_str().unwrap()])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn check_refuses_what_run_refuses() {
    let d = std::env::temp_dir().join(format!("l4s-sim-check-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let (ok, out) = check(&d, None);
    assert!(
        !ok && out.contains("link.trace") && out.contains("missing.down"),
        "{out}"
    );
    let (ok, out) = check(&d, Some(("empty.down", "")));
    assert!(
        !ok && out.contains("link.trace") && out.contains("empty"),
        "{out}"
    );
    let (ok, out) = check(&d, Some(("dec.down", "5\n3\n")));
    assert!(
        !ok && out.contains("link.trace") && out.contains("line 2"),
        "{out}"
    );
    let (ok, out) = check(&d, Some(("good.down", "1\n2\n3\n")));
    assert!(ok && out.contains(": ok"), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    std::fs::remove_dir_all(&d).ok();
}

/// CBR at twice the link rate into a 20-packet FIFO: drops all along the run.
fn overload(warmup: &str) -> serde_json::Value {
    let t = format!(
        "duration = \"2s\"\nwarmup = \"{warmup}\"\n[link]\nrate = \"10mbit\"\n[aqm]\nkind = \
         \"fifo\"\nlimit = 20\n[[flows]]\ncc = \"cbr\"\nrtt = \"20ms\"\nrate = \"20mbit\"\n"
    );
    let r = l4s_sim::run_toml(&t).unwrap();
    serde_json::from_str(&r.summary_json).unwrap()
}

#[test]
fn summary_names_the_window_of_every_block() {
    let none = overload("0s");
    let half = overload("1s");
    let w = &half["windows"];
    assert_eq!(w["after_warmup_s"], serde_json::json!([1.0, 2.0]));
    assert_eq!(w["whole_run_s"], serde_json::json!([0.0, 2.0]));
    for k in ["link", "flows", "queues", "jain"] {
        assert_eq!(w[k], "after_warmup", "{k}");
    }
    assert_eq!(w["packets"], "whole_run");
    // The packets block is the whole run: the same with or without a warm-up (same seed).
    assert_eq!(none["packets"], half["packets"]);
    // Queue and flow drops exclude the warm-up: with half the run as warm-up about half the
    // drops remain (the overload is stationary after the first few ms: 10 of 20 Mb/s dropped,
    // ~833 packets/s of 1500 B).
    let q_all = none["queues"][0]["drops"].as_u64().unwrap() as f64;
    let q_half = half["queues"][0]["drops"].as_u64().unwrap() as f64;
    assert_eq!(
        none["packets"]["aqm_dropped"].as_u64().unwrap() as f64,
        q_all
    );
    assert!((q_half / q_all - 0.5).abs() < 0.02, "{q_half} of {q_all}");
    assert_eq!(half["flows"][0]["drops"].as_u64().unwrap() as f64, q_half);
}

#[test]
fn messages_name_the_file_and_no_rust_types() {
    let e = err("duration = \"1s\"\nflows = [1]\n[link]\nrate = \"10mbit\"\n");
    assert!(
        e.starts_with("flows[0]") && e.contains("expected a table"),
        "{e}"
    );
    assert!(!e.contains("struct") && !e.contains("FlowConfig"), "{e}");
    // An all-zeros looping trace: the message names the file.
    let d = std::env::temp_dir().join(format!("l4s-sim-zeros-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("zeros.down"), "0\n0\n").unwrap();
    let s = Scenario::from_toml_str(&BASE.replace("rate = \"10mbit\"", "trace = \"zeros.down\""))
        .unwrap();
    let e = l4s_sim::run_in(&s, &d).unwrap_err().to_string();
    assert!(e.starts_with("link.trace: zeros.down:"), "{e}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn summary_durations_are_exact() {
    let r = l4s_sim::run_toml(&BASE.replace("\"1s\"", "\"30s\"")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    assert_eq!(v["duration_s"].as_f64(), Some(30.0));
}
