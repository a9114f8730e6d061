//! Replay fidelity: how far each departure was from its ideal time, how
//! far each gap was from the original gap, drift over the whole replay,
//! runs of late packets, achieved rates.

use super::wire_bytes;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Percentiles of a distribution in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest value.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: f64,
}

fn pct(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        p50_ns: h.value_at_quantile(0.5),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        mean_ns: h.mean(),
    }
}

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
    pub departure_error: Percentiles,
    /// |actual gap − ideal gap| between consecutive packets.
    pub interdeparture_error: Percentiles,
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

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static bounds are valid")
}

impl Fidelity {
    /// New, with `late_threshold_ns` defining a late packet.
    pub fn new(late_threshold_ns: u64) -> Fidelity {
        Fidelity {
            dep: hist(),
            gap: hist(),
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
            departure_error: pct(&self.dep),
            interdeparture_error: pct(&self.gap),
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
