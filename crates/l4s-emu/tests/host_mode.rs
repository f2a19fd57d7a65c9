//! Root tests of host mode: the command reaches the host through the link, and the host's
//! interfaces, NAT rules and forwarding setting are as before afterwards, however the run ends.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The host's first global IPv4 address that is not on an emulator interface.
fn host_address() -> Option<String> {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("l4s-"))
        .find_map(|l| {
            l.split_whitespace()
                .nth(3)?
                .split('/')
                .next()
                .map(String::from)
        })
}

/// iptables rules, ip_forward and links: what host mode changes while it runs.
fn host_state() -> String {
    let rules = Command::new("iptables-save")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                // Only the rules: a table header and its COMMIT appear once the table is
                // loaded (the first iptables call on a fresh host), which is not a change
                // this test looks for.
                .filter(|l| {
                    !l.starts_with('#')
                        && !l.starts_with(':')
                        && !l.starts_with('*')
                        && *l != "COMMIT"
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let fwd = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap_or_default();
    format!("{}\nip_forward={fwd}\n{rules}", host_listing())
}

#[test]
fn host_mode_reaches_the_host_with_the_configured_delay() {
    let _g = serial();
    if !can_run(&["ping", "iptables", "iptables-save"]) {
        return;
    }
    let Some(addr) = host_address() else {
        eprintln!("skipped: the host has no global IPv4 address");
        return;
    };
    let before = host_state();
    let out = emu_ok(&[
        "--quiet", "--host", "--delay", "5ms", "--", "ping", "-n", "-c", "10", "-i", "0.05", &addr,
    ]);
    // 5 ms each way: no reply before 10 ms; the median within 1 ms of it (a host stall may
    // inflate one reply, see shell.rs `check_ping`).
    let rtt = ping_times(&out);
    assert_eq!(rtt.len(), 10, "every echo answered: {out}");
    assert!(rtt.iter().all(|&r| r >= 10.0), "RTT below 10 ms: {rtt:?}");
    assert!(
        (median(&rtt) - 10.0).abs() <= 1.0,
        "median RTT not 10 +/- 1 ms: {rtt:?}"
    );
    assert!(
        wait_for(Duration::from_secs(3), || host_state() == before),
        "host state changed:\n{}\n---\n{before}",
        host_state()
    );
}

#[test]
fn host_mode_leaves_nothing_after_sigkill() {
    let _g = serial();
    if !can_run(&["iptables", "iptables-save"]) {
        return;
    }
    let before = host_state();
    let mut run = Running(
        Command::new(EMU)
            .args(["--quiet", "--host", "--", "sleep", "977.5"])
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn l4s-emu"),
    );
    assert!(
        wait_for(Duration::from_secs(5), || {
            !pids_with("977.5").is_empty() && host_state().contains("l4s-emu")
        }),
        "host mode did not start"
    );
    let _ = run.0.kill();
    let _ = run.0.wait();
    assert!(
        wait_for(Duration::from_secs(3), || host_state() == before
            && pids_with("977.5").is_empty()),
        "left behind after SIGKILL:\n{}\n---\n{before}",
        host_state()
    );
}

#[test]
fn host_mode_unprivileged_is_refused_with_a_reason() {
    let _g = serial();
    if !can_run(&["setpriv"]) {
        return;
    }
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            EMU,
            "--host",
            "--",
            "true",
        ])
        .output()
        .expect("setpriv runs");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("--host") && e.contains("needs root") && e.contains("--server"),
        "{e}"
    );
}
