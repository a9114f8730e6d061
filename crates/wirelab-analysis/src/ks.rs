//! Kolmogorov–Smirnov distances for distribution accuracy (how closely
//! generated intervals or sizes follow the requested distribution).
//!
//! Both functions compute the exact supremum `D = sup_x |F1(x) - F2(x)|`,
//! also for discrete distributions and samples with ties: the requested CDF
//! is evaluated at every distinct sample value `x` and just below it (the
//! next smaller `f64`), which covers both sides of every jump. NaN samples
//! are ignored; CDF values are clamped to `[0, 1]` (a NaN CDF value counts
//! as 0). With no usable samples the distance is NaN.

use std::cmp::Ordering;

/// Sorts ascending and returns the non-NaN part.
fn sorted_finite(x: &mut [f64]) -> &[f64] {
    x.sort_unstable_by(f64::total_cmp);
    // total_cmp puts negative NaNs first and positive NaNs last.
    let start = x.iter().position(|v| !v.is_nan()).unwrap_or(x.len());
    let end = x.iter().rposition(|v| !v.is_nan()).map_or(start, |e| e + 1);
    x.get(start..end.max(start)).unwrap_or(&[])
}

/// The largest `f64` below `x` (for finite, non-minimal `x`).
fn just_below(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return x;
    }
    if x == 0.0 {
        return -f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b - 1 } else { b + 1 })
}

fn clamp01(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// Two-sided one-sample KS statistic `D_n = sup_x |F_n(x) - cdf(x)|` of
/// `samples` (sorted in place) against the requested distribution.
pub fn ks_distance(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let xs = sorted_finite(samples);
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    let nf = n as f64;
    let mut d: f64 = 0.0;
    let mut i = 0;
    while i < n {
        let x = xs[i];
        let mut j = i;
        while j < n && xs[j] == x {
            j += 1;
        }
        let before = i as f64 / nf;
        let after = j as f64 / nf;
        d = d.max((after - clamp01(cdf(x))).abs());
        d = d.max((before - clamp01(cdf(just_below(x)))).abs());
        i = j;
    }
    d
}

/// Two-sample KS statistic `sup_x |F_a(x) - F_b(x)|` of two empirical
/// distributions (both sorted in place).
pub fn ks_two_sample(a: &mut [f64], b: &mut [f64]) -> f64 {
    let xa = sorted_finite(a);
    let xb = sorted_finite(b);
    let (n, m) = (xa.len(), xb.len());
    if n == 0 || m == 0 {
        return f64::NAN;
    }
    let (mut i, mut j) = (0usize, 0usize);
    let mut d: f64 = 0.0;
    while i < n && j < m {
        let x = match xa[i].total_cmp(&xb[j]) {
            Ordering::Greater => xb[j],
            _ => xa[i],
        };
        while i < n && xa[i] == x {
            i += 1;
        }
        while j < m && xb[j] == x {
            j += 1;
        }
        d = d.max((i as f64 / n as f64 - j as f64 / m as f64).abs());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(x: f64) -> f64 {
        x.clamp(0.0, 1.0)
    }

    #[test]
    fn uniform_grid_is_close() {
        let n = 1000;
        let mut s: Vec<f64> = (0..n).rev().map(|i| (i as f64 + 0.5) / n as f64).collect();
        let d = ks_distance(&mut s, uniform);
        assert!((d - 0.5 / n as f64).abs() < 1e-12, "{d}");
    }

    #[test]
    fn shifted_samples_are_far() {
        let n = 1000;
        let mut s: Vec<f64> = (0..n).map(|i| 0.5 + (i as f64 + 0.5) / n as f64).collect();
        let d = ks_distance(&mut s, uniform);
        assert!((d - 0.5).abs() < 1e-3, "{d}");
        // Entirely outside the support.
        let mut s = vec![2.0, 3.0];
        assert_eq!(ks_distance(&mut s, uniform), 1.0);
    }

    #[test]
    fn exponential_known_value() {
        // Single sample at the median: D = 0.5.
        let exp = |x: f64| if x < 0.0 { 0.0 } else { 1.0 - (-x).exp() };
        let mut s = vec![std::f64::consts::LN_2];
        assert!((ks_distance(&mut s, exp) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn discrete_constant_matches() {
        let step = |x: f64| if x >= 100.0 { 1.0 } else { 0.0 };
        let mut s = vec![100.0; 50];
        assert_eq!(ks_distance(&mut s, step), 0.0);
        let mut s = vec![100.0, 100.0, 101.0, 99.0];
        assert!((ks_distance(&mut s, step) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn nan_and_empty() {
        assert!(ks_distance(&mut [], uniform).is_nan());
        assert!(ks_distance(&mut [f64::NAN, -f64::NAN], uniform).is_nan());
        let mut s = vec![f64::NAN, 0.5, -f64::NAN];
        assert_eq!(ks_distance(&mut s, uniform), 0.5);
        let mut s = vec![0.5, f64::INFINITY, f64::NEG_INFINITY];
        let d = ks_distance(&mut s, |_| f64::NAN);
        assert!(d.is_finite());
    }

    #[test]
    fn two_sample() {
        let mut a: Vec<f64> = (0..100).map(f64::from).collect();
        let mut b = a.clone();
        assert_eq!(ks_two_sample(&mut a, &mut b), 0.0);
        let mut c: Vec<f64> = (50..150).map(f64::from).collect();
        assert!((ks_two_sample(&mut a, &mut c) - 0.5).abs() < 1e-12);
        let mut d: Vec<f64> = (1000..1010).map(f64::from).collect();
        assert_eq!(ks_two_sample(&mut a, &mut d), 1.0);
        assert!(ks_two_sample(&mut a, &mut []).is_nan());
    }
}
