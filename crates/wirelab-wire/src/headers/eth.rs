//! Ethernet II: MAC addresses, EtherType, and the VLAN tags after them.

use super::{be16, HeaderError, MAX_VLAN_TAGS};

/// Destination and source MAC and the EtherType.
pub const HEADER_LEN: usize = 14;
/// One VLAN tag: TPID and TCI.
pub const TAG_LEN: usize = 4;

/// TPIDs read as VLAN tags: 802.1Q (0x8100), 802.1ad (0x88a8) and the
/// pre-standard QinQ 0x9100.
pub fn is_vlan_tpid(t: u16) -> bool {
    matches!(t, 0x8100 | 0x88a8 | 0x9100)
}

/// A view of an Ethernet frame (without FCS).
#[derive(Debug, Clone, Copy)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buf: T,
}

/// Where the tags end: how many there are, the EtherType after them and
/// the offset of what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tags {
    /// VLAN tags directly after the MAC addresses.
    pub count: u8,
    /// EtherType after the last tag.
    pub ethertype: u16,
    /// Offset of the payload (after the last tag's EtherType).
    pub payload_at: usize,
}

/// Why the tag walk stopped short of the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagsError {
    /// The frame ends inside the tags; `seen` TPIDs were read.
    Truncated { seen: u8 },
    /// More than [`MAX_VLAN_TAGS`] tags.
    TooDeep,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// The view, if `buf` holds the 14-byte header.
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        if buf.as_ref().len() < HEADER_LEN {
            return Err(HeaderError::Truncated);
        }
        Ok(EthernetFrame { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Destination MAC.
    pub fn dst_addr(&self) -> [u8; 6] {
        let b = self.b();
        [b[0], b[1], b[2], b[3], b[4], b[5]]
    }

    /// Source MAC.
    pub fn src_addr(&self) -> [u8; 6] {
        let b = self.b();
        [b[6], b[7], b[8], b[9], b[10], b[11]]
    }

    /// The EtherType after the MAC addresses (a TPID when tagged).
    pub fn ethertype(&self) -> u16 {
        u16::from_be_bytes([self.b()[12], self.b()[13]])
    }

    /// Whether the frame carries at least one VLAN tag.
    pub fn is_tagged(&self) -> bool {
        is_vlan_tpid(self.ethertype())
    }

    /// Steps over the VLAN tags (at most [`MAX_VLAN_TAGS`]).
    pub fn tags(&self) -> Result<Tags, TagsError> {
        let b = self.b();
        let (mut count, mut ethertype, mut at) = (0u8, self.ethertype(), 12);
        while is_vlan_tpid(ethertype) {
            if count == MAX_VLAN_TAGS {
                return Err(TagsError::TooDeep);
            }
            count += 1;
            at += TAG_LEN;
            ethertype = be16(b, at).ok_or(TagsError::Truncated { seen: count })?;
        }
        Ok(Tags {
            count,
            ethertype,
            payload_at: at + 2,
        })
    }

    /// The (TPID, TCI) of tag `i` (0: outermost), if the tag walk reaches
    /// the payload and the frame has that many tags.
    pub fn tag(&self, i: u8) -> Option<(u16, u16)> {
        if i >= self.tags().ok()?.count {
            return None;
        }
        let at = 12 + TAG_LEN * usize::from(i);
        Some((be16(self.b(), at)?, be16(self.b(), at + 2)?))
    }
}

/// An Ethernet header in owned form: addresses, tags, EtherType.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// VLAN tags, outermost first: (TPID, TCI).
    pub tags: Vec<(u16, u16)>,
    /// EtherType of the payload.
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Reads the header and its tags.
    pub fn parse<T: AsRef<[u8]>>(f: &EthernetFrame<T>) -> Result<Self, HeaderError> {
        let t = f.tags().map_err(|e| match e {
            TagsError::Truncated { .. } => HeaderError::Truncated,
            TagsError::TooDeep => HeaderError::Malformed,
        })?;
        Ok(EthernetRepr {
            dst: f.dst_addr(),
            src: f.src_addr(),
            tags: (0..t.count).filter_map(|i| f.tag(i)).collect(),
            ethertype: t.ethertype,
        })
    }

    /// Bytes [`EthernetRepr::emit`] writes.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + TAG_LEN * self.tags.len()
    }

    /// Appends the header to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.dst);
        out.extend_from_slice(&self.src);
        for (tpid, tci) in &self.tags {
            out.extend_from_slice(&tpid.to_be_bytes());
            out.extend_from_slice(&tci.to_be_bytes());
        }
        out.extend_from_slice(&self.ethertype.to_be_bytes());
    }
}
