//! Reads every capture under the repository's testdata/ (origins in testdata/SOURCES.md): no
//! panics, exact packet counts (verified with capinfos/tshark), and the files meant to be
//! rejected with an error naming the offset.

use std::collections::BTreeMap;
use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use wirelab_pcap::{ByteOrder, ErrorKind, Format, PcapError, PcapReader, TsResolution};

/// The repository's testdata/; it is part of the repository, so its absence is a failure.
fn testdata_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    assert!(d.is_dir(), "{} is missing", d.display());
    d
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Looks like a capture: by extension, by magic, or an output file of pcapng-test-generator.
fn is_capture(rel: &str, path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if matches!(ext, "pcap" | "pcapng" | "cap" | "ntar" | "dmp" | "snoop") {
        return true;
    }
    if ext == "gz" && rel.contains(".pcap") {
        return true;
    }
    if rel.starts_with("pcapng-test-generator/") && ext != "txt" {
        return true;
    }
    let head = fs::read(path)
        .map(|b| b.get(..4).map(<[u8]>::to_vec))
        .ok()
        .flatten();
    matches!(
        head.as_deref(),
        Some(
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x0a, 0x0d, 0x0d, 0x0a]
        )
    )
}

#[derive(Debug)]
struct Summary {
    packets: u64,
    first_ns: Option<u64>,
    last_ns: Option<u64>,
    error: Option<PcapError>,
}

fn summarize(bytes: &[u8]) -> Summary {
    let mut s = Summary {
        packets: 0,
        first_ns: None,
        last_ns: None,
        error: None,
    };
    let mut r = match PcapReader::new(bytes) {
        Ok(r) => r,
        Err(e) => {
            s.error = Some(e);
            return s;
        }
    };
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                s.packets += 1;
                assert!(p.data.len() <= bytes.len());
                if p.has_ts {
                    s.first_ns.get_or_insert(p.ts_ns);
                    s.last_ns = Some(p.ts_ns);
                }
            }
            Ok(None) => return s,
            Err(e) => {
                s.error = Some(e);
                return s;
            }
        }
    }
}

/// (path under testdata, packets) as counted by `capinfos -c` (Wireshark 4.x).
/// brcm-tag-stp, dsa and edsa: capinfos refuses their link types; counts from SOURCES.md.
const EXPECTED_COUNTS: &[(&str, u64)] = &[
    ("libpcap/Network_Join_Nokia_Mobile.pcap", 10),
    ("libpcap/bacnet-arcnet-linux.pcap", 10),
    ("libpcap/brcm-tag-stp.pcap", 4),
    ("libpcap/geneve.pcap", 10),
    ("libpcap/http_PPI.pcap", 5),
    ("libpcap/isup_load_generator.pcap", 10),
    ("libpcap/mstp_20140225214217.pcap", 10),
    ("libpcap/pppoes.pcap", 2),
    ("libpcap/rarp_req_reply.pcapng", 2),
    ("libpcap/vxlan.pcap", 10),
    ("pcapng-test-generator/output_be/advanced/test100.pcapng", 5),
    ("pcapng-test-generator/output_be/advanced/test101.pcapng", 4),
    ("pcapng-test-generator/output_be/advanced/test102.pcapng", 5),
    ("pcapng-test-generator/output_be/basic/test001.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test002.pcapng", 0),
    ("pcapng-test-generator/output_be/basic/test003.pcapng", 0),
    ("pcapng-test-generator/output_be/basic/test004.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test005.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test006.pcapng", 5),
    ("pcapng-test-generator/output_be/basic/test007.pcapng", 1),
    ("pcapng-test-generator/output_be/basic/test008.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test009.pcapng", 2),
    ("pcapng-test-generator/output_be/basic/test010.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test011.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test012.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test013.pcapng", 0),
    ("pcapng-test-generator/output_be/basic/test014.pcapng", 0),
    ("pcapng-test-generator/output_be/basic/test015.pcapng", 0),
    ("pcapng-test-generator/output_be/basic/test016.pcapng", 4),
    ("pcapng-test-generator/output_be/basic/test017.pcapng", 0),
    ("pcapng-test-generator/output_be/basic/test018.pcapng", 4),
    (
        "pcapng-test-generator/output_be/difficult/test200.pcapng",
        0,
    ),
    (
        "pcapng-test-generator/output_be/difficult/test201.pcapng",
        4,
    ),
    (
        "pcapng-test-generator/output_be/difficult/test202.pcapng",
        8,
    ),
    ("pcapng-test-generator/output_le/advanced/test100.pcapng", 5),
    ("pcapng-test-generator/output_le/advanced/test101.pcapng", 4),
    ("pcapng-test-generator/output_le/advanced/test102.pcapng", 5),
    ("pcapng-test-generator/output_le/basic/test001.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test002.pcapng", 0),
    ("pcapng-test-generator/output_le/basic/test003.pcapng", 0),
    ("pcapng-test-generator/output_le/basic/test004.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test005.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test006.pcapng", 5),
    ("pcapng-test-generator/output_le/basic/test007.pcapng", 1),
    ("pcapng-test-generator/output_le/basic/test008.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test009.pcapng", 2),
    ("pcapng-test-generator/output_le/basic/test010.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test011.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test012.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test013.pcapng", 0),
    ("pcapng-test-generator/output_le/basic/test014.pcapng", 0),
    ("pcapng-test-generator/output_le/basic/test015.pcapng", 0),
    ("pcapng-test-generator/output_le/basic/test016.pcapng", 4),
    ("pcapng-test-generator/output_le/basic/test017.pcapng", 0),
    ("pcapng-test-generator/output_le/basic/test018.pcapng", 4),
    (
        "pcapng-test-generator/output_le/difficult/test200.pcapng",
        0,
    ),
    (
        "pcapng-test-generator/output_le/difficult/test201.pcapng",
        4,
    ),
    (
        "pcapng-test-generator/output_le/difficult/test202.pcapng",
        8,
    ),
    ("pcapplusplus/VlanPackets.pcap", 26),
    ("pcapplusplus/example2.pcap", 4709),
    ("pcapplusplus/file_heuristics/pcapng-example.pcapng", 1),
    ("pcapplusplus/four_ipv6_http_streams.pcap", 81),
    ("pcapplusplus/ip4_fragments.pcap", 53),
    ("pcapplusplus/ipv6.dmp", 35),
    ("pcapplusplus/linktype_ipv4.pcap", 2),
    ("pcapplusplus/linktype_ipv6.pcap", 1),
    ("pcapplusplus/many_interfaces-1.pcapng", 64),
    ("pcapplusplus/microsecs.pcap", 2),
    ("pcapplusplus/microsecs_big_endian.pcap", 13),
    ("pcapplusplus/nanosecs.pcap", 2),
    ("pcapplusplus/nanosecs_big_endian.pcap", 10),
    ("pcapplusplus/null_loopback.pcap", 3),
    ("pcapplusplus/one_tcp_stream_max_seq.pcap", 36),
    ("pcapplusplus/pcapng-example.pcapng", 159),
    ("pcapplusplus/raw_ip.pcap", 100),
    ("pcapplusplus/sll2.pcap", 3),
    (
        "pcapplusplus/unidirectional_tcp_stream_with_missing_packet.pcap",
        14,
    ),
    ("scapy/netflowv9.pcap", 5),
    ("tcpdump/802_15_4_beacon.pcap", 1),
    ("tcpdump/HDLC.pcap", 38),
    ("tcpdump/LINKTYPE_IPV4.pcap", 1),
    ("tcpdump/LINKTYPE_PKTAP.pcap", 1),
    ("tcpdump/LINKTYPE_RAW_ipv4.pcap", 1),
    ("tcpdump/LINKTYPE_USER2_PKTAP.pcap", 1),
    ("tcpdump/OSPFv2_Capture_FINAL.pcapng", 30),
    ("tcpdump/OSPFv3_multipoint_adjacencies.pcap", 73),
    ("tcpdump/arcnet-rfc1051-arp-icmp-http.pcap", 26),
    ("tcpdump/bgp-bgpsec.pcap", 36),
    ("tcpdump/bootp_asan.pcap", 1),
    ("tcpdump/cve2015-0261-ipv6.pcap", 2),
    ("tcpdump/dhcp-option-108.pcapng", 2),
    ("tcpdump/dsa.pcap", 8),
    ("tcpdump/e1000g.pcap", 20),
    ("tcpdump/edsa.pcap", 10),
    ("tcpdump/empty.pcap", 0),
    ("tcpdump/empty.pcapng", 0),
    ("tcpdump/forces1.pcap", 20),
    ("tcpdump/heap-overflow-1.pcap", 1),
    ("tcpdump/huge-tipc-messages.pcap", 13),
    ("tcpdump/icmp-length-zero.pcapng", 1),
    ("tcpdump/ieee802.11_rx-stbc.pcap", 3),
    ("tcpdump/ikev2four.pcap", 21),
    ("tcpdump/ipoib.pcap", 30),
    ("tcpdump/mpls-traceroute.pcap", 18),
    ("tcpdump/msnlb2.pcapng", 2),
    ("tcpdump/nflog.pcap", 4),
    ("tcpdump/ppp_ip_udp_dns.pcap", 1),
    ("tcpdump/pptp.pcap", 23),
    ("tcpdump/tcp-handshake-nano.pcap", 3),
    ("tcpdump/time_2038.pcap", 1),
    ("tcpdump/time_2038_max.pcap", 1),
    ("tcpdump/time_2038_overflow.pcap", 1),
    ("tcpdump/time_2039.pcap", 1),
    ("tcpdump/time_2106.pcap", 1),
    ("tcpdump/time_2106_max.pcap", 1),
    ("tcpdump/time_2106_overflow.pcapng", 1),
    ("tcpdump/time_2107.pcapng", 1),
    ("tcpdump/timestamp_invalid_micro.pcap", 3),
    ("tcpdump/timestamp_invalid_nano.pcap", 3),
    ("tcpdump/unsupported-link-type-dbus.pcap", 2),
    ("tcpdump/vsock-1.pcapng", 10),
    ("tcpreplay/test.pcap", 179),
    ("tcpreplay/test.replay_exclude", 10),
    ("tcpreplay/test.replay_include", 12),
    ("tcpreplay/test.replay_unique_ip", 355),
    ("tcpreplay/test.rewrite_dlthdlc", 179),
    ("tcpreplay/test.rewrite_efcs", 179),
    ("tcpreplay/test.rewrite_fixlen_trunc", 179),
    ("tcpreplay/test.rewrite_layer2", 179),
    ("tcpreplay/test.rewrite_mtutrunc", 179),
    ("tcpreplay/test.rewrite_vlan802.1ad", 179),
    ("tcpreplay/test2.replay_exclude", 10),
    ("tcpreplay/test2.replay_include", 12),
    ("tcpreplay/test_fragroute.pcap", 20),
];

/// Files meant to be rejected: (path, packets read before the error, error offset, message).
const EXPECTED_ERRORS: &[(&str, u64, u64, &str)] = &[
    // libpcap's "savefile reject" tests.
    (
        "libpcap/pcap-invalid-version-1.pcap",
        0,
        4,
        "unsupported pcap version 1.4 (libpcap reads 2.0 to 2.4, and DG/UX's 543.0)",
    ),
    (
        "libpcap/pcapng-invalid-vers-1.pcapng",
        0,
        12,
        "unsupported pcapng version 0.1 (libpcap reads 1.0 and 1.2 in the first section header block)",
    ),
    // Cut short 1 byte into the second record header (capinfos: "cut short in the middle of a packet").
    (
        "scapy/bad_rsn_parsing_overrides_ssid.pcap",
        1,
        359,
        "file ends inside a packet record header (got 1 of 16 bytes)",
    ),
    // Solaris snoop is another format.
    (
        "pcapplusplus/solaris.snoop",
        0,
        0,
        "not a pcap or pcapng file (magic 0x736e6f6f)",
    ),
];

/// gzip-compressed captures: (path, packets after decompression, per capinfos).
const GZIPPED: &[(&str, u64)] = &[
    ("scapy/canfd.pcap.gz", 4),
    ("scapy/dcerpc_msnrpc.pcapng.gz", 10),
    ("scapy/ecu_trace.pcap.gz", 141),
    ("scapy/gmlan_trace.pcap.gz", 1087),
    ("scapy/http_head.pcapng.gz", 10),
    ("scapy/macos.pcapng.gz", 1),
];

fn gunzip(path: &Path) -> Vec<u8> {
    let out = Command::new("gzip").arg("-dc").arg(path).output().unwrap();
    assert!(out.status.success(), "gzip -dc {}: {out:?}", path.display());
    out.stdout
}

#[test]
fn every_capture_reads_or_is_rejected_as_expected() {
    let dir = testdata_dir();
    // Without gzip the compressed captures are checked only for the gzip error.
    let gzip = wirelab_testkit::require_tools(&["gzip"]);
    let mut files = Vec::new();
    walk(&dir, &mut files);
    let counts: BTreeMap<&str, u64> = EXPECTED_COUNTS.iter().copied().collect();
    let mut checked = 0;
    let mut seen_counts = 0;
    let mut failures = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if !is_capture(&rel, path) {
            continue;
        }
        checked += 1;
        let bytes = fs::read(path).unwrap();
        let s = summarize(&bytes);
        if let Some(&(_, n, off, msg)) = EXPECTED_ERRORS.iter().find(|e| e.0 == rel) {
            match &s.error {
                Some(e)
                    if e.offset == off
                        && e.to_string() == format!("offset {off}: {msg}")
                        && s.packets == n => {}
                other => failures.push(format!(
                    "{rel}: expected error at {off} after {n} packets, got {other:?} after {}",
                    s.packets
                )),
            }
            continue;
        }
        if let Some(&(_, n)) = GZIPPED.iter().find(|g| g.0 == rel) {
            match &s.error {
                Some(e) if e.offset == 0 && matches!(e.kind, ErrorKind::Gzip) => {}
                other => failures.push(format!("{rel}: expected the gzip error, got {other:?}")),
            }
            if gzip {
                let s = summarize(&gunzip(path));
                if s.error.is_some() || s.packets != n {
                    failures.push(format!(
                        "{rel} (gunzipped): expected {n} packets, got {s:?}"
                    ));
                }
            }
            continue;
        }
        if let Some(e) = &s.error {
            failures.push(format!(
                "{rel}: unexpected error after {} packets: {e}",
                s.packets
            ));
            continue;
        }
        match counts.get(rel.as_str()) {
            Some(&n) => {
                seen_counts += 1;
                if s.packets != n {
                    failures.push(format!("{rel}: {} packets, capinfos says {n}", s.packets));
                }
            }
            None => println!("note: {rel}: {} packets (no verified count)", s.packets),
        }
    }
    println!("checked {checked} capture files, {seen_counts} with verified counts");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 140, "only {checked} capture files found");
    assert_eq!(
        seen_counts,
        EXPECTED_COUNTS.len(),
        "some files of the count table are missing"
    );
}

fn open(rel: &str) -> PcapReader<BufReader<fs::File>> {
    let path = testdata_dir().join(rel);
    let f = fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    PcapReader::new(BufReader::new(f)).unwrap()
}

fn all_ts(rel: &str) -> Vec<u64> {
    let mut r = open(rel);
    let mut v = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        v.push(p.ts_ns);
    }
    v
}

/// First and last timestamps, exact to the ns, as printed by `tshark -T fields -e frame.time_epoch`.
#[test]
fn timestamps_match_tshark() {
    let cases: &[(&str, u64, u64)] = &[
        (
            "tcpdump/tcp-handshake-nano.pcap",
            1_418_145_369_924_505_488,
            1_418_145_370_052_115_157,
        ),
        (
            "tcpdump/time_2038_overflow.pcap",
            2_147_483_648_000_000_000,
            2_147_483_648_000_000_000,
        ),
        (
            "tcpdump/time_2106_max.pcap",
            4_294_967_295_000_000_000,
            4_294_967_295_000_000_000,
        ),
        (
            "tcpdump/time_2106_overflow.pcapng",
            4_294_967_296_000_000_000,
            4_294_967_296_000_000_000,
        ),
        (
            "tcpdump/time_2107.pcapng",
            4_323_283_200_000_000_000,
            4_323_283_200_000_000_000,
        ),
        (
            "pcapplusplus/nanosecs_big_endian.pcap",
            1_766_361_926_167_647_291,
            1_766_361_926_168_451_894,
        ),
        (
            "tcpdump/vsock-1.pcapng",
            1_499_949_071_261_679_299,
            1_499_949_077_377_004_504,
        ),
        (
            "tcpreplay/test.replay_unique_ip",
            1_278_472_579_466_743_000,
            1_278_472_582_723_492_000,
        ),
        (
            "pcapplusplus/many_interfaces-1.pcapng",
            1_439_753_725_701_607_000,
            1_439_753_728_292_345_000,
        ),
    ];
    for &(rel, first, last) in cases {
        let ts = all_ts(rel);
        assert_eq!((ts[0], *ts.last().unwrap()), (first, last), "{rel}");
    }
    // tcpdump -ttt: deltas 0.127521774 s and 0.000087895 s.
    let ts = all_ts("tcpdump/tcp-handshake-nano.pcap");
    assert_eq!((ts[1] - ts[0], ts[2] - ts[1]), (127_521_774, 87_895));
}

#[test]
fn pcapng_metadata() {
    let mut r = open("tcpdump/vsock-1.pcapng");
    while r.next_packet().unwrap().is_some() {}
    assert_eq!(r.interfaces()[0].tsresol, TsResolution::NANO);
    assert_eq!(r.interfaces()[0].linktype, 271);
    let st = &r.interface_stats()[0];
    assert_eq!(
        (st.counters.ifrecv, st.counters.ifdrop),
        (Some(10), Some(0))
    );
    assert_eq!(
        st.comments,
        vec!["Counters provided by dumpcap".to_string()]
    );

    let mut r = open("tcpdump/dhcp-option-108.pcapng");
    while r.next_packet().unwrap().is_some() {}
    let i = &r.interfaces()[0];
    assert_eq!((i.snaplen, i.tsresol), (524_288, TsResolution::MICRO));
    assert!(i.name.is_some() && i.description.is_some() && i.os.is_some());
    assert_eq!(r.interface_stats().len(), 1);

    // Three sections of mixed byte order, five interfaces, simple packet blocks without times.
    for tree in ["output_le", "output_be"] {
        let mut r = open(&format!(
            "pcapng-test-generator/{tree}/difficult/test202.pcapng"
        ));
        let (mut n, mut no_ts) = (0, 0);
        while let Some(p) = r.next_packet().unwrap() {
            n += 1;
            no_ts += u32::from(!p.has_ts);
        }
        assert_eq!((n, no_ts), (8, 2));
        assert_eq!(
            (
                r.sections().len(),
                r.interfaces().len(),
                r.interface_stats().len()
            ),
            (3, 5, 4)
        );
        let orders: Vec<ByteOrder> = r.sections().iter().map(|s| s.byte_order).collect();
        assert!(
            orders.contains(&ByteOrder::Big) && orders.contains(&ByteOrder::Little),
            "{orders:?}"
        );
    }

    // Two interfaces; the second one's timestamps are negative (Wireshark shows year 586524):
    // all 159 packets are read, those 100 flagged.
    let mut r = open("pcapplusplus/pcapng-example.pcapng");
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        n += 1;
        assert_eq!(p.has_ts, p.interface == 0);
    }
    assert_eq!((n, r.bad_timestamps()), (159, 100));
    assert_eq!(r.format(), Format::Pcapng);
}

#[test]
fn pcap_quirks() {
    // Header snaplen 7, records longer: read in full.
    let mut r = open("tcpdump/802_15_4_beacon.pcap");
    assert_eq!(r.pcap_header().unwrap().byte_order, ByteOrder::Big);
    let p = r.next_packet().unwrap().unwrap();
    assert!(p.data.len() > 7);
    assert_eq!(p.linktype, 195);
    // Link-type field 0x04000001: Ethernet with the FCS flag, FCS length 0.
    let r = open("tcpdump/bootp_asan.pcap");
    assert_eq!(
        (r.interfaces()[0].linktype, r.interfaces()[0].fcs_len),
        (1, Some(0))
    );
    // Invalid fractions (>= 1 s) are kept, not rejected.
    assert_eq!(all_ts("tcpdump/timestamp_invalid_micro.pcap").len(), 3);
}

/// Deterministic mutations of every real capture (byte flips, length-field hits, cuts) must
/// never panic, and errors must point inside the input.
#[test]
fn mutated_real_captures_never_panic() {
    let dir = testdata_dir();
    let mut files = Vec::new();
    walk(&dir, &mut files);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut runs = 0;
    for path in files {
        let rel = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let bytes = fs::read(&path).unwrap();
        if !is_capture(&rel, &path)
            || bytes.len() > 64 * 1024
            || PcapReader::new(&bytes[..]).is_err()
        {
            continue;
        }
        for _ in 0..40 {
            let mut m = bytes.clone();
            for _ in 0..=(next() % 4) {
                let at = (next() % m.len() as u64) as usize;
                m[at] = match next() % 4 {
                    0 => 0xff,
                    1 => 0,
                    _ => next() as u8,
                };
            }
            let cut = if next() % 3 == 0 {
                (next() % (m.len() as u64 + 1)) as usize
            } else {
                m.len()
            };
            let s = summarize(&m[..cut]);
            if let Some(e) = s.error {
                assert!(e.offset <= cut as u64, "{rel}: {e}");
            }
            runs += 1;
        }
    }
    println!("{runs} mutated inputs read");
    assert!(runs > 1000);
}
