//! Root tests of the `l4s-emu` binary: real programs in two namespaces joined by the emulated
//! link (delay, rate), exit status, teardown after every kind of signal, the refusal message.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Run `ping` through a link with `one_way` ms of delay in each direction and check the RTTs:
/// none below 2 x `one_way` (nothing is delivered early), and the median within 1 ms of it
/// (kernel and ping processing are tens of µs, the emulator's lateness µs). The median, not
/// the mean: a VM that deschedules the whole guest for tens of ms inflates one reply, and that
/// stall is the host's, not the link model's. The emulator's own reported lateness is shown in
/// the failure message so a slow emulator is told apart from a stalled host.
fn check_ping(ping: &str, one_way: &str, count: usize) {
    let d = TempDir::new("ping");
    let out_dir = d.0.join("run");
    let cmd = format!("ping -n -c {count} -i 0.05 {ping}");
    let out = emu_ok(&[
        "--quiet",
        "--delay",
        one_way,
        "-o",
        out_dir.to_str().unwrap(),
        "--server",
        "sleep 30",
        "--",
        "sh",
        "-c",
        &cmd,
    ]);
    let rtt = ping_times(&out);
    assert_eq!(rtt.len(), count, "every echo answered: {out}");
    let want = 2.0 * one_way.trim_end_matches("ms").parse::<f64>().unwrap();
    let emu = read_json(&out_dir.join("emulator.json"));
    let min = rtt.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(
        min >= want,
        "RTT {min} ms below the configured {want} ms: {out}"
    );
    let med = median(&rtt);
    assert!(
        (med - want).abs() <= 1.0,
        "median RTT {med} ms not {want} +/- 1 ms: {rtt:?}\nemulator: {emu}"
    );
}

#[test]
fn ping_rtt_is_twice_the_one_way_delay() {
    let _g = serial();
    if !can_run(&["ping"]) {
        return;
    }
    check_ping("$L4SLAB_SERVER", "10ms", 20);
}

#[test]
fn ping6_crosses_the_link_too() {
    let _g = serial();
    if !can_run(&["ping"]) {
        return;
    }
    check_ping("-6 $L4SLAB_SERVER6", "5ms", 5);
}

#[test]
fn exit_status_is_the_commands() {
    let _g = serial();
    if !can_run(&[]) {
        return;
    }
    let o = emu(&["--quiet", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    // Killed by a signal: 128 + signal, as a shell reports it.
    let o = emu(&["--quiet", "--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
    // A command that does not exist: 127 and one line naming it.
    let o = emu(&["--quiet", "--", "no-such-command-l4s"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).contains("no-such-command-l4s"), "{}", stderr(&o));
    // Both sides see each other's addresses and the start time.
    let o = emu(&[
        "--quiet",
        "--",
        "sh",
        "-c",
        "test \"$L4SLAB_CLIENT\" = 10.77.0.1 && test \"$L4SLAB_SERVER\" = 10.77.0.2 && test -n \"$L4SLAB_T0_NS\" && test -d \"$L4SLAB_FLOW_DIR\"",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn under_sudo_commands_run_as_the_invoking_user() {
    let _g = serial();
    if !can_run(&[]) {
        return;
    }
    // sudo sets SUDO_UID/SUDO_GID; the commands (not the emulator) take those ids, and the
    // flow directory is theirs to write.
    let o = Command::new(EMU)
        .args([
            "--quiet",
            "--server",
            "id -u > /dev/null",
            "--",
            "sh",
            "-c",
            "echo $(id -u) $(id -g); touch $L4SLAB_FLOW_DIR/w && echo writable; \
             echo $L4SLAB_SAMPLE_INTERVAL_NS",
        ])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .output()
        .expect("l4s-emu runs");
    assert!(o.status.success(), "{}", stderr(&o));
    // 16 ms: the default fifo has no tupdate, so the simulator's 16 ms default applies.
    assert_eq!(stdout(&o), "65534 65534\nwritable\n16000000\n");
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    let o = emu(&["--rate", "fast", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("l4s-emu: error: --rate:"), "{e}");
}

/// How the cleanup test stops a run.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// A signal to the emulator.
    Emulator(i32),
    /// SIGKILL to the client command.
    KillCommand,
}

fn cleanup_after(stop: Stop) {
    let marker = format!("{}.{}", 900 + std::process::id() % 99, stop_tag(stop));
    let before = host_listing();
    let mut run = Running(
        Command::new(EMU)
            .args([
                "--quiet",
                "--delay",
                "1ms",
                "--server",
                &format!("sleep {marker}1 & sleep {marker}2; wait"),
                "--",
                "sh",
                "-c",
                &format!("sleep {marker}3 & sleep {marker}4"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn l4s-emu"),
    );
    let emu_pid = run.0.id();
    assert!(
        wait_for(Duration::from_secs(8), || pids_with(&marker).len() == 4),
        "the four commands did not start: {:?}",
        pids_with(&marker)
    );
    // The namespaces of this run: those of the emulator's children (the holders).
    let ours: Vec<String> = children_of(emu_pid)
        .into_iter()
        .filter_map(netns_of)
        .collect();
    assert_eq!(ours.len(), 2, "two namespace holders expected");
    match stop {
        Stop::Emulator(sig) => {
            // SAFETY: kill on the pid of our own child, not yet reaped.
            unsafe { libc::kill(emu_pid as i32, sig) };
        }
        Stop::KillCommand => {
            let pid = *pids_with(&format!("{marker}4"))
                .first()
                .expect("client sleep");
            // SAFETY: kill on a pid we just read, running a command we started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
    let status = run.0.wait().expect("wait l4s-emu");
    match stop {
        Stop::Emulator(libc::SIGKILL) => assert_eq!(status.code(), None),
        Stop::Emulator(sig) => assert_eq!(status.code(), Some(128 + sig)),
        Stop::KillCommand => assert_eq!(status.code(), Some(128 + 9)),
    }
    // SIGKILL of the emulator: the kernel tears the rest down asynchronously.
    let gone = wait_for(Duration::from_secs(3), || {
        pids_with(&marker).is_empty() && {
            let live = live_netns();
            ours.iter().all(|n| !live.contains(n))
        }
    });
    assert!(
        gone,
        "left behind after {stop:?}: processes {:?}, namespaces {:?}",
        pids_with(&marker),
        ours.iter()
            .filter(|n| live_netns().contains(*n))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        host_listing(),
        before,
        "host interfaces/routes changed after {stop:?}"
    );
}

fn stop_tag(s: Stop) -> u32 {
    match s {
        Stop::Emulator(sig) => sig as u32,
        Stop::KillCommand => 99,
    }
}

#[test]
fn nothing_survives_sigint_sigterm_sigkill_or_a_killed_command() {
    let _g = serial();
    if !can_run(&[]) {
        return;
    }
    for stop in [
        Stop::Emulator(libc::SIGINT),
        Stop::Emulator(libc::SIGTERM),
        Stop::Emulator(libc::SIGKILL),
        Stop::KillCommand,
    ] {
        cleanup_after(stop);
    }
}

#[test]
fn unprivileged_run_is_refused_in_one_line_with_a_remedy() {
    let _g = serial();
    if !can_run(&["setpriv"]) {
        return;
    }
    let tun_mode = std::fs::metadata("/dev/net/tun")
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
        .unwrap_or(0);
    if tun_mode & 0o006 == 0o006 {
        eprintln!("skipped: /dev/net/tun is usable by everyone here, so nothing is refused");
        return;
    }
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            EMU,
            "--",
            "true",
        ])
        .output()
        .expect("setpriv runs");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "one line expected: {e}");
    assert!(e.starts_with("l4s-emu: error: "), "{e}");
    assert!(
        e.contains("/dev/net/tun") && e.contains("run as root") && e.contains("chmod 0666"),
        "the reason and the remedies: {e}"
    );
}

/// iperf3's receiver-side goodput in bit/s from its JSON report.
fn iperf3_goodput(json: &str) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v["end"]["sum_received"]["bits_per_second"].as_f64()
}

#[test]
fn iperf3_fills_a_rate_limited_link() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    // 20 Mb/s, 5 ms each way, tail drop at the default 10000-packet limit: Cubic keeps the
    // link busy, so the goodput is the rate times the payload share of a 1500-byte packet
    // (1448/1500 with TCP timestamps), less the slow-start seconds.
    let out = emu_ok(&[
        "--quiet",
        "--rate",
        "20mbit",
        "--delay",
        "5ms",
        "--server",
        "exec iperf3 -s -1 -B $L4SLAB_SERVER >/dev/null",
        "--",
        "sh",
        "-c",
        "iperf3 -c $L4SLAB_SERVER -t 3 -J",
    ]);
    let bps = iperf3_goodput(&out).expect("iperf3 JSON");
    let ceiling = 20e6 * 1448.0 / 1500.0;
    assert!(bps >= 0.9 * 20e6, "goodput {bps} below 90 % of 20 Mb/s");
    assert!(
        bps <= ceiling * 1.02,
        "goodput {bps} above the link's payload rate {ceiling}"
    );
}

#[test]
fn curl_fetches_20_mb_in_size_over_rate() {
    let _g = serial();
    if !can_run(&["curl", "python3"]) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("l4s-emu-curl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let size: usize = 20_000_000;
    std::fs::write(dir.join("blob"), vec![0x5au8; size]).expect("write the file");
    // 80 Mb/s, 5 ms each way. The server -> client direction carries 1500-byte packets with
    // 1448 payload bytes (TCP timestamps on), so the transfer takes size*8 / (rate*1448/1500)
    // = 2.07 s; slow start from 10 packets to the 67-packet BDP costs a few 10 ms RTTs.
    let o = emu(&[
        "--quiet",
        "--rate",
        "80mbit",
        "--delay",
        "5ms",
        "--server",
        &format!(
            "cd {} && exec python3 -m http.server 8000 --bind $L4SLAB_SERVER >/dev/null 2>&1",
            dir.display()
        ),
        "--",
        "sh",
        "-c",
        // The emulator starts the client once the server listens, or after 3 s; on a busy
        // machine http.server can take longer, so wait for it (a small separate request) before
        // the timed transfer on its own connection.
        "for i in $(seq 100); do curl -s -o /dev/null http://$L4SLAB_SERVER:8000/ && break; \
         sleep 0.1; done; \
         curl -s -o /dev/null -w '%{size_download} %{time_total}' http://$L4SLAB_SERVER:8000/blob",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    let mut it = out.split_whitespace();
    let got: usize = it.next().and_then(|x| x.parse().ok()).expect("size");
    let t: f64 = it.next().and_then(|x| x.parse().ok()).expect("time");
    assert_eq!(got, size, "curl fetched {got} bytes");
    let expected = size as f64 * 8.0 / (80e6 * 1448.0 / 1500.0);
    assert!(
        (t - expected).abs() <= 0.1 * expected,
        "transfer took {t} s, expected {expected:.3} s +/- 10 %"
    );
}

#[test]
fn per_direction_delays_add_up_to_the_ping_rtt() {
    // mm-link style: --uplink-delay 5ms --downlink-delay 25ms gives a 30 ms RTT (not 10 or 50).
    let _g = serial();
    if !can_run(&["ping"]) {
        return;
    }
    let out = emu_ok(&[
        "--quiet",
        "--uplink-delay",
        "5ms",
        "--downlink-delay",
        "25ms",
        "--server",
        "sleep 30",
        "--",
        "sh",
        "-c",
        "ping -n -c 5 -i 0.05 $L4SLAB_SERVER",
    ]);
    let rtt = ping_times(&out);
    assert_eq!(rtt.len(), 5, "{out}");
    let min = rtt.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(min >= 30.0, "RTT {min} ms below 5 + 25 ms: {rtt:?}");
    let med = median(&rtt);
    assert!((med - 30.0).abs() <= 1.0, "median RTT {med} ms: {rtt:?}");
}

#[test]
fn without_a_far_end_the_start_says_what_the_namespace_reaches() {
    let _g = serial();
    if !can_run(&[]) {
        return;
    }
    let o = emu(&["--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no --server and no --host: the client namespace reaches nothing"),
        "{}",
        stderr(&o)
    );
    let o = emu(&["--server", "sleep 5", "--", "true"]);
    assert!(!stderr(&o).contains("reaches nothing"), "{}", stderr(&o));
}
