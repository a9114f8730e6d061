//! Helpers for end-to-end tests: network namespaces joined by veth pairs,
//! the real binary run inside them, everything torn down on drop.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_wirelab")
}

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

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Whether namespace tests can run. On CI (CI set) a missing prerequisite
/// is a failure, not a skip, so a broken setup cannot pass silently.
pub fn netns_available(also: &[&str]) -> bool {
    let mut missing = vec![];
    if !is_root() {
        missing.push("root".to_string());
    }
    for c in ["ip"].iter().chain(also) {
        if !have(c) {
            missing.push(c.to_string());
        }
    }
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("end-to-end test prerequisites missing on CI: {missing:?}");
    }
    eprintln!("SKIP: needs {missing:?}");
    false
}

/// Whether the external `tools` (no root needed) are installed. On CI (CI
/// set) a missing tool is a failure, not a skip, as in [`netns_available`].
pub fn tools_available(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|c| !have(c)).collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "test prerequisites missing on CI: {missing:?} (scripts/install-deps.sh installs them)"
        );
    }
    eprintln!("SKIP: needs {missing:?}");
    false
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("spawn");
    if !out.status.success() {
        panic!(
            "{:?} failed: {}\n{}",
            cmd,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    out
}

pub fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Two namespaces, `s` (sender, .1 / ::1) and `r` (receiver, .2 / ::2),
/// joined by a veth pair with IPv4 198.18.x.0/24 and IPv6 fd77:x::/64.
pub struct Lab {
    pub s: String,
    pub r: String,
    pub dir: PathBuf,
}

impl Lab {
    pub fn new() -> Lab {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{}", std::process::id() % 10000, n);
        let lab = Lab {
            s: format!("wlt-{tag}-s"),
            r: format!("wlt-{tag}-r"),
            dir: std::env::temp_dir().join(format!("wlt-{tag}")),
        };
        std::fs::create_dir_all(&lab.dir).unwrap();
        let (va, vb) = (format!("wlt{tag}a"), format!("wlt{tag}b"));
        ip(&["netns", "add", &lab.s]);
        ip(&["netns", "add", &lab.r]);
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb]);
        ip(&["link", "set", &va, "netns", &lab.s]);
        ip(&["link", "set", &vb, "netns", &lab.r]);
        for (ns, dev, v4, v6) in [
            (&lab.s, &va, "198.18.0.1/24", "fd77::1/64"),
            (&lab.r, &vb, "198.18.0.2/24", "fd77::2/64"),
        ] {
            ip(&["-n", ns, "addr", "add", v4, "dev", dev]);
            ip(&["-n", ns, "addr", "add", v6, "dev", dev, "nodad"]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        lab
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The wirelab binary inside namespace `ns`.
    pub fn wirelab(&self, ns: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, exe()]);
        c
    }

    pub fn sh(&self, ns: &str, script: &str) -> Output {
        run(Command::new("ip").args(["netns", "exec", ns, "sh", "-c", script]))
    }

    /// Waits until something listens on UDP `port` inside `ns`.
    pub fn wait_udp(&self, ns: &str, port: u16) {
        let hex = format!(":{port:04X} ");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            let out = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    ns,
                    "cat",
                    "/proc/net/udp",
                    "/proc/net/udp6",
                ])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).contains(&hex) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("nothing listening on udp port {port} in {ns}");
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in [&self.s, &self.r] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The flow object with id `flow` in a report's "flows" array.
pub fn flow(v: &serde_json::Value, flow: u64) -> &serde_json::Value {
    v["flows"]
        .as_array()
        .unwrap_or_else(|| panic!("no flows in {v}"))
        .iter()
        .find(|f| f["flow"].as_u64() == Some(flow))
        .unwrap_or_else(|| panic!("no flow {flow} in {v}"))
}
