//! l4s-sim: deterministic discrete-event simulator driving l4s-core's AQMs, links and
//! transport models in virtual time.
//!
//! ```no_run
//! let res = l4s_sim::run_toml(r#"
//!     duration = "2s"
//!     [link]
//!     rate = "10mbit"
//!     [aqm]
//!     kind = "fifo"
//!     [[flows]]
//!     cc = "cbr"
//!     rtt = "20ms"
//!     rate = "5mbit"
//! "#).unwrap();
//! println!("{}", res.summary_json);
//! ```

// Every public item says what it is in one line (clippy -D warnings makes this an error in CI).
#![warn(missing_docs)]

pub mod app_results;
pub mod aqm_config;
pub mod bdp;
pub mod bottleneck;
pub mod engine;
pub mod error;
pub mod flows;
pub mod histogram;
pub mod hops;
pub mod output;
pub mod pcap;
pub mod recorder;
pub mod results;
pub mod rt_flows;
pub mod scenario;
pub mod stack;
pub mod start_jitter;
pub mod wifi_config;
pub mod wifi_txq;
pub mod workloads;
pub mod world;

pub use aqm_config::AqmConfig;
pub use error::SimError;
pub use results::{RunResults, Totals};
pub use scenario::Scenario;

use std::path::Path;

/// Run a scenario. Relative trace paths resolve against `scenario.base_dir` (or the current
/// directory when it is unset).
pub fn run(scenario: &Scenario) -> Result<RunResults, SimError> {
    world::World::new(scenario)?.run(scenario)
}

/// What a run can do besides producing its results.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Capture every packet the AQM passed, marked or dropped as pcapng (`pcap`).
    pub pcap: bool,
    /// Store the simulated time reached (ns) here every few thousand events, for a progress
    /// display polled from another thread; set to the duration at the end.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// What a run produced besides [`RunResults`], on request ([`RunOptions`]).
#[derive(Clone, Debug, Default)]
pub struct RunExtras {
    /// The pcapng file, with `RunOptions::pcap`.
    pub pcapng: Option<Vec<u8>>,
}

/// Run a scenario with [`RunOptions`].
pub fn run_with(
    scenario: &Scenario,
    opts: &RunOptions,
) -> Result<(RunResults, RunExtras), SimError> {
    world::World::new(scenario)?.run_with(scenario, opts)
}

/// Run a scenario with relative paths resolved against `base_dir` (the scenario file's folder).
pub fn run_in(scenario: &Scenario, base_dir: &Path) -> Result<RunResults, SimError> {
    let mut s = scenario.clone();
    s.base_dir = Some(base_dir.to_path_buf());
    run(&s)
}

/// Parse and run a TOML scenario (relative paths against the current directory).
pub fn run_toml(toml: &str) -> Result<RunResults, SimError> {
    run(&Scenario::from_toml_str(toml)?)
}

/// Parse and run a TOML scenario with relative paths resolved against `base_dir`.
pub fn run_toml_in(toml: &str, base_dir: &Path) -> Result<RunResults, SimError> {
    run_in(&Scenario::from_toml_str(toml)?, base_dir)
}

/// Parse and run a JSON scenario (what the Python front end sends) against `base_dir`.
pub fn run_json_in(json: &str, base_dir: &Path) -> Result<RunResults, SimError> {
    run_in(&Scenario::from_json_str(json)?, base_dir)
}
