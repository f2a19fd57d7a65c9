//! Python module `l4slab._core`: the simulator and validation toolkit for Python.

use pyo3::prelude::*;

mod sim;
mod validate;

/// Version of the Rust core (the Python package reports the same).
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Parse a duration string ("15ms") to nanoseconds; raises ValueError naming the problem.
#[pyfunction]
fn parse_duration_ns(s: &str) -> PyResult<u64> {
    l4s_core::parse_duration(s)
        .map(|n| n.as_ns())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// Parse a rate string ("50mbit") to bits per second.
#[pyfunction]
fn parse_rate_bps(s: &str) -> PyResult<u64> {
    l4s_core::parse_rate(s)
        .map(|r| r.bps())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate_bps, m)?)?;
    sim::register(m)?;
    validate::register(m)?;
    Ok(())
}
