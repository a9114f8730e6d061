//! UDP (RFC 768).

use super::HeaderError;

/// The UDP header.
pub const HEADER_LEN: usize = 8;

/// A view of a UDP datagram.
#[derive(Debug, Clone, Copy)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// The view, if `buf` holds the 8-byte header and its length field
    /// counts at least the header. The length is not checked against the
    /// buffer, which a snap length may have cut.
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(HeaderError::Truncated);
        }
        if usize::from(u16::from_be_bytes([b[4], b[5]])) < HEADER_LEN {
            return Err(HeaderError::Malformed);
        }
        Ok(UdpPacket { buf })
    }

    fn u16_at(&self, at: usize) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.u16_at(0)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.u16_at(2)
    }

    /// Length: header and payload (at least 8).
    pub fn len(&self) -> u16 {
        self.u16_at(4)
    }

    /// Never true: the length counts the header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Checksum (0: none, over IPv4).
    pub fn checksum(&self) -> u16 {
        self.u16_at(6)
    }

    /// The payload in the buffer: up to the length field or the end of
    /// the buffer, whichever comes first.
    pub fn payload(&self) -> &[u8] {
        let b = self.buf.as_ref();
        &b[HEADER_LEN..usize::from(self.len()).min(b.len())]
    }
}

/// A UDP header in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length (the length field less the header).
    pub payload_len: u16,
    /// Checksum as carried.
    pub checksum: u16,
}

impl UdpRepr {
    /// Reads the header.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> Self {
        UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() - HEADER_LEN as u16,
            checksum: p.checksum(),
        }
    }

    /// Appends the 8-byte header to `out` (the length saturates at 65535).
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.extend_from_slice(&self.payload_len.saturating_add(8).to_be_bytes());
        out.extend_from_slice(&self.checksum.to_be_bytes());
    }
}
