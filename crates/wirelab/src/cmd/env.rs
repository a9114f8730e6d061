//! `wirelab env`: a host's environment snapshot, the differences between
//! two, and settings applied and reverted (wirelab_ctl::env::hosts). `local`
//! is read and changed by this process; other hosts through their agent.

use crate::error::{usage, Privilege};
use anyhow::Result;
use clap::Args;
use wirelab_ctl::env::apply::EnvError;
use wirelab_ctl::env::hosts::{self, HostError, Hosts};

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

/// A host's error with its exit code: a bad host or `--diff` file is a
/// usage error; settings as [`env_error`] says.
fn host_error(e: HostError) -> anyhow::Error {
    match e {
        HostError::BadHost(_)
        | HostError::NotASnapshotFile { .. }
        | HostError::NotASnapshot { .. } => usage(e.to_string()),
        HostError::Env(e) => env_error(e),
        HostError::LocalApply(e) => env_error(e).context("local"),
        HostError::RolledBack { notes, source } => host_error(*source).context(notes),
        e => e.into(),
    }
}

pub fn run(a: EnvArgs) -> Result<()> {
    let h = Hosts {
        wirelab: a.wirelab.clone(),
        ssh_options: a.ssh_options.clone(),
    };
    if let [x, y] = a.diff.as_slice() {
        let x = h.snapshot_or_file(x).map_err(host_error)?;
        let y = h.snapshot_or_file(y).map_err(host_error)?;
        let d = wirelab_ctl::env::diff(&x, &y);
        if a.json {
            println!("{}", serde_json::to_string_pretty(&d)?);
        } else {
            print!("{}", d.to_text());
        }
        return Ok(());
    }
    let names = if a.hosts.is_empty() {
        vec!["local".to_string()]
    } else {
        a.hosts.clone()
    };
    if let Some(token) = &a.revert {
        let [host] = names.as_slice() else {
            return Err(usage(
                "--revert: name the one host the token was applied on",
            ));
        };
        let changes = h.revert(host, token).map_err(host_error)?;
        if a.json {
            let j = hosts::reverted_json(host, token, &changes);
            println!("{}", serde_json::to_string_pretty(&j)?);
        } else {
            print!("{}", hosts::reverted_text(host, token, &changes));
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
        let iface = a.iface.as_deref();
        let done = h
            .apply_all(&names, &settings, iface, &mut |d| {
                if !a.json {
                    print!("{}", d.text());
                }
            })
            .map_err(host_error)?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&hosts::applied_json(&done))?
            );
        }
        return Ok(());
    }
    let mut snaps = vec![];
    for host in &names {
        snaps.push(h.snapshot(host).map_err(host_error)?);
    }
    if a.json {
        println!("{}", hosts::snapshots_json(&snaps)?);
    } else {
        print!("{}", hosts::snapshots_text(&snaps));
    }
    Ok(())
}
