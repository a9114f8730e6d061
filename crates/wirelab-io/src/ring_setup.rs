//! The steps every AF_PACKET receive ring shares: the socket, the mapping,
//! binding to an interface, promiscuous membership, waiting for data and
//! the kernel's counters. [`crate::ring_rx`] (TPACKET_V3) and
//! [`crate::ring_frames`] (TPACKET_V2) differ only in their ring layouts;
//! the TX ring ([`crate::ring_tx`]) shares the TPACKET_V2 request.

use crate::ring_rx::RingError;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub(crate) const SOL_PACKET: libc::c_int = 263;
pub(crate) const PACKET_RX_RING: libc::c_int = 5;
pub(crate) const PACKET_STATISTICS: libc::c_int = 6;
pub(crate) const PACKET_VERSION: libc::c_int = 10;
pub(crate) const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const ETH_P_ALL: u16 = 0x0003;
/// `TPACKET_V2`: the frame-ring layout of [`crate::ring_frames`] and
/// [`crate::ring_tx`].
pub(crate) const TPACKET_V2: libc::c_int = 1;

/// `struct tpacket_req`: the TPACKET_V2 ring layout, for the receive
/// ring of [`crate::ring_frames`] and the transmit ring of [`crate::ring_tx`].
#[repr(C)]
pub(crate) struct TpacketReq {
    pub(crate) tp_block_size: u32,
    pub(crate) tp_block_nr: u32,
    pub(crate) tp_frame_size: u32,
    pub(crate) tp_frame_nr: u32,
}

#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

/// `socket(AF_PACKET, SOCK_RAW, 0)`: protocol 0, so nothing is queued
/// before the ring exists and the socket is bound.
pub(crate) fn open_socket(ifname: &str) -> Result<OwnedFd, RingError> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => RingError::Privilege { cause: e },
            _ => RingError::Setup {
                step: "socket(AF_PACKET)",
                ifname: ifname.to_string(),
                cause: e,
                hint: "",
            },
        });
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Maps the `len` bytes of ring the kernel allocated for `fd`.
pub(crate) fn map_ring(fd: BorrowedFd<'_>, len: usize) -> io::Result<*mut u8> {
    // SAFETY: maps the ring the kernel allocated for this socket with
    // PACKET_RX_RING; `len` is exactly block size × block count as
    // configured; the result is checked below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(map.cast())
}

/// Binds `fd` to interface `index`, every protocol.
pub(crate) fn bind(fd: BorrowedFd<'_>, index: u32) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr_ll is valid; the fields are set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = index as i32;
    // SAFETY: `sll` is a valid sockaddr_ll and its exact size is passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Promiscuous mode on interface `index` while `fd` is open (the kernel
/// undoes it when the socket closes).
pub(crate) fn promisc(fd: BorrowedFd<'_>, index: u32) -> io::Result<()> {
    let mreq = PacketMreq {
        mr_ifindex: index as i32,
        mr_type: PACKET_MR_PROMISC,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    crate::sockopt::set(fd.as_raw_fd(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)
}

/// Whether the ring has data (`ready`), waiting up to `timeout` for `fd` to
/// be readable (`ppoll`) when it has none yet. A signal ends the wait early;
/// the ring is checked again either way.
pub(crate) fn wait_ready(
    fd: BorrowedFd<'_>,
    timeout: Duration,
    ready: impl Fn() -> bool,
) -> io::Result<bool> {
    if !ready() {
        wait_readable(fd, timeout)?;
    }
    Ok(ready())
}

/// Waits up to `timeout` for `fd` to be readable (`ppoll`); a signal ends
/// the wait early.
fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | libc::POLLERR,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timeout, no signal mask change.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Reads (and so resets) the kernel's `PACKET_STATISTICS` into `T`
/// (`tpacket_stats` or `tpacket_stats_v3`).
pub(crate) fn statistics<T: Default>(fd: BorrowedFd<'_>) -> io::Result<T> {
    let mut st = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `st` is writable for `len` bytes; the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_PACKET,
            PACKET_STATISTICS,
            (&mut st as *mut T).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}
