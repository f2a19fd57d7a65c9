//! What a run reports: iperf3-style interval lines, the sender's pacing error, the per-flow
//! CSV the emulator merges into flows.parquet (columns of DESIGN.md `flows.parquet`, with
//! `acked_bytes`, the media sender's cumulative count, from which the emulator derives
//! `acked_mbps` on its sampling grid as it derives `tput_mbps` from `delivered_bytes`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use l4s_core::FlowStats;

use crate::error::FlowError;

/// One interval of one stream, as printed and as stored in the JSON result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct IntervalRow {
    /// Interval start, s since the run began.
    pub start_s: f64,
    /// Interval end, s since the run began.
    pub end_s: f64,
    /// Payload bytes acknowledged in the interval.
    pub bytes: u64,
    /// Goodput in Mbit/s (acknowledged payload).
    pub mbps: f64,
    /// Retransmitted segments in the interval.
    pub retransmits: u64,
    /// Congestion window at the end, packets.
    pub cwnd_pkts: f64,
    /// Smoothed RTT at the end, ms.
    pub srtt_ms: f64,
    /// Pacing rate at the end, Mbit/s (0 when not pacing).
    pub pacing_mbps: f64,
    /// The CC's α at the end (Prague, DCTCP), None where it has none.
    pub alpha: Option<f64>,
    /// Fraction of the packets acknowledged in the interval that carried CE feedback.
    pub ce_fraction: f64,
}

/// Cumulative counters at the previous interval boundary.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// Seconds since the run began.
    pub t_s: f64,
    /// Acknowledged payload bytes.
    pub delivered_bytes: u64,
    /// Retransmitted segments.
    pub retransmits: u64,
    /// Packets delivered with CE feedback.
    pub ce_acked: u64,
}

impl Snapshot {
    /// The counters of `st` at time `t_s`.
    pub fn of(st: &FlowStats, t_s: f64) -> Self {
        Snapshot {
            t_s,
            delivered_bytes: st.delivered_bytes,
            retransmits: st.retransmits,
            ce_acked: st.ce_acked,
        }
    }
}

/// The row for the interval from `prev` to now (`st` at `t_s`), `mss` payload bytes a packet.
pub fn interval_row(prev: &Snapshot, st: &FlowStats, t_s: f64, mss: u32) -> IntervalRow {
    let bytes = st.delivered_bytes.saturating_sub(prev.delivered_bytes);
    let dt = (t_s - prev.t_s).max(1e-9);
    let pkts = bytes.div_ceil(mss.max(1) as u64);
    let ce = st.ce_acked.saturating_sub(prev.ce_acked);
    IntervalRow {
        start_s: prev.t_s,
        end_s: t_s,
        bytes,
        mbps: bytes as f64 * 8.0 / dt / 1e6,
        retransmits: st.retransmits.saturating_sub(prev.retransmits),
        cwnd_pkts: st.cwnd_pkts,
        srtt_ms: st.srtt.as_ms_f64(),
        pacing_mbps: st.pacing_bps as f64 / 1e6,
        alpha: st.alpha.is_finite().then_some(st.alpha),
        ce_fraction: if pkts == 0 {
            0.0
        } else {
            (ce as f64 / pkts as f64).min(1.0)
        },
    }
}

/// Bytes with an iperf3-like unit.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GBytes", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.2} MBytes", b / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KBytes", b / 1024.0)
    }
}

/// One printed interval line.
pub fn format_row(id: u32, r: &IntervalRow, scalable: bool) -> String {
    let mut s = format!(
        "[{id:>3}] {:>6.2}-{:<6.2} s  {:>12}  {:>8.2} Mbit/s  retr {:<4} cwnd {:>7.1} pkts  srtt {:>7.2} ms",
        r.start_s,
        r.end_s,
        human_bytes(r.bytes),
        r.mbps,
        r.retransmits,
        r.cwnd_pkts,
        r.srtt_ms
    );
    if scalable {
        if let Some(a) = r.alpha {
            s.push_str(&format!("  α {a:.3}"));
        }
        s.push_str(&format!("  CE {:.1}%", 100.0 * r.ce_fraction));
    }
    s
}

/// Lateness of timer-released sends (actual send − scheduled release), in ns.
#[derive(Clone, Debug, Default)]
pub struct PacingError {
    samples: Vec<u64>,
}

/// Samples kept (about 50 minutes at 50 Mbit/s); later ones are not recorded.
const PACING_SAMPLES_MAX: usize = 1 << 24;

/// Summary of [`PacingError`] in µs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PacingSummary {
    /// Sends measured.
    pub n: u64,
    /// Mean lateness, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Largest, µs.
    pub max_us: f64,
}

impl PacingError {
    /// Record one send `late_ns` after its release time.
    pub fn push(&mut self, late_ns: u64) {
        if self.samples.len() < PACING_SAMPLES_MAX {
            self.samples.push(late_ns);
        }
    }
    /// Mean, median, p99 and max (nearest-rank percentiles).
    pub fn summary(&self) -> PacingSummary {
        let n = self.samples.len();
        if n == 0 {
            return PacingSummary::default();
        }
        let mut v = self.samples.clone();
        v.sort_unstable();
        let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1] as f64 / 1e3;
        PacingSummary {
            n: n as u64,
            mean_us: v.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1e3,
            p50_us: rank(0.5),
            p99_us: rank(0.99),
            max_us: v[n - 1] as f64 / 1e3,
        }
    }
}

/// `$L4SLAB_FLOW_DIR/flow-<pid>.csv`: the emulator contract's per-flow samples.
pub struct FlowCsv {
    out: BufWriter<File>,
}

impl FlowCsv {
    /// Create the file (never overwriting one that exists) and write the header.
    pub fn create(path: &Path) -> Result<Self, FlowError> {
        let f = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    FlowError::Exists {
                        flag: "L4SLAB_FLOW_DIR",
                        path: path.display().to_string(),
                    }
                } else {
                    FlowError::io(format!("create {}", path.display()), e)
                }
            })?;
        let mut out = BufWriter::new(f);
        writeln!(
            out,
            "t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked,target_mbps,acked_bytes"
        )
        .map_err(|e| FlowError::io(format!("write {}", path.display()), e))?;
        Ok(FlowCsv { out })
    }

    /// One sample row; `tput_mbps` over the last sample interval.
    pub fn row(
        &mut self,
        t_s: f64,
        flow: &str,
        cc: &str,
        st: &FlowStats,
        tput_mbps: f64,
    ) -> Result<(), FlowError> {
        let cwnd = if st.cwnd_pkts.is_finite() {
            format!("{}", st.cwnd_pkts)
        } else {
            String::new()
        };
        writeln!(
            self.out,
            "{t_s:.6},{flow},{cc},{},{tput_mbps:.6},{cwnd},{:.6},{:.6},{},{:.6},{}",
            st.delivered_bytes,
            st.srtt.as_ms_f64(),
            st.pacing_bps as f64 / 1e6,
            st.ce_acked,
            st.target_bps / 1e6,
            st.acked_bytes
        )
        .map_err(|e| FlowError::io("write the flow CSV", e))
    }

    /// Flush to disk.
    pub fn flush(&mut self) -> Result<(), FlowError> {
        self.out
            .flush()
            .map_err(|e| FlowError::io("write the flow CSV", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::Nanos;

    #[test]
    fn pacing_percentiles_are_nearest_rank() {
        let mut p = PacingError::default();
        for i in 1..=100u64 {
            p.push(i * 1000);
        }
        let s = p.summary();
        assert_eq!(s.n, 100);
        assert_eq!(s.p50_us, 50.0);
        assert_eq!(s.p99_us, 99.0);
        assert_eq!(s.max_us, 100.0);
        assert!((s.mean_us - 50.5).abs() < 1e-9);
    }

    #[test]
    fn interval_row_rates_and_ce_fraction() {
        let prev = Snapshot {
            t_s: 1.0,
            delivered_bytes: 1000,
            retransmits: 2,
            ce_acked: 10,
        };
        let st = FlowStats {
            delivered_bytes: 1000 + 1_250_000,
            retransmits: 5,
            ce_acked: 10 + 250,
            cwnd_pkts: 12.5,
            srtt: Nanos::from_ms(20),
            pacing_bps: 60_000_000,
            alpha: 0.25,
            ..Default::default()
        };
        let r = interval_row(&prev, &st, 2.0, 1250);
        assert_eq!(r.bytes, 1_250_000);
        assert!((r.mbps - 10.0).abs() < 1e-9);
        assert_eq!(r.retransmits, 3);
        // 1000 packets of 1250 bytes, 250 of them CE.
        assert!((r.ce_fraction - 0.25).abs() < 1e-12);
        assert_eq!(r.alpha, Some(0.25));
        assert!((r.pacing_mbps - 60.0).abs() < 1e-12);
    }
}
