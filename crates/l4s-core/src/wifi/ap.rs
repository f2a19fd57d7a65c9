//! How the access point queues a station's packets above the MAC: mac80211's TXQs with the
//! scenario's AQM as a root qdisc above them, the scenario's AQM in place of the TXQs, or one
//! driver FIFO under the AQM. Linux `net/mac80211/iface.c` (`ieee80211_if_setup`:
//! `IFF_NO_QUEUE`), `net/mac80211/tx.c` (`ieee80211_subif_start_xmit` → `ieee80211_queue_skb`
//! → `ieee80211_txq_enqueue`; the driver pulls with `ieee80211_tx_dequeue`), and the shape of
//! the driver below (firmware queues, or ath9k's hardware queue: `ath9k/xmit.c`).

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

/// `ATH_AGGR_MIN_QDEPTH` (ath9k.h): aggregates ath9k keeps in a hardware queue, counting the
/// one in the air (`txq->axq_ampdu_depth`, decremented in `ath_tx_process_buffer`).
pub const ATH_AGGR_MIN_QDEPTH: usize = 2;

/// Below mac80211's TXQs, the driver's shape (`[link.wifi] driver`): who decides which
/// station's frames the AP sends next.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum TxDriver {
    /// ath10k / mt76: AQL (`NL80211_EXT_FEATURE_AQL`) lets each station keep 5–12 ms of
    /// frames in the firmware, whose per-station queues the AP serves round robin, one
    /// aggregate each; mac80211's airtime DRR only orders the pulls.
    #[default]
    FirmwareRr,
    /// ath9k (`drivers/net/wireless/ath/ath9k/xmit.c`): no AQL; `ath_txq_schedule` asks
    /// `ieee80211_next_txq` for a station, `ath_tx_sched_aggr` forms ONE aggregate of its
    /// frames into a hardware queue of at most [`ATH_AGGR_MIN_QDEPTH`] aggregates, and the
    /// AP sends that queue in order: the DRR decides whose aggregate goes next.
    Ath9k,
}

impl TxDriver {
    /// The `[link.wifi] driver` value.
    pub fn name(self) -> &'static str {
        match self {
            TxDriver::FirmwareRr => "firmware_rr",
            TxDriver::Ath9k => "ath9k",
        }
    }

    /// Parse a `driver` value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "firmware_rr" => Some(TxDriver::FirmwareRr),
            "ath9k" => Some(TxDriver::Ath9k),
            _ => None,
        }
    }
}
