//! Building specs into seeded generators and drawing values.

use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::dist::{Dist, Sampler};
use super::empirical::{parse_sequence, step_cdf, EmpiricalCdf};
use super::onoff::{long_run_mean, OnOff};
use super::spec::{GenSpec, SpecKind};
use super::{Bounds, GenError};

/// Why a file loader could not provide a file's content.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading the file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The context does not allow specs to name files.
    #[error("this spec may not name files here")]
    NotAllowed,
}

/// A file loader for specs that name no files: always fails.
pub fn no_files(_path: &Path) -> Result<String, LoadError> {
    Err(LoadError::NotAllowed)
}

/// A seeded value generator built from a [`GenSpec`]. Draw values with
/// [`Iterator::next`] (`None` only after the last value of a `,once` file).
#[derive(Debug, Clone)]
pub struct Generator {
    node: Node,
    rng: ChaCha8Rng,
    bounds: Bounds,
    clamped: u64,
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Dist {
        dist: Dist,
        sampler: Sampler,
    },
    Seq {
        values: Vec<f64>,
        sorted: Vec<f64>,
        pos: usize,
        once: bool,
    },
    Cdf(EmpiricalCdf),
    OnOff(Box<OnOff>),
}

impl GenSpec {
    /// Builds a generator. `files` returns the content of a file named in
    /// the spec (the caller does the I/O); errors in the content name the
    /// file and line. Every value is clamped into `bounds` (counted).
    pub fn build(
        &self,
        files: &dyn Fn(&Path) -> Result<String, LoadError>,
        seed: u64,
        bounds: Bounds,
    ) -> Result<Generator, GenError> {
        bounds.check()?;
        Ok(Generator {
            node: build_node(self, files)?,
            rng: ChaCha8Rng::seed_from_u64(seed),
            bounds,
            clamped: 0,
        })
    }
}

fn build_node(
    spec: &GenSpec,
    files: &dyn Fn(&Path) -> Result<String, LoadError>,
) -> Result<Node, GenError> {
    let load = |path: &Path| {
        files(path).map_err(|reason| GenError::FileLoad {
            path: path.to_path_buf(),
            reason,
        })
    };
    Ok(match spec.kind() {
        SpecKind::Dist(d) => Node::Dist {
            dist: *d,
            sampler: d.sampler().map_err(|e| GenError::Spec {
                spec: spec.to_string(),
                problem: Box::new(e.into()),
            })?,
        },
        SpecKind::File { path, once } => {
            let values = parse_sequence(path, &load(path)?, spec.unit())?;
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            Node::Seq {
                values,
                sorted,
                pos: 0,
                once: *once,
            }
        }
        SpecKind::Cdf { path } => Node::Cdf(EmpiricalCdf::parse(path, &load(path)?, spec.unit())?),
        SpecKind::OnOff { on, off, inner } => Node::OnOff(Box::new(OnOff::new(
            build_node(on, files)?,
            build_node(off, files)?,
            build_node(inner, files)?,
        ))),
    })
}

impl Node {
    #[inline]
    pub(crate) fn draw(
        &mut self,
        rng: &mut ChaCha8Rng,
        bounds: &Bounds,
        clamped: &mut u64,
    ) -> Option<f64> {
        let v = match self {
            Node::Dist { sampler, .. } => sampler.sample(rng),
            Node::Seq {
                values, pos, once, ..
            } => {
                if *pos >= values.len() {
                    if *once {
                        return None;
                    }
                    *pos = 0;
                }
                let v = *values.get(*pos)?;
                *pos += 1;
                v
            }
            Node::Cdf(c) => c.sample(rng),
            // Bounds were applied to the inner draws; the off time is added.
            Node::OnOff(o) => return o.draw(rng, bounds, clamped),
        };
        Some(bounds.clamp(v, clamped))
    }

    fn cdf(&self, x: f64) -> Option<f64> {
        match self {
            Node::Dist { dist, .. } => Some(dist.cdf(x)),
            Node::Seq { sorted, .. } => Some(step_cdf(sorted, x)),
            Node::Cdf(c) => Some(c.cdf(x)),
            Node::OnOff(_) => None,
        }
    }

    fn mean(&self) -> Option<f64> {
        match self {
            Node::Dist { dist, .. } => dist.mean(),
            Node::Seq { values, .. } => Some(values.iter().sum::<f64>() / values.len() as f64),
            Node::Cdf(c) => Some(c.mean()),
            Node::OnOff(o) => long_run_mean(o.on.mean()?, o.off.mean()?, o.inner.mean()?),
        }
    }
}

impl Iterator for Generator {
    type Item = f64;

    /// The next value, clamped into the bounds; `None` only when a
    /// `,once` file is exhausted. Does not allocate.
    #[inline]
    fn next(&mut self) -> Option<f64> {
        self.node
            .draw(&mut self.rng, &self.bounds, &mut self.clamped)
    }
}

impl Generator {
    /// [`Iterator::next`] rounded to the nearest integer (ns or bytes);
    /// negative values (possible only with a negative lower bound) give 0.
    #[inline]
    pub fn next_u64(&mut self) -> Option<u64> {
        // `as` saturates: negative -> 0, above u64::MAX -> u64::MAX.
        self.next().map(|v| v.round() as u64)
    }

    /// How many draws so far were clamped into the bounds (including
    /// negative on/off durations of `onoff`).
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The bounds values are clamped into.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// CDF of the requested distribution at `x`, before clamping: a step
    /// for constants, the empirical CDF of the values for `file:`, the
    /// interpolated CDF for `cdf:`, and `None` for `onoff` (its interval
    /// distribution has no closed form).
    pub fn cdf(&self, x: f64) -> Option<f64> {
        self.node.cdf(x)
    }

    /// Mean of the requested distribution (before clamping): the
    /// theoretical mean, the average of a file's values, the mean of an
    /// empirical CDF, or the long-run mean interval of `onoff`. `None` for
    /// Cauchy and Pareto with shape <= 1.
    pub fn mean(&self) -> Option<f64> {
        self.node.mean()
    }

    /// The least and greatest value of a spec that names its values itself
    /// (`const`, `uniform`, `file:`, `cdf:`), before clamping; `None` for
    /// the parametric distributions, whose tails the bounds clamp by design,
    /// and for `onoff`. Callers refuse a named value outside their bounds.
    pub fn value_range(&self) -> Option<(f64, f64)> {
        match &self.node {
            Node::Dist {
                dist: Dist::Const { value },
                ..
            } => Some((*value, *value)),
            Node::Dist {
                dist: Dist::Uniform { min, max },
                ..
            } => Some((*min, *max)),
            Node::Dist { .. } | Node::OnOff(_) => None,
            Node::Seq { sorted, .. } => Some((*sorted.first()?, *sorted.last()?)),
            Node::Cdf(c) => Some((c.quantile(0.0), c.quantile(1.0))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SpecUnit::{self, Bytes, Time};
    use super::*;
    use std::collections::HashMap;

    fn gen(s: &str, unit: SpecUnit, seed: u64, bounds: Bounds) -> Generator {
        GenSpec::parse(s, unit)
            .unwrap()
            .build(&no_files, seed, bounds)
            .unwrap()
    }

    fn ks(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
        samples.sort_by(f64::total_cmp);
        let n = samples.len() as f64;
        let mut d: f64 = 0.0;
        for (i, &x) in samples.iter().enumerate() {
            let f = cdf(x);
            d = d
                .max((f - i as f64 / n).abs())
                .max(((i + 1) as f64 / n - f).abs());
        }
        d
    }

    fn files(map: &[(&str, &str)]) -> impl Fn(&Path) -> Result<String, LoadError> {
        let m: HashMap<String, String> = map
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |p: &Path| {
            m.get(p.to_str().unwrap_or(""))
                .cloned()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound).into())
        }
    }

    #[test]
    fn distributions_match_mean_and_cdf() {
        const N: usize = 100_000;
        let unbounded = Bounds::new(f64::NEG_INFINITY, f64::INFINITY).unwrap();
        let specs = [
            ("exp:1ms", Time),
            ("normal:1ms,100us", Time),
            ("uniform:50us,150us", Time),
            ("gamma:2,500us", Time),
            ("weibull:1ms,1.5", Time),
            ("lognormal:1ms,500us", Time),
            ("normal:800,100", Bytes),
            ("pareto:100us,3", Time),
        ];
        for (i, (s, unit)) in specs.into_iter().enumerate() {
            let mut g = gen(s, unit, 42 + i as u64, unbounded);
            let mean = g.mean().unwrap();
            let mut xs: Vec<f64> = (0..N).map(|_| g.next().unwrap()).collect();
            let m = xs.iter().sum::<f64>() / N as f64;
            assert!((m - mean).abs() / mean < 0.015, "{s}: mean {m} vs {mean}");
            let d = ks(&mut xs, |x| g.cdf(x).unwrap());
            assert!(d < 0.01, "{s}: KS distance {d}");
            assert_eq!(g.clamped(), 0, "{s}");
        }
    }

    #[test]
    fn cauchy_clamping_is_counted() {
        let b = Bounds::new(900_000.0, 1_100_000.0).unwrap();
        let mut g = gen("cauchy:1ms,10us", Time, 7, b);
        assert_eq!(g.mean(), None);
        let n = 100_000;
        for _ in 0..n {
            let v = g.next().unwrap();
            assert!((900_000.0..=1_100_000.0).contains(&v));
        }
        // P(|X - median| > 10 scales) = 1 - 2/pi * atan(10) ~ 6.3%
        let frac = g.clamped() as f64 / n as f64;
        assert!((frac - 0.0635).abs() < 0.005, "{frac}");
        // Normal going negative is clamped at 0.
        let mut g = gen("normal:10us,10us", Time, 1, Bounds::NON_NEGATIVE);
        let zeros = (0..10_000).filter(|_| g.next() == Some(0.0)).count();
        assert_eq!(zeros as u64, g.clamped());
        assert!(zeros > 1000);
    }

    #[test]
    fn same_seed_same_sequence() {
        for s in [
            "exp:1ms",
            "onoff:exp:10ms/exp:5ms/exp:1ms",
            "cauchy:1ms,1us",
        ] {
            let a: Vec<f64> = gen(s, Time, 99, Bounds::NON_NEGATIVE).take(1000).collect();
            let b: Vec<f64> = gen(s, Time, 99, Bounds::NON_NEGATIVE).take(1000).collect();
            let c: Vec<f64> = gen(s, Time, 100, Bounds::NON_NEGATIVE).take(1000).collect();
            assert_eq!(a, b);
            assert_ne!(a, c);
        }
        // Pin the stream so an RNG change is noticed.
        let v: Vec<u64> = {
            let mut g = gen("uniform:0ns,1000ns", Time, 1, Bounds::NON_NEGATIVE);
            (0..3).map(|_| g.next_u64().unwrap()).collect()
        };
        assert_eq!(v, [402, 80, 597]);
    }

    #[test]
    fn constant_and_next_u64() {
        let mut g = gen("2.5us", Time, 0, Bounds::NON_NEGATIVE);
        assert_eq!(g.next_u64(), Some(2500));
        assert_eq!(g.cdf(2499.0), Some(0.0));
        assert_eq!(g.cdf(2500.0), Some(1.0));
        assert_eq!(g.mean(), Some(2500.0));
        let mut g = gen("1500", Bytes, 0, Bounds::new(64.0, 1000.0).unwrap());
        assert_eq!(g.next_u64(), Some(1000));
        assert_eq!(g.clamped(), 1);
    }

    #[test]
    fn bad_bounds_and_missing_files() {
        let s = GenSpec::parse("exp:1ms", Time).unwrap();
        let e = s
            .build(&no_files, 0, Bounds { min: 2.0, max: 1.0 })
            .unwrap_err();
        assert!(matches!(e, GenError::Bounds { .. }));
        assert!(Bounds::new(f64::NAN, 1.0).is_err());
        let s = GenSpec::parse("file:/x/y.txt", Time).unwrap();
        let e = s
            .build(&no_files, 0, Bounds::NON_NEGATIVE)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot read /x/y.txt: "), "{e}");
    }

    #[test]
    fn file_sequences_loop_or_stop() {
        let fs = files(&[("iv.txt", "# intervals\n100us\n200us # second\n\n300us\n")]);
        let s = GenSpec::parse("file:iv.txt", Time).unwrap();
        assert_eq!(s.file_paths(), vec![std::path::PathBuf::from("iv.txt")]);
        let g = s.build(&fs, 0, Bounds::NON_NEGATIVE).unwrap();
        let v: Vec<f64> = g.take(7).collect();
        assert_eq!(v, [1e5, 2e5, 3e5, 1e5, 2e5, 3e5, 1e5]);
        let mut g = GenSpec::parse("file:iv.txt,once", Time)
            .unwrap()
            .build(&fs, 0, Bounds::NON_NEGATIVE)
            .unwrap();
        assert_eq!(g.mean(), Some(2e5));
        assert_eq!(g.cdf(150e3), Some(1.0 / 3.0));
        assert_eq!(g.cdf(300e3), Some(1.0));
        assert_eq!(g.by_ref().count(), 3);
        assert_eq!(g.next(), None);
        assert_eq!(g.next_u64(), None);

        let fs = files(&[("bad.txt", "100us\n\n# x\n10\n")]);
        let e = GenSpec::parse("file:bad.txt", Time)
            .unwrap()
            .build(&fs, 0, Bounds::NON_NEGATIVE)
            .unwrap_err();
        assert!(matches!(e, GenError::FileLine { line: 4, .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("bad.txt:4: invalid duration \"10\""),
            "{e}"
        );
    }

    #[test]
    fn cdf_file_sampling() {
        let fs = files(&[("s.cdf", "# size cdf\n64 0.3\n576 0.6\n1500 1.0\n")]);
        let mut g = GenSpec::parse("cdf:s.cdf", Bytes)
            .unwrap()
            .build(&fs, 3, Bounds::NON_NEGATIVE)
            .unwrap();
        let mut xs: Vec<f64> = (0..100_000).map(|_| g.next().unwrap()).collect();
        let atom = xs.iter().filter(|&&x| x == 64.0).count() as f64 / 1e5;
        assert!((atom - 0.3).abs() < 0.01, "{atom}");
        let m = xs.iter().sum::<f64>() / 1e5;
        let mean = g.mean().unwrap();
        assert!((m - mean).abs() / mean < 0.01, "{m} vs {mean}");
        // KS against a CDF with an atom: compare only off the atom.
        let d = ks(&mut xs, |x| g.cdf(x).unwrap());
        assert!(d < 0.31, "{d}"); // the atom itself is a jump of 0.3
        assert!(xs.iter().all(|&x| (64.0..=1500.0).contains(&x)));
        let fs = files(&[("bad.cdf", "64 0.3\n576 0.2\n")]);
        let e = GenSpec::parse("cdf:bad.cdf", Bytes)
            .unwrap()
            .build(&fs, 3, Bounds::NON_NEGATIVE)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "bad.cdf:2: probabilities must not decrease");
    }

    #[test]
    fn cdf_file_continuous_ks() {
        let fs = files(&[("u.cdf", "0ns 0\n100us 0.5\n1ms 1\n")]);
        let mut g = GenSpec::parse("cdf:u.cdf", Time)
            .unwrap()
            .build(&fs, 5, Bounds::NON_NEGATIVE)
            .unwrap();
        let mut xs: Vec<f64> = (0..100_000).map(|_| g.next().unwrap()).collect();
        let d = ks(&mut xs, |x| g.cdf(x).unwrap());
        assert!(d < 0.01, "{d}");
    }

    #[test]
    fn onoff_bursts_are_exact_with_constants() {
        let mut g = gen("onoff:10ms/5ms/1ms", Time, 0, Bounds::NON_NEGATIVE);
        assert_eq!(g.cdf(1.0), None);
        assert_eq!(g.mean(), Some(1.5e6));
        let mut expect = Vec::new();
        for _ in 0..3 {
            expect.extend([1e6; 9]);
            expect.push(6e6);
        }
        let got: Vec<f64> = g.by_ref().take(30).collect();
        assert_eq!(got, expect);

        // Inner interval not dividing the on time: 4ms intervals, 10ms on.
        // On-clock packets at 0,4,8 | 12 (2ms into next on) ...
        let g = gen("onoff:10ms/5ms/4ms", Time, 0, Bounds::NON_NEGATIVE);
        let got: Vec<f64> = g.take(5).collect();
        assert_eq!(got, [4e6, 4e6, 9e6, 4e6, 9e6]);

        // One interval spanning several on periods collects every off period.
        let g = gen("onoff:1ms/2ms/3500us", Time, 0, Bounds::NON_NEGATIVE);
        let got: Vec<f64> = g.take(2).collect();
        assert_eq!(got, [3.5e6 + 3.0 * 2e6, 3.5e6 + 4.0 * 2e6]);
    }

    #[test]
    fn onoff_long_run_mean() {
        let mut g = gen(
            "onoff:exp:10ms/exp:5ms/exp:100us",
            Time,
            11,
            Bounds::NON_NEGATIVE,
        );
        let mean = g.mean().unwrap();
        assert!((mean - 150e3).abs() < 1e-6);
        let n = 400_000;
        let m = (0..n).map(|_| g.next().unwrap()).sum::<f64>() / n as f64;
        assert!((m - mean).abs() / mean < 0.02, "{m} vs {mean}");
    }

    proptest::proptest! {
        #[test]
        fn parsed_specs_build_and_draw_without_panic(
            kind in "(const|uniform|exp|normal|lognormal|pareto|weibull|gamma|cauchy)",
            a in "[0-9]{1,12}(\\.[0-9]{1,6})?",
            b in "[0-9]{1,12}(\\.[0-9]{1,6})?",
            seed in proptest::num::u64::ANY,
        ) {
            for (spec, unit) in [
                (format!("{kind}:{a}ns,{b}"), Time),
                (format!("{kind}:{a},{b}ns"), Time),
                (format!("{kind}:{a},{b}"), Bytes),
                (format!("{kind}:{a}"), Bytes),
            ] {
                if let Ok(s) = GenSpec::parse(&spec, unit) {
                    if let Ok(mut g) = s.build(&no_files, seed, Bounds::NON_NEGATIVE) {
                        for _ in 0..8 {
                            let v = g.next();
                            proptest::prop_assert!(v.is_some_and(|v| v >= 0.0));
                        }
                        let _ = (g.mean(), g.cdf(1.0));
                    }
                }
            }
        }
    }

    #[test]
    fn onoff_with_files_and_once() {
        let fs = files(&[
            ("/d/on.txt", "3ms\n"),
            ("/d/in.txt", "1ms\n1ms\n1ms\n1ms\n"),
        ]);
        let s = GenSpec::parse("onoff:[file:/d/on.txt]/2ms/file:/d/in.txt,once", Time).unwrap();
        let g = s.build(&fs, 0, Bounds::NON_NEGATIVE).unwrap();
        let got: Vec<f64> = g.collect();
        assert_eq!(got, [1e6, 1e6, 3e6, 1e6]);
    }

    #[test]
    fn value_range_names_explicit_values_only() {
        let b = Bounds::NON_NEGATIVE;
        assert_eq!(gen("70000", Bytes, 0, b).value_range(), Some((7e4, 7e4)));
        assert_eq!(
            gen("uniform:64,1400", Bytes, 0, b).value_range(),
            Some((64.0, 1400.0))
        );
        for s in ["exp:1000", "normal:800,100", "pareto:100,1.5"] {
            assert_eq!(gen(s, Bytes, 0, b).value_range(), None, "{s}");
        }
        let fs = files(&[
            ("/d/v.txt", "900\n64\n1500\n"),
            ("/d/c.cdf", "64 0\n9000 1\n"),
        ]);
        let range = |s: &str| {
            let g = GenSpec::parse(s, Bytes).unwrap().build(&fs, 0, b).unwrap();
            g.value_range()
        };
        assert_eq!(range("file:/d/v.txt"), Some((64.0, 1500.0)));
        assert_eq!(range("cdf:/d/c.cdf"), Some((64.0, 9000.0)));
    }
}
