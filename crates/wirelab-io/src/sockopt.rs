//! The one `setsockopt` wrapper every socket type here uses.

use std::io;
use std::os::fd::RawFd;

/// Sets option `opt` at `level` on `fd` to the value `v` (an int, a
/// `tpacket_req3`, a `sock_fprog`: whatever the option takes, by value).
pub(crate) fn set<T>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a live, initialized T for the duration of the call and
    // its exact size is passed; the kernel only reads (copies) it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// [`set`] for the common `int` option.
pub(crate) fn set_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    set(fd, level, opt, &v)
}
