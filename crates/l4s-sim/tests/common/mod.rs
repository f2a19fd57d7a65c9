//! Helpers shared by the simulator's integration tests: run a scenario text, or get the one
//! error a bad one gives.
#![allow(dead_code)] // each test binary uses its own subset

use l4s_sim::{run_toml, RunResults, Scenario};
use serde_json::Value;

/// Run scenario text `toml`, panicking with the error; the results and parsed summary.json.
pub fn summary(toml: &str) -> (RunResults, Value) {
    let r = run_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    let v = serde_json::from_str(&r.summary_json).expect("summary.json parses");
    (r, v)
}

/// The error parsing `toml` gives (panics if it parses).
pub fn parse_err(toml: &str) -> String {
    match Scenario::from_toml_str(toml) {
        Ok(_) => panic!("accepted:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

/// The error parsing or running `toml` gives (panics if it runs).
pub fn err(toml: &str) -> String {
    match Scenario::from_toml_str(toml) {
        Ok(s) => match l4s_sim::run(&s) {
            Ok(_) => panic!("accepted:\n{toml}"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}
