//! The congestion controls by scenario name, as Linux's list of registered
//! `tcp_congestion_ops` is searched by name (net/ipv4/tcp_cong.c `tcp_ca_find`).

use super::{bbr, bbr3, cubic, dctcp, prague, reno, CongestionControl};

/// Options a scenario can pass to a CC on top of its name (see [`by_name_with`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CcParams {
    /// Reno / Cubic: ask for classic ECN (RFC 3168), Linux `net.ipv4.tcp_ecn = 1`.
    pub ecn: bool,
    /// DCTCP: ask for AccECN instead of classic ECN in the handshake.
    pub accecn: bool,
    /// DCTCP: mark data ECT(1) instead of ECT(0) (DCTCP as an L4S sender).
    pub ect1: bool,
    /// BBRv3: "L4S-compatible BBR": ask for AccECN and send ECT(1).
    pub l4s: bool,
    /// Seed of the CC's own random stream (BBRv3 randomises its probe wait).
    pub seed: u64,
    /// Prague: Linux `prague_cwnd_mode` (None: the 0.7 default, switch).
    pub prague_cwnd_mode: Option<prague::CwndMode>,
}

/// Build a CC by its scenario name with default options. Unknown names list the allowed ones.
pub fn by_name(name: &str) -> Result<Box<dyn CongestionControl>, crate::error::ParamError> {
    by_name_with(name, &CcParams::default())
}

/// Build a CC by its scenario name with options.
pub fn by_name_with(
    name: &str,
    params: &CcParams,
) -> Result<Box<dyn CongestionControl>, crate::error::ParamError> {
    match name {
        "reno" => Ok(Box::new(reno::Reno::with_ecn(params.ecn))),
        "cubic" => Ok(Box::new(cubic::Cubic::new(params.ecn))),
        "dctcp" => Ok(Box::new(dctcp::Dctcp::new(params.accecn, params.ect1))),
        "prague" => Ok(Box::new(prague::Prague::new(prague::PragueParams {
            cwnd_mode: params.prague_cwnd_mode.unwrap_or_default(),
            ..Default::default()
        })?)),
        "bbr1" => Ok(Box::new(bbr::Bbr::new(params.seed))),
        "bbr3" => Ok(Box::new(bbr3::Bbr3::new(params.l4s, params.seed))),
        _ => Err(crate::error::ParamError::new(
            "cc",
            format!("\"{name}\""),
            "one of reno, cubic, dctcp, prague, bbr1, bbr3",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::EcnMode;
    use crate::packet::Ecn;

    #[test]
    fn by_name_builds_every_cc_and_rejects_unknown() {
        for name in ["reno", "cubic", "dctcp", "prague", "bbr1", "bbr3"] {
            let cc = by_name(name).expect(name);
            assert_eq!(cc.name(), name);
        }
        let err = by_name("vegas").err().expect("unknown name must fail");
        assert!(err.to_string().contains("bbr3"), "{err}");
        let p = CcParams {
            ecn: true,
            accecn: true,
            ect1: true,
            l4s: true,
            seed: 1,
            ..Default::default()
        };
        assert_eq!(
            by_name_with("cubic", &p).unwrap().requested_ecn(),
            EcnMode::Classic
        );
        let d = by_name_with("dctcp", &p).unwrap();
        assert_eq!(d.requested_ecn(), EcnMode::AccEcn);
        assert_eq!(d.data_ecn(EcnMode::AccEcn), Ecn::Ect1);
        let b = by_name_with("bbr3", &p).unwrap();
        assert_eq!(b.requested_ecn(), EcnMode::AccEcn);
        assert_eq!(b.data_ecn(EcnMode::AccEcn), Ecn::Ect1);
        assert_eq!(by_name("bbr1").unwrap().requested_ecn(), EcnMode::None);
    }
}
