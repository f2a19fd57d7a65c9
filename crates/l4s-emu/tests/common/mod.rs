//! Helpers for the emulator's root tests: skip-or-fail without privileges, run the binary,
//! find the emulator's namespaces, and compare host listings.

#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The emulator binary built by cargo for these tests.
pub const EMU: &str = env!("CARGO_BIN_EXE_l4s-emu");

/// Emulator tests run one at a time: the cleanup tests compare machine-wide listings.
static SERIAL: Mutex<()> = Mutex::new(());

/// Take the serialisation lock (a failed test must not poison the others).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// True if the test may run; otherwise prints why and returns false, or panics when
/// L4SLAB_REQUIRE_ROOT_TESTS=1 (CI) so that a skip cannot pass silently.
pub fn can_run(tools: &[&str]) -> bool {
    let mut missing = Vec::new();
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("root".to_string());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun".to_string());
    }
    for t in tools {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !found {
            missing.push((*t).to_string());
        }
    }
    if missing.is_empty() {
        return true;
    }
    let msg = format!("skipped: needs {}", missing.join(", "));
    if std::env::var("L4SLAB_REQUIRE_ROOT_TESTS").as_deref() == Ok("1") {
        panic!("{msg} (L4SLAB_REQUIRE_ROOT_TESTS=1 turns this skip into a failure)");
    }
    eprintln!("{msg}");
    false
}

/// Run the emulator to completion with these arguments.
pub fn emu(args: &[&str]) -> Output {
    Command::new(EMU)
        .args(args)
        .output()
        .expect("the l4s-emu binary runs")
}

/// Run the emulator to completion, require exit status 0 (its stdout and stderr in the
/// failure message) and return its stdout.
pub fn emu_ok(args: &[&str]) -> String {
    let o = emu(args);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    out
}

/// Text of stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Text of stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Pids whose parent is `ppid` (from /proc/*/stat).
pub fn children_of(ppid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Field 4 (ppid) follows the parenthesised command name, which may contain spaces.
        let after = stat.rsplit_once(')').map_or("", |x| x.1);
        if after.split_whitespace().nth(1) == Some(&ppid.to_string()) {
            v.push(pid);
        }
    }
    v
}

/// The network namespace (inode text like "net:[4026532]") of a process.
pub fn netns_of(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|p| p.display().to_string())
}

/// Every network namespace some process is in or holds open, machine-wide.
pub fn live_netns() -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() {
            continue;
        }
        if let Ok(p) = std::fs::read_link(format!("/proc/{name}/ns/net")) {
            s.insert(p.display().to_string());
        }
        for fd in std::fs::read_dir(format!("/proc/{name}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(p) = std::fs::read_link(fd.path()) {
                let t = p.display().to_string();
                if t.starts_with("net:[") {
                    s.insert(t);
                }
            }
        }
    }
    s
}

/// Pids of `sleep` processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.starts_with("sleep ") && c.contains(marker) {
                v.push(pid);
            }
        }
    }
    v
}

/// The host's interfaces (`ip -br link`), routes and named namespaces, as one listing.
pub fn host_listing() -> String {
    let run = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let netns = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    format!(
        "links:\n{}\nroutes:\n{}\n/run/netns: {netns}\n",
        run(&["ip", "-br", "link"]),
        run(&["ip", "route"])
    )
}

/// Poll `f` until it is true or `limit` passes; returns its last value.
pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if f() {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running emulator that is SIGKILLed (and reaped) when dropped, so a failing test leaves
/// nothing behind.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh temporary directory (removed on drop, even when the test fails).
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `$TMPDIR/l4s-emu-<tag>-<pid>`, emptied first.
    pub fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("l4s-emu-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A JSON file the emulator wrote (panics naming the file when it is missing).
pub fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("JSON")
}

/// Every `time=X ms` of ping's per-reply lines, in the order received.
pub fn ping_times(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split(' ').next()?.parse().ok())
        .collect()
}

/// The median of a non-empty sample.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Run the emulator on scenario `scen` into `out` (quiet), an iperf3 server on the server
/// side for one test, `client` (a shell command line) on the client side.
pub fn emu_iperf3(scen: &Path, out: &Path, client: &str) -> Output {
    emu(&[
        scen.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quiet",
        "--server",
        "exec iperf3 -s -1 >/dev/null",
        "--",
        "sh",
        "-c",
        client,
    ])
}
