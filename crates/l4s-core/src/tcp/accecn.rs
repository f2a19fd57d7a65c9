//! Accurate ECN feedback (draft-ietf-tcpm-accurate-ecn): handshake codepoints, the ACE counter
//! and the sender's delta with the "safer" wrap rule (Linux `tcp_accecn_process`, tcp_input.c).
//!
//! Simplification: the AccECN TCP option (byte counters) is neither sent nor used; the sender
//! relies on the 3-bit ACE field alone, disambiguated by the safer-delta rule below unless
//! ACKs are routinely thinned (Linux's `pkts_acked_ewma` guard, [`AckThinning`]).

use crate::cc::EcnMode;
use crate::packet::{tcp_flags, Ecn};

/// Initial value of the CE packet counters r.cep and s.cep (draft §3.2.1): 5, so that a zeroed
/// ACE field (a middlebox clearing the flags) is distinguishable from "no CE yet".
pub const CEP_INIT: u64 = 5;
/// The ACE field is 3 bits wide.
pub const ACE_MASK: u64 = 0b111;

/// SYN flags of each ECN request: classic RFC 3168 §6.1.1 sets ECE+CWR; AccECN §3.1.1 sets
/// AE+CWR+ECE.
pub fn syn_flags(requested: EcnMode) -> u16 {
    match requested {
        EcnMode::None => 0,
        EcnMode::Classic => tcp_flags::ECE | tcp_flags::CWR,
        EcnMode::AccEcn => tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE,
    }
}

/// What the client asked for, read from the SYN's flags.
pub fn requested_by_syn(flags: u16) -> EcnMode {
    let all = tcp_flags::AE | tcp_flags::CWR | tcp_flags::ECE;
    if flags & all == all {
        EcnMode::AccEcn
    } else if flags & (tcp_flags::ECE | tcp_flags::CWR) == (tcp_flags::ECE | tcp_flags::CWR) {
        EcnMode::Classic
    } else {
        EcnMode::None
    }
}

/// The server's choice given the client's request and its own support (AccECN support implies
/// classic support, as in Linux). An AccECN request to a classic-only server falls back to
/// classic: that server sees ECE+CWR and ignores AE (draft §3.1.2 table).
pub fn server_choice(requested: EcnMode, supported: EcnMode) -> EcnMode {
    match (requested, supported) {
        (EcnMode::AccEcn, EcnMode::AccEcn) => EcnMode::AccEcn,
        (EcnMode::AccEcn | EcnMode::Classic, EcnMode::AccEcn | EcnMode::Classic) => {
            EcnMode::Classic
        }
        _ => EcnMode::None,
    }
}

/// ACE value with which an AccECN SYN/ACK reflects the SYN's IP-ECN field, and with which the
/// client's first ACK reflects the SYN/ACK's (draft §3.1.2 / §3.2.2.1):
/// Not-ECT 0b010, ECT(1) 0b011, ECT(0) 0b100, CE 0b110 (as AE,CWR,ECE).
pub fn handshake_ace(ip_ecn: Ecn) -> u8 {
    match ip_ecn {
        Ecn::NotEct => 0b010,
        Ecn::Ect1 => 0b011,
        Ecn::Ect0 => 0b100,
        Ecn::Ce => 0b110,
    }
}

/// Inverse of [`handshake_ace`]; None for the values the table does not use.
pub fn ecn_from_handshake_ace(ace: u8) -> Option<Ecn> {
    match ace {
        0b010 => Some(Ecn::NotEct),
        0b011 => Some(Ecn::Ect1),
        0b100 => Some(Ecn::Ect0),
        0b110 => Some(Ecn::Ce),
        _ => None,
    }
}

/// The client's view of the negotiation from the SYN/ACK's AE,CWR,ECE (draft §3.1.2):
/// an AccECN request answered with 000 means no ECN, 001 (ECE only) a classic server,
/// anything else an AccECN server. A classic request succeeds on ECE without CWR (RFC 3168).
/// Simplification: the draft's reserved combinations 101 and 111 are taken as AccECN.
pub fn client_result(requested: EcnMode, synack_flags: u16) -> EcnMode {
    let ece = synack_flags & tcp_flags::ECE != 0;
    let cwr = synack_flags & tcp_flags::CWR != 0;
    let ae = synack_flags & tcp_flags::AE != 0;
    match requested {
        EcnMode::None => EcnMode::None,
        EcnMode::Classic => {
            if ece && !cwr {
                EcnMode::Classic
            } else {
                EcnMode::None
            }
        }
        EcnMode::AccEcn => match (ae, cwr, ece) {
            (false, false, false) => EcnMode::None,
            (false, false, true) => EcnMode::Classic,
            _ => EcnMode::AccEcn,
        },
    }
}

/// The sender's estimate of newly CE-marked packets from one ACK (Linux `tcp_accecn_process`):
/// `delta = (ACE − s.cep) mod 8`; when the ACK newly delivers `newly_acked_pkts` N ≥ 8 packets
/// the counter may have wrapped, so assume the most marks consistent with ACE:
/// `N − ((N − delta) mod 8)`. Both values are ≡ delta (mod 8), so `s.cep` stays in step with ACE.
pub fn ace_delta(ace: u8, s_cep: u64, newly_acked_pkts: u64) -> u64 {
    let delta = (ace as u64).wrapping_sub(s_cep) & ACE_MASK;
    if newly_acked_pkts <= ACE_MASK {
        return delta;
    }
    newly_acked_pkts - (newly_acked_pkts.wrapping_sub(delta) & ACE_MASK)
}

/// Linux's guard against ACK thinning/compression (`pkts_acked_ewma` in
/// `__tcp_accecn_process`): an EWMA (weight 1/64, 6 fractional bits) of the packets each ACK
/// newly delivers. When ACKs routinely cover more than `ACK_COMP_THRESH` = 4 packets, large
/// ACKs are normal rather than a sign of lost ACKs, and the plain modulo delta is used instead
/// of the safer one.
#[derive(Clone, Debug, Default)]
pub struct AckThinning {
    /// EWMA of packets newly delivered per ACK, fixed point with 6 fractional bits.
    pub pkts_acked_ewma: u32,
}

impl AckThinning {
    const WEIGHT_SHIFT: u32 = 6;
    const PREC: u32 = 6;
    const ACK_COMP_THRESH: u32 = 4;

    /// Fold one ACK's newly delivered packet count into the EWMA.
    pub fn update(&mut self, delivered_pkts: u64) {
        if delivered_pkts == 0 {
            return;
        }
        let d = (delivered_pkts.min(u32::MAX as u64 >> Self::PREC) as u32) << Self::PREC;
        let e = if self.pkts_acked_ewma == 0 {
            d
        } else {
            let e = self.pkts_acked_ewma as u64;
            ((((e << Self::WEIGHT_SHIFT) - e) + d as u64) >> Self::WEIGHT_SHIFT) as u32
        };
        self.pkts_acked_ewma = e.min(0xFFFF);
    }

    /// ACKs are thinned: trust the plain delta.
    pub fn compressed(&self) -> bool {
        self.pkts_acked_ewma > Self::ACK_COMP_THRESH << Self::PREC
    }

    /// The CE delta for one ACK, after folding its delivered count into the EWMA.
    pub fn delta(&mut self, ace: u8, s_cep: u64, newly_acked_pkts: u64) -> u64 {
        self.update(newly_acked_pkts);
        if self.compressed() {
            ace_delta(ace, s_cep, 0)
        } else {
            ace_delta(ace, s_cep, newly_acked_pkts)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synack_reflection_table() {
        // draft-ietf-tcpm-accurate-ecn Table 3 (AE,CWR,ECE on the SYN/ACK).
        assert_eq!(handshake_ace(Ecn::NotEct), 0b010);
        assert_eq!(handshake_ace(Ecn::Ect1), 0b011);
        assert_eq!(handshake_ace(Ecn::Ect0), 0b100);
        assert_eq!(handshake_ace(Ecn::Ce), 0b110);
        for e in Ecn::ALL {
            assert_eq!(ecn_from_handshake_ace(handshake_ace(e)), Some(e));
        }
    }

    #[test]
    fn negotiation_matrix() {
        use EcnMode::*;
        // (client request, server support) -> result, per RFC 3168 §6.1.1 and draft §3.1.2.
        let cases = [
            (None, None, None),
            (None, Classic, None),
            (None, AccEcn, None),
            (Classic, None, None),
            (Classic, Classic, Classic),
            (Classic, AccEcn, Classic),
            (AccEcn, None, None),
            (AccEcn, Classic, Classic),
            (AccEcn, AccEcn, AccEcn),
        ];
        for (req, sup, want) in cases {
            let syn = syn_flags(req);
            let server = server_choice(requested_by_syn(syn), sup);
            assert_eq!(server, want, "server side of {req:?} -> {sup:?}");
            // Build the SYN/ACK flags the server would send.
            let synack = match server {
                None => 0,
                Classic => tcp_flags::ECE,
                AccEcn => {
                    let mut h = crate::packet::TcpHeader::default();
                    h.set_ace(handshake_ace(Ecn::NotEct));
                    h.flags
                }
            };
            assert_eq!(
                client_result(req, synack),
                want,
                "client side of {req:?} -> {sup:?}"
            );
        }
    }

    #[test]
    fn ace_delta_below_eight_is_plain_modulo() {
        // s.cep = 5, three marks: ACE = 8 mod 8 = 0 -> (0 - 5) mod 8 = 3.
        assert_eq!(ace_delta(0, 5, 6), 3);
        // No change.
        assert_eq!(ace_delta(5, 5, 7), 0);
    }

    #[test]
    fn ace_delta_safer_rule_on_wrap() {
        // One ACK covers N packets of which m were CE; ACE = (5 + m) mod 8, s.cep = 5.
        let ace = |m: u64| ((5 + m) & 7) as u8;
        // m = 9, N = 9: delta = 1; safe = 9 - ((9-1) mod 8) = 9 - 0 = 9 (exact).
        assert_eq!(ace_delta(ace(9), 5, 9), 9);
        // m = 16, N = 16: delta = 0; safe = 16 - (16 mod 8) = 16 (exact; plain modulo says 0).
        assert_eq!(ace_delta(ace(16), 5, 16), 16);
        // m = 20, N = 20: delta = 4; safe = 20 - (16 mod 8) = 20.
        assert_eq!(ace_delta(ace(20), 5, 20), 20);
        // With lost ACKs the one ACK covers more packets than were marked, N = 20:
        // m = 9: delta = 1; safe = 20 - (19 mod 8) = 20 - 3 = 17 (over-estimate, the safe side).
        assert_eq!(ace_delta(ace(9), 5, 20), 17);
        // m = 16: delta = 0; safe = 20 - (20 mod 8) = 16 (exact).
        assert_eq!(ace_delta(ace(16), 5, 20), 16);
        // m = 2 of N = 16: delta = 2; safe = 16 - (14 mod 8) = 10 (over-estimate).
        assert_eq!(ace_delta(ace(2), 5, 16), 10);
        // The result is always congruent to the plain delta mod 8.
        for n in 8..40u64 {
            for m in 0..=n {
                let d = ace_delta(ace(m), 5, n);
                assert_eq!(d & 7, m & 7);
                assert!(d >= m && d <= n, "m={m} n={n} d={d}");
            }
        }
    }
}

#[cfg(test)]
mod thinning_tests {
    use super::*;

    #[test]
    fn ewma_of_packets_per_ack() {
        let mut t = AckThinning::default();
        // First ACK of 2 packets: ewma = 2·64 = 128.
        t.update(2);
        assert_eq!(t.pkts_acked_ewma, 128);
        // Then one of 20: (128·64 − 128 + 20·64) >> 6 = 9344 >> 6 = 146 (≈ 2.28 packets).
        t.update(20);
        assert_eq!(t.pkts_acked_ewma, 146);
        assert!(!t.compressed());
        // With the safer rule: m = 9 marks among N = 20 -> 17 (accecn safer delta).
        let mut t2 = t.clone();
        assert_eq!(t2.delta(((5 + 9) & 7) as u8, 5, 20), 17);
        // Starting from thinned ACKs of 8 packets: ewma = 512 > 4·64, so the plain delta
        // (9 mod 8 = 1) is used for the next big ACK.
        let mut t3 = AckThinning::default();
        t3.update(8);
        assert!(t3.compressed());
        assert_eq!(t3.delta(((5 + 9) & 7) as u8, 5, 20), 1);
    }
}
