//! A latency histogram in the spirit of HdrHistogram: logarithmic buckets split into 32 linear
//! sub-buckets, so every recorded value is kept within ~3% at any magnitude, in fixed memory.

const SUB_BUCKETS: u64 = 32;
const SUB_BITS: u32 = 5;

#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; bucket_of(u64::MAX) + 1],
            total: 0,
            max: 0,
        }
    }
}

/// Values below 32 have a bucket each; above, each power of two has 32 equal buckets.
fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros(); // >= SUB_BITS
    let sub = (value >> (exponent - SUB_BITS)) & (SUB_BUCKETS - 1);
    (SUB_BUCKETS + u64::from(exponent - SUB_BITS) * SUB_BUCKETS + sub) as usize
}

/// The largest value that falls in `bucket`: what a percentile reports, never an underestimate.
fn upper_bound(bucket: usize) -> u64 {
    let bucket = bucket as u64;
    if bucket < SUB_BUCKETS {
        return bucket;
    }
    let exponent = (bucket - SUB_BUCKETS) / SUB_BUCKETS + u64::from(SUB_BITS);
    let sub = (bucket - SUB_BUCKETS) % SUB_BUCKETS;
    let width = 1u64 << (exponent - u64::from(SUB_BITS));
    ((SUB_BUCKETS + sub) << (exponent - u64::from(SUB_BITS))).saturating_add(width - 1)
}

impl Histogram {
    pub fn record(&mut self, value: u64) {
        self.counts[bucket_of(value)] += 1;
        self.total += 1;
        self.max = self.max.max(value);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value below which `quantile` (0..=1) of the recorded values fall; 0 when empty.
    pub fn percentile(&self, quantile: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        // The nearest rank, counted through the buckets.
        let rank = crate::statistics::rank(quantile, self.total as usize) as u64;
        let mut seen = 0;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return upper_bound(bucket).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_values_within_three_percent() {
        for value in [0, 1, 31, 32, 33, 100, 1_000, 65_535, 1 << 40, u64::MAX / 3] {
            let b = bucket_of(value);
            let upper = upper_bound(b);
            assert!(upper >= value, "{value}: {upper}");
            assert!(
                (upper - value) as f64 <= value as f64 * 0.032 + 1.0,
                "{value}: {upper}"
            );
        }
        assert!(bucket_of(u64::MAX) < 2048);
    }

    #[test]
    fn percentiles() {
        let mut h = Histogram::default();
        for v in 1..=1000 {
            h.record(v);
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.percentile(0.5);
        assert!((490..=520).contains(&p50), "{p50}");
        let p99 = h.percentile(0.99);
        assert!((985..=1000).contains(&p99), "{p99}");
        assert_eq!(h.percentile(1.0), 1000);
        assert_eq!(Histogram::default().percentile(0.5), 0);
    }
}
