//! Live statistics for the dashboard: per direction and per class (L4S = ECT(1) or CE, as
//! DualPI2's classifier with ecn_mask ECT(1) sorts them; Classic = the rest) throughput,
//! queue delay per queue, p', marks and drops per second, written as one JSON line per tick.

use l4s_core::aqm::QueueSample;
use l4s_core::Nanos;
use serde_json::{json, Value};

/// The ECN codepoint of a raw IPv4/IPv6 packet (None for anything else or a short buffer).
pub fn ecn_of(pkt: &[u8]) -> Option<u8> {
    match pkt.first()? >> 4 {
        4 => Some(pkt.get(1)? & 0b11),
        // IPv6: the traffic class spans the low nibble of byte 0 and the high nibble of byte 1.
        6 => Some((pkt.get(1)? >> 4) & 0b11),
        _ => None,
    }
}

/// True for packets DualPI2 would put in its L queue by default: ECT(1) (0b01) or CE (0b11).
pub fn is_l4s(pkt: &[u8]) -> bool {
    matches!(ecn_of(pkt), Some(0b01) | Some(0b11))
}

/// Counters of one direction between ticks.
#[derive(Clone, Debug, Default)]
pub struct DirCounters {
    /// L4S bytes delivered since the last tick.
    pub l4s_bytes: u64,
    /// Classic bytes delivered since the last tick.
    pub classic_bytes: u64,
    last_marks: u64,
    last_drops: u64,
}

impl DirCounters {
    /// Count one delivered packet.
    pub fn delivered(&mut self, pkt: &[u8]) {
        if is_l4s(pkt) {
            self.l4s_bytes += pkt.len() as u64;
        } else {
            self.classic_bytes += pkt.len() as u64;
        }
    }

    /// The dashboard record of this direction over `dt`, then reset for the next tick.
    pub fn tick(&mut self, name: &str, dt: Nanos, queues: &[QueueSample]) -> Value {
        let secs = dt.as_secs_f64().max(1e-9);
        let marks: u64 = queues.iter().map(|q| q.marks).sum();
        let drops: u64 = queues.iter().map(|q| q.drops).sum();
        let p_prime = queues
            .iter()
            .map(|q| q.p_prime)
            .find(|p| p.is_finite())
            .unwrap_or(0.0);
        let v = json!({
            "name": name,
            "l4s_mbps": self.l4s_bytes as f64 * 8.0 / secs / 1e6,
            "classic_mbps": self.classic_bytes as f64 * 8.0 / secs / 1e6,
            "queues": queues.iter().map(|q| json!({
                "name": q.name,
                "sojourn_ms": q.head_sojourn.as_ms_f64(),
                "backlog_pkts": q.backlog_pkts,
            })).collect::<Vec<_>>(),
            "p_prime": p_prime,
            "marks_per_s": marks.saturating_sub(self.last_marks) as f64 / secs,
            "drops_per_s": drops.saturating_sub(self.last_drops) as f64 / secs,
        });
        self.l4s_bytes = 0;
        self.classic_bytes = 0;
        self.last_marks = marks;
        self.last_drops = drops;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_bits_of_both_ip_versions() {
        // IPv4 TOS 0x01 = ECT(1); IPv6 traffic class 0x03 = CE (byte 1 high nibble 0x3).
        assert_eq!(ecn_of(&[0x45, 0x01]), Some(1));
        assert_eq!(ecn_of(&[0x60, 0x30]), Some(3));
        assert_eq!(ecn_of(&[0x45, 0x02]), Some(2));
        assert_eq!(ecn_of(&[0x45]), None);
        assert_eq!(ecn_of(&[0x10, 0x01]), None);
        assert!(is_l4s(&[0x45, 0x03]) && !is_l4s(&[0x45, 0x02]));
    }

    #[test]
    fn tick_rates_per_second() {
        let mut c = DirCounters::default();
        c.delivered(&[0x45, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]); // 10 B L4S
        c.delivered(&[0x45, 0x00, 0, 0, 0]); // 5 B Classic
        let v = c.tick("uplink", Nanos::from_ms(500), &[]);
        assert_eq!(v["l4s_mbps"], 10.0 * 8.0 / 0.5 / 1e6);
        assert_eq!(v["classic_mbps"], 5.0 * 8.0 / 0.5 / 1e6);
        assert_eq!(c.l4s_bytes, 0);
    }
}
