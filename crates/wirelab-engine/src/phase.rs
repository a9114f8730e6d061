//! Calibrating the start phase of a schedule (`wirelab_core::phase`): spin
//! for a while on the sending CPU, map where it loses the CPU, and move the
//! schedule's origin to the phase whose deadlines meet the fewest stalls.

use std::time::Duration;
use wirelab_core::phase::{choose_shift, DeadlinePhases, Guard, Stall, StallMap};
use wirelab_io::clock::{mono_ns, record_stalls};

/// A gap between two clock reads longer than this is a stall (the loop
/// reads the clock every few tens of ns).
const STALL_THRESHOLD_NS: u64 = 2_000;
/// Stalls kept from one calibration (a busy machine shows a few thousand a second).
const MAX_STALLS: usize = 200_000;
/// Time left between the end of the calibration and the origin, for the
/// fold and the choice (a few ms at most) and the wait before the first departure.
const SETTLE_NS: u64 = 5_000_000;

/// How to calibrate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseConfig {
    /// How long to spin and watch for stalls.
    pub calibrate: Duration,
}

/// What the calibration saw and chose, for the summary.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
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

/// Spins for `cfg.calibrate` on this thread, then returns the schedule's
/// origin (absolute CLOCK_MONOTONIC ns): no earlier than `earliest_ns` and
/// the end of the calibration, delayed by less than `search_ns` to the
/// phase where `deadlines` (offsets from the origin) meet the fewest stalls.
pub fn calibrate_origin(
    cfg: PhaseConfig,
    earliest_ns: u64,
    deadlines: &DeadlinePhases,
    search_ns: u64,
) -> (u64, PhaseReport) {
    let from = mono_ns();
    let to = from + cfg.calibrate.as_nanos() as u64;
    let mut raw = Vec::with_capacity(4096);
    let seen = record_stalls(to, STALL_THRESHOLD_NS, MAX_STALLS, &mut raw);
    let stalls: Vec<Stall> = raw
        .iter()
        .map(|&(start_ns, end_ns)| Stall { start_ns, end_ns })
        .collect();
    let planned = earliest_ns.max(to + SETTLE_NS);
    let map = StallMap::new(&stalls, from, to, planned, Guard::DEFAULT);
    let choice = choose_shift(&map, deadlines, search_ns);
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
    (planned + choice.shift_ns, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_is_after_the_calibration_and_within_one_search_span() {
        let t0 = mono_ns();
        let cfg = PhaseConfig {
            calibrate: Duration::from_millis(30),
        };
        let d = DeadlinePhases::constant(1_000_000.0);
        let (origin, rep) = calibrate_origin(cfg, t0, &d, 1_000_000);
        let after = mono_ns();
        assert!(origin >= t0 + 30_000_000 + SETTLE_NS);
        assert!(origin < after + SETTLE_NS + 1_000_000);
        assert_eq!(rep.calibration_ns, 30_000_000);
        assert!(rep.shift_ns < 1_000_000);
        assert!(rep.hits_per_s <= rep.hits_per_s_unshifted);
        assert!((0.0..=1.0).contains(&rep.stalled_fraction));
        // A later planned start is kept.
        let late = mono_ns() + 50_000_000;
        let cfg = PhaseConfig {
            calibrate: Duration::from_millis(1),
        };
        let (origin, rep) = calibrate_origin(cfg, late, &d, 1_000_000);
        assert_eq!(origin, late + rep.shift_ns);
    }
}
