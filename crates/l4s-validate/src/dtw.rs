//! Normalised dynamic time warping: L1 cell cost |x_i − y_j|, total cost divided by the length
//! of the warping path. Follows the distance of the published validation framework (DESIGN.md
//! "Validation"); the recurrence is the classic symmetric one of Sakoe & Chiba (1978).
//!
//! Recurrence: D(i, j) = |x_i − y_j| + best(D(i−1, j−1), D(i−1, j), D(i, j−1)), D(0, 0) = |x_0 − y_0|,
//! each D carrying the pair (cost, path length in cells). The reported distance is
//! cost(n−1, m−1) / len(n−1, m−1).
//!
//! **Tie rule.** `best` is the lexicographic minimum of (cost, length): the smallest cost, and among
//! predecessors whose cost is *exactly* equal (f64 `==`) the shortest path. A shorter path with the
//! same total cost gives the larger normalised distance, so the rule is the conservative one
//! (example: x = [1, 0, 1], y = [1, 1] has cost-1 paths of 3 and 4 cells; the distance is 1/3,
//! not 1/4). When cost and length both tie, the path-returning variant prefers the diagonal, then
//! the vertical (i−1, j), then the horizontal (i, j−1) predecessor; this only affects which path is
//! returned, never the distance. Lexicographic order is preserved by adding the same (c, 1) to
//! every candidate, so the local choice is globally optimal (Bellman) and the result is symmetric:
//! d(x, y) == d(y, x) bit for bit.
//!
//! **Band.** Optional Sakoe–Chiba band of half-width `w ≥ 1` samples. Let the longer series index
//! the rows (length n) and the shorter the columns (length m, m ≤ n). Cell (i, j) is allowed when
//! |j − i·(m−1)/(n−1)| ≤ w, i.e. within w columns of the straight line from (0, 0) to (n−1, m−1);
//! for equal lengths that is the classic |i − j| ≤ w. Any w ≥ 1 keeps a connected path.
//!
//! **Speed.** The unbanded distance walks anti-diagonals (cells on one anti-diagonal do not depend
//! on each other, so the inner loop has no loop-carried dependency and the compiler vectorises it),
//! with three rolling anti-diagonal buffers indexed by the shorter series: O(n·m) time,
//! O(min(n, m)) memory. With a band each anti-diagonal is cut to its cells inside the band.
//! Simplification: no lower-bound pruning (LB_Keogh) and no early abandoning.

use crate::error::{check_series, ValidateError};

/// Total cost and warping-path length (cells) of the optimal path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DtwResult {
    /// Sum of |x_i − y_j| over the cells of the optimal path.
    pub cost: f64,
    /// Number of cells on the optimal path (max(n, m) ≤ len ≤ n + m − 1).
    pub path_len: usize,
}

impl DtwResult {
    /// The normalised distance cost / path_len.
    pub fn distance(&self) -> f64 {
        self.cost / self.path_len as f64
    }
}

/// Largest n·m for which [`dtw_path`] allocates its full matrix (4 M cells: 2 f64 + 1 byte
/// each, ≈ 68 MB).
pub const MAX_PATH_CELLS: usize = 4_000_000;

/// DP cell: total cost and path length (as f64 so cost and length vectorise together).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cell {
    cost: f64,
    len: f64,
}

const UNREACHABLE: Cell = Cell {
    cost: f64::INFINITY,
    len: 0.0,
};
/// The virtual predecessor of (0, 0): zero cost, zero cells.
const ORIGIN: Cell = Cell {
    cost: 0.0,
    len: 0.0,
};

/// `b` if it is lexicographically smaller than `a` in (cost, len), else `a` (so `a` wins full ties).
#[inline(always)]
fn lex_better(a: Cell, b: Cell) -> Cell {
    if b.cost < a.cost || (b.cost == a.cost && b.len < a.len) {
        b
    } else {
        a
    }
}

/// min for non-NaN inputs; compiles to one `minsd`/`minpd` (f64::min adds NaN handling).
#[inline(always)]
fn fmin(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// `len` when `cost == best`, else +inf, as a bit-select so it compiles without a branch.
#[inline(always)]
fn len_if_best(cost: f64, best: f64, len: f64) -> f64 {
    let differ = ((cost != best) as u64).wrapping_neg(); // all ones when not equal
    len + f64::from_bits(f64::INFINITY.to_bits() & differ) // len + 0 or len + inf
}

/// Normalised DTW distance of two finite, non-empty series, unbanded (`band = None`) or within
/// a Sakoe–Chiba band of half-width `band` (≥ 1).
pub fn dtw_distance(x: &[f64], y: &[f64], band: Option<usize>) -> Result<f64, ValidateError> {
    dtw(x, y, band).map(|r| r.distance())
}

/// Cost and path length of the optimal warping path (see the module doc for the tie rule).
pub fn dtw(x: &[f64], y: &[f64], band: Option<usize>) -> Result<DtwResult, ValidateError> {
    check_series("x", x)?;
    check_series("y", y)?;
    check_band(band)?;
    Ok(dtw_unchecked(x, y, band))
}

pub(crate) fn check_band(band: Option<usize>) -> Result<(), ValidateError> {
    match band {
        Some(0) => Err(ValidateError::Param {
            name: "band",
            value: "0".into(),
            allowed: ">= 1 samples (or no band)",
        }),
        _ => Ok(()),
    }
}

/// DTW on inputs already checked by [`check_series`] / [`check_band`].
pub(crate) fn dtw_unchecked(x: &[f64], y: &[f64], band: Option<usize>) -> DtwResult {
    // Rows = longer series, columns = shorter: memory O(min(n, m)).
    let (long, short) = if x.len() >= y.len() { (x, y) } else { (y, x) };
    let cell = match band {
        None => antidiagonal(long, short, None),
        Some(w) => antidiagonal(long, short, Some(w)),
    };
    to_result(cell)
}

fn to_result(c: Cell) -> DtwResult {
    DtwResult {
        cost: c.cost,
        path_len: c.len as usize,
    }
}

/// Allowed column range [lo, hi] of row `i` (rows: n ≥ columns: m) for band half-width `w`:
/// |j − i·(m−1)/(n−1)| ≤ w, in exact integer arithmetic.
#[inline]
fn band_range(i: usize, n: usize, m: usize, w: Option<usize>) -> (usize, usize) {
    let Some(w) = w else { return (0, m - 1) };
    if n == 1 {
        return (0, m - 1);
    }
    let (num, den) = ((i * (m - 1)) as u128, (n - 1) as u128);
    let ww = w as u128 * den;
    // lo = ceil((num − ww)/den) clamped at 0; hi = floor((num + ww)/den) clamped at m−1.
    let lo = if num <= ww {
        0
    } else {
        (num - ww).div_ceil(den)
    };
    let hi = ((num + ww) / den).min((m - 1) as u128);
    (lo as usize, hi as usize)
}

/// Row-by-row DP with one rolling row, optionally banded: the straightforward form of the
/// recurrence, kept as the reference the anti-diagonal kernel is tested against.
/// `rows.len() >= cols.len()`.
#[cfg(test)]
fn rows_banded(rows: &[f64], cols: &[f64], band: Option<usize>) -> Cell {
    let (n, m) = (rows.len(), cols.len());
    let mut buf = vec![UNREACHABLE; m];
    let mut prev_lo = 0;
    for (i, &xi) in rows.iter().enumerate() {
        let (lo, hi) = band_range(i, n, m, band);
        // diag of (i, lo) is (i−1, lo−1): read before invalidating cells that left the band.
        let mut diag = if lo > 0 {
            buf[lo - 1]
        } else if i == 0 {
            ORIGIN
        } else {
            UNREACHABLE
        };
        for c in &mut buf[prev_lo.min(lo)..lo] {
            *c = UNREACHABLE;
        }
        prev_lo = lo;
        let mut left = UNREACHABLE;
        for (slot, &yj) in buf[lo..=hi].iter_mut().zip(&cols[lo..=hi]) {
            let up = *slot;
            let best = lex_better(lex_better(diag, up), left);
            let new = Cell {
                cost: (xi - yj).abs() + best.cost,
                len: best.len + 1.0,
            };
            *slot = new;
            diag = up;
            left = new;
        }
    }
    buf[m - 1]
}

/// Range [lo, hi] of the short-series index p on anti-diagonal d = p + q, inside the matrix and,
/// with a band, inside |p·(n−1) − q·(m−1)| ≤ w·(n−1) — the same integer condition as
/// [`band_range`], solved for p with q = d − p. `None` when the diagonal has no allowed cell.
#[inline]
fn diagonal_range(d: usize, n: usize, m: usize, band: Option<usize>) -> Option<(usize, usize)> {
    let mut lo = d.saturating_sub(n - 1);
    let mut hi = d.min(m - 1);
    if let (Some(w), true) = (band, n + m > 2) {
        // p·(n+m−2) − d·(m−1) ∈ [−w·(n−1), w·(n−1)].
        let den = (n + m - 2) as u128;
        let centre = d as u128 * (m - 1) as u128;
        let ww = w as u128 * (n - 1) as u128;
        let b_lo = if centre <= ww {
            0
        } else {
            (centre - ww).div_ceil(den)
        };
        let b_hi = (centre + ww) / den;
        lo = lo.max(b_lo.min(usize::MAX as u128) as usize);
        hi = hi.min(b_hi.min(usize::MAX as u128) as usize);
    }
    (lo <= hi).then_some((lo, hi))
}

/// DP over anti-diagonals, optionally banded. `long.len() >= short.len()`. Cell (p, q) has p
/// indexing `short`, q indexing `long`, anti-diagonal d = p + q; buffers are indexed by p + 1 so
/// index 0 is a permanent UNREACHABLE sentinel. Gives bit-identical results to [`rows_banded`]:
/// both take the lexicographic minimum of the same three predecessors and add the same cell cost.
///
/// Invariant that keeps stale values out: after diagonal e is written into a buffer over
/// [lo_e, hi_e], every position below lo_e holds UNREACHABLE (reset below) and no position
/// above hi_e was ever written (lo_e and hi_e never decrease with e), so reads just outside a
/// diagonal's range see UNREACHABLE, as cells outside the matrix or the band must.
fn antidiagonal(long: &[f64], short: &[f64], band: Option<usize>) -> Cell {
    let (n, m) = (long.len(), short.len());
    let long_rev: Vec<f64> = long.iter().rev().copied().collect();
    let mut prev2_c = vec![f64::INFINITY; m + 1];
    let mut prev2_l = vec![0.0; m + 1];
    let mut prev1_c = vec![f64::INFINITY; m + 1];
    let mut prev1_l = vec![0.0; m + 1];
    let mut cur_c = vec![f64::INFINITY; m + 1];
    let mut cur_l = vec![0.0; m + 1];
    // Lowest position written into each buffer (prev2, prev1, cur) and not yet reset.
    let (mut low2, mut low1, mut low_cur) = (1usize, 1usize, 1usize);
    // d = 0: the origin cell (always inside any band).
    prev1_c[1] = (short[0] - long[0]).abs();
    prev1_l[1] = 1.0;
    for d in 1..(n + m - 1) {
        // With w ≥ 1 every diagonal keeps at least one allowed cell (the band is connected).
        let Some((lo, hi)) = diagonal_range(d, n, m, band) else {
            return UNREACHABLE;
        };
        let cnt = hi - lo + 1;
        // long[q] with q = d − p is long_rev[n−1−d+p]: contiguous in p.
        let off = n - 1 + lo - d;
        diagonal_kernel(
            &short[lo..lo + cnt],
            &long_rev[off..off + cnt],
            (&prev2_c[lo..lo + cnt], &prev2_l[lo..lo + cnt]),
            (&prev1_c[lo..lo + cnt + 1], &prev1_l[lo..lo + cnt + 1]),
            (
                &mut cur_c[lo + 1..lo + 1 + cnt],
                &mut cur_l[lo + 1..lo + 1 + cnt],
            ),
        );
        // Reset what this buffer held from diagonal d − 3 below the new range.
        if low_cur < lo + 1 {
            cur_c[low_cur..lo + 1].fill(f64::INFINITY);
            cur_l[low_cur..lo + 1].fill(0.0);
        }
        low_cur = lo + 1;
        // Rotate: cur becomes prev1, prev1 becomes prev2, old prev2 is overwritten next round.
        std::mem::swap(&mut prev2_c, &mut prev1_c);
        std::mem::swap(&mut prev2_l, &mut prev1_l);
        std::mem::swap(&mut prev1_c, &mut cur_c);
        std::mem::swap(&mut prev1_l, &mut cur_l);
        (low2, low1, low_cur) = (low1, low_cur, low2);
    }
    Cell {
        cost: prev1_c[m],
        len: prev1_l[m],
    }
}

/// One anti-diagonal: for each k, cell p = lo + k with predecessors diag = prev2[p−1] (index
/// k in the slice), up (p−1, q) = prev1[p−1] (index k) and left (p, q−1) = prev1[p] (index k+1).
#[inline(always)]
fn diagonal_kernel(
    s: &[f64],
    l: &[f64],
    prev2: (&[f64], &[f64]),
    prev1: (&[f64], &[f64]),
    cur: (&mut [f64], &mut [f64]),
) {
    let cnt = s.len();
    let (d_c, d_l) = (&prev2.0[..cnt], &prev2.1[..cnt]);
    let (u_c, u_l) = (&prev1.0[..cnt], &prev1.1[..cnt]);
    let (lf_c, lf_l) = (&prev1.0[1..cnt + 1], &prev1.1[1..cnt + 1]);
    let (o_c, o_l) = (&mut cur.0[..cnt], &mut cur.1[..cnt]);
    let l = &l[..cnt];
    for k in 0..cnt {
        let (dc, uc, lc) = (d_c[k], u_c[k], lf_c[k]);
        let best = fmin(fmin(dc, uc), lc);
        // Shortest path among the predecessors of exactly the best cost (branch-free selects:
        // which predecessor wins is data-dependent, so branches would mispredict).
        let dl = len_if_best(dc, best, d_l[k]);
        let ul = len_if_best(uc, best, u_l[k]);
        let ll = len_if_best(lc, best, lf_l[k]);
        o_c[k] = (s[k] - l[k]).abs() + best;
        o_l[k] = fmin(fmin(dl, ul), ll) + 1.0;
    }
}

/// The optimal path as (i, j) index pairs into (x, y), from (0, 0) to (n−1, m−1), with its
/// cost and length. Full-matrix O(n·m) memory: for tests and small inputs (n·m ≤
/// [`MAX_PATH_CELLS`]). Same DP and tie rule as [`dtw`], so `dtw_path(..).0 == dtw(..)`.
pub fn dtw_path(
    x: &[f64],
    y: &[f64],
    band: Option<usize>,
) -> Result<(DtwResult, Vec<(usize, usize)>), ValidateError> {
    check_series("x", x)?;
    check_series("y", y)?;
    check_band(band)?;
    let cells = x.len().saturating_mul(y.len());
    if cells > MAX_PATH_CELLS {
        return Err(ValidateError::Param {
            name: "len(x)*len(y)",
            value: cells.to_string(),
            allowed: "<= 4000000 cells for the path variant (use dtw for the distance)",
        });
    }
    let swapped = x.len() < y.len();
    let (rows, cols) = if swapped { (y, x) } else { (x, y) };
    let (n, m) = (rows.len(), cols.len());
    let mut d = vec![UNREACHABLE; n * m];
    // 0 = diagonal, 1 = vertical (i−1, j), 2 = horizontal (i, j−1); 3 = origin.
    let mut from = vec![3u8; n * m];
    for i in 0..n {
        let (lo, hi) = band_range(i, n, m, band);
        for j in lo..=hi {
            let get = |ii: usize, jj: usize| d[ii * m + jj];
            let cand = [
                if i > 0 && j > 0 {
                    get(i - 1, j - 1)
                } else if i == 0 && j == 0 {
                    ORIGIN
                } else {
                    UNREACHABLE
                },
                if i > 0 { get(i - 1, j) } else { UNREACHABLE },
                if j > 0 { get(i, j - 1) } else { UNREACHABLE },
            ];
            let mut k_best = 0;
            for k in 1..3 {
                if lex_better(cand[k_best], cand[k]) != cand[k_best] {
                    k_best = k;
                }
            }
            let best = cand[k_best];
            d[i * m + j] = Cell {
                cost: (rows[i] - cols[j]).abs() + best.cost,
                len: best.len + 1.0,
            };
            from[i * m + j] = if i == 0 && j == 0 { 3 } else { k_best as u8 };
        }
    }
    let end = d[n * m - 1];
    let mut path = Vec::with_capacity(end.len as usize);
    let (mut i, mut j) = (n - 1, m - 1);
    loop {
        path.push(if swapped { (j, i) } else { (i, j) });
        match from[i * m + j] {
            0 => {
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            2 => j -= 1,
            _ => break,
        }
    }
    path.reverse();
    Ok((to_result(end), path))
}

/// |x − y| for two scalar metrics (e.g. mean throughput of a run).
pub fn scalar_distance(x: f64, y: f64) -> Result<f64, ValidateError> {
    check_series("x", &[x])?;
    check_series("y", &[y])?;
    Ok((x - y).abs())
}

/// First differences of a cumulative counter (delivered bytes, CE acked): out[k] = x[k+1] − x[k],
/// one sample shorter. DTW is run on the increments, not on the ever-growing totals.
pub fn difference(x: &[f64]) -> Result<Vec<f64>, ValidateError> {
    check_series("cumulative counter", x)?;
    if x.len() < 2 {
        return Err(ValidateError::Mismatched(
            "a cumulative counter needs at least 2 samples to difference".into(),
        ));
    }
    Ok(x.windows(2).map(|w| w[1] - w[0]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(x: &[f64], y: &[f64]) -> DtwResult {
        dtw(x, y, None).expect("valid input")
    }

    #[test]
    fn hand_worked_three_by_two() {
        // x = [0,1,2], y = [0,2]; cell costs |x_i − y_j|:
        //   i0: 0 2 / i1: 1 1 / i2: 2 0
        // D(0,0) = (0,1); D(0,1) = (2,2); D(1,0) = (1,2); D(1,1) = 1 + D(0,0) = (1,2);
        // D(2,0) = 2 + D(1,0) = (3,3); D(2,1) = 0 + min{D(1,0)=(1,2), D(1,1)=(1,2), D(2,0)} = (1,3).
        // Distance 1/3; path prefers the diagonal on the full tie: (0,0),(1,0),(2,1).
        let r = d(&[0.0, 1.0, 2.0], &[0.0, 2.0]);
        assert_eq!(
            r,
            DtwResult {
                cost: 1.0,
                path_len: 3
            }
        );
        assert_eq!(r.distance(), 1.0 / 3.0);
        let (rp, path) = dtw_path(&[0.0, 1.0, 2.0], &[0.0, 2.0], None).unwrap();
        assert_eq!(rp, r);
        assert_eq!(path, vec![(0, 0), (1, 0), (2, 1)]);
        // Transposed call: same distance, path with swapped coordinates.
        let (rt, path_t) = dtw_path(&[0.0, 2.0], &[0.0, 1.0, 2.0], None).unwrap();
        assert_eq!(rt, r);
        assert_eq!(path_t, vec![(0, 0), (0, 1), (1, 2)]);
    }

    #[test]
    fn cost_tie_goes_to_the_shorter_path() {
        // x = [1,0,1], y = [1,1]; cell costs: i0: 0 0 / i1: 1 1 / i2: 0 0.
        // Paths of cost 1: (0,0)(1,0)(2,1) and (0,0)(1,1)(2,1) with 3 cells, and
        // (0,0)(0,1)(1,1)(2,1) with 4 cells. Shorter wins: 1/3, not 1/4.
        let r = d(&[1.0, 0.0, 1.0], &[1.0, 1.0]);
        assert_eq!(
            r,
            DtwResult {
                cost: 1.0,
                path_len: 3
            }
        );
        let (_, path) = dtw_path(&[1.0, 0.0, 1.0], &[1.0, 1.0], None).unwrap();
        // D(1,1) = 1 + min{D(0,0)=(0,1), D(0,1)=(0,2), D(1,0)=(1,2)} = (1,2) via the diagonal;
        // D(2,1) = 0 + min{D(1,0)=(1,2), D(1,1)=(1,2), D(2,0)=(1,3)}: diagonal wins the full tie.
        assert_eq!(path, vec![(0, 0), (1, 0), (2, 1)]);
    }

    #[test]
    fn single_points_and_identity() {
        assert_eq!(
            d(&[3.0], &[5.5]),
            DtwResult {
                cost: 2.5,
                path_len: 1
            }
        );
        // One point against three: every cell is on the path. |2−1|+|2−2|+|2−4| = 3 over 3 cells.
        assert_eq!(
            d(&[2.0], &[1.0, 2.0, 4.0]),
            DtwResult {
                cost: 3.0,
                path_len: 3
            }
        );
        let x = [0.3, -1.0, 2.0, 2.0, 5.0];
        // Identity: the diagonal has zero cost and is the shortest zero-cost path: n cells.
        assert_eq!(
            d(&x, &x),
            DtwResult {
                cost: 0.0,
                path_len: 5
            }
        );
    }

    #[test]
    fn time_shift_is_cheaper_than_pointwise_l1() {
        // A step shifted by two samples: DTW absorbs the shift, per-point L1 does not.
        let x: [f64; 8] = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let y = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let l1: f64 = x.iter().zip(&y).map(|(a, b)| (a - b).abs()).sum::<f64>() / 8.0;
        assert_eq!(l1, 0.25); // two mismatched samples out of 8
        assert_eq!(d(&x, &y).cost, 0.0); // warping aligns the steps exactly
    }

    #[test]
    fn band_restricts_and_reaches_unbanded_when_wide() {
        let x: [f64; 8] = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let y = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        // w = 1 cannot absorb a 2-sample shift: the best path is the diagonal with
        // moves of at most 1: cost 1 (one sample stays mismatched).
        let r1 = dtw(&x, &y, Some(1)).unwrap();
        assert_eq!(r1.cost, 1.0);
        assert_eq!(dtw(&x, &y, Some(2)).unwrap().cost, 0.0);
        assert_eq!(dtw(&x, &y, Some(8)).unwrap(), d(&x, &y));
        assert!(matches!(
            dtw(&x, &y, Some(0)),
            Err(ValidateError::Param { name: "band", .. })
        ));
    }

    #[test]
    fn band_ranges_follow_the_scaled_diagonal() {
        // n = 5 rows, m = 3 columns: centre i·2/4 = 0, .5, 1, 1.5, 2; w = 1.
        let r: Vec<_> = (0..5).map(|i| band_range(i, 5, 3, Some(1))).collect();
        assert_eq!(r, vec![(0, 1), (0, 1), (0, 2), (1, 2), (1, 2)]);
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(
            dtw(&[], &[1.0], None),
            Err(ValidateError::EmptySeries { which: "x".into() })
        );
        let e = dtw(&[1.0], &[1.0, f64::NAN], None).unwrap_err();
        assert!(
            e.to_string().contains("y: non-finite value NaN at index 1"),
            "{e}"
        );
        assert!(dtw(&[f64::INFINITY], &[1.0], None).is_err());
        assert!(difference(&[1.0]).is_err());
        assert_eq!(
            difference(&[1.0, 4.0, 4.0, 10.0]).unwrap(),
            vec![3.0, 0.0, 6.0]
        );
        assert_eq!(scalar_distance(2.0, -1.5).unwrap(), 3.5);
    }

    fn series() -> impl Strategy<Value = Vec<f64>> {
        // Small integers make exact cost ties common, which exercises the tie rule.
        prop::collection::vec((-3i32..4).prop_map(f64::from), 1..40)
    }

    proptest! {
        #[test]
        fn antidiagonal_equals_row_dp_and_path_variant(x in series(), y in series()) {
            let (long, short) = if x.len() >= y.len() { (&x, &y) } else { (&y, &x) };
            let a = antidiagonal(long, short, None);
            let r = rows_banded(long, short, None);
            prop_assert_eq!(a, r);
            for w in 1..4 {
                prop_assert_eq!(antidiagonal(long, short, Some(w)), rows_banded(long, short, Some(w)));
            }
            let (p, path) = dtw_path(&x, &y, None).unwrap();
            prop_assert_eq!(to_result(a), p);
            // The returned path is monotone, connected, and its cells sum to the cost.
            prop_assert_eq!(path.len(), p.path_len);
            prop_assert_eq!(path[0], (0, 0));
            prop_assert_eq!(*path.last().unwrap(), (x.len() - 1, y.len() - 1));
            for w in path.windows(2) {
                let (di, dj) = (w[1].0 - w[0].0, w[1].1 - w[0].1);
                prop_assert!(di <= 1 && dj <= 1 && di + dj >= 1);
            }
            let sum: f64 = path.iter().map(|&(i, j)| (x[i] - y[j]).abs()).sum();
            prop_assert_eq!(sum, p.cost);
        }

        #[test]
        fn symmetric_and_bounded(x in series(), y in series(), w in 1usize..6) {
            let a = d(&x, &y);
            prop_assert_eq!(a, d(&y, &x));
            prop_assert!(a.path_len >= x.len().max(y.len()));
            prop_assert!(a.path_len < x.len() + y.len());
            let b = dtw(&x, &y, Some(w)).unwrap();
            prop_assert_eq!(b, dtw(&y, &x, Some(w)).unwrap());
            // A band only removes paths: the cost can only grow.
            prop_assert!(b.cost >= a.cost);
            let (bp, _) = dtw_path(&x, &y, Some(w)).unwrap();
            prop_assert_eq!(b, bp);
        }
    }
}
