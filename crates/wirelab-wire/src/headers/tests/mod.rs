//! Byte-array tests of each view, the walk on hand-made frames, and
//! properties: no panic on any input, and agreement with the rewriter's
//! former parser ([`old_layers`]) on every frame it read.

mod old_layers;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::eth::{Tags, TagsError};
use super::*;
use crate::rewrite::Layers;

const MACS: [u8; 12] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];

/// An IPv4 header (IHL 5) with `proto`, total length for `payload` bytes.
fn ipv4(proto: u8, frag: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x45, 0xb8];
    p.extend_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0x12, 0x34]);
    p.extend_from_slice(&frag.to_be_bytes());
    p.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    p.extend_from_slice(payload);
    p
}

/// An IPv6 header with `nh`, payload length of `payload`.
fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x6a, 0xb1, 0x23, 0x45];
    p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    p.extend_from_slice(&[nh, 64]);
    p.extend_from_slice(&[0xfd; 16]);
    p.extend_from_slice(&[0xfe; 16]);
    p.extend_from_slice(payload);
    p
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = sport.to_be_bytes().to_vec();
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0xab, 0xcd]);
    u.extend_from_slice(payload);
    u
}

fn eth(tags: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = MACS.to_vec();
    for (i, t) in tags.iter().enumerate() {
        f.extend_from_slice(&t.to_be_bytes());
        f.extend_from_slice(&(100 + i as u16).to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn ethernet_header_and_tags() {
    let f = eth(&[0x88a8, 0x9100, 0x8100], 0x0800, &[0x45]);
    let e = EthernetFrame::new_checked(&f[..]).unwrap();
    assert_eq!(e.dst_addr(), [2, 0, 0, 0, 0, 2]);
    assert_eq!(e.src_addr(), [2, 0, 0, 0, 0, 1]);
    assert_eq!(e.ethertype(), 0x88a8);
    assert!(e.is_tagged());
    let want = Tags {
        count: 3,
        ethertype: 0x0800,
        payload_at: 26,
    };
    assert_eq!(e.tags(), Ok(want));
    assert_eq!(e.tag(1), Some((0x9100, 101)));
    assert_eq!(e.tag(3), None);
    let r = EthernetRepr::parse(&e).unwrap();
    let mut out = Vec::new();
    r.emit(&mut out);
    assert_eq!((out.len(), r.header_len()), (26, 26));
    assert_eq!(out, f[..26]);
    // Cut inside the second tag; a TPID outside the set is an EtherType.
    let e = EthernetFrame::new_checked(&f[..19]).unwrap();
    assert_eq!(e.tags(), Err(TagsError::Truncated { seen: 2 }));
    let other = eth(&[], 0x9200, &[]);
    let e = EthernetFrame::new_checked(&other[..]).unwrap();
    assert_eq!(e.tags().map(|t| t.count), Ok(0));
    assert!(!e.is_tagged());
    let deep = eth(&[0x8100; MAX_VLAN_TAGS as usize + 1], 0x0800, &[]);
    let e = EthernetFrame::new_checked(&deep[..]).unwrap();
    assert_eq!(e.tags(), Err(TagsError::TooDeep));
    let ok = eth(&[0x8100; MAX_VLAN_TAGS as usize], 0x0800, &[]);
    let e = EthernetFrame::new_checked(&ok[..]).unwrap();
    assert_eq!(e.tags().map(|t| t.count), Ok(MAX_VLAN_TAGS));
    assert_eq!(
        EthernetFrame::new_checked(&f[..13]).err(),
        Some(HeaderError::Truncated)
    );
}

#[test]
fn ipv4_fields_options_and_fragments() {
    // IHL 6: one option word; MF with offset 0x123; total 28.
    let mut p = vec![0x46, 0x02, 0, 28, 0xbe, 0xef, 0x21, 0x23, 7, 17, 0xaa, 0xbb];
    p.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 9, 1, 1, 0, 0]);
    p.extend_from_slice(&[9, 9, 9, 9, 5, 5, 5, 5]);
    let v = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert_eq!((v.header_len(), v.tos(), v.total_len()), (24, 2, 28));
    assert_eq!((v.ident(), v.ttl(), v.protocol()), (0xbeef, 7, 17));
    assert_eq!(
        (v.more_frags(), v.dont_frag(), v.frag_offset()),
        (true, false, 0x123)
    );
    assert!(v.is_fragment());
    assert_eq!(v.checksum(), 0xaabb);
    assert_eq!(v.src_addr(), Ipv4Addr::new(192, 0, 2, 1));
    assert_eq!(v.dst_addr(), Ipv4Addr::new(198, 51, 100, 9));
    assert_eq!(v.options(), [1, 1, 0, 0]);
    assert_eq!(v.payload(), [9, 9, 9, 9]);
    // Padding after the datagram is not payload; a cut frame bounds it.
    assert_eq!(Ipv4Packet::new_checked(&p[..26]).unwrap().payload(), [9, 9]);
    let bad = |b: &[u8]| Ipv4Packet::new_checked(b).err();
    assert_eq!(bad(&p[..23]), Some(HeaderError::Truncated));
    assert_eq!(bad(&[]), Some(HeaderError::Truncated));
    assert_eq!(bad(&[0x44; 24]), Some(HeaderError::Malformed));
    assert_eq!(bad(&[0x65; 24]), Some(HeaderError::Malformed));
}

#[test]
fn ipv4_repr_round_trip_with_checksum() {
    let r = Ipv4Repr {
        src: Ipv4Addr::new(10, 1, 2, 3),
        dst: Ipv4Addr::new(10, 4, 5, 6),
        protocol: 17,
        tos: 0x2e,
        ttl: 9,
        ident: 77,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        payload_len: 12,
    };
    let mut out = Vec::new();
    r.emit(&mut out);
    assert_eq!(out.len(), 20);
    assert_eq!(
        crate::rewrite::csum::finish(crate::rewrite::csum::sum(&out, 0)),
        0
    );
    let v = Ipv4Packet::new_checked(&out[..]).unwrap();
    assert_eq!(Ipv4Repr::parse(&v), Ok(r));
    // A total length below the header is not a datagram.
    out[3] = 10;
    let v = Ipv4Packet::new_checked(&out[..]).unwrap();
    assert_eq!(Ipv4Repr::parse(&v), Err(HeaderError::Malformed));
}

#[test]
fn ipv6_fields_and_extension_headers() {
    let p = ipv6(0, &[17, 0, 1, 4, 0, 0, 0, 0]);
    let v = Ipv6Packet::new_checked(&p[..]).unwrap();
    assert_eq!((v.traffic_class(), v.flow_label()), (0xab, 0x12345));
    assert_eq!(
        (v.payload_len(), v.next_header(), v.hop_limit()),
        (8, 0, 64)
    );
    assert_eq!(v.src_addr(), Ipv6Addr::from([0xfd; 16]));
    assert_eq!(v.dst_addr(), Ipv6Addr::from([0xfe; 16]));
    assert_eq!(
        Ipv6Packet::new_checked(&p[..39]).err(),
        Some(HeaderError::Truncated)
    );
    assert_eq!(
        Ipv6Packet::new_checked(&[0x45; 40][..]).err(),
        Some(HeaderError::Malformed)
    );
    // Hop-by-hop, routing, destination options: (len + 1) * 8 bytes.
    for kind in [proto::HOPOPT, proto::ROUTING, proto::DSTOPTS] {
        let h = [17, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let e = Ipv6ExtHeader::new_checked(&h[..], kind).unwrap();
        assert_eq!((e.kind(), e.next_header(), e.header_len()), (kind, 17, 16));
        assert_eq!(e.fragment(), None);
        let cut = Ipv6ExtHeader::new_checked(&h[..15], kind).err();
        assert_eq!(cut, Some(HeaderError::Truncated));
    }
    // Authentication: (len + 2) * 4 bytes.
    let ah = [6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        Ipv6ExtHeader::new_checked(&ah[..], proto::AH)
            .unwrap()
            .header_len(),
        12
    );
    // Fragment: 8 bytes, offset and M flag.
    let fr = [17, 0, 0x01, 0x09, 0, 0, 0, 1];
    let e = Ipv6ExtHeader::new_checked(&fr[..], proto::FRAGMENT).unwrap();
    assert_eq!((e.header_len(), e.fragment()), (8, Some((0x21, true))));
    assert!(Ipv6ExtHeader::new_checked(&fr[..7], proto::FRAGMENT).is_err());
    assert!(Ipv6ExtHeader::new_checked(&fr[..], proto::UDP).is_err());
}

#[test]
fn udp_fields_and_repr() {
    let u = udp(4000, 5000, b"hello");
    let v = UdpPacket::new_checked(&u[..]).unwrap();
    assert_eq!((v.src_port(), v.dst_port(), v.len()), (4000, 5000, 13));
    assert_eq!((v.checksum(), v.payload()), (0xabcd, &b"hello"[..]));
    assert_eq!(UdpPacket::new_checked(&u[..10]).unwrap().payload(), b"he");
    assert_eq!(
        UdpPacket::new_checked(&u[..7]).err(),
        Some(HeaderError::Truncated)
    );
    let mut short = u.clone();
    short[5] = 7;
    assert_eq!(
        UdpPacket::new_checked(&short[..]).err(),
        Some(HeaderError::Malformed)
    );
    let r = UdpRepr::parse(&v);
    assert_eq!(r.payload_len, 5);
    let mut out = Vec::new();
    r.emit(&mut out);
    assert_eq!(out, u[..8]);
}

#[test]
fn walk_tagged_ipv4_to_payload_and_five_tuple() {
    let f = eth(
        &[0x9100, 0x8100],
        0x0800,
        &ipv4(17, 0x4000, &udp(7, 9, b"abc")),
    );
    let w = walk_ethernet(&f);
    assert_eq!((w.vlan_tags, w.l2_len, w.stop), (2, 22, None));
    let ip = w.ip.unwrap();
    assert_eq!(
        (ip.kind, ip.offset, ip.header_len, ip.ip_len),
        (L3Kind::V4, 22, 20, 31)
    );
    assert_eq!((ip.tos, ip.fragment), (0xb8, None));
    assert_eq!(w.l4, Some((17, 42)));
    assert_eq!(w.l4_payload(), Some(&b"abc"[..]));
    assert_eq!(w.udp().map(|u| u.dst_port()), Some(9));
    let t = w.five_tuple().unwrap();
    assert_eq!(t.src, IpAddr::from([10, 0, 0, 1]));
    assert_eq!((t.proto, t.sport, t.dport), (17, 7, 9));
    // Ethernet padding is not payload.
    let mut padded = f.clone();
    padded.resize(80, 0);
    assert_eq!(walk_ethernet(&padded).l4_payload(), Some(&b"abc"[..]));
}

#[test]
fn walk_ipv6_extension_chain_fragments_and_mpls() {
    let mut chain = vec![43, 0, 0, 0, 0, 0, 0, 0]; // hop-by-hop
    chain.extend_from_slice(&[44, 0, 0, 0, 0, 0, 0, 0]); // routing
    chain.extend_from_slice(&[60, 0, 0, 1, 0, 0, 0, 9]); // fragment 0, M
    chain.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 0]); // dst options
    chain.extend_from_slice(&udp(1, 2, b"xy"));
    let f = eth(&[], 0x86dd, &ipv6(0, &chain));
    let w = walk_ethernet(&f);
    let ip = w.ip.unwrap();
    assert_eq!((ip.ext_headers, ip.header_len, ip.saw_ah), (4, 72, false));
    assert_eq!(
        ip.fragment,
        Some(Fragment {
            offset: 0,
            more: true
        })
    );
    assert_eq!(w.l4, Some((17, 14 + 72)));
    assert_eq!(w.l4_payload(), Some(&b"xy"[..]));
    // A later fragment: no transport header, the IP header's protocol.
    let mut later = f.clone();
    later[14 + 40 + 16 + 2] = 0x10;
    let w = walk_ethernet(&later);
    assert_eq!((w.l4, w.stop), (None, None));
    let t = w.five_tuple().unwrap();
    assert_eq!((t.proto, t.sport), (0, 0));
    // Cut inside the chain.
    assert_eq!(
        walk_ethernet(&f[..14 + 40 + 20]).stop,
        Some(Stop::Truncated)
    );
    // MPLS: two labels, bottom of stack on the second, then IPv4 by version.
    let mut m = vec![0, 1, 0x20, 64, 0, 2, 0x21, 64];
    m.extend_from_slice(&ipv4(6, 0, &[0; 20]));
    let mf = eth(&[0x8100], 0x8847, &m);
    let w = walk_ethernet(&mf);
    assert_eq!((w.vlan_tags, w.mpls_labels, w.l2_len), (1, 2, 18));
    assert_eq!(w.l4, Some((6, 18 + 8 + 20)));
    // Raw IP and non-IP.
    assert_eq!(walk_ip(&ipv4(1, 0, &[8, 0])).l4, Some((1, 20)));
    assert_eq!(
        walk_ethernet(&eth(&[], 0x0806, &[0; 28])).stop,
        Some(Stop::NotIp)
    );
    assert_eq!(
        walk_ethernet(&eth(&[], 0x0800, &ipv6(17, &[]))).stop,
        Some(Stop::NotIp)
    );
}

/// A frame built from random choices: tags, MPLS, IPv4 or IPv6 with an
/// extension chain, a transport header; then cut and mutated.
#[derive(Debug, Clone)]
struct Plan {
    tags: Vec<u16>,
    mpls: Vec<u8>,
    l3: u8,
    vihl: u8,
    frag: u16,
    proto: u8,
    ext: Vec<(u8, u8)>,
    body: Vec<u8>,
    cut: Option<usize>,
    flips: Vec<(usize, u8)>,
}

fn plan() -> impl Strategy<Value = Plan> {
    let tpid = prop::sample::select(vec![0x8100u16, 0x88a8, 0x9100]);
    let tags = prop_oneof![
        8 => prop::collection::vec(tpid.clone(), 0..4),
        1 => prop::collection::vec(tpid, 4..12),
    ];
    let ext_kind = prop::sample::select(vec![0u8, 43, 44, 51, 60, 17, 6]);
    (
        tags,
        prop::collection::vec(any::<u8>(), 0..4),
        0u8..4,
        prop::sample::select(vec![0x45u8, 0x46, 0x4f, 0x44, 0x65, 0x40]),
        prop::sample::select(vec![0u16, 0x2000, 0x4000, 0x0010, 0x2001]),
        prop::sample::select(vec![17u8, 6, 1, 58, 132, 0, 44]),
        prop::collection::vec((ext_kind, 0u8..3), 0..10),
        prop::collection::vec(any::<u8>(), 0..40),
        prop::option::of(any::<usize>()),
        prop::collection::vec((any::<usize>(), any::<u8>()), 0..2),
    )
        .prop_map(
            |(tags, mpls, l3, vihl, frag, proto, ext, body, cut, flips)| Plan {
                tags,
                mpls,
                l3,
                vihl,
                frag,
                proto,
                ext,
                body,
                cut,
                flips,
            },
        )
}

fn build(p: &Plan) -> Vec<u8> {
    let mut l4 = Vec::new();
    let first = p.ext.first().map_or(p.proto, |e| e.0);
    for (i, &(_, len)) in p.ext.iter().enumerate() {
        let next = p.ext.get(i + 1).map_or(p.proto, |e| e.0);
        let mut h = vec![next, len];
        h.resize(8 * (usize::from(len) + 1), 0);
        l4.extend_from_slice(&h);
    }
    l4.extend_from_slice(&p.body);
    let (ethertype, ip) = match p.l3 {
        0 => {
            let mut ip = ipv4(p.proto, p.frag, &p.body);
            ip[0] = p.vihl;
            (0x0800, ip)
        }
        1 => (0x86dd, ipv6(first, &l4)),
        2 => (0x8847, [&p.mpls[..], &ipv4(p.proto, 0, &p.body)].concat()),
        _ => (0x0806, p.body.clone()),
    };
    let mut f = eth(&p.tags, ethertype, &ip);
    if let Some(cut) = p.cut {
        f.truncate(cut % (f.len() + 1));
    }
    for &(at, v) in &p.flips {
        if !f.is_empty() {
            let n = f.len();
            f[at % n] = v;
        }
    }
    f
}

/// The walk agrees with the former parser wherever it went as far as the
/// old one could; where it stopped on a cut header, on L3 and L4 alone;
/// past its bounds (deeper stacks than it steps over) it does not judge.
fn agrees(frame: &[u8], new: Layers, old: Layers, stop: Option<Stop>) {
    match stop {
        None => assert_eq!(new, old, "{frame:02x?}"),
        Some(Stop::Truncated | Stop::NotIp) => {
            assert_eq!(
                (new.vlan_tags, new.l3, new.l4, new.ip_len),
                (old.vlan_tags, old.l3, old.l4, old.ip_len),
                "{frame:02x?}"
            );
            if new.l3.is_some_and(|(k, _)| k == L3Kind::V4) {
                assert_eq!(new, old, "{frame:02x?}");
            }
        }
        Some(Stop::TooDeep) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn walk_agrees_with_former_parser(p in plan()) {
        let f = build(&p);
        let w = walk_ethernet(&f);
        agrees(&f, w.into(), old_layers::parse_ethernet(&f), w.stop);
        let l2 = w.l2_len.min(f.len());
        let raw = &f[l2..];
        let w = walk_ip(raw);
        agrees(raw, w.into(), old_layers::parse_raw_ip(raw), w.stop);
    }

    #[test]
    fn walk_never_panics(b in prop::collection::vec(any::<u8>(), 0..200)) {
        for w in [walk_ethernet(&b), walk_ip(&b), walk_ip_at(&b, 7)] {
            let _ = (w.l4_bytes(), w.udp(), w.l4_payload(), w.five_tuple());
            if let Some(ip) = w.ip {
                prop_assert!(ip.offset + ip.header_len <= b.len());
            }
            if let Some((_, q)) = w.l4 {
                prop_assert!(q <= b.len());
            }
        }
        agrees(&b, walk_ethernet(&b).into(), old_layers::parse_ethernet(&b), walk_ethernet(&b).stop);
    }
}
