//! CSV writers for the command-line binary (the Python front end writes Parquet instead).

use crate::results::RunResults;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

fn f(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        format!("{x}")
    }
}

/// samples.csv: t_s,queue,backlog_pkts,backlog_bytes,sojourn_ms,marks,drops,p_prime,p_c,p_cl
pub fn samples_csv(r: &RunResults) -> String {
    let s = &r.samples;
    let mut out = String::from(
        "t_s,queue,backlog_pkts,backlog_bytes,sojourn_ms,marks,drops,p_prime,p_c,p_cl\n",
    );
    for i in 0..s.t_s.len() {
        let q = r
            .queue_names
            .get(s.queue[i] as usize)
            .map_or("?", |x| x.as_str());
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            s.t_s[i],
            q,
            s.backlog_pkts[i],
            s.backlog_bytes[i],
            s.sojourn_ms[i],
            s.marks[i],
            s.drops[i],
            f(s.p_prime[i]),
            f(s.p_c[i]),
            f(s.p_cl[i])
        );
    }
    out
}

/// flows.csv: t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked
pub fn flows_csv(r: &RunResults) -> String {
    let s = &r.flows;
    let mut out = String::from(
        "t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked\n",
    );
    for i in 0..s.t_s.len() {
        let cc = r
            .flow_cc
            .get(s.flow[i] as usize)
            .map_or("?", |x| x.as_str());
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            s.t_s[i],
            s.flow[i],
            cc,
            s.delivered_bytes[i],
            s.tput_mbps[i],
            f(s.cwnd_pkts[i]),
            s.srtt_ms[i],
            s.pacing_mbps[i],
            s.ce_acked[i]
        );
    }
    out
}

/// packets.csv: t_s,flow,queue,sojourn_ms,verdict (only when recorded).
pub fn packets_csv(r: &RunResults) -> Option<String> {
    let p = r.packets.as_ref()?;
    let mut out = String::from("t_s,flow,queue,sojourn_ms,verdict\n");
    for i in 0..p.t_s.len() {
        let q = r
            .queue_names
            .get(p.queue[i] as usize)
            .map_or("?", |x| x.as_str());
        let v = ["pass", "marked", "dropped"][p.verdict[i].min(2) as usize];
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            p.t_s[i], p.flow[i], q, p.sojourn_ms[i], v
        );
    }
    Some(out)
}

/// Write samples.csv, flows.csv, summary.json (and packets.csv if recorded) into `dir`.
pub fn write_dir(r: &RunResults, dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("samples.csv"), samples_csv(r))?;
    std::fs::write(dir.join("flows.csv"), flows_csv(r))?;
    std::fs::write(dir.join("summary.json"), &r.summary_json)?;
    if let Some(p) = packets_csv(r) {
        std::fs::write(dir.join("packets.csv"), p)?;
    }
    Ok(())
}
