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

/// Share of wall time the driver may spend awake (spinning or working) in a window of
/// [`SPIN_WINDOW`] before it stops spinning for the rest of that window.
///
/// Why: the kernel's real-time bandwidth control keeps 5 % of every CPU for normal tasks. RT
/// throttling (`sched_rt_runtime_us` 950000 of `sched_rt_period_us` 1000000,
/// kernel/sched/rt.c `sched_rt_runtime_exceeded`) takes the CPU from every SCHED_FIFO task on
/// a CPU whose RT time passed 950 ms in the current second, until the period ends; since Linux
/// 6.12 the fair server (kernel/sched/deadline.c `dl_server`, 50 ms per 1 s) also preempts RT
/// tasks to run starved normal ones, even with `sched_rt_runtime_us = -1`. A driver that spins
/// through a dense stream (200 Mb/s: a departure every 60 µs, inside the 80 µs spin window)
/// never sleeps, reaches 950 ms in a second, and is stopped for up to 50 ms: a departure
/// stall that releases a line-rate burst into the AQM (measured: lateness max 45-55 ms in
/// every 120 s, 200 Mb/s run). Capping the awake share at 85 % leaves the normal tasks their
/// 5 % through the driver's own sleeps, with room for the hosted real-time senders.
pub const SPIN_CAP: f64 = 0.85;

/// Accounting window of the spin cap (a tenth of the kernel's 1 s RT period).
pub const SPIN_WINDOW: Nanos = Nanos(100_000_000);

/// The spin cap's meter: awake time in the current window. When the awake time reaches
/// `SPIN_CAP` × `SPIN_WINDOW`, `spin` returns zero until the window ends, so each wait sleeps
/// up to its deadline (a timer wake-up, tens of µs late) instead of spinning the last stretch.
#[derive(Clone, Debug)]
pub struct SpinMeter {
    window_start: Nanos,
    awake: Nanos,
    mark: Nanos,
    /// Windows in which the cap was reached (reported in emulator.json).
    pub capped_windows: u64,
    capped_now: bool,
}

impl SpinMeter {
    /// A meter whose first window starts at `now`.
    pub fn new(now: Nanos) -> SpinMeter {
        SpinMeter {
            window_start: now,
            awake: Nanos::ZERO,
            mark: now,
            capped_windows: 0,
            capped_now: false,
        }
    }

    /// The driver has been awake from the last mark until `now`; roll the window if it ended.
    pub fn awake_until(&mut self, now: Nanos) {
        self.awake += now.saturating_sub(self.mark);
        self.mark = now;
        if now >= self.window_start + SPIN_WINDOW {
            self.window_start = now;
            self.awake = Nanos::ZERO;
            self.capped_now = false;
        }
    }

    /// The driver woke up at `now` after a wait (the wait is not awake time).
    pub fn woke_at(&mut self, now: Nanos) {
        self.mark = now;
    }

    /// The spin window to use now: `spin` while under the cap, zero once it is reached.
    pub fn spin(&mut self, spin: Nanos) -> Nanos {
        let cap = Nanos((SPIN_WINDOW.as_ns() as f64 * SPIN_CAP) as u64);
        if self.awake < cap {
            return spin;
        }
        if !self.capped_now {
            self.capped_now = true;
            self.capped_windows += 1;
        }
        Nanos::ZERO
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
    fn spin_stops_at_85_ms_awake_in_a_100_ms_window_and_resumes_in_the_next() {
        let spin = Nanos(80_000);
        let mut m = SpinMeter::new(Nanos(0));
        // 84.999 ms awake: still under 0.85 × 100 ms.
        m.awake_until(Nanos(84_999_000));
        assert_eq!(m.spin(spin), spin);
        // A 10 ms sleep is not awake time.
        m.woke_at(Nanos(94_999_000));
        assert_eq!(m.spin(spin), spin);
        // 1 µs more awake reaches 85 ms exactly: the cap holds from here to the window's end.
        m.awake_until(Nanos(95_000_000));
        assert_eq!(m.spin(spin), Nanos::ZERO);
        assert_eq!(m.spin(spin), Nanos::ZERO);
        assert_eq!(m.capped_windows, 1);
        // The window ends at 100 ms: the next one starts empty.
        m.awake_until(Nanos(100_000_000));
        assert_eq!(m.spin(spin), spin);
        // A second capped window is counted once.
        m.awake_until(Nanos(185_000_000));
        assert_eq!(m.spin(spin), Nanos::ZERO);
        assert_eq!(m.spin(spin), Nanos::ZERO);
        assert_eq!(m.capped_windows, 2);
    }

    #[test]
    fn a_driver_awake_all_the_time_spins_85_percent_of_each_window() {
        // A spinning driver marks every 50 µs; each window allows 85 ms of spinning, then the
        // remaining 15 ms use timer sleeps (spin window zero).
        let mut m = SpinMeter::new(Nanos(0));
        let spin = Nanos(80_000);
        let mut spun = 0u64;
        let mut t = 0u64;
        while t < 1_000_000_000 {
            t += 50_000;
            m.awake_until(Nanos(t));
            if m.spin(spin) == spin {
                spun += 50_000;
            }
        }
        // Each window spins from its first mark (offset 0, where the awake time restarts)
        // through offset 84.95 ms (awake 84.95 ms < 85 ms): 1700 marks of 50 µs. The first
        // window has no mark at 0 and the mark at 1 s opens an eleventh window: 1699 + 9 ×
        // 1700 + 1 marks, 850 ms in all.
        assert_eq!(spun, 850_000_000);
        assert_eq!(m.capped_windows, 10);
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
