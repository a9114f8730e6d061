//! Reading the input files once: selection (packet numbers, BPF), static
//! rewrites, trace offsets; into memory (preload) or into chunks handed to
//! the sender by a read-ahead thread (stream).
//!
//! # Contracts
//!
//! - Every path that reads the inputs (replay, classification for a split,
//!   the packet count a cache file is checked against) goes through
//!   [`each_packet`]: the same numbering, the same link-type check, the
//!   same FCS removal.
//! - Memory is bounded by what the user asked for, never by a number in a
//!   file: `--fixlen pad` pads at most to the output's largest frame
//!   ([`RewriteSpec::pad_limit`]), a preload stops before its frames and
//!   index would exceed the budget (the replay then streams), and a
//!   streamed chunk holds at most [`CHUNK_BYTES`] and [`CHUNK_PACKETS`].
//! - Preloaded and streamed replays count the same: both take their
//!   [`ReadStats`] from one full [`scan`].

use super::ReplayError;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use wirelab_core::replay::Timing;
use wirelab_core::units::format_ns;
use wirelab_io::bpf::BpfProgram;
use wirelab_pcap::{FractionPolicy, PcapReader};
use wirelab_wire::ethernet::{egress_misfit, Misfit};
use wirelab_wire::rewrite::{FixLen, RewriteSpec, RewriteStats, Verdict, PAD_LIMIT};

/// Packet-number ranges, 1-based and inclusive, across all input files in
/// order (`1-100,200-`). Empty = every packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(pub Vec<(u64, Option<u64>)>);

/// A part of a packet-number list that is not a range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{part:?}: expected N, N-M or N- (packet numbers start at 1)")]
pub struct RangeError {
    pub part: String,
}

impl Ranges {
    /// Parses `7,11,20-23,174-`.
    pub fn parse(s: &str) -> Result<Ranges, RangeError> {
        let mut v = vec![];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || RangeError { part: part.into() };
            let num = |t: &str| {
                t.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(bad)
            };
            let r = match part.split_once('-') {
                Some((a, "")) => (num(a)?, None),
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if b < a {
                        return Err(bad());
                    }
                    (a, Some(b))
                }
                None => {
                    let n = num(part)?;
                    (n, Some(n))
                }
            };
            v.push(r);
        }
        Ok(Ranges(v))
    }

    /// Whether packet number `n` (1-based) is in any range.
    pub fn contains(&self, n: u64) -> bool {
        self.0
            .iter()
            .any(|&(a, b)| n >= a && !matches!(b, Some(b) if n > b))
    }
}

/// Which packets are sent.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Send only these packet numbers (empty: all).
    pub include_ranges: Ranges,
    /// Never send these packet numbers.
    pub exclude_ranges: Ranges,
    /// Send only packets matching this filter.
    pub include_bpf: Option<BpfProgram>,
    /// Never send packets matching this filter.
    pub exclude_bpf: Option<BpfProgram>,
}

impl Selection {
    fn keep(&self, n: u64, data: &[u8], orig_len: u32) -> bool {
        (self.include_ranges.0.is_empty() || self.include_ranges.contains(n))
            && !self.exclude_ranges.contains(n)
            && !matches!(&self.include_bpf, Some(f) if !f.matches(data, orig_len))
            && !self
                .exclude_bpf
                .as_ref()
                .is_some_and(|f| f.matches(data, orig_len))
    }
}

/// One selected packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pkt {
    /// Offset of the data in its arena.
    pub off: usize,
    /// Captured (and rewritten) length.
    pub len: u32,
    /// Original length after rewriting.
    pub orig_len: u32,
    /// ns since the first selected packet, continuous across files.
    pub t_ns: u64,
    /// Packet number in the input (1-based, across files).
    pub number: u64,
    /// The packet's own timestamp, ns since the epoch (after `--bad-ts`); a
    /// packet without one has the time it is scheduled at (the latest
    /// before it).
    pub ts_ns: u64,
}

/// Counts from reading.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReadStats {
    /// Packets read.
    pub read: u64,
    /// Packets selected.
    pub selected: u64,
    /// Packets left out by ranges or filters.
    pub filtered: u64,
    /// Frames shorter than an Ethernet header (skipped: the interface
    /// cannot send them).
    pub too_short: u64,
    /// Packets larger than the output takes (skipped): the MTU plus the
    /// header, plus one VLAN tag if 802.1Q-tagged; including those only `--fixlen
    /// pad` would have made too large.
    pub oversize: u64,
    /// The largest frame the output takes, bytes (null for a file).
    pub max_frame_bytes: Option<u64>,
    /// With `--fixlen pad`: the longest frame it pads to, bytes (the output's
    /// largest frame; 262144 for a file).
    pub pad_limit_bytes: Option<u64>,
    /// Timestamps that went backwards (sent at the latest time before them).
    pub ts_backwards: u64,
    /// Classic pcap records whose sub-second field is one second or more
    /// (nanoseconds in a microsecond file, as some tools write).
    pub ts_bad_fraction: u64,
    /// What was done with them: "keep", "clamp" or "ns" (`--bad-ts`).
    pub bad_ts: &'static str,
    /// Selected packets without a usable timestamp (simple packet blocks,
    /// times before 1970 or after 2554): sent at the latest time before them.
    pub ts_missing: u64,
    /// From the first to the last selected timestamp of each file, summed, ns.
    pub span_ns: u64,
    /// One pass of the schedule at the original speed, ns: [`Self::span_ns`]
    /// unless timestamps go backwards (the schedule never does).
    pub schedule_ns: u64,
    /// Timestamp of the first selected packet, ns since the epoch.
    pub first_ts_ns: Option<u64>,
    /// Packets whose frame check sequence, announced by the file (a pcap
    /// link-type field's FCS bits, an EPB's flags), was removed on reading.
    pub fcs_stripped: u64,
    /// Selected packets whose original length is below the captured length
    /// (after rewrites); a pcap file gets the captured length for them.
    pub orig_len_below_caplen: u64,
    /// The first of them (packet number).
    pub orig_len_below_caplen_first: Option<u64>,
    /// Files that end inside a packet record or block (cut short, e.g. by a crash): read
    /// up to it, the partial record left out.
    pub cut_short: u64,
    /// Rewrite counters.
    #[serde(skip)]
    pub rewrite: RewriteStats,
}

/// Everything the reader needs.
#[derive(Clone, Debug)]
pub struct ReadSpec {
    /// Input files, read in order.
    pub files: Vec<PathBuf>,
    /// Selection.
    pub select: Selection,
    /// Rewrites that do not depend on the loop.
    pub rewrite: RewriteSpec,
    /// Largest frame the output takes (a tagged frame at the interface's
    /// MTU), if known: padding stops there.
    pub max_frame: Option<usize>,
    /// The egress interface's MTU, when sending: frames that cannot leave
    /// through it (`ethernet::egress_misfit`) are skipped and counted.
    pub egress_mtu: Option<u32>,
    /// Classic pcap sub-second fields of one second or more (`--bad-ts`).
    pub bad_ts: FractionPolicy,
}

fn open(path: &Path) -> Result<PcapReader<BufReader<File>>, ReplayError> {
    let input = |m: String| ReplayError::Input(format!("{}: {m}", path.display()));
    let f = File::open(path).map_err(|e| input(format!("cannot open: {e}")))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(input("is a directory; give pcap or pcapng files".into()));
    }
    PcapReader::new(BufReader::with_capacity(1 << 20, f)).map_err(|e| {
        // A hint only where the format is the question: an unknown magic
        // (not after a version or I/O error).
        let hint = if matches!(e.kind, wirelab_pcap::ErrorKind::NotPcap { .. }) {
            "; convert other capture formats with `editcap -F pcapng IN OUT` (Wireshark)"
        } else {
            ""
        };
        input(format!("{e}{hint}"))
    })
}

/// `r.next_packet()`, except that a file cut short inside its last record or block (a
/// capture killed mid-write) ends there, with `cut` saying where, instead of failing:
/// every packet before it is whole.
fn next_packet<'r>(
    r: &'r mut PcapReader<BufReader<File>>,
    path: &Path,
    cut: &mut Option<String>,
) -> Result<Option<wirelab_pcap::Packet<'r>>, ReplayError> {
    match r.next_packet() {
        Ok(p) => Ok(p),
        Err(e) if e.is_truncation() => {
            *cut = Some(e.to_string());
            Ok(None)
        }
        Err(e) => Err(ReplayError::Input(format!("{}: {e}", path.display()))),
    }
}

/// One packet as every reading path sees it.
pub struct Frame<'a> {
    /// Packet number, 1-based across the files.
    pub number: u64,
    /// Index of its file.
    pub file: usize,
    /// The frame, without the FCS the file announces.
    pub data: &'a [u8],
    /// Its original length, less that FCS.
    pub orig_len: u32,
    /// Its timestamp, ns since the epoch (after the `--bad-ts` policy).
    pub ts_ns: Option<u64>,
    /// A sub-second field of one second or more.
    pub bad_fraction: bool,
    /// An FCS was removed.
    pub fcs_stripped: bool,
}

/// Calls `f` for every packet of `files` in order, numbered from 1 across
/// them, until it returns false. The one link-type check: replay sends
/// Ethernet frames, so any other link type is an error wherever the
/// packets are read (sending, classifying, counting for a cache file).
pub fn each_packet(
    files: &[PathBuf],
    bad_ts: FractionPolicy,
    mut f: impl FnMut(&Frame) -> bool,
) -> Result<u64, ReplayError> {
    let mut number = 0u64;
    let mut cut_short = 0u64;
    for (file, path) in files.iter().enumerate() {
        let mut r = open(path)?;
        r.set_fraction_policy(bad_ts);
        let (mut cut, in_file) = (None, number);
        loop {
            let Some(p) = next_packet(&mut r, path, &mut cut)? else {
                if let Some(c) = cut.take() {
                    cut_short += 1;
                    tracing::warn!(
                        "{}: file cut short ({c}): read the {} whole packet(s) before it",
                        path.display(),
                        number - in_file
                    );
                }
                break;
            };
            number += 1;
            if p.linktype != wirelab_pcap::LINKTYPE_ETHERNET {
                return Err(ReplayError::Input(format!(
                    "{}: packet {number} has link type {} — replay sends Ethernet frames (link type 1) only; convert first, e.g. `tcprewrite --dlt=enet --enet-dmac=.. --enet-smac=..`",
                    path.display(),
                    p.linktype
                )));
            }
            let (data, orig_len) = p.without_fcs();
            let frame = Frame {
                number,
                file,
                data,
                orig_len,
                ts_ns: p.has_ts.then_some(p.ts_ns),
                bad_fraction: p.bad_fraction,
                fcs_stripped: p.fcs_len > 0,
            };
            if !f(&frame) {
                return Ok(cut_short);
            }
        }
    }
    Ok(cut_short)
}

/// Trace time of one file's packets: offsets from its first timestamp,
/// never backwards.
#[derive(Default)]
struct FileClock {
    first: Option<u64>,
    /// The latest timestamp so far.
    high: Option<u64>,
    last: Option<u64>,
}

impl FileClock {
    /// The offset of a packet at `ts` (none: the latest time so far) and
    /// whether its time went backwards.
    fn offset(&mut self, ts: Option<u64>) -> (u64, bool) {
        let Some(ts) = ts else {
            return (self.rel(self.high), false);
        };
        let first = *self.first.get_or_insert(ts);
        let back = self.high.is_some_and(|h| ts < h);
        self.high = Some(self.high.map_or(ts, |h| h.max(ts)));
        self.last = Some(ts);
        (
            if back {
                self.rel(self.high)
            } else {
                ts - first
            },
            back,
        )
    }

    fn rel(&self, t: Option<u64>) -> u64 {
        match (t, self.first) {
            (Some(t), Some(f)) => t.saturating_sub(f),
            _ => 0,
        }
    }

    fn span(&self) -> u64 {
        self.rel(self.last)
    }
}

/// Reads every file once, calling `sink` for each selected, rewritten
/// packet (its `off` is 0: the caller places it). `sink` returns false to
/// stop early.
pub fn scan(
    spec: &ReadSpec,
    stats: &mut ReadStats,
    mut sink: impl FnMut(&[u8], Pkt) -> bool,
) -> Result<(), ReplayError> {
    // Padding never goes past what the output takes (a larger frame would
    // be oversize anyway), whatever original length the file claims.
    let limit = spec.max_frame.unwrap_or(PAD_LIMIT);
    let limit = spec.rewrite.pad_limit.map_or(limit, |l| l.min(limit));
    let rewrite = RewriteSpec {
        pad_limit: Some(limit),
        ..spec.rewrite.clone()
    };
    stats.bad_ts = spec.bad_ts.name();
    stats.max_frame_bytes = spec.max_frame.map(|m| m as u64);
    stats.pad_limit_bytes = (spec.rewrite.fixlen == Some(FixLen::Pad)).then_some(limit as u64);
    let mut base = 0u64; // trace offset where the current file starts
    let mut last_t = 0u64;
    let mut gap_sum = 0u64;
    let mut gaps = 0u64;
    let mut clock = FileClock::default();
    let mut cur_file = 0usize;
    let mut last_abs = 0u64; // the latest timestamp used, for packets without one
    let mut buf = Vec::with_capacity(65_536);
    let cut_short = each_packet(&spec.files, spec.bad_ts, |p| {
        stats.read += 1;
        stats.fcs_stripped += u64::from(p.fcs_stripped);
        if !spec.select.keep(p.number, p.data, p.orig_len) {
            stats.filtered += 1;
            return true;
        }
        if p.file != cur_file {
            cur_file = p.file;
            stats.span_ns += clock.span();
            clock = FileClock::default();
            if stats.selected > 0 {
                base = last_t + gap_sum.checked_div(gaps).unwrap_or(1_000_000);
            }
        }
        buf.clear();
        buf.extend_from_slice(p.data);
        let mut orig = p.orig_len;
        match rewrite.apply(&mut buf, &mut orig, &mut stats.rewrite) {
            Verdict::Keep => {}
            Verdict::Drop => {
                stats.filtered += 1;
                return true;
            }
            Verdict::Oversize => {
                stats.oversize += 1;
                return true;
            }
        }
        if spec.max_frame.is_some_and(|m| buf.len() > m) {
            stats.oversize += 1;
            return true;
        }
        if let Some(m) = spec.egress_mtu.and_then(|mtu| egress_misfit(&buf, mtu)) {
            match m {
                Misfit::TooShort => stats.too_short += 1,
                Misfit::TooLong => stats.oversize += 1,
            }
            return true;
        }
        let high = clock.high;
        let (rel, back) = clock.offset(p.ts_ns);
        stats.ts_backwards += u64::from(back);
        stats.ts_missing += u64::from(p.ts_ns.is_none());
        stats.ts_bad_fraction += u64::from(p.bad_fraction);
        if let (Some(h), Some(ts), false) = (high, p.ts_ns, back) {
            gap_sum += ts - h;
            gaps += 1;
        }
        let abs = p.ts_ns.unwrap_or(last_abs);
        last_abs = p.ts_ns.map_or(last_abs, |t| t.max(last_abs));
        if orig < buf.len() as u32 {
            stats.orig_len_below_caplen += 1;
            stats.orig_len_below_caplen_first.get_or_insert(p.number);
        }
        stats.selected += 1;
        stats.first_ts_ns.get_or_insert(abs);
        let t = base + rel;
        last_t = t;
        stats.schedule_ns = t;
        sink(
            &buf,
            Pkt {
                off: 0,
                len: buf.len() as u32,
                orig_len: orig,
                t_ns: t,
                number: p.number,
                ts_ns: abs,
            },
        )
    })?;
    stats.cut_short += cut_short;
    stats.span_ns += clock.span();
    Ok(())
}

/// The whole selection in memory.
#[derive(Debug, Default)]
pub struct Trace {
    /// All frame bytes, back to back.
    pub arena: Vec<u8>,
    /// One entry per packet.
    pub pkts: Vec<Pkt>,
}

impl Trace {
    /// Frame data of `p`.
    pub fn data(&self, p: &Pkt) -> &[u8] {
        &self.arena[p.off..p.off + p.len as usize]
    }

    /// First to last trace offset.
    pub fn span_ns(&self) -> u64 {
        self.pkts.last().map(|p| p.t_ns).unwrap_or(0)
    }

    /// Bytes held: frames plus their index.
    pub fn bytes(&self) -> u64 {
        (self.arena.len() + self.pkts.len() * std::mem::size_of::<Pkt>()) as u64
    }

    /// Appends a frame if the capacities of frames and index stay within
    /// `budget` bytes (grown by doubling, but never past it); false if not.
    fn push_within(&mut self, d: &[u8], mut p: Pkt, budget: usize) -> bool {
        const PKT: usize = std::mem::size_of::<Pkt>();
        let need = self.arena.len() + d.len();
        if need > self.arena.capacity() {
            let room = budget.saturating_sub(self.pkts.capacity() * PKT);
            let cap = (self.arena.capacity() * 2).max(need).min(room);
            if cap < need {
                return false;
            }
            self.arena.reserve_exact(cap - self.arena.len());
        }
        if self.pkts.len() == self.pkts.capacity() {
            let room = budget.saturating_sub(self.arena.capacity()) / PKT;
            let cap = (self.pkts.capacity() * 2).max(1024).min(room);
            if cap <= self.pkts.len() {
                return false;
            }
            self.pkts.reserve_exact(cap - self.pkts.len());
        }
        p.off = self.arena.len();
        self.arena.extend_from_slice(d);
        self.pkts.push(p);
        true
    }
}

/// Loads everything into memory, or `None` when the frames and their index
/// would need more than `budget` bytes: checked before every allocation
/// (rewrites can make frames longer than the file), so the caller streams
/// instead. `stats` are complete only when a trace is returned.
pub fn preload(
    spec: &ReadSpec,
    stats: &mut ReadStats,
    budget: u64,
) -> Result<Option<Trace>, ReplayError> {
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    let mut t = Trace::default();
    let mut fits = true;
    scan(spec, stats, |d, p| {
        fits = t.push_within(d, p, budget);
        fits
    })?;
    if !fits {
        return Ok(None);
    }
    t.arena.shrink_to_fit();
    t.pkts.shrink_to_fit();
    Ok(Some(t))
}

/// Reads every file once in chunks of at most [`CHUNK_BYTES`] of frames
/// (one frame more when a single frame is larger) and [`CHUNK_PACKETS`]
/// packets, handing each to `tx`; stops when the receiver is gone.
pub fn stream(spec: &ReadSpec, tx: &SyncSender<Trace>) -> Result<ReadStats, ReplayError> {
    let mut st = ReadStats::default();
    let mut cur = Trace::default();
    let mut ok = true;
    scan(spec, &mut st, |d, mut p| {
        p.off = cur.arena.len();
        cur.arena.extend_from_slice(d);
        cur.pkts.push(p);
        if cur.arena.len() >= CHUNK_BYTES || cur.pkts.len() >= CHUNK_PACKETS {
            ok = tx.send(std::mem::take(&mut cur)).is_ok();
        }
        ok
    })?;
    if ok && !cur.pkts.is_empty() {
        let _ = tx.send(cur);
    }
    Ok(st)
}

/// Most packets in one streamed chunk (bounds the index of a chunk of
/// empty or tiny frames).
pub const CHUNK_PACKETS: usize = 65_536;

/// A note for before a timed replay whose schedule is not what the
/// timestamps suggest: sub-second fields of one second or more kept as
/// they are, or a schedule much longer than the timestamps' span (a packet
/// far ahead of the others, after which time runs backwards). States the
/// scheduled duration and the flags that change it. `None` when the
/// schedule follows the timestamps or the timing ignores them.
pub fn schedule_notice(st: &ReadStats, timing: Timing) -> Option<String> {
    let Timing::Original { multiplier } = timing else {
        return None;
    };
    let bad = st.ts_bad_fraction > 0 && st.bad_ts == FractionPolicy::Keep.name();
    let inflated = st.schedule_ns > st.span_ns.saturating_mul(2) + 1_000_000_000;
    if !(bad || inflated) {
        return None;
    }
    let mut why = vec![];
    if st.ts_bad_fraction > 0 {
        why.push(format!(
            "{} have a sub-second field of 1 s or more (nanoseconds in a microsecond file?), read with --bad-ts {}",
            st.ts_bad_fraction, st.bad_ts
        ));
    }
    if st.ts_backwards > 0 {
        why.push(format!(
            "{} go backwards (each is sent at the latest time before it)",
            st.ts_backwards
        ));
    }
    let scheduled = st.schedule_ns as f64 / multiplier;
    Some(format!(
        "the schedule runs {} for {} packet(s) (x{multiplier}), while their timestamps span {} from first to last; of those timestamps {}. --bad-ts ns reads such fields as nanoseconds, --bad-ts clamp sends those packets at the previous time; --pps or --topspeed ignore the timestamps",
        format_ns(scheduled),
        st.selected,
        format_ns(st.span_ns as f64),
        if why.is_empty() { "none is broken".to_string() } else { why.join(", ") },
    ))
}

/// Chunk size of the streaming reader.
pub const CHUNK_BYTES: usize = 4 << 20;

/// Classifies every packet of `files` (1-based numbers across the files,
/// before selection, as tcpprep does) for two-interface replay. Auto mode
/// reads the files twice: once to learn who opens each conversation, once
/// to classify.
pub fn side_map(
    files: &[PathBuf],
    mode: &wirelab_wire::rewrite::split::SplitMode,
) -> Result<wirelab_wire::rewrite::split::SideMap, ReplayError> {
    use wirelab_wire::rewrite::split::{direct_side, AutoSplit, Side, SideMap, SplitMode};
    let each = |f: &mut dyn FnMut(&[u8])| {
        each_packet(files, FractionPolicy::Keep, |p| {
            f(p.data);
            true
        })
        .map(|_| ())
    };
    let mut sides = Vec::new();
    if let SplitMode::Auto = mode {
        let mut a = AutoSplit::default();
        each(&mut |d| a.learn(d))?;
        each(&mut |d| sides.push(Some(a.side(d))))?;
    } else {
        each(&mut |d| sides.push(Some(direct_side(mode, d).unwrap_or(Side::Client))))?;
    }
    Ok(SideMap {
        sides,
        mode: mode.name().to_string(),
        comment: String::new(),
    })
}

/// Packets in `files` (all of them, before selection): what a loaded cache
/// file must cover.
pub fn count_packets(files: &[PathBuf]) -> Result<u64, ReplayError> {
    let mut n = 0u64;
    each_packet(files, FractionPolicy::Keep, |_| {
        n += 1;
        true
    })?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic pcap written raw: (seconds, sub-second field, captured
    /// length, original length) per record, µs unless `nano`.
    fn pcap(name: &str, linktype: u32, records: &[(u32, u32, usize, u32)]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("wirelab-trace-{}-{name}", std::process::id()));
        let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&262_144u32.to_le_bytes());
        b.extend_from_slice(&linktype.to_le_bytes());
        for (i, &(sec, frac, caplen, orig)) in records.iter().enumerate() {
            for v in [sec, frac, caplen as u32, orig] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            let mut f = vec![0u8; caplen];
            if caplen >= 4 {
                f[..4].copy_from_slice(&(i as u32).to_be_bytes());
            }
            b.extend_from_slice(&f);
        }
        std::fs::write(&p, b).unwrap();
        p
    }

    fn spec(files: Vec<PathBuf>) -> ReadSpec {
        ReadSpec {
            files,
            select: Selection::default(),
            rewrite: RewriteSpec::default(),
            max_frame: None,
            egress_mtu: None,
            bad_ts: FractionPolicy::Keep,
        }
    }

    fn scan_all(spec: &ReadSpec) -> (ReadStats, Vec<Pkt>) {
        let mut st = ReadStats::default();
        let mut v = vec![];
        scan(spec, &mut st, |_, p| {
            v.push(p);
            true
        })
        .unwrap();
        (st, v)
    }

    #[test]
    fn fixlen_pad_trusts_no_original_length_and_preload_keeps_its_budget() {
        // Twenty records claiming 0xFFFFFFF0 bytes on the wire, one sane.
        let mut recs = vec![(1, 0, 60, 0xFFFF_FFF0); 20];
        recs.push((2, 0, 60, 1000));
        let f = pcap("pad.pcap", 1, &recs);
        let mut sp = spec(vec![f.clone()]);
        sp.rewrite.fixlen = Some(FixLen::Pad);
        let mut st = ReadStats::default();
        let t = preload(&sp, &mut st, 1 << 30).unwrap().unwrap();
        assert_eq!((st.read, st.selected, st.oversize), (21, 1, 20));
        assert_eq!(st.rewrite.pad_oversize, 20);
        assert_eq!(t.pkts[0].len, 1000);
        assert!(t.arena.capacity() < 1 << 20, "{}", t.arena.capacity());
        // The interface's largest frame caps padding further.
        sp.max_frame = Some(514);
        let (st, v) = scan_all(&sp);
        assert_eq!((st.selected, st.oversize, v.len()), (0, 21, 0));
        // A budget the padded frames exceed: no trace (the replay streams),
        // and nothing allocated past the budget.
        sp.max_frame = None;
        let small = pcap("pad-small.pcap", 1, &vec![(1, 0, 60, 1000); 50]);
        sp.files = vec![small.clone()];
        let mut st = ReadStats::default();
        assert!(preload(&sp, &mut st, 20_000).unwrap().is_none());
        let mut st = ReadStats::default();
        let t = preload(&sp, &mut st, 100_000).unwrap().unwrap();
        assert_eq!((t.pkts.len(), t.bytes()), (50, 50 * 1000 + 50 * 40));
        for p in [f, small] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn streamed_chunks_are_bounded_in_packets_too() {
        // Empty frames: only the packet bound closes a chunk.
        let n = CHUNK_PACKETS + 10;
        let f = pcap("empty-frames.pcap", 1, &vec![(1, 0, 0, 0); n]);
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let sp = spec(vec![f.clone()]);
        let reader = std::thread::spawn(move || stream(&sp, &tx));
        let sizes: Vec<usize> = rx.iter().map(|c| c.pkts.len()).collect();
        let st = reader.join().unwrap().unwrap();
        assert_eq!(sizes, vec![CHUNK_PACKETS, 10]);
        assert_eq!(st.selected, n as u64);
        let _ = std::fs::remove_file(f);
    }

    #[test]
    fn broken_timestamps_are_counted_and_the_schedule_stated() {
        // 5 packets 100 ms apart whose sub-second fields hold ns, in a µs file.
        let recs: Vec<_> = (0..5u32)
            .map(|i| (100, 250_000_000 + i * 100_000_000, 60, 60))
            .collect();
        let f = pcap("ns-in-us.pcap", 1, &recs);
        let mut sp = spec(vec![f.clone()]);
        let (st, v) = scan_all(&sp);
        assert_eq!((st.ts_bad_fraction, st.bad_ts), (5, "keep"));
        // Read as µs the five are 100 s apart.
        assert_eq!(st.schedule_ns, 400_000_000_000);
        assert_eq!(v[4].ts_ns, 100_000_000_000 + 650_000_000_000);
        let note = schedule_notice(&st, Timing::Original { multiplier: 1.0 }).unwrap();
        assert!(
            note.starts_with("the schedule runs 400 s for 5 packet(s) (x1), while their timestamps span 400 s from first to last; of those timestamps 5 have a sub-second field of 1 s or more"),
            "{note}"
        );
        assert!(schedule_notice(&st, Timing::Topspeed).is_none());
        sp.bad_ts = FractionPolicy::Nanoseconds;
        let (st, v) = scan_all(&sp);
        assert_eq!(
            (st.ts_bad_fraction, st.schedule_ns, st.span_ns),
            (5, 400_000_000, 400_000_000)
        );
        assert_eq!(v[1].ts_ns, 100_350_000_000);
        assert!(schedule_notice(&st, Timing::Original { multiplier: 1.0 }).is_none());
        sp.bad_ts = FractionPolicy::Clamp;
        let (st, _) = scan_all(&sp);
        assert_eq!((st.schedule_ns, st.bad_ts), (0, "clamp"));
        // One packet far ahead, then time runs backwards: the schedule is
        // much longer than the span, and said so.
        let g = pcap(
            "spike.pcap",
            1,
            &[
                (100, 0, 60, 60),
                (900, 0, 60, 60),
                (101, 0, 60, 60),
                (102, 0, 60, 60),
            ],
        );
        let (st, v) = scan_all(&spec(vec![g.clone()]));
        assert_eq!(
            (st.ts_backwards, st.span_ns, st.schedule_ns),
            (2, 2_000_000_000, 800_000_000_000)
        );
        // Offsets never go backwards; each packet keeps its own timestamp.
        let t: Vec<u64> = v.iter().map(|p| p.t_ns / 1_000_000_000).collect();
        assert_eq!(t, [0, 800, 800, 800]);
        assert_eq!(v[2].ts_ns, 101_000_000_000);
        let note = schedule_notice(&st, Timing::Original { multiplier: 2.0 }).unwrap();
        assert!(
            note.starts_with(
                "the schedule runs 400 s for 4 packet(s) (x2), while their timestamps span 2.00 s"
            ),
            "{note}"
        );
        assert!(note.contains("2 go backwards"), "{note}");
        // A few reordered packets (multi-queue capture) are no reason for a note.
        let h = pcap(
            "reorder.pcap",
            1,
            &[(100, 0, 60, 60), (100, 5, 60, 60), (100, 3, 60, 60)],
        );
        let (st, _) = scan_all(&spec(vec![h.clone()]));
        assert_eq!(st.ts_backwards, 1);
        assert!(schedule_notice(&st, Timing::Original { multiplier: 1.0 }).is_none());
        for p in [f, g, h] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn one_link_type_check_for_every_path() {
        let f = pcap("raw.pcap", 101, &[(1, 0, 40, 40)]);
        let files = vec![f.clone()];
        let want = format!(
            "{}: packet 1 has link type 101 — replay sends Ethernet frames (link type 1) only; convert first, e.g. `tcprewrite --dlt=enet --enet-dmac=.. --enet-smac=..`",
            f.display()
        );
        let mut st = ReadStats::default();
        let errs = [
            scan(&spec(files.clone()), &mut st, |_, _| true).unwrap_err(),
            side_map(&files, &wirelab_wire::rewrite::split::SplitMode::Auto).unwrap_err(),
            count_packets(&files).unwrap_err(),
        ];
        for e in errs {
            assert_eq!(e.to_string(), want);
        }
        let _ = std::fs::remove_file(f);
    }

    #[test]
    fn the_fcs_a_file_announces_is_removed_and_counted() {
        // Link-type field: Ethernet, FCS present, 4 bytes.
        let f = pcap("fcs.pcap", 0x2400_0001, &[(1, 0, 64, 64), (1, 1, 64, 64)]);
        let (st, v) = scan_all(&spec(vec![f.clone()]));
        assert_eq!(st.fcs_stripped, 2);
        assert_eq!((v[0].len, v[0].orig_len), (60, 60));
        let _ = std::fs::remove_file(f);
    }

    #[test]
    fn open_errors_ask_about_the_format_only_for_an_unknown_magic() {
        let dir = std::env::temp_dir();
        let e = count_packets(std::slice::from_ref(&dir))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{}: is a directory; give pcap or pcapng files",
                dir.display()
            )
        );
        let junk = dir.join(format!("wirelab-trace-{}-junk.pcap", std::process::id()));
        std::fs::write(&junk, b"hello world").unwrap();
        let e = count_packets(std::slice::from_ref(&junk))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("(magic 0x68656c6c); convert other capture formats with `editcap -F pcapng IN OUT` (Wireshark)"),
            "{e}"
        );
        let mut v = std::fs::read(pcap("v.pcap", 1, &[])).unwrap();
        v[4] = 3;
        std::fs::write(&junk, v).unwrap();
        let e = count_packets(std::slice::from_ref(&junk))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "unsupported pcap version 3.4 (libpcap reads 2.0 to 2.4, and DG/UX's 543.0)"
            ),
            "{e}"
        );
        let _ = std::fs::remove_file(junk);
    }

    #[test]
    fn orig_len_below_caplen_is_counted_for_writers() {
        let f = pcap(
            "orig.pcap",
            1,
            &[(1, 0, 60, 60), (1, 1, 60, 34), (1, 2, 60, 0)],
        );
        let (st, _) = scan_all(&spec(vec![f.clone()]));
        assert_eq!(
            (st.orig_len_below_caplen, st.orig_len_below_caplen_first),
            (2, Some(2))
        );
        let _ = std::fs::remove_file(f);
    }
}
