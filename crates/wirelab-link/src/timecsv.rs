//! The `timeline` stage: link parameters by time from a time-indexed CSV
//! trace (`trace::csv`). Each copy uses the row active at its packet's
//! arrival, counted from the link's first arrival; a row's empty cell
//! leaves that parameter to the stage list.

use std::io::BufRead;

use wirelab_trace::csv::{CsvRow, Lookup, Timeline};
use wirelab_trace::Restart;

/// What a time-indexed trace says at a time.
#[derive(Debug, Clone, PartialEq)]
pub enum RowAt {
    /// Before the first row: the stage list alone applies.
    Before,
    /// This row applies.
    Row(CsvRow),
    /// Past the end under `at-end stop`, `pass` or `drop` (or a trace that
    /// cannot loop): the timeline stage's end policy applies.
    End,
}

/// A time-indexed trace the link asks, with non-decreasing times (ns from
/// the trace's start). [`Timeline`] over a restartable reader is one.
pub trait RowSource {
    /// The row active at `t_ns`.
    fn row_at(&mut self, t_ns: u64) -> RowAt;
}

impl<R: BufRead + Restart> RowSource for Timeline<R> {
    fn row_at(&mut self, t_ns: u64) -> RowAt {
        match self.at(t_ns) {
            Ok(Lookup::Before) => RowAt::Before,
            Ok(Lookup::Row(r)) => RowAt::Row(r.clone()),
            Ok(Lookup::End) => RowAt::End,
            // Checked whole before the run: an error now means the file
            // changed under it, and the trace ends there.
            Err(_) => RowAt::End,
        }
    }
}

/// A row's parameters for one packet (`None`: the stage list's).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Params {
    pub(crate) delay_ns: Option<u64>,
    pub(crate) jitter_ns: Option<u64>,
    pub(crate) rate_bps: Option<u64>,
    pub(crate) loss: Option<f64>,
    pub(crate) dup: Option<f64>,
    pub(crate) corrupt: Option<f64>,
    pub(crate) reorder: Option<f64>,
    pub(crate) limit: Option<u64>,
}

impl From<&CsvRow> for Params {
    fn from(r: &CsvRow) -> Params {
        Params {
            delay_ns: r.delay_ns,
            jitter_ns: r.jitter_ns,
            // The reader refuses rates <= 0; below 1 bit/s is 1 bit/s.
            rate_bps: r.rate_bps.map(|b| (b.round() as u64).max(1)),
            loss: r.loss,
            dup: r.dup,
            corrupt: r.corrupt,
            reorder: r.reorder,
            limit: r.limit,
        }
    }
}
