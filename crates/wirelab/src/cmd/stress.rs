//! `wirelab stress KIND`: one stressor (seed 003 §3.4) for as long as it
//! is wanted, then nothing left of it.
//!
//! Each part of the load ([`wirelab_ctl::stress::plan`]) runs as a child
//! in a process group of its own, with PR_SET_PDEATHSIG, and, for a write
//! cap, in a cgroup v2 with io.max. This process reaps orphans
//! (PR_SET_CHILD_SUBREAPER). On SIGINT/SIGTERM, at the end of
//! `--duration`, or when a part ends by itself, every group gets SIGINT
//! (stress-ng stops its workers and reaps them), SIGKILL after
//! [`STOP_GRACE`], and every descendant is reaped; the report gives each
//! part's CPU time from wait4(2).

use anyhow::{bail, Context, Result};
use clap::Args;
use std::fs;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirelab_ctl::stress::{self, Ended, Load, Options, Part, PartReport, Program, Report};
use wirelab_io::process as proc_;

/// Time between SIGINT and SIGKILL to a part's group.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// A part counts as up once it has run this long (and, for stress-ng, has
/// forked its workers).
const UP_AFTER: Duration = Duration::from_millis(300);
/// How long the parts get to come up.
const UP_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

#[derive(Args, Debug)]
#[command(after_long_help = "Loads (stress-ng arguments; N = --workers):\n  \
cpu        --cpu N --cpu-load L          (N default: the CPU count; L = --load, default 100)\n  \
get        --get N                       (kernel-mode load: get*() system calls)\n  \
cpu-rt     --cpu N --cpu-load L --sched fifo --sched-prio P   (P = --rt-priority, default 50)\n  \
bigheap    --bigheap N                   (memory: a growing heap)\n  \
hdd        --hdd N                       (I/O in the working directory; --io-cap caps it)\n  \
timer      --timer N --timer-freq F      (F = --timer-freq, default 1MHz)\n  \
network    wirelab send --to ADDR --bitrate R (default 1Gbit) -s SIZE\n  \
realistic  seed 003 Table 4.1: 4 SCHED_FIFO workers at 100 %, 20 at 5 %, one disk writer capped \
at 1 Gbit/s, a 100 kHz timer, and with --to network load at 1 Gbit/s\n\n\
Arguments after -- go to every stress-ng part verbatim. --io-cap uses cgroup v2 (io.max on the \
disk holding the working directory); where that is not available the writer runs uncapped and \
the report says why.\n\n\
The stressor runs until --duration passes, SIGINT or SIGTERM; then every process it started is \
stopped (SIGINT, SIGKILL 5 s later) and reaped. A part that ends by itself stops the rest and \
makes the command fail (exit 1). Needs stress-ng (apt-get install stress-ng).\n\n\
Examples:\n  wirelab stress cpu --workers 2 --load 50 -d 10s\n  \
wirelab stress realistic --to 10.0.0.9 --json")]
pub struct StressArgs {
    /// The load: cpu, get, cpu-rt, bigheap, hdd, timer, network, realistic
    #[arg(value_name = "KIND", value_parser = |s: &str| s.parse::<Load>())]
    pub kind: Load,
    /// Workers (stress-ng instances); default: the CPU count for cpu and cpu-rt, else 1
    #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: Option<u32>,
    /// Percent of a CPU per cpu/cpu-rt worker (1-100)
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(1..=100))]
    pub load: Option<u8>,
    /// SCHED_FIFO priority of cpu-rt and the realistic preset's RT workers (1-99, default 50)
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=99))]
    pub rt_priority: Option<u8>,
    /// Timer frequency, e.g. 100kHz, 1MHz (default 1MHz)
    #[arg(long, value_name = "HZ", value_parser = stress::parse_hz)]
    pub timer_freq: Option<u64>,
    /// Network load: the address to send to (a host outside the flow under test)
    #[arg(long, value_name = "ADDR")]
    pub to: Option<String>,
    /// Network load: UDP port (default 9)
    #[arg(long)]
    pub port: Option<u16>,
    /// Network load: bit rate of UDP payload, e.g. 100Mbit (default 1Gbit)
    #[arg(long, value_name = "BITRATE", value_parser = crate::values::BITRATE)]
    pub bitrate: Option<f64>,
    /// Network load: UDP payload bytes (24-65507, default 1472)
    #[arg(long, value_parser = clap::value_parser!(u32).range(24..=65507))]
    pub size: Option<u32>,
    /// Cap the disk writer's writes, e.g. 1Gbit, 50MB/s (cgroup v2 io.max)
    #[arg(long, value_name = "BITRATE", value_parser = crate::values::BITRATE)]
    pub io_cap: Option<f64>,
    /// Stop after this long, e.g. 30s (default: until SIGINT or SIGTERM)
    #[arg(short, long, value_name = "DURATION", value_parser = crate::values::NONZERO_DURATION)]
    pub duration: Option<u64>,
    /// Write this file once every part is up (how `wirelab run` sees the load there)
    #[arg(long, value_name = "FILE")]
    pub ready: Option<PathBuf>,
    /// Print the report as JSON (wirelab.stress/1)
    #[arg(long)]
    pub json: bool,
    /// More stress-ng arguments, for every stress-ng part
    #[arg(last = true, value_name = "STRESS-NG ARGS")]
    pub args: Vec<String>,
}

struct Running {
    part: Part,
    command: Vec<String>,
    pid: u32,
    /// Set once reaped.
    end: Option<proc_::Reaped>,
    ended_early: bool,
    cgroup: Option<IoCgroup>,
}

pub fn run(a: StressArgs) -> Result<()> {
    let o = Options {
        workers: a.workers,
        load: a.load,
        rt_priority: a.rt_priority,
        timer_hz: a.timer_freq,
        to: a.to.clone(),
        port: a.port,
        bitrate: a.bitrate.map(|b| format!("{b}")),
        size: a.size,
        io_cap_bytes_per_s: a.io_cap.map(|b| (b / 8.0).round().max(1.0) as u64),
        args: a.args.clone(),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let duration_s = a.duration.map(|ns| ns.div_ceil(1_000_000_000));
    let (parts, mut notes) = stress::plan(a.kind, &o, cpus, duration_s)
        .map_err(|e| crate::error::usage(e.to_string()))?;
    let stress_ng = if parts.iter().any(|p| p.program == Program::StressNg) {
        Some(find_in_path("stress-ng").context(
            "stress-ng is not installed: install the stress-ng package (apt-get install \
             stress-ng, or scripts/install-deps.sh)",
        )?)
    } else {
        None
    };
    let me = std::env::current_exe().context("cannot find the wirelab executable")?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("cannot watch signals")?;
    }
    proc_::become_subreaper().context("cannot become the reaper of the stressor's workers")?;

    let began = Instant::now();
    let mut running: Vec<Running> = vec![];
    let mut failed_start = None;
    for part in parts {
        let program = match part.program {
            Program::StressNg => stress_ng.clone().expect("looked up above"),
            Program::Wirelab => me.clone(),
        };
        let mut cmd = Command::new(&program);
        // The parts' own output goes to stderr (the stressor's log); stdout
        // is the report's.
        let out = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot duplicate stderr")?;
        cmd.args(&part.args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .process_group(0);
        wirelab_io::process::die_with_parent(&mut cmd);
        let mut cgroup = None;
        if let Some(cap) = part.io_cap_bytes_per_s {
            match IoCgroup::new(cap, running.len()) {
                Ok((cg, procs)) => {
                    wirelab_io::process::join_cgroup(&mut cmd, procs);
                    cgroup = Some(cg);
                }
                Err(why) => {
                    let n = format!(
                        "{}: write cap of {cap} B/s not applied ({why}); it runs uncapped",
                        part.name
                    );
                    eprintln!("wirelab stress: {n}");
                    notes.push(n);
                }
            }
        }
        let mut command = vec![program.display().to_string()];
        command.extend(part.args.iter().cloned());
        match cmd.spawn() {
            Ok(child) => running.push(Running {
                pid: child.id(),
                part,
                command,
                end: None,
                ended_early: false,
                cgroup,
            }),
            Err(e) => {
                failed_start = Some(format!("cannot start {}: {e}", command.join(" ")));
                break;
            }
        }
    }

    // Above the load's real-time priority (after the spawns, which would
    // inherit it), so that stopping it is never starved by it.
    if let Some(p) = running.iter().filter_map(|r| r.part.rt_priority).max() {
        let mine = (i32::from(p) + 1).min(99);
        if let Err(e) = wirelab_io::rt::set_fifo_priority(mine) {
            notes.push(format!(
                "the stressor's supervisor could not take SCHED_FIFO {mine} ({e}): stopping \
                 the real-time load may wait for the kernel's RT throttling"
            ));
        }
    }
    let mut ended = Ended::Signal;
    let mut why_failed = failed_start;
    if why_failed.is_none() {
        match wait_up(&mut running, &stop) {
            Err(e) => why_failed = Some(e),
            Ok(()) => {
                if let Some(path) = &a.ready {
                    let pids: Vec<u32> = running.iter().map(|r| r.pid).collect();
                    fs::write(path, format!("{}\n", serde_json::json!({ "pids": pids })))
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
                let end = a.duration.map(|ns| began + Duration::from_nanos(ns));
                loop {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if end.is_some_and(|e| Instant::now() >= e) {
                        ended = Ended::Duration;
                        break;
                    }
                    if let Some(why) = reap_early(&mut running) {
                        why_failed = Some(why);
                        break;
                    }
                    std::thread::sleep(POLL);
                }
            }
        }
    }
    if why_failed.is_some() {
        ended = Ended::PartEnded;
    }
    stop_all(&mut running);
    let report = Report {
        schema: stress::REPORT_SCHEMA.into(),
        load: a.kind,
        ended,
        duration_s: began.elapsed().as_secs_f64(),
        parts: running
            .iter()
            .map(|r| {
                let end = r.end.expect("every part is reaped by stop_all");
                PartReport {
                    name: r.part.name.clone(),
                    command: r.command.clone(),
                    pid: r.pid,
                    exit_code: end.code,
                    signal: end.signal,
                    ended_early: r.ended_early,
                    user_s: secs(end.cpu.user_ns),
                    system_s: secs(end.cpu.system_ns),
                    io_cap_bytes_per_s: r.cgroup.as_ref().map(|c| c.cap),
                }
            })
            .collect(),
        user_s: secs(proc_::reaped_children_cpu().user_ns),
        system_s: secs(proc_::reaped_children_cpu().system_ns),
        notes,
    };
    drop(running);
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(out, "{}", text(&report))?;
    }
    out.flush()?;
    if let Some(why) = why_failed {
        bail!("{why}");
    }
    Ok(())
}

fn secs(ns: u64) -> f64 {
    (ns as f64 / 1e6).round() / 1e3
}

fn text(r: &Report) -> String {
    let mut s = format!(
        "stress {}: {:.1} s, ended by {}; CPU {:.2} s user, {:.2} s system\n",
        r.load.name(),
        r.duration_s,
        match r.ended {
            Ended::Duration => "its duration",
            Ended::Signal => "a signal",
            Ended::PartEnded => "a part's end",
        },
        r.user_s,
        r.system_s
    );
    for p in &r.parts {
        let how = match (p.exit_code, p.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "?".into(),
        };
        s += &format!(
            "  {:<8} pid {:<7} {:<8} CPU {:>8.2} s user {:>8.2} s system{}  {}\n",
            p.name,
            p.pid,
            how,
            p.user_s,
            p.system_s,
            p.io_cap_bytes_per_s
                .map_or(String::new(), |c| format!("  (writes capped at {c} B/s)")),
            p.command[1..].join(" ")
        );
    }
    for n in &r.notes {
        s += &format!("  note: {n}\n");
    }
    s
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Waits until every part has run [`UP_AFTER`] and every stress-ng part
/// has forked its workers; a part that ends first is an error.
fn wait_up(running: &mut [Running], stop: &AtomicBool) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        if let Some(why) = reap_early(running) {
            return Err(why);
        }
        let forked = running
            .iter()
            .all(|r| r.part.program != Program::StressNg || !children_of(r.pid).is_empty());
        if (forked && t0.elapsed() >= UP_AFTER) || stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        if t0.elapsed() > UP_TIMEOUT {
            return Err(format!(
                "the stressor's parts were not up after {} s (no stress-ng workers)",
                UP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// Reaps parts that have ended; why, if one has.
fn reap_early(running: &mut [Running]) -> Option<String> {
    let mut why = None;
    for r in running.iter_mut().filter(|r| r.end.is_none()) {
        if let Ok(Some(x)) = proc_::reap(Some(r.pid), false) {
            r.end = Some(x);
            r.ended_early = true;
            why.get_or_insert(format!(
                "stressor part {} ({}) ended by itself with {}",
                r.part.name,
                r.command.join(" "),
                match (x.code, x.signal) {
                    (Some(c), _) => format!("exit code {c}"),
                    (_, Some(s)) => format!("signal {s}"),
                    _ => "an unknown status".into(),
                }
            ));
        }
    }
    why
}

/// The pids of `pid`'s children (its main thread's, where wirelab and
/// stress-ng fork).
fn children_of(pid: u32) -> Vec<u32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Stops every part's group (SIGINT, SIGKILL after the grace time) and
/// reaps every descendant, orphans included.
fn stop_all(running: &mut [Running]) {
    for r in running.iter().filter(|r| r.end.is_none()) {
        let _ = proc_::kill_group(r.pid, signal_hook::consts::SIGINT);
    }
    let t0 = Instant::now();
    while running.iter().any(|r| r.end.is_none()) && t0.elapsed() < STOP_GRACE {
        for r in running.iter_mut().filter(|r| r.end.is_none()) {
            if let Ok(Some(x)) = proc_::reap(Some(r.pid), false) {
                r.end = Some(x);
            }
        }
        std::thread::sleep(POLL);
    }
    for r in running.iter_mut().filter(|r| r.end.is_none()) {
        // Only while the leader is unreaped does its pid name our group.
        let _ = proc_::kill_group(r.pid, signal_hook::consts::SIGKILL);
        if let Ok(Some(x)) = proc_::reap(Some(r.pid), true) {
            r.end = Some(x);
        }
    }
    // Workers whose part has gone are re-parented here: killed and reaped
    // (bounded: SIGKILL cannot be refused).
    let me = std::process::id();
    for _ in 0..1000 {
        while let Ok(Some(_)) = proc_::reap(None, false) {}
        let left = children_of(me);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let _ = proc_::kill(pid, signal_hook::consts::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A cgroup v2 of one part, capping its writes to the disk of the working
/// directory; removed on drop.
struct IoCgroup {
    dir: PathBuf,
    cap: u64,
}

impl IoCgroup {
    const ROOT: &'static str = "/sys/fs/cgroup";

    /// The cgroup and its `cgroup.procs` opened for the child to join.
    fn new(cap: u64, n: usize) -> Result<(IoCgroup, fs::File), String> {
        let root = Path::new(Self::ROOT);
        let controllers = fs::read_to_string(root.join("cgroup.controllers")).map_err(|_| {
            format!(
                "no cgroup v2 hierarchy at {} (this machine mounts cgroup v1)",
                Self::ROOT
            )
        })?;
        if !controllers.split_whitespace().any(|c| c == "io") {
            return Err(format!(
                "the cgroup v2 io controller is not available ({}/cgroup.controllers: {})",
                Self::ROOT,
                controllers.trim()
            ));
        }
        let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
        let dev = fs::metadata(&cwd)
            .map_err(|e| format!("cannot stat {}: {e}", cwd.display()))?
            .dev();
        let (maj, min) = whole_disk(dev_major_minor(dev))?;
        let enabled = fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
        if !enabled.split_whitespace().any(|c| c == "io") {
            fs::write(root.join("cgroup.subtree_control"), "+io")
                .map_err(|e| format!("cannot enable the io controller: {e}"))?;
        }
        let dir = root.join(format!("wirelab-stress-{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let cg = IoCgroup { dir, cap };
        fs::write(cg.dir.join("io.max"), format!("{maj}:{min} wbps={cap}"))
            .map_err(|e| format!("cannot write io.max for {maj}:{min}: {e}"))?;
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(cg.dir.join("cgroup.procs"))
            .map_err(|e| format!("cannot open {}/cgroup.procs: {e}", cg.dir.display()))?;
        Ok((cg, procs))
    }
}

impl Drop for IoCgroup {
    fn drop(&mut self) {
        // Empty once its processes are reaped; rmdir is how a cgroup goes.
        if let Err(e) = fs::remove_dir(&self.dir) {
            eprintln!("wirelab stress: cannot remove {}: {e}", self.dir.display());
        }
    }
}

/// The major and minor numbers of a `st_dev` (glibc's encoding).
fn dev_major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000);
    let minor = (dev & 0xff) | ((dev >> 12) & 0xffff_ff00);
    (major, minor)
}

/// io.max takes whole disks: a partition's disk.
fn whole_disk((maj, min): (u64, u64)) -> Result<(u64, u64), String> {
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    if !sys.exists() {
        return Err(format!(
            "the working directory is not on a block device ({maj}:{min}, e.g. tmpfs or overlay)"
        ));
    }
    if !sys.join("partition").exists() {
        return Ok((maj, min));
    }
    let parent = fs::read_to_string(sys.join("../dev"))
        .map_err(|e| format!("cannot find the disk of partition {maj}:{min}: {e}"))?;
    let (a, b) = parent
        .trim()
        .split_once(':')
        .ok_or_else(|| format!("bad device number {parent:?}"))?;
    Ok((
        a.parse()
            .map_err(|_| format!("bad device number {parent:?}"))?,
        b.parse()
            .map_err(|_| format!("bad device number {parent:?}"))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers() {
        // glibc's makedev.
        let makedev = |maj: u64, min: u64| {
            ((maj & 0xfff) << 8) | ((maj & !0xfff) << 32) | (min & 0xff) | ((min & !0xff) << 12)
        };
        for (maj, min) in [(8, 1), (259, 65537), (4095, 255), (4096, 1 << 19)] {
            assert_eq!(dev_major_minor(makedev(maj, min)), (maj, min));
        }
        assert_eq!(dev_major_minor(0x801), (8, 1));
    }

    #[test]
    fn cpu_seconds_round_to_milliseconds() {
        assert_eq!(secs(1_234_567_890), 1.235);
    }
}
