//! How the access point queues a station's packets above the MAC: mac80211's TXQs with the
//! scenario's AQM as a root qdisc above them, the scenario's AQM in place of the TXQs, or one
//! driver FIFO under the AQM. Linux `net/mac80211/iface.c` (`ieee80211_if_setup`:
//! `IFF_NO_QUEUE`), `net/mac80211/tx.c` (`ieee80211_subif_start_xmit` → `ieee80211_queue_skb`
//! → `ieee80211_txq_enqueue`; the driver pulls with `ieee80211_tx_dequeue`).

/// The AP's queueing design (`[link.wifi] ap`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum ApMode {
    /// A Linux AP with a TXQ driver (ath9k/ath10k/ath11k/mt76/iwlwifi): the scenario's AQM is
    /// the root qdisc and holds no queue (mac80211 never stops the netdev queue, so the qdisc
    /// is dequeued as soon as it is enqueued); packets queue in the station's TXQ
    /// (fq_impl.h FQ + CoDel 20/100 ms, [`super::txq`]) and the driver pulls under AQL.
    #[default]
    Mac80211,
    /// The scenario's AQM in place of each station's FQ-CoDel, pulled by the driver under AQL:
    /// the "MAC-integrated AQM" design of L4S Wi-Fi proposals (l4slab's placement before the
    /// AP model).
    AqmInTxq,
    /// The scenario's AQM above one driver FIFO limited by `driver_limit`: a pre-iTXQ push
    /// driver whose netdev queue is stopped while the FIFO is full.
    DriverFifo,
}

impl ApMode {
    /// The `[link.wifi] ap` value.
    pub fn name(self) -> &'static str {
        match self {
            ApMode::Mac80211 => "mac80211",
            ApMode::AqmInTxq => "aqm_in_txq",
            ApMode::DriverFifo => "driver_fifo",
        }
    }

    /// Parse an `ap` value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "mac80211" => Some(ApMode::Mac80211),
            "aqm_in_txq" => Some(ApMode::AqmInTxq),
            "driver_fifo" => Some(ApMode::DriverFifo),
            _ => None,
        }
    }
}
