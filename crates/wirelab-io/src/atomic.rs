//! Files replaced whole: a reader, or the host after a crash or power
//! loss, sees the old content or the new, never a mix or a torn file.
//!
//! [`write`] and [`write_with`] fill a temporary file beside the target
//! (same directory, so the rename cannot cross file systems), fsync it,
//! rename it over the target and fsync the directory so the rename itself
//! is durable. On any error the temporary file is removed and the target is
//! left as it was. [`publish_dir`] does the same for a directory built
//! under a temporary name: its tree is synced, renamed into place and the
//! parent synced.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use thiserror::Error;

/// The step of a whole-file write that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Creating the temporary file beside the target.
    Create,
    /// Writing the content into the temporary file.
    Write,
    /// Flushing the temporary file (or a staged tree) to storage.
    SyncFile,
    /// Renaming the temporary file or directory over the target.
    Rename,
    /// Flushing the target's directory, so the rename survives a crash.
    SyncDir,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Create => "creating the temporary file beside it",
            Step::Write => "writing the temporary file",
            Step::SyncFile => "syncing the new content",
            Step::Rename => "renaming the new content over it",
            Step::SyncDir => "syncing its directory",
        })
    }
}

/// A whole-file write that failed: which step, for which target.
#[derive(Debug, Error)]
#[error("cannot replace {} whole ({step}): {cause}", .path.display())]
pub struct AtomicError {
    pub step: Step,
    /// The target (not the temporary name).
    pub path: PathBuf,
    pub cause: io::Error,
}

/// For callers whose errors carry an `io::Error`: the same kind, the step
/// in the message.
impl From<AtomicError> for io::Error {
    fn from(e: AtomicError) -> io::Error {
        io::Error::new(e.cause.kind(), format!("{}: {}", e.step, e.cause))
    }
}

/// Replaces `path` with `bytes`, whole. The directory must exist.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), AtomicError> {
    write_with(path, |f| f.write_all(bytes))
}

/// Replaces `path` with what `fill` writes into the (new, empty) file,
/// whole. The directory must exist. An error from `fill` fails the
/// [`Step::Write`] step and leaves the target as it was.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), AtomicError> {
    write_faulty(path, fill, None)
}

/// [`write_with`], failing at `fault` (tests inject failures at every step).
fn write_faulty(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
    fault: Option<Step>,
) -> Result<(), AtomicError> {
    let fail = |step: Step| -> io::Result<()> {
        match fault {
            Some(s) if s == step => Err(io::Error::other("injected failure")),
            _ => Ok(()),
        }
    };
    let err = |step| {
        move |source| AtomicError {
            step,
            path: path.to_path_buf(),
            cause: source,
        }
    };
    let tmp = temp_name(path).map_err(err(Step::Create))?;
    let mut f = fail(Step::Create)
        .and_then(|()| {
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
        })
        .map_err(err(Step::Create))?;
    let staged = fail(Step::Write)
        .and_then(|()| fill(&mut f))
        .map_err(err(Step::Write))
        .and_then(|()| {
            fail(Step::SyncFile)
                .and_then(|()| f.sync_all())
                .map_err(err(Step::SyncFile))
        })
        .and_then(|()| {
            drop(f);
            fail(Step::Rename)
                .and_then(|()| std::fs::rename(&tmp, path))
                .map_err(err(Step::Rename))
        });
    if let Err(e) = staged {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The new content is in place; only its durability is in question.
    fail(Step::SyncDir)
        .and_then(|()| sync_dir(parent(path)))
        .map_err(err(Step::SyncDir))
}

/// Moves the directory `staged` (complete, beside `out`) to `out`, which
/// must not exist: every file and directory under it is synced first, the
/// parent after the rename.
pub fn publish_dir(staged: &Path, out: &Path) -> Result<(), AtomicError> {
    let err = |step| {
        move |source| AtomicError {
            step,
            path: out.to_path_buf(),
            cause: source,
        }
    };
    sync_tree(staged).map_err(err(Step::SyncFile))?;
    std::fs::rename(staged, out).map_err(err(Step::Rename))?;
    sync_dir(parent(out)).map_err(err(Step::SyncDir))
}

/// `path`'s directory ("." for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A hidden name beside `path`, unique to this process and call, so two
/// writers of one target never share a temporary file.
fn temp_name(path: &Path) -> io::Result<PathBuf> {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(path.with_file_name(tmp))
}

/// fsync(2) on a directory: makes the entries created, renamed or removed
/// in it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Syncs every regular file and directory under `root`, `root` last.
fn sync_tree(root: &Path) -> io::Result<()> {
    for e in std::fs::read_dir(root)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            sync_tree(&e.path())?;
        } else if t.is_file() {
            File::open(e.path())?.sync_all()?;
        }
    }
    sync_dir(root)
}

#[cfg(test)]
mod tests;
