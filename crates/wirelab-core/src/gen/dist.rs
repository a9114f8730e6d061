//! Parametric distributions: parameters, theoretical mean, CDF, sampler.

use rand::distr::Uniform;
use rand::Rng;
use rand_distr::{
    Cauchy, CauchyError, Distribution, Exp, ExpError, Gamma, GammaError, LogNormal, Normal,
    NormalError, Pareto, ParetoError, Weibull, WeibullError,
};
use statrs::distribution::ContinuousCDF;

/// A parametric distribution, parameters in the context's unit (ns or
/// bytes; shapes unitless). Constructed by [`super::GenSpec::parse`], which
/// validates the parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Always `value`.
    Const {
        /// The value.
        value: f64,
    },
    /// Uniform on `[min, max]`.
    Uniform {
        /// Lower end.
        min: f64,
        /// Upper end.
        max: f64,
    },
    /// Exponential with the given mean (rate `1/mean`).
    Exp {
        /// Mean.
        mean: f64,
    },
    /// Gaussian.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
    /// Log-normal given by the mean and SD of the variable itself.
    LogNormal {
        /// Mean of the variable.
        mean: f64,
        /// Standard deviation of the variable.
        sd: f64,
    },
    /// Pareto type I: minimum `scale`, tail index `shape`.
    Pareto {
        /// Minimum value.
        scale: f64,
        /// Alpha.
        shape: f64,
    },
    /// Weibull: CDF `1 - exp(-(x/scale)^shape)`.
    Weibull {
        /// Scale (lambda).
        scale: f64,
        /// Shape (k).
        shape: f64,
    },
    /// Gamma with mean `shape * scale`.
    Gamma {
        /// Shape (k).
        shape: f64,
        /// Scale (theta).
        scale: f64,
    },
    /// Cauchy (no mean, no variance).
    Cauchy {
        /// Median (location).
        median: f64,
        /// Half width at half maximum.
        scale: f64,
    },
}

/// `(mu, sigma)` of the normal underlying a log-normal with the given mean
/// and SD: `sigma^2 = ln(1 + sd^2/mean^2)`, `mu = ln(mean) - sigma^2/2`.
pub(crate) fn lognormal_params(mean: f64, sd: f64) -> (f64, f64) {
    let s2 = (sd / mean).powi(2).ln_1p();
    (mean.ln() - s2 / 2.0, s2.sqrt())
}

impl Dist {
    /// Theoretical mean; `None` for Cauchy and for Pareto with shape <= 1.
    pub fn mean(&self) -> Option<f64> {
        match *self {
            Dist::Const { value } => Some(value),
            Dist::Uniform { min, max } => Some((min + max) / 2.0),
            Dist::Exp { mean } | Dist::Normal { mean, .. } | Dist::LogNormal { mean, .. } => {
                Some(mean)
            }
            Dist::Pareto { scale, shape } => (shape > 1.0).then(|| shape * scale / (shape - 1.0)),
            Dist::Weibull { scale, shape } => {
                Some(scale * statrs::function::gamma::gamma(1.0 + 1.0 / shape))
            }
            Dist::Gamma { shape, scale } => Some(shape * scale),
            Dist::Cauchy { .. } => None,
        }
        .filter(|m| m.is_finite())
    }

    /// CDF of the (unclamped) distribution at `x`. NaN only if the
    /// parameters are invalid, which parsing prevents.
    pub fn cdf(&self, x: f64) -> f64 {
        use statrs::distribution as sd;
        fn cdf_of<D: ContinuousCDF<f64, f64>, E>(d: Result<D, E>, x: f64) -> f64 {
            d.map(|d| d.cdf(x)).unwrap_or(f64::NAN)
        }
        match *self {
            Dist::Const { value } => {
                if x < value {
                    0.0
                } else {
                    1.0
                }
            }
            Dist::Uniform { min, max } => cdf_of(sd::Uniform::new(min, max), x),
            Dist::Exp { mean } => cdf_of(sd::Exp::new(1.0 / mean), x),
            Dist::Normal { mean, sd } => cdf_of(sd::Normal::new(mean, sd), x),
            Dist::LogNormal { mean, sd } => {
                let (mu, sigma) = lognormal_params(mean, sd);
                cdf_of(sd::LogNormal::new(mu, sigma), x)
            }
            Dist::Pareto { scale, shape } => cdf_of(sd::Pareto::new(scale, shape), x),
            Dist::Weibull { scale, shape } => cdf_of(sd::Weibull::new(shape, scale), x),
            Dist::Gamma { shape, scale } => {
                // statrs' Gamma::cdf panics when x/scale overflows; guard it.
                let t = x / scale;
                if x.is_nan() {
                    f64::NAN
                } else if t <= 0.0 {
                    0.0
                } else if t.is_infinite() {
                    1.0
                } else {
                    statrs::function::gamma::checked_gamma_lr(shape, t).unwrap_or(f64::NAN)
                }
            }
            Dist::Cauchy { median, scale } => cdf_of(sd::Cauchy::new(median, scale), x),
        }
    }

    /// Builds the sampler; errors on parameters the distribution rejects.
    pub(crate) fn sampler(&self) -> Result<Sampler, DistError> {
        Ok(match *self {
            Dist::Const { value } => Sampler::Const(value),
            Dist::Uniform { min, max } => Sampler::Uniform(Uniform::new_inclusive(min, max)?),
            Dist::Exp { mean } => Sampler::Exp(Exp::new(1.0 / mean)?),
            Dist::Normal { mean, sd } => Sampler::Normal(Normal::new(mean, sd)?),
            Dist::LogNormal { mean, sd } => {
                let (mu, sigma) = lognormal_params(mean, sd);
                Sampler::LogNormal(LogNormal::new(mu, sigma)?)
            }
            Dist::Pareto { scale, shape } => Sampler::Pareto(Pareto::new(scale, shape)?),
            Dist::Weibull { scale, shape } => Sampler::Weibull(Weibull::new(scale, shape)?),
            Dist::Gamma { shape, scale } => Sampler::Gamma(Gamma::new(shape, scale)?),
            Dist::Cauchy { median, scale } => Sampler::Cauchy(Cauchy::new(median, scale)?),
        })
    }
}

/// Parameters a distribution rejects (the distribution's own message).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum DistError {
    /// From `uniform`.
    #[error(transparent)]
    Uniform(#[from] rand::distr::uniform::Error),
    /// From `exp`.
    #[error(transparent)]
    Exp(#[from] ExpError),
    /// From `normal` or `lognormal`.
    #[error(transparent)]
    Normal(#[from] NormalError),
    /// From `pareto`.
    #[error(transparent)]
    Pareto(#[from] ParetoError),
    /// From `weibull`.
    #[error(transparent)]
    Weibull(#[from] WeibullError),
    /// From `gamma`.
    #[error(transparent)]
    Gamma(#[from] GammaError),
    /// From `cauchy`.
    #[error(transparent)]
    Cauchy(#[from] CauchyError),
}

/// A ready-to-draw distribution (no allocation per draw).
#[derive(Debug, Clone)]
pub(crate) enum Sampler {
    Const(f64),
    Uniform(Uniform<f64>),
    Exp(Exp<f64>),
    Normal(Normal<f64>),
    LogNormal(LogNormal<f64>),
    Pareto(Pareto<f64>),
    Weibull(Weibull<f64>),
    Gamma(Gamma<f64>),
    Cauchy(Cauchy<f64>),
}

impl Sampler {
    #[inline]
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            Sampler::Const(v) => *v,
            Sampler::Uniform(d) => d.sample(rng),
            Sampler::Exp(d) => d.sample(rng),
            Sampler::Normal(d) => d.sample(rng),
            Sampler::LogNormal(d) => d.sample(rng),
            Sampler::Pareto(d) => d.sample(rng),
            Sampler::Weibull(d) => d.sample(rng),
            Sampler::Gamma(d) => d.sample(rng),
            Sampler::Cauchy(d) => d.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lognormal_conversion_recovers_mean_and_sd() {
        let (mu, sigma) = lognormal_params(1000.0, 500.0);
        let mean = (mu + sigma * sigma / 2.0).exp();
        let var = (sigma * sigma).exp_m1() * (2.0 * mu + sigma * sigma).exp();
        assert!((mean - 1000.0).abs() < 1e-9);
        assert!((var.sqrt() - 500.0).abs() < 1e-9);
    }

    #[test]
    fn means() {
        assert_eq!(
            Dist::Pareto {
                scale: 1.0,
                shape: 1.0
            }
            .mean(),
            None
        );
        assert_eq!(
            Dist::Pareto {
                scale: 1.0,
                shape: 2.0
            }
            .mean(),
            Some(2.0)
        );
        assert_eq!(
            Dist::Cauchy {
                median: 1.0,
                scale: 1.0
            }
            .mean(),
            None
        );
        let w = Dist::Weibull {
            scale: 2.0,
            shape: 1.0,
        }
        .mean()
        .unwrap();
        assert!((w - 2.0).abs() < 1e-9);
        assert_eq!(
            Dist::Gamma {
                shape: 2.0,
                scale: 3.0
            }
            .mean(),
            Some(6.0)
        );
    }

    #[test]
    fn cdfs() {
        assert_eq!(Dist::Const { value: 5.0 }.cdf(4.9), 0.0);
        assert_eq!(Dist::Const { value: 5.0 }.cdf(5.0), 1.0);
        let e = Dist::Exp { mean: 2.0 }.cdf(2.0);
        assert!((e - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert!((Dist::Normal { mean: 3.0, sd: 1.0 }.cdf(3.0) - 0.5).abs() < 1e-12);
        assert!(
            (Dist::Cauchy {
                median: 3.0,
                scale: 1.0
            }
            .cdf(4.0)
                - 0.75)
                .abs()
                < 1e-12
        );
        let w = Dist::Weibull {
            scale: 2.0,
            shape: 3.0,
        }
        .cdf(2.0);
        assert!((w - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        let p = Dist::Pareto {
            scale: 1.0,
            shape: 2.0,
        }
        .cdf(2.0);
        assert!((p - 0.75).abs() < 1e-12);
        let g = Dist::Gamma {
            shape: 1.0,
            scale: 2.0,
        }
        .cdf(2.0);
        assert!((g - (1.0 - (-1.0f64).exp())).abs() < 1e-9);
    }

    proptest::proptest! {
        #[test]
        fn cdf_never_panics(x in proptest::num::f64::ANY, a in 1e-30f64..1e30, b in 1e-30f64..1e30) {
            let ds = [
                Dist::Const { value: a },
                Dist::Uniform { min: a.min(b), max: a.max(b) * 2.0 },
                Dist::Exp { mean: a },
                Dist::Normal { mean: a, sd: b },
                Dist::LogNormal { mean: a, sd: b },
                Dist::Pareto { scale: a, shape: b },
                Dist::Weibull { scale: a, shape: b },
                Dist::Gamma { shape: a, scale: b },
                Dist::Cauchy { median: a, scale: b },
            ];
            for d in ds {
                let c = d.cdf(x);
                proptest::prop_assert!(c.is_nan() || (0.0..=1.0).contains(&c), "{d:?} {x} {c}");
                let _ = d.mean();
            }
        }
    }
}
