//! Fractional Gaussian noise (fGn): a stationary Gaussian series with unit
//! variance whose autocovariance at lag `k` is
//! `γ(k) = (|k+1|^2H − 2|k|^2H + |k−1|^2H) / 2`. For a Hurst parameter
//! `H > 0.5` the correlations decay as `k^(2H−2)` and never sum to a finite
//! value: long-range dependence, the burstiness of measured delays that
//! independent draws lack (the NIST Net trace-emulation thesis's motivation
//! for trace-driven emulation).
//!
//! Method: Davies–Harte (circulant embedding). The covariance matrix of
//! `n` samples (`n` a power of two) is embedded in a circulant matrix of
//! order `2n`, whose eigenvalues (one FFT of its first row) are
//! non-negative for fGn; one block of `n` samples is then one FFT of `2n`
//! weighted Gaussian draws. The samples of a block have exactly the fGn
//! covariance, not an approximation. Memory is fixed by the block length
//! (about 56 bytes per sample of a block), never by the count asked: a
//! longer series is a run of independent blocks, so correlations reach
//! across at most one block (choose the block at least as long as the
//! longest time scale of interest). Deterministic: the same Hurst
//! parameter, block length and seed give the same series on every
//! platform (ChaCha8 draws, IEEE arithmetic).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use thiserror::Error;

/// The shortest and longest block (powers of two).
pub const MIN_BLOCK: usize = 1 << 4;
pub const MAX_BLOCK: usize = 1 << 24;
/// The default block: 2^20 samples (about 56 MiB while generating).
pub const DEFAULT_BLOCK: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum FgnError {
    #[error("Hurst parameter {0} is outside (0, 1)")]
    Hurst(f64),
    #[error("block length {0} is not a power of two in 2^4 ..= 2^24")]
    Block(usize),
    /// Not expected for fGn (its embedding is non-negative definite); a
    /// guard against rounding at extreme parameters.
    #[error("the circulant embedding has a negative eigenvalue ({0:e}) at H = {1}")]
    NegativeEigenvalue(f64, f64),
}

/// The fGn autocovariance `γ(k)` for `H` in (0, 1).
pub fn autocovariance(hurst: f64, k: u64) -> f64 {
    let a = 2.0 * hurst;
    if k == 0 {
        return 1.0;
    }
    let kf = k as f64;
    if k < 16 {
        return 0.5 * ((kf + 1.0).powf(a) - 2.0 * kf.powf(a) + (kf - 1.0).powf(a));
    }
    // k^a ((1+x)^a + (1−x)^a − 2) / 2 with x = 1/k: the binomial series'
    // even terms, free of the cancellation of the direct form at large k.
    let x2 = 1.0 / (kf * kf);
    let mut coef = a * (a - 1.0) / 2.0; // C(a, 2)
    let mut xp = x2;
    let mut sum = 0.0;
    let mut j = 2.0;
    for _ in 0..40 {
        let term = coef * xp;
        sum += term;
        if term.abs() <= sum.abs() * 1e-17 {
            break;
        }
        coef *= (a - j) * (a - j - 1.0) / ((j + 1.0) * (j + 2.0));
        xp *= x2;
        j += 2.0;
    }
    kf.powf(a) * sum
}

/// A complex number, for the FFT.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct C {
    pub re: f64,
    pub im: f64,
}

impl C {
    fn mul(self, o: C) -> C {
        C {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
}

/// An in-place radix-2 FFT of one length (`X_j = Σ x_k e^(−2πi jk/N)`).
pub(crate) struct Fft {
    n: usize,
    /// `e^(−2πi k/N)` for `k < N/2`, each from its own sin/cos (no drift).
    twiddles: Vec<C>,
}

impl Fft {
    /// `n`: a power of two ≥ 2.
    pub(crate) fn new(n: usize) -> Fft {
        debug_assert!(n.is_power_of_two() && n >= 2);
        let twiddles = (0..n / 2)
            .map(|k| {
                let t = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
                C {
                    re: t.cos(),
                    im: t.sin(),
                }
            })
            .collect();
        Fft { n, twiddles }
    }

    pub(crate) fn run(&self, x: &mut [C]) {
        let n = self.n;
        debug_assert_eq!(x.len(), n);
        let bits = n.trailing_zeros();
        for i in 0..n {
            let j = i.reverse_bits() >> (usize::BITS - bits);
            if i < j {
                x.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= n {
            let half = len / 2;
            let step = n / len;
            for start in (0..n).step_by(len) {
                for k in 0..half {
                    let w = self.twiddles[k * step];
                    let a = x[start + k];
                    let b = x[start + k + half].mul(w);
                    x[start + k] = C {
                        re: a.re + b.re,
                        im: a.im + b.im,
                    };
                    x[start + k + half] = C {
                        re: a.re - b.re,
                        im: a.im - b.im,
                    };
                }
            }
            len *= 2;
        }
    }
}

/// An endless fGn series with unit variance, made block by block.
pub struct Fgn {
    hurst: f64,
    n: usize,
    /// `sqrt(λ_k / 2n)` for `k = 0 ..= n`.
    scale: Vec<f64>,
    fft: Fft,
    work: Vec<C>,
    /// The next sample of the current block; `n`: make a block.
    pos: usize,
    rng: ChaCha8Rng,
}

impl Fgn {
    /// A series with Hurst parameter `hurst` in (0, 1), made in blocks of
    /// `block` samples (a power of two, [`MIN_BLOCK`] ..= [`MAX_BLOCK`]),
    /// drawn from `seed`.
    pub fn new(hurst: f64, block: usize, seed: u64) -> Result<Fgn, FgnError> {
        if !(hurst > 0.0 && hurst < 1.0) {
            return Err(FgnError::Hurst(hurst));
        }
        if !block.is_power_of_two() || !(MIN_BLOCK..=MAX_BLOCK).contains(&block) {
            return Err(FgnError::Block(block));
        }
        let n = block;
        let m = 2 * n;
        let fft = Fft::new(m);
        // First row of the circulant: γ(0..=n), then γ(n−1) down to γ(1).
        let mut work: Vec<C> = (0..m)
            .map(|j| {
                let lag = if j <= n { j } else { m - j };
                C {
                    re: autocovariance(hurst, lag as u64),
                    im: 0.0,
                }
            })
            .collect();
        fft.run(&mut work);
        let max = work.iter().map(|c| c.re).fold(0.0, f64::max);
        let mut scale = Vec::with_capacity(n + 1);
        for c in &work[..=n] {
            let l = c.re;
            if l < -1e-9 * max {
                return Err(FgnError::NegativeEigenvalue(l, hurst));
            }
            scale.push((l.max(0.0) / m as f64).sqrt());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0x0066_676e); // "fgn"
        Ok(Fgn {
            hurst,
            n,
            scale,
            fft,
            work,
            pos: n,
            rng,
        })
    }

    pub fn hurst(&self) -> f64 {
        self.hurst
    }

    pub fn block(&self) -> usize {
        self.n
    }

    fn make_block(&mut self) {
        let (n, m) = (self.n, 2 * self.n);
        let mut z = || -> f64 { StandardNormal.sample(&mut self.rng) };
        // W_0 and W_n real with variance λ/2n; W_k (0 < k < n) complex
        // with variance λ/2n split over its two parts; W_(2n−k) = conj(W_k).
        self.work[0] = C {
            re: self.scale[0] * z(),
            im: 0.0,
        };
        self.work[n] = C {
            re: self.scale[n] * z(),
            im: 0.0,
        };
        for k in 1..n {
            let s = self.scale[k] * std::f64::consts::FRAC_1_SQRT_2;
            let w = C {
                re: s * z(),
                im: s * z(),
            };
            self.work[k] = w;
            self.work[m - k] = C {
                re: w.re,
                im: -w.im,
            };
        }
        self.fft.run(&mut self.work);
        self.pos = 0;
    }
}

impl Iterator for Fgn {
    type Item = f64;

    /// The next sample; never `None`.
    fn next(&mut self) -> Option<f64> {
        if self.pos == self.n {
            self.make_block();
        }
        let v = self.work[self.pos].re;
        self.pos += 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_matches_the_definition() {
        let n = 16;
        let x: Vec<C> = (0..n)
            .map(|i| C {
                re: (i as f64 * 0.7).sin() + 0.1 * i as f64,
                im: (i as f64 * 1.3).cos(),
            })
            .collect();
        let mut y = x.clone();
        Fft::new(n).run(&mut y);
        for (j, yj) in y.iter().enumerate() {
            let mut s = C::default();
            for (k, xk) in x.iter().enumerate() {
                let t = -2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                s.re += xk.re * t.cos() - xk.im * t.sin();
                s.im += xk.re * t.sin() + xk.im * t.cos();
            }
            assert!((s.re - yj.re).abs() < 1e-12 && (s.im - yj.im).abs() < 1e-12);
        }
    }

    #[test]
    fn autocovariance_series_agrees_with_the_direct_form() {
        for h in [0.2, 0.5, 0.8, 0.95] {
            for k in [16u64, 17, 100, 1000] {
                let kf = k as f64;
                let a = 2.0 * h;
                let direct = 0.5 * ((kf + 1.0).powf(a) - 2.0 * kf.powf(a) + (kf - 1.0).powf(a));
                let s = autocovariance(h, k);
                assert!(
                    (s - direct).abs() <= 1e-9 * direct.abs().max(1e-12),
                    "{h} {k}"
                );
            }
            assert_eq!(autocovariance(h, 0), 1.0);
        }
        // H = 0.5: white noise.
        assert!(autocovariance(0.5, 1).abs() < 1e-15);
        assert!(autocovariance(0.5, 1000).abs() < 1e-15);
        // The asymptote H(2H−1) k^(2H−2).
        let k = 1_000_000f64;
        let want = 0.8 * 0.6 * k.powf(-0.4);
        assert!((autocovariance(0.8, 1_000_000) / want - 1.0).abs() < 1e-6);
    }

    fn sample_acf(x: &[f64], lag: usize) -> f64 {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let v: f64 = x.iter().map(|a| (a - m) * (a - m)).sum();
        let c: f64 = x.windows(lag + 1).map(|w| (w[0] - m) * (w[lag] - m)).sum();
        c / v
    }

    #[test]
    fn lag1_and_variance_are_those_of_fgn() {
        // H = 0.8: ρ(1) = 2^(2H−1) − 1 = 0.5157.
        let want = 2f64.powf(0.6) - 1.0;
        for seed in [1, 2] {
            let x: Vec<f64> = Fgn::new(0.8, 1 << 16, seed)
                .unwrap()
                .take(1 << 16)
                .collect();
            let r1 = sample_acf(&x, 1);
            assert!((r1 - want).abs() < 0.03, "seed {seed}: {r1}");
            let var = x.iter().map(|a| a * a).sum::<f64>() / x.len() as f64;
            // The sample variance of a long-memory series is biased low.
            assert!((0.8..1.1).contains(&var), "{var}");
        }
        // H = 0.3: negative lag-1 correlation 2^(−0.4) − 1 = −0.242.
        let x: Vec<f64> = Fgn::new(0.3, 1 << 14, 5).unwrap().take(1 << 16).collect();
        let r1 = sample_acf(&x, 1);
        assert!((r1 - (2f64.powf(-0.4) - 1.0)).abs() < 0.02, "{r1}");
    }

    #[test]
    fn deterministic_and_checked() {
        let a: Vec<f64> = Fgn::new(0.7, 64, 9).unwrap().take(200).collect();
        let b: Vec<f64> = Fgn::new(0.7, 64, 9).unwrap().take(200).collect();
        assert_eq!(a, b);
        let c: Vec<f64> = Fgn::new(0.7, 64, 10).unwrap().take(200).collect();
        assert_ne!(a, c);
        assert!(matches!(Fgn::new(1.0, 64, 1), Err(FgnError::Hurst(_))));
        assert!(matches!(Fgn::new(0.0, 64, 1), Err(FgnError::Hurst(_))));
        assert!(matches!(Fgn::new(f64::NAN, 64, 1), Err(FgnError::Hurst(_))));
        assert!(matches!(Fgn::new(0.7, 100, 1), Err(FgnError::Block(100))));
        assert!(matches!(Fgn::new(0.7, 8, 1), Err(FgnError::Block(8))));
    }
}
