//! An sshd for tests: on 127.0.0.1, a free port, generated host and user
//! keys, root login by key only; stopped (with the client's control
//! master) on drop.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirelab_agent::transport::Transport;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|a| a.to_string()).collect()
}

/// An sshd on 127.0.0.1 with a generated host key, accepting one generated
/// user key for root; stopped, with the client's control master, on drop.
pub struct Sshd {
    pub dir: PathBuf,
    pub port: u16,
    proc: Child,
}

impl Sshd {
    pub fn start(dir: &Path) -> Sshd {
        let keygen = |name: &str| {
            super::run(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
                    .arg(dir.join(name)),
            );
        };
        keygen("host");
        keygen("user");
        keygen("stranger");
        std::fs::copy(dir.join("user.pub"), dir.join("authorized_keys")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let host_pub = std::fs::read_to_string(dir.join("host.pub")).unwrap();
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {host_pub}"),
        )
        .unwrap();
        let cfg = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\n",
            d = dir.display()
        );
        std::fs::write(dir.join("sshd_config"), cfg).unwrap();
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
        let mut proc = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stderr(log)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(st)) = proc.try_wait() {
                panic!(
                    "sshd exited ({st}): {}",
                    std::fs::read_to_string(dir.join("sshd.log")).unwrap()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sshd did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Sshd {
            dir: dir.to_path_buf(),
            port,
            proc,
        }
    }

    /// [`Sshd::opts`] as `wirelab run` arguments (`--ssh-option=…`).
    pub fn run_opts(&self, key: &str) -> Vec<String> {
        self.opts(key)
            .into_iter()
            .map(|o| format!("--ssh-option={o}"))
            .collect()
    }

    /// ssh options for this server with `key`; the control socket in the
    /// scratch directory (the key of a multiplexed session is the master's,
    /// so another key needs a connection of its own: ControlPath=none).
    pub fn opts(&self, key: &str) -> Vec<String> {
        let d = self.dir.display();
        let control = if key == "user" {
            format!("ControlPath={d}/cm-%C")
        } else {
            "ControlPath=none".into()
        };
        s(&[
            "-F",
            "/dev/null",
            "-i",
            &format!("{d}/{key}"),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            &format!("UserKnownHostsFile={d}/known_hosts"),
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            &control,
        ])
    }

    pub fn transport(&self, netns: Option<&str>) -> Transport {
        let q = netns.map(|n| format!("?netns={n}")).unwrap_or_default();
        format!("ssh://root@127.0.0.1:{}{q}", self.port)
            .parse()
            .unwrap()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = Command::new("ssh")
            .args(self.opts("user"))
            .args(["-p", &self.port.to_string(), "-O", "exit", "root@127.0.0.1"])
            .stderr(Stdio::null())
            .status();
        let _ = self.proc.kill();
        let _ = self.proc.wait();
    }
}

/// Whether an sshd can be started; a skip through
/// [`wirelab_testkit::skip`] when not.
#[track_caller]
pub fn have_sshd() -> bool {
    if Path::new("/usr/sbin/sshd").exists() {
        return true;
    }
    wirelab_testkit::skip("needs /usr/sbin/sshd (scripts/install-deps.sh installs openssh-server)");
    false
}
