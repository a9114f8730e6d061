//! Where the headers of an Ethernet frame are, in the offsets the rewriter
//! works with: a [`Layers`] read from the one frame walk
//! ([`crate::headers::walk`]). Any frame, however short or odd, yields a
//! [`Layers`] (perhaps without L3).

use crate::headers::walk::{walk_ethernet, walk_ip, Walk};

pub use crate::headers::{is_vlan_tpid, L3Kind};

/// Offsets of the layers of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layers {
    /// Number of VLAN tags directly after the MAC addresses.
    pub vlan_tags: u8,
    /// Network layer: kind and offset.
    pub l3: Option<(L3Kind, usize)>,
    /// Length of the IP header including IPv6 extension headers.
    pub l3_hdr_len: usize,
    /// Bytes the IP header says the datagram has (IPv4 total length,
    /// IPv6 40 + payload length), from the L3 offset.
    pub ip_len: usize,
    /// Transport protocol and offset, when the header is present (not a
    /// non-first fragment).
    pub l4: Option<(u8, usize)>,
    /// The datagram is a fragment (first or later): its L4 checksum cannot
    /// be recomputed from this frame alone.
    pub fragment: bool,
}

pub use crate::headers::proto::{ICMP, ICMPV6, TCP, UDP};

pub(crate) use crate::headers::be16;

impl From<Walk<'_>> for Layers {
    fn from(w: Walk<'_>) -> Layers {
        let mut l = Layers {
            vlan_tags: w.vlan_tags,
            l4: w.l4,
            ..Layers::default()
        };
        if let Some(ip) = w.ip {
            l.l3 = Some((ip.kind, ip.offset));
            l.l3_hdr_len = ip.header_len;
            l.ip_len = ip.ip_len;
            l.fragment = ip.fragment.is_some();
        }
        l
    }
}

/// Parses an Ethernet II / 802.3 frame (VLAN tags, MPLS, IP).
pub fn parse_ethernet(b: &[u8]) -> Layers {
    walk_ethernet(b).into()
}

/// Parses a frame that starts with an IP header (LINKTYPE_RAW).
pub fn parse_raw_ip(b: &[u8]) -> Layers {
    walk_ip(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_odd_frames_do_not_panic() {
        for n in 0..80 {
            let v = vec![0x81u8; n];
            let _ = parse_ethernet(&v);
            let mut w = vec![0u8; n];
            if n > 14 {
                w[12] = 0x08;
                w[14] = 0x45;
            }
            let _ = parse_ethernet(&w);
            let _ = parse_raw_ip(&w);
        }
    }

    #[test]
    fn vlan_mpls_ipv4_tcp() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a, 0x88, 0x47, 0, 1, 0x21, 0xfe]);
        let ip_off = f.len();
        f.extend_from_slice(&[
            0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend_from_slice(&[0u8; 20]);
        let l = parse_ethernet(&f);
        assert_eq!(l.vlan_tags, 1);
        assert_eq!(l.l3, Some((L3Kind::V4, ip_off)));
        assert_eq!(l.l4, Some((TCP, ip_off + 20)));
        assert!(!l.fragment);
    }
}
