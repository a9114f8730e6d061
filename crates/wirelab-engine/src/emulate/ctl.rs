//! Runtime control of the emulator's rules (`wirelab emulate ctl`) over a
//! unix stream socket: one JSON request per line, one JSON response per
//! line.
//!
//! The control thread keeps the rule table (numbers, directions, filters,
//! stages), builds each new link itself — compiling the filter, reading
//! and checking a trace file — and hands it to the forwarding threads,
//! which apply it between two frames ([`Cmd`], polled by
//! [`super::DirModel`]). A rule that is updated or removed keeps its queue
//! until every copy in it has left at its deadline: nothing in flight is
//! lost or moved. The request returns once both directions applied it.
//!
//! Rules are named by number or by their filter text. Adding a rule whose
//! filter already has a rule in one of its directions fails with
//! "exists"; numbers are never reused in a run, so a log stays
//! unambiguous.

use super::live::{LiveDir, LiveSnapshot};
use super::rules::RuleLink;
use crate::emulate_setup::SetupError;
use crate::StopFlag;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_io::bpf::BpfError;
use wirelab_link::{Direction, LinkCounters};

/// Longest request line read (a filter and a stage list fit many times).
pub const MAX_REQUEST: usize = 64 << 10;
/// How long a forwarding thread may take to apply a change.
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// A request, as the client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// A new rule at the end of the rule list; `filter` may start with
    /// `a2b:` or `b2a:` for one direction.
    Add { filter: String, stages: String },
    /// New stages for rule `rule` (its number or filter).
    Update { rule: String, stages: String },
    /// Removes rule `rule` (its number or filter).
    Del { rule: String },
    /// The rules.
    List,
    /// The rules with their counters and both directions' counters.
    Stats,
}

/// A rule of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CtlRule {
    pub rule: u32,
    pub directions: Vec<&'static str>,
    pub filter: String,
    pub stages: String,
}

/// One rule's state in one direction, as its forwarding thread saw it.
#[derive(Debug, Clone, Serialize)]
pub struct RuleState {
    pub rule: u32,
    pub filter: String,
    pub stages: String,
    pub seed: u64,
    pub frames: u64,
    pub link: LinkCounters,
    /// `updated` or `removed` at run time (its counters until then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<&'static str>,
}

/// A direction's rules (its own stages last, rule 0) and counters.
#[derive(Debug, Clone, Serialize)]
pub struct DirState {
    pub rules: Vec<RuleState>,
    pub live: LiveSnapshot,
}

/// The answer to a request.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Response {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rule added, updated or removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<CtlRule>,
    /// `list`: the rule table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<CtlRule>>,
    /// `stats`: per direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a2b: Option<DirState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b2a: Option<DirState>,
}

impl Response {
    /// The protocol carries the error as its message.
    fn fail(e: RequestError) -> Response {
        Response {
            ok: false,
            error: Some(e.to_string()),
            ..Response::default()
        }
    }
}

/// Why a request was refused; its message is the response's `error`.
/// Causes are printed, not returned as sources.
#[derive(Debug, Error)]
pub enum RequestError {
    #[error("request longer than {MAX_REQUEST} bytes")]
    TooLong,
    #[error("bad request: {0}")]
    Parse(serde_json::Error),
    #[error("no rule {name:?} (ctl list shows them)")]
    NoRule { name: String },
    #[error("several rules have the filter {filter:?}: name one by its number")]
    Ambiguous { filter: String },
    #[error("the filter is empty")]
    EmptyFilter,
    #[error("exists: a rule with filter {filter:?}")]
    Exists { filter: String },
    /// A rule's filter does not compile.
    #[error(transparent)]
    Filter(BpfError),
    /// A rule's link cannot be built (stages, trace file, recorder).
    #[error(transparent)]
    Link(Box<SetupError>),
    #[error("the {dir} forwarding thread has ended")]
    Ended { dir: &'static str },
    #[error("the {dir} forwarding thread did not apply the change within {} s", APPLY_TIMEOUT.as_secs())]
    NotApplied { dir: &'static str },
    #[error("the {dir} forwarding thread did not answer")]
    NoAnswer { dir: &'static str },
    /// Fewer links built than directions to apply them to.
    #[error("internal: no link")]
    NoLink,
}

/// What a forwarding thread applies between frames.
pub enum Cmd {
    /// Append this rule (before the default stages).
    Add(RuleLink, Sender<()>),
    /// Replace rule `.0`'s link; the old one drains.
    Replace(u32, RuleLink, Sender<()>),
    /// Remove rule `.0`; its link drains.
    Remove(u32, Sender<()>),
    /// Report the rules.
    State(Sender<Vec<RuleState>>),
}

/// Builds a rule's link for one direction: `(rule, filter, stages,
/// direction, new)`; `new`: a rule just added (its decision trace, if
/// recorded, starts; an updated rule's trace goes on in the same file).
/// The error is the client's message.
pub type Builder =
    Box<dyn Fn(u32, &str, &str, Direction, bool) -> Result<RuleLink, RequestError> + Send>;

/// What the control thread needs.
pub struct CtlSetup {
    pub path: PathBuf,
    /// The rules given on the command line.
    pub rules: Vec<CtlRule>,
    pub build: Builder,
    /// Each direction's command channel (a→b, b→a).
    pub to: [Sender<Cmd>; 2],
    pub live: [Arc<LiveDir>; 2],
}

/// Why the control socket could not be opened.
#[derive(Debug, Error)]
pub enum CtlError {
    #[error("{path}: another emulator listens on this control socket", path = path.display())]
    InUse { path: PathBuf },
    #[error("{path} exists and is not a socket: give --ctl another path", path = path.display())]
    NotASocket { path: PathBuf },
    #[error("cannot listen on {path}: {cause}", path = path.display())]
    Bind { path: PathBuf, cause: io::Error },
}

/// The control thread; [`CtlServer::finish`] stops it and removes the
/// socket.
pub struct CtlServer {
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
    stop: StopFlag,
}

impl CtlServer {
    /// Listens on `setup.path` (a stale socket file is replaced, a live
    /// one refused) and serves until [`CtlServer::finish`].
    pub fn start(setup: CtlSetup) -> Result<CtlServer, CtlError> {
        let path = setup.path.clone();
        if let Ok(m) = std::fs::symlink_metadata(&path) {
            use std::os::unix::fs::FileTypeExt;
            if !m.file_type().is_socket() {
                return Err(CtlError::NotASocket { path });
            }
            if UnixStream::connect(&path).is_ok() {
                return Err(CtlError::InUse { path });
            }
            // A socket nobody listens on: left by an emulator that died.
            let _ = std::fs::remove_file(&path);
        }
        let bind = |source| CtlError::Bind {
            path: path.clone(),
            cause: source,
        };
        let l = UnixListener::bind(&path).map_err(bind)?;
        l.set_nonblocking(true).map_err(bind)?;
        let stop = StopFlag::new();
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("emulate-ctl".into())
            .spawn(move || serve(l, setup, &s))
            .map_err(bind)?;
        Ok(CtlServer {
            thread: Some(thread),
            path,
            stop,
        })
    }

    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for CtlServer {
    fn drop(&mut self) {
        self.end();
    }
}

fn serve(l: UnixListener, mut setup: CtlSetup, stop: &StopFlag) {
    let mut next = setup.rules.iter().map(|r| r.rule).max().unwrap_or(0) + 1;
    while !stop.is_stopped() {
        match l.accept() {
            Ok((conn, _)) => {
                let _ = session(conn, &mut setup, &mut next, stop);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// One client: requests until it closes (or is silent for 10 s).
fn session(
    conn: UnixStream,
    setup: &mut CtlSetup,
    next: &mut u32,
    stop: &StopFlag,
) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut w = conn.try_clone()?;
    let mut r = BufReader::new(conn).take(MAX_REQUEST as u64);
    let mut line = String::new();
    while !stop.is_stopped() {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        r.set_limit(MAX_REQUEST as u64);
        let too_long = !line.ends_with('\n') && line.len() >= MAX_REQUEST;
        let resp = if too_long {
            Response::fail(RequestError::TooLong)
        } else {
            match serde_json::from_str::<Request>(line.trim()) {
                Ok(req) => handle(req, setup, next),
                Err(e) => Response::fail(RequestError::Parse(e)),
            }
        };
        let mut out = serde_json::to_vec(&resp).map_err(io::Error::other)?;
        out.push(b'\n');
        w.write_all(&out)?;
        if too_long {
            // The rest of that line is not a request.
            return Ok(());
        }
    }
    Ok(())
}

fn dir_index(d: Direction) -> usize {
    match d {
        Direction::AToB => 0,
        Direction::BToA => 1,
    }
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::AToB => "a2b",
        Direction::BToA => "b2a",
    }
}

fn dirs_of(names: &[&'static str]) -> Vec<Direction> {
    names
        .iter()
        .map(|n| {
            if *n == "a2b" {
                Direction::AToB
            } else {
                Direction::BToA
            }
        })
        .collect()
}

/// `a2b: FILTER` → (a→b only, FILTER).
pub fn split_direction(f: &str) -> (Vec<Direction>, &str) {
    let f = f.trim();
    if let Some(x) = f.strip_prefix("a2b:") {
        (vec![Direction::AToB], x.trim())
    } else if let Some(x) = f.strip_prefix("b2a:") {
        (vec![Direction::BToA], x.trim())
    } else {
        (vec![Direction::AToB, Direction::BToA], f)
    }
}

/// The rule named by `name`: its number, or its filter.
fn find(rules: &[CtlRule], name: &str) -> Result<usize, RequestError> {
    let name = name.trim();
    let by_number = name
        .strip_prefix('#')
        .unwrap_or(name)
        .parse::<u32>()
        .ok()
        .and_then(|n| rules.iter().position(|r| r.rule == n));
    if let Some(i) = by_number {
        return Ok(i);
    }
    let (_, filter) = split_direction(name);
    let hits: Vec<usize> = (0..rules.len())
        .filter(|&i| rules[i].filter == filter)
        .collect();
    match hits.as_slice() {
        [i] => Ok(*i),
        [] => Err(RequestError::NoRule { name: name.into() }),
        _ => Err(RequestError::Ambiguous {
            filter: filter.into(),
        }),
    }
}

/// Sends a command to each of `dirs` and waits until each applied it.
fn apply(
    setup: &CtlSetup,
    dirs: &[Direction],
    mut make: impl FnMut(Direction, Sender<()>) -> Result<Cmd, RequestError>,
) -> Result<(), RequestError> {
    let mut acks = Vec::new();
    for &d in dirs {
        let (tx, rx) = mpsc::channel();
        let cmd = make(d, tx)?;
        setup.to[dir_index(d)]
            .send(cmd)
            .map_err(|_| RequestError::Ended { dir: dir_name(d) })?;
        acks.push((d, rx));
    }
    let t0 = Instant::now();
    for (d, rx) in acks {
        let left = APPLY_TIMEOUT.saturating_sub(t0.elapsed());
        rx.recv_timeout(left)
            .map_err(|_| RequestError::NotApplied { dir: dir_name(d) })?;
    }
    Ok(())
}

fn handle(req: Request, setup: &mut CtlSetup, next: &mut u32) -> Response {
    let r = match req {
        Request::Add { filter, stages } => add(setup, next, &filter, stages),
        Request::Update { rule, stages } => update(setup, &rule, stages),
        Request::Del { rule } => del(setup, &rule),
        Request::List => Ok(Response {
            ok: true,
            rules: Some(setup.rules.clone()),
            ..Response::default()
        }),
        Request::Stats => stats(setup),
    };
    r.unwrap_or_else(Response::fail)
}

/// A rule answered back.
fn with_rule(rule: CtlRule) -> Response {
    Response {
        ok: true,
        rule: Some(rule),
        ..Response::default()
    }
}

/// Builds the rule's link for every direction in `dirs` before anything
/// changes: a bad filter or trace changes nothing.
fn build_links(
    setup: &CtlSetup,
    rule: u32,
    filter: &str,
    stages: &str,
    dirs: &[Direction],
    new: bool,
) -> Result<std::vec::IntoIter<RuleLink>, RequestError> {
    let links = dirs
        .iter()
        .map(|&d| (setup.build)(rule, filter, stages, d, new))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(links.into_iter())
}

/// `add FILTER STAGES`: a new rule in the directions the filter names
/// (both by default); refused when a rule with that filter exists there.
fn add(
    setup: &mut CtlSetup,
    next: &mut u32,
    filter: &str,
    stages: String,
) -> Result<Response, RequestError> {
    let (dirs, f) = split_direction(filter);
    if f.is_empty() {
        return Err(RequestError::EmptyFilter);
    }
    let taken = setup
        .rules
        .iter()
        .any(|r| r.filter == f && dirs_of(&r.directions).iter().any(|d| dirs.contains(d)));
    if taken {
        return Err(RequestError::Exists { filter: f.into() });
    }
    let rule = *next;
    let mut links = build_links(setup, rule, f, &stages, &dirs, true)?;
    apply(setup, &dirs, |_, ack| {
        let l = links.next().ok_or(RequestError::NoLink)?;
        Ok(Cmd::Add(l, ack))
    })?;
    *next += 1;
    let entry = CtlRule {
        rule,
        directions: dirs.iter().map(|&d| dir_name(d)).collect(),
        filter: f.to_string(),
        stages,
    };
    setup.rules.push(entry.clone());
    Ok(with_rule(entry))
}

/// `update RULE STAGES`: the rule's link replaced in its directions.
fn update(setup: &mut CtlSetup, rule: &str, stages: String) -> Result<Response, RequestError> {
    let i = find(&setup.rules, rule)?;
    let r = setup.rules[i].clone();
    let dirs = dirs_of(&r.directions);
    let mut links = build_links(setup, r.rule, &r.filter, &stages, &dirs, false)?;
    apply(setup, &dirs, |_, ack| {
        let l = links.next().ok_or(RequestError::NoLink)?;
        Ok(Cmd::Replace(r.rule, l, ack))
    })?;
    setup.rules[i].stages = stages;
    Ok(with_rule(setup.rules[i].clone()))
}

/// `del RULE`: the rule removed from its directions.
fn del(setup: &mut CtlSetup, rule: &str) -> Result<Response, RequestError> {
    let i = find(&setup.rules, rule)?;
    let r = setup.rules[i].clone();
    apply(setup, &dirs_of(&r.directions), |_, ack| {
        Ok(Cmd::Remove(r.rule, ack))
    })?;
    setup.rules.remove(i);
    Ok(with_rule(r))
}

/// `stats`: the rules, and each direction's rule counters and live ones.
fn stats(setup: &CtlSetup) -> Result<Response, RequestError> {
    let mut out = Response {
        ok: true,
        rules: Some(setup.rules.clone()),
        ..Response::default()
    };
    for d in [Direction::AToB, Direction::BToA] {
        let (tx, rx) = mpsc::channel();
        if setup.to[dir_index(d)].send(Cmd::State(tx)).is_err() {
            return Err(RequestError::Ended { dir: dir_name(d) });
        }
        let Ok(rules) = rx.recv_timeout(APPLY_TIMEOUT) else {
            return Err(RequestError::NoAnswer { dir: dir_name(d) });
        };
        let st = DirState {
            rules,
            live: setup.live[dir_index(d)].snapshot(),
        };
        match d {
            Direction::AToB => out.a2b = Some(st),
            Direction::BToA => out.b2a = Some(st),
        }
    }
    Ok(out)
}

/// Why a client request failed.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot connect to {path} (is `wirelab emulate --ctl {path}` running?)", path = path.display())]
    Connect { path: PathBuf, source: io::Error },
    #[error("talking to {path}", path = path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: the emulator's answer is not JSON: {msg}", path = path.display())]
    Answer { path: PathBuf, msg: String },
}

/// Sends one request, returns the response (as JSON; `ok` says whether it
/// was applied).
pub fn request(path: &Path, req: &Request) -> Result<serde_json::Value, ClientError> {
    let conn = UnixStream::connect(path).map_err(|source| ClientError::Connect {
        path: path.into(),
        source,
    })?;
    let io = |source| ClientError::Io {
        path: path.into(),
        source,
    };
    conn.set_read_timeout(Some(APPLY_TIMEOUT * 3)).map_err(io)?;
    let mut w = conn.try_clone().map_err(io)?;
    let mut line = serde_json::to_vec(req).map_err(|e| io(io::Error::other(e)))?;
    line.push(b'\n');
    w.write_all(&line).map_err(io)?;
    let mut answer = String::new();
    BufReader::new(conn)
        .take(16 << 20)
        .read_line(&mut answer)
        .map_err(io)?;
    serde_json::from_str(&answer).map_err(|e| ClientError::Answer {
        path: path.into(),
        msg: e.to_string(),
    })
}

/// Receives the commands of one direction (held by its model).
pub type CmdReceiver = Receiver<Cmd>;
