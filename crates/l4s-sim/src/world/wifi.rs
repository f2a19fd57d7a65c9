//! The Wi-Fi bottleneck in the simulator: the AQM feeds the MAC's driver queue whenever it has
//! room (the AQM's dequeue happens when the driver pulls, as with mac80211's AQL), TCP ACKs
//! contend on the same medium, and what the recipient's reorder buffer releases goes on the
//! flows' delay lines. The model is `l4s_core::wifi` (IEEE 802.11-2020 EDCA, A-MPDU, block ack).

use super::World;
use crate::engine::Kind;
use crate::wifi_config::WifiRecord;
use l4s_core::wifi::{Dir, WifiMac, WifiParams};
use l4s_core::{Nanos, Packet, Rng};

/// The MAC and the engine's bookkeeping around it.
pub(super) struct WifiHop {
    pub(super) mac: WifiMac,
    /// TCP ACKs cross the medium (else they take the usual ACK path).
    pub(super) uplink: bool,
    armed: Option<Nanos>,
    /// The driver queue's rows and the summary's `wifi` block.
    pub(super) record: WifiRecord,
}

impl WifiHop {
    pub(super) fn new(p: WifiParams, uplink: bool, rng: Rng) -> Result<Self, crate::SimError> {
        let mac = WifiMac::new(p, rng).map_err(|e| crate::SimError::param("link.wifi.", e))?;
        Ok(WifiHop {
            mac,
            uplink,
            armed: None,
            record: WifiRecord::default(),
        })
    }
}

impl World {
    /// Register the driver queue with the recorder (after both exist).
    pub(super) fn wifi_init(&mut self) {
        if let Some(h) = &mut self.net.wifi {
            h.record.register(&mut self.rec, &h.mac);
        }
    }

    /// Move packets from the AQM to the driver queue while it has room.
    pub(super) fn wifi_pull(&mut self, now: Nanos) {
        while self.net.wifi.as_ref().is_some_and(|h| h.mac.has_room())
            && !self.net.bn.aqm.is_empty()
        {
            let Some(p) = self.aqm_dequeue(now) else {
                break;
            };
            let Some(h) = self.net.wifi.as_mut() else {
                break;
            };
            h.mac.push_down(p, now);
            h.record.note_pending(&h.mac, now);
        }
        self.arm_wifi();
        self.arm_aqm();
    }

    /// A TCP ACK from a receiver enters the client station's uplink queue; false when ACKs do
    /// not cross the medium.
    pub(super) fn wifi_up(&mut self, p: Packet) -> bool {
        let now = self.now;
        let Some(h) = self.net.wifi.as_mut().filter(|h| h.uplink) else {
            return false;
        };
        if !h.mac.push_up(p, now) {
            self.net.totals.acks_dropped += 1;
        }
        self.arm_wifi();
        true
    }

    fn arm_wifi(&mut self) {
        let now = self.now;
        let Some(h) = self.net.wifi.as_mut() else {
            return;
        };
        if let Some(t) = h.mac.poll_timeout() {
            let t = t.max(now);
            if h.armed != Some(t) {
                h.armed = Some(t);
                self.ev.push(t, Kind::Wifi, 0);
            }
        }
    }

    /// The MAC's timer: run the medium, hand over what it delivered, refill the driver queue.
    pub(super) fn wifi_timer(&mut self, t: Nanos) {
        let Some(h) = self.net.wifi.as_mut() else {
            return;
        };
        if h.armed != Some(t) {
            return;
        }
        self.events += 1;
        h.armed = None;
        h.mac.handle_timeout(t);
        let after_warmup = t >= self.rec.warmup;
        for (flow, wait) in h.mac.drain_first_tx() {
            self.rec.on_packet(t, flow, h.record.driver_q, wait, 0);
        }
        while let Some((dir, p)) = self.net.wifi.as_mut().and_then(|h| h.mac.poll_dropped()) {
            match dir {
                Dir::Down => {
                    self.net.totals.link_lost_pkts += 1;
                    self.rec.counters[p.flow as usize].link_losses += 1;
                }
                Dir::Up => self.net.totals.acks_dropped += 1,
            }
        }
        while let Some((dir, p)) = self.net.wifi.as_mut().and_then(|h| h.mac.poll_delivered()) {
            if after_warmup {
                if let Some(h) = self.net.wifi.as_mut() {
                    h.record.on_mac_delivered(dir, (t - p.enqueued_at).0);
                }
            }
            match dir {
                Dir::Down => self.propagate(p, t, t),
                Dir::Up => self.onto_rev_line(p, t),
            }
        }
        self.wifi_pull(t);
        self.arm_wifi();
    }

    /// Update the driver queue's row before a sample.
    pub(super) fn wifi_sample(&mut self, t: Nanos) {
        if let Some(h) = &mut self.net.wifi {
            h.record.sample(&mut self.rec, &h.mac, t);
        }
    }

    /// End of warmup: the `wifi` block counts from here.
    pub(super) fn wifi_warmup(&mut self) {
        if let Some(h) = &mut self.net.wifi {
            h.mac.reset_stats();
        }
    }

    /// Packets the MAC holds (driver queue, in the air, awaiting retry, behind a hole).
    pub(super) fn wifi_in_flight(&self) -> (u64, u64) {
        self.net.wifi.as_ref().map_or((0, 0), |h| {
            let (_, (pending, _)) = h.mac.driver_backlog(self.now);
            let held = h.mac.reorder_held();
            (pending + held.0, h.mac.queued_up() + held.1)
        })
    }

    /// The summary's `wifi` block (None without a Wi-Fi link).
    pub(super) fn wifi_summary(&self, window_s: f64) -> Option<serde_json::Value> {
        let h = self.net.wifi.as_ref()?;
        Some(h.record.summary(&h.mac, window_s))
    }
}
