//! `--record-decisions`: one rule's decisions as a packet-indexed trace
//! that replays them (`trace FILE`): per frame its released copies, each
//! but the last as a duplicate, with its delay from arrival to release
//! (rate, slot, order and a bottleneck included), or one drop (the core's
//! `Link::take_decisions`, in arrival order once each copy has left). pkt-csv keeps nanoseconds; nist-bin and nist-txt
//! round to µs. Written in chunks by a writer thread, complete once the
//! run ends.

use super::sink::{ChunkFile, ChunkWriter};
use std::path::{Path, PathBuf};
use thiserror::Error;
use wirelab_link::Arrival;
use wirelab_trace::{Action, Format, PacketWriter, TraceOptions};

/// Why a decision trace cannot be written.
#[derive(Debug, Error)]
pub enum RecorderError {
    #[error("{path}: a decision trace is written as pkt-csv (.pkt.csv, exact ns), nist-bin (.bin, .nist.bin: µs) or nist-txt (.nist.txt: µs); the name says which")]
    Format { path: String },
    #[error("cannot create {path}: {cause}")]
    Create { path: String, cause: std::io::Error },
}

/// Writes one rule's decisions.
pub struct Recorder {
    path: PathBuf,
    file: ChunkFile,
    w: Option<PacketWriter<ChunkWriter>>,
    actions: Vec<Action>,
    records: u64,
    error: Option<String>,
}

/// A finished decision trace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Recorded {
    pub rule: u32,
    pub path: PathBuf,
    /// Trace records written.
    pub records: u64,
    /// The trace stopped here (the run went on).
    pub error: Option<String>,
}

/// The format a decision trace named `path` is written in.
pub fn decision_format(path: &Path) -> Result<Format, RecorderError> {
    let name = path.to_string_lossy();
    match Format::from_extension(&name) {
        Some(f @ (Format::PktCsv | Format::NistBin | Format::NistTxt)) => Ok(f),
        _ => Err(RecorderError::Format {
            path: name.into_owned(),
        }),
    }
}

impl Recorder {
    /// Creates `path` (its format by its name, [`decision_format`]).
    pub fn create(path: &Path) -> Result<Recorder, RecorderError> {
        let format = decision_format(path)?;
        let create = |source| RecorderError::Create {
            path: path.display().to_string(),
            cause: source,
        };
        let file = ChunkFile::create(path, b"").map_err(create)?;
        let w = PacketWriter::new(format, &TraceOptions::default(), file.writer())
            .map_err(|e| create(std::io::Error::other(e.to_string())))?;
        Ok(Recorder {
            path: path.to_path_buf(),
            file,
            w: Some(w),
            actions: Vec::with_capacity(wirelab_link::MAX_COPIES),
            records: 0,
            error: None,
        })
    }

    /// One frame's decisions (a link without a bottleneck; any link's
    /// come from `Link::take_decisions`, for [`Recorder::record_actions`]).
    pub fn record(&mut self, a: &Arrival) {
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        a.record(&mut actions);
        self.record_actions(&actions);
        self.actions = actions;
    }

    /// Trace records, in order.
    pub fn record_actions(&mut self, actions: &[Action]) {
        let Some(w) = self.w.as_mut() else { return };
        for act in actions {
            if let Err(e) = w.write(&(*act).into()) {
                self.error = Some(format!("record {}: {e}", self.records + 1));
                self.w = None;
                return;
            }
            self.records += 1;
        }
    }

    /// Ends the trace and waits until it is in the file.
    pub fn finish(mut self, rule: u32) -> Recorded {
        let mut error = self.error.take();
        if let Some(w) = self.w.take() {
            if let Err(e) = w.finish() {
                error.get_or_insert(e.to_string());
            }
        }
        if let Err(e) = self.file.finish() {
            error.get_or_insert(e.to_string());
        }
        Recorded {
            rule,
            path: self.path,
            records: self.records,
            error,
        }
    }
}

/// Packet-trace extensions a decision trace may end in, longest first.
const EXTS: [&str; 5] = [".pkt.csv", ".nist.bin", ".nist.txt", ".bin", ".nist"];

/// The decision trace of `rule` in `direction` for `--record-decisions
/// base`: `base` with `.a2b` (rule 0) or `.ruleN.a2b` before its extension
/// (`run.pkt.csv` → `run.a2b.pkt.csv`, `run.rule1.b2a.pkt.csv`).
pub fn decision_path(base: &Path, direction: &str, rule: u32) -> Result<PathBuf, RecorderError> {
    decision_format(base)?;
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let Some(ext) = EXTS.iter().find(|e| lower.ends_with(*e)) else {
        return Err(RecorderError::Format {
            path: base.display().to_string(),
        });
    };
    let stem = &name[..name.len() - ext.len()];
    let tag = if rule == 0 {
        direction.to_string()
    } else {
        format!("rule{rule}.{direction}")
    };
    Ok(base.with_file_name(format!("{stem}.{tag}{}", &name[name.len() - ext.len()..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_paths_name_the_rule_and_direction_before_the_extension() {
        let p = |b: &str, d, r| decision_path(Path::new(b), d, r).map(|p| p.display().to_string());
        assert_eq!(p("/t/run.pkt.csv", "a2b", 0).unwrap(), "/t/run.a2b.pkt.csv");
        assert_eq!(p("run.Pkt.CSV", "b2a", 2).unwrap(), "run.rule2.b2a.Pkt.CSV");
        assert_eq!(p("x.bin", "a2b", 0).unwrap(), "x.a2b.bin");
        assert!(p("x.delays", "a2b", 0).is_err());
        assert!(p("x.csv", "a2b", 0).is_err());
    }
}
