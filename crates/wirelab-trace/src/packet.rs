//! Any packet-indexed format behind one reader and one writer, and
//! conversion between them.

use std::io::{BufRead, Write};

use thiserror::Error;

use super::delays::{DelaysReader, DelaysWriter};
use super::error::{TraceError, WriteError};
use super::format::{Format, FormatError, TraceOptions};
use super::nist::{NistBinReader, NistBinWriter, NistTxtReader, NistTxtWriter};
use super::pktcsv::{PktCsvReader, PktCsvWriter};
use super::Record;

/// A streaming reader of any packet-indexed format.
pub enum PacketReader<R> {
    NistBin(NistBinReader<R>),
    NistTxt(NistTxtReader<R>),
    Delays(DelaysReader<R>),
    PktCsv(PktCsvReader<R>),
}

impl<R: BufRead> PacketReader<R> {
    /// A reader of `format` over `input`; only packet-indexed formats.
    pub fn new(format: Format, opts: &TraceOptions, input: R) -> Result<Self, FormatError> {
        Ok(match format {
            Format::NistBin => {
                PacketReader::NistBin(NistBinReader::new(input, opts.order, opts.neg))
            }
            Format::NistTxt => PacketReader::NistTxt(NistTxtReader::new(input, opts.neg)),
            Format::Delays => PacketReader::Delays(DelaysReader::new(input, opts.neg)),
            Format::PktCsv => PacketReader::PktCsv(PktCsvReader::new(input, opts.neg)),
            f => return Err(FormatError::NotPacket(f)),
        })
    }

    pub fn format(&self) -> Format {
        match self {
            PacketReader::NistBin(_) => Format::NistBin,
            PacketReader::NistTxt(_) => Format::NistTxt,
            PacketReader::Delays(_) => Format::Delays,
            PacketReader::PktCsv(_) => Format::PktCsv,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        match self {
            PacketReader::NistBin(r) => r.get_mut(),
            PacketReader::NistTxt(r) => r.get_mut(),
            PacketReader::Delays(r) => r.get_mut(),
            PacketReader::PktCsv(r) => r.get_mut(),
        }
    }

    /// Bytes the reader itself holds beyond the `BufRead`'s buffer: at
    /// most one line of a text format, nothing for nist-bin.
    pub fn buffer_capacity(&self) -> usize {
        match self {
            PacketReader::NistBin(_) => 0,
            PacketReader::NistTxt(r) => r.buffer_capacity(),
            PacketReader::Delays(r) => r.buffer_capacity(),
            PacketReader::PktCsv(r) => r.buffer_capacity(),
        }
    }
}

impl<R: BufRead> Iterator for PacketReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            PacketReader::NistBin(r) => r.next().map(|x| x.map(Record::from)),
            PacketReader::NistTxt(r) => r.next().map(|x| x.map(Record::from)),
            PacketReader::Delays(r) => r.next().map(|x| x.map(Record::from)),
            PacketReader::PktCsv(r) => r.next(),
        }
    }
}

/// A writer of any packet-indexed format. Pass a buffered output.
pub enum PacketWriter<W> {
    NistBin(NistBinWriter<W>),
    NistTxt(NistTxtWriter<W>),
    Delays(DelaysWriter<W>),
    PktCsv(PktCsvWriter<W>),
}

impl<W: Write> PacketWriter<W> {
    /// A writer of `format` (pkt-csv writes its header now).
    pub fn new(format: Format, opts: &TraceOptions, out: W) -> Result<Self, ConvertError> {
        Ok(match format {
            Format::NistBin => PacketWriter::NistBin(NistBinWriter::new(out, opts.order)),
            Format::NistTxt => PacketWriter::NistTxt(NistTxtWriter::new(out)),
            Format::Delays => PacketWriter::Delays(DelaysWriter::new(out)),
            Format::PktCsv => {
                PacketWriter::PktCsv(PktCsvWriter::new(out).map_err(|e| ConvertError::Write {
                    record: 0,
                    cause: e.into(),
                })?)
            }
            f => return Err(ConvertError::Format(FormatError::NotPacket(f))),
        })
    }

    /// Writes one record. A corrupt flag needs pkt-csv; a duplicate is not
    /// in the delays format; nist words hold at most 536,870,911 µs.
    pub fn write(&mut self, rec: &Record) -> Result<(), WriteError> {
        let name = match self {
            PacketWriter::PktCsv(w) => return w.write(rec),
            PacketWriter::NistBin(_) => "nist-bin",
            PacketWriter::NistTxt(_) => "nist-txt",
            PacketWriter::Delays(_) => "delays",
        };
        if rec.corrupt {
            return Err(WriteError::Unrepresentable(format!(
                "{name} has no corrupt action (use pkt-csv)"
            )));
        }
        match self {
            PacketWriter::NistBin(w) => w.write(&rec.action),
            PacketWriter::NistTxt(w) => w.write(&rec.action),
            PacketWriter::Delays(w) => w.write(&rec.action),
            PacketWriter::PktCsv(w) => w.write(rec),
        }
    }

    /// Flushes and returns the output.
    pub fn finish(self) -> std::io::Result<W> {
        match self {
            PacketWriter::NistBin(w) => w.finish(),
            PacketWriter::NistTxt(w) => w.finish(),
            PacketWriter::Delays(w) => w.finish(),
            PacketWriter::PktCsv(w) => w.finish(),
        }
    }
}

/// Why a conversion stopped.
#[derive(Debug, Error)]
pub enum ConvertError {
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The input is bad at this position (name the file with
    /// [`TraceError::in_file`]).
    #[error(transparent)]
    Read(TraceError),
    /// Record `record` (1-based; 0 = the header) could not be written.
    #[error("record {record}: {cause}")]
    Write { record: u64, cause: WriteError },
    /// The input's row at `line` has no form in the output format.
    #[error("line {line}: {message}")]
    Row { line: u64, message: String },
    /// The output as a whole cannot be made (e.g. it would be empty).
    #[error("{0}")]
    Output(String),
    /// No conversion between these formats.
    #[error("cannot convert {from} to {to}: {hint}")]
    Unsupported {
        from: String,
        to: String,
        hint: &'static str,
    },
}

/// Converts a packet trace from one format to another, streaming; stops
/// at the first bad record. Returns the number of records written.
pub fn convert<R: BufRead, W: Write>(
    from: Format,
    from_opts: &TraceOptions,
    input: R,
    to: Format,
    to_opts: &TraceOptions,
    out: W,
) -> Result<u64, ConvertError> {
    let reader = PacketReader::new(from, from_opts, input)?;
    let mut writer = PacketWriter::new(to, to_opts, out)?;
    let mut n = 0;
    for rec in reader {
        let rec = rec.map_err(ConvertError::Read)?;
        n += 1;
        writer.write(&rec).map_err(|source| ConvertError::Write {
            record: n,
            cause: source,
        })?;
    }
    writer.finish().map_err(|e| ConvertError::Write {
        record: n,
        cause: e.into(),
    })?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, ByteOrder};

    fn conv(
        from: Format,
        input: &[u8],
        to: Format,
        opts: &TraceOptions,
    ) -> Result<Vec<u8>, ConvertError> {
        let mut out = Vec::new();
        convert(from, opts, input, to, opts, &mut out)?;
        Ok(out)
    }

    /// docs/trace.md's example S1: D1000, DROP, DUP2000, D3000, DUP500,
    /// DUP600, D700.
    const S1_TXT: &str = "1000\n1073741824\n-2147481648\n3000\n-2147483148\n-2147483048\n700\n";

    #[test]
    fn chain_of_conversions_returns_to_the_start() {
        let o = TraceOptions::default();
        let bin = conv(Format::NistTxt, S1_TXT.as_bytes(), Format::NistBin, &o).unwrap();
        // The hexdump in docs/trace.md.
        assert_eq!(
            bin,
            [
                0xe8, 0x03, 0, 0, 0, 0, 0, 0x40, 0xd0, 0x07, 0, 0x80, 0xb8, 0x0b, 0, 0, 0xf4, 0x01,
                0, 0x80, 0x58, 0x02, 0, 0x80, 0xbc, 0x02, 0, 0
            ]
        );
        let csv = conv(Format::NistBin, &bin, Format::PktCsv, &o).unwrap();
        assert_eq!(
            String::from_utf8(csv.clone()).unwrap(),
            "action,delay_us\npass,1000\ndrop,0\ndup,2000\npass,3000\ndup,500\ndup,600\npass,700\n"
        );
        let txt = conv(Format::PktCsv, &csv, Format::NistTxt, &o).unwrap();
        assert_eq!(String::from_utf8(txt).unwrap(), S1_TXT);
        let be = TraceOptions {
            order: ByteOrder::Big,
            ..o
        };
        let bin_be = conv(Format::NistTxt, S1_TXT.as_bytes(), Format::NistBin, &be).unwrap();
        assert_eq!(&bin_be[..4], &[0, 0, 0x03, 0xe8]);
    }

    #[test]
    fn delays_to_and_from() {
        let o = TraceOptions::default();
        let d = conv(Format::Delays, b"1.5ms\nx\n250ns\n", Format::NistTxt, &o).unwrap();
        assert_eq!(
            String::from_utf8(d.clone()).unwrap(),
            "1500\n1073741824\n0\n"
        );
        let back = conv(Format::NistTxt, &d, Format::Delays, &o).unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), "1500\ndrop\n0\n");
    }

    #[test]
    fn unrepresentable_records_name_the_record() {
        let o = TraceOptions::default();
        let e = conv(Format::NistTxt, S1_TXT.as_bytes(), Format::Delays, &o).unwrap_err();
        assert_eq!(
            e.to_string(),
            "record 3: the delays format has no duplicate (use pkt-csv, nist-bin or nist-txt)"
        );
        let e = conv(Format::PktCsv, b"pass,1\ncorrupt,2\n", Format::NistBin, &o).unwrap_err();
        assert_eq!(
            e.to_string(),
            "record 2: nist-bin has no corrupt action (use pkt-csv)"
        );
        let e = conv(Format::Delays, b"600s\n", Format::NistBin, &o).unwrap_err();
        assert_eq!(
            e.to_string(),
            "record 1: delay 600000000us exceeds the NIST Net word's 536870911us"
        );
        let e = conv(Format::Delays, b"1\nx y\n", Format::NistBin, &o).unwrap_err();
        match e {
            ConvertError::Read(e) => assert_eq!(
                e.in_file("in").to_string(),
                "in:2:1: delay: expected a number such as 1500 or 1.5ms, found \"x y\""
            ),
            e => panic!("{e}"),
        }
        assert!(matches!(
            conv(Format::Mahimahi, b"1\n", Format::NistBin, &o),
            Err(ConvertError::Format(FormatError::NotPacket(
                Format::Mahimahi
            )))
        ));
    }

    #[test]
    fn reader_yields_records() {
        let o = TraceOptions::default();
        let r = PacketReader::new(Format::Delays, &o, &b"5\n"[..]).unwrap();
        assert_eq!(r.format(), Format::Delays);
        let v: Vec<_> = r.collect();
        assert_eq!(v, vec![Ok(Record::from(Action::Delay { delay_ns: 5000 }))]);
    }
}
