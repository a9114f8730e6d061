use super::*;
use std::path::PathBuf;
use std::process::Stdio;

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script]).stdin(Stdio::null());
    c
}

/// A shell that ignores `sig` and starts `sleep 30` in its group, then
/// creates a file: once the file is there both are set up, with no guess
/// at how long a loaded machine takes to get there.
fn trapping_shell(sig: &str, tag: &str) -> (Command, PathBuf) {
    let ready = std::env::temp_dir().join(format!("wl-supervise-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let script = format!("trap '' {sig}; sleep 30 & : > '{}'; wait", ready.display());
    (sh(&script), ready)
}

/// Waits until `cond` holds; 20 s is a hang guard, not an expectation.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(20), "{what} after 20 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether process `pid` runs program `name` (it has exec'd it).
fn runs(pid: u32, name: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
}

const GROUP: Spawn = Spawn {
    group: true,
    die_with_parent: true,
};

/// Whether any process is left in group `pgid` (signal 0 probes), after
/// giving its killed, orphaned members up to 10 s to be reaped by init.
fn group_alive(pgid: u32) -> bool {
    let t0 = Instant::now();
    while process::kill_group(pgid, 0).is_ok() {
        if t0.elapsed() > Duration::from_secs(10) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_child_ignoring_the_signal_is_killed_after_the_grace_and_reaped() {
    // The shell and its sleep both ignore SIGTERM; the sleep is in the
    // shell's group, so the group's SIGKILL ends it too.
    let (mut shell, ready) = trapping_shell("TERM", "term");
    let mut c = Supervised::spawn(&mut shell, GROUP)
        .unwrap()
        .ask_with(libc::SIGTERM);
    let pid = c.pid();
    wait_until("the shell's trap and sleep", || ready.exists());
    let _ = std::fs::remove_file(&ready);
    let s = c.stop(Duration::from_millis(100));
    assert!(s.killed);
    let end = s.end.expect("reaped");
    assert_eq!(
        (end.pid, end.signal, end.code),
        (pid, Some(libc::SIGKILL), None)
    );
    assert_eq!(c.end(), Some(end));
    assert!(!group_alive(pid), "the group's sleep survived");
    // Stopping again is a no-op with the same end.
    assert_eq!(c.stop(Duration::from_millis(100)).end, Some(end));
}

#[test]
fn a_child_that_obeys_ends_within_the_grace() {
    let mut c = Supervised::spawn(Command::new("sleep").arg("30"), GROUP)
        .unwrap()
        .ask_with(libc::SIGTERM);
    let s = c.stop(Duration::from_secs(20));
    assert!(!s.killed);
    assert_eq!(s.end.unwrap().signal, Some(libc::SIGTERM));
    let st = s.end.unwrap().exit_status();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!((st.code(), st.signal()), (None, Some(libc::SIGTERM)));
}

#[test]
fn an_ended_child_is_reaped_with_its_code_and_cpu_time() {
    let mut c = Supervised::spawn(
        &mut sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3"),
        Spawn {
            group: false,
            die_with_parent: false,
        },
    )
    .unwrap();
    let end = c
        .end_within(Duration::from_secs(30))
        .unwrap()
        .expect("ended");
    assert_eq!(end.code, Some(3));
    assert_eq!(end.exit_status().code(), Some(3));
    assert!(end.cpu.user_ns + end.cpu.system_ns > 0, "{end:?}");
    // No signal to an ended child: stop reports its end, not a kill.
    let s = c.stop(Duration::from_millis(100));
    assert_eq!((s.end, s.killed), (Some(end), false));
}

#[test]
fn stop_all_shares_one_grace_and_reaps_everything() {
    let (mut shell, ready) = trapping_shell("INT", "int");
    let mut kids = [
        Supervised::spawn(&mut shell, GROUP).unwrap(),
        Supervised::spawn(Command::new("sleep").arg("30"), GROUP).unwrap(),
    ];
    let pids: Vec<u32> = kids.iter().map(Supervised::pid).collect();
    // The shell ignores SIGINT and the sleep has exec'd (a child still
    // between fork and exec would not die of it as sleep does).
    wait_until("the shell's trap and sleep", || ready.exists());
    let _ = std::fs::remove_file(&ready);
    wait_until("sleep exec'd", || runs(pids[1], "sleep"));
    stop_all(kids.iter_mut(), libc::SIGINT, Duration::from_millis(100));
    let ends: Vec<Option<i32>> = kids.iter().map(|k| k.end().unwrap().signal).collect();
    assert_eq!(ends, [Some(libc::SIGKILL), Some(libc::SIGINT)]);
    assert!(pids.iter().all(|&p| !group_alive(p)));
}

/// Started as a background job of a non-interactive shell (CI runners
/// start steps so), this process ignores SIGINT; a child inherits that
/// across exec unless the supervisor gives it back the default, and the
/// polite stop would be lost.
#[test]
fn an_ignored_sigint_is_not_passed_on_to_a_child() {
    // SAFETY: signal(2) with a constant disposition; no handler runs.
    // The child copies the disposition at fork; it is restored below.
    let before = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let spawned = Supervised::spawn(Command::new("sleep").arg("30"), GROUP);
    // SAFETY: puts back the disposition saved above.
    unsafe { libc::signal(libc::SIGINT, before) };
    let mut c = spawned.unwrap().ask_with(libc::SIGINT);
    let pid = c.pid();
    wait_until("sleep exec'd", || runs(pid, "sleep"));
    let s = c.stop(Duration::from_secs(20));
    assert!(!s.killed, "SIGINT was ignored: {s:?}");
    assert_eq!(s.end.unwrap().signal, Some(libc::SIGINT));
}

#[test]
fn a_child_of_a_thread_that_ended_is_killed_by_the_kernel() {
    let c =
        std::thread::spawn(|| Supervised::spawn(Command::new("sleep").arg("30"), GROUP).unwrap())
            .join()
            .unwrap();
    let mut c = c;
    let end = c
        .end_within(Duration::from_secs(20))
        .unwrap()
        .expect("ended");
    assert_eq!(end.signal, Some(libc::SIGKILL));
}

/// A remote-like target: what `stop` asked of it, in order.
#[derive(Default)]
struct Fake {
    calls: Vec<&'static str>,
    /// Ends after this many asks/kills.
    ends_after: usize,
    fail_ask: bool,
}

impl Stoppable for Fake {
    type End = usize;
    type Error = &'static str;
    fn end_within(&mut self, limit: Duration) -> Result<Option<usize>, &'static str> {
        self.calls
            .push(if limit.is_zero() { "look" } else { "wait" });
        let acts = self
            .calls
            .iter()
            .filter(|c| **c == "ask" || **c == "kill")
            .count();
        Ok((acts >= self.ends_after).then_some(acts))
    }
    fn ask(&mut self) -> Result<(), &'static str> {
        self.calls.push("ask");
        if self.fail_ask {
            return Err("lost");
        }
        Ok(())
    }
    fn kill(&mut self) -> Result<(), &'static str> {
        self.calls.push("kill");
        Ok(())
    }
}

#[test]
fn stop_looks_asks_waits_then_kills_in_that_order() {
    let g = Duration::from_secs(1);
    let mut f = Fake::default();
    assert_eq!(
        stop(&mut f, g, g),
        Ok(Stopped {
            end: Some(0),
            killed: false
        })
    );
    assert_eq!(f.calls, ["look"]);
    let mut f = Fake {
        ends_after: 1,
        ..Fake::default()
    };
    assert_eq!(
        stop(&mut f, g, g),
        Ok(Stopped {
            end: Some(1),
            killed: false
        })
    );
    assert_eq!(f.calls, ["look", "ask", "wait"]);
    let mut f = Fake {
        ends_after: 2,
        ..Fake::default()
    };
    assert_eq!(
        stop(&mut f, g, g),
        Ok(Stopped {
            end: Some(2),
            killed: true
        })
    );
    assert_eq!(f.calls, ["look", "ask", "wait", "kill", "wait"]);
    let mut f = Fake {
        ends_after: 3,
        ..Fake::default()
    };
    assert_eq!(
        stop(&mut f, g, g),
        Ok(Stopped {
            end: None,
            killed: true
        })
    );
    let mut f = Fake {
        ends_after: 3,
        fail_ask: true,
        ..Fake::default()
    };
    assert_eq!(stop(&mut f, g, g), Err("lost"));
    assert_eq!(f.calls, ["look", "ask"]);
}
