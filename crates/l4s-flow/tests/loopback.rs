//! Loopback tests of `l4s-flow` (no root): exact transfers for every congestion control with
//! and without loss, CE marks counted end to end, the ECN codepoints on the wire, foreign
//! datagrams, vanished peers and the one-line errors.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use l4s_core::Ecn;

const CCS: [&str; 6] = ["prague", "dctcp", "cubic", "reno", "bbr1", "bbr3"];
/// Not a multiple of the MSS (1428): the last segment is short.
const N: u64 = 2_000_003;

/// The codepoint each CC's data carries by default (as scenario files: Prague AccECN + ECT(1),
/// DCTCP classic ECN + ECT(0), the others no ECN). BBRv3 without `l4s` asks for no ECN.
fn default_ecn(cc: &str) -> Ecn {
    match cc {
        "prague" => Ecn::Ect1,
        "dctcp" => Ecn::Ect0,
        _ => Ecn::NotEct,
    }
}

fn transfer_through_relay(cc: &str, policy: Policy, dir: &std::path::Path) {
    let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut srv = Server::start("127.0.0.1", &["-1", "--peer-timeout", "5s", "-i", "0"]);
    let relay = Relay::start(lo, SocketAddr::new(lo, srv.port), policy);
    let run = run_client(
        "127.0.0.1",
        relay.port,
        &["--cc", cc, "-n", &N.to_string(), "--peer-timeout", "5s"],
        dir,
    );
    let code = srv.wait_exit(Duration::from_secs(5));
    let rc = relay.finish();
    let ctx = format!(
        "cc {cc} {policy:?}: client {:?} stderr {} relay {rc:?}",
        run.code, run.stderr
    );
    assert_eq!(run.code, Some(0), "{ctx}");
    assert_eq!(code, Some(0), "server: {ctx}");
    let j = run.json.expect("client json");
    let s = &j["streams"][0];
    // Exactly N bytes acknowledged, and the receiver delivered exactly N in order, every
    // payload matching the pattern for its sequence number.
    assert_eq!(u(s, "bytes_acked"), N, "{ctx}");
    let rep = &s["receiver"];
    assert_eq!(u(rep, "delivered_bytes"), N, "{ctx}");
    assert_eq!(u(rep, "bad_payload_pkts"), 0, "{ctx}");
    assert_eq!(
        rc.overflow, 0,
        "relay socket overflow makes counts inexact: {ctx}"
    );
    assert_eq!(rc.no_ecn, 0, "{ctx}");
    // The codepoints on the wire are the ones the model chose, datagram by datagram counted.
    let sent = &s["data_ecn_sent"];
    for e in Ecn::ALL {
        assert_eq!(
            rc.data_in[e.bits() as usize],
            u(sent, &format!("{e:?}")),
            "codepoint {e:?}: {ctx}"
        );
    }
    // ... and they are the CC's default codepoint.
    let want = default_ecn(cc);
    assert_eq!(
        rc.data_in[want.bits() as usize],
        u(s, "data_pkts_sent"),
        "{ctx}"
    );
    // The receiver saw what the relay forwarded: its CE count is the relay's marks.
    assert_eq!(u(rep, "ce_pkts"), rc.marks, "{ctx}");
    assert_eq!(
        u(rep, "ce_pkts"),
        rc.data_out[Ecn::Ce.bits() as usize],
        "{ctx}"
    );
    assert_eq!(
        u(rep, "ect1_pkts"),
        rc.data_out[Ecn::Ect1.bits() as usize],
        "{ctx}"
    );
    assert_eq!(
        u(rep, "ect0_pkts"),
        rc.data_out[Ecn::Ect0.bits() as usize],
        "{ctx}"
    );
    assert_eq!(
        u(rep, "not_ect_pkts"),
        rc.data_out[Ecn::NotEct.bits() as usize],
        "{ctx}"
    );
    if policy.reorder > 0.0 {
        assert!(rc.reordered > 0, "{ctx}");
    }
    if policy.drop > 0.0 {
        assert!(rc.dropped > 0, "{ctx}");
        assert!(u(s, "retransmits") >= rc.dropped.min(1), "{ctx}");
    }
    if policy.mark > 0.0 && want.is_ecn_capable() {
        assert!(rc.marks > 0, "{ctx}");
        // The sender learned of the marks through the ACKs (AccECN ACE for Prague,
        // ECE for DCTCP's classic feedback).
        assert!(u(s, "ce_acked") > 0, "{ctx}");
    }
    if cc == "prague" {
        // AccECN counts CE packets exactly: every mark reaches the sender (ACE mod 8 with
        // the safer delta never loses one at these ACK rates).
        assert!(u(s, "ce_acked") >= rc.marks.min(1), "{ctx}");
    }
}

#[test]
fn every_cc_transfers_exactly_n_bytes_clean_path() {
    let dir = scratch("clean");
    for cc in CCS {
        transfer_through_relay(cc, Policy::default(), &dir);
    }
}

#[test]
fn every_cc_transfers_exactly_n_bytes_with_loss_reordering_and_marks() {
    let dir = scratch("lossy");
    for (i, cc) in CCS.iter().enumerate() {
        let p = Policy {
            drop: 0.01,
            mark: 0.05,
            seed: 7 + i as u64,
            junk_to_client: 0,
            reorder: 0.01,
        };
        transfer_through_relay(cc, p, &dir);
    }
}

#[test]
fn ipv6_transfer_is_exact_and_carries_ect1() {
    let dir = scratch("v6");
    let mut srv = Server::start("::1", &["-1", "-i", "0"]);
    let run = run_client("::1", srv.port, &["--cc", "prague", "-n", "1000000"], &dir);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(srv.wait_exit(Duration::from_secs(5)), Some(0));
    let j = run.json.expect("json");
    let s = &j["streams"][0];
    // IPv6: 1500 − 40 − 8 − 44 header bytes of payload per datagram.
    assert_eq!(u(&j, "mss"), 1408);
    assert_eq!(u(s, "bytes_acked"), 1_000_000);
    let rep = &s["receiver"];
    assert_eq!(u(rep, "delivered_bytes"), 1_000_000);
    // IPV6_TCLASS set per datagram and read back with IPV6_RECVTCLASS.
    assert_eq!(u(rep, "ect1_pkts"), u(rep, "data_pkts"));
    assert!(u(rep, "data_pkts") >= 1_000_000 / 1408);
}

#[test]
fn timed_run_with_parallel_streams_ends_and_reports() {
    let dir = scratch("timed");
    let mut srv = Server::start("127.0.0.1", &["-i", "0"]);
    let run = run_client(
        "127.0.0.1",
        srv.port,
        &["--cc", "cubic", "-t", "0.6", "-P", "2", "-i", "0.2"],
        &dir,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let j = run.json.expect("json");
    let ss = j["streams"].as_array().expect("streams");
    assert_eq!(ss.len(), 2);
    for s in ss {
        let acked = u(s, "bytes_acked");
        assert!(acked > 0);
        // A timed run stops new data at -t and ends once it is acknowledged.
        let d = s["duration_s"].as_f64().expect("duration");
        assert!((0.6..3.0).contains(&d), "duration {d}");
        assert_eq!(u(&s["receiver"], "delivered_bytes"), acked);
        assert!(s["intervals"].as_array().expect("intervals").len() >= 2);
    }
    assert_ne!(
        ss[0]["flow"], ss[1]["flow"],
        "each stream has its own 5-tuple"
    );
    // The server keeps serving after the clients are done (no -1).
    assert!(srv.child.try_wait().expect("try_wait").is_none());
}

#[test]
fn foreign_datagrams_are_counted_and_ignored() {
    let dir = scratch("foreign");
    let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let srv_json = dir.join("server.json");
    let mut srv = Server::start(
        "127.0.0.1",
        &["-1", "-i", "0", "--json", srv_json.to_str().expect("path")],
    );
    // Junk to the server: not ours, another version, a truncated header, a segment of an
    // unknown connection (not a SYN: counted as stray, not foreign).
    let junk = std::net::UdpSocket::bind((lo, 0)).expect("junk socket");
    let mut v2 = Vec::new();
    l4s_flow::wire::encode_control(&mut v2, 1, &l4s_flow::wire::Control::Done);
    let mut v2b = v2.clone();
    v2b[4] = 2;
    for d in [
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        v2b,
        v2[..20].to_vec(),
        vec![0u8; 1],
    ] {
        junk.send_to(&d, (lo, srv.port)).expect("send junk");
    }
    let relay = Relay::start(
        lo,
        SocketAddr::new(lo, srv.port),
        Policy {
            junk_to_client: 5,
            ..Default::default()
        },
    );
    let run = run_client("127.0.0.1", relay.port, &["-n", "300000"], &dir);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(srv.wait_exit(Duration::from_secs(5)), Some(0));
    relay.finish();
    let j = run.json.expect("json");
    assert_eq!(u(&j, "foreign_datagrams"), 5);
    assert_eq!(u(&j["streams"][0], "bytes_acked"), 300_000);
    let sj = read_json(&srv_json);
    assert_eq!(u(&sj, "foreign_datagrams"), 4);
    assert_eq!(sj["connections"][0]["end"], "done");
}

#[test]
fn silent_path_ends_the_client_within_the_peer_timeout() {
    let dir = scratch("vanish-path");
    let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let srv = Server::start("127.0.0.1", &["-i", "0"]);
    let relay = Relay::start(lo, SocketAddr::new(lo, srv.port), Policy::default());
    let json = dir.join("c.json");
    let cl = Command::new(BIN)
        .arg("--no-rt")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &relay.port.to_string(),
            "-t",
            "30",
            "-q",
        ])
        .args(["--peer-timeout", "1s", "--json", json.to_str().expect("p")])
        .stderr(Stdio::piped())
        .spawn()
        .expect("client");
    // The path works first (the server's answers reach the client: the handshake is done and
    // ACKs flow), however long the client takes to start on a loaded host.
    let up = Instant::now();
    while relay
        .forwarded_to_client
        .load(std::sync::atomic::Ordering::Relaxed)
        < 20
    {
        assert!(
            up.elapsed() < Duration::from_secs(20),
            "the path never worked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The path goes silent: no datagram, no ICMP error (a crashed host, a cut link).
    relay
        .blackhole
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let cut = Instant::now();
    let out = cl.wait_with_output().expect("client exit");
    let took = cut.elapsed();
    relay.finish();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    // Silence for the 1 s peer timeout, plus scheduling slack on a busy machine.
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(err.contains("stopped answering"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    // The partial result is written, with the error.
    let j = read_json(&json);
    assert!(j["error"]
        .as_str()
        .expect("error")
        .contains("stopped answering"));
    assert!(u(&j["streams"][0], "bytes_acked") > 0);
}

#[test]
fn killed_server_ends_the_client_at_once() {
    let dir = scratch("vanish-srv");
    let mut srv = Server::start("127.0.0.1", &["-i", "0"]);
    let cl = Command::new(BIN)
        .arg("--no-rt")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &srv.port.to_string(),
            "-t",
            "30",
            "-q",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("client");
    std::thread::sleep(Duration::from_millis(500));
    srv.child.kill().expect("kill server");
    let killed = Instant::now();
    let out = cl.wait_with_output().expect("client exit");
    let err = String::from_utf8_lossy(&out.stderr);
    // The host is up, so the kernel answers ICMP port unreachable: no need to wait.
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(killed.elapsed() < Duration::from_secs(2));
    assert!(err.contains("refused"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    let _ = dir;
}

#[test]
fn vanished_client_ends_a_one_off_server_within_the_peer_timeout() {
    let dir = scratch("vanish-cl");
    let mut srv = Server::start("127.0.0.1", &["-1", "-i", "0", "--peer-timeout", "1s"]);
    let mut cl = Command::new(BIN)
        .arg("--no-rt")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &srv.port.to_string(),
            "-t",
            "30",
            "-q",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("client");
    std::thread::sleep(Duration::from_millis(500));
    cl.kill().expect("kill client");
    let _ = cl.wait();
    let killed = Instant::now();
    let code = srv.wait_exit(Duration::from_secs(5));
    assert_eq!(code, Some(3));
    assert!(killed.elapsed() < Duration::from_secs(4));
    assert!(srv.out.lock().unwrap().contains("vanished"));
    let _ = dir;
}

fn one_error_line(args: &[&str]) -> (Option<i32>, String, Duration) {
    let t = Instant::now();
    let out = Command::new(BIN).args(args).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim().lines().count(), 1, "one line expected: {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code(), err, t.elapsed())
}

#[test]
fn port_in_use_is_one_clear_error() {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = s.local_addr().expect("addr").port().to_string();
    let (code, err, _) = one_error_line(&["-s", "-B", "127.0.0.1", "-p", &port]);
    assert_eq!(code, Some(2));
    assert!(err.contains("in use") && err.contains(&port), "{err}");
}

#[test]
fn closed_port_is_one_clear_error_at_once() {
    // A port nobody listens on: the kernel answers ICMP port unreachable.
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        s.local_addr().expect("addr").port().to_string()
    };
    let (code, err, took) = one_error_line(&["-c", "127.0.0.1", "-p", &port, "-t", "5", "-q"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("refused") && err.contains("l4slab flow -s"),
        "{err}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn bad_flags_are_one_clear_error_each() {
    for (args, needle) in [
        (vec!["-c", "127.0.0.1", "--cc", "vegas"], "--cc"),
        (
            vec!["-c", "127.0.0.1", "--cc", "cubic", "--ecn", "l4s"],
            "--ecn",
        ),
        (vec!["-c", "127.0.0.1", "--ecn", "ect2"], "--ecn"),
        (vec!["-c", "127.0.0.1", "-t", "soon"], "-t"),
        (vec!["-c", "127.0.0.1", "-n", "0"], "-n"),
        (vec!["-c", "127.0.0.1", "-P", "0"], "-P"),
        (vec!["-c", "127.0.0.1", "--mss", "10"], "--mss"),
        (vec!["-c", "no-such-host.invalid"], "resolve"),
    ] {
        let (code, err, _) = one_error_line(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn json_results_are_never_overwritten() {
    let dir = scratch("exists");
    let f = dir.join("r.json");
    std::fs::write(&f, "{}").expect("write");
    let (code, err, _) = one_error_line(&["-c", "127.0.0.1", "--json", f.to_str().expect("p")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&f).expect("read"), "{}");
}

#[test]
fn dual_stack_server_reads_the_ecn_of_ipv4_clients() {
    // The default server socket is [::] (v4-mapped peers): ECN comes through IP_RECVTOS there.
    let dir = scratch("dual");
    let mut srv = Server::start("::", &["-1", "-i", "0"]);
    let run = run_client(
        "127.0.0.1",
        srv.port,
        &["--cc", "dctcp", "-n", "300000"],
        &dir,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(srv.wait_exit(Duration::from_secs(5)), Some(0));
    let j = run.json.expect("json");
    let rep = &j["streams"][0]["receiver"];
    assert_eq!(u(rep, "delivered_bytes"), 300_000);
    // DCTCP's classic ECN: every data datagram ECT(0).
    assert_eq!(u(rep, "ect0_pkts"), u(rep, "data_pkts"));
    assert!(u(rep, "data_pkts") > 0);
}

#[test]
fn silent_server_is_no_answer_within_the_peer_timeout() {
    // A socket that reads nothing and answers nothing: no ICMP, no SYN/ACK.
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = sink.local_addr().expect("addr").port().to_string();
    let (code, err, took) = one_error_line(&[
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "5",
        "-q",
        "--peer-timeout",
        "0.5",
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("no answer"), "{err}");
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[test]
fn malformed_emulator_environment_is_one_clear_error() {
    let out = Command::new(BIN)
        .args(["-c", "127.0.0.1", "--no-rt", "-q"])
        .env("L4SLAB_SAMPLE_INTERVAL_NS", "16ms")
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("L4SLAB_SAMPLE_INTERVAL_NS"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
