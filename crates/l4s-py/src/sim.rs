//! Simulator bindings: run or validate a scenario from Python (issue "Python front end").
//! Columns cross into Python as little-endian `bytes` that numpy views with `np.frombuffer`.

use l4s_sim::results::{FlowColumns, PacketColumns, QueueColumns};
use l4s_sim::RunResults;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

create_exception!(
    l4slab,
    ScenarioError,
    PyValueError,
    "A scenario (or sweep, or override) is invalid; the message names the field path."
);

/// A column element that can be written as little-endian bytes, with its numpy dtype string.
trait LeColumn: Copy {
    const DTYPE: &'static str;
    const WIDTH: usize;
    fn write_le(self, out: &mut [u8]);
}

impl LeColumn for f64 {
    const DTYPE: &'static str = "<f8";
    const WIDTH: usize = 8;
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

impl LeColumn for u64 {
    const DTYPE: &'static str = "<u8";
    const WIDTH: usize = 8;
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

impl LeColumn for u32 {
    const DTYPE: &'static str = "<u4";
    const WIDTH: usize = 4;
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

impl LeColumn for u8 {
    const DTYPE: &'static str = "u1";
    const WIDTH: usize = 1;
    fn write_le(self, out: &mut [u8]) {
        out[0] = self;
    }
}

/// `(dtype, bytes)`: one pass over the column straight into the Python bytes object, so no
/// Python object is created per sample.
fn column<'py, T: LeColumn>(py: Python<'py>, values: &[T]) -> PyResult<Bound<'py, PyTuple>> {
    let bytes = PyBytes::new_with(py, values.len() * T::WIDTH, |buf| {
        for (chunk, v) in buf.chunks_exact_mut(T::WIDTH).zip(values) {
            v.write_le(chunk);
        }
        Ok(())
    })?;
    PyTuple::new(
        py,
        [T::DTYPE.into_pyobject(py)?.into_any(), bytes.into_any()],
    )
}

fn queue_table<'py>(py: Python<'py>, c: &QueueColumns) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_s", column(py, &c.t_s)?)?;
    d.set_item("queue", column(py, &c.queue)?)?;
    d.set_item("backlog_pkts", column(py, &c.backlog_pkts)?)?;
    d.set_item("backlog_bytes", column(py, &c.backlog_bytes)?)?;
    d.set_item("sojourn_ms", column(py, &c.sojourn_ms)?)?;
    d.set_item("marks", column(py, &c.marks)?)?;
    d.set_item("drops", column(py, &c.drops)?)?;
    d.set_item("p_prime", column(py, &c.p_prime)?)?;
    d.set_item("p_c", column(py, &c.p_c)?)?;
    d.set_item("p_cl", column(py, &c.p_cl)?)?;
    Ok(d)
}

fn flow_table<'py>(py: Python<'py>, c: &FlowColumns) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_s", column(py, &c.t_s)?)?;
    d.set_item("flow", column(py, &c.flow)?)?;
    d.set_item("delivered_bytes", column(py, &c.delivered_bytes)?)?;
    d.set_item("tput_mbps", column(py, &c.tput_mbps)?)?;
    d.set_item("cwnd_pkts", column(py, &c.cwnd_pkts)?)?;
    d.set_item("srtt_ms", column(py, &c.srtt_ms)?)?;
    d.set_item("pacing_mbps", column(py, &c.pacing_mbps)?)?;
    d.set_item("ce_acked", column(py, &c.ce_acked)?)?;
    Ok(d)
}

fn packet_table<'py>(py: Python<'py>, c: &PacketColumns) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_s", column(py, &c.t_s)?)?;
    d.set_item("flow", column(py, &c.flow)?)?;
    d.set_item("queue", column(py, &c.queue)?)?;
    d.set_item("sojourn_ms", column(py, &c.sojourn_ms)?)?;
    d.set_item("verdict", column(py, &c.verdict)?)?;
    Ok(d)
}

/// The dict `l4slab.results` turns into DataFrames.
fn results_dict<'py>(py: Python<'py>, r: &RunResults) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("queue_names", &r.queue_names)?;
    d.set_item("flow_cc", &r.flow_cc)?;
    d.set_item("flow_class", &r.flow_class)?;
    d.set_item("samples", queue_table(py, &r.samples)?)?;
    d.set_item("flows", flow_table(py, &r.flows)?)?;
    match &r.packets {
        Some(p) => d.set_item("packets", packet_table(py, p)?)?,
        None => d.set_item("packets", py.None())?,
    }
    d.set_item("summary_json", &r.summary_json)?;
    d.set_item("events", r.events)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    Ok(())
}
