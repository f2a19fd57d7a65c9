//! Engine speed: events/s and simulated seconds per wall second for a 200 Mb/s, 100 ms RTT,
//! 30 s DualPI2 run, and the wall time of 100 such runs spread over all cores.
//! `cargo bench -p l4s-sim`; figures are printed and recorded in BENCHMARKS.md.

use criterion::{criterion_group, Criterion};
use l4s_sim::{run, Scenario};
use rayon::prelude::*;
use std::time::Instant;

/// The benchmark scenario. Until TCP lands the load is paced UDP: an L4S source and a Classic
/// one that together overload the 200 Mb/s DualPI2 bottleneck (PI controller, coupling, step
/// marking and drops all active).
const BENCH: &str = r#"
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

fn scenario(seed: u64) -> Scenario {
    let mut s = Scenario::from_toml_str(BENCH).expect("bench scenario");
    s.seed = seed;
    s
}

/// One run, timed: prints events/s and simulated s per wall s.
fn report_single() {
    let s = scenario(1);
    let _ = run(&s); // warm caches and allocator
    let t0 = Instant::now();
    let r = run(&s).expect("run");
    let wall = t0.elapsed().as_secs_f64();
    let sim_s = s.duration.as_secs_f64();
    println!(
        "single run: {} events in {:.3} s wall = {:.2} M events/s; {:.1} simulated s per wall s; \
         {} packets sent",
        r.events,
        wall,
        r.events as f64 / wall / 1e6,
        sim_s / wall,
        r.totals.sent_pkts
    );
}

/// 100 runs (seeds 1..=100) over all cores.
fn report_batch() {
    let threads = rayon::current_num_threads();
    let t0 = Instant::now();
    let events: u64 = (1..=100u64)
        .into_par_iter()
        .map(|seed| run(&scenario(seed)).expect("run").events)
        .sum();
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "100 runs on {threads} threads: {:.2} s wall, {:.2} M events/s in total ({:.2} per thread)",
        wall,
        events as f64 / wall / 1e6,
        events as f64 / wall / 1e6 / threads as f64
    );
}

fn bench_engine(c: &mut Criterion) {
    let s = scenario(1);
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.bench_function("dualpi2_200mbit_100ms_30s", |b| {
        b.iter(|| run(&s).expect("run"))
    });
    g.finish();
}

criterion_group!(benches, bench_engine);

fn main() {
    // `cargo test --benches` passes --test: keep it quick then.
    let quick = std::env::args().any(|a| a == "--test");
    if !quick {
        report_single();
        report_batch();
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
