//! summary.json's `aqm_counters`: DualPI2's marks by cause, since warmup, agree with the
//! per-queue mark counts of the same run and with Linux's `ecn_mark` accounting.

use l4s_sim::run_toml;

#[test]
fn dualpi2_marks_by_cause_add_up_to_the_queue_marks() {
    let r = run_toml(
        r#"
seed = 3
duration = "4s"
warmup = "1s"
[link]
rate = "20mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "20ms"
ecn = "classic"
"#,
    )
    .unwrap();
    let s: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    let c = &s["aqm_counters"];
    let n = |k: &str| {
        c[k].as_u64()
            .unwrap_or_else(|| panic!("no counter {k}: {c}"))
    };
    let q = |name: &str| {
        s["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["name"] == name)
            .unwrap()["marks"]
            .as_u64()
            .unwrap()
    };
    // Both causes act in this run, so the split is not trivially one-sided.
    assert!(n("step_marks") > 0 && n("coupled_marks_l") > 0, "{c}");
    assert!(n("classic_marks") > 0, "{c}");
    // Unique L marks = coupled + overload + step − marked by both; C marks = classic marks.
    assert_eq!(
        n("coupled_marks_l") + n("overload_marks_l") + n("step_marks")
            - n("step_marks_also_coupled"),
        q("L")
    );
    assert_eq!(n("marked_l"), q("L"));
    assert_eq!(n("classic_marks"), q("C"));
    // Linux `ecn_mark` counts every CE-mark action, a packet marked twice counting twice.
    assert_eq!(
        n("ecn_mark"),
        n("coupled_marks_l") + n("overload_marks_l") + n("step_marks") + n("classic_marks")
    );
    assert_eq!(s["windows"]["aqm_counters"], "after_warmup");
}

#[test]
fn aqms_without_named_counters_report_an_empty_object() {
    let r = run_toml(
        "duration = \"1s\"\n[link]\nrate = \"10mbit\"\n[aqm]\nkind = \"fifo\"\n[[flows]]\ncc = \"cubic\"\nrtt = \"10ms\"\n",
    )
    .unwrap();
    let s: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    assert_eq!(s["aqm_counters"], serde_json::json!({}));
}
