//! The access point's queueing designs (`[link.wifi] ap`): a Linux AP's root qdisc above
//! mac80211's TXQs holds no queue, the same AQM in the TXQ does; the TXQ row, conservation
//! through the TXQ, and the keys' errors.

use l4s_sim::scenario::Scenario;
use serde_json::Value;

fn scenario(ap: &str, aqm: &str, flows: &str) -> String {
    format!(
        "seed = 5\nduration = \"8s\"\nwarmup = \"2s\"\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\nstandard = \"ac\"\nmcs = 5\nwidth = 20\n{ap}\n[aqm]\n{aqm}\n{flows}"
    )
}

const BULK: &str =
    "[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n[[flows]]\ncc = \"prague\"\nrtt = \"20ms\"\n";

fn run(text: &str) -> (l4s_sim::results::RunResults, Value) {
    let s = Scenario::from_toml_str(text).unwrap();
    let r = l4s_sim::run(&s).unwrap();
    let v: Value = serde_json::from_str(&r.summary_json).unwrap();
    (r, v)
}

fn queue<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == name)
        .unwrap_or_else(|| panic!("no queue {name}"))
}

/// A root `dualpi2` above mac80211 is dequeued in the same instant it is enqueued
/// (`IFF_NO_QUEUE`, no netdev-queue stop): every L and C sojourn is exactly 0, it never
/// marks, and the standing queue is in the station's TXQ (above CoDel's 20 ms target at the
/// median, Cubic beside Prague). The same DualPI2 in the TXQ (`aqm_in_txq`) holds the queue.
#[test]
fn root_dualpi2_holds_no_queue_above_mac80211_but_does_in_the_txq() {
    let (r, v) = run(&scenario("", "kind = \"dualpi2\"", BULK));
    assert_eq!(v["wifi"]["ap"], "mac80211");
    assert_eq!(r.queue_names, vec!["L", "C", "txq/0", "driver"]);
    for name in ["L", "C"] {
        let q = queue(&v, name);
        assert_eq!(q["sojourn_ms"]["p99"].as_f64(), Some(0.0), "{name}");
        assert_eq!(q["marks"], 0, "{name}");
    }
    let txq = queue(&v, "txq/0");
    let p50 = txq["sojourn_ms"]["p50"].as_f64().unwrap();
    assert!(p50 > 20.0, "txq p50 {p50}");
    assert!(txq["marks"].as_u64().unwrap() > 0);
    let t = &r.totals;
    assert_eq!(
        t.sent_pkts,
        t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts
    );

    let (r2, v2) = run(&scenario("ap = \"aqm_in_txq\"", "kind = \"dualpi2\"", BULK));
    assert_eq!(r2.queue_names, vec!["L", "C", "driver"]);
    let c = queue(&v2, "C")["sojourn_ms"]["p99"].as_f64().unwrap();
    assert!(c > 1.0, "C p99 {c}");
    assert!(queue(&v2, "L")["marks"].as_u64().unwrap() > 0);
}

/// `txq_ce_threshold` (ECT(1) only, the L4S proposal) marks Prague's packets at 1 ms in the
/// TXQ and never Cubic's (Not-ECT here: its flow is only dropped, never marked).
#[test]
fn txq_ce_threshold_marks_prague_not_cubic() {
    let (_, v) = run(&scenario(
        "txq_ce_threshold = \"1ms\"",
        "kind = \"fifo\"",
        BULK,
    ));
    let f = v["flows"].as_array().unwrap();
    assert_eq!(f[0]["cc"], "cubic");
    assert_eq!(f[0]["ce_marks"], 0);
    assert!(f[1]["ce_marks"].as_u64().unwrap() > 0);
    assert!(
        v["wifi"]["clients"][0]["txq"]["ce_threshold_marks"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn ap_keys_are_checked_by_name() {
    let cases = [
        ("ap = \"hostapd\"", "link.wifi.ap"),
        ("txq_target = \"0s\"", "link.wifi.txq_target"),
        ("txq_interval = \"100s\"", "link.wifi.txq_interval"),
        ("txq_ce_threshold = \"0s\"", "link.wifi.txq_ce_threshold"),
        (
            "ap = \"driver_fifo\"\ntxq_target = \"5ms\"",
            "link.wifi.txq_target",
        ),
        (
            "ap = \"aqm_in_txq\"\ntxq_ce_threshold = \"1ms\"",
            "link.wifi.txq_ce_threshold",
        ),
    ];
    refused(&cases);
}

/// Each `[link.wifi]` text is refused with an error naming its field; the errors.
fn refused(cases: &[(&str, &str)]) -> Vec<String> {
    cases
        .iter()
        .map(|(keys, field)| {
            let text = scenario(keys, "kind = \"fifo\"", BULK);
            let e = Scenario::from_toml_str(&text).unwrap_err().to_string();
            assert!(e.contains(field), "{keys}: {e}");
            e
        })
        .collect()
}

/// Two saturated stations without aggregation (`max_mpdus = 1`, Heusse et al. 2003), 54 and
/// 6 Mb/s OFDM, UDP at 60 Mb/s to each, `airtime_fairness = false`: the AP's firmware
/// alternates one frame each (round robin), so both get the same throughput and the slow
/// station's share of the AP's airtime is X6/(X6 + X54), X = PPDU + SIFS + ACK of one
/// 1500-byte packet (the performance anomaly).
#[test]
fn without_airtime_fairness_the_performance_anomaly() {
    let (slow, t0, t1) = two_stations(false);
    let anomaly = anomaly_share();
    assert!(
        (slow - anomaly).abs() < 0.01,
        "slow share {slow}, closed form {anomaly}"
    );
    assert!((t0 / t1 - 1.0).abs() < 0.02, "{t0} vs {t1}");
}

/// What mac80211's airtime DRR does with AQL and this firmware (per-station queues served
/// round robin, one aggregate each): nothing. The DRR only orders the TXQs that pass
/// `ieee80211_txq_airtime_check` at a scheduling instant, and its walk in
/// `ieee80211_next_txq` (tx.c: `if (deficit < 0) sta->airtime[ac].deficit +=
/// sta->airtime_weight; ... goto begin;` while `found_eligible_txq`) tops up the only
/// eligible TXQ until it is served. Here the driver is scheduled on each TX status, which
/// frees AQL budget for the one station that was served, so exactly one TXQ is eligible each
/// time; both stations keep frames in the firmware, whose round robin then sets the shares.
/// With airtime fairness on, the outcome equals the one without it to the last bit: the
/// performance anomaly (closed form as above), not equal airtime. mac80211 equalises airtime
/// where the driver cannot serve every TXQ handed out in a round (ath9k: the hardware queue
/// holds `ATH_AGGR_MIN_QDEPTH` aggregates and `ath_tx_sched_aggr` returns -EBUSY after
/// `ieee80211_next_txq` chose the TXQ), which is not the AQL driver modelled here.
#[test]
fn airtime_fairness_under_aql_leaves_the_anomaly() {
    let fair = two_stations(true);
    let plain = two_stations(false);
    assert_eq!(fair, plain);
    let anomaly = anomaly_share();
    assert!((fair.0 - anomaly).abs() < 0.01, "slow share {}", fair.0);
}

fn anomaly_share() -> f64 {
    let x = |mbps: u64| {
        let p = l4s_core::wifi::Phy::ofdm(mbps * 1_000_000, false).unwrap();
        (p.ppdu_ns(p.subframe_bytes(1500)) + 16_000 + p.response_ns()) as f64
    };
    x(6) / (x(6) + x(54))
}

/// The slow station's share of the AP's airtime and the two throughputs.
fn two_stations(fairness: bool) -> (f64, f64, f64) {
    let v = two_stations_run(
        "phy_rate = \"54mbit\"\nmax_mpdus = 1\n",
        "phy_rate = \"54mbit\"",
        "phy_rate = \"6mbit\"",
        fairness,
    );
    shares(&v)
}

/// The slow station's (1) share of the AP's airtime and the two throughputs.
fn shares(v: &Value) -> (f64, f64, f64) {
    let c = &v["wifi"]["clients"];
    let a = |i: usize| c[i]["airtime_share"]["downlink"].as_f64().unwrap();
    let t = |i: usize| v["flows"][i]["tput_mbps"].as_f64().unwrap();
    (a(1) / (a(0) + a(1)), t(0), t(1))
}

/// Two client stations (`fast`, `slow`: their `[[link.wifi.clients]]` keys) under the
/// `[link.wifi]` keys `wifi`, each sent UDP at 60 Mb/s (more than either can take), no
/// uplink; the summary.
fn two_stations_run(wifi: &str, fast: &str, slow: &str, fairness: bool) -> Value {
    let text = format!(
        "seed = 7\nduration = \"6s\"\nwarmup = \"1s\"\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\n{wifi}uplink = false\nairtime_fairness = {fairness}\n\
         [[link.wifi.clients]]\n{fast}\n[[link.wifi.clients]]\n{slow}\n\
         [aqm]\nkind = \"fifo\"\n\
         [[flows]]\ncc = \"cbr\"\nrate = \"60mbit\"\nrtt = \"10ms\"\nstation = 0\n\
         [[flows]]\ncc = \"cbr\"\nrate = \"60mbit\"\nrtt = \"10ms\"\nstation = 1\n"
    );
    run(&text).1
}

/// ath9k under mac80211 (`driver = "ath9k"`), two stations at VHT-MCS 8 and MCS 0, 20 MHz.
const ATH9K_MCS_8_0: &str = "standard = \"ac\"\nmcs = 8\nwidth = 20\ndriver = \"ath9k\"\n";

/// A full aggregate of 1500-byte packets at `mcs` (20 MHz, one stream, 64 MPDUs, 5.484 ms):
/// its MPDUs and its exchange (PPDU + SIFS + BlockAck), ns.
fn full_exchange(mcs: u32) -> (u32, u64) {
    let phy = l4s_core::wifi::Phy::mcs(l4s_core::wifi::Standard::Vht, mcs, 20, 1).unwrap();
    let p = l4s_core::wifi::WifiParams::new(phy);
    let (n, psdu) = p.full_aggregate(1500);
    (n, p.exchange_ns(psdu))
}

/// With ath9k's driver mac80211's airtime DRR decides whose aggregate the AP sends next
/// (`ath_txq_schedule` forms one aggregate per `ieee80211_next_txq` hand-out, into a
/// hardware queue of `ATH_AGGR_MIN_QDEPTH` = 2): two saturated stations at MCS 8 and MCS 0
/// get equal downlink airtime (within 5 %), and so throughputs in the ratio of their
/// aggregates' effective rates: each sends full aggregates (34 MPDUs in 5.476 ms at MCS 8,
/// 2 in 3.892 ms at MCS 0), so throughput_i = airtime_i · N_i · 1500 B / T_i, and
/// t8 / t0 = (a8 / a0) · (N8 / T8) / (N0 / T0) (12.08 at equal airtime; the PHY rates'
/// 78 / 6.5 = 12 less the per-exchange preamble, SIFS and BlockAck). Within 2 %: a
/// station's second aggregate formed while its first is in the air can be cut by the
/// BlockAck window (64 from its oldest outstanding MPDU). The hardware queue reaches
/// exactly 2 aggregates and never more.
#[test]
fn ath9k_airtime_fairness_gives_equal_airtime() {
    let v = two_stations_run(ATH9K_MCS_8_0, "mcs = 8", "mcs = 0", true);
    assert_eq!(v["wifi"]["tx_driver"], "ath9k");
    assert_eq!(v["wifi"]["hw_queue_max_aggregates"], 2);
    let c = &v["wifi"]["clients"];
    let a = |i: usize| c[i]["airtime_share"]["downlink"].as_f64().unwrap();
    let (a8, a0) = (a(0), a(1));
    assert!((a8 / a0 - 1.0).abs() < 0.05, "airtime {a8} vs {a0}");
    let (n8, t8) = full_exchange(8);
    let (n0, t0) = full_exchange(0);
    assert_eq!((n8, n0), (34, 2));
    let (_, tput8, tput0) = shares(&v);
    let want = (a8 / a0) * (n8 as f64 / t8 as f64) / (n0 as f64 / t0 as f64);
    assert!(
        (tput8 / tput0 / want - 1.0).abs() < 0.02,
        "throughput ratio {} vs closed form {want}",
        tput8 / tput0
    );
}

/// Without airtime fairness (`airtime_fairness = false`: no deficit, a returned TXQ goes to
/// the tail) ath9k's loop is not a round robin per aggregate: `ath_txq_schedule` hands
/// every active TXQ out once per round (`ieee80211_next_txq` until the head was served this
/// round), and a TXQ that finds the hardware queue full (`ath_tx_sched_aggr` → -EBUSY,
/// its frame parked in `tid->retry_q`) is returned with `force` to the tail, as is the one
/// that formed. A full round moves every TXQ from head to tail, so the list's order never
/// changes, and at each TX status the TXQ at its head takes the one freed slot: with both
/// stations saturated the head station (here the slow one) sends every aggregate after
/// warmup and the other none. Not Heusse's anomaly (equal aggregate counts): starvation.
#[test]
fn ath9k_without_airtime_fairness_the_head_txq_takes_every_slot() {
    let v = two_stations_run(ATH9K_MCS_8_0, "mcs = 8", "mcs = 0", false);
    assert_eq!(v["wifi"]["hw_queue_max_aggregates"], 2);
    let (slow, tput8, tput0) = shares(&v);
    assert_eq!(slow, 1.0);
    assert_eq!(tput8, 0.0);
    assert!(tput0 > 5.0, "{tput0}");
}

/// ath9k with the scenario's AQM in place of the TXQ (`ap = "aqm_in_txq"`, one station):
/// DualPI2 is pulled an aggregate at a time into the 2-aggregate hardware queue, holds the
/// queue (L marks, C sojourn above 1 ms) and every packet is accounted for.
#[test]
fn ath9k_pulls_the_aqm_in_the_txq() {
    let (r, v) = run(&scenario(
        "ap = \"aqm_in_txq\"\ndriver = \"ath9k\"",
        "kind = \"dualpi2\"",
        BULK,
    ));
    assert_eq!(v["wifi"]["tx_driver"], "ath9k");
    assert_eq!(v["wifi"]["hw_queue_max_aggregates"], 2);
    assert!(queue(&v, "L")["marks"].as_u64().unwrap() > 0);
    let c = queue(&v, "C")["sojourn_ms"]["p99"].as_f64().unwrap();
    assert!(c > 1.0, "C p99 {c}");
    let t = &r.totals;
    assert_eq!(
        t.sent_pkts,
        t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts
    );
    for f in v["flows"].as_array().unwrap() {
        assert!(f["tput_mbps"].as_f64().unwrap() > 1.0, "{f}");
    }
}

#[test]
fn driver_key_is_checked_by_name() {
    let errs = refused(&[
        ("driver = \"ath10k\"", "link.wifi.driver"),
        (
            "ap = \"driver_fifo\"\ndriver = \"ath9k\"",
            "link.wifi.driver",
        ),
        (
            "driver = \"ath9k\"\ndriver_limit = \"5ms\"",
            "link.wifi.driver_limit",
        ),
        ("driver = \"ath9k\"\nmax_mpdus = 1", "link.wifi.max_mpdus"),
        (
            "driver = \"ath9k\"\nap = \"aqm_in_txq\"\n[[link.wifi.clients]]\n[[link.wifi.clients]]",
            "link.wifi.driver",
        ),
    ]);
    assert!(
        errs[0].contains("\"firmware_rr\" or \"ath9k\""),
        "{}",
        errs[0]
    );
    assert!(errs[1].contains("link.wifi.ap"), "{}", errs[1]);
}

#[test]
fn client_and_station_keys_are_checked_by_name() {
    let base = "seed = 1\nduration = \"1s\"\n[link]\nmodel = \"wifi\"\n[link.wifi]\n\
                standard = \"ac\"\nmcs = 5\nwidth = 20\n";
    let cases = [
        (
            "[[link.wifi.clients]]\nmcs = 10\n",
            "",
            "link.wifi.clients[0].mcs",
        ),
        (
            "[[link.wifi.clients]]\nper = 1.5\n",
            "",
            "link.wifi.clients[0].per",
        ),
        (
            "[[link.wifi.clients]]\nmcs = 1\nphy_rate = \"6mbit\"\n",
            "",
            "link.wifi.clients[0].phy_rate",
        ),
        (
            "[[link.wifi.clients]]\n[[link.wifi.clients]]\n",
            "station = 2\n",
            "flows[0].station",
        ),
        (
            "ap = \"aqm_in_txq\"\ndriver_limit_pkts = 8\n[[link.wifi.clients]]\n\
             [[link.wifi.clients]]\n",
            "",
            "link.wifi.driver_limit_pkts",
        ),
        ("driver_limit_pkts = 8\n", "", "link.wifi.driver_limit_pkts"),
    ];
    for (wifi, flow, field) in cases {
        let text = format!(
            "{base}{wifi}[aqm]\nkind = \"fifo\"\n[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n{flow}"
        );
        let e = Scenario::from_toml_str(&text).unwrap_err().to_string();
        assert!(e.contains(field), "{wifi}{flow}: {e}");
    }
}

/// One client at VHT-MCS 5 with a Cubic download (its ACKs on the uplink) and `keys`.
fn per_run(keys: &str) -> Value {
    let text = format!(
        "seed = 3\nduration = \"4s\"\nwarmup = \"1s\"\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\nstandard = \"ac\"\nmcs = 5\nwidth = 20\n{keys}\n[aqm]\nkind = \"fifo\"\n\
         [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n"
    );
    run(&text).1
}

/// `per_down` errs only downlink MPDUs and `per_up` only uplink ones (the other direction
/// has exactly 0 errors); `per` is both: the run is identical to `per_down` = `per_up` = it.
#[test]
fn per_up_and_per_down_err_one_direction_each() {
    let errors = |v: &Value, dir: &str| v["wifi"][dir]["per_errors"].as_u64().unwrap();
    let down = per_run("per_down = 0.1");
    assert!(errors(&down, "downlink") > 0);
    assert_eq!(errors(&down, "uplink"), 0);
    let up = per_run("per_up = 0.1");
    assert_eq!(errors(&up, "downlink"), 0);
    assert!(errors(&up, "uplink") > 0);
    assert_eq!(up["wifi"]["per_up"].as_f64(), Some(0.1));
    let both = per_run("per = 0.05");
    let split = per_run("per_down = 0.05\nper_up = 0.05");
    assert!(errors(&both, "downlink") > 0 && errors(&both, "uplink") > 0);
    assert_eq!(both["wifi"], split["wifi"]);
    assert_eq!(both["flows"], split["flows"]);
}

/// A client inherits each direction it does not set from the table.
#[test]
fn client_inherits_the_direction_it_does_not_set() {
    let v = per_run("per_down = 0.1\n[[link.wifi.clients]]\nper_up = 0.1");
    for dir in ["downlink", "uplink"] {
        assert!(v["wifi"][dir]["per_errors"].as_u64().unwrap() > 0, "{dir}");
    }
    let v = per_run("per_down = 0.1\n[[link.wifi.clients]]\nper_down = 0.0");
    assert_eq!(v["wifi"]["downlink"]["per_errors"], 0);
    assert_eq!(v["wifi"]["uplink"]["per_errors"], 0);
}

#[test]
fn per_keys_are_checked_by_name() {
    let cases = [
        ("per = 0.1\nper_down = 0.1", "link.wifi.per_down"),
        ("per = 0.1\nper_up = 0.1", "link.wifi.per_up"),
        ("per_up = 1.0", "link.wifi.per_up"),
        ("per_down = -0.1", "link.wifi.per_down"),
        (
            "[[link.wifi.clients]]\n[[link.wifi.clients]]\nper_down = 1.5",
            "link.wifi.clients[1].per_down",
        ),
        (
            "[[link.wifi.clients]]\nper = 0.1\nper_up = 0.2",
            "link.wifi.clients[0].per_up",
        ),
    ];
    for e in refused(&cases) {
        assert!(
            e.contains("[0, 1)") || e.contains("per_down / per_up"),
            "{e}"
        );
    }
}

/// A `fifo` AQM above a one-packet driver (`driver_fifo`, 54 Mb/s, no aggregation, no
/// uplink, one station) fed by `n` CBR flows at `rate` each, started together: the summary's
/// `pull_wait` entry of its queue.
fn pull_wait(n: u32, rate: &str) -> Value {
    let text = format!(
        "seed = 2\nduration = \"4s\"\nwarmup = \"1s\"\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\nphy_rate = \"54mbit\"\nmax_mpdus = 1\nuplink = false\n\
         ap = \"driver_fifo\"\ndriver_limit_pkts = 1\n[aqm]\nkind = \"fifo\"\n\
         [[flows]]\ncc = \"cbr\"\nrate = \"{rate}\"\nrtt = \"10ms\"\ncount = {n}\n"
    );
    let v = run(&text).1;
    let w = &v["wifi"]["pull_wait"];
    assert_eq!(w.as_array().map(Vec::len), Some(1));
    assert_eq!(w[0]["queue"], "single");
    w[0].clone()
}

/// The split of an AQM sojourn into waiting for driver room and waiting behind other
/// packets. Two 5 Mb/s CBR flows send a pair of 1500-byte packets every 2.4 ms: the first
/// finds the driver empty (sojourn 0), the second waits for the first's exchange to end and
/// leaves at that first pull: its whole sojourn is driver wait, below one pull interval
/// (AIFS + ≤ 15 slots + one exchange), and nothing is behind (exactly 0). Two 30 Mb/s flows
/// (above the ~30 Mb/s the MAC carries) fill the FIFO: the driver wait stays below one pull
/// interval and the rest of the sojourn is the queue ahead.
#[test]
fn pull_wait_splits_driver_room_from_the_queue_ahead() {
    let phy = l4s_core::wifi::Phy::ofdm(54_000_000, false).unwrap();
    let exchange = phy.ppdu_ns(phy.subframe_bytes(1500)) + 16_000 + phy.response_ns();
    let interval_ms = (43_000 + 15 * 9_000 + exchange) as f64 / 1e6;
    let ms = |w: &Value, k: &str| w[k].as_f64().unwrap();

    let pairs = pull_wait(2, "5mbit");
    assert!(pairs["packets"].as_u64().unwrap() > 2000);
    assert_eq!(ms(&pairs, "behind_ms_mean"), 0.0);
    let wait = ms(&pairs["driver_wait_ms"], "mean");
    assert_eq!(wait, ms(&pairs, "sojourn_ms_mean"));
    // Half the packets wait 0, the other half at least one exchange, at most one interval.
    let (lo, hi) = (exchange as f64 / 1e6 / 2.0, interval_ms / 2.0);
    assert!(wait > lo && wait < hi, "{wait} not in ({lo}, {hi})");

    let heavy = pull_wait(2, "30mbit");
    let p99 = ms(&heavy["driver_wait_ms"], "p99");
    assert!(p99 <= interval_ms * 1.001, "p99 {p99} vs {interval_ms}");
    assert!(ms(&heavy, "behind_ms_mean") > 10.0 * interval_ms);
}

/// `ap = "aqm_in_txq"` with two client stations: each station's TXQ is its own DualPI2
/// (station 0 in the `L`/`C` rows, station 1 in `L/1`/`C/1`). Station 0 carries Prague and
/// Cubic, station 1 Cubic only: station 1's L queue sees no packet at all, its C queue
/// holds Cubic's standing queue (above the 1 ms step, below DualPI2's 15 ms target at
/// the median); every packet is accounted for.
#[test]
fn aqm_in_txq_gives_each_station_its_own_dualpi2() {
    let text = "seed = 4\nduration = \"8s\"\nwarmup = \"2s\"\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\nstandard = \"ac\"\nmcs = 5\nwidth = 20\nap = \"aqm_in_txq\"\n\
         [[link.wifi.clients]]\n[[link.wifi.clients]]\nmcs = 3\n\
         [aqm]\nkind = \"dualpi2\"\n\
         [[flows]]\ncc = \"prague\"\nrtt = \"20ms\"\n\
         [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n\
         [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\nstation = 1\n";
    let (r, v) = run(text);
    assert_eq!(r.queue_names, vec!["L", "C", "L/1", "C/1", "driver"]);
    for name in ["L", "C", "C/1"] {
        assert!(
            queue(&v, name)["packets"].as_u64().unwrap() > 1000,
            "{name}"
        );
    }
    assert_eq!(queue(&v, "L/1")["packets"], 0);
    assert!(queue(&v, "L")["marks"].as_u64().unwrap() > 0);
    let f = v["flows"].as_array().unwrap();
    // Station 1's only flow is the only one its C queue can drop.
    let drops = |q: &str| queue(&v, q)["drops"].as_u64().unwrap();
    assert!(drops("C/1") <= f[2]["drops"].as_u64().unwrap());
    assert!(f.iter().all(|f| f["tput_mbps"].as_f64().unwrap() > 1.0));
    let t = &r.totals;
    assert_eq!(
        t.sent_pkts,
        t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts
    );
}

/// Two clients, UDP at 20 Mb/s to each (no aggregation, no uplink); client 1 at `client1`.
fn client_trace_run(client1: &str) -> Value {
    let text = format!(
        "seed = 6\nduration = \"4s\"\nwarmup = \"1s\"\n[link]\nmodel = \"wifi\"\n\
         [link.wifi]\nphy_rate = \"54mbit\"\nmax_mpdus = 1\nuplink = false\n\
         [[link.wifi.clients]]\n[[link.wifi.clients]]\n{client1}\n\
         [aqm]\nkind = \"fifo\"\n\
         [[flows]]\ncc = \"cbr\"\nrate = \"20mbit\"\nrtt = \"10ms\"\n\
         [[flows]]\ncc = \"cbr\"\nrate = \"20mbit\"\nrtt = \"10ms\"\nstation = 1\n"
    );
    run(&text).1
}

/// A client's own `rate_trace`: a one-point trace at 6 Mb/s runs exactly as `phy_rate =
/// "6mbit"` (same summary to the last bit); a step 54 → 6 Mb/s at 2 s differs from both
/// constant rates, and gives the stepping client a throughput between theirs.
#[test]
fn client_rate_trace_sets_that_clients_rate() {
    let dir = std::env::temp_dir().join(format!("l4slab-client-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flat = dir.join("flat.csv");
    let step = dir.join("step.csv");
    std::fs::write(&flat, "0,6\n").unwrap();
    std::fs::write(&step, "# time_s,rate_mbps\n0,54\n2,6\n").unwrap();
    let traced = client_trace_run(&format!("rate_trace = \"{}\"", flat.display()));
    let fixed = client_trace_run("phy_rate = \"6mbit\"");
    assert_eq!(traced["flows"], fixed["flows"]);
    assert_eq!(traced["wifi"]["clients"], fixed["wifi"]["clients"]);
    let fast = client_trace_run("phy_rate = \"54mbit\"");
    let stepped = client_trace_run(&format!("rate_trace = \"{}\"", step.display()));
    let t = |v: &Value| v["flows"][1]["tput_mbps"].as_f64().unwrap();
    assert!(
        t(&fixed) < t(&stepped) && t(&stepped) < t(&fast),
        "{} {} {}",
        t(&fixed),
        t(&stepped),
        t(&fast)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn client_rate_trace_keys_are_checked_by_name() {
    let cases = [
        (
            "[[link.wifi.clients]]\n[[link.wifi.clients]]\nrate_trace = \"x.csv\"\nmcs = 3",
            "link.wifi.clients[1].rate_trace",
        ),
        (
            "[[link.wifi.clients]]\nrate_trace = \"x.csv\"",
            "link.wifi.clients[0].rate_trace",
        ),
    ];
    refused(&cases);
    // A missing file is named by its key when the run starts.
    let text = scenario(
        "[[link.wifi.clients]]\n[[link.wifi.clients]]\nrate_trace = \"/nonexistent/r.csv\"",
        "kind = \"fifo\"",
        BULK,
    );
    let s = Scenario::from_toml_str(&text).unwrap();
    let e = l4s_sim::run(&s)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("link.wifi.clients[1].rate_trace"), "{e}");
}
