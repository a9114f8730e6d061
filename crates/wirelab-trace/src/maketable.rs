//! iproute2's `maketable`: a netem `.dist` table from samples, computed as
//! `maketable` computes it, so the same samples give the same table.
//!
//! 1. Mean `μ` and sample σ of the samples (`arraystats`: plain sums in
//!    input order, `σ = √((Σx² − nμ²)/(n − 1))`).
//! 2. Each sample's standardised value `(x − μ)/σ` falls into one of
//!    400,000 bins of width 1/50,000 over [−4, 4] (rounded to the nearest
//!    bin, ties to even; values outside go to the end bins).
//! 3. The cumulative counts are inverted: for every bin, in order, entry
//!    `round(4096 × cdf)` of a 4096-entry table becomes the bin's value ×
//!    8192 (clamped to −32767 ..= 32767), later bins overwriting earlier.
//! 4. Entries no bin set are filled by linear interpolation in C integer
//!    arithmetic (towards 32767 after the last set entry).
//! 5. Written as `maketable` prints it: a comment line, then eight entries
//!    per line separated by one blank.
//!
//! Two passes over the samples (the mean first, then the bins) and fixed
//! memory: the bins and the table, whatever the number of samples.

use std::io::Write;

use thiserror::Error;

use super::dist::{DistTable, NETEM_DIST_SCALE};

/// Entries of the table `maketable` makes.
pub const TABLE_SIZE: usize = 4096;
const DOMAIN: i64 = 32767 / NETEM_DIST_SCALE + 1; // 4
const GRANULARITY: i64 = 50_000;
const BINS: usize = (DOMAIN * GRANULARITY * 2) as usize;
const MIN_SHORT: i32 = -32768;
const MAX_SHORT: i32 = 32767;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum MaketableError {
    #[error("{0} samples: a table needs at least 2")]
    TooFew(u64),
    #[error("the samples do not vary (σ = {0}): a table needs a spread")]
    NoSpread(f64),
    #[error("sample {0} is not a finite number")]
    NotFinite(u64),
}

/// Pass 1: the mean and σ, summed as `maketable` sums.
#[derive(Debug, Clone, Copy, Default)]
pub struct Moments {
    n: u64,
    sum: f64,
    sum_square: f64,
}

impl Moments {
    pub fn push(&mut self, x: f64) {
        self.sum_square += x * x;
        self.sum += x;
        self.n += 1;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// `(μ, σ)`.
    pub fn finish(&self) -> Result<(f64, f64), MaketableError> {
        if self.n < 2 {
            return Err(MaketableError::TooFew(self.n));
        }
        let n = self.n as f64;
        let mu = self.sum / n;
        let sigma = ((self.sum_square - n * mu * mu) / (self.n - 1) as f64).sqrt();
        if !(sigma > 0.0 && sigma.is_finite()) {
            return Err(MaketableError::NoSpread(sigma));
        }
        Ok((mu, sigma))
    }
}

/// Pass 2: the bins, then the table.
pub struct TableBuilder {
    mu: f64,
    sigma: f64,
    bins: Vec<u64>,
    n: u64,
}

impl TableBuilder {
    /// `mu`, `sigma` from [`Moments::finish`] over the same samples.
    pub fn new(mu: f64, sigma: f64) -> TableBuilder {
        TableBuilder {
            mu,
            sigma,
            bins: vec![0; BINS],
            n: 0,
        }
    }

    pub fn push(&mut self, x: f64) -> Result<(), MaketableError> {
        self.n += 1;
        let input = (x - self.mu) / self.sigma;
        let v = ((input + DOMAIN as f64) * GRANULARITY as f64).round_ties_even();
        if v.is_nan() {
            return Err(MaketableError::NotFinite(self.n));
        }
        let index = if v < 0.0 {
            0
        } else if v >= BINS as f64 {
            BINS - 1
        } else {
            v as usize
        };
        self.bins[index] += 1;
        Ok(())
    }

    pub fn finish(mut self) -> Result<DistTable, MaketableError> {
        if self.n < 2 {
            return Err(MaketableError::TooFew(self.n));
        }
        let mut accum = 0u64;
        for b in self.bins.iter_mut() {
            accum += *b;
            *b = accum;
        }
        let total = accum as f64;
        let mut inverse = [MIN_SHORT; TABLE_SIZE];
        for (i, &cum) in self.bins.iter().enumerate() {
            let findex = i as f64 / GRANULARITY as f64 - DOMAIN as f64;
            let fvalue = cum as f64 / total;
            let index =
                ((fvalue * TABLE_SIZE as f64).round_ties_even() as usize).min(TABLE_SIZE - 1);
            let value = ((findex * NETEM_DIST_SCALE as f64).round_ties_even() as i32)
                .clamp(MIN_SHORT + 1, MAX_SHORT);
            inverse[index] = value;
        }
        interpolate(&mut inverse);
        let entries = inverse.iter().map(|&v| v as i16).collect();
        Ok(DistTable::from_entries(entries).expect("4096 entries are within 1 ..= 16384"))
    }
}

/// `interpolatetable`: fills unset (−32768) entries linearly between their
/// set neighbours, in C's truncating integer arithmetic.
fn interpolate(t: &mut [i32; TABLE_SIZE]) {
    let limit = TABLE_SIZE as i32;
    let (mut last, mut lasti) = (MIN_SHORT, -1i32);
    for i in 0..limit {
        if t[i as usize] == MIN_SHORT {
            let j = (i..limit).find(|&j| t[j as usize] != MIN_SHORT);
            t[i as usize] = match j {
                Some(j) => last + (i - lasti) * (t[j as usize] - last) / (j - lasti),
                None => last + (i - lasti) * (MAX_SHORT - last) / (limit - lasti),
            };
        } else {
            last = t[i as usize];
            lasti = i;
        }
    }
}

/// Writes `table` as `maketable` prints it.
pub fn write_table<W: Write>(table: &DistTable, mut out: W) -> std::io::Result<()> {
    writeln!(
        out,
        "# This is the distribution table for the experimental distribution."
    )?;
    for (i, v) in table.entries().iter().enumerate() {
        let sep = if i % 8 == 7 { '\n' } else { ' ' };
        write!(out, "{v}{sep}")?;
    }
    out.flush()
}

/// Both passes over samples held in memory (tests, small inputs).
pub fn maketable(samples: &[f64]) -> Result<DistTable, MaketableError> {
    let mut m = Moments::default();
    samples.iter().for_each(|&x| m.push(x));
    let (mu, sigma) = m.finish()?;
    let mut b = TableBuilder::new(mu, sigma);
    for &x in samples {
        b.push(x)?;
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fgn::Fgn;

    #[test]
    fn normal_samples_give_a_normal_table() {
        // Independent standard normals (fGn at H = 0.5), mean 100, σ 10.
        let xs: Vec<f64> = Fgn::new(0.5, 1 << 16, 3)
            .unwrap()
            .take(1 << 16)
            .map(|z| 100.0 + 10.0 * z)
            .collect();
        let t = maketable(&xs).unwrap();
        assert_eq!(t.len(), TABLE_SIZE);
        let e = t.entries();
        assert!(e.windows(2).all(|w| w[0] <= w[1]), "non-decreasing");
        // The median is near 0, the quartiles near ±0.674 × 8192 = ±5524.
        assert!(e[2048].abs() < 150, "{}", e[2048]);
        assert!((e[1024] + 5524).abs() < 200, "{}", e[1024]);
        assert!((e[3072] - 5524).abs() < 200, "{}", e[3072]);
        let mean = e.iter().map(|&v| f64::from(v)).sum::<f64>() / 4096.0 / 8192.0;
        assert!(mean.abs() < 0.02, "{mean}");
        // The table read back is the table written.
        let mut out = Vec::new();
        write_table(&t, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text
            .starts_with("# This is the distribution table for the experimental distribution.\n"));
        assert_eq!(text.lines().count(), 1 + 4096 / 8);
        assert!(text.lines().nth(1).unwrap().split(' ').count() == 8);
        assert_eq!(DistTable::read(text.as_bytes()).unwrap(), t);
    }

    #[test]
    fn two_values_hand_computed() {
        // Samples 0 and 2: μ 1, σ √2; standardised ∓0.70711 fall in bins
        // round((4 ∓ 0.70711) × 50000) = 164645 and 235355, so the cdf is 0
        // before bin 164645, 0.5 up to bin 235354 and 1 from bin 235355.
        let t = maketable(&[0.0, 2.0]).unwrap();
        let e = t.entries();
        // cdf 0 → entry 0: the last such bin, (164644/50000 − 4) × 8192 =
        // −5792.7 → −5793; cdf 0.5 → entry 2048: bin 235354, 5792.4 →
        // 5792; cdf 1 → entry 4095: bin 399999, 32767.8 → clamped 32767.
        assert_eq!((e[0], e[2048], e[4095]), (-5793, 5792, 32767));
        // In between, C's integer interpolation: −5793 + i × 11585 / 2048,
        // then 5792 + (i − 2048) × 26975 / 2047.
        assert_eq!((e[1], e[1024], e[2047]), (-5788, -1, 5786));
        assert_eq!((e[2049], e[4094]), (5805, 32753));
    }

    #[test]
    fn refusals() {
        assert_eq!(maketable(&[]), Err(MaketableError::TooFew(0)));
        assert_eq!(maketable(&[1.0]), Err(MaketableError::TooFew(1)));
        assert!(matches!(
            maketable(&[5.0, 5.0, 5.0]),
            Err(MaketableError::NoSpread(_))
        ));
    }
}
