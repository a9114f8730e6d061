//! IPv4 (RFC 791): the fixed header, options, and the fragment fields.

use std::net::Ipv4Addr;

use super::{array, HeaderError};

/// The header without options.
pub const MIN_HEADER_LEN: usize = 20;

/// A view of an IPv4 packet.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// The view, if `buf` holds a whole header: version 4, an IHL of at
    /// least 5 and all of its options. The total length is not checked
    /// against the buffer ([`Ipv4Packet::payload`] is bounded by both).
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        let b = buf.as_ref();
        let Some(&vihl) = b.first() else {
            return Err(HeaderError::Truncated);
        };
        let hl = usize::from(vihl & 0x0f) * 4;
        if vihl >> 4 != 4 || hl < MIN_HEADER_LEN {
            return Err(HeaderError::Malformed);
        }
        if b.len() < hl {
            return Err(HeaderError::Truncated);
        }
        Ok(Ipv4Packet { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.b()[at], self.b()[at + 1]])
    }

    /// Header length in bytes, options included (20 to 60).
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[0] & 0x0f) * 4
    }

    /// DSCP and ECN (the old TOS byte).
    pub fn tos(&self) -> u8 {
        self.b()[1]
    }

    /// Total length: header and payload, as the header says.
    pub fn total_len(&self) -> u16 {
        self.u16_at(2)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        self.u16_at(4)
    }

    /// Don't fragment.
    pub fn dont_frag(&self) -> bool {
        self.b()[6] & 0x40 != 0
    }

    /// More fragments follow.
    pub fn more_frags(&self) -> bool {
        self.b()[6] & 0x20 != 0
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        self.u16_at(6) & 0x1fff
    }

    /// Part of a fragmented datagram (first or later).
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.b()[8]
    }

    /// Transport protocol.
    pub fn protocol(&self) -> u8 {
        self.b()[9]
    }

    /// Header checksum.
    pub fn checksum(&self) -> u16 {
        self.u16_at(10)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(array::<4>(self.b(), 12).unwrap_or_default())
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(array::<4>(self.b(), 16).unwrap_or_default())
    }

    /// The options (empty for IHL 5).
    pub fn options(&self) -> &[u8] {
        &self.b()[MIN_HEADER_LEN..self.header_len()]
    }

    /// The payload: after the header, up to the total length or the end
    /// of the buffer, whichever comes first.
    pub fn payload(&self) -> &[u8] {
        let end = usize::from(self.total_len()).min(self.b().len());
        self.b().get(self.header_len()..end).unwrap_or(&[])
    }
}

/// An IPv4 header without options, in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Transport protocol.
    pub protocol: u8,
    /// DSCP and ECN.
    pub tos: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// Don't fragment.
    pub dont_frag: bool,
    /// More fragments.
    pub more_frags: bool,
    /// Fragment offset in 8-byte units (13 bits).
    pub frag_offset: u16,
    /// Payload length (the total length less the header).
    pub payload_len: u16,
}

impl Ipv4Repr {
    /// Reads the header fields (options are skipped, not kept).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self, HeaderError> {
        let payload_len = usize::from(p.total_len())
            .checked_sub(p.header_len())
            .ok_or(HeaderError::Malformed)?;
        Ok(Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            tos: p.tos(),
            ttl: p.ttl(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            more_frags: p.more_frags(),
            frag_offset: p.frag_offset(),
            payload_len: payload_len as u16,
        })
    }

    /// Appends a 20-byte header with its checksum to `out`; the total
    /// length saturates at 65535.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let at = out.len();
        let flags = u16::from(self.dont_frag) << 14 | u16::from(self.more_frags) << 13;
        out.extend_from_slice(&[0x45, self.tos]);
        out.extend_from_slice(&self.payload_len.saturating_add(20).to_be_bytes());
        out.extend_from_slice(&self.ident.to_be_bytes());
        out.extend_from_slice(&(flags | self.frag_offset & 0x1fff).to_be_bytes());
        out.extend_from_slice(&[self.ttl, self.protocol, 0, 0]);
        out.extend_from_slice(&self.src.octets());
        out.extend_from_slice(&self.dst.octets());
        let c = crate::rewrite::csum::finish(crate::rewrite::csum::sum(&out[at..], 0));
        out[at + 10..at + 12].copy_from_slice(&c.to_be_bytes());
    }
}
