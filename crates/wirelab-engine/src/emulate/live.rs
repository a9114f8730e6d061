//! A direction's counters as they run, for a live display: the forwarding
//! thread stores, any other thread loads (relaxed: each value is exact, a
//! snapshot of several is not taken at one instant).

use super::forward::{Drops, ForwardStats};
use std::sync::atomic::{AtomicU64, Ordering};
use wirelab_wire::record::FATES;

/// Live counters of one direction.
#[derive(Debug, Default)]
pub struct LiveDir {
    received: AtomicU64,
    sent: AtomicU64,
    duplicates: AtomicU64,
    corrupted: AtomicU64,
    held: AtomicU64,
    early: AtomicU64,
    /// By fate code ([`FATES`] order); `ring` is read at the end.
    dropped: [AtomicU64; FATES.len()],
}

/// What [`LiveDir::snapshot`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveSnapshot {
    pub received: u64,
    pub sent: u64,
    pub duplicates: u64,
    pub corrupted: u64,
    /// Frames waiting for a deadline.
    pub held: u64,
    pub early: u64,
    /// `ring` is not known live (it is read from the ring at the end).
    pub dropped: Drops,
}

impl LiveDir {
    /// Stores the forwarder's counters (one writer).
    pub(crate) fn publish(&self, st: &ForwardStats, held: usize) {
        let r = Ordering::Relaxed;
        self.received.store(st.received, r);
        self.sent.store(st.sent, r);
        self.duplicates.store(st.duplicates, r);
        self.corrupted.store(st.corrupted, r);
        self.held.store(held as u64, r);
        self.early.store(st.early, r);
        for (a, row) in self.dropped.iter().zip(&FATES) {
            a.store(st.dropped.get(row.fate), r);
        }
    }

    pub fn snapshot(&self) -> LiveSnapshot {
        let r = Ordering::Relaxed;
        let mut dropped = Drops::default();
        for (a, row) in self.dropped.iter().zip(&FATES) {
            dropped.fates.add_n(row.fate, a.load(r));
        }
        LiveSnapshot {
            received: self.received.load(r),
            sent: self.sent.load(r),
            duplicates: self.duplicates.load(r),
            corrupted: self.corrupted.load(r),
            held: self.held.load(r),
            early: self.early.load(r),
            dropped,
        }
    }
}

impl LiveSnapshot {
    /// One short line: `rx 1200 tx 1150 dup 3 drop 53 (loss 50, limit 3) held 12`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "rx {} tx {} dup {} drop {}",
            self.received,
            self.sent,
            self.duplicates,
            self.dropped.copies()
        );
        let why: Vec<String> = self
            .dropped
            .by_reason()
            .filter(|r| r.1 > 0)
            .map(|(n, v)| format!("{} {v}", n.replace('_', " ")))
            .collect();
        if !why.is_empty() {
            s += &format!(" ({})", why.join(", "));
        }
        s += &format!(" held {}", self.held);
        if self.early > 0 {
            s += &format!(" EARLY {}", self.early);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_wire::record::EmuFate;

    #[test]
    fn the_line_names_the_reasons_that_dropped_something() {
        let live = LiveDir::default();
        let mut st = ForwardStats {
            received: 1200,
            sent: 1150,
            duplicates: 3,
            ..ForwardStats::default()
        };
        st.dropped.fates.add_n(EmuFate::Loss, 50);
        st.dropped.fates.add_n(EmuFate::Limit, 3);
        live.publish(&st, 12);
        assert_eq!(
            live.snapshot().line(),
            "rx 1200 tx 1150 dup 3 drop 53 (loss 50, limit 3) held 12"
        );
        st.dropped = Drops::default();
        live.publish(&st, 0);
        assert_eq!(
            live.snapshot().line(),
            "rx 1200 tx 1150 dup 3 drop 0 held 0"
        );
    }
}
