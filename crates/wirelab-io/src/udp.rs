//! UDP sockets with batched I/O and kernel timestamps.
//!
//! [`UdpSock`] wraps a socket2 socket and adds what std lacks: sendmmsg and
//! recvmmsg batches, SO_TIMESTAMPING (hardware when the NIC stamps, else
//! software, else SO_TIMESTAMPNS), SO_RXQ_OVFL drop counts, forced socket
//! buffer sizes and TOS. [`RecvBatch`] owns every buffer a recvmmsg call
//! needs, allocated once, so receiving allocates nothing per packet.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::mem::{size_of, zeroed};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use crate::sockopt;

/// Where a receive timestamp came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RxTimestamp {
    /// No kernel timestamp: the caller stamps in user space.
    #[default]
    None,
    /// Kernel software timestamp (ns since the Unix epoch).
    Software(u64),
    /// NIC hardware timestamp (ns on the NIC's clock, normally PTP-synced).
    Hardware(u64),
}

/// Per-message results of a [`RecvBatch`].
#[derive(Debug, Clone, Copy)]
pub struct RecvMeta {
    pub len: usize,
    pub ts: RxTimestamp,
    /// The message did not fit its buffer and was cut.
    pub truncated: bool,
}

/// Which receive timestamping the socket got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampMode {
    /// SO_TIMESTAMPING: software, plus raw hardware stamps where the NIC has them.
    Timestamping,
    /// SO_TIMESTAMPNS: software only.
    TimestampNs,
    /// None available: user-space clock after recvmmsg returns.
    User,
}

impl TimestampMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TimestampMode::Timestamping => "kernel (SO_TIMESTAMPING)",
            TimestampMode::TimestampNs => "kernel (SO_TIMESTAMPNS)",
            TimestampMode::User => "user space",
        }
    }
}

/// A UDP socket.
pub struct UdpSock {
    sock: Socket,
    ts_mode: TimestampMode,
    ipv6: bool,
}

impl UdpSock {
    /// A socket bound to `bind`, which it holds alone: a port another
    /// socket holds gives `AddrInUse`. For an IPv6 wildcard bind, `v6only =
    /// false` accepts IPv4 too (as v4-mapped addresses).
    pub fn bind(bind: SocketAddr, v6only: bool) -> io::Result<UdpSock> {
        UdpSock::bind_with(bind, v6only, false)
    }

    /// Like [`UdpSock::bind`], but with `share` the port can be bound by
    /// other sockets that share it too (SO_REUSEPORT, same user): the
    /// kernel then gives each source address and port to one of them.
    /// Without `share` no socket option lets a second socket in: with
    /// SO_REUSEADDR, UDP would let a second receiver take the port's
    /// unicast traffic from the first without an error.
    pub fn bind_with(bind: SocketAddr, v6only: bool, share: bool) -> io::Result<UdpSock> {
        let domain = if bind.is_ipv6() {
            Domain::IPV6
        } else {
            Domain::IPV4
        };
        let sock = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        if bind.is_ipv6() {
            sock.set_only_v6(v6only)?;
        }
        if share {
            sockopt::set_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
        }
        sock.bind(&SockAddr::from(bind))?;
        Ok(UdpSock {
            sock,
            ts_mode: TimestampMode::User,
            ipv6: bind.is_ipv6(),
        })
    }

    /// A socket connected to `peer`, bound to an ephemeral port (or `local`).
    pub fn connect(peer: SocketAddr, local: Option<SocketAddr>) -> io::Result<UdpSock> {
        let bind = local.unwrap_or_else(|| {
            if peer.is_ipv6() {
                "[::]:0".parse().unwrap()
            } else {
                "0.0.0.0:0".parse().unwrap()
            }
        });
        let s = UdpSock::bind(bind, true)?;
        s.sock.connect(&SockAddr::from(peer))?;
        Ok(s)
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("socket has no IP address"))
    }

    pub fn try_clone(&self) -> io::Result<UdpSock> {
        Ok(UdpSock {
            sock: self.sock.try_clone()?,
            ts_mode: self.ts_mode,
            ipv6: self.ipv6,
        })
    }

    pub fn timestamp_mode(&self) -> TimestampMode {
        self.ts_mode
    }

    /// Sets the DSCP/ECN byte (IPv4 TOS or IPv6 traffic class).
    pub fn set_tos(&self, tos: u8) -> io::Result<()> {
        if self.ipv6 {
            sockopt::set_int(
                self.sock.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_TCLASS,
                tos as i32,
            )
        } else {
            self.sock.set_tos_v4(tos as u32)
        }
    }

    /// Sets the receive buffer, beyond rmem_max when privileged
    /// (SO_RCVBUFFORCE). Returns the size the kernel reports.
    pub fn set_recv_buffer(&self, bytes: usize) -> io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        let v = bytes.min(i32::MAX as usize / 2) as i32;
        if sockopt::set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
            self.sock.set_recv_buffer_size(bytes)?;
        }
        self.sock.recv_buffer_size()
    }

    /// Sets the send buffer (SO_SNDBUFFORCE when privileged).
    pub fn set_send_buffer(&self, bytes: usize) -> io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        let v = bytes.min(i32::MAX as usize / 2) as i32;
        if sockopt::set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
            self.sock.set_send_buffer_size(bytes)?;
        }
        self.sock.send_buffer_size()
    }

    /// Blocking receives give up after `timeout` so the caller can check
    /// for a stop request.
    pub fn set_read_timeout(&self, timeout: std::time::Duration) -> io::Result<()> {
        self.sock.set_read_timeout(Some(timeout))
    }

    /// Turns on kernel receive timestamps: SO_TIMESTAMPING (software and raw
    /// hardware), else SO_TIMESTAMPNS. Also SO_RXQ_OVFL drop counting.
    pub fn enable_rx_timestamps(&mut self) -> TimestampMode {
        let fd = self.sock.as_raw_fd();
        let flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE
            | libc::SOF_TIMESTAMPING_SOFTWARE
            | libc::SOF_TIMESTAMPING_RX_HARDWARE
            | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
        self.ts_mode = if sockopt::set_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            flags as i32,
        )
        .is_ok()
        {
            TimestampMode::Timestamping
        } else if sockopt::set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok() {
            TimestampMode::TimestampNs
        } else {
            TimestampMode::User
        };
        let _ = sockopt::set_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1);
        self.ts_mode
    }

    /// Busy-polls the device queue for up to `us` µs on blocking receives
    /// (SO_BUSY_POLL; needs CAP_NET_ADMIN to raise above the sysctl).
    pub fn set_busy_poll(&self, us: u32) -> io::Result<()> {
        sockopt::set_int(
            self.sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            us as i32,
        )
    }

    /// Sends every buffer on a connected socket (sendmmsg calls of up to
    /// 64). Returns how many were sent (the kernel may take fewer).
    pub fn send_batch(&self, bufs: &[&[u8]]) -> io::Result<usize> {
        crate::mmsg::send(self.sock.as_raw_fd(), bufs)
    }

    /// Sends one datagram on a connected socket.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.sock.send(buf)
    }

    /// Sends one datagram to `to` (unconnected sockets: echo replies).
    pub fn send_to(&self, buf: &[u8], to: &SockAddr) -> io::Result<usize> {
        self.sock.send_to(buf, to)
    }

    /// Receives up to `batch.capacity()` datagrams with one recvmmsg call,
    /// blocking for the first (bounded by the read timeout) and taking the
    /// rest only if already queued. Returns how many arrived; `WouldBlock`
    /// or `TimedOut` when the timeout passed with nothing.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.recv_batch_flags(batch, libc::MSG_WAITFORONE)
    }

    /// Like [`UdpSock::recv_batch`] but never blocks: takes what is queued
    /// (the polling mode of the receive loop). `WouldBlock` when nothing is.
    pub fn recv_batch_nowait(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.recv_batch_flags(batch, libc::MSG_DONTWAIT)
    }

    fn recv_batch_flags(&self, batch: &mut RecvBatch, flags: i32) -> io::Result<usize> {
        batch.prepare();
        // SAFETY: `prepare` pointed every mmsghdr at buffers owned by `batch`
        // (payload, address and control space), which outlive this call and
        // are not otherwise borrowed while the kernel writes them.
        let rc = unsafe {
            libc::recvmmsg(
                self.sock.as_raw_fd(),
                batch.msgs.as_mut_ptr(),
                batch.cap as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = rc as usize;
        batch.finish(n);
        Ok(n)
    }
}

/// Whether a receive error only means nothing came: the read timeout
/// passed, a non-blocking call found the queue empty, or a signal
/// interrupted the call. The caller just tries again.
pub fn nothing_received(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// What a receive loop needs from a socket: a batch receive, blocking
/// (bounded by the socket's read timeout) or not, and a reply to a
/// source. [`UdpSock`] (through `&UdpSock`) and `crate::sim::SimRx`.
pub trait Receive {
    /// Receives into `batch`; `wait`: block for the first message.
    /// `WouldBlock`/`TimedOut` when nothing came.
    fn receive(&mut self, batch: &mut RecvBatch, wait: bool) -> io::Result<usize>;
    /// Sends `data` to `to` (an echo reply).
    fn reply(&mut self, data: &[u8], to: SocketAddr) -> io::Result<usize>;
}

impl Receive for &UdpSock {
    fn receive(&mut self, batch: &mut RecvBatch, wait: bool) -> io::Result<usize> {
        if wait {
            self.recv_batch(batch)
        } else {
            self.recv_batch_nowait(batch)
        }
    }

    fn reply(&mut self, data: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.send_to(data, &SockAddr::from(to))
    }
}

const CMSG_SPACE: usize = 256;

/// Buffers for one recvmmsg call, allocated once.
pub struct RecvBatch {
    cap: usize,
    buf_len: usize,
    bufs: Vec<u8>,
    iov: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_storage>,
    ctrl: Vec<[u64; CMSG_SPACE / 8]>,
    msgs: Vec<libc::mmsghdr>,
    meta: Vec<RecvMeta>,
    filled: usize,
    /// Latest cumulative kernel drop count (SO_RXQ_OVFL) seen.
    pub kernel_drops: u32,
}

// SAFETY: the raw pointers inside `iov`/`msgs` only ever point into this
// struct's own heap buffers; moving the struct between threads is sound.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    /// `cap` messages of up to `buf_len` bytes each.
    pub fn new(cap: usize, buf_len: usize) -> RecvBatch {
        let cap = cap.clamp(1, 1024);
        RecvBatch {
            cap,
            buf_len,
            bufs: vec![0u8; cap * buf_len],
            // SAFETY: plain C structs; zeroed is a valid value (fields are set in `prepare`).
            iov: (0..cap).map(|_| unsafe { zeroed() }).collect(),
            // SAFETY: as above.
            names: (0..cap).map(|_| unsafe { zeroed() }).collect(),
            ctrl: vec![[0u64; CMSG_SPACE / 8]; cap],
            // SAFETY: as above.
            msgs: (0..cap).map(|_| unsafe { zeroed() }).collect(),
            meta: vec![
                RecvMeta {
                    len: 0,
                    ts: RxTimestamp::None,
                    truncated: false
                };
                cap
            ],
            filled: 0,
            kernel_drops: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.filled
    }

    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Payload and metadata of message `i` of the last call.
    pub fn get(&self, i: usize) -> (&[u8], RecvMeta) {
        let m = self.meta[i];
        let start = i * self.buf_len;
        (&self.bufs[start..start + m.len.min(self.buf_len)], m)
    }

    /// Mutable payload buffer of message `i` (whole slot), for in-place echo replies.
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        let start = i * self.buf_len;
        &mut self.bufs[start..start + self.buf_len]
    }

    /// The source address of message `i` (None for a non-IP family).
    pub fn source(&self, i: usize) -> Option<SocketAddr> {
        let st = &self.names[i];
        match st.ss_family as i32 {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in,
                // which is smaller than sockaddr_storage and suitably aligned.
                let a = unsafe { &*(st as *const _ as *const libc::sockaddr_in) };
                let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
            }
            libc::AF_INET6 => {
                // SAFETY: as above, for sockaddr_in6.
                let a = unsafe { &*(st as *const _ as *const libc::sockaddr_in6) };
                let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
                Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                    ip,
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    /// Fills the batch as a receive call would have, from `msgs` (payload,
    /// timestamp, source), for a simulated socket: payloads longer than a
    /// slot are cut and flagged truncated; messages beyond the capacity are
    /// left in the iterator. Returns how many were taken.
    pub fn fill<'a>(
        &mut self,
        msgs: &mut impl Iterator<Item = (&'a [u8], RxTimestamp, SocketAddr)>,
    ) -> usize {
        let mut n = 0;
        while n < self.cap {
            let Some((data, ts, src)) = msgs.next() else {
                break;
            };
            let len = data.len().min(self.buf_len);
            let start = n * self.buf_len;
            self.bufs[start..start + len].copy_from_slice(&data[..len]);
            self.meta[n] = RecvMeta {
                len,
                ts,
                truncated: len < data.len(),
            };
            let sa = SockAddr::from(src);
            let sa_len = (sa.len() as usize).min(size_of::<libc::sockaddr_storage>());
            // SAFETY: `sa` holds `sa.len()` valid bytes of a sockaddr of its
            // family, no more than a sockaddr_storage, which is what
            // `names[n]` is; the two do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    sa.as_ptr() as *const u8,
                    &mut self.names[n] as *mut libc::sockaddr_storage as *mut u8,
                    sa_len,
                );
            }
            n += 1;
        }
        self.filled = n;
        n
    }

    fn prepare(&mut self) {
        for i in 0..self.cap {
            self.iov[i].iov_base = self.bufs[i * self.buf_len..].as_mut_ptr() as *mut libc::c_void;
            self.iov[i].iov_len = self.buf_len;
            let h = &mut self.msgs[i].msg_hdr;
            h.msg_name = &mut self.names[i] as *mut _ as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = CMSG_SPACE as _;
            h.msg_flags = 0;
            self.msgs[i].msg_len = 0;
        }
    }

    fn finish(&mut self, n: usize) {
        self.filled = n;
        for i in 0..n {
            let hdr = &self.msgs[i].msg_hdr;
            let mut ts = RxTimestamp::None;
            let truncated = hdr.msg_flags & libc::MSG_TRUNC != 0;
            // SAFETY: the kernel wrote `msg_controllen` bytes of well-formed
            // cmsgs into our control buffer; CMSG_FIRSTHDR/NXTHDR stay inside it.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(hdr);
                while !c.is_null() {
                    let level = (*c).cmsg_level;
                    let kind = (*c).cmsg_type;
                    let data = libc::CMSG_DATA(c);
                    if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPING {
                        let t: [libc::timespec; 3] =
                            std::ptr::read_unaligned(data as *const [libc::timespec; 3]);
                        if t[2].tv_sec != 0 || t[2].tv_nsec != 0 {
                            ts = RxTimestamp::Hardware(raw_ns(&t[2]));
                        } else if t[0].tv_sec != 0 || t[0].tv_nsec != 0 {
                            ts = RxTimestamp::Software(ts_ns(&t[0]));
                        }
                    } else if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS {
                        let t: libc::timespec =
                            std::ptr::read_unaligned(data as *const libc::timespec);
                        ts = RxTimestamp::Software(ts_ns(&t));
                    } else if level == libc::SOL_SOCKET && kind == libc::SO_RXQ_OVFL {
                        self.kernel_drops = std::ptr::read_unaligned(data as *const u32);
                    }
                    c = libc::CMSG_NXTHDR(hdr, c);
                }
            }
            self.meta[i] = RecvMeta {
                len: (self.msgs[i].msg_len as usize).min(self.buf_len),
                ts,
                truncated,
            };
        }
    }
}

/// A kernel software (realtime) stamp in ns, with the test offset (see
/// [`crate::clock::TEST_OFFSET_ENV`]).
fn ts_ns(t: &libc::timespec) -> u64 {
    crate::clock::shift_real(raw_ns(t))
}

/// A stamp in ns as the kernel gave it (a NIC's raw hardware clock).
fn raw_ns(t: &libc::timespec) -> u64 {
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn batch_round_trip_with_kernel_timestamps() {
        let mut rx = UdpSock::bind("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let mode = rx.enable_rx_timestamps();
        assert_ne!(mode, TimestampMode::User);
        rx.set_read_timeout(Duration::from_millis(500)).unwrap();
        let tx = UdpSock::connect(rx.local_addr().unwrap(), None).unwrap();
        // The kernel turns receive timestamping on for the whole system through a
        // deferred work item when the first socket asks (net_enable_timestamp): on a
        // busy machine the first datagrams can still arrive unstamped. Wait for it.
        let mut batch = RecvBatch::new(16, 2048);
        let mut stamped = false;
        for _ in 0..200 {
            tx.send_batch(&[&b"warm"[..]]).unwrap();
            let n = rx.recv_batch(&mut batch).unwrap();
            if (0..n).any(|i| matches!(batch.get(i).1.ts, RxTimestamp::Software(_))) {
                stamped = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(stamped, "no kernel timestamp within 1 s");
        let payloads: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 10 + i as usize]).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
        let before = crate::clock::real_ns();
        assert_eq!(tx.send_batch(&refs).unwrap(), 10);
        let mut got = 0;
        while got < 10 {
            let n = rx.recv_batch(&mut batch).unwrap();
            for i in 0..n {
                let (data, meta) = batch.get(i);
                assert_eq!(data, &payloads[got][..]);
                match meta.ts {
                    RxTimestamp::Software(t) => assert!(t >= before - 1_000_000),
                    other => panic!("expected a software timestamp, got {other:?}"),
                }
                got += 1;
            }
        }
        // An empty queue times out instead of blocking forever.
        rx.set_read_timeout(Duration::from_millis(10)).unwrap();
        let e = rx.recv_batch(&mut batch).unwrap_err();
        assert!(matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ));
    }

    #[test]
    fn a_held_port_is_refused_unless_both_share_it() {
        let first = UdpSock::bind("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let addr = first.local_addr().unwrap();
        for share in [false, true] {
            let e = UdpSock::bind_with(addr, true, share)
                .err()
                .map(|e| e.kind());
            assert_eq!(e, Some(io::ErrorKind::AddrInUse), "share {share}");
        }
        let a = UdpSock::bind_with("127.0.0.1:0".parse().unwrap(), true, true).unwrap();
        let b = UdpSock::bind_with(a.local_addr().unwrap(), true, true).unwrap();
        assert_eq!(a.local_addr().unwrap(), b.local_addr().unwrap());
        let e = UdpSock::bind(a.local_addr().unwrap(), true)
            .err()
            .map(|e| e.kind());
        assert_eq!(e, Some(io::ErrorKind::AddrInUse));
    }

    #[test]
    fn ipv6_socket_accepts_v4_mapped() {
        let mut rx = match UdpSock::bind("[::]:0".parse().unwrap(), false) {
            Ok(s) => s,
            // A host without IPv6 refuses the socket's family, and only that skips the test.
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EAFNOSUPPORT), "{e}");
                wirelab_testkit::skip(format!("no IPv6 on this host ({e})"));
                return;
            }
        };
        rx.enable_rx_timestamps();
        rx.set_read_timeout(Duration::from_millis(500)).unwrap();
        let port = rx.local_addr().unwrap().port();
        let tx = UdpSock::connect(format!("127.0.0.1:{port}").parse().unwrap(), None).unwrap();
        tx.send(b"hello").unwrap();
        let mut batch = RecvBatch::new(4, 64);
        assert_eq!(rx.recv_batch(&mut batch).unwrap(), 1);
        assert_eq!(batch.get(0).0, b"hello");
        let src = batch.source(0).unwrap();
        assert!(src.is_ipv6());
        // Reply goes back to the v4-mapped source.
        rx.send_to(b"back", &SockAddr::from(src)).unwrap();
    }
}
