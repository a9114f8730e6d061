//! Summaries of large inputs that stay small: time-bucketed envelopes
//! (min / p50 / p99 / max per bucket) and fixed-bin histograms. Both are
//! sized by the caller (a bucket or bin count), never by the data: a run of
//! ten million packets gives the same few hundred points as one of a
//! thousand.

use hdrhistogram::Histogram;

/// Significant digits of a bucket's histogram: quantiles within 1 %, a
/// few KiB per bucket.
const SIGFIG: u8 = 2;

/// Values of one quantity (ns, signed) over a time span cut into equal
/// buckets. Values are stored shifted by `offset` (the smallest value the
/// caller expects, e.g. the analysis's minimum) so that signed delays fit
/// an unsigned histogram; values below it are clamped to it.
pub struct Envelope {
    t0: u64,
    width: u64,
    offset: i64,
    buckets: Vec<Option<Slot>>,
    /// Events (e.g. lost packets) counted per bucket.
    marks: Vec<u64>,
}

/// One bucket: its histogram (quantiles within 1 %) and exact extremes.
struct Slot {
    h: Histogram<u64>,
    min: i64,
    max: i64,
}

/// One bucket's figures: its start time and the quantiles of its values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvelopePoint {
    pub t_ns: u64,
    pub count: u64,
    pub min: i64,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

impl Envelope {
    /// `n` buckets (at least 1) covering `[t_lo, t_hi]`.
    pub fn new(t_lo: u64, t_hi: u64, n: usize, offset: i64) -> Envelope {
        let n = n.max(1);
        let span = t_hi.saturating_sub(t_lo).saturating_add(1);
        let width = span.div_ceil(n as u64).max(1);
        Envelope {
            t0: t_lo,
            width,
            offset,
            buckets: (0..n).map(|_| None).collect(),
            marks: vec![0; n],
        }
    }

    fn index(&self, t: u64) -> Option<usize> {
        if t < self.t0 {
            return None;
        }
        let i = ((t - self.t0) / self.width) as usize;
        (i < self.buckets.len()).then_some(i)
    }

    /// Records value `v` at time `t`; times outside the span are ignored.
    pub fn record(&mut self, t: u64, v: i64) {
        let Some(i) = self.index(t) else { return };
        let shifted = (i128::from(v) - i128::from(self.offset)).clamp(0, i128::from(u64::MAX >> 2));
        let slot = self.buckets[i].get_or_insert_with(|| {
            let mut h = Histogram::new(SIGFIG).expect("2 significant digits are valid");
            h.auto(true);
            Slot { h, min: v, max: v }
        });
        slot.min = slot.min.min(v);
        slot.max = slot.max.max(v);
        let h = &mut slot.h;
        // `record` grows an auto-resizing histogram; past its largest
        // trackable value, saturate.
        if h.record(shifted as u64).is_err() {
            h.saturating_record(shifted as u64);
        }
    }

    /// Counts `n` events at time `t` (outside the span: ignored).
    pub fn mark(&mut self, t: u64, n: u64) {
        if let Some(i) = self.index(t) {
            self.marks[i] = self.marks[i].saturating_add(n);
        }
    }

    /// The start time and event count of every bucket with events.
    pub fn marks(&self) -> Vec<(u64, u64)> {
        self.marks
            .iter()
            .enumerate()
            .filter(|(_, &m)| m > 0)
            .map(|(i, &m)| (self.bucket_start(i), m))
            .collect()
    }

    fn bucket_start(&self, i: usize) -> u64 {
        self.t0.saturating_add(self.width.saturating_mul(i as u64))
    }

    /// Bucket width in ns.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Buckets with values, in time order.
    pub fn points(&self) -> Vec<EnvelopePoint> {
        let back = |x: u64| {
            (i128::from(x) + i128::from(self.offset)).clamp(i64::MIN.into(), i64::MAX.into()) as i64
        };
        self.buckets
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                let s = h.as_ref().filter(|s| !s.h.is_empty())?;
                let q = |x| back(s.h.value_at_quantile(x)).clamp(s.min, s.max);
                Some(EnvelopePoint {
                    t_ns: self.bucket_start(i),
                    count: s.h.len(),
                    min: s.min,
                    p50: q(0.5),
                    p99: q(0.99),
                    max: s.max,
                })
            })
            .collect()
    }
}

/// Counts of values in `bins` equal bins over `[lo, hi)`, with the values
/// below and above counted apart.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearHist {
    lo: i64,
    width: u64,
    pub counts: Vec<u64>,
    pub below: u64,
    pub above: u64,
}

impl LinearHist {
    /// `bins` (at least 1) bins from `lo` to `hi` (`hi > lo` or one bin
    /// of width 1).
    pub fn new(lo: i64, hi: i64, bins: usize) -> LinearHist {
        let bins = bins.max(1);
        let span = (i128::from(hi) - i128::from(lo)).max(1) as u128;
        let width = span.div_ceil(bins as u128).clamp(1, u128::from(u64::MAX)) as u64;
        LinearHist {
            lo,
            width,
            counts: vec![0; bins],
            below: 0,
            above: 0,
        }
    }

    pub fn record(&mut self, v: i64) {
        let d = i128::from(v) - i128::from(self.lo);
        if d < 0 {
            self.below += 1;
            return;
        }
        let i = (d as u128 / u128::from(self.width)) as usize;
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.above += 1,
        }
    }

    /// `(bin start, bin end, count)` for every bin.
    pub fn bins(&self) -> Vec<(i64, i64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let a = i128::from(self.lo) + i128::from(self.width) * i as i128;
                let b = a + i128::from(self.width);
                let cl = |x: i128| x.clamp(i64::MIN.into(), i64::MAX.into()) as i64;
                (cl(a), cl(b), c)
            })
            .collect()
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.below + self.above
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_buckets_hold_their_extremes_and_quantiles() {
        // 0..1000 ns cut into 10 buckets of 100 ns; values = time, offset
        // below zero (signed values).
        let mut e = Envelope::new(0, 999, 10, -50);
        for t in 0..1000u64 {
            e.record(t, t as i64 - 40);
        }
        e.mark(150, 2);
        e.mark(160, 1);
        e.mark(5000, 9); // outside: ignored
        e.record(5000, 0);
        let p = e.points();
        assert_eq!(p.len(), 10);
        assert_eq!(e.width(), 100);
        assert_eq!(
            (p[0].t_ns, p[0].count, p[0].min, p[0].max),
            (0, 100, -40, 59)
        );
        assert!((p[0].p50 - 9).abs() <= 1, "{:?}", p[0]);
        assert_eq!((p[9].min, p[9].max), (860, 959), "{p:?}");
        assert_eq!(e.marks(), vec![(100, 3)]);
    }

    #[test]
    fn envelope_is_bounded_whatever_the_times() {
        let mut e = Envelope::new(0, u64::MAX, 200, i64::MIN);
        for t in [0, 1, u64::MAX, u64::MAX / 2] {
            e.record(t, i64::MAX);
            e.record(t, i64::MIN);
        }
        assert!(e.points().len() <= 200);
        let e = Envelope::new(10, 0, 0, 0);
        assert!(e.points().is_empty());
    }

    #[test]
    fn linear_histogram_counts_outliers_apart() {
        let mut h = LinearHist::new(0, 100, 10);
        for v in [-1, 0, 9, 10, 55, 99, 100, 1000] {
            h.record(v);
        }
        assert_eq!((h.below, h.above), (1, 2));
        assert_eq!(h.counts, vec![2, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(h.bins()[1], (10, 20, 1));
        assert_eq!(h.total(), 8);
        let mut h = LinearHist::new(i64::MAX, i64::MIN, 0);
        h.record(i64::MIN);
        h.record(i64::MAX);
        assert_eq!(h.total(), 2);
    }
}
