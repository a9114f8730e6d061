//! Conversion between any two trace formats that can say the same thing:
//!
//! | from | to |
//! |---|---|
//! | nist-bin, nist-txt, delays, pkt-csv | any of these ([`super::packet::convert`]) |
//! | kbit-ms, csv (`rate_bps` only), mahimahi | mahimahi ([`super::rate`]) |
//! | mahimahi | kbit-ms |
//!
//! Packet traces say what happens to each packet, time-indexed ones how the
//! link behaves over time: neither converts to the other.

use std::fmt;
use std::io::{BufRead, Write};
use std::str::FromStr;

use super::format::{Format, FormatError, Indexing, TraceOptions};
use super::packet::{convert, ConvertError};
use super::rate::{self, RateSummary};

/// A format `convert` reads or writes: a trace format, or the kbit-ms rate
/// series (convert-only: the emulator does not read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvFormat {
    Trace(Format),
    KbitMs,
}

impl ConvFormat {
    pub fn name(self) -> &'static str {
        match self {
            ConvFormat::Trace(f) => f.name(),
            ConvFormat::KbitMs => "kbit-ms",
        }
    }

    /// The format of input file `path` whose first bytes are `head`:
    /// `.kbit` is kbit-ms, else as [`Format::detect`].
    pub fn for_input(path: &str, head: &[u8]) -> Result<ConvFormat, FormatError> {
        if is_kbit(path) {
            return Ok(ConvFormat::KbitMs);
        }
        Format::detect(path, head).map(ConvFormat::Trace)
    }

    /// The format of an output file: by its extension, `.kbit` for
    /// kbit-ms; a `.csv` file is pkt-csv after a packet trace. `None`: the
    /// name does not tell.
    pub fn for_output(path: &str, input: ConvFormat) -> Option<ConvFormat> {
        let lower = path.to_ascii_lowercase();
        if is_kbit(path) {
            return Some(ConvFormat::KbitMs);
        }
        if let Some(f) = Format::from_extension(path) {
            return Some(ConvFormat::Trace(f));
        }
        let packet_in = matches!(input, ConvFormat::Trace(f) if f.indexing() == Indexing::Packet);
        (lower.ends_with(".csv") && packet_in).then_some(ConvFormat::Trace(Format::PktCsv))
    }
}

/// The packet format an output file's name tells (a `.csv` file is
/// pkt-csv); `None`: the name tells none (or kbit-ms, not a packet trace's).
pub fn packet_output(path: &str) -> Option<Format> {
    match ConvFormat::for_output(path, ConvFormat::Trace(Format::PktCsv)) {
        Some(ConvFormat::Trace(f)) => Some(f),
        _ => None,
    }
}

fn is_kbit(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    name.len() > ".kbit".len() && name.ends_with(".kbit")
}

impl fmt::Display for ConvFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ConvFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "kbit-ms" | "kbit" => Ok(ConvFormat::KbitMs),
            _ => s.parse().map(ConvFormat::Trace).map_err(|_| {
                format!(
                    "unknown format {:?}: use nist-bin, nist-txt, delays, pkt-csv, mahimahi, \
                     csv or kbit-ms",
                    s.trim()
                )
            }),
        }
    }
}

/// What a conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvSummary {
    /// Packet records written.
    Packets(u64),
    Rate(RateSummary),
}

const HINT: &str = "packet traces (nist-bin, nist-txt, delays, pkt-csv) convert among \
                    themselves; kbit-ms, csv (rate_bps) and mahimahi convert to mahimahi, and \
                    mahimahi to kbit-ms";

/// Converts `input` in `from` to `out` in `to`, streaming; stops at the
/// first bad record.
pub fn convert_any<R: BufRead, W: Write>(
    from: ConvFormat,
    from_opts: &TraceOptions,
    input: R,
    to: ConvFormat,
    to_opts: &TraceOptions,
    out: W,
) -> Result<ConvSummary, ConvertError> {
    use ConvFormat::{KbitMs, Trace};
    let packet = |f: Format| f.indexing() == Indexing::Packet;
    match (from, to) {
        (Trace(f), Trace(t)) if packet(f) && packet(t) => {
            convert(f, from_opts, input, t, to_opts, out).map(ConvSummary::Packets)
        }
        (KbitMs, Trace(Format::Mahimahi)) => {
            rate::kbit_ms_to_mahimahi(input, out).map(ConvSummary::Rate)
        }
        (Trace(Format::Csv), Trace(Format::Mahimahi)) => {
            rate::csv_to_mahimahi(input, from_opts, out).map(ConvSummary::Rate)
        }
        (Trace(Format::Mahimahi), Trace(Format::Mahimahi)) => {
            rate::mahimahi_to_mahimahi(input, out).map(ConvSummary::Rate)
        }
        (Trace(Format::Mahimahi), KbitMs) => {
            rate::mahimahi_to_kbit_ms(input, out).map(ConvSummary::Rate)
        }
        _ => Err(ConvertError::Unsupported {
            from: from.to_string(),
            to: to.to_string(),
            hint: HINT,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(from: &str, input: &[u8], to: &str) -> Result<Vec<u8>, ConvertError> {
        let o = TraceOptions::default();
        let mut out = Vec::new();
        convert_any(
            from.parse().unwrap(),
            &o,
            input,
            to.parse().unwrap(),
            &o,
            &mut out,
        )?;
        Ok(out)
    }

    #[test]
    fn packet_output_names() {
        assert_eq!(packet_output("a.bin"), Some(Format::NistBin));
        assert_eq!(packet_output("dir/a.csv"), Some(Format::PktCsv));
        assert_eq!(packet_output("a.up"), Some(Format::Mahimahi));
        assert_eq!(packet_output("a.kbit"), None);
        assert_eq!(packet_output("a.zz"), None);
    }

    #[test]
    fn packet_round_trips_are_byte_exact() {
        let s1 = "1000\n1073741824\n-2147481648\n3000\n-2147483148\n-2147483048\n700\n";
        let bin = conv("nist-txt", s1.as_bytes(), "nist-bin").unwrap();
        let csv = conv("nist-bin", &bin, "pkt-csv").unwrap();
        let txt = conv("pkt-csv", &csv, "nist-txt").unwrap();
        assert_eq!(txt, s1.as_bytes());
        let bin2 = conv("nist-txt", &txt, "nist-bin").unwrap();
        assert_eq!(bin2, bin);
        // delays ⇄ pkt-csv keep nanoseconds.
        let d = "1500.25\ndrop\n0.001\n";
        let p = conv("delays", d.as_bytes(), "pkt-csv").unwrap();
        assert_eq!(
            String::from_utf8(p.clone()).unwrap(),
            "action,delay_us\npass,1500.25\ndrop,0\npass,0.001\n"
        );
        assert_eq!(conv("pkt-csv", &p, "delays").unwrap(), d.as_bytes());
    }

    #[test]
    fn rate_round_trip_and_refusals() {
        let mm = b"2\n2\n5\n";
        let k = conv("mm", mm, "kbit-ms").unwrap();
        assert_eq!(k, b"0\n24\n0\n0\n12\n");
        assert_eq!(conv("kbit-ms", &k, "mahimahi").unwrap(), mm);
        let e = conv("delays", b"1\n", "mahimahi").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot convert delays to mahimahi: {HINT}")
        );
        assert!(conv("mahimahi", mm, "csv").is_err());
        assert!(conv("kbit-ms", b"12\n", "nist-bin").is_err());
    }

    #[test]
    fn names_and_output_formats() {
        assert_eq!("KBIT-MS".parse::<ConvFormat>(), Ok(ConvFormat::KbitMs));
        assert_eq!(
            "mm".parse::<ConvFormat>(),
            Ok(ConvFormat::Trace(Format::Mahimahi))
        );
        assert_eq!(
            "x".parse::<ConvFormat>().unwrap_err().to_string(),
            "unknown format \"x\": use nist-bin, nist-txt, delays, pkt-csv, mahimahi, csv or \
             kbit-ms"
        );
        let pkt = ConvFormat::Trace(Format::NistBin);
        assert_eq!(
            ConvFormat::for_output("o.csv", pkt),
            Some(ConvFormat::Trace(Format::PktCsv))
        );
        assert_eq!(ConvFormat::for_output("o.csv", ConvFormat::KbitMs), None);
        assert_eq!(
            ConvFormat::for_output("r.kbit", pkt),
            Some(ConvFormat::KbitMs)
        );
        assert_eq!(
            ConvFormat::for_output("l.up", pkt),
            Some(ConvFormat::Trace(Format::Mahimahi))
        );
        assert_eq!(ConvFormat::for_output("o.txt", pkt), None);
        assert_eq!(ConvFormat::for_output("d/.kbit", pkt), None);
        assert_eq!(
            ConvFormat::for_input("a/r.KBIT", b""),
            Ok(ConvFormat::KbitMs)
        );
        assert_eq!(
            ConvFormat::for_input("l.up", b""),
            Ok(ConvFormat::Trace(Format::Mahimahi))
        );
    }
}
