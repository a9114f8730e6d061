use super::*;

/// A classic nanosecond pcap, written byte by byte: (stamp ns, frame).
fn pcap(linktype: u32, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]); // thiszone, sigfigs
    b.extend_from_slice(&65_535u32.to_le_bytes());
    b.extend_from_slice(&linktype.to_le_bytes());
    for (t, f) in frames {
        b.extend_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    b
}

/// Frame `i`: 60 bytes that differ by their index.
fn frame(i: u32) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].fill(0xff);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..18].copy_from_slice(&i.to_be_bytes());
    f
}

const T0: u64 = 1_700_000_000_000_000_000;
const US: u64 = 1_000;

fn run(
    input: &[(u64, Vec<u8>)],
    output: &[(u64, Vec<u8>)],
    cfg: VerifyConfig,
    model: &mut impl Configuration,
) -> VerifyReport {
    let (a, b) = (pcap(1, input), pcap(1, output));
    verify_captures(&a[..], &b[..], &cfg, model).unwrap()
}

#[test]
fn constant_delay_matched_exactly_with_table_b1() {
    let input: Vec<_> = (0..5)
        .map(|i| (T0 + i * 100 * US, frame(i as u32)))
        .collect();
    // Applied: 1000 µs + 2, 4, 6, 8, 10 µs.
    let output: Vec<_> = (0..5)
        .map(|i| {
            (
                T0 + i * 100 * US + 1000 * US + (i + 1) * 2 * US,
                frame(i as u32),
            )
        })
        .collect();
    let r = run(
        &input,
        &output,
        VerifyConfig::default(),
        &mut ConstantDelay(1000 * US),
    );
    assert_eq!(
        (r.in_frames, r.out_frames, r.expected_copies, r.matched),
        (5, 5, 5, 5)
    );
    assert_eq!((r.lost, r.missing_copies, r.extra, r.early), (0, 0, 0, 0));
    let e = r.error.as_ref().unwrap();
    assert_eq!((e.min_ns, e.max_ns, e.count), (2_000, 10_000, 5));
    assert_eq!((e.min_seq, e.max_seq), (Some(0), Some(4)));
    let a = r.applied.as_ref().unwrap();
    assert_eq!((a.min_ns, a.max_ns), (1_002_000, 1_010_000));
    let t = r.table_b1.unwrap();
    assert_eq!((t.count, t.avg_us, t.min_us, t.max_us), (5, 6.0, 2.0, 10.0));
    // Population σ of 2, 4, 6, 8, 10.
    assert!((t.sigma_us - 8f64.sqrt()).abs() < 1e-9, "{t:?}");
    // A constant configuration has no KS test.
    assert!(r.ks.is_none());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn an_early_copy_is_counted_and_named() {
    let input: Vec<_> = (0..3)
        .map(|i| (T0 + i * 10 * US, frame(i as u32)))
        .collect();
    let output = vec![
        (T0 + 1000 * US, frame(0)),
        (T0 + 10 * US + 999 * US, frame(1)), // 1 µs early
        (T0 + 20 * US + 1000 * US, frame(2)),
    ];
    let r = run(
        &input,
        &output,
        VerifyConfig::default(),
        &mut ConstantDelay(1000 * US),
    );
    assert_eq!((r.matched, r.early), (3, 1));
    assert_eq!(
        r.early_first,
        [EarlyCopy {
            index: 1,
            copy: 0,
            error_ns: -1_000
        }]
    );
    assert_eq!(r.error.as_ref().unwrap().min_ns, -1_000);
    assert!(r
        .text()
        .contains("early copies (first): #1 copy 0 by -1.00µs"));
}

#[test]
fn lost_duplicated_and_unknown_frames() {
    let input: Vec<_> = (0..4)
        .map(|i| (T0 + i * 10 * US, frame(i as u32)))
        .collect();
    let output = vec![
        (T0 + 100 * US, frame(0)),
        (T0 + 110 * US, frame(1)),
        (T0 + 111 * US, frame(1)), // a copy too many
        (T0 + 130 * US, frame(3)),
        (T0 + 131 * US, frame(99)), // never entered
    ];
    let r = run(
        &input,
        &output,
        VerifyConfig::default(),
        &mut ConstantDelay(100 * US),
    );
    assert_eq!((r.matched, r.lost, r.missing_copies), (3, 1, 1));
    assert_eq!((r.extra, r.duplicated, r.unknown), (2, 1, 1));
    assert_eq!(r.lost_first, [2]);
    assert_eq!(r.early, 0);
}

/// docs/trace.md's example S1 as a configuration: records [D1000, DROP,
/// DUP2000, D3000, DUP500, DUP600, D700] over four packets.
fn s1(index: u64, _t: u64, _len: u32, d: &mut Vec<u64>) {
    let us: &[u64] = match index {
        0 => &[1000],
        1 => &[],
        2 => &[2000, 3000],
        3 => &[500, 600, 700],
        _ => &[0],
    };
    d.extend(us.iter().map(|u| u * US));
}

#[test]
fn trace_copies_match_their_configured_delays_in_order() {
    let input: Vec<_> = (0..4)
        .map(|i| (T0 + i * 10 * US, frame(i as u32)))
        .collect();
    let mut output = vec![
        (T0 + 1000 * US, frame(0)),
        (T0 + 20 * US + 2000 * US, frame(2)),
        (T0 + 20 * US + 3000 * US, frame(2)),
        (T0 + 30 * US + 500 * US, frame(3)),
        (T0 + 30 * US + 600 * US, frame(3)),
        (T0 + 30 * US + 700 * US, frame(3)),
    ];
    output.sort_by_key(|f| f.0);
    let r = run(&input, &output, VerifyConfig::default(), &mut s1);
    assert_eq!((r.expected_copies, r.matched), (6, 6));
    assert_eq!(
        (r.lost, r.missing_copies, r.dropped_as_configured),
        (0, 0, 1)
    );
    assert_eq!((r.extra, r.early), (0, 0));
    let e = r.error.unwrap();
    assert_eq!((e.min_ns, e.max_ns), (0, 0));
    // The configured delays vary: the KS distance is there, and 0 here.
    assert_eq!(r.ks.unwrap().distance, 0.0);

    // Without packet 3's last copy, and with a copy of the dropped one.
    output.retain(|f| f.0 != T0 + 30 * US + 700 * US);
    output.push((T0 + 10 * US + 50 * US, frame(1)));
    output.sort_by_key(|f| f.0);
    let r = run(&input, &output, VerifyConfig::default(), &mut s1);
    assert_eq!((r.matched, r.lost, r.missing_copies), (5, 0, 1));
    assert_eq!((r.dropped_as_configured, r.duplicated), (0, 1));
}

#[test]
fn identical_frames_match_first_in_first_out() {
    // Three identical frames in, 1 µs apart, delays 100, 101, 102 µs:
    // the k-th copy out (2 µs apart) is judged against the k-th frame in.
    let input: Vec<_> = (0..3).map(|i| (T0 + i * US, frame(7))).collect();
    let mut model = |i: u64, _: u64, _: u32, d: &mut Vec<u64>| d.push(100 * US + i * US);
    let output: Vec<_> = (0..3)
        .map(|i| (T0 + 100 * US + 2 * i * US, frame(7)))
        .collect();
    let r = run(&input, &output, VerifyConfig::default(), &mut model);
    assert_eq!((r.matched, r.extra, r.lost), (3, 0, 0));
    let e = r.error.unwrap();
    assert_eq!((e.min_ns, e.max_ns), (0, 0));
}

#[test]
fn a_copy_after_the_window_is_lost_and_unknown() {
    let input = vec![(T0, frame(0)), (T0 + US, frame(1))];
    let output = vec![(T0 + 500 * US, frame(0)), (T0 + 5_000 * US, frame(1))];
    let cfg = VerifyConfig {
        window_ns: 1_000 * US,
        ..VerifyConfig::default()
    };
    let r = run(&input, &output, cfg, &mut ConstantDelay(0));
    assert_eq!((r.matched, r.lost, r.unknown), (1, 1, 1));
    assert_eq!(r.lost_first, [1]);
}

#[test]
fn held_frames_are_bounded_by_max_pending() {
    let input: Vec<_> = (0..5).map(|i| (T0 + i * US, frame(i as u32))).collect();
    let output: Vec<_> = (0..5)
        .map(|i| (T0 + 100 * US + i * US, frame(i as u32)))
        .collect();
    let cfg = VerifyConfig {
        max_pending: 2,
        ..VerifyConfig::default()
    };
    let r = run(&input, &output, cfg, &mut ConstantDelay(100 * US));
    assert_eq!((r.evicted, r.lost, r.matched, r.unknown), (3, 3, 2, 3));
    assert!(r.warnings[0].contains("--max-pending"), "{:?}", r.warnings);
}

#[test]
fn verifier_holds_at_most_max_pending_frames() {
    let mut v = Verifier::new(VerifyConfig {
        max_pending: 16,
        ..VerifyConfig::default()
    });
    for i in 0..10_000u64 {
        // Many identical frames and many distinct ones.
        let d = if i % 2 == 0 { i } else { 7 };
        v.ingress(T0 + i, d, 60, &mut ConstantDelay(1));
        assert!(v.held.len() <= 16 && v.chains.len() <= 16);
    }
    let r = v.finish();
    assert_eq!((r.in_frames, r.lost), (10_000, 10_000));
}

#[test]
fn pcapng_in_and_pcap_out_mix() {
    let mut w = wirelab_pcap::PcapngWriter::new(Vec::new()).unwrap();
    let ifc = w
        .add_interface("e-a", wirelab_pcap::LINKTYPE_ETHERNET, 262_144)
        .unwrap();
    for i in 0..3u32 {
        w.write_packet(ifc, T0 + u64::from(i) * US, 60, &frame(i))
            .unwrap();
    }
    let a = w.into_inner().unwrap();
    let out: Vec<_> = (0..3)
        .map(|i| (T0 + i * US + 50 * US, frame(i as u32)))
        .collect();
    let b = pcap(1, &out);
    let r = verify_captures(
        &a[..],
        &b[..],
        &VerifyConfig::default(),
        &mut ConstantDelay(50 * US),
    )
    .unwrap();
    assert_eq!((r.matched, r.early, r.error.unwrap().max_ns), (3, 0, 0));
}

#[test]
fn bad_captures_are_refused_with_the_side_and_offset() {
    let good = pcap(1, &[(T0, frame(0))]);
    let e = verify_captures(
        &b"nonsense"[..],
        &good[..],
        &VerifyConfig::default(),
        &mut ConstantDelay(0),
    )
    .unwrap_err();
    assert!(matches!(e, VerifyError::Pcap { side: Side::In, .. }), "{e}");
    assert!(e.to_string().starts_with("IN capture: offset 0:"), "{e}");
    let cooked = pcap(113, &[(T0, frame(0))]);
    let e = verify_captures(
        &good[..],
        &cooked[..],
        &VerifyConfig::default(),
        &mut ConstantDelay(0),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            VerifyError::LinkType {
                side: Side::Out,
                offset: 24,
                found: 113,
                first: 1
            }
        ),
        "{e}"
    );
    // A pcapng simple packet block has no timestamp.
    let mut w = wirelab_pcap::PcapngWriter::new(Vec::new()).unwrap();
    w.add_interface("x", wirelab_pcap::LINKTYPE_ETHERNET, 65_535)
        .unwrap();
    let mut ng = w.into_inner().unwrap();
    let f = frame(0);
    let blen = 16 + f.len() as u32;
    ng.extend_from_slice(&3u32.to_le_bytes());
    ng.extend_from_slice(&blen.to_le_bytes());
    ng.extend_from_slice(&(f.len() as u32).to_le_bytes());
    ng.extend_from_slice(&f);
    ng.extend_from_slice(&blen.to_le_bytes());
    let e = verify_captures(
        &good[..],
        &ng[..],
        &VerifyConfig::default(),
        &mut ConstantDelay(0),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            VerifyError::NoTimestamp {
                side: Side::Out,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_capture_cut_short_is_read_to_the_cut_and_said() {
    let input = pcap(1, &[(T0, frame(0)), (T0 + US, frame(1))]);
    let mut output = pcap(1, &[(T0 + 10 * US, frame(0)), (T0 + 11 * US, frame(1))]);
    output.truncate(output.len() - 7);
    let r = verify_captures(
        &input[..],
        &output[..],
        &VerifyConfig::default(),
        &mut ConstantDelay(10 * US),
    )
    .unwrap();
    assert_eq!((r.matched, r.lost), (1, 1));
    assert!(
        r.warnings[0].starts_with("OUT capture ends inside a record at offset "),
        "{:?}",
        r.warnings
    );
}

#[test]
fn ks_distance_of_shifted_delays() {
    // Configured delays 0..1000 µs; applied = configured + 100 µs: the
    // distributions are 10 % apart.
    let n = 1000u64;
    let mut v = Verifier::new(VerifyConfig::default());
    let mut model = |i: u64, _: u64, _: u32, d: &mut Vec<u64>| d.push(i * US);
    for i in 0..n {
        v.ingress(T0 + i * 2_000 * US, i, 60, &mut model);
        v.egress(T0 + i * 2_000 * US + i * US + 100 * US, i);
    }
    let r = v.finish();
    let ks = r.ks.unwrap();
    assert_eq!(ks.samples, n);
    assert!((ks.distance - 0.1).abs() < 1e-9, "{ks:?}");

    // A reservoir of 100 pairs stands for all of them.
    let mut v = Verifier::new(VerifyConfig {
        ks_samples: 100,
        ..VerifyConfig::default()
    });
    for i in 0..n {
        v.ingress(T0 + i * 2_000 * US, i, 60, &mut model);
        v.egress(T0 + i * 2_000 * US + i * US, i);
        assert!(v.pairs.len() <= 100);
    }
    let ks = v.finish().ks.unwrap();
    assert_eq!((ks.samples, ks.distance), (100, 0.0));
}

#[test]
fn digest_tells_lengths_apart() {
    assert_ne!(digest(1, &[1, 2, 3], 3), digest(1, &[1, 2, 3], 1500));
    assert_ne!(digest(1, &[1, 2, 3], 3), digest(1, &[1, 2, 4], 3));
    assert_eq!(digest(1, &[1, 2, 3], 3), digest(1, &[1, 2, 3], 3));
}

/// An Ethernet frame, `vlans` tags, IPv4 (`v6` false) or IPv6, then a UDP
/// or TCP header and 4 payload bytes.
fn l4_frame(vlans: usize, v6: bool, tcp: bool) -> (Vec<u8>, usize) {
    let mut f = vec![0xffu8; 12];
    for _ in 0..vlans {
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    }
    let proto = if tcp { 6 } else { 17 };
    if v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 28, proto, 64]);
        f.extend_from_slice(&[0xfd; 32]);
    } else {
        f.extend_from_slice(&[
            0x08, 0x00, 0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, proto, 0x12, 0x34,
        ]);
        f.extend_from_slice(&[198, 18, 0, 1, 198, 18, 0, 2]);
    }
    let l4 = f.len();
    f.extend_from_slice(&[0x30; 20][..if tcp { 20 } else { 8 }]);
    f.extend_from_slice(&[1, 2, 3, 4]);
    (f, l4 + if tcp { 16 } else { 6 })
}

#[test]
fn digest_leaves_out_the_transport_checksum_only() {
    for vlans in 0..=2 {
        for v6 in [false, true] {
            for tcp in [false, true] {
                let (f, at) = l4_frame(vlans, v6, tcp);
                let n = f.len() as u32;
                let mut full = f.clone();
                full[at..at + 2].copy_from_slice(&[0xbe, 0xef]);
                assert_eq!(digest(1, &f, n), digest(1, &full, n), "{vlans} {v6} {tcp}");
                // Any other byte counts.
                let mut other = f.clone();
                other[at + 2] ^= 1;
                assert_ne!(digest(1, &f, n), digest(1, &other, n));
                // Not Ethernet: every byte counts.
                assert_ne!(digest(113, &f, n), digest(113, &full, n));
                // A capture cut inside the checksum: every byte counts.
                assert_ne!(digest(1, &f[..at + 1], n), digest(1, &full[..at + 1], n));
            }
        }
    }
    // A later IPv4 fragment has no transport header there.
    let (mut f, at) = l4_frame(0, false, false);
    f[20] = 0x00;
    f[21] = 0x10;
    let mut g = f.clone();
    g[at] ^= 1;
    assert_ne!(digest(1, &f, 0), digest(1, &g, 0));
}

#[test]
fn json_and_text_shapes() {
    let input = vec![(T0, frame(0))];
    let output = vec![(T0 + 1_000 * US + 3 * US, frame(0))];
    let mut r = run(
        &input,
        &output,
        VerifyConfig::default(),
        &mut ConstantDelay(1_000 * US),
    );
    r.in_file = "in.pcap".into();
    r.out_file = "out.pcap".into();
    r.configured = "delay 1ms".into();
    r.seed = Some(1);
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["schema"], "wirelab.emulate.verify/1");
    assert_eq!(v["matched"], 1);
    assert_eq!(v["error"]["max_ns"], 3_000);
    assert_eq!(v["table_b1"]["avg_us"], 3.0);
    assert!(v["ks"].is_null());
    let t = r.text();
    assert!(
        t.starts_with(
            "verify: IN in.pcap (1 frames), OUT out.pcap (1 frames); against 'delay 1ms' (seed 1), window 2.00s\n"
        ),
        "{t}"
    );
    assert!(
        t.contains("Table B.1 (error µs): avg 3.00  σ 0.00  min 3.00  max 3.00  (1 copies)"),
        "{t}"
    );
}

#[test]
fn skipped_in_frames_are_not_indexed() {
    // Two frames captured before the emulator ran; then S1's four.
    let mut input = vec![(T0, frame(90)), (T0 + US, frame(91))];
    input.extend((0..4).map(|i| (T0 + 10 * US + i * 10 * US, frame(i as u32))));
    let output = vec![
        (T0 + 10 * US + 1000 * US, frame(0)),
        (T0 + 30 * US + 2000 * US, frame(2)),
        (T0 + 30 * US + 3000 * US, frame(2)),
        (T0 + 40 * US + 500 * US, frame(3)),
        (T0 + 40 * US + 600 * US, frame(3)),
        (T0 + 40 * US + 700 * US, frame(3)),
    ];
    let cfg = VerifyConfig {
        skip_in: 2,
        ..VerifyConfig::default()
    };
    let r = run(&input, &output, cfg, &mut s1);
    assert_eq!((r.skipped_in, r.in_frames, r.matched), (2, 4, 6));
    assert_eq!((r.lost, r.extra, r.dropped_as_configured), (0, 0, 1));
    assert!(r.text().contains("(4 frames after 2 skipped)"));
}

#[test]
fn chi2_tests_judge_the_rates_not_the_frames() {
    // 2,000 frames; the configuration drops every 100th (1 %).
    let input: Vec<_> = (0..2000)
        .map(|i| (T0 + i * 100 * US, frame(i as u32)))
        .collect();
    let mut model = |i: u64, _: u64, _: u32, d: &mut Vec<u64>| {
        if !i.is_multiple_of(100) {
            d.push(1000 * US);
        }
    };
    let out = |drop: &dyn Fn(u64) -> bool| -> Vec<(u64, Vec<u8>)> {
        (0..2000u64)
            .filter(|&i| !drop(i))
            .map(|i| (T0 + i * 100 * US + 1010 * US, frame(i as u32)))
            .collect()
    };
    // Another emulator at the same rate, other frames (every 100th from
    // 50): frame by frame all differ, the rate test passes.
    let r = run(
        &input,
        &out(&|i| i % 100 == 50),
        VerifyConfig::default(),
        &mut model,
    );
    // (A frame configured dropped that left counts as duplicated.)
    assert_eq!((r.lost, r.duplicated), (20, 20));
    let d = r.chi2.delivery.unwrap();
    assert_eq!((d.configured, d.observed), ([1980, 20], [1980, 20]));
    assert!(d.p_value > 0.99, "{d:?}");
    assert_eq!(r.chi2.duplication, None);
    // One that drops 5 %: the test fails.
    let r = run(
        &input,
        &out(&|i| i % 20 == 7),
        VerifyConfig::default(),
        &mut model,
    );
    let d = r.chi2.delivery.unwrap();
    assert_eq!(d.observed, [1900, 100]);
    assert!(d.p_value < 1e-6, "{d:?}");
    let text = r.text();
    assert!(
        text.contains("χ² frames forwarded: configured 1980 of 2000, observed 1900 of 2000"),
        "{text}"
    );
}

/// The checksum locator as it was before the shared frame walk, kept to
/// compare against.
fn old_l4_checksum_at(linktype: u16, frame: &[u8]) -> Option<usize> {
    const ETHERNET: u16 = 1;
    if linktype != ETHERNET {
        return None;
    }
    let be16 = |at: usize| Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]));
    let mut l3 = 14;
    let mut ethertype = be16(12)?;
    for _ in 0..2 {
        if ethertype == 0x8100 || ethertype == 0x88a8 {
            ethertype = be16(l3 + 2)?;
            l3 += 4;
        }
    }
    let (proto, l4) = match ethertype {
        0x0800 => {
            let vihl = *frame.get(l3)?;
            // Only a first fragment holds the transport header.
            let frag_offset = be16(l3 + 6)? & 0x1fff;
            if vihl >> 4 != 4 || frag_offset != 0 {
                return None;
            }
            (*frame.get(l3 + 9)?, l3 + usize::from(vihl & 0x0f) * 4)
        }
        0x86dd => (*frame.get(l3 + 6)?, l3 + 40),
        _ => return None,
    };
    let at = match proto {
        17 => l4 + 6,
        6 => l4 + 16,
        _ => return None,
    };
    (at + 2 <= frame.len()).then_some(at)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

    /// Wherever the former locator found a checksum in a well-formed
    /// header (IHL of at least 5, the version the EtherType names), the
    /// walk finds the same one; where it found none, so does the walk,
    /// unless the frame has a tag stack it did not read (0x9100, more than
    /// two tags).
    #[test]
    fn checksum_where_the_former_locator_found_it(
        tags in proptest::collection::vec(
            proptest::sample::select(vec![0x8100u16, 0x88a8, 0x9100]), 0..4),
        v6 in proptest::bool::ANY,
        tcp in proptest::bool::ANY,
        hop_by_hop in proptest::bool::ANY,
        cut in proptest::option::of(proptest::num::usize::ANY),
        flips in proptest::collection::vec(
            (proptest::num::usize::ANY, proptest::num::u8::ANY), 0..3),
    ) {
        let (mut f, _) = l4_frame(0, v6, tcp);
        if v6 && hop_by_hop {
            f.splice(54..54, [f[20], 0, 0, 0, 0, 0, 0, 0]);
            f[20] = 0;
        }
        for t in &tags {
            f.splice(12..12, [(t >> 8) as u8, *t as u8, 0, 5]);
        }
        if let Some(c) = cut {
            f.truncate(c % (f.len() + 1));
        }
        for (at, v) in flips {
            let n = f.len();
            if n > 0 {
                f[at % n] = v;
            }
        }
        let old = old_l4_checksum_at(1, &f);
        let new = l4_checksum_at(1, &f);
        let walk = walk_ethernet(&f);
        let new_tags = walk.vlan_tags > 2
            || (0..walk.vlan_tags.min(2)).any(|i| {
                wirelab_wire::headers::EthernetFrame::new_checked(&f[..])
                    .ok()
                    .and_then(|e| e.tag(i))
                    .is_some_and(|(t, _)| t == 0x9100)
            });
        match old {
            Some(_) if walk.ip.is_some() => proptest::prop_assert_eq!(new, old),
            Some(_) => proptest::prop_assert_eq!(new, None),
            None if !new_tags => proptest::prop_assert_eq!(new, None),
            None => {}
        }
    }
}

#[test]
fn a_0x9100_tag_leaves_the_checksum_out_like_any_tag() {
    for (tpid, v6, tcp) in [
        (0x9100u16, false, false),
        (0x9100, true, true),
        (0x88a8, false, true),
    ] {
        for depth in 1..=3 {
            let (mut f, at) = l4_frame(0, v6, tcp);
            for _ in 0..depth {
                f.splice(12..12, [(tpid >> 8) as u8, tpid as u8, 0, 5]);
            }
            let at = at + 4 * depth;
            let mut full = f.clone();
            full[at..at + 2].copy_from_slice(&[0xbe, 0xef]);
            let n = f.len() as u32;
            assert_eq!(digest(1, &f, n), digest(1, &full, n), "{tpid:x} {depth}");
        }
    }
}
