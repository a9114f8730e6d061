//! `trace convert`: one trace to another format, streamed.

use super::files::{FormatOpt, InputSpec, Output};
use super::TraceJobError;
use wirelab_trace::conv::{convert_any, ConvFormat, ConvSummary};
use wirelab_trace::rate::describe;
use wirelab_trace::{ConvertError, TraceOptions, WriteError};

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
                    cause: WriteError::Unrepresentable(message),
                    record,
                } => TraceJobError::Unrepresentable {
                    path: path.clone(),
                    record,
                    message,
                },
                ConvertError::Write {
                    record,
                    cause: source,
                } => TraceJobError::write(&self.output, record, source),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::FormatOpt;

    fn job(dir: &std::path::Path, input: &str, output: &str) -> Convert {
        let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
        Convert {
            input: InputSpec {
                path: p(input),
                format: FormatOpt {
                    flag: "--from",
                    name: None,
                },
                options: TraceOptions::default(),
            },
            output: p(output),
            to: FormatOpt {
                flag: "--to",
                name: None,
            },
            to_options: TraceOptions::default(),
        }
    }

    #[test]
    fn a_conversion_that_fails_part_way_leaves_no_output() {
        let d = std::env::temp_dir().join(format!("wirelab-convert-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        // Two good words, then one with the unused action bits 11.
        let words: Vec<u8> = [1000u32, 2000, (3 << 30) | 5]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        std::fs::write(d.join("t.bin"), words).unwrap();
        let e = job(&d, "t.bin", "t.pkt.csv").run().unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string().ends_with(
                "t.bin: byte 8 (record 3): action bits 11 are not used (word 0xc0000005)"
            ),
            "{e}"
        );
        assert!(
            !d.join("t.pkt.csv").exists(),
            "the half-written output is removed"
        );
        // The same input whole converts, and the report says what it did.
        std::fs::write(d.join("ok.delays"), "1000\ndrop\n3000\n").unwrap();
        let r = job(&d, "ok.delays", "ok.pkt.csv").run().unwrap();
        assert!(r.text().ends_with(": 3 records\n"), "{}", r.text());
        assert_eq!(
            std::fs::read_to_string(d.join("ok.pkt.csv")).unwrap(),
            "action,delay_us\npass,1000\ndrop,0\npass,3000\n"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
