//! Child processes: tie a child's life to its parent, send signals by pid.

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
}
