//! A campaign's environment: every host's snapshot and the differences
//! between hosts in the bundle (`env/<host>.json`, `env/diff.json` with the
//! warnings), and `[env] apply` set before the first point and reverted
//! after the last. An agent reverts what it applied when its connection
//! ends, so a controller that dies leaves nothing changed either.

use super::{bundle_io, Event, Hosts, RunError};
use crate::bundle;
use crate::control::Control;
use serde::Serialize;
use std::path::Path;
use thiserror::Error;
use wirelab_agent::transport::TransportError;
use wirelab_analysis::schema::host::RunEnv;
use wirelab_host::env::{self, apply::Change, Snapshot};

/// Schema of `env/diff.json`.
pub use wirelab_analysis::schema::host::RUN_ENV_SCHEMA as ENV_SCHEMA;

/// Settings applied on a host for the campaign.
pub(super) struct Applied {
    host: String,
    token: String,
}

#[derive(Serialize)]
struct AppliedFile<'a> {
    host: &'a str,
    token: &'a str,
    changes: &'a [Change],
}

/// `[env] apply` of `host` as settings, and the interface they change.
fn settings(c: &Control, hosts: &Hosts, host: &str) -> (Vec<(String, String)>, Option<String>) {
    let s = c.env.as_ref().and_then(|e| e.apply.get(host));
    let s = s
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
        .unwrap_or_default();
    let iface = c.hosts[host]
        .test_if
        .as_deref()
        .map(|i| hosts.ifname(host, i));
    (s, iface)
}

/// Hosts whose control interface is their test interface.
pub fn shared_interface_warnings(c: &Control) -> Vec<String> {
    c.hosts
        .iter()
        .filter_map(|(name, h)| match (&h.control_if, &h.test_if) {
            (Some(ci), Some(ti)) if ci == ti => Some(format!(
                "host {name}: control_if and test_if are both {ti}: control traffic shares the \
                 test interface and may disturb the results"
            )),
            _ => None,
        })
        .collect()
}

/// What can be checked before anything starts: a host name that would
/// clash with `env/diff.json`, and `[env] apply` settings (interface
/// settings need the host's `test_if`).
pub(super) fn check(c: &Control) -> Result<(), RunError> {
    if c.hosts.contains_key("diff") {
        return Err(RunError::Setup(
            "a host named diff would overwrite env/diff.json in the bundle: rename it".into(),
        ));
    }
    for (host, s) in c.env.iter().flat_map(|e| &e.apply) {
        let s: Vec<(String, String)> = s.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
        env::apply::plan(&s, c.hosts[host].test_if.as_deref())
            .map_err(|e| RunError::Setup(format!("[env] apply.{host}: {e}")))?;
    }
    Ok(())
}

/// Snapshots and diffs into `dir/env/`, then applies `[env] apply`.
pub(super) fn start(
    c: &Control,
    hosts: &mut Hosts,
    dir: &Path,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Vec<Applied>, RunError> {
    let edir = dir.join("env");
    std::fs::create_dir_all(&edir).map_err(|e| bundle_io(&edir, e))?;
    let mut snaps: Vec<Snapshot> = vec![];
    for name in c.hosts.keys() {
        let a = hosts.get(name)?;
        if let Err(e) = a.require("env") {
            on(Event::Note(format!("no environment snapshot: {e}")));
            continue;
        }
        let s = a.env_snapshot(name).map_err(|source| RunError::Agent {
            host: name.clone(),
            cause: source,
        })?;
        write_json(&edir.join(format!("{name}.json")), &s)?;
        snaps.push(s);
    }
    let warnings = shared_interface_warnings(c);
    for w in &warnings {
        on(Event::Warning(w.clone()));
    }
    let mut applied: Vec<(Applied, Vec<Change>)> = vec![];
    for host in c.env.iter().flat_map(|e| e.apply.keys()) {
        let (s, iface) = settings(c, hosts, host);
        let res = hosts.get(host).and_then(|a| {
            a.env_apply(&s, iface.as_deref(), false)
                .map_err(|source| RunError::Agent {
                    host: host.clone(),
                    cause: source,
                })
        });
        match res {
            Ok((token, changes)) => {
                for ch in &changes {
                    on(Event::Note(format!(
                        "host {host}: {} {} -> {}",
                        ch.target, ch.previous, ch.value
                    )));
                }
                applied.push((
                    Applied {
                        host: host.clone(),
                        token,
                    },
                    changes,
                ));
            }
            Err(e) => {
                let done: Vec<Applied> = applied.into_iter().map(|(a, _)| a).collect();
                if let Err(why) = finish(hosts, &done) {
                    on(Event::Warning(why.to_string()));
                }
                return Err(e);
            }
        }
    }
    let mut pairs = vec![];
    for (i, a) in snaps.iter().enumerate() {
        for b in &snaps[i + 1..] {
            pairs.push(env::diff(a, b));
        }
    }
    let file = RunEnv {
        schema: ENV_SCHEMA.into(),
        pairs,
        warnings,
        applied: applied
            .iter()
            .map(|(a, ch)| AppliedFile {
                host: &a.host,
                token: &a.token,
                changes: ch,
            })
            .collect(),
    };
    write_json(&edir.join("diff.json"), &file)?;
    Ok(applied.into_iter().map(|(a, _)| a).collect())
}

/// Hosts whose `[env]` changes could not be reverted, each with why.
#[derive(Debug, Error)]
#[error("{}", joined(.0))]
pub(super) struct RevertError(Vec<RevertFailure>);

fn joined(failed: &[RevertFailure]) -> String {
    let v: Vec<String> = failed.iter().map(ToString::to_string).collect();
    v.join("; ")
}

/// One host's failed revert. The cause is printed, not a source.
#[derive(Debug, Error)]
#[error(
    "host {host}: reverting [env] apply {token} failed: {cause} (an agent reverts its changes \
     when its connection ends; check with `wirelab env --diff env/{host}.json HOST`)"
)]
pub(super) struct RevertFailure {
    host: String,
    token: String,
    cause: RevertCause,
}

#[derive(Debug, Error)]
enum RevertCause {
    /// The host's agent could not be reached.
    #[error(transparent)]
    Host(Box<RunError>),
    /// The agent refused or failed the revert.
    #[error(transparent)]
    Agent(TransportError),
}

/// Reverts what [`start`] applied, last host first; every host is tried.
pub(super) fn finish(hosts: &mut Hosts, applied: &[Applied]) -> Result<(), RevertError> {
    let mut failed = vec![];
    for a in applied.iter().rev() {
        let res = match hosts.get(&a.host) {
            Ok(c) => c.env_revert(&a.token).map_err(RevertCause::Agent),
            Err(e) => Err(RevertCause::Host(Box::new(e))),
        };
        if let Err(cause) = res {
            failed.push(RevertFailure {
                host: a.host.clone(),
                token: a.token.clone(),
                cause,
            });
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(RevertError(failed))
    }
}

fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), RunError> {
    let mut text = serde_json::to_string_pretty(v).expect("env files serialize");
    text.push('\n');
    Ok(bundle::write_atomic(path, text.as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(extra: &str) -> Result<Control, crate::control::ControlError> {
        crate::control::parse(
            "c.toml",
            &format!(
                "[campaign]\nname = \"e\"\n[hosts]\n\
                 a = {{ transport = \"local\", test_if = \"eth1\", control_if = \"eth1\" }}\n\
                 b = {{ transport = \"local\", test_if = \"eth1\", control_if = \"eth0\" }}\n\
                 c = {{ transport = \"local\" }}\n{extra}\
                 [[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n"
            ),
        )
    }

    #[test]
    fn a_shared_control_and_test_interface_is_warned_about() {
        let c = control("").unwrap();
        assert_eq!(
            shared_interface_warnings(&c),
            [
                "host a: control_if and test_if are both eth1: control traffic shares the test \
              interface and may disturb the results"
            ]
        );
    }

    #[test]
    fn interface_settings_need_a_test_interface_before_anything_starts() {
        let ok =
            control("[env]\napply.a = { mtu = 9000 }\napply.c = { \"net.core.rmem_max\" = 1 }\n");
        check(&ok.unwrap()).unwrap();
        let c = control("[env]\napply.c = { mtu = 9000 }\n").unwrap();
        let e = check(&c).unwrap_err().to_string();
        assert!(e.starts_with("[env] apply.c: mtu sets an interface"), "{e}");
        let c = crate::control::parse(
            "c.toml",
            "[campaign]\nname = \"e\"\n[hosts]\ndiff = { transport = \"local\" }\n\
             [[flow]]\nname = \"f\"\nfrom = \"diff\"\nto = \"diff\"\n",
        )
        .unwrap();
        assert!(check(&c).unwrap_err().to_string().contains("rename it"));
    }
}
