//! TCP Reno / NewReno congestion control (RFC 5681 §3.1; Linux `tcp_reno_cong_avoid`,
//! `tcp_reno_ssthresh` in net/ipv4/tcp_cong.c). Classic ECN is treated like a loss (RFC 3168 §6.1.2).

use super::{tcp_cong_avoid_ai, tcp_slow_start, AckSample, CcState, CongestionControl, EcnMode};

/// TCP Reno: slow start, +1 packet per RTT, halve on loss or ECE.
#[derive(Clone, Debug, Default)]
pub struct Reno {
    /// Ask for classic ECN in the handshake (Linux `net.ipv4.tcp_ecn = 1`).
    pub ecn: bool,
}

impl Reno {
    /// Reno that asks for classic ECN (`ecn`) or not.
    pub fn with_ecn(ecn: bool) -> Self {
        Reno { ecn }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn requested_ecn(&self) -> EcnMode {
        if self.ecn {
            EcnMode::Classic
        } else {
            EcnMode::None
        }
    }
    /// `tcp_reno_ssthresh`: half the window, at least 2.
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        (tp.snd_cwnd >> 1).max(2)
    }
    /// `tcp_reno_cong_avoid`: slow start below ssthresh, then +1 packet per window.
    fn cong_avoid(&mut self, tp: &mut CcState, ack: &AckSample) {
        if !tp.is_cwnd_limited() {
            return;
        }
        let mut acked = ack.acked_pkts;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let w = tp.snd_cwnd;
        tcp_cong_avoid_ai(tp, w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_on_congestion_with_floor_of_two() {
        let mut r = Reno::default();
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 41;
        assert_eq!(r.ssthresh(&mut tp), 20);
        tp.snd_cwnd = 3;
        assert_eq!(r.ssthresh(&mut tp), 2);
    }

    #[test]
    fn grows_one_packet_per_rtt_in_avoidance() {
        let mut r = Reno::default();
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 20;
        tp.snd_ssthresh = 10;
        tp.packets_in_flight = 20;
        tp.is_cwnd_limited = true; // the window was filled when sending
        let ack = AckSample {
            acked_pkts: 1,
            ..Default::default()
        };
        // One window's worth of ACKs (20) adds one packet.
        for _ in 0..20 {
            r.cong_avoid(&mut tp, &ack);
        }
        assert_eq!(tp.snd_cwnd, 21);
    }

    #[test]
    fn does_not_grow_when_not_cwnd_limited() {
        let mut r = Reno::default();
        let mut tp = CcState::new(1448);
        tp.snd_cwnd = 20;
        tp.snd_ssthresh = 10;
        tp.packets_in_flight = 5;
        tp.max_packets_out = 5; // at most 5 of 20 were ever out: not cwnd-limited
        let ack = AckSample {
            acked_pkts: 1,
            ..Default::default()
        };
        for _ in 0..100 {
            r.cong_avoid(&mut tp, &ack);
        }
        assert_eq!(tp.snd_cwnd, 20);
    }
}
