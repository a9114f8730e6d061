//! Per-packet record files (format in `wirelab_wire::record`), written off
//! the packet path.
//!
//! A [`RecordLog`] owns a writer thread and the file. Each packet thread
//! gets its own [`RecordWriter`] with a chunk of 1024 record slots: `write`
//! stores the record's 64 bytes there as eight atomic words and publishes
//! it with one release store (no lock, no allocation, no system call). A
//! full chunk is copied into a buffer from a pool and goes to the writer
//! thread through a bounded queue, so the steady state allocates nothing and
//! the packet thread never waits for the disk (a blocking `write(2)` under
//! dirty-page throttling stalls for seconds). Only when the whole queue (256
//! chunks, 16 MiB, seconds of traffic) is full does `write` wait, counted in
//! [`LogStats::queue_waits`]: records are never dropped. Each writer's
//! records keep their order in the file. Dropping a writer flushes its
//! partial chunk; `finish` waits for every chunk to reach the file and
//! syncs it.
//!
//! # Crash safety
//!
//! Every [`FLUSH_INTERVAL`] the writer thread also copies the records
//! published in every writer's partial chunk since it last looked, so no
//! record waits longer than that (plus the time to write what is queued
//! before it) before it is handed to the kernel, in `write(2)` calls of
//! whole records. A process killed outright (`kill -9`, the OOM killer)
//! therefore leaves a file holding every record written more than
//! [`FLUSH_INTERVAL`] before the kill: the loss is at most that last
//! interval (and, if the kill lands inside a `write(2)`, one partial last
//! record, which readers skip and report). The header is in the file as
//! soon as [`RecordLog::create`] returns. A machine crash can lose more: the
//! file is synced only by [`RecordLog::finish`].

use serde::Serialize;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};
use wirelab_wire::record::{Record, RecordFileHeader, Role, RECORD_LEN};

use crate::writer_thread::WriterThread;

/// Longest time a written record waits in its writer's partial chunk before
/// the writer thread hands it to the kernel: what a `kill -9` can lose.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(200);
const CHUNK: usize = 1024;
const QUEUE_CHUNKS: usize = 256;
const WORDS: usize = RECORD_LEN / 8;

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

/// A writer's partial chunk, shared with the writer thread's periodic flush.
/// Only the writer stores records and `len`; `taken` and the copying of
/// published records happen under `state`, which either side takes with one
/// compare-exchange only when it hands records on (never per record).
struct Slot {
    /// Record `i` is words `i * WORDS ..`, its bytes in little-endian words.
    words: Box<[AtomicU64]>,
    /// Records published (release store after their words).
    len: AtomicUsize,
    /// Records at the front the periodic flush has already written.
    taken: AtomicUsize,
    state: AtomicU8,
}

const IDLE: u8 = 0;
const BUSY: u8 = 1;

impl Slot {
    fn new() -> Slot {
        Slot {
            words: (0..CHUNK * WORDS).map(|_| AtomicU64::new(0)).collect(),
            len: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            state: AtomicU8::new(IDLE),
        }
    }

    fn try_lock(&self) -> bool {
        self.state
            .compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn unlock(&self) {
        self.state.store(IDLE, Ordering::Release);
    }

    /// Appends the bytes of published records `from..to` to `out`.
    fn copy(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        for w in &self.words[from * WORDS..to * WORDS] {
            out.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
    }
}

struct Shared {
    pool: Mutex<Vec<Vec<u8>>>,
    /// Every writer's slot, for the periodic flush.
    slots: Mutex<Vec<Weak<Slot>>>,
    queue_waits: AtomicU64,
}

impl Shared {
    fn chunk(&self) -> Vec<u8> {
        lock(&self.pool)
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK * RECORD_LEN))
    }

    fn recycle(&self, mut chunk: Vec<u8>) {
        chunk.clear();
        let mut p = lock(&self.pool);
        if p.len() < QUEUE_CHUNKS {
            p.push(chunk);
        }
    }
}

/// Locks `m`; a panic elsewhere while holding it leaves nothing half done.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The record file and its writer thread.
pub struct RecordLog {
    writer: WriterThread,
    shared: Arc<Shared>,
}

impl RecordLog {
    /// Creates the file, writes its header and starts the writer thread.
    pub fn create(path: &Path, role: Role, meta: &RecordMeta) -> io::Result<RecordLog> {
        let mut file = File::create(path)?;
        let header = RecordFileHeader {
            role,
            metadata: serde_json::to_string(meta).map_err(io::Error::other)?,
        };
        file.write_all(&header.to_bytes())?;
        let shared = Arc::new(Shared {
            pool: Mutex::new(Vec::new()),
            slots: Mutex::new(Vec::new()),
            queue_waits: AtomicU64::new(0),
        });
        let sh = shared.clone();
        let writer = WriterThread::spawn(
            "wirelab-records",
            "record writer",
            QUEUE_CHUNKS,
            move |rx| write_loop(file, rx, &sh),
        )?;
        Ok(RecordLog { writer, shared })
    }

    /// A handle for one packet thread.
    pub fn writer(&self) -> RecordWriter {
        let slot = Arc::new(Slot::new());
        lock(&self.shared.slots).push(Arc::downgrade(&slot));
        RecordWriter {
            tx: self.writer.sender(),
            shared: self.shared.clone(),
            slot,
            len: 0,
            written: 0,
        }
    }

    /// Waits until every writer's records are in the file (drop all
    /// writers first), syncs it, and returns the counters.
    pub fn finish(self) -> io::Result<LogStats> {
        let records = self.writer.finish()?;
        Ok(LogStats {
            records,
            queue_waits: self.shared.queue_waits.load(Ordering::Relaxed),
        })
    }
}

/// Writes chunks as they come and, every [`FLUSH_INTERVAL`], what the
/// writers have published since; ends when every sender (the log and all
/// writers) is gone.
fn write_loop(mut file: File, rx: Receiver<Vec<u8>>, shared: &Shared) -> io::Result<u64> {
    let mut bytes = 0u64;
    let mut write = |chunk: Vec<u8>, file: &mut File| -> io::Result<()> {
        file.write_all(&chunk)?;
        bytes += chunk.len() as u64;
        shared.recycle(chunk);
        Ok(())
    };
    let mut next_flush = Instant::now() + FLUSH_INTERVAL;
    loop {
        match rx.recv_timeout(next_flush.saturating_duration_since(Instant::now())) {
            Ok(chunk) => write(chunk, &mut file)?,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if Instant::now() >= next_flush {
            for chunk in take_published(&rx, shared) {
                write(chunk, &mut file)?;
            }
            next_flush = Instant::now() + FLUSH_INTERVAL;
        }
    }
    file.sync_data()?;
    Ok(bytes / RECORD_LEN as u64)
}

/// The records the writers have published and nobody has written yet, each
/// writer's after the queued chunks that precede them. A writer caught
/// handing on its chunk is left for the next flush: its records are being
/// queued anyway.
fn take_published(rx: &Receiver<Vec<u8>>, shared: &Shared) -> Vec<Vec<u8>> {
    let slots: Vec<_> = {
        let mut s = lock(&shared.slots);
        s.retain(|w| w.strong_count() > 0);
        s.iter().filter_map(Weak::upgrade).collect()
    };
    let mut out = Vec::new();
    for slot in slots {
        if !slot.try_lock() {
            continue;
        }
        let from = slot.taken.load(Ordering::Relaxed);
        let to = slot.len.load(Ordering::Acquire);
        if to > from {
            // A writer queues a full chunk before it publishes the next record,
            // so every chunk that precedes these records is in the queue now.
            out.extend(rx.try_iter());
            let mut c = shared.chunk();
            slot.copy(from, to, &mut c);
            slot.taken.store(to, Ordering::Relaxed);
            out.push(c);
        }
        slot.unlock();
    }
    out
}

/// One thread's handle on a [`RecordLog`].
pub struct RecordWriter {
    tx: Option<SyncSender<Vec<u8>>>,
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    /// Records in the slot (the owner's copy of `slot.len`).
    len: usize,
    written: u64,
}

impl RecordWriter {
    #[inline]
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        let b = r.to_bytes();
        let at = self.len * WORDS;
        for (w, c) in self.slot.words[at..at + WORDS]
            .iter()
            .zip(b.chunks_exact(8))
        {
            let mut le = [0u8; 8];
            le.copy_from_slice(c);
            w.store(u64::from_le_bytes(le), Ordering::Relaxed);
        }
        self.len += 1;
        self.slot.len.store(self.len, Ordering::Release);
        self.written += 1;
        if self.len == CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Records written through this handle.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Hands the records not yet written on to the writer thread.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        // The periodic flush holds the slot only while it copies at most one chunk.
        while !self.slot.try_lock() {
            std::thread::yield_now();
        }
        let from = self.slot.taken.load(Ordering::Relaxed);
        let mut chunk = self.shared.chunk();
        self.slot.copy(from, self.len, &mut chunk);
        self.len = 0;
        self.slot.len.store(0, Ordering::Relaxed);
        self.slot.taken.store(0, Ordering::Relaxed);
        self.slot.unlock();
        if chunk.is_empty() {
            self.shared.recycle(chunk);
            return Ok(());
        }
        let Some(tx) = self.tx.as_ref() else {
            return Ok(());
        };
        let gone = || io::Error::other("record writer thread ended (disk error?)");
        match tx.try_send(chunk) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(chunk)) => {
                self.shared.queue_waits.fetch_add(1, Ordering::Relaxed);
                tx.send(chunk).map_err(|_| gone())
            }
            Err(TrySendError::Disconnected(_)) => Err(gone()),
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

    fn tmp(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wl-reclog-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn file_records(p: &Path) -> (Vec<Record>, usize) {
        let mut r = RecordReader::new(File::open(p).unwrap()).unwrap();
        let recs: Vec<Record> = r.by_ref().map(|x| x.unwrap()).collect();
        (recs, r.trailing_bytes)
    }

    /// What a `kill -9` would find: records of a writer that is still alive
    /// and writes nothing more (a lull) reach the file within the flush
    /// interval, without `flush`, drop or `finish`.
    #[test]
    fn an_idle_writers_records_reach_the_file_without_finish() {
        let dir = tmp("idle");
        let p = dir.join("a.wlr");
        let log = RecordLog::create(&p, Role::Receiver, &meta()).unwrap();
        let header_only = std::fs::metadata(&p).unwrap().len();
        assert!(header_only > 20, "the header is written at once");
        let mut w = log.writer();
        for seq in 0..5 {
            w.write(&Record {
                seq,
                ..Default::default()
            })
            .unwrap();
        }
        // Bounded wait, far beyond FLUSH_INTERVAL, for a loaded machine.
        let want = header_only + 5 * RECORD_LEN as u64;
        for _ in 0..500 {
            if std::fs::metadata(&p).unwrap().len() >= want {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (recs, trailing) = file_records(&p);
        assert_eq!(
            recs.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(trailing, 0);
        // The writer goes on; nothing is written twice.
        for seq in 5..8 {
            w.write(&Record {
                seq,
                ..Default::default()
            })
            .unwrap();
        }
        drop(w);
        assert_eq!(log.finish().unwrap().records, 8);
        let (recs, _) = file_records(&p);
        assert_eq!(
            recs.iter().map(|r| r.seq).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Full chunks and periodic partial ones interleave: each writer's
    /// records still keep their order, none lost or doubled.
    #[test]
    fn periodic_flushes_keep_each_writers_order() {
        let dir = tmp("order");
        let p = dir.join("a.wlr");
        let log = RecordLog::create(&p, Role::Sender, &meta()).unwrap();
        let threads: Vec<_> = (0..2u32)
            .map(|flow| {
                let mut w = log.writer();
                std::thread::spawn(move || {
                    // Pauses long enough for several flushes to take partial
                    // chunks between full ones (ends after ~400 pauses).
                    for seq in 0..(4 * CHUNK as u64 + 123) {
                        w.write(&Record {
                            flow,
                            seq,
                            ..Default::default()
                        })
                        .unwrap();
                        if seq % 11 == 0 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n = 4 * CHUNK as u64 + 123;
        assert_eq!(log.finish().unwrap().records, 2 * n);
        let (recs, _) = file_records(&p);
        for flow in 0..2 {
            let seqs: Vec<u64> = recs
                .iter()
                .filter(|r| r.flow == flow)
                .map(|r| r.seq)
                .collect();
            assert_eq!(seqs, (0..n).collect::<Vec<u64>>());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
