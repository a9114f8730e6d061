//! Slotting: packets leave only at slot edges, at most `packets` and
//! `bytes` per edge.
//!
//! Slot edges start at the link's first arrival (`E_0`); slot `k` lasts
//! `L_k`, uniform in `[min, max]` and drawn from the slot stream keyed by
//! `k`, so the edges are a fixed function of the seed. A packet ready at
//! `t` leaves at the first edge at or after `t` whose slot still has room;
//! the room is allotted at arrival, in arrival order, so every deadline is
//! final when the packet arrives (netem allots at dequeue, which depends
//! on when the qdisc happens to be polled). A frame larger than `bytes`
//! gets an empty slot of its own rather than never leaving.
//!
//! Memory: edges are found from checkpoints every `block` slots between
//! the current time and the furthest deadline (at most the horizon), with
//! `block` chosen so there are at most 65536 checkpoints; slot use is kept
//! only for slots that hold packets.

use std::collections::{BTreeMap, VecDeque};

use super::rng::{Domain, Stream};
use super::spec::SlotSpec;

#[derive(Debug, Clone, Copy)]
struct Use {
    edge: u64,
    packets: u32,
    bytes: u64,
}

/// Slots `start..end` are contiguous and none takes a frame of
/// `threshold` bytes or more; `end_edge` is the edge of slot `end`.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
    end_edge: u64,
    threshold: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Slots {
    min: u64,
    span: u64,
    packets: u32,
    bytes: u64,
    key: u64,
    block: u64,
    origin: Option<u64>,
    first_block: u64,
    checkpoints: VecDeque<u64>,
    used: BTreeMap<u64, Use>,
    cursor: Option<(u64, u64)>,
    run: Option<Run>,
}

const MAX_CHECKPOINTS: u64 = 65_536;

impl Slots {
    /// `horizon_ns`: how far ahead of an arrival a deadline may be.
    pub(crate) fn new(spec: &SlotSpec, key: u64, horizon_ns: u64) -> Slots {
        let min = spec.min_ns.max(1);
        let slots_in_horizon = horizon_ns / min + 1;
        Slots {
            min,
            span: spec.max_ns.max(min) - min + 1,
            packets: spec.packets.unwrap_or(u32::MAX),
            bytes: spec.bytes.unwrap_or(u64::MAX),
            key,
            block: slots_in_horizon.div_ceil(MAX_CHECKPOINTS).max(64),
            origin: None,
            first_block: 0,
            checkpoints: VecDeque::new(),
            used: BTreeMap::new(),
            cursor: None,
            run: None,
        }
    }

    /// Length of slot `k`.
    fn len(&self, k: u64) -> u64 {
        if self.span == 1 {
            self.min
        } else {
            self.min + Stream::new(self.key, Domain::Slot, k).below(self.span)
        }
    }

    /// Called with every arrival time (non-decreasing): anchors the first
    /// edge and forgets edges before `now`, which no later packet can use.
    pub(crate) fn advance(&mut self, now: u64) {
        if self.origin.is_none() {
            self.origin = Some(now);
            self.checkpoints.push_back(now);
        }
        while self.checkpoints.len() >= 2 && self.checkpoints[1] <= now {
            self.checkpoints.pop_front();
            self.first_block += 1;
        }
        while let Some(e) = self.used.first_entry() {
            if e.get().edge >= now {
                break;
            }
            e.remove();
        }
        if self.run.is_some_and(|r| r.end_edge < now) {
            self.run = None;
        }
    }

    /// `(k, E_k)` of the first edge at or after `x` (`x` at least the last
    /// `advance` time).
    fn first_edge_from(&mut self, x: u64) -> (u64, u64) {
        while let Some(&last) = self.checkpoints.back() {
            if last > x || last == u64::MAX {
                break;
            }
            let b = self.first_block + self.checkpoints.len() as u64 - 1;
            let end = (b * self.block..(b + 1) * self.block)
                .fold(last, |e, k| e.saturating_add(self.len(k)));
            self.checkpoints.push_back(end);
        }
        let i = self
            .checkpoints
            .partition_point(|&e| e <= x)
            .saturating_sub(1);
        let (mut k, mut e) = (
            (self.first_block + i as u64) * self.block,
            self.checkpoints[i],
        );
        if let Some((ck, ce)) = self.cursor {
            if ce <= x && ck > k {
                (k, e) = (ck, ce);
            }
        }
        while e < x {
            e = e.saturating_add(self.len(k));
            k += 1;
        }
        self.cursor = Some((k, e));
        (k, e)
    }

    /// Takes room for a frame of `len` bytes ready at `ready` and returns
    /// its release edge, or `None` if no slot up to `latest` has room.
    pub(crate) fn assign(&mut self, ready: u64, len: u32, latest: u64) -> Option<u64> {
        let len = u64::from(len);
        let (mut k, mut e) = self.first_edge_from(ready);
        loop {
            // Edges saturate at u64::MAX; nothing is found there.
            if e > latest || e == u64::MAX {
                return None;
            }
            if let Some(r) = self.run {
                if r.start <= k && k < r.end && len >= r.threshold {
                    (k, e) = (r.end, r.end_edge);
                    continue;
                }
            }
            let u = self.used.get(&k).copied().unwrap_or(Use {
                edge: e,
                packets: 0,
                bytes: 0,
            });
            let fits = u.packets < self.packets
                && (u.packets == 0 || u.bytes.saturating_add(len) <= self.bytes);
            if fits {
                let u = Use {
                    edge: e,
                    packets: u.packets + 1,
                    bytes: u.bytes.saturating_add(len),
                };
                self.used.insert(k, u);
                let threshold = self.threshold(&u);
                if threshold <= len {
                    self.extend_run(k, e, threshold);
                }
                return Some(e);
            }
            let threshold = self.threshold(&u);
            self.extend_run(k, e, threshold);
            e = e.saturating_add(self.len(k));
            k += 1;
        }
    }

    /// The smallest frame a slot with use `u` can no longer take.
    fn threshold(&self, u: &Use) -> u64 {
        if u.packets >= self.packets {
            0
        } else {
            self.bytes.saturating_sub(u.bytes).saturating_add(1)
        }
    }

    fn extend_run(&mut self, k: u64, edge: u64, threshold: u64) {
        let end_edge = edge.saturating_add(self.len(k));
        match &mut self.run {
            Some(r) if r.end == k => {
                r.end = k + 1;
                r.end_edge = end_edge;
                r.threshold = r.threshold.max(threshold);
            }
            _ => {
                self.run = Some(Run {
                    start: k,
                    end: k + 1,
                    end_edge,
                    threshold,
                })
            }
        }
    }

    /// Every edge from the first one up to `until` (tests).
    #[cfg(test)]
    pub(crate) fn edges_until(&self, until: u64) -> Vec<u64> {
        let mut v = Vec::new();
        let (mut k, mut e) = (0, self.origin.unwrap_or(0));
        while e <= until {
            v.push(e);
            e += self.len(k);
            k += 1;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(min: u64, max: u64, packets: Option<u32>, bytes: Option<u64>) -> Slots {
        let spec = SlotSpec {
            min_ns: min,
            max_ns: max,
            packets,
            bytes,
        };
        Slots::new(&spec, 42, 600_000_000_000)
    }

    #[test]
    fn fixed_slots_are_a_grid_from_the_first_arrival() {
        let mut s = slots(1000, 1000, Some(2), None);
        s.advance(500);
        assert_eq!(s.assign(500, 100, u64::MAX), Some(500));
        assert_eq!(s.assign(501, 100, u64::MAX), Some(1500));
        assert_eq!(s.assign(501, 100, u64::MAX), Some(1500));
        // Slot 1500 is full: the next edge.
        assert_eq!(s.assign(700, 100, u64::MAX), Some(2500));
        // A late arrival may still use room left in an earlier slot.
        assert_eq!(s.assign(2500, 100, u64::MAX), Some(2500));
        assert_eq!(s.assign(2500, 100, u64::MAX), Some(3500));
        assert_eq!(s.assign(2500, 100, 3000), None);
    }

    #[test]
    fn bytes_per_slot_and_oversize_frames() {
        let mut s = slots(1000, 1000, None, Some(1000));
        s.advance(0);
        assert_eq!(s.assign(0, 600, u64::MAX), Some(0));
        assert_eq!(s.assign(0, 600, u64::MAX), Some(1000));
        assert_eq!(s.assign(0, 400, u64::MAX), Some(0));
        // Larger than a slot's budget: alone in an empty slot.
        assert_eq!(s.assign(0, 5000, u64::MAX), Some(2000));
        assert_eq!(s.assign(0, 100, u64::MAX), Some(1000));
    }

    #[test]
    fn random_slots_stay_within_bounds_and_edges_are_found_far_ahead() {
        let mut s = slots(800_000, 10_000_000, Some(1), None);
        s.advance(0);
        let edges = s.edges_until(2_000_000_000);
        for w in edges.windows(2) {
            assert!((800_000..=10_000_000).contains(&(w[1] - w[0])), "{w:?}");
        }
        // One packet per slot: consecutive assignments take consecutive edges.
        let got: Vec<u64> = (0..100)
            .map(|_| s.assign(0, 100, u64::MAX).unwrap())
            .collect();
        assert_eq!(got, edges[..100]);
        // Far ahead (past many checkpoint blocks) and back again.
        let far = edges[edges.len() - 1];
        assert_eq!(s.assign(far, 100, u64::MAX), Some(far));
        assert_eq!(s.assign(edges[150] - 1, 100, u64::MAX), Some(edges[150]));
        s.advance(edges[200]);
        assert_eq!(s.assign(edges[200], 100, u64::MAX), Some(edges[200]));
        assert_eq!(s.assign(edges[200], 100, u64::MAX), Some(edges[201]));
    }
}
