//! Network and host counters of one host (spec run.md "Counters,
//! environment, attribution"): parsers of the kernel's text (sans-IO,
//! tested on text captured from a real machine), the [`Snapshot`] an agent
//! takes ([`collect`]), and the [`Delta`] of two snapshots.
//!
//! A snapshot's counters are also available flat, one name per counter
//! ([`Snapshot::counters`]): `snmp/Udp.RcvbufErrors`, `softnet/dropped`,
//! `softirqs/NET_RX` (summed over the CPUs), `qdisc/DEV/HANDLE/drops`,
//! `if/DEV/rx_dropped`, `ethtool/DEV/NAME`. A
//! delta is taken per name; gauges (a qdisc's backlog, memory, CPU times)
//! are not counters and are not in it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one agent saw, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// When it was taken (the agent's CLOCK_REALTIME).
    pub unix_ns: u64,
    /// `/proc/net/snmp` as `Proto.Field` (`Udp.RcvbufErrors`) and
    /// `/proc/net/snmp6` by its own names (`Udp6RcvbufErrors`).
    pub snmp: BTreeMap<String, u64>,
    /// `/proc/net/softnet_stat`, one entry per CPU line.
    pub softnet: Vec<Softnet>,
    /// `tc -s -j qdisc show`, every qdisc of every device.
    pub qdiscs: Vec<Qdisc>,
    /// Per interface (all but `lo`, or those asked for).
    pub ifaces: BTreeMap<String, Iface>,
    /// `/proc/stat` CPU lines (`cpu` is the total, then `cpu0`...).
    pub cpus: Vec<CpuTimes>,
    /// `/proc/softirqs`: per kind (`NET_RX`, `NET_TX`...), the count of
    /// each CPU.
    #[serde(default)]
    pub softirqs: BTreeMap<String, Vec<u64>>,
    /// `/proc/meminfo` in kB (the fields given in kB; `HugePages_*` counts
    /// as they are).
    pub meminfo: BTreeMap<String, u64>,
    /// What could not be read, and why (a missing `tc`, a driver without
    /// `ethtool -S`): the rest of the snapshot stands.
    pub unavailable: Vec<String>,
}

/// One CPU's line of `/proc/net/softnet_stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Softnet {
    /// Frames processed by the CPU's softirq.
    pub processed: u64,
    /// Frames dropped because its backlog (netdev_max_backlog) was full.
    pub dropped: u64,
    /// Times its softirq ran out of budget or time with work left.
    pub time_squeeze: u64,
}

/// One qdisc of `tc -s -j qdisc show`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Qdisc {
    pub dev: String,
    pub kind: String,
    pub handle: String,
    /// The parent's handle; `None` for a root (and ingress) qdisc.
    pub parent: Option<String>,
    pub root: bool,
    pub bytes: u64,
    pub packets: u64,
    /// Packets dropped. A root's count includes its children's drops.
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// Gauges: bytes and packets queued when read.
    pub backlog: u64,
    pub qlen: u64,
}

/// One interface's statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Iface {
    /// `/sys/class/net/DEV/statistics/*`.
    pub sysfs: BTreeMap<String, u64>,
    /// `ethtool -S DEV` (empty where the driver has none).
    pub ethtool: BTreeMap<String, u64>,
}

/// One CPU line of `/proc/stat`, in clock ticks (USER_HZ).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// `cpu` (all CPUs) or `cpuN`.
    pub cpu: String,
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Every tick counted, idle included (guest time is within user).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Ticks not idle (nor waiting for I/O).
    pub fn busy(&self) -> u64 {
        self.total() - self.idle - self.iowait
    }
}

/// Text that is not what the kernel writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {message}")]
pub struct ParseError {
    pub what: &'static str,
    pub message: String,
}

fn bad(what: &'static str, message: impl Into<String>) -> ParseError {
    ParseError {
        what,
        message: message.into(),
    }
}

/// `/proc/net/snmp`: pairs of lines, `Proto: names...` then `Proto:
/// values...`; every field as `Proto.Name`. A value that is not a
/// counter (Tcp's MaxConn is -1) is left out.
pub fn parse_snmp(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    while let Some(names) = lines.next() {
        let values = lines
            .next()
            .ok_or_else(|| bad("/proc/net/snmp", format!("no values after {names:?}")))?;
        let (p1, names) = names
            .split_once(':')
            .ok_or_else(|| bad("/proc/net/snmp", format!("no protocol in {names:?}")))?;
        let (p2, values) = values
            .split_once(':')
            .ok_or_else(|| bad("/proc/net/snmp", format!("no protocol in {values:?}")))?;
        if p1 != p2 {
            return Err(bad(
                "/proc/net/snmp",
                format!("names of {p1} followed by values of {p2}"),
            ));
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        let values: Vec<&str> = values.split_whitespace().collect();
        if names.len() != values.len() {
            return Err(bad(
                "/proc/net/snmp",
                format!("{p1}: {} names, {} values", names.len(), values.len()),
            ));
        }
        for (n, v) in names.into_iter().zip(values) {
            if let Ok(v) = v.parse::<u64>() {
                out.insert(format!("{p1}.{n}"), v);
            }
        }
    }
    Ok(out)
}

/// `/proc/net/snmp6`: `Name value` per line.
pub fn parse_snmp6(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    parse_name_values(text, "/proc/net/snmp6")
}

/// `/proc/net/softnet_stat`: one line per CPU of hex columns; the 1st is
/// processed, the 2nd dropped, the 3rd time_squeeze.
pub fn parse_softnet(text: &str) -> Result<Vec<Softnet>, ParseError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let col = |i: usize| -> Result<u64, ParseError> {
                let f = l
                    .split_whitespace()
                    .nth(i)
                    .ok_or_else(|| bad("/proc/net/softnet_stat", format!("short line {l:?}")))?;
                u64::from_str_radix(f, 16).map_err(|_| {
                    bad(
                        "/proc/net/softnet_stat",
                        format!("{f:?} is not hexadecimal"),
                    )
                })
            };
            Ok(Softnet {
                processed: col(0)?,
                dropped: col(1)?,
                time_squeeze: col(2)?,
            })
        })
        .collect()
}

/// `tc -s -j qdisc show`.
pub fn parse_tc_qdisc_json(text: &str) -> Result<Vec<Qdisc>, ParseError> {
    #[derive(Deserialize)]
    struct Raw {
        kind: String,
        handle: String,
        dev: String,
        #[serde(default)]
        root: bool,
        parent: Option<String>,
        #[serde(default)]
        bytes: u64,
        #[serde(default)]
        packets: u64,
        #[serde(default)]
        drops: u64,
        #[serde(default)]
        overlimits: u64,
        #[serde(default)]
        requeues: u64,
        #[serde(default)]
        backlog: u64,
        #[serde(default)]
        qlen: u64,
    }
    let raw: Vec<Raw> =
        serde_json::from_str(text.trim()).map_err(|e| bad("tc -s -j qdisc show", e.to_string()))?;
    Ok(raw
        .into_iter()
        .map(|r| Qdisc {
            dev: r.dev,
            kind: r.kind,
            handle: r.handle,
            parent: r.parent,
            root: r.root,
            bytes: r.bytes,
            packets: r.packets,
            drops: r.drops,
            overlimits: r.overlimits,
            requeues: r.requeues,
            backlog: r.backlog,
            qlen: r.qlen,
        })
        .collect())
}

/// `ethtool -S DEV`: a `NIC statistics:` header, then `name: value`
/// lines; lines that are not a name and a number are left out.
pub fn parse_ethtool_stats(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(':')?;
            Some((k.trim().to_string(), v.trim().parse::<u64>().ok()?))
        })
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// Sysfs statistics as `name:value` lines (as `grep . *` prints the
/// directory); the agent reads the files one by one.
pub fn parse_sysfs_stats(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l
                .split_once(':')
                .ok_or_else(|| bad("sysfs statistics", format!("no ':' in {l:?}")))?;
            let v = v
                .trim()
                .parse::<u64>()
                .map_err(|_| bad("sysfs statistics", format!("{k}: {v:?} is not a count")))?;
            Ok((k.trim().to_string(), v))
        })
        .collect()
}

/// The `cpu` lines of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Result<Vec<CpuTimes>, ParseError> {
    text.lines()
        .filter(|l| l.starts_with("cpu"))
        .map(|l| {
            let mut f = l.split_whitespace();
            let cpu = f.next().unwrap_or_default().to_string();
            let v: Vec<u64> = f
                .map(|x| {
                    x.parse::<u64>()
                        .map_err(|_| bad("/proc/stat", format!("{cpu}: {x:?} is not a count")))
                })
                .collect::<Result<_, _>>()?;
            if v.len() < 4 {
                return Err(bad("/proc/stat", format!("{cpu}: {} fields", v.len())));
            }
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            Ok(CpuTimes {
                cpu,
                user: at(0),
                nice: at(1),
                system: at(2),
                idle: at(3),
                iowait: at(4),
                irq: at(5),
                softirq: at(6),
                steal: at(7),
            })
        })
        .collect()
}

/// `/proc/softirqs`: a header of CPUs, then `KIND: count per CPU`.
pub fn parse_softirqs(text: &str) -> Result<BTreeMap<String, Vec<u64>>, ParseError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let cpus = lines
        .next()
        .ok_or_else(|| bad("/proc/softirqs", "empty"))?
        .split_whitespace()
        .count();
    lines
        .map(|l| {
            let (k, v) = l
                .split_once(':')
                .ok_or_else(|| bad("/proc/softirqs", format!("no ':' in {l:?}")))?;
            let v: Vec<u64> = v
                .split_whitespace()
                .map(|x| {
                    x.parse::<u64>()
                        .map_err(|_| bad("/proc/softirqs", format!("{k}: {x:?} is not a count")))
                })
                .collect::<Result<_, _>>()?;
            if v.len() != cpus {
                return Err(bad(
                    "/proc/softirqs",
                    format!("{}: {} counts for {cpus} CPUs", k.trim(), v.len()),
                ));
            }
            Ok((k.trim().to_string(), v))
        })
        .collect()
}

/// `/proc/meminfo`: `Name:  value kB` per line.
pub fn parse_meminfo(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l
                .split_once(':')
                .ok_or_else(|| bad("/proc/meminfo", format!("no ':' in {l:?}")))?;
            let n = v.split_whitespace().next().unwrap_or_default();
            let n = n
                .parse::<u64>()
                .map_err(|_| bad("/proc/meminfo", format!("{k}: {v:?} is not a count")))?;
            Ok((k.trim().to_string(), n))
        })
        .collect()
}

fn parse_name_values(text: &str, what: &'static str) -> Result<BTreeMap<String, u64>, ParseError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split_whitespace();
            let (Some(k), Some(v)) = (f.next(), f.next()) else {
                return Err(bad(what, format!("not a name and a value: {l:?}")));
            };
            let v = v
                .parse::<u64>()
                .map_err(|_| bad(what, format!("{k}: {v:?} is not a count")))?;
            Ok((k.to_string(), v))
        })
        .collect()
}

impl Snapshot {
    /// Every counter by its flat name (module docs). Softnet is summed
    /// over the CPUs.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for (k, v) in &self.snmp {
            m.insert(format!("snmp/{k}"), *v);
        }
        if !self.softnet.is_empty() {
            let sum = |f: fn(&Softnet) -> u64| self.softnet.iter().map(f).sum::<u64>();
            m.insert("softnet/processed".into(), sum(|s| s.processed));
            m.insert("softnet/dropped".into(), sum(|s| s.dropped));
            m.insert("softnet/time_squeeze".into(), sum(|s| s.time_squeeze));
        }
        for (k, v) in &self.softirqs {
            m.insert(format!("softirqs/{k}"), v.iter().sum());
        }
        for q in &self.qdiscs {
            let p = format!("qdisc/{}/{}", q.dev, q.handle);
            for (k, v) in [
                ("bytes", q.bytes),
                ("packets", q.packets),
                ("drops", q.drops),
                ("overlimits", q.overlimits),
                ("requeues", q.requeues),
            ] {
                m.insert(format!("{p}/{k}"), v);
            }
        }
        for (dev, i) in &self.ifaces {
            for (k, v) in &i.sysfs {
                m.insert(format!("if/{dev}/{k}"), *v);
            }
            for (k, v) in &i.ethtool {
                m.insert(format!("ethtool/{dev}/{k}"), *v);
            }
        }
        m
    }

    /// Drops of the root qdiscs of `dev` (a root's count includes its
    /// children's, so children are not added again).
    pub fn root_qdisc_drops(&self, dev: &str) -> u64 {
        self.qdiscs
            .iter()
            .filter(|q| q.dev == dev && q.root)
            .map(|q| q.drops)
            .sum()
    }
}

/// After − before of two snapshots of one host, per counter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    pub values: BTreeMap<String, u64>,
    /// Counters lower after than before: reset (an interface made again, a
    /// qdisc replaced) or wrapped (a 32-bit driver counter). Their change
    /// is unknown; they are left out of `values`.
    pub decreased: Vec<String>,
    /// Counters in only one of the snapshots (left out of `values`).
    pub unmatched: Vec<String>,
}

impl Delta {
    pub fn between(before: &Snapshot, after: &Snapshot) -> Delta {
        let (b, a) = (before.counters(), after.counters());
        let mut d = Delta::default();
        for (k, va) in &a {
            match b.get(k) {
                Some(vb) if va >= vb => {
                    d.values.insert(k.clone(), va - vb);
                }
                Some(_) => d.decreased.push(k.clone()),
                None => d.unmatched.push(k.clone()),
            }
        }
        d.unmatched
            .extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
        d.unmatched.sort();
        d
    }

    /// A counter's change; 0 if unknown.
    pub fn get(&self, key: &str) -> u64 {
        self.values.get(key).copied().unwrap_or(0)
    }

    /// The sum of the changes of the counters whose name starts with
    /// `prefix` and ends with `suffix`.
    pub fn sum(&self, prefix: &str, suffix: &str) -> u64 {
        self.values
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(k, _)| k.ends_with(suffix))
            .map(|(_, v)| *v)
            .sum()
    }
}

/// What [`collect`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Everything, `tc` and `ethtool` included (before and after a point).
    Full,
    /// Only the /proc and /sys files (samples during a point: no
    /// programs run).
    Sample,
}

/// Takes a snapshot of this process's network namespace and host: the
/// interfaces `ifaces`, or all but `lo` when empty. What cannot be read is
/// listed in `unavailable`; nothing here fails.
pub fn collect(ifaces: &[String], depth: Depth) -> Snapshot {
    use std::fs;
    let mut s = Snapshot {
        unix_ns: wirelab_io::clock::real_ns(),
        ..Snapshot::default()
    };
    let mut unavailable = Vec::new();
    let mut note = |what: &str, why: String| unavailable.push(format!("{what}: {why}"));
    let read = |p: &str| fs::read_to_string(p);
    match read("/proc/self/net/snmp").map(|t| parse_snmp(&t)) {
        Ok(Ok(m)) => s.snmp = m,
        Ok(Err(e)) => note("/proc/net/snmp", e.to_string()),
        Err(e) => note("/proc/net/snmp", e.to_string()),
    }
    // No IPv6 in the namespace: no snmp6, and nothing to count there.
    if let Ok(Ok(m)) = read("/proc/self/net/snmp6").map(|t| parse_snmp6(&t)) {
        s.snmp.extend(m);
    }
    match read("/proc/self/net/softnet_stat").map(|t| parse_softnet(&t)) {
        Ok(Ok(v)) => s.softnet = v,
        Ok(Err(e)) => note("/proc/net/softnet_stat", e.to_string()),
        Err(e) => note("/proc/net/softnet_stat", e.to_string()),
    }
    match read("/proc/stat").map(|t| parse_proc_stat(&t)) {
        Ok(Ok(v)) => s.cpus = v,
        Ok(Err(e)) => note("/proc/stat", e.to_string()),
        Err(e) => note("/proc/stat", e.to_string()),
    }
    match read("/proc/softirqs").map(|t| parse_softirqs(&t)) {
        Ok(Ok(v)) => s.softirqs = v,
        Ok(Err(e)) => note("/proc/softirqs", e.to_string()),
        Err(e) => note("/proc/softirqs", e.to_string()),
    }
    match read("/proc/meminfo").map(|t| parse_meminfo(&t)) {
        Ok(Ok(v)) => s.meminfo = v,
        Ok(Err(e)) => note("/proc/meminfo", e.to_string()),
        Err(e) => note("/proc/meminfo", e.to_string()),
    }
    let devs: Vec<String> = if ifaces.is_empty() {
        let mut v: Vec<String> = fs::read_dir("/sys/class/net")
            .map(|r| {
                r.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n != "lo")
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    } else {
        ifaces.to_vec()
    };
    for dev in &devs {
        if !is_ifname(dev) {
            note(
                &format!("interface {dev:?}"),
                "not an interface name".into(),
            );
            continue;
        }
        let dir = format!("/sys/class/net/{dev}/statistics");
        let mut i = Iface::default();
        match fs::read_dir(&dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if let Ok(v) = fs::read_to_string(e.path()) {
                        if let Ok(v) = v.trim().parse::<u64>() {
                            i.sysfs.insert(name, v);
                        }
                    }
                }
            }
            Err(e) => note(&format!("interface {dev}"), e.to_string()),
        }
        if depth == Depth::Full {
            match run("ethtool", &["-S", dev]) {
                Ok(t) => i.ethtool = parse_ethtool_stats(&t),
                Err(e) => note(&format!("ethtool -S {dev}"), e.to_string()),
            }
        }
        s.ifaces.insert(dev.clone(), i);
    }
    if depth == Depth::Full {
        match run("tc", &["-s", "-j", "qdisc", "show"]).and_then(|t| Ok(parse_tc_qdisc_json(&t)?)) {
            Ok(q) => s.qdiscs = q,
            Err(e) => note("tc -s -j qdisc show", e.to_string()),
        }
    }
    s.unavailable = unavailable;
    s
}

/// A name the kernel could give an interface (and safe in a path).
fn is_ifname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s != "."
        && s != ".."
        && !s.starts_with('-')
        && !s.contains(|c: char| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
}

/// Why a tool's counters are unavailable. Causes are printed, not
/// returned as sources.
#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error("{program} is not installed (scripts/install-deps.sh installs it)")]
    NotInstalled { program: String },
    #[error("cannot run {program}: {err}")]
    Spawn {
        program: String,
        err: std::io::Error,
    },
    /// The tool failed; what it printed (stderr, else stdout).
    #[error("{output}")]
    Failed { output: String },
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// A program's stdout, or why not (not installed, failed).
fn run(prog: &str, args: &[&str]) -> Result<String, ToolError> {
    let out = std::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotInstalled {
                program: prog.into(),
            },
            _ => ToolError::Spawn {
                program: prog.into(),
                err,
            },
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let output = if err.trim().is_empty() {
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        } else {
            err.trim().to_string()
        };
        return Err(ToolError::Failed { output });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on a 2-core Linux 6.18 machine (`cat`, `tc -s -j qdisc
    // show`, `ethtool -S`, `grep . statistics/*`); the qdisc and the Udp
    // lines after 500 datagrams into a 1 Mbit/s tbf with a 2-packet pfifo.
    const SNMP: &str = include_str!("counters/testdata/snmp.txt");
    const SNMP_SNDBUF: &str = include_str!("counters/testdata/snmp-udp-sndbuf.txt");
    const SNMP6: &str = include_str!("counters/testdata/snmp6.txt");
    const SOFTNET: &str = include_str!("counters/testdata/softnet_stat.txt");
    const TC: &str = include_str!("counters/testdata/tc-qdisc.json");
    const ETHTOOL_VETH: &str = include_str!("counters/testdata/ethtool-veth.txt");
    const ETHTOOL_ETH0: &str = include_str!("counters/testdata/ethtool-eth0.txt");
    const ETHTOOL_LO: &str = include_str!("counters/testdata/ethtool-lo.txt");
    const SYSFS: &str = include_str!("counters/testdata/sysfs-veth.txt");
    const STAT: &str = include_str!("counters/testdata/stat.txt");
    const MEMINFO: &str = include_str!("counters/testdata/meminfo.txt");
    const SOFTIRQS: &str = include_str!("counters/testdata/softirqs.txt");

    #[test]
    fn softirqs_per_kind_and_cpu() {
        let m = parse_softirqs(SOFTIRQS).unwrap();
        assert_eq!(m.len(), 10);
        assert_eq!(m["NET_RX"], vec![11407473, 7271468]);
        assert_eq!(m["NET_TX"], vec![307, 539]);
        let s = Snapshot {
            softirqs: m,
            ..Snapshot::default()
        };
        assert_eq!(s.counters()["softirqs/NET_RX"], 11407473 + 7271468);
        assert!(parse_softirqs("  CPU0 CPU1\nNET_RX: 1\n").is_err());
        assert!(parse_softirqs("").is_err());
    }

    #[test]
    fn snmp_fields_by_name() {
        let m = parse_snmp(SNMP).unwrap();
        assert_eq!(m["Ip.Forwarding"], 2);
        assert_eq!(m["Ip.ReasmFails"], 0);
        assert_eq!(m["Ip.FragCreates"], 0);
        assert_eq!(m["Udp.InDatagrams"], 30);
        assert_eq!(m["Udp.OutDatagrams"], 31);
        assert_eq!(m["UdpLite.MemErrors"], 0);
        assert_eq!(m["Icmp.InDestUnreachs"], 1);
        // Tcp's MaxConn is -1, not a counter.
        assert!(!m.contains_key("Tcp.MaxConn"));
        assert_eq!(m["Tcp.RtoMax"], 120000);
        assert_eq!(m.keys().filter(|k| k.starts_with("Udp.")).count(), 9);
        let s = parse_snmp(SNMP_SNDBUF).unwrap();
        assert_eq!(s["Udp.SndbufErrors"], 496);
        assert_eq!(s["Udp.OutDatagrams"], 4);
        for bad in [
            "Udp: A B\n",
            "Udp: A B\nUdp: 1\n",
            "Udp: A\nIp: 1\n",
            "nothing\nat all\n",
        ] {
            assert!(parse_snmp(bad).is_err(), "{bad:?}");
        }
        let m6 = parse_snmp6(SNMP6).unwrap();
        assert_eq!(m6.len(), 90);
        assert_eq!(m6["Udp6RcvbufErrors"], 0);
        assert!(parse_snmp6("Udp6InErrors x\n").is_err());
    }

    #[test]
    fn softnet_columns_are_hex() {
        let v = parse_softnet(SOFTNET).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].processed, 0x15);
        assert_eq!(v[1].processed, 0x922);
        assert_eq!(v[1].dropped, 0);
        assert_eq!(
            parse_softnet("0000000a 00000003 000000ff\n").unwrap()[0],
            Softnet {
                processed: 10,
                dropped: 3,
                time_squeeze: 255
            }
        );
        assert!(parse_softnet("0000000a 00000003\n").is_err());
        assert!(parse_softnet("0000000a zz 00000001\n").is_err());
    }

    #[test]
    fn qdiscs_and_root_drops() {
        let q = parse_tc_qdisc_json(TC).unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(
            (q[0].kind.as_str(), q[0].root, q[0].drops),
            ("tbf", true, 496)
        );
        assert_eq!(q[0].overlimits, 503);
        assert_eq!(q[1].parent.as_deref(), Some("1:"));
        assert_eq!(
            (q[1].kind.as_str(), q[1].root, q[1].drops),
            ("pfifo", false, 496)
        );
        let s = Snapshot {
            qdiscs: q,
            ..Snapshot::default()
        };
        // The root's count holds its child's: 496, not 992.
        assert_eq!(s.root_qdisc_drops("wlc-a"), 496);
        assert_eq!(s.root_qdisc_drops("other"), 0);
        assert_eq!(s.counters()["qdisc/wlc-a/10:/drops"], 496);
        assert!(parse_tc_qdisc_json("Error: Cannot find device").is_err());
    }

    #[test]
    fn ethtool_and_sysfs_statistics() {
        let v = parse_ethtool_stats(ETHTOOL_VETH);
        assert_eq!(v.len(), 10);
        assert_eq!(v["peer_ifindex"], 5);
        assert_eq!(v["rx_queue_0_drops"], 0);
        let e = parse_ethtool_stats(ETHTOOL_ETH0);
        assert_eq!(e["rx_kicks"], 397);
        assert_eq!(e["tx0_kicks"], 944);
        assert!(!e.contains_key("NIC statistics"));
        assert!(parse_ethtool_stats(ETHTOOL_LO).is_empty());
        let s = parse_sysfs_stats(SYSFS).unwrap();
        assert_eq!(s.len(), 24);
        assert_eq!((s["rx_packets"], s["rx_bytes"]), (1, 90));
        assert_eq!(s["rx_missed_errors"], 0);
        assert!(parse_sysfs_stats("rx_packets:many\n").is_err());
    }

    #[test]
    fn cpu_lines_and_memory() {
        let c = parse_proc_stat(STAT).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].cpu, "cpu");
        assert_eq!(
            c[1],
            CpuTimes {
                cpu: "cpu0".into(),
                user: 36668,
                nice: 0,
                system: 2957,
                idle: 6636,
                iowait: 17,
                irq: 0,
                softirq: 4,
                steal: 15,
            }
        );
        assert_eq!(c[1].total(), 36668 + 2957 + 6636 + 17 + 4 + 15);
        assert_eq!(c[1].busy(), 36668 + 2957 + 4 + 15);
        assert!(parse_proc_stat("cpu0 1 2\n").is_err());
        let m = parse_meminfo(MEMINFO).unwrap();
        assert_eq!(m["MemTotal"], 24684084);
        assert_eq!(m["HugePages_Total"], 0);
        assert!(parse_meminfo("MemTotal: lots\n").is_err());
    }

    #[test]
    fn deltas_per_counter_with_resets_said() {
        let mut before = Snapshot::default();
        before.snmp.insert("Udp.RcvbufErrors".into(), 10);
        before.snmp.insert("Udp.InErrors".into(), 12);
        before.softnet = vec![
            Softnet {
                processed: 5,
                dropped: 1,
                time_squeeze: 0,
            };
            2
        ];
        let mut i = Iface::default();
        i.sysfs.insert("rx_dropped".into(), 1 << 40);
        before.ifaces.insert("eth1".into(), i.clone());
        before.ifaces.insert("gone".into(), Iface::default());
        let mut after = before.clone();
        after.snmp.insert("Udp.RcvbufErrors".into(), 110);
        after.snmp.insert("Udp.InErrors".into(), 112);
        after.softnet[1].dropped = 4;
        // The interface was made again: its counter starts over.
        after
            .ifaces
            .get_mut("eth1")
            .unwrap()
            .sysfs
            .insert("rx_dropped".into(), 3);
        after.ifaces.remove("gone");
        after.ifaces.insert(
            "new".into(),
            Iface {
                sysfs: [("rx_packets".to_string(), 1)].into(),
                ..Iface::default()
            },
        );
        let d = Delta::between(&before, &after);
        assert_eq!(d.get("snmp/Udp.RcvbufErrors"), 100);
        assert_eq!(d.get("softnet/dropped"), 3);
        assert_eq!(d.get("softnet/processed"), 0);
        assert_eq!(d.decreased, vec!["if/eth1/rx_dropped".to_string()]);
        assert_eq!(d.get("if/eth1/rx_dropped"), 0);
        assert_eq!(d.unmatched, vec!["if/new/rx_packets".to_string()]);
        assert_eq!(d.sum("snmp/Udp.", "Errors"), 200);
        assert_eq!(d.sum("snmp/Udp.", "Rcvbuf"), 0);
        // Serialized and read back whole.
        let j = serde_json::to_string(&after).unwrap();
        assert_eq!(serde_json::from_str::<Snapshot>(&j).unwrap(), after);
    }
}
