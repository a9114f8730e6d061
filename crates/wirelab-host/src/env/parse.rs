//! Parsers of the texts a snapshot is read from. No I/O: each takes the
//! text a tool printed or a kernel file held, and returns `(key, value)`
//! pairs for [`super::Snapshot::values`] (keys relative to their group).

/// `key: value` lines, split at the first `:`, both sides trimmed; lines
/// without a `:` are skipped.
fn colon_pairs(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|l| {
        let (k, v) = l.split_once(':')?;
        Some((k.trim(), v.trim()))
    })
}

/// A key as a snapshot writes it: lowercase, runs of spaces as `_`.
fn key(k: &str) -> String {
    k.split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
        .to_ascii_lowercase()
}

/// `ethtool -i`: driver, version, firmware and bus.
pub fn ethtool_info(text: &str) -> Vec<(String, String)> {
    colon_pairs(text)
        .filter_map(|(k, v)| {
            let name = match k {
                "driver" => "driver",
                "version" => "driver_version",
                "firmware-version" => "firmware",
                "bus-info" => "bus",
                _ => return None,
            };
            Some((name.to_string(), v.to_string()))
        })
        .collect()
}

/// `ethtool -k`: every feature with its state (`on`, `off`, `off [fixed]`).
pub fn ethtool_features(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Features for"))
        .skip(1)
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// The feature `ethtool -k` lists for an alias `ethtool -K` also takes
/// (`gro` → `generic-receive-offload`); other names are their own.
pub fn feature_name(alias: &str) -> &str {
    match alias {
        "rx" => "rx-checksumming",
        "tx" => "tx-checksumming",
        "sg" => "scatter-gather",
        "tso" => "tcp-segmentation-offload",
        "gso" => "generic-segmentation-offload",
        "gro" => "generic-receive-offload",
        "lro" => "large-receive-offload",
        "rxvlan" => "rx-vlan-offload",
        "txvlan" => "tx-vlan-offload",
        "ntuple" => "ntuple-filters",
        "rxhash" => "receive-hashing",
        other => other,
    }
}

/// The "Current hardware settings" of `ethtool -g` (rings) or `ethtool -l`
/// (channels): `rx`, `tx`, `rx_jumbo`, `combined`, …; `n/a` left out.
pub fn ethtool_current(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Current hardware settings"))
        .skip(1)
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let v = v.trim();
            (v != "n/a").then(|| (key(k), v.to_string()))
        })
        .collect()
}

/// `ethtool -c`: `rx-usecs`, `tx-frames`, …, and `adaptive-rx`/`-tx`
/// from its "Adaptive RX: off  TX: on" line; `n/a` left out.
pub fn ethtool_coalesce(text: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    for l in text.lines().skip(1) {
        if let Some(rest) = l.strip_prefix("Adaptive ") {
            // "RX: off  TX: n/a"
            let words: Vec<&str> = rest.split_whitespace().collect();
            for pair in words.chunks(2) {
                if let [dir, v] = pair {
                    let dir = dir.trim_end_matches(':').to_ascii_lowercase();
                    if *v != "n/a" {
                        out.push((format!("adaptive-{dir}"), v.to_string()));
                    }
                }
            }
            continue;
        }
        if l.starts_with("CQE mode") {
            continue;
        }
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim();
            if v != "n/a" && !k.contains(' ') {
                out.push((k.trim().to_string(), v.to_string()));
            }
        }
    }
    out
}

/// `ethtool --show-eee`: the "EEE status" (`enabled - active`,
/// `disabled`, `not supported`).
pub fn eee_status(text: &str) -> Option<String> {
    colon_pairs(text)
        .find(|(k, _)| *k == "EEE status")
        .map(|(_, v)| v.to_string())
}

/// Whether an EEE status means on.
pub fn eee_on(status: &str) -> bool {
    status.starts_with("enabled")
}

/// `tc qdisc show dev IF`: the qdiscs, `; `-separated, without the
/// `refcnt N` that counts users rather than configures.
pub fn qdiscs(text: &str) -> String {
    text.lines()
        .map(|l| {
            let mut words: Vec<&str> = l.split_whitespace().collect();
            if let Some(i) = words.iter().position(|w| *w == "refcnt") {
                words.drain(i..(i + 2).min(words.len()));
            }
            words.join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// IRQs of `/proc/interrupts` whose name is the interface's or starts with
/// it and a `-` (`eno1-TxRx-0`), for devices without `msi_irqs` in sysfs.
pub fn irqs_named(interrupts: &str, ifname: &str) -> Vec<u32> {
    interrupts
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.trim_start().split_once(':')?;
            let n: u32 = n.parse().ok()?;
            let name = rest.split_whitespace().last()?;
            let ours = name == ifname
                || name
                    .strip_prefix(ifname)
                    .is_some_and(|r| r.starts_with('-'));
            ours.then_some(n)
        })
        .collect()
}

/// `/proc/cpuinfo`: the CPU model and the number of CPUs listed.
pub fn cpuinfo(text: &str) -> (Option<String>, usize) {
    let mut model = None;
    let mut n = 0;
    for (k, v) in colon_pairs(text) {
        match k {
            "processor" => n += 1,
            "model name" | "Model" | "cpu model" if model.is_none() && !v.is_empty() => {
                model = Some(v.to_string())
            }
            _ => {}
        }
    }
    (model, n)
}

/// `chronyc tracking`: the reference, stratum and leap status (the
/// offsets measured are left out: they change between two looks).
pub fn chrony_tracking(text: &str) -> Vec<(String, String)> {
    colon_pairs(text)
        .filter_map(|(k, v)| {
            let name = match k {
                "Reference ID" => "reference",
                "Stratum" => "stratum",
                "Leap status" => "leap_status",
                _ => return None,
            };
            Some((name.to_string(), v.to_string()))
        })
        .collect()
}

/// The first line of a tool's `--version` / `-V` output.
pub fn version_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(v: &'a [(String, String)], k: &str) -> Option<&'a str> {
        v.iter().find(|(a, _)| a == k).map(|(_, b)| b.as_str())
    }

    #[test]
    fn ethtool_info_of_a_virtio_nic() {
        let v = ethtool_info(include_str!("fixtures/ethtool-i-virtio.txt"));
        assert_eq!(get(&v, "driver"), Some("virtio_net"));
        assert_eq!(get(&v, "driver_version"), Some("1.0.0"));
        assert_eq!(get(&v, "firmware"), Some(""));
        assert_eq!(get(&v, "bus"), Some("0000:00:03.0"));
        assert_eq!(v.len(), 4);
    }

    #[test]
    fn ethtool_features_of_a_veth() {
        let v = ethtool_features(include_str!("fixtures/ethtool-k-veth.txt"));
        assert_eq!(get(&v, "generic-receive-offload"), Some("off"));
        assert_eq!(get(&v, "tcp-segmentation-offload"), Some("on"));
        assert_eq!(get(&v, "tx-checksum-ipv4"), Some("off [fixed]"));
        assert_eq!(get(&v, "large-receive-offload"), Some("off [fixed]"));
        assert!(v.iter().all(|(k, _)| !k.starts_with("Features")));
        assert_eq!(v.len(), 63);
        assert_eq!(feature_name("gro"), "generic-receive-offload");
        assert_eq!(feature_name("rx-gro-list"), "rx-gro-list");
    }

    #[test]
    fn rings_and_channels_are_the_current_settings() {
        let g = ethtool_current(include_str!("fixtures/ethtool-g-virtio.txt"));
        assert_eq!(
            g,
            vec![
                ("rx".to_string(), "256".to_string()),
                ("tx".into(), "256".into()),
                ("tx_push".into(), "off".into()),
            ]
        );
        let l = ethtool_current(include_str!("fixtures/ethtool-l-veth.txt"));
        assert_eq!(
            l,
            vec![
                ("rx".to_string(), "1".to_string()),
                ("tx".into(), "1".into())
            ]
        );
        assert!(ethtool_current(include_str!("fixtures/ethtool-unsupported.err")).is_empty());
    }

    #[test]
    fn coalescing_of_a_virtio_nic() {
        let c = ethtool_coalesce(include_str!("fixtures/ethtool-c-virtio.txt"));
        assert_eq!(
            c,
            vec![
                ("adaptive-rx".to_string(), "off".to_string()),
                ("rx-usecs".into(), "0".into()),
                ("rx-frames".into(), "1".into()),
                ("tx-usecs".into(), "0".into()),
                ("tx-frames".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn eee_status_line() {
        let s = eee_status(include_str!("fixtures/ethtool-eee-e1000e.txt")).unwrap();
        assert_eq!(s, "enabled - active");
        assert!(eee_on(&s));
        assert!(!eee_on("disabled"));
        assert_eq!(
            eee_status(include_str!("fixtures/ethtool-unsupported.err")),
            None
        );
    }

    #[test]
    fn qdiscs_without_refcnt() {
        assert_eq!(
            qdiscs(include_str!("fixtures/tc-qdisc-eth0.txt")),
            "qdisc pfifo_fast 0: root bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1"
        );
        assert_eq!(
            qdiscs(include_str!("fixtures/tc-qdisc-veth.txt")),
            "qdisc noqueue 0: dev vb root; qdisc noqueue 0: dev va root"
        );
        assert_eq!(qdiscs(""), "");
    }

    #[test]
    fn irqs_by_name() {
        let t = include_str!("fixtures/interrupts.txt");
        // virtio names its vectors after the device, not the interface.
        assert!(irqs_named(t, "eth0").is_empty());
        assert_eq!(irqs_named(t, "virtio2-input.0"), vec![38]);
        let intel = " 130:  0  12  IR-PCI-MSI 1048576-edge      eno1-TxRx-0\n \
                     131:  0  0  IR-PCI-MSI 1048577-edge      eno1\n \
                     132:  0  0  IR-PCI-MSI 1048578-edge      eno10-TxRx-0\n";
        assert_eq!(irqs_named(intel, "eno1"), vec![130, 131]);
    }

    #[test]
    fn cpu_model_and_count() {
        let (m, n) = cpuinfo(include_str!("fixtures/cpuinfo-1.txt"));
        assert_eq!(m.as_deref(), Some("AMD EPYC"));
        assert_eq!(n, 1);
        assert_eq!(cpuinfo(""), (None, 0));
    }

    #[test]
    fn chrony_keeps_states_not_offsets() {
        let t = "Reference ID    : A29FC87B (ntp1.example.net)\nStratum         : 3\n\
                 Ref time (UTC)  : Thu Nov 26 11:00:00 2026\n\
                 System time     : 0.000001234 seconds fast of NTP time\n\
                 Last offset     : -0.000000123 seconds\nLeap status     : Normal\n";
        assert_eq!(
            chrony_tracking(t),
            vec![
                (
                    "reference".to_string(),
                    "A29FC87B (ntp1.example.net)".to_string()
                ),
                ("stratum".into(), "3".into()),
                ("leap_status".into(), "Normal".into()),
            ]
        );
    }

    #[test]
    fn versions_are_first_lines() {
        assert_eq!(
            version_line("\nethtool version 6.1\n").as_deref(),
            Some("ethtool version 6.1")
        );
        assert_eq!(version_line(""), None);
    }
}
