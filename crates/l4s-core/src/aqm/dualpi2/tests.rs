//! Tests of the assembled DualPI2 qdisc against Linux sch_dualpi2.c rules and hand computations.
//! (Unit tests of the parts live beside them: pi2.rs, coupling.rs, step.rs, scheduler.rs.)

use super::*;
use crate::aqm::Aqm;

const MTU: u32 = 1500;

fn pkt(id: u64, ecn: Ecn) -> Packet {
    Packet::new(id, 0, MTU, ecn)
}

fn aqm(params: DualPi2Params) -> DualPi2 {
    DualPi2::new(params, Rng::new(7)).expect("valid params")
}

fn default_aqm() -> DualPi2 {
    aqm(DualPi2Params::default())
}

/// Dequeue everything at `now`; returns (forwarded, dropped-at-dequeue).
fn drain(q: &mut DualPi2, now: Nanos) -> (Vec<Packet>, Vec<Packet>) {
    let mut dropped = Vec::new();
    let out = std::iter::from_fn(|| q.dequeue(now, &mut dropped)).collect();
    (out, dropped)
}

fn ecns(v: &[Packet]) -> Vec<Ecn> {
    v.iter().map(|p| p.ecn).collect()
}

#[test]
fn defaults_are_linux_defaults() {
    let p = DualPi2Params::default();
    assert_eq!(p.limit, 10_000);
    assert_eq!(p.target, Nanos::from_ms(15));
    assert_eq!(p.tupdate, Nanos::from_ms(16));
    assert_eq!((p.alpha, p.beta), (0.16, 3.2));
    assert_eq!(
        p.step_threshold(),
        step::StepThresh::Time(Nanos::from_ms(1))
    );
    assert_eq!((p.min_qlen_step, p.k, p.c_protection), (0, 2, 10));
    assert_eq!(p.ecn_mask, EcnMask::L4s);
    assert!(p.drop_overload && !p.drop_early);
    let q = default_aqm();
    assert_eq!(q.credit(), Some(-120_000)); // 1500·(10 − 90)
    assert_eq!(q.next_wakeup(), Some(Nanos::from_ms(16)));
    assert_eq!(q.kind(), "dualpi2");
}

#[test]
fn parameters_are_validated_by_name() {
    let bad = |f: fn(&mut DualPi2Params)| {
        let mut p = DualPi2Params::default();
        f(&mut p);
        DualPi2::new(p, Rng::new(1)).unwrap_err()
    };
    assert_eq!(bad(|p| p.limit = 0).param, "limit");
    assert_eq!(bad(|p| p.target = Nanos::ZERO).param, "target");
    assert_eq!(bad(|p| p.tupdate = Nanos::ZERO).param, "tupdate");
    assert_eq!(bad(|p| p.alpha = 0.0).param, "alpha");
    assert_eq!(bad(|p| p.beta = f64::NAN).param, "beta");
    assert_eq!(bad(|p| p.k = 0).param, "k");
    assert_eq!(bad(|p| p.k = 256).param, "k");
    let e = bad(|p| p.c_protection = 101);
    assert_eq!(e.param, "c_protection");
    assert!(e.to_string().contains("[0, 100]"), "{e}");
    assert_eq!(bad(|p| p.range = Nanos::ZERO).param, "range");
    assert_eq!(bad(|p| p.mtu_bytes = 10).param, "mtu_bytes");
    let e = bad(|p| {
        p.step_thresh = Some(Nanos::from_ms(1));
        p.step_thresh_pkts = Some(5);
    });
    assert!(e.to_string().contains("only one of"), "{e}");
}

/// A string value for serde tests that also reads as `Some(..)` (like TOML/JSON values do);
/// l4s-core has no TOML dev-dependency, so this stands in for a scenario file's `key = "..."`.
struct Val(&'static str);

impl<'de> serde::Deserializer<'de> for Val {
    type Error = serde::de::value::Error;
    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        v.visit_str(self.0)
    }
    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        v.visit_some(self)
    }
    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        use serde::de::IntoDeserializer;
        let d: serde::de::value::StrDeserializer<'_, Self::Error> = self.0.into_deserializer();
        d.deserialize_enum(name, variants, v)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl<'de> serde::de::IntoDeserializer<'de, serde::de::value::Error> for Val {
    type Deserializer = Val;
    fn into_deserializer(self) -> Val {
        self
    }
}

fn from_pairs(pairs: Vec<(&'static str, &'static str)>) -> Result<DualPi2Params, String> {
    use serde::de::value::{Error, MapDeserializer};
    use serde::Deserialize;
    let it = pairs.into_iter().map(|(k, v)| (k, Val(v)));
    DualPi2Params::deserialize(MapDeserializer::<_, Error>::new(it)).map_err(|e| e.to_string())
}

#[test]
fn params_deserialize_with_strings_and_snake_case_enums() {
    let p = from_pairs(vec![
        ("target", "20ms"),
        ("step_thresh", "2ms"),
        ("ecn_mask", "any"),
        ("scheduler", "tsfifo"),
        ("l_aqm", "ramp"),
    ])
    .expect("deserializes");
    assert_eq!(p.target, Nanos::from_ms(20));
    assert_eq!(p.step_thresh, Some(Nanos::from_ms(2)));
    assert_eq!(p.ecn_mask, EcnMask::Any);
    assert_eq!(p.scheduler, SchedulerKind::Tsfifo);
    assert_eq!(p.l_aqm, LAqmKind::Ramp);
    assert_eq!(p.tupdate, Nanos::from_ms(16)); // untouched fields keep the default
                                               // A profile's name (written to results) reads back as that profile.
    for k in [KernelProfile::Mainline, KernelProfile::L4steam] {
        assert_eq!(from_pairs(vec![("profile", k.name())]).unwrap().profile, k);
    }
    assert_eq!(KernelProfile::L4steam.name(), "l4steam");
    for q in [PiQdelay::Timer, PiQdelay::Dequeue] {
        assert_eq!(
            from_pairs(vec![("pi_qdelay", q.name())]).unwrap().pi_qdelay,
            q
        );
    }
    assert!(from_pairs(vec![("targett", "20ms")]).is_err());
    assert!(from_pairs(vec![("ecn_mask", "ect1")]).is_err());
    assert!(from_pairs(vec![("target", "15")])
        .unwrap_err()
        .contains("missing unit"));
}

#[test]
fn pi_update_uses_max_of_head_sojourns_and_runs_every_tupdate() {
    let mut q = default_aqm();
    q.enqueue(Packet::new(0, 0, 100, Ecn::Ect0), Nanos::ZERO)
        .unwrap(); // C head at 0
    q.enqueue(Packet::new(1, 0, 100, Ecn::Ect1), Nanos::from_ms(10))
        .unwrap(); // L head at 10 ms
    q.on_timer(Nanos::from_ms(15)); // early call: ignored
    assert_eq!(q.p_prime(), 0.0);
    q.on_timer(Nanos::from_ms(16));
    // qdelay = max(L 6 ms, C 16 ms) = 16 ms:
    // 0.16·(0.016 − 0.015) + 3.2·(0.016 − 0) = 0.00016 + 0.0512 = 0.05136.
    // (L's 6 ms alone would give 0.16·(−0.009) + 3.2·0.006 = 0.01776.)
    assert!((q.p_prime() - 0.05136).abs() < 1e-12, "{}", q.p_prime());
    assert_eq!(q.next_wakeup(), Some(Nanos::from_ms(32)));
    // A late call re-arms from its own time, as Linux's hrtimer does from "now".
    q.on_timer(Nanos::from_ms(40));
    assert_eq!(q.next_wakeup(), Some(Nanos::from_ms(56)));
}

#[test]
fn pi_constant_25ms_sojourn_closed_form_through_the_qdisc() {
    // First update at 16 ms with empty queues: 0.16·(0 − 0.015) = −0.0024 → clamped at 0.
    // Then at 32, 48, ... ms the C head was enqueued exactly 25 ms earlier (at 16n − 9 ms),
    // so after the m-th such update p' = 0.0816 + (m − 1)·0.0016 (see pi2.rs).
    // 100-byte packets keep the backlog under 2·MTU, so nothing is ever marked or dropped.
    let mut q = default_aqm();
    q.on_timer(Nanos::from_ms(16));
    assert_eq!(q.p_prime(), 0.0);
    let mut d = Vec::new();
    for m in 1..=8u64 {
        let t_update = Nanos::from_ms(16 * (m + 1));
        q.enqueue(
            Packet::new(m, 0, 100, Ecn::Ect0),
            t_update.saturating_sub(Nanos::from_ms(25)),
        )
        .unwrap();
        if m > 1 {
            // remove the previous head so the new one is at the head
            let out = q.dequeue(t_update - Nanos::from_ms(1), &mut d).unwrap();
            assert_eq!(out.id, m - 1);
        }
        assert_eq!(q.next_wakeup(), Some(t_update));
        q.on_timer(t_update);
        let want = 0.0816 + (m - 1) as f64 * 0.0016;
        assert!((q.p_prime() - want).abs() < 1e-12, "m={m}: {}", q.p_prime());
    }
    assert!(d.is_empty());
}

#[test]
fn two_mtu_floor_blocks_all_action_even_at_p_one() {
    // p' = 1 with k = 2 is overload: every C packet that is judged is dropped.
    let mut q = default_aqm();
    q.set_p_prime(1.0);
    assert!(q.overloaded());
    // Two packets (3000 B): after the first is removed 1500 B remain < 3000 → no action.
    q.enqueue(pkt(0, Ecn::NotEct), Nanos::ZERO).unwrap();
    q.enqueue(pkt(1, Ecn::NotEct), Nanos::ZERO).unwrap();
    let (out, dropped) = drain(&mut q, Nanos::ZERO);
    assert_eq!(out.len(), 2);
    assert!(dropped.is_empty());
    // Three packets: removing the first leaves exactly 3000 B (not < 3000) → judged → drop;
    // the second then leaves 1500 B → passes; the third passes too.
    for id in 10..13 {
        q.enqueue(pkt(id, Ecn::NotEct), Nanos::ZERO).unwrap();
    }
    let (out, dropped) = drain(&mut q, Nanos::ZERO);
    assert_eq!(dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![10]);
    assert_eq!(out.iter().map(|p| p.id).collect::<Vec<_>>(), vec![11, 12]);
    assert_eq!(q.stats().dropped_dequeue, 1);
    assert_eq!(q.ecn_mark(), 0);
    // L4S packets too: two ECT(1) packets at p' = 1 pass unmarked (sojourn 0: no step).
    q.enqueue(pkt(20, Ecn::Ect1), Nanos::ZERO).unwrap();
    q.enqueue(pkt(21, Ecn::Ect1), Nanos::ZERO).unwrap();
    let (out, dropped) = drain(&mut q, Nanos::ZERO);
    assert_eq!(ecns(&out), vec![Ecn::Ect1, Ecn::Ect1]);
    assert!(dropped.is_empty());
}

#[test]
fn drop_early_judges_at_enqueue_against_the_backlog_already_queued() {
    let mut q = aqm(DualPi2Params {
        drop_early: true,
        ..Default::default()
    });
    q.set_p_prime(1.0); // overload: classic drops
    assert!(q.enqueue(pkt(0, Ecn::NotEct), Nanos::ZERO).is_ok()); // 0 B queued
    assert!(q.enqueue(pkt(1, Ecn::NotEct), Nanos::ZERO).is_ok()); // 1500 B
    assert_eq!(
        q.enqueue(pkt(2, Ecn::NotEct), Nanos::ZERO).unwrap_err().id,
        2
    ); // 3000 B
    assert_eq!(q.enqueue(pkt(3, Ecn::Ect0), Nanos::ZERO).unwrap_err().id, 3);
    let (out, dropped) = drain(&mut q, Nanos::ZERO);
    assert_eq!(out.len(), 2);
    assert!(dropped.is_empty()); // nothing more is judged at dequeue
    let s = q.stats();
    assert_eq!((s.enqueued, s.dropped_enqueue, s.dequeued), (2, 2, 2));
}

/// Judge L or C packets of codepoint `ecn` at a fixed p' with the 2·MTU floor never in the
/// way: before each dequeue the queue is refilled to 40 full packets, so even a run of drops
/// inside one dequeue call leaves ≥ 2 packets (3000 B, not < 3000) behind every judged one
/// (a run of 38 drops has probability ≤ 0.36^38 ≈ 1e-17). Runs `rounds` dequeue calls and
/// returns (judged, marked, dropped); judged = forwarded + dropped.
fn judge_many(q: &mut DualPi2, ecn: Ecn, rounds: u64) -> (u64, u64, u64) {
    let mut dropped = Vec::new();
    let (mut id, mut judged, mut marks, mut drops) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..rounds {
        while q.backlog_pkts() < 40 {
            q.enqueue(pkt(id, ecn), Nanos::ZERO).unwrap();
            id += 1;
        }
        dropped.clear();
        let p = q.dequeue(Nanos::ZERO, &mut dropped).unwrap();
        marks += (p.ecn == Ecn::Ce) as u64;
        drops += dropped.len() as u64;
        judged += 1 + dropped.len() as u64;
    }
    (judged, marks, drops)
}

#[test]
fn coupled_marking_rates_match_p_cl_and_p_c() {
    // p' = 0.2, k = 2: L marks with p_CL = 0.4, C with p_C = 0.04 (marks for ECT(0), drops
    // for Not-ECT). n ≥ 20000 judged; 5σ bounds: L sqrt(0.4·0.6/n) = 0.00346 → ±0.0173;
    // C sqrt(0.04·0.96/n) = 0.00139 → ±0.0069.
    let n = 20_000;
    let run = |ecn| {
        let mut q = default_aqm();
        q.set_p_prime(0.2);
        judge_many(&mut q, ecn, n)
    };
    let (j, m, d) = run(Ecn::Ect1);
    assert_eq!((j, d), (n, 0));
    let rate = m as f64 / j as f64;
    assert!((rate - 0.4).abs() < 0.0173, "L mark rate {rate}");
    let (j, m, d) = run(Ecn::Ect0);
    assert_eq!((j, d), (n, 0));
    let rate = m as f64 / j as f64;
    assert!((rate - 0.04).abs() < 0.0069, "C mark rate {rate}");
    let (j, m, d) = run(Ecn::NotEct);
    assert_eq!(m, 0);
    let rate = d as f64 / j as f64;
    assert!((rate - 0.04).abs() < 0.0069, "C drop rate {rate}");
}

#[test]
fn overload_with_and_without_drop_overload() {
    let n = 20_000;
    // drop_overload, p' = 0.6 (> 1/k = 0.5): L drops with p'² = 0.36 and every L packet that
    // survives is CE-marked (Linux `goto mark`). 5σ: sqrt(0.36·0.64/n) = 0.00339 → ±0.017.
    let mut q = default_aqm();
    q.set_p_prime(0.6);
    assert!(q.overloaded());
    let (j, m, d) = judge_many(&mut q, Ecn::Ect1, n);
    let drop_rate = d as f64 / j as f64;
    assert!((drop_rate - 0.36).abs() < 0.017, "{drop_rate}");
    assert_eq!(m, n); // every forwarded L packet marked
                      // Classic packets at overload are dropped, never marked, with p'² even if ECN-capable.
    let mut q = default_aqm();
    q.set_p_prime(0.6);
    let (j, m, d) = judge_many(&mut q, Ecn::Ect0, n);
    assert_eq!(m, 0);
    let drop_rate = d as f64 / j as f64;
    assert!((drop_rate - 0.36).abs() < 0.017, "{drop_rate}");

    // Without drop_overload p' is capped at 1/k = 0.5 → k·p' = 1: not overloaded, every L
    // packet marked, none dropped.
    let no_drop = DualPi2Params {
        drop_overload: false,
        ..Default::default()
    };
    let mut q = aqm(no_drop.clone());
    q.set_p_prime(0.9);
    assert_eq!(q.p_prime(), 0.5);
    assert!(!q.overloaded());
    assert_eq!(judge_many(&mut q, Ecn::Ect1, 1000), (1000, 1000, 0));
    // The PI itself also stops at 1/k: a 1 s queue would push p' far above.
    let mut q = aqm(no_drop);
    q.enqueue(pkt(0, Ecn::Ect0), Nanos::ZERO).unwrap();
    q.on_timer(Nanos::from_secs(1));
    assert_eq!(q.p_prime(), 0.5);
}

#[test]
fn overload_boundary_just_below_and_above_one_over_k() {
    // k = 2. p' = 0.499: k·p' = 0.998, not overloaded → C ECT(0) packets are marked with
    // p'² ≈ 0.249, never dropped. p' = 0.501: overloaded → C ECT(0) dropped with p'², never
    // marked.
    let mut q = default_aqm();
    q.set_p_prime(0.499);
    let (_, m, d) = judge_many(&mut q, Ecn::Ect0, 2000);
    assert_eq!(d, 0);
    assert!(m > 0);
    let mut q = default_aqm();
    q.set_p_prime(0.501);
    let (_, m, d) = judge_many(&mut q, Ecn::Ect0, 2000);
    assert_eq!(m, 0);
    assert!(d > 0);
}

#[test]
fn step_marks_in_time_mode() {
    let mut q = default_aqm(); // p' = 0: only the step acts
    for id in 0..3 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    q.enqueue(pkt(3, Ecn::Ce), Nanos::ZERO).unwrap();
    let mut d = Vec::new();
    // 0.5 ms: below 1 ms; 1 ms: equal, not greater → no mark; 1.5 ms: mark.
    assert_eq!(
        q.dequeue(Nanos::from_us(500), &mut d).unwrap().ecn,
        Ecn::Ect1
    );
    assert_eq!(q.dequeue(Nanos::from_ms(1), &mut d).unwrap().ecn, Ecn::Ect1);
    assert_eq!(
        q.dequeue(Nanos::from_us(1500), &mut d).unwrap().ecn,
        Ecn::Ce
    );
    // An already-CE packet stays CE and counts as a mark (INET_ECN_set_ce returns true).
    assert_eq!(
        q.dequeue(Nanos::from_us(1500), &mut d).unwrap().ecn,
        Ecn::Ce
    );
    assert_eq!((q.step_marks(), q.ecn_mark()), (2, 2));
    let mut s = Vec::new();
    q.sample(Nanos::from_ms(2), &mut s);
    assert_eq!((s[0].marks, s[0].packets), (2, 4));
}

#[test]
fn step_marks_in_packet_mode() {
    let mut q = aqm(DualPi2Params {
        step_thresh_pkts: Some(2),
        ..Default::default()
    });
    for id in 0..5 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    // L lengths after each removal: 4, 3, 2, 1, 0 → marked while > 2.
    let (out, _) = drain(&mut q, Nanos::from_secs(1));
    assert_eq!(
        ecns(&out),
        vec![Ecn::Ce, Ecn::Ce, Ecn::Ect1, Ecn::Ect1, Ecn::Ect1]
    );
    assert_eq!(q.step_marks(), 2);
}

#[test]
fn min_qlen_step_is_decided_at_enqueue() {
    let mut q = aqm(DualPi2Params {
        min_qlen_step: 2,
        ..Default::default()
    });
    // Packets find 0, 1, 2, 3 packets in L → apply_step false, false, true, true.
    for id in 0..4 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    let (out, _) = drain(&mut q, Nanos::from_ms(5)); // all waited 5 ms > 1 ms
    assert_eq!(ecns(&out), vec![Ecn::Ect1, Ecn::Ect1, Ecn::Ce, Ecn::Ce]);
}

#[test]
fn credit_wrr_service_order_and_reset() {
    // 20 L + 5 C of 1500 B at t = 0, wc = 10, wl = 90, credit −120000.
    // L while credit ≤ 0, +10·1500 each: after 9 L credit = 15000 > 0 → C (−90·1500 →
    // −120000) → 9 L (→ 15000) → C (→ −120000) → last 2 L (→ −90000) → 3 C with L empty
    // (no change). Then a dequeue on empty queues resets the credit to −120000.
    let mut q = default_aqm();
    for id in 0..20 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    for id in 100..105 {
        q.enqueue(pkt(id, Ecn::NotEct), Nanos::ZERO).unwrap();
    }
    let mut d = Vec::new();
    let mut order = String::new();
    for _ in 0..25 {
        let p = q.dequeue(Nanos::ZERO, &mut d).unwrap();
        order.push(if p.id < 100 { 'L' } else { 'C' });
    }
    assert_eq!(order, "LLLLLLLLLCLLLLLLLLLCLLCCC");
    assert_eq!(q.credit(), Some(-90_000));
    assert!(q.dequeue(Nanos::ZERO, &mut d).is_none());
    assert_eq!(q.credit(), Some(-120_000));
    assert!(d.is_empty());
}

#[test]
fn credit_wrr_five_and_five() {
    // 5 L + 5 C at t = 0: credit −120000 + 5·15000 = −45000 stays ≤ 0 while L lasts, so all
    // L go first; then C with L empty (no credit change).
    let mut q = default_aqm();
    for id in 0..5 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
        q.enqueue(pkt(100 + id, Ecn::Ect0), Nanos::ZERO).unwrap();
    }
    let (out, _) = drain(&mut q, Nanos::ZERO);
    let ids: Vec<u64> = out.iter().map(|p| p.id).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4, 100, 101, 102, 103, 104]);
    assert_eq!(q.credit(), Some(-120_000)); // reset by the final empty dequeue
}

#[test]
fn dropped_packets_do_not_change_the_credit() {
    // c_protection 90: wc = 90, wl = 10, credit 1500·80 = 120000 > 0 → C first.
    // k = 1, p' = 1: not overloaded (1·1 = 1), so C Not-ECT drops, C ECT(0) and L mark.
    let mut q = aqm(DualPi2Params {
        c_protection: 90,
        k: 1,
        ..Default::default()
    });
    q.set_p_prime(1.0);
    for (id, ecn) in [(0, Ecn::NotEct), (1, Ecn::NotEct), (2, Ecn::Ect0)] {
        q.enqueue(pkt(id, ecn), Nanos::ZERO).unwrap();
    }
    for id in 10..13 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    let mut d = Vec::new();
    // C0 (7500 B left) and C1 (6000 B left) dropped; C2 (4500 B left) marked and sent:
    // credit −= 10·1500 once → 105000 (it would be 75000 if drops counted).
    let p = q.dequeue(Nanos::ZERO, &mut d).unwrap();
    assert_eq!((p.id, p.ecn), (2, Ecn::Ce));
    assert_eq!(d.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(q.credit(), Some(105_000));
    // L0 leaves 3000 B → judged → CE; C empty so the credit does not move.
    // L1, L2 leave < 3000 B → untouched.
    let (out, _) = drain(&mut q, Nanos::ZERO);
    assert_eq!(ecns(&out), vec![Ecn::Ce, Ecn::Ect1, Ecn::Ect1]);
    assert_eq!(q.credit(), Some(120_000)); // reset by the final empty dequeue
}

#[test]
fn tsfifo_scheduler_serves_the_tshifted_oldest() {
    let mut q = aqm(DualPi2Params {
        scheduler: SchedulerKind::Tsfifo,
        ..Default::default()
    });
    assert_eq!(q.credit(), None);
    // tshift defaults to 2·target = 30 ms.
    q.enqueue(pkt(0, Ecn::NotEct), Nanos::ZERO).unwrap();
    q.enqueue(pkt(1, Ecn::Ect1), Nanos::from_ms(10)).unwrap();
    let mut d = Vec::new();
    // At 20 ms: L 10 ms + 30 ≥ C 20 ms → L.
    assert_eq!(q.dequeue(Nanos::from_ms(20), &mut d).unwrap().id, 1);
    q.enqueue(pkt(2, Ecn::Ect1), Nanos::from_ms(45)).unwrap();
    // At 50 ms: L 5 ms + 30 = 35 < C 50 ms → C.
    assert_eq!(q.dequeue(Nanos::from_ms(50), &mut d).unwrap().id, 0);
}

#[test]
fn ramp_variant_uses_max_of_ramp_and_coupled() {
    let params = DualPi2Params {
        l_aqm: LAqmKind::Ramp,
        ..Default::default()
    };
    // p' = 0: ramp only. At 1.2 ms the ramp is 1; the last packet is alone (1 ≤ Th_len).
    let mut q = aqm(params.clone());
    for id in 0..3 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    let (out, _) = drain(&mut q, Nanos::from_us(1200));
    assert_eq!(ecns(&out), vec![Ecn::Ce, Ecn::Ce, Ecn::Ect1]);
    assert_eq!(q.step_marks(), 0);
    // p' = 0.5, k = 2 → p_CL = 1 (not overload); sojourn 0 → ramp 0; max = p_CL where the
    // 2·MTU floor allows: 4500 B and 3000 B left → CE; 1500 B, 0 B left → untouched.
    let mut q = aqm(params);
    q.set_p_prime(0.5);
    for id in 0..4 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    let (out, _) = drain(&mut q, Nanos::ZERO);
    assert_eq!(ecns(&out), vec![Ecn::Ce, Ecn::Ce, Ecn::Ect1, Ecn::Ect1]);
}

#[test]
fn tail_drop_at_limit_counts_per_queue() {
    let mut q = aqm(DualPi2Params {
        limit: 2,
        ..Default::default()
    });
    q.enqueue(pkt(0, Ecn::Ect1), Nanos::ZERO).unwrap();
    q.enqueue(pkt(1, Ecn::NotEct), Nanos::ZERO).unwrap();
    assert_eq!(q.enqueue(pkt(2, Ecn::Ect1), Nanos::ZERO).unwrap_err().id, 2);
    assert_eq!(q.maxq(), 1); // largest total length found by an accepted packet
    let mut s = Vec::new();
    q.sample(Nanos::ZERO, &mut s);
    assert_eq!(
        (s[0].name, s[0].drops, s[1].name, s[1].drops),
        ("L", 1, "C", 0)
    );
}

#[test]
fn sample_and_xstats_report_linux_names() {
    let mut q = default_aqm();
    q.set_p_prime(0.3);
    q.enqueue(pkt(0, Ecn::Ect1), Nanos::ZERO).unwrap();
    q.enqueue(pkt(1, Ecn::Ect0), Nanos::from_us(500)).unwrap();
    let now = Nanos::from_ns(2_000_700);
    let mut s = Vec::new();
    q.sample(now, &mut s);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].name, s[1].name), ("L", "C"));
    assert_eq!(s[0].head_sojourn, now);
    assert_eq!(s[1].head_sojourn, Nanos::from_ns(1_500_700));
    // p' = 0.3 → p_C = 0.09, p_CL = 0.6.
    assert!((s[1].p_c - 0.09).abs() < 1e-15 && (s[1].p_cl - 0.6).abs() < 1e-15);
    assert_eq!(s[0].p_prime, 0.3);
    let x: std::collections::HashMap<_, _> = q.xstats(now).into_iter().collect();
    assert_eq!(x["prob"], 0.3);
    assert_eq!(x["delay_l"], 2000.0); // 2_000_700 ns → 2000 us (rounded down)
    assert_eq!(x["delay_c"], 1500.0);
    assert_eq!((x["packets_in_l"], x["packets_in_c"]), (1.0, 1.0));
    assert_eq!(x["credit"], -120_000.0);
    for k in ["maxq", "ecn_mark", "step_marks"] {
        assert!(x.contains_key(k), "{k}");
    }
}

/// Linux `must_drop` tests `sch->qstats.backlog`, the byte backlog of BOTH queues, after
/// `dequeue_packet` has already subtracted the packet being judged.
#[test]
fn two_mtu_floor_counts_both_queues_after_removal() {
    // k = 1, p' = 1: k·p' = 1 is not overload, so a judged L packet is CE with probability 1.
    // Credit −120000 ≤ 0 → L is served first.
    let params = DualPi2Params {
        k: 1,
        ..Default::default()
    };
    // L0 + two C packets: after L0 leaves, 2·1500 = 3000 B remain (all in C), not < 3000 →
    // judged → CE. (Reading L's own backlog, 0 B, would leave it unmarked.)
    // Then C0 leaves 1500 B and C1 0 B: < 3000 → both pass untouched.
    let mut q = aqm(params.clone());
    q.set_p_prime(1.0);
    q.enqueue(pkt(0, Ecn::Ect1), Nanos::ZERO).unwrap();
    q.enqueue(pkt(10, Ecn::NotEct), Nanos::ZERO).unwrap();
    q.enqueue(pkt(11, Ecn::NotEct), Nanos::ZERO).unwrap();
    let (out, dropped) = drain(&mut q, Nanos::ZERO);
    assert_eq!(
        out.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![0, 10, 11]
    );
    assert_eq!(ecns(&out), vec![Ecn::Ce, Ecn::NotEct, Ecn::NotEct]);
    assert!(dropped.is_empty());
    assert_eq!(q.ecn_mark(), 1);
    // L0 + one C packet: 3000 B before the removal but 1500 B after → not judged.
    let mut q = aqm(params);
    q.set_p_prime(1.0);
    q.enqueue(pkt(0, Ecn::Ect1), Nanos::ZERO).unwrap();
    q.enqueue(pkt(10, Ecn::NotEct), Nanos::ZERO).unwrap();
    let (out, _) = drain(&mut q, Nanos::ZERO);
    assert_eq!(ecns(&out), vec![Ecn::Ect1, Ecn::NotEct]);
    assert_eq!(q.ecn_mark(), 0);
}

/// Linux rolls the coupled mark (`must_drop`) and then the step (`do_step_aqm`) on the same
/// packet; `dualpi2_mark` counts `ecn_mark` each time `INET_ECN_set_ce` succeeds, which it
/// also does on an already-CE packet.
#[test]
fn coupled_and_step_marks_both_count_in_ecn_mark() {
    // k = 1, p' = 1 → coupled CE with probability 1 where the floor allows; all three L packets
    // waited 2 ms > 1 ms → step CE.
    // L0: 3000 B left → coupled (ecn_mark 1) + step (ecn_mark 2, step_marks 1).
    // L1: 1500 B left → step only (3, 2).  L2: 0 B left → step only (4, 3).
    let mut q = aqm(DualPi2Params {
        k: 1,
        ..Default::default()
    });
    q.set_p_prime(1.0);
    for id in 0..3 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    let (out, _) = drain(&mut q, Nanos::from_ms(2));
    assert_eq!(ecns(&out), vec![Ecn::Ce; 3]);
    assert_eq!((q.ecn_mark(), q.step_marks()), (4, 3));
    // Forwarded packets carrying a mark: 3 (a packet counts once here).
    let mut s = Vec::new();
    q.sample(Nanos::from_ms(2), &mut s);
    assert_eq!((s[0].marks, s[0].packets), (3, 3));
}

/// `do_step_aqm` in packet mode reads `qdisc_qlen(q->l_queue)` and `skb_apply_step` reads the
/// same L length: the C-queue never counts.
#[test]
fn packet_step_and_min_qlen_step_count_only_the_l_queue() {
    let mut q = aqm(DualPi2Params {
        step_thresh_pkts: Some(1),
        min_qlen_step: 1,
        ..Default::default()
    });
    // Five C packets first: a total-length reading would see ≥ 5 everywhere.
    for id in 100..105 {
        q.enqueue(pkt(id, Ecn::NotEct), Nanos::ZERO).unwrap();
    }
    // L0 finds 0 packets in L (< min_qlen_step 1 → apply_step off); L1 finds 1, L2 finds 2.
    for id in 0..3 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    // p' = 0: no coupled marks. Credit −120000 → the three L go first (+15000 each, still ≤ 0).
    // L lengths after each removal: 2, 1, 0. L0: 2 > 1 but apply_step off → no mark;
    // L1: 1, not > 1 → no mark; L2: 0 → no mark.
    let (out, _) = drain(&mut q, Nanos::ZERO);
    assert_eq!(
        out.iter().map(|p| p.id).take(3).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert!(out.iter().all(|p| p.ecn != Ecn::Ce));
    assert_eq!(q.step_marks(), 0);
    // Four L packets: L3 finds 0 (off), L4..L6 find 1..3 (on). L lengths after removal:
    // 3, 2, 1, 0 → L4 (2 left > 1) is the only one both flagged and over the threshold.
    for id in 3..7 {
        q.enqueue(pkt(id, Ecn::Ect1), Nanos::ZERO).unwrap();
    }
    let (out, _) = drain(&mut q, Nanos::ZERO);
    assert_eq!(ecns(&out), vec![Ecn::Ect1, Ecn::Ce, Ecn::Ect1, Ecn::Ect1]);
    assert_eq!(q.step_marks(), 1);
}

/// With `drop_early` only `must_drop` moves to enqueue; `do_step_aqm` stays at dequeue.
#[test]
fn drop_early_keeps_the_step_at_dequeue() {
    let mut q = aqm(DualPi2Params {
        drop_early: true,
        ..Default::default()
    });
    // p' = 0: nothing happens at enqueue. Sojourns at dequeue: 2 ms, then 0.5 ms.
    q.enqueue(pkt(0, Ecn::Ect1), Nanos::ZERO).unwrap();
    q.enqueue(pkt(1, Ecn::Ect1), Nanos::from_us(1500)).unwrap();
    let mut d = Vec::new();
    assert_eq!(q.dequeue(Nanos::from_ms(2), &mut d).unwrap().ecn, Ecn::Ce);
    assert_eq!(q.dequeue(Nanos::from_ms(2), &mut d).unwrap().ecn, Ecn::Ect1);
    assert_eq!(q.step_marks(), 1);
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Clone, Debug)]
    enum Op {
        Enqueue(u8, u32),
        Dequeue,
        Advance(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..4, 64u32..1600).prop_map(|(e, b)| Op::Enqueue(e, b)),
            3 => Just(Op::Dequeue),
            2 => (0u32..20_000).prop_map(Op::Advance),
        ]
    }

    fn params() -> impl Strategy<Value = DualPi2Params> {
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            0u8..3,
            1u32..5,
            0u32..=100,
            1u64..40,
        )
            .prop_map(|(tsfifo, ramp, early, overload, mask, k, cp, limit)| {
                DualPi2Params {
                    limit,
                    scheduler: if tsfifo {
                        SchedulerKind::Tsfifo
                    } else {
                        SchedulerKind::Wrr
                    },
                    l_aqm: if ramp { LAqmKind::Ramp } else { LAqmKind::Step },
                    drop_early: early,
                    drop_overload: overload,
                    ecn_mask: [EcnMask::L4s, EcnMask::Classic, EcnMask::Any][mask as usize],
                    k,
                    c_protection: cp,
                    // Strong gains and a short target so p' swings over [0, 1] quickly.
                    alpha: 40.0,
                    beta: 200.0,
                    target: Nanos::from_ms(1),
                    tupdate: Nanos::from_ms(2),
                    ..Default::default()
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn conservation_order_and_ecn_invariants(
            p in params(),
            ops in proptest::collection::vec(op(), 1..300),
            seed in any::<u64>(),
        ) {
            let mask = p.ecn_mask;
            let mut q = DualPi2::new(p, crate::rng::Rng::new(seed)).unwrap();
            let mut now = Nanos::ZERO;
            let mut next_id = 0u64;
            let mut orig: HashMap<u64, Ecn> = HashMap::new();
            let (mut offered, mut refused, mut sent, mut dropped_n) = (0u64, 0u64, 0u64, 0u64);
            let mut last_id: HashMap<QueueId, u64> = HashMap::new();
            let mut dropped = Vec::new();
            // Bytes of each queued packet, and their sum (the backlog the stats must show).
            let mut size: HashMap<u64, u32> = HashMap::new();
            let mut queued_bytes = 0u64;
            for op in ops {
                match op {
                    Op::Enqueue(e, bytes) => {
                        let ecn = Ecn::ALL[e as usize];
                        orig.insert(next_id, ecn);
                        offered += 1;
                        size.insert(next_id, bytes);
                        queued_bytes += bytes as u64;
                        if let Err(back) = q.enqueue(Packet::new(next_id, 0, bytes, ecn), now) {
                            refused += 1;
                            queued_bytes -= bytes as u64;
                            prop_assert_eq!(back.id, next_id);
                            prop_assert!(back.ecn == ecn || back.ecn == Ecn::Ce);
                        }
                        next_id += 1;
                    }
                    Op::Dequeue => {
                        dropped.clear();
                        let out = q.dequeue(now, &mut dropped);
                        for d in dropped.iter().chain(out.iter()) {
                            queued_bytes -= size[&d.id] as u64;
                            let e0 = orig[&d.id];
                            // Not-ECT is never CE; otherwise only CE may be written.
                            if e0 == Ecn::NotEct {
                                prop_assert_eq!(d.ecn, Ecn::NotEct);
                            } else {
                                prop_assert!(d.ecn == e0 || d.ecn == Ecn::Ce);
                            }
                            // FIFO within each queue: ids increase.
                            let cls = mask.classify(e0);
                            if let Some(prev) = last_id.insert(cls, d.id) {
                                prop_assert!(d.id > prev, "{:?}: {} after {}", cls, d.id, prev);
                            }
                        }
                        dropped_n += dropped.len() as u64;
                        sent += out.is_some() as u64;
                    }
                    Op::Advance(us) => {
                        now += Nanos::from_us(us as u64);
                        if let Some(w) = q.next_wakeup() {
                            if w <= now {
                                q.on_timer(now);
                            }
                        }
                    }
                }
                let s = q.stats();
                prop_assert_eq!(offered, s.enqueued + s.dropped_enqueue);
                prop_assert_eq!(refused, s.dropped_enqueue);
                prop_assert_eq!(s.enqueued, s.dequeued + s.dropped_dequeue + s.backlog_pkts);
                prop_assert_eq!(s.backlog_bytes, queued_bytes);
                prop_assert_eq!(sent, s.dequeued);
                prop_assert_eq!(dropped_n, s.dropped_dequeue);
                for v in [q.p_prime(), q.p_c(), q.p_cl()] {
                    prop_assert!((0.0..=1.0).contains(&v), "probability {}", v);
                }
                let mut smp = Vec::new();
                q.sample(now, &mut smp);
                prop_assert_eq!(smp[0].backlog_pkts + smp[1].backlog_pkts, s.backlog_pkts);
                prop_assert_eq!(smp[0].packets + smp[1].packets, s.dequeued);
                prop_assert_eq!(smp[0].drops + smp[1].drops, s.dropped_enqueue + s.dropped_dequeue);
                prop_assert_eq!(smp[0].marks + smp[1].marks, s.marked);
            }
        }
    }
}

/// 10 Mb/s: a 1500 B packet takes 1.2 ms, more than the 1 ms step threshold. One C packet is
/// in service from t = 0; L packets arrive behind it and are served back to back. Returns the
/// L packets' codepoints in service order.
fn step_behind_a_classic_packet(profile: KernelProfile) -> Vec<Ecn> {
    let mut q = aqm(DualPi2Params {
        profile,
        min_qlen_step: profile.min_qlen_step(),
        pi_qdelay: profile.pi_qdelay(),
        ..Default::default()
    });
    let us = Nanos::from_us;
    let mut d = Vec::new();
    q.enqueue(pkt(100, Ecn::NotEct), Nanos::ZERO).unwrap();
    assert_eq!(q.dequeue(Nanos::ZERO, &mut d).unwrap().id, 100);
    // l1 finds 0 packets in L, served at 1.2 ms (sojourn 1.1 ms).
    q.enqueue(pkt(1, Ecn::Ect1), us(100)).unwrap();
    let mut out = vec![q.dequeue(us(1200), &mut d).unwrap()];
    // l2, l3, l4 find 0, 1, 2 packets in L; served at 2.4, 3.6, 4.8 ms (sojourns 1.1, 2.25,
    // 3.4 ms: all above 1 ms).
    for (id, t) in [(2, 1300), (3, 1350), (4, 1400)] {
        q.enqueue(pkt(id, Ecn::Ect1), us(t)).unwrap();
    }
    for t in [2400, 3600, 4800] {
        out.push(q.dequeue(us(t), &mut d).unwrap());
    }
    assert!(d.is_empty());
    assert_eq!(
        out.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    ecns(&out)
}

#[test]
fn mainline_profile_steps_every_l_packet_over_the_threshold() {
    // Mainline: apply_step = qlen(L) >= min_qlen_step = 0, always; p' = 0, so every mark is
    // a step mark: all four sojourns exceed 1 ms.
    assert_eq!(
        step_behind_a_classic_packet(KernelProfile::Mainline),
        vec![Ecn::Ce; 4]
    );
}

#[test]
fn l4steam_profile_steps_only_when_the_l_queue_is_building() {
    // L4S team dualpi2_qdisc_enqueue: apply_step = qdisc_qlen(l_queue) > 1 before the
    // packet joins: only l4 (found 2) may be stepped, though all waited over 1 ms.
    assert_eq!(
        step_behind_a_classic_packet(KernelProfile::L4steam),
        vec![Ecn::Ect1, Ecn::Ect1, Ecn::Ect1, Ecn::Ce]
    );
}

#[test]
fn pi_input_is_timer_head_sojourn_or_last_dequeue_per_profile() {
    // Three C packets at t = 0; one dequeued at 5 ms (head sojourn 5 ms then); the first
    // update at 16 ms. Mainline get_queue_delays: head sojourn now = 16 ms →
    // p' = 0.16·(0.016 − 0.015) + 3.2·0.016 = 0.05136. L4S team: qdelay_c written at the
    // last dequeue = 5 ms → p' = 0.16·(0.005 − 0.015) + 3.2·0.005 = 0.0144.
    for (profile, want) in [
        (KernelProfile::Mainline, 0.05136),
        (KernelProfile::L4steam, 0.0144),
    ] {
        let mut q = aqm(DualPi2Params {
            profile,
            min_qlen_step: profile.min_qlen_step(),
            pi_qdelay: profile.pi_qdelay(),
            ..Default::default()
        });
        for id in 0..3 {
            q.enqueue(pkt(id, Ecn::NotEct), Nanos::ZERO).unwrap();
        }
        let mut d = Vec::new();
        q.dequeue(Nanos::from_ms(5), &mut d).unwrap();
        q.on_timer(Nanos::from_ms(16));
        assert!(
            (q.p_prime() - want).abs() < 1e-4,
            "{profile:?}: p' {} want {want}",
            q.p_prime()
        );
    }
}
