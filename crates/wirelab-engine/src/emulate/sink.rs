//! A file the forwarding threads write without waiting for the disk: each
//! thread fills its own chunk ([`ChunkWriter`]), and full chunks go through
//! a bounded queue to one writer thread ([`ChunkFile`]). Each writer's
//! bytes keep their order; chunks of different writers interleave whole.
//! Only a full queue makes a writer wait (counted): nothing is dropped.
//! Memory: at most [`QUEUE_CHUNKS`] + 1 chunks per writer in flight.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};

use crate::writer_thread::WriterThread;

/// A chunk is handed on once it holds this many bytes.
pub const CHUNK_BYTES: usize = 256 << 10;
/// Chunks queued for the writer thread at most.
pub const QUEUE_CHUNKS: usize = 64;

struct Shared {
    pool: Mutex<Vec<Vec<u8>>>,
    waits: AtomicU64,
}

impl Shared {
    fn chunk(&self) -> Vec<u8> {
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES + (64 << 10)))
    }

    fn recycle(&self, mut c: Vec<u8>) {
        c.clear();
        let mut p = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if p.len() < QUEUE_CHUNKS {
            p.push(c);
        }
    }
}

/// The file and its writer thread.
pub struct ChunkFile {
    writer: WriterThread,
    shared: Arc<Shared>,
}

/// What a [`ChunkFile`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkStats {
    pub bytes: u64,
    /// Times a writer found the queue full and waited.
    pub queue_waits: u64,
}

impl ChunkFile {
    /// Creates `path`, writes `head` and starts the writer thread.
    pub fn create(path: &Path, head: &[u8]) -> io::Result<ChunkFile> {
        let mut file = File::create(path)?;
        file.write_all(head)?;
        let shared = Arc::new(Shared {
            pool: Mutex::new(Vec::new()),
            waits: AtomicU64::new(0),
        });
        let sh = shared.clone();
        let head_len = head.len() as u64;
        let writer = WriterThread::spawn("wirelab-sink", "file writer", QUEUE_CHUNKS, move |rx| {
            write_loop(file, rx, &sh).map(|n| n + head_len)
        })?;
        Ok(ChunkFile { writer, shared })
    }

    /// A handle for one thread.
    pub fn writer(&self) -> ChunkWriter {
        ChunkWriter {
            tx: self.writer.sender(),
            shared: self.shared.clone(),
            buf: Vec::new(),
        }
    }

    /// Waits until every writer's bytes are in the file (drop or flush
    /// the writers first) and syncs it.
    pub fn finish(self) -> io::Result<SinkStats> {
        let bytes = self.writer.finish()?;
        Ok(SinkStats {
            bytes,
            queue_waits: self.shared.waits.load(Ordering::Relaxed),
        })
    }
}

fn write_loop(mut file: File, rx: Receiver<Vec<u8>>, shared: &Shared) -> io::Result<u64> {
    let mut bytes = 0u64;
    for chunk in rx {
        file.write_all(&chunk)?;
        bytes += chunk.len() as u64;
        shared.recycle(chunk);
    }
    file.sync_data()?;
    Ok(bytes)
}

/// One thread's handle: append to [`ChunkWriter::buf`] (or `write`), then
/// [`ChunkWriter::maybe_flush`].
pub struct ChunkWriter {
    tx: Option<SyncSender<Vec<u8>>>,
    shared: Arc<Shared>,
    buf: Vec<u8>,
}

impl ChunkWriter {
    /// The chunk being filled.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        if self.buf.capacity() == 0 {
            self.buf = self.shared.chunk();
        }
        &mut self.buf
    }

    /// Bytes waiting in this writer's chunk.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Hands the chunk on once it is full.
    pub fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK_BYTES {
            self.hand_on()
        } else {
            Ok(())
        }
    }

    /// Hands on whatever the chunk holds.
    pub fn hand_on(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, self.shared.chunk());
        let gone = || io::Error::other("file writer thread ended (disk error?)");
        let Some(tx) = self.tx.as_ref() else {
            return Err(gone());
        };
        match tx.try_send(chunk) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(chunk)) => {
                self.shared.waits.fetch_add(1, Ordering::Relaxed);
                tx.send(chunk).map_err(|_| gone())
            }
            Err(TrySendError::Disconnected(_)) => Err(gone()),
        }
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf().extend_from_slice(b);
        self.maybe_flush()?;
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_on()
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        let _ = self.hand_on();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_keep_their_order_and_everything_arrives() {
        let dir = std::env::temp_dir().join(format!("wl-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        let f = ChunkFile::create(&p, b"HEAD").unwrap();
        let threads: Vec<_> = (0..2u8)
            .map(|k| {
                let mut w = f.writer();
                std::thread::spawn(move || {
                    for i in 0..100_000u32 {
                        let mut rec = [k; 8];
                        rec[4..].copy_from_slice(&i.to_le_bytes());
                        w.write_all(&rec).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let st = f.finish().unwrap();
        let b = std::fs::read(&p).unwrap();
        assert_eq!(st.bytes, b.len() as u64);
        assert_eq!(&b[..4], b"HEAD");
        let mut next = [0u32; 2];
        for rec in b[4..].chunks_exact(8) {
            let k = usize::from(rec[0]);
            assert_eq!(rec[..4], [rec[0]; 4]);
            assert_eq!(u32::from_le_bytes(rec[4..].try_into().unwrap()), next[k]);
            next[k] += 1;
        }
        assert_eq!(next, [100_000; 2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
