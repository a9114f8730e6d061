//! End-to-end: the real binary in two network namespaces joined by veth.
//! Loss is injected exactly with nftables in the receiver's namespace and
//! the reported counts are checked exactly.

use crate::common::*;

#[test]
fn exact_loss_from_nftables_is_reported_exactly() {
    if !netns_available(&["nft"]) {
        return;
    }
    let lab = Lab::new();
    let port = 6001;
    lab.drop_every_100th(port);
    let rx_file = lab.file("rx.wlr");
    let tx_file = lab.file("tx.wlr");
    let rx = lab.spawn_recv(
        port,
        &[
            "--json",
            "--quiet",
            "--timeout",
            "30s",
            "--record",
            rx_file.to_str().unwrap(),
        ],
    );
    // The empty priming datagram, 1050 probes and 3 end markers = 1054
    // datagrams: numgen drops positions 0, 100, ..., 1000 — the priming
    // datagram and probes 99, 199, ..., 999.
    let tx = run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", "6001", "--rate", "20kpps"])
        .args([
            "--size", "100", "--count", "1050", "--json", "--quiet", "--record",
        ])
        .arg(&tx_file));
    let rx = wait_ok(rx);

    let txj = json(&tx);
    assert_eq!(txj["schema"], "wirelab.send/1");
    assert_eq!(flow(&txj, 1)["sent"], 1050);

    let rxj = json(&rx);
    assert_eq!(rxj["schema"], "wirelab.recv/1");
    let f = flow(&rxj, 1);
    assert_eq!(f["sent"], 1050, "{f}");
    assert_eq!(f["received"], 1040, "{f}");
    assert_eq!(f["lost"], 10, "{f}");
    assert_eq!(f["duplicates"], 0, "{f}");
    assert_eq!(f["reordered"], 0, "{f}");
    for k in ["p50_ns", "p99_ns", "max_ns"] {
        assert!(f["latency"][k].as_i64().unwrap() > 0, "latency.{k} in {f}");
    }

    // The analyzer joins both files by flow and sequence: the same counts,
    // and exactly the dropped sequence numbers.
    let an = run(std::process::Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&tx_file)
        .arg(&rx_file));
    let anj = json(&an);
    let f = flow(&anj, 1);
    assert_eq!(f["sent"], 1050, "{f}");
    assert_eq!(f["received"], 1040, "{f}");
    assert_eq!(f["lost"], 10, "{f}");
    let lost: Vec<u64> = f["receiver"]["loss"]["lost_seqs"]
        .as_array()
        .unwrap_or_else(|| panic!("no lost_seqs in {f}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(lost, (99..=999).step_by(100).collect::<Vec<u64>>());

    // nftables itself agrees it dropped 11 datagrams, and the receiver saw
    // no priming datagram (it was dropped).
    assert_eq!(rxj["receiver"]["counters"]["empty"], 0);
    let nft = lab.sh(&lab.r, "nft list table inet wltest");
    assert!(
        String::from_utf8_lossy(&nft.stdout).contains("packets 11 "),
        "{}",
        String::from_utf8_lossy(&nft.stdout)
    );
}

#[test]
fn ipv6_echo_measures_rtt_for_every_probe() {
    if !netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let rx = lab.spawn_recv(
        6002,
        &["-6", "--echo", "--json", "--quiet", "--timeout", "30s"],
    );
    let tx_file = lab.file("tx.wlr");
    let tx = run(lab
        .wirelab(&lab.s)
        .args([
            "send",
            "fd77::2",
            "-6",
            "--port",
            "6002",
            "--echo",
            "--interval",
            "1ms",
        ])
        .args(["--count", "300", "--json", "--quiet", "--record"])
        .arg(&tx_file));
    let rx = rx.wait_with_output().unwrap();
    assert!(rx.status.success());
    let txj = json(&tx);
    let f = flow(&txj, 1);
    assert_eq!(f["sent"], 300, "{f}");
    assert_eq!(f["echo_replies"], 300, "{f}");
    assert_eq!(f["rtt"]["replies"], 300, "{f}");
    assert_eq!(f["rtt"]["lost"], 0, "{f}");
    let rtt = &f["rtt"]["rtt"];
    assert_eq!(rtt["count"], 300, "{rtt}");
    let (p50, max) = (
        rtt["p50_ns"].as_i64().unwrap(),
        rtt["max_ns"].as_i64().unwrap(),
    );
    assert!(p50 > 0 && p50 <= max, "{rtt}");
    // The reflector's residence is inside the round trip.
    let res = f["rtt"]["residence"]["max_ns"].as_i64().unwrap();
    assert!(res >= 0 && res < max, "{f}");
    let rxj = json(&rx);
    assert_eq!(rxj["receiver"]["counters"]["echo_replies"], 300);
    assert_eq!(flow(&rxj, 1)["received"], 300);
}

#[test]
fn several_flows_into_one_receiver() {
    if !netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let rx = lab.spawn_recv(6003, &["--json", "--quiet", "--timeout", "30s"]);
    run(lab
        .wirelab(&lab.s)
        .args([
            "send",
            "198.18.0.2",
            "--port",
            "6003",
            "--flows",
            "3",
            "--flow",
            "10",
        ])
        .args([
            "--interval",
            "exp:200us",
            "--size",
            "uniform:64,512",
            "--count",
            "2000",
        ])
        .args(["--json", "--quiet"]));
    let rx = rx.wait_with_output().unwrap();
    assert!(rx.status.success());
    let rxj = json(&rx);
    assert_eq!(rxj["flows"].as_array().unwrap().len(), 3, "{rxj}");
    for id in 10..13 {
        let f = flow(&rxj, id);
        assert_eq!(f["received"], 2000, "{f}");
        assert_eq!(f["lost"], 0, "{f}");
        assert_eq!(f["duplicates"], 0, "{f}");
    }
}

#[test]
fn demo_builds_a_lab_reports_and_tears_it_down() {
    if !netns_available(&[]) {
        return;
    }
    let keep = std::env::temp_dir().join(format!("wl-demo-keep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&keep);
    let out = run(std::process::Command::new(exe())
        .args(["demo", "--duration", "1s", "--json", "--keep"])
        .arg(&keep));
    let v = json(&out);
    assert_eq!(v["schema"], "wirelab.analysis/1");
    let f = flow(&v, 1);
    // The truth from the kept record files' sizes (64-byte records after
    // the header): the sender wrote one record per probe sent; the
    // receiver one per probe received and one per each of the three
    // end-of-flow repeats of the last probe. A veth pair loses nothing.
    let records = |name: &str| {
        let b = std::fs::read(keep.join(name)).unwrap();
        let header = 20 + u64::from(u32::from_le_bytes(b[16..20].try_into().unwrap()));
        (b.len() as u64 - header) / 64
    };
    let sent = records("tx.wlr");
    assert!(sent > 0, "{f}");
    assert_eq!(f["sent"], sent, "{f}");
    assert_eq!(f["received"], records("rx.wlr") - 3, "{f}");
    assert_eq!(
        (&f["lost"], &f["duplicates"]),
        (&0.into(), &0.into()),
        "{f}"
    );
    std::fs::remove_dir_all(&keep).unwrap();
    assert_eq!(f["sent_source"], "sender_records");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("joined by a veth pair"), "{err}");
    assert_lab_removed(&err);
}

/// The namespaces the demo named on stderr (`wl-PID-N-ROLE`) are gone.
fn assert_lab_removed(stderr: &str) {
    let named: Vec<&str> = stderr
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|w| w.starts_with("wl-") && w.matches('-').count() == 3)
        .collect();
    assert!(!named.is_empty(), "{stderr}");
    let after =
        String::from_utf8(run(std::process::Command::new("ip").args(["netns", "list"])).stdout)
            .unwrap();
    for ns in named {
        assert!(
            !after
                .lines()
                .any(|l| l.split_whitespace().next() == Some(ns)),
            "demo namespace {ns} left behind: {after}"
        );
    }
}

#[test]
fn demo_with_an_emulated_link_delays_and_drops_as_asked() {
    if !netns_available(&[]) {
        return;
    }
    let out = run(std::process::Command::new(exe()).args([
        "demo",
        "--duration",
        "1s",
        "--json",
        "--emulate",
        "delay 5ms loss 10% seed 3",
    ]));
    let v = json(&out);
    let f = flow(&v, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bridged by `wirelab emulate`"), "{err}");
    assert_lab_removed(&err);
    let (sent, received, lost) = (
        f["sent"].as_u64().unwrap(),
        f["received"].as_u64().unwrap(),
        f["lost"].as_u64().unwrap(),
    );
    assert!(lost > 0 && received + lost == sent, "{f}");
    // The emulator's own count: every probe lost, plus at most the three
    // end-of-flow repeats of the last probe.
    let a2b = err
        .lines()
        .find(|l| l.contains("a2b ("))
        .unwrap_or_else(|| panic!("{err}"));
    // "…; dropped 188 (loss 188)"
    let dropped: u64 = a2b
        .split("(loss ")
        .nth(1)
        .and_then(|t| t.split([',', ')']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{a2b}"));
    assert!((lost..=lost + 3).contains(&dropped), "{a2b} / {f}");
    assert!(err.contains("early 0"), "{err}");
    // Both ends read one clock: no probe arrived before the link's delay.
    assert!(f["latency"]["min_ns"].as_u64().unwrap() >= 5_000_000, "{f}");
}

/// A flood of small probes into the adaptive receiver: nothing is lost.
#[test]
fn adaptive_receiver_polls_under_a_flood_without_loss() {
    if !netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let rx = lab.spawn_recv(
        6004,
        &[
            "-4",
            "--wait",
            "adaptive",
            "--poll-period",
            "200us",
            "--json",
            "--quiet",
            "--timeout",
            "30s",
        ],
    );
    run(lab
        .wirelab(&lab.s)
        .args([
            "send",
            "198.18.0.2",
            "--port",
            "6004",
            "--interval",
            "0",
            "--size",
            "64",
        ])
        .args(["--count", "20000", "--quiet"]));
    let rx = rx.wait_with_output().unwrap();
    assert!(rx.status.success());
    let v = json(&rx);
    let f = flow(&v, 1);
    assert_eq!(f["received"], 20000, "{f}");
    assert_eq!(f["lost"], 0, "{f}");
    assert_eq!(v["receiver"]["wait"], "adaptive");
}

/// SIGINT ends the receiver; everything received is in its summary and
/// its record file. The DSCP asked for is on the wire (nft counts it).
#[test]
fn sigint_flushes_summary_and_records_and_dscp_is_set() {
    if !netns_available(&["nft"]) {
        return;
    }
    let lab = Lab::new();
    lab.sh(
        &lab.r,
        "nft add table inet wlt && \
         nft add chain inet wlt input '{ type filter hook input priority 0; }' && \
         nft add rule inet wlt input udp dport 6005 ip dscp ef counter",
    );
    let rx_file = lab.file("rx.wlr");
    let rx = lab.spawn_recv(
        6005,
        &[
            "-4",
            "--json",
            "--quiet",
            "--forever",
            "--record",
            rx_file.to_str().unwrap(),
        ],
    );
    run(lab
        .wirelab(&lab.s)
        .args([
            "send",
            "198.18.0.2",
            "--port",
            "6005",
            "--dscp",
            "46",
            "--rate",
            "5kpps",
        ])
        .args(["--count", "500", "--quiet"]));
    // --forever: only the signal ends it. `ip netns exec` execs, so the
    // child's pid is the receiver's.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let rx = interrupt(rx);
    let v = json(&rx);
    assert_eq!(v["receiver"]["end_reason"], "signal");
    assert_eq!(flow(&v, 1)["received"], 500);
    let an = run(std::process::Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&rx_file));
    assert_eq!(flow(&json(&an), 1)["received"], 500);
    let nft = lab.sh(&lab.r, "nft list table inet wlt");
    let text = String::from_utf8_lossy(&nft.stdout);
    // 500 probes, 3 end markers and the priming datagram.
    assert!(text.contains("packets 504 "), "{text}");
    assert_eq!(v["receiver"]["counters"]["empty"], 1);
    assert_eq!(v["receiver"]["counters"]["malformed"], 0);
}
