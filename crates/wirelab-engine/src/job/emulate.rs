//! The `emulate` job: a layer-2 bridge between two interfaces, one
//! forwarding thread per direction, each with its own link model.

use super::rt::RtSetup;
use crate::emulate::forward::Bucket;
use crate::emulate::mmlog::{MmLogFile, MmLogged};
use crate::emulate::rules::fate_of;
use crate::emulate::{
    forward, Drops, ForwardConfig, ForwardStats, LinkModel, LiveDir, Outputs, Recorded, Tap,
};
use crate::emulate::{DirModel, RuleLink};
use crate::recordlog::{hostname, RecordLog, RecordMeta};
use crate::StopFlag;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_analysis::DelayStats;
use wirelab_io::bpf::{BpfError, BpfProgram};
use wirelab_io::clock::{mono_ns, mono_to_real_offset, real_ns};
use wirelab_io::ifstats::IfInfo;
use wirelab_io::packet_sock::{PacketError, PacketSocket};
use wirelab_io::ring_frames::{FrameRing, FrameRingConfig, FrameRingStats};
use wirelab_io::rt::RtError;
use wirelab_io::MonoClock;
use wirelab_link::DropReason;
use wirelab_wire::ethernet::{HEADER_BYTES, VLAN_TAG_BYTES};
use wirelab_wire::record::EmuFate;
use wirelab_wire::record::Role;

/// Why the emulator could not start or went on.
#[derive(Debug, Error)]
pub enum EmulateError {
    #[error("interface {ifname}: {source}")]
    Interface {
        ifname: String,
        source: std::io::Error,
    },
    #[error("--a and --b name the same interface ({0}): a bridge joins two")]
    SameInterface(String),
    #[error("{0}")]
    Ring(#[from] wirelab_io::ring_rx::RingError),
    #[error("{0}")]
    Socket(#[from] PacketError),
    #[error("{0}")]
    Filter(#[from] BpfError),
    #[error("{0}")]
    Rt(#[from] RtError),
    #[error("{dir}: {source}")]
    Forward {
        dir: &'static str,
        source: std::io::Error,
    },
    #[error("{0} forwarding thread panicked")]
    Panicked(&'static str),
    #[error("--ctl {0}")]
    Ctl(#[from] crate::emulate::ctl::CtlError),
    #[error("cannot create {what} {path}: {source}", path = path.display())]
    Create {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
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
    pub tap: Option<Result<u64, String>>,
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
        source,
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
        let a_info = IfInfo::lookup(&self.a).map_err(|source| EmulateError::Interface {
            ifname: self.a.clone(),
            source,
        })?;
        let b_info = IfInfo::lookup(&self.b).map_err(|source| EmulateError::Interface {
            ifname: self.b.clone(),
            source,
        })?;
        let ab = open_side(&self.a, &self.b, self.ring_frames)?;
        let ba = open_side(&self.b, &self.a, self.ring_frames)?;
        self.rt.lock_memory()?;
        let real_to_mono = -mono_to_real_offset();
        let log = match &self.log {
            Some((path, config)) => {
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
                let log = RecordLog::create(path, Role::Sender, &meta).map_err(|source| {
                    EmulateError::Create {
                        what: "log",
                        path: path.clone(),
                        source,
                    }
                })?;
                Some((path.clone(), log))
            }
            None => None,
        };
        let tap = match &self.tap {
            Some(p) => Some((
                p.clone(),
                Tap::create(p, &self.a, &self.b).map_err(|source| EmulateError::Create {
                    what: "tap",
                    path: p.clone(),
                    source,
                })?,
            )),
            None => None,
        };
        let mut mm_files = Vec::new();
        if let Some(m) = &self.mm_log {
            let create = |path: PathBuf, e| EmulateError::Create {
                what: "mm-log",
                path,
                source: e,
            };
            std::fs::create_dir_all(&m.dir).map_err(|e| create(m.dir.clone(), e))?;
            let origin = mono_ns();
            let init_ms = ((i128::from(origin) - real_to_mono).max(0) / 1_000_000) as u64;
            for (name, title) in ["a2b", "b2a"].iter().zip(&m.titles) {
                let p = m.dir.join(format!("{name}.log"));
                let f = MmLogFile::create(&p, title, &m.command_line, origin, init_ms)
                    .map_err(|e| create(p.clone(), e))?;
                mm_files.push(f);
            }
        }
        let (mut a2b_model, mut b2a_model) = (self.a2b, self.b2a);
        let mm_handles: Vec<_> = mm_files.iter().map(MmLogFile::handle).collect();
        if let [fa, fb] = &mm_files[..] {
            a2b_model.set_opportunity_log(fa.opportunity_logs());
            b2a_model.set_opportunity_log(fb.opportunity_logs());
        }
        let ctl = match self.ctl {
            Some(setup) => Some(crate::emulate::ctl::CtlServer::start(setup)?),
            None => None,
        };
        let started = Instant::now();
        let spawn = |name: &'static str, index: u8, mut side: Side, mut model: M| {
            let stop = stop.clone();
            let rt = self.rt;
            let live = self.live[usize::from(index)].clone();
            let cfg = ForwardConfig {
                real_to_mono,
                spin_ns: self.spin_ns,
                learn: self.learn,
                direction: index,
                ..ForwardConfig::default()
            };
            let mut log_w = log.as_ref().map(|l| l.1.writer());
            let mut tap_w = tap.as_ref().map(|t| t.1.writer(index));
            let mm = mm_handles.get(usize::from(index)).cloned();
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
                            .map_err(|source| EmulateError::Forward { dir: name, source })
                        });
                    // A failed direction stops the other.
                    if r.is_err() {
                        stop.stop();
                    }
                    let ring = side.ring.stats().unwrap_or_default();
                    let tap = tap_w.map(|t| t.close().map_err(|e| e.to_string()));
                    r.map(|forward| DirectionRun {
                        forward,
                        ring,
                        model,
                        tap,
                    })
                })
        };
        let t_ab = spawn("a2b", 0, ab, a2b_model)
            .map_err(|source| EmulateError::Forward { dir: "a2b", source })?;
        let t_ba = spawn("b2a", 1, ba, b2a_model)
            .map_err(|source| EmulateError::Forward { dir: "b2a", source })?;
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
        let log = log.map(|(path, log)| {
            let first = [&a2b, &b2a]
                .iter()
                .find_map(|d| d.forward.log_error.clone());
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
        });
        let tap = tap.map(|(path, tap)| {
            let mut count = 0;
            let mut error = None;
            for d in [&a2b, &b2a] {
                match &d.tap {
                    Some(Ok(n)) => count += n,
                    Some(Err(e)) => error = error.or(Some(e.clone())),
                    None => {}
                }
            }
            if let Err(e) = tap.finish() {
                error = error.or(Some(e.to_string()));
            }
            FileOutcome { path, count, error }
        });
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

/// `wirelab.emulate/1`.
#[derive(serde::Serialize)]
pub struct EmulateReport<'a> {
    pub schema: &'static str,
    pub a: &'a str,
    pub b: &'a str,
    pub duration_ns: u64,
    pub a2b: DirReport<'a>,
    pub b2a: DirReport<'a>,
    /// `--log`: records written.
    pub log: Option<&'a FileOutcome>,
    /// `--tap`: frames written.
    pub tap: Option<&'a FileOutcome>,
    /// `--mm-log`: per direction its path and event lines (empty without).
    pub mm_log: &'a [MmLogged],
    /// `--record-decisions`: one trace per rule and direction with stages.
    pub decisions: Vec<DecisionReport<'a>>,
}

/// One decision trace written.
#[derive(serde::Serialize)]
pub struct DecisionReport<'a> {
    pub direction: &'static str,
    pub rule: u32,
    pub path: &'a std::path::Path,
    pub records: u64,
    pub error: Option<&'a str>,
}

#[derive(serde::Serialize)]
pub struct DirReport<'a> {
    /// The default stages (frames no rule took).
    pub stages: &'a str,
    pub seed: u64,
    /// Frames read, copies sent.
    pub received: u64,
    pub sent: u64,
    /// Their bytes (L2 frame lengths).
    pub received_bytes: u64,
    pub sent_bytes: u64,
    /// Copies made beyond the original; copies sent with a bit flipped.
    pub duplicates: u64,
    pub corrupted: u64,
    /// Copies not sent, by reason (`ring`: frames the kernel dropped in
    /// front of the emulator). `received + duplicates = sent + dropped`
    /// (without `ring`).
    pub dropped: Drops,
    /// The same as `dropped.get(EmuFate::SendFailure)` and `dropped.ring`.
    pub send_failures: u64,
    pub ring_drops: u64,
    /// The default stages' link model counters.
    pub link: &'a wirelab_link::LinkCounters,
    /// Departure minus deadline.
    pub lateness: DelayStats,
    pub lateness_buckets: &'a [Bucket],
    pub early: u64,
    /// The rules of this direction, in matching order.
    pub rules: Vec<RuleReport<'a>>,
    /// Rules updated or removed at run time (`ctl`), with their counters
    /// until then.
    pub ended_rules: &'a [crate::emulate::ctl::RuleState],
}

/// One rule in one direction.
#[derive(serde::Serialize)]
pub struct RuleReport<'a> {
    pub rule: u32,
    pub filter: &'a str,
    pub stages: &'a str,
    pub seed: u64,
    /// Frames the rule took.
    pub frames: u64,
    /// Copies still queued when the run stopped.
    pub unsent: u64,
    /// Its link model's counters.
    pub link: &'a wirelab_link::LinkCounters,
}

fn dir_report(r: &DirectionRun<DirModel>) -> DirReport<'_> {
    let f = &r.forward;
    let mut dropped = f.dropped;
    dropped.ring = r.ring.drops;
    let d = r.model.default_link();
    DirReport {
        stages: &d.stages,
        seed: d.seed,
        received: f.received,
        sent: f.sent,
        received_bytes: f.received_bytes,
        sent_bytes: f.sent_bytes,
        duplicates: f.duplicates,
        corrupted: f.corrupted,
        dropped,
        send_failures: dropped.get(EmuFate::SendFailure),
        ring_drops: dropped.ring,
        link: d.link.counters(),
        lateness: f.lateness,
        lateness_buckets: &f.lateness_buckets,
        early: f.early,
        rules: r.model.rules().iter().map(rule_report).collect(),
        ended_rules: r.model.ended_rules(),
    }
}

fn rule_report(l: &RuleLink) -> RuleReport<'_> {
    RuleReport {
        rule: l.rule,
        filter: l.filter.as_ref().map_or("", BpfProgram::expr),
        stages: &l.stages,
        seed: l.seed,
        frames: l.frames(),
        unsent: l.unsent,
        link: l.link.counters(),
    }
}

/// "dropped 53 (loss 50, limit 3)" or "dropped 0".
fn drops_text(d: &Drops) -> String {
    let why: Vec<String> = d
        .by_reason()
        .filter(|r| r.1 > 0)
        .map(|(n, v)| format!("{} {v}", n.replace('_', " ")))
        .collect();
    if why.is_empty() {
        "dropped 0".into()
    } else {
        format!("dropped {} ({})", d.total(), why.join(", "))
    }
}

/// The link model's drops as the copies' fates count them (`--json` has
/// the model's own split, e.g. AQM and DRD both count as `queue` here).
fn link_drops(c: &wirelab_link::LinkCounters) -> Drops {
    let mut d = Drops::default();
    for reason in DropReason::ALL {
        d.fates.add_n(fate_of(reason), c.dropped.get(reason));
    }
    d
}

fn stages_text(s: &str) -> &str {
    if s.is_empty() {
        "pass"
    } else {
        s
    }
}

impl EmulateReport<'_> {
    /// The human summary.
    pub fn text(&self) -> String {
        let r = self;
        let mut s = format!(
            "emulate: {} <-> {} for {:.2} s\n",
            r.a,
            r.b,
            r.duration_ns as f64 / 1e9
        );
        let us = |ns: i64| ns as f64 / 1e3;
        for (name, from, to, d) in [("a2b", r.a, r.b, &r.a2b), ("b2a", r.b, r.a, &r.b2a)] {
            s += &format!(
                "  {name} ({from} -> {to}): {} received, {} sent, {} duplicated, {} corrupted; {}\n",
                d.received,
                d.sent,
                d.duplicates,
                d.corrupted,
                drops_text(&d.dropped),
            );
            for rule in &d.rules {
                let l = rule.link;
                s += &format!(
                    "    rule {} '{}' [{}]: {} frames, {} duplicated; {}\n",
                    rule.rule,
                    rule.filter,
                    stages_text(rule.stages),
                    rule.frames,
                    l.duplicates,
                    drops_text(&link_drops(l)),
                );
            }
            for e in d.ended_rules {
                s += &format!(
                    "    rule {} '{}' [{}] ({}): {} frames, {} duplicated; {}\n",
                    e.rule,
                    e.filter,
                    stages_text(&e.stages),
                    e.ended.unwrap_or("ended"),
                    e.frames,
                    e.link.duplicates,
                    drops_text(&link_drops(&e.link)),
                );
            }
            let l = d.link;
            s += &format!(
                "    {}[{}]: {} frames, {} duplicated, {} reordered; {}; queue max {} packets {} bytes\n",
                if d.rules.is_empty() { "stages " } else { "default " },
                stages_text(d.stages),
                l.arrivals,
                l.duplicates,
                l.reordered,
                drops_text(&link_drops(l)),
                l.queue_packets_max,
                l.queue_bytes_max,
            );
            if l.flows > 0 {
                s += &format!(
                    "    flows {} (past the flow bound: {} packets)\n",
                    l.flows, l.flow_overflow
                );
            }
            if d.lateness.count > 0 {
                s += &format!(
                    "    release lateness: p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us; early {}\n",
                    us(d.lateness.p50_ns),
                    us(d.lateness.p90_ns),
                    us(d.lateness.p99_ns),
                    us(d.lateness.p999_ns),
                    us(d.lateness.max_ns),
                    d.early
                );
                let hist: Vec<String> = d
                    .lateness_buckets
                    .iter()
                    .map(|b| match b.le_ns {
                        Some(le) => format!("<={} {}", short_ns(le), b.count),
                        None => format!(">10ms {}", b.count),
                    })
                    .collect();
                s += &format!("    lateness histogram: {}\n", hist.join(", "));
            }
        }
        for (what, f) in [("log", r.log), ("tap", r.tap)] {
            if let Some(f) = f {
                s += &format!(
                    "  {what}: {} ({} {})",
                    f.path.display(),
                    f.count,
                    if what == "log" { "records" } else { "frames" }
                );
                if let Some(e) = &f.error {
                    s += &format!("; stopped: {e}");
                }
                s += "\n";
            }
        }
        for m in r.mm_log {
            s += &format!(
                "  mm-log {}: {} ({} lines)",
                m.direction,
                m.path.display(),
                m.lines
            );
            if let Some(e) = &m.error {
                s += &format!("; stopped: {e}");
            }
            s += "\n";
        }
        for d in &r.decisions {
            s += &format!(
                "  decisions {}{}: {} ({} records)",
                d.direction,
                if d.rule == 0 {
                    String::new()
                } else {
                    format!(" rule {}", d.rule)
                },
                d.path.display(),
                d.records
            );
            if let Some(e) = d.error {
                s += &format!("; stopped: {e}");
            }
            s += "\n";
        }
        s
    }
}

/// 1000 → "1us", 10_000_000 → "10ms".
fn short_ns(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1_000)
    }
}
