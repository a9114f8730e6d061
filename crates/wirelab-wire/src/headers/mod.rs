//! Zero-copy views of the L2/L3/L4 headers wirelab reads, and the one walk
//! from a frame to its transport header that every reader of frames calls.
//!
//! The shape is smoltcp's `wire` module: a view wraps any `T: AsRef<[u8]>`,
//! `new_checked` checks the lengths once, and after that no accessor can
//! panic. Checks cover the header only, never a length field against the
//! buffer: captures cut by a snap length and Ethernet padding make the
//! buffer shorter or longer than the datagram, and each reader decides what
//! that means for it ([`walk`] reports both lengths).
//!
//! - [`eth`]: Ethernet with any number (up to [`MAX_VLAN_TAGS`]) of 802.1Q,
//!   802.1ad and 0x9100 tags, and MPLS label stacks;
//! - [`ipv4`]: IPv4 with options and the fragment fields;
//! - [`ipv6`]: IPv6 and its extension headers (hop-by-hop, routing,
//!   fragment, destination options, authentication);
//! - [`udp`]: UDP, with its length field;
//! - [`walk`]: frame to L4 header, payload and 5-tuple.

pub mod eth;
pub mod ipv4;
pub mod ipv6;
pub mod udp;
pub mod walk;

#[cfg(test)]
mod tests;

pub use eth::{is_vlan_tpid, EthernetFrame, EthernetRepr};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6ExtHeader, Ipv6Packet};
pub use udp::{UdpPacket, UdpRepr};
pub use walk::{
    has_ports, walk_ethernet, walk_ip, walk_ip_at, FiveTuple, Fragment, IpInfo, L3Kind, Stop, Walk,
};

/// Why a view refuses a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The buffer ends inside the header.
    #[error("header cut short")]
    Truncated,
    /// A field contradicts the header's own layout (version, header length).
    #[error("malformed header")]
    Malformed,
}

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of an MPLS unicast label stack.
pub const ETHERTYPE_MPLS: u16 = 0x8847;
/// EtherType of an MPLS multicast label stack.
pub const ETHERTYPE_MPLS_MC: u16 = 0x8848;

/// IP protocol numbers.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// DCCP.
    pub const DCCP: u8 = 33;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;
    /// UDP-Lite.
    pub const UDPLITE: u8 = 136;
    /// IPv6 hop-by-hop options.
    pub const HOPOPT: u8 = 0;
    /// IPv6 routing header.
    pub const ROUTING: u8 = 43;
    /// IPv6 fragment header.
    pub const FRAGMENT: u8 = 44;
    /// IP authentication header.
    pub const AH: u8 = 51;
    /// IPv6 destination options.
    pub const DSTOPTS: u8 = 60;
}

/// Largest number of VLAN tags [`walk`] steps over; a deeper stack is
/// reported as [`Stop::TooDeep`].
pub const MAX_VLAN_TAGS: u8 = 8;
/// Largest MPLS label stack [`walk`] steps over.
pub const MAX_MPLS_LABELS: u8 = 16;
/// Largest number of IPv6 extension headers [`walk`] steps over.
pub const MAX_IPV6_EXT_HEADERS: u8 = 8;

/// Big-endian u16 at `at`, if both bytes are there.
pub(crate) fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Fixed-size array at `at`, if all its bytes are there.
pub(crate) fn array<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
