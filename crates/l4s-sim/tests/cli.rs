//! The `l4s-sim` binary: writes the run directory; errors are one line with exit status 2.

use std::process::Command;

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("l4s-sim-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn run_writes_csv_and_summary() {
    let d = tmp("ok");
    let sc = d.join("s.toml");
    std::fs::write(
        &sc,
        "duration = \"200ms\"\n[link]\nrate = \"10mbit\"\n[aqm]\nkind = \"dualpi2\"\n\
         [[flows]]\ncc = \"cbr\"\nrtt = \"10ms\"\nrate = \"2mbit\"\necn = \"l4s\"\n\
         [output]\npackets = true\n",
    )
    .unwrap();
    let out = d.join("out");
    let st = Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
        .args(["run", sc.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(st.success());
    let samples = std::fs::read_to_string(out.join("samples.csv")).unwrap();
    assert!(samples.starts_with(
        "t_s,queue,backlog_pkts,backlog_bytes,sojourn_ms,marks,drops,p_prime,p_c,p_cl\n"
    ));
    // 200 ms / 16 ms = 12 samples × 2 queues (L, C) + header.
    assert_eq!(samples.lines().count(), 1 + 12 * 2);
    assert!(samples.lines().nth(1).unwrap().split(',').nth(1) == Some("L"));
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    assert_eq!(flows.lines().count(), 1 + 12);
    assert!(flows.lines().nth(1).unwrap().contains(",cbr,"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for k in [
        "l4slab_version",
        "seed",
        "duration_s",
        "warmup_s",
        "link",
        "flows",
        "queues",
        "jain",
    ] {
        assert!(v.get(k).is_some(), "summary.json lacks {k}");
    }
    assert!(out.join("packets.csv").exists());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_scenario_prints_one_line_and_exits_2() {
    let d = tmp("bad");
    let sc = d.join("bad.toml");
    std::fs::write(
        &sc,
        "duration = \"1s\"\n[link]\nrate = \"10mbit\"\n[[flows]]\ncc = \"cbr\"\nrtt = \"-3ms\"\nrate = \"1mbit\"\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
        .args([
            "run",
            sc.to_str().unwrap(),
            "-o",
            d.join("o").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("l4s-sim: error: flows[0].rtt: "), "{err}");
    let o = Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
        .args(["check", sc.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&d).ok();
}

/// `l4s-sim run -o DIR` reruns into its own run, refuses another run or foreign files, and
/// with --force replaces only its run files.
#[test]
fn run_refuses_a_directory_holding_something_else() {
    let d = tmp("outdir");
    let sc = d.join("s.toml");
    let text = "duration = \"100ms\"\n[link]\nrate = \"10mbit\"\n[aqm]\nkind = \"fifo\"\n\
                [[flows]]\ncc = \"cbr\"\nrtt = \"10ms\"\nrate = \"2mbit\"\n";
    std::fs::write(&sc, text).unwrap();
    let out = d.join("out");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", sc.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
            .args(&args)
            .output()
            .unwrap()
    };
    assert!(run(&[]).status.success());
    assert!(run(&[]).status.success(), "a rerun of the same run is fine");
    // Another seed is another run: refused, the first run untouched.
    let before = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let o = run(&["--seed", "9"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("another run") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        before
    );
    assert!(run(&["--seed", "9", "--force"]).status.success());
    let after = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(after.contains("\"seed\": 9"), "{after}");
    // A directory of other files is refused; --force keeps them.
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("thesis.tex"), "x").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
        .args(["run", sc.to_str().unwrap(), "-o", other.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("other files"));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn pcap_writes_one_frame_per_packet_record_and_never_overwrites() {
    let d = tmp("pcap");
    let sc = d.join("s.toml");
    std::fs::write(
        &sc,
        "duration = \"200ms\"\n[link]\nrate = \"10mbit\"\n[aqm]\nkind = \"dualpi2\"\n\
         [[flows]]\ncc = \"cbr\"\nrtt = \"10ms\"\nrate = \"2mbit\"\necn = \"l4s\"\n\
         [output]\npackets = true\n",
    )
    .unwrap();
    let (out, pcap) = (d.join("out"), d.join("t.pcapng"));
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_l4s-sim"))
            .args(["run", sc.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .args(["--pcap", pcap.to_str().unwrap()])
            .output()
            .unwrap()
    };
    assert!(run().status.success());
    let f = std::fs::read(&pcap).unwrap();
    assert_eq!(&f[..4], &[0x0A, 0x0D, 0x0D, 0x0A]); // pcapng Section Header Block
    let frames = f.windows(8).filter(|w| w.starts_with(b"verdict=")).count();
    let rows = std::fs::read_to_string(out.join("packets.csv")).unwrap();
    assert_eq!(frames, rows.lines().count() - 1);
    // 2 Mb/s of 1500 B packets = 166.7/s from a start within 10 ms (start_jitter = rtt):
    // at least 0.19 s · 166.7 = 31.7 packets sent, all but the last one out of the queue.
    assert!(frames >= 30, "{frames}");
    let again = run();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
    std::fs::remove_dir_all(&d).ok();
}
