//! l4s-flow: l4slab's TCP (l4s-core `TcpSender`/`TcpReceiver` and every congestion control)
//! over UDP with the IP-ECN codepoint set and read per datagram, driven by the wall clock.
//! The same objects run in the simulator; only the clock and the network differ.

pub mod client;
pub mod clock;
mod drain;
pub mod error;
pub mod probe;
pub mod receiver;
pub mod report;
pub mod reverse;
pub mod rt;
pub mod rtwire;
pub mod server;
pub mod sock;
pub mod wire;
pub mod workload;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use l4s_core::Nanos;

pub use error::FlowError;

/// The process runs with SCHED_FIFO priority (reported in the JSON result).
pub static REALTIME: AtomicBool = AtomicBool::new(false);

/// Set by SIGINT/SIGTERM: the loops end and write what they have.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Route SIGINT and SIGTERM to [`INTERRUPTED`] (ppoll then returns EINTR at once).
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// What `l4slab emulate` exports (see the emulator contract in README.md).
#[derive(Clone, Debug)]
pub struct EmuEnv {
    /// `L4SLAB_FLOW_DIR`: where the sender writes `flow-<pid>.csv`.
    pub flow_dir: Option<PathBuf>,
    /// `L4SLAB_T0_NS`: CLOCK_MONOTONIC at the emulation's start (t_s = 0).
    pub t0_ns: u64,
    /// `L4SLAB_SAMPLE_INTERVAL_NS`: CSV row period (default 16 ms, DualPI2's tupdate).
    pub sample_interval: Nanos,
}

impl EmuEnv {
    /// Read the environment; a malformed value is an error naming the variable.
    pub fn from_env() -> Result<Self, FlowError> {
        let num = |name: &'static str| -> Result<Option<u64>, FlowError> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| FlowError::Usage {
                        flag: name,
                        msg: format!("\"{v}\" is not a whole number of nanoseconds"),
                    }),
                Err(_) => Ok(None),
            }
        };
        let flow_dir = std::env::var_os("L4SLAB_FLOW_DIR").map(PathBuf::from);
        let t0_ns = num("L4SLAB_T0_NS")?.unwrap_or_else(clock::monotonic_ns);
        let si = num("L4SLAB_SAMPLE_INTERVAL_NS")?.unwrap_or(16_000_000);
        if si == 0 {
            return Err(FlowError::Usage {
                flag: "L4SLAB_SAMPLE_INTERVAL_NS",
                msg: "0 must be > 0".into(),
            });
        }
        Ok(EmuEnv {
            flow_dir,
            t0_ns,
            sample_interval: Nanos(si),
        })
    }
}
