//! The send job: one thread per flow, each pacing its probes with
//! [`crate::sender::run_flow`] from a shared start, streaming statistics
//! per flow, and the `wirelab.send/1` report.

use super::rt::RtSetup;
use super::spec::{self, FlowSeeds};
use super::Progress;
use crate::recordlog::{hostname, LogStats, RecordLog, RecordMeta};
use crate::sender::{run_flow, FlowConfig, FlowSendStats, RecordSink, MAX_PAYLOAD};
use crate::{ProbeFormat, StopFlag};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use thiserror::Error;
use wirelab_analysis::schema::{
    SendEngine, SendReport, SendSettings, SendTotals, SentFlowReport, SEND_SCHEMA,
};
use wirelab_analysis::{RttStats, SendAccum, SenderInfo};
use wirelab_core::gen::{Bounds, GenError, GenSpec, Generator};
use wirelab_io::clock::{mono_ns, mono_to_real_offset};
use wirelab_io::rt::RtError;
use wirelab_wire::luna::LUNA_LEN;
use wirelab_wire::probe::{ECHO_LEN, HEADER_LEN};
use wirelab_wire::record::{Record, Role};

/// Longest interval accepted from a generator (one hour).
pub const MAX_INTERVAL_NS: f64 = 3_600e9;

/// Time from the run's epoch to the first departure: every thread is set
/// up by then.
const START_LEAD_NS: u64 = 50_000_000;

/// The report of a send job.
pub type SendJobReport = SendReport<FlowSendStats, LogStats>;

/// Which generator a spec error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    Intervals,
    Sizes,
}

#[derive(Debug, Error)]
pub enum SendError {
    #[error("{spec}: {source}")]
    Spec {
        values: Values,
        spec: String,
        source: GenError,
    },
    #[error(transparent)]
    Rt(#[from] RtError),
    #[error(transparent)]
    Files(#[from] super::JobFileError),
    #[error("flow {flow} to {target}: {source}")]
    Flow {
        flow: u32,
        target: std::net::SocketAddr,
        source: io::Error,
    },
    #[error("a sending thread panicked")]
    Panicked,
}

/// A send run: flows `flow.flow`, `flow.flow + 1`, ... each on its own
/// socket and thread.
pub struct SendJob {
    /// The first flow's settings; the job sets each flow's id, seed, epoch
    /// and start.
    pub flow: FlowConfig,
    pub flows: u32,
    pub intervals: GenSpec,
    pub sizes: GenSpec,
    pub seed: u64,
    pub rt: RtSetup,
    /// Per-packet records go here.
    pub record: Option<PathBuf>,
    /// Echoed in the report and the record file.
    pub settings: SendSettings,
}

/// What one flow's thread hands back.
struct FlowOutcome {
    stats: FlowSendStats,
    tx: SendAccum,
    rtt: RttStats,
    clamped_intervals: u64,
    clamped_sizes: u64,
}

/// Feeds the flow's statistics and counts sent probes for progress.
struct TxSink {
    acc: SendAccum,
    sent: Arc<AtomicU64>,
}

impl RecordSink for TxSink {
    fn record(&mut self, r: &Record) {
        self.acc.observe(r);
        self.sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// Streaming RTT statistics, fed by a flow's echo reply thread.
struct RttSink(RttStats);

impl RecordSink for RttSink {
    fn record(&mut self, r: &Record) {
        self.0.observe_record(r);
    }
}

impl SendJob {
    /// Bounds of generated sizes: the probe header at least.
    fn size_bounds(&self) -> Result<Bounds, GenError> {
        let min = match (self.flow.format, self.flow.echo) {
            (ProbeFormat::Luna, _) => LUNA_LEN,
            (ProbeFormat::Wirelab, true) => ECHO_LEN,
            (ProbeFormat::Wirelab, false) => HEADER_LEN,
        };
        Bounds::new(min as f64, MAX_PAYLOAD as f64)
    }

    /// Every flow's generators, built up front so a bad file fails before
    /// anything is sent.
    fn generators(&self) -> Result<Vec<(Generator, Generator)>, SendError> {
        let err = |values, spec: &GenSpec| {
            let spec = spec.to_string();
            move |source| SendError::Spec {
                values,
                spec,
                source,
            }
        };
        let ival_bounds =
            Bounds::new(0.0, MAX_INTERVAL_NS).map_err(err(Values::Intervals, &self.intervals))?;
        let size_bounds = self
            .size_bounds()
            .map_err(err(Values::Sizes, &self.sizes))?;
        (0..self.flows)
            .map(|i| {
                let s = FlowSeeds::of(self.seed, i);
                Ok((
                    spec::build(&self.intervals, s.intervals, ival_bounds)
                        .map_err(err(Values::Intervals, &self.intervals))?,
                    spec::build(&self.sizes, s.sizes, size_bounds)
                        .map_err(err(Values::Sizes, &self.sizes))?,
                ))
            })
            .collect()
    }

    /// Starts every flow; SIGINT and SIGTERM stop them.
    pub fn start(self) -> Result<SendRun, SendError> {
        let gens = self.generators()?;
        self.rt.lock_memory()?;
        let mono_to_real = mono_to_real_offset();
        // sched_ns counts from the epoch.
        let epoch = mono_ns();
        let start = epoch + START_LEAD_NS;
        let start_unix_ns = (epoch as i128 + mono_to_real) as u64;
        let log = match &self.record {
            Some(p) => {
                let meta = RecordMeta {
                    wirelab_version: env!("CARGO_PKG_VERSION").into(),
                    role: "sender".into(),
                    host: hostname(),
                    clock: "CLOCK_MONOTONIC schedule; tx times CLOCK_REALTIME".into(),
                    start_unix_ns,
                    config: serde_json::to_value(&self.settings).unwrap_or_default(),
                };
                Some(RecordLog::create(p, Role::Sender, &meta).map_err(|source| {
                    super::JobFileError::RecordCreate {
                        path: p.clone(),
                        source,
                    }
                })?)
            }
            None => None,
        };
        let stop = super::stop_on_signals().map_err(super::JobFileError::Signals)?;
        let sent = Arc::new(AtomicU64::new(0));
        let info = SenderInfo {
            start_unix_ns,
            interval_ns: spec::mean_of(&self.intervals).map(|m| m.round() as u64),
            late_threshold_ns: None,
        };
        let mut threads = Vec::new();
        for (i, (mut ivals, mut sizes)) in gens.into_iter().enumerate() {
            let cfg = FlowConfig {
                flow: self.flow.flow.wrapping_add(i as u32),
                seed: FlowSeeds::of(self.seed, i as u32).flow,
                epoch_mono_ns: Some(epoch),
                start_mono_ns: Some(start),
                mono_to_real,
                ..self.flow.clone()
            };
            let stop = stop.clone();
            let tx_log = log.as_ref().map(|l| l.writer());
            let reply_log = log.as_ref().filter(|_| cfg.echo).map(|l| l.writer());
            let rt = self.rt;
            let mut sink = TxSink {
                acc: SendAccum::new(info, cfg.limits.count),
                sent: sent.clone(),
            };
            threads.push(std::thread::spawn(
                move || -> Result<FlowOutcome, SendError> {
                    rt.apply_to_thread(i)?;
                    let mut next_ival = || ivals.next();
                    let mut next_size = || sizes.next();
                    let (stats, rtt) = run_flow(
                        &cfg,
                        &mut next_ival,
                        &mut next_size,
                        tx_log,
                        reply_log,
                        &mut sink,
                        RttSink(RttStats::default()),
                        &stop,
                    )
                    .map_err(|source| SendError::Flow {
                        flow: cfg.flow,
                        target: cfg.target,
                        source,
                    })?;
                    Ok(FlowOutcome {
                        stats,
                        tx: sink.acc,
                        rtt: rtt.0,
                        clamped_intervals: ivals.clamped(),
                        clamped_sizes: sizes.clamped(),
                    })
                },
            ));
        }
        Ok(SendRun {
            job: self,
            threads,
            log,
            stop,
            sent,
        })
    }
}

/// A running send job.
pub struct SendRun {
    job: SendJob,
    threads: Vec<JoinHandle<Result<FlowOutcome, SendError>>>,
    log: Option<RecordLog>,
    stop: StopFlag,
    sent: Arc<AtomicU64>,
}

impl SendRun {
    /// Probes sent so far, over all flows.
    pub fn progress(&self) -> Progress {
        Progress(self.sent.clone())
    }

    /// Waits for every flow; the first failure stops the others.
    pub fn join(self) -> Result<SendJobReport, SendError> {
        let mut outcomes = Vec::new();
        let mut first_err = None;
        for h in self.threads {
            match h.join().unwrap_or(Err(SendError::Panicked)) {
                Ok(o) => outcomes.push(o),
                Err(e) => {
                    self.stop.stop();
                    first_err.get_or_insert(e);
                }
            }
        }
        let record_log = match self.log {
            Some(l) => Some(l.finish().map_err(super::JobFileError::RecordFinish)?),
            None => None,
        };
        if let Some(e) = first_err {
            return Err(e);
        }
        let req = spec::requested(Some(&self.job.intervals), Some(&self.job.sizes));
        let echo = self.job.flow.echo;
        let flows: Vec<_> = outcomes
            .into_iter()
            .map(|o| SentFlowReport {
                report: o.tx.report(o.stats.flow, &req, echo.then_some(&o.rtt)),
                echo_replies: o.stats.echo_replies,
                engine: SendEngine {
                    stats: o.stats,
                    clamped_intervals: o.clamped_intervals,
                    clamped_sizes: o.clamped_sizes,
                },
            })
            .collect();
        Ok(SendReport {
            schema: SEND_SCHEMA,
            target: self.job.flow.target.to_string(),
            totals: SendTotals {
                flows: flows.len(),
                sent: flows.iter().map(|f| f.engine.stats.sent).sum(),
            },
            config: self.job.settings,
            flows,
            record_log,
        })
    }
}
