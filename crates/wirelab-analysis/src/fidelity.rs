//! Replay fidelity: how far each departure was from its ideal time, how
//! far each gap was from the original gap, drift over the whole replay,
//! runs of late packets, achieved rates.
//!
//! A metric over departures: the replay driver calls [`Fidelity::record`]
//! once per packet that left, with its ideal and actual departure time (ns
//! on one clock, any origin) and its L2 length; wire bytes count with
//! [`wirelab_wire::ethernet::wire_bytes`], the model replay's schedule uses.

use crate::percentiles::{histogram, serialize_compact};
use crate::DelayStats;
use hdrhistogram::Histogram;
use serde::Serialize;
use wirelab_wire::ethernet::wire_bytes;

/// The summary, serialised as part of `wirelab.replay/1`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FidelityReport {
    /// Packets that left.
    pub packets: u64,
    /// L2 bytes (without FCS) that left.
    pub bytes_l2: u64,
    /// Bytes on the wire (min frame, FCS, preamble, inter-frame gap).
    pub bytes_wire: u64,
    /// First to last departure.
    pub duration_ns: u64,
    /// First to last ideal departure.
    pub scheduled_duration_ns: u64,
    /// `duration_ns - scheduled_duration_ns`.
    pub duration_error_ns: i64,
    /// Duration error in parts per million of the scheduled duration.
    pub drift_ppm: f64,
    /// Departure error (actual − ideal) ≥ 0.
    #[serde(serialize_with = "serialize_compact")]
    pub departure_error: DelayStats,
    /// |actual gap − ideal gap| between consecutive packets.
    #[serde(serialize_with = "serialize_compact")]
    pub interdeparture_error: DelayStats,
    /// Mean of the signed gap error (positive: gaps stretched).
    pub interdeparture_error_mean_signed_ns: f64,
    /// Lateness above which a packet counts as late.
    pub late_threshold_ns: u64,
    /// Packets that left late.
    pub late_packets: u64,
    /// Runs of consecutive late packets.
    pub late_runs: u64,
    /// Longest run of consecutive late packets.
    pub late_run_max: u64,
    /// Packets per second achieved (first to last departure).
    pub pps: f64,
    /// Mbit/s of L2 bytes achieved.
    pub mbps_l2: f64,
    /// Mbit/s on the wire achieved.
    pub mbps_wire: f64,
}

/// Accumulates fidelity, one call per departed packet. No allocation
/// after construction.
#[derive(Clone, Debug)]
pub struct Fidelity {
    dep: Histogram<u64>,
    gap: Histogram<u64>,
    gap_signed_sum: f64,
    late_threshold_ns: u64,
    packets: u64,
    bytes_l2: u64,
    bytes_wire: u64,
    first: Option<(u64, u64)>,
    last: Option<(u64, u64)>,
    run: u64,
    late_packets: u64,
    late_runs: u64,
    late_run_max: u64,
}

impl Fidelity {
    /// New, with `late_threshold_ns` defining a late packet.
    pub fn new(late_threshold_ns: u64) -> Fidelity {
        Fidelity {
            dep: histogram(),
            gap: histogram(),
            gap_signed_sum: 0.0,
            late_threshold_ns,
            packets: 0,
            bytes_l2: 0,
            bytes_wire: 0,
            first: None,
            last: None,
            run: 0,
            late_packets: 0,
            late_runs: 0,
            late_run_max: 0,
        }
    }

    /// One packet of `len` L2 bytes, ideal time `ideal_ns`, actual `actual_ns`.
    pub fn record(&mut self, ideal_ns: u64, actual_ns: u64, len: u32) {
        let err = actual_ns.saturating_sub(ideal_ns);
        self.dep.saturating_record(err.max(1));
        if let Some((pi, pa)) = self.last {
            let e = (actual_ns as i128 - pa as i128) - (ideal_ns as i128 - pi as i128);
            self.gap_signed_sum += e as f64;
            self.gap.saturating_record((e.unsigned_abs() as u64).max(1));
        }
        if err > self.late_threshold_ns {
            self.late_packets += 1;
            if self.run == 0 {
                self.late_runs += 1;
            }
            self.run += 1;
            self.late_run_max = self.late_run_max.max(self.run);
        } else {
            self.run = 0;
        }
        self.first.get_or_insert((ideal_ns, actual_ns));
        self.last = Some((ideal_ns, actual_ns));
        self.packets += 1;
        self.bytes_l2 += u64::from(len);
        self.bytes_wire += wire_bytes(len);
    }

    /// The summary so far.
    pub fn report(&self) -> FidelityReport {
        let (fi, fa) = self.first.unwrap_or((0, 0));
        let (li, la) = self.last.unwrap_or((0, 0));
        let dur = la - fa;
        let sched = li - fi;
        let derr = dur as i64 - sched as i64;
        let secs = dur as f64 / 1e9;
        let rate = |x: f64| if dur > 0 { x / secs } else { 0.0 };
        FidelityReport {
            packets: self.packets,
            bytes_l2: self.bytes_l2,
            bytes_wire: self.bytes_wire,
            duration_ns: dur,
            scheduled_duration_ns: sched,
            duration_error_ns: derr,
            drift_ppm: if sched > 0 {
                derr as f64 / sched as f64 * 1e6
            } else {
                0.0
            },
            departure_error: DelayStats::of_hist(&self.dep),
            interdeparture_error: DelayStats::of_hist(&self.gap),
            interdeparture_error_mean_signed_ns: if self.packets > 1 {
                self.gap_signed_sum / (self.packets - 1) as f64
            } else {
                0.0
            },
            late_threshold_ns: self.late_threshold_ns,
            late_packets: self.late_packets,
            late_runs: self.late_runs,
            late_run_max: self.late_run_max,
            // With n packets there are n-1 gaps in `dur`.
            pps: rate(self.packets.saturating_sub(1) as f64),
            mbps_l2: rate(self.bytes_l2 as f64 * 8.0) / 1e6,
            mbps_wire: rate(self.bytes_wire as f64 * 8.0) / 1e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_errors() {
        let mut f = Fidelity::new(10_000);
        for i in 0..11u64 {
            f.record(i * 1_000_000, i * 1_000_000 + 500, 1000);
        }
        let r = f.report();
        assert!((r.pps - 1000.0).abs() < 1e-6);
        assert!((r.mbps_l2 - 8.8).abs() < 1e-6);
        assert!((r.mbps_wire - 8.0 * 1024.0 * 11.0 / 10.0 / 1000.0).abs() < 1e-6);
        assert_eq!((r.bytes_l2, r.bytes_wire), (11_000, 11 * 1024));
        assert_eq!(r.duration_error_ns, 0);
        assert_eq!(r.late_packets, 0);
        assert_eq!(r.departure_error.count, 11);
        assert!(r.departure_error.p50_ns >= 499 && r.departure_error.p50_ns <= 501);
        assert_eq!(
            r.interdeparture_error.max_ns, 1,
            "gaps exact (recorded as 1)"
        );
    }

    #[test]
    fn late_runs_and_drift() {
        // Ideal every 1000 ns; packets 3-5 and 8 leave 20 µs late, the last
        // one 100 ns after its ideal.
        let late = [3u64, 4, 5, 8];
        let mut f = Fidelity::new(10_000);
        for i in 0..10u64 {
            let lag = if late.contains(&i) { 20_000 } else { 0 };
            let lag = if i == 9 { 100 } else { lag };
            f.record(i * 1000, i * 1000 + lag, 60);
        }
        let r = f.report();
        assert_eq!((r.late_packets, r.late_runs, r.late_run_max), (4, 2, 3));
        assert_eq!((r.duration_ns, r.scheduled_duration_ns), (9100, 9000));
        assert_eq!(r.duration_error_ns, 100);
        assert!((r.drift_ppm - 100.0 / 9000.0 * 1e6).abs() < 1e-6);
        assert_eq!(r.bytes_wire, 10 * 84);
    }

    #[test]
    fn json_keys_of_replay_1() {
        let mut f = Fidelity::new(10_000);
        f.record(0, 5, 60);
        f.record(1000, 1010, 60);
        let s = serde_json::to_string(&f.report()).unwrap();
        let top = [
            "packets",
            "bytes_l2",
            "bytes_wire",
            "duration_ns",
            "scheduled_duration_ns",
            "duration_error_ns",
            "drift_ppm",
            "departure_error",
            "interdeparture_error",
            "interdeparture_error_mean_signed_ns",
            "late_threshold_ns",
            "late_packets",
            "late_runs",
            "late_run_max",
            "pps",
            "mbps_l2",
            "mbps_wire",
        ];
        let at: Vec<usize> = top
            .iter()
            .map(|k| {
                s.find(&format!(r#"{{"{k}":"#))
                    .or(s.find(&format!(r#","{k}":"#)))
                    .unwrap()
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{s}");
        assert!(s.contains(
            r#""departure_error":{"p50_ns":5,"p99_ns":10,"p999_ns":10,"max_ns":10,"mean_ns":7.5},"#
        ), "{s}");
    }

    #[test]
    fn empty_and_single() {
        assert_eq!(Fidelity::new(0).report().pps, 0.0);
        let mut f = Fidelity::new(0);
        f.record(5, 3, 0);
        let r = f.report();
        assert_eq!((r.packets, r.duration_ns, r.late_packets), (1, 0, 0));
        assert_eq!(r.interdeparture_error_mean_signed_ns, 0.0);
    }
}
