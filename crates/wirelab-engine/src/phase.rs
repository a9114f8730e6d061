//! Calibrating the start phase of a schedule (`wirelab_core::phase`): spin
//! for a while on the sending CPU, map where it loses the CPU, and move the
//! schedule's origin to the phase whose deadlines meet the fewest stalls.

use std::time::Duration;
use wirelab_core::phase::{choose_shift, DeadlinePhases, Guard, Stall, StallMap, FOLD_PERIOD_NS};
use wirelab_io::Clock;

/// A gap between two clock reads longer than this is a stall (the loop
/// reads the clock every few tens of ns).
const STALL_THRESHOLD_NS: u64 = 2_000;
/// Stalls kept from one calibration (a busy machine shows a few thousand a second).
const MAX_STALLS: usize = 200_000;
/// Least time between the choice and the origin: the wait before the first
/// departure (the sender sleeps, then spins into it).
const SETTLE_NS: u64 = 5_000_000;

/// How to calibrate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseConfig {
    /// How long to spin and watch for stalls.
    pub calibrate: Duration,
}

/// What the calibration saw and chose, for the summary.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhaseReport {
    pub calibration_ns: u64,
    /// Stalls longer than `stall_threshold_ns` during the calibration.
    pub stalls: usize,
    pub stall_threshold_ns: u64,
    /// Share of the calibration the thread was stalled.
    pub stalled_fraction: f64,
    /// Share of the 20 ms fold where stalls recur in most periods.
    pub periodic_fraction: f64,
    /// Delay added to the planned origin.
    pub shift_ns: u64,
    /// Width of the run of equally good shifts the choice sits in.
    pub margin_ns: u64,
    /// Expected deadlines hit by a stall per second, without and with the shift.
    pub hits_per_s_unshifted: f64,
    pub hits_per_s: f64,
}

/// One line for human summaries.
impl std::fmt::Display for PhaseReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use wirelab_core::units::format_ns;
        write!(
            f,
            "start phase: {} stall(s) > {} in {} ({:.2}% of the time); start moved {}: deadlines meeting a stall {:.0}/s -> {:.0}/s",
            self.stalls,
            format_ns(self.stall_threshold_ns as f64),
            format_ns(self.calibration_ns as f64),
            self.stalled_fraction * 100.0,
            format_ns(self.shift_ns as f64),
            self.hits_per_s_unshifted,
            self.hits_per_s,
        )
    }
}

/// Spins for `cfg.calibrate` on this thread, then returns the schedule's
/// origin (absolute CLOCK_MONOTONIC ns): the first time no earlier than
/// `earliest_ns` (nor than a few ms from now) at the phase where `deadlines`
/// (offsets from the origin) meet the fewest stalls, the shift searched
/// within `search_ns`. Phases are taken mod [`FOLD_PERIOD_NS`], so whole
/// folds may be added to reach that time without changing the choice.
pub fn calibrate_origin<C: Clock>(
    clock: &mut C,
    cfg: PhaseConfig,
    earliest_ns: u64,
    deadlines: &DeadlinePhases,
    search_ns: u64,
) -> (u64, PhaseReport) {
    let from = clock.now_ns();
    let to = from + cfg.calibrate.as_nanos() as u64;
    let mut raw = Vec::with_capacity(4096);
    let seen = clock.record_stalls(to, STALL_THRESHOLD_NS, MAX_STALLS, &mut raw);
    let stalls: Vec<Stall> = raw
        .iter()
        .map(|&(start_ns, end_ns)| Stall { start_ns, end_ns })
        .collect();
    // Phases count from the end of the calibration.
    let map = StallMap::new(&stalls, from, to, to, Guard::DEFAULT);
    let choice = choose_shift(&map, deadlines, search_ns);
    let earliest = earliest_ns.max(clock.now_ns() + SETTLE_NS);
    let base = to + choice.shift_ns;
    let origin = base + earliest.saturating_sub(base).div_ceil(FOLD_PERIOD_NS) * FOLD_PERIOD_NS;
    let report = PhaseReport {
        calibration_ns: to - from,
        stalls: seen,
        stall_threshold_ns: STALL_THRESHOLD_NS,
        stalled_fraction: map.stalled_fraction(),
        periodic_fraction: map.periodic_fraction(),
        shift_ns: choice.shift_ns,
        margin_ns: choice.margin_ns,
        hits_per_s_unshifted: choice.hits_per_s_unshifted,
        hits_per_s: choice.hits_per_s,
    };
    (origin, report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_io::sim::{PeriodicStall, SimClock};

    const TICK: PeriodicStall = PeriodicStall {
        period_ns: 4_000_000,
        phase_ns: 1_000_000,
        len_ns: 30_000,
    };

    #[test]
    fn given_stalls_at_4ms_ticks_the_chosen_phase_avoids_them() {
        // A 1 kpps schedule on a CPU that loses 30 µs at every 4 ms tick:
        // started at the tick's phase, a quarter of the deadlines meet it.
        let mut clock = SimClock::new(0).periodic_stall(TICK);
        let cfg = PhaseConfig {
            calibrate: Duration::from_millis(200),
        };
        let d = DeadlinePhases::constant(1_000_000.0);
        let (origin, rep) = calibrate_origin(&mut clock, cfg, 0, &d, 1_000_000);
        assert_eq!(rep.stalls, 50);
        assert!(rep.hits_per_s_unshifted > 0.0 || rep.hits_per_s == 0.0);
        assert_eq!(rep.hits_per_s, 0.0, "{rep:?}");
        // Every deadline of the chosen schedule keeps clear of the ticks.
        for k in 0..1_000u64 {
            let t = origin + k * 1_000_000;
            let into = (t + TICK.period_ns - TICK.phase_ns) % TICK.period_ns;
            assert!(
                (TICK.len_ns..TICK.period_ns - 2_000).contains(&into),
                "deadline {k} is {into} ns into a tick period"
            );
        }
        // After the calibration and the settle time, within one fold.
        assert!(origin >= 200_000_000 + SETTLE_NS);
        assert!(origin < clock.peek_ns() + SETTLE_NS + FOLD_PERIOD_NS);
    }

    #[test]
    fn a_later_planned_start_is_kept_to_within_one_fold() {
        let mut clock = SimClock::new(0).periodic_stall(TICK);
        let cfg = PhaseConfig {
            calibrate: Duration::from_millis(1),
        };
        let d = DeadlinePhases::constant(1_000_000.0);
        let late = 500_000_000;
        let (origin, _) = calibrate_origin(&mut clock, cfg, late, &d, 1_000_000);
        assert!((late..late + FOLD_PERIOD_NS).contains(&origin));
    }
}
