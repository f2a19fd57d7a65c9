//! The frame window of RT-Prague's sender: which frames are still in flight, from per-packet ACKs.
//! Follows L4STeam udp_prague `udp_prague_sender.cpp` (`frame_inflight`) and `pkt_format.h` (`ackmessage_t::get_frame_stat`).
//!
//! Frames in flight = the frame being sent (if any) + frames sent − frames received − frames
//! lost. A frame is received when every packet of it is acknowledged and none is counted
//! lost; it is lost when one of its packets is (the receiver's lost counter rises: the packets
//! just before the acknowledged one that are still unanswered are marked lost, newest first);
//! a lost packet acknowledged later takes the loss back. The count is refreshed after each
//! send burst and on each ACK, as the sender loop does. Tables are bounded as udp_prague's
//! (`PKT_BUFFER_SIZE` packets, `FRM_BUFFER_SIZE` frames).

use std::collections::{HashMap, VecDeque};

/// udp_prague `PKT_BUFFER_SIZE`: packets remembered.
const PKT_BUFFER: usize = 65_536;
/// udp_prague `FRM_BUFFER_SIZE`: frames remembered.
const FRM_BUFFER: u64 = 2048;

/// `pktsend_tp`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum PktState {
    Sent,
    Recv,
    Lost,
}

/// Per-frame counters (`frame_pktsent`, `frame_pktlost`).
#[derive(Copy, Clone, Debug, Default)]
struct FrameCount {
    unanswered: i64,
    lost: i64,
}

/// The sender's frame bookkeeping.
#[derive(Clone, Debug, Default)]
pub struct FrameWindow {
    /// (state, frame) of packets `first_seq ..`.
    pkts: VecDeque<(PktState, u64)>,
    first_seq: u64,
    frames: HashMap<u64, FrameCount>,
    sent_frames: i64,
    recv_frames: i64,
    lost_frames: i64,
    /// A frame is being sent (`is_sending`) and which.
    sending: Option<u64>,
    /// The receiver's lost counter as last seen.
    packets_lost: u64,
    /// `frame_inflight`, as last refreshed.
    in_flight: i64,
}

impl FrameWindow {
    /// Frames in flight as the sender loop last computed them.
    pub fn in_flight(&self) -> i64 {
        self.in_flight
    }

    fn refresh(&mut self) {
        self.in_flight = i64::from(self.sending.is_some()) + self.sent_frames
            - self.recv_frames
            - self.lost_frames;
    }

    /// The first packet of `frame` is about to leave.
    pub fn start_frame(&mut self, frame: u64) {
        self.sending = Some(frame);
        self.frames.insert(frame, FrameCount::default());
        let floor = frame.saturating_sub(FRM_BUFFER);
        self.frames.retain(|&f, _| f >= floor);
    }

    /// Packet `seq` of the frame being sent left.
    pub fn on_sent(&mut self, seq: u64, frame: u64) {
        if self.pkts.is_empty() {
            self.first_seq = seq;
        }
        self.pkts.push_back((PktState::Sent, frame));
        if self.pkts.len() > PKT_BUFFER {
            self.pkts.pop_front();
            self.first_seq += 1;
        }
        self.frames.entry(frame).or_default().unanswered += 1;
    }

    /// A burst ended; `frame_done`: it was the frame's last.
    pub fn end_burst(&mut self, frame_done: bool) {
        if frame_done {
            if let Some(f) = self.sending.take() {
                self.sent_frames += 1;
                if self.frames.get(&f).is_some_and(|c| c.lost > 0) {
                    self.lost_frames += 1;
                }
            }
        }
        self.refresh();
    }

    /// The feedback timeout (udp_prague sets `frame_inflight = 0`; the counters stay and
    /// the next burst counts them again).
    pub fn clear_in_flight(&mut self) {
        self.in_flight = 0;
    }

    fn pkt(&mut self, seq: u64) -> Option<&mut (PktState, u64)> {
        let i = seq.checked_sub(self.first_seq)? as usize;
        self.pkts.get_mut(i)
    }

    /// Whether `frame` is the one being sent (its completion is counted when it ends).
    fn is_current(&self, frame: u64) -> bool {
        self.sending == Some(frame)
    }

    /// An ACK of data packet `ack_seq` carrying the receiver's cumulative lost count.
    pub fn on_ack(&mut self, ack_seq: u64, packets_lost: u64) {
        if let Some(&(state, f)) = self.pkt(ack_seq).map(|x| &*x) {
            let cur = self.is_current(f);
            let c = self.frames.entry(f).or_default();
            match state {
                PktState::Sent => {
                    c.unanswered -= 1;
                    if !cur && c.unanswered == 0 && c.lost == 0 {
                        self.recv_frames += 1;
                    }
                }
                PktState::Lost => {
                    c.lost -= 1;
                    if !cur && c.lost == 0 {
                        self.lost_frames -= 1;
                        if c.unanswered == 0 {
                            self.recv_frames += 1;
                        }
                    }
                }
                PktState::Recv => {}
            }
            if let Some(p) = self.pkt(ack_seq) {
                p.0 = PktState::Recv;
            }
        }
        if packets_lost > self.packets_lost {
            for i in 1..=(packets_lost - self.packets_lost) {
                let Some(seq) = ack_seq.checked_sub(i) else {
                    break;
                };
                let Some(&(PktState::Sent, f)) = self.pkt(seq).map(|x| &*x) else {
                    continue;
                };
                let cur = self.is_current(f);
                let c = self.frames.entry(f).or_default();
                c.unanswered -= 1;
                if !cur && c.lost == 0 {
                    self.lost_frames += 1;
                }
                c.lost += 1;
                if let Some(p) = self.pkt(seq) {
                    p.0 = PktState::Lost;
                }
            }
        }
        self.packets_lost = packets_lost;
        self.refresh();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two frames of two packets: in flight counts the frame being sent, then drops by one
    /// when both packets of a frame are acknowledged.
    #[test]
    fn a_frame_leaves_the_window_when_all_its_packets_are_acknowledged() {
        let mut w = FrameWindow::default();
        w.start_frame(1);
        w.on_sent(1, 1);
        w.end_burst(false);
        assert_eq!(w.in_flight(), 1);
        w.on_sent(2, 1);
        w.end_burst(true);
        assert_eq!(w.in_flight(), 1);
        w.start_frame(2);
        w.on_sent(3, 2);
        w.on_sent(4, 2);
        w.end_burst(true);
        assert_eq!(w.in_flight(), 2);
        w.on_ack(1, 0);
        assert_eq!(w.in_flight(), 2);
        w.on_ack(2, 0);
        assert_eq!(w.in_flight(), 1);
        // Packet 3 lost: the ACK of 4 reports one loss; frame 2 counts as lost, not in flight.
        w.on_ack(4, 1);
        assert_eq!(w.in_flight(), 0);
        // Packet 3 arrives late: the loss is taken back and the frame is received.
        w.on_ack(3, 0);
        assert_eq!(w.in_flight(), 0);
        assert_eq!((w.recv_frames, w.lost_frames), (2, 0));
    }

    /// udp_prague keeps the state of the last `PKT_BUFFER_SIZE` (65 536) packets: the
    /// 65 537th forgets the first.
    #[test]
    fn the_packet_ring_holds_the_last_65536_packets() {
        let mut w = FrameWindow::default();
        w.start_frame(1);
        for seq in 1..=PKT_BUFFER as u64 {
            w.on_sent(seq, 1);
        }
        assert_eq!((w.pkts.len(), w.first_seq), (PKT_BUFFER, 1));
        w.on_sent(PKT_BUFFER as u64 + 1, 1);
        assert_eq!((w.pkts.len(), w.first_seq), (PKT_BUFFER, 2));
    }
}
