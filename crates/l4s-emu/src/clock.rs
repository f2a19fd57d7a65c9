//! The emulator's wall clock: CLOCK_MONOTONIC in `Nanos` since the emulation started.
//! Waiting follows a sleep-then-spin rule (sleep until just before a deadline, spin the rest).

use l4s_core::Nanos;
use std::time::Duration;

/// How long before a deadline the driver stops sleeping and starts spinning. A `ppoll` wake-up
/// on this class of VM lands 10–60 µs late even with 1 ns timer slack; spinning the last stretch
/// keeps the release error (lateness) to a few µs.
pub const DEFAULT_SPIN: Nanos = Nanos(80_000);

/// Raw CLOCK_MONOTONIC in ns (the same clock `L4SLAB_T0_NS` is read from).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Ask the kernel to fire this thread's timers with 1 ns slack instead of the default 50 µs,
/// so a sleep ends when asked (see prctl(2) PR_SET_TIMERSLACK).
pub fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The emulator's SCHED_FIFO priority: the highest (sched_get_priority_max(SCHED_FIFO)), so
/// that no program it hosts runs above it. The programs it hosts ask for real time themselves
/// (udp_prague SCHED_RR 99, l4slab's kernel-stack sender SCHED_FIFO 10, `--rt-priority` up to
/// 98): a sender that preempts the emulator delays the link's departures and biases the very
/// run it is part of (issue 32: lateness p99 12-37 ms at FIFO 1 under load). A program at 99
/// ties it (same-priority threads do not preempt each other). The emulator sleeps between
/// deadlines and spins at most `spin` before each, and the kernel's RT throttling
/// (sched_rt_runtime_us) still leaves the rest of the host 5 % of each second.
pub const EMULATOR_PRIORITY: i32 = 99;

/// Run the calling thread under SCHED_FIFO at `EMULATOR_PRIORITY` (children forked later get
/// the normal policy back: SCHED_RESET_ON_FORK). On a loaded machine a normal thread's
/// wake-ups land milliseconds late; a real-time one's within tens of µs, which the spin window
/// then absorbs. Returns false when not permitted (no root / CAP_SYS_NICE): the run goes on,
/// later.
pub fn try_realtime() -> bool {
    let param = libc::sched_param {
        sched_priority: EMULATOR_PRIORITY,
    };
    // SAFETY: sched_setscheduler reads one sched_param from the live local.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) == 0
    }
}

/// The emulation's time base: `now()` is ns since `t0` on CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    t0_ns: u64,
}

impl Clock {
    /// A clock whose zero is this instant.
    pub fn start() -> Clock {
        Clock {
            t0_ns: monotonic_ns(),
        }
    }
    /// CLOCK_MONOTONIC at the emulation's start (exported as `L4SLAB_T0_NS`).
    pub fn t0_ns(&self) -> u64 {
        self.t0_ns
    }
    /// Time since the start.
    pub fn now(&self) -> Nanos {
        Nanos(monotonic_ns().saturating_sub(self.t0_ns))
    }
    /// How long the driver may block before `deadline` under the sleep-then-spin rule
    /// (None: spin, the deadline is within `spin` or past).
    pub fn sleep_budget(now: Nanos, deadline: Nanos, spin: Nanos) -> Option<Duration> {
        let left = deadline.as_ns().checked_sub(now.as_ns())?;
        if left <= spin.as_ns() {
            None
        } else {
            Some(Duration::from_nanos(left - spin.as_ns()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_budget_leaves_the_spin_window() {
        let spin = Nanos(80_000);
        assert_eq!(
            Clock::sleep_budget(Nanos(0), Nanos(1_000_000), spin),
            Some(Duration::from_nanos(920_000))
        );
        assert_eq!(Clock::sleep_budget(Nanos(0), Nanos(80_000), spin), None);
        assert_eq!(Clock::sleep_budget(Nanos(5), Nanos(4), spin), None);
    }

    #[test]
    fn clock_is_monotonic() {
        let c = Clock::start();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
        assert!(c.t0_ns() > 0);
    }
}
