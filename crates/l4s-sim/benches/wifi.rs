//! The Wi-Fi hop's cost: wall ns per delivered packet of a Prague + CUBIC run (20 ms RTT,
//! 20 s) through the 802.11 MAC (`[link] model = "wifi"`, 802.11ac 80 MHz VHT-MCS 7, TCP ACKs
//! on the medium) with the AP alone and with 19 other saturated stations (20 contenders),
//! against the smooth link at 200 Mb/s; then the MAC alone (a saturated AP, 20 s) with 0, 19
//! and 199 other stations: ns per channel access, which the other stations' shared-offset heap
//! keeps near flat in their number; and a mac80211 AP with 8 client stations (issue 34's
//! target: at most 3x the smooth link). `cargo bench -p l4s-sim --bench wifi`.

use l4s_core::wifi::{Phy, Standard, WifiMac, WifiParams};
use l4s_core::{Ecn, Nanos, Packet, Rng};
use l4s_sim::{run, Scenario};
use std::time::Instant;

const SMOOTH: &str = "[link]\nrate = \"200mbit\"\n";
const WIFI: &str =
    "[link]\nmodel = \"wifi\"\n[link.wifi]\nstandard = \"ac\"\nmcs = 7\nwidth = 80\n";

fn scenario(link: &str, stations: u32) -> Scenario {
    let wifi_extra = if link == WIFI {
        format!("stations = {stations}\n")
    } else {
        String::new()
    };
    let text = format!(
        "seed = 1\nduration = \"20s\"\nwarmup = \"2s\"\n{link}{wifi_extra}[aqm]\nkind = \"dualpi2\"\n\
         [[flows]]\ncc = \"prague\"\nrtt = \"20ms\"\n[[flows]]\ncc = \"cubic\"\nrtt = \"20ms\"\n"
    );
    Scenario::from_toml_str(&text).expect("bench scenario")
}

/// A mac80211 AP (per-station TXQs, AQL, airtime DRR) with 8 client stations at VHT-MCS
/// 7/5/3/1 (twice), each downloading one flow (Prague and CUBIC alternating, 20 ms).
fn eight_clients() -> Scenario {
    let mut text =
        format!("seed = 1\nduration = \"20s\"\nwarmup = \"2s\"\n{WIFI}[aqm]\nkind = \"dualpi2\"\n");
    for mcs in [7, 5, 3, 1, 7, 5, 3, 1] {
        text.push_str(&format!("[[link.wifi.clients]]\nmcs = {mcs}\n"));
    }
    for sta in 0..8 {
        let cc = if sta % 2 == 0 { "prague" } else { "cubic" };
        text.push_str(&format!(
            "[[flows]]\ncc = \"{cc}\"\nrtt = \"20ms\"\nstation = {sta}\n"
        ));
    }
    Scenario::from_toml_str(&text).expect("bench scenario")
}

/// Best of 3 runs: (ns per delivered data packet, delivered packets, wall s).
fn measure(s: &Scenario) -> (f64, u64, f64) {
    let mut best = f64::MAX;
    let mut delivered = 0;
    for _ in 0..3 {
        let t0 = Instant::now();
        let r = run(s).expect("run");
        best = best.min(t0.elapsed().as_secs_f64());
        delivered = r.totals.delivered_pkts;
    }
    (best * 1e9 / delivered as f64, delivered, best)
}

/// The MAC alone: a saturated AP among `stations` others for 20 s; (ns per exchange, exchanges).
fn mac_alone(stations: u32) -> (f64, u64) {
    let mut p = WifiParams::new(Phy::mcs(Standard::Vht, 7, 80, 1).expect("phy"));
    p.stations = stations;
    let mut best = f64::MAX;
    let mut exchanges = 0;
    for _ in 0..3 {
        let t0 = Instant::now();
        let mut mac = WifiMac::new(p.clone(), Rng::new(1)).expect("mac");
        let (mut id, mut now) = (0u64, Nanos::ZERO);
        while now < Nanos::from_secs(20) {
            while mac.has_room() {
                mac.push_down(Packet::new(id, 0, 1500, Ecn::Ect1), now);
                id += 1;
            }
            let Some(t) = mac.poll_timeout() else { break };
            now = t;
            mac.handle_timeout(t);
            while mac.poll_delivered().is_some() {}
        }
        best = best.min(t0.elapsed().as_secs_f64());
        exchanges = mac.stats().exchanges;
    }
    (best * 1e9 / exchanges as f64, exchanges)
}

fn main() {
    let (base, n0, w0) = measure(&scenario(SMOOTH, 0));
    println!("smooth 200 Mb/s: {base:.0} ns per delivered packet ({n0} packets, {w0:.3} s wall)");
    for (label, stations) in [("1 station (AP alone)", 0), ("20 stations (AP + 19)", 19)] {
        let (ns, n, w) = measure(&scenario(WIFI, stations));
        println!(
            "wifi, {label}: {ns:.0} ns per delivered packet ({n} packets, {w:.3} s wall) = \
             {:.2}x the smooth link",
            ns / base
        );
    }
    let (ns, n, w) = measure(&eight_clients());
    println!(
        "wifi, mac80211 AP with 8 client stations: {ns:.0} ns per delivered packet ({n} \
         packets, {w:.3} s wall) = {:.2}x the smooth link (issue target <= 3x)",
        ns / base
    );
    for stations in [0u32, 19, 199] {
        let (ns, n) = mac_alone(stations);
        println!(
            "MAC alone, AP + {stations} others: {ns:.0} ns per channel access ({n} exchanges)"
        );
    }
}
