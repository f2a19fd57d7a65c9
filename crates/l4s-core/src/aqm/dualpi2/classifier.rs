//! DualPI2 classifier: which of the two queues a packet joins, from its IP-ECN field.
//! Follows Linux `dualpi2_skb_classify` (`cb->ect & q->ecn_mask`) and RFC 9332 §2.3 / §A.1.

use crate::packet::Ecn;

/// The two queues of the DualQ.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueId {
    /// The low-latency L4S queue (L-queue).
    L,
    /// The Classic queue (C-queue).
    C,
}

/// Which ECN codepoints go to the L-queue (Linux `TCA_DUALPI2_ECN_MASK`).
///
/// Linux tests `ecn_bits & mask != 0` with the mask values of `enum tc_dualpi2_ecn_mask`:
/// `L4S_ECT = 1`, `CLA_ECT = 2`, `ANY_ECT = 3`. Since CE = 0b11 matches every mask, CE always
/// joins the L-queue; Not-ECT (0b00) never does. So:
///
/// | codepoint | `l4s` (1) | `classic` (2) | `any` (3) |
/// |-----------|-----------|---------------|-----------|
/// | Not-ECT   | C         | C             | C         |
/// | ECT(1)    | L         | C             | L         |
/// | ECT(0)    | C         | L             | L         |
/// | CE        | L         | L             | L         |
///
/// (`classic` is Linux's `cla_ect`: it sends ECT(0), not ECT(1), to the L-queue — a datacenter
/// setting for DCTCP-style senders that use ECT(0).)
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// `TC_DUALPI2_ECN_MASK_L4S_ECT` (default, RFC 9332): ECT(1) and CE to L.
    #[default]
    L4s,
    /// `TC_DUALPI2_ECN_MASK_CLA_ECT`: ECT(0) and CE to L.
    Classic,
    /// `TC_DUALPI2_ECN_MASK_ANY_ECT`: every ECN-capable codepoint to L.
    Any,
}

impl EcnMask {
    /// The Linux mask value.
    pub const fn bits(self) -> u8 {
        match self {
            EcnMask::L4s => 1,
            EcnMask::Classic => 2,
            EcnMask::Any => 3,
        }
    }

    /// The queue a packet with codepoint `ecn` joins.
    pub const fn classify(self, ecn: Ecn) -> QueueId {
        if ecn.bits() & self.bits() != 0 {
            QueueId::L
        } else {
            QueueId::C
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifier_table_matches_linux_mask_semantics() {
        use Ecn::*;
        use QueueId::*;
        // Rows: (codepoint, expected queue under l4s=1, classic=2, any=3), from `ecn & mask`:
        // NotEct 00: 00&01=0, 00&10=0, 00&11=0 -> C C C
        // Ect1   01: 01&01=1, 01&10=0, 01&11=1 -> L C L
        // Ect0   10: 10&01=0, 10&10=2, 10&11=2 -> C L L
        // Ce     11: 11&01=1, 11&10=2, 11&11=3 -> L L L
        let table = [
            (NotEct, [C, C, C]),
            (Ect1, [L, C, L]),
            (Ect0, [C, L, L]),
            (Ce, [L, L, L]),
        ];
        for (ecn, want) in table {
            for (mask, q) in [EcnMask::L4s, EcnMask::Classic, EcnMask::Any]
                .into_iter()
                .zip(want)
            {
                assert_eq!(mask.classify(ecn), q, "{ecn:?} under {mask:?}");
            }
        }
        assert_eq!(EcnMask::default(), EcnMask::L4s);
    }

    #[test]
    fn l_queue_packets_are_always_ecn_capable() {
        // With mask-only classification a Not-ECT packet can never reach L.
        for mask in [EcnMask::L4s, EcnMask::Classic, EcnMask::Any] {
            for ecn in Ecn::ALL {
                if mask.classify(ecn) == QueueId::L {
                    assert!(ecn.is_ecn_capable());
                }
            }
        }
    }
}
