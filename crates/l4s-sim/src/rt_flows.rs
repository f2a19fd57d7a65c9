//! `[[flows]]` with `cc = "rt-prague" | "rt-gcc" | "rt-gcc-loss" | "rt-cbr"`: real-time media flows
//! (`l4s_core::rt`), their keys, defaults and checks.
//!
//! Defaults: fps 60, frame_budget 1/fps (rt-prague: 10 ms, udp_prague's FRAME_DURATION, at
//! most 1/fps), deadline 100 ms, init_rate 1 Mb/s (rt-prague: 100 kb/s, PRAGUE_INITRATE;
//! within [min_rate, max_rate]), min_rate 100 kb/s (udp_prague's PRAGUE_MINRATE), max_rate
//! 1 Gb/s, packet_size 1400 (udp_prague's PRAGUE_INITMTU; rt-prague: UDP payload bytes). ecn: rt-prague "l4s" (ECT(1)) or "none"
//! (Not-ECT: loss response only); rt-gcc (full goog_cc) and rt-gcc-loss (its loss-based half)
//! "none" or "classic" (ECT(0), CE counted as loss);
//! rt-cbr "none", "classic" or "l4s" (unresponsive video in either queue).

use crate::error::SimError;
use crate::flows::{refuse_set, tcp_only_keys, FlowEnds, SimReceiver, SimSender};
use crate::scenario::{FlowConfig, FlowEcn};
use l4s_core::rt::receiver::RtReceiver;
use l4s_core::rt::sender::{RtConfig, RtSender};
use l4s_core::rt::Controller;
use l4s_core::{Ecn, Nanos, Rate};

/// Default frame deadline.
pub const DEFAULT_DEADLINE: Nanos = Nanos::from_ms(100);

/// udp_prague's `FRAME_DURATION` (app_stuff.h): a frame is paced over 10 ms.
pub const DEFAULT_PRAGUE_FRAME_BUDGET: Nanos = Nanos::from_ms(10);

/// A real-time media flow?
pub fn is_rt(fl: &FlowConfig) -> bool {
    fl.cc.starts_with("rt-")
}

fn ecn_of(fl: &FlowConfig) -> Ecn {
    match (fl.cc.as_str(), fl.ecn) {
        ("rt-prague", None) | (_, Some(FlowEcn::L4s)) => Ecn::Ect1,
        (_, Some(FlowEcn::Classic)) => Ecn::Ect0,
        _ => Ecn::NotEct,
    }
}

/// The sender parameters of a (checked) rt flow entry.
pub fn rt_config(fl: &FlowConfig) -> RtConfig {
    let fps = fl.fps.unwrap_or(60);
    let min = fl.min_rate.unwrap_or(Rate(100_000)).bps();
    let max = fl.max_rate.unwrap_or(Rate(1_000_000_000)).bps();
    let prague = fl.cc == "rt-prague";
    let init_default = if prague {
        l4s_core::rt::prague::INIT_RATE_BPS
    } else {
        1_000_000
    };
    let init = fl
        .init_rate
        .map_or(init_default.clamp(min, max.max(min)), |r| r.bps());
    let interval = Nanos(1_000_000_000 / fps.max(1) as u64);
    let budget_default = if prague {
        interval.min(DEFAULT_PRAGUE_FRAME_BUDGET)
    } else {
        interval
    };
    let controller = match fl.cc.as_str() {
        "rt-gcc" => Controller::Gcc,
        "rt-gcc-loss" => Controller::GccLoss,
        "rt-cbr" => Controller::Fixed(fl.rate.map_or(0, |r| r.bps())),
        _ => Controller::Prague,
    };
    RtConfig {
        controller,
        fps,
        frame_budget: fl.frame_budget.unwrap_or(budget_default),
        init_rate_bps: init,
        min_rate_bps: min,
        max_rate_bps: max,
        max_packet_bytes: fl.packet_size.unwrap_or(1400),
        ecn: ecn_of(fl),
        start: fl.start,
        stop: fl.stop,
    }
}

/// Check an rt flow entry `flows[i]`; errors name the field and what is allowed.
pub fn validate_rt(i: usize, fl: &FlowConfig) -> Result<(), SimError> {
    let p = |f: &str| format!("flows[{i}].{f}");
    if !matches!(
        fl.cc.as_str(),
        "rt-prague" | "rt-gcc" | "rt-gcc-loss" | "rt-cbr"
    ) {
        return Err(SimError::field(
            p("cc"),
            format!(
                "\"{}\" is not a known real-time controller; expected one of rt-prague, rt-gcc, rt-gcc-loss, rt-cbr",
                fl.cc
            ),
        ));
    }
    let why = format!("does not apply to a real-time flow (cc = \"{}\")", fl.cc);
    refuse_set(
        &p,
        &[
            ("bytes", fl.bytes.is_some()),
            ("on", fl.on.is_some()),
            ("off", fl.off.is_some()),
            ("prague_cwnd_mode", fl.prague_cwnd_mode.is_some()),
        ],
        &why,
    )?;
    refuse_set(&p, &tcp_only_keys(fl), &why)?;
    let allowed: &[FlowEcn] = match fl.cc.as_str() {
        "rt-prague" => &[FlowEcn::L4s, FlowEcn::None],
        "rt-gcc" | "rt-gcc-loss" => &[FlowEcn::None, FlowEcn::Classic],
        _ => &[FlowEcn::None, FlowEcn::Classic, FlowEcn::L4s],
    };
    if let Some(e) = fl.ecn {
        if !allowed.contains(&e) {
            let names: Vec<&str> = allowed
                .iter()
                .map(|a| match a {
                    FlowEcn::None => "\"none\"",
                    FlowEcn::Classic => "\"classic\"",
                    FlowEcn::Accecn => "\"accecn\"",
                    FlowEcn::L4s => "\"l4s\"",
                })
                .collect();
            return Err(SimError::field(
                p("ecn"),
                format!(
                    "not allowed for cc = \"{}\"; expected one of {}",
                    fl.cc,
                    names.join(", ")
                ),
            ));
        }
    }
    if fl.cc == "rt-cbr" {
        if fl.rate.is_none() {
            return Err(SimError::field(
                p("rate"),
                "missing; rt-cbr (fixed-rate video) needs a rate like \"4mbit\"",
            ));
        }
        refuse_set(
            &p,
            &[
                ("init_rate", fl.init_rate.is_some()),
                ("min_rate", fl.min_rate.is_some()),
                ("max_rate", fl.max_rate.is_some()),
            ],
            "applies to rate-controlled video (rt-prague, rt-gcc), not to rt-cbr",
        )?;
    } else if fl.rate.is_some() {
        return Err(SimError::field(
            p("rate"),
            format!(
                "applies to rt-cbr only; \"{}\" sets its own rate (use init_rate, min_rate, max_rate)",
                fl.cc
            ),
        ));
    }
    if fl.deadline == Some(Nanos::ZERO) {
        return Err(SimError::field(
            p("deadline"),
            "\"0s\" must be > 0, e.g. \"100ms\"",
        ));
    }
    let cfg = rt_config(fl);
    // The range first: with min_rate > max_rate no init_rate could be right, so naming
    // init_rate would send the user to the wrong key.
    if cfg.min_rate_bps > cfg.max_rate_bps {
        return Err(SimError::field(
            p(if fl.max_rate.is_some() {
                "max_rate"
            } else {
                "min_rate"
            }),
            format!(
                "min_rate {} is above max_rate {}; expected min_rate ≤ max_rate",
                Rate(cfg.min_rate_bps),
                Rate(cfg.max_rate_bps)
            ),
        ));
    }
    if cfg.init_rate_bps < cfg.min_rate_bps || cfg.init_rate_bps > cfg.max_rate_bps {
        return Err(SimError::field(
            p("init_rate"),
            format!(
                "{} is outside [min_rate, max_rate] = [{}, {}]",
                Rate(cfg.init_rate_bps),
                Rate(cfg.min_rate_bps),
                Rate(cfg.max_rate_bps)
            ),
        ));
    }
    cfg.validate().map_err(|e| SimError::param(&p(""), e))
}

/// Build the sender and receiver of rt flow `id` from its (checked) entry `flows[i]`.
pub fn build_rt(i: usize, id: u32, fl: &FlowConfig) -> Result<FlowEnds, SimError> {
    let cfg = rt_config(fl);
    let l4s = cfg.ecn == Ecn::Ect1;
    let snd = RtSender::new(id, cfg).map_err(|e| SimError::param(&format!("flows[{i}]."), e))?;
    Ok(FlowEnds {
        sender: SimSender::Dyn(Box::new(snd)),
        receiver: SimReceiver::Dyn(Box::new(RtReceiver::new(id))),
        l4s,
    })
}
