//! The bottleneck both clocks drive: the AQM, the link model that serialises what it passes,
//! and the loss and jitter after it. Clock-free and sans-I/O: the simulator's event list
//! (`World`) and the emulator's wall-clock loop (`l4s_emu::path::Path`) call the same steps in
//! the same order, and schedule the instants these steps return themselves.
//!
//! One packet's way: [`Bottleneck::enqueue`] (a refusal is a drop verdict) → when the link is
//! idle, [`Bottleneck::start_service`] asks the link model when it next serves → at that
//! instant [`Bottleneck::dequeue`] (so the AQM sees the real sojourn; its drops and its verdict
//! go to the caller's [`Verdicts`]) → [`Bottleneck::transmit`] gives the instant the last bit
//! leaves → [`Bottleneck::lost`] / [`Bottleneck::jitter`] after it → at that instant
//! [`Bottleneck::link_done`] and the next service. The Wi-Fi MAC's driver queue pulls with
//! [`Bottleneck::dequeue`] instead of the link's service.

use crate::aqm_config::AqmConfig;
use crate::error::SimError;
use crate::scenario::LinkConfig;
use crate::world::{build_jitter, build_link, build_loss};
use l4s_core::aqm::Aqm;
use l4s_core::link::{Jitter, LinkModel, LossModel};
use l4s_core::{Ecn, Nanos, Packet, Rng};
use std::collections::HashMap;

/// Where the bottleneck's AQM verdicts go (recorder, capture, the caller's packet store).
pub trait Verdicts {
    /// The AQM decided on `p` at `now`: `verdict` 0 passed, 1 CE-marked, 2 dropped, after
    /// `sojourn` in the queue. `cfg` classifies the packet into a queue; `link` is the link
    /// model at `now` (e.g. for a Mahimahi log's opportunity lines).
    fn verdict(
        &mut self,
        cfg: &AqmConfig,
        link: &dyn LinkModel,
        now: Nanos,
        p: &Packet,
        sojourn: Nanos,
        verdict: u8,
    );
}

/// What an idle link does with a waiting packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Service {
    /// Serve it now ([`Bottleneck::dequeue`] then [`Bottleneck::transmit`]).
    Now,
    /// Serve it at this instant (the caller schedules it; [`Bottleneck::service_pending`]).
    At(Nanos),
    /// The link never serves again (a `once` trace ended).
    Never,
}

/// The AQM, the link model, loss and jitter of one direction.
pub struct Bottleneck {
    /// The queue discipline.
    pub aqm: Box<dyn Aqm>,
    /// Its configuration (classifies packets into its queues for the records).
    pub aqm_cfg: AqmConfig,
    /// The instant of the AQM timer the caller has scheduled, if any.
    pub aqm_armed: Option<Nanos>,
    /// The link model (for `[link] model = "wifi"`: the PHY rate, the summary's capacity).
    pub link: Box<dyn LinkModel>,
    /// A packet is being serialised.
    pub busy: bool,
    /// Packets on a link that ended before they did (never delivered).
    pub stuck_pkts: u64,
    /// The instant at which the idle link next serves, when the caller has scheduled it.
    pub service_at: Option<Nanos>,
    loss: Option<Box<dyn LossModel>>,
    jitter: Option<Jitter>,
    dropped: Vec<Packet>,
    /// Queued packets that arrived already CE (an earlier hop of a chain marked them), by id,
    /// with whether this AQM marked them again at enqueue. Their verdict here is "mark" only
    /// when this AQM acted (its `marked` counter rose, as Linux `INET_ECN_set_ce` counts a
    /// CE packet it marks again), so packets, pcap and the per-queue counters agree per hop.
    ce_arrived: HashMap<u64, bool>,
}

impl Bottleneck {
    /// The AQM of `aqm_cfg`, link model, loss and jitter of the validated `link`, each drawing
    /// from its own stream of `seed`: "{stream}aqm", "{stream}link/loss",
    /// "{stream}link/jitter" (an empty `stream` gives the simulator's streams).
    pub fn new(
        link: &LinkConfig,
        aqm_cfg: &AqmConfig,
        base_dir: Option<&std::path::Path>,
        seed: u64,
        stream: &str,
    ) -> Result<Self, SimError> {
        let aqm = aqm_cfg.build(Rng::derive(seed, &format!("{stream}aqm")))?;
        Self::with_aqm(link, aqm_cfg, aqm, base_dir, seed, stream)
    }

    /// Like [`Bottleneck::new`] with an AQM built by the caller (`aqm_cfg` describes its kind).
    pub fn with_aqm(
        link: &LinkConfig,
        aqm_cfg: &AqmConfig,
        aqm: Box<dyn Aqm>,
        base_dir: Option<&std::path::Path>,
        seed: u64,
        stream: &str,
    ) -> Result<Self, SimError> {
        Ok(Bottleneck {
            aqm,
            aqm_cfg: aqm_cfg.clone(),
            aqm_armed: None,
            link: build_link(link, base_dir)?,
            busy: false,
            stuck_pkts: 0,
            service_at: None,
            loss: build_loss(link, Rng::derive(seed, &format!("{stream}link/loss")))?,
            jitter: build_jitter(link, Rng::derive(seed, &format!("{stream}link/jitter"))),
            dropped: Vec::with_capacity(16),
            ce_arrived: HashMap::new(),
        })
    }

    /// The link neither serialises nor waits to serve.
    #[inline]
    pub fn idle(&self) -> bool {
        !self.busy && self.service_at.is_none()
    }

    /// A service instant the caller scheduled is pending.
    #[inline]
    pub fn service_pending(&self) -> bool {
        self.service_at.is_some()
    }

    /// `p` reaches the AQM at `now`; a refusal is a drop verdict (sojourn 0). True when queued.
    #[inline]
    pub fn enqueue(&mut self, p: Packet, now: Nanos, v: &mut impl Verdicts) -> bool {
        let ce_in = p.ecn == Ecn::Ce;
        let (id, marked0) = if ce_in {
            (p.id, self.aqm.stats().marked)
        } else {
            (0, 0)
        };
        match self.aqm.enqueue(p, now) {
            Ok(()) => {
                if ce_in {
                    let again = self.aqm.stats().marked > marked0;
                    self.ce_arrived.insert(id, again);
                }
                true
            }
            Err(d) => {
                v.verdict(&self.aqm_cfg, self.link.as_ref(), now, &d, Nanos::ZERO, 2);
                false
            }
        }
    }

    /// The idle link has a packet waiting at `now`: when does it serve it? A later instant is
    /// remembered as pending until [`Bottleneck::serve_due`].
    #[inline]
    pub fn start_service(&mut self, now: Nanos) -> Service {
        let s = self.link.next_service(now);
        if s == now {
            Service::Now
        } else if s != Nanos::MAX {
            self.service_at = Some(s);
            Service::At(s)
        } else {
            Service::Never
        }
    }

    /// The pending service instant has come.
    #[inline]
    pub fn serve_due(&mut self) {
        self.service_at = None;
    }

    /// One dequeue from the AQM at `now`: its drops and the packet it passes (CE-marked or
    /// not) go to `v`; the packet is returned. A packet that arrived ECT and leaves with CE
    /// was marked here (senders never send CE); one that arrived CE was marked here only
    /// when this AQM counted a mark on it (at its enqueue or in this dequeue).
    pub fn dequeue(&mut self, now: Nanos, v: &mut impl Verdicts) -> Option<Packet> {
        self.dropped.clear();
        let track = !self.ce_arrived.is_empty();
        let marked0 = if track { self.aqm.stats().marked } else { 0 };
        let p = self.aqm.dequeue(now, &mut self.dropped);
        let (cfg, link) = (&self.aqm_cfg, self.link.as_ref());
        for d in self.dropped.drain(..) {
            if track {
                self.ce_arrived.remove(&d.id);
            }
            v.verdict(cfg, link, now, &d, d.sojourn(now), 2);
        }
        // Borrowed and handed back as it came: unwrapping and re-wrapping moved the packet.
        if let Some(p) = &p {
            let marked = p.ecn == Ecn::Ce
                && match track.then(|| self.ce_arrived.remove(&p.id)).flatten() {
                    Some(at_enqueue) => at_enqueue || self.aqm.stats().marked > marked0,
                    None => true,
                };
            v.verdict(cfg, link, now, p, p.sojourn(now), marked as u8);
        }
        p
    }

    /// Serialise `bytes` from `now`: the instant the last bit leaves, or None when the link
    /// ended first (a `once` trace; the packet stays on it and is counted as stuck).
    #[inline]
    pub fn transmit(&mut self, now: Nanos, bytes: u32) -> Option<Nanos> {
        let fin = self.link.transmit(now, bytes);
        self.busy = true;
        if fin == Nanos::MAX {
            self.stuck_pkts += 1;
            None
        } else {
            Some(fin)
        }
    }

    /// The packet on the link has left; true when the AQM holds more (start the next service).
    #[inline]
    pub fn link_done(&mut self) -> bool {
        self.busy = false;
        !self.aqm.is_empty()
    }

    /// The loss model's roll for the packet just serialised (false without one).
    #[inline]
    pub fn lost(&mut self) -> bool {
        self.loss.as_mut().is_some_and(|l| l.is_lost())
    }

    /// The arrival instant after jitter of a packet due at `at` behind one due at `prev`.
    #[inline]
    pub fn jitter(&mut self, at: Nanos, prev: Nanos) -> Nanos {
        match &mut self.jitter {
            Some(j) => j.arrival(at, prev),
            None => at,
        }
    }

    /// The AQM's next wakeup (not before `now`) when it is earlier than the one armed: the
    /// caller schedules the returned instant.
    #[inline]
    pub fn arm_aqm(&mut self, now: Nanos) -> Option<Nanos> {
        let w = self.aqm.next_wakeup()?.max(now);
        if self.aqm_armed.is_none_or(|a| w < a) {
            self.aqm_armed = Some(w);
            return Some(w);
        }
        None
    }

    /// The AQM timer scheduled for `t` fires: false (nothing run) when it was re-armed since.
    #[inline]
    pub fn aqm_timer(&mut self, t: Nanos) -> bool {
        if self.aqm_armed != Some(t) {
            return false;
        }
        self.aqm_armed = None;
        self.aqm.on_timer(t);
        true
    }

    /// Unused delivery opportunities up to `now` (counted lazily while the link is idle).
    pub fn flush_unused(&mut self, now: Nanos) -> u64 {
        if self.idle() && self.aqm.is_empty() {
            let _ = self.link.next_service(now);
        }
        self.link.unused_txops()
    }
}
