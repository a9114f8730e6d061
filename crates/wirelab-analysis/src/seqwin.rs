//! Duplicate detection and loss accounting over a bounded sequence window.
//!
//! [`SeqWindow`] remembers which of the last [`WINDOW`] (65 536) sequence
//! numbers at or below the highest one seen have arrived, in a fixed 8 KiB
//! bitmap. Sequence numbers start at 0 (the first expected one).
//!
//! * An arrival above the highest is new; the window slides up. A jump of
//!   any size (even to `u64::MAX`) costs at most O(`WINDOW`/64) word
//!   operations and no allocation: sequence numbers that fall out of the
//!   window without ever entering it are counted arithmetically.
//! * An arrival inside the window is new or a duplicate (exact).
//! * An arrival below the window is *too old*: it is counted as received
//!   (it reduces the loss count) but cannot be checked for duplication, and
//!   loss bursts already finalised are not split by it.
//!
//! Loss bursts are maximal runs of consecutive missing sequence numbers. A
//! missing sequence number may still arrive late while it is inside the
//! window, so a run is only final once it has left the window, or at
//! [`SeqWindow::finish`], which evaluates the remaining window (and the tail
//! up to the sender's count when known) without changing the state, so a
//! live receiver can report at any time and keep going.

use crate::buckets::{LenBucket, LenHistogram};
use serde::Serialize;

/// Number of sequence numbers tracked exactly below the highest.
pub const WINDOW: u64 = 1 << 16;
const W: u128 = WINDOW as u128;
const WORDS: usize = (WINDOW / 64) as usize;
/// How many lost sequence numbers reports list (the lowest ones).
pub const MAX_LOST_SEQS: usize = 100;

/// What an arrival was, as far as the window can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOutcome {
    /// First arrival of this sequence number.
    New,
    /// This sequence number has already arrived.
    Duplicate,
    /// Below the window: counted as received, duplication unknown.
    TooOld,
}

/// Running loss-burst accounting over sequence numbers evaluated in
/// ascending order.
#[derive(Debug, Clone, Default)]
struct BurstAcc {
    run: u64,
    hist: LenHistogram,
    count: u64,
    max: u64,
    missing: u64,
    lost_seqs: Vec<u64>,
}

impl BurstAcc {
    fn missing_range(&mut self, from: u128, n: u128) {
        let n64 = u64::try_from(n).unwrap_or(u64::MAX);
        self.run = self.run.saturating_add(n64);
        self.missing = self.missing.saturating_add(n64);
        let room = MAX_LOST_SEQS.saturating_sub(self.lost_seqs.len()) as u128;
        for k in 0..n.min(room) {
            if let Ok(s) = u64::try_from(from + k) {
                self.lost_seqs.push(s);
            }
        }
    }
    fn present(&mut self) {
        if self.run > 0 {
            self.hist.record(self.run);
            self.count = self.count.saturating_add(1);
            self.max = self.max.max(self.run);
            self.run = 0;
        }
    }
}

/// Duplicate/loss window; see the module docs.
#[derive(Debug, Clone)]
pub struct SeqWindow {
    bits: Box<[u64]>,
    /// Sequence numbers `0..covered` are at or below the highest seen.
    covered: u128,
    unique: u64,
    too_old: u64,
    acc: BurstAcc,
}

impl Default for SeqWindow {
    fn default() -> Self {
        SeqWindow {
            bits: vec![0u64; WORDS].into_boxed_slice(),
            covered: 0,
            unique: 0,
            too_old: 0,
            acc: BurstAcc {
                lost_seqs: Vec::with_capacity(MAX_LOST_SEQS),
                ..BurstAcc::default()
            },
        }
    }
}

fn slot(s: u128) -> (usize, u64) {
    let i = (s % W) as usize;
    (i / 64, 1u64 << (i % 64))
}

/// Evaluates sequence numbers `from..to` (all inside the window) in order.
fn eval_range(bits: &[u64], acc: &mut BurstAcc, from: u128, to: u128) {
    let mut s = from;
    while s < to {
        let (w, m) = slot(s);
        let word = bits.get(w).copied().unwrap_or(0);
        if m == 1 && to - s >= 64 {
            if word == 0 {
                acc.missing_range(s, 64);
            } else if word == u64::MAX {
                acc.present();
            } else {
                for b in 0..64u32 {
                    if word & (1u64 << b) != 0 {
                        acc.present();
                    } else {
                        acc.missing_range(s + b as u128, 1);
                    }
                }
            }
            s += 64;
        } else {
            if word & m != 0 {
                acc.present();
            } else {
                acc.missing_range(s, 1);
            }
            s += 1;
        }
    }
}

/// Clears the slots of sequence numbers `from..to`.
fn clear_range(bits: &mut [u64], from: u128, to: u128) {
    if to.saturating_sub(from) >= W {
        bits.fill(0);
        return;
    }
    let mut s = from;
    while s < to {
        let (w, m) = slot(s);
        if let Some(word) = bits.get_mut(w) {
            if m == 1 && to - s >= 64 {
                *word = 0;
                s += 64;
                continue;
            }
            *word &= !m;
        }
        s += 1;
    }
}

impl SeqWindow {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an arrival of `seq`.
    pub fn insert(&mut self, seq: u64) -> SeqOutcome {
        let s = seq as u128;
        if s >= self.covered {
            self.advance(s + 1);
            self.set(s);
            self.unique += 1;
            SeqOutcome::New
        } else if s + W >= self.covered {
            let (w, m) = slot(s);
            let seen = self.bits.get(w).is_some_and(|x| x & m != 0);
            if seen {
                SeqOutcome::Duplicate
            } else {
                self.set(s);
                self.unique += 1;
                SeqOutcome::New
            }
        } else {
            self.too_old += 1;
            SeqOutcome::TooOld
        }
    }

    fn set(&mut self, s: u128) {
        let (w, m) = slot(s);
        if let Some(x) = self.bits.get_mut(w) {
            *x |= m;
        }
    }

    /// Slides the window so that its top is `to - 1`, finalising what leaves.
    fn advance(&mut self, to: u128) {
        let c = self.covered;
        if to <= c {
            return;
        }
        // Sequence numbers leaving the window: [c - W, to - W) clipped at 0,
        // of which only those below c were ever inside it.
        let leave_from = c.saturating_sub(W);
        let leave_to = to.saturating_sub(W);
        if leave_to > leave_from {
            let inside_to = leave_to.min(c);
            eval_range(&self.bits, &mut self.acc, leave_from, inside_to);
            if leave_to > inside_to {
                // Never inside the window and never received.
                self.acc.missing_range(inside_to, leave_to - inside_to);
            }
        }
        clear_range(&mut self.bits, c, to);
        self.covered = to;
    }

    /// Highest sequence number seen, if any.
    pub fn highest(&self) -> Option<u64> {
        self.covered.checked_sub(1).map(|h| h as u64)
    }
    /// Distinct arrivals (new, plus too old).
    pub fn present(&self) -> u64 {
        self.unique.saturating_add(self.too_old)
    }
    /// Arrivals below the window.
    pub fn too_old(&self) -> u64 {
        self.too_old
    }

    /// Loss figures as of now. `sent`, when known, is the number of
    /// sequence numbers the sender used (`0..sent`); the expected count is
    /// `max(sent, highest + 1)` — a higher sequence number than the sender
    /// claims means its count is incomplete (e.g. a cut-short file).
    pub fn finish(&self, sent: Option<u64>) -> LossStats {
        let mut acc = self.acc.clone();
        eval_range(
            &self.bits,
            &mut acc,
            self.covered.saturating_sub(W),
            self.covered,
        );
        let sent128 = sent.map_or(0, |s| s as u128);
        if sent128 > self.covered {
            acc.missing_range(self.covered, sent128 - self.covered);
        }
        acc.present();
        let present = self.present() as u128;
        let expected = self.covered.max(sent128);
        let clamp = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
        LossStats {
            expected: clamp(expected),
            lost: clamp(expected.saturating_sub(present)),
            lost_vs_highest: clamp(self.covered.saturating_sub(present)),
            bursts: BurstStats {
                count: acc.count,
                max_len: acc.max,
                lengths: acc.hist.buckets(),
            },
            lost_seqs_truncated: acc.missing > acc.lost_seqs.len() as u64,
            lost_seqs: acc.lost_seqs,
        }
    }
}

/// Loss-burst statistics (JSON `{count, max_len, lengths: [{from, to,
/// count}]}`): a burst is a maximal run of consecutive lost sequence numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BurstStats {
    pub count: u64,
    pub max_len: u64,
    pub lengths: Vec<LenBucket>,
}

/// Loss as computed from a [`SeqWindow`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LossStats {
    /// `max(sent, highest + 1)`.
    pub expected: u64,
    /// `expected` minus distinct arrivals (never negative).
    pub lost: u64,
    /// `highest + 1` minus distinct arrivals: loss that does not depend on
    /// knowing the sender's count (misses tail loss).
    pub lost_vs_highest: u64,
    pub bursts: BurstStats,
    /// The lowest lost sequence numbers, at most [`MAX_LOST_SEQS`].
    pub lost_seqs: Vec<u64>,
    pub lost_seqs_truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u64], sent: Option<u64>) -> (SeqWindow, LossStats) {
        let mut w = SeqWindow::new();
        for &s in seqs {
            w.insert(s);
        }
        let l = w.finish(sent);
        (w, l)
    }

    fn lens(l: &LossStats) -> Vec<(u64, u64)> {
        l.bursts.lengths.iter().map(|b| (b.from, b.count)).collect()
    }

    #[test]
    fn bursts_of_known_lengths() {
        // 0..20 with 2, 5 6 7, 10 11 lost and tail 18, 19 lost.
        let seqs: Vec<u64> = (0..18)
            .filter(|s| ![2, 5, 6, 7, 10, 11].contains(s))
            .collect();
        let (w, l) = run(&seqs, Some(20));
        assert_eq!(w.highest(), Some(17));
        assert_eq!(l.expected, 20);
        assert_eq!(l.lost, 8);
        assert_eq!(l.lost_vs_highest, 6);
        assert_eq!(l.bursts.count, 4);
        assert_eq!(l.bursts.max_len, 3);
        assert_eq!(lens(&l), vec![(1, 1), (2, 2), (3, 1)]);
        assert_eq!(l.lost_seqs, vec![2, 5, 6, 7, 10, 11, 18, 19]);
        assert!(!l.lost_seqs_truncated);
        // Without the sender's count the tail is invisible.
        let l = w.finish(None);
        assert_eq!((l.lost, l.bursts.count), (6, 3));
    }

    #[test]
    fn late_arrival_fills_a_gap_before_finish() {
        let (_, l) = run(&[0, 1, 3, 4, 2], None);
        assert_eq!((l.lost, l.bursts.count), (0, 0));
    }

    #[test]
    fn duplicates_and_leading_loss() {
        let mut w = SeqWindow::new();
        assert_eq!(w.insert(3), SeqOutcome::New);
        assert_eq!(w.insert(3), SeqOutcome::Duplicate);
        assert_eq!(w.insert(1), SeqOutcome::New);
        assert_eq!(w.insert(1), SeqOutcome::Duplicate);
        let l = w.finish(None);
        assert_eq!(l.lost_seqs, vec![0, 2]);
        assert_eq!(l.bursts.count, 2);
    }

    #[test]
    fn bursts_leaving_the_window_are_finalised() {
        let mut w = SeqWindow::new();
        // Lose 100..110 and 70_000..70_003, run far beyond the window.
        for s in 0..200_000u64 {
            if !(100..110).contains(&s) && !(70_000..70_003).contains(&s) {
                w.insert(s);
            }
        }
        let l = w.finish(Some(200_000));
        assert_eq!(l.lost, 13);
        assert_eq!(l.bursts.count, 2);
        assert_eq!(l.bursts.max_len, 10);
        assert_eq!(l.lost_seqs.len(), 13);
        // A packet older than the window counts as received but is not checked.
        assert_eq!(w.insert(5), SeqOutcome::TooOld);
        assert_eq!(w.too_old(), 1);
    }

    #[test]
    fn huge_jumps_are_arithmetic() {
        let mut w = SeqWindow::new();
        w.insert(0);
        w.insert(u64::MAX);
        w.insert(u64::MAX);
        w.insert(1);
        let l = w.finish(Some(u64::MAX));
        assert_eq!(w.highest(), Some(u64::MAX));
        // 2^64 expected, 3 present (0, MAX, 1 as too old).
        assert_eq!(l.expected, u64::MAX);
        assert_eq!(l.lost, u64::MAX - 2);
        assert_eq!(l.bursts.count, 1);
        assert_eq!(l.lost_seqs.len(), MAX_LOST_SEQS);
        assert_eq!(l.lost_seqs[0], 1);
        assert!(l.lost_seqs_truncated);
        // Jumps of just under and over the window, repeatedly.
        let mut w = SeqWindow::new();
        let mut s = 0u64;
        for i in 0..1000u64 {
            w.insert(s);
            s += if i % 2 == 0 { WINDOW - 1 } else { WINDOW + 1 };
        }
        let l = w.finish(None);
        assert_eq!(l.bursts.count, 999);
        assert_eq!(l.lost, 500 * (WINDOW - 2) + 499 * WINDOW);
    }

    #[test]
    fn word_boundaries() {
        // Mixed words: every third packet lost, across many words.
        let seqs: Vec<u64> = (0..100_000).filter(|s| s % 3 != 1).collect();
        let (_, l) = run(&seqs, None);
        let highest = *seqs.last().unwrap();
        let expect = (0..=highest).filter(|s| s % 3 == 1).count() as u64;
        assert_eq!(l.lost, expect);
        assert_eq!(l.bursts.count, expect);
        assert_eq!(l.bursts.max_len, 1);
    }
}
