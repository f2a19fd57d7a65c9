//! Every scenario shipped in scenarios/ loads, validates and runs (shortened to 3 s).

use l4s_core::Nanos;
use l4s_sim::Scenario;
use std::path::{Path, PathBuf};

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn shipped_scenarios_load_and_run() {
    let files = shipped();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let mut s = Scenario::load(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        if let Some(t) = &s.link.trace {
            let p = s.base_dir.clone().unwrap().join(t);
            if !p.exists() {
                eprintln!(
                    "skipped run of {}: {} not present",
                    f.display(),
                    p.display()
                );
                continue;
            }
        }
        s.duration = Nanos::from_secs(3);
        s.warmup = Nanos::from_secs(1);
        let r = l4s_sim::run(&s).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let t = &r.totals;
        assert_eq!(
            t.sent_pkts,
            t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts,
            "{}",
            f.display()
        );
        assert!(t.delivered_pkts > 1000, "{}: {t:?}", f.display());
    }
}

#[test]
fn default_experiment_is_dualpi2_50mbit_40ms_30s() {
    let f =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/prague_vs_cubic_50M_40ms.toml");
    let s = Scenario::load(&f).unwrap();
    assert_eq!(s.aqm.kind(), "dualpi2");
    assert_eq!(s.link.rate.unwrap().bps(), 50_000_000);
    assert_eq!(s.duration, Nanos::from_secs(30));
    assert!(s.flows.iter().all(|f| f.rtt == Nanos::from_ms(40)));
    let ccs: Vec<&str> = s.flows.iter().map(|f| f.cc.as_str()).collect();
    assert_eq!(ccs, ["prague", "cubic"]);
}
