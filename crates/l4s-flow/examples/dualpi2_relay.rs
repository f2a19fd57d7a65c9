//! A DualPI2 bottleneck relay for `l4s-flow` runs without the emulator (the one the tests
//! use): `dualpi2_relay SERVER_PORT RATE_MBPS ONE_WAY_MS DURATION_S OUT.csv`. It prints
//! `port <P> origin_ns <T0>` on its first line, relays client→server through l4s-core's
//! DualPI2 and a constant-rate link for DURATION_S, then writes 16 ms queue samples of the L
//! queue in the validation toolkit's CSV layout (t_s, backlog_L, sojourn_L, marks_L, drops_L).

#[allow(dead_code)]
#[path = "../tests/common/bottleneck.rs"]
mod bottleneck;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use l4s_core::{Nanos, Rate};

fn main() -> ExitCode {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 6 {
        eprintln!("usage: dualpi2_relay SERVER_PORT RATE_MBPS ONE_WAY_MS DURATION_S OUT.csv");
        return ExitCode::from(2);
    }
    let num = |i: usize| -> Option<f64> { a[i].parse::<f64>().ok().filter(|x| *x > 0.0) };
    let (Some(port), Some(rate), Some(ow), Some(dur)) = (num(1), num(2), num(3), num(4)) else {
        eprintln!("dualpi2_relay: every number must be > 0");
        return ExitCode::from(2);
    };
    let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let end = Nanos::from_secs_f64(dur);
    let bn = bottleneck::Bottleneck::start(
        lo,
        SocketAddr::new(lo, port as u16),
        Rate::from_mbps_f64(rate),
        Nanos::from_secs_f64(ow / 1e3),
        (Nanos::ZERO, end),
    );
    println!("port {} origin_ns {}", bn.port, bn.origin_ns);
    let _ = std::io::stdout().flush();
    std::thread::sleep(std::time::Duration::from_nanos(end.0));
    let st = bn.finish();
    let mut out = String::from("t_s,backlog_L,sojourn_L,marks_L_cum,drops_L_cum,utilisation\n");
    for r in st.samples.iter().filter(|r| r.queue == "L") {
        out.push_str(&format!(
            "{:.3},{},{:.4},{},{},{:.4}\n",
            r.t_s, r.backlog_pkts, r.sojourn_ms, r.marks, r.drops, st.utilisation
        ));
    }
    if let Err(e) = std::fs::write(&a[5], out) {
        eprintln!("dualpi2_relay: {}: {e}", a[5]);
        return ExitCode::from(2);
    }
    eprintln!(
        "utilisation {:.3}, L sojourn p50 {:.3} ms p99 {:.3} ms, marks {}, drops {}, relay lateness max {:.1} us",
        st.utilisation,
        st.l_p(0.5),
        st.l_p(0.99),
        st.marks,
        st.drops,
        st.max_late_ns as f64 / 1e3
    );
    ExitCode::SUCCESS
}
