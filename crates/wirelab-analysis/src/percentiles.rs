//! The HDR histogram every non-negative ns distribution in wirelab's
//! reports is recorded in (capture's delivery latency, replay's departure
//! errors, the emulator's lateness and delays), and the compact shape of
//! replay's error summaries. The summary itself is the one
//! [`DelayStats`], taken with [`DelayStats::of_hist`].
//!
//! Bounds: 1 ns to 1 h, 3 significant digits, so quantiles are within
//! 0.1 %.

use crate::DelayStats;
use hdrhistogram::Histogram;
use serde::ser::SerializeStruct;
use serde::Serializer;

/// Largest value a [`histogram`] holds exactly: one hour in ns. Larger
/// values are recorded as this.
pub const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// An empty histogram with the bounds every summary is taken from.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("static bounds are valid")
}

/// Serialises `p` as `{p50_ns, p99_ns, p999_ns, max_ns, mean_ns}`, the
/// shape of the error distributions in `wirelab.replay/1` (use with
/// `#[serde(serialize_with = ...)]`).
pub fn serialize_compact<S: Serializer>(p: &DelayStats, s: S) -> Result<S::Ok, S::Error> {
    let mut st = s.serialize_struct("DelayStats", 5)?;
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
        let p = DelayStats::of_hist(&h);
        assert_eq!((p.count, p.min_ns, p.max_ns), (1000, 1, 1000));
        assert_eq!(
            (p.p50_ns, p.p90_ns, p.p99_ns, p.p999_ns, p.p9999_ns),
            (500, 900, 990, 999, 1000)
        );
        assert!((p.mean_ns - 500.5).abs() < 1e-9);
        assert!((p.stdev_ns - 288.67).abs() < 0.01, "{}", p.stdev_ns);
        assert_eq!((p.min_seq, p.max_seq), (None, None));
        assert_eq!(DelayStats::of_hist(&histogram()), DelayStats::default());
    }

    #[test]
    fn both_shapes_serialise_their_keys_in_order() {
        let p = DelayStats {
            count: 7,
            min_ns: 1,
            mean_ns: 2.5,
            stdev_ns: 1.5,
            p50_ns: 2,
            p90_ns: 3,
            p99_ns: 4,
            p999_ns: 5,
            p9999_ns: 6,
            max_ns: 6,
            min_seq: None,
            max_seq: None,
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"count":7,"min_ns":1,"mean_ns":2.5,"stdev_ns":1.5,"p50_ns":2,"p90_ns":3,"p99_ns":4,"p999_ns":5,"p9999_ns":6,"max_ns":6}"#
        );
        #[derive(serde::Serialize)]
        struct Compact(#[serde(serialize_with = "serialize_compact")] DelayStats);
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
        assert_eq!(DelayStats::of_hist(&a).count, 2);
        let mut wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 4, 3).unwrap();
        wide.record(u64::MAX / 8).unwrap();
        merge(&mut a, &wide);
        let p = DelayStats::of_hist(&a);
        assert_eq!(p.count, 3);
        let max = HIST_MAX_NS as i64;
        assert!(p.max_ns >= max && p.max_ns <= max + max / 1000);
    }
}
