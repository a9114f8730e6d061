//! Log lines on stderr: plain text when stderr is not a terminal, colours
//! on a terminal unless `NO_COLOR` is set (https://no-color.org).
//! `WIRELAB_LOG=debug` makes every run log one line (the version and the
//! command line) before it fails here on a missing file.

use crate::common::{exe, tools_available};
use std::process::Command;

const ESC: u8 = 0x1b;

/// stderr of a failing `export` at debug level, with `env` added; through
/// a pseudo-terminal (`script`) when `tty`.
fn stderr_of(tty: bool, env: &[(&str, &str)]) -> Vec<u8> {
    let mut cmd = if tty {
        // script(1) runs the command on a new pty and copies what it
        // prints (stdout and stderr both) to its own stdout.
        let mut c = Command::new("script");
        c.args([
            "-qec",
            &format!("{} export /nonexistent/records.wlr", exe()),
        ])
        .arg("/dev/null");
        c
    } else {
        let mut c = Command::new(exe());
        c.args(["export", "/nonexistent/records.wlr"]);
        c
    };
    cmd.env("WIRELAB_LOG", "debug").env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn");
    let text = if tty { out.stdout } else { out.stderr };
    let s = String::from_utf8_lossy(&text);
    assert!(s.contains("DEBUG"), "no log line: {s}");
    assert!(s.contains("cannot open /nonexistent/records.wlr"), "{s}");
    text
}

#[test]
fn redirected_stderr_has_no_colour_codes() {
    let e = stderr_of(false, &[]);
    assert!(!e.contains(&ESC), "{}", String::from_utf8_lossy(&e));
    // NO_COLOR set to empty means "not set" (no-color.org): still plain, not a terminal.
    let e = stderr_of(false, &[("NO_COLOR", "")]);
    assert!(!e.contains(&ESC), "{}", String::from_utf8_lossy(&e));
}

#[test]
fn a_terminal_gets_colour_unless_no_color_is_set() {
    if !tools_available(&["script"]) {
        return;
    }
    let e = stderr_of(true, &[]);
    assert!(e.contains(&ESC), "{}", String::from_utf8_lossy(&e));
    let e = stderr_of(true, &[("NO_COLOR", "1")]);
    assert!(!e.contains(&ESC), "{}", String::from_utf8_lossy(&e));
}
