//! The exceedance test and its bootstrap: ε_max, p̂_max, percentile confidence intervals.
//! Follows the statistical framework of DESIGN.md "Validation"; percentiles are numpy's default
//! "linear" method (Hyndman & Fan type 7), reproduced bit for bit.
//!
//! - ε_max = max(P95(within A), P95(within B)); P95 by the linear method below.
//! - p̂_max = (#{cross > ε_max} + 1) / (n_cross + 1)  (strictly greater; the +1 is the usual
//!   add-one so p̂ is never 0); "similar" when p̂_max < α (α = 0.05).
//! - Bootstrap: each replicate draws n_a runs of A and n_b runs of B with replacement, looks the
//!   pairwise distances of the drawn runs up in the precomputed sets (no DTW is recomputed; a run
//!   drawn twice contributes a within pair of distance 0 = d(x, x)), and recomputes ε_max and
//!   p̂_max. The CI is the percentile interval of the replicate p̂_max values; the one-sided upper
//!   bound is their `level` percentile. "Significant" when the CI's upper end < α.
//! - Replicate r draws from `l4s_core::Rng::derive(seed, "validate/bootstrap/<r>")`, so the result
//!   depends on the seed only, not on the thread count.

use l4s_core::Rng;
use rayon::prelude::*;

use crate::error::ValidateError;
use crate::pairwise::{within_lookup, DistanceSets};

/// numpy's default ("linear") percentile of *sorted* data, `pct` in [0, 100]:
/// h = (n−1)·(pct/100), a = v[⌊h⌋], b = v[⌊h⌋+1] (clamped), γ = h − ⌊h⌋, and numpy's `_lerp`:
/// b − (b−a)(1−γ) when γ ≥ 0.5, else a + (b−a)γ.
pub fn percentile_sorted(sorted: &[f64], pct: f64) -> f64 {
    let n = sorted.len();
    let h = (n - 1) as f64 * (pct / 100.0);
    let lo = h.floor();
    let i = lo as usize;
    if i + 1 >= n {
        return sorted[n - 1];
    }
    lerp(sorted[i], sorted[i + 1], h - lo)
}

#[inline]
fn lerp(a: f64, b: f64, gamma: f64) -> f64 {
    let diff = b - a;
    if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    }
}

/// Same as [`percentile_sorted`] on unsorted data, by selection (O(n)); reorders `values`.
pub fn percentile(values: &mut [f64], pct: f64) -> f64 {
    let n = values.len();
    let h = (n - 1) as f64 * (pct / 100.0);
    let lo = h.floor();
    let i = lo as usize;
    if i + 1 >= n {
        return values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    let (_, &mut a, upper) = values.select_nth_unstable_by(i, f64::total_cmp);
    let b = upper.iter().copied().fold(f64::INFINITY, f64::min);
    lerp(a, b, h - lo)
}

/// The exceedance test on one pair of groups.
#[derive(Clone, Debug, PartialEq)]
pub struct Exceedance {
    /// 95th percentile of within-A distances.
    pub p95_a: f64,
    /// 95th percentile of within-B distances.
    pub p95_b: f64,
    /// max(p95_a, p95_b).
    pub eps_max: f64,
    /// Number of cross-group distances (n_a·n_b).
    pub n_cross: usize,
    /// Cross distances strictly greater than ε_max.
    pub n_exceed: usize,
    /// (n_exceed + 1) / (n_cross + 1).
    pub p_hat: f64,
    /// p_hat < alpha.
    pub similar: bool,
}

fn check_sets(s: &DistanceSets) -> Result<(), ValidateError> {
    let want = |n: usize| n * n.saturating_sub(1) / 2;
    if s.n_a < 2 || s.n_b < 2 {
        return Err(ValidateError::TooFewRuns {
            group: if s.n_a < 2 { "A" } else { "B" }.into(),
            runs: s.n_a.min(s.n_b),
        });
    }
    if s.within_a.len() != want(s.n_a)
        || s.within_b.len() != want(s.n_b)
        || s.cross.len() != s.n_a * s.n_b
    {
        return Err(ValidateError::Mismatched(format!(
            "distance sets of sizes {}/{}/{} do not fit n_a = {}, n_b = {}",
            s.within_a.len(),
            s.within_b.len(),
            s.cross.len(),
            s.n_a,
            s.n_b
        )));
    }
    let all = s.within_a.iter().chain(&s.within_b).chain(&s.cross);
    if let Some(v) = all.copied().find(|v| !v.is_finite() || *v < 0.0) {
        return Err(ValidateError::Mismatched(format!(
            "distance {v} is not a finite non-negative number"
        )));
    }
    Ok(())
}

fn check_alpha(alpha: f64) -> Result<(), ValidateError> {
    if alpha > 0.0 && alpha < 1.0 {
        Ok(())
    } else {
        Err(ValidateError::Param {
            name: "alpha",
            value: alpha.to_string(),
            allowed: "(0, 1)",
        })
    }
}

/// ε_max, p̂_max and the verdict for precomputed distance sets.
pub fn exceedance(s: &DistanceSets, alpha: f64) -> Result<Exceedance, ValidateError> {
    check_sets(s)?;
    check_alpha(alpha)?;
    let p95_a = percentile(&mut s.within_a.clone(), 95.0);
    let p95_b = percentile(&mut s.within_b.clone(), 95.0);
    let eps_max = p95_a.max(p95_b);
    let n_exceed = s.cross.iter().filter(|&&c| c > eps_max).count();
    let p_hat = (n_exceed + 1) as f64 / (s.cross.len() + 1) as f64;
    Ok(Exceedance {
        p95_a,
        p95_b,
        eps_max,
        n_cross: s.cross.len(),
        n_exceed,
        p_hat,
        similar: p_hat < alpha,
    })
}

/// Bootstrap settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BootstrapConfig {
    /// Number of replicates B (default 2000).
    pub replicates: usize,
    /// Seed of the resampling stream (same seed, same intervals).
    pub seed: u64,
    /// Two-sided CI level (default 0.95: the 2.5 and 97.5 percentiles).
    pub level: f64,
    /// Threshold for "similar" / "significant" (default 0.05).
    pub alpha: f64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            replicates: 2000,
            seed: 0,
            level: 0.95,
            alpha: 0.05,
        }
    }
}

/// Bootstrap distribution of p̂_max and ε_max with percentile intervals.
#[derive(Clone, Debug, PartialEq)]
pub struct Bootstrap {
    /// p̂_max of each replicate, in replicate order.
    pub p_hat: Vec<f64>,
    /// ε_max of each replicate.
    pub eps_max: Vec<f64>,
    /// Percentile (100·(1−level)/2) of the replicate p̂_max.
    pub ci_low: f64,
    /// Percentile (100·(1+level)/2) of the replicate p̂_max.
    pub ci_high: f64,
    /// One-sided upper bound: percentile 100·level of the replicate p̂_max.
    pub upper: f64,
    /// ci_high < alpha.
    pub significant: bool,
}

/// Resample runs with replacement in each group and recompute ε_max and p̂_max per replicate.
pub fn bootstrap(s: &DistanceSets, cfg: &BootstrapConfig) -> Result<Bootstrap, ValidateError> {
    check_sets(s)?;
    check_alpha(cfg.alpha)?;
    if cfg.replicates < 2 {
        return Err(ValidateError::Param {
            name: "bootstrap",
            value: cfg.replicates.to_string(),
            allowed: ">= 2 replicates",
        });
    }
    if !(cfg.level > 0.0 && cfg.level < 1.0) {
        return Err(ValidateError::Param {
            name: "level",
            value: cfg.level.to_string(),
            allowed: "(0, 1)",
        });
    }
    let (na, nb) = (s.n_a, s.n_b);
    let reps: Vec<(f64, f64)> = (0..cfg.replicates)
        .into_par_iter()
        .map_init(
            || (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
            |(ia, ib, wa, wb), r| {
                let mut rng = Rng::derive(cfg.seed, &format!("validate/bootstrap/{r}"));
                ia.clear();
                ia.extend((0..na).map(|_| rng.below(na as u64) as usize));
                ib.clear();
                ib.extend((0..nb).map(|_| rng.below(nb as u64) as usize));
                resampled_within(&s.within_a, na, ia, wa);
                resampled_within(&s.within_b, nb, ib, wb);
                let eps = percentile(wa, 95.0).max(percentile(wb, 95.0));
                let mut n_exceed = 0usize;
                for &i in ia.iter() {
                    let row = &s.cross[i * nb..(i + 1) * nb];
                    n_exceed += ib.iter().filter(|&&j| row[j] > eps).count();
                }
                let p_hat = (n_exceed + 1) as f64 / (na * nb + 1) as f64;
                (p_hat, eps)
            },
        )
        .collect();
    let p_hat: Vec<f64> = reps.iter().map(|r| r.0).collect();
    let eps_max: Vec<f64> = reps.iter().map(|r| r.1).collect();
    let mut sorted = p_hat.clone();
    sorted.sort_by(f64::total_cmp);
    let tail = 100.0 * (1.0 - cfg.level) / 2.0;
    let ci_low = percentile_sorted(&sorted, tail);
    let ci_high = percentile_sorted(&sorted, 100.0 - tail);
    let upper = percentile_sorted(&sorted, 100.0 * cfg.level);
    Ok(Bootstrap {
        p_hat,
        eps_max,
        ci_low,
        ci_high,
        upper,
        significant: ci_high < cfg.alpha,
    })
}

/// Within-group distances of the drawn runs `idx` (all k < l pairs of draws) into `out`.
fn resampled_within(condensed: &[f64], n: usize, idx: &[usize], out: &mut Vec<f64>) {
    out.clear();
    for (k, &i) in idx.iter().enumerate() {
        out.extend(
            idx[k + 1..]
                .iter()
                .map(|&j| within_lookup(condensed, n, i, j)),
        );
    }
}

/// "Improved": configuration B's CI lies wholly below configuration A's (both validated against
/// the same reference), i.e. B.ci_high < A.ci_low.
pub fn improved(a: &Bootstrap, b: &Bootstrap) -> bool {
    b.ci_high < a.ci_low
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_percentile_by_hand() {
        // n = 5, P95: h = 4·0.95 = 3.8 → v[3] + 0.8·(v[4] − v[3]) via numpy's γ ≥ 0.5 branch:
        // 40 − (40 − 30)·0.2 = 38.
        let v = [10.0, 20.0, 0.0, 40.0, 30.0];
        assert_eq!(percentile(&mut v.clone(), 95.0), 38.0);
        let mut s = v;
        s.sort_by(f64::total_cmp);
        assert_eq!(percentile_sorted(&s, 95.0), 38.0);
        // P50 of 4 values: h = 1.5 → 10 + 0.5·10 = 15 (γ ≥ 0.5 branch: 20 − 10·0.5 = 15).
        assert_eq!(percentile(&mut [0.0, 10.0, 20.0, 30.0], 50.0), 15.0);
        assert_eq!(percentile(&mut [7.0], 95.0), 7.0);
        assert_eq!(percentile(&mut [1.0, 2.0], 100.0), 2.0);
        assert_eq!(percentile(&mut [1.0, 2.0], 0.0), 1.0);
    }

    fn sets(
        within_a: Vec<f64>,
        within_b: Vec<f64>,
        cross: Vec<f64>,
        na: usize,
        nb: usize,
    ) -> DistanceSets {
        DistanceSets {
            n_a: na,
            n_b: nb,
            within_a,
            within_b,
            cross,
        }
    }

    #[test]
    fn exceedance_by_hand() {
        // 3 runs per group: 3 within pairs each, 9 cross pairs.
        // P95 of [1,2,3]: h = 2·0.95 = 1.9 → 3 − 1·0.1 = 2.9; of [1,1,4]: 4 − 3·0.1 = 3.7.
        // ε_max = 3.7 (in f64 3.6999…97, so no cross value sits on it); cross values > ε_max: 4, 5 → p̂ = (2 + 1)/(9 + 1) = 0.3.
        let s = sets(
            vec![1.0, 2.0, 3.0],
            vec![1.0, 1.0, 4.0],
            vec![0.5, 1.0, 1.5, 2.0, 3.0, 3.6, 4.0, 5.0, 0.0],
            3,
            3,
        );
        let e = exceedance(&s, 0.05).unwrap();
        assert!((e.p95_a - 2.9).abs() < 1e-12 && (e.p95_b - 3.7).abs() < 1e-12);
        assert_eq!(e.eps_max, e.p95_b);
        assert_eq!((e.n_exceed, e.n_cross), (2, 9));
        assert!((e.p_hat - 0.3).abs() < 1e-15);
        assert!(!e.similar);
        // All cross distances within ε_max: p̂ = 1/10 (the add-one floor).
        let s2 = sets(vec![1.0, 2.0, 3.0], vec![1.0, 1.0, 4.0], vec![0.0; 9], 3, 3);
        assert_eq!(exceedance(&s2, 0.05).unwrap().p_hat, 0.1);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_estimate() {
        // Groups of 6 with distinct within/cross levels.
        let n = 6;
        let w = n * (n - 1) / 2;
        let within_a: Vec<f64> = (0..w).map(|k| 1.0 + (k % 5) as f64 * 0.1).collect();
        let within_b: Vec<f64> = (0..w).map(|k| 1.2 + (k % 3) as f64 * 0.1).collect();
        let cross: Vec<f64> = (0..n * n).map(|k| 1.0 + (k % 7) as f64 * 0.1).collect();
        let s = sets(within_a, within_b, cross, n, n);
        let cfg = BootstrapConfig {
            replicates: 500,
            seed: 7,
            ..Default::default()
        };
        let b1 = bootstrap(&s, &cfg).unwrap();
        let b2 = bootstrap(&s, &cfg).unwrap();
        assert_eq!(b1, b2);
        let b3 = bootstrap(&s, &BootstrapConfig { seed: 8, ..cfg }).unwrap();
        assert_ne!(b1.p_hat, b3.p_hat);
        assert!(b1.ci_low <= b1.upper && b1.upper <= b1.ci_high);
        // Every replicate p̂ lies in [1/(n_cross+1), 1].
        let floor = 1.0 / 37.0;
        assert!(b1.p_hat.iter().all(|&p| (floor..=1.0).contains(&p)));
        assert!(bootstrap(
            &s,
            &BootstrapConfig {
                replicates: 1,
                ..cfg
            }
        )
        .is_err());
    }

    #[test]
    fn ties_at_eps_max_do_not_exceed_and_eps_is_the_larger_p95() {
        // within A all 1.0 -> P95 = 1.0; within B all 2.0 -> P95 = 2.0; ε_max = max = 2.0
        // exactly. Cross: four values equal to ε_max (not "> ε_max"), one 3.0 above it.
        // p̂ = (1 + 1)/(9 + 1) = 0.2. (Counting ≥ would give (5 + 1)/10 = 0.6; ε_max = min = 1
        // would count 2, 2, 2, 2, 3 as well -> 0.6.)
        let s = sets(
            vec![1.0; 3],
            vec![2.0; 3],
            vec![2.0, 2.0, 2.0, 2.0, 3.0, 0.0, 0.0, 1.0, 1.5],
            3,
            3,
        );
        let e = exceedance(&s, 0.05).unwrap();
        assert_eq!((e.p95_a, e.p95_b, e.eps_max), (1.0, 2.0, 2.0));
        assert_eq!(e.n_exceed, 1);
        assert_eq!(e.p_hat, 0.2);
    }

    #[test]
    fn bootstrap_replicates_match_a_direct_recomputation() {
        // Each replicate redone here from the same seeded draws, written out plainly: resampled
        // within pairs (0 for a run drawn twice), ε_max = the larger P95, count cross > ε_max.
        // Levels are chosen so the two P95 differ (A ~1, B ~2) and cross values tie with
        // within values, so min-for-max or ≥-for-> change many replicates.
        let (na, nb) = (4, 5);
        let within_a = vec![1.0, 1.0, 1.5, 1.0, 1.0, 1.5];
        let within_b = vec![2.0, 2.0, 2.5, 2.0, 2.0, 2.5, 2.0, 2.0, 2.5, 2.0];
        let cross: Vec<f64> = (0..na * nb)
            .map(|k| [1.0, 1.5, 2.0, 2.5, 3.0][k % 5])
            .collect();
        let s = sets(within_a.clone(), within_b.clone(), cross.clone(), na, nb);
        let cfg = BootstrapConfig {
            replicates: 300,
            seed: 11,
            ..Default::default()
        };
        let b = bootstrap(&s, &cfg).unwrap();
        let pairs = |cond: &[f64], n: usize, idx: &[usize]| {
            let mut v = vec![];
            for k in 0..idx.len() {
                for l in k + 1..idx.len() {
                    v.push(within_lookup(cond, n, idx[k], idx[l]));
                }
            }
            v
        };
        let mut differs_from_min = 0;
        for r in 0..cfg.replicates {
            let mut rng = Rng::derive(cfg.seed, &format!("validate/bootstrap/{r}"));
            let ia: Vec<usize> = (0..na).map(|_| rng.below(na as u64) as usize).collect();
            let ib: Vec<usize> = (0..nb).map(|_| rng.below(nb as u64) as usize).collect();
            let pa = percentile(&mut pairs(&within_a, na, &ia), 95.0);
            let pb = percentile(&mut pairs(&within_b, nb, &ib), 95.0);
            let eps = if pa > pb { pa } else { pb };
            differs_from_min += (pa != pb) as usize;
            let mut k = 0;
            for &i in &ia {
                for &j in &ib {
                    if cross[i * nb + j] > eps {
                        k += 1;
                    }
                }
            }
            assert_eq!(b.eps_max[r], eps, "replicate {r}");
            assert_eq!(
                b.p_hat[r],
                (k + 1) as f64 / (na * nb + 1) as f64,
                "replicate {r}"
            );
        }
        assert!(differs_from_min > cfg.replicates / 2, "{differs_from_min}");
    }

    #[test]
    fn resampled_within_uses_zero_for_repeated_runs() {
        // n = 3, condensed [d01, d02, d12] = [1, 2, 3]; draws [2, 0, 2]:
        // pairs (2,0) = 2, (2,2) = 0, (0,2) = 2.
        let mut out = Vec::new();
        resampled_within(&[1.0, 2.0, 3.0], 3, &[2, 0, 2], &mut out);
        assert_eq!(out, vec![2.0, 0.0, 2.0]);
    }
}
