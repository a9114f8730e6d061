//! `wirelab env`: a host's environment as a flat key → value view
//! ([`Snapshot`]), the differences between two ([`diff`]), and settings
//! applied with a record of what they replaced so that they can be put
//! back exactly ([`apply`]).
//!
//! - [`parse`]: sans-IO parsers of the texts a snapshot is made of
//!   (`/proc/cpuinfo`, `ethtool -i/-k/-g/-c/-l/--show-eee`, `tc qdisc
//!   show`, `/proc/interrupts`, `chronyc tracking`, …).
//! - [`read`]: the snapshot of the host (network namespace) this process
//!   runs in. A tool that is missing or a device that does not support a
//!   query gives the value `unavailable: WHY`, never an error.
//! - [`apply`]: settings (`mtu`, `rings`, `coalesce_*`, `eee`,
//!   `offload.FEATURE`, any sysctl by its dotted name), a revert file per
//!   application (named by a token) written before anything changes, and
//!   the revert.
//!
//! `local` or an agent's host, and settings applied on several hosts in
//! turn, are the agent crate's (`wirelab_agent::hosts`): reaching another
//! host needs its transport.
//!
//! A snapshot holds settings and states, not measurements (no counters,
//! no clock offsets), so two snapshots of an unchanged host are equal.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod apply;
pub mod parse;
pub mod read;

/// Schema of a snapshot.
pub const SNAPSHOT_SCHEMA: &str = "wirelab.env/1";
/// Schema of a diff.
pub const DIFF_SCHEMA: &str = "wirelab.env.diff/1";
/// The value prefix of something that could not be read.
pub const UNAVAILABLE: &str = "unavailable: ";

/// One host's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema: String,
    /// The host as the user named it (a transport, or a campaign's host).
    pub host: String,
    pub taken_unix_ns: u64,
    /// Flat keys (`kernel.release`, `nic.eth1.mtu`,
    /// `sysctl.net.core.rmem_max`, …), sorted.
    pub values: BTreeMap<String, String>,
}

impl Snapshot {
    pub fn new(host: impl Into<String>, taken_unix_ns: u64) -> Snapshot {
        Snapshot {
            schema: SNAPSHOT_SCHEMA.into(),
            host: host.into(),
            taken_unix_ns,
            values: BTreeMap::new(),
        }
    }

    /// The text form: `key = value`, one per line, sorted.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.values {
            s.push_str(k);
            s.push_str(" = ");
            s.push_str(v);
            s.push('\n');
        }
        s
    }
}

/// One key whose values differ (`None`: the key is not in that snapshot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    pub key: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

/// The differences between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    pub schema: String,
    pub a: String,
    pub b: String,
    pub differences: Vec<Difference>,
}

impl Diff {
    /// `KEY: A -> B` per difference (`(absent)` for a missing key), or
    /// `no differences`.
    pub fn to_text(&self) -> String {
        if self.differences.is_empty() {
            return format!("{} and {}: no differences\n", self.a, self.b);
        }
        let mut s = format!(
            "{} and {}: {} difference{}\n",
            self.a,
            self.b,
            self.differences.len(),
            if self.differences.len() == 1 { "" } else { "s" }
        );
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
        for d in &self.differences {
            s.push_str(&format!("  {}: {} -> {}\n", d.key, show(&d.a), show(&d.b)));
        }
        s
    }
}

/// The keys whose values differ between `a` and `b`, sorted by key.
pub fn diff(a: &Snapshot, b: &Snapshot) -> Diff {
    let mut differences = vec![];
    let keys: std::collections::BTreeSet<&String> =
        a.values.keys().chain(b.values.keys()).collect();
    for k in keys {
        let (va, vb) = (a.values.get(k), b.values.get(k));
        if va != vb {
            differences.push(Difference {
                key: k.clone(),
                a: va.cloned(),
                b: vb.cloned(),
            });
        }
    }
    Diff {
        schema: DIFF_SCHEMA.into(),
        a: a.host.clone(),
        b: b.host.clone(),
        differences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(host: &str, kv: &[(&str, &str)]) -> Snapshot {
        let mut s = Snapshot::new(host, 1);
        for (k, v) in kv {
            s.values.insert(k.to_string(), v.to_string());
        }
        s
    }

    #[test]
    fn diff_lists_changed_and_one_sided_keys_in_order() {
        let a = snap(
            "a",
            &[
                ("nic.va.mtu", "1500"),
                ("kernel.release", "6.1"),
                ("x", "1"),
            ],
        );
        let b = snap(
            "b",
            &[
                ("nic.va.mtu", "9000"),
                ("kernel.release", "6.1"),
                ("y", "2"),
            ],
        );
        let d = diff(&a, &b);
        assert_eq!(
            d.differences,
            vec![
                Difference {
                    key: "nic.va.mtu".into(),
                    a: Some("1500".into()),
                    b: Some("9000".into())
                },
                Difference {
                    key: "x".into(),
                    a: Some("1".into()),
                    b: None
                },
                Difference {
                    key: "y".into(),
                    a: None,
                    b: Some("2".into())
                },
            ]
        );
        assert_eq!(
            d.to_text(),
            "a and b: 3 differences\n  nic.va.mtu: 1500 -> 9000\n  x: 1 -> (absent)\n  \
             y: (absent) -> 2\n"
        );
        // The time a snapshot was taken is not a difference.
        let mut a2 = a.clone();
        a2.taken_unix_ns = 99;
        assert!(diff(&a, &a2).differences.is_empty());
        assert_eq!(diff(&a, &a2).to_text(), "a and a: no differences\n");
    }
}
