//! DualPI2 coupling: Classic p_C = p'² and coupled L4S p_CL = k·p', with Linux's overload rules.
//! Follows Linux `must_drop`, `dualpi2_classic_marking`, `dualpi2_scalable_marking` and RFC 9332 §2.4.

use crate::packet::Ecn;
use crate::rng::Rng;

/// What the AQM does to one packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward the packet unchanged.
    Pass,
    /// Set CE (Linux `INET_ECN_set_ce`; an already-CE packet also counts as marked).
    Mark,
    /// Drop the packet (Linux `dualpi2_drop`).
    Drop,
}

impl Action {
    /// Linux `dualpi2_mark`: CE-marking a Not-ECT packet fails silently (it passes unmarked).
    fn mark_if_capable(ecn: Ecn) -> Action {
        if ecn.is_ecn_capable() {
            Action::Mark
        } else {
            Action::Pass
        }
    }
    /// Mark, or drop where ECN cannot carry the signal.
    fn mark_or_drop(ecn: Ecn) -> Action {
        if ecn.is_ecn_capable() {
            Action::Mark
        } else {
            Action::Drop
        }
    }
}

/// The coupling between the two queues' probabilities.
#[derive(Copy, Clone, Debug)]
pub struct Coupling {
    /// Coupling factor k (Linux `coupling_factor`, u8 ≥ 1).
    pub k: u32,
    /// On overload (k·p' > 1) drop L packets with p'² (true) or keep marking them (false).
    pub drop_overload: bool,
}

impl Coupling {
    /// Classic probability p_C = p'², for reporting only: decisions roll p' twice
    /// (`roll_squared`), as Linux does.
    pub fn p_c(&self, p_prime: f64) -> f64 {
        p_prime * p_prime
    }
    /// Coupled L4S probability k·p', unclamped (may exceed 1 on overload).
    pub fn p_cl_raw(&self, p_prime: f64) -> f64 {
        self.k as f64 * p_prime
    }
    /// Coupled L4S probability reported to users: min(k·p', 1).
    pub fn p_cl(&self, p_prime: f64) -> f64 {
        self.p_cl_raw(p_prime).min(1.0)
    }
    /// Linux: `overload = (u64)prob * coupling_factor > MAX_PROB`.
    pub fn overloaded(&self, p_prime: f64) -> bool {
        self.p_cl_raw(p_prime) > 1.0
    }

    /// Linux `dualpi2_roll(prob) && dualpi2_roll(prob)`: two independent rolls, the second only
    /// when the first hits (C's `&&`), so P = p'².
    fn roll_squared(p_prime: f64, rng: &mut Rng) -> bool {
        rng.bernoulli(p_prime) && rng.bernoulli(p_prime)
    }

    /// Linux `dualpi2_classic_marking`: with probability p'², drop if overloaded or Not-ECT,
    /// else CE.
    pub fn classic(&self, p_prime: f64, ecn: Ecn, rng: &mut Rng) -> Action {
        if Self::roll_squared(p_prime, rng) {
            if self.overloaded(p_prime) {
                Action::Drop
            } else {
                Action::mark_or_drop(ecn)
            }
        } else {
            Action::Pass
        }
    }

    /// Linux `dualpi2_scalable_marking`.
    /// - Overloaded: with drop_overload, drop with probability p'², otherwise (and when that
    ///   roll misses) CE-mark every packet (the `goto mark` path).
    /// - Not overloaded: CE with probability k·p' (drop if Not-ECT). `roll_coupled = false`
    ///   skips this roll (the RFC ramp variant applies p_CL itself through max(ramp, p_CL)).
    pub fn scalable(&self, p_prime: f64, ecn: Ecn, rng: &mut Rng, roll_coupled: bool) -> Action {
        if self.overloaded(p_prime) {
            if self.drop_overload && Self::roll_squared(p_prime, rng) {
                return Action::Drop;
            }
            return Action::mark_if_capable(ecn);
        }
        if roll_coupled && rng.bernoulli(self.p_cl_raw(p_prime)) {
            return Action::mark_or_drop(ecn);
        }
        Action::Pass
    }

    /// One roll at probability `p` for an L packet (ramp variant): CE, or drop if Not-ECT.
    pub fn roll_l(p: f64, ecn: Ecn, rng: &mut Rng) -> Action {
        if rng.bernoulli(p) {
            Action::mark_or_drop(ecn)
        } else {
            Action::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_and_overload_boundary() {
        let c = Coupling {
            k: 2,
            drop_overload: true,
        };
        // p' = 0.3: p_C = 0.09, p_CL = 0.6.
        assert!((c.p_c(0.3) - 0.09).abs() < 1e-15);
        assert!((c.p_cl(0.3) - 0.6).abs() < 1e-15);
        // Boundary 1/k = 0.5: k·p' = 1 exactly is NOT overload (Linux uses '>').
        assert!(!c.overloaded(0.5));
        assert!(!c.overloaded(0.499_999));
        assert!(c.overloaded(0.500_001));
        // p_CL reported clamped at 1 above the boundary: 2·0.7 = 1.4 → 1.
        assert_eq!(c.p_cl(0.7), 1.0);
        assert!((c.p_cl_raw(0.7) - 1.4).abs() < 1e-15);
    }

    #[test]
    fn one_over_k_cap_never_reads_as_overload() {
        // Without drop_overload Linux caps p' at MAX_PROB/k so that k·p' ≤ MAX_PROB. Check our
        // f64 cap 1/k never rounds to k·(1/k) > 1 for any legal k (1..=255).
        for k in 1..=255u32 {
            let c = Coupling {
                k,
                drop_overload: false,
            };
            assert!(!c.overloaded(1.0 / k as f64), "k = {k}");
        }
    }

    #[test]
    fn certain_and_impossible_rolls() {
        let mut rng = Rng::new(1);
        let c = Coupling {
            k: 2,
            drop_overload: true,
        };
        // p' = 0.5: p_C = 0.25 random; p' = 0 never acts.
        for ecn in Ecn::ALL {
            assert_eq!(c.classic(0.0, ecn, &mut rng), Action::Pass);
            assert_eq!(c.scalable(0.0, ecn, &mut rng, true), Action::Pass);
        }
        // p' = 1 with k = 2 is overload: classic always drops, even ECT packets.
        assert_eq!(c.classic(1.0, Ecn::Ect0, &mut rng), Action::Drop);
        // L overloaded with drop_overload: p'² = 1 → drop.
        assert_eq!(c.scalable(1.0, Ecn::Ect1, &mut rng, true), Action::Drop);
        // L overloaded without drop_overload → always mark (no drop).
        let no = Coupling {
            k: 2,
            drop_overload: false,
        };
        assert_eq!(no.scalable(1.0, Ecn::Ect1, &mut rng, true), Action::Mark);
        // k = 1, p' = 1: not overloaded (1·1 = 1), classic ECT → mark, Not-ECT → drop.
        let k1 = Coupling {
            k: 1,
            drop_overload: true,
        };
        assert_eq!(k1.classic(1.0, Ecn::Ect0, &mut rng), Action::Mark);
        assert_eq!(k1.classic(1.0, Ecn::NotEct, &mut rng), Action::Drop);
        assert_eq!(k1.scalable(1.0, Ecn::Ce, &mut rng, true), Action::Mark);
        assert_eq!(k1.scalable(1.0, Ecn::NotEct, &mut rng, true), Action::Drop);
        // roll_coupled = false leaves the non-overload decision to the caller.
        assert_eq!(k1.scalable(1.0, Ecn::Ect1, &mut rng, false), Action::Pass);
    }
}
