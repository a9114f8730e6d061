//! Where per-packet records come from. The report reads its inputs in
//! passes, streaming, so a source is something that can be read again
//! from its start: a record file today; a capture (pcap probes turned into
//! Rx records) can implement [`ProbeSource`] the same way.

use crate::error::ReportError;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use wirelab_wire::record::{Record, RecordKind, RecordReader, Role};

/// Which side of a path a source saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Tx records (and echo replies) of a sender.
    Sender,
    /// Rx records of a receiver or reflector.
    Receiver,
}

/// What a source says about itself.
#[derive(Debug, Clone)]
pub struct SourceInfo {
    /// A name for the page (a file path).
    pub name: String,
    pub side: Side,
    /// The run configuration and environment the writer recorded (record
    /// file metadata), when it is JSON.
    pub metadata: Option<serde_json::Value>,
}

/// What one pass skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassEnd {
    /// Records handed to the callback.
    pub records: u64,
    /// Records of a kind the side does not write (e.g. Rx in a sender file).
    pub ignored: u64,
    /// Records of a kind this version does not know.
    pub unknown_kind: u64,
    /// Bytes of a partial last record (a file cut short).
    pub partial_bytes: usize,
}

/// A restartable stream of per-packet records.
pub trait ProbeSource {
    fn info(&self) -> &SourceInfo;
    /// One pass in the source's order (send order for a sender, arrival
    /// order for a receiver): Tx and EchoReply records of a sender, Rx
    /// records of a receiver; anything else is counted in
    /// [`PassEnd::ignored`], not passed on.
    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError>;
}

/// A wirelab record file (`send --record`, `recv --record`).
pub struct RecordFile {
    path: PathBuf,
    info: SourceInfo,
}

impl RecordFile {
    /// Opens `path` and reads its header. An emulator log (`emulate
    /// --log`) is refused: it is not a probe record file.
    pub fn open(path: &Path) -> Result<RecordFile, ReportError> {
        let r = Self::reader(path)?;
        let h = r.header();
        let metadata: Option<serde_json::Value> = serde_json::from_str(&h.metadata).ok();
        if metadata
            .as_ref()
            .and_then(|m| m.get("role"))
            .and_then(|r| r.as_str())
            == Some("emulate")
        {
            return Err(ReportError::Input {
                path: path.to_path_buf(),
                message: "an emulator log (emulate --log), not probe records: give it to \
                          `wirelab analyze`"
                    .into(),
            });
        }
        let side = match h.role {
            Role::Sender => Side::Sender,
            Role::Receiver | Role::Reflector => Side::Receiver,
        };
        Ok(RecordFile {
            path: path.to_path_buf(),
            info: SourceInfo {
                name: path.display().to_string(),
                side,
                metadata,
            },
        })
    }

    fn reader(path: &Path) -> Result<RecordReader<BufReader<std::fs::File>>, ReportError> {
        let f = std::fs::File::open(path).map_err(|source| ReportError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        RecordReader::new(BufReader::with_capacity(1 << 20, f)).map_err(|e| ReportError::Input {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }
}

impl ProbeSource for RecordFile {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError> {
        let mut r = Self::reader(&self.path)?;
        let mut end = PassEnd::default();
        loop {
            let rec = r.next_record().map_err(|e| ReportError::Input {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
            let Some(rec) = rec else { break };
            let wanted = match self.info.side {
                Side::Sender => matches!(rec.kind, RecordKind::Tx | RecordKind::EchoReply),
                Side::Receiver => rec.kind == RecordKind::Rx,
            };
            if wanted {
                end.records += 1;
                f(&rec);
            } else {
                end.ignored += 1;
            }
        }
        end.unknown_kind = r.skipped;
        end.partial_bytes = r.trailing_bytes;
        Ok(end)
    }
}

/// Records held in memory (tests, and small inputs built by a caller).
pub struct MemorySource {
    pub info: SourceInfo,
    pub records: Vec<Record>,
}

impl ProbeSource for MemorySource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn pass(&self, f: &mut dyn FnMut(&Record)) -> Result<PassEnd, ReportError> {
        let mut end = PassEnd::default();
        for r in &self.records {
            let wanted = match self.info.side {
                Side::Sender => matches!(r.kind, RecordKind::Tx | RecordKind::EchoReply),
                Side::Receiver => r.kind == RecordKind::Rx,
            };
            if wanted {
                end.records += 1;
                f(r);
            } else {
                end.ignored += 1;
            }
        }
        Ok(end)
    }
}
