//! `[[flows]]` with `cc = "rt-prague" | "rt-gcc" | "rt-gcc-loss" | "rt-cbr" | "rt-scream"`:
//! real-time media flows (`l4s_core::rt`), their keys, defaults and checks.
//!
//! Defaults: fps 60, frame_budget 1/fps (rt-prague: 10 ms, udp_prague's FRAME_DURATION, at
//! most 1/fps; refused for rt-scream and rt-gcc, whose pacers run at 1.5 × / 2.5 × the
//! target), feedback_interval 25 ms (rt-scream and rt-gcc, fed by RFC 8888 reports),
//! deadline 100 ms, init_rate 1 Mb/s (rt-prague: 100 kb/s, PRAGUE_INITRATE; rt-scream:
//! 300 kb/s, libwebrtc's start rate; within [min_rate, max_rate]), min_rate 100 kb/s (udp_prague's PRAGUE_MINRATE), max_rate 1 Gb/s, packet_size 1400 (udp_prague's
//! PRAGUE_INITMTU; rt-prague: UDP payload bytes). ecn: rt-prague and rt-scream (SCReAMv2,
//! RFC 8888 feedback) "l4s" (ECT(1), default) or "none" (Not-ECT: loss response only);
//! rt-gcc (full goog_cc) and rt-gcc-loss (its loss-based half) "none" or "classic" (ECT(0),
//! CE counted as loss); rt-cbr "none", "classic" or "l4s" (unresponsive video in either
//! queue). `scream_*` keys set libwebrtc's SCReAMv2 parameters. Frames of every controller
//! but rt-prague (which sizes them as udp_prague does, and rt-cbr unless one of these keys is
//! set) go through the encoder model (`frame_size_cv`, `keyframe_interval`, `keyframe_ratio`,
//! `encoder_lag`).

use crate::error::SimError;
use crate::flows::{refuse_set, tcp_only_keys, FlowEnds, SimReceiver, SimSender};
use crate::scenario::{FlowConfig, FlowEcn};
use l4s_core::rt::encoder::{EncoderConfig, DEFAULT_FRAME_SIZE_CV, DEFAULT_KEYFRAME_RATIO};
use l4s_core::rt::receiver::RtReceiver;
use l4s_core::rt::rfc8888::DEFAULT_FEEDBACK_INTERVAL;
use l4s_core::rt::scream::{ScreamParams, DEFAULT_START_BPS};
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
        ("rt-prague" | "rt-scream", None) | (_, Some(FlowEcn::L4s)) => Ecn::Ect1,
        (_, Some(FlowEcn::Classic)) => Ecn::Ect0,
        _ => Ecn::NotEct,
    }
}

/// SCReAMv2's parameters: libwebrtc's defaults with the flow's `scream_*` keys.
fn scream_params(fl: &FlowConfig) -> ScreamParams {
    let d = ScreamParams::default();
    ScreamParams {
        beta_loss: fl.scream_beta_loss.unwrap_or(d.beta_loss),
        l4s_avg_g: fl.scream_l4s_avg_g.unwrap_or(d.l4s_avg_g),
        min_ref_window_bytes: fl.scream_min_ref_window.unwrap_or(d.min_ref_window_bytes),
        max_segment_size_bytes: fl
            .scream_max_segment_size
            .unwrap_or(d.max_segment_size_bytes),
        bytes_in_flight_head_room: fl
            .scream_bytes_in_flight_head_room
            .unwrap_or(d.bytes_in_flight_head_room),
        post_congestion_delay_rtts: fl
            .scream_post_congestion_delay_rtts
            .unwrap_or(d.post_congestion_delay_rtts),
        multiplicative_increase_factor: fl
            .scream_multiplicative_increase_factor
            .unwrap_or(d.multiplicative_increase_factor),
        virtual_rtt: fl.scream_virtual_rtt.unwrap_or(d.virtual_rtt),
        queue_delay_target: fl.scream_queue_delay_target.unwrap_or(d.queue_delay_target),
        queue_delay_threshold: fl
            .scream_queue_delay_threshold
            .unwrap_or(d.queue_delay_threshold),
        ..d
    }
}

/// The `scream_*` keys set on a flow entry, for refusing them on other controllers.
fn scream_keys(fl: &FlowConfig) -> Vec<(&'static str, bool)> {
    vec![
        ("scream_beta_loss", fl.scream_beta_loss.is_some()),
        ("scream_l4s_avg_g", fl.scream_l4s_avg_g.is_some()),
        ("scream_min_ref_window", fl.scream_min_ref_window.is_some()),
        (
            "scream_max_segment_size",
            fl.scream_max_segment_size.is_some(),
        ),
        (
            "scream_bytes_in_flight_head_room",
            fl.scream_bytes_in_flight_head_room.is_some(),
        ),
        (
            "scream_post_congestion_delay_rtts",
            fl.scream_post_congestion_delay_rtts.is_some(),
        ),
        (
            "scream_multiplicative_increase_factor",
            fl.scream_multiplicative_increase_factor.is_some(),
        ),
        ("scream_virtual_rtt", fl.scream_virtual_rtt.is_some()),
        (
            "scream_queue_delay_target",
            fl.scream_queue_delay_target.is_some(),
        ),
        (
            "scream_queue_delay_threshold",
            fl.scream_queue_delay_threshold.is_some(),
        ),
    ]
}

/// The encoder model's keys and whether each is set.
fn encoder_keys(fl: &FlowConfig) -> [(&'static str, bool); 4] {
    [
        ("frame_size_cv", fl.frame_size_cv.is_some()),
        ("keyframe_interval", fl.keyframe_interval.is_some()),
        ("keyframe_ratio", fl.keyframe_ratio.is_some()),
        ("encoder_lag", fl.encoder_lag.is_some()),
    ]
}

/// Frames go through the encoder model: rt-scream, rt-gcc and rt-gcc-loss always, rt-cbr when an
/// encoder key is set, rt-prague never (udp_prague sizes frames as rate × frame_budget).
fn encoder_applies(fl: &FlowConfig) -> bool {
    match fl.cc.as_str() {
        "rt-prague" => false,
        "rt-cbr" => encoder_keys(fl).iter().any(|&(_, set)| set),
        _ => true,
    }
}

/// The sender parameters of a (checked) rt flow entry; `seed` is the scenario seed.
pub fn rt_config_seeded(fl: &FlowConfig, seed: u64) -> RtConfig {
    let mut c = rt_config(fl);
    c.seed = seed;
    c
}

/// The sender parameters of a (checked) rt flow entry (encoder seed 0).
pub fn rt_config(fl: &FlowConfig) -> RtConfig {
    let fps = fl.fps.unwrap_or(60);
    let min = fl.min_rate.unwrap_or(Rate(100_000)).bps();
    let max = fl.max_rate.unwrap_or(Rate(1_000_000_000)).bps();
    let prague = fl.cc == "rt-prague";
    let init_default = match fl.cc.as_str() {
        "rt-prague" => l4s_core::rt::prague::INIT_RATE_BPS,
        "rt-scream" => DEFAULT_START_BPS,
        _ => 1_000_000,
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
        "rt-scream" => Controller::Scream(scream_params(fl)),
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
        // rt-cbr is exact rate/fps frames unless an encoder key asks for the model.
        encoder: encoder_applies(fl).then(|| EncoderConfig {
            lag: fl.encoder_lag,
            frame_size_cv: fl.frame_size_cv.unwrap_or(DEFAULT_FRAME_SIZE_CV),
            keyframe_interval: fl.keyframe_interval,
            keyframe_ratio: fl.keyframe_ratio.unwrap_or(DEFAULT_KEYFRAME_RATIO),
        }),
        seed: 0,
        feedback_interval: fl.feedback_interval.unwrap_or(DEFAULT_FEEDBACK_INTERVAL),
        gcc_probing: fl.gcc_probing.unwrap_or(false),
    }
}

/// Check an rt flow entry `flows[i]`; errors name the field and what is allowed.
pub fn validate_rt(i: usize, fl: &FlowConfig) -> Result<(), SimError> {
    let p = |f: &str| format!("flows[{i}].{f}");
    if !matches!(
        fl.cc.as_str(),
        "rt-prague" | "rt-gcc" | "rt-gcc-loss" | "rt-cbr" | "rt-scream"
    ) {
        return Err(SimError::field(
            p("cc"),
            format!(
                "\"{}\" is not a known real-time controller; expected one of rt-prague, rt-gcc, rt-gcc-loss, rt-cbr, rt-scream",
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
    if fl.cc != "rt-scream" {
        refuse_set(
            &p,
            &scream_keys(fl),
            &format!("applies to rt-scream only, not to cc = \"{}\"", fl.cc),
        )?;
    }
    if fl.cc != "rt-gcc" {
        refuse_set(
            &p,
            &[("gcc_probing", fl.gcc_probing.is_some())],
            &format!("applies to rt-gcc only, not to cc = \"{}\"", fl.cc),
        )?;
    }
    if !matches!(fl.cc.as_str(), "rt-scream" | "rt-gcc") {
        refuse_set(
            &p,
            &[("feedback_interval", fl.feedback_interval.is_some())],
            &format!(
                "applies to the controllers fed by RFC 8888 reports (rt-scream, rt-gcc), not to cc = \"{}\"",
                fl.cc
            ),
        )?;
    }
    if matches!(fl.cc.as_str(), "rt-scream" | "rt-gcc") {
        refuse_set(
            &p,
            &[("frame_budget", fl.frame_budget.is_some())],
            &format!(
                "does not apply to cc = \"{}\": libwebrtc's pacer sends at a multiple of the target \
                 (SCReAMv2 1.5 ×, goog_cc 2.5 ×), not over a frame budget",
                fl.cc
            ),
        )?;
    }
    if fl.cc == "rt-prague" {
        refuse_set(
            &p,
            &encoder_keys(fl),
            "does not apply to rt-prague (udp_prague sizes frames as rate × frame_budget)",
        )?;
    }
    let allowed: &[FlowEcn] = match fl.cc.as_str() {
        "rt-prague" | "rt-scream" => &[FlowEcn::L4s, FlowEcn::None],
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
            "applies to rate-controlled video (rt-prague, rt-gcc, rt-gcc-loss, rt-scream), not to rt-cbr",
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
pub fn build_rt(i: usize, id: u32, fl: &FlowConfig, seed: u64) -> Result<FlowEnds, SimError> {
    let cfg = rt_config_seeded(fl, seed);
    let (l4s, interval) = (cfg.ecn == Ecn::Ect1, cfg.feedback_interval);
    let snd = RtSender::new(id, cfg).map_err(|e| SimError::param(&format!("flows[{i}]."), e))?;
    // SCReAMv2 and GCC take RFC 8888 reports; the others udp_prague's per-packet ACKs.
    let rcv = match snd.report_log() {
        Some(log) => RtReceiver::with_ccfb(id, interval, log),
        None => RtReceiver::new(id),
    };
    Ok(FlowEnds {
        sender: SimSender::Dyn(Box::new(snd)),
        receiver: SimReceiver::Dyn(Box::new(rcv)),
        l4s,
    })
}
