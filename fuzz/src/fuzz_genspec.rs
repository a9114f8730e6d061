//! Generator specs (`--interval SPEC`, `--size SPEC`) over arbitrary text:
//! the first byte picks the unit (bit 0: sizes, else intervals). Parsing
//! never panics; a spec that parses prints in a canonical form that parses
//! back to an equal spec; it builds (files named in it hold two valid
//! values) into a generator whose draws are finite and inside its bounds
//! (`onoff`: not negative, the off periods come on top of the bounded draws).

use std::path::Path;
use wirelab_core::gen::{Bounds, GenSpec, LoadError, SpecKind, SpecUnit};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let unit = if sel & 1 != 0 {
        SpecUnit::Bytes
    } else {
        SpecUnit::Time
    };
    let Ok(spec) = GenSpec::parse(text, unit) else {
        return;
    };
    let canonical = spec.to_string();
    let back = GenSpec::parse(&canonical, unit)
        .unwrap_or_else(|e| panic!("canonical form {canonical:?} of {text:?} fails: {e}"));
    assert_eq!(back, spec, "{text:?} -> {canonical:?}");
    let _ = (spec.mean(), spec.as_const(), spec.file_paths());
    let files = |p: &Path| -> Result<String, LoadError> {
        let cdf = spec.to_string().contains(&format!("cdf:{}", p.display()));
        Ok(match (unit, cdf) {
            (SpecUnit::Time, false) => "1ms\n2ms\n",
            (SpecUnit::Time, true) => "1ms 0.5\n2ms 1\n",
            (SpecUnit::Bytes, false) => "100\n200\n",
            (SpecUnit::Bytes, true) => "100 0.5\n200 1\n",
        }
        .to_string())
    };
    let bounds = Bounds::new(0.0, 1e12).unwrap();
    let Ok(mut g) = spec.build(&files, u64::from(sel), bounds) else {
        return;
    };
    // onoff applies the bounds to its inner draws and adds off periods after.
    let max = if matches!(spec.kind(), SpecKind::OnOff { .. }) {
        f64::MAX
    } else {
        1e12
    };
    for _ in 0..32 {
        let Some(v) = g.next() else { break };
        assert!(
            v.is_finite() && (0.0..=max).contains(&v),
            "{text:?} drew {v}"
        );
    }
    let _ = (g.mean(), g.cdf(1e6), g.cdf(-1.0), g.clamped(), g.next_u64());
}
