//! Trace errors with a position a user can jump to.
//!
//! A reader does not know its file's name, so [`TraceError`] holds only the
//! position; [`TraceError::in_file`] adds the name for the message
//! `FILE:LINE:COL: what` (text formats) or `FILE: byte B (record N): what`
//! (nist-bin).

use std::fmt;

use thiserror::Error;

/// Where in a trace an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    /// A text trace: 1-based line and column (the column counts characters
    /// after a UTF-8 byte-order mark) and the byte offset of that column
    /// from the start of the input.
    Text { line: u64, col: u64, byte: u64 },
    /// A binary trace: the 1-based record number and the byte offset of
    /// the record's first byte.
    Record { record: u64, byte: u64 },
}

impl Pos {
    /// The byte offset from the start of the input.
    pub fn byte(&self) -> u64 {
        match *self {
            Pos::Text { byte, .. } | Pos::Record { byte, .. } => byte,
        }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Pos::Text { line, col, .. } => write!(f, "{line}:{col}"),
            Pos::Record { record, byte } => write!(f, "byte {byte} (record {record})"),
        }
    }
}

/// What is wrong at a [`Pos`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ErrorKind {
    /// Reading the input failed; the reader stops.
    #[error("read error: {0}")]
    Io(String),
    /// No records at all (only blank lines and comments, or no bytes).
    #[error("empty trace: no records")]
    Empty,
    /// A value is not a number of the expected form.
    #[error("{what}: expected {expected}, found {found:?}")]
    NotNumber {
        what: &'static str,
        expected: &'static str,
        found: String,
    },
    /// A delay has a unit the format does not know.
    #[error("unknown unit {0:?}: use ns, us, ms or s (no unit means us)")]
    UnknownUnit(String),
    /// The line is not valid UTF-8.
    #[error("not UTF-8 text")]
    InvalidUtf8,
    /// A line longer than the format allows (memory stays bounded).
    #[error("line longer than {0} bytes")]
    LineTooLong(usize),
    /// Text after the value(s) of a line.
    #[error("unexpected text {0:?} after the value")]
    Trailing(String),
    /// A nist-bin input whose length is not a multiple of 4.
    #[error(
        "nist-bin length is not a multiple of 4: the last record has {0} of 4 bytes \
         (truncated file?)"
    )]
    Truncated(usize),
    /// Action bits 11, which NIST Net's format leaves unused. `text`: the
    /// word came from a nist-txt line.
    #[error("{}", reserved_message(*.word, *.text))]
    ReservedAction { word: u32, text: bool },
    /// A nist-txt value that is not a 32-bit word.
    #[error("{0} does not fit a 32-bit word (-2147483648 ..= 4294967295)")]
    WordRange(i64),
    /// A negative delay while negative delays are refused.
    #[error("negative delay {0} (neg=zero makes negative delays 0)")]
    NegativeDelay(String),
    /// A negative value where only non-negative values make sense.
    #[error("{what} must not be negative, found {found}")]
    Negative { what: &'static str, found: String },
    /// A value above what the format takes.
    #[error("{what} {found} is above the largest value, {max}")]
    TooLarge {
        what: &'static str,
        found: String,
        max: &'static str,
    },
    /// A delay too large for the format or for 64-bit nanoseconds.
    #[error("delay {0} is too large")]
    DelayTooLarge(String),
    /// A probability outside [0, 1].
    #[error("{what} {value} is outside [0, 1] (write 0.01 or 1% for one percent)")]
    ProbabilityRange { what: &'static str, value: f64 },
    /// A rate of zero or less.
    #[error("rate_bps must be > 0, found {0}")]
    RateNotPositive(f64),
    /// A timestamp before the previous one.
    #[error("time {now} goes backwards (previous {prev})")]
    Backwards { prev: String, now: String },
    /// A Mahimahi trace whose last timestamp (its period) is 0.
    #[error("Mahimahi period is 0: the last timestamp is the trace's period and must be > 0")]
    PeriodZero,
    /// A time-indexed trace whose `period=` is not after its last row.
    #[error("period {period} is not after the last row's time {last}")]
    PeriodTooShort { period: String, last: String },
    /// A pkt-csv action that is not pass, drop, dup or corrupt.
    #[error("unknown action {0:?}: use pass, drop, dup or corrupt")]
    UnknownAction(String),
    /// A CSV header problem.
    #[error("{0}")]
    Header(String),
    /// A CSV row with the wrong number of fields.
    #[error("{found} fields, the header has {expected}")]
    FieldCount { expected: usize, found: usize },
    /// A `.dist` value outside a signed 16-bit integer.
    #[error("{0} does not fit a .dist entry (-32768 ..= 32767)")]
    DistRange(i64),
    /// A `.dist` table with more entries than netem takes.
    #[error("more than {0} .dist entries (netem's maximum)")]
    DistTooLong(usize),
    /// An option that does not apply to this trace.
    #[error("{0}")]
    Option(String),
}

/// An error in a trace, with its position. `Display` gives `LINE:COL: what`;
/// [`TraceError::in_file`] prefixes the file name.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{pos}: {kind}")]
pub struct TraceError {
    pub pos: Pos,
    pub kind: ErrorKind,
}

impl TraceError {
    pub fn new(pos: Pos, kind: ErrorKind) -> Self {
        TraceError { pos, kind }
    }

    /// The reader stops after this error (I/O, a truncated binary tail, the
    /// end-of-input checks). After any other error it continues with the
    /// next record, so a lazy reader can skip a bad record.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Io(_)
                | ErrorKind::Truncated(_)
                | ErrorKind::Empty
                | ErrorKind::PeriodZero
                | ErrorKind::PeriodTooShort { .. }
                | ErrorKind::Header(_)
                | ErrorKind::DistTooLong(_)
                | ErrorKind::Option(_)
        )
    }

    /// The error with the file's name: `FILE:LINE:COL: what`.
    pub fn in_file(self, name: impl Into<String>) -> FileError {
        FileError {
            name: name.into(),
            error: self,
        }
    }
}

/// A [`TraceError`] with the name of its file.
#[derive(Debug, Clone, PartialEq, Error)]
pub struct FileError {
    pub name: String,
    #[source]
    pub error: TraceError,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error.pos {
            Pos::Text { .. } => write!(f, "{}:{}: {}", self.name, self.error.pos, self.error.kind),
            Pos::Record { .. } => {
                write!(f, "{}: {}: {}", self.name, self.error.pos, self.error.kind)
            }
        }
    }
}

/// A record a writer's format cannot hold, or the output failed.
#[derive(Debug, Error)]
pub enum WriteError {
    #[error("write error: {0}")]
    Io(std::io::Error),
    /// The record has no form in the output format.
    #[error("{0}")]
    Unrepresentable(String),
}

// Not `#[from]`: that would also make it the source, and the message already prints it.
impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

fn reserved_message(word: u32, text: bool) -> String {
    if text {
        format!(
            "action bits 11 are not used (word {} = {word:#010x}); a nist-txt line is the raw \
             32-bit word, not a delay (write delays in the delays format)",
            word as i32
        )
    } else {
        format!("action bits 11 are not used (word {word:#010x})")
    }
}

pub(crate) fn io_kind(e: &std::io::Error) -> ErrorKind {
    ErrorKind::Io(e.to_string())
}
