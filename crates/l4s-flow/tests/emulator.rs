//! `l4s-flow` through the emulator (`l4s-emu`, two-namespace mode; root and /dev/net/tun):
//! exact bytes, ECT(1) kept across TUN and the emulated link, the link filled, and the per-flow
//! CSV of the emulator contract in the run directory.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{scratch, u, BIN};

/// The emulator binary: $L4SLAB_EMU_BIN, else the workspace's target/release/l4s-emu.
fn emu_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("L4SLAB_EMU_BIN") {
        return Some(PathBuf::from(p));
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/l4s-emu");
    p.is_file().then_some(p)
}

/// The emulator if this test may run; otherwise why not (a failure under
/// L4SLAB_REQUIRE_ROOT_TESTS=1, so that CI cannot skip it silently).
fn emulator_or_skip(test: &str) -> Option<PathBuf> {
    let mut missing = Vec::new();
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("root");
    }
    if !Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun");
    }
    let bin = emu_bin();
    if bin.is_none() {
        missing.push("the l4s-emu binary (cargo build --release -p l4s-emu)");
    }
    if missing.is_empty() {
        return bin;
    }
    let msg = format!("skipped {test}: needs {}", missing.join(", "));
    if std::env::var("L4SLAB_REQUIRE_ROOT_TESTS").as_deref() == Ok("1") {
        panic!("{msg} (L4SLAB_REQUIRE_ROOT_TESTS=1 turns this skip into a failure)");
    }
    eprintln!("{msg}");
    None
}

#[test]
fn prague_through_the_emulator_is_exact_keeps_ect1_and_fills_the_link() {
    let Some(emu) = emulator_or_skip("prague_through_the_emulator") else {
        return;
    };
    let dir = scratch("emu");
    let run_dir = dir.join("run");
    let json = dir.join("client.json");
    const N: u64 = 12_000_000;
    let client = format!(
        "sleep 0.3; exec {BIN} -c \"$L4SLAB_SERVER\" --cc prague -n {N} -q -i 0 --json {}",
        json.display()
    );
    let out = Command::new(&emu)
        .args(["--rate", "50mbit", "--delay", "10ms", "--quiet", "-o"])
        .arg(&run_dir)
        .args(["--server", &format!("{BIN} -s -1 -i 0 -q")])
        .args(["--", "sh", "-c", &client])
        .output()
        .expect("l4s-emu runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("client json")).expect("json");
    let s = &j["streams"][0];
    assert_eq!(u(s, "bytes_acked"), N);
    let rep = &s["receiver"];
    assert_eq!(u(rep, "delivered_bytes"), N);
    assert_eq!(u(rep, "bad_payload_pkts"), 0);
    // Every data datagram left as ECT(1) and arrived as ECT(1), or CE where an AQM marked it.
    assert_eq!(u(&s["data_ecn_sent"], "Ect1"), u(s, "data_pkts_sent"));
    assert_eq!(u(rep, "ect1_pkts") + u(rep, "ce_pkts"), u(rep, "data_pkts"));
    assert_eq!(u(rep, "not_ect_pkts") + u(rep, "ect0_pkts"), 0);
    // Goodput over the whole transfer (slow start included) against the link's goodput:
    // 50 Mbit/s × 1428 payload / 1500 IP bytes = 47.6 Mbit/s.
    let tput = s["tput_mbps"].as_f64().expect("tput");
    assert!(
        (0.85 * 47.6..=1.01 * 47.6).contains(&tput),
        "goodput {tput} Mbit/s"
    );
    // The emulator contract: the sender's samples land in the run directory.
    let csvs: Vec<_> = std::fs::read_dir(run_dir.join("flows"))
        .expect("flows dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(csvs.len(), 1, "{csvs:?}");
    let text = std::fs::read_to_string(&csvs[0]).expect("csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() > 50, "{} rows", rows.len());
    let t: Vec<f64> = rows.iter().map(|r| r[0].parse().expect("t_s")).collect();
    // t_s counts from the emulation's start (L4SLAB_T0_NS): the client starts after its 0.3 s sleep.
    assert!(t[0] >= 0.25 && t[0] < 2.0, "first t_s {}", t[0]);
    assert!(t.windows(2).all(|w| w[1] > w[0]));
    assert!(rows
        .iter()
        .all(|r| r[1].starts_with("udp ") && r[2] == "prague"));
    let last: u64 = rows.last().expect("row")[3].parse().expect("delivered");
    assert!((N / 2..=N).contains(&last), "last delivered {last}");
}
