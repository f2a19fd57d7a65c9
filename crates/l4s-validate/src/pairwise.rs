//! Pairwise distance sets of two groups of runs: within-group pairs (i < j) and cross pairs.
//! The sets the exceedance test of the published validation framework is built on (DESIGN.md).
//!
//! Pairs are independent, so they are spread over threads with rayon; every pair is computed
//! once, and the bootstrap later indexes these sets instead of recomputing any DTW.

use rayon::prelude::*;

use crate::dtw::{check_band, dtw_unchecked};
use crate::error::{check_series, ValidateError};

/// Which distance a metric uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    /// Normalised DTW (optionally within a Sakoe–Chiba band).
    Dtw {
        /// Sakoe–Chiba band half-width in samples (None = unconstrained).
        band: Option<usize>,
    },
    /// |x − y| of one value per run (every "series" must have exactly one element).
    Scalar,
}

/// Within- and cross-group distances of groups A (n_a runs) and B (n_b runs).
#[derive(Clone, Debug, PartialEq)]
pub struct DistanceSets {
    /// Runs in group A.
    pub n_a: usize,
    /// Runs in group B.
    pub n_b: usize,
    /// Condensed upper triangle of A's distance matrix, pairs (0,1), (0,2), …, (n_a−2, n_a−1)
    /// (the order of scipy's `pdist`).
    pub within_a: Vec<f64>,
    /// Same for B.
    pub within_b: Vec<f64>,
    /// Cross distances, row-major: `cross[i * n_b + j]` = d(A_i, B_j).
    pub cross: Vec<f64>,
}

/// Position of pair (i, j), i < j, in a condensed upper triangle of an n × n matrix.
#[inline]
pub fn condensed_index(n: usize, i: usize, j: usize) -> usize {
    debug_assert!(i < j && j < n);
    n * i - i * (i + 1) / 2 + (j - i - 1)
}

/// Distance between runs i and j of a group from its condensed set (0 on the diagonal, which
/// is d(x, x) for both distances).
#[inline]
pub fn within_lookup(condensed: &[f64], n: usize, i: usize, j: usize) -> f64 {
    match i.cmp(&j) {
        std::cmp::Ordering::Equal => 0.0,
        std::cmp::Ordering::Less => condensed[condensed_index(n, i, j)],
        std::cmp::Ordering::Greater => condensed[condensed_index(n, j, i)],
    }
}

fn check_group<S: AsRef<[f64]>>(
    name: &str,
    group: &[S],
    dist: Distance,
) -> Result<(), ValidateError> {
    for (k, s) in group.iter().enumerate() {
        let s = s.as_ref();
        let which = format!("group {name} run {k}");
        check_series(&which, s)?;
        if dist == Distance::Scalar && s.len() != 1 {
            return Err(ValidateError::Mismatched(format!(
                "{which}: scalar metric needs exactly 1 value, got {}",
                s.len()
            )));
        }
    }
    if let Distance::Dtw { band } = dist {
        check_band(band)?;
    }
    Ok(())
}

#[inline]
fn distance(x: &[f64], y: &[f64], dist: Distance) -> f64 {
    match dist {
        Distance::Dtw { band } => dtw_unchecked(x, y, band).distance(),
        Distance::Scalar => (x[0] - y[0]).abs(),
    }
}

/// All within-group distances (i < j) in condensed order. Needs no minimum group size.
pub fn within_distances<S: AsRef<[f64]> + Sync>(
    name: &str,
    group: &[S],
    dist: Distance,
) -> Result<Vec<f64>, ValidateError> {
    check_group(name, group, dist)?;
    let n = group.len();
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .collect();
    Ok(pairs
        .par_iter()
        .map(|&(i, j)| distance(group[i].as_ref(), group[j].as_ref(), dist))
        .collect())
}

/// All cross distances, row-major (A index major).
pub fn cross_distances<S: AsRef<[f64]> + Sync>(
    a: &[S],
    b: &[S],
    dist: Distance,
) -> Result<Vec<f64>, ValidateError> {
    check_group("A", a, dist)?;
    check_group("B", b, dist)?;
    let nb = b.len();
    Ok((0..a.len() * nb)
        .into_par_iter()
        .map(|k| distance(a[k / nb].as_ref(), b[k % nb].as_ref(), dist))
        .collect())
}

/// Within-A, within-B and cross distance sets; each group needs at least 2 runs.
pub fn distance_sets<S: AsRef<[f64]> + Sync>(
    a: &[S],
    b: &[S],
    dist: Distance,
) -> Result<DistanceSets, ValidateError> {
    for (name, g) in [("A", a), ("B", b)] {
        if g.len() < 2 {
            return Err(ValidateError::TooFewRuns {
                group: name.into(),
                runs: g.len(),
            });
        }
    }
    Ok(DistanceSets {
        n_a: a.len(),
        n_b: b.len(),
        within_a: within_distances("A", a, dist)?,
        within_b: within_distances("B", b, dist)?,
        cross: cross_distances(a, b, dist)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtw::dtw_distance;

    #[test]
    fn condensed_order_matches_pdist() {
        // n = 4: (0,1)=0 (0,2)=1 (0,3)=2 (1,2)=3 (1,3)=4 (2,3)=5.
        let idx: Vec<_> = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
            .iter()
            .map(|&(i, j)| condensed_index(4, i, j))
            .collect();
        assert_eq!(idx, vec![0, 1, 2, 3, 4, 5]);
        let c = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0];
        assert_eq!(within_lookup(&c, 4, 3, 1), 14.0);
        assert_eq!(within_lookup(&c, 4, 2, 2), 0.0);
    }

    #[test]
    fn sets_hold_the_pairwise_dtw_values() {
        let a = vec![vec![0.0, 1.0, 2.0], vec![0.0, 2.0], vec![5.0]];
        let b = vec![vec![1.0, 1.0], vec![0.0, 1.0, 2.0]];
        let s = distance_sets(&a, &b, Distance::Dtw { band: None }).unwrap();
        // d(a0, a1) = 1/3 (hand-worked in dtw.rs).
        assert_eq!(s.within_a[0], 1.0 / 3.0);
        assert_eq!(s.within_a.len(), 3);
        assert_eq!(s.within_b, vec![dtw_distance(&b[0], &b[1], None).unwrap()]);
        assert_eq!(s.cross.len(), 6);
        // cross[0 * 2 + 1] = d(a0, b1) = d(x, x) = 0; cross[2*2+0] = d([5], [1,1]) = 4.
        assert_eq!(s.cross[1], 0.0);
        assert_eq!(s.cross[4], 4.0);
    }

    #[test]
    fn scalar_sets_and_errors() {
        let a = vec![vec![1.0], vec![3.0]];
        let b = vec![vec![2.0], vec![7.0]];
        let s = distance_sets(&a, &b, Distance::Scalar).unwrap();
        assert_eq!(s.within_a, vec![2.0]);
        assert_eq!(s.cross, vec![1.0, 6.0, 1.0, 4.0]);
        let e = distance_sets(&a[..1], &b, Distance::Scalar).unwrap_err();
        assert_eq!(
            e,
            ValidateError::TooFewRuns {
                group: "A".into(),
                runs: 1
            }
        );
        let bad = vec![vec![1.0, 2.0], vec![3.0]];
        assert!(matches!(
            distance_sets(&bad, &b, Distance::Scalar),
            Err(ValidateError::Mismatched(_))
        ));
        let nan = vec![vec![1.0], vec![f64::NAN]];
        let e = distance_sets(&a, &nan, Distance::Dtw { band: None }).unwrap_err();
        assert!(
            e.to_string().starts_with("group B run 1: non-finite"),
            "{e}"
        );
    }
}
