//! The simulator's one error type: its Display is the single message a user sees, naming the
//! scenario field path (e.g. `flows[1].rtt`) and what is allowed.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SimError {
    /// The scenario text is not valid TOML / JSON.
    #[error("scenario syntax: {0}")]
    Syntax(String),
    /// A field has a bad type or value; `path` is the dotted field path.
    #[error("{path}: {message}")]
    Field { path: String, message: String },
    /// A model misbehaved (e.g. an endpoint asked to be woken at the same instant forever).
    #[error("model error: {0}")]
    Model(String),
    /// A file the scenario names could not be read.
    #[error("{path}: cannot read {file}: {source}")]
    Io {
        path: String,
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SimError {
    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        SimError::Field {
            path: path.into(),
            message: message.into(),
        }
    }
    /// The field path the error names, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            SimError::Field { path, .. } | SimError::Io { path, .. } => Some(path),
            SimError::Syntax(_) | SimError::Model(_) => None,
        }
    }
}
