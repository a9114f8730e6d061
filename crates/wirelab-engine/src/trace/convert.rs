//! `trace convert`: one trace to another format, streamed.

use super::files::{FormatOpt, InputSpec, Output};
use super::TraceJobError;
use wirelab_core::trace::conv::{convert_any, ConvFormat, ConvSummary};
use wirelab_core::trace::rate::describe;
use wirelab_core::trace::{ConvertError, TraceOptions, WriteError};

pub struct Convert {
    pub input: InputSpec,
    /// The output (`-`: stdout) and its format.
    pub output: String,
    pub to: FormatOpt,
    /// How to write it (byte order of nist-bin words).
    pub to_options: TraceOptions,
}

/// What a conversion did.
#[derive(Debug)]
pub struct ConvertReport {
    pub input: String,
    pub output: String,
    pub from: ConvFormat,
    pub to: ConvFormat,
    pub summary: ConvSummary,
}

impl ConvertReport {
    /// The line for stderr.
    pub fn text(&self) -> String {
        let what = match self.summary {
            ConvSummary::Packets(n) => format!("{n} records"),
            ConvSummary::Rate(s) => format!("{} records ({})", s.records, describe(&s)),
        };
        format!(
            "convert: {} ({}) -> {} ({}): {what}\n",
            self.input, self.from, self.output, self.to
        )
    }
}

impl Convert {
    pub fn run(self) -> Result<ConvertReport, TraceJobError> {
        let (from, input) = self.input.open_any()?;
        let to = match self.to.parse::<ConvFormat>()? {
            Some(f) => f,
            None if self.output == "-" => {
                return Err(TraceJobError::StdoutFormat { flag: self.to.flag })
            }
            None => ConvFormat::for_output(&self.output, from).ok_or_else(|| {
                TraceJobError::OutputName {
                    path: self.output.clone(),
                    flag: self.to.flag,
                }
            })?,
        };
        let (guard, out) = Output::create(&self.output, false)?;
        let path = &self.input.path;
        let summary = convert_any(from, &self.input.options, input, to, &self.to_options, out)
            .map_err(|e| match e {
                ConvertError::Read(e) => e.in_file(path.clone()).into(),
                ConvertError::Write {
                    source: WriteError::Unrepresentable(message),
                    record,
                } => TraceJobError::Unrepresentable {
                    path: path.clone(),
                    record,
                    message,
                },
                ConvertError::Write { record, source } => {
                    TraceJobError::write(&self.output, record, source)
                }
                ConvertError::Row { line, message } => TraceJobError::Row {
                    path: path.clone(),
                    line,
                    message,
                },
                ConvertError::Output(message) => TraceJobError::Content {
                    path: path.clone(),
                    message,
                },
                e => TraceJobError::Convert(e),
            })?;
        guard.keep();
        Ok(ConvertReport {
            input: self.input.path,
            output: self.output,
            from,
            to,
            summary,
        })
    }
}
