//! AF_PACKET TPACKET_V2 receive ring: one slot per frame, each handed to user space the
//! moment the kernel has written it.
//!
//! Capture uses TPACKET_V3 ([`crate::ring_rx`]), whose blocks reach user space only when
//! full or when their retire timer (≥ 1 ms) fires: cheap per packet, but a frame can wait a
//! millisecond before anyone sees it. A forwarder (the link emulator) must see every frame
//! at once, so it reads this ring: the kernel flips each slot's status to user as it
//! fills it and wakes `poll`; user space reads the frame in place and flips it back.
//!
//! Setup order as in [`crate::ring_rx`]: socket (protocol 0), `PACKET_VERSION`,
//! `PACKET_IGNORE_OUTGOING` (a forwarder must not read its own transmissions back),
//! the BPF filter, `PACKET_RX_RING`, `mmap`, `bind`, promiscuous membership.
//!
//! Timestamps are the kernel's receive time (CLOCK_REALTIME, ns).

use crate::bpf::BpfProgram;
use crate::ifstats::IfInfo;
use crate::ring_rx::RingError;
use crate::ring_setup::{
    self as rs, TpacketReq, PACKET_IGNORE_OUTGOING, PACKET_RX_RING, PACKET_VERSION, SOL_PACKET,
    TPACKET_V2,
};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_LOSING: u32 = 1 << 2;
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
const ETH_P_8021Q: u16 = 0x8100;

/// `struct tpacket_stats`.
#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

/// Geometry and options of a [`FrameRing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRingConfig {
    /// Frame slots (rounded up to fill whole blocks).
    pub frames: u32,
    /// Largest frame kept whole (longer ones are truncated by the kernel and reported with
    /// their wire length).
    pub max_frame: u32,
    /// Promiscuous mode while the socket is open (a bridge needs it).
    pub promisc: bool,
}

/// Totals since the ring was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameRingStats {
    /// Frames that passed the filter (delivered + dropped).
    pub packets: u64,
    /// Frames dropped because every slot was full.
    pub drops: u64,
}

/// One received frame, read in place; [`FrameRing::release`] gives its slot back.
#[derive(Debug, Clone, Copy)]
pub struct RxFrame<'a> {
    /// The bytes from the link-layer header (at most the slot's capacity).
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
    /// Kernel receive time, ns since the Unix epoch.
    pub ts_ns: u64,
    /// A VLAN tag the driver took off the frame (TCI, TPID), to be put back when the
    /// frame is forwarded.
    pub vlan: Option<(u16, u16)>,
    /// The kernel dropped frames since the previous one (ring full).
    pub losing: bool,
    /// The transport checksum is not filled in yet: the sending stack left
    /// it to the NIC (checksum offload), so a forwarder must compute it.
    pub csum_partial: bool,
}

/// What a forwarder reads frames from: the next frame in place, give it back, wait for
/// one. Implemented by [`FrameRing`] and by `sim::SimFrames` for driver tests.
pub trait FrameSource {
    /// The next frame, if one has arrived; valid until [`FrameSource::release`].
    fn peek(&self) -> Option<RxFrame<'_>>;
    /// Done with the frame [`FrameSource::peek`] gave.
    fn release(&mut self);
    /// Waits up to `timeout` for a frame; whether one is there (false also when a signal
    /// cut the wait short).
    fn wait(&mut self, timeout: Duration) -> io::Result<bool>;
}

impl FrameSource for FrameRing {
    fn peek(&self) -> Option<RxFrame<'_>> {
        FrameRing::peek(self)
    }
    fn release(&mut self) {
        FrameRing::release(self)
    }
    fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        FrameRing::wait(self, timeout)
    }
}

/// An open TPACKET_V2 receive ring on one interface, incoming frames only.
pub struct FrameRing {
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    frame_size: usize,
    frames: usize,
    cur: usize,
    iface: IfInfo,
    stats: FrameRingStats,
}

// SAFETY: the mapping belongs to this value alone and every access goes through `&self` /
// `&mut self`, so moving the ring to another thread cannot create shared access.
unsafe impl Send for FrameRing {}

/// Room before the frame data in a slot: the kernel puts the network header at
/// `TPACKET_ALIGN(TPACKET2_HDRLEN + 16)` = 80 bytes, the link-layer header before it.
const HDR_SPACE: usize = 128;

impl FrameRing {
    /// Opens a ring on `ifname` with `filter` attached in the kernel.
    pub fn open(
        ifname: &str,
        cfg: &FrameRingConfig,
        filter: &BpfProgram,
    ) -> Result<FrameRing, RingError> {
        let iface = IfInfo::lookup(ifname).map_err(RingError::Interface)?;
        let setup = |step: &'static str, source: io::Error, hint: &'static str| RingError::Setup {
            step,
            ifname: ifname.to_string(),
            cause: source,
            hint,
        };
        let fd = rs::open_socket(ifname)?;
        let s = fd.as_raw_fd();
        crate::sockopt::set(s, SOL_PACKET, PACKET_VERSION, &TPACKET_V2)
            .map_err(|e| setup("PACKET_VERSION TPACKET_V2", e, ""))?;
        crate::sockopt::set(s, SOL_PACKET, PACKET_IGNORE_OUTGOING, &1 as &libc::c_int)
            .map_err(|e| setup("PACKET_IGNORE_OUTGOING", e, " (needs Linux 4.20 or newer)"))?;
        filter
            .attach(fd.as_fd())
            .map_err(|e| setup("SO_ATTACH_FILTER", e, ""))?;
        // Slots of a power of two holding the header and the largest frame; blocks of
        // at least a page holding whole slots.
        let frame_size = (HDR_SPACE + cfg.max_frame.max(64) as usize).next_power_of_two();
        let block_size = frame_size.max(4096);
        let per_block = block_size / frame_size;
        let blocks = (cfg.frames.max(1) as usize).div_ceil(per_block);
        let frames = blocks * per_block;
        let req = TpacketReq {
            tp_block_size: block_size as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: frames as u32,
        };
        crate::sockopt::set(s, SOL_PACKET, PACKET_RX_RING, &req)
            .map_err(|e| setup("PACKET_RX_RING", e, " (try fewer frame slots)"))?;
        let map_len = block_size * blocks;
        let map = rs::map_ring(fd.as_fd(), map_len)
            .map_err(|e| setup("mmap of the ring", e, " (try fewer frame slots)"))?;
        let ring = FrameRing {
            fd,
            map,
            map_len,
            frame_size,
            frames,
            cur: 0,
            iface,
            stats: FrameRingStats::default(),
        };
        rs::bind(ring.fd.as_fd(), ring.iface.index)
            .map_err(|e| setup("bind", e, " (is the interface up?)"))?;
        if cfg.promisc {
            rs::promisc(ring.fd.as_fd(), ring.iface.index)
                .map_err(|e| setup("PACKET_MR_PROMISC", e, ""))?;
        }
        Ok(ring)
    }

    /// The interface.
    pub fn interface(&self) -> &IfInfo {
        &self.iface
    }

    /// Frame slots.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The socket (for `poll`).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn slot(&self, i: usize) -> *mut u8 {
        // SAFETY: slot `i` < frames lies inside the mapping (whole slots per block, blocks
        // back to back).
        unsafe { self.map.add(i * self.frame_size) }
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: `tp_status` is the 4-byte-aligned u32 at offset 0 of the slot's
        // `tpacket2_hdr`, which the kernel and we access atomically (the kernel publishes
        // the frame with smp_wmb before the status store).
        unsafe { &*(self.slot(i) as *const AtomicU32) }
    }

    /// Whether the next slot holds a frame.
    pub fn ready(&self) -> bool {
        self.status(self.cur).load(Ordering::Acquire) & TP_STATUS_USER != 0
    }

    /// The next frame, if one is there. It stays valid until [`FrameRing::release`].
    pub fn peek(&self) -> Option<RxFrame<'_>> {
        let st = self.status(self.cur).load(Ordering::Acquire);
        if st & TP_STATUS_USER == 0 {
            return None;
        }
        let base = self.slot(self.cur);
        // SAFETY: the slot is user-owned (status read with Acquire), so the kernel does not
        // write it; it lies inside the mapping and is `frame_size` bytes long.
        let slot = unsafe { std::slice::from_raw_parts(base as *const u8, self.frame_size) };
        let u32_at =
            |o: usize| u32::from_ne_bytes([slot[o], slot[o + 1], slot[o + 2], slot[o + 3]]);
        let u16_at = |o: usize| u16::from_ne_bytes([slot[o], slot[o + 1]]);
        let len = u32_at(4);
        let snap = u32_at(8) as usize;
        let mac = u16_at(12) as usize;
        let (sec, nsec) = (u32_at(16), u32_at(20));
        let vlan = (st & TP_STATUS_VLAN_VALID != 0).then(|| {
            let tpid = if st & TP_STATUS_VLAN_TPID_VALID != 0 {
                u16_at(26)
            } else {
                ETH_P_8021Q
            };
            (u16_at(24), tpid)
        });
        // The kernel never points outside the slot; a header that does is read as empty.
        let data = slot.get(mac..mac.saturating_add(snap)).unwrap_or(&[]);
        Some(RxFrame {
            data,
            orig_len: len,
            ts_ns: u64::from(sec) * 1_000_000_000 + u64::from(nsec),
            vlan,
            losing: st & TP_STATUS_LOSING != 0,
            csum_partial: st & TP_STATUS_CSUMNOTREADY != 0,
        })
    }

    /// Gives the current slot back to the kernel and moves to the next.
    pub fn release(&mut self) {
        if self.status(self.cur).load(Ordering::Relaxed) & TP_STATUS_USER != 0 {
            self.status(self.cur)
                .store(TP_STATUS_KERNEL, Ordering::Release);
            self.cur = (self.cur + 1) % self.frames;
        }
    }

    /// Waits up to `timeout` for a frame (`ppoll`); whether one is there. A signal ends
    /// the wait early (`Ok(false)`).
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        rs::wait_ready(self.fd.as_fd(), timeout, || self.ready())
    }

    /// Totals since opening (reads and resets the kernel's counters).
    pub fn stats(&mut self) -> io::Result<FrameRingStats> {
        let st: TpacketStats = rs::statistics(self.fd.as_fd())?;
        self.stats.packets += u64::from(st.tp_packets);
        self.stats.drops += u64::from(st.tp_drops);
        Ok(self.stats)
    }
}

impl Drop for FrameRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `open`; no frame view can be alive
        // (they borrow `self`). The socket closes afterwards via OwnedFd.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

/// Writes `frame` into `out` with the 802.1Q/802.1ad tag `vlan` (TCI, TPID) put back
/// after the MAC addresses, as it was on the wire before the driver took it off.
pub fn with_vlan(frame: &[u8], vlan: Option<(u16, u16)>, out: &mut Vec<u8>) {
    out.clear();
    match vlan {
        Some((tci, tpid)) if frame.len() >= 12 => {
            out.extend_from_slice(&frame[..12]);
            out.extend_from_slice(&tpid.to_be_bytes());
            out.extend_from_slice(&tci.to_be_bytes());
            out.extend_from_slice(&frame[12..]);
        }
        _ => out.extend_from_slice(frame),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stripped_tag_goes_back_after_the_macs() {
        let f: Vec<u8> = (0u8..20).collect();
        let mut out = vec![];
        with_vlan(&f, Some((0x2005, 0x8100)), &mut out);
        assert_eq!(&out[..12], &f[..12]);
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x20, 0x05]);
        assert_eq!(&out[16..], &f[12..]);
        with_vlan(&f, None, &mut out);
        assert_eq!(out, f);
        // Too short for MAC addresses: unchanged.
        with_vlan(&f[..5], Some((1, 0x8100)), &mut out);
        assert_eq!(out, &f[..5]);
    }
}
