//! Loopback tests of `l4slab flow --app rt` (no root): an RT-Prague video flow delivers its
//! frames at the configured rate with the latency pacing implies, and bad rt parameters get
//! one clear error.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

#[test]
fn rt_prague_delivers_frames_at_fps_with_paced_latency() {
    // The latency bound below is the sender's pacing on the wall clock: both ends run at
    // SCHED_FIFO (--rt), as the emulator runs them, so a loaded machine's scheduler does not
    // add its own delay; the flow is paced at ≤ 20 Mb/s, so it cannot starve the machine.
    let Some(_one) = realtime_or_skip("rt_prague_delivers_frames_at_fps_with_paced_latency") else {
        return;
    };
    let dir = scratch("rt-prague");
    let mut srv = Server::start("127.0.0.1", &["--app", "rt", "-1", "--rt"]);
    let run = run_client(
        "127.0.0.1",
        srv.port,
        &[
            "--app",
            "rt",
            "--cc",
            "rt-prague",
            "-t",
            "3",
            "--fps",
            "60",
            "--frame-budget",
            "10ms",
            "--init-rate",
            "5mbit",
            "--max-rate",
            "20mbit",
            "--rt",
        ],
        &dir,
    );
    let code = srv.wait_exit(Duration::from_secs(5));
    let ctx = format!("client {:?} stderr {}", run.code, run.stderr);
    assert_eq!(run.code, Some(0), "{ctx}");
    assert_eq!(code, Some(0), "server: {ctx}");
    let j = run.json.expect("client json");
    let f = &j["frames"];
    // 3 s at 60 fps: frames 0..179 are captured (k/60 < 3 s).
    assert_eq!(u(f, "frames"), 180, "{j}");
    // Loopback loses nothing: every data datagram reached the receiver and every frame that
    // was sent completed.
    assert_eq!(
        u(&j["receiver"], "data_pkts"),
        u(&j, "data_pkts_sent"),
        "{j}"
    );
    assert_eq!(u(&j["receiver"], "bad_payload_pkts"), 0, "{j}");
    assert_eq!(u(f, "incomplete"), 0, "{j}");
    // A frame is skipped only when the sender is a whole frame interval (16.7 ms) late
    // (udp_prague's frame_adv): on loopback nothing queues, so a skip is the host's stall, not
    // the model's. Every frame the sender did produce is on time (no other deadline miss),
    // and delivered_fps counts exactly those. Stalls that long at SCHED_FIFO are rare even on
    // a loaded 2-core host: more than 18 (10 % of the frames) in 3 s is a broken sender.
    let skipped = u(f, "skipped");
    assert_eq!(u(f, "deadline_misses"), skipped, "{j}");
    assert!(skipped <= 18, "{j}");
    let fps = f["delivered_fps"].as_f64().unwrap();
    assert!((fps - (180 - skipped) as f64 / 3.0).abs() < 1e-9, "{j}");
    // RT-Prague sizes a frame rate·budget and paces it at the rate, so its last packet leaves
    // one packet time (≤ 1400 B at ≥ init_rate 5 Mb/s: 2.24 ms) before the budget (10 ms)
    // ends; loopback adds tens of µs. The median lies in [budget − 2.24 ms, budget + 3 ms].
    // The budget is shorter than the frame interval on purpose: with budget = 1/fps a frame
    // fills its whole interval, so one stall of the host delays every later frame by as much.
    let budget_ms = 10.0;
    let p50 = f["latency_ms"]["p50"].as_f64().unwrap();
    assert!(
        p50 >= budget_ms - 1400.0 * 8.0 / 5e6 * 1e3 && p50 <= budget_ms + 3.0,
        "{j}"
    );
    assert!(f["latency_ms"]["max"].as_f64().unwrap() < 100.0, "{j}");
    // Nothing marks or drops on loopback, so the rate climbs to max_rate and stays: the on-time
    // bitrate is at most 20 Mb/s and at least the initial 5 Mb/s.
    let br = f["bitrate_mbps"].as_f64().unwrap();
    assert!((4.5..=20.5).contains(&br), "{j}");
    assert_eq!(
        j["clock"]
            .as_str()
            .map(|c| c.starts_with("CLOCK_MONOTONIC")),
        Some(true)
    );
}

fn err_of(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .args(["-c", "127.0.0.1", "-p", "9", "--no-rt"])
        .args(args)
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_rt_parameters_get_one_clear_error() {
    for (args, flag, want) in [
        (&["--app", "rt", "--fps", "0"][..], "--fps", "[1, 255]"),
        (&["--app", "rt", "--fps", "300"][..], "--fps", "255"),
        (
            &["--app", "rt", "--frame-budget", "20ms"][..],
            "--frame-budget",
            "1/fps",
        ),
        (
            &["--app", "rt", "--packet-size", "100"][..],
            "--packet-size",
            "150",
        ),
        (&["--app", "rt", "--cc", "cubic"][..], "--cc", "rt-prague"),
        (&["--app", "rt", "--rate", "4mbit"][..], "--rate", "rt-cbr"),
        (&["--app", "rt", "--cc", "rt-cbr"][..], "--rate", "missing"),
        (
            &["--app", "rt", "--min-rate", "5mbit", "--max-rate", "1mbit"][..],
            "--max-rate",
            "min_rate ≤ max_rate",
        ),
        (
            &["--app", "rt", "--max-rate", "2mbit", "--init-rate", "3mbit"][..],
            "--init-rate",
            "[min_rate, max_rate]",
        ),
        (&["--app", "rt", "--ecn", "classic"][..], "--ecn", "l4s"),
        (&["--app", "rt", "-P", "2"][..], "-P", "--app rt"),
        (&["--app", "video"][..], "--app", "bulk or rt"),
        (&["--fps", "30"][..], "--fps", "--app rt"),
    ] {
        let (code, err) = err_of(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!("error: {flag}:")) && err.contains(want),
            "{args:?}: {err}"
        );
    }
}
