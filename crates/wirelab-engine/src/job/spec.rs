//! Generators built from interval and size specs, with the run's seeds,
//! and the requested distributions analysis measures a run against.

use std::path::Path;
use wirelab_analysis::{Cdf, Requested};
use wirelab_core::gen::{Bounds, GenError, GenSpec, Generator, LoadError, SpecUnit};

/// The seeds of flow `index` of a run seeded with `seed`: every random
/// choice of a run derives from its one seed here (the padding bytes mix
/// `flow` further inside [`crate::sender`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSeeds {
    pub intervals: u64,
    pub sizes: u64,
    pub flow: u64,
}

impl FlowSeeds {
    pub fn of(seed: u64, index: u32) -> FlowSeeds {
        let intervals = seed.wrapping_add(u64::from(index) * 0x9e37_79b9);
        FlowSeeds {
            intervals,
            sizes: intervals ^ 0xa5a5,
            flow: seed.wrapping_add(u64::from(index)),
        }
    }
}

/// Reads a file a spec names (generators get content, never paths).
pub fn load_file(path: &Path) -> Result<String, LoadError> {
    Ok(std::fs::read_to_string(path)?)
}

pub fn build(spec: &GenSpec, seed: u64, bounds: Bounds) -> Result<Generator, GenError> {
    spec.build(&load_file, seed, bounds)
}

/// Mean of a spec, loading its files when needed.
pub fn mean_of(spec: &GenSpec) -> Option<f64> {
    spec.mean().or_else(|| {
        build(spec, 0, Bounds::NON_NEGATIVE)
            .ok()
            .and_then(|g| g.mean())
    })
}

/// The CDF of a spec where it is continuous (not a constant, not `onoff`).
fn continuous_cdf(spec: &GenSpec) -> Option<Cdf> {
    if spec.as_const().is_some() {
        return None;
    }
    let g = build(spec, 0, Bounds::NON_NEGATIVE).ok()?;
    g.cdf(0.0)?;
    Some(Box::new(move |x| g.cdf(x).unwrap_or(0.0)))
}

/// What a run with these specs requested.
pub fn requested(interval: Option<&GenSpec>, size: Option<&GenSpec>) -> Requested {
    Requested {
        mean_interval_ns: interval.and_then(mean_of).map(|m| m.round() as u64),
        interval_cdf: interval.and_then(continuous_cdf),
        size_cdf: size.and_then(continuous_cdf),
    }
}

/// The constant interval of a rate of `pps` packets per second.
pub fn rate_interval(pps: f64) -> Result<GenSpec, GenError> {
    GenSpec::constant(1e9 / pps, SpecUnit::Time)
}

/// The constant interval of a payload bit rate with sizes from `sizes`;
/// `None` when their mean is undefined (Cauchy, heavy-tailed Pareto).
pub fn bitrate_interval(bps: f64, sizes: &GenSpec) -> Option<Result<GenSpec, GenError>> {
    mean_of(sizes).map(|size| rate_interval(bps / (size * 8.0)))
}

/// Share of draws clamped into the bounds worth a note.
pub const CLAMP_NOTE_SHARE: f64 = 0.001;

/// How a generator's values meet the bounds it clamps into.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fit {
    /// Every value lies within, or nothing is known (`onoff`).
    Within,
    /// The spec names this value, and it lies outside: refuse the spec.
    Outside(f64),
    /// A parametric distribution's draws fall below and above the bounds
    /// with these probabilities, one of them at least [`CLAMP_NOTE_SHARE`]:
    /// they are clamped (and counted), which the user should be told.
    Clamps { below: f64, above: f64 },
}

pub fn fit(g: &Generator) -> Fit {
    let b = g.bounds();
    if let Some((lo, hi)) = g.value_range() {
        return match (lo < b.min, hi > b.max) {
            (true, _) => Fit::Outside(lo),
            (_, true) => Fit::Outside(hi),
            _ => Fit::Within,
        };
    }
    let (Some(below), Some(at_max)) = (g.cdf(b.min), g.cdf(b.max)) else {
        return Fit::Within;
    };
    let above = 1.0 - at_max;
    if below >= CLAMP_NOTE_SHARE || above >= CLAMP_NOTE_SHARE {
        Fit::Clamps { below, above }
    } else {
        Fit::Within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_become_constant_intervals() {
        assert_eq!(rate_interval(10_000.0).unwrap().as_const(), Some(100_000.0));
        let sizes = GenSpec::parse("uniform:100,150", SpecUnit::Bytes).unwrap();
        let i = bitrate_interval(1e6, &sizes).unwrap().unwrap();
        assert_eq!(i.as_const(), Some(1e9 / (1e6 / 1000.0)));
        let cauchy = GenSpec::parse("cauchy:100,5", SpecUnit::Bytes).unwrap();
        assert!(bitrate_interval(1e6, &cauchy).is_none());
    }

    fn fit_of(s: &str, unit: SpecUnit, min: f64, max: f64) -> Fit {
        let spec = GenSpec::parse(s, unit).unwrap();
        fit(&build(&spec, 1, Bounds::new(min, max).unwrap()).unwrap())
    }

    #[test]
    fn named_values_outside_the_bounds_are_refused_and_clamped_tails_counted() {
        use SpecUnit::Bytes;
        assert_eq!(fit_of("70000", Bytes, 24.0, 65507.0), Fit::Outside(7e4));
        assert_eq!(fit_of("10", Bytes, 24.0, 65507.0), Fit::Outside(10.0));
        assert_eq!(
            fit_of("uniform:64,70000", Bytes, 24.0, 65507.0),
            Fit::Outside(7e4)
        );
        assert_eq!(
            fit_of("uniform:24,65507", Bytes, 24.0, 65507.0),
            Fit::Within
        );
        assert_eq!(fit_of("normal:800,100", Bytes, 24.0, 65507.0), Fit::Within);
        let Fit::Clamps { below, above } = fit_of("exp:30000", Bytes, 24.0, 65507.0) else {
            panic!("exp:30000 reaches past 65507 often")
        };
        assert!((above - (-65507.0f64 / 30000.0).exp()).abs() < 1e-9);
        assert!((below - (1.0 - (-24.0f64 / 30000.0).exp())).abs() < 1e-9);
        let i = fit_of("normal:1ms,1ms", SpecUnit::Time, 0.0, 3.6e12);
        assert!(matches!(i, Fit::Clamps { below, .. } if (below - 0.1587).abs() < 1e-3));
        assert_eq!(
            fit_of("onoff:1ms/1ms/exp:1ms", SpecUnit::Time, 0.0, 1.0),
            Fit::Within
        );
    }

    #[test]
    fn seeds_differ_per_flow_and_part() {
        let a = FlowSeeds::of(1, 0);
        let b = FlowSeeds::of(1, 1);
        assert_ne!(a, b);
        assert_ne!(a.intervals, a.sizes);
        assert_eq!(a.flow, 1);
        assert_eq!(b.flow, 2);
    }

    #[test]
    fn requested_has_cdfs_only_for_continuous_specs() {
        let exp = GenSpec::parse("exp:1ms", SpecUnit::Time).unwrap();
        let c = GenSpec::parse("64", SpecUnit::Bytes).unwrap();
        let r = requested(Some(&exp), Some(&c));
        assert_eq!(r.mean_interval_ns, Some(1_000_000));
        assert!(r.interval_cdf.is_some());
        assert!(r.size_cdf.is_none());
        let cdf = r.interval_cdf.unwrap();
        assert!((cdf(1e6) - (1.0 - (-1.0f64).exp())).abs() < 1e-9);
    }
}
