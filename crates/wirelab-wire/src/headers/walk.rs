//! The one walk from a frame to its transport header: VLAN tags, MPLS,
//! IPv4 or IPv6 with extension headers, then the L4 header, its payload
//! and the 5-tuple. Rewrite, capture analysis, emulate verification and
//! the emulator's flow classifier all read frames through it, so they
//! agree on what a frame holds; each keeps its own policy on top (which
//! link layers, whether MPLS counts, how short is too short).
//!
//! The walk reads only inside the frame and steps over bounded numbers of
//! tags, labels and extension headers ([`MAX_VLAN_TAGS`],
//! [`MAX_MPLS_LABELS`], [`MAX_IPV6_EXT_HEADERS`]).

use std::net::IpAddr;

use super::eth::{EthernetFrame, TagsError};
use super::ipv4::Ipv4Packet;
use super::ipv6::{self, Ipv6ExtHeader, Ipv6Packet};
use super::udp::UdpPacket;
use super::{proto, HeaderError, MAX_IPV6_EXT_HEADERS, MAX_MPLS_LABELS, MAX_VLAN_TAGS};
use super::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_MPLS, ETHERTYPE_MPLS_MC};

/// IP version of the network layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L3Kind {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// Why a walk ended before an L4 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Not IPv4 or IPv6 (or the version nibble contradicts the EtherType).
    NotIp,
    /// A header cut short by the end of the frame, or an IPv4 header
    /// length below 20.
    Truncated,
    /// More tags, labels or extension headers than the walk steps over.
    TooDeep,
}

/// Fragment fields: offset in 8-byte units and the more-fragments flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Offset of this fragment in 8-byte units (0: the first).
    pub offset: u16,
    /// More fragments follow.
    pub more: bool,
}

/// The IP layer a walk found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    /// IPv4 or IPv6.
    pub kind: L3Kind,
    /// Offset of the IP header in the frame.
    pub offset: usize,
    /// IP header with options and the extension headers stepped over.
    pub header_len: usize,
    /// Datagram length the header states (IPv4 total length, IPv6 40 +
    /// payload length), from `offset`; the frame may hold more or less.
    pub ip_len: usize,
    /// IPv4 TOS or IPv6 traffic class.
    pub tos: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// The header's own protocol (IPv6: first next header).
    pub protocol: u8,
    /// Set for IPv4 with MF or an offset, and for IPv6 with a fragment
    /// header (the last one, if several).
    pub fragment: Option<Fragment>,
    /// IPv6 extension headers stepped over.
    pub ext_headers: u8,
    /// Whether an authentication header was among them.
    pub saw_ah: bool,
}

/// What a frame holds, as far as the walk got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk<'a> {
    frame: &'a [u8],
    /// VLAN TPIDs read after the MAC addresses (a tag cut short counts).
    pub vlan_tags: u8,
    /// The EtherType after the VLAN tags (`None` when the frame ends
    /// inside them, or for a frame that starts with IP).
    pub ethertype: Option<u16>,
    /// MPLS labels stepped over.
    pub mpls_labels: u8,
    /// Where the L2 header (with tags, before any MPLS stack) ends; 0 for
    /// a frame that starts with IP.
    pub l2_len: usize,
    /// The IP layer.
    pub ip: Option<IpInfo>,
    /// Transport protocol and the offset of its header; absent for a
    /// later fragment and when the walk stopped.
    pub l4: Option<(u8, usize)>,
    /// Why the walk ended before L4 (`None` when it reached L4 or a later
    /// fragment).
    pub stop: Option<Stop>,
}

/// The fields that tell flows apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Transport protocol when the walk reached it, else the IP header's
    /// protocol (IPv6: first next header).
    pub proto: u8,
    /// Source port (TCP, UDP, DCCP, SCTP, UDP-Lite with 4 header bytes in
    /// the frame), else 0.
    pub sport: u16,
    /// Destination port, as `sport`.
    pub dport: u16,
}

/// Protocols whose header starts with a source and a destination port.
pub fn has_ports(p: u8) -> bool {
    matches!(
        p,
        proto::TCP | proto::UDP | proto::DCCP | proto::SCTP | proto::UDPLITE
    )
}

/// Walks an Ethernet frame (without FCS).
pub fn walk_ethernet(frame: &[u8]) -> Walk<'_> {
    let mut w = Walk::new(frame);
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return w.stopped(Stop::Truncated);
    };
    let tags = match eth.tags() {
        Ok(t) => t,
        Err(TagsError::Truncated { seen }) => {
            w.vlan_tags = seen;
            return w.stopped(Stop::Truncated);
        }
        Err(TagsError::TooDeep) => {
            w.vlan_tags = MAX_VLAN_TAGS;
            return w.stopped(Stop::TooDeep);
        }
    };
    w.vlan_tags = tags.count;
    w.ethertype = Some(tags.ethertype);
    w.l2_len = tags.payload_at;
    let mut at = tags.payload_at;
    let mut ethertype = tags.ethertype;
    if matches!(ethertype, ETHERTYPE_MPLS | ETHERTYPE_MPLS_MC) {
        match w.mpls(at) {
            Ok(ip_at) => at = ip_at,
            Err(stop) => return w.stopped(stop),
        }
        // No EtherType under a label stack: guess IP by its version.
        ethertype = match frame.get(at).map(|v| v >> 4) {
            Some(4) => ETHERTYPE_IPV4,
            Some(6) => ETHERTYPE_IPV6,
            Some(_) => return w.stopped(Stop::NotIp),
            None => return w.stopped(Stop::Truncated),
        };
    }
    match ethertype {
        ETHERTYPE_IPV4 => w.ipv4(at),
        ETHERTYPE_IPV6 => w.ipv6(at),
        _ => w.stopped(Stop::NotIp),
    }
}

/// Walks a frame that starts with an IP header (IPv4 or IPv6 by the
/// version nibble).
pub fn walk_ip(frame: &[u8]) -> Walk<'_> {
    walk_ip_at(frame, 0)
}

/// Walks from an IP header at `at` (after a link header the caller read).
pub fn walk_ip_at(frame: &[u8], at: usize) -> Walk<'_> {
    let mut w = Walk::new(frame);
    w.l2_len = at;
    match frame.get(at).map(|v| v >> 4) {
        Some(4) => w.ipv4(at),
        Some(6) => w.ipv6(at),
        Some(_) => w.stopped(Stop::NotIp),
        None => w.stopped(Stop::Truncated),
    }
}

impl<'a> Walk<'a> {
    fn new(frame: &'a [u8]) -> Self {
        Walk {
            frame,
            vlan_tags: 0,
            ethertype: None,
            mpls_labels: 0,
            l2_len: 0,
            ip: None,
            l4: None,
            stop: None,
        }
    }

    fn stopped(mut self, s: Stop) -> Self {
        self.stop = Some(s);
        self
    }

    /// Steps over an MPLS stack at `at` to its bottom; the offset after it.
    fn mpls(&mut self, mut at: usize) -> Result<usize, Stop> {
        while self.mpls_labels < MAX_MPLS_LABELS {
            let s = *self.frame.get(at + 2).ok_or(Stop::Truncated)?;
            self.mpls_labels += 1;
            at += 4;
            if s & 1 == 1 {
                return Ok(at);
            }
        }
        Err(Stop::TooDeep)
    }

    fn ipv4(mut self, at: usize) -> Self {
        let p = match Ipv4Packet::new_checked(&self.frame[at.min(self.frame.len())..]) {
            Ok(p) => p,
            Err(HeaderError::Malformed) if self.frame[at] >> 4 != 4 => {
                return self.stopped(Stop::NotIp)
            }
            Err(_) => return self.stopped(Stop::Truncated),
        };
        let fragment = p.is_fragment().then(|| Fragment {
            offset: p.frag_offset(),
            more: p.more_frags(),
        });
        self.ip = Some(IpInfo {
            kind: L3Kind::V4,
            offset: at,
            header_len: p.header_len(),
            ip_len: usize::from(p.total_len()),
            tos: p.tos(),
            src: p.src_addr().into(),
            dst: p.dst_addr().into(),
            protocol: p.protocol(),
            fragment,
            ext_headers: 0,
            saw_ah: false,
        });
        if p.frag_offset() == 0 {
            self.l4 = Some((p.protocol(), at + p.header_len()));
        }
        self
    }

    fn ipv6(mut self, at: usize) -> Self {
        let p = match Ipv6Packet::new_checked(&self.frame[at.min(self.frame.len())..]) {
            Ok(p) => p,
            Err(HeaderError::Malformed) => return self.stopped(Stop::NotIp),
            Err(HeaderError::Truncated) => return self.stopped(Stop::Truncated),
        };
        let mut ip = IpInfo {
            kind: L3Kind::V6,
            offset: at,
            header_len: ipv6::HEADER_LEN,
            ip_len: ipv6::HEADER_LEN + usize::from(p.payload_len()),
            tos: p.traffic_class(),
            src: p.src_addr().into(),
            dst: p.dst_addr().into(),
            protocol: p.next_header(),
            fragment: None,
            ext_headers: 0,
            saw_ah: false,
        };
        let end = ext_walk(self.frame, at, &mut ip);
        self.ip = Some(ip);
        match end {
            ExtEnd::L4(nh) => self.l4 = Some((nh, at + ip.header_len)),
            ExtEnd::LaterFragment => {}
            ExtEnd::Stop(s) => self.stop = Some(s),
        }
        self
    }

    /// The transport header and what follows, up to the end of the
    /// datagram or of the frame, whichever comes first.
    pub fn l4_bytes(&self) -> Option<&'a [u8]> {
        let (_, q) = self.l4?;
        let ip = self.ip?;
        let end = (ip.offset + ip.ip_len).min(self.frame.len());
        self.frame.get(q..end)
    }

    /// The UDP header at L4, if the walk reached one and it is whole.
    pub fn udp(&self) -> Option<UdpPacket<&'a [u8]>> {
        match self.l4? {
            (proto::UDP, _) => UdpPacket::new_checked(self.l4_bytes()?).ok(),
            _ => None,
        }
    }

    /// The transport payload: after the UDP header or the TCP header with
    /// its options, within the datagram and the frame.
    pub fn l4_payload(&self) -> Option<&'a [u8]> {
        let seg = self.l4_bytes()?;
        match self.l4?.0 {
            proto::UDP => UdpPacket::new_checked(seg).ok().map(|u| {
                let n = u.payload().len();
                &seg[8..8 + n]
            }),
            proto::TCP => seg.get(usize::from(seg.get(12)? >> 4) * 4..),
            _ => None,
        }
    }

    /// Addresses, protocol and ports; `None` without an IP header.
    pub fn five_tuple(&self) -> Option<FiveTuple> {
        let ip = self.ip?;
        let mut t = FiveTuple {
            src: ip.src,
            dst: ip.dst,
            proto: ip.protocol,
            sport: 0,
            dport: 0,
        };
        if let Some((p, q)) = self.l4 {
            t.proto = p;
            if let (true, Some(b)) = (has_ports(p), self.frame.get(q..q + 4)) {
                t.sport = u16::from_be_bytes([b[0], b[1]]);
                t.dport = u16::from_be_bytes([b[2], b[3]]);
            }
        }
        Some(t)
    }
}

enum ExtEnd {
    /// The upper-layer protocol; its header follows the extension headers.
    L4(u8),
    /// A fragment header with a non-zero offset: no transport header here.
    LaterFragment,
    Stop(Stop),
}

/// Steps over the extension headers after the IPv6 header at `at`,
/// counting them into `ip` (header length, fragment, AH).
fn ext_walk(frame: &[u8], at: usize, ip: &mut IpInfo) -> ExtEnd {
    let mut nh = ip.protocol;
    while ipv6::is_ext_header(nh) {
        if ip.ext_headers == MAX_IPV6_EXT_HEADERS {
            return ExtEnd::Stop(Stop::TooDeep);
        }
        let rest = frame.get(at + ip.header_len..).unwrap_or(&[]);
        let Ok(e) = Ipv6ExtHeader::new_checked(rest, nh) else {
            return ExtEnd::Stop(Stop::Truncated);
        };
        ip.ext_headers += 1;
        ip.header_len += e.header_len();
        ip.saw_ah |= nh == proto::AH;
        nh = e.next_header();
        if let Some((offset, more)) = e.fragment() {
            ip.fragment = Some(Fragment { offset, more });
            if offset != 0 {
                return ExtEnd::LaterFragment;
            }
        }
    }
    ExtEnd::L4(nh)
}
