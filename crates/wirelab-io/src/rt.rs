//! Real-time setup: SCHED_FIFO priority, CPU pinning, memory locking.
//! Each returns [`RtError`] naming what is missing when the kernel refuses.

use std::io;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum RtError {
    #[error("SCHED_FIFO priority {prio} refused ({cause}): needs CAP_SYS_NICE — run as root, or `setcap cap_sys_nice=ep $(which wirelab)`, or raise `ulimit -r`")]
    Priority { prio: i32, cause: io::Error },
    #[error("SCHED_FIFO priority {prio} is out of range 1..=99")]
    PriorityRange { prio: i32 },
    #[error("cannot pin to CPU {cpu} ({cause}): this machine has {ncpu} CPUs (0 to {}); check `nproc` and the cpuset of this process", ncpu.saturating_sub(1))]
    Pin {
        cpu: usize,
        ncpu: usize,
        cause: io::Error,
    },
    #[error("mlockall refused ({cause}): needs CAP_IPC_LOCK — run as root, `setcap cap_ipc_lock=ep $(which wirelab)`, or raise `ulimit -l`")]
    Mlock { cause: io::Error },
}

/// Puts the calling thread under SCHED_FIFO at `prio` (1..=99).
pub fn set_fifo_priority(prio: i32) -> Result<(), RtError> {
    if !(1..=99).contains(&prio) {
        return Err(RtError::PriorityRange { prio });
    }
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        return Err(RtError::Priority {
            prio,
            cause: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The kernel's real-time bandwidth limit: SCHED_FIFO threads together may
/// run `runtime_us` of every `period_us` (`kernel.sched_rt_runtime_us`,
/// `kernel.sched_rt_period_us`); `None` when it is off (runtime -1) or
/// cannot be read.
pub fn rt_bandwidth() -> Option<(u64, u64)> {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let runtime = u64::try_from(read("sched_rt_runtime_us")?).ok()?;
    let period = u64::try_from(read("sched_rt_period_us")?).ok()?;
    Some((runtime, period))
}

/// Number of online CPUs.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> Result<(), RtError> {
    let ncpu = online_cpus();
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(RtError::Pin {
            cpu,
            ncpu,
            cause: io::Error::from_raw_os_error(libc::EINVAL),
        });
    }
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so CPU_SET stays in bounds.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(RtError::Pin {
            cpu,
            ncpu,
            cause: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Locks current and future memory so page faults cannot stall the hot path.
pub fn lock_memory() -> Result<(), RtError> {
    // SAFETY: mlockall takes only flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc != 0 {
        return Err(RtError::Mlock {
            cause: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Restores the default SIGPIPE action, so `wirelab ... | head` ends
/// quietly like other command-line tools instead of reporting EPIPE.
pub fn default_sigpipe() {
    // SAFETY: installing SIG_DFL for SIGPIPE touches no memory of ours and
    // runs at startup, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_checked_and_pinning_works() {
        assert!(matches!(
            set_fifo_priority(0),
            Err(RtError::PriorityRange { prio: 0 })
        ));
        let t = std::thread::spawn(|| pin_to_cpu(0).is_ok());
        assert!(t.join().unwrap());
        let t = std::thread::spawn(|| pin_to_cpu(100_000));
        let e = t.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("cannot pin to CPU 100000"), "{e}");
    }
}
