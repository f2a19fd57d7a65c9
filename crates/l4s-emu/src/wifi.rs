//! The Wi-Fi medium of an emulated `[link] model = "wifi"`: one `l4s_core::wifi::WifiMac`
//! (IEEE 802.11-2020 EDCA, A-MPDU, block ack) shared by both directions, as in the simulator:
//! the downlink is the access point's side (its AQM feeds the driver queue when the driver
//! pulls), the uplink the client station's (its packets enter the station's queue and contend
//! for the same half-duplex medium).
//!
//! The downlink's `Path` runs the MAC on its own clock (its events interleave with that AQM's,
//! as in the simulator); what the MAC delivers or drops on the uplink waits in
//! [`Medium::up_out`] until the uplink's `Path` collects it, with the instant it happened.

use l4s_core::wifi::{WifiMac, WifiParams};
use l4s_core::{Nanos, Packet, Rng};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// The MAC and the uplink's outbox.
pub struct Medium {
    /// The MAC of both directions.
    pub mac: WifiMac,
    /// Uplink packets the MAC delivered (true) or dropped (false), at that instant.
    pub up_out: VecDeque<(Nanos, Packet, bool)>,
}

/// A direction's side of the medium.
#[derive(Clone)]
pub enum Role {
    /// The access point (downlink): runs the MAC.
    Ap(Rc<RefCell<Medium>>),
    /// The client station (uplink).
    Station(Rc<RefCell<Medium>>),
}

impl Role {
    /// A new medium with `params`, its random stream from the scenario's seed; the caller is
    /// its access point.
    pub fn new_ap(params: WifiParams, rng: Rng) -> Result<Role, l4s_sim::SimError> {
        let mac = WifiMac::new(params, rng).map_err(|e| {
            l4s_sim::SimError::field(format!("link.wifi.{}", e.param), e.to_string())
        })?;
        Ok(Role::Ap(Rc::new(RefCell::new(Medium {
            mac,
            up_out: VecDeque::new(),
        }))))
    }

    /// The medium.
    pub fn medium(&self) -> &Rc<RefCell<Medium>> {
        match self {
            Role::Ap(m) | Role::Station(m) => m,
        }
    }
}
