//! `wirelab demo`: a complete lab run on one machine.
//!
//! As root: two network namespaces joined by a veth pair, a receiver in
//! one, a sender with exponential intervals in the other, an analysis of
//! both record files, and the namespaces removed again (also on error or
//! Ctrl-C). Without root: the same processes over loopback.

use crate::cli::DemoArgs;
use crate::values;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wirelab_ctl::lab::is_root;
use wirelab_ctl::lab::{Lab, LabError, LinkSpec};

const ADDR_SEND: &str = "198.18.0.1";
const ADDR_RECV: &str = "198.18.0.2";

/// The sender's namespace `s` and the receiver's `r`, joined by a veth pair.
fn build_lab() -> Result<Lab, LabError> {
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

/// Waits until a UDP socket is bound to `port` on loopback (seen in
/// /proc/net/udp*).
fn wait_listening_local(port: u16, timeout: Duration) -> Result<()> {
    let hex = format!(":{port:04X} ");
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        let udp = ["/proc/net/udp", "/proc/net/udp6"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .any(|t| t.contains(&hex));
        if udp {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("the receiver did not start listening on port {port} within {timeout:?}")
}

fn free_udp_port() -> Result<u16> {
    Ok(std::net::UdpSocket::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The wirelab executable, inside namespace `role` of the lab when there is one.
fn wirelab(lab: Option<&Lab>, role: &str, exe: &Path) -> Command {
    match lab {
        Some(l) => l.exec(role, exe),
        None => Command::new(exe),
    }
}

pub fn run(a: DemoArgs) -> Result<()> {
    let dur_ns = values::duration_ns("--duration", &a.duration)?;
    // Validate the specs here so a typo fails before the lab is built.
    values::parse_spec("--interval", &a.interval, wirelab_core::gen::SpecUnit::Time)?;
    values::parse_spec("--size", &a.size, wirelab_core::gen::SpecUnit::Bytes)?;
    let exe = std::env::current_exe().context("cannot find the wirelab executable")?;
    let tmp;
    let dir: PathBuf = match &a.keep {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            d.clone()
        }
        None => {
            tmp = TempDir::new()?;
            tmp.0.clone()
        }
    };
    let use_ns = is_root() && !a.loopback;
    if !use_ns && !a.loopback {
        eprintln!(
            "wirelab demo: not running as root, so no network namespaces: running the same lab over loopback (127.0.0.1). \
Run as root (sudo wirelab demo) for the two-namespace veth lab."
        );
    }
    let stop = wirelab_engine::StopFlag::new();
    // The first SIGINT/SIGTERM: let the children finish, analyze what was
    // recorded.
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.as_arc())?;
    }
    let lab = if use_ns {
        Some(build_lab().context("cannot build the namespace lab (try --loopback)")?)
    } else {
        None
    };
    // A second SIGINT/SIGTERM removes the namespaces at once and exits.
    let guard = match &lab {
        Some(l) => Some(l.guard_signals(stop.as_arc())?),
        None => None,
    };
    let port = if use_ns {
        crate::cli::DEFAULT_PORT
    } else {
        free_udp_port()?
    };
    let target = if use_ns { ADDR_RECV } else { "127.0.0.1" };
    let rx_file = dir.join("rx.wlr");
    let tx_file = dir.join("tx.wlr");
    match &lab {
        Some(l) => eprintln!(
            "lab: namespaces {} ({ADDR_SEND}) and {} ({ADDR_RECV}) joined by a veth pair",
            l.ns("s"),
            l.ns("r")
        ),
        None => eprintln!("lab: loopback, port {port}"),
    }
    let timeout_s = dur_ns / 1_000_000_000 + 15;
    let mut rx = wirelab(lab.as_ref(), "r", &exe)
        .args(["recv", "-4", "--quiet", "--json", "--port"])
        .arg(port.to_string())
        .args(["--idle-timeout", "5s", "--timeout"])
        .arg(format!("{timeout_s}s"))
        .arg("--record")
        .arg(&rx_file)
        .stdout(Stdio::null())
        .spawn()
        .context("cannot start the receiver")?;
    let listening = match &lab {
        Some(l) => l
            .wait_udp("r", port, Duration::from_secs(5))
            .context("the receiver did not start"),
        None => wait_listening_local(port, Duration::from_secs(5)),
    };
    if let Err(e) = listening {
        let _ = rx.kill();
        let _ = rx.wait();
        return Err(e);
    }
    eprintln!(
        "running: wirelab send {target} --interval {} --size {} --duration {}",
        a.interval, a.size, a.duration
    );
    let tx_status = wirelab(lab.as_ref(), "s", &exe)
        .args(["send", target, "--quiet", "--port"])
        .arg(port.to_string())
        .args([
            "--interval",
            &a.interval,
            "--size",
            &a.size,
            "--duration",
            &a.duration,
        ])
        .args(["--seed", "42", "--warmup", "0", "--record"])
        .arg(&tx_file)
        .stdout(Stdio::null())
        .status()
        .context("cannot start the sender")?;
    let rx_status = rx.wait().context("waiting for the receiver")?;
    drop(guard);
    drop(lab);
    if !tx_status.success() {
        bail!("the sender failed ({tx_status})");
    }
    if !rx_status.success() {
        bail!("the receiver failed ({rx_status})");
    }
    if stop.is_stopped() {
        eprintln!("interrupted: analyzing what was recorded");
    }
    super::analyze::run(crate::cli::AnalyzeArgs {
        files: vec![tx_file, rx_file],
        window: "1s".into(),
        max_flows: wirelab_analysis::join::DEFAULT_MAX_FLOWS as u32,
        json: a.json,
    })?;
    if let Some(d) = &a.keep {
        eprintln!("record files kept in {}", d.display());
    }
    Ok(())
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir> {
        let p = std::env::temp_dir().join(format!("wirelab-demo-{}", std::process::id()));
        std::fs::create_dir_all(&p).with_context(|| format!("cannot create {}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
