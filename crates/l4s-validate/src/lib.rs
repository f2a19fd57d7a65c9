//! l4s-validate: normalised DTW, pairwise distance sets, the exceedance test and its bootstrap.
//! Implements the statistical validation framework of DESIGN.md "Validation".
//!
//! Typical use: build [`pairwise::distance_sets`] for two groups of runs of one metric, then
//! [`stats::exceedance`] for ε_max / p̂_max and [`stats::bootstrap`] for the CI.

pub mod dtw;
pub mod error;
pub mod pairwise;
pub mod stats;

pub use dtw::{difference, dtw, dtw_distance, dtw_path, scalar_distance, DtwResult};
pub use error::ValidateError;
pub use pairwise::{cross_distances, distance_sets, within_distances, Distance, DistanceSets};
pub use stats::{
    bootstrap, exceedance, improved, percentile, Bootstrap, BootstrapConfig, Exceedance,
};
