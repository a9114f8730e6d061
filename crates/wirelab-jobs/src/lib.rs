//! The jobs one wirelab process starts in another (`wirelab run`'s agents
//! and their children, `wirelab demo`, `wirelab stress`'s network load):
//! each a typed, serde-serializable spec whose `argv()` is its command
//! line after the binary's name.
//!
//! This crate is the only place outside `wirelab-cli` that spells a
//! wirelab flag. A test in `wirelab-cli` parses every spec's `argv()` with
//! the CLI's own parser and checks that the parsed flags are the spec, so
//! a flag renamed on either side fails there, not in a campaign.
//!
//! Flags a caller must recognise in a user's free arguments (a campaign's
//! `send_args`) are `pub const`s of each job's `flag` module.

#![forbid(unsafe_code)]

pub mod agent;
pub mod capture;
pub mod emulate;
pub mod recv;
pub mod send;
pub mod stress;

pub use agent::AgentJob;
pub use capture::CaptureJob;
pub use emulate::EmulateJob;
pub use recv::RecvJob;
pub use send::{SendJob, SendSocket};
pub use stress::StressJob;

/// An argv being built: the subcommand, then flags in the order pushed.
pub(crate) struct Argv(Vec<String>);

impl Argv {
    pub(crate) fn new(subcommand: &str) -> Argv {
        Argv(vec![subcommand.to_string()])
    }

    /// A positional argument.
    pub(crate) fn arg(&mut self, v: impl ToString) {
        self.0.push(v.to_string());
    }

    /// `flag VALUE`.
    pub(crate) fn val(&mut self, flag: &str, v: impl ToString) {
        self.0.extend([flag.to_string(), v.to_string()]);
    }

    /// `flag VALUE` when there is a value.
    pub(crate) fn opt<T: ToString>(&mut self, flag: &str, v: Option<T>) {
        if let Some(v) = v {
            self.val(flag, v);
        }
    }

    /// `flag` when `on`.
    pub(crate) fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.to_string());
        }
    }

    /// Arguments as given (a user's own, after the ones the spec sets).
    pub(crate) fn extend(&mut self, extra: &[String]) {
        self.0.extend(extra.iter().cloned());
    }

    pub(crate) fn done(self) -> Vec<String> {
        self.0
    }
}

/// A duration of `v` ns as the CLI's duration parsers take it, in the
/// largest unit that keeps it whole (`24h`, `65s`, `1500us`).
pub(crate) fn ns(v: u64) -> String {
    let units = [
        (3_600_000_000_000, "h"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ];
    match units.into_iter().find(|(u, _)| v != 0 && v % u == 0) {
        Some((u, name)) => format!("{}{name}", v / u),
        None => format!("{v}ns"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_are_written_whole_in_the_largest_unit() {
        let w = |v| super::ns(v);
        assert_eq!(w(86_400_000_000_000), "24h");
        assert_eq!(w(65_000_000_000), "65s");
        assert_eq!(w(1_500_000), "1500us");
        assert_eq!(w(7), "7ns");
        assert_eq!(w(0), "0ns");
    }
}
