//! End-to-end crash safety: `kill -9` of `capture`, `recv --record` and
//! `send --record` mid-run leaves files that wirelab (`export`, `analyze`,
//! `replay`), tshark and capinfos read up to the last flushed block, and
//! what is lost is at most what was written in the last flush interval.
//!
//! Writers hand their data to the kernel at least every flush interval
//! (200 ms: `recordlog::FLUSH_INTERVAL`, `capture::output::FLUSH_INTERVAL_NS`),
//! so a process killed outright loses only what it wrote since. The tests
//! wait for the data to appear with deadlines of many seconds, never
//! asserting how fast.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use wirelab_pcap::PcapReader;
use wirelab_wire::record::{RecordKind, RecordReader};

/// Whole records in a record file, with their kind and sequence number, and the bytes
/// of a partial record at the end.
fn records(path: &Path) -> (Vec<(RecordKind, u64)>, usize) {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = RecordReader::new(std::io::BufReader::new(f))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v = r
        .by_ref()
        .map(|x| x.map(|r| (r.kind, r.seq)).unwrap())
        .collect();
    (v, r.trailing_bytes)
}

/// Sequence numbers of the whole records of `kind`, or none while the file has no
/// complete header yet.
fn seqs_of(path: &Path, kind: RecordKind) -> Vec<u64> {
    let Ok(f) = std::fs::File::open(path) else {
        return vec![];
    };
    let Ok(r) = RecordReader::new(std::io::BufReader::new(f)) else {
        return vec![];
    };
    r.filter_map(Result::ok)
        .filter(|r| r.kind == kind)
        .map(|r| r.seq)
        .collect()
}

/// What wirelab's reader finds in a capture file: the UDP destination port and probe
/// sequence number of each probe, in file order, and the error that ended the read
/// (a cut-short file), if any.
fn probes(path: &Path) -> (Vec<(u16, u64)>, Option<String>) {
    let Ok(f) = std::fs::File::open(path) else {
        return (vec![], Some("no file".into()));
    };
    let mut r = match PcapReader::new(std::io::BufReader::new(f)) {
        Ok(r) => r,
        Err(e) => return (vec![], Some(e.to_string())),
    };
    let mut v = vec![];
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                let d = p.data;
                // Ethernet / IPv4 (20-byte header) / UDP / probe magic "WL".
                if d.len() >= 14 + 20 + 8 + 24 && d[12..14] == [8, 0] && d[42..44] == [0x57, 0x4c] {
                    let port = u16::from_be_bytes([d[36], d[37]]);
                    let seq = u64::from_be_bytes(d[50..58].try_into().unwrap());
                    v.push((port, seq));
                }
            }
            Ok(None) => return (v, None),
            Err(e) => {
                assert!(e.is_truncation(), "{}: {e}", path.display());
                return (v, Some(e.to_string()));
            }
        }
    }
}

/// Polls `f` every 20 ms until it is true; panics with `what` after 20 s.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill9(c: &mut Child) {
    run(Command::new("kill").args(["-KILL", &c.id().to_string()]));
    let st = c.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(9),
        "{st:?}"
    );
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A capture on the receiving interface of probes to `port`, started and its file present.
fn start_capture(lab: &Lab, file: &Path, format: &[&str], port: u16) -> Child {
    let c = spawn(
        lab.wirelab(&lab.r)
            .args(["capture", "-i", lab.rx_if(), "--quiet", "-w"])
            .arg(file)
            .args(format)
            .args(["udp", "dst", "port", &port.to_string()]),
    );
    wait_for("capture file created", || file.exists());
    c
}

/// tshark's and capinfos' packet counts of `file`. A file cut inside a record (a kill
/// during a write) makes both say so and exit non-zero after counting what precedes it.
fn tool_counts(file: &Path) -> (u64, u64) {
    let tshark = Command::new("tshark")
        .args(["-n", "-T", "fields", "-e", "frame.number", "-r"])
        .arg(file)
        .output()
        .unwrap();
    let cut =
        |o: &Output| o.status.success() || String::from_utf8_lossy(&o.stderr).contains("cut short");
    assert!(
        cut(&tshark),
        "tshark: {}",
        String::from_utf8_lossy(&tshark.stderr)
    );
    let t = String::from_utf8_lossy(&tshark.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .count() as u64;
    let ci = Command::new("capinfos")
        .args(["-M", "-c"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        cut(&ci),
        "capinfos: {}",
        String::from_utf8_lossy(&ci.stderr)
    );
    let text = String::from_utf8_lossy(&ci.stdout);
    let c = text
        .lines()
        .find(|l| l.contains("Number of packets"))
        .and_then(|l| l.rsplit(['=', ':']).next())
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("capinfos output: {text}"));
    (t, c)
}

/// `wirelab export FILE` (CSV): data rows, and what it said on stderr.
fn export_rows(file: &Path) -> (usize, String) {
    let out = run(Command::new(exe()).arg("export").arg(file));
    let rows = String::from_utf8_lossy(&out.stdout).lines().count() - 1;
    (rows, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `wirelab replay` of `file` in the sending namespace, at top speed: packets read and
/// sent, and what it said on stderr.
fn replay_count(lab: &Lab, file: &Path) -> (u64, u64, String) {
    let out = run(lab
        .wirelab(&lab.s)
        .args([
            "replay",
            "-i",
            lab.tx_if(),
            "--topspeed",
            "--json",
            "--quiet",
        ])
        .arg(file));
    let v = json(&out);
    let n = |x: &serde_json::Value| x.as_u64().unwrap_or_else(|| panic!("no count in {v}"));
    (
        n(&v["read"]["read"]),
        n(&v["fidelity"]["packets"]),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A sender that sends 301 probes 1 ms apart, then waits 60 s for the next: killed in
/// that pause, everything it and its peers wrote is due in their files, so the counts
/// after `kill -9` are exact.
#[test]
fn kill9_in_a_pause_loses_nothing_written_before_it() {
    if !netns_available(&["tshark", "capinfos"]) {
        return;
    }
    let lab = Lab::new();
    let ivals = lab.file("ivals.txt");
    // Packet 0 at once, 1..=300 a millisecond apart, the next a minute later.
    std::fs::write(&ivals, "1ms\n".repeat(300) + "60s\n").unwrap();
    let (tx, rx) = (lab.file("tx.wlr"), lab.file("rx.wlr"));
    let (ng, pcap) = (lab.file("c.pcapng"), lab.file("c.pcap"));
    let mut cap_ng = start_capture(&lab, &ng, &[], 6301);
    let mut cap_pcap = start_capture(&lab, &pcap, &["--format", "pcap"], 6301);
    let mut recv = spawn(
        lab.wirelab(&lab.r)
            .args([
                "recv",
                "-4",
                "--port",
                "6301",
                "--forever",
                "--quiet",
                "--record",
            ])
            .arg(&rx),
    );
    lab.wait_udp(&lab.r, 6301);
    let mut send = spawn(
        lab.wirelab(&lab.s)
            .args(["send", "198.18.0.2", "--port", "6301", "--size", "64"])
            .arg("--interval")
            .arg(format!("file:{}", ivals.display()))
            .args(["--duration", "120s", "--no-prime", "--quiet", "--record"])
            .arg(&tx),
    );
    let want: Vec<u64> = (0..=300).collect();
    wait_for("301 Tx records", || seqs_of(&tx, RecordKind::Tx) == want);
    wait_for("301 Rx records", || seqs_of(&rx, RecordKind::Rx) == want);
    for f in [&ng, &pcap] {
        wait_for("301 probes captured", || probes(f).0.len() == 301);
    }
    for c in [&mut send, &mut recv, &mut cap_ng, &mut cap_pcap] {
        kill9(c);
    }

    // Record files: every record, whole, in order; export and analyze read them.
    for (f, kind) in [(&tx, RecordKind::Tx), (&rx, RecordKind::Rx)] {
        let (recs, trailing) = records(f);
        assert_eq!(trailing, 0, "{}", f.display());
        assert_eq!(recs.iter().filter(|r| r.0 == kind).count(), 301);
        assert_eq!(seqs_of(f, kind), want);
        let (rows, err) = export_rows(f);
        assert_eq!(rows, recs.len(), "{err}");
        assert!(!err.contains("partial"), "{err}");
    }
    let a = json(&run(Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&tx)
        .arg(&rx)));
    let text = a.to_string();
    assert!(
        text.contains("\"sent\":301") && text.contains("\"received\":301"),
        "{text}"
    );
    // Capture files: whole blocks only, read alike by wirelab, tshark and capinfos, and
    // replayed by wirelab.
    for f in [&ng, &pcap] {
        let (p, err) = probes(f);
        assert_eq!(err, None, "{}", f.display());
        assert_eq!(p, want.iter().map(|&s| (6301, s)).collect::<Vec<_>>());
        assert_eq!(tool_counts(f), (301, 301), "{}", f.display());
        let (read, sent, err) = replay_count(&lab, f);
        assert_eq!((read, sent), (301, 301), "{err}");
    }
}

/// Killed while traffic flows: every file still loads up to its last whole record or
/// block, holds at least what it held before the kill, and wirelab, tshark and capinfos
/// count the same packets.
#[test]
fn kill9_under_traffic_leaves_files_readable_to_the_last_flush() {
    if !netns_available(&["tshark", "capinfos"]) {
        return;
    }
    let lab = Lab::new();
    let (tx, rx) = (lab.file("tx.wlr"), lab.file("rx.wlr"));
    let ng = lab.file("c.pcapng");
    let mut cap = start_capture(&lab, &ng, &[], 6302);
    let mut recv = spawn(
        lab.wirelab(&lab.r)
            .args([
                "recv",
                "-4",
                "--port",
                "6302",
                "--forever",
                "--quiet",
                "--record",
            ])
            .arg(&rx),
    );
    lab.wait_udp(&lab.r, 6302);
    let mut send = spawn(
        lab.wirelab(&lab.s)
            .args(["send", "198.18.0.2", "--port", "6302", "--size", "64"])
            .args([
                "--rate",
                "2kpps",
                "--duration",
                "120s",
                "--no-prime",
                "--quiet",
            ])
            .arg("--record")
            .arg(&tx),
    );
    // Well past one 1024-record chunk, so both full and partial chunks were written.
    let mut seen = [0usize; 3];
    wait_for("1500 records and packets in every file", || {
        seen = [
            seqs_of(&tx, RecordKind::Tx).len(),
            seqs_of(&rx, RecordKind::Rx).len(),
            probes(&ng).0.len(),
        ];
        seen.iter().all(|&n| n >= 1500)
    });
    for c in [&mut send, &mut recv, &mut cap] {
        kill9(c);
    }

    let (txs, rxs) = (seqs_of(&tx, RecordKind::Tx), seqs_of(&rx, RecordKind::Rx));
    // The sender's records are its sends in order: 0, 1, 2, ... with nothing missing.
    assert!(txs.len() >= seen[0], "{} < {}", txs.len(), seen[0]);
    assert_eq!(txs, (0..txs.len() as u64).collect::<Vec<_>>());
    assert!(rxs.len() >= seen[1], "{} < {}", rxs.len(), seen[1]);
    assert!(
        rxs.windows(2).all(|w| w[0] < w[1]),
        "received out of order?"
    );
    for f in [&tx, &rx] {
        let (recs, trailing) = records(f);
        let (rows, err) = export_rows(f);
        assert_eq!(rows, recs.len(), "{err}");
        // A partial last record (a kill inside a write) is skipped and reported.
        assert_eq!(
            trailing > 0,
            err.contains(&format!("ignored a partial record of {trailing} bytes")),
            "{err}"
        );
        run(Command::new(exe()).args(["analyze", "--json"]).arg(f));
    }
    let (p, cut) = probes(&ng);
    assert!(p.len() >= seen[2], "{} < {}", p.len(), seen[2]);
    assert!(p.windows(2).all(|w| w[0].1 < w[1].1), "probes out of order");
    let n = p.len() as u64;
    assert_eq!(tool_counts(&ng), (n, n));
    // replay reads the whole packets, and says so if the last one was cut.
    let (read, sent, err) = replay_count(&lab, &ng);
    assert_eq!((read, sent), (n, n), "{err}");
    assert_eq!(
        cut.is_some(),
        err.contains("file cut short"),
        "{cut:?} {err}"
    );
}
