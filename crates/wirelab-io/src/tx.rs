//! Sending a batch of packets in one call, behind one small trait, and the
//! one classification of send errors every sending job uses.

use std::io;

/// One send call carrying several packets: datagrams on a connected UDP
/// socket ([`crate::UdpSock`]), frames on a packet socket
/// ([`crate::packet_sock::PacketSocket`]), IPv4 packets on a raw socket
/// ([`crate::rawip::RawIpSocket`]), or a simulated link
/// (`crate::sim::SimTx`).
pub trait Transmit {
    /// Hands `packets` to the kernel in one call. `Ok(n)`: the first `n`
    /// were taken, the rest were not sent.
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize>;
}

impl Transmit for crate::UdpSock {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        self.send_batch(packets)
    }
}

impl Transmit for crate::packet_sock::PacketSocket {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        self.send_batch(packets)
    }
}

impl Transmit for crate::rawip::RawIpSocket {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        self.send_batch(packets)
    }
}

impl<T: Transmit + ?Sized> Transmit for Box<T> {
    fn transmit(&mut self, packets: &[&[u8]]) -> io::Result<usize> {
        (**self).transmit(packets)
    }
}

/// Whether a failed send is worth retrying at once: the queue or socket
/// buffer was momentarily full (ENOBUFS, EAGAIN), a signal interrupted the
/// call (EINTR), or a connected UDP socket reported an ICMP port
/// unreachable for an earlier datagram (ECONNREFUSED: the peer is not up
/// yet; the next call goes through).
pub fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOBUFS | libc::EAGAIN | libc::EINTR | libc::ECONNREFUSED)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_are_the_retryable_ones() {
        for e in [libc::ENOBUFS, libc::EAGAIN, libc::EINTR, libc::ECONNREFUSED] {
            assert!(is_transient(&io::Error::from_raw_os_error(e)), "{e}");
        }
        for e in [libc::EMSGSIZE, libc::ENETDOWN, libc::EPERM] {
            assert!(!is_transient(&io::Error::from_raw_os_error(e)), "{e}");
        }
        assert!(!is_transient(&io::Error::other("no errno")));
    }
}
