//! Large synthetic traces generated on the fly through `Read` (never held
//! whole): readers finish them with their own storage bounded. Their
//! rates are a benchmark's (bench/trace_readers.sh), not a test's.

use std::io::{BufReader, Read};

use super::delays::DelaysReader;
use super::format::{ByteOrder, Format, NegPolicy, TraceOptions};
use super::lines::MAX_LINE;
use super::nist::{encode_action, NistBinReader};
use super::packet::PacketReader;
use super::{validate, Action, ErrorKind};

/// The i-th action of the synthetic trace.
fn action(i: u64) -> Action {
    match i % 16 {
        5 => Action::Drop,
        9 => Action::Duplicate {
            delay_ns: (i % 1000) * 1000,
        },
        _ => Action::Delay {
            delay_ns: (i % 536_870_911) * 1000,
        },
    }
}

/// Bytes of `n` records produced by `record(i, buf)`, generated per read.
struct Synth<F> {
    /// Bytes produced so far.
    bytes: u64,
    i: u64,
    n: u64,
    pending: Vec<u8>,
    at: usize,
    record: F,
}

impl<F: FnMut(u64, &mut Vec<u8>)> Synth<F> {
    fn new(n: u64, record: F) -> Self {
        Synth {
            bytes: 0,
            i: 0,
            n,
            pending: Vec::with_capacity(64),
            at: 0,
            record,
        }
    }
}

impl<F: FnMut(u64, &mut Vec<u8>)> Read for Synth<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut w = 0;
        while w < buf.len() {
            if self.at == self.pending.len() {
                if self.i == self.n {
                    break;
                }
                self.pending.clear();
                self.at = 0;
                (self.record)(self.i, &mut self.pending);
                self.i += 1;
            }
            let k = (self.pending.len() - self.at).min(buf.len() - w);
            buf[w..w + k].copy_from_slice(&self.pending[self.at..self.at + k]);
            self.at += k;
            w += k;
        }
        self.bytes += w as u64;
        Ok(w)
    }
}

const BUF: usize = 64 * 1024;

#[test]
fn ten_million_nist_bin_records_stream() {
    const N: u64 = 10_000_000;
    let src = Synth::new(N, |i, out: &mut Vec<u8>| {
        out.extend_from_slice(&encode_action(&action(i)).unwrap().to_le_bytes())
    });
    let mut reader = NistBinReader::new(
        BufReader::with_capacity(BUF, src),
        ByteOrder::Little,
        NegPolicy::Error,
    );
    let mut i = 0u64;
    for a in reader.by_ref() {
        assert_eq!(a, Ok(action(i)), "record {i}");
        i += 1;
    }
    assert_eq!(i, N);
    assert_eq!(reader.records(), N);
    // The only storage is the BufReader's fixed buffer.
    assert_eq!(reader.get_mut().capacity(), BUF);
}

#[test]
fn a_million_delay_lines_stream_with_a_bounded_line_buffer() {
    const N: u64 = 1_000_000;
    let src = Synth::new(N, |i, out: &mut Vec<u8>| {
        let line = match i % 10 {
            3 => "drop\r\n".to_string(),
            7 => format!("{}.5ms # c\n", i % 100),
            _ => format!("{}\n", i % 100_000),
        };
        out.extend_from_slice(line.as_bytes());
    });
    let mut reader = DelaysReader::new(BufReader::with_capacity(BUF, src), NegPolicy::Error);
    let mut i = 0u64;
    for a in reader.by_ref() {
        let want = match i % 10 {
            3 => Action::Drop,
            7 => Action::Delay {
                delay_ns: (i % 100) * 1_000_000 + 500_000,
            },
            _ => Action::Delay {
                delay_ns: (i % 100_000) * 1000,
            },
        };
        assert_eq!(a, Ok(want), "record {i}");
        i += 1;
    }
    assert_eq!(i, N);
    assert!(reader.buffer_capacity() <= 2 * MAX_LINE);
}

#[test]
fn a_huge_line_is_refused_without_being_stored() {
    // 64 MiB without a newline, then a good line.
    const CHUNKS: u64 = 1 << 20;
    let src = Synth::new(CHUNKS + 1, |i, out: &mut Vec<u8>| {
        if i < CHUNKS {
            out.extend_from_slice(&[b'7'; 64]);
        } else {
            out.extend_from_slice(b"\n42\n");
        }
    });
    let mut reader = DelaysReader::new(BufReader::with_capacity(BUF, src), NegPolicy::Error);
    let e = reader.next().unwrap().unwrap_err();
    assert_eq!(e.kind, ErrorKind::LineTooLong(MAX_LINE));
    assert_eq!(e.to_string(), "1:1: line longer than 4096 bytes");
    assert_eq!(reader.next(), Some(Ok(Action::Delay { delay_ns: 42_000 })));
    assert_eq!(reader.next(), None);
    assert!(reader.buffer_capacity() <= 2 * MAX_LINE);
}

#[test]
fn validate_and_reader_stream_a_large_text_trace() {
    const N: u64 = 500_000;
    let make = || {
        Synth::new(N, |i, out: &mut Vec<u8>| {
            out.extend_from_slice(
                format!("{}\n", encode_action(&action(i)).unwrap() as i32).as_bytes(),
            )
        })
    };
    let o = TraceOptions::default();
    let s = validate(Format::NistTxt, &o, BufReader::with_capacity(BUF, make())).unwrap();
    assert_eq!(s.records, N);
    assert_eq!(s.drops, N / 16);
    assert_eq!(s.dups, N / 16);
    let r = PacketReader::new(Format::NistTxt, &o, BufReader::with_capacity(BUF, make())).unwrap();
    let mut n = 0u64;
    for (i, rec) in r.enumerate() {
        assert_eq!(rec.unwrap().action, action(i as u64));
        n += 1;
    }
    assert_eq!(n, N);
}
