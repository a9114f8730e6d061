//! `wirelab analyze` on RTP captures against Wireshark's RTP stream
//! analysis (`tshark -z rtp,streams`): captures written here with
//! wirelab-pcap's writers (classic pcap over Ethernet, pcapng over Linux
//! cooked SLL2), several streams each with loss, reordering, late
//! packets, duplicates, markers, comfort noise, sequence and timestamp
//! wraps and random jitter, static payload types and a dynamic one. Per
//! stream, packets, lost, max delta, mean and max jitter must equal
//! tshark's to its printed precision (3 decimals of a ms).

use crate::common::files::{scratch, text};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use wirelab_pcap::{PcapPrecision, PcapWriter, PcapngWriter};

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn rtp(pt: u8, marker: bool, seq: u16, ts: u32, ssrc: u32) -> Vec<u8> {
    let mut b = vec![0x80, pt | if marker { 0x80 } else { 0 }];
    b.extend_from_slice(&seq.to_be_bytes());
    b.extend_from_slice(&ts.to_be_bytes());
    b.extend_from_slice(&ssrc.to_be_bytes());
    b.extend_from_slice(&[0xd5; 80]);
    b
}

fn ipv4_udp(src: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let total = (28 + payload.len()) as u16;
    let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&src);
    p.extend_from_slice(&[10, 9, 0, 2]);
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&(total - 20).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// One packet of a stream: arrival (ns), sequence number, RTP timestamp,
/// payload type, marker.
type Pkt = (u64, u16, u32, u8, bool);

/// A stream of `n` packets every 20 ms with exponential-ish arrival jitter,
/// some lost, a few pairs swapped, a few late by several packets, a few
/// duplicated, some markers and comfort-noise packets.
fn stream(r: &mut Rng, start: u64, pt: u8, n: u64, seq0: u16, ts0: u32, step: u32) -> Vec<Pkt> {
    let mut v: Vec<Pkt> = Vec::new();
    for i in 0..n {
        if i > 0 && r.chance(3) {
            continue;
        }
        let jitter = r.below(3_000_000) * r.below(3) / 2;
        let p = if r.chance(2) { 13 } else { pt };
        v.push((
            start + i * 20_000_000 + jitter,
            seq0.wrapping_add(i as u16),
            ts0.wrapping_add(step.wrapping_mul(i as u32)),
            p,
            r.chance(3),
        ));
    }
    for _ in 0..r.below(5) {
        let j = 1 + r.below(v.len() as u64 - 3) as usize;
        let (a, b) = (v[j], v[j + 1]);
        v[j] = (a.0, b.1, b.2, b.3, b.4);
        v[j + 1] = (b.0, a.1, a.2, a.3, a.4);
    }
    for _ in 0..r.below(3) {
        let j = 1 + r.below(v.len() as u64 - 6) as usize;
        let mut p = v.remove(j);
        p.0 = v[j + 3].0 + 1000;
        v.insert(j + 3, p);
    }
    for _ in 0..r.below(4) {
        let mut d = v[r.below(v.len() as u64) as usize];
        d.0 += 300_000;
        v.push(d);
    }
    v
}

/// (ssrc, source port) → its packets; stream 0's twin is the same stream
/// under dynamic payload type 96.
fn streams(seed: u64) -> Vec<(u32, u16, Vec<Pkt>)> {
    let mut r = Rng(seed);
    let t0 = 1_700_000_000_000_000_000;
    let mut out = Vec::new();
    let pts = [0u8, 8, 9, 18, 26, 3];
    for (k, &pt) in pts.iter().enumerate() {
        let step = if pt == 26 { 3000 } else { 160 };
        let seq0 = match k {
            0 => 65_500,
            1 => 0,
            _ => r.next() as u16,
        };
        let ts0 = if k == 2 {
            u32::MAX - 2000
        } else {
            r.next() as u32
        };
        let n = 80 + r.below(220);
        let s = stream(&mut r, t0 + k as u64 * 7_000_000, pt, n, seq0, ts0, step);
        out.push((0x1000 + k as u32, 40_000 + 2 * k as u16, s));
    }
    let twin: Vec<Pkt> = out[0]
        .2
        .iter()
        .map(|&(t, s, ts, pt, m)| (t + 1000, s, ts, if pt == 0 { 96 } else { pt }, m))
        .collect();
    out.push((0x2000, 40_100, twin));
    out
}

/// Writes the streams as classic pcap over Ethernet or pcapng over SLL2.
fn write_capture(path: &Path, seed: u64, pcapng: bool) {
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    for (ssrc, sport, pkts) in streams(seed) {
        for (t, seq, ts, pt, m) in pkts {
            let ip = ipv4_udp(
                [10, 9, 0, 1],
                sport,
                sport + 1000,
                &rtp(pt, m, seq, ts, ssrc),
            );
            let mut f = if pcapng {
                let mut h = vec![
                    0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 0, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0,
                ];
                h.truncate(20);
                h
            } else {
                vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]
            };
            f.extend_from_slice(&ip);
            frames.push((t, f));
        }
    }
    frames.sort_by_key(|f| f.0);
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    if pcapng {
        let mut w = PcapngWriter::new(file).unwrap();
        let i = w.add_interface("any", 276, 65535).unwrap();
        for (t, f) in &frames {
            w.write_packet(i, *t, f.len() as u32, f).unwrap();
        }
        w.into_inner().unwrap();
    } else {
        let mut w = PcapWriter::new(file, 1, 65535, PcapPrecision::Nano).unwrap();
        for (t, f) in &frames {
            w.write_packet(*t, f.len() as u32, f).unwrap();
        }
        w.into_inner().unwrap();
    }
}

/// tshark's rows: SSRC → [packets, lost, max delta, mean jitter, max jitter]
/// as printed.
fn tshark_streams(path: &Path) -> BTreeMap<u32, [String; 5]> {
    let out = Command::new("tshark")
        .args([
            "-n",
            "-q",
            "-o",
            "rtp.heuristic_rtp:TRUE",
            "-z",
            "rtp,streams",
            "-r",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f: Vec<&str> = line.split_whitespace().collect();
        let Some(ssrc) = f.iter().find(|x| x.starts_with("0x")) else {
            continue;
        };
        let ssrc = u32::from_str_radix(&ssrc[2..], 16).unwrap();
        if f.last() == Some(&"X") {
            f.pop();
        }
        let n = f.len();
        // ... Pkts Lost (pct) MinΔ MeanΔ MaxΔ MinJ MeanJ MaxJ
        let row = [f[n - 9], f[n - 8], f[n - 4], f[n - 2], f[n - 1]].map(str::to_string);
        m.insert(ssrc, row);
    }
    m
}

fn wirelab_streams(path: &Path, extra: &[&str]) -> BTreeMap<u32, serde_json::Value> {
    let out = Command::new(crate::common::exe())
        .args(["analyze", "--json"])
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let streams = v["rtp"][0]["streams"].as_array().unwrap();
    streams
        .iter()
        .map(|s| (s["ssrc"].as_u64().unwrap() as u32, s.clone()))
        .collect()
}

fn ms(v: &serde_json::Value) -> String {
    format!("{:.3}", v.as_f64().unwrap())
}

fn compare(path: &Path) {
    let t = tshark_streams(path);
    let w = wirelab_streams(path, &["--rtp-clock", "96=8000"]);
    assert_eq!(t.len(), 7, "tshark found every stream: {t:?}");
    assert_eq!(
        t.keys().collect::<Vec<_>>(),
        w.keys().collect::<Vec<_>>(),
        "same streams"
    );
    for (ssrc, row) in &t {
        let s = &w[ssrc];
        let ours = [
            s["packets"].to_string(),
            s["lost"].to_string(),
            ms(&s["max_delta_ms"]),
        ];
        assert_eq!(
            ours[..],
            row[..3],
            "stream 0x{ssrc:08x}: packets, lost, max delta"
        );
        if *ssrc == 0x2000 {
            // Dynamic: tshark knows no clock (0.000); ours with --rtp-clock
            // equals tshark's for the same stream under PT 0.
            assert_eq!(row[3..], ["0.000", "0.000"]);
            let twin = &t[&0x1000];
            assert_eq!(
                [ms(&s["mean_jitter_ms"]), ms(&s["max_jitter_ms"])][..],
                twin[3..],
                "dynamic twin"
            );
        } else {
            assert_eq!(
                [ms(&s["mean_jitter_ms"]), ms(&s["max_jitter_ms"])][..],
                row[3..],
                "stream 0x{ssrc:08x}: mean and max jitter"
            );
        }
    }
    // Without a clock for PT 96: no jitter, and the text says how to give one.
    let w = wirelab_streams(path, &[]);
    assert!(w[&0x2000]["max_jitter_ms"].is_null());
    // Something happened in them: the test is not passing on quiet streams.
    let lost: i64 = w.values().map(|s| s["lost"].as_i64().unwrap()).sum();
    let errors: u64 = w
        .values()
        .map(|s| s["sequence_errors"].as_u64().unwrap())
        .sum();
    let wraps: u64 = w.values().map(|s| s["wraps"].as_u64().unwrap()).sum();
    assert!(
        lost > 0 && errors > 10 && wraps >= 1,
        "lost {lost}, errors {errors}"
    );
}

#[test]
fn jitter_loss_and_counts_equal_tshark_pcap_ethernet() {
    if !crate::common::tools_available(&["tshark"]) {
        return;
    }
    let d = scratch("rtp", "pcap");
    for seed in [1, 7, 42] {
        let p = d.join(format!("rtp-{seed}.pcap"));
        write_capture(&p, seed, false);
        compare(&p);
    }
}

#[test]
fn jitter_loss_and_counts_equal_tshark_pcapng_sll2() {
    if !crate::common::tools_available(&["tshark"]) {
        return;
    }
    let d = scratch("rtp", "pcapng");
    for seed in [3, 99] {
        let p = d.join(format!("rtp-{seed}.pcapng"));
        write_capture(&p, seed, true);
        compare(&p);
    }
}

/// A hand-made stream with known gaps: the counts are exact.
#[test]
fn known_gaps_duplicates_and_a_wrap() {
    let d = scratch("rtp", "known");
    let p = d.join("known.pcap");
    let seqs: [u16; 10] = [65533, 65534, 65535, 1, 2, 2, 4, 3, 5, 6]; // 0 lost, 2 twice, 3 late
    let t0 = 1_700_000_000_000_000_000u64;
    let file = std::fs::File::create(&p).unwrap();
    let mut w = PcapWriter::new(file, 101, 65535, PcapPrecision::Nano).unwrap();
    for (i, s) in seqs.iter().enumerate() {
        let ts = u32::from(s.wrapping_sub(65533)) * 160;
        let ip = ipv4_udp([10, 9, 0, 1], 5004, 5006, &rtp(0, false, *s, ts, 77));
        w.write_packet(t0 + i as u64 * 20_000_000, ip.len() as u32, &ip)
            .unwrap();
    }
    w.into_inner().unwrap();
    let s = &wirelab_streams(&p, &["--rtp-port", "5006"])[&77];
    assert_eq!(s["packets"], 10);
    assert_eq!(s["expected"], 10, "65533 .. 6 across the wrap");
    assert_eq!(
        s["lost"], 0,
        "one lost and one duplicate net out, as in Wireshark"
    );
    assert_eq!(
        (s["duplicates"].as_u64(), s["wraps"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (s["jumps"].as_u64(), s["late"].as_u64()),
        (Some(2), Some(2))
    );
    // --rtp-port on another port: no RTP at all.
    let out = Command::new(crate::common::exe())
        .args(["analyze", "--json", "--rtp-port", "9"])
        .arg(&p)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rtp"][0]["streams"].as_array().unwrap().len(), 0);
    assert_eq!(v["captures"][0]["counts"]["other_udp"], 10);
}
