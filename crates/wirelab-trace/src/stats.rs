//! Statistics of a packet trace in one streaming pass and fixed memory:
//! counts by action, and over the delays (of delay and duplicate records;
//! drops have none) the mean, standard deviation, minimum, maximum, lag-1
//! autocorrelation and a Hurst estimate.
//!
//! - σ is the sample standard deviation (divided by `n − 1`).
//! - lag-1: `r1 = Σ_(t<n) (x_t − x̄)(x_(t+1) − x̄) / Σ_t (x_t − x̄)²`, the
//!   usual sample autocorrelation.
//! - Hurst: the aggregated-variance method. For block lengths
//!   `m = 1, 2, 4, …` the sample variance of the means of the `k = ⌊n/m⌋`
//!   whole blocks is kept (one running sum per length, 64 at most); for a
//!   series with Hurst parameter `H` it falls as `m^(2H−2)`. The plain
//!   method regresses its logarithm on `log m` and is biased low for long
//!   memory, because each block variance is taken around the sample mean,
//!   whose own variance `(km)^(2H−2)` is not small; here `H` is the value
//!   whose expected block variances, `k/(k−1) σ² (m^(2H−2) − (km)^(2H−2))`
//!   exactly for fractional Gaussian noise, fit the measured ones best in
//!   the log: weighted least squares over `H` in [0.01, 0.99] with `σ²`
//!   free, each length weighted by `k − 1` (the log of a variance of `k`
//!   means scatters as `2/(k − 1)`), so short blocks, measured most often,
//!   count most. The
//!   block lengths used are those with at least [`HURST_MIN_BLOCKS`] blocks;
//!   fewer than [`HURST_MIN_LEVELS`] such lengths (fewer than 64 delays)
//!   give no estimate.

use serde::Serialize;
use wirelab_analysis::Welford;

use super::{Action, Format, Record};

/// Block lengths with fewer whole blocks than this are left out of the
/// Hurst fit (their variances are too noisy).
pub const HURST_MIN_BLOCKS: u64 = 8;
/// The fewest block lengths a Hurst estimate uses.
pub const HURST_MIN_LEVELS: usize = 4;
const MAX_LEVELS: usize = 64;

/// Block means at lengths 2^j, for the aggregated-variance Hurst estimate.
#[derive(Debug, Clone)]
struct Aggregated {
    /// Per length 2^j: the variance of the whole blocks' means, and the sum
    /// of a first half-block waiting for its second half (for 2^(j+1)).
    levels: Vec<(Welford, Option<f64>)>,
}

impl Aggregated {
    fn new() -> Aggregated {
        Aggregated { levels: Vec::new() }
    }

    fn push(&mut self, x: f64) {
        // A whole block of length 2^j with sum `sum` goes into level j,
        // then pairs with a waiting one into level j + 1.
        let mut sum = x;
        for j in 0..MAX_LEVELS {
            if self.levels.len() == j {
                self.levels.push((Welford::default(), None));
            }
            let (w, waiting) = &mut self.levels[j];
            w.push(sum / (1u64 << j) as f64);
            match waiting.take() {
                Some(first) => sum += first,
                None => {
                    *waiting = Some(sum);
                    return;
                }
            }
        }
    }

    fn estimate(&self, n: u64) -> Option<HurstEstimate> {
        // (m, k, block-mean variance) of the usable lengths.
        let pts: Vec<(f64, f64, f64)> = self
            .levels
            .iter()
            .enumerate()
            .filter(|(_, (w, _))| w.count() >= HURST_MIN_BLOCKS)
            .filter_map(|(j, (w, _))| {
                let v = w.sample_variance()?;
                (v > 0.0 && v.is_finite()).then_some(((1u64 << j) as f64, w.count() as f64, v))
            })
            .collect();
        if pts.len() < HURST_MIN_LEVELS || n < 2 {
            return None;
        }
        let sse = |h: f64| -> f64 {
            let e = 2.0 * h - 2.0;
            let r: Vec<(f64, f64)> = pts
                .iter()
                .map(|&(m, k, v)| {
                    let f = k / (k - 1.0) * (m.powf(e) - (k * m).powf(e));
                    (v.ln() - f.ln(), k - 1.0)
                })
                .collect();
            let wsum: f64 = r.iter().map(|x| x.1).sum();
            let mean = r.iter().map(|x| x.0 * x.1).sum::<f64>() / wsum;
            r.iter().map(|x| x.1 * (x.0 - mean) * (x.0 - mean)).sum()
        };
        // A grid, then golden-section search around its best point.
        let (lo_h, hi_h) = (0.01, 0.99);
        let mut best = lo_h;
        let mut best_sse = f64::INFINITY;
        for i in 0..=98 {
            let h = lo_h + 0.01 * f64::from(i);
            let s = sse(h);
            if s < best_sse {
                best_sse = s;
                best = h;
            }
        }
        let (mut a, mut b) = ((best - 0.01).max(lo_h), (best + 0.01).min(hi_h));
        let g = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..60 {
            let c = b - g * (b - a);
            let d = a + g * (b - a);
            if sse(c) <= sse(d) {
                b = d;
            } else {
                a = c;
            }
        }
        let h = (a + b) / 2.0;
        Some(HurstEstimate {
            hurst: h,
            method: "aggregated variance, finite-sample corrected",
            min_block: pts[0].0 as u64,
            max_block: pts[pts.len() - 1].0 as u64,
            block_lengths: pts.len(),
        })
    }
}

/// A Hurst estimate and what it used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HurstEstimate {
    pub hurst: f64,
    pub method: &'static str,
    /// Shortest and longest block length used (samples).
    pub min_block: u64,
    pub max_block: u64,
    /// How many block lengths (powers of two) the fit used.
    pub block_lengths: usize,
}

/// Streaming statistics of a real-valued series: mean, σ, lag-1
/// autocorrelation, Hurst estimate.
#[derive(Debug, Clone)]
pub struct SeriesStats {
    /// Values are taken relative to the first (less rounding in the sums).
    shift: f64,
    first: f64,
    last: f64,
    moments: Welford,
    /// Σ y_t y_(t+1) and Σ y_t of the shifted values.
    lag_products: f64,
    sum: f64,
    agg: Aggregated,
}

impl Default for SeriesStats {
    fn default() -> Self {
        SeriesStats::new()
    }
}

impl SeriesStats {
    pub fn new() -> SeriesStats {
        SeriesStats {
            shift: 0.0,
            first: 0.0,
            last: 0.0,
            moments: Welford::default(),
            lag_products: 0.0,
            sum: 0.0,
            agg: Aggregated::new(),
        }
    }

    pub fn push(&mut self, x: f64) {
        if self.moments.count() == 0 {
            self.shift = x;
        }
        let y = x - self.shift;
        if self.moments.count() == 0 {
            self.first = y;
        } else {
            self.lag_products += self.last * y;
        }
        self.last = y;
        self.sum += y;
        self.moments.push(y);
        self.agg.push(y);
    }

    pub fn count(&self) -> u64 {
        self.moments.count()
    }

    pub fn mean(&self) -> Option<f64> {
        self.moments.mean().map(|m| m + self.shift)
    }

    /// Sample standard deviation (`n − 1`).
    pub fn stddev(&self) -> Option<f64> {
        self.moments.sample_variance().map(f64::sqrt)
    }

    /// Lag-1 sample autocorrelation; `None` for fewer than 2 values or a
    /// constant series.
    pub fn lag1(&self) -> Option<f64> {
        let n = self.moments.count();
        if n < 2 || self.moments.m2() <= 0.0 {
            return None;
        }
        let m = self.moments.mean().unwrap_or(0.0);
        let num = self.lag_products - m * (2.0 * self.sum - self.first - self.last)
            + (n - 1) as f64 * m * m;
        Some(num / self.moments.m2())
    }

    pub fn hurst(&self) -> Option<HurstEstimate> {
        self.agg.estimate(self.moments.count())
    }
}

/// What `wirelab trace stats` reports (delays in ns).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStatsReport {
    pub records: u64,
    /// Delay records (corrupt ones included).
    pub delays: u64,
    pub drops: u64,
    pub dups: u64,
    pub corrupts: u64,
    /// Delay and duplicate records: the values the statistics are over.
    pub values: u64,
    pub mean_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub lag1: Option<f64>,
    pub hurst: Option<HurstEstimate>,
}

impl TraceStatsReport {
    /// The text `wirelab trace stats` prints for `file`, read as `format`
    /// (delays in µs, 3 decimals).
    pub fn text(&self, file: &str, format: Format) -> String {
        let us = |ns: f64| format!("{:.3}us", ns / 1000.0);
        let mut t = format!("{file}: {format}\n");
        t.push_str(&format!(
            "records  {}  (delay {}, drop {}, dup {}, corrupt {})\n",
            self.records, self.delays, self.drops, self.dups, self.corrupts
        ));
        match (self.mean_ns, self.min_ns, self.max_ns) {
            (Some(mean), Some(min), Some(max)) => t.push_str(&format!(
                "delay    mean {}  σ {}  min {}  max {}  (over {} delays and duplicates)\n",
                us(mean),
                self.stddev_ns.map_or("-".into(), us),
                us(min as f64),
                us(max as f64),
                self.values
            )),
            _ => t.push_str("delay    - (no delay or duplicate records)\n"),
        }
        t.push_str(&format!(
            "lag-1    {}\n",
            self.lag1
                .map_or("- (needs 2 delays that differ)".into(), |v| format!(
                    "{v:.4}"
                ))
        ));
        match &self.hurst {
            Some(h) => t.push_str(&format!(
                "Hurst    {:.3}  ({}; block lengths {} to {}, {} lengths)\n",
                h.hurst, h.method, h.min_block, h.max_block, h.block_lengths
            )),
            None => t.push_str("Hurst    - (needs at least 64 delays that vary)\n"),
        }
        t
    }
}

/// Streaming statistics of a packet trace.
#[derive(Debug, Clone, Default)]
pub struct TraceStats {
    records: u64,
    delays: u64,
    drops: u64,
    dups: u64,
    corrupts: u64,
    /// Exact sum of the delays, for the mean.
    sum_ns: u128,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    series: SeriesStats,
}

impl TraceStats {
    pub fn new() -> TraceStats {
        TraceStats::default()
    }

    pub fn push(&mut self, rec: &Record) {
        self.records += 1;
        let ns = match rec.action {
            Action::Drop => {
                self.drops += 1;
                return;
            }
            Action::Delay { delay_ns } => {
                self.delays += 1;
                self.corrupts += u64::from(rec.corrupt);
                delay_ns
            }
            Action::Duplicate { delay_ns } => {
                self.dups += 1;
                delay_ns
            }
        };
        self.sum_ns += u128::from(ns);
        self.min_ns = Some(self.min_ns.map_or(ns, |m| m.min(ns)));
        self.max_ns = Some(self.max_ns.map_or(ns, |m| m.max(ns)));
        self.series.push(ns as f64);
    }

    pub fn report(&self) -> TraceStatsReport {
        let values = self.series.count();
        TraceStatsReport {
            records: self.records,
            delays: self.delays,
            drops: self.drops,
            dups: self.dups,
            corrupts: self.corrupts,
            values,
            mean_ns: (values > 0).then(|| self.sum_ns as f64 / values as f64),
            stddev_ns: self.series.stddev(),
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            lag1: self.series.lag1(),
            hurst: self.series.hurst(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fgn::Fgn;

    fn d(us: u64) -> Record {
        Record::from(Action::Delay {
            delay_ns: us * 1000,
        })
    }

    #[test]
    fn hand_made_trace_exact() {
        let mut s = TraceStats::new();
        for r in [
            d(1000),
            Record::from(Action::Drop),
            Record::from(Action::Duplicate {
                delay_ns: 2_000_000,
            }),
            d(3000),
            Record {
                action: Action::Delay {
                    delay_ns: 4_000_000,
                },
                corrupt: true,
            },
        ] {
            s.push(&r);
        }
        let r = s.report();
        assert_eq!(
            (r.records, r.delays, r.drops, r.dups, r.corrupts, r.values),
            (5, 3, 1, 1, 1, 4)
        );
        assert_eq!(r.mean_ns, Some(2_500_000.0));
        assert_eq!(r.min_ns, Some(1_000_000));
        assert_eq!(r.max_ns, Some(4_000_000));
        // Deviations −1.5, −0.5, 0.5, 1.5 ms: σ² = 5/3 ms², r1 = 1.25/5.
        let sd = r.stddev_ns.unwrap();
        assert!((sd - (5e12f64 / 3.0).sqrt()).abs() < 1e-6, "{sd}");
        assert!((r.lag1.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(r.hurst, None);
    }

    #[test]
    fn degenerate_series() {
        let r = TraceStats::new().report();
        assert_eq!(
            (r.values, r.mean_ns, r.stddev_ns, r.lag1),
            (0, None, None, None)
        );
        let mut s = TraceStats::new();
        for _ in 0..100 {
            s.push(&d(7));
        }
        let r = s.report();
        assert_eq!(r.mean_ns, Some(7000.0));
        assert_eq!(r.stddev_ns, Some(0.0));
        assert_eq!((r.lag1, r.hurst), (None, None));
        let mut one = TraceStats::new();
        one.push(&d(1));
        assert_eq!(one.report().stddev_ns, None);
    }

    #[test]
    fn lag1_of_a_large_offset_series_is_exact_enough() {
        // Alternating around 10^9 ns: r1 → −1 (exactly −(n−1)/n).
        let mut s = SeriesStats::new();
        for i in 0..1000 {
            s.push(1e9 + if i % 2 == 0 { 1.0 } else { -1.0 });
        }
        assert!((s.lag1().unwrap() + 0.999).abs() < 1e-9, "{:?}", s.lag1());
        assert!((s.mean().unwrap() - 1e9).abs() < 1e-6);
    }

    fn hurst_of(h: f64, seed: u64, n: usize) -> HurstEstimate {
        let mut s = SeriesStats::new();
        for x in Fgn::new(h, n, seed).unwrap().take(n) {
            s.push(1000.0 + 50.0 * x);
        }
        s.hurst().unwrap()
    }

    #[test]
    fn hurst_of_fgn_h08() {
        for seed in [1, 2] {
            let e = hurst_of(0.8, seed, 1 << 16);
            assert!((e.hurst - 0.8).abs() < 0.05, "seed {seed}: {e:?}");
            assert_eq!((e.min_block, e.max_block), (1, 8192));
        }
    }

    #[test]
    fn hurst_of_white_and_antipersistent_noise() {
        let e = hurst_of(0.5, 3, 1 << 16);
        assert!((e.hurst - 0.5).abs() < 0.05, "{e:?}");
        let e = hurst_of(0.3, 4, 1 << 16);
        assert!((e.hurst - 0.3).abs() < 0.05, "{e:?}");
    }

    #[test]
    fn hurst_needs_enough_values() {
        let mut s = SeriesStats::new();
        for i in 0..63 {
            s.push(f64::from(i % 7));
        }
        assert!(s.hurst().is_none());
        s.push(1.0);
        assert!(s.hurst().is_some());
    }

    #[test]
    fn text_of_a_small_trace() {
        let mut s = TraceStats::new();
        for a in [
            Action::Delay { delay_ns: 1000 },
            Action::Drop,
            Action::Duplicate { delay_ns: 3000 },
        ] {
            s.push(&Record::from(a));
        }
        assert_eq!(
            s.report().text("t.delays", Format::Delays),
            "t.delays: delays\n\
             records  3  (delay 1, drop 1, dup 1, corrupt 0)\n\
             delay    mean 2.000us  σ 1.414us  min 1.000us  max 3.000us  (over 2 delays and duplicates)\n\
             lag-1    -0.5000\n\
             Hurst    - (needs at least 64 delays that vary)\n"
        );
        assert_eq!(
            TraceStats::new().report().text("e", Format::PktCsv),
            "e: pkt-csv\nrecords  0  (delay 0, drop 0, dup 0, corrupt 0)\n\
             delay    - (no delay or duplicate records)\n\
             lag-1    - (needs 2 delays that differ)\n\
             Hurst    - (needs at least 64 delays that vary)\n"
        );
    }
}
