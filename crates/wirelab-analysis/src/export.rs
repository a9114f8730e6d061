//! Record export: CSV and JSON lines, one row per record with every field.
//!
//! Columns / keys, in order: `flow, kind, seq, size_bytes, sched_ns, tx_ns,
//! rx_ns, refl_rx_ns, refl_tx_ns, probe_flags, rec_flags, tos`. `kind` is
//! `tx`, `rx`, `echo_reply` or `emulated` (the emulator's log: fields
//! mapped as `wirelab_wire::record::EmuRecord` says); flags are the raw bit values. CSV has a header
//! line; JSON lines have one object per line. Numbers are written as
//! integers (u64 in JSON may exceed 2^53: consumers that parse JSON numbers
//! as doubles lose precision above that, as with any u64 in JSON).

use crate::columns::{write_csv_line, write_json_line, Value, RECORD_COLUMNS};
use crate::error::AnalysisError;
use std::borrow::Borrow;
use std::io::Write;
use wirelab_wire::{Record, RecordKind};

/// The CSV header line (without the newline).
pub const CSV_HEADER: &str =
    "flow,kind,seq,size_bytes,sched_ns,tx_ns,rx_ns,refl_rx_ns,refl_tx_ns,probe_flags,rec_flags,tos";

/// Name of a record kind in exports.
pub fn kind_name(k: RecordKind) -> &'static str {
    match k {
        RecordKind::Tx => "tx",
        RecordKind::Rx => "rx",
        RecordKind::EchoReply => "echo_reply",
        RecordKind::Emulated => "emulated",
    }
}

/// A record's values in [`RECORD_COLUMNS`] order.
fn record_values(r: &Record) -> [Value; 12] {
    [
        r.flow.into(),
        Value::Name(kind_name(r.kind)),
        r.seq.into(),
        r.size.into(),
        r.sched_ns.into(),
        r.tx_ns.into(),
        r.rx_ns.into(),
        r.refl_rx_ns.into(),
        r.refl_tx_ns.into(),
        r.probe_flags.into(),
        r.rec_flags.into(),
        r.tos.into(),
    ]
}

/// Writes a CSV header and one line per record; returns the records written.
pub fn export_csv<I>(records: I, w: &mut impl Write) -> Result<u64, AnalysisError>
where
    I: IntoIterator,
    I::Item: Borrow<Record>,
{
    writeln!(w, "{CSV_HEADER}")?;
    let mut n = 0u64;
    for r in records {
        write_csv_line(w, &record_values(r.borrow()))?;
        n += 1;
    }
    Ok(n)
}

/// Writes one JSON object per line per record; returns the records written.
pub fn export_jsonl<I>(records: I, w: &mut impl Write) -> Result<u64, AnalysisError>
where
    I: IntoIterator,
    I::Item: Borrow<Record>,
{
    let mut n = 0u64;
    for r in records {
        write_json_line(w, &RECORD_COLUMNS, &record_values(r.borrow()))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Record {
        Record {
            flow: 7,
            size: 100,
            seq: u64::MAX,
            sched_ns: 1,
            tx_ns: 2,
            rx_ns: 3,
            refl_rx_ns: 4,
            refl_tx_ns: 5,
            probe_flags: 6,
            kind: RecordKind::EchoReply,
            rec_flags: 8,
            tos: 0xb8,
        }
    }

    #[test]
    fn csv_lines() {
        let mut out = Vec::new();
        let n = export_csv([rec(), Record::default()].iter(), &mut out).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "flow,kind,seq,size_bytes,sched_ns,tx_ns,rx_ns,refl_rx_ns,refl_tx_ns,probe_flags,rec_flags,tos\n\
             7,echo_reply,18446744073709551615,100,1,2,3,4,5,6,8,184\n\
             0,tx,0,0,0,0,0,0,0,0,0,0\n"
        );
    }

    #[test]
    fn jsonl_lines_parse() {
        let mut out = Vec::new();
        export_jsonl(vec![rec()], &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "{\"flow\":7,\"kind\":\"echo_reply\",\"seq\":18446744073709551615,\"size_bytes\":100,\"sched_ns\":1,\"tx_ns\":2,\"rx_ns\":3,\"refl_rx_ns\":4,\"refl_tx_ns\":5,\"probe_flags\":6,\"rec_flags\":8,\"tos\":184}\n"
        );
        let v: serde_json::Value = serde_json::from_str(s.trim_end()).unwrap();
        assert_eq!(v["seq"].as_u64(), Some(u64::MAX));
        assert_eq!(v["kind"], "echo_reply");
    }

    #[test]
    fn write_errors_are_typed() {
        struct Fail;
        impl Write for Fail {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(matches!(
            export_csv([rec()], &mut Fail),
            Err(AnalysisError::Io(_))
        ));
        assert!(matches!(
            export_jsonl([rec()], &mut Fail),
            Err(AnalysisError::Io(_))
        ));
    }
}
