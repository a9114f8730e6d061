//! Value generators for packet intervals (nanoseconds) and sizes (bytes).
//!
//! A generator is described by a SPEC string (`--interval SPEC`,
//! `--size SPEC`), parsed into a [`GenSpec`] without any I/O, then built
//! into a seeded [`Generator`] once the caller has loaded the files the spec
//! names ([`GenSpec::file_paths`]).
//!
//! # Spec grammar
//!
//! ```text
//! SPEC  := VALUE                          constant (same as const:VALUE)
//!        | const:VALUE
//!        | uniform:MIN,MAX                 MIN < MAX, every value equally likely
//!        | exp:MEAN                        exponential; as intervals: Poisson arrivals
//!        | normal:MEAN,SD                  Gaussian
//!        | lognormal:MEAN,SD               MEAN and SD of the value itself (see below)
//!        | pareto:SCALE,SHAPE              SCALE = minimum value, SHAPE = alpha
//!        | weibull:SCALE,SHAPE
//!        | gamma:SHAPE,SCALE
//!        | cauchy:MEDIAN,SCALE
//!        | onoff:PART/PART/SPEC            bursts, intervals only (see below)
//!        | file:PATH[,once|,loop]          sequence of values, looped by default
//!        | cdf:PATH                        empirical CDF
//! PART  := SPEC without '/' | [SPEC]       brackets are needed when it contains '/'
//! ```
//!
//! - VALUE, MEAN, SD, MIN, MAX, SCALE, MEDIAN carry the unit of the context:
//!   for intervals ([`SpecUnit::Time`]) a duration such as `100us` or `2.5ms`
//!   (a bare number other than `0` is rejected), for sizes
//!   ([`SpecUnit::Bytes`]) a size such as `1500`, `1500B` or `1KiB`; see
//!   [`crate::units`]. SHAPE is a plain number. Fractions are allowed
//!   (`normal:1000,10.5`).
//! - Kind names are lower case; whitespace around arguments is ignored.
//! - All parameters must be positive (SD, SCALE, SHAPE, MEAN of exp and
//!   lognormal > 0); MIN < MAX. Use `const:` for a fixed value.
//! - `lognormal:MEAN,SD` is converted to the parameters of the underlying
//!   normal as `sigma^2 = ln(1 + SD^2/MEAN^2)`, `mu = ln(MEAN) - sigma^2/2`.
//! - `pareto` has mean `SHAPE*SCALE/(SHAPE-1)` only for SHAPE > 1;
//!   `cauchy` has no mean at all (see [`GenSpec::mean`]).
//!
//! Examples: `1ms`, `const:100us`, `uniform:50us,150us`, `exp:1ms`,
//! `normal:800,100` (sizes), `lognormal:1ms,500us`, `pareto:100us,1.5`,
//! `onoff:exp:10ms/exp:5ms/const:100us`, `file:/tmp/ivals.txt,once`,
//! `cdf:sizes.cdf`, `onoff:[file:/tmp/on.txt]/const:5ms/exp:1ms`.
//!
//! ## Bursts: `onoff:ON/OFF/INNER`
//!
//! ON and OFF are time specs giving the on- and off-period durations; INNER
//! gives the intervals while on. The INNER process runs on a clock that only
//! advances during on periods; off periods pause it. Concretely, each call
//! draws an inner interval `v`; if `v` is shorter than the time left in the
//! current on period, it is returned unchanged. Otherwise the on period ends
//! inside this interval: an off duration is drawn and added to `v`, a new on
//! period is drawn, and the remainder of `v` is taken from it (repeating if
//! the remainder spans further on periods, at most 1024 times per call).
//! So the first interval that crosses the end of an on period carries the
//! whole off period. With `onoff:10ms/5ms/1ms` the first packet is sent at
//! 0, packets follow at 1, 2, ..., 9 ms, then 10 ms of on time have passed
//! and the next packet comes at 15 ms (an interval of 6 ms), starting the
//! next 10-packet burst. With all three parts `exp:` this is the
//! interrupted Poisson process. The long-run mean interval is
//! `mean(INNER) * (mean(ON) + mean(OFF)) / mean(ON)`. `onoff` is rejected
//! for sizes, which have no time line; the ON and OFF parts themselves must
//! not be `onoff`.
//!
//! Separators: `:` after the kind, `,` between arguments, `/` between the
//! parts of `onoff`. The INNER part is everything after the second
//! top-level `/`, so it may contain `/` (a path, or a nested `onoff`) as is;
//! ON and OFF must be wrapped in `[...]` when they contain `/`.
//!
//! ## Files
//!
//! `file:PATH` holds one value per line in the context's units (`100us`,
//! `1500`); `#` starts a comment, blank lines are skipped. The sequence is
//! replayed in order and looped; with `,once` the generator is exhausted
//! after the last value ([`Generator::next`] returns `None`: the sender
//! stops). A path that itself ends in `,once` or `,loop` needs an explicit
//! `,loop` appended.
//!
//! `cdf:PATH` holds lines `VALUE PROBABILITY` (separated by whitespace),
//! the cumulative probability of values up to VALUE: values and
//! probabilities non-decreasing, probabilities in [0, 1], the last one
//! equal to 1. Values are drawn by inverse transform with linear interpolation
//! between points; a first probability above 0 is an atom at the first
//! value. Errors in files name the file and line.
//!
//! # Generators
//!
//! - Deterministic: the same spec, files, seed and bounds give the same
//!   sequence on every platform (ChaCha8 seeded from the `u64` seed).
//! - [`Bounds`]: every drawn value is clamped into `[min, max]` and each
//!   clamp is counted ([`Generator::clamped`]); this is how negative normal
//!   draws or huge Cauchy/Pareto draws are handled. Callers report the
//!   count. For `onoff`, the bounds apply to the INNER draws; off periods are
//!   added afterwards; on/off durations are clamped at 0 (also counted).
//! - [`Generator::next`] does not allocate.
//! - [`Generator::cdf`] is the CDF of the requested, unclamped distribution
//!   (empirical for files, a step for constants, `None` for `onoff`), for
//!   comparing achieved values against it (Kolmogorov–Smirnov).

mod dist;
mod empirical;
mod generator;
mod onoff;
mod spec;

use std::path::PathBuf;
use thiserror::Error;

pub use dist::Dist;
pub use dist::DistError;
pub use empirical::FileError;
pub use generator::{no_files, Generator, LoadError};
pub use spec::{GenSpec, SpecError, SpecKind, SpecUnit};

/// Errors from parsing a spec, loading its files or building a generator.
#[derive(Debug, Error)]
pub enum GenError {
    /// The spec string is malformed or has invalid parameters.
    #[error("invalid spec {spec:?}: {problem}")]
    Spec {
        /// The spec as given.
        spec: String,
        /// What is wrong and what is expected (printed, not a source).
        problem: Box<SpecError>,
    },
    /// The loader could not provide a file's content.
    #[error("cannot read {}: {reason}", path.display())]
    FileLoad {
        /// The file named in the spec.
        path: PathBuf,
        /// The loader's reason (printed, not a source).
        reason: LoadError,
    },
    /// A line of a file could not be used.
    #[error("{}:{line}: {problem}", path.display())]
    FileLine {
        /// The file named in the spec.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong and what is expected (printed, not a source).
        problem: FileError,
    },
    /// The file as a whole is unusable (e.g. no values).
    #[error("{}: {problem}", path.display())]
    FileContent {
        /// The file named in the spec.
        path: PathBuf,
        /// What is wrong and what is expected (printed, not a source).
        problem: FileError,
    },
    /// `min > max` or a NaN bound.
    #[error("invalid bounds [{min}, {max}]: need min <= max and no NaN")]
    Bounds {
        /// Requested lower bound.
        min: f64,
        /// Requested upper bound.
        max: f64,
    },
}

/// Every drawn value is clamped into `[min, max]` (inclusive); clamps are
/// counted by [`Generator::clamped`]. Infinite bounds are allowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Smallest value returned.
    pub min: f64,
    /// Largest value returned.
    pub max: f64,
}

impl Bounds {
    /// `[0, f64::MAX]`: only negative (and infinite) draws are clamped.
    pub const NON_NEGATIVE: Bounds = Bounds {
        min: 0.0,
        max: f64::MAX,
    };

    /// Bounds `[min, max]`; errors if `min > max` or either is NaN.
    pub fn new(min: f64, max: f64) -> Result<Bounds, GenError> {
        let b = Bounds { min, max };
        b.check()?;
        Ok(b)
    }

    pub(crate) fn check(&self) -> Result<(), GenError> {
        if self.min <= self.max {
            Ok(())
        } else {
            Err(GenError::Bounds {
                min: self.min,
                max: self.max,
            })
        }
    }

    /// Clamps `v`, counting a clamp in `clamped`. NaN becomes `min`.
    #[inline]
    pub(crate) fn clamp(&self, v: f64, clamped: &mut u64) -> f64 {
        if v < self.min || v.is_nan() {
            *clamped += 1;
            self.min
        } else if v > self.max {
            *clamped += 1;
            self.max
        } else {
            v
        }
    }
}
