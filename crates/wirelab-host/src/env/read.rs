//! The snapshot of the host (and network namespace) this process runs in:
//! kernel files read directly, `ethtool`, `tc`, `chronyc` run as tools.
//! Anything that cannot be read is recorded as `unavailable: WHY`.

use super::{parse, Snapshot, UNAVAILABLE};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// Network sysctls every snapshot holds (any other is read when applied).
pub const SYSCTLS: &[&str] = &[
    "net.core.rmem_default",
    "net.core.rmem_max",
    "net.core.wmem_default",
    "net.core.wmem_max",
    "net.core.netdev_max_backlog",
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.default_qdisc",
    "net.ipv4.ip_forward",
    "net.ipv4.udp_mem",
    "net.ipv4.udp_rmem_min",
    "net.ipv4.udp_wmem_min",
    "net.ipv4.ip_local_port_range",
];

/// Most network interfaces a snapshot describes (a host with more lists
/// the first ones by name and says how many it left out).
pub const MAX_INTERFACES: usize = 64;

/// Why a value of the host could not be read; the snapshot records it as
/// `unavailable: WHY`. Causes are printed, not returned as sources.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{program} is not installed")]
    NotInstalled { program: String },
    #[error("cannot run {program}: {err}")]
    Spawn { program: String, err: io::Error },
    /// The tool failed and said why on its last line of stderr.
    #[error("{command}: {last_line}")]
    Said { command: String, last_line: String },
    /// The tool failed silently.
    #[error("{command}: {status}")]
    Status { command: String, status: ExitStatus },
    #[error("no {}", .path.display())]
    Missing { path: PathBuf },
    #[error("{}: {err}", .path.display())]
    File { path: PathBuf, err: io::Error },
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A host-wide sysctl read from another network namespace.
    #[error("not in this network namespace")]
    OtherNamespace,
    #[error("no model in /proc/cpuinfo")]
    NoCpuModel,
    #[error("no cpufreq in /sys (a VM, or no frequency scaling)")]
    NoCpufreq,
    #[error("no EEE status in ethtool's output")]
    NoEeeStatus,
    #[error("{program} printed no version")]
    NoVersion { program: String },
}

/// Output of a tool, or why there is none.
pub fn tool(program: &str, args: &[&str]) -> Result<String, ReadError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| match err.kind() {
            io::ErrorKind::NotFound => ReadError::NotInstalled {
                program: program.into(),
            },
            _ => ReadError::Spawn {
                program: program.into(),
                err,
            },
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let command = format!("{program} {}", args.join(" "));
    let err = String::from_utf8_lossy(&out.stderr);
    match err.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(last) => Err(ReadError::Said {
            command,
            last_line: last.to_string(),
        }),
        None => Err(ReadError::Status {
            command,
            status: out.status,
        }),
    }
}

/// A kernel file's text, trimmed, tabs as spaces.
pub fn file(path: impl AsRef<Path>) -> Result<String, ReadError> {
    let p = path.as_ref();
    fs::read_to_string(p)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .map_err(|err| match err.kind() {
            io::ErrorKind::NotFound => ReadError::Missing { path: p.into() },
            _ => ReadError::File {
                path: p.into(),
                err,
            },
        })
}

/// The `/proc/sys` path of a dotted sysctl name.
pub fn sysctl_path(name: &str) -> String {
    format!("/proc/sys/{}", name.replace('.', "/"))
}

struct Out<'a>(&'a mut BTreeMap<String, String>);

impl Out<'_> {
    fn put(&mut self, k: impl Into<String>, v: Result<String, ReadError>) {
        let v = v.unwrap_or_else(|why| format!("{UNAVAILABLE}{why}"));
        self.0.insert(k.into(), v);
    }
    fn set(&mut self, k: impl Into<String>, v: impl Into<String>) {
        self.0.insert(k.into(), v.into());
    }
}

/// The environment of this host, named `host` in the snapshot.
pub fn snapshot(host: &str) -> Snapshot {
    let mut s = Snapshot::new(host, wirelab_io::clock::real_ns());
    let mut o = Out(&mut s.values);
    system(&mut o);
    for name in interfaces(&mut o) {
        nic(&mut o, &name);
    }
    for name in SYSCTLS {
        let v = file(sysctl_path(name)).map_err(|e| match e {
            // Host-wide net sysctls exist only in the first namespace.
            ReadError::Missing { .. } => ReadError::OtherNamespace,
            e => e,
        });
        o.put(format!("sysctl.{name}"), v);
    }
    clock_sync(&mut o);
    tools(&mut o);
    s
}

fn system(o: &mut Out) {
    o.put("host.name", file("/proc/sys/kernel/hostname"));
    o.put("kernel.release", file("/proc/sys/kernel/osrelease"));
    let version = file("/proc/sys/kernel/version");
    let rt = Path::new("/sys/kernel/realtime").exists()
        || version.as_deref().is_ok_and(|v| v.contains("PREEMPT_RT"));
    o.put("kernel.version", version);
    o.set("kernel.preempt_rt", if rt { "yes" } else { "no" });
    o.put("kernel.cmdline", file("/proc/cmdline"));
    match fs::read_to_string("/proc/cpuinfo") {
        Ok(t) => {
            let (model, n) = parse::cpuinfo(&t);
            o.put("cpu.model", model.ok_or(ReadError::NoCpuModel));
            o.set("cpu.count", n.to_string());
        }
        Err(err) => o.put(
            "cpu.model",
            Err(ReadError::File {
                path: "/proc/cpuinfo".into(),
                err,
            }),
        ),
    }
    o.put("cpu.online", file("/sys/devices/system/cpu/online"));
    o.put("cpu.isolated", file("/sys/devices/system/cpu/isolated"));
    o.put("cpu.nohz_full", file("/sys/devices/system/cpu/nohz_full"));
    o.put("cpu.numa_nodes", file("/sys/devices/system/node/online"));
    o.put("cpu.governor", governors());
    o.put(
        "sched.rt_runtime_us",
        file("/proc/sys/kernel/sched_rt_runtime_us"),
    );
    o.put(
        "sched.rt_period_us",
        file("/proc/sys/kernel/sched_rt_period_us"),
    );
}

/// One governor when every CPU has the same, else `cpuN=GOV` per CPU.
fn governors() -> Result<String, ReadError> {
    let mut per: Vec<(u32, String)> = vec![];
    let dir = fs::read_dir("/sys/devices/system/cpu")?;
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(n) = name.strip_prefix("cpu").and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Ok(g) = file(e.path().join("cpufreq/scaling_governor")) {
            per.push((n, g));
        }
    }
    per.sort();
    if per.is_empty() {
        return Err(ReadError::NoCpufreq);
    }
    if per.iter().all(|(_, g)| *g == per[0].1) {
        return Ok(per[0].1.clone());
    }
    Ok(per
        .iter()
        .map(|(n, g)| format!("cpu{n}={g}"))
        .collect::<Vec<_>>()
        .join(" "))
}

/// The interfaces other than loopback, sorted, at most [`MAX_INTERFACES`].
fn interfaces(o: &mut Out) -> Vec<String> {
    let mut names: Vec<String> = match fs::read_dir("/sys/class/net") {
        Ok(d) => d
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "lo")
            .collect(),
        Err(e) => {
            o.put(
                "nic",
                Err(ReadError::File {
                    path: "/sys/class/net".into(),
                    err: e,
                }),
            );
            return vec![];
        }
    };
    names.sort();
    if names.len() > MAX_INTERFACES {
        o.set(
            "nic.left_out",
            format!(
                "{} interfaces after {}",
                names.len() - MAX_INTERFACES,
                names[MAX_INTERFACES - 1]
            ),
        );
        names.truncate(MAX_INTERFACES);
    }
    names
}

/// A parser of one ethtool query's output.
type Parser = fn(&str) -> Vec<(String, String)>;

fn nic(o: &mut Out, name: &str) {
    let p = |k: &str| format!("nic.{name}.{k}");
    let sys = Path::new("/sys/class/net").join(name);
    o.put(p("mtu"), file(sys.join("mtu")));
    o.put(p("operstate"), file(sys.join("operstate")));
    o.put(p("speed"), file(sys.join("speed")));
    o.put(p("tx_queue_len"), file(sys.join("tx_queue_len")));
    match tool("ethtool", &["-i", name]) {
        Ok(t) => {
            for (k, v) in parse::ethtool_info(&t) {
                o.set(p(&k), v);
            }
        }
        Err(e) => o.put(p("driver"), Err(e)),
    }
    let groups: [(&str, &str, Parser); 4] = [
        ("offload", "-k", parse::ethtool_features),
        ("ring", "-g", parse::ethtool_current),
        ("coalesce", "-c", parse::ethtool_coalesce),
        ("channels", "-l", parse::ethtool_current),
    ];
    for (group, flag, f) in groups {
        match tool("ethtool", &[flag, name]) {
            Ok(t) => {
                for (k, v) in f(&t) {
                    o.set(format!("nic.{name}.{group}.{k}"), v);
                }
            }
            Err(e) => o.put(p(group), Err(e)),
        }
    }
    o.put(
        p("eee"),
        tool("ethtool", &["--show-eee", name])
            .and_then(|t| parse::eee_status(&t).ok_or(ReadError::NoEeeStatus)),
    );
    o.put(
        p("qdisc"),
        tool("tc", &["qdisc", "show", "dev", name]).map(|t| parse::qdiscs(&t)),
    );
    // Receive steering and interrupt placement.
    if let Ok(d) = fs::read_dir(sys.join("queues")) {
        let mut qs: Vec<String> = d
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|q| q.starts_with("rx-"))
            .collect();
        qs.sort();
        for q in qs {
            if let Ok(v) = file(sys.join("queues").join(&q).join("rps_cpus")) {
                o.set(p(&format!("rps.{q}")), v);
            }
        }
    }
    for irq in irqs(&sys, name) {
        o.put(
            p(&format!("irq.{irq}.affinity")),
            file(format!("/proc/irq/{irq}/smp_affinity_list")),
        );
    }
}

/// The interface's IRQs: its device's MSI vectors (or its parent's, as for
/// virtio), else the vectors named after it in /proc/interrupts.
fn irqs(sys: &Path, name: &str) -> Vec<u32> {
    for dir in [sys.join("device/msi_irqs"), sys.join("device/../msi_irqs")] {
        if let Ok(d) = fs::read_dir(&dir) {
            let mut v: Vec<u32> = d
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect();
            v.sort_unstable();
            return v;
        }
    }
    fs::read_to_string("/proc/interrupts")
        .map(|t| parse::irqs_named(&t, name))
        .unwrap_or_default()
}

fn clock_sync(o: &mut Out) {
    match tool("chronyc", &["-n", "tracking"]) {
        Ok(t) => {
            for (k, v) in parse::chrony_tracking(&t) {
                o.set(format!("clock.chrony.{k}"), v);
            }
        }
        Err(e) => o.put("clock.chrony", Err(e)),
    }
    let running = running_programs();
    for prog in ["ptp4l", "phc2sys", "chronyd", "ntpd", "systemd-timesyn"] {
        o.set(
            format!("clock.{prog}"),
            if running.iter().any(|p| p == prog) {
                "running"
            } else {
                "not running"
            },
        );
    }
}

/// The command names (`comm`) of the processes on this host.
fn running_programs() -> Vec<String> {
    let Ok(d) = fs::read_dir("/proc") else {
        return vec![];
    };
    d.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| fs::read_to_string(e.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .collect()
}

fn tools(o: &mut Out) {
    o.set("tool.wirelab", env!("CARGO_PKG_VERSION"));
    for (name, prog, args) in [
        ("ethtool", "ethtool", &["--version"][..]),
        ("iproute2", "ip", &["-V"][..]),
        ("stress-ng", "stress-ng", &["--version"][..]),
        ("chronyc", "chronyc", &["--version"][..]),
        ("ptp4l", "ptp4l", &["-v"][..]),
    ] {
        o.put(
            format!("tool.{name}"),
            tool(prog, args).and_then(|t| {
                parse::version_line(&t).ok_or_else(|| ReadError::NoVersion {
                    program: prog.into(),
                })
            }),
        );
    }
}
