//! The `emulate` job: a layer-2 bridge between two interfaces, one
//! forwarding thread per direction, each with its own link model.

use super::rt::RtSetup;
use crate::emulate::{forward, CoreLink, ForwardConfig, ForwardStats, LinkModel};
use crate::StopFlag;
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_analysis::percentiles::Percentiles;
use wirelab_io::bpf::{BpfError, BpfProgram};
use wirelab_io::clock::mono_to_real_offset;
use wirelab_io::ifstats::IfInfo;
use wirelab_io::packet_sock::{PacketError, PacketSocket};
use wirelab_io::ring_frames::{FrameRing, FrameRingConfig, FrameRingStats};
use wirelab_io::rt::RtError;
use wirelab_io::MonoClock;
use wirelab_wire::ethernet::{HEADER_BYTES, VLAN_TAG_BYTES};

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
}

/// One direction's outcome; `model` is handed back for its counters.
pub struct DirectionRun<M> {
    pub forward: ForwardStats,
    pub ring: FrameRingStats,
    pub model: M,
}

/// What the job did.
pub struct EmulateRun<M> {
    pub a: IfInfo,
    pub b: IfInfo,
    pub duration: Duration,
    pub a2b: DirectionRun<M>,
    pub b2a: DirectionRun<M>,
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
        let cfg = ForwardConfig {
            real_to_mono: -mono_to_real_offset(),
            spin_ns: self.spin_ns,
            learn: self.learn,
            ..ForwardConfig::default()
        };
        let started = Instant::now();
        let spawn = |name: &'static str, index: usize, mut side: Side, mut model: M| {
            let stop = stop.clone();
            let rt = self.rt;
            std::thread::Builder::new()
                .name(format!("emulate-{name}"))
                .spawn(move || {
                    let r = rt
                        .apply_to_thread(index)
                        .map_err(EmulateError::from)
                        .and_then(|()| {
                            forward(
                                &cfg,
                                &mut MonoClock,
                                &mut side.ring,
                                &mut side.out,
                                &mut model,
                                &stop,
                            )
                            .map_err(|source| EmulateError::Forward { dir: name, source })
                        });
                    // A failed direction stops the other.
                    if r.is_err() {
                        stop.stop();
                    }
                    let ring = side.ring.stats().unwrap_or_default();
                    r.map(|forward| DirectionRun {
                        forward,
                        ring,
                        model,
                    })
                })
        };
        let t_ab = spawn("a2b", 0, ab, self.a2b)
            .map_err(|source| EmulateError::Forward { dir: "a2b", source })?;
        let t_ba = spawn("b2a", 1, ba, self.b2a)
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
        Ok(EmulateRun {
            a: a_info,
            b: b_info,
            duration: started.elapsed(),
            a2b,
            b2a,
        })
    }
}

impl EmulateRun<CoreLink> {
    /// The typed report (`wirelab.emulate/1`), given each direction's stage
    /// list and seed (a→b, b→a).
    pub fn report<'a>(&'a self, stages: [&'a str; 2], seeds: [u64; 2]) -> EmulateReport<'a> {
        EmulateReport {
            schema: "wirelab.emulate/1",
            a: &self.a.name,
            b: &self.b.name,
            duration_ns: self.duration.as_nanos() as u64,
            a2b: dir_report(stages[0], seeds[0], &self.a2b),
            b2a: dir_report(stages[1], seeds[1], &self.b2a),
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
}

#[derive(serde::Serialize)]
pub struct DirReport<'a> {
    pub stages: &'a str,
    pub seed: u64,
    /// Frames read, sent (copies included), refused by the link.
    pub received: u64,
    pub sent: u64,
    pub send_failures: u64,
    /// Kernel drops in front of the emulator (receive ring full).
    pub ring_drops: u64,
    /// What the link model decided.
    pub link: &'a wirelab_core::link::LinkCounters,
    /// Departure minus deadline.
    pub lateness: Percentiles,
    pub early: u64,
}

fn dir_report<'a>(stages: &'a str, seed: u64, r: &'a DirectionRun<CoreLink>) -> DirReport<'a> {
    let ForwardStats {
        received,
        sent,
        send_failures,
        lateness,
        early,
        ..
    } = r.forward;
    let FrameRingStats { drops, .. } = r.ring;
    DirReport {
        stages,
        seed,
        received,
        sent,
        send_failures,
        ring_drops: drops,
        link: r.model.link.counters(),
        lateness,
        early,
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
        for (name, from, to, d) in [("a2b", r.a, r.b, &r.a2b), ("b2a", r.b, r.a, &r.b2a)] {
            let l = d.link;
            let dr = &l.dropped;
            s += &format!(
            "  {name} ({from} -> {to}) [{}]: {} received, {} sent; dropped: loss {}, trace {}, \
             trace end {}, limit {}, horizon {}, aqm {}, drd {}, link dead {}; {} duplicated, \
             {} corrupted, {} reordered; ring drops {}, send failures {}\n",
            if d.stages.is_empty() { "pass" } else { d.stages },
            d.received,
            d.sent,
            dr.loss,
            dr.trace,
            dr.trace_end,
            dr.limit,
            dr.horizon,
            dr.aqm,
            dr.drd,
            dr.link_dead,
            l.duplicates,
            l.corrupted,
            l.reordered,
            d.ring_drops,
            d.send_failures,
        );
            if d.lateness.count > 0 {
                let us = |ns: u64| ns as f64 / 1e3;
                s += &format!(
                "    release lateness: p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us; early {}\n",
                us(d.lateness.p50_ns),
                us(d.lateness.p99_ns),
                us(d.lateness.p999_ns),
                us(d.lateness.max_ns),
                d.early
            );
            }
        }
        s
    }
}
