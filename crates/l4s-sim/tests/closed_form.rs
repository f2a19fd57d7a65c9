//! Scenario-level checks against closed forms (FIFO + CBR overload, trace rates).

use l4s_sim::run_toml;

const OVERLOAD: &str = r#"
seed = 1
duration = "2s"
warmup = "0.5s"
[link]
rate = "12mbit"
[aqm]
kind = "fifo"
limit = 100
[[flows]]
cc = "cbr"
rtt = "20ms"
rate = "15mbit"
packet_size = 1500
start_jitter = "0s"  # the closed form counts packets from t = 0
[output]
packets = true
"#;

#[test]
fn fifo_cbr_overload_matches_closed_form() {
    let r = run_toml(OVERLOAD).unwrap();
    let t = &r.totals;
    // 1500 B at 15 Mb/s = one packet per 0.8 ms: t = 0, 0.8 ms, ..., 2.0 s -> 2501 packets.
    assert_eq!(t.sent_pkts, 2501);
    // The link sends one packet per ms (12000 bits / 12 Mb/s), finishing at k ms, k = 1..2000;
    // with 10 ms forward propagation, those finished by 1.990 s have arrived: 1990.
    assert_eq!(t.delivered_pkts, 1990);
    // At the end: 100 queued (limit), 1 on the link, 10 propagating (finished in (1.99, 2.0]).
    assert_eq!(t.in_flight_pkts, 111);
    assert_eq!(t.aqm_dropped_pkts, 2501 - 1990 - 111);
    assert_eq!(t.link_lost_pkts, 0);

    // Queueing delay = backlog / rate: the queue fills after 100 pkts / (1250 - 1000 pkt/s)
    // = 0.4 s; afterwards each accepted packet has 99 or 100 packets' worth (99-100 ms)
    // of work ahead of it, less the part of the packet on the link already sent (< 1 ms).
    let p = r.packets.as_ref().unwrap();
    let mut n = 0;
    for i in 0..p.t_s.len() {
        if p.t_s[i] > 0.6 && p.verdict[i] == 0 {
            assert!(
                (98.0..=100.0 + 1e-9).contains(&p.sojourn_ms[i]),
                "sojourn {} at {}",
                p.sojourn_ms[i],
                p.t_s[i]
            );
            n += 1;
        }
    }
    assert!(n > 1300, "{n}");
    // Head sojourn in every sample after the fill is backlog × 1 ms within one packet time.
    let s = &r.samples;
    for i in 0..s.t_s.len() {
        if s.t_s[i] > 0.6 {
            let expect = s.backlog_pkts[i] as f64;
            assert!((s.sojourn_ms[i] - expect).abs() <= 1.0 + 1e-9, "{i}");
        }
    }
    // Goodput after warmup: exactly the link rate, 12 Mb/s; utilisation 1.
    let v: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    let tput = v["flows"][0]["tput_mbps"].as_f64().unwrap();
    assert!((tput - 12.0).abs() < 0.01, "{tput}");
    let u = v["link"]["utilisation"].as_f64().unwrap();
    assert!((u - 1.0).abs() < 1e-9, "{u}");
    // The base one-way delay is rtt/2 = 10 ms plus one serialisation (1 ms).
    assert!((r.flow_min_owd_ms[0] - 11.0).abs() < 1e-9);
}

#[test]
fn series_are_sampled_every_interval_with_exact_goodput() {
    // 12 Mb/s CBR of 1500 B (one packet per ms from 0) over a 24 Mb/s link: serialisation
    // 0.5 ms, never a queue. Arrivals at k + 10.5 ms, so every 16 ms interval after the first
    // two holds exactly 16 arrivals = 16 * 12000 bits / 16 ms = 12 Mb/s.
    let r = run_toml(
        r#"
duration = "1s"
sample_interval = "16ms"
[link]
rate = "24mbit"
[aqm]
kind = "fifo"
[[flows]]
cc = "cbr"
rtt = "20ms"
rate = "12mbit"
"#,
    )
    .unwrap();
    // floor(1000 / 16) = 62 samples at 16, 32, ..., 992 ms.
    assert_eq!(r.flows.t_s.len(), 62);
    assert_eq!(r.samples.t_s.len(), 62);
    for (k, t) in r.flows.t_s.iter().enumerate() {
        assert!((t - 0.016 * (k + 1) as f64).abs() < 1e-12);
    }
    for k in 2..62 {
        assert!(
            (r.flows.tput_mbps[k] - 12.0).abs() < 1e-9,
            "{k}: {}",
            r.flows.tput_mbps[k]
        );
    }
    // Delivered bytes are cumulative and consistent with the goodput column.
    let mut acc = 0.0;
    for k in 0..62 {
        acc += r.flows.tput_mbps[k] * 1e6 * 0.016 / 8.0;
        assert!((acc - r.flows.delivered_bytes[k] as f64).abs() < 1e-6);
    }
    assert!(r.samples.backlog_pkts.iter().all(|&b| b == 0));
    assert!(r.samples.sojourn_ms.iter().all(|&s| s == 0.0));
    assert!(r.samples.p_prime.iter().all(|p| p.is_nan()));
    assert_eq!(r.queue_names, vec!["single".to_string()]);
    assert_eq!(r.flow_class, vec!["Classic".to_string()]);
}

/// One 1500 B packet per ms, sent at k ms + 0.5 ms (start = 0.5 ms), over a 50 Mb/s link.
fn half_ms_offset(model: &str) -> l4s_sim::RunResults {
    run_toml(&format!(
        r#"
duration = "1s"
[link]
rate = "50mbit"
model = "{model}"
[aqm]
kind = "fifo"
[[flows]]
cc = "cbr"
rtt = "10ms"
rate = "12mbit"
start = "0.5ms"
start_jitter = "0s"  # arrivals exactly at k + 0.5 ms
[output]
packets = true
"#
    ))
    .unwrap()
}

#[test]
fn txop1ms_holds_packets_until_the_next_millisecond_tick() {
    // Smooth: an idle link takes the packet at once (sojourn 0) and serialises it in
    // 12000 bits / 50 Mb/s = 0.24 ms. 1 ms bursts: the packet queued at k + 0.5 ms waits for
    // the tick at k + 1 ms (sojourn 0.5 ms), which carries 6250 B, enough for it.
    let smooth = half_ms_offset("smooth");
    let burst = half_ms_offset("txop1ms");
    let (ps, pb) = (smooth.packets.unwrap(), burst.packets.unwrap());
    assert_eq!(ps.sojourn_ms.len(), 1000);
    assert!(ps.sojourn_ms.iter().all(|&s| s == 0.0));
    assert_eq!(pb.sojourn_ms.len(), 1000);
    assert!(pb.sojourn_ms.iter().all(|&s| (s - 0.5).abs() < 1e-9));
    // One-way delay: 5 ms + 0.24 ms (smooth) vs 5 ms + 0.5 ms (burst; delivered at the tick).
    assert!((smooth.flow_min_owd_ms[0] - 5.24).abs() < 1e-9);
    assert!((burst.flow_min_owd_ms[0] - 5.5).abs() < 1e-9);
}

#[test]
fn rate_step_changes_goodput_at_the_step() {
    // 30 Mb/s CBR over 12 Mb/s, stepping to 24 Mb/s at 1 s, FIFO of 10000 packets (no drops):
    // the link runs flat out, so goodput per 100 ms sample is the link rate, 12 then 24 Mb/s
    // (allowing one packet, 0.12 Mb/s per 100 ms, for the boundary).
    let r = run_toml(
        r#"
duration = "2s"
sample_interval = "100ms"
[link]
rate = "12mbit"
steps = [{at = "1s", rate = "24mbit"}]
[aqm]
kind = "fifo"
limit = 10000
[[flows]]
cc = "cbr"
rtt = "2ms"
rate = "30mbit"
"#,
    )
    .unwrap();
    let f = &r.flows;
    for i in 0..f.t_s.len() {
        let t = f.t_s[i];
        let expect = if t <= 1.0 + 1e-9 { 12.0 } else { 24.0 };
        if (0.15..0.95).contains(&t) || t > 1.15 {
            assert!(
                (f.tput_mbps[i] - expect).abs() <= 0.121,
                "t={t}: {}",
                f.tput_mbps[i]
            );
        }
    }
    let v: serde_json::Value = serde_json::from_str(&r.summary_json).unwrap();
    // Capacity over (0, 2 s]: (12 + 24) / 2 = 18 Mb/s.
    assert!((v["link"]["capacity_mbps"].as_f64().unwrap() - 18.0).abs() < 1e-9);
}

#[test]
fn gilbert_elliott_link_loses_its_stationary_share() {
    // p = 0.01, r = 0.25, loss_bad = 1, loss_good = 0: pi_B = 0.01 / 0.26 = 3.846 %.
    // 100k packets (1 Mb/s of 125 B for 100 s) leave the link; bursts of mean 4 packets make
    // the count's standard deviation about sqrt(8·n·p) ≈ 175, i.e. 0.18 %; allow 0.6 %.
    let r = run_toml(
        r#"
duration = "100s"
seed = 3
[link]
rate = "10mbit"
[link.gilbert]
p = 0.01
r = 0.25
[aqm]
kind = "fifo"
[[flows]]
cc = "cbr"
rtt = "2ms"
rate = "1mbit"
packet_size = 125
"#,
    )
    .unwrap();
    let t = &r.totals;
    let left_link = t.delivered_pkts + t.link_lost_pkts;
    let share = t.link_lost_pkts as f64 / left_link as f64;
    assert!((share - 0.038_46).abs() < 0.006, "{share}");
    assert_eq!(t.aqm_dropped_pkts, 0);
}

#[test]
fn coarser_flow_samples_keep_queue_rows_and_give_goodput_over_their_own_interval() {
    // The 12 Mb/s CBR flow of `cbr_samples_are_exact` with per-flow rows every 64 ms (4 sample
    // intervals): the queue keeps its 62 rows at 16 ms; the flow gets rows at 64, 128, ...,
    // 960 ms (floor(1000 / 64) = 15), each the same cumulative bytes the 16 ms run has at that
    // instant, and a goodput over 64 ms that is again exactly 12 Mb/s after the first rows.
    let base = r#"
duration = "1s"
sample_interval = "16ms"
[link]
rate = "24mbit"
[aqm]
kind = "fifo"
[[flows]]
cc = "cbr"
rtt = "20ms"
rate = "12mbit"
"#;
    let fine = run_toml(base).unwrap();
    let coarse = run_toml(&format!(
        "{base}[output]\nflow_sample_interval = \"64ms\"\n"
    ))
    .unwrap();
    assert_eq!(coarse.samples.t_s.len(), 62);
    assert_eq!(coarse.samples.backlog_pkts, fine.samples.backlog_pkts);
    assert_eq!(coarse.flows.t_s.len(), 15);
    for (j, t) in coarse.flows.t_s.iter().enumerate() {
        assert!((t - 0.064 * (j + 1) as f64).abs() < 1e-12, "{j}: {t}");
        // Row 4j + 3 of the fine run is at the same instant.
        assert_eq!(
            coarse.flows.delivered_bytes[j],
            fine.flows.delivered_bytes[4 * j + 3]
        );
    }
    for j in 1..15 {
        assert!(
            (coarse.flows.tput_mbps[j] - 12.0).abs() < 1e-9,
            "{j}: {}",
            coarse.flows.tput_mbps[j]
        );
    }
    // Not a multiple of the sample interval, or zero: refused, naming the field.
    for bad in ["40ms", "0s"] {
        let e = run_toml(&format!(
            "{base}[output]\nflow_sample_interval = \"{bad}\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("output.flow_sample_interval") && e.contains("16ms"),
            "{e}"
        );
    }
}
