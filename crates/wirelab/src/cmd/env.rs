//! `wirelab env`: a host's environment snapshot, the differences between
//! two, and settings applied and reverted (wirelab_agent::hosts). `local`
//! is read and changed by this process; other hosts through their agent.

use crate::error::{usage, Privilege};
use anyhow::Result;
use wirelab_agent::hosts::{self, HostError, Hosts};
use wirelab_cli::env::EnvArgs;
use wirelab_host::env::apply::EnvError;

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
        let d = wirelab_host::env::diff(&x, &y);
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
