//! Streaming reader for classic pcap and pcapng.

use std::io::{self, Read};

use crate::error::{ErrorKind, PcapError};
use crate::ts::{apply_offset, FractionPolicy, TsResolution};

pub(crate) const PCAP_MAGIC_MICRO: u32 = 0xa1b2_c3d4;
pub(crate) const PCAP_MAGIC_NANO: u32 = 0xa1b2_3c4d;
/// Alexey Kuznetzov's "modified" pcap: 8 extra bytes per record header.
const PCAP_MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
pub(crate) const BT_SHB: u32 = 0x0a0d_0d0a;
pub(crate) const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
pub(crate) const BT_IDB: u32 = 1;
pub(crate) const BT_OPB: u32 = 2;
pub(crate) const BT_SPB: u32 = 3;
pub(crate) const BT_ISB: u32 = 5;
pub(crate) const BT_EPB: u32 = 6;

/// Default cap on one pcapng block or pcap record (256 MiB).
pub const DEFAULT_MAX_BLOCK: u32 = 256 << 20;

/// Memory the reader keeps for section and interface descriptions and for
/// interface statistics, option strings included. The file, not the user,
/// decides how many such blocks there are, so they are budgeted: past it,
/// a description is an error (packets need it) and a statistics block is
/// counted in [`PcapReader::stats_not_kept`] instead of kept.
pub const METADATA_BUDGET: usize = 64 << 20;
/// libpcap's and Wireshark's usual maximum packet size; a pcap record may always be this big,
/// even when the header snaplen is smaller.
const STANDARD_MAX_PACKET: u32 = 262_144;
/// Reads at most this big go into the reused buffer directly; bigger ones grow it as data
/// actually arrives, so a hostile length cannot make us allocate memory the input does not back.
const DIRECT_READ: usize = 1 << 20;

/// Container format of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap format.
    Pcap,
    /// pcapng.
    Pcapng,
}

/// Byte order of a file or section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
}

/// The file header of a classic pcap file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapHeader {
    /// Byte order of the file.
    pub byte_order: ByteOrder,
    /// Major version (2).
    pub version_major: u16,
    /// Minor version (normally 4).
    pub version_minor: u16,
    /// Microseconds (magic 0xa1b2c3d4) or nanoseconds (0xa1b23c4d).
    pub resolution: TsResolution,
    /// Kuznetzov's modified format (magic 0xa1b2cd34), 24-byte record headers.
    pub modified: bool,
    /// GMT offset field (always 0 in practice; not applied).
    pub thiszone: i32,
    /// Timestamp accuracy field (always 0 in practice).
    pub sigfigs: u32,
    /// Snapshot length.
    pub snaplen: u32,
    /// The raw link-type field (link type in the low 16 bits, FCS information in bits 26-31).
    pub linktype_field: u32,
}

/// A pcapng section (one section header block and what follows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Index of the section in the file, from 0.
    pub index: u32,
    /// Byte offset of the section header block.
    pub offset: u64,
    /// Byte order of the section.
    pub byte_order: ByteOrder,
    /// Major version (1).
    pub version_major: u16,
    /// Minor version (0).
    pub version_minor: u16,
    /// Section length field (-1 = not given).
    pub section_length: i64,
    /// `shb_hardware`.
    pub hardware: Option<String>,
    /// `shb_os`.
    pub os: Option<String>,
    /// `shb_userappl`.
    pub userappl: Option<String>,
    /// `opt_comment` options.
    pub comments: Vec<String>,
    /// Index into [`PcapReader::interfaces`] of this section's interface 0.
    pub first_interface: u32,
}

/// A capture interface: one pcapng interface description block, or the pcap file header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Section the interface belongs to (0 for classic pcap).
    pub section: u32,
    /// Interface id within its section (what pcapng blocks refer to).
    pub id_in_section: u32,
    /// Byte offset of the interface description block (0 for classic pcap).
    pub offset: u64,
    /// Link type (LINKTYPE_*).
    pub linktype: u16,
    /// Snapshot length (0 = unlimited in pcapng).
    pub snaplen: u32,
    /// `if_name`.
    pub name: Option<String>,
    /// `if_description`.
    pub description: Option<String>,
    /// `if_os`.
    pub os: Option<String>,
    /// `if_tsresol` (default microseconds), or the pcap magic's resolution.
    pub tsresol: TsResolution,
    /// `if_tsoffset`, seconds added to every timestamp (already applied to `Packet::ts_ns`).
    pub tsoffset_s: i64,
    /// FCS length: in bytes from a classic pcap link-type field's FCS bits (bit 26 set, bits
    /// 28-31 the length in 16-bit words); for pcapng the raw `if_fcslen` value, whose unit
    /// writers disagree on (the specification says bits), so it is reported but not used for
    /// [`Packet::fcs_len`].
    pub fcs_len: Option<u8>,
    /// `opt_comment` options.
    pub comments: Vec<String>,
}

/// Counters of an interface statistics block; each is present only if the block had it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsCounters {
    /// `isb_starttime`, ns since the epoch.
    pub start_ns: Option<u64>,
    /// `isb_endtime`, ns since the epoch.
    pub end_ns: Option<u64>,
    /// `isb_ifrecv`: packets received by the interface.
    pub ifrecv: Option<u64>,
    /// `isb_ifdrop`: packets dropped by the interface (no buffers).
    pub ifdrop: Option<u64>,
    /// `isb_filteraccept`: packets accepted by the filter.
    pub filter_accept: Option<u64>,
    /// `isb_osdrop`: packets dropped by the operating system.
    pub osdrop: Option<u64>,
    /// `isb_usrdeliv`: packets delivered to the user.
    pub usrdeliv: Option<u64>,
}

/// One interface statistics block as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceStats {
    /// Index into [`PcapReader::interfaces`].
    pub interface: u32,
    /// Byte offset of the block.
    pub offset: u64,
    /// Block timestamp, ns since the epoch (0 if not representable).
    pub ts_ns: u64,
    /// The counters.
    pub counters: StatsCounters,
    /// `opt_comment` options.
    pub comments: Vec<String>,
}

/// Options of a packet block, parsed lazily from the block without copying.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    raw: &'a [u8],
    big: bool,
}

impl<'a> Options<'a> {
    /// Iterate over (code, value) pairs, stopping at `opt_endofopt`.
    pub fn iter(&self) -> OptionIter<'a> {
        OptionIter {
            raw: self.raw,
            big: self.big,
            pos: 0,
        }
    }

    /// True if the block had no options.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// All `opt_comment` values that are valid UTF-8 (trailing NULs stripped).
    pub fn comments(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.iter()
            .filter(|(c, _)| *c == 1)
            .filter_map(|(_, v)| std::str::from_utf8(strip_nuls(v)).ok())
    }

    /// The first `opt_comment`.
    pub fn comment(&self) -> Option<&'a str> {
        self.comments().next()
    }

    /// `epb_flags` / `pack_flags` (option 2, 4 bytes).
    pub fn flags(&self) -> Option<u32> {
        let big = self.big;
        self.iter()
            .find(|(c, v)| *c == 2 && v.len() == 4)
            .map(|(_, v)| rd32(v, 0, big))
    }
}

/// Iterator over the options of a block.
#[derive(Debug, Clone)]
pub struct OptionIter<'a> {
    raw: &'a [u8],
    big: bool,
    pos: usize,
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.raw.get(self.pos..)?;
        if rest.len() < 4 {
            return None;
        }
        let code = rd16(rest, 0, self.big);
        let len = usize::from(rd16(rest, 2, self.big));
        if code == 0 {
            self.pos = self.raw.len();
            return None;
        }
        let value = rest.get(4..4 + len)?;
        self.pos += 4 + pad4(len);
        Some((code, value))
    }
}

/// A packet, borrowed from the reader's buffer until the next call.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// Timestamp in ns since the Unix epoch, converted from the interface's resolution and
    /// offset (finer-than-ns resolutions are truncated). 0 when `has_ts` is false.
    pub ts_ns: u64,
    /// False for pcapng simple packet blocks, which carry no timestamp, and for timestamps that
    /// u64 ns since the epoch cannot express (before 1970 or after 2554; see
    /// [`PcapReader::bad_timestamps`]).
    pub has_ts: bool,
    /// Length of the packet on the wire (may exceed `data.len()` when sliced).
    pub orig_len: u32,
    /// Index into [`PcapReader::interfaces`] (0 for classic pcap). In multi-section pcapng files
    /// this is global across sections; see [`Interface::id_in_section`].
    pub interface: u32,
    /// Link type of that interface.
    pub linktype: u16,
    /// Captured bytes.
    pub data: &'a [u8],
    /// Byte offset of the record or block in the input.
    pub offset: u64,
    /// Drop count since the previous packet (`epb_dropcount`, or an obsolete packet block's
    /// `drops_count` unless 0xffff).
    pub dropcount: Option<u64>,
    /// The block's options (empty for classic pcap and simple packet blocks).
    pub options: Options<'a>,
    /// Classic pcap: the sub-second field was one second or more; `ts_ns` follows the
    /// reader's [`FractionPolicy`].
    pub bad_fraction: bool,
    /// Bytes of frame check sequence at the end of the frame, as the file announces them (a
    /// classic pcap link-type field's FCS bits, or the FCS length of an EPB's flags word);
    /// 0 when none is announced.
    pub fcs_len: u8,
}

impl<'a> Packet<'a> {
    /// The frame without the FCS the file announces ([`fcs_len`](Self::fcs_len)), and the
    /// original length less it. A frame cut short by the snaplen loses only what it holds of
    /// the FCS; an original length below the captured one (a broken record) counts as the
    /// captured one.
    pub fn without_fcs(&self) -> (&'a [u8], u32) {
        let fcs = u32::from(self.fcs_len);
        let caplen = self.caplen();
        let keep = caplen.min(self.orig_len.max(caplen).saturating_sub(fcs));
        (
            &self.data[..keep as usize],
            self.orig_len.saturating_sub(fcs),
        )
    }

    /// Captured length (`data.len()`).
    pub fn caplen(&self) -> u32 {
        // data comes from a record of at most u32::MAX bytes.
        u32::try_from(self.data.len()).unwrap_or(u32::MAX)
    }

    /// Copy into an owned packet.
    pub fn to_owned_packet(&self) -> OwnedPacket {
        OwnedPacket {
            ts_ns: self.ts_ns,
            has_ts: self.has_ts,
            orig_len: self.orig_len,
            interface: self.interface,
            linktype: self.linktype,
            data: self.data.to_vec(),
            offset: self.offset,
            comment: self.options.comment().map(str::to_owned),
        }
    }
}

/// An owned copy of a [`Packet`] (for tests, or to keep a trace in memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPacket {
    /// See [`Packet::ts_ns`].
    pub ts_ns: u64,
    /// See [`Packet::has_ts`].
    pub has_ts: bool,
    /// See [`Packet::orig_len`].
    pub orig_len: u32,
    /// See [`Packet::interface`].
    pub interface: u32,
    /// See [`Packet::linktype`].
    pub linktype: u16,
    /// Captured bytes.
    pub data: Vec<u8>,
    /// See [`Packet::offset`].
    pub offset: u64,
    /// First packet comment.
    pub comment: Option<String>,
}

#[derive(Debug)]
enum State {
    Pcap(PcapHeader),
    Pcapng { big: bool, section_base: u32 },
}

/// Reads classic pcap (µs or ns, either byte order, also Kuznetzov's modified format) or
/// pcapng (any number of sections of either byte order and interfaces; enhanced, simple and
/// obsolete packet blocks; interface statistics), chosen by the magic.
///
/// Give it a buffered reader (`BufReader<File>`): it issues two or three reads per packet.
/// The packet buffer is reused, so reading allocates nothing per packet after warm-up.
/// After an error or the end of input, [`next_packet`](Self::next_packet) returns `Ok(None)`.
#[derive(Debug)]
pub struct PcapReader<R> {
    inner: R,
    pos: u64,
    buf: Vec<u8>,
    max_block: u32,
    state: State,
    done: bool,
    interfaces: Vec<Interface>,
    sections: Vec<Section>,
    stats: Vec<InterfaceStats>,
    stats_not_kept: u64,
    /// Bytes of `sections`, `interfaces` and `stats` (approximate: struct
    /// sizes plus string lengths), kept under [`METADATA_BUDGET`].
    meta_bytes: usize,
    skipped_blocks: u64,
    bad_timestamps: u64,
    fraction_policy: FractionPolicy,
    bad_fractions: u64,
    /// Time of the last packet delivered with a timestamp.
    last_ts: Option<u64>,
}

impl<R: Read> PcapReader<R> {
    /// Read the file header (pcap) or first section header block (pcapng).
    pub fn new(inner: R) -> Result<Self, PcapError> {
        Self::with_max_block(inner, DEFAULT_MAX_BLOCK)
    }

    /// Like [`new`](Self::new), with a different cap on the size of one block or record.
    pub fn with_max_block(inner: R, max_block: u32) -> Result<Self, PcapError> {
        let mut r = PcapReader {
            inner,
            pos: 0,
            buf: Vec::new(),
            max_block: max_block.max(32),
            state: State::Pcapng {
                big: false,
                section_base: 0,
            },
            done: false,
            interfaces: Vec::new(),
            sections: Vec::new(),
            stats: Vec::new(),
            stats_not_kept: 0,
            meta_bytes: 0,
            skipped_blocks: 0,
            bad_timestamps: 0,
            fraction_policy: FractionPolicy::Keep,
            bad_fractions: 0,
            last_ts: None,
        };
        let mut m = [0u8; 8];
        let got = r.read_full(&mut m[..4])?;
        if got < 4 {
            return Err(truncated(0, "the file magic", got, 4));
        }
        let be = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
        let le = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
        if be == BT_SHB {
            let got = r.read_full(&mut m[4..8])?;
            if got < 4 {
                return Err(truncated(0, "a section header block", 4 + got, 12));
            }
            r.read_shb(0, m)?;
            return Ok(r);
        }
        let (magic, big) = if is_pcap_magic(le) {
            (le, false)
        } else if is_pcap_magic(be) {
            (be, true)
        } else if m[0] == 0x1f && m[1] == 0x8b {
            return Err(PcapError::new(0, ErrorKind::Gzip));
        } else {
            return Err(PcapError::new(0, ErrorKind::NotPcap { magic: be }));
        };
        let mut h = [0u8; 20];
        let got = r.read_full(&mut h)?;
        if got < 20 {
            return Err(truncated(0, "the pcap file header", 4 + got, 24));
        }
        let hdr = PcapHeader {
            byte_order: if big {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            },
            version_major: rd16(&h, 0, big),
            version_minor: rd16(&h, 2, big),
            resolution: if magic == PCAP_MAGIC_NANO {
                TsResolution::NANO
            } else {
                TsResolution::MICRO
            },
            modified: magic == PCAP_MAGIC_MODIFIED,
            thiszone: rd32(&h, 4, big) as i32,
            sigfigs: rd32(&h, 8, big),
            snaplen: rd32(&h, 12, big),
            linktype_field: rd32(&h, 16, big),
        };
        // As libpcap (sf-pcap.c): 2.0 to 2.4, and 543.0 (DG/UX tcpdump, lengths in the
        // pre-2.3 order).
        let ok = (hdr.version_major == 2 && hdr.version_minor <= 4)
            || (hdr.version_major == 543 && hdr.version_minor == 0);
        if !ok {
            return Err(PcapError::new(
                4,
                ErrorKind::UnsupportedVersion {
                    format: "pcap",
                    major: hdr.version_major,
                    minor: hdr.version_minor,
                    accepted: "libpcap reads 2.0 to 2.4, and DG/UX's 543.0",
                },
            ));
        }
        let lt = hdr.linktype_field;
        // As libpcap: bits 16-25 are reserved and must be zero.
        let reserved = lt & 0x03ff_0000;
        if reserved != 0 {
            return Err(PcapError::new(
                20,
                ErrorKind::ReservedLinkTypeBits {
                    field: lt,
                    reserved,
                },
            ));
        }
        r.interfaces.push(Interface {
            section: 0,
            id_in_section: 0,
            offset: 0,
            linktype: (lt & 0xffff) as u16,
            snaplen: hdr.snaplen,
            name: None,
            description: None,
            os: None,
            tsresol: hdr.resolution,
            tsoffset_s: 0,
            fcs_len: (lt & 0x0400_0000 != 0).then(|| ((lt >> 28) as u8) * 2),
            comments: Vec::new(),
        });
        r.state = State::Pcap(hdr);
        Ok(r)
    }

    /// The next packet, or `None` at the end of the input. Other blocks (interfaces,
    /// statistics, new sections) are absorbed on the way and visible through the accessors.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, PcapError> {
        if self.done {
            return Ok(None);
        }
        let res = match self.state {
            State::Pcap(_) => self.next_pcap(),
            State::Pcapng { .. } => self.next_pcapng(),
        };
        match res {
            Ok(Some(loc)) => {
                self.bad_timestamps += u64::from(loc.bad_ts);
                self.bad_fractions += u64::from(loc.bad_fraction);
                if loc.has_ts {
                    self.last_ts = Some(loc.ts_ns);
                }
                Ok(Some(self.packet_at(loc)))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    /// Container format.
    pub fn format(&self) -> Format {
        match self.state {
            State::Pcap(_) => Format::Pcap,
            State::Pcapng { .. } => Format::Pcapng,
        }
    }

    /// The classic pcap file header (`None` for pcapng).
    pub fn pcap_header(&self) -> Option<&PcapHeader> {
        match &self.state {
            State::Pcap(h) => Some(h),
            State::Pcapng { .. } => None,
        }
    }

    /// pcapng sections seen so far (empty for classic pcap).
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Interfaces seen so far, across all sections (one, from the header, for classic pcap).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// Interface statistics blocks seen so far.
    pub fn interface_stats(&self) -> &[InterfaceStats] {
        &self.stats
    }

    /// Interface statistics blocks read but not kept: past [`METADATA_BUDGET`].
    pub fn stats_not_kept(&self) -> u64 {
        self.stats_not_kept
    }

    /// pcapng blocks skipped because they carry nothing this reader uses (name resolution,
    /// custom, decryption secrets, unknown types).
    pub fn skipped_blocks(&self) -> u64 {
        self.skipped_blocks
    }

    /// Packets and statistics blocks so far whose timestamp could not be expressed as u64
    /// nanoseconds since the epoch (before 1970 or after 2554); they were delivered with
    /// `has_ts == false` / `ts_ns == 0`.
    pub fn bad_timestamps(&self) -> u64 {
        self.bad_timestamps
    }

    /// How classic pcap sub-second fields of one second or more are read (default
    /// [`FractionPolicy::Keep`]); applies to the packets read after the call.
    pub fn set_fraction_policy(&mut self, policy: FractionPolicy) {
        self.fraction_policy = policy;
    }

    /// Classic pcap records so far whose sub-second field was one second or more (10^6 µs or
    /// 10^9 ns), whatever the [`FractionPolicy`] made of them.
    pub fn bad_fractions(&self) -> u64 {
        self.bad_fractions
    }

    /// Bytes consumed from the input so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Give back the underlying reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    // ---- classic pcap ----

    fn next_pcap(&mut self) -> Result<Option<Loc>, PcapError> {
        let (big, modified, nano, snaplen, minor) = match &self.state {
            State::Pcap(h) => (
                h.byte_order == ByteOrder::Big,
                h.modified,
                h.resolution == TsResolution::NANO,
                h.snaplen,
                h.version_minor,
            ),
            State::Pcapng { .. } => return Ok(None),
        };
        let fcs_len = self.interfaces.first().and_then(|i| i.fcs_len).unwrap_or(0);
        let hlen = if modified { 24 } else { 16 };
        let start = self.pos;
        let mut h = [0u8; 24];
        let got = self.read_full(&mut h[..hlen])?;
        if got == 0 {
            return Ok(None);
        }
        if got < hlen {
            return Err(truncated(start, "a packet record header", got, hlen));
        }
        let sec = rd32(&h, 0, big);
        let frac = rd32(&h, 4, big);
        let mut caplen = rd32(&h, 8, big);
        let mut orig_len = rd32(&h, 12, big);
        if minor < 3 && caplen > orig_len {
            // Before 2.3 some writers swapped the two length fields.
            std::mem::swap(&mut caplen, &mut orig_len);
        }
        let limit = snaplen.max(STANDARD_MAX_PACKET).min(self.max_block);
        if caplen > limit {
            return Err(PcapError::new(
                start + 8,
                ErrorKind::CaplenTooLarge { caplen, limit },
            ));
        }
        let n = caplen as usize;
        let got = self.read_into_buf(n)?;
        if got < n {
            return Err(truncated(start + hlen as u64, "packet data", got, n));
        }
        let (ts_ns, bad_fraction) = self.fraction_policy.pcap_ts(sec, frac, nano, self.last_ts);
        Ok(Some(Loc {
            ts_ns,
            has_ts: true,
            bad_ts: false,
            bad_fraction,
            fcs_len,
            orig_len,
            interface: 0,
            data: (0, n),
            opts: (0, 0),
            big,
            offset: start,
            dropcount: None,
        }))
    }

    // ---- pcapng ----

    fn next_pcapng(&mut self) -> Result<Option<Loc>, PcapError> {
        loop {
            let start = self.pos;
            let mut h = [0u8; 8];
            let got = self.read_full(&mut h)?;
            if got == 0 {
                return Ok(None);
            }
            if got < 8 {
                return Err(truncated(start, "a block header", got, 8));
            }
            if h[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
                self.read_shb(start, h)?;
                continue;
            }
            let big = match self.state {
                State::Pcapng { big, .. } => big,
                State::Pcap(_) => return Ok(None),
            };
            let btype = rd32(&h, 0, big);
            let len = rd32(&h, 4, big);
            let (name, min) = match btype {
                BT_IDB => ("interface description block", 20),
                BT_OPB => ("packet block", 32),
                BT_SPB => ("simple packet block", 16),
                BT_ISB => ("interface statistics block", 24),
                BT_EPB => ("enhanced packet block", 32),
                _ => ("block", 12),
            };
            self.check_block_len(start, len, name, min)?;
            let n = (len - 8) as usize;
            let got = self.read_into_buf(n)?;
            if got < n {
                return Err(truncated(start, name, 8 + got, len as usize));
            }
            let trailer = rd32(&self.buf, n - 4, big);
            if trailer != len {
                return Err(PcapError::new(
                    start + u64::from(len) - 4,
                    ErrorKind::TrailerMismatch { len, trailer },
                ));
            }
            let body_len = n - 4;
            match btype {
                BT_EPB | BT_OPB | BT_SPB => {
                    return self.packet_block(start, btype, body_len, name).map(Some)
                }
                BT_IDB => self.parse_idb(start, body_len)?,
                BT_ISB => self.parse_isb(start, body_len)?,
                _ => self.skipped_blocks += 1,
            }
        }
    }

    /// `h`: block type and the raw length bytes, already read.
    fn read_shb(&mut self, start: u64, h: [u8; 8]) -> Result<(), PcapError> {
        const NAME: &str = "section header block";
        let mut b = [0u8; 4];
        let got = self.read_full(&mut b)?;
        if got < 4 {
            return Err(truncated(start, NAME, 8 + got, 12));
        }
        let big = if u32::from_le_bytes(b) == BYTE_ORDER_MAGIC {
            false
        } else if u32::from_be_bytes(b) == BYTE_ORDER_MAGIC {
            true
        } else {
            return Err(PcapError::new(
                start + 8,
                ErrorKind::BadByteOrder(u32::from_be_bytes(b)),
            ));
        };
        let len = rd32(&h, 4, big);
        self.check_block_len(start, len, NAME, 28)?;
        let n = (len - 12) as usize;
        let got = self.read_into_buf(n)?;
        if got < n {
            return Err(truncated(start, NAME, 12 + got, len as usize));
        }
        let trailer = rd32(&self.buf, n - 4, big);
        if trailer != len {
            return Err(PcapError::new(
                start + u64::from(len) - 4,
                ErrorKind::TrailerMismatch { len, trailer },
            ));
        }
        let body = &self.buf[..n - 4];
        let major = rd16(body, 0, big);
        let minor = rd16(body, 2, big);
        // As libpcap (sf-pcapng.c): the first section must be 1.0 or 1.2 (the same format);
        // later sections only need major version 1.
        let first = self.sections.is_empty();
        if major != 1 || (first && minor != 0 && minor != 2) {
            return Err(PcapError::new(
                start + 12,
                ErrorKind::UnsupportedVersion {
                    format: "pcapng",
                    major,
                    minor,
                    accepted: if first {
                        "libpcap reads 1.0 and 1.2 in the first section header block"
                    } else {
                        "libpcap reads major version 1 in later section header blocks"
                    },
                },
            ));
        }
        let mut sec = Section {
            index: u32::try_from(self.sections.len()).unwrap_or(u32::MAX),
            offset: start,
            byte_order: if big {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            },
            version_major: major,
            version_minor: minor,
            section_length: rd64(body, 4, big) as i64,
            hardware: None,
            os: None,
            userappl: None,
            comments: Vec::new(),
            first_interface: u32::try_from(self.interfaces.len()).unwrap_or(u32::MAX),
        };
        walk_options(&body[12..], big, start + 24, NAME, |code, v, _| {
            match code {
                1 => sec.comments.push(opt_string(v)),
                2 => sec.hardware = Some(opt_string(v)),
                3 => sec.os = Some(opt_string(v)),
                4 => sec.userappl = Some(opt_string(v)),
                _ => {}
            }
            Ok(())
        })?;
        self.state = State::Pcapng {
            big,
            section_base: sec.first_interface,
        };
        let size = size_of::<Section>()
            + strings_len(&sec.comments)
            + [&sec.hardware, &sec.os, &sec.userappl]
                .iter()
                .map(|o| o.as_ref().map_or(0, String::len))
                .sum::<usize>();
        self.charge_description(start, NAME, size)?;
        self.sections.push(sec);
        Ok(())
    }

    fn parse_idb(&mut self, start: u64, body_len: usize) -> Result<(), PcapError> {
        const NAME: &str = "interface description block";
        let (big, base) = self.ng_state();
        let body = &self.buf[..body_len];
        let section = self.sections.len().saturating_sub(1) as u32;
        let id_in_section = (self.interfaces.len() as u32).saturating_sub(base);
        let mut ifc = Interface {
            section,
            id_in_section,
            offset: start,
            linktype: rd16(body, 0, big),
            snaplen: rd32(body, 4, big),
            name: None,
            description: None,
            os: None,
            tsresol: TsResolution::MICRO,
            tsoffset_s: 0,
            fcs_len: None,
            comments: Vec::new(),
        };
        walk_options(&body[8..], big, start + 16, NAME, |code, v, at| {
            let want = |n: u16| -> Result<(), PcapError> {
                if v.len() == usize::from(n) {
                    Ok(())
                } else {
                    Err(PcapError::new(
                        at,
                        ErrorKind::BadOptionLength {
                            block: NAME,
                            code,
                            len: v.len() as u16,
                            expected: n,
                        },
                    ))
                }
            };
            match code {
                1 => ifc.comments.push(opt_string(v)),
                2 => ifc.name = Some(opt_string(v)),
                3 => ifc.description = Some(opt_string(v)),
                9 => {
                    want(1)?;
                    ifc.tsresol = TsResolution::from_option_byte(v[0]);
                }
                12 => ifc.os = Some(opt_string(v)),
                13 => {
                    want(1)?;
                    ifc.fcs_len = Some(v[0]);
                }
                14 => {
                    want(8)?;
                    ifc.tsoffset_s = rd64(v, 0, big) as i64;
                }
                _ => {}
            }
            Ok(())
        })?;
        let size = size_of::<Interface>()
            + strings_len(&ifc.comments)
            + [&ifc.name, &ifc.description, &ifc.os]
                .iter()
                .map(|o| o.as_ref().map_or(0, String::len))
                .sum::<usize>();
        self.charge_description(start, NAME, size)?;
        self.interfaces.push(ifc);
        Ok(())
    }

    /// Counts a section or interface description against
    /// [`METADATA_BUDGET`], refusing it past the budget.
    fn charge_description(
        &mut self,
        start: u64,
        block: &'static str,
        size: usize,
    ) -> Result<(), PcapError> {
        if self.meta_bytes + size > METADATA_BUDGET {
            return Err(PcapError::new(
                start,
                ErrorKind::TooMuchMetadata {
                    block,
                    kept: self.sections.len() + self.interfaces.len(),
                    limit: METADATA_BUDGET,
                },
            ));
        }
        self.meta_bytes += size;
        Ok(())
    }

    fn parse_isb(&mut self, start: u64, body_len: usize) -> Result<(), PcapError> {
        const NAME: &str = "interface statistics block";
        let (big, base) = self.ng_state();
        let body = &self.buf[..body_len];
        let id = rd32(body, 0, big);
        let ifc = self.lookup_iface(start + 8, NAME, id, base)?;
        let (tsresol, tsoff) = (
            self.interfaces[ifc].tsresol,
            self.interfaces[ifc].tsoffset_s,
        );
        let to_ns = |units: u64| {
            tsresol
                .units_to_ns(units)
                .and_then(|ns| apply_offset(ns, tsoff))
        };
        let ts = to_ns(rd_ts(body, 4, big));
        let mut bad = u64::from(ts.is_none());
        let ts_ns = ts.unwrap_or(0);
        let mut st = InterfaceStats {
            interface: ifc as u32,
            offset: start,
            ts_ns,
            counters: StatsCounters::default(),
            comments: Vec::new(),
        };
        walk_options(&body[12..], big, start + 20, NAME, |code, v, at| {
            if code == 1 {
                st.comments.push(opt_string(v));
                return Ok(());
            }
            if !(2..=8).contains(&code) {
                return Ok(());
            }
            if v.len() != 8 {
                return Err(PcapError::new(
                    at,
                    ErrorKind::BadOptionLength {
                        block: NAME,
                        code,
                        len: v.len() as u16,
                        expected: 8,
                    },
                ));
            }
            let c = &mut st.counters;
            match code {
                2 | 3 => {
                    let t = to_ns(rd_ts(v, 0, big));
                    bad += u64::from(t.is_none());
                    if code == 2 {
                        c.start_ns = t;
                    } else {
                        c.end_ns = t;
                    }
                }
                4 => c.ifrecv = Some(rd64(v, 0, big)),
                5 => c.ifdrop = Some(rd64(v, 0, big)),
                6 => c.filter_accept = Some(rd64(v, 0, big)),
                7 => c.osdrop = Some(rd64(v, 0, big)),
                _ => c.usrdeliv = Some(rd64(v, 0, big)),
            }
            Ok(())
        })?;
        let size = size_of::<InterfaceStats>() + strings_len(&st.comments);
        if self.meta_bytes + size <= METADATA_BUDGET {
            self.meta_bytes += size;
            self.stats.push(st);
        } else {
            self.stats_not_kept += 1;
        }
        self.bad_timestamps += bad;
        Ok(())
    }

    fn packet_block(
        &self,
        start: u64,
        btype: u32,
        body_len: usize,
        name: &'static str,
    ) -> Result<Loc, PcapError> {
        let (big, base) = self.ng_state();
        let body = &self.buf[..body_len];
        if btype == BT_SPB {
            let ifc = self.lookup_iface(start + 8, name, 0, base)?;
            let orig_len = rd32(body, 0, big);
            let snaplen = self.interfaces[ifc].snaplen;
            let mut caplen = (orig_len as usize).min(body_len - 4);
            if snaplen != 0 {
                caplen = caplen.min(snaplen as usize);
            }
            return Ok(Loc {
                ts_ns: 0,
                has_ts: false,
                bad_ts: false,
                bad_fraction: false,
                fcs_len: 0,
                orig_len,
                interface: ifc as u32,
                data: (4, 4 + caplen),
                opts: (0, 0),
                big,
                offset: start,
                dropcount: None,
            });
        }
        let (id, drops) = if btype == BT_OPB {
            let drops = rd16(body, 2, big);
            (
                u32::from(rd16(body, 0, big)),
                (drops != 0xffff).then_some(u64::from(drops)),
            )
        } else {
            (rd32(body, 0, big), None)
        };
        let ifc = self.lookup_iface(start + 8, name, id, base)?;
        let caplen = rd32(body, 12, big);
        let orig_len = rd32(body, 16, big);
        let available = body_len - 20;
        if caplen as usize > available {
            return Err(PcapError::new(
                start + 20,
                ErrorKind::CaplenExceedsBlock {
                    block: name,
                    caplen,
                    available: available as u32,
                },
            ));
        }
        let i = &self.interfaces[ifc];
        let ts = i
            .tsresol
            .units_to_ns(rd_ts(body, 4, big))
            .and_then(|ns| apply_offset(ns, i.tsoffset_s));
        let data_end = 20 + caplen as usize;
        let opt_start = (20 + pad4(caplen as usize)).min(body_len);
        let mut dropcount = drops;
        let mut fcs_len = 0;
        walk_options(
            &body[opt_start..],
            big,
            start + 8 + opt_start as u64,
            name,
            |code, v, _| {
                if code == 4 && v.len() == 8 && btype == BT_EPB {
                    dropcount = Some(rd64(v, 0, big));
                }
                if code == 2 && v.len() == 4 {
                    // epb_flags / pack_flags bits 5-8: FCS length in octets.
                    fcs_len = ((rd32(v, 0, big) >> 5) & 0xf) as u8;
                }
                Ok(())
            },
        )?;
        Ok(Loc {
            ts_ns: ts.unwrap_or(0),
            has_ts: ts.is_some(),
            bad_ts: ts.is_none(),
            bad_fraction: false,
            fcs_len,
            orig_len,
            interface: ifc as u32,
            data: (20, data_end),
            opts: (opt_start, body_len),
            big,
            offset: start,
            dropcount,
        })
    }

    // ---- helpers ----

    fn packet_at(&self, loc: Loc) -> Packet<'_> {
        let data = self.buf.get(loc.data.0..loc.data.1).unwrap_or(&[]);
        let raw = self.buf.get(loc.opts.0..loc.opts.1).unwrap_or(&[]);
        Packet {
            ts_ns: loc.ts_ns,
            has_ts: loc.has_ts,
            orig_len: loc.orig_len,
            interface: loc.interface,
            linktype: self
                .interfaces
                .get(loc.interface as usize)
                .map_or(0, |i| i.linktype),
            data,
            offset: loc.offset,
            dropcount: loc.dropcount,
            options: Options { raw, big: loc.big },
            bad_fraction: loc.bad_fraction,
            fcs_len: loc.fcs_len,
        }
    }

    fn ng_state(&self) -> (bool, u32) {
        match self.state {
            State::Pcapng { big, section_base } => (big, section_base),
            State::Pcap(ref h) => (h.byte_order == ByteOrder::Big, 0),
        }
    }

    fn lookup_iface(
        &self,
        at: u64,
        block: &'static str,
        id: u32,
        base: u32,
    ) -> Result<usize, PcapError> {
        let count = (self.interfaces.len() as u64).saturating_sub(u64::from(base));
        if u64::from(id) >= count {
            return Err(PcapError::new(
                at,
                ErrorKind::UnknownInterface {
                    block,
                    id,
                    count: count as u32,
                },
            ));
        }
        Ok(base as usize + id as usize)
    }

    fn check_block_len(
        &self,
        start: u64,
        len: u32,
        block: &'static str,
        min: u32,
    ) -> Result<(), PcapError> {
        let at = start + 4;
        if len < min {
            return Err(PcapError::new(
                at,
                ErrorKind::BlockTooShort { block, len, min },
            ));
        }
        if len % 4 != 0 {
            return Err(PcapError::new(at, ErrorKind::BlockLenNotAligned { len }));
        }
        if len > self.max_block {
            return Err(PcapError::new(
                at,
                ErrorKind::BlockTooLong {
                    len,
                    limit: self.max_block,
                },
            ));
        }
        Ok(())
    }

    /// Read until `dst` is full or the input ends; returns the bytes read.
    fn read_full(&mut self, dst: &mut [u8]) -> Result<usize, PcapError> {
        let got = read_full_from(&mut self.inner, dst)
            .map_err(|e| PcapError::new(self.pos, ErrorKind::Io(e)))?;
        self.pos += got as u64;
        Ok(got)
    }

    /// Read up to `n` bytes into `self.buf[..n]`; returns the bytes read.
    fn read_into_buf(&mut self, n: usize) -> Result<usize, PcapError> {
        let res = if n <= DIRECT_READ || n <= self.buf.len() {
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            read_full_from(&mut self.inner, &mut self.buf[..n])
        } else {
            // Grow only as the data really arrives.
            self.buf.clear();
            (&mut self.inner).take(n as u64).read_to_end(&mut self.buf)
        };
        let got = res.map_err(|e| PcapError::new(self.pos, ErrorKind::Io(e)))?;
        self.pos += got as u64;
        Ok(got)
    }
}

/// Where a packet lies in the reader's buffer (so the borrow is taken only once, at the end).
#[derive(Debug, Clone, Copy)]
struct Loc {
    ts_ns: u64,
    has_ts: bool,
    bad_ts: bool,
    bad_fraction: bool,
    fcs_len: u8,
    orig_len: u32,
    interface: u32,
    data: (usize, usize),
    opts: (usize, usize),
    big: bool,
    offset: u64,
    dropcount: Option<u64>,
}

fn is_pcap_magic(m: u32) -> bool {
    matches!(m, PCAP_MAGIC_MICRO | PCAP_MAGIC_NANO | PCAP_MAGIC_MODIFIED)
}

fn truncated(offset: u64, what: &'static str, got: usize, need: usize) -> PcapError {
    PcapError::new(
        offset,
        ErrorKind::Truncated {
            what,
            got: got as u64,
            need: need as u64,
        },
    )
}

fn read_full_from<R: Read>(r: &mut R, dst: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < dst.len() {
        match r.read(&mut dst[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Walk pcapng options, calling `f(code, value, offset_of_option)`; stops at `opt_endofopt`
/// or when fewer than 4 bytes remain. An option running past the end is an error.
fn walk_options<'b>(
    opts: &'b [u8],
    big: bool,
    base: u64,
    block: &'static str,
    mut f: impl FnMut(u16, &'b [u8], u64) -> Result<(), PcapError>,
) -> Result<(), PcapError> {
    let mut i = 0usize;
    while opts.len().saturating_sub(i) >= 4 {
        let code = rd16(opts, i, big);
        let len = rd16(opts, i + 2, big);
        if code == 0 {
            break;
        }
        let at = base + i as u64;
        let v = match opts.get(i + 4..i + 4 + usize::from(len)) {
            Some(v) => v,
            None => {
                return Err(PcapError::new(
                    at,
                    ErrorKind::OptionOverrun { block, code, len },
                ))
            }
        };
        f(code, v, at)?;
        i += 4 + pad4(usize::from(len));
    }
    Ok(())
}

fn strings_len(v: &[String]) -> usize {
    v.iter().map(|s| s.len() + size_of::<String>()).sum()
}

fn opt_string(v: &[u8]) -> String {
    String::from_utf8_lossy(strip_nuls(v)).into_owned()
}

fn strip_nuls(mut v: &[u8]) -> &[u8] {
    while let [rest @ .., 0] = v {
        v = rest;
    }
    v
}

pub(crate) fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn rd16(b: &[u8], at: usize, big: bool) -> u16 {
    let a = b.get(at..at + 2).map_or([0; 2], |s| [s[0], s[1]]);
    if big {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

fn rd32(b: &[u8], at: usize, big: bool) -> u32 {
    let a = b
        .get(at..at + 4)
        .map_or([0; 4], |s| [s[0], s[1], s[2], s[3]]);
    if big {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn rd64(b: &[u8], at: usize, big: bool) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    if big {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    }
}

/// A pcapng timestamp: high 32 bits then low 32 bits, each in the section's byte order.
fn rd_ts(b: &[u8], at: usize, big: bool) -> u64 {
    (u64::from(rd32(b, at, big)) << 32) | u64::from(rd32(b, at + 4, big))
}
