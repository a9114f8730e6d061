//! `wirelab env`'s hosts: `local` is read and changed by this process,
//! other hosts through their agent ([`crate::transport`]). A snapshot (or
//! one saved in a file), settings applied on several hosts in turn (when
//! one refuses, those already changed are put back), a revert by token;
//! and the text and JSON of what was done.

use crate::transport::{AgentConn, Transport, TransportError};
use std::path::Path;
use thiserror::Error;
use wirelab_host::env::apply::{self, Change, EnvError};
use wirelab_host::env::{read, Snapshot};

#[derive(Debug, Error)]
pub enum HostError {
    /// Not a host: `local`, `netns:NAME`, `ssh://…`.
    #[error(transparent)]
    BadHost(TransportError),
    #[error("cannot find this wirelab binary")]
    NoBinary(#[source] std::io::Error),
    /// The agent could not be started or reached, or refused.
    #[error(transparent)]
    Agent(TransportError),
    /// A setting, a token or the revert file refused on this host.
    #[error(transparent)]
    Env(EnvError),
    /// An application refused on this host.
    #[error("local")]
    LocalApply(#[source] EnvError),
    #[error(
        "--diff {text}: neither a host (local, netns:NAME, ssh://HOST) nor a readable \
         snapshot file ({cause})"
    )]
    NotASnapshotFile { text: String, cause: std::io::Error },
    #[error("--diff {text}: not a snapshot saved with `wirelab env HOST --json` ({cause})")]
    NotASnapshot {
        text: String,
        cause: serde_json::Error,
    },
    /// A host refused an application after others took it: what became
    /// of those (`notes`), and the refusal.
    #[error("{notes}")]
    RolledBack {
        notes: String,
        #[source]
        source: Box<HostError>,
    },
}

/// How agents are started.
#[derive(Debug, Clone)]
pub struct Hosts {
    /// The wirelab binary on ssh hosts (namespaces run this binary).
    pub wirelab: String,
    pub ssh_options: Vec<String>,
}

/// A host: this process, or an agent.
enum Host {
    Local,
    Agent(Box<AgentConn>),
}

/// Settings applied on a host, to stay until reverted by `token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub host: String,
    pub token: String,
    pub changes: Vec<Change>,
}

impl Applied {
    /// `HOST: applied TOKEN (undo: …)` and a line per change.
    pub fn text(&self) -> String {
        let (h, t) = (&self.host, &self.token);
        format!(
            "{h}: applied {t} (undo: wirelab env {h} --revert {t})\n{}",
            changes_text(&self.changes, false)
        )
    }
}

impl Hosts {
    fn connect(&self, text: &str) -> Result<Host, HostError> {
        let t: Transport = text.parse().map_err(HostError::BadHost)?;
        if t == Transport::Local {
            return Ok(Host::Local);
        }
        let wirelab = match t {
            Transport::Ssh { .. } => self.wirelab.clone(),
            _ => std::env::current_exe()
                .map_err(HostError::NoBinary)?
                .to_string_lossy()
                .into_owned(),
        };
        let c = AgentConn::connect(&t, &wirelab, &self.ssh_options).map_err(HostError::Agent)?;
        Ok(Host::Agent(Box::new(c)))
    }

    /// A host's snapshot.
    pub fn snapshot(&self, host: &str) -> Result<Snapshot, HostError> {
        match self.connect(host)? {
            Host::Local => Ok(read::snapshot(host)),
            Host::Agent(mut c) => {
                let s = c.env_snapshot(host).map_err(HostError::Agent)?;
                c.close().map_err(HostError::Agent)?;
                Ok(s)
            }
        }
    }

    /// A host's snapshot, or one saved in a file (`--diff`).
    pub fn snapshot_or_file(&self, text: &str) -> Result<Snapshot, HostError> {
        if text.parse::<Transport>().is_ok() {
            return self.snapshot(text);
        }
        let body = std::fs::read_to_string(text).map_err(|source| HostError::NotASnapshotFile {
            text: text.to_string(),
            cause: source,
        })?;
        serde_json::from_str(&body).map_err(|source| HostError::NotASnapshot {
            text: text.to_string(),
            cause: source,
        })
    }

    /// Applies `settings` on `host`, to stay until reverted by token.
    pub fn apply(
        &self,
        host: &str,
        settings: &[(String, String)],
        iface: Option<&str>,
    ) -> Result<Applied, HostError> {
        let (token, changes) = match self.connect(host)? {
            Host::Local => {
                let planned = apply::plan(settings, iface).map_err(HostError::Env)?;
                let token = apply::new_token();
                let dir = Path::new(apply::STATE_DIR);
                let f = apply::apply(&mut apply::Local, dir, &token, &planned)
                    .map_err(HostError::LocalApply)?;
                (token, f.changes)
            }
            Host::Agent(mut c) => {
                let r = c
                    .env_apply(settings, iface, true)
                    .map_err(HostError::Agent)?;
                c.close().map_err(HostError::Agent)?;
                r
            }
        };
        Ok(Applied {
            host: host.to_string(),
            token,
            changes,
        })
    }

    /// Puts back what `token` changed on `host`.
    pub fn revert(&self, host: &str, token: &str) -> Result<Vec<Change>, HostError> {
        match self.connect(host)? {
            Host::Local => apply::revert(&mut apply::Local, Path::new(apply::STATE_DIR), token)
                .map_err(HostError::Env),
            Host::Agent(mut c) => {
                let ch = c.env_revert(token).map_err(HostError::Agent)?;
                c.close().map_err(HostError::Agent)?;
                Ok(ch)
            }
        }
    }

    /// Applies `settings` on every host in turn (checked first, so that a
    /// bad setting touches no host); `done` hears each host as it is
    /// changed. See [`apply_in_turn`].
    pub fn apply_all(
        &self,
        hosts: &[String],
        settings: &[(String, String)],
        iface: Option<&str>,
        done: &mut dyn FnMut(&Applied),
    ) -> Result<Vec<Applied>, HostError> {
        apply::plan(settings, iface).map_err(HostError::Env)?;
        apply_in_turn(
            hosts,
            |h| self.apply(h, settings, iface),
            |h, t| self.revert(h, t).map(|_| ()),
            done,
        )
    }
}

/// Applies on each host in turn with `apply`; when one refuses, the hosts
/// already changed are put back with `revert` (last first) and the error
/// says what became of each ([`HostError::RolledBack`]).
pub fn apply_in_turn(
    hosts: &[String],
    mut apply: impl FnMut(&str) -> Result<Applied, HostError>,
    mut revert: impl FnMut(&str, &str) -> Result<(), HostError>,
    done: &mut dyn FnMut(&Applied),
) -> Result<Vec<Applied>, HostError> {
    let mut out: Vec<Applied> = vec![];
    for h in hosts {
        match apply(h) {
            Ok(a) => {
                done(&a);
                out.push(a);
            }
            Err(e) => {
                let mut notes = vec![];
                for a in out.iter().rev() {
                    let (h2, t2) = (&a.host, &a.token);
                    match revert(h2, t2) {
                        Ok(()) => notes.push(format!("{h2} was put back")),
                        Err(e2) => notes.push(format!(
                            "{h2} could not be put back ({e2}): wirelab env {h2} --revert {t2}"
                        )),
                    }
                }
                if notes.is_empty() {
                    return Err(e);
                }
                return Err(HostError::RolledBack {
                    notes: notes.join("; "),
                    source: Box::new(e),
                });
            }
        }
    }
    Ok(out)
}

/// `  TARGET: FROM -> TO` per change (`back`: as a revert moves it).
pub fn changes_text(changes: &[Change], back: bool) -> String {
    let mut s = String::new();
    for c in changes {
        let (from, to) = if back {
            (&c.value, &c.previous)
        } else {
            (&c.previous, &c.value)
        };
        s.push_str(&format!("  {}: {from} -> {to}\n", c.target));
    }
    s
}

/// `wirelab.env.applied/1`.
pub fn applied_json(applied: &[Applied]) -> serde_json::Value {
    let hosts: Vec<serde_json::Value> = applied
        .iter()
        .map(|a| serde_json::json!({ "host": a.host, "token": a.token, "changes": a.changes }))
        .collect();
    serde_json::json!({ "schema": "wirelab.env.applied/1", "hosts": hosts })
}

/// `HOST: reverted TOKEN` and a line per change put back.
pub fn reverted_text(host: &str, token: &str, changes: &[Change]) -> String {
    format!("{host}: reverted {token}\n{}", changes_text(changes, true))
}

/// `wirelab.env.reverted/1`.
pub fn reverted_json(host: &str, token: &str, changes: &[Change]) -> serde_json::Value {
    serde_json::json!({
        "schema": "wirelab.env.reverted/1",
        "host": host,
        "token": token,
        "changes": changes,
    })
}

/// Snapshots as text: `# HOST`, then `key = value` lines; a blank line
/// between hosts.
pub fn snapshots_text(snaps: &[Snapshot]) -> String {
    let blocks: Vec<String> = snaps
        .iter()
        .map(|s| format!("# {}\n{}", s.host, s.to_text()))
        .collect();
    blocks.join("\n")
}

/// Snapshots as JSON: one document, or an array of several.
pub fn snapshots_json(snaps: &[Snapshot]) -> Result<String, serde_json::Error> {
    match snaps {
        [one] => serde_json::to_string_pretty(one),
        all => serde_json::to_string_pretty(all),
    }
}

#[cfg(test)]
mod tests;
