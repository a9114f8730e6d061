//! Loss attribution (spec run.md "Counters, environment, attribution"):
//! a flow's lost probes split into where they were dropped, from the
//! counter deltas of its hosts and the emulator's report.
//!
//! # Causes, in the order a packet meets them
//! - **sender**: on the sending host, the larger of the drops of the root
//!   qdiscs of its interfaces and `Udp(6) SndbufErrors` (the kernel counts
//!   a UDP datagram a qdisc dropped in both, so they are not added).
//! - **path**: the emulator's drops, every reason summed (`dropped` of the
//!   flow's direction in its report; `ring` is among them).
//! - **receiver NIC**: on the receiving host, `rx_missed_errors`,
//!   `rx_fifo_errors` and `rx_dropped` of its interfaces.
//! - **receiver stack**: on the receiving host, the larger of `Udp(6)
//!   InErrors` and `RcvbufErrors` (the kernel counts a datagram refused
//!   for a full receive buffer in both), plus softnet backlog drops.
//! - **unexplained**: the rest.
//!
//! # Shared counters
//! Host counters and an emulator direction are shared by every flow of
//! the point that crosses them. Each cause's count goes to the flows that
//! cross it in proportion to the loss each has not yet attributed to an
//! earlier cause (largest remainders, ties to the earlier flow), and
//! never more than that: a flow's parts always sum to its loss. Counts
//! beyond the loss (other traffic's drops, end markers) are not
//! attributed to anything.

use crate::bundle::PointFile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use wirelab_host::counters::{Delta, Snapshot};

/// A flow's lost probes by cause; the parts sum to the loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    pub sender: u64,
    pub path: u64,
    pub receiver_nic: u64,
    pub receiver_stack: u64,
    pub unexplained: u64,
}

/// What one host's counters hold against the flows crossing it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDrops {
    pub sender: u64,
    pub receiver_nic: u64,
    pub receiver_stack: u64,
}

impl HostDrops {
    /// From a host's snapshots before and after the point.
    pub fn between(before: &Snapshot, after: &Snapshot) -> HostDrops {
        let d = Delta::between(before, after);
        // Root qdiscs of the interfaces the snapshot covers (a root's drops
        // include its children's).
        let qdisc: u64 = after
            .qdiscs
            .iter()
            .filter(|q| q.root && after.ifaces.contains_key(&q.dev))
            .map(|q| d.get(&format!("qdisc/{}/{}/drops", q.dev, q.handle)))
            .sum();
        let snmp = |k: &str| d.get(&format!("snmp/{k}"));
        let sndbuf = snmp("Udp.SndbufErrors") + snmp("Udp6SndbufErrors");
        let nic: u64 = after
            .ifaces
            .keys()
            .map(|dev| {
                ["rx_missed_errors", "rx_fifo_errors", "rx_dropped"]
                    .iter()
                    .map(|k| d.get(&format!("if/{dev}/{k}")))
                    .sum::<u64>()
            })
            .sum();
        let stack = snmp("Udp.InErrors").max(snmp("Udp.RcvbufErrors"))
            + snmp("Udp6InErrors").max(snmp("Udp6RcvbufErrors"))
            + d.get("softnet/dropped");
        HostDrops {
            sender: qdisc.max(sndbuf),
            receiver_nic: nic,
            receiver_stack: stack,
        }
    }
}

/// One flow as attribution sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowLoss {
    /// Its lost probes (None: unknown, nothing is attributed).
    pub lost: Option<u64>,
    pub from: String,
    pub to: String,
    /// The emulator direction it crosses (`a2b`, `b2a`), if any.
    pub path: Option<String>,
}

/// The counts of a point: per host and per emulator direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PointDrops {
    pub hosts: BTreeMap<String, HostDrops>,
    pub path: BTreeMap<String, u64>,
}

/// Each flow's attribution (module docs for the rule).
pub fn attribute(flows: &[FlowLoss], drops: &PointDrops) -> Vec<Option<Attribution>> {
    let mut left: Vec<u64> = flows.iter().map(|f| f.lost.unwrap_or(0)).collect();
    // Per cause, per flow.
    let mut parts = [(); 4].map(|_| vec![0u64; flows.len()]);
    // The causes in path order: which counter a flow meets, and its count.
    let key_of = |stage: usize, f: &'_ FlowLoss| -> Option<String> {
        match stage {
            0 => Some(f.from.clone()),
            1 => f.path.clone(),
            _ => Some(f.to.clone()),
        }
    };
    let count = |stage: usize, key: &str| -> u64 {
        let host = drops.hosts.get(key).copied().unwrap_or_default();
        match stage {
            0 => host.sender,
            1 => drops.path.get(key).copied().unwrap_or(0),
            2 => host.receiver_nic,
            _ => host.receiver_stack,
        }
    };
    for (stage, part) in parts.iter_mut().enumerate() {
        let mut keys: Vec<String> = flows
            .iter()
            .filter(|f| f.lost.is_some())
            .filter_map(|f| key_of(stage, f))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let members: Vec<usize> = (0..flows.len())
                .filter(|&i| {
                    flows[i].lost.is_some() && key_of(stage, &flows[i]).as_deref() == Some(&*key)
                })
                .collect();
            let wants: Vec<u64> = members.iter().map(|&i| left[i]).collect();
            for (&i, got) in members.iter().zip(share(count(stage, &key), &wants)) {
                part[i] += got;
                left[i] -= got;
            }
        }
    }
    let [sender, path, nic, stack] = parts;
    (0..flows.len())
        .map(|i| {
            flows[i].lost.map(|_| Attribution {
                sender: sender[i],
                path: path[i],
                receiver_nic: nic[i],
                receiver_stack: stack[i],
                unexplained: left[i],
            })
        })
        .collect()
}

/// `pool` split over `wants` in proportion, each part at most its want
/// (largest remainders; ties to the earlier).
fn share(pool: u64, wants: &[u64]) -> Vec<u64> {
    let total: u64 = wants.iter().sum();
    let give = pool.min(total);
    if give == 0 {
        return vec![0; wants.len()];
    }
    let (g, t) = (u128::from(give), u128::from(total));
    let mut out: Vec<u64> = wants
        .iter()
        .map(|&w| (g * u128::from(w) / t) as u64)
        .collect();
    let mut rest = give - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..wants.len()).collect();
    // Largest remainder first; a stable sort keeps ties in flow order.
    order.sort_by_key(|&i| std::cmp::Reverse(g * u128::from(wants[i]) % t));
    for i in order {
        if rest == 0 {
            break;
        }
        if out[i] < wants[i] {
            out[i] += 1;
            rest -= 1;
        }
    }
    out
}

/// The emulator's drops in `dir` (`a2b`, `b2a`) from its `--json` report:
/// `dropped` by reason, summed.
pub fn emulator_drops(report: &serde_json::Value, dir: &str) -> u64 {
    match &report[dir]["dropped"] {
        serde_json::Value::Object(m) => m.values().filter_map(|v| v.as_u64()).sum(),
        v => v.as_u64().unwrap_or(0),
    }
}

/// `counters/<host>.{before,after}.json` of a point directory.
pub fn counters_file(host: &str, when: &str) -> String {
    format!("counters/{host}.{when}.json")
}

/// Each flow's attribution of a stored point, from its files alone; None
/// for every flow when the point has no counters (made by a wirelab
/// without them) and for flows whose loss is unknown.
pub fn point_attribution(
    pdir: &Path,
    p: &PointFile,
    lost: &[Option<u64>],
) -> Vec<Option<Attribution>> {
    if !pdir.join("counters").is_dir() {
        return vec![None; p.flows.len()];
    }
    let read = |host: &str, when: &str| -> Option<Snapshot> {
        let bytes = std::fs::read(pdir.join(counters_file(host, when))).ok()?;
        serde_json::from_slice(&bytes).ok()
    };
    let mut drops = PointDrops::default();
    for f in &p.flows {
        for h in [&f.from, &f.to] {
            if drops.hosts.contains_key(h.as_str()) {
                continue;
            }
            if let (Some(b), Some(a)) = (read(h, "before"), read(h, "after")) {
                drops.hosts.insert(h.clone(), HostDrops::between(&b, &a));
            }
        }
    }
    if let Some(r) = &p.emulate_report {
        for dir in ["a2b", "b2a"] {
            drops.path.insert(dir.into(), emulator_drops(r, dir));
        }
    }
    let flows: Vec<FlowLoss> = p
        .flows
        .iter()
        .zip(lost)
        .map(|(f, &lost)| FlowLoss {
            lost,
            from: f.from.clone(),
            to: f.to.clone(),
            path: f.emulate_direction.clone(),
        })
        .collect();
    attribute(&flows, &drops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_host::counters::{Iface, Qdisc};

    fn flow(lost: u64, from: &str, to: &str, path: Option<&str>) -> FlowLoss {
        FlowLoss {
            lost: Some(lost),
            from: from.into(),
            to: to.into(),
            path: path.map(str::to_string),
        }
    }

    fn host(sender: u64, nic: u64, stack: u64) -> HostDrops {
        HostDrops {
            sender,
            receiver_nic: nic,
            receiver_stack: stack,
        }
    }

    #[test]
    fn one_flow_splits_along_the_path_in_order() {
        let drops = PointDrops {
            hosts: [("tx".into(), host(5, 0, 0)), ("rx".into(), host(0, 2, 30))].into(),
            path: [("a2b".into(), 100)].into(),
        };
        let a = attribute(&[flow(140, "tx", "rx", Some("a2b"))], &drops);
        assert_eq!(
            a,
            vec![Some(Attribution {
                sender: 5,
                path: 100,
                receiver_nic: 2,
                receiver_stack: 30,
                unexplained: 3,
            })]
        );
        // More counted than lost: the earlier causes take it, never more
        // than the loss.
        let a = attribute(&[flow(103, "tx", "rx", Some("a2b"))], &drops)[0].unwrap();
        assert_eq!(
            (a.sender, a.path, a.receiver_nic, a.receiver_stack),
            (5, 98, 0, 0)
        );
        assert_eq!(a.unexplained, 0);
        // No loss, nothing attributed; unknown loss, no attribution.
        let z = attribute(&[flow(0, "tx", "rx", Some("a2b"))], &drops)[0].unwrap();
        assert_eq!(z, Attribution::default());
        let mut u = flow(0, "tx", "rx", None);
        u.lost = None;
        assert_eq!(attribute(&[u], &drops), vec![None]);
    }

    #[test]
    fn shared_counters_split_by_each_flows_unexplained_loss() {
        // Two flows into one receiver whose stack dropped 90: flow a lost
        // 100 (40 of it on the path), flow b lost 30.
        let drops = PointDrops {
            hosts: [("rx".into(), host(0, 0, 90))].into(),
            path: [("a2b".into(), 40)].into(),
        };
        let a = attribute(
            &[
                flow(100, "t1", "rx", Some("a2b")),
                flow(30, "t2", "rx", None),
            ],
            &drops,
        );
        let (x, y) = (a[0].unwrap(), a[1].unwrap());
        assert_eq!(x.path, 40);
        // 90 over 60 and 30 left: 60 and 30 (all of each).
        assert_eq!((x.receiver_stack, y.receiver_stack), (60, 30));
        assert_eq!((x.unexplained, y.unexplained), (0, 0));
        // 10 over 1/1/1 left: 4, 3, 3, the earlier flow taking the odd one.
        assert_eq!(share(10, &[1, 1, 1]), vec![1, 1, 1]);
        assert_eq!(share(2, &[1, 1, 1]), vec![1, 1, 0]);
        assert_eq!(share(10, &[5, 5, 5]), vec![4, 3, 3]);
        assert_eq!(share(7, &[0, 10]), vec![0, 7]);
        assert_eq!(share(u64::MAX, &[u64::MAX / 2, 3]), vec![u64::MAX / 2, 3]);
        let big = share(1_000_003, &[999_983, 1_000_000, 7]);
        assert_eq!(big.iter().sum::<u64>(), 1_000_003);
    }

    #[test]
    fn host_drops_from_snapshots_without_double_counting() {
        let mut before = Snapshot::default();
        for (k, v) in [
            ("Udp.InErrors", 10),
            ("Udp.RcvbufErrors", 8),
            ("Udp.SndbufErrors", 0),
            ("Udp6InErrors", 0),
            ("Udp6RcvbufErrors", 0),
        ] {
            before.snmp.insert(k.into(), v);
        }
        before.softnet = vec![Default::default(); 2];
        let q = |dev: &str, handle: &str, root: bool, drops: u64| Qdisc {
            dev: dev.into(),
            handle: handle.into(),
            root,
            drops,
            ..Qdisc::default()
        };
        before.qdiscs = vec![q("eth1", "1:", true, 0), q("eth1", "10:", false, 0)];
        before.ifaces.insert(
            "eth1".into(),
            Iface {
                sysfs: [
                    ("rx_dropped", 0),
                    ("rx_missed_errors", 0),
                    ("rx_fifo_errors", 0),
                ]
                .map(|(k, v)| (k.to_string(), v))
                .into(),
                ethtool: BTreeMap::new(),
            },
        );
        let mut after = before.clone();
        // 496 datagrams dropped by the qdisc, also counted in SndbufErrors.
        after.qdiscs = vec![q("eth1", "1:", true, 496), q("eth1", "10:", false, 496)];
        after.snmp.insert("Udp.SndbufErrors".into(), 496);
        // 1000 refused for a full buffer: RcvbufErrors and InErrors both.
        after.snmp.insert("Udp.InErrors".into(), 1012);
        after.snmp.insert("Udp.RcvbufErrors".into(), 1008);
        after.softnet[1].dropped = 7;
        let i = after.ifaces.get_mut("eth1").unwrap();
        i.sysfs.insert("rx_missed_errors".into(), 3);
        i.sysfs.insert("rx_dropped".into(), 2);
        assert_eq!(HostDrops::between(&before, &after), host(496, 5, 1002 + 7));
    }

    #[test]
    fn emulator_drops_sum_the_reasons() {
        let r = serde_json::json!({
            "a2b": {"dropped": {"loss": 2000, "limit": 3, "ring": 1}},
            "b2a": {"dropped": {"loss": 0}},
        });
        assert_eq!(emulator_drops(&r, "a2b"), 2004);
        assert_eq!(emulator_drops(&r, "b2a"), 0);
        assert_eq!(
            emulator_drops(&serde_json::json!({"a2b": {"dropped": 5}}), "a2b"),
            5
        );
        assert_eq!(emulator_drops(&serde_json::Value::Null, "a2b"), 0);
    }
}
