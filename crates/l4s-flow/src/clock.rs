//! Wall clock for the sans-I/O endpoints: CLOCK_MONOTONIC in `Nanos` since a chosen origin, and
//! a sleep-then-spin wait (ppoll with 1 ns timer slack, then busy polling for the last stretch).

use l4s_core::Nanos;

/// CLOCK_MONOTONIC now, in ns.
pub fn monotonic_ns() -> u64 {
    // SAFETY: timespec is plain old data and clock_gettime only writes it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Ask for 1 ns timer slack (prctl PR_SET_TIMERSLACK) so that sleeps end when asked, not up
/// to the default 50 µs later. Best effort: returns false if the kernel refused.
pub fn set_min_timer_slack() -> bool {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long; the other arguments are ignored.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) == 0 }
}

/// The model's clock: ns since `origin_ns` (CLOCK_MONOTONIC).
#[derive(Copy, Clone, Debug)]
pub struct Clock {
    origin_ns: u64,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Clock {
            origin_ns: monotonic_ns(),
        }
    }
    /// Model time now.
    pub fn now(&self) -> Nanos {
        Nanos(monotonic_ns().saturating_sub(self.origin_ns))
    }
    /// CLOCK_MONOTONIC of model time zero.
    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }
}

/// Run this process with SCHED_FIFO priority `prio` (real-time: timers and wake-ups are not
/// delayed by ordinary load). Returns the OS error when not permitted.
pub fn set_realtime(prio: i32) -> std::io::Result<()> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: pid 0 is this process; `p` is a live sched_param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
