//! Errors: every one names the byte offset in the input where the problem is.

use std::fmt;
use std::io;

/// A reading error: the byte offset (from the start of the input) and what is wrong there.
///
/// Displays as `offset 24: block length 7 is not a multiple of 4`.
#[derive(Debug)]
pub struct PcapError {
    /// Byte offset from the start of the input of the field or block at fault.
    pub offset: u64,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl PcapError {
    pub(crate) fn new(offset: u64, kind: ErrorKind) -> Self {
        PcapError { offset, kind }
    }

    /// True when the input simply ends early (a capture cut short, e.g. by a crash):
    /// everything returned before the error is valid.
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, ErrorKind::Truncated { .. })
    }
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for PcapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// What went wrong; see [`PcapError`] for where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The underlying reader failed.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// The first four bytes are no known magic.
    #[error("not a pcap or pcapng file (magic 0x{magic:08x})")]
    NotPcap {
        /// The first four bytes, read big-endian.
        magic: u32,
    },
    /// gzip magic: the caller has to decompress first.
    #[error("not a pcap or pcapng file: gzip-compressed data (magic 0x1f8b), decompress it first")]
    Gzip,
    /// The input ends inside a structure.
    #[error("file ends inside {what} (got {got} of {need} bytes)")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Bytes present.
        got: u64,
        /// Bytes needed.
        need: u64,
    },
    /// A file or section header with a version libpcap refuses (and so does this reader).
    #[error("unsupported {format} version {major}.{minor} ({accepted})")]
    UnsupportedVersion {
        /// "pcap" or "pcapng".
        format: &'static str,
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
        /// The versions that are read, e.g. "libpcap reads 1.0 and 1.2".
        accepted: &'static str,
    },
    /// A classic pcap link-type field with bits set that must be zero (bits 16-25), which
    /// libpcap refuses.
    #[error("link-type field 0x{field:08x} has reserved bits 0x{reserved:08x} set (bits 16-25 must be 0; libpcap refuses such files too)")]
    ReservedLinkTypeBits {
        /// The whole link-type field.
        field: u32,
        /// The reserved bits that are set.
        reserved: u32,
    },
    /// A classic pcap record claims more captured bytes than allowed.
    #[error("packet record caplen {caplen} exceeds the limit {limit} (max of snaplen and 262144, capped by the reader's block limit)")]
    CaplenTooLarge {
        /// Claimed captured length.
        caplen: u32,
        /// The limit in force.
        limit: u32,
    },
    /// A pcapng block whose total length is not a multiple of 4.
    #[error("block length {len} is not a multiple of 4")]
    BlockLenNotAligned {
        /// Block total length.
        len: u32,
    },
    /// A pcapng block too short for its type.
    #[error("{block} length {len} is too small (minimum {min})")]
    BlockTooShort {
        /// Block name.
        block: &'static str,
        /// Block total length.
        len: u32,
        /// Minimum for that block type.
        min: u32,
    },
    /// A pcapng block longer than the reader's limit.
    #[error("block length {len} exceeds the limit {limit}")]
    BlockTooLong {
        /// Block total length.
        len: u32,
        /// Reader limit.
        limit: u32,
    },
    /// The trailing copy of the block length differs from the leading one.
    #[error("trailing block length {trailer} does not match block length {len}")]
    TrailerMismatch {
        /// Leading length.
        len: u32,
        /// Trailing length.
        trailer: u32,
    },
    /// Section header block with an invalid byte-order magic.
    #[error("section header block has bad byte-order magic 0x{0:08x} (expected 0x1a2b3c4d either way round)")]
    BadByteOrder(u32),
    /// A packet or statistics block names an interface the section has not described.
    #[error("{block} refers to interface {id}, but the section describes {count} interface(s)")]
    UnknownInterface {
        /// Block name.
        block: &'static str,
        /// Interface id within the section.
        id: u32,
        /// Interfaces described so far in the section.
        count: u32,
    },
    /// Section and interface descriptions (with their option strings) would
    /// take more memory than the reader keeps for them.
    #[error("{block} would take the file's section and interface descriptions past {limit} bytes of memory (a capture has a few; this file describes {kept} so far)")]
    TooMuchMetadata {
        /// Block name.
        block: &'static str,
        /// Descriptions kept so far (sections plus interfaces).
        kept: usize,
        /// The reader's limit in bytes.
        limit: usize,
    },
    /// The captured length runs past the end of its block.
    #[error("{block} captured length {caplen} exceeds the {available} bytes the block holds")]
    CaplenExceedsBlock {
        /// Block name.
        block: &'static str,
        /// Claimed captured length.
        caplen: u32,
        /// Bytes available for packet data.
        available: u32,
    },
    /// An option runs past the end of its block.
    #[error("{block} option {code} of length {len} runs past the end of the block")]
    OptionOverrun {
        /// Block name.
        block: &'static str,
        /// Option code.
        code: u16,
        /// Option length.
        len: u16,
    },
    /// An option has the wrong length for its code.
    #[error("{block} option {code} has length {len}, expected {expected}")]
    BadOptionLength {
        /// Block name.
        block: &'static str,
        /// Option code.
        code: u16,
        /// Option length.
        len: u16,
        /// Expected length.
        expected: u16,
    },
}
