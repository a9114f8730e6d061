//! AF_PACKET raw sockets bound to one interface, for sending whole L2
//! frames (replay): interface lookup (index, MAC, MTU), qdisc bypass, and
//! batched `sendmmsg`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use thiserror::Error;

/// `PACKET_QDISC_BYPASS` (linux/if_packet.h).
pub(crate) const PACKET_QDISC_BYPASS: libc::c_int = 20;

/// Errors opening a packet socket, each naming the fix.
#[derive(Debug, Error)]
pub enum PacketError {
    /// No such interface.
    #[error("no network interface {name:?} ({cause}): check `ip link` (inside the right namespace: `ip netns exec NS ...`)")]
    NoInterface {
        /// Interface name given.
        name: String,
        /// OS error.
        cause: io::Error,
    },
    /// Missing CAP_NET_RAW.
    #[error("opening a {socket} socket was refused ({cause}): needs CAP_NET_RAW — run as root or `setcap cap_net_raw,cap_net_admin,cap_sys_nice,cap_ipc_lock=ep $(which wirelab)`")]
    Permission {
        /// The kind of socket: "packet", "raw IP".
        socket: &'static str,
        /// OS error.
        cause: io::Error,
    },
    /// Anything else, with what was being done.
    #[error("{what}: {cause}")]
    Os {
        /// The step that failed.
        what: &'static str,
        /// OS error.
        cause: io::Error,
    },
}

impl PacketError {
    pub(crate) fn os(what: &'static str) -> PacketError {
        PacketError::from_os("packet", what, io::Error::last_os_error())
    }

    /// `source` from step `what` on a `socket` socket: a refused
    /// permission becomes [`PacketError::Permission`].
    pub(crate) fn from_os(
        socket: &'static str,
        what: &'static str,
        source: io::Error,
    ) -> PacketError {
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => PacketError::Permission {
                socket,
                cause: source,
            },
            _ => PacketError::Os {
                what,
                cause: source,
            },
        }
    }
}

/// What replay needs to know about an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IfInfo {
    /// Interface index.
    pub index: i32,
    /// Hardware address.
    pub mac: [u8; 6],
    /// MTU (L3 bytes).
    pub mtu: u32,
    /// Hardware type (`ARPHRD_*`: 1 Ethernet, 772 loopback).
    pub arp_type: u16,
}

/// `ARPHRD_ETHER` (linux/if_arp.h).
pub const ARPHRD_ETHER: u16 = 1;
/// `ARPHRD_LOOPBACK`.
pub const ARPHRD_LOOPBACK: u16 = 772;

fn ifreq_for(name: &str) -> Result<libc::ifreq, PacketError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(PacketError::NoInterface {
            name: name.into(),
            cause: io::Error::from_raw_os_error(libc::EINVAL),
        });
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(ifr)
}

/// Looks up index, MAC and MTU of interface `name`.
pub fn if_info(name: &str) -> Result<IfInfo, PacketError> {
    // SAFETY: plain socket(2) call; the result is checked below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(PacketError::os("socket(AF_INET) for interface lookup"));
    }
    // SAFETY: `fd` is a fresh, valid descriptor we own from here on.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let ioctl = |req: libc::c_ulong| -> Result<libc::ifreq, PacketError> {
        let mut ifr = ifreq_for(name)?;
        // SAFETY: `ifr` is a valid ifreq with a NUL-terminated name; these
        // SIOCGIF* requests only write inside it.
        let rc = unsafe { libc::ioctl(sock.as_raw_fd(), req as _, &mut ifr) };
        if rc < 0 {
            return Err(PacketError::NoInterface {
                name: name.into(),
                cause: io::Error::last_os_error(),
            });
        }
        Ok(ifr)
    };
    let idx = ioctl(libc::SIOCGIFINDEX)?;
    let hw = ioctl(libc::SIOCGIFHWADDR)?;
    let mtu = ioctl(libc::SIOCGIFMTU)?;
    // SAFETY: the kernel filled the union member matching each request.
    let (index, sa, mtu) = unsafe {
        (
            idx.ifr_ifru.ifru_ifindex,
            hw.ifr_ifru.ifru_hwaddr,
            mtu.ifr_ifru.ifru_mtu,
        )
    };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    Ok(IfInfo {
        index,
        mac,
        mtu: mtu.max(0) as u32,
        arp_type: sa.sa_family,
    })
}

/// A SOCK_RAW AF_PACKET socket bound to one interface, protocol 0 (it
/// receives nothing; it only sends).
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    info: IfInfo,
    bypass: bool,
}

impl PacketSocket {
    /// Opens and binds a packet socket on `ifname`; asks for qdisc bypass
    /// when `qdisc_bypass` (see [`PacketSocket::qdisc_bypass`] for whether
    /// the kernel agreed).
    pub fn open(ifname: &str, qdisc_bypass: bool) -> Result<PacketSocket, PacketError> {
        let info = if_info(ifname)?;
        // SAFETY: plain socket(2); the result is checked.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(PacketError::os("socket(AF_PACKET, SOCK_RAW)"));
        }
        // SAFETY: `fd` is fresh and valid; ownership moves into OwnedFd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain old data; zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = info.index;
        sll.sll_protocol = 0;
        // SAFETY: `sll` is a valid sockaddr_ll and its size is passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(PacketError::os("bind(AF_PACKET) to the interface"));
        }
        let bypass = qdisc_bypass
            && crate::sockopt::set_int(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1)
                .is_ok();
        Ok(PacketSocket { fd, info, bypass })
    }

    /// Interface the socket is bound to.
    pub fn info(&self) -> IfInfo {
        self.info
    }

    /// Whether the kernel accepted PACKET_QDISC_BYPASS.
    pub fn qdisc_bypass(&self) -> bool {
        self.bypass
    }

    /// Enlarges the send buffer (best effort; returns what the kernel set).
    pub fn set_send_buffer(&self, bytes: usize) -> usize {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        if crate::sockopt::set_int(
            self.fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            v,
        )
        .is_err()
        {
            let _ =
                crate::sockopt::set_int(self.fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, v);
        }
        let mut out: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `out` and `len` are valid for writes of the sizes given.
        unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                &mut out as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        out.max(0) as usize
    }

    /// Sends whole frames (sendmmsg calls of up to 64); returns how many
    /// the kernel took (the rest should be retried). Blocks when the send
    /// buffer is full.
    pub fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        crate::mmsg::send(self.fd.as_raw_fd(), frames)
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
