//! Synthetic packet traces: `count` records whose delays are
//! `mean + jitter × S(z)`, `z` a standard normal series and `S` the chosen
//! shape, and whose drops are independent with probability `loss`.
//!
//! The series `z` is independent draws, or with a Hurst parameter
//! fractional Gaussian noise ([`super::fgn`]): long-range dependent delays
//! with the same marginal distribution (each shape is a quantile function
//! applied to `Φ(z)`, which keeps the ranks, so the correlation structure
//! carries over). The shapes are those of the emulator's
//! `delay D J dist NAME` (docs/emulate-model.md), so a generated trace and the
//! stage draw from one distribution:
//!
//! | shape | `S(z)` | the delay |
//! |---|---|---|
//! | `const` | 0 | always `mean` |
//! | `uniform` | `2Φ(z) − 1` | uniform in `[mean − jitter, mean + jitter]` |
//! | `normal` | `z` | mean `mean`, σ `jitter` |
//! | `pareto` | `4/3 (X − 1.5)`, `X` Pareto(1, 3) at `Φ(z)` | mean `mean` |
//! | `paretonormal` | `z/4 + X − 1.5` | mean `mean` |
//! | `exp` | `E − 1`, `E` standard exponential at `Φ(z)` | mean `mean`, σ `jitter`, ≥ `mean − jitter` |
//! | a `.dist` table | `table[⌊Φ(z) × len⌋] / 8192` | netem's table scaled by `jitter` |
//!
//! Delays are rounded to the ns; a negative one becomes 0 and is counted
//! ([`TraceGen::clamped`]). Deterministic: the same parameters and seed
//! give the same records (ChaCha8 streams: one for `z`, one for drops, so
//! the loss rate does not change the delays).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use statrs::function::erf::erfc;

use super::dist::DistTable;
use super::fgn::{Fgn, FgnError, MIN_BLOCK};
use super::{Action, Record};

/// The shape of the delay distribution.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Const,
    Uniform,
    Normal,
    Pareto,
    ParetoNormal,
    Exp,
    Table(DistTable),
}

impl Shape {
    /// A built-in shape by name (`const`, `uniform`, `normal`, `pareto`,
    /// `paretonormal`, `exp`); a table comes from a `.dist` file.
    pub fn builtin(name: &str) -> Option<Shape> {
        Some(match name {
            "const" => Shape::Const,
            "uniform" => Shape::Uniform,
            "normal" => Shape::Normal,
            "pareto" => Shape::Pareto,
            "paretonormal" => Shape::ParetoNormal,
            "exp" => Shape::Exp,
            _ => return None,
        })
    }

    /// `S(z)`: the standardised value at the quantile `Φ(z)`.
    pub fn value(&self, z: f64) -> f64 {
        const SQRT2: f64 = std::f64::consts::SQRT_2;
        // Upper tail 1 − Φ(z) = erfc(z/√2)/2, without cancellation.
        let upper = || 0.5 * erfc(z / SQRT2);
        let pareto = || upper().powf(-1.0 / 3.0);
        match self {
            Shape::Const => 0.0,
            Shape::Uniform => 1.0 - 2.0 * upper(),
            Shape::Normal => z,
            Shape::Pareto => 4.0 / 3.0 * (pareto() - 1.5),
            Shape::ParetoNormal => z / 4.0 + pareto() - 1.5,
            Shape::Exp => -upper().ln() - 1.0,
            Shape::Table(t) => t.sample(0.5 * erfc(-z / SQRT2)),
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenConfig {
    pub shape: Shape,
    pub mean_ns: u64,
    pub jitter_ns: u64,
    pub count: u64,
    /// Probability of a drop record, in [0, 1].
    pub loss: f64,
    /// Hurst parameter in (0, 1) for fractional Gaussian noise; `None`:
    /// independent draws.
    pub hurst: Option<f64>,
    /// fGn block length (a power of two); the generator uses the smaller of
    /// it and `count` rounded up to a power of two.
    pub block: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenError {
    #[error(transparent)]
    Fgn(#[from] FgnError),
    #[error("loss {0} is outside [0, 1]")]
    Loss(f64),
}

enum Noise {
    Iid(Box<ChaCha8Rng>),
    Fgn(Box<Fgn>),
}

/// The generated records, streamed.
pub struct TraceGen {
    cfg: GenConfig,
    noise: Noise,
    drops: ChaCha8Rng,
    made: u64,
    clamped: u64,
}

impl TraceGen {
    pub fn new(cfg: GenConfig) -> Result<TraceGen, GenError> {
        if !(0.0..=1.0).contains(&cfg.loss) {
            return Err(GenError::Loss(cfg.loss));
        }
        let noise = match cfg.hurst {
            Some(h) => {
                let want = usize::try_from(cfg.count)
                    .ok()
                    .and_then(usize::checked_next_power_of_two)
                    .unwrap_or(usize::MAX);
                let block = if cfg.block.is_power_of_two() {
                    cfg.block.min(want).max(MIN_BLOCK)
                } else {
                    cfg.block
                };
                Noise::Fgn(Box::new(Fgn::new(h, block, cfg.seed)?))
            }
            None => {
                let mut r = ChaCha8Rng::seed_from_u64(cfg.seed);
                r.set_stream(0x0069_6964); // "iid"
                Noise::Iid(Box::new(r))
            }
        };
        let mut drops = ChaCha8Rng::seed_from_u64(cfg.seed);
        drops.set_stream(0x6c6f_7373); // "loss"
        Ok(TraceGen {
            cfg,
            noise,
            drops,
            made: 0,
            clamped: 0,
        })
    }

    /// Delays that came out negative and were written as 0.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The fGn block length in use, if any.
    pub fn block(&self) -> Option<usize> {
        match &self.noise {
            Noise::Fgn(f) => Some(f.block()),
            Noise::Iid(_) => None,
        }
    }
}

impl Iterator for TraceGen {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.made == self.cfg.count {
            return None;
        }
        self.made += 1;
        let z = match &mut self.noise {
            Noise::Iid(r) => StandardNormal.sample(&mut **r),
            Noise::Fgn(f) => f.next().unwrap_or(0.0),
        };
        // One draw per record, drop or not, so records keep their index.
        let dropped = self.cfg.loss > 0.0 && self.drops.random::<f64>() < self.cfg.loss;
        if dropped {
            return Some(Record::from(Action::Drop));
        }
        let v = self.cfg.mean_ns as f64 + self.cfg.jitter_ns as f64 * self.cfg.shape.value(z);
        let delay_ns = if v < 0.0 {
            self.clamped += 1;
            0
        } else {
            // `as` saturates at u64::MAX.
            v.round() as u64
        };
        Some(Record::from(Action::Delay { delay_ns }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::TraceStats;

    fn cfg(shape: Shape) -> GenConfig {
        GenConfig {
            shape,
            mean_ns: 10_000_000,
            jitter_ns: 2_000_000,
            count: 100_000,
            loss: 0.0,
            hurst: None,
            block: 1 << 20,
            seed: 1,
        }
    }

    fn stats(c: GenConfig) -> (crate::stats::TraceStatsReport, u64) {
        let mut g = TraceGen::new(c).unwrap();
        let mut s = TraceStats::new();
        for r in g.by_ref() {
            s.push(&r);
        }
        (s.report(), g.clamped())
    }

    #[test]
    fn shapes_have_their_mean_spread_and_bounds() {
        // (shape, σ / jitter, lowest value / jitter)
        let cases = [
            (Shape::Normal, 1.0, f64::NEG_INFINITY),
            (Shape::Uniform, 1.0 / 3f64.sqrt(), -1.0),
            (Shape::Exp, 1.0, -1.0),
            (Shape::Pareto, 4.0 / 3.0 * 0.75f64.sqrt(), -2.0 / 3.0),
        ];
        for (shape, sd, low) in cases {
            let name = format!("{shape:?}");
            let (r, _) = stats(cfg(shape));
            let mean = r.mean_ns.unwrap();
            assert!((mean - 1e7).abs() < 0.03 * 2e6, "{name}: mean {mean}");
            let got = r.stddev_ns.unwrap() / 2e6;
            // Pareto(3) has no finite fourth moment: a looser check.
            assert!((got - sd).abs() < 0.08 * sd, "{name}: σ {got} want {sd}");
            assert!(r.min_ns.unwrap() as f64 >= 1e7 + low * 2e6 - 1.0, "{name}");
            assert!(r.lag1.unwrap().abs() < 0.02, "{name}: {:?}", r.lag1);
        }
        let (r, _) = stats(cfg(Shape::Const));
        assert_eq!((r.min_ns, r.max_ns), (Some(10_000_000), Some(10_000_000)));
    }

    #[test]
    fn table_shape_and_clamping() {
        let t = DistTable::from_entries(vec![-16384, 0, 8192, 16384]).unwrap();
        let mut c = cfg(Shape::Table(t));
        c.mean_ns = 1_000;
        c.jitter_ns = 1_000;
        c.count = 4000;
        let (r, clamped) = stats(c);
        // Entries −2, 0, 1, 2 (× jitter): −1000 clamps to 0.
        assert_eq!((r.min_ns, r.max_ns), (Some(0), Some(3000)));
        assert!((900..1100).contains(&clamped), "{clamped}");
    }

    #[test]
    fn correlated_noise_has_the_fgn_lag1() {
        // ρ(1) = 2^(2H−1) − 1 for normal marginals. (The sample value is
        // biased low by about n^(2H−2), the variance of the sample mean:
        // 0.01 here at H = 0.8.)
        for (h, seed) in [(0.8, 1), (0.7, 2)] {
            let mut c = cfg(Shape::Normal);
            c.hurst = Some(h);
            c.count = 1 << 16;
            c.seed = seed;
            let (r, _) = stats(c);
            let want = 2f64.powf(2.0 * h - 1.0) - 1.0;
            let got = r.lag1.unwrap();
            assert!((got - want).abs() < 0.03, "H {h}: {got} want {want}");
            let e = r.hurst.unwrap();
            assert!((e.hurst - h).abs() < 0.05, "{e:?}");
        }
    }

    #[test]
    fn loss_and_determinism() {
        let mut c = cfg(Shape::Normal);
        c.loss = 0.1;
        c.count = 20_000;
        let (r, _) = stats(c.clone());
        assert!((1800..2200).contains(&r.drops), "{}", r.drops);
        assert_eq!(r.records, 20_000);
        let a: Vec<Record> = TraceGen::new(c.clone()).unwrap().collect();
        let b: Vec<Record> = TraceGen::new(c.clone()).unwrap().collect();
        assert_eq!(a, b);
        // The loss draws do not move the delays.
        c.loss = 0.0;
        let no_loss: Vec<Record> = TraceGen::new(c).unwrap().collect();
        for (x, y) in a.iter().zip(&no_loss) {
            if x.action != Action::Drop {
                assert_eq!(x, y);
            }
        }
        assert!(matches!(
            TraceGen::new(GenConfig {
                loss: 1.5,
                ..cfg(Shape::Normal)
            }),
            Err(GenError::Loss(_))
        ));
    }

    #[test]
    fn block_follows_the_count() {
        let mut c = cfg(Shape::Normal);
        c.hurst = Some(0.7);
        c.count = 1000;
        assert_eq!(TraceGen::new(c.clone()).unwrap().block(), Some(1024));
        c.count = 3;
        assert_eq!(TraceGen::new(c.clone()).unwrap().block(), Some(MIN_BLOCK));
        c.count = 1 << 30;
        assert_eq!(TraceGen::new(c).unwrap().block(), Some(1 << 20));
    }
}
