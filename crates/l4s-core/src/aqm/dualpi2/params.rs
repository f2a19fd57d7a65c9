//! DualPI2 parameters, their Linux defaults and validation ranges.
//! Defaults from Linux `dualpi2_reset_default`; ranges from `dualpi2_policy` (sch_dualpi2.c).

use super::classifier::EcnMask;
use super::scheduler::{CreditWrr, Scheduler, TsFifo};
use super::step::{LAqm, Ramp, Step, StepThresh};
use crate::error::{check_range_f64, check_range_u64, ParamError};
use crate::time::Nanos;

/// Scheduler between the queues.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Linux credit-based weighted round robin (`c_protection`).
    #[default]
    Wrr,
    /// RFC 9332 time-shifted FIFO (`tshift`).
    Tsfifo,
}

/// Which kernel code line the defaults follow (`aqm.profile`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelProfile {
    /// Mainline Linux net/sched/sch_dualpi2.c: `min_qlen_step` 0 (the step applies to every
    /// L packet), PI input sampled at the timer from the queue heads (`get_queue_delays`).
    #[default]
    Mainline,
    /// The L4S team's tree (L4STeam/linux sch_dualpi2.c): `apply_step = qdisc_qlen(l_queue)
    /// > 1` at enqueue (`min_qlen_step` 2), and the PI input is the head sojourn each queue
    /// had at the last dequeue (`qdelay_l`/`qdelay_c` written in `dequeue_packet`).
    L4steam,
}

impl KernelProfile {
    /// Scenario name of the profile.
    pub fn name(self) -> &'static str {
        match self {
            KernelProfile::Mainline => "mainline",
            KernelProfile::L4steam => "l4steam",
        }
    }
    /// `min_qlen_step` default of the profile.
    pub fn min_qlen_step(self) -> u64 {
        match self {
            KernelProfile::Mainline => 0,
            KernelProfile::L4steam => 2,
        }
    }
    /// `pi_qdelay` default of the profile.
    pub fn pi_qdelay(self) -> PiQdelay {
        match self {
            KernelProfile::Mainline => PiQdelay::Timer,
            KernelProfile::L4steam => PiQdelay::Dequeue,
        }
    }
}

/// Where the PI update reads the queue delay.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiQdelay {
    /// Head sojourn of each queue at the update instant (mainline `get_queue_delays`).
    #[default]
    Timer,
    /// Head sojourn each queue had at the last dequeue (L4S team tree).
    Dequeue,
}

impl PiQdelay {
    /// Scenario name.
    pub fn name(self) -> &'static str {
        match self {
            PiQdelay::Timer => "timer",
            PiQdelay::Dequeue => "dequeue",
        }
    }
}

/// Native AQM of the L-queue.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LAqmKind {
    /// Linux step threshold (`step_thresh` / `step_thresh_pkts`, `min_qlen_step`).
    #[default]
    Step,
    /// RFC 9332 §A.1 ramp (`min_th`, `range`, `th_len`).
    Ramp,
}

/// Parameters of [`super::DualPi2`]. `Default` = Linux defaults (tc qdisc add ... dualpi2).
///
/// Not modelled: `split_gso` (packets here are never GSO aggregates) and Linux's implicit
/// `memlimit` of limit·2·MTU bytes of skb truesize (set `limit_bytes` for a byte bound).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DualPi2Params {
    /// Kernel code line whose defaults apply to the keys not given (default mainline); the
    /// scenario loader fills `min_qlen_step` and `pi_qdelay` from it.
    pub profile: KernelProfile,
    /// Where the PI update reads the queue delay (mainline: timer; l4steam: dequeue).
    pub pi_qdelay: PiQdelay,
    /// Buffer of both queues together, packets (Linux `limit`, default 10000).
    pub limit: u64,
    /// Optional byte bound on both queues' packet bytes.
    pub limit_bytes: Option<u64>,
    /// PI2 target queue delay (default 15 ms).
    pub target: Nanos,
    /// PI2 update interval (default 16 ms).
    pub tupdate: Nanos,
    /// Integral gain in Hz: p' += alpha·(qdelay − target)[s] per update (default 0.16).
    pub alpha: f64,
    /// Proportional gain in Hz: p' += beta·(qdelay − prev_qdelay)[s] per update (default 3.2).
    pub beta: f64,
    /// Step threshold in time; `None` means 1 ms unless `step_thresh_pkts` is set.
    pub step_thresh: Option<Nanos>,
    /// Step threshold in packets (excludes `step_thresh`).
    pub step_thresh_pkts: Option<u64>,
    /// Apply the step only to packets that found at least this many packets in L (default 0).
    pub min_qlen_step: u64,
    /// Coupling factor k (Linux `coupling_factor`, default 2).
    pub k: u32,
    /// C-queue WRR weight wc in percent; wl = 100 − wc (default 10).
    pub c_protection: u32,
    /// Which ECN codepoints go to L (default `l4s`: ECT(1) and CE).
    pub ecn_mask: EcnMask,
    /// On overload (k·p' > 1) drop L packets with p'² (default true); false caps p' ≤ 1/k.
    pub drop_overload: bool,
    /// Apply the coupled AQM at enqueue (true) instead of dequeue (default false).
    pub drop_early: bool,
    pub scheduler: SchedulerKind,
    /// TS-FIFO time shift; `None` = 2·target (our choice: RFC 9332 §A.1 leaves the scheduler
    /// parameter unspecified; ns-3's draft-10 model used 50 ms).
    pub tshift: Option<Nanos>,
    pub l_aqm: LAqmKind,
    /// Ramp start (RFC 9332 §A.1 minTh, default 800 us).
    pub min_th: Nanos,
    /// Ramp width (RFC 9332 §A.1 range, default 400 us).
    pub range: Nanos,
    /// Ramp minimum L length in packets (RFC 9332 §A.1 Th_len, default 1).
    pub th_len: u64,
    /// Link MTU in bytes for the 2·MTU floor and the initial WRR credit (Linux `psched_mtu`).
    /// Linux counts device MTU + link header (1514 on Ethernet) against frame lengths; use the
    /// unit of `Packet::bytes` here (1500 with IP-sized packets keeps the same 2-packet floor).
    pub mtu_bytes: u32,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            profile: KernelProfile::Mainline,
            pi_qdelay: PiQdelay::Timer,
            limit: 10_000,
            limit_bytes: None,
            target: Nanos::from_ms(15),
            tupdate: Nanos::from_ms(16),
            alpha: 0.16,
            beta: 3.2,
            step_thresh: None,
            step_thresh_pkts: None,
            min_qlen_step: 0,
            k: 2,
            c_protection: 10,
            ecn_mask: EcnMask::L4s,
            drop_overload: true,
            drop_early: false,
            scheduler: SchedulerKind::Wrr,
            tshift: None,
            l_aqm: LAqmKind::Step,
            min_th: Nanos::from_us(800),
            range: Nanos::from_us(400),
            th_len: 1,
            mtu_bytes: 1500,
        }
    }
}

/// Linux keeps ns values in u32 after `convert_us_to_nsec` (saturating at U32_MAX ns).
const U32_NS: Nanos = Nanos(u32::MAX as u64);
/// Linux alpha/beta over netlink: 1..=2^31−1 in units of 1/256 Hz.
const ALPHA_BETA_MIN_HZ: f64 = 1.0 / 256.0;
const ALPHA_BETA_MAX_HZ: f64 = ((1u64 << 31) - 1) as f64 / 256.0;

fn check_nanos(param: &str, v: Nanos, lo: Nanos, hi: Nanos) -> Result<(), ParamError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            v,
            &format!(
                "a duration in [{}, {}]",
                lo.bound_display(false),
                hi.bound_display(true)
            ),
        ))
    }
}

impl DualPi2Params {
    pub fn validate(&self) -> Result<(), ParamError> {
        check_range_u64("limit", self.limit, 1, u32::MAX as u64)?;
        if let Some(b) = self.limit_bytes {
            check_range_u64("limit_bytes", b, 1, u32::MAX as u64)?;
        }
        check_nanos(
            "target",
            self.target,
            Nanos::from_ns(1),
            Nanos::from_us(u32::MAX as u64),
        )?;
        check_nanos("tupdate", self.tupdate, Nanos::from_us(1), U32_NS)?;
        check_range_f64("alpha", self.alpha, ALPHA_BETA_MIN_HZ, ALPHA_BETA_MAX_HZ)?;
        check_range_f64("beta", self.beta, ALPHA_BETA_MIN_HZ, ALPHA_BETA_MAX_HZ)?;
        if self.step_thresh.is_some() && self.step_thresh_pkts.is_some() {
            // Linux: "multiple step thresh attributes".
            return Err(ParamError::new(
                "step_thresh_pkts",
                "set together with step_thresh",
                "only one of step_thresh (time) or step_thresh_pkts (packets)",
            ));
        }
        if let Some(t) = self.step_thresh {
            check_nanos("step_thresh", t, Nanos::ZERO, U32_NS)?;
        }
        if let Some(n) = self.step_thresh_pkts {
            check_range_u64("step_thresh_pkts", n, 0, u32::MAX as u64)?;
        }
        check_range_u64("min_qlen_step", self.min_qlen_step, 0, u32::MAX as u64)?;
        check_range_u64("k", self.k as u64, 1, 255)?;
        check_range_u64("c_protection", self.c_protection as u64, 0, 100)?;
        check_range_u64("mtu_bytes", self.mtu_bytes as u64, 68, 65_535)?;
        if let Some(t) = self.tshift {
            check_nanos("tshift", t, Nanos::ZERO, Nanos::from_secs(3600))?;
        }
        check_nanos("min_th", self.min_th, Nanos::ZERO, Nanos::from_secs(3600))?;
        check_nanos(
            "range",
            self.range,
            Nanos::from_ns(1),
            Nanos::from_secs(3600),
        )?;
        check_range_u64("th_len", self.th_len, 0, u32::MAX as u64)?;
        Ok(())
    }

    /// Effective Linux step threshold.
    pub fn step_threshold(&self) -> StepThresh {
        match (self.step_thresh_pkts, self.step_thresh) {
            (Some(n), _) => StepThresh::Packets(n),
            (None, Some(t)) => StepThresh::Time(t),
            (None, None) => StepThresh::Time(Nanos::from_ms(1)),
        }
    }

    pub(super) fn build_l_aqm(&self) -> LAqm {
        match self.l_aqm {
            LAqmKind::Step => LAqm::Step(Step {
                thresh: self.step_threshold(),
            }),
            LAqmKind::Ramp => LAqm::Ramp(Ramp {
                min_th: self.min_th,
                range: self.range,
                th_len_pkts: self.th_len,
            }),
        }
    }

    pub(super) fn build_scheduler(&self) -> Scheduler {
        match self.scheduler {
            SchedulerKind::Wrr => {
                Scheduler::Wrr(CreditWrr::new(self.c_protection as u8, self.mtu_bytes))
            }
            SchedulerKind::Tsfifo => Scheduler::TsFifo(TsFifo {
                tshift: self
                    .tshift
                    .unwrap_or(Nanos(self.target.as_ns().saturating_mul(2))),
            }),
        }
    }
}
