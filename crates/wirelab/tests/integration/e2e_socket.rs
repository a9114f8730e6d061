//! `wirelab send --socket udp|raw|packet` and `--start-at` between two
//! namespaces: every probe arrives and is echoed, and tcpdump finds the
//! DSCP, valid IP and UDP checksums and (packet) the peer's MAC on each.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const PROBES: usize = 200;

/// tcpdump on `dev` in `ns`, frames coming in only, UDP to `port`; returns
/// once it captures.
fn tcpdump(ns: &str, dev: &str, port: u16, cap: &Path) -> Child {
    tcpdump::start(
        wirelab_lab::lab::exec_in(ns, "timeout")
            .args([
                "60", "tcpdump", "-i", dev, "-Q", "in", "-U", "-nn", "-s", "512",
            ])
            // Immediate mode gives every frame a ring slot of the snap length:
            // a small snap length and a 64 MiB buffer keep a starved tcpdump
            // from dropping (2 MiB of 64 KiB slots held 32 frames).
            .args(["-B", "65536", "--immediate-mode", "-w"])
            .arg(cap)
            .arg(format!("udp port {port}")),
        cap,
    )
}

/// `wirelab recv --echo` on `port` in the receiver's namespace.
fn receiver(lab: &Lab, port: u16) -> Child {
    let c = lab
        .wirelab(&lab.r)
        .args([
            "recv",
            "-4",
            "--echo",
            "--json",
            "--quiet",
            "--timeout",
            "60s",
        ])
        .args(["--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, port);
    c
}

fn finish(rx: Child) -> serde_json::Value {
    let out = wait_ok(rx);
    json(&out)
}

/// The (header line, transport line) pairs of `tcpdump -r cap -nn -vv -e`.
fn packets(cap: &Path) -> Vec<(String, String)> {
    let out = run(Command::new("tcpdump")
        .args(["-nn", "-vv", "-e", "-r"])
        .arg(cap)
        .stderr(Stdio::null()));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let mut v = vec![];
    while let Some(h) = lines.next() {
        let t = lines
            .next()
            .unwrap_or_else(|| panic!("no second line after {h}"));
        v.push((h.to_string(), t.to_string()));
    }
    v
}

/// 200 probes with --dscp 46 and --echo through `socket`: all received and
/// echoed; on the receiver's interface every datagram to the port has TOS
/// 0xb8, valid IP and UDP checksums, and (packet) the receiver's MAC.
fn judge(socket: &str, port: u16) {
    if !netns_available(&[]) || !tools_available(&["tcpdump", "timeout", "ethtool"]) {
        return;
    }
    let lab = Lab::new();
    // The kernel's own datagrams (every probe with udp, the ARP trigger
    // with packet) would cross the veth with a partial checksum for the
    // NIC to finish: have the kernel finish it so tcpdump judges them all.
    lab.sh(
        &lab.s,
        &format!("ethtool -K {} tx off >/dev/null", lab.tx_if()),
    );
    let mac = lab.sh(
        &lab.r,
        &format!("cat /sys/class/net/{}/address", lab.rx_if()),
    );
    let mac = String::from_utf8_lossy(&mac.stdout).trim().to_string();
    let cap = lab.file("rx.pcap");
    let td = tcpdump(&lab.r, lab.rx_if(), port, &cap);
    let rx = receiver(&lab, port);
    let tx = run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", &port.to_string()])
        .args([
            "--socket", socket, "--dscp", "46", "--echo", "--size", "100",
        ])
        .args(["--count", &PROBES.to_string(), "--rate", "2kpps"])
        .args(["--json", "--quiet"]));
    let rx = finish(rx);
    // The probes, the end markers and the priming datagram.
    tcpdump::wait_frames(&cap, PROBES + 4, Duration::from_secs(20));
    tcpdump::stop(td);

    let txj = json(&tx);
    assert_eq!(txj["config"]["socket"], socket);
    assert_eq!(txj["config"]["tos"], 0xb8);
    let f = flow(&txj, 1);
    assert_eq!(f["sent"], PROBES);
    assert_eq!(f["echo_replies"], PROBES, "{socket}: {f}");
    let r = flow(&rx, 1);
    assert_eq!(
        (&r["received"], &r["lost"]),
        (&PROBES.into(), &0.into()),
        "{socket}: {r}"
    );

    let pkts = packets(&cap);
    assert!(
        !pkts.is_empty(),
        "{socket}: nothing captured in {}",
        cap.display()
    );
    let mut probes = 0;
    for (h, t) in &pkts {
        assert!(h.contains("(tos 0xb8,"), "{socket}: {h}");
        assert!(h.contains("flags [DF]"), "{socket}: {h}");
        assert!(!h.contains("bad cksum"), "{socket}: {h}");
        assert!(t.contains("[udp sum ok]"), "{socket}: {h}\n{t}");
        assert!(
            t.contains("198.18.0.1.") && t.contains(&format!("> 198.18.0.2.{port}:")),
            "{t}"
        );
        if socket == "packet" {
            assert!(h.contains(&format!("> {mac}, ethertype IPv4")), "{h}");
        }
        if t.ends_with("UDP, length 100") {
            probes += 1;
        }
    }
    // The probes and the three end markers.
    assert_eq!(probes, PROBES + 3, "{socket}");
}

#[test]
fn udp_socket_probes_arrive_marked_and_checksummed() {
    judge("udp", 6101);
}

#[test]
fn raw_socket_probes_arrive_marked_and_checksummed() {
    judge("raw", 6102);
}

#[test]
fn packet_socket_probes_arrive_marked_checksummed_to_the_peers_mac() {
    judge("packet", 6103);
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn start_at_puts_the_first_deadline_on_the_given_time() {
    if !netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let rx = receiver(&lab, 6104);
    let rec = lab.file("tx.wlr");
    let at = unix_ns() + 2_500_000_000;
    let tx = run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", "6104", "--socket", "raw"])
        .args([
            "--start-at",
            &at.to_string(),
            "--count",
            "50",
            "--rate",
            "1kpps",
        ])
        .args(["--json", "--quiet", "--record"])
        .arg(&rec));
    let rx = finish(rx);
    assert_eq!(flow(&rx, 1)["received"], 50);
    let txj = json(&tx);
    assert_eq!(txj["config"]["start_at_unix_ns"], at);
    let e = &flow(&txj, 1)["engine"];
    assert_eq!(e["first_deadline_unix_ns"], at);
    assert!(e["phase"].is_null(), "--start-at implies --phase off: {e}");
    // sched_ns counts from start_unix_ns, 50 ms before the first deadline.
    let start = e["start_unix_ns"].as_u64().unwrap();
    let out = run(Command::new(exe())
        .args(["export", "-f", "jsonl"])
        .arg(&rec));
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], 0);
    let sched = first["sched_ns"].as_u64().unwrap();
    assert_eq!(start + sched, at);
    assert!(
        first["tx_ns"].as_u64().unwrap() >= at,
        "{first} before {at}"
    );
}

/// Runs `wirelab send HOST` in the sender's namespace with `args`,
/// expecting exit code `code`; returns stderr.
fn refused(lab: &Lab, host: &str, args: &[&str], code: i32) -> String {
    let out = lab
        .wirelab(&lab.s)
        .args(["send", host, "--port", "6105", "--count", "5", "--quiet"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    err
}

#[test]
fn what_a_socket_cannot_do_is_refused_with_the_reason() {
    if !netns_available(&[]) || !tools_available(&["setpriv"]) {
        return;
    }
    let lab = Lab::new();
    let dev = lab.tx_if().to_string();
    for socket in ["raw", "packet"] {
        let e = refused(
            &lab,
            "198.18.0.2",
            &["--socket", socket, "--size", "1473"],
            2,
        );
        assert!(
            e.contains(&format!(
                "--size const:1473: --socket {socket} cannot carry a payload of 1473 bytes: the MTU of {dev} is 1500, so the largest is 1472 bytes"
            )),
            "{e}"
        );
        // The largest size goes.
        refused(
            &lab,
            "198.18.0.2",
            &["--socket", socket, "--size", "1472"],
            0,
        );
        let e = refused(&lab, "198.18.0.2", &["--socket", socket, "-6"], 2);
        assert!(
            e.contains(&format!(
                "--socket {socket} builds IPv4 headers: -6 needs --socket udp"
            )),
            "{e}"
        );
        let e = refused(&lab, "fd77::2", &["--socket", socket], 2);
        assert!(e.contains("builds IPv4 headers"), "{e}");
    }
    // A packet socket cannot send to this host's own address.
    let e = refused(&lab, "198.18.0.1", &["--socket", "packet"], 2);
    assert!(e.contains("198.18.0.1 is this host's own address"), "{e}");
    // A next hop that never answers ARP: a bounded wait, then its address.
    let e = refused(&lab, "198.18.0.9", &["--socket", "packet"], 1);
    assert!(
        e.contains(&format!(
            "no ARP answer from 198.18.0.9 on {dev} within 3 s"
        )),
        "{e}"
    );
    // UDP fragments: the same size is fine.
    refused(&lab, "198.18.0.2", &["--size", "1473"], 0);
    let e = refused(
        &lab,
        "198.18.0.2",
        &["--start-at", &(unix_ns() - 2_000_000_000).to_string()],
        2,
    );
    assert!(
        e.contains("--start-at is ") && e.contains(" ms in the past"),
        "{e}"
    );
    let e = refused(
        &lab,
        "198.18.0.2",
        &["--start-at", "2026-11-23T10:00:00.5Z", "--phase", "auto"],
        2,
    );
    assert!(e.contains("--start-at implies --phase off"), "{e}");
    let e = refused(
        &lab,
        "198.18.0.2",
        &[
            "--start-at",
            &(unix_ns() + 25 * 3_600_000_000_000).to_string(),
        ],
        2,
    );
    assert!(e.contains("at most 24 h"), "{e}");
    // Without CAP_NET_RAW (root with it dropped from the bounding set).
    for socket in ["raw", "packet"] {
        let out = wirelab_lab::lab::exec_in(&lab.s, "setpriv")
            .args(["--bounding-set", "-net_raw", "--", exe()])
            .args(["send", "198.18.0.2", "--port", "6105", "-n", "5", "-q"])
            .args(["--socket", socket])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("needs CAP_NET_RAW"), "{err}");
    }
}
