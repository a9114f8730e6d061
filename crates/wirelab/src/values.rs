//! Flag values parsed after clap: generator specs, and unit values whose
//! errors name their flag.

use crate::error::usage;
use anyhow::Result;
use wirelab_core::gen::{GenSpec, SpecUnit};
use wirelab_core::units;

pub fn parse_spec(flag: &str, spec: &str, unit: SpecUnit) -> Result<GenSpec> {
    GenSpec::parse(spec, unit).map_err(|e| usage(format!("{flag} {spec:?}: {e}")))
}

/// The interval spec implied by the flags: --interval, --rate, --bitrate
/// (bits per second, using the mean size), or the default of 1 ms.
pub fn interval_spec(
    interval: Option<&str>,
    rate_pps: Option<f64>,
    bitrate_bps: Option<f64>,
    mean_size: Option<f64>,
) -> Result<GenSpec> {
    if let Some(i) = interval {
        return parse_spec("--interval", i, SpecUnit::Time);
    }
    let pps = match (rate_pps, bitrate_bps) {
        (Some(r), _) => r,
        (None, Some(bps)) => {
            let size = mean_size.ok_or_else(|| {
                usage("--bitrate needs a --size whose mean is defined (not cauchy, not heavy-tailed pareto)")
            })?;
            bps / (size * 8.0)
        }
        (None, None) => 1000.0,
    };
    if !(pps.is_finite() && pps > 0.0) {
        return Err(usage(format!(
            "the packet rate must be above 0 (got {pps})"
        )));
    }
    GenSpec::constant(1e9 / pps, SpecUnit::Time).map_err(|e| usage(format!("--rate: {e}")))
}

/// Duration flag parser with a message naming the flag.
pub fn duration_ns(flag: &str, s: &str) -> Result<u64> {
    units::parse_duration_ns(s).map_err(|e| usage(format!("{flag}: {e}")))
}

pub fn bytes(flag: &str, s: &str) -> Result<u64> {
    units::parse_bytes(s).map_err(|e| usage(format!("{flag}: {e}")))
}

/// A clap value parser for durations with a unit (`200us`, `5s`), in ns.
pub fn duration_arg(s: &str) -> std::result::Result<u64, String> {
    units::parse_duration_ns(s).map_err(|e| e.to_string())
}
