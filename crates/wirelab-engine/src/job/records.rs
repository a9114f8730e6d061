//! Record files read back for the whole-run analysis (`wirelab analyze`).

use super::spec;
use crate::recordlog::RecordMeta;
use std::io;
use std::path::PathBuf;
use thiserror::Error;
use wirelab_analysis::{Requested, RunRecords};
use wirelab_core::gen::{GenSpec, SpecUnit};
use wirelab_wire::record::{RecordError, RecordKind, RecordReader, Role};

#[derive(Debug, Error)]
pub enum ReadError {
    #[error("cannot open {path}: {source}", path = path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("{path}: {source}", path = path.display())]
    Header { path: PathBuf, source: RecordError },
    #[error("reading {path}: {source}", path = path.display())]
    Read { path: PathBuf, source: RecordError },
}

/// The records of a run, with what its sender requested.
pub struct Run {
    pub records: RunRecords,
    pub requested: Requested,
    /// Files that ended in a partial record (cut short), with its length.
    pub partial: Vec<(PathBuf, usize)>,
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
/// the run's start and what was requested.
pub fn read_run(paths: &[PathBuf]) -> Result<Run, ReadError> {
    let mut records = RunRecords::default();
    let mut sender_meta: Option<RecordMeta> = None;
    let mut partial = Vec::new();
    for p in paths {
        let read = |source| ReadError::Read {
            path: p.clone(),
            source,
        };
        let header = |source| ReadError::Header {
            path: p.clone(),
            source,
        };
        let f = std::fs::File::open(p).map_err(|source| ReadError::Open {
            path: p.clone(),
            source,
        })?;
        let mut r = RecordReader::new(io::BufReader::with_capacity(1 << 20, f)).map_err(header)?;
        let role = r.header().role;
        if role == Role::Sender && sender_meta.is_none() {
            sender_meta = serde_json::from_str(&r.header().metadata).ok();
        }
        while let Some(rec) = r.next_record().map_err(read)? {
            match (role, rec.kind) {
                (Role::Sender, RecordKind::Tx) => records.tx.push(rec),
                (Role::Sender, RecordKind::EchoReply) => records.echo.push(rec),
                (Role::Receiver | Role::Reflector, RecordKind::Rx) => records.rx.push(rec),
                _ => {}
            }
        }
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
