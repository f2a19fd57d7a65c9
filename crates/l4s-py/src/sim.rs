//! Simulator bindings: run a scenario from Python (see issue "Python front end").

use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
