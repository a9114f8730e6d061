//! Helpers for end-to-end tests: network namespaces joined by veth pairs,
//! the real binary run inside them, everything torn down on drop.
#![allow(dead_code)]

pub mod bundle;
pub mod files;
pub mod prom;
pub mod sshd;
pub mod tcpdump;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;
use wirelab_lab::lab::{exec_in, LinkSpec};

pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_wirelab")
}

pub use wirelab_lab::lab::is_root;

/// Whether namespace tests can run: root, `ip` and the tools in `also`.
/// When not, the test is skipped through [`wirelab_testkit::skip`] (a
/// failure on CI), naming everything missing.
#[track_caller]
pub fn netns_available(also: &[&str]) -> bool {
    let tools: Vec<&str> = ["ip"]
        .iter()
        .chain(also)
        .copied()
        .filter(|c| !wirelab_testkit::have_tool(c))
        .collect();
    let mut missing = vec![];
    if !is_root() {
        missing.push("root (network namespaces)".to_string());
    }
    if !tools.is_empty() {
        missing.push(format!(
            "{} (scripts/install-deps.sh installs them)",
            tools.join(", ")
        ));
    }
    if missing.is_empty() {
        return true;
    }
    wirelab_testkit::skip(format!("needs {}", missing.join(" and ")));
    false
}

/// Whether the external `tools` (no root needed) are installed; a skip
/// through [`wirelab_testkit::skip`] when not.
#[track_caller]
pub fn tools_available(tools: &[&str]) -> bool {
    wirelab_testkit::require_tools(tools)
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

/// Interrupts `child` (SIGINT), as a user stops `wirelab`, and returns its
/// output once it exited successfully within 20 s (else a panic with its
/// stderr).
pub fn interrupt(child: Child) -> Output {
    run(Command::new("kill").args(["-INT", &child.id().to_string()]));
    let t0 = std::time::Instant::now();
    let out = wait_ok(child);
    assert!(t0.elapsed() < Duration::from_secs(20), "slow to stop");
    out
}

/// Waits for `child`: its output, once it exited successfully (else a
/// panic with its stderr).
pub fn wait_ok(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// [`interrupt`], then the JSON report the stopped process printed.
pub fn stop_json(child: Child) -> serde_json::Value {
    json(&interrupt(child))
}

/// A count in a JSON report.
pub fn count(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A UDP port free on loopback now (the kernel's pick).
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until `path` exists (a capture creates its file once it has opened
/// its interface), failing the test with `what` after `within`.
pub fn wait_for_file(path: &std::path::Path, what: &str, within: Duration) {
    let t0 = std::time::Instant::now();
    while !path.exists() {
        assert!(t0.elapsed() < within, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (at most 10 s) until something listens on IPv4 UDP `port` in this
/// namespace.
pub fn wait_udp_here(port: u16) {
    let hex = format!(":{port:04X} ");
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let t = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
        if t.contains(&hex) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing listens on UDP port {port}");
}

/// Two namespaces, `s` (sender, .1 / ::1) and `r` (receiver, .2 / ::2),
/// joined by a veth pair with IPv4 198.18.0.0/24 and IPv6 fd77::/64, and a
/// directory for the test's files; all removed on drop.
pub struct Lab {
    /// The sender's namespace.
    pub s: String,
    /// The receiver's namespace.
    pub r: String,
    pub dir: PathBuf,
    pub lab: wirelab_lab::lab::Lab,
}

impl Lab {
    pub fn new() -> Lab {
        let lab = wirelab_lab::lab::Lab::new("wlt")
            .namespace("s")
            .namespace("r")
            .link(
                "s",
                "r",
                LinkSpec::new()
                    .ipv4("198.18.0.1/24", "198.18.0.2/24")
                    .ipv6("fd77::1/64", "fd77::2/64"),
            )
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(lab.ns("s"));
        std::fs::create_dir_all(&dir).unwrap();
        Lab {
            s: lab.ns("s").into(),
            r: lab.ns("r").into(),
            dir,
            lab,
        }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The sender's interface.
    pub fn tx_if(&self) -> &str {
        &self.lab.end("s", "r").dev
    }

    /// The receiver's interface.
    pub fn rx_if(&self) -> &str {
        &self.lab.end("r", "s").dev
    }

    /// The wirelab binary inside namespace `ns` (a name, `lab.s` or `lab.r`).
    pub fn wirelab(&self, ns: &str) -> Command {
        exec_in(ns, exe())
    }

    pub fn sh(&self, ns: &str, script: &str) -> Output {
        run(exec_in(ns, "sh").args(["-c", script]))
    }

    /// `wirelab recv --port PORT ARGS` in the receiver's namespace, its
    /// output on pipes, returned once it listens.
    pub fn spawn_recv(&self, port: u16, args: &[&str]) -> std::process::Child {
        let child = self
            .wirelab(&self.r)
            .args(["recv", "--port", &port.to_string()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.wait_udp(&self.r, port);
        child
    }

    /// Drops every 100th datagram to UDP `port` arriving in the receiver's
    /// namespace, with nftables (its numgen counts from 0: the datagrams in
    /// positions 0, 100, 200, ... are dropped).
    pub fn drop_every_100th(&self, port: u16) {
        self.sh(
            &self.r,
            &format!(
                "nft add table inet wltest && \
                 nft add chain inet wltest input '{{ type filter hook input priority 0; }}' && \
                 nft add rule inet wltest input udp dport {port} numgen inc mod 100 == 0 counter drop"
            ),
        );
    }

    /// Waits until something listens on UDP `port` inside `ns`.
    pub fn wait_udp(&self, ns: &str, port: u16) {
        let role = if ns == self.s { "s" } else { "r" };
        self.lab
            .wait_udp(role, port, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
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

/// Namespaces A – E – B for `wirelab emulate` in E (`Lab::bridged`:
/// A at 198.18.SUBNET.1, B at .2, static neighbours, no IPv6, so only the
/// test's traffic crosses E), with a scratch directory removed on drop.
pub struct EmuLab {
    pub lab: wirelab_lab::lab::Lab,
    pub dir: PathBuf,
    /// B's address.
    b: String,
}

impl EmuLab {
    pub fn new(tag: &str, subnet: u8) -> EmuLab {
        let (a, b) = (format!("198.18.{subnet}.1"), format!("198.18.{subnet}.2"));
        let lab = wirelab_lab::lab::Lab::bridged(tag, ["a", "e", "b"], [&a, &b])
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(lab.ns("e"));
        std::fs::create_dir_all(&dir).unwrap();
        EmuLab { lab, dir, b }
    }

    /// `wirelab send` of `n` probes from A to B at 1 kpps, with `extra`
    /// flags; its output.
    pub fn send_probes(&self, n: u64, extra: &[&str]) -> Output {
        run(exec_in(self.lab.ns("a"), exe())
            .args(["send", &self.b, "--rate", "1kpps", "-n", &n.to_string()])
            .args(extra))
    }

    /// Starts `wirelab emulate --json` in E between its two interfaces and
    /// waits until its rings and sockets are open (frames from then on are
    /// forwarded); panics with its stderr if it exits first.
    pub fn emulate(&self, args: &[&str]) -> std::process::Child {
        // Two receive rings and two sending sockets.
        self.lab
            .spawn_bridge("e", self.emulate_cmd(args), 4, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts `wirelab emulate --json` in E without waiting for it (for a
    /// run that is expected to fail).
    pub fn spawn_emulate(&self, args: &[&str]) -> std::process::Child {
        self.emulate_cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn emulate_cmd(&self, args: &[&str]) -> Command {
        let mut c = exec_in(self.lab.ns("e"), exe());
        c.args(["emulate", "--json", "--a"])
            .arg(&self.lab.end("e", "a").dev)
            .arg("--b")
            .arg(&self.lab.end("e", "b").dev)
            .args(args);
        c
    }

    /// `role`'s interface towards `peer`.
    pub fn dev(&self, role: &str, peer: &str) -> String {
        self.lab.end(role, peer).dev.clone()
    }

    /// An interface counter (`tx_packets`, `rx_packets`, …) in `role`'s
    /// namespace.
    pub fn counter(&self, role: &str, dev: &str, what: &str) -> u64 {
        let p = format!("/sys/class/net/{dev}/statistics/{what}");
        let o = run(self.lab.exec(role, "cat").arg(p));
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    }
}

impl Drop for EmuLab {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
