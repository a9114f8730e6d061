//! pcap and pcapng reading and writing, shared by `capture` (writes), `replay` and
//! `analyze` (read).
//!
//! # Why not an existing crate
//!
//! `pcap-file` 2.x (the usual choice) was considered. Its errors carry no byte offset and
//! little detail (`InvalidField(&'static str)`), pcapng `if_tsresol` is only honoured in the
//! 3.0 release candidates (which need a newer Rust than this workspace), and its block API
//! parses options into vectors per block. `pcap-parser` is nom-based with errors that do not
//! name the offset either. What wirelab needs is small and precise: both pcap resolutions and
//! byte orders; pcapng with several sections and interfaces, decimal and binary `if_tsresol`,
//! `if_tsoffset`, obsolete packet blocks (type 2), simple packet blocks, interface statistics;
//! errors that say *where* and *what*; never a panic and no unbounded allocation on hostile
//! input; streaming from any [`std::io::Read`] into one reused buffer. That fits in a few
//! hundred lines, so it is written here, with `forbid(unsafe_code)` and no I/O beyond
//! `Read`/`Write`.
//!
//! # Example
//!
//! ```
//! use wirelab_pcap::{PcapReader, PcapngWriter, StatsCounters, LINKTYPE_ETHERNET};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Write (to a `BufWriter<File>` in real use).
//! let mut w = PcapngWriter::new(Vec::new())?;
//! let eth0 = w.add_interface("eth0", LINKTYPE_ETHERNET, 262_144)?;
//! w.write_packet(eth0, 1_700_000_000_123_456_789, 60, &[0u8; 60])?;
//! let counters = StatsCounters { ifrecv: Some(1), ifdrop: Some(0), ..Default::default() };
//! w.write_interface_stats(eth0, 1_700_000_001_000_000_000, &counters)?;
//! let bytes = w.into_inner()?;
//!
//! // Read (from a `BufReader<File>` in real use); pcap or pcapng, chosen by the magic.
//! let mut r = PcapReader::new(&bytes[..])?;
//! while let Some(p) = r.next_packet()? {
//!     assert_eq!((p.ts_ns, p.data.len(), p.linktype), (1_700_000_000_123_456_789, 60, 1));
//! }
//! assert_eq!(r.interfaces()[0].name.as_deref(), Some("eth0"));
//! assert_eq!(r.interface_stats()[0].counters.ifrecv, Some(1));
//! # Ok(()) }
//! ```
//!
//! Errors name the byte offset and the problem, e.g.
//! `offset 48: enhanced packet block refers to interface 3, but the section describes 1 interface(s)`.
//!
//! Timestamps are `u64` nanoseconds since the Unix epoch (enough until 2554). Classic pcap
//! fractions of a second that are out of range (≥ 1 s, as writers that put nanoseconds into a
//! microsecond file produce) are counted and flagged; by default they simply add to the
//! seconds ([`FractionPolicy`] offers the alternatives). pcapng resolutions finer than 1 ns
//! are truncated.
//!
//! Headers are checked as libpcap checks them: classic pcap versions 2.0 to 2.4 (and DG/UX's
//! 543.0), link-type fields with bits 16-25 clear, pcapng 1.0 or 1.2 in the first section.
//! An FCS the file announces is reported per packet ([`Packet::fcs_len`],
//! [`Packet::without_fcs`]), never stripped by the reader itself.
//!
//! # Writing
//!
//! [`PcapngWriter`] writes a section header (`shb_userappl` `"wirelab <version>"`), interface
//! description blocks (`if_name`, `if_tsresol` 9 by default), enhanced packet blocks and
//! interface statistics blocks (`isb_ifrecv`, `isb_ifdrop`, `isb_osdrop`, ...).
//! [`PcapWriter`] writes classic pcap with microsecond or nanosecond magic.
//! [`RecordEncoder`] encodes the same packet records (pcap records, EPBs without options)
//! into a caller's buffer, one or a batch at a time, for writers that do their own I/O.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod encode;
mod error;
mod read;
mod ts;
mod write;

pub use encode::{RecordEncoder, RecordRef};
pub use error::{ErrorKind, PcapError};
pub use read::{
    ByteOrder, Format, Interface, InterfaceStats, OptionIter, Options, OwnedPacket, Packet,
    PcapHeader, PcapReader, Section, StatsCounters, DEFAULT_MAX_BLOCK,
};
pub use ts::{FractionPolicy, TsResolution};
pub use write::{
    InterfaceOptions, PacketOptions, PcapPrecision, PcapWriter, PcapngWriter, SectionOptions,
    DEFAULT_USERAPPL,
};

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// LINKTYPE_RAW (raw IPv4/IPv6).
pub const LINKTYPE_RAW: u16 = 101;
/// LINKTYPE_LINUX_SLL.
pub const LINKTYPE_LINUX_SLL: u16 = 113;

#[cfg(test)]
mod tests;
