use super::*;
use crate::capture::frame::build::{ethernet, ipv4_udp};
use wirelab_pcap::{PcapngWriter, LINKTYPE_ETHERNET};
use wirelab_wire::probe::{ProbeFlags, ProbeRepr};

fn probe(seq: u64) -> Vec<u8> {
    let mut b = vec![0u8; 64];
    ProbeRepr {
        flags: ProbeFlags(0),
        flow: 4,
        seq,
        tx_ns: 1_700_000_000_000_000_000 + seq * 1000,
        echo: None,
    }
    .emit(&mut b)
    .unwrap();
    b
}

/// `n` probes of flow 4 to port 9000 and one DNS-like datagram.
fn capture(n: u64) -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let i = w.add_interface("veth0", LINKTYPE_ETHERNET, 65535).unwrap();
    let mut frames: Vec<Vec<u8>> = (0..n).map(probe).collect();
    frames.push(vec![1, 2, 3]);
    for (k, p) in frames.iter().enumerate() {
        let port = if k as u64 == n { 53 } else { 9000 };
        let f = ethernet(&ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 40000, port, p));
        let ts = 1_700_000_000_100_000_000 + k as u64 * 1000;
        w.write_packet(i, ts, f.len() as u32, &f).unwrap();
    }
    w.into_inner().unwrap()
}

fn opts() -> CaptureOptions {
    CaptureOptions {
        max_rtp_streams: 8,
        ..CaptureOptions::default()
    }
}

#[test]
fn a_capture_gives_receive_records_and_its_own_lines() {
    let (mut set, mut rx, mut warnings) = (CaptureSet::default(), Vec::new(), Vec::new());
    assert!(set.is_empty());
    set.read("c.pcapng", &capture(5)[..], opts(), &mut rx, &mut warnings)
        .unwrap();
    assert_eq!(
        rx.iter().map(|r| (r.flow, r.seq)).collect::<Vec<_>>(),
        (0..5).map(|s| (4, s)).collect::<Vec<_>>()
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((set.inputs.len(), set.rtp.len()), (1, 1));
    let mut text = Vec::new();
    set.render_text(&mut text).unwrap();
    assert_eq!(
        String::from_utf8(text).unwrap(),
        "\ncapture c.pcapng: 6 frames, 6 UDP: 5 wirelab probes, 0 LUNA probes, 0 echo replies, \
         0 RTP packets, 1 other UDP; 0 not IP, 0 other IP, 0 later fragments, 0 cut short\n"
    );
    // Without probes there is no flow table, only the capture's lines.
    let empty = Summary::new(Vec::new());
    assert!(!set.shows_flow_table(&empty));
    assert!(CaptureSet::default().shows_flow_table(&empty));
    let json: serde_json::Value = serde_json::from_str(&set.report_json(&empty).unwrap()).unwrap();
    assert_eq!(json["captures"][0]["file"], "c.pcapng");
    let json: serde_json::Value =
        serde_json::from_str(&CaptureSet::default().report_json(&empty).unwrap()).unwrap();
    assert!(json.get("captures").is_none());
}

#[test]
fn damaged_and_unreadable_captures_are_said() {
    let (mut set, mut rx, mut warnings) = (CaptureSet::default(), Vec::new(), Vec::new());
    let bytes = capture(5);
    // Cut inside the last packet block.
    set.read(
        "cut.pcapng",
        &bytes[..bytes.len() - 10],
        opts(),
        &mut rx,
        &mut warnings,
    )
    .unwrap();
    assert_eq!(rx.len(), 5);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].code, "capture_damaged");
    assert!(
        warnings[0].message.starts_with("cut.pcapng: "),
        "{}",
        warnings[0].message
    );
    assert!(set.inputs[0].error.is_some());
    let e = set
        .read(
            "x.txt",
            &b"hello, not a capture"[..],
            opts(),
            &mut rx,
            &mut warnings,
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "x.txt: not a readable pcap/pcapng capture");
    assert_eq!(set.inputs.len(), 1);
}

#[test]
fn file_warnings_name_the_files() {
    let w = file_cut_short(Path::new("rx.wlr"), 7);
    assert_eq!((w.code, w.flow), ("file_cut_short", None));
    assert_eq!(
        w.message,
        "rx.wlr: ignored a partial record of 7 bytes at the end (file cut short?)"
    );
    let w = same_recording_twice(Path::new("b.wlr"), Path::new("a.wlr"));
    assert_eq!(
        w.message,
        "b.wlr is the same recording as a.wlr (same header and first record): read once"
    );
}
