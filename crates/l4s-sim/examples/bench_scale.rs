//! Scale benchmark: ns per bottleneck packet and peak memory for 1..10 000 flows (1 Gb/s,
//! 50 ms, 10 s) and for 10 Mb/s..10 Gb/s with 2 flows, plus the 900-run DualPI2 study's wall time.
//!
//! `cargo run --release -p l4s-sim --example bench_scale` prints the whole table (each
//! configuration runs in its own child process so its peak RSS is its own);
//! `... -- one CC FLOWS RATE RTT DURATION [SAMPLE_INTERVAL [FLOW_SAMPLE_INTERVAL]]` measures one
//! configuration and prints one line;
//! `... -- study [RUNS]` runs the study (3 regimes x 3 mixes x RUNS seeds, 30 s each) on all cores.

use l4s_sim::{run, Scenario};
use rayon::prelude::*;
use std::process::Command;
use std::time::Instant;

/// One dumbbell: `flows` flows of `cc` (a "+"-separated list alternates CCs) through DualPI2.
fn dumbbell(cc: &str, flows: u32, rate: &str, rtt: &str, duration: &str, seed: u64) -> String {
    let ccs: Vec<&str> = cc.split('+').collect();
    let mut s = format!(
        "seed = {seed}\nduration = \"{duration}\"\nwarmup = \"0s\"\n[link]\nrate = \"{rate}\"\n\
         [aqm]\nkind = \"dualpi2\"\n"
    );
    for (i, c) in ccs.iter().enumerate() {
        // Split `flows` between the CCs as evenly as possible.
        let n = flows / ccs.len() as u32 + u32::from((i as u32) < flows % ccs.len() as u32);
        if n > 0 {
            s += &format!("[[flows]]\ncc = \"{c}\"\nrtt = \"{rtt}\"\ncount = {n}\n");
        }
    }
    s
}

/// Peak resident set size of this process, bytes (VmHWM, what `/usr/bin/time -v` reports).
fn peak_rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// CPU time this thread has run, ns (`/proc/self/schedstat`): unlike wall time it does not
/// count time spent waiting for a core on a shared machine.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of the whole process (all threads), s, from `/proc/self/stat`
/// (clock ticks of 10 ms).
fn process_cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = s.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    f.get(11)
        .zip(f.get(12))
        .map_or(0.0, |(u, s)| (u + s) as f64 / 100.0)
}

/// Measure one configuration in this process: prints `cc flows rate rtt duration
/// bottleneck_pkts events wall_s ns_per_pkt peak_rss_mb cpu_s cpu_ns_per_pkt`.
fn one(args: &[String]) {
    let (Some([cc, flows, rate, rtt, duration]), sample, flow_sample) = (
        args.get(..5).and_then(|a| <&[String; 5]>::try_from(a).ok()),
        args.get(5),
        args.get(6),
    ) else {
        eprintln!("usage: one CC FLOWS RATE RTT DURATION [SAMPLE_INTERVAL [FLOW_SAMPLE_INTERVAL]]");
        std::process::exit(2);
    };
    let flows: u32 = flows.parse().expect("FLOWS is a number");
    let mut text = dumbbell(cc, flows, rate, rtt, duration, 1);
    if let Some(si) = sample {
        text = format!("sample_interval = \"{si}\"\n{text}");
    }
    if let Some(fsi) = flow_sample {
        text = format!("{text}[output]\nflow_sample_interval = \"{fsi}\"\n");
    }
    let s = Scenario::from_toml_str(&text).expect("bench scenario");
    let c0 = cpu_ns();
    let t0 = Instant::now();
    let r = run(&s).expect("run");
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (cpu_ns() - c0) as f64 / 1e9;
    // Bottleneck packets: every packet the AQM let through or dropped (= data packets sent
    // minus those still queued at the end, which the link never served).
    let t = &r.totals;
    let pkts = t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts;
    println!(
        "{cc} {flows} {rate} {rtt} {duration} {pkts} {} {wall:.3} {:.1} {:.1} {cpu:.3} {:.1}",
        r.events,
        wall * 1e9 / pkts.max(1) as f64,
        peak_rss_bytes() as f64 / 1048576.0,
        cpu * 1e9 / pkts.max(1) as f64
    );
}

/// The 900-run study: the three shipped Prague-vs-CUBIC regimes x three traffic mixes x
/// `runs` seeds, 30 s each, DualPI2 defaults, over all cores.
fn study(runs: u64) {
    let regimes = [("12mbit", "20ms"), ("50mbit", "40ms"), ("200mbit", "100ms")];
    let mixes = ["prague+cubic", "dctcp+cubic", "prague+prague+cubic+cubic"];
    let mut jobs = Vec::new();
    for (rate, rtt) in regimes {
        for mix in mixes {
            let n = mix.split('+').count() as u32;
            for seed in 1..=runs {
                jobs.push(dumbbell(mix, n, rate, rtt, "30s", seed));
            }
        }
    }
    let threads = rayon::current_num_threads();
    let c0 = process_cpu_s();
    let t0 = Instant::now();
    let events: u64 = jobs
        .par_iter()
        .map(|t| {
            let mut s = Scenario::from_toml_str(t).expect("study scenario");
            s.warmup = l4s_core::Nanos::from_ms(5000);
            run(&s).expect("run").events
        })
        .sum();
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "study: {} runs of 30 s on {threads} threads: {wall:.1} s wall, {:.1} s CPU, {events} events",
        jobs.len(),
        process_cpu_s() - c0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("one") => return one(&args[1..]),
        Some("study") => {
            return study(
                args.get(1)
                    .map_or(100, |r| r.parse().expect("RUNS is a number")),
            )
        }
        _ => {}
    }
    let exe = std::env::current_exe().expect("own path");
    let mut configs: Vec<(&str, u32, &str, &str)> = Vec::new();
    for n in [1, 10, 100, 1000, 10000] {
        configs.push(("cubic", n, "1gbit", "50ms"));
    }
    for n in [1, 10, 100, 1000, 10000] {
        configs.push(("prague", n, "1gbit", "50ms"));
    }
    for rate in ["10mbit", "100mbit", "1gbit", "10gbit"] {
        configs.push(("prague+cubic", 2, rate, "50ms"));
    }
    println!(
        "| CCs | flows | rate | RTT | bottleneck packets | events | wall s | ns per packet (wall) \
         | CPU s | ns per packet (CPU) | peak RSS MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (cc, n, rate, rtt) in configs {
        let out = Command::new(&exe)
            .args(["one", cc, &n.to_string(), rate, rtt, "10s"])
            .output()
            .expect("child run");
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 12 {
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                f[0], f[1], f[2], f[3], f[5], f[6], f[7], f[8], f[10], f[11], f[9]
            );
        } else {
            println!("| {cc} | {n} | {rate} | {rtt} | failed: {} |", line.trim());
        }
    }
    study(100);
}
