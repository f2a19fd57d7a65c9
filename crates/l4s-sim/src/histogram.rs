//! Log-linear histogram of sojourn times (ns) for summary.json's per-queue percentiles: bounded
//! memory, deterministic, mergeable (the HdrHistogram bucket layout with 2^10 sub-buckets).
//!
//! Values below 2^11 ns (2.048 µs) are counted exactly; above, each power of two [2^m, 2^m+1)
//! is split into 1024 equal buckets, so a bucket's width is at most 1/1024 of its lower edge.
//! A percentile is reported from the bucket's midpoint, hence within 2^-11 (0.049 %) of the
//! exact value it replaces (see [`SojournHistogram::percentiles`]). At most 56 320 counters
//! (440 KiB) exist per queue, whatever the run length: for sojourns up to 1 s, 22 528.

/// Sub-bucket bits: 2^SUB_BITS buckets per power of two.
const SUB_BITS: u32 = 10;
const SUB: u64 = 1 << SUB_BITS;
/// Largest bucket index (of u64::MAX) plus one.
const MAX_BUCKETS: usize = ((64 - SUB_BITS as usize) << SUB_BITS) + SUB as usize;

/// Relative error bound of a reported percentile against the exact one (2^-11).
pub const RELATIVE_ERROR: f64 = 1.0 / (2 * SUB) as f64;

/// Sojourn counts per log-linear bucket, their exact sum and number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SojournHistogram {
    /// Grown on demand to the largest bucket seen.
    counts: Vec<u64>,
    n: u64,
    sum: u128,
}

/// Bucket index of `v`: exact below 2·SUB, else (power of two, top SUB_BITS+1 bits).
#[inline]
pub fn bucket_of(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - SUB_BITS;
    ((shift as usize) << SUB_BITS) + (v >> shift) as usize
}

/// Smallest and largest value that fall in bucket `i`.
pub fn bucket_bounds(i: usize) -> (u64, u64) {
    if i < 2 * SUB as usize {
        return (i as u64, i as u64);
    }
    let shift = (i >> SUB_BITS) as u32 - 1;
    let top = (i as u64 & (SUB - 1)) | SUB;
    let lo = top << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

impl SojournHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Count one sojourn of `v` ns.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = bucket_of(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.n += 1;
        self.sum += v as u128;
    }

    /// Add every count of `other` (the histogram of the two data sets together).
    pub fn merge(&mut self, other: &SojournHistogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.n += other.n;
        self.sum += other.sum;
    }

    /// Number of values counted.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Counters allocated (memory is 8 bytes each; never above 56 320).
    pub fn buckets(&self) -> usize {
        self.counts.len()
    }

    /// Exact mean (the integer sum rounded once), NaN when empty. Equal to the f64 sum of the
    /// values in any order divided by the count whenever the sum is below 2^53 ns (104 days).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        self.sum as f64 / self.n as f64
    }

    /// Representative of the value of rank `r` (0-based, r < n): the midpoint of its bucket.
    fn at_rank(&self, r: u64) -> f64 {
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > r {
                let (lo, hi) = bucket_bounds(i);
                return lo as f64 + (hi - lo) as f64 / 2.0;
            }
        }
        f64::NAN
    }

    /// Percentiles `qs` (each in [0, 1]) with linear interpolation between the closest ranks
    /// (numpy's default), computed on bucket midpoints. The value of each closest rank lies in
    /// the bucket found by counting, and a midpoint is within half a bucket width, i.e. within
    /// 2^-11 of that value; the interpolation is a convex combination of two such values, so
    /// each result is within [`RELATIVE_ERROR`] of the exact percentile (exact below 2.048 µs).
    pub fn percentiles<const N: usize>(&self, qs: [f64; N]) -> [f64; N] {
        let mut out = [f64::NAN; N];
        if self.n == 0 {
            return out;
        }
        for (o, &q) in out.iter_mut().zip(qs.iter()) {
            let h = (self.n - 1) as f64 * q.clamp(0.0, 1.0);
            let lo = h.floor() as u64;
            let hi = h.ceil() as u64;
            let a = self.at_rank(lo);
            let b = if hi == lo { a } else { self.at_rank(hi) };
            *o = a + (h - lo as f64) * (b - a);
        }
        out
    }
}

const _: () = assert!(MAX_BUCKETS == 56_320);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::percentile;

    #[test]
    fn buckets_tile_the_u64_range_with_bounded_width() {
        // Consecutive buckets are adjacent, each at most 1/1024 of its lower edge wide (above
        // the exact range), and bucket_of maps both edges back to the bucket.
        let mut next = 0u64;
        for i in 0..MAX_BUCKETS {
            let (lo, hi) = bucket_bounds(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!((bucket_of(lo), bucket_of(hi)), (i, i), "bucket {i}");
            if i >= 2 * SUB as usize {
                assert!((hi - lo + 1) * SUB <= lo, "bucket {i} too wide");
            } else {
                assert_eq!(lo, hi);
            }
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
        assert_eq!(bucket_of(u64::MAX), MAX_BUCKETS - 1);
    }

    /// xorshift64 stream for test data.
    fn data(seed: u64, n: usize, f: impl Fn(u64) -> u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f(x)
            })
            .collect()
    }

    #[test]
    fn percentiles_are_within_the_stated_bound_of_the_exact_ones() {
        let sets = [
            // uniform 0..20 ms, log-uniform 1 ns..~17 s, many ties, all below 2.048 µs (exact)
            data(1, 100_001, |x| x % 20_000_000),
            data(2, 50_000, |x| (x >> 8) >> (22 + (x & 0x3f) % 34)),
            data(3, 10_007, |x| 1_000_000 * (x % 7)),
            data(4, 3_333, |x| x % 2048),
            vec![123_456_789],
            vec![5, 5_000_000_000],
        ];
        let qs = [0.0, 0.01, 0.5, 0.95, 0.99, 0.999, 1.0];
        for (k, v) in sets.iter().enumerate() {
            let mut h = SojournHistogram::new();
            v.iter().for_each(|&x| h.record(x));
            let mut s = v.clone();
            s.sort_unstable();
            let got = h.percentiles(qs);
            for (g, q) in got.iter().zip(qs) {
                let want = percentile(&s, q);
                let err = (g - want).abs();
                assert!(
                    err <= want * RELATIVE_ERROR * (1.0 + 1e-12),
                    "set {k} q {q}: {g} vs exact {want}"
                );
                if s.last().is_some_and(|&m| m < 2 * SUB) {
                    assert_eq!(*g, want, "set {k} q {q}: exact range");
                }
            }
            let exact_mean = s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64;
            assert_eq!(h.mean().to_bits(), exact_mean.to_bits(), "set {k} mean");
            assert_eq!(h.len(), v.len() as u64);
            assert!(h.buckets() <= MAX_BUCKETS);
        }
        // The bound is attained up to a factor of ~1: a value at a bucket's lower edge.
        let mut h = SojournHistogram::new();
        h.record(1 << 30);
        let err = (h.percentiles([0.5])[0] - (1u64 << 30) as f64) / (1u64 << 30) as f64;
        assert!(
            err > RELATIVE_ERROR * 0.99 && err <= RELATIVE_ERROR,
            "{err}"
        );
        assert!(SojournHistogram::new().percentiles([0.5])[0].is_nan());
        assert!(SojournHistogram::new().mean().is_nan());
    }

    #[test]
    fn merging_equals_counting_everything_in_one_and_is_order_free() {
        let a = data(11, 20_000, |x| x % 50_000_000);
        let b = data(12, 7_000, |x| x % 3_000_000_000);
        let mut ha = SojournHistogram::new();
        let mut hb = SojournHistogram::new();
        let mut all = SojournHistogram::new();
        a.iter().for_each(|&x| ha.record(x));
        b.iter().for_each(|&x| hb.record(x));
        a.iter().chain(&b).for_each(|&x| all.record(x));
        let mut ab = ha.clone();
        ab.merge(&hb);
        let mut ba = hb.clone();
        ba.merge(&ha);
        assert_eq!(ab, all);
        assert_eq!(ba.percentiles([0.5, 0.99]), all.percentiles([0.5, 0.99]));
        assert_eq!(ba.mean().to_bits(), all.mean().to_bits());
    }

    #[test]
    fn memory_stays_bounded_for_a_long_run() {
        // 10 Gb/s for 300 s is ~250 M packets; the counters depend on the largest sojourn
        // only. 2.5 M values up to 1 s need at most 22 528 counters.
        let mut h = SojournHistogram::new();
        data(21, 2_500_000, |x| x % 1_000_000_000)
            .iter()
            .for_each(|&x| h.record(x));
        assert!(h.buckets() <= 22_528, "{}", h.buckets());
    }
}
