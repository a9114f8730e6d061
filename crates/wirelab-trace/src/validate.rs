//! A full pre-scan of a trace (the emulator's check of every file a stage
//! reads, before it starts): the first error, or a summary of what the
//! trace holds. Streams like the readers: memory does not grow with the
//! trace.

use std::io::BufRead;

use super::csv::CsvReader;
use super::delays::DelaysReader;
use super::dist::DistTable;
use super::error::TraceError;
use super::format::{Format, TraceOptions};
use super::mahimahi::MahimahiReader;
use super::nist::{NistBinReader, NistTxtReader};
use super::pktcsv::PktCsvReader;
use super::{Action, Record};

/// What a valid trace holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Packet records, Mahimahi opportunities, CSV rows or `.dist` entries.
    pub records: u64,
    /// Packet traces: records by action (a corrupt record is also a delay).
    pub delays: u64,
    pub drops: u64,
    pub dups: u64,
    pub corrupts: u64,
    /// Packet traces: smallest and largest delay (delays and duplicates).
    pub min_delay_ns: Option<u64>,
    pub max_delay_ns: Option<u64>,
    /// Time-indexed traces: the length (Mahimahi: the period; CSV: the last
    /// row's end, `None` when the last row lasts forever).
    pub length_ns: Option<u64>,
}

impl Summary {
    fn delay(&mut self, ns: u64) {
        self.min_delay_ns = Some(self.min_delay_ns.map_or(ns, |m| m.min(ns)));
        self.max_delay_ns = Some(self.max_delay_ns.map_or(ns, |m| m.max(ns)));
    }
}

/// Reads the whole of `input` as `format`; the first error stops it.
pub fn validate<R: BufRead>(
    format: Format,
    opts: &TraceOptions,
    input: R,
) -> Result<Summary, TraceError> {
    let mut s = Summary::default();
    match format {
        Format::NistBin => packets(
            &mut s,
            NistBinReader::new(input, opts.order, opts.neg).map(|r| r.map(Record::from)),
        )?,
        Format::NistTxt => packets(
            &mut s,
            NistTxtReader::new(input, opts.neg).map(|r| r.map(Record::from)),
        )?,
        Format::Delays => packets(
            &mut s,
            DelaysReader::new(input, opts.neg).map(|r| r.map(Record::from)),
        )?,
        Format::PktCsv => packets(&mut s, PktCsvReader::new(input, opts.neg))?,
        Format::Mahimahi => {
            let mut reader = MahimahiReader::new(input);
            for t in reader.by_ref() {
                t?;
                s.records += 1;
            }
            s.length_ns = reader.last_time().map(|ms| ms.saturating_mul(1_000_000));
        }
        Format::Csv => {
            for row in CsvReader::new(input, opts) {
                let row = row?;
                s.records += 1;
                s.length_ns = row.end_ns;
            }
        }
        Format::Dist => s.records = DistTable::read(input)?.len() as u64,
    }
    Ok(s)
}

fn packets(
    s: &mut Summary,
    records: impl Iterator<Item = Result<Record, TraceError>>,
) -> Result<(), TraceError> {
    for rec in records {
        let rec = rec?;
        s.records += 1;
        s.corrupts += u64::from(rec.corrupt);
        match rec.action {
            Action::Delay { delay_ns } => {
                s.delays += 1;
                s.delay(delay_ns);
            }
            Action::Drop => s.drops += 1,
            Action::Duplicate { delay_ns } => {
                s.dups += 1;
                s.delay(delay_ns);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn summaries() {
        let o = TraceOptions::default();
        let s = validate(Format::PktCsv, &o, &b"pass,5\ndrop\ndup,2\ncorrupt,9\n"[..]).unwrap();
        assert_eq!(
            s,
            Summary {
                records: 4,
                delays: 2,
                drops: 1,
                dups: 1,
                corrupts: 1,
                min_delay_ns: Some(2000),
                max_delay_ns: Some(9000),
                length_ns: None,
            }
        );
        let s = validate(Format::Mahimahi, &o, &b"1\n1\n4\n"[..]).unwrap();
        assert_eq!((s.records, s.length_ns), (3, Some(4_000_000)));
        let s = validate(Format::Csv, &o, &b"dur_ms,loss\n1,0\n2,0\n"[..]).unwrap();
        assert_eq!((s.records, s.length_ns), (2, Some(3_000_000)));
        let s = validate(Format::Dist, &o, &b"1 2 3\n"[..]).unwrap();
        assert_eq!(s.records, 3);
    }

    #[test]
    fn first_error_stops_the_scan() {
        let o = TraceOptions::default();
        let e = validate(Format::Delays, &o, &b"1\n2\n-3\nx y\n"[..]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "3:1: negative delay -3 (neg=zero makes negative delays 0)"
        );
        let e = validate(Format::Mahimahi, &o, &b"0\n"[..]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PeriodZero);
        let e = validate(Format::NistBin, &o, &b"\x01\x00\x00\x00\x01"[..]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated(1));
    }
}
