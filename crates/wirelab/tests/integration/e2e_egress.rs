//! Replay's sent count is what the peer interface receives: frames the
//! egress interface cannot carry (shorter than an Ethernet header, longer
//! than its MTU plus the header and one VLAN tag) are refused before they
//! are queued and counted by reason, for the TX ring (where the kernel
//! would otherwise take and silently drop them) and for sendmmsg.

use crate::common::{exe, netns_available, run};
use std::path::Path;
use wirelab_lab::lab::{exec_in, Lab, LinkSpec};

/// An L2 frame of `len` bytes (EtherType 0x88b5, local experimental), with
/// an 802.1Q tag when `tagged`; below 14 bytes just `len` bytes.
fn frame(len: usize, tagged: bool) -> Vec<u8> {
    if len < 14 {
        return vec![0xff; len];
    }
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    if tagged {
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    }
    f.extend_from_slice(&[0x88, 0xb5]);
    f.resize(len, 0);
    f
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut b = vec![];
    for v in [0xa1b2c3d4u32, 0x0004_0002, 0, 0, 65_535, 1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        let len = f.len() as u32;
        for v in [1, i as u32 * 1_000, len, len] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

fn rx_packets(lab: &Lab) -> u64 {
    let path = format!(
        "/sys/class/net/{}/statistics/rx_packets",
        lab.end("r", "s").dev
    );
    let o = run(lab.exec("r", "cat").arg(path));
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

#[test]
fn frames_the_interface_cannot_carry_are_refused_and_counted_by_reason() {
    if !netns_available(&[]) {
        return;
    }
    // No addresses and no IPv6: the stack sends nothing of its own, so the
    // receiving interface counts only what replay sends.
    let lab = Lab::new("wle")
        .namespace("s")
        .namespace("r")
        .link("s", "r", LinkSpec::new().ipv6_off())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile_dir(lab.ns("s"));
    let dev = lab.end("s", "r").dev.clone();
    // MTU 1500: 0, 1, 13 bytes are too short; 1515 and 1518 untagged and
    // 1519 tagged too long; 14, 60, 1514 untagged and 1518 tagged fit.
    let frames = [
        frame(0, false),
        frame(1, false),
        frame(13, false),
        frame(14, false),
        frame(60, false),
        frame(1514, false),
        frame(1515, false),
        frame(1518, false),
        frame(1518, true),
        frame(1519, true),
    ];
    let pcap = dir.join("misfits.pcap");
    write_pcap(&pcap, &frames);
    for (tx, preload) in [("ring", "1G"), ("sendmmsg", "1G"), ("ring", "1")] {
        let before = rx_packets(&lab);
        let o = run(exec_in(lab.ns("s"), exe())
            .args(["replay", "-i", &dev, "--topspeed", "--json"])
            .args(["--tx", tx, "--max-preload", preload])
            .arg(&pcap));
        let v = crate::common::json(&o);
        let got = rx_packets(&lab) - before;
        let what = format!("--tx {tx} --max-preload {preload}: {v}");
        assert_eq!(v["read"]["read"], 10, "{what}");
        assert_eq!(v["read"]["too_short"], 3, "{what}");
        assert_eq!(v["read"]["oversize"], 3, "{what}");
        assert_eq!(v["read"]["selected"], 4, "{what}");
        assert_eq!(v["send"]["frames_lost"], 0, "{what}");
        assert_eq!(v["send"]["failures"], 0, "{what}");
        // Every frame counted as sent arrived, and nothing else.
        assert_eq!(got, 4, "{what}");
    }
    // The text report names both reasons.
    let o = run(exec_in(lab.ns("s"), exe())
        .args(["replay", "-i", &dev, "--topspeed"])
        .arg(&pcap));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("too short 3 / oversize 3"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(tag);
    std::fs::create_dir_all(&d).unwrap();
    d
}
