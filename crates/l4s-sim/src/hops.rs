//! Multi-hop paths: `[[links]]`, a chain of hops each with its own rate, link model, one-way
//! propagation `delay` and `[links.aqm]`, and `[[flows]] path = [first, last]` (ns-3's
//! point-to-point chain / the "parking lot" of multi-bottleneck studies).
//!
//! Base RTT. A flow's `rtt` keeps its one-link meaning, the whole base RTT (propagation both
//! ways): the forward half rtt/2 is spent as each crossed hop's `delay` after that hop, plus
//! what is left, rtt/2 − Σ delay (hops first..last), after the last hop; the ACKs return in
//! rtt − rtt/2 on the uncongested reverse path as on one link. So rtt ≥ 2·Σ delay of the hops
//! the flow crosses. Senders reach their first hop at once (as they reach `[link]`).
//!
//! Hop 0 is built from `[links]` entry 0 exactly as `[link]` + `[aqm]` are (the scenario's
//! `link`, `aqm` and `buffer` are hop 0's), so a one-entry chain runs as `[link]` does.

use crate::aqm_config::AqmConfig;
use crate::bdp::BufferSizing;
use crate::error::SimError;
use crate::scenario::{path_error, FlowConfig, LinkConfig, LinkModelKind};
use l4s_core::Nanos;
use serde_json::Value;

/// Most hops in a chain (queue indices are bytes: a DualPI2 hop has two queues).
pub const MAX_HOPS: usize = 32;

/// One validated `[[links]]` entry.
#[derive(Clone, Debug)]
pub struct HopSpec {
    /// `name` (default "hop<i>").
    pub name: String,
    /// One-way propagation after this hop.
    pub delay: Nanos,
    /// The hop's link (rate / trace, model, steps, loss, jitter as `[link]`).
    pub link: LinkConfig,
    /// The hop's AQM (`[links.aqm]`, default FIFO as `[aqm]`).
    pub aqm: AqmConfig,
    /// How a limit in BDP units was resolved against this hop's rate.
    pub buffer: Option<BufferSizing>,
    /// The `[links.aqm]` table with BDP units resolved (what the AQM was built from).
    pub aqm_table: Value,
}

/// Rename a field path: `from` (e.g. "link") or "from.x" becomes `to` / "to.x".
pub(crate) fn reprefix(e: SimError, from: &str, to: &str) -> SimError {
    match e {
        SimError::Field { path, message } => {
            let path = if path == from {
                to.to_string()
            } else if let Some(rest) = path.strip_prefix(&format!("{from}.")) {
                format!("{to}.{rest}")
            } else {
                path
            };
            SimError::Field { path, message }
        }
        SimError::Io { path, file, source } if path.starts_with(from) => SimError::Io {
            path: format!("{to}{}", &path[from.len()..]),
            file,
            source,
        },
        other => other,
    }
}

/// The hops `[first, last]` flow entry `fl` crosses in a chain of `n` hops.
pub fn flow_path(fl: &FlowConfig, n: usize) -> (usize, usize) {
    match fl.path {
        Some([a, b]) => (a as usize, b as usize),
        None => (0, n.saturating_sub(1)),
    }
}

/// Read the `[[links]]` array (already checked to be given without `[link]`/`[aqm]`).
pub fn parse(links: Vec<Value>, flows: &[FlowConfig]) -> Result<Vec<HopSpec>, SimError> {
    if links.is_empty() {
        return Err(SimError::field(
            "links",
            "is empty; expected at least one [[links]] table (or one [link] table)",
        ));
    }
    if links.len() > MAX_HOPS {
        return Err(SimError::field(
            "links",
            format!("{} hops; at most {MAX_HOPS}", links.len()),
        ));
    }
    let n = links.len();
    let mut hops: Vec<HopSpec> = Vec::with_capacity(n);
    for (k, v) in links.into_iter().enumerate() {
        let at = format!("links[{k}]");
        let Value::Object(mut map) = v else {
            return Err(SimError::field(at, "expected a table ([[links]])"));
        };
        let name = match map.remove("name") {
            None => format!("hop{k}"),
            Some(Value::String(s)) if !s.is_empty() && !s.contains('/') => s,
            Some(v) => {
                return Err(SimError::field(
                    format!("{at}.name"),
                    format!("{v} is not a hop name; expected a non-empty string without '/', e.g. \"access\""),
                ))
            }
        };
        if let Some(j) = hops.iter().position(|h| h.name == name) {
            return Err(SimError::field(
                format!("{at}.name"),
                format!("\"{name}\" is already the name of links[{j}]; hop names must differ"),
            ));
        }
        let delay = match map.remove("delay") {
            None => Nanos::ZERO,
            Some(d) => serde_path_to_error::deserialize::<_, Nanos>(d)
                .map_err(|e| path_error(&format!("{at}.delay"), e))?,
        };
        let aqm_raw = map
            .remove("aqm")
            .unwrap_or_else(|| serde_json::json!({"kind": "fifo"}));
        let link: LinkConfig =
            serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| path_error(&at, e))?;
        if link.model == Some(LinkModelKind::Wifi) || link.wifi.is_some() {
            return Err(SimError::field(
                format!("{at}.model"),
                "\"wifi\" is not supported inside a [[links]] chain yet; use [link] model = \"wifi\" for a one-hop Wi-Fi path",
            ));
        }
        link.validate().map_err(|e| reprefix(e, "link", &at))?;
        // BDP units: this hop's rate and, unless aqm.bdp_flow names one, the smallest base
        // RTT among the flow entries crossing this hop.
        let mut aqm_raw = aqm_raw;
        if let Value::Object(m) = &mut aqm_raw {
            let bdp_limit = ["limit", "limit_bytes"]
                .iter()
                .any(|key| m.get(*key).is_some_and(Value::is_string));
            if bdp_limit && !m.contains_key("bdp_flow") {
                let crossing = flows
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| {
                        let (a, b) = flow_path(f, n);
                        a <= k && k <= b
                    })
                    .min_by_key(|(i, f)| (f.rtt, *i));
                if let Some((i, _)) = crossing {
                    m.insert("bdp_flow".into(), Value::from(i as u64));
                }
            }
        }
        let (table, buffer) = crate::bdp::resolve(aqm_raw, &link, flows)
            .map_err(|e| reprefix(reprefix(e, "aqm", &format!("{at}.aqm")), "link", &at))?;
        let aqm = AqmConfig::from_value(table.clone())
            .map_err(|e| reprefix(e, "aqm", &format!("{at}.aqm")))?;
        hops.push(HopSpec {
            name,
            delay,
            link,
            aqm,
            buffer,
            aqm_table: table,
        });
    }
    Ok(hops)
}

/// The chain's checks of the flows: `path` inside the chain, and an rtt that covers the
/// propagation of the hops crossed both ways. `hops` is empty for the one-link form.
pub fn validate_flows(hops: &[HopSpec], flows: &[FlowConfig]) -> Result<(), SimError> {
    for (i, fl) in flows.iter().enumerate() {
        if let Some([a, b]) = fl.path {
            if hops.is_empty() {
                return Err(SimError::field(
                    format!("flows[{i}].path"),
                    "applies to a [[links]] chain only; with one [link] every flow crosses it",
                ));
            }
            let last = hops.len() - 1;
            if a > b || b as usize > last {
                return Err(SimError::field(
                    format!("flows[{i}].path"),
                    format!(
                        "[{a}, {b}] is not a range of hops; expected [first, last] with 0 ≤ first ≤ last ≤ {last}"
                    ),
                ));
            }
        }
        check_rtt(hops, fl, &format!("flows[{i}].rtt"))?;
    }
    Ok(())
}

/// Workload transfers and probes cross every hop: their rtt must cover the whole chain (and
/// workloads need a chain of one hop).
pub fn validate_extras(s: &crate::Scenario) -> Result<(), SimError> {
    // A workload's load and its transfers' ideal completion times are relative to one link's
    // rate: with several hops that would silently be hop 0's.
    if s.hops.len() > 1 && !s.workloads.is_empty() {
        return Err(SimError::field(
            "workloads",
            format!(
                "[[workloads]] cannot run on a [[links]] chain of {} hops yet (their load and \
                 slowdowns are relative to one link's rate); use [link] or one [[links]] hop",
                s.hops.len()
            ),
        ));
    }
    let rtts = s.workloads.iter().map(|w| ("workloads", w.rtt));
    let rtts = rtts.chain(s.probes.iter().map(|p| ("probes", p.rtt)));
    let mut idx = std::collections::HashMap::new();
    for (table, rtt) in rtts {
        let i = idx.entry(table).or_insert(0usize);
        let fl = FlowConfig {
            rtt,
            ..FlowConfig::default()
        };
        check_rtt(&s.hops, &fl, &format!("{table}[{i}].rtt"))?;
        *i += 1;
    }
    Ok(())
}

/// rtt/2 must cover the one-way propagation of the hops `fl` crosses.
pub fn check_rtt(hops: &[HopSpec], fl: &FlowConfig, field: &str) -> Result<(), SimError> {
    if hops.is_empty() {
        return Ok(());
    }
    let (a, b) = flow_path(fl, hops.len());
    let one_way: u64 = hops[a..=b].iter().map(|h| h.delay.0).sum();
    if fl.rtt.0 / 2 < one_way {
        return Err(SimError::field(
            field,
            format!(
                "\"{}\" is shorter than the propagation of its path both ways (links[{a}..={b}] \
                 delays sum to {} one way); expected rtt ≥ {}",
                fl.rtt,
                Nanos(one_way),
                Nanos(2 * one_way)
            ),
        ));
    }
    Ok(())
}

/// Forward delay of flow entry `fl` after its last hop: rtt/2 less the delays of the hops
/// before it (the last hop's own delay is part of this segment).
pub fn final_segment(hops: &[HopSpec], fl: &FlowConfig) -> Nanos {
    let half = Nanos(fl.rtt.0 / 2);
    if hops.is_empty() {
        return half;
    }
    let (a, b) = flow_path(fl, hops.len());
    let before: u64 = hops[a..b].iter().map(|h| h.delay.0).sum();
    Nanos(half.0.saturating_sub(before))
}

/// summary.json's `buffer` entry of each hop (Null where no BDP unit was used).
pub fn buffers_json(hops: &[HopSpec]) -> Vec<Value> {
    hops.iter()
        .map(|h| h.buffer.as_ref().map_or(Value::Null, |b| b.to_json()))
        .collect()
}
