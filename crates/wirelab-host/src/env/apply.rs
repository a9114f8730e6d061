//! Settings applied for a while and put back exactly.
//!
//! [`plan`] turns `KEY=VALUE` settings into [`Target`]s with checked
//! values. [`apply`] reads every target's current value first, writes them
//! all to a revert file (`DIR/TOKEN.json`) before anything changes, then
//! sets each value and reads it back; a failure part-way puts back what
//! was already set and removes the file. [`revert`] restores a file's
//! previous values (last change first) and removes it. A setting already
//! at its value is left alone (ethtool refuses "changes" to the same
//! value). The [`System`] trait does the reading and writing, so the
//! logic is tested on a fake.

use super::parse;
use super::read::{self, ReadError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Where revert files live.
pub const STATE_DIR: &str = "/run/wirelab/env";
/// Schema of a revert file.
pub const REVERT_SCHEMA: &str = "wirelab.env.revert/1";

/// The settings, for messages.
pub const KNOWN: &str = "mtu, rings, rings_rx, rings_tx, coalesce_rx_usecs, coalesce_tx_usecs, \
coalesce_rx_frames, coalesce_tx_frames, coalesce_adaptive_rx, coalesce_adaptive_tx, eee, \
offload.FEATURE (e.g. offload.gro), or a sysctl by its dotted name (e.g. net.core.rmem_max)";

/// One thing a setting changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    Mtu {
        iface: String,
    },
    /// `dir`: `rx` or `tx`.
    Ring {
        iface: String,
        dir: String,
    },
    /// `param`: ethtool's name (`rx-usecs`, `adaptive-rx`).
    Coalesce {
        iface: String,
        param: String,
    },
    Eee {
        iface: String,
    },
    Offload {
        iface: String,
        feature: String,
    },
    Sysctl {
        name: String,
    },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Mtu { iface } => write!(f, "the MTU of {iface}"),
            Target::Ring { iface, dir } => write!(f, "the {dir} ring of {iface}"),
            Target::Coalesce { iface, param } => write!(f, "coalescing {param} of {iface}"),
            Target::Eee { iface } => write!(f, "EEE of {iface}"),
            Target::Offload { iface, feature } => write!(f, "offload {feature} of {iface}"),
            Target::Sysctl { name } => write!(f, "sysctl {name}"),
        }
    }
}

/// A setting resolved: the user's key, what it changes, the new value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub setting: String,
    pub target: Target,
    pub value: String,
}

/// One change made (or to be made), as a revert file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub setting: String,
    pub target: Target,
    pub previous: String,
    pub value: String,
}

/// A revert file: what an application changed and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertFile {
    pub schema: String,
    pub token: String,
    /// The network namespace the changes were made in
    /// (`readlink /proc/self/ns/net`).
    pub netns: String,
    pub created_unix_ns: u64,
    pub changes: Vec<Change>,
}

#[derive(Debug, Error)]
pub enum EnvError {
    #[error("unknown setting {0:?}; known: {KNOWN}")]
    Unknown(String),
    #[error("{key} = {value:?}: {why}")]
    BadValue {
        key: String,
        value: String,
        why: String,
    },
    #[error("{0} sets an interface: name it (--if IF; in a campaign, the host's test_if)")]
    NeedsInterface(String),
    #[error("cannot read {target} ({why}); nothing was changed")]
    Read {
        target: Box<Target>,
        why: SystemError,
    },
    #[error("cannot write the revert file {}: {cause} (changing the environment needs root)", .path.display())]
    State {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot set {target} to {value} ({why}); {undo}")]
    Apply {
        target: Box<Target>,
        value: String,
        why: SystemError,
        undo: String,
    },
    #[error("bad token {0:?}: a token is the word `wirelab env --apply` printed")]
    BadToken(String),
    #[error(
        "no revert file for token {token} in {dir} (already reverted, or applied on another host)"
    )]
    NoToken { token: String, dir: String },
    #[error("{}: {why}", .path.display())]
    BadFile { path: PathBuf, why: String },
    #[error("token {token} was applied in network namespace {theirs}, this is {ours}: revert it through the same host (e.g. netns:NAME)")]
    OtherNamespace {
        token: String,
        theirs: String,
        ours: String,
    },
    #[error("reverting {token}: {why}; the revert file is kept (retry with --revert {token})")]
    Revert { token: String, why: UndoError },
}

/// Why a [`System`] could not read or set a target. Causes are printed,
/// not returned as sources.
#[derive(Debug, Error)]
pub enum SystemError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("no interface {iface} here")]
    NoInterface { iface: String },
    #[error("no sysctl {name} here")]
    NoSysctl { name: String },
    #[error("the device reports no {what}")]
    NotReported { what: String },
    #[error("no EEE status")]
    NoEeeStatus,
    #[error("{path}: {err}")]
    Write { path: String, err: std::io::Error },
    /// The write was taken but the target did not change to the value.
    #[error("it reads {now} after being set")]
    Unchanged { now: String },
}

/// Changes that could not be put back, each with why.
#[derive(Debug, Error)]
#[error("{}", undo_failures(.failed))]
pub struct UndoError {
    pub failed: Vec<(Change, SystemError)>,
}

fn undo_failures(failed: &[(Change, SystemError)]) -> String {
    failed
        .iter()
        .map(|(c, e)| format!("{} back to {}: {e}", c.target, c.previous))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads and writes targets.
pub trait System {
    /// The current value, in the form [`plan`] gives values.
    fn read(&mut self, t: &Target) -> Result<String, SystemError>;
    fn write(&mut self, t: &Target, value: &str) -> Result<(), SystemError>;
    /// The network namespace this system changes.
    fn netns(&self) -> String;
}

fn bool_word(key: &str, v: &str) -> Result<String, EnvError> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok("on".into()),
        "off" | "false" | "0" | "no" => Ok("off".into()),
        _ => Err(EnvError::BadValue {
            key: key.into(),
            value: v.into(),
            why: "give on or off".into(),
        }),
    }
}

fn int(key: &str, v: &str, lo: u64, hi: u64) -> Result<String, EnvError> {
    match v.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n.to_string()),
        _ => Err(EnvError::BadValue {
            key: key.into(),
            value: v.into(),
            why: format!("give a whole number from {lo} to {hi}"),
        }),
    }
}

/// A dotted sysctl name: words of letters, digits, `_` and `-`.
fn sysctl_name(k: &str) -> bool {
    k.contains('.')
        && k.split('.').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

/// The targets of `settings` (`KEY`, `VALUE`); interface settings go to
/// `iface`.
pub fn plan(settings: &[(String, String)], iface: Option<&str>) -> Result<Vec<Planned>, EnvError> {
    let mut out = vec![];
    for (key, value) in settings {
        let key = key.trim();
        let value = value.trim();
        let need_if = || {
            iface
                .map(str::to_string)
                .ok_or_else(|| EnvError::NeedsInterface(key.into()))
        };
        let mut push = |target: Target, value: String| {
            out.push(Planned {
                setting: key.into(),
                target,
                value,
            })
        };
        match key {
            "mtu" => push(
                Target::Mtu { iface: need_if()? },
                int(key, value, 68, 65535)?,
            ),
            "rings" | "rings_rx" | "rings_tx" => {
                let v = int(key, value, 1, 1 << 20)?;
                let iface = need_if()?;
                for dir in ["rx", "tx"] {
                    if key == "rings" || key.ends_with(dir) {
                        push(
                            Target::Ring {
                                iface: iface.clone(),
                                dir: dir.into(),
                            },
                            v.clone(),
                        );
                    }
                }
            }
            "coalesce_rx_usecs" | "coalesce_tx_usecs" | "coalesce_rx_frames"
            | "coalesce_tx_frames" => push(
                Target::Coalesce {
                    iface: need_if()?,
                    param: key["coalesce_".len()..].replace('_', "-"),
                },
                int(key, value, 0, u64::from(u32::MAX))?,
            ),
            "coalesce_adaptive_rx" | "coalesce_adaptive_tx" => push(
                Target::Coalesce {
                    iface: need_if()?,
                    param: key["coalesce_".len()..].replace('_', "-"),
                },
                bool_word(key, value)?,
            ),
            "eee" => push(Target::Eee { iface: need_if()? }, bool_word(key, value)?),
            _ => {
                if let Some(f) = key.strip_prefix("offload.") {
                    if f.is_empty()
                        || !f
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
                    {
                        return Err(EnvError::Unknown(key.into()));
                    }
                    push(
                        Target::Offload {
                            iface: need_if()?,
                            feature: parse::feature_name(f).into(),
                        },
                        bool_word(key, value)?,
                    );
                } else if sysctl_name(key) {
                    if value.is_empty() || value.len() > 4096 || value.contains('\n') {
                        return Err(EnvError::BadValue {
                            key: key.into(),
                            value: value.into(),
                            why: "give one line of at most 4096 bytes".into(),
                        });
                    }
                    let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
                    push(Target::Sysctl { name: key.into() }, value);
                } else {
                    return Err(EnvError::Unknown(key.into()));
                }
            }
        }
    }
    Ok(out)
}

/// Sets `t` to `v` unless it already is, and checks that it reads back.
fn set(sys: &mut dyn System, t: &Target, v: &str) -> Result<(), SystemError> {
    if sys.read(t)? == v {
        return Ok(());
    }
    sys.write(t, v)?;
    let now = sys.read(t)?;
    if now != v {
        return Err(SystemError::Unchanged { now });
    }
    Ok(())
}

/// Puts back `changes`' previous values, last first; every one is tried.
fn undo(sys: &mut dyn System, changes: &[Change]) -> Result<(), UndoError> {
    let mut failed = vec![];
    for c in changes.iter().rev() {
        if let Err(e) = set(sys, &c.target, &c.previous) {
            failed.push((c.clone(), e));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(UndoError { failed })
    }
}

/// A new token: the time and this process, unique on the host.
pub fn new_token() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{:x}-{}-{}",
        wirelab_io::clock::real_ns() / 1_000_000,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn check_token(token: &str) -> Result<(), EnvError> {
    let ok = !token.is_empty()
        && token.len() <= 64
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    ok.then_some(())
        .ok_or_else(|| EnvError::BadToken(token.into()))
}

fn file_of(dir: &Path, token: &str) -> PathBuf {
    dir.join(format!("{token}.json"))
}

fn write_file(dir: &Path, f: &RevertFile) -> Result<(), EnvError> {
    use std::os::unix::fs::DirBuilderExt;
    let path = file_of(dir, &f.token);
    let err = |source| EnvError::State {
        path: path.clone(),
        cause: source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let mut text = serde_json::to_string_pretty(f).expect("a revert file serializes");
    text.push('\n');
    // Durable before any setting changes: after a crash the file is absent
    // (nothing changed yet) or whole (it says how to put everything back).
    wirelab_io::atomic::write(&path, text.as_bytes()).map_err(|e| err(e.into()))
}

/// Applies `planned` on `sys`, its revert file in `dir` under `token`.
pub fn apply(
    sys: &mut dyn System,
    dir: &Path,
    token: &str,
    planned: &[Planned],
) -> Result<RevertFile, EnvError> {
    check_token(token)?;
    let mut changes = vec![];
    for p in planned {
        let previous = sys.read(&p.target).map_err(|why| EnvError::Read {
            target: Box::new(p.target.clone()),
            why,
        })?;
        changes.push(Change {
            setting: p.setting.clone(),
            target: p.target.clone(),
            previous,
            value: p.value.clone(),
        });
    }
    let file = RevertFile {
        schema: REVERT_SCHEMA.into(),
        token: token.into(),
        netns: sys.netns(),
        created_unix_ns: wirelab_io::clock::real_ns(),
        changes,
    };
    write_file(dir, &file)?;
    for (i, c) in file.changes.iter().enumerate() {
        if let Err(why) = set(sys, &c.target, &c.value) {
            let undo = match undo(sys, &file.changes[..=i]) {
                Ok(()) => {
                    let _ = std::fs::remove_file(file_of(dir, token));
                    "everything was put back".to_string()
                }
                Err(e) => format!(
                    "putting back failed ({e}): see {} and retry with --revert {token}",
                    file_of(dir, token).display()
                ),
            };
            return Err(EnvError::Apply {
                target: Box::new(c.target.clone()),
                value: c.value.clone(),
                why,
                undo,
            });
        }
    }
    Ok(file)
}

/// The revert file of `token` in `dir`.
pub fn load(dir: &Path, token: &str) -> Result<RevertFile, EnvError> {
    check_token(token)?;
    let path = file_of(dir, token);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EnvError::NoToken {
                token: token.into(),
                dir: dir.display().to_string(),
            })
        }
        Err(e) => {
            return Err(EnvError::BadFile {
                path,
                why: e.to_string(),
            })
        }
    };
    let f: RevertFile = serde_json::from_str(&text).map_err(|e| EnvError::BadFile {
        path: path.clone(),
        why: format!("not a revert file: {e}"),
    })?;
    if f.token != token {
        return Err(EnvError::BadFile {
            path,
            why: format!("holds token {}, not {token}", f.token),
        });
    }
    Ok(f)
}

/// Restores the previous values of `token`'s changes and removes its file;
/// the changes put back.
pub fn revert(sys: &mut dyn System, dir: &Path, token: &str) -> Result<Vec<Change>, EnvError> {
    let f = load(dir, token)?;
    let ours = sys.netns();
    if f.netns != ours {
        return Err(EnvError::OtherNamespace {
            token: token.into(),
            theirs: f.netns,
            ours,
        });
    }
    undo(sys, &f.changes).map_err(|why| EnvError::Revert {
        token: token.into(),
        why,
    })?;
    std::fs::remove_file(file_of(dir, token)).map_err(|e| EnvError::BadFile {
        path: file_of(dir, token),
        why: format!("cannot remove it: {e}"),
    })?;
    Ok(f.changes)
}

/// The host this process runs on: sysfs, `/proc/sys`, `ip` and `ethtool`.
pub struct Local;

fn run(program: &str, args: &[&str]) -> Result<(), SystemError> {
    read::tool(program, args)?;
    Ok(())
}

fn find(pairs: Vec<(String, String)>, key: &str, what: &str) -> Result<String, SystemError> {
    pairs
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .ok_or_else(|| SystemError::NotReported { what: what.into() })
}

impl System for Local {
    fn read(&mut self, t: &Target) -> Result<String, SystemError> {
        match t {
            Target::Mtu { iface } => {
                read::file(format!("/sys/class/net/{iface}/mtu")).map_err(|_| {
                    SystemError::NoInterface {
                        iface: iface.clone(),
                    }
                })
            }
            Target::Ring { iface, dir } => find(
                parse::ethtool_current(&read::tool("ethtool", &["-g", iface])?),
                dir,
                &format!("{dir} ring size"),
            ),
            Target::Coalesce { iface, param } => find(
                parse::ethtool_coalesce(&read::tool("ethtool", &["-c", iface])?),
                param,
                param,
            ),
            Target::Eee { iface } => {
                let t = read::tool("ethtool", &["--show-eee", iface])?;
                let s = parse::eee_status(&t).ok_or(SystemError::NoEeeStatus)?;
                Ok(if parse::eee_on(&s) { "on" } else { "off" }.into())
            }
            Target::Offload { iface, feature } => {
                let v = find(
                    parse::ethtool_features(&read::tool("ethtool", &["-k", iface])?),
                    feature,
                    &format!("feature {feature}"),
                )?;
                Ok(v.split_whitespace().next().unwrap_or("").to_string())
            }
            Target::Sysctl { name } => read::file(read::sysctl_path(name))
                .map_err(|_| SystemError::NoSysctl { name: name.clone() }),
        }
    }

    fn write(&mut self, t: &Target, v: &str) -> Result<(), SystemError> {
        match t {
            Target::Mtu { iface } => run("ip", &["link", "set", "dev", iface, "mtu", v]),
            Target::Ring { iface, dir } => run("ethtool", &["-G", iface, dir, v]),
            Target::Coalesce { iface, param } => run("ethtool", &["-C", iface, param, v]),
            Target::Eee { iface } => run("ethtool", &["--set-eee", iface, "eee", v]),
            Target::Offload { iface, feature } => run("ethtool", &["-K", iface, feature, v]),
            Target::Sysctl { name } => {
                std::fs::write(read::sysctl_path(name), v).map_err(|err| SystemError::Write {
                    path: read::sysctl_path(name),
                    err,
                })
            }
        }
    }

    fn netns(&self) -> String {
        std::fs::read_link("/proc/self/ns/net")
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| format!("unknown ({e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Targets as strings; writes to a target in `refuse` fail.
    #[derive(Default)]
    struct Fake {
        values: BTreeMap<String, String>,
        refuse: Vec<String>,
        writes: Vec<String>,
        ns: String,
    }

    impl System for Fake {
        fn read(&mut self, t: &Target) -> Result<String, SystemError> {
            self.values
                .get(&t.to_string())
                .cloned()
                .ok_or_else(|| SystemError::NotReported {
                    what: t.to_string(),
                })
        }
        fn write(&mut self, t: &Target, v: &str) -> Result<(), SystemError> {
            let k = t.to_string();
            if self.refuse.contains(&k) {
                return Err(SystemError::Write {
                    path: k,
                    err: std::io::ErrorKind::PermissionDenied.into(),
                });
            }
            self.writes.push(format!("{k}={v}"));
            self.values.insert(k, v.into());
            Ok(())
        }
        fn netns(&self) -> String {
            self.ns.clone()
        }
    }

    fn kv(s: &[(&str, &str)]) -> Vec<(String, String)> {
        s.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn fake() -> Fake {
        let mut f = Fake {
            ns: "net:[1]".into(),
            ..Fake::default()
        };
        for (k, v) in [
            ("the MTU of va", "1500"),
            ("the rx ring of va", "256"),
            ("the tx ring of va", "256"),
            ("sysctl net.core.rmem_max", "212992"),
        ] {
            f.values.insert(k.into(), v.into());
        }
        f
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wl-env-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn settings_resolve_to_targets_with_checked_values() {
        let p = plan(
            &kv(&[
                ("mtu", "9000"),
                ("rings", "4096"),
                ("coalesce_rx_usecs", "0"),
                ("offload.gro", "false"),
                ("eee", "off"),
                ("net.ipv4.udp_mem", "1 2\t3"),
            ]),
            Some("va"),
        )
        .unwrap();
        let t: Vec<String> = p
            .iter()
            .map(|p| format!("{}={}", p.target, p.value))
            .collect();
        assert_eq!(
            t,
            [
                "the MTU of va=9000",
                "the rx ring of va=4096",
                "the tx ring of va=4096",
                "coalescing rx-usecs of va=0",
                "offload generic-receive-offload of va=off",
                "EEE of va=off",
                "sysctl net.ipv4.udp_mem=1 2 3",
            ]
        );
        assert_eq!(
            plan(&kv(&[("rings_tx", "512")]), Some("va")).unwrap()[0].target,
            Target::Ring {
                iface: "va".into(),
                dir: "tx".into()
            }
        );
        // Sysctls need no interface; interface settings do.
        assert!(plan(&kv(&[("net.core.rmem_max", "1")]), None).is_ok());
        let e = plan(&kv(&[("mtu", "9000")]), None).unwrap_err().to_string();
        assert!(e.contains("--if IF"), "{e}");
        for (k, v, says) in [
            ("mtu", "9k", "from 68 to 65535"),
            ("mtu", "67", "from 68 to 65535"),
            ("eee", "maybe", "on or off"),
            ("speed", "1000", "known: mtu, rings"),
            ("offload.", "on", "unknown setting"),
            ("net..x", "1", "unknown setting"),
            ("net.core/x", "1", "unknown setting"),
            ("net.core.rmem_max", "", "one line"),
        ] {
            let e = plan(&kv(&[(k, v)]), Some("va")).unwrap_err().to_string();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
    }

    #[test]
    fn apply_then_revert_restores_exactly_and_removes_the_file() {
        let dir = tmpdir("rt");
        let mut sys = fake();
        let before = sys.values.clone();
        let p = plan(
            &kv(&[
                ("mtu", "9000"),
                ("rings", "256"),
                ("net.core.rmem_max", "26214400"),
            ]),
            Some("va"),
        )
        .unwrap();
        let f = apply(&mut sys, &dir, "t-1", &p).unwrap();
        assert_eq!(f.changes.len(), 4);
        assert_eq!(f.changes[0].previous, "1500");
        assert_eq!(sys.values["the MTU of va"], "9000");
        // Rings already at 256 are not written.
        assert_eq!(
            sys.writes,
            ["the MTU of va=9000", "sysctl net.core.rmem_max=26214400"]
        );
        // The revert file was on disk with the previous values.
        let on_disk = load(&dir, "t-1").unwrap();
        assert_eq!(on_disk, f);
        let back = revert(&mut sys, &dir, "t-1").unwrap();
        assert_eq!(back, f.changes);
        assert_eq!(sys.values, before);
        assert!(matches!(
            revert(&mut sys, &dir, "t-1"),
            Err(EnvError::NoToken { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failure_part_way_puts_back_what_was_set() {
        let dir = tmpdir("fail");
        let mut sys = fake();
        sys.refuse.push("the tx ring of va".into());
        let before = sys.values.clone();
        let p = plan(&kv(&[("mtu", "9000"), ("rings", "4096")]), Some("va")).unwrap();
        let e = apply(&mut sys, &dir, "t-2", &p).unwrap_err().to_string();
        assert!(e.contains("cannot set the tx ring of va to 4096"), "{e}");
        assert!(e.contains("everything was put back"), "{e}");
        assert_eq!(sys.values, before);
        assert!(!file_of(&dir, "t-2").exists());
        // Nothing readable, nothing changed, no file.
        let p = plan(&kv(&[("mtu", "9000"), ("eee", "on")]), Some("va")).unwrap();
        let e = apply(&mut sys, &dir, "t-3", &p).unwrap_err().to_string();
        assert!(e.contains("cannot read EEE of va"), "{e}");
        assert_eq!(sys.values, before);
        assert!(!file_of(&dir, "t-3").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn revert_refuses_another_namespace_and_bad_tokens() {
        let dir = tmpdir("ns");
        let mut sys = fake();
        let p = plan(&kv(&[("mtu", "9000")]), Some("va")).unwrap();
        apply(&mut sys, &dir, "t-4", &p).unwrap();
        let mut other = fake();
        other.ns = "net:[2]".into();
        let e = revert(&mut other, &dir, "t-4").unwrap_err().to_string();
        assert!(e.contains("through the same host"), "{e}");
        assert!(file_of(&dir, "t-4").exists());
        revert(&mut sys, &dir, "t-4").unwrap();
        for bad in ["", "../x", "a/b", "a.json", &"x".repeat(65)] {
            assert!(matches!(
                revert(&mut sys, &dir, bad),
                Err(EnvError::BadToken(_))
            ));
        }
        let t = new_token();
        check_token(&t).unwrap();
        assert_ne!(t, new_token());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
