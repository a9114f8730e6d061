//! The one way a wirelab test skips itself when a prerequisite is missing (root, a tool,
//! a Python module), so that no skip passes silently.
//!
//! - With `CI` set (to anything) a skip is a failure: [`skip`] panics with the reason, as a
//!   broken CI setup must not pass.
//! - Otherwise [`skip`] prints one line, `wirelab-skip: <test>: <reason>`, to stderr and,
//!   because libtest captures the output of passing tests, appends the same line to the
//!   file named by [`SKIP_LOG_ENV`] when that is set (`scripts/test.sh` sets it and lists
//!   the skips at the end). The test then returns, and libtest reports it ok.
//!
//! The `require_*` functions check one prerequisite and return whether the test can go
//! on; when it cannot they have already called [`skip`]:
//!
//! ```ignore
//! if !wirelab_testkit::require_root() {
//!     return;
//! }
//! ```

mod require;

pub use require::{have_tool, is_root, require_python_modules, require_root, require_tools};

use std::fmt::Display;
use std::io::Write;

/// The environment variable naming the file every skip line is appended to.
pub const SKIP_LOG_ENV: &str = "WIRELAB_SKIP_LOG";

/// The prefix of every skip line, on stderr and in the log file.
pub const SKIP_PREFIX: &str = "wirelab-skip:";

/// Whether a skip must fail: the `CI` environment variable is set, to anything.
pub fn on_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Skips the calling test for `reason`: a panic with the reason on CI, else one line
/// (`wirelab-skip: <test>: <reason>`) on stderr and in the skip log. The caller returns
/// (or leaves out the part of the test the reason concerns) afterwards.
#[track_caller]
pub fn skip(reason: impl Display) {
    let test = test_path();
    if on_ci() {
        panic!("{test}: a prerequisite is missing on CI (CI is set, so a skip fails): {reason}");
    }
    let line = format!("{SKIP_PREFIX} {test}: {reason}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        // One write of one line with O_APPEND: lines from concurrent tests do not mix.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            panic!("{test}: cannot append to {SKIP_LOG_ENV}={path:?}: {e}; skip was: {reason}");
        }
    }
}

/// The calling test as `<test binary>::<test name>`: the binary's file name without
/// cargo's hash suffix, and libtest's name for the thread it runs each test on.
pub fn test_path() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "?".into());
    let binary = match exe.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            name.to_string()
        }
        _ => exe,
    };
    match std::thread::current().name() {
        Some(name) if name != "main" => format!("{binary}::{name}"),
        _ => binary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Output};

    #[test]
    fn the_test_path_names_the_binary_and_the_test() {
        assert_eq!(
            test_path(),
            "wirelab_testkit::tests::the_test_path_names_the_binary_and_the_test"
        );
    }

    /// Run only by [`run_child`], in a process of its own.
    #[test]
    #[ignore = "run by the skip tests in a child process"]
    fn child_skips() {
        skip("the reason given");
    }

    /// This test binary running [`child_skips`] alone, with `CI` as given and the skip log
    /// at `log`.
    fn run_child(ci: bool, log: &std::path::Path) -> Output {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--ignored",
            "--exact",
            "tests::child_skips",
            "--test-threads=1",
        ])
        .env(SKIP_LOG_ENV, log)
        .env_remove("CI");
        if ci {
            cmd.env("CI", "1");
        }
        cmd.output().unwrap()
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("wl-testkit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn off_ci_a_skip_passes_and_is_logged_in_the_fixed_form() {
        let log = scratch("off-ci");
        let out = run_child(false, &log);
        assert!(out.status.success(), "{out:?}");
        let logged = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert_eq!(
            logged,
            "wirelab-skip: wirelab_testkit::tests::child_skips: the reason given\n"
        );
    }

    #[test]
    fn on_ci_a_skip_fails_with_its_reason() {
        let log = scratch("on-ci");
        let out = run_child(true, &log);
        assert!(!out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("the reason given"), "{stdout}");
        assert!(!log.exists(), "a failing skip is not logged as a skip");
    }
}
