//! Engine speed: events/s and simulated seconds per wall second for a 200 Mb/s, 100 ms RTT,
//! 30 s DualPI2 run (Prague + CUBIC, and paced UDP for the engine alone), and the wall time of
//! 100 such runs spread over all cores. An event is one handler run popped from the event list
//! (sender/receiver timer, arrival batch, link service/completion, AQM timer, sample).
//! `cargo bench -p l4s-sim`; figures are printed and recorded in BENCHMARKS.md.

use criterion::{criterion_group, Criterion};
use l4s_sim::{run, Scenario};
use rayon::prelude::*;
use std::time::Instant;

/// The benchmark scenario: one TCP Prague and one CUBIC flow through DualPI2 at 200 Mb/s,
/// 100 ms base RTT, 30 s (the scenarios/prague_vs_cubic_200M_100ms.toml experiment).
const BENCH_TCP: &str = r#"
seed = 1
duration = "30s"
warmup = "5s"
[link]
rate = "200mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "100ms"
[[flows]]
cc = "cubic"
rtt = "100ms"
"#;

/// The engine alone: paced UDP (an L4S source and a Classic one) overloading the same
/// bottleneck, so the figures are not dominated by the TCP model's per-ACK work.
const BENCH_CBR: &str = r#"
seed = 1
duration = "30s"
warmup = "5s"
[link]
rate = "200mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "cbr"
rtt = "100ms"
rate = "120mbit"
ecn = "l4s"
[[flows]]
cc = "cbr"
rtt = "100ms"
rate = "100mbit"
"#;

fn scenario(toml: &str, seed: u64) -> Scenario {
    let mut s = Scenario::from_toml_str(toml).expect("bench scenario");
    s.seed = seed;
    s
}

/// One run, timed (best of 5): prints events/s and simulated s per wall s.
fn report_single(name: &str, toml: &str) {
    let s = scenario(toml, 1);
    let mut best = f64::MAX;
    let mut r = run(&s).expect("run");
    for _ in 0..5 {
        let t0 = Instant::now();
        r = run(&s).expect("run");
        best = best.min(t0.elapsed().as_secs_f64());
    }
    let pkts = r.totals.sent_pkts + r.totals.acks_sent;
    println!(
        "{name}: single run: {} events, {pkts} packets in {best:.3} s wall (best of 5) = \
         {:.2} M events/s, {:.2} M packets/s; {:.0} simulated s per wall s",
        r.events,
        r.events as f64 / best / 1e6,
        pkts as f64 / best / 1e6,
        s.duration.as_secs_f64() / best
    );
}

/// 100 runs (seeds 1..=100) over all cores.
fn report_batch(name: &str, toml: &str) {
    let threads = rayon::current_num_threads();
    let t0 = Instant::now();
    let events: u64 = (1..=100u64)
        .into_par_iter()
        .map(|seed| run(&scenario(toml, seed)).expect("run").events)
        .sum();
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{name}: 100 runs on {threads} threads: {wall:.2} s wall, {:.2} M events/s in total \
         ({:.2} per thread)",
        events as f64 / wall / 1e6,
        events as f64 / wall / 1e6 / threads as f64
    );
}

fn bench_engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    let tcp = scenario(BENCH_TCP, 1);
    g.bench_function("prague_cubic_dualpi2_200mbit_100ms_30s", |b| {
        b.iter(|| run(&tcp).expect("run"))
    });
    let cbr = scenario(BENCH_CBR, 1);
    g.bench_function("cbr_dualpi2_200mbit_100ms_30s", |b| {
        b.iter(|| run(&cbr).expect("run"))
    });
    g.finish();
}

criterion_group!(benches, bench_engine);

fn main() {
    // `cargo test --benches` passes --test: keep it quick then.
    let quick = std::env::args().any(|a| a == "--test");
    if !quick {
        report_single("prague+cubic", BENCH_TCP);
        report_single("cbr", BENCH_CBR);
        report_batch("prague+cubic", BENCH_TCP);
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
