//! IPv6 (RFC 8200): the fixed header and the extension headers a walk
//! steps over.

use std::net::Ipv6Addr;

use super::{array, proto, HeaderError};

/// The fixed header.
pub const HEADER_LEN: usize = 40;

/// A view of an IPv6 packet.
#[derive(Debug, Clone, Copy)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// The view, if `buf` holds the 40-byte header with version 6. The
    /// payload length is not checked against the buffer.
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        let b = buf.as_ref();
        match b.first() {
            None => return Err(HeaderError::Truncated),
            Some(v) if v >> 4 != 6 => return Err(HeaderError::Malformed),
            Some(_) => {}
        }
        if b.len() < HEADER_LEN {
            return Err(HeaderError::Truncated);
        }
        Ok(Ipv6Packet { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (u16::from_be_bytes([self.b()[0], self.b()[1]]) >> 4) as u8
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        u32::from_be_bytes([0, self.b()[1] & 0x0f, self.b()[2], self.b()[3]])
    }

    /// Payload length: extension headers and upper layer.
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([self.b()[4], self.b()[5]])
    }

    /// The header after this one.
    pub fn next_header(&self) -> u8 {
        self.b()[6]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.b()[7]
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(array::<16>(self.b(), 8).unwrap_or_default())
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(array::<16>(self.b(), 24).unwrap_or_default())
    }
}

/// Whether `nh` names an extension header a walk steps over.
pub fn is_ext_header(nh: u8) -> bool {
    matches!(
        nh,
        proto::HOPOPT | proto::ROUTING | proto::FRAGMENT | proto::AH | proto::DSTOPTS
    )
}

/// A view of one extension header of kind `kind` (hop-by-hop, routing,
/// fragment, destination options or authentication).
#[derive(Debug, Clone, Copy)]
pub struct Ipv6ExtHeader<T: AsRef<[u8]>> {
    buf: T,
    kind: u8,
}

impl<T: AsRef<[u8]>> Ipv6ExtHeader<T> {
    /// The view, if `kind` is an extension header and `buf` holds all of it.
    pub fn new_checked(buf: T, kind: u8) -> Result<Self, HeaderError> {
        if !is_ext_header(kind) {
            return Err(HeaderError::Malformed);
        }
        let b = buf.as_ref();
        let len = match (kind, b.get(1)) {
            (_, None) => return Err(HeaderError::Truncated),
            (proto::FRAGMENT, _) => 8,
            (proto::AH, Some(&l)) => (usize::from(l) + 2) * 4,
            (_, Some(&l)) => (usize::from(l) + 1) * 8,
        };
        if b.len() < len {
            return Err(HeaderError::Truncated);
        }
        Ok(Ipv6ExtHeader { buf, kind })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// The kind this view was made for.
    pub fn kind(&self) -> u8 {
        self.kind
    }

    /// The header after this one.
    pub fn next_header(&self) -> u8 {
        self.b()[0]
    }

    /// Length of this header in bytes.
    pub fn header_len(&self) -> usize {
        match self.kind {
            proto::FRAGMENT => 8,
            proto::AH => (usize::from(self.b()[1]) + 2) * 4,
            _ => (usize::from(self.b()[1]) + 1) * 8,
        }
    }

    /// A fragment header's offset (8-byte units) and M flag.
    pub fn fragment(&self) -> Option<(u16, bool)> {
        (self.kind == proto::FRAGMENT).then(|| {
            let w = u16::from_be_bytes([self.b()[2], self.b()[3]]);
            (w >> 3, w & 1 != 0)
        })
    }
}
