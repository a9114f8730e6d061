//! The replay job: [`crate::replay::run`] on the calling thread, with its
//! real-time setup, stop handling and a progress counter.

use super::rt::RtSetup;
use super::Progress;
use crate::replay::{self, ReplayConfig, ReplayError, ReplayReport};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use thiserror::Error;
use wirelab_io::rt::RtError;

#[derive(Debug, Error)]
pub enum ReplayJobError {
    #[error(transparent)]
    Rt(#[from] RtError),
    #[error("cannot install the signal handlers: {0}")]
    Signals(std::io::Error),
    #[error(transparent)]
    Replay(#[from] ReplayError),
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
