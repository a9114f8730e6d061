//! Running mean and variance in one pass (Welford), and the merge of two
//! running states (Chan et al.'s parallel combination): stable where the
//! textbook `Σx² − n·x̄²` cancels, e.g. delays that all carry a large
//! clock offset.

/// Count, mean and sum of squared deviations from the mean (`M2`) of the
/// values pushed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Welford {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Welford {
    pub fn new() -> Welford {
        Welford::default()
    }

    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    /// Adds every value `other` has seen, as if pushed here.
    pub fn merge(&mut self, other: &Welford) {
        if other.n == 0 {
            return;
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let delta = other.mean - self.mean;
        self.mean += delta * nb / n;
        self.m2 += other.m2 + delta * delta * na * nb / n;
        self.n += other.n;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The mean; `None` before any value.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }

    /// Σ (x − x̄)², 0 before any value.
    pub fn m2(&self) -> f64 {
        self.m2
    }

    /// Population variance (÷ n); `None` before any value.
    pub fn population_variance(&self) -> Option<f64> {
        (self.n > 0).then(|| (self.m2 / self.n as f64).max(0.0))
    }

    /// Sample variance (÷ n − 1); `None` before two values.
    pub fn sample_variance(&self) -> Option<f64> {
        (self.n >= 2).then(|| (self.m2 / (self.n - 1) as f64).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-pass mean and M2 of `xs`, the reference.
    fn two_pass(xs: &[f64]) -> (f64, f64) {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        (mean, xs.iter().map(|x| (x - mean).powi(2)).sum())
    }

    fn of(xs: &[f64]) -> Welford {
        let mut w = Welford::new();
        xs.iter().for_each(|&x| w.push(x));
        w
    }

    #[test]
    fn matches_two_passes_and_the_known_variances() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let w = of(&xs);
        assert_eq!(w.count(), 8);
        assert_eq!(w.mean(), Some(5.0));
        assert_eq!(w.m2(), two_pass(&xs).1);
        assert_eq!(w.population_variance(), Some(4.0));
        assert_eq!(w.sample_variance(), Some(32.0 / 7.0));
        assert_eq!(Welford::new().mean(), None);
        assert_eq!(Welford::new().population_variance(), None);
        assert_eq!(of(&[1.0]).sample_variance(), None);
        assert_eq!(of(&[1.0]).population_variance(), Some(0.0));
    }

    #[test]
    fn a_large_offset_does_not_cancel_the_spread() {
        // σ = 100 around 1e12: Σx² − n·x̄² loses it entirely in f64.
        let xs: Vec<f64> = (0..1000)
            .map(|i| 1e12 + if i % 2 == 0 { 100.0 } else { -100.0 })
            .collect();
        let sd = of(&xs).population_variance().unwrap().sqrt();
        assert!((sd - 100.0).abs() < 1e-3, "{sd}");
    }

    #[test]
    fn merging_equals_pushing_everything_into_one() {
        let xs: Vec<f64> = (0..100)
            .map(|i| ((i * 37) % 101) as f64 * 1.5 - 20.0)
            .collect();
        for cut in [0, 1, 37, 99, 100] {
            let mut a = of(&xs[..cut]);
            a.merge(&of(&xs[cut..]));
            let whole = of(&xs);
            assert_eq!(a.count(), whole.count());
            assert!(
                (a.mean().unwrap() - whole.mean().unwrap()).abs() < 1e-9,
                "{cut}"
            );
            assert!((a.m2() - whole.m2()).abs() < 1e-6 * whole.m2(), "{cut}");
        }
    }
}
