//! `wirelab demo`: a complete lab run on one machine.
//!
//! As root: two network namespaces joined by a veth pair, a receiver in
//! one, a sender with exponential intervals in the other, an analysis of
//! both record files, and the namespaces removed again (also on error or
//! Ctrl-C). Without root: the same processes over loopback.

use crate::cli::DemoArgs;
use crate::error::is_root;
use crate::values;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ADDR_SEND: &str = "198.18.0.1";
const ADDR_RECV: &str = "198.18.0.2";

/// Network namespaces and the veth pair of one demo; removed on drop.
pub struct Lab {
    pub send_ns: String,
    pub recv_ns: String,
}

impl Lab {
    pub fn create(tag: &str) -> Result<Lab> {
        let lab = Lab {
            send_ns: format!("wl-{tag}-s"),
            recv_ns: format!("wl-{tag}-r"),
        };
        let va = format!("wl{tag}a");
        let vb = format!("wl{tag}b");
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", &lab.send_ns],
            vec!["netns", "add", &lab.recv_ns],
            vec!["link", "add", &va, "type", "veth", "peer", "name", &vb],
            vec!["link", "set", &va, "netns", &lab.send_ns],
            vec!["link", "set", &vb, "netns", &lab.recv_ns],
            vec![
                "-n",
                &lab.send_ns,
                "addr",
                "add",
                "198.18.0.1/24",
                "dev",
                &va,
            ],
            vec![
                "-n",
                &lab.recv_ns,
                "addr",
                "add",
                "198.18.0.2/24",
                "dev",
                &vb,
            ],
            vec!["-n", &lab.send_ns, "link", "set", &va, "up"],
            vec!["-n", &lab.recv_ns, "link", "set", &vb, "up"],
            vec!["-n", &lab.send_ns, "link", "set", "lo", "up"],
            vec!["-n", &lab.recv_ns, "link", "set", "lo", "up"],
        ];
        for s in steps {
            let out = Command::new("ip")
                .args(&s)
                .output()
                .context("cannot run `ip`: install iproute2 (apt-get install iproute2)")?;
            if !out.status.success() {
                bail!(
                    "`ip {}` failed: {}",
                    s.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        Ok(lab)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and its peer.
        for ns in [&self.send_ns, &self.recv_ns] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Waits until a UDP socket is bound to `port` (seen in /proc/net/udp*,
/// read inside `ns` when given).
fn wait_listening(ns: Option<&str>, port: u16, timeout: Duration) -> Result<()> {
    let hex = format!(":{port:04X} ");
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args([
                    "netns",
                    "exec",
                    ns,
                    "cat",
                    "/proc/net/udp",
                    "/proc/net/udp6",
                ]);
                c
            }
            None => {
                let mut c = Command::new("cat");
                c.args(["/proc/net/udp", "/proc/net/udp6"]);
                c
            }
        };
        if let Ok(out) = cmd.stderr(Stdio::null()).output() {
            if String::from_utf8_lossy(&out.stdout).contains(&hex) {
                return Ok(());
            }
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

fn in_ns(ns: Option<&str>, exe: &Path) -> Command {
    match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(exe);
            c
        }
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
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.as_arc())?;
    }
    let lab = if use_ns {
        let tag = format!("{}", std::process::id() % 100_000);
        Some(Lab::create(&tag).context("cannot build the namespace lab (try --loopback)")?)
    } else {
        None
    };
    let (send_ns, recv_ns) = match &lab {
        Some(l) => (Some(l.send_ns.as_str()), Some(l.recv_ns.as_str())),
        None => (None, None),
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
            l.send_ns, l.recv_ns
        ),
        None => eprintln!("lab: loopback, port {port}"),
    }
    let timeout_s = dur_ns / 1_000_000_000 + 15;
    let mut rx = in_ns(recv_ns, &exe)
        .args(["recv", "-4", "--quiet", "--json", "--port"])
        .arg(port.to_string())
        .args(["--idle-timeout", "5s", "--timeout"])
        .arg(format!("{timeout_s}s"))
        .arg("--record")
        .arg(&rx_file)
        .stdout(Stdio::null())
        .spawn()
        .context("cannot start the receiver")?;
    if let Err(e) = wait_listening(recv_ns, port, Duration::from_secs(5)) {
        let _ = rx.kill();
        let _ = rx.wait();
        return Err(e);
    }
    eprintln!(
        "running: wirelab send {target} --interval {} --size {} --duration {}",
        a.interval, a.size, a.duration
    );
    let tx_status = in_ns(send_ns, &exe)
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
