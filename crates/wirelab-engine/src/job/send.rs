//! The send job: one thread per flow, each pacing its probes with
//! [`crate::sender::run_flow_on`] from a shared start (in a moment, or at
//! an absolute time), on the socket type asked for, streaming statistics
//! per flow, and the `wirelab.send/1` report.

use super::rt::RtSetup;
use super::spec::{self, Fit, FlowSeeds};
use super::Progress;
use crate::recordlog::{hostname, LogStats, RecordLog, RecordMeta, RecordWriter};
use crate::sender::{run_flow_on, FlowConfig, FlowSendStats, Padding, RecordSink, MAX_PAYLOAD};
use crate::txpath::{self, PathConfig, PathError, SocketKind, TxPath};
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
use wirelab_core::schedule::WaitStrategy;
use wirelab_core::units::format_ns;
use wirelab_io::clock::{mono_ns, mono_to_real_offset, real_ns};
use wirelab_io::rt::RtError;
use wirelab_wire::luna::LUNA_LEN;
use wirelab_wire::probe::{ECHO_LEN, HEADER_LEN};
use wirelab_wire::record::{Record, Role};

/// Longest interval accepted from a generator (one hour).
pub const MAX_INTERVAL_NS: f64 = 3_600e9;

/// Time from the run's epoch to the first departure: every thread is set
/// up by then.
const START_LEAD_NS: u64 = 50_000_000;
/// How late an absolute start may be found (once every flow is set up)
/// and still be kept.
pub const START_AT_TOLERANCE_NS: u64 = 1_000_000;
/// How far ahead an absolute start may lie.
pub const START_AT_MAX_AHEAD_NS: u64 = 24 * 3_600_000_000_000;

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
    #[error("{spec}: {cause}")]
    Spec {
        values: Values,
        spec: String,
        cause: GenError,
    },
    /// A spec names a value its generator would clamp.
    #[error("{spec}: {}", out_of_bounds(.values, .value, .bounds))]
    Range {
        values: Values,
        spec: String,
        value: f64,
        bounds: Bounds,
    },
    #[error(transparent)]
    Rt(#[from] RtError),
    #[error(transparent)]
    Files(#[from] super::JobFileError),
    #[error("flow {flow} to {target}: {cause}")]
    Flow {
        flow: u32,
        target: std::net::SocketAddr,
        cause: io::Error,
    },
    #[error("flow {flow} to {target}: {cause}")]
    Path {
        flow: u32,
        target: std::net::SocketAddr,
        cause: PathError,
    },
    /// A size the socket type cannot carry unfragmented.
    #[error("{spec}: --socket {} cannot carry a payload of {value} bytes: the MTU of {dev} is {mtu}, so the largest is {max} bytes (raw and packet sockets do not fragment)", .socket.as_str())]
    TooBig {
        socket: SocketKind,
        spec: String,
        value: f64,
        dev: String,
        mtu: u32,
        max: usize,
    },
    #[error("--start-at is {} ms in the past{}", .late_ns / 1_000_000, if *.ready { " once the flows were set up" } else { "" })]
    StartPast { late_ns: u64, ready: bool },
    #[error("--start-at is {:.1} h ahead; at most 24 h are allowed", *.ahead_ns as f64 / 3.6e12)]
    StartTooFar { ahead_ns: u64 },
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
    /// The receiver as given (a name or an address), echoed in the report.
    pub host: String,
    /// The socket type every flow sends through.
    pub socket: SocketKind,
    /// The first probe's deadline on the wall clock (ns since the Unix
    /// epoch), instead of a moment after the start.
    pub start_at_unix_ns: Option<u64>,
}

/// Whether an absolute start at `at` is still to come at `now` (both wall
/// clock ns): at most [`START_AT_TOLERANCE_NS`] late, at most
/// [`START_AT_MAX_AHEAD_NS`] ahead.
pub fn check_start_at(at: u64, now: u64, ready: bool) -> Result<(), SendError> {
    if now > at.saturating_add(START_AT_TOLERANCE_NS) {
        return Err(SendError::StartPast {
            late_ns: now - at,
            ready,
        });
    }
    if at > now.saturating_add(START_AT_MAX_AHEAD_NS) {
        return Err(SendError::StartTooFar { ahead_ns: at - now });
    }
    Ok(())
}

/// A `--padding` value that is neither a byte nor `random`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{given:?}: give a byte value (0-255 or 0x00-0xff) or \"random\"")]
pub struct PaddingError {
    pub given: String,
}

/// `--padding`: a byte value (`0`-`255`, `0x00`-`0xff`) or `random`.
impl std::str::FromStr for Padding {
    type Err = PaddingError;

    fn from_str(s: &str) -> Result<Padding, PaddingError> {
        if s == "random" {
            return Ok(Padding::Random);
        }
        match s.strip_prefix("0x") {
            Some(h) => u8::from_str_radix(h, 16).ok(),
            None => s.parse::<u8>().ok(),
        }
        .map(Padding::Const)
        .ok_or_else(|| PaddingError { given: s.into() })
    }
}

fn out_of_bounds(values: &Values, value: &f64, b: &Bounds) -> String {
    match values {
        Values::Sizes => format!(
            "a size of {value} bytes is outside {}..={} (from the probe header up to the largest UDP payload over IPv4)",
            b.min, b.max
        ),
        Values::Intervals => format!(
            "an interval of {} is outside 0..={}",
            format_ns(*value),
            format_ns(b.max)
        ),
    }
}

fn clamp_note(values: Values, spec: &GenSpec, below: f64, above: f64, b: Bounds) -> String {
    let what = match values {
        Values::Sizes => "sizes",
        Values::Intervals => "intervals",
    };
    let at = |v: f64| match values {
        Values::Sizes => format!("{v} bytes"),
        Values::Intervals => format_ns(v),
    };
    let mut parts = Vec::new();
    for (p, side, bound) in [(below, "below", b.min), (above, "above", b.max)] {
        if p >= spec::CLAMP_NOTE_SHARE {
            let share = p * 100.0;
            let at = at(bound);
            parts.push(format!("{share:.1}% lie {side} {at} and are sent as {at}"));
        }
    }
    format!(
        "{what} {spec}: about {} (counted as clamped in the summary)",
        parts.join(", ")
    )
}

/// A flow's interval and size generators.
type FlowGenerators = (Generator, Generator);

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
    /// The settings echoed in send/1 (`config`) and the record file.
    pub fn settings(&self) -> SendSettings {
        let f = &self.flow;
        SendSettings {
            host: self.host.clone(),
            target: f.target.to_string(),
            flow: f.flow,
            flows: self.flows,
            interval: self.intervals.to_string(),
            size: self.sizes.to_string(),
            count: f.limits.count,
            duration_ns: f.limits.duration_ns,
            tos: f.tos,
            padding: match f.padding {
                Padding::Const(b) => b.to_string(),
                Padding::Random => "random".into(),
            },
            warmup: f.warmup,
            wait: match f.wait {
                WaitStrategy::Sleep => "sleep",
                WaitStrategy::Spin => "spin",
                WaitStrategy::Hybrid { .. } => "hybrid",
            }
            .into(),
            echo: f.echo,
            seed: self.seed,
            batch: u16::try_from(f.max_batch).unwrap_or(u16::MAX),
            rt_priority: self.rt.fifo_priority,
            cpu: self.rt.cpu,
            format: match f.format {
                ProbeFormat::Wirelab => "wirelab",
                ProbeFormat::Luna => "luna",
            }
            .into(),
            late: format!("{:?}", f.late),
            phase: f.phase.map(|(pc, _)| pc.calibrate.as_nanos() as u64),
            socket: self.socket.as_str().into(),
            start_at_unix_ns: self.start_at_unix_ns,
        }
    }

    /// Bounds of generated sizes: the probe header at least, `max` at most.
    fn size_bounds(&self, max: usize) -> Result<Bounds, GenError> {
        let min = match (self.flow.format, self.flow.echo) {
            (ProbeFormat::Luna, _) => LUNA_LEN,
            (ProbeFormat::Wirelab, true) => ECHO_LEN,
            (ProbeFormat::Wirelab, false) => HEADER_LEN,
        };
        Bounds::new(min as f64, max.min(MAX_PAYLOAD) as f64)
    }

    /// Every flow's generators, built up front so a bad file or a value out
    /// of bounds fails before anything is sent; and notes on the share of
    /// values the bounds will clamp. With `egress` (raw and packet
    /// sockets), sizes stop at what its MTU carries.
    fn generators(
        &self,
        egress: Option<&txpath::Egress>,
    ) -> Result<(Vec<FlowGenerators>, Vec<String>), SendError> {
        let err = |values, spec: &GenSpec| {
            let spec = spec.to_string();
            move |source| SendError::Spec {
                values,
                spec,
                cause: source,
            }
        };
        let ival_bounds =
            Bounds::new(0.0, MAX_INTERVAL_NS).map_err(err(Values::Intervals, &self.intervals))?;
        let max_size = egress.map_or(MAX_PAYLOAD, |e| e.max_payload());
        let size_bounds = self
            .size_bounds(max_size)
            .map_err(err(Values::Sizes, &self.sizes))?;
        let gens = (0..self.flows)
            .map(|i| {
                let s = FlowSeeds::of(self.seed, i);
                Ok((
                    spec::build(&self.intervals, s.intervals, ival_bounds)
                        .map_err(err(Values::Intervals, &self.intervals))?,
                    spec::build(&self.sizes, s.sizes, size_bounds)
                        .map_err(err(Values::Sizes, &self.sizes))?,
                ))
            })
            .collect::<Result<Vec<_>, SendError>>()?;
        let mut notes = Vec::new();
        if let Some((ivals, sizes)) = gens.first() {
            for (values, spec, g) in [
                (Values::Intervals, &self.intervals, ivals),
                (Values::Sizes, &self.sizes, sizes),
            ] {
                match spec::fit(g) {
                    Fit::Within => {}
                    Fit::Outside(value) if values == Values::Sizes && value > max_size as f64 => {
                        if let Some(e) = egress {
                            return Err(SendError::TooBig {
                                socket: self.socket,
                                spec: spec.to_string(),
                                value,
                                dev: e.route.ifname.clone(),
                                mtu: e.mtu,
                                max: max_size,
                            });
                        }
                        return Err(SendError::Range {
                            values,
                            spec: spec.to_string(),
                            value,
                            bounds: g.bounds(),
                        });
                    }
                    Fit::Outside(value) => {
                        return Err(SendError::Range {
                            values,
                            spec: spec.to_string(),
                            value,
                            bounds: g.bounds(),
                        })
                    }
                    Fit::Clamps { below, above } => {
                        notes.push(clamp_note(values, spec, below, above, g.bounds()))
                    }
                }
            }
        }
        Ok((gens, notes))
    }

    /// Starts every flow; SIGINT and SIGTERM stop them. Every socket is
    /// open (and a packet socket's next hop resolved) before this returns.
    pub fn start(self) -> Result<SendRun, SendError> {
        if let Some(at) = self.start_at_unix_ns {
            check_start_at(at, real_ns(), false)?;
        }
        let egress = match self.socket {
            SocketKind::Udp => None,
            k => Some(
                txpath::egress_of(k, self.flow.target, self.flow.bind)
                    .map_err(|e| self.path_error(self.flow.flow, e))?,
            ),
        };
        let (gens, notes) = self.generators(egress.as_ref())?;
        let paths = self.open_paths()?;
        self.rt.lock_memory()?;
        let mono_to_real = mono_to_real_offset();
        let (epoch, start) = self.epoch_and_start(mono_to_real)?;
        let start_unix_ns = (epoch as i128 + mono_to_real) as u64;
        let log = self.open_record(start_unix_ns)?;
        let stop = super::stop_on_signals().map_err(super::JobFileError::Signals)?;
        let sent = Arc::new(AtomicU64::new(0));
        let info = SenderInfo {
            start_unix_ns,
            interval_ns: spec::mean_of(&self.intervals).map(|m| m.round() as u64),
            late_threshold_ns: None,
        };
        let mut threads = Vec::new();
        for (i, (gens, path)) in gens.into_iter().zip(paths).enumerate() {
            let cfg = FlowConfig {
                flow: self.flow.flow.wrapping_add(i as u32),
                seed: FlowSeeds::of(self.seed, i as u32).flow,
                epoch_mono_ns: Some(epoch),
                start_mono_ns: Some(start),
                mono_to_real,
                ..self.flow.clone()
            };
            let sink = TxSink {
                acc: SendAccum::new(info, cfg.limits.count),
                sent: sent.clone(),
            };
            let logs = (
                log.as_ref().map(|l| l.writer()),
                log.as_ref().filter(|_| cfg.echo).map(|l| l.writer()),
            );
            threads.push(spawn_flow(i, cfg, gens, path, sink, logs, self.rt, &stop));
        }
        Ok(SendRun {
            job: self,
            threads,
            log,
            stop,
            sent,
            notes,
        })
    }

    fn path_error(&self, flow: u32, source: PathError) -> SendError {
        SendError::Path {
            flow,
            target: self.flow.target,
            cause: source,
        }
    }

    /// One socket per flow, each opened (and its next hop resolved) now.
    fn open_paths(&self) -> Result<Vec<TxPath>, SendError> {
        let c = PathConfig {
            kind: self.socket,
            target: self.flow.target,
            bind: self.flow.bind,
            tos: self.flow.tos,
            neigh_timeout: txpath::NEIGH_TIMEOUT,
        };
        (0..self.flows)
            .map(|i| {
                let flow = self.flow.flow.wrapping_add(i);
                TxPath::open(&c).map_err(|e| self.path_error(flow, e))
            })
            .collect()
    }

    /// The run's epoch and first deadline on CLOCK_MONOTONIC: sched_ns
    /// counts from the epoch, START_LEAD_NS before the first deadline; with
    /// --start-at that deadline is the time given.
    fn epoch_and_start(&self, mono_to_real: i128) -> Result<(u64, u64), SendError> {
        Ok(match self.start_at_unix_ns {
            Some(at) => {
                check_start_at(at, real_ns(), true)?;
                let start = (at as i128 - mono_to_real).max(START_LEAD_NS as i128) as u64;
                (start - START_LEAD_NS, start)
            }
            None => {
                let epoch = mono_ns();
                (epoch, epoch + START_LEAD_NS)
            }
        })
    }

    /// `--record`: the sender's record file, its header holding the settings.
    fn open_record(&self, start_unix_ns: u64) -> Result<Option<RecordLog>, SendError> {
        let Some(p) = &self.record else {
            return Ok(None);
        };
        let meta = RecordMeta {
            wirelab_version: env!("CARGO_PKG_VERSION").into(),
            role: "sender".into(),
            host: hostname(),
            clock: "CLOCK_MONOTONIC schedule; tx times CLOCK_REALTIME".into(),
            start_unix_ns,
            config: serde_json::to_value(self.settings()).unwrap_or_default(),
        };
        let log = RecordLog::create(p, Role::Sender, &meta).map_err(|source| {
            super::JobFileError::RecordCreate {
                path: p.clone(),
                cause: source,
            }
        })?;
        Ok(Some(log))
    }
}

/// Starts flow `i`'s thread (pinned and prioritised as `rt` says): its
/// probes through `path`, Tx records to `sink` and `logs.0`, echo replies
/// to `logs.1`.
#[allow(clippy::too_many_arguments)]
fn spawn_flow(
    i: usize,
    cfg: FlowConfig,
    (mut ivals, mut sizes): FlowGenerators,
    path: TxPath,
    mut sink: TxSink,
    (tx_log, reply_log): (Option<RecordWriter>, Option<RecordWriter>),
    rt: RtSetup,
    stop: &StopFlag,
) -> JoinHandle<Result<FlowOutcome, SendError>> {
    let stop = stop.clone();
    std::thread::spawn(move || -> Result<FlowOutcome, SendError> {
        rt.apply_to_thread(i)?;
        let mut next_ival = || ivals.next();
        let mut next_size = || sizes.next();
        let (stats, rtt) = run_flow_on(
            path,
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
            cause: source,
        })?;
        Ok(FlowOutcome {
            stats,
            tx: sink.acc,
            rtt: rtt.0,
            clamped_intervals: ivals.clamped(),
            clamped_sizes: sizes.clamped(),
        })
    })
}

/// A running send job.
pub struct SendRun {
    job: SendJob,
    threads: Vec<JoinHandle<Result<FlowOutcome, SendError>>>,
    log: Option<RecordLog>,
    stop: StopFlag,
    sent: Arc<AtomicU64>,
    notes: Vec<String>,
}

impl SendRun {
    /// What the user should know about the run (values the bounds clamp).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

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
            config: self.job.settings(),
            flows,
            record_log,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_a_byte_or_random() {
        assert_eq!("0".parse(), Ok(Padding::Const(0)));
        assert_eq!("0xff".parse(), Ok(Padding::Const(255)));
        assert_eq!("random".parse(), Ok(Padding::Random));
        for bad in ["256", "0x100", "lots", ""] {
            let e = bad.parse::<Padding>().unwrap_err();
            assert!(e.to_string().contains("0-255"), "{bad}: {e}");
        }
    }

    #[test]
    fn an_absolute_start_may_be_a_millisecond_late_and_a_day_ahead() {
        const T: u64 = 1_795_428_000_000_000_000;
        assert!(check_start_at(T, T - 5, true).is_ok());
        assert!(check_start_at(T, T + START_AT_TOLERANCE_NS, true).is_ok());
        let e = check_start_at(T, T + 2_500_000, false).unwrap_err();
        assert_eq!(e.to_string(), "--start-at is 2 ms in the past");
        let e = check_start_at(T, T + 1_000_001, true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--start-at is 1 ms in the past once the flows were set up"
        );
        assert!(check_start_at(T + START_AT_MAX_AHEAD_NS, T, false).is_ok());
        let e = check_start_at(T + START_AT_MAX_AHEAD_NS + 1, T, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--start-at is 24.0 h ahead; at most 24 h are allowed"
        );
        // Far in the past or far ahead: no overflow.
        assert!(check_start_at(0, u64::MAX, false).is_err());
        assert!(check_start_at(u64::MAX, 0, false).is_err());
    }

    #[test]
    fn a_size_a_raw_socket_cannot_carry_names_the_mtu_and_the_largest() {
        let e = SendError::TooBig {
            socket: SocketKind::Packet,
            spec: "const:9000".into(),
            value: 9000.0,
            dev: "eth1".into(),
            mtu: 1500,
            max: 1472,
        };
        assert_eq!(
            e.to_string(),
            "const:9000: --socket packet cannot carry a payload of 9000 bytes: the MTU of eth1 is 1500, so the largest is 1472 bytes (raw and packet sockets do not fragment)"
        );
    }

    #[test]
    fn out_of_bounds_values_name_the_range_and_why() {
        let e = SendError::Range {
            values: Values::Sizes,
            spec: "const:70000".into(),
            value: 70000.0,
            bounds: Bounds::new(24.0, MAX_PAYLOAD as f64).unwrap(),
        };
        assert_eq!(
            e.to_string(),
            "const:70000: a size of 70000 bytes is outside 24..=65507 (from the probe header up to the largest UDP payload over IPv4)"
        );
        let spec = GenSpec::parse("exp:30000", wirelab_core::gen::SpecUnit::Bytes).unwrap();
        let n = clamp_note(
            Values::Sizes,
            &spec,
            0.0008,
            0.1128,
            Bounds::new(24.0, 65507.0).unwrap(),
        );
        assert_eq!(
            n,
            "sizes exp:30000: about 11.3% lie above 65507 bytes and are sent as 65507 bytes (counted as clamped in the summary)"
        );
    }
}
