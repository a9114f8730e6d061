//! The summary of a distribution of non-negative nanosecond values (a
//! delay, a lateness, an error magnitude), taken from an HDR histogram.
//!
//! One type for every such summary in wirelab's reports: capture's
//! delivery latency (all keys) and replay's departure and inter-departure
//! errors (the five keys of [`serialize_compact`]). Signed quantities with
//! the sequence number of their worst case are [`crate::DelayStats`].
//!
//! Quantiles come from the histogram ([`histogram`]: 1 ns to 1 h, 3
//! significant digits, so within 0.1 %); count, min, max and mean are the
//! histogram's own. An empty histogram summarises to all zeros.

use hdrhistogram::Histogram;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Largest value a [`histogram`] holds exactly: one hour in ns. Larger
/// values are recorded as this.
pub const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// An empty histogram with the bounds every [`Percentiles`] is taken from.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("static bounds are valid")
}

/// Distribution summary in ns. Serialises as `{count, min_ns, p50_ns,
/// p90_ns, p99_ns, p999_ns, max_ns, mean_ns}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Smallest value.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest value.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: f64,
}

impl Percentiles {
    /// The summary of `h` (all zeros when it is empty).
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            mean_ns: h.mean(),
        }
    }
}

/// Serialises `p` as `{p50_ns, p99_ns, p999_ns, max_ns, mean_ns}`, the
/// shape of the error distributions in `wirelab.replay/1` (use with
/// `#[serde(serialize_with = ...)]`).
pub fn serialize_compact<S: Serializer>(p: &Percentiles, s: S) -> Result<S::Ok, S::Error> {
    let mut st = s.serialize_struct("Percentiles", 5)?;
    st.serialize_field("p50_ns", &p.p50_ns)?;
    st.serialize_field("p99_ns", &p.p99_ns)?;
    st.serialize_field("p999_ns", &p.p999_ns)?;
    st.serialize_field("max_ns", &p.max_ns)?;
    st.serialize_field("mean_ns", &p.mean_ns)?;
    st.end()
}

/// Adds `other` into `into` (same bounds: the plain add; otherwise value
/// by value, saturating at the bounds).
pub(crate) fn merge(into: &mut Histogram<u64>, other: &Histogram<u64>) {
    if into.add(other).is_err() {
        for v in other.iter_recorded() {
            into.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut h = histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let p = Percentiles::of(&h);
        assert_eq!((p.count, p.min_ns, p.max_ns), (1000, 1, 1000));
        assert_eq!(
            (p.p50_ns, p.p90_ns, p.p99_ns, p.p999_ns),
            (500, 900, 990, 999)
        );
        assert!((p.mean_ns - 500.5).abs() < 1e-9);
        assert_eq!(Percentiles::of(&histogram()), Percentiles::default());
    }

    #[test]
    fn both_shapes_serialise_their_keys_in_order() {
        let p = Percentiles {
            count: 7,
            min_ns: 1,
            p50_ns: 2,
            p90_ns: 3,
            p99_ns: 4,
            p999_ns: 5,
            max_ns: 6,
            mean_ns: 2.5,
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"count":7,"min_ns":1,"p50_ns":2,"p90_ns":3,"p99_ns":4,"p999_ns":5,"max_ns":6,"mean_ns":2.5}"#
        );
        #[derive(Serialize)]
        struct Compact(#[serde(serialize_with = "serialize_compact")] Percentiles);
        assert_eq!(
            serde_json::to_string(&Compact(p)).unwrap(),
            r#"{"p50_ns":2,"p99_ns":4,"p999_ns":5,"max_ns":6,"mean_ns":2.5}"#
        );
    }

    #[test]
    fn merge_adds_counts_and_saturates_foreign_bounds() {
        let mut a = histogram();
        a.record(10).unwrap();
        let mut b = histogram();
        b.record(20).unwrap();
        merge(&mut a, &b);
        assert_eq!(Percentiles::of(&a).count, 2);
        let mut wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 4, 3).unwrap();
        wide.record(u64::MAX / 8).unwrap();
        merge(&mut a, &wide);
        let p = Percentiles::of(&a);
        assert_eq!(p.count, 3);
        assert!(p.max_ns >= HIST_MAX_NS && p.max_ns <= HIST_MAX_NS + HIST_MAX_NS / 1000);
    }
}
