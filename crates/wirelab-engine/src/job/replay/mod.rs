//! The replay job: [`crate::replay::run`] on the calling thread, with its
//! real-time setup, stop handling and a progress counter; and what a front
//! end needs to build its [`ReplayConfig`]: the outputs ([`TxSetup`]), the
//! selection ([`select`]) and the client/server split ([`sides`]).

pub mod select;
pub mod sides;

use super::rt::RtSetup;
use super::Progress;
use crate::replay::{self, Output, ReplayConfig, ReplayError, ReplayReport, Spin};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use thiserror::Error;
use wirelab_io::rt::RtError;
use wirelab_wire::rewrite::SpecError;

#[derive(Debug, Error)]
pub enum ReplayJobError {
    #[error(transparent)]
    Rt(#[from] RtError),
    #[error("cannot install the signal handlers: {0}")]
    Signals(std::io::Error),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("reading the cache file {}: {cause}", path.display())]
    CacheRead {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// A cache file that is not one, or made for another trace.
    #[error("{}: {cause}", path.display())]
    Cache { path: PathBuf, cause: SpecError },
    #[error("writing the cache file {}: {cause}", path.display())]
    CacheWrite {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// How frames are handed to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxMethod {
    /// The TX ring at top speed (throughput), `sendmmsg` when timing
    /// matters (lower inter-departure error tails).
    Auto,
    Ring,
    Sendmmsg,
}

/// The transmit setup of every interface of a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSetup {
    pub method: TxMethod,
    /// The replay runs at top speed (what `Auto` chooses by).
    pub topspeed: bool,
    pub qdisc_bypass: bool,
    /// Slots of a TX ring.
    pub ring_slots: usize,
}

impl TxSetup {
    /// Whether frames go through a TX ring.
    pub fn ring(&self) -> bool {
        match self.method {
            TxMethod::Auto => self.topspeed,
            m => m == TxMethod::Ring,
        }
    }

    /// The output on interface `ifname`.
    pub fn output(&self, ifname: &str) -> Output {
        let (ifname, qdisc_bypass) = (ifname.to_string(), self.qdisc_bypass);
        if self.ring() {
            Output::Ring {
                ifname,
                qdisc_bypass,
                slots: self.ring_slots,
            }
        } else {
            Output::Sendmmsg {
                ifname,
                qdisc_bypass,
            }
        }
    }
}

/// `--spin`: `auto`, or the margin as a duration (`50us`).
impl std::str::FromStr for Spin {
    type Err = wirelab_core::units::UnitError;

    fn from_str(s: &str) -> Result<Spin, Self::Err> {
        if s == "auto" {
            return Ok(Spin::Auto);
        }
        wirelab_core::units::parse_duration_ns(s).map(Spin::Fixed)
    }
}

/// A replay run.
pub struct ReplayJob {
    pub replay: ReplayConfig,
    pub rt: RtSetup,
    /// Frames sent so far, stored after each send call.
    sent: Arc<AtomicU64>,
}

impl ReplayJob {
    pub fn new(mut replay: ReplayConfig, rt: RtSetup) -> ReplayJob {
        let sent = Arc::new(AtomicU64::new(0));
        replay.progress = Some(sent.clone());
        ReplayJob { replay, rt, sent }
    }

    /// A handle on the count of frames sent, for progress display.
    pub fn progress(&self) -> Progress {
        Progress(self.sent.clone())
    }

    /// Runs on the calling thread until the trace (or a limit) is done or
    /// SIGINT/SIGTERM stops it.
    pub fn run(self) -> Result<ReplayReport, ReplayJobError> {
        let stop = super::stop_on_signals().map_err(ReplayJobError::Signals)?;
        self.rt.lock_memory()?;
        wirelab_io::clock::set_timer_slack(1);
        self.rt.apply_to_thread(0)?;
        Ok(replay::run(&self.replay, &stop)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_is_auto_or_a_duration() {
        assert_eq!("auto".parse(), Ok(Spin::Auto));
        assert_eq!("50us".parse(), Ok(Spin::Fixed(50_000)));
        assert!("fast".parse::<Spin>().is_err());
    }

    #[test]
    fn auto_takes_the_ring_at_top_speed_only() {
        let mut t = TxSetup {
            method: TxMethod::Auto,
            topspeed: true,
            qdisc_bypass: true,
            ring_slots: 64,
        };
        assert!(matches!(t.output("eth1"), Output::Ring { slots: 64, .. }));
        t.topspeed = false;
        assert!(matches!(
            t.output("eth1"),
            Output::Sendmmsg {
                qdisc_bypass: true,
                ..
            }
        ));
        t.method = TxMethod::Ring;
        assert!(t.ring());
        t.method = TxMethod::Sendmmsg;
        t.topspeed = true;
        assert!(!t.ring());
    }
}
