//! `l4s-flow` through the emulator (`l4s-emu`, two-namespace mode; root and /dev/net/tun):
//! exact bytes, ECT(1) kept across TUN and the emulated link, the link filled, and the per-flow
//! CSV of the emulator contract in the run directory.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{read_json, scratch, u, BIN};

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
    let _one = serial();
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
    let link = ["--rate", "50mbit", "--delay", "10ms"].map(OsString::from);
    emulate(
        &emu,
        &link,
        &run_dir,
        &format!("{BIN} -s -1 -i 0 -q"),
        &client,
    );
    let j = read_json(&json);
    let s = &j["streams"][0];
    assert_eq!(u(s, "bytes_acked"), N);
    let rep = &s["receiver"];
    assert_eq!(u(rep, "delivered_bytes"), N);
    assert_eq!(u(rep, "bad_payload_pkts"), 0);
    // Every data datagram left as ECT(1) and arrived as ECT(1), or CE where an AQM marked it.
    assert_eq!(u(&s["data_ecn_sent"], "Ect1"), u(s, "data_pkts_sent"));
    assert_eq!(u(rep, "ect1_pkts") + u(rep, "ce_pkts"), u(rep, "data_pkts"));
    assert_eq!(u(rep, "not_ect_pkts") + u(rep, "ect0_pkts"), 0);
    // The marks and the queue: a FIFO marks nothing, so every datagram arrived ECT(1) (no CE),
    // and every packet the bottleneck dropped (tail drop of the 5-tuple, counted by the
    // emulator over the whole run: no warm-up here) was retransmitted by the sender.
    let up = read_json(&run_dir.join("raw").join("uplink.json"));
    let summ = &up["summary"];
    assert_eq!(summ["warmup_s"].as_f64(), Some(0.0));
    assert_eq!(u(rep, "ce_pkts"), 0);
    let dropped: u64 = summ["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(|f| f["drops"].as_u64().unwrap_or(0))
        .sum();
    assert!(u(s, "retransmits") >= dropped, "{dropped} drops");
    // Conservation across the emulated link: every datagram the sender sent was either
    // dropped by the bottleneck or delivered (nothing lost or duplicated by TUN or the link).
    assert_eq!(u(s, "data_pkts_sent"), u(rep, "data_pkts") + dropped);
    // The link is filled: what crossed it (delivered datagrams × 1500 IP bytes, retransmissions
    // included) over the whole transfer against the link's 50 Mbit/s, less the time the sender
    // itself was not running when it should have sent: l4s-flow is a user-space sender, so a
    // CPU stall on a loaded host is idle link time. Its own pacing error (send − release,
    // summed over its sends) measures that time; the floor is 85 % of the link over the rest
    // (the handshake and the first slow-start round trips leave it idle ~5 % of 2 s).
    // Goodput is not the measure here: after the slow-start overshoot into this 1000-packet
    // FIFO the model may time out and resend packets still queued (no F-RTO or RACK undo, see
    // crates/l4s-core/src/tcp/sender.rs), which costs goodput, not link time.
    let dur = s["duration_s"].as_f64().expect("duration");
    let wire_mbps = u(rep, "data_pkts") as f64 * 1500.0 * 8.0 / dur / 1e6;
    let pe = &s["pacing_error"];
    let late_s = pe["mean_us"].as_f64().unwrap_or(0.0) * pe["n"].as_f64().unwrap_or(0.0) / 1e6;
    let floor = 0.85 * 50.0 * (1.0 - late_s / dur).max(0.0);
    assert!(
        (floor..=1.01 * 50.0).contains(&wire_mbps),
        "link carried {wire_mbps} Mbit/s, floor {floor:.2} after {late_s:.3} s of sender lateness in {dur:.2} s"
    );
    // Goodput is the unique payload over the same time: at most the link's 47.6 Mbit/s
    // (1428 payload / 1500 IP bytes).
    let tput = s["tput_mbps"].as_f64().expect("tput");
    let exact = N as f64 * 8.0 / dur / 1e6;
    assert!(
        (tput - exact).abs() <= 1e-6 * exact,
        "tput {tput} vs {exact}"
    );
    assert!(tput <= 1.01 * 47.6, "goodput {tput} Mbit/s");
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
        Some("t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked,target_mbps,acked_bytes")
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

/// Run `l4s-emu <link> --quiet -o <run_dir> --server <server> -- sh -c <client>` and require
/// a clean exit (stderr in the failure message).
fn emulate(emu: &Path, link: &[OsString], run_dir: &Path, server: &str, client: &str) {
    let out = Command::new(emu)
        .args(link)
        .args(["--quiet", "-o"])
        .arg(run_dir)
        .args(["--server", server])
        .args(["--", "sh", "-c", client])
        .output()
        .expect("l4s-emu runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn scenario(dir: &Path, warmup: &str) -> PathBuf {
    // 50 Mbit/s, 20 ms RTT (10 ms each way), DualPI2 with Linux defaults.
    let p = dir.join("s.toml");
    std::fs::write(
        &p,
        format!("warmup = \"{warmup}\"\n[link]\nrate = \"50mbit\"\n[aqm]\nkind = \"dualpi2\"\n[emulator]\ndelay = \"10ms\"\n"),
    )
    .expect("scenario");
    p
}

fn uplink_summary(run_dir: &Path) -> serde_json::Value {
    read_json(&run_dir.join("raw/uplink.json"))["summary"].clone()
}

/// What one run of `prague_fills_the_emulated_dualpi2_link_with_a_shallow_l_queue` measured.
struct FillRun {
    utilisation: f64,
    l_p99_ms: f64,
    cwnd: f64,
    /// The emulator's and the client's figures, for a failure message.
    ctx: String,
}

#[test]
fn prague_fills_the_emulated_dualpi2_link_with_a_shallow_l_queue() {
    let _one = serial();
    let Some(emu) = emulator_or_skip("prague_fills_the_emulated_dualpi2_link") else {
        return;
    };
    let dir = scratch("emu-dpi2");
    // Three runs. What each run's packets must show (classification, marks reaching the
    // receiver, α > 0) is checked on every run; the figures that depend on the host scheduling
    // two user-space endpoints and the emulator in real time (fill, sojourn, window) are checked
    // on their median, so that one run on a host that stalled for a second cannot fail the test
    // and one run cannot pass it alone.
    let runs: Vec<FillRun> = (0..3).map(|i| fill_run(&emu, &dir, i)).collect();
    let all_ctx: Vec<&str> = runs.iter().map(|r| r.ctx.as_str()).collect();
    let all_ctx = all_ctx.join("\n");
    let median = |f: fn(&FillRun) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[1]
    };
    // ≥ 90 % of the link after warmup, with the L queue's p99 sojourn within 2 ms (the step
    // threshold is 1 ms; a packet is marked once its sojourn passes it).
    assert!(median(|r| r.utilisation) >= 0.90, "{all_ctx}");
    assert!(median(|r| r.l_p99_ms) <= 2.0, "{all_ctx}");
    // The window stays near the BDP (50 Mbit/s × 20 ms / 1500 B = 83 packets).
    assert!((40.0..=170.0).contains(&median(|r| r.cwnd)), "{all_ctx}");
}

/// One 6 s Prague run through the emulated DualPI2 link; asserts what its packets must show.
fn fill_run(emu: &Path, dir: &Path, i: usize) -> FillRun {
    let run_dir = dir.join(format!("run{i}"));
    let json = dir.join(format!("client{i}.json"));
    let client = format!(
        "sleep 0.3; exec {BIN} -c \"$L4SLAB_SERVER\" --cc prague -t 6 -q -i 0 --json {}",
        json.display()
    );
    emulate(
        emu,
        &[scenario(dir, "2s").into()],
        &run_dir,
        &format!("exec {BIN} -s -1 -i 0 -q"),
        &client,
    );
    let s = uplink_summary(&run_dir);
    let j = read_json(&json);
    let st = &j["streams"][0];
    let ctx = format!(
        "run {i}: emulator duration {} s, link {}, packets {}, lateness {}, queues {}; client \
         {} Mbit/s over {} s, retransmits {}, lost {}, srtt {} ms, pacing error {}, alpha {}, \
         cwnd {}",
        s["duration_s"],
        s["link"],
        s["packets"],
        s["emulator"]["lateness_us"],
        s["queues"],
        st["tput_mbps"],
        st["duration_s"],
        st["retransmits"],
        st["lost_pkts"],
        st["srtt_ms"],
        st["pacing_error"],
        st["alpha"],
        st["cwnd_pkts"]
    );
    eprintln!("{ctx}");
    // ECT(1) is classified into L, and only L is used.
    assert_eq!(s["queues"][0]["name"], "L", "{ctx}");
    assert!(
        s["queues"][1]["packets"].as_u64().unwrap_or(0) <= 1,
        "{ctx}"
    );
    // DualPI2 marks and the sender reacts: marks reach the receiver and α > 0.
    let marks = s["queues"][0]["marks"].as_u64().expect("marks");
    assert!(marks > 0, "{ctx}");
    assert!(u(&st["receiver"], "ce_pkts") >= marks / 2, "{ctx}");
    assert!(st["alpha"].as_f64().expect("alpha") > 0.0, "{ctx}");
    FillRun {
        utilisation: s["link"]["utilisation"].as_f64().expect("util"),
        l_p99_ms: s["queues"][0]["sojourn_ms"]["p99"].as_f64().expect("p99"),
        cwnd: st["cwnd_pkts"].as_f64().expect("cwnd"),
        ctx,
    }
}

#[test]
fn prague_and_kernel_cubic_share_the_emulated_dualpi2_link() {
    let _one = serial();
    let Some(emu) = emulator_or_skip("prague_and_kernel_cubic_share") else {
        return;
    };
    let have_iperf3 = Command::new("sh")
        .args(["-c", "command -v iperf3"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have_iperf3 {
        if std::env::var("L4SLAB_REQUIRE_ROOT_TESTS").as_deref() == Ok("1") {
            panic!("iperf3 is missing and L4SLAB_REQUIRE_ROOT_TESTS=1");
        }
        eprintln!("skipped prague_and_kernel_cubic_share: needs iperf3");
        return;
    }
    let dir = scratch("emu-mix");
    let run_dir = dir.join("run");
    let server = format!("{BIN} -s -1 -i 0 -q & iperf3 -s -1 >/dev/null; wait");
    let client = format!(
        "sleep 0.3; iperf3 -c \"$L4SLAB_SERVER\" -C cubic -t 9 >/dev/null & {BIN} -c \"$L4SLAB_SERVER\" --cc prague -t 9 -q -i 0; st=$?; wait; exit $st"
    );
    emulate(
        &emu,
        &[scenario(&dir, "3s").into()],
        &run_dir,
        &server,
        &client,
    );
    let s = uplink_summary(&run_dir);
    let flows = s["flows"].as_array().expect("flows");
    let tput = |cc: &str| -> f64 {
        flows
            .iter()
            .filter(|f| f["cc"] == cc)
            .map(|f| f["tput_mbps"].as_f64().unwrap_or(0.0))
            .fold(0.0, f64::max)
    };
    let (udp, tcp) = (tput("udp"), tput("tcp"));
    let ctx = format!(
        "udp (Prague) {udp:.2} Mbit/s, tcp (Cubic) {tcp:.2} Mbit/s, link {}, queues {}",
        s["link"], s["queues"]
    );
    eprintln!("{ctx}");
    assert!(
        s["link"]["utilisation"].as_f64().expect("util") >= 0.90,
        "{ctx}"
    );
    // Prague in L stays shallow while Cubic fills C towards the PI target (15 ms).
    assert!(
        s["queues"][0]["sojourn_ms"]["p99"].as_f64().expect("p99") <= 2.0,
        "{ctx}"
    );
    let c_mean = s["queues"][1]["sojourn_ms"]["mean"]
        .as_f64()
        .expect("C mean");
    assert!((5.0..=25.0).contains(&c_mean), "{ctx}");
    // Neither starves (the coupling k = 2 aims at rough rate balance).
    assert!(udp >= 0.15 * 50.0 && tcp >= 0.15 * 50.0, "{ctx}");
}
