//! Generators built from interval and size specs, with the run's seeds,
//! and the requested distributions analysis measures a run against.

use std::path::Path;
use wirelab_analysis::{Cdf, Requested};
use wirelab_core::gen::{Bounds, GenError, GenSpec, Generator};

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
pub fn load_file(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_core::gen::SpecUnit;

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
