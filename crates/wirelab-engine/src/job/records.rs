//! Record files read back: for the whole-run analysis (`wirelab analyze`)
//! and converted to text (`wirelab export`).

use super::spec;
use crate::recordlog::RecordMeta;
use std::io;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_analysis::{Requested, RunRecords};
use wirelab_core::gen::{GenSpec, SpecUnit};
use wirelab_wire::record::{open_file, Record, RecordFileError, RecordKind, Role};

#[derive(Debug, Error)]
pub enum ReadError {
    #[error("cannot create {path}: {cause}", path = path.display())]
    Create { path: PathBuf, cause: io::Error },
    #[error(transparent)]
    Write(#[from] wirelab_analysis::AnalysisError),
    #[error(transparent)]
    File(#[from] RecordFileError),
}

/// The records of a run, with what its sender requested.
pub struct Run {
    pub records: RunRecords,
    pub requested: Requested,
    /// Files that ended in a partial record (cut short), with its length.
    pub partial: Vec<(PathBuf, usize)>,
    /// Records of a kind this wirelab does not know, skipped.
    pub unknown_kind: u64,
    /// Records of a kind their file's role does not write (e.g. Rx records
    /// in a sender file), ignored.
    pub ignored: u64,
    /// Files skipped as a repeat of an earlier one (same header and first
    /// record: the same recording), with the file they repeat.
    pub repeated: Vec<(PathBuf, PathBuf)>,
    /// The link emulator's log records (`emulate --log`), analysed apart.
    pub emulated: Vec<Record>,
    /// The configuration in the first emulator log's header.
    pub emulate_config: Option<serde_json::Value>,
}

/// The interval and size specs a sender recorded in its metadata (the
/// `config` of send/1).
pub fn requested_from_config(config: &serde_json::Value) -> Requested {
    let get = |k: &str, u| {
        config
            .get(k)
            .and_then(|v| v.as_str())
            .and_then(|s| GenSpec::parse(s, u).ok())
    };
    let (interval, size) = (
        get("interval", SpecUnit::Time),
        get("size", SpecUnit::Bytes),
    );
    spec::requested(interval.as_ref(), size.as_ref())
}

/// Reads every file whole: Tx and echo replies from sender files, Rx from
/// receiver and reflector files. The first sender file's metadata gives
/// the run's start and what was requested. A file whose header and first
/// record equal an earlier file's is the same recording given twice: it
/// is read once (its probes would otherwise all count as duplicates).
pub fn read_run(paths: &[PathBuf]) -> Result<Run, ReadError> {
    let mut records = RunRecords::default();
    let mut sender_meta: Option<RecordMeta> = None;
    let mut partial = Vec::new();
    let (mut unknown_kind, mut ignored) = (0u64, 0u64);
    let mut repeated = Vec::new();
    let mut emulated = Vec::new();
    let mut emulate_config = None;
    let mut seen: Vec<(Role, String, Option<Record>, PathBuf)> = Vec::new();
    for p in paths {
        let read = |source| RecordFileError::read(p, source);
        let mut r = open_file(p)?;
        let role = r.header().role;
        let first = r.next_record().map_err(read)?;
        let same = seen
            .iter()
            .find(|(ro, meta, fr, _)| *ro == role && *meta == r.header().metadata && *fr == first);
        if let Some((.., earlier)) = same {
            repeated.push((p.clone(), earlier.clone()));
            continue;
        }
        seen.push((role, r.header().metadata.clone(), first, p.clone()));
        let meta: Option<RecordMeta> = serde_json::from_str(&r.header().metadata).ok();
        if meta.as_ref().is_some_and(|m| m.role == "emulate") {
            emulate_config = emulate_config.or(meta.map(|m| m.config));
        } else if role == Role::Sender && sender_meta.is_none() {
            sender_meta = meta;
        }
        let mut next = first;
        while let Some(rec) = next {
            match (role, rec.kind) {
                (Role::Sender, RecordKind::Tx) => records.tx.push(rec),
                (Role::Sender, RecordKind::EchoReply) => records.echo.push(rec),
                (Role::Sender, RecordKind::Emulated) => emulated.push(rec),
                (Role::Receiver | Role::Reflector, RecordKind::Rx) => records.rx.push(rec),
                _ => ignored += 1,
            }
            next = r.next_record().map_err(read)?;
        }
        unknown_kind += r.skipped;
        if r.trailing_bytes > 0 {
            partial.push((p.to_path_buf(), r.trailing_bytes));
        }
    }
    records.sender_start_unix_ns = sender_meta.as_ref().map(|m| m.start_unix_ns);
    let requested = sender_meta
        .map(|m| requested_from_config(&m.config))
        .unwrap_or_default();
    Ok(Run {
        records,
        requested,
        partial,
        unknown_kind,
        ignored,
        repeated,
        emulated,
        emulate_config,
    })
}

/// What `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    /// JSON lines, one record each.
    Jsonl,
    /// The file's header metadata (JSON) instead of the records.
    Header,
}

/// Streams the records of `path` into `output` (stdout when `None`): they
/// are converted as they are read, never all held. Returns the length of a
/// partial record ignored at the end (a file cut short), 0 when none.
/// What [`export`] could not convert.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportSkipped {
    /// Whole records read.
    pub records: u64,
    /// Bytes of a partial record at the end of the file.
    pub partial_bytes: usize,
    /// Records of a kind this version does not know.
    pub unknown_kind: u64,
}

pub fn export(
    path: &Path,
    format: ExportFormat,
    output: Option<&Path>,
) -> Result<ExportSkipped, ReadError> {
    let mut r = open_file(path)?;
    let out: Box<dyn Write> = match output {
        Some(o) => Box::new(
            std::fs::File::create(o).map_err(|source| ReadError::Create {
                path: o.to_path_buf(),
                cause: source,
            })?,
        ),
        None => Box::new(io::stdout().lock()),
    };
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    let io_err = |e: io::Error| ReadError::Write(e.into());
    if format == ExportFormat::Header {
        writeln!(out, "{}", r.header().metadata).map_err(io_err)?;
        return out
            .flush()
            .map_err(io_err)
            .map(|_| ExportSkipped::default());
    }
    let mut err = None;
    let mut read = 0u64;
    let records = std::iter::from_fn(|| match r.next_record() {
        Ok(x) => {
            read += u64::from(x.is_some());
            x
        }
        Err(e) => {
            err = Some(e);
            None
        }
    });
    match format {
        ExportFormat::Jsonl => wirelab_analysis::export_jsonl(records, &mut out)?,
        _ => wirelab_analysis::export_csv(records, &mut out)?,
    };
    out.flush().map_err(io_err)?;
    match err {
        Some(source) => Err(RecordFileError::read(path, source).into()),
        None => Ok(ExportSkipped {
            records: read,
            partial_bytes: r.trailing_bytes,
            unknown_kind: r.skipped,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::record::RecordFileHeader;

    fn write(path: &std::path::Path, role: Role, meta: &str, recs: &[Record], raw_tail: &[u8]) {
        let mut b = RecordFileHeader {
            role,
            metadata: meta.into(),
        }
        .file_with(recs);
        b.extend_from_slice(raw_tail);
        std::fs::write(path, b).unwrap();
    }

    #[test]
    fn repeated_files_unknown_kinds_and_misplaced_records_are_counted() {
        let dir = std::env::temp_dir().join(format!("wl-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rx = |seq| Record {
            flow: 1,
            seq,
            kind: RecordKind::Rx,
            ..Record::default()
        };
        let recs: Vec<Record> = (0..5).map(rx).collect();
        let (a, b, c) = (dir.join("a.wlr"), dir.join("b.wlr"), dir.join("c.wlr"));
        // b is a copy of a; c has the same header but other records.
        write(&a, Role::Receiver, r#"{"start_unix_ns":1}"#, &recs, &[]);
        std::fs::copy(&a, &b).unwrap();
        let mut unknown = rx(9).to_bytes();
        unknown[57] = 200;
        let tx = Record {
            kind: RecordKind::Tx,
            ..rx(7)
        };
        write(
            &c,
            Role::Receiver,
            r#"{"start_unix_ns":1}"#,
            &[rx(5), tx],
            &unknown,
        );
        let run = read_run(&[a.clone(), b.clone(), c.clone(), a.clone()]).unwrap();
        assert_eq!(run.records.rx.len(), 6);
        assert_eq!(run.repeated, vec![(b, a.clone()), (a.clone(), a)]);
        assert_eq!((run.unknown_kind, run.ignored), (1, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn requested_comes_from_the_recorded_specs_and_ignores_garbage() {
        let cfg = serde_json::json!({"interval": "exp:2ms", "size": "const:64"});
        let r = requested_from_config(&cfg);
        assert_eq!(r.mean_interval_ns, Some(2_000_000));
        assert!(r.interval_cdf.is_some());
        assert!(r.size_cdf.is_none(), "a constant has no continuous CDF");
        let r = requested_from_config(&serde_json::json!({"interval": 5, "size": "exp:?"}));
        assert!(r.mean_interval_ns.is_none() && r.interval_cdf.is_none() && r.size_cdf.is_none());
    }

    #[test]
    fn export_streams_whole_records_and_reports_a_cut_tail() {
        use crate::recordlog::RecordLog;
        use wirelab_wire::record::Record;
        let dir = std::env::temp_dir().join(format!("wl-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (wlr, csv, head) = (dir.join("t.wlr"), dir.join("t.csv"), dir.join("h.json"));
        let meta = RecordMeta {
            wirelab_version: "0".into(),
            role: "sender".into(),
            host: "h".into(),
            clock: "c".into(),
            start_unix_ns: 7,
            config: serde_json::json!({"interval": "const:1ms"}),
        };
        let log = RecordLog::create(&wlr, Role::Sender, &meta).unwrap();
        let mut w = log.writer();
        for seq in 0..5 {
            w.write(&Record {
                seq,
                size: 64,
                ..Record::default()
            })
            .unwrap();
        }
        drop(w);
        log.finish().unwrap();
        let len = std::fs::metadata(&wlr).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&wlr).unwrap();
        f.set_len(len - 3).unwrap();
        let partial = export(&wlr, ExportFormat::Csv, Some(&csv)).unwrap();
        assert!(partial.partial_bytes > 0, "the cut record is reported");
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text.lines().count(), 1 + 4, "{text}");
        assert!(text.starts_with("flow,"), "{text}");
        export(&wlr, ExportFormat::Header, Some(&head)).unwrap();
        let h: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&head).unwrap()).unwrap();
        assert_eq!(h["start_unix_ns"], 7);
        let missing = export(&dir.join("none.wlr"), ExportFormat::Csv, Some(&csv));
        assert!(matches!(
            missing,
            Err(ReadError::File(RecordFileError::Open { .. }))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
