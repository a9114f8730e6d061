//! AF_PACKET TPACKET_V2 transmit ring: frames are copied into a ring shared
//! with the kernel and handed over in batches with one `send()` each.
//!
//! Setup order: bind (done by [`PacketSocket::open`]), PACKET_VERSION =
//! TPACKET_V2, PACKET_LOSS (a malformed frame is skipped instead of
//! wedging the ring), PACKET_TX_RING, mmap. A slot is ours while its status
//! is TP_STATUS_AVAILABLE; writing the frame and then setting
//! TP_STATUS_SEND_REQUEST (release ordering) hands it to the kernel;
//! `send(fd, NULL, 0, 0)` ("the kick") makes the kernel transmit every
//! requested slot and, being blocking, returns once they are handed to the
//! driver (with qdisc bypass: `ndo_start_xmit` itself).

use crate::packet_sock::{IfInfo, PacketError, PacketSocket};
use crate::ring_setup::{TpacketReq, PACKET_VERSION, TPACKET_V2};
use crate::sockopt;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};

const PACKET_TX_RING: libc::c_int = 13;
const PACKET_LOSS: libc::c_int = 14;
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_SENDING: u32 = 2;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
/// Frame data starts after the aligned tpacket2_hdr (32 bytes).
pub const DATA_OFFSET: usize = 32;

/// A TPACKET_V2 TX ring over a bound [`PacketSocket`].
#[derive(Debug)]
pub struct TxRing {
    sock: PacketSocket,
    map: *mut u8,
    map_len: usize,
    frame_size: usize,
    frame_nr: usize,
    head: usize,
    queued: usize,
    wrong_format: u64,
}

// SAFETY: the mapping is owned by this value alone (no aliases escape
// except through `&mut self` borrows), so moving it between threads is sound.
unsafe impl Send for TxRing {}

impl TxRing {
    /// Sets up a ring of about `frames` slots able to hold frames of up to
    /// `max_frame` bytes.
    pub fn new(sock: PacketSocket, max_frame: usize, frames: usize) -> Result<TxRing, PacketError> {
        let fd = sock.as_raw_fd();
        let os = |what: &'static str| {
            move |source: io::Error| PacketError::Os {
                what,
                cause: source,
            }
        };
        sockopt::set(fd, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V2)
            .map_err(os("PACKET_VERSION TPACKET_V2"))?;
        sockopt::set(fd, libc::SOL_PACKET, PACKET_LOSS, &1 as &libc::c_int)
            .map_err(os("PACKET_LOSS"))?;
        let frame_size = (DATA_OFFSET + max_frame).next_power_of_two().max(2048);
        // SAFETY: sysconf has no memory arguments.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let block_size = frame_size.max(page * 4).next_power_of_two();
        let per_block = block_size / frame_size;
        let block_nr = frames.div_ceil(per_block).max(1);
        let frame_nr = block_nr * per_block;
        let req = TpacketReq {
            tp_block_size: block_size as u32,
            tp_block_nr: block_nr as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: frame_nr as u32,
        };
        sockopt::set(fd, libc::SOL_PACKET, PACKET_TX_RING, &req).map_err(os(
            "PACKET_TX_RING (kernel without TX ring support? send with sendmmsg instead)",
        ))?;
        let map_len = block_size * block_nr;
        // SAFETY: mapping the ring the kernel just allocated for this fd,
        // with the exact size it was configured with; the result is checked.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(PacketError::os(
                "mmap of the TX ring (try fewer slots, or send with sendmmsg instead)",
            ));
        }
        Ok(TxRing {
            sock,
            map: map as *mut u8,
            map_len,
            frame_size,
            frame_nr,
            head: 0,
            queued: 0,
            wrong_format: 0,
        })
    }

    /// Interface information.
    pub fn info(&self) -> IfInfo {
        self.sock.info()
    }

    /// Whether qdisc bypass is on.
    pub fn qdisc_bypass(&self) -> bool {
        self.sock.qdisc_bypass()
    }

    /// Largest frame a slot holds.
    pub fn max_frame(&self) -> usize {
        self.frame_size - DATA_OFFSET
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.frame_nr
    }

    /// Frames written since the last kick.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Frames the kernel rejected as malformed (skipped thanks to PACKET_LOSS).
    pub fn wrong_format(&self) -> u64 {
        self.wrong_format
    }

    fn status(&self, slot: usize) -> &AtomicU32 {
        // SAFETY: `slot < frame_nr`, so the header lies inside the mapping;
        // frames are `frame_size`-aligned (≥ 2048), so the u32 status is
        // aligned; the kernel accesses it concurrently, hence atomic.
        unsafe { &*(self.map.add(slot * self.frame_size) as *const AtomicU32) }
    }

    /// Copies `frame` into the next slot, lets `edit` change it in place,
    /// and marks it for sending. Returns Ok(false) when the ring is full
    /// (kick and retry). Frames longer than [`TxRing::max_frame`] are
    /// refused with `EMSGSIZE`.
    pub fn push(&mut self, frame: &[u8], edit: impl FnOnce(&mut [u8])) -> io::Result<bool> {
        if frame.len() > self.max_frame() {
            return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
        }
        let slot = self.head;
        let st = self.status(slot).load(Ordering::Acquire);
        if st == TP_STATUS_WRONG_FORMAT {
            self.wrong_format += 1;
        } else if st != TP_STATUS_AVAILABLE {
            return Ok(false);
        }
        // SAFETY: the slot is AVAILABLE, so the kernel does not touch it
        // until we set SEND_REQUEST; data lies within the slot
        // (DATA_OFFSET + len ≤ frame_size checked above).
        let base = unsafe { self.map.add(slot * self.frame_size) };
        // SAFETY: as above; the slice covers only this slot's data area.
        let data = unsafe { std::slice::from_raw_parts_mut(base.add(DATA_OFFSET), frame.len()) };
        data.copy_from_slice(frame);
        edit(data);
        // SAFETY: tp_len (u32 at offset 4) and tp_snaplen (offset 8) lie in
        // this slot's header, which we own while AVAILABLE.
        unsafe {
            (base.add(4) as *mut u32).write_volatile(frame.len() as u32);
            (base.add(8) as *mut u32).write_volatile(frame.len() as u32);
        }
        self.status(slot)
            .store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.head = (self.head + 1) % self.frame_nr;
        self.queued += 1;
        Ok(true)
    }

    /// Kicks the kernel to transmit every queued slot; blocks until they
    /// are handed to the driver and their buffers are released.
    pub fn kick(&mut self) -> io::Result<()> {
        self.kick_with(true)
    }

    /// Kicks without waiting for completion (`MSG_DONTWAIT`): the kernel still
    /// hands every queued slot to the driver inside the call, but does not wait
    /// until each skb is freed — on veth with RPS that happens on another CPU,
    /// and waiting for it made every kick cost a cross-CPU round trip (8–12 µs,
    /// and up to hundreds of µs when that CPU was busy or halted). Slots come
    /// back to `AVAILABLE` asynchronously; [`TxRing::push`] reports a slot
    /// still in flight as "ring full". If the socket's send buffer is
    /// exhausted the kernel stops early: the slots it left are counted in
    /// [`TxRing::queued`] and the call fails with `EAGAIN` (retry).
    pub fn kick_nowait(&mut self) -> io::Result<()> {
        self.kick_with(false)
    }

    fn kick_with(&mut self, wait: bool) -> io::Result<()> {
        if self.queued == 0 {
            return Ok(());
        }
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        // SAFETY: send with a null buffer of length 0 on a TX-ring socket
        // means "transmit the ring"; no memory is passed.
        let rc = unsafe { libc::send(self.sock.as_raw_fd(), std::ptr::null(), 0, flags) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            // Whatever the kernel could not send is still SEND_REQUEST and
            // goes with the next kick; count what is gone.
            self.queued = if wait {
                self.pending()
            } else {
                self.requested()
            };
            return Err(e);
        }
        if !wait {
            self.queued = self.requested();
            if self.queued > 0 {
                return Err(io::Error::from_raw_os_error(libc::EAGAIN));
            }
            return Ok(());
        }
        // A blocking kick returns after every requested slot was processed.
        self.queued = 0;
        Ok(())
    }

    /// Waits (bounded by the socket's send timeout) until the kernel has
    /// released every slot sent so far.
    pub fn wait_done(&mut self) -> io::Result<()> {
        // SAFETY: as in `kick_with`: a blocking zero-length send on the ring
        // socket transmits nothing new and waits for pending slots.
        let rc = unsafe { libc::send(self.sock.as_raw_fd(), std::ptr::null(), 0, 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Of the last `queued` slots, those the kernel has not taken yet.
    fn requested(&self) -> usize {
        (1..=self.queued)
            .filter(|&k| {
                let slot = (self.head + self.frame_nr - k % self.frame_nr) % self.frame_nr;
                self.status(slot).load(Ordering::Acquire) == TP_STATUS_SEND_REQUEST
            })
            .count()
    }

    /// Slots still owned by the kernel (requested or being sent).
    pub fn pending(&self) -> usize {
        (0..self.frame_nr)
            .filter(|&s| {
                matches!(
                    self.status(s).load(Ordering::Acquire),
                    TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING
                )
            })
            .count()
            .min(self.queued)
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: `map`/`map_len` are exactly what mmap returned; nothing
        // borrows the mapping any more.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}
