//! pkt-csv: one `action,delay_us` row per packet.
//!
//! `action` is `pass`, `drop`, `dup` (also `duplicate`) or `corrupt` (pass
//! with one bit flipped), any case; `delay_us` a decimal number of µs
//! (fractions to the ns). A missing or empty delay is 0; a drop's delay is
//! ignored. An optional header row `action,delay_us` may come first.
//! Fields are not quoted.

use std::io::{BufRead, Write};

use super::delays::parse_delay;
use super::error::{ErrorKind, TraceError, WriteError};
use super::format::NegPolicy;
use super::lines::{format_us, RecordLines};
use super::{Action, Record};

/// The header row the writer writes and the reader accepts.
pub const HEADER: &str = "action,delay_us";

/// A pkt-csv action name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PktAction {
    Pass,
    Drop,
    Dup,
    Corrupt,
}

/// Parses an action name (lower case).
pub(crate) fn parse_action(s: &str) -> Option<PktAction> {
    match s {
        "pass" => Some(PktAction::Pass),
        "drop" => Some(PktAction::Drop),
        "dup" | "duplicate" => Some(PktAction::Dup),
        "corrupt" => Some(PktAction::Corrupt),
        _ => None,
    }
}

/// Streaming pkt-csv reader.
pub struct PktCsvReader<R> {
    lines: RecordLines<R>,
    neg: NegPolicy,
    /// Lines with content read (the header included).
    rows: u64,
}

impl<R: BufRead> PktCsvReader<R> {
    pub fn new(inner: R, neg: NegPolicy) -> Self {
        PktCsvReader {
            lines: RecordLines::new(inner),
            neg,
            rows: 0,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        self.lines.get_mut()
    }

    /// Capacity of the line buffer (bounded by the line limit).
    pub fn buffer_capacity(&self) -> usize {
        self.lines.buffer_capacity()
    }
}

/// A pkt-csv row: the header, or a record.
enum Row {
    Header,
    Record(Record),
}

impl<R: BufRead> Iterator for PktCsvReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        // At most the header, then a record.
        for _ in 0..2 {
            let neg = self.neg;
            let first = self.rows == 0;
            let mut bad_header = false;
            let rows = &mut self.rows;
            let row = self.lines.next_with(|line| {
                *rows += 1;
                let mut fields = line.fields();
                let (a_at, a) = fields.next().unwrap_or((0, ""));
                let a = a.to_ascii_lowercase();
                if first && a == "action" {
                    bad_header = true;
                    let (d_at, d) = fields.next().unwrap_or((line.text.len(), ""));
                    if !d.eq_ignore_ascii_case("delay_us") {
                        return Err(line.err(
                            d_at,
                            ErrorKind::Header(format!(
                                "pkt-csv header {:?}: expected \"{HEADER}\"",
                                line.text
                            )),
                        ));
                    }
                    if let Some((at, extra)) = fields.next() {
                        return Err(line.err(
                            at,
                            ErrorKind::Header(format!(
                                "pkt-csv header has an extra column {extra:?}: expected \"{HEADER}\""
                            )),
                        ));
                    }
                    bad_header = false;
                    return Ok(Row::Header);
                }
                let Some(action) = parse_action(&a) else {
                    return Err(line.err(a_at, ErrorKind::UnknownAction(a)));
                };
                let delay = fields.next();
                if let Some((at, extra)) = fields.next() {
                    return Err(line.err(at, ErrorKind::Trailing(extra.to_string())));
                }
                let delay_ns = match delay {
                    Some((_, d)) if !d.is_empty() && action != PktAction::Drop => {
                        parse_delay(line, d, 1_000, neg, "delay_us")?
                    }
                    _ => 0,
                };
                Ok(Row::Record(match action {
                    PktAction::Pass => Record::from(Action::Delay { delay_ns }),
                    PktAction::Drop => Record::from(Action::Drop),
                    PktAction::Dup => Record::from(Action::Duplicate { delay_ns }),
                    PktAction::Corrupt => Record {
                        action: Action::Delay { delay_ns },
                        corrupt: true,
                    },
                }))
            })?;
            if bad_header {
                // A header the reader cannot follow: nothing after it is read.
                self.lines.finish();
            }
            match row {
                Ok(Row::Header) => self.lines.not_a_record(),
                Ok(Row::Record(rec)) => return Some(Ok(rec)),
                Err(e) => return Some(Err(e)),
            }
        }
        // Two header rows in a row cannot happen: the header is only row 1.
        None
    }
}

/// Writes pkt-csv with the header row.
pub struct PktCsvWriter<W> {
    out: W,
}

impl<W: Write> PktCsvWriter<W> {
    /// Writes the header.
    pub fn new(mut out: W) -> std::io::Result<Self> {
        writeln!(out, "{HEADER}")?;
        Ok(PktCsvWriter { out })
    }

    pub fn write(&mut self, rec: &Record) -> Result<(), WriteError> {
        match (rec.action, rec.corrupt) {
            (Action::Delay { delay_ns }, false) => {
                writeln!(self.out, "pass,{}", format_us(delay_ns))?
            }
            (Action::Delay { delay_ns }, true) => {
                writeln!(self.out, "corrupt,{}", format_us(delay_ns))?
            }
            (Action::Drop, _) => writeln!(self.out, "drop,0")?,
            (Action::Duplicate { delay_ns }, false) => {
                writeln!(self.out, "dup,{}", format_us(delay_ns))?
            }
            (Action::Duplicate { .. }, true) => {
                return Err(WriteError::Unrepresentable(
                    "pkt-csv has no corrupted duplicate".into(),
                ))
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<Result<Record, TraceError>> {
        PktCsvReader::new(text.as_bytes(), NegPolicy::Error)
            .take(1000)
            .collect()
    }

    fn pass(us: u64) -> Record {
        Action::Delay {
            delay_ns: us * 1000,
        }
        .into()
    }

    #[test]
    fn rows_with_and_without_header() {
        let body = "pass,1000\ndrop\n DUP , 2000.5 \ncorrupt,500\npass,\npass\ndrop,77\n";
        let want = vec![
            Ok(pass(1000)),
            Ok(Action::Drop.into()),
            Ok(Action::Duplicate {
                delay_ns: 2_000_500,
            }
            .into()),
            Ok(Record {
                action: Action::Delay { delay_ns: 500_000 },
                corrupt: true,
            }),
            Ok(pass(0)),
            Ok(pass(0)),
            Ok(Action::Drop.into()),
        ];
        assert_eq!(read(body), want);
        assert_eq!(read(&format!("# x\r\nAction , Delay_us\r\n{body}")), want);
    }

    #[test]
    fn round_trip() {
        let recs: Vec<Record> = (0..400u64)
            .map(|i| match i % 4 {
                0 => pass(i),
                1 => Action::Drop.into(),
                2 => Action::Duplicate { delay_ns: i * 1001 }.into(),
                _ => Record {
                    action: Action::Delay { delay_ns: i * 3 },
                    corrupt: true,
                },
            })
            .collect();
        let mut w = PktCsvWriter::new(Vec::new()).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert!(text.starts_with("action,delay_us\npass,0\ndrop,0\ndup,2.002\ncorrupt,0.009\n"));
        let back: Vec<Record> = read(&text).into_iter().map(Result::unwrap).collect();
        assert_eq!(back, recs);
    }

    #[test]
    fn bad_input() {
        let msg = |text: &str| -> Vec<String> {
            read(text)
                .into_iter()
                .filter_map(|r| r.err())
                .map(|e| e.in_file("p.csv").to_string())
                .collect()
        };
        assert_eq!(
            msg("action,delay_us\n"),
            ["p.csv:2:1: empty trace: no records"]
        );
        assert_eq!(
            msg("pass,1\nskip,2\n"),
            ["p.csv:2:1: unknown action \"skip\": use pass, drop, dup or corrupt"]
        );
        assert_eq!(
            msg("pass, 1x\n"),
            ["p.csv:1:8: unknown unit \"x\": use ns, us, ms or s (no unit means us)"]
        );
        assert_eq!(
            msg("pass,abc\n"),
            ["p.csv:1:6: delay_us: expected a number such as 1500 or 1.5ms, found \"abc\""]
        );
        assert_eq!(
            msg("dup,-3\n"),
            ["p.csv:1:5: negative delay -3 (neg=zero makes negative delays 0)"]
        );
        assert_eq!(
            msg("pass,1,2\n"),
            ["p.csv:1:8: unexpected text \"2\" after the value"]
        );
        assert_eq!(
            msg("action,delay\npass,1\n"),
            ["p.csv:1:8: pkt-csv header \"action,delay\": expected \"action,delay_us\""]
        );
    }
}
