//! clap value parsers: typed values, each out-of-range error stating the
//! valid range (clap then names the flag and exits with 2).

use wirelab_core::gen::{GenSpec, SpecUnit};
use wirelab_core::units;
use wirelab_engine::job::replay::select::{SelectSpec, Selector};

type Parser<T> = fn(&str) -> Result<T, String>;

fn within<T: PartialOrd>(v: T, min: T, max: T, range: &str) -> Result<T, String> {
    if min <= v && v <= max {
        Ok(v)
    } else {
        Err(format!("must be {range}"))
    }
}

/// A whole number of at least `min` (counts, limits).
pub fn at_least<T>(min: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr<Err = std::num::ParseIntError> + PartialOrd + std::fmt::Display + Copy,
    T: Send + Sync + 'static,
{
    move |s| match s.parse::<T>() {
        Ok(v) if v >= min => Ok(v),
        Ok(_) => Err(format!("must be at least {min}")),
        Err(e) => Err(e.to_string()),
    }
}

/// A duration in ns within `min..=max`; `range` says it in words.
pub fn duration(
    min: u64,
    max: u64,
    range: &'static str,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s| {
        within(
            units::parse_duration_ns(s).map_err(|e| e.to_string())?,
            min,
            max,
            range,
        )
    }
}

/// A duration above 0.
pub const NONZERO_DURATION: Parser<u64> = |s| {
    within(
        units::parse_duration_ns(s).map_err(|e| e.to_string())?,
        1,
        u64::MAX,
        "above 0",
    )
};

/// A throughput window: at least 1 ms.
pub const WINDOW: Parser<u64> = |s| {
    let ns = units::parse_duration_ns(s).map_err(|e| e.to_string())?;
    within(ns, 1_000_000, u64::MAX, "at least 1ms")
};

/// A size in bytes within `min..=max`.
pub fn bytes(
    min: u64,
    max: u64,
    range: &'static str,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s| {
        within(
            units::parse_bytes(s).map_err(|e| e.to_string())?,
            min,
            max,
            range,
        )
    }
}

/// A plain number within `min..=max`.
pub fn number(
    min: f64,
    max: f64,
    range: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s| {
        let v = units::parse_number(s).map_err(|e| e.to_string())?;
        within(v, min, max, range)
    }
}

/// A packet rate of at least one packet per 1000 s.
pub const RATE: Parser<f64> = |s| {
    let pps = units::parse_rate_pps(s).map_err(|e| e.to_string())?;
    within(
        pps,
        1e-3,
        f64::MAX,
        "at least 0.001 pps (one packet per 1000 s)",
    )
};

/// A bit rate above 0.
pub const BITRATE: Parser<f64> = |s| {
    let bps = units::parse_bitrate_bps(s).map_err(|e| e.to_string())?;
    within(bps, f64::MIN_POSITIVE, f64::MAX, "above 0")
};

pub const INTERVAL: Parser<GenSpec> =
    |s| GenSpec::parse(s, SpecUnit::Time).map_err(|e| e.to_string());

/// A link's stages in `wirelab emulate`'s syntax, checked here and passed
/// on as written.
pub const STAGES: Parser<String> = |s| {
    wirelab_link::LinkConfig::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
};
pub const SIZE: Parser<GenSpec> = |s| GenSpec::parse(s, SpecUnit::Bytes).map_err(|e| e.to_string());

/// `--include` / `--exclude`: packet numbers, or a filter compiled here.
pub const SELECT: Parser<Selector> = |s| {
    let spec: SelectSpec = s.parse().map_err(|e| format!("{e}"))?;
    spec.compile().map_err(|e| e.to_string())
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_state_the_range() {
        let p = duration(40_000_000, 10_000_000_000, "between 40ms and 10s");
        assert_eq!(p("200ms"), Ok(200_000_000));
        assert_eq!(p("20ms").unwrap_err(), "must be between 40ms and 10s");
        assert!(p("fast").unwrap_err().contains("invalid duration"));
        assert_eq!(NONZERO_DURATION("0").unwrap_err(), "must be above 0");
        assert_eq!(
            RATE("0").unwrap_err(),
            "must be at least 0.001 pps (one packet per 1000 s)"
        );
        assert_eq!(RATE("10kpps"), Ok(10_000.0));
        assert_eq!(BITRATE("0").unwrap_err(), "must be above 0");
        let f = number(0.0, 1.0, "within 0..=1");
        assert_eq!(f("0.5"), Ok(0.5));
        assert_eq!(f("1.5").unwrap_err(), "must be within 0..=1");
        let b = bytes(4096, 1 << 30, "between 4KiB and 1GiB");
        assert_eq!(b("32MiB"), Ok(32 << 20));
        assert_eq!(b("0").unwrap_err(), "must be between 4KiB and 1GiB");
        let n = at_least(1u64);
        assert_eq!(n("7"), Ok(7));
        assert_eq!(n("0").unwrap_err(), "must be at least 1");
        assert!(n("-1").is_err());
    }
}
