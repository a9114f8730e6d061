//! Sequence (`file:`) and empirical CDF (`cdf:`) files over arbitrary text.
//! The first byte picks the kind (bit 0: cdf), the unit (bit 1: sizes) and
//! `,once` (bit 2). Loading never panics: it gives a generator or an error
//! naming the line. A generator's draws are finite and inside its bounds,
//! a `,once` file ends after its values, and a CDF stays within [0, 1].

use wirelab_core::gen::{Bounds, GenSpec, LoadError, SpecUnit};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let cdf = sel & 1 != 0;
    let unit = if sel & 2 != 0 {
        SpecUnit::Bytes
    } else {
        SpecUnit::Time
    };
    let once = sel & 4 != 0;
    let s = match (cdf, once) {
        (true, _) => "cdf:f",
        (false, true) => "file:f,once",
        (false, false) => "file:f",
    };
    let spec = GenSpec::parse(s, unit).expect("a fixed spec");
    let files = |_: &std::path::Path| -> Result<String, LoadError> { Ok(text.to_string()) };
    let (lo, hi) = if sel & 8 != 0 {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        (0.0, 1e12)
    };
    let bounds = Bounds::new(lo, hi).unwrap();
    let Ok(mut g) = spec.build(&files, u64::from(sel), bounds) else {
        return;
    };
    let lines = text.lines().count();
    for i in 0..64 {
        match g.next() {
            Some(v) => assert!(!v.is_nan() && v >= lo && v <= hi, "drew {v}"),
            None => {
                assert!(once && !cdf, "only a ,once file ends");
                assert!(i <= lines, "ended after {i} values of {lines} lines");
                break;
            }
        }
    }
    for x in [
        f64::NEG_INFINITY,
        -1.0,
        0.0,
        1.0,
        1e6,
        1e300,
        f64::INFINITY,
        f64::NAN,
    ] {
        if let Some(p) = g.cdf(x) {
            assert!(
                (0.0..=1.0).contains(&p) || (x.is_nan() && p.is_nan()),
                "cdf({x}) = {p}"
            );
        }
    }
    let _ = (g.mean(), g.clamped(), g.next_u64());
}
