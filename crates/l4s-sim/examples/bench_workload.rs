//! Workload benchmark: CPU cost per bottleneck packet of a 10 Gb/s, 50 %-load web-search
//! workload (Poisson arrivals of sized CUBIC transfers) against 10 CUBIC bulk flows at the same
//! rate, and the transfers per CPU second the simulator sustains.
//!
//! `cargo run --release -p l4s-sim --example bench_workload [DURATION]` (default "2s" of
//! simulated time each). CPU time is the thread's own (`/proc/thread-self/schedstat`), so a
//! loaded machine slows the wall clock, not the figure.

use l4s_sim::{run, Scenario};

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn one(name: &str, toml: &str) {
    let s = Scenario::from_toml_str(toml).unwrap_or_else(|e| panic!("{e}"));
    let t0 = cpu_ns();
    let r = run(&s).unwrap_or_else(|e| panic!("{e}"));
    let cpu = (cpu_ns() - t0) as f64;
    let pkts = r.totals.delivered_pkts.max(1) as f64;
    let transfers = r.app.fct.as_ref().map_or(0, |f| f.flow.len());
    let done = r
        .app
        .fct
        .as_ref()
        .map_or(0, |f| f.fct_s.iter().filter(|x| x.is_finite()).count());
    let v: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap_or_default();
    println!(
        "{name:<28} {:>10.0} pkts {:>7.1} ns/pkt {:>10} events {:>6} transfers ({done} done) \
         {:>8.0} transfers/CPU-s  util {:.3}  CPU {:.2} s",
        pkts,
        cpu / pkts,
        r.events,
        transfers,
        transfers as f64 / (cpu / 1e9),
        v["link"]["utilisation"].as_f64().unwrap_or(f64::NAN),
        cpu / 1e9
    );
}

fn main() {
    let dur = std::env::args().nth(1).unwrap_or_else(|| "2s".into());
    let head = format!(
        "seed = 1\nduration = \"{dur}\"\n[link]\nrate = \"10gbit\"\n[aqm]\nkind = \"dualpi2\"\n"
    );
    one(
        "web-search 50 % @ 10 Gb/s",
        &format!(
            "{head}[[workloads]]\nload = 0.5\nsizes = \"web-search\"\ncc = \"cubic\"\nrtt = \"20ms\"\n"
        ),
    );
    one(
        "10 CUBIC bulk @ 10 Gb/s",
        &format!("{head}[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\ncount = 10\n"),
    );
}
