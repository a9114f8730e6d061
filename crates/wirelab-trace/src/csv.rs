//! Time-indexed CSV traces: link parameters per time step.
//!
//! The first row is a header naming exactly one time column and any of the
//! parameter columns, in any order:
//!
//! - `t_us` / `t_ms`: the row applies from this time (from the trace's
//!   start; decimals allowed, never decreasing) until the next row's; the
//!   last row lasts until `period=` if given, else forever.
//! - `dur_us` / `dur_ms`: the row lasts this long; rows follow each other
//!   from 0 and the trace's length is their sum.
//! - `delay_us`, `jitter_us` (µs, or with a unit: `1.5ms`), `rate_bps`
//!   (> 0, bit/s, or with a unit: `12Mbit`), `loss`, `dup`, `corrupt`,
//!   `reorder` (probabilities in [0, 1], or percent: `1%`), `limit`
//!   (packets).
//!
//! An empty cell leaves that parameter to the stage's own configuration
//! (`None`). [`Timeline`] answers "which row is active at time t" for
//! non-decreasing t while holding one row.

use std::io::BufRead;

use super::delays::parse_delay;
use super::end::{AtEnd, Restart};
use super::error::{io_kind, ErrorKind, Pos, TraceError};
use super::format::{NegPolicy, TraceOptions};
use super::lines::{format_us, parse_int, Decimal, Line, Lines, MAX_LINE};
use wirelab_core::units::parse_bitrate_bps;

/// One row: its time range and the parameters it sets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsvRow {
    /// Start, ns from the trace's start.
    pub start_ns: u64,
    /// End (exclusive); `None`: the row lasts forever.
    pub end_ns: Option<u64>,
    pub delay_ns: Option<u64>,
    pub jitter_ns: Option<u64>,
    pub rate_bps: Option<f64>,
    pub loss: Option<f64>,
    pub dup: Option<f64>,
    pub corrupt: Option<f64>,
    pub reorder: Option<f64>,
    pub limit: Option<u64>,
    /// The row's line in the file.
    pub line: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    TUs,
    TMs,
    DurUs,
    DurMs,
    Delay,
    Jitter,
    Rate,
    Loss,
    Dup,
    Corrupt,
    Reorder,
    Limit,
}

const COLUMNS: [(&str, Col); 12] = [
    ("t_us", Col::TUs),
    ("t_ms", Col::TMs),
    ("dur_us", Col::DurUs),
    ("dur_ms", Col::DurMs),
    ("delay_us", Col::Delay),
    ("jitter_us", Col::Jitter),
    ("rate_bps", Col::Rate),
    ("loss", Col::Loss),
    ("dup", Col::Dup),
    ("corrupt", Col::Corrupt),
    ("reorder", Col::Reorder),
    ("limit", Col::Limit),
];

const COLUMN_LIST: &str =
    "t_us or t_ms or dur_us, then any of delay_us, jitter_us, rate_bps, loss, dup, corrupt, reorder, limit";

impl Col {
    fn is_time(self) -> bool {
        matches!(self, Col::TUs | Col::TMs | Col::DurUs | Col::DurMs)
    }

    fn name(self) -> &'static str {
        COLUMNS
            .iter()
            .find(|(_, c)| *c == self)
            .map_or("", |(n, _)| n)
    }
}

/// Streaming reader: rows in order, each with its end (for `t_*` traces
/// the reader holds one row until it has read the next).
pub struct CsvReader<R> {
    lines: Lines<R>,
    neg: NegPolicy,
    period_ns: Option<u64>,
    /// Columns, once the header is read (at most one per name).
    header: Vec<Col>,
    time: Option<Col>,
    /// A `t_*` row waiting for the next row's time, and its time's position.
    pending: Option<(CsvRow, Pos)>,
    /// `dur_*`: the next row's start; `t_*`: the last row's start.
    clock_ns: Option<u64>,
    rows: u64,
    done: bool,
}

impl<R: BufRead> CsvReader<R> {
    /// Options used: `neg` (negative delays), `period_ns` (the length of a
    /// `t_*` trace).
    pub fn new(inner: R, opts: &TraceOptions) -> Self {
        CsvReader {
            lines: Lines::new(inner, MAX_LINE),
            neg: opts.neg,
            period_ns: opts.period_ns,
            header: Vec::new(),
            time: None,
            pending: None,
            clock_ns: None,
            rows: 0,
            done: false,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        self.lines.get_mut()
    }

    fn reset(&mut self) {
        self.lines.reset();
        self.header.clear();
        self.time = None;
        self.pending = None;
        self.clock_ns = None;
        self.rows = 0;
        self.done = false;
    }

    fn read_header(line: &Line<'_>, period_ns: Option<u64>) -> Result<(Vec<Col>, Col), TraceError> {
        let mut cols = Vec::new();
        let mut time = None;
        for (at, name) in line.fields() {
            let lower = name.to_ascii_lowercase();
            let Some(&(_, col)) = COLUMNS.iter().find(|(n, _)| *n == lower) else {
                return Err(line.err(
                    at,
                    ErrorKind::Header(format!(
                        "unknown column {name:?}: a time-indexed CSV starts with a header row: {COLUMN_LIST}"
                    )),
                ));
            };
            if cols.contains(&col) || (col.is_time() && time.is_some()) {
                return Err(line.err(
                    at,
                    ErrorKind::Header(format!("second time column or repeated column {name:?}")),
                ));
            }
            if col.is_time() {
                time = Some(col);
            }
            cols.push(col);
        }
        let Some(time) = time else {
            return Err(line.err(
                0,
                ErrorKind::Header(format!("no time column: {COLUMN_LIST}")),
            ));
        };
        if matches!(time, Col::DurUs | Col::DurMs) && period_ns.is_some() {
            return Err(line.err(
                0,
                ErrorKind::Option(
                    "period= is for t_us/t_ms traces; a dur_us trace lasts the sum of its durations"
                        .into(),
                ),
            ));
        }
        Ok((cols, time))
    }

    /// Parses a data row (without its end) and its time cell's position.
    fn parse_row(
        header: &[Col],
        neg: NegPolicy,
        line: &Line<'_>,
    ) -> Result<(CsvRow, Pos, u64), TraceError> {
        let n = line.fields().count();
        if n != header.len() {
            return Err(line.err(
                0,
                ErrorKind::FieldCount {
                    expected: header.len(),
                    found: n,
                },
            ));
        }
        let mut row = CsvRow {
            line: line.no,
            ..CsvRow::default()
        };
        let mut time = (
            0,
            Pos::Text {
                line: 0,
                col: 0,
                byte: 0,
            },
        );
        for (&col, (at, text)) in header.iter().zip(line.fields()) {
            if text.is_empty() {
                if col.is_time() {
                    return Err(line.err(at, not_number(col, text)));
                }
                continue;
            }
            match col {
                Col::TUs | Col::DurUs => {
                    time = (non_negative(line, at, text, col, 1_000)?, line.pos(at))
                }
                Col::TMs | Col::DurMs => {
                    time = (non_negative(line, at, text, col, 1_000_000)?, line.pos(at))
                }
                Col::Delay => row.delay_ns = Some(parse_delay(line, text, 1_000, neg, "delay_us")?),
                Col::Jitter => row.jitter_ns = Some(non_negative_delay(line, at, text)?),
                Col::Rate => {
                    let v = Decimal::parse(text)
                        .map(Decimal::to_f64)
                        .or_else(|| parse_bitrate_bps(text).ok())
                        .ok_or_else(|| line.err(at, not_number(col, text)))?;
                    if !(v > 0.0 && v.is_finite()) {
                        return Err(line.err(at, ErrorKind::RateNotPositive(v)));
                    }
                    row.rate_bps = Some(v);
                }
                Col::Loss => row.loss = Some(probability(line, at, text, col)?),
                Col::Dup => row.dup = Some(probability(line, at, text, col)?),
                Col::Corrupt => row.corrupt = Some(probability(line, at, text, col)?),
                Col::Reorder => row.reorder = Some(probability(line, at, text, col)?),
                Col::Limit => match parse_int(text) {
                    Some(v) if v >= 0 => row.limit = Some(v as u64),
                    Some(_) => {
                        return Err(line.err(
                            at,
                            ErrorKind::Negative {
                                what: "limit",
                                found: text.into(),
                            },
                        ))
                    }
                    None => return Err(line.err(at, not_number(col, text))),
                },
            }
        }
        Ok((row, time.1, time.0))
    }
}

fn not_number(col: Col, text: &str) -> ErrorKind {
    ErrorKind::NotNumber {
        what: col.name(),
        expected: match col {
            Col::Loss | Col::Dup | Col::Corrupt | Col::Reorder => {
                "a probability such as 0.01 or 1%"
            }
            Col::Limit => "a whole number of packets",
            Col::Rate => "a rate such as 1000000 or 12Mbit",
            _ => "a number",
        },
        found: text.to_string(),
    }
}

fn non_negative(
    line: &Line<'_>,
    at: usize,
    text: &str,
    col: Col,
    unit: u64,
) -> Result<u64, TraceError> {
    let d = Decimal::parse(text).ok_or_else(|| line.err(at, not_number(col, text)))?;
    let v = d
        .scaled(unit)
        .ok_or_else(|| line.err(at, ErrorKind::DelayTooLarge(text.into())))?;
    if v < 0 {
        return Err(line.err(
            at,
            ErrorKind::Negative {
                what: col.name(),
                found: text.into(),
            },
        ));
    }
    u64::try_from(v).map_err(|_| line.err(at, ErrorKind::DelayTooLarge(text.into())))
}

fn non_negative_delay(line: &Line<'_>, at: usize, text: &str) -> Result<u64, TraceError> {
    parse_delay(line, text, 1_000, NegPolicy::Error, "jitter_us").map_err(|e| match e.kind {
        ErrorKind::NegativeDelay(_) => line.err(
            at,
            ErrorKind::Negative {
                what: "jitter_us",
                found: text.into(),
            },
        ),
        _ => e,
    })
}

fn probability(line: &Line<'_>, at: usize, text: &str, col: Col) -> Result<f64, TraceError> {
    let (num, scale) = match text.strip_suffix('%') {
        Some(n) => (n.trim_end(), 100.0),
        None => (text, 1.0),
    };
    let v = Decimal::parse(num)
        .map(|d| d.to_f64() / scale)
        .ok_or_else(|| line.err(at, not_number(col, text)))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(line.err(
            at,
            ErrorKind::ProbabilityRange {
                what: col.name(),
                value: v,
            },
        ));
    }
    Ok(v)
}

impl<R: BufRead> Iterator for CsvReader<R> {
    type Item = Result<CsvRow, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Header, then at most two data rows (a `t_*` row waits for the next).
        for _ in 0..3 {
            if self.done {
                return None;
            }
            let line = match self.lines.next_line() {
                None => return self.at_eof(),
                Some(Err(e)) => {
                    if e.is_fatal() {
                        self.done = true;
                    }
                    return Some(Err(e));
                }
                Some(Ok(l)) => l,
            };
            if self.time.is_none() {
                match Self::read_header(&line, self.period_ns) {
                    Ok((cols, time)) => {
                        self.header = cols;
                        self.time = Some(time);
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            self.rows += 1;
            let (mut row, time_pos, t) = match Self::parse_row(&self.header, self.neg, &line) {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            match self.time {
                Some(Col::DurUs | Col::DurMs) => {
                    let start = self.clock_ns.unwrap_or(0);
                    let Some(end) = start.checked_add(t) else {
                        return Some(Err(line.err(0, ErrorKind::DelayTooLarge(format_us(t)))));
                    };
                    self.clock_ns = Some(end);
                    row.start_ns = start;
                    row.end_ns = Some(end);
                    return Some(Ok(row));
                }
                _ => {
                    if let Some(prev) = self.clock_ns.filter(|&p| t < p) {
                        return Some(Err(TraceError::new(
                            time_pos,
                            ErrorKind::Backwards {
                                prev: format!("{}us", format_us(prev)),
                                now: format!("{}us", format_us(t)),
                            },
                        )));
                    }
                    self.clock_ns = Some(t);
                    row.start_ns = t;
                    if let Some((mut prev, _)) = self.pending.replace((row, time_pos)) {
                        prev.end_ns = Some(t);
                        return Some(Ok(prev));
                    }
                }
            }
        }
        None
    }
}

impl<R: BufRead> CsvReader<R> {
    fn at_eof(&mut self) -> Option<Result<CsvRow, TraceError>> {
        self.done = true;
        if let Some((mut row, pos)) = self.pending.take() {
            if let Some(p) = self.period_ns {
                if p <= row.start_ns {
                    return Some(Err(TraceError::new(
                        pos,
                        ErrorKind::PeriodTooShort {
                            period: format!("{}us", format_us(p)),
                            last: format!("{}us", format_us(row.start_ns)),
                        },
                    )));
                }
            }
            row.end_ns = self.period_ns;
            return Some(Ok(row));
        }
        (self.rows == 0).then(|| Err(TraceError::new(self.lines.end_pos(), ErrorKind::Empty)))
    }
}

/// What is active at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup<'a> {
    /// Before the first row's start: no row applies.
    Before,
    Row(&'a CsvRow),
    /// Past the end of a trace whose end policy is not loop or hold: the
    /// caller applies stop, pass or drop.
    End,
}

/// "Which row is active at time t" over a streamed CSV trace, holding one
/// row. Times must not decrease: an earlier time is treated as the latest
/// one asked. Looping starts the input over ([`Restart`]) and jumps whole
/// trace lengths at once, so a long idle time reads at most one pass.
pub struct Timeline<R> {
    reader: CsvReader<R>,
    at_end: AtEnd,
    /// Absolute time of the current pass's 0.
    epoch_ns: u64,
    cur: Option<CsvRow>,
    last_t: u64,
    ended: bool,
    loops: u64,
}

impl<R: BufRead + Restart> Timeline<R> {
    pub fn new(reader: CsvReader<R>, at_end: AtEnd) -> Self {
        Timeline {
            reader,
            at_end,
            epoch_ns: 0,
            cur: None,
            last_t: 0,
            ended: false,
            loops: 0,
        }
    }

    /// Times the trace started over.
    pub fn loops(&self) -> u64 {
        self.loops
    }

    /// The row active at `t_ns` (ns from the trace's start). A bad row is
    /// returned as an error once and skipped.
    pub fn at(&mut self, t_ns: u64) -> Result<Lookup<'_>, TraceError> {
        let t = t_ns.max(self.last_t);
        self.last_t = t;
        let mut restarted = false;
        // Each turn reads one row or starts over once: bounded by one pass
        // of the input.
        loop {
            if self.ended {
                break;
            }
            let rel = t - self.epoch_ns;
            if self
                .cur
                .as_ref()
                .is_some_and(|r| r.end_ns.is_none_or(|e| rel < e))
            {
                break;
            }
            match self.reader.next() {
                Some(Ok(row)) => self.cur = Some(row),
                Some(Err(e)) => return Err(e),
                None => {
                    let len = self.cur.as_ref().and_then(|r| r.end_ns).unwrap_or(0);
                    if self.at_end != AtEnd::Loop || restarted || len == 0 {
                        self.ended = true;
                        continue;
                    }
                    self.reader.get_mut().restart().map_err(|e| {
                        TraceError::new(
                            Pos::Text {
                                line: 1,
                                col: 1,
                                byte: 0,
                            },
                            io_kind(&e),
                        )
                    })?;
                    self.reader.reset();
                    self.epoch_ns += rel / len * len;
                    self.loops += rel / len;
                    self.cur = None;
                    restarted = true;
                }
            }
        }
        if self.ended {
            return Ok(match (self.at_end, &self.cur) {
                (AtEnd::Hold, Some(r)) => Lookup::Row(r),
                _ => Lookup::End,
            });
        }
        let rel = t - self.epoch_ns;
        Ok(match &self.cur {
            Some(r) if rel >= r.start_ns => Lookup::Row(r),
            _ => Lookup::Before,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn opts(period: Option<u64>) -> TraceOptions {
        TraceOptions {
            period_ns: period,
            ..TraceOptions::default()
        }
    }

    fn read(text: &str, period: Option<u64>) -> Vec<Result<CsvRow, TraceError>> {
        CsvReader::new(text.as_bytes(), &opts(period))
            .take(1000)
            .collect()
    }

    fn errs(text: &str, period: Option<u64>) -> Vec<String> {
        read(text, period)
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| e.in_file("n.csv").to_string())
            .collect()
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn t_rows_step_until_the_next() {
        let rows: Vec<CsvRow> = read(
            "\u{feff}t_ms, delay_us,loss,rate_bps,jitter_us,dup,corrupt,reorder,limit\r\n\
             0,1000,0.01,12Mbit,100,,1%,0,50\r\n\
             # later\r\n\
             2.5,2ms,,1,,,,,\r\n\
             4,,,5000000,,,,,\r\n",
            Some(10 * MS),
        )
        .into_iter()
        .map(Result::unwrap)
        .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0],
            CsvRow {
                start_ns: 0,
                end_ns: Some(2_500_000),
                delay_ns: Some(MS),
                jitter_ns: Some(100_000),
                rate_bps: Some(12e6),
                loss: Some(0.01),
                dup: None,
                corrupt: Some(0.01),
                reorder: Some(0.0),
                limit: Some(50),
                line: 2,
            }
        );
        assert_eq!(
            (rows[1].start_ns, rows[1].end_ns),
            (2_500_000, Some(4 * MS))
        );
        assert_eq!(rows[1].delay_ns, Some(2 * MS));
        assert_eq!(rows[1].rate_bps, Some(1.0));
        assert_eq!(rows[1].line, 4);
        assert_eq!((rows[2].start_ns, rows[2].end_ns), (4 * MS, Some(10 * MS)));
        // Without period= the last row lasts forever.
        let last = read("t_us,loss\n0,0\n7,1\n", None).pop().unwrap().unwrap();
        assert_eq!(
            (last.start_ns, last.end_ns, last.loss),
            (7000, None, Some(1.0))
        );
    }

    #[test]
    fn docs_example() {
        let text =
            "t_ms,delay_us,loss,rate_bps\n0,1000,0.01,12Mbit\n2500,2ms,,\n4000,,1%,5000000\n";
        let rows: Vec<CsvRow> = read(text, Some(10_000 * MS))
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let got: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.start_ns / MS,
                    r.end_ns.map(|e| e / MS),
                    r.delay_ns,
                    r.loss,
                    r.rate_bps,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, Some(2500), Some(MS), Some(0.01), Some(12e6)),
                (2500, Some(4000), Some(2 * MS), None, None),
                (4000, Some(10_000), None, Some(0.01), Some(5e6)),
            ]
        );
    }

    #[test]
    fn dur_rows_follow_each_other() {
        let rows: Vec<(u64, Option<u64>)> = read("dur_us,delay_us\n100,1\n0,2\n50,3\n", None)
            .into_iter()
            .map(|r| r.map(|r| (r.start_ns, r.end_ns)).unwrap())
            .collect();
        assert_eq!(
            rows,
            [
                (0, Some(100_000)),
                (100_000, Some(100_000)),
                (100_000, Some(150_000))
            ]
        );
    }

    #[test]
    fn bad_input() {
        assert_eq!(errs("", None), ["n.csv:1:1: empty trace: no records"]);
        assert_eq!(
            errs("t_ms,loss\n# none\n", None),
            ["n.csv:3:1: empty trace: no records"]
        );
        assert_eq!(
            errs("t_ms,loss\n0,1.5\n", None),
            ["n.csv:2:3: loss 1.5 is outside [0, 1] (write 0.01 or 1% for one percent)"]
        );
        assert_eq!(
            errs("t_ms,dup\n0,-1%\n", None),
            ["n.csv:2:3: dup -0.01 is outside [0, 1] (write 0.01 or 1% for one percent)"]
        );
        assert_eq!(
            errs("t_ms,rate_bps\n0,0\n", None),
            ["n.csv:2:3: rate_bps must be > 0, found 0"]
        );
        assert_eq!(
            errs("t_ms,rate_bps\n0,-5\n", None),
            ["n.csv:2:3: rate_bps must be > 0, found -5"]
        );
        assert_eq!(
            errs("t_ms,loss\n0,0\n5,0\n 4,0\n6,0\n", None),
            ["n.csv:4:2: time 4000us goes backwards (previous 5000us)"]
        );
        assert_eq!(
            errs("t_ms,delay_us\n0,-3\n", None),
            ["n.csv:2:3: negative delay -3 (neg=zero makes negative delays 0)"]
        );
        assert_eq!(
            errs("t_ms,jitter_us\n0,-3\n", None),
            ["n.csv:2:3: jitter_us must not be negative, found -3"]
        );
        assert_eq!(
            errs("t_ms,loss\n0,abc\n", None),
            ["n.csv:2:3: loss: expected a probability such as 0.01 or 1%, found \"abc\""]
        );
        assert_eq!(
            errs("t_ms,loss\n0\n", None),
            ["n.csv:2:1: 1 fields, the header has 2"]
        );
        assert_eq!(
            errs("t_ms,lost\n0,1\n", None),
            [
                "n.csv:1:6: unknown column \"lost\": a time-indexed CSV starts with a header row: \
              t_us or t_ms or dur_us, then any of delay_us, jitter_us, rate_bps, loss, dup, \
              corrupt, reorder, limit"
            ]
        );
        assert_eq!(
            errs("delay_us\n1\n", None),
            [
                "n.csv:1:1: no time column: t_us or t_ms or dur_us, then any of delay_us, \
              jitter_us, rate_bps, loss, dup, corrupt, reorder, limit"
            ]
        );
        assert_eq!(
            errs("t_ms,loss\n0,0\n10,0\n", Some(10 * MS)),
            ["n.csv:3:1: period 10000us is not after the last row's time 10000us"]
        );
        assert_eq!(
            errs("dur_ms,loss\n1,0\n", Some(MS)),
            ["n.csv:1:1: period= is for t_us/t_ms traces; a dur_us trace lasts the sum of its durations"]
        );
        assert_eq!(
            errs("t_ms,limit\n0,-1\n", None),
            ["n.csv:2:3: limit must not be negative, found -1"]
        );
    }

    fn timeline(text: &str, period: Option<u64>, at_end: AtEnd) -> Timeline<Cursor<Vec<u8>>> {
        Timeline::new(
            CsvReader::new(Cursor::new(text.as_bytes().to_vec()), &opts(period)),
            at_end,
        )
    }

    fn delay_at(tl: &mut Timeline<Cursor<Vec<u8>>>, t: u64) -> Option<u64> {
        match tl.at(t).unwrap() {
            Lookup::Row(r) => r.delay_ns.map(|d| d / 1000),
            Lookup::Before => Some(u64::MAX),
            Lookup::End => None,
        }
    }

    const TRACE: &str = "t_ms,delay_us\n1,10\n3,30\n6,60\n";

    #[test]
    fn timeline_finds_the_active_row() {
        let mut tl = timeline(TRACE, Some(8 * MS), AtEnd::Stop);
        let got: Vec<_> = [0, MS, 2 * MS, 3 * MS - 1, 3 * MS, 7 * MS, 8 * MS, 100 * MS]
            .into_iter()
            .map(|t| delay_at(&mut tl, t))
            .collect();
        assert_eq!(
            got,
            [
                Some(u64::MAX),
                Some(10),
                Some(10),
                Some(10),
                Some(30),
                Some(60),
                None,
                None
            ]
        );
        // Time does not go back.
        assert_eq!(delay_at(&mut tl, 0), None);
    }

    #[test]
    fn timeline_loops_and_holds() {
        let mut tl = timeline(TRACE, Some(8 * MS), AtEnd::Loop);
        let got: Vec<_> = [
            7 * MS,
            8 * MS,
            9 * MS,
            11 * MS,
            8_000_006 * MS,
            8_000_009 * MS,
        ]
        .into_iter()
        .map(|t| delay_at(&mut tl, t))
        .collect();
        assert_eq!(
            got,
            [
                Some(60),
                Some(u64::MAX),
                Some(10),
                Some(30),
                Some(60),
                Some(10)
            ]
        );
        assert_eq!(tl.loops(), 1_000_001);
        let mut tl = timeline(TRACE, Some(8 * MS), AtEnd::Hold);
        assert_eq!(delay_at(&mut tl, 50 * MS), Some(60));
        // Without a period the last row is open-ended: it never ends.
        let mut tl = timeline(TRACE, None, AtEnd::Stop);
        assert_eq!(delay_at(&mut tl, 1 << 60), Some(60));
        // dur rows loop by their sum.
        let mut tl = timeline("dur_ms,delay_us\n2,1\n2,2\n", None, AtEnd::Loop);
        assert_eq!(delay_at(&mut tl, 5 * MS), Some(1));
        assert_eq!(delay_at(&mut tl, 7 * MS), Some(2));
    }

    #[test]
    fn timeline_reports_a_bad_row_once() {
        let mut tl = timeline("t_ms,delay_us\n0,1\n1,x\n2,3\n", None, AtEnd::Stop);
        // Row 2 is read ahead (it ends row 1), so its error comes first.
        assert!(tl.at(0).is_err());
        assert_eq!(delay_at(&mut tl, 0), Some(1));
        assert_eq!(delay_at(&mut tl, MS), Some(1));
        assert_eq!(delay_at(&mut tl, 2 * MS), Some(3));
    }
}
