//! What `wirelab run` records of its hosts, read back by `wirelab report`
//! through these same types: each host's environment (`env/<host>.json`,
//! `wirelab.env/1`), the differences between two (`wirelab.env.diff/1`)
//! and a campaign's `env/diff.json` (`wirelab.run.env/1`), and the samples
//! of a host taken while a point runs (`points/<id>/samples/<host>.jsonl`,
//! a [`Sample`] a line). Made and taken by `wirelab_host`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// Schema of a campaign's `env/diff.json`.
pub const RUN_ENV_SCHEMA: &str = "wirelab.run.env/1";

/// A campaign's `env/diff.json`. `A` is what `[env] apply` changed on a
/// host, as the runner records it (a reader that does not need it takes
/// `serde::de::IgnoredAny`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnv<A> {
    pub schema: String,
    /// Differences between each pair of hosts.
    pub pairs: Vec<Diff>,
    /// Hosts whose control and test traffic share an interface.
    pub warnings: Vec<String>,
    /// What `[env] apply` changed per host (reverted after the last point).
    pub applied: Vec<A>,
}

/// The host between two snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The later snapshot's time, and the time since the earlier one.
    pub unix_ns: u64,
    pub interval_ns: u64,
    /// Per CPU (`cpu0`...): the fraction of its time in user (nice
    /// included), system, softirq, and busy (not idle or waiting for I/O).
    pub cpus: Vec<CpuBusy>,
    /// CPUs busy in all (the sum of `busy`), and in softirq.
    pub busy_cpus: f64,
    pub softirq_cpus: f64,
    /// MemTotal − MemAvailable, kB.
    pub mem_used_kb: Option<u64>,
    /// Per interface: packets and bits per second each way.
    pub ifaces: BTreeMap<String, Rates>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuBusy {
    pub cpu: String,
    pub user: f64,
    pub system: f64,
    pub softirq: f64,
    pub busy: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    pub rx_pps: f64,
    pub tx_pps: f64,
    pub rx_bps: f64,
    pub tx_bps: f64,
}
