//! Error classes of the binary and their exit codes.

use std::fmt;
use wirelab_cli::Usage;

/// A missing privilege or capability. Exit code 3.
#[derive(Debug)]
pub struct Privilege(pub String);

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Privilege {}

/// An infrastructure failure of `wirelab run` (a host or lab that cannot
/// be reached or built). Exit code 4.
#[derive(Debug)]
pub struct Infra(pub String);

impl fmt::Display for Infra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Infra {}

/// A usage error (exit code 2): the user gave a value that cannot work.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

/// Classifies a refused real-time setting: a permission failure is a
/// missing privilege, a value the machine cannot take a usage error naming
/// its flag.
pub fn rt_error(e: wirelab_io::rt::RtError) -> anyhow::Error {
    use wirelab_io::rt::RtError;
    let denied = |s: &std::io::Error| s.kind() == std::io::ErrorKind::PermissionDenied;
    match &e {
        RtError::Priority { cause: source, .. } | RtError::Pin { cause: source, .. }
            if denied(source) =>
        {
            anyhow::Error::new(Privilege(e.to_string()))
        }
        RtError::Mlock { .. } => anyhow::Error::new(Privilege(e.to_string())),
        RtError::Pin { .. } => usage(format!("--cpu: {e}")),
        RtError::PriorityRange { .. } => usage(format!("--rt-priority: {e}")),
        RtError::Priority { .. } => anyhow::Error::new(e),
    }
}

/// The message of `e` and its causes, joined by ": ", leaving out a cause
/// whose text the message already holds. wirelab's own errors print a cause
/// or return it, never both (tests/integration/error_sources.rs); other crates' errors
/// and hand-written contexts may repeat their cause's text.
pub fn message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if msg.contains(&text) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    msg
}

pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<Usage>().is_some() {
        2
    } else if e.downcast_ref::<Privilege>().is_some() {
        3
    } else if e.downcast_ref::<Infra>().is_some() {
        4
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_already_in_the_message_are_said_once() {
        // As thiserror's `#[error("...: {0}")] Io(#[from] io::Error)` does.
        #[derive(Debug)]
        struct Read(std::io::Error);
        impl fmt::Display for Read {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "I/O error reading record file: {}", self.0)
            }
        }
        impl std::error::Error for Read {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = std::io::Error::other("Is a directory");
        let e = anyhow::Error::new(Read(io)).context("/tmp/d");
        assert_eq!(
            message(&e),
            "/tmp/d: I/O error reading record file: Is a directory"
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&e), "outer: inner");
    }
    use std::io;
    use wirelab_io::rt::RtError;

    #[test]
    fn a_refused_permission_is_3_and_a_value_the_machine_cannot_take_is_2() {
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let bad_cpu = rt_error(RtError::Pin {
            cpu: 999,
            ncpu: 2,
            cause: io::Error::from_raw_os_error(22),
        });
        assert_eq!(exit_code(&bad_cpu), 2);
        assert!(bad_cpu.to_string().starts_with("--cpu: "), "{bad_cpu}");
        let prio = rt_error(RtError::PriorityRange { prio: 100 });
        assert_eq!(exit_code(&prio), 2);
        assert!(prio.to_string().starts_with("--rt-priority: "), "{prio}");
        let no_cap = rt_error(RtError::Priority {
            prio: 10,
            cause: denied(),
        });
        assert_eq!(exit_code(&no_cap), 3);
        assert_eq!(exit_code(&rt_error(RtError::Mlock { cause: denied() })), 3);
    }
}
