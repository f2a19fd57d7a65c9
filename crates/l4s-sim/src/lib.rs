//! l4s-sim: deterministic discrete-event simulator driving l4s-core's AQMs, links and
//! transport models in virtual time.

pub mod results;

pub use results::RunResults;
