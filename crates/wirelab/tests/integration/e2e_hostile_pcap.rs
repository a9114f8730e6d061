//! `wirelab replay` facing hostile and broken captures, each crafted here
//! (a few hundred bytes): memory bounded by what the user asked, never by
//! a length in the file; preloaded and streamed replays counting the same;
//! a replay that sends nothing saying why; broken timestamps counted and
//! the schedule they make stated; `-w` keeping what it read or saying what
//! it normalised; one link-type check for every path; the FCS a file
//! announces removed; headers libpcap refuses refused; error messages that
//! ask the right question.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use wirelab_pcap::PcapReader;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wlh-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A µs pcap (little-endian, snaplen 262144) with this link-type field and
/// records (seconds, sub-second field, frame, original length).
fn pcap(path: &Path, linktype: u32, records: &[(u32, u32, Vec<u8>, u32)]) {
    let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&262_144u32.to_le_bytes());
    b.extend_from_slice(&linktype.to_le_bytes());
    for (sec, frac, f, orig) in records {
        for v in [*sec, *frac, f.len() as u32, *orig] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

/// An Ethernet/IPv4/UDP frame of `len` bytes (at least 42) numbered `i`.
fn udp(i: u32, len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = (len - 14).min(65_535) as u16;
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0]);
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[198, 18, 0, 1, 198, 18, 0, 2]);
    f.extend_from_slice(&[0x30, 0x39, 0x30, 0x39]);
    f.extend_from_slice(&(ip_len.saturating_sub(20)).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&i.to_be_bytes());
    f.resize(len, 0);
    f
}

fn wirelab(args: &[&str]) -> Output {
    Command::new(crate::common::exe())
        .arg("replay")
        .args(args)
        .output()
        .expect("spawn wirelab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// (timestamp ns, captured length, original length) of every packet.
fn read_back(p: &Path) -> Vec<(u64, usize, u32)> {
    let mut r = PcapReader::new(std::io::BufReader::new(std::fs::File::open(p).unwrap())).unwrap();
    let mut v = vec![];
    while let Some(p) = r.next_packet().unwrap() {
        v.push((p.ts_ns, p.data.len(), p.orig_len));
    }
    v
}

/// Peak RSS above which a replay of a few hundred bytes of input has let a
/// length from the file size its memory.
const RSS_BOUND: u64 = 200 << 20;

/// Runs `wirelab replay args` (inside namespace `ns` when given) under an
/// address-space limit of 4 GiB, so a runaway allocation fails instead of
/// taking the machine, and returns its output and peak RSS in bytes (GNU
/// time's `%M`). `None` when /usr/bin/time is missing (a failure on CI).
fn replay_measured(ns: Option<&str>, args: &[&str]) -> Option<(Output, u64)> {
    if !crate::common::tools_available(&["/usr/bin/time"]) {
        return None;
    }
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let rss = tmp(&format!("rss-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
    let script = "ulimit -v 4194304; exec /usr/bin/time -f %M -o \"$0\" \"$@\"";
    let mut cmd = match ns {
        Some(ns) => wirelab_lab::lab::exec_in(ns, "sh"),
        None => Command::new("sh"),
    };
    let out = cmd
        .args(["-c", script])
        .arg(&rss)
        .arg(crate::common::exe())
        .arg("replay")
        .args(args)
        .output()
        .expect("spawn sh");
    let text = std::fs::read_to_string(&rss).unwrap_or_default();
    // GNU time prints "Command exited with non-zero status N" first then.
    let kb: u64 = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS from /usr/bin/time: {text:?}; {}", stderr(&out)));
    Some((out, kb * 1024))
}

#[test]
fn fixlen_pad_trusts_no_original_length_from_the_file() {
    // Three short captures of 100-byte packets, then twenty records
    // claiming 0xFFFFFFF0 bytes on the wire.
    let mut recs: Vec<_> = (0..3).map(|i| (1_000, i, udp(i, 60), 100)).collect();
    recs.extend((0..20).map(|i| (1_001, i, udp(100 + i, 60), 0xFFFF_FFF0)));
    let input = tmp("pad.pcap");
    pcap(&input, 1, &recs);
    let out = tmp("pad-out.pcap");
    let (o, rss) = match replay_measured(
        None,
        &[
            "-w",
            out.to_str().unwrap(),
            "--fixlen",
            "pad",
            "--json",
            input.to_str().unwrap(),
        ],
    ) {
        Some(r) => r,
        None => return,
    };
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(rss < RSS_BOUND, "peak RSS {rss} bytes");
    let j = crate::common::json(&o);
    assert_eq!(j["read"]["read"], 23);
    assert_eq!(j["read"]["selected"], 3);
    assert_eq!(j["read"]["oversize"], 20);
    assert_eq!(j["read"]["pad_limit_bytes"], 262_144);
    assert_eq!(j["rewrite"]["pad_oversize"], 20);
    let got: Vec<(usize, u32)> = read_back(&out).iter().map(|p| (p.1, p.2)).collect();
    assert_eq!(got, vec![(100, 100); 3]);

    // Only hostile records: nothing written, a failure that says why.
    let input = tmp("pad-hostile.pcap");
    pcap(&input, 1, &recs[3..]);
    let (o, rss) = replay_measured(
        None,
        &[
            "-w",
            out.to_str().unwrap(),
            "--fixlen",
            "pad",
            input.to_str().unwrap(),
        ],
    )
    .unwrap();
    assert!(rss < RSS_BOUND, "peak RSS {rss} bytes");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing written: all 20 packet(s) read were left out: 20 whose original length exceeds the 262144 bytes --fixlen pad may pad to"),
        "{}",
        stderr(&o)
    );

    // Frames that padding makes larger than the preload budget: streamed,
    // not preloaded past the budget; the same packets either way.
    let input = tmp("pad-budget.pcap");
    let recs: Vec<_> = (0..50).map(|i| (1_000, i, udp(i, 60), 1_000)).collect();
    pcap(&input, 1, &recs);
    let o = wirelab(&[
        "-w",
        out.to_str().unwrap(),
        "--fixlen",
        "pad",
        "--max-preload",
        "20000",
        "--json",
        input.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = crate::common::json(&o);
    assert_eq!(j["load"]["mode"], "stream");
    assert_eq!(j["read"]["selected"], 50);
    assert_eq!(read_back(&out).len(), 50);
    assert!(read_back(&out).iter().all(|p| p.1 == 1_000));
}

#[test]
fn preloaded_and_streamed_replays_count_the_same_and_say_why_nothing_was_sent() {
    if !crate::common::netns_available(&[]) {
        return;
    }
    let lab = crate::common::Lab::new();
    let big = lab.file("big.pcap");
    pcap(&big, 1, &[(1_000, 0, udp(0, 65_535), 65_535)]);
    let mixed = lab.file("mixed.pcap");
    pcap(
        &mixed,
        1,
        &[
            (1_000, 0, udp(0, 65_535), 65_535),
            (1_000, 100, udp(1, 100), 100),
        ],
    );
    let hostile = lab.file("hostile.pcap");
    pcap(
        &hostile,
        1,
        &[
            (1_000, 0, udp(0, 60), 0xFFFF_FFF0),
            (1_000, 5, udp(1, 60), 100),
        ],
    );
    let dev = lab.tx_if().to_string();
    for preload in ["1GiB", "1"] {
        let run = |file: &Path, extra: &[&str]| {
            let mut args = vec![
                "-i",
                dev.as_str(),
                "--topspeed",
                "--json",
                "--max-preload",
                preload,
            ];
            args.extend_from_slice(extra);
            args.push(file.to_str().unwrap());
            replay_measured(Some(&lab.s), &args)
        };
        let Some((o, _)) = run(&big, &[]) else { return };
        assert_eq!(o.status.code(), Some(1), "{preload}: {}", stderr(&o));
        let j = crate::common::json(&o);
        let rd = &j["read"];
        assert_eq!(
            (
                rd["read"].as_u64(),
                rd["selected"].as_u64(),
                rd["oversize"].as_u64()
            ),
            (Some(1), Some(0), Some(1)),
            "{preload}"
        );
        assert_eq!(j["nothing_sent"]["asked"], false);
        assert!(
            stderr(&o).contains(&format!(
                "wirelab: error: nothing sent: all 1 packet(s) read were left out: 1 as larger than {dev} takes (1518 bytes: its MTU + 14 bytes of Ethernet header + a VLAN tag if tagged)"
            )),
            "{preload}: {}",
            stderr(&o)
        );
        let (o, _) = run(&mixed, &[]).unwrap();
        assert!(o.status.success(), "{preload}: {}", stderr(&o));
        let j = crate::common::json(&o);
        assert_eq!(j["read"]["read"], 2, "{preload}");
        assert_eq!(j["read"]["oversize"], 1, "{preload}");
        assert_eq!(j["fidelity"]["packets"], 1, "{preload}");
        assert!(j["nothing_sent"].is_null());
        // --fixlen pad on an interface: padding stops at its largest frame.
        let (o, rss) = run(&hostile, &["--fixlen", "pad"]).unwrap();
        assert!(o.status.success(), "{preload}: {}", stderr(&o));
        assert!(rss < RSS_BOUND, "{preload}: peak RSS {rss} bytes");
        let j = crate::common::json(&o);
        assert_eq!(j["read"]["pad_limit_bytes"], 1518);
        assert_eq!(j["rewrite"]["pad_oversize"], 1);
        assert_eq!(j["fidelity"]["packets"], 1);
    }
    // Left out by the user's own selection: said, and not a failure.
    let o = wirelab(&[
        "-w",
        lab.file("o.pcap").to_str().unwrap(),
        "--include",
        "5",
        big.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .contains("nothing written: all 1 packet(s) read were left out: 1 by the selection"),
        "{}",
        stdout(&o)
    );
}

/// 355 frames over 3.5 s whose sub-second fields hold nanoseconds, in a
/// microsecond file (as some tools write), and what each policy makes of
/// them: (records, expected bad fields, backwards, keep's schedule, span).
fn ns_in_us_trace(path: &Path) -> (u64, u64, u64, u64) {
    let t_ns = |i: u64| i * 3_500_000_000 / 354;
    let recs: Vec<_> = (0..355u64)
        .map(|i| {
            let t = t_ns(i);
            (
                1_000 + (t / 1_000_000_000) as u32,
                (t % 1_000_000_000) as u32,
                udp(i as u32, 60),
                60,
            )
        })
        .collect();
    pcap(path, 1, &recs);
    // As the fields add up when read as µs.
    let us = |r: &(u32, u32, Vec<u8>, u32)| u64::from(r.0) * 1_000_000_000 + u64::from(r.1) * 1_000;
    let bad = recs.iter().filter(|r| r.1 >= 1_000_000).count() as u64;
    let (mut high, mut back) = (0, 0);
    for r in &recs {
        if us(r) < high {
            back += 1;
        }
        high = high.max(us(r));
    }
    let first = us(&recs[0]);
    (bad, back, high - first, us(&recs[354]) - first)
}

#[test]
fn broken_timestamps_are_counted_and_the_schedule_stated_before_replay() {
    if !crate::common::netns_available(&[]) {
        return;
    }
    let lab = crate::common::Lab::new();
    let trace = lab.file("ns-in-us.pcap");
    let (bad, back, schedule, span) = ns_in_us_trace(&trace);
    assert!(bad > 300 && back > 0, "{bad} {back}");
    let dev = lab.tx_if().to_string();
    let run = |extra: &[&str]| {
        let mut cmd = lab.wirelab(&lab.s);
        cmd.args(["replay", "-i", &dev, "--limit", "1"])
            .args(extra)
            .arg(&trace);
        crate::common::run(&mut cmd)
    };
    // keep (the default): counted, and the schedule stated before sending.
    let o = run(&["--json"]);
    let j = crate::common::json(&o);
    let rd = &j["read"];
    assert_eq!(rd["ts_bad_fraction"], bad);
    assert_eq!(rd["ts_backwards"], back);
    assert_eq!(rd["bad_ts"], "keep");
    assert_eq!(rd["schedule_ns"], schedule);
    assert_eq!(rd["span_ns"], span);
    assert!(
        stderr(&o).contains(&format!(
            "the schedule runs {:.0} s for 355 packet(s) (x1)",
            schedule as f64 / 1e9
        )),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains(&format!("{bad} have a sub-second field of 1 s or more")));
    assert!(stderr(&o).contains(&format!("{back} go backwards")));
    // The text report says it too.
    let o = run(&[]);
    assert!(
        stdout(&o).contains(&format!(
            "timestamps: {bad} with a sub-second field of 1 s or more (--bad-ts keep), {back} going backwards and 0 missing"
        )),
        "{}",
        stdout(&o)
    );
    // ns: the 3.5 s the capture took, nothing to warn about.
    let o = run(&["--json", "--bad-ts", "ns"]);
    let j = crate::common::json(&o);
    assert_eq!(j["read"]["schedule_ns"], 3_500_000_000u64);
    assert_eq!(j["read"]["ts_backwards"], 0);
    assert_eq!(j["read"]["ts_bad_fraction"], bad);
    assert!(!stderr(&o).contains("schedule runs"), "{}", stderr(&o));
    // clamp: those packets at the previous time, never backwards.
    let o = run(&["--json", "--bad-ts", "clamp"]);
    let j = crate::common::json(&o);
    assert_eq!(j["read"]["bad_ts"], "clamp");
    assert_eq!(j["read"]["ts_backwards"], 0);
    assert!(!stderr(&o).contains("schedule runs"), "{}", stderr(&o));
    // -w --bad-ts ns writes the times the capture meant.
    let out = lab.file("ns.pcap");
    let o = wirelab(&[
        "-q",
        "-w",
        out.to_str().unwrap(),
        "--bad-ts",
        "ns",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ts: Vec<u64> = read_back(&out).iter().map(|p| p.0).collect();
    let want: Vec<u64> = (0..355u64)
        .map(|i| 1_000_000_000_000 + i * 3_500_000_000 / 354)
        .collect();
    assert_eq!(ts, want);
}

#[test]
fn writing_keeps_what_it_read_or_says_what_it_normalised() {
    // 2014, then 1975 (time runs backwards), then 2014 again; original
    // lengths 60, 34 and 0 for 60 captured bytes.
    let a = tmp("w-a.pcap");
    pcap(
        &a,
        1,
        &[
            (1_400_000_000, 7, udp(0, 60), 60),
            (157_766_400, 5, udp(1, 60), 34),
            (1_400_000_001, 9, udp(2, 60), 0),
        ],
    );
    // A second file from 1975.
    let b = tmp("w-b.pcap");
    pcap(&b, 1, &[(157_766_400, 1, udp(3, 60), 60)]);
    let out = tmp("w-out.pcap");
    let o = wirelab(&[
        "-w",
        out.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = 1_000_000_000u64;
    assert_eq!(
        read_back(&out),
        vec![
            (1_400_000_000 * s + 7_000, 60, 60),
            (157_766_400 * s + 5_000, 60, 60),
            (1_400_000_001 * s + 9_000, 60, 60),
            (157_766_400 * s + 1_000, 60, 60),
        ]
    );
    assert!(
        stdout(&o).contains("written: 2 record(s) whose original length is below the captured length (first: packet 2) got the captured length, as pcap requires"),
        "{}",
        stdout(&o)
    );
    // Selection: the first written packet keeps its own time (not the
    // first packet of the file's).
    let o = wirelab(&[
        "-q",
        "-w",
        out.to_str().unwrap(),
        "--include",
        "3-",
        a.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_back(&out)[0].0, 1_400_000_001 * s + 9_000);
    // A schedule of its own (--pps): the first packet's time plus the
    // schedule, and the report says so.
    let o = wirelab(&[
        "-w",
        out.to_str().unwrap(),
        "--pps",
        "1000",
        "--json",
        a.to_str().unwrap(),
    ]);
    let j = crate::common::json(&o);
    assert!(j["departure"]
        .as_str()
        .unwrap()
        .contains("the first packet's time plus each packet's ideal offset"));
    let ts: Vec<u64> = read_back(&out).iter().map(|p| p.0).collect();
    let t0 = 1_400_000_000 * s + 7_000;
    assert_eq!(ts, vec![t0, t0 + 1_000_000, t0 + 2_000_000]);
}

#[test]
fn one_link_type_check_for_classifying_counting_and_replaying() {
    // A Raw-IP capture (link type 101).
    let raw = tmp("raw.pcap");
    pcap(&raw, 101, &[(1_000, 0, udp(0, 60)[14..].to_vec(), 46)]);
    let want = format!(
        "wirelab: error: {}: packet 1 has link type 101 — replay sends Ethernet frames (link type 1) only",
        raw.display()
    );
    let cache = tmp("raw.cache");
    let _ = std::fs::remove_file(&cache);
    let o = wirelab(&[
        "--auto",
        "--save-cache",
        cache.to_str().unwrap(),
        raw.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
    assert!(!cache.exists(), "no cache classified as Ethernet");
    let o = wirelab(&[
        "-w",
        tmp("raw-out.pcap").to_str().unwrap(),
        raw.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
    // Counting the packets a cache file must cover.
    std::fs::write(&cache, "wirelab.replay.cache/1\npackets 1\nmode auto\nc\n").unwrap();
    let o = wirelab(&[
        "--cachefile",
        cache.to_str().unwrap(),
        "--save-cache",
        tmp("c2").to_str().unwrap(),
        raw.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
}

/// A little-endian pcapng: a section header block of version 1.`minor`,
/// one Ethernet interface and one enhanced packet block.
fn pcapng(path: &Path, minor: u16, frame: &[u8]) {
    let block = |t: u32, body: &[u8]| {
        let len = (body.len() + 12) as u32;
        let mut b = t.to_le_bytes().to_vec();
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(body);
        b.extend_from_slice(&len.to_le_bytes());
        b
    };
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&minor.to_le_bytes());
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    let mut idb = vec![1, 0, 0, 0];
    idb.extend_from_slice(&0u32.to_le_bytes());
    let mut epb = vec![0; 12];
    epb.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    epb.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    epb.extend_from_slice(frame);
    while !epb.len().is_multiple_of(4) {
        epb.push(0);
    }
    let b = [block(0x0a0d_0d0a, &shb), block(1, &idb), block(6, &epb)].concat();
    std::fs::write(path, b).unwrap();
}

#[test]
fn fcs_is_stripped_and_headers_are_judged_as_libpcap_judges_them() {
    let out = tmp("h-out.pcap");
    // Ethernet with FCS present, 2 x 16 bits: 4 FCS bytes end each frame.
    let fcs = tmp("fcs.pcap");
    let frame = udp(0, 64);
    pcap(&fcs, 0x2400_0001, &[(1_000, 0, frame.clone(), 64)]);
    let o = wirelab(&["-w", out.to_str().unwrap(), fcs.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("fcs: removed from 1 frame(s)"),
        "{}",
        stdout(&o)
    );
    assert_eq!(read_back(&out), vec![(1_000_000_000_000, 60, 60)]);
    // Reserved bits 16-25: refused with what and where, as libpcap does.
    let resv = tmp("resv.pcap");
    pcap(&resv, 0x0001_0001, &[(1_000, 0, frame.clone(), 64)]);
    let o = wirelab(&["-w", out.to_str().unwrap(), resv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_end(),
        format!("wirelab: error: {}: offset 20: link-type field 0x00010001 has reserved bits 0x00010000 set (bits 16-25 must be 0; libpcap refuses such files too)", resv.display())
    );
    // pcapng 1.1 is refused, 1.2 read (libpcap treats it as 1.0).
    let ng = tmp("v.pcapng");
    pcapng(&ng, 1, &frame);
    let o = wirelab(&["-w", out.to_str().unwrap(), ng.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_end(),
        format!("wirelab: error: {}: offset 12: unsupported pcapng version 1.1 (libpcap reads 1.0 and 1.2 in the first section header block)", ng.display())
    );
    pcapng(&ng, 2, &frame);
    let o = wirelab(&["-q", "-w", out.to_str().unwrap(), ng.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_back(&out).len(), 1);
}

#[test]
fn messages_ask_about_the_format_only_where_that_is_the_question() {
    let out = tmp("m-out.pcap");
    let dir = tmp("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let o = wirelab(&["-w", out.to_str().unwrap(), dir.to_str().unwrap()]);
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "wirelab: error: {}: is a directory; give pcap or pcapng files",
            dir.display()
        )
    );
    let junk = tmp("junk.pcap");
    std::fs::write(&junk, "hello world").unwrap();
    let o = wirelab(&["-w", out.to_str().unwrap(), junk.to_str().unwrap()]);
    assert!(
        stderr(&o)
            .trim_end()
            .ends_with("(magic 0x68656c6c); convert other capture formats with `editcap -F pcapng IN OUT` (Wireshark)"),
        "{}",
        stderr(&o)
    );
    let old = tmp("old.pcap");
    pcap(&old, 1, &[]);
    let mut b = std::fs::read(&old).unwrap();
    b[4] = 1;
    std::fs::write(&old, b).unwrap();
    let o = wirelab(&["-w", out.to_str().unwrap(), old.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("unsupported pcap version 1.4"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("editcap"), "{}", stderr(&o));
    // A cache file with a valid first line and bad UTF-8 on line 4.
    let trace = tmp("one.pcap");
    pcap(&trace, 1, &[(1_000, 0, udp(0, 60), 60)]);
    let cache = tmp("bad.cache");
    let mut c = b"wirelab.replay.cache/1\npackets 1\nmode auto\n".to_vec();
    c.extend_from_slice(&[0xff, b'\n']);
    std::fs::write(&cache, &c).unwrap();
    let o = wirelab(&[
        "--cachefile",
        cache.to_str().unwrap(),
        "--save-cache",
        tmp("c3").to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim_end(),
        format!("wirelab: error: {}: cache line 4: byte 43 is not UTF-8 text; the file is damaged — write it again with --save-cache", cache.display())
    );
}
