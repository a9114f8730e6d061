//! Running a stressor's parts ([`super::plan`]) until they are wanted no
//! more, then nothing left of them: what `wirelab stress` does.
//!
//! Each part runs as a child in a process group of its own, with
//! PR_SET_PDEATHSIG, and, for a write cap, in a cgroup v2 with io.max. The
//! calling process becomes the reaper of orphans (PR_SET_CHILD_SUBREAPER).
//! When `stop` is set, at the end of the duration, or when a part ends by
//! itself, every group gets SIGINT (stress-ng stops its workers and reaps
//! them), SIGKILL after [`STOP_GRACE`], and every descendant is reaped; the
//! report gives each part's CPU time from wait4(2).

use super::{Ended, Load, Part, PartReport, Program, Report, REPORT_SCHEMA};
use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_io::process as proc_;
use wirelab_io::supervise::{self, Spawn, Supervised};

/// Time between SIGINT and SIGKILL to a part's group.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// A part counts as up once it has run this long (and, for stress-ng, has
/// forked its workers).
const UP_AFTER: Duration = Duration::from_millis(300);
/// How long the parts get to come up.
const UP_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);
const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;

/// What keeps a stressor from running at all.
#[derive(Debug, Error)]
pub enum SuperviseError {
    #[error(
        "stress-ng is not installed: install the stress-ng package (apt-get install stress-ng, \
         or scripts/install-deps.sh)"
    )]
    NoStressNg,
    #[error("cannot become the reaper of the stressor's workers: {0}")]
    Subreaper(io::Error),
    #[error("cannot duplicate stderr for the stressor's output: {0}")]
    Stderr(io::Error),
    #[error("cannot write {path}: {cause}")]
    Ready { path: PathBuf, cause: io::Error },
}

/// Why a run failed once its parts were being started. Causes are
/// printed, not returned as sources.
#[derive(Debug, Error)]
pub enum PartFailure {
    #[error("cannot start {command}: {err}")]
    NotStarted { command: String, err: io::Error },
    #[error("the stressor's parts were not up after {} s (no stress-ng workers)", UP_TIMEOUT.as_secs())]
    NotUp,
    #[error("stressor part {name} ({command}) ended by itself with {}", status_text(*.code, *.signal))]
    EndedEarly {
        name: String,
        command: String,
        code: Option<i32>,
        signal: Option<i32>,
    },
}

fn status_text(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit code {c}"),
        (_, Some(s)) => format!("signal {s}"),
        _ => "an unknown status".into(),
    }
}

/// Why a part's write cap could not be applied (a note: the part runs
/// uncapped). Causes are printed, not returned as sources.
#[derive(Debug, Error)]
enum CgroupError {
    #[error(
        "no cgroup v2 hierarchy at {} (this machine mounts cgroup v1)",
        IoCgroup::ROOT
    )]
    NoV2,
    #[error(
        "the cgroup v2 io controller is not available ({}/cgroup.controllers: {controllers})",
        IoCgroup::ROOT
    )]
    NoIoController { controllers: String },
    #[error("no working directory: {0}")]
    NoCwd(io::Error),
    #[error("cannot stat {}: {err}", .path.display())]
    Stat { path: PathBuf, err: io::Error },
    #[error("cannot enable the io controller: {0}")]
    Enable(io::Error),
    #[error("cannot create {}: {err}", .path.display())]
    Create { path: PathBuf, err: io::Error },
    #[error("cannot write io.max for {maj}:{min}: {err}")]
    IoMax { maj: u64, min: u64, err: io::Error },
    #[error("cannot open {}/cgroup.procs: {err}", .dir.display())]
    OpenProcs { dir: PathBuf, err: io::Error },
    #[error("the working directory is not on a block device ({maj}:{min}, e.g. tmpfs or overlay)")]
    NotBlockDevice { maj: u64, min: u64 },
    #[error("cannot find the disk of partition {maj}:{min}: {err}")]
    PartitionDisk { maj: u64, min: u64, err: io::Error },
    #[error("bad device number {0:?}")]
    BadDevice(String),
}

/// How to run the parts.
pub struct Supervise<'a> {
    pub load: Load,
    pub parts: Vec<Part>,
    /// Notes of the plan; the run adds its own.
    pub notes: Vec<String>,
    /// The wirelab executable, for network parts.
    pub wirelab: PathBuf,
    /// Stop after this long; else only on `stop` or a part's end.
    pub duration: Option<Duration>,
    /// Written (`{"pids": [...]}`) once every part is up.
    pub ready: Option<PathBuf>,
    /// Set by the caller (a signal handler) to stop.
    pub stop: &'a AtomicBool,
}

/// The report, and why the run failed if it did (a part that could not
/// start, did not come up, or ended by itself).
pub struct Outcome {
    pub report: Report,
    pub failed: Option<PartFailure>,
}

struct Running {
    part: Part,
    command: Vec<String>,
    pid: u32,
    /// Its group leader, reaped by the supervisor.
    child: Supervised,
    ended_early: bool,
    cgroup: Option<IoCgroup>,
}

/// Starts every part, waits until they are up, runs until `stop`, the
/// duration or a part's end, then stops and reaps everything it started.
pub fn run(s: Supervise<'_>) -> Result<Outcome, SuperviseError> {
    let Supervise {
        load,
        parts,
        mut notes,
        wirelab,
        duration,
        ready,
        stop,
    } = s;
    let stress_ng = if parts.iter().any(|p| p.program == Program::StressNg) {
        Some(find_in_path("stress-ng").ok_or(SuperviseError::NoStressNg)?)
    } else {
        None
    };
    proc_::become_subreaper().map_err(SuperviseError::Subreaper)?;

    let began = Instant::now();
    let mut running: Vec<Running> = vec![];
    let mut failed = None;
    for part in parts {
        let program = match (&part.program, &stress_ng) {
            (Program::StressNg, Some(p)) => p.clone(),
            _ => wirelab.clone(),
        };
        match start_part(part, &program, running.len(), &mut notes)? {
            Ok(r) => running.push(r),
            Err(why) => {
                failed = Some(why);
                break;
            }
        }
    }
    outrank_rt_load(&running, &mut notes);
    let mut ended = Ended::Signal;
    let mut ready_error = None;
    if failed.is_none() {
        let end = duration.map(|d| began + d);
        match run_until_end(&mut running, ready.as_deref(), end, stop) {
            Ok(Ok(e)) => ended = e,
            Ok(Err(why)) => failed = Some(why),
            Err(e) => ready_error = Some(e),
        }
    }
    if failed.is_some() {
        ended = Ended::PartEnded;
    }
    stop_all(&mut running);
    if let Some(e) = ready_error {
        return Err(e);
    }
    let report = Report {
        schema: REPORT_SCHEMA.into(),
        load,
        ended,
        duration_s: began.elapsed().as_secs_f64(),
        parts: running.iter().map(part_report).collect(),
        user_s: secs(proc_::reaped_children_cpu().user_ns),
        system_s: secs(proc_::reaped_children_cpu().system_ns),
        notes,
    };
    Ok(Outcome { report, failed })
}

/// Spawns one part of `program` in a group of its own, in a write-capped
/// cgroup (the `index`th) if it has a cap; a cap that cannot be applied is
/// a note, a part that cannot be spawned is the inner error.
fn start_part(
    part: Part,
    program: &Path,
    index: usize,
    notes: &mut Vec<String>,
) -> Result<Result<Running, PartFailure>, SuperviseError> {
    let mut cmd = Command::new(program);
    // The parts' own output goes to stderr (the stressor's log); stdout
    // is the report's.
    let out = io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(SuperviseError::Stderr)?;
    cmd.args(&part.args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out));
    let mut cgroup = None;
    if let Some(cap) = part.io_cap_bytes_per_s {
        match IoCgroup::new(cap, index) {
            Ok((cg, procs)) => {
                proc_::join_cgroup(&mut cmd, procs);
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
    let how = Spawn {
        group: true,
        die_with_parent: true,
    };
    Ok(match Supervised::spawn(&mut cmd, how) {
        Ok(child) => Ok(Running {
            pid: child.pid(),
            part,
            command,
            child,
            ended_early: false,
            cgroup,
        }),
        Err(err) => Err(PartFailure::NotStarted {
            command: command.join(" "),
            err,
        }),
    })
}

/// Takes a real-time priority above the load's (after the spawns, which
/// would inherit it), so that stopping it is never starved by it.
fn outrank_rt_load(running: &[Running], notes: &mut Vec<String>) {
    let Some(p) = running.iter().filter_map(|r| r.part.rt_priority).max() else {
        return;
    };
    let mine = (i32::from(p) + 1).min(99);
    if let Err(e) = wirelab_io::rt::set_fifo_priority(mine) {
        notes.push(format!(
            "the stressor's supervisor could not take SCHED_FIFO {mine} ({e}): stopping \
             the real-time load may wait for the kernel's RT throttling"
        ));
    }
}

/// Waits for the parts to come up, writes `ready`, then runs until `stop`
/// or `end`: how the run ended, or (inner error) why a part failed; a
/// `ready` file that cannot be written is the outer error.
fn run_until_end(
    running: &mut [Running],
    ready: Option<&Path>,
    end: Option<Instant>,
    stop: &AtomicBool,
) -> Result<Result<Ended, PartFailure>, SuperviseError> {
    if let Err(why) = wait_up(running, stop) {
        return Ok(Err(why));
    }
    if let Some(path) = ready {
        let pids: Vec<u32> = running.iter().map(|r| r.pid).collect();
        fs::write(path, format!("{}\n", serde_json::json!({ "pids": pids }))).map_err(
            |source| SuperviseError::Ready {
                path: path.to_path_buf(),
                cause: source,
            },
        )?;
    }
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(Ok(Ended::Signal));
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            return Ok(Ok(Ended::Duration));
        }
        if let Some(why) = reap_early(running) {
            return Ok(Err(why));
        }
        std::thread::sleep(POLL);
    }
}

/// A part's line of the report. [`stop_all`] reaps every part; one it
/// could not reap reports no exit status and no CPU time.
fn part_report(r: &Running) -> PartReport {
    let (code, signal, cpu) = r.child.end().map_or((None, None, Default::default()), |e| {
        (e.code, e.signal, e.cpu)
    });
    PartReport {
        name: r.part.name.clone(),
        command: r.command.clone(),
        pid: r.pid,
        exit_code: code,
        signal,
        ended_early: r.ended_early,
        user_s: secs(cpu.user_ns),
        system_s: secs(cpu.system_ns),
        io_cap_bytes_per_s: r.cgroup.as_ref().map(|c| c.cap),
    }
}

fn secs(ns: u64) -> f64 {
    (ns as f64 / 1e6).round() / 1e3
}

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Waits until every part has run [`UP_AFTER`] and every stress-ng part
/// has forked its workers; a part that ends first is an error.
fn wait_up(running: &mut [Running], stop: &AtomicBool) -> Result<(), PartFailure> {
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
            return Err(PartFailure::NotUp);
        }
        std::thread::sleep(POLL);
    }
}

/// Reaps parts that have ended; why, if one has.
fn reap_early(running: &mut [Running]) -> Option<PartFailure> {
    let mut why = None;
    for r in running.iter_mut().filter(|r| r.child.end().is_none()) {
        if let Some(x) = r.child.poll() {
            r.ended_early = true;
            why.get_or_insert(PartFailure::EndedEarly {
                name: r.part.name.clone(),
                command: r.command.join(" "),
                code: x.code,
                signal: x.signal,
            });
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
    let groups = running.iter_mut().map(|r| &mut r.child);
    supervise::stop_all(groups, SIGINT, STOP_GRACE);
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
            let _ = proc_::kill(pid, SIGKILL);
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
    fn new(cap: u64, n: usize) -> Result<(IoCgroup, fs::File), CgroupError> {
        let root = Path::new(Self::ROOT);
        let controllers =
            fs::read_to_string(root.join("cgroup.controllers")).map_err(|_| CgroupError::NoV2)?;
        if !controllers.split_whitespace().any(|c| c == "io") {
            return Err(CgroupError::NoIoController {
                controllers: controllers.trim().into(),
            });
        }
        let cwd = std::env::current_dir().map_err(CgroupError::NoCwd)?;
        let dev = match fs::metadata(&cwd) {
            Ok(m) => m.dev(),
            Err(err) => return Err(CgroupError::Stat { path: cwd, err }),
        };
        let (maj, min) = whole_disk(dev_major_minor(dev))?;
        let enabled = fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
        if !enabled.split_whitespace().any(|c| c == "io") {
            fs::write(root.join("cgroup.subtree_control"), "+io").map_err(CgroupError::Enable)?;
        }
        let dir = root.join(format!("wirelab-stress-{}-{n}", std::process::id()));
        if let Err(err) = fs::create_dir(&dir) {
            return Err(CgroupError::Create { path: dir, err });
        }
        let cg = IoCgroup { dir, cap };
        fs::write(cg.dir.join("io.max"), format!("{maj}:{min} wbps={cap}"))
            .map_err(|err| CgroupError::IoMax { maj, min, err })?;
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(cg.dir.join("cgroup.procs"))
            .map_err(|err| CgroupError::OpenProcs {
                dir: cg.dir.clone(),
                err,
            })?;
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
fn whole_disk((maj, min): (u64, u64)) -> Result<(u64, u64), CgroupError> {
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    if !sys.exists() {
        return Err(CgroupError::NotBlockDevice { maj, min });
    }
    if !sys.join("partition").exists() {
        return Ok((maj, min));
    }
    let parent = fs::read_to_string(sys.join("../dev"))
        .map_err(|err| CgroupError::PartitionDisk { maj, min, err })?;
    let bad = || CgroupError::BadDevice(parent.clone());
    let (a, b) = parent.trim().split_once(':').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
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

    #[test]
    fn a_missing_program_is_not_found() {
        assert_eq!(find_in_path("wirelab-no-such-program"), None);
        assert!(find_in_path("sh").is_some());
    }
}
