//! One entry per record of any trace, for `wirelab trace dump`, and single
//! nist words for `wirelab trace encode`.
//!
//! nist-bin and nist-txt entries carry the raw word, so its three fields
//! (action bits 31–30, sign bit 29, delay bits 28–0) can be shown even for
//! a word that does not decode. A bad record is an entry of its own; the
//! reader goes on after it unless the error ends the trace.

use std::io::BufRead;

use serde::Serialize;

use super::csv::{CsvReader, CsvRow};
use super::delays::DelaysReader;
use super::dist::{DistTable, NETEM_DIST_SCALE};
use super::error::TraceError;
use super::format::{Format, TraceOptions};
use super::lines::format_us;
use super::mahimahi::MahimahiReader;
use super::nist::{
    decode_txt_word, decode_word, split_word, NistBinReader, NistTxtReader, MAX_DELAY_US,
};
use super::packet::PacketReader;
use super::pktcsv::PktCsvReader;
use super::{Action, Record};

/// One dumped record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DumpEntry {
    /// 1-based, counting bad records too.
    pub record: u64,
    /// The raw word (nist formats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub word: Option<u32>,
    #[serde(flatten)]
    pub value: DumpValue,
}

/// What a record holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DumpValue {
    Packet {
        /// `delay`, `drop`, `dup` or `corrupt`.
        action: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        delay_ns: Option<u64>,
    },
    /// A Mahimahi delivery opportunity.
    Opportunity { t_ms: u64 },
    /// A time-indexed CSV row (ns; `None`: the cell was empty).
    Row {
        line: u64,
        start_ns: u64,
        end_ns: Option<u64>,
        delay_ns: Option<u64>,
        jitter_ns: Option<u64>,
        rate_bps: Option<f64>,
        loss: Option<f64>,
        dup: Option<f64>,
        corrupt: Option<f64>,
        reorder: Option<f64>,
        limit: Option<u64>,
    },
    /// A `.dist` entry and its standardised value (`entry / 8192`).
    Entry { value: i16, standard: f64 },
    /// A bad record: the message with the file's name and the position.
    Error { error: String },
}

impl DumpEntry {
    /// The entry as one line of text; `bits`: show a word's fields.
    pub fn text(&self, bits: bool) -> String {
        let mut t = self.record.to_string();
        if let (true, Some(w)) = (bits, self.word) {
            t.push_str(&format!(" {w:#010x} {}", word_bits(w)));
        }
        match &self.value {
            DumpValue::Packet { action, delay_ns } => {
                t.push(' ');
                t.push_str(action);
                if let Some(ns) = delay_ns {
                    t.push_str(&format!(" {}us", format_us(*ns)));
                }
            }
            DumpValue::Opportunity { t_ms } => t.push_str(&format!(" {t_ms}ms")),
            DumpValue::Row {
                start_ns,
                end_ns,
                delay_ns,
                jitter_ns,
                rate_bps,
                loss,
                dup,
                corrupt,
                reorder,
                limit,
                ..
            } => {
                let end = end_ns.map_or("end".into(), |e| format!("{}us", format_us(e)));
                t.push_str(&format!(" {}us..{end}", format_us(*start_ns)));
                let us = |n: &Option<u64>| n.map(|v| format!("{}us", format_us(v)));
                let p = |x: &Option<f64>| x.map(|v| v.to_string());
                for (name, v) in [
                    ("delay", us(delay_ns)),
                    ("jitter", us(jitter_ns)),
                    ("rate", rate_bps.map(|r| format!("{r}bps"))),
                    ("loss", p(loss)),
                    ("dup", p(dup)),
                    ("corrupt", p(corrupt)),
                    ("reorder", p(reorder)),
                    ("limit", limit.map(|l| l.to_string())),
                ] {
                    if let Some(v) = v {
                        t.push_str(&format!(" {name} {v}"));
                    }
                }
            }
            DumpValue::Entry { value, standard } => {
                t.push_str(&format!(" {value} {standard:.6}"));
            }
            DumpValue::Error { error } => t.push_str(&format!(" error: {error}")),
        }
        t
    }

    pub fn is_error(&self) -> bool {
        matches!(self.value, DumpValue::Error { .. })
    }
}

/// A word's fields: `AA S DDDD…` (2, 1 and 29 bits).
pub fn word_bits(word: u32) -> String {
    let f = split_word(word);
    format!(
        "{:02b} {} {:029b}",
        f.action,
        u8::from(f.negative),
        f.delay_us
    )
}

fn packet_value(rec: &Record) -> DumpValue {
    let (action, delay_ns) = match rec.action {
        Action::Delay { delay_ns } if rec.corrupt => ("corrupt", Some(delay_ns)),
        Action::Delay { delay_ns } => ("delay", Some(delay_ns)),
        Action::Drop => ("drop", None),
        Action::Duplicate { delay_ns } => ("dup", Some(delay_ns)),
    };
    DumpValue::Packet { action, delay_ns }
}

enum Source<R> {
    NistBin(NistBinReader<R>),
    NistTxt(NistTxtReader<R>),
    Packet(PacketReader<R>),
    Mahimahi(MahimahiReader<R>),
    Csv(Box<CsvReader<R>>),
    Dist(Option<R>, std::vec::IntoIter<i16>),
}

/// The entries of a trace, streamed (a `.dist` table, at most 16,384
/// entries, is read whole first).
pub struct Dump<R> {
    name: String,
    source: Source<R>,
    record: u64,
    errors: u64,
    neg: super::format::NegPolicy,
}

impl<R: BufRead> Dump<R> {
    /// Dumps `input`, a file called `name` (for error messages), as
    /// `format`.
    pub fn new(format: Format, opts: &TraceOptions, name: &str, input: R) -> Self {
        let source = match format {
            Format::NistBin => Source::NistBin(NistBinReader::new(input, opts.order, opts.neg)),
            Format::NistTxt => Source::NistTxt(NistTxtReader::new(input, opts.neg)),
            Format::Mahimahi => Source::Mahimahi(MahimahiReader::new(input)),
            Format::Csv => Source::Csv(Box::new(CsvReader::new(input, opts))),
            Format::Dist => Source::Dist(Some(input), Vec::new().into_iter()),
            Format::Delays => {
                Source::Packet(PacketReader::Delays(DelaysReader::new(input, opts.neg)))
            }
            Format::PktCsv => {
                Source::Packet(PacketReader::PktCsv(PktCsvReader::new(input, opts.neg)))
            }
        };
        Dump {
            name: name.to_string(),
            source,
            record: 0,
            errors: 0,
            neg: opts.neg,
        }
    }

    /// Bad records so far.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    fn error(&mut self, e: TraceError, word: Option<u32>) -> DumpEntry {
        self.errors += 1;
        DumpEntry {
            record: self.record,
            word,
            value: DumpValue::Error {
                error: e.in_file(self.name.clone()).to_string(),
            },
        }
    }
}

impl<R: BufRead> Iterator for Dump<R> {
    type Item = DumpEntry;

    fn next(&mut self) -> Option<DumpEntry> {
        let neg = self.neg;
        // Each source's item: a value, or an error (with the word, if any).
        let item: Result<(Option<u32>, DumpValue), (TraceError, Option<u32>)> =
            match &mut self.source {
                Source::NistBin(r) => match r.next_word()? {
                    Ok((pos, w)) => decode_word(w, neg)
                        .map(|a| (Some(w), packet_value(&Record::from(a))))
                        .map_err(|k| (TraceError::new(pos, k), Some(w))),
                    Err(e) => Err((e, None)),
                },
                Source::NistTxt(r) => match r.next_word()? {
                    Ok((pos, w)) => decode_txt_word(w, neg)
                        .map(|a| (Some(w), packet_value(&Record::from(a))))
                        .map_err(|k| (TraceError::new(pos, k), Some(w))),
                    Err(e) => Err((e, None)),
                },
                Source::Packet(r) => match r.next()? {
                    Ok(rec) => Ok((None, packet_value(&rec))),
                    Err(e) => Err((e, None)),
                },
                Source::Mahimahi(r) => match r.next()? {
                    Ok(t_ms) => Ok((None, DumpValue::Opportunity { t_ms })),
                    Err(e) => Err((e, None)),
                },
                Source::Csv(r) => match r.next()? {
                    Ok(row) => Ok((None, row_value(&row))),
                    Err(e) => Err((e, None)),
                },
                Source::Dist(input, entries) => {
                    if let Some(input) = input.take() {
                        match DistTable::read(input) {
                            Ok(t) => *entries = t.entries().to_vec().into_iter(),
                            Err(e) => {
                                self.record += 1;
                                return Some(self.error(e, None));
                            }
                        }
                    }
                    let value = entries.next()?;
                    Ok((
                        None,
                        DumpValue::Entry {
                            value,
                            standard: f64::from(value) / NETEM_DIST_SCALE as f64,
                        },
                    ))
                }
            };
        self.record += 1;
        Some(match item {
            Ok((word, value)) => DumpEntry {
                record: self.record,
                word,
                value,
            },
            Err((e, word)) => self.error(e, word),
        })
    }
}

fn row_value(r: &CsvRow) -> DumpValue {
    DumpValue::Row {
        line: r.line,
        start_ns: r.start_ns,
        end_ns: r.end_ns,
        delay_ns: r.delay_ns,
        jitter_ns: r.jitter_ns,
        rate_bps: r.rate_bps,
        loss: r.loss,
        dup: r.dup,
        corrupt: r.corrupt,
        reorder: r.reorder,
        limit: r.limit,
    }
}

/// The action of a word built by [`encode_word`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordAction {
    Delay,
    Drop,
    Dup,
}

/// One nist word from its fields: `delay_us` may be negative (the sign
/// bit, for testing `neg=`); a drop takes no delay.
pub fn encode_word(action: WordAction, delay_us: i64) -> Result<u32, String> {
    let bits: u32 = match action {
        WordAction::Delay => 0,
        WordAction::Drop => {
            if delay_us != 0 {
                return Err("a drop has no delay: leave --delay-us out".into());
            }
            return Ok(1 << 30);
        }
        WordAction::Dup => 2,
    };
    let mag = delay_us.unsigned_abs();
    if mag > u64::from(MAX_DELAY_US) {
        return Err(format!(
            "delay {delay_us}us does not fit the word's 29 bits (at most {MAX_DELAY_US}us either way)"
        ));
    }
    let sign = if delay_us < 0 { 1u32 << 29 } else { 0 };
    Ok(bits << 30 | sign | mag as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(format: Format, input: &[u8], bits: bool) -> (Vec<String>, u64) {
        let mut d = Dump::new(format, &TraceOptions::default(), "t", input);
        let lines = d.by_ref().take(100).map(|e| e.text(bits)).collect();
        (lines, d.errors())
    }

    const S1_LE: [u8; 12] = [0xe8, 0x03, 0, 0, 0, 0, 0, 0x40, 0xd0, 0x07, 0, 0x80];

    #[test]
    fn nist_bin_words_and_bits() {
        let (lines, errors) = dump(Format::NistBin, &S1_LE, true);
        assert_eq!(
            lines,
            [
                "1 0x000003e8 00 0 00000000000000000001111101000 delay 1000us",
                "2 0x40000000 01 0 00000000000000000000000000000 drop",
                "3 0x800007d0 10 0 00000000000000000011111010000 dup 2000us",
            ]
        );
        assert_eq!(errors, 0);
        let (plain, _) = dump(Format::NistBin, &S1_LE, false);
        assert_eq!(plain, ["1 delay 1000us", "2 drop", "3 dup 2000us"]);
        // A bad word still shows its bits; the dump goes on.
        let (lines, errors) = dump(Format::NistBin, &[0, 0, 0, 0xc0, 5, 0, 0, 0, 1], true);
        assert_eq!(
            lines,
            [
                "1 0xc0000000 11 0 00000000000000000000000000000 error: t: byte 0 (record 1): \
                 action bits 11 are not used (word 0xc0000000)",
                "2 0x00000005 00 0 00000000000000000000000000101 delay 5us",
                "3 error: t: byte 8 (record 3): nist-bin length is not a multiple of 4: the \
                 last record has 1 of 4 bytes (truncated file?)",
            ]
        );
        assert_eq!(errors, 2);
    }

    #[test]
    fn nist_txt_words() {
        let mut d = Dump::new(
            Format::NistTxt,
            &TraceOptions::default(),
            "t.txt",
            &b"-2147481648\n536870917\n"[..],
        );
        let e = d.next().unwrap();
        assert_eq!(e.word, Some(0x8000_07d0));
        assert_eq!(e.text(false), "1 dup 2000us");
        let e = d.next().unwrap();
        assert_eq!(
            e.text(true),
            "2 0x20000005 00 1 00000000000000000000000000101 error: t.txt:2:1: negative delay \
             -5us (neg=zero makes negative delays 0)"
        );
        assert_eq!(d.next(), None);
    }

    #[test]
    fn other_formats() {
        let (l, _) = dump(
            Format::PktCsv,
            b"action,delay_us\ncorrupt,1.5\ndrop\n",
            false,
        );
        assert_eq!(l, ["1 corrupt 1.5us", "2 drop"]);
        let (l, _) = dump(Format::Mahimahi, b"1\n3\n3\n", false);
        assert_eq!(l, ["1 1ms", "2 3ms", "3 3ms"]);
        let (l, _) = dump(
            Format::Csv,
            b"dur_ms,delay_us,rate_bps,loss\n2,1000,12Mbit,\n1,,,1%\n",
            false,
        );
        assert_eq!(
            l,
            [
                "1 0us..2000us delay 1000us rate 12000000bps",
                "2 2000us..3000us loss 0.01"
            ]
        );
        let (l, _) = dump(Format::Dist, b"# t\n-8192 4096\n", false);
        assert_eq!(l, ["1 -8192 -1.000000", "2 4096 0.500000"]);
        let (l, e) = dump(Format::Dist, b"1 x\n", false);
        assert_eq!(
            l,
            ["1 error: t:1:3: .dist entry: expected an integer, found \"x\""]
        );
        assert_eq!(e, 1);
        let (l, e) = dump(Format::Delays, b"", false);
        assert_eq!(l, ["1 error: t:1:1: empty trace: no records"]);
        assert_eq!(e, 1);
    }

    #[test]
    fn encode_words() {
        assert_eq!(encode_word(WordAction::Delay, 1000), Ok(1000));
        assert_eq!(encode_word(WordAction::Drop, 0), Ok(0x4000_0000));
        assert_eq!(encode_word(WordAction::Dup, 500), Ok(0x8000_01f4));
        assert_eq!(encode_word(WordAction::Dup, -5), Ok(0xa000_0005));
        assert_eq!(encode_word(WordAction::Delay, 536_870_911), Ok(0x1fff_ffff));
        assert!(encode_word(WordAction::Delay, 536_870_912).is_err());
        assert!(encode_word(WordAction::Drop, 3).is_err());
        assert_eq!(word_bits(0xa000_0005), "10 1 00000000000000000000000000101");
    }
}
