//! [`AgentConn`]: one agent process, its pipes, requests and answers.

use super::{ConnectOptions, LogSink, Transport, TransportError};
use crate::proto::{
    self, AgentTime, ChildStatus, Envelope, Exit, HelloInfo, LineRead, Request, Response, Sig,
    Sockets, MAX_CHUNK, MAX_RESPONSE_LINE, PROTOCOL,
};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ChildStdin, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use wirelab_io::supervise::{Spawn, Stoppable, Supervised};

/// How long closing or dropping a connection waits for the agent to exit
/// (it takes up to [`crate::agent::TERM_GRACE`] to stop its children).
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Lines that are not JSON objects skipped before the hello (e.g. a login
/// banner a remote shell prints on stdout).
const MAX_JUNK_LINES: usize = 64;
/// Longest stderr line kept whole.
const MAX_ERR_LINE: usize = 64 << 10;
/// How much of the agent's stderr is kept for error messages.
const TAIL_BYTES: usize = 4096;

/// What the stdout reader hands over.
enum Incoming {
    Line(Vec<u8>),
    TooLong(usize),
    Closed,
}

/// The end of the agent's stderr, for error messages.
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
    done: bool,
}

impl Tail {
    fn push(&mut self, line: String) {
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > TAIL_BYTES && self.lines.len() > 1 {
            let l = self.lines.pop_front().unwrap_or_default();
            self.bytes -= l.len();
        }
    }
}

/// A connection to one agent. Requests go one at a time; each has
/// [`ConnectOptions::timeout`] to be answered. Dropping it closes the
/// agent's stdin (the agent then stops its children and exits), waits a
/// little for that and kills the agent process if it is still there.
///
/// [`AgentConn::connect`] installs a no-op SIGPIPE handler once, so that
/// writing to a dead agent is an error, not the controller's death.
pub struct AgentConn {
    label: String,
    /// The agent's process, in a group of its own; asked to stop by
    /// closing its stdin.
    child: Option<Supervised>,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Incoming>,
    tail: Arc<Mutex<Tail>>,
    hello: HelloInfo,
    next_id: u64,
    timeout: Duration,
    lost: Option<String>,
}

impl fmt::Debug for AgentConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentConn")
            .field("label", &self.label)
            .field("hello", &self.hello)
            .finish()
    }
}

fn ignore_sigpipe() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let _ = signal_hook::flag::register(signal_hook::consts::SIGPIPE, flag);
    });
}

/// Makes `~/.ssh` (mode 700) if missing, so ssh can put its control socket
/// there.
fn ensure_ssh_dir() {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(home) = std::env::var_os("HOME") {
        let _ = std::fs::DirBuilder::new()
            .mode(0o700)
            .create(Path::new(&home).join(".ssh"));
    }
}

impl AgentConn {
    /// Starts the agent with `wirelab` as its binary and says hello; a
    /// different protocol is an error naming both versions.
    pub fn connect(
        t: &Transport,
        wirelab: &str,
        ssh_opts: &[String],
    ) -> Result<AgentConn, TransportError> {
        AgentConn::connect_with(
            t,
            &ConnectOptions {
                wirelab: wirelab.into(),
                ssh_opts: ssh_opts.to_vec(),
                ..ConnectOptions::default()
            },
        )
    }

    /// [`AgentConn::connect`] with every option.
    pub fn connect_with(t: &Transport, o: &ConnectOptions) -> Result<AgentConn, TransportError> {
        ignore_sigpipe();
        let label = t.to_string();
        let mut cmd = t.command(&o.wirelab, &o.agent, &o.ssh_opts);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if matches!(t, Transport::Ssh { .. }) {
            ensure_ssh_dir();
        }
        let how = Spawn {
            group: true,
            die_with_parent: false,
        };
        let mut child = Supervised::spawn(&mut cmd, how).map_err(|e| match (e.kind(), t) {
            (io::ErrorKind::NotFound, Transport::Ssh { .. }) => TransportError::MissingTool {
                program: "ssh",
                package: "openssh-client",
                cause: e,
            },
            (io::ErrorKind::NotFound, Transport::Netns(_)) => TransportError::MissingTool {
                program: "ip",
                package: "iproute2",
                cause: e,
            },
            (io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied, Transport::Local) => {
                TransportError::AgentNotFound {
                    host: label.clone(),
                    wirelab: o.wirelab.clone(),
                    stderr: e.to_string(),
                }
            }
            _ => TransportError::Spawn {
                host: label.clone(),
                cause: e,
            },
        })?;
        let pipes = child.child_mut();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (pipes.stdin.take(), pipes.stdout.take(), pipes.stderr.take())
        else {
            child.kill_and_reap();
            return Err(TransportError::Spawn {
                host: label,
                cause: io::Error::other("no pipe to the agent"),
            });
        };
        let log = o.log.clone().unwrap_or_else(|| {
            let l = label.clone();
            Arc::new(move |line: &str| eprintln!("{l}: {line}"))
        });
        let tail = Arc::new(Mutex::new(Tail::default()));
        read_stderr(stderr, tail.clone(), log.clone());
        let mut conn = AgentConn {
            label,
            child: Some(child),
            stdin: Some(stdin),
            rx: read_stdout(stdout),
            tail,
            hello: HelloInfo::default(),
            next_id: 1,
            timeout: o.timeout,
            lost: None,
        };
        conn.hello = conn.handshake(t, &o.wirelab, &*log)?;
        Ok(conn)
    }

    /// What the agent said in its hello.
    pub fn hello(&self) -> &HelloInfo {
        &self.hello
    }

    /// The transport, as text (`netns:emu`), as messages name the host.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The pid of the local process behind the connection (the agent, `ip`,
    /// or the ssh client), while it is there.
    pub fn process_id(&self) -> Option<u32> {
        self.child.as_ref().map(Supervised::pid)
    }

    /// Sets the time the agent has for each answer.
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }

    /// Runs the agent's wirelab with `args` as child `tag`; its pid there.
    pub fn spawn(&mut self, tag: &str, args: &[String]) -> Result<u32, TransportError> {
        let req = Request::Spawn {
            tag: tag.into(),
            args: args.to_vec(),
        };
        match self.call(req, self.timeout)? {
            Response::Spawned { pid } => Ok(pid),
            other => Err(self.unexpected("spawn", &other)),
        }
    }

    /// Waits up to `timeout` for child `tag` to end: `None` while it runs.
    /// Once its end is reported the agent forgets the child.
    pub fn wait(&mut self, tag: &str, timeout: Duration) -> Result<Option<Exit>, TransportError> {
        let timeout = timeout.min(crate::agent::MAX_WAIT);
        let req = Request::Wait {
            tag: tag.into(),
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(req, timeout + self.timeout)? {
            Response::Exited(e) => Ok(Some(e)),
            Response::Running => Ok(None),
            other => Err(self.unexpected("wait", &other)),
        }
    }

    /// Child `tag`, to be stopped with [`wirelab_io::supervise::stop`]
    /// (SIGINT, then SIGKILL).
    pub fn remote_child<'a>(&'a mut self, tag: &'a str) -> RemoteChild<'a> {
        RemoteChild { agent: self, tag }
    }

    /// Signals child `tag` (nothing happens if it has ended).
    pub fn signal(&mut self, tag: &str, sig: Sig) -> Result<(), TransportError> {
        let req = Request::Signal {
            tag: tag.into(),
            signal: sig,
        };
        match self.call(req, self.timeout)? {
            Response::Ok => Ok(()),
            other => Err(self.unexpected("signal", &other)),
        }
    }

    /// The children the agent knows (running, or ended and not yet waited
    /// for).
    pub fn status(&mut self) -> Result<Vec<ChildStatus>, TransportError> {
        match self.call(Request::Status, self.timeout)? {
            Response::Status { children } => Ok(children),
            other => Err(self.unexpected("status", &other)),
        }
    }

    /// Copies `remote` (relative to the agent's workdir) to the local file
    /// `local`, in chunks; the bytes copied, checked against the size the
    /// agent reports. A failed copy removes the local file.
    pub fn fetch(&mut self, remote: &str, local: &Path) -> Result<u64, TransportError> {
        let local_err = |source| TransportError::Local {
            path: local.to_path_buf(),
            cause: source,
        };
        let mut f = std::fs::File::create(local).map_err(local_err)?;
        let res = self.fetch_into(remote, &mut f, u64::MAX, local);
        if res.is_err() {
            drop(f);
            let _ = std::fs::remove_file(local);
        }
        res
    }

    /// A small file of the agent's workdir (at most `max` bytes) in
    /// memory; `None` if it does not exist.
    pub fn read_small(
        &mut self,
        remote: &str,
        max: u64,
    ) -> Result<Option<Vec<u8>>, TransportError> {
        let mut v = Vec::new();
        match self.fetch_into(remote, &mut v, max, Path::new(remote)) {
            Ok(_) => Ok(Some(v)),
            Err(TransportError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes a file of the agent's workdir (no error if it is not there).
    pub fn remove(&mut self, remote: &str) -> Result<(), TransportError> {
        let req = Request::Remove {
            path: remote.into(),
        };
        match self.call(req, self.timeout)? {
            Response::Ok => Ok(()),
            other => Err(self.unexpected("remove", &other)),
        }
    }

    /// The UDP ports bound and the packet sockets open in the agent's
    /// network namespace.
    pub fn sockets(&mut self) -> Result<Sockets, TransportError> {
        match self.call(Request::Sockets, self.timeout)? {
            Response::Sockets(s) => Ok(s),
            other => Err(self.unexpected("sockets", &other)),
        }
    }

    /// A snapshot of the counters of the agent's namespace and host: the
    /// interfaces `ifaces` (all but `lo` when empty); `sample`: the cheap
    /// part only (module [`wirelab_host::counters`]). An agent without the
    /// `counters` request is an error naming the version to install.
    pub fn counters(
        &mut self,
        ifaces: &[String],
        sample: bool,
    ) -> Result<wirelab_host::counters::Snapshot, TransportError> {
        if !self.hello.capabilities.iter().any(|c| c == "counters") {
            return Err(TransportError::Unsupported {
                host: self.label.clone(),
                op: "counters",
                version: self.hello.version.clone(),
                ours: env!("CARGO_PKG_VERSION"),
            });
        }
        let req = Request::Counters {
            ifaces: ifaces.to_vec(),
            sample,
        };
        match self.call(req, self.timeout)? {
            Response::Counters(s) => Ok(*s),
            other => Err(self.unexpected("counters", &other)),
        }
    }

    fn fetch_into(
        &mut self,
        remote: &str,
        f: &mut dyn Write,
        max: u64,
        local: &Path,
    ) -> Result<u64, TransportError> {
        let mut offset = 0u64;
        let mut size = None;
        loop {
            let req = Request::Fetch {
                path: remote.into(),
                offset,
                max: MAX_CHUNK,
            };
            let (data, eof, now) = match self.call(req, self.timeout)? {
                Response::Chunk {
                    data_b64,
                    eof,
                    size,
                } => (
                    proto::base64_decode(&data_b64).map_err(|e| self.protocol(e))?,
                    eof,
                    size,
                ),
                Response::NotFound { path } => {
                    return Err(TransportError::NotFound {
                        host: self.label.clone(),
                        path,
                    })
                }
                other => return Err(self.unexpected("fetch", &other)),
            };
            if data.len() > MAX_CHUNK as usize {
                return Err(self.protocol(format!("a chunk of {} bytes", data.len())));
            }
            if now > max {
                return Err(TransportError::Agent {
                    host: self.label.clone(),
                    op: "fetch",
                    message: format!("{remote} has {now} bytes, more than the {max} expected"),
                });
            }
            if *size.get_or_insert(now) != now {
                return Err(TransportError::Agent {
                    host: self.label.clone(),
                    op: "fetch",
                    message: format!("{remote} changed size while it was fetched"),
                });
            }
            f.write_all(&data).map_err(|source| TransportError::Local {
                path: local.to_path_buf(),
                cause: source,
            })?;
            offset += data.len() as u64;
            if eof {
                break;
            }
            if data.is_empty() {
                return Err(self.protocol("an empty chunk before the end".into()));
            }
        }
        if Some(offset) != size {
            return Err(self.protocol(format!(
                "fetched {offset} bytes of {remote}, which has {} bytes",
                size.unwrap_or(0)
            )));
        }
        Ok(offset)
    }

    /// The agent's clocks.
    pub fn time(&mut self) -> Result<AgentTime, TransportError> {
        match self.call(Request::Time, self.timeout)? {
            Response::Time(t) => Ok(t),
            other => Err(self.unexpected("time", &other)),
        }
    }

    /// An error naming the version to install if the agent does not
    /// serve `op` (its hello lists what it serves).
    pub fn require(&self, op: &'static str) -> Result<(), TransportError> {
        if self.hello.capabilities.iter().any(|c| c == op) {
            return Ok(());
        }
        Err(TransportError::Missing {
            host: self.label.clone(),
            op,
            theirs: self.hello.version.clone(),
            ours: env!("CARGO_PKG_VERSION").into(),
        })
    }

    /// The environment snapshot of the agent's host, named `host`.
    pub fn env_snapshot(
        &mut self,
        host: &str,
    ) -> Result<wirelab_host::env::Snapshot, TransportError> {
        self.require("env")?;
        let req = Request::Env { host: host.into() };
        match self.call(req, self.timeout)? {
            Response::Env(s) => Ok(s),
            other => Err(self.unexpected("env", &other)),
        }
    }

    /// Applies settings on the agent's host: the token and the changes.
    /// Unless `keep`, the agent reverts them when its connection ends.
    pub fn env_apply(
        &mut self,
        settings: &[(String, String)],
        iface: Option<&str>,
        keep: bool,
    ) -> Result<(String, Vec<wirelab_host::env::apply::Change>), TransportError> {
        self.require("env_apply")?;
        let req = Request::EnvApply {
            settings: settings.to_vec(),
            iface: iface.map(str::to_string),
            keep,
        };
        match self.call(req, self.timeout)? {
            Response::EnvApplied { token, changes } => Ok((token, changes)),
            other => Err(self.unexpected("env_apply", &other)),
        }
    }

    /// Restores what the application `token` changed on the agent's host.
    pub fn env_revert(
        &mut self,
        token: &str,
    ) -> Result<Vec<wirelab_host::env::apply::Change>, TransportError> {
        self.require("env_revert")?;
        let req = Request::EnvRevert {
            token: token.into(),
        };
        match self.call(req, self.timeout)? {
            Response::EnvReverted { changes } => Ok(changes),
            other => Err(self.unexpected("env_revert", &other)),
        }
    }

    /// Says bye (the agent stops its children and cleans up before it
    /// answers), then waits for the agent process to exit.
    pub fn close(mut self) -> Result<(), TransportError> {
        let res = self.call(Request::Bye, self.timeout);
        self.stdin.take();
        let exited = self.child.take().map(|c| finish(c, EXIT_GRACE));
        match res? {
            Response::Ok => {}
            other => return Err(self.unexpected("bye", &other)),
        }
        match exited {
            Some(Some(st)) if !st.success() => {
                Err(self.lost_error(format!("it exited with {}", status_text(st))))
            }
            Some(None) => Err(self.lost_error(format!(
                "it did not exit within {EXIT_GRACE:?} of bye and was killed"
            ))),
            _ => Ok(()),
        }
    }

    fn handshake(
        &mut self,
        t: &Transport,
        wirelab: &str,
        log: &dyn Fn(&str),
    ) -> Result<HelloInfo, TransportError> {
        let req = Request::Hello {
            protocol: PROTOCOL,
            controller: env!("CARGO_PKG_VERSION").into(),
        };
        let id = self.next_id;
        let deadline = Instant::now() + self.timeout;
        let early = |conn: &mut AgentConn| conn.no_hello(t, wirelab);
        if self.write(&req).is_err() {
            return Err(early(self));
        }
        let mut junk = 0;
        loop {
            let line = match self.next(deadline) {
                Ok(Incoming::Line(l)) => l,
                Ok(Incoming::TooLong(n)) => {
                    return Err(self.protocol(format!("a line of {n} bytes before the hello")))
                }
                Ok(Incoming::Closed) => return Err(early(self)),
                Err(()) => {
                    return Err(TransportError::Timeout {
                        host: self.label.clone(),
                        op: "hello",
                        after: self.timeout,
                    })
                }
            };
            let v = match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(v) if v.is_object() => v,
                _ => {
                    junk += 1;
                    if junk > MAX_JUNK_LINES {
                        return Err(self.protocol(format!(
                            "more than {MAX_JUNK_LINES} lines that are not JSON before the hello"
                        )));
                    }
                    log(&format!(
                        "(stdout before hello, ignored) {}",
                        String::from_utf8_lossy(&line[..line.len().min(200)])
                    ));
                    continue;
                }
            };
            let theirs = v.get("protocol").and_then(|p| p.as_u64());
            if let Some(p) = theirs.filter(|&p| p != u64::from(PROTOCOL)) {
                return Err(TransportError::VersionMismatch {
                    host: self.label.clone(),
                    ours: PROTOCOL,
                    our_version: env!("CARGO_PKG_VERSION").into(),
                    theirs: p,
                    their_version: v
                        .get("version")
                        .and_then(|s| s.as_str())
                        .unwrap_or("unknown")
                        .into(),
                });
            }
            return match proto::decode_response(&line) {
                Ok(Envelope {
                    id: got,
                    body: Response::Hello(h),
                }) if got == id => Ok(h),
                Ok(Envelope {
                    body: Response::Error { message },
                    ..
                }) => Err(TransportError::Agent {
                    host: self.label.clone(),
                    op: "hello",
                    message,
                }),
                _ => Err(self.protocol(format!(
                    "the first answer is not a hello: {}",
                    String::from_utf8_lossy(&line[..line.len().min(200)])
                ))),
            };
        }
    }

    /// Why the agent went away before its hello, from ssh's or the shell's
    /// exit status and its stderr.
    fn no_hello(&mut self, t: &Transport, wirelab: &str) -> TransportError {
        let st = self.child.as_mut().and_then(|c| wait_for(c, EXIT_GRACE));
        let stderr = self.stderr_tail();
        let host = self.label.clone();
        let code = st.and_then(|s| s.code());
        let not_found = matches!(code, Some(126 | 127))
            || (matches!(t, Transport::Netns(_)) && stderr.contains("exec of"));
        if not_found {
            return TransportError::AgentNotFound {
                host,
                wirelab: wirelab.into(),
                stderr,
            };
        }
        if stderr.contains("unrecognized subcommand") && stderr.contains("agent") {
            return TransportError::NoAgentCommand { host, stderr };
        }
        if matches!(t, Transport::Ssh { .. }) && code == Some(255) {
            return TransportError::Ssh { host, stderr };
        }
        TransportError::NoHello {
            host,
            what: match st {
                Some(s) => format!("exited with {}", status_text(s)),
                None => "closed its output".into(),
            },
            stderr,
        }
    }

    fn write(&mut self, req: &Request) -> io::Result<()> {
        let line = proto::encode(&Envelope {
            id: self.next_id,
            body: req.clone(),
        });
        self.next_id += 1;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
        stdin.write_all(&line)?;
        stdin.flush()
    }

    /// The next line from the agent, `Err` on the deadline.
    fn next(&mut self, deadline: Instant) -> Result<Incoming, ()> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(i) => Ok(i),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(()),
            Err(mpsc::RecvTimeoutError::Disconnected) => Ok(Incoming::Closed),
        }
    }

    /// Sends `req` and returns its answer (an `error` answer as
    /// [`TransportError::Agent`]). Answers to earlier requests that timed
    /// out are skipped.
    fn call(&mut self, req: Request, timeout: Duration) -> Result<Response, TransportError> {
        let op = req.op();
        if let Some(what) = self.lost.clone() {
            return Err(self.lost_error(what));
        }
        let id = self.next_id;
        if let Err(e) = self.write(&req) {
            return Err(self.lose(format!("cannot send `{op}`: {e}")));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let line = match self.next(deadline) {
                Ok(Incoming::Line(l)) => l,
                Ok(Incoming::TooLong(n)) => {
                    let e = self.protocol(format!("an answer of {n} bytes"));
                    self.lost = Some(e.to_string());
                    return Err(e);
                }
                Ok(Incoming::Closed) => {
                    return Err(self.lose(format!("it closed the connection during `{op}`")))
                }
                Err(()) => {
                    return Err(TransportError::Timeout {
                        host: self.label.clone(),
                        op,
                        after: timeout,
                    })
                }
            };
            let env = proto::decode_response(&line).map_err(|b| self.protocol(b.message))?;
            if env.id < id && env.id != 0 {
                continue;
            }
            if env.id > id {
                return Err(self.protocol(format!(
                    "an answer to request {} when {id} was the last sent",
                    env.id
                )));
            }
            return match env.body {
                Response::Error { message } => Err(TransportError::Agent {
                    host: self.label.clone(),
                    op,
                    message,
                }),
                body => Ok(body),
            };
        }
    }

    /// Marks the connection lost (the agent process is reaped if it exits
    /// soon) and returns the error.
    fn lose(&mut self, what: String) -> TransportError {
        let st = self.child.as_mut().and_then(|c| wait_for(c, EXIT_GRACE));
        let what = match st {
            Some(s) => format!("{what}; it exited with {}", status_text(s)),
            None => what,
        };
        self.lost = Some(what.clone());
        self.lost_error(what)
    }

    fn lost_error(&self, what: String) -> TransportError {
        TransportError::Lost {
            host: self.label.clone(),
            what,
            stderr: self.stderr_tail(),
        }
    }

    fn protocol(&self, what: String) -> TransportError {
        TransportError::Protocol {
            host: self.label.clone(),
            what,
        }
    }

    fn unexpected(&self, op: &str, r: &Response) -> TransportError {
        self.protocol(format!("`{op}` answered with {r:?}"))
    }

    /// The agent's last stderr lines, once its stderr has closed (or a
    /// moment has passed).
    fn stderr_tail(&self) -> String {
        let start = Instant::now();
        loop {
            let t = self.tail.lock().unwrap_or_else(|p| p.into_inner());
            if t.done || start.elapsed() > Duration::from_secs(1) {
                return t.lines.iter().cloned().collect::<Vec<_>>().join("\n");
            }
            drop(t);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// An agent's child as [`Stoppable`]: asked with SIGINT, its end from
/// `wait` (which the agent reports once).
pub struct RemoteChild<'a> {
    agent: &'a mut AgentConn,
    tag: &'a str,
}

impl Stoppable for RemoteChild<'_> {
    type End = Exit;
    type Error = TransportError;

    fn end_within(&mut self, limit: Duration) -> Result<Option<Exit>, TransportError> {
        self.agent.wait(self.tag, limit)
    }

    fn ask(&mut self) -> Result<(), TransportError> {
        self.agent.signal(self.tag, Sig::Int)
    }

    fn kill(&mut self) -> Result<(), TransportError> {
        self.agent.signal(self.tag, Sig::Kill)
    }
}

impl Drop for AgentConn {
    fn drop(&mut self) {
        // EOF on its stdin: the agent stops its children and exits.
        self.stdin.take();
        if let Some(c) = self.child.take() {
            finish(c, EXIT_GRACE);
        }
    }
}

fn status_text(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => s.to_string(),
    }
}

/// The child's status if it exits within `grace`.
fn wait_for(c: &mut Supervised, grace: Duration) -> Option<ExitStatus> {
    c.wait(grace).map(|r| r.exit_status())
}

/// Waits up to `grace` for the child (its stdin closed) to exit, then
/// kills it; its status if it exited by itself.
fn finish(mut c: Supervised, grace: Duration) -> Option<ExitStatus> {
    let s = c.stop(grace);
    s.end.filter(|_| !s.killed).map(|r| r.exit_status())
}

fn read_stdout<R: Read + Send + 'static>(out: R) -> mpsc::Receiver<Incoming> {
    let (tx, rx) = mpsc::sync_channel(4);
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut buf = Vec::new();
        loop {
            let msg = match proto::read_line(&mut r, MAX_RESPONSE_LINE, &mut buf) {
                Ok(LineRead::Line) => Incoming::Line(std::mem::take(&mut buf)),
                Ok(LineRead::TooLong(n)) => Incoming::TooLong(n),
                Ok(LineRead::Eof) | Err(_) => break,
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
        let _ = tx.send(Incoming::Closed);
    });
    rx
}

fn read_stderr<R: Read + Send + 'static>(err: R, tail: Arc<Mutex<Tail>>, log: LogSink) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(err);
        let mut buf = Vec::new();
        while let Ok(l) = proto::read_line(&mut r, MAX_ERR_LINE, &mut buf) {
            let line = match l {
                LineRead::Eof => break,
                LineRead::Line => String::from_utf8_lossy(&buf).trim_end().to_string(),
                LineRead::TooLong(n) => format!("(a line of {n} bytes, not shown)"),
            };
            log(&line);
            tail.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
        tail.lock().unwrap_or_else(|p| p.into_inner()).done = true;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_keeps_the_end() {
        let mut t = Tail::default();
        for i in 0..1000 {
            t.push(format!("line {i}"));
        }
        assert!(t.bytes <= TAIL_BYTES);
        assert_eq!(t.lines.back().unwrap(), "line 999");
        t.push("x".repeat(10_000));
        assert_eq!(t.lines.len(), 1);
    }
}
