//! The trace jobs' files: inputs (`-` is stdin) with their format told by
//! an option or by the name and first bytes, and outputs (`-` is stdout)
//! that are removed again when the job fails before finishing them.

use super::TraceJobError;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use wirelab_trace::conv::{packet_output, ConvFormat};
use wirelab_trace::{
    ConvertError, Format, FormatError, Indexing, PacketReader, PacketWriter, TraceOptions,
};

/// A format the user may name, and the option that names it (errors say
/// which option to add or fix).
#[derive(Debug, Clone)]
pub struct FormatOpt {
    pub flag: &'static str,
    pub name: Option<String>,
}

impl FormatOpt {
    /// The format named, if one was.
    pub(crate) fn parse<T: std::str::FromStr>(&self) -> Result<Option<T>, TraceJobError>
    where
        T::Err: std::fmt::Display,
    {
        self.name
            .as_deref()
            .map(|f| f.parse::<T>())
            .transpose()
            .map_err(|e| TraceJobError::FormatName {
                flag: self.flag,
                message: e.to_string(),
            })
    }
}

/// An input trace: a path (`-`: stdin), its format if named, how to read it.
#[derive(Debug, Clone)]
pub struct InputSpec {
    pub path: String,
    pub format: FormatOpt,
    pub options: TraceOptions,
}

pub(crate) type Reader = Box<dyn BufRead>;

/// The opened input.
pub(crate) fn open(path: &str) -> Result<Reader, TraceJobError> {
    if path == "-" {
        return Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin())));
    }
    let f = File::open(path).map_err(|source| TraceJobError::Open {
        path: path.into(),
        source,
    })?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
}

impl InputSpec {
    /// The opened input and its format (kbit-ms included).
    pub(crate) fn open_any(&self) -> Result<(ConvFormat, Reader), TraceJobError> {
        let mut input = open(&self.path)?;
        if let Some(f) = self.format.parse::<ConvFormat>()? {
            return Ok((f, input));
        }
        let flag = self.format.flag;
        if self.path == "-" {
            return Err(TraceJobError::StdinFormat { flag });
        }
        let head = input.fill_buf().map_err(|source| TraceJobError::Read {
            path: self.path.clone(),
            source,
        })?;
        let f = ConvFormat::for_input(&self.path, head).map_err(|e| match e {
            FormatError::Ambiguous { path, ext } => TraceJobError::Ambiguous { path, ext, flag },
            FormatError::NoExtension(path) => TraceJobError::InputName { path, flag },
            e => e.into(),
        })?;
        Ok((f, input))
    }

    /// The opened input and its format, a trace format (not kbit-ms).
    pub(crate) fn open_trace(&self) -> Result<(Format, Reader), TraceJobError> {
        match self.open_any()? {
            (ConvFormat::Trace(f), r) => Ok((f, r)),
            (ConvFormat::KbitMs, _) => Err(TraceJobError::KbitMsInput {
                path: self.path.clone(),
            }),
        }
    }

    /// The input as a packet trace, for `tool`.
    pub(crate) fn open_packets(
        &self,
        tool: &'static str,
    ) -> Result<(Format, PacketReader<Reader>), TraceJobError> {
        let (format, input) = self.open_trace()?;
        let r = PacketReader::new(format, &self.options, input).map_err(|_| {
            TraceJobError::NotPacketInput {
                path: self.path.clone(),
                format,
                tool,
            }
        })?;
        Ok((format, r))
    }
}

/// The packet format of output `path`: the option's, else the name's
/// (`.csv` is pkt-csv), else pkt-csv for stdout.
pub(crate) fn packet_output_format(path: &str, opt: &FormatOpt) -> Result<Format, TraceJobError> {
    let f = match opt.parse::<Format>()? {
        Some(f) => f,
        None if path == "-" => Format::PktCsv,
        None => packet_output(path).ok_or_else(|| TraceJobError::PacketOutputName {
            path: path.into(),
            flag: opt.flag,
        })?,
    };
    if f.indexing() != Indexing::Packet {
        return Err(TraceJobError::NotPacketOutput(f));
    }
    Ok(f)
}

pub(crate) type Writer = PacketWriter<Box<dyn std::io::Write>>;

/// A packet writer on `out`, the file `path`.
pub(crate) fn writer(
    format: Format,
    opts: &TraceOptions,
    out: Box<dyn std::io::Write>,
    path: &str,
) -> Result<Writer, TraceJobError> {
    PacketWriter::new(format, opts, out).map_err(|e| match e {
        ConvertError::Write {
            record,
            cause: source,
        } => TraceJobError::write(path, record, source),
        e => TraceJobError::Convert(e),
    })
}

/// Flushes the writer's last bytes.
pub(crate) fn finish(w: Writer, path: &str) -> Result<(), TraceJobError> {
    w.finish().map(drop).map_err(|source| TraceJobError::Write {
        path: path.into(),
        source,
    })
}

/// An output file, removed again unless [`Output::keep`] is called: a job
/// that fails leaves no half-written file. `-` is stdout (kept as it is).
pub struct Output {
    path: Option<PathBuf>,
    done: bool,
}

impl Output {
    /// Creates (truncates) `path`, or opens it for appending; an appended
    /// file is never removed.
    pub fn create(path: &str, append: bool) -> Result<(Output, Box<dyn Write>), TraceJobError> {
        if path == "-" {
            let w: Box<dyn Write> = Box::new(BufWriter::new(io::stdout().lock()));
            let out = Output {
                path: None,
                done: false,
            };
            return Ok((out, w));
        }
        let f = File::options()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map_err(|source| TraceJobError::Create {
                path: path.into(),
                source,
            })?;
        let out = Output {
            path: (!append).then(|| PathBuf::from(path)),
            done: false,
        };
        Ok((out, Box::new(BufWriter::with_capacity(1 << 16, f))))
    }

    /// The output is complete: keep it.
    pub fn keep(mut self) {
        self.done = true;
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let (false, Some(p)) = (self.done, &self.path) {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "wirelab-engine-trace-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_output_not_kept_is_removed_and_a_kept_one_stays() {
        let d = scratch("output");
        let p = d.join("x.bin");
        let ps = p.to_str().unwrap();
        let (guard, mut w) = Output::create(ps, false).unwrap();
        w.write_all(b"half").unwrap();
        drop(w);
        drop(guard);
        assert!(!p.exists(), "a failed job leaves no file");
        let (guard, mut w) = Output::create(ps, false).unwrap();
        w.write_all(b"whole").unwrap();
        w.flush().unwrap();
        drop(w);
        guard.keep();
        assert_eq!(std::fs::read(&p).unwrap(), b"whole");
        // An appended file is the user's: never removed.
        let (guard, mut w) = Output::create(ps, true).unwrap();
        w.write_all(b"+").unwrap();
        drop(w);
        drop(guard);
        assert_eq!(std::fs::read(&p).unwrap(), b"whole+");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_output_that_cannot_be_created_names_its_path() {
        let e = Output::create("/nonexistent-dir/x.bin", false)
            .err()
            .unwrap();
        assert!(
            matches!(&e, TraceJobError::Create { path, .. } if path == "/nonexistent-dir/x.bin")
        );
        assert!(!e.is_usage());
        assert_eq!(e.to_string(), "cannot create /nonexistent-dir/x.bin");
    }

    #[test]
    fn formats_come_from_the_option_then_the_name() {
        let opt = |name: Option<&str>| FormatOpt {
            flag: "--format",
            name: name.map(String::from),
        };
        assert_eq!(
            packet_output_format("-", &opt(None)).unwrap(),
            Format::PktCsv
        );
        assert_eq!(
            packet_output_format("a.csv", &opt(None)).unwrap(),
            Format::PktCsv
        );
        assert_eq!(
            packet_output_format("a.csv", &opt(Some("nist-bin"))).unwrap(),
            Format::NistBin
        );
        let e = packet_output_format("a.zz", &opt(None)).unwrap_err();
        assert!(e.to_string().contains("add --format (pkt-csv"), "{e}");
        let e = packet_output_format("a.up", &opt(None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mahimahi is not a packet trace: write pkt-csv, nist-bin, nist-txt or delays"
        );
        let e = packet_output_format("a.bin", &opt(Some("zork"))).unwrap_err();
        assert!(e.to_string().starts_with("--format: "), "{e}");
        let stdin = InputSpec {
            path: "-".into(),
            format: FormatOpt {
                flag: "--fmt",
                name: None,
            },
            options: TraceOptions::default(),
        };
        assert_eq!(
            stdin.open_any().err().unwrap().to_string(),
            "reading stdin: give its format with --fmt"
        );
    }
}
