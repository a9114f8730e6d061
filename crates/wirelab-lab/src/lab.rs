//! Network namespace labs on one host: namespaces joined by veth pairs, built
//! with `ip` (iproute2) and removed again on drop.
//!
//! ```no_run
//! use wirelab_lab::lab::{Lab, LinkSpec};
//! let lab = Lab::new("wl")
//!     .namespace("s")
//!     .namespace("r")
//!     .link("s", "r", LinkSpec::new().ipv4("198.18.0.1/24", "198.18.0.2/24"))
//!     .build()?;
//! let status = lab.exec("r", "ping").args(["-c1", "198.18.0.1"]).status();
//! # Ok::<(), wirelab_lab::lab::LabError>(())
//! ```
//!
//! # Names
//! A namespace is `TAG-PID-N-ROLE`: the process id and a per-process counter
//! make every lab unique, so labs of concurrent processes and threads never
//! meet, and `ip netns list` says who made them. A veth end is made in the
//! caller's namespace and then moved, so its name is unique on the host:
//! `TAG` + pid and counter in base 36 + link index + `a`/`b`
//! (`wl1hx3k00a`), inside the kernel's 15-byte limit.
//!
//! # Teardown
//! Dropping a [`Lab`] ends the processes left inside its namespaces
//! (SIGTERM) and deletes the namespaces, which deletes the veth ends inside
//! them. A build that fails half-way removes what it made. For a run
//! that the user may interrupt, [`Lab::guard_signals`] turns the first
//! SIGINT/SIGTERM into a stop request and the second into an immediate
//! teardown and exit, so no signal leaves namespaces behind.

use std::net::IpAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The kernel's limit on interface names (IFNAMSIZ without the NUL).
const IFNAME_MAX: usize = 15;
/// Longest tag and role: keeps interface names inside [`IFNAME_MAX`].
const LABEL_MAX: usize = 6;

/// Why a lab could not be built or used; each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(
        "a network namespace lab needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): run as root, e.g. with sudo"
    )]
    NeedsRoot,
    #[error("cannot run `{program}` ({cause}): install {package} (apt-get install {package})")]
    MissingTool {
        program: String,
        package: &'static str,
        cause: std::io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("{what} {name:?} must be 1 to {LABEL_MAX} lowercase letters or digits")]
    BadLabel { what: &'static str, name: String },
    #[error("interface name {0:?} must be 1 to 15 letters, digits, '-', '_' or '.'")]
    BadIfname(String),
    #[error("namespace {0:?} is declared twice")]
    DuplicateNamespace(String),
    #[error("namespace {0:?} is not part of the lab: declare it with .namespace() first")]
    UnknownNamespace(String),
    #[error("a link joins two different namespaces, not {0:?} with itself")]
    SelfLink(String),
    #[error("a lab has at most 36 links")]
    TooManyLinks,
    #[error("bad address {addr:?}: expected ADDRESS/PREFIX, e.g. 198.18.0.1/24 or fd77::1/64")]
    BadAddress { addr: String },
    #[error("link {link} has IPv6 turned off but IPv6 address {addr}: drop one of the two")]
    Ipv6Off { link: usize, addr: String },
    #[error("RPS CPU {0} is out of range (0 to 63)")]
    BadCpu(usize),
    #[error("nothing listened on UDP port {port} in namespace {ns} within {timeout:?}")]
    NotListening {
        ns: String,
        port: u16,
        timeout: Duration,
    },
    #[error("the bridge in namespace {ns} exited ({status}) before it was up: {stderr}")]
    BridgeExited {
        ns: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("namespace {ns} did not open {n} packet sockets within {timeout:?}")]
    NoPacketSockets {
        ns: String,
        n: usize,
        timeout: Duration,
    },
    #[error("cannot watch SIGINT/SIGTERM: {0}")]
    Signals(std::io::Error),
}

/// An address with its prefix length, as `ip addr add` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    fn parse(s: &str) -> Result<Cidr, LabError> {
        let bad = || LabError::BadAddress { addr: s.into() };
        let (a, p) = s.split_once('/').ok_or_else(bad)?;
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let prefix: u8 = p.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(bad());
        }
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// What to set on one veth pair. Side `a` is the first namespace given to
/// [`LabBuilder::link`], side `b` the second.
#[derive(Debug, Clone, Default)]
pub struct LinkSpec {
    addrs: [Vec<String>; 2],
    ipv6_off: bool,
    mtu: Option<u32>,
    gro_off: bool,
    rps_cpu: [Option<usize>; 2],
    names: [Option<String>; 2],
}

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
}

impl LinkSpec {
    pub fn new() -> LinkSpec {
        LinkSpec::default()
    }

    /// IPv4 addresses with prefix (`198.18.0.1/24`) for side a and side b.
    pub fn ipv4(self, a: &str, b: &str) -> LinkSpec {
        self.addrs(a, b)
    }

    /// IPv6 addresses with prefix (`fd77::1/64`), added without duplicate
    /// address detection so they are usable at once.
    pub fn ipv6(self, a: &str, b: &str) -> LinkSpec {
        self.addrs(a, b)
    }

    /// One address with prefix (IPv4 or IPv6) on one end only.
    pub fn addr(mut self, side: Side, cidr: &str) -> LinkSpec {
        self.addrs[side.index()].push(cidr.into());
        self
    }

    fn addrs(mut self, a: &str, b: &str) -> LinkSpec {
        self.addrs[0].push(a.into());
        self.addrs[1].push(b.into());
        self
    }

    /// IPv6 off on both ends (no router solicitations or neighbour
    /// discovery on the wire: a capture holds only what the test sent).
    pub fn ipv6_off(mut self) -> LinkSpec {
        self.ipv6_off = true;
        self
    }

    /// The interfaces' names inside their namespaces (side a, side b); by
    /// default the lab names them after its tag and the link's number.
    pub fn names(mut self, a: &str, b: &str) -> LinkSpec {
        self.names = [Some(a.into()), Some(b.into())];
        self
    }

    pub fn mtu(mut self, mtu: u32) -> LinkSpec {
        self.mtu = Some(mtu);
        self
    }

    /// Generic receive offload off on both ends (needs ethtool), so every
    /// frame reaches the receiver as sent.
    pub fn gro_off(mut self) -> LinkSpec {
        self.gro_off = true;
        self
    }

    /// Receive processing of `side`'s end on `cpu` (RPS), away from the
    /// CPU a measuring process runs on.
    pub fn rps_cpu(mut self, side: Side, cpu: usize) -> LinkSpec {
        self.rps_cpu[side.index()] = Some(cpu);
        self
    }
}

/// Declares a lab; [`LabBuilder::build`] makes it.
#[derive(Debug, Clone)]
pub struct LabBuilder {
    tag: String,
    roles: Vec<String>,
    links: Vec<(String, String, LinkSpec)>,
    sysctls: Vec<(String, String, String)>,
    routes: Vec<(String, String, String)>,
}

/// One end of a veth pair in a built lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The role of the namespace this end is in.
    pub role: String,
    /// The namespace's name.
    pub ns: String,
    /// The interface's name (inside `ns`).
    pub dev: String,
    /// Its addresses, in the order given.
    pub addrs: Vec<Cidr>,
}

impl Endpoint {
    /// The first IPv4 address, if any.
    pub fn ipv4(&self) -> Option<IpAddr> {
        self.addrs.iter().map(|c| c.addr).find(IpAddr::is_ipv4)
    }

    /// The first IPv6 address, if any.
    pub fn ipv6(&self) -> Option<IpAddr> {
        self.addrs.iter().map(|c| c.addr).find(IpAddr::is_ipv6)
    }
}

/// A veth pair of a built lab: `a` and `b` as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub a: Endpoint,
    pub b: Endpoint,
}

/// Namespaces and veth pairs that exist until the lab is dropped.
#[derive(Debug)]
pub struct Lab {
    /// (role, namespace name), in declaration order.
    namespaces: Vec<(String, String)>,
    links: Vec<Link>,
    /// Steps that make the lab, in order.
    plan: Vec<Vec<String>>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn check_label(what: &'static str, s: &str) -> Result<(), LabError> {
    let ok = !s.is_empty()
        && s.len() <= LABEL_MAX
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(LabError::BadLabel {
            what,
            name: s.into(),
        })
    }
}

/// A Linux interface name: at most 15 bytes (IFNAMSIZ − 1), none of the
/// characters the kernel or `ip` would refuse or misread.
fn check_ifname(s: &str) -> Result<(), LabError> {
    let ok = !s.is_empty()
        && s.len() <= 15
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s != "."
        && s != "..";
    ok.then_some(())
        .ok_or_else(|| LabError::BadIfname(s.into()))
}

/// `n` in base 36, the last `width` digits, zero-padded.
fn base36(mut n: u64, width: usize) -> String {
    let mut d = vec![b'0'; width];
    for c in d.iter_mut().rev() {
        *c = b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize];
        n /= 36;
    }
    String::from_utf8(d).expect("ASCII digits")
}

/// The name of side `side` of link `link` of lab `n` of process `pid`:
/// tag, 5 digits of pid (pid_max is at most 2^22 < 36^5), 2 of the lab
/// counter (it wraps after 1296 labs of one process), 1 of the link index
/// and `a` or `b`: unique on the host while the labs exist, and at most
/// [`IFNAME_MAX`] bytes.
fn dev_name(tag: &str, pid: u32, n: u32, link: usize, side: usize) -> String {
    let name = format!(
        "{tag}{}{}{}{}",
        base36(u64::from(pid), 5),
        base36(u64::from(n), 2),
        base36(link as u64, 1),
        ["a", "b"][side]
    );
    debug_assert!(name.len() <= IFNAME_MAX, "{name}");
    name
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl Lab {
    /// Starts a lab whose names begin with `tag` (1 to 6 lowercase letters
    /// or digits, e.g. `wl`).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(tag: &str) -> LabBuilder {
        LabBuilder {
            tag: tag.into(),
            roles: vec![],
            links: vec![],
            sysctls: vec![],
            routes: vec![],
        }
    }

    /// The name of the namespace with `role`.
    ///
    /// # Panics
    /// If the lab has no such role (a programming error: roles are fixed
    /// when the lab is declared).
    pub fn ns(&self, role: &str) -> &str {
        self.namespaces
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, n)| n.as_str())
            .unwrap_or_else(|| panic!("the lab has no namespace {role:?}"))
    }

    /// Every namespace's name, in declaration order.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.namespaces.iter().map(|(_, n)| n.as_str())
    }

    /// The links in declaration order.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The end in namespace `role` of the first link between `role` and
    /// `peer`.
    ///
    /// # Panics
    /// If no link joins the two (a programming error, as in [`Lab::ns`]).
    pub fn end(&self, role: &str, peer: &str) -> &Endpoint {
        self.links
            .iter()
            .find_map(|l| {
                if l.a.role == role && l.b.role == peer {
                    Some(&l.a)
                } else if l.b.role == role && l.a.role == peer {
                    Some(&l.b)
                } else {
                    None
                }
            })
            .unwrap_or_else(|| panic!("the lab has no link between {role:?} and {peer:?}"))
    }

    /// The steps that made this lab, in order, each the arguments of one
    /// `ip` call; a step inside a namespace is `netns exec NS PROGRAM ...`
    /// ([`plan_program`] names the program).
    pub fn plan(&self) -> &[Vec<String>] {
        &self.plan
    }

    /// `program` run inside namespace `role` (`ip netns exec NS program`).
    /// `ip netns exec` execs, so the child's pid is the program's own and a
    /// signal sent to it reaches the program.
    pub fn exec(&self, role: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        exec_in(self.ns(role), program)
    }

    /// Two end namespaces joined through a middle one by two veth pairs,
    /// for a layer-2 bridge such as `wirelab emulate` in the middle:
    /// `roles` = [end, middle, end], `addrs` the two ends' IPv4 addresses
    /// (one /24). IPv6 is off and each end knows the other's MAC as a
    /// permanent neighbour, so only the caller's traffic crosses the
    /// bridge (no ARP, no router solicitations). The middle has no address.
    pub fn bridged(tag: &str, roles: [&str; 3], addrs: [&str; 2]) -> Result<Lab, LabError> {
        let [left, mid, right] = roles;
        let lab = Lab::new(tag)
            .namespace(left)
            .namespace(mid)
            .namespace(right)
            .link(left, mid, LinkSpec::new().ipv6_off())
            .link(mid, right, LinkSpec::new().ipv6_off())
            .build()?;
        let run = |role: &str, program: &str, args: &[&str]| -> Result<String, LabError> {
            let out = lab
                .exec(role, program)
                .args(args)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| missing(program, e))?;
            if !out.status.success() {
                return Err(LabError::Command {
                    command: format!("{program} {}", args.join(" ")),
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let mac = |role: &str| {
            let dev = &lab.end(role, mid).dev;
            run(role, "cat", &[&format!("/sys/class/net/{dev}/address")])
        };
        let macs = [mac(left)?, mac(right)?];
        for (i, role) in [left, right].into_iter().enumerate() {
            let dev = lab.end(role, mid).dev.clone();
            let (me, other) = (addrs[i], addrs[1 - i]);
            run(
                role,
                "ip",
                &["addr", "add", &format!("{me}/24"), "dev", &dev],
            )?;
            run(
                role,
                "ip",
                &[
                    "neigh",
                    "replace",
                    other,
                    "lladdr",
                    &macs[1 - i],
                    "dev",
                    &dev,
                    "nud",
                    "permanent",
                ],
            )?;
        }
        Ok(lab)
    }

    /// Waits until something listens on UDP `port` inside namespace `role`
    /// (a bound socket in `/proc/net/udp` or `udp6`).
    pub fn wait_udp(&self, role: &str, port: u16, timeout: Duration) -> Result<(), LabError> {
        let hex = format!(":{port:04X} ");
        let seen = self.wait_proc(role, &["/proc/net/udp", "/proc/net/udp6"], timeout, |t| {
            t.contains(&hex)
        })?;
        seen.then_some(()).ok_or_else(|| LabError::NotListening {
            ns: self.ns(role).into(),
            port,
            timeout,
        })
    }

    /// Starts `cmd` (a bridge in namespace `role`, such as `wirelab
    /// emulate`, made with [`Lab::exec`]; its stdout and stderr piped) and
    /// waits until `role` holds `sockets` more packet sockets than before:
    /// its rings and sending sockets are open, so frames from then on are
    /// forwarded. A bridge that exits first is an error with its stderr.
    pub fn spawn_bridge(
        &self,
        role: &str,
        mut cmd: Command,
        sockets: usize,
        timeout: Duration,
    ) -> Result<Child, LabError> {
        let count = |t: &str| t.lines().skip(1).count();
        let mut before = 0;
        self.wait_proc(role, &["/proc/net/packet"], Duration::ZERO, |t| {
            before = count(t);
            true
        })?;
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| missing(&program, e))?;
        let t0 = Instant::now();
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                let out = child.wait_with_output().map_err(|e| missing(&program, e))?;
                return Err(LabError::BridgeExited {
                    ns: self.ns(role).into(),
                    status: out.status,
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            let up = self.wait_proc(role, &["/proc/net/packet"], Duration::ZERO, |t| {
                count(t) >= before + sockets
            })?;
            if up {
                return Ok(child);
            }
            if t0.elapsed() >= timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LabError::NoPacketSockets {
                    ns: self.ns(role).into(),
                    n: sockets,
                    timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Polls `files` inside namespace `role` until `ready` holds for their
    /// text; false at the timeout.
    fn wait_proc(
        &self,
        role: &str,
        files: &[&str],
        timeout: Duration,
        mut ready: impl FnMut(&str) -> bool,
    ) -> Result<bool, LabError> {
        let ns = self.ns(role);
        let t0 = Instant::now();
        loop {
            let out = exec_in(ns, "cat")
                .args(files)
                .stderr(Stdio::null())
                .output()
                .map_err(|e| missing("ip", e))?;
            if ready(&String::from_utf8_lossy(&out.stdout)) {
                return Ok(true);
            }
            if t0.elapsed() >= timeout {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Until the returned guard drops: the first SIGINT or SIGTERM sets
    /// `stop` (the caller winds down and drops the lab as usual); a second
    /// one deletes the namespaces at once and exits with 128 + the signal.
    /// (Two signals close together may arrive as one.)
    pub fn guard_signals(&self, stop: Arc<AtomicBool>) -> Result<SignalGuard, LabError> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals =
            signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).map_err(LabError::Signals)?;
        let handle = signals.handle();
        let (names, devs) = self.leftovers();
        let thread = std::thread::Builder::new()
            .name("lab-signals".into())
            .spawn(move || {
                // Counted here, not read from `stop`: the caller may set
                // `stop` from its own handler of the same signal.
                let mut seen = 0;
                for sig in signals.forever() {
                    stop.store(true, Ordering::SeqCst);
                    seen += 1;
                    if seen >= 2 {
                        remove(&names, &devs);
                        std::process::exit(128 + sig);
                    }
                }
            })
            .map_err(LabError::Signals)?;
        Ok(SignalGuard {
            handle,
            thread: Some(thread),
        })
    }
}

/// Watches SIGINT/SIGTERM for a lab (see [`Lab::guard_signals`]); stops
/// watching on drop. Drop it before the lab.
pub struct SignalGuard {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let (names, devs) = self.leftovers();
        remove(&names, &devs);
    }
}

impl Lab {
    /// What teardown removes: the namespaces, and the veth ends on the
    /// caller's side in case a build stopped before moving them.
    fn leftovers(&self) -> (Vec<String>, Vec<String>) {
        let names = self.namespaces().map(str::to_owned).collect();
        let devs = self.links.iter().map(|l| l.a.dev.clone()).collect();
        (names, devs)
    }
}

/// Ends the processes still inside the namespaces (SIGTERM: they were
/// started in the lab and would otherwise keep an unlisted namespace
/// alive), deletes the namespaces, which deletes the veth ends inside them
/// and their peers, and deletes the veth pairs `devs` still in the caller's
/// namespace (none once a build has finished; the names are unique to this
/// lab, so nothing else is touched).
fn remove(names: &[String], devs: &[String]) {
    for ns in names {
        let pids = Command::new("ip")
            .args(["netns", "pids", ns])
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let pids: Vec<&str> = pids.split_whitespace().collect();
        if !pids.is_empty() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .args(&pids)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
    for ns in names {
        let _ = Command::new("ip")
            .args(["netns", "del", ns])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    for dev in devs {
        let _ = Command::new("ip")
            .args(["link", "del", dev])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// `program` inside the namespace named `ns`.
pub fn exec_in(ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(program);
    c
}

/// The program a plan step runs: steps are `ip` argument lists, except
/// those run inside a namespace, which start with `netns exec NS PROGRAM`.
pub fn plan_program(step: &[String]) -> &str {
    match step {
        [n, e, _, p, ..] if n == "netns" && e == "exec" => p,
        _ => "ip",
    }
}

fn missing(program: &str, source: std::io::Error) -> LabError {
    let package = match program {
        "ethtool" => "ethtool",
        "sysctl" => "procps",
        _ => "iproute2",
    };
    LabError::MissingTool {
        program: program.into(),
        package,
        cause: source,
    }
}

/// Whether the process runs as root: its effective uid (the third field
/// of `Uid:` in /proc/self/status) is 0.
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

/// Runs one plan step (`ip ARGS`).
fn run_step(step: &[String]) -> Result<(), LabError> {
    let out = Command::new("ip")
        .args(step)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing("ip", e))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Err(LabError::NeedsRoot);
    }
    // `ip netns exec` reports a program it cannot start on stderr as
    // `exec of "PROGRAM" failed: ...`; the program's own errors (sysctl's
    // "cannot stat /proc/sys/...: No such file or directory") are not that.
    let program = plan_program(step);
    if program != "ip" && stderr.contains(&format!("exec of \"{program}\" failed")) {
        return Err(missing(
            program,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ));
    }
    Err(LabError::Command {
        command: format!("ip {}", step.join(" ")),
        stderr,
    })
}

/// The namespace name of `role`.
fn ns_of(namespaces: &[(String, String)], role: &str) -> Result<String, LabError> {
    namespaces
        .iter()
        .find(|(r, _)| r == role)
        .map(|(_, n)| n.clone())
        .ok_or_else(|| LabError::UnknownNamespace(role.into()))
}

/// End `side` (0 = a) of link `i`, in namespace `role`, as interface `dev`:
/// its addresses parse, none is IPv6 on a link without IPv6, and its RPS
/// CPU fits the 64-bit mask written for it.
fn link_end(
    i: usize,
    side: usize,
    role: &str,
    dev: String,
    spec: &LinkSpec,
    namespaces: &[(String, String)],
) -> Result<Endpoint, LabError> {
    let addrs = spec.addrs[side]
        .iter()
        .map(|s| Cidr::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if spec.ipv6_off {
        if let Some(c) = addrs.iter().find(|c| c.addr.is_ipv6()) {
            return Err(LabError::Ipv6Off {
                link: i,
                addr: c.to_string(),
            });
        }
    }
    if let Some(cpu) = spec.rps_cpu[side] {
        if cpu >= 64 {
            return Err(LabError::BadCpu(cpu));
        }
    }
    Ok(Endpoint {
        role: role.into(),
        ns: ns_of(namespaces, role)?,
        dev,
        addrs,
    })
}

/// Adds the steps that make the veth pair `a`–`b` to `plan`; the ends
/// take their given names (`LinkSpec::names`), if any.
fn plan_link(
    plan: &mut Vec<Vec<String>>,
    spec: &LinkSpec,
    mut a: Endpoint,
    mut b: Endpoint,
) -> Result<Link, LabError> {
    // Made in the caller's namespace and moved: a veth end made
    // directly inside a fresh namespace sometimes leaves the first
    // IPv6 neighbour solicitation unanswered (a 1 s stall).
    plan.push(args(&[
        "link", "add", &a.dev, "type", "veth", "peer", "name", &b.dev,
    ]));
    plan.push(args(&["link", "set", "dev", &a.dev, "netns", &a.ns]));
    plan.push(args(&["link", "set", "dev", &b.dev, "netns", &b.ns]));
    for (e, name) in [(&mut a, &spec.names[0]), (&mut b, &spec.names[1])] {
        if let Some(name) = name {
            check_ifname(name)?;
            plan.push(args(&[
                "-n", &e.ns, "link", "set", "dev", &e.dev, "name", name,
            ]));
            e.dev = name.clone();
        }
    }
    for (side, e) in [&a, &b].into_iter().enumerate() {
        plan_end_setup(plan, spec, side, e);
    }
    Ok(Link { a, b })
}

/// The steps that configure end `side` of a link in its namespace and
/// bring it up: IPv6 off, MTU, addresses (IPv6 ones without duplicate
/// address detection), GRO off, RPS CPU, as `spec` says.
fn plan_end_setup(plan: &mut Vec<Vec<String>>, spec: &LinkSpec, side: usize, e: &Endpoint) {
    if spec.ipv6_off {
        plan.push(args(&[
            "netns",
            "exec",
            &e.ns,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{}.disable_ipv6=1", e.dev),
        ]));
    }
    if let Some(mtu) = spec.mtu {
        plan.push(args(&[
            "-n",
            &e.ns,
            "link",
            "set",
            "dev",
            &e.dev,
            "mtu",
            &mtu.to_string(),
        ]));
    }
    for c in &e.addrs {
        let c = c.to_string();
        let mut s = args(&["-n", &e.ns, "addr", "add", &c, "dev", &e.dev]);
        if c.contains(':') {
            s.push("nodad".into());
        }
        plan.push(s);
    }
    if spec.gro_off {
        plan.push(args(&[
            "netns", "exec", &e.ns, "ethtool", "-K", &e.dev, "gro", "off",
        ]));
    }
    if let Some(cpu) = spec.rps_cpu[side] {
        plan.push(args(&[
            "netns",
            "exec",
            &e.ns,
            "sh",
            "-c",
            &format!(
                "echo {:x} > /sys/class/net/{}/queues/rx-0/rps_cpus",
                1u64 << cpu,
                e.dev
            ),
        ]));
    }
    plan.push(args(&["-n", &e.ns, "link", "set", "dev", &e.dev, "up"]));
}

impl LabBuilder {
    /// A namespace with a short `role` (1 to 6 lowercase letters or digits:
    /// `s`, `r`, `client`) by which the lab's accessors name it.
    pub fn namespace(mut self, role: &str) -> LabBuilder {
        self.roles.push(role.into());
        self
    }

    /// A veth pair between the namespaces `a` and `b` set up as `spec` says.
    pub fn link(mut self, a: &str, b: &str, spec: LinkSpec) -> LabBuilder {
        self.links.push((a.into(), b.into(), spec));
        self
    }

    /// `sysctl -w key=value` inside namespace `role` once its links exist
    /// (so per-interface keys work too).
    pub fn sysctl(mut self, role: &str, key: &str, value: &str) -> LabBuilder {
        self.sysctls.push((role.into(), key.into(), value.into()));
        self
    }

    /// `ip route add to via via` inside namespace `role` once its links are
    /// up (`to` may be `default`).
    pub fn route(mut self, role: &str, to: &str, via: &str) -> LabBuilder {
        self.routes.push((role.into(), to.into(), via.into()));
        self
    }

    /// Names the lab for lab number `n` of process `pid` and lists the steps
    /// that make it, without running anything.
    fn resolve(&self, pid: u32, n: u32) -> Result<Lab, LabError> {
        let namespaces = self.name_namespaces(pid, n)?;
        let mut plan: Vec<Vec<String>> = vec![];
        for (_, ns) in &namespaces {
            plan.push(args(&["netns", "add", ns]));
        }
        let mut links = vec![];
        for (i, (ra, rb, spec)) in self.links.iter().enumerate() {
            if ra == rb {
                return Err(LabError::SelfLink(ra.clone()));
            }
            if i >= 36 {
                return Err(LabError::TooManyLinks);
            }
            let ends = [ra, rb]
                .into_iter()
                .enumerate()
                .map(|(side, role)| {
                    let dev = dev_name(&self.tag, pid, n, i, side);
                    link_end(i, side, role, dev, spec, &namespaces)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let [a, b]: [Endpoint; 2] = ends.try_into().expect("two ends");
            links.push(plan_link(&mut plan, spec, a, b)?);
        }
        for (_, ns) in &namespaces {
            plan.push(args(&["-n", ns, "link", "set", "lo", "up"]));
        }
        for (role, to, via) in &self.routes {
            plan.push(args(&[
                "-n",
                &ns_of(&namespaces, role)?,
                "route",
                "add",
                to,
                "via",
                via,
            ]));
        }
        for (role, key, value) in &self.sysctls {
            plan.push(args(&[
                "netns",
                "exec",
                &ns_of(&namespaces, role)?,
                "sysctl",
                "-qw",
                &format!("{key}={value}"),
            ]));
        }
        Ok(Lab {
            namespaces,
            links,
            plan,
        })
    }

    /// (role, namespace name) of each role, in declaration order: the name
    /// is `TAG-PID-N-ROLE`, unique to this process's `n`th lab.
    fn name_namespaces(&self, pid: u32, n: u32) -> Result<Vec<(String, String)>, LabError> {
        check_label("lab tag", &self.tag)?;
        let mut namespaces: Vec<(String, String)> = vec![];
        for r in &self.roles {
            check_label("namespace role", r)?;
            if namespaces.iter().any(|(x, _)| x == r) {
                return Err(LabError::DuplicateNamespace(r.clone()));
            }
            namespaces.push((r.clone(), format!("{}-{pid}-{n}-{r}", self.tag)));
        }
        Ok(namespaces)
    }

    /// Makes the lab. On error, whatever was made is removed again.
    pub fn build(self) -> Result<Lab, LabError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let lab = self.resolve(std::process::id(), n)?;
        if !is_root() {
            return Err(LabError::NeedsRoot);
        }
        // From here on, dropping `lab` (also on `?`) deletes the namespaces.
        for step in &lab.plan {
            run_step(step)?;
        }
        Ok(lab)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> LabBuilder {
        Lab::new("wl").namespace("s").namespace("r").link(
            "s",
            "r",
            LinkSpec::new()
                .ipv4("198.18.0.1/24", "198.18.0.2/24")
                .ipv6("fd77::1/64", "fd77::2/64"),
        )
    }

    fn lines(lab: &Lab) -> Vec<String> {
        lab.plan.iter().map(|s| s.join(" ")).collect()
    }

    /// A resolved lab must not delete anything when dropped in a test.
    fn forget(lab: Lab) -> Vec<String> {
        let l = lines(&lab);
        std::mem::forget(lab);
        l
    }

    #[test]
    fn names_carry_tag_pid_counter_and_role() {
        let lab = two().resolve(4_194_304, 17).unwrap();
        assert_eq!(lab.ns("s"), "wl-4194304-17-s");
        assert_eq!(lab.ns("r"), "wl-4194304-17-r");
        let l = &lab.links()[0];
        assert_eq!(
            (l.a.dev.as_str(), l.b.dev.as_str()),
            ("wl2hwcg0h0a", "wl2hwcg0h0b")
        );
        assert_eq!(lab.end("r", "s").dev, "wl2hwcg0h0b");
        assert_eq!(
            lab.end("s", "r").ipv4(),
            Some("198.18.0.1".parse().unwrap())
        );
        assert_eq!(lab.end("r", "s").ipv6(), Some("fd77::2".parse().unwrap()));
        let longest = Lab::new("abcdef")
            .namespace("a")
            .namespace("b")
            .link("a", "b", LinkSpec::new())
            .resolve(4_194_304, 1295)
            .unwrap();
        assert!(longest.links()[0].a.dev.len() <= IFNAME_MAX);
        forget(lab);
        forget(longest);
    }

    #[test]
    fn two_namespace_plan() {
        let got = forget(two().resolve(7, 0).unwrap());
        assert_eq!(
            got,
            [
                "netns add wl-7-0-s",
                "netns add wl-7-0-r",
                "link add wl00007000a type veth peer name wl00007000b",
                "link set dev wl00007000a netns wl-7-0-s",
                "link set dev wl00007000b netns wl-7-0-r",
                "-n wl-7-0-s addr add 198.18.0.1/24 dev wl00007000a",
                "-n wl-7-0-s addr add fd77::1/64 dev wl00007000a nodad",
                "-n wl-7-0-s link set dev wl00007000a up",
                "-n wl-7-0-r addr add 198.18.0.2/24 dev wl00007000b",
                "-n wl-7-0-r addr add fd77::2/64 dev wl00007000b nodad",
                "-n wl-7-0-r link set dev wl00007000b up",
                "-n wl-7-0-s link set lo up",
                "-n wl-7-0-r link set lo up",
            ]
        );
    }

    #[test]
    fn knobs_become_steps_before_the_link_is_up() {
        let spec = LinkSpec::new()
            .ipv6_off()
            .mtu(9000)
            .gro_off()
            .rps_cpu(Side::B, 1);
        let lab = Lab::new("wlr")
            .namespace("s")
            .namespace("c")
            .namespace("d")
            .link("s", "c", spec.clone())
            .link("s", "d", spec)
            .sysctl("s", "net.core.somaxconn", "1024")
            .resolve(9, 3)
            .unwrap();
        assert_eq!(lab.end("s", "d").dev, "wlr00009031a");
        assert_eq!(lab.end("d", "s").ns, "wlr-9-3-d");
        let got = forget(lab);
        let b_side: Vec<&String> = got
            .iter()
            .filter(|l| l.contains("wlr-9-3-c"))
            .skip(2)
            .take(5)
            .collect();
        assert_eq!(
            b_side,
            [
                "netns exec wlr-9-3-c sysctl -qw net.ipv6.conf.wlr00009030b.disable_ipv6=1",
                "-n wlr-9-3-c link set dev wlr00009030b mtu 9000",
                "netns exec wlr-9-3-c ethtool -K wlr00009030b gro off",
                "netns exec wlr-9-3-c sh -c echo 2 > /sys/class/net/wlr00009030b/queues/rx-0/rps_cpus",
                "-n wlr-9-3-c link set dev wlr00009030b up",
            ]
        );
        assert_eq!(
            got.last().unwrap(),
            "netns exec wlr-9-3-s sysctl -qw net.core.somaxconn=1024"
        );
    }

    #[test]
    fn named_interfaces_are_renamed_inside_their_namespaces() {
        // "a" is also an abbreviation of ip's `address` keyword: every
        // `link set` names the device after `dev`.
        let spec = LinkSpec::new()
            .ipv4("10.1.0.1/24", "10.1.0.2/24")
            .names("a", "eth1");
        let lab = Lab::new("wl")
            .namespace("s")
            .namespace("e")
            .link("s", "e", spec)
            .resolve(7, 0)
            .unwrap();
        assert_eq!(lab.end("s", "e").dev, "a");
        assert_eq!(lab.end("e", "s").dev, "eth1");
        let got = forget(lab);
        assert_eq!(
            got[2..7],
            [
                "link add wl00007000a type veth peer name wl00007000b",
                "link set dev wl00007000a netns wl-7-0-s",
                "link set dev wl00007000b netns wl-7-0-e",
                "-n wl-7-0-s link set dev wl00007000a name a",
                "-n wl-7-0-e link set dev wl00007000b name eth1",
            ]
        );
        assert_eq!(got[7], "-n wl-7-0-s addr add 10.1.0.1/24 dev a");
        let routed = forget(
            Lab::new("wl")
                .namespace("s")
                .namespace("e")
                .link("s", "e", LinkSpec::new().ipv4("10.1.0.1/24", "10.1.0.2/24"))
                .route("s", "default", "10.1.0.2")
                .sysctl("e", "net.ipv4.ip_forward", "1")
                .resolve(7, 0)
                .unwrap(),
        );
        let n = routed.len();
        assert_eq!(
            routed[n - 2..],
            [
                "-n wl-7-0-s route add default via 10.1.0.2",
                "netns exec wl-7-0-e sysctl -qw net.ipv4.ip_forward=1",
            ]
        );
        let bad = Lab::new("wl")
            .namespace("s")
            .namespace("e")
            .link("s", "e", LinkSpec::new().names("a/b", "x"))
            .resolve(7, 0);
        assert!(matches!(bad, Err(LabError::BadIfname(n)) if n == "a/b"));
    }

    #[test]
    fn plan_program_names_the_tool_to_install() {
        let step = args(&["netns", "exec", "x", "ethtool", "-K"]);
        assert_eq!(plan_program(&step), "ethtool");
        assert_eq!(plan_program(&args(&["netns", "add", "x"])), "ip");
        let e = missing("ethtool", std::io::ErrorKind::NotFound.into());
        assert!(e.to_string().contains("install ethtool"), "{e}");
        let e = missing("ip", std::io::ErrorKind::NotFound.into());
        assert!(e.to_string().contains("install iproute2"), "{e}");
        assert!(LabError::NeedsRoot.to_string().contains("run as root"));
    }

    #[test]
    fn bad_declarations_are_refused_with_the_reason() {
        let err = |b: LabBuilder| b.resolve(1, 0).unwrap_err().to_string();
        assert!(err(Lab::new("WL")).contains("lowercase"));
        assert!(err(Lab::new("toolongtag")).contains("1 to 6"));
        assert!(err(Lab::new("wl").namespace("s").namespace("s")).contains("twice"));
        let e = err(Lab::new("wl")
            .namespace("s")
            .link("s", "x", LinkSpec::new()));
        assert!(e.contains("\"x\"") && e.contains(".namespace()"), "{e}");
        assert!(err(Lab::new("wl")
            .namespace("s")
            .link("s", "s", LinkSpec::new()))
        .contains("itself"));
        let pair = || Lab::new("wl").namespace("a").namespace("b");
        for bad in ["198.18.0.1", "198.18.0.1/33", "fd77::1/129", "x/24"] {
            let e = err(pair().link("a", "b", LinkSpec::new().ipv4(bad, "198.18.0.2/24")));
            assert!(e.contains("ADDRESS/PREFIX"), "{bad}: {e}");
        }
        let e = err(pair().link(
            "a",
            "b",
            LinkSpec::new().ipv6_off().ipv6("fd77::1/64", "fd77::2/64"),
        ));
        assert!(e.contains("IPv6 turned off"), "{e}");
        let e = err(pair().link("a", "b", LinkSpec::new().rps_cpu(Side::A, 64)));
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn exec_runs_the_program_inside_the_namespace() {
        let lab = two().resolve(7, 0).unwrap();
        let c = lab.exec("r", "cat");
        assert_eq!(c.get_program(), "ip");
        let a: Vec<&std::ffi::OsStr> = c.get_args().collect();
        assert_eq!(a, ["netns", "exec", "wl-7-0-r", "cat"]);
        forget(lab);
    }

    #[test]
    fn a_link_end_takes_its_own_sides_addresses_and_cpu() {
        let ns = vec![("a".to_string(), "wl-1-0-a".to_string())];
        let spec = LinkSpec::new()
            .ipv4("198.18.0.1/24", "198.18.0.2/24")
            .rps_cpu(Side::B, 64);
        let e = link_end(0, 0, "a", "dev0".into(), &spec, &ns).unwrap();
        assert_eq!((e.ns.as_str(), e.dev.as_str()), ("wl-1-0-a", "dev0"));
        assert_eq!(e.addrs.len(), 1);
        assert_eq!(e.addrs[0].to_string(), "198.18.0.1/24");
        // Side B's CPU is out of range, and its namespace is not declared:
        // the CPU is checked first.
        let e = link_end(0, 1, "b", "dev1".into(), &spec, &ns).unwrap_err();
        assert!(matches!(e, LabError::BadCpu(64)), "{e}");
        let spec = LinkSpec::new().ipv4("198.18.0.1/24", "198.18.0.2/24");
        let e = link_end(0, 1, "b", "dev1".into(), &spec, &ns).unwrap_err();
        assert!(
            matches!(e, LabError::UnknownNamespace(ref r) if r == "b"),
            "{e}"
        );
    }
}
