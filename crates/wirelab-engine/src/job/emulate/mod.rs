//! The `emulate` job: a layer-2 bridge between two interfaces, one
//! forwarding thread per direction, each with its own link model.

mod report;

use super::rt::RtSetup;
use crate::emulate::mmlog::{MmLogFile, MmLogHandle, MmLogged};
use crate::emulate::DirModel;
use crate::emulate::{
    forward, ForwardConfig, ForwardStats, LinkModel, LiveDir, Outputs, Recorded, Tap,
};
use crate::recordlog::{hostname, RecordLog, RecordMeta};
use crate::StopFlag;
use report::dir_report;
pub use report::{DecisionReport, DirReport, EmulateReport, RuleReport};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_io::bpf::{BpfError, BpfProgram};
use wirelab_io::clock::{mono_ns, mono_to_real_offset, real_ns};
use wirelab_io::ifstats::IfInfo;
use wirelab_io::packet_sock::{PacketError, PacketSocket};
use wirelab_io::ring_frames::{FrameRing, FrameRingConfig, FrameRingStats};
use wirelab_io::rt::RtError;
use wirelab_io::MonoClock;
use wirelab_wire::ethernet::{HEADER_BYTES, VLAN_TAG_BYTES};
use wirelab_wire::record::Role;

/// Why the emulator could not start or went on.
#[derive(Debug, Error)]
pub enum EmulateError {
    #[error("interface {ifname}: {cause}")]
    Interface {
        ifname: String,
        cause: std::io::Error,
    },
    #[error("--a and --b name the same interface ({0}): a bridge joins two")]
    SameInterface(String),
    #[error(transparent)]
    Ring(#[from] wirelab_io::ring_rx::RingError),
    #[error(transparent)]
    Socket(#[from] PacketError),
    #[error(transparent)]
    Filter(#[from] BpfError),
    #[error(transparent)]
    Rt(#[from] RtError),
    #[error("{dir}: {cause}")]
    Forward {
        dir: &'static str,
        cause: std::io::Error,
    },
    #[error("{0} forwarding thread panicked")]
    Panicked(&'static str),
    #[error("--ctl {0}")]
    Ctl(crate::emulate::ctl::CtlError),
    #[error("cannot create {what} {path}: {cause}", path = path.display())]
    Create {
        what: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
}

// Not `#[from]`: that would also make it the source, and the message already prints it.
impl From<crate::emulate::ctl::CtlError> for EmulateError {
    fn from(e: crate::emulate::ctl::CtlError) -> Self {
        Self::Ctl(e)
    }
}

/// The emulator's configuration: the two interfaces and a model per
/// direction.
pub struct EmulateJob<M> {
    pub a: String,
    pub b: String,
    /// From `a` to `b`.
    pub a2b: M,
    /// From `b` to `a`.
    pub b2a: M,
    /// Receive ring slots per direction.
    pub ring_frames: u32,
    /// Stop after this long (else on SIGINT/SIGTERM or `stop`).
    pub duration: Option<Duration>,
    /// Spin margin before a deadline; learned from the sleeps when `learn`.
    pub spin_ns: u64,
    pub learn: bool,
    /// Pinning (thread 0 = a→b, 1 = b→a), SCHED_FIFO, mlockall.
    pub rt: RtSetup,
    /// Counters for a live display (a→b, b→a).
    pub live: [Arc<LiveDir>; 2],
    /// The per-copy log (`--log`) and the configuration for its header.
    pub log: Option<(PathBuf, serde_json::Value)>,
    /// The pcapng tap (`--tap`).
    pub tap: Option<PathBuf>,
    /// Runtime control of the rules (`--ctl`).
    pub ctl: Option<crate::emulate::ctl::CtlSetup>,
    /// Mahimahi-compatible logs (`--mm-log`).
    pub mm_log: Option<MmLogSetup>,
}

/// `--mm-log DIR`: `DIR/a2b.log` and `DIR/b2a.log` (DIR is created).
pub struct MmLogSetup {
    pub dir: PathBuf,
    /// For the header (`# command line: ...`).
    pub command_line: String,
    /// Each direction's title in the header (a2b, b2a).
    pub titles: [String; 2],
}

/// One direction's outcome; `model` is handed back for its counters.
pub struct DirectionRun<M> {
    pub forward: ForwardStats,
    pub ring: FrameRingStats,
    pub model: M,
    /// Frames written to the tap, or why the tap stopped.
    pub tap: Option<io::Result<u64>>,
}

/// A file the run wrote beside forwarding.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileOutcome {
    pub path: PathBuf,
    /// Records (log) or frames (tap) in it.
    pub count: u64,
    /// It stopped on this error (the run went on).
    pub error: Option<String>,
}

/// What the job did.
pub struct EmulateRun<M> {
    pub a: IfInfo,
    pub b: IfInfo,
    pub duration: Duration,
    pub a2b: DirectionRun<M>,
    pub b2a: DirectionRun<M>,
    pub log: Option<FileOutcome>,
    pub tap: Option<FileOutcome>,
    /// `--mm-log`: a2b then b2a.
    pub mm_log: Vec<MmLogged>,
}

struct Side {
    ring: FrameRing,
    out: PacketSocket,
}

fn open_side(from: &str, to: &str, frames: u32) -> Result<Side, EmulateError> {
    let info = IfInfo::lookup(from).map_err(|source| EmulateError::Interface {
        ifname: from.into(),
        cause: source,
    })?;
    let max_frame = info.mtu + (HEADER_BYTES + VLAN_TAG_BYTES) as u32;
    let filter = BpfProgram::compile("", 1, max_frame)?;
    let ring = FrameRing::open(
        from,
        &FrameRingConfig {
            frames,
            max_frame,
            promisc: true,
        },
        &filter,
    )?;
    let out = PacketSocket::open(to, true)?;
    out.set_send_buffer(4 << 20);
    Ok(Side { ring, out })
}

impl<M: LinkModel + Send + 'static> EmulateJob<M> {
    /// Runs until `stop` (or the duration), then returns both directions'
    /// counters.
    pub fn run(self, stop: &StopFlag) -> Result<EmulateRun<M>, EmulateError> {
        if self.a == self.b {
            return Err(EmulateError::SameInterface(self.a));
        }
        let a_info = lookup(&self.a)?;
        let b_info = lookup(&self.b)?;
        let ab = open_side(&self.a, &self.b, self.ring_frames)?;
        let ba = open_side(&self.b, &self.a, self.ring_frames)?;
        self.rt.lock_memory()?;
        let real_to_mono = -mono_to_real_offset();
        let log = open_log(self.log.as_ref())?;
        let tap = match &self.tap {
            Some(p) => Some((
                p.clone(),
                Tap::create(p, &self.a, &self.b).map_err(|source| EmulateError::Create {
                    what: "tap",
                    path: p.clone(),
                    cause: source,
                })?,
            )),
            None => None,
        };
        let mm_files = match &self.mm_log {
            Some(m) => open_mm_logs(m, real_to_mono)?,
            None => Vec::new(),
        };
        let (mut a2b_model, mut b2a_model) = (self.a2b, self.b2a);
        if let [fa, fb] = &mm_files[..] {
            a2b_model.set_opportunity_log(fa.opportunity_logs());
            b2a_model.set_opportunity_log(fb.opportunity_logs());
        }
        let ctl = match self.ctl {
            Some(setup) => Some(crate::emulate::ctl::CtlServer::start(setup)?),
            None => None,
        };
        let started = Instant::now();
        let shared = Shared {
            stop,
            rt: self.rt,
            live: &self.live,
            forward: ForwardConfig {
                real_to_mono,
                spin_ns: self.spin_ns,
                learn: self.learn,
                ..ForwardConfig::default()
            },
            log: log.as_ref().map(|l| &l.1),
            tap: tap.as_ref().map(|t| &t.1),
            mm: mm_files.iter().map(MmLogFile::handle).collect(),
        };
        let t_ab = shared.spawn("a2b", 0, ab, a2b_model)?;
        let t_ba = shared.spawn("b2a", 1, ba, b2a_model)?;
        while !stop.is_stopped() {
            if self.duration.is_some_and(|d| started.elapsed() >= d) {
                stop.stop();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let a2b = t_ab.join().map_err(|_| EmulateError::Panicked("a2b"))??;
        let b2a = t_ba.join().map_err(|_| EmulateError::Panicked("b2a"))??;
        let duration = started.elapsed();
        if let Some(c) = ctl {
            c.finish();
        }
        let dirs = [&a2b, &b2a];
        let log = log.map(|(path, log)| finish_log(path, log, dirs));
        let tap = tap.map(|(path, tap)| finish_tap(path, tap, dirs));
        let mm_log = mm_files
            .into_iter()
            .zip(["a2b", "b2a"])
            .map(|(f, d)| f.finish(d))
            .collect();
        Ok(EmulateRun {
            a: a_info,
            b: b_info,
            duration,
            a2b,
            b2a,
            log,
            tap,
            mm_log,
        })
    }
}

fn lookup(ifname: &str) -> Result<IfInfo, EmulateError> {
    IfInfo::lookup(ifname).map_err(|source| EmulateError::Interface {
        ifname: ifname.into(),
        cause: source,
    })
}

/// `--log`: the per-copy record file, its header naming the clocks.
fn open_log(
    log: Option<&(PathBuf, serde_json::Value)>,
) -> Result<Option<(PathBuf, RecordLog)>, EmulateError> {
    let Some((path, config)) = log else {
        return Ok(None);
    };
    let meta = RecordMeta {
        wirelab_version: env!("CARGO_PKG_VERSION").into(),
        role: "emulate".into(),
        host: hostname(),
        clock: "rx_ns kernel receive stamp, sched_ns deadline, tx_ns just before \
                the send call; CLOCK_REALTIME ns (deadlines and departures taken on \
                CLOCK_MONOTONIC, shifted by one offset)"
            .into(),
        start_unix_ns: real_ns(),
        config: config.clone(),
    };
    let log =
        RecordLog::create(path, Role::Sender, &meta).map_err(|source| EmulateError::Create {
            what: "log",
            path: path.clone(),
            cause: source,
        })?;
    Ok(Some((path.clone(), log)))
}

/// `--mm-log DIR`: the directory and a file per direction (a2b, b2a), their
/// times from one origin.
fn open_mm_logs(m: &MmLogSetup, real_to_mono: i128) -> Result<Vec<MmLogFile>, EmulateError> {
    let create = |path: PathBuf, e| EmulateError::Create {
        what: "mm-log",
        path,
        cause: e,
    };
    std::fs::create_dir_all(&m.dir).map_err(|e| create(m.dir.clone(), e))?;
    let origin = mono_ns();
    let init_ms = ((i128::from(origin) - real_to_mono).max(0) / 1_000_000) as u64;
    let mut files = Vec::new();
    for (name, title) in ["a2b", "b2a"].iter().zip(&m.titles) {
        let p = m.dir.join(format!("{name}.log"));
        let f = MmLogFile::create(&p, title, &m.command_line, origin, init_ms)
            .map_err(|e| create(p.clone(), e))?;
        files.push(f);
    }
    Ok(files)
}

/// What both forwarding threads share.
struct Shared<'a> {
    stop: &'a StopFlag,
    rt: RtSetup,
    live: &'a [Arc<LiveDir>; 2],
    /// The settings both directions forward with (`direction` set per thread).
    forward: ForwardConfig,
    log: Option<&'a RecordLog>,
    tap: Option<&'a Tap>,
    mm: Vec<MmLogHandle>,
}

impl Shared<'_> {
    /// Starts direction `index`'s forwarding thread (`name`: a2b or b2a),
    /// pinned and prioritised as `rt` says. A failed direction stops the
    /// other.
    fn spawn<M: LinkModel + Send + 'static>(
        &self,
        name: &'static str,
        index: u8,
        mut side: Side,
        mut model: M,
    ) -> Result<JoinHandle<Result<DirectionRun<M>, EmulateError>>, EmulateError> {
        let stop = self.stop.clone();
        let rt = self.rt;
        let live = self.live[usize::from(index)].clone();
        let cfg = ForwardConfig {
            direction: index,
            ..self.forward
        };
        let mut log_w = self.log.map(RecordLog::writer);
        let mut tap_w = self.tap.map(|t| t.writer(index));
        let mm = self.mm.get(usize::from(index)).cloned();
        std::thread::Builder::new()
            .name(format!("emulate-{name}"))
            .spawn(move || {
                let r = rt
                    .apply_to_thread(usize::from(index))
                    .map_err(EmulateError::from)
                    .and_then(|()| {
                        forward(
                            &cfg,
                            &mut MonoClock,
                            &mut side.ring,
                            &mut side.out,
                            &mut model,
                            &stop,
                            Outputs {
                                live: Some(&live),
                                log: log_w.as_mut(),
                                tap: tap_w.as_mut(),
                                mm,
                            },
                        )
                        .map_err(|source| EmulateError::Forward {
                            dir: name,
                            cause: source,
                        })
                    });
                if r.is_err() {
                    stop.stop();
                }
                let ring = side.ring.stats().unwrap_or_default();
                let tap = tap_w.map(|t| t.close());
                r.map(|forward| DirectionRun {
                    forward,
                    ring,
                    model,
                    tap,
                })
            })
            .map_err(|source| EmulateError::Forward {
                dir: name,
                cause: source,
            })
    }
}

/// The log's outcome: its records, and the first error a direction hit
/// writing it (else the one closing it).
fn finish_log<M>(path: PathBuf, log: RecordLog, dirs: [&DirectionRun<M>; 2]) -> FileOutcome {
    let first = dirs.iter().find_map(|d| d.forward.log_error.clone());
    match log.finish() {
        Ok(st) => FileOutcome {
            path,
            count: st.records,
            error: first,
        },
        Err(e) => FileOutcome {
            path,
            count: 0,
            error: Some(first.unwrap_or_else(|| e.to_string())),
        },
    }
}

/// The tap's outcome: frames from both directions, and the first error.
fn finish_tap<M>(path: PathBuf, tap: Tap, dirs: [&DirectionRun<M>; 2]) -> FileOutcome {
    let mut count = 0;
    let mut error = None;
    for d in dirs {
        match &d.tap {
            Some(Ok(n)) => count += n,
            Some(Err(e)) => error = error.or_else(|| Some(e.to_string())),
            None => {}
        }
    }
    if let Err(e) = tap.finish() {
        error = error.or(Some(e.to_string()));
    }
    FileOutcome { path, count, error }
}

impl EmulateRun<DirModel> {
    /// Ends the decision traces (`--record-decisions`) of both directions.
    pub fn finish_recording(&mut self) -> Vec<(&'static str, Recorded)> {
        let mut v: Vec<_> = self
            .a2b
            .model
            .finish_recording()
            .into_iter()
            .map(|r| ("a2b", r))
            .collect();
        v.extend(
            self.b2a
                .model
                .finish_recording()
                .into_iter()
                .map(|r| ("b2a", r)),
        );
        v
    }

    /// The typed report (`wirelab.emulate/1`); `decisions` from
    /// [`EmulateRun::finish_recording`].
    pub fn report<'a>(&'a self, decisions: &'a [(&'static str, Recorded)]) -> EmulateReport<'a> {
        EmulateReport {
            schema: "wirelab.emulate/1",
            a: &self.a.name,
            b: &self.b.name,
            duration_ns: self.duration.as_nanos() as u64,
            a2b: dir_report(&self.a2b),
            b2a: dir_report(&self.b2a),
            log: self.log.as_ref(),
            tap: self.tap.as_ref(),
            mm_log: &self.mm_log,
            decisions: decisions
                .iter()
                .map(|(d, r)| DecisionReport {
                    direction: d,
                    rule: r.rule,
                    path: &r.path,
                    records: r.records,
                    error: r.error.as_deref(),
                })
                .collect(),
        }
    }
}
