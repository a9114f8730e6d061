//! The replay driver: reads the trace (into memory, or streamed with
//! read-ahead when it exceeds the preload budget), paces every packet on
//! its absolute deadline with the sans-IO [`wirelab_core::replay`] schedule,
//! transmits through an AF_PACKET TX ring (default), `sendmmsg` on a packet
//! socket, or into a pcap file, and measures its own fidelity.
//!
//! # What "departure" means
//!
//! A frame's departure time is CLOCK_MONOTONIC read immediately before the
//! `send()` that hands it to the kernel: for the TX ring, the kick after
//! the slot was filled and released; for `sendmmsg`, the call itself. With
//! PACKET_QDISC_BYPASS the kick runs the driver's transmit routine
//! synchronously, so on veth the frame reaches the peer within that call.
//! Frames sent in one batch share the departure time of their kick.

mod outcome;
mod run;
pub mod trace;

use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use thiserror::Error;
use wirelab_analysis::Fidelity;
use wirelab_core::pace::{LatePolicy, MarginBounds, PaceConfig, Pacer, WaitStrategy};
use wirelab_core::phase::{DeadlinePhases, FOLD_PERIOD_NS};
use wirelab_core::replay::{LoopClock, Schedule, Timing};
use wirelab_io::clock::mono_to_real_offset;
use wirelab_io::packet_sock::{IfInfo, PacketError, PacketSocket};
use wirelab_io::ring_tx::TxRing;
use wirelab_io::{Clock, MonoClock, Transmit};
use wirelab_wire::ethernet::{HEADER_BYTES, VLAN_TAG_BYTES};
use wirelab_wire::rewrite::split::{Side, SideMap};
use wirelab_wire::rewrite::{unique_ip, RewriteStats};

use crate::pace::{send_batch, wait_for, with_retries, SEND_RETRIES};
use crate::phase::{calibrate_origin, PhaseConfig, PhaseReport};
use crate::recordlog::{hostname, RecordLog, RecordMeta, RecordWriter};
use crate::StopFlag;
pub use outcome::NothingSent;
pub use run::run;
#[cfg(test)]
use run::run_on;
pub use trace::{
    count_packets, side_map, Pkt, RangeError, Ranges, ReadSpec, ReadStats, Selection, Trace,
};
use wirelab_wire::record::{Record, RecordKind, Role};

/// Packets of the first pass folded for the phase choice.
const PHASE_MAX_PACKETS: usize = 1_000_000;

/// JSON schema name of the report.
pub const SCHEMA: &str = wirelab_analysis::schema::REPLAY_SCHEMA;

/// Replay failures, each naming the fix.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// Input file problem.
    #[error("{0}")]
    Input(String),
    /// Socket setup.
    #[error(transparent)]
    Packet(#[from] PacketError),
    /// Other I/O (output file, log).
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// OS error.
        cause: io::Error,
    },
}

/// Where frames go.
#[derive(Clone, Debug)]
pub enum Output {
    /// AF_PACKET TX ring on an interface.
    Ring {
        /// Interface name.
        ifname: String,
        /// Ask for PACKET_QDISC_BYPASS.
        qdisc_bypass: bool,
        /// Slots in the ring.
        slots: usize,
    },
    /// `sendmmsg` on a packet socket.
    Sendmmsg {
        /// Interface name.
        ifname: String,
        /// Ask for PACKET_QDISC_BYPASS.
        qdisc_bypass: bool,
    },
    /// A pcap file (no waiting; timestamps = first packet's time + ideal offset).
    File(PathBuf),
}

/// A complete replay job.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    /// Reading, selection, static rewrites.
    pub read: ReadSpec,
    /// Timing mode.
    pub timing: Timing,
    /// Catch-up policy.
    pub late: LatePolicy,
    /// Lateness above which a packet counts as late in the report.
    pub late_threshold_ns: u64,
    /// Passes over the trace (0 = until stopped).
    pub loops: u64,
    /// Gap between passes (None: the trace's mean gap).
    pub loop_delay_ns: Option<u64>,
    /// Stop after this much (scheduled) time.
    pub duration_ns: Option<u64>,
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// tcpreplay `--unique-ip`: move addresses apart by the loop number.
    pub unique_ip: bool,
    /// Preload budget in bytes; larger traces are streamed.
    pub max_preload: u64,
    /// Most frames per kick.
    pub batch: usize,
    /// How long before each deadline to stop sleeping and spin.
    pub spin: Spin,
    /// Per-packet departure log: a record file (`wirelab_wire::record`)
    /// that `wirelab analyze` and `wirelab export` read (see [`DepartureLog`]).
    pub log: Option<PathBuf>,
    /// Output (the primary interface when split).
    pub output: Output,
    /// Two-interface replay: server packets go to this second output.
    pub split: Option<Split>,
    /// Frames handed to the kernel so far, updated after every kick (for
    /// a progress display on another thread).
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Calibrate the start phase against this CPU's periodic stalls
    /// ([`crate::phase`]; timed replay of a preloaded trace only).
    pub phase: Option<PhaseConfig>,
}

/// Spin margin before each deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spin {
    /// Sleep until this long before the deadline, then spin.
    Fixed(u64),
    /// Learn the margin from this machine's wake-up latency
    /// (`wirelab_core::pace::SpinMargin`, within [`MarginBounds::REPLAY`]).
    Auto,
}

/// Two-interface replay (tcpprep / tcpreplay `-I`).
#[derive(Clone, Debug)]
pub struct Split {
    /// Where server packets go (client packets go to [`ReplayConfig::output`]).
    pub secondary: Output,
    /// The side of every packet number (or that it is not sent).
    pub sides: SideMap,
}

/// What the two-interface split did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitReport {
    /// How packets were classified: cidr, port, auto, or a cache file's mode.
    pub mode: String,
    /// The primary output (client packets).
    pub primary: String,
    /// The secondary output (server packets).
    pub secondary: String,
    /// Client packets sent (primary).
    pub client_packets: u64,
    /// Server packets sent (secondary).
    pub server_packets: u64,
    /// Packets not sent because the cache file marks them "don't send"
    /// (tcpprep), counted in every loop.
    pub skipped_packets: u64,
}

/// How the sender waited.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WaitReport {
    /// "auto" or the fixed margin in ns.
    pub spin: String,
    /// Margin in force at the end, ns.
    pub spin_margin_final_ns: u64,
    /// Largest margin used, ns.
    pub spin_margin_max_ns: u64,
    /// Sleeps taken.
    pub sleeps: u64,
    /// Sleeps that woke after the deadline itself (the margin was too small).
    pub sleeps_past_deadline: u64,
    /// Largest oversleep (wake-up minus the time asked for), ns.
    pub oversleep_max_ns: u64,
}

/// How the trace was held.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadInfo {
    /// "memory" or "stream".
    pub mode: &'static str,
    /// Bytes of frame data (memory) or of input files (stream).
    pub bytes: u64,
    /// Packets per pass.
    pub packets: u64,
    /// ns to read and prepare (memory mode).
    pub load_ns: u64,
    /// The budget.
    pub max_preload_bytes: u64,
}

/// Send-side problems.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct SendStats {
    /// Failed send calls.
    pub failures: u64,
    /// Retries after ENOBUFS/EAGAIN or a full ring.
    pub retries: u64,
    /// Frames given up on.
    pub frames_lost: u64,
    /// Frames the kernel rejected as malformed (TX ring).
    pub wrong_format: u64,
    /// Send calls (kicks).
    pub kicks: u64,
}

/// This driver's parts of `wirelab.replay/1`.
#[derive(Clone, Copy, Debug)]
pub struct ReportParts;

impl wirelab_analysis::schema::ReplayParts for ReportParts {
    type Load = LoadInfo;
    type Read = ReadStats;
    type Rewrite = RewriteCounters;
    type Send = SendStats;
    type Wait = WaitReport;
    type Split = SplitReport;
    type Phase = PhaseReport;
}

/// The full result, `wirelab.replay/1` (the type is analysis's schema).
pub type ReplayReport = wirelab_analysis::schema::ReplayReport<ReportParts>;

/// [`RewriteStats`] for the report.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RewriteCounters {
    /// Frames changed.
    pub changed: u64,
    /// Frames dropped by --fixlen del.
    pub dropped: u64,
    /// Frames --fixlen pad would have made larger than the output takes
    /// (not sent; counted in `read.oversize` too).
    pub pad_oversize: u64,
    /// Frames truncated to the MTU.
    pub truncated: u64,
    /// Frames with checksums recomputed in full.
    pub csum_recomputed: u64,
    /// Frames whose checksum could not be recomputed.
    pub csum_unfixable: u64,
}

impl From<RewriteStats> for RewriteCounters {
    fn from(s: RewriteStats) -> Self {
        RewriteCounters {
            changed: s.changed,
            dropped: s.dropped,
            pad_oversize: s.pad_oversize,
            truncated: s.truncated,
            csum_recomputed: s.csum_recomputed,
            csum_unfixable: s.csum_unfixable,
        }
    }
}

/// Looks up interface facts (for `--enet-smac-from-if` and the like).
pub fn interface(ifname: &str) -> Result<IfInfo, ReplayError> {
    Ok(wirelab_io::packet_sock::if_info(ifname)?)
}

/// One output: the TX ring's staged slots, a batch sender (a packet
/// socket's `sendmmsg`, or a simulated link) with its own buffers, or a file.
enum Tx {
    Ring(TxRing),
    Frames {
        link: Box<dyn Transmit + Send>,
        bufs: Vec<Vec<u8>>,
        n: usize,
    },
    File {
        w: wirelab_pcap::PcapWriter<BufWriter<std::fs::File>>,
        /// The first selected packet's timestamp: the schedule's origin.
        base_ns: u64,
        /// Write each packet's own timestamp in the first pass (original
        /// timing at x1) instead of the origin plus its ideal offset.
        keep_ts: bool,
        /// (timestamp, original length, frame) until the next kick.
        pending: Vec<(u64, u32, Vec<u8>)>,
    },
}

impl Tx {
    fn has_queued(&self) -> bool {
        match self {
            Tx::Ring(r) => r.queued() > 0,
            Tx::Frames { n, .. } => *n > 0,
            Tx::File { pending, .. } => !pending.is_empty(),
        }
    }

    /// `ts_ns`: the packet's own timestamp, for a file.
    fn push(
        &mut self,
        data: &[u8],
        orig_len: u32,
        pass: u64,
        unique: bool,
        ideal: u64,
        ts_ns: u64,
    ) -> io::Result<bool> {
        let edit = |d: &mut [u8]| {
            if unique && pass > 0 {
                unique_ip(d, pass.min(u64::from(u32::MAX)) as u32);
            }
        };
        match self {
            Tx::Ring(r) => r.push(data, edit),
            Tx::Frames { bufs, n, .. } => {
                if *n == bufs.len() {
                    return Ok(false);
                }
                let b = &mut bufs[*n];
                b.clear();
                b.extend_from_slice(data);
                edit(b);
                *n += 1;
                Ok(true)
            }
            Tx::File {
                pending,
                base_ns,
                keep_ts,
                ..
            } => {
                let mut v = data.to_vec();
                edit(&mut v);
                let ts = if *keep_ts && pass == 0 {
                    ts_ns
                } else {
                    *base_ns + ideal
                };
                pending.push((ts, orig_len, v));
                Ok(true)
            }
        }
    }

    /// Hands everything queued to the kernel. Returns frames lost. `wait`:
    /// a TX ring kick also waits until the kernel released the frames (see
    /// `TxRing::kick_nowait` for why paced replay does not).
    fn kick(&mut self, st: &mut SendStats, wait: bool) -> u64 {
        st.kicks += 1;
        match self {
            Tx::Ring(r) => {
                let (res, retries) =
                    with_retries(
                        SEND_RETRIES,
                        || if wait { r.kick() } else { r.kick_nowait() },
                    );
                st.retries += retries;
                match res {
                    Ok(()) => 0,
                    Err(e) => {
                        st.failures += 1;
                        tracing::warn!("TX ring send failed: {e}");
                        r.queued() as u64
                    }
                }
            }
            Tx::Frames { link, bufs, n } => {
                let mut done = 0;
                let mut lost = 0;
                while done < *n {
                    // A stack array, not a Vec: no allocation per send call.
                    let mut frames: [&[u8]; 64] = [&[]; 64];
                    let k = (*n - done).min(frames.len());
                    for (f, b) in frames.iter_mut().zip(&bufs[done..done + k]) {
                        *f = b.as_slice();
                    }
                    let d = send_batch(link, &frames[..k], SEND_RETRIES);
                    st.retries += d.retries;
                    done += d.sent;
                    if let Some(e) = d.error {
                        st.failures += 1;
                        tracing::warn!("sending a frame failed: {e}");
                        // Skip the frame that failed, keep the rest.
                        done += 1;
                        lost += 1;
                    }
                }
                *n = 0;
                lost
            }
            Tx::File { w, pending, .. } => {
                let mut lost = 0;
                for (ts, orig, v) in pending.drain(..) {
                    // The writer raises an original length below the
                    // captured one (pcap requires it); ReadStats counts them.
                    if w.write_packet(ts, orig, &v).is_err() {
                        st.failures += 1;
                        lost += 1;
                    }
                }
                lost
            }
        }
    }
}

struct Queued {
    side: usize,
    ideal: u64,
    len: u32,
    number: u64,
    pass: u64,
}

/// The departure log, a record file of role `sender`: one `Tx` record per
/// frame sent, with `seq` the frame's number in the trace, `flow` the pass
/// (loop) it was sent in, `size` its length, `sched_ns` its ideal time and
/// `tx_ns` its departure: `sched_ns` is the ideal offset from the
/// schedule's origin plus [`DepartureLog::LEAD_NS`], and `tx_ns` is the
/// header's `start_unix_ns` plus the lead plus the departure's offset from
/// that origin, so `tx_ns − start_unix_ns − sched_ns` is the departure
/// error and `wirelab analyze` reports lateness and inter-departure error
/// as it does for `send`.
struct DepartureLog {
    log: RecordLog,
    w: RecordWriter,
    start_unix_ns: u64,
    error: Option<io::Error>,
    path: PathBuf,
}

impl DepartureLog {
    /// Offsets are shifted by this much, so no ideal time is 0 (which
    /// records reserve for "unscheduled").
    const LEAD_NS: u64 = 1_000_000;

    /// `start_unix_ns`: the wall-clock time of the origin, less the lead.
    fn create(path: &Path, cfg: &ReplayConfig, start_unix_ns: u64) -> Result<Self, ReplayError> {
        let meta = RecordMeta {
            wirelab_version: env!("CARGO_PKG_VERSION").into(),
            role: "replay".into(),
            host: hostname(),
            clock: "CLOCK_MONOTONIC just before the send() that hands the frame to the kernel, from the schedule's origin".into(),
            start_unix_ns,
            config: serde_json::json!({
                "files": cfg.read.files,
                "timing": format!("{:?}", cfg.timing),
                "late_policy": format!("{:?}", cfg.late),
                "loops": cfg.loops,
            }),
        };
        let log = RecordLog::create(path, Role::Sender, &meta).map_err(|e| ReplayError::Io {
            what: format!("cannot create {}", path.display()),
            cause: e,
        })?;
        let w = log.writer();
        Ok(DepartureLog {
            log,
            w,
            start_unix_ns,
            error: None,
            path: path.to_owned(),
        })
    }

    /// Frame `q` left at offset `actual_ns`. A write error stops the log
    /// and is reported at the end; the replay goes on.
    fn departed(&mut self, q: &Queued, actual_ns: u64) {
        if self.error.is_some() {
            return;
        }
        let rec = Record {
            flow: q.pass.min(u64::from(u32::MAX)) as u32,
            size: q.len,
            seq: q.number,
            sched_ns: Self::LEAD_NS + q.ideal,
            tx_ns: self.start_unix_ns + Self::LEAD_NS + actual_ns,
            kind: RecordKind::Tx,
            ..Default::default()
        };
        if let Err(e) = self.w.write(&rec) {
            self.error = Some(e);
        }
    }

    /// Everything in the file, or the first write error.
    fn finish(self) -> Result<(), ReplayError> {
        let DepartureLog {
            log,
            w,
            error,
            path,
            ..
        } = self;
        drop(w);
        let done = log.finish().map(drop);
        match error.map_or(done, Err) {
            Ok(()) => Ok(()),
            Err(e) => Err(ReplayError::Io {
                what: format!("writing the departure log {}", path.display()),
                cause: e,
            }),
        }
    }
}

struct Sender<'a, C: Clock> {
    cfg: &'a ReplayConfig,
    clock: C,
    /// One output, or primary and secondary.
    tx: Vec<Tx>,
    per_side: [u64; 2],
    /// Packets the split says not to send.
    skipped: u64,
    sched: Schedule,
    pacer: Pacer,
    loops: LoopClock,
    fid: Fidelity,
    send: SendStats,
    queue: Vec<Queued>,
    sent: u64,
    stop: &'a StopFlag,
    stopped_by: &'static str,
    log: Option<DepartureLog>,
    paced: bool,
    /// Whether any packet waited for its deadline.
    waited: bool,
    /// TX ring kicks wait for completion: only at top speed, where a kick
    /// carries a full ring and waiting keeps the send buffer from running dry.
    kick_waits: bool,
}

impl<C: Clock> Sender<'_, C> {
    fn flush(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let t_kick = self.clock.now_ns();
        let mut dep = t_kick.saturating_sub(self.pacer.origin_ns());
        let mut lost = [0u64; 2];
        for (i, tx) in self.tx.iter_mut().enumerate() {
            if tx.has_queued() {
                lost[i] = tx.kick(&mut self.send, self.kick_waits);
            }
        }
        let returned = self.clock.now_ns();
        // Timed replay runs from the first departure (`Pacer::first_departure`):
        // the first packet defines the origin (no error).
        if let Some(q) = self.queue.first() {
            if self.pacer.first_departure(q.ideal, returned).is_some() {
                dep = q.ideal;
            }
        }
        self.pacer
            .sent(self.queue.len(), returned.saturating_sub(t_kick));
        self.send.frames_lost += lost[0] + lost[1];
        // Lost frames are the last ones of their side's batch.
        let mut left = [0u64; 2];
        for q in &self.queue {
            left[q.side] += 1;
        }
        for q in self.queue.iter() {
            left[q.side] -= 1;
            if left[q.side] < lost[q.side] {
                continue;
            }
            self.per_side[q.side] += 1;
            let actual = if self.paced { dep } else { q.ideal };
            self.fid.record(q.ideal, actual, q.len);
            if let Some(l) = &mut self.log {
                l.departed(q, actual);
            }
        }
        self.queue.clear();
        if let Some(pr) = &self.cfg.progress {
            pr.store(
                self.per_side[0] + self.per_side[1],
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// Sends one packet; false = stop.
    fn packet(&mut self, p: &Pkt, data: &[u8], pass: u64) -> bool {
        if self.stop.is_stopped() {
            self.stopped_by = "signal";
            return false;
        }
        if self.cfg.limit.is_some_and(|l| self.sent >= l) {
            self.stopped_by = "limit";
            return false;
        }
        // Decided before scheduling: a packet not sent takes no slot.
        let side = match &self.cfg.split {
            Some(sp) => match sp.sides.side(p.number) {
                Some(Side::Client) => 0,
                Some(Side::Server) => 1,
                None => {
                    self.skipped += 1;
                    return true;
                }
            },
            None => 0,
        };
        let ideal = self.sched.next(self.loops.trace_ns(pass, p.t_ns), p.len);
        if let Some(d) = self.cfg.duration_ns {
            let over = if matches!(self.cfg.timing, Timing::Topspeed) || !self.paced {
                self.paced && self.clock.now_ns().saturating_sub(self.pacer.origin_ns()) > d
            } else {
                ideal > d
            };
            if over {
                self.stopped_by = "duration";
                return false;
            }
        }
        let (mut staged, mut waited) = (false, false);
        if self.paced {
            let mut now = self.clock.now_ns();
            // Late, and the catch-up target nearer than a kick costs: leave
            // with the batch being built.
            let deadline = self.pacer.deadline(ideal, now);
            if deadline > now && !self.queue.is_empty() {
                self.flush();
                now = self.clock.now_ns();
            }
            if deadline > now {
                // On time: copy and rewrite the frame now, so that after the
                // wait only the send call stands between the deadline and
                // the wire, and send it right after the wait instead of when
                // the next packet has been read and scheduled.
                if !self.stage(side, data, p, pass, ideal) {
                    return true;
                }
                staged = true;
                waited = true;
                self.waited = true;
                // A sleep a signal cut short: wait again (the stop flag is
                // checked before the next packet).
                while wait_for(&mut self.clock, &mut self.pacer, deadline, now).is_none() {
                    now = self.clock.now_ns();
                }
            }
        }
        if !staged && !self.stage(side, data, p, pass, ideal) {
            return true;
        }
        let left = if self.paced {
            self.clock.now_ns()
        } else {
            self.pacer.origin_ns() + ideal
        };
        self.pacer.departed(ideal, left);
        self.queue.push(Queued {
            side,
            ideal,
            len: p.len,
            number: p.number,
            pass,
        });
        self.sent += 1;
        if waited || self.queue.len() >= self.cfg.batch {
            self.flush();
        }
        true
    }

    /// Copies frame `number` into the transmit buffers of `side` (rewrites
    /// applied), kicking what is queued when they are full. False: the
    /// frame cannot be sent (counted as a failure).
    fn stage(&mut self, side: usize, data: &[u8], p: &Pkt, pass: u64, ideal: u64) -> bool {
        let number = p.number;
        loop {
            match self.tx[side].push(data, p.orig_len, pass, self.cfg.unique_ip, ideal, p.ts_ns) {
                Ok(true) => return true,
                Ok(false) => {
                    self.send.retries += 1;
                    self.flush();
                }
                Err(e) => {
                    tracing::warn!("packet {number} not sent: {e}");
                    self.send.failures += 1;
                    self.send.frames_lost += 1;
                    return false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
