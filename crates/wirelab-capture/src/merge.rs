//! Merged output of several fanout threads: one writer thread, one file, timestamp order.
//!
//! Every capture thread copies the packets of the blocks it retires into a pooled batch
//! ([`BATCH_CAP`] bytes of packet data plus a record index) and hands full batches, and at
//! the end of every cycle the partly filled one, to the writer over a channel. Empty batches
//! come back on a per-thread return channel and are reused: at most [`POOL_BATCHES`] per
//! thread are ever allocated, so the steady state allocates nothing. When the pool is
//! exhausted the capture thread waits for the writer (counted as `pool_waits`); the ring
//! absorbs the wait, and a writer that cannot keep up shows as ring drops, as in the
//! per-thread mode.
//!
//! With each batch (or alone, when the thread saw nothing) a thread reports its
//! *watermark*: nothing older will follow. A thread that found its ring empty at wall-clock
//! time `t` reports `t − bound`, with `bound` = 2 × the block retire timeout + 20 ms (the
//! same bound the drain uses): a packet still in a partly filled block is retired within
//! one retire timeout, so anything older than `t − bound` has been seen. The writer runs
//! [`wirelab_core::merge::Merge`] over the threads and writes a packet only once it is at
//! or below every thread's watermark, so the file is globally sorted. The cost: packets
//! are held back for up to `bound` plus one wait cycle (≤ 50 ms), and memory holds what
//! all threads capture in that time (`merge.held_max` in the summary).
//!
//! The writer reads wall-clock time (file statistics, rotation, `max_delay_ns`) from the
//! [`Clock`] it is given, the capture's own.

use crate::output::{FileSummary, Output};
use crate::CaptureError;
use serde::Serialize;
use std::io;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;
use wirelab_core::capture;
use wirelab_core::merge::Merge;
use wirelab_io::stop::StopFlag;
use wirelab_io::Clock;
use wirelab_pcap::StatsCounters;

/// Packet bytes per batch.
pub const BATCH_CAP: usize = 256 * 1024;
/// Batches allocated at most per capture thread.
pub const POOL_BATCHES: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Rec {
    ts: u64,
    orig_len: u32,
    off: u32,
    len: u32,
}

/// A pooled batch of copied packets.
#[derive(Debug)]
pub struct Batch {
    data: Vec<u8>,
    recs: Vec<Rec>,
}

impl Batch {
    fn new() -> Self {
        Batch {
            data: Vec::with_capacity(BATCH_CAP + 65_536),
            recs: Vec::with_capacity(BATCH_CAP / 64),
        }
    }
}

enum Msg {
    Batch(usize, Batch),
    Watermark(usize, u64),
    Counters(usize, StatsCounters),
    Done(usize, StatsCounters),
}

/// The capture thread's end: copies packets into pooled batches.
pub struct MergeTx {
    idx: usize,
    tx: Sender<Msg>,
    free: Receiver<Batch>,
    cur: Batch,
    allocated: usize,
    /// Times this thread waited for a free batch.
    pub pool_waits: u64,
    bound_ns: u64,
    last_ts: u64,
    ended: bool,
}

impl Drop for MergeTx {
    /// A thread that failed still ends its stream, so the others' packets are released.
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.tx.send(Msg::Done(self.idx, StatsCounters::default()));
        }
    }
}

fn gone() -> io::Error {
    io::Error::other("the merge writer thread stopped (see its error); nothing more can be written")
}

impl MergeTx {
    /// Copies one packet into the current batch (sends it first when full).
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        if self.cur.data.len() + data.len() > BATCH_CAP && !self.cur.recs.is_empty() {
            self.send_cur()?;
        }
        let off = self.cur.data.len() as u32;
        self.cur.data.extend_from_slice(data);
        self.cur.recs.push(Rec {
            ts: ts_ns,
            orig_len,
            off,
            len: data.len() as u32,
        });
        self.last_ts = self.last_ts.max(ts_ns);
        Ok(())
    }

    fn send_cur(&mut self) -> io::Result<()> {
        let next = match self.free.try_recv() {
            Ok(b) => b,
            Err(_) if self.allocated < POOL_BATCHES => {
                self.allocated += 1;
                Batch::new()
            }
            Err(_) => {
                self.pool_waits += 1;
                self.free.recv().map_err(|_| gone())?
            }
        };
        let b = std::mem::replace(&mut self.cur, next);
        self.tx.send(Msg::Batch(self.idx, b)).map_err(|_| gone())
    }

    /// End of a cycle: hands over the partly filled batch and the watermark. `scan_start`
    /// is the wall-clock time read before the ring was last found empty.
    pub fn end_cycle(
        &mut self,
        scan_start: u64,
        counters: Option<StatsCounters>,
    ) -> io::Result<()> {
        if !self.cur.recs.is_empty() {
            self.send_cur()?;
        }
        // Not the last packet's stamp: one ring fed by several CPUs is not in stamp order.
        let wm = capture::idle_watermark_ns(scan_start, self.bound_ns);
        self.tx
            .send(Msg::Watermark(self.idx, wm))
            .map_err(|_| gone())?;
        if let Some(c) = counters {
            self.tx
                .send(Msg::Counters(self.idx, c))
                .map_err(|_| gone())?;
        }
        Ok(())
    }

    /// Batches this thread has allocated.
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    /// The thread has drained its ring: sends what is left and ends its stream.
    pub fn finish(mut self, counters: StatsCounters) -> io::Result<()> {
        if !self.cur.recs.is_empty() {
            self.send_cur()?;
        }
        self.ended = true;
        self.tx
            .send(Msg::Done(self.idx, counters))
            .map_err(|_| gone())
    }
}

/// The merge part of the JSON summary (`merge` object).
#[derive(Debug, Clone, Default, Serialize)]
pub struct MergeSummary {
    /// Watermark bound of an idle thread (ns): 2 × retire timeout + 20 ms.
    pub idle_bound_ns: u64,
    /// Packets written by the merge writer.
    pub packets: u64,
    /// Batches handed from capture threads to the writer.
    pub batches: u64,
    /// Batches allocated in all pools (at most threads × 64).
    pub pool_batches: u64,
    /// Times a capture thread waited for a free batch.
    pub pool_waits: u64,
    /// Most packets held back at once waiting for the watermarks.
    pub held_max: u64,
    /// Longest a written packet waited: write time − kernel timestamp (ns), sampled at the
    /// oldest packet of every release.
    pub max_delay_ns: u64,
    /// Packets that arrived older than one already written (a thread broke its watermark,
    /// e.g. a block retired later than the bound); written anyway, out of order.
    pub late: u64,
    /// Files written.
    pub files: Vec<FileSummary>,
}

/// The writer thread's handle.
pub struct MergeWriter {
    handle: std::thread::JoinHandle<Result<MergeSummary, CaptureError>>,
}

/// Sets up the channels and starts the writer thread over `out`, timed by `clock`; returns
/// one [`MergeTx`] per capture thread.
pub fn start<C: Clock + Send + 'static>(
    threads: usize,
    out: Output,
    retire_ms: u32,
    stop: StopFlag,
    clock: C,
) -> io::Result<(Vec<MergeTx>, MergeWriter)> {
    let bound_ns = capture::in_flight_bound_ns(retire_ms);
    let (tx, rx) = channel();
    let mut txs = Vec::with_capacity(threads);
    let mut frees = Vec::with_capacity(threads);
    for idx in 0..threads {
        let (ftx, frx) = channel();
        frees.push(ftx);
        txs.push(MergeTx {
            idx,
            tx: tx.clone(),
            free: frx,
            cur: Batch::new(),
            allocated: 1,
            pool_waits: 0,
            bound_ns,
            last_ts: 0,
            ended: false,
        });
    }
    drop(tx);
    let handle = std::thread::Builder::new()
        .name("wl-capture-merge".into())
        .spawn(move || writer(rx, frees, out, stop, bound_ns, clock))?;
    Ok((txs, MergeWriter { handle }))
}

impl MergeWriter {
    /// Waits for the writer (after every capture thread has finished).
    pub fn join(self) -> Result<MergeSummary, CaptureError> {
        self.handle
            .join()
            .unwrap_or(Err(CaptureError::Panic(usize::MAX)))
    }
}

fn sum_counters(c: &[Option<StatsCounters>], written: u64) -> StatsCounters {
    let sum = |f: fn(&StatsCounters) -> Option<u64>| c.iter().flatten().filter_map(f).sum();
    StatsCounters {
        start_ns: None,
        end_ns: None,
        ifrecv: Some(sum(|c| c.ifrecv)),
        ifdrop: Some(sum(|c| c.ifdrop)),
        filter_accept: Some(sum(|c| c.filter_accept)),
        // The interface counters are the same for every thread.
        osdrop: c.iter().flatten().filter_map(|c| c.osdrop).max(),
        usrdeliv: Some(written),
    }
}

fn writer(
    rx: Receiver<Msg>,
    frees: Vec<Sender<Batch>>,
    mut out: Output,
    stop: StopFlag,
    bound_ns: u64,
    mut clock: impl Clock,
) -> Result<MergeSummary, CaptureError> {
    let k = frees.len();
    // Batches in flight in a slab (slot → batch, packets not yet written); items are
    // (slot, record) so a batch goes back to its thread once all its packets are out.
    let mut merge: Merge<(u32, Rec)> = Merge::new(k);
    let mut slab: Vec<Option<(Batch, usize)>> = Vec::new();
    let mut free_slots: Vec<u32> = Vec::new();
    let mut counters: Vec<Option<StatsCounters>> = vec![None; k];
    let mut sum = MergeSummary {
        idle_bound_ns: bound_ns,
        ..Default::default()
    };
    let mut err: Option<io::Error> = None;
    let mut counters_changed = false;
    let mut disconnected = false;
    while !disconnected {
        let mut next = match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                disconnected = true;
                None
            }
        };
        while let Some(m) = next.take() {
            match m {
                Msg::Batch(s, b) => {
                    sum.batches += 1;
                    let slot = free_slots.pop().unwrap_or_else(|| {
                        slab.push(None);
                        (slab.len() - 1) as u32
                    });
                    for r in &b.recs {
                        merge.push(s, r.ts, (slot, *r));
                    }
                    let n = b.recs.len();
                    slab[slot as usize] = Some((b, n));
                }
                Msg::Watermark(s, wm) => merge.advance(s, wm),
                Msg::Counters(s, c) => {
                    counters[s] = Some(c);
                    counters_changed = true;
                }
                Msg::Done(s, c) => {
                    counters[s] = Some(c);
                    counters_changed = true;
                    merge.finish(s);
                }
            }
            next = rx.try_recv().ok();
        }
        if disconnected {
            // Every sender is gone (threads ended or failed): release everything.
            for s in 0..k {
                merge.finish(s);
            }
        }
        let now = clock.wall_ns();
        let mut first = true;
        merge.release(|s, ts, (slot, r)| {
            if first {
                first = false;
                sum.max_delay_ns = sum.max_delay_ns.max(now.saturating_sub(ts));
            }
            let Some((b, left)) = slab[slot as usize].as_mut() else {
                return;
            };
            if err.is_none() {
                let data = &b.data[r.off as usize..(r.off + r.len) as usize];
                match out.write(ts, r.orig_len, data) {
                    Ok(()) => sum.packets += 1,
                    Err(e) => err = Some(e),
                }
            }
            *left -= 1;
            if *left == 0 {
                let Some((mut b, _)) = slab[slot as usize].take() else {
                    return;
                };
                free_slots.push(slot);
                b.data.clear();
                b.recs.clear();
                // A thread that has already ended no longer takes batches back.
                let _ = frees[s].send(b);
            }
        });
        if err.is_none() {
            let c = counters_changed.then(|| sum_counters(&counters, sum.packets));
            counters_changed = false;
            if let Err(e) = out.tick(clock.wall_ns(), c.as_ref()) {
                err = Some(e);
            }
        }
        if err.is_some() {
            // Stop the capture; keep taking messages (and returning batches) until every
            // thread has drained, so none of them blocks on a full pool.
            stop.stop();
        }
    }
    let ms = merge.stats();
    sum.held_max = ms.held_max;
    sum.late = ms.late;
    let fin = sum_counters(&counters, sum.packets);
    let files = out.finish(clock.wall_ns(), &fin);
    match err {
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Some(e) => return Err(e.into()),
        None => sum.files = files?,
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_thread_promises_only_what_the_ring_cannot_still_bring() {
        let (tx, rx) = channel();
        let (_free_tx, free) = channel();
        let mut m = MergeTx {
            idx: 1,
            tx,
            free,
            cur: Batch::new(),
            allocated: 1,
            pool_waits: 0,
            bound_ns: capture::in_flight_bound_ns(10),
            last_ts: 0,
            ended: false,
        };
        m.write(5_090_000_000, 60, &[1; 60]).unwrap();
        m.end_cycle(5_100_000_000, None).unwrap();
        assert!(matches!(rx.try_recv(), Ok(Msg::Batch(1, b)) if b.recs.len() == 1));
        // The scan's start minus 2 × 10 ms + 20 ms: not the newest stamp, which a block
        // still being filled can undercut.
        assert!(matches!(
            rx.try_recv(),
            Ok(Msg::Watermark(1, 5_060_000_000))
        ));
        m.finish(StatsCounters::default()).unwrap();
        assert!(matches!(rx.try_recv(), Ok(Msg::Done(1, _))));
    }
}
