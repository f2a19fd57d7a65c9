//! The namespaces' kernel TCP congestion control: each side's `net.ipv4.tcp_congestion_control`
//! set explicitly (Linux `tcp_set_default_congestion_control`, per network namespace since 4.15).
//!
//! A new namespace otherwise inherits the host's default (bbr on some hosts), so a user's
//! "Cubic" run would silently be BBR. Outside the initial namespace the kernel accepts as a
//! default only a congestion control in `net.ipv4.tcp_allowed_congestion_control`
//! (`TCP_CONG_NON_RESTRICTED`), and the same list is all an unprivileged program may choose
//! with TCP_CONGESTION (`tcp_set_congestion_control`). That list is host-wide (a flag on each
//! `tcp_congestion_ops`), so, as root, the emulator widens it to every available congestion
//! control for the run and a guardian process puts the host's list back when the emulator is
//! gone (even after SIGKILL), unless someone changed it meanwhile.

use crate::error::EmuError;
use std::os::fd::OwnedFd;

/// The kernel's own default (CONFIG_DEFAULT_TCP_CONG on every distribution kernel).
pub const DEFAULT_CC: &str = "cubic";

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
/// Per network namespace.
pub const DEFAULT_SYSCTL: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map_or_else(|_| String::new(), |s| s.trim().to_string())
}

/// The congestion controls this kernel offers.
pub fn available() -> Vec<String> {
    read(AVAILABLE)
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// A change of the host-wide allowed list, undone when the emulator is gone.
#[derive(Debug)]
pub struct AllowedWidened {
    /// The host's list before the run.
    pub before: String,
    /// The list during the run (every available congestion control).
    pub during: String,
    /// Write end of the guardian's pipe: closing it (our exit, however it happens) makes the
    /// guardian restore `before`.
    _guardian: OwnedFd,
}

/// Check `cc` against the available list (an error naming `--tcp-cc` and the choices).
pub fn check(cc: &str) -> Result<(), EmuError> {
    let have = available();
    if have.is_empty() || have.iter().any(|c| c == cc) {
        return Ok(());
    }
    Err(EmuError::Config(format!(
        "--tcp-cc: {cc:?} is not offered by this kernel; expected one of {} \
         (net.ipv4.tcp_available_congestion_control; `modprobe tcp_{cc}` may add it)",
        have.join(", ")
    )))
}

/// As root in the initial namespaces: make every available congestion control allowed for
/// the run (None when it already is, or when not permitted). Call while single-threaded.
pub fn allow_all() -> Option<AllowedWidened> {
    let before = read(ALLOWED);
    let all = available();
    let have: Vec<&str> = before.split_whitespace().collect();
    if all.is_empty() || all.iter().all(|c| have.contains(&c.as_str())) {
        return None;
    }
    let during = all.join(" ");
    let guardian = spawn_guardian(before.clone(), during.clone())?;
    std::fs::write(ALLOWED, &during).ok()?;
    Some(AllowedWidened {
        before,
        during: read(ALLOWED),
        _guardian: guardian,
    })
}

/// The guardian (`crate::guardian`): when the emulator is gone it writes `before` back, if
/// the list still reads `during` (a list someone else set is left alone).
fn spawn_guardian(before: String, during: String) -> Option<OwnedFd> {
    crate::guardian::spawn(move || {
        let now: Vec<String> = read(ALLOWED).split_whitespace().map(String::from).collect();
        let set: Vec<String> = during.split_whitespace().map(String::from).collect();
        if now == set {
            let _ = std::fs::write(ALLOWED, &before);
        }
    })
    .ok()
}

/// Inside a side's namespace: set its default congestion control.
pub fn set_default(cc: &str) -> std::io::Result<()> {
    std::fs::write(DEFAULT_SYSCTL, cc)
}
