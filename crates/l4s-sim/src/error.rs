//! The simulator's one error type: its Display is the single message a user sees, naming the
//! scenario field path (e.g. `flows[1].rtt`) and what is allowed.

use std::path::PathBuf;
use thiserror::Error;

/// Everything that can stop a run before or during it.
#[derive(Debug, Error)]
pub enum SimError {
    /// The scenario text is not valid TOML / JSON.
    #[error("scenario syntax: {0}")]
    Syntax(String),
    /// A field has a bad type or value; `path` is the dotted field path.
    #[error("{path}: {message}")]
    Field {
        /// Dotted path of the field, e.g. `flows[1].rtt`.
        path: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A model misbehaved (e.g. an endpoint asked to be woken at the same instant forever).
    #[error("model error: {0}")]
    Model(String),
    /// A file the scenario names could not be read.
    #[error("{path}: cannot read {file}: {source}")]
    Io {
        /// The scenario field that names the file (`link.trace`, or `scenario` itself).
        path: String,
        /// The file as resolved.
        file: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
}

impl SimError {
    /// A `Field` error naming `path` (e.g. `aqm.target`).
    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        SimError::Field {
            path: path.into(),
            message: message.into(),
        }
    }
    /// A model's range check (`ParamError`) as a `Field` error under `prefix`, the path of
    /// the table it came from with its trailing dot (e.g. `flows[1].`).
    pub fn param(prefix: &str, e: l4s_core::ParamError) -> Self {
        SimError::field(
            format!("{prefix}{}", e.param),
            format!("{} is out of range; expected {}", e.value, e.expected),
        )
    }
    /// The field path the error names, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            SimError::Field { path, .. } | SimError::Io { path, .. } => Some(path),
            SimError::Syntax(_) | SimError::Model(_) => None,
        }
    }
}
