//! Child processes: tie a child's life to its parent, send signals by pid
//! or process group, reap children with their CPU time, place a child in a
//! cgroup.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Has the kernel SIGKILL the child `cmd` starts when the thread that
/// spawned it exits (PR_SET_PDEATHSIG), so a child never outlives a parent
/// that was killed without a chance to clean up. Spawn from a thread that
/// lives as long as the parent process (the kernel watches the spawning
/// thread, not the process). The spawn fails if the parent is already gone
/// by the time the child sets the flag.
pub fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: prctl(2) and getppid(2) are
    // plain system calls, and io::Error::last_os_error reads errno without
    // allocating. It touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the flag was set: the kernel will not
            // send the signal, so refuse to run orphaned.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Gives the child `cmd` starts the default action for SIGINT and
/// SIGTERM. An ignored signal stays ignored across fork and exec: a
/// program started as a non-interactive shell's background job (`cmd &`,
/// a CI runner's step) has SIGINT ignored, and so would every child it
/// starts — a supervisor's polite stop would then be lost and each stop
/// end in SIGKILL after the grace, without the child's own clean-up.
pub fn default_stop_signals(cmd: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec: it only
    // calls signal(2), which is async-signal-safe, with constants; it
    // touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM] {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Sends signal `sig` (e.g. `libc::SIGTERM`) to process `pid`. Only for a
/// child not yet reaped (`Child::try_wait` said it runs), so the pid cannot
/// have been reused by another process.
pub fn kill(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: kill(2) takes two integers and touches no memory of ours; a
    // positive pid addresses exactly one process.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to every process of process group `pgid` (a group made by
/// a child spawned with `CommandExt::process_group(0)`, whose id is that
/// child's pid).
pub fn kill_group(pgid: u32, sig: i32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|&p| p > 1)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: kill(2) with a negative pid addresses the process group
    // -pid; it takes two integers and touches no memory of ours. pgid > 1
    // excludes 0 (our own group) and -1 (every process).
    if unsafe { libc::kill(-pgid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time of a process and the descendants it reaped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user_ns: u64,
    pub system_ns: u64,
}

impl CpuTime {
    fn from_rusage(r: &libc::rusage) -> CpuTime {
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        CpuTime {
            user_ns: ns(r.ru_utime),
            system_ns: ns(r.ru_stime),
        }
    }
}

/// A child reaped by [`reap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reaped {
    pub pid: u32,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Its CPU time and that of the descendants it reaped.
    pub cpu: CpuTime,
}

impl Reaped {
    /// Its end as the standard library reports one (`code()`, `signal()`).
    pub fn exit_status(&self) -> std::process::ExitStatus {
        use std::os::unix::process::ExitStatusExt;
        // The wait(2) status word: the exit code in bits 8..16, or the
        // terminating signal in bits 0..7.
        let raw = match (self.code, self.signal) {
            (Some(c), _) => (c & 0xff) << 8,
            (None, Some(s)) => s & 0x7f,
            (None, None) => 0x7f, // neither: reads as neither exited nor signalled
        };
        std::process::ExitStatus::from_raw(raw)
    }
}

/// Reaps one ended child (`pid`, or any child when `None`) with its CPU
/// time (wait4(2)); `Ok(None)` when none has ended yet (or, for `None`,
/// when there is no child at all). Blocks only if `block`.
pub fn reap(pid: Option<u32>, block: bool) -> io::Result<Option<Reaped>> {
    let target = match pid {
        None => -1,
        Some(p) => libc::pid_t::try_from(p)
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?,
    };
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: wait4(2) writes only into `status` and `ru`, both live
        // locals of the right types.
        let r = unsafe { libc::wait4(target, &mut status, flags, &mut ru) };
        if r > 0 {
            let (code, signal) = if libc::WIFEXITED(status) {
                (Some(libc::WEXITSTATUS(status)), None)
            } else if libc::WIFSIGNALED(status) {
                (None, Some(libc::WTERMSIG(status)))
            } else {
                (None, None)
            };
            return Ok(Some(Reaped {
                pid: r as u32,
                code,
                signal,
                cpu: CpuTime::from_rusage(&ru),
            }));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) if pid.is_none() => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// The CPU time of every child this process has reaped so far
/// (getrusage(RUSAGE_CHILDREN)).
pub fn reaped_children_cpu() -> CpuTime {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage(2) writes only into `ru`, a live local.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return CpuTime::default();
    }
    CpuTime::from_rusage(&ru)
}

/// Makes this process the reaper of its orphaned descendants
/// (PR_SET_CHILD_SUBREAPER): a grandchild whose parent dies is re-parented
/// here, so it can still be found, stopped and reaped ([`reap`]).
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(2) with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Has the child `cmd` starts move itself into the cgroup (v2) whose
/// `cgroup.procs` is `procs` (opened for writing by the caller) before it
/// runs its program, so everything it forks is in that cgroup from the
/// start. The spawn fails if the kernel refuses the move.
pub fn join_cgroup(cmd: &mut Command, procs: std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: the closure runs in the child between fork and exec: it only
    // calls write(2) (async-signal-safe) on a descriptor the parent keeps
    // open (`procs` is moved into the closure, which `cmd` owns) with a
    // static buffer; "0" means the writing process.
    unsafe {
        cmd.pre_exec(move || {
            let fd = procs.as_raw_fd();
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn kill_reaches_a_child_and_refuses_bad_pids() {
        let mut c = Command::new("sleep");
        c.arg("30").stdout(Stdio::null());
        die_with_parent(&mut c);
        let mut child = c.spawn().unwrap();
        kill(child.id(), libc::SIGTERM).unwrap();
        let st = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGTERM));
        assert!(kill(0, libc::SIGTERM).is_err());
        assert!(kill(u32::MAX, libc::SIGTERM).is_err());
    }

    #[test]
    fn a_group_is_stopped_whole_and_reaped_with_its_cpu_time() {
        // A shell that burns CPU in a subshell, in a group of its own.
        let mut c = Command::new("sh");
        c.args(["-c", "(while :; do :; done) & while :; do :; done"])
            .process_group(0);
        // Reaped below by `reap`, the function under test.
        #[allow(clippy::zombie_processes)]
        let pid = c.spawn().unwrap().id();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(reap(Some(pid), false).unwrap(), None);
        kill_group(pid, libc::SIGKILL).unwrap();
        let r = reap(Some(pid), true).unwrap().unwrap();
        assert_eq!((r.pid, r.signal, r.code), (pid, Some(libc::SIGKILL), None));
        assert!(r.cpu.user_ns + r.cpu.system_ns > 0, "{r:?}");
        assert!(kill_group(0, libc::SIGTERM).is_err());
        assert!(kill_group(1, libc::SIGTERM).is_err());
    }
}
