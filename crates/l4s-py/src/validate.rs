//! Validation bindings: normalised DTW, pairwise distance sets, exceedance test and bootstrap.
//! Thin wrappers over `l4s_validate`; heavy work runs with the GIL released.

use l4s_validate::{self as lv, BootstrapConfig, Distance, DistanceSets, ValidateError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn err(e: ValidateError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Normalised DTW distance (cost / path length) with L1 cell cost; `band` = Sakoe–Chiba
/// half-width in samples (None: unbanded).
#[pyfunction]
#[pyo3(signature = (x, y, band=None))]
fn dtw_distance(py: Python<'_>, x: Vec<f64>, y: Vec<f64>, band: Option<usize>) -> PyResult<f64> {
    py.detach(|| lv::dtw_distance(&x, &y, band)).map_err(err)
}

/// (cost, path_len) of the optimal warping path.
#[pyfunction]
#[pyo3(signature = (x, y, band=None))]
fn dtw(py: Python<'_>, x: Vec<f64>, y: Vec<f64>, band: Option<usize>) -> PyResult<(f64, usize)> {
    let r = py.detach(|| lv::dtw(&x, &y, band)).map_err(err)?;
    Ok((r.cost, r.path_len))
}

/// (cost, path_len, path) of [`dtw_path`].
type PathResult = (f64, usize, Vec<(usize, usize)>);

/// (cost, path_len, path) with path a list of (i, j); O(n·m) memory, n·m ≤ 4e6.
#[pyfunction]
#[pyo3(signature = (x, y, band=None))]
fn dtw_path(x: Vec<f64>, y: Vec<f64>, band: Option<usize>) -> PyResult<PathResult> {
    let (r, path) = lv::dtw_path(&x, &y, band).map_err(err)?;
    Ok((r.cost, r.path_len, path))
}

/// First differences of a cumulative counter.
#[pyfunction]
fn difference(x: Vec<f64>) -> PyResult<Vec<f64>> {
    lv::difference(&x).map_err(err)
}

/// numpy-"linear" percentile (pct in [0, 100]) computed in Rust; exposed for cross-checks.
#[pyfunction]
fn percentile(mut values: Vec<f64>, pct: f64) -> PyResult<f64> {
    if values.is_empty() || !(0.0..=100.0).contains(&pct) || values.iter().any(|v| v.is_nan()) {
        return Err(PyValueError::new_err(
            "percentile needs non-empty, NaN-free values and pct in [0, 100]",
        ));
    }
    Ok(lv::percentile(&mut values, pct))
}

/// (within_a, within_b, cross) of [`distance_sets`].
type SetsResult = (Vec<f64>, Vec<f64>, Vec<f64>);

/// (within_a, within_b, cross): condensed within-group distances (pairs i < j, pdist order)
/// and row-major cross distances. `scalar=True` uses |x − y| on one value per run.
#[pyfunction]
#[pyo3(signature = (group_a, group_b, scalar=false, band=None))]
fn distance_sets(
    py: Python<'_>,
    group_a: Vec<Vec<f64>>,
    group_b: Vec<Vec<f64>>,
    scalar: bool,
    band: Option<usize>,
) -> PyResult<SetsResult> {
    let dist = if scalar {
        Distance::Scalar
    } else {
        Distance::Dtw { band }
    };
    let s = py
        .detach(|| lv::distance_sets(&group_a, &group_b, dist))
        .map_err(err)?;
    Ok((s.within_a, s.within_b, s.cross))
}

fn sets(
    within_a: Vec<f64>,
    within_b: Vec<f64>,
    cross: Vec<f64>,
    n_a: usize,
    n_b: usize,
) -> DistanceSets {
    DistanceSets {
        n_a,
        n_b,
        within_a,
        within_b,
        cross,
    }
}

/// Exceedance test: dict with p95_a, p95_b, eps_max, n_cross, n_exceed, p_hat, similar.
#[pyfunction]
#[pyo3(signature = (within_a, within_b, cross, n_a, n_b, alpha=0.05))]
fn exceedance<'py>(
    py: Python<'py>,
    within_a: Vec<f64>,
    within_b: Vec<f64>,
    cross: Vec<f64>,
    n_a: usize,
    n_b: usize,
    alpha: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let e = lv::exceedance(&sets(within_a, within_b, cross, n_a, n_b), alpha).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("p95_a", e.p95_a)?;
    d.set_item("p95_b", e.p95_b)?;
    d.set_item("eps_max", e.eps_max)?;
    d.set_item("n_cross", e.n_cross)?;
    d.set_item("n_exceed", e.n_exceed)?;
    d.set_item("p_hat", e.p_hat)?;
    d.set_item("similar", e.similar)?;
    Ok(d)
}

/// Bootstrap over runs: dict with p_hat (list), eps_max (list), ci_low, ci_high, upper,
/// significant.
#[pyfunction]
#[pyo3(signature = (within_a, within_b, cross, n_a, n_b, replicates=2000, seed=0, level=0.95, alpha=0.05))]
#[allow(clippy::too_many_arguments)]
fn bootstrap<'py>(
    py: Python<'py>,
    within_a: Vec<f64>,
    within_b: Vec<f64>,
    cross: Vec<f64>,
    n_a: usize,
    n_b: usize,
    replicates: usize,
    seed: u64,
    level: f64,
    alpha: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let s = sets(within_a, within_b, cross, n_a, n_b);
    let cfg = BootstrapConfig {
        replicates,
        seed,
        level,
        alpha,
    };
    let b = py.detach(|| lv::bootstrap(&s, &cfg)).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("p_hat", b.p_hat)?;
    d.set_item("eps_max", b.eps_max)?;
    d.set_item("ci_low", b.ci_low)?;
    d.set_item("ci_high", b.ci_high)?;
    d.set_item("upper", b.upper)?;
    d.set_item("significant", b.significant)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dtw_distance, m)?)?;
    m.add_function(wrap_pyfunction!(dtw, m)?)?;
    m.add_function(wrap_pyfunction!(dtw_path, m)?)?;
    m.add_function(wrap_pyfunction!(difference, m)?)?;
    m.add_function(wrap_pyfunction!(percentile, m)?)?;
    m.add_function(wrap_pyfunction!(distance_sets, m)?)?;
    m.add_function(wrap_pyfunction!(exceedance, m)?)?;
    m.add_function(wrap_pyfunction!(bootstrap, m)?)?;
    Ok(())
}
