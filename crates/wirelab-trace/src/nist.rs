//! NIST Net's trace words (the NIST Net trace-emulation thesis, §5.2) in
//! binary (nist-bin) and text (nist-txt).
//!
//! One 32-bit word per packet:
//!
//! ```text
//!  31 30 | 29   | 28 ............................ 0
//!  action| sign | delay magnitude in µs (≤ 536,870,911)
//! ```
//!
//! action 00 delay, 01 drop, 10 duplicate, 11 unused (an error). The delay
//! is sign-magnitude: sign 1 means the delay is negative (refused unless
//! `neg=zero`; a negative zero is 0). A drop's sign and delay bits are
//! ignored; writers write them as 0. nist-bin stores each word in 4 bytes,
//! little-endian by default, big-endian with `order=be`. nist-txt has one
//! integer per line, the word itself as `txt2bin` reads it: written as a
//! signed 32-bit integer (a duplicate's word is negative), read from the
//! signed or the unsigned range.

use std::io::{BufRead, ErrorKind as IoKind, Write};

use super::error::{io_kind, ErrorKind, Pos, TraceError, WriteError};
use super::format::{ByteOrder, NegPolicy};
use super::lines::{parse_int, RecordLines};
use super::Action;

/// The largest delay a word holds: 2^29 − 1 µs.
pub const MAX_DELAY_US: u32 = (1 << 29) - 1;
const SIGN_BIT: u32 = 1 << 29;
const ACTION_SHIFT: u32 = 30;

/// The three fields of a word, undecoded (for dumps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WordFields {
    /// Bits 31–30.
    pub action: u8,
    /// Bit 29.
    pub negative: bool,
    /// Bits 28–0, µs.
    pub delay_us: u32,
}

pub fn split_word(word: u32) -> WordFields {
    WordFields {
        action: (word >> ACTION_SHIFT) as u8,
        negative: word & SIGN_BIT != 0,
        delay_us: word & MAX_DELAY_US,
    }
}

/// Decodes a word into an action.
pub fn decode_word(word: u32, neg: NegPolicy) -> Result<Action, ErrorKind> {
    decode(word, neg, false)
}

fn decode(word: u32, neg: NegPolicy, text: bool) -> Result<Action, ErrorKind> {
    let f = split_word(word);
    let delay_ns = || {
        if f.negative && f.delay_us != 0 {
            match neg {
                NegPolicy::Error => Err(ErrorKind::NegativeDelay(format!("-{}us", f.delay_us))),
                NegPolicy::Zero => Ok(0),
            }
        } else {
            Ok(u64::from(f.delay_us) * 1000)
        }
    };
    match f.action {
        0 => Ok(Action::Delay {
            delay_ns: delay_ns()?,
        }),
        1 => Ok(Action::Drop),
        2 => Ok(Action::Duplicate {
            delay_ns: delay_ns()?,
        }),
        _ => Err(ErrorKind::ReservedAction { word, text }),
    }
}

/// Encodes an action; its delay is rounded to the nearest µs and must be
/// at most [`MAX_DELAY_US`].
pub fn encode_action(action: &Action) -> Result<u32, WriteError> {
    let (bits, delay_ns) = match *action {
        Action::Delay { delay_ns } => (0u32, delay_ns),
        Action::Drop => return Ok(1 << ACTION_SHIFT),
        Action::Duplicate { delay_ns } => (2u32, delay_ns),
    };
    let us = delay_ns / 1000 + u64::from(delay_ns % 1000 >= 500);
    if us > u64::from(MAX_DELAY_US) {
        return Err(WriteError::Unrepresentable(format!(
            "delay {us}us exceeds the NIST Net word's {MAX_DELAY_US}us"
        )));
    }
    Ok(bits << ACTION_SHIFT | us as u32)
}

/// Streaming nist-bin reader: one [`Action`] per 4-byte word. Memory is the
/// `BufRead`'s buffer. Errors: an empty input, a tail of 1–3 bytes (both
/// end the trace), action 11 and negative delays (the reader goes on with
/// the next word).
pub struct NistBinReader<R> {
    inner: R,
    order: ByteOrder,
    neg: NegPolicy,
    /// Words read.
    records: u64,
    done: bool,
}

impl<R: BufRead> NistBinReader<R> {
    pub fn new(inner: R, order: ByteOrder, neg: NegPolicy) -> Self {
        NistBinReader {
            inner,
            order,
            neg,
            records: 0,
            done: false,
        }
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    pub fn into_inner(self) -> R {
        self.inner
    }

    fn pos(&self) -> Pos {
        Pos::Record {
            record: self.records + 1,
            byte: self.records * 4,
        }
    }

    /// Reads the next word: `Ok(None)` at a clean end, `Err(n)` for a tail
    /// of `n` bytes.
    fn read_word(&mut self) -> Result<Option<[u8; 4]>, TraceError> {
        // Fast path: a whole word in the buffer.
        if let Ok(avail) = self.inner.fill_buf() {
            if let Some(&word) = avail.first_chunk::<4>() {
                self.inner.consume(4);
                return Ok(Some(word));
            }
        }
        let mut word = [0u8; 4];
        let mut have = 0;
        while have < 4 {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(e) => return Err(TraceError::new(self.pos(), io_kind(&e))),
            };
            if avail.is_empty() {
                break;
            }
            let n = (4 - have).min(avail.len());
            word[have..have + n].copy_from_slice(&avail[..n]);
            self.inner.consume(n);
            have += n;
        }
        match have {
            4 => Ok(Some(word)),
            0 => Ok(None),
            n => Err(TraceError::new(self.pos(), ErrorKind::Truncated(n))),
        }
    }
}

impl<R: BufRead> NistBinReader<R> {
    /// The next word undecoded, with its position (for dumps); the same
    /// end-of-input errors as the iterator.
    pub fn next_word(&mut self) -> Option<Result<(Pos, u32), TraceError>> {
        if self.done {
            return None;
        }
        let bytes = match self.read_word() {
            Ok(Some(b)) => b,
            Ok(None) => {
                self.done = true;
                return (self.records == 0)
                    .then(|| Err(TraceError::new(self.pos(), ErrorKind::Empty)));
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let word = match self.order {
            ByteOrder::Little => u32::from_le_bytes(bytes),
            ByteOrder::Big => u32::from_be_bytes(bytes),
        };
        let pos = self.pos();
        self.records += 1;
        Some(Ok((pos, word)))
    }
}

impl<R: BufRead> Iterator for NistBinReader<R> {
    type Item = Result<Action, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let neg = self.neg;
        self.next_word().map(|r| {
            r.and_then(|(pos, word)| decode_word(word, neg).map_err(|k| TraceError::new(pos, k)))
        })
    }
}

/// Writes nist-bin words. Pass a buffered writer.
pub struct NistBinWriter<W> {
    out: W,
    order: ByteOrder,
}

impl<W: Write> NistBinWriter<W> {
    pub fn new(out: W, order: ByteOrder) -> Self {
        NistBinWriter { out, order }
    }

    pub fn write(&mut self, action: &Action) -> Result<(), WriteError> {
        let w = encode_action(action)?;
        let bytes = match self.order {
            ByteOrder::Little => w.to_le_bytes(),
            ByteOrder::Big => w.to_be_bytes(),
        };
        self.out.write_all(&bytes)?;
        Ok(())
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Streaming nist-txt reader: one word per line.
pub struct NistTxtReader<R> {
    lines: RecordLines<R>,
    neg: NegPolicy,
}

impl<R: BufRead> NistTxtReader<R> {
    pub fn new(inner: R, neg: NegPolicy) -> Self {
        NistTxtReader {
            lines: RecordLines::new(inner),
            neg,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        self.lines.get_mut()
    }

    /// Capacity of the line buffer (bounded by the line limit).
    pub fn buffer_capacity(&self) -> usize {
        self.lines.buffer_capacity()
    }

    /// The next line's word undecoded, with its position (for dumps); the
    /// same line errors as the iterator.
    pub fn next_word(&mut self) -> Option<Result<(Pos, u32), TraceError>> {
        self.lines.next_with(|line| {
            let (tok, rest) = split_token(line.text);
            if !rest.is_empty() {
                return Err(line.err(line.offset_of(rest), ErrorKind::Trailing(rest.to_string())));
            }
            let Some(v) = parse_int(tok) else {
                return Err(line.err(
                    0,
                    ErrorKind::NotNumber {
                        what: "nist-txt word",
                        expected: "an integer",
                        found: tok.to_string(),
                    },
                ));
            };
            let word = if (i64::from(i32::MIN)..0).contains(&v) {
                v as i32 as u32
            } else if (0..=i64::from(u32::MAX)).contains(&v) {
                v as u32
            } else {
                return Err(line.err(0, ErrorKind::WordRange(v)));
            };
            Ok((line.pos(0), word))
        })
    }
}

impl<R: BufRead> Iterator for NistTxtReader<R> {
    type Item = Result<Action, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let neg = self.neg;
        self.next_word().map(|r| {
            r.and_then(|(pos, word)| {
                decode_txt_word(word, neg).map_err(|k| TraceError::new(pos, k))
            })
        })
    }
}

/// Decodes a nist-txt line's word: as [`decode_word`], with the reserved
/// action's message for text.
pub fn decode_txt_word(word: u32, neg: NegPolicy) -> Result<Action, ErrorKind> {
    decode(word, neg, true)
}

/// Splits `text` at its first blank: (token, rest trimmed).
pub(crate) fn split_token(text: &str) -> (&str, &str) {
    match text.find(|c: char| c.is_whitespace()) {
        Some(i) => (&text[..i], text[i..].trim_start()),
        None => (text, ""),
    }
}

/// Writes nist-txt: one signed word per line.
pub struct NistTxtWriter<W> {
    out: W,
}

impl<W: Write> NistTxtWriter<W> {
    pub fn new(out: W) -> Self {
        NistTxtWriter { out }
    }

    pub fn write(&mut self, action: &Action) -> Result<(), WriteError> {
        let w = encode_action(action)?;
        writeln!(self.out, "{}", w as i32)?;
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(bytes: &[u8], order: ByteOrder, neg: NegPolicy) -> Vec<Result<Action, TraceError>> {
        NistBinReader::new(bytes, order, neg).take(1000).collect()
    }

    fn txt(text: &str, neg: NegPolicy) -> Vec<Result<Action, TraceError>> {
        NistTxtReader::new(text.as_bytes(), neg)
            .take(1000)
            .collect()
    }

    const D1: Action = Action::Delay {
        delay_ns: 1_000_000,
    };

    #[test]
    fn word_layout() {
        assert_eq!(encode_action(&D1).unwrap(), 1000);
        assert_eq!(encode_action(&Action::Drop).unwrap(), 0x4000_0000);
        assert_eq!(
            encode_action(&Action::Duplicate {
                delay_ns: 2_000_000
            })
            .unwrap(),
            0x8000_07d0
        );
        let max = Action::Delay {
            delay_ns: u64::from(MAX_DELAY_US) * 1000,
        };
        assert_eq!(encode_action(&max).unwrap(), 0x1fff_ffff);
        assert!(encode_action(&Action::Delay {
            delay_ns: u64::from(MAX_DELAY_US) * 1000 + 500
        })
        .is_err());
        // Rounded to the nearest µs.
        assert_eq!(encode_action(&Action::Delay { delay_ns: 1499 }).unwrap(), 1);
        assert_eq!(encode_action(&Action::Delay { delay_ns: 1500 }).unwrap(), 2);
        assert_eq!(
            split_word(0xa000_0005),
            WordFields {
                action: 2,
                negative: true,
                delay_us: 5
            }
        );
        // A drop's delay bits are ignored; negative zero is zero.
        assert_eq!(decode_word(0x7fff_ffff, NegPolicy::Error), Ok(Action::Drop));
        assert_eq!(
            decode_word(0x2000_0000, NegPolicy::Error),
            Ok(Action::Delay { delay_ns: 0 })
        );
    }

    #[test]
    fn bin_bytes_both_orders() {
        let le = [0xe8, 0x03, 0, 0, 0, 0, 0, 0x40, 0xd0, 0x07, 0, 0x80];
        let be = [0, 0, 0x03, 0xe8, 0x40, 0, 0, 0, 0x80, 0, 0x07, 0xd0];
        let want = vec![
            Ok(D1),
            Ok(Action::Drop),
            Ok(Action::Duplicate {
                delay_ns: 2_000_000,
            }),
        ];
        assert_eq!(bin(&le, ByteOrder::Little, NegPolicy::Error), want);
        assert_eq!(bin(&be, ByteOrder::Big, NegPolicy::Error), want);
        let mut w = NistBinWriter::new(Vec::new(), ByteOrder::Big);
        for a in &want {
            w.write(a.as_ref().unwrap()).unwrap();
        }
        assert_eq!(w.finish().unwrap(), be);
    }

    #[test]
    fn bin_round_trip() {
        let actions: Vec<Action> = (0..1000u64)
            .map(|i| match i % 3 {
                0 => Action::Delay { delay_ns: i * 7000 },
                1 => Action::Drop,
                _ => Action::Duplicate {
                    delay_ns: (i * 1_000_003 % 536_870_911) * 1000,
                },
            })
            .collect();
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let mut w = NistBinWriter::new(Vec::new(), order);
            for a in &actions {
                w.write(a).unwrap();
            }
            let bytes = w.finish().unwrap();
            assert_eq!(bytes.len(), 4000);
            let back: Vec<Action> = NistBinReader::new(&bytes[..], order, NegPolicy::Error)
                .map(Result::unwrap)
                .collect();
            assert_eq!(back, actions);
        }
    }

    #[test]
    fn bin_bad_input() {
        let e = bin(&[], ByteOrder::Little, NegPolicy::Error);
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].as_ref().unwrap_err().to_string(),
            "byte 0 (record 1): empty trace: no records"
        );

        let e = bin(&[1, 0, 0, 0, 2, 0], ByteOrder::Little, NegPolicy::Error);
        assert_eq!(e[0], Ok(Action::Delay { delay_ns: 1000 }));
        let err = e[1].clone().unwrap_err();
        assert_eq!(
            err.clone().in_file("t.bin").to_string(),
            "t.bin: byte 4 (record 2): nist-bin length is not a multiple of 4: \
             the last record has 2 of 4 bytes (truncated file?)"
        );
        assert!(err.is_fatal());
        assert_eq!(e.len(), 2);

        let e = bin(
            &[1, 0, 0, 0, 0, 0, 0, 0xc0, 5, 0, 0, 0x20, 7, 0, 0, 0],
            ByteOrder::Little,
            NegPolicy::Error,
        );
        assert_eq!(
            e[1].clone().unwrap_err().in_file("t.bin").to_string(),
            "t.bin: byte 4 (record 2): action bits 11 are not used (word 0xc0000000)"
        );
        assert_eq!(
            e[2].clone().unwrap_err().in_file("t.bin").to_string(),
            "t.bin: byte 8 (record 3): negative delay -5us (neg=zero makes negative delays 0)"
        );
        // The reader goes on after a bad word.
        assert_eq!(e[3], Ok(Action::Delay { delay_ns: 7000 }));
        let z = bin(&[5, 0, 0, 0x20], ByteOrder::Little, NegPolicy::Zero);
        assert_eq!(z, vec![Ok(Action::Delay { delay_ns: 0 })]);
    }

    #[test]
    fn txt_reads_signed_and_unsigned_words() {
        let got = txt(
            "\u{feff}1000\r\n1073741824\n-2147481648  \n# dup 2000 as unsigned\n2147485648",
            NegPolicy::Error,
        );
        let dup = Action::Duplicate {
            delay_ns: 2_000_000,
        };
        assert_eq!(got, vec![Ok(D1), Ok(Action::Drop), Ok(dup), Ok(dup)]);
        let mut w = NistTxtWriter::new(Vec::new());
        for a in [D1, Action::Drop, dup] {
            w.write(&a).unwrap();
        }
        assert_eq!(
            String::from_utf8(w.finish().unwrap()).unwrap(),
            "1000\n1073741824\n-2147481648\n"
        );
    }

    #[test]
    fn txt_bad_input() {
        let msg = |text: &str| -> Vec<String> {
            txt(text, NegPolicy::Error)
                .into_iter()
                .filter_map(|r| r.err())
                .map(|e| e.in_file("t.txt").to_string())
                .collect()
        };
        assert_eq!(msg(""), ["t.txt:1:1: empty trace: no records"]);
        assert_eq!(
            msg("# only\n\n  # comments\n"),
            ["t.txt:4:1: empty trace: no records"]
        );
        assert_eq!(
            msg("1\n  12a\n"),
            ["t.txt:2:3: nist-txt word: expected an integer, found \"12a\""]
        );
        assert_eq!(
            msg("1 2\n"),
            ["t.txt:1:3: unexpected text \"2\" after the value"]
        );
        assert_eq!(
            msg("4294967296\n"),
            ["t.txt:1:1: 4294967296 does not fit a 32-bit word (-2147483648 ..= 4294967295)"]
        );
        assert_eq!(
            msg("-5\n"),
            [
                "t.txt:1:1: action bits 11 are not used (word -5 = 0xfffffffb); a nist-txt line \
              is the raw 32-bit word, not a delay (write delays in the delays format)"
            ]
        );
        assert_eq!(
            msg("0\n536870917\n"),
            ["t.txt:2:1: negative delay -5us (neg=zero makes negative delays 0)"]
        );
    }
}
