//! Prerequisite checks; each one that fails has called [`skip`](crate::skip) with what is
//! missing and how to install it.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::skip;

/// Whether the process runs as root: its effective uid (the third field of `Uid:` in
/// /proc/self/status) is 0.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Whether `tool` can be run: a path (with a `/`) that is an executable file, or a name
/// found as one in a `PATH` directory.
pub fn have_tool(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if tool.contains('/') {
        return executable(Path::new(tool));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(tool))))
}

/// Whether the test runs as root; skips it (see [`skip`]) when not.
#[track_caller]
pub fn require_root() -> bool {
    if is_root() {
        return true;
    }
    skip("needs root (network namespaces, raw sockets)");
    false
}

/// Whether every one of `tools` can be run; skips the test, naming the missing ones, when
/// not.
#[track_caller]
pub fn require_tools(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have_tool(t)).collect();
    if missing.is_empty() {
        return true;
    }
    let them = if missing.len() == 1 { "it" } else { "them" };
    skip(format!(
        "needs {} (scripts/install-deps.sh installs {them})",
        missing.join(", ")
    ));
    false
}

/// Whether `python3` can import every one of `modules`; skips the test when not.
#[track_caller]
pub fn require_python_modules(modules: &[&str]) -> bool {
    if !require_tools(&["python3"]) {
        return false;
    }
    let imports = Command::new("python3")
        .args(["-c", &format!("import {}", modules.join(", "))])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !imports {
        skip(format!(
            "needs the python modules {} (scripts/install-deps.sh installs them)",
            modules.join(", ")
        ));
    }
    imports
}
