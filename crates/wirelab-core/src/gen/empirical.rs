//! Value sequences (`file:`) and empirical CDFs (`cdf:`) loaded from text.

use std::path::Path;

use rand::Rng;

use super::spec::SpecUnit;
use super::GenError;
use crate::units::{parse_bytes_f64, parse_duration_ns_f64, parse_number, UnitError};

/// Lines of `text` with comments stripped and blanks skipped, numbered from 1.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let l = l.split('#').next().unwrap_or("").trim();
        (!l.is_empty()).then_some((i + 1, l))
    })
}

/// What is wrong with a `file:` or `cdf:` file, or one of its lines.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileError {
    /// A value does not parse.
    #[error(transparent)]
    Value(#[from] UnitError),
    /// A value is not finite.
    #[error("{text:?} is too large")]
    TooLarge {
        /// The value as written.
        text: String,
    },
    /// A CDF line is not two fields.
    #[error("{CDF_USAGE}, e.g. 100us 0.5")]
    CdfLine,
    /// A CDF probability is not a number in `[0, 1]`.
    #[error("bad probability {text:?}; {CDF_USAGE}")]
    Probability {
        /// The probability as written.
        text: String,
    },
    /// A CDF value below the one before.
    #[error("values must not decrease")]
    ValuesDecrease,
    /// A CDF probability below the one before.
    #[error("probabilities must not decrease")]
    ProbabilitiesDecrease,
    /// A sequence file without values.
    #[error("no values (expected one value per line, e.g. 100us; # starts a comment)")]
    NoValues,
    /// A CDF file without points.
    #[error("no points ({CDF_USAGE})")]
    NoPoints,
    /// A CDF that does not end at probability 1.
    #[error("the last probability is {last}, it must be 1")]
    LastProbability {
        /// The last probability in the file.
        last: f64,
    },
}

fn value(s: &str, unit: SpecUnit) -> Result<f64, FileError> {
    let v = match unit {
        SpecUnit::Time => parse_duration_ns_f64(s),
        SpecUnit::Bytes => parse_bytes_f64(s),
    }?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FileError::TooLarge {
            text: s.to_string(),
        })
    }
}

fn line_err(path: &Path, line: usize, problem: FileError) -> GenError {
    GenError::FileLine {
        path: path.to_path_buf(),
        line,
        problem,
    }
}

/// Parses a `file:` sequence: one value per line.
pub(crate) fn parse_sequence(
    path: &Path,
    text: &str,
    unit: SpecUnit,
) -> Result<Vec<f64>, GenError> {
    let mut out = Vec::new();
    for (n, l) in lines(text) {
        out.push(value(l, unit).map_err(|e| line_err(path, n, e))?);
    }
    if out.is_empty() {
        return Err(GenError::FileContent {
            path: path.to_path_buf(),
            problem: FileError::NoValues,
        });
    }
    Ok(out)
}

/// A piecewise-linear CDF through points `(xs[i], ps[i])`; see the module
/// doc of [`super`] for the file format and semantics.
#[derive(Debug, Clone)]
pub(crate) struct EmpiricalCdf {
    xs: Vec<f64>,
    ps: Vec<f64>,
}

const CDF_USAGE: &str = "expected \"VALUE PROBABILITY\" with the cumulative probability in [0, 1]";

impl EmpiricalCdf {
    pub(crate) fn parse(path: &Path, text: &str, unit: SpecUnit) -> Result<EmpiricalCdf, GenError> {
        let (mut xs, mut ps) = (Vec::new(), Vec::new());
        for (n, l) in lines(text) {
            let mut it = l.split_whitespace();
            let (Some(x), Some(p), None) = (it.next(), it.next(), it.next()) else {
                return Err(line_err(path, n, FileError::CdfLine));
            };
            let x = value(x, unit).map_err(|e| line_err(path, n, e))?;
            let p = parse_number(p)
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| {
                    line_err(
                        path,
                        n,
                        FileError::Probability {
                            text: p.to_string(),
                        },
                    )
                })?;
            if let (Some(&px), Some(&pp)) = (xs.last(), ps.last()) {
                if x < px {
                    return Err(line_err(path, n, FileError::ValuesDecrease));
                }
                if p < pp {
                    return Err(line_err(path, n, FileError::ProbabilitiesDecrease));
                }
            }
            xs.push(x);
            ps.push(p);
        }
        match ps.last() {
            None => Err(GenError::FileContent {
                path: path.to_path_buf(),
                problem: FileError::NoPoints,
            }),
            Some(&last) if (last - 1.0).abs() > 1e-9 => Err(GenError::FileContent {
                path: path.to_path_buf(),
                problem: FileError::LastProbability { last },
            }),
            Some(_) => {
                if let Some(l) = ps.last_mut() {
                    *l = 1.0;
                }
                Ok(EmpiricalCdf { xs, ps })
            }
        }
    }

    /// Inverse transform of a uniform draw, interpolating linearly.
    #[inline]
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let u: f64 = rng.random();
        self.quantile(u)
    }

    pub(crate) fn quantile(&self, u: f64) -> f64 {
        // First index with ps[i] >= u; u <= ps[0] gives the atom at xs[0].
        let i = self.ps.partition_point(|&p| p < u);
        if i == 0 {
            return self.xs[0];
        }
        if i >= self.xs.len() {
            return self.xs[self.xs.len() - 1];
        }
        let (x0, x1, p0, p1) = (self.xs[i - 1], self.xs[i], self.ps[i - 1], self.ps[i]);
        x0 + (u - p0) / (p1 - p0) * (x1 - x0)
    }

    pub(crate) fn cdf(&self, x: f64) -> f64 {
        // Last index with xs[i] <= x.
        let i = self.xs.partition_point(|&v| v <= x);
        if i == 0 {
            return 0.0;
        }
        if i >= self.xs.len() {
            return 1.0;
        }
        let (x0, x1, p0, p1) = (self.xs[i - 1], self.xs[i], self.ps[i - 1], self.ps[i]);
        p0 + (x - x0) / (x1 - x0) * (p1 - p0)
    }

    /// Mean of the piecewise-linear distribution (atom at the first point
    /// plus uniform mass on each segment).
    pub(crate) fn mean(&self) -> f64 {
        let mut m = self.xs[0] * self.ps[0];
        for i in 1..self.xs.len() {
            m += (self.ps[i] - self.ps[i - 1]) * (self.xs[i] + self.xs[i - 1]) / 2.0;
        }
        m
    }
}

/// Empirical CDF of a finite sample: fraction of values `<= x`.
pub(crate) fn step_cdf(sorted: &[f64], x: f64) -> f64 {
    sorted.partition_point(|&v| v <= x) as f64 / sorted.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_with_comments_and_errors() {
        let p = Path::new("ivals.txt");
        let v = parse_sequence(p, "# header\n100us\n\n  2ms # two\n0\n", SpecUnit::Time).unwrap();
        assert_eq!(v, vec![1e5, 2e6, 0.0]);
        let e = parse_sequence(p, "1ms\n# c\n100\n", SpecUnit::Time).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("ivals.txt:3: invalid duration \"100\""),
            "{msg}"
        );
        assert!(matches!(e, GenError::FileLine { line: 3, .. }));
        let e = parse_sequence(p, "# nothing\n", SpecUnit::Bytes).unwrap_err();
        assert!(e.to_string().contains("no values"));
        assert_eq!(
            parse_sequence(p, "64\n1KiB\n", SpecUnit::Bytes).unwrap(),
            vec![64.0, 1024.0]
        );
    }

    #[test]
    fn cdf_file() {
        let p = Path::new("s.cdf");
        let c = EmpiricalCdf::parse(p, "64 0.5\n1500 1.0\n", SpecUnit::Bytes).unwrap();
        assert_eq!(c.cdf(63.0), 0.0);
        assert_eq!(c.cdf(64.0), 0.5);
        assert!((c.cdf(782.0) - 0.75).abs() < 1e-12);
        assert_eq!(c.cdf(1500.0), 1.0);
        assert_eq!(c.quantile(0.3), 64.0);
        assert!((c.quantile(0.75) - 782.0).abs() < 1e-9);
        assert!((c.mean() - (32.0 + 0.5 * 782.0)).abs() < 1e-9);
        let bad = [
            ("1 0.5\n", "must be 1"),
            ("1 0.5\n0 1\n", "s.cdf:2: values must not decrease"),
            (
                "1 0.5\n2 0.4\n3 1\n",
                "s.cdf:2: probabilities must not decrease",
            ),
            ("1 1.5\n", "s.cdf:1: bad probability"),
            ("1\n", "s.cdf:1: expected"),
            ("x 1\n", "s.cdf:1: invalid size"),
            ("", "no points"),
        ];
        for (text, want) in bad {
            let e = EmpiricalCdf::parse(p, text, SpecUnit::Bytes)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
