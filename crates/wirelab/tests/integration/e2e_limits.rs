//! End-to-end: hostile inputs and honest counts. Memory stays bounded by
//! what the user asked (peak RSS of the real binary, from wait4), flows
//! past a cap are refused or counted, records of unknown kinds and
//! inconsistent inputs are reported, and a held UDP port is refused.
//!
//! Inputs are crafted here, small: record files with the wire crate's
//! encoder, spoofed probes by a few lines of python3 in a namespace.

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use wirelab_wire::record::{Record, RecordFileHeader, RecordKind, Role};
use wirelab_wire::ProbeFlags;

/// The stated bound on each command's peak RSS in these tests.
const PEAK_BOUND_KIB: u64 = 200 * 1024;

/// Runs its arguments as a child and writes the child's peak RSS (KiB,
/// wait4's ru_maxrss) to the file named first; exits with the child's code.
/// std cannot wait with rusage, and unsafe code stays in wirelab-io.
const MEASURE_PY: &str = "import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, st, ru = os.wait4(p.pid, 0)
open(sys.argv[1], 'w').write(str(ru.ru_maxrss))
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
";

/// Sends spoofed wirelab probes: flows 1..=FLOWS, PER probes each, the
/// last one of each flow flagged LAST; paced so no queue overflows.
const SPOOF_PY: &str = "import socket, struct, sys, time
host, port, flows, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = 0
for f in range(1, flows + 1):
    for q in range(per):
        flags = 4 if q == per - 1 else 0
        s.sendto(struct.pack('>HBBIQQ', 0x574C, 1, flags, f, q, time.time_ns()), (host, port))
        n += 1
        if n % 200 == 0:
            time.sleep(0.001)
";

/// `wirelab ARGS` under the measuring parent, in namespace `ns` if given.
fn measured(ns: Option<&str>, rss: &Path, args: &[&OsStr]) -> Command {
    let mut c = match ns {
        Some(ns) => wirelab_lab::lab::exec_in(ns, "python3"),
        None => Command::new("python3"),
    };
    c.args(["-c", MEASURE_PY]).arg(rss).arg(exe()).args(args);
    c
}

/// The peak RSS the measuring parent wrote, in KiB.
fn peak_kib(rss: &Path) -> u64 {
    let s = std::fs::read_to_string(rss).unwrap_or_else(|e| panic!("{}: {e}", rss.display()));
    s.trim()
        .parse()
        .unwrap_or_else(|e| panic!("peak RSS {s:?}: {e}"))
}

fn assert_small(what: &str, rss: &Path) {
    let kib = peak_kib(rss);
    assert!(
        kib > 0 && kib < PEAK_BOUND_KIB,
        "{what}: peak RSS {kib} KiB, bound {PEAK_BOUND_KIB} KiB"
    );
}

fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
    args.iter().map(|a| a.into()).collect()
}

fn refs(v: &[std::ffi::OsString]) -> Vec<&OsStr> {
    v.iter().map(|a| a.as_os_str()).collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A scratch directory for one test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("wl-limits-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const T0: u64 = 1_700_000_000_000_000_000;

/// A record file: `role`, a metadata JSON with `start_unix_ns`, the records
/// and any raw bytes after them.
fn record_file(path: &Path, role: Role, start: u64, recs: &[Record], raw: &[u8]) {
    let meta = format!(
        r#"{{"wirelab_version":"test","role":"{}","host":"h","clock":"test","start_unix_ns":{start},"config":{{}}}}"#,
        role.as_str()
    );
    let mut b = RecordFileHeader {
        role,
        metadata: meta,
    }
    .to_bytes();
    for r in recs {
        b.extend_from_slice(&r.to_bytes());
    }
    b.extend_from_slice(raw);
    std::fs::write(path, b).unwrap();
}

fn tx(flow: u32, seq: u64) -> Record {
    Record {
        flow,
        seq,
        size: 100,
        sched_ns: (seq + 1) * 1_000_000,
        tx_ns: T0 + (seq + 1) * 1_000_000,
        kind: RecordKind::Tx,
        ..Record::default()
    }
}

fn rx(flow: u32, seq: u64) -> Record {
    let t = tx(flow, seq);
    Record {
        kind: RecordKind::Rx,
        sched_ns: 0,
        rx_ns: t.tx_ns + 50_000,
        rec_flags: Record::RX_KERNEL_TS,
        ..t
    }
}

/// 4,096 flows of one record each used to take 1.2 MB per flow (4.9 GB);
/// 4,097 the same before failing on a limit no flag could raise.
#[test]
fn analyze_of_many_one_record_flows_is_small_and_the_cap_is_a_flag() {
    let d = Scratch::new("analyze");
    let (f4096, f4097, rss) = (d.file("4096.wlr"), d.file("4097.wlr"), d.file("rss"));
    let recs: Vec<Record> = (0..4097).map(|f| rx(f, 0)).collect();
    record_file(&f4096, Role::Receiver, T0, &recs[..4096], &[]);
    record_file(&f4097, Role::Receiver, T0, &recs, &[]);

    let args = [os(&["analyze", "--json"]), vec![f4096.clone().into()]].concat();
    let out = measured(None, &rss, &refs(&args)).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_small("analyze, 4096 flows", &rss);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["flows"], 4096);
    assert_eq!(v["totals"]["received"], 4096);

    let args = [os(&["analyze"]), vec![f4097.clone().into()]].concat();
    let out = measured(None, &rss, &refs(&args)).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_small("analyze, 4097 flows", &rss);
    let e = stderr(&out);
    assert!(
        e.contains("the records hold 4097 flows, more than --max-flows 4096")
            && e.contains("raise --max-flows"),
        "{e}"
    );
    assert!(!e.contains("AnalysisConfig"), "{e}");

    let out = run(Command::new(exe())
        .args(["analyze", "--json", "--max-flows", "4097"])
        .arg(&f4097));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["flows"], 4097);
}

/// A receiver facing spoofed flow ids used to hold ~1 MiB for each of up to
/// 4,096 flows, and to drop the probes of further flows from its figures
/// without a word.
#[test]
fn recv_facing_spoofed_flow_ids_stays_small_and_counts_what_it_cannot_track() {
    if !netns_available(&["python3"]) {
        return;
    }
    let lab = Lab::new();
    let rss = lab.file("rss");
    let (flows, per) = (5000u64, 2u64);
    let args = os(&[
        "recv",
        "--port",
        "6101",
        "--json",
        "--quiet",
        "--linger",
        "5s",
        "--timeout",
        "120s",
    ]);
    let recv = measured(Some(&lab.r), &rss, &refs(&args))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, 6101);
    run(wirelab_lab::lab::exec_in(&lab.s, "python3").args([
        "-c",
        SPOOF_PY,
        "198.18.0.2",
        "6101",
        &flows.to_string(),
        &per.to_string(),
    ]));
    let out = recv.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_small("recv, 5000 spoofed flows", &rss);
    let v = json(&out);
    let c = &v["receiver"]["counters"];
    assert_eq!(c["packets"], flows * per, "{c}");
    assert_eq!(c["kernel_drops"], 0, "{c}");
    assert_eq!(v["flows"].as_array().unwrap().len(), 4096);
    let t = &v["totals"];
    assert_eq!(t["untracked_flows"], flows - 4096, "{t}");
    assert_eq!(t["untracked_packets"], (flows - 4096) * per, "{t}");
    assert_eq!(t["received"], 4096 * per, "{t}");
    let f = flow(&v, 4096);
    assert_eq!(
        (f["received"].as_u64(), f["lost"].as_u64()),
        (Some(2), Some(0))
    );
}

/// The untracked count in the text summary, with a small --max-flows.
#[test]
fn recv_text_says_how_many_probes_it_did_not_track() {
    if !netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let recv = lab
        .wirelab(&lab.r)
        .args(["recv", "--port", "6102", "--quiet", "--max-flows", "2"])
        .args(["--timeout", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, 6102);
    run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", "6102", "--flows", "5"])
        .args(["--count", "10", "--rate", "1kpps", "--quiet"]));
    let out = recv.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let t = stdout(&out);
    // 3 untracked flows of 10 probes and 3 end markers each.
    assert!(
        t.contains(
            "note: 39 probes of 3 flows past the --max-flows limit were counted but not analyzed"
        ),
        "{t}"
    );
    assert_eq!(
        t.lines().filter(|l| l.starts_with("total")).count(),
        1,
        "{t}"
    );
}

/// 256 sending flows used to take 840 MB: per-flow statistics and KS
/// samples preallocated, and 64 send buffers of 64 KiB each.
#[test]
fn send_with_256_flows_stays_small() {
    if !netns_available(&["python3"]) {
        return;
    }
    let lab = Lab::new();
    let rss = lab.file("rss");
    let recv = lab
        .wirelab(&lab.r)
        .args(["recv", "--port", "6103", "--json", "--quiet"])
        .args(["--timeout", "120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, 6103);
    let args = os(&[
        "send",
        "198.18.0.2",
        "--port",
        "6103",
        "--flows",
        "256",
        "--count",
        "20",
        "--rate",
        "1kpps",
        "--json",
        "--quiet",
    ]);
    let out = measured(Some(&lab.s), &rss, &refs(&args)).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_small("send --flows 256", &rss);
    let v = json(&out);
    assert_eq!(v["totals"]["sent"], 256 * 20);
    let r = recv.wait_with_output().unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(json(&r)["totals"]["flows"], 256);
}

/// A second receiver on a held port used to bind too (SO_REUSEADDR) and
/// take the traffic, both exiting 0; sharing is now asked for explicitly.
#[test]
fn recv_refuses_a_held_port_unless_every_receiver_shares_it() {
    if !netns_available(&["ss"]) {
        return;
    }
    let lab = Lab::new();
    let recv = |port: &str, share: bool| {
        let mut c = lab.wirelab(&lab.r);
        c.args([
            "recv",
            "--port",
            port,
            "--json",
            "--quiet",
            "--timeout",
            "60s",
        ]);
        if share {
            c.arg("--reuse-port");
        }
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    };
    let first = recv("6104", false).spawn().unwrap();
    lab.wait_udp(&lab.r, 6104);
    for share in [false, true] {
        let second = recv("6104", share).output().unwrap();
        assert_eq!(
            second.status.code(),
            Some(2),
            "share {share}: {}",
            stderr(&second)
        );
        assert!(
            stderr(&second).contains("port 6104 is already in use"),
            "{}",
            stderr(&second)
        );
    }
    run(lab.wirelab(&lab.s).args([
        "send",
        "198.18.0.2",
        "--port",
        "6104",
        "--count",
        "100",
        "--quiet",
    ]));
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(json(&first)["totals"]["received"], 100);

    // Receivers that all ask share the port; every flow goes to one of them.
    let a = recv("6105", true).spawn().unwrap();
    lab.wait_udp(&lab.r, 6105);
    let b = recv("6105", true).spawn().unwrap();
    let sockets = || {
        let o = lab.sh(&lab.r, "ss -Hunl 'sport = :6105' | wc -l");
        stdout(&o).trim().parse::<u32>().unwrap_or(0)
    };
    let mut tries = 0;
    while sockets() < 2 {
        tries += 1;
        assert!(tries < 200, "the second receiver did not bind within 10 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", "6105", "--flows", "16"])
        .args(["--count", "50", "--rate", "2kpps", "--quiet"]));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "{}{}",
        stderr(&a),
        stderr(&b)
    );
    let (ja, jb) = (json(&a), json(&b));
    let got = |j: &serde_json::Value, k: &str| j["totals"][k].as_u64().unwrap_or(0);
    assert_eq!(got(&ja, "flows") + got(&jb, "flows"), 16, "{ja}\n{jb}");
    assert_eq!(got(&ja, "received") + got(&jb, "received"), 16 * 50);
}

/// Records of an unknown kind used to vanish: export printed the header
/// line only and analyze said `ignored_records: 0`.
#[test]
fn records_of_an_unknown_kind_are_counted_by_export_and_analyze() {
    let d = Scratch::new("unknown");
    let file = d.file("rx.wlr");
    let mut raw = Vec::new();
    for seq in 2..5 {
        let mut b = rx(1, seq).to_bytes();
        b[57] = 9; // a kind this wirelab does not know
        raw.extend_from_slice(&b);
    }
    record_file(&file, Role::Receiver, T0, &[rx(1, 0), rx(1, 1)], &raw);

    let out = run(Command::new(exe()).arg("export").arg(&file));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("skipped 3 records of an unknown kind"),
        "{}",
        stderr(&out)
    );
    let out = run(Command::new(exe()).args(["analyze", "--json"]).arg(&file));
    let v = json(&out);
    assert_eq!(v["totals"]["unknown_kind_records"], 3, "{}", v["totals"]);
    assert_eq!(v["totals"]["received"], 2);
    let out = run(Command::new(exe()).arg("analyze").arg(&file));
    assert!(
        stdout(&out).contains("note: 3 records of an unknown kind were skipped"),
        "{}",
        stdout(&out)
    );
}

/// A sender file cut at a record boundary used to give "sent 38, received
/// 100, lost 0", and a receiver file given twice 100 duplicates, silently.
#[test]
fn analyze_warns_about_inconsistent_inputs() {
    let d = Scratch::new("inconsistent");
    let (txf, rxf) = (d.file("tx.wlr"), d.file("rx.wlr"));
    let txs: Vec<Record> = (0..38).map(|s| tx(1, s)).collect();
    let mut rxs: Vec<Record> = (0..100).map(|s| rx(1, s)).collect();
    rxs[99].probe_flags = ProbeFlags::LAST;
    record_file(&txf, Role::Sender, T0, &txs, &[]);
    record_file(&rxf, Role::Receiver, T0 + 5, &rxs, &[]);

    let out = run(Command::new(exe()).arg("analyze").arg(&txf).arg(&rxf));
    let t = stdout(&out);
    assert!(
        t.contains(
            "warning: flow 1: 62 of 100 received sequence numbers are not in the sender's records \
             (38 recorded, up to seq 37; received up to seq 99)"
        ),
        "{t}"
    );
    let out = run(Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&txf)
        .arg(&rxf));
    let v = json(&out);
    assert_eq!(v["warnings"][0]["code"], "sender_records_incomplete");
    assert_eq!(v["warnings"][0]["flow"], 1);
    assert!(
        stderr(&out).contains("warning: flow 1: 62 of 100"),
        "{}",
        stderr(&out)
    );

    // The same receiver file twice: read once, said so, no duplicates.
    let copy = d.file("rx-copy.wlr");
    std::fs::copy(&rxf, &copy).unwrap();
    let out = run(Command::new(exe())
        .args(["analyze", "--json"])
        .arg(&rxf)
        .arg(&copy));
    let v = json(&out);
    let f = flow(&v, 1);
    assert_eq!(
        (f["received"].as_u64(), f["duplicates"].as_u64()),
        (Some(100), Some(0))
    );
    assert_eq!(
        v["warnings"][0]["code"], "same_recording_twice",
        "{}",
        v["warnings"]
    );
    let out = run(Command::new(exe()).arg("analyze").arg(&rxf).arg(&rxf));
    let t = stdout(&out);
    assert!(
        t.contains(&format!(
            "warning: {} is the same recording as {} (same header and first record): read once",
            rxf.display(),
            rxf.display()
        )),
        "{t}"
    );
}
