//! `[link] model = "wifi"` in the simulator: key validation, packet conservation through the
//! MAC, the driver-queue limit (the queue builds in the AQM above it), the `wifi` summary
//! block and the driver queue's rows, determinism.

use l4s_sim::scenario::Scenario;
use serde_json::Value;

fn scenario(wifi: &str, extra: &str) -> String {
    format!(
        "seed = 3\nduration = \"6s\"\nwarmup = \"1s\"\n{extra}\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\n{wifi}\n[aqm]\nkind = \"fifo\"\nlimit = 1000\n\
         [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\ncount = 2\n"
    )
}

fn run(text: &str) -> (l4s_sim::results::RunResults, Value) {
    let s = Scenario::from_toml_str(text).unwrap();
    let r = l4s_sim::run(&s).unwrap();
    let v: Value = serde_json::from_str(&r.summary_json).unwrap();
    (r, v)
}

#[test]
fn every_wifi_key_is_checked_by_name() {
    let ok = "standard = \"ac\"\nmcs = 7\n";
    let cases = [
        ("standard = \"bg\"\nmcs = 1", "link.wifi.standard"),
        ("standard = \"ac\"", "link.wifi.mcs"),
        ("standard = \"ac\"\nmcs = 10", "link.wifi.mcs"),
        ("standard = \"ax\"\nmcs = 3\nwidth = 30", "link.wifi.width"),
        (
            "standard = \"ax\"\nmcs = 3\nstreams = 0",
            "link.wifi.streams",
        ),
        ("phy_rate = \"100kbit\"", "link.wifi.phy_rate"),
        ("phy_rate = \"54mbit\"\nmcs = 3", "link.wifi.mcs"),
        (
            "phy_rate = \"54mbit\"\nstandard = \"ac\"",
            "link.wifi.phy_rate",
        ),
        ("", "link.wifi.standard"),
        (
            "standard = \"ac\"\nmcs = 7\nmax_mpdus = 0",
            "link.wifi.max_mpdus",
        ),
        (
            "standard = \"ac\"\nmcs = 7\nmax_ppdu = \"20ms\"",
            "link.wifi.max_ppdu",
        ),
        (
            "standard = \"ac\"\nmcs = 7\nstations = 500",
            "link.wifi.stations",
        ),
        ("standard = \"ac\"\nmcs = 7\nper = 1.5", "link.wifi.per"),
        (
            "standard = \"ac\"\nmcs = 7\nretry_limit = 300",
            "link.wifi.retry_limit",
        ),
        (
            "standard = \"ac\"\nmcs = 7\nreorder_timeout = \"0s\"",
            "link.wifi.reorder_timeout",
        ),
        (
            "standard = \"ac\"\nmcs = 7\ndriver_limit = \"1us\"",
            "link.wifi.driver_limit",
        ),
        (
            "standard = \"ac\"\nmcs = 7\ndriver_limit_pkts = 0",
            "link.wifi.driver_limit_pkts",
        ),
        (
            "standard = \"ac\"\nmcs = 7\ndriver_limit = \"5ms\"\ndriver_limit_pkts = 10",
            "link.wifi.driver_limit_pkts",
        ),
        (
            "standard = \"ac\"\nmcs = 7\nuplink_limit_pkts = 0",
            "link.wifi.uplink_limit_pkts",
        ),
        ("standard = \"ac\"\nmcs = 7\naifsn = 0", "link.wifi.aifsn"),
        (
            "standard = \"ac\"\nmcs = 7\ncw_min = 10",
            "link.wifi.cw_min",
        ),
        ("standard = \"ac\"\nmcs = 7\ncw_max = 7", "link.wifi.cw_max"),
        (
            "standard = \"ac\"\nmcs = 7\nslot = \"0us\"",
            "link.wifi.slot",
        ),
        (
            "standard = \"ac\"\nmcs = 7\nsifs = \"1ms\"",
            "link.wifi.sifs",
        ),
        ("standard = \"ac\"\nmcs = 7\nbogus = 1", "link.wifi.bogus"),
    ];
    for (body, path) in cases {
        let e = Scenario::from_toml_str(&scenario(body, "")).unwrap_err();
        assert_eq!(e.path(), Some(path), "{body}: {e}");
    }
    assert!(Scenario::from_toml_str(&scenario(ok, "")).is_ok());
    // The table without the model, the model without the table, rate keys with it, and an
    // ACK link beside a medium that carries the ACKs.
    let no_model = scenario(ok, "").replace("model = \"wifi\"\n", "rate = \"10mbit\"\n");
    let e = Scenario::from_toml_str(&no_model).unwrap_err();
    assert_eq!(e.path(), Some("link.wifi"), "{e}");
    let no_table =
        "duration = \"1s\"\n[link]\nmodel = \"wifi\"\n[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n";
    assert_eq!(
        Scenario::from_toml_str(no_table).unwrap_err().path(),
        Some("link.wifi")
    );
    let with_rate = scenario(ok, "").replace(
        "model = \"wifi\"\n",
        "model = \"wifi\"\nrate = \"10mbit\"\n",
    );
    assert_eq!(
        Scenario::from_toml_str(&with_rate).unwrap_err().path(),
        Some("link.rate")
    );
    let ack = scenario(ok, "[ack_link]\nrate = \"1mbit\"");
    assert_eq!(
        Scenario::from_toml_str(&ack).unwrap_err().path(),
        Some("ack_link")
    );
    let ack_ok = scenario(
        &format!("{ok}uplink = false\n"),
        "[ack_link]\nrate = \"1mbit\"",
    );
    assert!(Scenario::from_toml_str(&ack_ok).is_ok());
}

#[test]
fn the_queue_builds_in_the_aqm_above_a_small_driver_queue() {
    let (r, v) = run(&scenario(
        "standard = \"ac\"\nmcs = 7\nwidth = 20\nper = 0.1\ndriver_limit_pkts = 8\n\
         ap = \"driver_fifo\"",
        "",
    ));
    let t = &r.totals;
    // Conservation through the MAC: retry drops count as link losses, what the MAC holds as
    // in flight.
    assert_eq!(
        t.sent_pkts,
        t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts
    );
    assert_eq!(
        t.acks_sent,
        t.acks_delivered + t.acks_dropped + t.acks_in_flight
    );
    let w = &v["wifi"];
    assert_eq!(w["driver"]["stats"]["max_pending_pkts"], 8);
    assert!(
        w["driver"]["stats"]["backlog_pkts"]["max"]
            .as_u64()
            .unwrap()
            <= 8
    );
    // 10 % PER with 7 retries: residual 1e-8, so no drop; a tenth of the MPDUs that did not
    // collide was received in error (binomial sd at ~2·10^4 MPDUs: 0.002).
    let down = &w["downlink"];
    assert_eq!(down["retry_drops"], 0);
    let f = |k: &str| down[k].as_f64().unwrap();
    let rate = f("per_errors") / (f("mpdu_tx") - f("collided_mpdus"));
    assert!((rate - 0.1).abs() < 0.01, "{rate}");
    assert!(f("retries") >= f("per_errors") + f("collided_mpdus") - 64.0);
    // Cubic fills the 1000-packet FIFO: the delay is in the AQM, the driver's is bounded by
    // its 8 packets (a few aggregates' airtime).
    let q = v["queues"].as_array().unwrap();
    assert_eq!(q[1]["name"], "driver");
    let aqm_p50 = q[0]["sojourn_ms"]["p50"].as_f64().unwrap();
    let drv_p95 = q[1]["sojourn_ms"]["p95"].as_f64().unwrap();
    assert!(
        aqm_p50 > 5.0 * drv_p95,
        "aqm p50 {aqm_p50} driver p95 {drv_p95}"
    );
    // The driver queue has its own rows in the samples.
    assert_eq!(r.queue_names, vec!["single", "driver"]);
    assert!(r.samples.queue.contains(&1));
    let util = w["airtime"]["utilisation"].as_f64().unwrap();
    assert!(util > 0.9 && util <= 1.0, "{util}");
}

#[test]
fn same_seed_same_run_other_seed_differs() {
    let text = scenario(
        "standard = \"ax\"\nmcs = 5\nwidth = 20\nper = 0.05\nstations = 2",
        "",
    );
    let (a, _) = run(&text);
    let (b, _) = run(&text);
    assert_eq!(a.summary_json, b.summary_json);
    let (c, _) = run(&text.replace("seed = 3", "seed = 4"));
    assert_ne!(a.summary_json, c.summary_json);
}

/// A scratch directory for rate-trace files.
fn trace_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("l4s-wifi-rt-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bad_rate_traces_are_refused_naming_the_line_and_field() {
    let d = trace_dir("bad");
    let cases = [
        ("0,54\n1,24,3\n", "line 2: 3 field(s)"),
        ("0,54\nsoon,24\n", "line 2: time_s \"soon\""),
        ("0,54\n-1,24\n", "line 2: time_s \"-1\""),
        (
            "# time_s,rate_mbps\n0.5,54\n",
            "line 2: time_s 0.5 starts the trace",
        ),
        ("0,54\n2,24\n\n2,12\n", "line 4: time_s 2 is not after"),
        (
            "0,54\n1,0.5\n",
            "line 2: rate_mbps \"0.5\" is not a rate in [1, 10000] Mb/s",
        ),
        ("0,20000\n", "line 1: rate_mbps \"20000\""),
        ("0,NaN\n", "line 1: rate_mbps \"NaN\""),
        ("# nothing\n\n", "no points"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let file = format!("t{i}.csv");
        std::fs::write(d.join(&file), text).unwrap();
        let s =
            Scenario::from_toml_str(&scenario(&format!("rate_trace = \"{file}\""), "")).unwrap();
        let e = l4s_sim::run_in(&s, &d).unwrap_err();
        assert_eq!(e.path(), Some("link.wifi.rate_trace"), "{e}");
        assert!(e.to_string().contains(want), "{text:?}: {e}");
    }
    let s = Scenario::from_toml_str(&scenario("rate_trace = \"missing.csv\"", "")).unwrap();
    let e = l4s_sim::run_in(&s, &d).unwrap_err().to_string();
    assert!(
        e.contains("link.wifi.rate_trace") && e.contains("missing.csv"),
        "{e}"
    );
    // A trace and a fixed rate: refused when the scenario is read, in one line.
    for fixed in [
        "phy_rate = \"54mbit\"",
        "standard = \"ac\"\nmcs = 7",
        "mcs = 7",
    ] {
        let text = scenario(&format!("rate_trace = \"t0.csv\"\n{fixed}"), "");
        let e = Scenario::from_toml_str(&text).unwrap_err();
        assert_eq!(e.path(), Some("link.wifi.rate_trace"), "{e}");
        assert!(e.to_string().contains("set together with"), "{e}");
        assert_eq!(e.to_string().lines().count(), 1);
    }
}

#[test]
fn a_rate_trace_sets_the_phy_rate_over_time() {
    // 54 Mb/s, then 24 Mb/s from 3 s: the capacity over the 1–6 s window is the trace's mean,
    // (2·54 + 3·24)/5 = 36 Mb/s, and the saturated hop delivers between what it does at a fixed
    // 54 and a fixed 24 Mb/s (the per-segment closed form is l4s-core's wifi test).
    let d = trace_dir("ok");
    std::fs::write(d.join("step.csv"), "# time_s,rate_mbps\n0,54\n3,24\n").unwrap();
    let s = Scenario::from_toml_str(&scenario("rate_trace = \"step.csv\"", "")).unwrap();
    let r = l4s_sim::run_in(&s, &d).unwrap();
    let v: Value = serde_json::from_str(&r.summary_json).unwrap();
    let cap = v["link"]["capacity_mbps"].as_f64().unwrap();
    assert!((cap - 36.0).abs() < 1e-9, "{cap}");
    assert_eq!(v["wifi"]["rate_trace_points"], 2);
    assert!(v["wifi"]["phy_rate_mbps"].is_null());
    let (fast, _) = run(&scenario("phy_rate = \"54mbit\"", ""));
    let (slow, _) = run(&scenario("phy_rate = \"24mbit\"", ""));
    let got = r.totals.delivered_pkts;
    assert!(
        slow.totals.delivered_pkts < got && got < fast.totals.delivered_pkts,
        "24 Mb/s {} < trace {got} < 54 Mb/s {}",
        slow.totals.delivered_pkts,
        fast.totals.delivered_pkts
    );
}
