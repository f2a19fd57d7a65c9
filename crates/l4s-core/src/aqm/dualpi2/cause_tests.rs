//! Tests of DualPI2's marks-by-cause counters: frozen p' and a queue over/under `step_thresh`.
//! Expected splits derived from Linux `must_drop`, `dualpi2_scalable_marking` and `do_step_aqm`.

use super::*;
use crate::aqm::Aqm;

const MTU: u32 = 1500;

fn frozen(p_prime: f64) -> DualPi2 {
    let mut q = DualPi2::new(DualPi2Params::default(), Rng::new(11)).expect("valid params");
    q.set_p_prime(p_prime); // no on_timer call below, so p' stays frozen
    q
}

/// Enqueue `n` packets at t = 0, then dequeue packet i at i·`gap` (its sojourn).
fn fill_and_drain(q: &mut DualPi2, n: u64, ecn: Ecn, gap: Nanos) -> (u64, u64) {
    for id in 0..n {
        q.enqueue(Packet::new(id, 0, MTU, ecn), Nanos::ZERO)
            .unwrap();
    }
    let (mut fwd, mut dropped) = (0, Vec::new());
    for i in 0..n {
        if q.dequeue(Nanos::from_ns(gap.as_ns() * i), &mut dropped)
            .is_some()
        {
            fwd += 1;
        }
    }
    (fwd, dropped.len() as u64)
}

fn counter(q: &DualPi2, name: &str) -> u64 {
    q.counters()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// Every CE-mark action Linux counts in `ecn_mark` lands in exactly one cause.
fn assert_identities(q: &DualPi2) {
    let c = q.mark_causes();
    assert_eq!(
        q.ecn_mark(),
        c.coupled_marks_l + c.overload_marks_l + c.ramp_marks_l + c.classic_marks + q.step_marks()
    );
    assert_eq!(
        counter(q, "marked_l"),
        c.coupled_marks_l + c.overload_marks_l + c.ramp_marks_l + q.step_marks()
            - c.step_marks_also_coupled
    );
}

#[test]
fn k_p_prime_of_one_and_the_step_split_exactly() {
    // k = 2, p' = 0.5: k·p' = 1 is not overload (Linux `>`), and the coupled roll always hits.
    // 10 L packets queued at 0, packet i leaves at i·250 µs (sojourn i·250 µs).
    // Coupled: only while ≥ 2 MTU stay queued after the removal: 9 − i ≥ 2 → i = 0..7 (8).
    // Step (1 ms, min_qlen_step 0): sojourn > 1 ms → i = 5..9 (5); i = 4 is exactly 1 ms.
    // Both: i = 5, 6, 7 (3). Every packet leaves CE: 8 + 5 − 3 = 10.
    let mut q = frozen(0.5);
    let (fwd, drops) = fill_and_drain(&mut q, 10, Ecn::Ect1, Nanos::from_us(250));
    assert_eq!((fwd, drops), (10, 0));
    let c = q.mark_causes();
    assert_eq!(c.coupled_marks_l, 8);
    assert_eq!(q.step_marks(), 5);
    assert_eq!(c.step_marks_also_coupled, 3);
    assert_eq!(q.ecn_mark(), 13); // Linux counts a packet marked by both twice
    assert_eq!(counter(&q, "marked_l"), 10);
    assert_eq!(c.overload_marks_l + c.overload_drops_l + c.classic_marks, 0);
    assert_identities(&q);
    // xstats carries the same values under the same names.
    let x = q.xstats(Nanos::ZERO);
    let get = |n: &str| x.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
    assert_eq!(get("coupled_marks_l"), Some(8.0));
    assert_eq!(get("step_marks_also_coupled"), Some(3.0));
    assert_eq!(x.iter().filter(|(k, _)| *k == "ecn_mark").count(), 1);
}

#[test]
fn p_prime_zero_leaves_only_step_marks() {
    let mut q = frozen(0.0);
    fill_and_drain(&mut q, 10, Ecn::Ect1, Nanos::from_us(250));
    let c = q.mark_causes();
    assert_eq!((q.step_marks(), c.coupled_marks_l), (5, 0));
    assert_eq!((c.step_marks_also_coupled, counter(&q, "marked_l")), (0, 5));
    assert_identities(&q);
}

/// |x − n·p| within 5 binomial standard deviations.
fn near_binomial(x: u64, n: u64, p: f64) -> bool {
    let mean = n as f64 * p;
    (x as f64 - mean).abs() <= 5.0 * (mean * (1.0 - p)).sqrt()
}

#[test]
fn frozen_p_prime_splits_coupled_and_step_by_their_probabilities() {
    // p' = 0.2: p_CL = 0.4. 2000 L packets, packet i leaves at i µs.
    // Coupled-eligible (≥ 2 MTU left): i ≤ 1997 → 1998 rolls at 0.4.
    // Step: sojourn i µs > 1000 µs → i = 1001..1999: exactly 999.
    // Both: the coupled roll among i = 1001..1997 (997 packets) at 0.4.
    let mut q = frozen(0.2);
    fill_and_drain(&mut q, 2000, Ecn::Ect1, Nanos::from_us(1));
    let c = q.mark_causes();
    assert_eq!(q.step_marks(), 999);
    assert!(near_binomial(c.coupled_marks_l, 1998, 0.4), "{c:?}");
    assert!(near_binomial(c.step_marks_also_coupled, 997, 0.4), "{c:?}");
    assert_eq!(c.overload_marks_l + c.overload_drops_l, 0);
    assert_identities(&q);
}

#[test]
fn overload_splits_l_drops_and_marks_and_drops_classic() {
    // p' = 0.6, k = 2: k·p' = 1.2 > 1. L: drop with p'² = 0.36, else CE (the `goto mark`
    // path); C (ECT(0)): drop with p'² = 0.36, never CE. 2000 of each, 2 of each never
    // judged (2-MTU floor). The step still runs on L packets that were not dropped.
    let mut q = frozen(0.6);
    let (fwd, drops) = fill_and_drain(&mut q, 2000, Ecn::Ect1, Nanos::ZERO);
    let c = q.mark_causes();
    assert_eq!(c.overload_drops_l, drops);
    assert_eq!(fwd + drops, 2000);
    assert_eq!(c.overload_marks_l + c.overload_drops_l, 1998);
    assert!(near_binomial(c.overload_drops_l, 1998, 0.36), "{c:?}");
    assert_eq!((c.coupled_marks_l, q.step_marks()), (0, 0)); // sojourn 0: no step
    assert_identities(&q);

    let mut q = frozen(0.6);
    let (fwd, drops) = fill_and_drain(&mut q, 2000, Ecn::Ect0, Nanos::ZERO);
    let c = q.mark_causes();
    assert_eq!((c.classic_drops, c.classic_marks), (drops, 0));
    assert_eq!(fwd + drops, 2000);
    assert!(near_binomial(c.classic_drops, 1998, 0.36), "{c:?}");
    assert_identities(&q);
}

#[test]
fn classic_marks_at_p_c_without_overload() {
    // p' = 0.3 (k·p' = 0.6): C ECT(0) packets CE-marked with p'² = 0.09, never dropped.
    let mut q = frozen(0.3);
    let (_, drops) = fill_and_drain(&mut q, 4000, Ecn::Ect0, Nanos::ZERO);
    let c = q.mark_causes();
    assert_eq!((drops, c.classic_drops), (0, 0));
    assert!(near_binomial(c.classic_marks, 3998, 0.09), "{c:?}");
    assert_eq!(counter(&q, "marked_c"), c.classic_marks);
    assert_identities(&q);
}
