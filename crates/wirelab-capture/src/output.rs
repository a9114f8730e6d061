//! Capture files: pcapng or pcap, to a file or stdout, with rotation.
//!
//! # Names
//!
//! Without rotation the path is used as given. With any rotation (`max_bytes`, `every_ns`)
//! files are numbered from 1 before the extension: `out.pcapng` → `out-00001.pcapng`,
//! `out-00002.pcapng`, ... (a path without extension gets `-00001` appended). With
//! `max_files = N` only the newest N files are kept: opening file N+1 deletes the oldest
//! (a ring of files; names keep counting up, so sorting by name sorts by time).
//!
//! # Rotation
//!
//! - by size: a file is closed once it holds at least `max_bytes` bytes (the packet that
//!   crosses the limit is still written to it, so no file is ever empty);
//! - by time: every `every_ns` of wall-clock time from the start or, with `align`, at
//!   multiples of `every_ns` since the Unix epoch (so `--rotate-every 1h --rotate-align`
//!   cuts at the top of each hour). Time rotation is checked once per processing cycle.
//!
//! Every pcapng file ends with an interface statistics block holding the counters of the
//! last [`Output::tick`]. pcap files cannot carry statistics.
//!
//! # Crash safety
//!
//! No encoded byte waits in the batch longer than [`FLUSH_INTERVAL_NS`] (checked at every
//! [`Output::tick`], once per processing cycle): what the kernel does not have yet then
//! goes to it. With `O_DIRECT` those bytes go through a second, buffered handle at their
//! place in the file and stay in the batch, to be written again as part of the next whole
//! block; right after each whole-block write, which ends anywhere in a record, the rest
//! of the batch follows the same way. So a capture killed outright (`kill -9`, the OOM
//! killer) leaves a file that ends after a whole packet record or block and holds every
//! packet handed to [`Output::write`] more than [`FLUSH_INTERVAL_NS`] before the kill
//! (packets reach the writer after the ring's retire timeout); only the final interface
//! statistics block is missing. A kill that lands between a whole-block write and the
//! write that completes it, or inside a `write(2)`, leaves a partial last record, which
//! readers (wirelab, tshark, capinfos) report as a cut-short file after counting the
//! packets before it.
//!
//! # Batching and direct I/O
//!
//! Every byte of a file (header blocks, packet records, statistics blocks) is encoded by
//! `wirelab-pcap` into one preallocated batch buffer ([`BATCH_BYTES`]): packet records with
//! its [`RecordEncoder`] (no per-packet call through a writer stack, no allocation), the
//! other blocks with its writers, so the file order is always the call order. A file gets the batch in
//! one `write(2)` whenever it holds [`BATCH_BYTES`]; stdout gets it at every
//! [`Output::tick`] (once per processing cycle) so a pipe reader sees packets as they
//! come.
//!
//! Regular files are opened with `O_DIRECT` (unless [`OutputConfig::direct_io`] is off):
//! whole 4 KiB-aligned blocks go from the batch to the device without the page-cache
//! copy that made up a third of the capture thread's time at 200 kpps; the unaligned
//! tail stays in the batch until more arrives (it also goes through the page cache at
//! once, see "Crash safety"), and is written for good through the page cache when the
//! file is closed. A filesystem that refuses `O_DIRECT` (at open or at the first
//! write) gets buffered writes; [`FileSummary::direct_io`] says which happened.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use wirelab_core::capture::next_rotation_ns;
use wirelab_io::direct::{clear_direct, open_direct, DIRECT_ALIGN};
use wirelab_pcap::{
    InterfaceOptions, PcapPrecision, PcapWriter, PcapngWriter, RecordEncoder, SectionOptions,
    StatsCounters,
};

/// Size of the record batch: one `write(2)` per this many bytes at most.
pub const BATCH_BYTES: usize = 1 << 20;
/// Longest time encoded bytes wait in the batch before they are handed to the kernel:
/// what a `kill -9` can lose.
pub const FLUSH_INTERVAL_NS: u64 = 200_000_000;

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// pcapng, nanosecond timestamps (`if_tsresol` 9).
    Pcapng,
    /// Classic pcap with µs or ns timestamps.
    Pcap(PcapPrecision),
}

/// When to start a new file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Close a file once it holds at least this many bytes.
    pub max_bytes: Option<u64>,
    /// Start a new file every this many ns of wall-clock time.
    pub every_ns: Option<u64>,
    /// Align time rotation to multiples of `every_ns` since the epoch.
    pub align: bool,
    /// Keep only the newest this many files.
    pub max_files: Option<u32>,
}

impl Rotation {
    /// Whether files are numbered.
    pub fn enabled(&self) -> bool {
        self.max_bytes.is_some() || self.every_ns.is_some()
    }
}

/// Where and how to write.
#[derive(Debug, Clone)]
pub struct OutputConfig {
    /// File path; `None` writes to stdout.
    pub path: Option<PathBuf>,
    /// Format.
    pub format: FileFormat,
    /// Rotation (files only).
    pub rotation: Rotation,
    /// Interface name for the IDB.
    pub ifname: String,
    /// Interface description (`if_description`), e.g. the filter in use.
    pub description: Option<String>,
    /// LINKTYPE_*.
    pub linktype: u16,
    /// Snap length.
    pub snaplen: u32,
    /// Flush after every processing cycle (on for stdout, so a pipe reader sees packets
    /// as they come).
    pub flush_each_cycle: bool,
    /// Write files with `O_DIRECT` where the filesystem allows (see the module docs).
    pub direct_io: bool,
}

/// One file written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileSummary {
    /// Path ("-" for stdout).
    pub path: String,
    /// Packets in the file.
    pub packets: u64,
    /// Bytes in the file.
    pub bytes: u64,
    /// Whether the file was deleted by the ring of files (`max_files`).
    pub deleted: bool,
    /// Whether whole blocks went to the file with `O_DIRECT` (no page-cache copy).
    pub direct_io: bool,
}

/// Where encoded bytes go.
enum Dest {
    Stdout(BufWriter<io::Stdout>),
    File(FileSink),
}

/// A capture file: `O_DIRECT` whole blocks while it can, buffered otherwise.
struct FileSink {
    file: File,
    direct: bool,
    path: PathBuf,
    /// Bytes written through `file` (its offset).
    pos: u64,
    /// A second, buffered handle for the unaligned tail while `file` is `O_DIRECT`
    /// (opened at the first [`FileSink::write_pending`]).
    tail: Option<File>,
}

impl FileSink {
    fn create(path: &Path, direct: bool) -> io::Result<FileSink> {
        let opened = if direct { open_direct(path)? } else { None };
        let (file, direct) = match opened {
            Some(file) => (file, true),
            None => (File::create(path)?, false),
        };
        Ok(FileSink {
            file,
            direct,
            path: path.to_path_buf(),
            pos: 0,
            tail: None,
        })
    }

    /// Hands the bytes of `buf` from `from` on to the kernel now, so the file ends after
    /// the last whole record. Buffered, they are written and taken out of `buf`. With
    /// `O_DIRECT`, they go through the buffered handle at their place in the file and stay
    /// in `buf`: the next whole-block write rewrites them.
    fn write_pending(&mut self, buf: &mut AlignedBuf, from: usize) -> io::Result<()> {
        if !self.direct {
            return self.write_some(buf);
        }
        if self.tail.is_none() {
            self.tail = Some(std::fs::OpenOptions::new().write(true).open(&self.path)?);
        }
        if let Some(t) = &self.tail {
            t.write_all_at(&buf.data()[from..], self.pos + from as u64)?;
        }
        Ok(())
    }

    /// Writes what can go now: with `O_DIRECT` the whole aligned blocks at the front of
    /// `buf` (the rest stays for later), buffered everything.
    fn write_some(&mut self, buf: &mut AlignedBuf) -> io::Result<()> {
        if self.direct {
            let n = buf.len() / DIRECT_ALIGN * DIRECT_ALIGN;
            if n == 0 {
                return Ok(());
            }
            buf.realign();
            // Byte by byte what the kernel took, so a failure after a short write
            // neither repeats nor skips bytes.
            let mut done = 0;
            let res = loop {
                if done == n {
                    break Ok(());
                }
                match self.file.write(&buf.data()[done..n]) {
                    Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                    Ok(k) => done += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            buf.consume(done);
            self.pos += done as u64;
            match res {
                Ok(()) => return Ok(()),
                // A filesystem that opened O_DIRECT but refuses the write (or a short
                // write that left the offset unaligned): go on buffered.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
                    self.buffered()?
                }
                Err(e) => return Err(e),
            }
        }
        self.file.write_all(buf.data())?;
        self.pos += buf.len() as u64;
        buf.clear();
        Ok(())
    }

    /// Writes everything left, the unaligned tail through the page cache.
    fn write_rest(&mut self, buf: &mut AlignedBuf) -> io::Result<()> {
        self.write_some(buf)?;
        if !buf.is_empty() {
            self.buffered()?;
            self.file.write_all(buf.data())?;
            self.pos += buf.len() as u64;
            buf.clear();
        }
        Ok(())
    }

    fn buffered(&mut self) -> io::Result<()> {
        if self.direct {
            clear_direct(&self.file)?;
            self.direct = false;
        }
        Ok(())
    }
}

/// A byte buffer whose contents start on a [`DIRECT_ALIGN`] boundary, as `O_DIRECT`
/// wants of the memory it writes from. Encoders append through [`AlignedBuf::vec`].
struct AlignedBuf {
    v: Vec<u8>,
    /// Padding before the data: `v.as_ptr() + base` is aligned.
    base: usize,
}

impl AlignedBuf {
    fn with_capacity(cap: usize) -> AlignedBuf {
        let mut v = Vec::with_capacity(cap + DIRECT_ALIGN);
        let base = Self::pad_for(&v);
        v.resize(base, 0);
        AlignedBuf { v, base }
    }

    fn pad_for(v: &[u8]) -> usize {
        (DIRECT_ALIGN - v.as_ptr() as usize % DIRECT_ALIGN) % DIRECT_ALIGN
    }

    /// Restores the alignment after the vector has moved (it grew past its capacity).
    fn realign(&mut self) {
        if Self::pad_for(&self.v) == self.base {
            return;
        }
        let data = self.v.split_off(self.base);
        // The final allocation first, then the padding it needs: nothing moves after.
        let mut v = Vec::with_capacity(self.v.capacity().max(data.len()) + DIRECT_ALIGN);
        let base = Self::pad_for(&v);
        v.resize(base, 0);
        v.extend_from_slice(&data);
        self.v = v;
        self.base = base;
    }

    /// The vector to append encoded bytes to.
    fn vec(&mut self) -> &mut Vec<u8> {
        &mut self.v
    }

    fn data(&self) -> &[u8] {
        &self.v[self.base..]
    }

    fn len(&self) -> usize {
        self.v.len() - self.base
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the first `n` data bytes, moving the rest to the front.
    fn consume(&mut self, n: usize) {
        let end = self.v.len();
        self.v.copy_within(self.base + n..end, self.base);
        self.v.truncate(end - n);
    }

    fn clear(&mut self) {
        self.v.truncate(self.base);
    }
}

/// The encoders of the current file. Every byte reaches the file through the batch.
struct Writer {
    /// pcapng's block writer: header and statistics blocks are encoded into its vector
    /// and moved to the batch. `None` for classic pcap (its file header is written once).
    ng: Option<PcapngWriter<Vec<u8>>>,
    /// Packet records, appended straight to the batch.
    records: RecordEncoder,
}

/// The numbered name of file `index` (1-based) for `path`.
pub fn numbered(path: &Path, index: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let new = match name.rfind('.') {
        Some(dot) if dot > 0 => format!("{}-{:05}{}", &name[..dot], index, &name[dot..]),
        _ => format!("{name}-{index:05}"),
    };
    path.with_file_name(new)
}

/// `path` with `.tN` before the extension (per-thread files): `out.pcapng` → `out.t0.pcapng`.
pub fn per_thread(path: &Path, thread: usize) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let new = match name.rfind('.') {
        Some(dot) if dot > 0 => format!("{}.t{}{}", &name[..dot], thread, &name[dot..]),
        _ => format!("{name}.t{thread}"),
    };
    path.with_file_name(new)
}

/// A writer that rotates.
pub struct Output {
    cfg: OutputConfig,
    w: Option<Writer>,
    dest: Option<Dest>,
    index: u32,
    live: VecDeque<usize>,
    files: Vec<FileSummary>,
    next_cut_ns: Option<u64>,
    counters: StatsCounters,
    cur_packets: u64,
    /// Bytes of the current file, written or still in the batch.
    cur_bytes: u64,
    dirty: bool,
    /// Encoded bytes not yet written.
    batch: AlignedBuf,
    /// Batch length when it was last handed to the kernel in full.
    flushed_len: usize,
    /// When a tick first saw bytes the kernel does not have yet.
    pending_since: Option<u64>,
}

impl Output {
    /// Opens the first file (or stdout) at wall-clock `now_ns`.
    pub fn create(cfg: OutputConfig, now_ns: u64) -> io::Result<Output> {
        let mut o = Output {
            next_cut_ns: cfg
                .rotation
                .every_ns
                .filter(|_| cfg.path.is_some())
                .map(|e| next_rotation_ns(now_ns, e, cfg.rotation.align)),
            w: None,
            dest: None,
            index: 0,
            live: VecDeque::new(),
            files: Vec::new(),
            counters: StatsCounters {
                start_ns: Some(now_ns),
                ..Default::default()
            },
            cur_packets: 0,
            cur_bytes: 0,
            dirty: false,
            batch: AlignedBuf::with_capacity(BATCH_BYTES + 2 * 65_536),
            flushed_len: 0,
            pending_since: None,
            cfg,
        };
        o.open_next()?;
        Ok(o)
    }

    /// Moves the bytes the block encoder produced into the batch.
    fn take_encoded(&mut self) {
        if let Some(w) = self.w.as_mut().and_then(|w| w.ng.as_mut()) {
            let v = w.get_mut();
            self.cur_bytes += v.len() as u64;
            self.batch.vec().extend_from_slice(v);
            v.clear();
        }
    }

    fn open_next(&mut self) -> io::Result<()> {
        let (dest, name) = match &self.cfg.path {
            None => (
                Dest::Stdout(BufWriter::with_capacity(1 << 16, io::stdout())),
                "-".to_string(),
            ),
            Some(p) => {
                self.index += 1;
                let path = if self.cfg.rotation.enabled() {
                    numbered(p, self.index)
                } else {
                    p.clone()
                };
                let f = FileSink::create(&path, self.cfg.direct_io).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
                })?;
                (Dest::File(f), path.display().to_string())
            }
        };
        let direct = matches!(&dest, Dest::File(f) if f.direct);
        self.dest = Some(dest);
        self.cur_bytes = 0;
        match self.cfg.format {
            FileFormat::Pcapng => {
                let os = os_name();
                let sec = SectionOptions {
                    os: os.as_deref(),
                    ..Default::default()
                };
                let mut w = PcapngWriter::with_section(Vec::new(), &sec)?;
                let mut idb =
                    InterfaceOptions::new(&self.cfg.ifname, self.cfg.linktype, self.cfg.snaplen);
                idb.description = self.cfg.description.as_deref();
                let id = w.add_interface_with(&idb)?;
                self.w = Some(Writer {
                    records: w.record_encoder(id)?,
                    ng: Some(w),
                });
                self.take_encoded();
            }
            FileFormat::Pcap(prec) => {
                let w = PcapWriter::new(
                    Vec::new(),
                    u32::from(self.cfg.linktype),
                    self.cfg.snaplen,
                    prec,
                )?;
                let records = w.record_encoder();
                let head = w.into_inner()?;
                self.cur_bytes += head.len() as u64;
                self.batch.vec().extend_from_slice(&head);
                self.w = Some(Writer { ng: None, records });
            }
        }
        self.files.push(FileSummary {
            path: name,
            packets: 0,
            bytes: 0,
            deleted: false,
            direct_io: direct,
        });
        self.live.push_back(self.files.len() - 1);
        self.cur_packets = 0;
        if let Some(max) = self.cfg.rotation.max_files {
            while self.live.len() > max.max(1) as usize {
                if let Some(old) = self.live.pop_front() {
                    let f = &mut self.files[old];
                    match std::fs::remove_file(&f.path) {
                        Ok(()) => f.deleted = true,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => f.deleted = true,
                        Err(e) => {
                            return Err(io::Error::new(
                                e.kind(),
                                format!("cannot delete old capture file {}: {e}", f.path),
                            ))
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Hands the batch to the destination: a file gets whole aligned blocks, then the
    /// tail through the page cache (it stays in the batch for the next block), stdout
    /// everything.
    fn write_batch(&mut self) -> io::Result<()> {
        match &mut self.dest {
            Some(Dest::File(f)) => {
                let before = self.batch.len();
                f.write_some(&mut self.batch)?;
                // Consumed bytes were the front of the batch: the flushed part shrinks alike.
                self.flushed_len = self.flushed_len.saturating_sub(before - self.batch.len());
                // Whole blocks end anywhere in a record: complete the file at once.
                if self.batch.len() > self.flushed_len {
                    f.write_pending(&mut self.batch, self.flushed_len)?;
                    self.flushed_len = self.batch.len();
                }
                Ok(())
            }
            Some(Dest::Stdout(s)) => {
                s.write_all(self.batch.data())?;
                self.batch.clear();
                self.flushed_len = 0;
                Ok(())
            }
            None => Err(io::Error::other("capture output already closed")),
        }
    }

    fn close_current(&mut self, now_ns: u64) -> io::Result<()> {
        if let Some(w) = self.w.as_mut().and_then(|w| w.ng.as_mut()) {
            let c = StatsCounters {
                end_ns: Some(now_ns),
                ..self.counters
            };
            w.write_interface_stats(0, now_ns, &c)?;
        }
        self.take_encoded();
        self.w = None;
        match self.dest.take() {
            Some(Dest::File(mut f)) => f.write_rest(&mut self.batch)?,
            Some(Dest::Stdout(mut s)) => {
                s.write_all(self.batch.data())?;
                self.batch.clear();
                s.flush()?;
            }
            None => {}
        }
        self.flushed_len = 0;
        self.pending_since = None;
        if let Some(s) = self.files.last_mut() {
            s.packets = self.cur_packets;
            s.bytes = self.cur_bytes;
        }
        Ok(())
    }

    /// Appends one packet record (cut to the snap length) to the current file; rotates by
    /// size.
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let Some(w) = &self.w else {
            return Err(io::Error::other("capture output already closed"));
        };
        let before = self.batch.len();
        w.records
            .encode(self.batch.vec(), ts_ns, orig_len, data)
            .map_err(|e| match self.cfg.format {
                // The one record classic pcap cannot hold: a timestamp after 2106.
                FileFormat::Pcap(_) => {
                    io::Error::new(e.kind(), format!("{e}: use --format pcapng"))
                }
                FileFormat::Pcapng => e,
            })?;
        self.cur_bytes += (self.batch.len() - before) as u64;
        self.cur_packets += 1;
        self.dirty = true;
        if let Some(max) = self.cfg.rotation.max_bytes {
            if self.cfg.path.is_some() && self.cur_bytes >= max {
                self.close_current(ts_ns)?;
                self.open_next()?;
                return Ok(());
            }
        }
        if self.batch.len() >= BATCH_BYTES {
            self.write_batch()?;
        }
        Ok(())
    }

    /// Once per processing cycle: remembers the counters for the next statistics block,
    /// rotates by time, writes to stdout. A file is written in [`BATCH_BYTES`] pieces as
    /// the batch fills (and in full when it is closed).
    pub fn tick(&mut self, now_ns: u64, counters: Option<&StatsCounters>) -> io::Result<()> {
        if let Some(c) = counters {
            self.counters = StatsCounters {
                start_ns: self.counters.start_ns,
                ..*c
            };
        }
        if let (Some(cut), Some(every)) = (self.next_cut_ns, self.cfg.rotation.every_ns) {
            if now_ns >= cut {
                self.close_current(now_ns)?;
                self.open_next()?;
                self.next_cut_ns = Some(next_rotation_ns(now_ns, every, self.cfg.rotation.align));
            }
        }
        if self.cfg.flush_each_cycle && self.dirty {
            self.dirty = false;
            self.write_batch()?;
            if let Some(Dest::Stdout(s)) = &mut self.dest {
                s.flush()?;
            }
        }
        self.flush_if_due(now_ns)
    }

    /// Hands the bytes the kernel does not have yet to it once they have waited
    /// [`FLUSH_INTERVAL_NS`] (see the module docs).
    fn flush_if_due(&mut self, now_ns: u64) -> io::Result<()> {
        if self.batch.len() == self.flushed_len {
            self.pending_since = None;
            return Ok(());
        }
        let since = *self.pending_since.get_or_insert(now_ns);
        if now_ns.saturating_sub(since) < FLUSH_INTERVAL_NS {
            return Ok(());
        }
        match &mut self.dest {
            Some(Dest::File(f)) => f.write_pending(&mut self.batch, self.flushed_len)?,
            Some(Dest::Stdout(s)) => {
                s.write_all(self.batch.data())?;
                self.batch.clear();
                s.flush()?;
            }
            None => return Err(io::Error::other("capture output already closed")),
        }
        self.flushed_len = self.batch.len();
        self.pending_since = None;
        Ok(())
    }

    /// Bytes in the current file.
    pub fn current_bytes(&self) -> u64 {
        self.cur_bytes
    }

    /// Writes the final statistics block, flushes and closes; returns every file written.
    pub fn finish(mut self, now_ns: u64, counters: &StatsCounters) -> io::Result<Vec<FileSummary>> {
        self.counters = StatsCounters {
            start_ns: self.counters.start_ns,
            ..*counters
        };
        self.close_current(now_ns)?;
        Ok(self.files)
    }
}

fn os_name() -> Option<String> {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    Some(format!("Linux {}", r.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirelab_pcap::PcapReader;

    fn cfg(dir: &Path, format: FileFormat, rotation: Rotation) -> OutputConfig {
        OutputConfig {
            path: Some(dir.join("out.pcapng")),
            format,
            rotation,
            ifname: "veth0".into(),
            description: Some("filter: udp".into()),
            linktype: 1,
            snaplen: 65535,
            flush_each_cycle: false,
            direct_io: true,
        }
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wl-out-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn aligned_buf_keeps_alignment_across_growth_and_consume() {
        let mut b = AlignedBuf::with_capacity(100);
        assert_eq!(b.data().as_ptr() as usize % DIRECT_ALIGN, 0);
        let bytes: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        b.vec().extend_from_slice(&bytes); // grows: the vector moves
        b.realign();
        assert_eq!(b.data().as_ptr() as usize % DIRECT_ALIGN, 0);
        assert_eq!(b.data(), &bytes[..]);
        b.consume(DIRECT_ALIGN);
        assert_eq!(b.data(), &bytes[DIRECT_ALIGN..]);
        assert_eq!(b.data().as_ptr() as usize % DIRECT_ALIGN, 0);
        b.clear();
        assert!(b.is_empty());
    }

    /// Several batches' worth of records: whole blocks go O_DIRECT (where /tmp allows),
    /// the tail and the statistics block buffered; the file must equal the buffered one
    /// byte for byte.
    #[test]
    fn direct_and_buffered_files_are_identical() {
        let d = tmpdir("direct");
        let mut files = Vec::new();
        for direct in [true, false] {
            let mut c = cfg(&d, FileFormat::Pcapng, Rotation::default());
            c.direct_io = direct;
            c.path = Some(d.join(format!("o-{direct}.pcapng")));
            let mut o = Output::create(c, 5).unwrap();
            for i in 0..30_000u64 {
                let len = 60 + (i % 97) as usize;
                let data: Vec<u8> = (0..len).map(|b| (b as u64 ^ i) as u8).collect();
                o.write(1_700_000_000_000_000_000 + i, len as u32, &data)
                    .unwrap();
                if i % 1000 == 0 {
                    o.tick(10 + i, None).unwrap();
                }
            }
            let f = o.finish(99, &StatsCounters::default()).unwrap();
            assert_eq!(f[0].packets, 30_000);
            let bytes = std::fs::read(&f[0].path).unwrap();
            assert_eq!(f[0].bytes, bytes.len() as u64);
            assert!(bytes.len() > 3 * BATCH_BYTES);
            if !direct {
                assert!(!f[0].direct_io);
            }
            files.push(bytes);
        }
        assert_eq!(files[0], files[1]);
        let mut r = PcapReader::new(&files[0][..]).unwrap();
        let mut n = 0u64;
        while let Some(p) = r.next_packet().unwrap() {
            assert_eq!(p.ts_ns, 1_700_000_000_000_000_000 + n);
            n += 1;
        }
        assert_eq!(n, 30_000);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// What a `kill -9` would find: once the flush interval has passed at a tick, the file
    /// on disk (still open, no statistics block yet) reads to the last packet written, with
    /// no partial record; the tail rewritten later as part of a whole block leaves the final
    /// file byte for byte as without the interval flushes.
    #[test]
    fn waiting_packets_reach_the_file_at_the_flush_interval() {
        let d = tmpdir("flush");
        let on_disk = |path: &Path| -> Vec<u64> {
            let bytes = std::fs::read(path).unwrap();
            let mut r = PcapReader::new(&bytes[..]).unwrap();
            let mut ts = Vec::new();
            while let Some(p) = r.next_packet().unwrap() {
                ts.push(p.ts_ns);
            }
            ts
        };
        for format in [FileFormat::Pcapng, FileFormat::Pcap(PcapPrecision::Nano)] {
            let mut finals = Vec::new();
            for (direct, ticks) in [(true, true), (false, true), (true, false)] {
                let mut c = cfg(&d, format, Rotation::default());
                c.direct_io = direct;
                let path = d.join(format!("f-{direct}-{ticks}"));
                c.path = Some(path.clone());
                let mut o = Output::create(c, 5).unwrap();
                let mut t = 10;
                let mut n = 0u64;
                for round in 0..4u64 {
                    // 3, then ~8 KiB, then ~300 KiB of records: within one 4 KiB block,
                    // across blocks, and far past them but below a full batch; then past
                    // a full batch, written at once in whole blocks and completed.
                    let count = [3, 100, 4000, 12_000][round as usize];
                    for _ in 0..count {
                        let len = 60 + (n % 31) as usize;
                        o.write(
                            1_700_000_000_000_000_000 + n,
                            len as u32,
                            &vec![n as u8; len],
                        )
                        .unwrap();
                        n += 1;
                    }
                    if round == 3 {
                        // The full batch went out without a tick, ending after a record.
                        let got = on_disk(&path).len() as u64;
                        assert!(got > 4103 && got < n, "{got} of {n}");
                    }
                    if ticks {
                        o.tick(t, None).unwrap();
                        o.tick(t + FLUSH_INTERVAL_NS - 1, None).unwrap();
                        t += FLUSH_INTERVAL_NS;
                        o.tick(t, None).unwrap();
                        let ts = on_disk(&path);
                        assert_eq!(ts.len() as u64, n, "{format:?} direct {direct}");
                        assert_eq!(ts.last(), Some(&(1_700_000_000_000_000_000 + n - 1)));
                    }
                }
                o.finish(10 * FLUSH_INTERVAL_NS, &StatsCounters::default())
                    .unwrap();
                assert_eq!(on_disk(&path).len() as u64, n);
                finals.push(std::fs::read(&path).unwrap());
            }
            assert!(finals.iter().all(|f| *f == finals[0]), "{format:?}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn names() {
        assert_eq!(
            numbered(Path::new("/a/out.pcapng"), 3),
            Path::new("/a/out-00003.pcapng")
        );
        assert_eq!(numbered(Path::new("cap"), 12), Path::new("cap-00012"));
        assert_eq!(numbered(Path::new(".x"), 1), Path::new(".x-00001"));
        assert_eq!(per_thread(Path::new("o.pcap"), 1), Path::new("o.t1.pcap"));
    }

    #[test]
    fn pcapng_with_stats_block() {
        let d = tmpdir("ng");
        let mut o =
            Output::create(cfg(&d, FileFormat::Pcapng, Rotation::default()), 1_000).unwrap();
        o.write(1_700_000_000_000_000_001, 60, &[1u8; 60]).unwrap();
        o.write(1_700_000_000_000_000_002, 1000, &[2u8; 60])
            .unwrap();
        let c = StatsCounters {
            ifrecv: Some(2),
            ifdrop: Some(0),
            ..Default::default()
        };
        let files = o.finish(2_000, &c).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].packets, 2);
        let bytes = std::fs::read(d.join("out.pcapng")).unwrap();
        assert_eq!(files[0].bytes, bytes.len() as u64);
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        let mut n = 0;
        while let Some(p) = r.next_packet().unwrap() {
            n += 1;
            assert_eq!(p.ts_ns, 1_700_000_000_000_000_000 + n);
        }
        assert_eq!(n, 2);
        assert_eq!(r.interfaces()[0].name.as_deref(), Some("veth0"));
        let st = &r.interface_stats()[0].counters;
        assert_eq!(
            (st.ifrecv, st.ifdrop, st.start_ns, st.end_ns),
            (Some(2), Some(0), Some(1_000), Some(2_000))
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_micro_records_cut_to_snaplen_and_past_2106_refused() {
        let d = tmpdir("us");
        let mut c = cfg(
            &d,
            FileFormat::Pcap(PcapPrecision::Micro),
            Rotation::default(),
        );
        c.snaplen = 64;
        let mut o = Output::create(c, 0).unwrap();
        o.write(1_700_000_000_123_456_789, 100, &[3u8; 100])
            .unwrap();
        let e = o.write(u64::MAX, 60, &[0u8; 60]).unwrap_err();
        assert!(e.to_string().contains("use --format pcapng"), "{e}");
        let files = o.finish(1, &StatsCounters::default()).unwrap();
        assert_eq!((files[0].packets, files[0].bytes), (1, 24 + 16 + 64));
        let bytes = std::fs::read(d.join("out.pcapng")).unwrap();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.ts_ns, p.orig_len, p.data),
            (1_700_000_000_123_456_000, 100, &[3u8; 64][..])
        );
        assert!(r.next_packet().unwrap().is_none());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn rotation_by_size_with_ring_of_files() {
        let d = tmpdir("size");
        let rot = Rotation {
            max_bytes: Some(1000),
            max_files: Some(2),
            ..Default::default()
        };
        let mut o = Output::create(cfg(&d, FileFormat::Pcap(PcapPrecision::Nano), rot), 0).unwrap();
        for i in 0..100u64 {
            o.write(1_000_000_000 + i, 100, &[0u8; 100]).unwrap();
        }
        let files = o.finish(5, &StatsCounters::default()).unwrap();
        // 24-byte header + 116 bytes per record: 9 records cross 1000 bytes.
        assert_eq!(files.len(), 12);
        assert!(files.iter().take(10).all(|f| f.deleted && f.packets == 9));
        assert_eq!(files.iter().map(|f| f.packets).sum::<u64>(), 100);
        let mut left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["out-00011.pcapng", "out-00012.pcapng"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn rotation_by_aligned_time() {
        let d = tmpdir("time");
        let s = 1_000_000_000u64;
        let rot = Rotation {
            every_ns: Some(10 * s),
            align: true,
            ..Default::default()
        };
        let mut o = Output::create(cfg(&d, FileFormat::Pcapng, rot), 1_234 * s + 5).unwrap();
        let c = StatsCounters::default();
        o.write(1_234 * s + 6, 60, &[0u8; 60]).unwrap();
        o.tick(1_239 * s, Some(&c)).unwrap(); // before the boundary at 1240 s
        o.tick(1_240 * s, Some(&c)).unwrap(); // cut
        o.write(1_240 * s + 1, 60, &[0u8; 60]).unwrap();
        o.tick(1_249 * s, None).unwrap();
        o.tick(1_250 * s + 3, None).unwrap(); // cut
        let files = o.finish(1_251 * s, &c).unwrap();
        let counts: Vec<_> = files.iter().map(|f| f.packets).collect();
        assert_eq!(counts, [1, 1, 0]);
        assert!(files[2].path.ends_with("out-00003.pcapng"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
