//! Deadlines of generated intervals.
//!
//! Packet `k` is due at offset `Σ interval[0..k]` from the schedule's
//! origin, kept as an exact integer plus a carried fraction of a ns, so
//! neither late wake-ups nor fractional intervals (1e9/3000 ns) accumulate
//! drift. [`Intervals`] holds the next few deadlines so a sender that is
//! behind can batch them; when to actually send is the pacer's decision
//! ([`crate::pace`]).

use std::collections::VecDeque;

pub use crate::pace::{SpinMargin, WaitStrategy};

/// Limits of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Stop scheduling packets whose deadline is at or after this offset from the start.
    pub duration_ns: Option<u64>,
}

/// Offsets of the packets of one flow, from intervals the caller draws
/// (a value generator) via [`Intervals::push_interval`].
#[derive(Debug, Clone)]
pub struct Intervals {
    limits: Limits,
    ahead: usize,
    /// Offsets of the scheduled packets not yet taken, in order.
    pending: VecDeque<u64>,
    /// Offset of the next packet to be scheduled, whole ns, plus the
    /// fraction of a ns carried over (a plain f64 sum drifts by tens of ns
    /// over millions of packets).
    next_offset: u64,
    next_frac: f64,
    scheduled: u64,
    taken: u64,
    exhausted: bool,
    /// The clock passed the duration: schedule nothing more. This ends
    /// unpaced runs (interval 0), whose offsets never reach the duration.
    expired: bool,
}

impl Intervals {
    /// Keeps up to `ahead` packets scheduled (the most a batch can take).
    pub fn new(limits: Limits, ahead: usize) -> Intervals {
        let ahead = ahead.max(1);
        Intervals {
            limits,
            ahead,
            pending: VecDeque::with_capacity(ahead + 1),
            next_offset: 0,
            next_frac: 0.0,
            scheduled: 0,
            taken: 0,
            exhausted: false,
            expired: false,
        }
    }

    /// Packets taken so far.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Whether another interval is wanted: fewer than `ahead` packets are
    /// scheduled and the limits allow more.
    pub fn wants_interval(&self) -> bool {
        !self.exhausted && self.pending.len() < self.ahead && self.within_limits()
    }

    fn within_limits(&self) -> bool {
        !self.expired
            && self.limits.count.is_none_or(|c| self.scheduled < c)
            && self.limits.duration_ns.is_none_or(|d| self.next_offset < d)
    }

    /// Schedules the next packet at the current offset, then moves the
    /// offset on by `interval_ns` (the gap to the packet after it).
    pub fn push_interval(&mut self, interval_ns: f64) {
        if !self.within_limits() {
            return;
        }
        let at = self.next_offset + (self.next_frac >= 0.5) as u64;
        self.pending.push_back(at);
        self.scheduled += 1;
        let iv = if interval_ns.is_finite() {
            interval_ns.max(0.0)
        } else {
            0.0
        };
        let whole = iv.trunc();
        self.next_frac += iv - whole;
        let carry = self.next_frac.trunc();
        self.next_frac -= carry;
        self.next_offset = self
            .next_offset
            .saturating_add(whole as u64)
            .saturating_add(carry as u64);
    }

    /// The value source has no more values: finish after what is scheduled.
    pub fn exhaust(&mut self) {
        self.exhausted = true;
    }

    /// The clock reads `now_off` from the origin: past the duration,
    /// nothing more is scheduled.
    pub fn clock(&mut self, now_off: u64) {
        if self.limits.duration_ns.is_some_and(|d| now_off >= d) {
            self.expired = true;
        }
    }

    /// Whether no further packet will be scheduled and none is pending.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && (self.exhausted || !self.within_limits())
    }

    /// Offset of the next pending packet.
    pub fn next(&self) -> Option<u64> {
        self.pending.front().copied()
    }

    /// Offsets of the pending packets, in order.
    pub fn pending(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending.iter().copied()
    }

    /// Removes the next `count` packets and returns their offsets through
    /// `out` (cleared first).
    pub fn take(&mut self, count: usize, out: &mut Vec<u64>) {
        out.clear();
        let n = count.min(self.pending.len());
        out.extend(self.pending.drain(..n));
        self.taken += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_intervals_do_not_drift() {
        // 3 kpps: 333333.33 ns. Rounding each interval would lose 1 ns per
        // packet (3 ms per million); the schedule must not.
        let mut s = Intervals::new(Limits::default(), 1);
        let mut out = vec![];
        let mut last = 0;
        for _ in 0..=3_000_000u64 {
            s.push_interval(1e9 / 3000.0);
            s.take(1, &mut out);
            last = out[0];
        }
        assert_eq!(last, 1_000_000_000_000);
    }

    #[test]
    fn duration_limit_and_exhaustion() {
        let lim = Limits {
            count: None,
            duration_ns: Some(10_000),
        };
        let mut s = Intervals::new(lim, 8);
        let mut n = 0;
        let mut out = vec![];
        while !s.is_done() {
            while s.wants_interval() {
                s.push_interval(1_000.0);
            }
            s.take(3, &mut out);
            n += out.len();
        }
        assert_eq!(n, 10); // offsets 0..9000
        let mut s = Intervals::new(Limits::default(), 8);
        s.push_interval(5.0);
        s.exhaust();
        assert!(!s.wants_interval());
        s.take(1, &mut out);
        assert_eq!(out, [0]);
        assert!(s.is_done());
    }

    #[test]
    fn count_limit_and_lookahead() {
        let lim = Limits {
            count: Some(5),
            duration_ns: None,
        };
        let mut s = Intervals::new(lim, 3);
        while s.wants_interval() {
            s.push_interval(10.0);
        }
        assert_eq!(s.pending().collect::<Vec<_>>(), [0, 10, 20]);
        let mut out = vec![];
        s.take(3, &mut out);
        while s.wants_interval() {
            s.push_interval(10.0);
        }
        assert_eq!(s.pending().collect::<Vec<_>>(), [30, 40]);
        s.take(9, &mut out);
        assert_eq!(out, [30, 40]);
        assert!(s.is_done());
        assert_eq!(s.taken(), 5);
    }

    #[test]
    fn an_unpaced_run_ends_by_the_clock() {
        let lim = Limits {
            count: None,
            duration_ns: Some(1_000),
        };
        let mut s = Intervals::new(lim, 64);
        let mut out = vec![];
        let (mut now, mut sent) = (0, 0);
        while !s.is_done() {
            while s.wants_interval() {
                s.push_interval(0.0);
            }
            s.clock(now);
            s.take(64, &mut out);
            sent += out.len();
            now += 100;
        }
        // 10 batches before the clock passed 1 µs, then the pending batch drains.
        assert_eq!(sent, 11 * 64);
    }
}
