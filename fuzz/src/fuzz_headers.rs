//! The header views and the shared frame walk over arbitrary frames: as
//! Ethernet and as raw IP, every accessor, offsets inside the frame, the
//! rewriter's Layers read from the same walk, and the Repr round trips.
//! Nothing may panic.

use wirelab_wire::headers::walk::{walk_ethernet, walk_ip, Walk};
use wirelab_wire::headers::{
    EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, Ipv6ExtHeader, Ipv6Packet, UdpPacket,
    UdpRepr,
};
use wirelab_wire::rewrite::{parse_ethernet, parse_raw_ip, Layers};

fn check(w: &Walk<'_>, frame: &[u8]) {
    if let Some(ip) = w.ip {
        assert!(ip.offset + ip.header_len <= frame.len());
        assert!(w.five_tuple().is_some());
    } else {
        assert!(w.l4.is_none() && w.five_tuple().is_none());
    }
    if let Some((_, q)) = w.l4 {
        assert!(q <= frame.len());
    }
    if let Some(p) = w.l4_payload() {
        let (start, end) = (p.as_ptr() as usize, p.as_ptr() as usize + p.len());
        let f = frame.as_ptr() as usize;
        assert!(start >= f && end <= f + frame.len());
    }
    let _ = (
        w.l4_bytes(),
        w.udp().map(|u| (u.src_port(), u.payload().len())),
    );
}

/// The target's body: panics when a promise above is broken.
pub fn run(data: &[u8]) {
    let w = walk_ethernet(data);
    check(&w, data);
    assert_eq!(Layers::from(w), parse_ethernet(data));
    let r = walk_ip(data);
    check(&r, data);
    assert_eq!(Layers::from(r), parse_raw_ip(data));

    if let Ok(e) = EthernetFrame::new_checked(data) {
        let _ = (
            e.dst_addr(),
            e.src_addr(),
            e.is_tagged(),
            e.tag(0),
            e.tags(),
        );
        if let Ok(repr) = EthernetRepr::parse(&e) {
            let mut out = Vec::new();
            repr.emit(&mut out);
            assert_eq!(out, data[..repr.header_len()]);
        }
    }
    if let Ok(p) = Ipv4Packet::new_checked(data) {
        let _ = (
            p.options(),
            p.payload(),
            p.checksum(),
            p.is_fragment(),
            p.dont_frag(),
        );
        if let Ok(repr) = Ipv4Repr::parse(&p) {
            let mut out = Vec::new();
            repr.emit(&mut out);
            let q = Ipv4Packet::new_checked(&out[..]).unwrap();
            assert_eq!(Ipv4Repr::parse(&q), Ok(repr));
        }
    }
    if let Ok(p) = Ipv6Packet::new_checked(data) {
        let _ = (
            p.traffic_class(),
            p.flow_label(),
            p.hop_limit(),
            p.src_addr(),
        );
        let rest = &data[40..];
        if let Ok(e) = Ipv6ExtHeader::new_checked(rest, p.next_header()) {
            assert!(e.header_len() <= rest.len());
            let _ = (e.next_header(), e.fragment());
        }
    }
    if let Ok(u) = UdpPacket::new_checked(data) {
        let repr = UdpRepr::parse(&u);
        let mut out = Vec::new();
        repr.emit(&mut out);
        assert_eq!(out, data[..8]);
        assert!(u.payload().len() <= data.len() - 8);
    }
}
