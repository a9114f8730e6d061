//! `wirelab analyze` on a capture of a real run: `wirelab send` between
//! two namespaces, `wirelab recv --record` and `wirelab capture` on the
//! receiver's interface at once. The capture's probes, analysed alone and
//! beside the sender's records, give exactly the counts the receiver's own
//! record file gives (sent, received, lost, duplicates per flow); IPv6 and
//! classic pcap as well as pcapng; LUNA probes on `--luna-port`; a
//! damaged capture is reported up to the damage.

use crate::common::{json, run, stop_json, wait_ok, Lab};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn start_capture(lab: &Lab, file: &Path, format: &str) -> Child {
    let child = lab
        .wirelab(&lab.r)
        .args([
            "capture",
            "-i",
            lab.rx_if(),
            "--json",
            "--quiet",
            "--format",
            format,
        ])
        .args(["--block-size", "1MiB", "--block-count", "64", "udp"])
        .arg("-w")
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_for_file(file, "capture did not start", Duration::from_secs(10));
    child
}

fn analyze(files: &[&Path]) -> serde_json::Value {
    let out = run(Command::new(crate::common::exe())
        .args(["analyze", "--json"])
        .args(files));
    json(&out)
}

/// A flow's (flow, sent, received, lost, duplicates).
type Counts = (u64, Option<u64>, u64, Option<u64>, u64);

/// Per flow.
fn counts(v: &serde_json::Value) -> Vec<Counts> {
    v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["flow"].as_u64().unwrap(),
                f["sent"].as_u64(),
                f["received"].as_u64().unwrap(),
                f["lost"].as_u64(),
                f["duplicates"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// One run: `count` probes at 1 kpps to `dst`; returns the three files.
fn one_run(lab: &Lab, tag: &str, dst: &str, v6: bool, format: &str) -> [std::path::PathBuf; 3] {
    let (tx, rx, cap) = (
        lab.file(&format!("{tag}-tx.wlr")),
        lab.file(&format!("{tag}-rx.wlr")),
        lab.file(&format!("{tag}.{format}")),
    );
    let port = if v6 { "6202" } else { "6201" };
    let mut recv = lab.wirelab(&lab.r);
    recv.args([
        "recv",
        "--port",
        port,
        "--quiet",
        "--timeout",
        "30s",
        "--record",
    ])
    .arg(&rx);
    if v6 {
        recv.arg("-6");
    }
    let recv = recv
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, port.parse().unwrap());
    let capture = start_capture(lab, &cap, format);
    run(lab
        .wirelab(&lab.s)
        .args([
            "send", dst, "--port", port, "--rate", "1000", "--count", "1500",
        ])
        .args(["--flows", "2", "--size", "100", "--quiet", "--record"])
        .arg(&tx));
    wait_ok(recv);
    let c = stop_json(capture);
    assert_eq!(c["schema"], "wirelab.capture/1");
    [tx, rx, cap]
}

fn check(tx: &Path, rx: &Path, cap: &Path) {
    let want = analyze(&[tx, rx]);
    let got = analyze(&[cap, tx]);
    assert_eq!(counts(&got), counts(&want), "capture + tx vs rx + tx");
    // The truth, not only agreement: `--count 1500 --flows 2` sends 1500
    // probes on each flow over a veth pair at 1 kpps, every one received
    // once.
    let c = counts(&want);
    assert_eq!(c.len(), 2, "two flows: {want}");
    for f in &c {
        assert_eq!(
            (f.1, f.2, f.3, f.4),
            (Some(1500), 1500, Some(0), 0),
            "{want}"
        );
    }
    // The capture alone against the receiver's records alone.
    assert_eq!(
        counts(&analyze(&[cap])),
        counts(&analyze(&[rx])),
        "capture vs rx"
    );
    let n = &got["captures"][0]["counts"];
    let received: u64 = counts(&want).iter().map(|c| c.2).sum();
    // Probes in the capture = records in rx.wlr (end markers included).
    let rx_records = (std::fs::metadata(rx).unwrap().len() - header_len(rx)) / 64;
    assert_eq!(n["probes"].as_u64(), Some(rx_records), "{n}");
    assert!(n["probes"].as_u64().unwrap() >= received);
    assert_eq!(
        got["rtp"][0]["streams"].as_array().unwrap().len(),
        0,
        "probes are not RTP"
    );
}

fn header_len(p: &Path) -> u64 {
    let b = std::fs::read(p).unwrap();
    20 + u64::from(u32::from_le_bytes([b[16], b[17], b[18], b[19]]))
}

#[test]
fn capture_of_a_real_run_gives_the_receivers_counts() {
    if !crate::common::netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let [tx, rx, cap] = one_run(&lab, "v4", "198.18.0.2", false, "pcapng");
    check(&tx, &rx, &cap);
    let [tx6, rx6, cap6] = one_run(&lab, "v6", "fd77::2", true, "pcap");
    check(&tx6, &rx6, &cap6);

    // Cut the pcapng in the middle of a block: what came before is
    // analysed, and a warning says where the file broke.
    let bytes = std::fs::read(&cap).unwrap();
    let cut = lab.file("cut.pcapng");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 3]).unwrap();
    let v = analyze(&[&cut]);
    let received: u64 = counts(&v).iter().map(|c| c.2).sum();
    let full: u64 = counts(&analyze(&[&cap])).iter().map(|c| c.2).sum();
    assert!(received > 0 && received < full, "{received} of {full}");
    assert_eq!(v["warnings"][0]["code"], "capture_damaged", "{v}");
    assert!(
        v["captures"][0]["error"]
            .as_str()
            .unwrap()
            .contains("offset"),
        "{v}"
    );
}

/// LUNA probes (no magic, no flow id) read on `--luna-port`: the capture
/// gives `recv --format luna`'s own counts, flows numbered by source.
#[test]
fn luna_probes_on_their_port() {
    if !crate::common::netns_available(&[]) {
        return;
    }
    let lab = Lab::new();
    let (rx, cap) = (lab.file("luna-rx.wlr"), lab.file("luna.pcapng"));
    let recv = lab
        .wirelab(&lab.r)
        .args(["recv", "--port", "6203", "--format", "luna", "--quiet"])
        .args(["--idle-timeout", "1s", "--timeout", "30s", "--record"])
        .arg(&rx)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_udp(&lab.r, 6203);
    let capture = start_capture(&lab, &cap, "pcapng");
    run(lab
        .wirelab(&lab.s)
        .args(["send", "198.18.0.2", "--port", "6203", "--format", "luna"])
        .args([
            "--rate", "1000", "--count", "800", "--size", "64", "--quiet",
        ]));
    wait_ok(recv);
    stop_json(capture);
    let want = counts(&analyze(&[&rx]));
    let out = run(Command::new(crate::common::exe())
        .args(["analyze", "--json", "--luna-port", "6203"])
        .arg(&cap));
    let got = json(&out);
    assert_eq!(counts(&got), want);
    assert_eq!(want.len(), 1);
    // All 800 LUNA probes sent on the veth pair arrived.
    assert_eq!(want[0].2, 800, "{want:?}");
    let c = &got["captures"][0];
    assert_eq!(c["counts"]["luna_probes"].as_u64(), Some(want[0].2), "{c}");
    assert_eq!(c["luna_sources"][0]["flow"], 1);
    assert!(c["luna_sources"][0]["source"]
        .as_str()
        .unwrap()
        .starts_with("198.18.0.1:"));
    // Without --luna-port they are other UDP, not probes.
    let plain = analyze(&[&cap]);
    assert_eq!(plain["captures"][0]["counts"]["luna_probes"], 0);
    assert!(counts(&plain).is_empty());
}
