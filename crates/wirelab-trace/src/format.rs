//! Trace format names, detection by file name, and reader options.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use wirelab_core::units::parse_duration_ns;

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// NIST Net binary: one 32-bit word per packet.
    NistBin,
    /// NIST Net text: one signed integer (the raw word) per line.
    NistTxt,
    /// One delay per line with an optional unit; `drop`/`x`/`nan` drop.
    Delays,
    /// `action,delay_us` rows.
    PktCsv,
    /// Mahimahi delivery opportunities: one ms timestamp per line.
    Mahimahi,
    /// Time-indexed CSV: link parameters per time step.
    Csv,
    /// An iproute2 `.dist` table (netem's delay distributions).
    Dist,
}

/// What a format's records are indexed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexing {
    /// One record per packet (a copy consumes the next record).
    Packet,
    /// Records by time.
    Time,
    /// A table, not a sequence (`.dist`).
    Table,
}

impl Format {
    /// Every format, in the order of the docs.
    pub const ALL: [Format; 7] = [
        Format::NistBin,
        Format::NistTxt,
        Format::Delays,
        Format::PktCsv,
        Format::Mahimahi,
        Format::Csv,
        Format::Dist,
    ];

    /// The name `fmt=` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::NistBin => "nist-bin",
            Format::NistTxt => "nist-txt",
            Format::Delays => "delays",
            Format::PktCsv => "pkt-csv",
            Format::Mahimahi => "mahimahi",
            Format::Csv => "csv",
            Format::Dist => "dist",
        }
    }

    pub fn indexing(self) -> Indexing {
        match self {
            Format::NistBin | Format::NistTxt | Format::Delays | Format::PktCsv => Indexing::Packet,
            Format::Mahimahi | Format::Csv => Indexing::Time,
            Format::Dist => Indexing::Table,
        }
    }

    /// The format a file name's extension names without doubt; `None` for
    /// `.csv` (see [`Format::detect`]), `.txt` (nist-txt or delays) and
    /// unknown extensions.
    pub fn from_extension(path: &str) -> Option<Format> {
        let name = file_name(path).to_ascii_lowercase();
        EXTENSIONS
            .iter()
            .find(|(ext, _)| name.ends_with(ext) && name.len() > ext.len())
            .and_then(|&(_, f)| f)
    }

    /// The format of file `path` whose first bytes are `head` (a few KiB
    /// are plenty; fewer are fine). The extension decides; a `.csv` file is
    /// a pkt-csv trace when its first row is the `action` header or starts
    /// with an action, else a time-indexed CSV.
    pub fn detect(path: &str, head: &[u8]) -> Result<Format, FormatError> {
        let name = file_name(path).to_ascii_lowercase();
        match EXTENSIONS
            .iter()
            .find(|(ext, _)| name.ends_with(ext) && name.len() > ext.len())
        {
            Some(&(_, Some(f))) => Ok(f),
            Some(&(".csv", None)) => Ok(sniff_csv(head)),
            Some(&(ext, None)) => Err(FormatError::Ambiguous {
                path: path.to_string(),
                ext,
            }),
            None => Err(FormatError::NoExtension(path.to_string())),
        }
    }
}

/// Extensions, longest first where one ends another; `None` = ambiguous.
const EXTENSIONS: [(&str, Option<Format>); 14] = [
    (".nist.bin", Some(Format::NistBin)),
    (".nist.txt", Some(Format::NistTxt)),
    (".nisttxt", Some(Format::NistTxt)),
    (".pkt.csv", Some(Format::PktCsv)),
    (".pktcsv", Some(Format::PktCsv)),
    (".bin", Some(Format::NistBin)),
    (".nist", Some(Format::NistBin)),
    (".delays", Some(Format::Delays)),
    (".up", Some(Format::Mahimahi)),
    (".down", Some(Format::Mahimahi)),
    (".mahimahi", Some(Format::Mahimahi)),
    (".dist", Some(Format::Dist)),
    (".csv", None),
    (".txt", None),
];

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn sniff_csv(head: &[u8]) -> Format {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let first = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .find(|l| !l.is_empty());
    match first {
        Some(l) => {
            let field = l
                .split(',')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if field == "action" || super::pktcsv::parse_action(&field).is_some() {
                Format::PktCsv
            } else {
                Format::Csv
            }
        }
        None => Format::Csv,
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .or(match s.as_str() {
                "mm" => Some(Format::Mahimahi),
                "pktcsv" => Some(Format::PktCsv),
                _ => None,
            })
            .ok_or(FormatError::Unknown(s))
    }
}

/// Byte order of nist-bin words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ByteOrder {
    /// Least significant byte first (the default: what x86 writes).
    #[default]
    Little,
    Big,
}

impl FromStr for ByteOrder {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "le" | "little" => Ok(ByteOrder::Little),
            "be" | "big" => Ok(ByteOrder::Big),
            _ => Err(FormatError::BadOption {
                key: "order",
                value: s.to_string(),
                expected: "le or be",
            }),
        }
    }
}

/// What a negative delay in a trace means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NegPolicy {
    /// Refuse it (the default): a negative delay is usually a clock offset
    /// left in a measured trace.
    #[default]
    Error,
    /// Clamp it to 0.
    Zero,
}

impl FromStr for NegPolicy {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Ok(NegPolicy::Error),
            "zero" => Ok(NegPolicy::Zero),
            _ => Err(FormatError::BadOption {
                key: "neg",
                value: s.to_string(),
                expected: "error or zero",
            }),
        }
    }
}

/// Options for reading and writing traces (the `wirelab trace` tools'
/// `--order`, `--neg` and `--period`; as text, see [`TraceOptions::set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TraceOptions {
    /// nist-bin byte order (`order=le|be`).
    pub order: ByteOrder,
    /// Negative delays (`neg=error|zero`).
    pub neg: NegPolicy,
    /// Length of a `t_us`/`t_ms` CSV trace: the last row lasts until this
    /// time (`period=10s`); without it the last row lasts forever.
    pub period_ns: Option<u64>,
}

impl TraceOptions {
    /// Sets option `key` from its text `value`: `order`, `neg`, `period`
    /// (a duration with a unit, > 0).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), FormatError> {
        match key {
            "order" => self.order = value.parse()?,
            "neg" => self.neg = value.parse()?,
            "period" => {
                let ns = parse_duration_ns(value).map_err(|_| FormatError::BadOption {
                    key: "period",
                    value: value.to_string(),
                    expected: "a duration with a unit, e.g. 10s",
                })?;
                if ns == 0 {
                    return Err(FormatError::BadOption {
                        key: "period",
                        value: value.to_string(),
                        expected: "a duration > 0",
                    });
                }
                self.period_ns = Some(ns);
            }
            _ => return Err(FormatError::UnknownOption(key.to_string())),
        }
        Ok(())
    }
}

/// A format name, file name or option that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FormatError {
    #[error(
        "unknown trace format {0:?}: use nist-bin, nist-txt, delays, pkt-csv, mahimahi, csv or dist"
    )]
    Unknown(String),
    #[error(
        "{path}: the extension {ext} does not tell the trace format: \
         add fmt=nist-txt or fmt=delays"
    )]
    Ambiguous { path: String, ext: &'static str },
    #[error(
        "{0}: cannot tell the trace format from the file name: add fmt=NAME \
         (nist-bin, nist-txt, delays, pkt-csv, mahimahi, csv, dist)"
    )]
    NoExtension(String),
    #[error("{0} is not a packet-indexed format (nist-bin, nist-txt, delays, pkt-csv)")]
    NotPacket(Format),
    #[error("{key}={value:?}: use {expected}")]
    BadOption {
        key: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("unknown trace option {0:?}: use order=, neg= or period= (fmt= names the format)")]
    UnknownOption(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        assert_eq!("MM".parse::<Format>(), Ok(Format::Mahimahi));
        assert!(matches!(
            "nist".parse::<Format>(),
            Err(FormatError::Unknown(_))
        ));
    }

    #[test]
    fn extensions() {
        let cases = [
            ("a/b/t.bin", Some(Format::NistBin)),
            ("t.NIST.BIN", Some(Format::NistBin)),
            ("t.nist.txt", Some(Format::NistTxt)),
            ("t.delays", Some(Format::Delays)),
            ("t.pkt.csv", Some(Format::PktCsv)),
            ("Verizon-LTE-short.up", Some(Format::Mahimahi)),
            ("x.down", Some(Format::Mahimahi)),
            ("normal.dist", Some(Format::Dist)),
            ("t.txt", None),
            ("t.csv", None),
            ("t", None),
            (".bin", None),
            ("dir.bin/t", None),
        ];
        for (p, f) in cases {
            assert_eq!(Format::from_extension(p), f, "{p}");
        }
    }

    #[test]
    fn detect_sniffs_csv_and_refuses_txt() {
        assert_eq!(
            Format::detect("a.csv", b"t_ms,delay_us\n0,1\n"),
            Ok(Format::Csv)
        );
        assert_eq!(
            Format::detect("a.csv", b"\xEF\xBB\xBF# c\n Action , delay_us\n"),
            Ok(Format::PktCsv)
        );
        assert_eq!(
            Format::detect("a.csv", b"drop\npass,1\n"),
            Ok(Format::PktCsv)
        );
        assert_eq!(Format::detect("a.bin", b""), Ok(Format::NistBin));
        let e = Format::detect("x/a.txt", b"1\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x/a.txt: the extension .txt does not tell the trace format: add fmt=nist-txt or fmt=delays"
        );
        assert!(matches!(
            Format::detect("a.trace", b""),
            Err(FormatError::NoExtension(_))
        ));
    }

    #[test]
    fn options() {
        let mut o = TraceOptions::default();
        o.set("order", "be").unwrap();
        o.set("neg", "zero").unwrap();
        o.set("period", "10ms").unwrap();
        assert_eq!(
            o,
            TraceOptions {
                order: ByteOrder::Big,
                neg: NegPolicy::Zero,
                period_ns: Some(10_000_000)
            }
        );
        assert!(o.set("period", "0").is_err());
        assert!(o.set("order", "middle").is_err());
        assert!(matches!(
            o.set("x", "1"),
            Err(FormatError::UnknownOption(_))
        ));
    }
}
