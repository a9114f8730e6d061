//! The agent (`wirelab agent --stdio`): serves [`crate::proto`] requests
//! read from one stream and answered on another, running children of its
//! own executable in a work directory.
//!
//! # Children
//! A child is the agent's executable ([`AgentConfig::exe`]) with the
//! arguments of a `spawn`, started in the workdir with stdin from
//! /dev/null and stdout and stderr in `TAG.out` and `TAG.err` there. At
//! most [`MAX_CHILDREN`] children are known at once (running, or ended and
//! not yet reported by `wait`); a `wait` that reports an end forgets the
//! child. Each child gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the
//! agent even when the agent is killed outright.
//!
//! # Dead-man rule
//! When its input ends (the controller or its connection died), on `bye`,
//! or when [`AgentConfig::stop`] is set (the binary sets it on SIGINT,
//! SIGTERM and SIGHUP), the agent sends SIGTERM to every running child,
//! SIGKILL to those still running [`TERM_GRACE`] later, reaps them, removes
//! the workdir if it created it, and returns. It then reverts every
//! environment change it applied (`env_apply`) that was not asked to
//! outlive the connection and that the controller has not reverted.

use crate::proto::{
    self, AgentTime, ChildStatus, Envelope, Exit, HelloInfo, LineRead, Request, Response, Sockets,
    MAX_CHUNK, MAX_REQUEST_LINE, PROTOCOL, STDERR_TAIL, STDOUT_CAP,
};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use wirelab_io::supervise::{stop_all, Spawn, Supervised};

/// Most children known at once.
pub const MAX_CHILDREN: usize = 64;
/// Time between SIGTERM and SIGKILL when the agent stops its children.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// Longest `wait` the agent accepts (a longer timeout is cut to this).
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
/// How often a waiting agent looks at its children, its input and its stop
/// flag.
const POLL: Duration = Duration::from_millis(5);
/// How often an idle agent looks at its stop flag.
const IDLE_POLL: Duration = Duration::from_millis(100);
/// Requests served by this agent.
pub const CAPABILITIES: &[&str] = &[
    "spawn",
    "wait",
    "signal",
    "status",
    "fetch",
    "time",
    "sockets",
    "remove",
    "counters",
    "env",
    "env_apply",
    "env_revert",
];

/// How to run an agent.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Where children run and files are fetched from. `None`: a new
    /// directory in the system's temporary directory, removed at the end; a
    /// given one is created if missing and always left in place.
    pub workdir: Option<PathBuf>,
    /// The executable children run (the binary passes its own).
    pub exe: PathBuf,
    /// Set to make the agent stop its children and return.
    pub stop: Arc<AtomicBool>,
    /// Where `env_apply` keeps its revert files.
    pub env_dir: PathBuf,
}

impl AgentConfig {
    pub fn new(exe: impl Into<PathBuf>) -> AgentConfig {
        AgentConfig {
            workdir: None,
            exe: exe.into(),
            stop: Arc::new(AtomicBool::new(false)),
            env_dir: PathBuf::from(wirelab_host::env::apply::STATE_DIR),
        }
    }
}

/// Why [`serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The input ended or failed.
    Eof,
    /// The controller said `bye`.
    Bye,
    /// [`AgentConfig::stop`] was set.
    Stopped,
    /// The output could not be written (the controller is gone).
    OutputClosed,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot create the work directory {path}: {cause}")]
    Workdir { path: PathBuf, cause: io::Error },
}

/// Serves requests from `input`, answers on `output`, until the input
/// ends, `bye`, or the stop flag; stops every child before returning.
pub fn serve<R, W>(input: R, output: W, cfg: AgentConfig) -> Result<Ended, AgentError>
where
    R: Read + Send + 'static,
    W: Write,
{
    let (workdir, created) = make_workdir(cfg.workdir.as_deref())?;
    let eof = Arc::new(AtomicBool::new(false));
    let lines = read_input(input, eof.clone());
    let mut agent = Agent {
        workdir,
        created,
        exe: cfg.exe,
        children: Vec::new(),
        stop: cfg.stop,
        eof,
        env_dir: cfg.env_dir,
        env_held: Vec::new(),
    };
    let mut out = BufWriter::new(output);
    let mut bye = 0;
    let ended = agent.run(&lines, &mut out, &mut bye);
    agent.shutdown();
    if ended == Ended::Bye {
        // Answered after the clean-up, so `ok` means it is done.
        let _ = send(&mut out, bye, Response::Ok);
    }
    Ok(ended)
}

enum Input {
    Line(Vec<u8>),
    TooLong(usize),
    End,
}

/// Reads lines on a thread of its own, so the agent can watch its stop flag
/// while the input is quiet. The channel is bounded: a controller that
/// floods requests waits for the agent.
fn read_input<R: Read + Send + 'static>(input: R, eof: Arc<AtomicBool>) -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::sync_channel(4);
    std::thread::spawn(move || {
        let mut r = BufReader::new(input);
        let mut buf = Vec::new();
        loop {
            let msg = match proto::read_line(&mut r, MAX_REQUEST_LINE, &mut buf) {
                Ok(LineRead::Line) => Input::Line(std::mem::take(&mut buf)),
                Ok(LineRead::TooLong(n)) => Input::TooLong(n),
                Ok(LineRead::Eof) | Err(_) => break,
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
        eof.store(true, Ordering::SeqCst);
        let _ = tx.send(Input::End);
    });
    rx
}

fn send<W: Write>(out: &mut W, id: u64, body: Response) -> io::Result<()> {
    out.write_all(&proto::encode(&Envelope { id, body }))?;
    out.flush()
}

fn make_workdir(given: Option<&Path>) -> Result<(PathBuf, bool), AgentError> {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let err = |path: &Path, source| AgentError::Workdir {
        path: path.to_path_buf(),
        cause: source,
    };
    if let Some(dir) = given {
        fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
        let dir = dir.canonicalize().map_err(|e| err(dir, e))?;
        return Ok((dir, false));
    }
    let base = std::env::temp_dir();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("wirelab-agent-{}-{n}", std::process::id()));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                let dir = dir.canonicalize().map_err(|e| err(&dir, e))?;
                return Ok((dir, true));
            }
            // Left over by an earlier process with the same pid.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(err(&dir, e)),
        }
    }
}

struct Kid {
    tag: String,
    pid: u32,
    child: Supervised,
}

impl Kid {
    /// Reaps the child if it has ended; its status once ended.
    fn poll(&mut self) -> Option<ExitStatus> {
        self.child.poll().map(|r| r.exit_status())
    }
}

struct Agent {
    workdir: PathBuf,
    created: bool,
    exe: PathBuf,
    children: Vec<Kid>,
    stop: Arc<AtomicBool>,
    eof: Arc<AtomicBool>,
    env_dir: PathBuf,
    /// Environment changes to revert when the agent stops.
    env_held: Vec<String>,
}

impl Agent {
    /// Serves until an end; the id of a `bye` goes to `bye`.
    fn run<W: Write>(
        &mut self,
        lines: &mpsc::Receiver<Input>,
        out: &mut W,
        bye: &mut u64,
    ) -> Ended {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Ended::Stopped;
            }
            let (id, resp) = match lines.recv_timeout(IDLE_POLL) {
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) | Ok(Input::End) => return Ended::Eof,
                Ok(Input::TooLong(n)) => (
                    0,
                    Response::Error {
                        message: format!(
                            "request line of {n} bytes is over the limit of {MAX_REQUEST_LINE}"
                        ),
                    },
                ),
                Ok(Input::Line(l)) if l.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Input::Line(l)) => match proto::decode_request(&l) {
                    Err(bad) => (
                        bad.id,
                        Response::Error {
                            message: bad.message,
                        },
                    ),
                    Ok(Envelope {
                        id,
                        body: Request::Bye,
                    }) => {
                        *bye = id;
                        return Ended::Bye;
                    }
                    Ok(req) => (req.id, self.handle(req.body)),
                },
            };
            if send(out, id, resp).is_err() {
                return Ended::OutputClosed;
            }
        }
    }

    fn handle(&mut self, req: Request) -> Response {
        let res = match req {
            Request::Hello { .. } => Ok(Response::Hello(self.hello())),
            Request::Spawn { tag, args } => self.spawn(&tag, &args),
            Request::Wait { tag, timeout_ms } => self.wait(&tag, timeout_ms),
            Request::Signal { tag, signal } => self.signal(&tag, signal.number()),
            Request::Status => Ok(self.status()),
            Request::Fetch { path, offset, max } => self.fetch(&path, offset, max),
            Request::Time => Ok(Response::Time(AgentTime {
                realtime_ns: wirelab_io::clock::real_ns(),
                monotonic_ns: wirelab_io::clock::mono_ns(),
            })),
            Request::Sockets => Ok(Response::Sockets(sockets())),
            Request::Remove { path } => self.remove(&path),
            Request::Counters { ifaces, sample } => {
                let depth = if sample {
                    wirelab_host::counters::Depth::Sample
                } else {
                    wirelab_host::counters::Depth::Full
                };
                Ok(Response::Counters(Box::new(
                    wirelab_host::counters::collect(&ifaces, depth),
                )))
            }
            Request::Bye => Ok(Response::Ok),
            Request::Env { host } => Ok(Response::Env(wirelab_host::env::read::snapshot(&host))),
            Request::EnvApply {
                settings,
                iface,
                keep,
            } => self.env_apply(&settings, iface.as_deref(), keep),
            Request::EnvRevert { token } => self.env_revert(&token),
        };
        // The protocol carries the error as its message.
        res.unwrap_or_else(|e| Response::Error {
            message: e.to_string(),
        })
    }

    fn hello(&self) -> HelloInfo {
        HelloInfo {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            capabilities: CAPABILITIES.iter().map(|s| s.to_string()).collect(),
            host: fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            workdir: self.workdir.display().to_string(),
            pid: std::process::id(),
        }
    }

    fn kid(&mut self, tag: &str) -> Result<usize, RequestError> {
        self.children
            .iter()
            .position(|k| k.tag == tag)
            .ok_or_else(|| RequestError::NoChild { tag: tag.into() })
    }

    fn spawn(&mut self, tag: &str, args: &[String]) -> Result<Response, RequestError> {
        check_tag(tag)?;
        if self.children.len() >= MAX_CHILDREN {
            return Err(RequestError::TooManyChildren);
        }
        let create = |ext: &str| {
            let path = self.workdir.join(format!("{tag}.{ext}"));
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|err| match err.kind() {
                    io::ErrorKind::AlreadyExists => RequestError::TagUsed {
                        tag: tag.into(),
                        path: path.clone(),
                    },
                    _ => RequestError::Create {
                        path: path.clone(),
                        err,
                    },
                })
        };
        let out = create("out")?;
        let err = create("err")?;
        let mut cmd = Command::new(&self.exe);
        cmd.args(args)
            .current_dir(&self.workdir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let how = Spawn {
            group: false,
            die_with_parent: true,
        };
        let child = Supervised::spawn(&mut cmd, how).map_err(|err| RequestError::Start {
            exe: self.exe.clone(),
            err,
        })?;
        let pid = child.pid();
        self.children.push(Kid {
            tag: tag.into(),
            pid,
            child,
        });
        Ok(Response::Spawned { pid })
    }

    fn wait(&mut self, tag: &str, timeout_ms: u64) -> Result<Response, RequestError> {
        let i = self.kid(tag)?;
        let start = Instant::now();
        let timeout = Duration::from_millis(timeout_ms).min(MAX_WAIT);
        loop {
            if let Some(st) = self.children[i].poll() {
                let exit = self.exit(tag, st);
                self.children.remove(i);
                return Ok(Response::Exited(exit));
            }
            let left = timeout.saturating_sub(start.elapsed());
            // A controller gone or a stop request ends the wait early: the
            // main loop then stops everything.
            if left.is_zero() || self.eof.load(Ordering::SeqCst) || self.stop.load(Ordering::SeqCst)
            {
                return Ok(Response::Running);
            }
            std::thread::sleep(left.min(POLL));
        }
    }

    fn exit(&self, tag: &str, st: ExitStatus) -> Exit {
        let out = self.workdir.join(format!("{tag}.out"));
        let (stdout, stdout_bytes) = read_head(&out, STDOUT_CAP).unwrap_or_default();
        let stderr_tail =
            read_tail(&self.workdir.join(format!("{tag}.err")), STDERR_TAIL).unwrap_or_default();
        Exit {
            code: st.code(),
            signal: st.signal(),
            stdout_truncated: stdout_bytes > stdout.len() as u64,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stdout_bytes,
            stderr_tail: String::from_utf8_lossy(&stderr_tail).into_owned(),
        }
    }

    fn signal(&mut self, tag: &str, sig: i32) -> Result<Response, RequestError> {
        let i = self.kid(tag)?;
        let k = &mut self.children[i];
        k.child.signal(sig).map_err(|err| RequestError::Signal {
            tag: tag.into(),
            pid: k.pid,
            err,
        })?;
        Ok(Response::Ok)
    }

    fn status(&mut self) -> Response {
        let children = self
            .children
            .iter_mut()
            .map(|k| {
                let st = k.poll();
                ChildStatus {
                    tag: k.tag.clone(),
                    pid: k.pid,
                    running: st.is_none(),
                    code: st.and_then(|s| s.code()),
                    signal: st.and_then(|s| s.signal()),
                }
            })
            .collect();
        Response::Status { children }
    }

    fn fetch(&self, path: &str, offset: u64, max: u32) -> Result<Response, RequestError> {
        if max == 0 || max > MAX_CHUNK {
            return Err(RequestError::FetchMax { max });
        }
        if plain(path).is_ok() && !self.workdir.join(path).exists() {
            return Ok(Response::NotFound { path: path.into() });
        }
        let full = inside(&self.workdir, path)?;
        let mut f = File::open(&full).map_err(|err| RequestError::Open {
            path: path.into(),
            err,
        })?;
        let read = |err| RequestError::Read {
            path: path.into(),
            err,
        };
        let size = f.metadata().map_err(read)?.len();
        if offset > size {
            return Err(RequestError::Offset {
                offset,
                path: path.into(),
                size,
            });
        }
        f.seek(SeekFrom::Start(offset)).map_err(read)?;
        let want = (size - offset).min(u64::from(max));
        let mut data = Vec::with_capacity(want as usize);
        f.take(want).read_to_end(&mut data).map_err(read)?;
        Ok(Response::Chunk {
            eof: offset + data.len() as u64 >= size,
            data_b64: proto::base64_encode(&data),
            size,
        })
    }

    fn env_apply(
        &mut self,
        settings: &[(String, String)],
        iface: Option<&str>,
        keep: bool,
    ) -> Result<Response, RequestError> {
        use wirelab_host::env::apply;
        let planned = apply::plan(settings, iface)?;
        let token = apply::new_token();
        let f = apply::apply(&mut apply::Local, &self.env_dir, &token, &planned)?;
        if !keep {
            self.env_held.push(token.clone());
        }
        Ok(Response::EnvApplied {
            token,
            changes: f.changes,
        })
    }

    fn env_revert(&mut self, token: &str) -> Result<Response, RequestError> {
        use wirelab_host::env::apply;
        let changes = apply::revert(&mut apply::Local, &self.env_dir, token)?;
        self.env_held.retain(|t| t != token);
        Ok(Response::EnvReverted { changes })
    }

    fn remove(&self, path: &str) -> Result<Response, RequestError> {
        plain(path)?;
        match fs::remove_file(self.workdir.join(path)) {
            Ok(()) => Ok(Response::Ok),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Response::Ok),
            Err(err) => Err(RequestError::Remove {
                path: path.into(),
                err,
            }),
        }
    }

    /// Stops every running child (SIGTERM, SIGKILL after [`TERM_GRACE`]),
    /// reaps them all and removes a workdir of its own.
    fn shutdown(&mut self) {
        let kids = self.children.iter_mut().map(|k| &mut k.child);
        stop_all(kids, signal_hook::consts::SIGTERM, TERM_GRACE);
        self.children.clear();
        for token in std::mem::take(&mut self.env_held).into_iter().rev() {
            let res = wirelab_host::env::apply::revert(
                &mut wirelab_host::env::apply::Local,
                &self.env_dir,
                &token,
            );
            if let Err(e) = res {
                eprintln!("wirelab agent: {e}");
            }
        }
        if self.created {
            if let Err(e) = fs::remove_dir_all(&self.workdir) {
                eprintln!(
                    "wirelab agent: cannot remove its work directory {}: {e}",
                    self.workdir.display()
                );
            }
        }
    }
}

/// Why a request failed; its message is the `error` response's. Causes
/// are printed, not returned as sources.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("no child tagged {tag:?} (never spawned, or its end was already reported by wait)")]
    NoChild { tag: String },
    #[error("the agent already has {MAX_CHILDREN} children not yet reported by wait: wait for some first")]
    TooManyChildren,
    #[error("tag {tag:?} was used before ({} exists): pick a new one", .path.display())]
    TagUsed { tag: String, path: PathBuf },
    #[error("cannot create {}: {err}", .path.display())]
    Create { path: PathBuf, err: io::Error },
    #[error("cannot start {}: {err}", .exe.display())]
    Start { exe: PathBuf, err: io::Error },
    #[error("cannot signal {tag:?} (pid {pid}): {err}")]
    Signal {
        tag: String,
        pid: u32,
        err: io::Error,
    },
    #[error("fetch max must be 1 to {MAX_CHUNK} bytes, not {max}")]
    FetchMax { max: u32 },
    #[error("cannot open {path}: {err}")]
    Open { path: String, err: io::Error },
    #[error("cannot read {path}: {err}")]
    Read { path: String, err: io::Error },
    #[error("offset {offset} is beyond the end of {path} ({size} bytes)")]
    Offset {
        offset: u64,
        path: String,
        size: u64,
    },
    #[error("cannot remove {path}: {err}")]
    Remove { path: String, err: io::Error },
    #[error(
        "bad tag {tag:?}: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"
    )]
    BadTag { tag: String },
    #[error("path {path:?} must be relative to the agent's workdir, without '..'")]
    NotPlain { path: String },
    #[error("fetch path {path:?} leads outside the agent's workdir")]
    Outside { path: String },
    #[error(transparent)]
    Env(#[from] wirelab_host::env::apply::EnvError),
}

/// A tag names files in the workdir: 1 to 64 of `[A-Za-z0-9._-]`, not
/// starting with `.`.
fn check_tag(tag: &str) -> Result<(), RequestError> {
    let ok = !tag.is_empty()
        && tag.len() <= 64
        && !tag.starts_with('.')
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(RequestError::BadTag { tag: tag.into() })
    }
}

/// `path` resolved inside `dir`: relative, without `..`, and (symbolic links
/// followed) still inside `dir`.
/// `path` is relative and has no `..`.
fn plain(path: &str) -> Result<(), RequestError> {
    let ok = Path::new(path)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if path.is_empty() || !ok {
        return Err(RequestError::NotPlain { path: path.into() });
    }
    Ok(())
}

/// The sockets of this process's network namespace.
fn sockets() -> Sockets {
    let read = |p: &str| fs::read_to_string(p).unwrap_or_default();
    let udp = read("/proc/self/net/udp") + &read("/proc/self/net/udp6");
    Sockets::parse(&udp, &read("/proc/self/net/packet"))
}

fn inside(dir: &Path, path: &str) -> Result<PathBuf, RequestError> {
    plain(path)?;
    let p = Path::new(path);
    let full = dir
        .join(p)
        .canonicalize()
        .map_err(|err| RequestError::Open {
            path: path.into(),
            err,
        })?;
    if !full.starts_with(dir) {
        return Err(RequestError::Outside { path: path.into() });
    }
    Ok(full)
}

/// The first `cap` bytes of a file and its size.
fn read_head(path: &Path, cap: usize) -> io::Result<(Vec<u8>, u64)> {
    let f = File::open(path)?;
    let size = f.metadata()?.len();
    let mut v = Vec::new();
    f.take(cap as u64).read_to_end(&mut v)?;
    Ok((v, size))
}

/// The last `n` bytes of a file.
fn read_tail(path: &Path, n: usize) -> io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    let size = f.metadata()?.len();
    f.seek(SeekFrom::Start(size.saturating_sub(n as u64)))?;
    let mut v = Vec::new();
    f.take(n as u64).read_to_end(&mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_files_in_the_workdir_only() {
        for ok in ["rx", "p0001-sut.tx", "A_b-9", &"x".repeat(64)] {
            check_tag(ok).unwrap();
        }
        for bad in ["", ".", "..", ".x", "a/b", "a b", "ä", &"x".repeat(65)] {
            assert!(check_tag(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fetch_paths_stay_inside() {
        let dir = std::env::temp_dir().join(format!("wl-agent-inside-{}", std::process::id()));
        fs::create_dir_all(dir.join("sub")).unwrap();
        let dir = dir.canonicalize().unwrap();
        fs::write(dir.join("sub/a"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("out")).unwrap();
        assert_eq!(inside(&dir, "sub/a").unwrap(), dir.join("sub/a"));
        assert_eq!(inside(&dir, "./sub/a").unwrap(), dir.join("sub/a"));
        for bad in ["", "/etc/passwd", "../x", "sub/../sub/a", "out", "nosuch"] {
            assert!(inside(&dir, bad).is_err(), "{bad:?}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
