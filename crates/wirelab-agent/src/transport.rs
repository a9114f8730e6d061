//! The controller's side of an agent: how to start `wirelab agent --stdio`
//! on a host ([`Transport`]) and a connection speaking [`crate::proto`] to
//! it ([`AgentConn`]).
//!
//! | transport | command |
//! |---|---|
//! | `local` | `WIRELAB agent --stdio` |
//! | `netns:NAME` | `ip netns exec NAME WIRELAB agent --stdio` |
//! | `ssh://[USER@]HOST[:PORT][?netns=NAME]` | `ssh [OPTS] -o BatchMode=yes -o ControlMaster=auto -o ControlPath=~/.ssh/wirelab-%C -o ControlPersist=60s [-p PORT] [USER@]HOST -- exec [ip netns exec NAME] WIRELAB agent --stdio` |
//!
//! The caller's ssh options come first: ssh keeps the first value it is
//! given for an option, so they override the defaults (e.g. a
//! `ControlPath`). The agent runs in a process group of its own, so a
//! Ctrl-C at the controller's terminal reaches only the controller, which
//! then stops the agents in order.
//!
//! The agent's stderr (and ssh's or ip's messages) goes line by line to a
//! [`LogSink`], by default the controller's stderr prefixed with the
//! transport (`ssh://lab@h1: …`); its last lines are kept for error
//! messages.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
pub use wirelab_jobs::AgentJob;

mod conn;
pub use conn::{AgentConn, RemoteChild};

/// Default time an agent has to answer a request (a `wait` gets its own
/// timeout on top).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How to reach a host's agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process on this machine.
    Local,
    /// A child process in the named network namespace on this machine.
    Netns(String),
    /// Over OpenSSH, optionally in a network namespace there.
    Ssh {
        /// `user@host` or `host`.
        dest: String,
        port: Option<u16>,
        netns: Option<String>,
    },
}

/// What went wrong reaching or using an agent; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("bad transport {text:?}: {why}; expected local, netns:NAME or ssh://[USER@]HOST[:PORT][?netns=NAME]")]
    Parse { text: String, why: String },
    #[error("cannot run `{program}` ({cause}): install {package} (apt-get install {package})")]
    MissingTool {
        program: &'static str,
        package: &'static str,
        cause: io::Error,
    },
    #[error("cannot start the agent for {host}: {cause}")]
    Spawn { host: String, cause: io::Error },
    #[error("cannot reach {host} over ssh: {stderr}")]
    Ssh { host: String, stderr: String },
    #[error("no wirelab at {wirelab:?} on {host} ({stderr}): install wirelab there, or set `wirelab = \"/path/to/wirelab\"` for the host")]
    AgentNotFound {
        host: String,
        wirelab: String,
        stderr: String,
    },
    #[error("the wirelab on {host} has no `agent` subcommand (an older version: {stderr}): install the same wirelab version on {host}, or set `wirelab = \"/path/to/wirelab\"` for the host to a matching one")]
    NoAgentCommand { host: String, stderr: String },
    #[error("the agent on {host} {what} before it said hello: {stderr}")]
    NoHello {
        host: String,
        what: String,
        stderr: String,
    },
    #[error("the agent on {host} speaks protocol {theirs} (wirelab {their_version}), this controller protocol {ours} (wirelab {our_version}): install the same wirelab version on {host}, or set `wirelab = \"/path/to/wirelab\"` for the host to a matching one")]
    VersionMismatch {
        host: String,
        ours: u32,
        our_version: String,
        theirs: u64,
        their_version: String,
    },
    #[error("the agent on {host} did not answer `{op}` within {after:?}: the agent or its connection hangs")]
    Timeout {
        host: String,
        op: &'static str,
        after: Duration,
    },
    #[error("lost the agent on {host} ({what}){}", tail_suffix(.stderr))]
    Lost {
        host: String,
        what: String,
        stderr: String,
    },
    #[error("the agent on {host} refused `{op}`: {message}")]
    Agent {
        host: String,
        op: &'static str,
        message: String,
    },
    #[error("the wirelab {version} on {host} does not serve `{op}`: install wirelab {ours} or later there, or set `wirelab = \"/path/to/wirelab\"` for the host to one that does")]
    Unsupported {
        host: String,
        op: &'static str,
        version: String,
        ours: &'static str,
    },
    #[error("{path} is not in the workdir of the agent on {host}")]
    NotFound { host: String, path: String },
    #[error("the agent on {host} broke the protocol: {what}")]
    Protocol { host: String, what: String },
    #[error("cannot write {}: {cause}", .path.display())]
    Local { path: PathBuf, cause: io::Error },
    #[error("the agent on {host} (wirelab {theirs}) does not serve `{op}`: install wirelab {ours} on {host}, or set `wirelab = \"/path/to/wirelab\"` for the host to that version")]
    Missing {
        host: String,
        op: &'static str,
        theirs: String,
        ours: String,
    },
}

fn tail_suffix(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(": {s}")
    }
}

/// Where the agent's stderr lines go.
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How to connect, beyond the transport.
#[derive(Clone)]
pub struct ConnectOptions {
    /// The wirelab binary on that host (a path, or a name looked up in its
    /// PATH).
    pub wirelab: String,
    /// Extra ssh arguments, placed before the defaults (ssh transport only).
    pub ssh_opts: Vec<String>,
    /// The agent's own settings: its work directory (default: one it
    /// creates and removes), a test clock offset.
    pub agent: AgentJob,
    /// Time the agent has for hello and for each answer.
    pub timeout: Duration,
    /// Where the agent's stderr lines go (default: the controller's stderr,
    /// prefixed with the transport).
    pub log: Option<LogSink>,
}

impl Default for ConnectOptions {
    fn default() -> ConnectOptions {
        ConnectOptions {
            wirelab: "wirelab".into(),
            ssh_opts: Vec::new(),
            agent: AgentJob::default(),
            timeout: DEFAULT_TIMEOUT,
            log: None,
        }
    }
}

fn parse_err(text: &str, why: impl Into<String>) -> TransportError {
    TransportError::Parse {
        text: text.into(),
        why: why.into(),
    }
}

/// A namespace name as `ip netns` takes it.
fn check_netns(text: &str, name: &str) -> Result<(), TransportError> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(parse_err(
            text,
            format!("namespace name {name:?} must be letters, digits, '.', '_' or '-'"),
        ))
    }
}

impl FromStr for Transport {
    type Err = TransportError;

    fn from_str(s: &str) -> Result<Transport, TransportError> {
        if s == "local" {
            return Ok(Transport::Local);
        }
        if let Some(name) = s.strip_prefix("netns:") {
            check_netns(s, name)?;
            return Ok(Transport::Netns(name.into()));
        }
        let Some(rest) = s.strip_prefix("ssh://") else {
            return Err(parse_err(s, "unknown kind"));
        };
        let (auth, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let netns = match query {
            None => None,
            Some(q) => match q.strip_prefix("netns=") {
                Some(n) => {
                    check_netns(s, n)?;
                    Some(n.to_string())
                }
                None => {
                    return Err(parse_err(
                        s,
                        format!("unknown query {q:?} (only netns=NAME)"),
                    ))
                }
            },
        };
        let (user, hostport) = match auth.split_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, auth),
        };
        if let Some(u) = user {
            let ok = !u.is_empty()
                && !u.starts_with('-')
                && u.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !ok {
                return Err(parse_err(s, format!("bad user name {u:?}")));
            }
        }
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| parse_err(s, "missing ']' after an IPv6 address"))?;
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(parse_err(s, format!("bad IPv6 address {h:?}")));
            }
            match after {
                "" => (h, None),
                p => (
                    h,
                    Some(p.strip_prefix(':').ok_or_else(|| {
                        parse_err(s, format!("unexpected {p:?} after the address"))
                    })?),
                ),
            }
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let bracketed = hostport.starts_with('[');
        let host_ok = !host.is_empty()
            && !host.starts_with('-')
            && (bracketed
                || host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
        if !host_ok {
            return Err(parse_err(s, format!("bad host name {host:?}")));
        }
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(parse_err(s, format!("bad port {p:?} (1 to 65535)"))),
            },
        };
        let dest = match user {
            Some(u) => format!("{u}@{host}"),
            None => host.to_string(),
        };
        Ok(Transport::Ssh { dest, port, netns })
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Local => f.write_str("local"),
            Transport::Netns(n) => write!(f, "netns:{n}"),
            Transport::Ssh { dest, port, netns } => {
                let (user, host) = match dest.split_once('@') {
                    Some((u, h)) => (Some(u), h),
                    None => (None, dest.as_str()),
                };
                f.write_str("ssh://")?;
                if let Some(u) = user {
                    write!(f, "{u}@")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]")?;
                } else {
                    f.write_str(host)?;
                }
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                if let Some(n) = netns {
                    write!(f, "?netns={n}")?;
                }
                Ok(())
            }
        }
    }
}

/// `s` quoted for a POSIX shell (as-is when it needs no quoting).
fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-=:,+@%".contains(&b));
    if plain {
        s.into()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Transport {
    /// The command that starts the agent (see the module's table).
    pub fn command(&self, wirelab: &str, job: &AgentJob, ssh_opts: &[String]) -> Command {
        let argv = job.argv();
        let agent: Vec<&str> = std::iter::once(wirelab)
            .chain(argv.iter().map(String::as_str))
            .collect();
        match self {
            Transport::Local => {
                let mut c = Command::new(wirelab);
                c.args(&agent[1..]);
                c
            }
            Transport::Netns(n) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", n]).args(&agent);
                c
            }
            Transport::Ssh { dest, port, netns } => {
                let mut c = Command::new("ssh");
                c.args(ssh_opts).args([
                    "-o",
                    "BatchMode=yes",
                    "-o",
                    "ControlMaster=auto",
                    "-o",
                    "ControlPath=~/.ssh/wirelab-%C",
                    "-o",
                    "ControlPersist=60s",
                ]);
                if let Some(p) = port {
                    c.arg("-p").arg(p.to_string());
                }
                let mut remote = vec!["exec"];
                if let Some(n) = netns {
                    remote.extend(["ip", "netns", "exec", n]);
                }
                remote.extend(agent);
                let remote: Vec<String> = remote.iter().map(|a| sh_quote(a)).collect();
                c.arg(dest).arg("--").arg(remote.join(" "));
                c
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn transports_parse_and_print_back() {
        for (text, t) in [
            ("local", Transport::Local),
            ("netns:wl-1-emu", Transport::Netns("wl-1-emu".into())),
            (
                "ssh://lab@h1",
                Transport::Ssh {
                    dest: "lab@h1".into(),
                    port: None,
                    netns: None,
                },
            ),
            (
                "ssh://h1.example.org:2222?netns=emu",
                Transport::Ssh {
                    dest: "h1.example.org".into(),
                    port: Some(2222),
                    netns: Some("emu".into()),
                },
            ),
            (
                "ssh://root@[fd00::1]:22",
                Transport::Ssh {
                    dest: "root@fd00::1".into(),
                    port: Some(22),
                    netns: None,
                },
            ),
        ] {
            assert_eq!(text.parse::<Transport>().unwrap(), t, "{text}");
            assert_eq!(t.to_string(), text);
        }
        for bad in [
            "",
            "remote",
            "netns:",
            "netns:a/b",
            "netns:..",
            "ssh://",
            "ssh://-oProxyCommand=x",
            "ssh://u@-h",
            "ssh://@h",
            "ssh://h:0",
            "ssh://h:99999",
            "ssh://h:x",
            "ssh://h?ns=x",
            "ssh://h?netns=",
            "ssh://[fd00::1",
            "ssh://[nope]:22",
            "ssh://h h",
            "ssh://h;rm",
        ] {
            let e = bad.parse::<Transport>().unwrap_err().to_string();
            assert!(e.contains("expected local, netns:NAME"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn commands_match_the_documented_ones() {
        let c = Transport::Local.command("/opt/wl/wirelab", &AgentJob::default(), &[]);
        assert_eq!(args(&c), ["/opt/wl/wirelab", "agent", "--stdio"]);
        let c = Transport::Netns("emu".into()).command(
            "wirelab",
            &AgentJob {
                workdir: Some("/tmp/w".into()),
                ..AgentJob::default()
            },
            &[],
        );
        assert_eq!(
            args(&c),
            [
                "ip",
                "netns",
                "exec",
                "emu",
                "wirelab",
                "agent",
                "--stdio",
                "--workdir",
                "/tmp/w"
            ]
        );
        let t: Transport = "ssh://lab@h1:2222?netns=emu".parse().unwrap();
        let c = t.command(
            "/home/lab/my bin/wirelab",
            &AgentJob::default(),
            &["-i".into(), "k".into()],
        );
        assert_eq!(
            args(&c),
            [
                "ssh",
                "-i",
                "k",
                "-o",
                "BatchMode=yes",
                "-o",
                "ControlMaster=auto",
                "-o",
                "ControlPath=~/.ssh/wirelab-%C",
                "-o",
                "ControlPersist=60s",
                "-p",
                "2222",
                "lab@h1",
                "--",
                "exec ip netns exec emu '/home/lab/my bin/wirelab' agent --stdio",
            ]
        );
    }

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(sh_quote("a/b-c"), "a/b-c");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote("$(x)"), "'$(x)'");
    }
}
