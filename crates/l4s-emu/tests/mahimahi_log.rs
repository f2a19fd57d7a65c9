//! Root test of `--uplink-log` / `--downlink-log` through a real run: the files follow
//! Mahimahi's mm-link log format (`src/frontend/link_queue.cc`: `# base timestamp: N`, then
//! `ms + bytes`, `ms # bytes`, `ms - bytes delay_ms`, `ms d pkts bytes`) and agree with the run's
//! own summary; `mm-throughput-graph`'s averages are recomputed from them.

mod common;

use common::*;
use std::path::Path;

/// One parsed log: events after the base timestamp, as mm-throughput-graph reads them.
#[derive(Default, Debug)]
struct MmLog {
    base: Option<u64>,
    /// (ms, bytes) of `+` lines.
    arrivals: Vec<(u64, u64)>,
    /// (ms, bytes) of `#` lines.
    opportunities: Vec<(u64, u64)>,
    /// (ms, bytes, delay ms) of `-` lines.
    departures: Vec<(u64, u64, u64)>,
    /// (ms, packets, bytes) of `d` lines.
    drops: Vec<(u64, u64, u64)>,
}

/// Parse a log strictly: every line is a comment or one of the four event kinds with integer
/// fields, the base timestamp comes once and before any event, times never go below it.
fn parse_log(p: &Path) -> MmLog {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut log = MmLog::default();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{}:{}: {line:?}", p.display(), i + 1);
        if let Some(b) = line.strip_prefix("# base timestamp: ") {
            assert!(log.base.is_none(), "{}: base timestamp twice", at());
            log.base = Some(b.parse().unwrap_or_else(|_| panic!("{}", at())));
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let base = log
            .base
            .unwrap_or_else(|| panic!("{}: event before the base", at()));
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |k: usize| -> u64 {
            f.get(k)
                .and_then(|x| x.parse().ok())
                .unwrap_or_else(|| panic!("{}: field {k}", at()))
        };
        let t = num(0)
            .checked_sub(base)
            .unwrap_or_else(|| panic!("{}: before the base", at()));
        match (f.get(1).copied(), f.len()) {
            (Some("+"), 3) => log.arrivals.push((t, num(2))),
            (Some("#"), 3) => log.opportunities.push((t, num(2))),
            (Some("-"), 4) => log.departures.push((t, num(2), num(3))),
            (Some("d"), 4) => log.drops.push((t, num(2), num(3))),
            _ => panic!("{}: not a Mahimahi event", at()),
        }
    }
    assert!(log.base.is_some(), "{}: no base timestamp", p.display());
    log
}

/// mm-throughput-graph's "Average capacity" and "Average throughput" (Mb/s): `#` and `-` bits
/// over the span from the first to the last event (its `d` lines carry no bits here).
fn mm_throughput_graph(log: &MmLog) -> (f64, f64) {
    let times = log
        .arrivals
        .iter()
        .map(|a| a.0)
        .chain(log.opportunities.iter().map(|o| o.0))
        .chain(log.departures.iter().map(|d| d.0));
    let (first, last) = times.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let secs = (last - first) as f64 / 1000.0;
    let cap: u64 = log.opportunities.iter().map(|o| o.1 * 8).sum();
    let dep: u64 = log.departures.iter().map(|d| d.1 * 8).sum();
    (cap as f64 / secs / 1e6, dep as f64 / secs / 1e6)
}

#[test]
fn mahimahi_logs_match_the_run_and_the_trace() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    // Uplink: a trace with three 1504-byte opportunities per 2 ms cycle (18.048 Mb/s) under
    // DualPI2, filled by kernel Cubic; downlink (ACKs): 20 Mb/s. 10 ms one-way delay each way.
    let t = TempDir::new("mmlog");
    let trace = t.0.join("t.trace");
    let mut text = String::new();
    for ms in (2..=1000).step_by(2) {
        text.push_str(&format!("{}\n{}\n{}\n", ms - 1, ms - 1, ms));
    }
    std::fs::write(&trace, text).unwrap();
    let (up, down, out) = (t.0.join("up.log"), t.0.join("down.log"), t.0.join("run"));
    let wall_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let before_ms = wall_ms();
    let o = emu(&[
        "-o",
        out.to_str().unwrap(),
        "--quiet",
        "--rate",
        "20mbit",
        "--uplink-trace",
        trace.to_str().unwrap(),
        "--delay",
        "10ms",
        "--aqm",
        "dualpi2",
        "--uplink-log",
        up.to_str().unwrap(),
        "--downlink-log",
        down.to_str().unwrap(),
        "--server",
        "exec iperf3 -s -1 >/dev/null",
        "--",
        "sh",
        "-c",
        "iperf3 -c $L4SLAB_SERVER -t 2 >/dev/null",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after_ms = wall_ms();
    // mm-link's header lines, in its order (link_queue.cc): the link and its trace > the log,
    // the command line, the queue, the init timestamp (wall-clock ms since the epoch at the
    // start) and the base timestamp (ms after it).
    for (name, path, source, queue) in [
        ("uplink", &up, trace.display().to_string(), "dualpi2"),
        ("downlink", &down, "rate 20mbit".to_string(), "dualpi2"),
    ] {
        let text = std::fs::read_to_string(path).unwrap();
        let head: Vec<&str> = text.lines().take(5).collect();
        assert_eq!(
            head[0],
            format!(
                "# mahimahi mm-link ({name}) [{source}] > {}",
                path.display()
            )
        );
        assert!(
            head[1].starts_with("# command line: ") && head[1].contains("--uplink-log"),
            "{head:?}"
        );
        assert_eq!(head[2], format!("# queue: {queue}"));
        let init: u64 = head[3]
            .strip_prefix("# init timestamp: ")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{head:?}"));
        assert!(
            (before_ms..=after_ms).contains(&init),
            "{init} not in [{before_ms}, {after_ms}]"
        );
        assert_eq!(head[4], "# base timestamp: 0");
    }
    let meta = read_json(&out.join("emulator.json"));
    let end_ms = (meta["duration_s"].as_f64().unwrap() * 1e3).floor() as u64;
    for (name, path) in [("uplink", &up), ("downlink", &down)] {
        let log = parse_log(path);
        let s = &read_json(&out.join(format!("raw/{name}.json")))["summary"];
        let pk = &s["packets"];
        let n = |k: &str| pk[k].as_u64().unwrap();
        // Every packet the path took is one `+` line; every AQM drop one `d` line.
        assert_eq!(log.arrivals.len() as u64, n("sent"), "{name}: + lines");
        let dropped: u64 = log.drops.iter().map(|d| d.1).sum();
        assert_eq!(dropped, n("aqm_dropped"), "{name}: d lines");
        // A `-` line is written when the last bit leaves the link, before the propagation
        // delay: delivered <= departures <= delivered + still in flight.
        let deps = log.departures.len() as u64;
        assert!(
            (n("delivered")..=n("delivered") + n("in_flight")).contains(&deps),
            "{name}: {deps} - lines, packets {pk}"
        );
        // Byte totals: the departed bytes are the link's (summary utilisation x capacity over
        // the whole run, warm-up 0), and no more bytes leave than arrived.
        let dep_bytes: u64 = log.departures.iter().map(|d| d.1).sum();
        let arr_bytes: u64 = log.arrivals.iter().map(|a| a.1).sum();
        let drop_bytes: u64 = log.drops.iter().map(|d| d.2).sum();
        let link = &s["link"];
        let secs = s["duration_s"].as_f64().unwrap();
        let link_bytes = link["utilisation"].as_f64().unwrap()
            * link["capacity_mbps"].as_f64().unwrap()
            * 1e6
            * secs
            / 8.0;
        assert!(
            (dep_bytes as f64 - link_bytes).abs() < 1e-6 * link_bytes + 1.0,
            "{name}: - bytes {dep_bytes}, link {link_bytes}"
        );
        assert!(dep_bytes + drop_bytes <= arr_bytes, "{name}: bytes");
        // The delay column is mm-link's: departure - arrival in whole ms (queue sojourn plus
        // serialisation; the propagation delay is mm-delay's, not in this log).
        for d in &log.departures {
            assert!(
                d.2 <= d.0,
                "{name}: delay {} beyond its own time {}",
                d.2,
                d.0
            );
        }
        assert!(log.opportunities.iter().all(|o| o.0 <= end_ms));
        if name == "uplink" {
            // The trace's opportunities up to the end, each one line of 1504 bytes: 3 per
            // whole 2 ms cycle, plus the odd millisecond's two.
            let expect = 3 * (end_ms / 2) + if end_ms % 2 == 1 { 2 } else { 0 };
            assert_eq!(log.opportunities.len() as u64, expect, "uplink # lines");
            assert!(log.opportunities.iter().all(|o| o.1 == 1504));
            // A trace link finishes packets at opportunity instants (whole ms), and with at
            // least one 1504-byte opportunity every ms a 1500-byte packet takes at most one
            // more ms once served. So each delay (whole ms) is its sojourn + 0 or 1 ms of
            // serialisation + the arrival's fraction of a ms: the mean lies in [C sojourn
            // mean, C sojourn mean + 2 ms) (every data packet goes through C). The
            // propagation delay (10 ms) is not in it, as in mm-link's log.
            let opp_ms: std::collections::BTreeSet<u64> =
                log.opportunities.iter().map(|o| o.0).collect();
            assert!(
                log.departures.iter().all(|d| opp_ms.contains(&d.0)),
                "uplink: a departure off the trace's opportunities"
            );
            let c = &s["queues"][1];
            assert_eq!(c["name"], "C");
            // (C counts a packet when served; one may still be on the link at the end.)
            let served = c["packets"].as_u64().unwrap();
            assert!((deps..=deps + 1).contains(&served), "C served {served}");
            let sojourn = c["sojourn_ms"]["mean"].as_f64().unwrap();
            let mean = log.departures.iter().map(|d| d.2 as f64).sum::<f64>() / deps as f64;
            assert!(
                (sojourn..sojourn + 2.0).contains(&mean),
                "uplink: log delay mean {mean} ms, C sojourn mean {sojourn} ms"
            );
            let (cap, tput) = mm_throughput_graph(&log);
            assert!(
                (cap - 18.048).abs() <= 0.02 * 18.048,
                "mm-throughput-graph capacity {cap} Mb/s"
            );
            let util = link["utilisation"].as_f64().unwrap();
            assert!(
                (tput / cap - util).abs() <= 0.02,
                "mm-throughput-graph utilisation {} against the summary's {util}",
                tput / cap
            );
        } else {
            // A rate link logs its capacity per whole millisecond: 20 Mb/s = 2500 bytes/ms.
            assert_eq!(log.opportunities.len() as u64, end_ms, "downlink # lines");
            assert!(log.opportunities.iter().all(|o| o.1 == 2500));
            let (cap, _) = mm_throughput_graph(&log);
            assert!((cap - 20.0).abs() <= 0.01 * 20.0, "downlink capacity {cap}");
        }
    }
    // The logs are new files: a second run naming an existing one is refused before it starts.
    let o = emu(&["--uplink-log", up.to_str().unwrap(), "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
}

#[test]
fn a_run_that_fails_before_it_starts_leaves_no_log() {
    // No privileges needed: `--host` with `--server` is refused after the logs are opened.
    let t = TempDir::new("mmlog-fail");
    let up = t.0.join("up.log");
    let o = emu(&[
        "--host",
        "--server",
        "true",
        "--uplink-log",
        up.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--server: not with --host"),
        "{}",
        stderr(&o)
    );
    assert!(!up.exists(), "an empty log was left behind");
}
