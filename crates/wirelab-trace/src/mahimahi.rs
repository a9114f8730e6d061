//! Mahimahi delivery-opportunity traces (mm-link).
//!
//! One integer per line: a time in ms at which the link can deliver one
//! 1500-byte packet; times never decrease, a repeated time is several
//! opportunities in that ms. The last time is the trace's period (> 0):
//! looping, opportunity `t` of pass `k` is at `t + k * period`.

use std::io::{BufRead, Write};

use super::end::Restart;
use super::error::{io_kind, ErrorKind, Pos, TraceError, WriteError};
use super::lines::{parse_int, Lines, MAX_LINE};
use super::nist::split_token;

/// Streaming reader of one pass: each opportunity's time in ms. After the
/// last value it checks the period (the last value) is > 0.
pub struct MahimahiReader<R> {
    lines: Lines<R>,
    prev: Option<u64>,
    /// Position of the last good value (for the period error).
    prev_pos: Option<Pos>,
    done: bool,
}

impl<R: BufRead> MahimahiReader<R> {
    pub fn new(inner: R) -> Self {
        MahimahiReader {
            lines: Lines::new(inner, MAX_LINE),
            prev: None,
            prev_pos: None,
            done: false,
        }
    }

    /// The last value read so far: after the end, the period.
    pub fn last_time(&self) -> Option<u64> {
        self.prev
    }

    pub fn get_mut(&mut self) -> &mut R {
        self.lines.get_mut()
    }

    fn reset(&mut self) {
        self.lines.reset();
        self.prev = None;
        self.prev_pos = None;
        self.done = false;
    }
}

impl<R: BufRead> Iterator for MahimahiReader<R> {
    type Item = Result<u64, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let line = match self.lines.next_line() {
            None => {
                self.done = true;
                return match (self.prev, self.prev_pos) {
                    (None, _) => Some(Err(TraceError::new(self.lines.end_pos(), ErrorKind::Empty))),
                    (Some(0), Some(pos)) => Some(Err(TraceError::new(pos, ErrorKind::PeriodZero))),
                    _ => None,
                };
            }
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(l)) => l,
        };
        let (tok, rest) = split_token(line.text);
        if !rest.is_empty() {
            return Some(Err(
                line.err(line.offset_of(rest), ErrorKind::Trailing(rest.to_string()))
            ));
        }
        let v = match parse_int(tok) {
            Some(v) if v < 0 => {
                return Some(Err(line.err(
                    0,
                    ErrorKind::Negative {
                        what: "Mahimahi time",
                        found: tok.to_string(),
                    },
                )))
            }
            Some(v) => v as u64,
            None => {
                return Some(Err(line.err(
                    0,
                    ErrorKind::NotNumber {
                        what: "Mahimahi time",
                        expected: "an integer number of ms",
                        found: tok.to_string(),
                    },
                )))
            }
        };
        if let Some(p) = self.prev {
            if v < p {
                return Some(Err(line.err(
                    0,
                    ErrorKind::Backwards {
                        prev: format!("{p}ms"),
                        now: format!("{v}ms"),
                    },
                )));
            }
        }
        self.prev = Some(v);
        self.prev_pos = Some(line.pos(0));
        Some(Ok(v))
    }
}

/// Delivery opportunities in absolute ms, looping by the period or once.
/// Errors are passed on (a bad line is skipped by the reader); a pass that
/// yields no opportunity ends the sequence.
pub struct Opportunities<R> {
    reader: MahimahiReader<R>,
    repeat: bool,
    /// Start of the current pass, ms.
    offset: u64,
    /// The last time of the first complete pass.
    period: Option<u64>,
    pass_any: bool,
    loops: u64,
    done: bool,
}

impl<R: BufRead + Restart> Opportunities<R> {
    /// `repeat`: loop by the period (mm-link's default); else once.
    pub fn new(inner: R, repeat: bool) -> Self {
        Opportunities {
            reader: MahimahiReader::new(inner),
            repeat,
            offset: 0,
            period: None,
            pass_any: false,
            loops: 0,
            done: false,
        }
    }

    /// Completed passes.
    pub fn loops(&self) -> u64 {
        self.loops
    }

    /// The period, once the first pass is complete.
    pub fn period(&self) -> Option<u64> {
        self.period
    }
}

impl<R: BufRead + Restart> Iterator for Opportunities<R> {
    type Item = Result<u64, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        for _ in 0..2 {
            if self.done {
                return None;
            }
            match self.reader.next() {
                Some(Ok(t)) => {
                    self.pass_any = true;
                    // Past u64 ms (only with absurd periods) the sequence ends.
                    let Some(at) = self.offset.checked_add(t) else {
                        self.done = true;
                        return None;
                    };
                    return Some(Ok(at));
                }
                Some(Err(e)) => {
                    if e.is_fatal() {
                        self.done = true;
                    }
                    return Some(Err(e));
                }
                None => {
                    let period = self.reader.last_time().unwrap_or(0);
                    self.period.get_or_insert(period);
                    if !self.repeat || !self.pass_any || period == 0 {
                        self.done = true;
                        return None;
                    }
                    if let Err(e) = self.reader.get_mut().restart() {
                        self.done = true;
                        return Some(Err(TraceError::new(
                            Pos::Text {
                                line: 1,
                                col: 1,
                                byte: 0,
                            },
                            io_kind(&e),
                        )));
                    }
                    self.reader.reset();
                    let Some(offset) = self.offset.checked_add(period) else {
                        self.done = true;
                        return None;
                    };
                    self.offset = offset;
                    self.loops += 1;
                    self.pass_any = false;
                }
            }
        }
        self.done = true;
        None
    }
}

/// Writes opportunity times, one per line, checking what the reader
/// checks: times never decrease and the last (the period) is > 0.
pub struct MahimahiWriter<W> {
    out: W,
    prev: Option<u64>,
}

impl<W: Write> MahimahiWriter<W> {
    pub fn new(out: W) -> Self {
        MahimahiWriter { out, prev: None }
    }

    pub fn write(&mut self, t_ms: u64) -> Result<(), WriteError> {
        if let Some(p) = self.prev.filter(|&p| t_ms < p) {
            return Err(WriteError::Unrepresentable(format!(
                "Mahimahi time {t_ms}ms goes backwards (previous {p}ms)"
            )));
        }
        writeln!(self.out, "{t_ms}")?;
        self.prev = Some(t_ms);
        Ok(())
    }

    /// Flushes and returns the output; an empty trace or a period of 0 is
    /// refused.
    pub fn finish(mut self) -> Result<W, WriteError> {
        match self.prev {
            None => Err(WriteError::Unrepresentable("empty Mahimahi trace".into())),
            Some(0) => Err(WriteError::Unrepresentable(
                "Mahimahi period (the last time) is 0".into(),
            )),
            Some(_) => {
                self.out.flush()?;
                Ok(self.out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn read(text: &str) -> Vec<Result<u64, TraceError>> {
        MahimahiReader::new(text.as_bytes()).take(1000).collect()
    }

    fn errs(text: &str) -> Vec<String> {
        read(text)
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| e.in_file("l.up").to_string())
            .collect()
    }

    #[test]
    fn reads_and_writes_back() {
        let got: Vec<u64> = read("0\r\n5\n5\n# x\n12")
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, [0, 5, 5, 12]);
        let mut w = MahimahiWriter::new(Vec::new());
        for &t in &got {
            w.write(t).unwrap();
        }
        let out = w.finish().unwrap();
        assert_eq!(out, b"0\n5\n5\n12\n");
        let mut w = MahimahiWriter::new(Vec::new());
        w.write(3).unwrap();
        assert!(w.write(2).is_err());
        let mut w = MahimahiWriter::new(Vec::new());
        w.write(0).unwrap();
        assert!(w.finish().is_err());
        let back: Vec<u64> = read(std::str::from_utf8(&out).unwrap())
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back, got);
    }

    #[test]
    fn loops_by_period() {
        let mut o = Opportunities::new(Cursor::new(b"1\n3\n3\n".to_vec()), true);
        let got: Vec<u64> = o.by_ref().take(7).map(Result::unwrap).collect();
        assert_eq!(got, [1, 3, 3, 4, 6, 6, 7]);
        assert_eq!(o.period(), Some(3));
        let once: Vec<u64> = Opportunities::new(Cursor::new(b"1\n3\n".to_vec()), false)
            .take(10)
            .map(Result::unwrap)
            .collect();
        assert_eq!(once, [1, 3]);
    }

    #[test]
    fn bad_input() {
        assert_eq!(errs("# c\n"), ["l.up:2:1: empty trace: no records"]);
        assert_eq!(
            errs("0\n0\n"),
            ["l.up:2:1: Mahimahi period is 0: the last timestamp is the trace's period and must be > 0"]
        );
        assert_eq!(
            errs("1\n5\n 4\n6\n"),
            ["l.up:3:2: time 4ms goes backwards (previous 5ms)"]
        );
        assert_eq!(
            errs("1\n1.5\n"),
            ["l.up:2:1: Mahimahi time: expected an integer number of ms, found \"1.5\""]
        );
        assert_eq!(
            errs("-1\n2\n"),
            ["l.up:1:1: Mahimahi time must not be negative, found -1"]
        );
        // A zero period never loops.
        let mut o = Opportunities::new(Cursor::new(b"0\n".to_vec()), true);
        assert_eq!(o.next(), Some(Ok(0)));
        assert!(matches!(o.next(), Some(Err(e)) if e.kind == ErrorKind::PeriodZero));
        assert_eq!(o.next(), None);
    }
}
