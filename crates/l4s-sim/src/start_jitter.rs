//! Start-time jitter (`[[flows]] start_jitter`): each flow starts at `start` plus a uniform
//! offset in [0, start_jitter), drawn from the scenario seed, so replications with different
//! seeds are different runs even where nothing else is random (testbeds and ns-3 studies
//! perturb start times the same way). Default: one base RTT of the flow; "0s" turns it off.

use crate::scenario::{FlowConfig, Scenario};
use l4s_core::{Nanos, Rng};

/// The jitter bound of a flow entry: `start_jitter`, else its base RTT.
pub fn bound(fc: &FlowConfig) -> Nanos {
    fc.start_jitter.unwrap_or(fc.rtt)
}

/// The start of flow `id` (global index, after `count` expansion) of entry `fc`.
pub fn effective_start(seed: u64, id: u32, fc: &FlowConfig) -> Nanos {
    let mut j = bound(fc).0;
    // The offset never moves a start past the flow's own stop.
    if let Some(stop) = fc.stop {
        j = j.min(stop.0.saturating_sub(fc.start.0));
    }
    if j == 0 {
        return fc.start;
    }
    let off = Rng::derive(seed, &format!("flow/{id}/start")).below(j);
    Nanos(fc.start.0 + off)
}

/// Every flow's effective start, in flow order (what the simulator runs and the emulator's
/// senders follow).
pub fn effective_starts(s: &Scenario) -> Vec<Nanos> {
    let mut out = Vec::new();
    for fc in &s.flows {
        for _ in 0..fc.count {
            out.push(effective_start(s.seed, out.len() as u32, fc));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scen(extra: &str, seed: u64) -> Scenario {
        Scenario::from_toml_str(&format!(
            "seed = {seed}\nduration = \"2s\"\n[link]\nrate = \"10mbit\"\n\
             [[flows]]\ncc = \"cubic\"\nrtt = \"40ms\"\ncount = 50\nstart = \"1s\"\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn default_is_uniform_within_one_base_rtt_and_seeded() {
        let st = effective_starts(&scen("", 1));
        assert!(st
            .iter()
            .all(|t| (1_000_000_000..1_040_000_000).contains(&t.0)));
        // 50 draws in [0, 40 ms): distinct offsets, mean within 4 SE (40/sqrt(12·50) = 1.63 ms)
        // of the uniform mean 20 ms.
        let mean_ms = st
            .iter()
            .map(|t| (t.0 - 1_000_000_000) as f64 / 1e6)
            .sum::<f64>()
            / 50.0;
        assert!((mean_ms - 20.0).abs() < 4.0 * 1.633, "{mean_ms}");
        assert_eq!(st, effective_starts(&scen("", 1)));
        assert_ne!(st, effective_starts(&scen("", 2)));
    }

    #[test]
    fn zero_keeps_the_start_and_a_bound_is_honoured() {
        let st = effective_starts(&scen("start_jitter = \"0s\"", 7));
        assert!(st.iter().all(|t| t.0 == 1_000_000_000));
        let st = effective_starts(&scen("start_jitter = \"1ms\"", 7));
        assert!(st
            .iter()
            .all(|t| (1_000_000_000..1_001_000_000).contains(&t.0)));
        // A stop 10 µs after start bounds the offset.
        let st = effective_starts(&scen("stop = \"1.00001s\"", 7));
        assert!(st
            .iter()
            .all(|t| (1_000_000_000..1_000_010_000).contains(&t.0)));
    }

    #[test]
    fn a_one_nanosecond_bound_leaves_every_start_exact() {
        // Offsets are uniform in [0, bound): with bound 1 ns the only offset is 0, for every
        // one of 200 flows (a draw in [0, 1] would move about half of them by 1 ns).
        let s = Scenario::from_toml_str(
            "seed = 3\nduration = \"2s\"\n[link]\nrate = \"10mbit\"\n\
             [[flows]]\ncc = \"cubic\"\nrtt = \"40ms\"\ncount = 200\nstart = \"1s\"\n\
             start_jitter = \"1ns\"\n",
        )
        .unwrap();
        let st = effective_starts(&s);
        assert_eq!(st.len(), 200);
        assert!(st.iter().all(|t| t.0 == 1_000_000_000), "{st:?}");
    }

    #[test]
    fn a_jitter_reaching_past_the_run_is_refused() {
        let e = Scenario::from_toml_str(
            "duration = \"2s\"\n[link]\nrate = \"10mbit\"\n\
             [[flows]]\ncc = \"cubic\"\nrtt = \"40ms\"\nstart = \"1s\"\nstart_jitter = \"1.5s\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("flows[0].start_jitter:"), "{e}");
    }
}
