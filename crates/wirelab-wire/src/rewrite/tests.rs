use super::*;

/// An Ethernet + IPv4 + UDP frame with correct checksums.
fn udp4(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let tot = 20 + 8 + payload.len();
    f.extend_from_slice(&[
        0x45,
        0,
        (tot >> 8) as u8,
        tot as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let ul = 8 + payload.len();
    f.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, (ul >> 8) as u8, ul as u8, 0, 0]);
    f.extend_from_slice(payload);
    let l = parse_ethernet(&f);
    assert!(fix_checksums(&mut f, &l, false));
    f
}

fn tcp6() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 24, 6, 64]);
    f.extend_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&[
        0, 80, 0x1f, 0x90, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    f.extend_from_slice(b"abcd");
    let l = parse_ethernet(&f);
    assert!(fix_checksums(&mut f, &l, false));
    f
}

fn checksums_ok(f: &[u8]) -> bool {
    let mut g = f.to_vec();
    let l = parse_ethernet(&g);
    fix_checksums(&mut g, &l, false);
    g == f
}

#[test]
fn maps_ports_ttl_keep_checksums_valid() {
    let spec = RewriteSpec {
        src_map: vec![IpMap::parse("10.0.0.0/24:192.168.7.0/24").unwrap()],
        dst_map: vec![IpMap::parse("10.0.0.2:172.16.0.9").unwrap()],
        ports: vec![PortMap::parse("53:5353").unwrap()],
        ttl: Some(Ttl::Sub(10)),
        smac: Some(parse_mac("02:aa:bb:cc:dd:ee").unwrap()),
        ..Default::default()
    };
    let mut f = udp4(b"hello world");
    let mut ol = f.len() as u32;
    let mut st = RewriteStats::default();
    assert_eq!(spec.apply(&mut f, &mut ol, &mut st), Verdict::Keep);
    assert_eq!(&f[26..34], &[192, 168, 7, 1, 172, 16, 0, 9]);
    assert_eq!(f[22], 54);
    assert_eq!(&f[36..38], &5353u16.to_be_bytes());
    assert_eq!(&f[6..12], &[2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee]);
    assert!(checksums_ok(&f));
    assert_eq!(st.changed, 1);
}

#[test]
fn ipv6_map_and_seed_keep_tcp_checksum_valid() {
    let spec = RewriteSpec {
        src_map: vec![IpMap::parse("[fd00::/64]:[fd99:1::/64]").unwrap()],
        seed: Some(7),
        ttl: Some(Ttl::Set(9)),
        ..Default::default()
    };
    let mut f = tcp6();
    let mut ol = f.len() as u32;
    spec.apply(&mut f, &mut ol, &mut RewriteStats::default());
    assert_eq!(f[21], 9);
    assert!(checksums_ok(&f));
    assert_ne!(f, tcp6());
}

#[test]
fn wrong_checksums_stay_wrong_unless_fixcsum() {
    let mut f = udp4(b"x");
    f[40] ^= 0x55; // corrupt the UDP checksum
    let spec = RewriteSpec {
        dst_map: vec![IpMap::parse("10.0.0.2:10.0.0.3").unwrap()],
        ..Default::default()
    };
    let mut ol = f.len() as u32;
    spec.apply(&mut f, &mut ol, &mut RewriteStats::default());
    assert!(!checksums_ok(&f));
    let spec = RewriteSpec {
        fixcsum: true,
        ..Default::default()
    };
    spec.apply(&mut f, &mut ol, &mut RewriteStats::default());
    assert!(checksums_ok(&f));
}

#[test]
fn vlan_add_strip_retag_round_trip() {
    let orig = udp4(b"vlan");
    let mut f = orig.clone();
    let mut ol = f.len() as u32;
    let mut st = RewriteStats::default();
    let add = RewriteSpec {
        vlan: Some(Vlan::Add {
            tpid: 0x88a8,
            tci: 0x502a,
        }),
        ..Default::default()
    };
    add.apply(&mut f, &mut ol, &mut st);
    assert_eq!(&f[12..18], &[0x88, 0xa8, 0x50, 0x2a, 0x08, 0x00]);
    assert_eq!(ol as usize, f.len());
    let retag = RewriteSpec {
        vlan: Some(Vlan::Retag {
            vid: Some(7),
            pcp: Some(5),
            tpid: Some(0x8100),
        }),
        ..Default::default()
    };
    retag.apply(&mut f, &mut ol, &mut st);
    assert_eq!(&f[12..16], &[0x81, 0x00, 0xb0, 0x07]);
    let strip = RewriteSpec {
        vlan: Some(Vlan::Strip),
        ..Default::default()
    };
    strip.apply(&mut f, &mut ol, &mut st);
    assert_eq!(f, orig);
}

#[test]
fn mtu_trunc_fixes_lengths_and_checksums() {
    let mut f = udp4(&[7u8; 400]);
    let mut ol = f.len() as u32;
    let mut st = RewriteStats::default();
    RewriteSpec {
        mtu_trunc: Some(100),
        ..Default::default()
    }
    .apply(&mut f, &mut ol, &mut st);
    assert_eq!(f.len(), 114);
    assert_eq!(ol, 114);
    assert_eq!(&f[16..18], &100u16.to_be_bytes());
    assert_eq!(st.truncated, 1);
    // The UDP length field still claims 408: tcprewrite keeps it too; the
    // IP header and the checksums agree with what is sent.
    let l = parse_ethernet(&f);
    assert_eq!(l.ip_len, 100);
}

#[test]
fn fixlen_pad_trunc_del() {
    let full = udp4(&[1u8; 50]);
    let cut = full[..60].to_vec();
    let ol0 = full.len() as u32;
    for (mode, want_len, verdict) in [
        (FixLen::Pad, full.len(), Verdict::Keep),
        (FixLen::Trunc, 60, Verdict::Keep),
        (FixLen::Del, 60, Verdict::Drop),
    ] {
        let mut f = cut.clone();
        let mut ol = ol0;
        let v = RewriteSpec {
            fixlen: Some(mode),
            ..Default::default()
        }
        .apply(&mut f, &mut ol, &mut RewriteStats::default());
        assert_eq!(v, verdict);
        assert_eq!(f.len(), want_len);
        if verdict == Verdict::Keep {
            assert_eq!(ol as usize, want_len);
            let l = parse_ethernet(&f);
            assert_eq!(l.ip_len + 14, want_len);
        }
    }
}

#[test]
fn fixlen_pad_never_allocates_past_the_limit() {
    // An original length read from a file (0xFFFFFFF0) must not size the
    // buffer: the frame is refused as oversize, untouched in size.
    let cut = udp4(&[1u8; 50])[..60].to_vec();
    let mut st = RewriteStats::default();
    for (limit, orig, want) in [
        (None, 0xFFFF_FFF0u32, Verdict::Oversize),
        (None, PAD_LIMIT as u32 + 1, Verdict::Oversize),
        (None, PAD_LIMIT as u32, Verdict::Keep),
        (Some(1514), 1515, Verdict::Oversize),
        (Some(1514), 1514, Verdict::Keep),
    ] {
        let mut f = cut.clone();
        let mut ol = orig;
        let v = RewriteSpec {
            fixlen: Some(FixLen::Pad),
            pad_limit: limit,
            ..Default::default()
        }
        .apply(&mut f, &mut ol, &mut st);
        assert_eq!(v, want, "limit {limit:?}, orig {orig}");
        if v == Verdict::Oversize {
            assert_eq!((f.len(), f.capacity() <= 4096), (60, true));
        } else {
            assert_eq!(f.len(), orig as usize);
        }
    }
    assert_eq!(st.pad_oversize, 3);
}

#[test]
fn unique_ip_matches_tcpreplay_and_keeps_checksums() {
    let f0 = udp4(b"abc");
    let mut f = f0.clone();
    assert!(unique_ip(&mut f, 0));
    assert_eq!(f, f0);
    assert!(unique_ip(&mut f, 1));
    // 10.0.0.2 > 10.0.0.1: source moves down, destination up.
    assert_eq!(&f[26..34], &[10, 0, 0, 0, 10, 0, 0, 3]);
    assert_eq!(
        &f[24..26],
        &f0[24..26],
        "sum preserved: IP checksum unchanged"
    );
    assert!(checksums_ok(&f));
    let mut arp = vec![0xffu8; 42];
    arp[12] = 0x08;
    arp[13] = 0x06;
    assert!(!unique_ip(&mut arp, 1));
}

#[test]
fn cidr_and_map_parsing() {
    assert!(Cidr::parse("10.1.2.3/8")
        .unwrap()
        .contains("10.200.0.1".parse().unwrap()));
    assert!(!Cidr::parse("10.1.2.3/8")
        .unwrap()
        .contains("::1".parse().unwrap()));
    assert!(IpMap::parse("10.0.0.0/8:fd00::/8").is_err());
    assert!(Cidr::parse("10.0.0.0/33").is_err());
    let m = IpMap::parse("10.0.0.0/8:192.168.0.0/16").unwrap();
    assert_eq!(
        m.map("10.1.2.3".parse().unwrap()),
        Some("192.168.2.3".parse().unwrap())
    );
    assert_eq!(
        PortMap::parse("1-10:99").unwrap(),
        PortMap {
            lo: 1,
            hi: 10,
            to: 99
        }
    );
    assert!(PortMap::parse("10-1:5").is_err());
    assert_eq!(Ttl::parse("-3").unwrap(), Ttl::Sub(3));
    assert!(parse_mac("zz:00:00:00:00:00").is_err());
}

#[test]
fn never_panics_on_garbage() {
    let spec = RewriteSpec {
        efcs: true,
        vlan: Some(Vlan::Strip),
        src_map: vec![IpMap::parse("0.0.0.0/0:1.0.0.0/8").unwrap()],
        ports: vec![PortMap::parse("0-65535:1").unwrap()],
        ttl: Some(Ttl::Add(1)),
        mtu_trunc: Some(20),
        fixlen: Some(FixLen::Pad),
        fixcsum: true,
        seed: Some(1),
        ..Default::default()
    };
    let mut x: u64 = 1;
    for n in 0..300usize {
        let mut f: Vec<u8> = (0..n)
            .map(|_| {
                x = splitmix(x);
                x as u8
            })
            .collect();
        if n > 14 {
            f[12] = 0x08;
            f[13] = 0;
            f[14] = 0x45;
        }
        let mut ol = (n as u32).saturating_add((x % 50) as u32);
        spec.apply(&mut f, &mut ol, &mut RewriteStats::default());
        let _ = unique_ip(&mut f, 3);
    }
}

#[test]
fn a_0x9100_tag_is_rewritten_like_802_1q() {
    let tag = |f: &[u8], tpid: u16| {
        let mut g = f[..12].to_vec();
        g.extend_from_slice(&tpid.to_be_bytes());
        g.extend_from_slice(&[0, 42]);
        g.extend_from_slice(&f[12..]);
        g
    };
    for plain in [udp4(b"hello"), tcp6()] {
        let (q, qq) = (tag(&plain, 0x8100), tag(&plain, 0x9100));
        let (l, ll) = (parse_ethernet(&q), parse_ethernet(&qq));
        assert_eq!((ll.vlan_tags, ll.l3, ll.l4), (l.vlan_tags, l.l3, l.l4));
        assert_eq!(split::endpoints(&qq), split::endpoints(&q));
        assert!(checksums_ok(&qq));
        // A port map rewrites the same bytes and keeps the checksum right.
        let mut spec = RewriteSpec::default();
        spec.ports.push(PortMap::parse("53:5353").unwrap());
        spec.ports.push(PortMap::parse("80:81").unwrap());
        let (mut a, mut b) = (q.clone(), qq.clone());
        let (mut la, mut lb) = (a.len() as u32, b.len() as u32);
        let mut st = RewriteStats::default();
        let _ = spec.apply(&mut a, &mut la, &mut st);
        let _ = spec.apply(&mut b, &mut lb, &mut st);
        assert_ne!(b, qq, "the port changed");
        assert_eq!(a[16..], b[16..]);
        assert!(checksums_ok(&b));
    }
}

#[test]
fn vlan_strip_and_retag_leave_an_untagged_frame_alone() {
    let orig = udp4(b"plain");
    for v in [
        Vlan::Strip,
        Vlan::Retag {
            vid: Some(7),
            pcp: None,
            tpid: Some(0x88a8),
        },
    ] {
        let mut f = orig.clone();
        let mut ol = f.len() as u32;
        apply_vlan(v, &mut f, &mut ol);
        assert_eq!(f, orig, "{v:?}");
        assert_eq!(ol as usize, orig.len(), "{v:?}");
    }
    // Too short to hold a tag: nothing is added.
    let mut f = vec![0u8; 13];
    let mut ol = 13;
    apply_vlan(
        Vlan::Add {
            tpid: 0x8100,
            tci: 1,
        },
        &mut f,
        &mut ol,
    );
    assert_eq!((f.len(), ol), (13, 13));
}

#[test]
fn mtu_truncation_keeps_a_frame_that_fits() {
    let mut f = udp4(&[7u8; 72]); // 100 bytes of IP
    let mut ol = f.len() as u32;
    assert!(!truncate_to_mtu(&mut f, &mut ol, 100));
    assert_eq!((f.len(), ol), (114, 114));
    assert!(truncate_to_mtu(&mut f, &mut ol, 99));
    assert_eq!((f.len(), ol), (113, 113));
    assert_eq!(&f[16..18], &99u16.to_be_bytes());
}
