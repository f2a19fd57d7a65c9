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
    assert!(v["wifi"]["txq"][0]["ce_threshold_marks"].as_u64().unwrap() > 0);
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
    for (keys, field) in cases {
        let text = scenario(keys, "kind = \"fifo\"", BULK);
        let e = Scenario::from_toml_str(&text).unwrap_err().to_string();
        assert!(e.contains(field), "{keys}: {e}");
    }
}
