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

/// The most deadlines [`Intervals::planned`] draws to count what a run
/// cut short still planned: the cost stays a bounded fraction of a
/// second of CPU whatever rate and duration were asked for.
pub const MAX_PLAN_DRAWS: u64 = 100_000_000;

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
        self.advance(interval_ns);
    }

    /// How many packets the schedule plans in all: those scheduled so far
    /// and, when the clock cut a duration-limited run short (the sender
    /// fell behind its schedule, or was stopped), the deadlines still
    /// within the limits, drawn from `rest` (the interval values not yet
    /// taken) without scheduling them. `None` when the count has no
    /// bound: no limit, an unpaced interval (0) under a duration, or more
    /// than [`MAX_PLAN_DRAWS`] deadlines left to count.
    pub fn planned(&mut self, rest: &mut dyn FnMut() -> Option<f64>) -> Option<u64> {
        let unpaced = self.scheduled > 0 && self.next_offset == 0;
        if self.limits.count.is_none() && (self.limits.duration_ns.is_none() || unpaced) {
            return None;
        }
        self.expired = false;
        let mut draws = 0u64;
        while !self.exhausted && self.within_limits() {
            if draws == MAX_PLAN_DRAWS {
                return None;
            }
            let Some(iv) = rest() else { break };
            draws += 1;
            self.scheduled += 1;
            self.advance(iv);
        }
        Some(self.scheduled)
    }

    /// Moves the next offset on by `interval_ns`, carrying the fraction.
    fn advance(&mut self, interval_ns: f64) {
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

    /// LUNA's Table 8.2 case in small: 6 µs intervals over 60 µs plan 10
    /// probes; a sender that fell behind and was cut off by the clock
    /// after 4 still planned 10, the 6 left counted from the values it
    /// never took.
    #[test]
    fn planned_counts_the_deadlines_a_cut_short_run_never_reached() {
        let lim = Limits {
            count: None,
            duration_ns: Some(60_000),
        };
        let mut s = Intervals::new(lim, 2);
        let mut out = vec![];
        while s.taken() < 4 {
            while s.wants_interval() {
                s.push_interval(6_000.0);
            }
            s.take(1, &mut out);
        }
        s.clock(60_000);
        assert!(!s.wants_interval());
        let mut draws = 0;
        let mut rest = || {
            draws += 1;
            Some(6_000.0)
        };
        assert_eq!(s.planned(&mut rest), Some(10));
        // Scheduled 5 (4 taken, 1 pending), 5 more drawn.
        assert_eq!(draws, 5);
        // A run that kept up plans what it scheduled, drawing nothing.
        let mut s = Intervals::new(lim, 1);
        while !s.is_done() {
            while s.wants_interval() {
                s.push_interval(6_000.0);
            }
            s.take(1, &mut out);
        }
        assert_eq!(s.planned(&mut || panic!("nothing left to draw")), Some(10));
        // A value source that ends: what it gave.
        let mut s = Intervals::new(lim, 1);
        s.push_interval(6_000.0);
        s.clock(60_000);
        let mut two = [6_000.0, 6_000.0].into_iter();
        assert_eq!(s.planned(&mut || two.next()), Some(3));
    }

    #[test]
    fn planned_is_none_without_a_bound() {
        let mut out = vec![];
        // No limit at all.
        let mut s = Intervals::new(Limits::default(), 1);
        s.push_interval(1_000.0);
        assert_eq!(s.planned(&mut || Some(1_000.0)), None);
        // Unpaced under a duration: offsets never reach it.
        let lim = Limits {
            count: None,
            duration_ns: Some(1_000),
        };
        let mut s = Intervals::new(lim, 1);
        s.push_interval(0.0);
        s.take(1, &mut out);
        s.push_interval(0.0);
        assert_eq!(s.planned(&mut || Some(0.0)), None);
        // A count bounds it whatever the intervals.
        let lim = Limits {
            count: Some(7),
            duration_ns: None,
        };
        let mut s = Intervals::new(lim, 1);
        s.push_interval(0.0);
        assert_eq!(s.planned(&mut || Some(0.0)), Some(7));
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
