//! Buffered writer of per-packet record files (format in `wirelab_wire::record`).
//!
//! Records are serialized into a fixed buffer and written in large chunks;
//! the hot path does a 64-byte copy and no allocation. `finish` flushes and
//! syncs; dropping without `finish` still flushes what is buffered, so an
//! interrupted run keeps every whole record.

use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use wirelab_wire::record::{Record, RecordFileHeader, Role};

/// Metadata stored as JSON in every record file header.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RecordMeta {
    pub wirelab_version: String,
    pub role: String,
    pub host: String,
    /// How tx/rx times were taken, e.g. "CLOCK_REALTIME" and the receive timestamping mode.
    pub clock: String,
    /// Wall-clock time of the schedule's start (sched_ns = 0), ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// The full run configuration as given.
    pub config: serde_json::Value,
}

pub struct RecordLog {
    out: BufWriter<File>,
    written: u64,
}

impl RecordLog {
    pub fn create(path: &Path, role: Role, meta: &RecordMeta) -> io::Result<RecordLog> {
        let file = File::create(path)?;
        let mut out = BufWriter::with_capacity(256 * 1024, file);
        let header = RecordFileHeader {
            role,
            metadata: serde_json::to_string(meta).map_err(io::Error::other)?,
        };
        out.write_all(&header.to_bytes())?;
        Ok(RecordLog { out, written: 0 })
    }

    #[inline]
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        self.written += 1;
        self.out.write_all(&r.to_bytes())
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn finish(mut self) -> io::Result<u64> {
        self.out.flush()?;
        self.out.get_ref().sync_data()?;
        Ok(self.written)
    }
}

/// The host name, for record metadata.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::record::RecordReader;

    #[test]
    fn writes_a_readable_file() {
        let dir = std::env::temp_dir().join(format!("wl-reclog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.wlr");
        let meta = RecordMeta {
            wirelab_version: "x".into(),
            role: "sender".into(),
            host: hostname(),
            clock: "CLOCK_REALTIME".into(),
            start_unix_ns: 5,
            config: serde_json::json!({"rate": 1}),
        };
        let mut log = RecordLog::create(&p, Role::Sender, &meta).unwrap();
        for seq in 0..1000 {
            log.write(&Record {
                seq,
                ..Default::default()
            })
            .unwrap();
        }
        assert_eq!(log.finish().unwrap(), 1000);
        let r = RecordReader::new(File::open(&p).unwrap()).unwrap();
        let m: RecordMeta = serde_json::from_str(&r.header().metadata).unwrap();
        assert_eq!(m.start_unix_ns, 5);
        assert_eq!(r.count(), 1000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
