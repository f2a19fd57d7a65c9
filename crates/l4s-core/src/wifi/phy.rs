//! Wi-Fi PHY airtime: data rate from (standard, MCS, width, streams), preamble, PSDU symbols,
//! per-MPDU framing, and the control responses (ACK, BlockAck) at a legacy OFDM basic rate.
//! IEEE 802.11-2020 §17 (OFDM: 20 µs preamble+SIGNAL, 4 µs symbols, 16 SERVICE + 6 tail bits),
//! §21 (VHT, 802.11ac: N_SD, MCS table, VHT preamble), §27 (HE, 802.11ax: 13.6 µs symbols with
//! 0.8 µs GI, HE SU preamble), §9.3.1 (control frame sizes), §10.12 (A-MPDU subframes).

use crate::error::ParamError;
use crate::link::RateSchedule;
use crate::time::{Nanos, Rate};

/// Which PHY the rate and the preamble come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Standard {
    /// 802.11a/g OFDM timing at an arbitrary rate (`phy_rate`): 20 µs preamble, 4 µs symbols.
    Ofdm,
    /// 802.11ac VHT, long guard interval (4 µs symbols).
    Vht,
    /// 802.11ax HE SU, 0.8 µs guard interval (13.6 µs symbols), 2x HE-LTF.
    He,
}

/// QoS Data MAC header (§9.3.2.1, with QoS Control, no HT Control) in bytes.
pub const MAC_HEADER_BYTES: u32 = 26;
/// LLC/SNAP header carrying the EtherType of an IP packet.
pub const LLC_SNAP_BYTES: u32 = 8;
/// Frame check sequence.
pub const FCS_BYTES: u32 = 4;
/// A-MPDU subframe delimiter (§10.12.2).
pub const MPDU_DELIMITER_BYTES: u32 = 4;
/// ACK frame (§9.3.1.3).
pub const ACK_BYTES: u32 = 14;
/// Compressed BlockAck frame with a 64-bit bitmap (§9.3.1.8).
pub const BLOCK_ACK_BYTES: u32 = 32;
/// OFDM SERVICE field bits plus one encoder's tail bits (§17.3.5.2, §21.3.10).
const SERVICE_TAIL_BITS: u64 = 16 + 6;
/// Legacy OFDM preamble (L-STF + L-LTF, 16 µs) and SIGNAL (4 µs), ns.
const OFDM_PREAMBLE_NS: u64 = 20_000;
/// Control responses go at the 24 Mb/s basic rate of 5 GHz OFDM: 96 data bits per 4 µs.
const CONTROL_NDBPS: u64 = 96;
/// VHT-MCS and HE-MCS: (coded bits per subcarrier per stream, coding rate numerator, denominator).
const MCS_TABLE: [(u64, u64, u64); 12] = [
    (1, 1, 2),  // BPSK 1/2
    (2, 1, 2),  // QPSK 1/2
    (2, 3, 4),  // QPSK 3/4
    (4, 1, 2),  // 16-QAM 1/2
    (4, 3, 4),  // 16-QAM 3/4
    (6, 2, 3),  // 64-QAM 2/3
    (6, 3, 4),  // 64-QAM 3/4
    (6, 5, 6),  // 64-QAM 5/6
    (8, 3, 4),  // 256-QAM 3/4
    (8, 5, 6),  // 256-QAM 5/6
    (10, 3, 4), // 1024-QAM 3/4 (HE only)
    (10, 5, 6), // 1024-QAM 5/6 (HE only)
];

/// One PHY configuration's airtime arithmetic, all in integer nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Phy {
    /// Data bits per OFDM symbol (N_DBPS).
    pub ndbps: u64,
    /// Symbol duration including the guard interval, ns.
    pub symbol_ns: u64,
    /// PHY preamble and headers before the data symbols, ns.
    pub preamble_ns: u64,
    /// Whether data frames are sent as A-MPDUs (subframe delimiters and padding).
    pub aggregated: bool,
}

/// Data subcarriers N_SD for a channel width in MHz.
fn data_subcarriers(std: Standard, width_mhz: u32) -> Option<u64> {
    Some(match (std, width_mhz) {
        (Standard::Vht, 20) => 52,
        (Standard::Vht, 40) => 108,
        (Standard::Vht, 80) => 234,
        (Standard::Vht, 160) => 468,
        (Standard::He, 20) => 234,
        (Standard::He, 40) => 468,
        (Standard::He, 80) => 980,
        (Standard::He, 160) => 1960,
        _ => return None,
    })
}

/// Long training fields for `streams` spatial streams (N_VHTLTF / N_HELTF, §21.3.8.3.5).
fn training_fields(streams: u32) -> u64 {
    match streams {
        1 => 1,
        2 => 2,
        3 | 4 => 4,
        5 | 6 => 6,
        _ => 8,
    }
}

impl Phy {
    /// OFDM timing at `rate_bps` (the `phy_rate` key): N_DBPS = rate · 4 µs.
    pub fn ofdm(rate_bps: u64, aggregated: bool) -> Result<Self, ParamError> {
        let ndbps = rate_bps / 250_000;
        if !(1_000_000..=10_000_000_000).contains(&rate_bps) || ndbps == 0 {
            return Err(ParamError::new(
                "phy_rate",
                format!("{rate_bps} bit/s"),
                "a rate in [1mbit, 10gbit]",
            ));
        }
        Ok(Phy {
            ndbps,
            symbol_ns: 4_000,
            preamble_ns: OFDM_PREAMBLE_NS,
            aggregated,
        })
    }

    /// VHT or HE at (`mcs`, `width_mhz`, `streams`); N_DBPS = N_SD · N_BPSCS · R · N_SS (HE
    /// tables round down; VHT combinations where it is not an integer do not exist).
    pub fn mcs(std: Standard, mcs: u32, width_mhz: u32, streams: u32) -> Result<Self, ParamError> {
        let max_mcs = if std == Standard::He { 11 } else { 9 };
        if mcs > max_mcs {
            return Err(ParamError::new(
                "mcs",
                mcs,
                &format!("an integer in [0, {max_mcs}] for this standard"),
            ));
        }
        let Some(nsd) = data_subcarriers(std, width_mhz) else {
            return Err(ParamError::new(
                "width",
                width_mhz,
                "one of 20, 40, 80, 160 (MHz)",
            ));
        };
        if !(1..=8).contains(&streams) {
            return Err(ParamError::new("streams", streams, "an integer in [1, 8]"));
        }
        let (nbpscs, num, den) = MCS_TABLE[mcs as usize];
        let coded = nsd * nbpscs * streams as u64 * num;
        if std == Standard::Vht && !coded.is_multiple_of(den) {
            return Err(ParamError::new(
                "mcs",
                mcs,
                &format!(
                    "a VHT-MCS defined at {width_mhz} MHz with {streams} stream(s) (this one gives a \
                     fractional N_DBPS)"
                ),
            ));
        }
        let ndbps = coded / den;
        let ltf = training_fields(streams);
        let (symbol_ns, preamble_ns) = match std {
            // L-STF 8 + L-LTF 8 + L-SIG 4 + VHT-SIG-A 8 + VHT-STF 4 + VHT-SIG-B 4, VHT-LTF 4 each.
            Standard::Vht => (4_000, 36_000 + 4_000 * ltf),
            // L-STF 8 + L-LTF 8 + L-SIG 4 + RL-SIG 4 + HE-SIG-A 8 + HE-STF 4, 2x HE-LTF 7.2 each.
            Standard::He => (13_600, 36_000 + 7_200 * ltf),
            Standard::Ofdm => (4_000, OFDM_PREAMBLE_NS),
        };
        Ok(Phy {
            ndbps,
            symbol_ns,
            preamble_ns,
            aggregated: true,
        })
    }

    /// The data rate in bit/s (N_DBPS / symbol time).
    pub fn rate_bps(&self) -> f64 {
        self.ndbps as f64 * 1e9 / self.symbol_ns as f64
    }

    /// Bytes one IP packet of `ip_bytes` occupies in the PSDU: MAC header, LLC/SNAP and FCS,
    /// plus, in an A-MPDU, the delimiter and padding to a 4-byte boundary.
    #[inline]
    pub fn subframe_bytes(&self, ip_bytes: u32) -> u64 {
        let mpdu = (ip_bytes + MAC_HEADER_BYTES + LLC_SNAP_BYTES + FCS_BYTES) as u64;
        if self.aggregated {
            (MPDU_DELIMITER_BYTES as u64 + mpdu).div_ceil(4) * 4
        } else {
            mpdu
        }
    }

    /// Airtime of a PPDU carrying `psdu_bytes`: preamble + ⌈(SERVICE + 8·L + tail)/N_DBPS⌉
    /// symbols.
    #[inline]
    pub fn ppdu_ns(&self, psdu_bytes: u64) -> u64 {
        self.preamble_ns
            + (SERVICE_TAIL_BITS + 8 * psdu_bytes).div_ceil(self.ndbps) * self.symbol_ns
    }

    /// Data-symbol airtime of one subframe alone (no preamble): what mac80211's AQL charges a
    /// packet (`ieee80211_calc_expected_tx_airtime` is likewise a rate-based estimate).
    #[inline]
    pub fn subframe_airtime_ns(&self, ip_bytes: u32) -> u64 {
        (8 * self.subframe_bytes(ip_bytes) * self.symbol_ns).div_ceil(self.ndbps)
    }

    /// The response after SIFS: a compressed BlockAck to an A-MPDU, an ACK to a single MPDU,
    /// at the 24 Mb/s legacy OFDM basic rate.
    pub fn response_ns(&self) -> u64 {
        let bytes = if self.aggregated {
            BLOCK_ACK_BYTES
        } else {
            ACK_BYTES
        };
        OFDM_PREAMBLE_NS + (SERVICE_TAIL_BITS + 8 * bytes as u64).div_ceil(CONTROL_NDBPS) * 4_000
    }
}

/// A PHY rate that changes over time (`rate_trace`, for rate-adaptation studies): 802.11a OFDM
/// timing as with `phy_rate`, each rate in force from its instant until the next one; the last
/// one holds. A PPDU's airtime uses the rate in force at its start.
#[derive(Clone, Debug, PartialEq)]
pub struct RateTrace {
    schedule: RateSchedule,
    phys: Vec<Phy>,
}

impl RateTrace {
    /// From `(instant, rate in bit/s)` points: the first at 0, instants strictly increasing,
    /// each rate in [1 Mb/s, 10 Gb/s] (N_DBPS = rate · 4 µs, rounded down).
    pub fn new(points: &[(Nanos, u64)], aggregated: bool) -> Result<Self, ParamError> {
        if points.first().is_none_or(|p| p.0 != Nanos::ZERO) {
            return Err(ParamError::new(
                "rate_trace",
                "",
                "points from time 0 (the first point must be at 0)",
            ));
        }
        if let Some(w) = points.windows(2).find(|w| w[1].0 <= w[0].0) {
            return Err(ParamError::new(
                "rate_trace",
                w[1].0,
                "instants strictly increasing",
            ));
        }
        let steps: Vec<(Nanos, Rate)> = points[1..].iter().map(|&(t, r)| (t, Rate(r))).collect();
        let schedule = RateSchedule::with_steps(Rate(points[0].1), &steps).map_err(|e| {
            ParamError::new("rate_trace", e.to_string(), "strictly increasing instants")
        })?;
        let phys = points
            .iter()
            .map(|&(_, r)| Phy::ofdm(r, aggregated))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                ParamError::new("rate_trace", e.to_string(), "rates in [1mbit, 10gbit]")
            })?;
        Ok(RateTrace { schedule, phys })
    }

    /// The rates as a piecewise-constant schedule.
    pub fn schedule(&self) -> &RateSchedule {
        &self.schedule
    }

    /// The PHY of each point, in order.
    pub fn phys(&self) -> &[Phy] {
        &self.phys
    }

    /// Index of the point in force at `t`, searching forward from `hint`.
    #[inline]
    pub fn index_at(&self, t: Nanos, hint: usize) -> usize {
        self.schedule.segment(t, hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vht_rates_match_the_standard_table() {
        // §21.5 tables, long GI: 80 MHz 1 SS MCS 9 = 390 Mb/s; 20 MHz 1 SS MCS 7 = 65 Mb/s.
        let p = Phy::mcs(Standard::Vht, 9, 80, 1).unwrap();
        assert_eq!(p.ndbps, 1560);
        assert!((p.rate_bps() - 390e6).abs() < 1.0);
        let p = Phy::mcs(Standard::Vht, 7, 20, 1).unwrap();
        assert!((p.rate_bps() - 65e6).abs() < 1.0);
        assert_eq!(p.preamble_ns, 40_000);
        // MCS 9 at 20 MHz with one stream does not exist in VHT.
        assert!(Phy::mcs(Standard::Vht, 9, 20, 1).is_err());
    }

    #[test]
    fn he_rates_match_the_standard_table() {
        // §27.5 tables, 0.8 µs GI: 80 MHz 1 SS HE-MCS 11 N_DBPS 8166 → 600.4 Mb/s.
        let p = Phy::mcs(Standard::He, 11, 80, 1).unwrap();
        assert_eq!(p.ndbps, 8166);
        assert!((p.rate_bps() / 1e6 - 600.44).abs() < 0.01);
        assert!(Phy::mcs(Standard::He, 12, 80, 1).is_err());
        assert!(Phy::mcs(Standard::He, 5, 30, 1).is_err());
    }

    #[test]
    fn control_responses_at_24_mbit() {
        // ACK: 16+112+6 bits → 2 symbols → 28 µs; BlockAck: 16+256+6 → 3 symbols → 32 µs.
        assert_eq!(Phy::ofdm(54_000_000, false).unwrap().response_ns(), 28_000);
        assert_eq!(Phy::ofdm(54_000_000, true).unwrap().response_ns(), 32_000);
    }

    #[test]
    fn ofdm_54_mbit_data_frame() {
        // 1500 B IP + 38 B MAC = 1538 B: 16+12304+6 = 12326 bits / 216 → 58 symbols.
        let p = Phy::ofdm(54_000_000, false).unwrap();
        assert_eq!(p.subframe_bytes(1500), 1538);
        assert_eq!(p.ppdu_ns(1538), 20_000 + 58 * 4_000);
        // Aggregated: 4 + 1538 = 1542 → padded to 1544.
        assert_eq!(
            Phy::ofdm(54_000_000, true).unwrap().subframe_bytes(1500),
            1544
        );
        assert!(Phy::ofdm(500_000, false).is_err());
    }
}
