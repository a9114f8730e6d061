//! Signed latency histograms over HDR histograms.
//!
//! One-way delays measured between two hosts can be negative when their
//! clocks are not synchronised, and IPDV / lateness values are signed by
//! nature. [`SignedHistogram`] keeps two auto-resizing HDR histograms (3
//! significant digits): one for values `>= 0` and one for the magnitudes of
//! negative values, plus the exact count, sum, min and max (with the sequence
//! numbers of the extremes). Quantiles combine both halves by rank and are
//! clamped to the exact `[min, max]`, so `p100 == max` exactly and every
//! quantile is within 0.1 % of the true value.
//!
//! Memory grows only when a new magnitude order appears (at most 62 doublings,
//! a few hundred KiB per histogram); recording is O(1) and allocation free
//! in the steady state. Magnitudes above 2^62 ns (146 years) are clamped in
//! the histogram (min/max/mean stay exact).

use crate::Welford;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest magnitude kept with full precision in the HDR histograms.
const HIST_MAX: u64 = 1 << 62;

/// Values up to this many ns (10 s) fit without growing the histogram.
const PREALLOC_MAX: u64 = 10_000_000_000;

/// The histogram of non-negative values: sized up front for 1 ns .. 10 s
/// (200 KiB), so recording on a packet path never reallocates (a resize
/// copies the counts and stalled the sender by hundreds of µs); larger
/// values still fit by growing.
fn new_hist() -> Histogram<u64> {
    // Constant, valid parameters (sigfig 3 is in 0..=5, 1 < 2 × 1 ≤ max):
    // this cannot fail whatever the input data is.
    let mut h = Histogram::new_with_bounds(1, PREALLOC_MAX, 3)
        .expect("HDR histogram 1 ns .. 10 s, 3 significant digits");
    h.auto(true);
    h
}

/// The histogram of magnitudes of negative values: sized for 1 ns .. 1 ms
/// (90 KiB), which covers negative departure errors on the sender's packet
/// path; the large negatives of unsynchronized clocks grow it.
fn new_small_hist() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 1_000_000, 3)
        .expect("HDR histogram 1 ns .. 1 ms, 3 significant digits");
    h.auto(true);
    h
}

fn record_mag(h: &mut Histogram<u64>, v: u64) {
    let v = v.min(HIST_MAX);
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// A histogram of signed `i64` values (ns), see the module docs.
#[derive(Debug, Clone)]
pub struct SignedHistogram {
    pos: Histogram<u64>,
    neg: Histogram<u64>,
    count: u64,
    sum: i128,
    /// For σ: stable even with a large clock offset in every value.
    moments: Welford,
    min: i64,
    max: i64,
    min_seq: u64,
    max_seq: u64,
}

impl Default for SignedHistogram {
    fn default() -> Self {
        SignedHistogram {
            pos: new_hist(),
            neg: new_small_hist(),
            count: 0,
            sum: 0,
            moments: Welford::new(),
            min: i64::MAX,
            max: i64::MIN,
            min_seq: 0,
            max_seq: 0,
        }
    }
}

impl SignedHistogram {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `v`, remembering `seq` if it is a new strict minimum/maximum
    /// (the first packet reaching an extreme wins ties).
    pub fn record(&mut self, v: i64, seq: u64) {
        if v >= 0 {
            record_mag(&mut self.pos, v as u64);
        } else {
            record_mag(&mut self.neg, v.unsigned_abs());
        }
        self.count = self.count.saturating_add(1);
        self.sum += v as i128;
        self.moments.push(v as f64);
        if v < self.min {
            self.min = v;
            self.min_seq = seq;
        }
        if v > self.max {
            self.max = v;
            self.max_seq = seq;
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Exact minimum, `None` when empty.
    pub fn min(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min)
    }
    /// Exact maximum, `None` when empty.
    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }
    /// Exact mean, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }
    /// Population standard deviation, `None` when empty.
    pub fn stdev(&self) -> Option<f64> {
        self.moments.population_variance().map(f64::sqrt)
    }

    /// The value at quantile `q` in `[0, 1]` (rank `ceil(q * n)`, at least 1),
    /// clamped to the exact min/max; ranks 1 and n give the exact extremes. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
        let n_neg = self.neg.len();
        let n_pos = self.pos.len();
        let n = n_neg.saturating_add(n_pos).max(1);
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        if rank == 1 {
            return Some(self.min);
        }
        if rank == n {
            return Some(self.max);
        }
        let v = if rank <= n_neg {
            // rank-th smallest overall = (n_neg - rank + 1)-th smallest magnitude, negated.
            let k = n_neg - rank + 1;
            let mag = self.neg.value_at_quantile(k as f64 / n_neg as f64);
            0i64.saturating_sub_unsigned(mag)
        } else {
            let k = rank - n_neg;
            let v = self.pos.value_at_quantile(k as f64 / n_pos.max(1) as f64);
            i64::try_from(v).unwrap_or(i64::MAX)
        };
        Some(v.clamp(self.min, self.max))
    }

    /// Summary statistics for reports.
    pub fn stats(&self) -> Option<DelayStats> {
        if self.count == 0 {
            return None;
        }
        let q = |x| self.quantile(x).unwrap_or(0);
        Some(DelayStats {
            count: self.count,
            min_ns: self.min,
            mean_ns: self.mean().unwrap_or(0.0),
            stdev_ns: self.stdev().unwrap_or(0.0),
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: self.max,
            min_seq: Some(self.min_seq),
            max_seq: Some(self.max_seq),
        })
    }

    /// Merges another histogram into this one (for totals).
    pub fn merge(&mut self, other: &SignedHistogram) {
        if other.count == 0 {
            return;
        }
        if self.pos.add(&other.pos).is_err() {
            for v in other.pos.iter_recorded() {
                record_n(&mut self.pos, v.value_iterated_to(), v.count_at_value());
            }
        }
        if self.neg.add(&other.neg).is_err() {
            for v in other.neg.iter_recorded() {
                record_n(&mut self.neg, v.value_iterated_to(), v.count_at_value());
            }
        }
        self.moments.merge(&other.moments);
        self.count = self.count.saturating_add(other.count);
        self.sum += other.sum;
        if other.min < self.min {
            self.min = other.min;
            self.min_seq = other.min_seq;
        }
        if other.max > self.max {
            self.max = other.max;
            self.max_seq = other.max_seq;
        }
    }
}

fn record_n(h: &mut Histogram<u64>, v: u64, n: u64) {
    let v = v.min(HIST_MAX);
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// The one summary of a distribution of ns values in wirelab's reports
/// (JSON object `{count, min_ns, mean_ns, stdev_ns, p50_ns, p90_ns,
/// p99_ns, p999_ns, p9999_ns, max_ns, min_seq, max_seq}`). Quantiles come
/// from an HDR histogram with 3 significant digits. From a
/// [`SignedHistogram`] (delays, errors; may be negative) min, max and mean
/// are exact and `min_seq` / `max_seq` name the sequence number of the
/// (first) packet with the minimum / maximum value — the worst case; from
/// an unsigned [`Histogram`] ([`DelayStats::of_hist`]: lateness, delivery
/// latency) all figures are the histogram's and the two `_seq` keys are
/// left out. An empty summary is all zeros.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DelayStats {
    pub count: u64,
    pub min_ns: i64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub p50_ns: i64,
    pub p90_ns: i64,
    pub p99_ns: i64,
    pub p999_ns: i64,
    pub p9999_ns: i64,
    pub max_ns: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seq: Option<u64>,
}

impl DelayStats {
    /// The summary of an unsigned HDR histogram (see
    /// [`crate::percentiles::histogram`]); all zeros when it is empty.
    pub fn of_hist(h: &Histogram<u64>) -> DelayStats {
        if h.is_empty() {
            return DelayStats::default();
        }
        let q = |x| h.value_at_quantile(x) as i64;
        DelayStats {
            count: h.len(),
            min_ns: h.min() as i64,
            mean_ns: h.mean(),
            stdev_ns: h.stdev(),
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: h.max() as i64,
            min_seq: None,
            max_seq: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: i64, b: i64) -> bool {
        (a - b).abs() as f64 <= (b.abs() as f64) * 0.001 + 1.0
    }

    #[test]
    fn known_percentiles() {
        let mut h = SignedHistogram::new();
        // 1..=1000 us in ns, seq = value index.
        for i in 1..=1000u64 {
            h.record((i * 1000) as i64, i);
        }
        let s = h.stats().unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_ns, 1000);
        assert_eq!(s.max_ns, 1_000_000);
        assert_eq!((s.min_seq, s.max_seq), (Some(1), Some(1000)));
        assert!((s.mean_ns - 500_500.0).abs() < 1e-6);
        assert!(close(s.p50_ns, 500_000), "{}", s.p50_ns);
        assert!(close(s.p90_ns, 900_000), "{}", s.p90_ns);
        assert!(close(s.p99_ns, 990_000), "{}", s.p99_ns);
        assert!(close(s.p999_ns, 999_000), "{}", s.p999_ns);
        assert_eq!(s.p9999_ns, 1_000_000);
    }

    #[test]
    fn exact_small_values_and_negatives() {
        let mut h = SignedHistogram::new();
        for (i, v) in [-5i64, -3, -1, 0, 2, 4, 6, 8, 10, 12].iter().enumerate() {
            h.record(*v, i as u64);
        }
        assert_eq!(h.quantile(0.0), Some(-5));
        assert_eq!(h.quantile(0.1), Some(-5));
        assert_eq!(h.quantile(0.2), Some(-3));
        assert_eq!(h.quantile(0.3), Some(-1));
        assert_eq!(h.quantile(0.4), Some(0));
        assert_eq!(h.quantile(0.5), Some(2));
        assert_eq!(h.quantile(1.0), Some(12));
        let s = h.stats().unwrap();
        assert_eq!(
            (s.min_ns, s.min_seq, s.max_ns, s.max_seq),
            (-5, Some(0), 12, Some(9))
        );
        assert!((s.mean_ns - 3.3).abs() < 1e-9);
    }

    #[test]
    fn stdev_stable_with_large_offset_and_merge() {
        let off = 1_000_000_000_000_000i64;
        let mut a = SignedHistogram::new();
        let mut b = SignedHistogram::new();
        for i in 0..1000i64 {
            let v = off + if i % 2 == 0 { 100 } else { -100 };
            if i < 300 {
                a.record(v, 0);
            } else {
                b.record(v, 0);
            }
        }
        assert!((b.stdev().unwrap() - 100.0).abs() < 1e-3, "{:?}", b.stdev());
        a.merge(&b);
        assert!((a.stdev().unwrap() - 100.0).abs() < 1e-3, "{:?}", a.stdev());
        assert!((a.mean().unwrap() - off as f64).abs() < 1.0);
    }

    #[test]
    fn extremes_do_not_panic() {
        let mut h = SignedHistogram::new();
        h.record(i64::MIN, 1);
        h.record(i64::MAX, 2);
        h.record(0, 3);
        assert_eq!(h.quantile(0.0), Some(i64::MIN));
        assert_eq!(h.quantile(1.0), Some(i64::MAX));
        assert!(h.quantile(0.5).is_some());
        assert!(h.quantile(f64::NAN).is_some());
        let mut g = SignedHistogram::new();
        g.merge(&h);
        assert_eq!(g.count(), 3);
        assert!(SignedHistogram::new().stats().is_none());
    }
}
