//! Jobs: what one `wirelab` subcommand runs, from a typed configuration to
//! a typed report. A job owns its threads, CPU pinning and real-time setup,
//! the run's start epoch and stop handling; front ends map their flags to
//! a job's configuration and render its report.
//!
//! - [`send`]: one thread per flow, paced by [`crate::sender`].
//! - [`recv`]: the receiver/reflector on the calling thread.
//! - [`replay`]: [`crate::replay`] on the calling thread.
//! - [`emulate`]: the link emulator, a forwarding thread per direction.
//! - [`capture`]: [`wirelab_capture`] until its end or a signal.
//! - [`analyze`]: record files and captures analyzed (`wirelab analyze`).
//! - [`records`]: record files read back for `analyze` and `export`.
//! - [`spec`]: generators built from specs, with the run's seeds.
//! - [`net`]: hosts to resolve and addresses to bind, as users give them.
//! - [`text`]: human summaries of the job reports.

pub mod analyze;
pub mod capture;
pub mod emulate;
pub mod net;
pub mod records;
pub mod recv;
pub mod replay;
pub mod rt;
pub mod send;
pub mod spec;
pub mod text;

use crate::StopFlag;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// What a job's own record file and signal handling can fail with (shared
/// by the jobs' error types).
#[derive(Debug, Error)]
pub enum JobFileError {
    #[error("cannot create record file {path}: {cause}", path = path.display())]
    RecordCreate { path: PathBuf, cause: io::Error },
    #[error("cannot finish the record file: {0}")]
    RecordFinish(io::Error),
    #[error("cannot install the signal handlers: {0}")]
    Signals(io::Error),
    #[error("cannot write the status file {path}: {cause}", path = path.display())]
    Status { path: PathBuf, cause: io::Error },
}

/// A stop flag raised by SIGINT and SIGTERM: the job stops sending, drains
/// and flushes its records and summary.
pub fn stop_on_signals() -> std::io::Result<StopFlag> {
    let stop = StopFlag::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.as_arc())?;
    }
    Ok(stop)
}

/// Packets sent so far by a running job (a counter its threads store to).
#[derive(Clone)]
pub struct Progress(Arc<AtomicU64>);

impl Progress {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
