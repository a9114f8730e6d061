//! Record files read for export: one file streamed into a table, a
//! sender/receiver pair of one run streamed through the packet join.
//! Whole records are read as they come; a file cut short ends at its last
//! whole record ([`ReadNotes::partial_bytes`]); read errors end the stream
//! and are returned once it is done.

use crate::output::{self, OutputError};
use crate::{ExportError, PacketSink, RecordSink};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_analysis::packets::{packets_csv, packets_jsonl};
use wirelab_analysis::{AnalysisError, JoinConfig, JoinStats, PacketJoin};
use wirelab_wire::record::{
    open_file, RecordError, RecordFileError, RecordReader, Role, FIXED_HEADER_LEN, RECORD_LEN,
};
use wirelab_wire::{Record, RecordKind};

#[derive(Debug, Error)]
pub enum FileError {
    #[error(transparent)]
    File(#[from] RecordFileError),
    #[error(
        "{a} and {b} are not a sender file and a receiver file (roles {ra} and {rb}): give the \
         file of `wirelab send --record` and the one of `wirelab recv --record` of the same run",
        a = a.display(), b = b.display()
    )]
    NotAPair {
        a: PathBuf,
        b: PathBuf,
        ra: &'static str,
        rb: &'static str,
    },
    #[error(
        "{rx} is not from the run of {tx}: {why}; give the sender and receiver files of one run",
        rx = rx.display(), tx = tx.display()
    )]
    DifferentRuns {
        tx: PathBuf,
        rx: PathBuf,
        why: String,
    },
    #[error("writing the export: {0}")]
    Write(io::Error),
    #[error(transparent)]
    Export(#[from] ExportError),
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    #[error(transparent)]
    Output(#[from] OutputError),
    /// Flushing a finished table to its output.
    #[error(transparent)]
    Flush(io::Error),
}

// Not `#[from]`: that would also make it the source, and the message already prints it.
impl From<io::Error> for FileError {
    fn from(e: io::Error) -> Self {
        Self::Write(e)
    }
}

/// What reading a file skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadNotes {
    pub path: PathBuf,
    /// Whole records read.
    pub records: u64,
    /// Bytes of a partial record at the end (a file cut short).
    pub partial_bytes: usize,
    /// Records of a kind this version does not know.
    pub unknown_kind: u64,
}

impl ReadNotes {
    /// What reading skipped, a line each (none when the file was whole).
    pub fn lines(&self) -> Vec<String> {
        let mut l = Vec::new();
        if self.unknown_kind > 0 {
            l.push(format!(
                "{}: skipped {} records of an unknown kind (written by a newer wirelab, or damaged)",
                self.path.display(),
                self.unknown_kind
            ));
        }
        if self.partial_bytes > 0 {
            l.push(format!(
                "{}: read {} whole record(s); ignored a partial record of {} bytes \
                 at the end (file cut short?)",
                self.path.display(),
                self.records,
                self.partial_bytes
            ));
        }
        l
    }
}

/// A join's counts, then what it could not join or skipped, a line each;
/// `what` names the pair.
pub fn join_lines(what: &str, s: &JoinStats, cfg: &JoinConfig) -> Vec<String> {
    let mut l = vec![format!(
        "{what}: {} probes sent, {} received, {} lost",
        s.sent, s.received, s.lost
    )];
    if s.unmatched > 0 {
        l.push(format!(
            "{what}: {} arrival(s) not joined: probes the sender did not record, or \
             that came more than --join-window ({} ms) out of send order",
            s.unmatched,
            cfg.window_ns / 1_000_000
        ));
    }
    if s.ignored > 0 || s.repeated_tx > 0 {
        l.push(format!(
            "{what}: skipped {} record(s) of a kind the file's role does not write and \
             {} repeated sender record(s)",
            s.ignored, s.repeated_tx
        ));
    }
    l
}

/// The table a pair is joined into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairFormat {
    Csv,
    Jsonl,
    Parquet,
}

/// A pair exported: its name (`TX + RX`), the join's counts, both files'
/// notes.
#[derive(Debug)]
pub struct PairExport {
    pub what: String,
    pub stats: JoinStats,
    pub notes: [ReadNotes; 2],
}

impl PairExport {
    /// The files' notes, then the join's lines.
    pub fn lines(&self, cfg: &JoinConfig) -> Vec<String> {
        let mut l: Vec<String> = self.notes.iter().flat_map(ReadNotes::lines).collect();
        l.extend(join_lines(&self.what, &self.stats, cfg));
        l
    }
}

/// Joins a sender and a receiver file (either order) into `output` (or
/// stdout). A failed export leaves nothing under the output's name.
pub fn export_pair(
    x: &Path,
    y: &Path,
    output: Option<&Path>,
    format: PairFormat,
    cfg: JoinConfig,
) -> Result<PairExport, FileError> {
    let p = Pair::open(x, y, cfg.window_ns)?;
    let what = format!("{} + {}", p.tx.path().display(), p.rx.path().display());
    output::check_not_input(output, &[x, y])?;
    let mut out = output::open(output, format == PairFormat::Parquet)?;
    let joined = match format {
        PairFormat::Parquet => {
            PacketSink::new(out, &[])
                .map_err(FileError::from)
                .and_then(|mut sink| {
                    let r = p.join_parquet(cfg, &mut sink)?;
                    sink.finish()?.1.flush().map_err(FileError::Flush)?;
                    Ok(r)
                })
        }
        f => p.join_text(cfg, f == PairFormat::Jsonl, &mut out),
    };
    let (stats, notes) = joined.inspect_err(|_| {
        // No half-written table left under the name asked for.
        if let Some(o) = output {
            let _ = std::fs::remove_file(o);
        }
    })?;
    Ok(PairExport { what, stats, notes })
}

/// An open record file, an iterator of its records.
pub struct RecordFile {
    path: PathBuf,
    reader: RecordReader<BufReader<File>>,
    err: Option<RecordError>,
    records: u64,
}

impl RecordFile {
    pub fn open(path: &Path) -> Result<RecordFile, FileError> {
        let reader = open_file(path)?;
        Ok(RecordFile {
            path: path.to_path_buf(),
            reader,
            err: None,
            records: 0,
        })
    }

    pub fn role(&self) -> Role {
        self.reader.header().role
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The read error that ended the stream, or what it skipped.
    pub fn finish(self) -> Result<ReadNotes, FileError> {
        match self.err {
            Some(source) => Err(RecordFileError::read(&self.path, source).into()),
            None => Ok(ReadNotes {
                path: self.path,
                records: self.records,
                partial_bytes: self.reader.trailing_bytes,
                unknown_kind: self.reader.skipped,
            }),
        }
    }
}

impl Iterator for RecordFile {
    type Item = Record;
    fn next(&mut self) -> Option<Record> {
        match self.reader.next_record() {
            Ok(Some(r)) => {
                self.records += 1;
                Some(r)
            }
            Ok(None) => None,
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }
}

/// Streams every record of `input` into a Parquet table on `out`.
pub fn records_to_parquet<W: Write + Send>(input: &Path, out: W) -> Result<ReadNotes, FileError> {
    let mut f = RecordFile::open(input)?;
    let mut sink = RecordSink::new(out, &[])?;
    for r in f.by_ref() {
        sink.push(&r)?;
    }
    let (_, mut out) = sink.finish()?;
    out.flush()?;
    f.finish()
}

/// A sender file and a receiver (or reflector) file of one run, in either
/// order; checked to be of one run.
pub struct Pair {
    pub tx: RecordFile,
    pub rx: RecordFile,
}

impl Pair {
    pub fn open(a: &Path, b: &Path, window_ns: u64) -> Result<Pair, FileError> {
        let (fa, fb) = (RecordFile::open(a)?, RecordFile::open(b)?);
        let receiving = |r: Role| matches!(r, Role::Receiver | Role::Reflector);
        let (tx, rx) = match (fa.role(), fb.role()) {
            (Role::Sender, r) if receiving(r) => (fa, fb),
            (r, Role::Sender) if receiving(r) => (fb, fa),
            (ra, rb) => {
                return Err(FileError::NotAPair {
                    a: a.to_path_buf(),
                    b: b.to_path_buf(),
                    ra: ra.as_str(),
                    rb: rb.as_str(),
                })
            }
        };
        same_run(tx.path(), rx.path(), window_ns)?;
        Ok(Pair { tx, rx })
    }

    /// Streams the join into `sink`; returns its counts and both files'
    /// notes. Fails when the receiver had arrivals and none matched.
    pub fn join_parquet<W: Write + Send>(
        self,
        cfg: JoinConfig,
        sink: &mut PacketSink<W>,
    ) -> Result<(JoinStats, [ReadNotes; 2]), FileError> {
        let Pair { mut tx, mut rx } = self;
        let mut j = PacketJoin::new(tx.by_ref(), rx.by_ref(), cfg)?;
        while let Some(row) = j.next_row()? {
            sink.push(&row)?;
        }
        let stats = j.stats();
        finish_pair(tx, rx, stats)
    }

    /// Streams the join as CSV or JSON lines into `out`.
    pub fn join_text(
        self,
        cfg: JoinConfig,
        jsonl: bool,
        out: &mut dyn Write,
    ) -> Result<(JoinStats, [ReadNotes; 2]), FileError> {
        let Pair { mut tx, mut rx } = self;
        let mut j = PacketJoin::new(tx.by_ref(), rx.by_ref(), cfg)?;
        let mut out = out;
        if jsonl {
            packets_jsonl(j.by_ref(), &mut out)?;
        } else {
            packets_csv(j.by_ref(), &mut out)?;
        }
        out.flush()?;
        let stats = j.stats();
        finish_pair(tx, rx, stats)
    }
}

fn finish_pair(
    tx: RecordFile,
    rx: RecordFile,
    stats: JoinStats,
) -> Result<(JoinStats, [ReadNotes; 2]), FileError> {
    let (tp, rp) = (tx.path.clone(), rx.path.clone());
    let notes = [tx.finish()?, rx.finish()?];
    if stats.sent > 0 && stats.unmatched > 0 && stats.sent == stats.lost {
        return Err(FileError::DifferentRuns {
            tx: tp,
            rx: rp,
            why: format!(
                "none of its {} arrivals is a probe of the sender's {} records",
                stats.unmatched, stats.sent
            ),
        });
    }
    if stats.received > 0 && stats.tx_ns_mismatch * 2 > stats.received {
        return Err(FileError::DifferentRuns {
            tx: tp,
            rx: rp,
            why: format!(
                "{} of its {} matching arrivals carry another send time than the sender recorded",
                stats.tx_ns_mismatch, stats.received
            ),
        });
    }
    Ok((stats, notes))
}

/// The send time of the first and the last record of kind `kind` near
/// the ends of a file (records are fixed-size: the tail is read by seeking,
/// a partial record skipped); `None` when the file has none there.
fn ends(path: &Path, kind: RecordKind) -> Result<Option<(u64, u64)>, FileError> {
    let open_err = |source| RecordFileError::Open {
        path: path.to_path_buf(),
        cause: source,
    };
    let first = RecordFile::open(path)?
        .take(64)
        .find(|r| r.kind == kind)
        .map(|r| r.tx_ns);
    let Some(first) = first else { return Ok(None) };
    let mut f = File::open(path).map_err(open_err)?;
    let mut fixed = [0u8; FIXED_HEADER_LEN];
    f.read_exact(&mut fixed)?;
    let (_, meta) =
        wirelab_wire::record::RecordFileHeader::parse_fixed(&fixed).map_err(|source| {
            RecordFileError::Header {
                path: path.to_path_buf(),
                cause: source,
            }
        })?;
    let start = (FIXED_HEADER_LEN + meta) as u64;
    let len = f.metadata()?.len();
    let whole = len.saturating_sub(start) / RECORD_LEN as u64;
    let back = whole.min(64);
    f.seek(SeekFrom::Start(start + (whole - back) * RECORD_LEN as u64))?;
    let mut last = first;
    let mut buf = [0u8; RECORD_LEN];
    for _ in 0..back {
        f.read_exact(&mut buf)?;
        if let Some(r) = Record::from_bytes(&buf).filter(|r| r.kind == kind) {
            last = r.tx_ns;
        }
    }
    Ok(Some((first, last)))
}

/// A receiver's first arrival must be of a probe sent while the sender's
/// records ran (give or take the join window).
fn same_run(tx: &Path, rx: &Path, window_ns: u64) -> Result<(), FileError> {
    let (Some((t0, t1)), Some((r0, _))) = (ends(tx, RecordKind::Tx)?, ends(rx, RecordKind::Rx)?)
    else {
        return Ok(());
    };
    let (lo, hi) = (t0.saturating_sub(window_ns), t1.saturating_add(window_ns));
    if r0 < lo || r0 > hi {
        let s = |ns: u64| ns as f64 / 1e9;
        return Err(FileError::DifferentRuns {
            tx: tx.to_path_buf(),
            rx: rx.to_path_buf(),
            why: format!(
                "its first arrival was sent at {:.3} s (Unix time), the sender's records run \
                 from {:.3} s to {:.3} s",
                s(r0),
                s(t0),
                s(t1)
            ),
        });
    }
    Ok(())
}

/// Record files for tests; `campaign`'s tests use them too.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use wirelab_wire::record::RecordFileHeader;

    /// Writes a record file of `recs`, then `tail` (a torn record, say).
    pub(crate) fn write(path: &Path, role: Role, recs: &[Record], tail: &[u8]) {
        let mut b = RecordFileHeader {
            role,
            metadata: "{}".into(),
        }
        .to_bytes();
        for r in recs {
            b.extend_from_slice(&r.to_bytes());
        }
        b.extend_from_slice(tail);
        std::fs::write(path, b).unwrap();
    }

    /// Probe `seq` of flow 1, sent at `base` + 1 µs per seq and (as an
    /// arrival) received 500 ns later.
    pub(crate) fn rec(kind: RecordKind, seq: u64, base: u64) -> Record {
        Record {
            flow: 1,
            seq,
            tx_ns: base + seq * 1000,
            rx_ns: if kind == RecordKind::Rx {
                base + seq * 1000 + 500
            } else {
                0
            },
            kind,
            ..Record::default()
        }
    }

    #[test]
    fn pairs_are_checked_for_roles_and_run_and_joined() {
        let dir = std::env::temp_dir().join(format!("wl-export-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (t, r, other) = (dir.join("tx.wlr"), dir.join("rx.wlr"), dir.join("old.wlr"));
        let base = 1_700_000_000_000_000_000;
        let tx: Vec<Record> = (0..200).map(|s| rec(RecordKind::Tx, s, base)).collect();
        let rx: Vec<Record> = (0..200)
            .filter(|s| s % 10 != 3)
            .map(|s| rec(RecordKind::Rx, s, base))
            .collect();
        write(&t, Role::Sender, &tx, &[]);
        write(&r, Role::Receiver, &rx, &[1, 2, 3]);
        let old: Vec<Record> = (0..50)
            .map(|s| rec(RecordKind::Rx, s, base - 3_600_000_000_000))
            .collect();
        write(&other, Role::Receiver, &old, &[]);

        // Either order; CSV rows and counts.
        let p = Pair::open(&r, &t, 1_000_000_000).unwrap();
        let mut out = Vec::new();
        let (st, notes) = p.join_text(JoinConfig::default(), false, &mut out).unwrap();
        assert_eq!((st.sent, st.lost, st.received), (200, 20, 180));
        assert_eq!(notes[1].partial_bytes, 3);
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 201);

        assert!(matches!(
            Pair::open(&r, &other, 1_000_000_000),
            Err(FileError::NotAPair { .. })
        ));
        let e = Pair::open(&t, &other, 1_000_000_000).err().unwrap();
        assert!(matches!(e, FileError::DifferentRuns { .. }), "{e}");
        assert!(e.to_string().contains("not from the run"));

        // A receiver file from another run inside the time range but of
        // other flows matches nothing: refused after the join.
        let stray: Vec<Record> = (0..50)
            .map(|s| Record {
                flow: 9,
                ..rec(RecordKind::Rx, s, base)
            })
            .collect();
        write(&other, Role::Receiver, &stray, &[]);
        let p = Pair::open(&t, &other, 1_000_000_000).unwrap();
        let e = p
            .join_text(JoinConfig::default(), true, &mut Vec::new())
            .err()
            .unwrap();
        assert!(matches!(e, FileError::DifferentRuns { .. }), "{e}");
        // The same flow and sequence numbers, sent 300 µs later: another run.
        let later: Vec<Record> = (0..50)
            .map(|s| rec(RecordKind::Rx, s, base + 300_000))
            .collect();
        write(&other, Role::Receiver, &later, &[]);
        let p = Pair::open(&t, &other, 1_000_000_000).unwrap();
        let e = p
            .join_text(JoinConfig::default(), true, &mut Vec::new())
            .err()
            .unwrap();
        assert!(e.to_string().contains("another send time"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_files_give_errors_not_panics() {
        let dir = std::env::temp_dir().join(format!("wl-export-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.wlr");
        std::fs::write(&p, b"WLRECORD\x01\x00\x00\x00").unwrap();
        assert!(matches!(
            records_to_parquet(&p, Vec::new()),
            Err(FileError::File(RecordFileError::Header { .. }))
        ));
        std::fs::write(&p, b"hello").unwrap();
        assert!(records_to_parquet(&p, Vec::new()).is_err());
        // Header only, then a partial record: an empty table and a note.
        write(&p, Role::Sender, &[], &[0u8; 10]);
        let notes = records_to_parquet(&p, Vec::new()).unwrap();
        assert_eq!((notes.records, notes.partial_bytes), (0, 10));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
