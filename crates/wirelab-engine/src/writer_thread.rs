//! A file's writer thread fed through a bounded queue of chunks: the part
//! [`crate::recordlog::RecordLog`] and [`crate::emulate::sink::ChunkFile`]
//! share. Closing the queue ends the thread; dropping it unfinished (an
//! error path) still lets the queued chunks reach the file.

use std::io;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

pub(crate) struct WriterThread {
    tx: Option<SyncSender<Vec<u8>>>,
    thread: Option<JoinHandle<io::Result<u64>>>,
    /// Names the thread in the error of a panic, e.g. "record writer".
    what: &'static str,
}

impl WriterThread {
    /// Starts thread `name` running `work` on the receiving end of a queue
    /// of `capacity` chunks; `work` returns its count (bytes, records).
    pub(crate) fn spawn(
        name: &str,
        what: &'static str,
        capacity: usize,
        work: impl FnOnce(Receiver<Vec<u8>>) -> io::Result<u64> + Send + 'static,
    ) -> io::Result<WriterThread> {
        let (tx, rx) = sync_channel::<Vec<u8>>(capacity);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(rx))?;
        Ok(WriterThread {
            tx: Some(tx),
            thread: Some(thread),
            what,
        })
    }

    /// A sending end for one writer (`None` once finished).
    pub(crate) fn sender(&self) -> Option<SyncSender<Vec<u8>>> {
        self.tx.clone()
    }

    /// Closes the queue, waits until the thread has written what every
    /// sender queued (drop the writers first) and returns its count.
    pub(crate) fn finish(mut self) -> io::Result<u64> {
        self.tx.take();
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other(format!("{} thread panicked", self.what)))?,
            None => Ok(0),
        }
    }
}

impl Drop for WriterThread {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
