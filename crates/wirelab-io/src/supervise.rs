//! Stopping what runs: ask, give it a grace time, kill it, reap it.
//!
//! [`stop`] is the one procedure, over anything [`Stoppable`]: a local
//! child ([`Supervised`]) or a process reached another way (an agent's
//! child, through its protocol). [`stop_all`] runs it over many local
//! children at once, so they share one grace time instead of adding theirs
//! up. Each caller names its own grace time as a constant: how long its
//! kind of child needs to finish cleanly.
//!
//! [`Supervised`] is a child started by [`Supervised::spawn`], optionally
//! in a process group of its own (signals reach everything it forked) and
//! with PR_SET_PDEATHSIG; it is reaped with wait4(2), so its end carries
//! its CPU time.

use crate::process::{self, Reaped};
use std::io;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How often a waiting supervisor looks for an end.
const POLL: Duration = Duration::from_millis(10);

/// What can be stopped by [`stop`].
pub trait Stoppable {
    /// What an end reports.
    type End;
    type Error;
    /// Its end if it comes within `limit` (zero: only look).
    fn end_within(&mut self, limit: Duration) -> Result<Option<Self::End>, Self::Error>;
    /// Asks it to end (a signal; nothing when the caller already asked,
    /// e.g. by closing its input).
    fn ask(&mut self) -> Result<(), Self::Error>;
    /// Ends it without asking (SIGKILL).
    fn kill(&mut self) -> Result<(), Self::Error>;
}

/// How a [`stop`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped<E> {
    /// Its end; `None` only if it outlived SIGKILL by `after_kill`.
    pub end: Option<E>,
    /// Whether the grace time ran out and it was killed.
    pub killed: bool,
}

/// Ends `t`: nothing if it has ended already; else asks, waits up to
/// `grace`, then kills it and waits up to `after_kill` for its end.
pub fn stop<T: Stoppable>(
    t: &mut T,
    grace: Duration,
    after_kill: Duration,
) -> Result<Stopped<T::End>, T::Error> {
    let ended = |end| Stopped { end, killed: false };
    if let Some(e) = t.end_within(Duration::ZERO)? {
        return Ok(ended(Some(e)));
    }
    t.ask()?;
    if let Some(e) = t.end_within(grace)? {
        return Ok(ended(Some(e)));
    }
    t.kill()?;
    Ok(Stopped {
        end: t.end_within(after_kill)?,
        killed: true,
    })
}

/// [`stop`] over many local children at once: each asked with `sig`, one
/// `grace` for all, then the rest killed and reaped (SIGKILL cannot be
/// refused, so this ends). Each child keeps its end ([`Supervised::end`]).
pub fn stop_all<'a>(
    children: impl IntoIterator<Item = &'a mut Supervised>,
    sig: i32,
    grace: Duration,
) {
    let mut all: Vec<&mut Supervised> = children.into_iter().collect();
    for c in all.iter_mut() {
        let _ = c.signal(sig);
    }
    let t0 = Instant::now();
    while all.iter_mut().any(|c| c.poll().is_none()) && t0.elapsed() < grace {
        std::thread::sleep(POLL);
    }
    for c in all.iter_mut() {
        c.kill_and_reap();
    }
}

/// How [`Supervised::spawn`] starts a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spawn {
    /// In a process group of its own: signals go to the whole group.
    pub group: bool,
    /// SIGKILL when the spawning thread exits (PR_SET_PDEATHSIG, see
    /// [`process::die_with_parent`]).
    pub die_with_parent: bool,
}

/// A child, stopped and reaped by its supervisor. Reaping is the
/// supervisor's (wait4): never wait on the [`Child`] itself. A child
/// dropped unreaped is left running.
#[derive(Debug)]
pub struct Supervised {
    child: Child,
    group: bool,
    /// The signal [`Stoppable::ask`] sends; `None`: the caller asks.
    ask: Option<i32>,
    end: Option<Reaped>,
}

impl Supervised {
    /// Starts `cmd` as `how` says. [`Stoppable::ask`] sends nothing until
    /// [`Supervised::ask_with`] names a signal.
    pub fn spawn(cmd: &mut Command, how: Spawn) -> io::Result<Supervised> {
        use std::os::unix::process::CommandExt;
        if how.group {
            cmd.process_group(0);
        }
        if how.die_with_parent {
            process::die_with_parent(cmd);
        }
        // The stop's ask must reach the child whatever this process
        // inherited (a background job ignores SIGINT).
        process::default_stop_signals(cmd);
        Ok(Supervised {
            child: cmd.spawn()?,
            group: how.group,
            ask: None,
            end: None,
        })
    }

    /// Has [`Stoppable::ask`] send `sig`.
    pub fn ask_with(mut self, sig: i32) -> Supervised {
        self.ask = Some(sig);
        self
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child, for its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Its end if it comes within `limit` (zero: only look).
    pub fn wait(&mut self, limit: Duration) -> Option<Reaped> {
        let t0 = Instant::now();
        loop {
            if let Some(e) = self.poll() {
                return Some(e);
            }
            let waited = t0.elapsed();
            if waited >= limit {
                return None;
            }
            std::thread::sleep(POLL.min(limit - waited));
        }
    }

    /// Its end, once reaped.
    pub fn end(&self) -> Option<Reaped> {
        self.end
    }

    /// Reaps it if it has ended; its end once it has.
    pub fn poll(&mut self) -> Option<Reaped> {
        if self.end.is_none() {
            self.end = match process::reap(Some(self.pid()), false) {
                Ok(end) => end,
                // Reaped by someone else (a wait for any child): gone,
                // its status and CPU time unknown.
                Err(_) => Some(Reaped {
                    pid: self.pid(),
                    code: None,
                    signal: None,
                    cpu: Default::default(),
                }),
            };
        }
        self.end
    }

    /// Sends `sig` to it (its group, if it has one) unless it has been
    /// reaped: only an unreaped pid is surely still ours.
    pub fn signal(&mut self, sig: i32) -> io::Result<()> {
        match (self.poll(), self.group) {
            (Some(_), _) => Ok(()),
            (None, true) => process::kill_group(self.pid(), sig),
            (None, false) => process::kill(self.pid(), sig),
        }
    }

    /// SIGKILL (to its group, if it has one) unless it has ended, then
    /// reaps it, waiting as long as that takes.
    pub fn kill_and_reap(&mut self) -> Option<Reaped> {
        if self.poll().is_none() {
            let _ = self.signal(libc::SIGKILL);
            if let Ok(Some(end)) = process::reap(Some(self.pid()), true) {
                self.end = Some(end);
            }
        }
        self.poll()
    }

    /// [`stop`] with `grace`: its end, whether it was killed. The reap
    /// after SIGKILL waits as long as it takes.
    pub fn stop(&mut self, grace: Duration) -> Stopped<Reaped> {
        match stop(self, grace, Duration::MAX) {
            Ok(s) => s,
            Err(never) => match never {},
        }
    }
}

impl Stoppable for Supervised {
    type End = Reaped;
    type Error = std::convert::Infallible;

    fn end_within(&mut self, limit: Duration) -> Result<Option<Reaped>, Self::Error> {
        Ok(self.wait(limit))
    }

    fn ask(&mut self) -> Result<(), Self::Error> {
        if let Some(sig) = self.ask {
            let _ = self.signal(sig);
        }
        Ok(())
    }

    fn kill(&mut self) -> Result<(), Self::Error> {
        let _ = self.signal(libc::SIGKILL);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
