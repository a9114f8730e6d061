//! The one `sendmmsg` of every socket type here that sends whole buffers
//! without an address (connected or bound sockets).

use std::io;
use std::mem::zeroed;
use std::os::fd::RawFd;

/// Buffers handed to the kernel per `sendmmsg` call.
const CHUNK: usize = 64;

/// Sends `bufs` in order with `sendmmsg` calls of up to 64 buffers each.
/// Returns how many the kernel took: all, or fewer when a call took part
/// of its chunk or failed after earlier buffers went out. An error only
/// when the first call fails.
pub(crate) fn send(fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    let mut sent = 0;
    for chunk in bufs.chunks(CHUNK) {
        match send_chunk(fd, chunk) {
            Ok(n) => {
                sent += n;
                if n < chunk.len() {
                    break;
                }
            }
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(sent)
}

fn send_chunk(fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    let n = bufs.len().min(CHUNK);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: iovec and mmsghdr are plain C structs; zeroed is valid
    // (null pointers, zero lengths) and every used entry is filled below.
    let mut iov: [libc::iovec; CHUNK] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; CHUNK] = unsafe { zeroed() };
    for i in 0..n {
        iov[i].iov_base = bufs[i].as_ptr() as *mut libc::c_void;
        iov[i].iov_len = bufs[i].len();
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `msgs[..n]` point at `iov[..n]`, which point at the caller's
    // live buffers; the kernel only reads them (send path). No address:
    // the socket is connected or bound.
    let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}
