//! The emulator's data path on a virtual clock: closed forms (delay = backlog/rate), CE marking
//! at a frozen p' with valid checksums, trace links against the simulator on the same input,
//! malformed input, loss accounting and determinism. No root, no sockets.

use l4s_core::aqm::dualpi2::{DualPi2, DualPi2Params};
use l4s_core::cbr::{CbrConfig, CbrSource};
use l4s_core::{Ecn, Endpoint, Nanos, Rate, Rng};
use l4s_emu::packet::{build, parse, proto, Ipv4Packet, PacketBuf};
use l4s_emu::path::{Path, PathConfig};
use l4s_emu::record::PathResults;
use serde_json::{json, Value};

/// A 1500-byte-or-other UDP/IPv4 packet from flow `port` with codepoint `ecn`.
fn udp4(port: u16, ecn: Ecn, len: u16) -> Vec<u8> {
    build::ipv4(
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        proto::UDP,
        port,
        5201,
        ecn.bits(),
        len,
    )
}

fn cfg(link: Value, aqm: Value) -> PathConfig {
    PathConfig::from_tables(link, aqm).expect("valid tables")
}

/// Drive `path` with a perfect clock: every arrival pushed at its instant, every deadline met
/// exactly, until `end`. Returns (scheduled time, bytes) of every packet written.
fn drive(path: &mut Path, arrivals: &[(Nanos, Vec<u8>)], end: Nanos) -> Vec<(Nanos, PacketBuf)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let next = [arrivals.get(i).map(|a| a.0), path.next_deadline()]
            .into_iter()
            .flatten()
            .min();
        let Some(now) = next else { break };
        if now > end {
            break;
        }
        while i < arrivals.len() && arrivals[i].0 <= now {
            path.push(&arrivals[i].1, arrivals[i].0);
            i += 1;
        }
        while let Some((b, at)) = path.pop_due(now) {
            assert!(at <= now);
            path.record_sent(at, now);
            out.push((at, b));
        }
    }
    out
}

fn summary(r: &PathResults) -> Value {
    serde_json::from_str(&r.run.summary_json).unwrap()
}

#[test]
fn overloaded_constant_rate_link_delays_by_backlog_over_rate() {
    // 12 Mb/s: a 1500-byte packet takes exactly 1 ms. Arrivals every 0.5 ms (24 Mb/s offered)
    // into a FIFO; one-way delay 20 ms.
    let mut c = cfg(json!({"rate": "12mbit"}), json!({"kind": "fifo"}));
    c.delay = Nanos::from_ms(20);
    c.per_packet = true;
    let mut p = Path::new(c).unwrap();
    let n = 200u64;
    let arrivals: Vec<_> = (0..n)
        .map(|i| (Nanos::from_us(500 * i), udp4(4000, Ecn::NotEct, 1500)))
        .collect();
    let out = drive(&mut p, &arrivals, Nanos::from_secs(1));
    assert_eq!(out.len() as u64, n);
    // The link never idles: packet i finishes at (i+1) ms and arrives 20 ms later.
    for (i, (at, b)) in out.iter().enumerate() {
        assert_eq!(*at, Nanos::from_ms(i as u64 + 1 + 20), "packet {i}");
        assert_eq!(&b[..], &arrivals[i].1[..], "bytes unchanged");
    }
    let r = p.finish(Nanos::from_secs(1));
    let pk = r.run.packets.as_ref().unwrap();
    // Packet i waits i ms - 0.5·i ms = backlog ahead of it / rate.
    for i in 0..n as usize {
        assert!((pk.sojourn_ms[i] - 0.5 * i as f64).abs() < 1e-9, "{i}");
    }
    // At every sample while the queue builds, backlog/rate is the wait of the packet arriving
    // then (the sample runs before the arrival at the same instant; the link is between packets).
    let s = &r.run.samples;
    for k in 0..s.t_s.len() {
        let t_ms = (s.t_s[k] * 1e3).round() as u64;
        if t_ms * 2 >= n {
            break;
        }
        let wait_ms = s.backlog_bytes[k] as f64 * 8.0 / 12e6 * 1e3;
        let i = (t_ms * 2) as usize; // the packet arriving at t
        assert!((wait_ms - pk.sojourn_ms[i]).abs() < 1e-9, "t={t_ms} ms");
    }
    let sm = summary(&r);
    assert_eq!(sm["packets"]["delivered"], json!(n));
    assert_eq!(
        sm["flows"][0]["flow"],
        json!("udp 10.0.0.1:4000>10.0.0.2:5201")
    );
    // A perfect clock: no lateness.
    assert_eq!(r.lateness_max_us, 0.0);
}

/// Push `n` packets at t=0 through a DualPI2 held at p' (no PI update within the test: tupdate
/// 4 s) and a 1 Gb/s link; returns the outputs and the AQM's mark count.
fn frozen_dualpi2(p_prime: f64, ecns: &[Ecn], v6: bool) -> (Vec<(Nanos, PacketBuf)>, Vec<Ecn>) {
    let params = DualPi2Params {
        tupdate: Nanos::from_secs(4),
        step_thresh: Some(Nanos::from_secs(4)),
        limit: 100_000,
        ..Default::default()
    };
    let mut aqm = DualPi2::new(params, Rng::new(7)).unwrap();
    aqm.set_p_prime(p_prime);
    let c = cfg(json!({"rate": "1gbit"}), json!({"kind": "dualpi2"}));
    let mut p = Path::with_aqm(c, Box::new(aqm)).unwrap();
    let arrivals: Vec<_> = ecns
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let port = 1000 + (i % 2) as u16;
            let b = if v6 {
                build::ipv6([1; 16], [2; 16], proto::UDP, port, 9, e.bits(), 1500)
            } else {
                udp4(port, e, 1500)
            };
            (Nanos::ZERO, b)
        })
        .collect();
    let out = drive(&mut p, &arrivals, Nanos::from_secs(1));
    (out, ecns.to_vec())
}

#[test]
fn ce_marking_at_a_frozen_p_prime_matches_the_coupled_probabilities() {
    // p' = 0.3: Classic packets are marked with p_C = p'^2 = 0.09, L4S packets with
    // p_CL = k·p' = 0.6 (k = 2). Alternating ECT(0)/ECT(1), 20000 packets; all but the last two
    // leave with >= 2 MTU still queued (the floor below which DualPI2 does nothing).
    let n = 20_000;
    let ecns: Vec<Ecn> = (0..n)
        .map(|i| if i % 2 == 0 { Ecn::Ect0 } else { Ecn::Ect1 })
        .collect();
    let (out, _) = frozen_dualpi2(0.3, &ecns, false);
    assert_eq!(out.len(), n, "nothing dropped");
    let (mut ce_c, mut ce_l) = (0u64, 0u64);
    for (_, b) in &out {
        // Every packet's header checksum verifies (new_checked checks it) ...
        let v = Ipv4Packet::new_checked(&b[..]).expect("valid IPv4 header");
        let port = parse(b).unwrap().key.sport;
        match (port, v.ecn()) {
            (1000, Ecn::Ce) => ce_c += 1,
            (1001, Ecn::Ce) => ce_l += 1,
            (1000, e) => assert_eq!(e, Ecn::Ect0),
            (_, e) => assert_eq!(e, Ecn::Ect1),
        }
    }
    // Binomial bounds at 5 sigma over ~10000 eligible packets per class.
    let m = (n / 2) as f64;
    let sd_c = (m * 0.09 * 0.91).sqrt();
    let sd_l = (m * 0.6 * 0.4).sqrt();
    assert!(
        (ce_c as f64 - 0.09 * m).abs() < 5.0 * sd_c,
        "classic CE {ce_c}"
    );
    assert!((ce_l as f64 - 0.6 * m).abs() < 5.0 * sd_l, "L4S CE {ce_l}");
}

#[test]
fn ipv6_ce_marks_rewrite_the_traffic_class() {
    let ecns = vec![Ecn::Ect1; 2000];
    let (out, _) = frozen_dualpi2(0.5, &ecns, true);
    // p_CL = 1.0 (k·p' = 1, not overloaded): every eligible packet is marked.
    let ce = out
        .iter()
        .filter(|(_, b)| parse(b).unwrap().ecn == Ecn::Ce)
        .count();
    // The first packet leaves at once into an empty queue, the last two leave less than 2 MTU
    // behind them: below DualPI2's floor none of those is marked.
    assert_eq!(ce, 2000 - 3);
    // Only the ECN bits changed.
    for (_, b) in &out {
        assert_eq!(b[0], 0x60);
        assert_eq!(b[1] & 0xcf, 0);
    }
}

#[test]
fn malformed_input_is_counted_and_dropped() {
    let mut p = Path::new(cfg(json!({"rate": "100mbit"}), json!({"kind": "fifo"}))).unwrap();
    let good = udp4(1, Ecn::Ect0, 200);
    let mut bad_sum = good.clone();
    bad_sum[11] ^= 0xff;
    let arrivals = vec![
        (Nanos(0), good.clone()),
        (Nanos(1), vec![]),
        (Nanos(2), vec![0x45, 0, 0]),
        (Nanos(3), bad_sum),
        (Nanos(4), good[..100].to_vec()),
        (Nanos(5), vec![0x70; 60]),
        (Nanos(6), good.clone()),
    ];
    let out = drive(&mut p, &arrivals, Nanos::from_ms(10));
    assert_eq!(out.len(), 2);
    assert_eq!(p.malformed(), 5);
    let r = p.finish(Nanos::from_ms(10));
    let s = summary(&r);
    assert_eq!(s["emulator"]["malformed_pkts"], json!(5));
    assert_eq!(s["packets"]["sent"], json!(2));
    assert_eq!(r.malformed, 5);
}

/// Arrivals of the simulator's CBR source with `cfg`, as UDP packets.
fn cbr_arrivals(c: CbrConfig, until: Nanos) -> Vec<(Nanos, Vec<u8>)> {
    let (bytes, ecn) = (c.packet_bytes as u16, c.ecn);
    let mut src = CbrSource::new(0, c).unwrap();
    let mut v = Vec::new();
    while let Some(t) = src.poll_timeout() {
        if t > until {
            break;
        }
        while let Some(p) = src.poll_transmit(t) {
            assert_eq!(p.bytes as u16, bytes);
            v.push((t, udp4(40000, ecn, bytes)));
        }
    }
    v
}

/// A deterministic irregular Mahimahi trace: `lines` opportunities, gaps of 0-3 ms.
fn write_trace(name: &str, lines: usize) -> (std::path::PathBuf, f64) {
    let dir = std::env::temp_dir().join(format!("l4s-emu-path-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut t = 0u64;
    let mut x = 12345u64;
    let mut s = String::new();
    for _ in 0..lines {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        t += (x >> 62) % 4;
        s.push_str(&format!("{}\n", t.max(1)));
    }
    std::fs::write(dir.join("trace.down"), s).unwrap();
    // Mean rate of a looping trace: lines·1504 B per period (the last timestamp).
    (dir, lines as f64 * 1504.0 * 8.0 / (t.max(1) as f64 * 1e-3))
}

#[test]
fn trace_link_matches_the_simulator_on_the_same_arrivals() {
    // A CBR on/off source (on 300 ms, off 200 ms, 8 Mb/s) over an irregular trace through
    // DualPI2: the emulator's path, fed the simulator's arrival instants, must produce the
    // simulator's per-packet records, samples, unused opportunities and delivered count.
    // The source starts at 1.003 ms so that no arrival falls exactly on a sampling instant or
    // a trace opportunity (whole milliseconds): at such ties the simulator's order depends on
    // when each event happened to be scheduled, while the path runs its own events first.
    let (dir, _) = write_trace("sim", 400);
    let duration = Nanos::from_secs(3);
    let scen = r#"
        seed = 5
        duration = "3s"
        [link]
        trace = "trace.down"
        [aqm]
        kind = "dualpi2"
        [[flows]]
        cc = "cbr"
        rtt = "40ms"
        rate = "8mbit"
        on = "300ms"
        off = "200ms"
        start = "1003us"
        ecn = "l4s"
        [output]
        packets = true
        "#;
    let sim = l4s_sim::run_toml_in(scen, &dir).unwrap();
    let sim_sum: Value = serde_json::from_str(&sim.summary_json).unwrap();

    let mut c = cfg(json!({"trace": "trace.down"}), json!({"kind": "dualpi2"}));
    c.base_dir = Some(dir.clone());
    c.seed = 5;
    c.delay = Nanos::from_ms(20); // the simulator puts rtt/2 after the bottleneck
    c.per_packet = true;
    let mut p = Path::new(c).unwrap();
    let arrivals = cbr_arrivals(
        CbrConfig {
            rate: Rate::from_mbps(8),
            packet_bytes: 1500,
            ecn: Ecn::Ect1,
            start: Nanos::from_us(1003),
            stop: None,
            on: Some(Nanos::from_ms(300)),
            off: Some(Nanos::from_ms(200)),
        },
        duration,
    );
    drive(&mut p, &arrivals, duration);
    let emu = p.finish(duration);
    let emu_sum = summary(&emu);

    assert_eq!(
        emu_sum["link"]["unused_txops"], sim_sum["link"]["unused_txops"],
        "unused txops"
    );
    assert!(sim_sum["link"]["unused_txops"].as_u64().unwrap() > 0);
    assert_eq!(emu_sum["link"], sim_sum["link"]);
    assert_eq!(emu_sum["packets"], sim_sum["packets"]);
    assert_eq!(emu_sum["queues"], sim_sum["queues"]);
    assert_eq!(emu.run.packets, sim.packets, "per-packet rows");
    let (a, b) = (&emu.run.samples, &sim.samples);
    assert_eq!(a.t_s.len(), b.t_s.len());
    for i in 0..a.t_s.len() {
        let row = |c: &l4s_sim::results::QueueColumns| {
            (
                c.t_s[i],
                c.queue[i],
                c.backlog_pkts[i],
                c.backlog_bytes[i],
                c.sojourn_ms[i],
                c.marks[i],
                c.drops[i],
                c.p_prime[i].to_bits(),
            )
        };
        assert_eq!(row(a), row(b), "sample row {i}");
    }
    assert_eq!(emu.run.samples, sim.samples, "per-queue samples");
    assert_eq!(emu.run.totals.delivered_pkts, sim.totals.delivered_pkts);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_saturated_trace_delivers_its_mean_rate() {
    // Offered 1.5x the trace's mean rate through a big FIFO for 4 s (several trace periods):
    // every opportunity carries a full 1504 bytes of a 1504-byte packet, so the delivered IP
    // rate equals the trace's mean rate within one period's quantisation, and none is unused.
    let (dir, mean_bps) = write_trace("sat", 200);
    let mut c = cfg(
        json!({"trace": "trace.down"}),
        json!({"kind": "fifo", "limit": 100000}),
    );
    c.base_dir = Some(dir.clone());
    let mut p = Path::new(c).unwrap();
    let end = Nanos::from_secs(4);
    let arrivals = cbr_arrivals(
        CbrConfig {
            rate: Rate::from_bps((mean_bps * 1.5) as u64),
            packet_bytes: 1504,
            ecn: Ecn::NotEct,
            start: Nanos::ZERO,
            stop: None,
            on: None,
            off: None,
        },
        end,
    );
    let out = drive(&mut p, &arrivals, end);
    let r = p.finish(end);
    let got_bps = out.len() as f64 * 1504.0 * 8.0 / end.as_secs_f64();
    assert!(
        (got_bps / mean_bps - 1.0).abs() < 0.02,
        "{got_bps} vs {mean_bps}"
    );
    assert_eq!(summary(&r)["link"]["unused_txops"], json!(0));
    let u = summary(&r)["link"]["utilisation"].as_f64().unwrap();
    assert!((u - 1.0).abs() < 1e-9, "{u}");
    let _ = std::fs::remove_dir_all(dir);
}

fn lossy_run(seed: u64) -> (Vec<(Nanos, Vec<u8>)>, String) {
    let mut c = cfg(
        json!({"rate": "20mbit", "loss": 0.1, "jitter": "2ms"}),
        json!({"kind": "dualpi2"}),
    );
    c.seed = seed;
    c.delay = Nanos::from_ms(10);
    let mut p = Path::new(c).unwrap();
    let arrivals: Vec<_> = (0..4000u64)
        .map(|i| {
            let e = if i % 3 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
            (Nanos::from_us(500 * i), udp4(100 + (i % 3) as u16, e, 1500))
        })
        .collect();
    let out = drive(&mut p, &arrivals, Nanos::from_secs(3));
    let r = p.finish(Nanos::from_secs(3));
    let t = &r.run.totals;
    // Conservation: sent = delivered + AQM drops + link losses + in flight.
    assert_eq!(
        t.sent_pkts,
        t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts
    );
    // i.i.d. loss 0.1 of the packets that left the AQM: 5 sigma.
    let left = (t.delivered_pkts + t.link_lost_pkts + t.in_flight_pkts) as f64;
    let sd = (left * 0.09).sqrt();
    assert!((t.link_lost_pkts as f64 - 0.1 * left).abs() < 5.0 * sd + 1.0);
    (
        out.into_iter().map(|(t, b)| (t, b.to_vec())).collect(),
        r.run.summary_json,
    )
}

#[test]
fn the_same_seed_gives_identical_outputs() {
    let a = lossy_run(3);
    let b = lossy_run(3);
    assert_eq!(a, b);
    let c = lossy_run(4);
    assert_ne!(a.0, c.0, "another seed, other losses");
    // Jitter without reorder keeps the order of delivery times.
    assert!(a.0.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn link_and_aqm_tables_get_the_simulators_errors() {
    let err = |l: Value, a: Value| PathConfig::from_tables(l, a).unwrap_err().to_string();
    let e = err(
        json!({"rate": "50mbit", "trace": "t"}),
        json!({"kind": "fifo"}),
    );
    assert!(e.starts_with("link: both rate and trace"), "{e}");
    let e = err(
        json!({"rate": "50mbit", "bogus": 1}),
        json!({"kind": "fifo"}),
    );
    assert!(e.starts_with("link.bogus: unknown field"), "{e}");
    let e = err(json!({"rate": "-5mbit"}), json!({"kind": "fifo"}));
    assert!(e.starts_with("link.rate:") && e.contains("negative"), "{e}");
    let e = err(
        json!({"rate": "5mbit", "loss": 2.0}),
        json!({"kind": "fifo"}),
    );
    assert!(e.starts_with("link.loss: 2 is out of range"), "{e}");
    let e = err(json!({"rate": "5mbit"}), json!({"kind": "dualpi2", "k": 0}));
    assert!(e.starts_with("aqm.k:"), "{e}");
    let e = err(json!({"rate": "5mbit"}), json!({"kind": "red"}));
    assert!(e.starts_with("aqm.kind:"), "{e}");
    // A trace that cannot be read names the field and the file.
    let mut c =
        PathConfig::from_tables(json!({"trace": "no/such/file"}), json!({"kind": "fifo"})).unwrap();
    c.base_dir = Some(std::env::temp_dir());
    let e = Path::new(c).err().unwrap().to_string();
    assert!(e.starts_with("link.trace: cannot read"), "{e}");
}
