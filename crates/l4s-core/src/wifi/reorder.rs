//! The recipient's BlockAck reorder buffer: MPDUs of one block-ack session go up in sequence
//! order; a hole waits for the retransmission, a BlockAckReq (the originator gave up) or a timeout.
//! IEEE 802.11-2020 §10.25.6 (receive reordering); Linux mac80211 `ieee80211_sta_reorder_release`
//! (timeout HT_RX_REORDER_BUF_TIMEOUT = HZ/10, frames older than the window head discarded).

use crate::packet::Packet;
use crate::time::Nanos;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
enum Slot {
    /// Not received yet.
    Empty,
    /// Received at the instant, waiting for the frames before it.
    Held(Packet, Nanos),
    /// The originator gave up on it (BlockAckReq moved the window past it).
    Gone,
}

/// One session's reorder buffer; sequence numbers are unbounded (no modulo-4096 wrap).
#[derive(Clone, Debug)]
pub struct ReorderBuffer {
    /// Sequence number of the first slot (the window start, WinStartB).
    head: u64,
    slots: VecDeque<Slot>,
    timeout: Nanos,
    /// Frames that arrived after the window had moved past them (discarded).
    pub late_drops: u64,
    /// Times the timeout released frames across a hole.
    pub timeouts: u64,
}

impl ReorderBuffer {
    /// An empty buffer whose holes wait at most `timeout`.
    pub fn new(timeout: Nanos) -> Self {
        ReorderBuffer {
            head: 0,
            slots: VecDeque::new(),
            timeout,
            late_drops: 0,
            timeouts: 0,
        }
    }

    fn slot_mut(&mut self, seq: u64) -> Option<&mut Slot> {
        if seq < self.head {
            return None;
        }
        let i = (seq - self.head) as usize;
        while self.slots.len() <= i {
            self.slots.push_back(Slot::Empty);
        }
        Some(&mut self.slots[i])
    }

    /// Release the in-order prefix into `out`.
    fn release(&mut self, out: &mut Vec<Packet>) {
        while let Some(s) = self.slots.front() {
            match s {
                Slot::Empty => break,
                Slot::Gone => {}
                Slot::Held(p, _) => out.push(*p),
            }
            self.slots.pop_front();
            self.head += 1;
        }
    }

    /// MPDU `seq` received at `now`; whatever is now in order goes to `out`. False when the
    /// frame came after the window had moved past it and was discarded.
    pub fn receive(&mut self, seq: u64, pkt: Packet, now: Nanos, out: &mut Vec<Packet>) -> bool {
        match self.slot_mut(seq) {
            None => {
                self.late_drops += 1;
                return false;
            }
            Some(s @ Slot::Empty) => *s = Slot::Held(pkt, now),
            // A duplicate (its BlockAck was lost): discard, as the standard's duplicate detection.
            Some(_) => {}
        }
        self.release(out);
        true
    }

    /// The originator will not send `seq` again.
    pub fn skip(&mut self, seq: u64, out: &mut Vec<Packet>) {
        if let Some(s) = self.slot_mut(seq) {
            if matches!(s, Slot::Empty) {
                *s = Slot::Gone;
            }
        }
        self.release(out);
    }

    /// When a held frame's wait for a hole expires (None without a hole).
    pub fn next_timeout(&self) -> Option<Nanos> {
        if !matches!(self.slots.front(), Some(Slot::Empty)) {
            return None;
        }
        self.slots
            .iter()
            .filter_map(|s| match s {
                Slot::Held(_, at) => Some(*at + self.timeout),
                _ => None,
            })
            .min()
    }

    /// Release frames held for `timeout` or longer, skipping the holes before them.
    pub fn expire(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let last = self.slots.iter().rposition(
            |s| matches!(s, Slot::Held(_, at) if at.saturating_add(self.timeout) <= now),
        );
        if let Some(j) = last {
            self.timeouts += 1;
            for _ in 0..=j {
                if let Some(Slot::Held(p, _)) = self.slots.pop_front() {
                    out.push(p);
                }
                self.head += 1;
            }
            self.release(out);
        }
    }

    /// Frames waiting behind a hole.
    pub fn held(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Held(..)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: u64) -> Packet {
        Packet::new(id, 0, 100, crate::Ecn::NotEct)
    }

    #[test]
    fn holds_until_the_hole_fills_then_releases_in_order() {
        let mut b = ReorderBuffer::new(Nanos::from_ms(100));
        let mut out = vec![];
        b.receive(1, p(1), Nanos(10), &mut out);
        b.receive(2, p(2), Nanos(10), &mut out);
        assert!(out.is_empty());
        assert_eq!(b.next_timeout(), Some(Nanos(10) + Nanos::from_ms(100)));
        b.receive(0, p(0), Nanos(20), &mut out);
        assert_eq!(out.iter().map(|x| x.id).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(b.next_timeout(), None);
    }

    #[test]
    fn skip_and_timeout_move_the_window_and_late_frames_are_dropped() {
        let mut b = ReorderBuffer::new(Nanos::from_ms(100));
        let mut out = vec![];
        b.receive(1, p(1), Nanos(0), &mut out);
        b.skip(0, &mut out);
        assert_eq!(out.len(), 1);
        out.clear();
        b.receive(3, p(3), Nanos(0), &mut out);
        b.expire(Nanos::from_ms(99), &mut out);
        assert!(out.is_empty());
        b.expire(Nanos::from_ms(100), &mut out);
        assert_eq!(out[0].id, 3);
        assert_eq!(b.timeouts, 1);
        b.receive(2, p(2), Nanos::from_ms(101), &mut out);
        assert_eq!(b.late_drops, 1);
        assert_eq!(out.len(), 1);
    }
}
