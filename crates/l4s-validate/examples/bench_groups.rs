//! Timing of the full validation workload: two groups of runs, all pairwise DTWs and the bootstrap.
//! Usage: cargo run --release -p l4s-validate --example bench_groups -- [runs] [points] [band]

use std::time::Instant;

use l4s_core::Rng;
use l4s_validate::{bootstrap, distance_sets, exceedance, BootstrapConfig, Distance};

fn group(rng: &mut Rng, runs: usize, points: usize, level: f64) -> Vec<Vec<f64>> {
    (0..runs)
        .map(|_| {
            let mut v = level;
            (0..points)
                .map(|_| {
                    v = 0.9 * v + 0.1 * level + rng.normal();
                    v
                })
                .collect()
        })
        .collect()
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let runs = args.first().copied().unwrap_or(100);
    let points = args.get(1).copied().unwrap_or(1900);
    let band = args.get(2).copied();
    let mut rng = Rng::new(1);
    let a = group(&mut rng, runs, points, 10.0);
    let b = group(&mut rng, runs, points, 10.5);
    let cells = (runs * (runs - 1) + runs * runs) as f64 * (points * points) as f64;
    let t0 = Instant::now();
    let sets = match distance_sets(&a, &b, Distance::Dtw { band }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let t_dtw = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let e = exceedance(&sets, 0.05).expect("valid sets");
    let bs = bootstrap(&sets, &BootstrapConfig::default()).expect("valid sets");
    let t_boot = t1.elapsed().as_secs_f64();
    println!(
        "runs={runs} points={points} band={band:?} threads={} dtw_pairs={} cells={cells:.3e}",
        rayon::current_num_threads(),
        sets.within_a.len() + sets.within_b.len() + sets.cross.len()
    );
    println!(
        "dtw {t_dtw:.2} s ({:.2} ns/cell/thread), bootstrap B=2000 {t_boot:.2} s",
        t_dtw * 1e9 * rayon::current_num_threads() as f64 / cells
    );
    println!(
        "eps_max={:.4} p_hat={:.4} ci=[{:.4}, {:.4}]",
        e.eps_max, e.p_hat, bs.ci_low, bs.ci_high
    );
}
