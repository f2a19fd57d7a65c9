//! Application-level results: the frame table of real-time flows (frames.parquet), the
//! completion times of workload transfers (fct.parquet) and probe round trips (probes.parquet),
//! and their summary.json blocks (`flows[i].frames`, `workloads`, `probes`, `rpm`).
//!
//! Frame latency runs from capture to the arrival of the frame's last byte; a frame is a
//! deadline miss when it was skipped (the previous one was still being sent), never completed
//! (a packet was lost; there is no retransmission) or completed later than `deadline`. Frames
//! whose fate is not known at the end (captured less than a deadline before it and not yet
//! complete) are left out. Summary figures count frames captured after warmup, transfers that
//! arrived after warmup and probe exchanges sent after warmup. Percentiles interpolate between
//! closest ranks (numpy's default). Slowdown = FCT / `workloads::ideal_fct_s` for the
//! transfer's size on the link's mean rate over its workload's [start, stop).

use crate::scenario::Scenario;
use crate::workloads::{ideal_fct_s, mean_rate_bps, ExtraKind};
use l4s_core::rt::AppLog;
use l4s_core::Nanos;
use serde_json::{json, Value};
use std::collections::HashMap;

/// frames.parquet: one row per captured frame of every real-time flow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameColumns {
    /// Flow id.
    pub flow: Vec<u32>,
    /// Frame number.
    pub frame: Vec<u64>,
    /// Capture time, s.
    pub capture_s: Vec<f64>,
    /// Frame size, bytes (0: skipped).
    pub bytes: Vec<u64>,
    /// Capture to last byte, ms (NaN: never complete).
    pub latency_ms: Vec<f64>,
    /// 1 when skipped, incomplete or later than the deadline.
    pub late: Vec<u8>,
}

/// fct.parquet: one row per workload transfer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FctColumns {
    /// Flow id.
    pub flow: Vec<u32>,
    /// Index into `[[workloads]]`.
    pub workload: Vec<u32>,
    /// Payload bytes.
    pub size_bytes: Vec<u64>,
    /// Arrival time, s.
    pub start_s: Vec<f64>,
    /// Completion time, s (NaN: not complete at the end of the run).
    pub fct_s: Vec<f64>,
    /// Completion time alone on the empty link, s.
    pub ideal_s: Vec<f64>,
    /// fct_s / ideal_s.
    pub slowdown: Vec<f64>,
}

/// probes.parquet: one row per answered probe exchange.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeColumns {
    /// Index into `[[probes]]`.
    pub probe: Vec<u32>,
    /// Flow id.
    pub flow: Vec<u32>,
    /// Request time, s.
    pub t_s: Vec<f64>,
    /// Round-trip time, ms.
    pub rtt_ms: Vec<f64>,
}

/// The application tables of a run (each None when the run has no such traffic).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppTables {
    /// Real-time frames.
    pub frames: Option<FrameColumns>,
    /// Workload transfers.
    pub fct: Option<FctColumns>,
    /// Probe exchanges.
    pub probes: Option<ProbeColumns>,
}

/// Percentile with linear interpolation between closest ranks on sorted data (NaN if empty).
pub fn percentile_f64(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The frame rows of one real-time flow (appended to `fr`) and its `flows[i].frames` block:
/// `sent` as the sender captured them, `done` the completion instant per frame number, frames
/// captured before `warm` in the rows only, incomplete frames captured less than `deadline`
/// before `end` left out, rates over `window_s`. The emulator's `l4slab flow --app rt` uses
/// it too, so both report frames with one definition.
#[allow(clippy::too_many_arguments)]
pub fn frame_summary(
    flow: u32,
    sent: &[l4s_core::rt::SentFrame],
    done: &HashMap<u64, Nanos>,
    deadline: Nanos,
    warm: Nanos,
    end: Nanos,
    window_s: f64,
    fr: &mut FrameColumns,
) -> Value {
    let first = fr.frame.len();
    for sf in sent {
        let complete = done.get(&sf.frame).copied();
        if fate_unknown(complete.is_some(), sf.bytes, sf.capture_at, deadline, end) {
            continue;
        }
        let lat_ms = complete.map_or(f64::NAN, |d| (d - sf.capture_at).as_ms_f64());
        let late = sf.bytes == 0 || complete.is_none_or(|d| d - sf.capture_at > deadline);
        fr.flow.push(flow);
        fr.frame.push(sf.frame);
        fr.capture_s.push(sf.capture_at.as_secs_f64());
        fr.bytes.push(sf.bytes);
        fr.latency_ms.push(lat_ms);
        fr.late.push(late as u8);
    }
    let last = fr.frame.len();
    frames_block(fr, first..last, warm.as_secs_f64(), deadline, window_s)
}

/// A frame not completed, not skipped and captured less than `deadline` before `end`: its
/// fate is not known at the end of the run, so it gets no row.
pub fn fate_unknown(
    completed: bool,
    bytes: u64,
    capture: Nanos,
    deadline: Nanos,
    end: Nanos,
) -> bool {
    !completed && bytes > 0 && capture + deadline > end
}

/// The `flows[i].frames` block of one flow's frame rows `fr[rows]`: frames captured at or
/// after `warm_s` are counted, rates are over `window_s`. The emulator's scenario mode calls
/// it (through the Python binding) on the rows `l4slab flow --app rt` wrote.
pub fn frames_block(
    fr: &FrameColumns,
    rows: std::ops::Range<usize>,
    warm_s: f64,
    deadline: Nanos,
    window_s: f64,
) -> Value {
    let (mut n, mut skipped, mut lost, mut late_n, mut ok_n) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut lat, mut ok_bytes) = (Vec::new(), 0u64);
    for i in rows {
        if fr.capture_s[i] < warm_s {
            continue;
        }
        let (bytes, lat_ms, late) = (fr.bytes[i], fr.latency_ms[i], fr.late[i] != 0);
        n += 1;
        if bytes == 0 {
            skipped += 1;
        } else if lat_ms.is_nan() {
            lost += 1;
        } else {
            lat.push(lat_ms);
        }
        if late {
            late_n += 1;
        } else {
            ok_n += 1;
            ok_bytes += bytes;
        }
    }
    let lat = sorted(lat);
    json!({
        "frames": n,
        "skipped": skipped,
        "incomplete": lost,
        "deadline_ms": deadline.as_ms_f64(),
        "deadline_misses": late_n,
        "miss_ratio": num(if n > 0 { late_n as f64 / n as f64 } else { f64::NAN }),
        "latency_ms": {
            "p50": num(percentile_f64(&lat, 0.50)),
            "p95": num(percentile_f64(&lat, 0.95)),
            "p99": num(percentile_f64(&lat, 0.99)),
            "max": num(lat.last().copied().unwrap_or(f64::NAN)),
        },
        "delivered_fps": num(ok_n as f64 / window_s),
        "bitrate_mbps": num(ok_bytes as f64 * 8.0 / window_s / 1e6),
    })
}

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// What the engine hands over at the end of a run.
pub struct AppInputs<'a> {
    /// Sender and receiver logs per flow id.
    pub logs: Vec<(AppLog, AppLog)>,
    /// Frame deadline per flow id (Some for real-time flows).
    pub deadline: &'a [Option<Nanos>],
    /// Start time per flow id.
    pub start: &'a [Nanos],
    /// Completion instant per flow id (sized transfers).
    pub done_at: &'a [Option<Nanos>],
    /// Flows of `[[flows]]` come first; then these, in order.
    pub extras: &'a [ExtraKind],
}

/// Build the tables and add their blocks to `summary` (a summary.json document whose `flows`
/// array still holds every flow: it is cut back to the `[[flows]]` ones here, and Jain's
/// index recomputed over them).
pub fn attach(
    s: &Scenario,
    link: &dyn l4s_core::link::LinkModel,
    inp: AppInputs<'_>,
    summary: &mut Value,
) -> AppTables {
    let n_main = inp.logs.len() - inp.extras.len();
    let warm = s.warmup;
    let end = s.duration;
    let window_s = (end - warm).as_secs_f64();
    let mut tables = AppTables::default();
    let mut logs = inp.logs;

    // Frames.
    let mut fr = FrameColumns::default();
    let mut frame_docs: Vec<(usize, Value)> = Vec::new();
    for (f, (snd, rcv)) in logs.iter_mut().enumerate().take(n_main) {
        let Some(deadline) = inp.deadline[f] else {
            continue;
        };
        let AppLog::FramesSent(sent) = std::mem::take(snd) else {
            continue;
        };
        let done: HashMap<u64, Nanos> = match std::mem::take(rcv) {
            AppLog::FramesDone(d) => d.into_iter().map(|d| (d.frame, d.done_at)).collect(),
            _ => HashMap::new(),
        };
        let doc = frame_summary(
            f as u32, &sent, &done, deadline, warm, end, window_s, &mut fr,
        );
        frame_docs.push((f, doc));
    }
    if !frame_docs.is_empty() {
        tables.frames = Some(fr);
    }

    // Transfers and probes.
    let mut fct = FctColumns::default();
    let mut pr = ProbeColumns::default();
    let w_rate = workload_rates_bps(s, link);
    for (k, x) in inp.extras.iter().enumerate() {
        let f = n_main + k;
        match x {
            ExtraKind::Transfer { workload, bytes } => {
                let t = inp.done_at[f].map_or(f64::NAN, |d| (d - inp.start[f]).as_secs_f64());
                let start_s = inp.start[f].as_secs_f64();
                push_fct(
                    s, &w_rate, &mut fct, f as u32, *workload, *bytes, start_s, t,
                );
            }
            ExtraKind::Probe { probe } => {
                if let AppLog::ProbeRtts(v) = std::mem::take(&mut logs[f].0) {
                    for (at, rtt) in v {
                        pr.probe.push(*probe as u32);
                        pr.flow.push(f as u32);
                        pr.t_s.push(at.as_secs_f64());
                        pr.rtt_ms.push(rtt.as_ms_f64());
                    }
                }
            }
        }
    }

    // summary.json: keep only the `[[flows]]` entries, with their frame blocks.
    if let Some(flows) = summary.get_mut("flows").and_then(|v| v.as_array_mut()) {
        flows.truncate(n_main);
        for (f, doc) in frame_docs {
            if let Some(e) = flows.get_mut(f) {
                e["frames"] = doc;
            }
        }
        let tputs: Vec<f64> = flows
            .iter()
            .filter_map(|e| e["tput_mbps"].as_f64())
            .collect();
        let j = crate::recorder::jain(&tputs);
        summary["jain"] = num(j);
    }
    add_blocks(s, &w_rate, &fct, &pr, summary);
    if !s.workloads.is_empty() {
        tables.fct = Some(fct);
    }
    if !s.probes.is_empty() {
        tables.probes = Some(pr);
    }
    tables
}

/// The mean link rate over each workload's [start, stop): the C of its `load` and of its
/// transfers' slowdown denominator.
pub fn workload_rates_bps(s: &Scenario, link: &dyn l4s_core::link::LinkModel) -> Vec<f64> {
    let end = s.duration;
    s.workloads
        .iter()
        .map(|w| mean_rate_bps(link, w.start, w.stop.unwrap_or(end).min(end)))
        .collect()
}

/// One transfer's fct.parquet row: `fct_s` NaN when not complete; the slowdown denominator
/// is `ideal_fct_s` with the model's 1448-byte MSS and initial window 10.
#[allow(clippy::too_many_arguments)]
fn push_fct(
    s: &Scenario,
    w_rate: &[f64],
    fct: &mut FctColumns,
    flow: u32,
    workload: usize,
    bytes: u64,
    start_s: f64,
    fct_s: f64,
) {
    let ideal = ideal_fct_s(bytes, 1448, w_rate[workload], s.workloads[workload].rtt, 10);
    fct.flow.push(flow);
    fct.workload.push(workload as u32);
    fct.size_bytes.push(bytes);
    fct.start_s.push(start_s);
    fct.fct_s.push(fct_s);
    fct.ideal_s.push(ideal);
    fct.slowdown.push(fct_s / ideal);
}

/// The `workloads`, `probes` and `rpm` blocks of summary.json (each only when the scenario
/// has such tables).
fn add_blocks(
    s: &Scenario,
    w_rate: &[f64],
    fct: &FctColumns,
    pr: &ProbeColumns,
    summary: &mut Value,
) {
    if !s.workloads.is_empty() {
        summary["workloads"] = Value::Array(workload_docs(s, fct, w_rate));
    }
    if !s.probes.is_empty() {
        let (docs, rpm) = probe_docs(s, pr);
        summary["probes"] = Value::Array(docs);
        summary["rpm"] = rpm;
    }
}

/// Transfers and probe exchanges measured elsewhere (the emulator's `l4slab flow --app
/// workload|probe`) under the simulator's rules: `rows` are (flow, workload, bytes, start_s,
/// fct_s) per transfer, `pr` the answered exchanges. Returns the fct table (ideal_s and
/// slowdown filled in as `attach` does) and a JSON object with the summary blocks.
pub fn external_blocks(
    s: &Scenario,
    link: &dyn l4s_core::link::LinkModel,
    rows: &[(u32, usize, u64, f64, f64)],
    pr: &ProbeColumns,
) -> (FctColumns, Value) {
    let w_rate = workload_rates_bps(s, link);
    let mut fct = FctColumns::default();
    for &(flow, workload, bytes, start_s, fct_s) in rows {
        push_fct(s, &w_rate, &mut fct, flow, workload, bytes, start_s, fct_s);
    }
    let mut doc = json!({});
    add_blocks(s, &w_rate, &fct, pr, &mut doc);
    (fct, doc)
}

/// Size buckets of the slowdown table, upper bounds in payload bytes.
pub const SIZE_BUCKETS: [(&str, u64); 5] = [
    ("<=10KB", 10_000),
    ("10KB-100KB", 100_000),
    ("100KB-1MB", 1_000_000),
    ("1MB-10MB", 10_000_000),
    (">10MB", u64::MAX),
];

fn fct_stats(fcts: Vec<f64>, slow: Vec<f64>, n: usize) -> Value {
    let done = fcts.iter().filter(|x| x.is_finite()).count();
    let (f, sl) = (sorted(fcts), sorted(slow));
    json!({
        "flows": n,
        "completed": done,
        "fct_ms": {"p50": num(percentile_f64(&f, 0.5) * 1e3), "p99": num(percentile_f64(&f, 0.99) * 1e3)},
        "slowdown": {"p50": num(percentile_f64(&sl, 0.5)), "p99": num(percentile_f64(&sl, 0.99))},
    })
}

fn workload_docs(s: &Scenario, fct: &FctColumns, w_rate: &[f64]) -> Vec<Value> {
    let warm = s.warmup.as_secs_f64();
    let mut docs = Vec::new();
    for (i, w) in s.workloads.iter().enumerate() {
        let stop = w.stop.unwrap_or(s.duration).min(s.duration);
        let rows: Vec<usize> = (0..fct.flow.len())
            .filter(|&r| fct.workload[r] == i as u32)
            .collect();
        let offered_bytes: u64 = rows.iter().map(|&r| fct.size_bytes[r]).sum();
        let span = (stop - w.start).as_secs_f64();
        let measured = rows.iter().filter(|&&r| fct.start_s[r] >= warm).copied();
        let measured: Vec<usize> = measured.collect();
        let mut buckets = Vec::new();
        let mut lo = 0u64;
        for (name, hi) in SIZE_BUCKETS {
            let r: Vec<usize> = measured
                .iter()
                .copied()
                .filter(|&r| fct.size_bytes[r] > lo && fct.size_bytes[r] <= hi)
                .collect();
            lo = hi;
            if r.is_empty() {
                continue;
            }
            let mut b = fct_stats(
                r.iter().map(|&x| fct.fct_s[x]).collect(),
                r.iter().map(|&x| fct.slowdown[x]).collect(),
                r.len(),
            );
            b["bucket"] = json!(name);
            buckets.push(b);
        }
        let mut all = fct_stats(
            measured.iter().map(|&x| fct.fct_s[x]).collect(),
            measured.iter().map(|&x| fct.slowdown[x]).collect(),
            measured.len(),
        );
        all["id"] = json!(i);
        all["sizes"] = json!(w.sizes);
        all["target_load"] = w.load.map_or(Value::Null, |l| json!(l));
        let to_load = 8.0 / span / w_rate[i];
        all["offered_load"] = num(offered_bytes as f64 * to_load);
        // The bytes offered in a span are a compound Poisson sum: Var = λ·span·E[S²], whose
        // unbiased estimate is Σ S_i² over the arrivals drawn; normal 95 % bounds.
        let sq: f64 = rows
            .iter()
            .map(|&r| (fct.size_bytes[r] as f64).powi(2))
            .sum();
        let half = 1.96 * sq.sqrt() * to_load;
        let load = offered_bytes as f64 * to_load;
        all["offered_load_ci95"] = if rows.len() >= 2 {
            json!([num((load - half).max(0.0)), num(load + half)])
        } else {
            Value::Null
        };
        // λ·span of the generator (`workloads::expand`): what a run this long should draw.
        let lambda = match (w.load, w.rate) {
            (Some(l), _) => crate::workloads::size_cdf(s, i)
                .map_or(f64::NAN, |c| l * w_rate[i] / 8.0 / c.mean()),
            (_, Some(r)) => r,
            _ => 0.0,
        };
        all["expected_arrivals"] = num(lambda * span);
        if rows.is_empty() {
            all["note"] = json!(format!(
                "no transfer arrived in {:.3} s (about {:.2} expected): raise the load or rate, or lengthen start..stop",
                span,
                lambda * span
            ));
        }
        all["arrivals_per_s"] = num(rows.len() as f64 / span);
        all["buckets"] = Value::Array(buckets);
        docs.push(all);
    }
    docs
}

fn probe_docs(s: &Scenario, pr: &ProbeColumns) -> (Vec<Value>, Value) {
    let warm = s.warmup.as_secs_f64();
    let mut docs = Vec::new();
    let mut by_class: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for (i, p) in s.probes.iter().enumerate() {
        let rtts: Vec<f64> = (0..pr.probe.len())
            .filter(|&r| pr.probe[r] == i as u32 && pr.t_s[r] >= warm)
            .map(|r| pr.rtt_ms[r])
            .collect();
        by_class.entry(p.class()).or_default().extend(&rtts);
        let v = sorted(rtts);
        let med = percentile_f64(&v, 0.5);
        docs.push(json!({
            "id": i,
            "class": p.class(),
            "exchanges": v.len(),
            "rtt_ms": {"p50": num(med), "p90": num(percentile_f64(&v, 0.9)), "p99": num(percentile_f64(&v, 0.99))},
            "rpm": num(60_000.0 / med),
        }));
    }
    let mut rpm = serde_json::Map::new();
    for (c, v) in by_class {
        let v = sorted(v);
        rpm.insert(c.to_string(), num(60_000.0 / percentile_f64(&v, 0.5)));
    }
    (docs, Value::Object(rpm))
}

/// Attach the application tables and summary blocks to a run's results.
pub fn finish(
    s: &Scenario,
    link: &dyn l4s_core::link::LinkModel,
    inp: AppInputs<'_>,
    res: &mut crate::results::RunResults,
) {
    // A workload whose Poisson process drew no arrival keeps its block (it says so).
    if inp.deadline.iter().all(|d| d.is_none())
        && inp.extras.is_empty()
        && s.workloads.is_empty()
        && s.probes.is_empty()
    {
        return; // no application traffic: summary.json stays byte-identical
    }
    let Ok(mut v) = serde_json::from_str::<Value>(&res.summary_json) else {
        return;
    };
    res.app = attach(s, link, inp, &mut v);
    if let Ok(t) = serde_json::to_string_pretty(&v) {
        res.summary_json = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transfer's FCT is its completion minus its start; its slowdown divides by
    /// `ideal_fct_s` at the workload's mean link rate (10 Mb/s) and RTT; an unfinished one
    /// has NaN.
    #[test]
    fn a_transfer_row_holds_its_completion_time_less_its_start() {
        let s = Scenario::from_toml_str(
            "duration = \"10s\"\nwarmup = \"0s\"\n[link]\nrate = \"10mbit\"\n\
             [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n\
             [[workloads]]\nload = 0.5\nsizes = \"web-search\"\ncc = \"cubic\"\nrtt = \"20ms\"\n",
        )
        .unwrap();
        let link = l4s_core::link::ConstantRate::new(l4s_core::time::Rate::from_mbps(10));
        let extras = [
            ExtraKind::Transfer {
                workload: 0,
                bytes: 100_000,
            },
            ExtraKind::Transfer {
                workload: 0,
                bytes: 5_000,
            },
        ];
        let start = [Nanos::ZERO, Nanos::from_secs(2), Nanos::from_secs(3)];
        let done_at = [None, Some(Nanos::from_ms(2500)), None];
        let inp = AppInputs {
            logs: vec![Default::default(); 3],
            deadline: &[None, None, None],
            start: &start,
            done_at: &done_at,
            extras: &extras,
        };
        let mut summary = json!({"flows": [{}, {}, {}]});
        let t = attach(&s, &link, inp, &mut summary);
        let fct = t.fct.expect("a workload gives an fct table");
        assert_eq!(fct.flow, [1, 2]);
        assert_eq!(fct.start_s, [2.0, 3.0]);
        assert_eq!(fct.fct_s[0], 0.5);
        assert!(fct.fct_s[1].is_nan());
        let ideal = ideal_fct_s(100_000, 1448, 10e6, Nanos::from_ms(20), 10);
        assert_eq!(fct.ideal_s[0], ideal);
        assert_eq!(fct.slowdown[0], 0.5 / ideal);
        // The workload block: 105 000 B offered over 10 s at 10 Mb/s = load 0.0084, with a
        // compound-Poisson 95 % half-width 1.96·sqrt(100 000² + 5 000²)·8/10/1e7; the
        // generator's expectation λ·span = 0.5·1.25 MB/s / E[size] · 10 s.
        let w = &summary["workloads"][0];
        let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-12 * want;
        assert!(close(&w["offered_load"], 0.0084), "{}", w["offered_load"]);
        let half = 1.96 * (1e10f64 + 2.5e7).sqrt() * 8.0 / 10.0 / 1e7;
        assert!(close(&w["offered_load_ci95"][1], 0.0084 + half));
        let mean = crate::workloads::size_cdf(&s, 0).unwrap().mean();
        assert!(close(&w["expected_arrivals"], 0.5 * 1.25e6 / mean * 10.0));
        assert_eq!(w["arrivals_per_s"], json!(0.2));
    }

    #[test]
    fn per_class_rpm_is_a_minute_over_the_median_of_all_the_class_samples() {
        // Two Classic probes, rows in time order: probe 0 saw 50, 40, 10 ms and probe 1 20,
        // 30 ms. The class median is that of the five sorted (10 20 30 40 50): 30 ms, so
        // RPM = 60 000 / 30 = 2000; each probe's own median is 40 ms and 25 ms.
        let s = Scenario::from_toml_str(
            "duration = \"2s\"\nwarmup = \"0s\"\n[link]\nrate = \"10mbit\"\n\
             [[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n\
             [[probes]]\nrtt = \"20ms\"\necn = \"classic\"\n\
             [[probes]]\nrtt = \"20ms\"\necn = \"classic\"\n",
        )
        .unwrap();
        let pr = ProbeColumns {
            probe: vec![0, 0, 0, 1, 1],
            flow: vec![1, 1, 1, 2, 2],
            t_s: vec![0.1, 0.2, 0.3, 0.1, 0.2],
            rtt_ms: vec![50.0, 40.0, 10.0, 20.0, 30.0],
        };
        let (docs, rpm) = probe_docs(&s, &pr);
        assert_eq!(rpm, json!({"Classic": 2000.0}));
        assert_eq!(docs[0]["rtt_ms"]["p50"], json!(40.0));
        assert_eq!(docs[1]["rtt_ms"]["p50"], json!(25.0));
        assert_eq!(docs[0]["rpm"], json!(1500.0));
    }
}
