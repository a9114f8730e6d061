//! χ² tests of homogeneity between what the configuration decided and
//! what left the emulator: did it drop (or duplicate) frames at the
//! configured rate, whichever way its own random numbers fell? Frame by
//! frame, `lost` and `duplicated` already judge an emulator that draws the
//! configuration's random numbers (wirelab with the same seed); these tests
//! judge one that does not (another seed, netem, another tool).

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// A 2×2 test (one degree of freedom): of the same IN frames, how many
/// had the property (`[yes, no]`) as configured and as observed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Chi2Test {
    pub configured: [u64; 2],
    pub observed: [u64; 2],
    pub statistic: f64,
    /// Probability of a statistic this large if the emulator drew from the
    /// configured rate: small (below 0.01, say) means it did not.
    pub p_value: f64,
}

/// The two tests of a verification.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Chi2Report {
    /// Frames forwarded (at least one copy) vs dropped.
    pub delivery: Option<Chi2Test>,
    /// Of the forwarded frames, those with more than one copy.
    pub duplication: Option<Chi2Test>,
}

/// The test of `configured` against `observed` (`[yes, no]` each); `None`
/// when a column is empty in both (nothing varies: nothing to test).
pub fn homogeneity(configured: [u64; 2], observed: [u64; 2]) -> Option<Chi2Test> {
    let rows = [configured, observed];
    let row_total = |r: [u64; 2]| (r[0] + r[1]) as f64;
    let col_total = |c: usize| (configured[c] + observed[c]) as f64;
    let n = row_total(configured) + row_total(observed);
    if col_total(0) == 0.0 || col_total(1) == 0.0 || row_total(configured) == 0.0 {
        return None;
    }
    let mut statistic = 0.0;
    for r in rows {
        for (c, &o) in r.iter().enumerate() {
            let e = row_total(r) * col_total(c) / n;
            if e > 0.0 {
                statistic += (o as f64 - e).powi(2) / e;
            }
        }
    }
    let p_value = ChiSquared::new(1.0).map_or(f64::NAN, |d| d.sf(statistic));
    Some(Chi2Test {
        configured,
        observed,
        statistic,
        p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tables_pass_and_different_rates_fail() {
        let t = homogeneity([990, 10], [990, 10]).unwrap();
        assert_eq!(t.statistic, 0.0);
        assert!((t.p_value - 1.0).abs() < 1e-12);
        // 1 % configured, 5 % observed over 10,000 frames.
        let t = homogeneity([9_900, 100], [9_500, 500]).unwrap();
        assert!(t.statistic > 100.0 && t.p_value < 1e-20, "{t:?}");
        // Hand-computed: [[20, 80], [30, 70]] gives χ² = 2.6667, p = 0.1025.
        let t = homogeneity([20, 80], [30, 70]).unwrap();
        assert!((t.statistic - 8.0 / 3.0).abs() < 1e-9, "{t:?}");
        assert!((t.p_value - 0.102_470).abs() < 1e-5, "{t:?}");
    }

    #[test]
    fn nothing_varies_nothing_to_test() {
        assert_eq!(homogeneity([100, 0], [100, 0]), None);
        assert_eq!(homogeneity([0, 0], [0, 0]), None);
    }
}
