//! AF_PACKET TPACKET_V3 receive ring: one mmap'd ring of blocks shared with the kernel.
//!
//! The kernel fills a block with packets back to back and hands it to user space when it
//! is full or when its retire timer (`tp_retire_blk_tov`, ms) fires; user space reads the
//! packets *in place* and hands the block back. Nothing is allocated or copied per packet.
//!
//! # Setup order (as in netsniff-ng's `ring_rx.c` and libpcap)
//!
//! 1. `socket(AF_PACKET, SOCK_RAW, 0)`: protocol 0, so nothing is queued before bind;
//! 2. `PACKET_VERSION = TPACKET_V3`; `PACKET_IGNORE_OUTGOING` for `--direction in`;
//! 3. `SO_ATTACH_FILTER` with the compiled BPF program (its accept return is the snap
//!    length, so the kernel truncates before copying into the ring);
//! 4. `PACKET_RX_RING` with `tpacket_req3` — on `ENOMEM` the block count is halved (down to
//!    2) and the shrink is reported in [`RxRing::notes`];
//! 5. `mmap` of the whole ring (`MAP_SHARED | MAP_POPULATE`);
//! 6. `bind` to the interface with `ETH_P_ALL`; then `PACKET_FANOUT` if asked (the kernel
//!    requires a bound socket); then `PACKET_ADD_MEMBERSHIP` / `PACKET_MR_PROMISC` (undone
//!    by the kernel when the socket closes).
//!
//! # Contract of [`RxRing::next_block`]
//!
//! Blocks are consumed strictly in ring order. A [`Block`] borrows the ring mutably, so at
//! most one block is out at a time; dropping it gives it back to the kernel
//! (`block_status = TP_STATUS_KERNEL` with release ordering). Packet views borrow the block,
//! so none can outlive the hand-back.
//!
//! Counters: [`RxRing::stats`] reads `PACKET_STATISTICS` (which the kernel resets on every
//! read) and accumulates, so the totals are since the ring was opened. `packets` counts
//! every packet that passed the filter, *including* the dropped ones (kernel semantics).
//!
//! # [`BlockSource`]
//!
//! What a capture driver needs from a ring, as a trait: the next retired block (handed
//! back by dropping it), a wait for one, the counters, the geometry. [`RxRing`] implements
//! it by calling the inherent methods above; `crate::sim::SimRing` is a scripted ring for
//! driver tests. Drivers are generic over it, so the real path is monomorphised and pays
//! nothing for the indirection.

use crate::bpf::BpfProgram;
use crate::ifstats::IfInfo;
use crate::ring_setup::{
    self as rs, PACKET_IGNORE_OUTGOING, PACKET_RX_RING, PACKET_VERSION, SOL_PACKET,
};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use thiserror::Error;

// linux/if_packet.h and linux/if_ether.h; defined here so the layout does not depend on
// which libc release exposes them.
const PACKET_FANOUT: libc::c_int = 18;
const TPACKET_V3: libc::c_int = 2;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const PACKET_OUTGOING: u8 = 4;
const PACKET_FANOUT_HASH: u16 = 0;
const PACKET_FANOUT_LB: u16 = 1;
const PACKET_FANOUT_CPU: u16 = 2;
const PACKET_FANOUT_FLAG_DEFRAG: u16 = 0x8000;

/// `sizeof(struct tpacket3_hdr)` rounded to TPACKET_ALIGNMENT (16): where the
/// `sockaddr_ll` starts after each packet header.
const TPACKET3_HDR_ALIGNED: usize = 48;
/// Offset of `sll_pkttype` inside `struct sockaddr_ll`.
const SLL_PKTTYPE: usize = 10;
/// Smallest header space a packet needs in a block (tpacket3_hdr + sockaddr_ll).
const MIN_FRAME: u32 = 2048;

#[repr(C)]
struct TpacketReq3 {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
    tp_retire_blk_tov: u32,
    tp_sizeof_priv: u32,
    tp_feature_req_word: u32,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStatsV3 {
    tp_packets: u32,
    tp_drops: u32,
    tp_freeze_q_cnt: u32,
}

/// Which packets of the interface to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received by the interface (outgoing ones are never queued: `PACKET_IGNORE_OUTGOING`).
    In,
    /// Sent by this host (the others still fill the ring and are skipped in user space by
    /// their `sll_pkttype`; add a BPF filter to keep them out of the ring).
    Out,
    /// Both.
    Both,
}

/// Which packets the block walk yields (what the kernel could not filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    All,
    NotOutgoing,
    OnlyOutgoing,
}

/// How a fanout group spreads packets over its sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FanoutMode {
    /// By flow hash: a flow stays on one socket (order within a flow is kept).
    Hash,
    /// By the CPU that received the packet.
    Cpu,
    /// Round robin.
    RoundRobin,
}

/// A PACKET_FANOUT group to join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fanout {
    /// Group id (unique per network namespace and interface).
    pub group: u16,
    /// Spreading policy.
    pub mode: FanoutMode,
}

/// Ring geometry and socket options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per block: a multiple of the page size (4096), at least 8 KiB.
    pub block_size: u32,
    /// Number of blocks.
    pub block_count: u32,
    /// Block retire timeout in ms (the longest a partly filled block waits for user space);
    /// 0 lets the kernel choose from the link speed.
    pub retire_ms: u32,
    /// Promiscuous mode while the socket is open.
    pub promisc: bool,
    /// Which direction to keep.
    pub direction: Direction,
    /// Join a fanout group.
    pub fanout: Option<Fanout>,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            block_size: 1 << 20,
            block_count: 64,
            retire_ms: 10,
            promisc: true,
            direction: Direction::Both,
            fanout: None,
        }
    }
}

/// Why a ring could not be opened.
#[derive(Debug, Error)]
pub enum RingError {
    /// No CAP_NET_RAW.
    #[error("cannot open a packet socket ({cause}): needs CAP_NET_RAW — run as root or `sudo setcap cap_net_raw,cap_net_admin,cap_ipc_lock=ep $(which wirelab)`")]
    Privilege { cause: io::Error },
    /// The interface does not exist.
    #[error("{0}")]
    Interface(io::Error),
    /// A bad geometry.
    #[error("{0}")]
    Config(String),
    /// A setup step failed.
    #[error("{step} on {ifname} failed: {cause}{hint}")]
    Setup {
        step: &'static str,
        ifname: String,
        cause: io::Error,
        hint: &'static str,
    },
}

/// Totals since the ring was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Packets that passed the filter (delivered + dropped; `tp_packets`).
    pub packets: u64,
    /// Packets dropped because the ring was full (`tp_drops`).
    pub drops: u64,
    /// Times the kernel found no free block and froze the queue (`tp_freeze_q_cnt`).
    pub freeze_q_cnt: u64,
}

/// A source of retired blocks of received frames: what a capture driver reads.
///
/// Contract (the kernel's, kept by every implementation): blocks come in ring order; at
/// most one is out at a time (it borrows the source mutably); dropping it hands it back
/// and moves on to the next. Frame timestamps are ns since the Unix epoch
/// (CLOCK_REALTIME); a frame's `data` is at most the snap length, `orig_len` its length on
/// the wire. [`RingStats`] are totals since the source was opened.
pub trait BlockSource {
    /// A retired block; dropping it hands it back.
    type Block<'a>: FrameBlock
    where
        Self: 'a;

    /// The next block in ring order, if it has been retired.
    fn next_block(&mut self) -> Option<Self::Block<'_>>;

    /// Waits up to `timeout` for a retired block; returns whether one is ready. May
    /// return early without one (a signal).
    fn wait(&mut self, timeout: Duration) -> io::Result<bool>;

    /// Totals since opening.
    fn stats(&mut self) -> io::Result<RingStats>;

    /// Block size (bytes) and block count in use.
    fn geometry(&self) -> (usize, usize);

    /// Block retire timeout (ms; 0 = the kernel's default): how long a partly filled
    /// block can wait before user space sees it.
    fn retire_ms(&self) -> u32;
}

/// The frames of one block of a [`BlockSource`].
pub trait FrameBlock {
    /// Iterator over the frames.
    type Frames<'b>: Iterator<Item = RxPacket<'b>>
    where
        Self: 'b;

    /// The frames, in arrival order.
    fn packets(&self) -> Self::Frames<'_>;
}

/// An open TPACKET_V3 receive ring bound to one interface.
pub struct RxRing {
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    block_size: usize,
    block_count: usize,
    cur: usize,
    keep: Keep,
    linktype: u16,
    snaplen: u32,
    iface: IfInfo,
    stats: RingStats,
    notes: Vec<String>,
    retire_ms: u32,
}

// SAFETY: the mapping is owned by this value alone (no other handle to it exists in the
// process), and every access goes through `&mut self` or a `Block` borrowing it mutably, so
// moving the ring to another thread cannot create shared access.
unsafe impl Send for RxRing {}

/// The pcap LINKTYPE for an ARPHRD type, as libpcap maps it for SOCK_RAW packet sockets.
pub fn linktype_for_arphrd(arphrd: u16) -> Option<u16> {
    match arphrd {
        // ARPHRD_ETHER, ARPHRD_LOOPBACK (Linux loopback carries Ethernet headers).
        1 | 772 => Some(1),
        // ARPHRD_NONE (tun in IP mode), ARPHRD_IPGRE tunnels without L2, ARPHRD_RAWIP.
        65534 | 519 => Some(101),
        _ => None,
    }
}

/// Blocks are whole pages, at least two, and there is at least one block.
fn check_geometry(cfg: &RingConfig) -> Result<(), RingError> {
    let page = 4096u32;
    if cfg.block_size < 2 * page || cfg.block_size & (page - 1) != 0 {
        return Err(RingError::Config(format!(
            "ring block size {} must be a multiple of 4096 and at least 8192",
            cfg.block_size
        )));
    }
    if cfg.block_count == 0 {
        return Err(RingError::Config(
            "ring block count must be at least 1".into(),
        ));
    }
    Ok(())
}

/// A [`RingError::Setup`] maker for a step on `ifname`.
fn setup_error(ifname: &str) -> impl Fn(&'static str, io::Error, &'static str) -> RingError + '_ {
    move |step, source, hint| RingError::Setup {
        step,
        ifname: ifname.to_string(),
        cause: source,
        hint,
    }
}

/// Which frames the ring keeps for `direction`: for `In`, the kernel drops
/// outgoing frames if it can (PACKET_IGNORE_OUTGOING, Linux 4.20+), else
/// they are skipped in user space (and a note says so).
fn keep_direction(fd: BorrowedFd<'_>, direction: Direction, notes: &mut Vec<String>) -> Keep {
    let keep = match direction {
        Direction::Both => Keep::All,
        Direction::In => Keep::NotOutgoing,
        Direction::Out => Keep::OnlyOutgoing,
    };
    if direction != Direction::In {
        return keep;
    }
    match crate::sockopt::set(
        fd.as_raw_fd(),
        SOL_PACKET,
        PACKET_IGNORE_OUTGOING,
        &1 as &libc::c_int,
    ) {
        Ok(()) => Keep::All,
        Err(e) => {
            notes.push(format!(
                "PACKET_IGNORE_OUTGOING unavailable ({e}; Linux 4.20+): outgoing packets \
                 are skipped in user space instead"
            ));
            keep
        }
    }
}

/// Asks the kernel for the ring (PACKET_RX_RING); while it cannot allocate
/// it, halves the block count (down to 2, with a note each time). Returns
/// the block count granted.
fn request_ring(fd: BorrowedFd<'_>, cfg: &RingConfig, notes: &mut Vec<String>) -> io::Result<u32> {
    let mut count = cfg.block_count;
    loop {
        let req = TpacketReq3 {
            tp_block_size: cfg.block_size,
            tp_block_nr: count,
            tp_frame_size: MIN_FRAME,
            tp_frame_nr: (cfg.block_size / MIN_FRAME) * count,
            tp_retire_blk_tov: cfg.retire_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        match crate::sockopt::set(fd.as_raw_fd(), SOL_PACKET, PACKET_RX_RING, &req) {
            Ok(()) => return Ok(count),
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) && count > 2 => {
                let next = count / 2;
                notes.push(format!(
                    "the kernel could not allocate {} blocks of {} KiB ({} MiB): shrinking \
                     the ring to {} blocks; lower --block-count/--block-size or free memory",
                    count,
                    cfg.block_size / 1024,
                    (count as u64 * cfg.block_size as u64) >> 20,
                    next
                ));
                count = next;
            }
            Err(e) => return Err(e),
        }
    }
}

/// PACKET_FANOUT's argument: the group id, and the mode in the high 16
/// bits (hash fanout defragments first, so a flow's fragments stay on one
/// socket).
fn fanout_arg(f: Fanout) -> u32 {
    let mode = match f.mode {
        FanoutMode::Hash => PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG,
        FanoutMode::Cpu => PACKET_FANOUT_CPU,
        FanoutMode::RoundRobin => PACKET_FANOUT_LB,
    };
    f.group as u32 | ((mode as u32) << 16)
}

impl RxRing {
    /// Opens a ring on `ifname` with `filter` attached in the kernel (compile it for
    /// [`RxRing::linktype_of`] and the wanted snap length; `BpfProgram::compile("", ..)`
    /// accepts everything).
    pub fn open(ifname: &str, cfg: &RingConfig, filter: &BpfProgram) -> Result<RxRing, RingError> {
        let iface = IfInfo::lookup(ifname).map_err(RingError::Interface)?;
        let linktype = Self::linktype_of(&iface)?;
        check_geometry(cfg)?;
        let setup = setup_error(ifname);

        let fd = rs::open_socket(ifname)?;
        let b = fd.as_fd();

        crate::sockopt::set(b.as_raw_fd(), SOL_PACKET, PACKET_VERSION, &TPACKET_V3).map_err(
            |e| {
                setup(
                    "PACKET_VERSION TPACKET_V3",
                    e,
                    " (TPACKET_V3 needs Linux 3.2 or newer)",
                )
            },
        )?;
        let mut notes = Vec::new();
        let keep = keep_direction(b, cfg.direction, &mut notes);
        filter.attach(b).map_err(|e| {
            setup(
                "SO_ATTACH_FILTER",
                e,
                " (is the filter valid for this link type?)",
            )
        })?;
        let count = request_ring(b, cfg, &mut notes).map_err(|e| {
            setup(
                "PACKET_RX_RING",
                e,
                " (try a smaller ring: fewer or smaller blocks)",
            )
        })?;
        let map_len = cfg.block_size as usize * count as usize;
        let map = rs::map_ring(fd.as_fd(), map_len).map_err(|e| {
            setup(
                "mmap of the ring",
                e,
                " (try a smaller ring: fewer or smaller blocks)",
            )
        })?;
        // From here on, dropping `ring` (also on `?`) unmaps the ring.
        let ring = RxRing {
            fd,
            map,
            map_len,
            block_size: cfg.block_size as usize,
            block_count: count as usize,
            cur: 0,
            keep,
            linktype,
            snaplen: filter.snaplen(),
            iface,
            stats: RingStats::default(),
            notes,
            retire_ms: cfg.retire_ms,
        };
        ring.bind_and_join(cfg, &setup)?;
        Ok(ring)
    }

    /// Binds the mapped ring to its interface, then joins the fanout group
    /// and turns on promiscuous mode if `cfg` asks.
    fn bind_and_join(
        &self,
        cfg: &RingConfig,
        setup: &impl Fn(&'static str, io::Error, &'static str) -> RingError,
    ) -> Result<(), RingError> {
        rs::bind(self.fd.as_fd(), self.iface.index)
            .map_err(|e| setup("bind", e, " (is the interface up?)"))?;
        if let Some(f) = cfg.fanout {
            crate::sockopt::set(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_FANOUT,
                &fanout_arg(f),
            )
            .map_err(|e| {
                setup(
                    "PACKET_FANOUT",
                    e,
                    " (another program may use the same fanout group id with another mode)",
                )
            })?;
        }
        if cfg.promisc {
            rs::promisc(self.fd.as_fd(), self.iface.index).map_err(|e| {
                setup(
                    "PACKET_MR_PROMISC",
                    e,
                    " (capture without promiscuous mode)",
                )
            })?;
        }
        Ok(())
    }

    /// The pcap link type a ring on `iface` produces, or an error naming the ARPHRD type.
    pub fn linktype_of(iface: &IfInfo) -> Result<u16, RingError> {
        linktype_for_arphrd(iface.arphrd).ok_or_else(|| {
            RingError::Config(format!(
                "{}: hardware type {} (see /sys/class/net/{}/type) is not supported; \
                 Ethernet, loopback and raw-IP (tun) interfaces are",
                iface.name, iface.arphrd, iface.name
            ))
        })
    }

    /// The interface.
    pub fn interface(&self) -> &IfInfo {
        &self.iface
    }

    /// LINKTYPE_* of the frames.
    pub fn linktype(&self) -> u16 {
        self.linktype
    }

    /// Snap length of the attached filter.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Block size and count actually in use (the count may have been shrunk).
    pub fn geometry(&self) -> (usize, usize) {
        (self.block_size, self.block_count)
    }

    /// Block retire timeout (ms; 0 = kernel default).
    pub fn retire_ms(&self) -> u32 {
        self.retire_ms
    }

    /// Messages about fallbacks taken while opening (shrunk ring, no
    /// PACKET_IGNORE_OUTGOING); the caller decides how to show them.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The socket.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn block_status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: block `i` < block_count lies inside the mapping; `block_status` is the
        // 4-byte-aligned u32 at offset 8 of `struct tpacket_block_desc`, which the kernel
        // and we access atomically (the kernel publishes with smp_wmb + store).
        unsafe { &*(self.map.add(i * self.block_size + 8) as *const AtomicU32) }
    }

    /// Whether the next block in ring order belongs to user space.
    pub fn ready(&self) -> bool {
        self.block_status(self.cur).load(Ordering::Acquire) & TP_STATUS_USER != 0
    }

    /// The next block, if the kernel has retired it; give it back by dropping it.
    pub fn next_block(&mut self) -> Option<Block<'_>> {
        if !self.ready() {
            return None;
        }
        let i = self.cur;
        // SAFETY: block `i` is inside the mapping.
        let base = unsafe { self.map.add(i * self.block_size) };
        let rd = |off: usize| -> u32 {
            // SAFETY: `off` + 4 ≤ 48 < block_size; the block is user-owned (status was
            // read with Acquire), so the kernel does not write it now.
            unsafe { std::ptr::read(base.add(off) as *const u32) }
        };
        let num_pkts = rd(12);
        let first = rd(16);
        let seq = u64::from(rd(24)) | (u64::from(rd(28)) << 32);
        Some(Block {
            ring: self,
            base,
            num_pkts,
            first: first as usize,
            seq,
        })
    }

    /// Waits up to `timeout` for a retired block (`ppoll`); returns whether one is ready.
    /// A signal ends the wait early (returns whether a block is ready then).
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        rs::wait_ready(self.fd.as_fd(), timeout, || self.ready())
    }

    /// Totals since opening (reads and resets the kernel's counters).
    pub fn stats(&mut self) -> io::Result<RingStats> {
        let st: TpacketStatsV3 = rs::statistics(self.fd.as_fd())?;
        self.stats.packets += u64::from(st.tp_packets);
        self.stats.drops += u64::from(st.tp_drops);
        self.stats.freeze_q_cnt += u64::from(st.tp_freeze_q_cnt);
        Ok(self.stats)
    }
}

impl BlockSource for RxRing {
    type Block<'a> = Block<'a>;

    #[inline]
    fn next_block(&mut self) -> Option<Block<'_>> {
        RxRing::next_block(self)
    }

    #[inline]
    fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        RxRing::wait(self, timeout)
    }

    fn stats(&mut self) -> io::Result<RingStats> {
        RxRing::stats(self)
    }

    fn geometry(&self) -> (usize, usize) {
        RxRing::geometry(self)
    }

    fn retire_ms(&self) -> u32 {
        RxRing::retire_ms(self)
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `open`; no `Block` can be alive
        // (they borrow `self`). The socket closes afterwards via OwnedFd.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

/// One retired block, read in place. Dropping it gives it back to the kernel.
pub struct Block<'a> {
    ring: &'a mut RxRing,
    base: *mut u8,
    num_pkts: u32,
    first: usize,
    seq: u64,
}

impl Block<'_> {
    /// Packets in the block.
    pub fn len(&self) -> u32 {
        self.num_pkts
    }

    /// Whether the block holds no packet (a retire timeout on an idle link).
    pub fn is_empty(&self) -> bool {
        self.num_pkts == 0
    }

    /// The kernel's block sequence number (consecutive blocks count up by one).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The packets, in arrival order; those of the unwanted direction (when the kernel
    /// could not drop them, see [`Direction`]) are skipped.
    pub fn packets(&self) -> Packets<'_> {
        // SAFETY: the block is user-owned until `self` drops and lies inside the mapping;
        // the slice borrows `self`, so it ends before the hand-back.
        let data =
            unsafe { std::slice::from_raw_parts(self.base as *const u8, self.ring.block_size) };
        Packets {
            data,
            off: self.first,
            left: self.num_pkts,
            keep: self.ring.keep,
            malformed: false,
        }
    }
}

impl FrameBlock for Block<'_> {
    type Frames<'b>
        = Packets<'b>
    where
        Self: 'b;

    #[inline]
    fn packets(&self) -> Packets<'_> {
        Block::packets(self)
    }
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        let ring = &mut *self.ring;
        ring.block_status(ring.cur)
            .store(TP_STATUS_KERNEL, Ordering::Release);
        ring.cur = (ring.cur + 1) % ring.block_count;
    }
}

/// One packet inside a block.
#[derive(Debug, Clone, Copy)]
pub struct RxPacket<'a> {
    /// Captured bytes (from the link-layer header; at most the snap length).
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
    /// Kernel receive timestamp, ns since the Unix epoch (CLOCK_REALTIME).
    pub ts_ns: u64,
    /// `sll_pkttype` (0 host, 1 broadcast, 2 multicast, 3 other host, 4 outgoing).
    pub pkttype: u8,
}

/// Iterator over the packets of a [`Block`]. Stops early (and sets
/// [`Packets::malformed`]) if a header points outside the block, which the kernel never
/// does.
pub struct Packets<'a> {
    data: &'a [u8],
    off: usize,
    left: u32,
    keep: Keep,
    malformed: bool,
}

impl Packets<'_> {
    /// Whether iteration stopped at an inconsistent header.
    pub fn malformed(&self) -> bool {
        self.malformed
    }
}

#[inline]
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off + 4)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// Starts loading the first three cache lines of the frame at `off` (header, link-layer
/// address, the start of the packet): the kernel wrote them on another CPU, so reading
/// them cold stalls; the hint overlaps that with processing the current frame.
#[inline(always)]
fn prefetch_frame(d: &[u8], off: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(s) = d.get(off..) {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = s.as_ptr().cast::<i8>();
        // SAFETY: a prefetch is only a hint: it never faults and has no architectural
        // effect, whatever the address (the lines past the ring end are computed with
        // wrapping arithmetic and never dereferenced).
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(128));
        }
    }
}

impl<'a> Iterator for Packets<'a> {
    type Item = RxPacket<'a>;

    fn next(&mut self) -> Option<RxPacket<'a>> {
        loop {
            if self.left == 0 || self.malformed {
                return None;
            }
            self.left -= 1;
            let o = self.off;
            let d = self.data;
            let hdr = (|| {
                let next = u32_at(d, o)? as usize;
                let sec = u32_at(d, o + 4)?;
                let nsec = u32_at(d, o + 8)?;
                let snap = u32_at(d, o + 12)? as usize;
                let len = u32_at(d, o + 16)?;
                let mac = u16::from_ne_bytes([*d.get(o + 24)?, *d.get(o + 25)?]) as usize;
                let pkttype = *d.get(o + TPACKET3_HDR_ALIGNED + SLL_PKTTYPE)?;
                let data = d.get(o + mac..o + mac + snap)?;
                Some((next, sec, nsec, len, pkttype, data))
            })();
            let Some((next, sec, nsec, len, pkttype, data)) = hdr else {
                self.malformed = true;
                return None;
            };
            if next == 0 {
                self.left = 0;
            } else {
                self.off = o + next;
                prefetch_frame(d, self.off);
            }
            let out = pkttype == PACKET_OUTGOING;
            match self.keep {
                Keep::NotOutgoing if out => continue,
                Keep::OnlyOutgoing if !out => continue,
                _ => {}
            }
            return Some(RxPacket {
                data,
                orig_len: len,
                // The ring's stamps are realtime: reported with the test offset
                // (crate::clock::TEST_OFFSET_ENV) like every other.
                ts_ns: crate::clock::shift_real(u64::from(sec) * 1_000_000_000 + u64::from(nsec)),
                pkttype,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linktypes() {
        assert_eq!(linktype_for_arphrd(1), Some(1));
        assert_eq!(linktype_for_arphrd(772), Some(1));
        assert_eq!(linktype_for_arphrd(65534), Some(101));
        assert_eq!(linktype_for_arphrd(32), None);
    }

    #[test]
    fn bad_geometry_is_refused_before_any_syscall() {
        let f = BpfProgram::compile("", 1, 65535).unwrap();
        let cfg = RingConfig {
            block_size: 5000,
            ..Default::default()
        };
        let e = RxRing::open("lo", &cfg, &f).err().unwrap().to_string();
        assert!(e.contains("block size"), "{e}");
    }

    #[test]
    fn geometry_needs_whole_pages_at_least_two_and_a_block() {
        let cfg = |block_size, block_count| RingConfig {
            block_size,
            block_count,
            ..Default::default()
        };
        assert!(check_geometry(&cfg(8192, 1)).is_ok());
        assert!(check_geometry(&cfg(1 << 22, 64)).is_ok());
        for (size, count) in [(4096, 4), (8192 + 2048, 4), (0, 4), (8192, 0)] {
            assert!(
                matches!(check_geometry(&cfg(size, count)), Err(RingError::Config(_))),
                "{size} x {count}"
            );
        }
    }

    #[test]
    fn fanout_puts_the_mode_above_the_group_id() {
        let arg = |group, mode| fanout_arg(Fanout { group, mode });
        assert_eq!(arg(7, FanoutMode::RoundRobin), 0x0001_0007);
        assert_eq!(arg(0xffff, FanoutMode::Cpu), 0x0002_ffff);
        // Hash fanout reassembles fragments first (PACKET_FANOUT_FLAG_DEFRAG).
        assert_eq!(arg(1, FanoutMode::Hash), 0x8000_0001);
    }

    /// Real ring on loopback (needs CAP_NET_RAW; a skip otherwise): UDP datagrams sent
    /// to a port only this test uses are found in the ring, in order, with their payload.
    #[test]
    fn captures_loopback_udp() {
        let port = 40_000 + (std::process::id() % 20_000) as u16;
        let f = BpfProgram::compile(&format!("udp dst port {port}"), 1, 65535).unwrap();
        let cfg = RingConfig {
            block_size: 1 << 16,
            block_count: 4,
            retire_ms: 2,
            promisc: false,
            ..Default::default()
        };
        let mut ring = match RxRing::open("lo", &cfg, &f) {
            Ok(r) => r,
            // Unprivileged, the kernel refuses the packet socket with EPERM: that refusal,
            // and no other error, skips the test.
            Err(RingError::Privilege { cause: source }) if !wirelab_testkit::is_root() => {
                assert_eq!(source.raw_os_error(), Some(libc::EPERM), "{source}");
                wirelab_testkit::skip(format!("needs CAP_NET_RAW (refused: {source})"));
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0u32..50 {
            sock.send_to(&i.to_be_bytes(), ("127.0.0.1", port)).unwrap();
        }
        let mut seen = Vec::new();
        let t0 = std::time::Instant::now();
        // lo delivers each datagram twice (outgoing and incoming); keep the incoming ones.
        while seen.len() < 50 && t0.elapsed() < Duration::from_secs(5) {
            ring.wait(Duration::from_millis(50)).unwrap();
            while let Some(b) = ring.next_block() {
                for p in b.packets() {
                    if p.pkttype != PACKET_OUTGOING {
                        let d = p.data;
                        assert_eq!(d.len(), 14 + 20 + 8 + 4);
                        seen.push(u32::from_be_bytes([d[42], d[43], d[44], d[45]]));
                        assert!(p.ts_ns > 1_600_000_000_000_000_000);
                    }
                }
            }
        }
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
        let st = ring.stats().unwrap();
        assert_eq!((st.packets, st.drops), (100, 0));
    }

    /// Builds a fake block with two packets and walks it.
    #[test]
    fn walks_a_synthetic_block() {
        let mut blk = vec![0u8; 8192];
        let first = 48usize;
        let put32 =
            |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        // packet 1 at 48: next at +256, ts 5.000000007, snap 60, len 60, mac 82.
        put32(&mut blk, first, 256);
        put32(&mut blk, first + 4, 5);
        put32(&mut blk, first + 8, 7);
        put32(&mut blk, first + 12, 60);
        put32(&mut blk, first + 16, 60);
        blk[first + 24..first + 26].copy_from_slice(&82u16.to_ne_bytes());
        blk[first + 48 + 10] = 4; // outgoing
        blk[first + 82] = 0xaa;
        // packet 2 at 304: last (next 0), snap 10, len 1000.
        let p2 = first + 256;
        put32(&mut blk, p2 + 12, 10);
        put32(&mut blk, p2 + 16, 1000);
        blk[p2 + 24..p2 + 26].copy_from_slice(&82u16.to_ne_bytes());
        let it = Packets {
            data: &blk,
            off: first,
            left: 2,
            keep: Keep::All,
            malformed: false,
        };
        let v: Vec<_> = it.collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].ts_ns, 5_000_000_007);
        assert_eq!((v[0].data.len(), v[0].data[0], v[0].pkttype), (60, 0xaa, 4));
        assert_eq!((v[1].data.len(), v[1].orig_len), (10, 1000));
        let it = Packets {
            data: &blk,
            off: first,
            left: 2,
            keep: Keep::NotOutgoing,
            malformed: false,
        };
        assert_eq!(it.count(), 1);
        // A header pointing past the block stops the walk without a panic.
        put32(&mut blk, p2 + 12, 100_000);
        let mut it = Packets {
            data: &blk,
            off: first,
            left: 5,
            keep: Keep::All,
            malformed: false,
        };
        assert!(it.next().is_some());
        assert!(it.next().is_none());
        assert!(it.malformed());
    }
}
