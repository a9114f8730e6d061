//! Result bundles of `wirelab run` side by side (`wirelab report
//! --compare`): per point, flow and metric the difference of a bundle
//! from the first (B − A), with a bootstrap confidence interval from the
//! repetitions and an effect size.
//!
//! * A point is matched across bundles by its parameters less those each
//!   bundle holds at one value (what tells the bundles apart: `--set
//!   loss=3%`), and its flow; the repetition is not part of it.
//! * Only rows of points that ran to their end (`done`) give values; OWD
//!   figures given relative to their minimum (`owd_relative`) are left
//!   out, they are not the same quantity as absolute ones.
//! * The interval is the percentile bootstrap of the difference of means
//!   ([`RESAMPLES`] resamples of each side, [`CONFIDENCE`]), expanded for
//!   small samples (Hesterberg's expanded percentile interval): the plain
//!   one is too narrow with the 3–5 repetitions a campaign has (it takes
//!   the spread as known and, at 3 a side, calls a null difference
//!   significant about one time in five), so its tails are taken at the
//!   normal probability of the Welch t quantile scaled by the ratio of
//!   the unbiased to the bootstrap's standard error. Its RNG is seeded
//!   per row from the caller's seed and the row's identity, so a result
//!   is the same on every run and for any set of other rows. Fewer than
//!   two values on a side give no interval ("needs repetitions"): one
//!   value says nothing of the spread.
//! * The interval is never narrower than Welch's t interval at the same
//!   confidence. A bootstrap resample cannot leave the range of the data:
//!   with 3 repetitions a side, two samples that do not overlap — one
//!   time in ten when nothing differs — always give an interval that
//!   excludes 0, whatever the confidence asked for. The t interval keeps
//!   the level; the bootstrap keeps skewed samples honest.
//! * The effect size is Cohen's d, the difference over the pooled
//!   standard deviation. Not Cliff's delta: with the few repetitions a
//!   campaign has, every fully separated pair of samples has a delta of
//!   ±1, so it cannot rank them; d keeps ranking them by how far apart
//!   they are in units of their spread.

use crate::schema::run::{ParamValue, PointStatus, SummaryRow};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use std::collections::{BTreeMap, BTreeSet};

/// Schema of `wirelab report --compare --json`.
pub const COMPARE_SCHEMA: &str = "wirelab.report.compare/1";
/// Bootstrap resamples per row.
pub const RESAMPLES: usize = 10_000;
/// The confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;
/// The seed when the caller gives none.
pub const DEFAULT_SEED: u64 = 1;

/// How rows are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The seed of the resampling.
    pub seed: u64,
    /// Bootstrap resamples per row.
    pub resamples: usize,
    /// The confidence of the intervals, in (0, 1).
    pub confidence: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            seed: DEFAULT_SEED,
            resamples: RESAMPLES,
            confidence: CONFIDENCE,
        }
    }
}

/// A summary metric compared; serialized as its `summary.json` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    LossRatio,
    ThroughputBps,
    RatePps,
    OwdMeanNs,
    OwdP99Ns,
    JitterNs,
    IpdvP99AbsNs,
    RttMeanNs,
    RttP99Ns,
}

impl Metric {
    pub const ALL: [Metric; 9] = [
        Metric::LossRatio,
        Metric::ThroughputBps,
        Metric::RatePps,
        Metric::OwdMeanNs,
        Metric::OwdP99Ns,
        Metric::JitterNs,
        Metric::IpdvP99AbsNs,
        Metric::RttMeanNs,
        Metric::RttP99Ns,
    ];

    /// The `summary.json` field.
    pub fn field(self) -> &'static str {
        match self {
            Metric::LossRatio => "loss_ratio",
            Metric::ThroughputBps => "throughput_bps",
            Metric::RatePps => "rate_pps",
            Metric::OwdMeanNs => "owd_mean_ns",
            Metric::OwdP99Ns => "owd_p99_ns",
            Metric::JitterNs => "jitter_ns",
            Metric::IpdvP99AbsNs => "ipdv_p99_abs_ns",
            Metric::RttMeanNs => "rtt_mean_ns",
            Metric::RttP99Ns => "rtt_p99_ns",
        }
    }

    /// The metric's value in a row, when it has one (finite).
    pub fn of(self, r: &SummaryRow) -> Option<f64> {
        let owd = |v: Option<f64>| if r.owd_relative { None } else { v };
        let v = match self {
            Metric::LossRatio => r.loss_ratio,
            Metric::ThroughputBps => r.throughput_bps,
            Metric::RatePps => r.rate_pps,
            Metric::OwdMeanNs => owd(r.owd_mean_ns),
            Metric::OwdP99Ns => owd(r.owd_p99_ns.map(|v| v as f64)),
            Metric::JitterNs => r.jitter_ns,
            Metric::IpdvP99AbsNs => r.ipdv_p99_abs_ns.map(|v| v as f64),
            Metric::RttMeanNs => r.rtt_mean_ns,
            Metric::RttP99Ns => r.rtt_p99_ns.map(|v| v as f64),
        };
        v.filter(|v| v.is_finite())
    }
}

/// A point of the comparison: its parameters (less the bundles' fixed
/// ones) and the flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointKey {
    pub params: BTreeMap<String, ParamValue>,
    pub flow: String,
}

impl PointKey {
    /// `k=v k=v flow`: how the point is shown, and what orders points.
    pub fn text(&self) -> String {
        let mut s: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        s.push(self.flow.clone());
        s.join(" ")
    }
}

/// One point's values in one bundle: per metric, one per repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSamples {
    pub key: PointKey,
    pub values: BTreeMap<Metric, Vec<f64>>,
}

/// One bundle's values, by [`PointKey::text`].
#[derive(Debug, Clone, PartialEq)]
pub struct BundleSamples {
    pub label: String,
    pub points: BTreeMap<String, PointSamples>,
}

/// The parameters that have one value in each bundle (that value may
/// differ between bundles): they tell bundles apart, not points.
pub fn fixed_params(bundles: &[&[SummaryRow]]) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    let mut varying = BTreeSet::new();
    for rows in bundles {
        let mut seen: BTreeMap<&str, &ParamValue> = BTreeMap::new();
        for r in rows.iter() {
            for (k, v) in &r.params {
                all.insert(k.clone());
                match seen.get(k.as_str()) {
                    Some(first) if *first != v => {
                        varying.insert(k.clone());
                    }
                    Some(_) => {}
                    None => {
                        seen.insert(k, v);
                    }
                }
            }
        }
    }
    all.difference(&varying).cloned().collect()
}

/// A bundle's values from its summary rows: the rows of points that ran
/// to their end, keyed without the `fixed` parameters.
pub fn samples(label: &str, rows: &[SummaryRow], fixed: &BTreeSet<String>) -> BundleSamples {
    let mut points: BTreeMap<String, PointSamples> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == PointStatus::Done) {
        let key = PointKey {
            params: r
                .params
                .iter()
                .filter(|(k, _)| !fixed.contains(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            flow: r.flow.clone(),
        };
        let e = points.entry(key.text()).or_insert_with(|| PointSamples {
            key,
            values: BTreeMap::new(),
        });
        for m in Metric::ALL {
            if let Some(v) = m.of(r) {
                e.values.entry(m).or_default().push(v);
            }
        }
    }
    BundleSamples {
        label: label.to_string(),
        points,
    }
}

/// One side of a row: its bundle, the mean and count of its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub bundle: String,
    pub mean: f64,
    pub n: usize,
    /// Sample standard deviation (absent below two values).
    pub sd: Option<f64>,
}

/// One point, flow and metric of a bundle against the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub params: BTreeMap<String, ParamValue>,
    pub flow: String,
    pub metric: Metric,
    pub a: Side,
    pub b: Side,
    /// b.mean − a.mean.
    pub difference: f64,
    /// The difference over |a.mean| (absent when a.mean is 0).
    pub relative: Option<f64>,
    /// The bootstrap interval of the difference (absent without at least
    /// two values on each side).
    pub ci: Option<[f64; 2]>,
    /// The interval excludes 0.
    pub significant: bool,
    /// Cohen's d (absent without two values a side, or when neither side
    /// varies and the means differ).
    pub effect_size: Option<f64>,
    /// Why there is no interval.
    pub note: Option<String>,
}

/// A point that only some bundles hold: listed, not compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlyIn {
    pub params: BTreeMap<String, ParamValue>,
    pub flow: String,
    pub bundles: Vec<String>,
}

/// What [`compare`] found.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Comparison {
    /// Sorted by [`CompareRow::rank`], largest first, then by point and
    /// metric.
    pub rows: Vec<CompareRow>,
    pub only_in: Vec<OnlyIn>,
}

/// The label of the `i`-th bundle: `A`, `B`, … `Z`, then `#27`, ….
pub fn label(i: usize) -> String {
    match u8::try_from(i) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("#{}", i + 1),
    }
}

/// A bundle as `--compare --json` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleInfo {
    /// `A`, `B`, … in the order given.
    pub label: String,
    pub path: String,
    /// The parameters held at one value, with this bundle's value.
    pub fixed: BTreeMap<String, ParamValue>,
    /// Summary rows of points that ran to their end (the values used).
    pub rows_done: usize,
    /// Summary rows in all.
    pub rows: usize,
}

/// `wirelab report --compare --json` ([`COMPARE_SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    pub schema: String,
    pub seed: u64,
    pub resamples: usize,
    pub confidence: f64,
    pub bundles: Vec<BundleInfo>,
    /// Control file keys (dotted) that differ between the first bundle
    /// and another, outside `[sweep]`.
    pub control_differences: Vec<String>,
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// A bundle's [`BundleInfo`] from its rows and the fixed parameters.
pub fn bundle_info(
    label: &str,
    path: &str,
    rows: &[SummaryRow],
    fixed: &BTreeSet<String>,
) -> BundleInfo {
    let mut values = BTreeMap::new();
    for r in rows {
        for (k, v) in &r.params {
            if fixed.contains(k) {
                values.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    BundleInfo {
        label: label.to_string(),
        path: path.to_string(),
        fixed: values,
        rows_done: rows
            .iter()
            .filter(|r| r.status == PointStatus::Done)
            .count(),
        rows: rows.len(),
    }
}

/// Every bundle after the first against the first, at every point that
/// all bundles hold and every metric both sides of a row have.
pub fn compare(bundles: &[BundleSamples], settings: &Settings) -> Comparison {
    let mut out = Comparison::default();
    let Some((base, others)) = bundles.split_first() else {
        return out;
    };
    let mut keys: BTreeSet<&String> = BTreeSet::new();
    for b in bundles {
        keys.extend(b.points.keys());
    }
    for k in keys {
        let holders: Vec<&BundleSamples> = bundles
            .iter()
            .filter(|b| b.points.contains_key(k))
            .collect();
        if holders.len() < bundles.len() {
            let key = &holders[0].points[k].key;
            out.only_in.push(OnlyIn {
                params: key.params.clone(),
                flow: key.flow.clone(),
                bundles: holders.iter().map(|b| b.label.clone()).collect(),
            });
            continue;
        }
        let pa = &base.points[k];
        for other in others {
            let pb = &other.points[k];
            for (m, va) in &pa.values {
                let Some(vb) = pb.values.get(m) else { continue };
                let row_seed = mix(
                    settings.seed,
                    &format!("{k}\0{}\0{}", m.field(), other.label),
                );
                let row_settings = Settings {
                    seed: row_seed,
                    ..*settings
                };
                out.rows
                    .push(row(&pa.key, *m, (base, va), (other, vb), &row_settings));
            }
        }
    }
    out.rows.sort_by(|x, y| y.rank().total_cmp(&x.rank()));
    out
}

impl CompareRow {
    /// What the rows are sorted by: |effect size|; a difference where
    /// neither side varies (no d, the interval a single value) above
    /// every d; rows without an interval (no repetitions) below all.
    pub fn rank(&self) -> f64 {
        match self.effect_size {
            Some(d) => d.abs(),
            None if self.ci.is_some() && self.difference != 0.0 => f64::INFINITY,
            None => -1.0,
        }
    }
}

fn row(
    key: &PointKey,
    metric: Metric,
    (ba, va): (&BundleSamples, &[f64]),
    (bb, vb): (&BundleSamples, &[f64]),
    settings: &Settings,
) -> CompareRow {
    let (ma, mb) = (mean(va), mean(vb));
    let difference = mb - ma;
    let boot = bootstrap_ci(
        va,
        vb,
        settings.resamples,
        settings.seed,
        settings.confidence,
    );
    let ci = match (boot, welch_ci(va, vb, settings.confidence)) {
        (Some((bl, bh)), Some((tl, th))) => Some((bl.min(tl), bh.max(th))),
        (b, t) => b.or(t),
    };
    CompareRow {
        params: key.params.clone(),
        flow: key.flow.clone(),
        metric,
        a: side(ba, va),
        b: side(bb, vb),
        difference,
        relative: (ma != 0.0).then(|| difference / ma.abs()),
        ci: ci.map(|(lo, hi)| [lo, hi]),
        significant: ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0),
        effect_size: cohens_d(va, vb),
        note: ci.is_none().then(|| "needs repetitions".to_string()),
    }
}

fn side(b: &BundleSamples, v: &[f64]) -> Side {
    Side {
        bundle: b.label.clone(),
        mean: mean(v),
        n: v.len(),
        sd: variance(v).map(f64::sqrt),
    }
}

/// The mean (NaN for no values; callers give at least one).
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The sample variance (n − 1), absent below two values.
pub fn variance(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v);
    Some(v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64)
}

/// Cohen's d of `b` against `a`: (mean b − mean a) / pooled sd. 0 when
/// nothing varies and the means are equal; absent when nothing varies
/// and they differ, or with fewer than two values a side.
pub fn cohens_d(a: &[f64], b: &[f64]) -> Option<f64> {
    let (va, vb) = (variance(a)?, variance(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let pooled = (((na - 1.0) * va + (nb - 1.0) * vb) / (na + nb - 2.0)).sqrt();
    let d = mean(b) - mean(a);
    if pooled > 0.0 {
        Some(d / pooled)
    } else {
        (d == 0.0).then_some(0.0)
    }
}

/// The expanded percentile bootstrap interval at `confidence` of
/// mean(b) − mean(a): both sides resampled with replacement `resamples`
/// times, the interval between the [`expanded_tail`] quantiles. Absent
/// with fewer than two values on a side.
pub fn bootstrap_ci(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> Option<(f64, f64)> {
    let tail = expanded_tail(a, b, confidence)?;
    if resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64(seed);
    let mut resample = |v: &[f64]| {
        let s: f64 = (0..v.len()).map(|_| v[rng.below(v.len())]).sum();
        s / v.len() as f64
    };
    let mut d: Vec<f64> = (0..resamples)
        .map(|_| {
            let ma = resample(a);
            resample(b) - ma
        })
        .collect();
    d.sort_by(f64::total_cmp);
    Some((quantile(&d, tail), quantile(&d, 1.0 - tail)))
}

/// The probability in each tail of the bootstrap distribution that the
/// interval leaves out: Φ(−f·t), t the Welch t quantile of `confidence`,
/// f = √(unbiased variance of the difference / the bootstrap's, (n − 1)/n
/// of it a side). (1 − `confidence`) / 2 for large samples, smaller for
/// small ones. Absent with fewer than two values on a side.
pub fn expanded_tail(a: &[f64], b: &[f64], confidence: f64) -> Option<f64> {
    let w = Welch::of(a, b)?;
    let nominal = (1.0 - confidence) / 2.0;
    if w.se2 <= 0.0 {
        // Neither side varies: every resample is the difference itself.
        return Some(nominal);
    }
    let boot = w.ua * (w.na - 1.0) / w.na + w.ub * (w.nb - 1.0) / w.nb;
    let t = w.t(confidence);
    let unbiased = w.se2;
    let tail = Normal::standard().cdf(-(unbiased / boot).sqrt() * t);
    Some(if tail.is_finite() {
        tail.min(nominal)
    } else {
        nominal
    })
}

/// Welch's t interval at `confidence` of mean(b) − mean(a): the
/// difference ± t·SE, t at Welch–Satterthwaite's degrees of freedom.
/// The difference itself when neither side varies; absent with fewer
/// than two values on a side.
pub fn welch_ci(a: &[f64], b: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let w = Welch::of(a, b)?;
    let d = mean(b) - mean(a);
    if w.se2 <= 0.0 {
        return Some((d, d));
    }
    let half = w.t(confidence) * w.se2.sqrt();
    half.is_finite().then_some((d - half, d + half))
}

/// The squared standard errors of two samples' means, their sum, and the
/// sample sizes.
struct Welch {
    ua: f64,
    ub: f64,
    se2: f64,
    na: f64,
    nb: f64,
}

impl Welch {
    fn of(a: &[f64], b: &[f64]) -> Option<Welch> {
        let (va, vb) = (variance(a)?, variance(b)?);
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let (ua, ub) = (va / na, vb / nb);
        Some(Welch {
            ua,
            ub,
            se2: ua + ub,
            na,
            nb,
        })
    }

    /// The two-sided t quantile of `confidence` at the Welch–Satterthwaite
    /// degrees of freedom (NaN when they are not defined).
    fn t(&self, confidence: f64) -> f64 {
        let df = self.se2 * self.se2
            / (self.ua * self.ua / (self.na - 1.0) + self.ub * self.ub / (self.nb - 1.0));
        let q = 1.0 - (1.0 - confidence) / 2.0;
        StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |d| d.inverse_cdf(q))
    }
}

/// The `q` quantile of sorted values, linear between order statistics
/// (R's type 7).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// A seed for one row: the caller's mixed with the row's identity
/// (FNV-1a), so a row's interval does not depend on the other rows.
fn mix(seed: u64, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    SplitMix64(seed ^ h).next()
}

/// SplitMix64: small, fast, and fixed here so that a seed gives the same
/// intervals in every version.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (multiply-shift; the bias is below 2^-32 for the
    /// sample sizes here).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests;
