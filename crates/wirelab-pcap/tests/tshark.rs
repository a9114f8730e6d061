//! Files written here must read back the same in Wireshark's tools: writes pcapng and pcap
//! (ns and µs) to temporary files and compares `capinfos` / `tshark` output with what was
//! written. Skipped through `wirelab_testkit` when tshark/capinfos are not installed (a
//! failure on CI, which installs them).

use std::fs;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::Command;

use wirelab_pcap::{
    InterfaceOptions, PacketOptions, PcapPrecision, PcapReader, PcapWriter, PcapngWriter,
    RecordRef, StatsCounters, TsResolution, DEFAULT_USERAPPL, LINKTYPE_ETHERNET,
};

fn run(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("Running as user"))
        .collect();
    assert!(
        out.status.success() && stderr.is_empty(),
        "{tool} {args:?}: {}",
        stderr.join("\n")
    );
    String::from_utf8(out.stdout).unwrap()
}

struct TempFile(PathBuf);
impl TempFile {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("wirelab-pcap-{}-{name}", std::process::id()));
        TempFile(p)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// "1700000000.123456789" or "1700000000.123456" -> ns.
fn parse_epoch(s: &str) -> u64 {
    let (sec, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    let frac = format!("{frac:0<9}");
    sec.parse::<u64>().unwrap() * 1_000_000_000 + frac[..9].parse::<u64>().unwrap()
}

fn packets() -> Vec<(u64, Vec<u8>)> {
    // An Ethernet frame (broadcast, IPv4 ethertype) padded with a pattern.
    (0..100u64)
        .map(|i| {
            let ts = 1_750_000_000_000_000_000 + i * 1_000_123 + (i * 7919) % 1000;
            let mut d = vec![0xff; 6];
            d.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x00]);
            d.extend((0..(46 + i as usize * 13 % 1400)).map(|j| j as u8));
            (ts, d)
        })
        .collect()
}

fn tshark_rows(path: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec!["-r", path, "-T", "fields", "-E", "separator=/t"];
    for f in fields {
        args.push("-e");
        args.push(f);
    }
    run("tshark", &args)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn pcapng_written_reads_the_same_in_wireshark() {
    if !wirelab_testkit::require_tools(&["tshark", "capinfos"]) {
        return;
    }
    let pk = packets();
    let tmp = TempFile::new("out.pcapng");
    {
        let f = BufWriter::new(fs::File::create(&tmp.0).unwrap());
        let mut w = PcapngWriter::new(f).unwrap();
        let a = w
            .add_interface("veth0", LINKTYPE_ETHERNET, 262_144)
            .unwrap();
        let b = w
            .add_interface_with(&InterfaceOptions {
                description: Some("reflector side"),
                tsresol: TsResolution::MICRO,
                ..InterfaceOptions::new("veth1", LINKTYPE_ETHERNET, 128)
            })
            .unwrap();
        for (i, (ts, d)) in pk.iter().enumerate() {
            let o = PacketOptions {
                comment: (i == 5).then_some("five"),
                ..Default::default()
            };
            w.write_packet_with(if i % 10 == 9 { b } else { a }, *ts, d.len() as u32, d, &o)
                .unwrap();
        }
        let last = pk.last().unwrap().0;
        for (iface, recv) in [(a, 90), (b, 10)] {
            let c = StatsCounters {
                ifrecv: Some(recv),
                ifdrop: Some(1),
                osdrop: Some(2),
                start_ns: Some(pk[0].0),
                end_ns: Some(last),
                ..Default::default()
            };
            w.write_interface_stats(iface, last, &c).unwrap();
        }
        w.into_inner().unwrap();
    }

    // capinfos: count, first/last (ns), and the metadata.
    let row = run(
        "capinfos",
        &["-T", "-r", "-M", "-c", "-a", "-e", "-S", tmp.path()],
    );
    let cols: Vec<&str> = row.trim_end().split('\t').collect();
    assert_eq!(cols[1], "100", "{row}");
    assert_eq!(parse_epoch(cols[2]), pk[0].0, "{row}");
    // The last packet is on the µs interface.
    assert_eq!(parse_epoch(cols[3]), pk[99].0 / 1000 * 1000, "{row}");
    let long = run("capinfos", &[tmp.path()]);
    for want in [
        "Name = veth0",
        "Name = veth1",
        "Description = reflector side",
        "Time precision = nanoseconds (9)",
        "Time precision = microseconds (6)",
        "Number of stat entries = 1",
        &format!("Capture application: {DEFAULT_USERAPPL}"),
    ] {
        assert!(long.contains(want), "capinfos lacks {want:?}:\n{long}");
    }

    // tshark: every timestamp, length and interface name, and the comment.
    let rows = tshark_rows(
        tmp.path(),
        &[
            "frame.time_epoch",
            "frame.cap_len",
            "frame.len",
            "frame.interface_name",
            "frame.comment",
        ],
    );
    assert_eq!(rows.len(), 100);
    for (i, (r, (ts, d))) in rows.iter().zip(&pk).enumerate() {
        let on_b = i % 10 == 9;
        let want_ts = if on_b { ts / 1000 * 1000 } else { *ts };
        let want_cap = if on_b { d.len().min(128) } else { d.len() };
        assert_eq!(parse_epoch(&r[0]), want_ts, "packet {i}: {r:?}");
        assert_eq!(
            (
                r[1].parse::<usize>().unwrap(),
                r[2].parse::<usize>().unwrap()
            ),
            (want_cap, d.len()),
            "packet {i}"
        );
        assert_eq!(r[3], if on_b { "veth1" } else { "veth0" });
        assert_eq!(r[4], if i == 5 { "five" } else { "" });
    }

    // And our reader agrees, including the statistics.
    let mut r = PcapReader::new(std::io::BufReader::new(fs::File::open(&tmp.0).unwrap())).unwrap();
    let mut n = 0;
    while r.next_packet().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 100);
    let st = r.interface_stats();
    assert_eq!(
        (
            st[0].counters.ifrecv,
            st[1].counters.ifrecv,
            st[1].counters.osdrop
        ),
        (Some(90), Some(10), Some(2))
    );
}

#[test]
fn pcap_written_reads_the_same_in_wireshark() {
    if !wirelab_testkit::require_tools(&["tshark", "capinfos"]) {
        return;
    }
    let pk = packets();
    for (prec, name, label) in [
        (PcapPrecision::Nano, "ns.pcap", "nanoseconds"),
        (PcapPrecision::Micro, "us.pcap", "microseconds"),
    ] {
        let tmp = TempFile::new(name);
        let mut w = PcapWriter::new(
            BufWriter::new(fs::File::create(&tmp.0).unwrap()),
            1,
            262_144,
            prec,
        )
        .unwrap();
        for (ts, d) in &pk {
            w.write_packet(*ts, d.len() as u32, d).unwrap();
        }
        w.into_inner().unwrap();
        let trunc = |ts: u64| {
            if prec == PcapPrecision::Nano {
                ts
            } else {
                ts / 1000 * 1000
            }
        };

        let row = run(
            "capinfos",
            &["-T", "-r", "-M", "-c", "-a", "-e", "-S", tmp.path()],
        );
        let cols: Vec<&str> = row.trim_end().split('\t').collect();
        assert_eq!(cols[1], "100", "{row}");
        assert_eq!(parse_epoch(cols[2]), trunc(pk[0].0), "{name}: {row}");
        assert_eq!(parse_epoch(cols[3]), trunc(pk[99].0), "{name}: {row}");
        let long = run("capinfos", &[tmp.path()]);
        assert!(long.contains(label), "{name}: {long}");

        let rows = tshark_rows(tmp.path(), &["frame.time_epoch", "frame.len"]);
        assert_eq!(rows.len(), 100);
        for (r, (ts, d)) in rows.iter().zip(&pk) {
            assert_eq!(
                (parse_epoch(&r[0]), r[1].parse::<usize>().unwrap()),
                (trunc(*ts), d.len()),
                "{name}"
            );
        }
    }
}

/// Our reading of an obsolete packet block (type 2) and binary `if_tsresol` agrees with tshark's.
#[test]
fn obsolete_packet_block_and_binary_resolution_agree_with_tshark() {
    if !wirelab_testkit::require_tools(&["tshark"]) {
        return;
    }
    fn blk(t: u32, body: &[u8]) -> Vec<u8> {
        let len = (body.len() + 12) as u32;
        [
            &t.to_le_bytes()[..],
            &len.to_le_bytes(),
            body,
            &len.to_le_bytes(),
        ]
        .concat()
    }
    let mut f = blk(
        0x0a0d_0d0a,
        &[
            0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    );
    // IDB: Ethernet, snaplen 0, if_tsresol 0x94 (2^-20 s), end.
    f.extend(blk(
        1,
        &[
            1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0x94, 0, 0, 0, 0, 0, 0, 0,
        ],
    ));
    let units: u64 = (1_700_000_000u64 << 20) + 777_777; // 1700000000 s + 777777/2^20 s
    let frame: Vec<u8> = [
        &[0xffu8; 6][..],
        &[2, 0, 0, 0, 0, 1, 0x08, 0x00],
        &[0u8; 46],
    ]
    .concat();
    let mut b = Vec::new();
    b.extend_from_slice(&0u16.to_le_bytes()); // interface
    b.extend_from_slice(&5u16.to_le_bytes()); // drops
    b.extend_from_slice(&((units >> 32) as u32).to_le_bytes());
    b.extend_from_slice(&(units as u32).to_le_bytes());
    b.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    b.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    b.extend_from_slice(&frame);
    f.extend(blk(2, &b));
    let tmp = TempFile::new("opb.pcapng");
    fs::write(&tmp.0, &f).unwrap();

    let rows = tshark_rows(tmp.path(), &["frame.time_epoch", "frame.len"]);
    let mut r = PcapReader::new(&f[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.dropcount, Some(5));
    assert_eq!(rows.len(), 1);
    assert_eq!(parse_epoch(&rows[0][0]), p.ts_ns, "tshark {:?}", rows[0]);
    assert_eq!(p.ts_ns, 1_700_000_000_741_745_948); // 777777 * 1e9 / 2^20, truncated
    assert_eq!(rows[0][1], "60");
}

/// Records from the batch encoder (as `wirelab capture` writes them) after each writer's
/// header: tshark sees every packet with its timestamp and length.
#[test]
fn batch_encoded_records_read_the_same_in_wireshark() {
    if !wirelab_testkit::require_tools(&["tshark"]) {
        return;
    }
    let pk = packets();
    let recs = || {
        pk.iter().map(|(ts, d)| RecordRef {
            ts_ns: *ts,
            orig_len: d.len() as u32,
            data: d,
        })
    };
    for (name, micro) in [("b.pcapng", false), ("bns.pcap", false), ("bus.pcap", true)] {
        let tmp = TempFile::new(name);
        let bytes = if name.ends_with("pcapng") {
            let mut w = PcapngWriter::new(Vec::new()).unwrap();
            let id = w.add_interface("eth0", LINKTYPE_ETHERNET, 0).unwrap();
            let e = w.record_encoder(id).unwrap();
            let mut b = w.into_inner().unwrap();
            e.encode_batch(&mut b, recs()).unwrap();
            b
        } else {
            let prec = if micro {
                PcapPrecision::Micro
            } else {
                PcapPrecision::Nano
            };
            let w = PcapWriter::new(Vec::new(), 1, 0, prec).unwrap();
            let e = w.record_encoder();
            let mut b = w.into_inner().unwrap();
            e.encode_batch(&mut b, recs()).unwrap();
            b
        };
        fs::write(&tmp.0, &bytes).unwrap();
        let rows = tshark_rows(tmp.path(), &["frame.time_epoch", "frame.len"]);
        assert_eq!(rows.len(), pk.len(), "{name}");
        for (r, (ts, d)) in rows.iter().zip(&pk) {
            let ts = if micro { ts / 1000 * 1000 } else { *ts };
            assert_eq!(
                (parse_epoch(&r[0]), r[1].parse::<usize>().unwrap()),
                (ts, d.len()),
                "{name}"
            );
        }
    }
}
