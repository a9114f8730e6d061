//! `wirelab run` control files over arbitrary text: parsing never panics;
//! an error's line and column lie inside the text; a file that parses and
//! holds at most 10,000 points plans (or fails with an error, never a
//! panic) into points with unique ids and indices 0..n, as many as the
//! combinations left after exclusions times the repetitions; every point
//! resolves. The first line, when it starts with `#only `, is also an
//! `--only` expression.

use std::collections::HashSet;

use wirelab_campaign::control::{parse, ControlError};
use wirelab_campaign::expr::Expr;
use wirelab_campaign::sweep::{plan, resolve};

/// Points planned per input at most (the planner allows a million; that is
/// too slow for a fuzzer).
const MAX_FUZZ_POINTS: u128 = 10_000;

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let only = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#only "))
        .and_then(|e| Expr::parse(e).ok());
    let c = match parse("fuzz.toml", text) {
        Ok(c) => c,
        Err(ControlError::Invalid { line, col, .. }) => {
            let lines = text.split('\n').count();
            assert!(line >= 1 && line <= lines, "line {line} of {lines}");
            let len = text
                .split('\n')
                .nth(line - 1)
                .map_or(0, |l| l.chars().count());
            assert!(
                col >= 1 && col <= len + 1,
                "column {col} of a {len}-character line"
            );
            return;
        }
        Err(e) => panic!("parse gave a non-positional error: {e}"),
    };
    let combinations = c
        .sweep
        .axes
        .iter()
        .try_fold(1u128, |n, a| n.checked_mul(a.values.len() as u128));
    match combinations {
        Some(n) if n.saturating_mul(u128::from(c.campaign.repetitions)) <= MAX_FUZZ_POINTS => {}
        _ => return,
    }
    let Ok(p) = plan(&c, only.as_ref(), &[]) else {
        return;
    };
    let reps = u64::from(p.campaign.repetitions);
    let kept = p.combinations - p.filtered - p.excluded.len() as u64;
    assert_eq!(p.points.len() as u64, kept * reps);
    let mut ids = HashSet::new();
    for (i, pt) in p.points.iter().enumerate() {
        assert_eq!(pt.index, i);
        assert!(ids.insert(pt.id.clone()), "duplicate id {}", pt.id);
        resolve(&c, pt).unwrap_or_else(|e| panic!("planned point does not resolve: {e}"));
    }
}
