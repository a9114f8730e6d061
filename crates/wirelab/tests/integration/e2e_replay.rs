//! `wirelab replay` against tcpreplay's own expected outputs (rewrite-only
//! via `-w`), over a veth pair in namespaces (captured by tcpdump), and
//! checksum validity after rewrites (judged by tshark).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use wirelab_lab::lab::{Lab, LinkSpec};

/// tcpreplay's test inputs and expected outputs, in the repository's testdata/.
const TD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/tcpreplay");

fn td(name: &str) -> PathBuf {
    Path::new(TD).join(name)
}

/// Minimal classic pcap reader (either byte order): packet bytes only.
fn packets(p: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let le = matches!(&b[..4], [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]);
    let rd = |o: usize| {
        let a: [u8; 4] = b[o..o + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut off = 24;
    let mut out = vec![];
    while off + 16 <= b.len() {
        let cl = rd(off + 8) as usize;
        out.push(b[off + 16..off + 16 + cl].to_vec());
        off += 16 + cl;
    }
    out
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wlr-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn rewrite(args: &[&str], out: &Path) -> Vec<Vec<u8>> {
    let o = crate::common::run(
        Command::new(crate::common::exe())
            .arg("replay")
            .arg("-q")
            .arg("-w")
            .arg(out)
            .args(args)
            .arg(td("test.pcap")),
    );
    assert!(o.status.success());
    packets(out)
}

fn assert_same_except(got: &[Vec<u8>], want: &[Vec<u8>], except: &[usize], why: &str) {
    assert_eq!(got.len(), want.len(), "packet count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if except.contains(&i) {
            assert_ne!(
                g, w,
                "packet {i} was expected to differ ({why}); update the test"
            );
            continue;
        }
        assert_eq!(g, w, "packet index {i} differs");
    }
}

#[test]
fn include_and_exclude_match_tcpreplay() {
    let got = rewrite(&["--include", "7,11,20-23,174-"], &tmp("inc.pcap"));
    assert_same_except(&got, &packets(&td("test.replay_include")), &[], "");
    let got = rewrite(&["--exclude", "23-,11-20,2,3"], &tmp("exc.pcap"));
    assert_same_except(&got, &packets(&td("test.replay_exclude")), &[], "");
    // The same selections by P: prefix and by --packets.
    let got = rewrite(&["--packets", "7,11,20-23,174-"], &tmp("inc2.pcap"));
    assert_eq!(got, packets(&td("test.replay_include")));
}

#[test]
fn efcs_and_fixlen_match_tcprewrite() {
    let got = rewrite(&["--efcs"], &tmp("efcs.pcap"));
    assert_same_except(&got, &packets(&td("test.rewrite_efcs")), &[], "");
    let got = rewrite(&["--fixlen", "trunc"], &tmp("fixlen.pcap"));
    assert_same_except(&got, &packets(&td("test.rewrite_fixlen_trunc")), &[], "");
}

#[test]
fn mtu_trunc_matches_tcprewrite_with_documented_differences() {
    let got = rewrite(&["--mtu", "300", "--mtu-trunc"], &tmp("mtu.pcap"));
    // 26 and 31 are not truncated but carry wrong checksums in test.pcap:
    // tcprewrite recomputes every packet's checksums, wirelab leaves
    // packets it does not change byte-identical. 113 is an 802.3/LLC frame
    // of 1514 bytes: tcprewrite leaves non-IP frames long, wirelab
    // truncates every frame whose payload exceeds the MTU (the interface
    // would refuse it otherwise).
    assert_same_except(
        &got,
        &packets(&td("test.rewrite_mtutrunc")),
        &[26, 31, 113],
        "documented",
    );
}

#[test]
fn vlan_8021ad_matches_tcprewrite_with_documented_differences() {
    let got = rewrite(
        &[
            "--enet-vlan",
            "add",
            "--enet-vlan-tag",
            "42",
            "--enet-vlan-cfi",
            "1",
            "--enet-vlan-pri",
            "2",
            "--enet-vlan-proto",
            "802.1ad",
        ],
        &tmp("vlan.pcap"),
    );
    // 113 (802.3/LLC): tcprewrite leaves it untagged, wirelab tags every
    // frame. 141.. (Ethernet over MPLS with an inner 802.1Q tag):
    // tcprewrite inserts the tag inside the pseudowire, wirelab at the
    // outer Ethernet header, which is where a switch looks.
    assert_same_except(
        &got,
        &packets(&td("test.rewrite_vlan802.1ad")),
        &[113, 141, 149, 156, 169, 173, 174, 175, 176, 177, 178],
        "documented",
    );
}

#[test]
fn unique_ip_with_loop_matches_tcpreplay_with_documented_differences() {
    let got = rewrite(&["--unique-ip", "--loop", "2"], &tmp("uniq.pcap"));
    assert_eq!(got.len(), 358);
    // tcpreplay drops non-IP frames (ARP 9, LLC 113, loopback 115) from
    // every loop after the first; wirelab sends them unchanged.
    let mine: Vec<Vec<u8>> = got[..179]
        .iter()
        .chain(
            got[179..]
                .iter()
                .enumerate()
                .filter(|(k, _)| ![9, 113, 115].contains(k))
                .map(|(_, p)| p),
        )
        .cloned()
        .collect();
    // The Ethernet-over-MPLS frames: tcpreplay edits the IP header inside
    // the pseudowire; wirelab does not look inside pseudowires.
    let eompls: Vec<usize> = (317..355)
        .filter(|i| [317, 325, 332, 345, 349, 350, 351, 352, 353, 354].contains(i))
        .collect();
    assert_same_except(
        &mine,
        &packets(&td("test.replay_unique_ip")),
        &eompls,
        "documented",
    );
}

#[test]
fn checksums_after_rewrites_are_valid_per_tshark() {
    if !crate::common::tools_available(&["tshark"]) {
        return;
    }
    let out = tmp("csum.pcap");
    rewrite(
        &[
            "--srcipmap",
            "172.16.0.0/12:10.99.0.0/16",
            "--dstipmap",
            "0.0.0.0/0:192.0.2.0/24",
            "--portmap",
            "80:8080",
            "--ttl=-1",
            "--pnat",
            "[2001::/16]:[fd00::/16]",
            "--fixcsum",
        ],
        &out,
    );
    let o = crate::common::run(Command::new("tshark").args(["-n", "-r"]).arg(&out).args([
        "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
        "-Y", "ip.checksum.status == 0 || udp.checksum.status == 0 || tcp.checksum.status == 0 || icmp.checksum.status == 0 || icmpv6.checksum.status == 0",
    ]));
    let bad = String::from_utf8_lossy(&o.stdout);
    // Fragments and frames cut short cannot be verified by tshark either;
    // anything it flags as bad must be one of those.
    for line in bad.lines() {
        assert!(
            line.contains("Fragmented")
                || line.contains("truncated")
                || line.contains("reassembled"),
            "bad checksum: {line}"
        );
    }
}

/// Namespaces `a` and `b` joined by a veth pair (MTU 9000) with IPv6 off,
/// so the capture holds only what wirelab sent.
fn pair() -> Lab {
    Lab::new("wlr")
        .namespace("a")
        .namespace("b")
        .link("a", "b", LinkSpec::new().ipv6_off().mtu(9000))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// tcpdump on `dev` in namespace `role` of `lab` writing to `cap`, once it
/// captures.
fn tcpdump(lab: &Lab, role: &str, dev: &str, cap: &Path) -> std::process::Child {
    crate::common::tcpdump::start(
        lab.exec(role, "timeout")
            .args(["60", "tcpdump", "-i", dev, "-U", "-nn", "-s", "0"])
            // A 64 MiB buffer so a tcpdump starved on a loaded machine
            // does not drop frames the test counts.
            .args(["-B", "65536", "--time-stamp-precision=nano", "-w"])
            .arg(cap),
        cap,
    )
}

/// Stops `td` once `cap` holds `expect` frames (bounded: a missing frame
/// shows as a count that differs, not as a hang), then reads it.
fn stop_tcpdump(td: std::process::Child, cap: &Path, expect: usize) -> Vec<Vec<u8>> {
    crate::common::tcpdump::wait_frames(cap, expect, Duration::from_secs(30));
    // A little longer, so a frame sent twice would show too.
    std::thread::sleep(Duration::from_millis(200));
    crate::common::tcpdump::stop(td);
    packets(cap)
}

/// Replays `file` with `args` from namespace a, captures `expect` frames on
/// b with tcpdump, returns the captured frames and the JSON report.
fn replay_captured(
    p: &Lab,
    file: &Path,
    args: &[&str],
    cap: &Path,
    expect: usize,
) -> (Vec<Vec<u8>>, serde_json::Value) {
    let td = tcpdump(p, "b", &p.end("b", "a").dev, cap);
    let out = crate::common::run(
        p.exec("a", crate::common::exe())
            .args(["replay", "--json", "-i", &p.end("a", "b").dev])
            .args(args)
            .arg(file),
    );
    (stop_tcpdump(td, cap, expect), crate::common::json(&out))
}

/// A pcap of `n` UDP frames with exponential gaps (mean 200 µs, seeded).
fn exp_trace(path: &Path, n: usize) -> Vec<Vec<u8>> {
    let mut b = vec![
        0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0,
    ];
    b[16..20].copy_from_slice(&262_144u32.to_le_bytes());
    let mut x: u64 = 42;
    let mut t_us: u64 = 1_700_000_000_000_000;
    let mut frames = vec![];
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        t_us += (-u.ln() * 200.0) as u64;
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[
            0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
        ]);
        f.extend_from_slice(&[0x30, 0x39, 0x30, 0x39, 0, 12, 0, 0]);
        f.extend_from_slice(&(i as u32).to_be_bytes());
        frames.push(f.clone());
        b.extend_from_slice(&((t_us / 1_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&((t_us % 1_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&f);
    }
    std::fs::write(path, b).unwrap();
    frames
}

#[test]
fn replay_into_namespace_is_exact() {
    if !crate::common::netns_available(&["tcpdump"]) {
        return;
    }
    let p = pair();
    let trace = tmp("exp.pcap");
    let want = exp_trace(&trace, 2000);
    for (tx, phase) in [("ring", "off"), ("sendmmsg", "auto")] {
        let (got, rep) = replay_captured(
            &p,
            &trace,
            &["--tx", tx, "--phase", phase],
            &tmp(&format!("cap-{tx}.pcap")),
            want.len(),
        );
        assert_eq!(rep["schema"], "wirelab.replay/1");
        if phase == "off" {
            assert!(rep["phase"].is_null());
        } else {
            // The calibration ran for its default 200 ms and moved the start
            // by less than the 20 ms fold.
            assert_eq!(rep["phase"]["calibration_ns"], 200_000_000);
            assert!(rep["phase"]["shift_ns"].as_u64().unwrap() < 20_000_000);
        }
        assert_eq!(rep["fidelity"]["packets"], 2000);
        assert_eq!(got.len(), want.len(), "{tx}: count");
        assert!(got == want, "{tx}: content or order differs");
        assert_eq!(rep["send"]["frames_lost"], 0);
    }
    // The default --tx auto: sendmmsg when timing matters, the TX ring at top speed.
    let (got, rep) = replay_captured(&p, &trace, &[], &tmp("cap-auto.pcap"), want.len());
    assert_eq!(rep["tx"], "sendmmsg");
    assert!(got == want, "auto: content or order differs");
    // tcpreplay's include selection over the wire.
    let include = packets(&td("test.replay_include"));
    let (got, rep) = replay_captured(
        &p,
        &td("test.pcap"),
        &["--topspeed", "--include", "7,11,20-23,174-"],
        &tmp("cap-inc.pcap"),
        include.len(),
    );
    assert_eq!(rep["tx"], "ring");
    assert!(rep["phase"].is_null(), "no phase calibration at top speed");
    assert_eq!(got, include);
}

/// One sending namespace `s` with two veth pairs to two capturing
/// namespaces (`c`, the client side behind `-i`, and `d`, the server side
/// behind `-I`), IPv6 off everywhere.
struct Tri(Lab);

impl Tri {
    fn new() -> Tri {
        let off = || LinkSpec::new().ipv6_off();
        Tri(Lab::new("wlr")
            .namespace("s")
            .namespace("c")
            .namespace("d")
            .link("s", "c", off())
            .link("s", "d", off())
            .build()
            .unwrap_or_else(|e| panic!("{e}")))
    }

    /// Replays with `args` on -i (client side) and -I (server side);
    /// returns the frames captured on each side (`expect` = client and
    /// server frame counts) and the report.
    fn replay(
        &self,
        file: &Path,
        args: &[&str],
        tag: &str,
        expect: (usize, usize),
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, serde_json::Value) {
        let (cc, cd) = (
            tmp(&format!("split-{tag}-c.pcap")),
            tmp(&format!("split-{tag}-s.pcap")),
        );
        let lab = &self.0;
        let t1 = tcpdump(lab, "c", &lab.end("c", "s").dev, &cc);
        let t2 = tcpdump(lab, "d", &lab.end("d", "s").dev, &cd);
        let out = crate::common::run(
            lab.exec("s", crate::common::exe())
                .args(["replay", "--json"])
                .args(["-i", &lab.end("s", "c").dev])
                .args(["-I", &lab.end("s", "d").dev])
                .args(args)
                .arg(file),
        );
        let c = stop_tcpdump(t1, &cc, expect.0);
        let d = stop_tcpdump(t2, &cd, expect.1);
        (c, d, crate::common::json(&out))
    }
}

/// An Ethernet/IPv4 frame with a TCP (flags) or UDP header and a 4-byte
/// index payload.
fn l4_frame(src: [u8; 4], dst: [u8; 4], tcp: Option<u8>, sp: u16, dp: u16, i: u32) -> Vec<u8> {
    let l4 = if tcp.is_some() { 20 } else { 8 };
    let tot = (20 + l4 + 4) as u16;
    let proto = if tcp.is_some() { 6 } else { 17 };
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0]);
    f[16..18].copy_from_slice(&tot.to_be_bytes());
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sp.to_be_bytes());
    f.extend_from_slice(&dp.to_be_bytes());
    match tcp {
        Some(fl) => {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, fl, 0xff, 0xff, 0, 0, 0, 0])
        }
        None => f.extend_from_slice(&[0, 12, 0, 0]),
    }
    f.extend_from_slice(&i.to_be_bytes());
    f
}

fn write_pcap(path: &Path, frames: &[Vec<u8>], gap_us: u32) {
    let mut b = vec![
        0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0,
    ];
    b[16..20].copy_from_slice(&65_535u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        let us = i as u32 * gap_us;
        b.extend_from_slice(&(1_700_000_000 + us / 1_000_000).to_le_bytes());
        b.extend_from_slice(&(us % 1_000_000).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn two_interface_split_sends_each_packet_to_its_side() {
    if !crate::common::netns_available(&["tcpdump"]) {
        return;
    }
    const A: [u8; 4] = [10, 1, 0, 1];
    const B: [u8; 4] = [10, 1, 0, 2];
    const S: [u8; 4] = [10, 2, 0, 1];
    const SYN: Option<u8> = Some(0x02);
    const SYNACK: Option<u8> = Some(0x12);
    const ACK: Option<u8> = Some(0x10);
    // (frame, server side by auto, by --cidr 10.2.0.0/16, by --port-split)
    type Row = (Vec<u8>, bool, bool, bool);
    let mut spec: Vec<Row> = vec![];
    let mut add = |f: Vec<u8>, auto: bool, cidr: bool, port: bool| spec.push((f, auto, cidr, port));
    // TCP A -> S:8080 with a handshake (8080 is not well known: the port
    // split falls back to the lower port).
    add(l4_frame(A, S, SYN, 40000, 8080, 0), false, false, false);
    add(l4_frame(S, A, SYNACK, 8080, 40000, 1), true, true, true);
    add(l4_frame(A, S, ACK, 40000, 8080, 2), false, false, false);
    // UDP B -> S:53 and the reply.
    add(l4_frame(B, S, None, 33000, 53, 3), false, false, false);
    add(l4_frame(S, B, None, 53, 33000, 4), true, true, true);
    // TCP picked up mid-stream, the server (port 22) speaks first.
    add(l4_frame(S, B, ACK, 22, 5001, 5), true, true, true);
    add(l4_frame(B, S, ACK, 5001, 22, 6), false, false, false);
    // A peer-to-peer connection inside the client network: B serves on a
    // high port, opened by A's SYN (auto: B is the server; cidr: client
    // network, so client; port: neither well known, lower port 9000).
    add(l4_frame(A, B, SYN, 41000, 9000, 7), false, false, false);
    add(l4_frame(B, A, SYNACK, 9000, 41000, 8), true, false, true);
    // UDP between high ports, where the lower port sends first (auto: the
    // first sender is the client; port: the lower port is the server's).
    add(l4_frame(A, S, None, 6000, 7000, 9), false, false, true);
    add(l4_frame(S, A, None, 7000, 6000, 10), true, true, false);
    // Not IP: always the client side.
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.extend_from_slice(&[0u8; 28]);
    add(arp, false, false, false);
    let trace = tmp("split.pcap");
    let frames: Vec<Vec<u8>> = spec.iter().map(|s| s.0.clone()).collect();
    write_pcap(&trace, &frames, 200);
    let want = |pick: fn(&Row) -> bool| -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let c = spec
            .iter()
            .filter(|s| !pick(s))
            .map(|s| s.0.clone())
            .collect();
        let s = spec
            .iter()
            .filter(|s| pick(s))
            .map(|s| s.0.clone())
            .collect();
        (c, s)
    };
    // Classify only (tcpprep): the cache file.
    let cache = tmp("split.cache");
    let o = crate::common::run(
        Command::new(crate::common::exe())
            .args(["replay", "--json", "--auto", "--save-cache"])
            .arg(&cache)
            .arg(&trace),
    );
    let j = crate::common::json(&o);
    assert_eq!(j["client_packets"], 7);
    assert_eq!(j["server_packets"], 5);
    let tri = Tri::new();
    let auto = want(|s| s.1);
    let cidr = want(|s| s.2);
    // (tag, arguments, expected client and server frames, frames not sent)
    let mut runs = vec![
        ("auto", vec!["--auto".to_string()], auto.clone(), 0),
        (
            "cache",
            vec!["--cachefile".into(), cache.display().to_string()],
            auto,
            0,
        ),
        (
            "cidr",
            vec!["--cidr".into(), "10.2.0.0/16".into()],
            cidr.clone(),
            0,
        ),
        (
            "port",
            vec!["--port-split".into(), "--tx".into(), "sendmmsg".into()],
            want(|s| s.3),
            0,
        ),
    ];
    if crate::common::tools_available(&["tcpprep"]) {
        // tcpprep's binary cache: `-c NETS --reverse -N` is wirelab's
        // --cidr NETS split; packets 1 and 2 are left out by its include
        // list ("don't send").
        let tp = tmp("split-tcpprep.cache");
        crate::common::run(
            Command::new("tcpprep")
                .args(["-c", "10.2.0.0/16", "--reverse", "-N", "-x", "P:3-12"])
                .arg("-i")
                .arg(&trace)
                .arg("-o")
                .arg(&tp),
        );
        let not_sent = [&spec[0].0, &spec[1].0];
        let keep = |v: &Vec<Vec<u8>>| -> Vec<Vec<u8>> {
            v.iter()
                .filter(|f| !not_sent.contains(f))
                .cloned()
                .collect()
        };
        runs.push((
            "tcpprep",
            vec!["--cachefile".into(), tp.display().to_string()],
            (keep(&cidr.0), keep(&cidr.1)),
            2,
        ));
    }
    for (tag, args, exp, skipped) in runs {
        let (c, s, rep) = tri.replay(
            &trace,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            tag,
            (exp.0.len(), exp.1.len()),
        );
        assert_eq!(c, exp.0, "{tag}: client side (-i) differs");
        assert_eq!(s, exp.1, "{tag}: server side (-I) differs");
        assert_eq!(rep["split"]["client_packets"], exp.0.len() as u64, "{tag}");
        assert_eq!(rep["split"]["server_packets"], exp.1.len() as u64, "{tag}");
        assert_eq!(rep["split"]["skipped_packets"], skipped, "{tag}");
        assert_eq!(
            rep["fidelity"]["packets"],
            frames.len() as u64 - skipped,
            "{tag}"
        );
        assert_eq!(rep["send"]["frames_lost"], 0, "{tag}");
    }
    // A split without a second interface names the fix.
    let o = Command::new(crate::common::exe())
        .args(["replay", "-i", "lo", "--auto"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-I"));
}

/// Writes a tcpprep cache for `pcap` with the real tcpprep.
fn tcpprep(pcap: &Path, args: &[&str], cache: &Path) {
    crate::common::run(
        Command::new("tcpprep")
            .args(args)
            .arg("-i")
            .arg(pcap)
            .arg("-o")
            .arg(cache),
    );
}

/// tcpprep's own reading of a cache file (`tcpprep -I`, "print info"): one
/// character per packet, `c` primary, `s` secondary, `-` don't send.
fn tcpprep_info(cache: &Path) -> String {
    let o = crate::common::run(Command::new("tcpprep").arg("-I").arg(cache));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let (num, what) = l
                .strip_prefix("Packet ")
                .and_then(|r| r.split_once(" -> "))
                .unwrap_or_else(|| panic!("unexpected tcpprep -I line {l:?}"));
            assert_eq!(num.parse::<usize>().unwrap(), i + 1, "{l}");
            match what {
                "Primary" => 'c',
                "Secondary" => 's',
                "Don't Send" => '-',
                o => panic!("unexpected tcpprep -I verdict {o:?}"),
            }
        })
        .collect()
}

/// The per-packet characters of a wirelab text cache file.
fn cache_chars(p: &Path) -> String {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut lines = t.lines();
    assert_eq!(lines.next(), Some("wirelab.replay.cache/1"));
    lines
        .filter(|l| !l.starts_with("packets ") && !l.starts_with("mode "))
        .collect()
}

/// Loads `cache` with `wirelab replay --cachefile` and writes it back as a
/// text cache (classify only): the JSON summary and the per-packet sides.
fn wirelab_reads(cache: &Path, pcap: &Path, tag: &str) -> (serde_json::Value, String) {
    let text = tmp(&format!("{tag}.txt"));
    let o = crate::common::run(
        Command::new(crate::common::exe())
            .args(["replay", "--json", "--cachefile"])
            .arg(cache)
            .arg("--save-cache")
            .arg(&text)
            .arg(pcap),
    );
    (crate::common::json(&o), cache_chars(&text))
}

fn example2() -> PathBuf {
    Path::new(TD).join("../pcapplusplus/example2.pcap")
}

#[test]
fn tcpprep_cache_files_classify_every_packet_as_tcpprep_does() {
    if !crate::common::tools_available(&["tcpprep"]) {
        return;
    }
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (td("test.pcap"), vec!["-a", "client"]),
        (td("test.pcap"), vec!["-a", "router"]),
        (td("test.pcap"), vec!["-a", "first"]),
        (td("test.pcap"), vec!["-c", "10.0.0.0/8"]),
        (
            td("test.pcap"),
            vec!["-c", "172.16.0.0/12", "--reverse", "-N"],
        ),
        (td("test.pcap"), vec!["-p"]),
        // "Don't send" packets, from tcpprep's include/exclude lists.
        (
            td("test.pcap"),
            vec!["-c", "10.0.0.0/8", "-x", "P:1-10,100-120"],
        ),
        (td("test.pcap"), vec!["-p", "-X", "P:50-60,170-179"]),
        (td("test_fragroute.pcap"), vec!["-a", "bridge"]),
        // 4709 packets: tcpprep writes its data in blocks of 1020 packets.
        (example2(), vec!["-c", "10.0.0.0/8"]),
        (example2(), vec!["-a", "client"]),
        (example2(), vec!["-p", "-x", "P:1000-1100,3000-4709"]),
    ];
    for (i, (pcap, args)) in cases.iter().enumerate() {
        let cache = tmp(&format!("tcpprep-{i}.cache"));
        tcpprep(pcap, args, &cache);
        let want = tcpprep_info(&cache);
        let (j, got) = wirelab_reads(&cache, pcap, &format!("tcpprep-{i}"));
        assert_eq!(got.len(), want.len(), "{args:?}: packet count");
        if let Some(k) = got.chars().zip(want.chars()).position(|(g, w)| g != w) {
            panic!(
                "{args:?}: packet {} is {:?} in wirelab but {:?} per tcpprep -I (c = primary/client, s = secondary/server, - = don't send)",
                k + 1,
                got.as_bytes()[k] as char,
                want.as_bytes()[k] as char
            );
        }
        let count = |c: char| want.chars().filter(|&x| x == c).count() as u64;
        assert_eq!(j["mode"], "tcpprep", "{args:?}");
        assert_eq!(j["packets"], want.len() as u64, "{args:?}");
        assert_eq!(j["client_packets"], count('c'), "{args:?}");
        assert_eq!(j["server_packets"], count('s'), "{args:?}");
        assert_eq!(j["skipped_packets"], count('-'), "{args:?}");
        // tcpprep embeds its command line as the comment.
        let comment = j["comment"].as_str().unwrap();
        assert!(
            args.iter().all(|a| comment.contains(a)),
            "{args:?}: {comment}"
        );
        if args
            .iter()
            .any(|a| a.starts_with("-x") || a.starts_with("-X"))
        {
            assert!(count('-') > 0, "{args:?}: no don't-send packet");
        }
    }
}

#[test]
fn tcpprep_reverse_cidr_split_equals_wirelab_cidr() {
    // tcpprep -c puts packets from the networks on the primary interface
    // (its manual calls them servers); with --reverse they go to the
    // secondary one, and -N sends non-IP frames on the primary: wirelab's
    // --cidr split exactly, packet for packet.
    if !crate::common::tools_available(&["tcpprep"]) {
        return;
    }
    for (i, (pcap, nets)) in [
        (td("test.pcap"), "10.0.0.0/8"),
        (td("test_fragroute.pcap"), "192.168.0.0/16,172.16.0.0/12"),
        (example2(), "10.0.0.0/8"),
        (example2(), "192.168.0.0/16,172.16.0.0/12"),
    ]
    .into_iter()
    .enumerate()
    {
        let tag = format!("rev-{i}");
        let cache = tmp(&format!("{tag}.cache"));
        tcpprep(&pcap, &["-c", nets, "--reverse", "-N"], &cache);
        let (_, from_tcpprep) = wirelab_reads(&cache, &pcap, &tag);
        let own = tmp(&format!("{tag}-own.txt"));
        crate::common::run(
            Command::new(crate::common::exe())
                .args(["replay", "--cidr", nets, "--save-cache"])
                .arg(&own)
                .arg(&pcap),
        );
        assert_eq!(
            from_tcpprep,
            cache_chars(&own),
            "{}: {nets}",
            pcap.display()
        );
    }
}

#[test]
fn unusable_tcpprep_cache_files_are_refused_with_the_reason() {
    if !crate::common::tools_available(&["tcpprep"]) {
        return;
    }
    let refuse = |cache: &Path, pcap: &Path| -> String {
        let o = Command::new(crate::common::exe())
            .args(["replay", "--cachefile"])
            .arg(cache)
            .args(["--save-cache", tmp("refused.txt").to_str().unwrap()])
            .arg(pcap)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    let good = tmp("good.cache");
    tcpprep(&td("test.pcap"), &["-c", "10.0.0.0/8"], &good);
    let bytes = std::fs::read(&good).unwrap();
    // A cache for another trace.
    let e = refuse(&good, &td("test_fragroute.pcap"));
    assert!(
        e.contains("179 packet(s)") && e.contains("the trace has 20"),
        "{e}"
    );
    // The same cache with two copies of its trace (tcpprep reads one file).
    let o = Command::new(crate::common::exe())
        .args(["replay", "--cachefile"])
        .arg(&good)
        .args(["--save-cache", tmp("two.txt").to_str().unwrap()])
        .arg(td("test.pcap"))
        .arg(td("test.pcap"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the trace has 358"));
    // Cut short.
    let cut = tmp("cut.cache");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    let e = refuse(&cut, &td("test.pcap"));
    assert!(
        e.contains("cut short") && e.contains("179 packet(s)"),
        "{e}"
    );
    std::fs::write(&cut, &bytes[..20]).unwrap();
    assert!(refuse(&cut, &td("test.pcap")).contains("24-byte header"));
    // Another format version.
    let mut v3 = bytes.clone();
    v3[8..10].copy_from_slice(b"03");
    let old = tmp("v3.cache");
    std::fs::write(&old, &v3).unwrap();
    let e = refuse(&old, &td("test.pcap"));
    assert!(e.contains("version \"03\" is not supported"), "{e}");
    // Neither format.
    let junk = tmp("junk.cache");
    std::fs::write(&junk, b"tcpprep 04 but not really\n").unwrap();
    assert!(refuse(&junk, &td("test.pcap")).contains("not a cache file"));
    // tcpprep --auto with --exclude leaves its first pass's entries in the
    // file (tcpprep 4.4): wirelab refuses it rather than send packets on
    // shifted sides. Should a tcpprep write it right, it must read right.
    let shifted = tmp("shifted.cache");
    tcpprep(
        &td("test.pcap"),
        &["-a", "client", "-X", "P:50-60"],
        &shifted,
    );
    let len = std::fs::metadata(&shifted).unwrap().len();
    let comment_len = u64::from(u16::from_be_bytes(
        std::fs::read(&shifted).unwrap()[22..24].try_into().unwrap(),
    ));
    if len > 24 + comment_len + 179u64.div_ceil(4) {
        let e = refuse(&shifted, &td("test.pcap"));
        assert!(
            e.contains("too long") && e.contains("--include/--exclude"),
            "{e}"
        );
    } else {
        let (_, got) = wirelab_reads(&shifted, &td("test.pcap"), "shifted");
        assert_eq!(got, tcpprep_info(&shifted));
    }
}
