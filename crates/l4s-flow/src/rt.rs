//! `l4slab flow --app rt`: l4s-core's real-time media sender and receiver (`rt::RtSender`,
//! `rt::RtReceiver`, udp_prague frame mode) over UDP with per-datagram ECN, wall-clock driven.
//!
//! Model time is CLOCK_MONOTONIC itself (origin 0) on both ends, so capture and send times
//! travel as they are and the receiver measures each frame's capture-to-complete latency
//! (valid when both ends share the clock: one host, or the emulator's namespaces). The frame
//! table and its summary use the simulator's definitions (`app_results::frame_summary`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use l4s_core::packet::Transport;
use l4s_core::rt::receiver::RtReceiver;
use l4s_core::rt::rfc8888::ReportLog;
use l4s_core::rt::sender::RtSender;
use l4s_core::rt::AppLog;
use l4s_core::{Ecn, Endpoint, Nanos, Packet};
use l4s_sim::app_results::{frame_summary, FrameColumns};
use l4s_sim::rt_flows::{rt_config_seeded, validate_rt, DEFAULT_DEADLINE};
use l4s_sim::scenario::{FlowConfig, FlowEcn};

use crate::clock::{monotonic_ns, set_min_timer_slack};
use crate::error::FlowError;
use crate::rtwire;
use crate::sock::{any_of_family, wait, EcnSocket, RecvBatch};
use crate::wire::{self, Body, Control, ReceiverReport};
use crate::{EmuEnv, INTERRUPTED};

/// The real-time flags of `l4slab flow` (used with `--app rt`; the scenario keys of the same
/// names, see docs/interactive.md).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RtArgs {
    /// rt: frames per second (1-255; default 60).
    #[arg(long)]
    pub fps: Option<String>,
    /// rt: time over which a frame is paced (default 1/fps).
    #[arg(long = "frame-budget")]
    pub frame_budget: Option<String>,
    /// rt: a frame later than this is a miss (default 100ms).
    #[arg(long)]
    pub deadline: Option<String>,
    /// rt: starting rate, e.g. 1mbit (rt-prague, rt-gcc).
    #[arg(long = "init-rate")]
    pub init_rate: Option<String>,
    /// rt: lowest rate (default 100kbit).
    #[arg(long = "min-rate")]
    pub min_rate: Option<String>,
    /// rt: highest rate (default 1gbit).
    #[arg(long = "max-rate")]
    pub max_rate: Option<String>,
    /// rt: largest packet, IP bytes (150-1500 here; default 1400).
    #[arg(long = "packet-size")]
    pub packet_size: Option<String>,
    /// rt: the fixed video rate of rt-cbr, e.g. 4mbit.
    #[arg(long)]
    pub rate: Option<String>,
    /// rt: encoder: frame-size coefficient of variation (default 0.21; not rt-prague).
    #[arg(long = "frame-size-cv")]
    pub frame_size_cv: Option<String>,
    /// rt: encoder: time between key frames (default: only the first; not rt-prague).
    #[arg(long = "keyframe-interval")]
    pub keyframe_interval: Option<String>,
    /// rt: encoder: key frame size in delta frames (default 4; not rt-prague).
    #[arg(long = "keyframe-ratio")]
    pub keyframe_ratio: Option<String>,
    /// rt: encoder: delay before a new target reaches the frames (default 1/fps; not rt-prague).
    #[arg(long = "encoder-lag")]
    pub encoder_lag: Option<String>,
    /// rt: RFC 8888 report interval (default 25ms; rt-scream, rt-gcc).
    #[arg(long = "feedback-interval")]
    pub feedback_interval: Option<String>,
    /// rt: rt-scream: libwebrtc BetaLoss (default 0.7).
    #[arg(long = "scream-beta-loss")]
    pub scream_beta_loss: Option<String>,
    /// rt: rt-scream: libwebrtc L4sAvgG (default 1/16).
    #[arg(long = "scream-l4s-avg-g")]
    pub scream_l4s_avg_g: Option<String>,
    /// rt: rt-scream: libwebrtc MinRefWindow, bytes (default 3000).
    #[arg(long = "scream-min-ref-window")]
    pub scream_min_ref_window: Option<String>,
    /// rt: rt-scream: libwebrtc MaxSegmentSize, bytes (default 1000).
    #[arg(long = "scream-max-segment-size")]
    pub scream_max_segment_size: Option<String>,
    /// rt: rt-scream: libwebrtc BytesInFlightHeadRoom (default 1.1).
    #[arg(long = "scream-bytes-in-flight-head-room")]
    pub scream_bytes_in_flight_head_room: Option<String>,
    /// rt: rt-scream: libwebrtc PostCongestionDelayRtts (default 100).
    #[arg(long = "scream-post-congestion-delay-rtts")]
    pub scream_post_congestion_delay_rtts: Option<String>,
    /// rt: rt-scream: libwebrtc MultiplicativeIncreaseFactor (default 0.02).
    #[arg(long = "scream-multiplicative-increase-factor")]
    pub scream_multiplicative_increase_factor: Option<String>,
    /// rt: rt-scream: libwebrtc VirtualRtt (default 25ms).
    #[arg(long = "scream-virtual-rtt")]
    pub scream_virtual_rtt: Option<String>,
    /// rt: rt-scream: libwebrtc QDelayTarget (default 100ms).
    #[arg(long = "scream-queue-delay-target")]
    pub scream_queue_delay_target: Option<String>,
    /// rt: rt-scream: libwebrtc QDelayThreshold, a fraction of the target (default 0.5).
    #[arg(long = "scream-queue-delay-threshold")]
    pub scream_queue_delay_threshold: Option<String>,
}

/// The first rt flag given, if any (they mean nothing to the bulk TCP).
pub fn first_flag(a: &RtArgs) -> Option<&'static str> {
    [
        ("--fps", &a.fps),
        ("--frame-budget", &a.frame_budget),
        ("--deadline", &a.deadline),
        ("--init-rate", &a.init_rate),
        ("--min-rate", &a.min_rate),
        ("--max-rate", &a.max_rate),
        ("--packet-size", &a.packet_size),
        ("--rate", &a.rate),
        ("--frame-size-cv", &a.frame_size_cv),
        ("--keyframe-interval", &a.keyframe_interval),
        ("--keyframe-ratio", &a.keyframe_ratio),
        ("--encoder-lag", &a.encoder_lag),
        ("--feedback-interval", &a.feedback_interval),
        ("--scream-beta-loss", &a.scream_beta_loss),
        ("--scream-l4s-avg-g", &a.scream_l4s_avg_g),
        ("--scream-min-ref-window", &a.scream_min_ref_window),
        ("--scream-max-segment-size", &a.scream_max_segment_size),
        (
            "--scream-bytes-in-flight-head-room",
            &a.scream_bytes_in_flight_head_room,
        ),
        (
            "--scream-post-congestion-delay-rtts",
            &a.scream_post_congestion_delay_rtts,
        ),
        (
            "--scream-multiplicative-increase-factor",
            &a.scream_multiplicative_increase_factor,
        ),
        ("--scream-virtual-rtt", &a.scream_virtual_rtt),
        ("--scream-queue-delay-target", &a.scream_queue_delay_target),
        (
            "--scream-queue-delay-threshold",
            &a.scream_queue_delay_threshold,
        ),
    ]
    .into_iter()
    .find_map(|(f, v)| v.is_some().then_some(f))
}

/// What the rt client runs with.
#[derive(Clone, Debug)]
pub struct RtClientOpts {
    /// Server host.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// Local address.
    pub bind: Option<std::net::IpAddr>,
    /// The scenario-style flow entry (cc rt-*), checked.
    pub flow: FlowConfig,
    /// JSON result file.
    pub json: Option<PathBuf>,
    /// Give up when the server answers nothing for this long.
    pub peer_timeout: Nanos,
    /// Busy-wait this long before a send deadline.
    pub spin: Nanos,
    /// No lines on stdout.
    pub quiet: bool,
    /// Seed of the encoder model's frame-size draws (`--seed`).
    pub seed: u64,
}

fn usage(flag: &'static str, msg: impl Into<String>) -> FlowError {
    FlowError::Usage {
        flag,
        msg: msg.into(),
    }
}

/// The scenario flow entry for `--cc`, `--ecn`, `-t` and the rt flags, checked by the
/// simulator's own rules (`rt_flows::validate_rt`); errors name the flag.
pub fn flow_config(
    cc: &str,
    ecn: Option<FlowEcn>,
    duration: Nanos,
    a: &RtArgs,
) -> Result<FlowConfig, FlowError> {
    const CCS: &str = "rt-prague, rt-gcc, rt-gcc-loss, rt-cbr, rt-scream";
    if !matches!(
        cc,
        "rt-prague" | "rt-gcc" | "rt-gcc-loss" | "rt-cbr" | "rt-scream"
    ) {
        return Err(usage(
            "--cc",
            format!("\"{cc}\" is not a real-time controller; with --app rt expected one of {CCS}"),
        ));
    }
    let dur = |flag: &'static str, v: &Option<String>| -> Result<Option<Nanos>, FlowError> {
        v.as_deref()
            .map(|s| {
                l4s_core::parse_duration(s)
                    .map_err(|e| usage(flag, format!("\"{s}\": {e}; e.g. \"16ms\", \"100ms\"")))
            })
            .transpose()
    };
    let rate = |flag: &'static str, v: &Option<String>| {
        v.as_deref()
            .map(|s| {
                l4s_core::parse_rate(s)
                    .map_err(|e| usage(flag, format!("\"{s}\": {e}; e.g. \"4mbit\"")))
            })
            .transpose()
    };
    let int = |flag: &'static str, v: &Option<String>, hi: u32| -> Result<Option<u32>, FlowError> {
        v.as_deref()
            .map(|s| {
                s.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&x| x <= hi)
                    .ok_or_else(|| {
                        usage(flag, format!("\"{s}\" is not a whole number in [0, {hi}]"))
                    })
            })
            .transpose()
    };
    let float = |flag: &'static str, v: &Option<String>| -> Result<Option<f64>, FlowError> {
        v.as_deref()
            .map(|s| {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| usage(flag, format!("\"{s}\" is not a finite number")))
            })
            .transpose()
    };
    let packet_size = int("--packet-size", &a.packet_size, 1500)?;
    let fl = FlowConfig {
        cc: cc.to_string(),
        rtt: Nanos::from_ms(1),
        count: 1,
        start: Nanos::ZERO,
        stop: Some(duration),
        bytes: None,
        ecn,
        rate: rate("--rate", &a.rate)?,
        packet_size,
        fps: int("--fps", &a.fps, 255)?,
        frame_budget: dur("--frame-budget", &a.frame_budget)?,
        deadline: dur("--deadline", &a.deadline)?,
        init_rate: rate("--init-rate", &a.init_rate)?,
        min_rate: rate("--min-rate", &a.min_rate)?,
        max_rate: rate("--max-rate", &a.max_rate)?,
        frame_size_cv: float("--frame-size-cv", &a.frame_size_cv)?,
        keyframe_interval: dur("--keyframe-interval", &a.keyframe_interval)?,
        keyframe_ratio: float("--keyframe-ratio", &a.keyframe_ratio)?,
        encoder_lag: dur("--encoder-lag", &a.encoder_lag)?,
        feedback_interval: dur("--feedback-interval", &a.feedback_interval)?,
        scream_beta_loss: float("--scream-beta-loss", &a.scream_beta_loss)?,
        scream_l4s_avg_g: float("--scream-l4s-avg-g", &a.scream_l4s_avg_g)?,
        scream_min_ref_window: float("--scream-min-ref-window", &a.scream_min_ref_window)?,
        scream_max_segment_size: float("--scream-max-segment-size", &a.scream_max_segment_size)?,
        scream_bytes_in_flight_head_room: float(
            "--scream-bytes-in-flight-head-room",
            &a.scream_bytes_in_flight_head_room,
        )?,
        scream_post_congestion_delay_rtts: float(
            "--scream-post-congestion-delay-rtts",
            &a.scream_post_congestion_delay_rtts,
        )?,
        scream_multiplicative_increase_factor: float(
            "--scream-multiplicative-increase-factor",
            &a.scream_multiplicative_increase_factor,
        )?,
        scream_virtual_rtt: dur("--scream-virtual-rtt", &a.scream_virtual_rtt)?,
        scream_queue_delay_target: dur(
            "--scream-queue-delay-target",
            &a.scream_queue_delay_target,
        )?,
        scream_queue_delay_threshold: float(
            "--scream-queue-delay-threshold",
            &a.scream_queue_delay_threshold,
        )?,
        ..FlowConfig::default()
    };
    validate_rt(0, &fl).map_err(|e| {
        let s = e.to_string();
        let key = s
            .strip_prefix("flows[0].")
            .and_then(|r| r.split(':').next())
            .unwrap_or("");
        let flag = match key {
            "fps" => "--fps",
            "frame_budget" => "--frame-budget",
            "deadline" => "--deadline",
            "init_rate" => "--init-rate",
            "min_rate" => "--min-rate",
            "max_rate" => "--max-rate",
            "packet_size" => "--packet-size",
            "rate" => "--rate",
            "ecn" => "--ecn",
            "frame_size_cv" => "--frame-size-cv",
            "keyframe_interval" => "--keyframe-interval",
            "keyframe_ratio" => "--keyframe-ratio",
            "encoder_lag" => "--encoder-lag",
            "feedback_interval" => "--feedback-interval",
            "scream_beta_loss" => "--scream-beta-loss",
            "scream_l4s_avg_g" => "--scream-l4s-avg-g",
            "scream_min_ref_window" => "--scream-min-ref-window",
            "scream_max_segment_size" => "--scream-max-segment-size",
            "scream_bytes_in_flight_head_room" => "--scream-bytes-in-flight-head-room",
            "scream_post_congestion_delay_rtts" => "--scream-post-congestion-delay-rtts",
            "scream_multiplicative_increase_factor" => "--scream-multiplicative-increase-factor",
            "scream_virtual_rtt" => "--scream-virtual-rtt",
            "scream_queue_delay_target" => "--scream-queue-delay-target",
            "scream_queue_delay_threshold" => "--scream-queue-delay-threshold",

            _ => "--cc",
        };
        let msg = s.split_once(": ").map_or(s.clone(), |(_, m)| m.to_string());
        usage(flag, msg)
    })?;
    Ok(fl)
}

/// IP + UDP header bytes for the peer's family (the model's sizes are IP packet sizes).
fn overhead(peer: &SocketAddr) -> usize {
    (if peer.is_ipv4() { 20 } else { 40 }) + wire::UDP_HEADER_BYTES
}

fn send_err(peer: SocketAddr, e: std::io::Error) -> Option<FlowError> {
    match e.kind() {
        std::io::ErrorKind::WouldBlock => None,
        _ if e.raw_os_error() == Some(libc::ENOBUFS) => None,
        _ => Some(FlowError::Unreachable { peer, source: e }),
    }
}

/// Run the rt client; returns the JSON result (also written to `--json`).
pub fn run_client(o: &RtClientOpts, emu: &EmuEnv) -> Result<serde_json::Value, FlowError> {
    if let Some(j) = &o.json {
        if j.exists() {
            return Err(FlowError::Exists {
                flag: "--json",
                path: j.display().to_string(),
            });
        }
    }
    let peer = crate::client::resolve(&o.host, o.port)?;
    let hdr = overhead(&peer);
    set_min_timer_slack();
    let local = match o.bind {
        Some(ip) => SocketAddr::new(ip, 0),
        None => any_of_family(&peer.ip()),
    };
    let mut sock = EcnSocket::bind(local)?;
    sock.connect(peer)?;
    let conn = crate::client::conn_id(0);
    let deadline = o.flow.deadline.unwrap_or(DEFAULT_DEADLINE);
    let duration = o.flow.stop.unwrap_or(Nanos::from_secs(10));
    let t_start = Nanos(monotonic_ns());
    let mut cfg = rt_config_seeded(&o.flow, o.seed);
    // The datagram format has no padding packet: no GCC probing over the wire.
    cfg.gcc_probing = false;
    cfg.start = t_start;
    cfg.stop = Some(t_start + duration);
    let stop = t_start + duration;
    let ecn_sent = cfg.ecn;
    let fb_interval = cfg.feedback_interval;
    let mut snd = RtSender::new(0, cfg).map_err(|e| usage("--cc", e.to_string()))?;
    // Controllers fed by RFC 8888 reports (SCReAMv2) ask the receiver for them in every data
    // datagram; the report bytes go to the sender's log as the simulator's receiver puts them.
    let report_log = snd.report_log();
    let ccfb_interval = report_log.as_ref().map(|_| fb_interval);
    if !o.quiet {
        println!(
            "l4s-flow: rt {} to {peer}, {:.1} s, frames every {:.2} ms, deadline {:.0} ms",
            o.flow.cc,
            duration.as_secs_f64(),
            1e3 / o.flow.fps.unwrap_or(60) as f64,
            deadline.as_ms_f64()
        );
    }
    let mut batch = RecvBatch::new();
    let mut buf = Vec::with_capacity(2048);
    let mut done: HashMap<u64, Nanos> = HashMap::new();
    let mut frame_bytes: HashMap<u64, u64> = HashMap::new();
    let (mut data_pkts, mut fb_pkts, mut foreign) = (0u64, 0u64, 0u64);
    let mut report: Option<ReceiverReport> = None;
    let mut last_rx = t_start;
    let mut closing: Option<(Nanos, Nanos)> = None;
    let mut delivered = 0u64;
    let mut csv = match &emu.flow_dir {
        Some(d) => Some(crate::report::FlowCsv::create(
            &d.join(format!("flow-{}.csv", std::process::id())),
        )?),
        None => None,
    };
    let flow_name = format!(
        "udp {}>{peer}",
        sock.local_addr()
            .map_err(|e| FlowError::io("getsockname", e))?
    );
    let mut next_csv = t_start + emu.sample_interval;
    let mut csv_prev = (0.0f64, 0u64);
    // Frames still in flight at `stop` get one deadline to complete (then they are misses).
    let end_at = stop + deadline;
    let result: Result<(), FlowError> = (|| loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Err(FlowError::Interrupted);
        }
        let now = Nanos(monotonic_ns());
        loop {
            let n = match sock.recv_batch(&mut batch) {
                Ok(n) => n,
                Err(_) if closing.is_some() => {
                    eprintln!("l4s-flow: warning: no report from {peer} (the server has gone)");
                    return Ok(());
                }
                Err(e) => return Err(FlowError::Unreachable { peer, source: e }),
            };
            for i in 0..n {
                let Some(r) = sock.received(&batch, i) else {
                    continue;
                };
                if r.truncated {
                    foreign += 1;
                    continue;
                }
                if let Ok(d) = rtwire::decode(r.data) {
                    if d.conn != conn || !d.h.feedback {
                        foreign += 1;
                        continue;
                    }
                    last_rx = now;
                    fb_pkts += 1;

                    for &(f, lat) in d.done.iter().chain(&d.frames) {
                        {
                            let sent = snd.capture_time(f);
                            if done.insert(f, sent + lat).is_none() {
                                delivered += frame_bytes.get(&f).copied().unwrap_or(0);
                            }
                        }
                    }
                    let pkt =
                        feedback_packet(&d, r.ecn.unwrap_or(Ecn::NotEct), hdr, report_log.as_ref());
                    snd.handle_packet(pkt, now);
                    continue;
                }
                match wire::decode(r.data) {
                    Ok(wire::Decoded {
                        conn: c,
                        body: Body::Control(Control::Report(rep)),
                    }) if c == conn => {
                        report = Some(rep);
                        if closing.is_some() {
                            return Ok(());
                        }
                    }
                    _ => foreign += 1,
                }
            }
            if n < crate::sock::BATCH {
                break;
            }
        }
        let now = Nanos(monotonic_ns());
        if snd.poll_timeout().is_some_and(|t| t <= now) {
            snd.handle_timeout(now);
        }
        if closing.is_none() {
            while let Some(p) = snd.poll_transmit(now) {
                let Transport::Rt(mut h) = p.transport else {
                    continue;
                };
                frame_bytes.entry(h.frame).or_insert(h.frame_bytes as u64);
                h.echo = Nanos(monotonic_ns());
                let len = (p.bytes as usize).saturating_sub(hdr);
                rtwire::encode_data(&mut buf, conn, &h, ccfb_interval, len);
                data_pkts += 1;
                if let Err(e) = sock.send(&buf, p.ecn, None) {
                    if let Some(err) = send_err(peer, e) {
                        return Err(err);
                    }
                }
            }
        }
        let now = Nanos(monotonic_ns());
        if let Some(c) = csv.as_mut() {
            if now >= next_csv {
                let t_s = now.0.saturating_sub(emu.t0_ns) as f64 / 1e9;
                let mut st = snd.stats();
                st.delivered_bytes = delivered;
                let dt = (t_s - csv_prev.0).max(1e-9);
                let tput = delivered.saturating_sub(csv_prev.1) as f64 * 8.0 / dt / 1e6;
                c.row(t_s, &flow_name, &o.flow.cc, &st, tput)?;
                csv_prev = (t_s, delivered);
                next_csv += emu.sample_interval;
            }
        }
        match closing {
            None if now >= end_at => {
                wire::encode_control(&mut buf, conn, &Control::Done);
                let _ = sock.send(&buf, Ecn::NotEct, None);
                closing = Some((now, now));
            }
            None if now.saturating_sub(last_rx) > o.peer_timeout => {
                return Err(FlowError::PeerVanished(format!(
                    "no feedback from {peer} for {:.1} s: is `l4slab flow -s --app rt` running there on port {}?",
                    now.saturating_sub(last_rx).as_secs_f64(),
                    peer.port()
                )));
            }
            Some((since, _)) if now.saturating_sub(since) >= Nanos::from_secs(2) => {
                eprintln!("l4s-flow: warning: no report from {peer} within 2 s; its receiver counts are missing");
                return Ok(());
            }
            Some((since, last)) if now.saturating_sub(last) >= Nanos::from_ms(200) => {
                wire::encode_control(&mut buf, conn, &Control::Done);
                let _ = sock.send(&buf, Ecn::NotEct, None);
                closing = Some((since, now));
            }
            _ => {}
        }
        let mut wake = match closing {
            Some((_, last)) => last + Nanos::from_ms(200),
            None => snd.poll_timeout().unwrap_or(end_at).min(end_at),
        };
        if csv.is_some() {
            wake = wake.min(next_csv);
        }
        let now = Nanos(monotonic_ns());
        let left = wake.saturating_sub(now);
        if left > o.spin {
            wait(&[(sock.fd(), false)], Some(left.0 - o.spin.0))
                .map_err(|e| FlowError::io("ppoll", e))?;
        }
    })();
    if let Some(c) = csv.as_mut() {
        c.flush()?;
    }
    let AppLog::FramesSent(sent) = snd.take_app_log() else {
        return Err(FlowError::io(
            "rt sender",
            std::io::Error::other("no frame log"),
        ));
    };
    let mut rows = FrameColumns::default();
    let summary = frame_summary(
        0,
        &sent,
        &done,
        deadline,
        t_start,
        end_at,
        duration.as_secs_f64(),
        &mut rows,
    );
    // Rows in the emulator's time base (t = 0 at L4SLAB_T0_NS) for frames.parquet.
    let t0_s = emu.t0_ns as f64 / 1e9;
    if let Some(d) = &emu.flow_dir {
        write_frames_csv(
            &d.join(format!("frames-{}.csv", std::process::id())),
            &rows,
            t0_s,
        )?;
    }
    let st = snd.stats();
    let json = serde_json::json!({
        "l4slab_version": env!("CARGO_PKG_VERSION"),
        "role": "client",
        "app": "rt",
        "server": peer.to_string(),
        "cc": o.flow.cc,
        "ecn_sent": format!("{ecn_sent:?}"),
        "clock": "CLOCK_MONOTONIC (both ends; frame latency = receiver's completion - sender's capture)",
        "realtime": crate::REALTIME.load(Ordering::Relaxed),
        "fps": o.flow.fps.unwrap_or(60),
        "duration_s": duration.as_secs_f64(),
        "data_pkts_sent": data_pkts,
        "feedback_pkts": fb_pkts,
        "foreign_datagrams": foreign,
        "rate_mbps_final": snd.rate_bps() / 1e6,
        "srtt_ms": st.srtt.as_ms_f64(),
        "ce_fed_back": st.ce_acked,
        "lost_fed_back": st.lost_pkts,
        "frames": summary,
        "receiver": report,
        "error": result.as_ref().err().map(|e| e.to_string()),
    });
    if let Some(j) = &o.json {
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        std::fs::write(j, text + "\n")
            .map_err(|e| FlowError::io(format!("write {}", j.display()), e))?;
    }
    result?;
    if !o.quiet {
        let f = &json["frames"];
        println!(
            "l4s-flow: rt {} frames, {} deadline misses, latency p50 {} p95 {} p99 {} ms, {} fps, {} Mbit/s",
            f["frames"], f["deadline_misses"], f["latency_ms"]["p50"], f["latency_ms"]["p95"],
            f["latency_ms"]["p99"], f["delivered_fps"], f["bitrate_mbps"]
        );
    }
    Ok(json)
}

fn write_frames_csv(path: &std::path::Path, r: &FrameColumns, t0_s: f64) -> Result<(), FlowError> {
    use std::io::Write;
    let f = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| FlowError::io(format!("create {}", path.display()), e))?;
    let mut out = std::io::BufWriter::new(f);
    let mut text = String::from("frame,capture_s,bytes,latency_ms,late\n");
    for i in 0..r.frame.len() {
        let lat = r.latency_ms[i];
        text.push_str(&format!(
            "{},{:.9},{},{},{}\n",
            r.frame[i],
            r.capture_s[i] - t0_s,
            r.bytes[i],
            if lat.is_finite() {
                format!("{lat:.6}")
            } else {
                String::new()
            },
            r.late[i]
        ));
    }
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| FlowError::io(format!("write {}", path.display()), e))
}

/// One receiving connection of the rt server.
struct RtConn {
    rcv: RtReceiver,
    /// RFC 8888 mode: where the receiver puts each report's bytes.
    log: Option<ReportLog>,
    rep: ReceiverReport,
    last_rx: Nanos,
    closed: Option<Nanos>,
    last_done: Option<(u64, Nanos)>,
    /// RFC 8888 mode: frames to list in the next reports, with the reports that listed them.
    announce: Vec<(u64, Nanos, u8)>,
}

impl RtConn {
    /// A receiver answering every data packet, or with RFC 8888 reports every `ccfb` (as the
    /// sender's first data datagram asks).
    fn new(ccfb: Option<Nanos>, now: Nanos) -> Self {
        let log = ccfb.map(|_| ReportLog::default());
        RtConn {
            rcv: match (ccfb, &log) {
                (Some(i), Some(l)) => RtReceiver::with_ccfb(0, i, l.clone()),
                _ => RtReceiver::new(0),
            },
            log,
            rep: ReceiverReport::default(),
            last_rx: now,
            closed: None,
            last_done: None,
            announce: Vec::new(),
        }
    }

    /// Data datagram `d` (with ECN `ecn`, `hdr` IP + UDP bytes) arrived at `at`.
    fn receive(&mut self, d: &rtwire::RtDatagram<'_>, ecn: Ecn, hdr: usize, at: Nanos) {
        let mut pkt = Packet::new(d.h.seq, 0, (d.len + hdr) as u32, ecn);
        pkt.sent_at = d.h.echo;
        pkt.transport = Transport::Rt(d.h);
        self.rcv.handle_packet(pkt, at);
        if let AppLog::FramesDone(v) = self.rcv.take_app_log() {
            for f in &v {
                let lat = f.done_at.saturating_sub(d.h.capture_at);
                self.last_done = Some((f.frame, lat));
                if self.log.is_some() {
                    self.announce.push((f.frame, lat, 0));
                }
            }
        }
    }

    /// Encode what the receiver has queued into `buf` and hand each datagram to `send`:
    /// per-packet feedback stamped `now` (the arrival it answers), or RFC 8888 reports with
    /// their bytes from the report log.
    fn feedback(
        &mut self,
        conn: u32,
        buf: &mut Vec<u8>,
        now: Nanos,
        mut send: impl FnMut(&[u8], Ecn),
    ) {
        while let Some(p) = self.rcv.poll_transmit(now) {
            let Transport::Rt(h) = p.transport else {
                continue;
            };
            if h.ccfb {
                let Some(rtcp) = self.log.as_ref().and_then(|l| l.take(h.seq)) else {
                    continue;
                };
                // Each completed frame goes in two reports (one lost report hides none).
                self.announce.drain(
                    ..self
                        .announce
                        .len()
                        .saturating_sub(rtwire::REPORT_MAX_FRAMES),
                );
                let frames: Vec<_> = self.announce.iter().map(|&(f, l, _)| (f, l)).collect();
                rtwire::encode_report(buf, conn, h.seq, &frames, &rtcp);
                self.announce.retain_mut(|(_, _, n)| {
                    *n += 1;
                    *n < 2
                });
            } else {
                rtwire::encode_feedback(buf, conn, &h, self.last_done, p.sent_at);
            }
            send(buf, p.ecn);
        }
    }
}

/// The packet the sender's model takes for feedback datagram `d` (ECN `ecn`, `hdr` IP + UDP
/// bytes); a report's RTCP bytes go to `log` under its id, as the simulator's receiver puts
/// them. `sent_at` is when the receiver answered: for per-packet feedback the arrival time of
/// the packet it answers, as the simulator's receiver stamps it.
fn feedback_packet(
    d: &rtwire::RtDatagram<'_>,
    ecn: Ecn,
    hdr: usize,
    log: Option<&ReportLog>,
) -> Packet {
    if let (Some(rtcp), Some(log)) = (d.report, log) {
        log.put(d.h.seq, rtcp.to_vec());
    }
    Packet {
        bytes: (d.len + hdr) as u32,
        ecn,
        sent_at: d.sent_at,
        transport: Transport::Rt(d.h),
        ..Default::default()
    }
}

/// `l4slab flow -s --app rt`: one `RtReceiver` per (peer, connection id), created by its first
/// data datagram; each data datagram is answered by one feedback datagram at once.
pub fn run_server(o: &crate::server::ServerOpts) -> Result<(), FlowError> {
    let addr = match o.bind {
        Some(ip) => SocketAddr::new(ip, o.port),
        None => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, o.port)),
    };
    let mut sock = match EcnSocket::bind(addr) {
        Err(FlowError::Bind { source, .. })
            if o.bind.is_none() && source.raw_os_error() == Some(libc::EAFNOSUPPORT) =>
        {
            EcnSocket::bind(SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, o.port)))?
        }
        r => r?,
    };
    set_min_timer_slack();
    if !o.quiet {
        if let Ok(a) = sock.local_addr() {
            println!("l4s-flow: rt server listening on {a} (udp)");
        }
    }
    let mut conns: HashMap<(SocketAddr, u32), RtConn> = HashMap::new();
    let mut batch = RecvBatch::new();
    let mut buf = Vec::with_capacity(2048);
    let mut served = 0u32;
    loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Ok(());
        }
        let now = Nanos(monotonic_ns());
        loop {
            let n = match sock.recv_batch(&mut batch) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(FlowError::io("recvmmsg", e)),
            };
            for i in 0..n {
                let Some(r) = sock.received(&batch, i) else {
                    continue;
                };
                if r.truncated {
                    continue;
                }
                let from = r.from;
                let hdr = overhead(&from);
                if let Ok(d) = rtwire::decode(r.data) {
                    if d.h.feedback {
                        continue;
                    }
                    let c = conns
                        .entry((from, d.conn))
                        .or_insert_with(|| RtConn::new(d.ccfb_interval, now));
                    c.last_rx = now;
                    if c.closed.is_some() {
                        continue;
                    }
                    let ecn = r.ecn.unwrap_or(Ecn::NotEct);
                    c.rep.data_pkts += 1;
                    c.rep.delivered_bytes += (d.len + hdr) as u64;
                    match ecn {
                        Ecn::NotEct => c.rep.not_ect_pkts += 1,
                        Ecn::Ect1 => c.rep.ect1_pkts += 1,
                        Ecn::Ect0 => c.rep.ect0_pkts += 1,
                        Ecn::Ce => c.rep.ce_pkts += 1,
                    }
                    if !wire::check_pattern(&r.data[rtwire::DATA_HEADER_BYTES..], d.h.seq) {
                        c.rep.bad_payload_pkts += 1;
                    }
                    // Its arrival time, read per datagram (the batch may have waited).
                    let at = Nanos(monotonic_ns());
                    c.receive(&d, ecn, hdr, at);
                    c.feedback(d.conn, &mut buf, at, |b, e| {
                        let _ = sock.send(b, e, Some(from));
                    });
                    continue;
                }
                if let Ok(wire::Decoded {
                    conn,
                    body: Body::Control(Control::Done),
                }) = wire::decode(r.data)
                {
                    if let Some(c) = conns.get_mut(&(from, conn)) {
                        wire::encode_control(&mut buf, conn, &Control::Report(c.rep));
                        let _ = sock.send(&buf, Ecn::NotEct, Some(from));
                        if c.closed.is_none() {
                            c.closed = Some(now);
                            if !o.quiet {
                                println!(
                                    "l4s-flow: rt {from} conn {conn:08x} done: {} data datagrams, {} CE, {} lost",
                                    c.rep.data_pkts,
                                    c.rep.ce_pkts,
                                    c.rcv.stats().lost_pkts
                                );
                            }
                        }
                    }
                }
            }
            if n < crate::sock::BATCH {
                break;
            }
        }
        // RFC 8888 reports due by the generator's timer (`max_wait_for_marker`, the interval).
        let now = Nanos(monotonic_ns());
        for (&(from, conn), c) in conns.iter_mut() {
            if c.closed.is_none() && c.rcv.poll_timeout().is_some_and(|t| t <= now) {
                c.rcv.handle_timeout(now);
                c.feedback(conn, &mut buf, now, |b, e| {
                    let _ = sock.send(b, e, Some(from));
                });
            }
        }
        let before = conns.len();
        conns.retain(|_, c| match c.closed {
            Some(t) => now.saturating_sub(t) < Nanos::from_ms(300),
            None => now.saturating_sub(c.last_rx) <= o.peer_timeout,
        });
        served += (before - conns.len()) as u32;
        if o.one_off && served > 0 {
            return Ok(());
        }
        let next = conns
            .values()
            .filter(|c| c.closed.is_none())
            .filter_map(|c| c.rcv.poll_timeout())
            .min();
        let left = next.map_or(100_000_000, |t| t.saturating_sub(now).0.min(100_000_000));
        if left > 0 {
            wait(&[(sock.fd(), false)], Some(left)).map_err(|e| FlowError::io("ppoll", e))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::Endpoint;

    /// IPv4 + UDP.
    const HDR: usize = 28;
    const TICK: Nanos = Nanos(100_000);

    /// One-way delay at send time `t`: 10 ms, plus `slope` × (t − 2 s) from 2 s to 3 s.
    fn owd(t: Nanos, slope: f64) -> Nanos {
        let ramp = (t.as_secs_f64() - 2.0).clamp(0.0, 1.0) * slope;
        Nanos::from_ms(10) + Nanos::from_secs_f64(ramp)
    }

    /// What `conn` has queued at `at`, through the datagrams, as the sender's packets.
    fn wire_answers(
        conn: &mut RtConn,
        out: &mut Vec<u8>,
        at: Nanos,
        log: Option<&ReportLog>,
        answers: &mut Vec<(Nanos, Packet)>,
    ) {
        let mut fbs = Vec::new();
        conn.feedback(1, out, at, |b, e| fbs.push((b.to_vec(), e)));
        for (b, e) in fbs {
            let d = rtwire::decode(&b).expect("feedback decodes");
            answers.push((at, feedback_packet(&d, e, HDR, log)));
        }
    }

    /// Run `cc` for 4 s over a path of delay `owd(·, slope)` (feedback back in 10 ms), either
    /// through l4s-flow's datagrams (`wire`) or packet to packet as the simulator hands them;
    /// the controller's rate every 100 ms.
    fn rates(cc: &str, slope: f64, wire: bool) -> Vec<f64> {
        let fl = flow_config(cc, None, Nanos::from_secs(4), &RtArgs::default()).expect("valid");
        let cfg = rt_config_seeded(&fl, 1);
        let interval = cfg.feedback_interval;
        let mut snd = RtSender::new(0, cfg).expect("valid");
        let log = snd.report_log();
        let ccfb = log.as_ref().map(|_| interval);
        let mut rcv = match (&log, ccfb) {
            (Some(l), Some(i)) => RtReceiver::with_ccfb(0, i, l.clone()),
            _ => RtReceiver::new(0),
        };
        let mut conn = RtConn::new(ccfb, Nanos::ZERO);
        let mut to_rcv: Vec<(Nanos, Packet)> = Vec::new();
        let mut to_snd: Vec<(Nanos, Packet)> = Vec::new();
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut series = Vec::new();
        let mut t = Nanos::ZERO;
        while t < Nanos::from_secs(4) {
            // Receiver side: arrivals due, then its report timer.
            to_rcv.sort_by_key(|(at, _)| *at);
            let due: Vec<_> = to_rcv.iter().filter(|(at, _)| *at <= t).cloned().collect();
            to_rcv.retain(|(at, _)| *at > t);
            let mut answers: Vec<(Nanos, Packet)> = Vec::new();
            for (at, p) in due {
                let Transport::Rt(h) = p.transport else {
                    unreachable!()
                };
                if wire {
                    rtwire::encode_data(&mut buf, 1, &h, ccfb, p.bytes as usize - HDR);
                    let d = rtwire::decode(&buf).expect("data decodes");
                    conn.receive(&d, p.ecn, HDR, at);
                    wire_answers(&mut conn, &mut out, at, log.as_ref(), &mut answers);
                } else {
                    rcv.handle_packet(p, at);
                    while let Some(f) = rcv.poll_transmit(at) {
                        answers.push((at, f));
                    }
                }
            }
            let timer = if wire {
                conn.rcv.poll_timeout()
            } else {
                rcv.poll_timeout()
            };
            if let Some(at) = timer.filter(|&at| at <= t) {
                if wire {
                    conn.rcv.handle_timeout(at);
                    wire_answers(&mut conn, &mut out, at, log.as_ref(), &mut answers);
                } else {
                    rcv.handle_timeout(at);
                    while let Some(f) = rcv.poll_transmit(at) {
                        answers.push((at, f));
                    }
                }
            }
            to_snd.extend(
                answers
                    .into_iter()
                    .map(|(at, p)| (at + Nanos::from_ms(10), p)),
            );
            // Sender side: feedback due, timers, sends.
            to_snd.sort_by_key(|(at, _)| *at);
            let due: Vec<_> = to_snd.iter().filter(|(at, _)| *at <= t).cloned().collect();
            to_snd.retain(|(at, _)| *at > t);
            for (at, p) in due {
                snd.handle_packet(p, at);
            }
            if snd.poll_timeout().is_some_and(|w| w <= t) {
                snd.handle_timeout(t);
            }
            while let Some(mut p) = snd.poll_transmit(t) {
                if let Transport::Rt(h) = &mut p.transport {
                    h.echo = t;
                }
                to_rcv.push((t + owd(t, slope), p));
            }
            t += TICK;
            if t.0.is_multiple_of(100_000_000) {
                series.push(snd.rate_bps());
            }
        }
        series
    }

    #[test]
    fn gcc_through_the_wire_sees_the_arrival_times() {
        for slope in [0.0, 0.1] {
            let wire = rates("rt-gcc", slope, true);
            let direct = rates("rt-gcc", slope, false);
            // The datagrams carry what the simulator's packets carry: the same rates, exactly.
            assert_eq!(wire, direct, "slope {slope}");
        }
        // Flat delay: the rate never falls. A 100 ms/s one-way delay ramp from 2 s: goog_cc's
        // trendline (slope × 60 deltas × gain 4 ≈ 24 ms > its 12.5 ms initial threshold)
        // signals overuse and AIMD cuts to 0.85 × the acknowledged rate.
        let flat = rates("rt-gcc", 0.0, true);
        assert!(flat.windows(2).all(|w| w[1] >= w[0]), "{flat:?}");
        let ramp = rates("rt-gcc", 0.1, true);
        let at_2s = ramp[19];
        assert_eq!(&ramp[..20], &flat[..20]);
        let low = ramp[20..].iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(low <= 0.85 * at_2s, "{ramp:?}");
    }

    #[test]
    fn scream_through_the_wire_takes_the_rfc8888_reports() {
        // SCReAMv2 reads RFC 8888 reports: through the datagrams (kind 3 carrying the RTCP
        // bytes, the interval asked in each data datagram) it runs exactly as in-process.
        for slope in [0.0, 0.1] {
            let wire = rates("rt-scream", slope, true);
            assert_eq!(wire, rates("rt-scream", slope, false), "slope {slope}");
            // It ramps up from libwebrtc's 300 kb/s start: the reports do arrive.
            assert!(wire[19] > 300_000.0, "{wire:?}");
        }
    }
}
