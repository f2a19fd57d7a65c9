//! The Wi-Fi medium of an emulated `[link] model = "wifi"`: one `l4s_core::wifi::WifiMac`
//! (IEEE 802.11-2020 EDCA, A-MPDU, block ack) shared by both directions, as in the simulator:
//! the downlink is the access point's side (its AQM, and with `ap = "mac80211"` the
//! stations' TXQs of `l4s_sim::wifi_txq`, feed the driver when it pulls), the uplink the
//! client stations' (their packets enter each station's queue and contend for the same
//! half-duplex medium).
//!
//! The downlink's `Path` runs the MAC on its own clock (its events interleave with that AQM's,
//! as in the simulator); what the MAC delivers or drops on the uplink waits in
//! [`Medium::up_out`] until the uplink's `Path` collects it, with the instant it happened.
//!
//! Client stations (`[[link.wifi.clients]]`) are not namespaces: a packet belongs to the
//! station [`StationMap`] gives its 5-tuple (`[[emulator.stations]]`: a port, either end),
//! else to station 0, as a simulated flow without `station`.

use crate::packet::FlowKey;
use l4s_core::wifi::{ApMode, WifiMac, WifiParams};
use l4s_core::{Nanos, Packet, Rng};
use l4s_sim::wifi_txq::TxqLayer;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// Which client station a packet's 5-tuple belongs to (`[[emulator.stations]]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StationMap {
    /// (TCP/UDP port, station); a packet whose source or destination port is listed belongs
    /// to that station (the first entry that matches).
    pub ports: Vec<(u16, u8)>,
}

impl StationMap {
    /// The client station of a packet with this 5-tuple: the listed port at either end (so
    /// a flow's data and its ACKs map alike), else 0.
    pub fn station(&self, key: &FlowKey) -> u8 {
        self.ports
            .iter()
            .find(|&&(port, _)| port == key.sport || port == key.dport)
            .map_or(0, |&(_, sta)| sta)
    }

    /// Every station must exist: the error names `emulator.stations[i].station` and the range.
    pub fn check(&self, n_clients: usize) -> Result<(), String> {
        for (i, &(_, sta)) in self.ports.iter().enumerate() {
            if sta as usize >= n_clients {
                return Err(format!(
                    "emulator.stations[{i}].station: {sta} is not a client station; expected an \
                     integer in [0, {}] ([[link.wifi.clients]] has {n_clients})",
                    n_clients - 1
                ));
            }
        }
        Ok(())
    }
}

/// The MAC, the access point's TXQs and the uplink's outbox.
pub struct Medium {
    /// The MAC of both directions.
    pub mac: WifiMac,
    /// The AP's queueing design (`[link.wifi] ap`).
    pub ap: ApMode,
    /// `ap = "mac80211"`: the stations' TXQs between the root qdisc and the driver.
    pub txq: Option<TxqLayer>,
    /// Which station each packet belongs to.
    pub stations: StationMap,
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
    /// A new medium from `[link.wifi]` (`params`, the AP design and its TXQs), its random
    /// streams `rng` (the MAC's) and `txq_rng` (the TXQs') from the scenario's seed; the
    /// caller is its access point.
    pub fn new_ap(
        w: &l4s_sim::wifi_config::WifiConfig,
        params: WifiParams,
        rng: Rng,
        txq_rng: Rng,
    ) -> Result<Role, l4s_sim::SimError> {
        let field = |e: l4s_core::ParamError| l4s_sim::SimError::param("link.wifi.", e);
        let mac = WifiMac::new(params, rng).map_err(field)?;
        let ap = w.ap_mode()?;
        let txq = match ap {
            ApMode::Mac80211 => Some(
                TxqLayer::new(
                    mac.clients(),
                    &w.txq_params()?,
                    txq_rng,
                    (mac.params().driver, w.aql_limits()),
                    w.airtime_fairness(),
                )
                .map_err(field)?,
            ),
            _ => None,
        };
        Ok(Role::Ap(Rc::new(RefCell::new(Medium {
            mac,
            ap,
            txq,
            stations: StationMap::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sport: u16, dport: u16) -> FlowKey {
        FlowKey {
            v6: false,
            proto: 17,
            src: [0; 16],
            dst: [0; 16],
            sport,
            dport,
        }
    }

    /// A flow's data (client port as source) and its ACKs (client port as destination) map
    /// to the listed station; an unlisted 5-tuple, and the server's port alone, to station 0.
    #[test]
    fn station_by_port_at_either_end() {
        let m = StationMap {
            ports: vec![(6001, 1), (6002, 2)],
        };
        assert_eq!(m.station(&key(6001, 5201)), 1);
        assert_eq!(m.station(&key(5201, 6001)), 1);
        assert_eq!(m.station(&key(6002, 5201)), 2);
        assert_eq!(m.station(&key(5201, 6002)), 2);
        assert_eq!(m.station(&key(40000, 5201)), 0);
        assert_eq!(StationMap::default().station(&key(6001, 5201)), 0);
    }

    /// A station beyond `[[link.wifi.clients]]` is refused naming the entry and the range.
    #[test]
    fn station_out_of_range_is_named() {
        let m = StationMap {
            ports: vec![(6001, 1), (6002, 2)],
        };
        assert!(m.check(3).is_ok());
        let e = m.check(2).unwrap_err();
        assert!(
            e.starts_with("emulator.stations[1].station: 2 is not a client station"),
            "{e}"
        );
        assert!(e.contains("[0, 1]"), "{e}");
    }
}
