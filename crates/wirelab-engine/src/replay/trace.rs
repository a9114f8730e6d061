//! Reading the input files once: selection (packet numbers, BPF), static
//! rewrites, trace offsets; into memory (preload) or into chunks handed to
//! the sender by a read-ahead thread (stream).

use super::ReplayError;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use wirelab_io::bpf::BpfProgram;
use wirelab_pcap::PcapReader;
use wirelab_wire::rewrite::{RewriteSpec, RewriteStats, Verdict};

/// Packet-number ranges, 1-based and inclusive, across all input files in
/// order (`1-100,200-`). Empty = every packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(pub Vec<(u64, Option<u64>)>);

impl Ranges {
    /// Parses `7,11,20-23,174-`.
    pub fn parse(s: &str) -> Result<Ranges, String> {
        let mut v = vec![];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("{part:?}: expected N, N-M or N- (packet numbers start at 1)");
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
    /// Packets larger than the interface accepts (skipped).
    pub oversize: u64,
    /// Timestamps that went backwards (sent at the previous packet's time).
    pub ts_backwards: u64,
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
    /// Largest frame accepted (interface MTU + L2 header), if known.
    pub max_frame: Option<usize>,
}

fn open(path: &Path) -> Result<PcapReader<BufReader<File>>, ReplayError> {
    let f = File::open(path)
        .map_err(|e| ReplayError::Input(format!("cannot open {}: {e}", path.display())))?;
    PcapReader::new(BufReader::with_capacity(1 << 20, f)).map_err(|e| {
        ReplayError::Input(format!(
            "{}: {e} (is it a pcap or pcapng file?)",
            path.display()
        ))
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

/// Reads every file once, calling `sink` for each selected, rewritten
/// packet with its trace offset. `sink` returns false to stop early.
pub fn scan(
    spec: &ReadSpec,
    stats: &mut ReadStats,
    mut sink: impl FnMut(&[u8], u32, u64, u64) -> bool,
) -> Result<(), ReplayError> {
    let mut number = 0u64;
    let mut base = 0u64; // trace offset where the current file starts
    let mut last_t = 0u64;
    let mut gap_sum = 0u64;
    let mut gaps = 0u64;
    let mut buf = Vec::with_capacity(65_536);
    for (fi, path) in spec.files.iter().enumerate() {
        let mut r = open(path)?;
        let mut first_ts: Option<u64> = None;
        let mut prev_ts: Option<u64> = None;
        if fi > 0 && stats.selected > 0 {
            base = last_t + gap_sum.checked_div(gaps).unwrap_or(1_000_000);
        }
        let (mut cut, in_file) = (None, number);
        loop {
            let Some(p) = next_packet(&mut r, path, &mut cut)? else {
                if let Some(c) = cut.take() {
                    stats.cut_short += 1;
                    tracing::warn!(
                        "{}: file cut short ({c}): read the {} whole packet(s) before it",
                        path.display(),
                        number - in_file
                    );
                }
                break;
            };
            number += 1;
            stats.read += 1;
            if p.linktype != wirelab_pcap::LINKTYPE_ETHERNET {
                return Err(ReplayError::Input(format!(
                    "{}: packet {number} has link type {} — replay sends Ethernet frames (link type 1) only; convert first, e.g. `tcprewrite --dlt=enet --enet-dmac=.. --enet-smac=..`",
                    path.display(),
                    p.linktype
                )));
            }
            if !spec.select.keep(number, p.data, p.orig_len) {
                stats.filtered += 1;
                continue;
            }
            let ts = p.ts_ns;
            let f0 = *first_ts.get_or_insert(ts);
            let mut rel = ts.saturating_sub(f0);
            if let Some(pt) = prev_ts {
                if ts < pt {
                    stats.ts_backwards += 1;
                    rel = pt.saturating_sub(f0);
                } else {
                    gap_sum += ts - pt;
                    gaps += 1;
                }
            }
            prev_ts = Some(ts.max(prev_ts.unwrap_or(0)));
            let t = base + rel;
            buf.clear();
            buf.extend_from_slice(p.data);
            let mut orig = p.orig_len;
            if spec.rewrite.apply(&mut buf, &mut orig, &mut stats.rewrite) == Verdict::Drop {
                stats.filtered += 1;
                continue;
            }
            if spec.max_frame.is_some_and(|m| buf.len() > m) {
                stats.oversize += 1;
                continue;
            }
            stats.selected += 1;
            last_t = t;
            if !sink(&buf, orig, t, number) {
                return Ok(());
            }
        }
    }
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
}

/// Loads everything into memory.
pub fn preload(spec: &ReadSpec, stats: &mut ReadStats) -> Result<Trace, ReplayError> {
    let mut t = Trace::default();
    scan(spec, stats, |d, orig_len, t_ns, number| {
        t.pkts.push(Pkt {
            off: t.arena.len(),
            len: d.len() as u32,
            orig_len,
            t_ns,
            number,
        });
        t.arena.extend_from_slice(d);
        true
    })?;
    t.arena.shrink_to_fit();
    t.pkts.shrink_to_fit();
    Ok(t)
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
    let each = |f: &mut dyn FnMut(&[u8])| -> Result<(), ReplayError> {
        for path in files {
            let mut r = open(path)?;
            while let Some(p) = next_packet(&mut r, path, &mut None)? {
                f(p.data);
            }
        }
        Ok(())
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
    for path in files {
        let mut r = open(path)?;
        while next_packet(&mut r, path, &mut None)?.is_some() {
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capture killed inside a write: both formats, cut inside the last record, are
    /// read up to it, counted alike by every reader of the trace.
    #[test]
    fn a_file_cut_inside_its_last_record_is_read_up_to_it() {
        for ng in [false, true] {
            let p = std::env::temp_dir().join(format!("wl-trace-cut-{ng}-{}", std::process::id()));
            let mut bytes = Vec::new();
            if ng {
                let mut w = wirelab_pcap::PcapngWriter::new(&mut bytes).unwrap();
                let i = w.add_interface("eth0", 1, 65_535).unwrap();
                for n in 0..3u64 {
                    w.write_packet(i, 1_000 + n, 60, &[n as u8; 60]).unwrap();
                }
                w.into_inner().unwrap();
            } else {
                let mut w = wirelab_pcap::PcapWriter::new(
                    &mut bytes,
                    1,
                    65_535,
                    wirelab_pcap::PcapPrecision::Nano,
                )
                .unwrap();
                for n in 0..3u64 {
                    w.write_packet(1_000 + n, 60, &[n as u8; 60]).unwrap();
                }
                w.flush().unwrap();
            }
            bytes.truncate(bytes.len() - 30);
            std::fs::write(&p, &bytes).unwrap();
            let spec = ReadSpec {
                files: vec![p.clone()],
                select: Selection::default(),
                rewrite: RewriteSpec::default(),
                max_frame: None,
            };
            let mut stats = ReadStats::default();
            let t = preload(&spec, &mut stats).unwrap();
            assert_eq!(
                (t.pkts.len(), stats.read, stats.cut_short),
                (2, 2, 1),
                "ng {ng}"
            );
            assert_eq!(count_packets(&spec.files).unwrap(), 2);
            let mode = wirelab_wire::rewrite::split::SplitMode::Auto;
            assert_eq!(side_map(&spec.files, &mode).unwrap().sides.len(), 2);
            let _ = std::fs::remove_file(&p);
        }
    }
}
