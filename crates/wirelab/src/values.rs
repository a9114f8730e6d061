//! Turning `--interval`/`--rate`/`--bitrate`/`--size` into seeded generators.

use crate::error::usage;
use anyhow::Result;
use std::path::Path;
use wirelab_core::gen::{Bounds, GenSpec, Generator, SpecUnit};
use wirelab_core::units;

/// Longest interval accepted from a generator (one hour).
pub const MAX_INTERVAL_NS: f64 = 3_600e9;

/// Reads a file a spec names (generators get content, never paths).
fn load(path: &Path) -> std::result::Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

pub fn parse_spec(flag: &str, spec: &str, unit: SpecUnit) -> Result<GenSpec> {
    GenSpec::parse(spec, unit).map_err(|e| usage(format!("{flag} {spec:?}: {e}")))
}

pub fn build(flag: &str, spec: &GenSpec, seed: u64, bounds: Bounds) -> Result<Generator> {
    spec.build(&load, seed, bounds)
        .map_err(|e| usage(format!("{flag} {spec}: {e}")))
}

/// The interval spec implied by the flags: --interval, --rate, --bitrate
/// (using the mean size), or the default of 1 ms.
pub fn interval_spec(
    interval: Option<&str>,
    rate: Option<&str>,
    bitrate: Option<&str>,
    mean_size: Option<f64>,
) -> Result<GenSpec> {
    if let Some(i) = interval {
        return parse_spec("--interval", i, SpecUnit::Time);
    }
    let pps = if let Some(r) = rate {
        units::parse_rate_pps(r).map_err(|e| usage(format!("--rate: {e}")))?
    } else if let Some(b) = bitrate {
        let bps = units::parse_bitrate_bps(b).map_err(|e| usage(format!("--bitrate: {e}")))?;
        let size = mean_size.ok_or_else(|| {
            usage("--bitrate needs a --size whose mean is defined (not cauchy, not heavy-tailed pareto)")
        })?;
        bps / (size * 8.0)
    } else {
        1000.0
    };
    if !(pps.is_finite() && pps > 0.0) {
        return Err(usage(format!(
            "the packet rate must be above 0 (got {pps})"
        )));
    }
    GenSpec::constant(1e9 / pps, SpecUnit::Time).map_err(|e| usage(format!("--rate: {e}")))
}

/// Mean of a spec, loading its files when needed.
pub fn mean_of(spec: &GenSpec) -> Option<f64> {
    if let Some(m) = spec.mean() {
        return Some(m);
    }
    spec.build(&load, 0, Bounds::NON_NEGATIVE)
        .ok()
        .and_then(|g| g.mean())
}

/// Duration flag parser with a message naming the flag.
pub fn duration_ns(flag: &str, s: &str) -> Result<u64> {
    units::parse_duration_ns(s).map_err(|e| usage(format!("{flag}: {e}")))
}

pub fn bytes(flag: &str, s: &str) -> Result<u64> {
    units::parse_bytes(s).map_err(|e| usage(format!("{flag}: {e}")))
}
