//! Error types of l4s-core. Every message names the offending value or parameter and the
//! allowed range, so front ends can show it unchanged.

use thiserror::Error;

/// A value string ("15ms", "50mbit") that could not be parsed.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("\"{input}\" {reason}")]
pub struct ParseError {
    /// The text as given.
    pub input: String,
    /// Why it was rejected, e.g. "is negative".
    pub reason: String,
}

impl ParseError {
    /// An error for `input` with a reason phrase that follows it.
    pub fn new(input: &str, reason: &str) -> Self {
        ParseError {
            input: input.to_string(),
            reason: reason.to_string(),
        }
    }
}

/// A parameter outside its allowed range.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{param}: {value} is out of range; expected {expected}")]
pub struct ParamError {
    /// Parameter name as in the scenario file / Linux tc, e.g. "step_thresh".
    pub param: String,
    /// The rejected value as written.
    pub value: String,
    /// The allowed range or form, e.g. "a duration in [1us, 60s]".
    pub expected: String,
}

impl ParamError {
    /// An error naming the parameter, the value and what is allowed.
    pub fn new(param: &str, value: impl ToString, expected: &str) -> Self {
        ParamError {
            param: param.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }
}

/// Check `lo <= v <= hi` for a float parameter.
pub fn check_range_f64(param: &str, v: f64, lo: f64, hi: f64) -> Result<(), ParamError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            v,
            &format!("a number in [{lo}, {hi}]"),
        ))
    }
}

/// Check `lo <= v <= hi` for an integer parameter.
pub fn check_range_u64(param: &str, v: u64, lo: u64, hi: u64) -> Result<(), ParamError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            v,
            &format!("an integer in [{lo}, {hi}]"),
        ))
    }
}
