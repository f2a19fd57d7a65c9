//! Reverse runs (`l4slab flow -c HOST -R`, as iperf3 -R) on loopback (no root): the server
//! sends with the client's settings, the client receives; exact byte counts, the sender's
//! report in the client's result, -P sums, -J, and the one-line refusals and failures.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Not a multiple of the MSS (1428): the last segment is short.
const N: u64 = 2_000_003;

/// The receiver's counts agree with the sender's: every data datagram the sender handed to
/// the kernel arrived (loopback loses one only when the client's socket overflows, which
/// SO_RXQ_OVFL counts), with the codepoint the sender chose.
fn receiver_matches_sender(j: &serde_json::Value, s: &serde_json::Value, ctx: &str) {
    let rep = &s["receiver"];
    let sent = u(s, "data_pkts_sent");
    let overflow = u(j, "rx_overflow");
    assert_eq!(u(rep, "bad_payload_pkts"), 0, "{ctx}");
    if overflow == 0 {
        assert_eq!(u(rep, "data_pkts"), sent, "{ctx}");
        let ecn = &s["data_ecn_sent"];
        assert_eq!(u(rep, "ect1_pkts"), u(ecn, "Ect1"), "{ctx}");
        assert_eq!(u(rep, "ect0_pkts"), u(ecn, "Ect0"), "{ctx}");
        assert_eq!(u(rep, "not_ect_pkts"), u(ecn, "NotEct"), "{ctx}");
        // Nothing marks on loopback.
        assert_eq!(u(rep, "ce_pkts"), 0, "{ctx}");
    } else {
        assert!(u(rep, "data_pkts") < sent, "{ctx}");
    }
}

#[test]
fn reverse_moves_exactly_n_bytes_from_server_to_client() {
    let dir = scratch("reverse-n");
    // Prague (AccECN, ECT(1)) and Cubic (no ECN): the server's sender runs the client's CC.
    for (cc, codepoint) in [("prague", "Ect1"), ("cubic", "NotEct")] {
        let srv_json = dir.join(format!("server-{cc}.json"));
        // -q: the helper finds a quiet server's port without a first line.
        let mut srv = Server::start(
            "127.0.0.1",
            &["-1", "-q", "--json", srv_json.to_str().expect("path")],
        );
        let run = run_client(
            "127.0.0.1",
            srv.port,
            &[
                "-R",
                "--cc",
                cc,
                "-n",
                &N.to_string(),
                "--peer-timeout",
                "5s",
            ],
            &dir,
        );
        let code = srv.wait_exit(Duration::from_secs(5));
        let ctx = format!("cc {cc}: client {:?} stderr {}", run.code, run.stderr);
        assert_eq!(run.code, Some(0), "{ctx}");
        assert_eq!(code, Some(0), "server: {ctx}");
        let j = run.json.expect("client json");
        assert_eq!(j["reverse"], true, "{ctx}");
        assert_eq!(j["intervals_side"], "receiver", "{ctx}");
        assert_eq!(j["cc"], cc, "{ctx}");
        let s = &j["streams"][0];
        // The sender (the server) had exactly N bytes acknowledged and says so; this side
        // delivered exactly N in order.
        assert_eq!(u(s, "bytes_acked"), N, "{ctx}");
        assert_eq!(u(&s["receiver"], "delivered_bytes"), N, "{ctx}");
        assert_eq!(u(&j["sum"], "bytes_acked"), N, "{ctx}");
        // All of the sender's data left with the CC's codepoint.
        assert_eq!(
            u(&s["data_ecn_sent"], codepoint),
            u(s, "data_pkts_sent"),
            "{ctx}"
        );
        // N / 1428 = 1400.6: 1401 data segments at least (more only by retransmissions).
        assert!(u(s, "data_pkts_sent") >= 1401, "{ctx}");
        // The sender's pacing error came back: Prague paces (timer-released sends), Cubic
        // here is ACK-clocked and may have none.
        assert!(s["pacing_error"]["p99_us"].is_f64(), "{ctx}");
        if cc == "prague" {
            assert!(u(&s["pacing_error"], "n") > 0, "{ctx}");
        }
        receiver_matches_sender(&j, s, &ctx);
        // The final lines (-q keeps them) carry both sides.
        assert!(run.stdout.contains("sender"), "{}", run.stdout);
        assert!(run.stdout.contains("receiver"), "{}", run.stdout);
        // The server's record: a reverse connection whose client received N bytes.
        let sj = read_json(&srv_json);
        let c = &sj["connections"][0];
        assert_eq!(c["reverse"], true, "{sj}");
        assert_eq!(c["end"], "done", "{sj}");
        assert_eq!(u(&c["report"], "delivered_bytes"), N, "{sj}");
    }
}

#[test]
fn reverse_parallel_streams_sum_and_json_on_stdout() {
    let dir = scratch("reverse-p2");
    let _srv = Server::start("127.0.0.1", &["-i", "0"]);
    let run = run_client(
        "127.0.0.1",
        _srv.port,
        &[
            "-R", "-P", "2", "-C", "cubic", "-t", "0.6", "-i", "0.2", "-J",
        ],
        &dir,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let j = run.json.expect("json");
    // -J: stdout is the same JSON document as --json.
    let out: serde_json::Value = serde_json::from_str(&run.stdout).expect("-J stdout is JSON");
    assert_eq!(out, j);
    assert_eq!(j["reverse"], true);
    let ss = j["streams"].as_array().expect("streams");
    assert_eq!(ss.len(), 2);
    let mut acked = 0;
    let mut delivered = 0;
    for (i, s) in ss.iter().enumerate() {
        assert_eq!(u(s, "id"), i as u64);
        // A timed run ends when the data is acknowledged, so the two sides agree.
        let b = u(s, "bytes_acked");
        assert!(b > 0, "{s}");
        assert_eq!(u(&s["receiver"], "delivered_bytes"), b, "{s}");
        receiver_matches_sender(&j, s, &format!("stream {i}"));
        // Receiver-side intervals of 0.2 s over a 0.6 s run.
        let iv = s["intervals"].as_array().expect("intervals");
        assert!(!iv.is_empty(), "{s}");
        assert!(iv.iter().all(|r| r["data_pkts"].is_u64()), "{s}");
        acked += b;
        delivered += u(&s["receiver"], "delivered_bytes");
    }
    assert_eq!(u(&j["sum"], "bytes_acked"), acked);
    assert_eq!(u(&j["sum"], "receiver_delivered_bytes"), delivered);
    assert_eq!(u(&j["sum"], "streams"), 2);
}

#[test]
fn reverse_prints_the_sum_line_and_receiver_intervals() {
    let dir = scratch("reverse-text");
    let _srv = Server::start("127.0.0.1", &["-i", "0"]);
    let out = Command::new(BIN)
        .args(["-c", "127.0.0.1", "-p", &_srv.port.to_string(), "--no-rt"])
        .args(["-R", "-P", "2", "-t", "0.5", "-i", "0.2"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("the interval lines are this receiver's"),
        "{text}"
    );
    assert!(text.contains("Mbit/s received"), "{text}");
    assert!(text.contains("[SUM]"), "{text}");
    let _ = dir;
}

#[test]
fn reverse_refusals_are_one_line_each() {
    for (args, words) in [
        (vec!["-s", "-R", "-p", "1"], vec!["-R", "client option"]),
        (
            vec!["-c", "127.0.0.1", "-R", "--app", "rt"],
            vec!["-R", "--app rt", "not supported"],
        ),
        (
            vec!["-c", "127.0.0.1", "--no-reverse"],
            vec!["--no-reverse"],
        ),
    ] {
        let out = Command::new(BIN).args(&args).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err:?}");
        for w in words {
            assert!(err.contains(w), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_server_with_no_reverse_refuses_at_once() {
    let dir = scratch("reverse-refused");
    let _srv = Server::start("127.0.0.1", &["--no-reverse", "-i", "0"]);
    let t = Instant::now();
    let run = run_client(
        "127.0.0.1",
        _srv.port,
        &["-R", "-t", "5", "--peer-timeout", "10s"],
        &dir,
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{:?}", run.stderr);
    assert!(run.stderr.contains("--no-reverse"), "{}", run.stderr);
    // The refusal answers the first request, long before the 10 s peer timeout.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let j = run.json.expect("a failed run writes its JSON");
    assert!(j["error"]
        .as_str()
        .is_some_and(|e| e.contains("--no-reverse")));
}

#[test]
fn a_server_that_ignores_reverse_is_no_answer_within_the_peer_timeout() {
    // As a server older than reverse mode: it reads the request and never answers.
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = sink.local_addr().expect("addr").port().to_string();
    let t = Instant::now();
    let out = Command::new(BIN)
        .args(["-c", "127.0.0.1", "-p", &port, "-R", "-t", "5", "-q"])
        .args(["--no-rt", "--peer-timeout", "0.5"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err:?}");
    assert!(
        err.contains("reverse request") && err.contains("-R"),
        "{err}"
    );
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[test]
fn a_server_killed_mid_run_ends_the_reverse_client_with_one_line() {
    let dir = scratch("reverse-killed");
    let mut srv = Server::start("127.0.0.1", &["-i", "0"]);
    let json = dir.join("c.json");
    let cl = Command::new(BIN)
        .args(["-c", "127.0.0.1", "-p", &srv.port.to_string(), "--no-rt"])
        .args(["-R", "-t", "30", "-q", "--peer-timeout", "2s", "--json"])
        .arg(&json)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("client");
    std::thread::sleep(Duration::from_millis(700));
    let _ = srv.child.kill();
    let _ = srv.child.wait();
    let killed = Instant::now();
    let out = cl.wait_with_output().expect("client exit");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err:?}");
    assert!(err.contains("stopped sending"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Within the 2 s peer timeout (at once when the kernel answers the ACKs with ICMP port
    // unreachable), plus scheduling slack.
    assert!(
        killed.elapsed() < Duration::from_secs(4),
        "{:?}",
        killed.elapsed()
    );
    let j = read_json(&json);
    assert!(j["error"].is_string(), "{j}");
    assert!(
        u(&j["streams"][0]["receiver"], "delivered_bytes") > 0,
        "{j}"
    );
}

#[test]
fn reverse_carries_the_rate_limit_and_the_omitted_start_to_the_server() {
    // -b 5M with -t 1 -O 0.5: the server's application writes whole 1428-byte segments at
    // 5 Mbit/s for 1.5 s, floor(937_500 / 1428) = 656 segments = 936_768 bytes (as
    // app_limit.rs's forward run); without the limit loopback would move far more.
    const WRITTEN: u64 = 656 * 1428;
    let dir = scratch("reverse-b");
    let _srv = Server::start("127.0.0.1", &["-i", "0"]);
    let run = run_client(
        "127.0.0.1",
        _srv.port,
        &["-R", "-t", "1", "-O", "0.5", "-b", "5M", "-i", "0"],
        &dir,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let j = run.json.expect("json");
    assert_eq!(u(&j, "rate_limit_bps"), 5_000_000);
    assert_eq!(j["omit_s"].as_f64(), Some(0.5));
    let s = &j["streams"][0];
    let acked = u(s, "bytes_acked");
    // Never more than written; at least what was written 90 ms before the end (a write the
    // loaded sender hands over after -t is not sent, see app_limit.rs).
    assert!(acked <= WRITTEN, "{acked} > {WRITTEN}");
    assert!(acked >= (5e6 * (1.5 - 0.09) / 8.0) as u64, "{acked}");
    assert_eq!(u(&s["receiver"], "delivered_bytes"), acked);
    // The sender left its first 0.5 s out: about 0.5 s of 5 Mbit/s (312_500 bytes) omitted,
    // and the counted second runs at the application's rate (±10 %: a few segments at the
    // window's edges and the last ACK's delay).
    let omitted = u(s, "omitted_bytes");
    assert!(omitted > 0 && omitted < acked, "{omitted} of {acked}");
    let tput = s["tput_mbps"].as_f64().expect("tput");
    assert!((4.5..=5.5).contains(&tput), "{tput}");
}
