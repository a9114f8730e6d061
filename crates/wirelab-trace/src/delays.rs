//! The delays format: one delay per line, or a drop.
//!
//! A line is a decimal number with an optional unit (`ns`, `us`/`µs`,
//! `ms`, `s`; no unit means µs), blanks allowed between them: `1500`,
//! `1.5ms`, `20 us`, `0.1s`. `drop`, `x` and `nan` (any case) drop the
//! packet. Delays are kept to the nanosecond (rounded); a negative delay is
//! an error unless `neg=zero`. There is no duplicate: convert to pkt-csv or
//! nist for that.

use std::io::{BufRead, Write};

use super::error::{ErrorKind, TraceError, WriteError};
use super::format::NegPolicy;
use super::lines::{format_us, Decimal, Line, RecordLines};
use super::Action;

/// Nanoseconds per unit, by unit name.
fn unit_ns(unit: &str) -> Option<u64> {
    match unit {
        "" | "us" | "µs" | "μs" => Some(1_000),
        "ns" => Some(1),
        "ms" => Some(1_000_000),
        "s" => Some(1_000_000_000),
        _ => None,
    }
}

/// Parses a delay with an optional unit (default `default_unit` ns) into
/// ns, applying `neg`. `what` names the value in errors.
pub(crate) fn parse_delay(
    line: &Line<'_>,
    text: &str,
    default_unit: u64,
    neg: NegPolicy,
    what: &'static str,
) -> Result<u64, TraceError> {
    let at = line.offset_of(text);
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '+' | '-' | '.')))
        .unwrap_or(text.len());
    let (num, unit) = (&text[..split], text[split..].trim_start());
    let not_number = || {
        line.err(
            at,
            ErrorKind::NotNumber {
                what,
                expected: "a number such as 1500 or 1.5ms",
                found: text.to_string(),
            },
        )
    };
    let d = Decimal::parse(num).ok_or_else(not_number)?;
    let unit_ns = if unit.is_empty() {
        default_unit
    } else {
        unit_ns(unit)
            .ok_or_else(|| line.err(line.offset_of(unit), ErrorKind::UnknownUnit(unit.into())))?
    };
    let ns = d
        .scaled(unit_ns)
        .filter(|&v| v.unsigned_abs() <= u128::from(u64::MAX))
        .ok_or_else(|| line.err(at, ErrorKind::DelayTooLarge(text.to_string())))?;
    if ns < 0 {
        return match neg {
            NegPolicy::Error => Err(line.err(at, ErrorKind::NegativeDelay(text.to_string()))),
            NegPolicy::Zero => Ok(0),
        };
    }
    Ok(ns as u64)
}

/// Streaming reader of the delays format.
pub struct DelaysReader<R> {
    lines: RecordLines<R>,
    neg: NegPolicy,
}

impl<R: BufRead> DelaysReader<R> {
    pub fn new(inner: R, neg: NegPolicy) -> Self {
        DelaysReader {
            lines: RecordLines::new(inner),
            neg,
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

impl<R: BufRead> Iterator for DelaysReader<R> {
    type Item = Result<Action, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let neg = self.neg;
        self.lines.next_with(|line| {
            let t = line.text;
            if t.eq_ignore_ascii_case("drop")
                || t.eq_ignore_ascii_case("x")
                || t.eq_ignore_ascii_case("nan")
            {
                return Ok(Action::Drop);
            }
            parse_delay(line, t, 1_000, neg, "delay").map(|delay_ns| Action::Delay { delay_ns })
        })
    }
}

/// Writes the delays format: µs without a unit (`1500`, `1500.25`), `drop`.
pub struct DelaysWriter<W> {
    out: W,
}

impl<W: Write> DelaysWriter<W> {
    pub fn new(out: W) -> Self {
        DelaysWriter { out }
    }

    pub fn write(&mut self, action: &Action) -> Result<(), WriteError> {
        match *action {
            Action::Delay { delay_ns } => writeln!(self.out, "{}", format_us(delay_ns))?,
            Action::Drop => writeln!(self.out, "drop")?,
            Action::Duplicate { .. } => {
                return Err(WriteError::Unrepresentable(
                    "the delays format has no duplicate (use pkt-csv, nist-bin or nist-txt)".into(),
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

    fn read(text: &str, neg: NegPolicy) -> Vec<Result<Action, TraceError>> {
        DelaysReader::new(text.as_bytes(), neg).take(1000).collect()
    }

    fn d(us: f64) -> Action {
        Action::Delay {
            delay_ns: (us * 1000.0).round() as u64,
        }
    }

    #[test]
    fn units_and_drops() {
        let got = read(
            "1500\n1.5ms\n20us\n0.1s\n 7 µs \n250ns\nDROP\nx\nNaN\n+3\n.5\n1.0005\n",
            NegPolicy::Error,
        );
        let want = [
            d(1500.0),
            d(1500.0),
            d(20.0),
            d(100_000.0),
            d(7.0),
            d(0.25),
            Action::Drop,
            Action::Drop,
            Action::Drop,
            d(3.0),
            d(0.5),
            d(1.001),
        ];
        assert_eq!(got, want.map(Ok));
    }

    #[test]
    fn round_trip() {
        let actions: Vec<Action> = (0..500u64)
            .map(|i| {
                if i % 7 == 3 {
                    Action::Drop
                } else {
                    Action::Delay {
                        delay_ns: i * i * 997,
                    }
                }
            })
            .collect();
        let mut w = DelaysWriter::new(Vec::new());
        for a in &actions {
            w.write(a).unwrap();
        }
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert!(text.starts_with("0\n0.997\n3.988\ndrop\n"), "{text}");
        let back: Vec<Action> = DelaysReader::new(text.as_bytes(), NegPolicy::Error)
            .map(Result::unwrap)
            .collect();
        assert_eq!(back, actions);
        let mut w = DelaysWriter::new(Vec::new());
        assert!(w.write(&Action::Duplicate { delay_ns: 1 }).is_err());
    }

    #[test]
    fn bad_input() {
        let msg = |text: &str, neg| -> Vec<String> {
            read(text, neg)
                .into_iter()
                .filter_map(|r| r.err())
                .map(|e| e.in_file("d.txt").to_string())
                .collect()
        };
        let e = NegPolicy::Error;
        assert_eq!(
            msg("\n# nothing\n", e),
            ["d.txt:3:1: empty trace: no records"]
        );
        assert_eq!(
            msg("1\n\t fast\n", e),
            ["d.txt:2:3: delay: expected a number such as 1500 or 1.5ms, found \"fast\""]
        );
        assert_eq!(
            msg("10 min\n", e),
            ["d.txt:1:4: unknown unit \"min\": use ns, us, ms or s (no unit means us)"]
        );
        assert_eq!(
            msg("1\n2\n -1.5ms\n", e),
            ["d.txt:3:2: negative delay -1.5ms (neg=zero makes negative delays 0)"]
        );
        assert_eq!(
            read("-1.5ms\n4", NegPolicy::Zero),
            vec![Ok(d(0.0)), Ok(d(4.0))]
        );
        assert_eq!(
            msg("99999999999999s\n", e),
            ["d.txt:1:1: delay 99999999999999s is too large"]
        );
        assert_eq!(msg("1e3\n", e).len(), 1);
    }
}
