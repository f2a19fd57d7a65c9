//! A wall-clock bottleneck relay for tests: client→server datagrams go through l4s-core's
//! DualPI2 (Linux sch_dualpi2.c defaults) and a constant-rate link, then a one-way delay;
//! server→client datagrams get the same delay only. The relay spins (sub-10 µs timing).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use l4s_core::aqm::{Aqm, DualPi2, DualPi2Params};
use l4s_core::{Ecn, Nanos, Packet, Rate, Rng};
use l4s_flow::clock::Clock;
use l4s_flow::sock::{wait, EcnSocket, RecvBatch, BATCH};

/// Busy-wait this long before an event instead of sleeping.
const SPIN: Nanos = Nanos(30_000);
/// IPv4 + UDP header bytes: the link serialises whole IP packets.
const IP_UDP: u32 = 28;

/// What the bottleneck measured in its window [from, until] (relay clock).
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Link busy time / elapsed time over [warmup, end].
    pub utilisation: f64,
    /// Sojourn of every L packet forwarded after warmup, ns.
    pub l_sojourn_ns: Vec<u64>,
    /// Same for C.
    pub c_sojourn_ns: Vec<u64>,
    /// IP bytes forwarded after warmup per client (by client address).
    pub bytes_by_client: HashMap<SocketAddr, u64>,
    /// CE marks and drops by the AQM (whole run).
    pub marks: u64,
    pub drops: u64,
    /// Largest lateness of a link departure or delay-line release, ns (relay accuracy).
    pub max_late_ns: u64,
    /// Measured span, s.
    pub span_s: f64,
    /// Queue samples every `SAMPLE` (DualPI2's tupdate), as samples.parquet rows.
    pub samples: Vec<QueueRow>,
}

/// Sample period of [`QueueRow`]s: 16 ms, DualPI2's tupdate (the simulator's default).
pub const SAMPLE: Nanos = Nanos(16_000_000);

/// One queue at one sampling instant (cumulative marks and drops).
#[derive(Clone, Debug)]
pub struct QueueRow {
    /// Relay clock, s.
    pub t_s: f64,
    /// "L" or "C".
    pub queue: &'static str,
    pub backlog_pkts: u64,
    /// Head sojourn, ms.
    pub sojourn_ms: f64,
    pub marks: u64,
    pub drops: u64,
}

impl LinkStats {
    /// Nearest-rank percentile of L sojourn in ms.
    pub fn l_p(&self, q: f64) -> f64 {
        pct(&self.l_sojourn_ns, q)
    }
    /// Nearest-rank percentile of C sojourn in ms.
    pub fn c_p(&self, q: f64) -> f64 {
        pct(&self.c_sojourn_ns, q)
    }
}

fn pct(v: &[u64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i] as f64 / 1e6
}

/// The relay thread.
pub struct Bottleneck {
    pub port: u16,
    /// CLOCK_MONOTONIC ns of the relay's time zero (for L4SLAB_T0_NS).
    pub origin_ns: u64,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<LinkStats>>,
}

impl Bottleneck {
    /// Listen on `bind`:0 and forward to `server` through `rate` and `one_way` delay each way,
    /// measuring in `window` (ns since start).
    pub fn start(
        bind: IpAddr,
        server: SocketAddr,
        rate: Rate,
        one_way: Nanos,
        window: (Nanos, Nanos),
    ) -> Self {
        let front = EcnSocket::bind(SocketAddr::new(bind, 0)).expect("front");
        let port = front.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let clock = Clock::start();
        let handle = std::thread::spawn(move || {
            // Best effort: real-time priority so that the relay's timing survives a busy machine.
            // SAFETY: sched_param is plain old data; pid 0 is the calling thread.
            unsafe {
                let p = libc::sched_param { sched_priority: 20 };
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
            }
            run(front, clock, bind, server, rate, one_way, window, st)
        });
        Bottleneck {
            port,
            origin_ns: clock.origin_ns(),
            stop,
            handle: Some(handle),
        }
    }

    /// Stop and return the measurements.
    pub fn finish(mut self) -> LinkStats {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .expect("handle")
            .join()
            .expect("relay thread")
    }
}

struct Held {
    data: Vec<u8>,
    client: SocketAddr,
    /// The codepoint the datagram arrived with (its queue: ECT(1)/CE → L).
    ecn_in: Ecn,
}

#[allow(clippy::too_many_arguments)]
fn run(
    mut front: EcnSocket,
    clock: Clock,
    bind: IpAddr,
    server: SocketAddr,
    rate: Rate,
    one_way: Nanos,
    window: (Nanos, Nanos),
    stop: Arc<AtomicBool>,
) -> LinkStats {
    let mut aqm = DualPi2::new(DualPi2Params::default(), Rng::new(1)).expect("dualpi2");
    // Client address → its socket toward the server (one per client, so replies demultiplex).
    let mut backs: Vec<(SocketAddr, EcnSocket)> = Vec::new();
    let mut held: HashMap<u64, Held> = HashMap::new();
    let mut next_id = 0u64;
    // In flight on the link (departure time) and in the delay lines (release time).
    let mut on_link: Option<(Nanos, u64, Ecn)> = None;
    let mut link_free = Nanos::ZERO;
    let mut fwd: VecDeque<(Nanos, u64, Ecn)> = VecDeque::new();
    let mut rev: VecDeque<(Nanos, Vec<u8>, Ecn, SocketAddr)> = VecDeque::new();
    let mut st = LinkStats::default();
    let mut busy_ns = 0u64;
    let mut batch = RecvBatch::new();
    let mut dropped = Vec::new();
    let mut next_sample = SAMPLE;
    let mut qs = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = clock.now();
        // Arrivals from clients.
        loop {
            let n = front.recv_batch(&mut batch).unwrap_or(0);
            for i in 0..n {
                let Some(r) = front.received(&batch, i) else {
                    continue;
                };
                if !backs.iter().any(|(c, _)| *c == r.from) {
                    let b = EcnSocket::bind(SocketAddr::new(bind, 0)).expect("back");
                    b.connect(server).expect("connect");
                    backs.push((r.from, b));
                }
                let id = next_id;
                next_id += 1;
                let mut p = Packet::new(
                    id,
                    0,
                    r.data.len() as u32 + IP_UDP,
                    r.ecn.unwrap_or(Ecn::NotEct),
                );
                p.sent_at = now;
                held.insert(
                    id,
                    Held {
                        data: r.data.to_vec(),
                        client: r.from,
                        ecn_in: r.ecn.unwrap_or(Ecn::NotEct),
                    },
                );
                if let Err(p) = aqm.enqueue(p, now) {
                    held.remove(&p.id);
                }
            }
            if n < BATCH {
                break;
            }
        }
        // Replies from the server: delay only.
        for (client, b) in backs.iter_mut() {
            loop {
                let n = b.recv_batch(&mut batch).unwrap_or(0);
                for i in 0..n {
                    if let Some(r) = b.received(&batch, i) {
                        rev.push_back((
                            now + one_way,
                            r.data.to_vec(),
                            r.ecn.unwrap_or(Ecn::NotEct),
                            *client,
                        ));
                    }
                }
                if n < BATCH {
                    break;
                }
            }
        }
        if now >= next_sample {
            qs.clear();
            aqm.sample(now, &mut qs);
            for q in &qs {
                st.samples.push(QueueRow {
                    t_s: next_sample.as_secs_f64(),
                    queue: q.name,
                    backlog_pkts: q.backlog_pkts,
                    sojourn_ms: q.head_sojourn.as_ms_f64(),
                    marks: q.marks,
                    drops: q.drops,
                });
            }
            next_sample += SAMPLE;
        }
        // AQM timer (PI update every tupdate).
        if aqm.next_wakeup().is_some_and(|t| t <= now) {
            aqm.on_timer(now);
        }
        // Link: a departure completes, the next packet starts service.
        if let Some((dep, id, ecn)) = on_link {
            if dep <= now {
                st.max_late_ns = st.max_late_ns.max(now.0 - dep.0);
                fwd.push_back((dep + one_way, id, ecn));
                on_link = None;
            }
        }
        if on_link.is_none() {
            dropped.clear();
            let pkt = aqm.dequeue(now, &mut dropped);
            for d in &dropped {
                held.remove(&d.id);
            }
            if let Some(p) = pkt {
                // Service starts when both the link and the packet were ready, so that the
                // relay's own lateness does not eat link capacity.
                let start = link_free.max(p.enqueued_at);
                let tx = rate.tx_time(p.bytes as u64);
                let dep = start + tx;
                link_free = dep;
                on_link = Some((dep, p.id, p.ecn));
                if start >= window.0 && dep <= window.1 {
                    busy_ns += tx.0;
                    let soj = now.saturating_sub(p.enqueued_at).0;
                    if let Some(h) = held.get(&p.id) {
                        if matches!(h.ecn_in, Ecn::Ect1 | Ecn::Ce) {
                            st.l_sojourn_ns.push(soj);
                        } else {
                            st.c_sojourn_ns.push(soj);
                        }
                        *st.bytes_by_client.entry(h.client).or_default() += p.bytes as u64;
                    }
                }
            }
        }
        // Delay lines (constant delay: FIFO order is release order).
        while fwd.front().is_some_and(|f| f.0 <= now) {
            let Some((t, id, ecn)) = fwd.pop_front() else {
                break;
            };
            st.max_late_ns = st.max_late_ns.max(now.0 - t.0);
            if let Some(h) = held.remove(&id) {
                if let Some((_, b)) = backs.iter().find(|(c, _)| *c == h.client) {
                    let _ = b.send(&h.data, ecn, None);
                }
            }
        }
        while rev.front().is_some_and(|f| f.0 <= now) {
            let Some((_, data, ecn, client)) = rev.pop_front() else {
                break;
            };
            let _ = front.send(&data, ecn, Some(client));
        }
        // Sleep until the next event (or an arrival), then spin the last SPIN.
        let mut next = next_sample.min(now + Nanos::from_ms(5));
        for t in [
            on_link.map(|o| o.0),
            fwd.front().map(|f| f.0),
            rev.front().map(|r| r.0),
            aqm.next_wakeup(),
        ]
        .into_iter()
        .flatten()
        {
            next = next.min(t);
        }
        let left = next.saturating_sub(clock.now());
        if left > SPIN {
            let mut fds = vec![(front.fd(), false)];
            fds.extend(backs.iter().map(|(_, b)| (b.fd(), false)));
            let _ = wait(&fds, Some(left.0 - SPIN.0));
        }
    }
    let stats = aqm.stats();
    st.marks = stats.marked;
    st.drops = stats.dropped_enqueue + stats.dropped_dequeue;
    let span = window.1.saturating_sub(window.0);
    st.span_s = span.as_secs_f64();
    st.utilisation = if span.0 > 0 {
        busy_ns as f64 / span.0 as f64
    } else {
        0.0
    };
    st
}
