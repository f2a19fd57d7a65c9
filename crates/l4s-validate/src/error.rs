//! Errors of the validation toolkit: bad series, bad groups, bad parameters.
//! Every message names the offending input so the CLI can print it as is.

use thiserror::Error;

/// What went wrong with the inputs of a distance or a test.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ValidateError {
    /// A series with no samples (DTW needs at least one cell).
    #[error("{which}: empty series")]
    EmptySeries {
        /// Which series (group, run and metric).
        which: String,
    },
    /// NaN or ±inf in a series: DTW costs would be meaningless.
    #[error("{which}: non-finite value {value} at index {index}")]
    NonFinite {
        /// Which series (group, run and metric).
        which: String,
        /// Position of the first bad sample.
        index: usize,
        /// The bad sample.
        value: f64,
    },
    /// Inputs that do not fit together (lengths, counts, scalar vs series).
    #[error("mismatched inputs: {0}")]
    Mismatched(String),
    /// A group with too few runs for within-group pairs.
    #[error("group {group} has {runs} run(s); at least 2 are needed for within-group pairs")]
    TooFewRuns {
        /// The group's name.
        group: String,
        /// How many runs it has.
        runs: usize,
    },
    /// A parameter outside its allowed range.
    #[error("parameter {name} = {value} outside allowed range {allowed}")]
    Param {
        /// The parameter's name.
        name: &'static str,
        /// The rejected value as given.
        value: String,
        /// The allowed range, e.g. "(0, 1)".
        allowed: &'static str,
    },
}

/// Check that a series is non-empty and finite; `which` names it in the error.
pub fn check_series(which: &str, x: &[f64]) -> Result<(), ValidateError> {
    if x.is_empty() {
        return Err(ValidateError::EmptySeries {
            which: which.to_string(),
        });
    }
    if let Some((index, &value)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(ValidateError::NonFinite {
            which: which.to_string(),
            index,
            value,
        });
    }
    Ok(())
}
