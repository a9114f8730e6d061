//! Sender-side metrics from Tx records: pacing truth, how far each
//! departure was from its schedule.
//!
//! Conventions: `sched_ns` is the scheduled send time, monotonic ns since the
//! sender's run start (0 = unscheduled, e.g. unpaced runs); `tx_ns` the wall
//! clock at send. With `start_unix_ns` (the wall-clock time of the run
//! start, from the sender file's metadata) the actual send time on the same
//! axis is `tx_ns - start_unix_ns`, and
//! `lateness = (tx_ns - start_unix_ns) - sched_ns`. The sender derives
//! `tx_ns` from CLOCK_MONOTONIC plus a wall-clock offset sampled once per
//! run, so this lateness is exact on the monotonic clock even when the wall
//! clock is stepped during the run.
//!
//! A *missed deadline* is lateness above `late_threshold_ns`, which defaults
//! to the requested interval: a probe that late has slipped into the next
//! probe's slot. Inter-departure intervals are taken between consecutive
//! measured records in file (= send) order. Drift compares the actual and
//! scheduled span from the first to the last scheduled probe, in ppm.
//! See [`crate::report::SenderReport`] for the report.

use crate::latency::SignedHistogram;
use crate::report::{diff_ns, DriftStats, IntervalStats, RateAcc, SenderReport, SizeAcc};
use crate::seqwin::{SeqOutcome, SeqWindow};
use crate::staged::Accumulate;
use crate::window::RateModel;
use wirelab_wire::{ProbeFlags, Record};

/// What the caller knows about the sender's run (from the file metadata).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderInfo {
    /// Wall clock (ns since the Unix epoch) at the run start, the origin of
    /// `sched_ns`.
    pub start_unix_ns: u64,
    /// The requested (mean) interval between probes, if paced.
    pub interval_ns: Option<u64>,
    /// Lateness above which a probe missed its deadline; defaults to
    /// `interval_ns`.
    pub late_threshold_ns: Option<u64>,
}

/// Streaming sender-side accumulator for one flow.
#[derive(Debug, Clone)]
pub struct SenderStats {
    info: SenderInfo,
    /// Take the run start from the first scheduled probe.
    estimate_start: bool,
    model: RateModel,
    seqs: SeqWindow,
    sent: u64,
    warmup: u64,
    repeats: u64,
    unscheduled: u64,
    echo_requests: u64,
    lateness: SignedHistogram,
    late: u64,
    early: u64,
    prev: Option<(u64, u64)>,
    departure: SignedHistogram,
    departure_abs_err: f64,
    departure_error: SignedHistogram,
    first_sched: Option<(u64, u64)>,
    last_sched: Option<(u64, u64)>,
    rate: RateAcc,
    sizes: SizeAcc,
}

impl SenderStats {
    pub fn new(info: SenderInfo, model: RateModel) -> SenderStats {
        SenderStats {
            info,
            estimate_start: false,
            model,
            seqs: SeqWindow::new(),
            sent: 0,
            warmup: 0,
            repeats: 0,
            unscheduled: 0,
            echo_requests: 0,
            lateness: SignedHistogram::new(),
            late: 0,
            early: 0,
            prev: None,
            departure: SignedHistogram::new(),
            departure_abs_err: 0.0,
            departure_error: SignedHistogram::new(),
            first_sched: None,
            last_sched: None,
            rate: RateAcc::default(),
            sizes: SizeAcc::default(),
        }
    }

    /// Without the run start: lateness is measured against the first
    /// scheduled probe (`start = tx_ns - sched_ns` of that probe, so its
    /// lateness is 0). The report says so with `start_estimated`.
    pub fn estimating_start(interval_ns: Option<u64>, model: RateModel) -> SenderStats {
        let mut s = SenderStats::new(
            SenderInfo {
                start_unix_ns: 0,
                interval_ns,
                late_threshold_ns: None,
            },
            model,
        );
        s.estimate_start = true;
        s
    }

    fn threshold(&self) -> Option<u64> {
        self.info.late_threshold_ns.or(self.info.interval_ns)
    }

    /// Feeds one Tx record, in file order.
    pub fn observe(&mut self, seq: u64, sched_ns: u64, tx_ns: u64, size: u32, flags: ProbeFlags) {
        if self.seqs.insert(seq) == SeqOutcome::Duplicate {
            self.repeats = self.repeats.saturating_add(1);
            return;
        }
        self.sent = self.sent.saturating_add(1);
        if flags.is_warmup() {
            self.warmup = self.warmup.saturating_add(1);
            return;
        }
        if flags.is_echo_request() {
            self.echo_requests = self.echo_requests.saturating_add(1);
        }
        self.sizes.add(size);
        self.rate.add(tx_ns, size, &self.model);
        let sched = (sched_ns != 0).then_some(sched_ns);
        match sched {
            Some(s) => {
                if self.estimate_start && self.first_sched.is_none() {
                    self.info.start_unix_ns = tx_ns.wrapping_sub(s);
                }
                let late = tx_ns as i128 - self.info.start_unix_ns as i128 - s as i128;
                let late = late.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                self.lateness.record(late, seq);
                if late < 0 {
                    self.early = self.early.saturating_add(1);
                }
                if self
                    .threshold()
                    .is_some_and(|t| late > 0 && late as u64 > t)
                {
                    self.late = self.late.saturating_add(1);
                }
                if self.first_sched.is_none() {
                    self.first_sched = Some((s, tx_ns));
                }
                self.last_sched = Some((s, tx_ns));
            }
            None => self.unscheduled = self.unscheduled.saturating_add(1),
        }
        if let Some((ptx, psched)) = self.prev {
            let actual = diff_ns(tx_ns, ptx);
            self.departure.record(actual, seq);
            if let Some(r) = self.info.interval_ns {
                self.departure_abs_err += (actual as f64 - r as f64).abs();
            }
            if let Some(s) = sched {
                if psched != 0 {
                    let scheduled = diff_ns(s, psched);
                    self.departure_error
                        .record(actual.saturating_sub(scheduled), seq);
                }
            }
        }
        self.prev = Some((tx_ns, sched_ns));
    }

    /// Feeds one Tx record, in file order.
    pub fn observe_record(&mut self, r: &Record) {
        self.observe(
            r.seq,
            r.sched_ns,
            r.tx_ns,
            r.size,
            ProbeFlags(r.probe_flags),
        );
    }

    /// Distinct sequence numbers sent (incl. warm-up).
    pub fn sent(&self) -> u64 {
        self.sent
    }

    pub fn finish(&self) -> SenderReport {
        let drift = match (self.first_sched, self.last_sched) {
            (Some((s0, t0)), Some((s1, t1))) if self.lateness.count() >= 2 => {
                let actual_ns = diff_ns(t1, t0);
                let scheduled_ns = diff_ns(s1, s0);
                let drift_ns = actual_ns.saturating_sub(scheduled_ns);
                Some(DriftStats {
                    actual_ns,
                    scheduled_ns,
                    drift_ns,
                    drift_ppm: (scheduled_ns != 0)
                        .then(|| drift_ns as f64 / scheduled_ns as f64 * 1e6),
                })
            }
            _ => None,
        };
        let threshold = self.threshold();
        SenderReport {
            sent: self.sent,
            warmup: self.warmup,
            repeats: self.repeats,
            unscheduled: self.unscheduled,
            lateness: self.lateness.stats(),
            late_threshold_ns: threshold,
            late: threshold.map(|_| self.late),
            early: self.early,
            departure: IntervalStats::from_hist(
                &self.departure,
                self.info.interval_ns,
                self.departure_abs_err,
            ),
            departure_error: self.departure_error.stats(),
            drift,
            sizes: self.sizes.report(),
            rate: self.rate.report(&self.model),
            requested_rate_pps: self
                .info
                .interval_ns
                .filter(|&i| i > 0)
                .map(|i| 1e9 / i as f64),
            echo_requests: self.echo_requests,
            start_estimated: self.estimate_start,
        }
    }
}

impl Accumulate for SenderStats {
    /// Feeds one Tx record.
    fn feed(&mut self, r: &Record) {
        self.observe_record(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: u64 = 1_700_000_000_000_000_000;

    fn info() -> SenderInfo {
        SenderInfo {
            start_unix_ns: START,
            interval_ns: Some(1_000_000),
            late_threshold_ns: None,
        }
    }

    #[test]
    fn lateness_departure_and_drift() {
        let mut s = SenderStats::new(info(), RateModel::default());
        // Scheduled every 1 ms from 1 ms; lateness in us per probe.
        let late_us = [2u64, 5, 1, 1500, 3, 2, 4, 1, 2, 10];
        for (i, l) in late_us.iter().enumerate() {
            let sched = (i as u64 + 1) * 1_000_000;
            s.observe(
                i as u64,
                sched,
                START + sched + l * 1000,
                100,
                ProbeFlags::empty(),
            );
        }
        let r = s.finish();
        assert_eq!(r.sent, 10);
        let l = r.lateness.unwrap();
        assert_eq!((l.min_ns, l.max_ns, l.max_seq), (1000, 1_500_000, Some(3)));
        assert_eq!(r.late_threshold_ns, Some(1_000_000));
        assert_eq!(r.late, Some(1));
        assert_eq!(r.early, 0);
        let d = r.drift.unwrap();
        // First 2 us late, last 10 us late over 9 ms scheduled.
        assert_eq!(
            (d.scheduled_ns, d.actual_ns, d.drift_ns),
            (9_000_000, 9_008_000, 8000)
        );
        assert!((d.drift_ppm.unwrap() - 8000.0 / 9e6 * 1e6).abs() < 1e-9);
        let e = r.departure_error.unwrap();
        // Errors are lateness differences: +3, -4, +1499, -1497, ...
        assert_eq!(e.count, 9);
        assert_eq!((e.max_ns, e.min_ns), (1_499_000, -1_497_000));
        let dep = r.departure.unwrap();
        assert!((dep.dist.mean_ns - 9_008_000.0 / 9.0).abs() < 1e-6);
        assert!((dep.mean_error_ns.unwrap() - 8000.0 / 9.0).abs() < 1e-6);
        let rate = r.rate.unwrap();
        assert!((rate.rate_pps.unwrap() - 9.0 / 0.009008).abs() < 1e-6);
        assert_eq!(r.requested_rate_pps, Some(1000.0));
    }

    #[test]
    fn warmup_repeats_unscheduled() {
        let mut s = SenderStats::new(
            SenderInfo {
                late_threshold_ns: Some(50),
                ..info()
            },
            RateModel::default(),
        );
        let w = ProbeFlags(ProbeFlags::WARMUP);
        s.observe(0, 1000, START + 999_999, 64, w); // warm-up: not in lateness
        s.observe(1, 2000, START + 2100, 64, ProbeFlags::empty());
        s.observe(2, 0, START + 5000, 64, ProbeFlags::empty());
        s.observe(3, 4000, START + 3990, 64, ProbeFlags(ProbeFlags::LAST));
        s.observe(3, 0, START + 9000, 64, ProbeFlags(ProbeFlags::LAST));
        let r = s.finish();
        assert_eq!((r.sent, r.warmup, r.repeats, r.unscheduled), (4, 1, 1, 1));
        let l = r.lateness.unwrap();
        assert_eq!((l.count, l.min_ns, l.max_ns), (2, -10, 100));
        assert_eq!((r.late, r.early), (Some(1), 1));
    }

    #[test]
    fn estimated_start() {
        let mut s = SenderStats::estimating_start(Some(1000), RateModel::default());
        s.observe(0, 0, START, 10, ProbeFlags::empty());
        s.observe(1, 5000, START + 7000, 10, ProbeFlags::empty());
        s.observe(2, 6000, START + 9500, 10, ProbeFlags::empty());
        let r = s.finish();
        assert!(r.start_estimated);
        let l = r.lateness.unwrap();
        assert_eq!((l.min_ns, l.max_ns, l.max_seq), (0, 1500, Some(2)));
        assert_eq!(r.late, Some(1));
    }

    #[test]
    fn hostile_times() {
        let mut s = SenderStats::new(
            SenderInfo {
                start_unix_ns: u64::MAX,
                interval_ns: Some(0),
                late_threshold_ns: None,
            },
            RateModel::default(),
        );
        for (seq, sc, tx) in [(0, u64::MAX, 0), (1, 1, u64::MAX), (u64::MAX, u64::MAX, 1)] {
            s.observe(seq, sc, tx, u32::MAX, ProbeFlags(!ProbeFlags::WARMUP));
        }
        let r = s.finish();
        assert_eq!(r.sent, 3);
        assert_eq!(r.requested_rate_pps, None);
        serde_json::to_string(&r).unwrap();
    }
}
