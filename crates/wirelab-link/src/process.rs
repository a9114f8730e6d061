//! The random processes of a link: correlated events, the loss chains and
//! the delay variation. Each advances by one step per packet copy it is
//! asked about, with draws from that packet's stream.
//!
//! Correlation, done right where netem's is known to be wrong: netem mixes
//! each uniform draw with the previous one (`(1-C)*U + C*last`), which
//! shrinks the variance, moves the mean of events away from `P` and is not
//! a lag-1 correlation of `C`. Here:
//! - events (`loss random`, `duplicate`, `corrupt`, `reorder`) are a
//!   two-state Markov chain with `P(hit | hit) = P + C(1-P)` and
//!   `P(hit | miss) = P(1-C)`: the event rate is exactly `P` and the lag-1
//!   correlation of the event indicator exactly `C`;
//! - delays are a Gaussian copula: an AR(1) standard normal
//!   `z' = rho*z + sqrt(1-rho^2)*e` mapped through the distribution's
//!   quantile function, so the marginal distribution is exact whatever `C`.
//!   `rho = C` for `normal` (Pearson correlation `C`); for the others
//!   `rho = 2 sin(pi*C/6)`, which makes the rank (Spearman) correlation
//!   exactly `C` — for `uniform` that is also the Pearson correlation; the
//!   Pareto shapes have no finite fourth moment, so a sample Pearson
//!   correlation would not settle anyway.

use rand_distr::{Distribution, StandardNormal};
use statrs::function::erf::{erf, erfc};

use super::rng::Stream;
use super::spec::{Chance, DelayDist, DelaySpec, LossModel};

/// Events with probability `p` and lag-1 correlation `c`.
#[derive(Debug, Clone)]
pub(crate) struct Correlated {
    p: f64,
    after_hit: f64,
    after_miss: f64,
    last: Option<bool>,
}

impl Correlated {
    pub(crate) fn new(c: Chance) -> Correlated {
        Correlated {
            p: c.p,
            after_hit: c.p + c.corr * (1.0 - c.p),
            after_miss: c.p * (1.0 - c.corr),
            last: None,
        }
    }

    /// The next outcome from a uniform draw `u` in `[0, 1)`.
    pub(crate) fn next(&mut self, u: f64) -> bool {
        let q = match self.last {
            None => self.p,
            Some(true) => self.after_hit,
            Some(false) => self.after_miss,
        };
        let hit = u < q;
        self.last = Some(hit);
        hit
    }
}

/// The loss stage's state.
#[derive(Debug, Clone)]
pub(crate) enum LossProcess {
    Random(Correlated),
    /// netem's 4-state chain; `state` is 1..=4, a packet's fate is the
    /// state it moves into (3 and 4 lose), as in the kernel.
    State {
        p13: f64,
        p31: f64,
        p32: f64,
        p23: f64,
        p14: f64,
        state: u8,
    },
    /// Gilbert-Elliott: a packet is judged in the state it finds, then
    /// the state moves (the kernel's order). Starts good.
    Ge {
        p: f64,
        r: f64,
        loss_bad: f64,
        loss_good: f64,
        bad: bool,
    },
}

impl LossProcess {
    pub(crate) fn new(m: &LossModel) -> LossProcess {
        match *m {
            LossModel::Random(c) => LossProcess::Random(Correlated::new(c)),
            LossModel::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => LossProcess::State {
                p13,
                p31,
                p32,
                p23,
                p14,
                state: 1,
            },
            LossModel::GilbertElliott {
                p,
                r,
                loss_bad,
                loss_good,
            } => LossProcess::Ge {
                p,
                r,
                loss_bad,
                loss_good,
                bad: false,
            },
        }
    }

    /// Whether the next copy is lost.
    pub(crate) fn next(&mut self, rng: &mut Stream) -> bool {
        match self {
            LossProcess::Random(c) => c.next(rng.unit()),
            LossProcess::State {
                p13,
                p31,
                p32,
                p23,
                p14,
                state,
            } => {
                let u = rng.unit();
                *state = match *state {
                    1 if u < *p14 => 4,
                    1 if u < *p14 + *p13 => 3,
                    1 => 1,
                    2 if u < *p23 => 3,
                    2 => 2,
                    3 if u < *p32 => 2,
                    3 if u < *p32 + *p31 => 1,
                    3 => 3,
                    _ => 1,
                };
                *state >= 3
            }
            LossProcess::Ge {
                p,
                r,
                loss_bad,
                loss_good,
                bad,
            } => {
                let lost = rng.unit() < if *bad { *loss_bad } else { *loss_good };
                let u = rng.unit();
                *bad = if *bad { u >= *r } else { u < *p };
                lost
            }
        }
    }
}

/// Delay samples `D + J * x(z)`, `z` an AR(1) standard normal.
#[derive(Debug, Clone)]
pub(crate) struct DelaySampler {
    base: f64,
    jitter: f64,
    dist: DelayDist,
    rho: f64,
    innovation: f64,
    z: Option<f64>,
}

impl DelaySampler {
    pub(crate) fn new(d: &DelaySpec) -> DelaySampler {
        let c = d.corr.clamp(0.0, 1.0);
        let rho = match d.dist {
            DelayDist::Normal => c,
            _ => 2.0 * (std::f64::consts::PI * c / 6.0).sin(),
        }
        .min(1.0);
        DelaySampler {
            base: d.delay_ns as f64,
            jitter: d.jitter_ns as f64,
            dist: d.dist,
            rho,
            innovation: (1.0 - rho * rho).max(0.0).sqrt(),
            z: None,
        }
    }

    /// The next delay in ns, before clamping at 0.
    pub(crate) fn next(&mut self, rng: &mut Stream) -> f64 {
        self.next_with(rng, self.base, self.jitter)
    }

    /// The next delay with this base and jitter (a time-indexed trace's
    /// row) and the stage's shape and correlation.
    pub(crate) fn next_with(&mut self, rng: &mut Stream, base: f64, jitter: f64) -> f64 {
        if jitter == 0.0 {
            return base;
        }
        let e: f64 = StandardNormal.sample(rng);
        let z = match self.z {
            None => e,
            Some(prev) => self.rho * prev + self.innovation * e,
        };
        self.z = Some(z);
        base + jitter * standard_value(self.dist, z)
    }
}

/// The distribution's standardized value at the quantile `Phi(z)`.
pub(crate) fn standard_value(dist: DelayDist, z: f64) -> f64 {
    const SQRT2: f64 = std::f64::consts::SQRT_2;
    // Pareto(1, 3) quantile at Phi(z): (1 - Phi(z))^(-1/3), with the upper
    // tail 1 - Phi(z) = erfc(z/sqrt2)/2 computed without cancellation.
    let pareto = || (0.5 * erfc(z / SQRT2)).powf(-1.0 / 3.0);
    match dist {
        DelayDist::Uniform => erf(z / SQRT2),
        DelayDist::Normal => z,
        DelayDist::Pareto => 4.0 / 3.0 * (pareto() - 1.5),
        DelayDist::ParetoNormal => z / 4.0 + pareto() - 1.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Domain;

    #[test]
    fn correlated_events_have_rate_p_and_lag1_correlation_c() {
        let mut c = Correlated::new(Chance { p: 0.2, corr: 0.5 });
        let mut rng = Stream::new(9, Domain::Packet, 0);
        let n = 200_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| f64::from(u8::from(c.next(rng.unit()))))
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let cov = xs
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / (n - 1) as f64;
        // sigma of the mean with correlation 0.5: sqrt(p(1-p)/n * 3) ~ 0.0016.
        assert!((mean - 0.2).abs() < 0.007, "{mean}");
        assert!((cov / var - 0.5).abs() < 0.02, "{}", cov / var);
    }

    #[test]
    fn standard_values_are_the_iproute2_shapes() {
        // Uniform spans (-1, 1); Pareto starts at 4/3 * (1 - 1.5) = -2/3
        // and has its median at 4/3 * (2^(1/3) - 1.5).
        assert!((standard_value(DelayDist::Uniform, 0.0)).abs() < 1e-12);
        assert!(standard_value(DelayDist::Uniform, 8.0) < 1.0);
        let med = 4.0 / 3.0 * (2f64.powf(1.0 / 3.0) - 1.5);
        assert!((standard_value(DelayDist::Pareto, 0.0) - med).abs() < 1e-12);
        assert!((standard_value(DelayDist::Pareto, -40.0) + 2.0 / 3.0).abs() < 1e-9);
        assert!(standard_value(DelayDist::Pareto, 8.0).is_finite());
        assert!(
            (standard_value(DelayDist::ParetoNormal, 0.0) - (2f64.powf(1.0 / 3.0) - 1.5)).abs()
                < 1e-12
        );
    }
}
