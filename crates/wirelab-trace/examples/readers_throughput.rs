//! The trace readers' throughput from memory (no generator, no disk): each
//! packet format written once, then read three times through
//! `PacketReader`; the nist-bin reader also alone, as `validate` uses it.
//! Prints MB/s of the fastest run; judges nothing. Run by
//! bench/trace_readers.sh (a release build: a debug one says little).

use std::time::Instant;
use wirelab_trace::nist::NistBinReader;
use wirelab_trace::{
    Action, ByteOrder, Format, NegPolicy, PacketReader, PacketWriter, TraceOptions,
};

/// The i-th action of the synthetic trace: mostly delays, a drop and a
/// duplicate every 16.
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

/// Seconds of the fastest of three runs of `read`, each of which must
/// read `n` items.
fn best_of_three(n: u64, mut read: impl FnMut() -> u64) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        assert_eq!(read(), n, "a run read a different number of items");
        best = best.min(start.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("RECORDS: a number"))
        .unwrap_or(1 << 22);
    let actions: Vec<Action> = (0..n).map(action).collect();
    let o = TraceOptions::default();
    for format in [
        Format::NistBin,
        Format::NistTxt,
        Format::Delays,
        Format::PktCsv,
    ] {
        let mut w = PacketWriter::new(format, &o, Vec::new()).unwrap();
        for a in &actions {
            // The delays format has no duplicate: write those as drops.
            let a = match (format, a) {
                (Format::Delays, Action::Duplicate { .. }) => Action::Drop,
                _ => *a,
            };
            w.write(&a.into()).unwrap();
        }
        let bytes = w.finish().unwrap();
        let best = best_of_three(n, || {
            let mut k = 0u64;
            for rec in PacketReader::new(format, &o, &bytes[..]).unwrap() {
                if let Action::Delay { delay_ns } = rec.unwrap().action {
                    std::hint::black_box(delay_ns);
                }
                k += 1;
            }
            k
        });
        println!(
            "{format} through PacketReader: {:.0} MB/s ({} bytes, {n} records)",
            bytes.len() as f64 / best / 1e6,
            bytes.len()
        );
        if format == Format::NistBin {
            let best = best_of_three(n, || {
                let mut k = 0u64;
                for a in NistBinReader::new(&bytes[..], ByteOrder::Little, NegPolicy::Error) {
                    std::hint::black_box(a.unwrap());
                    k += 1;
                }
                k
            });
            println!(
                "nist-bin reader alone: {:.0} MB/s",
                bytes.len() as f64 / best / 1e6
            );
        }
    }
}
