//! Simulator bindings: run or validate a scenario from Python (issue "Python front end").
//! Columns cross into Python as numpy arrays that own the simulator's column buffers (no copy).

use std::path::PathBuf;

use l4s_sim::results::{FlowColumns, PacketColumns, QueueColumns};
use l4s_sim::{RunResults, Scenario, SimError};
use numpy::{Element, PyArray1};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(
    l4slab,
    ScenarioError,
    PyValueError,
    "A scenario (or sweep, or override) is invalid; the message names the field path."
);

/// A column moved into a 1-D numpy array: the array takes over the `Vec`'s buffer, so a column
/// exists once (no copy into a Python `bytes`, no Python object per sample).
fn column<'py, T: Element>(py: Python<'py>, values: Vec<T>) -> Bound<'py, PyAny> {
    PyArray1::from_vec(py, values).into_any()
}

fn queue_table(py: Python<'_>, c: QueueColumns) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_s", column(py, c.t_s))?;
    d.set_item("queue", column(py, c.queue))?;
    d.set_item("backlog_pkts", column(py, c.backlog_pkts))?;
    d.set_item("backlog_bytes", column(py, c.backlog_bytes))?;
    d.set_item("sojourn_ms", column(py, c.sojourn_ms))?;
    d.set_item("marks", column(py, c.marks))?;
    d.set_item("drops", column(py, c.drops))?;
    d.set_item("p_prime", column(py, c.p_prime))?;
    d.set_item("p_c", column(py, c.p_c))?;
    d.set_item("p_cl", column(py, c.p_cl))?;
    Ok(d)
}

fn flow_table(py: Python<'_>, c: FlowColumns) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_s", column(py, c.t_s))?;
    d.set_item("flow", column(py, c.flow))?;
    d.set_item("delivered_bytes", column(py, c.delivered_bytes))?;
    d.set_item("tput_mbps", column(py, c.tput_mbps))?;
    d.set_item("cwnd_pkts", column(py, c.cwnd_pkts))?;
    d.set_item("srtt_ms", column(py, c.srtt_ms))?;
    d.set_item("pacing_mbps", column(py, c.pacing_mbps))?;
    d.set_item("ce_acked", column(py, c.ce_acked))?;
    d.set_item("target_mbps", column(py, c.target_mbps))?;
    d.set_item("acked_mbps", column(py, c.acked_mbps))?;
    Ok(d)
}

fn packet_table(py: Python<'_>, c: PacketColumns) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_s", column(py, c.t_s))?;
    d.set_item("flow", column(py, c.flow))?;
    d.set_item("queue", column(py, c.queue))?;
    d.set_item("sojourn_ms", column(py, c.sojourn_ms))?;
    d.set_item("verdict", column(py, c.verdict))?;
    Ok(d)
}

/// The application tables (frames, transfers, probes) as dicts of columns, None when absent.
fn app_tables(
    py: Python<'_>,
    a: l4s_sim::app_results::AppTables,
    d: &Bound<'_, PyDict>,
) -> PyResult<()> {
    match a.frames {
        Some(c) => {
            let t = PyDict::new(py);
            t.set_item("flow", column(py, c.flow))?;
            t.set_item("frame", column(py, c.frame))?;
            t.set_item("capture_s", column(py, c.capture_s))?;
            t.set_item("bytes", column(py, c.bytes))?;
            t.set_item("latency_ms", column(py, c.latency_ms))?;
            t.set_item("late", column(py, c.late))?;
            d.set_item("frames", t)?;
        }
        None => d.set_item("frames", py.None())?,
    }
    match a.fct {
        Some(c) => {
            let t = PyDict::new(py);
            t.set_item("flow", column(py, c.flow))?;
            t.set_item("workload", column(py, c.workload))?;
            t.set_item("size_bytes", column(py, c.size_bytes))?;
            t.set_item("start_s", column(py, c.start_s))?;
            t.set_item("fct_s", column(py, c.fct_s))?;
            t.set_item("ideal_s", column(py, c.ideal_s))?;
            t.set_item("slowdown", column(py, c.slowdown))?;
            d.set_item("fct", t)?;
        }
        None => d.set_item("fct", py.None())?,
    }
    match a.probes {
        Some(c) => {
            let t = PyDict::new(py);
            t.set_item("probe", column(py, c.probe))?;
            t.set_item("flow", column(py, c.flow))?;
            t.set_item("t_s", column(py, c.t_s))?;
            t.set_item("rtt_ms", column(py, c.rtt_ms))?;
            d.set_item("probes", t)?;
        }
        None => d.set_item("probes", py.None())?,
    }
    Ok(())
}

/// The dict `l4slab.results` turns into tables; the results are consumed so every column
/// moves into Python instead of being copied while the simulator's copy is still alive.
fn results_dict(py: Python<'_>, r: RunResults) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("queue_names", &r.queue_names)?;
    d.set_item("flow_cc", &r.flow_cc)?;
    d.set_item("flow_class", &r.flow_class)?;
    d.set_item("samples", queue_table(py, r.samples)?)?;
    d.set_item("flows", flow_table(py, r.flows)?)?;
    match r.packets {
        Some(p) => d.set_item("packets", packet_table(py, p)?)?,
        None => d.set_item("packets", py.None())?,
    }
    d.set_item("summary_json", &r.summary_json)?;
    d.set_item("events", r.events)?;
    let t = &r.totals;
    let totals = PyDict::new(py);
    for (k, v) in [
        ("sent_pkts", t.sent_pkts),
        ("delivered_pkts", t.delivered_pkts),
        ("aqm_dropped_pkts", t.aqm_dropped_pkts),
        ("link_lost_pkts", t.link_lost_pkts),
        ("in_flight_pkts", t.in_flight_pkts),
        ("acks_sent", t.acks_sent),
        ("acks_delivered", t.acks_delivered),
        ("acks_dropped", t.acks_dropped),
        ("acks_in_flight", t.acks_in_flight),
    ] {
        totals.set_item(k, v)?;
    }
    d.set_item("totals", totals)?;
    d.set_item("flow_min_owd_ms", &r.flow_min_owd_ms)?;
    app_tables(py, r.app, &d)?;
    Ok(d)
}

fn scenario_error(e: SimError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// Parse `text` ("toml" | "json") and anchor relative paths (traces) at `base_dir`.
fn parse(text: &str, fmt: &str, base_dir: &str) -> Result<Scenario, SimError> {
    let mut s = match fmt {
        "toml" => Scenario::from_toml_str(text)?,
        "json" => Scenario::from_json_str(text)?,
        other => {
            return Err(SimError::field(
                "fmt",
                format!("{other:?} is not a scenario format (\"toml\" | \"json\")"),
            ))
        }
    };
    s.base_dir = Some(PathBuf::from(base_dir));
    Ok(s)
}

/// Simulated time a running scenario has reached, polled from another thread while
/// `run_scenario(..., progress=p)` runs with the GIL released.
#[pyclass(frozen)]
struct Progress {
    sim_ns: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

#[pymethods]
impl Progress {
    #[new]
    fn new() -> Self {
        Progress {
            sim_ns: Default::default(),
        }
    }

    /// Simulated seconds reached so far (the duration once the run has ended).
    fn sim_s(&self) -> f64 {
        self.sim_ns.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9
    }
}

/// Run a scenario; returns the columns as numpy arrays plus names and the summary JSON. The GIL is released for the whole parse + simulation.
/// `pcap`: also return the pcapng capture as `pcapng` (bytes); `progress`: a `Progress` the
/// run updates.
#[pyfunction]
#[pyo3(signature = (text, fmt = "toml", base_dir = ".", pcap = false, progress = None))]
fn run_scenario<'py>(
    py: Python<'py>,
    text: &str,
    fmt: &str,
    base_dir: &str,
    pcap: bool,
    progress: Option<&Bound<'py, Progress>>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = l4s_sim::RunOptions {
        pcap,
        progress: progress.map(|p| p.get().sim_ns.clone()),
    };
    let (res, extras) = py
        .detach(|| parse(text, fmt, base_dir).and_then(|s| l4s_sim::run_with(&s, &opts)))
        .map_err(scenario_error)?;
    let d = results_dict(py, res)?;
    if let Some(b) = extras.pcapng {
        d.set_item("pcapng", pyo3::types::PyBytes::new(py, &b))?;
    }
    Ok(d)
}

/// Check a scenario without running it: parse, validate, and build the simulated world
/// (which reads trace files), so a missing trace is reported here too.
#[pyfunction]
#[pyo3(signature = (text, fmt = "toml", base_dir = "."))]
fn validate_scenario(py: Python<'_>, text: &str, fmt: &str, base_dir: &str) -> PyResult<()> {
    py.detach(|| parse(text, fmt, base_dir).and_then(|s| l4s_sim::world::World::new(&s).map(drop)))
        .map_err(scenario_error)
}

/// What the simulator resolves from a scenario before it runs, as JSON: the `[aqm]` table
/// with a BDP-unit limit resolved (`aqm`), how it was resolved (`buffer`, null if not), so
/// the emulator builds the same queue.
#[pyfunction]
#[pyo3(signature = (text, fmt = "toml", base_dir = "."))]
fn effective_settings(py: Python<'_>, text: &str, fmt: &str, base_dir: &str) -> PyResult<String> {
    py.detach(|| parse(text, fmt, base_dir).map(|s| l4s_sim::bdp::effective_settings_json(&s)))
        .map_err(scenario_error)
}

/// One real-time flow's frame rows measured elsewhere (the emulator's `l4slab flow --app rt`)
/// under the simulator's rules (`app_results::fate_unknown`, `app_results::frames_block`):
/// returns which rows a simulated run would keep (fate known at `end_s`) and the
/// `flows[i].frames` block as JSON text (frames captured from `warm_s`, rates over `window_s`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn frame_rows_summary(
    capture_s: Vec<f64>,
    bytes: Vec<u64>,
    latency_ms: Vec<f64>,
    late: Vec<u8>,
    warm_s: f64,
    end_s: f64,
    deadline_ms: f64,
    window_s: f64,
) -> PyResult<(Vec<bool>, String)> {
    use l4s_core::Nanos;
    use l4s_sim::app_results::{fate_unknown, frames_block, FrameColumns};
    let n = capture_s.len();
    if bytes.len() != n || latency_ms.len() != n || late.len() != n {
        return Err(PyValueError::new_err("frame columns differ in length"));
    }
    let (deadline, end) = (
        Nanos::from_secs_f64(deadline_ms / 1e3),
        Nanos::from_secs_f64(end_s),
    );
    let keep: Vec<bool> = (0..n)
        .map(|i| {
            let capture = Nanos::from_secs_f64(capture_s[i].max(0.0));
            !fate_unknown(latency_ms[i].is_finite(), bytes[i], capture, deadline, end)
        })
        .collect();
    let mut fr = FrameColumns::default();
    for i in (0..n).filter(|&i| keep[i]) {
        fr.flow.push(0);
        fr.frame.push(i as u64);
        fr.capture_s.push(capture_s[i]);
        fr.bytes.push(bytes[i]);
        fr.latency_ms.push(latency_ms[i]);
        fr.late.push(late[i]);
    }
    let block = frames_block(&fr, 0..fr.frame.len(), warm_s, deadline, window_s);
    Ok((keep, block.to_string()))
}

/// The workload transfers and probes of a scenario as the simulator expands them
/// (`workloads::expand`: the seed's "workload/i" streams, in the simulator's flow order), as
/// JSON: `transfers` [{flow, workload, start_ns, bytes, cc, ecn}] and `probes` [{flow,
/// probe}], `flow` being the simulator's flow id. The emulator's scenario mode runs these.
#[pyfunction]
#[pyo3(signature = (text, fmt = "toml", base_dir = "."))]
fn workload_schedule(py: Python<'_>, text: &str, fmt: &str, base_dir: &str) -> PyResult<String> {
    use l4s_sim::workloads::{expand, ExtraKind};
    py.detach(|| {
        let s = parse(text, fmt, base_dir)?;
        let link = l4s_sim::world::build_link(&s.link, s.base_dir.as_deref())?;
        let n_main: u64 = s.flows.iter().map(|f| f.count).sum();
        let (mut transfers, mut probes) = (Vec::new(), Vec::new());
        for (k, (fc, kind)) in expand(&s, link.as_ref())?.into_iter().enumerate() {
            let flow = n_main + k as u64;
            match kind {
                ExtraKind::Transfer { workload, bytes } => transfers.push(serde_json::json!({
                    "flow": flow, "workload": workload, "start_ns": fc.start.0,
                    "bytes": bytes, "cc": fc.cc,
                    "ecn": fc.ecn.map(|e| format!("{e:?}").to_lowercase()),
                })),
                ExtraKind::Probe { probe } => {
                    probes.push(serde_json::json!({"flow": flow, "probe": probe}))
                }
            }
        }
        Ok(serde_json::json!({"transfers": transfers, "probes": probes}).to_string())
    })
    .map_err(scenario_error)
}

/// Workload transfers and probe exchanges measured elsewhere (the emulator) under the
/// simulator's rules (`app_results::external_blocks`): returns the transfers' ideal_s and
/// slowdown columns and the summary.json blocks (`workloads`, `probes`, `rpm`) as JSON text.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (text, fmt, base_dir, flow, workload, size_bytes, start_s, fct_s, probe, t_s, rtt_ms))]
fn app_blocks(
    text: &str,
    fmt: &str,
    base_dir: &str,
    flow: Vec<u32>,
    workload: Vec<u32>,
    size_bytes: Vec<u64>,
    start_s: Vec<f64>,
    fct_s: Vec<f64>,
    probe: Vec<u32>,
    t_s: Vec<f64>,
    rtt_ms: Vec<f64>,
) -> PyResult<(Vec<f64>, Vec<f64>, String)> {
    use l4s_sim::app_results::{external_blocks, ProbeColumns};
    let n = flow.len();
    if [workload.len(), size_bytes.len(), start_s.len(), fct_s.len()] != [n; 4]
        || probe.len() != t_s.len()
        || probe.len() != rtt_ms.len()
    {
        return Err(PyValueError::new_err(
            "transfer or probe columns differ in length",
        ));
    }
    let s = parse(text, fmt, base_dir).map_err(scenario_error)?;
    if let Some(w) = workload.iter().find(|&&w| w as usize >= s.workloads.len()) {
        return Err(PyValueError::new_err(format!(
            "workload {w}: the scenario has {} [[workloads]]",
            s.workloads.len()
        )));
    }
    if let Some(p) = probe.iter().find(|&&p| p as usize >= s.probes.len()) {
        return Err(PyValueError::new_err(format!(
            "probe {p}: the scenario has {} [[probes]]",
            s.probes.len()
        )));
    }
    let link =
        l4s_sim::world::build_link(&s.link, s.base_dir.as_deref()).map_err(scenario_error)?;
    let rows: Vec<_> = (0..n)
        .map(|i| {
            (
                flow[i],
                workload[i] as usize,
                size_bytes[i],
                start_s[i],
                fct_s[i],
            )
        })
        .collect();
    let pr = ProbeColumns {
        flow: vec![0; probe.len()],
        probe,
        t_s,
        rtt_ms,
    };
    let (fct, doc) = external_blocks(&s, link.as_ref(), &rows, &pr);
    Ok((fct.ideal_s, fct.slowdown, doc.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(effective_settings, m)?)?;
    m.add_class::<Progress>()?;
    m.add_function(wrap_pyfunction!(frame_rows_summary, m)?)?;
    m.add_function(wrap_pyfunction!(workload_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(app_blocks, m)?)?;
    Ok(())
}
