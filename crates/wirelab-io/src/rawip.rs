//! Raw IPv4 sockets with IP_HDRINCL: the caller writes the IP header
//! itself (and whatever follows it), the kernel routes the packet to the
//! connected destination and resolves the neighbour. Send only.

use crate::packet_sock::PacketError;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, RawFd};

const KIND: &str = "raw IP";

/// An `AF_INET`/`SOCK_RAW`/`IPPROTO_RAW` socket connected to one address:
/// every buffer sent is a whole IPv4 packet, header included.
#[derive(Debug)]
pub struct RawIpSocket {
    sock: Socket,
}

impl RawIpSocket {
    /// Opens a raw socket routed to `dst` (the destination written in the
    /// packets should be the same). Needs CAP_NET_RAW.
    pub fn connect(dst: Ipv4Addr) -> Result<RawIpSocket, PacketError> {
        let os = |what| move |e| PacketError::from_os(KIND, what, e);
        let sock = Socket::new(
            Domain::IPV4,
            Type::RAW,
            Some(Protocol::from(libc::IPPROTO_RAW)),
        )
        .map_err(os("socket(AF_INET, SOCK_RAW, IPPROTO_RAW)"))?;
        // Implied by IPPROTO_RAW; set so the contract does not rest on it.
        sock.set_header_included_v4(true)
            .map_err(os("setsockopt(IP_HDRINCL)"))?;
        sock.connect(&SockAddr::from(SocketAddrV4::new(dst, 0)))
            .map_err(os("connect(raw IP socket)"))?;
        Ok(RawIpSocket { sock })
    }

    /// Enlarges the send buffer (SO_SNDBUFFORCE when privileged); returns
    /// what the kernel set.
    pub fn set_send_buffer(&self, bytes: usize) -> io::Result<usize> {
        let v = bytes.min(i32::MAX as usize / 2) as i32;
        let fd = self.sock.as_raw_fd();
        if crate::sockopt::set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
            self.sock.set_send_buffer_size(bytes)?;
        }
        self.sock.send_buffer_size()
    }

    /// Sends whole IPv4 packets (sendmmsg calls of up to 64); returns how
    /// many the kernel took.
    pub fn send_batch(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        crate::mmsg::send(self.sock.as_raw_fd(), packets)
    }
}

impl AsRawFd for RawIpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}
