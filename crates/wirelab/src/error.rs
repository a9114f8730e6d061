//! Error classes of the binary and their exit codes.

use std::fmt;

/// A usage error: the user gave a value that cannot work. Exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

/// A missing privilege or capability. Exit code 3.
#[derive(Debug)]
pub struct Privilege(pub String);

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Privilege {}

pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<Usage>().is_some() {
        2
    } else if e.downcast_ref::<Privilege>().is_some()
        || e.downcast_ref::<wirelab_io::rt::RtError>().is_some()
    {
        3
    } else {
        1
    }
}

/// Whether the process runs as root (capabilities are then implied).
pub fn is_root() -> bool {
    // The effective uid is the third field of the Uid: line.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
