//! `wirelab run`: a campaign's points, one after another, on agents.
//!
//! Per point: the emulator (if any) and the captures start and are seen
//! to hold their sockets; each host's counters are read; the stressors
//! start and are seen up ([`stressors`]); after the settle time each
//! host's clock is probed ([`crate::clocks`]); the receivers start and
//! are seen bound; every sender starts at one absolute time T0, converted
//! to its host's clock (`send --start-at`); the run is watched (each
//! receiver's `--status` file, abort criteria, the hosts' samples,
//! Ctrl-C) until the senders end (or a stressor ends, failing the point);
//! the receivers drain and stop, the clocks are probed and the counters
//! read again, the emulator, captures and stressors stop; the files are
//! fetched into the bundle, `point.json` is written (with each
//! flow's loss attribution and clock), and the next point follows after
//! the campaign's pause.
//! Whatever a point started is stopped on every path out of it; the
//! agents stop their children when their connection closes (dead-man
//! rule), and a `[lab]` is torn down when the campaign ends. Before the
//! first point each host's environment goes into the bundle and `[env]
//! apply` is set; it is reverted after the last ([`env`]).

use crate::attribution;
use crate::bundle::{self, BundleError, Manifest, PointFile, PointFlow, PointStatus};
use crate::clocks::PointClocks;
use crate::control::{Control, EmulateSpec, FlowSpec, QueryMode, SocketKind};
use crate::sweep::{self, Plan, Point};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use thiserror::Error;
use wirelab_agent::proto::{Exit, Sig, Sockets};
use wirelab_agent::transport::{AgentConn, Transport, TransportError};
use wirelab_analysis::status::RecvStatus;
use wirelab_host::counters::Snapshot;
use wirelab_host::samples::Sampler;
use wirelab_io::supervise;
use wirelab_jobs::{CaptureJob, EmulateJob, RecvJob, SendJob, SendSocket};
use wirelab_lab::lab::{Lab, LabError, LinkSpec, Side};

mod env;
mod point;
mod stressors;

use point::run_point;

/// The longest flow of a `--quick` run (a smoke run of a campaign whose
/// tests last hours).
pub const QUICK_MAX: u64 = 10_000_000_000;
/// First UDP port given to a flow without a `port` (flow i gets BASE + i).
pub const BASE_PORT: u16 = 5800;
/// How often a running point is looked at (status files, senders' exit).
const WATCH_EVERY: Duration = Duration::from_millis(100);
/// Time from "every receiver is bound" to T0: room for the senders to be
/// spawned and set up on every agent (a sender that is not set up by T0
/// refuses to start late, and the point fails saying so).
const START_LEAD: Duration = Duration::from_millis(600);
/// How long tools get to come up (bind, open their sockets).
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// After the last sender ends: how long receivers get to end by themselves
/// (a flow's end marker arrives after the packets in flight and an
/// emulator's queue) before they are stopped.
const DRAIN: Duration = Duration::from_secs(2);
/// How long a tool gets to exit after SIGINT before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Lab(#[from] LabError),
    #[error("host {host}: {cause}")]
    Agent { host: String, cause: TransportError },
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Plan(#[from] sweep::PlanError),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Setup(String),
}

/// What the caller chose beyond the control file.
pub struct RunConfig {
    pub control_path: PathBuf,
    /// The control file as read (copied into the bundle).
    pub control_text: String,
    /// Where the bundle goes: a new directory under it.
    pub results: PathBuf,
    /// Continue the campaign in this bundle: points with a result are
    /// skipped.
    pub resume: Option<PathBuf>,
    /// Divide every flow's duration and count by 10 (durations at least
    /// 1 s and at most [`QUICK_MAX`], counts at least 100 probes): a smoke
    /// run of the same campaign.
    pub quick: bool,
    /// wirelab for `local`, `netns:` and `lab:` hosts (this binary).
    pub wirelab: PathBuf,
    /// Extra ssh options for every `ssh://` host (`-i KEY`, `-o ...`).
    pub ssh_options: Vec<String>,
}

/// What the runner tells its caller as it goes.
pub enum Event<'a> {
    Started {
        dir: &'a Path,
        points: usize,
        skipped: usize,
    },
    Point {
        n: usize,
        total: usize,
        point: &'a Point,
    },
    /// A flow's loss so far (from its receiver's status).
    Flow {
        name: &'a str,
        received: u64,
        lost: u64,
    },
    /// The point's stressors now up: (host, kind) each; empty once they
    /// are stopped.
    Stressors(&'a [(String, String)]),
    /// Every 100 ms while a point's flows run: the time since its T0.
    Tick {
        elapsed: Duration,
    },
    PointEnded {
        point: &'a Point,
        status: PointStatus,
        reason: Option<&'a str>,
        /// The point's directory in the bundle.
        dir: &'a Path,
        /// Its record, when it got as far as writing one.
        file: Option<&'a PointFile>,
    },
    Note(String),
    /// Something the user should see even with progress off.
    Warning(String),
}

/// The end of a campaign.
#[derive(Debug)]
pub struct Outcome {
    pub dir: PathBuf,
    pub done: usize,
    pub aborted: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Points a `[sweep] search` left out.
    pub searched_out: usize,
    pub interrupted: bool,
    /// The first infrastructure failure, if any.
    pub failure: Option<String>,
}

impl Outcome {
    /// The exit code of `wirelab run` (spec: 0 all done, 3 some point
    /// aborted, 4 infrastructure failure; 130 after Ctrl-C).
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            130
        } else if self.failed > 0 || self.failure.is_some() {
            4
        } else if self.aborted > 0 {
            3
        } else {
            0
        }
    }
}

/// Runs `plan`'s points of `control`; `stop` (set by Ctrl-C) ends the
/// point in progress and the campaign.
pub fn run(
    control: &Control,
    plan: &Plan,
    cfg: &RunConfig,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Outcome, RunError> {
    refuse_unsupported(control)?;
    env::check(control)?;
    let started = unix_ns();
    // The lab first: a campaign that cannot have its lab leaves no
    // results directory behind.
    let lab = build_lab(control)?;
    let dir = open_bundle(control, cfg)?;
    let done_before: Vec<(PathBuf, PointFile)> = bundle::read_points(&dir)?
        .into_iter()
        .filter(|(_, p)| matches!(p.status, PointStatus::Done | PointStatus::Aborted))
        .collect();
    let todo = plan
        .points
        .iter()
        .filter(|p| !done_before.iter().any(|(_, d)| d.id == p.id))
        .count();
    let mut out = Outcome {
        dir: dir.clone(),
        done: 0,
        aborted: 0,
        failed: 0,
        skipped: plan.points.len() - todo,
        searched_out: 0,
        interrupted: false,
        failure: None,
    };
    on(Event::Started {
        dir: &dir,
        points: todo,
        skipped: out.skipped,
    });
    let mut hosts = Hosts::new(control, lab.as_ref(), cfg);
    if search_needs_order(control, plan) {
        return Err(RunError::Unsupported(
            "[sweep] search runs its axis in order: leave campaign.order sequential".into(),
        ));
    }
    // The hosts' environments into the bundle, `[env] apply` set; reverted
    // after the points (and by each agent when its connection ends). A host
    // that cannot be reached or changed fails the campaign before its
    // first point, with a bundle all the same.
    let env_applied = match env::start(control, &mut hosts, &dir, on) {
        Ok(a) => a,
        Err(e) => {
            out.failure = Some(e.to_string());
            vec![]
        }
    };
    if out.failure.is_none() {
        let campaign = Campaign {
            control,
            plan,
            cfg,
            dir: &dir,
            stop,
            done_before: &done_before,
            todo,
        };
        campaign.run_points(&mut hosts, &mut out, on);
    }
    if let Err(e) = env::finish(&mut hosts, &env_applied) {
        let why = e.to_string();
        on(Event::Warning(why.clone()));
        out.failure.get_or_insert(why);
    }
    let agents = hosts.close();
    drop(lab);
    write_results(control, &dir, agents, started, &out)?;
    Ok(out)
}

/// The results directory: a new one, or `--resume`'s when it holds the
/// same control file; made, with the control file in it.
fn open_bundle(control: &Control, cfg: &RunConfig) -> Result<PathBuf, RunError> {
    let dir = match &cfg.resume {
        Some(d) => d.clone(),
        None => cfg
            .results
            .join(bundle_name(&control.campaign.name, &cfg.control_text)),
    };
    if cfg.resume.is_some() {
        let stored = dir.join("control.toml");
        match std::fs::read_to_string(&stored) {
            Ok(t) if t == cfg.control_text => {}
            Ok(_) => {
                return Err(RunError::Setup(format!(
                    "{} holds a different control file than {}: resume with the file the \
                     campaign was started with (it is {})",
                    dir.display(),
                    cfg.control_path.display(),
                    stored.display()
                )))
            }
            Err(e) => {
                return Err(RunError::Setup(format!(
                    "--resume {}: not a results directory of `wirelab run` ({}: {e})",
                    dir.display(),
                    stored.display()
                )))
            }
        }
    }
    std::fs::create_dir_all(dir.join("points")).map_err(|e| bundle_io(&dir, e))?;
    bundle::write_atomic(&dir.join("control.toml"), cfg.control_text.as_bytes())?;
    Ok(dir)
}

/// A campaign being run: what its points share.
struct Campaign<'a> {
    control: &'a Control,
    plan: &'a Plan,
    cfg: &'a RunConfig,
    dir: &'a Path,
    stop: &'a AtomicBool,
    /// Points with a result from before (`--resume`).
    done_before: &'a [(PathBuf, PointFile)],
    /// How many points are to run.
    todo: usize,
}

impl Campaign<'_> {
    /// The points in plan order, counted into `out`: those done before
    /// and those a search leaves out skipped, a pause between points; the
    /// first failed point, or Ctrl-C, ends the campaign.
    fn run_points(&self, hosts: &mut Hosts<'_>, out: &mut Outcome, on: &mut dyn FnMut(Event<'_>)) {
        let mut search = sweep::SearchState::new(self.control.sweep.search.as_ref());
        let mut n = 0;
        for point in &self.plan.points {
            if let Some((pdir, p)) = self.done_before.iter().find(|(_, p)| p.id == point.id) {
                search.record(point, lossfree(pdir, p));
                continue;
            }
            if let Some(why) = search.skip(point) {
                out.searched_out += 1;
                on(Event::Note(format!("{} not run: {why}", point.id)));
                continue;
            }
            if self.stop.load(Ordering::Relaxed) {
                out.interrupted = true;
                break;
            }
            n += 1;
            on(Event::Point {
                n,
                total: self.todo,
                point,
            });
            if !self.one_point(point, hosts, &mut search, out, on) {
                break;
            }
            if n < self.todo && !sleep_unless(self.stop, self.plan.campaign.pause_ns) {
                out.interrupted = true;
                break;
            }
        }
    }

    /// Runs `point` and counts its end; false when the campaign ends with
    /// it (a failure: a host that is gone stays gone; Ctrl-C).
    fn one_point(
        &self,
        point: &Point,
        hosts: &mut Hosts<'_>,
        search: &mut sweep::SearchState,
        out: &mut Outcome,
        on: &mut dyn FnMut(Event<'_>),
    ) -> bool {
        let (control, plan, cfg) = (self.control, self.plan, self.cfg);
        let result = run_point(control, plan, point, cfg, hosts, self.dir, self.stop, on);
        let (status, reason) = match &result {
            Ok(p) => (p.status, p.reason.clone()),
            Err(e) => (PointStatus::Failed, Some(e.to_string())),
        };
        let pdir = self.dir.join("points").join(&point.id);
        on(Event::PointEnded {
            point,
            status,
            reason: reason.as_deref(),
            dir: &pdir,
            file: result.as_ref().ok(),
        });
        if let Ok(p) = &result {
            search.record(point, lossfree(&self.dir.join("points").join(&p.id), p));
        }
        match status {
            PointStatus::Done => out.done += 1,
            PointStatus::Aborted => out.aborted += 1,
            PointStatus::Failed => {
                out.failed += 1;
                out.failure.get_or_insert(reason.unwrap_or_default());
                return false;
            }
            PointStatus::Interrupted => {
                out.interrupted = true;
                return false;
            }
        }
        true
    }
}

/// `summary.json`, `summary.csv`, the clock pairs and the manifest, from
/// what the bundle holds.
fn write_results(
    control: &Control,
    dir: &Path,
    agents: BTreeMap<String, serde_json::Value>,
    started: u64,
    out: &Outcome,
) -> Result<(), RunError> {
    let summary = bundle::summarize(dir)?;
    bundle::write_atomic(&dir.join("summary.json"), summary.to_json().as_bytes())?;
    bundle::write_atomic(&dir.join("summary.csv"), summary.to_csv().as_bytes())?;
    bundle::write_clock_pairs(dir)?;
    let manifest = Manifest {
        schema: bundle::MANIFEST_SCHEMA.into(),
        campaign: control.campaign.name.clone(),
        wirelab_version: env!("CARGO_PKG_VERSION").into(),
        agents,
        started_unix_ns: started,
        ended_unix_ns: unix_ns(),
        exit_code: out.exit_code(),
        files: bundle::hash_files(dir)?,
    };
    let mut m = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
    m.push('\n');
    bundle::write_atomic(&dir.join("manifest.json"), m.as_bytes())?;
    Ok(())
}

/// A search whose axis would not run in order (`--set campaign.order`).
fn search_needs_order(c: &Control, plan: &Plan) -> bool {
    c.sweep.search.is_some() && plan.campaign.order != crate::control::Order::Sequential
}

/// Whether every flow of a finished point lost nothing (and got probes).
fn lossfree(pdir: &Path, p: &PointFile) -> bool {
    p.status == PointStatus::Done
        && bundle::point_rows(pdir, p)
            .iter()
            .all(|r| r.lost == Some(0) && r.received.unwrap_or(0) > 0)
}

/// What the control file may say that this runner does not carry out:
/// refused before anything starts rather than ignored.
fn refuse_unsupported(c: &Control) -> Result<(), RunError> {
    if let Some(f) = c.flows.iter().find(|f| f.query.mode == QueryMode::Inband) {
        return Err(RunError::Unsupported(format!(
            "flow {}: query.mode = \"inband\" is not run by this version of wirelab run: leave \
             it out (\"control\": the controller reads each receiver's status while the flow runs)",
            f.name
        )));
    }
    Ok(())
}

/// `<name>-<UTC>-<hash8>`: the campaign, when, and which control file.
fn bundle_name(name: &str, text: &str) -> String {
    use sha2::Digest;
    let h = bundle::hex(&sha2::Sha256::digest(text.as_bytes()));
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let t: String = t.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{name}-{t}-{}", &h[..8])
}

fn bundle_io(p: &Path, source: std::io::Error) -> RunError {
    RunError::Bundle(BundleError::Io {
        path: p.to_path_buf(),
        cause: source,
    })
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Sleeps `ns` in short steps; false if `stop` was raised.
fn sleep_unless(stop: &AtomicBool, ns: u64) -> bool {
    let end = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(WATCH_EVERY.min(end.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::Relaxed)
}

/// The `[lab]` section, built.
fn build_lab(c: &Control) -> Result<Option<Lab>, RunError> {
    let Some(spec) = &c.lab else {
        return Ok(None);
    };
    let mut b = Lab::new("wlrun");
    for ns in &spec.namespaces {
        b = b.namespace(ns);
    }
    for l in &spec.links {
        let mut s = LinkSpec::new();
        if !l.ipv6 {
            s = s.ipv6_off();
        }
        for (side, a) in [(Side::A, &l.a_addr), (Side::B, &l.b_addr)] {
            if let Some(a) = a {
                s = s.addr(side, a);
            }
        }
        if let Some(m) = l.mtu {
            s = s.mtu(m);
        }
        if let (Some(a), Some(bb)) = (&l.a_if, &l.b_if) {
            s = s.names(a, bb);
        }
        b = b.link(&l.a, &l.b, s);
    }
    for r in &spec.routes {
        b = b.route(&r.ns, &r.to, &r.via);
    }
    for x in &spec.sysctls {
        b = b.sysctl(&x.ns, &x.key, &x.value);
    }
    Ok(Some(b.build()?))
}

/// The campaign's agents, connected when first needed.
struct Hosts<'a> {
    control: &'a Control,
    lab: Option<&'a Lab>,
    cfg: &'a RunConfig,
    conns: BTreeMap<String, AgentConn>,
}

impl<'a> Hosts<'a> {
    fn new(control: &'a Control, lab: Option<&'a Lab>, cfg: &'a RunConfig) -> Hosts<'a> {
        Hosts {
            control,
            lab,
            cfg,
            conns: BTreeMap::new(),
        }
    }

    fn get(&mut self, host: &str) -> Result<&mut AgentConn, RunError> {
        if !self.conns.contains_key(host) {
            let spec = self
                .control
                .hosts
                .get(host)
                .ok_or_else(|| RunError::Setup(format!("host {host} is not in [hosts]")))?;
            let agent_err = |source| RunError::Agent {
                host: host.into(),
                cause: source,
            };
            let (transport, wirelab) = match spec.transport.strip_prefix("lab:") {
                Some(role) => {
                    let lab = self.lab.ok_or_else(|| {
                        RunError::Setup(format!(
                            "host {host}: transport lab:{role} needs a [lab] section"
                        ))
                    })?;
                    let ns = lab
                        .namespaces()
                        .find(|n| n.ends_with(&format!("-{role}")))
                        .ok_or_else(|| {
                            RunError::Setup(format!(
                                "host {host}: the [lab] has no namespace {role}"
                            ))
                        })?;
                    (Transport::Netns(ns.to_string()), self.local_wirelab())
                }
                None => {
                    let t: Transport = spec.transport.parse().map_err(agent_err)?;
                    // Local and namespaced agents run this very binary
                    // unless the host names another.
                    let w = match &t {
                        Transport::Ssh { .. } => spec.wirelab.clone(),
                        _ if spec.wirelab != "wirelab" => spec.wirelab.clone(),
                        _ => self.local_wirelab(),
                    };
                    (t, w)
                }
            };
            let opts = wirelab_agent::transport::ConnectOptions {
                wirelab,
                ssh_opts: self.cfg.ssh_options.clone(),
                agent: crate::clocks::agent_job(spec),
                ..Default::default()
            };
            let conn = AgentConn::connect_with(&transport, &opts).map_err(agent_err)?;
            self.conns.insert(host.to_string(), conn);
        }
        Ok(self.conns.get_mut(host).expect("inserted above"))
    }

    fn local_wirelab(&self) -> String {
        self.cfg.wirelab.to_string_lossy().into_owned()
    }

    /// Says goodbye to every agent; their hellos for the manifest.
    fn close(self) -> BTreeMap<String, serde_json::Value> {
        let mut out = BTreeMap::new();
        for (name, c) in self.conns {
            out.insert(
                name,
                serde_json::to_value(c.hello()).unwrap_or(serde_json::Value::Null),
            );
            let _ = c.close();
        }
        out
    }

    /// The device an interface name of `host` means: on a `lab:` host, a
    /// name that is a namespace the host has a link to is that link's end
    /// (`test_if = "rx"`); any other name is the device's own.
    fn ifname(&self, host: &str, name: &str) -> String {
        let role = self.control.hosts[host].transport.strip_prefix("lab:");
        if let (Some(lab), Some(role)) = (self.lab, role) {
            let peer = lab.links().iter().find_map(|l| {
                if l.a.role == role && l.b.role == name {
                    Some(&l.a)
                } else if l.b.role == role && l.a.role == name {
                    Some(&l.b)
                } else {
                    None
                }
            });
            if let Some(end) = peer {
                return end.dev.clone();
            }
        }
        name.to_string()
    }

    /// The address flows to `host` send to: its `addr`, else its end of
    /// the lab link that reaches it from `from` (directly, or across one
    /// namespace that bridges, such as an emulator).
    fn target(&self, from: &str, to: &str) -> Result<String, RunError> {
        let spec = &self.control.hosts[to];
        if let Some(a) = &spec.addr {
            return Ok(a.clone());
        }
        let role = |h: &str| {
            self.control.hosts[h]
                .transport
                .strip_prefix("lab:")
                .map(str::to_string)
        };
        if let (Some(lab), Some(rf), Some(rt)) = (self.lab, role(from), role(to)) {
            let ends: Vec<(&str, Option<std::net::IpAddr>)> = lab
                .links()
                .iter()
                .flat_map(|l| [(&l.a, &l.b), (&l.b, &l.a)])
                .filter(|(me, _)| me.role == rt)
                .map(|(me, peer)| (peer.role.as_str(), me.ipv4()))
                .collect();
            // A direct link first, then one through a middle namespace.
            let direct = ends.iter().find(|(peer, _)| *peer == rf);
            let via = ends.iter().find(|(peer, _)| {
                lab.links().iter().any(|l| {
                    (l.a.role == *peer && l.b.role == rf) || (l.b.role == *peer && l.a.role == rf)
                })
            });
            if let Some((_, Some(ip))) = direct.or(via) {
                return Ok(ip.to_string());
            }
        }
        Err(RunError::Setup(format!(
            "host {to}: no address for flows to it: set hosts.{to}.addr (the address on its test \
             interface)"
        )))
    }
}

/// One tool started for a point.
struct Started {
    host: String,
    tag: String,
}

/// What a running point has started, stopped on every way out.
struct PointRun<'h, 'a> {
    hosts: &'h mut Hosts<'a>,
    started: Vec<Started>,
}

impl PointRun<'_, '_> {
    fn spawn(&mut self, host: &str, tag: &str, args: Vec<String>) -> Result<(), RunError> {
        self.hosts
            .get(host)?
            .spawn(tag, &args)
            .map_err(|source| RunError::Agent {
                host: host.into(),
                cause: source,
            })?;
        self.started.push(Started {
            host: host.into(),
            tag: tag.into(),
        });
        Ok(())
    }

    fn agent(&mut self, host: &str) -> Result<&mut AgentConn, RunError> {
        self.hosts.get(host)
    }

    /// SIGINT to `tag`, then its exit (killed after the grace time).
    fn stop(&mut self, host: &str, tag: &str) -> Result<Exit, RunError> {
        let err = |source| RunError::Agent {
            host: host.into(),
            cause: source,
        };
        let a = self.hosts.get(host)?;
        let s = supervise::stop(&mut a.remote_child(tag), STOP_GRACE, STOP_GRACE).map_err(err)?;
        s.end
            .ok_or_else(|| RunError::Setup(format!("{tag} on {host} did not exit after SIGKILL")))
    }
}

impl Drop for PointRun<'_, '_> {
    fn drop(&mut self) {
        // Whatever is still running (an error path): killed.
        for s in std::mem::take(&mut self.started) {
            if let Ok(a) = self.hosts.get(&s.host) {
                if let Ok(None) = a.wait(&s.tag, Duration::ZERO) {
                    let _ = a.signal(&s.tag, Sig::Kill);
                    let _ = a.wait(&s.tag, STOP_GRACE);
                }
            }
        }
    }
}

/// A flow of the point being run.
struct FlowRun {
    spec: FlowSpec,
    id: u32,
    port: u16,
    tag: String,
    status: Option<RecvStatus>,
    queried: u64,
}

// Counters, samples and attribution (spec run.md "Counters, environment,
// attribution"); the logic is in wirelab_host's counters and samples, and
// in attribution.

/// How often each host of a running point is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The counters of a point's hosts: snapshots before and after, samples
/// in between.
struct PointCounters {
    /// Host → the interfaces asked for (its `test_if`; empty: all but lo).
    hosts: BTreeMap<String, Vec<String>>,
    sampler: Sampler,
    began: Instant,
}

impl PointCounters {
    /// Every host of the point (flows' ends, the emulator's, captures'):
    /// `counters/<host>.before.json`, and the first of its samples.
    fn before(
        run: &mut PointRun<'_, '_>,
        control: &Control,
        resolved: &sweep::Resolved,
        pdir: &Path,
    ) -> Result<PointCounters, RunError> {
        let mut names: Vec<&String> = resolved
            .flows
            .iter()
            .flat_map(|f| [&f.from, &f.to])
            .chain(resolved.emulate.as_ref().map(|e| &e.host))
            .chain(resolved.capture.iter().flat_map(|c| &c.hosts))
            .collect();
        names.sort();
        names.dedup();
        let mut pc = PointCounters {
            hosts: BTreeMap::new(),
            sampler: Sampler::new(SAMPLE_EVERY.as_nanos() as u64),
            began: Instant::now(),
        };
        for h in names {
            let ifaces: Vec<String> = control.hosts[h.as_str()]
                .test_if
                .iter()
                .map(|t| run.hosts.ifname(h, t))
                .collect();
            let snap = run.agent(h)?.counters(&ifaces, false).map_err(agent(h))?;
            write_json(&pdir.join(attribution::counters_file(h, "before")), &snap)?;
            let at = pc.began.elapsed().as_nanos() as u64;
            pc.sampler.start(h, snap, at);
            pc.hosts.insert(h.clone(), ifaces);
        }
        Ok(pc)
    }

    /// Samples the hosts that are due (`samples/<host>.jsonl`).
    fn sample(&mut self, run: &mut PointRun<'_, '_>, pdir: &Path) -> Result<(), RunError> {
        for h in self.sampler.due(self.began.elapsed().as_nanos() as u64) {
            let snap = run
                .agent(&h)?
                .counters(&self.hosts[&h], true)
                .map_err(agent(&h))?;
            self.add(pdir, &h, snap)?;
        }
        Ok(())
    }

    fn add(&mut self, pdir: &Path, host: &str, snap: Snapshot) -> Result<(), RunError> {
        let at = self.began.elapsed().as_nanos() as u64;
        if let Some(s) = self.sampler.add(host, snap, at) {
            use std::io::Write;
            let path = pdir.join(format!("samples/{host}.jsonl"));
            let mut line = serde_json::to_string(s).expect("a sample serializes");
            line.push('\n');
            std::fs::create_dir_all(pdir.join("samples")).map_err(|e| bundle_io(pdir, e))?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(line.as_bytes()))
                .map_err(|e| bundle_io(&path, e))?;
        }
        Ok(())
    }

    /// `counters/<host>.after.json` (also the last sample), and the
    /// samples' summary in the point file.
    fn after(
        mut self,
        run: &mut PointRun<'_, '_>,
        pdir: &Path,
        file: &mut PointFile,
    ) -> Result<(), RunError> {
        let hosts = std::mem::take(&mut self.hosts);
        for (h, ifaces) in &hosts {
            let snap = run.agent(h)?.counters(ifaces, false).map_err(agent(h))?;
            write_json(&pdir.join(attribution::counters_file(h, "after")), &snap)?;
            self.add(pdir, h, snap)?;
        }
        file.samples = self.sampler.summaries();
        Ok(())
    }
}

/// The emulator direction a flow from `from` to `to` crosses: `a2b` when
/// the emulator's `--a` faces the sender (or `--b` the receiver), `b2a`
/// the other way; None when neither end faces it (hosts not in the lab
/// whose names are not the emulator's interfaces).
fn emulate_direction(hosts: &Hosts<'_>, e: &EmulateSpec, from: &str, to: &str) -> Option<String> {
    let dev = |i: usize| hosts.ifname(&e.host, &e.ifaces[i]);
    let facing = |h: &str| {
        let name = hosts.control.hosts[h]
            .transport
            .strip_prefix("lab:")
            .unwrap_or(h);
        hosts.ifname(&e.host, name)
    };
    let (a, b, f, t) = (dev(0), dev(1), facing(from), facing(to));
    if f == a || t == b {
        Some("a2b".into())
    } else if f == b || t == a {
        Some("b2a".into())
    } else {
        None
    }
}

/// Each flow's attribution into the point file, from its stored files
/// (as `wirelab analyze` derives it again).
fn attribute(pdir: &Path, file: &mut PointFile) {
    let lost: Vec<Option<u64>> = bundle::point_rows(pdir, file)
        .iter()
        .map(|r| r.lost)
        .collect();
    let a = attribution::point_attribution(pdir, file, &lost);
    for (f, a) in file.flows.iter_mut().zip(a) {
        f.attribution = a;
    }
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<(), RunError> {
    let mut text = serde_json::to_string_pretty(v).expect("counters serialize");
    text.push('\n');
    Ok(bundle::write_atomic(path, text.as_bytes())?)
}

fn agent(host: &str) -> impl Fn(TransportError) -> RunError + '_ {
    move |source| RunError::Agent {
        host: host.into(),
        cause: source,
    }
}

/// Waits until `ready` holds for the sockets of `host`'s namespace; a
/// tool that exits first is an error with its stderr.
fn wait_ready(
    run: &mut PointRun<'_, '_>,
    host: &str,
    tag: &str,
    ready: impl Fn(&Sockets) -> bool,
) -> Result<(), RunError> {
    let t0 = Instant::now();
    loop {
        let a = run.agent(host)?;
        if let Some(e) = a.wait(tag, Duration::ZERO).map_err(agent(host))? {
            return Err(RunError::Setup(format!(
                "{tag} on {host} exited before it was ready: {}",
                exit_text(&e)
            )));
        }
        if ready(&a.sockets().map_err(agent(host))?) {
            return Ok(());
        }
        if t0.elapsed() > READY_TIMEOUT {
            return Err(RunError::Setup(format!(
                "{tag} on {host} was not ready (its sockets open) after {} s",
                READY_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The receiver's status file, if it is there yet.
fn read_status(
    run: &mut PointRun<'_, '_>,
    host: &str,
    name: &str,
) -> Result<Option<RecvStatus>, RunError> {
    let a = run.agent(host)?;
    match a.read_small(name, 16 << 20) {
        Ok(Some(bytes)) => Ok(serde_json::from_slice(&bytes).ok()),
        Ok(None) => Ok(None),
        Err(e) => Err(RunError::Agent {
            host: host.into(),
            cause: e,
        }),
    }
}

/// A flow's abort criterion, checked each time its receiver has taken
/// another `query.every_packets` probes.
fn check_abort(f: &mut FlowRun, s: &RecvStatus) -> Option<String> {
    let flow = s.flows.iter().find(|x| x.flow == f.id)?;
    let q = Query {
        every: f.spec.query.every_packets,
        lost_gt: f.spec.abort.lost_gt?,
    };
    q.check(&mut f.queried, flow.received, flow.lost)
        .map(|why| format!("flow {}: {why}", f.spec.name))
}

/// The query rule of DTSS §3.3.2.1.1: every `every` probes received, the
/// loss so far is compared with `lost_gt`.
struct Query {
    every: u64,
    lost_gt: u64,
}

impl Query {
    /// With `received` and `lost` so far and `queried` the queries made
    /// (updated): why to abort, if a new query finds too much loss.
    fn check(&self, queried: &mut u64, received: u64, lost: u64) -> Option<String> {
        let q = received / self.every.max(1);
        if q == *queried {
            return None;
        }
        *queried = q;
        (lost > self.lost_gt)
            .then(|| format!("{lost} lost > {} after {received} received", self.lost_gt))
    }
}

/// The sender of a flow.
fn send_job(f: &FlowRun, target: &str, t0: u64, seed: u64) -> SendJob {
    let s = &f.spec;
    let socket = match s.socket {
        SocketKind::Udp => None,
        SocketKind::Raw => Some(SendSocket::Raw),
        SocketKind::Packet => Some(SendSocket::Packet),
    };
    SendJob {
        target: target.into(),
        port: f.port,
        flow: Some(f.id),
        start_at_unix_ns: Some(t0),
        record: Some(format!("{}-tx.wlr", f.tag)),
        json: true,
        quiet: true,
        seed: Some(seed.wrapping_add(u64::from(f.id))),
        count: s.count,
        duration_ns: s.duration,
        interval: s.interval.clone(),
        rate: s.rate.clone(),
        size: s.size.clone(),
        dscp: s.dscp,
        warmup: (s.warmup_packets > 0).then_some(s.warmup_packets),
        socket,
        echo: s.echo,
        extra: s.send_args.clone(),
        ..SendJob::default()
    }
}

/// `--quick`: a tenth of the duration (at least 1 s, at most
/// [`QUICK_MAX`]) and of the count (at least 100 probes).
fn quicken(f: &mut FlowSpec) {
    if let Some(d) = f.duration.as_mut() {
        *d = (*d / 10).clamp(1_000_000_000, QUICK_MAX).min(*d);
    }
    if let Some(n) = f.count.as_mut() {
        *n = (*n / 10).max(100).min(*n);
    }
}

/// Fetches `name` from the agent's workdir to `local`; false if the tool
/// never wrote it.
fn fetch(
    run: &mut PointRun<'_, '_>,
    host: &str,
    name: &str,
    local: &Path,
) -> Result<bool, RunError> {
    if let Some(d) = local.parent() {
        std::fs::create_dir_all(d).map_err(|e| bundle_io(d, e))?;
    }
    let a = run.agent(host)?;
    match a.fetch(name, local) {
        Ok(_) => {
            let _ = a.remove(name);
            Ok(true)
        }
        Err(TransportError::NotFound { .. }) => Ok(false),
        Err(source) => Err(RunError::Agent {
            host: host.into(),
            cause: source,
        }),
    }
}

fn json_report(e: &Exit) -> Option<serde_json::Value> {
    serde_json::from_str(e.stdout.trim()).ok()
}

fn exit_text(e: &Exit) -> String {
    let how = match (e.code, e.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "ended".into(),
    };
    let tail = e.stderr_tail.trim();
    match tail.lines().last() {
        Some(l) if !l.is_empty() => format!("{how}: {l}"),
        _ => how,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_judged_only_at_each_query() {
        let q = Query {
            every: 1000,
            lost_gt: 50,
        };
        let mut n = 0;
        // Before the first 1000 probes no query is made, whatever the loss.
        assert_eq!(q.check(&mut n, 999, 80), None);
        // The first query: 40 lost is within the criterion.
        assert_eq!(q.check(&mut n, 1000, 40), None);
        // No new query until 2000 received, even with more loss.
        assert_eq!(q.check(&mut n, 1999, 70), None);
        assert_eq!(
            q.check(&mut n, 2003, 71).as_deref(),
            Some("71 lost > 50 after 2003 received")
        );
        // A poll that skipped queries still makes one.
        let mut m = 0;
        assert!(q.check(&mut m, 5500, 51).is_some());
        assert_eq!(m, 5);
    }

    #[test]
    fn quick_divides_durations_and_counts_by_ten_within_bounds() {
        let mut f = crate::control::parse(
            "c.toml",
            "[campaign]\nname = \"q\"\n[hosts]\na = { transport = \"local\" }\n\
             [[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"a\"\ncount = 50000\nduration = \"60s\"\n",
        )
        .unwrap()
        .flows
        .remove(0);
        quicken(&mut f);
        assert_eq!((f.count, f.duration), (Some(5000), Some(6_000_000_000)));
        // A 2-hour test becomes 10 s, not 12 minutes.
        f.duration = Some(7_200_000_000_000);
        quicken(&mut f);
        assert_eq!(f.duration, Some(QUICK_MAX));
        f.count = Some(300);
        f.duration = Some(500_000_000);
        quicken(&mut f);
        // At least 100 probes and 1 s, but never more than asked.
        assert_eq!((f.count, f.duration), (Some(100), Some(500_000_000)));
    }

    #[test]
    fn a_flow_crosses_the_emulator_direction_that_faces_its_sender() {
        let c = crate::control::parse(
            "c.toml",
            "[campaign]\nname = \"d\"\n\
             [lab]\nnamespaces = [\"tx\", \"emu\", \"rx\"]\n\
             links = [{ a = \"tx\", b = \"emu\" }, { a = \"emu\", b = \"rx\" }]\n\
             [hosts]\ntx = { transport = \"lab:tx\" }\n\
             emu = { transport = \"lab:emu\" }\nrx = { transport = \"lab:rx\" }\n\
             far = { transport = \"local\" }\n\
             [[flow]]\nname = \"f\"\nfrom = \"tx\"\nto = \"rx\"\ncount = 1\n\
             [emulate]\nhost = \"emu\"\nifaces = [\"tx\", \"rx\"]\nstages = \"pass\"\n",
        )
        .unwrap();
        let cfg = RunConfig {
            control_path: "c.toml".into(),
            control_text: String::new(),
            results: "/nonexistent".into(),
            resume: None,
            quick: false,
            wirelab: "wirelab".into(),
            ssh_options: vec![],
        };
        let hosts = Hosts::new(&c, None, &cfg);
        let e = c.emulate.as_ref().unwrap();
        let dir = |from, to| emulate_direction(&hosts, e, from, to);
        assert_eq!(dir("tx", "rx").as_deref(), Some("a2b"));
        assert_eq!(dir("rx", "tx").as_deref(), Some("b2a"));
        // Only one end facing it is enough.
        assert_eq!(dir("far", "rx").as_deref(), Some("a2b"));
        assert_eq!(dir("far", "tx").as_deref(), Some("b2a"));
        assert_eq!(dir("far", "emu"), None);
    }
}
