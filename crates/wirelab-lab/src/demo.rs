//! `wirelab demo`'s lab run: as root, two network namespaces joined by a
//! veth pair, `wirelab recv` in one and `wirelab send` in the other, both
//! writing record files, and the namespaces removed again (also on error or
//! a signal); without root, or when asked, the same two processes over
//! loopback. With an emulated link, a third namespace between them runs
//! `wirelab emulate` on the link's stages. The caller analyzes the record
//! files.

use crate::lab::{is_root, Lab, LabError, LinkSpec};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;
use wirelab_jobs::{emulate, send, EmulateJob, RecvJob, SendJob};

const ADDR_SEND: &str = "198.18.0.1";
const ADDR_RECV: &str = "198.18.0.2";
/// The receiver's port in the namespace lab (the default port).
const LAB_PORT: u16 = 5757;

#[derive(Debug, Error)]
pub enum DemoError {
    #[error("cannot build the namespace lab (try --loopback): {0}")]
    Build(LabError),
    #[error(transparent)]
    Lab(#[from] LabError),
    #[error("the receiver did not start: {0}")]
    Receiver(LabError),
    #[error("{what}: {cause}")]
    Io { what: String, cause: io::Error },
    #[error("the receiver did not start listening on port {0} within 5 s")]
    NotListening(u16),
    #[error("an emulated link needs the namespace lab: run as root, without --loopback")]
    EmulateNeedsLab,
    #[error("the emulator did not start: {0}")]
    Emulator(String),
    #[error("the {role} failed ({status})")]
    Failed {
        role: &'static str,
        status: std::process::ExitStatus,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> DemoError {
    let what = what.into();
    move |source| DemoError::Io {
        what,
        cause: source,
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The wirelab executable.
    pub exe: PathBuf,
    /// The sender's interval and size specs.
    pub interval: String,
    pub size: String,
    /// How long the sender sends.
    pub duration: Duration,
    /// Loopback even as root.
    pub loopback: bool,
    /// Keep the record files here; `None`: a temporary directory, removed
    /// with the [`Demo`].
    pub keep: Option<PathBuf>,
    /// Stages of an emulated link between sender and receiver (both
    /// directions), in `wirelab emulate`'s syntax.
    pub emulate: Option<String>,
}

/// A finished run: its record files.
pub struct Demo {
    pub tx: PathBuf,
    pub rx: PathBuf,
    /// A signal cut the run short.
    pub interrupted: bool,
    /// The emulator's report (its stdout), when the link was emulated.
    pub emulator: Option<String>,
    temp: Option<PathBuf>,
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(d) = &self.temp {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// `3s`, `500ms`: a duration the sender's `--duration` takes, exactly.
fn duration_arg(d: Duration) -> String {
    let ns = d.as_nanos();
    match [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .into_iter()
        .find(|(unit, _)| ns % unit == 0)
    {
        Some((unit, name)) => format!("{}{name}", ns / unit),
        None => format!("{ns}ns"),
    }
}

/// Runs the lab; `say` gets what happens, line by line. The first SIGINT or
/// SIGTERM lets both processes finish and the run returns what they
/// recorded; a second one removes the namespaces and exits.
pub fn run(cfg: &DemoConfig, say: &mut dyn FnMut(String)) -> Result<Demo, DemoError> {
    let (dir, temp) = match &cfg.keep {
        Some(d) => (d.clone(), None),
        None => {
            let d = std::env::temp_dir().join(format!("wirelab-demo-{}", std::process::id()));
            (d.clone(), Some(d))
        }
    };
    std::fs::create_dir_all(&dir).map_err(io_err(format!("cannot create {}", dir.display())))?;
    let mut demo = Demo {
        tx: dir.join("tx.wlr"),
        rx: dir.join("rx.wlr"),
        interrupted: false,
        emulator: None,
        temp,
    };
    let use_ns = is_root() && !cfg.loopback;
    if cfg.emulate.is_some() && !use_ns {
        return Err(DemoError::EmulateNeedsLab);
    }
    if !use_ns && !cfg.loopback {
        say("wirelab demo: not running as root, so no network namespaces: running the same lab over loopback (127.0.0.1). \
Run as root (sudo wirelab demo) for the two-namespace veth lab."
            .into());
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(io_err("signal handlers"))?;
    }
    let lab = if use_ns {
        Some(build_lab(cfg.emulate.is_some()).map_err(DemoError::Build)?)
    } else {
        None
    };
    let guard = match &lab {
        Some(l) => Some(l.guard_signals(stop.clone())?),
        None => None,
    };
    let (port, target) = announce(lab.as_ref(), cfg.emulate.is_some(), say)?;
    let wirelab = |role: &str| match &lab {
        Some(l) => l.exec(role, &cfg.exe),
        None => Command::new(&cfg.exe),
    };
    let emulator = match (&lab, &cfg.emulate) {
        (Some(l), Some(stages)) => Some(start_emulator(l, &cfg.exe, stages, say)?),
        _ => None,
    };
    let mut rx = spawn_receiver(wirelab("r"), &recv_job(cfg, port, &demo.rx))?;
    let listening = match &lab {
        Some(l) => l
            .wait_udp("r", port, Duration::from_secs(5))
            .map_err(DemoError::Receiver),
        None => wait_listening_local(port, Duration::from_secs(5)),
    };
    if let Err(e) = listening {
        for mut child in std::iter::once(rx).chain(emulator) {
            let _ = child.kill();
            let _ = child.wait();
        }
        return Err(e);
    }
    let tx_status = run_sender(
        wirelab("s"),
        cfg,
        &send_job(cfg, target, port, &demo.tx),
        say,
    )?;
    let rx_status = rx.wait().map_err(io_err("waiting for the receiver"))?;
    if let Some(em) = emulator {
        demo.emulator = Some(stop_emulator(em)?);
    }
    drop(guard);
    drop(lab);
    for (role, status) in [("sender", tx_status), ("receiver", rx_status)] {
        if !status.success() {
            return Err(DemoError::Failed { role, status });
        }
    }
    demo.interrupted = stop.load(Ordering::SeqCst);
    Ok(demo)
}

/// The namespace lab: sender `s` and receiver `r` joined by a veth pair,
/// or, for an emulated link, bridged through a middle namespace `e`.
fn build_lab(emulated: bool) -> Result<Lab, LabError> {
    if emulated {
        return Lab::bridged("wl", ["s", "e", "r"], [ADDR_SEND, ADDR_RECV]);
    }
    Lab::new("wl")
        .namespace("s")
        .namespace("r")
        .link(
            "s",
            "r",
            LinkSpec::new().ipv4(&format!("{ADDR_SEND}/24"), &format!("{ADDR_RECV}/24")),
        )
        .build()
}

/// Says what the lab is; returns the receiver's port and the sender's
/// target address (over loopback, a free port).
fn announce(
    lab: Option<&Lab>,
    emulated: bool,
    say: &mut dyn FnMut(String),
) -> Result<(u16, &'static str), DemoError> {
    match lab {
        Some(l) if emulated => {
            say(format!(
                "lab: namespaces {} ({ADDR_SEND}) and {} ({ADDR_RECV}), bridged by `wirelab emulate` in {}",
                l.ns("s"),
                l.ns("r"),
                l.ns("e")
            ));
            Ok((LAB_PORT, ADDR_RECV))
        }
        Some(l) => {
            say(format!(
                "lab: namespaces {} ({ADDR_SEND}) and {} ({ADDR_RECV}) joined by a veth pair",
                l.ns("s"),
                l.ns("r")
            ));
            Ok((LAB_PORT, ADDR_RECV))
        }
        None => {
            let port = free_udp_port().map_err(io_err("finding a free UDP port"))?;
            say(format!("lab: loopback, port {port}"));
            Ok((port, "127.0.0.1"))
        }
    }
}

/// Starts `wirelab recv` (command `cmd`) as `job` says.
fn spawn_receiver(mut cmd: Command, job: &RecvJob) -> Result<std::process::Child, DemoError> {
    cmd.args(job.argv())
        .stdout(Stdio::null())
        .spawn()
        .map_err(io_err("cannot start the receiver"))
}

/// Runs `wirelab send` (command `cmd`) as `job` says, until it ends.
fn run_sender(
    mut cmd: Command,
    cfg: &DemoConfig,
    job: &SendJob,
    say: &mut dyn FnMut(String),
) -> Result<std::process::ExitStatus, DemoError> {
    say(format!(
        "running: wirelab send {} {} {} {} {} {} {}",
        job.target,
        send::flag::INTERVAL,
        cfg.interval,
        send::flag::SIZE,
        cfg.size,
        send::flag::DURATION,
        duration_arg(cfg.duration)
    ));
    cmd.args(job.argv())
        .stdout(Stdio::null())
        .status()
        .map_err(io_err("cannot start the sender"))
}

/// The receiver: IPv4, JSON, recording to `rx`; it ends 5 s after the
/// last probe, or 15 s after the run's duration at the latest.
fn recv_job(cfg: &DemoConfig, port: u16, rx: &Path) -> RecvJob {
    RecvJob {
        port,
        record: Some(rx.display().to_string()),
        json: true,
        quiet: true,
        ipv4: true,
        idle_timeout_ns: Some(5_000_000_000),
        timeout_ns: Some((cfg.duration.as_secs() + 15) * 1_000_000_000),
        ..RecvJob::default()
    }
}

/// The sender: the demo's interval, size and duration, seeded, no
/// warm-up, recording to `tx`.
fn send_job(cfg: &DemoConfig, target: &str, port: u16, tx: &Path) -> SendJob {
    SendJob {
        target: target.into(),
        port,
        quiet: true,
        interval: Some(cfg.interval.clone()),
        size: Some(cfg.size.clone()),
        duration_ns: Some(cfg.duration.as_nanos() as u64),
        seed: Some(42),
        warmup: Some(0),
        record: Some(tx.display().to_string()),
        ..SendJob::default()
    }
}

/// Starts `wirelab emulate` in the lab's middle namespace with `stages`
/// both ways and waits until it has opened its two rings.
fn start_emulator(
    lab: &Lab,
    exe: &Path,
    stages: &str,
    say: &mut dyn FnMut(String),
) -> Result<std::process::Child, DemoError> {
    say(format!(
        "running: wirelab emulate {} '{stages}'",
        emulate::flag::BOTH
    ));
    let job = EmulateJob {
        a: lab.end("e", "s").dev.clone(),
        b: lab.end("e", "r").dev.clone(),
        both: Some(stages.into()),
        ..EmulateJob::default()
    };
    let mut cmd = lab.exec("e", exe);
    cmd.args(job.argv());
    // Two receive rings and two sending sockets.
    lab.spawn_bridge("e", cmd, 4, Duration::from_secs(5))
        .map_err(|e| DemoError::Emulator(e.to_string()))
}

/// Stops the emulator (SIGTERM) and returns its report.
fn stop_emulator(em: std::process::Child) -> Result<String, DemoError> {
    Command::new("kill")
        .args(["-TERM", &em.id().to_string()])
        .status()
        .map_err(io_err("signalling the emulator (kill, from procps)"))?;
    let out = em
        .wait_with_output()
        .map_err(io_err("waiting for the emulator"))?;
    if !out.status.success() {
        return Err(DemoError::Emulator(format!(
            "it failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn free_udp_port() -> io::Result<u16> {
    Ok(std::net::UdpSocket::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Waits until a UDP socket is bound to `port` on this host (seen in
/// /proc/net/udp*).
fn wait_listening_local(port: u16, timeout: Duration) -> Result<(), DemoError> {
    let hex = format!(":{port:04X} ");
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        let bound = ["/proc/net/udp", "/proc/net/udp6"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(Path::new(p)).ok())
            .any(|t| t.contains(&hex));
        if bound {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(DemoError::NotListening(port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_passed_on_exactly() {
        assert_eq!(duration_arg(Duration::from_secs(3)), "3s");
        assert_eq!(duration_arg(Duration::from_millis(2500)), "2500ms");
        assert_eq!(duration_arg(Duration::from_micros(7)), "7us");
        assert_eq!(duration_arg(Duration::from_nanos(1_001)), "1001ns");
    }
}
