//! The emulator's data path on a virtual clock: closed forms (delay = backlog/rate), CE marking
//! at a frozen p' with valid checksums, trace links against the simulator on the same input,
//! malformed input, loss accounting and determinism. No root, no sockets.

use l4s_core::aqm::dualpi2::{DualPi2, DualPi2Params};
use l4s_core::cbr::{CbrConfig, CbrSource};
use l4s_core::{Ecn, Endpoint, Nanos, Rate, Rng};
use l4s_emu::packet::{build, parse, proto, Ipv4Packet, PacketBuf};
use l4s_emu::path::{Path, PathConfig};
use l4s_emu::record::{MahimahiHeader, PathResults};
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
        start_jitter = "0s"  # the emulator below is fed arrivals from exactly 1.003 ms
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

/// Arrivals of UDP flow `port` at `rate_pps` packets/s of `len` bytes in [start, stop).
fn paced(
    port: u16,
    ecn: Ecn,
    len: u16,
    rate_pps: u64,
    start: Nanos,
    stop: Nanos,
) -> Vec<(Nanos, Vec<u8>)> {
    let gap = 1_000_000_000 / rate_pps;
    (0..)
        .map(|i| start + Nanos(i * gap))
        .take_while(|&t| t < stop)
        .map(|t| (t, udp4(port, ecn, len)))
        .collect()
}

fn merge(mut a: Vec<(Nanos, Vec<u8>)>, b: Vec<(Nanos, Vec<u8>)>) -> Vec<(Nanos, Vec<u8>)> {
    a.extend(b);
    a.sort_by_key(|x| x.0); // stable: equal instants keep flow order
    a
}

#[test]
fn fq_codel_separates_flows_by_5_tuple() {
    // 10 Mb/s FQ-CoDel: a 20 Mb/s flow and a 5 Mb/s flow (1500-byte packets). Per-flow fair
    // queuing gives each 5 Mb/s; the recorder names both by 5-tuple and measures their
    // payload rate (1472 of 1500 bytes) over the window after the 1 s warmup.
    let mut c = cfg(json!({"rate": "10mbit"}), json!({"kind": "fq_codel"}));
    c.warmup = Nanos::from_secs(1);
    let mut p = Path::new(c).unwrap();
    let end = Nanos::from_secs(6);
    let arr = merge(
        paced(1, Ecn::Ect0, 1500, 20_000_000 / 12_000, Nanos::ZERO, end),
        paced(2, Ecn::Ect0, 1500, 5_000_000 / 12_000, Nanos(1), end),
    );
    drive(&mut p, &arr, end);
    let r = p.finish(end);
    let s = summary(&r);
    assert_eq!(
        r.flow_keys,
        vec![
            "udp 10.0.0.1:1>10.0.0.2:5201",
            "udp 10.0.0.1:2>10.0.0.2:5201"
        ]
    );
    let payload_share = 5.0 * 1472.0 / 1500.0;
    for f in 0..2 {
        let t = s["flows"][f]["tput_mbps"].as_f64().unwrap();
        assert!((t / payload_share - 1.0).abs() < 0.03, "flow {f}: {t}");
        assert_eq!(s["flows"][f]["class"], json!("Classic"));
    }
    // The heavy flow's excess is CE-marked (ECT(0), fq_codel's ecn default) by its own CoDel.
    assert!(s["flows"][0]["ce_marks"].as_u64().unwrap() > 100);
    // flows rows: one per flow per sample once seen; tput of flow 1 ~ its share late on.
    let fl = &r.run.flows;
    let last = fl.t_s.len() - 1;
    assert_eq!(fl.flow[last], 1);
    assert!(fl.cwnd_pkts[last].is_nan(), "unknown on the wire");
}

#[test]
fn flows_first_seen_after_warmup_and_beyond_the_table_are_recorded() {
    // Flow B starts after the warmup instant; 5000 one-packet flows (4000 before B, 1000 after)
    // overflow the table into one "other" row. Nothing panics and B's throughput is over the whole window.
    let mut c = cfg(json!({"rate": "100mbit"}), json!({"kind": "dualpi2"}));
    c.warmup = Nanos::from_secs(1);
    let mut p = Path::new(c).unwrap();
    let end = Nanos::from_secs(3);
    let a = paced(1, Ecn::Ect1, 1500, 1000, Nanos::ZERO, end);
    // B: 1000 packets/s of 1500 bytes from 2 s to 3 s = 1472·8·1000 b/s for half the window.
    let b = paced(2, Ecn::Ect1, 1500, 1000, Nanos::from_secs(2), end);
    let many: Vec<_> = (0..5000u64)
        .map(|i| {
            let mut pkt = build::ipv4(
                [10, 1, (i >> 8) as u8, i as u8],
                [10, 0, 0, 2],
                proto::UDP,
                7,
                7,
                0,
                100,
            );
            pkt[0] = 0x45;
            // 4000 before B appears at 2 s, 1000 after it.
            let t = if i < 4000 {
                1500 + 100 * i
            } else {
                2_500_000 + 100 * i
            };
            (Nanos::from_us(t), pkt)
        })
        .collect();
    let arr = merge(merge(a, b), many);
    drive(&mut p, &arr, end);
    let r = p.finish(end);
    let s = summary(&r);
    let n = l4s_emu::record::MAX_FLOWS + 1;
    assert_eq!(r.flow_keys.len(), n);
    assert_eq!(r.flow_keys[n - 1], "other");
    assert_eq!(s["flows"].as_array().unwrap().len(), n);
    let b_id = r
        .flow_keys
        .iter()
        .position(|k| k == "udp 10.0.0.1:2>10.0.0.2:5201")
        .unwrap();
    let tput = s["flows"][b_id]["tput_mbps"].as_f64().unwrap();
    let want = 1472.0 * 8.0 * 1000.0 / 1e6 / 2.0;
    assert!((tput - want).abs() / want < 0.01, "{tput} vs {want}");
    assert_eq!(s["flows"][b_id]["class"], json!("L4S"));
}

#[test]
fn txop1ms_releases_in_millisecond_bursts_and_steps_change_the_rate() {
    // 12 Mb/s in 1 ms bursts: 1500 bytes per tick, so 1500-byte packets leave one per whole ms.
    let mut p = Path::new(cfg(
        json!({"rate": "12mbit", "model": "txop1ms"}),
        json!({"kind": "fifo", "limit": 100000}),
    ))
    .unwrap();
    let arr = paced(
        1,
        Ecn::NotEct,
        1500,
        3000,
        Nanos(300_000),
        Nanos::from_ms(100),
    );
    let out = drive(&mut p, &arr, Nanos::from_ms(400));
    assert_eq!(out.len(), arr.len());
    for (k, (at, _)) in out.iter().enumerate() {
        assert_eq!(*at, Nanos::from_ms(k as u64 + 1), "packet {k}");
    }
    // Smooth 12 Mb/s stepping to 24 Mb/s at 50 ms under overload: 1 ms per packet, then 0.5 ms.
    let mut p = Path::new(cfg(
        json!({"rate": "12mbit", "steps": [{"at": "50ms", "rate": "24mbit"}]}),
        json!({"kind": "fifo", "limit": 100000}),
    ))
    .unwrap();
    let arr = paced(1, Ecn::NotEct, 1500, 4000, Nanos::ZERO, Nanos::from_ms(100));
    let out = drive(&mut p, &arr, Nanos::from_ms(400));
    assert_eq!(out[49].0, Nanos::from_ms(50));
    assert_eq!(out[50].0, Nanos::from_us(50_500));
    assert_eq!(out[51].0, Nanos::from_ms(51));
}

/// (t_ms, kind, first number) of every event line of a Mahimahi log; checks time order.
fn mm_events(log: &str) -> Vec<(u64, String, u64)> {
    let mut v = Vec::new();
    for line in log.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let t: u64 = f[0].parse().unwrap();
        let n: u64 = f[2].parse().unwrap();
        v.push((t, f[1].to_string(), n));
    }
    assert!(v.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
    v
}

#[test]
fn mahimahi_log_counts_arrivals_opportunities_departures_and_drops() {
    // A trace link through a 20-packet FIFO, overloaded for a while: the log's opportunity
    // lines are the trace's opportunities, and its +, -, d lines match the path's accounting.
    let (dir, _) = write_trace("mmlog", 300);
    let mut c = cfg(
        json!({"trace": "trace.down"}),
        json!({"kind": "fifo", "limit": 20}),
    );
    c.base_dir = Some(dir.clone());
    let mut p = Path::new(c).unwrap();
    p.enable_mahimahi_log(&MahimahiHeader {
        link_name: "downlink".into(),
        ..Default::default()
    });
    let end = Nanos::from_secs(2);
    let arr = paced(
        1,
        Ecn::NotEct,
        1500,
        2000,
        Nanos(123_456),
        Nanos::from_ms(1500),
    );
    let mut log = String::new();
    // Take the log in pieces, as the emulator appends it to a file.
    let mut t = Nanos::ZERO;
    let mut out = 0;
    for chunk in arr.chunks(100) {
        let until = chunk.last().unwrap().0;
        out += drive(&mut p, chunk, until).len();
        log.push_str(&p.take_mahimahi_log(until));
        t = until;
    }
    assert!(t < end);
    out += drive(&mut p, &[], end).len();
    log.push_str(&p.take_mahimahi_log(end));
    let r = p.finish(end);
    let s = summary(&r);
    assert!(log.starts_with("# mahimahi mm-link (downlink)"));
    assert!(log.contains("# base timestamp: 0\n"));
    let ev = mm_events(&log);
    let count = |k: &str| ev.iter().filter(|e| e.1 == k).count() as u64;
    // Opportunities in (0, 2 s]: the trace has no opportunity at 0 ms.
    let cap_bytes = s["link"]["capacity_mbps"].as_f64().unwrap() * 1e6 / 8.0 * 2.0;
    assert_eq!(count("#"), (cap_bytes / 1504.0).round() as u64);
    assert_eq!(count("+"), arr.len() as u64);
    assert_eq!(count("d"), s["packets"]["aqm_dropped"].as_u64().unwrap());
    assert!(count("d") > 0);
    assert_eq!(
        count("-") as usize,
        out,
        "zero delay: every departure was written"
    );
    let _ = std::fs::remove_dir_all(dir);

    // A rate link logs its exact capacity per millisecond: 10 Mb/s = 1250 bytes per ms.
    let mut p = Path::new(cfg(json!({"rate": "10mbit"}), json!({"kind": "fifo"}))).unwrap();
    p.enable_mahimahi_log(&MahimahiHeader {
        link_name: "uplink".into(),
        ..Default::default()
    });
    let ev = mm_events(&p.take_mahimahi_log(Nanos::from_secs(1)));
    assert_eq!(ev.len(), 1000);
    assert!(ev.iter().all(|e| e.1 == "#" && e.2 == 1250));
}

#[test]
fn a_late_clock_changes_only_the_lateness() {
    // The same arrivals through DualPI2 + 12 Mb/s + 5 ms, written on time and written 50 µs
    // after every deadline: identical bytes, scheduled times and records; lateness <= 50 µs.
    let run = |lag: Nanos| {
        let mut c = cfg(json!({"rate": "12mbit"}), json!({"kind": "dualpi2"}));
        c.delay = Nanos::from_ms(5);
        c.per_packet = true;
        let mut p = Path::new(c).unwrap();
        let arr = merge(
            paced(1, Ecn::Ect1, 1500, 700, Nanos(1), Nanos::from_secs(2)),
            paced(2, Ecn::Ect0, 1000, 900, Nanos(2), Nanos::from_secs(2)),
        );
        let end = Nanos::from_ms(2500);
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let na = arr.get(i).map(|a| a.0);
            let nd = p.next_deadline().map(|d| d + lag);
            match (na, nd) {
                (Some(a), d) if d.is_none_or(|d| a <= d) && a <= end => {
                    p.push(&arr[i].1, a);
                    i += 1;
                }
                (_, Some(d)) if d <= end => {
                    while let Some((b, at)) = p.pop_due(d) {
                        p.record_sent(at, d);
                        out.push((at, b.to_vec()));
                    }
                }
                _ => break,
            }
        }
        let r = p.finish(end);
        (out, r)
    };
    let (a, ra) = run(Nanos::ZERO);
    let (b, rb) = run(Nanos::from_us(50));
    assert!(a.len() > 2000);
    assert_eq!(a, b);
    assert_eq!(ra.run.packets, rb.run.packets);
    assert_eq!(ra.run.samples, rb.run.samples);
    assert_eq!(ra.lateness_max_us, 0.0);
    assert_eq!(rb.lateness_max_us, 50.0);
    assert!(rb.lateness_p50_us <= 50.0 && rb.lateness_p99_us <= 50.0);
    let sb = summary(&rb);
    assert_eq!(sb["emulator"]["lateness_us"]["max"], json!(50.0));
    assert_eq!(sb["emulator"]["lateness_us"]["packets"], json!(b.len()));
}

#[test]
fn finishing_before_the_warmup_ends_gives_nulls_not_a_panic() {
    let mut c = cfg(json!({"rate": "12mbit"}), json!({"kind": "dualpi2"}));
    c.warmup = Nanos::from_secs(5);
    let mut p = Path::new(c).unwrap();
    drive(
        &mut p,
        &paced(1, Ecn::Ect1, 1500, 500, Nanos::ZERO, Nanos::from_secs(1)),
        Nanos::from_secs(1),
    );
    let s = summary(&p.finish(Nanos::from_secs(1)));
    assert_eq!(s["flows"][0]["tput_mbps"], Value::Null);
    assert_eq!(s["link"]["utilisation"], Value::Null);
}

/// `fragment(pkt, id, offset_bytes, more)`: set an IPv4 packet's identification and flags and
/// fix its header checksum.
fn fragment(mut pkt: Vec<u8>, id: u16, offset_bytes: u16, more: bool) -> Vec<u8> {
    pkt[4..6].copy_from_slice(&id.to_be_bytes());
    let ff = (offset_bytes / 8) | if more { 0x2000 } else { 0 };
    pkt[6..8].copy_from_slice(&ff.to_be_bytes());
    pkt[10..12].copy_from_slice(&[0, 0]);
    let c = l4s_emu::packet::ipv4_header_checksum(&pkt[..20]);
    pkt[10..12].copy_from_slice(&c.to_be_bytes());
    pkt
}

#[test]
fn ip_fragments_count_for_the_flow_of_their_first_fragment() {
    // One 1544-byte UDP datagram per ms (what `l4slab flow --mss 1472` sent), fragmented at
    // the 1500-byte MTU: 1500 bytes with the UDP header, then 20 + 24 bytes at offset 1480.
    // The second fragments have no ports; the reassembly key (src, dst, proto, id) ties them
    // to the first, so there is one flow and it carries both fragments' bytes.
    let c = cfg(json!({"rate": "100mbit"}), json!({"kind": "fifo"}));
    let mut p = Path::new(c).unwrap();
    let mut arr = Vec::new();
    for i in 0..200u16 {
        let t = Nanos::from_us(1000 * i as u64);
        let first = fragment(udp4(40000, Ecn::Ect1, 1500), i, 0, true);
        let mut second = udp4(40000, Ecn::Ect1, 44);
        second[20..28].copy_from_slice(&[0xaa; 8]); // data, not a UDP header
        arr.push((t, first));
        arr.push((t + Nanos::from_us(1), fragment(second, i, 1480, false)));
    }
    // A fragment of an unknown datagram stays portless (nothing to attribute it to).
    let stray = fragment(udp4(9, Ecn::Ect1, 100), 999, 1480, false);
    arr.push((Nanos::from_ms(250), stray));
    let end = Nanos::from_ms(300);
    drive(&mut p, &arr, end);
    let r = p.finish(end);
    assert_eq!(
        r.flow_keys,
        vec!["udp 10.0.0.1:40000>10.0.0.2:5201", "udp 10.0.0.1>10.0.0.2"],
        "fragments must not form a flow of their own"
    );
    let s = summary(&r);
    // 200 datagrams of 1472 (first fragment after the UDP header) + 24 bytes in 0.3 s.
    let tput = s["flows"][0]["tput_mbps"].as_f64().unwrap();
    let want = 200.0 * (1472.0 + 24.0) * 8.0 / 0.3 / 1e6;
    assert!((tput - want).abs() / want < 0.01, "{tput} vs {want}");
}

#[test]
fn jain_counts_only_flows_that_carried_data() {
    // Two equal bulk flows plus a control-connection-like flow (10 small packets) and pings:
    // Jain over all four 5-tuples would be about (2x)^2 / (4 * 2x^2) = 0.5; over the two data
    // flows it is 1, and the small ones are listed apart.
    let c = cfg(json!({"rate": "100mbit"}), json!({"kind": "fifo"}));
    let mut p = Path::new(c).unwrap();
    let end = Nanos::from_secs(1);
    let a = paced(1, Ecn::NotEct, 1500, 1000, Nanos::ZERO, end);
    let b = paced(2, Ecn::NotEct, 1500, 1000, Nanos::ZERO, end);
    let ctl: Vec<_> = (0..10u64)
        .map(|i| (Nanos::from_ms(50 * i + 3), udp4(3, Ecn::NotEct, 300)))
        .collect();
    let ping: Vec<_> = (0..10u64)
        .map(|i| {
            let pkt = build::ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::ICMP, 0, 0, 0, 84);
            (Nanos::from_ms(50 * i + 7), pkt)
        })
        .collect();
    drive(&mut p, &merge(merge(a, b), merge(ctl, ping)), end);
    let r = p.finish(end);
    assert_eq!(r.flow_keys.len(), 4, "{:?}", r.flow_keys);
    let s = summary(&r);
    let jain = s["jain"].as_f64().unwrap();
    assert!((jain - 1.0).abs() < 1e-3, "jain {jain}");
    assert_eq!(s["jain_flows"]["counted"].as_array().unwrap().len(), 2);
    assert_eq!(s["jain_flows"]["not_counted"].as_array().unwrap().len(), 2);
    assert_eq!(
        s["jain_flows"]["min_bytes"],
        json!(l4s_emu::record::DATA_FLOW_MIN_BYTES)
    );
}
