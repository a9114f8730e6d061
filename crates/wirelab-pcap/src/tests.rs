//! Unit tests: fixed byte arrays, error messages, round trips, and never-panic properties.

use super::*;
use proptest::prelude::*;

/// Build a pcapng block of `btype` around `body` (already padded) in the given byte order.
fn block(big: bool, btype: u32, body: &[u8]) -> Vec<u8> {
    let len = (body.len() + 12) as u32;
    let w = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut b = Vec::new();
    b.extend_from_slice(&w(btype));
    b.extend_from_slice(&w(len));
    b.extend_from_slice(body);
    b.extend_from_slice(&w(len));
    b
}

struct Enc(bool);
impl Enc {
    fn u16(&self, b: &mut Vec<u8>, v: u16) {
        b.extend_from_slice(&if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u32(&self, b: &mut Vec<u8>, v: u32) {
        b.extend_from_slice(&if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u64(&self, b: &mut Vec<u8>, v: u64) {
        b.extend_from_slice(&if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn opt(&self, b: &mut Vec<u8>, code: u16, v: &[u8]) {
        self.u16(b, code);
        self.u16(b, v.len() as u16);
        b.extend_from_slice(v);
        while b.len() % 4 != 0 {
            b.push(0);
        }
    }
    fn shb(&self, opts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        self.u32(&mut b, 0x1a2b_3c4d);
        self.u16(&mut b, 1);
        self.u16(&mut b, 0);
        self.u64(&mut b, u64::MAX);
        for (c, v) in opts {
            self.opt(&mut b, *c, v);
        }
        if !opts.is_empty() {
            self.u32(&mut b, 0);
        }
        block(self.0, 0x0a0d_0d0a, &b)
    }
    fn idb(&self, linktype: u16, snaplen: u32, opts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        self.u16(&mut b, linktype);
        self.u16(&mut b, 0);
        self.u32(&mut b, snaplen);
        for (c, v) in opts {
            self.opt(&mut b, *c, v);
        }
        if !opts.is_empty() {
            self.u32(&mut b, 0);
        }
        block(self.0, 1, &b)
    }
    fn epb(&self, iface: u32, ts: u64, data: &[u8], orig: u32) -> Vec<u8> {
        let mut b = Vec::new();
        self.u32(&mut b, iface);
        self.u32(&mut b, (ts >> 32) as u32);
        self.u32(&mut b, ts as u32);
        self.u32(&mut b, data.len() as u32);
        self.u32(&mut b, orig);
        b.extend_from_slice(data);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        block(self.0, 6, &b)
    }
}

fn read_all(bytes: &[u8]) -> Result<Vec<OwnedPacket>, PcapError> {
    let mut r = PcapReader::new(bytes)?;
    let mut v = Vec::new();
    while let Some(p) = r.next_packet()? {
        v.push(p.to_owned_packet());
    }
    Ok(v)
}

fn err_of(bytes: &[u8]) -> String {
    match read_all(bytes) {
        Ok(v) => panic!("expected an error, read {} packets", v.len()),
        Err(e) => e.to_string(),
    }
}

// ---------- classic pcap, fixed bytes ----------

#[test]
fn pcap_le_micro_bytes() {
    #[rustfmt::skip]
    let f: Vec<u8> = vec![
        0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0xff, 0xff, 0, 0, 1, 0, 0, 0,
        // record: 1 s + 999_999 us, caplen 3, len 60
        1, 0, 0, 0, 0x3f, 0x42, 0x0f, 0, 3, 0, 0, 0, 60, 0, 0, 0, 0xaa, 0xbb, 0xcc,
    ];
    let mut r = PcapReader::new(&f[..]).unwrap();
    assert_eq!(r.format(), Format::Pcap);
    let h = r.pcap_header().unwrap().clone();
    assert_eq!(
        (h.byte_order, h.resolution, h.snaplen),
        (ByteOrder::Little, TsResolution::MICRO, 65535)
    );
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.ts_ns, 1_999_999_000);
    assert_eq!(
        (p.orig_len, p.caplen(), p.linktype, p.interface, p.offset),
        (60, 3, 1, 0, 24)
    );
    assert_eq!(p.data, &[0xaa, 0xbb, 0xcc]);
    assert!(r.next_packet().unwrap().is_none());
    assert!(r.next_packet().unwrap().is_none());
    assert_eq!(r.interfaces()[0].linktype, 1);
}

#[test]
fn pcap_be_nano_bytes_and_fcs_bits() {
    #[rustfmt::skip]
    let f: Vec<u8> = vec![
        0xa1, 0xb2, 0x3c, 0x4d, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 64, 0x24, 0, 0, 101, // FCS present (bit 26), 2 x 16-bit words (bits 28-31 = 2)
        0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 1, 0x45,
    ];
    let mut r = PcapReader::new(&f[..]).unwrap();
    assert_eq!(r.interfaces()[0].fcs_len, Some(4));
    assert_eq!(r.interfaces()[0].tsresol, TsResolution::NANO);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(
        (p.ts_ns, p.linktype, p.data),
        (2_000_000_007, 101, &[0x45u8][..])
    );
}

#[test]
fn pcap_errors_name_offsets() {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 1, 0, 4, 0];
    f.extend_from_slice(&[0; 16]);
    assert_eq!(
        err_of(&f),
        "offset 4: unsupported pcap version 1.4 (libpcap reads 2.0 to 2.4, and DG/UX's 543.0)"
    );

    assert_eq!(
        err_of(b"hello world"),
        "offset 0: not a pcap or pcapng file (magic 0x68656c6c)"
    );
    assert!(err_of(&[0x1f, 0x8b, 8, 0]).starts_with("offset 0: not a pcap or pcapng file: gzip"));
    assert_eq!(
        err_of(&[]),
        "offset 0: file ends inside the file magic (got 0 of 4 bytes)"
    );
    assert_eq!(
        err_of(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]),
        "offset 0: file ends inside the pcap file header (got 6 of 24 bytes)"
    );

    let mut w = PcapWriter::new(Vec::new(), 1, 65535, PcapPrecision::Micro).unwrap();
    w.write_packet(0, 10, &[1; 10]).unwrap();
    let good = w.into_inner().unwrap();
    // caplen 300000 > max(65535, 262144)
    let mut bad = good.clone();
    bad[32..36].copy_from_slice(&300_000u32.to_le_bytes());
    assert!(
        err_of(&bad).starts_with("offset 32: packet record caplen 300000 exceeds the limit 262144")
    );
    // cut inside the data / the record header
    let e = err_of(&good[..good.len() - 1]);
    assert_eq!(
        e,
        "offset 40: file ends inside packet data (got 9 of 10 bytes)"
    );
    let mut r = PcapReader::new(&good[..30]).unwrap();
    let e = r.next_packet().unwrap_err();
    assert!(e.is_truncation());
    assert_eq!(
        e.to_string(),
        "offset 24: file ends inside a packet record header (got 6 of 16 bytes)"
    );
    // After an error the reader is finished.
    assert!(r.next_packet().unwrap().is_none());
}

#[test]
fn pcap_old_minor_swapped_lengths() {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&100u32.to_le_bytes()); // "caplen" field holds len
    f.extend_from_slice(&2u32.to_le_bytes());
    f.extend_from_slice(&[7, 8]);
    let v = read_all(&f).unwrap();
    assert_eq!((v[0].data.as_slice(), v[0].orig_len), (&[7u8, 8][..], 100));
}

// ---------- pcapng, fixed bytes ----------

#[test]
fn pcapng_big_endian_binary_tsresol_obsolete_and_simple_blocks() {
    let e = Enc(true);
    let mut f = e.shb(&[(1, b"section comment"), (4, b"handmade\0")]);
    // interface 0: 2^-10 s units, offset +1 s, named
    f.extend(e.idb(
        1,
        0,
        &[
            (2, b"eth0"),
            (9, &[0x8a]),
            (14, &1i64.to_be_bytes()),
            (1, b"if comment"),
        ],
    ));
    // obsolete packet block (type 2): iface 0, drops 3, ts = 2048 units = 2 s (+1 s offset)
    let mut b = Vec::new();
    e.u16(&mut b, 0);
    e.u16(&mut b, 3);
    e.u32(&mut b, 0);
    e.u32(&mut b, 2048 + 512);
    e.u32(&mut b, 5);
    e.u32(&mut b, 9);
    b.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 0]);
    e.opt(&mut b, 1, b"opb comment");
    e.opt(&mut b, 2, &0x1u32.to_be_bytes());
    e.u32(&mut b, 0);
    f.extend(block(true, 2, &b));
    // simple packet block, original length 6
    let mut b = Vec::new();
    e.u32(&mut b, 6);
    b.extend_from_slice(&[9, 9, 9, 9, 9, 9, 0, 0]);
    f.extend(block(true, 3, &b));
    // name resolution block: skipped
    f.extend(block(true, 4, &[0, 0, 0, 0]));
    // interface statistics
    let mut b = Vec::new();
    e.u32(&mut b, 0);
    e.u32(&mut b, 0);
    e.u32(&mut b, 1024);
    e.opt(&mut b, 4, &100u64.to_be_bytes());
    e.opt(&mut b, 5, &7u64.to_be_bytes());
    let mut st = Vec::new();
    e.u32(&mut st, 0);
    e.u32(&mut st, 1024);
    e.opt(&mut b, 2, &st);
    e.opt(&mut b, 1, b"stats");
    e.u32(&mut b, 0);
    f.extend(block(true, 5, &b));

    let mut r = PcapReader::new(&f[..]).unwrap();
    assert_eq!(r.format(), Format::Pcapng);
    let s = r.sections()[0].clone();
    assert_eq!(s.byte_order, ByteOrder::Big);
    assert_eq!(s.comments, vec!["section comment".to_string()]);
    assert_eq!(s.userappl.as_deref(), Some("handmade"));

    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.ts_ns, 3_500_000_000);
    assert_eq!(
        (p.data, p.orig_len, p.dropcount),
        (&[1u8, 2, 3, 4, 5][..], 9, Some(3))
    );
    assert_eq!(p.options.comment(), Some("opb comment"));
    assert_eq!(p.options.flags(), Some(1));
    let p = r.next_packet().unwrap().unwrap();
    assert!(!p.has_ts);
    assert_eq!((p.data.len(), p.orig_len, p.linktype), (6, 6, 1));
    assert!(p.options.is_empty());
    assert!(r.next_packet().unwrap().is_none());

    let i = &r.interfaces()[0];
    assert_eq!(i.name.as_deref(), Some("eth0"));
    assert_eq!((i.tsresol, i.tsoffset_s), (TsResolution::Binary(10), 1));
    assert_eq!(i.comments, vec!["if comment".to_string()]);
    let st = &r.interface_stats()[0];
    assert_eq!(st.ts_ns, 2_000_000_000);
    assert_eq!(st.counters.ifrecv, Some(100));
    assert_eq!(st.counters.ifdrop, Some(7));
    assert_eq!(st.counters.start_ns, Some(2_000_000_000));
    assert_eq!(st.comments, vec!["stats".to_string()]);
    assert_eq!(r.skipped_blocks(), 1);
}

#[test]
fn pcapng_sections_of_both_byte_orders_renumber_interfaces() {
    let (le, be) = (Enc(false), Enc(true));
    let mut f = le.shb(&[]);
    f.extend(le.idb(1, 0, &[(9, &[9])]));
    f.extend(le.idb(101, 0, &[]));
    f.extend(le.epb(1, 5_000_000, &[1], 1));
    f.extend(be.shb(&[]));
    f.extend(be.idb(113, 0, &[(9, &[3])]));
    f.extend(be.epb(0, 7, &[2, 2], 2));
    let mut r = PcapReader::new(&f[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.interface, p.linktype, p.ts_ns), (1, 101, 5_000_000_000));
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.interface, p.linktype, p.ts_ns), (2, 113, 7_000_000));
    assert_eq!(r.sections().len(), 2);
    assert_eq!(r.sections()[1].first_interface, 2);
    assert_eq!(r.interfaces()[2].id_in_section, 0);
    assert_eq!(r.interfaces()[2].section, 1);
}

#[test]
fn pcapng_errors_name_offsets() {
    let e = Enc(false);
    let shb = e.shb(&[]); // 28 bytes
    let idb = e.idb(1, 0, &[]); // 20 bytes
    let head: Vec<u8> = [shb.clone(), idb.clone()].concat();
    let at = head.len(); // 48

    let mut f = head.clone();
    f.extend_from_slice(&[6, 0, 0, 0, 37, 0, 0, 0]);
    assert_eq!(
        err_of(&f),
        format!("offset {}: block length 37 is not a multiple of 4", at + 4)
    );

    let mut f = head.clone();
    f.extend_from_slice(&[6, 0, 0, 0, 7, 0, 0, 0]);
    assert_eq!(
        err_of(&f),
        format!(
            "offset {}: enhanced packet block length 7 is too small (minimum 32)",
            at + 4
        )
    );

    let mut f = head.clone();
    f.extend_from_slice(&[0xff, 0, 0, 0, 0, 0, 0, 0x40]);
    assert_eq!(
        err_of(&f),
        format!(
            "offset {}: block length 1073741824 exceeds the limit 268435456",
            at + 4
        )
    );

    let mut f = head.clone();
    let mut epb = e.epb(0, 0, &[1, 2, 3, 4], 4);
    let n = epb.len();
    epb[n - 4] = 99;
    f.extend(epb);
    assert_eq!(
        err_of(&f),
        format!(
            "offset {}: trailing block length 99 does not match block length 36",
            at + 32
        )
    );

    let mut f = head.clone();
    f.extend(e.epb(3, 0, &[1], 1));
    assert_eq!(
        err_of(&f),
        format!("offset {}: enhanced packet block refers to interface 3, but the section describes 1 interface(s)", at + 8)
    );

    let mut f = head.clone();
    let mut epb = e.epb(0, 0, &[1, 2, 3, 4], 4);
    epb[20..24].copy_from_slice(&9u32.to_le_bytes());
    f.extend(epb);
    assert_eq!(
        err_of(&f),
        format!("offset {}: enhanced packet block captured length 9 exceeds the 4 bytes the block holds", at + 20)
    );

    let mut f = shb.clone();
    let mut idb_bad = e.idb(1, 0, &[(2, b"abcd")]);
    idb_bad[18..20].copy_from_slice(&200u16.to_le_bytes()); // option length 200
    f.extend(idb_bad);
    assert_eq!(
        err_of(&f),
        "offset 44: interface description block option 2 of length 200 runs past the end of the block"
    );

    let mut f = shb.clone();
    f.extend(e.idb(1, 0, &[(9, &[6, 6])]));
    assert_eq!(
        err_of(&f),
        "offset 44: interface description block option 9 has length 2, expected 1"
    );

    let mut f = shb.clone();
    f[8..12].copy_from_slice(&[1, 2, 3, 4]);
    assert_eq!(
        err_of(&f),
        "offset 8: section header block has bad byte-order magic 0x01020304 (expected 0x1a2b3c4d either way round)"
    );

    let mut f = shb.clone();
    f[12] = 2;
    assert_eq!(
        err_of(&f),
        "offset 12: unsupported pcapng version 2.0 (libpcap reads 1.0 and 1.2 in the first section header block)"
    );

    let f = [head.clone(), e.epb(0, 0, &[1; 8], 8)].concat();
    assert_eq!(
        err_of(&f[..f.len() - 3]),
        format!("offset {at}: file ends inside enhanced packet block (got 37 of 40 bytes)")
    );
    assert_eq!(
        err_of(&f[..at + 5]),
        format!("offset {at}: file ends inside a block header (got 5 of 8 bytes)")
    );

    // Simple packet block without an interface.
    let f = [shb.clone(), block(false, 3, &[1, 0, 0, 0, 9, 0, 0, 0])].concat();
    assert_eq!(
        err_of(&f),
        "offset 36: simple packet block refers to interface 0, but the section describes 0 interface(s)"
    );
}

#[test]
fn hostile_lengths_do_not_allocate_unbacked_memory() {
    // A 200 MiB block claimed by a 60-byte file: must fail quickly with a truncation error.
    let e = Enc(false);
    let mut f = [e.shb(&[]), e.idb(1, 0, &[])].concat();
    f.extend_from_slice(&[6, 0, 0, 0]);
    f.extend_from_slice(&(200u32 << 20).to_le_bytes());
    f.extend_from_slice(&[0; 16]);
    let err = read_all(&f).unwrap_err();
    assert!(err.is_truncation(), "{err}");
    assert_eq!(err.offset, 48);
}

#[test]
fn unrepresentable_timestamps_are_flagged_not_fatal() {
    let e = Enc(false);
    let f = [
        e.shb(&[]),
        e.idb(1, 0, &[]),
        e.epb(0, u64::MAX, &[1], 1),
        e.epb(0, 5, &[2], 1),
    ]
    .concat();
    let mut r = PcapReader::new(&f[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert!(!p.has_ts);
    assert_eq!(p.ts_ns, 0);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.has_ts, p.ts_ns), (true, 5_000));
    assert_eq!(r.bad_timestamps(), 1);
}

// ---------- writers: exact bytes ----------

#[test]
fn pcap_writer_bytes() {
    let mut w = PcapWriter::new(Vec::new(), 1, 262_144, PcapPrecision::Nano).unwrap();
    w.write_packet(1_000_000_000_000_000_123, 64, &[0xde, 0xad])
        .unwrap();
    let b = w.into_inner().unwrap();
    #[rustfmt::skip]
    let want: Vec<u8> = vec![
        0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0,
        0x00, 0xca, 0x9a, 0x3b, 123, 0, 0, 0, 2, 0, 0, 0, 64, 0, 0, 0, 0xde, 0xad,
    ];
    assert_eq!(b, want);
}

#[test]
fn pcapng_writer_bytes() {
    let mut w = PcapngWriter::with_section(
        Vec::new(),
        &SectionOptions {
            userappl: None,
            ..Default::default()
        },
    )
    .unwrap();
    let id = w.add_interface("lo", 1, 0).unwrap();
    w.write_packet(id, 0x1_0000_0002, 3, &[7, 8, 9]).unwrap();
    w.write_interface_stats(
        id,
        5,
        &StatsCounters {
            ifrecv: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    let b = w.into_inner().unwrap();
    #[rustfmt::skip]
    let want: Vec<u8> = vec![
        // SHB, no options
        0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
        // IDB: linktype 1, snaplen 0, if_name "lo", if_tsresol 9, end
        1, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
        2, 0, 2, 0, b'l', b'o', 0, 0, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0,
        // EPB
        6, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0,
        7, 8, 9, 0, 36, 0, 0, 0,
        // ISB: ifrecv 1
        5, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0,
        4, 0, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0,
    ];
    assert_eq!(b, want);
}

#[test]
fn writer_rejects_bad_input() {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    assert!(w.write_packet(0, 0, 0, &[]).is_err()); // no interface yet
    let mut w = PcapWriter::new(Vec::new(), 1, 0, PcapPrecision::Micro).unwrap();
    assert!(w.write_packet(u64::MAX, 0, &[]).is_err()); // past 2106
}

// ---------- round trips ----------

fn sample_packets() -> Vec<(u64, u32, Vec<u8>)> {
    (0..50u64)
        .map(|i| {
            let ts = 1_700_000_000_000_000_000 + i * 1_234_567 + i % 7;
            let len = (i * 37 % 1500) as usize;
            (
                ts,
                len as u32 + (i % 3) as u32,
                (0..len).map(|j| (j as u64 ^ i) as u8).collect(),
            )
        })
        .collect()
}

#[test]
fn roundtrip_pcapng_exact_ns_with_stats_and_comments() {
    let pk = sample_packets();
    let mut w = PcapngWriter::with_section(
        Vec::new(),
        &SectionOptions {
            comment: Some("run 7"),
            ..Default::default()
        },
    )
    .unwrap();
    let a = w.add_interface("veth0", LINKTYPE_ETHERNET, 0).unwrap();
    let b = w
        .add_interface_with(&InterfaceOptions {
            description: Some("reflector side"),
            tsresol: TsResolution::MICRO,
            ..InterfaceOptions::new("veth1", LINKTYPE_RAW, 100)
        })
        .unwrap();
    for (i, (ts, orig, data)) in pk.iter().enumerate() {
        if i == 3 {
            let o = PacketOptions {
                comment: Some("third"),
                flags: Some(2),
                dropcount: Some(4),
            };
            w.write_packet_with(a, *ts, *orig, data, &o).unwrap();
        } else {
            w.write_packet(if i % 2 == 0 { a } else { b }, *ts, *orig, data)
                .unwrap();
        }
    }
    let c = StatsCounters {
        start_ns: Some(pk[0].0),
        end_ns: Some(pk[49].0),
        ifrecv: Some(50),
        ifdrop: Some(2),
        osdrop: Some(1),
        ..Default::default()
    };
    w.write_interface_stats(a, pk[49].0, &c).unwrap();
    let bytes = w.into_inner().unwrap();

    let mut r = PcapReader::new(&bytes[..]).unwrap();
    let mut i = 0;
    while let Some(p) = r.next_packet().unwrap() {
        let (ts, orig, data) = &pk[i];
        let on_b = i % 2 == 1 && i != 3;
        if on_b {
            assert_eq!(p.ts_ns, ts / 1000 * 1000, "µs interface truncates");
            assert_eq!(p.data, &data[..data.len().min(100)]);
            assert_eq!(p.linktype, LINKTYPE_RAW);
        } else {
            assert_eq!(p.ts_ns, *ts, "ns exact");
            assert_eq!(p.data, &data[..]);
        }
        assert_eq!(p.orig_len, (*orig).max(data.len() as u32).max(p.caplen()));
        if i == 3 {
            assert_eq!(
                (p.options.comment(), p.options.flags(), p.dropcount),
                (Some("third"), Some(2), Some(4))
            );
        }
        i += 1;
    }
    assert_eq!(i, pk.len());
    assert_eq!(r.sections()[0].comments, vec!["run 7".to_string()]);
    assert_eq!(r.sections()[0].userappl.as_deref(), Some(DEFAULT_USERAPPL));
    let ifs = r.interfaces();
    assert_eq!(ifs[0].name.as_deref(), Some("veth0"));
    assert_eq!(ifs[0].tsresol, TsResolution::NANO);
    assert_eq!(ifs[1].description.as_deref(), Some("reflector side"));
    assert_eq!((ifs[1].tsresol, ifs[1].snaplen), (TsResolution::MICRO, 100));
    let st = &r.interface_stats()[0];
    assert_eq!((st.interface, st.ts_ns), (0, pk[49].0));
    assert_eq!(st.counters, c);
}

#[test]
fn roundtrip_pcap_ns_exact_and_us_truncated() {
    let pk = sample_packets();
    for prec in [PcapPrecision::Nano, PcapPrecision::Micro] {
        let mut w = PcapWriter::new(Vec::new(), 1, 262_144, prec).unwrap();
        for (ts, orig, data) in &pk {
            w.write_packet(*ts, *orig, data).unwrap();
        }
        let got = read_all(&w.into_inner().unwrap()).unwrap();
        assert_eq!(got.len(), pk.len());
        for (g, (ts, _, data)) in got.iter().zip(&pk) {
            let want = if prec == PcapPrecision::Nano {
                *ts
            } else {
                ts / 1000 * 1000
            };
            assert_eq!(g.ts_ns, want);
            assert_eq!(&g.data, data);
        }
    }
}

// ---------- never panic ----------

fn valid_file(kind: u8) -> Vec<u8> {
    let pk = sample_packets();
    match kind % 3 {
        0 => {
            let mut w = PcapngWriter::new(Vec::new()).unwrap();
            let a = w.add_interface("a", 1, 0).unwrap();
            let b = w
                .add_interface_with(&InterfaceOptions {
                    tsresol: TsResolution::Binary(20),
                    ..InterfaceOptions::new("b", 101, 64)
                })
                .unwrap();
            for (i, (ts, o, d)) in pk.iter().take(6).enumerate() {
                w.write_packet_with(
                    if i % 2 == 0 { a } else { b },
                    *ts,
                    *o,
                    &d[..d.len().min(80)],
                    &PacketOptions {
                        comment: Some("c"),
                        ..Default::default()
                    },
                )
                .unwrap();
            }
            w.write_interface_stats(
                b,
                1,
                &StatsCounters {
                    ifrecv: Some(1),
                    start_ns: Some(3),
                    ..Default::default()
                },
            )
            .unwrap();
            w.into_inner().unwrap()
        }
        1 => {
            let mut w = PcapWriter::new(Vec::new(), 1, 0, PcapPrecision::Micro).unwrap();
            for (ts, o, d) in pk.iter().take(6) {
                w.write_packet(*ts, *o, &d[..d.len().min(80)]).unwrap();
            }
            w.into_inner().unwrap()
        }
        _ => {
            let e = Enc(true);
            let mut f = e.shb(&[(1, b"x")]);
            f.extend(e.idb(1, 16, &[(9, &[0x83])]));
            f.extend(e.epb(0, 99, &[1; 20], 20));
            f.extend(block(true, 3, &[0, 0, 0, 30, 1, 2, 3, 4]));
            f
        }
    }
}

fn drain(bytes: &[u8]) {
    if let Ok(mut r) = PcapReader::new(bytes) {
        let mut n = 0;
        loop {
            match r.next_packet() {
                Ok(Some(p)) => {
                    assert!(p.data.len() <= bytes.len());
                    let _ = p.options.iter().count();
                    let _ = p.options.comment();
                    n += 1;
                    assert!(n <= bytes.len());
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(e.offset <= bytes.len() as u64, "{e}");
                    break;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(prefix in 0usize..6, tail in proptest::collection::vec(any::<u8>(), 0..400)) {
        let magics: [&[u8]; 6] = [
            &[], &[0xd4, 0xc3, 0xb2, 0xa1], &[0xa1, 0xb2, 0x3c, 0x4d], &[0x34, 0xcd, 0xb2, 0xa1],
            &[0x0a, 0x0d, 0x0d, 0x0a], &[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0],
        ];
        let mut f = magics[prefix].to_vec();
        f.extend(tail);
        drain(&f);
    }

    #[test]
    fn never_panics_on_mutated_valid_files(
        kind in 0u8..3,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let mut f = valid_file(kind);
        for (at, v) in flips {
            let n = f.len();
            f[at % n] = v;
        }
        drain(&f);
        let n = f.len();
        drain(&f[..cut % (n + 1)]);
    }

    #[test]
    fn roundtrip_any_packets(pk in proptest::collection::vec((any::<u64>(), any::<u32>(), proptest::collection::vec(any::<u8>(), 0..100)), 0..20)) {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        let i = w.add_interface("x", 1, 0).unwrap();
        for (ts, orig, d) in &pk {
            w.write_packet(i, *ts, *orig, d).unwrap();
        }
        let got = read_all(&w.into_inner().unwrap()).unwrap();
        prop_assert_eq!(got.len(), pk.len());
        for (g, (ts, orig, d)) in got.iter().zip(&pk) {
            prop_assert_eq!(g.ts_ns, *ts);
            prop_assert_eq!(g.orig_len, (*orig).max(d.len() as u32));
            prop_assert_eq!(&g.data, d);
        }
    }
}

// ---------- headers libpcap refuses or accepts ----------

/// A little-endian µs pcap header with this version and link-type field.
fn pcap_header(major: u16, minor: u16, linktype: u32) -> Vec<u8> {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1];
    f.extend_from_slice(&major.to_le_bytes());
    f.extend_from_slice(&minor.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    f
}

/// A little-endian pcap record.
fn pcap_record(sec: u32, frac: u32, data: &[u8], orig: u32) -> Vec<u8> {
    let mut r = Vec::new();
    for v in [sec, frac, data.len() as u32, orig] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(data);
    r
}

#[test]
fn pcap_versions_and_link_type_bits_as_libpcap() {
    // Reserved bits 16-25: refused at the field's offset, saying which bits.
    let f = pcap_header(2, 4, 0x0001_0001);
    assert_eq!(
        err_of(&f),
        "offset 20: link-type field 0x00010001 has reserved bits 0x00010000 set (bits 16-25 must be 0; libpcap refuses such files too)"
    );
    let f = pcap_header(2, 4, 0x0200_0001);
    assert!(err_of(&f).contains("reserved bits 0x02000000"));
    // FCS bits (26, 28-31) and bit 27 are not reserved: read.
    for lt in [0x0400_0001, 0x3000_0065, 0x0800_0001, 0xf400_0001] {
        assert!(
            PcapReader::new(&pcap_header(2, 4, lt)[..]).is_ok(),
            "{lt:#x}"
        );
    }
    // DG/UX's 543.0 is read (lengths in the pre-2.3 order), 543.568 is not.
    let mut f = pcap_header(543, 0, 1);
    f.extend(pcap_record(1, 0, &[7, 8], 100));
    // The swap applies: the "caplen" field (2) below the "len" field (100) stays as is.
    let v = read_all(&f).unwrap();
    assert_eq!((v[0].data.len(), v[0].orig_len), (2, 100));
    assert!(err_of(&pcap_header(543, 568, 1)).contains("unsupported pcap version 543.568"));
    for minor in 0..=4 {
        assert!(PcapReader::new(&pcap_header(2, minor, 1)[..]).is_ok());
    }
    assert!(err_of(&pcap_header(2, 5, 1)).starts_with("offset 4: unsupported pcap version 2.5"));
}

#[test]
fn pcapng_section_versions_as_libpcap() {
    let e = Enc(false);
    let with_version = |minor: u16, major: u16| {
        let mut f = e.shb(&[]);
        f[12..14].copy_from_slice(&major.to_le_bytes());
        f[14..16].copy_from_slice(&minor.to_le_bytes());
        f
    };
    // First section: 1.0 and 1.2 (the same format) are read, 1.1 is not.
    for minor in [0, 2] {
        let f = [
            with_version(minor, 1),
            e.idb(1, 0, &[]),
            e.epb(0, 1, &[1], 1),
        ]
        .concat();
        assert_eq!(read_all(&f).unwrap().len(), 1, "1.{minor}");
    }
    assert_eq!(
        err_of(&with_version(1, 1)),
        "offset 12: unsupported pcapng version 1.1 (libpcap reads 1.0 and 1.2 in the first section header block)"
    );
    // A later section: any 1.x is read, 2.x is refused at its own offset.
    let head = [e.shb(&[]), e.idb(1, 0, &[]), e.epb(0, 1, &[1], 1)].concat();
    let f = [
        head.clone(),
        with_version(1, 1),
        e.idb(1, 0, &[]),
        e.epb(0, 1, &[2], 1),
    ]
    .concat();
    assert_eq!(read_all(&f).unwrap().len(), 2);
    let f = [head.clone(), with_version(0, 2)].concat();
    assert_eq!(
        err_of(&f),
        format!(
            "offset {}: unsupported pcapng version 2.0 (libpcap reads major version 1 in later section header blocks)",
            head.len() + 12
        )
    );
}

#[test]
fn fcs_announced_by_the_file_is_reported_and_strippable() {
    // Link-type field: Ethernet, FCS present, 2 x 16-bit words = 4 bytes.
    let frame: Vec<u8> = (1..=64).collect();
    let mut f = pcap_header(2, 4, 0x2400_0001);
    f.extend(pcap_record(1, 0, &frame, 64)); // whole frame with its FCS
    f.extend(pcap_record(1, 1, &frame[..40], 64)); // cut short before the FCS
    f.extend(pcap_record(1, 2, &frame[..62], 64)); // cut inside the FCS
    f.extend(pcap_record(1, 3, &frame, 0)); // broken orig_len: the captured length counts
    let mut r = PcapReader::new(&f[..]).unwrap();
    let mut got = vec![];
    while let Some(p) = r.next_packet().unwrap() {
        assert_eq!(p.fcs_len, 4);
        let (d, orig) = p.without_fcs();
        got.push((d.len(), orig));
    }
    assert_eq!(got, vec![(60, 60), (40, 60), (60, 60), (60, 0)]);
    // Without the FCS bits nothing is stripped.
    let mut f = pcap_header(2, 4, 1);
    f.extend(pcap_record(1, 0, &frame, 64));
    let mut r = PcapReader::new(&f[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.fcs_len, p.without_fcs().0.len()), (0, 64));
    // pcapng: the EPB flags word's FCS length (bits 5-8, octets).
    let e = Enc(false);
    let mut epb = Vec::new();
    e.u32(&mut epb, 0);
    e.u64(&mut epb, 0);
    e.u32(&mut epb, 64);
    e.u32(&mut epb, 64);
    epb.extend_from_slice(&frame);
    e.opt(&mut epb, 2, &(4u32 << 5).to_le_bytes());
    e.u32(&mut epb, 0);
    let f = [e.shb(&[]), e.idb(1, 0, &[]), block(false, 6, &epb)].concat();
    let mut r = PcapReader::new(&f[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.fcs_len, p.without_fcs().0.len()), (4, 60));
}

#[test]
fn bad_fractions_are_counted_and_follow_the_policy() {
    // ns values in a µs file: 0.25 s, 0.5 s (as ns: >= 10^6), then a good 1 µs record.
    let mut f = pcap_header(2, 4, 1);
    f.extend(pcap_record(10, 250_000_000, &[1], 1));
    f.extend(pcap_record(10, 500_000_000, &[2], 1));
    f.extend(pcap_record(11, 1, &[3], 1));
    let read = |policy| {
        let mut r = PcapReader::new(&f[..]).unwrap();
        r.set_fraction_policy(policy);
        let mut v = vec![];
        while let Some(p) = r.next_packet().unwrap() {
            v.push((p.ts_ns, p.bad_fraction));
        }
        (v, r.bad_fractions())
    };
    let s = 1_000_000_000u64;
    assert_eq!(
        read(FractionPolicy::Keep),
        (
            vec![(260 * s, true), (510 * s, true), (11 * s + 1_000, false)],
            2
        )
    );
    assert_eq!(
        read(FractionPolicy::Clamp),
        (
            vec![(10 * s, true), (10 * s, true), (11 * s + 1_000, false)],
            2
        )
    );
    assert_eq!(
        read(FractionPolicy::Nanoseconds),
        (
            vec![
                (10 * s + 250_000_000, true),
                (10 * s + 500_000_000, true),
                (11 * s + 1, false)
            ],
            2
        )
    );
}

#[test]
fn descriptions_and_statistics_are_held_within_the_metadata_budget() {
    // Blocks of 256 comments of 65,000 bytes (about 16 MiB each): the file,
    // not the user, decides how many there are.
    let e = Enc(false);
    let text = vec![b'c'; 65_000];
    let comments: Vec<(u16, &[u8])> = (0..256).map(|_| (1u16, &text[..])).collect();
    let isb = |ts: u64| {
        let mut b = Vec::new();
        e.u32(&mut b, 0);
        e.u32(&mut b, (ts >> 32) as u32);
        e.u32(&mut b, ts as u32);
        for (c, v) in &comments {
            e.opt(&mut b, *c, v);
        }
        e.u32(&mut b, 0);
        block(false, 5, &b)
    };
    // Statistics past the budget are counted, not kept; packets still read.
    let mut f = [e.shb(&[]), e.idb(1, 0, &[])].concat();
    for i in 0..6 {
        f.extend(isb(i));
    }
    f.extend(e.epb(0, 7, &[1; 20], 20));
    let mut r = PcapReader::new(&f[..]).unwrap();
    assert!(r.next_packet().unwrap().is_some());
    assert_eq!(r.interface_stats().len(), 4);
    assert_eq!(r.stats_not_kept(), 2);
    // Interface descriptions past it are an error naming the block.
    let mut f = e.shb(&[]);
    for _ in 0..6 {
        f.extend(e.idb(1, 0, &comments));
    }
    let err = err_of(&f);
    assert!(
        err.contains("interface description block would take"),
        "{err}"
    );
    assert!(err.contains("67108864 bytes"), "{err}");
}
