use super::*;
use wirelab_wire::record::{RecordFileHeader, Role};
use wirelab_wire::{Record, RecordKind};

const T0: u64 = 1_700_000_000_000_000_000;

fn records(
    path: &Path,
    role: Role,
    kind: RecordKind,
    seqs: impl Iterator<Item = u64>,
    tail: &[u8],
) {
    let mut b = RecordFileHeader {
        role,
        metadata: "{}".into(),
    }
    .to_bytes();
    for seq in seqs {
        let r = Record {
            flow: 1,
            seq,
            size: 100,
            tx_ns: T0 + seq * 1_000_000,
            rx_ns: if kind == RecordKind::Rx {
                T0 + seq * 1_000_000 + 50_000
            } else {
                0
            },
            kind,
            ..Record::default()
        };
        b.extend_from_slice(&r.to_bytes());
    }
    b.extend_from_slice(tail);
    std::fs::write(path, b).unwrap();
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wl-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn request<'a>(inputs: &'a [PathBuf], output: &'a Path) -> Request<'a> {
    Request {
        inputs,
        output,
        title: None,
        window_ns: 1_000_000_000,
        max_flows: 64,
        capture: CaptureOptions {
            rtp: true,
            max_rtp_streams: 64,
            ..CaptureOptions::default()
        },
        requested: &|_| Requested::default(),
    }
}

#[test]
fn inputs_are_told_apart_by_their_first_bytes() {
    let d = tmpdir("kinds");
    let (rec, cap, json, text) = (
        d.join("r.wlr"),
        d.join("c.pcap"),
        d.join("j.json"),
        d.join("t.txt"),
    );
    records(&rec, Role::Receiver, RecordKind::Rx, 0..1, &[]);
    std::fs::write(&cap, 0xa1b2_c3d4u32.to_le_bytes()).unwrap();
    std::fs::write(&json, r#"{"schema": "something/9"}"#).unwrap();
    std::fs::write(&text, "hello").unwrap();
    assert_eq!(kind_of(&rec).unwrap(), Kind::Records);
    assert_eq!(kind_of(&cap).unwrap(), Kind::Capture);
    let e = kind_of(&json).unwrap_err().to_string();
    assert!(
        e.contains("j.json: a JSON file but not a report of wirelab"),
        "{e}"
    );
    let e = kind_of(&text).unwrap_err().to_string();
    assert!(
        e.contains("t.txt: not a wirelab record file nor a pcap/pcapng capture"),
        "{e}"
    );
    assert!(matches!(kind_of(&d), Err(InputError::NotResultsDir { .. })));
    assert!(matches!(
        kind_of(&d.join("none")),
        Err(InputError::Read { .. })
    ));
    // A --json report is read as one; other JSON is not.
    std::fs::write(&json, r#"{"schema": "wirelab.recv/1"}"#).unwrap();
    assert!(json_report(&json).is_some() && json_report(&text).is_none());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_output_is_checked_before_any_input_is_read() {
    let d = tmpdir("output");
    let inputs = [d.join("missing.wlr")];
    let out = d.join("no/such/page.html");
    let e = page(&request(&inputs, &out)).unwrap_err();
    assert!(matches!(e, InputError::NoOutputDir { .. }), "{e}");
    let e = page(&request(&inputs, &d)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "-o {} is a directory: give a file name such as report.html",
            d.display()
        )
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_page_of_record_files_says_what_it_holds_and_what_they_lacked() {
    let d = tmpdir("records");
    let (tx, rx) = (d.join("tx.wlr"), d.join("rx.wlr"));
    records(&tx, Role::Sender, RecordKind::Tx, 0..100, &[]);
    records(
        &rx,
        Role::Receiver,
        RecordKind::Rx,
        (0..100).filter(|s| s % 10 != 0),
        &[7; 5],
    );
    let inputs = [tx.clone(), rx.clone()];
    let out = d.join("run.html");
    let p = page(&request(&inputs, &out)).unwrap();
    assert_eq!(p.kind, PageKind::Probes { flows: 1 });
    assert_eq!(
        p.warnings,
        [format!(
            "{}: ignored a partial record of 5 bytes at the end (file cut short?)",
            rx.display()
        )]
    );
    let line = p.to_string();
    assert!(
        line.starts_with(&format!("report: {} (1 flows, ", out.display())),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(" figures, {} bytes)", p.html.len())),
        "{line}"
    );
    assert!(p.html.contains("wirelab report: tx.wlr + rx.wlr"));
    assert!(!out.exists());
    p.write().unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), p.html);
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn json_reports_go_alone() {
    let d = tmpdir("json");
    let (json, rx) = (d.join("recv.json"), d.join("rx.wlr"));
    std::fs::write(&json, r#"{"schema": "wirelab.recv/1", "flows": []}"#).unwrap();
    records(&rx, Role::Receiver, RecordKind::Rx, 0..10, &[]);
    let out = d.join("j.html");
    let mixed = [json.clone(), rx];
    assert!(matches!(
        page(&request(&mixed, &out)),
        Err(InputError::Mixed)
    ));
    let alone = [json];
    let p = page(&request(&alone, &out)).unwrap();
    assert_eq!(
        p.to_string(),
        format!("report: {} (1 JSON reports)", out.display())
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// A pcap of `n` RTP packets of payload type `pt` (8 kHz clock, 20 ms a
/// packet) from 10.0.0.1:5004 to 10.0.0.2:5006, 20 ms apart.
fn rtp_capture(path: &Path, pt: u8, n: u16) {
    use wirelab_pcap::{PcapPrecision, PcapWriter};
    use wirelab_wire::udp4::{EthAddrs, Udp4Frame, Udp4Header};
    let hdr = Udp4Frame {
        eth: Some(EthAddrs {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
        }),
        ip: Udp4Header {
            src: "10.0.0.1:5004".parse().unwrap(),
            dst: "10.0.0.2:5006".parse().unwrap(),
            tos: 0,
            ttl: 64,
            dont_fragment: true,
        },
    };
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(f, 1, 65535, PcapPrecision::Nano).unwrap();
    for q in 0..n {
        let mut frame = vec![0u8; hdr.prefix_len() + 12 + 160];
        let rtp = &mut frame[hdr.prefix_len()..];
        rtp[0] = 0x80;
        rtp[1] = pt;
        rtp[2..4].copy_from_slice(&q.to_be_bytes());
        rtp[4..8].copy_from_slice(&(u32::from(q) * 160).to_be_bytes());
        rtp[8..12].copy_from_slice(&0xfeed_0001u32.to_be_bytes());
        hdr.write(&mut frame, q).unwrap();
        let ts = 1_000_000_000 + u64::from(q) * 20_000_000;
        w.write_packet(ts, frame.len() as u32, &frame).unwrap();
    }
}

/// `report`'s capture options are `analyze`'s: a dynamic payload type has
/// jitter only with its clock rate; without RTP (or on other ports) this
/// capture holds nothing to report.
#[test]
fn capture_options_reach_the_rtp_table() {
    let d = tmpdir("rtpopts");
    let (cap, out) = (d.join("voip.pcap"), d.join("p.html"));
    rtp_capture(&cap, 96, 50);
    let inputs = [cap.clone()];
    let page = |capture: CaptureOptions| {
        let mut r = request(&inputs, &out);
        r.capture = capture;
        records_page(&r).map(|p| p.html)
    };
    let no_clock = page(request(&inputs, &out).capture).unwrap();
    assert!(no_clock.contains(">RTP streams in "), "RTP table");
    assert!(no_clock.contains("a dynamic payload type without a clock rate"));
    assert!(
        !no_clock.contains(">Summary</h2>"),
        "no probes, no probe summary"
    );
    let clocked = page(CaptureOptions {
        rtp: true,
        rtp_clocks: [(96, 8000)].into_iter().collect(),
        max_rtp_streams: 64,
        ..CaptureOptions::default()
    })
    .unwrap();
    assert!(clocked.contains(">RTP streams in "), "RTP table");
    assert!(
        !clocked.contains("without a clock rate"),
        "the clock rate was given"
    );
    let none = page(CaptureOptions {
        rtp: false,
        max_rtp_streams: 64,
        ..CaptureOptions::default()
    });
    // Nothing else in the capture: nothing to report.
    assert!(
        matches!(none, Err(InputError::Report(ReportError::NoRecords))),
        "{none:?}"
    );
    // Only port 7000 is RTP: this stream on 5004/5006 is not.
    let elsewhere = page(CaptureOptions {
        rtp: true,
        rtp_ports: vec![7000],
        max_rtp_streams: 64,
        ..CaptureOptions::default()
    });
    assert!(
        matches!(elsewhere, Err(InputError::Report(ReportError::NoRecords))),
        "--rtp-port 7000: {elsewhere:?}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
