//! The binary's behaviour on bad input and its file tools, over loopback.

mod common;
use common::*;
use std::process::{Command, Stdio};

fn wirelab(args: &[&str]) -> std::process::Output {
    Command::new(exe()).args(args).output().unwrap()
}

#[test]
fn bad_specs_are_usage_errors_that_say_what_to_do() {
    let out = wirelab(&["send", "127.0.0.1", "--interval", "exp:fast"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--interval"), "{err}");
    let out = wirelab(&["send", "127.0.0.1", "--rate", "10kbps?"]);
    assert_eq!(out.status.code(), Some(2));
    let out = wirelab(&["send", "127.0.0.1", "--size", "file:/nonexistent/sizes.txt"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/sizes.txt"), "{err}");
    let out = wirelab(&["send", "127.0.0.1", "--padding", "lots"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Loopback, like veth, has only software stamps: asking for hardware ones is
/// refused up front with the capabilities found, and the NIC is left alone.
#[test]
fn hw_timestamps_on_a_software_only_interface_is_a_clear_usage_error() {
    let out = wirelab(&[
        "recv",
        "--bind",
        "127.0.0.1",
        "--port",
        "0",
        "--hw-timestamps",
        "lo",
        "--timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lo cannot stamp received packets in hardware"),
        "{err}"
    );
    assert!(
        err.contains("software-receive") && err.contains("ethtool -T lo"),
        "{err}"
    );
    let out = wirelab(&[
        "recv",
        "--port",
        "0",
        "--hw-timestamps",
        "wlnosuch0",
        "--timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no network interface named \"wlnosuch0\""),
        "{err}"
    );
}

#[test]
fn analyze_rejects_garbage_without_panicking() {
    let dir = std::env::temp_dir().join(format!("wl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("garbage.wlr");
    std::fs::write(&p, b"this is not a record file, not at all").unwrap();
    let out = Command::new(exe()).arg("analyze").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a wirelab record file"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sends over loopback with records on both sides, cuts the receiver's file
/// mid-record as a crash would, and checks analyze and export still read
/// every whole record.
#[test]
fn loopback_records_survive_truncation_and_export() {
    let dir = std::env::temp_dir().join(format!("wl-cli-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (tx_file, rx_file) = (dir.join("tx.wlr"), dir.join("rx.wlr"));
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let rx = Command::new(exe())
        .args([
            "recv",
            "-4",
            "--bind",
            "127.0.0.1",
            "--port",
            &port,
            "--quiet",
            "--json",
            "--timeout",
            "20s",
        ])
        .arg("--record")
        .arg(&rx_file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let tx = Command::new(exe())
        .args([
            "send",
            "127.0.0.1",
            "--port",
            &port,
            "--rate",
            "5kpps",
            "--count",
            "500",
            "--quiet",
            "--record",
        ])
        .arg(&tx_file)
        .output()
        .unwrap();
    assert!(
        tx.status.success(),
        "{}",
        String::from_utf8_lossy(&tx.stderr)
    );
    let rx = rx.wait_with_output().unwrap();
    assert!(rx.status.success());
    assert_eq!(flow(&json(&rx), 1)["received"], 500);

    // Cut 10 bytes off: the last record is partial.
    let len = std::fs::metadata(&rx_file).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&rx_file)
        .unwrap();
    f.set_len(len - 10).unwrap();
    drop(f);

    let an = Command::new(exe())
        .arg("analyze")
        .arg("--json")
        .arg(&tx_file)
        .arg(&rx_file)
        .output()
        .unwrap();
    assert!(
        an.status.success(),
        "{}",
        String::from_utf8_lossy(&an.stderr)
    );
    let v = json(&an);
    let fl = flow(&v, 1);
    assert_eq!(fl["sent"], 500);
    // 500 probes + 3 end markers were recorded; the cut removed one record.
    let received = fl["received"].as_u64().unwrap();
    assert!(received == 499 || received == 500, "{fl}");

    let csv = Command::new(exe())
        .arg("export")
        .arg(&tx_file)
        .output()
        .unwrap();
    assert!(csv.status.success());
    let text = String::from_utf8(csv.stdout).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("flow,"), "{text}");
    assert_eq!(lines.count(), 500);
    let jl = Command::new(exe())
        .args(["export", "--format", "jsonl"])
        .arg(&tx_file)
        .output()
        .unwrap();
    let text = String::from_utf8(jl.stdout).unwrap();
    assert_eq!(text.lines().count(), 500);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn luna_peer() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/luna_peer.py")
}

/// `send --format luna --echo` against an independent LUNA server written
/// from the thesis: it parses every probe, sees sequence 0..N, sane send
/// times and the 21-byte minimum, and mirrors them for RTT.
#[test]
fn luna_sender_talks_to_an_independent_luna_server() {
    let port_file = std::env::temp_dir().join(format!("wl-luna-port-{}", std::process::id()));
    let _ = std::fs::remove_file(&port_file);
    let server = Command::new("python3")
        .arg(luna_peer())
        .args(["server", port_file.to_str().unwrap(), "100"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs (scripts/install-deps.sh installs it)");
    let t0 = std::time::Instant::now();
    let port = loop {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            break p;
        }
        assert!(t0.elapsed().as_secs() < 10, "LUNA peer did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&port_file);
    let before = wall_ns();
    let out = wirelab(&[
        "send",
        "127.0.0.1",
        "-4",
        "--port",
        &port,
        "--format",
        "luna",
        "--echo",
        "--size",
        "21",
        "--rate",
        "2kpps",
        "--count",
        "100",
        "--json",
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let fl = flow(&v, 1);
    assert_eq!(fl["sent"], 100);
    assert_eq!(fl["echo_replies"], 100, "{fl}");
    assert!(fl["rtt"]["rtt"]["p50_ns"].as_u64().unwrap() > 0, "{fl}");
    assert!(
        fl["rtt"]["forward"].is_null(),
        "LUNA mirrors: no reflector times"
    );
    let peer = server.wait_with_output().unwrap();
    let p: serde_json::Value = serde_json::from_slice(&peer.stdout).unwrap();
    let seqs: Vec<u64> = p["seqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (0..100).collect::<Vec<u64>>(),
        "no priming datagram, no end markers"
    );
    assert_eq!(p["sizes"], serde_json::json!([21]));
    assert_eq!(p["echoed"], 100);
    let (lo, hi) = (
        p["min_tx_ns"].as_u64().unwrap(),
        p["max_tx_ns"].as_u64().unwrap(),
    );
    assert!(
        before <= lo && hi <= wall_ns(),
        "send times are wall-clock timespecs"
    );
}

/// `recv --format luna` takes an independent LUNA client's probes: one flow
/// for its source address, the skipped sequence counted lost, ended by
/// silence (LUNA sends no end marker).
#[test]
fn luna_receiver_counts_an_independent_luna_client() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let rx = Command::new(exe())
        .args([
            "recv",
            "-4",
            "--bind",
            "127.0.0.1",
            "--port",
            &port,
            "--format",
            "luna",
            "--idle-timeout",
            "500ms",
            "--timeout",
            "20s",
            "--json",
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let st = Command::new("python3")
        .arg(luna_peer())
        .args(["client", &port, "300", "123"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = rx.wait_with_output().unwrap();
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["receiver"]["end_reason"], "idle-timeout");
    assert_eq!(v["receiver"]["format"], "luna");
    let src = &v["receiver"]["flow_sources"][0];
    assert_eq!(src["flow"], 1);
    assert!(
        src["source"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{src}"
    );
    let fl = flow(&v, 1);
    assert_eq!(fl["received"], 299);
    assert_eq!(fl["lost"], 1, "{fl}");
    assert_eq!(fl["duplicates"], 0);
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}
