//! Watermark k-way merge: several time-stamped streams into one sorted stream.
//!
//! Each stream (one capture thread) pushes its items and reports a *watermark*: a promise
//! that it will push nothing older than that time from now on. Items of one stream need not
//! be in time order (one AF_PACKET ring fed by several CPUs is not: stamps taken on
//! different CPUs reach the ring a few ns out of order), so pushing is no promise; a
//! stream reports "seen everything up to now minus the longest a packet can still be on
//! its way" (see `wirelab_capture`). An item is released only once its time is
//! at or below every stream's watermark (the *horizon*), so the output is sorted globally.
//! Equal times leave in stream-id order, and in push order within a stream; the held items
//! sit in one heap keyed (time, stream, push number).
//!
//! Memory is bounded by what the streams push within one watermark lag (held items are
//! counted, [`MergeStats::held_max`]). An item that arrives older than something already
//! released (a stream broke its promise) is released at once and counted as
//! [`MergeStats::late`], never dropped.
//!
//! No allocation in the steady state: per-stream queues and the heap keep their capacity.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Counters of a [`Merge`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Items pushed.
    pub pushed: u64,
    /// Items released.
    pub released: u64,
    /// Most items held back at once.
    pub held_max: u64,
    /// Items released out of order because they arrived older than the last release.
    pub late: u64,
}

struct Held<T> {
    key: (u64, usize, u64),
    item: T,
}

impl<T> PartialEq for Held<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<T> Eq for Held<T> {}
impl<T> PartialOrd for Held<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Held<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// The merge of `k` streams of items `T` stamped with `u64` times (e.g. ns since the epoch).
pub struct Merge<T> {
    /// Watermark per stream.
    wm: Vec<u64>,
    heap: BinaryHeap<Reverse<Held<T>>>,
    seq: u64,
    held: u64,
    last_out: u64,
    stats: MergeStats,
}

impl<T> Merge<T> {
    /// `k` streams, all with watermark 0 (nothing can be released until each has spoken).
    pub fn new(k: usize) -> Self {
        Merge {
            wm: vec![0; k],
            heap: BinaryHeap::new(),
            seq: 0,
            held: 0,
            last_out: 0,
            stats: MergeStats::default(),
        }
    }

    /// Number of streams.
    pub fn streams(&self) -> usize {
        self.wm.len()
    }

    /// Stream `s` has an item stamped `ts` (its watermark is not moved).
    pub fn push(&mut self, s: usize, ts: u64, item: T) {
        self.seq += 1;
        self.heap.push(Reverse(Held {
            key: (ts, s, self.seq),
            item,
        }));
        self.held += 1;
        self.stats.pushed += 1;
        self.stats.held_max = self.stats.held_max.max(self.held);
    }

    /// Stream `s` promises nothing older than `wm` will follow (never lowers the mark).
    pub fn advance(&mut self, s: usize, wm: u64) {
        self.wm[s] = self.wm[s].max(wm);
    }

    /// Stream `s` has ended: its watermark becomes infinite.
    pub fn finish(&mut self, s: usize) {
        self.wm[s] = u64::MAX;
    }

    /// The release horizon: the smallest watermark.
    pub fn horizon(&self) -> u64 {
        self.wm.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// Items held back now.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Counters.
    pub fn stats(&self) -> MergeStats {
        self.stats
    }

    /// Releases every item at or below the horizon in (time, stream, push) order, calling
    /// `out(stream, ts, item)` for each; returns how many.
    pub fn release(&mut self, mut out: impl FnMut(usize, u64, T)) -> u64 {
        let horizon = self.horizon();
        let mut n = 0;
        while self.heap.peek().is_some_and(|h| h.0.key.0 <= horizon) {
            let Some(Reverse(Held {
                key: (ts, s, _),
                item,
            })) = self.heap.pop()
            else {
                break;
            };
            if ts < self.last_out {
                self.stats.late += 1;
            } else {
                self.last_out = ts;
            }
            self.held -= 1;
            self.stats.released += 1;
            n += 1;
            out(s, ts, item);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(m: &mut Merge<u32>) -> Vec<(usize, u64, u32)> {
        let mut v = vec![];
        m.release(|s, t, i| v.push((s, t, i)));
        v
    }

    #[test]
    fn interleaved_streams_come_out_sorted() {
        let mut m = Merge::new(2);
        for (i, t) in [1u64, 4, 7, 10].iter().enumerate() {
            m.push(0, *t, i as u32);
        }
        // Stream 1 has not spoken: nothing may leave.
        assert!(drain(&mut m).is_empty());
        m.advance(0, 10);
        for (i, t) in [2u64, 3, 8].iter().enumerate() {
            m.push(1, *t, 10 + i as u32);
        }
        m.advance(1, 8);
        // Horizon = min(10, 8) = 8.
        let out = drain(&mut m);
        let ts: Vec<u64> = out.iter().map(|x| x.1).collect();
        assert_eq!(ts, vec![1, 2, 3, 4, 7, 8]);
        assert_eq!(m.held(), 1);
        assert_eq!(m.stats().held_max, 7);
        m.push(1, 12, 13);
        m.advance(1, 12);
        assert_eq!(drain(&mut m), vec![(0, 10, 3)]);
        m.finish(0);
        m.finish(1);
        assert_eq!(drain(&mut m), vec![(1, 12, 13)]);
        assert_eq!(m.stats().released, 8);
        assert_eq!(m.stats().late, 0);
    }

    #[test]
    fn idle_stream_holds_back_until_its_watermark_moves() {
        let mut m = Merge::new(3);
        m.push(0, 200, 1);
        m.push(0, 100, 0); // out of order within the stream: still sorted out
        m.advance(0, 200);
        m.advance(1, 50); // stream 1 idle up to 50
        m.advance(2, 1_000); // stream 2 idle up to 1000
        assert!(drain(&mut m).is_empty());
        assert_eq!(m.horizon(), 50);
        m.advance(1, 150); // idle stream moves on with the clock
        assert_eq!(drain(&mut m), vec![(0, 100, 0)]);
        m.advance(1, 40); // never lowered
        assert_eq!(m.horizon(), 150);
        m.advance(1, 500);
        assert_eq!(drain(&mut m), vec![(0, 200, 1)]);
        assert_eq!(m.held(), 0);
    }

    #[test]
    fn equal_timestamps_are_stable_by_stream_then_push_order() {
        let mut m = Merge::new(3);
        m.push(2, 5, 20);
        m.push(1, 5, 10);
        m.push(1, 5, 11);
        m.push(0, 5, 0);
        m.push(2, 5, 21);
        for s in 0..3 {
            m.finish(s);
        }
        let out: Vec<u32> = drain(&mut m).into_iter().map(|x| x.2).collect();
        assert_eq!(out, vec![0, 10, 11, 20, 21]);
    }

    #[test]
    fn a_late_item_is_released_and_counted_not_dropped() {
        let mut m = Merge::new(2);
        m.push(0, 10, 0);
        m.advance(0, 10);
        m.advance(1, 20);
        assert_eq!(drain(&mut m).len(), 1);
        // Stream 1 broke its promise (pushed 15 after watermark 20).
        m.push(1, 15, 1);
        m.advance(0, 30);
        assert_eq!(drain(&mut m), vec![(1, 15, 1)]);
        assert_eq!(m.stats().late, 0); // 15 >= last released (10)
        m.push(0, 5, 2);
        m.finish(0);
        m.finish(1);
        assert_eq!(drain(&mut m), vec![(0, 5, 2)]);
        assert_eq!(m.stats().late, 1);
    }

    #[test]
    fn many_streams_randomised_against_a_sort() {
        // Deterministic pseudo-random interleaving of 4 sorted streams.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut m = Merge::new(4);
        let mut next = [0u64; 4];
        let mut all = vec![];
        let mut out = vec![];
        for i in 0..10_000u32 {
            let s = (rnd() % 4) as usize;
            // Strictly increasing per stream: a later push can never tie with a release.
            next[s] += 1 + rnd() % 50;
            m.push(s, next[s], i);
            all.push((next[s], s, i));
            if i % 7 == 0 {
                let st = (rnd() % 4) as usize;
                m.advance(st, next[st]);
            }
            m.release(|s, t, i| out.push((t, s, i)));
        }
        for s in 0..4 {
            m.finish(s);
        }
        m.release(|s, t, i| out.push((t, s, i)));
        all.sort(); // (time, stream, push index): push index is increasing per stream
        assert_eq!(out.len(), all.len());
        let first_diff = out.iter().zip(&all).position(|(a, b)| a != b);
        assert_eq!(first_diff, None);
        assert_eq!(m.stats().late, 0);
    }
}
