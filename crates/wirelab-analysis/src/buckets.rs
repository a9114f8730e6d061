//! A tiny fixed-size histogram of positive lengths (loss-burst lengths,
//! reordering extents): exact buckets for 1..=4, then power-of-two ranges
//! 5..=8, 9..=16, ... up to `u64::MAX`. Constant memory, O(1) record.

use serde::Serialize;

const EXACT: u64 = 4;
/// 4 exact buckets + ranges (2^k, 2^(k+1)] for k = 2..=63.
const NBUCKETS: usize = 4 + 62;

/// Fixed-size length histogram; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LenHistogram {
    counts: [u64; NBUCKETS],
}

impl Default for LenHistogram {
    fn default() -> Self {
        LenHistogram {
            counts: [0; NBUCKETS],
        }
    }
}

/// One non-empty bucket: lengths `from..=to` occurred `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LenBucket {
    pub from: u64,
    pub to: u64,
    pub count: u64,
}

fn index(len: u64) -> usize {
    if len <= EXACT {
        // len 0 is never recorded by callers; map it to the first bucket.
        len.saturating_sub(1) as usize
    } else {
        // (2^k, 2^(k+1)] -> bucket 4 + (k - 2), where k = floor(log2(len - 1)).
        let k = 63 - (len - 1).leading_zeros() as usize;
        (4 + k - 2).min(NBUCKETS - 1)
    }
}

fn range(i: usize) -> (u64, u64) {
    if i < EXACT as usize {
        (i as u64 + 1, i as u64 + 1)
    } else {
        let k = (i - 4 + 2) as u32;
        let from = (1u64 << k) + 1;
        let to = if k >= 63 { u64::MAX } else { 1u64 << (k + 1) };
        (from, to)
    }
}

impl LenHistogram {
    /// Records one occurrence of `len` (0 is ignored).
    pub fn record(&mut self, len: u64) {
        if len == 0 {
            return;
        }
        let c = &mut self.counts[index(len)];
        *c = c.saturating_add(1);
    }

    /// Total number of recorded lengths.
    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// The non-empty buckets in ascending order.
    pub fn buckets(&self) -> Vec<LenBucket> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &count)| {
                let (from, to) = range(i);
                LenBucket { from, to, count }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges() {
        let mut h = LenHistogram::default();
        for l in [1, 2, 3, 4, 5, 8, 9, 16, 17, u64::MAX, 0] {
            h.record(l);
        }
        let b = h.buckets();
        let r: Vec<(u64, u64, u64)> = b.iter().map(|b| (b.from, b.to, b.count)).collect();
        assert_eq!(
            r,
            vec![
                (1, 1, 1),
                (2, 2, 1),
                (3, 3, 1),
                (4, 4, 1),
                (5, 8, 2),
                (9, 16, 2),
                (17, 32, 1),
                ((1u64 << 63) + 1, u64::MAX, 1)
            ]
        );
        assert_eq!(h.total(), 10);
    }
}
