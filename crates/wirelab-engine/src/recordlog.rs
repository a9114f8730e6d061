//! Per-packet record files (format in `wirelab_wire::record`), written off
//! the packet path.
//!
//! A [`RecordLog`] owns a writer thread and the file. Each packet thread
//! gets its own [`RecordWriter`]: `write` copies 64 bytes into the current
//! chunk of 1024 records; a full chunk goes to the writer thread through a
//! bounded queue and an empty one comes back from a pool, so the steady
//! state allocates nothing and the packet thread never waits for the disk
//! (a blocking `write(2)` under dirty-page throttling stalls for seconds).
//! Only when the whole queue (256 chunks, 16 MiB, seconds of traffic) is
//! full does `write` wait, counted in [`LogStats::queue_waits`]: records are
//! never dropped. Dropping a writer flushes its partial chunk; `finish`
//! waits for every chunk to reach the file and syncs it. A crash loses at
//! most what was queued; the file stays readable up to its last whole record.

use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use wirelab_wire::record::{Record, RecordFileHeader, Role};

const CHUNK: usize = 1024;
const QUEUE_CHUNKS: usize = 256;

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

/// Counters of a record log.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LogStats {
    pub records: u64,
    /// Times a packet thread found the queue full and waited.
    pub queue_waits: u64,
}

struct Shared {
    pool: Mutex<Vec<Vec<Record>>>,
    queue_waits: AtomicU64,
}

/// The record file and its writer thread.
pub struct RecordLog {
    tx: Option<SyncSender<Vec<Record>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<io::Result<u64>>>,
}

impl RecordLog {
    /// Creates the file, writes its header and starts the writer thread.
    pub fn create(path: &Path, role: Role, meta: &RecordMeta) -> io::Result<RecordLog> {
        let file = File::create(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let header = RecordFileHeader {
            role,
            metadata: serde_json::to_string(meta).map_err(io::Error::other)?,
        };
        out.write_all(&header.to_bytes())?;
        let (tx, rx) = sync_channel::<Vec<Record>>(QUEUE_CHUNKS);
        let shared = Arc::new(Shared {
            pool: Mutex::new(Vec::new()),
            queue_waits: AtomicU64::new(0),
        });
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("wirelab-records".into())
            .spawn(move || write_loop(out, rx, sh))?;
        Ok(RecordLog {
            tx: Some(tx),
            shared,
            thread: Some(thread),
        })
    }

    /// A handle for one packet thread.
    pub fn writer(&self) -> RecordWriter {
        RecordWriter {
            tx: self.tx.clone(),
            shared: self.shared.clone(),
            cur: Vec::with_capacity(CHUNK),
            written: 0,
        }
    }

    /// Waits until every writer's records are in the file (drop all
    /// writers first), syncs it, and returns the counters.
    pub fn finish(mut self) -> io::Result<LogStats> {
        self.tx.take();
        let records = match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("record writer thread panicked"))??,
            None => 0,
        };
        Ok(LogStats {
            records,
            queue_waits: self.shared.queue_waits.load(Ordering::Relaxed),
        })
    }
}

impl Drop for RecordLog {
    fn drop(&mut self) {
        // Not finished (an error path): still let queued records reach the file.
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_loop(
    mut out: BufWriter<File>,
    rx: Receiver<Vec<Record>>,
    shared: Arc<Shared>,
) -> io::Result<u64> {
    let mut n = 0u64;
    let mut buf = Vec::with_capacity(CHUNK * 64);
    // Ends when every sender (the log and all writers) is gone.
    for mut chunk in rx {
        buf.clear();
        for r in &chunk {
            buf.extend_from_slice(&r.to_bytes());
        }
        out.write_all(&buf)?;
        n += chunk.len() as u64;
        chunk.clear();
        if let Ok(mut p) = shared.pool.lock() {
            if p.len() < QUEUE_CHUNKS {
                p.push(chunk);
            }
        }
    }
    out.flush()?;
    out.get_ref().sync_data()?;
    Ok(n)
}

/// One thread's handle on a [`RecordLog`].
pub struct RecordWriter {
    tx: Option<SyncSender<Vec<Record>>>,
    shared: Arc<Shared>,
    cur: Vec<Record>,
    written: u64,
}

impl RecordWriter {
    #[inline]
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        self.cur.push(*r);
        self.written += 1;
        if self.cur.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Records written through this handle.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Hands the partial chunk to the writer thread.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.cur.is_empty() {
            return Ok(());
        }
        let Some(tx) = self.tx.as_ref() else {
            return Ok(());
        };
        let next = self
            .shared
            .pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.cur, next);
        match tx.try_send(full) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(full)) => {
                self.shared.queue_waits.fetch_add(1, Ordering::Relaxed);
                tx.send(full)
                    .map_err(|_| io::Error::other("record writer thread ended (disk error?)"))
            }
            Err(TrySendError::Disconnected(_)) => {
                Err(io::Error::other("record writer thread ended (disk error?)"))
            }
        }
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        let _ = self.flush();
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

    fn meta() -> RecordMeta {
        RecordMeta {
            wirelab_version: "x".into(),
            role: "sender".into(),
            host: hostname(),
            clock: "CLOCK_REALTIME".into(),
            start_unix_ns: 5,
            config: serde_json::json!({"rate": 1}),
        }
    }

    #[test]
    fn several_writers_reach_one_readable_file() {
        let dir = std::env::temp_dir().join(format!("wl-reclog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.wlr");
        let log = RecordLog::create(&p, Role::Sender, &meta()).unwrap();
        let threads: Vec<_> = (0..3u32)
            .map(|flow| {
                let mut w = log.writer();
                std::thread::spawn(move || {
                    for seq in 0..5000 {
                        w.write(&Record {
                            flow,
                            seq,
                            ..Default::default()
                        })
                        .unwrap();
                    }
                    assert_eq!(w.written(), 5000);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = log.finish().unwrap();
        assert_eq!(stats.records, 15_000);
        let r = RecordReader::new(File::open(&p).unwrap()).unwrap();
        let m: RecordMeta = serde_json::from_str(&r.header().metadata).unwrap();
        assert_eq!(m.start_unix_ns, 5);
        let recs: Vec<Record> = r.map(|x| x.unwrap()).collect();
        assert_eq!(recs.len(), 15_000);
        // Each writer's records keep their order.
        for flow in 0..3 {
            let seqs: Vec<u64> = recs
                .iter()
                .filter(|r| r.flow == flow)
                .map(|r| r.seq)
                .collect();
            assert_eq!(seqs, (0..5000).collect::<Vec<u64>>());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
