//! The `[aqm]` table: `kind` selects the AQM, every other key is that AQM's parameter struct
//! (read with `deny_unknown_fields`, so a key of another AQM is an error naming the allowed ones).
//! Adding an AQM = one enum variant + one arm in `from_value`, `build` and `kind`.

use crate::error::SimError;
use crate::scenario::path_error;
use l4s_core::aqm::dualpi2::step::StepThresh;
use l4s_core::aqm::dualpi2::{DualPi2, DualPi2Params, KernelProfile, QueueId};
use l4s_core::aqm::{
    Aqm, Codel, CodelParams, Fifo, FifoEcn, FifoEcnParams, FifoParams, FqCodel, FqCodelParams, Pie,
    PieParams,
};
use l4s_core::{Ecn, Nanos, Rng};
use serde::Deserialize;
use serde_json::Value;

/// Allowed `aqm.kind` values (those built into this version).
pub const AQM_KINDS: &str = "fifo, fifo_ecn, codel, pie, fq_codel, dualpi2";

/// The `[aqm]` table, read by `kind` into that AQM's parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum AqmConfig {
    /// `kind = "fifo"`: tail-drop FIFO.
    Fifo(FifoParams),
    /// `kind = "fifo_ecn"`: FIFO with a CE-marking threshold.
    FifoEcn(FifoEcnParams),
    /// `kind = "codel"`: CoDel (RFC 8289).
    Codel(CodelParams),
    /// `kind = "pie"`: PIE (RFC 8033).
    Pie(PieParams),
    /// `kind = "fq_codel"`: FQ-CoDel (RFC 8290).
    FqCodel(FqCodelParams),
    /// `kind = "dualpi2"`: DualPI2 (RFC 9332, Linux `sch_dualpi2`).
    DualPi2(DualPi2Params),
}

fn params<T: serde::de::DeserializeOwned>(rest: Value) -> Result<T, SimError> {
    serde_path_to_error::deserialize(rest).map_err(|e| path_error("aqm", e))
}

/// `aqm.profile` (DualPI2): fill the keys whose default differs between kernel code lines
/// (`min_qlen_step`, `pi_qdelay`) from the profile, unless the scenario gives them.
fn with_profile_defaults(mut rest: Value) -> Result<Value, SimError> {
    let profile = match rest.get("profile") {
        None => KernelProfile::Mainline,
        Some(v) => KernelProfile::deserialize(v.clone()).map_err(|_| {
            SimError::field(
                "aqm.profile",
                format!("{v} is not a kernel profile; expected one of \"mainline\", \"l4steam\""),
            )
        })?,
    };
    if let Value::Object(map) = &mut rest {
        map.entry("min_qlen_step")
            .or_insert_with(|| Value::from(profile.min_qlen_step()));
        map.entry("pi_qdelay")
            .or_insert_with(|| Value::from(profile.pi_qdelay().name()));
    }
    Ok(rest)
}

impl AqmConfig {
    /// The effective values of the settings a kernel profile decides (for summary.json);
    /// Null for AQMs without profiles.
    pub fn profile_json(&self) -> Value {
        match self {
            AqmConfig::DualPi2(p) => {
                // The threshold the step AQM applies: the 1 ms default when neither key is
                // given (Linux `dualpi2_reset_default`), not two nulls.
                let (step_us, step_pkts) = match p.step_threshold() {
                    StepThresh::Time(t) => (Some(t.as_ns() as f64 / 1e3), None),
                    StepThresh::Packets(n) => (None, Some(n)),
                };
                serde_json::json!({
                "profile": p.profile.name(),
                "min_qlen_step": p.min_qlen_step,
                "pi_qdelay": p.pi_qdelay.name(),
                "step_thresh_us": step_us,
                "step_thresh_pkts": step_pkts,
                "step_thresh_default": p.step_thresh.is_none() && p.step_thresh_pkts.is_none(),
                "target_ms": p.target.as_ns() as f64 / 1e6,
                "tupdate_ms": p.tupdate.as_ns() as f64 / 1e6,
                "alpha_hz": p.alpha,
                "beta_hz": p.beta,
                "k": p.k,
                })
            }
            _ => Value::Null,
        }
    }

    /// Read the `[aqm]` table (already parsed) by its `kind`.
    pub fn from_value(v: Value) -> Result<Self, SimError> {
        let Value::Object(mut map) = v else {
            return Err(SimError::field(
                "aqm",
                "is not a table; expected [aqm] with kind = \"...\"",
            ));
        };
        let kind = match map.remove("kind") {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(SimError::field(
                    "aqm.kind",
                    format!("{other} is not a string; expected one of {AQM_KINDS}"),
                ))
            }
            None => {
                return Err(SimError::field(
                    "aqm.kind",
                    format!("missing (required); expected one of {AQM_KINDS}"),
                ))
            }
        };
        let rest = Value::Object(map);
        let cfg = match kind.as_str() {
            "fifo" => AqmConfig::Fifo(params(rest)?),
            "fifo_ecn" => AqmConfig::FifoEcn(params(rest)?),
            "codel" => AqmConfig::Codel(params(rest)?),
            "pie" => AqmConfig::Pie(params(rest)?),
            "fq_codel" => AqmConfig::FqCodel(params(rest)?),
            "dualpi2" => AqmConfig::DualPi2(params(with_profile_defaults(rest)?)?),
            _ => {
                return Err(SimError::field(
                    "aqm.kind",
                    format!("\"{kind}\" is not a known AQM; expected one of {AQM_KINDS}"),
                ))
            }
        };
        // Construct once so that parameter errors surface at load time.
        cfg.build(Rng::new(0))?;
        Ok(cfg)
    }

    /// The `kind` name of this AQM.
    pub fn kind(&self) -> &'static str {
        match self {
            AqmConfig::Fifo(_) => "fifo",
            AqmConfig::FifoEcn(_) => "fifo_ecn",
            AqmConfig::Codel(_) => "codel",
            AqmConfig::Pie(_) => "pie",
            AqmConfig::FqCodel(_) => "fq_codel",
            AqmConfig::DualPi2(_) => "dualpi2",
        }
    }

    /// Build the AQM with its own random stream. Parameter errors name `aqm.<param>`.
    pub fn build(&self, rng: Rng) -> Result<Box<dyn Aqm>, SimError> {
        let r: Result<Box<dyn Aqm>, l4s_core::ParamError> = match self {
            AqmConfig::Fifo(p) => Fifo::new(p.clone()).map(|a| Box::new(a) as Box<dyn Aqm>),
            AqmConfig::FifoEcn(p) => FifoEcn::new(p.clone()).map(|a| Box::new(a) as Box<dyn Aqm>),
            AqmConfig::Codel(p) => Codel::new(p.clone(), rng).map(|a| Box::new(a) as Box<dyn Aqm>),
            AqmConfig::Pie(p) => Pie::new(p.clone(), rng).map(|a| Box::new(a) as Box<dyn Aqm>),
            AqmConfig::FqCodel(p) => {
                FqCodel::new(p.clone(), rng).map(|a| Box::new(a) as Box<dyn Aqm>)
            }
            AqmConfig::DualPi2(p) => {
                DualPi2::new(p.clone(), rng).map(|a| Box::new(a) as Box<dyn Aqm>)
            }
        };
        r.map_err(|e| SimError::param("aqm.", e))
    }

    /// Sampling period when the scenario gives none: the AQM's tupdate, else 16 ms.
    pub fn default_sample_interval(&self) -> Nanos {
        match self {
            AqmConfig::Fifo(_)
            | AqmConfig::FifoEcn(_)
            | AqmConfig::Codel(_)
            | AqmConfig::FqCodel(_) => Nanos::from_ms(16),
            AqmConfig::Pie(p) => p.tupdate,
            AqmConfig::DualPi2(p) => p.tupdate,
        }
    }

    /// Index (into the AQM's sample order) of the queue a dequeued packet came from, given its
    /// codepoint at dequeue and whether its flow sends ECT(1). Single-queue AQMs: always 0.
    #[inline]
    pub fn queue_of(&self, ecn: Ecn, flow_is_l4s: bool) -> u8 {
        match self {
            AqmConfig::Fifo(_)
            | AqmConfig::FifoEcn(_)
            | AqmConfig::Codel(_)
            | AqmConfig::Pie(_)
            | AqmConfig::FqCodel(_) => 0,
            AqmConfig::DualPi2(p) => {
                // Senders never send CE, so a CE packet was marked here: classify it by the
                // codepoint its flow sends (ECT(1) for L4S flows, else ECT(0)).
                let original = match ecn {
                    Ecn::Ce if flow_is_l4s => Ecn::Ect1,
                    Ecn::Ce => Ecn::Ect0,
                    e => e,
                };
                // DualPi2::sample lists "L" then "C".
                match p.ecn_mask.classify(original) {
                    QueueId::L => 0,
                    QueueId::C => 1,
                }
            }
        }
    }
}
