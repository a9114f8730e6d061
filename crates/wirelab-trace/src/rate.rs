//! Link rates over time as Mahimahi delivery opportunities, and back.
//!
//! - kbit-ms: one number per line (decimals allowed, ≥ 0): the kbit the
//!   link delivers in ms `i` of the trace, `i` counting lines from 1, so a
//!   file of `N` lines lasts `N` ms. At most [`KBIT_MS_MAX`] kbit in one ms
//!   (1 Tbit/s).
//! - A Mahimahi opportunity carries 1500 bytes, [`OPPORTUNITY_BITS`]. From
//!   a rate, opportunity `k` is at the first whole ms by whose end the link
//!   has delivered `k × 12000` bits; bits short of a whole opportunity carry
//!   over to the next ms (so 6 kbit per ms is one opportunity every other
//!   ms), and those left at the end are dropped.
//! - Back from Mahimahi to kbit-ms, ms `t` gets `12 × (opportunities at t)`
//!   kbit for `t = 1 ..= period`. Opportunities at time 0 coincide with
//!   those at the period once the trace loops, so they are added to the
//!   period's ms.
//! - A time-indexed CSV converts to Mahimahi when every row has a
//!   `rate_bps` (taken to the whole bit/s) and nothing else, and the trace
//!   ends (`dur_*` rows or `period=`).
//!
//! Mahimahi's period is its last opportunity, so a trace whose last ms
//! carry no whole opportunity comes out shorter ([`RateSummary`] says both
//! lengths). Everything streams: memory does not grow with the trace.

use std::io::{BufRead, Write};

use super::csv::CsvReader;
use super::error::{ErrorKind, TraceError, WriteError};
use super::format::TraceOptions;
use super::lines::{Decimal, RecordLines};
use super::mahimahi::{MahimahiReader, MahimahiWriter};
use super::ConvertError;

/// Bits of one Mahimahi delivery opportunity (a 1500-byte packet).
pub const OPPORTUNITY_BITS: u64 = 12_000;
/// The most kbit one ms of a kbit-ms trace may hold (1 Tbit/s).
pub const KBIT_MS_MAX: u64 = 1_000_000;
/// The highest CSV rate converted, bit/s (1 Tbit/s).
pub const RATE_MAX_BPS: f64 = 1e12;

/// What a rate conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSummary {
    /// Records written: opportunities, or kbit-ms lines.
    pub records: u64,
    /// The input's length in ms (kbit-ms lines, the CSV's end rounded up,
    /// the Mahimahi period).
    pub input_ms: u64,
    /// The output's length in ms (the Mahimahi period, or kbit-ms lines).
    pub output_ms: u64,
    /// Bits short of a whole opportunity at the end, dropped.
    pub leftover_bits: u64,
}

/// Streaming kbit-ms reader: the bits of each ms (rounded to the bit).
pub struct KbitMsReader<R> {
    lines: RecordLines<R>,
}

impl<R: BufRead> KbitMsReader<R> {
    pub fn new(inner: R) -> Self {
        KbitMsReader {
            lines: RecordLines::new(inner),
        }
    }
}

impl<R: BufRead> Iterator for KbitMsReader<R> {
    type Item = Result<u64, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.lines.next_with(|line| {
            let t = line.text;
            let Some(d) = Decimal::parse(t) else {
                return Err(line.err(
                    0,
                    ErrorKind::NotNumber {
                        what: "kbit-ms value",
                        expected: "a number of kbit such as 12 or 1.5",
                        found: t.to_string(),
                    },
                ));
            };
            if d.negative {
                return Err(line.err(
                    0,
                    ErrorKind::Negative {
                        what: "kbit-ms value",
                        found: t.to_string(),
                    },
                ));
            }
            match d.scaled(1000) {
                Some(bits) if bits <= i128::from(KBIT_MS_MAX * 1000) => Ok(bits as u64),
                _ => Err(line.err(
                    0,
                    ErrorKind::TooLarge {
                        what: "kbit-ms value",
                        found: t.to_string(),
                        max: "1000000 kbit in one ms (1 Tbit/s)",
                    },
                )),
            }
        })
    }
}

/// Writes opportunities at ms `t`, numbering records for errors.
struct Opportunities<W> {
    w: MahimahiWriter<W>,
    n: u64,
    last_ms: u64,
}

impl<W: Write> Opportunities<W> {
    fn new(out: W) -> Self {
        Opportunities {
            w: MahimahiWriter::new(out),
            n: 0,
            last_ms: 0,
        }
    }

    fn put(&mut self, ms: u64) -> Result<(), ConvertError> {
        self.n += 1;
        self.last_ms = ms;
        self.w.write(ms).map_err(|source| ConvertError::Write {
            record: self.n,
            cause: source,
        })
    }

    fn finish(self, what: &str) -> Result<(u64, u64), ConvertError> {
        let (n, last) = (self.n, self.last_ms);
        self.w.finish().map_err(|source| match source {
            WriteError::Unrepresentable(_) if n == 0 => ConvertError::Output(format!(
                "{what} never delivers a whole 1500-byte opportunity (12 kbit): \
                 no Mahimahi trace"
            )),
            source => ConvertError::Write {
                record: n,
                cause: source,
            },
        })?;
        Ok((n, last))
    }
}

/// kbit-ms to Mahimahi; stops at the first bad line.
pub fn kbit_ms_to_mahimahi<R: BufRead, W: Write>(
    input: R,
    out: W,
) -> Result<RateSummary, ConvertError> {
    let mut o = Opportunities::new(out);
    let (mut ms, mut carry) = (0u64, 0u64);
    for bits in KbitMsReader::new(input) {
        let bits = bits.map_err(ConvertError::Read)?;
        ms += 1;
        carry += bits;
        for _ in 0..carry / OPPORTUNITY_BITS {
            o.put(ms)?;
        }
        carry %= OPPORTUNITY_BITS;
    }
    let (records, last) = o.finish("the kbit-ms trace")?;
    Ok(RateSummary {
        records,
        input_ms: ms,
        output_ms: last,
        leftover_bits: carry,
    })
}

/// Mahimahi to kbit-ms (lines for ms 1 ..= period); stops at the first bad
/// line.
pub fn mahimahi_to_kbit_ms<R: BufRead, W: Write>(
    input: R,
    mut out: W,
) -> Result<RateSummary, ConvertError> {
    let mut written = 0u64;
    let mut put = |ms: u64, count: u64, written: &mut u64| -> Result<(), ConvertError> {
        while *written + 1 < ms {
            *written += 1;
            writeln!(out, "0").map_err(|e| write_err(*written, e))?;
        }
        *written += 1;
        let kbit = count * (OPPORTUNITY_BITS / 1000);
        writeln!(out, "{kbit}").map_err(|e| write_err(*written, e))
    };
    let (mut at_zero, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for t in MahimahiReader::new(input) {
        let t = t.map_err(ConvertError::Read)?;
        match &mut cur {
            _ if t == 0 => at_zero += 1,
            Some((ms, count)) if *ms == t => *count += 1,
            Some((ms, count)) => {
                put(*ms, *count, &mut written)?;
                cur = Some((t, 1));
            }
            None => cur = Some((t, 1)),
        }
    }
    // The reader refuses a trace without a positive time.
    if let Some((ms, count)) = cur {
        put(ms, count + at_zero, &mut written)?;
    }
    out.flush().map_err(|e| write_err(written, e))?;
    Ok(RateSummary {
        records: written,
        input_ms: written,
        output_ms: written,
        leftover_bits: 0,
    })
}

/// Mahimahi to Mahimahi: checked and written back one time per line.
pub fn mahimahi_to_mahimahi<R: BufRead, W: Write>(
    input: R,
    out: W,
) -> Result<RateSummary, ConvertError> {
    let mut o = Opportunities::new(out);
    for t in MahimahiReader::new(input) {
        o.put(t.map_err(ConvertError::Read)?)?;
    }
    let (records, last) = o.finish("the trace")?;
    Ok(RateSummary {
        records,
        input_ms: last,
        output_ms: last,
        leftover_bits: 0,
    })
}

fn write_err(record: u64, e: std::io::Error) -> ConvertError {
    ConvertError::Write {
        record,
        cause: e.into(),
    }
}

/// A time-indexed CSV of rates to Mahimahi; stops at the first bad row or
/// a row that sets anything but `rate_bps`.
pub fn csv_to_mahimahi<R: BufRead, W: Write>(
    input: R,
    opts: &TraceOptions,
    out: W,
) -> Result<RateSummary, ConvertError> {
    const NS_PER_OPP: u128 = OPPORTUNITY_BITS as u128 * 1_000_000_000;
    let mut o = Opportunities::new(out);
    // Delivered so far, in bit·ns (bits × 10^9), at the current row's start.
    let mut delivered: u128 = 0;
    // The next opportunity's index (from 1).
    let mut k: u128 = 1;
    let mut end_ns = 0u64;
    for row in CsvReader::new(input, opts) {
        let row = row.map_err(ConvertError::Read)?;
        let line = row.line;
        let others = [
            ("delay_us", row.delay_ns.is_some()),
            ("jitter_us", row.jitter_ns.is_some()),
            ("loss", row.loss.is_some()),
            ("dup", row.dup.is_some()),
            ("corrupt", row.corrupt.is_some()),
            ("reorder", row.reorder.is_some()),
            ("limit", row.limit.is_some()),
        ];
        if let Some((name, _)) = others.iter().find(|(_, set)| *set) {
            return Err(ConvertError::Row {
                line,
                message: format!(
                    "{name} has no Mahimahi form (Mahimahi traces hold a rate only): leave \
                     the column out"
                ),
            });
        }
        let Some(rate) = row.rate_bps else {
            return Err(ConvertError::Row {
                line,
                message: "no rate_bps: Mahimahi needs a rate at every time".into(),
            });
        };
        if rate > RATE_MAX_BPS {
            return Err(ConvertError::Row {
                line,
                message: format!("rate {rate} bit/s is above 1 Tbit/s"),
            });
        }
        let Some(end) = row.end_ns else {
            return Err(ConvertError::Row {
                line,
                message: "the last row lasts forever: give the trace an end with period= \
                          (or use dur_ms rows)"
                    .into(),
            });
        };
        let r = (rate.round() as u128).max(1);
        let (s, e) = (u128::from(row.start_ns), u128::from(end));
        // Opportunity k completes at s + ⌈(k·12000·10^9 − delivered) / r⌉ ns.
        loop {
            let need = (k * NS_PER_OPP).saturating_sub(delivered);
            let t = s + need.div_ceil(r);
            if t > e {
                break;
            }
            let ms = u64::try_from(t.div_ceil(1_000_000)).unwrap_or(u64::MAX);
            o.put(ms)?;
            k += 1;
        }
        delivered += r * (e - s);
        end_ns = end;
    }
    let (records, last) = o.finish("the CSV trace")?;
    let leftover = delivered.saturating_sub((k - 1) * NS_PER_OPP) / 1_000_000_000;
    Ok(RateSummary {
        records,
        input_ms: end_ns.div_ceil(1_000_000),
        output_ms: last,
        leftover_bits: u64::try_from(leftover).unwrap_or(u64::MAX),
    })
}

/// A short description of a summary's lengths, for a converter's report.
pub fn describe(s: &RateSummary) -> String {
    let mut t = format!("{} ms in, {} ms out", s.input_ms, s.output_ms);
    if s.leftover_bits > 0 {
        t.push_str(&format!(
            "; {} bits short of a whole opportunity at the end dropped",
            s.leftover_bits
        ));
    }
    if s.input_ms > s.output_ms {
        t.push_str(&format!(
            "; no whole opportunity in the last {} ms (Mahimahi's period is its last \
             opportunity)",
            s.input_ms - s.output_ms
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k2m(text: &str) -> Result<(String, RateSummary), ConvertError> {
        let mut out = Vec::new();
        let s = kbit_ms_to_mahimahi(text.as_bytes(), &mut out)?;
        Ok((String::from_utf8(out).unwrap(), s))
    }

    fn m2k(text: &str) -> Result<(String, RateSummary), ConvertError> {
        let mut out = Vec::new();
        let s = mahimahi_to_kbit_ms(text.as_bytes(), &mut out)?;
        Ok((String::from_utf8(out).unwrap(), s))
    }

    fn c2m(text: &str, period_ns: Option<u64>) -> Result<(String, RateSummary), ConvertError> {
        let mut out = Vec::new();
        let opts = TraceOptions {
            period_ns,
            ..TraceOptions::default()
        };
        let s = csv_to_mahimahi(text.as_bytes(), &opts, &mut out)?;
        Ok((String::from_utf8(out).unwrap(), s))
    }

    #[test]
    fn kbit_ms_carries_partial_opportunities() {
        // 12 kbit = one opportunity; 6 kbit per ms = one every other ms.
        let (m, s) = k2m("12\n6\n6\n24\n0\n6.5\n").unwrap();
        assert_eq!(m, "1\n3\n4\n4\n");
        assert_eq!(
            s,
            RateSummary {
                records: 4,
                input_ms: 6,
                output_ms: 4,
                leftover_bits: 6500
            }
        );
        assert_eq!(
            describe(&s),
            "6 ms in, 4 ms out; 6500 bits short of a whole opportunity at the end dropped; no \
             whole opportunity in the last 2 ms (Mahimahi's period is its last opportunity)"
        );
    }

    #[test]
    fn round_trips_are_byte_exact() {
        let mm = "1\n3\n3\n4\n7\n7\n7\n";
        let (k, _) = m2k(mm).unwrap();
        assert_eq!(k, "12\n0\n24\n12\n0\n0\n36\n");
        let (back, s) = k2m(&k).unwrap();
        assert_eq!(back, mm);
        assert_eq!(s.leftover_bits, 0);
        // Opportunities at time 0 join the period's ms.
        let (k0, _) = m2k("0\n2\n").unwrap();
        assert_eq!(k0, "0\n24\n");
        let mut out = Vec::new();
        mahimahi_to_mahimahi(mm.as_bytes(), &mut out).unwrap();
        assert_eq!(out, mm.as_bytes());
    }

    #[test]
    fn csv_rates_to_opportunities() {
        // 12 Mbit/s is one opportunity per ms; 6 Mbit/s one per 2 ms.
        let (m, s) = c2m("dur_ms,rate_bps\n3,12Mbit\n4,6000000\n", None).unwrap();
        assert_eq!(m, "1\n2\n3\n5\n7\n");
        assert_eq!((s.input_ms, s.output_ms, s.leftover_bits), (7, 7, 0));
        // A row boundary inside a ms: 0.5 ms at 12 Mbit/s, then 24 Mbit/s.
        let (m, _) = c2m("t_us,rate_bps\n0,12Mbit\n500,24Mbit\n", Some(2_000_000)).unwrap();
        // 6000 bits by 0.5 ms, then 24 bits/µs: 12000 at 0.75 ms, 24000 at
        // 1.25 ms, 36000 at 1.75 ms.
        assert_eq!(m, "1\n2\n2\n");
        // Before the first row there is no rate: no opportunity.
        let (m, _) = c2m("t_ms,rate_bps\n2,12Mbit\n", Some(4_000_000)).unwrap();
        assert_eq!(m, "3\n4\n");
    }

    #[test]
    fn csv_refusals() {
        let e = c2m("dur_ms,rate_bps,delay_us\n3,12Mbit,5\n", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: delay_us has no Mahimahi form (Mahimahi traces hold a rate only): leave \
             the column out"
        );
        let e = c2m("t_ms,rate_bps\n0,12Mbit\n", None).unwrap_err();
        assert!(e.to_string().contains("lasts forever"), "{e}");
        let e = c2m("dur_ms,rate_bps\n3,\n", None).unwrap_err();
        assert!(e.to_string().contains("no rate_bps"), "{e}");
        let e = c2m("dur_ms,rate_bps\n1,1000\n", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the CSV trace never delivers a whole 1500-byte opportunity (12 kbit): \
             no Mahimahi trace"
        );
    }

    #[test]
    fn bad_kbit_ms_lines() {
        let msg = |t: &str| match k2m(t).unwrap_err() {
            ConvertError::Read(e) => e.in_file("r.kbit").to_string(),
            e => panic!("{e}"),
        };
        assert_eq!(msg(""), "r.kbit:1:1: empty trace: no records");
        assert_eq!(
            msg("12\n fast\n"),
            "r.kbit:2:2: kbit-ms value: expected a number of kbit such as 12 or 1.5, found \"fast\""
        );
        assert_eq!(
            msg("-1\n"),
            "r.kbit:1:1: kbit-ms value must not be negative, found -1"
        );
        assert_eq!(
            msg("1000001\n"),
            "r.kbit:1:1: kbit-ms value 1000001 is above the largest value, 1000000 kbit in one \
             ms (1 Tbit/s)"
        );
        // Bad Mahimahi input names its place too.
        match m2k("3\n2\n").unwrap_err() {
            ConvertError::Read(e) => assert_eq!(
                e.in_file("l.up").to_string(),
                "l.up:2:1: time 2ms goes backwards (previous 3ms)"
            ),
            e => panic!("{e}"),
        }
    }
}
