//! What the trace jobs fail with. Each variant's text is the message the
//! user sees; [`TraceJobError::is_usage`] tells bad input (a file or value
//! that cannot work) from a failure of the machine (a file that cannot be
//! opened or written).

use std::io;
use thiserror::Error;
use wirelab_trace::gen::GenError;
use wirelab_trace::maketable::MaketableError;
use wirelab_trace::measured::MeasuredError;
use wirelab_trace::{ConvertError, FileError, Format, FormatError};
use wirelab_wire::record::RecordError;

#[derive(Debug, Error)]
pub enum TraceJobError {
    #[error("cannot open {path}")]
    Open { path: String, source: io::Error },
    #[error("cannot read {path}")]
    Read { path: String, source: io::Error },
    #[error("cannot create {path}")]
    Create { path: String, source: io::Error },
    #[error("writing {path}")]
    Write { path: String, source: io::Error },
    /// Writing to stdout (where a job prints its entries).
    #[error(transparent)]
    Stdout(#[from] io::Error),

    /// A format named by option `flag` that does not exist.
    #[error("{flag}: {message}")]
    FormatName { flag: &'static str, message: String },
    #[error("reading stdin: give its format with {flag}")]
    StdinFormat { flag: &'static str },
    #[error("writing stdout: give its format with {flag}")]
    StdoutFormat { flag: &'static str },
    #[error(
        "{path}: the extension {ext} does not tell the trace format: add {flag} nist-txt or \
         {flag} delays"
    )]
    Ambiguous {
        path: String,
        ext: &'static str,
        flag: &'static str,
    },
    #[error(
        "{path}: cannot tell the trace format from the file name: add {flag} NAME (nist-bin, \
         nist-txt, delays, pkt-csv, mahimahi, csv, dist, kbit-ms)"
    )]
    InputName { path: String, flag: &'static str },
    #[error("{path}: cannot tell the output format from the file name: add {flag} FMT")]
    OutputName { path: String, flag: &'static str },
    #[error(
        "{path}: cannot tell the trace format from the file name: add {flag} (pkt-csv, \
         nist-bin, nist-txt or delays)"
    )]
    PacketOutputName { path: String, flag: &'static str },
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("{path}: kbit-ms is a rate series for `wirelab trace convert` (to mahimahi)")]
    KbitMsInput { path: String },
    /// `tool` reads packet traces only.
    #[error(
        "{path} is a {format} trace: {tool} reads packet traces (nist-bin, nist-txt, delays, \
         pkt-csv)"
    )]
    NotPacketInput {
        path: String,
        format: Format,
        tool: &'static str,
    },
    #[error("{0} is not a packet trace: write pkt-csv, nist-bin, nist-txt or delays")]
    NotPacketOutput(Format),

    /// A bad record, with its file and position.
    #[error(transparent)]
    Trace(#[from] FileError),
    /// Record `record` of `path` has no form in the output format.
    #[error("{path}: record {record}: {message}")]
    Unrepresentable {
        path: String,
        record: u64,
        message: String,
    },
    #[error("{path}:{line}: {message}")]
    Row {
        path: String,
        line: u64,
        message: String,
    },
    /// What is wrong with file `path` as a whole.
    #[error("{path}: {message}")]
    Content { path: String, message: String },
    /// No conversion between the two formats, or a format the writer
    /// refuses.
    #[error(transparent)]
    Convert(ConvertError),

    #[error("--bits shows NIST Net words: {path} is {format}, not nist-bin or nist-txt")]
    BitsOfNonWords { path: String, format: Format },
    /// Bad records met while dumping: the first, and how many more.
    #[error("{first}{}", more_text(*.more))]
    BadRecords { first: String, more: u64 },

    #[error(
        "--dist {name}: not const, uniform, normal, pareto, paretonormal or exp, and not a \
         readable .dist file ({error})"
    )]
    Dist { name: String, error: io::Error },
    #[error(transparent)]
    Gen(#[from] GenError),

    #[error("{path}: {error}")]
    Records { path: String, error: RecordError },
    #[error("{path} is a {role} record file: give the sender's file first, then the receiver's")]
    SenderFirst { path: String, role: &'static str },
    #[error("{path} is a sender record file: the second file is the receiver's (or reflector's)")]
    ReceiverSecond { path: String },
    #[error("{path}: {error}: leave out --absolute")]
    Negative { path: String, error: MeasuredError },
    #[error(
        "{path}: no probes{} in the sender's records: no trace",
        .flow.map(|f| format!(" of flow {f}")).unwrap_or_default()
    )]
    NoProbes { path: String, flow: Option<u32> },

    #[error("maketable reads its samples twice (the mean first): give a file, not stdin")]
    TwiceFromStdin,
    #[error("{path}: {error}")]
    Table { path: String, error: MaketableError },
}

fn more_text(more: u64) -> String {
    if more == 0 {
        String::new()
    } else {
        format!(" (and {more} more bad records)")
    }
}

impl TraceJobError {
    /// Bad input or a bad value (the user can fix the command), as opposed
    /// to a file the machine could not open, read or write.
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            TraceJobError::Open { .. }
                | TraceJobError::Read { .. }
                | TraceJobError::Create { .. }
                | TraceJobError::Write { .. }
                | TraceJobError::Stdout(_)
        )
    }

    pub(crate) fn write(path: &str, record: u64, e: wirelab_trace::WriteError) -> Self {
        use wirelab_trace::WriteError;
        match e {
            WriteError::Io(source) => TraceJobError::Write {
                path: path.into(),
                source,
            },
            WriteError::Unrepresentable(message) => TraceJobError::Unrepresentable {
                path: path.into(),
                record,
                message,
            },
        }
    }
}
