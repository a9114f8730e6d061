//! `trace dump`: one line (or JSON object) per record, nist words bit by
//! bit on request; and `trace encode`: one nist word.

use super::files::{InputSpec, Output};
use super::TraceJobError;
use std::io::{self, Write};
use wirelab_trace::dump::{Dump as Entries, DumpValue};
use wirelab_trace::{ByteOrder, Format};

pub struct Dump {
    pub input: InputSpec,
    /// Show nist words bit by bit (nist formats only).
    pub bits: bool,
    /// One JSON object per record instead of a line of text.
    pub json: bool,
}

impl Dump {
    /// Writes every record to `out`; a bad record is shown in its place
    /// and, after the last, fails the job with the first bad record's
    /// message.
    pub fn run(self, out: &mut dyn Write) -> Result<(), TraceJobError> {
        let (format, input) = self.input.open_trace()?;
        if self.bits && !matches!(format, Format::NistBin | Format::NistTxt) {
            return Err(TraceJobError::BitsOfNonWords {
                path: self.input.path,
                format,
            });
        }
        let mut d = Entries::new(format, &self.input.options, &self.input.path, input);
        let mut first = None;
        for e in d.by_ref() {
            if self.json {
                serde_json::to_writer(&mut *out, &e).map_err(io::Error::from)?;
                writeln!(out)?;
            } else {
                writeln!(out, "{}", e.text(self.bits))?;
            }
            if let (None, DumpValue::Error { error }) = (&first, &e.value) {
                first = Some(error.clone());
            }
        }
        out.flush()?;
        match first {
            None => Ok(()),
            Some(first) => Err(TraceJobError::BadRecords {
                first,
                more: d.errors() - 1,
            }),
        }
    }
}

/// Writes one nist word (see [`wirelab_trace::dump::encode_word`]).
pub struct Encode {
    pub word: u32,
    /// `None`: a nist-txt line; else the word's 4 bytes in this order.
    pub bin: Option<ByteOrder>,
    /// `None`: stdout.
    pub output: Option<String>,
    /// Append to the output instead of replacing it.
    pub append: bool,
}

impl Encode {
    pub fn bytes(&self) -> Vec<u8> {
        match self.bin {
            None => format!("{}\n", self.word as i32).into_bytes(),
            Some(ByteOrder::Little) => self.word.to_le_bytes().to_vec(),
            Some(ByteOrder::Big) => self.word.to_be_bytes().to_vec(),
        }
    }

    pub fn run(self) -> Result<(), TraceJobError> {
        let bytes = self.bytes();
        let Some(path) = &self.output else {
            let mut out = io::stdout().lock();
            out.write_all(&bytes)?;
            out.flush()?;
            return Ok(());
        };
        // The user's file, whole or appended to: kept even if the write fails.
        let (guard, mut w) = Output::create(path, self.append)?;
        guard.keep();
        let write = |source| TraceJobError::Write {
            path: path.clone(),
            source,
        };
        w.write_all(&bytes).map_err(write)?;
        w.flush().map_err(write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_trace::dump::{encode_word, WordAction};

    #[test]
    fn a_word_as_text_or_bytes() {
        let word = encode_word(WordAction::Dup, 500).unwrap();
        let e = |bin| Encode {
            word,
            bin,
            output: None,
            append: false,
        };
        assert_eq!(e(None).bytes(), b"-2147483148\n");
        assert_eq!(e(Some(ByteOrder::Little)).bytes(), [0xf4, 0x01, 0, 0x80]);
        assert_eq!(e(Some(ByteOrder::Big)).bytes(), [0x80, 0, 0x01, 0xf4]);
    }
}
