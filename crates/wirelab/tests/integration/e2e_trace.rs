//! `wirelab trace` end to end: the real binary over files in a scratch
//! directory (no namespaces, no network). Exact bytes and counts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wirelab_wire::record::{Record, RecordFileHeader, RecordKind, Role};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_wirelab")
}

/// A scratch directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p =
            std::env::temp_dir().join(format!("wirelab-e2e-trace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }

    fn write(&self, f: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(f);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn read(&self, f: &str) -> Vec<u8> {
        std::fs::read(self.path(f)).unwrap()
    }

    fn text(&self, f: &str) -> String {
        String::from_utf8(self.read(f)).unwrap()
    }

    /// Runs `wirelab trace ARGS` in the directory.
    fn trace(&self, args: &[&str]) -> Output {
        Command::new(exe())
            .arg("trace")
            .args(args)
            .current_dir(&self.0)
            .output()
            .unwrap()
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.trace(args);
        assert!(
            o.status.success(),
            "trace {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// Runs and expects exit 2; returns stderr.
    fn bad(&self, args: &[&str]) -> String {
        let o = self.trace(args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "trace {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stderr).unwrap()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// docs/trace.md's example S1: D1000, DROP, DUP2000, D3000, DUP500, DUP600,
/// D700.
const S1_TXT: &str = "1000\n1073741824\n-2147481648\n3000\n-2147483148\n-2147483048\n700\n";
const S1_BIN: [u8; 28] = [
    0xe8, 0x03, 0, 0, 0, 0, 0, 0x40, 0xd0, 0x07, 0, 0x80, 0xb8, 0x0b, 0, 0, 0xf4, 0x01, 0, 0x80,
    0x58, 0x02, 0, 0x80, 0xbc, 0x02, 0, 0,
];
const S1_CSV: &str =
    "action,delay_us\npass,1000\ndrop,0\ndup,2000\npass,3000\ndup,500\ndup,600\npass,700\n";

#[test]
fn convert_round_trips_are_byte_exact() {
    let d = Dir::new("convert");
    d.write("s1.nist.txt", S1_TXT.as_bytes());
    d.ok(&["convert", "s1.nist.txt", "s1.bin"]);
    assert_eq!(d.read("s1.bin"), S1_BIN);
    d.ok(&["convert", "s1.bin", "s1.pkt.csv"]);
    assert_eq!(d.text("s1.pkt.csv"), S1_CSV);
    d.ok(&["convert", "s1.pkt.csv", "back.nist.txt"]);
    assert_eq!(d.text("back.nist.txt"), S1_TXT);
    // Big-endian words, and back.
    d.ok(&["convert", "s1.bin", "be.bin", "--to-order", "be"]);
    assert_eq!(&d.read("be.bin")[..8], &[0, 0, 0x03, 0xe8, 0x40, 0, 0, 0]);
    d.ok(&[
        "convert",
        "be.bin",
        "le.bin",
        "--order",
        "be",
        "--to-order",
        "le",
    ]);
    assert_eq!(d.read("le.bin"), S1_BIN);
    // stdin to stdout with named formats.
    let o = Command::new(exe())
        .args([
            "trace", "convert", "-", "-", "--from", "nist-bin", "--to", "nist-txt",
        ])
        .stdin(std::fs::File::open(d.path("s1.bin")).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), S1_TXT);
    // Rates: Mahimahi → kbit-ms → Mahimahi.
    d.write("l.up", b"1\n3\n3\n4\n");
    d.ok(&["convert", "l.up", "r.kbit"]);
    assert_eq!(d.text("r.kbit"), "12\n0\n24\n12\n");
    d.ok(&["convert", "r.kbit", "back.up"]);
    assert_eq!(d.text("back.up"), "1\n3\n3\n4\n");
    // A time-indexed CSV of rates: 12 Mbit/s for 2 ms, then 6 Mbit/s for 4 ms.
    d.write("n.csv", b"dur_ms,rate_bps\n2,12Mbit\n4,6Mbit\n");
    d.ok(&["convert", "n.csv", "n.up"]);
    assert_eq!(d.text("n.up"), "1\n2\n4\n6\n");
}

#[test]
fn convert_refusals_name_the_record_and_leave_no_file() {
    let d = Dir::new("convert-bad");
    d.write("s1.bin", &S1_BIN);
    let e = d.bad(&["convert", "s1.bin", "s1.delays"]);
    assert_eq!(
        e,
        "wirelab: error: s1.bin: record 3: the delays format has no duplicate (use pkt-csv, \
         nist-bin or nist-txt)\n"
    );
    assert!(!d.path("s1.delays").exists());
    d.write("t.bin", &[1, 0, 0, 0, 2, 0]);
    let e = d.bad(&["convert", "t.bin", "t.pkt.csv"]);
    assert_eq!(
        e,
        "wirelab: error: t.bin: byte 4 (record 2): nist-bin length is not a multiple of 4: the \
         last record has 2 of 4 bytes (truncated file?)\n"
    );
    d.write("bad.delays", b"1\n2\n  fast\n");
    let e = d.bad(&["convert", "bad.delays", "x.bin"]);
    assert_eq!(
        e,
        "wirelab: error: bad.delays:3:3: delay: expected a number such as 1500 or 1.5ms, found \
         \"fast\"\n"
    );
    let e = d.bad(&["convert", "s1.bin", "x.up"]);
    assert!(
        e.starts_with("wirelab: error: cannot convert nist-bin to mahimahi:"),
        "{e}"
    );
    d.write("a.txt", b"5\n");
    let e = d.bad(&["convert", "a.txt", "a.bin"]);
    assert_eq!(
        e,
        "wirelab: error: a.txt: the extension .txt does not tell the trace format: add --from \
         nist-txt or --from delays\n"
    );
}

#[test]
fn dump_shows_words_bit_by_bit() {
    let d = Dir::new("dump");
    d.write("s1.bin", &S1_BIN);
    let out = d.ok(&["dump", "s1.bin", "--bits"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7);
    assert_eq!(
        lines[..3],
        [
            "1 0x000003e8 00 0 00000000000000000001111101000 delay 1000us",
            "2 0x40000000 01 0 00000000000000000000000000000 drop",
            "3 0x800007d0 10 0 00000000000000000011111010000 dup 2000us",
        ]
    );
    assert_eq!(
        d.ok(&["dump", "s1.bin"]).lines().nth(4),
        Some("5 dup 500us")
    );
    let json = d.ok(&["dump", "s1.bin", "--json"]);
    let v: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), 7);
    assert_eq!(v[2]["action"], "dup");
    assert_eq!(v[2]["word"], 0x8000_07d0u32);
    assert_eq!(v[2]["delay_ns"], 2_000_000);
    // A bad word still shows its bits; the exit is 2.
    d.write("bad.bin", &[0, 0, 0, 0xc0, 5, 0, 0, 0]);
    let o = d.trace(&["dump", "bad.bin", "--bits"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "1 0xc0000000 11 0 00000000000000000000000000000 error: bad.bin: byte 0 (record 1): \
         action bits 11 are not used (word 0xc0000000)\n\
         2 0x00000005 00 0 00000000000000000000000000101 delay 5us\n"
    );
    d.write("x.pkt.csv", S1_CSV.as_bytes());
    let e = d.bad(&["dump", "x.pkt.csv", "--bits"]);
    assert_eq!(
        e,
        "wirelab: error: --bits shows NIST Net words: x.pkt.csv is pkt-csv, not nist-bin or \
         nist-txt\n"
    );
}

#[test]
fn encode_builds_a_trace_word_by_word() {
    let d = Dir::new("encode");
    assert_eq!(
        d.ok(&["encode", "--action", "dup", "--delay-us", "500"]),
        "-2147483148\n"
    );
    for (action, us) in [("delay", "1000"), ("drop", "0"), ("dup", "2000")] {
        d.ok(&[
            "encode",
            "--action",
            action,
            "--delay-us",
            us,
            "--format",
            "bin",
            "-o",
            "t.bin",
            "--append",
        ]);
    }
    assert_eq!(d.read("t.bin"), S1_BIN[..12]);
    d.ok(&[
        "encode",
        "--action",
        "delay",
        "--delay-us",
        "-5",
        "--format",
        "bin",
        "-o",
        "neg.bin",
    ]);
    assert_eq!(d.read("neg.bin"), [5, 0, 0, 0x20]);
    // The negative delay is refused on reading unless --neg zero.
    let e = d.bad(&["stats", "neg.bin"]);
    assert_eq!(
        e,
        "wirelab: error: neg.bin: byte 0 (record 1): negative delay -5us (neg=zero makes \
         negative delays 0)\n"
    );
    assert!(d
        .ok(&["stats", "neg.bin", "--neg", "zero"])
        .contains("min 0.000us"));
    let e = d.bad(&["encode", "--action", "delay", "--delay-us", "536870912"]);
    assert!(e.contains("does not fit the word's 29 bits"), "{e}");
}

#[test]
fn stats_of_a_hand_made_trace_are_exact() {
    let d = Dir::new("stats");
    d.write(
        "h.pkt.csv",
        b"action,delay_us\npass,1000\ndrop\ndup,2000\npass,3000\ncorrupt,4000\n",
    );
    let out = d.ok(&["stats", "h.pkt.csv"]);
    assert_eq!(
        out,
        "h.pkt.csv: pkt-csv\n\
         records  5  (delay 3, drop 1, dup 1, corrupt 1)\n\
         delay    mean 2500.000us  σ 1290.994us  min 1000.000us  max 4000.000us  (over 4 delays and duplicates)\n\
         lag-1    0.2500\n\
         Hurst    - (needs at least 64 delays that vary)\n"
    );
    let j: serde_json::Value =
        serde_json::from_str(&d.ok(&["stats", "h.pkt.csv", "--json"])).unwrap();
    assert_eq!(j["schema"], "wirelab.trace.stats/1");
    assert_eq!(j["records"], 5);
    assert_eq!(j["mean_ns"], 2_500_000.0);
    assert_eq!(j["max_ns"], 4_000_000);
    assert_eq!(j["lag1"], 0.25);
    assert!(j["hurst"].is_null());
}

#[test]
fn gen_is_deterministic_and_long_range_dependent() {
    let d = Dir::new("gen");
    let args = |out: &'static str| {
        [
            "gen", "--dist", "normal", "--mean", "20ms", "--jitter", "2ms", "--hurst", "0.8",
            "--count", "65536", "--seed", "5", "-o", out,
        ]
    };
    d.ok(&args("a.pkt.csv"));
    d.ok(&args("b.pkt.csv"));
    assert_eq!(d.read("a.pkt.csv"), d.read("b.pkt.csv"));
    let j: serde_json::Value =
        serde_json::from_str(&d.ok(&["stats", "a.pkt.csv", "--json"])).unwrap();
    assert_eq!(j["records"], 65536);
    let h = j["hurst"]["hurst"].as_f64().unwrap();
    assert!((h - 0.8).abs() < 0.05, "{h}");
    let mean = j["mean_ns"].as_f64().unwrap();
    assert!((mean - 20e6).abs() < 1e6, "{mean}");
    // Drops, written as nist-bin: 4 bytes a record.
    d.ok(&[
        "gen", "--dist", "uniform", "--mean", "1ms", "--jitter", "500us", "--count", "1000",
        "--loss", "50%", "-o", "u.bin",
    ]);
    assert_eq!(d.read("u.bin").len(), 4000);
    let j: serde_json::Value = serde_json::from_str(&d.ok(&["stats", "u.bin", "--json"])).unwrap();
    let drops = j["drops"].as_u64().unwrap();
    assert!((400..600).contains(&drops), "{drops}");
    assert!(j["min_ns"].as_u64().unwrap() >= 500_000);
    assert!(j["max_ns"].as_u64().unwrap() <= 1_500_000);
    let e = d.bad(&[
        "gen", "--dist", "normal", "--mean", "1ms", "--count", "3", "-o", "x.up",
    ]);
    assert!(e.contains("mahimahi is not a packet trace"), "{e}");
}

fn record_file(path: &Path, role: Role, records: &[Record]) {
    let mut bytes = RecordFileHeader {
        role,
        metadata: "{}".into(),
    }
    .to_bytes();
    for r in records {
        bytes.extend_from_slice(&r.to_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn from_records_replays_the_measured_path() {
    let d = Dir::new("from-records");
    let t0 = 1_700_000_000_000_000_000u64;
    let tx = |seq: u64| Record {
        flow: 1,
        seq,
        tx_ns: t0 + seq * 1_000_000,
        kind: RecordKind::Tx,
        ..Record::default()
    };
    let rx = |seq: u64, owd_ns: u64| Record {
        flow: 1,
        seq,
        tx_ns: t0 + seq * 1_000_000,
        rx_ns: t0 + seq * 1_000_000 + owd_ns,
        kind: RecordKind::Rx,
        ..Record::default()
    };
    let sent: Vec<Record> = (0..5).map(tx).collect();
    // seq 1 lost, seq 3 duplicated (the copy later), arrival order mixed.
    let got = [
        rx(0, 500_000),
        rx(2, 700_000),
        rx(3, 650_000),
        rx(4, 450_000),
        rx(3, 900_250),
    ];
    record_file(&d.path("s.wlr"), Role::Sender, &sent);
    record_file(&d.path("r.wlr"), Role::Receiver, &got);
    let o = d.trace(&["from-records", "s.wlr", "r.wlr", "-o", "path.pkt.csv"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        d.text("path.pkt.csv"),
        "action,delay_us\npass,50\ndrop,0\npass,250\ndup,200\npass,450.25\npass,0\n"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains(
        "5 probes sent, 1 lost, 1 duplicate copies -> 6 records in path.pkt.csv (pkt-csv); \
         delays relative to the smallest one-way delay, 450.000us"
    ));
    let e = d.bad(&[
        "from-records",
        "s.wlr",
        "r.wlr",
        "-o",
        "abs2.delays",
        "--absolute",
        "--format",
        "delays",
    ]);
    assert!(e.contains("the delays format has no duplicate"), "{e}");
    assert!(!d.path("abs2.delays").exists());
    // The duplicate needs pkt-csv or nist; nist-bin rounds to the µs.
    d.ok(&[
        "from-records",
        "s.wlr",
        "r.wlr",
        "-o",
        "path.bin",
        "--absolute",
    ]);
    assert_eq!(
        d.ok(&["dump", "path.bin"]),
        "1 delay 500us\n2 drop\n3 delay 700us\n4 dup 650us\n5 delay 900us\n6 delay 450us\n"
    );
    let e = d.bad(&["from-records", "r.wlr", "s.wlr", "-o", "x.pkt.csv"]);
    assert_eq!(
        e,
        "wirelab: error: r.wlr is a receiver record file: give the sender's file first, then \
         the receiver's\n"
    );
}

#[test]
fn maketable_writes_what_iproute2_writes() {
    let d = Dir::new("maketable");
    d.ok(&[
        "gen", "--dist", "pareto", "--mean", "20ms", "--jitter", "5ms", "--count", "20000", "-o",
        "p.delays",
    ]);
    d.ok(&["maketable", "p.delays", "-o", "p.dist"]);
    let t = d.text("p.dist");
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[0],
        "# This is the distribution table for the experimental distribution."
    );
    assert_eq!(lines.len(), 1 + 4096 / 8);
    assert!(lines[1..].iter().all(|l| l.split(' ').count() == 8));
    // The table reads back as a .dist trace and is sorted.
    let dump = d.ok(&["dump", "p.dist"]);
    let values: Vec<i64> = dump
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(values.len(), 4096);
    assert!(values.windows(2).all(|w| w[0] <= w[1]));
    // A generator can draw from it.
    d.ok(&[
        "gen", "--dist", "p.dist", "--mean", "20ms", "--jitter", "5ms", "--count", "10", "-o",
        "q.delays",
    ]);
    assert_eq!(d.text("q.delays").lines().count(), 10);
    // iproute2's own input and maketable's output for it (testdata/SOURCES.md):
    // the same bytes.
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/iproute2");
    let input = testdata.join("experimental.dat");
    d.ok(&[
        "maketable",
        "--fmt",
        "delays",
        input.to_str().unwrap(),
        "-o",
        "exp.dist",
    ]);
    let want = std::fs::read_to_string(testdata.join("experimental.dist")).unwrap();
    assert!(
        d.text("exp.dist") == want,
        "differs from iproute2's maketable output"
    );
    d.write("one.delays", b"5\n");
    let e = d.bad(&["maketable", "one.delays", "-o", "x.dist"]);
    assert_eq!(
        e,
        "wirelab: error: one.delays: 1 samples: a table needs at least 2\n"
    );
}
