//! A minimal direction of the link: tail-drop FIFO, optional constant-rate serialisation
//! (bytes·8/rate, no bursts) and a fixed one-way delay. Same method names as `path::Path`.

use l4s_core::{Nanos, Rate};
use std::collections::VecDeque;

/// One direction: FIFO → constant-rate server → delay line.
#[derive(Debug)]
pub struct PassThrough {
    rate: Option<Rate>,
    delay: Nanos,
    limit_bytes: u64,
    /// Packets with their delivery instants (departure + delay), in order.
    queue: VecDeque<(Vec<u8>, Nanos)>,
    /// When the link finishes serialising the last accepted packet.
    link_free: Nanos,
    /// Bytes accepted but not yet departed from the link (the FIFO backlog).
    backlog: VecDeque<(u64, Nanos)>,
    backlog_bytes: u64,
    /// Counters.
    pub stats: PassStats,
    lateness_ns: Vec<u64>,
}

/// What one direction counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassStats {
    /// Packets read from the sender's side.
    pub packets_in: u64,
    /// Packets written to the receiver's side.
    pub packets_out: u64,
    /// Bytes written to the receiver's side.
    pub bytes_out: u64,
    /// Tail drops at the FIFO limit.
    pub drops: u64,
}

/// Lateness figures (actual − scheduled write time) in ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lateness {
    /// Packets measured.
    pub count: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Maximum.
    pub max_ns: u64,
}

impl Lateness {
    /// Nearest-rank percentiles of the given samples.
    pub fn from_samples(mut v: Vec<u64>) -> Lateness {
        if v.is_empty() {
            return Lateness::default();
        }
        v.sort_unstable();
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Lateness {
            count: v.len() as u64,
            p50_ns: rank(0.50),
            p99_ns: rank(0.99),
            max_ns: v[v.len() - 1],
        }
    }
}

impl PassThrough {
    /// `rate` None: no serialisation (delay only); `limit_bytes` bounds the FIFO backlog.
    pub fn new(rate: Option<Rate>, delay: Nanos, limit_bytes: u64) -> PassThrough {
        PassThrough {
            rate,
            delay,
            limit_bytes,
            queue: VecDeque::new(),
            link_free: Nanos::ZERO,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            stats: PassStats::default(),
            lateness_ns: Vec::new(),
        }
    }

    fn drain_backlog(&mut self, now: Nanos) {
        while let Some(&(len, dep)) = self.backlog.front() {
            if dep > now {
                break;
            }
            self.backlog_bytes -= len;
            self.backlog.pop_front();
        }
    }

    /// A packet read at `now`.
    pub fn push(&mut self, pkt: &[u8], now: Nanos) {
        self.stats.packets_in += 1;
        let departure = match self.rate {
            None => now,
            Some(rate) => {
                self.drain_backlog(now);
                let len = pkt.len() as u64;
                if self.backlog_bytes + len > self.limit_bytes {
                    self.stats.drops += 1;
                    return;
                }
                let start = self.link_free.max(now);
                let dep = start + rate.tx_time(len);
                self.link_free = dep;
                self.backlog.push_back((len, dep));
                self.backlog_bytes += len;
                dep
            }
        };
        self.queue.push_back((pkt.to_vec(), departure + self.delay));
    }

    /// The next packet due at `now`, with its scheduled delivery instant.
    pub fn pop_due(&mut self, now: Nanos) -> Option<(Vec<u8>, Nanos)> {
        if self.queue.front().is_some_and(|(_, t)| *t <= now) {
            let (p, t) = self.queue.pop_front()?;
            self.stats.packets_out += 1;
            self.stats.bytes_out += p.len() as u64;
            Some((p, t))
        } else {
            None
        }
    }

    /// When the next packet is due.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.queue.front().map(|(_, t)| *t)
    }

    /// A packet scheduled at `scheduled` was written at `actual`.
    pub fn record_sent(&mut self, scheduled: Nanos, actual: Nanos) {
        self.lateness_ns
            .push(actual.saturating_sub(scheduled).as_ns());
    }

    /// Counters and lateness at the end.
    pub fn finish(self, _now: Nanos) -> (PassStats, Lateness) {
        (self.stats, Lateness::from_samples(self.lateness_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_at_rate_and_adds_delay() {
        // 1500 bytes at 12 Mb/s take 1 ms; 10 ms delay.
        let mut p = PassThrough::new(Some(Rate(12_000_000)), Nanos::from_ms(10), 1_000_000);
        p.push(&[0u8; 1500], Nanos(0));
        p.push(&[0u8; 1500], Nanos(0));
        assert_eq!(p.next_deadline(), Some(Nanos::from_ms(11)));
        assert!(p.pop_due(Nanos::from_ms(11) - Nanos(1)).is_none());
        assert_eq!(
            p.pop_due(Nanos::from_ms(11)).map(|x| x.1),
            Some(Nanos::from_ms(11))
        );
        assert_eq!(p.next_deadline(), Some(Nanos::from_ms(12)));
    }

    #[test]
    fn tail_drops_over_the_limit() {
        let mut p = PassThrough::new(Some(Rate(12_000_000)), Nanos::ZERO, 3000);
        for _ in 0..3 {
            p.push(&[0u8; 1500], Nanos(0));
        }
        assert_eq!(p.stats.drops, 1);
        // After 1 ms the first packet has left: room for one more.
        p.push(&[0u8; 1500], Nanos::from_ms(1));
        assert_eq!(p.stats.drops, 1);
    }

    #[test]
    fn lateness_percentiles_nearest_rank() {
        let l = Lateness::from_samples((1..=100).collect());
        assert_eq!((l.p50_ns, l.p99_ns, l.max_ns, l.count), (50, 99, 100, 100));
    }
}
