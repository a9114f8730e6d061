//! Files written with `O_DIRECT`: whole aligned blocks go from user memory to the device
//! without the page-cache copy of a buffered `write(2)`.
//!
//! The caller keeps its buffers and lengths aligned to [`DIRECT_ALIGN`]; [`open_direct`]
//! only opens, [`clear_direct`] drops the flag on an open file (to write an unaligned
//! tail buffered, or to fall back when a filesystem refuses direct writes).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Alignment of buffer address, length and file offset for direct writes. 4 KiB covers
/// every logical block size in use (512 B and 4 KiB).
pub const DIRECT_ALIGN: usize = 4096;

/// Creates (or truncates) `path` for writing with `O_DIRECT`. `Ok(None)` when the path is
/// not a regular file (a FIFO would turn into a packet-mode pipe, a device gains nothing)
/// or the filesystem refuses `O_DIRECT` (EINVAL): the caller opens it buffered instead.
pub fn open_direct(path: &Path) -> io::Result<Option<File>> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Ok(None),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => Ok(Some(f)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Turns `O_DIRECT` off for an open file (`fcntl(F_SETFL)`), to write an unaligned tail or
/// to go on buffered where direct writes are refused.
pub fn clear_direct(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor owned by `file`, which outlives the call; no memory
    // is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_DIRECT == 0 {
        return Ok(());
    }
    // SAFETY: F_SETFL with an integer flag set on the same live descriptor.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A scratch directory and a file in it opened by [`open_direct`], on the first of the
    /// temporary directory and /var/tmp whose filesystem takes `O_DIRECT` (a tmpfs before
    /// Linux 6.6 does not). A refusal must be the filesystem's EINVAL or EOPNOTSUPP; `None`
    /// after a skip when both refuse.
    fn direct_scratch() -> Option<(std::path::PathBuf, File)> {
        let mut refused = vec![];
        for base in [std::env::temp_dir(), std::path::PathBuf::from("/var/tmp")] {
            let dir = base.join(format!("wl-direct-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join("f");
            if let Some(f) = open_direct(&p).unwrap() {
                return Some((dir, f));
            }
            let e = OpenOptions::new()
                .write(true)
                .create(true)
                .custom_flags(libc::O_DIRECT)
                .open(&p)
                .unwrap_err();
            let errno = e.raw_os_error();
            assert!(
                matches!(errno, Some(libc::EINVAL | libc::EOPNOTSUPP)),
                "{e}"
            );
            refused.push(format!("{}: {e}", base.display()));
            let _ = std::fs::remove_dir_all(&dir);
        }
        wirelab_testkit::skip(format!(
            "no filesystem here takes O_DIRECT ({})",
            refused.join("; ")
        ));
        None
    }

    #[test]
    fn direct_then_buffered_tail() {
        let Some((dir, mut f)) = direct_scratch() else {
            return;
        };
        let p = dir.join("f");
        // An aligned block from an aligned address.
        let mut v = vec![7u8; 3 * DIRECT_ALIGN];
        let off = (DIRECT_ALIGN - v.as_ptr() as usize % DIRECT_ALIGN) % DIRECT_ALIGN;
        f.write_all(&v[off..off + DIRECT_ALIGN]).unwrap();
        // An unaligned length fails direct...
        v[off] = 9;
        let e = f.write(&v[off..off + 10]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        // ...and goes through once the flag is off.
        clear_direct(&f).unwrap();
        f.write_all(&v[off..off + 10]).unwrap();
        drop(f);
        let got = std::fs::read(&p).unwrap();
        assert_eq!(got.len(), DIRECT_ALIGN + 10);
        assert!(got[..DIRECT_ALIGN].iter().all(|&b| b == 7));
        assert_eq!(got[DIRECT_ALIGN], 9);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fifo_and_devices_are_not_opened_direct() {
        assert!(open_direct(Path::new("/dev/null")).unwrap().is_none());
    }
}
