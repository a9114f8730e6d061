//! Real-time setup of a job's threads, in one place for every job.

use wirelab_io::rt::{lock_memory, pin_to_cpu, set_fifo_priority, RtError};

/// CPU pinning, SCHED_FIFO and memory locking as asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtSetup {
    /// CPU of the job's first thread; thread `i` goes to `cpu + i`.
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority (1..=99) of every job thread.
    pub fifo_priority: Option<i32>,
    /// Lock all current and future memory (mlockall).
    pub mlock: bool,
}

impl RtSetup {
    /// Process-wide part, once before any job thread starts.
    pub fn lock_memory(&self) -> Result<(), RtError> {
        if self.mlock {
            lock_memory()?;
        }
        Ok(())
    }

    /// Applies pinning and priority to the calling thread, job thread `index`.
    pub fn apply_to_thread(&self, index: usize) -> Result<(), RtError> {
        if let Some(c) = self.cpu {
            pin_to_cpu(c + index)?;
        }
        if let Some(p) = self.fifo_priority {
            set_fifo_priority(p)?;
        }
        Ok(())
    }
}
