//! Flow factory: a `[[flows]]` entry → (sender, receiver) endpoints by `cc`.
//! `cbr` builds the paced UDP source; every other name is a TCP congestion control
//! (`l4s_core::cc::by_name_with`) driving an `l4s_core::tcp::TcpSender`, with a
//! `TcpReceiver` that supports every ECN mode (a modern Linux receiver).
//!
//! `ecn` per flow: unset = what the CC asks for (Prague: AccECN + ECT(1); DCTCP: classic ECN;
//! Reno/CUBIC/BBR: none); "none" forces no ECN; "classic" RFC 3168; "accecn" AccECN feedback
//! with the CC's usual codepoint; "l4s" AccECN + ECT(1) (Prague, DCTCP, BBRv3 only).

use crate::error::SimError;
use crate::scenario::{FlowConfig, FlowEcn, FlowQdisc};
use l4s_core::cbr::{CbrConfig, CbrSink, CbrSource};
use l4s_core::cc::{by_name_with, prague::CwndMode, CcParams, EcnMode};
use l4s_core::tcp::fq_pacing::HostQdisc;
use l4s_core::tcp::gro::{GroConfig, GroReceiver};
use l4s_core::tcp::{TcpConfig, TcpReceiver, TcpSender};
use l4s_core::{Ecn, Endpoint, FlowStats, Nanos, Packet, Rng};

/// Allowed `cc` values.
pub const CC_NAMES: &str = "prague, dctcp, reno, cubic, bbr1, bbr3, cbr, rt-prague, rt-gcc, rt-cbr";
const TCP_CCS: [&str; 6] = ["prague", "dctcp", "reno", "cubic", "bbr1", "bbr3"];

/// A flow's sender, stored inline when it is TCP. With thousands of flows the simulator's
/// per-event working set is the flows' state; a `Box<dyn Endpoint>` adds a dependent cache
/// miss (slot, then object) on every event and every per-flow sample.
// The TCP variant is meant to be large: it is the point of storing it inline.
#[allow(clippy::large_enum_variant)]
pub enum SimSender {
    /// A TCP sender, inline.
    Tcp(TcpSender),
    /// Any other endpoint (the CBR source, test doubles).
    Dyn(Box<dyn Endpoint>),
}

/// A flow's receiver, stored inline when it is TCP (with or without GRO); see [`SimSender`].
#[allow(clippy::large_enum_variant)]
pub enum SimReceiver {
    /// A TCP receiver, inline.
    Tcp(TcpReceiver),
    /// A TCP receiver behind NIC moderation and GRO, inline.
    Gro(GroReceiver),
    /// Any other endpoint (the CBR sink, test doubles).
    Dyn(Box<dyn Endpoint>),
}

/// Forward every `Endpoint` method to the variant: static calls instead of a vtable.
macro_rules! forward_endpoint {
    ($t:ty, $($v:ident),+) => {
        impl Endpoint for $t {
            fn handle_packet(&mut self, pkt: Packet, now: Nanos) {
                match self { $(Self::$v(e) => e.handle_packet(pkt, now)),+ }
            }
            fn poll_transmit(&mut self, now: Nanos) -> Option<Packet> {
                match self { $(Self::$v(e) => e.poll_transmit(now)),+ }
            }
            fn poll_timeout(&self) -> Option<Nanos> {
                match self { $(Self::$v(e) => e.poll_timeout()),+ }
            }
            fn handle_timeout(&mut self, now: Nanos) {
                match self { $(Self::$v(e) => e.handle_timeout(now)),+ }
            }
            fn stats(&self) -> FlowStats {
                match self { $(Self::$v(e) => e.stats()),+ }
            }
            fn is_done(&self) -> bool {
                match self { $(Self::$v(e) => e.is_done()),+ }
            }
            fn take_app_log(&mut self) -> l4s_core::rt::AppLog {
                match self { $(Self::$v(e) => e.take_app_log()),+ }
            }
        }
    };
}
forward_endpoint!(SimSender, Tcp, Dyn);
forward_endpoint!(SimReceiver, Tcp, Gro, Dyn);

/// The two ends of one flow plus what the recorders need to know about it.
pub struct FlowEnds {
    /// Sends data (a TCP sender or a CBR source).
    pub sender: SimSender,
    /// Answers it (a TCP receiver or a CBR sink).
    pub receiver: SimReceiver,
    /// Packets of this flow carry ECT(1) ("L4S") — else "Classic".
    pub l4s: bool,
}

fn is_cbr(fl: &FlowConfig) -> bool {
    fl.cc == "cbr"
}

/// The keys of a `[[flows]]` entry that only the TCP models read, each with whether it is set.
pub(crate) fn tcp_only_keys(fl: &FlowConfig) -> [(&'static str, bool); 11] {
    [
        ("mss", fl.mss.is_some()),
        ("sack", fl.sack.is_some()),
        ("init_cwnd", fl.init_cwnd.is_some()),
        ("pacing", fl.pacing.is_some()),
        ("tso", fl.tso.is_some()),
        ("nic_rate", fl.nic_rate.is_some()),
        ("gro", fl.gro.is_some()),
        ("rx_usecs", fl.rx_usecs.is_some()),
        ("rx_frames", fl.rx_frames.is_some()),
        ("qdisc", fl.qdisc.is_some()),
        ("tcp_wmem", fl.tcp_wmem.is_some()),
    ]
}

/// Refuse the first key in `keys` that is set (it does not apply to this kind of flow), naming
/// it through `path` and saying `why`: a key the model would ignore is an error, never silent.
pub(crate) fn refuse_set(
    path: &dyn Fn(&str) -> String,
    keys: &[(&str, bool)],
    why: &str,
) -> Result<(), SimError> {
    match keys.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(SimError::field(path(name), why)),
        None => Ok(()),
    }
}

/// Check one `[[flows]]` entry; errors name `flows[i].<field>`.
pub fn validate_flow(i: usize, fl: &FlowConfig) -> Result<(), SimError> {
    let p = |f: &str| format!("flows[{i}].{f}");
    if fl.count == 0 {
        return Err(SimError::field(p("count"), "0 must be ≥ 1"));
    }
    crate::stack::validate_stack(i, fl)?;
    if fl.rtt.0 == 0 {
        return Err(SimError::field(
            p("rtt"),
            "\"0s\" must be > 0, e.g. \"40ms\"",
        ));
    }
    if let Some(stop) = fl.stop {
        if stop <= fl.start {
            return Err(SimError::field(
                p("stop"),
                format!("\"{stop}\" is not after start \"{}\"", fl.start),
            ));
        }
    }
    if crate::rt_flows::is_rt(fl) {
        return crate::rt_flows::validate_rt(i, fl);
    }
    refuse_set(
        &p,
        &[
            ("fps", fl.fps.is_some()),
            ("frame_budget", fl.frame_budget.is_some()),
            ("deadline", fl.deadline.is_some()),
            ("init_rate", fl.init_rate.is_some()),
            ("min_rate", fl.min_rate.is_some()),
            ("max_rate", fl.max_rate.is_some()),
        ],
        &format!(
            "applies to real-time flows only (cc = \"rt-prague\", \"rt-gcc\", \"rt-cbr\"), not to \"{}\"",
            fl.cc
        ),
    )?;
    if is_cbr(fl) {
        let Some(rate) = fl.rate else {
            return Err(SimError::field(
                p("rate"),
                "missing; a cbr flow needs a rate like \"10mbit\"",
            ));
        };
        if fl.bytes.is_some() {
            return Err(SimError::field(
                p("bytes"),
                "applies to TCP flows only; a cbr flow runs from start to stop",
            ));
        }
        refuse_set(
            &p,
            &tcp_only_keys(fl),
            "applies to TCP flows only, not to cc = \"cbr\"",
        )?;
        if fl.ecn == Some(FlowEcn::Accecn) {
            return Err(SimError::field(
                p("ecn"),
                "\"accecn\" needs TCP; for cbr expected one of \"none\", \"classic\" (ECT(0)), \"l4s\" (ECT(1))",
            ));
        }
        cbr_config(fl, rate)
            .validate()
            .map_err(|e| SimError::param(&p(""), e))?;
        return Ok(());
    }
    for (name, set) in [
        ("rate", fl.rate.is_some()),
        ("packet_size", fl.packet_size.is_some()),
        ("on", fl.on.is_some()),
        ("off", fl.off.is_some()),
    ] {
        if set {
            return Err(SimError::field(
                p(name),
                format!("applies to cc = \"cbr\" only, not to \"{}\"", fl.cc),
            ));
        }
    }
    if !TCP_CCS.contains(&fl.cc.as_str()) {
        return Err(SimError::field(
            p("cc"),
            format!(
                "\"{}\" is not a known congestion control; expected one of {CC_NAMES}",
                fl.cc
            ),
        ));
    }
    if fl.ecn == Some(FlowEcn::L4s) && !matches!(fl.cc.as_str(), "prague" | "dctcp" | "bbr3") {
        return Err(SimError::field(
            p("ecn"),
            format!(
                "\"l4s\" (ECT(1)) needs an L4S congestion control, not \"{}\"; expected one of \"none\", \"classic\", \"accecn\" (or cc = prague, dctcp, bbr3)",
                fl.cc
            ),
        ));
    }
    if fl.nic_rate.is_some() && fl.tso != Some(true) {
        return Err(SimError::field(
            p("nic_rate"),
            "applies with tso = true only",
        ));
    }
    for (name, set) in [
        ("rx_usecs", fl.rx_usecs.is_some()),
        ("rx_frames", fl.rx_frames.is_some()),
    ] {
        if set && fl.gro != Some(true) {
            return Err(SimError::field(p(name), "applies with gro = true only"));
        }
    }
    if let Some(g) = gro_config(fl) {
        g.validate().map_err(|e| SimError::param(&p(""), e))?;
    }
    if let Some(m) = fl.prague_cwnd_mode {
        if fl.cc != "prague" {
            return Err(SimError::field(
                p("prague_cwnd_mode"),
                format!("applies to cc = \"prague\" only, not to \"{}\"", fl.cc),
            ));
        }
        if CwndMode::from_linux(m).is_none() {
            return Err(SimError::field(
                p("prague_cwnd_mode"),
                format!("{m} is out of range; expected 0 (window), 1 (rate) or 2 (switch)"),
            ));
        }
    }
    tcp_config(fl)
        .validate()
        .map_err(|e| SimError::param(&p(""), e))?;
    Ok(())
}

/// The sender's TCP configuration for a flow entry.
fn tcp_config(fl: &FlowConfig) -> TcpConfig {
    let d = TcpConfig::default();
    TcpConfig {
        mss: fl.mss.unwrap_or(d.mss),
        ecn: fl.ecn.map(|e| match e {
            FlowEcn::None => EcnMode::None,
            FlowEcn::Classic => EcnMode::Classic,
            FlowEcn::Accecn | FlowEcn::L4s => EcnMode::AccEcn,
        }),
        sack: fl.sack.unwrap_or(d.sack),
        init_cwnd: fl.init_cwnd.unwrap_or(d.init_cwnd),
        bytes: fl.bytes,
        start: fl.start,
        stop: fl.stop,
        pacing: fl.pacing.unwrap_or(d.pacing),
        tso_nic_rate: (fl.tso == Some(true))
            .then(|| fl.nic_rate.unwrap_or(l4s_core::Rate::from_mbps(1000))),
        qdisc: host_qdisc(fl),
        tcp_wmem_max: fl.tcp_wmem,
        ..d
    }
}

/// The receiver host's GRO settings for a flow entry (None without `gro = true`).
fn gro_config(fl: &FlowConfig) -> Option<GroConfig> {
    let d = GroConfig::default();
    (fl.gro == Some(true)).then(|| GroConfig {
        rx_usecs: fl.rx_usecs.unwrap_or(d.rx_usecs),
        rx_frames: fl.rx_frames.unwrap_or(d.rx_frames),
    })
}

/// summary.json's `host` of a flow: the effective sender and receiver host settings, defaults
/// resolved (Prague's qdisc is fq unless set), so a run says which host model produced it.
/// Null for cbr sources, which have no TCP host.
pub fn host_summary(fl: &FlowConfig) -> serde_json::Value {
    if is_cbr(fl) || crate::rt_flows::is_rt(fl) {
        return serde_json::Value::Null;
    }
    let qdisc = match host_qdisc(fl) {
        HostQdisc::Fq => "fq",
        HostQdisc::None => "none",
    };
    let mut h = serde_json::json!({"qdisc": qdisc, "tso": fl.tso == Some(true),
                                   "gro": fl.gro == Some(true)});
    if let Some(t) = tcp_config(fl).tso_nic_rate {
        h["nic_rate_mbps"] = serde_json::json!(t.mbps());
    }
    if let Some(w) = fl.tcp_wmem {
        h["tcp_wmem"] = serde_json::json!(w);
    }
    if let Some(g) = gro_config(fl) {
        h["rx_usecs"] = serde_json::json!(g.rx_usecs.as_us_f64());
        h["rx_frames"] = serde_json::json!(g.rx_frames);
    }
    h
}

/// The sender host's qdisc: as set, else fq for Prague (tcp_prague.c asks for the fq qdisc
/// on every interface that carries Prague, and the L4S team's testbeds run it) and none for
/// the others (distributions default to fq_codel, which does not pace).
fn host_qdisc(fl: &FlowConfig) -> HostQdisc {
    match fl.qdisc {
        Some(FlowQdisc::Fq) => HostQdisc::Fq,
        Some(FlowQdisc::None) => HostQdisc::None,
        None if fl.cc == "prague" => HostQdisc::Fq,
        None => HostQdisc::None,
    }
}

fn cc_params(fl: &FlowConfig, seed: u64) -> CcParams {
    let e = fl.ecn;
    CcParams {
        ecn: matches!(e, Some(FlowEcn::Classic | FlowEcn::Accecn)),
        accecn: matches!(e, Some(FlowEcn::Accecn | FlowEcn::L4s)),
        ect1: e == Some(FlowEcn::L4s),
        l4s: e == Some(FlowEcn::L4s),
        seed,
        prague_cwnd_mode: fl.prague_cwnd_mode.and_then(CwndMode::from_linux),
    }
}

fn cbr_config(fl: &FlowConfig, rate: l4s_core::Rate) -> CbrConfig {
    CbrConfig {
        rate,
        packet_bytes: fl.packet_size.unwrap_or(1500),
        ecn: match fl.ecn {
            Some(FlowEcn::L4s) => Ecn::Ect1,
            Some(FlowEcn::Classic) => Ecn::Ect0,
            _ => Ecn::NotEct,
        },
        start: fl.start,
        stop: fl.stop,
        on: fl.on,
        off: fl.off,
    }
}

/// Build flow `id` (global index) from its (validated) config entry `i`.
pub fn build_flow(i: usize, id: u32, fl: &FlowConfig, seed: u64) -> Result<FlowEnds, SimError> {
    if crate::rt_flows::is_rt(fl) {
        return crate::rt_flows::build_rt(i, id, fl, seed);
    }
    if is_cbr(fl) {
        let rate = fl.rate.ok_or_else(|| {
            SimError::field(
                format!("flows[{i}].rate"),
                "missing; a cbr flow needs a rate",
            )
        })?;
        let cfg = cbr_config(fl, rate);
        let l4s = cfg.ecn == Ecn::Ect1;
        let src =
            CbrSource::new(id, cfg).map_err(|e| SimError::param(&format!("flows[{i}]."), e))?;
        return Ok(FlowEnds {
            sender: SimSender::Dyn(Box::new(src)),
            receiver: SimReceiver::Dyn(Box::new(CbrSink::new())),
            l4s,
        });
    }
    let cc_seed = Rng::derive(seed, &format!("flow/{id}/cc")).next_u64();
    let cc = by_name_with(&fl.cc, &cc_params(fl, cc_seed)).map_err(|e| {
        SimError::field(
            format!("flows[{i}].cc"),
            format!("{} is out of range; expected {}", e.value, e.expected),
        )
    })?;
    let cfg = tcp_config(fl);
    let mode = cfg.ecn.unwrap_or_else(|| cc.requested_ecn());
    let l4s = cc.data_ecn(mode) == Ecn::Ect1;
    // The receiver supports every ECN mode (its `ecn` None); the sender asks.
    // A DCTCP sender's peer runs DCTCP's receiver (classic ECE mirrors CE per packet).
    let rcv_cfg = TcpConfig {
        ecn: None,
        dctcp_ece: cc.dctcp_receiver(),
        ..cfg.clone()
    };
    Ok(FlowEnds {
        sender: SimSender::Tcp(TcpSender::new(id, cfg, cc)),
        receiver: match gro_config(fl) {
            Some(g) => SimReceiver::Gro(GroReceiver::new(TcpReceiver::new(id, &rcv_cfg), g)),
            None => SimReceiver::Tcp(TcpReceiver::new(id, &rcv_cfg)),
        },
        l4s,
    })
}
