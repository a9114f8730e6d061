//! The recv job: the receiver (or reflector) on the calling thread, live
//! per-flow statistics, optional NIC stamping and record file, and the
//! `wirelab.recv/1` report.

use super::rt::RtSetup;
use crate::receiver::{Receiver, RecvConfig, RecvCounters, RecvOutcome, RxSink};
use crate::recordlog::{hostname, LogStats, RecordLog, RecordMeta};
use crate::{ProbeFormat, StopFlag};
use serde::Serialize;
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_analysis::schema::{HwStampReport, RecvReport};
use wirelab_analysis::status::LiveLoss;
use wirelab_analysis::LiveFlows;
use wirelab_io::clock::real_ns;
use wirelab_io::hwtstamp::{HwTsError, RxHwStamping};
use wirelab_io::rt::RtError;
use wirelab_wire::record::{Record, Role};

/// The report of a recv job.
pub type RecvJobReport = RecvReport<RecvOutcome, LogStats>;

/// How often the progress callback runs.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug, Error)]
pub enum RecvError {
    #[error(transparent)]
    Rt(#[from] RtError),
    #[error("cannot bind {addr}: {cause}")]
    Bind { addr: SocketAddr, cause: io::Error },
    #[error(transparent)]
    HwStamping(#[from] HwTsError),
    #[error(transparent)]
    Files(#[from] super::JobFileError),
    #[error("receiving: {0}")]
    Io(io::Error),
}

// Not `#[from]`: that would also make it the source, and the message already prints it.
impl From<io::Error> for RecvError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// The receiver's settings as given, kept in its record file's metadata.
#[derive(Debug, Clone, Serialize)]
pub struct RecvSettings {
    /// Receive buffer asked for, bytes.
    pub rcvbuf: u64,
    pub batch: u16,
    pub busy_poll_us: u32,
}

/// A receive run.
pub struct RecvJob {
    pub recv: RecvConfig,
    pub rt: RtSetup,
    /// Throughput window of the live statistics.
    pub window_ns: u64,
    /// Most flows the live statistics track; probes of others are counted.
    pub max_flows: usize,
    pub record: Option<PathBuf>,
    /// Stamp received packets with this interface's hardware clock.
    pub hw_timestamps: Option<String>,
    /// Rewrite this file with the loss so far (`wirelab.recv.status/1`)
    /// at bind, with every progress tick and at the end.
    pub status: Option<PathBuf>,
    pub settings: RecvSettings,
}

#[derive(Serialize)]
struct RecordConfig<'a> {
    bind: String,
    echo: bool,
    rcvbuf: u64,
    batch: u16,
    busy_poll_us: u32,
    hw_timestamps: &'a Option<String>,
    format: ProbeFormat,
}

impl RecvJob {
    /// Sets up the calling thread, binds, and enables stamping and the
    /// record file; SIGINT and SIGTERM stop the run.
    pub fn bind(self) -> Result<RecvRun, RecvError> {
        self.rt.lock_memory()?;
        self.rt.apply_to_thread(0)?;
        let addr = self.recv.bind;
        let rx = Receiver::bind(self.recv.clone()).map_err(|source| RecvError::Bind {
            addr,
            cause: source,
        })?;
        let local = rx.local_addr()?;
        // Held until the end: dropping it restores the NIC's stamping setting.
        let hw = match &self.hw_timestamps {
            Some(ifname) => Some(RxHwStamping::enable(ifname)?),
            None => None,
        };
        let clock = match &hw {
            Some(h) => format!(
                "rx times from the hardware clock of {} (PHC {}) where stamped, else CLOCK_REALTIME",
                h.interface(),
                h.info.phc_index.map_or("-".into(), |i| format!("/dev/ptp{i}"))
            ),
            None => format!(
                "rx times CLOCK_REALTIME, {} timestamps",
                rx.timestamp_mode().as_str()
            ),
        };
        let log = match &self.record {
            Some(p) => {
                let config = RecordConfig {
                    bind: local.to_string(),
                    echo: self.recv.echo,
                    rcvbuf: self.settings.rcvbuf,
                    batch: self.settings.batch,
                    busy_poll_us: self.settings.busy_poll_us,
                    hw_timestamps: &self.hw_timestamps,
                    format: self.recv.format,
                };
                let meta = RecordMeta {
                    wirelab_version: env!("CARGO_PKG_VERSION").into(),
                    role: if self.recv.echo {
                        "reflector"
                    } else {
                        "receiver"
                    }
                    .into(),
                    host: hostname(),
                    clock: clock.clone(),
                    start_unix_ns: real_ns(),
                    config: serde_json::to_value(&config).unwrap_or_default(),
                };
                Some(
                    RecordLog::create(p, Role::Receiver, &meta).map_err(|source| {
                        super::JobFileError::RecordCreate {
                            path: p.clone(),
                            cause: source,
                        }
                    })?,
                )
            }
            None => None,
        };
        let stop = super::stop_on_signals().map_err(super::JobFileError::Signals)?;
        let status = match self.status {
            Some(path) => {
                let s = StatusFile {
                    path,
                    loss: LiveLoss::new(self.max_flows),
                    failed: None,
                };
                s.write(false)
                    .map_err(|source| super::JobFileError::Status {
                        path: s.path.clone(),
                        cause: source,
                    })?;
                Some(s)
            }
            None => None,
        };
        Ok(RecvRun {
            echo: self.recv.echo,
            status,
            flows: LiveFlows::new(self.window_ns, self.max_flows),
            rx,
            local,
            hw,
            clock,
            log,
            stop,
        })
    }
}

/// A bound receiver, ready to run.
pub struct RecvRun {
    echo: bool,
    status: Option<StatusFile>,
    rx: Receiver,
    local: SocketAddr,
    flows: LiveFlows,
    hw: Option<RxHwStamping>,
    clock: String,
    log: Option<RecordLog>,
    stop: StopFlag,
}

/// Progress lines from the live counters, with the packet rate since the
/// previous line.
#[derive(Debug, Default)]
pub struct ProgressLine {
    last: Option<(u64, Instant)>,
}

impl ProgressLine {
    pub fn line(&mut self, c: &RecvCounters) -> String {
        let now = Instant::now();
        let (n0, t0) = self.last.unwrap_or((0, now));
        let rate = c.packets.saturating_sub(n0) as f64 / (now - t0).as_secs_f64().max(1e-3);
        self.last = Some((c.packets, now));
        format!(
            "{} packets, {rate:.0} pps, {} flow(s) ({} ended), {} kernel drops, {} not probes, wait {}",
            c.packets, c.flows, c.flows_ended, c.kernel_drops, c.malformed, c.wait_mode
        )
    }
}

/// The live statistics, and the status file's loss when there is one (a
/// receiver without `--status` pays nothing for it).
struct Live<'a>(&'a mut LiveFlows, Option<&'a RefCell<StatusFile>>);

impl RxSink for Live<'_> {
    fn packet(&mut self, r: &Record) {
        self.0.observe(r);
        if let Some(s) = self.1 {
            s.borrow_mut().loss.observe(r);
        }
    }
}

/// `--status`: the live loss, rewritten whole (write, then rename, so a
/// reader never sees half a file).
struct StatusFile {
    path: PathBuf,
    loss: LiveLoss,
    /// The first failed rewrite after the one at bind.
    failed: Option<io::Error>,
}

impl StatusFile {
    fn write(&self, done: bool) -> io::Result<()> {
        let json = serde_json::to_vec(&self.loss.status(done)).map_err(io::Error::other)?;
        Ok(wirelab_io::atomic::write(&self.path, &json)?)
    }

    fn update(&mut self, done: bool) {
        if let Err(e) = self.write(done) {
            self.failed.get_or_insert(e);
        }
    }
}

impl RecvRun {
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The receive timestamping in use ("kernel (SO_TIMESTAMPING)", ...).
    pub fn timestamping(&self) -> &'static str {
        self.rx.timestamp_mode().as_str()
    }

    /// Where it listens, how it stamps, whether it reflects.
    pub fn banner(&self) -> String {
        format!(
            "wirelab recv: listening on {} ({}{}), Ctrl-C to stop",
            self.local,
            self.timestamping(),
            if self.echo {
                ", reflecting echo requests"
            } else {
                ""
            }
        )
    }

    /// Receives until an end condition; `progress` sees the live counters
    /// about every 250 ms.
    pub fn run(
        mut self,
        progress: &mut dyn FnMut(&RecvCounters),
    ) -> Result<RecvJobReport, RecvError> {
        let mut writer = self.log.as_ref().map(|l| l.writer());
        let status = self.status.take().map(RefCell::new);
        let mut tick = |c: &RecvCounters| {
            progress(c);
            if let Some(s) = &status {
                s.borrow_mut().update(false);
            }
        };
        let out = self.rx.run(
            &mut Live(&mut self.flows, status.as_ref()),
            writer.as_mut(),
            &self.stop,
            &mut tick,
            PROGRESS_EVERY,
        );
        if let Some(s) = &status {
            let mut s = s.borrow_mut();
            s.update(true);
            if let Some(e) = &s.failed {
                tracing::warn!("rewriting the status file {}: {e}", s.path.display());
            }
        }
        let out = out?;
        drop(writer);
        let record_log = match self.log {
            Some(l) => Some(l.finish().map_err(super::JobFileError::RecordFinish)?),
            None => None,
        };
        let hw = self.hw.as_ref().map(|h| HwStampReport {
            interface: h.interface().to_string(),
            phc_index: h.info.phc_index,
            rx_filter: h.applied.rx_filter,
            changed_config: h.changed_config(),
            stamped_packets: out.counters.hw_timestamps,
        });
        drop(self.hw);
        Ok(RecvReport::new(
            out,
            self.flows.finish(),
            record_log,
            hw,
            self.clock,
        ))
    }
}
