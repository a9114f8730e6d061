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

pub mod apply;
pub mod parse;
pub mod read;

pub use wirelab_analysis::schema::host::{
    diff, Diff, Difference, Snapshot, DIFF_SCHEMA, SNAPSHOT_SCHEMA, UNAVAILABLE,
};

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
