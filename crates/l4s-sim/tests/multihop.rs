//! `[[links]]` chains against closed forms: the slower of two FIFOs limits a flow and holds its
//! queue, a parking lot of FQ-CoDel hops reaches the max-min fair shares, a rate step moves the
//! bottleneck (and the queue) from one hop to the other; plus conservation, determinism, the
//! one-hop chain equal to `[link]`, and the scenario errors of the new keys.

use l4s_sim::{run_toml, RunResults, Scenario};
use serde_json::Value;

/// Payload bytes per IP byte of a full-sized TCP segment (MSS 1448 in 1500-byte packets).
const GOODPUT_PER_RATE: f64 = 1448.0 / 1500.0;

fn summary(r: &RunResults) -> Value {
    serde_json::from_str(&r.summary_json).unwrap()
}

/// Mean backlog (packets) over the samples of queue `name` with t in [from_s, to_s).
fn mean_backlog(r: &RunResults, name: &str, from_s: f64, to_s: f64) -> f64 {
    let q = r.queue_names.iter().position(|n| n == name).unwrap() as u8;
    let s = &r.samples;
    let v: Vec<f64> = (0..s.t_s.len())
        .filter(|&i| s.queue[i] == q && s.t_s[i] >= from_s && s.t_s[i] < to_s)
        .map(|i| s.backlog_pkts[i] as f64)
        .collect();
    assert!(!v.is_empty(), "no samples of {name}");
    v.iter().sum::<f64>() / v.len() as f64
}

/// Goodput (Mb/s) of flow `f` over [from_s, to_s], from its delivered-bytes series.
fn goodput(r: &RunResults, f: u32, from_s: f64, to_s: f64) -> f64 {
    let c = &r.flows;
    let at = |t: f64| {
        (0..c.t_s.len())
            .find(|&i| c.flow[i] == f && (c.t_s[i] - t).abs() < 1e-9)
            .map(|i| c.delivered_bytes[i])
            .unwrap()
    };
    (at(to_s) - at(from_s)) as f64 * 8.0 / (to_s - from_s) / 1e6
}

/// One `[[links]]` hop of a test scenario: `hop(rate)`, then what it has besides.
#[derive(Clone, Copy, Default)]
struct Hop<'a> {
    name: Option<&'a str>,
    rate: &'a str,
    delay: Option<&'a str>,
    /// Further TOML lines of the hop (loss, jitter, `[[links.steps]]`), after the keys above.
    extra: &'a str,
    /// `[links.aqm]`: its kind, and its limit as a TOML value (None: none of its own).
    aqm: Option<(&'a str, Option<&'a str>)>,
}

fn hop(rate: &str) -> Hop<'_> {
    Hop {
        rate,
        ..Hop::default()
    }
}

impl<'a> Hop<'a> {
    fn named(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }
    fn delay(mut self, delay: &'a str) -> Self {
        self.delay = Some(delay);
        self
    }
    fn extra(mut self, extra: &'a str) -> Self {
        self.extra = extra;
        self
    }
    fn aqm(mut self, kind: &'a str, limit: Option<&'a str>) -> Self {
        self.aqm = Some((kind, limit));
        self
    }
}

/// One `[[flows]]` entry of a test scenario: `flow(cc, rtt)`, then what it has besides.
#[derive(Clone, Copy)]
struct Flow<'a> {
    cc: &'a str,
    rtt: &'a str,
    /// A CBR flow's rate.
    rate: Option<&'a str>,
    /// The first and last hop it crosses (None: the whole chain).
    path: Option<[u32; 2]>,
}

fn flow<'a>(cc: &'a str, rtt: &'a str) -> Flow<'a> {
    Flow {
        cc,
        rtt,
        rate: None,
        path: None,
    }
}

impl<'a> Flow<'a> {
    fn path(mut self, first: u32, last: u32) -> Self {
        self.path = Some([first, last]);
        self
    }
    fn rate(mut self, rate: &'a str) -> Self {
        self.rate = Some(rate);
        self
    }
}

/// The scenario text: the `head` lines (top-level keys, or a `[link]`/`[aqm]` pair), then
/// the hops as a `[[links]]` chain, then the flows.
fn chain(head: &str, hops: &[Hop], flows: &[Flow]) -> String {
    let mut t = format!("{head}\n");
    for h in hops {
        t += "[[links]]\n";
        if let Some(n) = h.name {
            t += &format!("name = \"{n}\"\n");
        }
        t += &format!("rate = \"{}\"\n", h.rate);
        if let Some(d) = h.delay {
            t += &format!("delay = \"{d}\"\n");
        }
        t += h.extra;
        if let Some((kind, limit)) = h.aqm {
            t += &format!("[links.aqm]\nkind = \"{kind}\"\n");
            if let Some(l) = limit {
                t += &format!("limit = {l}\n");
            }
        }
    }
    for f in flows {
        t += &format!("[[flows]]\ncc = \"{}\"\n", f.cc);
        if let Some(r) = f.rate {
            t += &format!("rate = \"{r}\"\n");
        }
        t += &format!("rtt = \"{}\"\n", f.rtt);
        if let Some([a, b]) = f.path {
            t += &format!("path = [{a}, {b}]\n");
        }
    }
    t
}

fn conserved(r: &RunResults) {
    let t = &r.totals;
    assert_eq!(
        t.sent_pkts,
        t.delivered_pkts + t.aqm_dropped_pkts + t.link_lost_pkts + t.in_flight_pkts,
        "{t:?}"
    );
}

#[test]
fn a_flow_through_100_then_50_mbits_is_limited_by_the_second_which_holds_the_queue() {
    let two_fifos = chain(
        "duration = \"10s\"\nwarmup = \"4s\"",
        &[
            hop("100mbit").named("access").delay("5ms"),
            hop("50mbit")
                .named("core")
                .delay("5ms")
                .aqm("fifo", Some("\"2bdp\"")),
        ],
        &[flow("reno", "40ms")],
    );
    let r = run_toml(&two_fifos).unwrap();
    conserved(&r);
    let s = summary(&r);
    // The 50 Mb/s hop never idles once its 2·BDP buffer is past slow start (Reno halves to
    // ≥ 1.5 BDP, still above one BDP), so the goodput is its rate times the payload share.
    let tput = s["flows"][0]["tput_mbps"].as_f64().unwrap();
    let expect = 50.0 * GOODPUT_PER_RATE;
    assert!((tput - expect).abs() < 0.005 * expect, "{tput} vs {expect}");
    let hops = s["hops"].as_array().unwrap();
    assert_eq!(hops[0]["name"], "access");
    assert_eq!(hops[1]["name"], "core");
    assert!(hops[1]["utilisation"].as_f64().unwrap() > 0.995, "{hops:?}");
    // The 100 Mb/s hop carries the same bytes at twice the rate: half used.
    let u0 = hops[0]["utilisation"].as_f64().unwrap();
    assert!((u0 - 0.5).abs() < 0.01, "{u0}");
    // The 2bdp limit is resolved against the core hop's own rate: 50 Mb/s · 40 ms = 250 kB
    // = 166.7 packets of 1500 B, twice that rounded up.
    assert_eq!(hops[1]["buffer"]["value"], 334);
    assert_eq!(hops[0]["buffer"], Value::Null);
    // The ACK clock spaces the packets at the 50 Mb/s hop's rate, so at the 100 Mb/s hop a
    // packet waits at most behind the one or two a (delayed) ACK releases back to back:
    // ≤ 2 packet times of 0.12 ms. The core hop holds the standing queue.
    let q = s["queues"].as_array().unwrap();
    assert_eq!(q[0]["name"], "access/single");
    assert_eq!(q[0]["hop"], "access");
    assert_eq!(q[1]["name"], "core/single");
    let p99_access = q[0]["sojourn_ms"]["p99"].as_f64().unwrap();
    assert!(p99_access <= 0.25, "{p99_access}");
    let mean_core = q[1]["sojourn_ms"]["mean"].as_f64().unwrap();
    assert!(mean_core > 10.0, "{mean_core}");
    assert!(mean_backlog(&r, "access/single", 4.0, 10.0) < 1.0);
    assert!(mean_backlog(&r, "core/single", 4.0, 10.0) > 40.0);
    // Every packet the access hop passed went on to the core hop: after warmup the counts
    // differ only by what was between them (core queue ≤ 334, 5 ms line at 50 Mb/s ≈ 21) at
    // the window's two ends.
    let (p0, p1) = (
        hops[0]["packets"].as_i64().unwrap(),
        hops[1]["packets"].as_i64().unwrap(),
    );
    let d1 = hops[1]["drops"].as_i64().unwrap();
    assert!((p0 - p1 - d1).abs() <= 334 + 21, "{p0} {p1} {d1}");
}

#[test]
fn a_parking_lot_of_fair_queues_reaches_the_max_min_shares() {
    // A parking lot: hops of 40, 20 and 40 Mb/s, one long flow across all three and one
    // short flow on each hop, every hop FQ-CoDel, equal RTTs.
    let fq = |rate| hop(rate).delay("2ms").aqm("fq_codel", None);
    let cubic = flow("cubic", "30ms");
    let parking_lot = chain(
        "duration = \"20s\"\nwarmup = \"8s\"",
        &[fq("40mbit"), fq("20mbit"), fq("40mbit")],
        &[cubic, cubic.path(0, 0), cubic.path(1, 1), cubic.path(2, 2)],
    );
    let r = run_toml(&parking_lot).unwrap();
    conserved(&r);
    let s = summary(&r);
    let t: Vec<f64> = (0..4)
        .map(|i| s["flows"][i]["tput_mbps"].as_f64().unwrap())
        .collect();
    // Each share in goodput; 5 %: CoDel lets a Cubic flow's queue empty now and then after a
    // reduction (the scheduler then lends the slot to the other flow), and the long flow
    // arrives at the outer hops below its share there, so it never queues behind them.
    for (i, share) in [10.0, 30.0, 10.0, 30.0].iter().enumerate() {
        let expect = share * GOODPUT_PER_RATE;
        assert!(
            (t[i] - expect).abs() < 0.05 * expect,
            "flow {i}: {} vs {expect} ({t:?})",
            t[i]
        );
    }
    let hops = s["hops"].as_array().unwrap();
    let names: Vec<&str> = hops.iter().map(|h| h["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hop0", "hop1", "hop2"]);
    for h in hops {
        assert!(h["utilisation"].as_f64().unwrap() > 0.95, "{h}");
        assert_eq!(h["aqm"], "fq_codel");
    }
}

#[test]
fn a_rate_step_that_moves_the_bottleneck_moves_the_queue() {
    // The first hop drops from 100 to 20 Mb/s at 5 s, below the second hop's 50 Mb/s.
    let fifo = |name, rate| hop(rate).named(name).delay("5ms").aqm("fifo", Some("200"));
    let step = "[[links.steps]]\nat = \"5s\"\nrate = \"20mbit\"\n";
    let moving_bottleneck = chain(
        "duration = \"10s\"\nsample_interval = \"10ms\"",
        &[
            fifo("first", "100mbit").extra(step),
            fifo("second", "50mbit"),
        ],
        &[flow("cubic", "40ms")],
    );
    let r = run_toml(&moving_bottleneck).unwrap();
    conserved(&r);
    // Before the step the 50 Mb/s second hop is the bottleneck: the queue is there, and the
    // first hop (twice as fast, ACK-clocked input) holds at most a packet or two.
    let (b1_first, b1_second) = (
        mean_backlog(&r, "first/single", 2.0, 5.0),
        mean_backlog(&r, "second/single", 2.0, 5.0),
    );
    assert!(b1_first < 1.0 && b1_second > 20.0, "{b1_first} {b1_second}");
    // After it (and a second for the first hop's queue to form and the second's to drain)
    // the first hop at 20 Mb/s is: its input to the second hop is spaced 0.6 ms per packet,
    // served in 0.24 ms, so the second queue is empty at every sample.
    let (b2_first, b2_second) = (
        mean_backlog(&r, "first/single", 6.0, 10.0),
        mean_backlog(&r, "second/single", 6.0, 10.0),
    );
    assert!(b2_first > 20.0 && b2_second < 0.1, "{b2_first} {b2_second}");
    // And the goodput follows the bottleneck's rate (Cubic keeps a 200-packet FIFO busy at
    // these BDPs of 167 and 67 packets: ≥ 90 % of it).
    let before = goodput(&r, 0, 2.0, 5.0);
    let after = goodput(&r, 0, 6.0, 10.0);
    assert!(before > 0.9 * 50.0 * GOODPUT_PER_RATE, "{before}");
    assert!(after <= 20.0 * GOODPUT_PER_RATE * 1.001, "{after}");
    assert!(after > 0.9 * 20.0 * GOODPUT_PER_RATE, "{after}");
}

#[test]
fn a_one_hop_chain_runs_as_link_and_aqm() {
    let head = "duration = \"3s\"\nwarmup = \"1s\"";
    let flows = [flow("prague", "20ms"), flow("cubic", "30ms")];
    let link = chain(
        &format!("{head}\n[link]\nrate = \"20mbit\"\n[aqm]\nkind = \"dualpi2\""),
        &[],
        &flows,
    );
    let hop = hop("20mbit").delay("4ms").aqm("dualpi2", None);
    let a = run_toml(&link).unwrap();
    let b = run_toml(&chain(head, &[hop], &flows)).unwrap();
    // The hop's delay is part of each flow's rtt: the same times, so the same run.
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.samples, b.samples);
    assert_eq!(a.totals, b.totals);
    assert_eq!(a.queue_names, ["L", "C"]);
    assert_eq!(b.queue_names, ["hop0/L", "hop0/C"]);
    let (sa, sb) = (summary(&a), summary(&b));
    assert_eq!(sa["flows"], sb["flows"]);
    assert_eq!(sa["link"], sb["link"]);
    assert!(sa.get("hops").is_none());
    assert_eq!(sb["hops"][0]["utilisation"], sa["link"]["utilisation"]);
}

#[test]
fn chains_are_deterministic_per_seed_and_count_every_packet() {
    // Loss on the middle hop and a DualPI2 last hop: the same seed gives the same run.
    let toml = chain(
        "seed = 3\nduration = \"3s\"",
        &[
            hop("30mbit").delay("1ms"),
            hop("25mbit")
                .delay("1ms")
                .extra("loss = 0.01\njitter = \"1ms\"\n"),
            hop("20mbit").delay("1ms").aqm("dualpi2", None),
        ],
        &[
            flow("prague", "20ms"),
            flow("cubic", "20ms").path(1, 2),
            flow("cbr", "20ms").rate("5mbit").path(0, 1),
        ],
    );
    let a = run_toml(&toml).unwrap();
    let b = run_toml(&toml).unwrap();
    // (RunResults holds NaN where a queue or flow has no such figure: compare the NaN-free
    // columns.)
    assert!(a.summary_json == b.summary_json);
    assert!(a.flows.delivered_bytes == b.flows.delivered_bytes);
    assert!(a.flows.srtt_ms == b.flows.srtt_ms);
    assert!(a.samples.backlog_pkts == b.samples.backlog_pkts);
    assert!(a.samples.sojourn_ms == b.samples.sojourn_ms);
    conserved(&a);
    assert!(a.totals.link_lost_pkts > 0);
    let other = run_toml(&toml.replace("seed = 3", "seed = 4")).unwrap();
    assert!(a.flows.delivered_bytes != other.flows.delivered_bytes);
    let s = summary(&a);
    let per_flow_drops: u64 = (0..3)
        .map(|i| s["flows"][i]["drops"].as_u64().unwrap())
        .sum();
    assert!(per_flow_drops > 0);
    assert_eq!(
        a.queue_names,
        ["hop0/single", "hop1/single", "hop2/L", "hop2/C"]
    );
}

fn err(toml: &str) -> String {
    Scenario::from_toml_str(toml).unwrap_err().to_string()
}

const FLOW: &str = "[[flows]]\ncc = \"cubic\"\nrtt = \"40ms\"\n";

#[test]
fn bad_chains_get_one_error_naming_the_field() {
    let head = "duration = \"1s\"\n";
    let hop = "[[links]]\nrate = \"10mbit\"\n";
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!("{head}[link]\nrate = \"10mbit\"\n{hop}{FLOW}"),
            "links:",
            "set together with [link]",
        ),
        (
            format!("{head}{hop}[aqm]\nkind = \"fifo\"\n{FLOW}"),
            "aqm:",
            "[links.aqm]",
        ),
        (format!("{head}links = []\n{FLOW}"), "links:", "is empty"),
        (
            format!("{head}{hop}{hop}name = \"hop0\"\n{FLOW}"),
            "links[1].name:",
            "already the name of links[0]",
        ),
        (
            format!("{head}{hop}rtt = \"1ms\"\n{FLOW}"),
            "links[0].rtt:",
            "unknown field",
        ),
        (
            format!("{head}{hop}[links.aqm]\nkind = \"fifo\"\ntarget = \"5ms\"\n{FLOW}"),
            "links[0].aqm.target:",
            "unknown field",
        ),
        (
            format!("{head}[[links]]\nrate = \"0mbit\"\n{FLOW}"),
            "links[0].rate:",
            "is zero",
        ),
        (
            format!("{head}{hop}delay = 5\n{FLOW}"),
            "links[0].delay:",
            "durations and rates are written as strings",
        ),
        (
            format!("{head}{hop}model = \"wifi\"\n{FLOW}"),
            "links[0].model:",
            "not supported inside a [[links]] chain",
        ),
        (
            format!("{head}{hop}{hop}{FLOW}path = [1, 2]\n"),
            "flows[0].path:",
            "0 ≤ first ≤ last ≤ 1",
        ),
        (
            format!("{head}{hop}{hop}{FLOW}path = [1, 0]\n"),
            "flows[0].path:",
            "not a range of hops",
        ),
        (
            format!("{head}{hop}{FLOW}path = [0]\n"),
            "flows[0].path:",
            "length 2",
        ),
        (
            format!("{head}[link]\nrate = \"10mbit\"\n{FLOW}path = [0, 0]\n"),
            "flows[0].path:",
            "applies to a [[links]] chain only",
        ),
        (
            format!("{head}{hop}delay = \"15ms\"\n{hop}delay = \"10ms\"\n{FLOW}"),
            "flows[0].rtt:",
            "expected rtt ≥ 50ms",
        ),
        (
            format!("{head}{hop}{hop}{FLOW}[[workloads]]\nload = 0.5\nsizes = \"web-search\"\nrtt = \"20ms\"\n"),
            "workloads:",
            "chain of 2 hops",
        ),
        (
            format!("{head}{hop}delay = \"15ms\"\n[[probes]]\nrtt = \"20ms\"\n"),
            "probes[0].rtt:",
            "expected rtt ≥ 30ms",
        ),
        (
            format!("{head}[[links]]\ntrace = \"x.trace\"\n[links.aqm]\nkind = \"fifo\"\nlimit = \"2bdp\"\n{FLOW}"),
            "links[0].aqm.limit:",
            "no single rate",
        ),
    ];
    for (toml, path, what) in cases {
        let e = err(&toml);
        assert!(e.starts_with(path) && e.contains(what), "{toml}\n=> {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // A trace that cannot be read is named by its hop (hop 0 is built as [link] is).
    for (toml, path) in [
        (
            format!("{head}{hop}[[links]]\ntrace = \"missing.trace\"\n{FLOW}"),
            "links[1].trace:",
        ),
        (
            format!("{head}[[links]]\ntrace = \"missing.trace\"\n{hop}{FLOW}"),
            "links[0].trace:",
        ),
    ] {
        let s = Scenario::from_toml_str(&toml).unwrap();
        let e = l4s_sim::run(&s).unwrap_err().to_string();
        assert!(e.starts_with(path) && e.contains("missing.trace"), "{e}");
    }
    // A flow crossing only the 10 ms hop needs rtt ≥ 20 ms, not the whole chain's 50 ms.
    let ok = format!(
        "{head}{hop}delay = \"15ms\"\n{hop}delay = \"10ms\"\n[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\npath = [1, 1]\n"
    );
    assert!(Scenario::from_toml_str(&ok).is_ok());
    // A hop name is a non-empty string without '/' (it names files and columns).
    for bad in ["\"\"", "\"a/b\""] {
        let e = err(&format!("{head}{hop}name = {bad}\n{FLOW}"));
        assert!(
            e.starts_with("links[0].name:") && e.contains("is not a hop name"),
            "{e}"
        );
    }
    // At most 32 hops (`MAX_HOPS`): 32 parse, 33 are refused with the count.
    let chain = |n: usize| format!("{head}{}{FLOW}", hop.repeat(n));
    assert!(Scenario::from_toml_str(&chain(32)).is_ok());
    let e = err(&chain(33));
    assert!(
        e.starts_with("links:") && e.contains("33 hops; at most 32"),
        "{e}"
    );
}

#[test]
fn a_bdp_limit_on_a_hop_uses_that_hops_rate_and_the_smallest_rtt_crossing_it() {
    let bdp = |rate| hop(rate).aqm("fifo", Some("\"1bdp\""));
    let toml = chain(
        "duration = \"1s\"",
        &[bdp("100mbit"), bdp("10mbit")],
        &[flow("cubic", "10ms").path(0, 0), flow("cubic", "60ms")],
    );
    let s = Scenario::from_toml_str(&toml).unwrap();
    // Hop 0: 100 Mb/s · 10 ms (flow 0, the smallest rtt) = 125 kB = 83.3 → 84 packets.
    // Hop 1: only flow 1 crosses it: 10 Mb/s · 60 ms = 75 kB = 50 packets.
    let b0 = s.hops[0].buffer.as_ref().unwrap();
    let b1 = s.hops[1].buffer.as_ref().unwrap();
    assert_eq!((b0.flow, b0.value), (0, 84));
    assert_eq!((b1.flow, b1.value), (1, 50));
}
