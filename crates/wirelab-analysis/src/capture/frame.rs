//! A captured frame down to its UDP datagram: Ethernet (with the VLAN tags
//! every frame reader steps over: 802.1Q, 802.1ad, 0x9100), Linux cooked
//! SLL and SLL2, raw IP, BSD loopback; IPv4 and IPv6 (hop-by-hop, routing,
//! destination-options and fragment headers skipped).
//!
//! The link headers are read here; from the IP header on, the frame walk
//! of wirelab-wire ([`wirelab_wire::headers::walk`]) reads, and this
//! module turns what it found into a typed reason for every frame that is
//! not a UDP datagram (the report counts them). The IP length, not the
//! captured length, bounds the datagram (Ethernet pads short frames).

use std::net::IpAddr;

use wirelab_wire::headers::walk::{walk_ethernet, walk_ip_at, L3Kind, Stop, Walk};
use wirelab_wire::headers::{proto::UDP, UdpPacket, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// LINKTYPE_NULL (BSD loopback: a 4-byte address family in host order).
pub const LINKTYPE_NULL: u16 = 0;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// LINKTYPE_RAW (IPv4 or IPv6 by the version nibble).
pub const LINKTYPE_RAW: u16 = 101;
/// LINKTYPE_LINUX_SLL (Linux cooked capture v1, 16-byte header).
pub const LINKTYPE_LINUX_SLL: u16 = 113;
/// LINKTYPE_IPV4.
pub const LINKTYPE_IPV4: u16 = 228;
/// LINKTYPE_IPV6.
pub const LINKTYPE_IPV6: u16 = 229;
/// LINKTYPE_LINUX_SLL2 (Linux cooked capture v2, 20-byte header).
pub const LINKTYPE_LINUX_SLL2: u16 = 276;

/// A UDP datagram found in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Udp<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    /// The captured part of the payload (shorter than `len` when the
    /// snap length cut the frame or this is the first fragment).
    pub payload: &'a [u8],
    /// Payload length from the UDP header.
    pub len: u32,
    /// IPv4 TOS / IPv6 traffic class.
    pub tos: u8,
    /// The first fragment of a fragmented datagram.
    pub first_fragment: bool,
}

/// Why a frame holds no UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotUdp {
    /// A link type this decoder does not read.
    LinkType(u16),
    /// Not IPv4 or IPv6 (ARP, LLDP, ...).
    NotIp,
    /// IP but not UDP (TCP, ICMP, ...).
    OtherProtocol,
    /// A non-first fragment (its UDP header is in another frame).
    LaterFragment,
    /// A header cut short by the snap length, or a length field that does
    /// not fit.
    Truncated,
}

const ETH_IPV4: u16 = ETHERTYPE_IPV4;
const ETH_IPV6: u16 = ETHERTYPE_IPV6;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The UDP datagram in `frame` of link type `linktype`.
pub fn udp_in(linktype: u16, frame: &[u8]) -> Result<Udp<'_>, NotUdp> {
    let w = match linktype {
        LINKTYPE_ETHERNET => {
            let w = walk_ethernet(frame);
            let Some(t) = w.ethertype else {
                // Cut inside the tags, or a deeper stack than any IP frame has.
                return Err(match w.stop {
                    Some(Stop::TooDeep) => NotUdp::NotIp,
                    _ => NotUdp::Truncated,
                });
            };
            typed_ip(frame, Some(t), w.l2_len)?;
            w
        }
        LINKTYPE_LINUX_SLL => {
            let t = be16(frame, 14).ok_or(NotUdp::Truncated)?;
            link_ip(frame, Some(t), 16)?
        }
        LINKTYPE_LINUX_SLL2 => {
            let t = be16(frame, 0).ok_or(NotUdp::Truncated)?;
            link_ip(frame, Some(t), 20)?
        }
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => link_ip(frame, None, 0)?,
        LINKTYPE_NULL => {
            let af = frame.get(..4).ok_or(NotUdp::Truncated)?;
            let le = u32::from_le_bytes([af[0], af[1], af[2], af[3]]);
            let be = u32::from_be_bytes([af[0], af[1], af[2], af[3]]);
            // AF_INET is 2 everywhere; AF_INET6 is 10, 24, 28 or 30 by OS.
            let t = match (le, be) {
                (2, _) | (_, 2) => ETH_IPV4,
                (10 | 24 | 28 | 30, _) | (_, 10 | 24 | 28 | 30) => ETH_IPV6,
                _ => return Err(NotUdp::NotIp),
            };
            link_ip(frame, Some(t), 4)?
        }
        other => return Err(NotUdp::LinkType(other)),
    };
    udp_of(&w, frame)
}

/// The walk from an IP header at `at` after a link header that names its
/// EtherType (or not: raw IP).
fn link_ip(frame: &[u8], ethertype: Option<u16>, at: usize) -> Result<Walk<'_>, NotUdp> {
    typed_ip(frame, ethertype, at)?;
    Ok(walk_ip_at(frame, at))
}

/// Whether the IP header at `at` is there and of the version the
/// EtherType names (any, for raw IP).
fn typed_ip(frame: &[u8], ethertype: Option<u16>, at: usize) -> Result<(), NotUdp> {
    let version = frame.get(at).ok_or(NotUdp::Truncated)? >> 4;
    match (ethertype, version) {
        (Some(ETH_IPV4) | None, 4) | (Some(ETH_IPV6) | None, 6) => Ok(()),
        _ => Err(NotUdp::NotIp),
    }
}

/// The datagram the walk reached, or why there is none. The IP length
/// bounds the datagram and the extension headers; an authentication
/// header is not stepped over here (its datagrams are not probes).
fn udp_of<'a>(w: &Walk<'a>, frame: &'a [u8]) -> Result<Udp<'a>, NotUdp> {
    let ip = w.ip.ok_or(NotUdp::Truncated)?;
    if ip.kind == L3Kind::V4 && ip.ip_len < ip.header_len {
        return Err(NotUdp::Truncated);
    }
    let end = frame.len().min(ip.offset + ip.ip_len);
    if ip.kind == L3Kind::V6 && ip.offset + ip.header_len > end {
        return Err(NotUdp::Truncated);
    }
    if ip.saw_ah || w.stop == Some(Stop::TooDeep) {
        return Err(NotUdp::OtherProtocol);
    }
    if w.stop.is_some() {
        return Err(NotUdp::Truncated);
    }
    let later = ip.fragment.is_some_and(|f| f.offset != 0);
    match (ip.kind, w.l4) {
        // IPv4 names its protocol before its fragment offset is read.
        (L3Kind::V4, _) if ip.protocol != UDP => return Err(NotUdp::OtherProtocol),
        _ if later => return Err(NotUdp::LaterFragment),
        (_, Some((UDP, _))) => {}
        _ => return Err(NotUdp::OtherProtocol),
    }
    let body = frame
        .get(ip.offset + ip.header_len..end)
        .ok_or(NotUdp::Truncated)?;
    let u = UdpPacket::new_checked(body).map_err(|_| NotUdp::Truncated)?;
    Ok(Udp {
        src: ip.src,
        dst: ip.dst,
        sport: u.src_port(),
        dport: u.dst_port(),
        payload: &body[8..8 + u.payload().len()],
        len: u32::from(u.len()) - 8,
        tos: ip.tos,
        first_fragment: ip.fragment.is_some_and(|f| f.more),
    })
}

/// Test and fuzz helpers: frames built around a UDP payload.
pub mod build {
    /// An IPv4 + UDP packet (no link header) carrying `payload`.
    pub fn ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let total = 28 + payload.len();
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    /// An IPv6 + UDP packet (no link header) carrying `payload`.
    pub fn ipv6_udp(
        src: [u8; 16],
        dst: [u8; 16],
        sport: u16,
        dport: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let ulen = 8 + payload.len();
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&(ulen as u16).to_be_bytes());
        p.extend_from_slice(&[17, 64]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&(ulen as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    /// An Ethernet frame around an IP packet (ethertype by its version).
    pub fn ethernet(ip: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
        f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        f.extend_from_slice(ip);
        // Pad to the 60-byte minimum as a NIC does.
        f.resize(f.len().max(60), 0);
        f
    }
}

#[cfg(test)]
mod old;

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    #[test]
    fn ethernet_padding_vlan_sll_sll2_raw_and_ipv6() {
        let ip = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 4000, 5000, b"abc");
        let eth = ethernet(&ip);
        assert_eq!(eth.len(), 60, "padded");
        let u = udp_in(LINKTYPE_ETHERNET, &eth).unwrap();
        assert_eq!(
            (u.payload, u.len, u.sport, u.dport),
            (&b"abc"[..], 3, 4000, 5000)
        );
        assert_eq!(u.src.to_string(), "10.0.0.1");
        // 802.1Q tag.
        let mut tagged = eth[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0, 0, 7]);
        tagged.extend_from_slice(&eth[12..]);
        assert_eq!(udp_in(LINKTYPE_ETHERNET, &tagged).unwrap().payload, b"abc");
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(&ip);
        assert_eq!(udp_in(LINKTYPE_LINUX_SLL, &sll).unwrap().payload, b"abc");
        let mut sll2 = vec![0x08, 0x00];
        sll2.resize(20, 0);
        sll2.extend_from_slice(&ip);
        assert_eq!(udp_in(LINKTYPE_LINUX_SLL2, &sll2).unwrap().payload, b"abc");
        assert_eq!(udp_in(LINKTYPE_RAW, &ip).unwrap().payload, b"abc");
        let v6 = ipv6_udp([0xfd; 16], [0xfe; 16], 1, 2, b"xyz!");
        let e6 = ethernet(&v6);
        let u = udp_in(LINKTYPE_ETHERNET, &e6).unwrap();
        assert_eq!((u.payload, u.len), (&b"xyz!"[..], 4));
        assert_eq!(udp_in(LINKTYPE_RAW, &v6).unwrap().dport, 2);
    }

    #[test]
    fn not_udp_reasons_and_cut_frames() {
        let ip = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 4000, 5000, b"abcdef");
        let mut tcp = ip.clone();
        tcp[9] = 6;
        assert_eq!(udp_in(LINKTYPE_RAW, &tcp), Err(NotUdp::OtherProtocol));
        let mut later = ip.clone();
        later[6..8].copy_from_slice(&[0, 10]);
        assert_eq!(udp_in(LINKTYPE_RAW, &later), Err(NotUdp::LaterFragment));
        assert_eq!(udp_in(147, &ip), Err(NotUdp::LinkType(147)));
        let mut arp = ethernet(&ip);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(udp_in(LINKTYPE_ETHERNET, &arp), Err(NotUdp::NotIp));
        for cut in 0..28 {
            assert!(udp_in(LINKTYPE_RAW, &ip[..cut]).is_err(), "cut at {cut}");
        }
        // Snap length inside the payload: the header's length survives.
        let u = udp_in(LINKTYPE_RAW, &ip[..30]).unwrap();
        assert_eq!((u.payload, u.len), (&b"ab"[..], 6));
    }

    #[test]
    fn every_tag_set_and_depth_reads_like_an_untagged_frame() {
        let ip = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 4000, 5000, b"abc");
        let eth = ethernet(&ip);
        let want = udp_in(LINKTYPE_ETHERNET, &eth).unwrap();
        // 0x9100 alone, and a three-deep stack (the former limit was two).
        for tags in [&[0x9100u16][..], &[0x88a8, 0x9100, 0x8100]] {
            let mut f = eth[..12].to_vec();
            for t in tags {
                f.extend_from_slice(&t.to_be_bytes());
                f.extend_from_slice(&[0, 7]);
            }
            f.extend_from_slice(&eth[12..]);
            assert_eq!(udp_in(LINKTYPE_ETHERNET, &f), Ok(want), "{tags:x?}");
        }
    }
}
