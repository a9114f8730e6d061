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
        "recv", "--bind", "127.0.0.1", "--port", "0", "--hw-timestamps", "lo", "--timeout", "1s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lo cannot stamp received packets in hardware"), "{err}");
    assert!(err.contains("software-receive") && err.contains("ethtool -T lo"), "{err}");
    let out = wirelab(&["recv", "--port", "0", "--hw-timestamps", "wlnosuch0", "--timeout", "1s"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no network interface named \"wlnosuch0\""), "{err}");
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
