//! Loopback tests of the emulator's scenario-mode applications (no root): `--app workload`
//! runs every planned transfer at its arrival and writes one completion row each;
//! `--app probe` against `-s --app probe` answers every request; a bad plan is one error.

mod common;

use std::process::Command;

use common::*;
use l4s_flow::clock::monotonic_ns;

fn run_app(
    port: u16,
    app: &str,
    plan: &serde_json::Value,
    dir: &std::path::Path,
) -> (Option<i32>, String) {
    let file = dir.join(format!("{app}.plan.json"));
    std::fs::write(&file, plan.to_string()).expect("plan");
    let out = Command::new(BIN)
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--no-rt",
            "-q",
            "--app",
            app,
        ])
        .arg("--plan")
        .arg(&file)
        .env("L4SLAB_FLOW_DIR", dir)
        .env("L4SLAB_T0_NS", monotonic_ns().to_string())
        .output()
        .expect("run client");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn csv_rows(dir: &std::path::Path, stem: &str) -> Vec<Vec<f64>> {
    let f = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(Result::ok)
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{stem}-"))
        })
        .unwrap_or_else(|| panic!("no {stem}-<pid>.csv"));
    let text = std::fs::read_to_string(f.path()).expect("csv");
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(|x| x.parse().expect("number")).collect())
        .collect()
}

#[test]
fn workload_runs_every_transfer_and_records_its_completion() {
    let dir = scratch("workload");
    let srv = Server::start("127.0.0.1", &[]);
    let plan = serde_json::json!({"seed": 1, "mss": null, "transfers": [
        {"flow": 3, "workload": 0, "start_ns": 100_000_000u64, "bytes": 200_000, "cc": "cubic", "ecn": null},
        {"flow": 1, "workload": 0, "start_ns": 50_000_000u64, "bytes": 1000, "cc": "prague", "ecn": "l4s"},
        {"flow": 2, "workload": 1, "start_ns": 60_000_000u64, "bytes": 50_000, "cc": "reno", "ecn": null},
    ]});
    let (code, err) = run_app(srv.port, "workload", &plan, &dir);
    // It ends by itself once every transfer is acknowledged.
    assert_eq!(code, Some(0), "{err}");
    let mut rows = csv_rows(&dir, "fct");
    rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let want = [
        (1.0, 0.0, 1000.0, 0.05),
        (2.0, 1.0, 50_000.0, 0.06),
        (3.0, 0.0, 200_000.0, 0.1),
    ];
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (r, w) in rows.iter().zip(want) {
        assert_eq!((r[0], r[1], r[2], r[3]), w, "{rows:?}");
        // From its start to the last ACK: well below a retransmission timeout on loopback;
        // the start is at or after the arrival.
        assert!(r[4] > 0.0 && r[4] < 1.0 && r[5] >= 0.0, "{rows:?}");
    }
}

#[test]
fn probe_answers_every_request_once() {
    let dir = scratch("probe");
    let srv = Server::start("127.0.0.1", &["--app", "probe"]);
    // A request every 20 ms in [0, 300 ms): 15 of them.
    let plan = serde_json::json!({"flow": 7, "probe": {
        "rtt": "1ms", "interval": "20ms", "start": "0s", "stop": "300ms", "ecn": "l4s"}});
    let (code, err) = run_app(srv.port, "probe", &plan, &dir);
    assert_eq!(code, Some(0), "{err}");
    let rows = csv_rows(&dir, "probes");
    assert_eq!(rows.len(), 15, "{rows:?}");
    for (k, r) in rows.iter().enumerate() {
        // Sent at its instant or after (the wake-up), before the next one's.
        let at = k as f64 * 0.02;
        assert!(r[0] >= at && r[0] < at + 0.02, "{rows:?}");
        // Loopback: an answer before the next request leaves.
        assert!(r[1] > 0.0 && r[1] < 20.0, "{rows:?}");
    }
    drop(srv);
}

#[test]
fn a_bad_plan_is_one_error_naming_the_flag() {
    let dir = scratch("badplan");
    let (code, err) = run_app(9, "probe", &serde_json::json!({"flow": 1}), &dir);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--plan") && err.contains("missing field `probe`"),
        "{err}"
    );
}
