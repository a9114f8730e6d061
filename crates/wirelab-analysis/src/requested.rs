//! What the sender was asked for, and the distribution accuracy (KS
//! distance) of what it did against it.

use crate::error::AnalysisError;
use crate::join::{analyze, departure_interval_samples, size_samples, AnalysisConfig, RecordSets};
use crate::ks::ks_distance;
use crate::report::{FlowReport, Summary};
use crate::{FlowConfig, SenderInfo};
use wirelab_wire::record::{Record, RecordKind};

/// A requested distribution's CDF. Built by the caller, which knows the
/// generator specs (this crate does not).
pub type Cdf = Box<dyn Fn(f64) -> f64 + Send + Sync>;

/// The sender's requested intervals and sizes.
#[derive(Default)]
pub struct Requested {
    /// Mean interval, for lateness thresholds and inter-arrival error.
    pub mean_interval_ns: Option<u64>,
    /// CDFs of the requested distributions, only where they are continuous:
    /// a constant's step CDF makes any jitter look like a distance of ~1,
    /// which says nothing (its accuracy is the lateness and departure error).
    pub interval_cdf: Option<Cdf>,
    pub size_cdf: Option<Cdf>,
}

/// Fills the KS distances of a flow's sender report between the requested
/// distributions and the achieved `intervals` and `sizes` (sorted in place).
pub fn fill_ks(report: &mut FlowReport, req: &Requested, intervals: &mut [f64], sizes: &mut [f64]) {
    let Some(sender) = report.sender.as_mut() else {
        return;
    };
    let ks = |cdf: &Option<Cdf>, samples: &mut [f64]| {
        let cdf = cdf.as_ref()?;
        (!samples.is_empty()).then(|| ks_distance(samples, cdf))
    };
    if let Some(dep) = sender.departure.as_mut() {
        dep.ks_distance = ks(&req.interval_cdf, intervals);
    }
    if let Some(sz) = sender.sizes.as_mut() {
        sz.ks_distance = ks(&req.size_cdf, sizes);
    }
}

/// Record sets of one run, split by kind.
#[derive(Default)]
pub struct RunRecords {
    pub tx: Vec<Record>,
    pub rx: Vec<Record>,
    pub echo: Vec<Record>,
    /// The run's start (`sched_ns` = 0) from the sender file's metadata.
    pub sender_start_unix_ns: Option<u64>,
}

/// The whole-run analysis of `wirelab analyze`: joins the record sets of
/// at most `max_flows` flows and adds the KS distances against `req`.
pub fn analyze_run(
    run: &RunRecords,
    req: &Requested,
    window_ns: u64,
    max_flows: usize,
) -> Result<Summary, AnalysisError> {
    let interval_ns = req.mean_interval_ns;
    let cfg = AnalysisConfig {
        flow: FlowConfig {
            window_ns,
            requested_interval_ns: interval_ns,
            ..FlowConfig::default()
        },
        sender: run.sender_start_unix_ns.map(|start_unix_ns| SenderInfo {
            start_unix_ns,
            interval_ns,
            late_threshold_ns: None,
        }),
        max_flows,
    };
    let has_sender = run.sender_start_unix_ns.is_some() || !run.tx.is_empty();
    let sets = RecordSets {
        tx: has_sender.then_some(&run.tx[..]),
        rx: (!run.rx.is_empty()).then_some(&run.rx[..]),
        echo: (!run.echo.is_empty()).then_some(&run.echo[..]),
    };
    let mut summary = analyze(&sets, &cfg)?;
    for f in summary.flows.iter_mut() {
        let mut ivals = departure_interval_samples(&run.tx, f.flow);
        let mut sizes = size_samples(&run.tx, f.flow, RecordKind::Tx);
        fill_ks(f, req, &mut ivals, &mut sizes);
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow_with_departures() -> FlowReport {
        let mut f = FlowReport::empty(1);
        let mut s = crate::SenderStats::new(
            SenderInfo {
                start_unix_ns: 0,
                interval_ns: Some(10),
                late_threshold_ns: None,
            },
            crate::RateModel::default(),
        );
        for seq in 0..4u64 {
            s.observe(
                seq,
                seq * 10 + 1,
                seq * 10 + 1,
                64,
                wirelab_wire::ProbeFlags(0),
            );
        }
        f.sender = Some(s.finish());
        f
    }

    #[test]
    fn ks_is_filled_only_where_a_cdf_was_requested() {
        let mut f = flow_with_departures();
        let req = Requested {
            mean_interval_ns: Some(10),
            interval_cdf: Some(Box::new(|x: f64| (x / 20.0).clamp(0.0, 1.0))),
            size_cdf: None,
        };
        // Uniform on 0..20: samples 5 and 15 are a distance of 0.25 away.
        fill_ks(&mut f, &req, &mut [5.0, 15.0], &mut [64.0]);
        let s = f.sender.as_ref().unwrap();
        assert_eq!(s.departure.as_ref().unwrap().ks_distance, Some(0.25));
        assert_eq!(s.sizes.as_ref().unwrap().ks_distance, None);
        // No samples: no distance.
        let mut f = flow_with_departures();
        fill_ks(&mut f, &req, &mut [], &mut []);
        let s = f.sender.as_ref().unwrap();
        assert_eq!(s.departure.as_ref().unwrap().ks_distance, None);
    }
}
