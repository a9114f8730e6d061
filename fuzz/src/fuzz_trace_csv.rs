//! The time-indexed CSV reader and its timeline over arbitrary bytes: rows
//! come in time order with consistent ranges and values in range; lookups
//! at growing times (looping, holding, stopping) never panic.

use std::io::Cursor;

use wirelab_trace::csv::{CsvReader, Lookup, Timeline};
use wirelab_trace::{AtEnd, TraceOptions};

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let (period, body) = match data.split_first() {
        Some((&p, rest)) if p & 1 == 1 => (Some(u64::from(p) * 1_000_000), rest),
        Some((_, rest)) => (None, rest),
        None => (None, data),
    };
    let opts = TraceOptions {
        period_ns: period,
        ..TraceOptions::default()
    };
    let rows: Vec<_> = CsvReader::new(body, &opts).take(body.len() + 2).collect();
    assert!(rows.len() <= body.len() + 1);
    let mut prev_start = 0;
    for row in rows.iter().filter_map(|r| r.as_ref().ok()) {
        assert!(row.start_ns >= prev_start);
        assert!(row.end_ns.is_none_or(|e| e >= row.start_ns));
        for p in [row.loss, row.dup, row.corrupt, row.reorder]
            .into_iter()
            .flatten()
        {
            assert!((0.0..=1.0).contains(&p));
        }
        assert!(row.rate_bps.is_none_or(|r| r > 0.0));
        prev_start = row.start_ns;
    }
    for at_end in [AtEnd::Loop, AtEnd::Hold, AtEnd::Stop] {
        let mut tl = Timeline::new(CsvReader::new(Cursor::new(body.to_vec()), &opts), at_end);
        let mut t = 0u64;
        for (i, step) in body.iter().take(64).enumerate() {
            t = t.saturating_add(u64::from(*step) << (i % 40));
            if let Ok(Lookup::Row(r)) = tl.at(t) {
                assert!(r.start_ns <= t);
            }
        }
    }
}
