//! The line layer every text format shares.
//!
//! Contracts: a UTF-8 byte-order mark before the first line is skipped;
//! lines end in LF or CRLF, the last may have no newline; `#` starts a
//! comment to the end of the line; blank lines, comment-only lines and
//! leading/trailing blanks are ignored. A line longer than the reader's
//! limit is an error (its bytes are skipped, never stored), so memory is
//! bounded by the limit, not by the input.

use std::io::{BufRead, ErrorKind as IoKind};

use super::error::{io_kind, ErrorKind, Pos, TraceError};

/// Longest line the record formats accept.
pub(crate) const MAX_LINE: usize = 4096;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A non-blank line: its text without newline, comment and outer blanks.
pub(crate) struct Line<'a> {
    /// The whole line (after a BOM, without the newline).
    raw: &'a str,
    /// Offset of the content in `raw`.
    start: usize,
    /// The content: trimmed, without comment.
    pub text: &'a str,
    /// 1-based line number.
    pub no: u64,
    /// Byte offset of `raw` in the input.
    byte: u64,
}

impl<'a> Line<'a> {
    /// The position of byte `idx` of `text`.
    pub fn pos(&self, idx: usize) -> Pos {
        let at = self.start + idx;
        Pos::Text {
            line: self.no,
            col: self.raw[..at].chars().count() as u64 + 1,
            byte: self.byte + at as u64,
        }
    }

    /// An error at byte `idx` of `text`.
    pub fn err(&self, idx: usize, kind: ErrorKind) -> TraceError {
        TraceError::new(self.pos(idx), kind)
    }

    /// The byte offset of `part` (a subslice of `text`) in `text`.
    pub fn offset_of(&self, part: &str) -> usize {
        (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize)
    }

    /// The comma-separated fields of `text`, trimmed, each with its offset.
    pub fn fields(&self) -> impl Iterator<Item = (usize, &'a str)> + '_ {
        self.text.split(',').map(move |f| {
            let t = f.trim();
            let idx = if t.is_empty() {
                self.offset_of(f)
            } else {
                self.offset_of(t)
            };
            (idx, t)
        })
    }
}

/// [`Lines`] of a format with one record per line: the records counted,
/// and at the end of an input that held none a single `Empty` error; after
/// the end, nothing.
pub(crate) struct RecordLines<R> {
    lines: Lines<R>,
    /// Lines read as records (a line set aside as a header is not one).
    records: u64,
    done: bool,
}

impl<R: BufRead> RecordLines<R> {
    pub fn new(inner: R) -> Self {
        RecordLines {
            lines: Lines::new(inner, MAX_LINE),
            records: 0,
            done: false,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        self.lines.get_mut()
    }

    /// Capacity of the line buffer: bounded by the line limit.
    pub fn buffer_capacity(&self) -> usize {
        self.lines.buffer_capacity()
    }

    /// Ends the input (after an error no later line can mend).
    pub fn finish(&mut self) {
        self.done = true;
    }

    /// The line just read was a header, not a record.
    pub fn not_a_record(&mut self) {
        self.records = self.records.saturating_sub(1);
    }

    /// `parse` of the next line with content, counted as a record; at the
    /// end `None`, or the `Empty` error if no line was a record. Line
    /// errors (too long, not UTF-8, I/O) come as they are.
    pub fn next_with<T>(
        &mut self,
        parse: impl FnOnce(&Line<'_>) -> Result<T, TraceError>,
    ) -> Option<Result<T, TraceError>> {
        if self.done {
            return None;
        }
        let got = match self.lines.next_line() {
            None => None,
            Some(Err(e)) => Some(Err(e)),
            Some(Ok(line)) => {
                self.records += 1;
                Some(parse(&line))
            }
        };
        if got.is_none() {
            self.done = true;
            return (self.records == 0)
                .then(|| Err(TraceError::new(self.lines.end_pos(), ErrorKind::Empty)));
        }
        got
    }
}

/// Reads lines of at most `max` bytes from a `BufRead`.
pub(crate) struct Lines<R> {
    inner: R,
    buf: Vec<u8>,
    max: usize,
    /// Number of the line last read; 0 before the first.
    line_no: u64,
    /// Byte offset of the next line.
    next_byte: u64,
    /// Whether the last line read ended with a newline.
    last_newline: bool,
    /// Characters in the last line read (for the end-of-input position).
    last_chars: u64,
    /// An I/O error was returned: the reader stays at its end.
    failed: bool,
}

/// Where the raw line sits in `buf`.
struct RawLine {
    start: usize,
    end: usize,
    byte: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Lines {
            inner,
            buf: Vec::new(),
            max,
            line_no: 0,
            next_byte: 0,
            last_newline: true,
            last_chars: 0,
            failed: false,
        }
    }

    /// Back to the state of a fresh reader over `inner` (after the caller
    /// rewound it).
    pub fn reset(&mut self) {
        self.line_no = 0;
        self.next_byte = 0;
        self.last_newline = true;
        self.last_chars = 0;
        self.failed = false;
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Capacity of the line buffer: bounded by the line limit.
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The position just after the input's last byte (for errors about
    /// the whole trace, such as "empty").
    pub fn end_pos(&self) -> Pos {
        if self.last_newline {
            Pos::Text {
                line: self.line_no + 1,
                col: 1,
                byte: self.next_byte,
            }
        } else {
            Pos::Text {
                line: self.line_no,
                col: self.last_chars + 1,
                byte: self.next_byte,
            }
        }
    }

    /// The next line with content; `None` at the end of the input.
    /// Errors (I/O, not UTF-8, too long) are per line: after a non-fatal
    /// one the next call reads the following line.
    pub fn next_line(&mut self) -> Option<Result<Line<'_>, TraceError>> {
        loop {
            let raw = match self.read_raw() {
                Ok(Some(raw)) => raw,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            let text = match std::str::from_utf8(&self.buf[raw.start..raw.end]) {
                Ok(t) => t,
                Err(e) => {
                    let ok = &self.buf[raw.start..raw.start + e.valid_up_to()];
                    let col = std::str::from_utf8(ok).map_or(0, |s| s.chars().count()) as u64;
                    return Some(Err(TraceError::new(
                        Pos::Text {
                            line: self.line_no,
                            col: col + 1,
                            byte: raw.byte + e.valid_up_to() as u64,
                        },
                        ErrorKind::InvalidUtf8,
                    )));
                }
            };
            if !self.last_newline {
                self.last_chars = text.chars().count() as u64;
            }
            let body = text.split('#').next().unwrap_or("");
            let trimmed = body.trim_end();
            let content = trimmed.trim_start();
            if content.is_empty() {
                continue;
            }
            let start = trimmed.len() - content.len();
            // Re-borrow from `buf` now that no further iteration mutates it.
            let raw_str = std::str::from_utf8(&self.buf[raw.start..raw.end]).unwrap_or("");
            return Some(Ok(Line {
                raw: raw_str,
                start,
                text: &raw_str[start..start + content.len()],
                no: self.line_no,
                byte: raw.byte,
            }));
        }
    }

    /// Reads one raw line into `buf`; `None` at the end of the input.
    fn read_raw(&mut self) -> Result<Option<RawLine>, TraceError> {
        if self.failed {
            return Ok(None);
        }
        self.buf.clear();
        let line_start = self.next_byte;
        let mut consumed_total: u64 = 0;
        let mut too_long = false;
        let mut any = false;
        let mut newline = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(e) => {
                    self.failed = true;
                    return Err(TraceError::new(
                        Pos::Text {
                            line: self.line_no + 1,
                            col: 1,
                            byte: self.next_byte + consumed_total,
                        },
                        io_kind(&e),
                    ));
                }
            };
            if avail.is_empty() {
                break;
            }
            any = true;
            let (chunk_len, consume) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    newline = true;
                    (i, i + 1)
                }
                None => (avail.len(), avail.len()),
            };
            if !too_long {
                if self.buf.len() + chunk_len > self.max + BOM.len() + 1 {
                    // A BOM and a CR do not count against the limit.
                    too_long = true;
                } else {
                    self.buf.extend_from_slice(&avail[..chunk_len]);
                }
            }
            self.inner.consume(consume);
            consumed_total += consume as u64;
            if newline {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.line_no += 1;
        self.next_byte += consumed_total;
        self.last_newline = newline;
        let mut start = 0;
        let mut byte = line_start;
        if self.line_no == 1 && self.buf.starts_with(BOM) {
            start = BOM.len();
            byte += BOM.len() as u64;
        }
        let mut end = self.buf.len();
        if end > start && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        if too_long || end - start > self.max {
            self.last_chars = 0;
            return Err(TraceError::new(
                Pos::Text {
                    line: self.line_no,
                    col: 1,
                    byte,
                },
                ErrorKind::LineTooLong(self.max),
            ));
        }
        Ok(Some(RawLine { start, end, byte }))
    }
}

/// A decimal number parsed exactly: `negative`, `digits` and the count of
/// digits after the point (`1.25` is 125 with scale 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub negative: bool,
    pub digits: u128,
    pub scale: u32,
}

/// Most significant digits a [`Decimal`] keeps exactly.
const MAX_DIGITS: usize = 30;

impl Decimal {
    /// Parses `[+-]digits[.digits]` (or `.digits`); no exponent, no inf/nan.
    pub fn parse(s: &str) -> Option<Decimal> {
        let (negative, body) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let (int, frac) = match body.split_once('.') {
            Some((i, f)) => (i, f),
            None => (body, ""),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let int = int.trim_start_matches('0');
        let frac = frac.trim_end_matches('0');
        if int.len() + frac.len() > MAX_DIGITS {
            return None;
        }
        let mut digits: u128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            digits = digits * 10 + u128::from(b - b'0');
        }
        Some(Decimal {
            negative: negative && digits != 0,
            digits,
            scale: frac.len() as u32,
        })
    }

    /// The value times `unit`, rounded to the nearest integer (halves away
    /// from zero); `None` if it does not fit.
    pub fn scaled(&self, unit: u64) -> Option<i128> {
        let num = self.digits.checked_mul(u128::from(unit))?;
        let den = 10u128.checked_pow(self.scale)?;
        let q = (num + den / 2) / den;
        let q = i128::try_from(q).ok()?;
        Some(if self.negative { -q } else { q })
    }

    pub fn to_f64(self) -> f64 {
        let v = self.digits as f64 / 10f64.powi(self.scale as i32);
        if self.negative {
            -v
        } else {
            v
        }
    }
}

/// Parses `[+-]digits` into an i64.
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().or_else(|| {
        // Too many digits for i64: report it as out of range, not as text.
        Some(if s.starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        })
    })
}

/// Formats `ns` as microseconds: `1500` or `1500.25` (no trailing zeros).
pub(crate) fn format_us(ns: u64) -> String {
    let (us, frac) = (ns / 1000, ns % 1000);
    if frac == 0 {
        us.to_string()
    } else {
        let f = format!("{frac:03}");
        format!("{us}.{}", f.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Result<(u64, String, Pos), TraceError>> {
        let mut l = Lines::new(input, max);
        let mut out = Vec::new();
        for _ in 0..100 {
            match l.next_line() {
                None => break,
                Some(Ok(line)) => out.push(Ok((line.no, line.text.to_string(), line.pos(0)))),
                Some(Err(e)) => out.push(Err(e)),
            }
        }
        out
    }

    #[test]
    fn bom_crlf_comments_blanks_no_final_newline() {
        let got = all(b"\xEF\xBB\xBF 10 \r\n# c\r\n\r\n  \t\n20 # x\n30", 100);
        let got: Vec<_> = got.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            got,
            vec![
                (
                    1,
                    "10".into(),
                    Pos::Text {
                        line: 1,
                        col: 2,
                        byte: 4
                    }
                ),
                (
                    5,
                    "20".into(),
                    Pos::Text {
                        line: 5,
                        col: 1,
                        byte: 20
                    }
                ),
                (
                    6,
                    "30".into(),
                    Pos::Text {
                        line: 6,
                        col: 1,
                        byte: 27
                    }
                ),
            ]
        );
    }

    #[test]
    fn long_line_is_an_error_and_reading_goes_on() {
        let got = all(b"12345\n1234\n123456789\n1\n", 4);
        assert!(
            matches!(&got[0], Err(e) if e.kind == ErrorKind::LineTooLong(4)
            && e.pos == Pos::Text { line: 1, col: 1, byte: 0 })
        );
        assert_eq!(got[1].as_ref().unwrap().1, "1234");
        assert!(got[2].is_err());
        assert_eq!(got[3].as_ref().unwrap().1, "1");
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn invalid_utf8_position() {
        let got = all(b"ok\nab\xFFc\n", 100);
        let e = got[1].as_ref().unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidUtf8);
        assert_eq!(
            e.pos,
            Pos::Text {
                line: 2,
                col: 3,
                byte: 5
            }
        );
    }

    #[test]
    fn end_positions() {
        let mut l = Lines::new(&b"# a\n# b\n"[..], 100);
        assert!(l.next_line().is_none());
        assert_eq!(
            l.end_pos(),
            Pos::Text {
                line: 3,
                col: 1,
                byte: 8
            }
        );
        let mut l = Lines::new(&b"# a\n#bc"[..], 100);
        assert!(l.next_line().is_none());
        assert_eq!(
            l.end_pos(),
            Pos::Text {
                line: 2,
                col: 4,
                byte: 7
            }
        );
        let mut l = Lines::new(&b""[..], 100);
        assert!(l.next_line().is_none());
        assert_eq!(
            l.end_pos(),
            Pos::Text {
                line: 1,
                col: 1,
                byte: 0
            }
        );
    }

    #[test]
    fn decimals_are_exact() {
        let d = Decimal::parse("0.1").unwrap();
        assert_eq!(d.scaled(1_000_000_000), Some(100_000_000));
        assert_eq!(Decimal::parse("-1.5").unwrap().scaled(1000), Some(-1500));
        assert_eq!(Decimal::parse(".0005").unwrap().scaled(1000), Some(1));
        assert_eq!(Decimal::parse("1.0004").unwrap().scaled(1000), Some(1000));
        assert!(!Decimal::parse("-0").unwrap().negative);
        for bad in [
            "", "-", ".", "1e3", "inf", "nan", "1.2.3", " 1", "0x10", "1,5",
        ] {
            assert_eq!(Decimal::parse(bad), None, "{bad}");
        }
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("99999999999999999999"), Some(i64::MAX));
        assert_eq!(parse_int("1.0"), None);
        assert_eq!(format_us(1_500_250), "1500.25");
        assert_eq!(format_us(7_000), "7");
    }
}
