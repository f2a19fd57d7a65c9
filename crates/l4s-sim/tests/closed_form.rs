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
