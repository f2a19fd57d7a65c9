//! EDCA channel access of one contender: AIFS, backoff uniform in [0, CW], CW doubled on a
//! failed exchange up to CWmax and reset on success. IEEE 802.11-2020 §10.23.2 (EDCA), §10.23.2.5
//! (backoff procedure); Bianchi, IEEE JSAC 18(3) 2000, for the slot-by-slot decrement.

use crate::error::ParamError;
use crate::rng::Rng;
use crate::time::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// EDCA parameters of the access category used (best effort by default) and the PHY's timing.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EdcaParams {
    /// aSlotTime (9 µs for 5 GHz OFDM).
    pub slot: Nanos,
    /// aSIFSTime (16 µs for 5 GHz OFDM).
    pub sifs: Nanos,
    /// AIFSN of the access category (AC_BE: 3; DCF's DIFS is AIFSN 2).
    pub aifsn: u32,
    /// CWmin (AC_BE: 15).
    pub cw_min: u32,
    /// CWmax (AC_BE: 1023).
    pub cw_max: u32,
}

impl Default for EdcaParams {
    fn default() -> Self {
        EdcaParams {
            slot: Nanos::from_us(9),
            sifs: Nanos::from_us(16),
            aifsn: 3,
            cw_min: 15,
            cw_max: 1023,
        }
    }
}

/// True for 2^k − 1, k in 0..=15 (the values ECWmin/ECWmax can encode, §9.4.2.28).
fn is_cw_value(v: u32) -> bool {
    v <= 32_767 && (v + 1).is_power_of_two()
}

impl EdcaParams {
    /// AIFS = SIFS + AIFSN · slot.
    pub fn aifs(&self) -> Nanos {
        Nanos(self.sifs.0 + self.aifsn as u64 * self.slot.0)
    }

    /// Range checks, each error naming the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1_000..=100_000).contains(&self.slot.0) {
            return Err(ParamError::new(
                "slot",
                self.slot,
                "a duration in [1us, 100us]",
            ));
        }
        if !(1_000..=100_000).contains(&self.sifs.0) {
            return Err(ParamError::new(
                "sifs",
                self.sifs,
                "a duration in [1us, 100us]",
            ));
        }
        if !(1..=15).contains(&self.aifsn) {
            return Err(ParamError::new(
                "aifsn",
                self.aifsn,
                "an integer in [1, 15]",
            ));
        }
        if !is_cw_value(self.cw_min) {
            return Err(ParamError::new(
                "cw_min",
                self.cw_min,
                "2^k - 1 for k in [0, 15] (0, 1, 3, 7, 15, ..., 32767)",
            ));
        }
        if !is_cw_value(self.cw_max) || self.cw_max < self.cw_min {
            return Err(ParamError::new(
                "cw_max",
                self.cw_max,
                "2^k - 1 for k in [0, 15], at least cw_min",
            ));
        }
        Ok(())
    }
}

/// The backoff state of one contender (an EDCAF).
#[derive(Clone, Debug)]
pub struct Backoff {
    /// Current contention window.
    pub cw: u32,
    /// Slots left to count down.
    pub slots: u32,
    /// The instant the countdown (re)starts: the end of AIFS after the medium went idle.
    pub start: Nanos,
    /// Whether the contender has a frame to send (saturated contenders always do).
    pub active: bool,
    /// Consecutive failed exchanges (a saturated contender's frame retry counter).
    pub failures: u32,
}

impl Backoff {
    /// An idle contender at CWmin.
    pub fn new(p: &EdcaParams) -> Self {
        Backoff {
            cw: p.cw_min,
            slots: 0,
            start: Nanos::ZERO,
            active: false,
            failures: 0,
        }
    }

    /// Draw a fresh backoff uniform in [0, CW].
    pub fn draw(&mut self, rng: &mut Rng) {
        self.slots = rng.below(self.cw as u64 + 1) as u32;
    }

    /// The instant this contender transmits if the medium stays idle.
    #[inline]
    pub fn tx_at(&self, slot: Nanos) -> Nanos {
        Nanos(self.start.0 + self.slots as u64 * slot.0)
    }

    /// The medium went busy at `t` (≥ start) without this contender transmitting: freeze the
    /// counter after the idle slots that elapsed, and count the busy period as one more slot —
    /// the EDCAF decrements at the slot boundary that ends AIFS (§10.23.2.5), which is Bianchi's
    /// one decrement per slot, busy or idle.
    #[inline]
    pub fn freeze(&mut self, t: Nanos, slot: Nanos) {
        let elapsed = (t.0.saturating_sub(self.start.0) / slot.0) as u32;
        self.slots = self.slots.saturating_sub(elapsed).saturating_sub(1);
    }

    /// Exchange succeeded: CW back to CWmin, new backoff.
    pub fn success(&mut self, p: &EdcaParams, rng: &mut Rng) {
        self.cw = p.cw_min;
        self.failures = 0;
        self.draw(rng);
    }

    /// Exchange failed (collision, or no BlockAck): CW ← min(2·(CW+1) − 1, CWmax), new backoff.
    pub fn failure(&mut self, p: &EdcaParams, rng: &mut Rng) {
        self.cw = (2 * (self.cw + 1) - 1).min(p.cw_max);
        self.failures += 1;
        self.draw(rng);
    }

    /// The frame was given up after the retry limit: CW resets as after a success.
    pub fn give_up(&mut self, p: &EdcaParams, rng: &mut Rng) {
        self.success(p, rng);
    }

    /// A saturated contender's exchange ended: success, or failure and, past `retry_limit`
    /// failures, the frame given up.
    pub fn exchange_done(&mut self, ok: bool, p: &EdcaParams, retry_limit: u32, rng: &mut Rng) {
        if ok {
            self.success(p, rng);
        } else {
            self.failure(p, rng);
            if self.failures > retry_limit {
                self.give_up(p, rng);
            }
        }
    }
}

/// The saturated contenders (the `stations` other stations) in aggregate. They always have a
/// frame, so after every exchange they all resume counting down at the same instant (the end of
/// AIFS): one shared countdown origin `start` and one slot count `offset` elapsed on it stand for
/// every counter at once. Station j's counter is `key[j] − offset`; the keys sit in a min-heap,
/// so the next transmission is the smallest key, a busy period advances every frozen counter by
/// moving `offset`, and each channel access costs O(log n) instead of O(n). The counters, CWs and
/// retry counts are those of n [`Backoff`]s, drawn in the same order.
#[derive(Clone, Debug)]
pub struct SaturatedContenders {
    /// Each contender's CW and retry count (its `slots` is the last draw; `start` is unused).
    state: Vec<Backoff>,
    /// (offset at the draw + slots drawn, station), smallest first.
    keys: BinaryHeap<Reverse<(u64, u32)>>,
    /// Slots counted down on the shared origin since the start.
    offset: u64,
    /// The instant the countdowns (re)start: the end of AIFS after the medium went idle.
    start: Nanos,
}

impl SaturatedContenders {
    /// `n` contenders at CWmin, each drawing its first backoff in turn, counting from `start`.
    pub fn new(n: usize, p: &EdcaParams, start: Nanos, rng: &mut Rng) -> Self {
        let mut state = vec![Backoff::new(p); n];
        let mut keys = BinaryHeap::with_capacity(n);
        for (j, b) in state.iter_mut().enumerate() {
            b.draw(rng);
            keys.push(Reverse((b.slots as u64, j as u32)));
        }
        SaturatedContenders {
            state,
            keys,
            offset: 0,
            start,
        }
    }

    /// The countdowns restart at `start` (the end of AIFS after an exchange).
    #[inline]
    pub fn restart(&mut self, start: Nanos) {
        self.start = start;
    }

    /// The instant the first of them transmits if the medium stays idle (None: no contender).
    #[inline]
    pub fn next_tx(&self, slot: Nanos) -> Option<Nanos> {
        self.keys
            .peek()
            .map(|Reverse((k, _))| Nanos(self.start.0 + (k - self.offset) * slot.0))
    }

    /// The medium goes busy at `t` (≥ `start`): the contenders whose countdown ends at `t` leave
    /// the heap into `txs` (in station order) until their exchange ends; every other counter
    /// freezes after the idle slots elapsed plus the busy slot, as [`Backoff::freeze`] does.
    pub fn busy(&mut self, t: Nanos, slot: Nanos, txs: &mut Vec<u32>) {
        if self.keys.is_empty() {
            return;
        }
        debug_assert!(t >= self.start);
        while let Some(&Reverse((k, j))) = self.keys.peek() {
            if Nanos(self.start.0 + (k - self.offset) * slot.0) != t {
                break;
            }
            self.keys.pop();
            txs.push(j);
        }
        // Counters left are past t, so none goes below zero.
        self.offset += (t.0 - self.start.0) / slot.0 + 1;
    }

    /// Contender `j`'s exchange ended, collided or not: CW, retry count and the new backoff as
    /// for any [`Backoff`] (given up after `retry_limit` failures).
    pub fn finish(
        &mut self,
        j: u32,
        collided: bool,
        p: &EdcaParams,
        retry_limit: u32,
        rng: &mut Rng,
    ) {
        let b = &mut self.state[j as usize];
        b.exchange_done(!collided, p, retry_limit, rng);
        self.keys.push(Reverse((self.offset + b.slots as u64, j)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aifs_and_cw_doubling() {
        let p = EdcaParams::default();
        assert_eq!(p.aifs(), Nanos::from_us(43)); // 16 + 3·9
        let mut r = Rng::new(1);
        let mut b = Backoff::new(&p);
        let mut seen = vec![];
        for _ in 0..8 {
            b.failure(&p, &mut r);
            seen.push(b.cw);
        }
        assert_eq!(seen, vec![31, 63, 127, 255, 511, 1023, 1023, 1023]);
        b.success(&p, &mut r);
        assert_eq!(b.cw, 15);
        assert!(b.slots <= 15);
    }

    #[test]
    fn freeze_counts_idle_slots_and_the_busy_slot() {
        let p = EdcaParams::default();
        let mut b = Backoff::new(&p);
        b.slots = 10;
        b.start = Nanos::from_us(100);
        // Busy at start + 3 slots + 4 µs: 3 idle slots elapsed, plus the busy one.
        b.freeze(Nanos::from_us(100 + 27 + 4), p.slot);
        assert_eq!(b.slots, 6);
    }

    #[test]
    fn the_heap_of_saturated_contenders_is_n_backoffs() {
        // Reference: n saturated `Backoff`s scanned one by one (earliest transmits, the others
        // freeze), against the heap on a shared offset, each drawing from its own copy of the
        // same stream: same transmitters, same instants, same draws, over 20 000 accesses with
        // collisions and given-up frames (retry limit 2).
        let p = EdcaParams::default();
        let slot = p.slot;
        let n = 12;
        let (mut ra, mut rb) = (Rng::new(7), Rng::new(7));
        let mut refs: Vec<Backoff> = (0..n)
            .map(|_| {
                let mut b = Backoff::new(&p);
                b.draw(&mut ra);
                b.start = p.aifs();
                b
            })
            .collect();
        let mut heap = SaturatedContenders::new(n, &p, p.aifs(), &mut rb);
        let mut txs = Vec::new();
        let mut collisions = 0;
        for k in 0..20_000u64 {
            let t = refs.iter().map(|b| b.tx_at(slot)).min().unwrap();
            assert_eq!(heap.next_tx(slot), Some(t), "access {k}");
            let mut want = Vec::new();
            for (j, b) in refs.iter_mut().enumerate() {
                if b.tx_at(slot) == t {
                    want.push(j as u32);
                } else {
                    b.freeze(t, slot);
                }
            }
            txs.clear();
            heap.busy(t, slot, &mut txs);
            assert_eq!(txs, want, "access {k}");
            let collided = want.len() > 1;
            collisions += collided as u32;
            // Exchanges of 100 µs + k mod 7 µs.
            let end = t + Nanos::from_us(100 + k % 7);
            for &j in &want {
                refs[j as usize].exchange_done(!collided, &p, 2, &mut ra);
                heap.finish(j, collided, &p, 2, &mut rb);
            }
            for b in refs.iter_mut() {
                b.start = end + p.aifs();
            }
            heap.restart(end + p.aifs());
        }
        assert!(collisions > 1000, "{collisions}");
        assert_eq!(ra.below(1 << 40), rb.below(1 << 40), "same number of draws");
    }

    #[test]
    fn validation_names_the_key() {
        let bad = EdcaParams {
            cw_min: 16,
            ..Default::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("cw_min"));
        let bad = EdcaParams {
            cw_max: 7,
            ..Default::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("cw_max"));
        let bad = EdcaParams {
            aifsn: 0,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().to_string().starts_with("aifsn"));
    }
}
