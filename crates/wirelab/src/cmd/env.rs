//! `wirelab env`: a host's environment snapshot, the differences between
//! two, and settings applied and reverted (wirelab_ctl::env). `local` is
//! read and changed by this process; other hosts through their agent.

use crate::error::{usage, Privilege};
use anyhow::{Context, Result};
use clap::Args;
use std::path::Path;
use wirelab_ctl::env::apply::{self, Change, EnvError};
use wirelab_ctl::env::{self as wenv, Snapshot};
use wirelab_ctl::transport::{AgentConn, Transport};

#[derive(Args, Debug)]
#[command(after_long_help = "EXAMPLES:
  wirelab env                                  this host's snapshot, key = value
  wirelab env netns:rx --json > before.json    a namespace's snapshot as JSON
  wirelab env --diff before.json netns:rx      what changed since (empty: nothing)
  wirelab env --diff ssh://lab@h1 ssh://lab@h2 two hosts side by side
  wirelab env netns:rx --apply mtu=9000 net.core.rmem_max=26214400 --if eth1
                                               prints a TOKEN
  wirelab env netns:rx --revert TOKEN          puts back exactly what TOKEN changed

SETTINGS (--apply): mtu, rings (rx and tx), rings_rx, rings_tx, coalesce_rx_usecs,
coalesce_tx_usecs, coalesce_rx_frames, coalesce_tx_frames, coalesce_adaptive_rx,
coalesce_adaptive_tx, eee (on/off), offload.FEATURE (on/off, e.g. offload.gro), and any
sysctl by its dotted name (e.g. net.core.rmem_max). Interface settings need --if.

Before changing anything, --apply reads the current values and writes them to
/run/wirelab/env/TOKEN.json; a failure part-way puts back what it had set. --revert
restores those values and removes the file. Values that cannot be read (a missing tool,
a device without the feature) appear as `unavailable: WHY`.

See docs/env.md.")]
pub struct EnvArgs {
    /// Hosts: local (default), netns:NAME, ssh://[USER@]HOST[:PORT][?netns=NAME]
    #[arg(value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Print JSON (a snapshot: wirelab.env/1, an array for several hosts; a diff:
    /// wirelab.env.diff/1)
    #[arg(long)]
    pub json: bool,
    /// Compare two snapshots; each is a host or a file saved with --json
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["hosts", "apply", "revert"])]
    pub diff: Vec<String>,
    /// Apply settings KEY=VALUE (see SETTINGS below); prints the token to revert them with
    #[arg(long, value_name = "K=V", num_args = 1.., conflicts_with = "revert")]
    pub apply: Vec<String>,
    /// The interface that interface settings (mtu, rings, coalesce_*, eee, offload.*) change
    #[arg(long = "if", value_name = "IF", requires = "apply")]
    pub iface: Option<String>,
    /// Put back what --apply changed under TOKEN (on the same host)
    #[arg(long, value_name = "TOKEN")]
    pub revert: Option<String>,
    /// The wirelab binary on ssh hosts
    #[arg(long, value_name = "PATH", default_value = "wirelab")]
    pub wirelab: String,
    /// An option for every ssh connection, e.g. --ssh-option=-i --ssh-option=KEY (repeatable)
    #[arg(long = "ssh-option", value_name = "OPT", allow_hyphen_values = true)]
    pub ssh_options: Vec<String>,
}

/// A host: this process, or an agent.
enum Host {
    Local,
    Agent(Box<AgentConn>),
}

struct Ctx<'a> {
    a: &'a EnvArgs,
}

impl Ctx<'_> {
    fn connect(&self, text: &str) -> Result<Host> {
        let t: Transport = text.parse().map_err(|e| usage(format!("{e}")))?;
        if t == Transport::Local {
            return Ok(Host::Local);
        }
        let wirelab = match t {
            Transport::Ssh { .. } => self.a.wirelab.clone(),
            _ => std::env::current_exe()
                .context("cannot find this wirelab binary")?
                .to_string_lossy()
                .into_owned(),
        };
        Ok(Host::Agent(Box::new(AgentConn::connect(
            &t,
            &wirelab,
            &self.a.ssh_options,
        )?)))
    }

    fn snapshot(&self, text: &str) -> Result<Snapshot> {
        match self.connect(text)? {
            Host::Local => Ok(wenv::read::snapshot(text)),
            Host::Agent(mut c) => {
                let s = c.env_snapshot(text)?;
                c.close()?;
                Ok(s)
            }
        }
    }

    /// Applies `settings` on a host, to stay until reverted by token.
    fn apply_on(&self, h: &str, settings: &[(String, String)]) -> Result<(String, Vec<Change>)> {
        let iface = self.a.iface.as_deref();
        match self.connect(h)? {
            Host::Local => {
                let planned = apply::plan(settings, iface).map_err(env_error)?;
                let token = apply::new_token();
                let f = apply::apply(
                    &mut apply::Local,
                    Path::new(apply::STATE_DIR),
                    &token,
                    &planned,
                )
                .map_err(env_error)
                .context("local")?;
                Ok((token, f.changes))
            }
            Host::Agent(mut c) => {
                let r = c.env_apply(settings, iface, true)?;
                c.close()?;
                Ok(r)
            }
        }
    }

    fn revert_on(&self, h: &str, token: &str) -> Result<Vec<Change>> {
        match self.connect(h)? {
            Host::Local => Ok(
                apply::revert(&mut apply::Local, Path::new(apply::STATE_DIR), token)
                    .map_err(env_error)?,
            ),
            Host::Agent(mut c) => {
                let ch = c.env_revert(token)?;
                c.close()?;
                Ok(ch)
            }
        }
    }

    /// A host's snapshot, or one saved in a file.
    fn snapshot_or_file(&self, text: &str) -> Result<Snapshot> {
        if text.parse::<Transport>().is_ok() {
            return self.snapshot(text);
        }
        let body = std::fs::read_to_string(text).map_err(|e| {
            usage(format!(
                "--diff {text}: neither a host (local, netns:NAME, ssh://HOST) nor a readable \
                 snapshot file ({e})"
            ))
        })?;
        serde_json::from_str(&body).map_err(|e| {
            usage(format!(
                "--diff {text}: not a snapshot saved with `wirelab env HOST --json` ({e})"
            ))
        })
    }
}

/// An `--apply` error as its exit code wants it: a bad setting is a usage
/// error, a refused revert file a missing privilege.
fn env_error(e: EnvError) -> anyhow::Error {
    match e {
        EnvError::Unknown(_)
        | EnvError::BadValue { .. }
        | EnvError::NeedsInterface(_)
        | EnvError::BadToken(_) => usage(e.to_string()),
        EnvError::State { .. } => anyhow::Error::new(Privilege(e.to_string())),
        e => e.into(),
    }
}

fn changes_text(changes: &[Change], back: bool) -> String {
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

pub fn run(a: EnvArgs) -> Result<()> {
    let cx = Ctx { a: &a };
    if !a.diff.is_empty() {
        let x = cx.snapshot_or_file(&a.diff[0])?;
        let y = cx.snapshot_or_file(&a.diff[1])?;
        let d = wenv::diff(&x, &y);
        if a.json {
            println!("{}", serde_json::to_string_pretty(&d)?);
        } else {
            print!("{}", d.to_text());
        }
        return Ok(());
    }
    let hosts = if a.hosts.is_empty() {
        vec!["local".to_string()]
    } else {
        a.hosts.clone()
    };
    if let Some(token) = &a.revert {
        if hosts.len() != 1 {
            return Err(usage(
                "--revert: name the one host the token was applied on",
            ));
        }
        let changes = cx.revert_on(&hosts[0], token)?;
        if a.json {
            let j = serde_json::json!({
                "schema": "wirelab.env.reverted/1",
                "host": hosts[0],
                "token": token,
                "changes": changes,
            });
            println!("{}", serde_json::to_string_pretty(&j)?);
        } else {
            print!(
                "{}: reverted {token}\n{}",
                hosts[0],
                changes_text(&changes, true)
            );
        }
        return Ok(());
    }
    if !a.apply.is_empty() {
        let mut settings = vec![];
        for s in &a.apply {
            let (k, v) = s.split_once('=').ok_or_else(|| {
                usage(format!(
                    "--apply {s}: give KEY=VALUE (hosts go before --apply)"
                ))
            })?;
            settings.push((k.trim().to_string(), v.trim().to_string()));
        }
        // Checked here first, so that a bad setting touches no host.
        apply::plan(&settings, a.iface.as_deref()).map_err(env_error)?;
        let mut out = vec![];
        let mut done: Vec<(&str, String)> = vec![];
        for h in &hosts {
            let (token, changes) = match cx.apply_on(h, &settings) {
                Ok(r) => r,
                Err(e) => {
                    // One host refused: the hosts already changed go back.
                    let mut notes = vec![];
                    for (h2, t2) in done.iter().rev() {
                        match cx.revert_on(h2, t2) {
                            Ok(_) => notes.push(format!("{h2} was put back")),
                            Err(e2) => notes.push(format!(
                                "{h2} could not be put back ({e2}): wirelab env {h2} --revert {t2}"
                            )),
                        }
                    }
                    return Err(if notes.is_empty() {
                        e
                    } else {
                        e.context(notes.join("; "))
                    });
                }
            };
            if !a.json {
                print!(
                    "{h}: applied {token} (undo: wirelab env {h} --revert {token})\n{}",
                    changes_text(&changes, false)
                );
            }
            out.push(serde_json::json!({
                "host": h,
                "token": token,
                "changes": changes,
            }));
            done.push((h, token));
        }
        if a.json {
            let j = serde_json::json!({ "schema": "wirelab.env.applied/1", "hosts": out });
            println!("{}", serde_json::to_string_pretty(&j)?);
        }
        return Ok(());
    }
    let mut snaps = vec![];
    for h in &hosts {
        snaps.push(cx.snapshot(h)?);
    }
    if a.json {
        let text = if snaps.len() == 1 {
            serde_json::to_string_pretty(&snaps[0])?
        } else {
            serde_json::to_string_pretty(&snaps)?
        };
        println!("{text}");
    } else {
        for (i, s) in snaps.iter().enumerate() {
            if i > 0 {
                println!();
            }
            println!("# {}", s.host);
            print!("{}", s.to_text());
        }
    }
    Ok(())
}
