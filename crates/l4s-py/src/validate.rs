//! Validation bindings: normalised DTW and distance sets (see issue "Statistical validation toolkit").

use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
