//! The emulator data path's own cost: ns per packet through `Path` (parse, flow lookup, copy,
//! DualPI2 enqueue/dequeue with marking and the checksum fix, link model, delay line, records)
//! on a virtual clock, so no syscall or clock read is included.
//! `cargo bench -p l4s-emu --bench path`; figures are printed and recorded in BENCHMARKS.md.

use criterion::{criterion_group, Criterion};
use l4s_core::{Ecn, Nanos};
use l4s_emu::packet::{build, proto};
use l4s_emu::path::{Path, PathConfig};
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;

/// 1500-byte UDP packets of 8 flows (half ECT(1), half ECT(0)) offered at 1.2x a 1 Gb/s
/// DualPI2 link with 20 ms delay: the queue, the PI controller and marking are all active.
fn packets() -> Vec<Vec<u8>> {
    (0..8u16)
        .map(|f| {
            let ecn = if f % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
            build::ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                proto::UDP,
                40000 + f,
                5201,
                ecn.bits(),
                1500,
            )
        })
        .collect()
}

/// Push `n` packets 10 µs apart (1.2 Gb/s) and write every due packet back; returns the
/// packets written and the virtual end time.
fn run(n: u64, pkts: &[Vec<u8>]) -> (u64, Nanos) {
    let mut c = PathConfig::from_tables(json!({"rate": "1gbit"}), json!({"kind": "dualpi2"}))
        .expect("bench tables");
    c.delay = Nanos::from_ms(20);
    let mut p = Path::new(c).expect("bench path");
    let mut out = 0u64;
    let mut now = Nanos::ZERO;
    for i in 0..n {
        now = Nanos(i * 10_000);
        p.push(&pkts[(i % 8) as usize], now);
        while let Some((b, at)) = p.pop_due(now) {
            p.record_sent(at, now);
            out += black_box(b.len()) as u64 / 1500;
            p.recycle(b);
        }
    }
    let r = p.finish(now);
    black_box(r.run.summary_json.len());
    (out, now)
}

fn report() {
    let pkts = packets();
    let n = 2_000_000u64;
    let mut best = f64::MAX;
    let mut written = 0;
    for _ in 0..3 {
        let t0 = Instant::now();
        let (w, _) = run(n, &pkts);
        best = best.min(t0.elapsed().as_secs_f64());
        written = w;
    }
    println!(
        "path (DualPI2, 1 Gb/s, 20 ms, 1.2x load): {n} packets in, {written} out, best of 3 {:.3} s: {:.0} ns/packet, {:.2} M packets/s, {:.1} Gb/s of 1500-byte packets",
        best,
        best * 1e9 / n as f64,
        n as f64 / best / 1e6,
        n as f64 * 1500.0 * 8.0 / best / 1e9
    );
}

fn bench(c: &mut Criterion) {
    report();
    let pkts = packets();
    let mut g = c.benchmark_group("path");
    g.sample_size(10);
    g.bench_function("dualpi2_1gbit_100k_packets", |b| {
        b.iter(|| run(100_000, &pkts))
    });
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
