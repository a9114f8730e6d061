//! Human input with units (durations, sizes, packet and bit rates) and
//! packet-number ranges (`replay --packets 1-100,200-`) over arbitrary
//! text: never panics; whole-number parses agree with the fractional ones;
//! ranges are 1-based and ordered.

use wirelab_core::units;
use wirelab_engine::replay::Ranges;

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let d = units::parse_duration_ns(s);
    let df = units::parse_duration_ns_f64(s);
    if let Ok(n) = d {
        let f = *df
            .as_ref()
            .expect("a duration that parses whole parses as f64");
        assert!((f - n as f64).abs() <= 0.5 + f * 1e-12, "{s:?}: {n} vs {f}");
        let _ = units::format_ns(n as f64);
    }
    if let Ok(f) = df {
        assert!(f >= 0.0, "{s:?}: negative duration {f}");
        let _ = units::format_ns(f);
    }
    let b = units::parse_bytes(s);
    let bf = units::parse_bytes_f64(s);
    if let Ok(n) = b {
        let f = *bf.as_ref().expect("a size that parses whole parses as f64");
        assert!((f - n as f64).abs() <= f * 1e-12, "{s:?}: {n} vs {f}");
    }
    for r in [units::parse_rate_pps(s), units::parse_bitrate_bps(s)]
        .into_iter()
        .flatten()
    {
        assert!(r >= 0.0, "{s:?}: negative rate {r}");
    }
    if let Ok(r) = Ranges::parse(s) {
        for (a, b) in r.0 {
            assert!(a >= 1 && b.is_none_or(|b| b >= a), "{s:?}: {a}-{b:?}");
        }
    }
}
