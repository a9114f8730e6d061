//! What a trace reader does at the end of its input: the end-of-trace
//! policy ([`AtEnd`]) that the emulator's `trace` and `timeline` stages
//! take as `at-end POLICY`, and [`Restart`], which looping needs.

use std::fmt;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::str::FromStr;

use thiserror::Error;

/// An input that can start over at its first byte, which looping needs.
/// Seekable readers do by seeking to 0; a caller with a path can
/// implement it by reopening the file.
pub trait Restart {
    fn restart(&mut self) -> io::Result<()>;
}

impl<R: Read + Seek> Restart for BufReader<R> {
    fn restart(&mut self) -> io::Result<()> {
        self.seek(SeekFrom::Start(0)).map(|_| ())
    }
}

impl<T: AsRef<[u8]>> Restart for Cursor<T> {
    fn restart(&mut self) -> io::Result<()> {
        self.set_position(0);
        Ok(())
    }
}

/// What happens after the last record (of a packet trace) or row (of a
/// time-indexed trace). One enum for every reader and stage that has an
/// end policy, so the keywords are spelled in one place ([`AtEnd::name`],
/// its [`FromStr`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AtEnd {
    /// Start over at the first record; the default, so a trace given
    /// without a policy repeats.
    #[default]
    Loop,
    /// Repeat the last record (a duplicate is held as a plain delay, or
    /// one packet would be copied forever).
    Hold,
    /// No more records: the trace ends and its user stops.
    Stop,
    /// Every further packet passes undelayed (a timeline's stage list
    /// alone applies).
    Pass,
    /// Every further packet is dropped.
    Drop,
}

/// A word that names no [`AtEnd`] policy.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown end-of-trace policy {0:?}: use {choices}", choices = AtEnd::CHOICES)]
pub struct UnknownAtEnd(pub String);

impl AtEnd {
    /// Every policy, in the order [`AtEnd::CHOICES`] lists them.
    pub const ALL: [AtEnd; 5] = [
        AtEnd::Loop,
        AtEnd::Hold,
        AtEnd::Stop,
        AtEnd::Pass,
        AtEnd::Drop,
    ];

    /// The keywords as a message lists them.
    pub const CHOICES: &'static str = "loop, hold, stop, pass or drop";

    /// The keyword: what [`FromStr`] reads and `Display` writes.
    pub fn name(self) -> &'static str {
        match self {
            AtEnd::Loop => "loop",
            AtEnd::Hold => "hold",
            AtEnd::Stop => "stop",
            AtEnd::Pass => "pass",
            AtEnd::Drop => "drop",
        }
    }
}

impl fmt::Display for AtEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AtEnd {
    type Err = UnknownAtEnd;

    fn from_str(s: &str) -> Result<Self, UnknownAtEnd> {
        AtEnd::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAtEnd(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_reads_back_its_name_and_choices_list_them_all() {
        for a in AtEnd::ALL {
            assert_eq!(a.name().parse::<AtEnd>(), Ok(a));
            assert_eq!(a.to_string(), a.name());
        }
        let names: Vec<&str> = AtEnd::ALL.iter().map(|a| a.name()).collect();
        let (init, last) = names.split_at(names.len() - 1);
        assert_eq!(
            AtEnd::CHOICES,
            format!("{} or {}", init.join(", "), last[0])
        );
        assert_eq!(AtEnd::default(), AtEnd::Loop);
        assert_eq!(
            "again".parse::<AtEnd>().unwrap_err().to_string(),
            "unknown end-of-trace policy \"again\": use loop, hold, stop, pass or drop"
        );
    }

    #[test]
    fn restart_on_a_seekable_file_reader() {
        let mut r = BufReader::new(Cursor::new(b"abc".to_vec()));
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        Restart::restart(&mut r).unwrap();
        s.clear();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "abc");
    }
}
