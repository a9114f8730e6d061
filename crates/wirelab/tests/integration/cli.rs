//! The binary's behaviour on bad input and its file tools, over loopback.

use crate::common::*;
use std::process::{Command, Stdio};

fn wirelab(args: &[&str]) -> std::process::Output {
    Command::new(exe()).args(args).output().unwrap()
}

/// `wirelab recv -4 --bind 127.0.0.1 ARGS` on a free port, its stdout
/// piped, once it listens; and the port.
fn loopback_recv(args: &[&str]) -> (std::process::Child, String) {
    let port = free_udp_port().to_string();
    let rx = Command::new(exe())
        .args(["recv", "-4", "--bind", "127.0.0.1", "--port", &port])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_udp_here(port.parse().unwrap());
    (rx, port)
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
    let (rx, port) = loopback_recv(&[
        "--quiet",
        "--json",
        "--timeout",
        "20s",
        "--record",
        rx_file.to_str().unwrap(),
    ]);
    run(Command::new(exe())
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
        .arg(&tx_file));
    let rx = wait_ok(rx);
    assert_eq!(flow(&json(&rx), 1)["received"], 500);

    // What the cut leaves: every whole record but the last. The probes
    // received are the distinct sequence numbers among them (the end
    // markers repeat the last probe, so the cut may or may not lose one).
    let want = {
        let f = std::fs::File::open(&rx_file).unwrap();
        let r = wirelab_wire::record::RecordReader::new(std::io::BufReader::new(f)).unwrap();
        let mut recs: Vec<_> = r.map(|x| x.unwrap()).collect();
        recs.pop();
        let seqs: std::collections::BTreeSet<u64> = recs.iter().map(|r| r.seq).collect();
        seqs.len() as u64
    };
    // Cut 10 bytes off: the last record is partial.
    let len = std::fs::metadata(&rx_file).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&rx_file)
        .unwrap();
    f.set_len(len - 10).unwrap();
    drop(f);

    let an = run(Command::new(exe())
        .arg("analyze")
        .arg("--json")
        .arg(&tx_file)
        .arg(&rx_file));
    let v = json(&an);
    let fl = flow(&v, 1);
    assert_eq!(fl["sent"], 500);
    // 500 probes + 3 end markers were recorded; the cut removed one record.
    assert_eq!(fl["received"], want, "{fl}");
    assert!(want == 499 || want == 500, "{want}");

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
    let (rx, port) = loopback_recv(&[
        "--format",
        "luna",
        "--idle-timeout",
        "500ms",
        "--timeout",
        "20s",
        "--json",
        "--quiet",
    ]);
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

/// A usage error (exit 2) whose message contains every one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    let out = wirelab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

/// A UDP port nothing answers on, held open so the probes have a sink.
fn sink() -> (std::net::UdpSocket, String) {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = s.local_addr().unwrap().port().to_string();
    (s, port)
}

#[test]
fn sizes_beyond_a_udp_payload_are_refused_not_clamped() {
    refused(
        &["send", "127.0.0.1", "--size", "70000", "-n", "1"],
        &["--size const:70000", "70000 bytes is outside 24..=65507"],
    );
    refused(
        &["send", "127.0.0.1", "--size", "uniform:64,70000", "-n", "1"],
        &["--size", "outside 24..=65507"],
    );
    refused(
        &["send", "127.0.0.1", "--size", "10", "-n", "1"],
        &["10 bytes is outside 24..=65507"],
    );
    refused(
        &["send", "127.0.0.1", "--interval", "2h", "-n", "1"],
        &["--interval const:2h", "outside 0..=3600 s"],
    );
    // A distribution whose tail passes the maximum is sent, and says so.
    let (_sink, port) = sink();
    let out = wirelab(&[
        "send",
        "127.0.0.1",
        "--port",
        &port,
        "--size",
        "exp:30000",
        "-n",
        "3",
        "--rate",
        "1kpps",
        "--phase",
        "off",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("note: sizes exp:30000: about 11.3% lie above 65507 bytes"),
        "{err}"
    );
}

#[test]
fn interval_zero_is_as_fast_as_possible_and_the_summary_says_so() {
    let (_sink, port) = sink();
    let out = wirelab(&[
        "send",
        "127.0.0.1",
        "--port",
        &port,
        "--interval",
        "0",
        "-n",
        "200",
        "--quiet",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("flow 1: 200 probes (12800 bytes) as fast as possible (interval 0)"),
        "{text}"
    );
    assert!(
        !text.contains(" 0.0 pps") && !text.contains("ppm"),
        "{text}"
    );
    assert!(
        !text.contains("start phase"),
        "no schedule, no phase: {text}"
    );
}

#[test]
fn replay_values_that_cannot_work_are_usage_errors_naming_the_range() {
    let r = |flag: &str, v: &str, want: &str| {
        refused(
            &["replay", "-w", "/dev/null", flag, v, "x.pcap"],
            &[flag, want],
        );
    };
    r("--mtu", "0", "0 is not in 68..=65535");
    r("--batch", "0", "0 is not in 1..=1024");
    r("--ring-slots", "0", "0 is not in 8..=65536");
    r(
        "--ring-slots",
        "4294967295",
        "4294967295 is not in 8..=65536",
    );
    r("--burst", "0", "must be at least 1");
    r("--limit", "0", "must be at least 1");
    r("--duration", "0", "must be above 0");
    r("--multiplier", "0", "must be between 0.000001 and 1000000");
    r("--pps", "0", "must be at least 0.001 pps");
    r("--mbps", "0", "must be at least 0.001");
    r("--spread-factor", "2", "must be within 0..=1");
    r("--phase-calibration", "1ms", "must be between 40ms and 10s");
    r("--enet-vlan-tag", "4096", "4096 is not in 0..=4095");
    r("--enet-vlan-pri", "8", "8 is not in 0..=7");
    r(
        "--enet-vlan-proto",
        "qinq",
        "expected 802.1q (0x8100) or 802.1ad (0x88a8)",
    );
    r(
        "--include",
        "S:10.0.0.0/8",
        "use a BPF filter such as 'src net 10.0.0.0/8'",
    );
    r("--include", "udp prt 53", "pcap-filter");
    r("--packets", "0-3", "packet numbers start at 1");
    r("--rt-priority", "0", "0 is not in 1..=99");
    refused(
        &["replay", "-w", "/dev/null", "--enet-vlan", "add", "x.pcap"],
        &["--enet-vlan: adding a tag needs a VLAN id (--enet-vlan-tag)"],
    );
}

#[test]
fn send_recv_and_capture_values_out_of_range_are_usage_errors() {
    let send = |flag: &str, v: &str, want: &str| {
        refused(&["send", "127.0.0.1", flag, v], &[flag, want]);
    };
    send("--count", "0", "must be at least 1");
    send("--duration", "0", "must be above 0");
    send("--port", "0", "0 is not in 1..=65535");
    send("--rate", "0", "must be at least 0.001 pps");
    send("--bitrate", "0", "must be above 0");
    send("--batch", "0", "0 is not in 1..=64");
    send("--rt-priority", "0", "0 is not in 1..=99");
    send("--padding", "256", "give a byte value");
    refused(
        &["send", "127.0.0.1", "-n", "5", "--warmup", "5"],
        &["--warmup 5 flags every one of the 5 probes of --count as warm-up"],
    );
    let recv = |flag: &str, v: &str, want: &str| refused(&["recv", flag, v], &[flag, want]);
    recv("--rcvbuf", "0", "must be between 4KiB and 1GiB");
    recv("--rcvbuf", "2GiB", "must be between 4KiB and 1GiB");
    recv("--busy-poll", "4294967295", "is not in 0..=1000000");
    recv("--poll-period", "0", "must be between 1us and 1s");
    recv("--timeout", "0", "must be above 0");
    recv("--idle-timeout", "0", "must be above 0");
    recv("--window", "0", "must be at least 1ms");
    let capture = |flag: &str, v: &str, want: &str| {
        refused(
            &["capture", "-i", "lo", "-w", "/dev/null", flag, v],
            &[flag, want],
        );
    };
    capture("--count", "0", "must be at least 1");
    capture("--duration", "0", "must be above 0");
    capture("--snaplen", "0", "0 is not in 1..=262144");
    capture(
        "--retire",
        "100000h",
        "must be 0 (the kernel's) or 1ms to 10s",
    );
    capture("--poll-period", "0", "0 is not in 1..=1000000");
    capture(
        "--poll-period",
        "18446744073709551",
        "is not in 1..=1000000",
    );
    capture("--rotate-files", "0", "must be at least 1");
    capture("--rotate-size", "0", "must be at least 4KiB");
    capture("--rotate-every", "0", "must be at least 1s");
    capture("--stats-interval", "0", "must be at least 10ms");
    capture(
        "--block-count",
        "4294967295",
        "a ring must stay below 4 GiB",
    );
    refused(
        &["analyze", "--window", "0", "x.wlr"],
        &["--window", "must be at least 1ms"],
    );
}

/// A CPU or priority the machine cannot take is a bad value (2), not a
/// missing privilege (3): the process is root here.
#[test]
fn a_cpu_that_does_not_exist_is_a_usage_error_not_a_privilege_error() {
    let (_sink, port) = sink();
    refused(
        &[
            "send",
            "127.0.0.1",
            "--port",
            &port,
            "-n",
            "1",
            "--cpu",
            "999",
        ],
        &["--cpu: cannot pin to CPU 999"],
    );
    refused(
        &[
            "capture",
            "-i",
            "lo",
            "-w",
            "/dev/null",
            "-c",
            "1",
            "--cpu",
            "999",
        ],
        &["--cpu: cannot pin to CPU 999"],
    );
}
