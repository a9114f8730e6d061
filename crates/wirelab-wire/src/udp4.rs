//! IPv4 and UDP headers, optionally behind an Ethernet header, written in
//! front of a UDP payload: what a sender on a raw IP socket (IP_HDRINCL) or
//! a packet socket hands the kernel instead of the payload alone.
//!
//! A frame is [`Udp4Frame::prefix_len`] header bytes followed by the
//! payload; [`Udp4Frame::write`] fills the headers for the payload that is
//! there (IP total length, UDP length, both checksums), so one template
//! serves probes of every size.

use crate::ethernet::HEADER_BYTES as ETH_HEADER_LEN;
use crate::rewrite::csum;
use std::net::SocketAddrV4;

/// IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// IPv4 and UDP headers: an MTU of M carries UDP payloads up to M − 28
/// without fragmenting.
pub const UDP4_OVERHEAD: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN;
/// Time to live of the packets built here (Linux's default).
pub const DEFAULT_TTL: u8 = 64;
const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_UDP: u8 = 17;
const FLAG_DF: u16 = 0x4000;

/// Largest UDP payload an interface of `mtu` carries in one IPv4 packet.
pub fn max_payload(mtu: u32) -> usize {
    (mtu as usize).saturating_sub(UDP4_OVERHEAD)
}

/// The fixed fields of the IPv4 and UDP headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Udp4Header {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    /// The TOS byte (DSCP << 2 | ECN).
    pub tos: u8,
    pub ttl: u8,
    /// Set the don't-fragment flag.
    pub dont_fragment: bool,
}

/// Ethernet addresses of a frame (EtherType IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthAddrs {
    pub dst: [u8; 6],
    pub src: [u8; 6],
}

/// What goes in front of every payload: IPv4 + UDP, behind Ethernet when
/// `eth` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Udp4Frame {
    pub eth: Option<EthAddrs>,
    pub ip: Udp4Header,
}

/// Why a frame's headers cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a frame of {len} bytes has no room for the {need} header bytes")]
    TooShort { len: usize, need: usize },
    #[error("an IPv4 packet of {len} bytes exceeds 65535")]
    TooLong { len: usize },
}

impl Udp4Frame {
    /// Header bytes in front of the payload: 28, or 42 with Ethernet.
    pub fn prefix_len(&self) -> usize {
        UDP4_OVERHEAD
            + if self.eth.is_some() {
                ETH_HEADER_LEN
            } else {
                0
            }
    }

    /// Writes every header of `frame` (the first [`Self::prefix_len`]
    /// bytes) for the payload in the rest, with IP identification `ident`.
    pub fn write(&self, frame: &mut [u8], ident: u16) -> Result<(), FrameError> {
        let need = self.prefix_len();
        if frame.len() < need {
            return Err(FrameError::TooShort {
                len: frame.len(),
                need,
            });
        }
        let ip_at = need - UDP4_OVERHEAD;
        let ip_len = frame.len() - ip_at;
        if ip_len > usize::from(u16::MAX) {
            return Err(FrameError::TooLong { len: ip_len });
        }
        if let Some(e) = self.eth {
            frame[0..6].copy_from_slice(&e.dst);
            frame[6..12].copy_from_slice(&e.src);
            frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        }
        let h = &self.ip;
        let (ip, rest) = frame[ip_at..].split_at_mut(IPV4_HEADER_LEN);
        ip[0] = 0x45;
        ip[1] = h.tos;
        ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&ident.to_be_bytes());
        let frag = if h.dont_fragment { FLAG_DF } else { 0 };
        ip[6..8].copy_from_slice(&frag.to_be_bytes());
        ip[8] = h.ttl;
        ip[9] = PROTO_UDP;
        ip[10..12].fill(0);
        ip[12..16].copy_from_slice(&h.src.ip().octets());
        ip[16..20].copy_from_slice(&h.dst.ip().octets());
        let c = csum::finish(csum::sum(ip, 0));
        ip[10..12].copy_from_slice(&c.to_be_bytes());

        let udp_len = (ip_len - IPV4_HEADER_LEN) as u16;
        rest[0..2].copy_from_slice(&h.src.port().to_be_bytes());
        rest[2..4].copy_from_slice(&h.dst.port().to_be_bytes());
        rest[4..6].copy_from_slice(&udp_len.to_be_bytes());
        rest[6..8].fill(0);
        // Pseudo-header: source, destination, protocol, UDP length.
        let mut acc = csum::sum(&h.src.ip().octets(), 0);
        acc = csum::sum(&h.dst.ip().octets(), acc);
        acc += u64::from(PROTO_UDP) + u64::from(udp_len);
        let c = match csum::finish(csum::sum(rest, acc)) {
            // 0 means "no checksum" in UDP over IPv4 (RFC 768).
            0 => 0xffff,
            c => c,
        };
        rest[6..8].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::{fix_checksums, parse_ethernet, parse_raw_ip};
    use std::net::Ipv4Addr;

    /// A datagram sent by the kernel (`IP_TOS` 0xb8, TX checksum offload
    /// off) between two namespaces, as `tcpdump -x -vv -e` showed it
    /// ("[udp sum ok]"): 198.18.99.1:40000 -> 198.18.99.2:5757, IP id 3517,
    /// DF, payload "wirelab probe!".
    const REAL: [u8; 56] = [
        0xde, 0x94, 0x56, 0xfe, 0xf7, 0x79, 0x8a, 0xb3, 0x47, 0x26, 0xe6, 0x8a, 0x08, 0x00, //
        0x45, 0xb8, 0x00, 0x2a, 0x0d, 0xbd, 0x40, 0x00, 0x40, 0x11, 0xda, 0x25, 0xc6, 0x12, 0x63,
        0x01, 0xc6, 0x12, 0x63, 0x02, 0x9c, 0x40, 0x16, 0x7d, 0x00, 0x16, 0xfd, 0x94, 0x77, 0x69,
        0x72, 0x65, 0x6c, 0x61, 0x62, 0x20, 0x70, 0x72, 0x6f, 0x62, 0x65, 0x21,
    ];

    fn real_frame(eth: bool) -> Udp4Frame {
        Udp4Frame {
            eth: eth.then_some(EthAddrs {
                dst: [0xde, 0x94, 0x56, 0xfe, 0xf7, 0x79],
                src: [0x8a, 0xb3, 0x47, 0x26, 0xe6, 0x8a],
            }),
            ip: Udp4Header {
                src: SocketAddrV4::new(Ipv4Addr::new(198, 18, 99, 1), 40000),
                dst: SocketAddrV4::new(Ipv4Addr::new(198, 18, 99, 2), 5757),
                tos: 0xb8,
                ttl: DEFAULT_TTL,
                dont_fragment: true,
            },
        }
    }

    #[test]
    fn builds_the_kernels_own_packet_byte_for_byte() {
        for eth in [true, false] {
            let f = real_frame(eth);
            let skip = if eth { 0 } else { ETH_HEADER_LEN };
            assert_eq!(f.prefix_len(), 42 - skip);
            // Headers start as garbage: every byte must be written.
            let mut b = vec![0xee; f.prefix_len()];
            b.extend_from_slice(b"wirelab probe!");
            f.write(&mut b, 3517).unwrap();
            assert_eq!(b, REAL[skip..], "eth {eth}");
        }
    }

    #[test]
    fn checksums_hold_for_every_length_and_zero_becomes_ffff() {
        let f = real_frame(true);
        for len in [0usize, 1, 2, 7, 100, 1471, 1472, 8972] {
            let mut b = vec![0u8; f.prefix_len() + len];
            for (i, x) in b[f.prefix_len()..].iter_mut().enumerate() {
                *x = (i * 7 + len) as u8;
            }
            f.write(&mut b, len as u16).unwrap();
            let l = parse_ethernet(&b);
            assert_eq!(l.ip_len, 28 + len);
            let mut fixed = b.clone();
            assert!(fix_checksums(&mut fixed, &l, false));
            assert_eq!(fixed, b, "len {len}");
            // The raw-IP form carries the same IP packet.
            let r = Udp4Frame { eth: None, ..f };
            let mut p = vec![0u8; 28];
            p.extend_from_slice(&b[42..]);
            r.write(&mut p, len as u16).unwrap();
            assert_eq!(p, b[14..]);
            let l = parse_raw_ip(&p);
            assert_eq!(l.l4, Some((17, 20)));
        }
        // A payload whose sum makes the UDP checksum 0 is sent as 0xffff.
        let r = Udp4Frame { eth: None, ..f };
        let mut p = vec![0u8; 30];
        r.write(&mut p, 0).unwrap();
        let c = u16::from_be_bytes([p[26], p[27]]);
        p[28..30].copy_from_slice(&c.to_be_bytes());
        r.write(&mut p, 0).unwrap();
        assert_eq!(&p[26..28], &[0xff, 0xff]);
    }

    #[test]
    fn too_short_or_too_long_is_an_error_not_a_panic() {
        let f = real_frame(true);
        assert_eq!(
            f.write(&mut [0u8; 41], 0),
            Err(FrameError::TooShort { len: 41, need: 42 })
        );
        let mut big = vec![0u8; 14 + 65_536];
        assert_eq!(
            f.write(&mut big, 0),
            Err(FrameError::TooLong { len: 65_536 })
        );
        let mut max = vec![0u8; 14 + 65_535];
        assert!(f.write(&mut max, 0).is_ok());
        assert_eq!(max_payload(1500), 1472);
        assert_eq!(max_payload(9000), 8972);
        assert_eq!(max_payload(20), 0);
    }
}
