//! A captured frame down to its UDP datagram: Ethernet (with 802.1Q/802.1ad
//! tags), Linux cooked SLL and SLL2, raw IP, BSD loopback; IPv4 and IPv6
//! (hop-by-hop, routing, destination-options and fragment headers skipped).
//!
//! Written here rather than taken from a packet crate because it is the few
//! header walks analyze needs, with SLL2 and a typed reason for every frame
//! that is not a UDP datagram (the report counts them). Lengths are checked
//! before every read; the IP length, not the captured length, bounds the
//! datagram (Ethernet pads short frames).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;
const ETH_VLAN: [u16; 3] = [0x8100, 0x88a8, 0x9100];
const UDP: u8 = 17;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The UDP datagram in `frame` of link type `linktype`.
pub fn udp_in(linktype: u16, frame: &[u8]) -> Result<Udp<'_>, NotUdp> {
    let (ethertype, ip) = match linktype {
        LINKTYPE_ETHERNET => {
            let mut at = 12;
            let mut t = be16(frame, at).ok_or(NotUdp::Truncated)?;
            // At most two tags (802.1ad + 802.1Q); more is not IP.
            for _ in 0..2 {
                if !ETH_VLAN.contains(&t) {
                    break;
                }
                at += 4;
                t = be16(frame, at).ok_or(NotUdp::Truncated)?;
            }
            (Some(t), frame.get(at + 2..).ok_or(NotUdp::Truncated)?)
        }
        LINKTYPE_LINUX_SLL => (
            Some(be16(frame, 14).ok_or(NotUdp::Truncated)?),
            frame.get(16..).ok_or(NotUdp::Truncated)?,
        ),
        LINKTYPE_LINUX_SLL2 => (
            Some(be16(frame, 0).ok_or(NotUdp::Truncated)?),
            frame.get(20..).ok_or(NotUdp::Truncated)?,
        ),
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => (None, frame),
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
            (Some(t), &frame[4..])
        }
        other => return Err(NotUdp::LinkType(other)),
    };
    let version = ip.first().ok_or(NotUdp::Truncated)? >> 4;
    match (ethertype, version) {
        (Some(ETH_IPV4) | None, 4) => ipv4(ip),
        (Some(ETH_IPV6) | None, 6) => ipv6(ip),
        _ => Err(NotUdp::NotIp),
    }
}

fn ipv4(ip: &[u8]) -> Result<Udp<'_>, NotUdp> {
    let ihl = usize::from(ip.first().ok_or(NotUdp::Truncated)? & 0x0f) * 4;
    if ihl < 20 || ip.len() < ihl {
        return Err(NotUdp::Truncated);
    }
    let total = usize::from(be16(ip, 2).ok_or(NotUdp::Truncated)?);
    if total < ihl {
        return Err(NotUdp::Truncated);
    }
    if ip[9] != UDP {
        return Err(NotUdp::OtherProtocol);
    }
    let frag = be16(ip, 6).ok_or(NotUdp::Truncated)?;
    let (more, offset) = (frag & 0x2000 != 0, frag & 0x1fff);
    if offset != 0 {
        return Err(NotUdp::LaterFragment);
    }
    let src = IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]));
    let body = &ip[ihl..ip.len().min(total)];
    udp(src, dst, ip[1], body, more)
}

fn ipv6(ip: &[u8]) -> Result<Udp<'_>, NotUdp> {
    let hdr = ip.get(..40).ok_or(NotUdp::Truncated)?;
    let tos = ((u16::from_be_bytes([hdr[0], hdr[1]]) >> 4) & 0xff) as u8;
    let plen = usize::from(be16(hdr, 4).ok_or(NotUdp::Truncated)?);
    let mut next = hdr[6];
    let addr = |at: usize| {
        let mut a = [0u8; 16];
        a.copy_from_slice(&hdr[at..at + 16]);
        IpAddr::V6(Ipv6Addr::from(a))
    };
    let (src, dst) = (addr(8), addr(24));
    let mut body = &ip[40..ip.len().min(40 + plen)];
    let mut fragmented = false;
    // A bounded walk over extension headers.
    for _ in 0..8 {
        match next {
            UDP => return udp(src, dst, tos, body, fragmented),
            0 | 43 | 60 => {
                let len = (usize::from(*body.get(1).ok_or(NotUdp::Truncated)?) + 1) * 8;
                next = body[0];
                body = body.get(len..).ok_or(NotUdp::Truncated)?;
            }
            44 => {
                let f = body.get(..8).ok_or(NotUdp::Truncated)?;
                if u16::from_be_bytes([f[2], f[3]]) >> 3 != 0 {
                    return Err(NotUdp::LaterFragment);
                }
                fragmented = f[3] & 1 != 0;
                next = f[0];
                body = &body[8..];
            }
            _ => return Err(NotUdp::OtherProtocol),
        }
    }
    Err(NotUdp::OtherProtocol)
}

fn udp(src: IpAddr, dst: IpAddr, tos: u8, body: &[u8], fragment: bool) -> Result<Udp<'_>, NotUdp> {
    let h = body.get(..8).ok_or(NotUdp::Truncated)?;
    let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    if len < 8 {
        return Err(NotUdp::Truncated);
    }
    Ok(Udp {
        src,
        dst,
        sport: u16::from_be_bytes([h[0], h[1]]),
        dport: u16::from_be_bytes([h[2], h[3]]),
        payload: &body[8..body.len().min(len)],
        len: (len - 8) as u32,
        tos,
        first_fragment: fragment,
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
}
