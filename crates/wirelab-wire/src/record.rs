//! Per-packet record files: what a sender sent and a receiver received,
//! one fixed-size record per packet after a header.
//!
//! ```text
//! header:  0..8   magic b"WLRECORD"
//!          8..10  version (u16 LE) = 1
//!          10     role (u8: 0 sender, 1 receiver, 2 reflector)
//!          11     reserved, 0
//!          12..16 record length (u32 LE) = 64
//!          16..20 metadata length N (u32 LE)
//!          20..20+N metadata: UTF-8 JSON (host, clock source, start time,
//!                 the full run configuration)
//! records: fixed 64-byte little-endian records, see [`Record`].
//! ```
//! Files are append-only. A file cut short (a crash mid-write) loads up to
//! its last whole record; the reader reports how many trailing bytes it
//! ignored.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use thiserror::Error;

pub const MAGIC: [u8; 8] = *b"WLRECORD";
pub const VERSION: u16 = 1;
pub const RECORD_LEN: usize = 64;
/// Fixed part of the header before the metadata.
pub const FIXED_HEADER_LEN: usize = 20;
/// Metadata larger than this is refused as hostile (16 MiB).
pub const MAX_METADATA_LEN: usize = 16 << 20;

#[derive(Debug, Error)]
pub enum RecordError {
    #[error("not a wirelab record file (magic {found:02x?}, expected \"WLRECORD\")")]
    BadMagic { found: [u8; 8] },
    #[error("record file version {found} is not supported (this wirelab reads version {VERSION})")]
    BadVersion { found: u16 },
    #[error("record length {found} in header, expected {RECORD_LEN}")]
    BadRecordLen { found: u32 },
    #[error("unknown role {found} in record file header")]
    BadRole { found: u8 },
    #[error("record file header is cut short: {len} bytes, need {need}")]
    TruncatedHeader { len: usize, need: usize },
    #[error("record file metadata of {len} bytes exceeds the {MAX_METADATA_LEN}-byte limit")]
    MetadataTooLarge { len: usize },
    #[error("record file metadata is not UTF-8")]
    MetadataNotUtf8,
    #[error("I/O error reading record file: {0}")]
    Io(io::Error),
}

// Not `#[from]`: that would also make it the source, and the message already prints it.
impl From<io::Error> for RecordError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Which side wrote a record file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Sender = 0,
    Receiver = 1,
    Reflector = 2,
}

impl Role {
    pub fn from_u8(v: u8) -> Option<Role> {
        match v {
            0 => Some(Role::Sender),
            1 => Some(Role::Receiver),
            2 => Some(Role::Reflector),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
            Role::Reflector => "reflector",
        }
    }
}

/// The header of a record file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFileHeader {
    pub role: Role,
    /// UTF-8 JSON with host, clock source, start time and the run config.
    pub metadata: String,
}

impl RecordFileHeader {
    /// Serialises the header.
    pub fn to_bytes(&self) -> Vec<u8> {
        let meta = self.metadata.as_bytes();
        let mut v = Vec::with_capacity(FIXED_HEADER_LEN + meta.len());
        v.extend_from_slice(&MAGIC);
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.push(self.role as u8);
        v.push(0);
        v.extend_from_slice(&(RECORD_LEN as u32).to_le_bytes());
        v.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        v.extend_from_slice(meta);
        v
    }

    /// A whole record file in memory: this header, then `records`.
    pub fn file_with(&self, records: &[Record]) -> Vec<u8> {
        let mut v = self.to_bytes();
        v.reserve(records.len() * RECORD_LEN);
        for r in records {
            v.extend_from_slice(&r.to_bytes());
        }
        v
    }

    /// Parses the fixed part; returns the role and the metadata length.
    pub fn parse_fixed(buf: &[u8]) -> Result<(Role, usize), RecordError> {
        if buf.len() < FIXED_HEADER_LEN {
            return Err(RecordError::TruncatedHeader {
                len: buf.len(),
                need: FIXED_HEADER_LEN,
            });
        }
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&buf[0..8]);
        if magic != MAGIC {
            return Err(RecordError::BadMagic { found: magic });
        }
        let version = u16::from_le_bytes([buf[8], buf[9]]);
        if version != VERSION {
            return Err(RecordError::BadVersion { found: version });
        }
        let role = Role::from_u8(buf[10]).ok_or(RecordError::BadRole { found: buf[10] })?;
        let rec_len = u32::from_le_bytes([buf[12], buf[13], buf[14], buf[15]]);
        if rec_len as usize != RECORD_LEN {
            return Err(RecordError::BadRecordLen { found: rec_len });
        }
        let meta_len = u32::from_le_bytes([buf[16], buf[17], buf[18], buf[19]]) as usize;
        if meta_len > MAX_METADATA_LEN {
            return Err(RecordError::MetadataTooLarge { len: meta_len });
        }
        Ok((role, meta_len))
    }

    /// Parses a whole header from the start of `buf`; returns it and its length.
    pub fn parse(buf: &[u8]) -> Result<(RecordFileHeader, usize), RecordError> {
        let (role, meta_len) = Self::parse_fixed(buf)?;
        let need = FIXED_HEADER_LEN + meta_len;
        if buf.len() < need {
            return Err(RecordError::TruncatedHeader {
                len: buf.len(),
                need,
            });
        }
        let metadata = std::str::from_utf8(&buf[FIXED_HEADER_LEN..need])
            .map_err(|_| RecordError::MetadataNotUtf8)?
            .to_owned();
        Ok((RecordFileHeader { role, metadata }, need))
    }
}

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RecordKind {
    /// A probe the sender sent (sched_ns, tx_ns set).
    #[default]
    Tx = 0,
    /// A probe a receiver or reflector received (tx_ns from the probe, rx_ns local).
    Rx = 1,
    /// An echo reply back at the sender: tx_ns original send, rx_ns reply
    /// arrival, refl_rx_ns/refl_tx_ns the reflector's times.
    EchoReply = 2,
    /// One copy of a frame through the link emulator (`emulate --log`), in
    /// a file of role sender; fields as [`EmuRecord`] maps them. Readers
    /// older than this kind skip and count these records.
    Emulated = 3,
}

impl RecordKind {
    pub fn from_u8(v: u8) -> Option<RecordKind> {
        match v {
            0 => Some(RecordKind::Tx),
            1 => Some(RecordKind::Rx),
            2 => Some(RecordKind::EchoReply),
            3 => Some(RecordKind::Emulated),
            _ => None,
        }
    }
}

/// One fixed-size record (64 bytes, little endian).
///
/// ```text
///  0 flow u32 | 4 size u32 (UDP payload bytes) | 8 seq u64
/// 16 sched_ns u64 (scheduled send, monotonic ns since the run start; 0 = none)
/// 24 tx_ns u64 (sender wall clock, ns since the Unix epoch)
/// 32 rx_ns u64 (local receive time, ns since the Unix epoch; 0 = none)
/// 40 refl_rx_ns u64 | 48 refl_tx_ns u64 (reflector times on echo replies)
/// 56 probe flags u8 | 57 kind u8 | 58 record flags u8 | 59 tos u8
/// 60..64 reserved, 0
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    pub flow: u32,
    pub size: u32,
    pub seq: u64,
    pub sched_ns: u64,
    pub tx_ns: u64,
    pub rx_ns: u64,
    pub refl_rx_ns: u64,
    pub refl_tx_ns: u64,
    pub probe_flags: u8,
    pub kind: RecordKind,
    pub rec_flags: u8,
    pub tos: u8,
}

impl Record {
    /// rx_ns came from the kernel (SO_TIMESTAMPING software), not user space.
    pub const RX_KERNEL_TS: u8 = 1 << 0;
    /// rx_ns came from the NIC's hardware clock.
    pub const RX_HW_TS: u8 = 1 << 1;
    /// This probe was sent in a batch with others (sendmmsg).
    pub const TX_BATCHED: u8 = 1 << 2;
    /// An emulated copy had one bit flipped (`corrupt`).
    pub const CORRUPTED: u8 = 1 << 3;

    pub fn to_bytes(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        b[0..4].copy_from_slice(&self.flow.to_le_bytes());
        b[4..8].copy_from_slice(&self.size.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.sched_ns.to_le_bytes());
        b[24..32].copy_from_slice(&self.tx_ns.to_le_bytes());
        b[32..40].copy_from_slice(&self.rx_ns.to_le_bytes());
        b[40..48].copy_from_slice(&self.refl_rx_ns.to_le_bytes());
        b[48..56].copy_from_slice(&self.refl_tx_ns.to_le_bytes());
        b[56] = self.probe_flags;
        b[57] = self.kind as u8;
        b[58] = self.rec_flags;
        b[59] = self.tos;
        b
    }

    /// Parses one record; an unknown kind gives `None` so readers can skip it.
    pub fn from_bytes(b: &[u8; RECORD_LEN]) -> Option<Record> {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(a)
        };
        Some(Record {
            flow: u32_at(0),
            size: u32_at(4),
            seq: u64_at(8),
            sched_ns: u64_at(16),
            tx_ns: u64_at(24),
            rx_ns: u64_at(32),
            refl_rx_ns: u64_at(40),
            refl_tx_ns: u64_at(48),
            probe_flags: b[56],
            kind: RecordKind::from_u8(b[57])?,
            rec_flags: b[58],
            tos: b[59],
        })
    }
}

/// What happened to one copy of a frame in the link emulator: sent, or
/// dropped for a reason. Codes are stable (they are in files): a fate's code
/// is its index in [`FATES`], and a reader meeting a code past the table
/// keeps the record as [`EmuFate::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EmuFate {
    Sent,
    Loss,
    Trace,
    TraceEnd,
    Limit,
    Horizon,
    Queue,
    SendFailure,
    Unsent,
    LinkDown,
    /// A code this version does not know.
    Other(u8),
}

/// One known fate: its name in JSON, its words in text, what it means.
#[derive(Debug)]
pub struct FateInfo {
    pub fate: EmuFate,
    /// `snake_case`, as JSON keys and `--json` output spell it.
    pub name: &'static str,
    /// The name in sentences and tables ("trace end").
    pub label: &'static str,
    pub meaning: &'static str,
}

/// Every known fate in code order: the one table the record format, the
/// log reader, the counters and the reports read. A new drop reason is a
/// variant, a row here and its arm in [`EmuFate::code`].
pub const FATES: [FateInfo; 10] = [
    fate(
        EmuFate::Sent,
        "sent",
        "sent",
        "handed to the kernel on the far interface",
    ),
    fate(EmuFate::Loss, "loss", "loss", "dropped by the loss model"),
    fate(
        EmuFate::Trace,
        "trace",
        "trace",
        "dropped by a DROP record of the trace",
    ),
    fate(
        EmuFate::TraceEnd,
        "trace_end",
        "trace end",
        "dropped past the end of the trace",
    ),
    fate(
        EmuFate::Limit,
        "limit",
        "limit",
        "dropped by the queue limit (packets or bytes)",
    ),
    fate(
        EmuFate::Horizon,
        "horizon",
        "horizon",
        "it would have waited longer than the link's horizon",
    ),
    fate(
        EmuFate::Queue,
        "queue",
        "queue",
        "dropped where it was queued (an AQM's decision at dequeue)",
    ),
    fate(
        EmuFate::SendFailure,
        "send_failure",
        "send failure",
        "the kernel refused to send it (too long for the egress MTU, ...)",
    ),
    fate(
        EmuFate::Unsent,
        "unsent",
        "unsent",
        "still waiting for its deadline when the emulator stopped",
    ),
    fate(
        EmuFate::LinkDown,
        "link_down",
        "link down",
        "the link was off or dead (onoff ... drop, a link ... once trace that ended)",
    ),
];

const fn fate(
    fate: EmuFate,
    name: &'static str,
    label: &'static str,
    meaning: &'static str,
) -> FateInfo {
    FateInfo {
        fate,
        name,
        label,
        meaning,
    }
}

impl EmuFate {
    /// The code stored in the record (its row in [`FATES`]).
    pub fn code(self) -> u8 {
        match self {
            EmuFate::Sent => 0,
            EmuFate::Loss => 1,
            EmuFate::Trace => 2,
            EmuFate::TraceEnd => 3,
            EmuFate::Limit => 4,
            EmuFate::Horizon => 5,
            EmuFate::Queue => 6,
            EmuFate::SendFailure => 7,
            EmuFate::Unsent => 8,
            EmuFate::LinkDown => 9,
            EmuFate::Other(c) => c,
        }
    }

    pub fn from_code(c: u8) -> EmuFate {
        FATES
            .get(usize::from(c))
            .map_or(EmuFate::Other(c), |row| row.fate)
    }

    /// Its row in [`FATES`]; `None` for a code this version does not know.
    pub fn info(self) -> Option<&'static FateInfo> {
        FATES
            .get(usize::from(self.code()))
            .filter(|row| row.fate == self)
    }

    /// The name in reports (`snake_case`): "other" for an unknown code.
    pub fn name(self) -> &'static str {
        self.info().map_or("other", |row| row.name)
    }
}

/// The emulator's per-copy log entry and its mapping onto a [`Record`] of
/// kind [`RecordKind::Emulated`]:
///
/// ```text
/// flow        = rule × 2 + direction (0 a→b, 1 b→a); rule 0 = the
///               direction's default stages, 1.. the --rule order
/// seq         = the frame's index among its rule's frames (from 0)
/// size        = frame length (L2, VLAN tag included, no FCS)
/// rx_ns       = kernel receive stamp (ns since the Unix epoch)
/// sched_ns    = deadline (same clock; 0 for a copy dropped at arrival)
/// tx_ns       = departure, taken just before the send call (0 if not sent)
/// probe_flags = copy number (0 = the original, 1.. duplicates)
/// tos         = fate code ([`EmuFate::code`])
/// rec_flags   = RX_KERNEL_TS (the stamp is the kernel's), CORRUPTED
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmuRecord {
    pub rule: u32,
    /// 0 a→b, 1 b→a.
    pub direction: u8,
    pub seq: u64,
    pub copy: u8,
    pub len: u32,
    pub arrival_ns: u64,
    pub deadline_ns: u64,
    pub departure_ns: u64,
    pub fate: EmuFate,
    pub corrupted: bool,
    pub kernel_stamp: bool,
}

impl EmuRecord {
    /// The flow id of a rule and direction.
    pub fn flow_of(rule: u32, direction: u8) -> u32 {
        rule.wrapping_mul(2) | u32::from(direction & 1)
    }

    pub fn to_record(&self) -> Record {
        Record {
            flow: Self::flow_of(self.rule, self.direction),
            size: self.len,
            seq: self.seq,
            sched_ns: self.deadline_ns,
            tx_ns: self.departure_ns,
            rx_ns: self.arrival_ns,
            refl_rx_ns: 0,
            refl_tx_ns: 0,
            probe_flags: self.copy,
            kind: RecordKind::Emulated,
            rec_flags: if self.kernel_stamp {
                Record::RX_KERNEL_TS
            } else {
                0
            } | if self.corrupted { Record::CORRUPTED } else { 0 },
            tos: self.fate.code(),
        }
    }

    /// The entry a record of kind [`RecordKind::Emulated`] holds.
    pub fn from_record(r: &Record) -> Option<EmuRecord> {
        (r.kind == RecordKind::Emulated).then(|| EmuRecord {
            rule: r.flow >> 1,
            direction: (r.flow & 1) as u8,
            seq: r.seq,
            copy: r.probe_flags,
            len: r.size,
            arrival_ns: r.rx_ns,
            deadline_ns: r.sched_ns,
            departure_ns: r.tx_ns,
            fate: EmuFate::from_code(r.tos),
            corrupted: r.rec_flags & Record::CORRUPTED != 0,
            kernel_stamp: r.rec_flags & Record::RX_KERNEL_TS != 0,
        })
    }
}

/// A record file that could not be opened or read, named by its path.
#[derive(Debug, Error)]
pub enum RecordFileError {
    #[error("cannot open {path}: {cause}", path = path.display())]
    Open { path: PathBuf, cause: io::Error },
    #[error("{path}: {cause}", path = path.display())]
    Header { path: PathBuf, cause: RecordError },
    #[error("reading {path}: {cause}", path = path.display())]
    Read { path: PathBuf, cause: RecordError },
}

impl RecordFileError {
    /// A read of `path`'s records that failed with `source`.
    pub fn read(path: &Path, source: RecordError) -> RecordFileError {
        RecordFileError::Read {
            path: path.to_path_buf(),
            cause: source,
        }
    }
}

/// Opens the record file at `path`, buffered, its header read.
pub fn open_file(path: &Path) -> Result<RecordReader<BufReader<File>>, RecordFileError> {
    let f = File::open(path).map_err(|source| RecordFileError::Open {
        path: path.to_path_buf(),
        cause: source,
    })?;
    RecordReader::new(BufReader::with_capacity(1 << 20, f)).map_err(|source| {
        RecordFileError::Header {
            path: path.to_path_buf(),
            cause: source,
        }
    })
}

/// Streams records from any reader. Stops cleanly at a partial trailing
/// record, remembering how many bytes it ignored.
pub struct RecordReader<R> {
    inner: R,
    header: RecordFileHeader,
    /// Bytes of a partial record at the end of the stream.
    pub trailing_bytes: usize,
    /// Records with an unknown kind, skipped.
    pub skipped: u64,
    done: bool,
}

impl<R: Read> RecordReader<R> {
    pub fn new(mut inner: R) -> Result<Self, RecordError> {
        let mut fixed = [0u8; FIXED_HEADER_LEN];
        let got = read_full(&mut inner, &mut fixed)?;
        if got < FIXED_HEADER_LEN {
            // Report the real problem: a wrong magic beats a short header.
            if got >= 8 && fixed[..8] != MAGIC {
                let mut found = [0u8; 8];
                found.copy_from_slice(&fixed[..8]);
                return Err(RecordError::BadMagic { found });
            }
            return Err(RecordError::TruncatedHeader {
                len: got,
                need: FIXED_HEADER_LEN,
            });
        }
        let (role, meta_len) = RecordFileHeader::parse_fixed(&fixed)?;
        // Grows with the bytes that are there, not with the length the header claims.
        let mut meta = Vec::new();
        let got = read_up_to(&mut inner, &mut meta, meta_len)?;
        if got < meta_len {
            return Err(RecordError::TruncatedHeader {
                len: FIXED_HEADER_LEN + got,
                need: FIXED_HEADER_LEN + meta_len,
            });
        }
        let metadata = String::from_utf8(meta).map_err(|_| RecordError::MetadataNotUtf8)?;
        Ok(RecordReader {
            inner,
            header: RecordFileHeader { role, metadata },
            trailing_bytes: 0,
            skipped: 0,
            done: false,
        })
    }

    pub fn header(&self) -> &RecordFileHeader {
        &self.header
    }

    /// Next record; `Ok(None)` at the end (including a cut-short tail).
    pub fn next_record(&mut self) -> Result<Option<Record>, RecordError> {
        let mut buf = [0u8; RECORD_LEN];
        while !self.done {
            let got = read_full(&mut self.inner, &mut buf)?;
            if got < RECORD_LEN {
                self.trailing_bytes = got;
                self.done = true;
                break;
            }
            match Record::from_bytes(&buf) {
                Some(r) => return Ok(Some(r)),
                None => self.skipped += 1,
            }
        }
        Ok(None)
    }
}

impl<R: Read> Iterator for RecordReader<R> {
    type Item = Result<Record, RecordError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Appends up to `n` bytes to `buf` (until EOF); returns how many.
fn read_up_to<R: Read>(r: &mut R, buf: &mut Vec<u8>, n: usize) -> io::Result<usize> {
    let mut chunk = [0u8; 4096];
    while buf.len() < n {
        let want = (n - buf.len()).min(chunk.len());
        let got = read_full(r, &mut chunk[..want])?;
        buf.extend_from_slice(&chunk[..got]);
        if got < want {
            break;
        }
    }
    Ok(buf.len())
}

/// Reads until `buf` is full or EOF; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Record {
        Record {
            flow: 1,
            size: 100,
            seq: 2,
            sched_ns: 3,
            tx_ns: 4,
            rx_ns: 5,
            refl_rx_ns: 6,
            refl_tx_ns: 7,
            probe_flags: 8,
            kind: RecordKind::Rx,
            rec_flags: Record::RX_KERNEL_TS,
            tos: 0xb8,
        }
    }

    #[test]
    fn header_fixed_bytes() {
        let h = RecordFileHeader {
            role: Role::Receiver,
            metadata: "{}".into(),
        };
        let b = h.to_bytes();
        assert_eq!(
            b,
            [
                b'W', b'L', b'R', b'E', b'C', b'O', b'R', b'D', 1, 0, 1, 0, 64, 0, 0, 0, 2, 0, 0,
                0, b'{', b'}'
            ]
        );
        assert_eq!(RecordFileHeader::parse(&b).unwrap(), (h, 22));
    }

    #[test]
    fn record_fixed_bytes() {
        let b = sample().to_bytes();
        assert_eq!(&b[0..8], &[1, 0, 0, 0, 100, 0, 0, 0]);
        assert_eq!(&b[8..16], &[2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[56..64], &[8, 1, 1, 0xb8, 0, 0, 0, 0]);
        assert_eq!(Record::from_bytes(&b), Some(sample()));
    }

    #[test]
    fn truncated_file_loads_whole_records() {
        let recs: Vec<Record> = (0..3).map(|seq| Record { seq, ..sample() }).collect();
        let mut file = RecordFileHeader {
            role: Role::Sender,
            metadata: "{\"a\":1}".into(),
        }
        .file_with(&recs);
        file.truncate(file.len() - 10);
        let mut r = RecordReader::new(&file[..]).unwrap();
        assert_eq!(r.header().role, Role::Sender);
        let seqs: Vec<u64> = r.by_ref().map(|x| x.unwrap().seq).collect();
        assert_eq!(seqs, vec![0, 1]);
        assert_eq!(r.trailing_bytes, 54);
    }

    #[test]
    fn rejects_bad_headers() {
        assert!(matches!(
            RecordReader::new(&b"not a record file at all"[..]),
            Err(RecordError::BadMagic { .. })
        ));
        assert!(matches!(
            RecordReader::new(&b"WLREC"[..]),
            Err(RecordError::TruncatedHeader { .. })
        ));
        let mut b = RecordFileHeader {
            role: Role::Sender,
            metadata: String::new(),
        }
        .to_bytes();
        b[10] = 9;
        assert!(matches!(
            RecordReader::new(&b[..]),
            Err(RecordError::BadRole { found: 9 })
        ));
        b[10] = 0;
        // Metadata claimed at the limit but absent: cut short (read as it comes, not
        // allocated up front).
        b[16..20].copy_from_slice(&(MAX_METADATA_LEN as u32).to_le_bytes());
        b.extend_from_slice(b"{}x");
        assert!(matches!(
            RecordReader::new(&b[..]),
            Err(RecordError::TruncatedHeader { len: 23, .. })
        ));
        b[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            RecordReader::new(&b[..]),
            Err(RecordError::MetadataTooLarge { .. })
        ));
    }

    #[test]
    fn emulated_records_map_both_ways_and_older_kinds_stay() {
        let e = EmuRecord {
            rule: 3,
            direction: 1,
            seq: 9,
            copy: 2,
            len: 1514,
            arrival_ns: 100,
            deadline_ns: 200,
            departure_ns: 201,
            fate: EmuFate::Sent,
            corrupted: true,
            kernel_stamp: true,
        };
        let r = e.to_record();
        let b = r.to_bytes();
        assert_eq!(&b[0..4], &[7, 0, 0, 0]);
        assert_eq!(
            &b[56..60],
            &[2, 3, Record::RX_KERNEL_TS | Record::CORRUPTED, 0]
        );
        assert_eq!(
            EmuRecord::from_record(&Record::from_bytes(&b).unwrap()),
            Some(e)
        );
        for (code, row) in FATES.iter().enumerate() {
            assert_eq!(usize::from(row.fate.code()), code, "{}", row.name);
            assert_eq!(EmuFate::from_code(row.fate.code()), row.fate);
            assert_eq!(row.fate.name(), row.name);
        }
        assert_eq!(EmuFate::Other(200).name(), "other");
        assert_eq!(EmuFate::from_code(200), EmuFate::Other(200));
        assert_eq!(EmuFate::Other(200).code(), 200);
        // A file of an older kind is not an emulator entry.
        assert_eq!(EmuRecord::from_record(&sample()), None);
    }

    #[test]
    fn the_emulate_guide_names_every_fate_and_its_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/emulate.md");
        let docs = std::fs::read_to_string(&path).expect("docs/emulate.md");
        let codes: Vec<String> = FATES
            .iter()
            .map(|row| format!("{} {}", row.fate.code(), row.name))
            .collect();
        let tos = format!("| `tos` | fate: {} |", codes.join(", "));
        assert!(
            docs.contains(&tos),
            "docs/emulate.md's record table should have: {tos}"
        );
        for row in &FATES[1..] {
            let line = format!("| `{}` |", row.name);
            assert!(
                docs.contains(&line),
                "docs/emulate.md's reason table lacks {line}"
            );
        }
    }

    proptest! {
        #[test]
        fn reader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = RecordReader::new(&data[..]) {
                for x in r { let _ = x; }
            }
        }

        #[test]
        fn record_round_trip(flow in any::<u32>(), size in any::<u32>(), seq in any::<u64>(), t in any::<u64>(), k in 0u8..4, f in any::<u8>()) {
            let r = Record { flow, size, seq, sched_ns: t, tx_ns: t ^ 1, rx_ns: t ^ 2, refl_rx_ns: 0, refl_tx_ns: t,
                             probe_flags: f, kind: RecordKind::from_u8(k).unwrap(), rec_flags: f ^ 3, tos: f };
            prop_assert_eq!(Record::from_bytes(&r.to_bytes()), Some(r));
        }
    }
}
