//! The start phase of a schedule, chosen to miss the machine's periodic
//! stalls.
//!
//! A CPU loses time at predictable instants: the kernel's periodic tick
//! (every 1/HZ on CLOCK_MONOTONIC, on every CPU at once) and, on a VM, the
//! host's own timers. A packet whose deadline falls into such a stall leaves
//! late by up to the stall's length, and with a periodic schedule the same
//! deadlines meet the same stalls again and again: at 1 kpps on a HZ=250
//! kernel, either every fourth packet is hit or none is, decided by the
//! sub-millisecond phase the run happened to start at.
//!
//! [`StallMap`] folds the stalls seen while spinning for a short calibration
//! onto one period that is a multiple of every usual tick period
//! ([`FOLD_PERIOD_NS`], 20 ms: HZ 100, 250, 300 and 1000, and 2 ms host
//! timers), giving every phase the fraction of periods in which a deadline
//! there would have been hit. [`choose_shift`] folds the schedule's own
//! deadlines onto the same circle and picks the delay of the schedule's
//! origin whose deadlines meet the fewest stalls, in the middle of the widest
//! run of equally good delays so that small jitter in the stalls' timing
//! does not push them back in.
//!
//! Everything here is arithmetic on the times passed in.

/// The circle stalls and deadlines are folded onto.
pub const FOLD_PERIOD_NS: u64 = 20_000_000;
/// Resolution of the fold.
pub const BIN_NS: u64 = 1_000;
const BINS: usize = (FOLD_PERIOD_NS / BIN_NS) as usize;

/// A stretch of time the calibrating thread did not run, absolute ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Stall {
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// How close to a stall a deadline must be to suffer from it: a stall that
/// begins less than `after_ns` after the deadline still delays the packet
/// (the send call is not done yet), and one that ends less than
/// `before_ns` before it leaves the thread too little time to be back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    pub before_ns: u64,
    pub after_ns: u64,
}

impl Guard {
    /// A send call on loopback or veth takes 2-5 µs from the deadline to the
    /// frame leaving.
    pub const DEFAULT: Guard = Guard {
        before_ns: 2_000,
        after_ns: 5_000,
    };
}

/// Stalls folded onto [`FOLD_PERIOD_NS`]: per phase bin, the fraction of
/// observed periods in which a deadline in that bin would have been hit.
#[derive(Debug, Clone)]
pub struct StallMap {
    hit: Vec<f32>,
    stalls: usize,
    stalled_ns: u64,
    window_ns: u64,
}

impl StallMap {
    /// Folds `stalls` seen in the window `[from_ns, to_ns)`. The phase of a
    /// time `t` is `(t - origin_ns) mod FOLD_PERIOD_NS`: deadline offsets
    /// then count from `origin_ns` or from any whole number of folds after
    /// it.
    pub fn new(stalls: &[Stall], from_ns: u64, to_ns: u64, origin_ns: u64, guard: Guard) -> Self {
        let window_ns = to_ns.saturating_sub(from_ns);
        let periods = window_ns as f64 / FOLD_PERIOD_NS as f64;
        let mut count = vec![0u32; BINS];
        let mut stalled_ns = 0;
        for s in stalls {
            // Only the part inside the window: the last stall may run past
            // its end (the thread was off the CPU when it closed).
            stalled_ns += s.end_ns.min(to_ns).saturating_sub(s.start_ns.max(from_ns));
            let a = s.start_ns.saturating_sub(guard.after_ns);
            let b = s.end_ns.saturating_add(guard.before_ns);
            // Bins covered by [a, b], marked once per stall even when it is
            // longer than the whole period.
            let first = phase_bin(a, origin_ns);
            let n = (b.saturating_sub(a) / BIN_NS + 1).min(BINS as u64) as usize;
            for k in 0..n {
                count[(first + k) % BINS] += 1;
            }
        }
        // A bin is hit at most once per period it was watched over.
        let denom = periods.max(1.0);
        let hit = count
            .into_iter()
            .map(|c| ((c as f64 / denom).min(1.0)) as f32)
            .collect();
        StallMap {
            hit,
            stalls: stalls.len(),
            stalled_ns,
            window_ns,
        }
    }

    /// Fraction of periods in which a deadline at `offset_ns` from the
    /// origin (mod the fold) was hit.
    pub fn hit_probability(&self, offset_ns: u64) -> f64 {
        f64::from(self.hit[((offset_ns % FOLD_PERIOD_NS) / BIN_NS) as usize])
    }

    pub fn stalls(&self) -> usize {
        self.stalls
    }

    /// Share of the calibration window the thread was stalled.
    pub fn stalled_fraction(&self) -> f64 {
        if self.window_ns == 0 {
            0.0
        } else {
            self.stalled_ns as f64 / self.window_ns as f64
        }
    }

    /// Share of the fold where a deadline is hit in more than half of the
    /// periods: the periodic part of the stalls.
    pub fn periodic_fraction(&self) -> f64 {
        self.hit.iter().filter(|&&h| h > 0.5).count() as f64 / BINS as f64
    }
}

fn phase_bin(t: u64, origin: u64) -> usize {
    let off = (t as i128 - origin as i128).rem_euclid(FOLD_PERIOD_NS as i128) as u64;
    (off / BIN_NS) as usize
}

/// Where the schedule's deadlines fall on the fold: a histogram of deadline
/// offsets (ns from the origin) mod [`FOLD_PERIOD_NS`], with the number of
/// fold periods they span, so costs come out per period.
#[derive(Debug, Clone)]
pub struct DeadlinePhases {
    count: Vec<u32>,
    periods: f64,
}

impl DeadlinePhases {
    /// Folds `offsets` (ascending, from the schedule's origin).
    pub fn new(offsets: impl IntoIterator<Item = u64>) -> Self {
        let mut count = vec![0u32; BINS];
        let mut last = 0;
        for o in offsets {
            count[((o % FOLD_PERIOD_NS) / BIN_NS) as usize] += 1;
            last = last.max(o);
        }
        DeadlinePhases {
            count,
            periods: (last as f64 / FOLD_PERIOD_NS as f64).max(1.0),
        }
    }

    /// The deadlines of a constant interval over one fold period (what
    /// repeats for the rest of the run when the interval divides it).
    pub fn constant(interval_ns: f64) -> Self {
        if !(interval_ns.is_finite() && interval_ns >= 1.0) {
            return DeadlinePhases::new(std::iter::empty());
        }
        let n = (FOLD_PERIOD_NS as f64 / interval_ns).ceil().max(1.0) as u64;
        DeadlinePhases::new((0..n).map(|k| (k as f64 * interval_ns).round() as u64))
    }
}

/// The chosen delay of a schedule's origin and what it is expected to gain.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PhaseChoice {
    /// Delay added to the planned origin, `< search_ns`.
    pub shift_ns: u64,
    /// Expected deadlines hit per second, unshifted and shifted. The shift
    /// sits in the middle of the widest run of near-best shifts, so
    /// `hits_per_s` may exceed the best (and the unshifted) estimate by the
    /// slack that counts as equal: 2%, or 0.5 hits/s ([`within_slack`]).
    pub hits_per_s_unshifted: f64,
    pub hits_per_s: f64,
    /// Width of the run of equally good shifts the choice sits in the middle of.
    pub margin_ns: u64,
}

/// Whether hit rate `a` counts as no worse than `b` for [`choose_shift`]:
/// within 2% of it, or 0.5 hits/s (one hit per 100 fold periods).
pub fn within_slack(a: f64, b: f64) -> bool {
    a <= b + (b * 0.02).max(0.01 * 1e9 / FOLD_PERIOD_NS as f64)
}

/// Picks a shift in `[0, search_ns)` (bin resolution) minimizing the
/// expected number of deadlines hit by stalls; ties go to the middle of the
/// widest run of best shifts. With no stalls, or deadlines everywhere on
/// the circle, the shift is 0 unless another is clearly better.
pub fn choose_shift(map: &StallMap, deadlines: &DeadlinePhases, search_ns: u64) -> PhaseChoice {
    let shifts = ((search_ns / BIN_NS) as usize).clamp(1, BINS);
    // The stall side as runs of equal probability, and the deadline side as
    // a prefix sum over the circle laid out twice: then the deadlines a run
    // covers after a shift are one subtraction, and the whole search is
    // shifts × runs (a few ms for 20,000 shifts), not shifts × bins.
    let mut runs: Vec<(usize, usize, f64)> = Vec::new();
    let mut b = 0;
    while b < BINS {
        let h = map.hit[b];
        let start = b;
        while b < BINS && map.hit[b] == h {
            b += 1;
        }
        if h > 0.0 {
            runs.push((start, b - start, f64::from(h)));
        }
    }
    let mut prefix = vec![0u64; 2 * BINS + 1];
    for i in 0..2 * BINS {
        prefix[i + 1] = prefix[i] + u64::from(deadlines.count[i % BINS]);
    }
    // cost[s]: stall probability summed over the deadlines, moved by s bins
    // (a run [a, a+len) then covers the deadlines that sat at [a-s, a+len-s)).
    let cost: Vec<f64> = (0..shifts)
        .map(|s| {
            runs.iter()
                .map(|&(a, len, h)| {
                    let x = (a + BINS - s) % BINS;
                    h * (prefix[x + len] - prefix[x]) as f64
                })
                .sum()
        })
        .collect();
    let per_s = |c: f64| c / deadlines.periods * (1e9 / FOLD_PERIOD_NS as f64);
    let best = cost.iter().copied().fold(f64::INFINITY, f64::min);
    let unshifted = cost[0];
    // Estimates from a short calibration are not finer than the slack.
    let good = |c: f64| within_slack(per_s(c), per_s(best));
    if cost.iter().all(|&c| good(c)) {
        return PhaseChoice {
            shift_ns: 0,
            hits_per_s_unshifted: per_s(unshifted),
            hits_per_s: per_s(unshifted),
            margin_ns: search_ns,
        };
    }
    // Widest run of good shifts; circular only when the search spans the fold.
    let circular = shifts == BINS;
    let (mut best_start, mut best_len) = (0usize, 0usize);
    let limit = if circular { 2 * shifts } else { shifts };
    let mut run_start = None;
    for i in 0..=limit {
        let ok = i < limit && good(cost[i % shifts]);
        match (ok, run_start) {
            (true, None) => run_start = Some(i),
            (false, Some(st)) => {
                let len = (i - st).min(shifts);
                if len > best_len {
                    best_len = len;
                    best_start = st;
                }
                run_start = None;
            }
            _ => {}
        }
    }
    let mid = (best_start + best_len / 2) % shifts;
    PhaseChoice {
        shift_ns: mid as u64 * BIN_NS,
        hits_per_s_unshifted: per_s(unshifted),
        hits_per_s: per_s(cost[mid]),
        margin_ns: best_len as u64 * BIN_NS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A HZ=250 tick: a 15 µs stall at every multiple of 4 ms, plus a
    /// 20 µs stall 1.78 ms after every second ms boundary, over 200 ms from
    /// `origin`, folded with phases counted from `origin`.
    fn vm_map(origin: u64) -> StallMap {
        let to = origin + 200_000_000;
        let mut stalls = Vec::new();
        for t in (origin..to).step_by(4_000_000) {
            for (off, len) in [(0, 15_000), (1_780_000, 20_000), (3_780_000, 20_000)] {
                stalls.push(Stall {
                    start_ns: t + off,
                    end_ns: t + off + len,
                });
            }
        }
        StallMap::new(&stalls, origin, to, origin, Guard::DEFAULT)
    }

    #[test]
    fn a_1kpps_schedule_on_the_tick_is_moved_off_it() {
        let map = vm_map(1_000_000_000);
        assert_eq!(map.stalls(), 150);
        let d = DeadlinePhases::constant(1_000_000.0);
        let c = choose_shift(&map, &d, 1_000_000);
        // Unshifted, the deadline at every 4 ms meets the tick: 250 hits/s.
        assert!((c.hits_per_s_unshifted - 250.0).abs() < 1.0, "{c:?}");
        assert_eq!(c.hits_per_s, 0.0);
        // The free stretch mod 1 ms is (17 µs, 775 µs): the middle of it.
        assert!((380_000..=410_000).contains(&c.shift_ns), "{c:?}");
        assert!(c.margin_ns > 700_000);
        for k in 0..1000u64 {
            assert_eq!(map.hit_probability(c.shift_ns + k * 1_000_000), 0.0);
        }
    }

    #[test]
    fn a_10kpps_schedule_finds_the_gap_between_stalls() {
        let map = vm_map(5_000_000_000);
        let d = DeadlinePhases::constant(100_000.0);
        let c = choose_shift(&map, &d, 100_000);
        assert!(c.hits_per_s_unshifted > 100.0, "{c:?}");
        assert_eq!(c.hits_per_s, 0.0, "{c:?}");
        // Mod 100 µs the stalls with guards cover [95, 117] (the tick) and
        // [75, 102]: free is (17, 75), middle ≈ 46 µs.
        assert!((40_000..=52_000).contains(&c.shift_ns), "{c:?}");
    }

    #[test]
    fn at_100kpps_no_shift_avoids_stalls_longer_than_the_gap() {
        let map = vm_map(0);
        let d = DeadlinePhases::constant(10_000.0);
        let c = choose_shift(&map, &d, 10_000);
        assert!(c.hits_per_s >= 750.0 * 0.99, "{c:?}");
        assert!(within_slack(c.hits_per_s, c.hits_per_s_unshifted), "{c:?}");
    }

    #[test]
    fn no_stalls_no_shift() {
        let map = StallMap::new(&[], 0, 200_000_000, 0, Guard::DEFAULT);
        let c = choose_shift(&map, &DeadlinePhases::constant(1_000_000.0), FOLD_PERIOD_NS);
        assert_eq!(c.shift_ns, 0);
        assert_eq!(c.hits_per_s, 0.0);
    }

    #[test]
    fn phases_count_from_the_given_origin() {
        // One stall 300 µs after the origin, seen in one period.
        let s = [Stall {
            start_ns: 10_300_000,
            end_ns: 10_310_000,
        }];
        let map = StallMap::new(&s, 10_000_000, 30_000_000, 10_000_000, Guard::DEFAULT);
        assert_eq!(map.hit_probability(300_000), 1.0);
        assert_eq!(map.hit_probability(296_000), 1.0, "guard after");
        assert_eq!(map.hit_probability(294_000), 0.0);
        assert_eq!(map.hit_probability(311_000), 1.0, "guard before");
        assert_eq!(map.hit_probability(313_000), 0.0);
        assert!((map.stalled_fraction() - 0.0005).abs() < 1e-9);
        // A stall running past the window's end counts only up to it.
        let long = [Stall {
            start_ns: 150_000_000,
            end_ns: 1_400_000_000,
        }];
        let m = StallMap::new(&long, 0, 200_000_000, 200_000_000, Guard::DEFAULT);
        assert!(
            (m.stalled_fraction() - 0.25).abs() < 1e-9,
            "{}",
            m.stalled_fraction()
        );
    }

    #[test]
    fn a_stall_longer_than_the_fold_marks_every_bin_once() {
        let s = [Stall {
            start_ns: 0,
            end_ns: 3 * FOLD_PERIOD_NS,
        }];
        let map = StallMap::new(&s, 0, 4 * FOLD_PERIOD_NS, 0, Guard::DEFAULT);
        assert_eq!(map.hit_probability(1), 0.25);
        assert_eq!(map.hit_probability(FOLD_PERIOD_NS - 1), 0.25);
    }

    #[test]
    fn irregular_deadlines_use_their_own_offsets() {
        // Two deadlines per period, at 0 and 7 ms; a stall at 7 ms.
        let s = [Stall {
            start_ns: 7_000_000,
            end_ns: 7_010_000,
        }];
        let map = StallMap::new(&s, 0, FOLD_PERIOD_NS, 0, Guard::DEFAULT);
        let d = DeadlinePhases::new([0, 7_000_000, 20_000_000, 27_000_000]);
        let c = choose_shift(&map, &d, 1_000_000);
        assert!(c.hits_per_s_unshifted > 0.0);
        assert_eq!(c.hits_per_s, 0.0);
        assert!(map.hit_probability(7_000_000 + c.shift_ns) == 0.0);
    }
}
