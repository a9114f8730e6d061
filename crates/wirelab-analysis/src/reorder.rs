//! Reordering per RFC 4737.
//!
//! * §3.3 / §4.1 reordered singleton with the *next expected* algorithm:
//!   `NextExp` starts at the first expected sequence number (0); an arrival
//!   with `seq >= NextExp` is in order and sets `NextExp = seq + 1`; an
//!   arrival with `seq < NextExp` is reordered. Reordered ratio =
//!   reordered / received (§4.1.1).
//! * §4.2.1 reordering extent: for a reordered packet at arrival index `i`,
//!   `e = i - j` where `j` is the earliest arrival index of a packet with a
//!   larger sequence number.
//!
//! Feed only first arrivals (no duplicates), in arrival order. The earliest
//! packet with a larger sequence number is always an in-order packet, and
//! in-order packets have increasing sequence numbers, so a sorted history of
//! the last [`EXTENT_HISTORY`] in-order arrivals answers the extent by binary
//! search: O(log n) per reordered packet, O(1) amortised otherwise, bounded
//! memory grown only until the cap. When the history has been trimmed and a
//! packet is older than all of it, its extent is a lower bound
//! (`extent_truncated` counts those). n-reordering (§5) is not computed.

use crate::buckets::{LenBucket, LenHistogram};
use serde::Serialize;
use std::collections::VecDeque;

/// In-order arrivals remembered for extent computation.
pub const EXTENT_HISTORY: usize = 8192;

/// Streaming RFC 4737 reordering state.
#[derive(Debug, Clone, Default)]
pub struct Reorder {
    next_exp: u128,
    arrivals: u64,
    reordered: u64,
    history: VecDeque<(u64, u64)>,
    trimmed: bool,
    extent_max: u64,
    extent_hist: LenHistogram,
    extent_truncated: u64,
}

impl Reorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next first arrival; returns its extent if it is reordered.
    pub fn observe(&mut self, seq: u64) -> Option<u64> {
        let i = self.arrivals;
        self.arrivals = self.arrivals.saturating_add(1);
        if seq as u128 >= self.next_exp {
            self.next_exp = seq as u128 + 1;
            if self.history.len() >= EXTENT_HISTORY {
                self.history.pop_front();
                self.trimmed = true;
            }
            self.history.push_back((seq, i));
            return None;
        }
        self.reordered = self.reordered.saturating_add(1);
        let p = self.history.partition_point(|&(s, _)| s <= seq);
        let j = match self.history.get(p) {
            Some(&(_, j)) => j,
            // Unreachable: the last in-order seq is NextExp - 1 > seq.
            None => i,
        };
        if p == 0 && self.trimmed {
            self.extent_truncated = self.extent_truncated.saturating_add(1);
        }
        let e = i.saturating_sub(j);
        self.extent_max = self.extent_max.max(e);
        self.extent_hist.record(e);
        Some(e)
    }

    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    pub fn report(&self) -> ReorderStats {
        ReorderStats {
            reordered: self.reordered,
            ratio: if self.arrivals > 0 {
                self.reordered as f64 / self.arrivals as f64
            } else {
                0.0
            },
            extent_max: self.extent_max,
            extents: self.extent_hist.buckets(),
            extent_truncated: self.extent_truncated,
        }
    }
}

/// RFC 4737 reordering (JSON `{reordered, ratio, extent_max, extents:
/// [{from, to, count}], extent_truncated}`); extents are in packets.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReorderStats {
    pub reordered: u64,
    /// reordered / first arrivals (RFC 4737 §4.1.1 reordered ratio).
    pub ratio: f64,
    pub extent_max: u64,
    pub extents: Vec<LenBucket>,
    /// Extents that are lower bounds because the history was trimmed.
    pub extent_truncated: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u64]) -> (Vec<Option<u64>>, ReorderStats) {
        let mut r = Reorder::new();
        let e = seqs.iter().map(|&s| r.observe(s)).collect();
        (e, r.report())
    }

    #[test]
    fn one_late_packet_extent_one() {
        let (e, s) = run(&[1, 2, 3, 5, 4, 6]);
        assert_eq!(e, vec![None, None, None, None, Some(1), None]);
        assert_eq!(s.reordered, 1);
        assert!((s.ratio - 1.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn extent_two() {
        let (e, s) = run(&[1, 3, 4, 2, 5]);
        assert_eq!(e, vec![None, None, None, Some(2), None]);
        assert_eq!((s.reordered, s.extent_max), (1, 2));
    }

    #[test]
    fn rfc4737_style_block_reordering() {
        // A block of three delayed behind three later packets.
        let (e, s) = run(&[1, 2, 3, 7, 8, 9, 4, 5, 6, 10]);
        assert_eq!(&e[6..9], &[Some(3), Some(4), Some(5)]);
        assert_eq!(s.reordered, 3);
        assert!((s.ratio - 0.3).abs() < 1e-12);
        assert_eq!(s.extent_max, 5);
        // One early packet makes several later ones reordered.
        let (e, s) = run(&[1, 5, 2, 4, 3]);
        assert_eq!(e, vec![None, None, Some(1), Some(2), Some(3)]);
        assert_eq!(s.reordered, 3);
        let b: Vec<(u64, u64)> = s.extents.iter().map(|b| (b.from, b.count)).collect();
        assert_eq!(b, vec![(1, 1), (2, 1), (3, 1)]);
        // Loss alone is not reordering.
        let (_, s) = run(&[0, 1, 4, 5, 9]);
        assert_eq!(s.reordered, 0);
    }

    #[test]
    fn extreme_sequence_numbers() {
        let (e, s) = run(&[u64::MAX, 0, 1]);
        assert_eq!(e, vec![None, Some(1), Some(2)]);
        assert_eq!(s.reordered, 2);
    }

    #[test]
    fn trimmed_history_gives_lower_bound() {
        let mut r = Reorder::new();
        for s in 1..=(EXTENT_HISTORY as u64 + 10) {
            r.observe(s);
        }
        assert!(r.observe(0).is_some());
        assert_eq!(r.report().extent_truncated, 1);
    }
}
