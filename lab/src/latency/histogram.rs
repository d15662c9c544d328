//! Log-linear latency histogram, in nanoseconds.
//!
//! Values below 128 ns get one bucket each; above, every power of two is split
//! into 64 equal buckets, so a bucket is at most 1/64 (1.6%) of its lower
//! bound wide. Buckets go up to 2^36 ns (~69 s); larger values share the last
//! bucket, and the exact minimum and maximum are kept on the side.

/// log2 of the number of buckets per power of two.
const SUB_BITS: u32 = 6;
const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// The last power of two with buckets of its own: [2^35, 2^36) ns.
const TOP_EXP: u32 = 35;
const NUM_BUCKETS: usize = (TOP_EXP - SUB_BITS + 2) as usize * SUB_BUCKETS;
const MAX_BUCKETED: u64 = (1 << (TOP_EXP + 1)) - 1;

/// The bucket of `value`: buckets are contiguous and ordered by value.
fn bucket_index(value: u64) -> usize {
    let value = value.min(MAX_BUCKETED);
    let msb = 63 - (value | 1).leading_zeros();
    let shift = msb.saturating_sub(SUB_BITS);
    shift as usize * SUB_BUCKETS + (value >> shift) as usize
}

/// The smallest value that falls into bucket `index`.
fn bucket_lower(index: usize) -> u64 {
    let shift = (index / SUB_BUCKETS).saturating_sub(1);
    let mantissa = if index < SUB_BUCKETS {
        index
    } else {
        index % SUB_BUCKETS + SUB_BUCKETS
    };
    (mantissa as u64) << shift
}

/// The largest value that falls into bucket `index`.
fn bucket_upper(index: usize) -> u64 {
    let shift = (index / SUB_BUCKETS).saturating_sub(1);
    bucket_lower(index) + (1 << shift) - 1
}

#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self {
            counts: vec![0; NUM_BUCKETS].into_boxed_slice(),
            count: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub fn record(&mut self, value_ns: u64) {
        self.counts[bucket_index(value_ns)] += 1;
        self.count += 1;
        self.min = self.min.min(value_ns);
        self.max = self.max.max(value_ns);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    #[cfg(test)]
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// The value below or at which `pct` percent of the samples lie (the
    /// sample of rank ceil(pct/100 * count)), rounded up to its bucket's upper
    /// bound but never above the maximum: at most 1/64 above the exact value.
    /// None when the histogram is empty.
    pub fn percentile(&self, pct: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        // Integer parts-per-million: 99.9% of 1000 must be rank 999, which
        // f64 arithmetic (0.999 * 1000 = 999.0000000000001) would round to 1000.
        let ppm = (pct.clamp(0.0, 100.0) * 10_000.0).round() as u128;
        let rank = ((ppm * self.count as u128).div_ceil(1_000_000) as u64).max(1);
        if rank >= self.count {
            return Some(self.max);
        }
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_upper(index).min(self.max));
            }
        }
        Some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_values(values: impl IntoIterator<Item = u64>) -> Histogram {
        let mut h = Histogram::new();
        values.into_iter().for_each(|v| h.record(v));
        h
    }

    /// Values worth checking: the exact region, every power of two and its
    /// neighbours, and a few odd values up to beyond the bucketed range.
    fn probe_values() -> Vec<u64> {
        let mut v: Vec<u64> = (0..300).collect();
        for exp in 7..64 {
            let p = 1u64 << exp;
            v.extend([p - 1, p, p + 1, p + p / 3]);
        }
        v.extend([999, 1_000, 12_345, 1_000_000, 10_000_000_000, u64::MAX]);
        v
    }

    #[test]
    fn buckets_contain_their_values_within_precision() {
        for value in probe_values() {
            let index = bucket_index(value);
            assert!(index < NUM_BUCKETS, "{value} -> {index}");
            if value > MAX_BUCKETED {
                assert_eq!(index, NUM_BUCKETS - 1);
                continue;
            }
            let (lo, hi) = (bucket_lower(index), bucket_upper(index));
            assert!(lo <= value && value <= hi, "{value} not in [{lo}, {hi}]");
            // Width at most 1/64 of the lower bound (one value in the exact region).
            assert!(hi - lo < (lo / 64).max(1), "{value}: [{lo}, {hi}]");
        }
    }

    #[test]
    fn buckets_are_contiguous_and_cover_ten_seconds() {
        assert_eq!(bucket_lower(0), 0);
        for index in 1..NUM_BUCKETS {
            assert_eq!(bucket_lower(index), bucket_upper(index - 1) + 1);
            assert_eq!(bucket_index(bucket_lower(index)), index);
            assert_eq!(bucket_index(bucket_upper(index)), index);
        }
        assert!(bucket_upper(NUM_BUCKETS - 1) >= 10_000_000_000);
    }

    #[test]
    fn empty_histogram_has_no_percentiles() {
        let h = Histogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.percentile(50.0), None);
        assert_eq!(h.percentile(100.0), None);
        assert_eq!(h.max(), None);
        assert_eq!(h.min(), None);
    }

    #[test]
    fn percentiles_are_exact_in_the_linear_region() {
        let h = from_values(1..=100);
        assert_eq!(h.percentile(0.0), Some(1));
        assert_eq!(h.percentile(50.0), Some(50));
        assert_eq!(h.percentile(90.0), Some(90));
        assert_eq!(h.percentile(99.0), Some(99));
        assert_eq!(h.percentile(99.9), Some(100));
        assert_eq!(h.percentile(100.0), Some(100));
        assert_eq!((h.min(), h.max(), h.count()), (Some(1), Some(100), 100));
    }

    #[test]
    fn percentiles_are_bounded_above_the_linear_region() {
        // 1000 samples: 1 us, 2 us, ..., 1000 us.
        let h = from_values((1..=1000).map(|us| us * 1000));
        for (pct, exact) in [
            (50.0, 500_000),
            (90.0, 900_000),
            (99.0, 990_000),
            (99.9, 999_000),
        ] {
            let got = h.percentile(pct).unwrap();
            assert!(
                got >= exact && got <= exact + exact / 64,
                "p{pct}: {got} vs {exact}"
            );
        }
        assert_eq!(h.percentile(100.0), Some(1_000_000));
    }

    #[test]
    fn percentile_never_exceeds_the_maximum() {
        let h = from_values([1_000_001; 10]);
        assert_eq!(h.percentile(50.0), Some(1_000_001));
        let h = from_values([5, u64::MAX]);
        assert_eq!(h.percentile(50.0), Some(5));
        assert_eq!(h.percentile(100.0), Some(u64::MAX));
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let a = from_values((0..5000).map(|i| i * 37));
        let b = from_values((0..3000).map(|i| i * i));
        let all = from_values((0..5000).map(|i| i * 37).chain((0..3000).map(|i| i * i)));
        let mut merged = a.clone();
        merged.merge(&b);
        assert_eq!(merged.count(), 8000);
        assert_eq!(merged.counts, all.counts);
        assert_eq!((merged.min(), merged.max()), (all.min(), all.max()));
        for pct in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(merged.percentile(pct), all.percentile(pct));
        }
        // Merging an empty histogram changes nothing, either way round.
        let mut empty = Histogram::new();
        empty.merge(&a);
        assert_eq!(
            (empty.count(), empty.min(), empty.max()),
            (a.count(), a.min(), a.max())
        );
        let mut a2 = a.clone();
        a2.merge(&Histogram::new());
        assert_eq!(
            (a2.count(), a2.min(), a2.max()),
            (a.count(), a.min(), a.max())
        );
    }
}
