//! Bad scenario input: every message names the field path and what is allowed; inputs that
//! used to be accepted silently (ambiguous rate units, a zero rate, flows that start after the
//! run ends) and `check` on broken trace files.

mod common;
use common::parse_err;

use l4s_sim::{Scenario, SimError};
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

fn assert_names(msg: &str, path: &str, words: &[&str]) {
    assert!(
        msg.starts_with(&format!("{path}: ")),
        "expected path {path}: {msg}"
    );
    for w in words {
        assert!(msg.contains(w), "expected {w:?} in: {msg}");
    }
}

#[test]
fn base_scenario_is_valid() {
    let s = Scenario::from_toml_str(BASE).unwrap();
    assert_eq!(s.n_flows(), 1);
    assert_eq!(s.seed, 1);
    assert_eq!(s.sample_period(), l4s_core::Nanos::from_ms(16));
}

#[test]
fn negative_aqm_duration_names_aqm_field() {
    let t = BASE.replace(
        "kind = \"fifo\"",
        "kind = \"dualpi2\"\nstep_thresh = \"-1ms\"",
    );
    assert_names(
        &parse_err(&t),
        "aqm.step_thresh",
        &["\"-1ms\"", "negative", "duration"],
    );
}

#[test]
fn out_of_range_aqm_parameter_names_it_and_the_range() {
    let t = BASE.replace("kind = \"fifo\"", "kind = \"fifo\"\nlimit = 0");
    assert_names(&parse_err(&t), "aqm.limit", &["0", ">= 1"]);
}

#[test]
fn parameter_of_another_aqm_is_unknown_with_allowed_list() {
    let t = BASE.replace("kind = \"fifo\"", "kind = \"fifo\"\nstep_thresh = \"1ms\"");
    assert_names(
        &parse_err(&t),
        "aqm.step_thresh",
        &["unknown field", "limit"],
    );
}

#[test]
fn unknown_aqm_kind_lists_kinds() {
    let t = BASE.replace("kind = \"fifo\"", "kind = \"red\"");
    assert_names(&parse_err(&t), "aqm.kind", &["\"red\"", "fifo", "dualpi2"]);
}

#[test]
fn second_flow_zero_rtt_names_index() {
    let t = format!("{BASE}\n[[flows]]\ncc = \"cbr\"\nrtt = \"0s\"\nrate = \"1mbit\"\n");
    assert_names(&parse_err(&t), "flows[1].rtt", &["> 0"]);
}

#[test]
fn bad_enum_value_lists_allowed_values() {
    let t = BASE.replace("rate = \"1mbit\"", "rate = \"1mbit\"\necn = \"maybe\"");
    assert_names(
        &parse_err(&t),
        "flows[0].ecn",
        &["maybe", "none", "classic", "accecn", "l4s"],
    );
}

#[test]
fn unknown_top_level_and_nested_fields() {
    assert_names(
        &parse_err(&format!("colour = 1\n{BASE}")),
        "colour",
        &["unknown field", "duration"],
    );
    let t = BASE.replace("rate = \"10mbit\"", "rate = \"10mbit\"\nspeed = 3");
    assert_names(&parse_err(&t), "link.speed", &["unknown field", "trace"]);
}

#[test]
fn missing_required_field() {
    let t = BASE.replace("duration = \"1s\"", "");
    assert_names(&parse_err(&t), "duration", &["missing"]);
    let t = BASE.replace("rtt = \"20ms\"", "");
    assert_names(&parse_err(&t), "flows[0].rtt", &["missing"]);
}

#[test]
fn rate_without_unit() {
    let t = BASE.replace("rate = \"10mbit\"", "rate = \"10\"");
    assert_names(&parse_err(&t), "link.rate", &["missing unit", "mbit"]);
    let t = BASE.replace("rate = \"10mbit\"", "rate = 10");
    assert_names(
        &parse_err(&t),
        "link.rate",
        &["integer", "string", "\"50mbit\""],
    );
}

#[test]
fn link_needs_exactly_one_of_rate_and_trace() {
    let t = BASE.replace("rate = \"10mbit\"", "rate = \"10mbit\"\ntrace = \"x.down\"");
    assert_names(&parse_err(&t), "link", &["exactly one"]);
    let t = BASE.replace("rate = \"10mbit\"", "loss = 0.5");
    assert_names(&parse_err(&t), "link", &["neither"]);
    let t = BASE.replace("rate = \"10mbit\"", "rate = \"10mbit\"\nloss = 1.5");
    assert_names(&parse_err(&t), "link.loss", &["1.5", "[0, 1]"]);
    let t = BASE.replace(
        "rate = \"10mbit\"",
        "rate = \"10mbit\"\nsteps = [{at = \"2s\", rate = \"1mbit\"}, {at = \"1s\", rate = \"2mbit\"}]",
    );
    assert_names(&parse_err(&t), "link.steps[1].at", &["strictly increase"]);
}

#[test]
fn cbr_needs_a_rate_and_tcp_fields_are_refused() {
    let t = BASE.replace("rate = \"1mbit\"", "");
    assert_names(&parse_err(&t), "flows[0].rate", &["missing", "cbr"]);
    let t = BASE.replace("rate = \"1mbit\"", "rate = \"1mbit\"\nbytes = 1000");
    assert_names(&parse_err(&t), "flows[0].bytes", &["TCP"]);
}

#[test]
fn absurd_sampling_is_refused() {
    // 1 s / 10 ns = 1e8 samples > 1e7.
    let t = format!("sample_interval = \"10ns\"\n{BASE}");
    assert_names(
        &parse_err(&t),
        "sample_interval",
        &["100000000 samples", "at most"],
    );
}

#[test]
fn warmup_must_be_shorter_than_duration() {
    let t = format!("warmup = \"1s\"\n{BASE}");
    assert_names(&parse_err(&t), "warmup", &["duration"]);
}

#[test]
fn syntax_errors_are_reported_as_such() {
    let e = Scenario::from_toml_str("duration = ").unwrap_err();
    assert!(matches!(e, SimError::Syntax(_)), "{e}");
    assert!(e.to_string().starts_with("scenario syntax"), "{e}");
}

#[test]
fn json_input_reports_the_same_paths() {
    let j = r#"{"duration": "1s", "link": {"rate": "10mbit"}, "aqm": {"kind": "fifo"},
               "flows": [{"cc": "cbr", "rtt": "20ms", "rate": "1mbit"},
                         {"cc": "cbr", "rtt": "-5ms", "rate": "1mbit"}]}"#;
    let e = Scenario::from_json_str(j).unwrap_err().to_string();
    assert_names(&e, "flows[1].rtt", &["negative"]);
}

#[test]
fn trace_file_problems_name_link_trace() {
    let dir = std::env::temp_dir().join(format!("l4s-sim-trace-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.down"), "1\n2\nfast\n").unwrap();
    let t = BASE.replace("rate = \"10mbit\"", "trace = \"bad.down\"");
    let s = Scenario::from_toml_str(&t).unwrap();
    let e = l4s_sim::run_in(&s, &dir).unwrap_err().to_string();
    assert_names(&e, "link.trace", &["line 3", "fast"]);
    let t = BASE.replace("rate = \"10mbit\"", "trace = \"missing.down\"");
    let s = Scenario::from_toml_str(&t).unwrap();
    let e = l4s_sim::run_in(&s, &dir).unwrap_err().to_string();
    assert_names(&e, "link.trace", &["cannot read", "missing.down"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn json_scenario_runs_like_its_toml_twin() {
    let toml = BASE.replace("rate = \"1mbit\"", "rate = \"1mbit\"\necn = \"l4s\"");
    let json = r#"{"duration": "1s", "link": {"rate": "10mbit"}, "aqm": {"kind": "fifo"},
                   "flows": [{"cc": "cbr", "rtt": "20ms", "rate": "1mbit", "ecn": "l4s"}]}"#;
    let dir = std::env::temp_dir();
    let a = l4s_sim::run_toml_in(&toml, &dir).unwrap();
    let b = l4s_sim::run_json_in(json, &dir).unwrap();
    assert_eq!(a.totals, b.totals);
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(a.flow_class, vec!["L4S".to_string()]);
}

#[test]
fn unknown_kernel_profile_names_the_field_and_the_profiles() {
    let msg = parse_err(&BASE.replace("kind = \"fifo\"", "kind = \"dualpi2\"\nprofile = \"bsd\""));
    assert_names(&msg, "aqm.profile", &["mainline", "l4steam"]);
}

// --- inputs that were accepted silently or checked only by `run` ---
#[test]
fn bps_link_rate_is_ambiguous_not_megabytes() {
    let e = parse_err(&BASE.replace("\"10mbit\"", "\"50Mbps\""));
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
    let e = parse_err(&BASE.replace("\"10mbit\"", "\"0mbit\""));
    assert!(
        e.starts_with("link.rate: is zero; expected a rate > 0"),
        "{e}"
    );
    assert!(!e.contains("0bit\""), "{e}");
}

#[test]
fn flow_starting_after_the_end_is_refused() {
    let e = parse_err(&BASE.replace("rtt = \"20ms\"", "rtt = \"20ms\"\nstart = \"2s\""));
    assert!(
        e.starts_with("flows[0].start: \"2s\" is not before the end"),
        "{e}"
    );
    assert!(e.contains("duration \"1s\""), "{e}");
    let e = parse_err(&BASE.replace("rtt = \"20ms\"", "rtt = \"20ms\"\nstart = \"1s\""));
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
    let e = parse_err("duration = \"1s\"\nflows = [1]\n[link]\nrate = \"10mbit\"\n");
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

#[test]
fn dualpi2_duration_ranges_read_as_durations_not_raw_u32_counts() {
    // Linux keeps tupdate in u32 ns (at most 4.294967295 s) and target in u32 us.
    let toml = BASE.replace("kind = \"fifo\"", "kind = \"dualpi2\"\ntupdate = \"5000s\"");
    let msg = parse_err(&toml);
    assert!(msg.contains("aqm.tupdate"), "{msg}");
    assert!(msg.contains("[1us, 4.294s]"), "{msg}");
    assert!(!msg.contains("4294967295"), "{msg}");
}

#[test]
fn host_qdisc_lists_its_values_and_is_tcp_only() {
    let t = BASE.replace("rate = \"1mbit\"", "rate = \"1mbit\"\nqdisc = \"pfifo\"");
    assert_names(&parse_err(&t), "flows[0].qdisc", &["pfifo", "none", "fq"]);
    let t = BASE.replace("rate = \"1mbit\"", "rate = \"1mbit\"\nqdisc = \"fq\"");
    assert_names(&parse_err(&t), "flows[0].qdisc", &["TCP flows only"]);
    let t = BASE.replace(
        "cc = \"cbr\"\nrtt = \"20ms\"\nrate = \"1mbit\"",
        "cc = \"cubic\"\nrtt = \"20ms\"\nqdisc = \"fq\"",
    );
    assert!(Scenario::from_toml_str(&t).is_ok(), "{t}");
}
