//! Bounded-memory latency quantiles: a log-bucketed histogram with about
//! 1 % relative error, fixed size whatever the number of samples. A
//! quantile never lies outside the smallest and largest values recorded
//! (both kept exactly), so a constant latency reads exactly and a p99 never
//! exceeds the maximum.

use crate::time::ns_f64;

/// Sub-buckets per power of two: 2^6 = 64 gives ≤ 1.1 % relative error.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Values up to 2^64 ns.
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// Histogram of nanosecond values.
#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Vec<u64>,
    total: u64,
    sum: f64,
    /// The smallest value recorded since the last `clear` (`u64::MAX` when
    /// none).
    min: u64,
    /// The largest value recorded since the last `clear` (0 when none).
    max: u64,
    /// Bit `k` set when a value has landed in buckets `k·64 .. k·64 + 63`
    /// (one power of two; the first 64 hold the values below 64) since the
    /// last `clear`: quantiles scan and `clear` zeroes only those groups,
    /// since a run's per-bin histograms use a few of the 59 and are read
    /// and emptied at every bin.
    octaves: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self::new()
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) as usize & (SUB - 1);
    ((shift + 1) as usize) * SUB + sub
}

/// The midpoint of the values that land in bucket `i`.
fn value_of(i: usize) -> f64 {
    if i < SUB {
        return i as f64;
    }
    let shift = (i / SUB - 1) as u32;
    let sub = (i % SUB) as u64;
    let lo = ((SUB as u64) | sub) << shift;
    let width = 1u64 << shift;
    lo as f64 + (width as f64 - 1.0) / 2.0
}

/// The first bucket of each group of 64 whose bit is set in `octaves`,
/// in increasing order.
fn octave_starts(octaves: u64) -> impl Iterator<Item = usize> {
    let mut left = octaves;
    std::iter::from_fn(move || {
        let octave = (left != 0).then(|| left.trailing_zeros() as usize)?;
        left &= left - 1;
        Some(octave * SUB)
    })
}

impl LogHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LogHistogram {
            counts: vec![0; BUCKETS],
            total: 0,
            sum: 0.0,
            min: u64::MAX,
            max: 0,
            octaves: 0,
        }
    }

    /// Adds one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        self.counts[i] += 1;
        self.octaves |= 1 << (i / SUB);
        self.total += 1;
        self.sum += ns_f64(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact mean of the values recorded.
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum / self.total as f64)
    }

    /// The `q` quantile (0..=1), within about 1 %: the value below which a
    /// share `q` of the samples lies (nearest rank), read as its bucket's
    /// midpoint and kept within the values recorded (the true quantile
    /// lies in both ranges). The first and last ranks are exact.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        // The first and last ranks are the values kept exactly.
        if rank == 1 {
            return Some(ns_f64(self.min));
        }
        if rank >= self.total {
            return Some(ns_f64(self.max));
        }
        let mut seen = 0;
        for first in octave_starts(self.octaves) {
            for (i, &c) in self.counts[first..first + SUB].iter().enumerate() {
                seen += c;
                if seen >= rank {
                    let mid = value_of(first + i);
                    return Some(mid.clamp(ns_f64(self.min), ns_f64(self.max)));
                }
            }
        }
        None
    }

    /// Empties the histogram.
    pub fn clear(&mut self) {
        for first in octave_starts(self.octaves) {
            self.counts[first..first + SUB].fill(0);
        }
        self.total = 0;
        self.sum = 0.0;
        self.min = u64::MAX;
        self.max = 0;
        self.octaves = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The quantile by a scan of every bucket, as before the used range
    /// was kept, clamped to the values' range.
    fn full_scan(counts: &[u64], values: &[u64], q: f64) -> Option<f64> {
        let rank = ((q.clamp(0.0, 1.0) * values.len() as f64).ceil() as u64).max(1);
        let lo = ns_f64(*values.iter().min()?);
        let hi = ns_f64(*values.iter().max()?);
        if rank == 1 {
            return Some(lo);
        }
        if rank >= values.len() as u64 {
            return Some(hi);
        }
        let mut seen = 0;
        counts.iter().enumerate().find_map(|(i, &c)| {
            seen += c;
            (seen >= rank).then(|| value_of(i).clamp(lo, hi))
        })
    }

    proptest! {
        /// Reused bin after bin, the histogram answers as a fresh one with
        /// every bucket scanned, and `clear` leaves every bucket empty.
        #[test]
        fn the_used_range_changes_no_answer(
            bins in prop::collection::vec(
                prop::collection::vec(prop_oneof![0u64..100, 0u64..u64::MAX, 1_000u64..1_000_000_000], 0..40),
                1..6,
            )
        ) {
            let mut h = LogHistogram::new();
            for values in &bins {
                let mut fresh = vec![0u64; BUCKETS];
                for &v in values {
                    h.record(v);
                    fresh[index(v)] += 1;
                }
                for q in [0.0, 0.01, 0.5, 0.99, 1.0] {
                    prop_assert_eq!(h.quantile(q), full_scan(&fresh, values, q));
                }
                h.clear();
                prop_assert!(h.counts.iter().all(|&c| c == 0));
                prop_assert_eq!(h.quantile(0.5), None);
            }
        }
    }

    proptest! {
        /// Every quantile lies within the values recorded and within 1.1 %
        /// of the exact nearest-rank quantile; the extremes are exact.
        #[test]
        fn quantiles_lie_within_the_values(
            mut values in prop::collection::vec(prop_oneof![0u64..100, 1_000u64..10_000_000_000], 1..200),
        ) {
            let mut h = LogHistogram::new();
            for &v in &values {
                h.record(v);
            }
            values.sort_unstable();
            let (lo, hi) = (values[0] as f64, values[values.len() - 1] as f64);
            prop_assert_eq!(h.quantile(0.0), Some(lo));
            prop_assert_eq!(h.quantile(1.0), Some(hi));
            for q in [0.01, 0.5, 0.9, 0.99, 0.999] {
                let got = h.quantile(q).unwrap();
                let rank = ((q * values.len() as f64).ceil() as usize).max(1);
                let exact = values[rank - 1] as f64;
                prop_assert!(lo <= got && got <= hi, "q={} got {} outside [{}, {}]", q, got, lo, hi);
                prop_assert!((got - exact).abs() <= exact * 0.011 + 0.5, "q={} got {} exact {}", q, got, exact);
            }
        }
    }

    #[test]
    fn a_constant_value_reads_exactly() {
        let mut h = LogHistogram::new();
        for _ in 0..1000 {
            h.record(4_000_000); // 4 ms: the midpoint of its bucket is 4.0147 ms
        }
        assert_ne!(value_of(index(4_000_000)), 4_000_000.0);
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(h.quantile(q), Some(4_000_000.0));
        }
        h.clear();
        h.record(10);
        assert_eq!(h.quantile(0.99), Some(10.0));
    }

    #[test]
    fn quantiles_within_one_percent() {
        let mut h = LogHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.9, 0.99] {
            let exact = q * 100_000.0 * 1000.0;
            let got = h.quantile(q).unwrap();
            assert!(
                (got - exact).abs() / exact < 0.011,
                "q={q} got {got} exact {exact}"
            );
        }
        assert!((h.mean().unwrap() - 50_000_500.0).abs() < 1.0);
    }

    #[test]
    fn small_values_are_exact_and_empty_is_none() {
        let mut h = LogHistogram::new();
        assert_eq!(h.quantile(0.5), None);
        for v in [3, 3, 7] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), Some(3.0));
        assert_eq!(h.quantile(1.0), Some(7.0));
        h.clear();
        assert_eq!(h.count(), 0);
        h.record(u64::MAX);
        assert!(h.quantile(0.5).unwrap() > 1.8e19);
    }
}
