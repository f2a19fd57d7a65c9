//! `[link] model = "wifi"` in the emulator: both directions through the one medium (the
//! simulator's MAC), against the model's own arithmetic; a Wi-Fi table on one direction only
//! is refused by name.

mod common;

use common::{can_run, emu_iperf3, read_json, serial, stderr, stdout, TempDir};
use l4s_core::wifi::{Phy, Standard, WifiParams};
use l4s_emu::path::{Path, PathConfig};
use serde_json::{json, Value};

/// 802.11ac MCS 3, 20 MHz, one stream (26 Mb/s PHY), the other keys at their defaults.
const WIFI: &str =
    "[link]\nmodel = \"wifi\"\n[link.wifi]\nstandard = \"ac\"\nmcs = 3\nwidth = 20\n";

fn params() -> WifiParams {
    WifiParams::new(Phy::mcs(Standard::Vht, 3, 20, 1).unwrap())
}

#[test]
fn a_wifi_link_on_one_direction_only_is_refused_by_name() {
    let wifi = json!({"model": "wifi", "wifi": {"standard": "ac", "mcs": 3, "width": 20}});
    let mut down = Path::new(PathConfig::from_tables(wifi, json!({"kind": "fifo"})).unwrap())
        .expect("a Wi-Fi direction builds");
    let smooth = json!({"rate": "10mbit"});
    let mut up =
        Path::new(PathConfig::from_tables(smooth, json!({"kind": "fifo"})).unwrap()).unwrap();
    let e = Path::share_wifi(&mut up, &mut down, Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("link.model") && e.contains("one direction"),
        "{e}"
    );
}

/// The emulator takes `[link.wifi] driver` through the simulator's config: "ath9k" builds
/// both directions' shared medium with its TXQs (no namespace needed), and "ath9k" with
/// `ap = "driver_fifo"` is refused naming the field.
#[test]
fn ath9k_driver_builds_and_its_errors_are_named() {
    let wifi = |ap: &str| {
        json!({"model": "wifi",
               "wifi": {"standard": "ac", "mcs": 3, "width": 20, "driver": "ath9k", "ap": ap}})
    };
    let path =
        |ap: &str| PathConfig::from_tables(wifi(ap), json!({"kind": "fifo"})).and_then(Path::new);
    let mut down = path("mac80211").expect("an ath9k AP builds");
    let mut up = path("mac80211").unwrap();
    Path::share_wifi(&mut up, &mut down, Default::default()).expect("one medium");
    let e = path("driver_fifo").err().expect("refused").to_string();
    assert!(
        e.contains("link.wifi.driver") && e.contains("link.wifi.ap"),
        "{e}"
    );
}

#[test]
fn iperf3_downlink_reaches_the_mac_capacity_and_ping_pays_the_access_delay() {
    let _g = serial();
    if !can_run(&["iperf3", "ping"]) {
        return;
    }
    let t = TempDir::new("wifi");
    let scen = t.0.join("s.toml");
    std::fs::write(
        &scen,
        format!("warmup = \"2s\"\n{WIFI}[aqm]\nkind = \"fifo\"\nlimit = 1000\n[emulator]\ndelay = \"5ms\"\n"),
    )
    .unwrap();
    let out = t.0.join("run");
    // Ten pings on the idle medium, then Cubic from the server (the access point's side) to
    // the client for 5 s: data down, its ACKs up, through the one medium.
    let o = emu_iperf3(
        &scen,
        &out,
        "ping -n -c 10 -i 0.05 $L4SLAB_SERVER && iperf3 -c $L4SLAB_SERVER -R -t 5 >/dev/null",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let p = params();
    // One saturated station, no errors, full aggregates of 1500-byte packets: each cycle is
    // AIFS + mean backoff (CWmin/2 slots) + PPDU + SIFS + BlockAck (the core's closed form).
    let (k, psdu) = p.full_aggregate(1500);
    let cycle_s = (p.edca.aifs().0 as f64
        + p.edca.cw_min as f64 / 2.0 * p.edca.slot.0 as f64
        + p.exchange_ns(psdu) as f64)
        * 1e-9;
    // Goodput: 1448 payload bytes of each 1500 (TCP with timestamps).
    let cap_mbps = k as f64 * 1448.0 * 8.0 / cycle_s / 1e6;
    let s = &read_json(&out.join("raw/downlink.json"))["summary"];
    let tput: f64 = s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["tput_mbps"].as_f64().unwrap_or(0.0))
        .sum();
    // The ACKs' channel accesses and the AP/station collisions cost airtime, and a loaded
    // host may leave the queue empty now and then: at least 80 %, never above the capacity.
    assert!(
        tput <= cap_mbps * 1.01 && tput >= 0.8 * cap_mbps,
        "downlink {tput:.2} Mb/s against the MAC capacity {cap_mbps:.2} Mb/s"
    );
    // Ping crosses the medium both ways: at least the delay both ways plus, per direction,
    // AIFS and one exchange of an 84-byte packet (a backoff of 0 slots at best).
    let min_rtt_ms = common::ping_times(&stdout(&o))
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    let access_ms = (p.edca.aifs().0 + p.exchange_ns(p.phy.subframe_bytes(84))) as f64 * 1e-6;
    eprintln!(
        "downlink {tput:.2} Mb/s of {cap_mbps:.2}; ping min {min_rtt_ms} ms, bound {:.3} ms",
        10.0 + 2.0 * access_ms
    );
    assert!(
        min_rtt_ms >= 10.0 + 2.0 * access_ms,
        "ping {min_rtt_ms} ms under 10 ms + 2 x {access_ms:.3} ms"
    );
    // Conservation through the MAC on both directions: what the MAC still holds (driver
    // queue, in the air, the station's queue, reorder buffers) counts as in flight.
    for d in ["uplink", "downlink"] {
        let n: &Value = &read_json(&out.join(format!("raw/{d}.json")))["summary"]["packets"];
        let g = |k: &str| n[k].as_u64().unwrap();
        assert_eq!(
            g("sent"),
            g("delivered") + g("aqm_dropped") + g("link_lost") + g("in_flight"),
            "{d}: {n}"
        );
        assert!(g("delivered") > 100, "{d}: {n}");
    }
    wifi_block_holds_the_macs_invariants(&out, &p);
}

/// The access point's direction records the simulator's `wifi` block and `driver` queue rows
/// (the station's direction neither); each figure within what the MAC's rules allow.
fn wifi_block_holds_the_macs_invariants(out: &std::path::Path, p: &WifiParams) {
    let up = read_json(&out.join("raw/uplink.json"));
    assert!(up["summary"].get("wifi").is_none());
    assert!(!up["queue_names"].to_string().contains("driver"));
    let down = read_json(&out.join("raw/downlink.json"));
    let w = &down["summary"]["wifi"];
    let f = |v: &Value| {
        v.as_f64()
            .unwrap_or_else(|| panic!("not a number: {v} in {w}"))
    };
    let u = |v: &Value| {
        v.as_u64()
            .unwrap_or_else(|| panic!("not a count: {v} in {w}"))
    };
    // Airtime shares of the window after warmup: the medium was busy, never more than always.
    let air = &w["airtime"];
    assert!(
        f(&air["utilisation"]) > 0.0 && f(&air["utilisation"]) <= 1.0,
        "{air}"
    );
    assert!(f(&air["downlink"]) > 0.0 && f(&air["downlink"]) <= f(&air["utilisation"]));
    assert!(u(&w["collisions"]) <= u(&w["exchanges"]), "{w}");
    for d in ["downlink", "uplink"] {
        let b = &w[d];
        // Every aggregate holds 1..=max_mpdus MPDUs; retries are among the transmissions.
        let hist: Vec<u64> = b["aggregate_mpdus"]["hist"]
            .as_array()
            .unwrap()
            .iter()
            .map(u)
            .collect();
        assert_eq!(
            hist.first().copied().unwrap_or(0),
            0,
            "{d}: empty aggregate"
        );
        assert_eq!(hist.len(), p.max_mpdus as usize + 1, "{d}: {hist:?}");
        assert_eq!(hist.iter().sum::<u64>(), u(&b["txops"]), "{d}");
        let mpdus: u64 = hist.iter().enumerate().map(|(k, n)| k as u64 * n).sum();
        assert_eq!(mpdus, u(&b["mpdu_tx"]), "{d}");
        for q in ["p50", "p95"] {
            let k = u(&b["aggregate_mpdus"][q]);
            assert!((1..=p.max_mpdus as u64).contains(&k), "{d} {q}: {k}");
        }
        assert!(u(&b["retries"]) <= u(&b["mpdu_tx"]), "{d}: {b}");
        // Each access waits at least AIFS (recorded in whole µs).
        let aifs_ms = (p.edca.aifs().0 / 1_000) as f64 / 1e3;
        for q in ["p50", "p95", "p99"] {
            assert!(f(&b["access_delay_ms"][q]) >= aifs_ms, "{d} {q}: {b}");
        }
    }
    // The driver queue (AQL, 12 ms by default): a packet is handed down only while the
    // pending airtime is under the limit, so pending · (airtime of the smallest IP packet, 40
    // bytes) < limit + (airtime of the largest, 1500 bytes).
    let limit_ms = f(&w["driver"]["limit"]["airtime_ms"]);
    let bound = (limit_ms * 1e6 + p.phy.subframe_airtime_ns(1500) as f64)
        / p.phy.subframe_airtime_ns(40) as f64;
    let st = &w["driver"]["stats"];
    let max_pending = u(&st["max_pending_pkts"]);
    assert!(
        max_pending >= 1 && (max_pending as f64) < bound,
        "{st}, bound {bound:.0}"
    );
    assert!(u(&st["backlog_pkts"]["max"]) <= max_pending, "{st}");
    // The driver queue's rows: every sample's backlog within the same bound.
    let names = down["queue_names"].as_array().unwrap();
    let qi = names
        .iter()
        .position(|n| n == "driver")
        .expect("a driver queue") as u64;
    let s = &down["samples"];
    let rows: Vec<u64> = s["queue"]
        .as_array()
        .unwrap()
        .iter()
        .zip(s["backlog_pkts"].as_array().unwrap())
        .filter(|(q, _)| u(q) == qi)
        .map(|(_, b)| u(b))
        .collect();
    assert!(rows.len() > 10, "{} driver rows", rows.len());
    assert!(rows.iter().all(|&b| b <= max_pending), "{rows:?}");
    assert!(
        rows.iter().any(|&b| b > 0),
        "the driver queue never held a packet"
    );
    eprintln!(
        "wifi: utilisation {:.3}, downlink aggregate p50 {}, access p50 {} ms, max pending {} \
         (bound {bound:.0}), {} collisions of {} exchanges",
        f(&air["utilisation"]),
        w["downlink"]["aggregate_mpdus"]["p50"],
        w["downlink"]["access_delay_ms"]["p50"],
        max_pending,
        w["collisions"],
        w["exchanges"]
    );
}

/// `link.utilisation` of a Wi-Fi link is defined as in the simulator (`World::wifi_timer` ->
/// `propagate`): the IP bytes the MAC delivered on the access point's direction after warmup
/// (released in order to the station), over the PHY rate times the window. Driven on a
/// perfect clock: 20 Mb/s of 1500-byte UDP offered to the 26 Mb/s PHY, delay 0, so each
/// packet is written at the instant the MAC delivered it.
#[test]
fn wifi_utilisation_is_the_macs_delivered_bytes_over_the_phy_rate() {
    use l4s_core::{Ecn, Nanos};
    use l4s_emu::packet::{build, proto};
    let link = json!({"model": "wifi", "wifi": {"standard": "ac", "mcs": 3, "width": 20}});
    let mk = || {
        let mut c = PathConfig::from_tables(link.clone(), json!({"kind": "fifo"})).unwrap();
        c.warmup = Nanos::from_ms(500);
        Path::new(c).unwrap()
    };
    let (mut station, mut ap) = (mk(), mk());
    Path::share_wifi(&mut station, &mut ap, Default::default()).unwrap();
    let pkt = build::ipv4(
        [10, 0, 0, 2],
        [10, 0, 0, 1],
        proto::UDP,
        5201,
        4000,
        Ecn::NotEct.bits(),
        1500,
    );
    let end = Nanos::from_secs(2);
    let gap = Nanos::from_us(600); // 1500 B every 600 us = 20 Mb/s
    let (warm, mut next_arrival, mut bytes_after_warmup) = (Nanos::from_ms(500), Nanos::ZERO, 0u64);
    loop {
        let now = [
            Some(next_arrival),
            ap.next_deadline(),
            station.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        if now > end {
            break;
        }
        if next_arrival <= now {
            ap.push(&pkt, next_arrival);
            next_arrival += gap;
        }
        while let Some((b, at)) = ap.pop_due(now) {
            ap.record_sent(at, now);
            if at > warm {
                bytes_after_warmup += b.len() as u64;
            }
            ap.recycle(b);
        }
        while let Some((b, at)) = station.pop_due(now) {
            station.record_sent(at, now);
            station.recycle(b);
        }
    }
    let r = ap.finish(end);
    let s: Value = serde_json::from_str(&r.run.summary_json).unwrap();
    let phy_bps = params().phy.rate_bps();
    let want = bytes_after_warmup as f64 * 8.0 / (phy_bps * (end - warm).as_secs_f64());
    let got = s["link"]["utilisation"].as_f64().unwrap();
    assert!(bytes_after_warmup > 1_000_000, "{bytes_after_warmup}");
    assert!(
        (got - want).abs() <= 1e-12 * want,
        "utilisation {got}, delivered bytes give {want}"
    );
    // 20 Mb/s offered: the MAC carries all of it (IP bytes over a 26 Mb/s PHY).
    assert!(
        (got - 20e6 / phy_bps).abs() < 0.01,
        "{got} against {}",
        20e6 / phy_bps
    );
}
