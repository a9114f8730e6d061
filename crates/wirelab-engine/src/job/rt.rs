//! Real-time setup of a job's threads, in one place for every job.

use wirelab_io::rt::{lock_memory, pin_to_cpu, rt_bandwidth, set_fifo_priority, RtError};

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

    /// For a job whose SCHED_FIFO threads spin (the emulator): what the
    /// kernel's real-time bandwidth limit will do to them, if it is on.
    pub fn throttle_warning(&self) -> Option<String> {
        self.fifo_priority?;
        let (runtime, period) = rt_bandwidth()?;
        throttle_text(runtime, period)
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

/// The warning for a real-time bandwidth limit of `runtime_us` per
/// `period_us`; `None` when it leaves nothing out.
fn throttle_text(runtime_us: u64, period_us: u64) -> Option<String> {
    let idle = period_us.checked_sub(runtime_us).filter(|&d| d > 0)?;
    Some(format!(
        "the kernel stops SCHED_FIFO threads that run for {} ms of every {} ms \
         (kernel.sched_rt_runtime_us={runtime_us}): a spinning thread is held {} ms at a time and \
         frames due meanwhile leave that late; `sysctl -w kernel.sched_rt_runtime_us=-1` lifts \
         the limit (put it back afterwards)",
        runtime_us / 1000,
        period_us / 1000,
        idle / 1000,
    ))
}

#[cfg(test)]
mod tests {
    use super::throttle_text;

    #[test]
    fn a_limit_that_holds_threads_is_said_with_its_numbers() {
        let w = throttle_text(950_000, 1_000_000).unwrap();
        assert!(w.contains("run for 950 ms of every 1000 ms"), "{w}");
        assert!(w.contains("held 50 ms at a time"), "{w}");
        assert!(w.contains("kernel.sched_rt_runtime_us=-1"), "{w}");
        assert_eq!(throttle_text(1_000_000, 1_000_000), None);
        assert_eq!(throttle_text(2_000_000, 1_000_000), None);
    }
}
