//! `capture`: the receive path of the DMA-ring capture thesis on AF_PACKET TPACKET_V3.
//!
//! One thread per ring reads retired blocks in place, writes each packet straight from the
//! ring to the (buffered) output and hands the block back: no per-packet allocation or copy
//! besides the write itself. Between cycles it waits in one of two ways:
//!
//! - **block**: `ppoll` on the socket; the kernel wakes the thread when it retires a block
//!   (full, or after the retire timeout) — the interrupt-driven mode of the thesis;
//! - **poll**: sleep on an absolute grid of `poll_period_ns` (CLOCK_MONOTONIC), then look at
//!   the ring without a system call — the timer-paced mode.
//!
//! `adaptive` lets [`wirelab_core::forecast::Forecaster`] choose after every cycle, with
//! hysteresis, counting switches. With TPACKET_V3 the kernel already coalesces
//! notifications per *block* (the "interrupt" of the thesis is a block retirement), so the
//! forecaster is fed retired blocks per cycle, not packets: it polls once blocks retire
//! faster than the poll period (small blocks or very high rates), where one timer wake-up
//! per period is cheaper than one ppoll wake-up per block, and blocks otherwise.
//!
//! # Stop and drain
//!
//! When the stop flag is set (SIGINT/SIGTERM, `--duration`), the wall-clock time is noted,
//! and the loop keeps reading until the kernel has retired the partly filled block (two
//! retire timeouts plus 20 ms: [`wirelab_core::capture::in_flight_bound_ns`]), writing only packets stamped before the stop. Then every
//! file gets its final statistics block and is flushed. `--count` stops at exactly that many
//! packets (across all threads).
//!
//! # Loss accounting (reported separately)
//!
//! - interface: `/sys/class/net/IF/statistics` rx_dropped, rx_missed_errors (before/after);
//! - ring: `PACKET_STATISTICS` tp_drops and tp_freeze_q_cnt, per thread;
//! - writer: none by construction — writes happen inline, so a slow disk backs up into the
//!   ring and shows as ring drops.
//!
//! # Backends
//!
//! The driver reads rings through [`BlockSource`] and time through [`Clock`]: the binary
//! runs [`RxRing`] and [`MonoClock`] (monomorphised, no dynamic dispatch on the packet
//! path); the tests run `wirelab_io::sim::SimRing` on a `SimClock` ([`Capture::with_rings`])
//! and check written frames, drops and stops exactly.

#![forbid(unsafe_code)]

pub mod merge;
pub mod output;
#[cfg(test)]
mod tests;
mod worker;

use merge::{MergeSummary, MergeTx};
use output::{FileSummary, Output, OutputConfig};
use serde::Serialize;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use thiserror::Error;
use wirelab_analysis::schema::{
    CaptureCpu, CaptureIfCounters, CaptureLoss, CaptureRing, IfCountersJson,
};
use wirelab_analysis::DeliveryLatency;
use wirelab_core::capture;
use wirelab_core::forecast::{ForecastParams, Forecaster, WaitMode};
use wirelab_io::bpf::{BpfError, BpfProgram};
use wirelab_io::ifstats::{cpu_time, CpuScope, CpuTime, IfCounters, IfCountersReader, IfInfo};
use wirelab_io::ring_rx::{
    BlockSource, Fanout, FanoutMode, FrameBlock, RingConfig, RingError, RxRing,
};
use wirelab_io::stop::StopFlag;
use wirelab_io::{Clock, MonoClock};
use wirelab_pcap::StatsCounters;
use worker::{run_thread, IfaceDrops, Sink, Worker};

pub use output::{FileFormat, Rotation};
pub use wirelab_analysis::schema::CAPTURE_SCHEMA as SCHEMA;

/// The JSON summary (`wirelab.capture/1`) with this crate's thread and merge reports.
pub type CaptureReport = wirelab_analysis::schema::CaptureReport<ThreadReport, MergeSummary>;

/// How the capture loop waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Always block in `ppoll` until the kernel retires a block.
    Block,
    /// Always poll at the fixed period.
    Poll,
    /// Let the forecaster choose.
    Adaptive,
}

impl WaitPolicy {
    /// The name in the JSON summary.
    pub fn name(self) -> &'static str {
        match self {
            WaitPolicy::Block => "block",
            WaitPolicy::Poll => "poll",
            WaitPolicy::Adaptive => "adaptive",
        }
    }
}

/// Everything a capture needs.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    /// Interface.
    pub ifname: String,
    /// tcpdump filter expression ("" = everything).
    pub filter: String,
    /// Snap length.
    pub snaplen: u32,
    /// Ring geometry and socket options (`fanout` is set per thread from `threads`).
    pub ring: RingConfig,
    /// Wait policy.
    pub wait: WaitPolicy,
    /// Poll period (ns) for `poll` and `adaptive`.
    pub poll_period_ns: u64,
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration_ns: Option<u64>,
    /// Number of capture threads (more than 1 uses PACKET_FANOUT).
    pub threads: usize,
    /// Fanout mode for `threads > 1`.
    pub fanout: FanoutMode,
    /// Output file (`None` = stdout); with several threads and `merge` off each writes
    /// `NAME.tI.EXT`.
    pub path: Option<PathBuf>,
    /// With several threads: one writer thread merges all threads' packets into one file
    /// in kernel timestamp order (see [`merge`]).
    pub merge: bool,
    /// File format.
    pub format: FileFormat,
    /// Rotation.
    pub rotation: Rotation,
    /// Pin capture thread `i` to CPU `cpus[i % len]`.
    pub cpus: Vec<usize>,
    /// With `cpus` empty: pin capture threads to CPUs outside the interface's RPS mask,
    /// so the kernel's receive processing never runs on top of (and is never charged
    /// to) a capture thread nor competes with it. No-op without RPS or with RPS on every
    /// CPU.
    pub avoid_rps_cpus: bool,
    /// Write regular files with `O_DIRECT` where the filesystem allows (see [`output`]).
    pub direct_io: bool,
}

/// Why a capture could not run.
#[derive(Debug, Error)]
pub enum CaptureError {
    /// The filter.
    #[error(transparent)]
    Filter(#[from] BpfError),
    /// The ring.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// Writing files.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A bad combination of options.
    #[error("{0}")]
    Config(String),
    /// A capture thread panicked.
    #[error("capture thread {0} panicked")]
    Panic(usize),
}

/// Live counters, updated once per cycle by every thread.
#[derive(Debug, Default)]
pub struct Live {
    /// Packets written.
    pub packets: AtomicU64,
    /// Bytes captured.
    pub bytes: AtomicU64,
    /// Wake-ups.
    pub wakeups: AtomicU64,
    /// Ring drops (refreshed every ~100 ms).
    pub ring_drops: AtomicU64,
    /// Mode switches.
    pub switches: AtomicU64,
    /// Current mode of thread 0 (0 block, 1 poll).
    pub mode: AtomicU8,
    taken: AtomicU64,
    /// A worker reached `--duration`.
    duration_hit: AtomicBool,
}

/// A snapshot of [`Live`] for progress lines.
#[derive(Debug, Clone, Copy)]
pub struct LiveSnapshot {
    /// Seconds since start.
    pub elapsed_s: f64,
    /// Packets written.
    pub packets: u64,
    /// Bytes captured.
    pub bytes: u64,
    /// Wake-ups.
    pub wakeups: u64,
    /// Ring drops.
    pub ring_drops: u64,
    /// Mode switches.
    pub switches: u64,
    /// Thread 0 mode.
    pub mode: WaitMode,
}

/// Per-thread results.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadReport {
    /// Thread index.
    pub thread: usize,
    /// Packets written.
    pub packets: u64,
    /// Bytes captured (caplen sum).
    pub bytes: u64,
    /// Ring counters: packets that passed the filter (incl. dropped).
    pub ring_packets: u64,
    /// Ring drops (`tp_drops`).
    pub ring_drops: u64,
    /// Freeze-queue count (`tp_freeze_q_cnt`).
    pub ring_freeze_q_cnt: u64,
    /// Blocks read.
    pub blocks: u64,
    /// Wake-ups (returns from a wait).
    pub wakeups: u64,
    /// Cycles in polling mode.
    pub poll_cycles: u64,
    /// Mode switches (adaptive).
    pub mode_switches: u64,
    /// CPU time of this thread.
    pub cpu_user_ns: u64,
    /// CPU time of this thread.
    pub cpu_system_ns: u64,
    /// Files written.
    pub files: Vec<FileSummary>,
    /// Packets seen after the stop time and not written.
    pub after_stop: u64,
    #[serde(skip)]
    pool_waits: u64,
    #[serde(skip)]
    pool_batches: u64,
    #[serde(skip)]
    latency: Option<DeliveryLatency>,
}

fn if_json(c: IfCounters) -> IfCountersJson {
    IfCountersJson {
        rx_packets: c.rx_packets,
        rx_bytes: c.rx_bytes,
        rx_dropped: c.rx_dropped,
        rx_missed_errors: c.rx_missed_errors,
        tx_packets: c.tx_packets,
    }
}

fn format_name(f: FileFormat) -> &'static str {
    match f {
        FileFormat::Pcapng => "pcapng",
        FileFormat::Pcap(wirelab_pcap::PcapPrecision::Micro) => "pcap-us",
        FileFormat::Pcap(wirelab_pcap::PcapPrecision::Nano) => "pcap-ns",
    }
}

/// An opened capture: rings set up, nothing read yet. Opening first lets the caller
/// report setup errors (privilege, interface, filter) before printing anything else.
///
/// `R` is the ring and `C` the clock: [`RxRing`] and [`MonoClock`] from [`Capture::open`],
/// a simulated backend from [`Capture::with_rings`].
pub struct Capture<R = RxRing, C = MonoClock> {
    cfg: CaptureConfig,
    rings: Vec<R>,
    clock: C,
    linktype: u16,
    notes: Vec<String>,
    /// Read the interface's sysfs counters (the rings are on a real interface).
    iface_counters: bool,
}

/// Combinations of options no backend can run.
fn check(cfg: &CaptureConfig) -> Result<(), CaptureError> {
    if cfg.threads == 0 {
        return Err(CaptureError::Config("--threads must be at least 1".into()));
    }
    if cfg.threads > 1 && cfg.path.is_none() && !cfg.merge {
        return Err(CaptureError::Config(
            "-w - (stdout) takes one stream: drop --split (merged output, the default) \
             or use -w FILE (each thread writes FILE.tN)"
                .into(),
        ));
    }
    if cfg.path.is_none() && cfg.rotation.enabled() {
        return Err(CaptureError::Config(
            "rotation needs -w FILE, not stdout".into(),
        ));
    }
    Ok(())
}

impl Capture {
    /// Compiles the filter and opens one ring per thread.
    pub fn open(cfg: CaptureConfig) -> Result<Capture, CaptureError> {
        check(&cfg)?;
        let info = IfInfo::lookup(&cfg.ifname).map_err(RingError::Interface)?;
        let linktype = RxRing::linktype_of(&info)?;
        let filter = BpfProgram::compile(&cfg.filter, i32::from(linktype), cfg.snaplen)?;
        let group = (std::process::id() & 0xffff) as u16;
        let mut rings = Vec::with_capacity(cfg.threads);
        let mut notes = Vec::new();
        for _ in 0..cfg.threads {
            let mut rc = cfg.ring.clone();
            if cfg.threads > 1 {
                rc.fanout = Some(Fanout {
                    group,
                    mode: cfg.fanout,
                });
            }
            let r = RxRing::open(&cfg.ifname, &rc, &filter)?;
            for n in r.notes() {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
            rings.push(r);
        }
        let mut cfg = cfg;
        if cfg.cpus.is_empty() && cfg.avoid_rps_cpus {
            let rps = wirelab_io::ifstats::rps_cpus(&cfg.ifname);
            if let Some(free) = capture::cpus_off_rps(wirelab_io::rt::online_cpus(), &rps) {
                notes.push(format!(
                    "capture threads pinned to CPU {free:?}, off the CPUs that do {}'s \
                     receive processing (RPS {rps:?}); --cpu LIST or --no-avoid-rps to change",
                    cfg.ifname
                ));
                cfg.cpus = free;
            }
        }
        Ok(Capture {
            cfg,
            rings,
            clock: MonoClock,
            linktype,
            notes,
            iface_counters: true,
        })
    }
}

impl<R, C> Capture<R, C>
where
    R: BlockSource + Send + 'static,
    C: Clock + Clone + Send + 'static,
{
    /// A capture over rings opened elsewhere (a simulated backend), one per thread, timed
    /// by `clock`: every capture thread and the merge writer get a clone. `cfg.ifname` only
    /// names the interface in the files and the report; its counters are not read, and
    /// `cfg.filter`, `cfg.ring` and the RPS pinning are the opener's business.
    pub fn with_rings(
        cfg: CaptureConfig,
        rings: Vec<R>,
        linktype: u16,
        clock: C,
    ) -> Result<Self, CaptureError> {
        check(&cfg)?;
        if rings.len() != cfg.threads {
            return Err(CaptureError::Config(format!(
                "{} capture threads need {} rings, got {}",
                cfg.threads,
                cfg.threads,
                rings.len()
            )));
        }
        Ok(Capture {
            cfg,
            rings,
            clock,
            linktype,
            notes: Vec::new(),
            iface_counters: false,
        })
    }

    /// Messages about fallbacks taken while opening.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Block size and count in use.
    pub fn geometry(&self) -> (usize, usize) {
        self.rings[0].geometry()
    }

    /// Runs until `stop`, the count or the duration; calls `progress` every
    /// `progress_every` from the calling thread.
    pub fn run(
        self,
        stop: &StopFlag,
        progress_every: Option<Duration>,
        mut progress: impl FnMut(&LiveSnapshot),
    ) -> Result<CaptureReport, CaptureError> {
        let Capture {
            cfg,
            rings,
            mut clock,
            linktype,
            notes,
            iface_counters,
        } = self;
        let (block_size, block_count) = rings[0].geometry();
        let retire_ms = rings[0].retire_ms();
        let read_iface = |ifname: &str| {
            if iface_counters {
                IfCounters::read(ifname).unwrap_or_default()
            } else {
                IfCounters::default()
            }
        };
        let proc_cpu0 = cpu_time(CpuScope::Process)?;
        let if_before = read_iface(&cfg.ifname);
        let start = Start {
            real: clock.wall_ns(),
            mono: clock.now_ns(),
            if_before,
            iface_counters,
            linktype,
            retire_ms,
        };
        let live = Arc::new(Live::default());
        let (handles, merge_writer) = spawn_workers(&cfg, rings, &clock, &start, &live, stop)?;
        // Workers end by themselves (signal, --duration, --count). Without a progress line
        // this thread just waits for them: a supervisor waking every few ms would cost
        // more CPU than the capture itself at low rates.
        if let Some(every) = progress_every {
            let mut next = start.mono + every.as_nanos() as u64;
            while !handles.iter().all(|h| h.is_finished()) {
                let now = clock.now_ns();
                if now >= next {
                    progress(&snapshot(&live, now - start.mono));
                    next += every.as_nanos() as u64;
                }
                // Short sleeps, so the end is noticed promptly.
                clock.sleep_until(next.min(now + 20_000_000));
            }
        }
        let (threads, merge) = join_workers(handles, merge_writer)?;
        let end_mono = clock.now_ns();
        let if_after = read_iface(&cfg.ifname);
        let proc_cpu = proc_cpu0.delta(&cpu_time(CpuScope::Process)?);
        let facts = RunFacts {
            start,
            end_mono,
            if_after,
            proc_cpu,
            geometry: (block_size, block_count),
        };
        Ok(report(&cfg, &facts, &live, threads, merge, notes))
    }
}

/// How a capture started.
struct Start {
    /// Wall clock and monotonic clock at the start.
    real: u64,
    mono: u64,
    if_before: IfCounters,
    /// Read the interface's sysfs counters (the rings are on a real interface).
    iface_counters: bool,
    linktype: u16,
    retire_ms: u32,
}

/// The worker threads and the merge writer (when output is merged).
type Spawned = (
    Vec<JoinHandle<Result<ThreadReport, CaptureError>>>,
    Option<merge::MergeWriter>,
);

/// Starts a worker thread per ring, each writing its own file or into the
/// merge writer (started here too, when the threads' output is merged).
fn spawn_workers<R, C>(
    cfg: &CaptureConfig,
    rings: Vec<R>,
    clock: &C,
    start: &Start,
    live: &Arc<Live>,
    stop: &StopFlag,
) -> Result<Spawned, CaptureError>
where
    R: BlockSource + Send + 'static,
    C: Clock + Clone + Send + 'static,
{
    let ocfg = |path: Option<PathBuf>| OutputConfig {
        flush_each_cycle: path.is_none(),
        direct_io: cfg.direct_io,
        path,
        format: cfg.format,
        rotation: cfg.rotation,
        ifname: cfg.ifname.clone(),
        description: (!cfg.filter.is_empty()).then(|| format!("filter: {}", cfg.filter)),
        linktype: start.linktype,
        snaplen: cfg.snaplen,
    };
    let stop_at = Arc::new(AtomicU64::new(0));
    let merged = cfg.threads > 1 && cfg.merge;
    let (mut txs, merge_writer) = if merged {
        let out = Output::create(ocfg(cfg.path.clone()), start.real)?;
        let (txs, w) = merge::start(
            cfg.threads,
            out,
            start.retire_ms,
            stop.clone(),
            clock.clone(),
        )?;
        (txs.into_iter().map(Some).collect::<Vec<_>>(), Some(w))
    } else {
        (Vec::new(), None)
    };
    let mut handles = Vec::new();
    for (i, ring) in rings.into_iter().enumerate() {
        let sink = match txs.get_mut(i).and_then(Option::take) {
            Some(tx) => Sink::Merge(tx),
            None => {
                let path = cfg.path.as_ref().map(|p| {
                    if cfg.threads > 1 {
                        output::per_thread(p, i)
                    } else {
                        p.clone()
                    }
                });
                Sink::File(Box::new(Output::create(ocfg(path), start.real)?))
            }
        };
        let w = Worker {
            idx: i,
            ring,
            clock: clock.clone(),
            sink,
            live: live.clone(),
            stop: stop.clone(),
            stop_at: stop_at.clone(),
            deadline: cfg.duration_ns.map(|d| start.mono + d),
            wait: cfg.wait,
            poll_period_ns: cfg.poll_period_ns.max(1_000),
            count: cfg.count,
            drain_ns: capture::in_flight_bound_ns(start.retire_ms),
            iface: start.iface_counters.then(|| IfaceDrops {
                ifname: cfg.ifname.clone(),
                before: start.if_before,
                reader: None,
            }),
        };
        let cpu = (!cfg.cpus.is_empty()).then(|| cfg.cpus[i % cfg.cpus.len()]);
        let h = std::thread::Builder::new()
            .name(format!("wl-capture-{i}"))
            .spawn(move || run_thread(w, cpu))?;
        handles.push(h);
    }
    Ok((handles, merge_writer))
}

/// Waits for every worker and the merge writer; the first worker error (or
/// panic) is the capture's, after a merge writer's own.
fn join_workers(
    handles: Vec<JoinHandle<Result<ThreadReport, CaptureError>>>,
    merge_writer: Option<merge::MergeWriter>,
) -> Result<(Vec<ThreadReport>, Option<MergeSummary>), CaptureError> {
    let mut threads = Vec::new();
    let mut first_err = None;
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(r)) => threads.push(r),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(CaptureError::Panic(i));
            }
        }
    }
    let merge = match merge_writer {
        Some(w) => {
            let mut m = w.join()?;
            m.pool_waits = threads.iter().map(|t| t.pool_waits).sum();
            m.pool_batches = threads.iter().map(|t| t.pool_batches).sum();
            Some(m)
        }
        None => None,
    };
    match first_err {
        Some(e) => Err(e),
        None => Ok((threads, merge)),
    }
}

/// What the report says of the run besides the threads' own reports.
struct RunFacts {
    start: Start,
    end_mono: u64,
    if_after: IfCounters,
    /// The process's CPU time over the run.
    proc_cpu: CpuTime,
    /// Block size and count.
    geometry: (usize, usize),
}

/// The `wirelab.capture/1` summary: the threads' reports summed, the loss
/// by where it happened, the CPU cost, why the capture stopped.
fn report(
    cfg: &CaptureConfig,
    f: &RunFacts,
    live: &Live,
    threads: Vec<ThreadReport>,
    merge: Option<MergeSummary>,
    notes: Vec<String>,
) -> CaptureReport {
    let stop_reason = match cfg.count {
        Some(c) if live.taken.load(Ordering::Relaxed) >= c => "count",
        _ if live.duration_hit.load(Ordering::Relaxed) => "duration",
        _ => "signal",
    };
    let d = f.start.if_before.delta(&f.if_after);
    let mut latency = DeliveryLatency::new();
    for l in threads.iter().filter_map(|t| t.latency.as_ref()) {
        latency.merge(l);
    }
    let sum = |g: fn(&ThreadReport) -> u64| threads.iter().map(g).sum::<u64>();
    let packets = sum(|t| t.packets);
    let wakeups = sum(|t| t.wakeups);
    let cycles_poll = sum(|t| t.poll_cycles);
    let run_ns = f.end_mono - f.start.mono;
    let duration_s = run_ns as f64 / 1e9;
    let cpu_thr = threads.iter().fold(CpuTime::default(), |a, t| CpuTime {
        user_ns: a.user_ns + t.cpu_user_ns,
        system_ns: a.system_ns + t.cpu_system_ns,
    });
    let proc_cpu = f.proc_cpu;
    CaptureReport {
        schema: SCHEMA,
        interface: cfg.ifname.clone(),
        filter: cfg.filter.clone(),
        snaplen: cfg.snaplen,
        linktype: f.start.linktype,
        format: format_name(cfg.format),
        wait: cfg.wait.name(),
        poll_period_ns: cfg.poll_period_ns,
        ring: CaptureRing {
            block_size: f.geometry.0,
            block_count: f.geometry.1,
            retire_ms: f.start.retire_ms,
            fanout: (cfg.threads > 1).then_some(match cfg.fanout {
                FanoutMode::Hash => "hash",
                FanoutMode::Cpu => "cpu",
                FanoutMode::RoundRobin => "lb",
            }),
        },
        start_unix_ns: f.start.real,
        duration_s,
        packets,
        bytes: sum(|t| t.bytes),
        loss: CaptureLoss {
            if_rx_dropped: d.rx_dropped,
            if_rx_missed_errors: d.rx_missed_errors,
            ring_drops: sum(|t| t.ring_drops),
            ring_freeze_q_cnt: sum(|t| t.ring_freeze_q_cnt),
            writer_drops: 0,
        },
        interface_counters: CaptureIfCounters {
            before: if_json(f.start.if_before),
            after: if_json(f.if_after),
        },
        wakeups_per_s: wakeups as f64 / duration_s.max(1e-9),
        packets_per_wakeup: packets as f64 / wakeups.max(1) as f64,
        wakeups,
        mode_switches: sum(|t| t.mode_switches),
        poll_fraction: cycles_poll as f64 / wakeups.max(1) as f64,
        cpu: CaptureCpu {
            threads_user_s: cpu_thr.user_ns as f64 / 1e9,
            threads_system_s: cpu_thr.system_ns as f64 / 1e9,
            process_user_s: proc_cpu.user_ns as f64 / 1e9,
            process_system_s: proc_cpu.system_ns as f64 / 1e9,
            ns_per_packet: proc_cpu.total_ns() as f64 / packets.max(1) as f64,
            utilization: proc_cpu.total_ns() as f64 / run_ns.max(1) as f64,
        },
        delivery_latency: latency.summary(),
        stop_reason: stop_reason.into(),
        notes,
        threads,
        merge,
    }
}

fn snapshot(live: &Live, elapsed_ns: u64) -> LiveSnapshot {
    LiveSnapshot {
        elapsed_s: elapsed_ns as f64 / 1e9,
        packets: live.packets.load(Ordering::Relaxed),
        bytes: live.bytes.load(Ordering::Relaxed),
        wakeups: live.wakeups.load(Ordering::Relaxed),
        ring_drops: live.ring_drops.load(Ordering::Relaxed),
        switches: live.switches.load(Ordering::Relaxed),
        mode: if live.mode.load(Ordering::Relaxed) == 1 {
            WaitMode::Poll
        } else {
            WaitMode::Block
        },
    }
}
